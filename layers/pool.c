/* Op family: pool (definitions: attribute parsing, validation, shape inference). */
#include <string.h>

#include "layer.h"

#define TRY(x)                                   \
    do {                                         \
        netrun_status st_ = (x);                 \
        if (st_ != NETRUN_OK) return st_;        \
    } while (0)

enum { AUTO_PAD_NOTSET, AUTO_PAD_SAME_UPPER, AUTO_PAD_SAME_LOWER, AUTO_PAD_VALID };

#define MAXPOOL_DTYPES (NR_DTYPES_FLOAT | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT8) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT8))

static netrun_status read_list(const nr_layer_ctx *c, const char *name, int64_t min, const int64_t **v, int64_t *n) {
    TRY(nr_attr_ints(c, name, v, n));
    if (*n > 2 * NETRUN_MAX_SPATIAL)
        return nr_layer_error(c, "attribute %s has %lld values; at most %d spatial dims are supported", name,
                              (long long)*n, NETRUN_MAX_SPATIAL);
    for (int64_t i = 0; i < *n; i++) /* bounded above too, so that the shape arithmetic below stays in int64 */
        if ((*v)[i] < min || (*v)[i] > INT32_MAX)
            return nr_layer_error(c, "attribute %s[%lld] = %lld must be from %lld to %d (too large)", name,
                                  (long long)i, (long long)(*v)[i], (long long)min, INT32_MAX);
    return NETRUN_OK;
}

/* Parse everything; with x == NULL only validates attributes (parse), else also resolves pads against the
 * input shape and writes the output dims (infer). Infer re-reads the attributes so a repeated infer starts
 * from the model's values. */
static netrun_status pool_resolve(const nr_layer_ctx *c, netrun_pool_params *p, int is_max,
                                  const netrun_value_desc *x, int64_t *out_dims) {
    const char *ap;
    int auto_pad;
    TRY(nr_attr_string(c, "auto_pad", "NOTSET", &ap));
    if (!strcmp(ap, "NOTSET")) auto_pad = AUTO_PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) auto_pad = AUTO_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) auto_pad = AUTO_PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) auto_pad = AUTO_PAD_VALID;
    else return nr_layer_error(c, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    const int64_t *k, *s, *d, *pads;
    int64_t nk, nst, nd, np, v;
    TRY(read_list(c, "kernel_shape", 1, &k, &nk));
    TRY(read_list(c, "strides", 1, &s, &nst));
    TRY(read_list(c, "dilations", 1, &d, &nd));
    TRY(read_list(c, "pads", 0, &pads, &np));
    if (nk == 0) return nr_layer_error(c, "attribute kernel_shape is required");
    if (nk > NETRUN_MAX_SPATIAL)
        return nr_layer_error(c, "kernel_shape has %lld dims; at most %d spatial dims are supported", (long long)nk,
                              NETRUN_MAX_SPATIAL);
    if (nst && nst != nk) return nr_layer_error(c, "strides has %lld values; kernel_shape has %lld", (long long)nst, (long long)nk);
    if (nd && nd != nk) return nr_layer_error(c, "dilations has %lld values; kernel_shape has %lld", (long long)nd, (long long)nk);
    if (np && np != 2 * nk)
        return nr_layer_error(c, "pads has %lld values; expected %lld (begin and end per spatial dim)", (long long)np,
                              (long long)(2 * nk));
    TRY(nr_attr_int(c, "ceil_mode", 0, &v));
    if (v != 0 && v != 1) return nr_layer_error(c, "ceil_mode must be 0 or 1, got %lld", (long long)v);
    p->ceil_mode = (int)v;
    if (is_max) {
        TRY(nr_attr_int(c, "storage_order", 0, &v));
        if (v != 0 && v != 1) return nr_layer_error(c, "storage_order must be 0 or 1, got %lld", (long long)v);
        p->storage_order = (int)v;
    } else {
        TRY(nr_attr_int(c, "count_include_pad", 0, &v));
        if (v != 0 && v != 1) return nr_layer_error(c, "count_include_pad must be 0 or 1, got %lld", (long long)v);
        p->count_include_pad = (int)v;
    }
    int ns = (int)nk;
    p->n_spatial = ns;
    for (int i = 0; i < NETRUN_MAX_SPATIAL; i++) {
        p->kernel[i] = i < ns ? k[i] : 1;
        p->strides[i] = i < ns && nst ? s[i] : 1;
        p->dilations[i] = i < ns && nd ? d[i] : 1;
        p->pads_begin[i] = i < ns && np && auto_pad == AUTO_PAD_NOTSET ? pads[i] : 0;
        p->pads_end[i] = i < ns && np && auto_pad == AUTO_PAD_NOTSET ? pads[ns + i] : 0;
    }
    if (!x) return NETRUN_OK;
    if (x->rank != ns + 2)
        return nr_layer_error(c, "input X has rank %d but kernel_shape has %d dims (expected rank %d)", x->rank, ns,
                              ns + 2);
    out_dims[0] = x->dims[0];
    out_dims[1] = x->dims[1];
    for (int i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], st = p->strides[i], dk = (p->kernel[i] - 1) * p->dilations[i] + 1, out;
        if (p->pads_begin[i] >= dk || p->pads_end[i] >= dk)
            return nr_layer_error(c, "pads of spatial dim %d (%lld, %lld) must be smaller than the kernel %lld", i,
                                  (long long)p->pads_begin[i], (long long)p->pads_end[i], (long long)dk);
        if (auto_pad == AUTO_PAD_SAME_UPPER || auto_pad == AUTO_PAD_SAME_LOWER) {
            out = (in + st - 1) / st;
            int64_t need = (out - 1) * st + dk - in;
            if (need < 0) need = 0;
            p->pads_begin[i] = auto_pad == AUTO_PAD_SAME_LOWER ? (need + 1) / 2 : need / 2;
            p->pads_end[i] = need - p->pads_begin[i];
        } else {
            int64_t span = in + p->pads_begin[i] + p->pads_end[i] - dk;
            if (span < 0)
                return nr_layer_error(c, "spatial dim %d: input %lld plus pads is smaller than the kernel %lld", i,
                                      (long long)in, (long long)dk);
            out = (p->ceil_mode ? (span + st - 1) / st : span / st) + 1;
            /* the last window must start inside the input or its begin padding */
            if (p->ceil_mode && (out - 1) * st >= in + p->pads_begin[i]) out--;
        }
        out_dims[2 + i] = out;
    }
    return NETRUN_OK;
}

static netrun_status maxpool_parse(nr_layer_ctx *c, void *params) { return pool_resolve(c, params, 1, NULL, NULL); }
static netrun_status avgpool_parse(nr_layer_ctx *c, void *params) { return pool_resolve(c, params, 0, NULL, NULL); }

static netrun_status pool_infer_common(nr_layer_ctx *c, netrun_pool_params *p, int is_max) {
    if (nr_in_count(c) < 1 || !nr_in_present(c, 0)) return nr_layer_error(c, "needs input X");
    TRY(nr_check_dtype(c, 0, is_max ? MAXPOOL_DTYPES : NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    int64_t dims[NETRUN_MAX_RANK];
    TRY(pool_resolve(c, p, is_max, x, dims));
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    if (is_max && nr_out_count(c) > 1) {
        if (x->dtype != NETRUN_DTYPE_FLOAT && x->dtype != NETRUN_DTYPE_FLOAT16 && x->dtype != NETRUN_DTYPE_DOUBLE &&
            nr_out_present(c, 1))
            return nr_layer_error(c, "the Indices output is only defined for floating-point inputs");
        nr_out_set(c, 1, NETRUN_DTYPE_INT64, x->rank, dims);
    }
    return NETRUN_OK;
}

static netrun_status maxpool_infer(nr_layer_ctx *c, void *params) { return pool_infer_common(c, params, 1); }

/* LpPool: the average pool's geometry plus p (opset < 11 had a float p; its value is used as an integer). */
static netrun_status lp_read_p(const nr_layer_ctx *c, netrun_pool_params *p) {
    int64_t v = 2;
    if (nr_opset(c) < 11 && nr_attr_has(c, "p")) {
        float f;
        TRY(nr_attr_float(c, "p", 2.0f, &f));
        if (!(f >= 1.0f && f <= 1e6f) || f != (float)(int64_t)f)
            return nr_layer_error(c, "p = %g must be a positive integer", (double)f);
        v = (int64_t)f;
    } else {
        TRY(nr_attr_int(c, "p", 2, &v));
    }
    if (v < 1) return nr_layer_error(c, "p = %lld must be >= 1", (long long)v);
    p->p = v;
    return NETRUN_OK;
}

static netrun_status lppool_parse(nr_layer_ctx *c, void *params) {
    TRY(pool_resolve(c, params, 0, NULL, NULL));
    return lp_read_p(c, params);
}
static netrun_status lppool_infer(nr_layer_ctx *c, void *params) {
    TRY(pool_infer_common(c, params, 0));
    return lp_read_p(c, params);
}
static netrun_status avgpool_infer(nr_layer_ctx *c, void *params) { return pool_infer_common(c, params, 0); }

static netrun_status global_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    if (nr_in_count(c) < 1 || !nr_in_present(c, 0)) return nr_layer_error(c, "needs input X");
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 2) return nr_layer_error(c, "input X has rank %d; expected [N, C, spatial...]", x->rank);
    int64_t dims[NETRUN_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = i < 2 ? x->dims[i] : 1;
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_pool[] = {
    {"MaxPool", "", 1, sizeof(netrun_pool_params), maxpool_parse, maxpool_infer, 0},
    {"AveragePool", "", 1, sizeof(netrun_pool_params), avgpool_parse, avgpool_infer, 0},
    {"LpPool", "", 2, sizeof(netrun_pool_params), lppool_parse, lppool_infer, 0},
    {"GlobalAveragePool", "", 1, 0, NULL, global_infer, 0},
    {"GlobalMaxPool", "", 1, 0, NULL, global_infer, 0},
    {0},
};
