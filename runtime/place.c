/* Placement (the plan layer): which backends a session uses (its slots and memory domains), and which slot runs each
 * node. Greedy first: each node on the first slot in the preference order whose supports() says yes. Then, unless
 * the session is strict, has one memory domain, or placement.transfer_aware is 0, a cost model improves it: a node
 * moves to another slot that supports it when the estimated kernel time plus the copies across memory domains go
 * down and fewer values are copied (a cheap node stranded between another domain's nodes no longer costs two
 * copies). Graph inputs and outputs count as living on the first backend of the session, so a device the caller
 * listed first keeps the work it can do at the graph's edges. The node's reason says why it went where it went
 * ("moved from X: saves N copies / X MB"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "place.h"
#include "plugin_ops.h"

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
        n = nr_backends_count(); /* default: GPU backends, then the fallback, then the other available ones */
        for (int pass = 0; pass < 3; pass++)
            for (int i = 0; i < n; i++) {
                const nr_backend *be = nr_backends_get(i);
                if (!be->available) continue;
                int gpu = (be->api->flags & NETRUN_BACKEND_GPU) != 0, fb = !gpu && (be->api->flags & NETRUN_BACKEND_FALLBACK);
                if ((pass == 0 && gpu) || (pass == 1 && fb) || (pass == 2 && !gpu && !fb)) {
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
                if (!named_available && !s->opts.allow_fallback) {
                    const nr_backend *fb = nr_backends_find_role(NETRUN_BACKEND_FALLBACK);
                    const char *fbn = fb ? fb->name : "another backend";
                    return nr_error(NETRUN_ERR_INVALID_ARGUMENT,
                                    "backend '%s' is unavailable: %s. No other backend of the list '%s' is "
                                    "available; to run on %s instead, list it after (e.g. '%s,%s') or allow "
                                    "fallback (netrun_options_set_allow_fallback; CLI --allow-fallback)",
                                    name, why, s->opts.backends, fbn, s->opts.backends, fbn);
                }
                nr_host_api()->log(NETRUN_LOG_WARN, "runtime", "backend '%s' is unavailable (%s): skipped, as %s", name, why,
                    named_available ? "the list names others" : "fallback is allowed");
                continue;
            }
            netrun_status st = add_slot(s, found);
            if (st != NETRUN_OK) return st;
        }
        const nr_backend *fallback = s->opts.strict ? NULL : nr_backends_find_role(NETRUN_BACKEND_FALLBACK);
        if (fallback) {
            netrun_status st = add_slot(s, fallback);
            if (st != NETRUN_OK) return st;
        }
        /* the plugins that define ops of the model (ABI 1.9) come with them, as the fallback does */
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

netrun_backend_config nr_backend_config_of(const netrun_session *s) {
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

/* ---- nodes ---- */

/* Whether the greedy placement is improved by the cost model (see the top of the file). */
static int transfer_aware(const netrun_session *s) {
    if (s->opts.strict || s->n_slots < 2 || s->n_domains < 2) return 0;
    const char *on = nr_options_get(&s->opts, "placement.transfer_aware");
    return !(on && !strcmp(on, "0"));
}

/* Greedy: each node on the first slot whose supports() says yes (ok[k] gets the mask of all that do). */
static netrun_status place_greedy(netrun_session *s, uint32_t *ok) {
    nr_graph *g = s->model->ir->graph;
    netrun_backend_config cfg = nr_backend_config_of(s);
    int alternatives = transfer_aware(s);
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
            nr_gather_out_descs(s, sn);
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
        ok[k] = 1u << sn->slot;
        for (int i = sn->slot + 1; alternatives && !sn->dynamic && i < s->n_slots; i++) { /* the other candidates */
            char why[256] = "";
            if (!s->slots[i].failed && !(s->avoid && (s->avoid[sn->node] >> i & 1u)) &&
                s->slots[i].api->supports(&cfg, &desc, why, sizeof why))
                ok[k] |= 1u << i;
        }
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


/* ---- transfer-aware improvement ----
 * Rough costs in microseconds. No backend declares its speed (yet): a device domain is taken as 40x the host's
 * arithmetic and 10x its memory bandwidth behind a launch cost; a copy between domains costs a fixed latency and
 * its bytes at PCIe-like speed. The numbers only need to rank placements, not predict times. */
#define HOST_GFLOPS 50.0
#define HOST_GBPS 10.0
#define HOST_KERNEL_US 2.0
#define DEV_GFLOPS 2000.0
#define DEV_GBPS 100.0
#define DEV_KERNEL_US 8.0
#define COPY_GBPS 5.0
#define COPY_US 15.0

static double count_of(const netrun_value_desc *d) {
    if (d->rank < 0) return 0;
    double n = 1;
    for (int i = 0; i < d->rank; i++) n *= d->dims[i] > 0 ? (double)d->dims[i] : 0;
    return n;
}

/* Estimated arithmetic of a node: multiply-adds of Conv, Gemm and MatMul counted twice, else one per output
 * element. */
static double node_flops(const netrun_session *s, const nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    double out = nd->n_outputs > 0 ? count_of(&sn->out_desc[0]) : 0;
    if (*nd->domain || nd->n_inputs < 2) return out;
    const netrun_value_desc *x = &sn->in_desc[0], *w = &sn->in_desc[1];
    if (!strcmp(nd->op_type, "Conv") && w->rank >= 3) return 2 * out * count_of(w) / (w->dims[0] > 0 ? (double)w->dims[0] : 1);
    if ((!strcmp(nd->op_type, "MatMul") || !strcmp(nd->op_type, "Gemm")) && x->rank >= 1 && x->dims[x->rank - 1] > 0)
        return 2 * out * (double)x->dims[x->rank - 1];
    return out;
}

static double node_bytes(const netrun_session *s, const nr_snode *sn) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    double b = 0;
    for (int i = 0; i < nd->n_inputs; i++) b += (double)nr_desc_bytes(&sn->in_desc[i]);
    for (int o = 0; o < nd->n_outputs; o++) b += (double)nr_desc_bytes(&sn->out_desc[o]);
    return b;
}

typedef struct place_model {
    netrun_session *s;
    int *dom;          /* snode -> its domain now (host for folded and control-flow nodes) */
    double *flops, *bytes;
    int *use_start;    /* value -> first index into uses (CSR of consumers) */
    int *uses;         /* snodes reading the value */
} place_model;

/* Whether the node runs on a slot: folded ones read nothing at run time, and control flow is left out (above). */
static int runs(const nr_snode *sn) { return sn->slot >= 0; }

static double kernel_us(const place_model *pm, int k, int dom) {
    if (dom == NR_HOST_DOMAIN) return HOST_KERNEL_US + pm->flops[k] / (HOST_GFLOPS * 1e3) + pm->bytes[k] / (HOST_GBPS * 1e3);
    return DEV_KERNEL_US + pm->flops[k] / (DEV_GFLOPS * 1e3) + pm->bytes[k] / (DEV_GBPS * 1e3);
}

/* The domains value v is copied into (a bit per domain) and their count. Graph inputs and outputs are anchored to
 * the domain of the session's first backend (the caller's first choice): a device the caller listed keeps the work
 * it can do at the edges of the graph. Control-flow nodes read their inputs as a body's graph inputs: not counted. */
static int copies_of(const place_model *pm, int v, unsigned *mask) {
    const nr_svalue *sv = &pm->s->values[v];
    *mask = 0;
    if (sv->is_const || (sv->producer >= 0 && !runs(&pm->s->snodes[sv->producer]))) return 0;
    int anchor = pm->s->slots[0].domain;
    const nr_input *in = sv->graph_input >= 0 ? &pm->s->inputs[sv->graph_input] : NULL;
    int home = sv->producer >= 0                       ? pm->dom[sv->producer]
               : in && in->mem != NETRUN_MEMORY_HOST ? in->dev_dom /* in the caller's device memory */
                                                       : anchor,
        n = 0;
    for (int u = pm->use_start[v]; u < pm->use_start[v + 1]; u++) {
        int d = pm->dom[pm->uses[u]];
        if (d != home && !(*mask >> d & 1u)) *mask |= 1u << d, n++;
        /* a node inferred at run time reads its integer inputs (shapes, sizes) on the host: a shape subgraph that
         * feeds it costs a copy each run anywhere else, so it stays on (or moves to) the host */
        d = NR_HOST_DOMAIN;
        if (pm->s->snodes[pm->uses[u]].dynamic && sv->desc.dtype == NETRUN_DTYPE_INT64 && d != home &&
            !(*mask >> d & 1u))
            *mask |= 1u << d, n++;
    }
    if (pm->s->model->ir->graph->values[v].is_graph_output && anchor != home && !(*mask >> anchor & 1u))
        *mask |= 1u << anchor, n++;
    return n;
}

static double copy_us(const place_model *pm, int v, int n) {
    return n * (COPY_US + (double)pm->s->values[v].nbytes / (COPY_GBPS * 1e3));
}

/* Cost of the nodes of a group where they are now (pm->dom) and of the copies of every value they read or write;
 * the number of copies and their bytes too. mark[] is scratch (value -> seen), left cleared. */
static double group_cost(const place_model *pm, const int *group, int n, char *mark, int *n_copies,
                         double *copy_bytes) {
    const netrun_session *s = pm->s;
    double c = 0;
    *n_copies = 0;
    *copy_bytes = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < n; j++) {
            const nr_node *nd = &s->model->ir->graph->nodes[s->snodes[group[j]].node];
            if (pass == 0) c += kernel_us(pm, group[j], pm->dom[group[j]]);
            for (int side = 0; side < 2; side++) {
                int nio = side ? nd->n_outputs : nd->n_inputs;
                const int *vs = side ? nd->outputs : nd->inputs;
                for (int i = 0; i < nio; i++) {
                    int v = vs[i];
                    if (v < 0) continue;
                    if (pass == 1) { /* clear the marks */
                        mark[v] = 0;
                        continue;
                    }
                    if (mark[v]) continue;
                    mark[v] = 1;
                    unsigned mask;
                    int m = copies_of(pm, v, &mask);
                    c += copy_us(pm, v, m);
                    *n_copies += m;
                    *copy_bytes += m * (double)s->values[v].nbytes;
                }
            }
        }
    return c;
}

/* The group that moves with node k to slot `to`: k and the nodes connected to it through values, on k's slot,
 * that `to` supports too and that cost less more there than a copy of about their output (cheap nodes go together:
 * two stranded nodes in a row save their copies only when both move). At most `max` nodes; in_group[] marks them (left set). */
static int grow_group(const place_model *pm, const uint32_t *ok, int k, int to, int *group, int max, char *in_group) {
    const netrun_session *s = pm->s;
    const nr_graph *g = s->model->ir->graph;
    int cur = s->snodes[k].slot, n = 0;
    group[n++] = k;
    in_group[k] = 1;
    for (int head = 0; head < n; head++) {
        const nr_node *nd = &g->nodes[s->snodes[group[head]].node];
        for (int side = 0; side < 2; side++) {
            int nio = side ? nd->n_outputs : nd->n_inputs;
            const int *vs = side ? nd->outputs : nd->inputs;
            for (int i = 0; i < nio; i++) {
                int v = vs[i];
                if (v < 0 || s->values[v].is_const) continue;
                int first = side ? pm->use_start[v] : 0, end = side ? pm->use_start[v + 1] : 1;
                for (int u = first; u < end && n < max; u++) {
                    int q = side ? pm->uses[u] : s->values[v].producer;
                    if (q < 0 || in_group[q] || s->snodes[q].slot != cur || !(ok[q] >> to & 1u)) continue;
                    /* cheap: slower there by less than a copy of about its output would cost */
                    double copy = COPY_US + pm->bytes[q] / 2 / (COPY_GBPS * 1e3);
                    if (kernel_us(pm, q, s->slots[to].domain) - kernel_us(pm, q, pm->dom[q]) > copy) continue;
                    in_group[q] = 1;
                    group[n++] = q;
                }
            }
        }
    }
    return n;
}

/* Moves nodes, alone or with their cheap neighbours, where that saves copies and lowers the estimate. */
static netrun_status improve(netrun_session *s, const uint32_t *ok) {
    nr_graph *g = s->model->ir->graph;
    place_model pm = {.s = s};
    size_t nk = (size_t)s->n_snodes + 1, nv = (size_t)g->n_values + 2;
    pm.dom = nr_calloc(nk, sizeof(int));
    pm.flops = nr_calloc(nk, sizeof(double));
    pm.bytes = nr_calloc(nk, sizeof(double));
    pm.use_start = nr_calloc(nv, sizeof(int));
    int *orig = nr_calloc(nk, sizeof(int));
    int n_uses = 0;
    for (int k = 0; k < s->n_snodes; k++) n_uses += g->nodes[s->snodes[k].node].n_inputs;
    pm.uses = nr_calloc((size_t)n_uses + 1, sizeof(int));
    netrun_status st = NETRUN_OK;
    if (!pm.dom || !pm.flops || !pm.bytes || !pm.use_start || !pm.uses || !orig) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory placing the nodes");
        goto done;
    }
    for (int k = 0; k < s->n_snodes; k++) {
        nr_snode *sn = &s->snodes[k];
        const nr_node *nd = &g->nodes[sn->node];
        orig[k] = sn->slot;
        pm.dom[k] = sn->slot >= 0 ? s->slots[sn->slot].domain : NR_HOST_DOMAIN;
        if (sn->slot >= 0) {
            pm.flops[k] = node_flops(s, sn);
            pm.bytes[k] = node_bytes(s, sn);
        }
        for (int i = 0; i < nd->n_inputs && runs(sn); i++) {
            int v = nd->inputs[i], dup = 0;
            for (int j = 0; j < i; j++) dup |= nd->inputs[j] == v;
            if (v >= 0 && !dup) pm.use_start[v + 1]++;
        }
    }
    for (int v = 0; v < g->n_values; v++) pm.use_start[v + 1] += pm.use_start[v];
    int *fill = nr_calloc(nv, sizeof(int));
    if (!fill) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory placing the nodes");
        goto done;
    }
    for (int k = 0; k < s->n_snodes; k++) {
        const nr_node *nd = &g->nodes[s->snodes[k].node];
        for (int i = 0; i < nd->n_inputs && runs(&s->snodes[k]); i++) {
            int v = nd->inputs[i], dup = 0;
            for (int j = 0; j < i; j++) dup |= nd->inputs[j] == v;
            if (v >= 0 && !dup) pm.uses[pm.use_start[v] + fill[v]++] = k;
        }
    }
    nr_free(fill);
    int *group = nr_calloc(nk, sizeof(int)), *saved_n = nr_calloc(nk, sizeof(int));
    double *saved_b = nr_calloc(nk, sizeof(double));
    char *mark = nr_calloc(nv, 1), *in_group = nr_calloc(nk, 1);
    if (!group || !saved_n || !saved_b || !mark || !in_group) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory placing the nodes");
        goto done2;
    }
    /* A move is made only where it saves copies and lowers the estimate: the kernel estimates are too rough to
     * overrule the preference order on their own. Sweeps in execution order until nothing moves. */
    for (int sweep = 0; sweep < 4; sweep++) {
        int moved = 0;
        for (int k = 0; k < s->n_snodes; k++) {
            nr_snode *sn = &s->snodes[k];
            if (sn->slot < 0 || !(ok[k] & ~(1u << sn->slot))) continue;
            int cur = sn->slot;
            for (int to = 0; to < s->n_slots; to++) {
                if (to == cur || !(ok[k] >> to & 1u) || s->slots[to].domain == s->slots[cur].domain) continue;
                for (int whole = 0; whole < 2; whole++) { /* k alone, then with its cheap neighbours */
                    int n = whole ? grow_group(&pm, ok, k, to, group, 256, in_group) : 1;
                    group[0] = k;
                    for (int j = 0; j < n; j++) in_group[group[j]] = 0;
                    if (whole && n == 1) continue;
                    int nc0, nc1;
                    double b0, b1, c0 = group_cost(&pm, group, n, mark, &nc0, &b0);
                    for (int j = 0; j < n; j++) pm.dom[group[j]] = s->slots[to].domain;
                    double c1 = group_cost(&pm, group, n, mark, &nc1, &b1);
                    if (nc1 < nc0 && c1 < c0 - 0.5) {
                        for (int j = 0; j < n; j++) {
                            s->snodes[group[j]].slot = to;
                            saved_n[group[j]] = nc0 - nc1;
                            saved_b[group[j]] = b0 - b1;
                        }
                        moved = 1;
                        break;
                    }
                    for (int j = 0; j < n; j++) pm.dom[group[j]] = s->slots[cur].domain;
                }
                if (sn->slot != cur) break;
            }
        }
        if (!moved) break;
    }
    /* the reasons of the nodes that moved: what the move of their group saved */
    for (int k = 0; k < s->n_snodes && st == NETRUN_OK; k++) {
        nr_snode *sn = &s->snodes[k];
        if (sn->slot < 0 || sn->slot == orig[k]) continue;
        char reason[1400];
        snprintf(reason, sizeof reason, "moved from %s: saves %d copies / %.2f MB (greedy: %s)", s->slots[orig[k]].be->name,
                 saved_n[k], saved_b[k] / 1e6, sn->reason ? sn->reason : "");
        char *r = nr_strdup(reason);
        if (!r) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        nr_free(sn->reason);
        sn->reason = r;
        s->slots[orig[k]].n_nodes--;
        s->slots[sn->slot].n_nodes++;
        s->n_moved++;
    }
    if (s->n_moved)
        nr_host_api()->log(NETRUN_LOG_INFO, "placement", "transfer-aware: %d nodes moved off their first placement "
                           "(placement.transfer_aware=0 keeps it)", s->n_moved);
done2:
    nr_free(group);
    nr_free(saved_n);
    nr_free(saved_b);
    nr_free(mark);
    nr_free(in_group);
done:
    nr_free(pm.dom);
    nr_free(pm.flops);
    nr_free(pm.bytes);
    nr_free(pm.use_start);
    nr_free(pm.uses);
    nr_free(orig);
    return st;
}

netrun_status nr_place_nodes(netrun_session *s) {
    uint32_t *ok = nr_calloc((size_t)s->n_snodes + 1, sizeof(uint32_t));
    if (!ok) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory placing the nodes");
    s->n_moved = 0;
    netrun_status st = place_greedy(s, ok);
    if (st == NETRUN_OK && transfer_aware(s)) st = improve(s, ok);
    nr_free(ok);
    return st;
}
