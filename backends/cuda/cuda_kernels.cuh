/* Device helpers shared by the .cu files: launch geometry, shapes passed by value, float16 loads/stores,
 * fused activations. */
#ifndef CUDA_KERNELS_CUH
#define CUDA_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include "cuda_internal.h"
#include "../common/dtype_convert.h"

#define CUDA_THREADS 256

/* Blocks for n elements with a grid-stride loop (capped: the loop covers the rest). */
static inline unsigned cuda_blocks(int64_t n) {
    int64_t b = (n + CUDA_THREADS - 1) / CUDA_THREADS;
    if (b < 1) b = 1;
    if (b > 65535 * 8) b = 65535 * 8;
    return (unsigned)b;
}

#define GRID_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

/* A shape and up to three stride sets, passed to kernels by value. */
struct shape8 {
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
};
struct strides8 {
    int64_t s[NETRUN_MAX_RANK];
};

static inline shape8 make_shape(int rank, const int64_t *dims) {
    shape8 s;
    memset(&s, 0, sizeof s);
    s.rank = rank;
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
    return s;
}

/* Offset of flat output index i in a tensor with the given strides over shape sh. */
__device__ __forceinline__ int64_t bcast_offset(int64_t i, const shape8 &sh, const strides8 &st) {
    int64_t off = 0;
    for (int d = sh.rank - 1; d >= 0; d--) {
        int64_t q = i / sh.dims[d];
        off += (i - q * sh.dims[d]) * st.s[d];
        i = q;
    }
    return off;
}

/* Division by a divisor fixed at launch, as a multiply-high and a shift (PyTorch's IntDivider; valid for
 * dividends below 2^31): the per-element index math of the 32-bit fast paths. */
struct fdiv32 {
    uint32_t d, m, s;
};

static inline fdiv32 make_fdiv(uint32_t d) {
    fdiv32 f;
    f.d = d ? d : 1;
    f.s = 0;
    while (f.s < 32 && ((uint64_t)1 << f.s) < f.d) f.s++;
    f.m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << f.s) - f.d)) / f.d + 1);
    return f;
}

__device__ __forceinline__ uint32_t fdiv_q(const fdiv32 &f, uint32_t n) {
    return (__umulhi(n, f.m) + n) >> f.s;
}

/* Blocks for a 32-bit grid-stride loop over n items: enough to fill the GPU a few times over. */
static inline unsigned cuda_blocks32(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 132 * 32) b = 132 * 32;
    return (unsigned)b;
}

template <typename T> __device__ __forceinline__ float to_f(T v) { return (float)v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v) { return (T)v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/* Dispatch a kernel template by element type: CALL sees the element type as E. FLOATS: float32/16, bfloat16,
 * double; INTS: the eight integer types; bool is its own case (uint8_t storage). */
#define DT_CASE(DT, TYPE, ...) case NETRUN_DTYPE_##DT: { typedef TYPE E; __VA_ARGS__; break; }
#define DT_FLOATS(...) DT_CASE(FLOAT, float, __VA_ARGS__) DT_CASE(FLOAT16, __half, __VA_ARGS__) \
    DT_CASE(BFLOAT16, __nv_bfloat16, __VA_ARGS__) DT_CASE(DOUBLE, double, __VA_ARGS__)
#define DT_SINTS(...) DT_CASE(INT8, int8_t, __VA_ARGS__) DT_CASE(INT16, int16_t, __VA_ARGS__) \
    DT_CASE(INT32, int32_t, __VA_ARGS__) DT_CASE(INT64, int64_t, __VA_ARGS__)
#define DT_UINTS(...) DT_CASE(UINT8, uint8_t, __VA_ARGS__) DT_CASE(UINT16, uint16_t, __VA_ARGS__) \
    DT_CASE(UINT32, uint32_t, __VA_ARGS__) DT_CASE(UINT64, uint64_t, __VA_ARGS__)
#define DT_INTS(...) DT_SINTS(__VA_ARGS__) DT_UINTS(__VA_ARGS__)

/* Every numeric type but bool, as E, with bfloat16 as BF16: __nv_bfloat16, or cuda_bf16_bits for kernels that
 * do their own float arithmetic on the bits (scatter reductions by compare-and-swap, index ops comparing). */
struct cuda_bf16_bits {
    uint16_t b;
};
#define DT_NUMERIC(BF16, ...) DT_CASE(FLOAT, float, __VA_ARGS__) DT_CASE(DOUBLE, double, __VA_ARGS__) \
    DT_CASE(FLOAT16, __half, __VA_ARGS__) DT_CASE(BFLOAT16, BF16, __VA_ARGS__) DT_INTS(__VA_ARGS__)

/* Element types by size, for kernels that only move bytes. */
template <int ES> struct bytes_t;
template <> struct bytes_t<1> { typedef uint8_t t; };
template <> struct bytes_t<2> { typedef uint16_t t; };
template <> struct bytes_t<4> { typedef uint32_t t; };
template <> struct bytes_t<8> { typedef uint64_t t; };

/* Dispatch a byte-moving kernel template K<ES> by element size. */
#define DISPATCH_ES(es, CALL)                                          \
    switch (es) {                                                      \
    case 1: { typedef uint8_t E; CALL; break; }                        \
    case 2: { typedef uint16_t E; CALL; break; }                       \
    case 4: { typedef uint32_t E; CALL; break; }                       \
    case 8: { typedef uint64_t E; CALL; break; }                       \
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda: element size %zu", (size_t)(es)); \
    }

struct act_params {
    int kind;
    float alpha, beta;
};

static inline act_params make_act(const netrun_fused_activation *a) {
    act_params p;
    p.kind = a ? (int)a->kind : 0;
    p.alpha = a ? a->alpha : 0;
    p.beta = a ? a->beta : 0;
    return p;
}

__device__ __forceinline__ float apply_act(float x, const act_params &a) {
    switch (a.kind) {
    case NETRUN_ACT_RELU: return x > 0 ? x : 0;
    case NETRUN_ACT_LEAKY_RELU: return x >= 0 ? x : a.alpha * x;
    case NETRUN_ACT_CLIP: return fminf(fmaxf(x, a.alpha), a.beta);
    case NETRUN_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case NETRUN_ACT_HARD_SIGMOID: return x != x ? x : fminf(fmaxf(a.alpha * x + a.beta, 0.0f), 1.0f);
    case NETRUN_ACT_HARD_SWISH: return x * fminf(fmaxf(x / 6.0f + 0.5f, 0.0f), 1.0f);
    case NETRUN_ACT_TANH: return tanhf(x);
    case NETRUN_ACT_AFFINE: return a.alpha * x + a.beta;
    case NETRUN_ACT_THRESHOLDED_RELU: return x > a.alpha ? x : 0;
    case NETRUN_ACT_SCALED_TANH: return a.alpha * tanhf(a.beta * x);
    case NETRUN_ACT_ELU: return x >= 0 ? x : a.alpha * (expf(x) - 1.0f);
    case NETRUN_ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case NETRUN_ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    case NETRUN_ACT_SWISH: { /* x * sigmoid(alpha x), one exp that never overflows */
        float z = a.alpha * x, e = expf(-fabsf(z)), r = 1.0f / (1.0f + e);
        return x * (z >= 0 ? r : e * r);
    }
    case NETRUN_ACT_GELU_TANH: /* MatMulBias's tanh Gelu where the GEMM epilogue did not take it */
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    default: return x;
    }
}

/* apply_act with the kind fixed at compile time (ACT >= 0) or read at run time (ACT < 0). A kernel that applies
 * it to many values a thread instantiates the common kinds: the switch over every kind, inlined dozens of times,
 * made the float16 depthwise kernel instruction-bound (SiLU's took twice the time of Clip's on the same shape). */
template <int ACT> __device__ __forceinline__ float apply_act_t(float x, const act_params &a) {
    if (ACT < 0) return apply_act(x, a);
    act_params b = a;
    b.kind = ACT;
    return apply_act(x, b);
}

/* Block-wide sum / max of one float per thread (blockDim.x a multiple of 32, at most 1024). */
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
/* max with NaN winning (fmaxf drops a NaN): softmax rows, ReduceLogSumExp */
__device__ __forceinline__ float nan_max(float a, float b) { return a != a || b != b ? NAN : fmaxf(a, b); }
template <bool NAN_WINS> __device__ __forceinline__ float warp_max_t(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = NAN_WINS ? nan_max(v, w) : fmaxf(v, w);
    }
    return v;
}
__device__ __forceinline__ float warp_max(float v) { return warp_max_t<false>(v); }
__device__ __forceinline__ float block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? sh[threadIdx.x] : 0.0f;
    if (w == 0) v = warp_sum(v);
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}
template <bool NAN_WINS> __device__ __forceinline__ float block_max_t(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_max_t<NAN_WINS>(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? sh[threadIdx.x] : -INFINITY;
    if (w == 0) v = warp_max_t<NAN_WINS>(v);
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}
__device__ __forceinline__ float block_max(float v, float *sh) { return block_max_t<false>(v, sh); }
__device__ __forceinline__ float block_nan_max(float v, float *sh) { return block_max_t<true>(v, sh); }

#define LAUNCH_CHECK(what) cuda_check_launch(what)

#endif
