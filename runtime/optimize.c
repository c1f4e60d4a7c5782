/* Graph passes (see optimize.h and docs/design.md, "Graph passes").
 *
 * They run after placement: a fusion is only made when the Conv and the nodes fused into it run on the same
 * backend, and that backend's supports() accepts the fused node; so a pass never moves work to another
 * backend nor causes a fallback. The rewrite goes into a private copy of the model (the loaded model is
 * shared by concurrent sessions and stays untouched); constants of the copy borrow the original's data, and
 * only folded weights are new. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimize_internal.h"
#include "qdq_fuse.h"
#include "subgraphs.h"

/* The passes, in the order they run: (d) Identity, Dropout and same-type Casts dropped and (e) SiLU pairs, then (a)-(c) the Conv fusions
 * (opt_fuse.c); the copy is built (opt_copy.c); (f) the nChw16c region (opt_nchw16c.c) and (g) the float16 NHWC
 * region (opt_fp16.c) are planned on it for the backends that declare them (ABI 1.10 regions). (h) the transformer
 * fusions (opt_transformer.c) run first, on the original graph, right after (d); (k) MatMul + bias Adds as
 * MatMulBias right after them (same file). */

static void free_state(opt_state *o) {
    nr_free(o->alias);
    nr_free(o->pinned);
    nr_free(o->users);
    nr_free(o->user);
    nr_free(o->removed);
    nr_free(o->snode_of);
    nr_free(o->plan);
    nr_free(o->swish_x);
    nr_free(o->blk_conv);
    nr_free(o->h_conv);
    nr_free(o->repl_of);
    nr_free(o->sib_lead);
    nr_free(o->sib_out);
    nr_free(o->repls);
}

netrun_model *nr_optimize_original(const netrun_model *m) {
    const nr_graph *g = m && m->ir ? m->ir->graph : NULL;
    const nr_attr *a = g && g->n_nodes > 0 ? opt_find_attr(&g->nodes[0], MARK_ATTR) : NULL;
    return a ? a->sub_model : NULL;
}

void nr_optimize_model_counts(const netrun_model *m, nr_optimize_counts *c) {
    memset(c, 0, sizeof *c);
    const nr_graph *g = m && m->ir ? m->ir->graph : NULL;
    if (!g || g->n_nodes < 1) return;
    const nr_attr *a = opt_find_attr(&g->nodes[0], MARK_ATTR);
    if (!a || a->type != NR_ATTR_INTS || a->n < 5 || !a->ints) return;
    c->bn_folded = (int)a->ints[0];
    c->act_fused = (int)a->ints[1];
    c->sum_fused = (int)a->ints[2];
    c->dropped = (int)a->ints[3];
    c->swish_fused = (int)a->ints[4];
    if (a->n >= 7) {
        c->nchwc_convs = (int)a->ints[5];
        c->nchwc_reorders = (int)a->ints[6];
    }
    if (a->n >= 9) {
        c->fp16_convs = (int)a->ints[7];
        c->fp16_converts = (int)a->ints[8];
    }
    if (a->n >= 12) {
        c->attention_fused = (int)a->ints[9];
        c->layernorm_fused = (int)a->ints[10];
        c->gelu_fused = (int)a->ints[11];
    }
    if (a->n >= 14) {
        c->fp16_nodes = (int)a->ints[12];
        c->fp16_casts = (int)a->ints[13];
    }
}

netrun_status nr_optimize_session(netrun_session *s, const netrun_backend_config *cfg, netrun_model **out,
                                  nr_optimize_counts *counts) {
    *out = NULL;
    memset(counts, 0, sizeof *counts);
    const char *on = nr_options_get(&s->opts, "graph.optimize");
    if ((on && !strcmp(on, "0")) || s->keep_values || s->root) return NETRUN_OK;
    const nr_graph *g = s->model->ir->graph;
    if (g->n_nodes < 2 || g->parent || opt_find_attr(&g->nodes[0], MARK_ATTR)) return NETRUN_OK;
    int has_subgraphs = 0;
    for (int n = 0; n < g->n_nodes; n++)
        for (int a = 0; a < g->nodes[n].n_attrs; a++) {
            nr_attr_type t = g->nodes[n].attrs[a].type;
            has_subgraphs |= t == NR_ATTR_GRAPH || t == NR_ATTR_GRAPHS;
        }
    if (!has_subgraphs) { /* the QDQ pass does not track captures yet */
        int n_qdq = 0; /* QDQ groups -> QLinearConv / QLinearMatMul first: the passes below run on that copy */
        netrun_status qst = nr_qdq_fuse_session(s, cfg, out, &n_qdq);
        if (qst != NETRUN_OK || *out) return qst;
    }
    opt_state o = {.s = s, .g = g};
    size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
    o.alias = nr_calloc(nv, sizeof(int));
    o.pinned = nr_calloc(nv, 1);
    o.users = nr_calloc(nv, sizeof(int));
    o.user = nr_calloc(nv, sizeof(int));
    o.removed = nr_calloc(nn, sizeof(int));
    o.snode_of = nr_calloc(nn, sizeof(int));
    o.plan = nr_calloc(nn, sizeof(conv_plan));
    o.swish_x = nr_calloc(nn, sizeof(int));
    o.blk_conv = nr_calloc(nn, sizeof(int));
    o.h_conv = nr_calloc(nn, sizeof(int));
    o.repl_of = nr_calloc(nn, sizeof(int));
    o.sib_lead = nr_calloc(nn, sizeof(int));
    o.sib_out = nr_calloc(nn, sizeof(int));
    if (!o.alias || !o.pinned || !o.users || !o.user || !o.removed || !o.snode_of || !o.plan || !o.swish_x || !o.blk_conv ||
        !o.h_conv || !o.repl_of || !o.sib_lead || !o.sib_out) {
        free_state(&o);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
    }
    for (int v = 0; v < g->n_values; v++) o.alias[v] = v, o.pinned[v] = g->values[v].is_graph_output;
    /* values the subgraphs of If / Loop / Scan read by name stay as written (bodies see the copy by name) and
     * count as one more use, so no fusion absorbs them */
    int caps[NR_MAX_CAPTURES];
    for (int n = 0; has_subgraphs && n < g->n_nodes; n++) {
        int nc = nr_node_captures(g, &g->nodes[n], caps, NR_MAX_CAPTURES);
        for (int i = 0; i < nc; i++) o.pinned[caps[i]] = 1, o.users[caps[i]]++;
    }
    for (int n = 0; n < g->n_nodes; n++) {
        o.plan[n].bn = o.plan[n].add = o.plan[n].act = o.plan[n].z = o.plan[n].mul = -1;
        o.snode_of[n] = o.swish_x[n] = o.repl_of[n] = o.sib_lead[n] = o.sib_out[n] = -1;
    }
    for (int k = 0; k < s->n_snodes; k++) o.snode_of[s->snodes[k].node] = k;
    /* (d) Identity / inference Dropout: consumers read the input instead (topological order resolves chains).
     * Nodes folded at prepare are left alone (they cost nothing). */
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        if (s->snodes[k].slot == NR_SLOT_FOLDED || !opt_is_noop(&o, n)) continue;
        const nr_node *nd = &g->nodes[n];
        o.alias[nd->outputs[0]] = o.alias[nd->inputs[0]];
        o.removed[n] = 1;
        counts->dropped++;
    }
    for (int n = 0; n < g->n_nodes; n++) {
        if (o.removed[n]) continue;
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = val(&o, g->nodes[n].inputs[i]);
            if (v < 0) continue;
            o.users[v]++;
            o.user[v] = n;
        }
    }
    /* (h) attention, LayerNormalization and Gelu subgraphs as the one op they compute (opt_transformer.c) */
    int n_mmb = 0; /* MatMulBias nodes (com.netrun) among the replacements */
    netrun_status tst = opt_plan_transformer(&o, cfg, &counts->attention_fused, &counts->layernorm_fused,
                                             &counts->gelu_fused, &n_mmb);
    if (tst != NETRUN_OK) {
        free_state(&o);
        memset(counts, 0, sizeof *counts);
        return tst;
    }
    /* (e) SiLU pairs first, so that a Conv below can take the Swish as its activation */
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        if (!o.removed[n] && o.repl_of[n] < 0 && opt_plan_silu(&o, cfg, n)) counts->swish_fused++;
    }
    /* (a)-(c) around each Conv, in execution order; absorbed nodes are marked as they are planned */
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        const nr_node *nd = &g->nodes[n];
        if (o.removed[n] || !(is_op(nd, "Conv") || is_op(nd, "ConvTranspose")) || !nd->layer) continue;
        opt_plan_conv(&o, cfg, n);
        conv_plan *p = &o.plan[n];
        if (p->bn >= 0) o.removed[p->bn] = 1, counts->bn_folded++;
        for (int i = 0; i < p->n_aff; i++) o.removed[p->aff[i]] = 1, counts->bn_folded++;
        if (p->add >= 0) o.removed[p->add] = 1, counts->sum_fused++;
        if (p->act >= 0) o.removed[p->act] = 1, counts->act_fused++;
    }
    /* (a'') per-channel Mul / Add and an activation after a BatchNormalization no Conv took */
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        if (o.removed[n] || o.repl_of[n] >= 0 || !is_op(&g->nodes[n], "BatchNormalization")) continue;
        opt_plan_bn(&o, cfg, n);
        for (int i = 0; i < o.plan[n].n_aff; i++) o.removed[o.plan[n].aff[i]] = 1, counts->bn_folded++;
        if (o.plan[n].act >= 0) o.removed[o.plan[n].act] = 1, counts->act_fused++;
    }
    /* (f) which Convs could run nChw16c (decided on the copy below) */
    int n_blk = 0;
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        if (!o.removed[n] && (o.blk_conv[n] = opt_plan_se_fold(&o, cfg, n))) n_blk++;
    }
    int n_se = 0;
    for (int n = 0; n < g->n_nodes; n++) n_se += !o.removed[n] && o.plan[n].mul >= 0;
    if (n_se)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "squeeze-excite: %d Mul nodes folded into the 1x1 Convs "
                           "reading them (%s=0 keeps them)", n_se, o.se_option ? o.se_option : "?");
    /* (g) which Convs could run float16 NHWC (regions decided on the copy below) */
    int n_h = 0;
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        if (!o.removed[n] && (o.h_conv[n] = opt_plan_h_conv(&o, cfg, n))) n_h++;
    }
    /* (j) sibling Convs merged (after (f) and (g): members must agree on them) */
    int n_sib_convs = 0, n_sib = opt_plan_siblings(&o, &n_sib_convs);
    if (n_sib)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "sibling convolutions: %d groups (%d Convs) run as one Conv "
                           "and a Split each (graph.merge_siblings=0 keeps them apart)", n_sib, n_sib_convs);
    /* (i) whether a plain float16 region could form (planned on the copy, after (g)) */
    int n_half = opt_half_seeds(&o, cfg);
    if (!counts->bn_folded && !counts->act_fused && !counts->sum_fused && !counts->dropped && !counts->swish_fused &&
        !n_blk && !n_h && !o.n_repls && !n_half && !n_sib) {
        free_state(&o);
        return NETRUN_OK;
    }
    /* the copy */
    netrun_status st = NETRUN_OK;
    int *from = NULL, *conv_blk = NULL;
    char *hkind = NULL;
    nr_model_ir *ir = nr_calloc(1, sizeof *ir);
    const nr_model_ir *src = s->model->ir;
    if (!ir || !(ir->graph = nr_graph_new(g->name, NULL))) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
        goto fail;
    }
    ir->ir_version = src->ir_version;
    if (src->producer && !(ir->producer = nr_strdup(src->producer))) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
        goto fail;
    }
    if (src->n_opsets) {
        if (!(ir->opsets = nr_calloc((size_t)src->n_opsets, sizeof *ir->opsets))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        for (int i = 0; i < src->n_opsets; i++, ir->n_opsets++) {
            ir->opsets[i].version = src->opsets[i].version;
            if (!(ir->opsets[i].domain = nr_strdup(src->opsets[i].domain ? src->opsets[i].domain : ""))) {
                st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
                goto fail;
            }
        }
    }
    if ((st = opt_build_copy(&o, ir->graph, &from)) != NETRUN_OK) goto fail;
    int n_copied = ir->graph->n_nodes;
    if (n_blk) {
        if (!(conv_blk = nr_calloc((size_t)n_copied + 1, sizeof(int)))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        if ((st = opt_plan_nchwc(&o, cfg, ir->graph, from, n_copied, conv_blk, &counts->nchwc_reorders)) != NETRUN_OK)
            goto fail;
        for (int k = 0; k < n_copied; k++) counts->nchwc_convs += conv_blk[k] != 0 && conv_blk[k] != 4;
    }
    if (n_h) {
        if (!(hkind = nr_calloc((size_t)n_copied + 1, 1))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        if ((st = opt_plan_fp16(&o, cfg, ir->graph, from, n_copied, hkind, &counts->fp16_convs, &counts->fp16_converts)) !=
            NETRUN_OK)
            goto fail;
    }
    if (n_half && (st = opt_plan_half(&o, cfg, ir->graph, from, n_copied, hkind, &counts->fp16_nodes,
                                      &counts->fp16_casts)) != NETRUN_OK)
        goto fail;
    if (n_blk || n_h || n_mmb) { /* the internal ops' domain */
        nr_opset_import *ops = nr_realloc(ir->opsets, (size_t)(ir->n_opsets + 1) * sizeof *ops);
        if (!ops) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        ir->opsets = ops;
        ops[ir->n_opsets].version = 1;
        if (!(ops[ir->n_opsets].domain = nr_strdup("com.netrun"))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        ir->n_opsets++;
    }
    /* the mark: counts, and the reference that keeps the borrowed constants alive */
    nr_node *first = &ir->graph->nodes[0];
    nr_attr *mark = &first->attrs[first->n_attrs - 1];
    if (!(mark->name = nr_strdup(MARK_ATTR)) || !(mark->ints = nr_calloc(14, sizeof(int64_t)))) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
        goto fail;
    }
    mark->type = NR_ATTR_INTS;
    mark->n = 14;
    mark->ints[0] = counts->bn_folded;
    mark->ints[1] = counts->act_fused;
    mark->ints[2] = counts->sum_fused;
    mark->ints[3] = counts->dropped;
    mark->ints[4] = counts->swish_fused;
    mark->ints[5] = counts->nchwc_convs;
    mark->ints[6] = counts->nchwc_reorders;
    mark->ints[7] = counts->fp16_convs;
    mark->ints[8] = counts->fp16_converts;
    mark->ints[9] = counts->attention_fused;
    mark->ints[10] = counts->layernorm_fused;
    mark->ints[11] = counts->gelu_fused;
    mark->ints[12] = counts->fp16_nodes;
    mark->ints[13] = counts->fp16_casts;
    nr_model_retain(s->model);
    mark->sub_model = s->model;
    char source[1100];
    snprintf(source, sizeof source, "%s", s->model->source ? s->model->source : "<memory>");
    netrun_model *m = NULL;
    st = nr_model_from_ir(ir, source, &m); /* takes ir, also on failure */
    ir = NULL;
    if (st != NETRUN_OK) goto fail;
    /* the fused fields are no ONNX attributes: set them on the copy's parsed params */
    for (int n = 0; n < n_copied && n < m->ir->graph->n_nodes; n++) {
        if (conv_blk && conv_blk[n] == 4) { /* MaxPool, AveragePool */
            netrun_pool_params *pp = m->ir->graph->nodes[n].params;
            if (pp) pp->blocked = 1;
        } else if (conv_blk && conv_blk[n]) {
            netrun_conv_params *bp = m->ir->graph->nodes[n].params;
            if (bp) bp->src_blocked = conv_blk[n] & 1, bp->dst_blocked = (conv_blk[n] & 2) != 0;
        }
        if (hkind && hkind[n] == HK_CONV) {
            netrun_conv_params *hp = m->ir->graph->nodes[n].params;
            if (hp) hp->src_nhwc = hp->dst_nhwc = 1;
        } else if (hkind && hkind[n] == HK_POOL) {
            netrun_pool_params *pp = m->ir->graph->nodes[n].params;
            if (pp) pp->nhwc = 1;
        }
        if (from[n] < 0) continue; /* a node the passes made (a Split, a Reshape): no plan of its own */
        if (o.swish_x[from[n]] >= 0) m->ir->graph->nodes[n].opset = 24; /* Swish is an opset-24 op */
        const conv_plan *p = &o.plan[from[n]];
        if (is_op(&m->ir->graph->nodes[n], "BatchNormalization")) { /* opt_plan_bn: an activation at most */
            netrun_norm_params *np = m->ir->graph->nodes[n].params;
            if (np && p->act >= 0) np->activation = p->fa;
            continue;
        }
        netrun_conv_params *cp = m->ir->graph->nodes[n].params;
        if (!cp || !plan_absorbs(p)) continue;
        if (p->mul >= 0) cp->src_scale = 1;
        if (p->add >= 0) cp->has_sum = 1;
        if (p->act >= 0) cp->activation = p->fa;
    }
    if (counts->fp16_convs || counts->fp16_converts)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "float16 NHWC regions: %d Convs, %d border conversions",
                           counts->fp16_convs, counts->fp16_converts);
    if (counts->fp16_nodes)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "float16 regions: %d nodes kept in float16, %d border Casts",
                           counts->fp16_nodes, counts->fp16_casts);
    *out = m;
    nr_free(from);
    nr_free(conv_blk);
    nr_free(hkind);
    free_state(&o);
    return NETRUN_OK;
fail:
    nr_free(from);
    nr_free(conv_blk);
    nr_free(hkind);
    nr_model_ir_free(ir);
    free_state(&o);
    memset(counts, 0, sizeof *counts);
    return st;
}


/* ---- the ops the passes make, as reports show them ---- */

/* Nodes the graph passes insert or rewrite into netrun's own ops (domain com.netrun) are shown under the ONNX op
 * they stand for, so that placements and profiles speak the model's language; the kernel column tells the rest. */
static const struct {
    const char *internal, *shown, *layout;
} internal_ops[] = {
    {"GlobalAveragePoolNCHWc", "GlobalAveragePool", "nChw16c"},
    {"MulChannelNCHWc", "Mul", "nChw16c"},
    {"ReorderNCHWc", "Reorder (layout)", "NCHW <-> nChw16c"},
    {"GlobalAveragePoolNHWC", "GlobalAveragePool", "float16 NHWC"},
    {"MulChannelNHWC", "Mul", "float16 NHWC"},
    {"ConcatNHWC", "Concat", "float16 NHWC"},
    {"ReorderNHWC", "Reorder (layout)", "float32 NCHW <-> float16 NHWC"},
};

static int internal_op(const nr_node *nd) {
    if (strcmp(nd->domain, "com.netrun")) return -1;
    for (int i = 0; i < (int)(sizeof internal_ops / sizeof internal_ops[0]); i++)
        if (!strcmp(nd->op_type, internal_ops[i].internal)) return i;
    return -1;
}

const char *nr_internal_op_shown(const nr_node *nd) {
    int k = internal_op(nd);
    return k >= 0 ? internal_ops[k].shown : nd->op_type;
}

const char *nr_internal_op_layout(const nr_node *nd) {
    int k = internal_op(nd);
    return k >= 0 ? internal_ops[k].layout : NULL;
}
