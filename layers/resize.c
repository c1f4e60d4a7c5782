/* Op family: resize (definitions: attribute parsing, validation, shape inference). Resize (10..19) and
 * Upsample (7..9), both resolved to netrun_resize_params. */
#include <math.h>
#include <string.h>

#include "layer.h"

static netrun_status parse_common(nr_layer_ctx *c, netrun_resize_params *p, int upsample) {
    const char *s;
    netrun_status st = nr_attr_string(c, "mode", "nearest", &s);
    if (st) return st;
    if (!strcmp(s, "nearest")) p->mode = NETRUN_RESIZE_NEAREST;
    else if (!strcmp(s, "linear") || (upsample && !strcmp(s, "bilinear"))) p->mode = NETRUN_RESIZE_LINEAR;
    else if (!strcmp(s, "cubic") && !upsample && nr_opset(c) >= 11) p->mode = NETRUN_RESIZE_CUBIC;
    else return nr_layer_error(c, "unknown mode '%s' (nearest, linear%s)", s, upsample || nr_opset(c) < 11 ? "" : ", cubic");
    p->cubic_coeff_a = -0.75f;
    p->extrapolation_value = 0.0f;
    if (upsample || nr_opset(c) < 11) {
        /* Upsample and Resize-10: asymmetric coordinates; nearest rounds down (set per scale in infer). */
        p->coord = NETRUN_COORD_ASYMMETRIC;
        p->nearest = NETRUN_NEAREST_FLOOR;
        return NETRUN_OK;
    }
    if ((st = nr_attr_string(c, "coordinate_transformation_mode", "half_pixel", &s))) return st;
    if (!strcmp(s, "half_pixel")) p->coord = NETRUN_COORD_HALF_PIXEL;
    else if (!strcmp(s, "asymmetric")) p->coord = NETRUN_COORD_ASYMMETRIC;
    else if (!strcmp(s, "pytorch_half_pixel")) p->coord = NETRUN_COORD_PYTORCH_HALF_PIXEL;
    else if (!strcmp(s, "tf_crop_and_resize")) p->coord = NETRUN_COORD_TF_CROP_AND_RESIZE;
    else if (!strcmp(s, "align_corners")) p->coord = NETRUN_COORD_ALIGN_CORNERS;
    else if (!strcmp(s, "half_pixel_symmetric") && nr_opset(c) >= 19) p->coord = NETRUN_COORD_HALF_PIXEL_SYMMETRIC;
    else return nr_layer_error(c, "unknown coordinate_transformation_mode '%s'", s);
    if ((st = nr_attr_string(c, "nearest_mode", "round_prefer_floor", &s))) return st;
    if (!strcmp(s, "round_prefer_floor")) p->nearest = NETRUN_NEAREST_ROUND_PREFER_FLOOR;
    else if (!strcmp(s, "round_prefer_ceil")) p->nearest = NETRUN_NEAREST_ROUND_PREFER_CEIL;
    else if (!strcmp(s, "floor")) p->nearest = NETRUN_NEAREST_FLOOR;
    else if (!strcmp(s, "ceil")) p->nearest = NETRUN_NEAREST_CEIL;
    else return nr_layer_error(c, "unknown nearest_mode '%s'", s);
    int64_t v;
    if ((st = nr_attr_float(c, "cubic_coeff_a", -0.75f, &p->cubic_coeff_a))) return st;
    if ((st = nr_attr_int(c, "exclude_outside", 0, &v))) return st;
    p->exclude_outside = v != 0;
    if ((st = nr_attr_float(c, "extrapolation_value", 0.0f, &p->extrapolation_value))) return st;
    if ((st = nr_attr_int(c, "antialias", 0, &v))) return st;
    p->antialias = v != 0;
    const char *policy;
    if ((st = nr_attr_string(c, "keep_aspect_ratio_policy", "stretch", &policy))) return st;
    if (strcmp(policy, "stretch") && strcmp(policy, "not_larger") && strcmp(policy, "not_smaller"))
        return nr_layer_error(c, "unknown keep_aspect_ratio_policy '%s'", policy);
    return NETRUN_OK;
}

static netrun_status resize_parse(nr_layer_ctx *c, void *params) { return parse_common(c, params, 0); }
static netrun_status upsample_parse(nr_layer_ctx *c, void *params) { return parse_common(c, params, 1); }

/* Float values of input i (float, float16 or double) into out; NR_STATUS_NEED_VALUE when unknown. */
static netrun_status in_floats(const nr_layer_ctx *c, int i, float *out, int64_t max, int64_t *n) {
    const netrun_value_desc *v = nr_in(c, i);
    int64_t cnt = nr_shape_count(v->rank, v->dims);
    if (cnt < 0) return NR_STATUS_NEED_VALUE;
    *n = cnt;
    if (cnt > max) return nr_layer_error(c, "input %d has %lld values (at most %lld)", i, (long long)cnt, (long long)max);
    if (cnt == 0) return NETRUN_OK;
    const void *data = nr_in_value(c, i);
    if (!data) return NR_STATUS_NEED_VALUE;
    for (int64_t k = 0; k < cnt; k++) {
        switch (v->dtype) {
        case NETRUN_DTYPE_FLOAT: out[k] = ((const float *)data)[k]; break;
        case NETRUN_DTYPE_DOUBLE: out[k] = (float)((const double *)data)[k]; break;
        case NETRUN_DTYPE_FLOAT16: {
            uint16_t h = ((const uint16_t *)data)[k];
            int e = (h >> 10) & 0x1f, m = h & 0x3ff;
            float f = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
            out[k] = (h & 0x8000) ? -f : f;
            break;
        }
        default: return nr_layer_error(c, "input %d has dtype %s, expected a float type", i, netrun_dtype_name(v->dtype));
        }
    }
    return NETRUN_OK;
}

static int given(const nr_layer_ctx *c, int i) {
    return i < nr_in_count(c) && nr_in_present(c, i) && nr_shape_count(nr_in(c, i)->rank, nr_in(c, i)->dims) != 0;
}

static netrun_status infer_common(nr_layer_ctx *c, netrun_resize_params *p, int upsample) {
    const netrun_value_desc *x = nr_in(c, 0);
    int r = x->rank;
    netrun_status st;
    if (r < 1) return nr_layer_error(c, "input must have rank >= 1");
    int opset = nr_opset(c);
    /* axes (opset 18): scales/sizes/roi name only these dims */
    int axes[NETRUN_MAX_RANK], na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
    if (!upsample && opset >= 18 && nr_attr_has(c, "axes")) {
        const int64_t *av;
        int64_t n;
        if ((st = nr_attr_ints(c, "axes", &av, &n))) return st;
        if (n < 1 || n > r) return nr_layer_error(c, "axes has %lld entries for rank %d", (long long)n, r);
        int seen[NETRUN_MAX_RANK] = {0};
        for (int i = 0; i < n; i++) {
            if ((st = nr_resolve_axis(c, av[i], r, 0, &axes[i]))) return st;
            if (seen[axes[i]]) return nr_layer_error(c, "axis %d given twice", axes[i]);
            seen[axes[i]] = 1;
        }
        na = (int)n;
    }
    float scales[NETRUN_MAX_RANK];
    int64_t sizes[NETRUN_MAX_RANK + 1], n_scales = -1, n_sizes = -1;
    int scales_in = upsample ? (opset >= 9 ? 1 : -1) : opset < 11 ? 1 : 2;
    int sizes_in = upsample || opset < 11 ? -1 : 3;
    if (scales_in < 0) {
        const float *sv;
        if ((st = nr_attr_floats(c, "scales", &sv, &n_scales))) return st;
        if (!nr_attr_has(c, "scales")) return nr_layer_error(c, "Upsample needs the scales attribute");
        if (n_scales > NETRUN_MAX_RANK) return nr_layer_error(c, "too many scales");
        memcpy(scales, sv, sizeof(float) * (size_t)n_scales);
    } else if (given(c, scales_in)) {
        if ((st = in_floats(c, scales_in, scales, NETRUN_MAX_RANK, &n_scales))) return st;
    }
    if (sizes_in >= 0 && given(c, sizes_in)) {
        if (n_scales >= 0) return nr_layer_error(c, "give either scales or sizes, not both");
        if ((st = nr_check_dtype(c, sizes_in, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64)))) return st;
        if ((st = nr_in_ints(c, sizes_in, sizes, NETRUN_MAX_RANK + 1, &n_sizes))) return st;
    }
    if (n_scales < 0 && n_sizes < 0) return nr_layer_error(c, "needs scales or sizes");
    if ((n_scales >= 0 ? n_scales : n_sizes) != na)
        return nr_layer_error(c, "%s has %lld entries, expected %d", n_scales >= 0 ? "scales" : "sizes",
                              (long long)(n_scales >= 0 ? n_scales : n_sizes), na);
    for (int i = 0; i < r; i++) {
        p->scale[i] = 1.0f;
        p->roi_start[i] = 0.0f;
        p->roi_end[i] = 1.0f;
    }
    if (p->coord == NETRUN_COORD_TF_CROP_AND_RESIZE && given(c, 1)) {
        float roi[2 * NETRUN_MAX_RANK];
        int64_t nr;
        if ((st = in_floats(c, 1, roi, 2 * NETRUN_MAX_RANK, &nr))) return st;
        if (nr != 2 * na) return nr_layer_error(c, "roi has %lld entries, expected %d", (long long)nr, 2 * na);
        for (int i = 0; i < na; i++) {
            p->roi_start[axes[i]] = roi[i];
            p->roi_end[axes[i]] = roi[i + na];
        }
    }
    int64_t d[NETRUN_MAX_RANK];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)r);
    if (n_scales >= 0) {
        for (int i = 0; i < na; i++) {
            float s = scales[i];
            if (!(s > 0) || !isfinite(s)) return nr_layer_error(c, "scale %d is %g (must be > 0)", i, (double)s);
            p->scale[axes[i]] = s;
            float o = s * (float)x->dims[axes[i]];
            if (o > 1e15f) return nr_layer_error(c, "output too large");
            d[axes[i]] = (int64_t)o;
        }
    } else {
        const char *policy = "stretch";
        if (opset >= 18 && (st = nr_attr_string(c, "keep_aspect_ratio_policy", "stretch", &policy))) return st;
        int stretch = !strcmp(policy, "stretch"), larger = !strcmp(policy, "not_smaller");
        float keep = larger ? 0.0f : INFINITY;
        for (int i = 0; i < na; i++) {
            int a = axes[i];
            if (sizes[i] < 0) return nr_layer_error(c, "sizes[%d] is negative", i);
            if (x->dims[a] == 0) return nr_layer_error(c, "cannot resize an empty dim %d to a size", a);
            float s = (float)sizes[i] / (float)x->dims[a];
            if (stretch) {
                p->scale[a] = s;
                d[a] = sizes[i];
            } else if (larger ? s > keep : s < keep) {
                keep = s;
            }
        }
        if (!stretch)
            for (int i = 0; i < na; i++) {
                p->scale[axes[i]] = keep;
                d[axes[i]] = (int64_t)roundf(keep * (float)x->dims[axes[i]]);
            }
    }
    int down = 0;
    for (int i = 0; i < r; i++) down |= p->scale[i] < 1.0f;
    if (p->antialias && p->mode != NETRUN_RESIZE_NEAREST && down)
        return nr_layer_error(c, "antialias=1 when downsampling is not supported");
    /* Upsample / Resize-10 nearest: truncation when upsampling, ceil when downsampling (onnxruntime) */
    if (upsample || opset < 11) p->nearest = down ? NETRUN_NEAREST_CEIL : NETRUN_NEAREST_FLOOR;
    if (p->mode != NETRUN_RESIZE_NEAREST &&
        (st = nr_check_dtype(c, 0, NR_DTYPES_FLOAT | NR_DTYPES_INT)))
        return st;
    nr_out_set(c, 0, x->dtype, r, d);
    return NETRUN_OK;
}

static netrun_status resize_infer(nr_layer_ctx *c, void *params) { return infer_common(c, params, 0); }
static netrun_status upsample_infer(nr_layer_ctx *c, void *params) { return infer_common(c, params, 1); }

const nr_layer nr_layers_resize[] = {
    {"Resize", "", 10, sizeof(netrun_resize_params), resize_parse, resize_infer, 0},
    {"Upsample", "", 7, sizeof(netrun_resize_params), upsample_parse, upsample_infer, 0},
    {0},
};
