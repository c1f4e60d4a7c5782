/*
 * Prepare: the plan's driver. Bind input shapes and infer every node, folding constant subgraphs (infer.c), place
 * nodes on backends (place.c), run the graph passes (optimize.c), insert copies at domain borders and plan
 * activation memory by lifetime (memplan.c), then (lazy init, here) create backend contexts, lay out and upload
 * constants (resident or streamed) and build kernels. Also the teardown of a prepared session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "micro_batch.h"
#include "optimize.h"
#include "place.h"
#include "plan.h"


size_t nr_desc_bytes(const netrun_value_desc *d) {
    if (d->rank < 0) return 0;
    int64_t n = nr_shape_count(d->rank, d->dims);
    size_t es = netrun_dtype_size(d->dtype), bytes;
    if (n < 0 || !nr_mul_size((size_t)n, es, &bytes)) return 0;
    return bytes;
}

/* ---- teardown ---- */

static void free_node(netrun_session *s, nr_snode *sn) {
    if (sn->cf && sn->cf_free) sn->cf_free(s, sn);
    if (sn->kernel && sn->slot >= 0) s->slots[sn->slot].api->kernel_destroy(s->slots[sn->slot].ctx, sn->kernel);
    nr_alloc_list_free(&sn->allocs);
    nr_free(sn->params);
    nr_free(sn->reason);
    nr_free(sn->in_desc);
    nr_free(sn->out_desc);
    nr_free(sn->in_t);
    nr_free(sn->out_t);
}

static void free_buffer(netrun_session *s, int domain, void *buf) {
    if (!buf) return;
    if (domain == NR_HOST_DOMAIN) nr_aligned_free(buf);
    else {
        nr_slot *sl = &s->slots[s->domain_slot[domain]];
        sl->api->buffer_free(sl->ctx, buf);
    }
}

void nr_input_free_data(netrun_session *s, nr_input *in) {
    if (in->external) { /* the caller's memory */
        in->data = NULL;
        in->external = 0;
        return;
    }
    if (in->data) nr_host_unreserve(s, in->cap);
    if (in->pinned_by) {
        nr_slot *sl = &s->slots[in->pinned_by - 1];
        sl->api->host_free(sl->ctx, in->data);
    } else {
        nr_aligned_free(in->data);
    }
    in->data = NULL;
    in->pinned_by = 0;
}

/* Graph inputs a device backend reads are copied to it on every run: while the session is prepared they live in
 * that backend's page-locked host memory (ABI 1.5 host_alloc), so the copy is one DMA instead of a staged or
 * pageable copy (ResNet-50 batch 256 on an H200: 17.5 ms for its 147 MiB float32 input from pageable memory).
 * Without the slot, or when page-locking fails, an input stays where it is. */
static void pin_inputs(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        nr_input *in = &s->inputs[i];
        const nr_svalue *sv = &s->values[g->inputs[i]];
        if (in->pinned_by || !in->data || !in->cap) continue;
        for (int dom = 1; dom < s->n_domains && !in->pinned_by; dom++) {
            int k = s->domain_slot[dom];
            nr_slot *sl = k >= 0 ? &s->slots[k] : NULL;
            if (!sv->place[dom].present || !sl || !sl->ctx || !NR_API_HAS(sl->api, host_alloc) ||
                !NR_API_HAS(sl->api, host_free))
                continue;
            void *p = NULL;
            if (sl->api->host_alloc(sl->ctx, in->cap, &p) != NETRUN_OK || !p) {
                nr_error_clear();
                continue;
            }
            memcpy(p, in->data, in->nbytes);
            nr_aligned_free(in->data);
            in->data = p;
            in->pinned_by = k + 1;
        }
    }
}

/* Back to aligned host memory (the backend contexts outlive an unprepare, but a new plan may not need them). */
static void unpin_inputs(netrun_session *s) {
    nr_graph *g = s->model ? s->model->ir->graph : NULL;
    for (int i = 0; g && s->inputs && i < g->n_inputs; i++) {
        nr_input *in = &s->inputs[i];
        if (!in->pinned_by) continue;
        void *p = nr_aligned_alloc(in->cap ? in->cap : 1, 64);
        if (p) memcpy(p, in->data, in->nbytes);
        nr_input_free_data(s, in);
        in->data = p; /* NULL on OOM: set_input allocates again (cap reset below) */
        if (!p) in->cap = 0, in->set = 0;
        else nr_host_charge(s, in->cap); /* the same bytes, moved */
    }
}

void nr_session_unprepare(netrun_session *s) {
    nr_graph *g = s->model ? s->model->ir->graph : NULL;
    nr_exec_release(s); /* device graphs reference the buffers freed below */
    nr_devio_release(s); /* the handles of the caller's device memory: made again at the next run */
    nr_profile_clear(s); /* profile events name the plan's nodes */
    unpin_inputs(s);
    if (s->snodes)
        for (int i = 0; i < s->n_snodes; i++) free_node(s, &s->snodes[i]);
    if (s->values && g)
        for (int v = 0; v < g->n_values; v++) {
            nr_svalue *sv = &s->values[v];
            if (sv->folded) nr_host_unreserve(s, sv->folded->nbytes);
            nr_tensor_free(sv->folded);
            nr_host_free(s, sv->host_copy, sv->host_copy_size);
            if (sv->place[NR_HOST_DOMAIN].dyn_buffer) nr_host_unreserve(s, sv->place[NR_HOST_DOMAIN].offset);
            for (int d = 0; d < NR_MAX_DOMAINS; d++) free_buffer(s, d, sv->place[d].dyn_buffer);
        }
    for (int i = 0; i < s->n_slots; i++) {
        nr_slot *sl = &s->slots[i];
        if (sl->domain != NR_HOST_DOMAIN && s->domain_slot[sl->domain] == i) {
            free_buffer(s, sl->domain, sl->arena);
            free_buffer(s, sl->domain, sl->weights);
            free_buffer(s, sl->domain, sl->stream);
            free_buffer(s, sl->domain, sl->workspace);
            if (sl->stream_host) sl->api->host_free(sl->ctx, sl->stream_host);
        }
        sl->arena = sl->weights = sl->stream = sl->stream_host = sl->workspace = NULL;
        sl->arena_size = sl->weights_size = sl->stream_size = sl->stream_bytes = sl->workspace_size = 0;
        sl->n_nodes = 0;
    }
    nr_host_free(s, s->host_arena, s->host_arena_size);
    nr_host_free(s, s->host_workspace, s->host_workspace_size);
    s->host_arena = s->host_workspace = NULL;
    s->host_arena_size = s->host_workspace_size = 0;
    nr_free(s->snodes);
    nr_free(s->values);
    nr_free(s->steps);
    s->snodes = NULL;
    s->values = NULL;
    s->steps = NULL;
    s->n_snodes = s->n_steps = 0;
    s->prepared = 0;
    s->dynamic = 0;
    s->ran_since_prepare = 0;
    memset(&s->stats, 0, sizeof s->stats);
    s->stats.host_peak_bytes = s->host_bytes;
}

/* ---- lazy init: contexts, buffers, constants, kernels ---- */

static netrun_status alloc_in_domain(netrun_session *s, int dom, size_t bytes, void **out, const char *what) {
    if (dom == NR_HOST_DOMAIN) { /* counted against the host memory budget (host_memory.c) */
        *out = nr_host_alloc(s, bytes ? bytes : 1, what);
        return *out ? NETRUN_OK : NETRUN_ERR_OUT_OF_MEMORY;
    }
    nr_slot *sl = &s->slots[s->domain_slot[dom]];
    return sl->api->buffer_alloc(sl->ctx, bytes ? bytes : 1, out);
}

static netrun_status init_backends(netrun_session *s) {
    double t0 = nr_now_ms();
    netrun_backend_config cfg = nr_backend_config_of(s);
    for (int i = 0; i < s->n_slots; i++) {
        nr_slot *sl = &s->slots[i];
        /* A backend that runs no node is not initialised: its device may not even exist (--device 1 with a
         * one-device plugin in the default list). A device domain's owner is needed when any node runs there. */
        int domain_used = 0;
        for (int j = 0; j < s->n_slots; j++)
            domain_used |= s->slots[j].domain == sl->domain && s->slots[j].n_nodes > 0;
        int owner = sl->domain != NR_HOST_DOMAIN && s->domain_slot[sl->domain] == i;
        /* ... or when the caller's device memory of its domain is bound to an input or output (device_io.c) */
        int needed = sl->n_nodes > 0 || (owner && (domain_used || nr_devio_uses_domain(s, sl->domain)));
        if (!needed || sl->ctx) continue;
        nr_activity_set(s, NR_ACT_INIT_BACKEND, -1, i);
        netrun_status st = sl->api->context_create(&cfg, &sl->ctx);
        if (st != NETRUN_OK) {
            sl->ctx = NULL;
            snprintf(sl->failed_reason, sizeof sl->failed_reason, "%s", nr_error_message());
            s->fail_slot = i;
            nr_error_prefix("backend '%s' failed to initialise: ", sl->be->name);
            return st;
        }
    }
    s->stats.init_ms = nr_now_ms() - t0;
    return nr_devio_apply_streams(s); /* before weights are uploaded and kernels made: all on the caller's stream */
}

/* Before anything is allocated on a device: do its weights and activation arena fit the device memory budget
 * and the memory free on the device? (The workspace comes later; a failure there degrades, see below.) */
static netrun_status check_plan_fits(netrun_session *s) {
    s->plan_fixed_bytes = 0;
    s->plan_too_big = 0;
    for (int dom = 1; dom < s->n_domains; dom++) {
        nr_slot *sl = &s->slots[s->domain_slot[dom]];
        size_t weights = sl->weights_size + sl->stream_size; /* plan_weights */
        size_t need = weights + sl->arena_size;
        s->plan_fixed_bytes += need;
        size_t in_use = 0, peak = 0, free_b = 0;
        if (!sl->ctx || !NR_API_HAS(sl->api, memory_info) ||
            sl->api->memory_info(sl->ctx, &in_use, &peak, &free_b) != NETRUN_OK)
            free_b = 0;
        size_t budget = s->opts.device_memory_budget;
        if ((budget && need > budget) || (free_b && need > free_b)) {
            s->plan_too_big = 1;
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY,
                            "%s: the plan does not fit device memory: weights %zu + activations %zu = %zu bytes, "
                            "budget %zu%s, %zu bytes free on the device",
                            sl->be->name, weights, sl->arena_size, need, budget, budget ? "" : " (none)", free_b);
        }
    }
    return NETRUN_OK;
}

/* ---- weights: resident or streamed (docs/design.md, "Streamed weights") ----
 * A device normally holds every constant its nodes read, uploaded once at prepare. With streaming (option
 * memory.stream_weights: "1", or "auto" under the min-memory workspace policy, which degrading on out of device
 * memory ends in) a constant of at least memory.stream_min bytes (default NR_STREAM_MIN) that exactly one of the
 * device's nodes reads stays in the backend's page-locked host memory (ABI 1.5 host_alloc) and is copied, on the
 * device's queue, into a stream buffer shared by all such nodes before its node runs (plan_stream_lanes: two
 * lanes and prefetched one node ahead where the backend can). The device then holds the two largest nodes'
 * weights instead of all of them, for a copy of them all per run (ResNet-50 float32: 97 MiB). Copies from
 * host_alloc memory are queued DMAs, captured into device graphs like the kernels. Backends without host_alloc
 * keep weights resident. */
#define NR_STREAM_MIN ((size_t)64 << 10)

static netrun_status stream_wanted(netrun_session *s, int *on) {
    const char *opt = nr_options_get(&s->opts, "memory.stream_weights");
    if (opt && strcmp(opt, "auto") && strcmp(opt, "0") && strcmp(opt, "1"))
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "memory.stream_weights: '%s' is not auto, 0 or 1", opt);
    *on = opt && strcmp(opt, "auto") ? !strcmp(opt, "1") : s->opts.policy == NETRUN_WORKSPACE_MIN_MEMORY;
    return NETRUN_OK;
}

/* memory.stream_min: the smallest constant that streams, in bytes (smaller ones cost a copy for little room) */
static netrun_status stream_min(netrun_session *s, size_t *min) {
    const char *opt = nr_options_get(&s->opts, "memory.stream_min");
    *min = NR_STREAM_MIN;
    if (!opt) return NETRUN_OK;
    char *end = NULL;
    unsigned long long v = strtoull(opt, &end, 10);
    if (!*opt || *opt == '-' || !end || *end)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "memory.stream_min: '%s' is not a number of bytes", opt);
    *min = (size_t)v;
    return NETRUN_OK;
}

/* Which constants of a device domain stream (hoff[v]: 1 + byte offset in the host block; 0: resident); returns
 * the host block's size. */
static size_t choose_streamed(netrun_session *s, int dom, size_t min, int *uses, size_t *hoff) {
    nr_graph *g = s->model->ir->graph;
    memset(uses, 0, sizeof *uses * (size_t)g->n_values);
    memset(hoff, 0, sizeof *hoff * (size_t)g->n_values);
    for (int k = 0; k < s->n_snodes; k++) {
        const nr_snode *sn = &s->snodes[k];
        if (sn->slot < 0 || sn->view || s->slots[sn->slot].domain != dom) continue;
        const nr_node *nd = &g->nodes[sn->node];
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].is_const) uses[nd->inputs[i]]++;
    }
    size_t host = 0;
    for (int v = 0; v < g->n_values; v++) {
        const nr_svalue *sv = &s->values[v];
        if (!sv->is_const || !sv->place[dom].present || uses[v] != 1 || sv->nbytes < min || !sv->nbytes) continue;
        hoff[v] = host + 1;
        host += nr_align_up(sv->nbytes);
    }
    return host;
}

/* Bytes of a node's streamed constants in domain dom (0: none). */
static size_t streamed_bytes(const netrun_session *s, const nr_snode *sn, int dom) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    size_t n = 0;
    for (int i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].place[dom].stream_src)
            n += nr_align_up(s->values[nd->inputs[i]].nbytes);
    return n;
}

/* The stream buffer of a domain: with the backend's prefetch slots (ABI 1.6; memory.stream_overlap=0: not used)
 * two lanes, and a node prefetches the next streamed node's constants into the other lane while it runs, when
 * both are in one run of consecutive kernel steps of the slot (one device graph: every prefetch is waited for
 * inside the capture); the first of a run copies its own in order. Without them, one lane, copies in order.
 * Each node's constants are packed from its lane's start. */
static void plan_stream_lanes(netrun_session *s, int dom, nr_slot *sl) {
    const char *ov = nr_options_get(&s->opts, "memory.stream_overlap");
    int overlap = NR_API_HAS(sl->api, prefetch_from_host) && NR_API_HAS(sl->api, prefetch_wait) && (!ov || strcmp(ov, "0"));
    size_t lane_size[2] = {0, 0};
    int prev = -1, run_slot = -1;
    for (int t = 0; t < s->n_steps; t++) {
        int run = nr_step_device_slot(s, t); /* a chain stays inside one device graph segment */
        if (run != run_slot) prev = -1;
        run_slot = run;
        if (s->steps[t].kind != NR_STEP_KERNEL) continue;
        int k = s->steps[t].snode;
        nr_snode *sn = &s->snodes[k];
        if (sn->slot < 0 || sn->view || s->slots[sn->slot].domain != dom) continue;
        size_t bytes = streamed_bytes(s, sn, dom);
        if (!bytes) continue;
        sn->stream_lane = 0; /* outside a chain (first of a run, dynamic shapes): copied in order */
        if (overlap && prev >= 0) {
            s->snodes[prev].stream_next = k;
            sn->stream_prefetched = 1;
            sn->stream_lane = 1 - s->snodes[prev].stream_lane;
        }
        if (overlap && run >= 0) prev = k;
        if (bytes > lane_size[sn->stream_lane]) lane_size[sn->stream_lane] = bytes;
    }
    for (int k = 0; k < s->n_snodes; k++) {
        nr_snode *sn = &s->snodes[k];
        if (sn->stream_lane < 0 || s->slots[sn->slot].domain != dom) continue;
        const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
        size_t off = sn->stream_lane ? lane_size[0] : 0;
        for (int i = 0; i < nd->n_inputs; i++) {
            nr_place *p = nd->inputs[i] >= 0 ? &s->values[nd->inputs[i]].place[dom] : NULL;
            if (!p || !p->stream_src) continue;
            p->offset = off;
            off += nr_align_up(s->values[nd->inputs[i]].nbytes);
        }
    }
    sl->stream_size = lane_size[0] + lane_size[1];
}

/* Lay out each device domain's constants: resident ones in the weights buffer, streamed ones in their page-locked
 * host block and their lane of the stream buffer (plan_stream_lanes). Runs after the contexts exist (host_alloc)
 * and before the plan's fit is checked, which counts both device buffers. */
static netrun_status plan_weights(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    int want = 0;
    size_t min = 0;
    netrun_status st = stream_wanted(s, &want);
    if (st == NETRUN_OK) st = stream_min(s, &min);
    if (st != NETRUN_OK) return st;
    int *uses = want ? nr_calloc((size_t)g->n_values + 1, sizeof *uses) : NULL;
    size_t *hoff = want ? nr_calloc((size_t)g->n_values + 1, sizeof *hoff) : NULL;
    if (want && (!uses || !hoff)) {
        nr_free(uses);
        nr_free(hoff);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory planning the weights");
    }
    for (int k = 0; k < s->n_snodes; k++) {
        s->snodes[k].stream_lane = s->snodes[k].stream_next = -1;
        s->snodes[k].stream_prefetched = 0;
    }
    for (int dom = 1; dom < s->n_domains; dom++) {
        nr_slot *sl = &s->slots[s->domain_slot[dom]];
        size_t host = 0;
        if (want && sl->ctx && NR_API_HAS(sl->api, host_alloc) && NR_API_HAS(sl->api, host_free) &&
            (host = choose_streamed(s, dom, min, uses, hoff)) > 0 &&
            (sl->api->host_alloc(sl->ctx, host, &sl->stream_host) != NETRUN_OK || !sl->stream_host)) {
            nr_error_clear(); /* no page-locked memory: the weights stay resident */
            sl->stream_host = NULL;
            host = 0;
        }
        size_t total = 0;
        for (int v = 0; v < g->n_values; v++) {
            nr_svalue *sv = &s->values[v];
            nr_place *p = &sv->place[dom];
            if (!sv->is_const || !p->present) continue;
            if (host && hoff[v]) {
                void *src = (char *)sl->stream_host + hoff[v] - 1;
                memcpy(src, sv->desc.const_data, sv->nbytes);
                p->stream_src = src;
                sl->stream_bytes += sv->nbytes;
                continue;
            }
            p->offset = total;
            total += nr_align_up(sv->nbytes ? sv->nbytes : 1);
        }
        sl->weights_size = total;
        if (host) plan_stream_lanes(s, dom, sl);
    }
    nr_free(uses);
    nr_free(hoff);
    return NETRUN_OK;
}

static netrun_status upload_constants(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int dom = 1; dom < s->n_domains; dom++) {
        nr_slot *sl = &s->slots[s->domain_slot[dom]];
        nr_activity_set(s, NR_ACT_UPLOAD, -1, s->domain_slot[dom]);
        s->stats.stream_bytes += sl->stream_bytes;
        if (sl->stream_size) {
            netrun_status st = alloc_in_domain(s, dom, sl->stream_size, &sl->stream, "streamed weights");
            if (st != NETRUN_OK) return st;
            s->stats.weight_bytes += sl->stream_size;
        }
        if (!sl->weights_size) continue;
        netrun_status st = alloc_in_domain(s, dom, sl->weights_size, &sl->weights, "weights");
        if (st != NETRUN_OK) return st;
        s->stats.weight_bytes += sl->weights_size;
        for (int v = 0; v < g->n_values; v++) {
            nr_svalue *sv = &s->values[v];
            if (!sv->is_const || !sv->place[dom].present || sv->place[dom].stream_src || !sv->nbytes) continue;
            st = sl->api->copy_from_host(sl->ctx, sl->weights, sv->place[dom].offset, sv->desc.const_data, sv->nbytes);
            if (st != NETRUN_OK) return st;
        }
    }
    return NETRUN_OK;
}

static netrun_status create_kernels(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    size_t ws_need[NR_MAX_DOMAINS] = {0};
    for (int k = 0; k < s->n_snodes; k++) {
        nr_snode *sn = &s->snodes[k];
        if (sn->slot < 0) continue;
        if (sn->view) { /* its outputs are its inputs' bytes (plan_aliases): nothing to build or run */
            snprintf(sn->kernel_name, sizeof sn->kernel_name, "view: no copy");
            continue;
        }
        const nr_node *nd = &g->nodes[sn->node];
        nr_slot *sl = &s->slots[sn->slot];
        nr_gather_descs(s, sn, 0);
        nr_gather_out_descs(s, sn);
        netrun_node_desc desc = {.struct_size = sizeof desc, .name = nd->name, .op_type = nd->op_type,
                                 .domain = nd->domain, .opset = nd->opset, .params = sn->params,
                                 .params_size = nd->layer->params_size, .n_inputs = nd->n_inputs,
                                 .inputs = sn->in_desc, .n_outputs = nd->n_outputs, .outputs = sn->out_desc};
        nr_activity_set(s, NR_ACT_CREATE_KERNEL, sn->node, sn->slot);
        double t0 = nr_now_ms();
        netrun_status st = sl->api->kernel_create(sl->ctx, &desc, &sn->kernel, &sn->workspace);
        double dt = nr_now_ms() - t0;
        if (dt >= 20.0) /* what makes a prepare slow (algorithm searches, weight conversions), for NETRUN_LOG_LEVEL=info */
            nr_host_api()->log(NETRUN_LOG_INFO, "prepare", "kernel for node '%s' (%s) on %s: %.1f ms", nd->name,
                               nd->op_type, sl->be->name, dt);
        if (st != NETRUN_OK) {
            sn->kernel = NULL;
            s->fail_slot = sn->slot;
            s->fail_node = sn->node;
            snprintf(sl->failed_reason, sizeof sl->failed_reason, "%s", nr_error_message());
            nr_error_prefix("node '%s' (%s) on %s: ", nd->name, nd->op_type, sl->be->name);
            return st;
        }
        if (sn->workspace > ws_need[sl->domain]) ws_need[sl->domain] = sn->workspace;
        sn->kernel_name[0] = 0;
        if (NR_API_HAS(sl->api, kernel_describe) &&
            sl->api->kernel_describe(sl->ctx, sn->kernel, sn->kernel_name, sizeof sn->kernel_name) != NETRUN_OK)
            sn->kernel_name[0] = 0;
        sn->kernel_name[sizeof sn->kernel_name - 1] = 0;
        const char *layout = nr_internal_op_layout(nd);
        if (layout) {
            size_t l = strlen(sn->kernel_name);
            snprintf(sn->kernel_name + l, sizeof sn->kernel_name - l, "%s%s", l ? "; " : "", layout);
        }
        if (sn->inplace) {
            size_t l = strlen(sn->kernel_name);
            snprintf(sn->kernel_name + l, sizeof sn->kernel_name - l, "%sin place", l ? "; " : "");
        }
    }
    /* one shared workspace per device, sized by the largest need */
    for (int dom = 0; dom < s->n_domains; dom++) {
        if (!ws_need[dom]) continue;
        void *buf = NULL;
        netrun_status st = alloc_in_domain(s, dom, ws_need[dom], &buf, "the kernels' workspace");
        if (st != NETRUN_OK) return st;
        if (dom == NR_HOST_DOMAIN) {
            s->host_workspace = buf;
            s->host_workspace_size = ws_need[dom];
        } else {
            s->slots[s->domain_slot[dom]].workspace = buf;
            s->slots[s->domain_slot[dom]].workspace_size = ws_need[dom];
        }
        s->stats.workspace_bytes += ws_need[dom];
    }
    return NETRUN_OK;
}

static netrun_status prepare_once(netrun_session *s) {
    nr_session_unprepare(s);
    double t0 = nr_now_ms();
    nr_graph *g = s->model->ir->graph;
    s->values = nr_calloc((size_t)g->n_values + 1, sizeof(nr_svalue));
    s->snodes = nr_calloc((size_t)g->n_nodes + 1, sizeof(nr_snode));
    if (!s->values || !s->snodes) {
        nr_session_unprepare(s);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory preparing the session");
    }
    for (int v = 0; v < g->n_values; v++) {
        nr_svalue *sv = &s->values[v];
        sv->producer = -1;
        sv->graph_input = -1;
        sv->graph_output = -1;
        sv->desc.name = g->values[v].name;
        sv->desc.rank = -1;
        /* an input left at its default value (an initializer listed as an input) is a constant of this plan;
         * giving it a value unprepares (session.c) */
        const nr_tensor *c = g->values[v].constant;
        if (!c && g->values[v].default_value) {
            int set = 0;
            for (int i = 0; i < g->n_inputs; i++)
                if (g->inputs[i] == v) set = s->inputs[i].set;
            if (!set) c = g->values[v].default_value;
        }
        if (c) {
            nr_desc_from_tensor(&sv->desc, g->values[v].name, c);
            sv->is_const = 1;
            sv->nbytes = c->nbytes;
        }
    }
    s->n_snodes = g->n_nodes;
    for (int k = 0; k < g->n_nodes; k++) {
        nr_snode *sn = &s->snodes[k];
        const nr_node *nd = &g->nodes[s->model->order[k]];
        sn->node = s->model->order[k];
        sn->slot = -2;
        sn->in_desc = nr_calloc((size_t)nd->n_inputs + 1, sizeof(netrun_value_desc));
        sn->out_desc = nr_calloc((size_t)nd->n_outputs + 1, sizeof(netrun_value_desc));
        sn->in_t = nr_calloc((size_t)nd->n_inputs + 1, sizeof(netrun_tensor));
        sn->out_t = nr_calloc((size_t)nd->n_outputs + 1, sizeof(netrun_tensor));
        sn->params = nd->layer && nd->layer->params_size ? nr_calloc(1, nd->layer->params_size) : NULL;
        if (!sn->in_desc || !sn->out_desc || !sn->in_t || !sn->out_t ||
            (nd->layer && nd->layer->params_size && !sn->params)) {
            nr_session_unprepare(s);
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory preparing the session");
        }
    }
    if (s->mb_head && s->mb_model != s->model) s->mb_head = 0; /* a split of another graph: check all in runs */
    double tp[6] = {0}; /* phase ends, logged at info level below */
    netrun_status st = nr_bind_inputs(s);
    if (st == NETRUN_OK) st = nr_infer_all(s);
    if (st == NETRUN_OK) st = nr_place_nodes(s);
    tp[0] = nr_now_ms();
    if (st == NETRUN_OK && s->mb) st = nr_micro_batch_verify(s);
    if (st == NETRUN_OK) { /* graph passes (optimize.c): after a rewrite, prepare the session's copy instead */
        netrun_backend_config cfg = nr_backend_config_of(s);
        netrun_model *opt = NULL;
        nr_optimize_counts oc;
        st = nr_optimize_session(s, &cfg, &opt, &oc);
        if (st == NETRUN_OK && opt) {
            nr_host_api()->log(NETRUN_LOG_INFO, "prepare",
                               "%.1f ms: inference and placement %.1f, graph passes %.1f; the passes rewrote the "
                               "model: preparing the rewritten copy", nr_now_ms() - t0, tp[0] - t0, nr_now_ms() - tp[0]);
            nr_session_unprepare(s);
            netrun_model_release(s->model); /* the copy holds a reference on it */
            s->model = opt;
            return prepare_once(s);
        }
        nr_optimize_model_counts(s->model, &oc);
        s->stats.n_bn_folded = oc.bn_folded;
        s->stats.n_act_fused = oc.act_fused;
        s->stats.n_sum_fused = oc.sum_fused;
        s->stats.n_nodes_dropped = oc.dropped;
        s->stats.n_swish_fused = oc.swish_fused;
        tp[1] = nr_now_ms();
        s->stats.n_nchwc_convs = oc.nchwc_convs;
        s->stats.n_nchwc_reorders = oc.nchwc_reorders;
        s->stats.n_fp16_convs = oc.fp16_convs;
        s->stats.n_fp16_converts = oc.fp16_converts;
        s->stats.n_fp16_nodes = oc.fp16_nodes;
        s->stats.n_fp16_casts = oc.fp16_casts;
        s->stats.n_attention_fused = oc.attention_fused;
        s->stats.n_layernorm_fused = oc.layernorm_fused;
        s->stats.n_gelu_fused = oc.gelu_fused;
    }
    /* micro-batching: decided on the optimized graph at the full batch, then built for fewer images (the first
     * mb_head nodes only, where that is all that pays) */
    if (st == NETRUN_OK && !s->mb_decided) {
        s->mb_decided = 1;
        int b = 0, head = 0;
        st = nr_micro_batch_choose(s, &b, &head, s->mb_note, sizeof s->mb_note);
        if (st == NETRUN_OK && b) {
            s->mb_n = s->values[g->inputs[0]].desc.dims[0];
            s->mb = b;
            s->mb_head = head;
            s->mb_model = s->model;
            return prepare_once(s);
        }
    }
    if (st == NETRUN_OK) st = nr_build_steps(s);
    if (st == NETRUN_OK) st = nr_plan_aliases(s);
    for (int dom = 0; st == NETRUN_OK && dom < s->n_domains; dom++) {
        size_t size = 0;
        st = nr_plan_domain(s, dom, &size);
        if (st == NETRUN_OK) {
            if (dom == NR_HOST_DOMAIN) s->host_arena_size = size;
            else s->slots[s->domain_slot[dom]].arena_size = size;
            s->stats.arena_bytes += size;
        }
    }
    tp[2] = nr_now_ms();
    if (st == NETRUN_OK) st = init_backends(s);
    tp[3] = nr_now_ms();
    if (st == NETRUN_OK) st = plan_weights(s);
    if (st == NETRUN_OK) st = check_plan_fits(s);
    if (st == NETRUN_OK)
        st = alloc_in_domain(s, NR_HOST_DOMAIN, s->host_arena_size, &s->host_arena, "the plan's activations");
    for (int dom = 1; st == NETRUN_OK && dom < s->n_domains; dom++) {
        nr_slot *sl = &s->slots[s->domain_slot[dom]];
        if (!sl->ctx && !sl->arena_size) continue; /* no node runs in this domain */
        st = alloc_in_domain(s, dom, sl->arena_size, &sl->arena, "activations");
    }
    if (st == NETRUN_OK) st = upload_constants(s);
    tp[4] = nr_now_ms();
    if (st == NETRUN_OK) st = create_kernels(s);
    tp[5] = nr_now_ms();
    if (st == NETRUN_OK && s->mb && !s->mb_head) st = nr_micro_batch_alloc_outputs(s);
    if (st == NETRUN_OK) pin_inputs(s);
    if (st != NETRUN_OK) {
        char keep[NR_ERROR_MAX];
        snprintf(keep, sizeof keep, "%s", nr_error_message());
        nr_session_unprepare(s);
        nr_error(st, "%s", keep);
        return st;
    }
    s->prepared = 1;
    s->ran_since_prepare = 0;
    s->stats.prepare_ms = nr_now_ms() - t0;
    nr_host_api()->log(NETRUN_LOG_INFO, "prepare",
                       "%.1f ms: inference and placement %.1f, graph passes %.1f, memory plan %.1f, backends %.1f, "
                       "weights %.1f, kernels %.1f", s->stats.prepare_ms, tp[0] - t0, tp[1] - tp[0], tp[2] - tp[1],
                       tp[3] - tp[2], tp[4] - tp[3], tp[5] - tp[4]);
    s->stats.micro_batch = s->mb;
    nr_options_note_unused(s);
    return NETRUN_OK;
}

/* Prepare; when a backend fails to initialise, or fails to build a node's kernel, place again without it
 * (unless strict mode forbids falling back): the failure shows in the placement reasons. */
netrun_status nr_session_prepare(netrun_session *s) {
    s->n_prepares++;
    const char *kv = nr_options_get(&s->opts, "debug.keep_values");
    s->keep_values = kv && strcmp(kv, "0") != 0;
    int degrade = 0; /* device memory: 1 = workspace capped, 2 = min-memory policy (and streamed weights) */
    s->mb_refused = 0;
    for (int attempt = 0;; attempt++) {
        s->fail_slot = s->fail_node = -1;
        s->mb = s->mb_head = 0;
        s->mb_decided = s->mb_refused;
        netrun_status st = prepare_once(s);
        if (st != NETRUN_OK && s->mb) { /* the plan for fewer images failed (a shape fixed to the batch): without */
            snprintf(s->mb_note, sizeof s->mb_note, "off: the plan for runs of %d images failed: %.190s", s->mb,
                     nr_error_message());
            s->mb = 0;
            s->mb_refused = 1;
            nr_error_clear();
            attempt--;
            continue;
        }
        if (st == NETRUN_ERR_OUT_OF_MEMORY && s->n_domains > 1) {
            /* out of device memory: choose algorithms again under a smaller workspace (when the weights and
             * activations alone fit), then the min-memory policy (smallest workspaces, and weights streamed from
             * host memory unless memory.stream_weights is 0); after that, fail with the numbers */
            if (degrade < 2) {
                degrade = s->plan_too_big ? 2 : degrade + 1;
                if (degrade == 1) {
                    size_t cap = (size_t)16 << 20;
                    if (!s->opts.workspace_limit || s->opts.workspace_limit > cap) s->opts.workspace_limit = cap;
                } else {
                    s->opts.policy = NETRUN_WORKSPACE_MIN_MEMORY;
                }
                nr_error_clear();
                continue;
            }
            char keep[NR_ERROR_MAX];
            snprintf(keep, sizeof keep, "%s", nr_error_message());
            nr_error(st, "out of device memory even under the min-memory policy (smallest convolution workspaces, "
                         "weights streamed where the backend can); weights + activations need %zu bytes: %s",
                     s->plan_fixed_bytes, keep);
            return st;
        }
        if (st == NETRUN_OK || s->opts.strict || s->fail_slot < 0 || attempt > 4 * NR_MAX_SLOTS) return st;
        int others = 0;
        for (int i = 0; i < s->n_slots; i++) others += i != s->fail_slot && !s->slots[i].failed;
        if (!others) return st;
        nr_host_api()->log(NETRUN_LOG_INFO, "prepare", "placing again without %s%s%s: %s", s->slots[s->fail_slot].be->name,
                           s->fail_node >= 0 ? " for node " : "",
                           s->fail_node >= 0 ? s->model->ir->graph->nodes[s->fail_node].name : "", nr_error_message());
        if (s->fail_node >= 0) {
            if (!s->avoid) s->avoid = nr_calloc((size_t)s->model->ir->graph->n_nodes + 1, sizeof(uint32_t));
            if (!s->avoid) return st;
            s->avoid[s->fail_node] |= 1u << s->fail_slot;
        } else
            s->slots[s->fail_slot].failed = 1;
        nr_error_clear();
    }
}

