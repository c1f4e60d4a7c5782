/* What layers can ask about the node they parse or infer, and helpers shared by many layers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layer_ctx.h"

static const nr_attr *find_attr(const nr_layer_ctx *c, const char *name) {
    for (int i = 0; i < c->node->n_attrs; i++)
        if (c->node->attrs[i].name && !strcmp(c->node->attrs[i].name, name)) return &c->node->attrs[i];
    return NULL;
}

static const char *attr_type_name(nr_attr_type t) {
    static const char *names[] = {"undefined", "float", "int", "string", "tensor", "graph",
                                  "floats", "ints", "strings", "tensors", "graphs"};
    return (unsigned)t <= NR_ATTR_GRAPHS ? names[t] : "unknown";
}

static netrun_status wrong_type(const nr_layer_ctx *c, const nr_attr *a, const char *want) {
    return nr_layer_error(c, "attribute '%s' has type %s, expected %s", a->name, attr_type_name(a->type), want);
}

int nr_opset(const nr_layer_ctx *c) { return c->opset; }
const char *nr_node_name(const nr_layer_ctx *c) { return c->node->name; }
int nr_attr_has(const nr_layer_ctx *c, const char *name) { return find_attr(c, name) != NULL; }

netrun_status nr_attr_int(const nr_layer_ctx *c, const char *name, int64_t def, int64_t *out) {
    const nr_attr *a = find_attr(c, name);
    *out = def;
    if (!a) return NETRUN_OK;
    if (a->type != NR_ATTR_INT) return wrong_type(c, a, "int");
    *out = a->i;
    return NETRUN_OK;
}

netrun_status nr_attr_float(const nr_layer_ctx *c, const char *name, float def, float *out) {
    const nr_attr *a = find_attr(c, name);
    *out = def;
    if (!a) return NETRUN_OK;
    if (a->type == NR_ATTR_FLOAT) *out = a->f;
    else if (a->type == NR_ATTR_INT) *out = (float)a->i; /* some exporters write integral floats as ints */
    else return wrong_type(c, a, "float");
    return NETRUN_OK;
}

netrun_status nr_attr_string(const nr_layer_ctx *c, const char *name, const char *def, const char **out) {
    const nr_attr *a = find_attr(c, name);
    *out = def;
    if (!a) return NETRUN_OK;
    if (a->type != NR_ATTR_STRING) return wrong_type(c, a, "string");
    *out = a->s ? a->s : "";
    return NETRUN_OK;
}

netrun_status nr_attr_ints(const nr_layer_ctx *c, const char *name, const int64_t **out, int64_t *n) {
    const nr_attr *a = find_attr(c, name);
    *out = NULL;
    *n = 0;
    if (!a) return NETRUN_OK;
    if (a->type == NR_ATTR_INT) { /* a single int where a list is expected: accept as a list of one */
        *out = &a->i;
        *n = 1;
        return NETRUN_OK;
    }
    if (a->type != NR_ATTR_INTS) return wrong_type(c, a, "ints");
    *out = a->ints;
    *n = a->n;
    return NETRUN_OK;
}

netrun_status nr_attr_floats(const nr_layer_ctx *c, const char *name, const float **out, int64_t *n) {
    const nr_attr *a = find_attr(c, name);
    *out = NULL;
    *n = 0;
    if (!a) return NETRUN_OK;
    if (a->type == NR_ATTR_FLOAT) {
        *out = &a->f;
        *n = 1;
        return NETRUN_OK;
    }
    if (a->type != NR_ATTR_FLOATS) return wrong_type(c, a, "floats");
    *out = a->floats;
    *n = a->n;
    return NETRUN_OK;
}

netrun_status nr_attr_strings(const nr_layer_ctx *c, const char *name, char *const **out, int64_t *n) {
    const nr_attr *a = find_attr(c, name);
    *out = NULL;
    *n = 0;
    if (!a) return NETRUN_OK;
    if (a->type != NR_ATTR_STRINGS) return wrong_type(c, a, "strings");
    *out = a->strings;
    *n = a->n;
    return NETRUN_OK;
}

netrun_status nr_attr_tensor(const nr_layer_ctx *c, const char *name, const nr_tensor **out) {
    const nr_attr *a = find_attr(c, name);
    *out = NULL;
    if (!a) return NETRUN_OK;
    if (a->type != NR_ATTR_TENSOR) return wrong_type(c, a, "tensor");
    *out = a->t;
    return NETRUN_OK;
}

netrun_status nr_attr_graph(const nr_layer_ctx *c, const char *name, const nr_graph **out) {
    const nr_attr *a = find_attr(c, name);
    *out = NULL;
    if (!a) return NETRUN_OK;
    if (a->type != NR_ATTR_GRAPH) return wrong_type(c, a, "graph");
    *out = a->g;
    return NETRUN_OK;
}

static const netrun_value_desc absent_desc = {.name = "", .rank = -1};

int nr_in_count(const nr_layer_ctx *c) { return c->n_in; }
const netrun_value_desc *nr_in(const nr_layer_ctx *c, int i) {
    return i >= 0 && i < c->n_in ? &c->in[i] : &absent_desc;
}
/* Present: it has a shape (infer), or a name (parse, where shapes are not known yet). */
int nr_in_present(const nr_layer_ctx *c, int i) {
    return i >= 0 && i < c->n_in && (c->in[i].rank >= 0 || (c->in[i].name && *c->in[i].name));
}
const void *nr_in_value(const nr_layer_ctx *c, int i) { return nr_in_present(c, i) ? c->in[i].const_data : NULL; }

double nr_read_number(netrun_dtype t, const void *data, int64_t i) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)data)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)data)[i];
    case NETRUN_DTYPE_INT8: return ((const int8_t *)data)[i];
    case NETRUN_DTYPE_UINT8: return ((const uint8_t *)data)[i];
    case NETRUN_DTYPE_BOOL: return ((const uint8_t *)data)[i] != 0;
    case NETRUN_DTYPE_INT16: return ((const int16_t *)data)[i];
    case NETRUN_DTYPE_UINT16: return ((const uint16_t *)data)[i];
    case NETRUN_DTYPE_INT32: return ((const int32_t *)data)[i];
    case NETRUN_DTYPE_UINT32: return ((const uint32_t *)data)[i];
    case NETRUN_DTYPE_INT64: return (double)((const int64_t *)data)[i];
    case NETRUN_DTYPE_UINT64: return (double)((const uint64_t *)data)[i];
    case NETRUN_DTYPE_FLOAT16: {
        uint16_t h = ((const uint16_t *)data)[i];
        uint32_t sign = (uint32_t)(h >> 15), e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e == 0 ? m / 1024.0 / 16384.0 : e == 31 ? (m ? NAN : INFINITY) : (1.0 + m / 1024.0) * ldexp(1.0, (int)e - 15);
        return sign ? -v : v;
    }
    case NETRUN_DTYPE_BFLOAT16: {
        uint32_t bits = (uint32_t)((const uint16_t *)data)[i] << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    default: return 0;
    }
}

netrun_status nr_in_ints(const nr_layer_ctx *c, int i, int64_t *out, int64_t max, int64_t *n) {
    *n = 0;
    if (!nr_in_present(c, i)) return NETRUN_OK;
    const netrun_value_desc *d = &c->in[i];
    if (d->dtype != NETRUN_DTYPE_INT64 && d->dtype != NETRUN_DTYPE_INT32)
        return nr_layer_error(c, "input %d ('%s') must be int64 or int32, not %s", i, d->name,
                              netrun_dtype_name(d->dtype));
    if (!d->const_data) return NR_STATUS_NEED_VALUE;
    int64_t count = nr_shape_count(d->rank, d->dims);
    if (count < 0 || count > max)
        return nr_layer_error(c, "input %d ('%s') has %lld values, more than the %lld netrun handles", i,
                              d->name, (long long)count, (long long)max);
    for (int64_t k = 0; k < count; k++)
        out[k] = d->dtype == NETRUN_DTYPE_INT64 ? ((const int64_t *)d->const_data)[k]
                                                : ((const int32_t *)d->const_data)[k];
    *n = count;
    return NETRUN_OK;
}

netrun_status nr_in_scalar(const nr_layer_ctx *c, int i, double *out) {
    if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d is missing", i);
    const netrun_value_desc *d = &c->in[i];
    if (!d->const_data) return NR_STATUS_NEED_VALUE;
    if (nr_shape_count(d->rank, d->dims) < 1) return nr_layer_error(c, "input %d ('%s') is empty", i, d->name);
    *out = nr_read_number(d->dtype, d->const_data, 0);
    return NETRUN_OK;
}

int nr_out_count(const nr_layer_ctx *c) { return c->n_out; }
int nr_out_present(const nr_layer_ctx *c, int i) { return i >= 0 && i < c->n_out && c->out[i].name != NULL; }

void nr_out_set(nr_layer_ctx *c, int i, netrun_dtype dtype, int rank, const int64_t *dims) {
    if (!nr_out_present(c, i)) return;
    netrun_value_desc *o = &c->out[i];
    o->dtype = dtype;
    o->rank = rank;
    for (int k = 0; k < rank && k < NETRUN_MAX_RANK; k++) o->dims[k] = dims[k];
}

void *nr_layer_alloc(nr_layer_ctx *c, size_t bytes) {
    nr_alloc_list *l = c->allocs;
    if (!l) {
        nr_layer_error(c, "internal: no allocation list");
        return NULL;
    }
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 4;
        void **p = nr_realloc(l->ptrs, sizeof(void *) * (size_t)nc);
        if (!p) goto oom;
        l->ptrs = p;
        l->cap = nc;
    }
    void *m = nr_calloc(1, bytes);
    if (!m) goto oom;
    l->ptrs[l->n++] = m;
    return m;
oom:
    nr_layer_error(c, "out of memory");
    return NULL;
}

void nr_alloc_list_free(nr_alloc_list *l) {
    if (!l) return;
    for (int i = 0; i < l->n; i++) nr_free(l->ptrs[i]);
    nr_free(l->ptrs);
    l->ptrs = NULL;
    l->n = l->cap = 0;
}

netrun_status nr_layer_error(const nr_layer_ctx *c, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nr_error(NETRUN_ERR_INVALID_MODEL, "node '%s' (%s): %s", c->node->name, c->node->op_type, msg);
}

netrun_status nr_resolve_axis(const nr_layer_ctx *c, int64_t axis, int rank, int inclusive, int *out) {
    int64_t r = inclusive ? rank + 1 : rank;
    if (axis < -r || axis >= r)
        return nr_layer_error(c, "axis %lld is out of range for rank %d", (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + r : axis);
    return NETRUN_OK;
}

netrun_status nr_broadcast_shapes(const nr_layer_ctx *c, int ra, const int64_t *da, int rb, const int64_t *db,
                                  int *rank_out, int64_t *dims_out) {
    int r = ra > rb ? ra : rb;
    if (r > NETRUN_MAX_RANK) return nr_layer_error(c, "rank %d is over netrun's limit of %d", r, NETRUN_MAX_RANK);
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - ra) >= 0 ? da[i - (r - ra)] : 1;
        int64_t b = i - (r - rb) >= 0 ? db[i - (r - rb)] : 1;
        if (a != b && a != 1 && b != 1)
            return nr_layer_error(c, "shapes cannot broadcast: dim %d is %lld in one input and %lld in the other",
                                  i, (long long)a, (long long)b);
        dims_out[i] = a == 1 ? b : a;
    }
    *rank_out = r;
    return NETRUN_OK;
}

netrun_status nr_check_dtype(const nr_layer_ctx *c, int i, uint64_t mask) {
    const netrun_value_desc *d = nr_in(c, i);
    if (d->rank < 0) return NETRUN_OK;
    if (!(mask & NETRUN_DTYPE_BIT(d->dtype)))
        return nr_error(NETRUN_ERR_UNSUPPORTED, "node '%s' (%s): input %d ('%s') has dtype %s, which %s does not take",
                        c->node->name, c->node->op_type, i, d->name, netrun_dtype_name(d->dtype), c->node->op_type);
    return NETRUN_OK;
}

netrun_status nr_check_same_dtype(const nr_layer_ctx *c, int i, int j) {
    const netrun_value_desc *a = nr_in(c, i), *b = nr_in(c, j);
    if (a->rank < 0 || b->rank < 0 || a->dtype == b->dtype) return NETRUN_OK;
    return nr_layer_error(c, "inputs %d ('%s', %s) and %d ('%s', %s) must have the same dtype", i, a->name,
                          netrun_dtype_name(a->dtype), j, b->name, netrun_dtype_name(b->dtype));
}
