/*
 * netrun.h — the embedding API of netrun, a DNN inference runtime.
 *
 * Life of a program:
 *   netrun_model *m;   netrun_model_load("net.onnx", &m);
 *   netrun_options *o; netrun_options_create(&o); netrun_options_set_backends(o, "cuda,cpu");
 *   netrun_session *s; netrun_session_create(m, o, &s);
 *   netrun_session_set_input(s, "x", NETRUN_DTYPE_FLOAT, 4, dims, data, bytes);
 *   netrun_session_run(s);                      // first run also prepares (lazy init)
 *   netrun_tensor_view y; netrun_session_output(s, 0, &y);
 *   netrun_session_destroy(s); netrun_options_destroy(o); netrun_model_release(m);
 *
 * Rules:
 *   - Every call that can fail returns netrun_status; NETRUN_OK is 0.
 *   - After a failure, netrun_model_error(m) / netrun_session_error(s) give the message of that handle's
 *     last failure; for calls that had no handle yet (load, create) netrun_last_error() gives the message
 *     of this thread's last failure. Messages are owned by the library; copy them to keep them.
 *   - destroy/release(NULL) is a no-op.
 *   - A model is immutable once loaded and may back many sessions on many threads. A session is used by
 *     one thread at a time; different sessions run concurrently. A call on a session that another thread is
 *     inside is refused with NETRUN_ERR_STATE (message in netrun_last_error() only) and changes nothing;
 *     destroying a session another thread uses is not detected.
 *   - The library never exits or aborts on bad input.
 */
#ifndef NETRUN_H
#define NETRUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NETRUN_BUILDING_LIBRARY)
#define NETRUN_API __attribute__((visibility("default")))
#else
#define NETRUN_API
#endif

#define NETRUN_VERSION_MAJOR 0
#define NETRUN_VERSION_MINOR 8
#define NETRUN_VERSION_PATCH 0

/* Most dimensions a tensor may have. */
#define NETRUN_MAX_RANK 8

typedef enum netrun_status {
    NETRUN_OK = 0,
    NETRUN_ERR_INVALID_ARGUMENT = 1, /* a bad argument to an API call (NULL, unknown name, bad size) */
    NETRUN_ERR_INVALID_MODEL = 2,    /* the model file or graph is malformed */
    NETRUN_ERR_UNSUPPORTED = 3,      /* an op, dtype or attribute no usable backend supports */
    NETRUN_ERR_OUT_OF_MEMORY = 4,    /* host or device allocation failed */
    NETRUN_ERR_BACKEND = 5,          /* a backend failed (driver error, kernel failure) */
    NETRUN_ERR_IO = 6,               /* a file could not be read */
    NETRUN_ERR_STATE = 7,            /* the call is not allowed now (e.g. output before run) */
    NETRUN_ERR_INTERNAL = 8,         /* a bug in netrun: please report it */
    NETRUN_ERR_CANCELLED = 9         /* the run was cancelled (netrun_session_cancel) */
} netrun_status;

/* Levels of log lines (messages of the runtime and the backend plugins). */
typedef enum netrun_log_level {
    NETRUN_LOG_ERROR = 0,
    NETRUN_LOG_WARN = 1,
    NETRUN_LOG_INFO = 2,
    NETRUN_LOG_DEBUG = 3
} netrun_log_level;

/* Element types. The numbers are ONNX's TensorProto.DataType numbers. */
typedef enum netrun_dtype {
    NETRUN_DTYPE_UNDEFINED = 0,
    NETRUN_DTYPE_FLOAT = 1,
    NETRUN_DTYPE_UINT8 = 2,
    NETRUN_DTYPE_INT8 = 3,
    NETRUN_DTYPE_UINT16 = 4,
    NETRUN_DTYPE_INT16 = 5,
    NETRUN_DTYPE_INT32 = 6,
    NETRUN_DTYPE_INT64 = 7,
    NETRUN_DTYPE_STRING = 8,
    NETRUN_DTYPE_BOOL = 9,
    NETRUN_DTYPE_FLOAT16 = 10,
    NETRUN_DTYPE_DOUBLE = 11,
    NETRUN_DTYPE_UINT32 = 12,
    NETRUN_DTYPE_UINT64 = 13,
    NETRUN_DTYPE_COMPLEX64 = 14,
    NETRUN_DTYPE_COMPLEX128 = 15,
    NETRUN_DTYPE_BFLOAT16 = 16,
    NETRUN_DTYPE_FLOAT8E4M3FN = 17,
    NETRUN_DTYPE_FLOAT8E4M3FNUZ = 18,
    NETRUN_DTYPE_FLOAT8E5M2 = 19,
    NETRUN_DTYPE_FLOAT8E5M2FNUZ = 20,
    NETRUN_DTYPE_UINT4 = 21,
    NETRUN_DTYPE_INT4 = 22,
    NETRUN_DTYPE_FLOAT4E2M1 = 23,
    NETRUN_DTYPE_FLOAT8E8M0 = 24,
    NETRUN_DTYPE_UINT2 = 25,
    NETRUN_DTYPE_INT2 = 26,
    NETRUN_DTYPE_COUNT_ = 27
} netrun_dtype;

typedef enum netrun_precision {
    NETRUN_PRECISION_FP32 = 0, /* exact float32 arithmetic (default) */
    NETRUN_PRECISION_TF32 = 1, /* allow TF32 tensor cores for float32 matrix work */
    NETRUN_PRECISION_FP16 = 2  /* allow float16 compute where a backend measures it faster */
} netrun_precision;

typedef enum netrun_workspace_policy {
    NETRUN_WORKSPACE_BALANCED = 0,  /* default: fast algorithms within a share of free memory */
    NETRUN_WORKSPACE_FASTEST = 1,   /* fastest algorithm allowed by the byte cap */
    NETRUN_WORKSPACE_MIN_MEMORY = 2 /* the algorithm with the smallest workspace */
} netrun_workspace_policy;

typedef struct netrun_model netrun_model;
typedef struct netrun_options netrun_options;
typedef struct netrun_session netrun_session;

/* Description of a model input or output. Pointers stay valid as long as the handle they came from. */
typedef struct netrun_tensor_info {
    const char *name;
    netrun_dtype dtype;
    int rank;                       /* -1 when the rank is unknown */
    const int64_t *dims;            /* rank entries; -1 for a dimension that is not known */
    const char *const *dim_names;   /* rank entries; the symbolic name of a dim, or NULL when fixed */
} netrun_tensor_info;

/* A tensor in host memory. For outputs, data belongs to the session and stays valid until the next run,
 * set_dim or destroy of that session. */
typedef struct netrun_tensor_view {
    const char *name;
    netrun_dtype dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    const void *data;
    size_t nbytes;
} netrun_tensor_view;

/* Where one node of a session runs, and why. Strings stay valid until the session is destroyed. */
typedef struct netrun_node_info {
    const char *name;
    const char *op_type;
    const char *backend; /* name of the backend that runs it; "const" when folded away at prepare */
    const char *reason;  /* why it was placed there (e.g. "cuda: fp16 not supported for Resize") */
    const char *kernel;  /* the kernel or algorithm the backend chose ("" when it does not say) */
    size_t workspace_bytes; /* scratch memory the kernel asked for */
} netrun_node_info;

/* One timed event of a profiled run: a node's kernel, or a copy between memory domains. */
typedef struct netrun_profile_event {
    const char *name;        /* node name, or the copied value's name */
    const char *op_type;     /* op type, or "Copy" */
    const char *backend;     /* backend that ran it ("runtime" for control flow; "host->cuda" for copies) */
    int is_copy;
    uint64_t run;            /* index of the run since profiling was switched on */
    double start_ms;         /* from the start of that run */
    double duration_ms;      /* wall time; the backend is synchronised after each event while profiling */
    size_t bytes;            /* copies: bytes moved */
    int node;                /* kernels: index for netrun_session_node_info; copies: -1 */
    /* ---- netrun 0.7 ---- */
    int depth;               /* 0: a node of the session; 1: of a control-flow body it ran (If, Loop, Scan), named
                              * "<node>/<branch or body>/<name>" (node -1), 2: of a body inside that, ... The node
                              * of the body holds their time too: sums of depth 0 cover the run */
} netrun_profile_event;

/* One row of a backend's support matrix, as the plugin states it. */
typedef struct netrun_op_support_info {
    const char *domain;      /* "" = default ONNX domain */
    const char *op_type;
    uint64_t dtypes;         /* bit (1 << netrun_dtype) per element type */
    const char *constraints; /* human-readable limits ("" = none) */
} netrun_op_support_info;

/* Times and memory of a session, in milliseconds and bytes. */
typedef struct netrun_session_stats {
    double prepare_ms;       /* last prepare: inference, placement, planning, backend init, kernels */
    double init_ms;          /* part of prepare_ms spent initialising backends (devices, handles) */
    double first_run_ms;     /* the first run after the last prepare (includes lazy work in backends) */
    double last_run_ms;      /* the latest run */
    uint64_t runs;           /* runs since the last prepare */
    size_t arena_bytes;      /* planned activation memory, all devices together */
    size_t weight_bytes;     /* constant data held by the session's backends */
    size_t workspace_bytes;  /* workspace memory reserved */
    int n_copies;            /* tensor copies inserted at backend borders */
    size_t copy_bytes;       /* bytes those copies move per run */
    int n_folded;            /* nodes folded to constants at prepare */
    /* ---- netrun 0.2 ---- */
    size_t device_peak_bytes; /* peak device memory of the session's device backends (0: no device backend) */
    int n_graphs;             /* device graphs captured (CUDA Graphs) and replayed by runs */
    int n_segments;           /* runs of consecutive kernels of one device backend (graph candidates) */
    /* graph passes at prepare (option "graph.optimize" = "0" turns them off) */
    int n_bn_folded;          /* BatchNormalization, and per-channel Mul / Add, nodes folded into Conv weights
                               * (or into a BatchNormalization) */
    int n_act_fused;          /* activations fused into a Conv (or a BatchNormalization) */
    int n_sum_fused;          /* Add (or two-input Sum) nodes fused into a Conv as "+ Z" */
    int n_nodes_dropped;      /* Identity / inference Dropout nodes removed */
    /* ---- netrun 0.3 ---- */
    int n_swish_fused;        /* Mul(x, Sigmoid(x)) pairs rewritten to one Swish node */
    int n_nchwc_convs;        /* CPU Convs reading or writing the blocked nChw16c layout (setting cpu.nchwc=0: none) */
    int n_nchwc_reorders;     /* layout reorders inserted at the edges of the blocked chains */
    /* memory plan (option "memory.inplace" = "0" turns both off) */
    int n_inplace;            /* outputs written over an input that dies at their node (same memory) */
    int n_views;              /* values that are views of another's memory: Reshape-like outputs and Concat
                               * inputs placed in their slice of the output; their nodes run no kernel */
    /* ---- netrun 0.4 ---- */
    int n_fp16_convs;         /* CUDA Convs inside float16 NHWC regions (--precision fp16; cuda.fp16_regions=0: none) */
    int n_fp16_converts;      /* float32 NCHW <-> float16 NHWC conversions at the borders of those regions */
    /* ---- netrun 0.5 ---- */
    size_t stream_bytes;      /* constant bytes copied to devices on every run instead of held there (streamed
                               * weights: memory.stream_weights, on under the min-memory policy); the device
                               * buffer they pass through counts in weight_bytes */
    /* ---- netrun 0.6 ---- */
    int micro_batch;          /* images per run of the plan when a batch runs as several runs of a plan built for
                               * fewer images (option run.micro_batch; 0: off); netrun_session_micro_batch says why */
    /* ---- netrun 0.7 ---- */
    uint64_t prepares;        /* prepares since the session was created, its control-flow bodies' included (not reset
                               * by a prepare): a run that had to prepare again (a new input shape; a body whose
                               * inputs changed size, once) adds to it; netrun_session_prepare_note says why */
    size_t host_peak_bytes;   /* most host memory the session (with its subgraphs) held at once: inputs, activations,
                               * run-time values, Loop/Scan accumulation, staging (what the host budget counts) */
    size_t host_memory_budget; /* the host memory budget in force (SIZE_MAX: none) */
    uint64_t profile_dropped; /* profile events dropped since profiling was switched on: the oldest go once
                               * profile.max_events are held */
    /* graph passes: transformer subgraphs as one op (option "graph.fuse_transformer" = "0" turns them off) */
    int n_attention_fused;    /* MatMul/Softmax/MatMul attention subgraphs run as one Attention node */
    int n_layernorm_fused;    /* decomposed LayerNormalization subgraphs (ReduceMean ... Add) run as one node */
    int n_gelu_fused;         /* erf / tanh Gelu subgraphs run as one Gelu node */
    /* ---- netrun 0.8: read these with netrun_session_get_stats_ex (netrun_session_get_stats stops before them) ----
     * Copies of the last run between host memory and device memory (over PCIe on a discrete GPU): inputs to the
     * devices, outputs back, values crossing between host and device nodes, streamed weights. With inputs and
     * outputs in device memory (netrun_session_bind_input_device, netrun_session_bind_output_device) and every
     * node on the device they are 0. */
    size_t h2d_bytes;         /* host -> device */
    size_t d2h_bytes;         /* device -> host */
    size_t d2d_bytes;         /* device -> device: outputs bound to a caller's buffer that were not written in place */
    int n_outputs_in_place;   /* outputs of the last run written by their node straight into a caller's device buffer */
    uint64_t graph_recaptures; /* device graphs captured again because a bound device pointer changed */
    int n_fp16_nodes;         /* nodes kept in float16 by plain float16 regions (--precision fp16: a transformer's
                               * GEMMs, attention, norms and the ops between them; cuda.fp16_plain=0: none) */
    int n_fp16_casts;         /* Casts at the borders of those regions */
} netrun_session_stats;

/* Kinds of memory a tensor of the API may live in. Device kinds are served by whichever loaded backend declares
 * its buffers to be of that kind (netrun never picks a backend by name for it). */
typedef enum netrun_memory_type {
    NETRUN_MEMORY_HOST = 0,   /* ordinary host memory */
    NETRUN_MEMORY_CUDA = 1,   /* CUDA device memory: data is a device pointer (cudaMalloc, torch/CuPy tensors) */
    NETRUN_MEMORY_OPENCL = 2  /* an OpenCL buffer: data is a cl_mem of netrun's cl_context for the device (docs/device-io.md) */
} netrun_memory_type;

/* An output as it lies in memory of some type (netrun_session_output_device). */
typedef struct netrun_device_view {
    const char *name;
    netrun_dtype dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    void *data;                     /* CUDA: device address of the first element; OpenCL: the cl_mem; host: address */
    size_t offset;                  /* OpenCL: byte offset of the tensor in the cl_mem; 0 otherwise */
    size_t nbytes;
    netrun_memory_type memory_type;
    int device;                     /* device index of that memory (0 for host memory) */
} netrun_device_view;

/* Description of a backend plugin found on this machine. */
typedef struct netrun_backend_info {
    const char *name;        /* e.g. "cpu" */
    const char *path;        /* the shared library it came from */
    int available;           /* 1 when it loaded and its probe passed */
    const char *reason;      /* why it is unavailable, or a one-line description of its devices */
    int device_count;
    int is_gpu;              /* a GPU backend: placed before the CPU by default */
} netrun_backend_info;

/* ---- library ---- */

/* The version of the loaded library, "MAJOR.MINOR.PATCH" (e.g. "0.6.0"): compare with the NETRUN_VERSION_*
 * macros of the header a program was compiled against. */
NETRUN_API const char *netrun_version(void);
/* Static text for a status code. */
NETRUN_API const char *netrun_status_string(netrun_status status);
/* Message of the last failed netrun call on this thread ("" when none). */
NETRUN_API const char *netrun_last_error(void);
/* Name of a dtype ("float32", "int64", ...). */
NETRUN_API const char *netrun_dtype_name(netrun_dtype dtype);
/* Bytes per element of a dtype as netrun stores it (0 for string and undefined). The sub-byte types
 * (int4/uint4, int2/uint2, float4e2m1) are stored unpacked, one element per byte (signed ones sign-extended,
 * float4e2m1 in the low 4 bits), so their size is 1. */
NETRUN_API size_t netrun_dtype_size(netrun_dtype dtype);

/* Where log lines go. By default they are written to stderr ("netrun[cpu] warning: ...") up to the level named by
 * the environment variable NETRUN_LOG_LEVEL (error, warn, info, debug; default warn). A callback replaces that:
 * it receives every line up to max_level, with its source ("runtime", "loader", a backend's name) and the message
 * without a trailing newline, on the thread that logged it (possibly several threads at once). fn NULL restores
 * stderr (max_level then also applies); a max_level outside ERROR..DEBUG (e.g. -1) keeps the current level.
 * Process-wide; set it before creating sessions. */
typedef void (*netrun_log_fn)(void *user, netrun_log_level level, const char *source, const char *message);
NETRUN_API void netrun_set_log_callback(netrun_log_fn fn, void *user, netrun_log_level max_level);

/* Number of backend plugins found (loading and probing every one of them on first call). */
NETRUN_API int netrun_backend_count(void);
/* Describe backend number index (0 <= index < netrun_backend_count()). */
NETRUN_API netrun_status netrun_backend_get_info(int index, netrun_backend_info *info);
/* Describe the backend named `name` and give its index (>= 0), loading and probing only the plugins whose file
 * carries that name (libnetrun-NAME.so): asking for "cpu" never maps the OpenCL or CUDA plugin. -1 with
 * NETRUN_ERR_INVALID_ARGUMENT in netrun_last_error() when no plugin has that name (then every plugin was loaded to
 * be sure). info may be NULL. */
NETRUN_API int netrun_backend_find(const char *name, netrun_backend_info *info);
/* Describe device `device` of backend `index` in one line into buf (name, memory, capabilities). */
NETRUN_API netrun_status netrun_backend_device_describe(int index, int device, char *buf, size_t buf_size);

/* ---- tensor files ---- */

/* Read a tensor from a NumPy .npy file or an ONNX TensorProto .pb file (by content, not extension).
 * The view and its data are allocated; free them with netrun_tensor_free. name is the TensorProto's name
 * (or "" for .npy). */
NETRUN_API netrun_status netrun_tensor_read_file(const char *path, netrun_tensor_view **out);
/* Parse a tensor from memory (.npy or TensorProto bytes). */
NETRUN_API netrun_status netrun_tensor_read_memory(const void *data, size_t size, netrun_tensor_view **out);
/* Write a tensor as a .npy file. */
NETRUN_API netrun_status netrun_tensor_write_npy(const char *path, const netrun_tensor_view *tensor);
NETRUN_API void netrun_tensor_free(netrun_tensor_view *tensor);

/* Rows of backend `index`'s support matrix (0 when unavailable) and row number `row`. */
NETRUN_API int netrun_backend_op_count(int index);
NETRUN_API netrun_status netrun_backend_op_get(int index, int row, netrun_op_support_info *info);
/* Ops the runtime knows (it parses, validates and infers them), its own and those the loaded plugins define (listed
 * last; loading them all): count, and "domain", "op" of number i. */
NETRUN_API int netrun_op_count(void);
NETRUN_API netrun_status netrun_op_get(int i, const char **domain, const char **op_type);

/* ---- models ---- */

/* Load an ONNX model file. External data is read only from the model's folder. */
NETRUN_API netrun_status netrun_model_load(const char *path, netrun_model **out);
/* Limits that keep a hostile model from taking the process down; 0 in a field means its safe default. */
typedef struct netrun_load_limits {
    size_t max_tensor_bytes;  /* largest single tensor (default 16 GiB) */
    int max_graph_depth;      /* deepest nesting of subgraphs (default 32) */
    size_t max_model_bytes;   /* largest model file (default: no limit beyond memory) */
} netrun_load_limits;

/* netrun_model_load with explicit limits (NULL = defaults). */
NETRUN_API netrun_status netrun_model_load_ex(const char *path, const netrun_load_limits *limits, netrun_model **out);
/* Load an ONNX model from memory (copied). base_dir: folder for external data, or NULL to forbid it. */
NETRUN_API netrun_status netrun_model_load_memory(const void *data, size_t size, const char *base_dir,
                                                  netrun_model **out);
/* Drop the caller's reference; the model is freed when its last session is destroyed too. */
NETRUN_API void netrun_model_release(netrun_model *model);
/* Message of the model's last failure. */
NETRUN_API const char *netrun_model_error(const netrun_model *model);
/* Number of graph inputs (inputs with a default value included; initializers that are not inputs excluded)
 * and outputs. */
NETRUN_API int netrun_model_input_count(const netrun_model *model);
NETRUN_API int netrun_model_output_count(const netrun_model *model);
/* Describe input / output number index, as declared in the model. */
NETRUN_API netrun_status netrun_model_input_info(const netrun_model *model, int index, netrun_tensor_info *info);
NETRUN_API netrun_status netrun_model_output_info(const netrun_model *model, int index, netrun_tensor_info *info);
/* Number of nodes in the main graph. */
NETRUN_API int netrun_model_node_count(const netrun_model *model);
/* ---- netrun 0.7 ---- */
/* 1 when input number index has a default value: an initializer of the same name (ONNX IR version 4 and later).
 * A session uses the default until netrun_session_set_input gives the input a value; 0 otherwise. */
NETRUN_API int netrun_model_input_has_default(const netrun_model *model, int index);

/* What the model file says about itself. Strings are "" when the file leaves them out, and stay valid as long as
 * the model. */
typedef struct netrun_model_metadata {
    const char *producer_name;     /* e.g. "pytorch" */
    const char *producer_version;  /* e.g. "2.9.0" */
    const char *domain;            /* the model's namespace, e.g. "ai.onnx.zoo" */
    int64_t model_version;
    int64_t ir_version;            /* ONNX IR version of the file */
    const char *doc_string;        /* the model's documentation */
    const char *graph_name;
    const char *graph_doc_string;
} netrun_model_metadata;
NETRUN_API netrun_status netrun_model_get_metadata(const netrun_model *model, netrun_model_metadata *out);
/* The opsets the model imports: count, and domain ("" = the default ONNX domain) and version of number index. */
NETRUN_API int netrun_model_opset_count(const netrun_model *model);
NETRUN_API netrun_status netrun_model_opset_get(const netrun_model *model, int index, const char **domain,
                                                int64_t *version);
/* The model's metadata_props (free key/value pairs exporters write): count, and key and value of number index. */
NETRUN_API int netrun_model_metadata_prop_count(const netrun_model *model);
NETRUN_API netrun_status netrun_model_metadata_prop_get(const netrun_model *model, int index, const char **key,
                                                        const char **value);

/* ---- session options ---- */

/* Create options holding the defaults: every available backend (GPU first), fp32, threads 0 (= all
 * cores), device 0, balanced workspace, no cap, not strict. */
NETRUN_API netrun_status netrun_options_create(netrun_options **out);
NETRUN_API void netrun_options_destroy(netrun_options *options);
/* Comma-separated backend preference list, e.g. "cuda,cpu". NULL or "" restores the default (every available
 * backend, GPU first). CPU is appended as the fallback for nodes the listed backends cannot run, unless strict
 * mode is on. A listed backend that is unavailable on this machine (no driver, no device) makes
 * netrun_session_create fail with NETRUN_ERR_INVALID_ARGUMENT and the reason, unless the list names another
 * available backend ("cuda,cpu" runs on the CPU without a GPU, with a warning) or fallback is allowed. */
NETRUN_API netrun_status netrun_options_set_backends(netrun_options *options, const char *list);
NETRUN_API netrun_status netrun_options_set_precision(netrun_options *options, netrun_precision precision);
/* Threads for CPU work; 0 means the number of cores. */
NETRUN_API netrun_status netrun_options_set_threads(netrun_options *options, int threads);
/* Device index within each backend. */
NETRUN_API netrun_status netrun_options_set_device(netrun_options *options, int device);
NETRUN_API netrun_status netrun_options_set_workspace(netrun_options *options, netrun_workspace_policy policy,
                                                      size_t byte_cap /* 0 = no cap */);
/* Strict: fail prepare if any node cannot run on the first backend of the list. */
NETRUN_API netrun_status netrun_options_set_strict(netrun_options *options, int strict);
/* Allow fallback: a listed backend that is unavailable is skipped (with a warning) instead of failing the
 * session, even when no other listed backend is available; the CPU fallback then runs the whole model. */
NETRUN_API netrun_status netrun_options_set_allow_fallback(netrun_options *options, int allow);
/* Cap on the device memory a session may use (0 = none); lets tests force the out-of-memory paths. */
NETRUN_API netrun_status netrun_options_set_device_memory_budget(netrun_options *options, size_t bytes);
/* Generic key/value settings for backend-specific knobs ("cuda.graph" = "0", ...). Values of the runtime's own
 * keys (limits.*, memory.*, graph.*, run.*, debug.*, profile.*) are checked here: a bad value, or an unknown key
 * of those namespaces, is NETRUN_ERR_INVALID_ARGUMENT naming the option. */
NETRUN_API netrun_status netrun_options_set(netrun_options *options, const char *key, const char *value);
/* ---- netrun 0.7 ---- */
/* Cap on the host memory a session and its subgraphs may hold (inputs, activations, run-time values, Loop/Scan
 * accumulation): 0 = the default, half of the machine's memory (or of its cgroup limit); SIZE_MAX = none. Checked
 * before each allocation; going past it fails with NETRUN_ERR_OUT_OF_MEMORY and the numbers. Also the option
 * "limits.host_memory" = "auto" | "none" | a size such as "512M". */
NETRUN_API netrun_status netrun_options_set_host_memory_budget(netrun_options *options, size_t bytes);

/* ---- sessions ---- */

/* Create a session. Cheap: no device is touched until netrun_session_prepare() or the first run.
 * options may be NULL (defaults). The session keeps its own copy of the options. */
NETRUN_API netrun_status netrun_session_create(netrun_model *model, const netrun_options *options,
                                               netrun_session **out);
NETRUN_API void netrun_session_destroy(netrun_session *session);
/* Message of the session's last failure. */
NETRUN_API const char *netrun_session_error(const netrun_session *session);

/* Inputs and outputs as the session sees them (dims set by set_dim/set_input filled in). */
NETRUN_API int netrun_session_input_count(const netrun_session *session);
NETRUN_API int netrun_session_output_count(const netrun_session *session);
NETRUN_API netrun_status netrun_session_input_info(netrun_session *session, int index, netrun_tensor_info *info);
NETRUN_API netrun_status netrun_session_output_info(netrun_session *session, int index, netrun_tensor_info *info);

/* Fix a symbolic dimension (e.g. "batch") for all inputs that use it. Invalidates a previous prepare. */
NETRUN_API netrun_status netrun_session_set_dim(netrun_session *session, const char *dim_name, int64_t value);
/* Copy an input from host memory. Its dims must match the declared fixed dims; symbolic dims take the given
 * value. Setting a different shape than the prepared one invalidates the prepare. */
NETRUN_API netrun_status netrun_session_set_input(netrun_session *session, const char *name, netrun_dtype dtype,
                                                  int rank, const int64_t *dims, const void *data,
                                                  size_t nbytes);
/* Like netrun_session_set_input, but the runs read the caller's host memory in place (no copy) when data is aligned
 * to its element size (a pointer that is not is copied, as set_input does). The memory must stay valid, and hold
 * the input, until the input is set or bound again or the session is destroyed; changing it between runs changes
 * the input. A device backend still copies it to the device on each run. */
NETRUN_API netrun_status netrun_session_bind_input(netrun_session *session, const char *name, netrun_dtype dtype,
                                                   int rank, const int64_t *dims, const void *data, size_t nbytes);
/* Explicit initialisation: shape inference, placement, memory plan, backend init, algorithm choice,
 * weight upload. Optional: the first run does it when needed. */
NETRUN_API netrun_status netrun_session_prepare(netrun_session *session);
/* Run the graph on the inputs set. */
NETRUN_API netrun_status netrun_session_run(netrun_session *session);
/* Ask the run in progress on another thread to stop: it returns NETRUN_ERR_CANCELLED soon after (checked between
 * nodes, between the runs of a micro-batched plan and between Loop iterations; a node already running finishes
 * first). When no run is in progress, the next run of the session is the one cancelled. The session stays usable:
 * its next run starts afresh. Safe to call from any thread, and from a signal handler, at any time while the
 * session exists. */
NETRUN_API netrun_status netrun_session_cancel(netrun_session *session);
/* Read output number index after a run (host memory owned by the session). */
NETRUN_API netrun_status netrun_session_output(netrun_session *session, int index, netrun_tensor_view *out);
/* Read an output by name. */
NETRUN_API netrun_status netrun_session_output_by_name(netrun_session *session, const char *name,
                                                       netrun_tensor_view *out);

/* Read any value of the graph by name after a run: inputs, outputs and constants always; intermediate values
 * only when the session was created with the option "debug.keep_values" = "1" (no memory reuse), which is what
 * `netrun --compare` uses to find the first node whose outputs diverge. Valid until the next run. */
NETRUN_API netrun_status netrun_session_value(netrun_session *session, const char *name, netrun_tensor_view *out);

/* Placement of the prepared session: node count and node number index. */
NETRUN_API int netrun_session_node_count(const netrun_session *session);
NETRUN_API netrun_status netrun_session_node_info(const netrun_session *session, int index, netrun_node_info *info);
/* Profiling: while on, every run records one event per kernel and per copy (backends are synchronised after
 * each, so times are device times at the cost of overlap). Turning it on clears earlier events; turning it
 * off keeps them for reading. */
NETRUN_API netrun_status netrun_session_set_profiling(netrun_session *session, int on);
NETRUN_API int netrun_session_profile_count(const netrun_session *session);
NETRUN_API netrun_status netrun_session_profile_get(const netrun_session *session, int index,
                                                    netrun_profile_event *event);
/* Edges of prepared node `node`: returns its number of inputs (output = 0) or outputs (output = 1), or -1 for a
 * bad node index; when 0 <= k < that number, *value_name receives the name of that input/output ("" when an
 * optional one is absent). */
NETRUN_API int netrun_session_node_io(const netrun_session *session, int node, int output, int k,
                                      const char **value_name);
/* Timing and memory figures. */
/* What the session is doing now, as one line ("preparing node 'conv1' (Conv) on backend 'cuda'", "running node ...",
 * "idle"), written into buf (always NUL-terminated); returns its length. It only reads the session and copies
 * strings, so a fatal-signal handler may call it to say where a crash happened (the netrun CLI does). */
/* Why the session (or a control-flow body of it) last had to prepare again, e.g. "model.onnx: input 'x' changed
 * shape"; "" if it never did. Owned by the session. */
NETRUN_API const char *netrun_session_prepare_note(const netrun_session *session);
NETRUN_API size_t netrun_session_activity(const netrun_session *session, char *buf, size_t size);
/* Stats as netrun 0.7 laid them out: writes the fields up to n_gelu_fused only (netrun_session_get_stats_ex gives
 * them all), so that programs built against an older header keep working. */
NETRUN_API netrun_status netrun_session_get_stats(const netrun_session *session, netrun_session_stats *stats);
/* Micro-batching of the prepared session (option run.micro_batch: auto, 0, or images per run): returns a line that
 * says what was decided and why ("4 runs of 2 images ..." or "off: <reason>"), "" before prepare; *images (may be
 * NULL) gets the images per run, 0 when off. Where only the first nodes run in runs ("... for the first 17 of 57
 * nodes ..."), the rest runs once on the whole batch. Node shapes (netrun_session_node_io, profiles) of the nodes
 * that run in runs are those of one run; inputs and outputs keep the whole batch. */
NETRUN_API const char *netrun_session_micro_batch(const netrun_session *session, int *images);

/* ---- netrun 0.8: device memory and streams (docs/device-io.md) ----
 * Inputs and outputs may live in device memory, and the session may queue its work on the caller's stream.
 * Rules:
 *   - Memory type: a device type is served by a loaded backend of the session whose buffers are of that type
 *     (the CUDA backend for NETRUN_MEMORY_CUDA); none: NETRUN_ERR_UNSUPPORTED naming the input. The device index
 *     must be the session's (netrun_options_set_device); the pointer is checked by that backend (a host pointer
 *     given as CUDA memory, memory of another device, a buffer smaller than the tensor: NETRUN_ERR_INVALID_ARGUMENT
 *     naming the input or output and what is wrong).
 *   - Lifetime: bound memory is read (inputs) or written (outputs) by every run until the binding is replaced, the
 *     input is set from the host, or the session is destroyed; it must stay valid and must not be freed while a
 *     run is in flight. netrun never frees it.
 *   - Ordering: netrun's work is queued on the session's stream (netrun_session_set_stream, else the backend's own).
 *     Inputs must be ready on that stream when the run starts (write them on it, or make it wait for your event);
 *     outputs are ready on it when the run returns (run_async: queued on it, complete after netrun_session_wait
 *     or once the stream reaches that point). netrun never synchronises the whole device.
 *   - Pointer changes: binding another pointer between runs is allowed and cheap: device graphs (CUDA Graphs) that
 *     captured the old pointer are captured again on the next run (stats.graph_recaptures); a stale pointer is
 *     never used. Changing between host and device memory for an input prepares the session again.
 *   - Nodes of another backend (a CPU fallback) that read a device input get a copy, counted in stats.h2d_bytes /
 *     d2h_bytes; device nodes read the caller's memory in place. */

/* Bind an input to device memory: runs read it in place (no copy to the device). dims as for set_input; data is a
 * device pointer (CUDA) or a cl_mem (OpenCL, the tensor at byte 0); nbytes the bytes the tensor takes (the buffer
 * may be larger). */
NETRUN_API netrun_status netrun_session_bind_input_device(netrun_session *session, const char *name, netrun_dtype dtype,
                                                          int rank, const int64_t *dims, netrun_memory_type memory_type,
                                                          int device, void *data, size_t nbytes);
/* Where output `name` goes. memory_type NETRUN_MEMORY_HOST (data NULL): the default, host memory of the session
 * (netrun_session_output). A device type with data: written into the caller's buffer of `capacity` bytes on every
 * run, by the node that produces it where the memory plan allows (stats.n_outputs_in_place), else by one
 * device-to-device copy at the end of the run (stats.d2d_bytes); a buffer smaller than the output fails the run.
 * A device type with data NULL: the output stays in the session's device memory, read with
 * netrun_session_output_device (no copy to the host). A device-bound output is not readable with
 * netrun_session_output (NETRUN_ERR_STATE). */
NETRUN_API netrun_status netrun_session_bind_output_device(netrun_session *session, const char *name,
                                                           netrun_memory_type memory_type, int device, void *data,
                                                           size_t capacity);
/* Output number index after a run, where it lies: the caller's buffer when bound, else the session's memory of the
 * backend that produced it (device memory stays valid until the next run, set_dim, prepare or destroy), or host
 * memory (memory_type NETRUN_MEMORY_HOST). NETRUN_ERR_UNSUPPORTED when its backend does not expose its memory. */
NETRUN_API netrun_status netrun_session_output_device(netrun_session *session, int index, netrun_device_view *out);
/* Queue the session's work on the caller's stream of that memory type (cudaStream_t for NETRUN_MEMORY_CUDA,
 * cl_command_queue for NETRUN_MEMORY_OPENCL; NULL: the backend's own stream again). Kept across prepares; the
 * stream must outlive the session or be replaced first. Not while a run is in flight. */
NETRUN_API netrun_status netrun_session_set_stream(netrun_session *session, netrun_memory_type memory_type, void *stream);
/* Start a run and return once its device work is queued. Where the plan needs the host in the middle (a node on
 * the CPU, a shape computed from device data), it waits there as a synchronous run does. Until
 * netrun_session_wait, the only calls allowed on the session are wait, cancel, get_stats(_ex), error and activity
 * (others: NETRUN_ERR_STATE); inputs and bound buffers must stay untouched. */
NETRUN_API netrun_status netrun_session_run_async(netrun_session *session);
/* Wait for the run started by netrun_session_run_async and return its status; host outputs are valid after it.
 * NETRUN_OK when no run is in flight. */
NETRUN_API netrun_status netrun_session_wait(netrun_session *session);
/* Stats, writing at most stats_size bytes (pass sizeof(netrun_session_stats)): callers built against an older
 * header get the fields they know. netrun_session_get_stats writes the fields up to n_gelu_fused only. */
NETRUN_API netrun_status netrun_session_get_stats_ex(const netrun_session *session, netrun_session_stats *stats,
                                                     size_t stats_size);

#ifdef __cplusplus
}
#endif
#endif /* NETRUN_H */
