/* CUDA kernels: GridSample, AffineGrid, RoiAlign and NonMaxSuppression, ports of the CPU backend's (backends/cpu/vision.c): values
 * in double, coordinates rounded to float where the CPU rounds them (the ONNX reference and onnxruntime
 * compute them in float), and the coordinate arithmetic written with explicit _rn operations so that nvcc's
 * multiply-add contraction cannot move a sample position across a pixel boundary the CPU does not cross. */
#include "cast_dev.cuh"

#define VISION_FLOAT_DTYPES (CUDA_DT(FLOAT) | CUDA_DT(FLOAT16) | CUDA_DT(DOUBLE) | CUDA_DT(BFLOAT16))

static int vision_float(netrun_dtype t) { return (unsigned)t < 64 && ((VISION_FLOAT_DTYPES >> t) & 1); }

/* Round to float unless the op computes in double. */
__device__ __forceinline__ double fround(double v, int dbl) { return dbl ? v : (double)(float)v; }

/* ================= GridSample ================= */

struct gs_args {
    const void *x, *g;
    void *y;
    int xt, gt, yt;
    int mode, pad, ac, k, dbl;
    int64_t N, C, n_out, sp;
    int64_t dims[3];
};

/* Reflect x into [lo, hi] by folding at the borders (as PyTorch / the ONNX reference). */
__device__ double gs_reflect(double x, double lo, double hi) {
    double rng = __dsub_rn(hi, lo);
    if (rng <= 0) return lo;
    if (x < lo) {
        double dx = __dsub_rn(lo, x);
        int64_t n = (int64_t)(dx / rng);
        double r = __dsub_rn(dx, __dmul_rn((double)n, rng));
        return n % 2 == 0 ? __dadd_rn(lo, r) : __dsub_rn(hi, r);
    }
    if (x > hi) {
        double dx = __dsub_rn(x, hi);
        int64_t n = (int64_t)(dx / rng);
        double r = __dsub_rn(dx, __dmul_rn((double)n, rng));
        return n % 2 == 0 ? __dsub_rn(hi, r) : __dadd_rn(lo, r);
    }
    return x;
}

/* Index of a tap after padding; -1 = reads zero. */
__device__ __forceinline__ int64_t gs_pixel(int64_t i, int64_t d, int pad, double lo, double hi) {
    if (pad == NETRUN_GS_PAD_ZEROS) return i >= 0 && i < d ? i : -1;
    if (pad == NETRUN_GS_PAD_BORDER) return i < 0 ? 0 : i >= d ? d - 1 : i;
    int64_t r = (int64_t)gs_reflect((double)i, lo, hi);
    return r < 0 ? 0 : r >= d ? d - 1 : r;
}

__device__ __forceinline__ void gs_cubic_coeffs(double x, double *c) {
    const double A = -0.75;
    x = fabs(x);
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

/* One thread per (batch, output point); it computes the taps once and walks the channels. */
__global__ void grid_sample_k(gs_args a) {
    GRID_LOOP(t, a.N * a.n_out) {
        int64_t n = t / a.n_out, o = t - n * a.n_out;
        int64_t idx[3][4];
        double w[3][4];
        int cnt[3];
        for (int d = 0; d < a.k; d++) {
            /* grid's last axis lists coordinates innermost-dim first */
            double nv = nr_load_as_double(a.g, a.gt, t * a.k + (a.k - 1 - d));
            double len = (double)a.dims[d];
            double c = a.ac ? __dmul_rn(__dadd_rn(nv, 1) / 2.0, __dsub_rn(len, 1))
                            : __dsub_rn(__dmul_rn(__dadd_rn(nv, 1), len), 1) / 2.0;
            c = fround(c, a.dbl);
            double lo = a.ac ? 0 : -0.5, hi = a.ac ? __dsub_rn(len, 1) : __dsub_rn(len, 0.5);
            if (a.mode == NETRUN_GS_NEAREST) c = rint(c); /* half to even, as PyTorch */
            /* cubic pads each tap, not the coordinate, in border mode (PyTorch and onnxruntime) */
            if ((c < lo || c > hi) && !(a.mode == NETRUN_GS_CUBIC && a.pad == NETRUN_GS_PAD_BORDER)) {
                if (a.pad == NETRUN_GS_PAD_BORDER) c = c < 0 ? 0 : c > len - 1 ? len - 1 : c;
                else if (a.pad == NETRUN_GS_PAD_REFLECTION) c = fround(gs_reflect(c, lo, hi), a.dbl);
            }
            if (!(c == c) || fabs(c) > 1e15) { /* NaN or absurd coordinate: read zero */
                cnt[d] = 1;
                idx[d][0] = a.pad == NETRUN_GS_PAD_ZEROS ? -1 : 0;
                w[d][0] = a.pad == NETRUN_GS_PAD_ZEROS ? 0 : 1;
                continue;
            }
            if (a.mode == NETRUN_GS_NEAREST) {
                cnt[d] = 1;
                idx[d][0] = gs_pixel((int64_t)c, a.dims[d], a.pad, lo, hi);
                w[d][0] = 1;
            } else if (a.mode == NETRUN_GS_LINEAR) {
                double f = floor(c), r = __dsub_rn(c, f);
                cnt[d] = 2;
                idx[d][0] = gs_pixel((int64_t)f, a.dims[d], a.pad, lo, hi);
                idx[d][1] = gs_pixel((int64_t)f + 1, a.dims[d], a.pad, lo, hi);
                w[d][0] = __dsub_rn(1, r);
                w[d][1] = r;
            } else {
                double f = floor(c), cf[4];
                gs_cubic_coeffs(__dsub_rn(c, f), cf);
                cnt[d] = 4;
                for (int q = 0; q < 4; q++) {
                    idx[d][q] = gs_pixel((int64_t)f - 1 + q, a.dims[d], a.pad, lo, hi);
                    w[d][q] = cf[q];
                }
            }
        }
        int total = 1;
        for (int d = 0; d < a.k; d++) total *= cnt[d];
        for (int64_t ch = 0; ch < a.C; ch++) {
            int64_t base = (n * a.C + ch) * a.sp;
            double acc = 0;
            for (int q = 0; q < total; q++) {
                int rem = q;
                double wt = 1;
                int64_t off = 0, stride = 1;
                int valid = 1;
                for (int d = a.k - 1; d >= 0; d--) {
                    int qi = rem % cnt[d];
                    rem /= cnt[d];
                    int64_t ii = idx[d][qi];
                    if (ii < 0) { valid = 0; break; }
                    wt *= w[d][qi];
                    off += ii * stride;
                    stride *= a.dims[d];
                }
                if (valid) acc += wt * nr_load_as_double(a.x, a.xt, base + off);
            }
            dev_store_f(a.y, a.yt, (n * a.C + ch) * a.n_out + o, acc);
        }
    }
}

static int grid_sample_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_grid_sample_params *p = (const netrun_grid_sample_params *)node->params;
    if (!p || node->n_inputs < 2 || node->n_outputs < 1) return cuda_refuse(reason, size, "GridSample without params");
    /* n_spatial is 0 while infer waits for run-time values (placement comes first); the run checks it */
    if (p->n_spatial < 0 || p->n_spatial > 3)
        return cuda_refuse(reason, size, "GridSample: %d spatial dims (1 to 3 supported)", p->n_spatial);
    if (!vision_float(node->inputs[0].dtype) || !vision_float(node->inputs[1].dtype) ||
        !vision_float(node->outputs[0].dtype))
        return cuda_refuse(reason, size, "GridSample: dtypes %s / %s (float types only)",
                           cuda_dtype_name(node->inputs[0].dtype), cuda_dtype_name(node->inputs[1].dtype));
    if (p->mode != NETRUN_GS_LINEAR && p->mode != NETRUN_GS_NEAREST && p->mode != NETRUN_GS_CUBIC)
        return cuda_refuse(reason, size, "GridSample: mode %d unknown", p->mode);
    return 1;
}

static netrun_status grid_sample_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_grid_sample_params *p = (const netrun_grid_sample_params *)args->params;
    const netrun_tensor *x = &args->inputs[0], *g = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    if (!p || p->n_spatial < 1 || p->n_spatial > 3 || x->rank != p->n_spatial + 2 || g->rank != x->rank)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda GridSample: bad params or ranks");
    gs_args a;
    memset(&a, 0, sizeof a);
    a.x = x->data;
    a.g = g->data;
    a.y = y->data;
    a.xt = (int)x->dtype;
    a.gt = (int)g->dtype;
    a.yt = (int)y->dtype;
    a.mode = p->mode;
    a.pad = p->padding_mode;
    a.ac = p->align_corners;
    a.k = p->n_spatial;
    a.dbl = x->dtype == NETRUN_DTYPE_DOUBLE;
    a.N = x->dims[0];
    a.C = x->dims[1];
    a.sp = 1;
    for (int d = 0; d < a.k; d++) {
        a.dims[d] = x->dims[2 + d];
        a.sp *= a.dims[d];
    }
    a.n_out = 1;
    for (int d = 0; d < a.k; d++) a.n_out *= g->dims[1 + d];
    int64_t total = a.N * a.n_out;
    if (total == 0 || a.C == 0) return NETRUN_OK;
    grid_sample_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(a);
    return cuda_check_launch("GridSample");
}

/* ================= AffineGrid ================= */

/* Base coordinate of position i along a dim of length n, in [-1, 1]. */
__device__ __forceinline__ double ag_coord(int ac, int64_t i, int64_t n) {
    if (ac) return n > 1 ? __dadd_rn(-1.0, __dmul_rn(2.0, (double)i) / (double)(n - 1)) : -1.0;
    return __dadd_rn(-1.0, __dadd_rn(__dmul_rn(2.0, (double)i), 1.0) / (double)n);
}

__global__ void affine_grid_k(const void *th, int tt, void *y, int yt, int k, int ac, int64_t N, int64_t D, int64_t H,
                              int64_t W) {
    GRID_LOOP(pos, N * D * H * W) {
        int64_t w = pos % W, r = pos / W, h = r % H;
        r /= H;
        int64_t d = r % D, n = r / D;
        double t[12];
        for (int q = 0; q < k * (k + 1); q++) t[q] = nr_load_as_double(th, tt, n * k * (k + 1) + q);
        double xx = ag_coord(ac, w, W), yy = ag_coord(ac, h, H), z = k == 3 ? ag_coord(ac, d, D) : 0;
        int64_t o = pos * k;
        if (k == 2) {
            dev_store_f(y, yt, o, __dadd_rn(__dadd_rn(__dmul_rn(t[0], xx), __dmul_rn(t[1], yy)), t[2]));
            dev_store_f(y, yt, o + 1, __dadd_rn(__dadd_rn(__dmul_rn(t[3], xx), __dmul_rn(t[4], yy)), t[5]));
        } else {
            for (int q = 0; q < 3; q++)
                dev_store_f(y, yt, o + q,
                            __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(t[4 * q], xx), __dmul_rn(t[4 * q + 1], yy)),
                                                __dmul_rn(t[4 * q + 2], z)),
                                      t[4 * q + 3]));
        }
    }
}

static int affine_grid_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_affine_grid_params *p = (const netrun_affine_grid_params *)node->params;
    if (!p || node->n_inputs < 1 || node->n_outputs < 1) return cuda_refuse(reason, size, "AffineGrid without params");
    /* n_spatial comes from the values of `size`: 0 at placement when they are only known at run time */
    if (p->n_spatial != 0 && p->n_spatial != 2 && p->n_spatial != 3)
        return cuda_refuse(reason, size, "AffineGrid: %d spatial dims (2 or 3)", p->n_spatial);
    if (!vision_float(node->inputs[0].dtype) || !vision_float(node->outputs[0].dtype))
        return cuda_refuse(reason, size, "AffineGrid: dtype %s (float types only)", cuda_dtype_name(node->inputs[0].dtype));
    return 1;
}

static netrun_status affine_grid_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_affine_grid_params *p = (const netrun_affine_grid_params *)args->params;
    const netrun_tensor *th = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || (p->n_spatial != 2 && p->n_spatial != 3) || y->rank != p->n_spatial + 2)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda AffineGrid: bad params");
    int k = p->n_spatial;
    int64_t N = y->dims[0], D = k == 3 ? y->dims[1] : 1, H = y->dims[k - 1], W = y->dims[k];
    if (cuda_count(th) < N * k * (k + 1))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda AffineGrid: theta has %lld values, %lld needed",
                                (long long)cuda_count(th), (long long)(N * k * (k + 1)));
    int64_t total = N * D * H * W;
    if (total == 0) return NETRUN_OK;
    affine_grid_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(th->data, (int)th->dtype, y->data, (int)y->dtype,
                                                                        k, p->align_corners, N, D, H, W);
    return cuda_check_launch("AffineGrid");
}

/* ================= RoiAlign ================= */

struct roi_args {
    const void *x, *rois, *bi;
    void *y;
    int xt, rt, bt, yt;
    int mode_max, half_pixel;
    int64_t N, C, H, W, PH, PW, sampling_ratio;
    double spatial_scale;
};

/* One thread per output element (roi, channel, ph, pw). */
__global__ void roi_align_k(roi_args a, int64_t total) {
    GRID_LOOP(t, total) {
        int64_t pw = t % a.PW, q = t / a.PW, ph = q % a.PH;
        q /= a.PH;
        int64_t c = q % a.C, r = q / a.C;
        int64_t batch = a.bt == NETRUN_DTYPE_INT32 ? ((const int32_t *)a.bi)[r] : ((const int64_t *)a.bi)[r];
        if (batch < 0 || batch >= a.N) { /* the CPU refuses these; a kernel cannot, so it writes zero */
            dev_store_f(a.y, a.yt, t, 0.0);
            continue;
        }
        /* roi geometry in the input's precision (float for float tensors), as onnxruntime */
        int dbl = a.xt == NETRUN_DTYPE_DOUBLE;
        double off = a.half_pixel ? 0.5 : 0.0, ss = a.spatial_scale;
        double sw = fround(__dsub_rn(fround(__dmul_rn(nr_load_as_double(a.rois, a.rt, r * 4 + 0), ss), dbl), off), dbl);
        double sh = fround(__dsub_rn(fround(__dmul_rn(nr_load_as_double(a.rois, a.rt, r * 4 + 1), ss), dbl), off), dbl);
        double ew = fround(__dsub_rn(fround(__dmul_rn(nr_load_as_double(a.rois, a.rt, r * 4 + 2), ss), dbl), off), dbl);
        double eh = fround(__dsub_rn(fround(__dmul_rn(nr_load_as_double(a.rois, a.rt, r * 4 + 3), ss), dbl), off), dbl);
        double rw = fround(__dsub_rn(ew, sw), dbl), rh = fround(__dsub_rn(eh, sh), dbl);
        if (!a.half_pixel) { /* the legacy mode forces a roi of at least 1x1 */
            rw = rw > 1 ? rw : 1;
            rh = rh > 1 ? rh : 1;
        }
        double bh = fround(rh / (double)a.PH, dbl), bw = fround(rw / (double)a.PW, dbl);
        int64_t gh = a.sampling_ratio > 0 ? a.sampling_ratio : (int64_t)ceil(fround(rh / (double)a.PH, dbl));
        int64_t gw = a.sampling_ratio > 0 ? a.sampling_ratio : (int64_t)ceil(fround(rw / (double)a.PW, dbl));
        if (gh < 0) gh = 0;
        if (gw < 0) gw = 0;
        if (gh > 256) gh = 256; /* runaway sample counts from huge rois: 256 per axis, sampling_ratio's limit */
        if (gw > 256) gw = 256;
        double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
        int64_t xbase = (batch * a.C + c) * a.H * a.W, H = a.H, W = a.W;
        double acc = 0;
        int first = 1;
        for (int64_t iy = 0; iy < gh; iy++) {
            double yy = __dadd_rn(__dadd_rn(sh, __dmul_rn((double)ph, bh)), __dmul_rn((double)iy + 0.5, bh) / (double)gh);
            for (int64_t ix = 0; ix < gw; ix++) {
                double xx = __dadd_rn(__dadd_rn(sw, __dmul_rn((double)pw, bw)), __dmul_rn((double)ix + 0.5, bw) / (double)gw);
                double v1 = 0, v2 = 0, v3 = 0, v4 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0;
                if (!(yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)) {
                    double y = yy > 0 ? yy : 0, xq = xx > 0 ? xx : 0;
                    int64_t yl = (int64_t)y, xl = (int64_t)xq, yh, xh;
                    if (yl >= H - 1) { yh = yl = H - 1; y = (double)yl; } else yh = yl + 1;
                    if (xl >= W - 1) { xh = xl = W - 1; xq = (double)xl; } else xh = xl + 1;
                    double ly = __dsub_rn(y, (double)yl), lx = __dsub_rn(xq, (double)xl);
                    double hy = __dsub_rn(1, ly), hx = __dsub_rn(1, lx);
                    w1 = __dmul_rn(hy, hx), w2 = __dmul_rn(hy, lx), w3 = __dmul_rn(ly, hx), w4 = __dmul_rn(ly, lx);
                    v1 = nr_load_as_double(a.x, a.xt, xbase + yl * W + xl);
                    v2 = nr_load_as_double(a.x, a.xt, xbase + yl * W + xh);
                    v3 = nr_load_as_double(a.x, a.xt, xbase + yh * W + xl);
                    v4 = nr_load_as_double(a.x, a.xt, xbase + yh * W + xh);
                } else {
                    v1 = v2 = v3 = v4 = nr_load_as_double(a.x, a.xt, xbase); /* weights 0, as the reference */
                }
                if (!a.mode_max) {
                    acc += w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4;
                } else { /* max of the weighted corners (onnxruntime's and the reference's rule) */
                    double m = __dmul_rn(w1, v1);
                    m = __dmul_rn(w2, v2) > m ? __dmul_rn(w2, v2) : m;
                    m = __dmul_rn(w3, v3) > m ? __dmul_rn(w3, v3) : m;
                    m = __dmul_rn(w4, v4) > m ? __dmul_rn(w4, v4) : m;
                    if (first || m > acc) acc = m;
                    first = 0;
                }
            }
        }
        if (!a.mode_max) acc /= count;
        dev_store_f(a.y, a.yt, t, acc);
    }
}

static int roi_align_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_roi_align_params *p = (const netrun_roi_align_params *)node->params;
    if (!p || node->n_inputs < 3 || node->n_outputs < 1) return cuda_refuse(reason, size, "RoiAlign without params");
    if (!vision_float(node->inputs[0].dtype) || !vision_float(node->inputs[1].dtype) ||
        !vision_float(node->outputs[0].dtype))
        return cuda_refuse(reason, size, "RoiAlign: dtypes %s / %s (float types only)",
                           cuda_dtype_name(node->inputs[0].dtype), cuda_dtype_name(node->inputs[1].dtype));
    netrun_dtype bt = node->inputs[2].dtype;
    if (bt != NETRUN_DTYPE_INT64 && bt != NETRUN_DTYPE_INT32)
        return cuda_refuse(reason, size, "RoiAlign: batch_indices of dtype %s", cuda_dtype_name(bt));
    return 1;
}

static netrun_status roi_align_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_roi_align_params *p = (const netrun_roi_align_params *)args->params;
    const netrun_tensor *x = &args->inputs[0], *rois = &args->inputs[1], *bi = &args->inputs[2];
    netrun_tensor *y = &args->outputs[0];
    if (!p || x->rank != 4 || rois->rank != 2 || bi->rank != 1 || p->output_height < 0 || p->output_width < 0)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RoiAlign: bad params or shapes");
    roi_args a;
    memset(&a, 0, sizeof a);
    a.x = x->data;
    a.rois = rois->data;
    a.bi = bi->data;
    a.y = y->data;
    a.xt = (int)x->dtype;
    a.rt = (int)rois->dtype;
    a.bt = (int)bi->dtype;
    a.yt = (int)y->dtype;
    a.mode_max = p->mode_max;
    a.half_pixel = p->half_pixel;
    a.N = x->dims[0];
    a.C = x->dims[1];
    a.H = x->dims[2];
    a.W = x->dims[3];
    a.PH = p->output_height;
    a.PW = p->output_width;
    a.sampling_ratio = p->sampling_ratio;
    a.spatial_scale = p->spatial_scale;
    int64_t total = rois->dims[0] * a.C * a.PH * a.PW;
    if (total == 0) return NETRUN_OK;
    if (a.H == 0 || a.W == 0) {
        cudaError_t e = cudaMemsetAsync(y->data, 0, y->nbytes, ctx->stream);
        return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "RoiAlign zero fill");
    }
    roi_align_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(a, total);
    return cuda_check_launch("RoiAlign");
}


/* ================= NonMaxSuppression =================
 * The CPU kernel's selection (backends/cpu/vision.c), in four data-parallel steps per (batch, class) segment:
 *   1. rank: each candidate (score above the threshold) counts the candidates before it (higher score, or equal
 *      score and lower box index: the CPU's sort order; NaN scores last) and writes its box index at that rank;
 *   2. corners and areas of the candidates in rank order;
 *   3. mask: for each candidate i, one bit per later candidate j whose IoU with i is above the threshold, as
 *      64-bit words (rows of ceil(n / 64) words, the upper triangle only);
 *   4. scan, one block per segment: 64 candidates at a time, the first thread keeps those no kept box removed
 *      (their own chunk's words staged in shared memory), then all threads OR the kept rows into `removed`.
 * The IoU arithmetic is the CPU's, with explicit round-to-nearest operations so that nvcc's multiply-add
 * contraction cannot change a comparison: the same boxes are selected, in the same order. Memory is O(n^2 / 8)
 * bytes a segment (supports() refuses more than NMS_MAX_BOXES boxes), kept in a buffer the kernel grows. */

#define NMS_MAX_BOXES 65536
#define NMS_SCAN_THREADS 512

struct nms_state {
    void *buf;          /* device scratch, grown on demand */
    size_t cap;
    int have_consts;    /* max_out / iou / score read from constant inputs at create */
    int64_t max_out;
    float iou, score;
    int has_score;
};

__device__ __forceinline__ bool nms_before(float sj, int64_t j, float si, int64_t i) {
    bool nj = sj != sj, ni = si != si;
    if (nj || ni) return nj && ni ? j < i : ni; /* NaN scores rank after every number, by box index */
    return sj > si || (sj == si && j < i);
}

__global__ void nms_rank_k(const float *scores, int64_t n, int has_score, float th, int *order, int *count) {
    __shared__ float ts[256];
    int64_t s = blockIdx.y, i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float *sc = scores + s * n;
    float si = i < n ? sc[i] : 0.f;
    bool vi = i < n && (!has_score || si > th);
    int64_t rank = 0;
    for (int64_t t0 = 0; t0 < n; t0 += 256) {
        int64_t j = t0 + threadIdx.x;
        ts[threadIdx.x] = j < n ? sc[j] : 0.f;
        __syncthreads();
        if (vi) {
            int64_t m = n - t0 < 256 ? n - t0 : 256;
            for (int64_t k = 0; k < m; k++) {
                float sj = ts[k];
                if ((!has_score || sj > th) && nms_before(sj, t0 + k, si, i)) rank++;
            }
        }
        __syncthreads();
    }
    if (vi) {
        order[s * n + rank] = (int)i;
        atomicAdd(&count[s], 1);
    }
}

__global__ void nms_corners_k(const float *boxes, int64_t n, int64_t nc, int center, const int *order,
                              const int *count, float *y0, float *x0, float *y1, float *x1, float *area) {
    int64_t s = blockIdx.y, r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= count[s]) return;
    const float *bx = boxes + ((s / nc) * n + order[s * n + r]) * 4;
    float a, b, c, d; /* ymin, xmin, ymax, xmax */
    if (center) {
        float hw = __fdiv_rn(bx[2], 2.f), hh = __fdiv_rn(bx[3], 2.f);
        b = __fsub_rn(bx[0], hw), d = __fadd_rn(bx[0], hw);
        a = __fsub_rn(bx[1], hh), c = __fadd_rn(bx[1], hh);
    } else {
        a = fminf(bx[0], bx[2]), c = fmaxf(bx[0], bx[2]);
        b = fminf(bx[1], bx[3]), d = fmaxf(bx[1], bx[3]);
    }
    int64_t o = s * n + r;
    y0[o] = a, x0[o] = b, y1[o] = c, x1[o] = d;
    area[o] = __fmul_rn(__fsub_rn(d, b), __fsub_rn(c, a));
}

/* IoU(i, j) above the threshold, as the CPU computes it (fmaxf/fminf keep the non-NaN operand, as its NaN path). */
__device__ __forceinline__ bool nms_hit(float ay0, float ax0, float ay1, float ax1, float aa, float by0, float bx0,
                                        float by1, float bx1, float ba, float th) {
    float ix0 = fmaxf(ax0, bx0), ix1 = fminf(ax1, bx1), iy0 = fmaxf(ay0, by0), iy1 = fminf(ay1, by1);
    float inter = __fmul_rn(__fsub_rn(ix1, ix0), __fsub_rn(iy1, iy0));
    float uni = __fsub_rn(__fadd_rn(aa, ba), inter);
    bool valid = ix1 > ix0 && iy1 > iy0 && aa > 0 && ba > 0 && inter > 0 && uni > 0;
    return valid && __fdiv_rn(inter, uni) > th;
}

__global__ void nms_mask_k(int64_t n, int64_t words, const int *count, const float *y0, const float *x0,
                           const float *y1, const float *x1, const float *area, float th, unsigned long long *mask) {
    __shared__ float cb[5][64];
    int64_t s = blockIdx.z, row = blockIdx.y, col = blockIdx.x;
    int64_t cnt = count[s];
    if (col < row || row * 64 >= cnt || col * 64 >= cnt) return;
    int64_t base = s * n, j0 = col * 64;
    if (threadIdx.x < 64 && j0 + threadIdx.x < cnt) {
        int64_t j = base + j0 + threadIdx.x;
        cb[0][threadIdx.x] = y0[j], cb[1][threadIdx.x] = x0[j], cb[2][threadIdx.x] = y1[j];
        cb[3][threadIdx.x] = x1[j], cb[4][threadIdx.x] = area[j];
    }
    __syncthreads();
    int64_t i = row * 64 + threadIdx.x;
    if (i >= cnt) return;
    float ay0 = y0[base + i], ax0 = x0[base + i], ay1 = y1[base + i], ax1 = x1[base + i], aa = area[base + i];
    unsigned long long bits = 0;
    int64_t m = cnt - j0 < 64 ? cnt - j0 : 64;
    for (int64_t k = 0; k < m; k++)
        if (j0 + k > i && nms_hit(cb[0][k], cb[1][k], cb[2][k], cb[3][k], cb[4][k], ay0, ax0, ay1, ax1, aa, th))
            bits |= 1ull << k;
    mask[(base + i) * words + col] = bits;
}

__global__ void nms_scan_k(int64_t n, int64_t words, int64_t per_class, const int *count, const int *order,
                           const unsigned long long *mask, unsigned long long *removed, int *kept, int *kept_count) {
    __shared__ unsigned long long diag[64];
    __shared__ unsigned long long keep_bits;
    __shared__ int nkept, done;
    int64_t s = blockIdx.x, cnt = count[s], wc = (cnt + 63) / 64;
    unsigned long long *rm = removed + s * words;
    const unsigned long long *mk = mask + s * n * words;
    for (int64_t w = threadIdx.x; w < wc; w += blockDim.x) rm[w] = 0;
    if (threadIdx.x == 0) nkept = 0, done = 0;
    __syncthreads();
    for (int64_t ch = 0; ch < wc && !done; ch++) {
        int64_t m = cnt - ch * 64 < 64 ? cnt - ch * 64 : 64;
        if (threadIdx.x < m) diag[threadIdx.x] = mk[(ch * 64 + threadIdx.x) * words + ch];
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long word = rm[ch], kb = 0;
            for (int k = 0; k < m; k++) {
                if ((word >> k) & 1) continue;
                kb |= 1ull << k;
                word |= diag[k];
                kept[s * per_class + nkept] = order[s * n + ch * 64 + k];
                if (++nkept == per_class) {
                    done = 1;
                    break;
                }
            }
            keep_bits = kb;
        }
        __syncthreads();
        unsigned long long kb = keep_bits;
        if (!done && kb)
            for (int64_t w = ch + 1 + threadIdx.x; w < wc; w += blockDim.x) {
                unsigned long long acc = rm[w];
                for (unsigned long long b = kb; b; b &= b - 1)
                    acc |= mk[(ch * 64 + __ffsll((long long)b) - 1) * words + w];
                rm[w] = acc;
            }
        __syncthreads();
    }
    if (threadIdx.x == 0) kept_count[s] = nkept;
}

/* Exclusive sums of the segments' counts (offsets[S] is the total): one thread, S is batches x classes. */
__global__ void nms_offsets_k(const int *kept_count, int64_t segs, int64_t *offsets) {
    int64_t acc = 0;
    for (int64_t s = 0; s < segs; s++) offsets[s] = acc, acc += kept_count[s];
    offsets[segs] = acc;
}

__global__ void nms_write_k(int64_t segs, int64_t nc, int64_t per_class, const int *kept, const int *kept_count,
                            const int64_t *offsets, int64_t *out) {
    GRID_LOOP(t, segs * per_class) {
        int64_t s = t / per_class, k = t % per_class;
        if (k >= kept_count[s]) continue;
        int64_t row = offsets[s] + k;
        out[3 * row] = s / nc, out[3 * row + 1] = s % nc, out[3 * row + 2] = kept[t];
    }
}

static int nms_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs < 2 || node->n_outputs < 1 || !node->params)
        return cuda_refuse(reason, size, "NonMaxSuppression without params");
    if (node->inputs[0].dtype != NETRUN_DTYPE_FLOAT || node->inputs[1].dtype != NETRUN_DTYPE_FLOAT)
        return cuda_refuse(reason, size, "NonMaxSuppression: boxes/scores of dtype %s (float only)",
                           cuda_dtype_name(node->inputs[0].dtype));
    if (node->inputs[0].rank == 3 && node->inputs[0].dims[1] > NMS_MAX_BOXES)
        return cuda_refuse(reason, size, "NonMaxSuppression: %lld boxes (at most %d: quadratic memory)",
                           (long long)node->inputs[0].dims[1], NMS_MAX_BOXES);
    return 1;
}

/* The optional scalar inputs: from the constant when there is one, else read back from the device. */
static netrun_status nms_scalar(cuda_context *ctx, const netrun_kernel_args *args, int i, void *dst, size_t es,
                                int *present) {
    *present = 0;
    if (args->n_inputs <= i || args->inputs[i].rank < 0 || cuda_count(&args->inputs[i]) < 1) return NETRUN_OK;
    cudaError_t e = cudaMemcpyAsync(dst, args->inputs[i].data, es, cudaMemcpyDeviceToHost, ctx->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "NonMaxSuppression scalar input");
    *present = 1;
    return NETRUN_OK;
}

static netrun_status nms_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    (void)ctx;
    *ws = 0;
    nms_state *st = (nms_state *)calloc(1, sizeof *st);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda NonMaxSuppression: out of memory");
    /* constants (the usual case: exporters write them as initializers) spare a read-back each run */
    int all = 1;
    for (int i = 2; i < 5; i++) {
        const netrun_value_desc *d = i < node->n_inputs ? &node->inputs[i] : NULL;
        if (!d || d->rank < 0) continue;
        if (!d->const_data || d->const_nbytes < (i == 2 ? sizeof(int64_t) : sizeof(float))) {
            all = 0;
            continue;
        }
        if (i == 2) memcpy(&st->max_out, d->const_data, sizeof(int64_t));
        if (i == 3) memcpy(&st->iou, d->const_data, sizeof(float));
        if (i == 4) memcpy(&st->score, d->const_data, sizeof(float)), st->has_score = 1;
    }
    st->have_consts = all;
    *state = st;
    return NETRUN_OK;
}

static void nms_destroy(cuda_context *ctx, void *state) {
    nms_state *st = (nms_state *)state;
    if (st) cuda_scratch_free(ctx, st->buf);
    free(st);
}

static netrun_status nms_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    nms_state *st = (nms_state *)state;
    const netrun_nms_params *p = (const netrun_nms_params *)args->params;
    const netrun_tensor *boxes = &args->inputs[0], *scores = &args->inputs[1];
    netrun_status rc = cuda_refuse_capture(ctx, "NonMaxSuppression");
    if (rc != NETRUN_OK) return rc;
    if (!st || !p || boxes->rank != 3 || scores->rank != 3 || boxes->dims[2] != 4)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda NonMaxSuppression: bad params or shapes");
    int64_t max_out = st->max_out;
    float iou = st->iou, score_th = st->score;
    int has_score = st->has_score;
    if (!st->have_consts) {
        int present;
        max_out = 0, iou = 0, score_th = 0;
        if ((rc = nms_scalar(ctx, args, 2, &max_out, sizeof max_out, &present)) != NETRUN_OK) return rc;
        if ((rc = nms_scalar(ctx, args, 3, &iou, sizeof iou, &present)) != NETRUN_OK) return rc;
        if ((rc = nms_scalar(ctx, args, 4, &score_th, sizeof score_th, &has_score)) != NETRUN_OK) return rc;
    }
    if (iou < 0 || iou > 1)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "NonMaxSuppression: iou_threshold %g not in [0, 1]",
                                (double)iou);
    int64_t B = boxes->dims[0], n = boxes->dims[1], nc = scores->dims[1], segs = B * nc;
    if (scores->dims[0] != B || scores->dims[2] != n)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda NonMaxSuppression: scores [%lld, %lld, %lld] do "
                                "not match boxes [%lld, %lld, 4]", (long long)scores->dims[0],
                                (long long)scores->dims[1], (long long)scores->dims[2], (long long)B, (long long)n);
    if (max_out < 0) max_out = 0;
    int64_t per_class = max_out < n ? max_out : n;
    if (per_class == 0 || segs == 0) {
        int64_t dims[2] = {0, 3};
        return args->alloc_output(args->exec, 0, 2, dims);
    }
    if (n > NMS_MAX_BOXES)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda NonMaxSuppression: %lld boxes a class (at most %d)",
                                (long long)n, NMS_MAX_BOXES);
    if (segs > 65535)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda NonMaxSuppression: %lld batch x class segments (at "
                                "most 65535)", (long long)segs);
    int64_t words = (n + 63) / 64;
    /* scratch: count, order, 5 corner arrays, mask, removed, kept, kept_count, offsets (256-byte aligned parts) */
    size_t part[10] = {sizeof(int) * (size_t)segs, sizeof(int) * (size_t)(segs * n),
                       sizeof(float) * 5 * (size_t)(segs * n), 8 * (size_t)(segs * n * words),
                       8 * (size_t)(segs * words), sizeof(int) * (size_t)(segs * per_class),
                       sizeof(int) * (size_t)segs, sizeof(int64_t) * (size_t)(segs + 1), 0, 0};
    size_t off[10];
    char what[96];
    snprintf(what, sizeof what, "NonMaxSuppression (%lld boxes x %lld segments)", (long long)n, (long long)segs);
    netrun_status ss = cuda_scratch_parts(ctx, &st->buf, &st->cap, part, 8, off, 0.0, what);
    if (ss != NETRUN_OK) return ss;
    char *b = (char *)st->buf;
    int *count = (int *)(b + off[0]), *order = (int *)(b + off[1]);
    float *cor = (float *)(b + off[2]);
    float *y0 = cor, *x0 = cor + segs * n, *y1 = cor + 2 * segs * n, *x1 = cor + 3 * segs * n, *ar = cor + 4 * segs * n;
    unsigned long long *mask = (unsigned long long *)(b + off[3]), *removed = (unsigned long long *)(b + off[4]);
    int *kept = (int *)(b + off[5]), *kept_count = (int *)(b + off[6]);
    int64_t *offsets = (int64_t *)(b + off[7]);
    cudaError_t e = cudaMemsetAsync(count, 0, part[0], ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "NonMaxSuppression");
    dim3 g1((unsigned)((n + 255) / 256), (unsigned)segs);
    nms_rank_k<<<g1, 256, 0, ctx->stream>>>((const float *)scores->data, n, has_score, score_th, order, count);
    nms_corners_k<<<g1, 256, 0, ctx->stream>>>((const float *)boxes->data, n, nc, p->center_point_box, order, count,
                                               y0, x0, y1, x1, ar);
    dim3 g3((unsigned)words, (unsigned)words, (unsigned)segs);
    nms_mask_k<<<g3, 64, 0, ctx->stream>>>(n, words, count, y0, x0, y1, x1, ar, iou, mask);
    nms_scan_k<<<(unsigned)segs, NMS_SCAN_THREADS, 0, ctx->stream>>>(n, words, per_class, count, order, mask, removed,
                                                                     kept, kept_count);
    nms_offsets_k<<<1, 1, 0, ctx->stream>>>(kept_count, segs, offsets);
    if ((rc = cuda_check_launch("NonMaxSuppression")) != NETRUN_OK) return rc;
    int64_t selected = 0;
    e = cudaMemcpyAsync(&selected, offsets + segs, sizeof selected, cudaMemcpyDeviceToHost, ctx->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "NonMaxSuppression count");
    int64_t dims[2] = {selected, 3};
    if ((rc = args->alloc_output(args->exec, 0, 2, dims)) != NETRUN_OK || selected == 0) return rc;
    nms_write_k<<<cuda_blocks(segs * per_class), CUDA_THREADS, 0, ctx->stream>>>(
        segs, nc, per_class, kept, kept_count, offsets, (int64_t *)args->outputs[0].data);
    return cuda_check_launch("NonMaxSuppression write");
}

extern "C" const cuda_op cuda_ops_vision[] = {
    {"GridSample", VISION_FLOAT_DTYPES, "linear/nearest/cubic, zeros/border/reflection, 1-D to 3-D spatial",
     grid_sample_supports, NULL, grid_sample_run, NULL},
    {"AffineGrid", VISION_FLOAT_DTYPES, "2-D and 3-D", affine_grid_supports, NULL, affine_grid_run, NULL},
    {"RoiAlign", VISION_FLOAT_DTYPES, "avg/max, half_pixel/output_half_pixel; batch indices out of range give 0",
     roi_align_supports, NULL, roi_align_run, NULL},
    {"NonMaxSuppression", CUDA_DT(FLOAT), "float boxes/scores; at most 65536 boxes a class (quadratic mask); reads "
     "the selection's size on the host", nms_supports, nms_create, nms_run, nms_destroy},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
