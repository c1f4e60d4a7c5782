/*
 * The memory plan (plan layer): the steps of a run (kernels, and copies where a value crosses memory domains), the
 * aliases (in-place outputs and views), and one arena per domain laid out by lifetime.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "subgraphs.h"

/* ---- steps and copies ---- */

static netrun_status add_step(netrun_session *s, nr_step step, int *cap) {
    if (s->n_steps == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        nr_step *p = nr_realloc(s->steps, sizeof(nr_step) * (size_t)nc);
        if (!p) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        s->steps = p;
        *cap = nc;
    }
    s->steps[s->n_steps++] = step;
    return NETRUN_OK;
}

static void use(nr_place *p, int step) {
    if (!p->present) {
        p->present = 1;
        p->first = step;
        p->last = step;
    }
    if (step > p->last) p->last = step;
    if (step < p->first) p->first = step;
}

netrun_status nr_build_steps(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    int cap = 0;
    for (int v = 0; v < g->n_values; v++) {
        nr_svalue *sv = &s->values[v];
        if (sv->graph_input < 0) continue;
        /* an input bound to device memory is at home in the domain of the backend serving that memory (read in
         * place there; other domains get a copy from it), else in host memory */
        const nr_input *in = &s->inputs[sv->graph_input];
        sv->home = in->mem != NETRUN_MEMORY_HOST ? in->dev_dom : NR_HOST_DOMAIN;
        if (sv->home < 0) return nr_error(NETRUN_ERR_INTERNAL, "input '%s': no domain for its device memory", sv->desc.name);
        use(&sv->place[sv->home], -1);
    }
    for (int k = 0; k < s->n_snodes; k++) {
        nr_snode *sn = &s->snodes[k];
        if (sn->slot < 0 && sn->slot != NR_SLOT_RUNTIME) continue;
        const nr_node *nd = &g->nodes[sn->node];
        int dom = sn->slot >= 0 ? s->slots[sn->slot].domain : NR_HOST_DOMAIN;
        for (int i = 0; i < nd->n_inputs; i++) {
            int v = nd->inputs[i];
            if (v < 0) continue;
            nr_svalue *sv = &s->values[v];
            if (sv->is_const) {
                if (dom != NR_HOST_DOMAIN) use(&sv->place[dom], 0); /* uploaded at prepare */
                else if (!sv->place[dom].present) { /* host constants are used in place: count them once */
                    use(&sv->place[dom], 0);
                    s->stats.weight_bytes += sv->nbytes;
                }
                continue;
            }
            if (!sv->place[dom].present) {
                netrun_status st = add_step(s, (nr_step){.kind = NR_STEP_COPY, .value = v, .from = sv->home, .to = dom}, &cap);
                if (st != NETRUN_OK) return st;
                use(&sv->place[sv->home], s->n_steps - 1);
                use(&sv->place[dom], s->n_steps - 1);
                s->stats.n_copies++;
                s->stats.copy_bytes += sv->nbytes;
            }
        }
        netrun_status st = add_step(s, (nr_step){.kind = NR_STEP_KERNEL, .snode = k}, &cap);
        if (st != NETRUN_OK) return st;
        /* inputs live until the kernel step, whose index is known only after the copies were added */
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && !s->values[nd->inputs[i]].is_const)
                use(&s->values[nd->inputs[i]].place[dom], s->n_steps - 1);
        if (sn->slot == NR_SLOT_RUNTIME) { /* captured values live until the subgraph ran */
            int caps[NR_MAX_CAPTURES];
            int nc = nr_node_captures(g, nd, caps, NR_MAX_CAPTURES);
            for (int c = 0; c < nc; c++)
                if (!s->values[caps[c]].is_const) use(&s->values[caps[c]].place[s->values[caps[c]].home], s->n_steps - 1);
        }
        for (int o = 0; o < nd->n_outputs; o++) {
            int v = nd->outputs[o];
            if (v < 0) continue;
            s->values[v].home = dom;
            use(&s->values[v].place[dom], s->n_steps - 1);
        }
    }
    /* graph outputs stay alive to the end */
    for (int i = 0; i < g->n_outputs; i++) {
        nr_svalue *sv = &s->values[g->outputs[i]];
        sv->graph_output = i;
        if (!sv->is_const) use(&sv->place[sv->home], s->n_steps + 1);
    }
    /* micro-batching of the first nodes: they end at mb_head_step (the first step of a later node), and every
     * run of them writes its slice of the values the later nodes read, so those live from the first step on */
    s->mb_head_step = 0;
    if (s->mb_head) {
        while (s->mb_head_step < s->n_steps && s->steps[s->mb_head_step].kind == NR_STEP_KERNEL &&
               s->steps[s->mb_head_step].snode < s->mb_head)
            s->mb_head_step++;
        for (int v = 0; v < g->n_values; v++)
            if (s->values[v].mb_cut) use(&s->values[v].place[s->values[v].home], 0);
    }
    return NETRUN_OK;
}

/* ---- memory aliases: in-place outputs and views (docs/design.md, "Memory plan") ----
 * Values are immutable once written, so several values may share bytes as long as nothing writes over bytes
 * that a live value still needs. The values sharing one arena item form an alias set: a root (whose item holds
 * them all) and members at byte offsets in it; the set's lifetime is the union of its members'. Sets grow in
 * step order only: a view attaches a fresh output (Reshape) or fresh singleton inputs (Concat), and an in-place
 * write attaches a fresh output to the set of an input whose whole set dies at that node, so a root is never
 * attached under another root and one lookup finds it. */

static int default_onnx(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

static int is_reshape_like(const nr_node *nd) {
    static const char *const ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", NULL};
    if (!default_onnx(nd->domain)) return 0;
    for (int i = 0; ops[i]; i++)
        if (!strcmp(nd->op_type, ops[i])) return 1;
    return 0;
}

static int set_root(const netrun_session *s, int v) { return s->values[v].alias_root >= 0 ? s->values[v].alias_root : v; }

/* A value the planner puts in dom's arena and may share: produced there, static, not constant, not a graph input,
 * not empty. */
static int shareable(const netrun_session *s, int v, int dom) {
    const nr_svalue *sv = &s->values[v];
    return v >= 0 && !sv->is_const && !sv->dynamic && sv->graph_input < 0 && sv->home == dom &&
           sv->place[dom].present && sv->nbytes > 0 && !sv->mb_cut; /* mb_cut: written a slice per run */
}

/* Not yet part of any set. */
static int alone(const netrun_session *s, int v) { return s->values[v].alias_root < 0 && !s->values[v].alias_members; }

static void attach(netrun_session *s, int v, int root, size_t off) {
    nr_svalue *sv = &s->values[v], *rv = &s->values[root];
    sv->alias_root = root;
    sv->alias_off = off;
    rv->alias_members++;
    if (sv->set_first < rv->set_first) rv->set_first = sv->set_first;
    if (sv->set_last > rv->set_last) rv->set_last = sv->set_last;
}

/* Concat on an axis with only 1s before it: input k is one contiguous byte range of the output, at the sum of
 * the sizes of inputs < k (also in the CPU's nChw16c layout, which optimize.c (f) gives Concat only when every
 * C is a multiple of 16). The inputs' producers then write straight into their slices. */
static int try_concat_view(netrun_session *s, nr_snode *sn, int dom) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    const netrun_axis_params *p = sn->params;
    if (!default_onnx(nd->domain) || strcmp(nd->op_type, "Concat") || nd->n_outputs != 1 || nd->n_inputs < 1 || !p ||
        nd->layer->params_size < sizeof *p)
        return 0;
    int c = nd->outputs[0];
    if (c < 0 || !shareable(s, c, dom) || !alone(s, c)) return 0;
    const nr_svalue *cv = &s->values[c];
    if (p->axis < 0 || p->axis >= cv->desc.rank) return 0;
    for (int d = 0; d < p->axis; d++)
        if (cv->desc.dims[d] != 1) return 0;
    /* slices start where kernels may assume aligned data: a cache line on the host (the host arena's own
     * alignment), the arena's 256 bytes on devices */
    size_t off = 0, align = dom == NR_HOST_DOMAIN ? 64 : NR_ALIGN;
    for (int i = 0; i < nd->n_inputs; i++) {
        int v = nd->inputs[i];
        if (v < 0 || !shareable(s, v, dom) || !alone(s, v) || s->values[v].graph_output >= 0) return 0;
        for (int j = 0; j < i; j++)
            if (nd->inputs[j] == v) return 0;
        const nr_svalue *iv = &s->values[v];
        /* written by a kernel of its own (not a view, not control flow), at an aligned offset */
        if (iv->producer < 0 || s->snodes[iv->producer].slot < 0 || s->snodes[iv->producer].view ||
            s->snodes[iv->producer].dynamic || iv->desc.dtype != cv->desc.dtype || off % align)
            return 0;
        off += iv->nbytes;
    }
    if (off != cv->nbytes) return 0;
    off = 0;
    for (int i = 0; i < nd->n_inputs; i++) {
        attach(s, nd->inputs[i], c, off);
        off += s->values[nd->inputs[i]].nbytes;
    }
    s->stats.n_views += nd->n_inputs;
    return 1;
}


/* Slice, Pad, Expand, Tile and Transpose that change nothing for the shapes prepared (Swin-T pads its windows by
 * (W % 7) and slices the padding off again: zero for 224x224 inputs, 97 full copies per run at batch 32): the
 * output has the input's bytes. Decided per prepare, from the params of these shapes. */
static int identity_for_shapes(const netrun_session *s, const nr_snode *sn, const nr_node *nd, int x, int y) {
    const netrun_value_desc *xd = &s->values[x].desc, *yd = &s->values[y].desc;
    if (!default_onnx(nd->domain) || xd->rank != yd->rank || xd->dtype != yd->dtype || xd->rank < 0) return 0;
    for (int i = 0; i < xd->rank; i++)
        if (xd->dims[i] != yd->dims[i]) return 0;
    const char *op = nd->op_type;
    if (!strcmp(op, "Expand") || !strcmp(op, "Tile")) return 1; /* same dims: every repeat or broadcast is 1 */
    if (!sn->params) return 0;
    size_t have = nd->layer ? nd->layer->params_size : 0;
    if (!strcmp(op, "Slice") && have >= sizeof(netrun_slice_params)) {
        const netrun_slice_params *p = sn->params;
        for (int i = 0; i < xd->rank; i++)
            if (p->start[i] != 0 || p->step[i] != 1) return 0; /* a reversal keeps the dims too */
        return 1;
    }
    if (!strcmp(op, "Pad") && have >= sizeof(netrun_pad_params)) {
        const netrun_pad_params *p = sn->params;
        for (int i = 0; i < xd->rank; i++)
            if (p->pads_begin[i] || p->pads_end[i]) return 0;
        return 1;
    }
    if (!strcmp(op, "Transpose") && have >= sizeof(netrun_transpose_params)) {
        const netrun_transpose_params *p = sn->params;
        for (int i = 0; i < xd->rank; i++)
            if (p->perm[i] != i) return 0;
        return 1;
    }
    return 0;
}

/* Reshape / Flatten / Squeeze / Unsqueeze, and the ops above where they change nothing: the output has the
 * input's bytes. */
static int try_input_view(netrun_session *s, nr_snode *sn, int dom) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    if (nd->n_inputs < 1 || nd->n_outputs != 1) return 0;
    int x = nd->inputs[0], y = nd->outputs[0];
    if (x < 0 || y < 0 || !shareable(s, x, dom) || !shareable(s, y, dom) || !alone(s, y)) return 0;
    if (s->values[x].graph_output >= 0 || s->values[y].graph_output >= 0 || s->values[x].nbytes != s->values[y].nbytes ||
        (!is_reshape_like(nd) && !identity_for_shapes(s, sn, nd, x, y)))
        return 0;
    int r = set_root(s, x);
    attach(s, y, r, x == r ? 0 : s->values[x].alias_off);
    s->stats.n_views++;
    return 1;
}

/* Outputs over inputs whose whole alias set dies at this node (step t), where the backend allows it. */
static void try_inplace(netrun_session *s, nr_snode *sn, int dom, int t, const netrun_backend_config *cfg) {
    nr_slot *sl = &s->slots[sn->slot];
    if (!NR_API_HAS(sl->api, may_alias)) return;
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    int descs = 0;
    int used[4], n_used = 0; /* sets this node already writes over */
    for (int o = 0; o < nd->n_outputs && n_used < 4; o++) {
        int y = nd->outputs[o];
        if (y < 0 || !shareable(s, y, dom) || !alone(s, y)) continue;
        for (int i = 0; i < nd->n_inputs; i++) {
            int x = nd->inputs[i];
            if (x < 0 || !shareable(s, x, dom) || s->values[x].graph_output >= 0 || s->values[x].nbytes != s->values[y].nbytes)
                continue;
            int r = set_root(s, x), ok = s->values[r].set_last == t;
            for (int j = 0; j < nd->n_inputs && ok; j++) /* no other input reads the same set */
                if (j != i && nd->inputs[j] >= 0 && !s->values[nd->inputs[j]].is_const && set_root(s, nd->inputs[j]) == r)
                    ok = 0;
            for (int u = 0; u < n_used && ok; u++) ok = used[u] != r;
            if (!ok) continue;
            if (!descs) {
                nr_gather_descs(s, sn, 0);
                nr_gather_out_descs(s, sn);
                descs = 1;
            }
            netrun_node_desc desc = {.struct_size = sizeof desc, .name = nd->name, .op_type = nd->op_type,
                                     .domain = nd->domain, .opset = nd->opset, .params = sn->params,
                                     .params_size = nd->layer->params_size, .n_inputs = nd->n_inputs,
                                     .inputs = sn->in_desc, .n_outputs = nd->n_outputs, .outputs = sn->out_desc};
            if (sl->api->may_alias(cfg, &desc, o, i) != 1) continue;
            attach(s, y, r, x == r ? 0 : s->values[x].alias_off);
            used[n_used++] = r;
            sn->inplace = 1;
            s->stats.n_inplace++;
            break;
        }
    }
}

netrun_status nr_plan_aliases(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int v = 0; v < g->n_values; v++) {
        nr_svalue *sv = &s->values[v];
        sv->alias_root = -1;
        sv->alias_off = 0;
        sv->alias_members = 0;
        sv->set_first = sv->place[sv->home].first;
        sv->set_last = sv->place[sv->home].last;
    }
    const char *opt = nr_options_get(&s->opts, "memory.inplace");
    if (opt && strcmp(opt, "0") && strcmp(opt, "1"))
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "memory.inplace: '%s' is not 0 or 1", opt);
    if ((opt && !strcmp(opt, "0")) || s->keep_values) return NETRUN_OK; /* keep_values: every value stays readable */
    netrun_backend_config cfg = nr_backend_config_of(s);
    for (int t = 0; t < s->n_steps; t++) {
        if (s->steps[t].kind != NR_STEP_KERNEL) continue;
        nr_snode *sn = &s->snodes[s->steps[t].snode];
        if (sn->slot < 0 || sn->dynamic) continue;
        int dom = s->slots[sn->slot].domain;
        if (try_input_view(s, sn, dom) || try_concat_view(s, sn, dom)) sn->view = 1;
        else try_inplace(s, sn, dom, t, &cfg);
    }
    return NETRUN_OK;
}

/* ---- memory plan: greedy by size into one arena per domain (as TFLite and ORT do) ---- */

typedef struct plan_item {
    int value;
    size_t size;
    int first, last;
    size_t offset;
} plan_item;

static int by_size_desc(const void *a, const void *b) {
    const plan_item *x = a, *y = b;
    return x->size < y->size ? 1 : x->size > y->size ? -1 : x->value - y->value;
}

netrun_status nr_plan_domain(netrun_session *s, int dom, size_t *arena_size) {
    nr_graph *g = s->model->ir->graph;
    plan_item *items = nr_calloc((size_t)g->n_values + 1, sizeof *items);
    if (!items) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory planning memory");
    int n = 0;
    for (int v = 0; v < g->n_values; v++) {
        nr_svalue *sv = &s->values[v];
        nr_place *p = &sv->place[dom];
        if (!p->present || sv->is_const || sv->dynamic) continue;
        if (sv->graph_input >= 0 && dom == sv->home) continue; /* lives in the input buffer (host or the caller's) */
        p->in_arena = 1;
        if (sv->alias_root >= 0 && dom == sv->home) continue; /* in its root's item, placed below */
        int set = sv->alias_members && dom == sv->home;
        items[n++] = (plan_item){.value = v, .size = nr_align_up(sv->nbytes ? sv->nbytes : 1),
                                 .first = set ? sv->set_first : p->first, .last = set ? sv->set_last : p->last};
    }
    qsort(items, (size_t)n, sizeof *items, by_size_desc);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        /* lowest offset that does not overlap a placed item whose lifetime overlaps */
        size_t offset = 0;
        for (int again = 1; again;) {
            again = 0;
            for (int j = 0; j < i; j++) {
                if (!s->keep_values && (items[j].last < items[i].first || items[i].last < items[j].first)) continue;
                if (offset + items[i].size <= items[j].offset || items[j].offset + items[j].size <= offset) continue;
                offset = items[j].offset + items[j].size;
                again = 1;
            }
        }
        items[i].offset = offset;
        s->values[items[i].value].place[dom].offset = offset;
        if (offset + items[i].size > total) total = offset + items[i].size;
    }
    for (int v = 0; v < g->n_values; v++) {
        nr_svalue *sv = &s->values[v];
        if (sv->alias_root >= 0 && dom == sv->home && sv->place[dom].in_arena)
            sv->place[dom].offset = s->values[sv->alias_root].place[dom].offset + sv->alias_off;
    }
    nr_free(items);
    *arena_size = total;
    return NETRUN_OK;
}

