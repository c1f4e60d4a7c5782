/* The ops the contrib plugin defines (ABI 1.9 netrun_op_def): attribute parsing and shape/type inference, as
 * onnxruntime's contrib op schemas (docs/ContribOperators.md of onnxruntime) state them. Kernels are elsewhere. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "contrib.h"

#define H nrc_host
#define FLOAT_TYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                     NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))

static const char *const input_names[] = {"first", "second", "third", "fourth", "fifth"};

/* Input i is present, of a float type, and (i > 0) of input 0's type. */
static netrun_status check_float(netrun_op_ctx *c, int i) {
    const netrun_value_desc *d = H->op_input(c, i);
    if (!(NETRUN_DTYPE_BIT(d->dtype) & FLOAT_TYPES))
        return H->op_error(c, "the %s input must be a float tensor (element type %d)", input_names[i], (int)d->dtype);
    if (i > 0 && d->dtype != H->op_input(c, 0)->dtype)
        return H->op_error(c, "the %s input's element type (%d) differs from the first's (%d)", input_names[i],
                           (int)d->dtype, (int)H->op_input(c, 0)->dtype);
    return NETRUN_OK;
}

static int present(netrun_op_ctx *c, int i) { return i < H->op_input_count(c) && H->op_input(c, i)->rank >= 0; }

/* Input i is 1-D with n elements (a bias, gamma or beta over the last dim). */
static netrun_status check_vector(netrun_op_ctx *c, int i, int64_t n, const char *what) {
    netrun_status st = check_float(c, i);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *d = H->op_input(c, i);
    if (d->rank != 1 || d->dims[0] != n)
        return H->op_error(c, "%s must be 1-D with %lld elements (the last dim of the input), not of rank %d%s",
                           what, (long long)n, d->rank, d->rank == 1 ? " and another length" : "");
    return NETRUN_OK;
}

/* ---- Gelu, QuickGelu: y has x's type and shape ---- */
static netrun_status infer_unary(netrun_op_ctx *c, void *params) {
    (void)params;
    netrun_status st = check_float(c, 0);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = H->op_input(c, 0);
    H->op_output_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

static netrun_status parse_quick_gelu(netrun_op_ctx *c, void *params) {
    return H->op_attr_float(c, "alpha", 1.702f, &((nrc_quick_gelu_params *)params)->alpha);
}

/* ---- FastGelu (optional bias), BiasGelu (bias): bias over the last dim ---- */
static netrun_status infer_bias_activation(netrun_op_ctx *c, void *params) {
    netrun_status st = infer_unary(c, params);
    const netrun_value_desc *x = H->op_input(c, 0);
    if (st == NETRUN_OK && x->rank < 1) return H->op_error(c, "the input must have at least one dim");
    if (st == NETRUN_OK && present(c, 1)) st = check_vector(c, 1, x->dims[x->rank - 1], "the bias");
    return st;
}

/* ---- BiasAdd: X (N, S, C) + bias (C) + skip (N, S, C) ---- */
static netrun_status infer_bias_add(netrun_op_ctx *c, void *params) {
    netrun_status st = infer_unary(c, params);
    const netrun_value_desc *x = H->op_input(c, 0), *skip = H->op_input(c, 2);
    if (st != NETRUN_OK) return st;
    if (x->rank != 3) return H->op_error(c, "the input must be 3-D (N, S, C), not of rank %d", x->rank);
    if ((st = check_vector(c, 1, x->dims[2], "the bias")) != NETRUN_OK || (st = check_float(c, 2)) != NETRUN_OK)
        return st;
    if (skip->rank != 3 || memcmp(skip->dims, x->dims, 3 * sizeof x->dims[0]))
        return H->op_error(c, "skip must have the input's shape (N, S, C)");
    return NETRUN_OK;
}

/* ---- the layer norms ---- */
static netrun_status parse_norm(netrun_op_ctx *c, nrc_norm_params *p, float default_epsilon) {
    int64_t axis, stash;
    netrun_status st = H->op_attr_int(c, "axis", -1, &axis);
    if (st == NETRUN_OK) st = H->op_attr_float(c, "epsilon", default_epsilon, &p->epsilon);
    if (st == NETRUN_OK) st = H->op_attr_int(c, "stash_type", 1, &stash);
    if (st != NETRUN_OK) return st;
    if (stash != 1) return H->op_error(c, "stash_type %lld is not supported (only 1, float)", (long long)stash);
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK) return H->op_error(c, "axis %lld is out of range", (long long)axis);
    p->axis = (int32_t)axis;
    p->stash_type = 1;
    return NETRUN_OK;
}

static netrun_status parse_layer_norm(netrun_op_ctx *c, void *params) { return parse_norm(c, params, 1e-5f); }
static netrun_status parse_skip_norm(netrun_op_ctx *c, void *params) { return parse_norm(c, params, 1e-12f); }

/* Outputs of a norm over dims [axis, rank): 0 is x-shaped; the statistics `first_stat`.. are float with the
 * normalized dims set to 1; output `sum_out` (Skip*: input + skip + bias), when >= 0, is x-shaped. */
static void set_norm_outputs(netrun_op_ctx *c, const netrun_value_desc *x, int axis, int first_stat, int n_stats,
                             int sum_out) {
    int64_t stat_dims[NETRUN_MAX_RANK];
    for (int d = 0; d < x->rank; d++) stat_dims[d] = d < axis ? x->dims[d] : 1;
    H->op_output_set(c, 0, x->dtype, x->rank, x->dims);
    for (int o = first_stat; o < first_stat + n_stats; o++)
        if (H->op_output_present(c, o)) H->op_output_set(c, o, NETRUN_DTYPE_FLOAT, x->rank, stat_dims);
    if (sum_out >= 0 && H->op_output_present(c, sum_out)) H->op_output_set(c, sum_out, x->dtype, x->rank, x->dims);
}

/* LayerNormalization (X, Scale, B?) and SimplifiedLayerNormalization (X, scale): scale and bias hold one value per
 * normalized element. */
static netrun_status infer_layer_norm(netrun_op_ctx *c, void *params) {
    nrc_norm_params *p = params;
    netrun_status st = check_float(c, 0);
    const netrun_value_desc *x = H->op_input(c, 0);
    if (st != NETRUN_OK) return st;
    int axis = p->axis < 0 ? p->axis + x->rank : p->axis;
    if (x->rank < 1 || axis < 0 || axis >= x->rank)
        return H->op_error(c, "axis %d is out of range for an input of rank %d", (int)p->axis, x->rank);
    int64_t n = 1;
    for (int d = axis; d < x->rank; d++) n *= x->dims[d];
    for (int i = 1; i < 3 && st == NETRUN_OK; i++) {
        if (!present(c, i)) continue;
        const netrun_value_desc *s = H->op_input(c, i);
        int64_t count = 1;
        for (int d = 0; d < s->rank; d++) count *= s->dims[d];
        if ((st = check_float(c, i)) == NETRUN_OK && (count != n || s->rank > x->rank - axis))
            st = H->op_error(c, "the %s must hold one value per normalized element (%lld), of rank at most %d",
                             i == 1 ? "scale" : "bias", (long long)n, x->rank - axis);
    }
    if (st != NETRUN_OK) return st;
    p->axis = axis;
    set_norm_outputs(c, x, axis, 1, 2, -1);
    return NETRUN_OK;
}

/* SkipLayerNormalization (input, skip, gamma, beta?, bias?) and SkipSimplifiedLayerNormalization (input, skip,
 * gamma, bias?): input (B, S, H) or (B*S, H); skip the input's shape or a suffix of it ((1, S, H), (S, H)). */
static netrun_status infer_skip_norm(netrun_op_ctx *c, void *params, int simplified) {
    nrc_norm_params *p = params;
    netrun_status st = check_float(c, 0);
    const netrun_value_desc *x = H->op_input(c, 0), *skip = H->op_input(c, 1);
    if (st != NETRUN_OK) return st;
    if (x->rank != 2 && x->rank != 3) return H->op_error(c, "the input must be 2-D or 3-D, not of rank %d", x->rank);
    if ((st = check_float(c, 1)) != NETRUN_OK) return st;
    int ok = skip->rank >= 1 && skip->rank <= x->rank;
    for (int d = 0; ok && d < skip->rank; d++) {
        int64_t want = x->dims[x->rank - skip->rank + d];
        ok = skip->dims[d] == want || (d == 0 && skip->rank == x->rank && skip->dims[0] == 1);
    }
    if (!ok) return H->op_error(c, "skip must have the input's shape, or (1, S, H), or (S, H)");
    int64_t hidden = x->dims[x->rank - 1];
    if ((st = check_vector(c, 2, hidden, "gamma")) != NETRUN_OK) return st;
    for (int i = 3; i < H->op_input_count(c) && st == NETRUN_OK; i++)
        if (present(c, i)) st = check_vector(c, i, hidden, simplified || i == 4 ? "the bias" : "beta");
    if (st != NETRUN_OK) return st;
    p->axis = x->rank - 1;
    set_norm_outputs(c, x, x->rank - 1, 1, 2, 3);
    return NETRUN_OK;
}

static netrun_status infer_skip_layer_norm(netrun_op_ctx *c, void *params) { return infer_skip_norm(c, params, 0); }
static netrun_status infer_skip_simplified(netrun_op_ctx *c, void *params) { return infer_skip_norm(c, params, 1); }

/* ---- FusedMatMul ---- */
static netrun_status parse_fused_matmul(netrun_op_ctx *c, void *params) {
    nrc_fused_matmul_params *p = params;
    int64_t v[4];
    static const char *const names[] = {"transA", "transB", "transBatchA", "transBatchB"};
    netrun_status st = H->op_attr_float(c, "alpha", 1.0f, &p->alpha);
    for (int i = 0; i < 4 && st == NETRUN_OK; i++) {
        st = H->op_attr_int(c, names[i], 0, &v[i]);
        if (st == NETRUN_OK && v[i] != 0 && v[i] != 1) return H->op_error(c, "%s must be 0 or 1", names[i]);
    }
    if (st != NETRUN_OK) return st;
    p->trans_a = (int32_t)v[0], p->trans_b = (int32_t)v[1], p->trans_batch_a = (int32_t)v[2], p->trans_batch_b = (int32_t)v[3];
    return NETRUN_OK;
}

static netrun_status infer_fused_matmul(netrun_op_ctx *c, void *params) {
    const nrc_fused_matmul_params *p = params;
    netrun_status st = check_float(c, 0);
    if (st == NETRUN_OK) st = check_float(c, 1);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *a = H->op_input(c, 0), *b = H->op_input(c, 1);
    if (a->rank < 1 || b->rank < 1) return H->op_error(c, "A and B must have at least one dim");
    nrc_mat_view va, vb;
    nrc_matmul_view(a->rank, a->dims, 0, p->trans_batch_a, p->trans_a, &va);
    nrc_matmul_view(b->rank, b->dims, 1, p->trans_batch_b, p->trans_b, &vb);
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    char why[160];
    if (!nrc_matmul_out(&va, &vb, a->rank == 1, b->rank == 1, &rank, dims, why, sizeof why))
        return H->op_error(c, "%s", why);
    H->op_output_set(c, 0, a->dtype, rank, dims);
    return NETRUN_OK;
}

/* ---- Attention: input (B, S, Hin), weights (Hin, Hq + Hk + Hv), bias?, mask_index?, past?, attention_bias?,
 * past_sequence_length? -> output (B, S, Hv), present? (2, B, N, P + S, Hk / N) ---- */
static netrun_status parse_attention(netrun_op_ctx *c, void *params) {
    nrc_attention_params *p = params;
    int64_t heads, uni, rotary;
    const int64_t *qkv = NULL;
    int64_t n_qkv = 0;
    netrun_status st = H->op_attr_int(c, "num_heads", 0, &heads);
    if (st == NETRUN_OK) st = H->op_attr_int(c, "unidirectional", 0, &uni);
    if (st == NETRUN_OK) st = H->op_attr_int(c, "do_rotary", 0, &rotary);
    if (st == NETRUN_OK) st = H->op_attr_float(c, "mask_filter_value", -10000.0f, &p->mask_filter_value);
    if (st == NETRUN_OK) st = H->op_attr_float(c, "scale", 0.0f, &p->scale);
    if (st == NETRUN_OK) st = H->op_attr_ints(c, "qkv_hidden_sizes", &qkv, &n_qkv);
    if (st != NETRUN_OK) return st;
    if (!H->op_attr_has(c, "num_heads") || heads < 1 || heads > 1 << 20)
        return H->op_error(c, "num_heads is required and must be positive");
    if (n_qkv && n_qkv != 3) return H->op_error(c, "qkv_hidden_sizes must have 3 values, not %lld", (long long)n_qkv);
    for (int i = 0; i < n_qkv; i++)
        if (qkv[i] < 1 || qkv[i] % heads || qkv[i] > INT32_MAX)
            return H->op_error(c, "qkv_hidden_sizes[%d] = %lld is not a positive multiple of num_heads", i, (long long)qkv[i]);
    p->num_heads = (int32_t)heads, p->unidirectional = uni != 0, p->do_rotary = rotary != 0;
    if (n_qkv) p->q_hidden = (int32_t)qkv[0], p->k_hidden = (int32_t)qkv[1], p->v_hidden = (int32_t)qkv[2];
    return NETRUN_OK;
}

static netrun_status infer_attention(netrun_op_ctx *c, void *params) {
    nrc_attention_params *p = params;
    netrun_status st = check_float(c, 0);
    if (st == NETRUN_OK) st = check_float(c, 1);
    if (st != NETRUN_OK) return st;
    const netrun_value_desc *x = H->op_input(c, 0), *w = H->op_input(c, 1);
    if (x->rank != 3) return H->op_error(c, "the input must be 3-D (batch, sequence, hidden), not of rank %d", x->rank);
    if (w->rank != 2 || w->dims[0] != x->dims[2])
        return H->op_error(c, "weights must be 2-D (%lld, Q + K + V hidden sizes)", (long long)x->dims[2]);
    int64_t total = w->dims[1];
    if (!H->op_attr_has(c, "qkv_hidden_sizes")) {
        if (total % 3 || (total / 3) % p->num_heads || total / 3 > INT32_MAX)
            return H->op_error(c, "weights have %lld columns: not three equal parts divisible by num_heads %d",
                               (long long)total, (int)p->num_heads);
        p->q_hidden = p->k_hidden = p->v_hidden = (int32_t)(total / 3);
    } else if ((int64_t)p->q_hidden + p->k_hidden + p->v_hidden != total)
        return H->op_error(c, "qkv_hidden_sizes add up to %lld, the weights have %lld columns",
                           (long long)p->q_hidden + p->k_hidden + p->v_hidden, (long long)total);
    if (p->q_hidden != p->k_hidden) return H->op_error(c, "Q and K hidden sizes differ (%d, %d)", (int)p->q_hidden, (int)p->k_hidden);
    if (present(c, 2) && (st = check_vector(c, 2, total, "the bias")) != NETRUN_OK) return st;
    if (present(c, 3) && H->op_input(c, 3)->dtype != NETRUN_DTYPE_INT32)
        return H->op_error(c, "mask_index must be int32");
    int64_t past = 0;
    if (present(c, 4)) {
        const netrun_value_desc *pv = H->op_input(c, 4);
        if ((st = check_float(c, 4)) != NETRUN_OK) return st;
        if (pv->rank != 5 || pv->dims[0] != 2) return H->op_error(c, "past must be 5-D (2, B, N, P, head size)");
        past = pv->dims[3];
    }
    int64_t out[3] = {x->dims[0], x->dims[1], p->v_hidden};
    H->op_output_set(c, 0, x->dtype, 3, out);
    if (H->op_output_present(c, 1)) {
        int64_t pres[5] = {2, x->dims[0], p->num_heads, past + x->dims[1], p->k_hidden / p->num_heads};
        H->op_output_set(c, 1, x->dtype, 5, pres);
    }
    return NETRUN_OK;
}

/* ---- the table ---- */
#define DEF(var, dom, op, since, until, min_in, max_in, max_out, psize, parse_fn, infer_fn) \
    static const netrun_op_def var = {sizeof(netrun_op_def), dom, op, since, until, min_in, max_in, 1, max_out, \
                                      psize, parse_fn, infer_fn, 0};

DEF(gelu, NRC_MS, "Gelu", 1, 0, 1, 1, 1, 0, NULL, infer_unary)
DEF(fast_gelu, NRC_MS, "FastGelu", 1, 0, 1, 2, 1, 0, NULL, infer_bias_activation)
DEF(bias_gelu, NRC_MS, "BiasGelu", 1, 0, 2, 2, 1, 0, NULL, infer_bias_activation)
DEF(quick_gelu, NRC_MS, "QuickGelu", 1, 0, 1, 1, 1, sizeof(nrc_quick_gelu_params), parse_quick_gelu, infer_unary)
DEF(bias_add, NRC_MS, "BiasAdd", 1, 0, 3, 3, 1, 0, NULL, infer_bias_add)
DEF(skip_ln, NRC_MS, "SkipLayerNormalization", 1, 0, 3, 5, 4, sizeof(nrc_norm_params), parse_skip_norm,
    infer_skip_layer_norm)
DEF(skip_sln, NRC_MS, "SkipSimplifiedLayerNormalization", 1, 0, 3, 4, 4, sizeof(nrc_norm_params), parse_skip_norm,
    infer_skip_simplified)
/* onnxruntime's LayerNormalization and SimplifiedLayerNormalization (onnxruntime registers them in ai.onnx; netrun
 * has ai.onnx LayerNormalization itself, at any opset, so only com.microsoft's is defined here) */
DEF(ms_ln, NRC_MS, "LayerNormalization", 1, 0, 2, 3, 3, sizeof(nrc_norm_params), parse_layer_norm, infer_layer_norm)
DEF(ms_sln, NRC_MS, "SimplifiedLayerNormalization", 1, 0, 2, 2, 2, sizeof(nrc_norm_params), parse_layer_norm,
    infer_layer_norm)
DEF(onnx_sln, "", "SimplifiedLayerNormalization", 1, 0, 2, 2, 2, sizeof(nrc_norm_params), parse_layer_norm,
    infer_layer_norm)
DEF(attention, NRC_MS, "Attention", 1, 0, 2, 7, 2, sizeof(nrc_attention_params), parse_attention, infer_attention)
DEF(fused_matmul, NRC_MS, "FusedMatMul", 1, 0, 2, 2, 1, sizeof(nrc_fused_matmul_params), parse_fused_matmul,
    infer_fused_matmul)

const netrun_op_def *const nrc_op_defs[] = {&gelu, &fast_gelu, &bias_gelu, &quick_gelu, &bias_add, &skip_ln, &skip_sln,
                                            &ms_ln, &ms_sln, &onnx_sln, &fused_matmul,
                                            &attention, NULL};

static int default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

int nrc_op_of(const char *domain, const char *op, int opset) {
    if (!op) return -1;
    (void)opset; /* every opset of our definitions so far */
    if (default_domain(domain)) return !strcmp(op, "SimplifiedLayerNormalization") ? NRC_SIMPLIFIED_LAYER_NORM : -1;
    if (strcmp(domain, NRC_MS)) return -1;
    static const struct { const char *name; nrc_op op; } ops[] = {
        {"Gelu", NRC_GELU}, {"FastGelu", NRC_FAST_GELU}, {"BiasGelu", NRC_BIAS_GELU}, {"QuickGelu", NRC_QUICK_GELU},
        {"BiasAdd", NRC_BIAS_ADD}, {"LayerNormalization", NRC_LAYER_NORM},
        {"SimplifiedLayerNormalization", NRC_SIMPLIFIED_LAYER_NORM}, {"SkipLayerNormalization", NRC_SKIP_LAYER_NORM},
        {"SkipSimplifiedLayerNormalization", NRC_SKIP_SIMPLIFIED_LAYER_NORM}, {"FusedMatMul", NRC_FUSED_MATMUL}, {"Attention", NRC_ATTENTION},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i].name)) return (int)ops[i].op;
    return -1;
}
