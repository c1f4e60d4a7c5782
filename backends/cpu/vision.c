/* CPU kernels: vision (GridSample, NonMaxSuppression, RoiAlign, MaxRoiPool, MaxUnpool, AffineGrid, Col2Im,
 * CenterCropPad, DeformConv, ImageDecoder).
 * These ops are small and irregular: values are read and written through dtype-generic accessors and
 * computed in double (coordinates in float where the ONNX reference and onnxruntime use float, so that
 * rounding of sample positions agrees with them). */
#include <stdlib.h>

#include "cpu_internal.h"

/* ---- dtype-generic element access ---- */

static inline int64_t ld_index(const void *p, netrun_dtype t, int64_t i) {
    return t == NETRUN_DTYPE_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* Round to float unless the op computes in double. */
static inline double fround(double v, int dbl) { return dbl ? v : (double)(float)v; }

#define FLOAT_DT (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                  NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))

static int float_dtype(netrun_dtype t) { return (FLOAT_DT >> t) & 1; }

/* ================= GridSample ================= */

typedef struct gs_job {
    const netrun_grid_sample_params *p;
    const netrun_tensor *x, *g;
    netrun_tensor *y;
    int64_t n_out;          /* output spatial points per batch */
    int64_t C;
    int dbl;
} gs_job;

/* Reflect x into [lo, hi] by folding at the borders (as PyTorch / the ONNX reference). */
static double gs_reflect(double x, double lo, double hi) {
    double rng = hi - lo;
    if (rng <= 0) return lo;
    if (x < lo) {
        double dx = lo - x;
        int64_t n = (int64_t)(dx / rng);
        double r = dx - (double)n * rng;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        int64_t n = (int64_t)(dx / rng);
        double r = dx - (double)n * rng;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

/* Index of a tap after padding; -1 = reads zero. */
static int64_t gs_pixel(int64_t i, int64_t d, int pad, double lo, double hi) {
    if (pad == NETRUN_GS_PAD_ZEROS) return i >= 0 && i < d ? i : -1;
    if (pad == NETRUN_GS_PAD_BORDER) return i < 0 ? 0 : i >= d ? d - 1 : i;
    int64_t r = (int64_t)gs_reflect((double)i, lo, hi);
    return r < 0 ? 0 : r >= d ? d - 1 : r; /* reflection lands inside; the clamp guards rounding */
}

static void gs_cubic_coeffs(double x, double *c) {
    const double A = -0.75;
    x = fabs(x);
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

static void gs_range(void *arg, int64_t b, int64_t e) {
    const gs_job *j = arg;
    const netrun_grid_sample_params *p = j->p;
    const int k = p->n_spatial;
    const netrun_tensor *x = j->x;
    int64_t dims[3], sp = 1;
    for (int d = 0; d < k; d++) {
        dims[d] = x->dims[2 + d];
        sp *= dims[d];
    }
    for (int64_t t = b; t < e; t++) {
        int64_t n = t / j->n_out, o = t % j->n_out;
        int64_t idx[3][4];
        double w[3][4];
        int cnt[3];
        for (int d = 0; d < k; d++) {
            /* grid's last axis lists coordinates innermost-dim first */
            double nv = cpu_load_f(j->g->data, j->g->dtype, t * k + (k - 1 - d));
            double len = (double)dims[d];
            double c = p->align_corners ? (nv + 1) / 2.0 * (len - 1) : ((nv + 1) * len - 1) / 2.0;
            c = fround(c, j->dbl);
            double lo = p->align_corners ? 0 : -0.5, hi = p->align_corners ? len - 1 : len - 0.5;
            if (p->mode == NETRUN_GS_NEAREST) c = nearbyint(c); /* half to even, as PyTorch */
            /* cubic pads each tap, not the coordinate, in border mode (PyTorch and onnxruntime) */
            if ((c < lo || c > hi) && !(p->mode == NETRUN_GS_CUBIC && p->padding_mode == NETRUN_GS_PAD_BORDER)) {
                if (p->padding_mode == NETRUN_GS_PAD_BORDER) c = c < 0 ? 0 : c > len - 1 ? len - 1 : c;
                else if (p->padding_mode == NETRUN_GS_PAD_REFLECTION) c = fround(gs_reflect(c, lo, hi), j->dbl);
            }
            if (!(c == c) || fabs(c) > 1e15) { /* NaN or absurd coordinate: read zero */
                cnt[d] = 1;
                idx[d][0] = p->padding_mode == NETRUN_GS_PAD_ZEROS ? -1 : 0;
                w[d][0] = p->padding_mode == NETRUN_GS_PAD_ZEROS ? 0 : 1;
                continue;
            }
            if (p->mode == NETRUN_GS_NEAREST) {
                cnt[d] = 1;
                idx[d][0] = gs_pixel((int64_t)c, dims[d], p->padding_mode, lo, hi);
                w[d][0] = 1;
            } else if (p->mode == NETRUN_GS_LINEAR) {
                double f = floor(c), r = c - f;
                cnt[d] = 2;
                idx[d][0] = gs_pixel((int64_t)f, dims[d], p->padding_mode, lo, hi);
                idx[d][1] = gs_pixel((int64_t)f + 1, dims[d], p->padding_mode, lo, hi);
                w[d][0] = 1 - r;
                w[d][1] = r;
            } else {
                double f = floor(c), cf[4];
                gs_cubic_coeffs(c - f, cf);
                cnt[d] = 4;
                for (int q = 0; q < 4; q++) {
                    idx[d][q] = gs_pixel((int64_t)f - 1 + q, dims[d], p->padding_mode, lo, hi);
                    w[d][q] = cf[q];
                }
            }
        }
        /* tensor product of the taps; a tap of index -1 reads zero */
        int total = 1;
        for (int d = 0; d < k; d++) total *= cnt[d];
        for (int64_t ch = 0; ch < j->C; ch++) {
            int64_t base = (n * j->C + ch) * sp;
            double acc = 0;
            for (int q = 0; q < total; q++) {
                int rem = q;
                double wt = 1;
                int64_t off = 0, valid = 1;
                for (int d = k - 1; d >= 0; d--) {
                    int qi = rem % cnt[d];
                    rem /= cnt[d];
                    int64_t ii = idx[d][qi];
                    if (ii < 0) { valid = 0; break; }
                    wt *= w[d][qi];
                    int64_t stride = 1;
                    for (int e2 = d + 1; e2 < k; e2++) stride *= dims[e2];
                    off += ii * stride;
                }
                if (valid) acc += wt * cpu_load_f(x->data, x->dtype, base + off);
            }
            cpu_store_f(j->y->data, j->y->dtype, (n * j->C + ch) * j->n_out + o, acc);
        }
    }
}

static netrun_status run_grid_sample(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_grid_sample_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *g = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    if (!p || p->n_spatial < 1 || p->n_spatial > 3 || x->rank != p->n_spatial + 2 || g->rank != x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "GridSample: bad params");
    if (!float_dtype(x->dtype) || !float_dtype(g->dtype))
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "GridSample: dtype %d/%d not supported", (int)x->dtype,
                               (int)g->dtype);
    gs_job j = {.p = p, .x = x, .g = g, .y = y, .C = x->dims[1], .dbl = x->dtype == NETRUN_DTYPE_DOUBLE};
    j.n_out = 1;
    for (int d = 0; d < p->n_spatial; d++) j.n_out *= g->dims[1 + d];
    int64_t total = x->dims[0] * j.n_out;
    if (total == 0 || j.C == 0) return NETRUN_OK;
    int64_t grain = 4096 / (j.C * 4) + 1;
    cpu_parallel_for(ctx, total, grain, gs_range, &j);
    return NETRUN_OK;
}

/* ================= NonMaxSuppression ================= */

typedef struct nms_cand {
    float score;
    int64_t idx;
} nms_cand;

/* Highest score first; equal scores keep the lower box index first. */
static int nms_cmp(const void *a, const void *b) {
    const nms_cand *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The candidates as a heap, best (nms_cmp's first) at the root: NMS takes them best first and usually stops after
 * max_output_boxes_per_class kept, long before the end, so a heap (O(n) to build, O(log n) a pop) replaces sorting
 * them all (YOLO-style NMS at 320x320, 4 classes of up to 6000 candidates: 0.95 ms of its 2.1). */
static void nms_sift(nms_cand *h, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && nms_cmp(&h[l], &h[w]) < 0) w = l;
        if (r < n && nms_cmp(&h[r], &h[w]) < 0) w = r;
        if (w == i) return;
        nms_cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void nms_corners(const float *bx, int center, float *ymin, float *xmin, float *ymax, float *xmax) {
    if (center) {
        float hw = bx[2] / 2, hh = bx[3] / 2;
        *xmin = bx[0] - hw;
        *xmax = bx[0] + hw;
        *ymin = bx[1] - hh;
        *ymax = bx[1] + hh;
    } else {
        *ymin = fminf(bx[0], bx[2]);
        *ymax = fmaxf(bx[0], bx[2]);
        *xmin = fminf(bx[1], bx[3]);
        *xmax = fmaxf(bx[1], bx[3]);
    }
}

/* The boxes kept so far, as corners and areas in separate arrays: each candidate is tested against all of them in
 * one loop the compiler vectorizes (the batched-NMS trick of detectors puts every class in one call, so thousands
 * are kept and this loop is most of the time). The arithmetic is that of one pair at a time, so the results are
 * the same bits as comparing pairs. */
typedef struct nms_kept {
    float *y0, *x0, *y1, *x1, *area;
    int64_t n;
} nms_kept;

/* 1 when box (y0, x0, y1, x1, area) overlaps one of kept[from, to) with IoU above the threshold. fmaxf/fminf
 * keep the non-NaN operand, which stops the compiler from vectorizing; without NaNs a plain comparison gives the
 * same result, so the loop is written both ways and the NaN-free one is also built for AVX2 and AVX-512. */
#define NMS_OVERLAP_LOOP(MAX, MIN)                                                                               \
    int hit = 0;                                                                                                 \
    for (int64_t q = from; q < to; q++) {                                                                        \
        float ix0 = MAX(x0, k->x0[q]), ix1 = MIN(x1, k->x1[q]);                                                  \
        float iy0 = MAX(y0, k->y0[q]), iy1 = MIN(y1, k->y1[q]);                                                  \
        float inter = (ix1 - ix0) * (iy1 - iy0), uni = area + k->area[q] - inter;                                \
        int valid = (ix1 > ix0) & (iy1 > iy0) & (area > 0) & (k->area[q] > 0) & (inter > 0) & (uni > 0);         \
        hit |= valid & (inter / uni > iou_threshold);                                                            \
    }                                                                                                            \
    return hit;
#define NMS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define NMS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NMS_ARGS const nms_kept *k, int64_t from, int64_t to, float y0, float x0, float y1, float x1, float area, \
                 float iou_threshold

static int nms_overlap_nan(NMS_ARGS) { NMS_OVERLAP_LOOP(fmaxf, fminf) }
static int nms_overlap(NMS_ARGS) { NMS_OVERLAP_LOOP(NMS_MAX, NMS_MIN) }
__attribute__((target("avx2"))) static int nms_overlap_avx2(NMS_ARGS) { NMS_OVERLAP_LOOP(NMS_MAX, NMS_MIN) }
__attribute__((target("avx512f"))) static int nms_overlap_avx512(NMS_ARGS) { NMS_OVERLAP_LOOP(NMS_MAX, NMS_MIN) }

static netrun_status run_nms(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_nms_params *p = args->params;
    const netrun_tensor *boxes = &args->inputs[0], *scores = &args->inputs[1];
    if (!p || boxes->rank != 3 || scores->rank != 3 || boxes->dims[2] != 4)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "NonMaxSuppression: bad params or shapes");
    if (!args->alloc_output)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "NonMaxSuppression: the host gave no alloc_output");
    int64_t max_out = 0;
    float iou = 0, score_th = 0;
    int has_score = 0;
    if (args->n_inputs > 2 && args->inputs[2].rank >= 0 && cpu_count(&args->inputs[2]) > 0)
        max_out = ((const int64_t *)args->inputs[2].data)[0];
    if (args->n_inputs > 3 && args->inputs[3].rank >= 0 && cpu_count(&args->inputs[3]) > 0)
        iou = ((const float *)args->inputs[3].data)[0];
    if (args->n_inputs > 4 && args->inputs[4].rank >= 0 && cpu_count(&args->inputs[4]) > 0) {
        score_th = ((const float *)args->inputs[4].data)[0];
        has_score = 1;
    }
    if (iou < 0 || iou > 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "NonMaxSuppression: iou_threshold %g not in [0, 1]",
                               (double)iou);
    if (max_out < 0) max_out = 0;
    int64_t B = boxes->dims[0], NB = boxes->dims[1], NC = scores->dims[1];
    const float *bd = boxes->data, *sd = scores->data;
    int64_t per_class = max_out < NB ? max_out : NB;
    /* upper bound of the selection: B * NC * per_class rows of 3 */
    if (per_class > 0 && (B > INT64_MAX / NC / per_class / 3))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "NonMaxSuppression: output size overflows");
    int64_t cap = B * NC * per_class;
    size_t nk = (size_t)(per_class > 0 ? per_class : 1);
    nms_cand *cand = cpu_alloc(sizeof(nms_cand) * (size_t)(NB > 0 ? NB : 1));
    float *kbuf = cpu_alloc(sizeof(float) * 5 * nk);
    int64_t *res = cpu_alloc(sizeof(int64_t) * 3 * (size_t)(cap > 0 ? cap : 1));
    if (!cand || !kbuf || !res) {
        cpu_free(cand), cpu_free(kbuf), cpu_free(res);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "NonMaxSuppression: out of memory");
    }
    nms_kept kept = {kbuf, kbuf + nk, kbuf + 2 * nk, kbuf + 3 * nk, kbuf + 4 * nk, 0};
    int (*fast)(NMS_ARGS) = cpu_has_avx512f()                 ? nms_overlap_avx512
                            : __builtin_cpu_supports("avx2") ? nms_overlap_avx2
                                                             : nms_overlap;
    int64_t count = 0;
    for (int64_t b = 0; b < B && per_class > 0; b++)
        for (int64_t c = 0; c < NC; c++) {
            const float *s = sd + (b * NC + c) * NB;
            int64_t nc = 0;
            for (int64_t i = 0; i < NB; i++)
                if (!has_score || s[i] > score_th) cand[nc++] = (nms_cand){s[i], i};
            for (int64_t i = nc / 2 - 1; i >= 0; i--) nms_sift(cand, nc, i);
            kept.n = 0;
            int kept_nan = 0;
            for (int64_t left = nc; left > 0 && kept.n < per_class;) {
                const nms_cand top = cand[0];
                cand[0] = cand[--left];
                nms_sift(cand, left, 0);
                float y0, x0, y1, x1;
                nms_corners(bd + (b * NB + top.idx) * 4, p->center_point_box, &y0, &x0, &y1, &x1);
                float area = (x1 - x0) * (y1 - y0);
                int nan = y0 != y0 || x0 != x0 || y1 != y1 || x1 != x1;
                int (*test)(NMS_ARGS) = nan || kept_nan ? nms_overlap_nan : fast;
                /* blocks of 64 kept boxes: the first overlap ends the search without giving up the vector loop */
                int hit = 0;
                for (int64_t q = 0; q < kept.n && !hit; q += 64)
                    hit = test(&kept, q, q + 64 < kept.n ? q + 64 : kept.n, y0, x0, y1, x1, area, iou);
                if (hit) continue;
                kept_nan |= nan;
                kept.y0[kept.n] = y0, kept.x0[kept.n] = x0, kept.y1[kept.n] = y1, kept.x1[kept.n] = x1;
                kept.area[kept.n++] = area;
                res[3 * count] = b;
                res[3 * count + 1] = c;
                res[3 * count + 2] = top.idx;
                count++;
            }
        }
    int64_t dims[2] = {count, 3};
    netrun_status st = args->alloc_output(args->exec, 0, 2, dims);
    if (st == NETRUN_OK && count > 0) memcpy(args->outputs[0].data, res, sizeof(int64_t) * 3 * (size_t)count);
    cpu_free(cand), cpu_free(kbuf), cpu_free(res);
    return st;
}

/* ================= RoiAlign ================= */

typedef struct roi_job {
    const netrun_roi_align_params *p;
    const netrun_tensor *x, *rois, *bi;
    netrun_tensor *y;
    int64_t cblk; /* channels per task */
} roi_job;

/* One bilinear sample: the offsets of its 4 corners in a channel plane and their weights (0 outside the map). */
typedef struct roi_sample {
    int64_t o[4];
    double w[4];
} roi_sample;

#define ROI_TABLE_MAX 1024 /* samples per roi kept in a table (on the stack); larger rois compute them per channel */

/* The geometry of roi r: start, bin size and sample grid, in the input's precision (float for float tensors), as
 * onnxruntime: the adaptive sample count ceil(rh / PH) depends on that rounding. */
typedef struct roi_geom {
    double sw, sh, bw, bh;
    int64_t gh, gw;
} roi_geom;

static void roi_geometry(const roi_job *j, int64_t r, roi_geom *g) {
    const netrun_roi_align_params *p = j->p;
    int64_t PH = p->output_height, PW = p->output_width;
    int dbl = j->x->dtype == NETRUN_DTYPE_DOUBLE;
    double off = p->half_pixel ? 0.5 : 0.0, ss = p->spatial_scale;
    double sw = fround(fround(cpu_load_f(j->rois->data, j->rois->dtype, r * 4 + 0) * ss, dbl) - off, dbl);
    double sh = fround(fround(cpu_load_f(j->rois->data, j->rois->dtype, r * 4 + 1) * ss, dbl) - off, dbl);
    double ew = fround(fround(cpu_load_f(j->rois->data, j->rois->dtype, r * 4 + 2) * ss, dbl) - off, dbl);
    double eh = fround(fround(cpu_load_f(j->rois->data, j->rois->dtype, r * 4 + 3) * ss, dbl) - off, dbl);
    double rw = fround(ew - sw, dbl), rh = fround(eh - sh, dbl);
    if (!p->half_pixel) { /* the legacy mode forces a roi of at least 1x1 */
        rw = rw > 1 ? rw : 1;
        rh = rh > 1 ? rh : 1;
    }
    g->sw = sw, g->sh = sh;
    g->bh = fround(rh / (double)PH, dbl), g->bw = fround(rw / (double)PW, dbl);
    /* sample counts: none for a NaN or empty roi, 256 per axis at most for huge ones (sampling_ratio's limit),
     * clamped before the conversion so that NaN and infinite coordinates give a defined answer */
    double dh = p->sampling_ratio > 0 ? (double)p->sampling_ratio : ceil(fround(rh / (double)PH, dbl));
    double dw = p->sampling_ratio > 0 ? (double)p->sampling_ratio : ceil(fround(rw / (double)PW, dbl));
    int64_t gh = !(dh > 0) ? 0 : dh > 256 ? 256 : (int64_t)dh;
    int64_t gw = !(dw > 0) ? 0 : dw > 256 ? 256 : (int64_t)dw;
    g->gh = gh, g->gw = gw;
}

/* Sample (ph, pw, iy, ix) of a roi: corners and weights; outside the map every corner is offset 0 with weight 0,
 * as the reference. */
static void roi_sample_at(const roi_geom *g, int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t iy, int64_t ix,
                          roi_sample *s) {
    double yy = g->sh + (double)ph * g->bh + ((double)iy + 0.5) * g->bh / (double)g->gh;
    double xx = g->sw + (double)pw * g->bw + ((double)ix + 0.5) * g->bw / (double)g->gw;
    memset(s, 0, sizeof *s);
    if (yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W) return;
    double y = yy > 0 ? yy : 0, xq = xx > 0 ? xx : 0;
    int64_t yl = (int64_t)y, xl = (int64_t)xq, yh, xh;
    if (yl >= H - 1) { yh = yl = H - 1; y = (double)yl; } else yh = yl + 1;
    if (xl >= W - 1) { xh = xl = W - 1; xq = (double)xl; } else xh = xl + 1;
    double ly = y - (double)yl, lx = xq - (double)xl, hy = 1 - ly, hx = 1 - lx;
    s->w[0] = hy * hx, s->w[1] = hy * lx, s->w[2] = ly * hx, s->w[3] = ly * lx;
    s->o[0] = yl * W + xl, s->o[1] = yl * W + xh, s->o[2] = yh * W + xl, s->o[3] = yh * W + xh;
}

/* Output bin value from its gh x gw samples: the mean of the bilinear values, or the max of the weighted corners
 * (onnxruntime's and the reference's rule). */
#define ROI_BIN(LOAD, SAMPLE)                                                                                  \
    do {                                                                                                       \
        double acc = 0;                                                                                        \
        for (int64_t k = 0; k < ns; k++) {                                                                     \
            const roi_sample *sp = (SAMPLE);                                                                   \
            double v1 = LOAD(sp->o[0]), v2 = LOAD(sp->o[1]), v3 = LOAD(sp->o[2]), v4 = LOAD(sp->o[3]);         \
            if (!mode_max) {                                                                                   \
                acc += sp->w[0] * v1 + sp->w[1] * v2 + sp->w[2] * v3 + sp->w[3] * v4;                          \
            } else {                                                                                           \
                double m = sp->w[0] * v1;                                                                      \
                m = sp->w[1] * v2 > m ? sp->w[1] * v2 : m;                                                     \
                m = sp->w[2] * v3 > m ? sp->w[2] * v3 : m;                                                     \
                m = sp->w[3] * v4 > m ? sp->w[3] * v4 : m;                                                     \
                if (k == 0 || m > acc) acc = m;                                                                \
            }                                                                                                  \
        }                                                                                                      \
        out = mode_max ? acc : acc / count;                                                                    \
    } while (0)

/* Tasks are (roi, block of cblk channels): the samples of the roi are computed once into a table and serve every
 * channel of the block (Faster R-CNN's box head pools 256 channels per proposal: the geometry was recomputed per
 * channel before), read straight from float X. */
static void roi_align_range(void *arg, int64_t b, int64_t e) {
    const roi_job *j = arg;
    const netrun_roi_align_params *p = j->p;
    const netrun_tensor *x = j->x;
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3], PH = p->output_height, PW = p->output_width;
    int64_t nblk = (C + j->cblk - 1) / j->cblk;
    const int mode_max = p->mode_max;
    roi_sample table[ROI_TABLE_MAX];
    for (int64_t t = b; t < e; t++) {
        int64_t r = t / nblk, c0 = (t % nblk) * j->cblk, c1 = c0 + j->cblk < C ? c0 + j->cblk : C;
        int64_t batch = ld_index(j->bi->data, j->bi->dtype, r);
        roi_geom g;
        roi_geometry(j, r, &g);
        int64_t ns = g.gh * g.gw;
        double count = ns > 1 ? (double)ns : 1.0;
        int tabled = PH * PW <= ROI_TABLE_MAX && ns <= ROI_TABLE_MAX / (PH * PW > 0 ? PH * PW : 1);
        if (tabled)
            for (int64_t ph = 0, k = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++)
                    for (int64_t iy = 0; iy < g.gh; iy++)
                        for (int64_t ix = 0; ix < g.gw; ix++) roi_sample_at(&g, H, W, ph, pw, iy, ix, &table[k++]);
        for (int64_t c = c0; c < c1; c++) {
            int64_t xbase = (batch * C + c) * H * W;
            const float *xf = x->dtype == NETRUN_DTYPE_FLOAT ? (const float *)x->data + xbase : NULL;
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    double out;
                    roi_sample s1;
#define ROI_LD_F(o) (double)xf[o]
#define ROI_LD_ANY(o) cpu_load_f(x->data, x->dtype, xbase + (o))
#define ROI_TAB (&table[(ph * PW + pw) * ns + k])
#define ROI_ONE (roi_sample_at(&g, H, W, ph, pw, k / g.gw, k % g.gw, &s1), &s1)
                    if (tabled && xf) ROI_BIN(ROI_LD_F, ROI_TAB);
                    else if (tabled) ROI_BIN(ROI_LD_ANY, ROI_TAB);
                    else ROI_BIN(ROI_LD_ANY, ROI_ONE);
#undef ROI_LD_F
#undef ROI_LD_ANY
#undef ROI_TAB
#undef ROI_ONE
                    cpu_store_f(j->y->data, j->y->dtype, ((r * C + c) * PH + ph) * PW + pw, out);
                }
        }
    }
}

static netrun_status run_roi_align(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_roi_align_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *rois = &args->inputs[1], *bi = &args->inputs[2];
    if (!p || x->rank != 4 || rois->rank != 2 || bi->rank != 1)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "RoiAlign: bad params or shapes");
    int64_t R = rois->dims[0], C = x->dims[1];
    for (int64_t r = 0; r < R; r++) {
        int64_t b = ld_index(bi->data, bi->dtype, r);
        if (b < 0 || b >= x->dims[0])
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "RoiAlign: batch_indices[%lld] = %lld is out of "
                                   "range [0, %lld)", (long long)r, (long long)b, (long long)x->dims[0]);
    }
    if (R * C == 0) return NETRUN_OK;
    if (x->dims[2] == 0 || x->dims[3] == 0) {
        memset(args->outputs[0].data, 0, args->outputs[0].nbytes);
        return NETRUN_OK;
    }
    /* blocks of 32 channels, fewer when there are few rois, so that every thread gets work */
    int64_t threads = ctx->threads > 0 ? ctx->threads : 1, cblk = 32;
    while (cblk > 1 && R * ((C + cblk - 1) / cblk) < 4 * threads) cblk /= 2;
    roi_job j = {.p = p, .x = x, .rois = rois, .bi = bi, .y = &args->outputs[0], .cblk = cblk};
    cpu_parallel_for(ctx, R * ((C + cblk - 1) / cblk), 1, roi_align_range, &j);
    return NETRUN_OK;
}

/* ================= MaxRoiPool ================= */

static netrun_status run_max_roi_pool(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_max_roi_pool_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *rois = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    if (!p || x->rank != 4 || rois->rank != 2 || rois->dims[1] != 5)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "MaxRoiPool: bad params or shapes");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], PH = p->pooled_h, PW = p->pooled_w;
    for (int64_t r = 0; r < rois->dims[0]; r++) {
        double bd = cpu_load_f(rois->data, rois->dtype, r * 5);
        int64_t b = (int64_t)bd;
        if (!(bd >= 0) || b >= N)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MaxRoiPool: roi %lld has batch index %g outside "
                                   "[0, %lld)", (long long)r, bd, (long long)N);
        double ss = p->spatial_scale, v[4];
        for (int q = 0; q < 4; q++) {
            v[q] = round(cpu_load_f(rois->data, rois->dtype, r * 5 + 1 + q) * ss);
            if (!(fabs(v[q]) < 1e15)) v[q] = 0; /* NaN/huge coordinates: a degenerate roi */
        }
        int64_t sw = (int64_t)v[0], sh = (int64_t)v[1], ew = (int64_t)v[2], eh = (int64_t)v[3];
        int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1, rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1;
        double bh = (double)rh / (double)PH, bw = (double)rw / (double)PW;
        for (int64_t c = 0; c < C; c++) {
            int64_t xb = (b * C + c) * H * W;
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t hs = (int64_t)floor((double)ph * bh) + sh, he = (int64_t)ceil((double)(ph + 1) * bh) + sh;
                    int64_t ws = (int64_t)floor((double)pw * bw) + sw, we = (int64_t)ceil((double)(pw + 1) * bw) + sw;
                    hs = hs < 0 ? 0 : hs > H ? H : hs;
                    he = he < 0 ? 0 : he > H ? H : he;
                    ws = ws < 0 ? 0 : ws > W ? W : ws;
                    we = we < 0 ? 0 : we > W ? W : we;
                    double m = 0;
                    if (he > hs && we > ws) {
                        m = -INFINITY;
                        for (int64_t h = hs; h < he; h++)
                            for (int64_t w = ws; w < we; w++) {
                                double v2 = cpu_load_f(x->data, x->dtype, xb + h * W + w);
                                if (v2 > m) m = v2;
                            }
                    }
                    cpu_store_f(y->data, y->dtype, ((r * C + c) * PH + ph) * PW + pw, m);
                }
        }
    }
    return NETRUN_OK;
}

/* ================= MaxUnpool ================= */

static netrun_status run_max_unpool(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_max_unpool_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *ix = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    if (!p || x->rank != p->n_spatial + 2 || y->rank != x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "MaxUnpool: bad params");
    size_t es;
    netrun_status st = cpu_need_esize(y, &es, "MaxUnpool");
    if (st != NETRUN_OK) return st;
    memset(y->data, 0, y->nbytes);
    int k = p->n_spatial;
    int64_t NC = x->dims[0] * x->dims[1], inf_sp = 1, out_sp = 1;
    for (int d = 0; d < k; d++) {
        inf_sp *= p->inferred[d];
        out_sp *= y->dims[2 + d];
    }
    int64_t total = NC * inf_sp, n = cpu_count(x);
    const int64_t *I = ix->data;
    for (int64_t e = 0; e < n; e++) {
        int64_t id = I[e];
        if (id < 0 || id >= total)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MaxUnpool: index %lld at %lld is out of range "
                                   "[0, %lld)", (long long)id, (long long)e, (long long)total);
        /* indices address [N, C, inferred...]: place it at the same coordinates of the output */
        int64_t nc = id / inf_sp, rem = id % inf_sp, off = 0, stride = 1;
        for (int d = k - 1; d >= 0; d--) {
            int64_t cd = rem % p->inferred[d];
            rem /= p->inferred[d];
            off += cd * stride;
            stride *= y->dims[2 + d];
        }
        memcpy((char *)y->data + (size_t)(nc * out_sp + off) * es, (const char *)x->data + (size_t)e * es, es);
    }
    return NETRUN_OK;
}

/* ================= AffineGrid ================= */

static netrun_status run_affine_grid(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_affine_grid_params *p = args->params;
    const netrun_tensor *th = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || (p->n_spatial != 2 && p->n_spatial != 3) || y->rank != p->n_spatial + 2)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "AffineGrid: bad params");
    int k = p->n_spatial;
    int64_t N = y->dims[0], D = k == 3 ? y->dims[1] : 1, H = y->dims[k - 1], W = y->dims[k];
    /* base coordinate of position i along a dim of length n, in [-1, 1] */
#define AG_COORD(i, n)                                                                                 \
    (p->align_corners ? ((n) > 1 ? -1.0 + 2.0 * (double)(i) / (double)((n) - 1) : -1.0)               \
                      : -1.0 + (2.0 * (double)(i) + 1.0) / (double)(n))
    int64_t o = 0;
    for (int64_t n = 0; n < N; n++) {
        double t[12];
        for (int q = 0; q < k * (k + 1); q++) t[q] = cpu_load_f(th->data, th->dtype, n * k * (k + 1) + q);
        for (int64_t d = 0; d < D; d++) {
            double z = k == 3 ? AG_COORD(d, D) : 0;
            for (int64_t h = 0; h < H; h++) {
                double yy = AG_COORD(h, H);
                for (int64_t w = 0; w < W; w++) {
                    double xx = AG_COORD(w, W);
                    if (k == 2) {
                        cpu_store_f(y->data, y->dtype, o++, t[0] * xx + t[1] * yy + t[2]);
                        cpu_store_f(y->data, y->dtype, o++, t[3] * xx + t[4] * yy + t[5]);
                    } else {
                        for (int r = 0; r < 3; r++)
                            cpu_store_f(y->data, y->dtype, o++, t[4 * r] * xx + t[4 * r + 1] * yy + t[4 * r + 2] * z + t[4 * r + 3]);
                    }
                }
            }
        }
    }
#undef AG_COORD
    return NETRUN_OK;
}

/* ================= Col2Im ================= */

static netrun_status run_col2im(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_col2im_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || x->rank != 3 || y->rank != p->n_spatial + 2)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "Col2Im: bad params");
    if (!float_dtype(x->dtype))
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Col2Im: dtype %d not supported", (int)x->dtype);
    int k = p->n_spatial;
    int64_t N = y->dims[0], C = y->dims[1], kprod = 1, L = x->dims[2], img = 1;
    for (int d = 0; d < k; d++) {
        kprod *= p->block[d];
        img *= p->image[d];
    }
    size_t es = cpu_esize(y->dtype);
    memset(y->data, 0, y->nbytes);
    double *acc = cpu_alloc(sizeof(double) * (size_t)(img > 0 ? img : 1));
    if (!acc) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Col2Im: out of memory");
    (void)es;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            for (int64_t i = 0; i < img; i++) acc[i] = 0;
            for (int64_t kk = 0; kk < kprod; kk++) {
                int64_t kpos[NETRUN_MAX_RANK], rem = kk;
                for (int d = k - 1; d >= 0; d--) {
                    kpos[d] = rem % p->block[d];
                    rem /= p->block[d];
                }
                const int64_t row = (n * x->dims[1] + c * kprod + kk) * L;
                for (int64_t l = 0; l < L; l++) {
                    int64_t r2 = l, off = 0, stride = 1, ok = 1;
                    for (int d = k - 1; d >= 0; d--) {
                        int64_t bpos = r2 % p->blocks[d];
                        r2 /= p->blocks[d];
                        int64_t pos = bpos * p->strides[d] - p->pads_begin[d] + kpos[d] * p->dilations[d];
                        if (pos < 0 || pos >= p->image[d]) { ok = 0; break; }
                        off += pos * stride;
                        stride *= p->image[d];
                    }
                    if (ok) acc[off] += cpu_load_f(x->data, x->dtype, row + l);
                }
            }
            for (int64_t i = 0; i < img; i++) cpu_store_f(y->data, y->dtype, (n * C + c) * img + i, acc[i]);
        }
    cpu_free(acc);
    return NETRUN_OK;
}

/* ================= CenterCropPad ================= */

static netrun_status run_center_crop_pad(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_center_crop_pad_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || p->rank != x->rank || y->rank != x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "CenterCropPad: bad params");
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "CenterCropPad");
    if (st != NETRUN_OK) return st;
    int r = x->rank;
    int64_t rows = 1, ow = y->dims[r - 1], iw = x->dims[r - 1];
    for (int d = 0; d < r - 1; d++) rows *= y->dims[d];
    if (rows * ow == 0) return NETRUN_OK;
    /* the copied part of each row: output [c0, c1) <- input [c0 + off, c1 + off) */
    int64_t off = p->offset[r - 1], c0 = off < 0 ? -off : 0, c1 = iw - off < ow ? iw - off : ow;
    char *yd = y->data;
    const char *xd = x->data;
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, src = 0, stride = iw, ok = 1;
        for (int d = r - 2; d >= 0; d--) {
            int64_t od = rem % y->dims[d];
            rem /= y->dims[d];
            int64_t id = od + p->offset[d];
            if (id < 0 || id >= x->dims[d]) { ok = 0; break; }
            src += id * stride;
            stride *= x->dims[d];
        }
        char *dst = yd + (size_t)(row * ow) * es;
        if (!ok || c1 <= c0) {
            memset(dst, 0, (size_t)ow * es);
            continue;
        }
        if (c0 > 0) memset(dst, 0, (size_t)c0 * es);
        memcpy(dst + (size_t)c0 * es, xd + (size_t)(src + c0 + off) * es, (size_t)(c1 - c0) * es);
        if (c1 < ow) memset(dst + (size_t)c1 * es, 0, (size_t)(ow - c1) * es);
    }
    return NETRUN_OK;
}

/* ================= DeformConv ================= */

typedef struct dc_job {
    const netrun_deform_conv_params *p;
    const netrun_kernel_args *args;
    double *col; /* [N][C * kH * kW][oH * oW] */
} dc_job;

/* Bilinear sample of one plane at (h, w), zero outside (GridSample linear, zeros, align_corners). */
static double dc_sample(const netrun_tensor *x, int64_t base, int64_t H, int64_t W, double h, double w) {
    if (!(h > -1 && h < (double)H && w > -1 && w < (double)W)) return 0;
    double hf = floor(h), wf = floor(w), lh = h - hf, lw = w - wf;
    int64_t h0 = (int64_t)hf, w0 = (int64_t)wf;
    double v = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            int64_t hh = h0 + a, ww = w0 + b;
            if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
            v += (a ? lh : 1 - lh) * (b ? lw : 1 - lw) * cpu_load_f(x->data, x->dtype, base + hh * W + ww);
        }
    return v;
}

/* Fill the sampled columns for one (n, c) per step. */
static void dc_cols(void *arg, int64_t b, int64_t e) {
    const dc_job *j = arg;
    const netrun_deform_conv_params *p = j->p;
    const netrun_tensor *x = &j->args->inputs[0], *off = &j->args->inputs[2];
    const netrun_tensor *mask = p->has_mask ? &j->args->inputs[4] : NULL;
    const netrun_tensor *y = &j->args->outputs[0];
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = y->dims[2], OW = y->dims[3];
    int64_t KH = p->kernel[0], KW = p->kernel[1], kk = KH * KW, cpg = C / p->offset_group;
    for (int64_t t = b; t < e; t++) {
        int64_t n = t / C, c = t % C, og = c / cpg, xbase = (n * C + c) * H * W;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                int64_t ki = kh * KW + kw;
                double *col = j->col + ((n * C + c) * kk + ki) * OH * OW;
                int64_t och = ((og * kk + ki) * 2) * OH * OW + n * off->dims[1] * OH * OW;
                int64_t mch = mask ? (n * mask->dims[1] + og * kk + ki) * OH * OW : 0;
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        int64_t q = oh * OW + ow;
                        double h = (double)(oh * p->strides[0] - p->pads_begin[0] + kh * p->dilations[0]) +
                                   cpu_load_f(off->data, off->dtype, och + q);
                        double w = (double)(ow * p->strides[1] - p->pads_begin[1] + kw * p->dilations[1]) +
                                   cpu_load_f(off->data, off->dtype, och + OH * OW + q);
                        double v = dc_sample(x, xbase, H, W, h, w);
                        if (mask) v *= cpu_load_f(mask->data, mask->dtype, mch + q);
                        col[q] = v;
                    }
            }
    }
}

/* Output for one (n, m) per step. */
static void dc_out(void *arg, int64_t b, int64_t e) {
    const dc_job *j = arg;
    const netrun_deform_conv_params *p = j->p;
    const netrun_tensor *x = &j->args->inputs[0], *w = &j->args->inputs[1];
    const netrun_tensor *bias = p->has_bias ? &j->args->inputs[3] : NULL;
    const netrun_tensor *y = &j->args->outputs[0];
    int64_t C = x->dims[1], M = y->dims[1], OHW = y->dims[2] * y->dims[3], kk = p->kernel[0] * p->kernel[1];
    int64_t cg = C / p->group, mg = M / p->group;
    double *acc = cpu_alloc(sizeof(double) * (size_t)(OHW > 0 ? OHW : 1));
    for (int64_t t = b; t < e; t++) {
        int64_t n = t / M, m = t % M, g = m / mg;
        double bv = bias ? cpu_load_f(bias->data, bias->dtype, m) : 0;
        if (!acc) { /* no scratch: accumulate straight into the output */
            for (int64_t q = 0; q < OHW; q++) {
                double s = bv;
                for (int64_t ci = 0; ci < cg * kk; ci++)
                    s += cpu_load_f(w->data, w->dtype, m * cg * kk + ci) * j->col[((n * C + g * cg) * kk + ci) * OHW + q];
                cpu_store_f(y->data, y->dtype, t * OHW + q, s);
            }
            continue;
        }
        for (int64_t q = 0; q < OHW; q++) acc[q] = bv;
        for (int64_t ci = 0; ci < cg * kk; ci++) {
            double wv = cpu_load_f(w->data, w->dtype, m * cg * kk + ci);
            const double *col = j->col + ((n * C + g * cg) * kk + ci) * OHW;
            for (int64_t q = 0; q < OHW; q++) acc[q] += wv * col[q];
        }
        for (int64_t q = 0; q < OHW; q++) cpu_store_f(y->data, y->dtype, t * OHW + q, acc[q]);
    }
    cpu_free(acc);
}

static netrun_status run_deform_conv(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_deform_conv_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || x->rank != 4 || y->rank != 4 || p->group < 1 || p->offset_group < 1 ||
        (p->has_mask && args->n_inputs < 5) || (p->has_bias && args->n_inputs < 4))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "DeformConv: bad params");
    int64_t N = x->dims[0], C = x->dims[1], kk = p->kernel[0] * p->kernel[1], OHW = y->dims[2] * y->dims[3];
    if (cpu_count(y) == 0) return NETRUN_OK;
    if (N * C * kk > (int64_t)(SIZE_MAX / sizeof(double)) / (OHW > 0 ? OHW : 1))
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "DeformConv: column buffer too large");
    dc_job j = {.p = p, .args = args};
    j.col = cpu_alloc(sizeof(double) * (size_t)(N * C * kk * OHW));
    if (!j.col) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "DeformConv: out of memory");
    cpu_parallel_for(ctx, N * C, 1, dc_cols, &j);
    cpu_parallel_for(ctx, N * y->dims[1], 1, dc_out, &j);
    cpu_free(j.col);
    return NETRUN_OK;
}

/* ================= ImageDecoder =================
 * Formats: JPEG through libjpeg-turbo (loaded with dlopen, so the backend does not link it; the same decoder
 * and default settings as Pillow, which made the ONNX reference outputs: its pixels match exactly), and
 * WebP through libwebp (also dlopen), and PNG, BMP, PNM, GIF, TGA, PSD, HDR through stb_image (Debian libstb-dev), which also decodes JPEG when
 * libjpeg is missing (pixels may then differ by a few units). JPEG 2000 and TIFF are not supported.
 * Grayscale is computed from RGB with Pillow's convert("L") weights (ITU-R 601-2, 16-bit fixed point). */
#if defined(__has_include)
#if __has_include(<stb/stb_image.h>)
#define NR_HAVE_STB 1
#endif
#if __has_include(<jpeglib.h>)
#define NR_HAVE_JPEGLIB 1
#endif
#endif

#ifdef NR_HAVE_STB
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_ASSERT(x) ((void)0)
#define STBI_MALLOC(sz) malloc(sz)
#define STBI_REALLOC(p, sz) realloc(p, sz)
#define STBI_FREE(p) free(p)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop
/* this stb_image declares stbi_set_unpremultiply_on_load_thread static without defining it; GCC reports
 * that at the end of the file, outside any push/pop */
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

#include <dlfcn.h>
#include <pthread.h>

#ifdef NR_HAVE_JPEGLIB
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <jpeglib.h>

/* The libjpeg entry points used, resolved once. */
static struct {
    struct jpeg_error_mgr *(*std_error)(struct jpeg_error_mgr *);
    void (*create)(j_decompress_ptr, int, size_t);
    void (*mem_src)(j_decompress_ptr, const unsigned char *, unsigned long);
    int (*read_header)(j_decompress_ptr, boolean);
    boolean (*start)(j_decompress_ptr);
    JDIMENSION (*read_scanlines)(j_decompress_ptr, JSAMPARRAY, JDIMENSION);
    boolean (*finish)(j_decompress_ptr);
    void (*destroy)(j_decompress_ptr);
    int ok;
} jl;
static pthread_once_t jl_once = PTHREAD_ONCE_INIT;

static void jl_load(void) {
    /* the library that matches the header we were built with (JPEG_LIB_VERSION 62 on Debian) */
    void *h = dlopen("libjpeg.so.62", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libjpeg.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    *(void **)&jl.std_error = dlsym(h, "jpeg_std_error");
    *(void **)&jl.create = dlsym(h, "jpeg_CreateDecompress");
    *(void **)&jl.mem_src = dlsym(h, "jpeg_mem_src");
    *(void **)&jl.read_header = dlsym(h, "jpeg_read_header");
    *(void **)&jl.start = dlsym(h, "jpeg_start_decompress");
    *(void **)&jl.read_scanlines = dlsym(h, "jpeg_read_scanlines");
    *(void **)&jl.finish = dlsym(h, "jpeg_finish_decompress");
    *(void **)&jl.destroy = dlsym(h, "jpeg_destroy_decompress");
    jl.ok = jl.std_error && jl.create && jl.mem_src && jl.read_header && jl.start && jl.read_scanlines &&
            jl.finish && jl.destroy;
    /* the handle stays open for the life of the process: the pointers above live in it */
}

typedef struct jl_err {
    struct jpeg_error_mgr mgr;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jl_err;

static void jl_error_exit(j_common_ptr ci) {
    jl_err *e = (jl_err *)ci->err;
    e->mgr.format_message(ci, e->msg); /* libjpeg would exit(): return to the decoder instead */
    longjmp(e->jb, 1);
}
static void jl_no_output(j_common_ptr ci) { (void)ci; }

/* Decode JPEG to RGB. Returns 1 and a malloc'ed buffer, 0 when libjpeg is unavailable, -1 on a bad stream
 * (message written to err). */
static int jl_decode(const unsigned char *data, size_t n, unsigned char **out, int64_t *h, int64_t *w, char *err,
                     size_t err_size) {
    pthread_once(&jl_once, jl_load);
    if (!jl.ok) return 0;
    struct jpeg_decompress_struct ci;
    jl_err e;
    unsigned char *volatile buf = NULL;
    memset(&ci, 0, sizeof ci);
    ci.err = jl.std_error(&e.mgr);
    e.mgr.error_exit = jl_error_exit;
    e.mgr.output_message = jl_no_output;
    e.msg[0] = 0;
    if (setjmp(e.jb)) {
        snprintf(err, err_size, "JPEG: %s", e.msg);
        jl.destroy(&ci);
        free(buf);
        return -1;
    }
    jl.create(&ci, JPEG_LIB_VERSION, sizeof ci);
    jl.mem_src(&ci, data, (unsigned long)n);
    jl.read_header(&ci, TRUE);
    ci.out_color_space = JCS_RGB; /* libjpeg converts grayscale and YCbCr; CMYK is refused below */
    jl.start(&ci);
    if (ci.output_components != 3) {
        snprintf(err, err_size, "JPEG: %d output components (CMYK?) not supported", ci.output_components);
        jl.destroy(&ci);
        return -1;
    }
    size_t stride = (size_t)ci.output_width * 3;
    buf = malloc(stride * ci.output_height + 1);
    if (!buf) {
        snprintf(err, err_size, "out of memory");
        jl.destroy(&ci);
        return -1;
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW row = buf + stride * ci.output_scanline;
        if (jl.read_scanlines(&ci, &row, 1) != 1) break;
    }
    *h = ci.output_height;
    *w = ci.output_width;
    jl.finish(&ci);
    jl.destroy(&ci);
    *out = buf;
    return 1;
}
#endif

/* WebP through libwebp (dlopen: its runtime is part of Debian's base image stack; the two calls below are
 * its stable simple API, declared here so that no -dev package is needed). Same decoder as Pillow. */
static struct {
    uint8_t *(*decode_rgb)(const uint8_t *, size_t, int *, int *);
    void (*free_fn)(void *);
} wp;
static pthread_once_t wp_once = PTHREAD_ONCE_INIT;

static void wp_load(void) {
    void *h = dlopen("libwebp.so.7", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libwebp.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    *(void **)&wp.free_fn = dlsym(h, "WebPFree");
    *(void **)&wp.decode_rgb = dlsym(h, "WebPDecodeRGB");
}

/* Decode WebP to RGB into a malloc'ed buffer: 1 done, 0 libwebp unavailable, -1 bad stream. */
static int wp_decode(const unsigned char *data, size_t n, unsigned char **out, int64_t *h, int64_t *w) {
    pthread_once(&wp_once, wp_load);
    if (!wp.decode_rgb) return 0;
    int iw = 0, ih = 0;
    uint8_t *px = wp.decode_rgb(data, n, &iw, &ih);
    if (!px) return -1;
    size_t bytes = (size_t)iw * (size_t)ih * 3;
    *out = malloc(bytes + 1);
    if (*out) memcpy(*out, px, bytes);
    if (wp.free_fn) wp.free_fn(px);
    else free(px); /* libwebp before 0.6 allocates with malloc */
    if (!*out) return -1;
    *h = ih;
    *w = iw;
    return 1;
}

#define IMAGE_DECODER_CONSTRAINTS "JPEG (libjpeg-turbo), WebP (libwebp), PNG, BMP, PNM, GIF, TGA (stb_image); no JPEG 2000, TIFF"

static netrun_status run_image_decoder(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_image_decoder_params *p = args->params;
    const netrun_tensor *in = &args->inputs[0];
    if (!p || in->rank != 1 || !args->alloc_output)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "ImageDecoder: bad params");
    const unsigned char *data = in->data;
    size_t n = (size_t)cpu_count(in);
    unsigned char *rgb = NULL;
    int64_t h = 0, w = 0;
    char err[320] = "";
    int done = 0;
#ifdef NR_HAVE_JPEGLIB
    if (n >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
        int r = jl_decode(data, n, &rgb, &h, &w, err, sizeof err);
        if (r < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ImageDecoder: %s", err);
        done = r;
    }
#endif
    if (n >= 12 && !memcmp(data, "RIFF", 4) && !memcmp(data + 8, "WEBP", 4)) {
        int r = wp_decode(data, n, &rgb, &h, &w);
        if (r < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ImageDecoder: cannot decode the WebP stream");
        done = r;
    }
    if (!done) {
#ifdef NR_HAVE_STB
        if (n > INT32_MAX) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ImageDecoder: stream too large");
        int iw, ih, comp;
        rgb = stbi_load_from_memory(data, (int)n, &iw, &ih, &comp, 3);
        if (!rgb)
            return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "ImageDecoder: cannot decode the stream (%s)",
                                   stbi_failure_reason());
        h = ih;
        w = iw;
#else
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "ImageDecoder: this build decodes only JPEG and WebP "
                               "(no stb_image: install libstb-dev)");
#endif
    }
    int gray = p->pixel_format == NETRUN_PIXEL_GRAY, bgr = p->pixel_format == NETRUN_PIXEL_BGR;
    int64_t dims[3] = {h, w, gray ? 1 : 3};
    netrun_status st = args->alloc_output(args->exec, 0, 3, dims);
    if (st != NETRUN_OK) {
        free(rgb);
        return st;
    }
    uint8_t *y = args->outputs[0].data;
    int64_t np = h * w;
    for (int64_t i = 0; i < np; i++) {
        uint32_t r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
        if (gray) y[i] = (uint8_t)((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
        else if (bgr) y[3 * i] = (uint8_t)b, y[3 * i + 1] = (uint8_t)g, y[3 * i + 2] = (uint8_t)r;
        else y[3 * i] = (uint8_t)r, y[3 * i + 1] = (uint8_t)g, y[3 * i + 2] = (uint8_t)b;
    }
    free(rgb);
    return NETRUN_OK;
}
#define IMAGE_DECODER_ENTRY                                                                                      \
    {"ImageDecoder", NULL, NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT8), IMAGE_DECODER_CONSTRAINTS, NULL, NULL,         \
     run_image_decoder, NULL},

/* ---- table ---- */

const cpu_op cpu_ops_vision[] = {
    {"GridSample", NULL, FLOAT_DT, "2-D to 3-D spatial; float grids", NULL, NULL, run_grid_sample, NULL},
    {"NonMaxSuppression", NULL, NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT), "", NULL, NULL, run_nms, NULL},
    {"RoiAlign", NULL, FLOAT_DT, "", NULL, NULL, run_roi_align, NULL},
    {"MaxRoiPool", NULL, FLOAT_DT, "", NULL, NULL, run_max_roi_pool, NULL},
    {"MaxUnpool", NULL, FLOAT_DT, "", NULL, NULL, run_max_unpool, NULL},
    {"AffineGrid", NULL, FLOAT_DT, "", NULL, NULL, run_affine_grid, NULL},
    {"Col2Im", NULL, FLOAT_DT, "", NULL, NULL, run_col2im, NULL},
    {"CenterCropPad", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_center_crop_pad, NULL},
    {"DeformConv", NULL, FLOAT_DT, "2-D only", NULL, NULL, run_deform_conv, NULL},
    IMAGE_DECODER_ENTRY
    {0},
};
