/* Loading a model: import, resolve each node's op definition, parse attributes, check the graph. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control_flow.h"
#include "onnx_import.h"
#include "op_inputs.h"
#include "plugin_ops.h"

netrun_status nr_record(char *handle_error, netrun_status code) {
    if (handle_error) snprintf(handle_error, NR_ERROR_MAX, "%s", nr_error_message());
    return code;
}

void nr_model_retain(netrun_model *m) { atomic_fetch_add(&m->refs, 1); }

static void model_free(netrun_model *m) {
    if (!m) return;
    if (m->param_allocs && m->ir)
        for (int i = 0; i < m->ir->graph->n_nodes; i++) nr_alloc_list_free(&m->param_allocs[i]);
    nr_free(m->param_allocs);
    nr_model_ir_free(m->ir);
    nr_free(m->source);
    nr_free(m->order);
    nr_free(m->inputs);
    nr_free(m->outputs);
    pthread_mutex_destroy(&m->error_lock);
    nr_free(m);
}

void netrun_model_release(netrun_model *m) {
    if (m && atomic_fetch_sub(&m->refs, 1) == 1) model_free(m);
}

/* A model is shared by threads, so its error text is written and read under a lock, and each thread reads it
 * from a copy of its own. */
static netrun_status model_fail(const netrun_model *cm, netrun_status code) {
    netrun_model *m = (netrun_model *)cm;
    pthread_mutex_lock(&m->error_lock);
    snprintf(m->error, sizeof m->error, "%s", nr_error_message());
    pthread_mutex_unlock(&m->error_lock);
    return code;
}

const char *netrun_model_error(const netrun_model *cm) {
    static _Thread_local char copy[NR_ERROR_MAX];
    if (!cm) return nr_error_message();
    netrun_model *m = (netrun_model *)cm;
    pthread_mutex_lock(&m->error_lock);
    snprintf(copy, sizeof copy, "%s", m->error);
    pthread_mutex_unlock(&m->error_lock);
    return copy;
}

/* Graph checks: every input defined, one producer per value, no cycles; yields a topological order. */
static netrun_status check_graph(netrun_model *m) {
    nr_graph *g = m->ir->graph;
    for (int i = 0; i < g->n_values; i++) g->values[i].producer = -1;
    for (int n = 0; n < g->n_nodes; n++) {
        nr_node *nd = &g->nodes[n];
        for (int o = 0; o < nd->n_outputs; o++) {
            int v = nd->outputs[o];
            if (v < 0) continue;
            nr_value *val = &g->values[v];
            if (val->producer >= 0)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: value '%s' is produced twice: by node '%s' and by node '%s'",
                                m->source, val->name, g->nodes[val->producer].name, nd->name);
            if (val->constant || val->is_graph_input)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: node '%s' (%s) writes '%s', which is already a %s",
                                m->source, nd->name, nd->op_type, val->name,
                                val->constant ? "constant (initializer)" : "graph input");
            val->producer = n;
            val->producer_output = o;
        }
    }
    for (int n = 0; n < g->n_nodes; n++) {
        nr_node *nd = &g->nodes[n];
        for (int i = 0; i < nd->n_inputs; i++) {
            int v = nd->inputs[i];
            if (v < 0) continue;
            nr_value *val = &g->values[v];
            if (val->producer < 0 && !val->constant && !val->is_graph_input)
                return nr_error(NETRUN_ERR_INVALID_MODEL,
                                "%s: node '%s' (%s) input %d '%s' is not produced by any node, not a graph input "
                                "and not an initializer",
                                m->source, nd->name, nd->op_type, i, val->name);
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        nr_value *val = &g->values[g->outputs[i]];
        if (val->producer < 0 && !val->constant && !val->is_graph_input)
            return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: graph output '%s' is not produced by any node",
                            m->source, val->name);
    }
    /* Kahn's algorithm, keeping the file's order among ready nodes. */
    int *pending = nr_calloc((size_t)g->n_nodes + 1, sizeof(int));
    int *order = nr_calloc((size_t)g->n_nodes + 1, sizeof(int));
    int *users_count = nr_calloc((size_t)g->n_values + 1, sizeof(int));
    if (!pending || !order || !users_count) {
        nr_free(pending);
        nr_free(order);
        nr_free(users_count);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory checking the graph");
    }
    /* dependencies: explicit inputs and the values the node's subgraphs capture */
    int caps[NR_MAX_CAPTURES];
    for (int n = 0; n < g->n_nodes; n++) {
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = g->nodes[n].inputs[i];
            if (v >= 0 && g->values[v].producer >= 0) pending[n]++;
        }
        int nc = nr_node_captures(g, &g->nodes[n], caps, NR_MAX_CAPTURES);
        for (int c = 0; c < nc; c++)
            if (g->values[caps[c]].producer >= 0) pending[n]++;
    }
    int head = 0, tail = 0;
    for (int n = 0; n < g->n_nodes; n++)
        if (!pending[n]) order[tail++] = n;
    /* users by scanning: O(nodes * inputs) per pass is too slow for big graphs; build a CSR of users. */
    int *start = nr_calloc((size_t)g->n_values + 1, sizeof(int));
    int total = 0;
    for (int n = 0; n < g->n_nodes; n++) total += g->nodes[n].n_inputs + nr_node_captures(g, &g->nodes[n], caps, NR_MAX_CAPTURES);
    int *users = nr_calloc((size_t)total + 1, sizeof(int));
    if (!start || !users) {
        nr_free(start);
        nr_free(users);
        nr_free(pending);
        nr_free(order);
        nr_free(users_count);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory checking the graph");
    }
    for (int n = 0; n < g->n_nodes; n++) {
        for (int i = 0; i < g->nodes[n].n_inputs; i++)
            if (g->nodes[n].inputs[i] >= 0) users_count[g->nodes[n].inputs[i]]++;
        int nc = nr_node_captures(g, &g->nodes[n], caps, NR_MAX_CAPTURES);
        for (int c = 0; c < nc; c++) users_count[caps[c]]++;
    }
    for (int v = 0; v < g->n_values; v++) start[v + 1] = start[v] + users_count[v];
    memset(users_count, 0, sizeof(int) * (size_t)g->n_values);
    for (int n = 0; n < g->n_nodes; n++) {
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = g->nodes[n].inputs[i];
            if (v >= 0) users[start[v] + users_count[v]++] = n;
        }
        int nc = nr_node_captures(g, &g->nodes[n], caps, NR_MAX_CAPTURES);
        for (int c = 0; c < nc; c++) users[start[caps[c]] + users_count[caps[c]]++] = n;
    }
    while (head < tail) {
        int n = order[head++];
        nr_node *nd = &g->nodes[n];
        for (int o = 0; o < nd->n_outputs; o++) {
            int v = nd->outputs[o];
            if (v < 0) continue;
            for (int u = start[v]; u < start[v + 1]; u++)
                if (--pending[users[u]] == 0) order[tail++] = users[u];
        }
    }
    netrun_status st = NETRUN_OK;
    if (tail < g->n_nodes) {
        int culprit = 0;
        for (int n = 0; n < g->n_nodes; n++)
            if (pending[n]) {
                culprit = n;
                break;
            }
        st = nr_error(NETRUN_ERR_INVALID_MODEL, "%s: the graph has a cycle through node '%s' (%s)", m->source,
                      g->nodes[culprit].name, g->nodes[culprit].op_type);
    }
    nr_free(start);
    nr_free(users);
    nr_free(pending);
    nr_free(users_count);
    if (st != NETRUN_OK) {
        nr_free(order);
        return st;
    }
    m->order = order;
    return NETRUN_OK;
}

/* Every position of `mask` (bit i: position i, from the op's schema) must name a value among the node's n ids;
 * what: "input" or "output". */
static netrun_status require_present(const netrun_model *m, const nr_node *nd, uint32_t mask, int n, const int *ids,
                                     const char *what) {
    for (int i = 0; i < 32; i++)
        if ((mask >> i & 1u) && (i >= n || ids[i] < 0))
            return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: node '%s' (%s): %s %d is required but %s", m->source,
                            nd->name, nd->op_type, what, i, i >= n ? "missing" : "empty");
    return NETRUN_OK;
}

/* Resolve op definitions and parse attributes (once, shared by all sessions). */
static netrun_status parse_nodes(netrun_model *m) {
    nr_graph *g = m->ir->graph;
    /* an opset of an ONNX domain that does not exist (yet): a newer one may have changed an op's meaning, so refuse
     * rather than run it with older semantics; version 0 never existed. Other domains are not ONNX's to check. */
    for (int i = 0; i < m->ir->n_opsets; i++) {
        const char *d = m->ir->opsets[i].domain;
        int64_t v = m->ir->opsets[i].version;
        for (int k = 0; k < nr_opset_domains_count; k++) {
            if (strcmp(nr_opset_domains[k].domain, !strcmp(d, "ai.onnx") ? "" : d)) continue;
            if (v > nr_opset_domains[k].newest || v < 1)
                return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: the model imports opset %lld of domain '%s', which does "
                                "not exist: netrun knows opsets 1 to %d of it (the schemas of onnx %s)", m->source,
                                (long long)v, *d ? d : "ai.onnx", nr_opset_domains[k].newest, nr_onnx_schema_version);
        }
    }
    m->param_allocs = nr_calloc((size_t)g->n_nodes + 1, sizeof(nr_alloc_list));
    if (!m->param_allocs) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    for (int n = 0; n < g->n_nodes; n++) {
        nr_node *nd = &g->nodes[n];
        if (nd->opset <= 0) nd->opset = (int)nr_model_opset(m->ir, nd->domain); /* a function body keeps its own */
        nd->layer = nr_layer_find(nd->domain, nd->op_type);
        if (!nd->layer) { /* an op netrun lacks: a plugin may define it (ABI 1.9) */
            netrun_status ps = nr_plugin_op_find(nd->domain, nd->op_type, nd->opset, &nd->layer);
            if (ps == NETRUN_OK && nd->layer) ps = nr_plugin_op_check_node(nd->layer, nd, m->source);
            if (ps != NETRUN_OK) return ps;
        }
        if (!nd->layer) continue; /* reported at prepare */
        /* inputs and outputs the op's schema requires must be there before any layer or kernel reads or writes
         * them (a kernel writes its outputs without asking: a Shape node without its output once wrote through
         * a NULL pointer) */
        netrun_status rq = require_present(m, nd, nr_op_required_inputs(nd->domain, nd->op_type, nd->opset),
                                           nd->n_inputs, nd->inputs, "input");
        if (rq == NETRUN_OK)
            rq = require_present(m, nd, nr_op_required_outputs(nd->domain, nd->op_type, nd->opset), nd->n_outputs,
                                 nd->outputs, "output");
        if (rq != NETRUN_OK) return rq;
        int any_out = 0;
        for (int o = 0; o < nd->n_outputs; o++) any_out |= nd->outputs[o] >= 0;
        if (!any_out) /* LSTM, GRU and RNN have only optional outputs; one of them must still be asked for */
            return nr_error(NETRUN_ERR_INVALID_MODEL, "%s: node '%s' (%s) has no outputs", m->source, nd->name,
                            nd->op_type);
        if (nd->layer->params_size) {
            nd->params = nr_calloc(1, nd->layer->params_size);
            if (!nd->params) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
        }
        if (nd->layer->parse) {
            /* parse sees the input and output counts and names; shapes are not known yet (rank -1) */
            netrun_value_desc *in = nr_calloc((size_t)nd->n_inputs + 1, sizeof *in);
            netrun_value_desc *out = nr_calloc((size_t)nd->n_outputs + 1, sizeof *out);
            if (!in || !out) {
                nr_free(in);
                nr_free(out);
                return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
            }
            for (int i = 0; i < nd->n_inputs; i++) {
                in[i].rank = -1;
                in[i].name = nd->inputs[i] >= 0 ? g->values[nd->inputs[i]].name : "";
            }
            for (int o = 0; o < nd->n_outputs; o++) {
                out[o].rank = -1;
                out[o].name = nd->outputs[o] >= 0 ? g->values[nd->outputs[o]].name : NULL;
            }
            nr_layer_ctx c = {.node = nd, .opset = nd->opset, .n_in = nd->n_inputs, .in = in,
                              .n_out = nd->n_outputs, .out = out, .allocs = &m->param_allocs[n]};
            netrun_status st = nd->layer->parse(&c, nd->params);
            nr_free(in);
            nr_free(out);
            if (st != NETRUN_OK) {
                nr_error_prefix("%s: ", m->source);
                return st;
            }
        }
    }
    return NETRUN_OK;
}

static netrun_status build_io(netrun_model *m) {
    nr_graph *g = m->ir->graph;
    m->inputs = nr_calloc((size_t)g->n_inputs + 1, sizeof(nr_io_info));
    m->outputs = nr_calloc((size_t)g->n_outputs + 1, sizeof(nr_io_info));
    if (!m->inputs || !m->outputs) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < 2; k++) {
        int n = k ? g->n_outputs : g->n_inputs;
        int *ids = k ? g->outputs : g->inputs;
        nr_io_info *io = k ? m->outputs : m->inputs;
        for (int i = 0; i < n; i++) {
            nr_value *v = &g->values[ids[i]];
            io[i].info.name = v->name;
            io[i].info.dtype = v->dtype;
            io[i].info.rank = v->rank;
            io[i].info.dims = v->dims;
            for (int d = 0; d < NETRUN_MAX_RANK; d++) io[i].dim_names[d] = v->dim_names[d];
            io[i].info.dim_names = io[i].dim_names;
        }
    }
    return NETRUN_OK;
}

netrun_status nr_model_from_ir(nr_model_ir *ir, const char *source, netrun_model **out) {
    netrun_model *m = nr_calloc(1, sizeof *m);
    if (!m) {
        nr_model_ir_free(ir);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory loading %s", source);
    }
    atomic_init(&m->refs, 1);
    pthread_mutex_init(&m->error_lock, NULL);
    m->ir = ir;
    m->source = nr_strdup(source);
    netrun_status st = m->source ? NETRUN_OK : nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == NETRUN_OK && !ir->borrowed_graph) st = nr_resolve_captures(ir->graph, m->source, 0);
    if (st == NETRUN_OK) st = check_graph(m);
    if (st == NETRUN_OK) st = parse_nodes(m);
    if (st == NETRUN_OK) st = nr_compile_subgraphs(m);
    if (st == NETRUN_OK) st = build_io(m);
    m->n_formal_inputs = ir->graph->n_inputs;
    if (st != NETRUN_OK) {
        model_free(m);
        return st;
    }
    *out = m;
    return NETRUN_OK;
}

netrun_status netrun_model_load_memory(const void *data, size_t size, const char *base_dir, netrun_model **out) {
    if (!out) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_load_memory: out is NULL");
    *out = NULL;
    if (!data && size) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_load_memory: data is NULL");
    nr_import_limits limits = NR_IMPORT_LIMITS_DEFAULT;
    nr_model_ir *ir = NULL;
    netrun_status st = nr_onnx_import(data, size, "<memory>", base_dir, &limits, &ir);
    if (st != NETRUN_OK) return st;
    return nr_model_from_ir(ir, "<memory>", out);
}

static nr_import_limits import_limits(const netrun_load_limits *l) {
    nr_import_limits limits = NR_IMPORT_LIMITS_DEFAULT;
    if (l && l->max_tensor_bytes) limits.max_tensor_bytes = l->max_tensor_bytes;
    if (l && l->max_graph_depth > 0) limits.max_graph_depth = l->max_graph_depth;
    return limits;
}

netrun_status netrun_model_load(const char *path, netrun_model **out) { return netrun_model_load_ex(path, NULL, out); }

netrun_status netrun_model_load_ex(const char *path, const netrun_load_limits *user_limits, netrun_model **out) {
    if (!out) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_load: out is NULL");
    *out = NULL;
    if (!path) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_load: path is NULL");
    /* Refuse what is not a regular file before opening it: opening a FIFO for reading blocks until a writer
     * comes (forever), and a device may have effects on open. Then open without blocking and check again, in
     * case the path was replaced in between. */
    struct stat sb;
    if (stat(path, &sb) != 0) return nr_error(NETRUN_ERR_IO, "cannot open model '%s': %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return nr_error(NETRUN_ERR_IO, "cannot read model '%s': it is %s, not a regular file", path,
                        nr_file_kind(sb.st_mode));
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return nr_error(NETRUN_ERR_IO, "cannot open model '%s': %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return nr_error(NETRUN_ERR_IO, "cannot read model '%s': it is %s, not a regular file", path,
                        nr_file_kind(sb.st_mode));
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return nr_error(NETRUN_ERR_IO, "cannot open model '%s': %s", path, strerror(errno));
    }
    size_t size = (size_t)sb.st_size;
    if (user_limits && user_limits->max_model_bytes && size > user_limits->max_model_bytes) {
        fclose(f);
        return nr_error(NETRUN_ERR_INVALID_MODEL, "'%s' has %zu bytes, over the limit of %zu", path, size,
                        user_limits->max_model_bytes);
    }
    /* The file is mapped, not read into a buffer: the importer drops its pages as it copies the weights out
     * (nr_import_limits.data_is_file_mapping), so a model with inline weights never holds them twice. */
    void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fileno(f), 0) : MAP_FAILED;
    void *buf = NULL;
    if (map == MAP_FAILED) { /* an empty file, or a file system without mmap: read it */
        buf = nr_malloc(size ? size : 1);
        if (!buf) {
            fclose(f);
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory reading '%s' (%zu bytes)", path, size);
        }
        size_t got = fread(buf, 1, size, f);
        if (got != size) {
            fclose(f);
            nr_free(buf);
            return nr_error(NETRUN_ERR_IO, "cannot read '%s': got %zu of %zu bytes", path, got, size);
        }
    }
    fclose(f);
    char *dircopy = nr_strdup(path);
    if (!dircopy) {
        if (buf) nr_free(buf);
        else munmap(map, size);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    }
    nr_import_limits limits = import_limits(user_limits);
    limits.data_is_file_mapping = buf == NULL;
    nr_model_ir *ir = NULL;
    netrun_status st = nr_onnx_import(buf ? buf : map, size, path, dirname(dircopy), &limits, &ir);
    if (buf) nr_free(buf);
    else munmap(map, size);
    nr_free(dircopy);
    if (st != NETRUN_OK) return st;
    return nr_model_from_ir(ir, path, out);
}

int netrun_model_input_count(const netrun_model *m) { return m ? m->ir->graph->n_inputs : 0; }

int netrun_model_input_has_default(const netrun_model *m, int index) {
    if (!m || index < 0 || index >= m->ir->graph->n_inputs) return 0;
    return m->ir->graph->values[m->ir->graph->inputs[index]].default_value != NULL;
}
int netrun_model_output_count(const netrun_model *m) { return m ? m->ir->graph->n_outputs : 0; }
int netrun_model_node_count(const netrun_model *m) { return m ? m->ir->graph->n_nodes : 0; }

static netrun_status io_info(const netrun_model *m, int index, int outputs, netrun_tensor_info *info) {
    if (!m) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_%s_info: model is NULL", outputs ? "output" : "input");
    if (!info) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_%s_info: info is NULL", outputs ? "output" : "input");
        return model_fail(m, NETRUN_ERR_INVALID_ARGUMENT);
    }
    int n = outputs ? m->ir->graph->n_outputs : m->ir->graph->n_inputs;
    if (index < 0 || index >= n) {
        nr_error(NETRUN_ERR_INVALID_ARGUMENT, "%s index %d out of range (the model has %d)",
                 outputs ? "output" : "input", index, n);
        return model_fail(m, NETRUN_ERR_INVALID_ARGUMENT);
    }
    *info = (outputs ? m->outputs : m->inputs)[index].info;
    return NETRUN_OK;
}

netrun_status netrun_model_input_info(const netrun_model *m, int index, netrun_tensor_info *info) {
    return io_info(m, index, 0, info);
}
netrun_status netrun_model_output_info(const netrun_model *m, int index, netrun_tensor_info *info) {
    return io_info(m, index, 1, info);
}

#define NR_STR2(x) #x
#define NR_STR(x) NR_STR2(x)
/* from the header's NETRUN_VERSION_* (CMakeLists.txt checks they match the project version) */
const char *netrun_version(void) {
    return NR_STR(NETRUN_VERSION_MAJOR) "." NR_STR(NETRUN_VERSION_MINOR) "." NR_STR(NETRUN_VERSION_PATCH);
}

const char *netrun_last_error(void) { return nr_error_message(); }

const char *netrun_status_string(netrun_status s) {
    switch (s) {
    case NETRUN_OK: return "ok";
    case NETRUN_ERR_INVALID_ARGUMENT: return "invalid argument";
    case NETRUN_ERR_INVALID_MODEL: return "invalid model";
    case NETRUN_ERR_UNSUPPORTED: return "unsupported";
    case NETRUN_ERR_OUT_OF_MEMORY: return "out of memory";
    case NETRUN_ERR_BACKEND: return "backend failure";
    case NETRUN_ERR_IO: return "i/o error";
    case NETRUN_ERR_STATE: return "call not allowed in this state";
    case NETRUN_ERR_INTERNAL: return "internal error";
    case NETRUN_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}

/* ---- metadata: what the file says about itself ---- */

static const char *or_empty(const char *s) { return s ? s : ""; }

netrun_status netrun_model_get_metadata(const netrun_model *m, netrun_model_metadata *out) {
    if (!m || !out) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_get_metadata: NULL model or out");
    const nr_model_ir *ir = m->ir;
    out->producer_name = or_empty(ir->producer);
    out->producer_version = or_empty(ir->producer_version);
    out->domain = or_empty(ir->domain);
    out->model_version = ir->model_version;
    out->ir_version = ir->ir_version;
    out->doc_string = or_empty(ir->doc_string);
    out->graph_name = or_empty(ir->graph ? ir->graph->name : NULL);
    out->graph_doc_string = or_empty(ir->graph_doc_string);
    return NETRUN_OK;
}

int netrun_model_opset_count(const netrun_model *m) { return m ? m->ir->n_opsets : 0; }

netrun_status netrun_model_opset_get(const netrun_model *m, int index, const char **domain, int64_t *version) {
    if (!m) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_opset_get: model is NULL");
    if (index < 0 || index >= m->ir->n_opsets)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "opset index %d out of range (the model imports %d)", index,
                        m->ir->n_opsets);
    const char *d = or_empty(m->ir->opsets[index].domain);
    if (domain) *domain = strcmp(d, "ai.onnx") ? d : "";
    if (version) *version = m->ir->opsets[index].version;
    return NETRUN_OK;
}

int netrun_model_metadata_prop_count(const netrun_model *m) { return m ? m->ir->n_props : 0; }

netrun_status netrun_model_metadata_prop_get(const netrun_model *m, int index, const char **key, const char **value) {
    if (!m) return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "netrun_model_metadata_prop_get: model is NULL");
    if (index < 0 || index >= m->ir->n_props)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "metadata_props index %d out of range (the model has %d)", index,
                        m->ir->n_props);
    if (key) *key = m->ir->prop_keys[index];
    if (value) *value = m->ir->prop_values[index];
    return NETRUN_OK;
}
