/* Graph passes: sibling convolutions. Convs that read the same value with the same window (kernel, strides, pads,
 * dilations; no groups), constant weights, the same fused activation (or none) and the same backend become one
 * Conv with their weights stacked along the output channels, and a Split along channels hands each its outputs.
 * A detector head is the case: its class, box and landmark convs of 1 to 10 channels each read one feature map, a
 * kernel call apiece, each blocked CPU kernel padding its few channels to 16 and reading the whole input again;
 * a face detector's three levels of four such convs were half its CPU time. One conv of their summed channels
 * reads the input once. The rule stays narrow where a Split would cost more than it saves: siblings whose outputs
 * feed further convolutions (RetinaNet's towers, Inception's branches) stay apart, since the Split would end the
 * blocked (nChw16c) or float16 NHWC layout those convolutions share; so do convs a float16 NHWC region may take,
 * convs with folded BatchNorms, fused sums or scales, and any on shapes known only at run time.
 * Option graph.merge_siblings=0 turns it off. */
#include <stdio.h>
#include <string.h>

#include "optimize_internal.h"

/* A Conv this pass may merge: its W (and B) constant float32, one output, no groups, static shapes, nothing
 * folded in but an activation. */
static int candidate(const opt_state *o, int n, const char *feeds_conv) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    if (o->removed[n] || o->repl_of[n] >= 0 || o->swish_x[n] >= 0 || !is_op(nd, "Conv") || !nd->layer ||
        nd->n_outputs != 1 || nd->n_inputs < 2 || o->snode_of[n] < 0 || o->h_conv[n])
        return 0;
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    const netrun_conv_params *cp = sn->params;
    if (sn->slot == NR_SLOT_FOLDED || sn->dynamic || !cp || cp->group != 1) return 0;
    const conv_plan *p = &o->plan[n];
    if (plan_folds(p) || p->add >= 0 || p->mul >= 0) return 0;
    int out = plan_out(p, nd);
    if (out < 0 || o->s->values[out].dynamic || o->s->values[nd->outputs[0]].desc.dtype != NETRUN_DTYPE_FLOAT ||
        feeds_conv[out])
        return 0;
    const nr_tensor *w = opt_const_f32(g, val(o, nd->inputs[1]));
    if (!w || w->rank < 3 || w->dims[0] <= 0 || nr_tensor_count(w) <= 0) return 0;
    if (nd->n_inputs > 2 && nd->inputs[2] >= 0) {
        const nr_tensor *b = opt_const_f32(g, val(o, nd->inputs[2]));
        if (!b || nr_tensor_count(b) != w->dims[0]) return 0;
    }
    return 1;
}

/* Whether b can join a's group: same input, backend, window, weight shape past the output channels, activation
 * and layout choices. */
static int compatible(const opt_state *o, int a, int b) {
    const nr_graph *g = o->g;
    const nr_node *na = &g->nodes[a], *nb = &g->nodes[b];
    if (val(o, na->inputs[0]) != val(o, nb->inputs[0])) return 0;
    const nr_snode *sa = &o->s->snodes[o->snode_of[a]], *sb = &o->s->snodes[o->snode_of[b]];
    if (sa->slot != sb->slot || o->blk_conv[a] != o->blk_conv[b]) return 0;
    const netrun_conv_params *pa = sa->params, *pb = sb->params;
    size_t sp = (size_t)pa->n_spatial * sizeof(int64_t);
    if (pa->n_spatial != pb->n_spatial || memcmp(pa->kernel, pb->kernel, sp) || memcmp(pa->strides, pb->strides, sp) ||
        memcmp(pa->dilations, pb->dilations, sp) || memcmp(pa->pads_begin, pb->pads_begin, sp) ||
        memcmp(pa->pads_end, pb->pads_end, sp))
        return 0;
    const nr_tensor *wa = opt_const_f32(g, val(o, na->inputs[1])), *wb = opt_const_f32(g, val(o, nb->inputs[1]));
    if (wa->rank != wb->rank || memcmp(wa->dims + 1, wb->dims + 1, (size_t)(wa->rank - 1) * sizeof(int64_t))) return 0;
    const conv_plan *qa = &o->plan[a], *qb = &o->plan[b];
    if ((qa->act >= 0) != (qb->act >= 0)) return 0;
    return qa->act < 0 || !memcmp(&qa->fa, &qb->fa, sizeof qa->fa);
}

int opt_plan_siblings(opt_state *o, int *n_convs) {
    const nr_graph *g = o->g;
    *n_convs = 0;
    const char *on = nr_options_get(&o->s->opts, "graph.merge_siblings");
    if (on && !strcmp(on, "0")) return 0;
    char *feeds_conv = nr_calloc((size_t)g->n_values + 1, 1);
    if (!feeds_conv) return 0; /* an optimisation: without memory, none */
    for (int n = 0; n < g->n_nodes; n++) {
        const nr_node *nd = &g->nodes[n];
        if (o->removed[n] || !(is_op(nd, "Conv") || is_op(nd, "ConvTranspose"))) continue;
        for (int i = 0; i < nd->n_inputs; i++) {
            int v = val(o, nd->inputs[i]);
            if (v >= 0) feeds_conv[v] = 1;
        }
    }
    int groups = 0;
    for (int a = 0; a < g->n_nodes; a++) {
        if (o->sib_lead[a] >= 0 || !candidate(o, a, feeds_conv)) continue;
        int size = 1;
        for (int b = a + 1; b < g->n_nodes; b++) {
            if (size == OPT_MAX_SIBLINGS) break;
            if (o->sib_lead[b] >= 0 || !candidate(o, b, feeds_conv) || !compatible(o, a, b)) continue;
            if (size == 1) o->sib_lead[a] = a;
            o->sib_lead[b] = a;
            size++;
        }
        if (size == 1) continue;
        groups++;
        *n_convs += size;
        /* the members after the first: their outputs come from the Split, their fused activation from the merged
         * Conv (standing for the first) */
        for (int b = a; b < g->n_nodes; b++) {
            if (o->sib_lead[b] != a) continue;
            o->sib_out[b] = plan_out(&o->plan[b], &g->nodes[b]);
            if (b != a) o->removed[b] = 1;
        }
    }
    nr_free(feeds_conv);
    return groups;
}

/* Node n leads a group: the merged Conv (standing for n) and the Split (standing for the second member) into ng. */
netrun_status opt_emit_siblings(const opt_state *o, nr_graph *ng, int n, int *from) {
    const nr_graph *g = o->g;
    const nr_node *lead = &g->nodes[n];
    int members[OPT_MAX_SIBLINGS], m = 0;
    int64_t sizes[OPT_MAX_SIBLINGS], total = 0;
    int any_bias = 0;
    for (int b = n; b < g->n_nodes && m < OPT_MAX_SIBLINGS; b++) {
        if (o->sib_lead[b] != n) continue;
        const nr_node *nd = &g->nodes[b];
        members[m] = b;
        sizes[m] = opt_const_f32(g, val(o, nd->inputs[1]))->dims[0];
        total += sizes[m++];
        any_bias |= nd->n_inputs > 2 && nd->inputs[2] >= 0;
    }
    const nr_tensor *w0 = opt_const_f32(g, val(o, lead->inputs[1]));
    int64_t dims[NETRUN_MAX_RANK];
    memcpy(dims, w0->dims, (size_t)w0->rank * sizeof dims[0]);
    dims[0] = total;
    /* W and B stacked along the output channels, in the members' order */
    nr_tensor *w = nr_tensor_new(NETRUN_DTYPE_FLOAT, w0->rank, dims);
    nr_tensor *bias = any_bias ? nr_tensor_new(NETRUN_DTYPE_FLOAT, 1, &total) : NULL;
    if (!w || (any_bias && !bias)) {
        nr_tensor_free(w);
        nr_tensor_free(bias);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory merging the convolutions beside '%s'", lead->name);
    }
    size_t per_channel = (size_t)(nr_tensor_count(w0) / w0->dims[0]);
    for (int i = 0, c0 = 0; i < m; c0 += (int)sizes[i++]) {
        const nr_node *nd = &g->nodes[members[i]];
        memcpy((float *)w->data + (size_t)c0 * per_channel, opt_const_f32(g, val(o, nd->inputs[1]))->data,
               (size_t)sizes[i] * per_channel * sizeof(float));
        if (bias && nd->n_inputs > 2 && nd->inputs[2] >= 0)
            memcpy((float *)bias->data + c0, opt_const_f32(g, val(o, nd->inputs[2]))->data, (size_t)sizes[i] * sizeof(float));
    }
    int w_id = nr_graph_new_const(ng, g->values[lead->inputs[1]].name, ".siblings", w);
    if (w_id < 0) nr_tensor_free(bias);
    int b_id = bias && w_id >= 0 ? nr_graph_new_const(ng, lead->name, ".bias_siblings", bias) : -1;
    /* the Split's sizes: an input from opset 13, the attribute "split" before */
    int sizes_input = nr_model_opset(o->s->model->ir, "") >= 13, s_id = -1;
    if (sizes_input && w_id >= 0 && (!bias || b_id >= 0)) {
        int64_t sd[1] = {m};
        nr_tensor *t = nr_tensor_new(NETRUN_DTYPE_INT64, 1, sd);
        if (t) memcpy(t->data, sizes, (size_t)m * sizeof(int64_t));
        s_id = t ? nr_graph_new_const(ng, lead->name, ".split_sizes", t) : -1;
    }
    int y = w_id >= 0 && (!bias || b_id >= 0) && (!sizes_input || s_id >= 0) ? opt_like_value(ng, o->sib_out[n], ".siblings")
                                                                              : -1;
    if (y < 0) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory merging the convolutions beside '%s'", lead->name);
    if (ng->values[y].rank >= 2) ng->values[y].dims[1] = total;
    char name[600];
    snprintf(name, sizeof name, "%s+%d siblings", lead->name, m - 1);
    nr_node *cv = nr_graph_add_node(ng, name, "Conv", "", bias ? 3 : 2, 1, lead->n_attrs + (ng->n_nodes == 0));
    if (!cv) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory merging the convolutions beside '%s'", lead->name);
    from[ng->n_nodes - 1] = n;
    cv->inputs[0] = val(o, lead->inputs[0]);
    cv->inputs[1] = w_id;
    if (bias) cv->inputs[2] = b_id;
    cv->outputs[0] = y;
    for (int a = 0; a < lead->n_attrs; a++) {
        netrun_status st = nr_attr_copy_borrowed(&cv->attrs[a], &lead->attrs[a]);
        if (st != NETRUN_OK) return st;
    }
    snprintf(name, sizeof name, "%s.split", lead->name);
    nr_node *sp = nr_graph_add_node(ng, name, "Split", "", sizes_input ? 2 : 1, m, sizes_input ? 1 : 2);
    if (!sp) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory merging the convolutions beside '%s'", lead->name);
    from[ng->n_nodes - 1] = -1; /* made here: stands for no original node */
    sp->inputs[0] = y;
    if (sizes_input) sp->inputs[1] = s_id;
    for (int i = 0; i < m; i++) sp->outputs[i] = o->sib_out[members[i]];
    sp->attrs[0].type = NR_ATTR_INT;
    sp->attrs[0].i = 1;
    sp->attrs[0].name = nr_strdup("axis");
    if (!sizes_input) {
        sp->attrs[1].type = NR_ATTR_INTS;
        sp->attrs[1].n = m;
        sp->attrs[1].name = nr_strdup("split");
        if ((sp->attrs[1].ints = nr_calloc((size_t)m, sizeof(int64_t)))) memcpy(sp->attrs[1].ints, sizes, (size_t)m * sizeof(int64_t));
        if (!sp->attrs[1].name || !sp->attrs[1].ints) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return sp->attrs[0].name ? NETRUN_OK : nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
}
