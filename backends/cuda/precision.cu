/* CUDA kernels: float32 <-> float16 conversions with an optional layout change, used by the fp16 paths that
 * conv.c and gemm.c measure at kernel creation under --precision fp16 and by ReorderNHWC at the borders of
 * the float16 NHWC regions; the regions' NHWC Conv epilogue and MulChannelNHWC. NCS is [N, C, spatial...]
 * flattened to [N, C, S]; NSC is [N, S, C]. */
#include "cuda_kernels.cuh"

/* Eight float16 values (one 16-byte load) as floats. */
__device__ __forceinline__ void h8_to_f(const uint4 &v, float f[8]) {
    const __half2 *h = reinterpret_cast<const __half2 *>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 t = __half22float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

/* act(v[0..7]) rounded to eight float16 values (one 16-byte store). */
template <int ACT> __device__ __forceinline__ uint4 f8_act_to_h8(const float v[8], const act_params &act) {
    uint4 out;
    __half2 *h = reinterpret_cast<__half2 *>(&out);
#pragma unroll
    for (int e = 0; e < 4; e++)
        h[e] = __floats2half2_rn(apply_act_t<ACT>(v[2 * e], act), apply_act_t<ACT>(v[2 * e + 1], act));
    return out;
}

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

/* Few channels (a network's input: C = 3): one thread per pixel, each channel plane read coalesced and the C
 * float16 values written next to each other. The 32x32 tiled transpose left 29 of 32 tile rows idle there
 * (ResNet-50's entry conversion at batch 256: 0.85 ms for 154 MB). 32-bit indices (the launcher checks). */
__global__ void f32_ncs_to_f16_nsc_fewc_k(const float *x, __half *y, int c, uint32_t s, uint32_t pixels, fdiv32 fs) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pixels; i += stride) {
        uint32_t n = fdiv_q(fs, i), si = i - n * s;
        const float *xp = x + ((size_t)n * (uint32_t)c) * s + si;
        __half *yp = y + (size_t)i * (uint32_t)c;
        for (int k = 0; k < c; k++) yp[k] = __float2half_rn(xp[(size_t)k * s]);
    }
}

/* y[n, c, s] = x[n, s, c] */
__global__ void f16_nsc_to_f32_ncs_k(const __half *x, float *y, int64_t c, int64_t s, int64_t total) {
    GRID_LOOP(i, total) {
        int64_t si = i % s, r = i / s, ci = r % c, ni = r / c;
        y[i] = __half2float(x[(ni * s + si) * c + ci]);
    }
}

/* Tiled transposes (32x32 tiles through shared memory, so reads and writes are both coalesced) of batch z:
 * A [rows, cols] -> B [cols, rows]. */
#define TILE 32
#define TROWS 8
__global__ void f32_to_f16_transpose_k(const float *a, __half *b, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int64_t base = (int64_t)blockIdx.z * rows * cols;
    int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
    for (int j = threadIdx.y; j < TILE; j += TROWS) {
        int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = a[base + (int64_t)r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < TILE; j += TROWS) {
        int c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols) b[base + (int64_t)c * rows + r] = __float2half_rn(tile[threadIdx.x][j]);
    }
}

/* B [cols, rows] = act(A^T + bias[col]) with A float16 [rows, cols]: NSC float16 -> NCS float32 (cols = C). */
__global__ void f16_to_f32_transpose_epi_k(const __half *a, float *b, const float *bias, int rows, int cols,
                                           act_params act) {
    __shared__ float tile[TILE][TILE + 1];
    int64_t base = (int64_t)blockIdx.z * rows * cols;
    int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
    for (int j = threadIdx.y; j < TILE; j += TROWS) {
        int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = __half2float(a[base + (int64_t)r * cols + c]);
    }
    __syncthreads();
    for (int j = threadIdx.y; j < TILE; j += TROWS) {
        int c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols)
            b[base + (int64_t)c * rows + r] = apply_act(tile[threadIdx.x][j] + (bias ? bias[c] : 0.0f), act);
    }
}

/* y[n, c, s] = act(x[n, c, s] + bias[c]): one (n, c) plane per grid row, so no index division; x may be y. */
template <typename T>
__global__ void epi_ncs_k(const T *x, float *y, const float *bias, int s, act_params act) {
    int64_t plane = (int64_t)blockIdx.z * gridDim.y + blockIdx.y;
    float b = bias ? bias[blockIdx.y] : 0.0f;
    const T *xp = x + plane * s;
    float *yp = y + plane * s;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < s; i += (int64_t)blockDim.x * gridDim.x)
        yp[i] = apply_act(to_f(xp[i]) + b, act);
}

/* Grids of the tiled and per-plane kernels need n <= 65535, c <= 65535 (planes) and 32-bit c, s. */
static int tiled_ok(int64_t n, int64_t c, int64_t s) {
    return n >= 1 && n <= 65535 && c >= 1 && c <= 65535 && s >= 1 && c * s <= INT32_MAX && (s + TILE - 1) / TILE <= 65535;
}

extern "C" netrun_status cuda_f32_to_f16(cuda_context *ctx, const void *x, void *y, int64_t n, int64_t c, int64_t s,
                                         int to_nsc) {
    int64_t total = n * c * s;
    if (total <= 0) return NETRUN_OK;
    if (to_nsc && c > 1 && s > 1) {
        if (c <= 8 && n * s < INT32_MAX && total < INT32_MAX) {
            int64_t px = n * s;
            f32_ncs_to_f16_nsc_fewc_k<<<cuda_blocks32(px, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
                (const float *)x, (__half *)y, (int)c, (uint32_t)s, (uint32_t)px, make_fdiv((uint32_t)s));
        } else if (tiled_ok(n, c, s)) {
            dim3 grid((unsigned)((s + TILE - 1) / TILE), (unsigned)((c + TILE - 1) / TILE), (unsigned)n);
            f32_to_f16_transpose_k<<<grid, dim3(TILE, TROWS), 0, ctx->stream>>>((const float *)x, (__half *)y, (int)c, (int)s);
        } else
            f32_ncs_to_f16_nsc_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const float *)x, (__half *)y, c, s, total);
    } else
        f32_to_f16_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const float *)x, (__half *)y, total);
    return cuda_check_launch("float32 -> float16 conversion");
}

extern "C" netrun_status cuda_f16_to_f32_bias_act(cuda_context *ctx, const void *x, void *y, const void *bias, int64_t n,
                                                  int64_t c, int64_t s, int from_nsc, const netrun_fused_activation *act) {
    int64_t total = n * c * s;
    if (total <= 0) return NETRUN_OK;
    act_params a = make_act(act);
    if (tiled_ok(n, c, s)) {
        if (from_nsc && c > 1 && s > 1) {
            dim3 grid((unsigned)((c + TILE - 1) / TILE), (unsigned)((s + TILE - 1) / TILE), (unsigned)n);
            f16_to_f32_transpose_epi_k<<<grid, dim3(TILE, TROWS), 0, ctx->stream>>>((const __half *)x, (float *)y,
                                                                                   (const float *)bias, (int)s, (int)c, a);
        } else {
            int64_t bx = (s + CUDA_THREADS - 1) / CUDA_THREADS;
            dim3 grid((unsigned)(bx < 64 ? bx : 64), (unsigned)c, (unsigned)n);
            epi_ncs_k<__half><<<grid, CUDA_THREADS, 0, ctx->stream>>>((const __half *)x, (float *)y, (const float *)bias,
                                                                       (int)s, a);
        }
        return cuda_check_launch("float16 -> float32 conversion with bias and activation");
    }
    netrun_status st = cuda_f16_to_f32(ctx, x, y, n, c, s, from_nsc);
    if (st != NETRUN_OK) return st;
    return cuda_bias_activation(ctx, NETRUN_DTYPE_FLOAT, y, bias, n, c, s, act);
}

extern "C" netrun_status cuda_conv_bias_act(cuda_context *ctx, void *y, const void *bias, int64_t n, int64_t c, int64_t s,
                                            const netrun_fused_activation *act) {
    if (n * c * s <= 0 || (!bias && (!act || act->kind == NETRUN_ACT_NONE))) return NETRUN_OK;
    if (!tiled_ok(n, c, s)) return cuda_bias_activation(ctx, NETRUN_DTYPE_FLOAT, y, bias, n, c, s, act);
    int64_t bx = (s + CUDA_THREADS - 1) / CUDA_THREADS;
    dim3 grid((unsigned)(bx < 64 ? bx : 64), (unsigned)c, (unsigned)n);
    epi_ncs_k<float><<<grid, CUDA_THREADS, 0, ctx->stream>>>((const float *)y, (float *)y, (const float *)bias, (int)s,
                                                             make_act(act));
    return cuda_check_launch("conv bias + activation");
}

extern "C" netrun_status cuda_f16_to_f32(cuda_context *ctx, const void *x, void *y, int64_t n, int64_t c, int64_t s,
                                         int from_nsc) {
    int64_t total = n * c * s;
    if (total <= 0) return NETRUN_OK;
    if (from_nsc && c > 1 && s > 1) {
        if (tiled_ok(n, c, s)) {
            dim3 grid((unsigned)((c + TILE - 1) / TILE), (unsigned)((s + TILE - 1) / TILE), (unsigned)n);
            f16_to_f32_transpose_epi_k<<<grid, dim3(TILE, TROWS), 0, ctx->stream>>>((const __half *)x, (float *)y, NULL,
                                                                                   (int)s, (int)c, make_act(NULL));
        } else
            f16_nsc_to_f32_ncs_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)x, (float *)y, c, s, total);
    } else
        f16_to_f32_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)x, (float *)y, total);
    return cuda_check_launch("float16 -> float32 conversion");
}

/* ---- float16 NHWC regions: the Conv epilogue on channels-last float16 data ---- */

/* y[r, c] = act(y[r, c] + bias[c]) on half2 pairs (c even): 32-bit index math (the launcher checks). */
__global__ void f16_nsc_bias_act2_k(__half2 *y, const __half2 *bias, uint32_t total2, fdiv32 c2, act_params act) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total2; i += stride) {
        float2 v = __half22float2(y[i]);
        if (bias) {
            float2 b = __half22float2(bias[i - fdiv_q(c2, i) * c2.d]);
            v.x += b.x;
            v.y += b.y;
        }
        y[i] = __floats2half2_rn(apply_act(v.x, act), apply_act(v.y, act));
    }
}

__global__ void f16_nsc_bias_act_k(__half *y, const __half *bias, int64_t total, int64_t c, act_params act) {
    GRID_LOOP(i, total) y[i] = __float2half_rn(apply_act(__half2float(y[i]) + (bias ? __half2float(bias[i % c]) : 0.0f), act));
}

/* c % 8 == 0, 16-byte aligned: eight channels a thread (16-byte loads) and the common activations instantiated
 * (apply_act_t): the epilogue after cuBLAS's GEMM of a pointwise Conv (SiLU in EfficientNet, Clip in MobileNetV2). */
template <int ACT>
__global__ void f16_nsc_bias_act8_k(uint4 *y, const uint4 *bias, uint32_t total8, fdiv32 c8, act_params act) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total8; i += stride) {
        float v[8], b[8];
        h8_to_f(y[i], v);
        if (bias) {
            h8_to_f(__ldg(&bias[i - fdiv_q(c8, i) * c8.d]), b);
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] += b[e];
        }
        y[i] = f8_act_to_h8<ACT>(v, act);
    }
}

template <int ACT>
static void f16_nsc_bias_act8(cudaStream_t st, void *y, const void *bias, int64_t total, int64_t c, act_params a) {
    int64_t t8 = total / 8;
    f16_nsc_bias_act8_k<ACT><<<cuda_blocks32(t8, CUDA_THREADS), CUDA_THREADS, 0, st>>>(
        (uint4 *)y, (const uint4 *)bias, (uint32_t)t8, make_fdiv((uint32_t)(c / 8)), a);
}

extern "C" netrun_status cuda_f16_nsc_bias_act(cuda_context *ctx, void *y, const void *bias, int64_t rows, int64_t c,
                                               const netrun_fused_activation *act) {
    int64_t total = rows * c;
    if (total <= 0 || (!bias && (!act || act->kind == NETRUN_ACT_NONE))) return NETRUN_OK;
    act_params a = make_act(act);
    if (c % 8 == 0 && total / 8 <= INT32_MAX && ((uintptr_t)y & 15) == 0 && ((uintptr_t)bias & 15) == 0) {
        switch (a.kind) {
        case NETRUN_ACT_NONE: f16_nsc_bias_act8<NETRUN_ACT_NONE>(ctx->stream, y, bias, total, c, a); break;
        case NETRUN_ACT_RELU: f16_nsc_bias_act8<NETRUN_ACT_RELU>(ctx->stream, y, bias, total, c, a); break;
        case NETRUN_ACT_CLIP: f16_nsc_bias_act8<NETRUN_ACT_CLIP>(ctx->stream, y, bias, total, c, a); break;
        case NETRUN_ACT_SWISH: f16_nsc_bias_act8<NETRUN_ACT_SWISH>(ctx->stream, y, bias, total, c, a); break;
        default: f16_nsc_bias_act8<-1>(ctx->stream, y, bias, total, c, a); break;
        }
    } else if (c % 2 == 0 && total / 2 <= INT32_MAX && ((uintptr_t)y & 3) == 0 && ((uintptr_t)bias & 3) == 0) {
        int64_t t2 = total / 2;
        f16_nsc_bias_act2_k<<<cuda_blocks(t2), CUDA_THREADS, 0, ctx->stream>>>((__half2 *)y, (const __half2 *)bias,
                                                                              (uint32_t)t2, make_fdiv((uint32_t)(c / 2)), a);
    } else
        f16_nsc_bias_act_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((__half *)y, (const __half *)bias, total, c, a);
    return cuda_check_launch("float16 NHWC bias + activation");
}

/* MulChannelNHWC (com.netrun): y[n, q, c] = x[n, q, c] * s[n or 0, c], float16 NHWC x (squeeze-excite). */
__global__ void mulch_nhwc_k(const __half *x, const __half *s, __half *y, int64_t total, int64_t c, int64_t per_img,
                             int s_batched) {
    GRID_LOOP(i, total) {
        int64_t ci = i % c, n = i / per_img;
        y[i] = __float2half_rn(__half2float(x[i]) * __half2float(s[(s_batched ? n * c : 0) + ci]));
    }
}

/* Channels a multiple of 8, 16-byte aligned: eight channels of a pixel per thread, one 16-byte load of x and of
 * s (one element a thread ran EfficientNet-B0's squeeze-excite Muls at batch 256 at a quarter of the bandwidth). */
__global__ void mulch_nhwc8_k(const uint4 *x, const uint4 *s, uint4 *y, int64_t n8, int64_t c8, int64_t per_img8,
                              int s_batched) {
    GRID_LOOP(i, n8) {
        const int64_t ci = i % c8, n = i / per_img8;
        union { uint4 u; __half2 h[4]; } a, b;
        a.u = x[i];
        b.u = s[(s_batched ? n * c8 : 0) + ci];
#pragma unroll
        for (int k = 0; k < 4; k++) a.h[k] = __float22half2_rn(make_float2(__low2float(a.h[k]) * __low2float(b.h[k]),
                                                                       __high2float(a.h[k]) * __high2float(b.h[k])));
        y[i] = a.u;
    }
}

extern "C" netrun_status cuda_mulch_nhwc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *X = &args->inputs[0], *S = &args->inputs[1];
    if (args->n_inputs != 2 || X->rank != 4 || S->rank != 4 || X->dtype != NETRUN_DTYPE_FLOAT16 ||
        S->dtype != NETRUN_DTYPE_FLOAT16 || S->dims[1] != X->dims[1] || (S->dims[0] != X->dims[0] && S->dims[0] != 1) ||
        S->dims[2] != 1 || S->dims[3] != 1 || cuda_count(&args->outputs[0]) != cuda_count(X))
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda MulChannelNHWC: X, S, Y do not match");
    int64_t total = cuda_count(X), c = X->dims[1], per_img = c * X->dims[2] * X->dims[3];
    if (total == 0) return NETRUN_OK;
    if (c % 8 == 0 && (((uintptr_t)X->data | (uintptr_t)S->data | (uintptr_t)args->outputs[0].data) & 15) == 0) {
        mulch_nhwc8_k<<<cuda_blocks(total / 8), CUDA_THREADS, 0, ctx->stream>>>(
            (const uint4 *)X->data, (const uint4 *)S->data, (uint4 *)args->outputs[0].data, total / 8, c / 8, per_img / 8,
            S->dims[0] != 1);
        return cuda_check_launch("MulChannelNHWC");
    }
    mulch_nhwc_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (const __half *)S->data,
                                                                      (__half *)args->outputs[0].data, total, c, per_img,
                                                                      S->dims[0] != 1);
    return cuda_check_launch("MulChannelNHWC");
}

/* ---- float16 NHWC regions: depthwise Conv (group = C = M) of our own ----
 * cuDNN has no fast channels-last float16 depthwise kernel (MobileNetV2's took float32 plus two conversions
 * inside the region). One thread per output pixel and channel pair (half2, consecutive threads on
 * consecutive channels: every tap is one coalesced load), float32 accumulation, bias + Z + activation fused.
 * 32-bit index math: the launcher refuses tensors of 2^31 elements or more. */
struct dw_geom {
    int h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
    uint32_t cv; /* channels / VEC */
};

__device__ __forceinline__ float2 dw_ld(const __half2 *p, uint32_t i) { return __half22float2(p[i]); }
__device__ __forceinline__ float2 dw_ld(const __half *p, uint32_t i) { return make_float2(__half2float(p[i]), 0.0f); }
__device__ __forceinline__ void dw_st(__half2 *p, uint32_t i, float2 v) { p[i] = __floats2half2_rn(v.x, v.y); }
__device__ __forceinline__ void dw_st(__half *p, uint32_t i, float2 v) { p[i] = __float2half_rn(v.x); }

template <typename V>
__global__ void dw_nhwc_k(const V *x, const V *w, const V *bias, const V *z, V *y, uint32_t total, fdiv32 fc,
                          fdiv32 fow, fdiv32 foh, dw_geom g, act_params act) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        uint32_t r = fdiv_q(fc, i), c = i - r * g.cv;
        uint32_t r2 = fdiv_q(fow, r), ow = r - r2 * (uint32_t)g.ow;
        uint32_t n = fdiv_q(foh, r2), oh = r2 - n * (uint32_t)g.oh;
        int ih0 = (int)oh * g.sh - g.ph, iw0 = (int)ow * g.sw - g.pw;
        float2 acc = make_float2(0.0f, 0.0f);
        for (int a = 0; a < g.kh; a++) {
            int ih = ih0 + a * g.dh;
            if ((unsigned)ih >= (unsigned)g.h) continue;
            uint32_t row = (n * (uint32_t)g.h + (uint32_t)ih) * (uint32_t)g.w;
            for (int b = 0; b < g.kw; b++) {
                int iw = iw0 + b * g.dw;
                if ((unsigned)iw >= (unsigned)g.w) continue;
                float2 xv = dw_ld(x, (row + (uint32_t)iw) * g.cv + c), wv = dw_ld(w, (uint32_t)(a * g.kw + b) * g.cv + c);
                acc.x = fmaf(xv.x, wv.x, acc.x);
                acc.y = fmaf(xv.y, wv.y, acc.y);
            }
        }
        if (bias) {
            float2 bv = dw_ld(bias, c);
            acc.x += bv.x;
            acc.y += bv.y;
        }
        if (z) {
            float2 zv = dw_ld(z, i);
            acc.x += zv.x;
            acc.y += zv.y;
        }
        acc.x = apply_act(acc.x, act);
        acc.y = apply_act(acc.y, act);
        dw_st(y, i, acc);
    }
}

/* The same convolution, eight channels a thread (16-byte loads) and TW output columns a thread: a row of input
 * pixels loaded once serves every output of the tile that reads it, where the kernel above loads each tap again
 * for every output (it was load-bound at a tenth of the memory bandwidth: MobileNetV2's 3x3 depthwise layers at
 * batch 256 took half the network's time). K x K taps at stride S, dilation 1; C % 8 == 0 and 16-byte aligned
 * pointers, else the kernel above. Each output's sum runs over the taps in the same order as there (rows, then
 * columns), so both give the same bits. */

template <int K, int S, int TW, int ACT>
__global__ void __launch_bounds__(256) dw8_nhwc_k(const uint4 *__restrict__ x, const uint4 *__restrict__ w,
                                                  const uint4 *__restrict__ bias, const uint4 *__restrict__ z,
                                                  uint4 *__restrict__ y, uint32_t total, fdiv32 fcg, fdiv32 ftiles,
                                                  fdiv32 foh, dw_geom g, act_params act) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const uint32_t cv = g.cv; /* channels / 8 */
    uint32_t r = fdiv_q(fcg, i), cg = i - r * cv;
    uint32_t tiles = ftiles.d, r2 = fdiv_q(ftiles, r), tile = r - r2 * tiles;
    uint32_t n = fdiv_q(foh, r2), oh = r2 - n * (uint32_t)g.oh;
    const int ow0 = (int)tile * TW, ih0 = (int)oh * S - g.ph, iw0 = ow0 * S - g.pw;
    constexpr int NC = (TW - 1) * S + K; /* input columns the tile reads */
    float acc[TW][8];
#pragma unroll
    for (int t = 0; t < TW; t++)
#pragma unroll
        for (int e = 0; e < 8; e++) acc[t][e] = 0.0f;
#pragma unroll 1
    for (int a = 0; a < K; a++) {
        const int ih = ih0 + a;
        if ((unsigned)ih >= (unsigned)g.h) continue;
        float wf[K][8];
#pragma unroll
        for (int b = 0; b < K; b++) h8_to_f(__ldg(&w[(uint32_t)(a * K + b) * cv + cg]), wf[b]);
        const uint4 *xrow = x + (n * (uint32_t)g.h + (uint32_t)ih) * (uint32_t)g.w * cv + cg;
#pragma unroll
        for (int j = 0; j < NC; j++) {
            const int iw = iw0 + j;
            if ((unsigned)iw >= (unsigned)g.w) continue; /* padding: adds nothing */
            float xf[8];
            h8_to_f(__ldg(&xrow[(uint32_t)iw * cv]), xf);
#pragma unroll
            for (int t = 0; t < TW; t++) {
                const int b = j - t * S;
                if (b < 0 || b >= K) continue;
#pragma unroll
                for (int e = 0; e < 8; e++) acc[t][e] = fmaf(xf[e], wf[b][e], acc[t][e]);
            }
        }
    }
    float bf[8];
    if (bias) h8_to_f(__ldg(&bias[cg]), bf);
#pragma unroll
    for (int t = 0; t < TW; t++) {
        const int ow = ow0 + t;
        if (ow >= g.ow) break;
        const uint32_t o = ((n * (uint32_t)g.oh + oh) * (uint32_t)g.ow + (uint32_t)ow) * cv + cg;
        float v[8];
#pragma unroll
        for (int e = 0; e < 8; e++) v[e] = acc[t][e];
        if (bias)
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] += bf[e];
        if (z) {
            float zf[8];
            h8_to_f(__ldg(&z[o]), zf);
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] += zf[e];
        }
        y[o] = f8_act_to_h8<ACT>(v, act);
    }
}

/* One thread per tile (not a grid-stride loop: every thread keeps its tile's sums in registers). */
template <int K, int S, int TW, int ACT>
static void dw8_launch(cudaStream_t st, const void *x, const void *w, const void *bias, const void *z, void *y,
                       int64_t n, dw_geom g, act_params a) {
    uint32_t tiles = (uint32_t)((g.ow + TW - 1) / TW);
    uint32_t total = (uint32_t)((int64_t)n * g.oh * tiles * g.cv);
    dw8_nhwc_k<K, S, TW, ACT><<<(total + 255) / 256, 256, 0, st>>>(
        (const uint4 *)x, (const uint4 *)w, (const uint4 *)bias, (const uint4 *)z, (uint4 *)y, total, make_fdiv(g.cv),
        make_fdiv(tiles), make_fdiv((uint32_t)g.oh), g, a);
}

/* The activations of MobileNet / EfficientNet-style nets get their own instances; the others the run-time switch. */
template <int K, int S>
static void dw8_launch_act(cudaStream_t st, const void *x, const void *w, const void *bias, const void *z, void *y,
                           int64_t n, dw_geom g, act_params a) {
    switch (a.kind) {
    case NETRUN_ACT_NONE: dw8_launch<K, S, 4, NETRUN_ACT_NONE>(st, x, w, bias, z, y, n, g, a); break;
    case NETRUN_ACT_RELU: dw8_launch<K, S, 4, NETRUN_ACT_RELU>(st, x, w, bias, z, y, n, g, a); break;
    case NETRUN_ACT_CLIP: dw8_launch<K, S, 4, NETRUN_ACT_CLIP>(st, x, w, bias, z, y, n, g, a); break;
    case NETRUN_ACT_SWISH: dw8_launch<K, S, 4, NETRUN_ACT_SWISH>(st, x, w, bias, z, y, n, g, a); break;
    default: dw8_launch<K, S, 4, -1>(st, x, w, bias, z, y, n, g, a); break;
    }
}

/* 0 when no dw8_nhwc_k instance serves this geometry (the caller then runs dw_nhwc_k). */
static int dw8_dispatch(cudaStream_t st, const void *x, const void *w, const void *bias, const void *z, void *y,
                        int64_t n, int64_t c, dw_geom g, act_params a) {
    int aligned = c % 8 == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)w & 15) == 0 && ((uintptr_t)y & 15) == 0 &&
                  ((uintptr_t)bias & 15) == 0 && ((uintptr_t)z & 15) == 0;
    if (!aligned || g.kh != g.kw || g.sh != g.sw || g.dh != 1 || g.dw != 1) return 0;
    dw_geom g8 = g;
    g8.cv = (uint32_t)(c / 8);
    switch (g.kh * 10 + g.sh) {
    case 31: dw8_launch_act<3, 1>(st, x, w, bias, z, y, n, g8, a); return 1;
    case 32: dw8_launch_act<3, 2>(st, x, w, bias, z, y, n, g8, a); return 1;
    case 51: dw8_launch_act<5, 1>(st, x, w, bias, z, y, n, g8, a); return 1;
    case 52: dw8_launch_act<5, 2>(st, x, w, bias, z, y, n, g8, a); return 1;
    default: return 0;
    }
}

extern "C" int cuda_dw_nhwc_fits(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow) {
    return n > 0 && c > 0 && h > 0 && w > 0 && oh > 0 && ow > 0 && n * c * h * w < INT32_MAX && n * c * oh * ow < INT32_MAX;
}

extern "C" netrun_status cuda_dw_nhwc_f16(cuda_context *ctx, const void *x, const void *wkc, const void *bias, const void *z,
                                          void *y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow,
                                          const int64_t *k, const int64_t *strides, const int64_t *pads,
                                          const int64_t *dil, const netrun_fused_activation *act) {
    if (!cuda_dw_nhwc_fits(n, c, h, w, oh, ow))
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda depthwise NHWC: tensor of 2^31 elements or more");
    int vec = c % 2 == 0 && ((uintptr_t)x & 3) == 0 && ((uintptr_t)wkc & 3) == 0 && ((uintptr_t)y & 3) == 0 &&
              ((uintptr_t)bias & 3) == 0 && ((uintptr_t)z & 3) == 0 ? 2 : 1;
    dw_geom g;
    g.h = (int)h;
    g.w = (int)w;
    g.oh = (int)oh;
    g.ow = (int)ow;
    g.kh = (int)k[0];
    g.kw = (int)k[1];
    g.sh = (int)strides[0];
    g.sw = (int)strides[1];
    g.ph = (int)pads[0];
    g.pw = (int)pads[1];
    g.dh = (int)dil[0];
    g.dw = (int)dil[1];
    g.cv = (uint32_t)(c / vec);
    uint32_t total = (uint32_t)(n * oh * ow * (c / vec));
    act_params a = make_act(act);
    if (dw8_dispatch(ctx->stream, x, wkc, bias, z, y, n, c, g, a)) return cuda_check_launch("float16 NHWC depthwise Conv");
    fdiv32 fc = make_fdiv(g.cv), fow = make_fdiv((uint32_t)ow), foh = make_fdiv((uint32_t)oh);
    if (vec == 2)
        dw_nhwc_k<__half2><<<cuda_blocks32(total, 256), 256, 0, ctx->stream>>>(
            (const __half2 *)x, (const __half2 *)wkc, (const __half2 *)bias, (const __half2 *)z, (__half2 *)y, total, fc, fow,
            foh, g, a);
    else
        dw_nhwc_k<__half><<<cuda_blocks32(total, 256), 256, 0, ctx->stream>>>((const __half *)x, (const __half *)wkc,
                                                                              (const __half *)bias, (const __half *)z,
                                                                              (__half *)y, total, fc, fow, foh, g, a);
    return cuda_check_launch("float16 NHWC depthwise Conv");
}
