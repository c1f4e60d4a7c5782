/* Direct convs (3x3 pad 1 at stride 2 or 1, 1x1 pad 0 at stride 2), nChw16c X -> nChw16c Y (see
 * conv_direct_blk.h). Register tile: 2 blocks of 16 output channels x 14 pixels of one output row = 28 zmm
 * accumulators; per (input channel, kernel column) 2 weight vectors and 14 broadcasts of X (pixels S apart) feed
 * 28 FMAs. W is packed per pair of output blocks as [kh][C/16][16][kw][2][16], in the order the tile reads it.
 * The pads of a 3x3 are compile-time cases of the edge tiles: the first tile of a row (pixel 0 skips kernel
 * column 0; its row pointer starts one pixel before the row and is never read there) and the last where its last
 * pixel reads one column past X (stride 1, or stride 2 on odd widths: its kernel column 2 skipped); kernel rows
 * above or below X are skipped per row.
 * Work: (image, block pair, output row) tasks handed out by the pool in chunks, rows of one block pair next
 * to each other, so a thread's chunk reads one pair's weights (C x 1.1 KB) from L2. */
/* gu_act_n's compare-and-select activations (gemm_util.h) vectorize only without trapping math: netrun never
 * enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "conv_direct_blk.h"

#include <stdio.h>

#include "blk_epilogue.h"
#include "gemm_util.h"

#define CDIR_P 14 /* pixels per tile */

struct cpu_cdir {
    int64_t k;                        /* 3 (pad 1) or 1 (pad 0) */
    int64_t st;                       /* stride: 2, or 1 (3x3) */
    int64_t c, m, mb, ih, iw, oh, ow; /* mb: blocks of 16 output channels */
    int64_t pt;                       /* pixels per tile (the last of a row may have fewer) */
    netrun_fused_activation act;
    float *wp;
};

int cpu_cdir_fits(int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const int64_t k[2],
                  const int64_t s[2], const int64_t d[2], const int64_t pads_begin[2]) {
    const int64_t pad = k[0] / 2, st = s[0]; /* 3x3: 1, 1x1: 0 */
    return c > 0 && m > 0 && c % 16 == 0 && m % 16 == 0 && k[0] == k[1] && (k[0] == 3 || (k[0] == 1 && st == 2)) &&
           (st == 2 || st == 1) && s[1] == st && d[0] == 1 && d[1] == 1 && pads_begin[0] == pad &&
           pads_begin[1] == pad && ih > 0 && iw > 0 && oh > 0 && ow > 0 && (oh - 1) * st - pad < ih &&
           (ow - 1) * st - pad < iw && (ow - 1) * st - pad + k[0] - 1 <= iw;
}

void cpu_cdir_destroy(cpu_cdir *s) {
    if (!s) return;
    cpu_free(s->wp);
    cpu_free(s);
}

netrun_status cpu_cdir_create(int64_t kernel, int64_t stride, int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh,
                              int64_t ow, const float *w, const netrun_fused_activation *act, cpu_cdir **out) {
    *out = NULL;
    const int64_t k[2] = {kernel, kernel}, st[2] = {stride, stride}, d[2] = {1, 1}, pb[2] = {kernel / 2, kernel / 2};
    if (!cpu_cdir_fits(c, m, ih, iw, oh, ow, k, st, d, pb) || c > ((int64_t)1 << 26) / (9 * m))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                               "Conv %lldx%lld stride %lld (nChw16c): C %lld, M %lld, X %lldx%lld, Y %lldx%lld "
                               "unsupported",
                               (long long)kernel, (long long)kernel, (long long)stride, (long long)c, (long long)m,
                               (long long)ih, (long long)iw, (long long)oh, (long long)ow);
    cpu_cdir *s = cpu_alloc(sizeof *s);
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv direct (nChw16c): out of memory");
    memset(s, 0, sizeof *s);
    s->k = kernel, s->st = stride, s->c = c, s->m = m, s->mb = m / 16, s->ih = ih, s->iw = iw, s->oh = oh, s->ow = ow;
    const int64_t tiles = (ow + CDIR_P - 1) / CDIR_P; /* per output row */
    s->pt = (ow + tiles - 1) / tiles;                 /* even tiles: 28 -> 14 + 14, 7 -> 7 */
    s->act = *act;
    const int64_t kk = kernel * kernel;
    s->wp = cpu_alloc((size_t)(m * c * kk) * sizeof(float));
    if (!s->wp) {
        cpu_free(s);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv direct (nChw16c): out of memory packing W");
    }
    const int64_t cbn = c / 16;
    for (int64_t ob0 = 0; ob0 < s->mb; ob0 += 2) {
        const int nb = s->mb - ob0 >= 2 ? 2 : 1;
        float *g = s->wp + ob0 * 16 * c * kk;
        for (int64_t kh = 0; kh < kernel; kh++)
            for (int64_t icb = 0; icb < cbn; icb++)
                for (int l = 0; l < 16; l++)
                    for (int64_t kw = 0; kw < kernel; kw++)
                        for (int b = 0; b < nb; b++)
                            for (int ln = 0; ln < 16; ln++)
                                g[((((kh * cbn + icb) * 16 + l) * kernel + kw) * nb + b) * 16 + ln] =
                                    w[(((ob0 + b) * 16 + ln) * c + icb * 16 + l) * kk + kh * kernel + kw];
    }
    *out = s;
    return NETRUN_OK;
}

typedef struct cdir_job {
    const cpu_cdir *s;
    const float *x, *b, *z;
    float *y;
    int64_t pairs; /* pairs of output blocks (the last may be a single block) */
    int rows_outer; /* tasks ordered (image, output row, pair) instead of (image, pair, output row) */
} cdir_job;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CDIR_AVX512 1

/* One tile of a K x K kernel (pad K / 2), stride S: NB (1 or 2) output blocks from ob, P pixels of output row oh
 * from ow0 (TAIL: pn <= CDIR_P pixels, one instance for every count). LEFT: the tile starts at column 0, whose
 * kernel column 0 reads the left pad (3x3). RIGHT: the tile's last pixel reads one column past X's last (3x3 at
 * stride 1, or at stride 2 on odd widths), its kernel column K - 1 skipped. */
__attribute__((target("avx512f,fma"), always_inline)) static inline void
cdir_tile(const cdir_job *j, const float *x, float *y, const float *z, int64_t ob, int64_t oh, int64_t ow0, const int K,
          const int S, const int NB, const int FULLP, const int LEFT, const int TAIL, const int RIGHT, int pn) {
    const int P = TAIL ? pn : FULLP, PAD = K / 2;
    const cpu_cdir *s = j->s;
    const int64_t cbn = s->c / 16, ih0 = oh * S - PAD, iw = s->iw;
    __m512 acc[2][CDIR_P];
#pragma GCC unroll 2
    for (int b = 0; b < NB; b++)
#pragma GCC unroll 14
        for (int p = 0; p < FULLP; p++) acc[b][p] = _mm512_setzero_ps();
    const int kh0 = ih0 < 0 ? (int)-ih0 : 0, kh1 = ih0 + K > s->ih ? (int)(s->ih - ih0) : K;
    const float *wg = s->wp + ob * 16 * s->c * K * K;
    for (int kh = kh0; kh < kh1; kh++) {
        const float *wk = wg + kh * cbn * 16 * K * NB * 16;
        for (int64_t icb = 0; icb < cbn; icb++) {
            const float *xb = x + ((icb * s->ih + ih0 + kh) * iw + ow0 * S - PAD) * 16;
            const float *wl = wk + icb * 16 * K * NB * 16;
            for (int l = 0; l < 16; l++, xb++, wl += K * NB * 16) {
#pragma GCC unroll 3
                for (int kw = 0; kw < K; kw++) {
                    /* pixel p's column kw is pixel p + 1's column kw - S: hidden from the compiler, which would
                     * keep those broadcasts in registers across kw and spill accumulators (152 -> 230 GFLOP/s) */
                    const float *xk = xb + kw * 16;
                    __asm__("" : "+r"(xk));
                    __m512 wv0 = _mm512_load_ps(wl + kw * NB * 16), wv1 = wv0;
                    if (NB > 1) wv1 = _mm512_load_ps(wl + (kw * NB + 1) * 16);
#pragma GCC unroll 14
                    for (int p = 0; p < FULLP; p++) {
                        if (TAIL && p >= P) break;
                        if (LEFT && p * S - PAD + kw < 0) continue;      /* the left pad */
                        if (RIGHT && p == P - 1 && kw == K - 1) continue; /* the right pad */
                        __m512 xv = _mm512_set1_ps(xk[p * 16 * S]);
                        acc[0][p] = _mm512_fmadd_ps(wv0, xv, acc[0][p]);
                        if (NB > 1) acc[1][p] = _mm512_fmadd_ps(wv1, xv, acc[1][p]);
                    }
                }
            }
        }
    }
    const netrun_fused_activation *a = &s->act;
#pragma GCC unroll 2
    for (int b = 0; b < NB; b++) {
        __m512 bv = j->b ? _mm512_loadu_ps(j->b + (ob + b) * 16) : _mm512_setzero_ps();
        float *yb = y + (((ob + b) * s->oh + oh) * s->ow + ow0) * 16;
        const float *zb = z ? z + (((ob + b) * s->oh + oh) * s->ow + ow0) * 16 : NULL;
#pragma GCC unroll 14
        for (int p = 0; p < FULLP; p++) {
            if (TAIL && p >= P) break;
            _mm512_storeu_ps(yb + p * 16, blk_epilogue(acc[b][p], bv, zb ? zb + p * 16 : NULL, a));
        }
        if (blk_act_after(a)) gu_act_n(yb, (int64_t)P * 16, a);
    }
}

/* The instances: 14- and 7-pixel tiles (ResNet's rows of 56, 28, 14 and 7 columns), any narrower tile through the
 * TAIL one; each for block pairs and a last lone block, and for 3x3 with and without the left pad and the right
 * one (at most the last pixel's last kernel column reads past X: cpu_cdir_fits). */
#define CDIR_FN(NAME, K, S, NB, P, LEFT, TAIL, RIGHT)                                                                \
    __attribute__((target("avx512f,fma"))) static void NAME(const cdir_job *j, const float *x, float *y,            \
                                                            const float *z, int64_t ob, int64_t oh, int64_t ow0,  \
                                                            int pn) {                                             \
        cdir_tile(j, x, y, z, ob, oh, ow0, K, S, NB, P, LEFT, TAIL, RIGHT, pn);                                    \
    }
#define CDIR_FNS(K, S, NB, LEFT, RIGHT)                                                                              \
    CDIR_FN(cdir_##K##_##S##_##NB##_##LEFT##RIGHT##_14, K, S, NB, 14, LEFT, 0, RIGHT)                               \
    CDIR_FN(cdir_##K##_##S##_##NB##_##LEFT##RIGHT##_7, K, S, NB, 7, LEFT, 0, RIGHT)                                 \
    CDIR_FN(cdir_##K##_##S##_##NB##_##LEFT##RIGHT##_t, K, S, NB, 14, LEFT, 1, RIGHT)
#define CDIR_FNS_PADS(S, NB)                                                                                        \
    CDIR_FNS(3, S, NB, 0, 0) CDIR_FNS(3, S, NB, 0, 1) CDIR_FNS(3, S, NB, 1, 0) CDIR_FNS(3, S, NB, 1, 1)
CDIR_FNS_PADS(2, 2)
CDIR_FNS_PADS(2, 1)
CDIR_FNS_PADS(1, 2)
CDIR_FNS_PADS(1, 1)
CDIR_FNS(1, 2, 2, 0, 0)
CDIR_FNS(1, 2, 1, 0, 0)

typedef void (*cdir_fn)(const cdir_job *, const float *, float *, const float *, int64_t, int64_t, int64_t, int);

/* Tasks [t0, t1): task t is image t / (pairs * oh), block pair t / oh % pairs, output row t % oh. */
static void cdir_range(void *arg, int64_t t0, int64_t t1) {
    const cdir_job *j = arg;
    const cpu_cdir *s = j->s;
    /* [kernel: 1x1 stride 2, 3x3 stride 2, 3x3 stride 1][nb - 1][left pad][right pad][width 14, width 7, other];
     * 1x1 has no pads */
#define CDIR_W(K, S, NB, LEFT, RIGHT)                                                                                \
    {cdir_##K##_##S##_##NB##_##LEFT##RIGHT##_14, cdir_##K##_##S##_##NB##_##LEFT##RIGHT##_7,                           \
     cdir_##K##_##S##_##NB##_##LEFT##RIGHT##_t}
#define CDIR_NB(K, S, NB)                                                                                           \
    {{CDIR_W(K, S, NB, 0, 0), CDIR_W(K, S, NB, 0, 1)}, {CDIR_W(K, S, NB, 1, 0), CDIR_W(K, S, NB, 1, 1)}}
#define CDIR_NB1(NB)                                                                                                \
    {{CDIR_W(1, 2, NB, 0, 0), CDIR_W(1, 2, NB, 0, 0)}, {CDIR_W(1, 2, NB, 0, 0), CDIR_W(1, 2, NB, 0, 0)}}
    static const cdir_fn fns[3][2][2][2][3] = {{CDIR_NB1(1), CDIR_NB1(2)},
                                              {CDIR_NB(3, 2, 1), CDIR_NB(3, 2, 2)},
                                              {CDIR_NB(3, 1, 1), CDIR_NB(3, 1, 2)}};
#undef CDIR_W
#undef CDIR_NB
#undef CDIR_NB1
    const int kind = s->k == 1 ? 0 : s->st == 2 ? 1 : 2;
    const int64_t xsz = s->c * s->ih * s->iw, ysz = s->m * s->oh * s->ow;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t img = t / (j->pairs * s->oh);
        const int64_t ob = (j->rows_outer ? t % j->pairs : t / s->oh % j->pairs) * 2;
        const int64_t oh = j->rows_outer ? t / j->pairs % s->oh : t % s->oh;
        const int nb = s->mb - ob >= 2 ? 2 : 1;
        const float *x = j->x + img * xsz, *z = j->z ? j->z + img * ysz : NULL;
        float *y = j->y + img * ysz;
        for (int64_t ow0 = 0; ow0 < s->ow; ow0 += s->pt) {
            const int pn = (int)(s->ow - ow0 < s->pt ? s->ow - ow0 : s->pt);
            /* the last pixel's last kernel column past X's last column */
            const int right = (ow0 + pn - 1) * s->st - s->k / 2 + s->k - 1 >= s->iw;
            fns[kind][nb - 1][ow0 == 0][right][pn == 14 ? 0 : pn == 7 ? 1 : 2](j, x, y, z, ob, oh, ow0, pn);
        }
    }
}
#endif

int cpu_cdir_available(void) {
#ifdef CDIR_AVX512
    return cpu_has_avx512f();
#else
    return 0;
#endif
}

netrun_status cpu_cdir_run(cpu_context *ctx, const cpu_cdir *s, const float *x, const float *b, const float *z,
                            float *y, int64_t n) {
#ifdef CDIR_AVX512
    if (!s || !x || !y || n < 0)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Conv direct (nChw16c): missing tensors");
    if (!cpu_has_avx512f())
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Conv direct (nChw16c): needs AVX-512F");
    cdir_job j = {s, x, b, z, y, (s->mb + 1) / 2, 0};
    /* A chunk of (pair, row) tasks reads its pairs' weights and all of X; a chunk of (row, pair) tasks a band
     * of X and all weights. For a 1x1 whose weights are smaller than X (ResNet-50's 256 -> 512 stride-2
     * downsample of layer2 at batch 1: 0.5 MB against 3.2 MB), each thread then reads X once instead of once
     * per chunk of pairs: 2 threads, 1.01 -> 0.72 ms. Not for 3x3 (layer2's 128 -> 128 stride 2, 0.6 MB
     * against 1.6 MB: 0.69 -> 0.73), nor where the weights are larger (layer3 on: 0.78 -> 0.91 and worse). */
    const char *o = cpu_option(ctx, "cpu.direct_rows");
    int64_t wfloats = s->c * s->m * s->k * s->k, xfloats = s->c * s->ih * s->iw;
    j.rows_outer = o ? strcmp(o, "0") != 0 : s->k == 1 && wfloats < xfloats;
    cpu_parallel_for(ctx, n * j.pairs * s->oh, 1, cdir_range, &j);
    return NETRUN_OK;
#else
    (void)ctx, (void)s, (void)x, (void)b, (void)z, (void)y, (void)n;
    return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Conv direct (nChw16c): built without the AVX-512 kernel");
#endif
}
