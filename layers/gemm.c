/* Op family: gemm (definitions: attribute parsing, validation, shape inference). */
#include <string.h>

#include "layer.h"

#define TRY(x)                                   \
    do {                                         \
        netrun_status st_ = (x);                 \
        if (st_ != NETRUN_OK) return st_;        \
    } while (0)

#define GEMM_DTYPES (NR_DTYPES_FLOAT | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64) | \
                     NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT64))

static netrun_status gemm_parse(nr_layer_ctx *c, void *params) {
    netrun_gemm_params *p = params;
    int64_t ta, tb;
    TRY(nr_attr_float(c, "alpha", 1.0f, &p->alpha));
    TRY(nr_attr_float(c, "beta", 1.0f, &p->beta));
    TRY(nr_attr_int(c, "transA", 0, &ta));
    TRY(nr_attr_int(c, "transB", 0, &tb));
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
        return nr_layer_error(c, "transA/transB must be 0 or 1 (got %lld, %lld)", (long long)ta, (long long)tb);
    p->trans_a = (int)ta;
    p->trans_b = (int)tb;
    if (nr_attr_has(c, "broadcast")) {
        int64_t bc;
        TRY(nr_attr_int(c, "broadcast", 0, &bc)); /* opset < 7 only; 7+ always broadcasts C */
    }
    return NETRUN_OK;
}

static netrun_status gemm_infer(nr_layer_ctx *c, void *params) {
    netrun_gemm_params *p = params;
    int nin = nr_in_count(c);
    if (nin < 2 || !nr_in_present(c, 0) || !nr_in_present(c, 1)) return nr_layer_error(c, "needs inputs A and B");
    TRY(nr_check_dtype(c, 0, GEMM_DTYPES));
    TRY(nr_check_same_dtype(c, 0, 1));
    const netrun_value_desc *a = nr_in(c, 0), *b = nr_in(c, 1);
    if (a->rank != 2 || b->rank != 2)
        return nr_layer_error(c, "A and B must be 2-D (got ranks %d and %d)", a->rank, b->rank);
    int64_t m = p->trans_a ? a->dims[1] : a->dims[0], k = p->trans_a ? a->dims[0] : a->dims[1];
    int64_t kb = p->trans_b ? b->dims[1] : b->dims[0], n = p->trans_b ? b->dims[0] : b->dims[1];
    if (k != kb)
        return nr_layer_error(c, "inner dims differ: A%s is [%lld, %lld], B%s is [%lld, %lld]", p->trans_a ? "^T" : "",
                              (long long)m, (long long)k, p->trans_b ? "^T" : "", (long long)kb, (long long)n);
    p->has_c = nin > 2 && nr_in_present(c, 2);
    if (!p->has_c && nr_opset(c) < 11) return nr_layer_error(c, "input C is required before opset 11");
    if (p->has_c) {
        const netrun_value_desc *cc = nr_in(c, 2);
        TRY(nr_check_same_dtype(c, 0, 2));
        int64_t want[2] = {m, n};
        if (cc->rank > 2) return nr_layer_error(c, "C has rank %d; it must broadcast to [M, N]", cc->rank);
        for (int i = 0; i < cc->rank; i++) {
            int64_t d = cc->dims[i], w = want[2 - cc->rank + i];
            if (d != 1 && d != w)
                return nr_layer_error(c, "C dim %d is %lld; it must be 1 or %lld to broadcast to [%lld, %lld]", i,
                                      (long long)d, (long long)w, (long long)m, (long long)n);
        }
    }
    int64_t dims[2] = {m, n};
    nr_out_set(c, 0, a->dtype, 2, dims);
    return NETRUN_OK;
}

static netrun_status matmul_infer(nr_layer_ctx *c, void *params) {
    (void)params;
    if (nr_in_count(c) < 2 || !nr_in_present(c, 0) || !nr_in_present(c, 1))
        return nr_layer_error(c, "needs inputs A and B");
    TRY(nr_check_dtype(c, 0, GEMM_DTYPES));
    TRY(nr_check_same_dtype(c, 0, 1));
    const netrun_value_desc *a = nr_in(c, 0), *b = nr_in(c, 1);
    if (a->rank < 1 || b->rank < 1) return nr_layer_error(c, "MatMul operands must have rank >= 1 (got %d and %d)",
                                                          a->rank, b->rank);
    int64_t k = a->dims[a->rank - 1], kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    if (k != kb)
        return nr_layer_error(c, "inner dims differ: A's last dim is %lld, B's %s dim is %lld", (long long)k,
                              b->rank == 1 ? "only" : "second-to-last", (long long)kb);
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0, r;
    int64_t dims[NETRUN_MAX_RANK + 2];
    TRY(nr_broadcast_shapes(c, ra, a->dims, rb, b->dims, &r, dims));
    if (a->rank >= 2) dims[r++] = a->dims[a->rank - 2];
    if (b->rank >= 2) dims[r++] = b->dims[b->rank - 1];
    if (r > NETRUN_MAX_RANK) return nr_layer_error(c, "output rank %d exceeds %d", r, NETRUN_MAX_RANK);
    nr_out_set(c, 0, a->dtype, r, dims);
    return NETRUN_OK;
}

/* MatMulBias (domain com.netrun): the graph passes' MatMul(A, B) + Add(bias) [+ Relu / tanh Gelu] as one node
 * (runtime/opt_transformer.c), never in a user's model. Attribute activation: "" (none), "Relu" or "GeluTanh".
 * An optional 4th input R of Y's shape is a residual Add after it (Y = A B + bias + R), without an activation. */
static netrun_status mmbias_parse(nr_layer_ctx *c, void *params) {
    netrun_gemm_params *p = params;
    const char *act;
    TRY(nr_attr_string(c, "activation", "", &act));
    p->alpha = p->beta = 1.0f;
    p->has_c = 1;
    if (!strcmp(act, "Relu")) p->activation.kind = NETRUN_ACT_RELU;
    else if (!strcmp(act, "GeluTanh")) p->activation.kind = NETRUN_ACT_GELU_TANH;
    else if (*act) return nr_layer_error(c, "activation must be \"\", \"Relu\" or \"GeluTanh\" (got \"%s\")", act);
    return NETRUN_OK;
}

static netrun_status mmbias_infer(nr_layer_ctx *c, void *params) {
    const netrun_gemm_params *p = params;
    int n_in = nr_in_count(c);
    if ((n_in != 3 && n_in != 4) || !nr_in_present(c, 0) || !nr_in_present(c, 1) || !nr_in_present(c, 2) ||
        (n_in == 4 && !nr_in_present(c, 3)))
        return nr_layer_error(c, "needs inputs A, B, bias and optionally the residual R");
    TRY(nr_check_dtype(c, 0, NR_DTYPES_FLOAT));
    TRY(nr_check_same_dtype(c, 0, 1));
    TRY(nr_check_same_dtype(c, 0, 2));
    if (n_in == 4) TRY(nr_check_same_dtype(c, 0, 3));
    const netrun_value_desc *a = nr_in(c, 0), *b = nr_in(c, 1), *bias = nr_in(c, 2);
    if (a->rank < 2 || b->rank != 2 || bias->rank != 1)
        return nr_layer_error(c, "A must have rank >= 2, B rank 2 and bias rank 1 (got %d, %d, %d)", a->rank, b->rank,
                              bias->rank);
    if (a->dims[a->rank - 1] != b->dims[0] || bias->dims[0] != b->dims[1])
        return nr_layer_error(c, "A [..., %lld], B [%lld, %lld] and bias [%lld] do not match",
                              (long long)a->dims[a->rank - 1], (long long)b->dims[0], (long long)b->dims[1],
                              (long long)bias->dims[0]);
    int64_t dims[NETRUN_MAX_RANK];
    for (int i = 0; i < a->rank - 1; i++) dims[i] = a->dims[i];
    dims[a->rank - 1] = b->dims[1];
    if (n_in == 4) { /* the residual: exactly Y's shape (no broadcast), added before no activation */
        const netrun_value_desc *r = nr_in(c, 3);
        if (p && p->activation.kind != NETRUN_ACT_NONE)
            return nr_layer_error(c, "a residual input R takes no activation (the Add would come after it)");
        if (r->rank != a->rank)
            return nr_layer_error(c, "residual R must have Y's shape: rank %d, Y's %d", r->rank, a->rank);
        for (int i = 0; i < a->rank; i++)
            if (r->dims[i] != dims[i])
                return nr_layer_error(c, "residual R must have Y's shape: dim %d is %lld, Y's %lld", i,
                                      (long long)r->dims[i], (long long)dims[i]);
    }
    nr_out_set(c, 0, a->dtype, a->rank, dims);
    return NETRUN_OK;
}

const nr_layer nr_layers_gemm[] = {
    {"Gemm", "", 1, sizeof(netrun_gemm_params), gemm_parse, gemm_infer, 0},
    {"MatMul", "", 1, 0, NULL, matmul_infer, 0},
    {"MatMulBias", "com.netrun", 1, sizeof(netrun_gemm_params), mmbias_parse, mmbias_infer, 0},
    {0},
};
