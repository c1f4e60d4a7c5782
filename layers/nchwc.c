/* Internal ops of the CPU nChw16c pass (runtime/optimize.c), domain "com.netrun": never in a user's model.
 * ReorderNCHWc moves a 4-D float tensor with C % 16 == 0 between NCHW and nChw16c; the dims stay the NCHW
 * ones (the layout is the pass's business, no shape changes). GlobalAveragePoolNCHWc is GlobalAveragePool
 * reading an nChw16c X ([N,C,1,1] Y is the same memory in both layouts). */
#include "layer.h"
#include "netrun_ops.h"

static netrun_status nchwc_check(nr_layer_ctx *c) {
    if (nr_in_count(c) != 1 || !nr_in_present(c, 0)) return nr_layer_error(c, "needs exactly one input");
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->dtype != NETRUN_DTYPE_FLOAT) return nr_layer_error(c, "input must be float32");
    if (x->rank != 4 || x->dims[1] % 16) return nr_layer_error(c, "input must be 4-D with C a multiple of 16");
    return NETRUN_OK;
}

static netrun_status reorder_parse(nr_layer_ctx *c, void *params) {
    netrun_reorder_nchwc_params *p = params;
    int64_t t;
    netrun_status st = nr_attr_int(c, "to_blocked", 1, &t);
    if (st != NETRUN_OK) return st;
    if (t != 0 && t != 1) return nr_layer_error(c, "to_blocked must be 0 or 1");
    p->to_blocked = (int)t;
    return NETRUN_OK;
}

static netrun_status reorder_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    netrun_status st = nchwc_check(c);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

static netrun_status gap_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    netrun_status st = nchwc_check(c);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    int64_t dims[4] = {x->dims[0], x->dims[1], 1, 1};
    nr_out_set(c, 0, x->dtype, 4, dims);
    return NETRUN_OK;
}

/* MulChannelNCHWc(X, S): X nChw16c [N,C,H,W] times S plain [N or 1, C, 1, 1] (squeeze-excite scaling). */
static netrun_status mulch_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    if (nr_in_count(c) != 2 || !nr_in_present(c, 0) || !nr_in_present(c, 1)) return nr_layer_error(c, "needs X and S");
    const netrun_value_desc *x = nr_in(c, 0), *s = nr_in(c, 1);
    if (x->dtype != NETRUN_DTYPE_FLOAT || s->dtype != NETRUN_DTYPE_FLOAT) return nr_layer_error(c, "inputs must be float32");
    if (x->rank != 4 || x->dims[1] % 16) return nr_layer_error(c, "X must be 4-D with C a multiple of 16");
    if (s->rank != 4 || (s->dims[0] != x->dims[0] && s->dims[0] != 1) || s->dims[1] != x->dims[1] || s->dims[2] != 1 ||
        s->dims[3] != 1)
        return nr_layer_error(c, "S must be [N or 1, C, 1, 1] of X");
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- the CUDA float16 region pass's internal ops (domain "com.netrun", see netrun_ops.h) ---- */

static netrun_status reorder_nhwc_parse(nr_layer_ctx *c, void *params) {
    netrun_reorder_nhwc_params *p = params;
    int64_t t;
    netrun_status st = nr_attr_int(c, "to_nhwc", 1, &t);
    if (st != NETRUN_OK) return st;
    if (t != 0 && t != 1) return nr_layer_error(c, "to_nhwc must be 0 or 1");
    p->to_nhwc = (int)t;
    return NETRUN_OK;
}

static netrun_status nhwc_check(nr_layer_ctx *c, netrun_dtype want) {
    if (nr_in_count(c) != 1 || !nr_in_present(c, 0)) return nr_layer_error(c, "needs exactly one input");
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->dtype != want) return nr_layer_error(c, "input must be %s", want == NETRUN_DTYPE_FLOAT ? "float32" : "float16");
    if (x->rank != 4) return nr_layer_error(c, "input must be 4-D");
    return NETRUN_OK;
}

static netrun_status reorder_nhwc_infer(nr_layer_ctx *c, void *params) {
    const netrun_reorder_nhwc_params *p = params;
    netrun_status st = nhwc_check(c, p->to_nhwc ? NETRUN_DTYPE_FLOAT : NETRUN_DTYPE_FLOAT16);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, p->to_nhwc ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT, x->rank, x->dims);
    return NETRUN_OK;
}

static netrun_status gap_nhwc_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    netrun_status st = nhwc_check(c, NETRUN_DTYPE_FLOAT16);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0);
    int64_t dims[4] = {x->dims[0], x->dims[1], 1, 1};
    nr_out_set(c, 0, x->dtype, 4, dims);
    return NETRUN_OK;
}

/* MulChannelNHWC(X, S): float16 NHWC X [N,C,H,W] times float16 S [N or 1, C, 1, 1] (squeeze-excite). */
static netrun_status mulch_nhwc_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    if (nr_in_count(c) != 2 || !nr_in_present(c, 0) || !nr_in_present(c, 1)) return nr_layer_error(c, "needs X and S");
    const netrun_value_desc *x = nr_in(c, 0), *s = nr_in(c, 1);
    if (x->dtype != NETRUN_DTYPE_FLOAT16 || s->dtype != NETRUN_DTYPE_FLOAT16) return nr_layer_error(c, "inputs must be float16");
    if (x->rank != 4 || s->rank != 4 || (s->dims[0] != x->dims[0] && s->dims[0] != 1) || s->dims[1] != x->dims[1] ||
        s->dims[2] != 1 || s->dims[3] != 1)
        return nr_layer_error(c, "X must be 4-D and S [N or 1, C, 1, 1] of X");
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ConcatNHWC(X0, X1, ...): float16 NHWC inputs [N,Ci,H,W] joined on channels, float16 NHWC [N,sum Ci,H,W]. */
static netrun_status concat_nhwc_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    int n = nr_in_count(c);
    if (n < 1) return nr_layer_error(c, "needs inputs");
    const netrun_value_desc *x0 = nr_in(c, 0);
    int64_t dims[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d absent", i);
        const netrun_value_desc *x = nr_in(c, i);
        if (x->dtype != NETRUN_DTYPE_FLOAT16 || x->rank != 4 || x->dims[0] != x0->dims[0] || x->dims[2] != x0->dims[2] ||
            x->dims[3] != x0->dims[3])
            return nr_layer_error(c, "inputs must be float16 4-D with the same N, H, W");
        dims[1] += x->dims[1];
    }
    dims[0] = x0->dims[0];
    dims[2] = x0->dims[2];
    dims[3] = x0->dims[3];
    nr_out_set(c, 0, NETRUN_DTYPE_FLOAT16, 4, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_nchwc[] = {
    {"ConcatNHWC", "com.netrun", 1, 0, NULL, concat_nhwc_infer, 0},
    {"MulChannelNHWC", "com.netrun", 1, 0, NULL, mulch_nhwc_infer, 0},
    {"ReorderNHWC", "com.netrun", 1, sizeof(netrun_reorder_nhwc_params), reorder_nhwc_parse, reorder_nhwc_infer, 0},
    {"GlobalAveragePoolNHWC", "com.netrun", 1, 0, NULL, gap_nhwc_infer, 0},
    {"MulChannelNCHWc", "com.netrun", 1, 0, NULL, mulch_infer, 0},
    {"ReorderNCHWc", "com.netrun", 1, sizeof(netrun_reorder_nchwc_params), reorder_parse, reorder_infer, 0},
    {"GlobalAveragePoolNCHWc", "com.netrun", 1, 0, NULL, gap_infer, 0},
    {0},
};
