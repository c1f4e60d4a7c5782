/*
 * Inside the OpenCL backend. How an op family is written:
 *
 * 1. Op table. Each family lives in one C file (mirroring layers/) and exports `const ocl_op
 *    ocl_ops_<family>[]`, ended by an entry with op_type == NULL. opencl_backend.c lists the tables in its
 *    FAMILIES(X) line; a new family adds X(name) there.
 *
 * 2. Kernel source. The family's OpenCL C code (OpenCL C 1.2, must build on PoCL and on GPU drivers: never
 *    assume a CPU device) lives in backends/opencl/<name>.cl. CMake embeds every *.cl file as
 *    `const char ocl_src_<name>[]`; declare it in the C file with OCL_SOURCE(<name>). Every program is built with
 *    a prelude (ocl_prelude in opencl_backend.c) prepended: it enables cl_khr_fp16 when the device has it
 *    (then OCL_HAS_FP16 is defined) and defines OFF(p, off) helpers; see there. Specialize a source by -D build
 *    options ("-DT=float"): each (source, options) pair is one program.
 *
 * 3. Kernels. ocl_kernel_get(ctx, "name", ocl_src_name, "-DT=float", "relu", &k) gives a compiled cl_kernel:
 *    built on first use only (lazy), programs cached per device for the process, kernels per context, and its program binary cached on disk (key: device,
 *    driver version, source and options) so the next process skips the compiler. The kernel belongs to the
 *    context: never release it. Get kernels in the op's create() (kernel_create time, so the build is part of
 *    prepare, not of a run), or in run() when the dtype is only known then.
 *
 * 4. Tensors. Buffers are not addressable: args->inputs[i].data is NOT an element pointer (buffer_address
 *    returns the handle, see opencl_backend.c). A tensor lives in a cl_mem at a byte
 *    offset: ocl_mem(t) and t->offset. Kernels take (__global T *p, ulong p_off) with the offset in ELEMENTS
 *    (ocl_eoff(t)); byte offsets are multiples of 256 from the runtime's planner, except views.
 *
 * 5. Launch. ocl_launch(ctx, k, "what", dims, global, local_or_NULL, n_args, args) sets the arguments and
 *    enqueues on the context's in-order queue: OCL_MEM(t), OCL_ULONG(x), OCL_INT(x), OCL_FLOAT(x), OCL_LOCAL(bytes)
 *    build the args. global sizes are rounded up to a multiple of local when local is given, so kernels check
 *    their index against the real count. ocl_launch1d for the common 1-D case. Nothing waits: copies to the host
 *    and synchronize do.
 *
 * 6. Errors. Return ocl_fail(err, "what") for an OpenCL error code, ocl_host->error(...) otherwise; supports()
 *    functions return ocl_refuse(reason, size, "why") (0). Never exit or abort.
 *
 * 7. Workspace. create() reports its scratch need in *workspace; run() gets it as args->workspace (a buffer
 *    handle: ocl_workspace_mem(args)) of args->workspace_size bytes.
 *
 * 8. float16: the generic supports() already refuses nodes with float16 values when the chosen device lacks
 *    cl_khr_fp16, so op files only list FLOAT16 in dtypes; ctx->fp16 tells kernels code the same.
 */
#ifndef OPENCL_INTERNAL_H
#define OPENCL_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "netrun_backend.h"

typedef struct ocl_kernel_entry ocl_kernel_entry;

typedef struct ocl_context {
    netrun_backend_config config;
    cl_platform_id platform;
    cl_device_id device;
    int device_index;        /* in the plugin's device list */
    cl_context cl;           /* shared by all contexts on this device in the process */
    cl_command_queue queue;  /* where all work goes, in order: own_queue, or the caller's (ABI 1.11 set_stream) */
    cl_command_queue own_queue; /* this context's own (released with it; a caller's never is) */
    int is_gpu;              /* CL_DEVICE_TYPE_GPU (or accelerator) */
    int fp16;                /* cl_khr_fp16 */
    size_t max_wg;           /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_ulong global_mem, max_alloc;
    size_t mem_align;        /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes (sub-buffer offsets) */
    size_t allocated;        /* bytes of live buffer_alloc buffers (device_memory_budget) */
    char device_key[512];    /* platform, device and driver versions: part of the binary cache key */
    char cache_dir[1024];    /* "" = disk cache off */
    ocl_kernel_entry *kernels; /* this context's cl_kernels (programs are shared per device) */
    int n_kernels, cap_kernels;
    /* counters for the CLI's -v log and tests */
    int builds_from_source, builds_from_cache;
} ocl_context;

extern const netrun_host_api *ocl_host; /* set by the entry point */

typedef struct ocl_op {
    const char *op_type;
    uint64_t dtypes;            /* element types accepted for input 0 (output 0 when no inputs) */
    const char *constraints;    /* for the support matrix ("" = none) */
    /* Finer check (no device work). NULL: supported when input 0's dtype is in dtypes. */
    int (*supports)(const netrun_node_desc *node, char *reason, size_t reason_size);
    /* Optional per-node state (kernels, uploaded constants) and workspace need. NULL: state NULL, no workspace. */
    netrun_status (*create)(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
    netrun_status (*run)(ocl_context *ctx, void *state, const netrun_kernel_args *args);
    void (*destroy)(ocl_context *ctx, void *state);
    /* Optional: name the path chosen for this node (profiles), e.g. "im2col + clblast sgemm". */
    void (*describe)(void *state, char *buf, size_t size);
} ocl_op;

/* An embedded kernel source (from <name>.cl). */
#define OCL_SOURCE(name) extern const char ocl_src_##name[]

#define OCL_DT(t) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##t)
#define OCL_FLOAT_DTYPES (OCL_DT(FLOAT) | OCL_DT(FLOAT16))
#define OCL_ALL_DTYPES                                                                                          \
    (OCL_DT(FLOAT) | OCL_DT(UINT8) | OCL_DT(INT8) | OCL_DT(UINT16) | OCL_DT(INT16) | OCL_DT(INT32) |             \
     OCL_DT(INT64) | OCL_DT(BOOL) | OCL_DT(FLOAT16) | OCL_DT(DOUBLE) | OCL_DT(UINT32) | OCL_DT(UINT64) |         \
     OCL_DT(BFLOAT16))

/* ---- buffers and tensors ---- */

/* A buffer handle (what buffer_alloc returns): the cl_mem and its size. */
typedef struct ocl_buffer {
    cl_mem mem;
    size_t bytes;
    int wrapped; /* the caller's cl_mem (buffer_wrap): this handle holds one reference of it, not counted in allocated */
} ocl_buffer;

static inline cl_mem ocl_mem(const netrun_tensor *t) { return t->buffer ? ((const ocl_buffer *)t->buffer)->mem : NULL; }

static inline size_t ocl_esize(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_BOOL: return 1;
    case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: return 2;
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: case NETRUN_DTYPE_DOUBLE: return 8;
    default: return 0;
    }
}

/* The tensor's offset in elements of its dtype (kernels take (ptr, element offset) pairs). */
static inline cl_ulong ocl_eoff(const netrun_tensor *t) {
    size_t es = ocl_esize(t->dtype);
    return es ? (cl_ulong)(t->offset / es) : (cl_ulong)t->offset;
}

static inline int64_t ocl_count(const netrun_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

static inline int64_t ocl_desc_count(const netrun_value_desc *d) {
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++) {
        if (d->dims[i] < 0) return -1;
        n *= d->dims[i];
    }
    return n;
}

/* The workspace of a run (NULL when none was asked for). */
static inline cl_mem ocl_workspace_mem(const netrun_kernel_args *args) {
    return args->workspace ? ((const ocl_buffer *)args->workspace)->mem : NULL;
}

/* ---- programs and kernels ---- */

/* The compiled kernel `kernel` of program (source, options); name names the source in messages and cache
 * files. Lazy: built on first use, then cached per context and on disk. */
netrun_status ocl_kernel_get(ocl_context *ctx, const char *name, const char *source, const char *options,
                             const char *kernel, cl_kernel *out);

/* The OpenCL C type name of a dtype ("float", "half", "int", "long", "uchar", ...), NULL when none. */
const char *ocl_cl_type(netrun_dtype t);

/* ---- launches ---- */

enum { OCL_ARG_MEM = 1, OCL_ARG_ULONG, OCL_ARG_INT, OCL_ARG_FLOAT, OCL_ARG_BYTES, OCL_ARG_LOCAL, OCL_ARG_CONST };

/* One kernel argument, built by the macros below (values are held inside, so temporaries are fine). */
typedef struct ocl_arg {
    int kind;                 /* OCL_ARG_* */
    size_t size;
    cl_mem mem;
    cl_ulong u;
    cl_int i;
    cl_float f;
    const void *ptr;          /* OCL_ARG_BYTES */
} ocl_arg;

#define OCL_MEM(t) ((ocl_arg){.kind = OCL_ARG_MEM, .size = sizeof(cl_mem), .mem = ocl_mem(t)})
#define OCL_CLMEM(m) ((ocl_arg){.kind = OCL_ARG_MEM, .size = sizeof(cl_mem), .mem = (m)})
#define OCL_ULONG(x) ((ocl_arg){.kind = OCL_ARG_ULONG, .size = sizeof(cl_ulong), .u = (cl_ulong)(x)})
#define OCL_LONG(x) ((ocl_arg){.kind = OCL_ARG_ULONG, .size = sizeof(cl_long), .u = (cl_ulong)(cl_long)(x)})
#define OCL_INT(x) ((ocl_arg){.kind = OCL_ARG_INT, .size = sizeof(cl_int), .i = (cl_int)(x)})
#define OCL_FLOAT(x) ((ocl_arg){.kind = OCL_ARG_FLOAT, .size = sizeof(cl_float), .f = (cl_float)(x)})
#define OCL_BYTES(p, n) ((ocl_arg){.kind = OCL_ARG_BYTES, .size = (n), .ptr = (p)}) /* a struct by value */
#define OCL_LOCAL(n) ((ocl_arg){.kind = OCL_ARG_LOCAL, .size = (n)})                 /* __local scratch */
/* A struct the kernel reads as `__constant T *`: copied into a small read-only buffer per launch (released once
 * queued). For structs a kernel indexes with run-time indices (shapes and strides): NVIDIA's OpenCL compiler
 * (driver 580, H200) misread such by-value struct arguments (Transpose and DepthToSpace wrong from the second
 * batch element on), while by-value structs read with fixed indices (conv, pool) are fine. */
#define OCL_CONST(p, n) ((ocl_arg){.kind = OCL_ARG_CONST, .size = (n), .ptr = (p)})
/* The usual tensor pair: the cl_mem and its element offset. */
#define OCL_TENSOR(t) OCL_MEM(t), OCL_ULONG(ocl_eoff(t))
/* The number of entries of an ocl_arg array (for the n_args of the launchers). */
#define OCL_NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Set args and enqueue an NDRange of `dims` dimensions (global sizes rounded up to local when local is
 * given). A global size of 0 in any dimension enqueues nothing. */
netrun_status ocl_launch(ocl_context *ctx, cl_kernel k, const char *what, int dims, const size_t *global,
                         const size_t *local, int n_args, const ocl_arg *args);
/* 1-D: n work items (kernels get n as an argument and check get_global_id(0) < n); local size chosen here. */
netrun_status ocl_launch1d(ocl_context *ctx, cl_kernel k, const char *what, size_t n, int n_args, const ocl_arg *args);

/* ---- errors and helpers ---- */

int ocl_refuse(char *reason, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
netrun_status ocl_fail(cl_int err, const char *what);
const char *ocl_error_name(cl_int err);
const char *ocl_dtype_name(netrun_dtype t);
/* The dtype of input 0 (or output 0 when the node has no inputs). */
netrun_dtype ocl_main_dtype(const netrun_node_desc *node);
/* Broadcasting: strides (elements) of a tensor of rank r, dims d seen as out_rank output dims, 0 where broadcast. */
void ocl_broadcast_strides(int r, const int64_t *d, int out_rank, const int64_t *out_dims, int64_t *strides);

/* Temporary device buffer (not counted in the runtime's plan: for per-node constants like packed weights). */
netrun_status ocl_temp_alloc(ocl_context *ctx, size_t bytes, cl_mem *out);
/* Upload host data into a new buffer (per-node constants). */
netrun_status ocl_upload(ocl_context *ctx, const void *src, size_t bytes, cl_mem *out);

/* Copy bytes between device buffers on the queue. */
netrun_status ocl_copy(ocl_context *ctx, cl_mem dst, size_t dst_off, cl_mem src, size_t src_off, size_t bytes);

/* ---- shared by the gemm, conv and norm families (common.c, common.cl) ---- */

/* Build options of the float kernels of common.cl / conv.cl / ...: "-DT=float" or "-DT=half -DIS_HALF". */
const char *ocl_float_options(netrun_dtype t);
uint16_t ocl_float_to_half(float f);
/* Row-major GEMM through CLBlast (float32 or float16): C = alpha * op(A) op(B) + beta * C; offsets, leading
 * dimensions and batch strides in elements. */
netrun_status ocl_gemm(ocl_context *ctx, netrun_dtype dt, int trans_a, int trans_b, size_t m, size_t n, size_t k,
                       float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, float beta,
                       cl_mem c, size_t c_off, size_t ldc);
netrun_status ocl_gemm_batched(ocl_context *ctx, netrun_dtype dt, int trans_a, int trans_b, size_t m, size_t n,
                               size_t k, float alpha, cl_mem a, size_t a_off, size_t lda, size_t a_stride, cl_mem b,
                               size_t b_off, size_t ldb, size_t b_stride, float beta, cl_mem c, size_t c_off,
                               size_t ldc, size_t c_stride, size_t batch);
/* y[i] = act(y[i] + bias[(i / inner) % c] + z[i]) over n elements (bias, z, act optional; nothing when none). */
netrun_status ocl_bias_activation(ocl_context *ctx, netrun_dtype dt, cl_mem y, size_t y_off, cl_mem bias,
                                  size_t bias_off, cl_mem z, size_t z_off, size_t n, size_t c, size_t inner,
                                  const netrun_fused_activation *act);
netrun_status ocl_fill_zero(ocl_context *ctx, cl_mem mem, size_t offset, size_t bytes);
/* The float kernel `kernel` of (name, source) for the dtype a tensor really has at run time (descs inside
 * Loop/Scan bodies may carry guessed dtypes); UNSUPPORTED for dtypes other than float32/float16. */
netrun_status ocl_float_kernel_for(ocl_context *ctx, netrun_dtype t, const char *name, const char *source,
                                   const char *kernel, cl_kernel *out);
/* A kernel of common.cl for dtype dt. */
netrun_status ocl_common_kernel(ocl_context *ctx, netrun_dtype dt, const char *name, cl_kernel *out);

#endif
