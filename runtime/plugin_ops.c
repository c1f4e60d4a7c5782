/* Ops defined by backend plugins. A definition becomes an nr_layer whose parse and infer are the plugin's own
 * functions (netrun_op_ctx is nr_layer_ctx), so model loading, inference, placement and the memory plan handle it
 * as they handle a built-in op; only finding it differs. The table is built once, after every plugin is loaded,
 * and read-only after (the backends it points to never move). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "plugin_ops.h"
#include "status.h"

typedef struct plugin_op {
    nr_layer layer;              /* first: a layer pointer of this table is a plugin_op pointer */
    const nr_backend *be;        /* the plugin that defines it */
    const netrun_op_def *def;
    const nr_backend *clash;     /* another plugin defining the same op at overlapping opsets, or NULL */
} plugin_op;

static pthread_once_t build_once = PTHREAD_ONCE_INIT;
static plugin_op *ops;
static int n_ops;

static int is_default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

static int same_domain(const char *a, const char *b) {
    if (is_default_domain(a)) return is_default_domain(b);
    return b && !strcmp(a, b);
}

static const char *shown_domain(const char *d) { return is_default_domain(d) ? "ai.onnx" : d; }

/* [a0, a1] and [b0, b1] share a version; 0 as an upper end means "no end". */
static int ranges_overlap(int a0, int a1, int b0, int b1) {
    return (a1 <= 0 || b0 <= a1) && (b1 <= 0 || a0 <= b1);
}

#define DEF_FITS(d, field) ((d)->struct_size >= offsetof(netrun_op_def, field) + sizeof((d)->field))

static const netrun_op_def *const *defs_of(const netrun_backend_api *api) {
    return NR_API_FITS(api, op_defs) ? api->op_defs : NULL;
}

char *nr_plugin_ops_check(const netrun_backend_api *api) {
    const netrun_op_def *const *defs = defs_of(api);
    char buf[512];
    for (int i = 0; defs && defs[i]; i++) {
        const netrun_op_def *d = defs[i];
        if (!DEF_FITS(d, flags)) {
            snprintf(buf, sizeof buf, "op_defs[%d]: struct_size %u is smaller than netrun_op_def of ABI 1.9", i,
                     (unsigned)d->struct_size);
            return nr_strdup(buf);
        }
        const char *op = d->op_type && *d->op_type ? d->op_type : NULL, *dom = shown_domain(d->domain);
        const char *bad = !op ? "has no op_type"
                          : !d->infer ? "has no infer function"
                          : d->since_version < 1 ? "since_version must be at least 1"
                          : d->until_version && d->until_version < d->since_version ? "until_version is before since_version"
                          : d->min_inputs < 0 || d->max_inputs < d->min_inputs ? "max_inputs is below min_inputs"
                          : d->max_outputs < 1 || d->min_outputs < 0 || d->max_outputs < d->min_outputs
                              ? "needs max_outputs >= 1 and >= min_outputs" : NULL;
        if (bad) {
            snprintf(buf, sizeof buf, "op_defs[%d] (%s.%s) %s", i, dom, op ? op : "?", bad);
            return nr_strdup(buf);
        }
        /* by name, whatever the opsets: backends recognise netrun's ops by (domain, op) and read their params as
         * netrun's, so a plugin's params under one of those names would be misread */
        if (nr_layer_find(d->domain, op)) {
            snprintf(buf, sizeof buf, "defines op %s.%s, which netrun defines itself: a plugin may not redefine "
                     "netrun's ops (it may run them)", dom, op);
            return nr_strdup(buf);
        }
        for (int j = 0; j < i; j++) /* one plugin defining an op twice over the same versions is a plugin bug */
            if (same_domain(defs[j]->domain, d->domain) && !strcmp(defs[j]->op_type, op) &&
                ranges_overlap(defs[j]->since_version, defs[j]->until_version, d->since_version, d->until_version)) {
                snprintf(buf, sizeof buf, "op_defs[%d] and op_defs[%d] both define %s.%s at overlapping opsets", j, i,
                         dom, op);
                return nr_strdup(buf);
            }
    }
    return NULL;
}

static void build(void) {
    int nb = nr_backends_count(), total = 0;
    for (int b = 0; b < nb; b++) {
        const nr_backend *be = nr_backends_get(b);
        const netrun_op_def *const *defs = be && be->available ? defs_of(be->api) : NULL;
        for (int i = 0; defs && defs[i]; i++) total++;
    }
    if (!total) return;
    ops = nr_calloc((size_t)total, sizeof *ops);
    if (!ops) {
        nr_host_api()->log(NETRUN_LOG_ERROR, "loader", "out of memory listing the plugins' ops");
        return;
    }
    for (int b = 0; b < nb; b++) {
        const nr_backend *be = nr_backends_get(b);
        const netrun_op_def *const *defs = be && be->available ? defs_of(be->api) : NULL;
        for (int i = 0; defs && defs[i]; i++) {
            const netrun_op_def *d = defs[i];
            plugin_op *p = &ops[n_ops++];
            p->be = be;
            p->def = d;
            p->layer.op_type = d->op_type;
            p->layer.domain = is_default_domain(d->domain) ? "" : d->domain;
            p->layer.min_opset = d->since_version;
            p->layer.params_size = d->params_size;
            p->layer.parse = d->parse;
            p->layer.infer = d->infer;
            p->layer.flags = (d->flags & NETRUN_OP_NO_FOLD) ? NR_LAYER_NO_FOLD : 0;
            for (int k = 0; k < n_ops - 1; k++) {
                plugin_op *q = &ops[k];
                if (q->be != be && same_domain(q->layer.domain, p->layer.domain) && !strcmp(q->def->op_type, d->op_type) &&
                    ranges_overlap(q->def->since_version, q->def->until_version, d->since_version, d->until_version)) {
                    if (!q->clash) q->clash = be;
                    if (!p->clash) p->clash = q->be;
                    nr_host_api()->log(NETRUN_LOG_WARN, "loader", "op %s.%s is defined by two plugins, '%s' (%s) and "
                                       "'%s' (%s): a model using it will not load", shown_domain(d->domain), d->op_type,
                                       q->be->name, q->be->path, be->name, be->path);
                }
            }
        }
    }
}

netrun_status nr_plugin_op_find(const char *domain, const char *op_type, int opset, const nr_layer **out) {
    *out = NULL;
    if (!op_type) return NETRUN_OK;
    pthread_once(&build_once, build);
    const plugin_op *best = NULL;
    for (int i = 0; i < n_ops; i++) {
        const plugin_op *p = &ops[i];
        if (strcmp(p->def->op_type, op_type) || !same_domain(p->layer.domain, domain)) continue;
        if (opset > 0 ? !ranges_overlap(p->def->since_version, p->def->until_version, opset, opset)
                      : best && best->def->since_version >= p->def->since_version)
            continue;
        best = p;
        if (opset > 0) break;
    }
    if (best && best->clash)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "op %s.%s is defined by two plugins, '%s' (%s) and '%s' (%s), "
                        "whose shape inference may differ: leave one of them out of the backend path",
                        shown_domain(domain), op_type, best->be->name, best->be->path, best->clash->name,
                        best->clash->path);
    *out = best ? &best->layer : NULL;
    return NETRUN_OK;
}

static const plugin_op *entry_of(const nr_layer *layer) {
    if (!ops || !layer) return NULL;
    const plugin_op *p = (const plugin_op *)(const void *)layer;
    return p >= ops && p < ops + n_ops ? p : NULL;
}

const nr_backend *nr_plugin_op_definer(const nr_layer *layer) {
    const plugin_op *p = entry_of(layer);
    return p ? p->be : NULL;
}

netrun_status nr_plugin_op_check_node(const nr_layer *layer, const nr_node *nd, const char *source) {
    const plugin_op *p = entry_of(layer);
    if (!p) return NETRUN_OK;
    const netrun_op_def *d = p->def;
    const char *who = p->be->name;
    if (nd->n_inputs > d->max_inputs)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: node '%s' (%s): %d inputs, but op %s.%s (defined by plugin '%s') "
                        "takes at most %d", source, nd->name, nd->op_type, nd->n_inputs, shown_domain(d->domain),
                        d->op_type, who, d->max_inputs);
    if (nd->n_outputs > d->max_outputs)
        return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: node '%s' (%s): %d outputs, but op %s.%s (defined by plugin "
                        "'%s') has at most %d", source, nd->name, nd->op_type, nd->n_outputs, shown_domain(d->domain),
                        d->op_type, who, d->max_outputs);
    for (int k = 0; k < 2; k++) {
        int need = k ? d->min_outputs : d->min_inputs, n = k ? nd->n_outputs : nd->n_inputs;
        const int *ids = k ? nd->outputs : nd->inputs;
        for (int i = 0; i < need; i++)
            if (i >= n || ids[i] < 0)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: node '%s' (%s): %s %d is required (op %s.%s, defined by "
                                "plugin '%s') but %s", source, nd->name, nd->op_type, k ? "output" : "input", i,
                                shown_domain(d->domain), d->op_type, who, i >= n ? "missing" : "empty");
    }
    return NETRUN_OK;
}

const nr_layer *nr_plugin_op_at(int index) {
    pthread_once(&build_once, build);
    return index >= 0 && index < n_ops ? &ops[index].layer : NULL;
}
