/* Winograd F(2x2, 3x3) on nChw16c X and Y (see conv_wino_blk.h). Each 2x2 output tile reads a 4x4 patch of X;
 * in the transformed domain the conv is 16 independent GEMMs (one per patch position) over the input channels.
 * The tiles of the batch are cut into bands whose transformed input V (16 x C x band floats) stays in L2:
 * - phase A (tasks: 12 tiles x one 16-channel block): V = B^T d B of every patch, V [16][C/16][band][16];
 * - phase B (tasks: a pair of output blocks x some groups of up to 12 tiles): per position, a register tile of
 *   2 blocks x 12 tiles = 24 zmm accumulators over C (2 weight vectors and 12 broadcasts of V per channel, as in
 *   conv1x1_blk.c), kept in a 24 KB buffer; then Y = A^T M A with bias, Z and the activation, straight into Y.
 * U = G g G^T is made at create: [M/16][16 positions][C][16], so a pair's weights stream once per band.
 * Where U fits a core's L2 (CPU_CW_U_L2: ResNet's layer1, SqueezeNet's first fires) there are no bands: each thread
 * runs both phases on tasks of its own tiles, V in its slice of the workspace, with no barrier between them (as
 * bands, layer1 lost to oneDNN: two regions for every 120 tiles). */
/* gu_act_n's compare-and-select activations (gemm_util.h) vectorize only without trapping math: netrun never
 * enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "conv_wino_blk.h"

#include <stdio.h>

#include "blk_epilogue.h"
#include "gemm_util.h"

#define CW_P 12                    /* tiles per register tile */
/* V of a band: read by every output pair of phase B, so it should stay in L2. Fewer bands also mean fewer barriers
 * and U read fewer times: 768 KB instead of 512 takes ResNet-50's layer3 at batch 1 (49 tiles) from 3 bands to 2,
 * 0.31 -> 0.29 ms a conv at 2 threads; 1 MB (one band) was no better, and batch 8 did not change. */
#define CW_BAND_BYTES (768 * 1024)
#define CW_V_FUSED (256 * 1024)    /* V of one task of the one-pass mode */

struct cpu_cw {
    int64_t c, m, mb, h, w, th, tw; /* th x tw tiles an image: ceil(h / 2) x ceil(w / 2) */
    int64_t band;                   /* tiles a band (a multiple of CW_P) */
    int fused;                      /* one pass: each thread transforms, multiplies and writes its own tiles */
    int64_t tg, threads;            /* fused: tiles a task at most, and the threads the workspace is for */
    netrun_fused_activation act;
    float *u; /* [mb][16][c][16] */
};

int cpu_cw_fits(int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const int64_t k[2],
                const int64_t s[2], const int64_t d[2], const int64_t pads_begin[2], const int64_t pads_end[2]) {
    return c > 0 && m > 0 && c % 16 == 0 && m % 16 == 0 && c <= 8192 && m <= 8192 && k[0] == 3 && k[1] == 3 &&
           s[0] == 1 && s[1] == 1 && d[0] == 1 && d[1] == 1 && pads_begin[0] == 1 && pads_begin[1] == 1 &&
           pads_end[0] == 1 && pads_end[1] == 1 && ih > 0 && iw > 0 && oh == ih && ow == iw;
}

void cpu_cw_destroy(cpu_cw *s) {
    if (!s) return;
    cpu_free(s->u);
    cpu_free(s);
}

netrun_status cpu_cw_create(int64_t c, int64_t m, int64_t h, int64_t w, const float *wt,
                            const netrun_fused_activation *act, int threads, cpu_cw **out, size_t *ws_bytes) {
    *out = NULL;
    *ws_bytes = 0;
    const int64_t k[2] = {3, 3}, one[2] = {1, 1};
    if (!cpu_cw_fits(c, m, h, w, h, w, k, one, one, one, one) || h > ((int64_t)1 << 20) || w > ((int64_t)1 << 20))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                               "Conv 3x3 Winograd (nChw16c): C %lld, M %lld, X %lldx%lld unsupported", (long long)c,
                               (long long)m, (long long)h, (long long)w);
    cpu_cw *s = cpu_alloc(sizeof *s);
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv 3x3 Winograd (nChw16c): out of memory");
    memset(s, 0, sizeof *s);
    s->c = c, s->m = m, s->mb = m / 16, s->h = h, s->w = w, s->th = (h + 1) / 2, s->tw = (w + 1) / 2;
    s->band = CW_BAND_BYTES / (16 * c * (int64_t)sizeof(float)) / CW_P * CW_P;
    if (s->band < CW_P) s->band = CW_P;
    s->act = *act;
    s->u = cpu_alloc((size_t)(16 * c * m) * sizeof(float));
    if (!s->u) {
        cpu_free(s);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv 3x3 Winograd (nChw16c): out of memory for U");
    }
    static const float G[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
    for (int64_t o = 0; o < m; o++)
        for (int64_t ci = 0; ci < c; ci++) {
            const float *g = wt + (o * c + ci) * 9;
            float t[4][3], u[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 3; j++) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) u[i][j] = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
            for (int pos = 0; pos < 16; pos++)
                s->u[(((o / 16) * 16 + pos) * c + ci) * 16 + o % 16] = u[pos / 4][pos % 4];
        }
    s->threads = threads > 0 ? threads : 1;
    s->fused = 16 * c * m * (int64_t)sizeof(float) <= CPU_CW_U_L2;
    s->tg = CW_V_FUSED / (16 * c * (int64_t)sizeof(float)) / CW_P * CW_P;
    if (s->tg < CW_P) s->tg = CW_P;
    *ws_bytes = (size_t)(16 * c * (s->fused ? s->threads * s->tg : s->band)) * sizeof(float);
    *out = s;
    return NETRUN_OK;
}

typedef struct cw_job {
    const cpu_cw *s;
    const float *x, *b, *z;
    float *y, *v;
    int64_t t0, nt;           /* the band: tiles [t0, t0 + nt) of the batch */
    int64_t groups, gper, chunks; /* phase B: groups of up to CW_P tiles, gper a task, chunks a pair */
    int64_t tasks;                /* one-pass mode: tasks the batch's tiles are cut into */
} cw_job;

/* Tiles [g * nt / groups, (g + 1) * nt / groups) of the band: groups of even size. */
static inline int64_t cw_group_start(const cw_job *j, int64_t g) { return g * j->nt / j->groups; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CW_AVX512 1

/* Phase A, task t: group t / (C/16), channel block t % (C/16). */
__attribute__((target("avx512f"))) static void cw_input(void *arg, int64_t t0, int64_t t1) {
    const cw_job *j = arg;
    const cpu_cw *s = j->s;
    const int64_t cbn = s->c / 16, h = s->h, w = s->w, per = s->th * s->tw;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t cb = t % cbn, g = t / cbn, q0 = cw_group_start(j, g), q1 = cw_group_start(j, g + 1);
        for (int64_t q = q0; q < q1; q++) {
            const int64_t T = j->t0 + q, img = T / per, r = T % per, y0 = (r / s->tw) * 2 - 1, x0 = (r % s->tw) * 2 - 1;
            const float *xb = j->x + ((img * cbn + cb) * h) * w * 16;
            __m512 d[4][4];
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 4; k++) {
                    const int64_t yy = y0 + i, xx = x0 + k;
                    d[i][k] = yy >= 0 && yy < h && xx >= 0 && xx < w ? _mm512_loadu_ps(xb + (yy * w + xx) * 16)
                                                                     : _mm512_setzero_ps();
                }
            /* B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: rows, then columns */
            __m512 e[4][4];
            for (int k = 0; k < 4; k++) {
                e[0][k] = _mm512_sub_ps(d[0][k], d[2][k]);
                e[1][k] = _mm512_add_ps(d[1][k], d[2][k]);
                e[2][k] = _mm512_sub_ps(d[2][k], d[1][k]);
                e[3][k] = _mm512_sub_ps(d[1][k], d[3][k]);
            }
            float *vq = j->v + (cb * j->nt + q) * 16;
            const int64_t pstride = cbn * j->nt * 16; /* floats between positions */
            for (int i = 0; i < 4; i++) {
                _mm512_storeu_ps(vq + (i * 4 + 0) * pstride, _mm512_sub_ps(e[i][0], e[i][2]));
                _mm512_storeu_ps(vq + (i * 4 + 1) * pstride, _mm512_add_ps(e[i][1], e[i][2]));
                _mm512_storeu_ps(vq + (i * 4 + 2) * pstride, _mm512_sub_ps(e[i][2], e[i][1]));
                _mm512_storeu_ps(vq + (i * 4 + 3) * pstride, _mm512_sub_ps(e[i][1], e[i][3]));
            }
        }
    }
}

/* One position's GEMM for P tiles from q0: NB (1 or 2) blocks of output channels, acc over C, into mo
 * [NB][CW_P][16]. u0 / u1: the blocks' weights at this position ([C][16]). */
__attribute__((target("avx512f,fma"), always_inline)) static inline void
cw_gemm(const float *u0, const float *u1, const float *v, int64_t cbn, int64_t nt, float *mo, const int P,
        const int NB) {
    __m512 acc[2][CW_P];
#pragma GCC unroll 2
    for (int b = 0; b < NB; b++)
#pragma GCC unroll 12
        for (int p = 0; p < P; p++) acc[b][p] = _mm512_setzero_ps();
    for (int64_t cb = 0; cb < cbn; cb++) {
        const float *vb = v + cb * nt * 16;
        for (int l = 0; l < 16; l++) {
            const int64_t ci = cb * 16 + l;
            __m512 wv0 = _mm512_load_ps(u0 + ci * 16), wv1 = wv0;
            if (NB > 1) wv1 = _mm512_load_ps(u1 + ci * 16);
#pragma GCC unroll 12
            for (int p = 0; p < P; p++) {
                __m512 xv = _mm512_set1_ps(vb[p * 16 + l]);
                acc[0][p] = _mm512_fmadd_ps(wv0, xv, acc[0][p]);
                if (NB > 1) acc[1][p] = _mm512_fmadd_ps(wv1, xv, acc[1][p]);
            }
        }
    }
#pragma GCC unroll 2
    for (int b = 0; b < NB; b++)
#pragma GCC unroll 12
        for (int p = 0; p < P; p++) _mm512_store_ps(mo + (b * CW_P + p) * 16, acc[b][p]);
}

#define CW_CASE(P)                                                                                              \
    case P:                                                                                                     \
        if (nb == 2) cw_gemm(u0, u1, vp, cbn, j->nt, mo, P, 2);                                                 \
        else cw_gemm(u0, u1, vp, cbn, j->nt, mo, P, 1);                                                         \
        break;

/* Y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1], for the P tiles of a group and nb output blocks from ob. */
__attribute__((target("avx512f"))) static void cw_output(const cw_job *j, const float *mbuf, int64_t ob, int nb,
                                                         int64_t q0, int P) {
    const cpu_cw *s = j->s;
    const int64_t h = s->h, w = s->w, per = s->th * s->tw, pstride = 2 * CW_P * 16;
    const netrun_fused_activation *a = &s->act;
    for (int b = 0; b < nb; b++) {
        const __m512 bv = j->b ? _mm512_loadu_ps(j->b + (ob + b) * 16) : _mm512_setzero_ps();
        for (int p = 0; p < P; p++) {
            const int64_t T = j->t0 + q0 + p, img = T / per, r = T % per, oy = (r / s->tw) * 2, ox = (r % s->tw) * 2;
            const float *mp = mbuf + (b * CW_P + p) * 16;
            __m512 m[16];
            for (int i = 0; i < 16; i++) m[i] = _mm512_load_ps(mp + i * pstride);
            __m512 s0[4], s1[4];
            for (int k = 0; k < 4; k++) {
                s0[k] = _mm512_add_ps(_mm512_add_ps(m[k], m[4 + k]), m[8 + k]);
                s1[k] = _mm512_sub_ps(_mm512_sub_ps(m[4 + k], m[8 + k]), m[12 + k]);
            }
            __m512 o[2][2];
            o[0][0] = _mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]);
            o[0][1] = _mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]);
            o[1][0] = _mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]);
            o[1][1] = _mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]);
            const int64_t base = (((img * s->mb + ob + b) * h + oy) * w + ox) * 16;
            for (int i = 0; i < 2 && oy + i < h; i++)
                for (int k = 0; k < 2 && ox + k < w; k++) {
                    const int64_t off = base + (i * w + k) * 16;
                    _mm512_storeu_ps(j->y + off, blk_epilogue(o[i][k], bv, j->z ? j->z + off : NULL, a));
                    if (blk_act_after(a)) gu_act_n(j->y + off, 16, a);
                }
        }
    }
}

/* Phase B, task t: pair t / chunks, groups [(t % chunks) * gper, + gper): a thread's consecutive tasks share a
 * pair, whose U it then reads once a band. */
__attribute__((target("avx512f,fma"))) static void cw_gemms(void *arg, int64_t t0, int64_t t1) {
    const cw_job *j = arg;
    const cpu_cw *s = j->s;
    const int64_t cbn = s->c / 16;
    float mbuf[16 * 2 * CW_P * 16] __attribute__((aligned(64))); /* [position][block][tile][16] */
    for (int64_t t = t0; t < t1; t++) {
        const int64_t ob = t / j->chunks * 2, g0 = t % j->chunks * j->gper;
        const int64_t g1 = g0 + j->gper < j->groups ? g0 + j->gper : j->groups;
        const int nb = s->mb - ob >= 2 ? 2 : 1;
        for (int64_t g = g0; g < g1; g++) {
            const int64_t q0 = cw_group_start(j, g);
            const int P = (int)(cw_group_start(j, g + 1) - q0);
            for (int pos = 0; pos < 16; pos++) {
                const float *u0 = s->u + ((ob * 16 + pos) * s->c) * 16, *u1 = u0 + 16 * s->c * 16;
                const float *vp = j->v + (pos * cbn * j->nt + q0) * 16;
                float *mo = mbuf + pos * 2 * CW_P * 16;
                switch (P) {
                    CW_CASE(12) CW_CASE(11) CW_CASE(10) CW_CASE(9) CW_CASE(8) CW_CASE(7)
                    CW_CASE(6) CW_CASE(5) CW_CASE(4) CW_CASE(3) CW_CASE(2) CW_CASE(1)
                default: break;
                }
            }
            cw_output(j, mbuf, ob, nb, q0, P);
        }
    }
}
/* The one-pass mode: slot `slot` (its V in the workspace) runs tasks [k0, k1) of j->tasks, task k being tiles
 * [k * total / tasks, (k + 1) * total / tasks) of the batch: phase A then B on them alone. */
static void cw_fused(void *arg, int64_t slot, int64_t k0, int64_t k1) {
    const cw_job *j = arg;
    const cpu_cw *s = j->s;
    const int64_t tasks = j->tasks, total = j->nt, pairs = (s->mb + 1) / 2;
    for (int64_t k = k0; k < k1; k++) {
        cw_job t = *j;
        t.t0 = k * total / tasks;
        t.nt = (k + 1) * total / tasks - t.t0;
        t.v = j->v + slot * 16 * s->c * s->tg;
        t.groups = (t.nt + CW_P - 1) / CW_P;
        t.chunks = 1, t.gper = t.groups;
        cw_input(&t, 0, t.groups * (s->c / 16));
        cw_gemms(&t, 0, pairs);
    }
}
#endif

int cpu_cw_available(cpu_context *ctx) {
#ifdef CW_AVX512
    return cpu_avx512_enabled(ctx, "cpu.conv_wino");
#else
    (void)ctx;
    return 0;
#endif
}

netrun_status cpu_cw_run(cpu_context *ctx, const cpu_cw *s, const float *x, const float *b, const float *z, float *y,
                         int64_t n, float *ws, size_t ws_bytes) {
#ifdef CW_AVX512
    if (!s || !x || !y || n < 0)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Conv 3x3 Winograd (nChw16c): missing tensors");
    if (!cpu_has_avx512f())
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Conv 3x3 Winograd (nChw16c): needs AVX-512F");
    const size_t need = (size_t)(16 * s->c * (s->fused ? s->threads * s->tg : s->band)) * sizeof(float);
    if (!ws || ws_bytes < need)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                               "Conv 3x3 Winograd (nChw16c): workspace of %zu bytes, %zu needed", ws_bytes, need);
    const int64_t total = n * s->th * s->tw, threads = ctx->threads > 0 ? ctx->threads : 1, pairs = (s->mb + 1) / 2;
    if (s->fused) {
        /* tasks of at most tg tiles, and at least 4 a thread where the tiles allow (groups of CW_P) */
        int64_t tasks = (total + s->tg - 1) / s->tg, most = (total + CW_P - 1) / CW_P;
        if (tasks < 4 * threads) tasks = most < 4 * threads ? most : 4 * threads;
        int64_t slots = gu_slots(ctx, tasks);
        if (slots > s->threads) slots = s->threads; /* the workspace holds s->threads V buffers */
        cw_job j = {s, x, b, z, y, ws, 0, total, 0, 0, 0, tasks};
        gu_run_slots(ctx, tasks, slots, cw_fused, &j);
        return NETRUN_OK;
    }
    const int64_t bands = (total + s->band - 1) / s->band;
    for (int64_t bi = 0; bi < bands; bi++) {
        /* even bands: 784 tiles of 120 at most -> 7 of 112 */
        const int64_t t0 = bi * total / bands, t1 = (bi + 1) * total / bands;
        cw_job j = {s, x, b, z, y, ws, t0, t1 - t0, 0, 0, 0, 0};
        j.groups = (j.nt + CW_P - 1) / CW_P;
        /* phase B: a pair's groups in as few tasks as keep every thread busy (each task reads its pair's U) */
        const int64_t want = 4 * threads;
        j.chunks = pairs >= want ? 1 : (want + pairs - 1) / pairs;
        if (j.chunks > j.groups) j.chunks = j.groups;
        j.gper = (j.groups + j.chunks - 1) / j.chunks;
        j.chunks = (j.groups + j.gper - 1) / j.gper;
        cpu_parallel_for(ctx, j.groups * (s->c / 16), 1, cw_input, &j);
        cpu_parallel_for(ctx, pairs * j.chunks, 1, cw_gemms, &j);
    }
    return NETRUN_OK;
#else
    (void)ctx, (void)s, (void)x, (void)b, (void)z, (void)y, (void)n, (void)ws, (void)ws_bytes;
    return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Conv 3x3 Winograd (nChw16c): built without the AVX-512 kernel");
#endif
}
