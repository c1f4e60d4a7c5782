/* 1x1 conv, plain NCHW X -> nChw16c Y (see conv1x1_blk.h). Register tile: 2 blocks of 16 output channels x
 * 12 pixels = 24 zmm accumulators; per input channel 2 weight vectors and 12 broadcasts of X (consecutive
 * floats of one X row) feed 24 FMAs. W is packed [M/16][C][16] once (zero rows past M). Work: (image, chunk
 * of pixels) tasks; within a chunk every output block reuses the chunk of X from L1/L2.
 * The other direction, nChw16c X -> plain Y (projections to 24/40 channels): tiles of 16 output channels x
 * 16 pixels, broadcasts of X 16 floats apart, then the 16 x 16 tile is transposed in registers so that each
 * output channel's 16 pixels are stored as one row of Y (the last block masked to M). */
/* gu_act_n's compare-and-select activations (gemm_util.h) vectorize only without trapping math: netrun never
 * enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "conv1x1_blk.h"

#include <stdio.h>

#include "blk_epilogue.h"
#include "gemm_util.h"

struct cpu_c1x1 {
    int64_t c, m, mb; /* mb: blocks of 16 output channels (the last may be partial: plain Y only) */
    int mode;         /* CPU_C1X1_* (conv1x1_blk.h) */
    netrun_fused_activation act;
    float *wp; /* [m/16][c][16] */
};

#define C1_P 12      /* pixels per tile */
#define C1_CHUNK 192 /* pixels per task (a multiple of C1_P) */
#define C1_PP_R 6     /* plain -> plain: output channels per tile */
#define C1_PP_CHUNK 256 /* plain -> plain: pixels per task (tiles of 64) */

void cpu_c1x1_destroy(cpu_c1x1 *s) {
    if (!s) return;
    cpu_free(s->wp);
    cpu_free(s);
}

netrun_status cpu_c1x1_create(int64_t c, int64_t m, const float *w, const netrun_fused_activation *act,
                              int mode, cpu_c1x1 **out) {
    *out = NULL;
    if (c < 1 || m < 1 || c > ((int64_t)1 << 24) / (m + 16) ||
        (mode == CPU_C1X1_BLK_PLAIN || mode == CPU_C1X1_BLK_PLAIN2 ? c % 16 : mode == CPU_C1X1_PLAIN_BLK ? m % 16 : 0) ||
        (mode == CPU_C1X1_BLK_BLK && (c % 16 || m % 16)) ||
        (mode != CPU_C1X1_PLAIN_BLK && mode != CPU_C1X1_BLK_PLAIN && mode != CPU_C1X1_PLAIN_PLAIN &&
         mode != CPU_C1X1_BLK_BLK && mode != CPU_C1X1_BLK_PLAIN2))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Conv 1x1 (nChw16c): C %lld, M %lld unsupported",
                               (long long)c, (long long)m);
    cpu_c1x1 *s = cpu_alloc(sizeof *s);
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv 1x1 (nChw16c out): out of memory");
    memset(s, 0, sizeof *s);
    s->c = c;
    s->m = m;
    int rows = mode == CPU_C1X1_PLAIN_PLAIN ? C1_PP_R : 16; /* output channels per packed group */
    s->mb = (m + rows - 1) / rows;
    s->mode = mode;
    s->act = *act;
    s->wp = cpu_alloc((size_t)(c * s->mb * rows) * sizeof(float));
    if (!s->wp) {
        cpu_free(s);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv 1x1 (nChw16c out): out of memory packing W");
    }
    for (int64_t ob = 0; ob < s->mb; ob++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int l = 0; l < rows; l++)
                s->wp[(ob * c + ci) * rows + l] = ob * rows + l < m ? w[(ob * rows + l) * c + ci] : 0.0f;
    *out = s;
    return NETRUN_OK;
}

typedef struct c1_job {
    const cpu_c1x1 *s;
    const float *x, *b, *z;
    const float *sc; /* per-image input-channel scales (squeeze-excite folded in), or NULL */
    int64_t sc_stride;
    float *y;
    int64_t hw, chunk, chunks; /* pixels per task, tasks per image */
    int64_t obg, obper; /* output blocks cut into obg groups of obper blocks (few pixels: more tasks) */
} c1_job;

/* Task t of a range: image img, pixels [q0, q1) of its chunk (chunk pixels each), output blocks [ob0, ob1), and
 * the image's X, Y and Z. */
typedef struct c1_task {
    int64_t q0, q1, ob0, ob1;
    const float *x, *z, *sc;
    float *y;
} c1_task;

static inline c1_task c1_task_of(const c1_job *j, int64_t t) {
    const int64_t hw = j->hw, chunk = j->chunk, img = t / (j->chunks * j->obg);
    c1_task k;
    k.q0 = (t / j->obg % j->chunks) * chunk;
    k.q1 = k.q0 + chunk < hw ? k.q0 + chunk : hw;
    k.ob0 = t % j->obg * j->obper;
    k.ob1 = k.ob0 + j->obper < j->s->mb ? k.ob0 + j->obper : j->s->mb;
    k.x = j->x + img * j->s->c * hw;
    k.y = j->y + img * j->s->m * hw;
    k.z = j->z ? j->z + img * j->s->m * hw : NULL;
    k.sc = j->sc ? j->sc + img * j->sc_stride : NULL;
    return k;
}

/* The packed weights of output blocks [ob, ob + nb): W itself, or with sc (the image's input-channel scales)
 * W times sc into buf: per task one multiply per weight instead of a pass over X (c * 16 * nb floats). */
static inline const float *c1_weights(const cpu_c1x1 *s, const float *sc, int64_t ob, int nb, float *buf) {
    const float *w = s->wp + ob * s->c * 16;
    if (!sc) return w;
    for (int b = 0; b < nb; b++)
        for (int64_t ci = 0; ci < s->c; ci++)
            for (int l = 0; l < 16; l++) buf[(b * s->c + ci) * 16 + l] = w[(b * s->c + ci) * 16 + l] * sc[ci];
    return buf;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "avx512_transpose.h"
#define C1_AVX512 1

/* One tile: NB (1 or 2) output blocks from ob, P (<= C1_P) pixels from p0 of image x / y. XB: X is nChw16c
 * too (CPU_C1X1_BLK_BLK), channel ci of pixel p at ((ci / 16) * hw + p) * 16 + ci % 16. */
__attribute__((target("avx512f,fma"), always_inline)) static inline void
c1_tile(const c1_job *j, const float *w0, const float *x, float *y, const float *z, int64_t ob, int64_t p0, const int P,
        const int NB, const int XB) {
    const cpu_c1x1 *s = j->s;
    const int64_t c = s->c, hw = j->hw;
    __m512 acc[2][C1_P];
#pragma GCC unroll 2
    for (int b = 0; b < NB; b++)
#pragma GCC unroll 12
        for (int p = 0; p < P; p++) acc[b][p] = _mm512_setzero_ps();
    const float *xr = x + p0;
    for (int64_t ci = 0; ci < c; ci++, xr += hw) {
        /* plain X: C rows each read 12 floats a tile, too many streams for the hardware prefetcher (24 -> 144 at
         * 56x56, b8, 1 thread: 2.4-2.6 -> 2.1-2.5 ms) */
        if (!XB) _mm_prefetch((const char *)(xr + 2 * C1_P), _MM_HINT_T0);
        __m512 wv0 = _mm512_load_ps(w0 + ci * 16), wv1 = wv0;
        if (NB > 1) wv1 = _mm512_load_ps(w0 + (c + ci) * 16);
        const float *xq = XB ? x + ((ci >> 4) * hw + p0) * 16 + (ci & 15) : xr;
#pragma GCC unroll 12
        for (int p = 0; p < P; p++) {
            __m512 xv = _mm512_set1_ps(xq[XB ? p * 16 : p]);
            acc[0][p] = _mm512_fmadd_ps(wv0, xv, acc[0][p]);
            if (NB > 1) acc[1][p] = _mm512_fmadd_ps(wv1, xv, acc[1][p]);
        }
    }
    const netrun_fused_activation *a = &s->act;
#pragma GCC unroll 2
    for (int b = 0; b < NB; b++) {
        __m512 bv = j->b ? _mm512_loadu_ps(j->b + (ob + b) * 16) : _mm512_setzero_ps();
        float *yb = y + ((ob + b) * hw + p0) * 16;
        const float *zb = z ? z + ((ob + b) * hw + p0) * 16 : NULL;
#pragma GCC unroll 12
        for (int p = 0; p < P; p++) _mm512_storeu_ps(yb + p * 16, blk_epilogue(acc[b][p], bv, zb ? zb + p * 16 : NULL, a));
        if (blk_act_after(a)) gu_act_n(yb, (int64_t)P * 16, a);
    }
}

/* nChw16c X -> plain Y: output block ob (channels ob*16.., fewer in the last block), P (<= 16) pixels from p0. */
__attribute__((target("avx512f,fma"), always_inline)) static inline void
c1_tile_yplain(const c1_job *j, const float *x, float *y, const float *z, int64_t ob, int64_t p0, const int P) {
    const cpu_c1x1 *s = j->s;
    const int64_t c = s->c, hw = j->hw;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int p = 0; p < 16; p++) acc[p] = _mm512_setzero_ps();
    const float *w0 = s->wp + ob * c * 16;
    for (int64_t cb = 0; cb < c; cb += 16) {
        const float *xb = x + (cb * hw + p0 * 16);
        for (int l = 0; l < 16; l++) {
            __m512 wv = _mm512_load_ps(w0 + (cb + l) * 16);
#pragma GCC unroll 16
            for (int p = 0; p < P; p++) acc[p] = _mm512_fmadd_ps(wv, _mm512_set1_ps(xb[p * 16 + l]), acc[p]);
        }
    }
    avx512_transpose16(acc); /* acc[l]: output channel ob*16 + l at the 16 pixels */
    const netrun_fused_activation *a = &s->act;
    const __mmask16 pm = (__mmask16)((1u << P) - 1);
    int lanes = s->m - ob * 16 < 16 ? (int)(s->m - ob * 16) : 16;
    for (int l = 0; l < lanes; l++) {
        int64_t oc = ob * 16 + l;
        __m512 v = acc[l];
        if (j->b) v = _mm512_add_ps(v, _mm512_set1_ps(j->b[oc]));
        if (z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(pm, z + oc * hw + p0));
        if (a->kind == NETRUN_ACT_RELU) v = _mm512_max_ps(v, _mm512_setzero_ps());
        else if (a->kind == NETRUN_ACT_CLIP)
            v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(a->alpha)), _mm512_set1_ps(a->beta));
        _mm512_mask_storeu_ps(y + oc * hw + p0, pm, v);
        if (a->kind != NETRUN_ACT_NONE && a->kind != NETRUN_ACT_RELU && a->kind != NETRUN_ACT_CLIP)
            gu_act_n(y + oc * hw + p0, P, a);
    }
}

/* nChw16c X -> plain Y, two output blocks per tile (CPU_C1X1_BLK_PLAIN2): each broadcast of X feeds two FMAs
 * (the one-block tile above issues one broadcast load per FMA: perf puts EfficientNet-B0's 96/144 -> 24
 * projections at half of oneDNN's FMA rate). The second block is 8 lanes wide (ymm, half the cost of a zmm FMA
 * on AMD's 256-bit pipes) when it holds at most 8 channels: 24 = 16 + 8, 40 = 16 + 16 | 8 (a last lone block
 * of <= 8 channels is 8 lanes wide too). P (<= C1_P) pixels; the accumulators (pixel rows) are transposed
 * 16 x 16 in registers into a chunk buffer of the pair's channel rows, which c1_flush writes out as whole rows
 * with bias, Z and activation: written straight to Y, 24 or 32 rows of 12 floats per tile (plus as many rows of
 * Z) were as many streams as misses, 20-25% of the node at batch 8. */
__attribute__((target("avx512f,fma"), always_inline)) static inline void
c1_tile_yp2(const c1_job *j, const float *w0, const float *x, int64_t ob, int64_t p0, const int TAIL, const int NB,
            const int HALF, float *buf, int64_t col, int pn) {
    const int P = TAIL ? pn : C1_P; /* TAIL: a last tile of pn < C1_P pixels (one instance, not one per count:
                                     * clang with sanitizers took 15+ minutes over 48 of them) */
    const cpu_c1x1 *s = j->s;
    const int64_t c = s->c, hw = j->hw;
    const int ONEH = NB == 1 && HALF; /* one block of <= 8 channels: h1 holds it */
    __m512 a0[C1_P], a1[C1_P];
    __m256 h1[C1_P];
#pragma GCC unroll 12
    for (int p = 0; p < C1_P; p++) {
        if (!ONEH) a0[p] = _mm512_setzero_ps();
        if (NB > 1 && !HALF) a1[p] = _mm512_setzero_ps();
        if (HALF) h1[p] = _mm256_setzero_ps();
    }
    const float *w1 = ONEH ? w0 : w0 + c * 16;
    for (int64_t cb = 0; cb < c; cb += 16) {
        const float *xb = x + (cb * hw + p0 * 16);
        /* the next tile's pixels of this channel block: X streams in from L3 / memory (a batch of 56x56 planes
         * is no L2 load); the whole chunk's X once read through is not (EfficientNet-B0 b8, 1 thread: -20%) */
#pragma GCC unroll 12
        for (int p = 0; p < C1_P; p++) _mm_prefetch((const char *)(xb + (C1_P + p) * 16), _MM_HINT_T0);
        for (int l = 0; l < 16; l++) {
            __m512 wv0 = _mm512_load_ps(w0 + (cb + l) * 16), wv1 = wv0;
            __m256 wh1 = _mm256_setzero_ps();
            if (NB > 1 && !HALF) wv1 = _mm512_load_ps(w1 + (cb + l) * 16);
            if (HALF) wh1 = _mm256_load_ps(w1 + (cb + l) * 16);
#pragma GCC unroll 12
            for (int p = 0; p < C1_P; p++) {
                if (TAIL && p >= P) break;
                __m512 xv = _mm512_broadcastss_ps(_mm_load_ss(xb + p * 16 + l));
                if (!ONEH) a0[p] = _mm512_fmadd_ps(wv0, xv, a0[p]);
                if (NB > 1 && !HALF) a1[p] = _mm512_fmadd_ps(wv1, xv, a1[p]);
                if (HALF) h1[p] = _mm256_fmadd_ps(wh1, _mm512_castps512_ps256(xv), h1[p]);
            }
        }
    }
    const __mmask16 pm = (__mmask16)((1u << P) - 1);
    for (int b = 0; b < NB; b++) { /* raw sums into buf's rows (channel ob * 16 + row); c1_flush adds the rest */
        __m512 r[16];
#pragma GCC unroll 16
        for (int p = 0; p < 16; p++)
            r[p] = p >= C1_P || p >= P     ? _mm512_setzero_ps()
                   : b == 0 && !ONEH        ? a0[p]
                   : HALF                   ? _mm512_zextps256_ps512(h1[p])
                                            : a1[p];
        avx512_transpose16(r); /* r[l]: channel (ob + b) * 16 + l at the P pixels */
        int64_t left = s->m - (ob + b) * 16;
        int lanes = left < 16 ? (int)left : 16;
        for (int l = 0; l < lanes; l++) _mm512_mask_storeu_ps(buf + (b * 16 + l) * C1_CHUNK + col, pm, r[l]);
    }
}

#define C1_YP2(T)                                                                                              \
    do {                                                                                                       \
        if (nb == 1 && half) c1_tile_yp2(j, w0, x, ob, p0, T, 1, 1, buf, p0 - q0, P);                          \
        else if (nb == 1) c1_tile_yp2(j, w0, x, ob, p0, T, 1, 0, buf, p0 - q0, P);                             \
        else if (half) c1_tile_yp2(j, w0, x, ob, p0, T, 2, 1, buf, p0 - q0, P);                                \
        else c1_tile_yp2(j, w0, x, ob, p0, T, 2, 0, buf, p0 - q0, P);                                          \
    } while (0)

/* Rows [oc0, oc1) of buf (pixels q0 .. q1 of the chunk) + bias (+ Z), activation, out to Y as whole rows. */
__attribute__((target("avx512f,fma"))) static void c1_flush(const c1_job *j, const float *buf, float *y,
                                                            const float *z, int64_t oc0, int64_t oc1, int64_t q0,
                                                            int64_t q1) {
    const netrun_fused_activation *a = &j->s->act;
    const int64_t hw = j->hw, n = q1 - q0;
    for (int64_t oc = oc0; oc < oc1; oc++) {
        const float *br = buf + (oc - oc0) * C1_CHUNK;
        float *yr = y + oc * hw + q0;
        const float *zr = z ? z + oc * hw + q0 : NULL;
        __m512 bv = _mm512_set1_ps(j->b ? j->b[oc] : 0.0f);
        for (int64_t i = 0; i < n; i += 16) {
            __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
            __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, br + i), bv);
            if (zr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, zr + i));
            if (a->kind == NETRUN_ACT_RELU) v = _mm512_max_ps(v, _mm512_setzero_ps());
            else if (a->kind == NETRUN_ACT_CLIP)
                v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(a->alpha)), _mm512_set1_ps(a->beta));
            _mm512_mask_storeu_ps(yr + i, m, v);
        }
        if (a->kind != NETRUN_ACT_NONE && a->kind != NETRUN_ACT_RELU && a->kind != NETRUN_ACT_CLIP)
            gu_act_n(yr, n, a);
    }
}

/* Blocks are paired from the first; a last odd block runs alone. */
__attribute__((target("avx512f,fma"))) static void c1_range_yp2(void *arg, int64_t t0, int64_t t1) {
    const c1_job *j = arg;
    float buf[32 * C1_CHUNK] __attribute__((aligned(64))); /* a block pair's rows of the chunk */
    float wbuf[2 * 256 * 16] __attribute__((aligned(64))); /* scaled weights (C <= 256 in this mode) */
    for (int64_t t = t0; t < t1; t++) {
        const c1_task k = c1_task_of(j, t);
        const int64_t q0 = k.q0, q1 = k.q1, ob0 = k.ob0, ob1 = k.ob1;
        const float *x = k.x, *z = k.z;
        float *y = k.y;
        for (int64_t ob = ob0; ob < ob1; ob += 2) {
            int nb = ob1 - ob >= 2 ? 2 : 1, half = j->s->m - (ob + nb - 1) * 16 <= 8;
            const float *w0 = c1_weights(j->s, k.sc, ob, nb, wbuf);
            for (int64_t p0 = q0; p0 < q1; p0 += C1_P) {
                int P = q1 - p0 >= C1_P ? C1_P : (int)(q1 - p0);
                if (P == C1_P) C1_YP2(0);
                else C1_YP2(1);
            }
            int64_t oc1 = (ob + nb) * 16 < j->s->m ? (ob + nb) * 16 : j->s->m;
            c1_flush(j, buf, y, z, ob * 16, oc1, q0, q1);
        }
    }
}

#define C1_CASE_YP(P)                                                                                          \
    case P: c1_tile_yplain(j, x, y, z, ob, p0, P); break;

__attribute__((target("avx512f,fma"))) static void c1_range_yplain(void *arg, int64_t t0, int64_t t1) {
    const c1_job *j = arg;
    for (int64_t t = t0; t < t1; t++) {
        const c1_task k = c1_task_of(j, t);
        const int64_t q0 = k.q0, q1 = k.q1, ob0 = k.ob0, ob1 = k.ob1;
        const float *x = k.x, *z = k.z;
        float *y = k.y;
        for (int64_t ob = ob0; ob < ob1; ob++)
            for (int64_t p0 = q0; p0 < q1; p0 += 16) {
                int P = q1 - p0 >= 16 ? 16 : (int)(q1 - p0);
                switch (P) {
                    C1_CASE_YP(16) C1_CASE_YP(15) C1_CASE_YP(14) C1_CASE_YP(13) C1_CASE_YP(12) C1_CASE_YP(11)
                    C1_CASE_YP(10) C1_CASE_YP(9) C1_CASE_YP(8) C1_CASE_YP(7) C1_CASE_YP(6) C1_CASE_YP(5)
                    C1_CASE_YP(4) C1_CASE_YP(3) C1_CASE_YP(2) C1_CASE_YP(1)
                default: break;
                }
            }
    }
}

/* plain X -> plain Y: MR (<= 6) output channels from group rg x 64 pixels from p0 (mk: the valid lanes of
 * each of the 4 vectors); per input channel 4 vectors of one X row and MR broadcasts of W feed 4 MR FMAs.
 * No packing of X (OpenBLAS's sgemm packs it first, which dominates at ShuffleNet's K = 24 .. 232).
 * pf (the first group of a tile with another tile after it in the task): each input channel's 4 lines of the
 * next tile are prefetched. The tile reads C rows a plane apart, more streams than the hardware prefetcher
 * follows: the plain 1x1 nodes of MnasNet at batch 8 4.07 -> 3.92 ms, ShuffleNetV2's 7.57 -> 7.03, at batch 1
 * 0.63 -> 0.57 and 1.14 -> 1.10 (2 threads, node minimums over 6 rounds). */
__attribute__((target("avx512f,fma"), always_inline)) static inline void
c1_tile_pp(const c1_job *j, const float *x, float *y, const float *z, int64_t rg, int64_t p0, const __mmask16 *mk,
           int P, const int MR, const int NV, int pf) {
    const cpu_c1x1 *s = j->s;
    const int64_t c = s->c, hw = j->hw;
    __m512 acc[C1_PP_R][4];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
    const float *w0 = s->wp + rg * c * C1_PP_R, *xr = x + p0;
    for (int64_t ci = 0; ci < c; ci++, xr += hw, w0 += C1_PP_R) {
        __m512 xv[4];
        if (pf)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) _mm_prefetch((const char *)(xr + 64 + 16 * v), _MM_HINT_T0);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) xv[v] = _mm512_maskz_loadu_ps(mk[v], xr + 16 * v);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m512 wv = _mm512_set1_ps(w0[r]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(xv[v], wv, acc[r][v]);
        }
    }
    const netrun_fused_activation *a = &s->act;
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        int64_t oc = rg * C1_PP_R + r;
        __m512 bv = j->b ? _mm512_set1_ps(j->b[oc]) : _mm512_setzero_ps();
        float *yr = y + oc * hw + p0;
        const float *zr = z ? z + oc * hw + p0 : NULL;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            __m512 val = _mm512_add_ps(acc[r][v], bv);
            if (zr) val = _mm512_add_ps(val, _mm512_maskz_loadu_ps(mk[v], zr + 16 * v));
            if (a->kind == NETRUN_ACT_RELU) val = _mm512_max_ps(val, _mm512_setzero_ps());
            else if (a->kind == NETRUN_ACT_CLIP)
                val = _mm512_min_ps(_mm512_max_ps(val, _mm512_set1_ps(a->alpha)), _mm512_set1_ps(a->beta));
            _mm512_mask_storeu_ps(yr + 16 * v, mk[v], val);
        }
        if (a->kind != NETRUN_ACT_NONE && a->kind != NETRUN_ACT_RELU && a->kind != NETRUN_ACT_CLIP)
            gu_act_n(yr, P, a);
    }
}

/* NV: the vectors of the tile that hold pixels; a plane's last tile (196 = 3 x 64 + 4 pixels) runs one, not four
 * of masked-off FMAs: ShuffleNetV2's 116 -> 116 at 14x14, batch 1, 2 threads, 0.053 -> 0.040 ms a node (min of
 * 6 rounds; onnxruntime 0.035). */
#define C1_CASE_PP(R)                                                                                          \
    case R:                                                                                                    \
        if (nv == 4) c1_tile_pp(j, x, y, z, rg, p0, mk, P, R, 4, rg == ob0 && p0 + 64 < q1);                 \
        else if (nv == 3) c1_tile_pp(j, x, y, z, rg, p0, mk, P, R, 3, rg == ob0 && p0 + 64 < q1);            \
        else if (nv == 2) c1_tile_pp(j, x, y, z, rg, p0, mk, P, R, 2, rg == ob0 && p0 + 64 < q1);            \
        else c1_tile_pp(j, x, y, z, rg, p0, mk, P, R, 1, rg == ob0 && p0 + 64 < q1);                         \
        break;

__attribute__((target("avx512f,fma"))) static void c1_range_pp(void *arg, int64_t t0, int64_t t1) {
    const c1_job *j = arg;
    for (int64_t t = t0; t < t1; t++) {
        const c1_task k = c1_task_of(j, t);
        const int64_t q0 = k.q0, q1 = k.q1, ob0 = k.ob0, ob1 = k.ob1;
        const float *x = k.x, *z = k.z;
        float *y = k.y;
        for (int64_t p0 = q0; p0 < q1; p0 += 64) {
            int P = q1 - p0 >= 64 ? 64 : (int)(q1 - p0), nv = (P + 15) / 16;
            __mmask16 mk[4];
            for (int v = 0; v < 4; v++) {
                int n = P - 16 * v;
                mk[v] = n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1) : 0;
            }
            for (int64_t rg = ob0; rg < ob1; rg++) {
                int R = j->s->m - rg * C1_PP_R < C1_PP_R ? (int)(j->s->m - rg * C1_PP_R) : C1_PP_R;
                switch (R) {
                    C1_CASE_PP(6) C1_CASE_PP(5) C1_CASE_PP(4) C1_CASE_PP(3) C1_CASE_PP(2) C1_CASE_PP(1)
                default: break;
                }
            }
        }
    }
}

#define C1_CASE(P)                                                                                             \
    case P:                                                                                                    \
        if (xb) {                                                                                              \
            if (nb == 2) c1_tile(j, w0, x, y, z, ob, p0, P, 2, 1);                                             \
            else c1_tile(j, w0, x, y, z, ob, p0, P, 1, 1);                                                     \
        } else if (nb == 2) c1_tile(j, w0, x, y, z, ob, p0, P, 2, 0);                                          \
        else c1_tile(j, w0, x, y, z, ob, p0, P, 1, 0);                                                         \
        break;

__attribute__((target("avx512f,fma"))) static void c1_range(void *arg, int64_t t0, int64_t t1) {
    const c1_job *j = arg;
    const int xb = j->s->mode == CPU_C1X1_BLK_BLK;
    float wbuf[2 * 512 * 16] __attribute__((aligned(64))); /* scaled weights (C <= 512 in these modes) */
    for (int64_t t = t0; t < t1; t++) {
        const c1_task k = c1_task_of(j, t);
        const int64_t q0 = k.q0, q1 = k.q1, ob0 = k.ob0, ob1 = k.ob1;
        const float *x = k.x, *z = k.z;
        float *y = k.y;
        for (int64_t ob = ob0; ob < ob1; ob += 2) {
            int nb = ob1 - ob >= 2 ? 2 : 1;
            const float *w0 = c1_weights(j->s, k.sc, ob, nb, wbuf);
            for (int64_t p0 = q0; p0 < q1; p0 += C1_P) {
                int P = q1 - p0 >= C1_P ? C1_P : (int)(q1 - p0);
                switch (P) {
                    C1_CASE(12) C1_CASE(11) C1_CASE(10) C1_CASE(9) C1_CASE(8) C1_CASE(7)
                    C1_CASE(6) C1_CASE(5) C1_CASE(4) C1_CASE(3) C1_CASE(2) C1_CASE(1)
                default: break;
                }
            }
        }
    }
}
#endif

int cpu_c1x1_available(cpu_context *ctx) {
#ifdef C1_AVX512
    return cpu_avx512_enabled(ctx, "cpu.conv1x1_blk");
#else
    (void)ctx;
    return 0;
#endif
}

int cpu_c1x1_takes_scale(int mode) {
    return mode == CPU_C1X1_PLAIN_BLK || mode == CPU_C1X1_BLK_BLK || mode == CPU_C1X1_BLK_PLAIN2;
}

netrun_status cpu_c1x1_run(cpu_context *ctx, const cpu_c1x1 *s, const float *x, const float *b, const float *z,
                           const float *sc, int64_t sc_stride, float *y, int64_t n, int64_t hw) {
#ifdef C1_AVX512
    if (!s || !x || !y || n < 0 || hw < 0)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Conv 1x1 (nChw16c): missing tensors");
    if (sc && (!cpu_c1x1_takes_scale(s->mode) || s->c > (s->mode == CPU_C1X1_BLK_PLAIN2 ? 256 : 512)))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Conv 1x1 (nChw16c): no input scale in this mode");
    if (!cpu_has_avx512f())
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Conv 1x1 (nChw16c): needs AVX-512F");
    if (n == 0 || hw == 0) return NETRUN_OK;
    int64_t chunk = s->mode == CPU_C1X1_PLAIN_PLAIN ? C1_PP_CHUNK : C1_CHUNK;
    int64_t want = 4 * (int64_t)(ctx->threads > 0 ? ctx->threads : 1);
    /* few pixels, few output blocks (SqueezeNet's squeezes to 32-64 channels at 13x13 / 27x27): smaller chunks
     * of whole tiles, down to 2 tiles, so every thread gets pixels (the kernels with a chunk-sized buffer keep
     * theirs) */
    if ((s->mode == CPU_C1X1_BLK_BLK || s->mode == CPU_C1X1_PLAIN_BLK) && n * ((hw + chunk - 1) / chunk) < want) {
        int64_t per_img = (want + n - 1) / n, c2 = (hw + per_img - 1) / per_img;
        c2 = (c2 + C1_P - 1) / C1_P * C1_P;
        chunk = c2 < 2 * C1_P ? 2 * C1_P : c2 < chunk ? c2 : chunk;
    }
    c1_job j = {s, x, b, z, sc, sc_stride, y, hw, chunk, (hw + chunk - 1) / chunk, 1, s->mb};
    /* still few tasks (SqueezeNet's 512 -> 1000 at 13x13 is one chunk): cut the output blocks too, into groups
     * of an even count (the plain-X kernel pairs blocks), so that every thread gets work */
    int64_t tasks = n * j.chunks;
    if (tasks < want && s->mb > 2) {
        int64_t per = (s->mb * tasks + want - 1) / want;
        per = per < 2 ? 2 : (per + 1) / 2 * 2;
        j.obper = per;
        j.obg = (s->mb + per - 1) / per;
    }
    cpu_range_fn fn = s->mode == CPU_C1X1_BLK_PLAIN    ? c1_range_yplain
                      : s->mode == CPU_C1X1_BLK_PLAIN2 ? c1_range_yp2
                      : s->mode == CPU_C1X1_PLAIN_PLAIN ? c1_range_pp
                                                        : c1_range;
    cpu_parallel_for(ctx, n * j.chunks * j.obg, 1, fn, &j);
    return NETRUN_OK;
#else
    (void)ctx, (void)s, (void)x, (void)b, (void)z, (void)sc, (void)sc_stride, (void)y, (void)n, (void)hw;
    return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Conv 1x1 (nChw16c): built without the AVX-512 kernel");
#endif
}
