/* Op family: vision (definitions: attribute parsing, validation, shape inference).
 * GridSample, NonMaxSuppression, RoiAlign, MaxRoiPool, MaxUnpool, AffineGrid, Col2Im, CenterCropPad,
 * DeformConv, ImageDecoder. */
#include <stdint.h>
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"

#define ST(x) do { netrun_status st_ = (x); if (st_ != NETRUN_OK) return st_; } while (0)

/* Read an optional ints attribute of exactly n entries (or absent: fill with def). */
static netrun_status attr_ints_n(nr_layer_ctx *c, const char *name, int n, int64_t def, int64_t *out) {
    const int64_t *v;
    int64_t nv;
    ST(nr_attr_ints(c, name, &v, &nv));
    if (!v) {
        for (int i = 0; i < n; i++) out[i] = def;
        return NETRUN_OK;
    }
    if (nv != n) return nr_layer_error(c, "attribute '%s' has %lld values, expected %d", name, (long long)nv, n);
    for (int i = 0; i < n; i++) { /* geometry: bounded so that the shape arithmetic stays in int64 */
        if (v[i] < -(int64_t)INT32_MAX || v[i] > INT32_MAX)
            return nr_layer_error(c, "attribute '%s'[%d] = %lld is too large (at most %d)", name, i, (long long)v[i],
                                  INT32_MAX);
        out[i] = v[i];
    }
    return NETRUN_OK;
}

/* ---------------- GridSample ---------------- */

static netrun_status grid_sample_parse(nr_layer_ctx *c, void *params) {
    netrun_grid_sample_params *p = params;
    const char *mode, *pad;
    int64_t ac;
    int old = nr_opset(c) < 20;
    ST(nr_attr_string(c, "mode", old ? "bilinear" : "linear", &mode));
    ST(nr_attr_string(c, "padding_mode", "zeros", &pad));
    ST(nr_attr_int(c, "align_corners", 0, &ac));
    /* opset 16 spells the modes bilinear/bicubic, opset 20 linear/cubic: accept both */
    if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear")) p->mode = NETRUN_GS_LINEAR;
    else if (!strcmp(mode, "nearest")) p->mode = NETRUN_GS_NEAREST;
    else if (!strcmp(mode, "cubic") || !strcmp(mode, "bicubic")) p->mode = NETRUN_GS_CUBIC;
    else return nr_layer_error(c, "attribute 'mode' = '%s' is not linear, nearest or cubic", mode);
    if (!strcmp(pad, "zeros")) p->padding_mode = NETRUN_GS_PAD_ZEROS;
    else if (!strcmp(pad, "border")) p->padding_mode = NETRUN_GS_PAD_BORDER;
    else if (!strcmp(pad, "reflection")) p->padding_mode = NETRUN_GS_PAD_REFLECTION;
    else return nr_layer_error(c, "attribute 'padding_mode' = '%s' is not zeros, border or reflection", pad);
    p->align_corners = ac != 0;
    return NETRUN_OK;
}

static netrun_status grid_sample_infer(nr_layer_ctx *c, void *params) {
    netrun_grid_sample_params *p = params;
    ST(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    ST(nr_check_dtype(c, 1, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0), *g = nr_in(c, 1);
    if (x->rank < 3 || x->rank > 5)
        return nr_layer_error(c, "input X must have rank 3 to 5 ([N, C, spatial...]), got %d", x->rank);
    int k = x->rank - 2;
    if (g->rank != x->rank) return nr_layer_error(c, "grid must have rank %d like X, got %d", x->rank, g->rank);
    if (g->dims[0] != x->dims[0])
        return nr_layer_error(c, "grid batch %lld differs from X batch %lld", (long long)g->dims[0],
                              (long long)x->dims[0]);
    if (g->dims[g->rank - 1] != k)
        return nr_layer_error(c, "grid's last dim must be %d (spatial rank of X), got %lld", k,
                              (long long)g->dims[g->rank - 1]);
    if (p->mode == NETRUN_GS_CUBIC && k != 2 && nr_opset(c) < 20)
        return nr_layer_error(c, "bicubic mode needs 4-D input in opset < 20");
    p->n_spatial = k;
    int64_t dims[NETRUN_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int i = 0; i < k; i++) dims[2 + i] = g->dims[1 + i];
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    return NETRUN_OK;
}

/* ---------------- NonMaxSuppression ---------------- */

static netrun_status nms_parse(nr_layer_ctx *c, void *params) {
    netrun_nms_params *p = params;
    int64_t cpb;
    ST(nr_attr_int(c, "center_point_box", 0, &cpb));
    if (cpb != 0 && cpb != 1) return nr_layer_error(c, "attribute 'center_point_box' must be 0 or 1, got %lld",
                                                    (long long)cpb);
    p->center_point_box = (int)cpb;
    return NETRUN_OK;
}

static netrun_status nms_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *b = nr_in(c, 0), *s = nr_in(c, 1);
    ST(nr_check_dtype(c, 0, NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT)));
    ST(nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT)));
    if (b->rank != 3 || b->dims[2] != 4)
        return nr_layer_error(c, "boxes must be [num_batches, num_boxes, 4]");
    if (s->rank != 3 || s->dims[0] != b->dims[0] || s->dims[2] != b->dims[1])
        return nr_layer_error(c, "scores must be [num_batches, num_classes, num_boxes] matching boxes");
    if (nr_in_present(c, 2)) ST(nr_check_dtype(c, 2, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)));
    for (int i = 3; i < 5 && i < nr_in_count(c); i++)
        if (nr_in_present(c, i)) ST(nr_check_dtype(c, i, NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT)));
    int64_t dims[2] = {-1, 3}; /* the count of selected boxes depends on the values */
    nr_out_set(c, 0, NETRUN_DTYPE_INT64, 2, dims);
    return NETRUN_OK;
}

/* ---------------- RoiAlign / MaxRoiPool ---------------- */

static netrun_status roi_align_parse(nr_layer_ctx *c, void *params) {
    netrun_roi_align_params *p = params;
    const char *mode, *ctm;
    ST(nr_attr_string(c, "mode", "avg", &mode));
    /* opset 10 behaves as output_half_pixel; opset 16 added the attribute, default half_pixel */
    ST(nr_attr_string(c, "coordinate_transformation_mode", nr_opset(c) < 16 ? "output_half_pixel" : "half_pixel",
                      &ctm));
    ST(nr_attr_int(c, "output_height", 1, &p->output_height));
    ST(nr_attr_int(c, "output_width", 1, &p->output_width));
    ST(nr_attr_int(c, "sampling_ratio", 0, &p->sampling_ratio));
    ST(nr_attr_float(c, "spatial_scale", 1.0f, &p->spatial_scale));
    if (!strcmp(mode, "avg")) p->mode_max = 0;
    else if (!strcmp(mode, "max")) p->mode_max = 1;
    else return nr_layer_error(c, "attribute 'mode' = '%s' is not avg or max", mode);
    if (!strcmp(ctm, "half_pixel")) p->half_pixel = 1;
    else if (!strcmp(ctm, "output_half_pixel")) p->half_pixel = 0;
    else return nr_layer_error(c, "attribute 'coordinate_transformation_mode' = '%s' is not half_pixel or "
                               "output_half_pixel", ctm);
    if (p->output_height < 1 || p->output_width < 1 || p->output_height > INT32_MAX || p->output_width > INT32_MAX)
        return nr_layer_error(c, "output_height/output_width must be >= 1");
    /* sampling_ratio^2 samples per output bin: 2^16 per axis took minutes for 30 bins (fuzz.importer timeout).
     * 256 is also where the kernels cap the adaptive count (ceil(roi size / bins)) */
    if (p->sampling_ratio < 0 || p->sampling_ratio > 256)
        return nr_layer_error(c, "attribute 'sampling_ratio' = %lld is out of range (0 to %d: netrun's limit, "
                              "sampling_ratio^2 samples per output bin)", (long long)p->sampling_ratio, 256);
    return NETRUN_OK;
}

static netrun_status roi_align_infer(nr_layer_ctx *c, void *params) {
    netrun_roi_align_params *p = params;
    ST(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    ST(nr_check_same_dtype(c, 0, 1));
    ST(nr_check_dtype(c, 2, NR_DTYPES_INDEX));
    const netrun_value_desc *x = nr_in(c, 0), *r = nr_in(c, 1), *bi = nr_in(c, 2);
    if (x->rank != 4) return nr_layer_error(c, "input X must be 4-D [N, C, H, W], got rank %d", x->rank);
    if (r->rank != 2 || r->dims[1] != 4) return nr_layer_error(c, "rois must be [num_rois, 4]");
    if (bi->rank != 1 || bi->dims[0] != r->dims[0])
        return nr_layer_error(c, "batch_indices must be [num_rois] (num_rois = %lld)", (long long)r->dims[0]);
    int64_t dims[4] = {r->dims[0], x->dims[1], p->output_height, p->output_width};
    nr_out_set(c, 0, x->dtype, 4, dims);
    return NETRUN_OK;
}

static netrun_status max_roi_pool_parse(nr_layer_ctx *c, void *params) {
    netrun_max_roi_pool_params *p = params;
    int64_t ps[2] = {0, 0};
    if (!nr_attr_has(c, "pooled_shape")) return nr_layer_error(c, "attribute 'pooled_shape' is required");
    ST(attr_ints_n(c, "pooled_shape", 2, 1, ps));
    if (ps[0] < 1 || ps[1] < 1 || ps[0] > INT32_MAX || ps[1] > INT32_MAX)
        return nr_layer_error(c, "attribute 'pooled_shape' must hold positive values");
    p->pooled_h = ps[0];
    p->pooled_w = ps[1];
    ST(nr_attr_float(c, "spatial_scale", 1.0f, &p->spatial_scale));
    return NETRUN_OK;
}

static netrun_status max_roi_pool_infer(nr_layer_ctx *c, void *params) {
    netrun_max_roi_pool_params *p = params;
    ST(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    ST(nr_check_same_dtype(c, 0, 1));
    const netrun_value_desc *x = nr_in(c, 0), *r = nr_in(c, 1);
    if (x->rank != 4) return nr_layer_error(c, "input X must be 4-D [N, C, H, W], got rank %d", x->rank);
    if (r->rank != 2 || r->dims[1] != 5) return nr_layer_error(c, "rois must be [num_rois, 5]");
    int64_t dims[4] = {r->dims[0], x->dims[1], p->pooled_h, p->pooled_w};
    nr_out_set(c, 0, x->dtype, 4, dims);
    return NETRUN_OK;
}

/* ---------------- MaxUnpool ---------------- */

static netrun_status max_unpool_parse(nr_layer_ctx *c, void *params) {
    netrun_max_unpool_params *p = params;
    const int64_t *k;
    int64_t nk;
    ST(nr_attr_ints(c, "kernel_shape", &k, &nk));
    if (!k) return nr_layer_error(c, "attribute 'kernel_shape' is required");
    if (nk < 1 || nk > NETRUN_MAX_SPATIAL)
        return nr_layer_error(c, "kernel_shape has %lld dims, expected 1 to %d", (long long)nk, NETRUN_MAX_SPATIAL);
    int n = (int)nk;
    p->n_spatial = n;
    int64_t pads[2 * NETRUN_MAX_SPATIAL];
    ST(attr_ints_n(c, "strides", n, 1, p->strides));
    ST(attr_ints_n(c, "pads", 2 * n, 0, pads));
    for (int i = 0; i < n; i++) {
        p->kernel[i] = k[i];
        p->pads_begin[i] = pads[i];
        p->pads_end[i] = pads[n + i];
        if (k[i] < 1 || k[i] > INT32_MAX || p->strides[i] < 1 || pads[i] < 0 || pads[n + i] < 0)
            return nr_layer_error(c, "kernel_shape/strides must be from 1 to 2^31 - 1 and pads >= 0 (dim %d)", i);
    }
    return NETRUN_OK;
}

static netrun_status max_unpool_infer(nr_layer_ctx *c, void *params) {
    netrun_max_unpool_params *p = params;
    ST(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    ST(nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)));
    const netrun_value_desc *x = nr_in(c, 0), *ix = nr_in(c, 1);
    if (x->rank != p->n_spatial + 2)
        return nr_layer_error(c, "input X has rank %d, expected %d for a %d-D kernel", x->rank, p->n_spatial + 2,
                              p->n_spatial);
    if (ix->rank != x->rank || memcmp(ix->dims, x->dims, sizeof(int64_t) * (size_t)x->rank) != 0)
        return nr_layer_error(c, "input I must have the shape of X");
    int64_t dims[NETRUN_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int i = 0; i < p->n_spatial; i++) {
        int64_t d = (x->dims[2 + i] - 1) * p->strides[i] - (p->pads_begin[i] + p->pads_end[i]) + p->kernel[i];
        if (d < 0) return nr_layer_error(c, "output spatial dim %d would be negative (%lld)", i, (long long)d);
        p->inferred[i] = d;
        dims[2 + i] = d;
    }
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
        int64_t os[NETRUN_MAX_RANK], n;
        ST(nr_in_ints(c, 2, os, NETRUN_MAX_RANK, &n));
        if (n != x->rank) return nr_layer_error(c, "output_shape has %lld values, expected %d", (long long)n, x->rank);
        if (os[0] != x->dims[0] || os[1] != x->dims[1])
            return nr_layer_error(c, "output_shape must keep N and C of X");
        for (int i = 0; i < p->n_spatial; i++) {
            if (os[2 + i] < p->inferred[i])
                return nr_layer_error(c, "output_shape[%d] = %lld is smaller than the unpooled size %lld", 2 + i,
                                      (long long)os[2 + i], (long long)p->inferred[i]);
            dims[2 + i] = os[2 + i];
        }
    }
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    return NETRUN_OK;
}

/* ---------------- AffineGrid ---------------- */

static netrun_status affine_grid_parse(nr_layer_ctx *c, void *params) {
    netrun_affine_grid_params *p = params;
    int64_t ac;
    ST(nr_attr_int(c, "align_corners", 0, &ac));
    p->align_corners = ac != 0;
    return NETRUN_OK;
}

static netrun_status affine_grid_infer(nr_layer_ctx *c, void *params) {
    netrun_affine_grid_params *p = params;
    ST(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    ST(nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)));
    const netrun_value_desc *t = nr_in(c, 0);
    int64_t size[NETRUN_MAX_RANK], n;
    ST(nr_in_ints(c, 1, size, NETRUN_MAX_RANK, &n));
    if (n != 4 && n != 5) return nr_layer_error(c, "size must have 4 or 5 values, got %lld", (long long)n);
    int k = (int)n - 2;
    if (t->rank != 3 || t->dims[1] != k || t->dims[2] != k + 1)
        return nr_layer_error(c, "theta must be [N, %d, %d] for a %d-D size", k, k + 1, (int)n);
    if (size[0] != t->dims[0])
        return nr_layer_error(c, "size[0] = %lld differs from theta's batch %lld", (long long)size[0],
                              (long long)t->dims[0]);
    int64_t dims[NETRUN_MAX_RANK];
    dims[0] = size[0];
    for (int i = 0; i < k; i++) {
        if (size[2 + i] < 0) return nr_layer_error(c, "size[%d] is negative", 2 + i);
        dims[1 + i] = size[2 + i];
    }
    dims[1 + k] = k;
    p->n_spatial = k;
    nr_out_set(c, 0, t->dtype, k + 2, dims);
    return NETRUN_OK;
}

/* ---------------- Col2Im ---------------- */

static netrun_status col2im_infer(nr_layer_ctx *c, void *params) {
    netrun_col2im_params *p = params;
    ST(nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)));
    ST(nr_check_dtype(c, 2, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank != 3) return nr_layer_error(c, "input must be 3-D [N, C*prod(block_shape), L], got rank %d", x->rank);
    int64_t n1, n2;
    ST(nr_in_ints(c, 1, p->image, NETRUN_MAX_RANK - 2, &n1));
    ST(nr_in_ints(c, 2, p->block, NETRUN_MAX_RANK - 2, &n2));
    if (n1 < 1 || n1 > NETRUN_MAX_RANK - 2) return nr_layer_error(c, "image_shape must have 1 to %d values",
                                                                  NETRUN_MAX_RANK - 2);
    if (n2 != n1) return nr_layer_error(c, "block_shape has %lld values, image_shape %lld", (long long)n2,
                                        (long long)n1);
    int k = (int)n1;
    p->n_spatial = k;
    int64_t pads[2 * NETRUN_MAX_RANK];
    ST(attr_ints_n(c, "dilations", k, 1, p->dilations));
    ST(attr_ints_n(c, "strides", k, 1, p->strides));
    ST(attr_ints_n(c, "pads", 2 * k, 0, pads));
    int64_t bprod = 1, L = 1;
    for (int i = 0; i < k; i++) {
        p->pads_begin[i] = pads[i];
        p->pads_end[i] = pads[k + i];
        if (p->image[i] < 1 || p->block[i] < 1 || p->dilations[i] < 1 || p->strides[i] < 1 || pads[i] < 0 ||
            pads[k + i] < 0)
            return nr_layer_error(c, "image_shape, block_shape, dilations, strides must be >= 1 and pads >= 0 "
                                  "(dim %d)", i);
        int64_t span = p->dilations[i] * (p->block[i] - 1) + 1;
        int64_t nb = (p->image[i] + pads[i] + pads[k + i] - span) / p->strides[i] + 1;
        if (p->image[i] + pads[i] + pads[k + i] < span || nb < 1)
            return nr_layer_error(c, "block %d (span %lld) does not fit the padded image (%lld)", i, (long long)span,
                                  (long long)(p->image[i] + pads[i] + pads[k + i]));
        p->blocks[i] = nb;
        bprod *= p->block[i];
        L *= nb;
    }
    if (x->dims[1] % bprod != 0)
        return nr_layer_error(c, "input dim 1 (%lld) is not a multiple of prod(block_shape) = %lld",
                              (long long)x->dims[1], (long long)bprod);
    if (x->dims[2] != L)
        return nr_layer_error(c, "input dim 2 (%lld) must equal the number of sliding blocks %lld",
                              (long long)x->dims[2], (long long)L);
    int64_t dims[NETRUN_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1] / bprod;
    for (int i = 0; i < k; i++) dims[2 + i] = p->image[i];
    nr_out_set(c, 0, x->dtype, k + 2, dims);
    return NETRUN_OK;
}

/* ---------------- CenterCropPad ---------------- */

static netrun_status center_crop_pad_infer(nr_layer_ctx *c, void *params) {
    netrun_center_crop_pad_params *p = params;
    ST(nr_check_dtype(c, 1, NR_DTYPES_INDEX));
    const netrun_value_desc *x = nr_in(c, 0);
    int r = x->rank;
    if (r < 1) return nr_layer_error(c, "input must have rank >= 1");
    int64_t shape[NETRUN_MAX_RANK], ns;
    ST(nr_in_ints(c, 1, shape, NETRUN_MAX_RANK, &ns));
    const int64_t *axes;
    int64_t na;
    ST(nr_attr_ints(c, "axes", &axes, &na));
    int ax[NETRUN_MAX_RANK];
    if (axes) {
        if (na > r) return nr_layer_error(c, "attribute 'axes' has %lld values for rank %d", (long long)na, r);
        for (int i = 0; i < na; i++) {
            ST(nr_resolve_axis(c, axes[i], r, 0, &ax[i]));
            for (int j = 0; j < i; j++)
                if (ax[j] == ax[i]) return nr_layer_error(c, "attribute 'axes' repeats axis %d", ax[i]);
        }
    } else {
        na = r;
        for (int i = 0; i < r; i++) ax[i] = i;
    }
    if (ns != na) return nr_layer_error(c, "shape has %lld values, expected %lld (one per axis)", (long long)ns,
                                        (long long)na);
    int64_t dims[NETRUN_MAX_RANK];
    p->rank = r;
    for (int i = 0; i < r; i++) {
        dims[i] = x->dims[i];
        p->offset[i] = 0;
    }
    for (int i = 0; i < na; i++) {
        int a = ax[i];
        if (shape[i] < 0) return nr_layer_error(c, "shape[%d] = %lld is negative", i, (long long)shape[i]);
        dims[a] = shape[i];
        /* crop: start rounded down; pad: the odd pixel goes to the end */
        p->offset[a] = x->dims[a] >= shape[i] ? (x->dims[a] - shape[i]) / 2 : -((shape[i] - x->dims[a]) / 2);
    }
    nr_out_set(c, 0, x->dtype, r, dims);
    return NETRUN_OK;
}

/* ---------------- DeformConv ---------------- */

static netrun_status deform_conv_infer(nr_layer_ctx *c, void *params) {
    netrun_deform_conv_params *p = params;
    ST(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    for (int i = 1; i < nr_in_count(c) && i < 5; i++)
        if (nr_in_present(c, i)) ST(nr_check_same_dtype(c, 0, i));
    const netrun_value_desc *x = nr_in(c, 0), *w = nr_in(c, 1), *off = nr_in(c, 2);
    if (x->rank != 4) return nr_layer_error(c, "only 2-D DeformConv is supported (X rank 4), got rank %d", x->rank);
    if (w->rank != 4) return nr_layer_error(c, "W must be 4-D [M, C/group, kH, kW], got rank %d", w->rank);
    int64_t pads[4];
    ST(nr_attr_int(c, "group", 1, &p->group));
    ST(nr_attr_int(c, "offset_group", 1, &p->offset_group));
    ST(attr_ints_n(c, "kernel_shape", 2, 0, p->kernel));
    if (!nr_attr_has(c, "kernel_shape")) {
        p->kernel[0] = w->dims[2];
        p->kernel[1] = w->dims[3];
    }
    ST(attr_ints_n(c, "strides", 2, 1, p->strides));
    ST(attr_ints_n(c, "dilations", 2, 1, p->dilations));
    ST(attr_ints_n(c, "pads", 4, 0, pads));
    int64_t C = x->dims[1], M = w->dims[0];
    if (p->group < 1 || p->offset_group < 1) return nr_layer_error(c, "group and offset_group must be >= 1");
    if (C % p->group || M % p->group || C / p->group != w->dims[1]) /* by division: no overflow of a huge group */
        return nr_layer_error(c, "W [%lld, %lld, ...] does not match C = %lld with group %lld", (long long)M,
                              (long long)w->dims[1], (long long)C, (long long)p->group);
    if (C % p->offset_group) return nr_layer_error(c, "C = %lld is not a multiple of offset_group %lld", (long long)C,
                                                   (long long)p->offset_group);
    if (p->kernel[0] != w->dims[2] || p->kernel[1] != w->dims[3])
        return nr_layer_error(c, "kernel_shape does not match W's spatial dims");
    int64_t od[2];
    for (int i = 0; i < 2; i++) {
        p->pads_begin[i] = pads[i];
        p->pads_end[i] = pads[2 + i];
        if (p->strides[i] < 1 || p->dilations[i] < 1 || pads[i] < 0 || pads[2 + i] < 0 || p->kernel[i] < 1)
            return nr_layer_error(c, "strides, dilations, kernel_shape must be >= 1 and pads >= 0");
        int64_t span = (p->kernel[i] - 1) * p->dilations[i] + 1;
        int64_t padded = x->dims[2 + i] + pads[i] + pads[2 + i];
        if (padded < span) return nr_layer_error(c, "kernel does not fit the padded input (dim %d)", i);
        od[i] = (padded - span) / p->strides[i] + 1;
    }
    int64_t kk = p->kernel[0] * p->kernel[1];
    if (off->rank != 4 || off->dims[0] != x->dims[0] || off->dims[1] != p->offset_group * kk * 2 ||
        off->dims[2] != od[0] || off->dims[3] != od[1])
        return nr_layer_error(c, "offset must be [%lld, %lld, %lld, %lld]", (long long)x->dims[0],
                              (long long)(p->offset_group * kk * 2), (long long)od[0], (long long)od[1]);
    p->has_bias = nr_in_count(c) > 3 && nr_in_present(c, 3);
    p->has_mask = nr_in_count(c) > 4 && nr_in_present(c, 4);
    if (p->has_bias) {
        const netrun_value_desc *b = nr_in(c, 3);
        if (b->rank != 1 || b->dims[0] != M) return nr_layer_error(c, "B must be [%lld]", (long long)M);
    }
    if (p->has_mask) {
        const netrun_value_desc *m = nr_in(c, 4);
        if (m->rank != 4 || m->dims[0] != x->dims[0] || m->dims[1] != p->offset_group * kk || m->dims[2] != od[0] ||
            m->dims[3] != od[1])
            return nr_layer_error(c, "mask must be [%lld, %lld, %lld, %lld]", (long long)x->dims[0],
                                  (long long)(p->offset_group * kk), (long long)od[0], (long long)od[1]);
    }
    int64_t dims[4] = {x->dims[0], M, od[0], od[1]};
    nr_out_set(c, 0, x->dtype, 4, dims);
    return NETRUN_OK;
}

/* ---------------- ImageDecoder ---------------- */

static netrun_status image_decoder_parse(nr_layer_ctx *c, void *params) {
    netrun_image_decoder_params *p = params;
    const char *pf;
    ST(nr_attr_string(c, "pixel_format", "RGB", &pf));
    if (!strcmp(pf, "RGB")) p->pixel_format = NETRUN_PIXEL_RGB;
    else if (!strcmp(pf, "BGR")) p->pixel_format = NETRUN_PIXEL_BGR;
    else if (!strcmp(pf, "Grayscale")) p->pixel_format = NETRUN_PIXEL_GRAY;
    else return nr_layer_error(c, "attribute 'pixel_format' = '%s' is not RGB, BGR or Grayscale", pf);
    return NETRUN_OK;
}

static netrun_status image_decoder_infer(nr_layer_ctx *c, void *params) {
    netrun_image_decoder_params *p = params;
    ST(nr_check_dtype(c, 0, NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT8)));
    if (nr_in(c, 0)->rank != 1) return nr_layer_error(c, "encoded_stream must be 1-D, got rank %d", nr_in(c, 0)->rank);
    int64_t dims[3] = {-1, -1, p->pixel_format == NETRUN_PIXEL_GRAY ? 1 : 3}; /* H, W known after decoding */
    nr_out_set(c, 0, NETRUN_DTYPE_UINT8, 3, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_vision[] = {
    {"GridSample", "", 16, sizeof(netrun_grid_sample_params), grid_sample_parse, grid_sample_infer, 0},
    {"NonMaxSuppression", "", 10, sizeof(netrun_nms_params), nms_parse, nms_infer, 0},
    {"RoiAlign", "", 10, sizeof(netrun_roi_align_params), roi_align_parse, roi_align_infer, 0},
    {"MaxRoiPool", "", 1, sizeof(netrun_max_roi_pool_params), max_roi_pool_parse, max_roi_pool_infer, 0},
    {"MaxUnpool", "", 9, sizeof(netrun_max_unpool_params), max_unpool_parse, max_unpool_infer, 0},
    {"AffineGrid", "", 20, sizeof(netrun_affine_grid_params), affine_grid_parse, affine_grid_infer, 0},
    {"Col2Im", "", 18, sizeof(netrun_col2im_params), NULL, col2im_infer, 0},
    {"CenterCropPad", "", 18, sizeof(netrun_center_crop_pad_params), NULL, center_crop_pad_infer, 0},
    {"DeformConv", "", 19, sizeof(netrun_deform_conv_params), NULL, deform_conv_infer, 0},
    {"ImageDecoder", "", 20, sizeof(netrun_image_decoder_params), image_decoder_parse, image_decoder_infer, 0},
    {0},
};
