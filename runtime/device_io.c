/*
 * Inputs and outputs in the caller's device memory, and the caller's stream (plan layer; docs/device-io.md).
 * The runtime never names a backend here: a memory type is served by the session's backend that declares its
 * buffers to be of that type (ABI 1.11 memory_type), which checks the caller's pointers (memory_check), wraps them
 * as buffers of its own (buffer_wrap) and queues its work on the caller's stream (set_stream).
 *
 * A bound input is at home in that backend's domain (memplan.c): its nodes there read the wrapped buffer in place,
 * others get a copy from it. A bound output is written in place by its producer when the memory plan lets it
 * (a value of its own arena item in the bound domain: not a view, not written over an input, static), else copied
 * at the end of the run (execute.c). Device graphs bake pointers in: when a wrapped pointer changes, or an output
 * goes in or out of place, the captured graphs are dropped and captured again at that run.
 */
#include <stdio.h>
#include <string.h>

#include "session.h"

const char *nr_memory_type_name(netrun_memory_type type) {
    switch (type) {
    case NETRUN_MEMORY_HOST: return "host memory";
    case NETRUN_MEMORY_CUDA: return "CUDA device memory";
    case NETRUN_MEMORY_OPENCL: return "an OpenCL buffer";
    }
    return "an unknown memory type";
}

static uint32_t slot_memory_type(const nr_slot *sl) {
    return NR_API_FITS(sl->api, memory_type) ? sl->api->memory_type : 0;
}

int nr_devio_domain(netrun_session *s, netrun_memory_type type, const char *what) {
    char names[160] = "";
    for (int i = 0; i < s->n_slots; i++) {
        const nr_slot *sl = &s->slots[i];
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", sl->be->name);
        if (sl->domain == NR_HOST_DOMAIN || s->domain_slot[sl->domain] != i || sl->failed) continue;
        if (type == NETRUN_MEMORY_HOST || slot_memory_type(sl) != (uint32_t)type) continue;
        if (!NR_API_HAS(sl->api, buffer_wrap)) {
            nr_error(NETRUN_ERR_UNSUPPORTED, "%s is in %s: backend '%s' holds that memory but cannot take the "
                     "caller's (its plugin has no buffer_wrap)", what, nr_memory_type_name(type), sl->be->name);
            return -1;
        }
        return sl->domain;
    }
    nr_error(NETRUN_ERR_UNSUPPORTED, "%s: no backend of this session serves %s (backends: %s)", what,
             nr_memory_type_name(type), names);
    return -1;
}

int nr_devio_any(const netrun_session *s) {
    const nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs; i++)
        if (s->inputs[i].mem != NETRUN_MEMORY_HOST) return 1;
    for (int i = 0; i < g->n_outputs; i++)
        if (s->outputs[i].mem != NETRUN_MEMORY_HOST) return 1;
    return 0;
}

int nr_devio_uses_domain(const netrun_session *s, int dom) {
    const nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs; i++)
        if (s->inputs[i].mem != NETRUN_MEMORY_HOST && s->inputs[i].dev_dom == dom) return 1;
    for (int i = 0; i < g->n_outputs; i++)
        if (s->outputs[i].mem != NETRUN_MEMORY_HOST && s->outputs[i].dev_ptr && s->outputs[i].dev_dom == dom) return 1;
    return 0;
}

netrun_status nr_devio_apply_streams(netrun_session *s) {
    for (int i = 0; i < s->n_slots; i++) {
        nr_slot *sl = &s->slots[i];
        uint32_t type = slot_memory_type(sl);
        if (!sl->ctx || type == 0 || type >= sizeof s->streams / sizeof s->streams[0]) continue;
        void *want = s->streams[type];
        if (want == sl->caller_stream) continue;
        if (!NR_API_HAS(sl->api, set_stream))
            return nr_error(NETRUN_ERR_UNSUPPORTED, "backend '%s' cannot queue its work on the caller's stream",
                            sl->be->name);
        netrun_status st = sl->api->set_stream(sl->ctx, want);
        if (st != NETRUN_OK) {
            nr_error_prefix("backend '%s': using the caller's stream: ", sl->be->name);
            return st;
        }
        sl->caller_stream = want;
    }
    return NETRUN_OK;
}

static void release_wrap(netrun_session *s, int dom, void **wrapped, void **wrapped_ptr) {
    if (*wrapped && dom > 0 && dom < s->n_domains && s->domain_slot[dom] >= 0) {
        nr_slot *sl = &s->slots[s->domain_slot[dom]];
        if (sl->ctx) sl->api->buffer_free(sl->ctx, *wrapped);
    }
    *wrapped = NULL;
    *wrapped_ptr = NULL;
}

void nr_devio_release_input(netrun_session *s, int i) {
    nr_input *in = &s->inputs[i];
    release_wrap(s, in->dev_dom, &in->wrapped, &in->wrapped_ptr);
}

void nr_devio_release_output(netrun_session *s, int i) {
    nr_output *out = &s->outputs[i];
    release_wrap(s, out->dev_dom, &out->wrapped, &out->wrapped_ptr);
    out->in_place = 0;
}

void nr_devio_release(netrun_session *s) {
    const nr_graph *g = s->model ? s->model->ir->graph : NULL;
    for (int i = 0; g && s->inputs && i < g->n_inputs; i++) nr_devio_release_input(s, i);
    for (int i = 0; g && s->outputs && i < g->n_outputs; i++) nr_devio_release_output(s, i);
}

/* The caller's pointer as a buffer of the backend serving its domain, made again when the pointer changed. */
static netrun_status wrap(netrun_session *s, int dom, void *ptr, size_t bytes, void **wrapped, void **wrapped_ptr,
                          const char *what, int *changed) {
    if (*wrapped && *wrapped_ptr == ptr) return NETRUN_OK;
    release_wrap(s, dom, wrapped, wrapped_ptr);
    nr_slot *sl = dom > 0 && dom < s->n_domains && s->domain_slot[dom] >= 0 ? &s->slots[s->domain_slot[dom]] : NULL;
    if (!sl || !sl->ctx) return nr_error(NETRUN_ERR_INTERNAL, "%s: the backend of its memory has no context", what);
    netrun_status st = sl->api->buffer_wrap(sl->ctx, ptr, bytes, wrapped);
    if (st != NETRUN_OK) {
        *wrapped = NULL;
        nr_error_prefix("%s: ", what);
        return st;
    }
    *wrapped_ptr = ptr;
    *changed = 1;
    return NETRUN_OK;
}

/* Whether output value v may be written by its producer straight into the caller's buffer in domain dom: a value
 * of its own arena item there (not a view of another value or written over one, not a root others share, not a
 * graph input, not constant, static shape). */
static int output_in_place(const netrun_session *s, int v, int dom, size_t cap) {
    const nr_svalue *sv = &s->values[v];
    const char *opt = nr_options_get(&s->opts, "memory.bound_in_place");
    if (opt && !strcmp(opt, "0")) return 0;
    return sv->home == dom && !sv->is_const && !sv->dynamic && sv->graph_input < 0 && sv->alias_root < 0 &&
           !sv->alias_members && sv->place[dom].in_arena && !sv->place[dom].dyn_buffer && !s->keep_values &&
           sv->producer >= 0 && sv->nbytes <= cap;
}

netrun_status nr_devio_begin_run(netrun_session *s) {
    const nr_graph *g = s->model->ir->graph;
    int changed = 0;
    char what[160];
    for (int i = 0; i < g->n_inputs; i++) {
        nr_input *in = &s->inputs[i];
        if (in->mem == NETRUN_MEMORY_HOST) continue;
        snprintf(what, sizeof what, "input '%.120s'", g->values[g->inputs[i]].name);
        netrun_status st = wrap(s, in->dev_dom, in->dev_ptr, in->nbytes, &in->wrapped, &in->wrapped_ptr, what, &changed);
        if (st != NETRUN_OK) return st;
    }
    s->stats.n_outputs_in_place = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        nr_output *out = &s->outputs[i];
        if (out->mem == NETRUN_MEMORY_HOST || !out->dev_ptr) continue;
        int v = g->outputs[i];
        const nr_svalue *sv = &s->values[v];
        snprintf(what, sizeof what, "output '%.120s'", g->values[v].name);
        if (!sv->dynamic && sv->nbytes > out->dev_cap)
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s needs %zu bytes; the buffer bound to it holds %zu", what,
                            sv->nbytes, out->dev_cap);
        netrun_status st = wrap(s, out->dev_dom, out->dev_ptr, out->dev_cap, &out->wrapped, &out->wrapped_ptr, what,
                                &changed);
        if (st != NETRUN_OK) return st;
        int in_place = output_in_place(s, v, out->dev_dom, out->dev_cap);
        changed |= in_place != out->in_place;
        out->in_place = in_place;
        s->stats.n_outputs_in_place += in_place;
    }
    if (!changed) return NETRUN_OK;
    /* captured graphs hold the old addresses: capture them again at this run (never replay a stale pointer) */
    for (int k = 0; k < s->n_segs; k++) {
        nr_segment *sg = &s->segs[k];
        if (sg->state != 1) continue;
        nr_slot *sl = &s->slots[sg->slot];
        if (sg->graph && sl->ctx) sl->api->graph_destroy(sl->ctx, sg->graph);
        sg->graph = NULL;
        sg->state = 0;
        s->stats.n_graphs--;
        s->stats.graph_recaptures++;
    }
    return NETRUN_OK;
}

void *nr_devio_bound_buffer(const netrun_session *s, int v, int dom) {
    const nr_svalue *sv = &s->values[v];
    if (dom != sv->home || dom == NR_HOST_DOMAIN) return NULL;
    if (sv->graph_input >= 0) {
        const nr_input *in = &s->inputs[sv->graph_input];
        return in->mem != NETRUN_MEMORY_HOST ? in->wrapped : NULL;
    }
    if (sv->graph_output >= 0) {
        const nr_output *out = &s->outputs[sv->graph_output];
        return out->in_place ? out->wrapped : NULL;
    }
    return NULL;
}
