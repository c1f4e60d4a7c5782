/* Op family: transformer (definitions: attribute parsing, validation, shape inference).
 * Attention (opset 23/24), ai.onnx.preview FlexAttention (without score_mod/prob_mod subgraphs),
 * RMSNormalization (23), RotaryEmbedding (23), LinearAttention (27), CausalConvWithState (27).
 * Semantics follow the ONNX reference implementations (onnx/reference/ops/op_*.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"
#include "../runtime/layer_ctx.h" /* the node's graph attributes (FlexAttention modifiers) */

#define T_FLOATS NR_DTYPES_FLOAT
#define T_HALF_FLOAT (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                      NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))

static int ceil_ok_heads(int64_t v) { return v >= 1 && v <= (1 << 20); }

/* ---- Attention ---- */

static netrun_status attn_parse(nr_layer_ctx *c, void *params) {
    netrun_attention_params *p = params;
    int64_t v;
    netrun_status st;
    if (nr_attr_has(c, "q_num_heads")) {
        if ((st = nr_attr_int(c, "q_num_heads", 0, &v)) != NETRUN_OK) return st;
        if (!ceil_ok_heads(v)) return nr_layer_error(c, "attribute 'q_num_heads' = %lld must be >= 1", (long long)v);
        p->q_num_heads = (int)v;
    }
    if (nr_attr_has(c, "kv_num_heads")) {
        if ((st = nr_attr_int(c, "kv_num_heads", 0, &v)) != NETRUN_OK) return st;
        if (!ceil_ok_heads(v)) return nr_layer_error(c, "attribute 'kv_num_heads' = %lld must be >= 1", (long long)v);
        p->kv_num_heads = (int)v;
    }
    if ((st = nr_attr_int(c, "is_causal", 0, &v)) != NETRUN_OK) return st;
    p->is_causal = v != 0;
    if ((st = nr_attr_float(c, "softcap", 0.0f, &p->softcap)) != NETRUN_OK) return st;
    if (!(p->softcap >= 0.0f) || isinf(p->softcap))
        return nr_layer_error(c, "attribute 'softcap' = %g must be finite and >= 0", (double)p->softcap);
    if ((st = nr_attr_int(c, "softmax_precision", 0, &v)) != NETRUN_OK) return st;
    if (nr_attr_has(c, "softmax_precision") && v != NETRUN_DTYPE_FLOAT && v != NETRUN_DTYPE_FLOAT16 &&
        v != NETRUN_DTYPE_DOUBLE && v != NETRUN_DTYPE_BFLOAT16)
        return nr_layer_error(c, "attribute 'softmax_precision' = %lld is not a floating-point type", (long long)v);
    p->softmax_precision = (int)v;
    if ((st = nr_attr_int(c, "qk_matmul_output_mode", 0, &v)) != NETRUN_OK) return st;
    if (v < 0 || v > 3)
        return nr_layer_error(c, "attribute 'qk_matmul_output_mode' = %lld must be 0, 1, 2 or 3", (long long)v);
    p->qk_matmul_output_mode = (int)v;
    p->scale = 0.0f; /* 0 = default, resolved in infer */
    if (nr_attr_has(c, "scale")) {
        if ((st = nr_attr_float(c, "scale", 0.0f, &p->scale)) != NETRUN_OK) return st;
        if (!isfinite(p->scale) || p->scale <= 0.0f)
            return nr_layer_error(c, "attribute 'scale' = %g must be finite and > 0", (double)p->scale);
    }
    return NETRUN_OK;
}

/* Heads and head size of a Q/K/V input (3-D: [B, L, heads * E]; 4-D: [B, heads, L, E]). */
static netrun_status attn_split(nr_layer_ctx *c, const netrun_value_desc *x, const char *name, int heads_attr,
                                const char *attr, int64_t *heads, int64_t *len, int64_t *e) {
    if (x->rank == 4) {
        *heads = x->dims[1];
        *len = x->dims[2];
        *e = x->dims[3];
        if (*heads < 1) return nr_layer_error(c, "input %s has %lld heads (dims[1])", name, (long long)*heads);
        if (heads_attr && heads_attr != *heads)
            return nr_layer_error(c, "attribute '%s' = %d does not match %s dims[1] = %lld", attr, heads_attr, name,
                                  (long long)*heads);
        return NETRUN_OK;
    }
    if (!heads_attr) return nr_layer_error(c, "3-D input %s needs attribute '%s'", name, attr);
    if (x->dims[2] % heads_attr != 0)
        return nr_layer_error(c, "input %s hidden size %lld is not divisible by %s = %d", name,
                              (long long)x->dims[2], attr, heads_attr);
    *heads = heads_attr;
    *len = x->dims[1];
    *e = x->dims[2] / heads_attr;
    return NETRUN_OK;
}

static netrun_status attn_infer(nr_layer_ctx *c, void *params) {
    netrun_attention_params *p = params;
    netrun_status st;
    for (int i = 0; i < 3; i++)
        if ((st = nr_check_dtype(c, i, T_FLOATS)) != NETRUN_OK) return st;
    if ((st = nr_check_same_dtype(c, 0, 1)) != NETRUN_OK) return st;
    const netrun_value_desc *q = nr_in(c, 0), *k = nr_in(c, 1), *v = nr_in(c, 2);
    if (q->rank != 3 && q->rank != 4) return nr_layer_error(c, "input Q must be 3-D or 4-D, got rank %d", q->rank);
    if (k->rank != q->rank || v->rank != q->rank)
        return nr_layer_error(c, "Q, K and V must have the same rank (got %d, %d, %d)", q->rank, k->rank, v->rank);
    p->input_3d = q->rank == 3;
    int64_t hq, hk, hv, lq, lk, lv, e, ek, ev;
    if ((st = attn_split(c, q, "Q", p->q_num_heads, "q_num_heads", &hq, &lq, &e)) != NETRUN_OK) return st;
    if ((st = attn_split(c, k, "K", p->kv_num_heads, "kv_num_heads", &hk, &lk, &ek)) != NETRUN_OK) return st;
    if ((st = attn_split(c, v, "V", p->kv_num_heads, "kv_num_heads", &hv, &lv, &ev)) != NETRUN_OK) return st;
    int64_t b = q->dims[0];
    if (k->dims[0] != b || v->dims[0] != b)
        return nr_layer_error(c, "Q, K and V batch sizes differ (%lld, %lld, %lld)", (long long)b,
                              (long long)k->dims[0], (long long)v->dims[0]);
    if (hk != hv) return nr_layer_error(c, "K has %lld heads but V has %lld", (long long)hk, (long long)hv);
    if (hq % hk != 0)
        return nr_layer_error(c, "q_num_heads %lld is not a multiple of kv_num_heads %lld", (long long)hq, (long long)hk);
    if (ek != e) return nr_layer_error(c, "Q head size %lld differs from K head size %lld", (long long)e, (long long)ek);
    if (lk != lv) return nr_layer_error(c, "K sequence length %lld differs from V's %lld", (long long)lk, (long long)lv);
    p->q_num_heads = (int)hq;
    p->kv_num_heads = (int)hk;
    p->batch = b;
    p->q_len = lq;
    p->kv_len = lk;
    p->head_size = e;
    p->v_head_size = ev;
    if (p->scale == 0.0f && e > 0) p->scale = (float)(1.0 / sqrt((double)e));
    else if (p->scale == 0.0f) p->scale = 1.0f;

    /* past_key / past_value: both or neither, [B, Hkv, Lp, E] and [B, Hkv, Lp, Ev] */
    int n_in = nr_in_count(c);
    int has_pk = n_in > 4 && nr_in_present(c, 4), has_pv = n_in > 5 && nr_in_present(c, 5);
    if (has_pk != has_pv) return nr_layer_error(c, "past_key and past_value must be given together");
    p->has_past = has_pk;
    p->past_len = 0;
    if (has_pk) {
        const netrun_value_desc *pk = nr_in(c, 4), *pv = nr_in(c, 5);
        if ((st = nr_check_same_dtype(c, 4, 1)) != NETRUN_OK) return st;
        if ((st = nr_check_same_dtype(c, 5, 2)) != NETRUN_OK) return st;
        if (pk->rank != 4 || pk->dims[0] != b || pk->dims[1] != hk || pk->dims[3] != e)
            return nr_layer_error(c, "past_key must be [%lld, %lld, past_len, %lld]", (long long)b, (long long)hk,
                                  (long long)e);
        if (pv->rank != 4 || pv->dims[0] != b || pv->dims[1] != hk || pv->dims[3] != ev || pv->dims[2] != pk->dims[2])
            return nr_layer_error(c, "past_value must be [%lld, %lld, %lld, %lld]", (long long)b, (long long)hk,
                                  (long long)pk->dims[2], (long long)ev);
        p->past_len = pk->dims[2];
    }
    p->total_len = p->past_len + lk;

    /* attn_mask: broadcastable to [B, Hq, Lq, <= total] */
    p->mask_kind = 0;
    if (n_in > 3 && nr_in_present(c, 3)) {
        const netrun_value_desc *m = nr_in(c, 3);
        if (m->dtype == NETRUN_DTYPE_BOOL) p->mask_kind = 1;
        else if (m->dtype == NETRUN_DTYPE_FLOAT || m->dtype == NETRUN_DTYPE_FLOAT16 ||
                 m->dtype == NETRUN_DTYPE_DOUBLE || m->dtype == NETRUN_DTYPE_BFLOAT16)
            p->mask_kind = 2;
        else return nr_layer_error(c, "attn_mask must be bool or floating point, got dtype %d", (int)m->dtype);
        if (m->rank < 1 || m->rank > 4) return nr_layer_error(c, "attn_mask must have rank 1 to 4, got %d", m->rank);
        const int64_t want[4] = {b, hq, lq, p->total_len};
        for (int i = 0; i < m->rank; i++) {
            int a = 4 - m->rank + i;
            int64_t d = m->dims[i];
            if (a == 3) {
                if (d < 1 || d > p->total_len)
                    return nr_layer_error(c, "attn_mask last dim %lld must be in [1, total_sequence_length %lld]",
                                          (long long)d, (long long)p->total_len);
            } else if (d != 1 && d != want[a])
                return nr_layer_error(c, "attn_mask dim %d (%lld) does not broadcast to %lld", i, (long long)d,
                                      (long long)want[a]);
        }
    }
    p->has_nonpad = 0;
    if (n_in > 6 && nr_in_present(c, 6)) {
        const netrun_value_desc *np = nr_in(c, 6);
        if (np->dtype != NETRUN_DTYPE_INT64) return nr_layer_error(c, "nonpad_kv_seqlen must be int64");
        if (np->rank != 1 || np->dims[0] != b)
            return nr_layer_error(c, "nonpad_kv_seqlen must be [%lld]", (long long)b);
        if (has_pk) return nr_layer_error(c, "nonpad_kv_seqlen cannot be used with past_key/past_value");
        p->has_nonpad = 1;
    }

    if (p->input_3d) {
        int64_t y[3] = {b, lq, hq * ev};
        nr_out_set(c, 0, q->dtype, 3, y);
    } else {
        int64_t y[4] = {b, hq, lq, ev};
        nr_out_set(c, 0, q->dtype, 4, y);
    }
    int64_t pk[4] = {b, hk, p->total_len, e}, pv[4] = {b, hk, p->total_len, ev}, qk[4] = {b, hq, lq, p->total_len};
    int n_out = nr_out_count(c);
    if ((n_out > 1 && nr_out_present(c, 1)) || (n_out > 2 && nr_out_present(c, 2))) {
        if (!(n_out > 2 && nr_out_present(c, 1) && nr_out_present(c, 2)))
            return nr_layer_error(c, "present_key and present_value must be requested together");
    }
    if (n_out > 1) nr_out_set(c, 1, k->dtype, 4, pk);
    if (n_out > 2) nr_out_set(c, 2, v->dtype, 4, pv);
    if (n_out > 3) nr_out_set(c, 3, q->dtype, 4, qk);
    return NETRUN_OK;
}

/* ---- FlexAttention (ai.onnx.preview) ---- */

/* Compile a modifier subgraph (one rank-4 input -> one output of the same shape) into an elementwise
 * program. Besides elementwise ops it understands the index idiom Range(0, Gather(Shape(x), k), 1) reshaped
 * onto axis k. Returns 0 with a reason in err when the graph uses anything else. */
enum { SK_NONE, SK_EXPR, SK_SHAPE, SK_DIM, SK_RANGE, SK_CONSTV };

typedef struct flex_sym {
    int kind, reg, axis;               /* SK_EXPR: reg; SK_DIM/SK_RANGE: axis */
    const nr_tensor *t;                /* SK_CONSTV: constant tensor */
} flex_sym;

static const nr_tensor *flex_const_of(const nr_graph *g, int vid, flex_sym *sy) {
    if (vid < 0) return NULL;
    if (sy[vid].kind == SK_CONSTV) return sy[vid].t;
    return g->values[vid].constant;
}

static int flex_const_scalar(const nr_tensor *t, double *v) {
    if (!t || nr_tensor_count(t) != 1) return 0;
    if (t->dtype == NETRUN_DTYPE_STRING || t->dtype == NETRUN_DTYPE_UNDEFINED) return 0;
    *v = nr_read_number(t->dtype, t->data, 0);
    return 1;
}

static int flex_emit(netrun_flex_prog *pr, int op, int a, int b, int cc, double k) {
    if (pr->n_insn >= NETRUN_FLEX_MAX_INSN) return -1;
    netrun_flex_insn *in = &pr->insn[pr->n_insn++];
    in->op = op, in->dst = pr->n_regs++, in->a = a, in->b = b, in->c = cc, in->k = k;
    return in->dst;
}

/* Register of an elementwise operand (constants become CONST instructions). -1 when not elementwise. */
static int flex_operand(const nr_graph *g, int vid, flex_sym *sy, netrun_flex_prog *pr) {
    if (vid < 0) return -1;
    if (sy[vid].kind == SK_EXPR) return sy[vid].reg;
    double v;
    if (flex_const_scalar(flex_const_of(g, vid, sy), &v)) {
        int r = flex_emit(pr, NETRUN_FLEX_CONST, 0, 0, 0, v);
        if (r >= 0) sy[vid].kind = SK_EXPR, sy[vid].reg = r;
        return r;
    }
    return -1;
}

static int flex_compile(const nr_graph *g, netrun_flex_prog *pr, char *err, size_t err_size) {
    static const struct { const char *op; int code, arity; } ew[] = {
        {"Add", NETRUN_FLEX_ADD, 2}, {"Sub", NETRUN_FLEX_SUB, 2}, {"Mul", NETRUN_FLEX_MUL, 2},
        {"Div", NETRUN_FLEX_DIV, 2}, {"Pow", NETRUN_FLEX_POW, 2}, {"Min", NETRUN_FLEX_MIN, 2},
        {"Max", NETRUN_FLEX_MAX, 2}, {"GreaterOrEqual", NETRUN_FLEX_GE, 2}, {"Greater", NETRUN_FLEX_GT, 2},
        {"LessOrEqual", NETRUN_FLEX_LE, 2}, {"Less", NETRUN_FLEX_LT, 2}, {"Equal", NETRUN_FLEX_EQ, 2},
        {"And", NETRUN_FLEX_AND, 2}, {"Or", NETRUN_FLEX_OR, 2}, {"Where", NETRUN_FLEX_WHERE, 3},
        {"Neg", NETRUN_FLEX_NEG, 1}, {"Abs", NETRUN_FLEX_ABS, 1}, {"Tanh", NETRUN_FLEX_TANH, 1},
        {"Exp", NETRUN_FLEX_EXP, 1}, {"Log", NETRUN_FLEX_LOG, 1}, {"Sqrt", NETRUN_FLEX_SQRT, 1},
        {"Sigmoid", NETRUN_FLEX_SIGMOID, 1}, {"Relu", NETRUN_FLEX_RELU, 1}, {"Not", NETRUN_FLEX_NOT, 1},
        {"Identity", NETRUN_FLEX_COPY, 1}, {"Reciprocal", NETRUN_FLEX_RECIP, 1}, {"Floor", NETRUN_FLEX_FLOOR, 1},
        {"Ceil", NETRUN_FLEX_CEIL, 1},
    };
    if (g->n_inputs != 1 || g->n_outputs != 1) {
        snprintf(err, err_size, "subgraph must have 1 input and 1 output");
        return 0;
    }
    flex_sym *sy = calloc((size_t)g->n_values, sizeof *sy);
    if (!sy) {
        snprintf(err, err_size, "out of memory");
        return 0;
    }
    memset(pr, 0, sizeof *pr);
    pr->n_regs = 1; /* register 0: the input */
    sy[g->inputs[0]].kind = SK_EXPR;
    sy[g->inputs[0]].reg = 0;
    int ok = 1;
    for (int n = 0; n < g->n_nodes && ok; n++) {
        const nr_node *nd = &g->nodes[n];
        const char *op = nd->op_type;
        int out = nd->n_outputs > 0 ? nd->outputs[0] : -1;
        if (*nd->domain || out < 0) { ok = 0; snprintf(err, err_size, "subgraph node %s is not supported", op); break; }
        int in0 = nd->n_inputs > 0 ? nd->inputs[0] : -1, in1 = nd->n_inputs > 1 ? nd->inputs[1] : -1;
        if (!strcmp(op, "Constant")) {
            const nr_attr *a = NULL;
            for (int k = 0; k < nd->n_attrs; k++)
                if (!strcmp(nd->attrs[k].name, "value") && nd->attrs[k].t) a = &nd->attrs[k];
            if (!a) { ok = 0; snprintf(err, err_size, "subgraph Constant without a tensor 'value'"); break; }
            sy[out].kind = SK_CONSTV, sy[out].t = a->t;
            continue;
        }
        if (!strcmp(op, "Shape") && in0 >= 0 && in0 == g->inputs[0] && nd->n_attrs == 0) {
            sy[out].kind = SK_SHAPE;
            continue;
        }
        if (!strcmp(op, "Gather") && in0 >= 0 && sy[in0].kind == SK_SHAPE) {
            double k;
            if (flex_const_scalar(flex_const_of(g, in1, sy), &k) && k >= -4 && k < 4 &&
                flex_const_of(g, in1, sy)->rank == 0) {
                sy[out].kind = SK_DIM, sy[out].axis = (int)(k < 0 ? k + 4 : k);
                continue;
            }
        }
        if (!strcmp(op, "Range") && nd->n_inputs == 3 && in1 >= 0 && sy[in1].kind == SK_DIM) {
            double st, dl;
            if (flex_const_scalar(flex_const_of(g, in0, sy), &st) && st == 0 &&
                flex_const_scalar(flex_const_of(g, nd->inputs[2], sy), &dl) && dl == 1) {
                sy[out].kind = SK_RANGE, sy[out].axis = sy[in1].axis;
                continue;
            }
        }
        if ((!strcmp(op, "Reshape") || !strcmp(op, "Unsqueeze")) && in0 >= 0 && sy[in0].kind == SK_RANGE) {
            /* the one non-1 entry of the new shape must land on the range's own axis (right-aligned to 4) */
            const nr_tensor *sh = flex_const_of(g, in1, sy);
            if (!strcmp(op, "Reshape") && sh && sh->rank == 1 && sh->dims[0] >= 1 && sh->dims[0] <= 4) {
                int64_t r = sh->dims[0], where = -1, others = 1;
                for (int64_t k = 0; k < r; k++) {
                    double d = nr_read_number(sh->dtype, sh->data, k);
                    if (d != 1) {
                        if (where >= 0) others = 0;
                        where = k;
                    }
                }
                if (others && where >= 0 && 4 - r + where == sy[in0].axis) {
                    int reg = flex_emit(pr, NETRUN_FLEX_AXIS, 0, 0, 0, sy[in0].axis);
                    if (reg < 0) { ok = 0; snprintf(err, err_size, "subgraph too long"); break; }
                    sy[out].kind = SK_EXPR, sy[out].reg = reg;
                    continue;
                }
            }
        }
        if (!strcmp(op, "Cast") && in0 >= 0) {
            int64_t to = 0;
            for (int k = 0; k < nd->n_attrs; k++)
                if (!strcmp(nd->attrs[k].name, "to")) to = nd->attrs[k].i;
            int a = flex_operand(g, in0, sy, pr);
            int is_float = to == NETRUN_DTYPE_FLOAT || to == NETRUN_DTYPE_DOUBLE || to == NETRUN_DTYPE_FLOAT16 ||
                           to == NETRUN_DTYPE_BFLOAT16;
            if (a >= 0) {
                int reg = flex_emit(pr, is_float ? NETRUN_FLEX_COPY : (to == NETRUN_DTYPE_BOOL ? NETRUN_FLEX_NOT : NETRUN_FLEX_TRUNC), a, 0, 0, 0);
                /* Cast to bool: x != 0, built as Not(Not(x)) */
                if (reg >= 0 && to == NETRUN_DTYPE_BOOL) reg = flex_emit(pr, NETRUN_FLEX_NOT, reg, 0, 0, 0);
                if (reg < 0) { ok = 0; snprintf(err, err_size, "subgraph too long"); break; }
                sy[out].kind = SK_EXPR, sy[out].reg = reg;
                continue;
            }
        }
        int matched = 0;
        for (size_t e = 0; e < sizeof ew / sizeof ew[0]; e++) {
            if (strcmp(op, ew[e].op)) continue;
            matched = 1;
            if (nd->n_inputs != ew[e].arity || nd->n_attrs) break;
            int r[3] = {0, 0, 0}, good = 1;
            for (int k = 0; k < ew[e].arity; k++)
                if ((r[k] = flex_operand(g, nd->inputs[k], sy, pr)) < 0) good = 0;
            if (!good) break;
            int reg = flex_emit(pr, ew[e].code, r[0], r[1], r[2], 0);
            if (reg < 0) break;
            sy[out].kind = SK_EXPR, sy[out].reg = reg;
            matched = 2;
            break;
        }
        if (matched == 2) continue;
        ok = 0;
        snprintf(err, err_size, "subgraph node %s ('%s') is not supported", op, nd->name);
    }
    if (ok) {
        int o = g->outputs[0];
        if (sy[o].kind != SK_EXPR) {
            ok = 0;
            snprintf(err, err_size, "subgraph output is not an elementwise function of its input");
        } else pr->out_reg = sy[o].reg;
    }
    free(sy);
    return ok;
}

static netrun_status flex_parse(nr_layer_ctx *c, void *params) {
    netrun_attention_params *p = params;
    netrun_status st;
    p->is_flex = 1;
    /* Modifier subgraphs run as elementwise programs; one that cannot is reported at placement
     * (supports), so that the model still loads. */
    const nr_node *nd = c->node;
    for (int k = 0; nd && k < nd->n_attrs; k++) {
        const nr_attr *a = &nd->attrs[k];
        int is_score = !strcmp(a->name, "score_mod"), is_prob = !strcmp(a->name, "prob_mod");
        if (!is_score && !is_prob) continue;
        if (a->type != NR_ATTR_GRAPH || !a->g) return nr_layer_error(c, "attribute '%s' must be a graph", a->name);
        netrun_flex_prog *pr = nr_layer_alloc(c, sizeof *pr);
        if (!pr) return NETRUN_ERR_OUT_OF_MEMORY;
        char why[96];
        if (!flex_compile(a->g, pr, why, sizeof why)) {
            if (!p->mod_error[0]) snprintf(p->mod_error, sizeof p->mod_error, "%s: %s", a->name, why);
            continue;
        }
        if (is_score) p->score_mod = pr;
        else p->prob_mod = pr;
    }
    if (nr_attr_has(c, "scale")) {
        if ((st = nr_attr_float(c, "scale", 0.0f, &p->scale)) != NETRUN_OK) return st;
        if (!isfinite(p->scale) || p->scale <= 0.0f)
            return nr_layer_error(c, "attribute 'scale' = %g must be finite and > 0", (double)p->scale);
    }
    int64_t v;
    if ((st = nr_attr_int(c, "softmax_precision", 0, &v)) != NETRUN_OK) return st;
    if (nr_attr_has(c, "softmax_precision") && v != NETRUN_DTYPE_FLOAT && v != NETRUN_DTYPE_FLOAT16 &&
        v != NETRUN_DTYPE_DOUBLE && v != NETRUN_DTYPE_BFLOAT16)
        return nr_layer_error(c, "attribute 'softmax_precision' = %lld is not a floating-point type", (long long)v);
    p->softmax_precision = (int)v;
    return NETRUN_OK;
}

static netrun_status flex_infer(nr_layer_ctx *c, void *params) {
    netrun_attention_params *p = params;
    netrun_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = nr_check_dtype(c, i, T_FLOATS)) != NETRUN_OK) return st;
        if (i && (st = nr_check_same_dtype(c, 0, i)) != NETRUN_OK) return st;
        if (nr_in(c, i)->rank != 4) return nr_layer_error(c, "input %d must be 4-D, got rank %d", i, nr_in(c, i)->rank);
    }
    const netrun_value_desc *q = nr_in(c, 0), *k = nr_in(c, 1), *v = nr_in(c, 2);
    if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0]) return nr_layer_error(c, "Q, K and V batch sizes differ");
    if (k->dims[1] != v->dims[1]) return nr_layer_error(c, "K and V head counts differ");
    if (k->dims[2] != v->dims[2]) return nr_layer_error(c, "K and V sequence lengths differ");
    if (k->dims[3] != q->dims[3]) return nr_layer_error(c, "Q and K head sizes differ");
    if (k->dims[1] < 1 || q->dims[1] % k->dims[1] != 0)
        return nr_layer_error(c, "Q heads %lld are not a multiple of K/V heads %lld", (long long)q->dims[1],
                              (long long)k->dims[1]);
    p->q_num_heads = (int)q->dims[1];
    p->kv_num_heads = (int)k->dims[1];
    p->batch = q->dims[0];
    p->q_len = q->dims[2];
    p->kv_len = p->total_len = k->dims[2];
    p->head_size = q->dims[3];
    p->v_head_size = v->dims[3];
    if (p->scale == 0.0f) p->scale = p->head_size > 0 ? (float)(1.0 / sqrt((double)p->head_size)) : 1.0f;
    int64_t y[4] = {p->batch, q->dims[1], p->q_len, p->v_head_size};
    nr_out_set(c, 0, q->dtype, 4, y);
    return NETRUN_OK;
}

/* ---- RMSNormalization ---- */

static netrun_status rms_parse(nr_layer_ctx *c, void *params) {
    netrun_norm_params *p = params;
    int64_t axis, stash;
    netrun_status st;
    if ((st = nr_attr_float(c, "epsilon", 1e-5f, &p->epsilon)) != NETRUN_OK) return st;
    if ((st = nr_attr_int(c, "axis", -1, &axis)) != NETRUN_OK) return st;
    if ((st = nr_attr_int(c, "stash_type", 1, &stash)) != NETRUN_OK) return st;
    if (stash != NETRUN_DTYPE_FLOAT && stash != NETRUN_DTYPE_DOUBLE)
        return nr_layer_error(c, "attribute 'stash_type' = %lld is not supported (float or double)", (long long)stash);
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute 'axis' = %lld is out of range", (long long)axis);
    p->axis = (int)axis;
    return NETRUN_OK;
}

static netrun_status rms_infer(nr_layer_ctx *c, void *params) {
    netrun_norm_params *p = params;
    netrun_status st;
    if ((st = nr_check_dtype(c, 0, T_FLOATS)) != NETRUN_OK) return st;
    if ((st = nr_check_dtype(c, 1, T_FLOATS)) != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0), *w = nr_in(c, 1);
    if (x->rank < 1) return nr_layer_error(c, "input X must have rank >= 1");
    int axis;
    if ((st = nr_resolve_axis(c, p->axis, x->rank, 0, &axis)) != NETRUN_OK) return st;
    p->axis = axis;
    /* scale broadcasts against X (in practice it is X.shape[axis:]); Y takes scale's dtype */
    int r;
    int64_t d[NETRUN_MAX_RANK];
    if ((st = nr_broadcast_shapes(c, x->rank, x->dims, w->rank, w->dims, &r, d)) != NETRUN_OK) return st;
    if (r != x->rank) return nr_layer_error(c, "scale (rank %d) has a higher rank than X (%d)", w->rank, x->rank);
    for (int i = 0; i < r; i++)
        if (d[i] != x->dims[i]) return nr_layer_error(c, "scale does not broadcast to the shape of X (dim %d)", i);
    /* scale must not vary along the outer (not normalized) axes' batch beyond what broadcasting allows */
    nr_out_set(c, 0, w->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- RotaryEmbedding ---- */

static netrun_status rope_parse(nr_layer_ctx *c, void *params) {
    netrun_rotary_params *p = params;
    int64_t v;
    netrun_status st;
    if ((st = nr_attr_int(c, "num_heads", 0, &v)) != NETRUN_OK) return st;
    if (v < 0 || v > (1 << 20)) return nr_layer_error(c, "attribute 'num_heads' = %lld is out of range", (long long)v);
    p->num_heads = (int)v;
    if ((st = nr_attr_int(c, "interleaved", 0, &v)) != NETRUN_OK) return st;
    p->interleaved = v != 0;
    if ((st = nr_attr_int(c, "rotary_embedding_dim", 0, &v)) != NETRUN_OK) return st;
    if (v < 0) return nr_layer_error(c, "attribute 'rotary_embedding_dim' = %lld must be >= 0", (long long)v);
    p->rotary_dim = v;
    return NETRUN_OK;
}

static netrun_status rope_infer(nr_layer_ctx *c, void *params) {
    netrun_rotary_params *p = params;
    netrun_status st;
    if ((st = nr_check_dtype(c, 0, T_FLOATS)) != NETRUN_OK) return st;
    if ((st = nr_check_same_dtype(c, 0, 1)) != NETRUN_OK) return st;
    if ((st = nr_check_same_dtype(c, 0, 2)) != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0), *cc = nr_in(c, 1), *sc = nr_in(c, 2);
    int64_t heads, head;
    if (x->rank == 4) { /* [B, heads, S, head] */
        heads = x->dims[1];
        head = x->dims[3];
        p->seq_len = x->dims[2];
        p->input_3d = 0;
    } else if (x->rank == 3) { /* [B, S, heads * head] */
        if (p->num_heads < 1) return nr_layer_error(c, "3-D input needs attribute 'num_heads'");
        if (x->dims[2] % p->num_heads) return nr_layer_error(c, "hidden size %lld is not divisible by num_heads %d",
                                                             (long long)x->dims[2], p->num_heads);
        heads = p->num_heads;
        head = x->dims[2] / heads;
        p->seq_len = x->dims[1];
        p->input_3d = 1;
    } else return nr_layer_error(c, "input must be 3-D or 4-D, got rank %d", x->rank);
    p->num_heads = (int)heads;
    p->head_size = head;
    p->batch = x->dims[0];
    int64_t rd = p->rotary_dim ? p->rotary_dim : head;
    if (rd > head || rd % 2) return nr_layer_error(c, "rotary_embedding_dim %lld must be even and <= head size %lld",
                                                   (long long)rd, (long long)head);
    p->rotary_dim = rd;
    if (cc->rank != sc->rank) return nr_layer_error(c, "cos_cache and sin_cache ranks differ");
    for (int i = 0; i < cc->rank; i++)
        if (cc->dims[i] != sc->dims[i]) return nr_layer_error(c, "cos_cache and sin_cache shapes differ");
    p->has_position_ids = nr_in_count(c) > 3 && nr_in_present(c, 3);
    if (p->has_position_ids) {
        const netrun_value_desc *pid = nr_in(c, 3);
        if ((st = nr_check_dtype(c, 3, NR_DTYPES_INDEX)) != NETRUN_OK) return st;
        if (pid->rank != 2 || pid->dims[0] != p->batch || pid->dims[1] != p->seq_len)
            return nr_layer_error(c, "position_ids must be [%lld, %lld]", (long long)p->batch, (long long)p->seq_len);
        if (cc->rank != 2 || cc->dims[1] != rd / 2)
            return nr_layer_error(c, "cos_cache must be [max_position, %lld] with position_ids", (long long)(rd / 2));
    } else {
        if (cc->rank != 3 || cc->dims[0] != p->batch || cc->dims[1] != p->seq_len || cc->dims[2] != rd / 2)
            return nr_layer_error(c, "cos_cache must be [%lld, %lld, %lld] without position_ids", (long long)p->batch,
                                  (long long)p->seq_len, (long long)(rd / 2));
    }
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- LinearAttention ---- */

static netrun_status la_parse(nr_layer_ctx *c, void *params) {
    netrun_linear_attention_params *p = params;
    int64_t v;
    netrun_status st;
    if (!nr_attr_has(c, "q_num_heads") || !nr_attr_has(c, "kv_num_heads"))
        return nr_layer_error(c, "attributes 'q_num_heads' and 'kv_num_heads' are required");
    if ((st = nr_attr_int(c, "q_num_heads", 0, &v)) != NETRUN_OK) return st;
    if (!ceil_ok_heads(v)) return nr_layer_error(c, "attribute 'q_num_heads' = %lld must be >= 1", (long long)v);
    p->q_num_heads = (int)v;
    if ((st = nr_attr_int(c, "kv_num_heads", 0, &v)) != NETRUN_OK) return st;
    if (!ceil_ok_heads(v)) return nr_layer_error(c, "attribute 'kv_num_heads' = %lld must be >= 1", (long long)v);
    p->kv_num_heads = (int)v;
    if (p->q_num_heads % p->kv_num_heads)
        return nr_layer_error(c, "q_num_heads %d is not a multiple of kv_num_heads %d", p->q_num_heads, p->kv_num_heads);
    if ((st = nr_attr_float(c, "scale", 0.0f, &p->scale)) != NETRUN_OK) return st;
    if (!isfinite(p->scale)) return nr_layer_error(c, "attribute 'scale' must be finite");
    const char *rule;
    if ((st = nr_attr_string(c, "update_rule", "gated_delta", &rule)) != NETRUN_OK) return st;
    if (!strcmp(rule, "linear")) p->gating = 0, p->delta = 0;
    else if (!strcmp(rule, "gated")) p->gating = 1, p->delta = 0;
    else if (!strcmp(rule, "delta")) p->gating = 0, p->delta = 1;
    else if (!strcmp(rule, "gated_delta")) p->gating = 1, p->delta = 1;
    else return nr_layer_error(c, "attribute 'update_rule' = '%s' is not linear, gated, delta or gated_delta", rule);
    return NETRUN_OK;
}

static netrun_status la_infer(nr_layer_ctx *c, void *params) {
    netrun_linear_attention_params *p = params;
    netrun_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = nr_check_dtype(c, i, T_HALF_FLOAT)) != NETRUN_OK) return st;
        if (i && (st = nr_check_same_dtype(c, 0, i)) != NETRUN_OK) return st;
        if (nr_in(c, i)->rank != 3) return nr_layer_error(c, "input %d must be 3-D (B, T, H*D), got rank %d", i,
                                                          nr_in(c, i)->rank);
    }
    const netrun_value_desc *q = nr_in(c, 0), *k = nr_in(c, 1), *v = nr_in(c, 2);
    int64_t b = q->dims[0], t = q->dims[1], hq = p->q_num_heads, hk = p->kv_num_heads;
    for (int i = 1; i < 3; i++)
        if (nr_in(c, i)->dims[0] != b || nr_in(c, i)->dims[1] != t)
            return nr_layer_error(c, "input %d batch/sequence dims differ from query's", i);
    if (q->dims[2] % hq) return nr_layer_error(c, "query hidden size is not divisible by q_num_heads");
    if (k->dims[2] % hk || v->dims[2] % hk) return nr_layer_error(c, "key/value hidden size is not divisible by kv_num_heads");
    p->d_k = q->dims[2] / hq;
    p->d_v = v->dims[2] / hk;
    if (k->dims[2] / hk != p->d_k) return nr_layer_error(c, "key head size %lld differs from query head size %lld",
                                                         (long long)(k->dims[2] / hk), (long long)p->d_k);
    p->batch = b;
    p->seq_len = t;
    int n_in = nr_in_count(c);
    p->has_past = n_in > 3 && nr_in_present(c, 3);
    int has_decay = n_in > 4 && nr_in_present(c, 4), has_beta = n_in > 5 && nr_in_present(c, 5);
    if (p->gating && !has_decay) return nr_layer_error(c, "update_rule with gating requires the decay input");
    if (!p->gating && has_decay) return nr_layer_error(c, "update_rule without gating forbids the decay input");
    if (p->delta && !has_beta) return nr_layer_error(c, "update_rule with delta requires the beta input");
    if (!p->delta && has_beta) return nr_layer_error(c, "update_rule without delta forbids the beta input");
    netrun_dtype sdt = q->dtype;
    if (p->has_past) {
        const netrun_value_desc *s = nr_in(c, 3);
        if ((st = nr_check_dtype(c, 3, T_HALF_FLOAT)) != NETRUN_OK) return st;
        if (s->rank != 4 || s->dims[0] != b || s->dims[1] != hk || s->dims[2] != p->d_k || s->dims[3] != p->d_v)
            return nr_layer_error(c, "past_state must be [%lld, %lld, %lld, %lld]", (long long)b, (long long)hk,
                                  (long long)p->d_k, (long long)p->d_v);
        sdt = s->dtype;
    }
    if (has_decay) {
        const netrun_value_desc *d = nr_in(c, 4);
        if ((st = nr_check_same_dtype(c, 0, 4)) != NETRUN_OK) return st;
        if (d->rank != 3 || d->dims[0] != b || d->dims[1] != t)
            return nr_layer_error(c, "decay must be [%lld, %lld, kv_heads or kv_heads*d_k]", (long long)b, (long long)t);
        if (d->dims[2] == hk) p->decay_per_key = 0;
        else if (d->dims[2] == hk * p->d_k) p->decay_per_key = 1;
        else return nr_layer_error(c, "decay last dim %lld must be %lld or %lld", (long long)d->dims[2], (long long)hk,
                                   (long long)(hk * p->d_k));
    }
    if (has_beta) {
        const netrun_value_desc *bt = nr_in(c, 5);
        if ((st = nr_check_same_dtype(c, 0, 5)) != NETRUN_OK) return st;
        if (bt->rank != 3 || bt->dims[0] != b || bt->dims[1] != t || (bt->dims[2] != hk && bt->dims[2] != 1))
            return nr_layer_error(c, "beta must be [%lld, %lld, %lld or 1]", (long long)b, (long long)t, (long long)hk);
        p->beta_heads = bt->dims[2];
    }
    if (p->scale == 0.0f) p->scale = p->d_k > 0 ? (float)(1.0 / sqrt((double)p->d_k)) : 1.0f;
    int64_t y[3] = {b, t, hq * p->d_v}, s[4] = {b, hk, p->d_k, p->d_v};
    nr_out_set(c, 0, q->dtype, 3, y);
    nr_out_set(c, 1, sdt, 4, s);
    return NETRUN_OK;
}

/* ---- CausalConvWithState ---- */

static netrun_status cc_parse(nr_layer_ctx *c, void *params) {
    netrun_causal_conv_params *p = params;
    const char *act;
    netrun_status st = nr_attr_string(c, "activation", "none", &act);
    if (st != NETRUN_OK) return st;
    if (!strcmp(act, "none")) p->silu = 0;
    else if (!strcmp(act, "silu") || !strcmp(act, "swish")) p->silu = 1;
    else return nr_layer_error(c, "attribute 'activation' = '%s' is not none, silu or swish", act);
    return NETRUN_OK;
}

static netrun_status cc_infer(nr_layer_ctx *c, void *params) {
    netrun_causal_conv_params *p = params;
    netrun_status st;
    if ((st = nr_check_dtype(c, 0, T_HALF_FLOAT)) != NETRUN_OK) return st;
    if ((st = nr_check_same_dtype(c, 0, 1)) != NETRUN_OK) return st;
    const netrun_value_desc *x = nr_in(c, 0), *w = nr_in(c, 1);
    if (x->rank != 3) return nr_layer_error(c, "input must be 3-D (batch, channels, length), got rank %d", x->rank);
    if (w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 || w->dims[2] < 1)
        return nr_layer_error(c, "weight must be [%lld, 1, k] with k >= 1", (long long)x->dims[1]);
    p->batch = x->dims[0];
    p->channels = x->dims[1];
    p->length = x->dims[2];
    p->kernel = w->dims[2];
    int n_in = nr_in_count(c);
    p->has_bias = n_in > 2 && nr_in_present(c, 2);
    p->has_past = n_in > 3 && nr_in_present(c, 3);
    if (p->has_bias) {
        if ((st = nr_check_same_dtype(c, 0, 2)) != NETRUN_OK) return st;
        const netrun_value_desc *bi = nr_in(c, 2);
        if (bi->rank != 1 || bi->dims[0] != p->channels)
            return nr_layer_error(c, "bias must be [%lld]", (long long)p->channels);
    }
    if (p->has_past) {
        if ((st = nr_check_same_dtype(c, 0, 3)) != NETRUN_OK) return st;
        const netrun_value_desc *s = nr_in(c, 3);
        if (s->rank != 3 || s->dims[0] != p->batch || s->dims[1] != p->channels || s->dims[2] != p->kernel - 1)
            return nr_layer_error(c, "past_state must be [%lld, %lld, %lld]", (long long)p->batch,
                                  (long long)p->channels, (long long)(p->kernel - 1));
    }
    int64_t s[3] = {p->batch, p->channels, p->kernel - 1};
    nr_out_set(c, 0, x->dtype, 3, x->dims);
    nr_out_set(c, 1, x->dtype, 3, s);
    return NETRUN_OK;
}

const nr_layer nr_layers_transformer[] = {
    {"Attention", "", 23, sizeof(netrun_attention_params), attn_parse, attn_infer, 0},
    {"FlexAttention", "ai.onnx.preview", 1, sizeof(netrun_attention_params), flex_parse, flex_infer, 0},
    {"RMSNormalization", "", 23, sizeof(netrun_norm_params), rms_parse, rms_infer, 0},
    {"RotaryEmbedding", "", 23, sizeof(netrun_rotary_params), rope_parse, rope_infer, 0},
    {"LinearAttention", "", 27, sizeof(netrun_linear_attention_params), la_parse, la_infer, 0},
    {"CausalConvWithState", "", 27, sizeof(netrun_causal_conv_params), cc_parse, cc_infer, 0},
    {0},
};
