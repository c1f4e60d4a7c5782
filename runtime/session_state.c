/* The session's state that both the plan and the executor touch (plan layer): a value's tensor in a domain, the
 * profile's ring of events, the device graphs' release, the host buffers of outputs. Here, below the executor, so
 * that prepare and teardown never call up into it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

void nr_value_tensor(netrun_session *s, int v, int dom, netrun_tensor *t) {
    nr_svalue *sv = &s->values[v];
    memset(t, 0, sizeof *t);
    t->dtype = sv->desc.dtype;
    t->rank = sv->desc.rank;
    memcpy(t->dims, sv->desc.dims, sizeof t->dims);
    t->nbytes = sv->nbytes;
    nr_place *p = &sv->place[dom];
    if (dom == NR_HOST_DOMAIN) {
        if (sv->is_const) t->buffer = (void *)sv->desc.const_data;
        else if (sv->graph_input >= 0 && sv->home == NR_HOST_DOMAIN) /* micro-batching: this run's slice */
            t->buffer = (char *)s->inputs[sv->graph_input].data + (s->mb ? (size_t)s->mb_chunk * sv->nbytes : 0);
        else if (p->dyn_buffer) t->buffer = p->dyn_buffer;
        else if (p->in_arena) t->buffer = (char *)s->host_arena + p->offset;
        t->data = t->buffer;
        return;
    }
    nr_slot *sl = &s->slots[s->domain_slot[dom]];
    void *bound = nr_devio_bound_buffer(s, v, dom); /* the caller's device memory (device_io.c) */
    if (bound) {
        t->buffer = bound;
        t->offset = 0;
    } else if (p->dyn_buffer) {
        t->buffer = p->dyn_buffer;
        t->offset = 0;
    } else {
        t->buffer = !sv->is_const ? sl->arena : p->stream_src ? sl->stream : sl->weights;
        t->offset = p->offset;
    }
    void *base = sl->api->buffer_address ? sl->api->buffer_address(sl->ctx, t->buffer) : NULL;
    t->data = base ? (char *)base + t->offset : NULL;
}

nr_prof_event *nr_profile_push(netrun_session *s) {
    if (s->n_prof == s->cap_prof && s->cap_prof < s->prof_max) { /* grows only while nothing was dropped: head 0 */
        int nc = s->cap_prof ? (s->cap_prof > s->prof_max / 2 ? s->prof_max : s->cap_prof * 2) : 256;
        if (nc > s->prof_max) nc = s->prof_max;
        nr_prof_event *p = nr_realloc(s->prof, sizeof *p * (size_t)nc);
        if (!p) return NULL;
        s->prof = p;
        s->cap_prof = nc;
    }
    if (s->n_prof == s->cap_prof) { /* full: the oldest run goes whole (the current one only event by event) */
        uint64_t oldest = s->prof[s->prof_head].run;
        do {
            s->prof_head = (s->prof_head + 1) % s->cap_prof;
            s->n_prof--;
            s->prof_dropped++;
        } while (s->n_prof > 0 && oldest != s->prof_runs && s->prof[s->prof_head].run == oldest);
    }
    nr_prof_event *e = &s->prof[(s->prof_head + s->n_prof++) % s->cap_prof];
    memset(e, 0, sizeof *e);
    return e;
}

const char *nr_profile_label(netrun_session *s, const char *text) {
    for (nr_prof_label *l = s->prof_labels; l; l = l->next)
        if (!strcmp(l->text, text)) return l->text;
    size_t n = strlen(text) + 1;
    nr_prof_label *l = nr_malloc(sizeof *l + n);
    if (!l) return NULL;
    memcpy(l->text, text, n);
    l->next = s->prof_labels;
    s->prof_labels = l;
    return l->text;
}

#define NR_PROFILE_MAX_EVENTS 100000 /* about 5 MB of events */

void nr_profile_clear(netrun_session *s) {
    s->n_prof = s->prof_head = 0;
    while (s->prof_labels) {
        nr_prof_label *next = s->prof_labels->next;
        nr_free(s->prof_labels);
        s->prof_labels = next;
    }
    s->prof_runs = s->prof_dropped = 0;
    const char *v = nr_options_get(&s->opts, "profile.max_events"); /* checked when set: 1 .. INT64_MAX */
    long long max = v ? strtoll(v, NULL, 10) : NR_PROFILE_MAX_EVENTS;
    s->prof_max = max < 1 ? NR_PROFILE_MAX_EVENTS : max > INT32_MAX / 2 ? INT32_MAX / 2 : (int)max;
    if (s->cap_prof > s->prof_max) { /* a smaller ring than before: start it again */
        nr_free(s->prof);
        s->prof = NULL;
        s->cap_prof = 0;
    }
}

void nr_exec_release(netrun_session *s) {
    for (int i = 0; i < s->n_segs; i++) {
        nr_segment *sg = &s->segs[i];
        nr_slot *sl = &s->slots[sg->slot];
        if (sg->graph && sl->ctx) sl->api->graph_destroy(sl->ctx, sg->graph);
        sg->graph = NULL;
        nr_free(sg->sig.p);
        nr_free(sg->cur.p);
        sg->sig = sg->cur = (nr_sig){0};
    }
    nr_free(s->segs);
    nr_free(s->step_seg);
    s->segs = NULL;
    s->step_seg = NULL;
    s->n_segs = 0;
    s->segs_built = 0;
    s->stats.n_graphs = s->stats.n_segments = 0;
}

int nr_step_device_slot(const netrun_session *s, int k) {
    const nr_step *step = &s->steps[k];
    if (step->kind != NR_STEP_KERNEL) return -1;
    const nr_snode *sn = &s->snodes[step->snode];
    if (sn->slot < 0 || sn->dynamic) return -1;
    const nr_slot *sl = &s->slots[sn->slot];
    return sl->domain != NR_HOST_DOMAIN && sl->ctx ? sn->slot : -1;
}

netrun_status nr_output_reserve(netrun_session *s, nr_output *out, size_t need, const char *name) {
    if (need <= out->cap && out->host) return NETRUN_OK;
    nr_host_free(s, out->host, out->cap);
    char what[160];
    snprintf(what, sizeof what, "output '%.120s'", name ? name : "?");
    out->host = nr_host_alloc(s, need, what);
    out->cap = out->host ? need : 0;
    return out->host ? NETRUN_OK : NETRUN_ERR_OUT_OF_MEMORY;
}
