/* CPU depthwise 2-D convolution on NCHW (one filter per channel). Each (n, c) plane is first copied into a
 * zero-padded plane in the slot's workspace, so the inner loops need no bounds checks; then 16 output
 * columns at a time keep their sum in a register over all kernel taps, with bias, the fused "+ Z" and the
 * activation applied before the single store. AVX-512 variant chosen at run time (__builtin_cpu_supports);
 * the portable variant is the same loops in plain C. Measured on MobileNetV2 shapes: 3-5x the per-tap
 * row-update kernel it replaces, and faster than oneDNN's blocked kernel plus its NCHW reorders. */
/* gu_act_n's compare-and-select activations (gemm_util.h) vectorize only without trapping math: netrun never
 * enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "conv_depthwise.h"

#include <string.h>

#include "gemm_util.h"

#define SLACK 64 /* floats after a padded plane: the stride-2 loads of the last vector read past its end */

/* The AVX-512 tile kernels are inlined into every (rows, vectors, kernel, stride) case so that their sums stay
 * in registers: 70-odd unrolled instances. Under AddressSanitizer, which instruments every spill of them, clang
 * spent over 13 minutes on this file (the fuzz and sanitizer builds of CI); there they are plain functions, the
 * same code paths with the shape read at run time. */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define DW_KERNEL static __attribute__((noinline, target("avx512f,fma")))
#else
#define DW_KERNEL static inline __attribute__((always_inline, target("avx512f,fma")))
#endif

static int64_t padded_h(const cpu_dw_args *a) { return (a->oh - 1) * a->sh + (a->kh - 1) * a->dh + 1; }
static int64_t padded_w(const cpu_dw_args *a) { return (a->ow - 1) * a->sw + (a->kw - 1) * a->dw + 1; }

size_t cpu_dw_slot_floats(const cpu_dw_args *a) {
    int64_t ph = padded_h(a), pw = padded_w(a);
    if (ph < 1 || pw < 1) return SLACK;
    /* rows padded to a multiple of 16 floats keep each row's loads aligned alike */
    int64_t ld = (pw + 15) & ~(int64_t)15;
    int64_t ldd = 2 * (((pw + 1) / 2 + 15) & ~(int64_t)15); /* the stride-2 split rows (pad_plane_split) */
    return (size_t)(ph * (ld > ldd ? ld : ldd) + SLACK);
}

/* Copy plane x (ih x iw) into xp (ph x ld) shifted by the begin pads; everything else zero. */
static void pad_plane(const cpu_dw_args *a, const float *x, float *xp, int64_t ph, int64_t pw, int64_t ld) {
    for (int64_t r = 0; r < ph; r++) {
        float *d = xp + r * ld;
        int64_t sr = r - a->pt;
        if (sr < 0 || sr >= a->ih) {
            memset(d, 0, (size_t)ld * sizeof(float));
            continue;
        }
        const float *s = x + sr * a->iw;
        int64_t c0 = a->pl < pw ? a->pl : pw;           /* left zeros */
        int64_t n = a->iw < pw - c0 ? a->iw : pw - c0;  /* copied input columns */
        if (n < 0) n = 0;
        memset(d, 0, (size_t)c0 * sizeof(float));
        memcpy(d + c0, s, (size_t)n * sizeof(float));
        memset(d + c0 + n, 0, (size_t)(ld - c0 - n) * sizeof(float));
    }
    memset(xp + ph * ld, 0, SLACK * sizeof(float));
}

static inline float act1(float v, const netrun_fused_activation *act) { return gu_act(v, act); }

/* Portable: same order of operations as the vector variant. */
static void plane_c(const cpu_dw_args *a, const float *xp, int64_t ld, const float *w, float bias, const float *z,
                    float *y) {
    for (int64_t oy = 0; oy < a->oh; oy++) {
        float *yr = y + oy * a->ow;
        const float *zr = z ? z + oy * a->ow : NULL;
        for (int64_t ox = 0; ox < a->ow; ox++) yr[ox] = bias;
        for (int64_t ky = 0; ky < a->kh; ky++) {
            const float *xr = xp + (oy * a->sh + ky * a->dh) * ld;
            for (int64_t kx = 0; kx < a->kw; kx++) {
                float wv = w[ky * a->kw + kx];
                const float *xs = xr + kx * a->dw;
                if (a->sw == 1)
                    for (int64_t ox = 0; ox < a->ow; ox++) yr[ox] += wv * xs[ox];
                else
                    for (int64_t ox = 0; ox < a->ow; ox++) yr[ox] += wv * xs[ox * a->sw];
            }
        }
        if (zr)
            for (int64_t ox = 0; ox < a->ow; ox++) yr[ox] += zr[ox];
        gu_act_n(yr, a->ow, a->act);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX512_VARIANT 1

__attribute__((target("avx512f,fma"))) static void plane_avx512(const cpu_dw_args *a, const float *xp, int64_t ld,
                                                                 const float *w, float bias, const float *z,
                                                                 float *y) {
    const int kind = a->act->kind;
    const __m512 zero = _mm512_setzero_ps();
    __m512 lo = zero, hi = zero, slope = zero;
    if (kind == NETRUN_ACT_CLIP) {
        lo = _mm512_set1_ps(a->act->alpha);
        hi = _mm512_set1_ps(a->act->beta);
    } else if (kind == NETRUN_ACT_LEAKY_RELU)
        slope = _mm512_set1_ps(a->act->alpha);
    const int inline_act = kind == NETRUN_ACT_NONE || kind == NETRUN_ACT_RELU || kind == NETRUN_ACT_CLIP ||
                           kind == NETRUN_ACT_LEAKY_RELU;
    /* even lanes of two vectors: the stride-2 columns */
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const int64_t kh = a->kh, kw = a->kw, sw = a->sw, dw = a->dw;
    const int k33 = kh == 3 && kw == 3 && (sw == 1 || sw == 2);
    __m512 w0 = zero, w1 = zero, w2 = zero, w3 = zero, w4 = zero, w5 = zero, w6 = zero, w7 = zero, w8 = zero;
    if (k33) {
        w0 = _mm512_set1_ps(w[0]), w1 = _mm512_set1_ps(w[1]), w2 = _mm512_set1_ps(w[2]);
        w3 = _mm512_set1_ps(w[3]), w4 = _mm512_set1_ps(w[4]), w5 = _mm512_set1_ps(w[5]);
        w6 = _mm512_set1_ps(w[6]), w7 = _mm512_set1_ps(w[7]), w8 = _mm512_set1_ps(w[8]);
    }
    for (int64_t oy = 0; oy < a->oh; oy++) {
        float *yr = y + oy * a->ow;
        const float *zr = z ? z + oy * a->ow : NULL;
        const float *xrow = xp + oy * a->sh * ld;
        for (int64_t ox = 0; ox < a->ow; ox += 16) {
            int64_t left = a->ow - ox;
            __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
            __m512 acc = _mm512_set1_ps(bias);
            if (k33) { /* the common 3x3: taps unrolled, weights kept in registers */
                const float *r0 = xrow + ox * sw, *r1 = r0 + a->dh * ld, *r2 = r1 + a->dh * ld;
                if (sw == 1) {
                    acc = _mm512_fmadd_ps(w0, _mm512_loadu_ps(r0), acc);
                    acc = _mm512_fmadd_ps(w1, _mm512_loadu_ps(r0 + dw), acc);
                    acc = _mm512_fmadd_ps(w2, _mm512_loadu_ps(r0 + 2 * dw), acc);
                    acc = _mm512_fmadd_ps(w3, _mm512_loadu_ps(r1), acc);
                    acc = _mm512_fmadd_ps(w4, _mm512_loadu_ps(r1 + dw), acc);
                    acc = _mm512_fmadd_ps(w5, _mm512_loadu_ps(r1 + 2 * dw), acc);
                    acc = _mm512_fmadd_ps(w6, _mm512_loadu_ps(r2), acc);
                    acc = _mm512_fmadd_ps(w7, _mm512_loadu_ps(r2 + dw), acc);
                    acc = _mm512_fmadd_ps(w8, _mm512_loadu_ps(r2 + 2 * dw), acc);
                } else {
#define EV(p) _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps((p) + 16))
                    acc = _mm512_fmadd_ps(w0, EV(r0), acc);
                    acc = _mm512_fmadd_ps(w1, EV(r0 + dw), acc);
                    acc = _mm512_fmadd_ps(w2, EV(r0 + 2 * dw), acc);
                    acc = _mm512_fmadd_ps(w3, EV(r1), acc);
                    acc = _mm512_fmadd_ps(w4, EV(r1 + dw), acc);
                    acc = _mm512_fmadd_ps(w5, EV(r1 + 2 * dw), acc);
                    acc = _mm512_fmadd_ps(w6, EV(r2), acc);
                    acc = _mm512_fmadd_ps(w7, EV(r2 + dw), acc);
                    acc = _mm512_fmadd_ps(w8, EV(r2 + 2 * dw), acc);
#undef EV
                }
            } else
            for (int64_t ky = 0; ky < kh; ky++) {
                const float *xr = xrow + ky * a->dh * ld + ox * sw;
                const float *wr = w + ky * kw;
                if (sw == 1) {
                    for (int64_t kx = 0; kx < kw; kx++)
                        acc = _mm512_fmadd_ps(_mm512_set1_ps(wr[kx]), _mm512_loadu_ps(xr + kx * dw), acc);
                } else if (sw == 2) {
                    for (int64_t kx = 0; kx < kw; kx++) {
                        const float *p = xr + kx * dw;
                        __m512 v = _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16));
                        acc = _mm512_fmadd_ps(_mm512_set1_ps(wr[kx]), v, acc);
                    }
                } else {
                    const __m512i idx = _mm512_mullo_epi32(
                        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32((int)sw));
                    for (int64_t kx = 0; kx < kw; kx++) {
                        __m512 v = _mm512_mask_i32gather_ps(zero, m, idx, xr + kx * dw, 4);
                        acc = _mm512_fmadd_ps(_mm512_set1_ps(wr[kx]), v, acc);
                    }
                }
            }
            if (zr) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, zr + ox));
            if (kind == NETRUN_ACT_RELU) acc = _mm512_max_ps(acc, zero);
            else if (kind == NETRUN_ACT_CLIP) acc = _mm512_min_ps(_mm512_max_ps(acc, lo), hi);
            else if (kind == NETRUN_ACT_LEAKY_RELU)
                acc = _mm512_mask_mul_ps(acc, _mm512_cmp_ps_mask(acc, zero, _CMP_LT_OQ), acc, slope);
            _mm512_mask_storeu_ps(yr + ox, m, acc);
        }
        if (!inline_act) gu_act_n(yr, a->ow, a->act);
    }
}

/* The tiles' epilogue: R rows x NV vectors of sums (the last vector's valid lanes mlast) + Z, the activation
 * (in registers where it is a compare or a clamp, else gu_act_n over the stored row), stored to Y. */
DW_KERNEL void
dw_store(const cpu_dw_args *a, __m512 acc[][4], const float *z0, float *y0, const int R, const int NV, __mmask16 mlast,
         int inline_act) {
    const int64_t ow = a->ow;
    const int kind = a->act->kind;
    const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        float *yr = y0 + r * ow;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            __mmask16 m = v == NV - 1 ? mlast : (__mmask16)0xffff;
            __m512 o = acc[r][v];
            if (z0) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m, z0 + r * ow + 16 * v));
            if (kind == NETRUN_ACT_RELU) o = _mm512_max_ps(o, zero);
            else if (kind == NETRUN_ACT_CLIP)
                o = _mm512_min_ps(_mm512_max_ps(o, _mm512_set1_ps(a->act->alpha)), _mm512_set1_ps(a->act->beta));
            else if (kind == NETRUN_ACT_LEAKY_RELU)
                o = _mm512_mask_mul_ps(o, _mm512_cmp_ps_mask(o, zero, _CMP_LT_OQ), o, _mm512_set1_ps(a->act->alpha));
            _mm512_mask_storeu_ps(yr + 16 * v, m, o);
        }
        if (!inline_act) gu_act_n(yr, 16 * (NV - 1) + __builtin_popcount(mlast), a->act);
    }
}

/* Tiled variant: the single-vector kernel above is one chain of kh*kw dependent FMAs per output vector
 * (latency-bound, ~4 cycles each). Here a tile of R output rows x NV vectors of 16 columns keeps R*NV
 * independent sums (4 at most), one broadcast weight per tap feeding all of them; narrow planes (14, 7 wide)
 * take up to 4 rows at once. R, NV, SW are constants in each instance (always_inline), so the sums stay in
 * registers. SW: 1, 2 (even lanes of two loads), 3 = stride 2 on split rows (pad_plane_split: the even
 * columns, then the odd ones, so every tap is one plain load), 0 = any other stride (gather). */
#define DW_EV(p) _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps((p) + 16))
DW_KERNEL void
dw_tile(const cpu_dw_args *a, const float *x0, int64_t ld, const float *w, float bias, const float *z0, float *y0,
        const int R, const int NV, const int SW, __mmask16 mlast, int inline_act) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i gidx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32((int)a->sw));
    const int64_t rs = a->sh * ld, kh = a->kh, kw = a->kw, dwc = a->dw, dhl = a->dh * ld;
    const __m512 zero = _mm512_setzero_ps();
    __m512 acc[4][4];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_set1_ps(bias);
    for (int64_t ky = 0; ky < kh; ky++) {
        const float *xr = x0 + ky * dhl;
        for (int64_t kx = 0; kx < kw; kx++) {
            const __m512 wv = _mm512_set1_ps(w[ky * kw + kx]);
            const float *p = SW == 3 ? xr + ((kx * dwc) & 1) * (ld / 2) + ((kx * dwc) >> 1) : xr + kx * dwc;
            for (int r = 0; r < R; r++)
                for (int v = 0; v < NV; v++) {
                    __m512 xv;
                    if (SW == 1 || SW == 3) xv = _mm512_loadu_ps(p + r * rs + 16 * v);
                    else if (SW == 2) xv = DW_EV(p + r * rs + 32 * v);
                    else /* masked: lanes past the row's end could reach beyond the plane's slack */
                        xv = _mm512_mask_i32gather_ps(zero, v == NV - 1 ? mlast : (__mmask16)0xffff, gidx,
                                                      p + r * rs + 16 * v * a->sw, 4);
                    acc[r][v] = _mm512_fmadd_ps(wv, xv, acc[r][v]);
                }
        }
    }
    dw_store(a, acc, z0, y0, R, NV, mlast, inline_act);
}
#undef DW_EV

#define DW_TILE_SW(R, NV)                                                                                          \
    do {                                                                                                           \
        if (split) dw_tile(a, x0, ld, w, bias, z0, y0, R, NV, 3, ml, inline_act);                                  \
        else if (sw == 1) dw_tile(a, x0, ld, w, bias, z0, y0, R, NV, 1, ml, inline_act);                           \
        else if (sw == 2) dw_tile(a, x0, ld, w, bias, z0, y0, R, NV, 2, ml, inline_act);                           \
        else dw_tile(a, x0, ld, w, bias, z0, y0, R, NV, 0, ml, inline_act);                                        \
    } while (0)

__attribute__((target("avx512f,fma"))) static void plane_tiled_avx512(const cpu_dw_args *a, const float *xp,
                                                                       int64_t ld, const float *w, float bias,
                                                                       const float *z, float *y, int split) {
    const int kind = a->act->kind;
    const int inline_act = kind == NETRUN_ACT_NONE || kind == NETRUN_ACT_RELU || kind == NETRUN_ACT_CLIP ||
                           kind == NETRUN_ACT_LEAKY_RELU;
    const int64_t sw = a->sw, ow = a->ow, oh = a->oh, xs = split ? 1 : sw; /* X columns per output column */
    for (int64_t ox = 0; ox < ow; ox += 64) {
        int64_t left = ow - ox;
        int nv = left >= 64 ? 4 : (int)((left + 15) / 16);
        int64_t tail = left - 16 * (nv - 1); /* columns in the last vector, 1..16 */
        __mmask16 ml = tail >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << tail) - 1);
        int rows = nv >= 3 ? 1 : nv == 2 ? 2 : 4; /* 4 sums per tile where the plane allows */
        int64_t oy = 0;
        for (; oy + rows <= oh; oy += rows) {
            const float *x0 = xp + oy * a->sh * ld + ox * xs;
            const float *z0 = z ? z + oy * ow + ox : NULL;
            float *y0 = y + oy * ow + ox;
            switch (nv) {
            case 4: DW_TILE_SW(1, 4); break;
            case 3: DW_TILE_SW(1, 3); break;
            case 2: DW_TILE_SW(2, 2); break;
            default: DW_TILE_SW(4, 1); break;
            }
        }
        for (; oy < oh; oy++) { /* rows left over from the 2- and 4-row tiles */
            const float *x0 = xp + oy * a->sh * ld + ox * xs;
            const float *z0 = z ? z + oy * ow + ox : NULL;
            float *y0 = y + oy * ow + ox;
            if (nv == 2) DW_TILE_SW(1, 2);
            else DW_TILE_SW(1, 1);
        }
    }
}
#undef DW_TILE_SW

/* Row-stationary variant for K x K kernels (3 or 5, no dilation) whose taps are plain loads (stride 1, or
 * stride 2 on split rows): dw_tile loads each input vector once per output row and tap, and that kernel was
 * bound by those loads (most of them straddle two cache lines), not by its FMAs: 8 sums per tile instead of
 * 4 gained nothing. Here each input row's vector at a tap column is loaded once and feeds every output row of
 * the tile it reaches (K / SH of them), R rows x NV vectors of sums: on MnasNet's 72 x 56x56 3x3 and
 * 120 x 28x28 5x5 convs, ~2-3 FMAs per load instead of 1. MODE 0: the padded plane; 1: stride-2 columns on
 * split rows; 2 (stride 1): X itself, no padded copy: x0 is X's row iy0 shifted left by the pad (ld = iw), the
 * columns outside X masked off (mk[kx * 4 + v]: the lanes inside X, never read past them) and the rows outside
 * X skipped. */
DW_KERNEL void
dw_rows_tile(const cpu_dw_args *a, const float *x0, int64_t ld, const float *w, float bias, const float *z0,
             float *y0, const int R, const int NV, const int K, const int SH, const int MODE, __mmask16 mlast,
             int inline_act, const __mmask16 *mk, int64_t iy0) {
    __m512 acc[8][4];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_set1_ps(bias);
    const int IR = (R - 1) * SH + K; /* input rows under the tile */
    for (int ir = 0; ir < IR; ir++) {
        if (MODE == 2 && (iy0 + ir < 0 || iy0 + ir >= a->ih)) continue; /* a row of the pads: zeros */
        const float *xr = x0 + ir * ld;
        /* output rows r of the tile that input row ir reaches: ky = ir - r * SH in [0, K) */
        const int rlo = ir < K ? 0 : (ir - K + SH) / SH, rhi = ir / SH < R - 1 ? ir / SH : R - 1;
        for (int kx = 0; kx < K; kx++) {
            const float *p = MODE == 1 ? xr + (kx & 1) * (ld / 2) + (kx >> 1) : xr + kx;
            __m512 xv[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                xv[v] = MODE == 2 ? _mm512_maskz_loadu_ps(mk[kx * 4 + v], p + 16 * v) : _mm512_loadu_ps(p + 16 * v);
                __asm__("" : "+v"(xv[v])); /* keep the load in a register: GCC would fold it into each FMA */
            }
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) {
                if (r < rlo || r > rhi) continue;
                const __m512 wv = _mm512_set1_ps(w[(ir - r * SH) * K + kx]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(wv, xv[v], acc[r][v]);
            }
        }
    }
    dw_store(a, acc, z0, y0, R, NV, mlast, inline_act);
}

#define DW_ROWS(R, NV)                                                                                             \
    do {                                                                                                           \
        if (mode == 2 && k == 3) dw_rows_tile(a, x0, ld, w, bias, z0, y0, R, NV, 3, 1, 2, ml, inline_act, mk, iy0); \
        else if (mode == 2) dw_rows_tile(a, x0, ld, w, bias, z0, y0, R, NV, 5, 1, 2, ml, inline_act, mk, iy0);      \
        else if (k == 3 && !mode) dw_rows_tile(a, x0, ld, w, bias, z0, y0, R, NV, 3, 1, 0, ml, inline_act, mk, 0);  \
        else if (k == 3) dw_rows_tile(a, x0, ld, w, bias, z0, y0, R, NV, 3, 2, 1, ml, inline_act, mk, 0);           \
        else if (!mode) dw_rows_tile(a, x0, ld, w, bias, z0, y0, R, NV, 5, 1, 0, ml, inline_act, mk, 0);            \
        else dw_rows_tile(a, x0, ld, w, bias, z0, y0, R, NV, 5, 2, 1, ml, inline_act, mk, 0);                       \
    } while (0)

/* 1 when plane_rows_avx512 takes the conv: K x K with K 3 or 5, no dilation, stride 1 or 2 (split rows), rows
 * over 16 wide. On rows of one vector the tiles of plane_tiled_avx512 were as fast or faster (ShuffleNet's 14
 * wide at batch 8: 116 x 28x28 stride 2 0.15 ms against 0.23, 116 x 14x14 stride 1 0.071 against 0.075). */
static int rows_fits(const cpu_dw_args *a, int split) {
    return a->kh == a->kw && (a->kh == 3 || a->kh == 5) && a->dh == 1 && a->dw == 1 && a->sh == a->sw &&
           (a->sw == 1 || (a->sw == 2 && split)) && a->ow > 16;
}

/* mode: as dw_rows_tile's MODE; with 2, xp is X's plane (not padded) and ld its width. */
__attribute__((target("avx512f,fma"))) static void plane_rows_avx512(const cpu_dw_args *a, const float *xp,
                                                                      int64_t ld, const float *w, float bias,
                                                                      const float *z, float *y, int mode) {
    const int kind = a->act->kind;
    const int inline_act = kind == NETRUN_ACT_NONE || kind == NETRUN_ACT_RELU || kind == NETRUN_ACT_CLIP ||
                           kind == NETRUN_ACT_LEAKY_RELU;
    const int64_t ow = a->ow, oh = a->oh, k = a->kh;
    for (int64_t ox = 0; ox < ow; ox += 64) {
        int64_t left = ow - ox;
        int nv = left >= 64 ? 4 : (int)((left + 15) / 16);
        int64_t tail = left - 16 * (nv - 1); /* columns in the last vector, 1..16 */
        __mmask16 ml = tail >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << tail) - 1);
        int rows = nv >= 3 ? 2 : nv == 2 ? 4 : 8; /* 6-8 sums per tile */
        __mmask16 mk[5 * 4] = {0};
        if (mode == 2) /* the lanes of each tap column's vectors that fall inside X */
            for (int64_t kx = 0; kx < k; kx++)
                for (int v = 0; v < nv; v++) {
                    int64_t c0 = ox + kx - a->pl + 16 * v, lo = -c0, hi = a->iw - c0; /* lanes lo <= j < hi */
                    if (lo < 0) lo = 0;
                    if (hi > 16) hi = 16;
                    mk[kx * 4 + v] = hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
                }
        int64_t oy = 0;
        for (; oy < oh; oy += rows) {
            while (oy + rows > oh) rows /= 2; /* the rows left over: tiles of half as many rows, down to 1 */
            const int64_t iy0 = oy - a->pt;
            const float *x0 = mode == 2 ? xp + iy0 * ld + ox - a->pl : xp + oy * a->sh * ld + ox;
            const float *z0 = z ? z + oy * ow + ox : NULL;
            float *y0 = y + oy * ow + ox;
            switch (nv * 16 + rows) {
            case 4 * 16 + 2: DW_ROWS(2, 4); break;
            case 3 * 16 + 2: DW_ROWS(2, 3); break;
            case 2 * 16 + 4: DW_ROWS(4, 2); break;
            case 2 * 16 + 2: DW_ROWS(2, 2); break;
            case 1 * 16 + 8: DW_ROWS(8, 1); break;
            case 1 * 16 + 4: DW_ROWS(4, 1); break;
            case 1 * 16 + 2: DW_ROWS(2, 1); break;
            case 4 * 16 + 1: DW_ROWS(1, 4); break;
            case 3 * 16 + 1: DW_ROWS(1, 3); break;
            case 2 * 16 + 1: DW_ROWS(1, 2); break;
            default: DW_ROWS(1, 1); break;
            }
        }
    }
}
#undef DW_ROWS

/* pad_plane with masked vector loads: one load and one store per 16 floats instead of three library calls per
 * row (those were ~18% of a 72 x 56x56 depthwise conv). Masked-off lanes are not read. */
__attribute__((target("avx512f"))) static void pad_plane_avx512(const cpu_dw_args *a, const float *x, float *xp,
                                                                 int64_t ph, int64_t ld) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t r = 0; r < ph; r++) {
        float *d = xp + r * ld;
        int64_t sr = r - a->pt;
        if (sr < 0 || sr >= a->ih) {
            for (int64_t c = 0; c < ld; c += 16) _mm512_storeu_ps(d + c, zero);
            continue;
        }
        const float *s = x + sr * a->iw;
        for (int64_t c = 0; c < ld; c += 16) {
            /* lanes c..c+15 hold input columns c - pl ..: valid where 0 <= col < iw */
            int64_t lo = a->pl - c, hi = a->iw + a->pl - c; /* valid lanes lo <= j < hi */
            if (lo < 0) lo = 0;
            if (hi > 16) hi = 16;
            __mmask16 m = hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
            _mm512_storeu_ps(d + c, m ? _mm512_maskz_loadu_ps(m, s + (c - a->pl)) : zero);
        }
    }
    for (int64_t c = 0; c < SLACK; c += 16) _mm512_storeu_ps(xp + ph * ld + c, zero);
}
#endif

/* Stride 2: each padded row stored as its even columns (ld / 2 floats) then its odd ones, so that the
 * stride-2 taps of plane_tiled_avx512 are single loads (not two loads and a permute each). */
__attribute__((target("avx512f"))) static void pad_plane_split(const cpu_dw_args *a, const float *x, float *xp,
                                                                int64_t ph, int64_t ld) {
    const __m512 zero = _mm512_setzero_ps();
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const int64_t half = ld / 2;
    for (int64_t r = 0; r < ph; r++) {
        float *d = xp + r * ld;
        int64_t sr = r - a->pt;
        if (sr < 0 || sr >= a->ih) {
            for (int64_t c = 0; c < ld; c += 16) _mm512_storeu_ps(d + c, zero);
            continue;
        }
        const float *s = x + sr * a->iw;
        for (int64_t c = 0; c < 2 * half; c += 32) {
            __m512 v[2];
            for (int h = 0; h < 2; h++) {
                int64_t c0 = c + 16 * h, lo = a->pl - c0, hi = a->iw + a->pl - c0; /* valid lanes lo <= j < hi */
                if (lo < 0) lo = 0;
                if (hi > 16) hi = 16;
                __mmask16 m = hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
                v[h] = m ? _mm512_maskz_loadu_ps(m, s + (c0 - a->pl)) : zero;
            }
            _mm512_storeu_ps(d + c / 2, _mm512_permutex2var_ps(v[0], ev, v[1]));
            _mm512_storeu_ps(d + half + c / 2, _mm512_permutex2var_ps(v[0], od, v[1]));
        }
    }
    for (int64_t c = 0; c < SLACK; c += 16) _mm512_storeu_ps(xp + ph * ld + c, zero);
}

typedef struct dw_job {
    const cpu_dw_args *a;
    int64_t ph, pw, ld;
    size_t slot_floats;
    int avx512, tiled; /* tiled: plane_tiled_avx512 and pad_plane_avx512 (cpu.dw_tiled=0: the older pair) */
    int split;         /* stride 2 on split rows (cpu.dw_split=0: even lanes of two loads); ld is then lds */
    int rows;          /* plane_rows_avx512 (cpu.dw_rows=0: plane_tiled_avx512) */
    int direct;        /* rows at stride 1 read X itself, no padded copy (cpu.dw_direct=0: the padded plane) */
} dw_job;

static void dw_slot(void *arg, int64_t slot, int64_t t0, int64_t t1) {
    const dw_job *j = arg;
    const cpu_dw_args *a = j->a;
    float *xp = a->ws + (size_t)slot * j->slot_floats;
    int64_t in = a->ih * a->iw, out = a->oh * a->ow;
    for (int64_t t = t0; t < t1; t++) {
        int64_t c = t % a->c;
#ifdef HAVE_AVX512_VARIANT
        if (j->direct) {
            float bias = a->b ? a->b[c] : 0.0f;
            plane_rows_avx512(a, a->x + t * in, a->iw, a->w + c * a->kh * a->kw, bias, a->z ? a->z + t * out : NULL,
                              a->y + t * out, 2);
            continue;
        }
        if (j->split) pad_plane_split(a, a->x + t * in, xp, j->ph, j->ld);
        else if (j->tiled) pad_plane_avx512(a, a->x + t * in, xp, j->ph, j->ld);
        else
#endif
            pad_plane(a, a->x + t * in, xp, j->ph, j->pw, j->ld);
        const float *w = a->w + c * a->kh * a->kw, *z = a->z ? a->z + t * out : NULL;
        float bias = a->b ? a->b[c] : 0.0f;
#ifdef HAVE_AVX512_VARIANT
        if (j->rows) {
            plane_rows_avx512(a, xp, j->ld, w, bias, z, a->y + t * out, j->split);
            continue;
        }
        if (j->tiled) {
            plane_tiled_avx512(a, xp, j->ld, w, bias, z, a->y + t * out, j->split);
            continue;
        }
        if (j->avx512) {
            plane_avx512(a, xp, j->ld, w, bias, z, a->y + t * out);
            continue;
        }
#endif
        plane_c(a, xp, j->ld, w, bias, z, a->y + t * out);
    }
}

static int use_avx512(void) {
#ifdef HAVE_AVX512_VARIANT
    return cpu_has_avx512f();
#else
    return 0;
#endif
}

int cpu_dw_tiled(cpu_context *ctx) {
    const char *v = cpu_option(ctx, "cpu.dw_tiled");
    return use_avx512() && !(v && !strcmp(v, "0"));
}

const char *cpu_dw_variant(void) { return use_avx512() ? "depthwise direct avx512" : "depthwise direct"; }

void cpu_dw_run(cpu_context *ctx, const cpu_dw_args *a, int64_t slots) {
    dw_job j = {a, padded_h(a), padded_w(a), 0, cpu_dw_slot_floats(a), use_avx512(), cpu_dw_tiled(ctx), 0, 0, 0};
    j.ld = (j.pw + 15) & ~(int64_t)15;
    const char *o = cpu_option(ctx, "cpu.dw_split");
    if (j.tiled && a->sw == 2 && !(o && !strcmp(o, "0"))) {
        j.split = 1;
        j.ld = 2 * (((j.pw + 1) / 2 + 15) & ~(int64_t)15);
    }
#ifdef HAVE_AVX512_VARIANT
    const char *r = cpu_option(ctx, "cpu.dw_rows");
    j.rows = j.tiled && rows_fits(a, j.split) && !(r && !strcmp(r, "0"));
    const char *d = cpu_option(ctx, "cpu.dw_direct");
    j.direct = j.rows && a->sw == 1 && !(d && !strcmp(d, "0"));
#endif
    gu_run_slots(ctx, a->planes, slots, dw_slot, &j);
}
