/* Building and freeing the IR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ir.h"
#include "status.h"

nr_graph *nr_graph_new(const char *name, nr_graph *parent) {
    nr_graph *g = nr_calloc(1, sizeof *g);
    if (!g) return NULL;
    g->name = nr_strdup(name ? name : "");
    if (!g->name) {
        nr_free(g);
        return NULL;
    }
    g->parent = parent;
    g->n_formal_inputs = -1;
    return g;
}

void nr_tensor_free(nr_tensor *t) {
    if (!t) return;
    if (t->owns_data) {
        if (t->dtype == NETRUN_DTYPE_STRING && t->data) {
            char **s = t->data;
            int64_t n = nr_tensor_count(t);
            /* a tensor whose filling failed may hold fewer pointers than its dims say */
            if (n < 0 || (uint64_t)n > t->nbytes / sizeof(char *)) n = (int64_t)(t->nbytes / sizeof(char *));
            for (int64_t i = 0; i < n; i++) nr_free(s[i]);
        }
        nr_aligned_free(t->data);
    }
    nr_free(t);
}

void nr_attr_clear(nr_attr *a) {
    if (a->borrowed_graphs) a->sub_model = NULL, a->g = NULL, a->graphs = NULL;
    netrun_model_release(a->sub_model);
    nr_free(a->name);
    nr_free(a->s);
    nr_tensor_free(a->t);
    nr_graph_free(a->g);
    nr_free(a->ints);
    nr_free(a->floats);
    if (a->strings)
        for (int64_t i = 0; i < a->n; i++) nr_free(a->strings[i]);
    nr_free(a->strings);
    if (a->tensors)
        for (int64_t i = 0; i < a->n; i++) nr_tensor_free(a->tensors[i]);
    nr_free(a->tensors);
    if (a->graphs)
        for (int64_t i = 0; i < a->n; i++) nr_graph_free(a->graphs[i]);
    nr_free(a->graphs);
    memset(a, 0, sizeof *a);
}

void nr_graph_free(nr_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_nodes; i++) {
        nr_node *n = &g->nodes[i];
        nr_free(n->name);
        nr_free(n->op_type);
        nr_free(n->domain);
        nr_free(n->inputs);
        nr_free(n->outputs);
        for (int a = 0; a < n->n_attrs; a++) nr_attr_clear(&n->attrs[a]);
        nr_free(n->attrs);
        nr_free(n->params);
    }
    for (int i = 0; i < g->n_values; i++) {
        nr_value *v = &g->values[i];
        nr_free(v->name);
        for (int d = 0; d < NETRUN_MAX_RANK; d++) nr_free(v->dim_names[d]);
        nr_tensor_free(v->constant);
        nr_tensor_free(v->default_value);
    }
    nr_free(g->nodes);
    nr_free(g->values);
    nr_free(g->inputs);
    nr_free(g->outputs);
    nr_strmap_free(&g->value_ids);
    nr_free(g->name);
    nr_free(g);
}

static int grow_array(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    size_t bytes;
    if (!nr_mul_size((size_t)nc, elem, &bytes)) return -1;
    void *p = nr_realloc(*arr, bytes);
    if (!p) return -1;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return 0;
}

int nr_graph_find_value(const nr_graph *g, const char *name) { return nr_strmap_get(&g->value_ids, name); }

int nr_graph_value(nr_graph *g, const char *name) {
    int id = nr_strmap_get(&g->value_ids, name);
    if (id >= 0) return id;
    if (grow_array((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof(nr_value))) return -1;
    nr_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = nr_strdup(name);
    if (!v->name) return -1;
    v->rank = -1;
    v->producer = -1;
    if (nr_strmap_put(&g->value_ids, v->name, g->n_values)) {
        nr_free(v->name);
        v->name = NULL;
        return -1;
    }
    return g->n_values++;
}

nr_node *nr_graph_add_node(nr_graph *g, const char *name, const char *op_type, const char *domain,
                           int n_inputs, int n_outputs, int n_attrs) {
    if (n_inputs < 0 || n_outputs < 0 || n_attrs < 0) return NULL;
    if (grow_array((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(nr_node))) return NULL;
    nr_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = nr_strdup(name);
    n->op_type = nr_strdup(op_type);
    n->domain = nr_strdup(domain && strcmp(domain, "ai.onnx") ? domain : "");
    n->inputs = nr_calloc((size_t)n_inputs, sizeof(int));
    n->outputs = nr_calloc((size_t)n_outputs, sizeof(int));
    n->attrs = nr_calloc((size_t)n_attrs, sizeof(nr_attr));
    g->n_nodes++; /* counted now so that nr_graph_free releases partial nodes */
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs) return NULL;
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->n_attrs = n_attrs;
    for (int i = 0; i < n_inputs; i++) n->inputs[i] = -1;
    for (int i = 0; i < n_outputs; i++) n->outputs[i] = -1;
    return n;
}

netrun_status nr_graph_add_input(nr_graph *g, int id) {
    if (grow_array((void **)&g->inputs, &g->cap_inputs, g->n_inputs + 1, sizeof(int)))
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory adding a graph input");
    g->inputs[g->n_inputs++] = id;
    g->values[id].is_graph_input = 1;
    return NETRUN_OK;
}

netrun_status nr_graph_add_output(nr_graph *g, int id) {
    if (grow_array((void **)&g->outputs, &g->cap_outputs, g->n_outputs + 1, sizeof(int)))
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory adding a graph output");
    g->outputs[g->n_outputs++] = id;
    g->values[id].is_graph_output = 1;
    return NETRUN_OK;
}

int nr_graph_identity_source(const nr_graph *g, int v, int max_depth, int *first) {
    if (first) *first = -1;
    for (int depth = 0; depth < max_depth && v >= 0 && v < g->n_values && !g->values[v].constant; depth++) {
        int pn = -1;
        for (int k = 0; k < g->n_nodes && pn < 0; k++)
            if (g->nodes[k].n_outputs == 1 && g->nodes[k].outputs[0] == v) pn = k;
        const nr_node *nd = pn >= 0 ? &g->nodes[pn] : NULL;
        if (!nd || *nd->domain || strcmp(nd->op_type, "Identity") || nd->n_inputs != 1) return v;
        if (first && *first < 0) *first = pn;
        v = nd->inputs[0];
    }
    return v;
}

int64_t nr_shape_count(int rank, const int64_t *dims) {
    int64_t n = 1, zero = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        zero |= dims[i] == 0; /* [2^62, 4, 0] has no element, though its other dims overflow a product */
    }
    for (int i = 0; i < rank && !zero; i++)
        if (__builtin_mul_overflow(n, dims[i], &n)) return INT64_MAX;
    return zero ? 0 : n;
}

int64_t nr_tensor_count(const nr_tensor *t) { return nr_shape_count(t->rank, t->dims); }

nr_tensor *nr_tensor_new(netrun_dtype dtype, int rank, const int64_t *dims) {
    if (rank < 0 || rank > NETRUN_MAX_RANK) {
        nr_error(NETRUN_ERR_UNSUPPORTED, "tensor rank %d is over netrun's limit of %d", rank, NETRUN_MAX_RANK);
        return NULL;
    }
    int64_t count = nr_shape_count(rank, dims);
    size_t esize = dtype == NETRUN_DTYPE_STRING ? sizeof(char *) : netrun_dtype_size(dtype);
    size_t bytes;
    if (count < 0 || count == INT64_MAX || !esize || !nr_mul_size((size_t)count, esize, &bytes)) {
        nr_error(NETRUN_ERR_INVALID_MODEL, "tensor of dtype %s has an invalid or too large shape",
                 netrun_dtype_name(dtype));
        return NULL;
    }
    nr_tensor *t = nr_calloc(1, sizeof *t);
    if (!t) goto oom;
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->nbytes = bytes;
    t->owns_data = 1;
    t->data = nr_aligned_alloc(bytes, 64);
    if (!t->data) {
        nr_free(t);
        goto oom;
    }
    memset(t->data, 0, bytes);
    return t;
oom:
    nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory allocating a %zu-byte tensor", bytes);
    return NULL;
}

void nr_model_ir_free(nr_model_ir *m) {
    if (!m) return;
    if (!m->borrowed_graph) nr_graph_free(m->graph);
    for (int i = 0; i < m->n_opsets; i++) nr_free(m->opsets[i].domain);
    nr_free(m->opsets);
    nr_free(m->producer);
    nr_free(m->producer_version);
    nr_free(m->domain);
    nr_free(m->doc_string);
    nr_free(m->graph_doc_string);
    for (int i = 0; i < m->n_props; i++) {
        nr_free(m->prop_keys[i]);
        nr_free(m->prop_values[i]);
    }
    nr_free(m->prop_keys);
    nr_free(m->prop_values);
    for (int i = 0; i < m->n_mappings; i++)
        if (m->mappings[i].addr) munmap(m->mappings[i].addr, m->mappings[i].size);
    nr_free(m->mappings);
    nr_free(m);
}

int64_t nr_model_opset(const nr_model_ir *m, const char *domain) {
    int want_default = !domain || !*domain || !strcmp(domain, "ai.onnx");
    for (int i = 0; i < m->n_opsets; i++) {
        const char *d = m->opsets[i].domain;
        int is_default = !d || !*d || !strcmp(d, "ai.onnx");
        if (want_default ? is_default : (!is_default && !strcmp(d, domain))) return m->opsets[i].version;
    }
    return 0;
}

/* ---- copies of a graph for the graph passes (their constants borrowed from the original) ---- */

nr_tensor *nr_tensor_borrow(const nr_tensor *t) {
    nr_tensor *c = nr_calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = *t;
    c->owns_data = 0; /* the original's data, kept alive by the copy's reference on it */
    return c;
}

netrun_status nr_attr_copy_borrowed(nr_attr *d, const nr_attr *a) {
    d->type = a->type;
    d->i = a->i;
    d->f = a->f;
    d->n = a->n;
    size_t n = a->n > 0 ? (size_t)a->n : 0;
    if (!(d->name = nr_strdup(a->name ? a->name : ""))) goto oom;
    if (a->s) {
        if (!(d->s = nr_malloc(a->s_len + 1))) goto oom;
        memcpy(d->s, a->s, a->s_len);
        d->s[a->s_len] = 0;
        d->s_len = a->s_len;
    }
    if (a->t && !(d->t = nr_tensor_borrow(a->t))) goto oom;
    if (a->ints) {
        if (!(d->ints = nr_calloc(n + 1, sizeof(int64_t)))) goto oom;
        memcpy(d->ints, a->ints, n * sizeof(int64_t));
    }
    if (a->floats) {
        if (!(d->floats = nr_calloc(n + 1, sizeof(float)))) goto oom;
        memcpy(d->floats, a->floats, n * sizeof(float));
    }
    if (a->strings) {
        if (!(d->strings = nr_calloc(n + 1, sizeof(char *)))) goto oom;
        for (size_t i = 0; i < n; i++)
            if (a->strings[i] && !(d->strings[i] = nr_strdup(a->strings[i]))) goto oom;
    }
    if (a->tensors) {
        if (!(d->tensors = nr_calloc(n + 1, sizeof(nr_tensor *)))) goto oom;
        for (size_t i = 0; i < n; i++)
            if (a->tensors[i] && !(d->tensors[i] = nr_tensor_borrow(a->tensors[i]))) goto oom;
    }
    if (a->g || a->graphs || a->sub_model) { /* subgraphs (and their compiled models) are shared, not copied */
        d->g = a->g;
        d->graphs = a->graphs;
        d->sub_model = a->sub_model;
        d->borrowed_graphs = 1;
    }
    return NETRUN_OK;
oom:
    return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying attribute '%s'", a->name ? a->name : "");
}

netrun_status nr_graph_copy_values_borrowed(const nr_graph *g, nr_graph *ng) {
    return nr_graph_copy_values_renamed(g, ng, -1, NULL);
}

netrun_status nr_graph_copy_values_renamed(const nr_graph *g, nr_graph *ng, int renamed, const char *new_name) {
    for (int v = 0; v < g->n_values; v++) {
        const nr_value *a = &g->values[v];
        const char *name = v == renamed ? new_name : a->name;
        if (v == renamed && nr_graph_find_value(g, new_name) >= 0)
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "the graph already has a value named '%s'", new_name);
        int id = nr_graph_value(ng, name);
        if (id != v) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying the graph's values");
        nr_value *b = &ng->values[id];
        b->dtype = a->dtype;
        b->rank = a->rank;
        memcpy(b->dims, a->dims, sizeof b->dims);
        for (int d = 0; d < NETRUN_MAX_RANK; d++)
            if (a->dim_names[d] && !(b->dim_names[d] = nr_strdup(a->dim_names[d])))
                return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying the graph's values");
        if ((a->constant && !(b->constant = nr_tensor_borrow(a->constant))) ||
            (a->default_value && !(b->default_value = nr_tensor_borrow(a->default_value))))
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying the graph's values");
        b->is_graph_input = a->is_graph_input;
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (nr_graph_add_input(ng, g->inputs[i]) != NETRUN_OK) return NETRUN_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < g->n_outputs; i++)
        if (nr_graph_add_output(ng, g->outputs[i]) != NETRUN_OK) return NETRUN_ERR_OUT_OF_MEMORY;
    ng->n_formal_inputs = g->n_formal_inputs;
    return NETRUN_OK;
}

int nr_graph_new_const(nr_graph *g, const char *base, const char *suffix, nr_tensor *t) {
    if (!t) return -1;
    char name[512];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    for (int k = 2; nr_graph_find_value(g, name) >= 0; k++) snprintf(name, sizeof name, "%s%s%d", base, suffix, k);
    int id = nr_graph_value(g, name);
    if (id < 0) {
        nr_tensor_free(t);
        return -1;
    }
    nr_value *v = &g->values[id];
    v->constant = t;
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int d = 0; d < t->rank; d++) v->dims[d] = t->dims[d];
    v->producer = -1;
    return id;
}

