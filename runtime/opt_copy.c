/* Graph passes: the session's private copy of the graph, with the planned fusions applied (folded weights are new
 * constants; every other constant borrows the loaded model's data). Also the helpers that add values and layout
 * nodes to it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimize_internal.h"

/* ---- building the copy ---- */

/* y s + t per channel, then the plan's Mul (s *= c, t *= c) and Add (t += c) nodes by per-channel constants in
 * turn; y0: the value the first of them reads. -1 done, else the node whose constant is gone. */
static int compose_affine(const opt_state *o, const conv_plan *p, int y0, int64_t m, float *scale, float *shift) {
    const nr_graph *g = o->g;
    for (int i = 0; i < p->n_aff; i++) {
        const nr_node *ad = &g->nodes[p->aff[i]];
        int y = i ? g->nodes[p->aff[i - 1]].outputs[0] : y0;
        const nr_tensor *ct = opt_value_f32(o, val(o, ad->inputs[0]) == y ? val(o, ad->inputs[1]) : val(o, ad->inputs[0]));
        if (!ct) return p->aff[i];
        const float *cd = ct->data;
        int per = nr_tensor_count(ct) == m && m > 1, mul = is_op(ad, "Mul"); /* else one value for every channel */
        for (int64_t c = 0; c < m; c++) {
            float k = cd[per ? c : 0];
            if (mul)
                scale[c] *= k, shift[c] *= k;
            else
                shift[c] += k;
        }
    }
    return -1;
}

/* The plan's folds into Conv node nd of M output channels: y s + t per channel, from the BatchNormalization
 * (s = gamma / sqrt(var + eps), t = beta - mean s) and then each Mul (s *= c, t *= c) and Add (t += c) by
 * per-channel constants; W' = W s per output channel, B' = B s + t. */
static netrun_status fold_into_conv(const opt_state *o, nr_graph *ng, const nr_node *nd, const conv_plan *p,
                                    int64_t m, int *w_id, int *b_id) {
    const nr_graph *g = o->g;
    const nr_tensor *w = opt_const_f32(g, val(o, nd->inputs[1]));
    const nr_tensor *b = nd->n_inputs > 2 && nd->inputs[2] >= 0 ? opt_const_f32(g, val(o, nd->inputs[2])) : NULL;
    const nr_node *last = p->n_aff ? &g->nodes[p->aff[p->n_aff - 1]] : &g->nodes[p->bn];
    int transpose = is_op(nd, "ConvTranspose");
    const netrun_conv_params *cp = nd->params;
    int64_t group = cp && cp->group > 0 ? cp->group : 1;
    int64_t nw = w ? nr_tensor_count(w) : 0;
    if (!w || w->rank < 3 || nw <= 0 || m <= 0 || (b && nr_tensor_count(b) != m))
        return nr_error(NETRUN_ERR_INTERNAL, "node '%s': unexpected weight shape folding '%s'", nd->name, last->name);
    int64_t inner = nw / w->dims[0] / w->dims[1]; /* kernel elements */
    float *scale = nr_calloc(2 * (size_t)m + 1, sizeof(float));
    nr_tensor *nw_t = nr_tensor_new(NETRUN_DTYPE_FLOAT, w->rank, w->dims);
    int64_t bd[1] = {m};
    nr_tensor *nb_t = nr_tensor_new(NETRUN_DTYPE_FLOAT, 1, bd);
    if (!scale || !nw_t || !nb_t) {
        nr_free(scale);
        nr_tensor_free(nw_t);
        nr_tensor_free(nb_t);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory folding '%s' into '%s'", last->name, nd->name);
    }
    float *shift = scale + m;
    for (int64_t c = 0; c < m; c++) scale[c] = 1.0f;
    if (p->bn >= 0) {
        const nr_node *bn = &g->nodes[p->bn];
        const float *gamma = opt_const_f32(g, val(o, bn->inputs[1]))->data;
        const float *beta = opt_const_f32(g, val(o, bn->inputs[2]))->data;
        const float *mean = opt_const_f32(g, val(o, bn->inputs[3]))->data;
        const float *var = opt_const_f32(g, val(o, bn->inputs[4]))->data;
        float eps = opt_attr_f(bn, "epsilon", 1e-5f);
        for (int64_t c = 0; c < m; c++) {
            scale[c] = gamma[c] / sqrtf(var[c] + eps);
            shift[c] = beta[c] - mean[c] * scale[c];
        }
    }
    int bad = compose_affine(o, p, p->bn >= 0 ? g->nodes[p->bn].outputs[0] : nd->outputs[0], m, scale, shift);
    if (bad >= 0) {
        nr_free(scale);
        nr_tensor_free(nw_t);
        nr_tensor_free(nb_t);
        return nr_error(NETRUN_ERR_INTERNAL, "node '%s': '%s' lost its constant", nd->name, g->nodes[bad].name);
    }
    const float *src = w->data;
    float *dst = nw_t->data, *bias = nb_t->data;
    for (int64_t i0 = 0; i0 < w->dims[0]; i0++)
        for (int64_t i1 = 0; i1 < w->dims[1]; i1++) {
            /* output channel: W dim 0 for Conv; for ConvTranspose W is [C, M/group, k...] */
            int64_t oc = transpose ? (i0 / (w->dims[0] / group)) * w->dims[1] + i1 : i0;
            float sc = oc < m ? scale[oc] : 1.0f;
            const float *s = src + (i0 * w->dims[1] + i1) * inner;
            float *d = dst + (i0 * w->dims[1] + i1) * inner;
            for (int64_t k = 0; k < inner; k++) d[k] = s[k] * sc;
        }
    for (int64_t c = 0; c < m; c++) bias[c] = (b ? ((const float *)b->data)[c] : 0.0f) * scale[c] + shift[c];
    nr_free(scale);
    *w_id = nr_graph_new_const(ng, g->values[nd->inputs[1]].name, ".bn_folded", nw_t);
    *b_id = *w_id < 0 ? -1 : nr_graph_new_const(ng, last->name, ".bias_folded", nb_t);
    if (*w_id < 0 && nb_t) nr_tensor_free(nb_t);
    if (*w_id < 0 || *b_id < 0) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory adding folded weights");
    return NETRUN_OK;
}

/* A BatchNormalization followed by per-channel Mul (s) / Add (t): gamma' = gamma s, beta' = beta s + t. */
static netrun_status fold_into_bn(const opt_state *o, nr_graph *ng, const nr_node *bn, const conv_plan *p,
                                  int *gamma_id, int *beta_id) {
    const nr_graph *g = o->g;
    const nr_tensor *gt = opt_const_f32(g, val(o, bn->inputs[1])), *bt = opt_const_f32(g, val(o, bn->inputs[2]));
    const nr_node *last = &g->nodes[p->aff[p->n_aff - 1]];
    int64_t m = gt ? nr_tensor_count(gt) : 0;
    if (!gt || !bt || m <= 0 || nr_tensor_count(bt) != m)
        return nr_error(NETRUN_ERR_INTERNAL, "node '%s': folding '%s' needs constant statistics", bn->name, last->name);
    nr_tensor *ngt = nr_tensor_new(NETRUN_DTYPE_FLOAT, gt->rank, gt->dims);
    nr_tensor *nbt = nr_tensor_new(NETRUN_DTYPE_FLOAT, bt->rank, bt->dims);
    if (!ngt || !nbt) {
        nr_tensor_free(ngt);
        nr_tensor_free(nbt);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory folding '%s' into '%s'", last->name, bn->name);
    }
    float *gamma = ngt->data, *beta = nbt->data;
    memcpy(gamma, gt->data, (size_t)m * sizeof(float));
    memcpy(beta, bt->data, (size_t)m * sizeof(float));
    int bad = compose_affine(o, p, bn->outputs[0], m, gamma, beta);
    if (bad >= 0) {
        nr_tensor_free(ngt);
        nr_tensor_free(nbt);
        return nr_error(NETRUN_ERR_INTERNAL, "node '%s': '%s' lost its constant", bn->name, g->nodes[bad].name);
    }
    *gamma_id = nr_graph_new_const(ng, g->values[bn->inputs[1]].name, ".folded", ngt);
    *beta_id = *gamma_id < 0 ? -1 : nr_graph_new_const(ng, g->values[bn->inputs[2]].name, ".folded", nbt);
    if (*gamma_id < 0) nr_tensor_free(nbt);
    if (*gamma_id < 0 || *beta_id < 0) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory adding folded constants");
    return NETRUN_OK;
}

/* Name of the node that stands for node n: "<sigmoid>+<mul>" for a SiLU pair, else n's own. */
static void swish_name(const opt_state *o, int n, char *buf, size_t size) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    if (o->swish_x[n] < 0) {
        snprintf(buf, size, "%s", nd->name);
        return;
    }
    for (int i = 0; i < nd->n_inputs; i++) {
        int v = val(o, nd->inputs[i]);
        if (v == o->swish_x[n]) continue;
        int sg = opt_producer(o, v);
        snprintf(buf, size, "%s+%s", sg >= 0 ? g->nodes[sg].name : "?", nd->name);
        return;
    }
    snprintf(buf, size, "%s", nd->name);
}

netrun_status opt_build_copy(opt_state *o, nr_graph *ng, int **params_from) {
    const nr_graph *g = o->g;
    netrun_status st = nr_graph_copy_values_borrowed(g, ng);
    if (st != NETRUN_OK) return st;
    /* new node -> the original node it stands for (its plan, layout flags); -1 for nodes the passes make */
    int *from = nr_calloc((size_t)g->n_nodes + 1, sizeof(int));
    if (!from) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    *params_from = from;
    for (int n = 0; n < g->n_nodes; n++) {
        if (o->removed[n]) continue;
        if (o->repl_of[n] >= 0) {
            if ((st = opt_emit_repl(o, ng, n, from)) != NETRUN_OK) return st;
            continue;
        }
        if (o->sib_lead[n] == n) {
            if ((st = opt_emit_siblings(o, ng, n, from)) != NETRUN_OK) return st;
            continue;
        }
        const nr_node *nd = &g->nodes[n];
        const conv_plan *p = &o->plan[n];
        int fused = plan_absorbs(p);
        char name[1280], act_name[512] = "", aff_name[640] = "";
        if (p->act >= 0) swish_name(o, p->act, act_name, sizeof act_name);
        for (int i = 0, len = 0; i < p->n_aff && len < (int)sizeof aff_name; i++)
            len += snprintf(aff_name + len, sizeof aff_name - (size_t)len, "+%s", g->nodes[p->aff[i]].name);
        snprintf(name, sizeof name, "%s%s%s%s%s%s%s%s%s%s", p->mul >= 0 ? g->nodes[p->mul].name : "",
                 p->mul >= 0 ? "+" : "", nd->name, p->bn >= 0 ? "+" : "", p->bn >= 0 ? g->nodes[p->bn].name : "",
                 aff_name, p->add >= 0 ? "+" : "", p->add >= 0 ? g->nodes[p->add].name : "", p->act >= 0 ? "+" : "",
                 act_name);
        if (o->swish_x[n] >= 0) { /* Mul(x, Sigmoid(x)) -> Swish(x); alpha defaults to 1 */
            swish_name(o, n, name, sizeof name);
            nr_node *sw = nr_graph_add_node(ng, name, "Swish", "", 1, 1, ng->n_nodes == 0);
            if (!sw) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", nd->name);
            from[ng->n_nodes - 1] = n;
            sw->inputs[0] = o->swish_x[n];
            sw->outputs[0] = nd->outputs[0];
            continue;
        }
        int w_id = -1, b_id = -1;
        /* a BatchNormalization (opt_plan_bn) keeps its 5 inputs, gamma and beta new when Mul / Add fold in */
        int bn_fused = fused && is_op(nd, "BatchNormalization");
        if (bn_fused && p->n_aff && (st = fold_into_bn(o, ng, nd, p, &w_id, &b_id)) != NETRUN_OK) return st;
        if (!bn_fused && plan_folds(p) && (st = fold_into_conv(o, ng, nd, p, o->s->snodes[o->snode_of[n]].out_desc[0].dims[1],
                                                  &w_id, &b_id)) != NETRUN_OK)
            return st;
        int n_in = nd->n_inputs;
        int zi = 3 + (p->mul >= 0); /* Z's index: after S when a scale is folded in */
        if (fused && !bn_fused) {
            n_in = zi + (p->add >= 0);
            if (p->add < 0 && !plan_folds(p) && p->mul < 0 && nd->n_inputs < 3) n_in = nd->n_inputs;
        }
        int n_attrs = nd->n_attrs + (ng->n_nodes == 0);
        nr_node *nn = nr_graph_add_node(ng, name, nd->op_type, nd->domain, n_in, nd->n_outputs, n_attrs);
        if (!nn) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", nd->name);
        from[ng->n_nodes - 1] = n;
        for (int i = 0; i < n_in; i++) nn->inputs[i] = i < nd->n_inputs ? val(o, nd->inputs[i]) : -1;
        if (w_id >= 0) nn->inputs[1] = w_id;
        if (b_id >= 0) nn->inputs[2] = b_id;
        if (p->mul >= 0) nn->inputs[0] = p->sx, nn->inputs[3] = p->sv;
        if (p->add >= 0) nn->inputs[zi] = p->z;
        for (int k = 0; k < nd->n_outputs; k++) nn->outputs[k] = nd->outputs[k];
        if (fused) nn->outputs[0] = p->out;
        for (int a = 0; a < nd->n_attrs; a++)
            if ((st = nr_attr_copy_borrowed(&nn->attrs[a], &nd->attrs[a])) != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}


/* A new value like v (same dtype and dims), named v's name + suffix. */
int opt_like_value(nr_graph *ng, int v, const char *suffix) {
    char name[600];
    snprintf(name, sizeof name, "%s%s", ng->values[v].name, suffix);
    for (int k = 2; nr_graph_find_value(ng, name) >= 0; k++)
        snprintf(name, sizeof name, "%s%s%d", ng->values[v].name, suffix, k);
    int id = nr_graph_value(ng, name);
    if (id < 0) return -1;
    nr_value *a = &ng->values[v], *b = &ng->values[id];
    b->dtype = a->dtype;
    b->rank = a->rank;
    memcpy(b->dims, a->dims, sizeof b->dims);
    return id;
}

/* An internal layout node (com.netrun) from -> to with one int attribute, named after to's value. 1, or 0 on OOM. */
int opt_add_layout_node(nr_graph *ng, int from, int to, const char *op, const char *attr, int value,
                           const char *suffix) {
    char name[640];
    snprintf(name, sizeof name, "%s.%s", ng->values[to].name, suffix);
    nr_node *r = nr_graph_add_node(ng, name, op, "com.netrun", 1, 1, 1);
    if (!r) return 0;
    r->inputs[0] = from;
    r->outputs[0] = to;
    r->attrs[0].type = NR_ATTR_INT;
    r->attrs[0].i = value;
    return (r->attrs[0].name = nr_strdup(attr)) != NULL;
}

