/* The preprocess.* options: a model's float image input becomes a uint8 frame input that an ImagePreprocess node
 * (com.netrun, layers/preprocess.c) converts, so the conversion runs where the model runs (on a GPU, the frame
 * never leaves it). The model is copied at session create (the original is kept alive by the copy, whose
 * constants it borrows), so inputs, shapes and placement all see the frame input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preprocess.h"
#include "session.h"

#define SOURCE_ATTR "netrun.preprocess_from" /* on the inserted node: the original model (sub_model) */

/* "a" or "a,b,c" floats into out[3] (one value: all three). 1 when it parses. */
static int parse_floats3(const char *v, float out[3]) {
    double d[3];
    int n = 0;
    const char *p = v;
    while (n < 3) {
        char *end;
        d[n] = strtod(p, &end);
        if (end == p || !isfinite(d[n])) return 0;
        n++;
        if (!*end) break;
        if (*end != ',') return 0;
        p = end + 1;
        if (n == 3) return 0;
    }
    if (n != 1 && n != 3) return 0;
    for (int i = 0; i < 3; i++) out[i] = (float)d[n == 1 ? 0 : i];
    return 1;
}

/* "WxH" (both 1 to 65536). */
static int parse_size(const char *v, int64_t *w, int64_t *h) {
    char *end;
    long long a = strtoll(v, &end, 10);
    if (end == v || (*end != 'x' && *end != 'X')) return 0;
    const char *p = end + 1;
    long long b = strtoll(p, &end, 10);
    if (end == p || *end || a < 1 || b < 1 || a > 65536 || b > 65536) return 0;
    *w = a, *h = b;
    return 1;
}

int nr_preprocess_value_ok(const char *key, const char *value, const char **says) {
    float f[3];
    int64_t w, h;
    if (!strcmp(key, "preprocess.mean") || !strcmp(key, "preprocess.std")) {
        *says = "one number or three, comma-separated (R,G,B in the model's channel order)";
        return parse_floats3(value, f) && (strcmp(key, "preprocess.std") || (f[0] != 0 && f[1] != 0 && f[2] != 0));
    }
    if (!strcmp(key, "preprocess.size")) {
        *says = "WxH (the model input's width and height, 1 to 65536)";
        return parse_size(value, &w, &h);
    }
    *says = "a model input's name";
    return *value != 0;
}

static const char *opt(const netrun_options *o, const char *key, const char *def) {
    const char *v = nr_options_get(o, key);
    return v ? v : def;
}

static nr_attr *set_attr(nr_node *nd, int *k, const char *name, nr_attr_type type) {
    nr_attr *a = &nd->attrs[(*k)++];
    a->type = type;
    return (a->name = nr_strdup(name)) ? a : NULL;
}

static netrun_status add_floats(nr_node *nd, int *k, const char *name, const float *v, int n) {
    nr_attr *a = set_attr(nd, k, name, NR_ATTR_FLOATS);
    if (!a || !(a->floats = nr_calloc((size_t)n, sizeof(float))))
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory inserting the preprocessing");
    memcpy(a->floats, v, (size_t)n * sizeof(float));
    a->n = n;
    return NETRUN_OK;
}

static netrun_status add_float(nr_node *nd, int *k, const char *name, float v) {
    nr_attr *a = set_attr(nd, k, name, NR_ATTR_FLOAT);
    if (!a) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory inserting the preprocessing");
    a->f = v;
    return NETRUN_OK;
}

static netrun_status add_string(nr_node *nd, int *k, const char *name, const char *v) {
    nr_attr *a = set_attr(nd, k, name, NR_ATTR_STRING);
    if (!a || !(a->s = nr_strdup(v))) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory inserting the preprocessing");
    a->s_len = strlen(v);
    return NETRUN_OK;
}

static netrun_status add_int(nr_node *nd, int *k, const char *name, int64_t v) {
    nr_attr *a = set_attr(nd, k, name, NR_ATTR_INT);
    if (!a) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory inserting the preprocessing");
    a->i = v;
    return NETRUN_OK;
}

/* The copied ir: opsets with com.netrun, graph values with the input renamed, the frame input and the node. */
static netrun_status build(netrun_model *m, const netrun_options *o, int x, nr_model_ir *ir) {
    const nr_model_ir *src = m->ir;
    const nr_graph *g = src->graph;
    const nr_value *xv = &g->values[x];
    const char *name = xv->name;
    const char *format = opt(o, "preprocess.format", "rgb"), *order = opt(o, "preprocess.order", "rgb");
    const char *resize = opt(o, "preprocess.resize", "stretch");
    float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1}, scale = 1.0f, pad = 0.0f;
    if (nr_options_get(o, "preprocess.mean")) parse_floats3(nr_options_get(o, "preprocess.mean"), mean);
    if (nr_options_get(o, "preprocess.std")) parse_floats3(nr_options_get(o, "preprocess.std"), std);
    if (nr_options_get(o, "preprocess.scale")) scale = (float)strtod(nr_options_get(o, "preprocess.scale"), NULL);
    if (nr_options_get(o, "preprocess.pad")) pad = (float)strtod(nr_options_get(o, "preprocess.pad"), NULL);
    /* the output size: the input's fixed H, W, else preprocess.size */
    int64_t h = xv->dim_names[2] ? -1 : xv->dims[2], w = xv->dim_names[3] ? -1 : xv->dims[3], sw, sh;
    const char *size = nr_options_get(o, "preprocess.size");
    if (size && parse_size(size, &sw, &sh)) {
        if ((h > 0 && h != sh) || (w > 0 && w != sw))
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "preprocess.size %s: input '%s' is fixed at %lldx%lld (WxH)",
                            size, name, (long long)w, (long long)h);
        h = sh, w = sw;
    }
    int none = !strcmp(resize, "none");
    if (!none && (h <= 0 || w <= 0))
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "preprocess.input '%s': its height and width are not fixed; give "
                        "preprocess.size=WxH", name);

    ir->ir_version = src->ir_version;
    if (src->producer && !(ir->producer = nr_strdup(src->producer))) goto oom;
    if (!(ir->opsets = nr_calloc((size_t)src->n_opsets + 1, sizeof *ir->opsets))) goto oom;
    int has_netrun = 0;
    for (int i = 0; i < src->n_opsets; i++, ir->n_opsets++) {
        ir->opsets[i].version = src->opsets[i].version;
        const char *d = src->opsets[i].domain ? src->opsets[i].domain : "";
        has_netrun |= !strcmp(d, "com.netrun");
        if (!(ir->opsets[i].domain = nr_strdup(d))) goto oom;
    }
    if (!has_netrun) {
        ir->opsets[ir->n_opsets].version = 1;
        if (!(ir->opsets[ir->n_opsets++].domain = nr_strdup("com.netrun"))) goto oom;
    }
    if (!(ir->graph = nr_graph_new(g->name, NULL))) goto oom;
    nr_graph *ng = ir->graph;
    char renamed[600];
    snprintf(renamed, sizeof renamed, "%s/preprocessed", name);
    netrun_status st = nr_graph_copy_values_renamed(g, ng, x, renamed);
    if (st != NETRUN_OK) return st;
    int fr = nr_graph_value(ng, name);
    if (fr < 0) goto oom;
    nr_value *fv = &ng->values[fr], *nx = &ng->values[x];
    nx->is_graph_input = 0;
    fv->dtype = NETRUN_DTYPE_UINT8;
    fv->rank = 4;
    fv->dims[0] = nx->dims[0];
    fv->dims[1] = fv->dims[2] = -1;
    fv->dims[3] = strlen(format) == 4 ? 4 : 3;
    char hn[600], wn[600];
    snprintf(hn, sizeof hn, "%s_height", name);
    snprintf(wn, sizeof wn, "%s_width", name);
    if ((nx->dim_names[0] && !(fv->dim_names[0] = nr_strdup(nx->dim_names[0]))) || !(fv->dim_names[1] = nr_strdup(hn)) ||
        !(fv->dim_names[2] = nr_strdup(wn)))
        goto oom;
    fv->is_graph_input = 1;
    for (int i = 0; i < ng->n_inputs; i++)
        if (ng->inputs[i] == x) ng->inputs[i] = fr;
    /* the model's nodes, then the conversion */
    for (int n = 0; n < g->n_nodes; n++) {
        const nr_node *nd = &g->nodes[n];
        nr_node *nn = nr_graph_add_node(ng, nd->name, nd->op_type, nd->domain, nd->n_inputs, nd->n_outputs, nd->n_attrs);
        if (!nn) goto oom;
        nn->opset = nd->opset;
        memcpy(nn->inputs, nd->inputs, (size_t)nd->n_inputs * sizeof(int));
        memcpy(nn->outputs, nd->outputs, (size_t)nd->n_outputs * sizeof(int));
        for (int a = 0; a < nd->n_attrs; a++)
            if ((st = nr_attr_copy_borrowed(&nn->attrs[a], &nd->attrs[a])) != NETRUN_OK) return st;
    }
    char node_name[600];
    snprintf(node_name, sizeof node_name, "%s/preprocess", name);
    nr_node *pn = nr_graph_add_node(ng, node_name, "ImagePreprocess", "com.netrun", 1, 1, 11);
    if (!pn) goto oom;
    pn->opset = 1;
    pn->inputs[0] = fr;
    pn->outputs[0] = x;
    int k = 0;
    int swap = (format[0] == 'b') != (order[0] == 'b'); /* the frame's order is not the model's */
    int64_t to = nx->dtype == NETRUN_DTYPE_FLOAT16 ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT;
    if ((st = add_string(pn, &k, "resize", resize)) != NETRUN_OK ||
        (st = add_string(pn, &k, "interpolation", opt(o, "preprocess.interpolation", "linear"))) != NETRUN_OK ||
        (st = add_int(pn, &k, "swap_rb", swap)) != NETRUN_OK || (st = add_int(pn, &k, "to", to)) != NETRUN_OK ||
        (st = add_floats(pn, &k, "mean", mean, 3)) != NETRUN_OK || (st = add_floats(pn, &k, "std", std, 3)) != NETRUN_OK ||
        (st = add_float(pn, &k, "scale", scale)) != NETRUN_OK || (st = add_float(pn, &k, "pad_value", pad)) != NETRUN_OK)
        return st;
    if (!none) {
        nr_attr *a = set_attr(pn, &k, "size", NR_ATTR_INTS);
        if (!a || !(a->ints = nr_calloc(2, sizeof(int64_t)))) goto oom;
        a->ints[0] = h, a->ints[1] = w, a->n = 2;
    }
    nr_attr *mark = set_attr(pn, &k, SOURCE_ATTR, NR_ATTR_INT);
    if (!mark) goto oom;
    nr_model_retain(m);
    mark->sub_model = m;
    pn->n_attrs = k;
    return NETRUN_OK;
oom:
    return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory inserting the preprocessing");
}

netrun_status nr_preprocess_model(netrun_model *m, const netrun_options *o, netrun_model **out) {
    *out = NULL;
    const char *name = nr_options_get(o, "preprocess.input");
    if (!name || m->ir->borrowed_graph) return NETRUN_OK; /* not asked, or a control-flow body */
    const nr_graph *g = m->ir->graph;
    int x = -1;
    for (int i = 0; i < g->n_inputs; i++)
        if (!strcmp(g->values[g->inputs[i]].name, name)) x = g->inputs[i];
    if (x < 0) {
        char names[512] = "";
        for (int i = 0; i < g->n_inputs && strlen(names) < 400; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%s'", i ? ", " : "", g->values[g->inputs[i]].name);
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "preprocess.input: the model has no input '%s' (inputs: %s)", name, names);
    }
    const nr_value *xv = &g->values[x];
    if ((xv->dtype != NETRUN_DTYPE_FLOAT && xv->dtype != NETRUN_DTYPE_FLOAT16) || xv->rank != 4 ||
        (!xv->dim_names[1] && xv->dims[1] >= 0 && xv->dims[1] != 3))
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "preprocess.input '%s': a float32 or float16 [N, 3, H, W] input is "
                        "needed (it is %s of rank %d)", name, netrun_dtype_name(xv->dtype), xv->rank);
    if (xv->is_graph_output || xv->default_value)
        return nr_error(NETRUN_ERR_INVALID_ARGUMENT, "preprocess.input '%s': the input is also a graph output or has a "
                        "default value", name);
    nr_model_ir *ir = nr_calloc(1, sizeof *ir);
    if (!ir) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory inserting the preprocessing");
    netrun_status st = build(m, o, x, ir);
    if (st != NETRUN_OK) {
        nr_model_ir_free(ir);
        return st;
    }
    return nr_model_from_ir(ir, m->source ? m->source : "<memory>", out); /* takes ir, also on failure */
}
