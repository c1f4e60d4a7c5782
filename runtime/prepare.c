/*
 * Prepare: bind input shapes, infer every node (folding constant subgraphs on the CPU), place nodes on
 * backends, insert copies at domain borders, plan activation memory by lifetime, then (lazy init) create
 * backend contexts, upload constants and build kernels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_flow.h"
#include "micro_batch.h"
#include "op_inputs.h"
#include "optimize.h"
#include "plugin_ops.h"

#define ALIGN 256
/* Largest intermediate value (the importer's default max_tensor_bytes): larger shapes are refused. */
#define NR_MAX_VALUE_BYTES ((uint64_t)16 << 30)

static size_t align_up(size_t x) { return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

size_t nr_desc_bytes(const netrun_value_desc *d) {
    if (d->rank < 0) return 0;
    int64_t n = nr_shape_count(d->rank, d->dims);
    size_t es = netrun_dtype_size(d->dtype), bytes;
    if (n < 0 || !nr_mul_size((size_t)n, es, &bytes)) return 0;
    return bytes;
}

/* ---- backends of the session ---- */

static netrun_status add_slot(netrun_session *s, const nr_backend *be) {
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].be == be) return NETRUN_OK;
    if (s->n_slots == NR_MAX_SLOTS) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "too many backends listed");
    nr_slot *sl = &s->slots[s->n_slots++];
    memset(sl, 0, sizeof *sl);
    sl->be = be;
    sl->api = be->api;
    sl->domain = NR_HOST_DOMAIN;
    if (!(be->api->flags & NETRUN_BACKEND_HOST_MEMORY)) {
        if (s->n_domains >= NR_MAX_DOMAINS) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "too many device backends");
        sl->domain = s->n_domains++;
    }
    return NETRUN_OK;
}

netrun_status nr_session_choose_backends(netrun_session *s) {
    s->n_slots = 0;
    s->n_domains = 1;
    int n = 0;
    if (!s->opts.backends) {
        n = nr_backends_count(); /* default: GPU backends, then cpu, then the other available ones */
        for (int pass = 0; pass < 3; pass++)
            for (int i = 0; i < n; i++) {
                const nr_backend *be = nr_backends_get(i);
                if (!be->available) continue;
                int gpu = (be->api->flags & NETRUN_BACKEND_GPU) != 0, cpu = !strcmp(be->name, "cpu");
                if ((pass == 0 && gpu) || (pass == 1 && cpu) || (pass == 2 && !gpu && !cpu)) {
                    netrun_status st = add_slot(s, be);
                    if (st != NETRUN_OK) return st;
                }
            }
    } else {
        /* A backend the caller names is what the caller asked for: if it cannot be used (no driver, no device),
         * running elsewhere is an error unless the list names another available backend or fallback was allowed
         * (netrun_options_set_allow_fallback). Never a silent move to the CPU. */
        char list[512], names[512];
        snprintf(list, sizeof list, "%s", s->opts.backends);
        int named_available = 0;
        char *save = NULL;
        snprintf(names, sizeof names, "%s", s->opts.backends);
        for (char *name = strtok_r(names, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
            const nr_backend *b = nr_backends_lookup(name);
            named_available += b && b->available;
        }
        save = NULL;
        for (char *name = strtok_r(list, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
            const nr_backend *found = nr_backends_lookup(name);
            if (!found) {
                n = nr_backends_count();
                char found_names[256] = "";
                for (int i = 0; i < n; i++) {
                    size_t l = strlen(found_names);
                    snprintf(found_names + l, sizeof found_names - l, "%s%s", i ? ", " : "", nr_backends_get(i)->name);
                }
                return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "unknown backend '%s' (found: %s)", name,
                                *found_names ? found_names : "none; set NETRUN_BACKEND_PATH");
            }
            if (!found->available) {
                const char *why = found->reason ? found->reason : "unknown reason";
                if (s->opts.strict)
                    return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "backend '%s' is unavailable: %s (strict mode)",
                                    name, why);
                if (!named_available && !s->opts.allow_fallback)
                    return nr_error(NETRUN_ERR_INVALID_ARGUMENT,
                                    "backend '%s' is unavailable: %s. No other backend of the list '%s' is "
                                    "available; to run on the CPU instead, list it after (e.g. '%s,cpu') or allow "
                                    "fallback (netrun_options_set_allow_fallback; CLI --allow-fallback)",
                                    name, why, s->opts.backends, s->opts.backends);
                nr_host_api()->log(NETRUN_LOG_WARN, "runtime", "backend '%s' is unavailable (%s): skipped, as %s", name, why,
                    named_available ? "the list names others" : "fallback is allowed");
                continue;
            }
            netrun_status st = add_slot(s, found);
            if (st != NETRUN_OK) return st;
        }
        const nr_backend *cpu = nr_backends_find("cpu");
        if (!s->opts.strict && cpu) {
            netrun_status st = add_slot(s, cpu);
            if (st != NETRUN_OK) return st;
        }
        /* the plugins that define ops of the model (ABI 1.9) come with them, as the CPU does */
        const nr_graph *mg = s->model->ir->graph;
        for (int k = 0; k < mg->n_nodes && !s->opts.strict; k++) {
            const nr_backend *def = nr_plugin_op_definer(mg->nodes[k].layer);
            netrun_status st = def && def->available ? add_slot(s, def) : NETRUN_OK;
            if (st != NETRUN_OK) return st;
        }
    }
    if (!s->n_slots)
        return nr_error(NETRUN_ERR_UNSUPPORTED, "no usable backend: none of the listed backends is available "
                                                "(run `netrun --backends` to see why)");
    for (int d = 0; d < NR_MAX_DOMAINS; d++) s->domain_slot[d] = -1;
    for (int i = s->n_slots - 1; i >= 0; i--) s->domain_slot[s->slots[i].domain] = i;
    return NETRUN_OK;
}

static netrun_backend_config make_config(netrun_session *s) {
    netrun_backend_config c = {
        .struct_size = sizeof c,
        .device = s->opts.device,
        .threads = s->opts.threads,
        .precision = s->opts.precision,
        .workspace_policy = s->opts.policy,
        .workspace_limit = s->opts.workspace_limit,
        .device_memory_budget = s->opts.device_memory_budget,
        .get_option = nr_options_get,
        .opaque = &s->opts,
    };
    if (c.threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c.threads = n > 0 ? (int)n : 1;
    }
    return c;
}

/* ---- teardown ---- */

static void free_node(netrun_session *s, nr_snode *sn) {
    nr_cf_free(s, sn);
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

/* ---- shapes ---- */

static netrun_status bind_inputs(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        int v = g->inputs[i];
        const nr_value *val = &g->values[v];
        nr_svalue *sv = &s->values[v];
        if (sv->is_const) continue; /* left at its default value: a constant (graph_input stays -1) */
        sv->graph_input = i;
        netrun_value_desc *d = &sv->desc;
        d->dtype = val->dtype;
        nr_input *in = &s->inputs[i];
        if (in->set) {
            d->dtype = in->dtype; /* equal to the declared one, or the only one known (subgraph inputs) */
            d->rank = in->rank;
            memcpy(d->dims, in->dims, sizeof d->dims);
            in->plan_rank = in->rank;
            memcpy(in->plan_dims, in->dims, sizeof in->plan_dims);
            /* dims that change between runs: unknown to the plan, so the nodes they reach are inferred and
             * allocated at run time (nr_session_execute gives the value the run's dims) */
            for (int k = 0; k < in->rank; k++)
                if (in->run_time_dims & (1u << k)) d->dims[k] = -1;
            if (in->run_time_dims) sv->dynamic = 1;
        } else {
            if (val->rank < 0)
                return nr_error(NETRUN_ERR_STATE, "input '%s' has no declared shape: set it before prepare",
                                val->name);
            d->rank = val->rank;
            for (int k = 0; k < val->rank; k++) {
                d->dims[k] = val->dims[k];
                for (int j = 0; val->dim_names[k] && j < s->n_dims; j++)
                    if (!strcmp(s->dim_names[j], val->dim_names[k])) d->dims[k] = s->dim_values[j];
                if (d->dims[k] < 0)
                    return nr_error(NETRUN_ERR_STATE,
                                    "input '%s': dim %d%s%s%s is not known: set it with netrun_session_set_dim "
                                    "(CLI: --shape) or set the input before prepare",
                                    val->name, k, val->dim_names[k] ? " ('" : "",
                                    val->dim_names[k] ? val->dim_names[k] : "", val->dim_names[k] ? "')" : "");
            }
        }
        if (d->dtype == NETRUN_DTYPE_UNDEFINED)
            return nr_error(NETRUN_ERR_INVALID_MODEL, "input '%s' has no declared element type", val->name);
        /* declared dims whose element count overflows (found by the fuzzer: Size then overflowed too) */
        for (int k = 0; k < d->rank; k++)
            if (d->dims[k] > NR_MAX_DIM)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "input '%s': dim %d is %lld, over the limit of %lld", val->name,
                                k, (long long)d->dims[k], (long long)NR_MAX_DIM);
        int64_t count = nr_shape_count(d->rank, d->dims);
        size_t bytes;
        if (count == INT64_MAX || (count > 0 && (!nr_mul_size((size_t)count, netrun_dtype_size(d->dtype) ? netrun_dtype_size(d->dtype) : 8, &bytes) ||
                                                 bytes > NR_MAX_VALUE_BYTES)))
            return nr_error(NETRUN_ERR_INVALID_MODEL, "input '%s' would have %lld elements, over the limit of %llu bytes",
                            val->name, (long long)count, (unsigned long long)NR_MAX_VALUE_BYTES);
        if (!in->set) {
            in->plan_rank = d->rank;
            memcpy(in->plan_dims, d->dims, sizeof in->plan_dims);
        }
        if (s->mb) d->dims[0] = s->mb; /* micro-batching: the plan is built for mb images */
        sv->nbytes = nr_desc_bytes(d);
    }
    return NETRUN_OK;
}

static void desc_from_tensor(netrun_value_desc *d, const char *name, const nr_tensor *t) {
    d->name = name;
    d->dtype = t->dtype;
    d->rank = t->rank;
    memcpy(d->dims, t->dims, sizeof d->dims);
    d->const_data = t->data;
    d->const_nbytes = t->nbytes;
}

/* Build a node's input/output descs from the current values; with host_values (at run time), inputs carry
 * their data when it is readable on the host (host-domain tensors in place, device ones through host_copy). */
void nr_gather_descs(netrun_session *s, nr_snode *sn, int with_host_values) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    for (int i = 0; i < nd->n_inputs; i++) {
        int v = nd->inputs[i];
        netrun_value_desc *d = &sn->in_desc[i];
        if (v < 0) {
            memset(d, 0, sizeof *d);
            d->name = "";
            d->rank = -1;
            continue;
        }
        nr_svalue *sv = &s->values[v];
        *d = sv->desc;
        if (sv->is_const) continue;
        d->const_data = NULL;
        d->const_nbytes = 0;
        if (!with_host_values) continue;
        if (sv->home == NR_HOST_DOMAIN) {
            netrun_tensor t;
            nr_value_tensor(s, v, NR_HOST_DOMAIN, &t);
            d->const_data = t.data;
        } else if (with_host_values == 1)
            d->const_data = sv->host_copy;
        else
            continue; /* 2: host values only; a device one stays unknown */
        d->const_nbytes = sv->nbytes;
    }
    for (int o = 0; o < nd->n_outputs; o++) {
        netrun_value_desc *d = &sn->out_desc[o];
        memset(d, 0, sizeof *d);
        d->rank = -1;
        d->name = nd->outputs[o] >= 0 ? s->model->ir->graph->values[nd->outputs[o]].name : NULL;
    }
}

netrun_status nr_infer_node(netrun_session *s, nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    const nr_layer *l = nd->layer;
    if (l->params_size) memcpy(sn->params, nd->params, l->params_size);
    nr_alloc_list_free(&sn->allocs);
    nr_layer_ctx c = {.node = nd, .opset = nd->opset, .n_in = nd->n_inputs, .in = sn->in_desc,
                      .n_out = nd->n_outputs, .out = sn->out_desc, .allocs = &sn->allocs};
    netrun_status st = l->infer(&c, sn->params);
    if (st != NETRUN_OK) return st;
    for (int o = 0; o < nd->n_outputs; o++) {
        netrun_value_desc *d = &sn->out_desc[o];
        if (!d->name) continue;
        /* ops whose output type comes from a subgraph that does not declare it: the model's declaration */
        if (d->dtype == NETRUN_DTYPE_UNDEFINED && nd->outputs[o] >= 0)
            d->dtype = s->model->ir->graph->values[nd->outputs[o]].dtype;
        /* still unknown, and known only after the run (control flow): a placeholder until the node ran */
        if (d->dtype == NETRUN_DTYPE_UNDEFINED && d->rank >= 0 && nr_shape_count(d->rank, d->dims) < 0)
            d->dtype = NETRUN_DTYPE_FLOAT;
        if (d->rank < 0 || d->rank > NETRUN_MAX_RANK || d->dtype == NETRUN_DTYPE_UNDEFINED)
            return nr_error(NETRUN_ERR_INTERNAL, "node '%s' (%s): output %d was not inferred", nd->name,
                            nd->op_type, o);
        /* a shape whose size overflows or is absurd (hostile pads, huge Expand) stops here, before any kernel */
        for (int k = 0; k < d->rank; k++)
            if (d->dims[k] > NR_MAX_DIM)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "node '%s' (%s): output %d would have a dim of %lld, over "
                                "the limit of %lld", nd->name, nd->op_type, o, (long long)d->dims[k], (long long)NR_MAX_DIM);
        int64_t count = nr_shape_count(d->rank, d->dims);
        size_t bytes;
        if (count == INT64_MAX || (count > 0 && (!nr_mul_size((size_t)count, netrun_dtype_size(d->dtype) ? netrun_dtype_size(d->dtype) : 8, &bytes) ||
                                                 bytes > NR_MAX_VALUE_BYTES)))
            return nr_error(NETRUN_ERR_INVALID_MODEL, "node '%s' (%s): output %d would have %lld elements, over the "
                            "limit of %llu bytes", nd->name, nd->op_type, o, (long long)count,
                            (unsigned long long)NR_MAX_VALUE_BYTES);
    }
    return NETRUN_OK;
}

/* Compute a node on the CPU backend at prepare because all its inputs are constant. Returns 1 when folded. */
static int try_fold(netrun_session *s, nr_snode *sn, const nr_backend *cpu, netrun_backend_context **fold_ctx) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    if (!cpu || (nd->layer->flags & NR_LAYER_NO_FOLD)) return 0;
    for (int o = 0; o < nd->n_outputs; o++)
        if (nd->outputs[o] >= 0 && nr_shape_count(sn->out_desc[o].rank, sn->out_desc[o].dims) < 0) return 0;
    netrun_node_desc desc = {.struct_size = sizeof desc, .name = nd->name, .op_type = nd->op_type,
                             .domain = nd->domain, .opset = nd->opset, .params = sn->params,
                             .params_size = nd->layer->params_size, .n_inputs = nd->n_inputs,
                             .inputs = sn->in_desc, .n_outputs = nd->n_outputs, .outputs = sn->out_desc};
    netrun_backend_config cfg = make_config(s);
    cfg.threads = 1;
    char why[256];
    if (!cpu->api->supports(&cfg, &desc, why, sizeof why)) return 0;
    nr_activity_set(s, NR_ACT_FOLD, sn->node, -1);
    if (!*fold_ctx && cpu->api->context_create(&cfg, fold_ctx) != NETRUN_OK) return 0;
    netrun_kernel *k = NULL;
    size_t ws = 0;
    if (cpu->api->kernel_create(*fold_ctx, &desc, &k, &ws) != NETRUN_OK) return 0;
    nr_tensor *outs[16] = {0};
    netrun_tensor in_t[64], out_t[16];
    int ok = nd->n_outputs <= 16 && nd->n_inputs <= 64;
    void *wsbuf = ok && ws ? nr_aligned_alloc(ws, 64) : NULL;
    if (ws && !wsbuf) ok = 0;
    for (int i = 0; ok && i < nd->n_inputs; i++) {
        memset(&in_t[i], 0, sizeof in_t[i]);
        const netrun_value_desc *d = &sn->in_desc[i];
        in_t[i].dtype = d->dtype;
        in_t[i].rank = d->rank;
        memcpy(in_t[i].dims, d->dims, sizeof in_t[i].dims);
        in_t[i].data = in_t[i].buffer = (void *)d->const_data;
        in_t[i].nbytes = d->const_nbytes;
    }
    for (int o = 0; ok && o < nd->n_outputs; o++) {
        memset(&out_t[o], 0, sizeof out_t[o]);
        out_t[o].rank = -1;
        if (nd->outputs[o] < 0) continue;
        const netrun_value_desc *d = &sn->out_desc[o];
        size_t want = nr_desc_bytes(d); /* folded values count against the host budget (host_memory.c) */
        if (nr_host_reserve(s, want, "a value folded at prepare") != NETRUN_OK) {
            ok = 0;
            break;
        }
        outs[o] = nr_tensor_new(d->dtype, d->rank, d->dims);
        if (!outs[o]) {
            nr_host_unreserve(s, want);
            ok = 0;
            break;
        }
        if (outs[o]->nbytes != want) { /* strings: pointers */
            nr_host_unreserve(s, want);
            nr_host_charge(s, outs[o]->nbytes);
        }
        out_t[o].dtype = d->dtype;
        out_t[o].rank = d->rank;
        memcpy(out_t[o].dims, d->dims, sizeof out_t[o].dims);
        out_t[o].data = out_t[o].buffer = outs[o]->data;
        out_t[o].nbytes = outs[o]->nbytes;
    }
    if (ok) {
        netrun_kernel_args args = {.struct_size = sizeof args, .params = sn->params, .n_inputs = nd->n_inputs,
                                   .inputs = in_t, .n_outputs = nd->n_outputs, .outputs = out_t,
                                   .workspace = wsbuf, .workspace_size = ws};
        ok = cpu->api->kernel_run(*fold_ctx, k, &args) == NETRUN_OK;
    }
    cpu->api->kernel_destroy(*fold_ctx, k);
    nr_aligned_free(wsbuf);
    if (!ok) {
        for (int o = 0; o < 16; o++) {
            if (outs[o]) nr_host_unreserve(s, outs[o]->nbytes);
            nr_tensor_free(outs[o]);
        }
        nr_error_clear();
        return 0;
    }
    for (int o = 0; o < nd->n_outputs; o++) {
        int v = nd->outputs[o];
        if (v < 0) continue;
        nr_svalue *sv = &s->values[v];
        sv->folded = outs[o];
        sv->is_const = 1;
        desc_from_tensor(&sv->desc, s->model->ir->graph->values[v].name, outs[o]);
        sv->nbytes = outs[o]->nbytes;
    }
    return 1;
}

static netrun_status check_declared(netrun_session *s, const nr_node *nd, int o) {
    int v = nd->outputs[o];
    const nr_value *val = &s->model->ir->graph->values[v];
    const netrun_value_desc *d = &s->values[v].desc;
    if (val->dtype != NETRUN_DTYPE_UNDEFINED && val->dtype != d->dtype)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "node '%s' (%s): the model declares '%s' as %s but the op produces %s",
                        nd->name, nd->op_type, val->name, netrun_dtype_name(val->dtype), netrun_dtype_name(d->dtype));
    return NETRUN_OK;
}

/* The dtype of an output whose node can only be inferred at run time, for placement decisions before the
 * first run (kernels always see the real dtype): most ops keep their first input's type. */
static netrun_dtype guess_dtype(netrun_session *s, const nr_node *nd, int o) {
    if (nd->layer && (nd->layer->flags & NR_LAYER_CONTROL_FLOW)) { /* what the subgraphs declare, not the condition's */
        int loop = !strcmp(nd->op_type, "Loop"), carried = loop ? nd->n_inputs - 2 : nd->n_inputs;
        if (!strcmp(nd->op_type, "Scan")) {
            const nr_cf_params *p = nd->params;
            carried = p ? nd->n_inputs - p->n_scan_inputs : 0;
        }
        if (strcmp(nd->op_type, "If") && o < carried && nd->inputs[(loop ? 2 : 0) + o] >= 0)
            return s->values[nd->inputs[(loop ? 2 : 0) + o]].desc.dtype;
        for (int a = 0; a < nd->n_attrs; a++) {
            const nr_graph *b = nd->attrs[a].type == NR_ATTR_GRAPH ? nd->attrs[a].g : NULL;
            int k = o + (loop ? 1 : 0);
            if (b && k < b->n_outputs && b->values[b->outputs[k]].dtype) return b->values[b->outputs[k]].dtype;
        }
    }
    /* the schema's type rule for this output: a fixed type, or the type of one of the inputs */
    int rule = nr_op_output_type(nd->domain, nd->op_type, nd->opset, o);
    if (rule > 0) return (netrun_dtype)rule;
    if (rule < 0 && -1 - rule < nd->n_inputs && nd->inputs[-1 - rule] >= 0 &&
        s->values[nd->inputs[-1 - rule]].desc.dtype != NETRUN_DTYPE_UNDEFINED)
        return s->values[nd->inputs[-1 - rule]].desc.dtype;
    static const char *const int64_ops[] = {"Shape", "Size", "NonZero", "ArgMax", "ArgMin", NULL};
    static const char *const bool_ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
                                           "And", "Or", "Xor", "IsNaN", "IsInf", NULL};
    for (int i = 0; int64_ops[i]; i++)
        if (!strcmp(nd->op_type, int64_ops[i])) return NETRUN_DTYPE_INT64;
    for (int i = 0; bool_ops[i]; i++)
        if (!strcmp(nd->op_type, bool_ops[i])) return NETRUN_DTYPE_BOOL;
    for (int a = 0; a < nd->n_attrs; a++) {
        const nr_attr *at = &nd->attrs[a];
        if (!strcmp(nd->op_type, "Cast") && !strcmp(at->name, "to") && at->type == NR_ATTR_INT) return (netrun_dtype)at->i;
        if (!strcmp(nd->op_type, "ConstantOfShape") && !strcmp(at->name, "value") && at->t) return at->t->dtype;
    }
    if (!strcmp(nd->op_type, "ConstantOfShape")) return NETRUN_DTYPE_FLOAT;
    /* CastLike takes the type of its second input, Where that of X (its first input is the bool condition) */
    if ((!strcmp(nd->op_type, "CastLike") || !strcmp(nd->op_type, "Where")) && nd->n_inputs > 1 && nd->inputs[1] >= 0)
        return s->values[nd->inputs[1]].desc.dtype;
    for (int i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] >= 0) return s->values[nd->inputs[i]].desc.dtype;
    return NETRUN_DTYPE_FLOAT;
}

/* Infer a node whose input dims are not all known with 1 for each unknown dim: the output types and ranks it
 * gives are those of any run (ONNX types never depend on data); its dims are thrown away. 0 when the inference
 * needs a value known only at run time or refuses the stand-in dims; the error is then cleared. */
static int infer_types(netrun_session *s, nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    for (int i = 0; i < nd->n_inputs; i++) {
        netrun_value_desc *d = &sn->in_desc[i];
        if (nd->inputs[i] < 0) continue;
        if (d->rank < 0 || d->rank > NETRUN_MAX_RANK || d->dtype == NETRUN_DTYPE_UNDEFINED) return 0;
        for (int k = 0; k < d->rank; k++)
            if (d->dims[k] < 0) d->dims[k] = 1;
    }
    netrun_status st = nr_infer_node(s, sn);
    for (int i = 0; i < nd->n_inputs; i++) /* the stand-ins must not outlive the call; out_desc keeps the types */
        if (nd->inputs[i] >= 0) {
            const nr_svalue *sv = &s->values[nd->inputs[i]];
            sn->in_desc[i] = sv->desc;
            if (!sv->is_const) sn->in_desc[i].const_data = NULL, sn->in_desc[i].const_nbytes = 0;
        }
    if (st != NETRUN_OK) nr_error_clear();
    return st == NETRUN_OK;
}

static netrun_status infer_all(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    const nr_backend *cpu = nr_backends_find("cpu");
    netrun_backend_context *fold_ctx = NULL;
    netrun_status st = NETRUN_OK;
    for (int k = 0; k < s->n_snodes && st == NETRUN_OK; k++) {
        nr_snode *sn = &s->snodes[k];
        const nr_node *nd = &g->nodes[sn->node];
        sn->slot = -2; /* not placed yet */
        if (!nd->layer) {
            st = nr_error(NETRUN_ERR_UNSUPPORTED, "node '%s': op '%s%s%s' is not known to netrun nor defined by a "
                          "plugin", nd->name,
                          *nd->domain ? nd->domain : "", *nd->domain ? "." : "", nd->op_type);
            break;
        }
        if (nd->opset && nd->opset < nd->layer->min_opset) {
            st = nr_error(NETRUN_ERR_UNSUPPORTED, "node '%s' (%s): opset %d is older than netrun supports (%d)",
                          nd->name, nd->op_type, nd->opset, nd->layer->min_opset);
            break;
        }
        int dyn_in = 0;
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].dynamic) dyn_in = 1;
        nr_gather_descs(s, sn, 0);
        if (!dyn_in) {
            st = nr_infer_node(s, sn);
            if (st == NR_STATUS_NEED_VALUE) {
                dyn_in = 1;
                st = NETRUN_OK;
                nr_error_clear();
            } else if (st != NETRUN_OK)
                break;
        }
        /* Shape and Size read only the shape of their input: with static shapes they are constants, which
         * turns the Shape -> Gather -> Concat -> Reshape subgraphs of exported models into constants too. */
        int shape_only = !*nd->domain && (!strcmp(nd->op_type, "Shape") || !strcmp(nd->op_type, "Size"));
        int all_const = !dyn_in;
        for (int i = 0; i < nd->n_inputs && all_const && !shape_only; i++)
            if (nd->inputs[i] >= 0 && !s->values[nd->inputs[i]].is_const) all_const = 0;
        if (all_const && try_fold(s, sn, cpu, &fold_ctx)) {
            sn->slot = -1;
            sn->reason = nr_strdup(shape_only ? "folded at prepare: its input's shape is known"
                                              : "folded at prepare: all inputs are constant");
            s->stats.n_folded++;
            for (int o = 0; o < nd->n_outputs && st == NETRUN_OK; o++)
                if (nd->outputs[o] >= 0) st = check_declared(s, nd, o);
            continue;
        }
        sn->dynamic = dyn_in;
        /* Element types and ranks of a node inferred only at run time: its inference on stand-in dims (1 where a
         * dim is unknown), so that placement sees TopK's int64 indices or Gather's index type, not a guess. */
        int typed = dyn_in && infer_types(s, sn);
        /* A node inferred only at run time still gets its parsed attributes for placement (Cast's `to`...). */
        if (dyn_in && nd->layer->params_size) memcpy(sn->params, nd->params, nd->layer->params_size);
        int guess_rank = 1;
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].desc.rank >= 0) {
                guess_rank = s->values[nd->inputs[i]].desc.rank;
                break;
            }
        for (int o = 0; o < nd->n_outputs; o++) {
            int v = nd->outputs[o];
            if (v < 0) continue;
            nr_svalue *sv = &s->values[v];
            sv->producer = k;
            if (dyn_in) {
                sv->dynamic = 1;
                sv->desc.name = g->values[v].name;
                sv->desc.dtype = g->values[v].dtype ? g->values[v].dtype
                                 : typed ? sn->out_desc[o].dtype : guess_dtype(s, nd, o);
                /* rank -1 means "absent" to backends: the declared rank, the stand-in inference's, else a guess
                 * (dims stay -1) */
                sv->desc.rank = g->values[v].rank >= 0 ? g->values[v].rank : typed ? sn->out_desc[o].rank : guess_rank;
                for (int d = 0; d < NETRUN_MAX_RANK; d++) sv->desc.dims[d] = -1;
                continue;
            }
            sv->desc = sn->out_desc[o];
            if (nr_shape_count(sv->desc.rank, sv->desc.dims) < 0) {
                sv->dynamic = 1; /* data-dependent (NonZero...): the kernel allocates it */
                sn->dynamic = 1;
            }
            sv->nbytes = nr_desc_bytes(&sv->desc);
            st = check_declared(s, nd, o);
            if (st != NETRUN_OK) break;
        }
        if (sn->dynamic) s->dynamic = 1;
    }
    if (fold_ctx) cpu->api->context_destroy(fold_ctx);
    return st;
}

/* ---- placement ---- */

static netrun_status place_all(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    netrun_backend_config cfg = make_config(s);
    for (int k = 0; k < s->n_snodes; k++) {
        nr_snode *sn = &s->snodes[k];
        if (sn->slot == NR_SLOT_FOLDED) continue;
        const nr_node *nd = &g->nodes[sn->node];
        if (nd->layer->flags & NR_LAYER_CONTROL_FLOW) {
            sn->slot = NR_SLOT_RUNTIME;
            if (!(sn->reason = nr_strdup("control flow: the runtime runs its subgraphs")))
                return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            continue;
        }
        if (sn->dynamic) { /* descs as far as known before the run: dims -1, dtypes and ranks guessed */
            nr_gather_descs(s, sn, 0);
            for (int o = 0; o < nd->n_outputs; o++)
                if (nd->outputs[o] >= 0) sn->out_desc[o] = s->values[nd->outputs[o]].desc;
        }
        netrun_node_desc desc = {.struct_size = sizeof desc, .name = nd->name, .op_type = nd->op_type,
                                 .domain = nd->domain, .opset = nd->opset, .params = sn->params,
                                 .params_size = nd->layer->params_size, .n_inputs = nd->n_inputs,
                                 .inputs = sn->in_desc, .n_outputs = nd->n_outputs, .outputs = sn->out_desc};
        char refusals[1024] = "";
        for (int i = 0; i < s->n_slots; i++) {
            char why[256] = "";
            if (s->slots[i].failed) snprintf(why, sizeof why, "failed to initialise: %.200s", s->slots[i].failed_reason);
            else if (s->avoid && (s->avoid[sn->node] >> i & 1u))
                snprintf(why, sizeof why, "its kernel failed to build: %.200s", s->slots[i].failed_reason);
            else if (s->slots[i].api->supports(&cfg, &desc, why, sizeof why)) {
                sn->slot = i;
                break;
            }
            size_t l = strlen(refusals);
            snprintf(refusals + l, sizeof refusals - l, "%s%s: %s", l ? "; " : "", s->slots[i].be->name,
                     *why ? why : "not supported");
        }
        if (sn->slot < 0)
            return nr_error(NETRUN_ERR_UNSUPPORTED, "node '%s' (%s): no backend supports it (%s)", nd->name,
                            nd->op_type, refusals);
        char reason[1200];
        if (sn->slot == 0) snprintf(reason, sizeof reason, "first choice");
        else snprintf(reason, sizeof reason, "fallback: %s", refusals);
        if (s->opts.strict && sn->slot != 0)
            return nr_error(NETRUN_ERR_UNSUPPORTED, "strict mode: node '%s' (%s) cannot run on %s (%s)", nd->name,
                            nd->op_type, s->slots[0].be->name, refusals);
        if (!(sn->reason = nr_strdup(reason))) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        s->slots[sn->slot].n_nodes++;
    }
    return NETRUN_OK;
}

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

static netrun_status build_steps(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    int cap = 0;
    for (int v = 0; v < g->n_values; v++) {
        nr_svalue *sv = &s->values[v];
        if (sv->graph_input >= 0) use(&sv->place[NR_HOST_DOMAIN], -1);
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
           sv->place[dom].present && sv->nbytes > 0;
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
    size_t off = 0, align = dom == NR_HOST_DOMAIN ? 64 : ALIGN;
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

/* Reshape / Flatten / Squeeze / Unsqueeze: the output has the input's bytes. */
static int try_reshape_view(netrun_session *s, nr_snode *sn, int dom) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    if (!is_reshape_like(nd) || nd->n_inputs < 1 || nd->n_outputs != 1) return 0;
    int x = nd->inputs[0], y = nd->outputs[0];
    if (x < 0 || y < 0 || !shareable(s, x, dom) || !shareable(s, y, dom) || !alone(s, y)) return 0;
    if (s->values[x].graph_output >= 0 || s->values[y].graph_output >= 0 || s->values[x].nbytes != s->values[y].nbytes)
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
                for (int k = 0; k < nd->n_outputs; k++)
                    if (nd->outputs[k] >= 0) sn->out_desc[k] = s->values[nd->outputs[k]].desc;
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

static netrun_status plan_aliases(netrun_session *s) {
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
    netrun_backend_config cfg = make_config(s);
    for (int t = 0; t < s->n_steps; t++) {
        if (s->steps[t].kind != NR_STEP_KERNEL) continue;
        nr_snode *sn = &s->snodes[s->steps[t].snode];
        if (sn->slot < 0 || sn->dynamic) continue;
        int dom = s->slots[sn->slot].domain;
        if (try_reshape_view(s, sn, dom) || try_concat_view(s, sn, dom)) sn->view = 1;
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

static netrun_status plan_domain(netrun_session *s, int dom, size_t *arena_size) {
    nr_graph *g = s->model->ir->graph;
    plan_item *items = nr_calloc((size_t)g->n_values + 1, sizeof *items);
    if (!items) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory planning memory");
    int n = 0;
    for (int v = 0; v < g->n_values; v++) {
        nr_svalue *sv = &s->values[v];
        nr_place *p = &sv->place[dom];
        if (!p->present || sv->is_const || sv->dynamic) continue;
        if (dom == NR_HOST_DOMAIN && sv->graph_input >= 0) continue; /* lives in the input buffer */
        p->in_arena = 1;
        if (sv->alias_root >= 0 && dom == sv->home) continue; /* in its root's item, placed below */
        int set = sv->alias_members && dom == sv->home;
        items[n++] = (plan_item){.value = v, .size = align_up(sv->nbytes ? sv->nbytes : 1),
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
    netrun_backend_config cfg = make_config(s);
    for (int i = 0; i < s->n_slots; i++) {
        nr_slot *sl = &s->slots[i];
        /* A backend that runs no node is not initialised: its device may not even exist (--device 1 with a
         * one-device plugin in the default list). A device domain's owner is needed when any node runs there. */
        int domain_used = 0;
        for (int j = 0; j < s->n_slots; j++)
            domain_used |= s->slots[j].domain == sl->domain && s->slots[j].n_nodes > 0;
        int needed = sl->n_nodes > 0 || (sl->domain != NR_HOST_DOMAIN && s->domain_slot[sl->domain] == i && domain_used);
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
    return NETRUN_OK;
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
        host += align_up(sv->nbytes);
    }
    return host;
}

/* Bytes of a node's streamed constants in domain dom (0: none). */
static size_t streamed_bytes(const netrun_session *s, const nr_snode *sn, int dom) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    size_t n = 0;
    for (int i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].place[dom].stream_src)
            n += align_up(s->values[nd->inputs[i]].nbytes);
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
            off += align_up(s->values[nd->inputs[i]].nbytes);
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
            total += align_up(sv->nbytes ? sv->nbytes : 1);
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
        for (int o = 0; o < nd->n_outputs; o++)
            if (nd->outputs[o] >= 0) sn->out_desc[o] = s->values[nd->outputs[o]].desc;
        netrun_node_desc desc = {.struct_size = sizeof desc, .name = nd->name, .op_type = nd->op_type,
                                 .domain = nd->domain, .opset = nd->opset, .params = sn->params,
                                 .params_size = nd->layer->params_size, .n_inputs = nd->n_inputs,
                                 .inputs = sn->in_desc, .n_outputs = nd->n_outputs, .outputs = sn->out_desc};
        nr_activity_set(s, NR_ACT_CREATE_KERNEL, sn->node, sn->slot);
        netrun_status st = sl->api->kernel_create(sl->ctx, &desc, &sn->kernel, &sn->workspace);
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
            desc_from_tensor(&sv->desc, g->values[v].name, c);
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
    netrun_status st = bind_inputs(s);
    if (st == NETRUN_OK) st = infer_all(s);
    if (st == NETRUN_OK) st = place_all(s);
    if (st == NETRUN_OK && !s->mb_decided) { /* micro-batching: decided at the full batch, then built for less */
        s->mb_decided = 1;
        int b = 0;
        st = nr_micro_batch_choose(s, &b, s->mb_note, sizeof s->mb_note);
        if (st == NETRUN_OK && b) {
            s->mb_n = s->values[g->inputs[0]].desc.dims[0];
            s->mb = b;
            return prepare_once(s);
        }
    } else if (st == NETRUN_OK && s->mb)
        st = nr_micro_batch_verify(s);
    if (st == NETRUN_OK) { /* graph passes (optimize.c): after a rewrite, prepare the session's copy instead */
        netrun_backend_config cfg = make_config(s);
        netrun_model *opt = NULL;
        nr_optimize_counts oc;
        st = nr_optimize_session(s, &cfg, &opt, &oc);
        if (st == NETRUN_OK && opt) {
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
        s->stats.n_nchwc_convs = oc.nchwc_convs;
        s->stats.n_nchwc_reorders = oc.nchwc_reorders;
        s->stats.n_fp16_convs = oc.fp16_convs;
        s->stats.n_fp16_converts = oc.fp16_converts;
    }
    if (st == NETRUN_OK) st = build_steps(s);
    if (st == NETRUN_OK) st = plan_aliases(s);
    for (int dom = 0; st == NETRUN_OK && dom < s->n_domains; dom++) {
        size_t size = 0;
        st = plan_domain(s, dom, &size);
        if (st == NETRUN_OK) {
            if (dom == NR_HOST_DOMAIN) s->host_arena_size = size;
            else s->slots[s->domain_slot[dom]].arena_size = size;
            s->stats.arena_bytes += size;
        }
    }
    if (st == NETRUN_OK) st = init_backends(s);
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
    if (st == NETRUN_OK) st = create_kernels(s);
    if (st == NETRUN_OK && s->mb) st = nr_micro_batch_alloc_outputs(s);
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
        s->mb = 0;
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
        if (s->fail_node >= 0) {
            if (!s->avoid) s->avoid = nr_calloc((size_t)s->model->ir->graph->n_nodes + 1, sizeof(uint32_t));
            if (!s->avoid) return st;
            s->avoid[s->fail_node] |= 1u << s->fail_slot;
        } else
            s->slots[s->fail_slot].failed = 1;
        nr_error_clear();
    }
}
