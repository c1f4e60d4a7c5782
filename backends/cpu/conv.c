/* CPU kernels: conv. Conv is im2col + OpenBLAS sgemm (no im2col for 1x1 stride-1 unpadded kernels), with a
 * direct kernel for depthwise; ConvTranspose is sgemm + col2im. float16 is computed in float32. Work is split
 * statically over the pool's threads: (batch, group, column block) for Conv, (batch, group, channel block)
 * for ConvTranspose, each slot owning a slice of the workspace. */
/* Let the compare-and-select epilogues be if-converted and vectorized: netrun never enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <cblas.h>
#include <limits.h>
#include <stdio.h>

#include "conv1x1_blk.h"
#include "conv_depthwise.h"
#include "conv_dnnl.h"
#include "conv_direct_blk.h"
#include "conv_wino_blk.h"
#include "gemm_util.h"

#define COL_BYTES_CAP ((int64_t)4 << 20) /* im2col slice per thread */

/* Geometry promoted to 3 spatial dims (leading dims of size 1). */
typedef struct conv_geom {
    int64_t n, c, m, g, cg, mg;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
    int64_t in_size, out_size, ksize;
} conv_geom;

static int make_geom(const netrun_conv_params *p, const int64_t *xdims, const int64_t *ydims, int64_t wdim1,
                     int transpose, conv_geom *g) {
    int ns = p->n_spatial;
    if (ns < 1 || ns > 3 || p->group < 1) return 0;
    g->n = xdims[0];
    g->c = xdims[1];
    g->m = ydims[1];
    g->g = p->group;
    g->cg = g->c / g->g;
    g->mg = transpose ? wdim1 : g->m / g->g;
    g->in_size = g->out_size = g->ksize = 1;
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - ns);
        g->in[i] = j >= 0 ? xdims[2 + j] : 1;
        g->out[i] = j >= 0 ? ydims[2 + j] : 1;
        g->k[i] = j >= 0 ? p->kernel[j] : 1;
        g->s[i] = j >= 0 ? p->strides[j] : 1;
        g->d[i] = j >= 0 ? p->dilations[j] : 1;
        g->pb[i] = j >= 0 ? p->pads_begin[j] : 0;
        if (g->in[i] < 0 || g->out[i] < 0 || g->k[i] < 1) return 0;
        /* sizes that overflow (a model's kernel_shape of 2^32 + 3, found by fuzz.importer) are no geometry */
        if (__builtin_mul_overflow(g->in_size, g->in[i], &g->in_size) ||
            __builtin_mul_overflow(g->out_size, g->out[i], &g->out_size) ||
            __builtin_mul_overflow(g->ksize, g->k[i], &g->ksize))
            return 0;
    }
    return 1;
}

static int is_depthwise(const conv_geom *g, int transpose) {
    return !transpose && g->g == g->c && g->cg == 1 && g->mg == 1 && g->g > 1;
}

/* Depthwise with at most 2 spatial dims: the padded-plane kernel of conv_depthwise.c. */
static int is_dw2d(const conv_geom *g, int transpose) {
    return is_depthwise(g, transpose) && g->k[0] == 1 && g->in[0] == 1 && g->out[0] == 1;
}

static void dw_args(const conv_geom *g, cpu_dw_args *a) {
    memset(a, 0, sizeof *a);
    a->planes = g->n * g->c;
    a->c = g->c;
    a->ih = g->in[1], a->iw = g->in[2], a->oh = g->out[1], a->ow = g->out[2];
    a->kh = g->k[1], a->kw = g->k[2], a->sh = g->s[1], a->sw = g->s[2], a->dh = g->d[1], a->dw = g->d[2];
    a->pt = g->pb[1], a->pl = g->pb[2];
}

static size_t dw_workspace(cpu_context *ctx, const conv_geom *g) {
    cpu_dw_args a;
    dw_args(g, &a);
    return (size_t)gu_slots(ctx, a.planes) * cpu_dw_slot_floats(&a) * sizeof(float);
}

static int is_pointwise(const conv_geom *g, const netrun_conv_params *p) {
    for (int i = 0; i < p->n_spatial; i++)
        if (p->kernel[i] != 1 || p->strides[i] != 1 || p->pads_begin[i] != 0 || p->pads_end[i] != 0) return 0;
    return g->in_size == g->out_size;
}

/* A 1x1 conv on 1x1 planes (squeeze-excite's two FCs in EfficientNet): per image one GEMV, whose output
 * channels are cut over the threads (gemv_range). The sgemm path would run it on one thread (its columns are
 * what it cuts), and oneDNN reorders the tiny X and Y around a blocked kernel: EfficientNet-B0's 32 of them
 * took 12 us each at 2 threads, reading at most 221 KB of weights. cpu.conv_gemv=0 keeps oneDNN. */
static int want_gemv(cpu_context *ctx, const netrun_conv_params *p, const conv_geom *g, int transpose) {
    const char *o = cpu_option(ctx, "cpu.conv_gemv");
    return !transpose && g->g == 1 && g->out_size == 1 && g->in_size == 1 && is_pointwise(g, p) &&
           !p->src_blocked && !p->dst_blocked && !p->src_scale && !(o && !strcmp(o, "0"));
}

/* The folded squeeze-excite scale S (params.src_scale) fits X: float32 [N or 1, C, 1, 1] for a 4-D X. */
static int scale_fits(netrun_dtype dt, int rank, const int64_t *dims, int x_rank, const int64_t *x_dims) {
    return dt == NETRUN_DTYPE_FLOAT && rank == 4 && x_rank == 4 && (dims[0] == 1 || dims[0] == x_dims[0]) &&
           dims[1] == x_dims[1] && dims[2] == 1 && dims[3] == 1;
}

/* How the work is cut: `blocks` pieces per (batch, group) of `bsize` columns (Conv) or channels
 * (ConvTranspose), and the floats of workspace each slot needs. */
typedef struct conv_plan {
    int64_t bsize, blocks, tasks, slots, slot_floats;
} conv_plan;

static void make_plan(const conv_geom *g, const netrun_conv_params *p, int transpose, int threads,
                      conv_plan *pl) {
    int64_t ng = g->n * g->g, want = ng > 0 ? (threads + ng - 1) / ng : 1;
    int64_t span = transpose ? g->mg : g->out_size; /* what is cut into blocks */
    if (span < 1) span = 1;
    if (want < 1) want = 1;
    int64_t b = (span + want - 1) / want;
    int64_t row_floats = transpose ? g->ksize * g->in_size : g->cg * g->ksize; /* per unit of b */
    if (row_floats < 1) row_floats = 1;
    int64_t cap = COL_BYTES_CAP / (int64_t)sizeof(float) / row_floats;
    int64_t floor_b = transpose ? 1 : 64;
    if (cap < floor_b) cap = floor_b;
    if (b > cap) b = cap;
    if (b > span) b = span;
    if (b < 1) b = 1;
    pl->bsize = b;
    pl->blocks = (span + b - 1) / b;
    pl->tasks = ng * pl->blocks;
    pl->slots = pl->tasks < threads ? (pl->tasks > 0 ? pl->tasks : 1) : threads;
    if (!transpose && is_pointwise(g, p)) pl->slot_floats = 0;
    else pl->slot_floats = row_floats * b;
}

typedef struct conv_state {
    float *w; /* float copy of a constant float16 W, or NULL */
    cpu_dnnl_conv *dnnl; /* oneDNN primitive for the create-time dims, or NULL */
    cpu_c1x1 *c1;        /* 1x1 kernel between plain and nChw16c (conv1x1_blk.c), or NULL */
    int c1_mode;         /* its CPU_C1X1_* layouts */
    cpu_cdir *cdir;      /* direct kernel on nChw16c (conv_direct_blk.c), or NULL */
    int cdir_stride;     /* its stride */
    cpu_cw *cw;          /* Winograd 3x3 on nChw16c (conv_wino_blk.c), or NULL */
    size_t cw_ws;        /* its workspace */
    int gemv;            /* a 1x1 conv on 1x1 planes run as GEMVs (want_gemv) */
    int rank, has_bias;
    int64_t xd[NETRUN_MAX_RANK], yd[NETRUN_MAX_RANK];
} conv_state;

typedef struct conv_job {
    const conv_geom *g;
    const conv_plan *pl;
    const netrun_conv_params *p;
    const float *x, *w, *b, *z;
    float *y;
    float *ws;
} conv_job;

/* y[rows x len] (row stride ld) += bias per row, + z, then activation. */
static void epilogue(const conv_job *j, float *y, const float *z, int64_t ld, int64_t rows, int64_t len,
                     const float *bias) {
    const netrun_fused_activation *act = &j->p->activation;
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * ld;
        const float bv = bias ? bias[r] : 0.0f;
        const float *zr = z ? z + r * ld : NULL;
        /* one pass over the row while it is in cache for the common bias (+ Z) + ReLU/Clip */
        if (!zr && act->kind == NETRUN_ACT_RELU) {
            for (int64_t i = 0; i < len; i++) {
                float v = yr[i] + bv;
                yr[i] = v > 0 ? v : 0.0f;
            }
            continue;
        }
        if (!zr && act->kind == NETRUN_ACT_SWISH) { /* SiLU: bias and x * sigmoid(x) in one pass */
            gu_swish_n(yr, len, bv, act->alpha);
            continue;
        }
        if (!zr && act->kind == NETRUN_ACT_CLIP) {
            const float lo = act->alpha, hi = act->beta;
            for (int64_t i = 0; i < len; i++) {
                float v = yr[i] + bv;
                v = v < lo ? lo : v;
                yr[i] = v > hi ? hi : v;
            }
            continue;
        }
        if (zr)
            for (int64_t i = 0; i < len; i++) yr[i] = (yr[i] + bv) + zr[i];
        else if (bias)
            for (int64_t i = 0; i < len; i++) yr[i] += bv;
        gu_act_n(yr, len, act);
    }
}

#define GEMV_MIN_ROWS 8
/* Tasks of want_gemv: output channels [m0, m0 + rows) of image n; task t is block t / n, image t % n, so a
 * thread's consecutive tasks read the same rows of W. */
typedef struct gemv_job {
    const conv_job *j;
    int64_t rows;
} gemv_job;

static void gemv_range(void *arg, int64_t t0, int64_t t1) {
    const gemv_job *gj = arg;
    const conv_job *j = gj->j;
    const conv_geom *g = j->g;
    for (int64_t t = t0; t < t1; t++) {
        int64_t n = t % g->n, m0 = (t / g->n) * gj->rows, mr = g->m - m0 < gj->rows ? g->m - m0 : gj->rows;
        float *y = j->y + n * g->m + m0;
        gu_gemv(mr, g->c, 1.0f, j->w + m0 * g->c, g->c, j->x + n * g->c, 0.0f, y);
        if (j->b)
            for (int64_t i = 0; i < mr; i++) y[i] += j->b[m0 + i];
        if (j->z)
            for (int64_t i = 0; i < mr; i++) y[i] += j->z[n * g->m + m0 + i];
        gu_act_n(y, mr, &j->p->activation);
    }
}

/* For positions t in [0, n) reading input index base + t*stride, the range [lo, hi) that lies in [0, size). */
static void valid_range(int64_t base, int64_t stride, int64_t size, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t l = base >= 0 ? 0 : (-base + stride - 1) / stride;
    int64_t h = base > size - 1 ? 0 : (size - 1 - base) / stride + 1;
    if (l > n) l = n;
    if (h > n) h = n;
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* im2col of output columns [c0, c0+cw) for cg channels: col[(ci*K + k) * cw + j]. */
static void im2col(const conv_geom *g, const float *x, int64_t c0, int64_t cw, float *col) {
    int64_t K = g->ksize, oh = g->out[1], ow = g->out[2];
    for (int64_t row = 0; row < g->cg * K; row++) {
        int64_t ci = row / K, kr = row % K;
        int64_t kd = kr / (g->k[1] * g->k[2]), kh = (kr / g->k[2]) % g->k[1], kw = kr % g->k[2];
        const float *xc = x + ci * g->in_size;
        float *dst = col + row * cw;
        int64_t p = c0, od = p / (oh * ow), oy = (p / ow) % oh, ox = p % ow;
        int64_t offd = kd * g->d[0] - g->pb[0], offh = kh * g->d[1] - g->pb[1], offw = kw * g->d[2] - g->pb[2];
        for (int64_t jj = 0; jj < cw;) {
            int64_t id = od * g->s[0] + offd, ih = oy * g->s[1] + offh;
            int64_t run = ow - ox; /* rest of this output row */
            if (run > cw - jj) run = cw - jj;
            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
                memset(dst + jj, 0, (size_t)run * sizeof(float));
            } else {
                const float *xr = xc + (id * g->in[1] + ih) * g->in[2];
                int64_t sw = g->s[2], lo, hi;
                valid_range(ox * sw + offw, sw, g->in[2], run, &lo, &hi);
                float *dr = dst + jj;
                for (int64_t t = 0; t < lo; t++) dr[t] = 0.0f;
                int64_t base = ox * sw + offw; /* may be negative: index, never form a pointer before xr */
                if (sw == 1 && hi > lo) memcpy(dr + lo, xr + base + lo, (size_t)(hi - lo) * sizeof(float));
                else
                    for (int64_t t = lo; t < hi; t++) dr[t] = xr[base + t * sw];
                for (int64_t t = hi; t < run; t++) dr[t] = 0.0f;
            }
            jj += run;
            ox += run;
            if (ox == ow) {
                ox = 0;
                if (++oy == oh) {
                    oy = 0;
                    od++;
                }
            }
        }
    }
}

static void conv_slot(void *arg, int64_t slot, int64_t t0, int64_t t1) {
    const conv_job *j = arg;
    const conv_geom *g = j->g;
    const conv_plan *pl = j->pl;
    int64_t ck = g->cg * g->ksize, out = g->out_size;
    float *col = j->ws ? j->ws + slot * pl->slot_floats : NULL;
    for (int64_t t = t0; t < t1; t++) {
        int64_t n = t / (g->g * pl->blocks), gi = (t / pl->blocks) % g->g, b = t % pl->blocks;
        int64_t c0 = b * pl->bsize, cw = out - c0 < pl->bsize ? out - c0 : pl->bsize;
        const float *x = j->x + (n * g->c + gi * g->cg) * g->in_size;
        float *y = j->y + (n * g->m + gi * g->mg) * out + c0;
        const float *bm;
        int ldb;
        if (pl->slot_floats == 0) {
            bm = x + c0;
            ldb = (int)g->in_size;
        } else {
            im2col(g, x, c0, cw, col);
            bm = col;
            ldb = (int)cw;
        }
        if (!cpu_dnnl_sgemm(0, 0, g->mg, cw, ck, 1.0f, j->w + gi * g->mg * ck, ck, bm, ldb, 0.0f, y, out))
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->mg, (int)cw, (int)ck, 1.0f,
                        j->w + gi * g->mg * ck, (int)ck, bm, ldb, 0.0f, y, (int)out);
        epilogue(j, y, j->z ? j->z + (n * g->m + gi * g->mg) * out + c0 : NULL, out, g->mg, cw,
                 j->b ? j->b + gi * g->mg : NULL);
    }
}

/* Depthwise: one output plane per (n, c); each kernel tap adds a scaled input row segment to an output row. */
static void depthwise_range(void *arg, int64_t p0, int64_t p1) {
    const conv_job *j = arg;
    const conv_geom *g = j->g;
    int64_t ow_n = g->out[2], sw = g->s[2];
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t c = pl % g->c;
        const float *x = j->x + pl * g->in_size, *w = j->w + c * g->ksize;
        float *y = j->y + pl * g->out_size;
        float bias = j->b ? j->b[c] : 0.0f;
        for (int64_t od = 0; od < g->out[0]; od++)
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                float *yr = y + (od * g->out[1] + oh) * ow_n;
                for (int64_t ow = 0; ow < ow_n; ow++) yr[ow] = bias;
                for (int64_t kd = 0; kd < g->k[0]; kd++) {
                    int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
                    if (id < 0 || id >= g->in[0]) continue;
                    for (int64_t kh = 0; kh < g->k[1]; kh++) {
                        int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
                        if (ih < 0 || ih >= g->in[1]) continue;
                        const float *xr = x + (id * g->in[1] + ih) * g->in[2];
                        const float *wr = w + (kd * g->k[1] + kh) * g->k[2];
                        for (int64_t kw = 0; kw < g->k[2]; kw++) {
                            int64_t off = kw * g->d[2] - g->pb[2], lo, hi;
                            valid_range(off, sw, g->in[2], ow_n, &lo, &hi);
                            float wv = wr[kw];
                            if (sw == 1)
                                for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow + off];
                            else
                                for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * sw + off];
                        }
                    }
                }
            }
        epilogue(j, y, j->z ? j->z + pl * g->out_size : NULL, g->out_size, 1, g->out_size, NULL);
    }
}

/* ConvTranspose: col = W_g^T x_g for a block of output channels, then col2im into y. */
static void convt_slot(void *arg, int64_t slot, int64_t t0, int64_t t1) {
    const conv_job *j = arg;
    const conv_geom *g = j->g;
    const conv_plan *pl = j->pl;
    int64_t K = g->ksize, in = g->in_size, out = g->out_size;
    float *col = j->ws + slot * pl->slot_floats;
    for (int64_t t = t0; t < t1; t++) {
        int64_t n = t / (g->g * pl->blocks), gi = (t / pl->blocks) % g->g, b = t % pl->blocks;
        int64_t m0 = b * pl->bsize, mc = g->mg - m0 < pl->bsize ? g->mg - m0 : pl->bsize;
        const float *x = j->x + (n * g->c + gi * g->cg) * in;
        const float *w = j->w + gi * g->cg * g->mg * K + m0 * K;
        /* OpenBLAS, not oneDNN's sgemm: on a pool worker the latter's per-call packing buffers came from malloc
         * state that other kernels' allocations on that thread decide, and U-Net's 64 -> 32 2x2/2 ConvTranspose at
         * 2 threads, batch 1, took 0.27 or 1.0-1.2 ms depending on them (0.26 here either way; batch 8 2.9 -> 1.9) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(mc * K), (int)in, (int)g->cg, 1.0f, w,
                    (int)(g->mg * K), x, (int)in, 0.0f, col, (int)in);
        for (int64_t m = 0; m < mc; m++) {
            int64_t oc = gi * g->mg + m0 + m;
            float *y = j->y + (n * g->m + oc) * out;
            float bias = j->b ? j->b[oc] : 0.0f;
            for (int64_t i = 0; i < out; i++) y[i] = bias;
            for (int64_t kr = 0; kr < K; kr++) {
                int64_t kd = kr / (g->k[1] * g->k[2]), kh = (kr / g->k[2]) % g->k[1], kw = kr % g->k[2];
                const float *cr = col + (m * K + kr) * in;
                for (int64_t id = 0; id < g->in[0]; id++) {
                    int64_t od = id * g->s[0] - g->pb[0] + kd * g->d[0];
                    if (od < 0 || od >= g->out[0]) continue;
                    for (int64_t ih = 0; ih < g->in[1]; ih++) {
                        int64_t oh = ih * g->s[1] - g->pb[1] + kh * g->d[1];
                        if (oh < 0 || oh >= g->out[1]) continue;
                        const float *cx = cr + (id * g->in[1] + ih) * g->in[2];
                        float *yr = y + (od * g->out[1] + oh) * g->out[2];
                        int64_t ow = -g->pb[2] + kw * g->d[2];
                        for (int64_t iw = 0; iw < g->in[2]; iw++, ow += g->s[2])
                            if (ow >= 0 && ow < g->out[2]) yr[ow] += cx[iw];
                    }
                }
            }
            epilogue(j, y, j->z ? j->z + (n * g->m + oc) * out : NULL, out, 1, out, NULL);
        }
    }
}

static int conv_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = node->n_inputs > 0 ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED;
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16) {
        snprintf(reason, size, "dtype %d not supported by the CPU %s kernel (float, float16)", (int)t, node->op_type);
        return 0;
    }
    const netrun_conv_params *p = node->params;
    if (!p || node->params_size < sizeof *p || p->n_spatial < 1 || p->n_spatial > 3) {
        snprintf(reason, size, "%s needs 1 to 3 spatial dims", node->op_type);
        return 0;
    }
    if (!gu_act_known(&p->activation)) {
        snprintf(reason, size, "fused activation kind %d unknown to the CPU backend", (int)p->activation.kind);
        return 0;
    }
    if (p->src_nhwc || p->dst_nhwc) { /* float16 channels-last: the CUDA region pass's layout only */
        snprintf(reason, size, "float16 NHWC Conv (CUDA float16 region pass) not supported by the CPU backend");
        return 0;
    }
    if (p->src_blocked || p->dst_blocked) { /* nChw16c activations: oneDNN only (conv_dnnl.c) */
        const netrun_value_desc *x = &node->inputs[0], *y = node->n_outputs > 0 ? &node->outputs[0] : NULL;
        int dw = p->group > 1 && p->group == x->dims[1] && y && p->group == y->dims[1];
        int ok = t == NETRUN_DTYPE_FLOAT && !strcmp(node->op_type, "Conv") && p->n_spatial == 2 &&
                 (p->group == 1 || dw) &&
                 cpu_dnnl_available() && node->n_inputs > 1 && node->inputs[1].const_data && y &&
                 x->rank == 4 && y->rank == 4 && x->dims[0] >= 0 && x->dims[1] > 0 &&
                 (!p->src_blocked || x->dims[1] % 16 == 0) && y->dims[1] > 0 &&
                 (!p->dst_blocked || y->dims[1] % 16 == 0);
        for (int i = 2; ok && i < 4; i++) ok = x->dims[i] > 0 && y->dims[i] > 0;
        if (!ok) {
            snprintf(reason, size, "nChw16c Conv needs oneDNN, float32, 2-D, group 1 or depthwise, constant W, "
                     "channels multiples of 16");
            return 0;
        }
    }
    return 1;
}

static int64_t dims_known(const netrun_value_desc *v) {
    if (v->rank < 0) return 0;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] < 0) return 0;
    return 1;
}

/* oneDNN for constant-W Conv whose dims are known (measured per layer on ResNet-50 and MobileNetV2 shapes,
 * see /work/briefs/cpuk_figures.md): kxk convs (blocked JIT kernels beat im2col + sgemm 1.3-1.6x even with
 * the NCHW reorders), 1x1 convs on small planes (7x7) and 1x1 convs whose channel counts allow nChw16c (see
 * below). Other 1x1 convs stay one plain sgemm on NCHW: NHWC reorders of big planes cost more than the
 * blocked kernel saves. Depthwise 2-D stays in conv_depthwise.c unless its rows are under 16 wide (14 for 3x3; oneDNN,
 * sliced over channels). */
static int want_dnnl(int threads, const netrun_node_desc *node, const conv_geom *g, int transpose) {
    const netrun_conv_params *p = node->params;
    if (transpose || !node->inputs[1].const_data || !cpu_dnnl_available()) return 0;
    if (cpu_dnnl_all()) return 1;
    /* rows much narrower than a vector waste most lanes of the own kernel: oneDNN's channel-blocked one wins
     * at 7 wide (ShuffleNetV2 batch 8, 2 threads, 232 channels 14x14 -> 7x7: 0.10 ms against 0.14); at 14 wide
     * (14 of 16 lanes) the own kernel wins on 3x3 taps (116 channels 28x28 -> 14x14 stride 2: 0.21 ms on oneDNN
     * with its reorders, 0.14 here), not on 5x5 (MobileNetV3-small's 120 x 14x14 + HardSwish: 0.19 against 0.28) */
    if (is_dw2d(g, transpose)) return g->out[2] < (g->k[1] == 3 && g->k[2] == 3 ? 14 : 16);
    if (g->g > 1 && !is_depthwise(g, transpose) && threads > 1)
        return 0; /* grouped convs are not sliced over threads: im2col splits groups */
    if (is_pointwise(g, p)) {
        if (g->out_size <= 64) return 1;
        /* with nChw16c activations (conv_dnnl.c, channels multiples of 16) oneDNN's 1x1 beats sgemm on every
         * plane size measured (ResNet-50's 1x1 convs 35.9 -> 32.3 ms, MobileNetV2's 16->96 at 112x112 0.85 ->
         * 0.77 ms), except with its Swish post-op on planes above 14x14 (EfficientNet-B0's 16->96 + SiLU at
         * 112x112: 1.14 -> 1.39 ms); with other channel counts it would reorder to NHWC and lose (x1.6). */
        return p->n_spatial == 2 && g->g == 1 && g->cg % 16 == 0 && g->mg % 16 == 0 &&
               (p->activation.kind != NETRUN_ACT_SWISH || g->out_size <= 196);
    }
    return 1;
}



/* 1x1 convs between a plain tensor whose channel count is no multiple of 16 and an nChw16c one (MobileNetV2's
 * 24 -> 144 expand, 144 -> 24 project): conv1x1_blk.c instead of oneDNN, which pads the plain side to 32
 * channels and reorders it inside the node. Returns 1 + CPU_C1X1_* mode, or 0. */
static int want_c1x1(cpu_context *ctx, const netrun_conv_params *p, const conv_geom *g, int transpose) {
    if (transpose || p->n_spatial != 2 || g->g != 1 || !is_pointwise(g, p) || !cpu_c1x1_available(ctx)) return 0;
    /* a folded squeeze-excite scale (the nChw16c pass decides Y's layout after asking): the kernels that take
     * it, whichever layout Y ends up in */
    if (p->src_scale)
        return p->src_blocked && g->c % 16 == 0 && g->c <= 256 ? 1 + (p->dst_blocked ? CPU_C1X1_BLK_BLK : CPU_C1X1_BLK_PLAIN2)
                                                              : 0;
    if (!p->src_blocked && !p->dst_blocked) {
        /* ShuffleNetV2's 1x1 convs (24 .. 232 channels, 7x7 .. 56x56): X needs no packing here, OpenBLAS's sgemm
         * packs it first; not on planes under 64 pixels (squeeze-excite's 1x1 planes: oneDNN) */
        const char *o = cpu_option(ctx, "cpu.conv1x1_plain");
        return !(o && !strcmp(o, "0")) && g->c <= 1024 && g->out_size >= 64 ? 1 + CPU_C1X1_PLAIN_PLAIN : 0;
    }
    if (!p->src_blocked && g->c % 16 && g->c <= 512 && g->m % 16 == 0) return 1 + CPU_C1X1_PLAIN_BLK;
    /* nChw16c both sides: oneDNN cuts the output channels into one slice per thread, so 16 channels (the 32 -> 16
     * projections of MobileNetV2 / EfficientNet / MnasNet at 112x112) run on one thread and 48 split 2:1; the
     * own kernel cuts the pixels instead (cpu.conv1x1_bb=0 keeps oneDNN). With fewer images than threads, on
     * planes up to 56x56, also when every thread would get at most 2 blocks, each reading all of X for them
     * (SqueezeNet's squeezes to 32-64 channels at 27x27 and 13x13: 0.040 -> 0.033 ms, 0.027 -> 0.022). At 56x56
     * the Zen 5 VM measured oneDNN ahead (ResNet-50's 256 -> 64: 0.242 against 0.258), the Xeon of
     * docs/benchmarks.md the own kernel (0.48 -> 0.31 ms, ResNet-50 at batch 1 and 2 threads 25.6 -> 24.4 ms in
     * node sums; SqueezeNet 1.1's 16 -> 64 expands at 55x55 0.050 -> 0.043). Up to 4 blocks a thread, 8 in all,
     * on planes of 28x28 to 56x56 (ResNet-50's 256 / 512 -> 128 in layer2, 2 threads: 0.81 -> 0.63 ms and
     * 0.45 -> 0.36; on 14x14 planes, 384 / 480 -> 96, oneDNN stays ahead: 0.063 against 0.080 ms; more blocks
     * and threads were not measured) */
    if (p->src_blocked && p->dst_blocked && g->c <= 512) {
        int64_t mb = g->m / 16, t = ctx->threads > 0 ? ctx->threads : 1;
        const char *o = cpu_option(ctx, "cpu.conv1x1_bb");
        int uneven = mb % t && mb < 4 * t && g->out_size >= 784;
        int thin = t > 1 && g->n < t && g->out_size <= 3136 &&
                   (mb <= 2 * t || (mb <= 4 * t && mb <= 8 && g->out_size >= 784)); /* 8: as measured, 2 threads */
        if ((uneven || thin) && !(o && !strcmp(o, "0"))) return 1 + CPU_C1X1_BLK_BLK;
    }
    if (!p->dst_blocked && g->c % 16 == 0 && g->c <= 256 && g->m % 16) {
        const char *o = cpu_option(ctx, "cpu.conv1x1_yp2"); /* 0: the one-block tile */
        return 1 + (o && !strcmp(o, "0") ? CPU_C1X1_BLK_PLAIN : CPU_C1X1_BLK_PLAIN2);
    }
    return 0;
}

/* A 2-D conv, not grouped, on nChw16c X and Y, without a folded input scale: what the own direct and Winograd
 * kernels take (each then checks its own geometry). */
static int blocked_2d(const netrun_conv_params *p, const conv_geom *g, int transpose) {
    return !transpose && p->n_spatial == 2 && g->g == 1 && p->src_blocked && p->dst_blocked && !p->src_scale;
}

/* 3x3 stride-1 pad-1 convs on nChw16c both sides: conv_wino_blk.c's Winograd instead of oneDNN's (cpu.conv_wino=0
 * keeps oneDNN); only where oneDNN would take Winograd too (cpu.winograd) */
static int want_cw(cpu_context *ctx, const netrun_conv_params *p, const conv_geom *g, int transpose) {
    if (!blocked_2d(p, g, transpose) || !ctx->winograd || !cpu_cw_available(ctx)) return 0;
    const int64_t pe[2] = {g->out[1] + 2 - g->in[1] - g->pb[1], g->out[2] + 2 - g->in[2] - g->pb[2]};
    return cpu_cw_fits(g->c, g->m, g->in[1], g->in[2], g->out[1], g->out[2], g->k + 1, g->s + 1, g->d + 1, g->pb + 1,
                       pe);
}

/* conv_direct_blk.c's direct kernel on nChw16c both sides:
 * - stride-2 3x3 and 1x1 convs (ResNet's downsampling convs) instead of oneDNN's direct kernel, which runs stride 2
 *   at 70-75% of the FMA rate it reaches on stride 1 (cpu.conv_s2=0 keeps oneDNN);
 * - 3x3 stride-1 convs that would run Winograd on few tiles with a U beyond L2 (ResNet-50's layer4 at batch 1:
 *   16 tiles, 16.8 MB). Each float of U then serves as many FMAs as there are tiles, so reading U from memory
 *   outlasts the FMAs: F(2x2) reads 16/9 of W's bytes to save 44% of the FMAs. On the Zen 5 VM (docs/benchmarks.md)
 *   a core does about 110 G FMA/s and the two share about 30 GB/s, so U stops being the limit at about
 *   110 x 4 / 30 = 15 tiles per thread: cpu.wino_min_tiles (default 16; 0 keeps Winograd). */
static int want_cdir(cpu_context *ctx, const netrun_conv_params *p, const conv_geom *g, int transpose) {
    if (!blocked_2d(p, g, transpose) || !cpu_cdir_available() ||
        !cpu_cdir_fits(g->c, g->m, g->in[1], g->in[2], g->out[1], g->out[2], g->k + 1, g->s + 1, g->d + 1, g->pb + 1))
        return 0;
    if (g->s[1] == 2) return cpu_avx512_enabled(ctx, "cpu.conv_s2");
    const int64_t tiles = g->n * ((g->out[1] + 1) / 2) * ((g->out[2] + 1) / 2);
    const int64_t threads = ctx->threads > 0 ? ctx->threads : 1;
    return want_cw(ctx, p, g, transpose) && 16 * g->c * g->m * (int64_t)sizeof(float) > CPU_CW_U_L2 &&
           tiles < ctx->wino_min_tiles * threads;
}

/* The nChw16c pass's squeeze-excite fold (params.src_scale, S = input 3): only where the 1x1 kernel this node
 * gets under this config's threads and options takes the scale (conv1x1_blk.c); any other path would need a
 * pass over X first, which is what the fold removes. */
static int conv_supports_config(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                                size_t size) {
    const netrun_conv_params *p = node->params;
    if (!p->src_scale) return 1;
    cpu_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.config = *config;
    ctx.threads = config->threads > 0 ? config->threads : 1;
    const netrun_value_desc *x = &node->inputs[0], *sc = node->n_inputs > 3 + p->has_sum ? &node->inputs[3] : NULL;
    conv_geom g;
    int mode = -1;
    if (sc && x->dtype == NETRUN_DTYPE_FLOAT && scale_fits(sc->dtype, sc->rank, sc->dims, x->rank, x->dims) &&
        node->n_outputs > 0 && node->inputs[1].const_data && dims_known(x) && dims_known(&node->outputs[0]) &&
        dims_known(&node->inputs[1]) && make_geom(p, x->dims, node->outputs[0].dims, node->inputs[1].dims[1], 0, &g))
        mode = want_c1x1(&ctx, p, &g, 0) - 1;
    if (mode < 0 || !cpu_c1x1_takes_scale(mode)) {
        snprintf(reason, size, "a folded input scale needs the AVX-512 1x1 kernel (float32 [N or 1, C, 1, 1] S)");
        return 0;
    }
    return 1;
}

static int node_has_bias(const netrun_node_desc *node) {
    const netrun_conv_params *p = node->params;
    return p->has_bias && node->n_inputs > 2 && node->inputs[2].rank >= 0;
}

/* After a kernel's create (rc): on failure the state is freed and the error returned; on success the state
 * remembers the dims and bias it was built for (run_common runs the kernel only for those: built_for). */
static netrun_status kernel_made(conv_state *s, void **state, const netrun_node_desc *node, netrun_status rc) {
    if (rc != NETRUN_OK) {
        gu_free(s->w);
        cpu_free(s);
        *state = NULL;
        return rc;
    }
    s->has_bias = node_has_bias(node);
    s->rank = node->inputs[0].rank;
    memcpy(s->xd, node->inputs[0].dims, sizeof s->xd);
    memcpy(s->yd, node->outputs[0].dims, sizeof s->yd);
    return NETRUN_OK;
}

/* The state's kernel was built for this run's X, Y and bias (kernel_made). */
static int built_for(const conv_state *st, const netrun_tensor *X, const netrun_tensor *Y, const netrun_tensor *B) {
    return X->rank == st->rank && (B != NULL) == st->has_bias &&
           !memcmp(X->dims, st->xd, (size_t)X->rank * sizeof X->dims[0]) &&
           !memcmp(Y->dims, st->yd, (size_t)Y->rank * sizeof Y->dims[0]);
}

static netrun_status create_common(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *ws,
                                   int transpose) {
    gu_blas_single_thread();
    const netrun_conv_params *p = node->params;
    *state = NULL;
    *ws = 0;
    if (!p) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: missing params", node->op_type);
    const netrun_value_desc *w = &node->inputs[1];
    conv_state *s = NULL;
    if (w->const_data && (w->dtype == NETRUN_DTYPE_FLOAT16 || w->dtype == NETRUN_DTYPE_FLOAT) && dims_known(w)) {
        int64_t n = 1;
        for (int i = 0; i < w->rank; i++) n *= w->dims[i];
        s = cpu_alloc(sizeof *s);
        if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory", node->op_type);
        memset(s, 0, sizeof *s);
        if (w->dtype == NETRUN_DTYPE_FLOAT16) {
            float *tmp;
            if (!gu_to_float(w->dtype, w->const_data, n, &tmp)) {
                cpu_free(s);
                return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory converting W", node->op_type);
            }
            s->w = tmp;
        }
        *state = s;
    }
    conv_geom g;
    if (node->n_outputs > 0 && dims_known(&node->inputs[0]) && dims_known(&node->outputs[0]) && dims_known(w) &&
        make_geom(p, node->inputs[0].dims, node->outputs[0].dims, w->dims[1], transpose, &g)) {
        int c1 = s ? want_c1x1(ctx, p, &g, transpose) : 0;
        if (c1) {
            s->c1_mode = c1 - 1;
            return kernel_made(s, state, node,
                               cpu_c1x1_create(g.c, g.m, s->w ? s->w : w->const_data, &p->activation, c1 - 1, &s->c1));
        }
        if (s && want_cdir(ctx, p, &g, transpose)) {
            s->cdir_stride = (int)g.s[1];
            return kernel_made(s, state, node,
                               cpu_cdir_create(g.k[1], g.s[1], g.c, g.m, g.in[1], g.in[2], g.out[1], g.out[2],
                                              s->w ? s->w : w->const_data, &p->activation, &s->cdir));
        }
        if (s && want_cw(ctx, p, &g, transpose)) {
            netrun_status rc = cpu_cw_create(g.c, g.m, g.in[1], g.in[2], s->w ? s->w : w->const_data, &p->activation,
                                             ctx->threads, &s->cw, &s->cw_ws);
            *ws = rc == NETRUN_OK ? s->cw_ws : 0;
            return kernel_made(s, state, node, rc);
        }
        if (s && want_gemv(ctx, p, &g, transpose)) {
            s->gemv = 1;
            return NETRUN_OK;
        }
        if (s && (p->src_blocked || p->dst_blocked || want_dnnl(ctx->threads, node, &g, transpose))) {
            size_t need = 0;
            netrun_status rc = cpu_dnnl_conv_create(ctx, p, node->inputs[0].dims, w->dims, node->outputs[0].dims,
                                                    s->w ? s->w : w->const_data, node_has_bias(node), &s->dnnl,
                                                    &need);
            if (rc != NETRUN_OK || s->dnnl) { /* else oneDNN declined: the paths below */
                *ws = rc == NETRUN_OK ? need : 0;
                return kernel_made(s, state, node, rc);
            }
        }
        if (p->src_blocked || p->dst_blocked) { /* supports() promised it: no other path reads nChw16c */
            gu_free(s ? s->w : NULL);
            cpu_free(s);
            *state = NULL;
            return cpu_host->error(NETRUN_ERR_BACKEND, "%s: oneDNN declined this nChw16c convolution", node->op_type);
        }
        if (is_dw2d(&g, transpose)) {
            *ws = dw_workspace(ctx, &g);
        } else if (!is_depthwise(&g, transpose)) {
            conv_plan pl;
            make_plan(&g, p, transpose, ctx->threads, &pl);
            *ws = (size_t)(pl.slots * pl.slot_floats) * sizeof(float);
        }
    }
    return NETRUN_OK;
}

static netrun_status conv_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    return create_common(ctx, node, state, ws, 0);
}
static netrun_status convt_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    return create_common(ctx, node, state, ws, 1);
}

static void conv_destroy(void *state) {
    conv_state *s = state;
    if (!s) return;
    cpu_dnnl_conv_destroy(s->dnnl);
    cpu_c1x1_destroy(s->c1);
    cpu_cdir_destroy(s->cdir);
    cpu_cw_destroy(s->cw);
    gu_free(s->w);
    cpu_free(s);
}

/* *ws = the runtime's workspace when it holds `need` bytes, else a buffer of the node's own in *tmp (the caller
 * frees it; only when the runtime gave less than create asked for); an error when that allocation fails. */
static netrun_status node_workspace(const netrun_kernel_args *args, size_t need, const char *op, float **tmp,
                                    float **ws) {
    if (args->workspace && args->workspace_size >= need) *ws = args->workspace;
    else if (!(*ws = *tmp = cpu_alloc(need)))
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes of workspace", op, need);
    return NETRUN_OK;
}

static netrun_status run_common(cpu_context *ctx, void *state, const netrun_kernel_args *args, int transpose) {
    const netrun_conv_params *p = args->params;
    const char *op = transpose ? "ConvTranspose" : "Conv";
    conv_state *st = state;
    if (!p || args->n_inputs < 2 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: missing params or inputs", op);
    const netrun_tensor *X = &args->inputs[0], *W = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    const netrun_tensor *B = p->has_bias && args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    const netrun_tensor *Z = p->has_sum ? &args->inputs[args->n_inputs - 1] : NULL;
    const netrun_tensor *S = p->src_scale && args->n_inputs > 3 + p->has_sum ? &args->inputs[3] : NULL;
    netrun_dtype dt = X->dtype;
    if (dt != NETRUN_DTYPE_FLOAT && dt != NETRUN_DTYPE_FLOAT16)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "%s: dtype %d not supported", op, (int)dt);
    if (X->rank != p->n_spatial + 2 || Y->rank != X->rank || W->rank != X->rank)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: ranks of X, W, Y do not match params", op);
    conv_geom g;
    if (!make_geom(p, X->dims, Y->dims, W->dims[1], transpose, &g))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                               "%s: bad geometry (negative dims, or plane or kernel sizes overflow int64)", op);
    int64_t nx = gu_count(X), nw = gu_count(W), ny = gu_count(Y);
    if (nx < 0 || nw < 0 || ny < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: tensor too large", op);
    if (ny == 0) return NETRUN_OK;
    int64_t lim = INT_MAX;
    if (g.out_size > lim || g.in_size > lim || g.cg * g.ksize > lim || g.mg * g.ksize > lim)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "%s: a GEMM dimension exceeds the BLAS int range", op);
    conv_plan pl;
    int depthwise = is_depthwise(&g, transpose);
    make_plan(&g, p, transpose, ctx->threads, &pl);

    netrun_status rc = NETRUN_OK;
    float *tx = NULL, *tw = NULL, *tb = NULL, *tz = NULL, *ty = NULL, *tws = NULL;
    conv_job j = {&g, &pl, p, NULL, NULL, NULL, NULL, NULL, NULL};
    j.x = gu_to_float(dt, X->data, nx, &tx);
    j.w = st && st->w ? st->w : gu_to_float(dt, W->data, nw, &tw);
    if (B) j.b = gu_to_float(dt, B->data, g.m, &tb);
    if (Z) j.z = gu_to_float(dt, Z->data, ny, &tz);
    if (dt == NETRUN_DTYPE_FLOAT) j.y = Y->data;
    else j.y = ty = cpu_alloc((size_t)ny * sizeof(float));
    if (!j.x || !j.w || (B && !j.b) || (Z && !j.z) || !j.y) {
        rc = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory staging float16 tensors", op);
        goto done;
    }
    if (p->src_scale) { /* only the 1x1 kernel takes it (conv_supports_config) */
        int ok = S && S->data && scale_fits(S->dtype, S->rank, S->dims, X->rank, X->dims) && st && st->c1 &&
                 cpu_c1x1_takes_scale(st->c1_mode) && built_for(st, X, Y, B);
        if (!ok) {
            rc = cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: the folded input scale S needs float32 [N or 1, "
                                 "C, 1, 1] and the 1x1 kernel built for these dims", op);
            goto done;
        }
        rc = cpu_c1x1_run(ctx, st->c1, j.x, j.b, j.z, S->data, S->dims[0] == 1 ? 0 : g.c, j.y, g.n, g.out_size);
    } else if (st && st->c1 && built_for(st, X, Y, B)) {
        rc = cpu_c1x1_run(ctx, st->c1, j.x, j.b, j.z, NULL, 0, j.y, g.n, g.out_size);
    } else if (st && st->cdir && built_for(st, X, Y, B)) {
        rc = cpu_cdir_run(ctx, st->cdir, j.x, j.b, j.z, j.y, g.n);
    } else if (st && st->cw && built_for(st, X, Y, B)) {
        float *ws;
        if ((rc = node_workspace(args, st->cw_ws, op, &tws, &ws)) != NETRUN_OK) goto done;
        rc = cpu_cw_run(ctx, st->cw, j.x, j.b, j.z, j.y, g.n, ws, st->cw_ws);
    } else if (st && st->dnnl && !transpose && built_for(st, X, Y, B)) {
        rc = cpu_dnnl_conv_run(ctx, st->dnnl, j.x, j.b, j.z, j.y, args->workspace, args->workspace_size);
    } else if (p->src_blocked || p->dst_blocked) {
        rc = cpu_host->error(NETRUN_ERR_BACKEND, "%s: nChw16c tensors need the kernel built at create for these dims", op);
    } else if (st && st->gemv && g.out_size == 1 && g.in_size == 1 && g.g == 1) {
        int64_t threads = ctx->threads > 0 ? ctx->threads : 1;
        int64_t rows = (g.m + 4 * threads - 1) / (4 * threads);
        rows = rows < GEMV_MIN_ROWS ? GEMV_MIN_ROWS : (rows + 7) / 8 * 8;
        gemv_job gj = {&j, rows};
        cpu_parallel_for(ctx, (g.m + rows - 1) / rows * g.n, 1, gemv_range, &gj);
    } else if (is_dw2d(&g, transpose)) {
        cpu_dw_args a;
        dw_args(&g, &a);
        size_t need = dw_workspace(ctx, &g);
        if ((rc = node_workspace(args, need, op, &tws, &a.ws)) != NETRUN_OK) goto done;
        a.x = j.x, a.w = j.w, a.b = j.b, a.z = j.z, a.y = j.y, a.act = &p->activation;
        cpu_dw_run(ctx, &a, gu_slots(ctx, a.planes));
    } else if (depthwise) {
        cpu_parallel_for(ctx, g.n * g.c, 1, depthwise_range, &j);
    } else {
        size_t need = (size_t)(pl.slots * pl.slot_floats) * sizeof(float);
        if (need && (rc = node_workspace(args, need, op, &tws, &j.ws)) != NETRUN_OK) goto done;
        gu_run_slots(ctx, pl.tasks, pl.slots, transpose ? convt_slot : conv_slot, &j);
    }
    if (ty) gu_from_float(dt, ty, ny, Y->data);
done:
    gu_free(tx);
    gu_free(tw);
    gu_free(tb);
    gu_free(tz);
    gu_free(ty);
    gu_free(tws);
    return rc;
}

static netrun_status conv_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    return run_common(ctx, state, args, 0);
}
static netrun_status convt_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    return run_common(ctx, state, args, 1);
}

/* The path run_common takes for these shapes. */
static void describe_common(const netrun_node_desc *node, char *buf, size_t size, int transpose) {
    const netrun_conv_params *p = node->params;
    conv_geom g;
    const char *path = transpose ? "sgemm + col2im" : "im2col + sgemm";
    if (p && !transpose && node->n_inputs > 1 && node->n_outputs > 0 && dims_known(&node->inputs[0]) &&
        dims_known(&node->outputs[0]) && dims_known(&node->inputs[1]) &&
        make_geom(p, node->inputs[0].dims, node->outputs[0].dims, node->inputs[1].dims[1], 0, &g)) {
        /* describe runs before create and cannot see the context: the path is named for the thread count
         * of the latest context (exact unless contexts of different sizes build kernels at once) */
        if (p->src_blocked || p->dst_blocked || want_dnnl(cpu_pool_last_threads(), node, &g, 0)) {
            snprintf(buf, size, "oneDNN %s (%s)", is_depthwise(&g, 0) ? "depthwise" : is_pointwise(&g, p) ? "1x1" : "conv",
                     p->src_blocked && p->dst_blocked ? "nChw16c in/out" : p->src_blocked ? "nChw16c in" :
                     p->dst_blocked ? "nChw16c out" : "blocked");
            return;
        }
        if (is_dw2d(&g, 0)) path = cpu_dw_variant();
        else if (is_depthwise(&g, 0)) path = "depthwise direct";
        else if (is_pointwise(&g, p)) path = "1x1 sgemm";
    }
    snprintf(buf, size, "%s", path);
}
static void conv_describe(const netrun_node_desc *n, char *b, size_t s) { describe_common(n, b, s, 0); }
/* oneDNN's Winograd kernels (cpu.winograd) are its choice per shape: say so once the primitive exists */
static void conv_describe_state(const void *state, char *buf, size_t size) {
    const conv_state *s = state;
    size_t n = strlen(buf);
    if (s->dnnl && strstr(cpu_dnnl_conv_impl(s->dnnl), "wino") && n < size) snprintf(buf + n, size - n, ", Winograd");
    n = strlen(buf);
    if (cpu_dnnl_conv_by_image(s->dnnl) && n < size) snprintf(buf + n, size - n, ", by image");
    if (cpu_dnnl_conv_by_rows(s->dnnl) && n < size) snprintf(buf + n, size - n, ", by rows");
    if (s->gemv) snprintf(buf, size, "1x1 GEMV (1x1 planes)");
    if (s->cdir) snprintf(buf, size, "direct stride %d avx512 (nChw16c in/out)", s->cdir_stride);
    if (s->cw) snprintf(buf, size, "Winograd F(2x2) avx512 (nChw16c in/out)");
    if (s->c1) snprintf(buf, size, "1x1 avx512 (%s)", s->c1_mode == CPU_C1X1_BLK_PLAIN2 ? "nChw16c in, paired" : s->c1_mode == CPU_C1X1_BLK_PLAIN ? "nChw16c in" : s->c1_mode == CPU_C1X1_PLAIN_PLAIN ? "NCHW" : s->c1_mode == CPU_C1X1_BLK_BLK ? "nChw16c in/out" : "nChw16c out");
}
static void convt_describe(const netrun_node_desc *n, char *b, size_t s) { describe_common(n, b, s, 1); }

#define CONV_DTYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16))

const cpu_op cpu_ops_conv[] = {
    {"Conv", "", CONV_DTYPES, "1-3 spatial dims; groups, depthwise direct; fused activation and sum",
     conv_supports, conv_create, conv_run, conv_destroy, conv_describe, conv_describe_state, conv_supports_config},
    {"ConvTranspose", "", CONV_DTYPES, "1-3 spatial dims; groups; output_shape/output_padding",
     conv_supports, convt_create, convt_run, conv_destroy, convt_describe},
    {0},
};
