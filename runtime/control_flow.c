/*
 * Control flow (If, Loop, Scan) at run time (exec layer). Their subgraphs were compiled at load into models of
 * their own (subgraphs.c); values a subgraph reads from enclosing graphs ("captures") are extra inputs of those
 * models. The runtime itself executes these nodes: it feeds a sub-session per subgraph (created lazily with the same
 * options, so the subgraph is placed on the backends like any graph) and gathers its outputs. Sub-sessions are
 * driven through the session layer's nr_body_ops (control_flow.h), never through the public API.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_flow.h"

/* ---- run ---- */

typedef struct nr_cf_state {
    netrun_session *sub[2];          /* If: then/else; Loop/Scan: body */
} nr_cf_state;

static const nr_attr *graph_attr(const nr_node *nd, const char *name) {
    for (int a = 0; a < nd->n_attrs; a++)
        if (!strcmp(nd->attrs[a].name, name) && nd->attrs[a].type == NR_ATTR_GRAPH) return &nd->attrs[a];
    return NULL;
}

static void cf_free(netrun_session *s, nr_snode *sn);

static netrun_status sub_session(netrun_session *s, nr_snode *sn, int which, const nr_attr *at,
                                 netrun_session **out) {
    nr_cf_state *cf = sn->cf;
    if (!cf) {
        cf = sn->cf = nr_calloc(1, sizeof *cf);
        if (!cf) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        sn->cf_free = cf_free;
    }
    if (!cf->sub[which]) {
        netrun_status st = s->body->create(at->sub_model, &s->opts, &cf->sub[which]);
        if (st != NETRUN_OK) return st;
        cf->sub[which]->root = s->root ? s->root : s;
    }
    *out = cf->sub[which];
    return NETRUN_OK;
}

uint64_t nr_session_prepares(const netrun_session *s) {
    uint64_t n = s->n_prepares + s->n_body_prepares_freed;
    for (int k = 0; s->snodes && k < s->n_snodes; k++) {
        const nr_cf_state *cf = s->snodes[k].cf;
        for (int b = 0; cf && b < 2; b++)
            if (cf->sub[b]) n += nr_session_prepares(cf->sub[b]);
    }
    return n;
}

static void cf_free(netrun_session *s, nr_snode *sn) {
    nr_cf_state *cf = sn->cf;
    if (!cf) return;
    for (int b = 0; b < 2; b++) /* the bodies' prepares still count in stats.prepares */
        if (cf->sub[b]) s->n_body_prepares_freed += nr_session_prepares(cf->sub[b]);
    if (cf->sub[0]) s->body->destroy(cf->sub[0]);
    if (cf->sub[1]) s->body->destroy(cf->sub[1]);
    nr_free(cf);
    sn->cf = NULL;
}

/* Host view of an outer value (copied from a device when it lives there). */
static netrun_status outer_view(netrun_session *s, int v, netrun_tensor *t) {
    nr_svalue *sv = &s->values[v];
    netrun_status st = nr_host_value(s, v);
    if (st != NETRUN_OK) return st;
    nr_value_tensor(s, v, NR_HOST_DOMAIN, t);
    if (sv->home != NR_HOST_DOMAIN && !sv->is_const) t->data = sv->host_copy;
    return NETRUN_OK;
}

static netrun_status feed(netrun_session *sub, const char *name, const netrun_tensor *t) {
    return sub->body->set_input(sub, name, t->dtype, t->rank, t->dims, t->data, t->nbytes);
}

/* Feed the captured outer values (inputs after the formal ones). */
static netrun_status feed_captures(netrun_session *s, netrun_session *sub) {
    const netrun_model *m = sub->model;
    nr_graph *sg = m->ir->graph, *g = s->model->ir->graph;
    for (int i = m->n_formal_inputs; i < sg->n_inputs; i++) {
        const char *name = sg->values[sg->inputs[i]].name;
        int v = nr_graph_find_value(g, name);
        if (v < 0) return nr_error(NETRUN_ERR_INTERNAL, "captured value '%s' not found", name);
        netrun_tensor t;
        netrun_status st = outer_view(s, v, &t);
        if (st == NETRUN_OK) st = feed(sub, name, &t);
        if (st != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}

/* While the enclosing session profiles, its body's run is profiled too and its events join the enclosing profile,
 * named "<node>/<branch>/<name>" one level deeper (depth), so that --profile shows the time inside an If or a Loop
 * node by node; the node's own event still holds the whole time. */
static netrun_status copy_body_profile(netrun_session *s, netrun_session *sub, const nr_node *nd, const char *branch,
                                       double sub_start) {
    int n = sub->body->profile_count(sub);
    char text[512];
    for (int k = 0; k < n; k++) {
        netrun_profile_event ev;
        if (sub->body->profile_get(sub, k, &ev) != NETRUN_OK) continue;
        snprintf(text, sizeof text, "%s/%s/%s", nd->name, branch, ev.name ? ev.name : "?");
        const char *label = nr_profile_label(s, text), *op = nr_profile_label(s, ev.op_type ? ev.op_type : "?"),
                   *be = nr_profile_label(s, ev.backend ? ev.backend : "?");
        nr_prof_event *e = label && op && be ? nr_profile_push(s) : NULL;
        if (!e) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory recording the profile");
        e->snode = -1;
        e->run = s->prof_runs;
        e->start_ms = sub_start - s->prof_run_start + ev.start_ms;
        e->duration_ms = ev.duration_ms;
        e->bytes = ev.bytes;
        e->label = label, e->op = op, e->backend = be;
        e->depth = ev.depth + 1;
        e->is_copy = ev.is_copy;
    }
    return NETRUN_OK;
}

static netrun_status run_sub_node(netrun_session *s, netrun_session *sub, const nr_node *nd, const char *branch) {
    if (s->profiling) { /* this run's events only */
        sub->body->set_profiling(sub, 0);
        sub->body->set_profiling(sub, 1);
    } else if (sub->profiling)
        sub->body->set_profiling(sub, 0);
    double t0 = nr_now_ms();
    netrun_status st = sub->body->run(sub); /* a failure's message is in this thread's error */
    if (st != NETRUN_OK) return st;
    return s->profiling ? copy_body_profile(s, sub, nd, branch, t0) : NETRUN_OK;
}

/* Allocate output `o` of the node in host memory with this shape. */
static netrun_status host_output(netrun_session *s, nr_snode *sn, int o, netrun_dtype dtype, int rank,
                                 const int64_t *dims, void **data) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    int v = nd->outputs[o];
    *data = NULL;
    if (v < 0) return NETRUN_OK;
    nr_svalue *sv = &s->values[v];
    /* a value keeps the type the model declares for it, whichever subgraph produced it */
    netrun_dtype declared = s->model->ir->graph->values[v].dtype;
    if (declared != NETRUN_DTYPE_UNDEFINED && declared != dtype)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "output %d ('%s') is declared %s, but the subgraph produced %s", o,
                        sv->desc.name ? sv->desc.name : "?", netrun_dtype_name(declared), netrun_dtype_name(dtype));
    sv->desc.dtype = dtype;
    sv->desc.rank = rank;
    for (int d = 0; d < rank; d++) sv->desc.dims[d] = dims[d];
    netrun_status st = nr_dyn_alloc(s, v, NR_HOST_DOMAIN);
    if (st != NETRUN_OK) return st;
    netrun_tensor t;
    nr_value_tensor(s, v, NR_HOST_DOMAIN, &t);
    *data = t.data;
    return NETRUN_OK;
}

static netrun_status run_if(netrun_session *s, nr_snode *sn, const nr_node *nd) {
    netrun_tensor cond;
    netrun_status st = outer_view(s, nd->inputs[0], &cond);
    if (st != NETRUN_OK) return st;
    if (nr_shape_count(cond.rank, cond.dims) < 1)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "If: the condition is empty");
    int which = ((const uint8_t *)cond.data)[0] ? 0 : 1;
    const nr_attr *at = graph_attr(nd, which ? "else_branch" : "then_branch");
    if (!at || !at->sub_model) return nr_error(NETRUN_ERR_INVALID_MODEL, "If: missing %s", which ? "else_branch" : "then_branch");
    netrun_session *sub = NULL;
    if ((st = sub_session(s, sn, which, at, &sub)) != NETRUN_OK) return st;
    if ((st = feed_captures(s, sub)) != NETRUN_OK ||
        (st = run_sub_node(s, sub, nd, which ? "else_branch" : "then_branch")) != NETRUN_OK)
        return st;
    if (sub->model->ir->graph->n_outputs < nd->n_outputs)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "If: the branch has %d outputs, the node %d",
                        sub->model->ir->graph->n_outputs, nd->n_outputs);
    for (int o = 0; o < nd->n_outputs; o++) {
        netrun_tensor_view out;
        if ((st = sub->body->output(sub, o, &out)) != NETRUN_OK) return st;
        for (int b = 0; b < 2; b++) { /* both branches' declarations hold for the output, whichever ran */
            const nr_attr *ba = graph_attr(nd, b ? "else_branch" : "then_branch");
            const nr_graph *bg = ba && ba->sub_model ? ba->sub_model->ir->graph : NULL;
            netrun_dtype want = bg && o < bg->n_outputs ? bg->values[bg->outputs[o]].dtype : NETRUN_DTYPE_UNDEFINED;
            if (want != NETRUN_DTYPE_UNDEFINED && want != out.dtype)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "output %d: %s produced %s, but %s declares %s", o,
                                which ? "else_branch" : "then_branch", netrun_dtype_name(out.dtype),
                                b ? "else_branch" : "then_branch", netrun_dtype_name(want));
        }
        void *dst;
        if ((st = host_output(s, sn, o, out.dtype, out.rank, out.dims, &dst)) != NETRUN_OK) return st;
        if (dst && out.nbytes) memcpy(dst, out.data, out.nbytes);
    }
    return NETRUN_OK;
}

/* A growing buffer of stacked per-iteration outputs (Loop scan outputs, Scan outputs). */
typedef struct stack_buf {
    char *data;
    size_t size, cap, elem_bytes;
    netrun_dtype dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    int64_t count;
} stack_buf;

static netrun_status stack_push(netrun_session *s, stack_buf *b, const netrun_tensor_view *t) {
    if (b->count == 0) {
        b->dtype = t->dtype;
        b->rank = t->rank;
        memcpy(b->dims, t->dims, sizeof b->dims);
        b->elem_bytes = t->nbytes;
    } else if (t->nbytes != b->elem_bytes || t->rank != b->rank || memcmp(t->dims, b->dims, sizeof(int64_t) * (size_t)t->rank))
        return nr_error(NETRUN_ERR_INVALID_MODEL, "a scan output changes shape between iterations");
    size_t need;
    if (!nr_add_size(b->size, t->nbytes, &need))
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "scan outputs: the stacked size overflows");
    if (need > b->cap) { /* grows by doubling, checked against the host memory budget first */
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < need) nc = nc > SIZE_MAX / 2 ? need : nc * 2;
        if (nr_host_reserve(s, nc - b->cap, "the Loop's scan outputs") != NETRUN_OK) return NETRUN_ERR_OUT_OF_MEMORY;
        char *p = nr_realloc(b->data, nc);
        if (!p) {
            nr_host_unreserve(s, nc - b->cap);
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory stacking scan outputs (%zu bytes)", nc);
        }
        b->data = p;
        b->cap = nc;
    }
    if (t->nbytes) memcpy(b->data + b->size, t->data, t->nbytes);
    b->size += t->nbytes;
    b->count++;
    return NETRUN_OK;
}

/* A body output that feeds the next iteration dies with the body's next run: keep a copy of it in *owned
 * (replacing the previous one) and point *state at it. */
static netrun_status keep_state(netrun_session *s, const netrun_tensor_view *out, void **owned,
                                netrun_tensor_view *state) {
    char what[160];
    snprintf(what, sizeof what, "carried value '%.120s'", out->name ? out->name : "?");
    void *copy = nr_host_alloc(s, out->nbytes, what);
    if (!copy) return NETRUN_ERR_OUT_OF_MEMORY;
    if (out->nbytes) memcpy(copy, out->data, out->nbytes);
    if (*owned) nr_host_free(s, *owned, state->nbytes);
    *owned = copy;
    *state = *out;
    state->data = copy;
    return NETRUN_OK;
}

static netrun_status run_loop(netrun_session *s, nr_snode *sn, const nr_node *nd) {
    const nr_attr *at = graph_attr(nd, "body");
    if (!at || !at->sub_model) return nr_error(NETRUN_ERR_INVALID_MODEL, "Loop: missing body");
    netrun_session *sub = NULL;
    netrun_status st = sub_session(s, sn, 0, at, &sub);
    if (st != NETRUN_OK) return st;
    const nr_graph *bg = at->sub_model->ir->graph;
    int n_carried = nd->n_inputs - 2, n_scan = nd->n_outputs - n_carried;
    if (n_carried < 0 || n_scan < 0 || at->sub_model->n_formal_inputs != n_carried + 2 || bg->n_outputs != 1 + n_carried + n_scan)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "Loop: the body's inputs/outputs do not match the node's");
    int64_t trip = INT64_MAX;
    int cond = 1;
    netrun_tensor t;
    if (nd->inputs[0] >= 0) {
        if ((st = outer_view(s, nd->inputs[0], &t)) != NETRUN_OK) return st;
        if (nr_shape_count(t.rank, t.dims) >= 1) trip = ((const int64_t *)t.data)[0];
    }
    if (nd->n_inputs > 1 && nd->inputs[1] >= 0) {
        if ((st = outer_view(s, nd->inputs[1], &t)) != NETRUN_OK) return st;
        if (nr_shape_count(t.rank, t.dims) >= 1) cond = ((const uint8_t *)t.data)[0] != 0;
    }
    /* carried values: start from the node's inputs, then from the body's outputs */
    netrun_tensor_view *carried = nr_calloc((size_t)n_carried + 1, sizeof *carried);
    void **owned = nr_calloc((size_t)n_carried + 1, sizeof(void *));
    stack_buf *stacks = nr_calloc((size_t)n_scan + 1, sizeof *stacks);
    if (!carried || !owned || !stacks) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int k = 0; k < n_carried; k++) {
        if ((st = outer_view(s, nd->inputs[2 + k], &t)) != NETRUN_OK) goto done;
        carried[k] = (netrun_tensor_view){.dtype = t.dtype, .rank = t.rank, .data = t.data, .nbytes = t.nbytes};
        memcpy(carried[k].dims, t.dims, sizeof t.dims);
    }
    /* A model must not hang the process: all Loop iterations of one run (nested loops included) are capped,
     * whether or not a trip count was given (a hostile trip count of 2^62 is as endless as none). */
    const char *cap_opt = nr_options_get(&s->opts, "limits.max_loop_iterations");
    int64_t cap = cap_opt ? strtoll(cap_opt, NULL, 10) : NR_DEFAULT_MAX_LOOP_ITERATIONS; /* checked when set */
    if (cap < 1) cap = NR_DEFAULT_MAX_LOOP_ITERATIONS;
    netrun_session *top = s->root ? s->root : s;
    for (int64_t it = 0; it < trip && cond; it++) {
        int64_t iter = it;
        if (++top->loop_iterations > cap) {
            st = nr_error(NETRUN_ERR_BACKEND, "Loop iteration %lld: this run reached %lld Loop iterations in all, the "
                          "limit (%s); raise the option limits.max_loop_iterations if that is intended", (long long)it,
                          (long long)cap, trip == INT64_MAX ? "no trip count, condition still true" : "trip count given");
            goto done;
        }
        uint8_t c = 1;
        int64_t none[1] = {0};
        if ((st = sub->body->set_input(sub, bg->values[bg->inputs[0]].name, NETRUN_DTYPE_INT64, 0, none, &iter, sizeof iter)) != NETRUN_OK ||
            (st = sub->body->set_input(sub, bg->values[bg->inputs[1]].name, NETRUN_DTYPE_BOOL, 0, none, &c, 1)) != NETRUN_OK)
            goto sub_error;
        for (int k = 0; k < n_carried; k++)
            if ((st = sub->body->set_input(sub, bg->values[bg->inputs[2 + k]].name, carried[k].dtype, carried[k].rank,
                                               carried[k].dims, carried[k].data, carried[k].nbytes)) != NETRUN_OK)
                goto sub_error;
        if ((st = feed_captures(s, sub)) != NETRUN_OK) goto done;
        if ((st = run_sub_node(s, sub, nd, "body")) != NETRUN_OK) goto done;
        netrun_tensor_view out;
        if ((st = sub->body->output(sub, 0, &out)) != NETRUN_OK) goto sub_error;
        if (out.dtype != NETRUN_DTYPE_BOOL || nr_shape_count(out.rank, out.dims) != 1) {
            st = nr_error(NETRUN_ERR_INVALID_MODEL, "the body's condition output '%s' must be one bool, not %s with "
                          "%lld elements", out.name ? out.name : "?", netrun_dtype_name(out.dtype),
                          (long long)nr_shape_count(out.rank, out.dims));
            goto done;
        }
        cond = ((const uint8_t *)out.data)[0] != 0;
        for (int k = 0; k < n_carried; k++) {
            if ((st = sub->body->output(sub, 1 + k, &out)) != NETRUN_OK) goto sub_error;
            if (out.dtype != carried[k].dtype) {
                st = nr_error(NETRUN_ERR_INVALID_MODEL, "loop-carried value %d entered the body as %s and left it as %s",
                              k, netrun_dtype_name(carried[k].dtype), netrun_dtype_name(out.dtype));
                goto done;
            }
            if ((st = keep_state(s, &out, &owned[k], &carried[k])) != NETRUN_OK) goto done;
        }
        for (int k = 0; k < n_scan; k++) {
            if ((st = sub->body->output(sub, 1 + n_carried + k, &out)) != NETRUN_OK) goto sub_error;
            if ((st = stack_push(s, &stacks[k], &out)) != NETRUN_OK) goto done;
        }
    }
    for (int k = 0; k < n_carried; k++) {
        void *dst;
        if ((st = host_output(s, sn, k, carried[k].dtype, carried[k].rank, carried[k].dims, &dst)) != NETRUN_OK) goto done;
        if (dst && carried[k].nbytes) memcpy(dst, carried[k].data, carried[k].nbytes);
    }
    for (int k = 0; k < n_scan; k++) {
        stack_buf *b = &stacks[k];
        int64_t dims[NETRUN_MAX_RANK] = {b->count};
        if (b->rank + 1 > NETRUN_MAX_RANK) {
            st = nr_error(NETRUN_ERR_UNSUPPORTED, "Loop: scan output rank over %d", NETRUN_MAX_RANK);
            goto done;
        }
        for (int d = 0; d < b->rank; d++) dims[d + 1] = b->dims[d];
        netrun_dtype dtype = b->count ? b->dtype : s->values[nd->outputs[n_carried + k] >= 0 ? nd->outputs[n_carried + k] : 0].desc.dtype;
        void *dst;
        if ((st = host_output(s, sn, n_carried + k, dtype, b->count ? b->rank + 1 : 1, dims, &dst)) != NETRUN_OK) goto done;
        if (dst && b->size) memcpy(dst, b->data, b->size);
    }
    goto done;
sub_error: /* the body's message is in this thread's error already */
done:
    for (int k = 0; owned && carried && k < n_carried; k++) nr_host_free(s, owned[k], carried[k].nbytes);
    for (int k = 0; stacks && k < n_scan; k++) {
        if (stacks[k].data) nr_host_unreserve(s, stacks[k].cap);
        nr_free(stacks[k].data);
    }
    nr_free(owned);
    nr_free(carried);
    nr_free(stacks);
    return st;
}

/* Copy slice `index` along `axis` of t (element size es) into dst, or the reverse when `scatter`. */
static void slice_copy(const netrun_tensor *t, int axis, int64_t index, char *buf, int scatter) {
    size_t es = netrun_dtype_size(t->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= t->dims[d];
    for (int d = axis + 1; d < t->rank; d++) inner *= t->dims[d];
    size_t row = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++) {
        char *src = (char *)t->data + ((size_t)(o * t->dims[axis] + index)) * row;
        if (scatter) memcpy(src, buf + (size_t)o * row, row);
        else memcpy(buf + (size_t)o * row, src, row);
    }
}

static netrun_status run_scan(netrun_session *s, nr_snode *sn, const nr_node *nd) {
    const nr_attr *at = graph_attr(nd, "body");
    if (!at || !at->sub_model) return nr_error(NETRUN_ERR_INVALID_MODEL, "Scan: missing body");
    const nr_cf_params *p = sn->params;
    int n_scan_in = p->n_scan_inputs, n_state = nd->n_inputs - n_scan_in, n_scan_out = nd->n_outputs - n_state;
    const nr_graph *bg = at->sub_model->ir->graph;
    if (n_state < 0 || n_scan_out < 0 || at->sub_model->n_formal_inputs != nd->n_inputs || bg->n_outputs != nd->n_outputs)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "Scan: the body's inputs/outputs do not match the node's");
    netrun_session *sub = NULL;
    netrun_status st = sub_session(s, sn, 0, at, &sub);
    if (st != NETRUN_OK) return st;
    netrun_tensor *ins = nr_calloc((size_t)nd->n_inputs + 1, sizeof *ins);
    netrun_tensor_view *state = nr_calloc((size_t)n_state + 1, sizeof *state);
    void **owned = nr_calloc((size_t)n_state + 1, sizeof(void *));
    char **slices = nr_calloc((size_t)n_scan_in + 1, sizeof(char *));
    size_t *slice_bytes = nr_calloc((size_t)n_scan_in + 1, sizeof(size_t));
    netrun_tensor *outs = nr_calloc((size_t)n_scan_out + 1, sizeof *outs);
    if (!ins || !state || !owned || !slices || !slice_bytes || !outs) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int i = 0; i < nd->n_inputs; i++)
        if ((st = outer_view(s, nd->inputs[i], &ins[i])) != NETRUN_OK) goto done;
    int64_t len = -1;
    for (int k = 0; k < n_scan_in; k++) {
        const netrun_tensor *t = &ins[n_state + k];
        int ax = p->scan_input_axes[k] < 0 ? p->scan_input_axes[k] + t->rank : p->scan_input_axes[k];
        if (ax < 0 || ax >= t->rank) {
            st = nr_error(NETRUN_ERR_INVALID_MODEL, "Scan: scan_input_axes[%d] out of range", k);
            goto done;
        }
        if (len >= 0 && t->dims[ax] != len) {
            st = nr_error(NETRUN_ERR_INVALID_ARGUMENT, "Scan: scan inputs have different lengths");
            goto done;
        }
        len = t->dims[ax];
        slice_bytes[k] = t->nbytes / (size_t)(len ? len : 1) + 1;
        slices[k] = nr_host_alloc(s, slice_bytes[k], "a Scan input slice");
        if (!slices[k]) {
            st = NETRUN_ERR_OUT_OF_MEMORY;
            goto done;
        }
    }
    if (len < 0) len = 0;
    for (int k = 0; k < n_state; k++) {
        state[k] = (netrun_tensor_view){.dtype = ins[k].dtype, .rank = ins[k].rank, .data = ins[k].data, .nbytes = ins[k].nbytes};
        memcpy(state[k].dims, ins[k].dims, sizeof ins[k].dims);
    }
    for (int64_t it = 0; it < len; it++) {
        for (int k = 0; k < n_state; k++)
            if ((st = sub->body->set_input(sub, bg->values[bg->inputs[k]].name, state[k].dtype, state[k].rank,
                                               state[k].dims, state[k].data, state[k].nbytes)) != NETRUN_OK)
                goto sub_error;
        for (int k = 0; k < n_scan_in; k++) {
            const netrun_tensor *t = &ins[n_state + k];
            int ax = p->scan_input_axes[k] < 0 ? p->scan_input_axes[k] + t->rank : p->scan_input_axes[k];
            int64_t idx = p->scan_input_directions[k] ? len - 1 - it : it;
            slice_copy(t, ax, idx, slices[k], 0);
            int64_t dims[NETRUN_MAX_RANK];
            int r = 0;
            for (int d = 0; d < t->rank; d++)
                if (d != ax) dims[r++] = t->dims[d];
            if ((st = sub->body->set_input(sub, bg->values[bg->inputs[n_state + k]].name, t->dtype, r, dims,
                                               slices[k], t->nbytes / (size_t)len)) != NETRUN_OK)
                goto sub_error;
        }
        if ((st = feed_captures(s, sub)) != NETRUN_OK || (st = run_sub_node(s, sub, nd, "body")) != NETRUN_OK) goto done;
        netrun_tensor_view out;
        for (int k = 0; k < n_state; k++) {
            if ((st = sub->body->output(sub, k, &out)) != NETRUN_OK) goto sub_error;
            if (out.dtype != state[k].dtype) {
                st = nr_error(NETRUN_ERR_INVALID_MODEL, "state value %d entered the body as %s and left it as %s", k,
                              netrun_dtype_name(state[k].dtype), netrun_dtype_name(out.dtype));
                goto done;
            }
            if ((st = keep_state(s, &out, &owned[k], &state[k])) != NETRUN_OK) goto done;
        }
        for (int k = 0; k < n_scan_out; k++) {
            if ((st = sub->body->output(sub, n_state + k, &out)) != NETRUN_OK) goto sub_error;
            netrun_tensor *o = &outs[k];
            int ax = p->scan_output_axes[k] < 0 ? p->scan_output_axes[k] + out.rank + 1 : p->scan_output_axes[k];
            if (ax < 0 || ax > out.rank || out.rank + 1 > NETRUN_MAX_RANK) {
                st = nr_error(NETRUN_ERR_INVALID_MODEL, "Scan: scan_output_axes[%d] out of range", k);
                goto done;
            }
            if (it == 0) { /* first iteration fixes the output's shape */
                int64_t dims[NETRUN_MAX_RANK];
                for (int d = 0, r = 0; d <= out.rank; d++) dims[d] = d == ax ? len : out.dims[r++];
                void *dst;
                if ((st = host_output(s, sn, n_state + k, out.dtype, out.rank + 1, dims, &dst)) != NETRUN_OK) goto done;
                o->dtype = out.dtype;
                o->rank = out.rank + 1;
                memcpy(o->dims, dims, sizeof dims);
                o->data = dst;
            }
            int64_t idx = p->scan_output_directions[k] ? len - 1 - it : it;
            if (o->data) slice_copy(o, ax, idx, (char *)out.data, 1);
        }
    }
    for (int k = 0; k < n_state; k++) {
        void *dst;
        if ((st = host_output(s, sn, k, state[k].dtype, state[k].rank, state[k].dims, &dst)) != NETRUN_OK) goto done;
        if (dst && state[k].nbytes) memcpy(dst, state[k].data, state[k].nbytes);
    }
    if (len == 0)
        for (int k = 0; k < n_scan_out; k++) { /* no iteration: empty outputs of unknown inner shape */
            int64_t dims[1] = {0};
            void *dst;
            int v = nd->outputs[n_state + k];
            if ((st = host_output(s, sn, n_state + k, v >= 0 ? s->values[v].desc.dtype : NETRUN_DTYPE_FLOAT, 1, dims, &dst)) != NETRUN_OK)
                goto done;
        }
    goto done;
sub_error: /* the body's message is in this thread's error already */
done:
    for (int k = 0; owned && state && k < n_state; k++) nr_host_free(s, owned[k], state[k].nbytes);
    for (int k = 0; slices && slice_bytes && k < n_scan_in; k++) nr_host_free(s, slices[k], slice_bytes[k]);
    nr_free(owned);
    nr_free(slices);
    nr_free(slice_bytes);
    nr_free(state);
    nr_free(ins);
    nr_free(outs);
    return st;
}

netrun_status nr_run_control_flow(netrun_session *s, nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    netrun_status st;
    if (!strcmp(nd->op_type, "If")) st = run_if(s, sn, nd);
    else if (!strcmp(nd->op_type, "Loop")) st = run_loop(s, sn, nd);
    else if (!strcmp(nd->op_type, "Scan")) st = run_scan(s, sn, nd);
    else st = nr_error(NETRUN_ERR_INTERNAL, "no runtime implementation of %s", nd->op_type);
    if (st != NETRUN_OK) nr_error_prefix("node '%s' (%s): ", nd->name, nd->op_type);
    return st;
}
