/* Op family: norm (definitions: attribute parsing, validation, shape inference). */
#include <string.h>

#include "layer.h"

#define TRY(x)                                   \
    do {                                         \
        netrun_status st_ = (x);                 \
        if (st_ != NETRUN_OK) return st_;        \
    } while (0)

static netrun_status read_epsilon(nr_layer_ctx *c, netrun_norm_params *p) {
    TRY(nr_attr_float(c, "epsilon", 1e-5f, &p->epsilon));
    if (!(p->epsilon >= 0.0f)) return nr_layer_error(c, "epsilon = %g must be >= 0", (double)p->epsilon);
    return NETRUN_OK;
}

/* ---- BatchNormalization (inference) ---- */

static netrun_status bn_parse(nr_layer_ctx *c, void *params) {
    netrun_norm_params *p = params;
    TRY(read_epsilon(c, p));
    int64_t training = 0;
    TRY(nr_attr_int(c, "training_mode", 0, &training));
    if (training)
        return nr_layer_error(c, "training_mode=1 is not supported (netrun runs inference only)");
    if (nr_attr_has(c, "is_test")) {
        int64_t is_test = 1;
        TRY(nr_attr_int(c, "is_test", 1, &is_test));
        if (!is_test) return nr_layer_error(c, "is_test=0 (training) is not supported (netrun runs inference only)");
    }
    float momentum;
    TRY(nr_attr_float(c, "momentum", 0.9f, &momentum)); /* training only: read to check its type */
    return NETRUN_OK;
}

static netrun_status bn_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    if (nr_in_count(c) < 5) return nr_layer_error(c, "needs 5 inputs (X, scale, B, mean, var), got %d", nr_in_count(c));
    for (int i = 0; i < 5; i++)
        if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d is required", i);
    for (int i = 1; i < nr_out_count(c); i++)
        if (nr_out_present(c, i))
            return nr_layer_error(c, "output %d (running or saved statistics) exists only in training mode, which is "
                                  "not supported", i);
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    for (int i = 1; i < 5; i++) TRY(nr_check_dtype(c, i, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 2) return nr_layer_error(c, "X has rank %d; expected [N, C, ...]", x->rank);
    int64_t spatial = 1;
    TRY(nr_attr_int(c, "spatial", 1, &spatial));
    if (nr_opset(c) >= 9) spatial = 1;
    static const char *const names[5] = {"X", "scale", "B", "mean", "var"};
    for (int i = 1; i < 5; i++) {
        const netrun_value_desc *v = nr_in(c, i);
        int ok = v->rank == 1 && v->dims[0] == x->dims[1];
        if (!ok && !spatial) /* spatial=0 (opset < 9): one value per activation, shaped X.shape[1:] */
            ok = v->rank == x->rank - 1 && !memcmp(v->dims, x->dims + 1, sizeof(int64_t) * (size_t)(x->rank - 1));
        if (!ok)
            return nr_layer_error(c, "input %s must be 1-D with C = %lld values%s", names[i], (long long)x->dims[1],
                                  spatial ? "" : " (or shaped like X without its batch dim when spatial=0)");
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- InstanceNormalization ---- */

static netrun_status in_parse(nr_layer_ctx *c, void *params) { return read_epsilon(c, params); }

static netrun_status in_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    if (nr_in_count(c) < 3 || !nr_in_present(c, 1) || !nr_in_present(c, 2))
        return nr_layer_error(c, "needs inputs input, scale and B");
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    TRY(nr_check_same_dtype(c, 0, 1));
    TRY(nr_check_same_dtype(c, 0, 2));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 3) return nr_layer_error(c, "input has rank %d; expected [N, C, D1, ...] (rank >= 3)", x->rank);
    for (int i = 1; i < 3; i++) {
        const netrun_value_desc *v = nr_in(c, i);
        if (v->rank != 1 || v->dims[0] != x->dims[1])
            return nr_layer_error(c, "%s must be 1-D with C = %lld values", i == 1 ? "scale" : "B", (long long)x->dims[1]);
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- LayerNormalization (opset 17; accepted from opset 1: onnxruntime defines it in ai.onnx from version 1 with
 * the same meaning, and its transformer optimizer writes it into models of any opset) ---- */

static netrun_status ln_parse(nr_layer_ctx *c, void *params) {
    netrun_norm_params *p = params;
    TRY(read_epsilon(c, p));
    int64_t axis, stash;
    TRY(nr_attr_int(c, "axis", -1, &axis));
    TRY(nr_attr_int(c, "stash_type", 1, &stash));
    if (stash != NETRUN_DTYPE_FLOAT && stash != NETRUN_DTYPE_DOUBLE && stash != NETRUN_DTYPE_FLOAT16 &&
        stash != NETRUN_DTYPE_BFLOAT16)
        return nr_layer_error(c, "stash_type %lld is not a floating-point type", (long long)stash);
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "axis %lld out of range", (long long)axis);
    p->axis = (int)axis; /* resolved against the rank in infer */
    return NETRUN_OK;
}

/* A parameter (Scale or B) must broadcast into the normalized dims X.shape[axis:]. */
static netrun_status ln_check_param(nr_layer_ctx *c, int i, const netrun_value_desc *x, int axis) {
    const netrun_value_desc *v = nr_in(c, i);
    const char *name = i == 1 ? "Scale" : "B";
    int nr = x->rank - axis;
    for (int d = 0; d < v->rank; d++) {
        int xd = x->rank - v->rank + d;
        int64_t want = xd >= 0 ? x->dims[xd] : 1;
        if (xd < axis && v->dims[d] != 1)
            return nr_layer_error(c, "%s dim %d (%lld) reaches before axis %d; it must broadcast to X.shape[%d:]", name,
                                  d, (long long)v->dims[d], axis, axis);
        if (v->dims[d] != 1 && v->dims[d] != want)
            return nr_layer_error(c, "%s shape does not broadcast to the normalized shape (dim %d: %lld vs %lld)", name,
                                  d, (long long)v->dims[d], (long long)want);
    }
    (void)nr;
    return NETRUN_OK;
}

static netrun_status ln_infer(nr_layer_ctx *c, void *params) {
    netrun_norm_params *p = params;
    if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return nr_layer_error(c, "needs inputs X and Scale");
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    TRY(nr_check_same_dtype(c, 0, 1));
    const netrun_value_desc *x = nr_in(c, 0);
    int64_t axis64;
    TRY(nr_attr_int(c, "axis", -1, &axis64));
    int axis;
    TRY(nr_resolve_axis(c, axis64, x->rank, 0, &axis));
    p->axis = axis;
    TRY(ln_check_param(c, 1, x, axis));
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
        TRY(nr_check_same_dtype(c, 0, 2));
        TRY(ln_check_param(c, 2, x, axis));
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    int64_t sdims[NETRUN_MAX_RANK];
    for (int d = 0; d < x->rank; d++) sdims[d] = d < axis ? x->dims[d] : 1;
    /* statistics are float (double for double input), as onnxruntime computes them */
    netrun_dtype st = x->dtype == NETRUN_DTYPE_DOUBLE ? NETRUN_DTYPE_DOUBLE : NETRUN_DTYPE_FLOAT;
    nr_out_set(c, 1, st, x->rank, sdims);
    nr_out_set(c, 2, st, x->rank, sdims);
    return NETRUN_OK;
}

/* ---- GroupNormalization (opset 18: scale/bias per group; opset 21: per channel) ---- */

static netrun_status gn_parse(nr_layer_ctx *c, void *params) {
    netrun_norm_params *p = params;
    TRY(read_epsilon(c, p));
    if (!nr_attr_has(c, "num_groups")) return nr_layer_error(c, "attribute num_groups is required");
    TRY(nr_attr_int(c, "num_groups", 0, &p->num_groups));
    if (p->num_groups < 1) return nr_layer_error(c, "num_groups = %lld must be >= 1", (long long)p->num_groups);
    int64_t stash;
    TRY(nr_attr_int(c, "stash_type", 1, &stash));
    if (stash != NETRUN_DTYPE_FLOAT && stash != NETRUN_DTYPE_DOUBLE && stash != NETRUN_DTYPE_FLOAT16 &&
        stash != NETRUN_DTYPE_BFLOAT16)
        return nr_layer_error(c, "stash_type %lld is not a floating-point type", (long long)stash);
    return NETRUN_OK;
}

static netrun_status gn_infer(nr_layer_ctx *c, void *params) {
    netrun_norm_params *p = params;
    if (nr_in_count(c) < 3 || !nr_in_present(c, 1) || !nr_in_present(c, 2))
        return nr_layer_error(c, "needs inputs X, scale and bias");
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    TRY(nr_check_same_dtype(c, 0, 1));
    TRY(nr_check_same_dtype(c, 0, 2));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 2) return nr_layer_error(c, "X has rank %d; expected [N, C, ...]", x->rank);
    int64_t ch = x->dims[1], g = p->num_groups;
    if (ch % g) return nr_layer_error(c, "the %lld channels do not split into num_groups = %lld groups", (long long)ch,
                                      (long long)g);
    int64_t want = nr_opset(c) >= 21 ? ch : g;
    for (int i = 1; i < 3; i++) {
        const netrun_value_desc *v = nr_in(c, i);
        if (v->rank != 1 || v->dims[0] != want)
            return nr_layer_error(c, "%s must be 1-D with %lld values (one per %s)", i == 1 ? "scale" : "bias",
                                  (long long)want, nr_opset(c) >= 21 ? "channel" : "group");
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- MeanVarianceNormalization: axes in netrun_reduce_params ---- */

static netrun_status mvn_infer(nr_layer_ctx *c, void *params) {
    netrun_reduce_params *p = params;
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    const int64_t *axes;
    int64_t n;
    static const int64_t def_axes[3] = {0, 2, 3};
    TRY(nr_attr_ints(c, "axes", &axes, &n));
    if (!nr_attr_has(c, "axes")) {
        axes = def_axes;
        n = 3;
    }
    if (n > x->rank) return nr_layer_error(c, "axes has %lld values for an input of rank %d", (long long)n, x->rank);
    int seen[NETRUN_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        int a;
        TRY(nr_resolve_axis(c, axes[i], x->rank, 0, &a));
        if (seen[a]) return nr_layer_error(c, "axis %lld appears twice in axes", (long long)axes[i]);
        seen[a] = 1;
    }
    p->n_axes = 0;
    for (int a = 0; a < x->rank; a++)
        if (seen[a]) p->axes[p->n_axes++] = a;
    p->keepdims = 1;
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- LpNormalization ---- */

static netrun_status lpn_parse(nr_layer_ctx *c, void *params) {
    netrun_lpnorm_params *p = params;
    int64_t pv;
    TRY(nr_attr_int(c, "p", 2, &pv));
    if (pv != 1 && pv != 2) return nr_layer_error(c, "p = %lld; only 1 and 2 are defined", (long long)pv);
    p->p = pv;
    return NETRUN_OK;
}

static netrun_status lpn_infer(nr_layer_ctx *c, void *params) {
    netrun_lpnorm_params *p = params;
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 1) return nr_layer_error(c, "input must have rank >= 1, got a scalar");
    int64_t axis;
    TRY(nr_attr_int(c, "axis", -1, &axis));
    TRY(nr_resolve_axis(c, axis, x->rank, 0, &p->axis));
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- LRN ---- */

static netrun_status lrn_parse(nr_layer_ctx *c, void *params) {
    netrun_lrn_params *p = params;
    if (!nr_attr_has(c, "size")) return nr_layer_error(c, "attribute size is required");
    TRY(nr_attr_int(c, "size", 1, &p->size));
    if (p->size < 1) return nr_layer_error(c, "size = %lld must be >= 1", (long long)p->size);
    TRY(nr_attr_float(c, "alpha", 1e-4f, &p->alpha));
    TRY(nr_attr_float(c, "beta", 0.75f, &p->beta));
    TRY(nr_attr_float(c, "bias", 1.0f, &p->bias));
    return NETRUN_OK;
}

static netrun_status lrn_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 3) return nr_layer_error(c, "X has rank %d; expected [N, C, D1, ...] (rank >= 3)", x->rank);
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_norm[] = {
    {"BatchNormalization", "", 1, sizeof(netrun_norm_params), bn_parse, bn_infer, 0},
    {"InstanceNormalization", "", 1, sizeof(netrun_norm_params), in_parse, in_infer, 0},
    {"LayerNormalization", "", 1, sizeof(netrun_norm_params), ln_parse, ln_infer, 0},
    {"GroupNormalization", "", 18, sizeof(netrun_norm_params), gn_parse, gn_infer, 0},
    {"MeanVarianceNormalization", "", 9, sizeof(netrun_reduce_params), NULL, mvn_infer, 0},
    {"LpNormalization", "", 1, sizeof(netrun_lpnorm_params), lpn_parse, lpn_infer, 0},
    {"LRN", "", 1, sizeof(netrun_lrn_params), lrn_parse, lrn_infer, 0},
    {0},
};
