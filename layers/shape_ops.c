/* Op family: shape_ops (definitions: attribute parsing, validation, shape inference).
 * Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, ConstantOfShape, Expand, Identity, Dropout, Range, Tile,
 * EyeLike, Trilu. */
#include <math.h>
#include <string.h>

#include "layer.h"

static const netrun_value_desc *in0(const nr_layer_ctx *c) { return nr_in(c, 0); }

/* Element count of dims, error on overflow or unknown dims. */
static netrun_status count_of(const nr_layer_ctx *c, int rank, const int64_t *dims, int64_t *out) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return nr_layer_error(c, "dimension %d is negative (%lld)", i, (long long)dims[i]);
        if (dims[i] && n > INT64_MAX / dims[i]) return nr_layer_error(c, "shape has too many elements");
        n *= dims[i];
    }
    *out = n;
    return NETRUN_OK;
}

/* ---------------- Reshape ---------------- */

static netrun_status reshape_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    int64_t allowzero = 0;
    netrun_status st = nr_attr_int(c, "allowzero", 0, &allowzero);
    if (st) return st;
    if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return nr_layer_error(c, "Reshape needs the shape input");
    const netrun_value_desc *x = in0(c);
    int64_t shape[NETRUN_MAX_RANK + 1], n = 0;
    st = nr_in_ints(c, 1, shape, NETRUN_MAX_RANK + 1, &n);
    if (st) return st;
    if (n > NETRUN_MAX_RANK) return nr_layer_error(c, "target shape has %lld dims (at most %d)", (long long)n, NETRUN_MAX_RANK);
    int64_t total = 0;
    if ((st = count_of(c, x->rank, x->dims, &total))) return st;
    int infer_at = -1, has_zero = 0;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (shape[i] == -1) {
            if (infer_at >= 0) return nr_layer_error(c, "target shape has more than one -1");
            infer_at = i;
            continue;
        }
        if (shape[i] < -1) return nr_layer_error(c, "target shape dim %d is %lld", i, (long long)shape[i]);
        if (shape[i] == 0) {
            has_zero = 1;
            if (!allowzero) {
                if (i >= x->rank)
                    return nr_layer_error(c, "target shape dim %d is 0 (copy) but the input has rank %d", i, x->rank);
                shape[i] = x->dims[i];
            }
        }
        if (shape[i] && known > INT64_MAX / shape[i]) return nr_layer_error(c, "target shape too large");
        known *= shape[i];
    }
    if (allowzero && has_zero && infer_at >= 0)
        return nr_layer_error(c, "with allowzero=1 the shape may not contain both 0 and -1");
    if (infer_at >= 0) {
        if (known == 0 || total % known)
            return nr_layer_error(c, "cannot infer the -1 dim: %lld elements do not divide into %lld", (long long)total,
                                  (long long)known);
        shape[infer_at] = total / known;
    } else if (known != total) {
        return nr_layer_error(c, "target shape has %lld elements, the input %lld", (long long)known, (long long)total);
    }
    nr_out_set(c, 0, x->dtype, (int)n, shape);
    return NETRUN_OK;
}

/* ---------------- Flatten ---------------- */

static netrun_status flatten_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c);
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", 1, &axis);
    if (st) return st;
    /* Flatten's negative axis counts from the end: -1 keeps the last dim on its own */
    if (axis < -x->rank || axis > x->rank)
        return nr_layer_error(c, "axis %lld out of range [%d, %d]", (long long)axis, -x->rank, x->rank);
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    int64_t d[2];
    if ((st = count_of(c, a, x->dims, &d[0]))) return st;
    if ((st = count_of(c, x->rank - a, x->dims + a, &d[1]))) return st;
    nr_out_set(c, 0, x->dtype, 2, d);
    return NETRUN_OK;
}

/* ---------------- Squeeze / Unsqueeze ---------------- */

/* Axes from the attribute (opset < 13) or input 1 (opset >= 13). *n = -1 when none given. */
static netrun_status read_axes(nr_layer_ctx *c, int64_t *axes, int64_t *n) {
    *n = -1;
    if (nr_opset(c) < 13) {
        const int64_t *a;
        int64_t na;
        netrun_status st = nr_attr_ints(c, "axes", &a, &na);
        if (st) return st;
        if (!nr_attr_has(c, "axes")) return NETRUN_OK;
        if (na > NETRUN_MAX_RANK) return nr_layer_error(c, "too many axes (%lld)", (long long)na);
        if (na) memcpy(axes, a, (size_t)na * sizeof *a);
        *n = na;
        return NETRUN_OK;
    }
    if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return NETRUN_OK;
    int64_t na;
    netrun_status st = nr_in_ints(c, 1, axes, NETRUN_MAX_RANK + 1, &na);
    if (st) return st;
    if (na > NETRUN_MAX_RANK) return nr_layer_error(c, "too many axes (%lld)", (long long)na);
    *n = na;
    return NETRUN_OK;
}

static netrun_status squeeze_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c);
    int64_t axes[NETRUN_MAX_RANK + 1], n;
    netrun_status st = read_axes(c, axes, &n);
    if (st) return st;
    int drop[NETRUN_MAX_RANK] = {0};
    if (n < 0) {
        for (int i = 0; i < x->rank; i++) drop[i] = x->dims[i] == 1;
    } else {
        for (int i = 0; i < n; i++) {
            int a;
            if ((st = nr_resolve_axis(c, axes[i], x->rank, 0, &a))) return st;
            if (drop[a]) return nr_layer_error(c, "axis %lld given twice", (long long)axes[i]);
            if (x->dims[a] != 1)
                return nr_layer_error(c, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a]);
            drop[a] = 1;
        }
    }
    int64_t d[NETRUN_MAX_RANK];
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) d[r++] = x->dims[i];
    nr_out_set(c, 0, x->dtype, r, d);
    return NETRUN_OK;
}

static netrun_status unsqueeze_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c);
    int64_t axes[NETRUN_MAX_RANK + 1], n;
    netrun_status st = read_axes(c, axes, &n);
    if (st) return st;
    if (n < 0) return nr_layer_error(c, "Unsqueeze needs axes");
    int out_rank = x->rank + (int)n;
    if (out_rank > NETRUN_MAX_RANK) return nr_layer_error(c, "output rank %d exceeds %d", out_rank, NETRUN_MAX_RANK);
    int ins[NETRUN_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        int a;
        if ((st = nr_resolve_axis(c, axes[i], out_rank, 0, &a))) return st;
        if (ins[a]) return nr_layer_error(c, "axis %lld given twice", (long long)axes[i]);
        ins[a] = 1;
    }
    int64_t d[NETRUN_MAX_RANK];
    for (int i = 0, j = 0; i < out_rank; i++) d[i] = ins[i] ? 1 : x->dims[j++];
    nr_out_set(c, 0, x->dtype, out_rank, d);
    return NETRUN_OK;
}

/* ---------------- Shape / Size ---------------- */

static netrun_status shape_parse(nr_layer_ctx *c, void *params) {
    (void)params;
    if (nr_opset(c) < 15 && (nr_attr_has(c, "start") || nr_attr_has(c, "end")))
        return nr_layer_error(c, "Shape start/end need opset 15 (model has %d)", nr_opset(c));
    return NETRUN_OK;
}

static netrun_status shape_infer(nr_layer_ctx *c, void *params) {
    netrun_shape_params *p = params;
    const netrun_value_desc *x = in0(c);
    int64_t start, end;
    netrun_status st = nr_attr_int(c, "start", 0, &start);
    if (!st) st = nr_attr_int(c, "end", INT64_MAX, &end);
    if (st) return st;
    int64_t r = x->rank;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    if (end < start) end = start;
    p->start = (int)start;
    p->end = (int)end;
    int64_t d = end - start;
    nr_out_set(c, 0, NETRUN_DTYPE_INT64, 1, &d);
    return NETRUN_OK;
}

static netrun_status size_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    nr_out_set(c, 0, NETRUN_DTYPE_INT64, 0, NULL);
    return NETRUN_OK;
}

/* ---------------- ConstantOfShape ---------------- */

static netrun_dtype fill_dtype(const nr_layer_ctx *c) {
    const nr_tensor *t = NULL;
    if (nr_attr_has(c, "value") && nr_attr_tensor(c, "value", &t) == NETRUN_OK && t) return t->dtype;
    return NETRUN_DTYPE_FLOAT;
}

static netrun_status cos_parse(nr_layer_ctx *c, void *params) {
    netrun_fill_params *p = params;
    memset(p->value, 0, sizeof p->value);
    if (!nr_attr_has(c, "value")) return NETRUN_OK; /* float 0 */
    const nr_tensor *t;
    netrun_status st = nr_attr_tensor(c, "value", &t);
    if (st) return st;
    if (!t) return nr_layer_error(c, "attribute value has no tensor");
    int64_t n = nr_tensor_count(t);
    if (n != 1) return nr_layer_error(c, "attribute value must hold one element, it holds %lld", (long long)n);
    size_t es = netrun_dtype_size(t->dtype);
    if (t->dtype == NETRUN_DTYPE_STRING || es == 0 || es > sizeof p->value)
        return nr_layer_error(c, "attribute value has unsupported dtype %s", netrun_dtype_name(t->dtype));
    if (t->nbytes < es || !t->data) return nr_layer_error(c, "attribute value has no data");
    memcpy(p->value, t->data, es);
    return NETRUN_OK;
}

static netrun_status cos_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    netrun_status st = nr_check_dtype(c, 0, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
    if (st) return st;
    if (in0(c)->rank != 1) return nr_layer_error(c, "input shape must be 1-D, it has rank %d", in0(c)->rank);
    int64_t d[NETRUN_MAX_RANK + 1], n;
    if ((st = nr_in_ints(c, 0, d, NETRUN_MAX_RANK + 1, &n))) return st;
    if (n > NETRUN_MAX_RANK) return nr_layer_error(c, "shape has %lld dims (at most %d)", (long long)n, NETRUN_MAX_RANK);
    int64_t total = 0;
    if ((st = count_of(c, (int)n, d, &total))) return st;
    nr_out_set(c, 0, fill_dtype(c), (int)n, d);
    return NETRUN_OK;
}

/* ---------------- Expand ---------------- */

static netrun_status expand_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c);
    netrun_status st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
    if (st) return st;
    int64_t d[NETRUN_MAX_RANK + 1], n;
    if ((st = nr_in_ints(c, 1, d, NETRUN_MAX_RANK + 1, &n))) return st;
    if (n > NETRUN_MAX_RANK) return nr_layer_error(c, "shape has %lld dims (at most %d)", (long long)n, NETRUN_MAX_RANK);
    for (int i = 0; i < n; i++)
        if (d[i] < 0) return nr_layer_error(c, "shape dim %d is negative (%lld)", i, (long long)d[i]);
    int r;
    int64_t od[NETRUN_MAX_RANK];
    if ((st = nr_broadcast_shapes(c, x->rank, x->dims, (int)n, d, &r, od))) return st;
    nr_out_set(c, 0, x->dtype, r, od);
    return NETRUN_OK;
}

/* ---------------- Identity / Dropout ---------------- */

static netrun_status identity_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    nr_out_set(c, 0, in0(c)->dtype, in0(c)->rank, in0(c)->dims);
    return NETRUN_OK;
}

static netrun_status dropout_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c);
    netrun_status st;
    if (nr_opset(c) >= 12) {
        if (nr_in_count(c) > 1 && nr_in_present(c, 1)) {
            if ((st = nr_check_dtype(c, 1, NR_DTYPES_FLOAT))) return st;
        }
        if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
            double training;
            if ((st = nr_in_scalar(c, 2, &training))) return st;
            if (training != 0)
                return nr_layer_error(c, "Dropout with training_mode=true is not supported (inference only)");
        }
    } else {
        int64_t is_test = 1;
        if (nr_opset(c) < 7 && (st = nr_attr_int(c, "is_test", 0, &is_test))) return st;
        if (!is_test) return nr_layer_error(c, "Dropout with is_test=0 (training) is not supported");
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    /* The mask is bool from opset 10, the input's type before. */
    nr_out_set(c, 1, nr_opset(c) >= 10 ? NETRUN_DTYPE_BOOL : x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---------------- Range ---------------- */

static netrun_status range_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    netrun_status st;
    const uint64_t ok = NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) |
                        NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) |
                        NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) |
                        NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16);
    if ((st = nr_check_dtype(c, 0, ok))) return st;
    for (int i = 0; i < 3; i++) {
        if (i && (st = nr_check_same_dtype(c, 0, i))) return st;
        if (nr_in(c, i)->rank > 1 || (nr_in(c, i)->rank == 1 && nr_in(c, i)->dims[0] != 1))
            return nr_layer_error(c, "input %d must be a scalar", i);
    }
    double v[3];
    for (int i = 0; i < 3; i++)
        if ((st = nr_in_scalar(c, i, &v[i]))) return st;
    static const char *const what[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++) /* the element count would be undefined (numpy's arange refuses these too) */
        if (!isfinite(v[i])) return nr_layer_error(c, "%s is %g: Range needs finite numbers", what[i], v[i]);
    if (v[2] == 0) return nr_layer_error(c, "delta is zero");
    int64_t d;
    if (in0(c)->dtype == NETRUN_DTYPE_INT64) {
        /* exact: a double loses the low bits of int64 values (INT64_MAX - 1 .. INT64_MAX has one element) */
        __int128 x[3];
        for (int i = 0; i < 3; i++) x[i] = ((const int64_t *)nr_in(c, i)->const_data)[0];
        __int128 span = x[2] > 0 ? x[1] - x[0] : x[0] - x[1], step = x[2] > 0 ? x[2] : -x[2];
        __int128 n = span > 0 ? (span + step - 1) / step : 0;
        if (n > (__int128)9000000000000000LL)
            return nr_layer_error(c, "range has too many elements (%.3g)", (double)n);
        d = (int64_t)n;
    } else {
        double n = ceil((v[1] - v[0]) / v[2]);
        if (!(n > 0)) n = 0;
        if (n > 9.0e15) return nr_layer_error(c, "range has too many elements (%g)", n);
        d = (int64_t)n;
    }
    nr_out_set(c, 0, in0(c)->dtype, 1, &d);
    return NETRUN_OK;
}

/* ---------------- Tile ---------------- */

static netrun_status tile_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c);
    netrun_status st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
    if (st) return st;
    int64_t rep[NETRUN_MAX_RANK + 1], n;
    if ((st = nr_in_ints(c, 1, rep, NETRUN_MAX_RANK + 1, &n))) return st;
    if (n != x->rank)
        return nr_layer_error(c, "repeats has %lld entries, the input rank is %d", (long long)n, x->rank);
    int64_t d[NETRUN_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        if (rep[i] < 0) return nr_layer_error(c, "repeats[%d] is negative (%lld)", i, (long long)rep[i]);
        if (rep[i] && x->dims[i] > INT64_MAX / rep[i]) return nr_layer_error(c, "output too large");
        d[i] = x->dims[i] * rep[i];
    }
    int64_t total = 0;
    if ((st = count_of(c, x->rank, d, &total))) return st;
    nr_out_set(c, 0, x->dtype, x->rank, d);
    return NETRUN_OK;
}

/* ---------------- EyeLike ---------------- */

static netrun_status eyelike_parse(nr_layer_ctx *c, void *params) {
    netrun_eyelike_params *p = params;
    return nr_attr_int(c, "k", 0, &p->k);
}

static netrun_status eyelike_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    const netrun_value_desc *x = in0(c);
    if (x->rank != 2) return nr_layer_error(c, "EyeLike input must be 2-D, it has rank %d", x->rank);
    int64_t dt;
    netrun_status st = nr_attr_int(c, "dtype", (int64_t)x->dtype, &dt);
    if (st) return st;
    if (dt <= 0 || dt >= NETRUN_DTYPE_COUNT_ || dt == NETRUN_DTYPE_STRING ||
        !(NETRUN_DTYPE_BIT(dt) & (NR_DTYPES_NUMERIC | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BOOL))))
        return nr_layer_error(c, "EyeLike dtype %lld is not supported", (long long)dt);
    nr_out_set(c, 0, (netrun_dtype)dt, 2, x->dims);
    return NETRUN_OK;
}

/* ---------------- Trilu ---------------- */

static netrun_status trilu_parse(nr_layer_ctx *c, void *params) {
    netrun_trilu_params *p = params;
    int64_t upper;
    netrun_status st = nr_attr_int(c, "upper", 1, &upper);
    p->upper = upper != 0;
    return st;
}

static netrun_status trilu_infer(nr_layer_ctx *c, void *params) {
    netrun_trilu_params *p = params;
    const netrun_value_desc *x = in0(c);
    if (x->rank < 2) return nr_layer_error(c, "Trilu input must have rank >= 2, it has %d", x->rank);
    p->k = 0;
    if (nr_in_count(c) > 1 && nr_in_present(c, 1)) {
        netrun_status st = nr_check_dtype(c, 1, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64));
        if (st) return st;
        int64_t k, n;
        if ((st = nr_in_ints(c, 1, &k, 1, &n))) return st;
        if (n != 1) return nr_layer_error(c, "k must hold one value, it holds %lld", (long long)n);
        p->k = k;
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_shape_ops[] = {
    {"Reshape", "", 5, 0, NULL, reshape_infer, NR_LAYER_VIEW},
    {"Flatten", "", 1, 0, NULL, flatten_infer, NR_LAYER_VIEW},
    {"Squeeze", "", 1, 0, NULL, squeeze_infer, NR_LAYER_VIEW},
    {"Unsqueeze", "", 1, 0, NULL, unsqueeze_infer, NR_LAYER_VIEW},
    {"Shape", "", 1, sizeof(netrun_shape_params), shape_parse, shape_infer, 0},
    {"Size", "", 1, 0, NULL, size_infer, 0},
    {"ConstantOfShape", "", 9, sizeof(netrun_fill_params), cos_parse, cos_infer, 0},
    {"Expand", "", 8, 0, NULL, expand_infer, 0},
    {"Identity", "", 1, 0, NULL, identity_infer, NR_LAYER_VIEW},
    {"Dropout", "", 7, 0, NULL, dropout_infer, NR_LAYER_VIEW},
    {"Range", "", 11, 0, NULL, range_infer, 0},
    {"Tile", "", 6, 0, NULL, tile_infer, 0},
    {"EyeLike", "", 9, sizeof(netrun_eyelike_params), eyelike_parse, eyelike_infer, 0},
    {"Trilu", "", 14, sizeof(netrun_trilu_params), trilu_parse, trilu_infer, 0},
    {0},
};
