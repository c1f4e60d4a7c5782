/*
 * Inside the CUDA backend. Each op family lives in one file (mirroring layers/) and exports a table
 * `const cuda_op cuda_ops_<family>[]` ended by an entry with op_type == NULL; cuda_backend.c lists the tables.
 * Buffers are device pointers from cudaMalloc: args->inputs[i].data is a device address. All work is queued
 * on the context's stream; nothing here synchronizes except copies to the host.
 *
 * This header is shared by C files (.c) and CUDA C++ files (.cu).
 */
#ifndef CUDA_INTERNAL_H
#define CUDA_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "netrun_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cuBLAS and cuDNN are loaded lazily (lazy_libs.c) ----
 * The plugin does not link them: loading it on a machine without a GPU maps nothing heavy. Each function the
 * backend calls goes through a pointer that cuda_load_libs() fills with dlsym; the macros below redirect the
 * names, so op files call cudnnX(...) as usual. A function missing from these lists fails the link
 * (-Wl,--no-undefined): add it to the list and to the #define block. */
#define CUDA_CUDNN_FUNCS(X)                                                                                      \
    X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)                    \
    X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnSetTensorNdDescriptor)                 \
    X(cudnnCreateFilterDescriptor) X(cudnnDestroyFilterDescriptor) X(cudnnSetFilterNdDescriptor)                 \
    X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)  \
    X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionNdForwardOutputDim)     \
    X(cudnnConvolutionForward) X(cudnnConvolutionBackwardData) X(cudnnFindConvolutionForwardAlgorithm)           \
    X(cudnnFindConvolutionBackwardDataAlgorithm) X(cudnnGetConvolutionForwardAlgorithm_v7)                       \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnConvolutionBiasActivationForward)                     \
    X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor) X(cudnnDestroyActivationDescriptor)
#define CUDA_CUBLAS_FUNCS(X)                                                                                     \
    X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasGetStatusString)                         \
    X(cublasGetCudartVersion) X(cublasGemmStridedBatchedEx) X(cublasGemmBatchedEx)
/* C only: C++ sees overloads of some of these; the .cu files call neither library. */
#ifndef __cplusplus
#define CUDA_LAZY_DECLARE(f) extern __typeof__(f) *cuda_p_##f;
CUDA_CUDNN_FUNCS(CUDA_LAZY_DECLARE)
CUDA_CUBLAS_FUNCS(CUDA_LAZY_DECLARE)
#undef CUDA_LAZY_DECLARE
#define cudnnGetVersion (*cuda_p_cudnnGetVersion)
#define cudnnGetErrorString (*cuda_p_cudnnGetErrorString)
#define cudnnCreate (*cuda_p_cudnnCreate)
#define cudnnDestroy (*cuda_p_cudnnDestroy)
#define cudnnSetStream (*cuda_p_cudnnSetStream)
#define cudnnCreateTensorDescriptor (*cuda_p_cudnnCreateTensorDescriptor)
#define cudnnDestroyTensorDescriptor (*cuda_p_cudnnDestroyTensorDescriptor)
#define cudnnSetTensorNdDescriptor (*cuda_p_cudnnSetTensorNdDescriptor)
#define cudnnCreateFilterDescriptor (*cuda_p_cudnnCreateFilterDescriptor)
#define cudnnDestroyFilterDescriptor (*cuda_p_cudnnDestroyFilterDescriptor)
#define cudnnSetFilterNdDescriptor (*cuda_p_cudnnSetFilterNdDescriptor)
#define cudnnCreateConvolutionDescriptor (*cuda_p_cudnnCreateConvolutionDescriptor)
#define cudnnDestroyConvolutionDescriptor (*cuda_p_cudnnDestroyConvolutionDescriptor)
#define cudnnSetConvolutionNdDescriptor (*cuda_p_cudnnSetConvolutionNdDescriptor)
#define cudnnSetConvolutionGroupCount (*cuda_p_cudnnSetConvolutionGroupCount)
#define cudnnSetConvolutionMathType (*cuda_p_cudnnSetConvolutionMathType)
#define cudnnGetConvolutionNdForwardOutputDim (*cuda_p_cudnnGetConvolutionNdForwardOutputDim)
#define cudnnConvolutionForward (*cuda_p_cudnnConvolutionForward)
#define cudnnConvolutionBackwardData (*cuda_p_cudnnConvolutionBackwardData)
#define cudnnFindConvolutionForwardAlgorithm (*cuda_p_cudnnFindConvolutionForwardAlgorithm)
#define cudnnFindConvolutionBackwardDataAlgorithm (*cuda_p_cudnnFindConvolutionBackwardDataAlgorithm)
#define cudnnGetConvolutionForwardAlgorithm_v7 (*cuda_p_cudnnGetConvolutionForwardAlgorithm_v7)
#define cudnnGetConvolutionBackwardDataAlgorithm_v7 (*cuda_p_cudnnGetConvolutionBackwardDataAlgorithm_v7)
#define cudnnConvolutionBiasActivationForward (*cuda_p_cudnnConvolutionBiasActivationForward)
#define cudnnCreateActivationDescriptor (*cuda_p_cudnnCreateActivationDescriptor)
#define cudnnSetActivationDescriptor (*cuda_p_cudnnSetActivationDescriptor)
#define cudnnDestroyActivationDescriptor (*cuda_p_cudnnDestroyActivationDescriptor)
#define cublasCreate_v2 (*cuda_p_cublasCreate_v2)
#define cublasDestroy_v2 (*cuda_p_cublasDestroy_v2)
#define cublasSetStream_v2 (*cuda_p_cublasSetStream_v2)
#define cublasGetStatusString (*cuda_p_cublasGetStatusString)
#define cublasGetCudartVersion (*cuda_p_cublasGetCudartVersion)
#define cublasGemmStridedBatchedEx (*cuda_p_cublasGemmStridedBatchedEx)
#define cublasGemmBatchedEx (*cuda_p_cublasGemmBatchedEx)
#endif /* !__cplusplus */
/* Load cuBLAS and cuDNN once per process (thread-safe) and check their versions; NETRUN_OK or an error that
 * says which library is missing or mismatched and what to do. */
netrun_status cuda_load_libs(void);
/* Each library alone (cuda_backend.c loads cuBLAS at the first Gemm/MatMul kernel, cuDNN at the probe). */
netrun_status cuda_load_cublas(void);
netrun_status cuda_load_cudnn(void);
/* 1 once that library's pointers are set. */
int cuda_libs_loaded(void);
int cuda_cublas_loaded(void);
int cuda_cudnn_loaded(void);

/* How conv.c chooses cuDNN algorithms (option cuda.algo_search, CLI --algo-search), in cuda_context.algo_search:
 *   CUDA_ALGO_HEURISTIC (default): cuDNN's heuristic ranking (cudnnGet*_v7), no timing runs at kernel creation;
 *   CUDA_ALGO_TIMED: benchmark the candidates (cudnnFind*) and take the fastest whose workspace fits the cap.
 * The workspace policy (balanced / fastest / min-memory) and --workspace-limit still set the workspace cap. */
enum { CUDA_ALGO_HEURISTIC = 0, CUDA_ALGO_TIMED = 1 };

typedef struct cuda_context {
    netrun_backend_config config;
    int device;
    cudaStream_t stream;
    cublasHandle_t cublas;         /* created at the first kernel_create of the gemm family (else NULL) */
    cudnnHandle_t cudnn;           /* created at the first kernel_create of the conv family (else NULL) */
    size_t allocated;     /* bytes of live buffer_alloc buffers (device_memory_budget) */
    size_t total_memory;  /* of the device */
    int sm_count;
    /* ---- runtime features (cuda_backend.c) ---- */
    int algo_search;          /* CUDA_ALGO_HEURISTIC or CUDA_ALGO_TIMED (see above) */
    size_t peak;              /* highest `allocated` since context_create */
    long fail_alloc_after;    /* test hook cuda.fail_alloc_after=N: buffer_alloc call N+1 fails once; -1 = off */
    long n_allocs;            /* buffer_alloc calls so far */
    size_t attn_ws_cap;       /* cuda.attention_workspace_mb in bytes: the scores buffer of Attention's cuBLAS path;
                               * 0 = always the simple kernel (attention.cu) */
    int flash_attention;      /* cuda.flash_attention (default 1): the fused float16 Attention kernel (attention.cu) */
    int capturing;            /* between graph_capture_begin and graph_capture_end */
    int pinned;               /* stage host<->device copies through pinned memory (cuda.pinned, default 1) */
    void *stage;              /* pinned staging buffer (cudaHostAlloc) */
    size_t stage_cap, stage_used;
    /* streamed weights (prefetch_from_host): a copy stream forked from `stream` at each prefetch and joined by
     * prefetch_wait through the lane's event; created at the first prefetch */
    cudaStream_t copy_stream;
    cudaEvent_t fork_ev, lane_ev[2];
    /* the caller's stream (ABI 1.11 set_stream): `stream` is the one all work goes on, own_stream the context's
     * (destroyed with it; a caller's never is); switch_ev orders the new stream after the old at a switch */
    cudaStream_t own_stream;
    cudaEvent_t switch_ev;
} cuda_context;

extern const netrun_host_api *cuda_host; /* set by the entry point */

/* Ops that read a value back cannot be recorded into a CUDA graph: the runtime then runs the segment eagerly. */
static inline netrun_status cuda_refuse_capture(cuda_context *ctx, const char *op) {
    if (ctx->capturing) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: not capturable in a CUDA graph", op);
    return NETRUN_OK;
}

typedef struct cuda_op {
    const char *op_type;
    uint64_t dtypes;            /* element types accepted for input 0 (output 0 when no inputs) */
    const char *constraints;    /* for the support matrix ("" = none) */
    /* Finer check (no device work). NULL: supported when input 0's dtype is in dtypes. */
    int (*supports)(const netrun_node_desc *node, char *reason, size_t reason_size);
    /* Optional per-node state and workspace need. NULL: state is NULL, no workspace. */
    netrun_status (*create)(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
    netrun_status (*run)(cuda_context *ctx, void *state, const netrun_kernel_args *args);
    void (*destroy)(cuda_context *ctx, void *state);
} cuda_op;

#define CUDA_DT(t) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##t)
#define CUDA_FLOAT_DTYPES (CUDA_DT(FLOAT) | CUDA_DT(FLOAT16))
/* Every dtype the byte-moving kernels (copies, gathers, pads...) serve. */
#define CUDA_ALL_DTYPES                                                                                         \
    (CUDA_DT(FLOAT) | CUDA_DT(UINT8) | CUDA_DT(INT8) | CUDA_DT(UINT16) | CUDA_DT(INT16) | CUDA_DT(INT32) |       \
     CUDA_DT(INT64) | CUDA_DT(BOOL) | CUDA_DT(FLOAT16) | CUDA_DT(DOUBLE) | CUDA_DT(UINT32) | CUDA_DT(UINT64) |   \
     CUDA_DT(BFLOAT16))

static inline size_t cuda_esize(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_BOOL: return 1;
    case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: return 2;
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: case NETRUN_DTYPE_DOUBLE: return 8;
    default: return 0;
    }
}

static inline int64_t cuda_count(const netrun_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

static inline int64_t cuda_desc_count(const netrun_value_desc *d) {
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++) {
        if (d->dims[i] < 0) return -1;
        n *= d->dims[i];
    }
    return n;
}

/* Set reason and return 0 (for supports functions). */
int cuda_refuse(char *reason, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record a CUDA runtime error with what was being done. */
netrun_status cuda_fail(cudaError_t e, const char *what);
/* The error of the last kernel launch, if any (call right after <<<>>>). */
netrun_status cuda_check_launch(const char *what);
netrun_status cublas_fail(cublasStatus_t s, const char *what);
netrun_status cudnn_fail(cudnnStatus_t s, const char *what);
const char *cuda_dtype_name(netrun_dtype t);
/* The dtype of input 0 (or output 0 when the node has no inputs). */
netrun_dtype cuda_main_dtype(const netrun_node_desc *node);

/* The device address of a kernel's workspace: args->workspace may be the runtime's buffer handle (the
 * host record of buffer_alloc) or already a device address. */
void *cuda_workspace_address(void *workspace);
/* Scratch a kernel (re)allocates while a run is in progress (run-time shapes): stream-ordered (cudaMallocAsync /
 * cudaFreeAsync on the context's stream), since cudaMalloc/cudaFree would wait for the whole device; falls back to
 * them where the device has no memory pools. Refused while a graph is captured (the caller's run is then eager). */
cudaError_t cuda_scratch_alloc(cuda_context *ctx, void **p, size_t bytes);
void cuda_scratch_free(cuda_context *ctx, void *p);
/* A kernel's scratch kept in its state between runs, cut into n parts (offsets 256-byte aligned into off[]):
 * grown through cuda_scratch_alloc when the parts outgrow *cap, with `slack` (a fraction, e.g. 0.5) more for a
 * size that keeps growing. An out-of-memory status names `what`. */
netrun_status cuda_scratch_parts(cuda_context *ctx, void **buf, size_t *cap, const size_t *part, int n, size_t *off,
                                 double slack, const char *what);

/* Broadcasting: strides (in elements) of a tensor of rank r with dims d seen as an out_rank output, 0 where
 * broadcast. */
void cuda_broadcast_strides(int r, const int64_t *d, int out_rank, const int64_t *out_dims, int64_t *strides);

/* A device flag that kernels raise on invalid input (an index out of range), read back after the launch: one
 * stream synchronization per run. Used as a node's whole state: cuda_flag_create / cuda_flag_destroy are
 * cuda_op create / destroy functions. */
typedef struct cuda_flag {
    int *bad;
    int checked; /* the indices are constants found in range at kernel creation: no flag to read back */
} cuda_flag;
netrun_status cuda_flag_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
void cuda_flag_destroy(cuda_context *ctx, void *state);
/* NETRUN_OK, or (the flag was raised: it is cleared) an error "cuda <op>: <msg>". */
netrun_status cuda_flag_check(cuda_context *ctx, cuda_flag *f, const char *op, const char *msg);

/* Create ctx->cublas (loading cuBLAS) when absent (cuda_backend.c): the gemm family gets it at kernel creation,
 * other kernels that use cuBLAS (Attention) ask for it in their create. */
netrun_status cuda_cublas_handle(cuda_context *ctx);
/* Row-major batched GEMM (gemm.c): for j < batch, Y_j[m x n] = alpha * op(A_j)[m x k] op(B_j)[k x n], where op(X)
 * is X or, with ta / tb, X^T of the stored matrix; lda / ldb / ldy are row strides in elements. A and B have
 * dtype `in` (float32 or float16), Y dtype `out` (float32, or float16 with float16 in); float accumulation, TF32
 * for float32 only when the session's precision is not fp32 (as MatMul). The matrices are A + j * sa, B + j * sb,
 * Y + j * sy (element strides, 0 = shared) when ptrs is NULL, else the device array ptrs holds the 3 * batch
 * addresses {A_0 .. A_batch-1, B_0 .., Y_0 ..}, each aligned to 16 bytes. */
netrun_status cuda_gemm_rows_batched(cuda_context *ctx, netrun_dtype in, netrun_dtype out, int ta, int tb, int64_t m,
                                     int64_t n, int64_t k, float alpha, const void *A, int64_t lda, int64_t sa,
                                     const void *B, int64_t ldb, int64_t sb, void *Y, int64_t ldy, int64_t sy,
                                     int64_t batch, void *const *ptrs);
/* What QLinearConv / QLinearMatMul chose (qlinear.cu), for kernel_describe. */
void cuda_qlinear_describe(void *state, char *buf, size_t size);
/* What Attention chose (attention.cu), for kernel_describe. */
void cuda_attention_describe(void *state, char *buf, size_t size);

/* ---- launchers shared between families (defined in .cu files) ---- */

/* y[n, c, inner] = act(y + bias[c]) for float32/float16 y (bias same dtype, may be NULL). */
netrun_status cuda_bias_activation(cuda_context *ctx, netrun_dtype dt, void *y, const void *bias, int64_t n,
                                   int64_t c, int64_t inner, const netrun_fused_activation *act);
/* dst (out dims, contiguous) = src broadcast with element strides src_strides; es bytes per element. */
netrun_status cuda_expand(cuda_context *ctx, size_t es, void *dst, const void *src, int rank, const int64_t *out_dims,
                          const int64_t *src_strides);
/* dst = src with the padding of a Conv input: [N, C, spatial...] zero padded by pads_begin/end. */
netrun_status cuda_zero_pad(cuda_context *ctx, size_t es, void *dst, const void *src, int rank, const int64_t *in_dims,
                            const int64_t *pads_begin, const int64_t *out_dims);

/* ---- precision (precision.cu, conv.c, gemm.c) ---- */

/* float32 [n, c, s] -> float16 laid out [n, c, s], or [n, s, c] when to_nsc (NHWC for cuDNN); and back. */
netrun_status cuda_f32_to_f16(cuda_context *ctx, const void *x, void *y, int64_t n, int64_t c, int64_t s, int to_nsc);
netrun_status cuda_f16_to_f32(cuda_context *ctx, const void *x, void *y, int64_t n, int64_t c, int64_t s, int from_nsc);
/* y float32 [n, c, s] = act(x + bias[c]) from float16 x ([n, c, s], or [n, s, c] when from_nsc); bias may be NULL. */
netrun_status cuda_f16_to_f32_bias_act(cuda_context *ctx, const void *x, void *y, const void *bias, int64_t n, int64_t c,
                                       int64_t s, int from_nsc, const netrun_fused_activation *act);
/* In place on float32 y [n, c, s]: act(y + bias[c]) without per-element index division (conv epilogue). */
netrun_status cuda_conv_bias_act(cuda_context *ctx, void *y, const void *bias, int64_t n, int64_t c, int64_t s,
                                 const netrun_fused_activation *act);
/* Median milliseconds of `reps` calls of fn(ctx, arg) on the context's stream after `warm` untimed ones (CUDA
 * events); negative when a call fails (its error is recorded). Used at kernel creation to choose paths. With
 * `flush`, flush_bytes of it are written before each timed call (untimed), so the call reads its data from
 * device memory as a layer inside a network does, not from the L2 its last repetition warmed. */
double cuda_time_runs(cuda_context *ctx, netrun_status (*fn)(cuda_context *ctx, void *arg), void *arg, int warm,
                      int reps, void *flush, size_t flush_bytes);
/* What a Conv/ConvTranspose/Gemm/MatMul kernel chose (precision, layout, cuDNN algorithm, fused call, the
 * times measured under --precision fp16), for kernel_describe; "" for other ops or no state. */
void cuda_op_describe(const cuda_op *op, void *state, char *buf, size_t size);
/* Gemm/MatMul half of cuda_op_describe (gemm.c); MatMulBias's. */
void cuda_gemm_describe(void *state, char *buf, size_t size);
void cuda_matmul_bias_describe(void *state, char *buf, size_t size);
/* MatMulBias (domain com.netrun, the graph passes' MatMul + bias [+ activation]; gemm.c). */
extern const cuda_op cuda_ops_matmul_bias[];
/* IEEE half of a float, round to nearest even (host; for weights converted at kernel creation). */
uint16_t cuda_half_bits(float f);

/* ---- float16 NHWC regions (the graph pass in runtime/optimize.c; conv.c, pool.cu, precision.cu) ---- */

/* Internal ops (domain com.netrun): ReorderNHWC, GlobalAveragePoolNHWC; find_op looks there for that domain. */
extern const cuda_op cuda_ops_internal[];
/* ImagePreprocess (com.netrun, preprocess.cu). */
extern const cuda_op cuda_ops_preprocess[];
/* In place on float16 y [rows, c] (channels last): act(y + bias[c]) with bias float16 (may be NULL). */
netrun_status cuda_f16_nsc_bias_act(cuda_context *ctx, void *y, const void *bias, int64_t rows, int64_t c,
                                    const netrun_fused_activation *act);
/* GlobalAveragePoolNHWC's run (pool.cu): float16 NHWC X -> float16 [N, C] Y, float32 sums. */
netrun_status cuda_gap_nhwc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args);
netrun_status cuda_gap_nhwc_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
/* MulChannelNHWC's run (precision.cu): float16 NHWC X times float16 S [N or 1, C, 1, 1]. */
netrun_status cuda_mulch_nhwc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args);
/* Depthwise Conv (group = C = M, 2-D) on float16 NHWC X/Y/Z (precision.cu): W as float16 [kh*kw, C], float32
 * accumulation, act(conv + bias + z); bias and z may be NULL. fits: both tensors below 2^31 elements. */
/* Pointwise region Convs through cuBLASLt with bias/ReLU/Z in the epilogue (conv_lt.c): create returns NULL when
 * cuBLASLt or an algorithm is missing; run computes Y[rows, m] = act(X[rows, c] W[m, c]^T + bias + Z), float16. */
typedef struct cuda_lt_gemm cuda_lt_gemm;
cuda_lt_gemm *cuda_lt_gemm_create(int64_t m, int64_t rows, int64_t c, int has_bias, int relu, int has_z, size_t max_ws);
/* The general form (column-major, as cuBLAS): D[m, n] = act(op(A)[m, k] op(B)[k, n] + bias[m] (+ C[m, n])); ld* are
 * the stored matrices' leading dims; act CUDA_LT_GELU is cuBLASLt's GELU epilogue (the tanh form). */
enum { CUDA_LT_NONE = 0, CUDA_LT_RELU = 1, CUDA_LT_GELU = 2 };
typedef struct cuda_lt_shape {
    cudaDataType_t ab_type, cd_type, bias_type; /* of A and B, C and D, the bias */
    cublasComputeType_t compute;                /* the scale type is float32, int32 with int_scale */
    int ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    int has_bias, act, has_z;
    size_t max_ws;
    int int_scale; /* int8 A/B, int32 C/D, CUBLAS_COMPUTE_32I: alpha and beta are int32 */
    int alpha_vector; /* alpha a device vector of m floats, beta a host value (int8 D: per-channel requantisation) */
} cuda_lt_shape;
cuda_lt_gemm *cuda_lt_gemm_create_ex(const cuda_lt_shape *d);
size_t cuda_lt_gemm_workspace(const cuda_lt_gemm *g);
netrun_status cuda_lt_gemm_run(cuda_context *ctx, cuda_lt_gemm *g, const void *w, const void *x, const void *bias,
                               const void *z, void *y, void *ws);
void cuda_lt_gemm_destroy(cuda_lt_gemm *g);
/* D = alpha * A B + bias, no C (float32 scale; int8 A/B/D with a float32 bias: the int8 requantising epilogue);
 * alpha_vec: the device vector of a GEMM made with alpha_vector (else alpha is used). */
netrun_status cuda_lt_gemm_run_scaled(cuda_context *ctx, cuda_lt_gemm *g, const void *a, const void *b, const void *bias,
                                      float alpha, const float *alpha_vec, void *d, void *ws);
int cuda_dw_nhwc_fits(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow);
netrun_status cuda_dw_nhwc_f16(cuda_context *ctx, const void *x, const void *wkc, const void *bias, const void *z, void *y,
                               int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow, const int64_t *k,
                               const int64_t *strides, const int64_t *pads, const int64_t *dil,
                               const netrun_fused_activation *act);

#ifdef __cplusplus
}
#endif
#endif
