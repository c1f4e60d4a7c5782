/* Op family: softmax (definitions: attribute parsing, validation, shape inference).
 * Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D [prod(d<axis), prod(d>=axis)]
 * and axis defaults to 1; from 13 the op works along one axis (default -1). */
#include "layer.h"
#include "netrun_ops.h"

static netrun_status softmax_parse(nr_layer_ctx *c, void *params) {
    netrun_softmax_params *p = params;
    int coerce = nr_opset(c) < 13;
    int64_t axis;
    netrun_status st = nr_attr_int(c, "axis", coerce ? 1 : -1, &axis);
    if (st != NETRUN_OK) return st;
    if (axis < -NETRUN_MAX_RANK || axis > NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->axis = (int)axis; /* resolved against the rank in infer */
    p->coerce_2d = coerce;
    return NETRUN_OK;
}

static netrun_status softmax_infer(nr_layer_ctx *c, void *params) {
    netrun_softmax_params *p = params;
    netrun_status st = nr_check_dtype(c, 0, NR_DTYPES_FLOAT);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->rank < 1) return nr_layer_error(c, "input must have rank >= 1, got a scalar");
    int axis;
    /* [-r, r-1] in every opset, the 2-D form included */
    st = nr_resolve_axis(c, p->axis, x->rank, 0, &axis);
    if (st != NETRUN_OK) return st;
    p->axis = axis;
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_softmax[] = {
    {"Softmax", "", 1, sizeof(netrun_softmax_params), softmax_parse, softmax_infer, 0},
    {"LogSoftmax", "", 1, sizeof(netrun_softmax_params), softmax_parse, softmax_infer, 0},
    {"Hardmax", "", 1, sizeof(netrun_softmax_params), softmax_parse, softmax_infer, 0},
    {0},
};
