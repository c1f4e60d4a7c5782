/* The executor: runs the prepared steps; nodes with run-time shapes are inferred again before they run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_flow.h"
#include "execute.h"
#include "micro_batch.h"


/* Allocate (or reuse) a run-time buffer for a value whose shape is known only now. */
netrun_status nr_dyn_alloc(netrun_session *s, int v, int dom) {
    nr_svalue *sv = &s->values[v];
    nr_place *p = &sv->place[dom];
    sv->nbytes = nr_desc_bytes(&sv->desc);
    if (p->dyn_buffer && p->offset >= sv->nbytes) return NETRUN_OK; /* offset holds the capacity here */
    if (p->dyn_buffer) {
        if (dom == NR_HOST_DOMAIN) nr_host_free(s, p->dyn_buffer, p->offset);
        else s->slots[s->domain_slot[dom]].api->buffer_free(s->slots[s->domain_slot[dom]].ctx, p->dyn_buffer);
        p->dyn_buffer = NULL;
    }
    size_t cap = sv->nbytes ? sv->nbytes : 1;
    if (dom == NR_HOST_DOMAIN) { /* checked against the host memory budget first (host_memory.c) */
        char what[160];
        snprintf(what, sizeof what, "value '%.120s'", sv->desc.name ? sv->desc.name : "?");
        p->dyn_buffer = nr_host_alloc(s, cap, what);
        if (!p->dyn_buffer) return NETRUN_ERR_OUT_OF_MEMORY;
    } else {
        nr_slot *sl = &s->slots[s->domain_slot[dom]];
        netrun_status st = sl->api->buffer_alloc(sl->ctx, cap, &p->dyn_buffer);
        if (st != NETRUN_OK) return st;
    }
    p->offset = cap;
    p->in_arena = 0;
    return NETRUN_OK;
}

typedef struct alloc_ctx {
    netrun_session *s;
    nr_snode *sn;
    int dom;
} alloc_ctx;

static netrun_status alloc_output(void *exec, int index, int rank, const int64_t *dims) {
    alloc_ctx *a = exec;
    const nr_node *nd = &a->s->model->ir->graph->nodes[a->sn->node];
    if (index < 0 || index >= nd->n_outputs || nd->outputs[index] < 0 || rank < 0 || rank > NETRUN_MAX_RANK)
        return nr_error(NETRUN_ERR_INTERNAL, "alloc_output: bad output %d or rank %d", index, rank);
    int v = nd->outputs[index];
    nr_svalue *sv = &a->s->values[v];
    sv->desc.rank = rank;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) return nr_error(NETRUN_ERR_INTERNAL, "alloc_output: negative dim");
        sv->desc.dims[d] = dims[d];
    }
    netrun_status st = nr_dyn_alloc(a->s, v, a->dom);
    if (st != NETRUN_OK) return st;
    nr_value_tensor(a->s, v, a->dom, &a->sn->out_t[index]);
    return NETRUN_OK;
}

/* Host copy of a value produced on a device, for run-time inference that needs its value. */
netrun_status nr_host_value(netrun_session *s, int v) {
    nr_svalue *sv = &s->values[v];
    if (sv->home == NR_HOST_DOMAIN || sv->is_const) return NETRUN_OK;
    if (sv->nbytes > sv->host_copy_size || !sv->host_copy) {
        nr_host_free(s, sv->host_copy, sv->host_copy_size);
        sv->host_copy_size = 0;
        sv->host_copy = nr_host_alloc(s, sv->nbytes, "a host copy of a device value");
        if (!sv->host_copy) return NETRUN_ERR_OUT_OF_MEMORY;
        sv->host_copy_size = sv->nbytes;
    }
    netrun_tensor t;
    nr_value_tensor(s, v, sv->home, &t);
    nr_slot *sl = &s->slots[s->domain_slot[sv->home]];
    if (sl->api->synchronize) {
        netrun_status st = sl->api->synchronize(sl->ctx);
        if (st != NETRUN_OK) return st;
    }
    s->stats.d2h_bytes += sv->nbytes;
    return sl->api->copy_to_host(sl->ctx, sv->host_copy, t.buffer, t.offset, sv->nbytes);
}

static netrun_status run_dynamic_infer(netrun_session *s, nr_snode *sn, int dom, int defer) {
    nr_graph *g = s->model->ir->graph;
    const nr_node *nd = &g->nodes[sn->node];
    /* Most shapes need only the inputs' shapes: infer with the values that are already on the host. Only when the
     * inference asks for a value that lives on a device (a Reshape's target computed there) are the device inputs
     * copied back, which waits for the device: one synchronisation per such node, not one per run-time node.
     * defer: return NR_STATUS_NEED_VALUE instead (the steps that write those values have not run yet). */
    nr_gather_descs(s, sn, 2);
    netrun_status st = nr_infer_node(s, sn);
    if (st == NR_STATUS_NEED_VALUE && defer) return st;
    if (st == NR_STATUS_NEED_VALUE) {
        nr_error_clear();
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && (st = nr_host_value(s, nd->inputs[i])) != NETRUN_OK) return st;
        nr_gather_descs(s, sn, 1);
        st = nr_infer_node(s, sn);
    }
    if (st == NR_STATUS_NEED_VALUE) return nr_error(NETRUN_ERR_INTERNAL, "node '%s' (%s): a value its shape needs is still unknown at run time", nd->name, nd->op_type);
    if (st != NETRUN_OK) return st;
    for (int o = 0; o < nd->n_outputs; o++) {
        int v = nd->outputs[o];
        if (v < 0) continue;
        nr_svalue *sv = &s->values[v];
        sv->desc = sn->out_desc[o];
        sv->desc.const_data = NULL;
        sv->desc.name = g->values[v].name;
        if (nr_shape_count(sv->desc.rank, sv->desc.dims) < 0) continue; /* the kernel allocates it */
        if (sv->dynamic) {
            st = nr_dyn_alloc(s, v, dom);
            if (st != NETRUN_OK) return st;
        } else
            sv->nbytes = nr_desc_bytes(&sv->desc);
    }
    return NETRUN_OK;
}

/* A node's streamed constants into its lane of the stream buffer: in the queue's order (lane < 0), or
 * prefetched on the lane (ABI 1.6). */
static netrun_status copy_streamed(netrun_session *s, const nr_snode *sn, nr_slot *sl, int dom, int lane) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    for (int i = 0; i < nd->n_inputs; i++) {
        const nr_svalue *cv = nd->inputs[i] >= 0 ? &s->values[nd->inputs[i]] : NULL;
        if (!cv || !cv->is_const || !cv->place[dom].stream_src) continue;
        const nr_place *p = &cv->place[dom];
        netrun_status st = lane < 0 ? sl->api->copy_from_host(sl->ctx, sl->stream, p->offset, p->stream_src, cv->nbytes)
                                    : sl->api->prefetch_from_host(sl->ctx, sl->stream, p->offset, p->stream_src,
                                                                  cv->nbytes, lane);
        if (st != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}

/* Streamed weights (prepare.c, plan_weights): wait for this node's prefetched constants, or copy them now; then
 * start the next streamed node's prefetch into the other lane, to run alongside this kernel. */
static netrun_status stream_weights(netrun_session *s, const nr_snode *sn, nr_slot *sl, int dom) {
    netrun_status st = sn->stream_prefetched ? sl->api->prefetch_wait(sl->ctx, sn->stream_lane)
                                             : copy_streamed(s, sn, sl, dom, -1);
    if (st == NETRUN_OK && sn->stream_next >= 0)
        st = copy_streamed(s, &s->snodes[sn->stream_next], sl, dom, s->snodes[sn->stream_next].stream_lane);
    return st;
}

/* Run s->mb_chunk's slice of a value that holds the whole batch (in host memory: buffer is the address). */
static void mb_slice(const netrun_session *s, netrun_tensor *t) {
    size_t part = t->nbytes / (size_t)(s->mb_n / s->mb);
    t->dims[0] = s->mb;
    t->nbytes = part;
    t->data = (char *)t->data + (size_t)s->mb_chunk * part;
    t->buffer = t->data;
}

/* A kernel step's tensors for this run: its shapes inferred again in a dynamic session (defer: a value the
 * inference needs from the device is not read, NR_STATUS_NEED_VALUE is returned instead: the caller has not run the
 * steps before it yet), then each input and output as the kernel sees it. */
static netrun_status kernel_tensors(netrun_session *s, nr_snode *sn, int defer) {
    nr_graph *g = s->model->ir->graph;
    const nr_node *nd = &g->nodes[sn->node];
    int dom = s->slots[sn->slot].domain;
    netrun_status st;
    if (sn->dynamic && (st = run_dynamic_infer(s, sn, dom, defer)) != NETRUN_OK) return st;
    for (int i = 0; i < nd->n_inputs; i++) {
        if (nd->inputs[i] < 0) {
            memset(&sn->in_t[i], 0, sizeof sn->in_t[i]);
            sn->in_t[i].rank = -1;
        } else
            nr_value_tensor(s, nd->inputs[i], dom, &sn->in_t[i]);
    }
    for (int o = 0; o < nd->n_outputs; o++) {
        int v = nd->outputs[o];
        if (v < 0) {
            memset(&sn->out_t[o], 0, sizeof sn->out_t[o]);
            sn->out_t[o].rank = -1;
            continue;
        }
        if (nr_shape_count(s->values[v].desc.rank, s->values[v].desc.dims) < 0) {
            memset(&sn->out_t[o], 0, sizeof sn->out_t[o]);
            sn->out_t[o].dtype = s->values[v].desc.dtype;
            sn->out_t[o].rank = -1;
            continue;
        }
        nr_value_tensor(s, v, dom, &sn->out_t[o]);
    }
    if (s->mb_head) { /* micro-batching of the first nodes: they see this run's slice of the whole-batch values */
        for (int i = 0; i < nd->n_inputs; i++)
            if (nr_mb_sliced(s, sn, nd->inputs[i])) mb_slice(s, &sn->in_t[i]);
        for (int o = 0; o < nd->n_outputs; o++)
            if (nr_mb_sliced(s, sn, nd->outputs[o])) mb_slice(s, &sn->out_t[o]);
    }
    return NETRUN_OK;
}

/* Run a kernel step on the tensors kernel_tensors set. */
static netrun_status kernel_launch(netrun_session *s, nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    nr_slot *sl = &s->slots[sn->slot];
    int dom = sl->domain;
    netrun_status st;
    if (dom != NR_HOST_DOMAIN && sn->stream_lane >= 0 && (st = stream_weights(s, sn, sl, dom)) != NETRUN_OK) {
        nr_error_prefix("node '%s' (%s) on %s: streaming weights: ", nd->name, nd->op_type, sl->be->name);
        return st;
    }
    alloc_ctx actx = {s, sn, dom};
    void *ws = dom == NR_HOST_DOMAIN ? s->host_workspace
               : sl->workspace && sl->api->buffer_address ? sl->api->buffer_address(sl->ctx, sl->workspace)
                                                          : sl->workspace;
    size_t ws_size = dom == NR_HOST_DOMAIN ? s->host_workspace_size : sl->workspace_size;
    netrun_kernel_args args = {.struct_size = sizeof args, .params = sn->params, .n_inputs = nd->n_inputs,
                               .inputs = sn->in_t, .n_outputs = nd->n_outputs, .outputs = sn->out_t,
                               .workspace = ws, .workspace_size = ws_size, .alloc_output = alloc_output,
                               .exec = &actx};
    st = sl->api->kernel_run(sl->ctx, sn->kernel, &args);
    if (st != NETRUN_OK) {
        nr_error_prefix("node '%s' (%s) on %s: ", nd->name, nd->op_type, sl->be->name);
        return st;
    }
    return NETRUN_OK;
}

static netrun_status run_kernel(netrun_session *s, nr_snode *sn) {
    nr_activity_set(s, NR_ACT_RUN_KERNEL, sn->node, sn->slot);
    if (sn->slot == NR_SLOT_RUNTIME) return nr_run_control_flow(s, sn);
    if (sn->view) return NETRUN_OK; /* a view (prepare.c, plan_aliases): its output already holds the bytes */
    netrun_status st = kernel_tensors(s, sn, 0);
    return st != NETRUN_OK ? st : kernel_launch(s, sn);
}

static netrun_status run_copy(netrun_session *s, const nr_step *step) {
    nr_svalue *sv = &s->values[step->value];
    nr_activity_set(s, NR_ACT_COPY, -1, -1);
    if (sv->dynamic) {
        netrun_status st = nr_dyn_alloc(s, step->value, step->to);
        if (st != NETRUN_OK) return st;
    }
    netrun_tensor src, dst;
    nr_value_tensor(s, step->value, step->from, &src);
    nr_value_tensor(s, step->value, step->to, &dst);
    if (!sv->nbytes) return NETRUN_OK;
    if (step->from == NR_HOST_DOMAIN) {
        nr_slot *sl = &s->slots[s->domain_slot[step->to]];
        s->stats.h2d_bytes += sv->nbytes;
        return sl->api->copy_from_host(sl->ctx, dst.buffer, dst.offset, src.data, sv->nbytes);
    }
    nr_slot *from = &s->slots[s->domain_slot[step->from]];
    if (from->api->synchronize) {
        netrun_status st = from->api->synchronize(from->ctx);
        if (st != NETRUN_OK) return st;
    }
    if (step->to == NR_HOST_DOMAIN) {
        s->stats.d2h_bytes += sv->nbytes;
        return from->api->copy_to_host(from->ctx, dst.data, src.buffer, src.offset, sv->nbytes);
    }
    /* device to another device: through the host */
    netrun_status st = nr_host_value(s, step->value);
    if (st != NETRUN_OK) return st;
    nr_slot *to = &s->slots[s->domain_slot[step->to]];
    s->stats.h2d_bytes += sv->nbytes;
    return to->api->copy_from_host(to->ctx, dst.buffer, dst.offset, sv->host_copy, sv->nbytes);
}

/* Profiling: wait for the step's backend so the event holds device time, then record it. */
static netrun_status record_event(netrun_session *s, const nr_step *step, double run_start, double t0) {
    int slot = -1;
    if (step->kind == NR_STEP_KERNEL) slot = s->snodes[step->snode].slot;
    else slot = s->domain_slot[step->to != NR_HOST_DOMAIN ? step->to : step->from];
    if (slot >= 0 && s->slots[slot].ctx && s->slots[slot].api->synchronize) {
        netrun_status st = s->slots[slot].api->synchronize(s->slots[slot].ctx);
        if (st != NETRUN_OK) return st;
    }
    double t1 = nr_now_ms();
    nr_prof_event *e = nr_profile_push(s);
    if (!e) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory recording the profile");
    memset(e, 0, sizeof *e);
    e->snode = step->kind == NR_STEP_KERNEL ? step->snode : -1;
    e->value = step->value;
    e->from = step->from;
    e->to = step->to;
    e->run = s->prof_runs;
    e->start_ms = t0 - run_start;
    e->duration_ms = t1 - t0;
    e->bytes = step->kind == NR_STEP_COPY ? s->values[step->value].nbytes : 0;
    return NETRUN_OK;
}




/* ---- device graphs ----
 * Consecutive kernel steps of one device backend form a segment; copies, host kernels and control flow end it.
 * Run 1 after prepare is eager (it warms up lazy work: cuBLAS/cuDNN workspaces, loaded kernels). On run 2 each
 * segment is captured (graph_capture_begin, the usual kernel_run calls, graph_capture_end) and launched; later
 * runs launch the graphs. Graphs are used when the session is not profiling and the option "<backend>.graphs"
 * (e.g. cuda.graphs) is not "0". A segment whose capture fails runs eagerly from then on. In a session with
 * shapes known only at run time, a segment's graph is replayed only when every step gets what it got at the
 * capture (run_segment_dynamic). */

static int graphs_wanted(netrun_session *s, const nr_slot *sl) {
    if (s->profiling || s->keep_values) return 0;
    char key[96];
    snprintf(key, sizeof key, "%s.graphs", sl->be->name);
    const char *v = nr_options_get(&s->opts, key);
    return !v || strcmp(v, "0") != 0;
}



static netrun_status build_segments(netrun_session *s) {
    s->segs_built = 1;
    if (s->n_steps <= 0) return NETRUN_OK;
    s->step_seg = nr_calloc((size_t)s->n_steps, sizeof(int));
    s->segs = nr_calloc((size_t)s->n_steps, sizeof(nr_segment));
    if (!s->step_seg || !s->segs) {
        nr_free(s->step_seg);
        nr_free(s->segs);
        s->step_seg = NULL;
        s->segs = NULL;
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory planning device graphs");
    }
    int cur = -1;
    for (int k = 0; k < s->n_steps; k++) {
        s->step_seg[k] = -1;
        /* a kernel step of a device backend; in a dynamic session its shapes may be known only at run time */
        const nr_step *step = &s->steps[k];
        const nr_snode *ssn = step->kind == NR_STEP_KERNEL ? &s->snodes[step->snode] : NULL;
        int slot = ssn && ssn->slot >= 0 && s->slots[ssn->slot].domain != NR_HOST_DOMAIN && s->slots[ssn->slot].ctx
                       ? ssn->slot : -1;
        const nr_slot *sl = slot >= 0 ? &s->slots[slot] : NULL;
        int ok = sl && NR_API_HAS(sl->api, graph_capture_begin) && NR_API_HAS(sl->api, graph_capture_end) &&
                 NR_API_HAS(sl->api, graph_launch) && NR_API_HAS(sl->api, graph_destroy);
        if (!ok) {
            cur = -1;
            continue;
        }
        if (cur >= 0 && s->segs[cur].slot == slot && s->segs[cur].end == k) {
            s->segs[cur].end = k + 1;
            continue;
        }
        cur = s->n_segs++;
        s->segs[cur] = (nr_segment){.slot = slot, .first = k, .end = k + 1};
        s->step_seg[k] = cur;
    }
    s->stats.n_segments = s->n_segs;
    return NETRUN_OK;
}

static netrun_status run_kernel(netrun_session *s, nr_snode *sn);

static netrun_status run_steps_eager(netrun_session *s, int first, int end) {
    for (int k = first; k < end; k++) {
        netrun_status st = run_kernel(s, &s->snodes[s->steps[k].snode]);
        if (st != NETRUN_OK) {
            s->failed_step = k;
            return st;
        }
    }
    return NETRUN_OK;
}

/* ---- device graphs with shapes known only at run time ----
 * Each step's shapes are inferred and its tensors placed for the whole segment first (kernel_tensors, nothing
 * runs), and the result is written down as the segment's signature: every input's and output's dtype, dims,
 * address and size, the params inferred for this run (a Slice's starts, a TopK's k) and the workspace. The graph
 * is replayed when the signature is the one it was captured with, and captured again otherwise: a captured graph
 * never runs with another run's shapes or addresses, and since a kernel changes its own state only when its
 * arguments change, none of its internal buffers moved either. A step whose shapes need a value an earlier step
 * of its segment computes on the device (a Reshape target made there), or whose kernel sizes an output from the
 * data (NonZero), cannot be known ahead: the segment is split there, that step runs eagerly, and the steps on
 * either side are segments of their own. A segment whose signature changed SEG_MAX_MISSES captures in a row runs
 * eagerly (shapes that never repeat: capturing each run would cost more than it saves). */
#define SEG_MAX_MISSES 4

static void sig_put(nr_sig *b, const void *data, size_t n) {
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->len + n) cap *= 2;
        unsigned char *q = nr_realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void sig_tensor(nr_sig *b, const netrun_tensor *t) {
    int head[2] = {(int)t->dtype, t->rank};
    sig_put(b, head, sizeof head);
    if (t->rank > 0) sig_put(b, t->dims, (size_t)t->rank * sizeof t->dims[0]);
    const void *where[2] = {t->data, t->buffer};
    sig_put(b, where, sizeof where);
    size_t sizes[2] = {t->offset, t->nbytes};
    sig_put(b, sizes, sizeof sizes);
}

static netrun_status segment_sig(netrun_session *s, const nr_segment *sg, nr_sig *b) {
    const nr_graph *g = s->model->ir->graph;
    b->len = 0;
    b->oom = 0;
    const nr_slot *sl = &s->slots[sg->slot];
    const void *ws[2] = {sl->workspace, (const void *)(uintptr_t)sl->workspace_size};
    sig_put(b, ws, sizeof ws);
    for (int k = sg->first; k < sg->end; k++) {
        const nr_snode *sn = &s->snodes[s->steps[k].snode];
        const nr_node *nd = &g->nodes[sn->node];
        if (sn->view) continue;
        sig_put(b, &sn->node, sizeof sn->node);
        for (int i = 0; i < nd->n_inputs; i++) sig_tensor(b, &sn->in_t[i]);
        for (int o = 0; o < nd->n_outputs; o++) sig_tensor(b, &sn->out_t[o]);
        if (sn->params && nd->layer && nd->layer->params_size) sig_put(b, sn->params, nd->layer->params_size);
    }
    if (b->oom) {
        b->len = 0;
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory checking a device graph's shapes");
    }
    return NETRUN_OK;
}

/* Launch steps [first, end) of a segment on the tensors kernel_tensors set. */
static netrun_status launch_steps(netrun_session *s, int first, int end) {
    for (int k = first; k < end; k++) {
        nr_snode *sn = &s->snodes[s->steps[k].snode];
        if (sn->view) continue;
        nr_activity_set(s, NR_ACT_RUN_KERNEL, sn->node, sn->slot);
        netrun_status st = kernel_launch(s, sn);
        if (st != NETRUN_OK) {
            s->failed_step = k;
            return st;
        }
    }
    return NETRUN_OK;
}

static void drop_graph(netrun_session *s, nr_segment *sg) {
    nr_slot *sl = &s->slots[sg->slot];
    if (sg->graph && sl->ctx) sl->api->graph_destroy(sl->ctx, sg->graph);
    if (sg->graph) s->stats.n_graphs--;
    sg->graph = NULL;
}

/* Split segment sg at step k for good: k runs as a plain step from now on, the steps before it stay sg and the
 * steps after it become a segment of their own (either may be captured on its next run). Returns k. */
static int split_segment(netrun_session *s, nr_segment *sg, int k) {
    int end = sg->end;
    if (k + 1 < end) {
        nr_segment *rest = &s->segs[s->n_segs];
        *rest = (nr_segment){.slot = sg->slot, .first = k + 1, .end = end};
        s->step_seg[k + 1] = s->n_segs++;
    }
    s->step_seg[k] = -1; /* a segment whose first step was k is left empty: nothing points at it */
    sg->end = k;
    sg->state = 0;
    s->stats.n_segments = s->n_segs;
    return k;
}

/* Capture the segment's steps through run (recorded, not run) and launch the graph. A step that refuses the
 * capture (its kernel reads a value back, e.g. an index check, or copies from a host temporary) splits the
 * segment there (split_segment): one such step, a transformer's embedding Gather, no longer keeps the whole
 * encoder after it out of graphs. This run then runs the steps before it eagerly and the caller's loop goes on
 * at that step. A capture that fails otherwise (at its end) leaves the segment eager from then on. */
static netrun_status capture_segment(netrun_session *s, nr_segment *sg,
                                     netrun_status (*run)(netrun_session *s, int first, int end)) {
    nr_slot *sl = &s->slots[sg->slot];
    nr_activity_set(s, NR_ACT_GRAPH, -1, sg->slot);
    netrun_status st = sl->api->graph_capture_begin(sl->ctx);
    if (st == NETRUN_OK) {
        s->failed_step = -1;
        netrun_status rst = run(s, sg->first, sg->end);
        int refused = rst != NETRUN_OK ? s->failed_step : -1;
        void *graph = NULL;
        st = sl->api->graph_capture_end(sl->ctx, &graph);
        if (st == NETRUN_OK && rst == NETRUN_OK && graph) {
            sg->graph = graph;
            sg->state = 1;
            s->stats.n_graphs++;
            return sl->api->graph_launch(sl->ctx, graph);
        }
        if (graph) sl->api->graph_destroy(sl->ctx, graph);
        if (refused >= sg->first && refused < sg->end) {
            nr_error_clear();
            return run(s, sg->first, split_segment(s, sg, refused));
        }
    }
    nr_error_clear();
    sg->state = -1;
    return run(s, sg->first, sg->end);
}

static netrun_status run_segment_dynamic(netrun_session *s, nr_segment *sg) {
    nr_slot *sl = &s->slots[sg->slot];
    const nr_graph *g = s->model->ir->graph;
    for (int k = sg->first; k < sg->end; k++) {
        nr_snode *sn = &s->snodes[s->steps[k].snode];
        if (sn->view) continue;
        netrun_status st = kernel_tensors(s, sn, 1);
        int sized_by_kernel = 0;
        for (int o = 0; st == NETRUN_OK && o < g->nodes[sn->node].n_outputs; o++)
            sized_by_kernel |= g->nodes[sn->node].outputs[o] >= 0 && sn->out_t[o].rank < 0;
        if (st == NR_STATUS_NEED_VALUE || sized_by_kernel) {
            /* Step k's shapes depend on this segment's own results (a value read back, or outputs the kernel
             * sizes, e.g. NonZero): the segment is split there, for good. Steps [first, k) stay this segment,
             * replayable from the next run on; step k runs as a plain step; [k + 1, end) becomes a segment of
             * its own. A detector's backbone and heads then replay as one graph while its post-processing
             * runs eagerly, where the whole segment ran eagerly before. This run: the prefix now (its tensors
             * are placed), then the caller's loop goes on at step k. */
            nr_error_clear();
            drop_graph(s, sg);
            return launch_steps(s, sg->first, split_segment(s, sg, k));
        }
        if (st != NETRUN_OK) return st;
    }
    netrun_status st = segment_sig(s, sg, &sg->cur);
    if (st != NETRUN_OK) return st;
    if (sg->state == 1 && sg->cur.len == sg->sig.len && !memcmp(sg->cur.p, sg->sig.p, sg->cur.len)) {
        sg->misses = 0;
        nr_activity_set(s, NR_ACT_GRAPH, -1, sg->slot);
        return sl->api->graph_launch(sl->ctx, sg->graph);
    }
    if (sg->state == 1) { /* another run's shapes or addresses: this graph is stale */
        drop_graph(s, sg);
        sg->state = 0;
        s->stats.graph_recaptures++;
        if (++sg->misses >= SEG_MAX_MISSES) sg->state = -1;
    }
    nr_sig t = sg->sig; /* this run's becomes the capture's; the old buffer is reused next run */
    sg->sig = sg->cur;
    sg->cur = t;
    return sg->state < 0 ? launch_steps(s, sg->first, sg->end) : capture_segment(s, sg, launch_steps);
}

/* Run a segment: launch its graph, capture it (second run), or run it eagerly. */
static netrun_status run_segment(netrun_session *s, nr_segment *sg) {
    nr_slot *sl = &s->slots[sg->slot];
    if (sg->state < 0 || !s->ran_since_prepare || !graphs_wanted(s, sl)) return run_steps_eager(s, sg->first, sg->end);
    if (s->dynamic) return run_segment_dynamic(s, sg);
    if (sg->state == 1) {
        nr_activity_set(s, NR_ACT_GRAPH, -1, sg->slot);
        return sl->api->graph_launch(sl->ctx, sg->graph);
    }
    return capture_segment(s, sg, run_steps_eager);
}

void nr_exec_memory_stats(netrun_session *s) {
    size_t total = 0;
    for (int i = 0; i < s->n_slots; i++) {
        nr_slot *sl = &s->slots[i];
        size_t in_use = 0, peak = 0;
        if (sl->ctx && sl->domain != NR_HOST_DOMAIN && NR_API_HAS(sl->api, memory_info) &&
            sl->api->memory_info(sl->ctx, &in_use, &peak, NULL) == NETRUN_OK)
            total += peak;
    }
    if (total > s->stats.device_peak_bytes) s->stats.device_peak_bytes = total;
}

static netrun_status run_steps(netrun_session *s, double run_start, int first, int end);
static netrun_status finish_outputs(netrun_session *s);

netrun_status nr_session_execute(netrun_session *s, int async) {
    nr_graph *g = s->model->ir->graph;
    int chunks = s->mb ? (int)(s->mb_n / s->mb) : 1; /* micro-batching: runs of the plan per run */
    /* inputs may change shape between runs of a dynamic session */
    for (int i = 0; i < g->n_inputs; i++) {
        nr_svalue *sv = &s->values[g->inputs[i]];
        if (sv->graph_input < 0) continue; /* left at its default value: a constant of this plan */
        sv->desc.rank = s->inputs[i].rank;
        memcpy(sv->desc.dims, s->inputs[i].dims, sizeof sv->desc.dims);
        sv->nbytes = s->inputs[i].nbytes;
        if (s->mb) {
            sv->desc.dims[0] = s->mb;
            sv->nbytes /= (size_t)chunks;
        }
    }
    double run_start = nr_now_ms();
    s->prof_run_start = run_start;
    if (!s->segs_built) {
        netrun_status st = build_segments(s);
        if (st != NETRUN_OK) return st;
    }
    /* host <-> device bytes of this run: streamed weights are copied in by every run (also inside graphs) */
    s->stats.h2d_bytes = s->stats.stream_bytes;
    s->stats.d2h_bytes = s->stats.d2d_bytes = 0;
    netrun_status dst = nr_devio_begin_run(s); /* the caller's device pointers of this run (device_io.c) */
    if (dst != NETRUN_OK) return dst;
    /* micro-batching: the plan (or its first mb_head_step steps) once per run of mb images, then the rest */
    int head = s->mb_head ? s->mb_head_step : s->n_steps;
    for (s->mb_chunk = 0; s->mb_chunk < chunks; s->mb_chunk++) {
        netrun_status st = run_steps(s, run_start, 0, head);
        if (st == NETRUN_OK && s->mb && !s->mb_head) st = nr_micro_batch_gather(s);
        if (st != NETRUN_OK) return st;
    }
    s->mb_chunk = 0;
    if (head < s->n_steps) {
        netrun_status st = run_steps(s, run_start, head, s->n_steps);
        if (st != NETRUN_OK) return st;
    }
    if (s->profiling) s->prof_runs++;
    netrun_status st = finish_outputs(s);
    if (st != NETRUN_OK || async) return st;
    return nr_session_finish(s);
}

netrun_status nr_check_cancel(netrun_session *s) {
    netrun_session *top = s->root ? s->root : s;
    if (!atomic_load_explicit(&top->cancel, memory_order_relaxed) || !atomic_exchange(&top->cancel, 0))
        return NETRUN_OK;
    /* queued device work finishes before the caller may touch the inputs or destroy the session */
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].ctx && s->slots[i].api->synchronize) s->slots[i].api->synchronize(s->slots[i].ctx);
    return nr_error(NETRUN_ERR_CANCELLED, "the run was cancelled (netrun_session_cancel)");
}

static netrun_status run_steps(netrun_session *s, double run_start, int first, int end) {
    for (int k = first; k < end; k++) {
        const nr_step *step = &s->steps[k];
        netrun_status cs = nr_check_cancel(s); /* one relaxed load a step while nobody cancels */
        if (cs != NETRUN_OK) return cs;
        if (!s->profiling && s->step_seg && s->step_seg[k] >= 0) {
            nr_segment *sg = &s->segs[s->step_seg[k]];
            netrun_status st = run_segment(s, sg);
            if (st != NETRUN_OK) return st;
            k = sg->end - 1;
            continue;
        }
        double t0 = s->profiling ? nr_now_ms() : 0;
        netrun_status st = step->kind == NR_STEP_KERNEL ? run_kernel(s, &s->snodes[step->snode]) : run_copy(s, step);
        if (st != NETRUN_OK) return st;
        if (s->profiling && (st = record_event(s, step, run_start, t0)) != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}


/* Outputs bound to a caller's device buffer that their node did not write in place (device_io.c): one queued copy
 * into it, device to device where the backend can (else through the host), from the host for host outputs. */
static netrun_status finish_outputs(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_outputs; i++) {
        nr_output *out = &s->outputs[i];
        if (out->mem == NETRUN_MEMORY_HOST || !out->dev_ptr || out->in_place) continue;
        int v = g->outputs[i];
        nr_svalue *sv = &s->values[v];
        if (sv->nbytes > out->dev_cap)
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "output '%s' needs %zu bytes; the buffer bound to it holds %zu",
                            g->values[v].name, sv->nbytes, out->dev_cap);
        if (!sv->nbytes) continue;
        nr_slot *to = &s->slots[s->domain_slot[out->dev_dom]];
        netrun_status st;
        if (sv->is_const || sv->home == NR_HOST_DOMAIN) {
            netrun_tensor t;
            nr_value_tensor(s, v, NR_HOST_DOMAIN, &t);
            s->stats.h2d_bytes += sv->nbytes;
            st = to->api->copy_from_host(to->ctx, out->wrapped, 0, t.data, sv->nbytes);
        } else if (sv->home == out->dev_dom && NR_API_HAS(to->api, copy_device)) {
            netrun_tensor t;
            nr_value_tensor(s, v, sv->home, &t);
            s->stats.d2d_bytes += sv->nbytes;
            st = to->api->copy_device(to->ctx, out->wrapped, 0, t.buffer, t.offset, sv->nbytes);
        } else {
            st = nr_host_value(s, v);
            s->stats.h2d_bytes += sv->nbytes;
            if (st == NETRUN_OK) st = to->api->copy_from_host(to->ctx, out->wrapped, 0, sv->host_copy, sv->nbytes);
        }
        if (st != NETRUN_OK) {
            nr_error_prefix("output '%s' into the buffer bound to it: ", g->values[v].name);
            return st;
        }
    }
    return NETRUN_OK;
}

netrun_status nr_session_finish(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].ctx && s->slots[i].api->synchronize) {
            netrun_status st = s->slots[i].api->synchronize(s->slots[i].ctx);
            if (st != NETRUN_OK) return st;
        }
    /* outputs produced on a device come back to host staging buffers */
    for (int i = 0; i < g->n_outputs; i++) {
        nr_svalue *sv = &s->values[g->outputs[i]];
        nr_output *out = &s->outputs[i];
        if (sv->is_const || sv->home == NR_HOST_DOMAIN || out->mem != NETRUN_MEMORY_HOST) continue; /* device-bound */
        netrun_status st = nr_output_reserve(s, out, sv->nbytes, sv->desc.name);
        if (st != NETRUN_OK) return st;
        netrun_tensor t;
        nr_value_tensor(s, g->outputs[i], sv->home, &t);
        nr_slot *sl = &s->slots[s->domain_slot[sv->home]];
        s->stats.d2h_bytes += sv->nbytes;
        st = sl->api->copy_to_host(sl->ctx, out->host, t.buffer, t.offset, sv->nbytes);
        if (st != NETRUN_OK) return st;
    }
    nr_exec_memory_stats(s); /* cheap: the backends count their allocations */
    return NETRUN_OK;
}
