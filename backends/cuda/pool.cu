/* CUDA kernels: pool. MaxPool / AveragePool in 1-3 spatial dims (dilations, ceil_mode, count_include_pad,
 * the output shape comes from the layer) with one thread per output element, and GlobalAveragePool /
 * GlobalMaxPool with one block per plane. Same semantics as the CPU backend: max ignores padded taps; the
 * average divides by the taps inside the input, or with count_include_pad by the taps inside the padded
 * extent [-pads_begin, in + pads_end). float32/float16. LpPool, MaxPool with the Indices output and MaxPool
 * on int8/uint8/bfloat16/double take a general kernel with the CPU backend's exact semantics (pool_gen_k). */
#include <float.h>

#include <type_traits>

#include "cuda_kernels.cuh"

struct pool_geo {
    int ns;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int is_max, include_pad;
};

template <typename T> __global__ void pool_k(const T *x, T *y, int64_t total, pool_geo g) {
    GRID_LOOP(i, total) {
        int64_t o[3] = {0, 0, 0}, r = i;
        for (int d = g.ns - 1; d >= 0; d--) {
            o[d] = r % g.out[d];
            r /= g.out[d];
        }
        int64_t plane = r, in_plane = 1;
        for (int d = 0; d < g.ns; d++) in_plane *= g.in[d];
        const T *xp = x + plane * in_plane;
        int64_t k0 = g.k[0], k1 = g.ns > 1 ? g.k[1] : 1, k2 = g.ns > 2 ? g.k[2] : 1;
        float best = -INFINITY, sum = 0;
        int64_t cnt = 0, cnt_pad = 1;
        for (int d = 0; d < g.ns; d++) { /* taps inside the padded extent, per dim */
            int64_t c = 0;
            for (int64_t j = 0; j < g.k[d]; j++) {
                int64_t p = o[d] * g.s[d] - g.pb[d] + j * g.d[d];
                if (p >= -g.pb[d] && p < g.in[d] + g.pe[d]) c++;
            }
            cnt_pad *= c;
        }
        for (int64_t a = 0; a < k0; a++) {
            int64_t p0 = o[0] * g.s[0] - g.pb[0] + a * g.d[0];
            if (p0 < 0 || p0 >= g.in[0]) continue;
            for (int64_t b = 0; b < k1; b++) {
                int64_t p1 = g.ns > 1 ? o[1] * g.s[1] - g.pb[1] + b * g.d[1] : 0;
                if (g.ns > 1 && (p1 < 0 || p1 >= g.in[1])) continue;
                for (int64_t c = 0; c < k2; c++) {
                    int64_t p2 = g.ns > 2 ? o[2] * g.s[2] - g.pb[2] + c * g.d[2] : 0;
                    if (g.ns > 2 && (p2 < 0 || p2 >= g.in[2])) continue;
                    int64_t off = p0;
                    if (g.ns > 1) off = off * g.in[1] + p1;
                    if (g.ns > 2) off = off * g.in[2] + p2;
                    float v = to_f(xp[off]);
                    if (v != v) best = v; /* NaN wins */
                    else if (best == best && v > best) best = v;
                    sum += v;
                    cnt++;
                }
            }
        }
        float res;
        if (g.is_max) res = cnt ? best : -INFINITY;
        else {
            int64_t div = g.include_pad ? cnt_pad : cnt;
            res = div ? sum / (float)div : 0.0f;
        }
        y[i] = from_f<T>(res);
    }
}

/* 2-D pooling with 32-bit index math (total outputs and each input plane below 2^31): the common case, with
 * the same results as pool_k. */
struct pool2d_geo {
    fdiv32 ow, oh;
    int ih, iw, kh, kw, sh, sw, dh, dw, ph, pw, peh, pew, is_max, include_pad;
};

template <typename T> __global__ void pool2d_k(const T *x, T *y, uint32_t total, pool2d_geo g) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        uint32_t q = fdiv_q(g.ow, i), plane = fdiv_q(g.oh, q);
        int ox = (int)(i - q * g.ow.d), oy = (int)(q - plane * g.oh.d);
        const T *xp = x + (size_t)plane * (size_t)g.ih * (size_t)g.iw;
        int y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
        float best = -INFINITY, sum = 0;
        int cnt = 0;
        for (int a = 0; a < g.kh; a++) {
            int yy = y0 + a * g.dh;
            if (yy < 0 || yy >= g.ih) continue;
            const T *row = xp + (size_t)yy * g.iw;
            for (int b = 0; b < g.kw; b++) {
                int xx = x0 + b * g.dw;
                if (xx < 0 || xx >= g.iw) continue;
                float v = to_f(row[xx]);
                if (v != v) best = v; /* NaN wins */
                else if (best == best && v > best) best = v;
                sum += v;
                cnt++;
            }
        }
        float res;
        if (g.is_max) res = cnt ? best : -INFINITY;
        else {
            int div = cnt;
            if (g.include_pad) { /* taps inside the padded extent [-pads_begin, in + pads_end) */
                int ch = 0, cw = 0;
                for (int a = 0; a < g.kh; a++) ch += y0 + a * g.dh < g.ih + g.peh;
                for (int b = 0; b < g.kw; b++) cw += x0 + b * g.dw < g.iw + g.pew;
                div = ch * cw;
            }
            res = div ? sum / (float)div : 0.0f;
        }
        y[i] = from_f<T>(res);
    }
}

/* 2-D MaxPool on int8 / uint8 (QDQ models after the QDQ pass: ResNet-50's int8 MaxPool took 1.7 ms at batch 256
 * in the general kernel's 64-bit index math and doubles): integer compares, the general kernel's result (the
 * type's lowest value where every tap is padding). */
template <typename T> __global__ void maxpool2d_8_k(const T *x, T *y, uint32_t total, pool2d_geo g) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        uint32_t q = fdiv_q(g.ow, i), plane = fdiv_q(g.oh, q);
        int ox = (int)(i - q * g.ow.d), oy = (int)(q - plane * g.oh.d);
        const T *xp = x + (size_t)plane * (size_t)g.ih * (size_t)g.iw;
        int y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
        int best = (T)-1 < (T)0 ? -128 : 0;
        for (int a = 0; a < g.kh; a++) {
            int yy = y0 + a * g.dh;
            if (yy < 0 || yy >= g.ih) continue;
            const T *row = xp + (size_t)yy * g.iw;
            for (int b = 0; b < g.kw; b++) {
                int xx = x0 + b * g.dw;
                if (xx < 0 || xx >= g.iw) continue;
                int v = row[xx];
                best = v > best ? v : best;
            }
        }
        y[i] = (T)best;
    }
}

static int pool2d_fits(const pool_geo &g, int64_t total) {
    if (g.ns != 2 || total > INT32_MAX || g.in[0] * g.in[1] > INT32_MAX) return 0;
    for (int d = 0; d < 2; d++) {
        int64_t v[] = {g.in[d], g.out[d], g.k[d], g.s[d], g.d[d], g.pb[d], g.pe[d]};
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++)
            if (v[j] < 0 || v[j] > (1 << 20)) return 0;
        /* every position the kernel computes stays in int */
        if (g.out[d] * g.s[d] + g.k[d] * g.d[d] + g.in[d] + g.pb[d] + g.pe[d] > INT32_MAX) return 0;
    }
    return 1;
}

static int pool_supports(const netrun_node_desc *node, char *reason, size_t size);

/* ---- float16 NHWC (the CUDA region pass, params.nhwc): one thread per output element with the channel
 * fastest, so a warp reads 32 neighbouring channels of one tap; same taps and divisors as pool2d_k ---- */
__global__ void pool2d_nhwc_k(const __half *x, __half *y, int64_t total, int64_t c, pool2d_geo g) {
    GRID_LOOP(i, total) {
        int64_t ci = i % c, r = i / c;
        int ox = (int)(r % g.ow.d);
        r /= g.ow.d;
        int oy = (int)(r % g.oh.d);
        int64_t n = r / g.oh.d;
        const __half *xp = x + n * g.ih * g.iw * c + ci;
        int y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
        float best = -INFINITY, sum = 0;
        int cnt = 0;
        for (int a = 0; a < g.kh; a++) {
            int yy = y0 + a * g.dh;
            if (yy < 0 || yy >= g.ih) continue;
            for (int b = 0; b < g.kw; b++) {
                int xx = x0 + b * g.dw;
                if (xx < 0 || xx >= g.iw) continue;
                float v = __half2float(xp[((int64_t)yy * g.iw + xx) * c]);
                if (v != v) best = v; /* NaN wins */
                else if (best == best && v > best) best = v;
                sum += v;
                cnt++;
            }
        }
        float res;
        if (g.is_max) res = cnt ? best : -INFINITY;
        else {
            int div = cnt;
            if (g.include_pad) {
                int ch = 0, cw = 0;
                for (int a = 0; a < g.kh; a++) ch += y0 + a * g.dh < g.ih + g.peh;
                for (int b = 0; b < g.kw; b++) cw += x0 + b * g.dw < g.iw + g.pew;
                div = ch * cw;
            }
            res = div ? sum / (float)div : 0.0f;
        }
        y[i] = __float2half_rn(res);
    }
}

/* The same on channel pairs (half2; C even, 32-bit indices, fdiv32 instead of 64-bit divisions): at batch 256
 * ResNet-50's 64 x 112x112 MaxPool took 1.07 ms one element per thread. Per-lane semantics as above. */
__global__ void pool2d_nhwc2_k(const __half2 *x, __half2 *y, uint32_t total, fdiv32 c2, pool2d_geo g) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        uint32_t r = fdiv_q(c2, i), ci = i - r * c2.d;
        uint32_t r2 = fdiv_q(g.ow, r), ox = r - r2 * g.ow.d;
        uint32_t n = fdiv_q(g.oh, r2), oy = r2 - n * g.oh.d;
        const __half2 *xp = x + (size_t)n * (uint32_t)g.ih * (uint32_t)g.iw * c2.d + ci;
        int y0 = (int)oy * g.sh - g.ph, x0 = (int)ox * g.sw - g.pw;
        float best[2] = {-INFINITY, -INFINITY}, sum[2] = {0, 0};
        int cnt = 0;
        for (int a = 0; a < g.kh; a++) {
            int yy = y0 + a * g.dh;
            if (yy < 0 || yy >= g.ih) continue;
            for (int b = 0; b < g.kw; b++) {
                int xx = x0 + b * g.dw;
                if (xx < 0 || xx >= g.iw) continue;
                float2 v2 = __half22float2(xp[((uint32_t)yy * (uint32_t)g.iw + (uint32_t)xx) * c2.d]);
                float v[2] = {v2.x, v2.y};
                for (int l = 0; l < 2; l++) {
                    if (v[l] != v[l]) best[l] = v[l]; /* NaN wins */
                    else if (best[l] == best[l] && v[l] > best[l]) best[l] = v[l];
                    sum[l] += v[l];
                }
                cnt++;
            }
        }
        float res[2];
        int div = cnt;
        if (!g.is_max && g.include_pad) {
            int ch = 0, cw = 0;
            for (int a = 0; a < g.kh; a++) ch += y0 + a * g.dh < g.ih + g.peh;
            for (int b = 0; b < g.kw; b++) cw += x0 + b * g.dw < g.iw + g.pew;
            div = ch * cw;
        }
        for (int l = 0; l < 2; l++)
            res[l] = g.is_max ? (cnt ? best[l] : -INFINITY) : (div ? sum[l] / (float)div : 0.0f);
        y[i] = __floats2half2_rn(res[0], res[1]);
    }
}

/* GlobalAveragePoolNHWC: y[n, c] = mean over the plane of x[n, :, c]; a thread per (n, c), float32 sums; the
 * threads of a warp read neighbouring channels. */
__global__ void gap_nhwc_k(const __half *x, __half *y, int64_t total, int64_t c, int64_t hw) {
    GRID_LOOP(i, total) {
        int64_t ci = i % c, n = i / c;
        const __half *xp = x + n * hw * c + ci;
        float acc = 0;
        for (int64_t q = 0; q < hw; q++) acc += __half2float(xp[q * c]);
        y[i] = __float2half_rn(acc / (float)hw);
    }
}

/* Large planes with few channels (EfficientNet's squeeze-excite pools: 112x112 x 32 at batch 1 would give 32
 * threads of 12,544 loads each): blocks of 32 channels x 8 rows over one slice of the plane write float32
 * partial sums [split][N][C] into the workspace, a second kernel adds the slices (deterministic, no atomics). */
#define GAP_CH 32
#define GAP_ROWS 8
__global__ void gap_nhwc_part_k(const __half *x, float *part, int64_t c, int64_t hw, int64_t n_img, int splits) {
    __shared__ float sh[GAP_ROWS][GAP_CH + 1];
    int64_t ci = (int64_t)blockIdx.x * GAP_CH + threadIdx.x, n = blockIdx.y;
    int64_t per = (hw + splits - 1) / splits, q0 = (int64_t)blockIdx.z * per, q1 = q0 + per < hw ? q0 + per : hw;
    float acc = 0;
    if (ci < c)
        for (int64_t q = q0 + threadIdx.y; q < q1; q += GAP_ROWS) acc += __half2float(x[(n * hw + q) * c + ci]);
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && ci < c) {
        float s = 0;
        for (int r = 0; r < GAP_ROWS; r++) s += sh[r][threadIdx.x];
        part[((int64_t)blockIdx.z * n_img + n) * c + ci] = s;
    }
}

__global__ void gap_nhwc_fin_k(const float *part, __half *y, int64_t total, int splits, float inv) {
    GRID_LOOP(i, total) {
        float s = 0;
        for (int k = 0; k < splits; k++) s += part[k * total + i];
        y[i] = __float2half_rn(s * inv);
    }
}

/* Channels a multiple of 8 (up to 2048): a block of 256 threads walks one slice of one image's plane, each
 * thread 8 channels of a pixel as one 16-byte load, so a pass reads 4 KB in a row; the threads of a channel group
 * are summed through shared memory. Splits 1 writes float16 means, else float32 partial sums like
 * gap_nhwc_part_k. At batch 256 the 32-channel layouts gave gap_nhwc_k a thread per (image, channel) walking
 * 12,544 pixels 2 bytes at a time (EfficientNet-B0: 17 pools, 2.1 ms). */
#define GAP_VT 256
__global__ void gap_nhwc_vec_k(const __half *x, __half *y, float *part, int64_t c, int64_t hw, int64_t n_img,
                               int splits, float inv) {
    __shared__ float sh[GAP_VT][9];
    const int cv = (int)(c / 8), rows = GAP_VT / cv, t = threadIdx.x, col = t % cv, row = t / cv;
    const int64_t n = blockIdx.x;
    const int64_t per = (hw + splits - 1) / splits, q0 = (int64_t)blockIdx.y * per, q1 = q0 + per < hw ? q0 + per : hw;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row < rows) {
        const uint4 *xp = (const uint4 *)(x + n * hw * c) + col;
        for (int64_t q = q0 + row; q < q1; q += rows) {
            union { uint4 u; __half2 h[4]; } v;
            v.u = xp[q * cv];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const float2 f = __half22float2(v.h[k]);
                acc[2 * k] += f.x;
                acc[2 * k + 1] += f.y;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < 8; k++) sh[t][k] = acc[k];
    __syncthreads();
    if (t < cv) {
        float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int r = 0; r < rows; r++)
#pragma unroll
            for (int k = 0; k < 8; k++) sum[k] += sh[r * cv + t][k];
        for (int k = 0; k < 8; k++) {
            const int64_t o = n * c + 8 * t + k;
            if (splits == 1) y[o] = __float2half_rn(sum[k] * inv);
            else part[(int64_t)blockIdx.y * n_img * c + o] = sum[k];
        }
    }
}

/* Slices of the plane: enough blocks to fill the GPU about twice, each slice at least 8 rows, at most 64. */
static int gap_splits(int64_t n, int64_t c, int64_t hw) {
    if (n < 1 || n > 65535 || c < 1 || hw < 1) return 0;
    int64_t base = n * ((c + GAP_CH - 1) / GAP_CH), want = (264 + base - 1) / base, most = (hw + GAP_ROWS - 1) / GAP_ROWS;
    if (want > most) want = most;
    if (want > 64) want = 64;
    return want < 2 ? 0 : (int)want;
}

extern "C" netrun_status cuda_gap_nhwc_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    (void)ctx;
    *state = NULL;
    *ws = 0;
    const netrun_value_desc *x = &node->inputs[0];
    if (x->rank == 4 && x->dims[0] > 0 && x->dims[1] > 0 && x->dims[2] > 0 && x->dims[3] > 0) {
        int sp = gap_splits(x->dims[0], x->dims[1], x->dims[2] * x->dims[3]);
        *ws = (size_t)sp * (size_t)x->dims[0] * (size_t)x->dims[1] * 4;
    }
    return NETRUN_OK;
}

extern "C" netrun_status cuda_gap_nhwc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (X->rank != 4 || X->dtype != NETRUN_DTYPE_FLOAT16 || cuda_count(Y) != X->dims[0] * X->dims[1])
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda GlobalAveragePoolNHWC: needs 4-D float16 X, [N,C,1,1] Y");
    int64_t total = X->dims[0] * X->dims[1], hw = X->dims[2] * X->dims[3];
    if (total == 0) return NETRUN_OK;
    if (hw == 0) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda GlobalAveragePoolNHWC: empty planes");
    int sp = gap_splits(X->dims[0], X->dims[1], hw);
    const int64_t c = X->dims[1];
    if (c % 8 == 0 && c <= 8 * GAP_VT && X->dims[0] <= INT32_MAX && ((uintptr_t)X->data & 15) == 0 &&
        (!sp || (args->workspace && (size_t)sp * (size_t)total * 4 <= args->workspace_size))) {
        const int splits = sp ? sp : 1;
        float *part = sp ? (float *)cuda_workspace_address(args->workspace) : NULL;
        const dim3 grid((unsigned)X->dims[0], (unsigned)splits);
        gap_nhwc_vec_k<<<grid, GAP_VT, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, part, c, hw,
                                                         X->dims[0], splits, 1.0f / (float)hw);
        netrun_status s = cuda_check_launch("GlobalAveragePoolNHWC");
        if (s != NETRUN_OK || !sp) return s;
        gap_nhwc_fin_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(part, (__half *)Y->data, total, sp,
                                                                            1.0f / (float)hw);
        return cuda_check_launch("GlobalAveragePoolNHWC");
    }
    if (sp && args->workspace && (size_t)sp * (size_t)total * 4 <= args->workspace_size) {
        float *part = (float *)cuda_workspace_address(args->workspace);
        dim3 grid((unsigned)((X->dims[1] + GAP_CH - 1) / GAP_CH), (unsigned)X->dims[0], (unsigned)sp);
        gap_nhwc_part_k<<<grid, dim3(GAP_CH, GAP_ROWS), 0, ctx->stream>>>((const __half *)X->data, part, X->dims[1], hw,
                                                                         X->dims[0], sp);
        netrun_status s = cuda_check_launch("GlobalAveragePoolNHWC (slices)");
        if (s != NETRUN_OK) return s;
        gap_nhwc_fin_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(part, (__half *)Y->data, total, sp,
                                                                            1.0f / (float)hw);
        return cuda_check_launch("GlobalAveragePoolNHWC");
    }
    gap_nhwc_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, total,
                                                                    X->dims[1], hw);
    return cuda_check_launch("GlobalAveragePoolNHWC");
}

static int is_nhwc(const netrun_node_desc *node) {
    const netrun_pool_params *p = (const netrun_pool_params *)node->params;
    return p && node->params_size >= sizeof *p && p->nhwc;
}

/* NHWC float16 pooling: 2-D, no Indices, geometry within pool2d_fits. */
static int nhwc_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_pool_params *p = (const netrun_pool_params *)node->params;
    if (cuda_main_dtype(node) != NETRUN_DTYPE_FLOAT16 || p->n_spatial != 2 || node->inputs[0].rank != 4 ||
        (node->n_outputs > 1 && node->outputs[1].name && *node->outputs[1].name))
        return cuda_refuse(reason, size, "NHWC pooling needs float16, 2-D, no Indices");
    return 1;
}

/* ---- general kernel: dims padded to 3 (leading 1s), as the CPU backend's pool loop. MaxPool: strictly
 * greater wins (the first maximum; NaN skipped) starting from the type's lowest value, padded taps ignored;
 * Indices are flat indices into X (storage_order 1: the spatial dims column major). LpPool: (sum |x|^p)^(1/p)
 * over the taps inside the input (padded taps are zeros), in double. ---- */
struct gpool_geo {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
    int64_t in_size, out_size;
    int is_max, storage_order;
    int64_t lp;
    double lowest;
};

template <typename T> __device__ __forceinline__ double pd(T v) {
    if constexpr (sizeof(T) == 2 && !std::is_integral<T>::value) return (double)to_f(v);
    else return (double)v;
}
template <typename T> __device__ __forceinline__ T pt(double v) {
    if constexpr (sizeof(T) == 2 && !std::is_integral<T>::value) return from_f<T>((float)v);
    else return (T)v;
}

__device__ __forceinline__ double lp_pow(double v, int64_t p) {
    double a = fabs(v);
    return p == 1 ? a : p == 2 ? a * a : pow(a, (double)p);
}

template <typename T> __global__ void pool_gen_k(const T *x, T *y, int64_t *ind, int64_t total, gpool_geo g) {
    GRID_LOOP(i, total) {
        int64_t ow = i % g.out[2], r = i / g.out[2];
        int64_t oh = r % g.out[1];
        r /= g.out[1];
        int64_t od = r % g.out[0], pl = r / g.out[0];
        const T *xp = x + pl * g.in_size;
        int64_t d0 = od * g.s[0] - g.pb[0], h0 = oh * g.s[1] - g.pb[1], w0 = ow * g.s[2] - g.pb[2];
        double best = g.lowest, sum = 0;
        int64_t best_i = -1;
        for (int64_t kd = 0; kd < g.k[0]; kd++) {
            int64_t id = d0 + kd * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; kh++) {
                int64_t ih = h0 + kh * g.d[1];
                if (ih < 0 || ih >= g.in[1]) continue;
                for (int64_t kw = 0; kw < g.k[2]; kw++) {
                    int64_t iw = w0 + kw * g.d[2];
                    if (iw < 0 || iw >= g.in[2]) continue;
                    int64_t xi = (id * g.in[1] + ih) * g.in[2] + iw;
                    double v = pd(xp[xi]);
                    if (g.is_max) {
                        if (v > best) {
                            best = v;
                            best_i = xi;
                        }
                    } else sum += lp_pow(v, g.lp);
                }
            }
        }
        if (g.is_max) {
            y[i] = pt<T>(best);
            if (ind) {
                int64_t bi = best_i < 0 ? 0 : best_i;
                if (g.storage_order) {
                    int64_t bw = bi % g.in[2], bh = (bi / g.in[2]) % g.in[1], bd = bi / (g.in[2] * g.in[1]);
                    bi = (bw * g.in[1] + bh) * g.in[0] + bd;
                }
                ind[i] = pl * g.in_size + bi;
            }
        } else {
            int64_t p = g.lp;
            y[i] = pt<T>(p == 1 ? sum : p == 2 ? sqrt(sum) : pow(sum, 1.0 / (double)p));
        }
    }
}

static netrun_status pool_gen_run(cuda_context *ctx, const netrun_kernel_args *args, int is_max) {
    const netrun_pool_params *p = (const netrun_pool_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (!p) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda pool: missing params");
    int ns = p->n_spatial;
    if (ns < 1 || ns > 3 || X->rank != ns + 2 || Y->rank != ns + 2)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda pool: rank");
    gpool_geo g;
    memset(&g, 0, sizeof g);
    for (int d = 0; d < 3; d++) {
        g.in[d] = g.out[d] = g.k[d] = g.s[d] = g.d[d] = 1;
        g.pb[d] = 0;
    }
    g.in_size = g.out_size = 1;
    for (int d = 0; d < ns; d++) {
        int q = 3 - ns + d;
        g.in[q] = X->dims[2 + d];
        g.out[q] = Y->dims[2 + d];
        g.k[q] = p->kernel[d];
        g.s[q] = p->strides[d];
        g.d[q] = p->dilations[d] > 0 ? p->dilations[d] : 1;
        g.pb[q] = p->pads_begin[d];
        g.in_size *= g.in[q];
        g.out_size *= g.out[q];
    }
    g.is_max = is_max;
    g.storage_order = p->storage_order;
    g.lp = p->p;
    if (!is_max && g.lp < 1) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda LpPool: p = %lld", (long long)g.lp);
    int64_t total = cuda_count(Y);
    if (total == 0) return NETRUN_OK;
    int64_t *ind = NULL;
    if (is_max && args->n_outputs > 1 && args->outputs[1].rank >= 0 && args->outputs[1].data) {
        if (cuda_count(&args->outputs[1]) != total)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda MaxPool: Indices shape differs from Y");
        ind = (int64_t *)args->outputs[1].data;
    }
    switch (X->dtype) {
    case NETRUN_DTYPE_INT8: g.lowest = -128; break;
    case NETRUN_DTYPE_UINT8: g.lowest = 0; break;
    case NETRUN_DTYPE_DOUBLE: g.lowest = -DBL_MAX; break;
    default: g.lowest = -FLT_MAX; break;
    }
    unsigned b = cuda_blocks(total);
#define GEN pool_gen_k<E><<<b, CUDA_THREADS, 0, ctx->stream>>>((const E *)X->data, (E *)Y->data, ind, total, g)
    switch (X->dtype) {
    DT_FLOATS(GEN)
    DT_CASE(INT8, int8_t, GEN)
    DT_CASE(UINT8, uint8_t, GEN)
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda pool: dtype %s", cuda_dtype_name(X->dtype));
    }
#undef GEN
    return cuda_check_launch(is_max ? "MaxPool" : "LpPool");
}

static int pool_float_type(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16 || t == NETRUN_DTYPE_BFLOAT16 || t == NETRUN_DTYPE_DOUBLE;
}

static int has_indices(const netrun_node_desc *node) {
    return node->n_outputs > 1 && node->outputs[1].name && *node->outputs[1].name;
}

static int gen_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = cuda_main_dtype(node);
    int is_max = !strcmp(node->op_type, "MaxPool");
    int ok = pool_float_type(t) || (is_max && (t == NETRUN_DTYPE_INT8 || t == NETRUN_DTYPE_UINT8));
    if (!ok) return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    const netrun_pool_params *p = (const netrun_pool_params *)node->params;
    if (!p || p->n_spatial < 1 || p->n_spatial > 3) return cuda_refuse(reason, size, "1-3 spatial dims only");
    if (!is_max && p->p < 1) return cuda_refuse(reason, size, "LpPool p = %lld", (long long)p->p);
    return 1;
}

/* MaxPool: the fast float kernels unless Indices or another dtype ask for the general one. */
static int maxpool_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (is_nhwc(node)) return nhwc_supports(node, reason, size);
    netrun_dtype t = cuda_main_dtype(node);
    if (has_indices(node) || (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)) return gen_supports(node, reason, size);
    return pool_supports(node, reason, size);
}

static netrun_status lppool_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    return pool_gen_run(ctx, args, 0);
}

static int pool_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = cuda_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    const netrun_pool_params *p = (const netrun_pool_params *)node->params;
    if (!strncmp(node->op_type, "Global", 6)) return 1;
    if (!p || p->n_spatial < 1 || p->n_spatial > 3) return cuda_refuse(reason, size, "1-3 spatial dims only");
    if (is_nhwc(node)) return nhwc_supports(node, reason, size);
    if (node->n_outputs > 1 && node->outputs[1].name && *node->outputs[1].name)
        return cuda_refuse(reason, size, "MaxPool Indices output");
    return 1;
}

static netrun_status pool_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_pool_params *p = (const netrun_pool_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int with_indices = args->n_outputs > 1 && args->outputs[1].rank >= 0 && args->outputs[1].data;
    /* 8-bit 2-D MaxPool: maxpool2d_8_k where the 32-bit geometry fits, else the general kernel */
    int fast8 = (intptr_t)state == 1 && !with_indices && !p->nhwc && p->n_spatial == 2 &&
                (X->dtype == NETRUN_DTYPE_INT8 || X->dtype == NETRUN_DTYPE_UINT8);
    if ((intptr_t)state == 1 && (with_indices || (X->dtype != NETRUN_DTYPE_FLOAT && X->dtype != NETRUN_DTYPE_FLOAT16 && !fast8)))
        return pool_gen_run(ctx, args, 1);
    int64_t total = cuda_count(Y);
    if (total == 0) return NETRUN_OK;
    pool_geo g;
    memset(&g, 0, sizeof g);
    g.ns = p->n_spatial;
    if (X->rank != g.ns + 2 || Y->rank != g.ns + 2) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda pool: rank");
    for (int d = 0; d < g.ns; d++) {
        g.in[d] = X->dims[2 + d];
        g.out[d] = Y->dims[2 + d];
        g.k[d] = p->kernel[d];
        g.s[d] = p->strides[d];
        g.d[d] = p->dilations[d] > 0 ? p->dilations[d] : 1;
        g.pb[d] = p->pads_begin[d];
        g.pe[d] = p->pads_end[d];
    }
    g.is_max = (intptr_t)state == 1;
    g.include_pad = p->count_include_pad;
    if (fast8 && !pool2d_fits(g, total)) return pool_gen_run(ctx, args, 1);
    if (p->nhwc) { /* float16 channels last (the region pass): Y and X dims are the logical NCHW ones */
        if (g.ns != 2 || X->dtype != NETRUN_DTYPE_FLOAT16 || !pool2d_fits(g, Y->dims[0] * Y->dims[2] * Y->dims[3]))
            return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda pool: NHWC needs float16 2-D within 32-bit geometry");
    }
    if (pool2d_fits(g, total) || p->nhwc) {
        pool2d_geo q;
        memset(&q, 0, sizeof q);
        q.oh = make_fdiv((uint32_t)g.out[0]);
        q.ow = make_fdiv((uint32_t)g.out[1]);
        q.ih = (int)g.in[0];
        q.iw = (int)g.in[1];
        q.kh = (int)g.k[0];
        q.kw = (int)g.k[1];
        q.sh = (int)g.s[0];
        q.sw = (int)g.s[1];
        q.dh = (int)g.d[0];
        q.dw = (int)g.d[1];
        q.ph = (int)g.pb[0];
        q.pw = (int)g.pb[1];
        q.peh = (int)g.pe[0];
        q.pew = (int)g.pe[1];
        q.is_max = g.is_max;
        q.include_pad = g.include_pad;
        if (fast8) {
            unsigned b = cuda_blocks32(total, CUDA_THREADS);
            if (X->dtype == NETRUN_DTYPE_INT8)
                maxpool2d_8_k<int8_t><<<b, CUDA_THREADS, 0, ctx->stream>>>((const int8_t *)X->data, (int8_t *)Y->data,
                                                                          (uint32_t)total, q);
            else
                maxpool2d_8_k<uint8_t><<<b, CUDA_THREADS, 0, ctx->stream>>>((const uint8_t *)X->data,
                                                                           (uint8_t *)Y->data, (uint32_t)total, q);
            return cuda_check_launch("MaxPool 8-bit");
        }
        if (p->nhwc && X->dims[1] % 2 == 0 && total / 2 < INT32_MAX && ((uintptr_t)X->data & 3) == 0 &&
            ((uintptr_t)Y->data & 3) == 0 && (int64_t)q.ih * q.iw * X->dims[1] * X->dims[0] < INT32_MAX) {
            int64_t t2 = total / 2;
            pool2d_nhwc2_k<<<cuda_blocks32(t2, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
                (const __half2 *)X->data, (__half2 *)Y->data, (uint32_t)t2, make_fdiv((uint32_t)(X->dims[1] / 2)), q);
            return cuda_check_launch("pool NHWC (channel pairs)");
        }
        if (p->nhwc) {
            pool2d_nhwc_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data,
                                                                               total, X->dims[1], q);
            return cuda_check_launch("pool NHWC");
        }
        unsigned b = cuda_blocks32(total, CUDA_THREADS);
        if (X->dtype == NETRUN_DTYPE_FLOAT)
            pool2d_k<float><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, (uint32_t)total, q);
        else
            pool2d_k<__half><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, (uint32_t)total, q);
        return cuda_check_launch("pool");
    }
    if (X->dtype == NETRUN_DTYPE_FLOAT)
        pool_k<float><<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, total, g);
    else
        pool_k<__half><<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, total, g);
    return cuda_check_launch("pool");
}

static netrun_status maxpool_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(intptr_t)1;
    return NETRUN_OK;
}

template <typename T> __global__ void global_pool_k(const T *x, T *y, int64_t plane, int is_max) {
    __shared__ float sh[32];
    const T *xp = x + (int64_t)blockIdx.x * plane;
    float acc = is_max ? -INFINITY : 0.0f;
    int nan = 0;
    for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) {
        float v = to_f(xp[i]);
        if (v != v) nan = 1;
        acc = is_max ? fmaxf(acc, v) : acc + v;
    }
    float r = is_max ? block_max(acc, sh) : block_sum(acc, sh) / (float)plane;
    __syncthreads();
    float anynan = block_sum((float)nan, sh);
    if (threadIdx.x == 0) y[blockIdx.x] = from_f<T>(anynan > 0 && is_max ? NAN : r);
}

/* Small planes (the squeeze-excite pools at 7x7 .. 28x28): one warp per plane, 8 planes per block, NaN
 * propagated through the max as in global_pool_k. */
__device__ __forceinline__ float gp_comb(float a, float b, int is_max) {
    return is_max ? ((a != a || b != b) ? NAN : fmaxf(a, b)) : a + b;
}

template <typename T> __global__ void global_pool_warp_k(const T *x, T *y, uint32_t planes, uint32_t plane, int is_max) {
    uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= planes) return; /* the whole warp: w is the same for its 32 lanes */
    const T *xp = x + (size_t)w * plane;
    float acc = is_max ? -INFINITY : 0.0f;
    for (uint32_t i = lane; i < plane; i += 32) acc = gp_comb(acc, to_f(xp[i]), is_max);
    for (int o = 16; o > 0; o >>= 1) acc = gp_comb(acc, __shfl_xor_sync(0xffffffffu, acc, o), is_max);
    if (lane == 0) y[w] = from_f<T>(is_max ? acc : acc / (float)plane);
}

static netrun_status global_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (X->rank < 2) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda global pool: rank < 2");
    int64_t planes = X->dims[0] * X->dims[1], plane = 1;
    for (int i = 2; i < X->rank; i++) plane *= X->dims[i];
    if (planes == 0) return NETRUN_OK;
    if (plane == 0 || planes > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda global pool: empty or huge planes");
    int is_max = (intptr_t)state == 1, threads = plane >= 1024 ? 512 : plane >= 128 ? 128 : 32;
    if (plane <= 1024 && planes <= INT32_MAX / 32) {
        unsigned b = (unsigned)((planes + 7) / 8);
        if (X->dtype == NETRUN_DTYPE_FLOAT)
            global_pool_warp_k<float><<<b, 256, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data,
                                                                   (uint32_t)planes, (uint32_t)plane, is_max);
        else
            global_pool_warp_k<__half><<<b, 256, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data,
                                                                    (uint32_t)planes, (uint32_t)plane, is_max);
        return cuda_check_launch("global pool");
    }
    if (X->dtype == NETRUN_DTYPE_FLOAT)
        global_pool_k<float><<<(unsigned)planes, threads, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, plane, is_max);
    else
        global_pool_k<__half><<<(unsigned)planes, threads, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, plane, is_max);
    return cuda_check_launch("global pool");
}

extern "C" const cuda_op cuda_ops_pool[] = {
    {"MaxPool", CUDA_FLOAT_DTYPES | CUDA_DT(BFLOAT16) | CUDA_DT(DOUBLE) | CUDA_DT(INT8) | CUDA_DT(UINT8),
     "1-3 spatial dims; dilations, ceil_mode, Indices (storage_order)", maxpool_supports, maxpool_create, pool_run, NULL},
    {"LpPool", CUDA_FLOAT_DTYPES | CUDA_DT(BFLOAT16) | CUDA_DT(DOUBLE), "1-3 spatial dims; dilations, ceil_mode; p >= 1",
     gen_supports, NULL, lppool_run, NULL},
    {"AveragePool", CUDA_FLOAT_DTYPES, "1-3 spatial dims; dilations, ceil_mode, count_include_pad", pool_supports,
     NULL, pool_run, NULL},
    {"GlobalAveragePool", CUDA_FLOAT_DTYPES, "", pool_supports, NULL, global_run, NULL},
    {"GlobalMaxPool", CUDA_FLOAT_DTYPES, "", pool_supports, maxpool_create, global_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
