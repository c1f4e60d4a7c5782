/* CPU kernels: pool. Direct loops over (N*C) planes on the pool's threads, geometry promoted to 3 spatial
 * dims. float, double, int8 and uint8 run natively; float16/bfloat16 are staged through float32. */
/* Let the compare-and-select loops be if-converted and vectorized: netrun never enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <float.h>
#include <stdio.h>

#include "gemm_util.h"

typedef struct pool_job {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int64_t in_size, out_size;
    const void *x;
    void *y;
    int64_t *ind;            /* MaxPool Indices, or NULL */
    int is_max, count_include_pad, storage_order;
    int64_t lp;              /* LpPool: p (> 0), else 0 */
} pool_job;

/* |v|^p for LpPool; the common p = 1, 2 avoid pow. */
static inline double lp_pow(double v, int64_t p) {
    double a = fabs(v);
    return p == 1 ? a : p == 2 ? a * a : pow(a, (double)p);
}
static inline double lp_root(double s, int64_t p) { return p == 1 ? s : p == 2 ? sqrt(s) : pow(s, 1.0 / (double)p); }

static int pool_geom(const netrun_pool_params *p, const netrun_tensor *x, const netrun_tensor *y, pool_job *j) {
    int ns = p->n_spatial;
    if (ns < 1 || ns > 3 || x->rank != ns + 2 || y->rank != x->rank) return 0;
    j->in_size = j->out_size = 1;
    for (int i = 0; i < 3; i++) {
        int s = i - (3 - ns);
        j->in[i] = s >= 0 ? x->dims[2 + s] : 1;
        j->out[i] = s >= 0 ? y->dims[2 + s] : 1;
        j->k[i] = s >= 0 ? p->kernel[s] : 1;
        j->s[i] = s >= 0 ? p->strides[s] : 1;
        j->d[i] = s >= 0 ? p->dilations[s] : 1;
        j->pb[i] = s >= 0 ? p->pads_begin[s] : 0;
        j->pe[i] = s >= 0 ? p->pads_end[s] : 0;
        j->in_size *= j->in[i];
        j->out_size *= j->out[i];
    }
    return 1;
}

/* The taps k in [*first, *end) of a window starting at `start` (tap k at start + k * dil, k < n) that fall in
 * [lo, hi): computed, not scanned, so that a hostile kernel of 2^31 taps over a 5-pixel input costs nothing
 * (the fuzzer found AveragePool spending minutes on one). */
static inline void pool_taps(int64_t start, int64_t dil, int64_t n, int64_t lo, int64_t hi, int64_t *first,
                             int64_t *end) {
    int64_t a = start < lo ? (lo - start + dil - 1) / dil : 0;
    int64_t b = start >= hi ? 0 : (hi - 1 - start) / dil + 1;
    if (b > n) b = n;
    *first = a;
    *end = b > a ? b : a;
}

/* Taps of the window starting at (d0, h0, w0) that lie inside the padded input. */
static int64_t pool_padded_count(const pool_job *j, int64_t d0, int64_t h0, int64_t w0) {
    int64_t start[3] = {d0, h0, w0}, n = 1;
    for (int i = 0; i < 3; i++) {
        int64_t a, b;
        pool_taps(start[i], j->d[i], j->k[i], -j->pb[i], j->in[i] + j->pe[i], &a, &b);
        n *= b - a;
    }
    return n;
}

/* Max ignores padded taps; the average divides by the taps inside the input, or with count_include_pad by the
 * taps inside the padded extent [-pads_begin, in + pads_end) (ceil_mode windows are clipped to it). */
#define POOL_PLANES(NAME, T, LOWEST)                                                                          \
    static void NAME(void *arg, int64_t p0, int64_t p1) {                                                     \
        const pool_job *j = arg;                                                                              \
        for (int64_t pl = p0; pl < p1; pl++) {                                                                \
            const T *x = (const T *)j->x + pl * j->in_size;                                                   \
            T *y = (T *)j->y + pl * j->out_size;                                                              \
            int64_t *ind = j->ind ? j->ind + pl * j->out_size : NULL;                                         \
            int64_t oi = 0;                                                                                   \
            for (int64_t od = 0; od < j->out[0]; od++)                                                        \
                for (int64_t oh = 0; oh < j->out[1]; oh++)                                                    \
                    for (int64_t ow = 0; ow < j->out[2]; ow++, oi++) {                                        \
                        int64_t d0 = od * j->s[0] - j->pb[0], h0 = oh * j->s[1] - j->pb[1];                   \
                        int64_t w0 = ow * j->s[2] - j->pb[2];                                                 \
                        T best = LOWEST;                                                                      \
                        int64_t best_i = -1, cnt = 0, cnt_pad = 0;                                            \
                        double sum = 0;                                                                       \
                        int64_t kd0, kd1, kh0, kh1, kw0, kw1; /* the taps inside the input */                 \
                        pool_taps(d0, j->d[0], j->k[0], 0, j->in[0], &kd0, &kd1);                             \
                        pool_taps(h0, j->d[1], j->k[1], 0, j->in[1], &kh0, &kh1);                             \
                        pool_taps(w0, j->d[2], j->k[2], 0, j->in[2], &kw0, &kw1);                             \
                        for (int64_t kd = kd0; kd < kd1; kd++) {                                              \
                            int64_t id = d0 + kd * j->d[0];                                                   \
                            for (int64_t kh = kh0; kh < kh1; kh++) {                                          \
                                int64_t ih = h0 + kh * j->d[1];                                               \
                                for (int64_t kw = kw0; kw < kw1; kw++) {                                      \
                                    int64_t iw = w0 + kw * j->d[2];                                           \
                                    int64_t xi = (id * j->in[1] + ih) * j->in[2] + iw;                        \
                                    T v = x[xi];                                                              \
                                    cnt++;                                                                    \
                                    if (j->is_max) { /* strictly greater: first max wins, NaN skipped */     \
                                        if (v > best) {                                                       \
                                            best = v;                                                         \
                                            best_i = xi;                                                      \
                                        }                                                                     \
                                    } else if (j->lp) {                                                       \
                                        sum += lp_pow((double)v, j->lp);                                      \
                                    } else {                                                                  \
                                        sum += (double)v;                                                     \
                                    }                                                                         \
                                }                                                                             \
                            }                                                                                 \
                        }                                                                                     \
                        if (j->is_max) {                                                                      \
                            y[oi] = best;                                                                     \
                            if (ind) {                                                                        \
                                int64_t bi = best_i < 0 ? 0 : best_i;                                         \
                                if (j->storage_order) { /* column major: first spatial dim fastest */         \
                                    int64_t bw = bi % j->in[2], bh = (bi / j->in[2]) % j->in[1];              \
                                    int64_t bd = bi / (j->in[2] * j->in[1]);                                  \
                                    bi = (bw * j->in[1] + bh) * j->in[0] + bd;                                \
                                }                                                                             \
                                ind[oi] = pl * j->in_size + bi;                                               \
                            }                                                                                 \
                        } else if (j->lp) { /* padded taps are zeros: they add nothing */                     \
                            y[oi] = (T)lp_root(sum, j->lp);                                                   \
                        } else {                                                                              \
                            if (j->count_include_pad) cnt_pad = pool_padded_count(j, d0, h0, w0);             \
                            int64_t div = j->count_include_pad ? cnt_pad : cnt;                               \
                            y[oi] = (T)(div > 0 ? sum / (double)div : 0.0);                                   \
                        }                                                                                     \
                    }                                                                                         \
        }                                                                                                     \
    }


POOL_PLANES(pool_f32, float, -FLT_MAX)

/* float 2-D MaxPool without Indices, rows up to MAXROW wide: per output row, the elementwise max of the
 * window's input rows into a row padded with -FLT_MAX (vectorizes), then the max along each window of that
 * row. Same results as pool_f32 (padded taps and NaN never win). SqueezeNet's 3x3/2 pools: 10x faster. */
#define MAXROW 4096
static int64_t maxpool2d_row(const pool_job *j) {
    int64_t need = (j->out[2] - 1) * j->s[2] + (j->k[2] - 1) * j->d[2] + 1, have = j->pb[2] + j->in[2];
    return need > have ? need : have;
}
static int maxpool2d_ok(const pool_job *j) {
    return j->is_max && !j->ind && j->in[0] == 1 && j->out[0] == 1 && j->k[0] == 1 && j->pb[2] >= 0 &&
           maxpool2d_row(j) <= MAXROW;
}
static void maxpool2d_f32(void *arg, int64_t p0, int64_t p1) {
    const pool_job *j = arg;
    float buf[MAXROW];
    const int64_t L = maxpool2d_row(j), iw = j->in[2], pw = j->pb[2], ow_n = j->out[2];
    const int64_t sw = j->s[2], dw = j->d[2], kw_n = j->k[2];
    for (int64_t i = 0; i < L; i++) buf[i] = -FLT_MAX;
    float *row = buf + pw;
    for (int64_t pl = p0; pl < p1; pl++) {
        const float *x = (const float *)j->x + pl * j->in_size;
        float *y = (float *)j->y + pl * j->out_size;
        for (int64_t oh = 0; oh < j->out[1]; oh++) {
            for (int64_t i = 0; i < iw; i++) row[i] = -FLT_MAX;
            int64_t kh0, kh1;
            pool_taps(oh * j->s[1] - j->pb[1], j->d[1], j->k[1], 0, j->in[1], &kh0, &kh1);
            for (int64_t kh = kh0; kh < kh1; kh++) {
                int64_t ih = oh * j->s[1] - j->pb[1] + kh * j->d[1];
                const float *xr = x + ih * iw;
                for (int64_t i = 0; i < iw; i++) row[i] = xr[i] > row[i] ? xr[i] : row[i];
            }
            float *yr = y + oh * ow_n;
            for (int64_t ow = 0; ow < ow_n; ow++) {
                const float *w = buf + ow * sw;
                float m = w[0];
                for (int64_t k = 1; k < kw_n; k++) m = w[k * dw] > m ? w[k * dw] : m;
                yr[ow] = m;
            }
        }
    }
}
/* float 2-D AveragePool (LpPool excluded) the same way: per output row, the sum of the window's input rows into a
 * zero-padded row (vectorizes), then the sum along each window of that row, divided by the taps inside the input
 * (or inside the padded extent with count_include_pad). Sums in float, as onnxruntime (the generic loop sums in
 * double): Inception v2's 3x3/1 average pools were a third of its time in the generic loop. */
static int avgpool2d_ok(const pool_job *j) {
    return !j->is_max && !j->lp && j->in[0] == 1 && j->out[0] == 1 && j->k[0] == 1 && j->pb[2] >= 0 &&
           maxpool2d_row(j) <= MAXROW;
}
static void avgpool2d_f32(void *arg, int64_t p0, int64_t p1) {
    const pool_job *j = arg;
    float buf[MAXROW];
    const int64_t L = maxpool2d_row(j), iw = j->in[2], pw = j->pb[2], ow_n = j->out[2];
    const int64_t sw = j->s[2], dw = j->d[2], kw_n = j->k[2];
    for (int64_t i = 0; i < L; i++) buf[i] = 0.0f;
    float *row = buf + pw;
    for (int64_t pl = p0; pl < p1; pl++) {
        const float *x = (const float *)j->x + pl * j->in_size;
        float *y = (float *)j->y + pl * j->out_size;
        for (int64_t oh = 0; oh < j->out[1]; oh++) {
            int64_t h0 = oh * j->s[1] - j->pb[1], kh0, kh1;
            pool_taps(h0, j->d[1], j->k[1], 0, j->in[1], &kh0, &kh1);
            if (kh1 > kh0) {
                const float *xr = x + (h0 + kh0 * j->d[1]) * iw;
                for (int64_t i = 0; i < iw; i++) row[i] = xr[i];
            } else {
                for (int64_t i = 0; i < iw; i++) row[i] = 0.0f;
            }
            for (int64_t kh = kh0 + 1; kh < kh1; kh++) {
                const float *xr = x + (h0 + kh * j->d[1]) * iw;
                for (int64_t i = 0; i < iw; i++) row[i] += xr[i];
            }
            float *yr = y + oh * ow_n;
            for (int64_t ow = 0; ow < ow_n; ow++) {
                const float *w = buf + ow * sw;
                float sum = 0.0f;
                for (int64_t k = 0; k < kw_n; k++) sum += w[k * dw];
                int64_t w0 = ow * sw - pw, kw0, kw1, div;
                if (j->count_include_pad) {
                    div = pool_padded_count(j, 0, h0, w0);
                } else {
                    pool_taps(w0, dw, kw_n, 0, iw, &kw0, &kw1);
                    div = (kh1 - kh0) * (kw1 - kw0);
                }
                yr[ow] = div > 0 ? sum / (float)div : 0.0f;
            }
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define POOL_AVX512 1
/* maxpool2d_f32 with AVX-512: the row max 16 floats at a time, and for stride 2 (no dilation) the window max of
 * 16 outputs at once from the even lanes of the row at offsets 0 .. k-1 (ShuffleNetV2's 3x3/2 pool). */
__attribute__((target("avx512f"))) static void maxpool2d_f32_512(void *arg, int64_t p0, int64_t p1) {
    const pool_job *j = arg;
    float buf[MAXROW + 32];
    const int64_t L = maxpool2d_row(j), iw = j->in[2], pw = j->pb[2], ow_n = j->out[2];
    const int64_t sw = j->s[2], dw = j->d[2], kw_n = j->k[2];
    for (int64_t i = 0; i < L + 32; i++) buf[i] = -FLT_MAX;
    float *row = buf + pw;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512 lowest = _mm512_set1_ps(-FLT_MAX);
    for (int64_t pl = p0; pl < p1; pl++) {
        const float *x = (const float *)j->x + pl * j->in_size;
        float *y = (float *)j->y + pl * j->out_size;
        for (int64_t oh = 0; oh < j->out[1]; oh++) {
            for (int64_t i = 0; i < iw; i += 16) {
                __mmask16 m = iw - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (iw - i)) - 1);
                _mm512_mask_storeu_ps(row + i, m, lowest);
            }
            int64_t kh0, kh1;
            pool_taps(oh * j->s[1] - j->pb[1], j->d[1], j->k[1], 0, j->in[1], &kh0, &kh1);
            for (int64_t kh = kh0; kh < kh1; kh++) {
                int64_t ih = oh * j->s[1] - j->pb[1] + kh * j->d[1];
                const float *xr = x + ih * iw;
                for (int64_t i = 0; i < iw; i += 16) { /* max_ps(x, row): a NaN in x never wins, as above */
                    __mmask16 m = iw - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (iw - i)) - 1);
                    __m512 v = _mm512_max_ps(_mm512_maskz_loadu_ps(m, xr + i), _mm512_maskz_loadu_ps(m, row + i));
                    _mm512_mask_storeu_ps(row + i, m, v);
                }
            }
            float *yr = y + oh * ow_n;
            int64_t ow = 0;
            if (sw == 2 && dw == 1) /* buf holds L + 32 floats: the last vector's reads stay inside */
                for (; ow + 16 <= ow_n && 2 * ow + kw_n - 1 + 32 <= L + 32; ow += 16) {
                    const float *w = buf + 2 * ow;
                    __m512 acc = lowest;
                    for (int64_t k = 0; k < kw_n; k++)
                        acc = _mm512_max_ps(_mm512_permutex2var_ps(_mm512_loadu_ps(w + k), even, _mm512_loadu_ps(w + k + 16)),
                                            acc);
                    _mm512_storeu_ps(yr + ow, acc);
                }
            for (; ow < ow_n; ow++) {
                const float *w = buf + ow * sw;
                float m = w[0];
                for (int64_t k = 1; k < kw_n; k++) m = w[k * dw] > m ? w[k * dw] : m;
                yr[ow] = m;
            }
        }
    }
}
#endif

POOL_PLANES(pool_f64, double, -DBL_MAX)
POOL_PLANES(pool_i8, int8_t, INT8_MIN)
POOL_PLANES(pool_u8, uint8_t, 0)

/* 8-bit 2-D MaxPool without Indices (QDQ models run DQ -> MaxPool -> Q as MaxPool on the 8-bit values): the
 * row-max scheme of maxpool2d_f32, the window step as one pass per tap over the output row so that both loops
 * are byte max over contiguous (or stride-s) runs, which the compiler vectorizes (64 lanes with AVX-512BW).
 * Padded taps hold the type's lowest value and never win, as in pool_i8 / pool_u8. ResNet-50's stem pool
 * (64x112x112, 3x3/2): 8-11 ms in pool_i8, see docs/benchmarks.md for this one. */
#define MAXPOOL2D_8(NAME, T, LOWEST, TARGET)                                                                 \
    TARGET static void NAME(void *arg, int64_t p0, int64_t p1) {                                             \
        const pool_job *j = arg;                                                                              \
        T buf[MAXROW];                                                                                        \
        const int64_t L = maxpool2d_row(j), iw = j->in[2], pw = j->pb[2], ow_n = j->out[2];                   \
        const int64_t sw = j->s[2], dw = j->d[2], kw_n = j->k[2];                                             \
        for (int64_t i = 0; i < L; i++) buf[i] = LOWEST;                                                      \
        T *row = buf + pw;                                                                                    \
        for (int64_t pl = p0; pl < p1; pl++) {                                                                \
            const T *x = (const T *)j->x + pl * j->in_size;                                                   \
            T *y = (T *)j->y + pl * j->out_size;                                                              \
            for (int64_t oh = 0; oh < j->out[1]; oh++) {                                                      \
                int64_t kh0, kh1;                                                                             \
                pool_taps(oh * j->s[1] - j->pb[1], j->d[1], j->k[1], 0, j->in[1], &kh0, &kh1);                \
                if (kh1 <= kh0)                                                                               \
                    for (int64_t i = 0; i < iw; i++) row[i] = LOWEST;                                         \
                for (int64_t kh = kh0; kh < kh1; kh++) {                                                      \
                    const T *xr = x + (oh * j->s[1] - j->pb[1] + kh * j->d[1]) * iw;                          \
                    if (kh == kh0)                                                                            \
                        for (int64_t i = 0; i < iw; i++) row[i] = xr[i];                                      \
                    else                                                                                      \
                        for (int64_t i = 0; i < iw; i++) row[i] = xr[i] > row[i] ? xr[i] : row[i];            \
                }                                                                                             \
                T *yr = y + oh * ow_n;                                                                        \
                if (sw == 1)                                                                                  \
                    for (int64_t ow = 0; ow < ow_n; ow++) yr[ow] = buf[ow];                                   \
                else                                                                                          \
                    for (int64_t ow = 0; ow < ow_n; ow++) yr[ow] = buf[ow * sw];                              \
                for (int64_t k = 1; k < kw_n; k++) {                                                          \
                    const T *w = buf + k * dw;                                                                \
                    if (sw == 1)                                                                              \
                        for (int64_t ow = 0; ow < ow_n; ow++) yr[ow] = w[ow] > yr[ow] ? w[ow] : yr[ow];       \
                    else if (sw == 2)                                                                         \
                        for (int64_t ow = 0; ow < ow_n; ow++) yr[ow] = w[2 * ow] > yr[ow] ? w[2 * ow] : yr[ow]; \
                    else                                                                                      \
                        for (int64_t ow = 0; ow < ow_n; ow++)                                                 \
                            yr[ow] = w[ow * sw] > yr[ow] ? w[ow * sw] : yr[ow];                               \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }
MAXPOOL2D_8(maxpool2d_i8, int8_t, INT8_MIN, )
MAXPOOL2D_8(maxpool2d_u8, uint8_t, 0, )
#ifdef POOL_AVX512
MAXPOOL2D_8(maxpool2d_i8_512, int8_t, INT8_MIN, __attribute__((target("avx512f,avx512bw,avx512vl"))))
MAXPOOL2D_8(maxpool2d_u8_512, uint8_t, 0, __attribute__((target("avx512f,avx512bw,avx512vl"))))
#endif

typedef struct global_job {
    const void *x;
    void *y;
    int64_t plane;
    int is_max;
} global_job;

#define GLOBAL_PLANES(NAME, T, LOWEST)                                                                        \
    static void NAME(void *arg, int64_t p0, int64_t p1) {                                                     \
        const global_job *j = arg;                                                                            \
        for (int64_t pl = p0; pl < p1; pl++) {                                                                \
            const T *x = (const T *)j->x + pl * j->plane;                                                     \
            if (j->is_max) {                                                                                  \
                T best = LOWEST;                                                                              \
                for (int64_t i = 0; i < j->plane; i++)                                                        \
                    if (x[i] > best || x[i] != x[i]) best = x[i]; /* NaN propagates */                        \
                ((T *)j->y)[pl] = best;                                                                       \
            } else {                                                                                          \
                double sum = 0;                                                                               \
                for (int64_t i = 0; i < j->plane; i++) sum += (double)x[i];                                   \
                ((T *)j->y)[pl] = (T)(j->plane ? sum / (double)j->plane : 0.0);                               \
            }                                                                                                 \
        }                                                                                                     \
    }
GLOBAL_PLANES(global_f32, float, -INFINITY)
GLOBAL_PLANES(global_f64, double, -INFINITY)

/* GlobalAveragePool float32 (EfficientNet's squeeze-excite runs it on every block): 16 double partial sums,
 * which the compiler vectorizes (one running sum is a serial chain of adds), built for AVX-512 / AVX2 /
 * baseline and picked at load like elementwise.c's loops. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NETRUN_NO_CLONES)
__attribute__((target_clones("avx512f", "arch=haswell", "default")))
#endif
static float plane_mean_f32(const float *x, int64_t n) {
    double acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += (double)x[i + l];
    double sum = 0;
    for (; i < n; i++) sum += (double)x[i];
    for (int l = 0; l < 16; l++) sum += acc[l];
    return n ? (float)(sum / (double)n) : 0.0f;
}

static void global_avg_f32(void *arg, int64_t p0, int64_t p1) {
    const global_job *j = arg;
    for (int64_t pl = p0; pl < p1; pl++) ((float *)j->y)[pl] = plane_mean_f32((const float *)j->x + pl * j->plane, j->plane);
}

static int is_half(netrun_dtype dt) { return dt == NETRUN_DTYPE_FLOAT16 || dt == NETRUN_DTYPE_BFLOAT16; }

/* Stage 16-bit input/output through float32 around fn(job). */
static netrun_status run_staged(cpu_context *ctx, netrun_dtype dt, const void **xp, void **yp, int64_t nx, int64_t ny,
                                int64_t planes, int64_t grain, cpu_range_fn fn, void *job, const char *op) {
    if (!is_half(dt)) {
        cpu_parallel_for(ctx, planes, grain, fn, job);
        return NETRUN_OK;
    }
    float *tx = NULL, *ty = cpu_alloc((size_t)ny * sizeof(float));
    void *y16 = *yp;
    *xp = gu_to_float(dt, *xp, nx, &tx);
    if (!*xp || !ty) {
        gu_free(tx);
        gu_free(ty);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory staging float16 tensors", op);
    }
    *yp = ty;
    cpu_parallel_for(ctx, planes, grain, fn, job);
    gu_from_float(dt, ty, ny, y16);
    gu_free(tx);
    gu_free(ty);
    return NETRUN_OK;
}

/* cpu.pool_avx512=0 (tests, A/B): the portable loops even where AVX-512 runs */
static int pool_use_avx512(cpu_context *ctx) {
#ifdef POOL_AVX512
    return cpu_avx512_enabled(ctx, "cpu.pool_avx512");
#else
    (void)ctx;
    return 0;
#endif
}

enum { POOL_AVG = 0, POOL_MAX = 1, POOL_LP = 2 };

static netrun_status pool_run_common(cpu_context *ctx, const netrun_kernel_args *args, int kind) {
    const char *op = kind == POOL_MAX ? "MaxPool" : kind == POOL_LP ? "LpPool" : "AveragePool";
    int is_max = kind == POOL_MAX;
    const netrun_pool_params *p = args->params;
    if (!p || args->n_inputs < 1 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: missing params or input", op);
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    pool_job j;
    memset(&j, 0, sizeof j);
    if (!pool_geom(p, X, Y, &j)) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: shapes do not match params", op);
    int64_t nx = gu_count(X), ny = gu_count(Y);
    if (nx < 0 || ny < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: tensor too large", op);
    if (ny == 0) return NETRUN_OK;
    j.x = X->data;
    j.y = Y->data;
    j.is_max = is_max;
    j.count_include_pad = p->count_include_pad;
    j.storage_order = p->storage_order;
    if (kind == POOL_LP) {
        if (p->p < 1) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LpPool: p = %lld must be >= 1", (long long)p->p);
        j.lp = p->p;
    }
    if (is_max && args->n_outputs > 1 && args->outputs[1].rank >= 0 && args->outputs[1].data)
        j.ind = args->outputs[1].data;
    int64_t planes = X->dims[0] * X->dims[1];
    int64_t work = j.out_size; /* taps per output: at most the input's extent, whatever the kernel says */
    for (int i = 0; i < 3; i++)
        if (__builtin_mul_overflow(work, j.k[i] < j.in[i] ? j.k[i] : j.in[i], &work)) work = INT64_MAX;
    int64_t grain = work >= 4096 ? 1 : 4096 / (work > 0 ? work : 1) + 1;
    cpu_range_fn fn;
    switch (X->dtype) {
    case NETRUN_DTYPE_DOUBLE: fn = pool_f64; break;
    case NETRUN_DTYPE_INT8:
    case NETRUN_DTYPE_UINT8: {
        int s8 = X->dtype == NETRUN_DTYPE_INT8;
        fn = !maxpool2d_ok(&j) ? (s8 ? pool_i8 : pool_u8) : s8 ? maxpool2d_i8 : maxpool2d_u8;
#ifdef POOL_AVX512
        if (maxpool2d_ok(&j) && pool_use_avx512(ctx) && __builtin_cpu_supports("avx512bw")) fn = s8 ? maxpool2d_i8_512 : maxpool2d_u8_512;
#endif
        break;
    }
    default:
        fn = maxpool2d_ok(&j) ? maxpool2d_f32 : avgpool2d_ok(&j) ? avgpool2d_f32 : pool_f32;
#ifdef POOL_AVX512
        if (fn == maxpool2d_f32 && X->dtype == NETRUN_DTYPE_FLOAT && pool_use_avx512(ctx)) fn = maxpool2d_f32_512;
#endif
        break;
    }
    return run_staged(ctx, X->dtype, &j.x, &j.y, nx, ny, planes, grain, fn, &j, op);
}

#define FLOAT_DTYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                      NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE))
#define MAXPOOL_DTYPES (FLOAT_DTYPES | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT8) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT8))

/* 2-D float MaxPool on nChw16c X and Y (the nChw16c pass): per output pixel, the max of 16 channels at once
 * over the window (pads skipped). Parallel over (image, channel block, output row). */
static void maxpool_blk_range(void *arg, int64_t b, int64_t e) {
    const pool_job *j = arg;
    const int64_t ih = j->in[1], iw = j->in[2], oh = j->out[1], ow = j->out[2];
    for (int64_t t = b; t < e; t++) {
        int64_t blk = t / oh, oy = t % oh;
        const float *x = (const float *)j->x + blk * ih * iw * 16;
        float *y = (float *)j->y + (blk * oh + oy) * ow * 16;
        for (int64_t ox = 0; ox < ow; ox++) {
            float acc[16];
            for (int c = 0; c < 16; c++) acc[c] = -INFINITY;
            int64_t ky0, ky1, kx0, kx1;
            pool_taps(oy * j->s[1] - j->pb[1], j->d[1], j->k[1], 0, ih, &ky0, &ky1);
            pool_taps(ox * j->s[2] - j->pb[2], j->d[2], j->k[2], 0, iw, &kx0, &kx1);
            for (int64_t ky = ky0; ky < ky1; ky++) {
                int64_t iy = oy * j->s[1] - j->pb[1] + ky * j->d[1];
                for (int64_t kx = kx0; kx < kx1; kx++) {
                    int64_t ix = ox * j->s[2] - j->pb[2] + kx * j->d[2];
                    const float *px = x + (iy * iw + ix) * 16;
                    for (int c = 0; c < 16; c++) acc[c] = px[c] > acc[c] ? px[c] : acc[c];
                }
            }
            for (int c = 0; c < 16; c++) y[ox * 16 + c] = acc[c];
        }
    }
}

/* The same with AVX-512 (one zmm per pixel of a channel block): the window's valid rows are found once per
 * output row, and the columns whose window lies inside the input run without bounds checks. max_ps(v, acc)
 * keeps acc when v is NaN, as the loop above. SqueezeNet's 64x111x111 3x3/2 ceil_mode pool at 2 threads:
 * see docs/design.md (CPU). */
#ifdef POOL_AVX512
__attribute__((target("avx512f"))) static void maxpool_blk_range512(void *arg, int64_t b, int64_t e) {
    const pool_job *j = arg;
    const int64_t ih = j->in[1], iw = j->in[2], oh = j->out[1], ow = j->out[2];
    const int64_t kh = j->k[1], kw = j->k[2], sh = j->s[1], sw = j->s[2], dh = j->d[1], dw = j->d[2];
    const int64_t ph = j->pb[1], pw = j->pb[2];
    /* columns [lo, hi) have every tap inside the row */
    int64_t lo = pw > 0 ? (pw + sw - 1) / sw : 0, hi = 0, last = iw - 1 - (kw - 1) * dw + pw;
    if (last >= 0) hi = last / sw + 1;
    if (hi > ow) hi = ow;
    if (lo > hi) lo = hi;
    for (int64_t t = b; t < e; t++) {
        int64_t blk = t / oh, oy = t % oh;
        const float *x = (const float *)j->x + blk * ih * iw * 16;
        float *y = (float *)j->y + (blk * oh + oy) * ow * 16;
        int64_t y0 = oy * sh - ph, ky0, ky1; /* taps ky0 .. ky1-1 lie inside the input */
        pool_taps(y0, dh, kh, 0, ih, &ky0, &ky1);
        for (int64_t ox = 0; ox < ow; ox++) {
            __m512 acc = _mm512_set1_ps(-INFINITY);
            int64_t x0 = ox * sw - pw;
            if (ox >= lo && ox < hi) {
                for (int64_t ky = ky0; ky < ky1; ky++) {
                    const float *px = x + ((y0 + ky * dh) * iw + x0) * 16;
                    for (int64_t kx = 0; kx < kw; kx++) acc = _mm512_max_ps(_mm512_loadu_ps(px + kx * dw * 16), acc);
                }
            } else {
                int64_t kx0, kx1;
                pool_taps(x0, dw, kw, 0, iw, &kx0, &kx1);
                for (int64_t ky = ky0; ky < ky1; ky++) {
                    const float *px = x + (y0 + ky * dh) * iw * 16;
                    for (int64_t kx = kx0; kx < kx1; kx++) acc = _mm512_max_ps(_mm512_loadu_ps(px + (x0 + kx * dw) * 16), acc);
                }
            }
            _mm512_storeu_ps(y + ox * 16, acc);
        }
    }
}
#endif

/* 2-D float AveragePool on nChw16c X and Y (the nChw16c pass): per output pixel, the sum of 16 channels at once
 * over the window's taps inside the input, divided as pool_run_common does (the taps inside the input, or with
 * count_include_pad inside the padded extent). Inception v2's 3x3/1 average pools ran plain between reorders:
 * 8 pools and 8 reorders, 9% of its run at batch 1. Sums in float, as avgpool2d_f32. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NETRUN_NO_CLONES)
__attribute__((target_clones("avx512f", "arch=haswell", "default")))
#endif
static void avgpool_blk_range(void *arg, int64_t b, int64_t e) {
    const pool_job *j = arg;
    const int64_t ih = j->in[1], iw = j->in[2], oh = j->out[1], ow = j->out[2];
    for (int64_t t = b; t < e; t++) {
        int64_t blk = t / oh, oy = t % oh;
        const float *x = (const float *)j->x + blk * ih * iw * 16;
        float *y = (float *)j->y + (blk * oh + oy) * ow * 16;
        int64_t y0 = oy * j->s[1] - j->pb[1], ky0, ky1;
        pool_taps(y0, j->d[1], j->k[1], 0, ih, &ky0, &ky1);
        for (int64_t ox = 0; ox < ow; ox++) {
            float acc[16];
            for (int c = 0; c < 16; c++) acc[c] = 0.0f;
            int64_t x0 = ox * j->s[2] - j->pb[2], kx0, kx1;
            pool_taps(x0, j->d[2], j->k[2], 0, iw, &kx0, &kx1);
            for (int64_t ky = ky0; ky < ky1; ky++) {
                const float *xr = x + (y0 + ky * j->d[1]) * iw * 16;
                for (int64_t kx = kx0; kx < kx1; kx++) {
                    const float *px = xr + (x0 + kx * j->d[2]) * 16;
                    for (int c = 0; c < 16; c++) acc[c] += px[c];
                }
            }
            int64_t div = j->count_include_pad ? pool_padded_count(j, 0, y0, x0) : (ky1 - ky0) * (kx1 - kx0);
            float inv = div > 0 ? 1.0f / (float)div : 0.0f;
            for (int c = 0; c < 16; c++) y[ox * 16 + c] = div > 0 ? acc[c] * inv : 0.0f;
        }
    }
}

static int maxpool_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_pool_params *p = node->params;
    netrun_dtype t = node->n_inputs > 0 ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED;
    if (!(MAXPOOL_DTYPES & NETRUN_DTYPE_BIT(t))) {
        snprintf(reason, size, "dtype %d not supported by the CPU MaxPool kernel", (int)t);
        return 0;
    }
    if (p && node->params_size >= sizeof *p && p->blocked &&
        (t != NETRUN_DTYPE_FLOAT || p->n_spatial != 2 || node->inputs[0].rank != 4 || node->inputs[0].dims[1] <= 0 ||
         node->inputs[0].dims[1] % 16 || (node->n_outputs > 1 && node->outputs[1].rank >= 0))) {
        snprintf(reason, size, "nChw16c MaxPool needs float32, 2-D, C a multiple of 16, no Indices");
        return 0;
    }
    if (p && node->params_size >= sizeof *p && p->nhwc) {
        snprintf(reason, size, "float16 NHWC pooling (CUDA float16 region pass) not supported by the CPU backend");
        return 0;
    }
    return 1;
}

/* AveragePool: the CUDA region pass's float16 NHWC layout is not read here. */
static int avgpool_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_pool_params *p = node->params;
    if (p && node->params_size >= sizeof *p && p->blocked &&
        (node->inputs[0].dtype != NETRUN_DTYPE_FLOAT || p->n_spatial != 2 || node->inputs[0].rank != 4 ||
         node->inputs[0].dims[1] <= 0 || node->inputs[0].dims[1] % 16)) {
        snprintf(reason, size, "nChw16c AveragePool needs float32, 2-D, C a multiple of 16");
        return 0;
    }
    if (p && node->params_size >= sizeof *p && p->nhwc) {
        snprintf(reason, size, "float16 NHWC pooling (CUDA float16 region pass) not supported by the CPU backend");
        return 0;
    }
    return 1;
}

static netrun_status maxpool_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_pool_params *p = args->params;
    if (!p || !p->blocked) return pool_run_common(ctx, args, POOL_MAX);
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    pool_job j;
    memset(&j, 0, sizeof j);
    if (X->dtype != NETRUN_DTYPE_FLOAT || X->rank != 4 || X->dims[1] % 16 || !pool_geom(p, X, Y, &j) ||
        Y->dims[0] != X->dims[0] || Y->dims[1] != X->dims[1] || (args->n_outputs > 1 && args->outputs[1].data))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MaxPool (nChw16c): needs 4-D float32, C %% 16 == 0, no Indices");
    j.x = X->data;
    j.y = Y->data;
    int64_t rows = X->dims[0] * (X->dims[1] / 16) * j.out[1];
    int64_t work = j.out[2] * 16; /* taps per output row: at most the input's extent */
    for (int i = 1; i < 3; i++)
        if (__builtin_mul_overflow(work, j.k[i] < j.in[i] ? j.k[i] : j.in[i], &work)) work = INT64_MAX;
    cpu_range_fn fn = maxpool_blk_range;
#ifdef POOL_AVX512
    if (pool_use_avx512(ctx)) fn = maxpool_blk_range512;
#endif
    if (rows > 0 && j.out[2] > 0) cpu_parallel_for(ctx, rows, work >= 4096 ? 1 : 4096 / (work > 0 ? work : 1) + 1, fn, &j);
    return NETRUN_OK;
}
static netrun_status avgpool_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_pool_params *p = args->params;
    if (!p || !p->blocked) return pool_run_common(ctx, args, POOL_AVG);
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    pool_job j;
    memset(&j, 0, sizeof j);
    if (X->dtype != NETRUN_DTYPE_FLOAT || X->rank != 4 || X->dims[1] % 16 || !pool_geom(p, X, Y, &j) ||
        Y->dims[0] != X->dims[0] || Y->dims[1] != X->dims[1])
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "AveragePool (nChw16c): needs 4-D float32, C %% 16 == 0");
    j.x = X->data;
    j.y = Y->data;
    j.count_include_pad = p->count_include_pad;
    int64_t rows = X->dims[0] * (X->dims[1] / 16) * j.out[1];
    int64_t work = j.out[2] * 16; /* taps per output row: at most the input's extent */
    for (int i = 1; i < 3; i++)
        if (__builtin_mul_overflow(work, j.k[i] < j.in[i] ? j.k[i] : j.in[i], &work)) work = INT64_MAX;
    if (rows > 0 && j.out[2] > 0)
        cpu_parallel_for(ctx, rows, work >= 4096 ? 1 : 4096 / (work > 0 ? work : 1) + 1, avgpool_blk_range, &j);
    return NETRUN_OK;
}
static netrun_status lppool_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return pool_run_common(ctx, args, POOL_LP);
}

static netrun_status global_run_common(cpu_context *ctx, const netrun_kernel_args *args, int is_max) {
    const char *op = is_max ? "GlobalMaxPool" : "GlobalAveragePool";
    if (args->n_inputs < 1 || args->n_outputs < 1) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: no input", op);
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (X->rank < 2) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: input rank < 2", op);
    int64_t nx = gu_count(X), planes = X->dims[0] * X->dims[1];
    if (nx < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: tensor too large", op);
    if (planes == 0) return NETRUN_OK;
    global_job j = {X->data, Y->data, nx / planes, is_max};
    int64_t grain = j.plane >= 4096 ? 1 : 4096 / (j.plane > 0 ? j.plane : 1) + 1;
    cpu_range_fn fn = X->dtype == NETRUN_DTYPE_DOUBLE ? global_f64 : is_max ? global_f32 : global_avg_f32;
    return run_staged(ctx, X->dtype, &j.x, &j.y, nx, planes, planes, grain, fn, &j, op);
}

static netrun_status gavg_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return global_run_common(ctx, args, 0);
}
static netrun_status gmax_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return global_run_common(ctx, args, 1);
}


/* The kernel column: the layout the nChw16c pass gave the pool. */
static void pool_describe(const netrun_node_desc *node, char *buf, size_t size) {
    const netrun_pool_params *p = node->params;
    snprintf(buf, size, "%s", p && node->params_size >= sizeof *p && p->blocked ? "nChw16c in/out" : "");
}

const cpu_op cpu_ops_pool[] = {
    {"MaxPool", "", MAXPOOL_DTYPES, "1-3 spatial dims; dilations, ceil_mode, Indices (storage_order)", maxpool_supports, NULL,
     maxpool_run, NULL, pool_describe},
    {"AveragePool", "", FLOAT_DTYPES, "1-3 spatial dims; dilations, ceil_mode, count_include_pad", avgpool_supports, NULL,
     avgpool_run, NULL, pool_describe},
    {"LpPool", "", FLOAT_DTYPES, "1-3 spatial dims; dilations, ceil_mode", NULL, NULL, lppool_run, NULL},
    {"GlobalAveragePool", "", FLOAT_DTYPES, "", NULL, NULL, gavg_run, NULL},
    {"GlobalMaxPool", "", FLOAT_DTYPES, "", NULL, NULL, gmax_run, NULL},
    {0},
};
