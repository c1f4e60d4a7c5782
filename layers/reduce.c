/* Op family: reduce (definitions: attribute parsing, validation, shape inference).
 * ReduceXxx, ArgMax/ArgMin, TopK, CumSum. */
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"

/* ---- ReduceXxx ----
 * parse stores the raw `axes` attribute (opsets where axes is an attribute) in params; infer resolves it,
 * or reads the axes input (ReduceSum from opset 13, the others from 18). params.noop holds the
 * noop_with_empty_axes attribute until infer decides whether the node is an identity. */

static netrun_status reduce_parse_common(nr_layer_ctx *c, netrun_reduce_params *p, int axes_input_opset) {
    int64_t keepdims, noop = 0;
    netrun_status st = nr_attr_int(c, "keepdims", 1, &keepdims);
    if (st != NETRUN_OK) return st;
    if (keepdims != 0 && keepdims != 1)
        return nr_layer_error(c, "attribute 'keepdims' must be 0 or 1, got %lld", (long long)keepdims);
    p->keepdims = (int)keepdims;
    if (nr_opset(c) >= axes_input_opset) {
        st = nr_attr_int(c, "noop_with_empty_axes", 0, &noop);
        if (st != NETRUN_OK) return st;
        if (noop != 0 && noop != 1)
            return nr_layer_error(c, "attribute 'noop_with_empty_axes' must be 0 or 1, got %lld", (long long)noop);
        if (nr_attr_has(c, "axes"))
            return nr_layer_error(c, "attribute 'axes' is not allowed from opset %d: axes is input 1",
                                  axes_input_opset);
        p->noop = (int)noop;
        return NETRUN_OK;
    }
    const int64_t *axes;
    int64_t n;
    st = nr_attr_ints(c, "axes", &axes, &n);
    if (st != NETRUN_OK) return st;
    if (n > NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axes' has %lld entries, more than the %d dims a tensor may have",
                              (long long)n, NETRUN_MAX_RANK);
    for (int64_t i = 0; i < n; i++) {
        if (axes[i] < -NETRUN_MAX_RANK || axes[i] >= NETRUN_MAX_RANK)
            return nr_layer_error(c, "attribute 'axes'[%lld] = %lld is out of range", (long long)i,
                                  (long long)axes[i]);
        p->axes[i] = (int)axes[i];
    }
    p->n_axes = (int)n;
    return NETRUN_OK;
}

static netrun_status reduce_parse_sum(nr_layer_ctx *c, void *params) { return reduce_parse_common(c, params, 13); }
static netrun_status reduce_parse_other(nr_layer_ctx *c, void *params) { return reduce_parse_common(c, params, 18); }

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Resolve n raw axes against rank into sorted non-negative axes; error on duplicates. */
static netrun_status resolve_axes(nr_layer_ctx *c, const int64_t *raw, int n, int rank, int *out) {
    for (int i = 0; i < n; i++) {
        netrun_status st = nr_resolve_axis(c, raw[i], rank, 0, &out[i]);
        if (st != NETRUN_OK) return st;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_int);
    for (int i = 1; i < n; i++)
        if (out[i] == out[i - 1]) return nr_layer_error(c, "axis %d is listed twice in axes", out[i]);
    return NETRUN_OK;
}

/* Output shape of a reduction over the sorted axes p->axes. */
static void reduced_shape(const netrun_value_desc *x, const netrun_reduce_params *p, int *rank, int64_t *dims) {
    int r = 0, k = 0;
    for (int d = 0; d < x->rank; d++) {
        int reduced = k < p->n_axes && p->axes[k] == d;
        if (reduced) k++;
        if (!reduced) dims[r++] = x->dims[d];
        else if (p->keepdims) dims[r++] = 1;
    }
    *rank = r;
}

static netrun_status reduce_infer_common(nr_layer_ctx *c, netrun_reduce_params *p, int axes_input_opset,
                                         uint64_t dtypes) {
    netrun_status st = nr_check_dtype(c, 0, dtypes);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    int64_t raw[NETRUN_MAX_RANK];
    int64_t n = 0;
    if (nr_opset(c) >= axes_input_opset) {
        if (nr_in_count(c) > 1 && nr_in_present(c, 1)) {
            const netrun_value_desc *a = nr_in(c, 1);
            if (a->dtype != NETRUN_DTYPE_INT64)
                return nr_layer_error(c, "input 'axes' must be int64, got dtype %d", (int)a->dtype);
            if (a->rank > 1) return nr_layer_error(c, "input 'axes' must be 1-D, got rank %d", a->rank);
            st = nr_in_ints(c, 1, raw, NETRUN_MAX_RANK, &n);
            if (st != NETRUN_OK) return st; /* NR_STATUS_NEED_VALUE included */
            if (n > x->rank)
                return nr_layer_error(c, "input 'axes' has %lld entries but the data has rank %d", (long long)n,
                                      x->rank);
        }
    } else {
        n = p->n_axes;
        for (int i = 0; i < p->n_axes; i++) raw[i] = p->axes[i];
        if (n > x->rank)
            return nr_layer_error(c, "attribute 'axes' has %lld entries but the data has rank %d", (long long)n,
                                  x->rank);
    }
    if (n == 0) {
        if (p->noop && nr_opset(c) >= axes_input_opset) {
            p->n_axes = 0;
            p->noop = 1;
            nr_out_set(c, 0, x->dtype, x->rank, x->dims);
            return NETRUN_OK;
        }
        /* empty axes: reduce over every dim */
        for (int d = 0; d < x->rank; d++) raw[d] = d;
        n = x->rank;
    }
    p->noop = 0;
    st = resolve_axes(c, raw, (int)n, x->rank, p->axes);
    if (st != NETRUN_OK) return st;
    p->n_axes = (int)n;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    reduced_shape(x, p, &rank, dims);
    nr_out_set(c, 0, x->dtype, rank, dims);
    return NETRUN_OK;
}

static netrun_status reduce_infer_sum(nr_layer_ctx *c, void *params) {
    return reduce_infer_common(c, params, 13, NR_DTYPES_NUMERIC);
}
/* ReduceMax/ReduceMin also take bool (opset 20): any / all. */
static netrun_status reduce_infer_minmax(nr_layer_ctx *c, void *params) {
    return reduce_infer_common(c, params, 18, NR_DTYPES_NUMERIC | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BOOL));
}
static netrun_status reduce_infer_other(nr_layer_ctx *c, void *params) {
    return reduce_infer_common(c, params, 18, NR_DTYPES_NUMERIC);
}

/* ---- ArgMax / ArgMin: params.axes[0] holds the raw axis until infer ---- */

static netrun_status arg_parse(nr_layer_ctx *c, void *params) {
    netrun_reduce_params *p = params;
    int64_t axis, keepdims, last;
    netrun_status st = nr_attr_int(c, "axis", 0, &axis);
    if (st == NETRUN_OK) st = nr_attr_int(c, "keepdims", 1, &keepdims);
    if (st == NETRUN_OK) st = nr_attr_int(c, "select_last_index", 0, &last);
    if (st != NETRUN_OK) return st;
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    if (keepdims != 0 && keepdims != 1)
        return nr_layer_error(c, "attribute 'keepdims' must be 0 or 1, got %lld", (long long)keepdims);
    if (last != 0 && last != 1)
        return nr_layer_error(c, "attribute 'select_last_index' must be 0 or 1, got %lld", (long long)last);
    p->n_axes = 1;
    p->axes[0] = (int)axis;
    p->keepdims = (int)keepdims;
    p->select_last_index = (int)last;
    return NETRUN_OK;
}

static netrun_status arg_infer(nr_layer_ctx *c, void *params) {
    netrun_reduce_params *p = params;
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_NUMERIC);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 1) return nr_layer_error(c, "input must have rank >= 1, got a scalar");
    st = nr_resolve_axis(c, p->axes[0], x->rank, 0, &p->axes[0]);
    if (st != NETRUN_OK) return st;
    if (x->dims[p->axes[0]] == 0)
        return nr_layer_error(c, "cannot take the arg max/min over axis %d of size 0", p->axes[0]);
    p->n_axes = 1;
    p->noop = 0;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    reduced_shape(x, p, &rank, dims);
    nr_out_set(c, 0, NETRUN_DTYPE_INT64, rank, dims);
    return NETRUN_OK;
}

/* ---- TopK: K is an attribute before opset 10, input 1 after; params.axis raw until infer ---- */

static netrun_status topk_parse(nr_layer_ctx *c, void *params) {
    netrun_topk_params *p = params;
    int64_t axis, largest = 1, sorted = 1, k = -1;
    netrun_status st = nr_attr_int(c, "axis", -1, &axis);
    if (st != NETRUN_OK) return st;
    if (nr_opset(c) >= 11) {
        st = nr_attr_int(c, "largest", 1, &largest);
        if (st == NETRUN_OK) st = nr_attr_int(c, "sorted", 1, &sorted);
        if (st != NETRUN_OK) return st;
    }
    if (nr_opset(c) < 10) {
        if (!nr_attr_has(c, "k")) return nr_layer_error(c, "attribute 'k' is required before opset 10");
        st = nr_attr_int(c, "k", -1, &k);
        if (st != NETRUN_OK) return st;
        if (k < 0) return nr_layer_error(c, "attribute 'k' must be >= 0, got %lld", (long long)k);
    }
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->axis = (int)axis;
    p->k = k;
    p->largest = largest != 0;
    p->sorted = sorted != 0;
    return NETRUN_OK;
}

static netrun_status topk_infer(nr_layer_ctx *c, void *params) {
    netrun_topk_params *p = params;
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_NUMERIC);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 1) return nr_layer_error(c, "input must have rank >= 1, got a scalar");
    st = nr_resolve_axis(c, p->axis, x->rank, 0, &p->axis);
    if (st != NETRUN_OK) return st;
    if (nr_opset(c) >= 10) {
        if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return nr_layer_error(c, "input 'K' is required");
        const netrun_value_desc *kd = nr_in(c, 1);
        if (kd->dtype != NETRUN_DTYPE_INT64) return nr_layer_error(c, "input 'K' must be int64");
        int64_t k, n;
        st = nr_in_ints(c, 1, &k, 1, &n);
        if (st != NETRUN_OK) return st;
        if (n != 1) return nr_layer_error(c, "input 'K' must hold one value, got %lld", (long long)n);
        if (k < 0) return nr_layer_error(c, "K must be >= 0, got %lld", (long long)k);
        p->k = k;
    }
    if (p->k > x->dims[p->axis])
        return nr_layer_error(c, "K = %lld is larger than dim %d of the input (%lld)", (long long)p->k, p->axis,
                              (long long)x->dims[p->axis]);
    int64_t dims[NETRUN_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[p->axis] = p->k;
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    nr_out_set(c, 1, NETRUN_DTYPE_INT64, x->rank, dims);
    return NETRUN_OK;
}

/* ---- CumSum, CumProd: the axis is input 1 ---- */

static netrun_status cumsum_parse(nr_layer_ctx *c, void *params) {
    netrun_axis_params *p = params;
    int64_t exclusive, reverse;
    netrun_status st = nr_attr_int(c, "exclusive", 0, &exclusive);
    if (st == NETRUN_OK) st = nr_attr_int(c, "reverse", 0, &reverse);
    if (st != NETRUN_OK) return st;
    p->exclusive = exclusive != 0;
    p->reverse = reverse != 0;
    return NETRUN_OK;
}

static netrun_status cumsum_infer(nr_layer_ctx *c, void *params) {
    netrun_axis_params *p = params;
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_NUMERIC);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 1) return nr_layer_error(c, "input must have rank >= 1, got a scalar");
    if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return nr_layer_error(c, "input 'axis' is required");
    const netrun_value_desc *a = nr_in(c, 1);
    if (a->rank > 1) return nr_layer_error(c, "input 'axis' must be a scalar or 1-D, got rank %d", a->rank);
    st = nr_check_dtype(c, 1, NR_DTYPES_INDEX);
    if (st != NETRUN_OK) return st;
    int64_t axis, n;
    st = nr_in_ints(c, 1, &axis, 1, &n);
    if (st != NETRUN_OK) return st;
    if (n != 1) return nr_layer_error(c, "input 'axis' must hold one value, got %lld", (long long)n);
    st = nr_resolve_axis(c, axis, x->rank, 0, &p->axis);
    if (st != NETRUN_OK) return st;
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

#define REDUCE_SUM(name) {name, "", 1, sizeof(netrun_reduce_params), reduce_parse_sum, reduce_infer_sum, 0}
#define REDUCE(name) {name, "", 1, sizeof(netrun_reduce_params), reduce_parse_other, reduce_infer_other, 0}

const nr_layer nr_layers_reduce[] = {
    REDUCE_SUM("ReduceSum"),
    REDUCE("ReduceMean"),
    {"ReduceMax", "", 1, sizeof(netrun_reduce_params), reduce_parse_other, reduce_infer_minmax, 0},
    {"ReduceMin", "", 1, sizeof(netrun_reduce_params), reduce_parse_other, reduce_infer_minmax, 0},
    REDUCE("ReduceProd"),
    REDUCE("ReduceL1"),
    REDUCE("ReduceL2"),
    REDUCE("ReduceLogSum"),
    REDUCE("ReduceLogSumExp"),
    REDUCE("ReduceSumSquare"),
    {"ArgMax", "", 1, sizeof(netrun_reduce_params), arg_parse, arg_infer, 0},
    {"ArgMin", "", 1, sizeof(netrun_reduce_params), arg_parse, arg_infer, 0},
    {"TopK", "", 1, sizeof(netrun_topk_params), topk_parse, topk_infer, 0},
    {"CumSum", "", 11, sizeof(netrun_axis_params), cumsum_parse, cumsum_infer, 0},
    {"CumProd", "", 26, sizeof(netrun_axis_params), cumsum_parse, cumsum_infer, 0},
    {0},
};
