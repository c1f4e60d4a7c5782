/*
 * netrun_backend.h — the plugin ABI: what a backend shared library implements and what the host gives it.
 *
 * A backend is a shared library (libnetrun-NAME.so) exporting ONE symbol:
 *
 *     NETRUN_BACKEND_EXPORT const netrun_backend_api *netrun_backend_entry(const netrun_host_api *host);
 *
 * It must not link libnetrun: everything it needs from the host comes through `host`.
 *
 * Versioning (SQLite's rule): every table starts with abi_version and struct_size. The host accepts a plugin
 * whose NETRUN_ABI_MAJOR matches and reads only the slots that fit inside struct_size. New slots are
 * appended, never inserted or reordered; an optional slot may be NULL. The same holds for the params
 * structs of netrun_ops.h: fields are only appended.
 *
 * Life of a plugin: entry -> probe (cheap: can this machine run me?) -> supports() per node at placement
 * (no device work) -> context_create on first run or prepare (devices, handles) -> kernel_create per node
 * (algorithm choice, weight upload; reports workspace need) -> kernel_run many times -> kernel_destroy ->
 * context_destroy. A context is used by one thread at a time; different contexts may run concurrently.
 *
 * Ops: the runtime parses and infers every node itself, from its own op definitions (layers/) and, since ABI 1.9,
 * from those plugins add (netrun_op_def, netrun_backend_api.op_defs): a plugin can bring ops of its own domain
 * ("com.microsoft") that placement, fallback and the memory plan then treat like built-in ones.
 *
 * Errors: a slot that fails returns a status other than NETRUN_OK after calling host->error() with a message
 * (the host adds the node's name). Plugins never exit or abort.
 */
#ifndef NETRUN_BACKEND_H
#define NETRUN_BACKEND_H

#include "netrun.h"
#include "netrun_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NETRUN_ABI_MAJOR 1
#define NETRUN_ABI_MINOR 12
#define NETRUN_ABI_VERSION ((uint32_t)((NETRUN_ABI_MAJOR << 16) | NETRUN_ABI_MINOR))
#define NETRUN_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)

#define NETRUN_BACKEND_EXPORT __attribute__((visibility("default")))
#define NETRUN_BACKEND_ENTRY_SYMBOL "netrun_backend_entry"

/* netrun_log_level (NETRUN_LOG_ERROR ... NETRUN_LOG_DEBUG) is defined in netrun.h. */

/* A node whose attributes a plugin op's parse reads, or whose outputs its infer sets (ABI 1.9). */
typedef struct netrun_op_ctx netrun_op_ctx;

/* Services of the host, so that plugins never link the runtime. */
typedef struct netrun_host_api {
    uint32_t abi_version;
    uint32_t struct_size;
    /* Log a line under the backend's name. */
    void (*log)(netrun_log_level level, const char *backend, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    /* Record the message of a failing call (of this thread) and return code, for `return host->error(...)`. */
    netrun_status (*error)(netrun_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    /* Host memory; alignment is a power of two (>= sizeof(void*)). NULL when out of memory. */
    void *(*alloc)(size_t bytes, size_t alignment);
    void (*free)(void *ptr);

    /* ---- ABI 1.9: what a plugin op's parse and infer (netrun_op_def) ask of the node they are given. Check
     * struct_size before calling these: a 1.8 host ends its table at free. ---- */
    int (*op_opset)(const netrun_op_ctx *c);                      /* the op's domain opset the model imports */
    const char *(*op_node_name)(const netrun_op_ctx *c);
    /* Attributes: NETRUN_OK with the value (or def when absent) written, or an error naming the attribute when
     * it has another type. Strings and lists point into the model (valid as long as it is loaded). */
    int (*op_attr_has)(const netrun_op_ctx *c, const char *name);
    netrun_status (*op_attr_int)(const netrun_op_ctx *c, const char *name, int64_t def, int64_t *out);
    netrun_status (*op_attr_float)(const netrun_op_ctx *c, const char *name, float def, float *out);
    netrun_status (*op_attr_string)(const netrun_op_ctx *c, const char *name, const char *def, const char **out);
    netrun_status (*op_attr_ints)(const netrun_op_ctx *c, const char *name, const int64_t **out, int64_t *n);
    netrun_status (*op_attr_floats)(const netrun_op_ctx *c, const char *name, const float **out, int64_t *n);
    /* Inputs: never NULL for i < op_input_count; rank -1 for an absent optional input (and in parse, where no
     * shape is known yet). op_input_value: the host copy of a constant input's data, else NULL. */
    int (*op_input_count)(const netrun_op_ctx *c);
    const struct netrun_value_desc *(*op_input)(const netrun_op_ctx *c, int i);
    const void *(*op_input_value)(const netrun_op_ctx *c, int i);
    /* Outputs (infer only): set each present output's dtype and shape; a dim known only to the kernel is -1. */
    int (*op_output_count)(const netrun_op_ctx *c);
    int (*op_output_present)(const netrun_op_ctx *c, int i);
    void (*op_output_set)(netrun_op_ctx *c, int i, netrun_dtype dtype, int rank, const int64_t *dims);
    /* Record an error for this node (the runtime adds the node's name and op): `return host->op_error(c, ...)`. */
    netrun_status (*op_error)(const netrun_op_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
} netrun_host_api;

/* A value as seen at placement and kernel creation. */
typedef struct netrun_value_desc {
    const char *name;
    netrun_dtype dtype;
    int rank;                        /* -1: an optional input that is absent */
    int64_t dims[NETRUN_MAX_RANK];   /* -1: known only at run time */
    const void *const_data;          /* host data when the value is constant (weights), else NULL */
    size_t const_nbytes;
} netrun_value_desc;

/* A node as seen at placement (supports) and kernel creation. */
typedef struct netrun_node_desc {
    uint32_t struct_size;
    const char *name;
    const char *op_type;             /* ONNX op type, e.g. "Conv" */
    const char *domain;              /* "" for the default ONNX domain */
    int opset;                       /* opset version of that domain the model imports */
    const void *params;              /* typed parameters, see netrun_ops.h (NULL for ops without) */
    size_t params_size;
    int n_inputs;
    const netrun_value_desc *inputs;
    int n_outputs;
    const netrun_value_desc *outputs;
} netrun_node_desc;

/* A tensor at run time. */
typedef struct netrun_tensor {
    netrun_dtype dtype;
    int rank;                        /* -1: optional input that is absent */
    int64_t dims[NETRUN_MAX_RANK];
    void *data;                      /* address (host or device) when the backend's memory is addressable */
    void *buffer;                    /* the backend buffer that holds it */
    size_t offset;                   /* byte offset of the tensor in buffer */
    size_t nbytes;
} netrun_tensor;

typedef struct netrun_kernel_args {
    uint32_t struct_size;
    const void *params;              /* params for the current shapes (may differ from kernel_create's) */
    int n_inputs;
    const netrun_tensor *inputs;
    int n_outputs;
    netrun_tensor *outputs;          /* data is NULL when the shape depends on input values: see alloc_output */
    void *workspace;                 /* at least the workspace bytes kernel_create asked for */
    size_t workspace_size;
    /* For outputs whose shape depends on input values (NonZero, ...): allocate output `index` with the given
     * shape; fills outputs[index]. */
    netrun_status (*alloc_output)(void *exec, int index, int rank, const int64_t *dims);
    void *exec;
} netrun_kernel_args;

/* Settings a context is created with (from the session options). */
typedef struct netrun_backend_config {
    uint32_t struct_size;
    int device;
    int threads;                     /* >= 1 */
    netrun_precision precision;
    netrun_workspace_policy workspace_policy;
    size_t workspace_limit;          /* 0 = no cap */
    size_t device_memory_budget;     /* 0 = none */
    /* Backend-specific knobs set with netrun_options_set ("cuda.graph" ...): NULL when not set. */
    const char *(*get_option)(const void *opaque, const char *key);
    const void *opaque;
} netrun_backend_config;

/* One row of a backend's static support matrix (for --support-matrix; never used for placement). */
typedef struct netrun_op_support {
    const char *domain;              /* "" = default ONNX domain */
    const char *op_type;
    uint64_t dtypes;                 /* bit (1u << netrun_dtype) per element type supported */
    const char *constraints;         /* human-readable limits: "rank <= 5; auto_pad all" ("" = none) */
} netrun_op_support;

#define NETRUN_DTYPE_BIT(t) (UINT64_C(1) << (t))

/* A setting a backend reads through netrun_backend_config.get_option (ABI 1.8): the runtime refuses a key of the
 * backend's prefix that its table does not list (a typo in --set cpu.winogard=0 is an error, with a suggestion).
 * The kind says what values mean, for error messages, documentation and value checks. */
typedef enum netrun_option_kind {
    NETRUN_OPTION_BOOL = 0,    /* "0" or "1" */
    NETRUN_OPTION_INT = 1,     /* a decimal integer */
    NETRUN_OPTION_SIZE = 2,    /* bytes, optionally with a K/M/G suffix */
    NETRUN_OPTION_ENUM = 3,    /* one of `values` ("heuristic|timed") */
    NETRUN_OPTION_STRING = 4,  /* free text (a folder, a list) */
    NETRUN_OPTION_DOUBLE = 5   /* a decimal number */
} netrun_option_kind;

typedef struct netrun_option_spec {
    const char *key;           /* the whole key, prefix included: "cpu.winograd" */
    netrun_option_kind kind;
    const char *values;        /* ENUM: the values, '|'-separated; else NULL */
    const char *help;          /* one line: what it changes and its default */
} netrun_option_spec;

/* Session-wide settings a backend honours (netrun_backend_api.uses, ABI 1.8): when no backend that runs a node of a
 * session honours one that was set, the runtime says the setting has no effect on that run. */
enum {
    NETRUN_USES_PRECISION = 1u << 0,      /* netrun_options_set_precision */
    NETRUN_USES_WORKSPACE = 1u << 1,      /* netrun_options_set_workspace (policy and cap) */
    NETRUN_USES_DEVICE = 1u << 2,         /* netrun_options_set_device */
    NETRUN_USES_DEVICE_MEMORY = 1u << 3,  /* netrun_options_set_device_memory_budget */
    NETRUN_USES_THREADS = 1u << 4,        /* netrun_options_set_threads */
    NETRUN_USES_DECLARED = 1u << 31       /* set with the others: the bits are a declaration (0 = none made) */
};

typedef struct netrun_backend_context netrun_backend_context;
typedef struct netrun_kernel netrun_kernel;

/* ---- ABI 1.9: an op a plugin defines (netrun_backend_api.op_defs) ----
 * The definition is what the runtime knows of a built-in op: its name and opset versions, how many inputs and
 * outputs it takes, how its attributes become a params blob (parse, once per node at model load), and how its
 * output types and shapes follow from its inputs (infer, whenever shapes are known; it may also complete the
 * params). Kernels are not part of it: any backend, this plugin or another, runs the op by answering supports()
 * and kernel_create for it and reading the same blob (node->params, kernel_args->params), so the layout of
 * params is the definer's published contract. Rules the loader enforces:
 *   - an op netrun defines itself (its domain and name, at any opset) cannot be redefined: the plugin is then
 *     listed as unavailable, naming the op. (Backends recognise netrun's ops by name and read their params as
 *     netrun's; a plugin may of course run them, as any backend does.)
 *   - two plugins defining the same op at overlapping opsets: a model that uses it fails to load, naming both.
 *   - struct_size is checked per row (the rows are pointed to, so rows of another minor are read safely). */
enum {
    NETRUN_OP_NO_FOLD = 1u << 0 /* never run at prepare on constant inputs (random ops, side effects) */
};

typedef struct netrun_op_def {
    uint32_t struct_size;            /* sizeof(netrun_op_def) the plugin was built with */
    const char *domain;              /* "com.microsoft" ("" = the default ONNX domain) */
    const char *op_type;             /* "Gelu" */
    int since_version;               /* the first opset version of the domain this definition covers (>= 1) */
    int until_version;               /* the last one; 0 = every later version */
    int min_inputs, max_inputs;      /* inputs 0 .. min_inputs-1 must be present; at most max_inputs */
    int min_outputs, max_outputs;    /* likewise for outputs (at least one present output is always required) */
    size_t params_size;              /* bytes of the params blob (zeroed before parse; plain data, which the runtime
                                      * copies per session: pointers only to static data or into the model); 0 = none */
    /* Read and check attributes into params. Input and output counts and names are known, shapes are not. May
     * be NULL (no attributes). */
    netrun_status (*parse)(netrun_op_ctx *c, void *params);
    /* Check the inputs' dtypes and shapes and set every present output (op_output_set); may complete params
     * (resolve negative axes). Required. Called again when shapes change: it must not keep state of its own. */
    netrun_status (*infer)(netrun_op_ctx *c, void *params);
    uint32_t flags;                  /* NETRUN_OP_* */
} netrun_op_def;

enum {
    NETRUN_BACKEND_HOST_MEMORY = 1u << 0, /* buffers are plain host pointers: no copies to/from the CPU */
    NETRUN_BACKEND_GPU = 1u << 1,         /* a GPU backend: preferred by default, placed first */
    /* ABI 1.10: roles. The runtime never picks a backend by its name; these say who does what. */
    NETRUN_BACKEND_FOLDS_CONSTANTS = 1u << 2, /* with HOST_MEMORY: computes nodes whose inputs are all constant at
                                               * prepare (the first available backend declaring it does) */
    NETRUN_BACKEND_FALLBACK = 1u << 3         /* the backend of last resort: appended to a caller's backend list
                                               * (not in strict mode) and placed after GPU backends by default */
};

/* ---- ABI 1.10: layouts and precisions a backend keeps across its nodes ----
 * A backend declares regions; the runtime plans them after placement on a private copy of the graph (the
 * graph passes): values between the backend's nodes stay in the region's form, and a conversion node (domain
 * com.netrun) is inserted at each border. Which nodes join is asked of the backend: its Convs (and pools) through
 * supports() with the region's params flags, its other nodes through `keeps` (or supports()). A backend that
 * declares a region implements the com.netrun ops listed with its kind. */
typedef enum netrun_region_kind {
    NETRUN_REGION_END = 0,       /* ends the table */
    /* float32 4-D values with C % 16 == 0 stored [N][C/16][H][W][16] (same dims and bytes as NCHW).
     * Conv params src_blocked/dst_blocked (and src_scale, see fold_scale_option), MaxPool params.blocked;
     * ops ReorderNCHWc, GlobalAveragePoolNCHWc, MulChannelNCHWc. */
    NETRUN_REGION_NCHW16C = 1,
    /* float16 values in channels-last order (logical NCHW dims) between the backend's nodes.
     * Conv params src_nhwc/dst_nhwc with float16 descs and constant weights, Max/AveragePool params.nhwc;
     * ops ReorderNHWC, GlobalAveragePoolNHWC, MulChannelNHWC, ConcatNHWC. */
    NETRUN_REGION_FP16_NHWC = 2,
    /* (ABI 1.11) float16 values in their own layout between the backend's nodes of the ops listed (MatMul, Gemm,
     * Attention and the ops between them in a transformer), planned where a connected group holds one of MatMul,
     * Gemm or Attention. Every float32 input and the output of such a node become float16 (constants converted
     * once, finite values beyond float16's range saturated); an ONNX Cast converts at each border. `keeps` (or
     * supports()) is asked with the float16 descs; params may be NULL for nodes the passes made (Attention,
     * LayerNormalization, Gelu, MatMulBias). The passes' MatMulBias (com.netrun, MatMul + bias) joins where the
     * region lists "MatMul"; no conversion op of its own. */
    NETRUN_REGION_FP16 = 3
} netrun_region_kind;

enum {
    NETRUN_REGION_IF_FP16 = 1u << 0 /* only in sessions with netrun_options_set_precision(NETRUN_PRECISION_FP16) */
};

typedef struct netrun_region_spec {
    netrun_region_kind kind;
    uint32_t conditions;             /* NETRUN_REGION_IF_* */
    const char *option;              /* a key of the backend's options whose value "0" turns the region off; NULL */
    /* NCHW16C: a squeeze-excite Mul(X, S[N,C,1,1]) read only by a 1x1 Conv that then reads X blocked is folded
     * into that Conv (params.src_scale, S an input after B) unless this key is "0"; NULL: never folded. */
    const char *fold_scale_option;
    /* ONNX ops (default domain) the region crosses, NULL-ended: same-shape elementwise ops, "Concat" (axis 1),
     * "MaxPool", "AveragePool", "GlobalAveragePool", "Mul" also as squeeze-excite's channel scale. */
    const char *const *ops;
    /* Optional: whether the backend runs this elementwise node with its descs as the region holds them (float16
     * for FP16_NHWC). NULL: supports() is asked (FP16_NHWC), or the node is taken as it is (NCHW16C, whose descs
     * do not change). No device work. */
    int (*keeps)(const netrun_backend_config *config, const netrun_node_desc *node);
} netrun_region_spec;

typedef struct netrun_backend_api {
    uint32_t abi_version;            /* NETRUN_ABI_VERSION the plugin was built with */
    uint32_t struct_size;            /* sizeof(netrun_backend_api) the plugin was built with */
    const char *name;                /* short name used in --backend lists, e.g. "cpu" */
    const char *description;
    uint32_t flags;                  /* NETRUN_BACKEND_* */
    const netrun_op_support *op_table;
    size_t op_table_len;

    /* Cheap check that this machine can run the backend (driver present...). On success writes a one-line
     * device summary into msg; on failure returns an error with the reason via host->error. No lasting
     * device state may be created here. */
    netrun_status (*probe)(char *msg, size_t msg_size);
    int (*device_count)(void);
    netrun_status (*device_describe)(int device, char *buf, size_t buf_size);

    /* Can this backend run this node with these shapes and dtypes? Returns 1, or 0 with a short reason in
     * `reason` ("dtype int8 not supported"). Must not touch the device. */
    int (*supports)(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                    size_t reason_size);

    netrun_status (*context_create)(const netrun_backend_config *config, netrun_backend_context **out);
    void (*context_destroy)(netrun_backend_context *ctx);

    /* Memory. Buffers are opaque handles; for NETRUN_BACKEND_HOST_MEMORY backends they are host pointers. */
    netrun_status (*buffer_alloc)(netrun_backend_context *ctx, size_t bytes, void **buffer);
    void (*buffer_free)(netrun_backend_context *ctx, void *buffer);
    /* The address of a buffer when its memory is addressable (host or CUDA pointers), else NULL. */
    void *(*buffer_address)(netrun_backend_context *ctx, void *buffer);
    netrun_status (*copy_from_host)(netrun_backend_context *ctx, void *buffer, size_t offset, const void *src,
                                    size_t bytes);
    netrun_status (*copy_to_host)(netrun_backend_context *ctx, void *dst, const void *buffer, size_t offset,
                                  size_t bytes);

    /* Build a kernel for a node (choose the algorithm, upload constants). workspace_bytes receives what
     * kernel_run needs as scratch (0 if none). */
    netrun_status (*kernel_create)(netrun_backend_context *ctx, const netrun_node_desc *node,
                                   netrun_kernel **out, size_t *workspace_bytes);
    netrun_status (*kernel_run)(netrun_backend_context *ctx, netrun_kernel *kernel, const netrun_kernel_args *args);
    void (*kernel_destroy)(netrun_backend_context *ctx, netrun_kernel *kernel);
    /* Wait for queued work (may be NULL for synchronous backends). */
    netrun_status (*synchronize)(netrun_backend_context *ctx);

    /* ---- ABI 1.1 (1.2 appended params structs to netrun_ops.h, no slots) ---- */
    /* Optional: name the kernel or algorithm chosen for a node (for profiles), e.g. "cudnn IMPLICIT_GEMM". */
    netrun_status (*kernel_describe)(netrun_backend_context *ctx, netrun_kernel *kernel, char *buf, size_t buf_size);

    /* ---- ABI 1.3 (all optional; NULL or outside struct_size: the runtime runs eagerly) ---- */
    /* Graph capture (CUDA Graphs and the like). With static shapes the executor groups consecutive kernel steps
     * of one backend into a segment; on the second run it calls graph_capture_begin, runs the segment's
     * kernel_run calls as usual (they must only queue work), then graph_capture_end, which returns an opaque
     * graph (or an error: a kernel that cannot be captured, e.g. one that synchronizes; the runtime then reruns
     * the segment eagerly and never captures it again). graph_launch queues a replay of the same work on the same
     * buffers; graph_destroy frees it. Copies between domains stay outside graphs. */
    netrun_status (*graph_capture_begin)(netrun_backend_context *ctx);
    netrun_status (*graph_capture_end)(netrun_backend_context *ctx, void **graph);
    netrun_status (*graph_launch)(netrun_backend_context *ctx, void *graph);
    void (*graph_destroy)(netrun_backend_context *ctx, void *graph);
    /* Device memory of this context: bytes in use now and the peak since context_create, and the bytes free on
     * the device (free_bytes may be 0 when unknown). */
    netrun_status (*memory_info)(netrun_backend_context *ctx, size_t *in_use, size_t *peak, size_t *free_bytes);

    /* ---- ABI 1.5 (optional; NULL or outside struct_size: never) ---- */
    /* In-place outputs: 1 when this backend's kernel for `node` (the descs of supports()) computes a correct
     * result with output `output` in the very same bytes as input `input` (same address, same byte size): the
     * memory planner may then let the output take the input's memory when the input dies at this node. Say 1
     * only where the kernel reads each element of that input before it writes the output element there (and
     * never writes the output before it has read the input, nor copies it with memcpy onto itself). No device
     * work; called at prepare. */
    int (*may_alias)(const netrun_backend_config *config, const netrun_node_desc *node, int output, int input);
    /* Host memory that copy_from_host / copy_to_host move fastest (page-locked on CUDA: one DMA, no staging).
     * The runtime keeps graph inputs that this backend reads in it while the session is prepared. host_alloc
     * returns an error (and the runtime keeps pageable memory) when none can be had; host_free takes NULL. */
    netrun_status (*host_alloc)(netrun_backend_context *ctx, size_t bytes, void **out);
    void (*host_free)(netrun_backend_context *ctx, void *p);
    /* Streamed weights (option memory.stream_weights): the runtime copies constants from host_alloc memory into
     * a device buffer before the node that reads them, with copy_from_host between kernel_run calls, also while
     * a graph is captured; a copy from host_alloc memory must therefore only queue work (a DMA), as CUDA's does. */

    /* ---- ABI 1.6 (optional; NULL or outside struct_size: streamed weights are copied in the queue's order) ----
     * Streamed weights overlapping the kernels (double-buffered by the runtime). prefetch_from_host queues a copy
     * of `bytes` from host_alloc memory into buffer+offset on copy lane `lane` (0 or 1): it starts after all work
     * queued before the call, and may run alongside work queued after it. prefetch_wait(lane) makes work queued
     * after it wait for every copy queued on that lane before it. Both only queue work; between
     * graph_capture_begin and graph_capture_end they are captured too, and the runtime waits on each prefetch
     * before the capture ends. */
    netrun_status (*prefetch_from_host)(netrun_backend_context *ctx, void *buffer, size_t offset, const void *src,
                                        size_t bytes, int lane);
    netrun_status (*prefetch_wait)(netrun_backend_context *ctx, int lane);

    /* ---- ABI 1.8 (optional; outside struct_size: keys of this backend's prefix are accepted unchecked, and every
     * session-wide setting is taken as used) ----
     * options: the keys this backend reads ("NAME.KEY"), ended by a row whose key is NULL; an empty table (just the
     * NULL row) says it reads none, so any "NAME.*" key is refused; NULL: not declared, keys accepted unchecked.
     * "NAME.graphs" need not be listed by a backend with graph capture: the runtime reads it.
     * uses: NETRUN_USES_DECLARED | the NETRUN_USES_* bits of the settings it honours; 0: not declared. */
    const netrun_option_spec *options;
    uint32_t uses;

    /* ---- ABI 1.9 (optional; NULL or outside struct_size: the plugin defines no ops) ----
     * op_defs: the ops this plugin defines (see netrun_op_def), ended by a NULL pointer. They appear in
     * netrun_op_count()/--support-matrix as ops the runtime knows; list them in op_table too, to show the
     * dtypes your kernels take. A session whose model uses one of them and whose backend list leaves this plugin
     * out adds it after the listed ones (as the CPU is added), unless strict. */
    const netrun_op_def *const *op_defs;

    /* ---- ABI 1.10 (optional; NULL or outside struct_size: the backend keeps no layout or precision) ----
     * regions: the layouts and precisions this backend keeps across its nodes, ended by a row of kind
     * NETRUN_REGION_END (see netrun_region_spec). The roles are flags (NETRUN_BACKEND_FOLDS_CONSTANTS,
     * NETRUN_BACKEND_FALLBACK); a plugin of an older minor declares none. */
    const netrun_region_spec *regions;

    /* ---- ABI 1.11 (optional; outside struct_size or memory_type 0: the caller cannot hand this backend its own
     * memory) ----
     * Device memory of the caller (netrun_session_bind_input_device / bind_output_device / set_stream, netrun.h).
     * memory_type: the netrun_memory_type of this backend's buffers (NETRUN_MEMORY_CUDA for device pointers,
     * NETRUN_MEMORY_OPENCL for cl_mem); 0: not declared. The runtime serves a memory type by the session's backend
     * that declares it, and otherwise never looks at it. */
    uint32_t memory_type;
    /* Check, without a context or lasting state, that [ptr, ptr + bytes) is memory of this type on `device`;
     * else return NETRUN_ERR_INVALID_ARGUMENT through host->error with the reason ("a host pointer, not CUDA device
     * memory", "memory of device 1, the session uses device 0", "the allocation holds 1024 bytes from ptr, 4096
     * needed"). NULL: pointers are taken as they are given. */
    netrun_status (*memory_check)(const void *ptr, size_t bytes, int device);
    /* A buffer handle for the caller's memory (no copy, not owned), usable wherever a buffer_alloc buffer is
     * (kernel tensors, copies, buffer_address). buffer_free of a wrapped buffer releases the handle only, never the
     * caller's memory. Required for binding. */
    netrun_status (*buffer_wrap)(netrun_backend_context *ctx, void *ptr, size_t bytes, void **buffer);
    /* Queue all later work of this context (kernels, copies, graph launches and captures) on the caller's stream or
     * queue (cudaStream_t, cl_command_queue); NULL: the backend's own again. Called between runs only, with
     * nothing queued of this context's that the caller has not waited for. synchronize() then waits for that
     * stream only (never the whole device). Never destroy the caller's stream. */
    netrun_status (*set_stream)(netrun_backend_context *ctx, void *stream);
    /* Optional: queue a copy of bytes between two buffers of this context (device to device, no host wait). NULL:
     * the runtime copies through the host (and counts it). */
    netrun_status (*copy_device)(netrun_backend_context *ctx, void *dst, size_t dst_offset, const void *src,
                                 size_t src_offset, size_t bytes);
    /* Optional, for memory that buffer_address cannot give (OpenCL): the object the caller sees for a buffer (the
     * cl_mem), for netrun_session_output_device. */
    void *(*buffer_native)(netrun_backend_context *ctx, void *buffer);
} netrun_backend_api;

typedef const netrun_backend_api *(*netrun_backend_entry_fn)(const netrun_host_api *host);

#ifdef __cplusplus
}
#endif
#endif /* NETRUN_BACKEND_H */
