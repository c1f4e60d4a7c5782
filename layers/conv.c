/* Op family: conv (definitions: attribute parsing, validation, shape inference). */
#include <stdint.h>
#include <string.h>

#include "layer.h"

enum { AUTO_PAD_NOTSET, AUTO_PAD_SAME_UPPER, AUTO_PAD_SAME_LOWER, AUTO_PAD_VALID };

/* The raw attributes. Infer reads them again rather than trusting params, so that a repeated infer (shapes
 * changing at run time) always starts from the model's attributes. */
typedef struct conv_attrs {
    int auto_pad;
    int64_t group;
    const int64_t *kernel, *strides, *dilations, *pads, *out_pad, *out_shape;
    int64_t n_kernel, n_strides, n_dilations, n_pads, n_out_pad, n_out_shape;
} conv_attrs;

#define TRY(x)                                   \
    do {                                         \
        netrun_status st_ = (x);                 \
        if (st_ != NETRUN_OK) return st_;        \
    } while (0)

static netrun_status check_list(const nr_layer_ctx *c, const char *name, const int64_t *v, int64_t n,
                                int64_t min) {
    if (n > 2 * NETRUN_MAX_SPATIAL + 2)
        return nr_layer_error(c, "attribute %s has %lld values; at most %d spatial dims are supported", name,
                              (long long)n, NETRUN_MAX_SPATIAL);
    for (int64_t i = 0; i < n; i++) /* bounded above too, so that the shape arithmetic stays in int64 */
        if (v[i] < min || v[i] > INT32_MAX)
            return nr_layer_error(c, "attribute %s[%lld] = %lld must be from %lld to %d (too large otherwise)", name,
                                  (long long)i, (long long)v[i], (long long)min, INT32_MAX);
    return NETRUN_OK;
}

static netrun_status read_attrs(const nr_layer_ctx *c, conv_attrs *a, int transpose) {
    memset(a, 0, sizeof *a);
    const char *ap = NULL;
    TRY(nr_attr_string(c, "auto_pad", "NOTSET", &ap));
    if (!strcmp(ap, "NOTSET")) a->auto_pad = AUTO_PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) a->auto_pad = AUTO_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) a->auto_pad = AUTO_PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) a->auto_pad = AUTO_PAD_VALID;
    else return nr_layer_error(c, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    TRY(nr_attr_int(c, "group", 1, &a->group));
    if (a->group < 1) return nr_layer_error(c, "group = %lld must be >= 1", (long long)a->group);
    TRY(nr_attr_ints(c, "kernel_shape", &a->kernel, &a->n_kernel));
    TRY(nr_attr_ints(c, "strides", &a->strides, &a->n_strides));
    TRY(nr_attr_ints(c, "dilations", &a->dilations, &a->n_dilations));
    TRY(nr_attr_ints(c, "pads", &a->pads, &a->n_pads));
    TRY(check_list(c, "kernel_shape", a->kernel, a->n_kernel, 1));
    TRY(check_list(c, "strides", a->strides, a->n_strides, 1));
    TRY(check_list(c, "dilations", a->dilations, a->n_dilations, 1));
    TRY(check_list(c, "pads", a->pads, a->n_pads, 0));
    if (a->n_pads % 2) return nr_layer_error(c, "pads has %lld values; it needs 2 per spatial dim", (long long)a->n_pads);
    if (a->n_kernel > NETRUN_MAX_SPATIAL)
        return nr_layer_error(c, "kernel_shape has %lld dims; at most %d spatial dims are supported",
                              (long long)a->n_kernel, NETRUN_MAX_SPATIAL);
    if (transpose) {
        TRY(nr_attr_ints(c, "output_padding", &a->out_pad, &a->n_out_pad));
        TRY(nr_attr_ints(c, "output_shape", &a->out_shape, &a->n_out_shape));
        TRY(check_list(c, "output_padding", a->out_pad, a->n_out_pad, 0));
        TRY(check_list(c, "output_shape", a->out_shape, a->n_out_shape, 0));
    }
    return NETRUN_OK;
}

static netrun_status conv_parse_common(nr_layer_ctx *c, void *params, int transpose) {
    netrun_conv_params *p = params;
    conv_attrs a;
    TRY(read_attrs(c, &a, transpose));
    p->group = a.group;
    p->n_spatial = (int)a.n_kernel;
    for (int i = 0; i < NETRUN_MAX_SPATIAL; i++) p->strides[i] = p->dilations[i] = 1;
    for (int64_t i = 0; i < a.n_kernel; i++) p->kernel[i] = a.kernel[i];
    return NETRUN_OK;
}

static netrun_status conv_parse(nr_layer_ctx *c, void *params) { return conv_parse_common(c, params, 0); }
static netrun_status convt_parse(nr_layer_ctx *c, void *params) { return conv_parse_common(c, params, 1); }

/* Shared checks of X, W, B and the per-dim attribute lists; fills kernel, strides, dilations, pads
 * (explicit ones), group, has_bias. */
static netrun_status conv_common_infer(nr_layer_ctx *c, netrun_conv_params *p, const conv_attrs *a,
                                       int transpose) {
    const netrun_value_desc *x = nr_in(c, 0), *w = nr_in(c, 1);
    if (nr_in_count(c) < 2 || !nr_in_present(c, 1)) return nr_layer_error(c, "needs inputs X and W");
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    TRY(nr_check_same_dtype(c, 0, 1));
    if (x->rank < 3 || x->rank > 2 + NETRUN_MAX_SPATIAL)
        return nr_layer_error(c, "input X has rank %d; expected [N, C, spatial...] with 1 to %d spatial dims",
                              x->rank, NETRUN_MAX_SPATIAL);
    if (w->rank != x->rank)
        return nr_layer_error(c, "weight W has rank %d but X has rank %d; they must match", w->rank, x->rank);
    int ns = x->rank - 2;
    p->n_spatial = ns;
    p->group = a->group;
    if (a->n_kernel && a->n_kernel != ns)
        return nr_layer_error(c, "kernel_shape has %lld dims but X has %d spatial dims", (long long)a->n_kernel, ns);
    if (a->n_strides && a->n_strides != ns)
        return nr_layer_error(c, "strides has %lld values but X has %d spatial dims", (long long)a->n_strides, ns);
    if (a->n_dilations && a->n_dilations != ns)
        return nr_layer_error(c, "dilations has %lld values but X has %d spatial dims", (long long)a->n_dilations, ns);
    if (a->n_pads && a->n_pads != 2 * ns)
        return nr_layer_error(c, "pads has %lld values; expected %d (begin and end per spatial dim)",
                              (long long)a->n_pads, 2 * ns);
    for (int i = 0; i < NETRUN_MAX_SPATIAL; i++) {
        p->kernel[i] = 1;
        p->strides[i] = p->dilations[i] = 1;
        p->pads_begin[i] = p->pads_end[i] = p->output_padding[i] = 0;
    }
    for (int i = 0; i < ns; i++) {
        int64_t wk = w->dims[2 + i];
        if (a->n_kernel && a->kernel[i] != wk)
            return nr_layer_error(c, "kernel_shape[%d] = %lld does not match W's dim %d (%lld)", i,
                                  (long long)a->kernel[i], 2 + i, (long long)wk);
        if (wk < 1) return nr_layer_error(c, "W has an empty kernel dim %d", 2 + i);
        p->kernel[i] = wk;
        if (a->n_strides) p->strides[i] = a->strides[i];
        if (a->n_dilations) p->dilations[i] = a->dilations[i];
        if (a->n_pads && a->auto_pad == AUTO_PAD_NOTSET) {
            p->pads_begin[i] = a->pads[i];
            p->pads_end[i] = a->pads[ns + i];
        }
    }
    int64_t cin = x->dims[1];
    if (!transpose) {
        /* by division: W dim 1 times a huge group would overflow */
        if (cin % a->group || cin / a->group != w->dims[1])
            return nr_layer_error(c, "X has %lld channels but W expects W dim 1 (%lld) x group (%lld) of them",
                                  (long long)cin, (long long)w->dims[1], (long long)a->group);
        if (w->dims[0] % a->group)
            return nr_layer_error(c, "W has %lld output channels, not a multiple of group %lld",
                                  (long long)w->dims[0], (long long)a->group);
    } else {
        if (cin != w->dims[0])
            return nr_layer_error(c, "X has %lld channels but W dim 0 is %lld; they must match", (long long)cin,
                                  (long long)w->dims[0]);
        if (cin % a->group)
            return nr_layer_error(c, "X has %lld channels, not a multiple of group %lld", (long long)cin,
                                  (long long)a->group);
        /* the output channels, W dim 1 x group (group is not bounded by X's channels when there are none) */
        if (w->dims[1] && a->group > NR_MAX_DIM / w->dims[1])
            return nr_layer_error(c, "W dim 1 (%lld) x group (%lld) output channels is over the limit of %lld",
                                  (long long)w->dims[1], (long long)a->group, (long long)NR_MAX_DIM);
    }
    int64_t m = transpose ? w->dims[1] * a->group : w->dims[0];
    p->has_bias = nr_in_count(c) > 2 && nr_in_present(c, 2);
    if (p->has_bias) {
        const netrun_value_desc *b = nr_in(c, 2);
        TRY(nr_check_same_dtype(c, 0, 2));
        if (b->rank != 1 || b->dims[0] != m)
            return nr_layer_error(c, "bias B must be 1-D with %lld values (output channels)", (long long)m);
    }
    return NETRUN_OK;
}

/* Check the fused "+ Z" input a fusion pass may have added (the last input): same dtype and shape as Y. */
static netrun_status check_sum(nr_layer_ctx *c, const netrun_conv_params *p, int rank, const int64_t *dims) {
    if (!p->has_sum) return NETRUN_OK;
    int zi = nr_in_count(c) - 1;
    const netrun_value_desc *z = nr_in(c, zi);
    if (zi < 2 || z->rank != rank || memcmp(z->dims, dims, sizeof(int64_t) * (size_t)rank))
        return nr_layer_error(c, "the fused sum input must have the output's shape");
    return nr_check_same_dtype(c, 0, zi);
}

/* Check the squeeze-excite scale the CPU nChw16c pass may have folded in (input 3, before Z): float32
 * [N or 1, C, 1, 1]. */
static netrun_status check_scale(nr_layer_ctx *c, const netrun_conv_params *p) {
    if (!p->src_scale) return NETRUN_OK;
    const netrun_value_desc *x = nr_in(c, 0), *sc = nr_in_count(c) > 3 + p->has_sum ? nr_in(c, 3) : NULL;
    if (!sc || sc->dtype != NETRUN_DTYPE_FLOAT || sc->rank != 4 || x->rank != 4 ||
        (sc->dims[0] != 1 && sc->dims[0] != x->dims[0]) || sc->dims[1] != x->dims[1] || sc->dims[2] != 1 ||
        sc->dims[3] != 1)
        return nr_layer_error(c, "the folded scale input must be float32 [N or 1, C, 1, 1]");
    return NETRUN_OK;
}

static netrun_status conv_infer(nr_layer_ctx *c, void *params) {
    netrun_conv_params *p = params;
    conv_attrs a;
    TRY(read_attrs(c, &a, 0));
    TRY(conv_common_infer(c, p, &a, 0));
    const netrun_value_desc *x = nr_in(c, 0), *w = nr_in(c, 1);
    int ns = p->n_spatial;
    int64_t dims[NETRUN_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = w->dims[0];
    for (int i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], s = p->strides[i];
        int64_t dk = (p->kernel[i] - 1) * p->dilations[i] + 1;
        if (a.auto_pad == AUTO_PAD_SAME_UPPER || a.auto_pad == AUTO_PAD_SAME_LOWER) {
            int64_t target = (in + s - 1) / s;
            int64_t need = (target - 1) * s + dk - in;
            if (need < 0) need = 0;
            p->pads_begin[i] = a.auto_pad == AUTO_PAD_SAME_LOWER ? (need + 1) / 2 : need / 2;
            p->pads_end[i] = need - p->pads_begin[i];
        } else if (a.auto_pad == AUTO_PAD_VALID) {
            p->pads_begin[i] = p->pads_end[i] = 0;
        }
        int64_t span = in + p->pads_begin[i] + p->pads_end[i] - dk;
        if (span < 0)
            return nr_layer_error(c, "spatial dim %d: input %lld plus pads %lld+%lld is smaller than the dilated "
                                  "kernel %lld", i, (long long)in, (long long)p->pads_begin[i],
                                  (long long)p->pads_end[i], (long long)dk);
        dims[2 + i] = span / s + 1;
    }
    TRY(check_scale(c, p));
    TRY(check_sum(c, p, x->rank, dims));
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    return NETRUN_OK;
}

static netrun_status convt_infer(nr_layer_ctx *c, void *params) {
    netrun_conv_params *p = params;
    conv_attrs a;
    TRY(read_attrs(c, &a, 1));
    TRY(conv_common_infer(c, p, &a, 1));
    const netrun_value_desc *x = nr_in(c, 0), *w = nr_in(c, 1);
    int ns = p->n_spatial;
    if (a.n_out_pad && a.n_out_pad != ns)
        return nr_layer_error(c, "output_padding has %lld values but X has %d spatial dims", (long long)a.n_out_pad, ns);
    if (a.n_out_shape && a.n_out_shape != ns && a.n_out_shape != ns + 2)
        return nr_layer_error(c, "output_shape has %lld values; expected %d (spatial dims)", (long long)a.n_out_shape, ns);
    const int64_t *os = a.n_out_shape == ns + 2 ? a.out_shape + 2 : a.out_shape;
    int64_t dims[NETRUN_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = w->dims[1] * p->group;
    for (int i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], s = p->strides[i], adj = a.n_out_pad ? a.out_pad[i] : 0;
        int64_t dk = (p->kernel[i] - 1) * p->dilations[i] + 1;
        if (adj >= s && adj >= p->dilations[i])
            return nr_layer_error(c, "output_padding[%d] = %lld must be smaller than the stride or the dilation", i,
                                  (long long)adj);
        p->output_padding[i] = adj;
        int64_t full = s * (in - 1) + adj + dk; /* output size without padding */
        int64_t out;
        if (a.n_out_shape || a.auto_pad == AUTO_PAD_SAME_UPPER || a.auto_pad == AUTO_PAD_SAME_LOWER) {
            out = a.n_out_shape ? os[i] : in * s;
            int64_t total = full - out;
            if (total < 0) total = 0;
            /* the spec's split (onnxruntime agrees): the odd unit goes to the end for SAME_UPPER, to the begin
             * otherwise */
            if (a.auto_pad == AUTO_PAD_SAME_UPPER) {
                p->pads_begin[i] = total / 2;
                p->pads_end[i] = total - total / 2;
            } else {
                p->pads_begin[i] = total - total / 2;
                p->pads_end[i] = total / 2;
            }
        } else if (a.auto_pad == AUTO_PAD_VALID) {
            p->pads_begin[i] = p->pads_end[i] = 0;
        }
        out = full - p->pads_begin[i] - p->pads_end[i];
        if (out < 0)
            return nr_layer_error(c, "spatial dim %d: pads %lld+%lld exceed the output size %lld", i,
                                  (long long)p->pads_begin[i], (long long)p->pads_end[i], (long long)full);
        if (a.n_out_shape && out != os[i]) {
            /* output_shape larger than the full size: the extra is padded on the end */
            if (os[i] < out) return nr_layer_error(c, "output_shape[%d] = %lld is not reachable", i, (long long)os[i]);
            p->pads_end[i] -= os[i] - out;
            out = os[i];
        }
        dims[2 + i] = out;
    }
    TRY(check_sum(c, p, x->rank, dims));
    nr_out_set(c, 0, x->dtype, x->rank, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_conv[] = {
    {"Conv", "", 1, sizeof(netrun_conv_params), conv_parse, conv_infer, 0},
    {"ConvTranspose", "", 1, sizeof(netrun_conv_params), convt_parse, convt_infer, 0},
    {0},
};
