/* CUDA kernels: float32 <-> float16 conversions with an optional layout change, used by the fp16 paths that
 * conv.c and gemm.c measure at kernel creation under --precision fp16 (the model keeps float32 values; only
 * the heavy layer runs in float16). NCS is [N, C, spatial...] flattened to [N, C, S]; NSC is [N, S, C]. */
#include "cuda_kernels.cuh"

__global__ void f32_to_f16_k(const float *x, __half *y, int64_t n) {
    GRID_LOOP(i, n) y[i] = __float2half_rn(x[i]);
}

__global__ void f16_to_f32_k(const __half *x, float *y, int64_t n) {
    GRID_LOOP(i, n) y[i] = __half2float(x[i]);
}

/* y[n, s, c] = x[n, c, s]: the index walks the output, so the writes are coalesced. */
__global__ void f32_ncs_to_f16_nsc_k(const float *x, __half *y, int64_t c, int64_t s, int64_t total) {
    GRID_LOOP(i, total) {
        int64_t ci = i % c, r = i / c, si = r % s, ni = r / s;
        y[i] = __float2half_rn(x[(ni * c + ci) * s + si]);
    }
}

/* y[n, c, s] = x[n, s, c] */
__global__ void f16_nsc_to_f32_ncs_k(const __half *x, float *y, int64_t c, int64_t s, int64_t total) {
    GRID_LOOP(i, total) {
        int64_t si = i % s, r = i / s, ci = r % c, ni = r / c;
        y[i] = __half2float(x[(ni * s + si) * c + ci]);
    }
}

extern "C" netrun_status cuda_f32_to_f16(cuda_context *ctx, const void *x, void *y, int64_t n, int64_t c, int64_t s,
                                         int to_nsc) {
    int64_t total = n * c * s;
    if (total <= 0) return NETRUN_OK;
    if (to_nsc && c > 1 && s > 1)
        f32_ncs_to_f16_nsc_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const float *)x, (__half *)y, c, s, total);
    else
        f32_to_f16_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const float *)x, (__half *)y, total);
    return cuda_check_launch("float32 -> float16 conversion");
}

extern "C" netrun_status cuda_f16_to_f32(cuda_context *ctx, const void *x, void *y, int64_t n, int64_t c, int64_t s,
                                         int from_nsc) {
    int64_t total = n * c * s;
    if (total <= 0) return NETRUN_OK;
    if (from_nsc && c > 1 && s > 1)
        f16_nsc_to_f32_ncs_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)x, (float *)y, c, s, total);
    else
        f16_to_f32_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)x, (float *)y, total);
    return cuda_check_launch("float16 -> float32 conversion");
}
