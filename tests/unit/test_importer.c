/* ONNX importer: models built with the protobuf-c structs, packed, imported; good and malformed ones. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "status.h"

static int g_pass, g_fail;
#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        if (cond) g_pass++;                                                                          \
        else {                                                                                       \
            g_fail++;                                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                 \
        }                                                                                            \
    } while (0)

/* The call failed and the message contains every given fragment (and names the source). */
static void check_err_at(int line, netrun_status st, const char *a, const char *b) {
    const char *msg = nr_error_message();
    int ok = st != NETRUN_OK && strstr(msg, "model.onnx") && (!a || strstr(msg, a)) && (!b || strstr(msg, b));
    if (getenv("TEST_VERBOSE")) fprintf(stderr, "line %d: %s\n", line, msg);
    if (ok) g_pass++;
    else {
        g_fail++;
        fprintf(stderr, "%s:%d: expected an error with '%s' '%s'; got status %d: %s\n", __FILE__, line,
                a ? a : "", b ? b : "", (int)st, st ? msg : "(ok)");
    }
}
#define CHECK_ERR(st, a, b) check_err_at(__LINE__, (st), (a), (b))

#define APPEND(arr, n, item)                                                                         \
    do {                                                                                             \
        arr = realloc(arr, ((n) + 1) * sizeof *(arr));                                               \
        arr[(n)++] = (item);                                                                         \
    } while (0)

/* ---- builders (everything malloc'd, so protobuf_c_message_free_unpacked(m, NULL) frees it) ---- */

static char *xs(const char *s) { return s ? strdup(s) : NULL; }

static Onnx__TensorProto *mk_tensor(const char *name, int dt, int rank, const int64_t *dims) {
    Onnx__TensorProto *t = malloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = xs(name);
    t->has_data_type = 1;
    t->data_type = dt;
    t->n_dims = (size_t)rank;
    t->dims = malloc(sizeof(int64_t) * (rank ? (size_t)rank : 1));
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    return t;
}

static void set_raw(Onnx__TensorProto *t, const void *p, size_t n) {
    t->has_raw_data = 1;
    t->raw_data.len = n;
    t->raw_data.data = malloc(n ? n : 1);
    if (n) memcpy(t->raw_data.data, p, n);
}

static Onnx__TensorProto *mk_float_tensor(const char *name, int rank, const int64_t *dims, const float *v,
                                          size_t n) {
    Onnx__TensorProto *t = mk_tensor(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dims);
    set_raw(t, v, n * sizeof(float));
    return t;
}

static Onnx__AttributeProto *mk_attr(const char *name, Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = malloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = xs(name);
    a->has_type = 1;
    a->type = type;
    return a;
}

static Onnx__AttributeProto *attr_ints(const char *name, int n, const int64_t *v) {
    Onnx__AttributeProto *a = mk_attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)n;
    a->ints = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) a->ints[i] = v[i];
    return a;
}

static Onnx__NodeProto *mk_node(const char *op, const char *name, int nin, const char *const *ins, int nout,
                                const char *const *outs) {
    Onnx__NodeProto *n = malloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = xs(op);
    n->name = xs(name);
    for (int i = 0; i < nin; i++) APPEND(n->input, n->n_input, xs(ins[i]));
    for (int i = 0; i < nout; i++) APPEND(n->output, n->n_output, xs(outs[i]));
    return n;
}

/* dims[i] >= 0: fixed; params[i] != NULL: symbolic; else unknown. rank < 0: no shape. */
static Onnx__ValueInfoProto *mk_vi(const char *name, int elem, int rank, const int64_t *dims,
                                   const char *const *params) {
    Onnx__ValueInfoProto *v = malloc(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = xs(name);
    v->type = malloc(sizeof *v->type);
    onnx__type_proto__init(v->type);
    v->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    v->type->tensor_type = malloc(sizeof *v->type->tensor_type);
    onnx__type_proto__tensor__init(v->type->tensor_type);
    v->type->tensor_type->has_elem_type = 1;
    v->type->tensor_type->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *s = malloc(sizeof *s);
        onnx__tensor_shape_proto__init(s);
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = malloc(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (params && params[i]) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = xs(params[i]);
            } else if (dims && dims[i] >= 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            }
            APPEND(s->dim, s->n_dim, d);
        }
        v->type->tensor_type->shape = s;
    }
    return v;
}

static Onnx__GraphProto *mk_graph(const char *name) {
    Onnx__GraphProto *g = malloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = xs(name);
    return g;
}

static Onnx__ModelProto *mk_model(Onnx__GraphProto *g) {
    Onnx__ModelProto *m = malloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->producer_name = xs("unit-test");
    Onnx__OperatorSetIdProto *o = malloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = xs("");
    o->has_version = 1;
    o->version = 17;
    APPEND(m->opset_import, m->n_opset_import, o);
    m->graph = g;
    return m;
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *size) {
    *size = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*size ? *size : 1);
    protobuf_c_message_pack(m, buf);
    return buf;
}

static netrun_status import_msg(const Onnx__ModelProto *m, const char *base_dir, const nr_import_limits *lim,
                                nr_model_ir **ir) {
    size_t size;
    uint8_t *buf = pack(&m->base, &size);
    *ir = NULL;
    netrun_status st = nr_onnx_import(buf, size, "model.onnx", base_dir, lim, ir);
    free(buf);
    return st;
}

static void free_model(Onnx__ModelProto *m) { protobuf_c_message_free_unpacked(&m->base, NULL); }

static const nr_node *find_node(const nr_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return &g->nodes[i];
    return NULL;
}

static const nr_attr *find_attr(const nr_node *n, const char *name) {
    for (int i = 0; n && i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

static const nr_value *find_value(const nr_graph *g, const char *name) {
    int id = nr_graph_find_value(g, name);
    return id >= 0 ? &g->values[id] : NULL;
}

/* ---- the good model ---- */

/* X[batch,3,4,4] -> Conv(W,B) -> Relu -> Reshape(shape const) -> Clip(min absent) -> If(cond) -> Y */
static Onnx__ModelProto *good_model(void) {
    Onnx__GraphProto *g = mk_graph("main");
    int64_t xd[4] = {-1, 3, 4, 4};
    const char *xp[4] = {"batch", NULL, NULL, NULL};
    APPEND(g->input, g->n_input, mk_vi("X", 1, 4, xd, xp));
    int64_t wd[4] = {2, 3, 1, 1};
    float w[6] = {1, 2, 3, 4, 5, 6};
    APPEND(g->initializer, g->n_initializer, mk_float_tensor("W", 4, wd, w, 6));
    APPEND(g->input, g->n_input, mk_vi("W", 1, 4, wd, NULL)); /* input that is also an initializer */
    int64_t bd[1] = {2};
    Onnx__TensorProto *b = mk_tensor("B", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, bd);
    b->n_float_data = 2;
    b->float_data = malloc(2 * sizeof(float));
    b->float_data[0] = 0.5f;
    b->float_data[1] = -0.5f;
    APPEND(g->initializer, g->n_initializer, b);
    APPEND(g->input, g->n_input, mk_vi("unshaped", 7, -1, NULL, NULL));

    const char *cin[3] = {"X", "W", "B"}, *cout[1] = {"c"};
    Onnx__NodeProto *conv = mk_node("Conv", "conv1", 3, cin, 1, cout);
    int64_t ks[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
    APPEND(conv->attribute, conv->n_attribute, attr_ints("kernel_shape", 2, ks));
    APPEND(conv->attribute, conv->n_attribute, attr_ints("pads", 4, pads));
    Onnx__AttributeProto *ap = mk_attr("auto_pad", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    ap->has_s = 1;
    ap->s.len = 6;
    ap->s.data = (uint8_t *)xs("NOTSET");
    APPEND(conv->attribute, conv->n_attribute, ap);
    APPEND(g->node, g->n_node, conv);

    const char *rin[1] = {"c"}, *rout[1] = {"r"};
    APPEND(g->node, g->n_node, mk_node("Relu", NULL, 1, rin, 1, rout)); /* unnamed: "Relu_1" */

    const char *kout[1] = {"shape"};
    Onnx__NodeProto *k = mk_node("Constant", "const_shape", 0, NULL, 1, kout);
    int64_t shp[2] = {-1, 32};
    APPEND(k->attribute, k->n_attribute, attr_ints("value_ints", 2, shp));
    APPEND(g->node, g->n_node, k);

    const char *kfout[1] = {"alpha"};
    Onnx__NodeProto *kf = mk_node("Constant", NULL, 0, NULL, 1, kfout);
    Onnx__AttributeProto *fa = mk_attr("value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    fa->has_f = 1;
    fa->f = 0.25f;
    APPEND(kf->attribute, kf->n_attribute, fa);
    APPEND(g->node, g->n_node, kf);

    const char *shin[2] = {"r", "shape"}, *shout[1] = {"flat"};
    APPEND(g->node, g->n_node, mk_node("Reshape", "reshape", 2, shin, 1, shout));

    const char *clin[3] = {"flat", "", "alpha"}, *clout[1] = {"clipped"};
    APPEND(g->node, g->n_node, mk_node("Clip", "clip", 3, clin, 1, clout));

    /* If with two subgraphs that read an outer value; plus one attribute of every list type */
    const char *ifin[1] = {"cond"}, *ifout[1] = {"Y"};
    int64_t cd[1] = {1};
    Onnx__TensorProto *cond = mk_tensor("cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, cd);
    cond->n_int32_data = 1;
    cond->int32_data = malloc(sizeof(int32_t));
    cond->int32_data[0] = 7; /* any non-zero is true */
    APPEND(g->initializer, g->n_initializer, cond);
    Onnx__NodeProto *ifn = mk_node("If", "if1", 1, ifin, 1, ifout);
    for (int br = 0; br < 2; br++) {
        Onnx__GraphProto *sg = mk_graph(br ? "else_branch" : "then_branch");
        const char *sin[1] = {"clipped"}, *sout[1] = {br ? "e_out" : "t_out"};
        APPEND(sg->node, sg->n_node, mk_node(br ? "Neg" : "Identity", NULL, 1, sin, 1, sout));
        APPEND(sg->output, sg->n_output, mk_vi(sout[0], 1, 2, NULL, NULL));
        Onnx__AttributeProto *ga = mk_attr(sg->name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        ga->g = sg;
        APPEND(ifn->attribute, ifn->n_attribute, ga);
    }
    Onnx__AttributeProto *fl = mk_attr("floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    fl->n_floats = 3;
    fl->floats = malloc(3 * sizeof(float));
    fl->floats[0] = 1.5f, fl->floats[1] = -2.0f, fl->floats[2] = 3.25f;
    APPEND(ifn->attribute, ifn->n_attribute, fl);
    Onnx__AttributeProto *ss = mk_attr("strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    ss->n_strings = 2;
    ss->strings = malloc(2 * sizeof(ProtobufCBinaryData));
    ss->strings[0].data = (uint8_t *)xs("ab");
    ss->strings[0].len = 2;
    ss->strings[1].data = (uint8_t *)xs("");
    ss->strings[1].len = 0;
    APPEND(ifn->attribute, ifn->n_attribute, ss);
    Onnx__AttributeProto *ia = mk_attr("i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    ia->has_i = 1;
    ia->i = -((int64_t)1 << 40);
    APPEND(ifn->attribute, ifn->n_attribute, ia);
    Onnx__AttributeProto *ta = mk_attr("t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    int64_t td[1] = {3};
    ta->t = mk_tensor("", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, td);
    ta->t->n_int64_data = 3;
    ta->t->int64_data = malloc(3 * sizeof(int64_t));
    ta->t->int64_data[0] = 1, ta->t->int64_data[1] = INT64_MIN, ta->t->int64_data[2] = INT64_MAX;
    APPEND(ifn->attribute, ifn->n_attribute, ta);
    Onnx__AttributeProto *tsa = mk_attr("ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
    float one = 1.0f;
    APPEND(tsa->tensors, tsa->n_tensors, mk_float_tensor("t0", 0, NULL, &one, 1));
    APPEND(tsa->tensors, tsa->n_tensors, mk_float_tensor("t1", 1, (int64_t[]){1}, &one, 1));
    APPEND(ifn->attribute, ifn->n_attribute, tsa);
    Onnx__AttributeProto *gsa = mk_attr("gs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
    APPEND(gsa->graphs, gsa->n_graphs, mk_graph("g0"));
    APPEND(ifn->attribute, ifn->n_attribute, gsa);
    APPEND(g->node, g->n_node, ifn);

    int64_t yd[2] = {-1, 32};
    const char *yp[2] = {"batch", NULL};
    APPEND(g->output, g->n_output, mk_vi("Y", 1, 2, yd, yp));
    APPEND(g->value_info, g->n_value_info, mk_vi("r", 1, 4, (int64_t[]){-1, 2, 4, 4}, xp));
    return mk_model(g);
}

static void test_good(void) {
    Onnx__ModelProto *m = good_model();
    nr_model_ir *ir;
    netrun_status st = import_msg(m, NULL, NULL, &ir);
    CHECK(st == NETRUN_OK);
    if (st) {
        fprintf(stderr, "good model failed: %s\n", nr_error_message());
        free_model(m);
        return;
    }
    CHECK(ir->ir_version == 8);
    CHECK(ir->n_opsets == 1 && strcmp(ir->opsets[0].domain, "") == 0 && ir->opsets[0].version == 17);
    CHECK(nr_model_opset(ir, "ai.onnx") == 17);
    CHECK(strcmp(ir->producer, "unit-test") == 0);
    const nr_graph *g = ir->graph;
    CHECK(strcmp(g->name, "main") == 0);
    /* Constant nodes became values: 5 nodes remain */
    CHECK(g->n_nodes == 5);
    CHECK(find_node(g, "const_shape") == NULL);
    /* inputs: X, W (an initializer listed as an input: from IR 4 on, an input with a default) and unshaped */
    CHECK(g->n_inputs == 3);
    const nr_value *x = find_value(g, "X");
    CHECK(x && x->is_graph_input && x->rank == 4 && x->dtype == NETRUN_DTYPE_FLOAT);
    CHECK(x && x->dims[0] == -1 && x->dim_names[0] && strcmp(x->dim_names[0], "batch") == 0);
    CHECK(x && x->dims[1] == 3 && x->dims[3] == 4 && x->dim_names[1] == NULL);
    const nr_value *u = find_value(g, "unshaped");
    CHECK(u && u->rank == -1 && u->dtype == NETRUN_DTYPE_INT64 && u->is_graph_input);
    const nr_value *w = find_value(g, "W");
    CHECK(w && !w->constant && w->default_value && w->is_graph_input && w->producer == -1);
    CHECK(w && w->default_value && w->default_value->rank == 4 && w->default_value->dims[0] == 2 &&
          w->default_value->nbytes == 24);
    CHECK(w && w->default_value && ((float *)w->default_value->data)[5] == 6.0f && w->rank == 4 &&
          w->dtype == NETRUN_DTYPE_FLOAT);
    const nr_value *b = find_value(g, "B");
    CHECK(b && b->constant && ((float *)b->constant->data)[1] == -0.5f);
    const nr_value *cond = find_value(g, "cond");
    CHECK(cond && cond->constant && cond->constant->rank == 0 && ((uint8_t *)cond->constant->data)[0] == 1);
    const nr_value *shape = find_value(g, "shape");
    CHECK(shape && shape->constant && shape->constant->dtype == NETRUN_DTYPE_INT64 && shape->constant->rank == 1);
    CHECK(shape && shape->constant->dims[0] == 2 && ((int64_t *)shape->constant->data)[1] == 32);
    const nr_value *alpha = find_value(g, "alpha");
    CHECK(alpha && alpha->constant && alpha->constant->rank == 0 && *(float *)alpha->constant->data == 0.25f);

    const nr_node *conv = find_node(g, "conv1");
    CHECK(conv && strcmp(conv->op_type, "Conv") == 0 && strcmp(conv->domain, "") == 0 && conv->opset == 17);
    CHECK(conv && conv->n_inputs == 3 && conv->inputs[0] == nr_graph_find_value(g, "X"));
    const nr_attr *ks = find_attr(conv, "kernel_shape");
    CHECK(ks && ks->type == NR_ATTR_INTS && ks->n == 2 && ks->ints[1] == 1);
    const nr_attr *ap = find_attr(conv, "auto_pad");
    CHECK(ap && ap->type == NR_ATTR_STRING && ap->s_len == 6 && strcmp(ap->s, "NOTSET") == 0);
    const nr_node *relu = find_node(g, "Relu_1");
    CHECK(relu && relu->n_outputs == 1 && g->values[relu->outputs[0]].producer == (int)(relu - g->nodes));
    const nr_node *clip = find_node(g, "clip");
    CHECK(clip && clip->n_inputs == 3 && clip->inputs[1] == -1 && clip->inputs[2] == nr_graph_find_value(g, "alpha"));
    const nr_value *r = find_value(g, "r");
    CHECK(r && r->rank == 4 && r->dims[1] == 2 && r->dim_names[0] && strcmp(r->dim_names[0], "batch") == 0);

    const nr_node *ifn = find_node(g, "if1");
    CHECK(ifn && ifn->n_attrs == 8);
    const nr_attr *tb = find_attr(ifn, "then_branch");
    CHECK(tb && tb->type == NR_ATTR_GRAPH && tb->g && tb->g->parent == g && tb->g->n_nodes == 1);
    CHECK(tb && tb->g && strcmp(tb->g->nodes[0].name, "Identity_0") == 0 && tb->g->n_outputs == 1);
    const nr_attr *eb = find_attr(ifn, "else_branch");
    CHECK(eb && eb->g && strcmp(eb->g->nodes[0].op_type, "Neg") == 0);
    const nr_attr *fl = find_attr(ifn, "floats");
    CHECK(fl && fl->type == NR_ATTR_FLOATS && fl->n == 3 && fl->floats[2] == 3.25f);
    const nr_attr *ss = find_attr(ifn, "strings");
    CHECK(ss && ss->type == NR_ATTR_STRINGS && ss->n == 2 && strcmp(ss->strings[0], "ab") == 0 &&
          ss->strings[1][0] == '\0');
    const nr_attr *ia = find_attr(ifn, "i");
    CHECK(ia && ia->type == NR_ATTR_INT && ia->i == -((int64_t)1 << 40));
    const nr_attr *ta = find_attr(ifn, "t");
    CHECK(ta && ta->type == NR_ATTR_TENSOR && ta->t && ta->t->dtype == NETRUN_DTYPE_INT64 &&
          ((int64_t *)ta->t->data)[1] == INT64_MIN && ((int64_t *)ta->t->data)[2] == INT64_MAX);
    const nr_attr *tsa = find_attr(ifn, "ts");
    CHECK(tsa && tsa->type == NR_ATTR_TENSORS && tsa->n == 2 && tsa->tensors[1]->rank == 1 &&
          tsa->tensors[0]->rank == 0);
    const nr_attr *gsa = find_attr(ifn, "gs");
    CHECK(gsa && gsa->type == NR_ATTR_GRAPHS && gsa->n == 1 && gsa->graphs[0]->parent == g);
    const nr_value *y = find_value(g, "Y");
    CHECK(g->n_outputs == 1 && y && y->is_graph_output && y->rank == 2 && y->dims[1] == 32 && y->dims[0] == -1);
    CHECK(y && y->dim_names[0] && strcmp(y->dim_names[0], "batch") == 0);
    nr_model_ir_free(ir);
    free_model(m);
}

/* ---- tensor encodings ---- */

static nr_tensor *import_one_initializer(Onnx__TensorProto *t, netrun_status *st, nr_model_ir **irp) {
    Onnx__GraphProto *g = mk_graph("g");
    APPEND(g->initializer, g->n_initializer, t);
    Onnx__ModelProto *m = mk_model(g);
    *st = import_msg(m, NULL, NULL, irp);
    free_model(m);
    if (*st) return NULL;
    int id = nr_graph_find_value((*irp)->graph, "t");
    return id >= 0 ? (*irp)->graph->values[id].constant : NULL;
}

static void test_encodings(void) {
    netrun_status st;
    nr_model_ir *ir;
    /* int4 raw: two per byte, low nibble first, sign-extended; odd count */
    int64_t d3[1] = {3};
    Onnx__TensorProto *t = mk_tensor("t", ONNX__TENSOR_PROTO__DATA_TYPE__INT4, 1, d3);
    uint8_t packed[2] = {0xe1, 0x07}; /* 1, -2, 7 */
    set_raw(t, packed, 2);
    nr_tensor *nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 3);
    if (nt) {
        int8_t *v = nt->data;
        CHECK(v[0] == 1 && v[1] == -2 && v[2] == 7);
    }
    nr_model_ir_free(ir);
    /* uint4 in int32_data */
    t = mk_tensor("t", ONNX__TENSOR_PROTO__DATA_TYPE__UINT4, 1, d3);
    t->n_int32_data = 2;
    t->int32_data = malloc(2 * sizeof(int32_t));
    t->int32_data[0] = 0xe1, t->int32_data[1] = 0x07;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && ((uint8_t *)nt->data)[1] == 14 && ((uint8_t *)nt->data)[2] == 7);
    nr_model_ir_free(ir);
    /* The types newer than the generated enum (23..26) by number. int2 raw: four per byte, lowest bits
     * first, sign-extended; 5 elements need 2 bytes, the padding bits of the last one are ignored. */
    int64_t d5[1] = {5};
    t = mk_tensor("t", NETRUN_DTYPE_INT2, 1, d5);
    uint8_t p2[2] = {0xb4, 0xfd}; /* 0b10110100: 0, 1, -1, -2; then 0b01 = 1 under padding 0b111111 */
    set_raw(t, p2, 2);
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 5 && nt->dtype == NETRUN_DTYPE_INT2);
    if (nt) {
        int8_t *v = nt->data;
        CHECK(v[0] == 0 && v[1] == 1 && v[2] == -1 && v[3] == -2 && v[4] == 1);
    }
    nr_model_ir_free(ir);
    /* uint2 raw with a wrong byte count: 5 elements need 2 bytes, not 5 */
    t = mk_tensor("t", NETRUN_DTYPE_UINT2, 1, d5);
    uint8_t p5[5] = {0};
    set_raw(t, p5, 5);
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_ERR_INVALID_MODEL && !nt);
    CHECK_ERR(st, "uint2", "need 2");
    if (!st) nr_model_ir_free(ir);
    /* uint2 in int32_data: each entry one packed byte of four */
    t = mk_tensor("t", NETRUN_DTYPE_UINT2, 1, d5);
    t->n_int32_data = 2;
    t->int32_data = malloc(2 * sizeof(int32_t));
    t->int32_data[0] = 0xb4, t->int32_data[1] = 0x03;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 5);
    if (nt) {
        uint8_t *v = nt->data;
        CHECK(v[0] == 0 && v[1] == 1 && v[2] == 3 && v[3] == 2 && v[4] == 3);
    }
    nr_model_ir_free(ir);
    /* float4e2m1 raw: two codes per byte, kept as codes (sign bit 3 not extended) */
    t = mk_tensor("t", NETRUN_DTYPE_FLOAT4E2M1, 1, d3);
    uint8_t p4[2] = {0x9f, 0x07}; /* codes 15 (-6), 9 (-0.5), 7 (6) */
    set_raw(t, p4, 2);
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 3);
    if (nt) {
        uint8_t *v = nt->data;
        CHECK(v[0] == 15 && v[1] == 9 && v[2] == 7);
    }
    nr_model_ir_free(ir);
    /* float4e2m1 in int32_data: two codes per entry; one entry too many is an error */
    t = mk_tensor("t", NETRUN_DTYPE_FLOAT4E2M1, 1, d3);
    t->n_int32_data = 3;
    t->int32_data = malloc(3 * sizeof(int32_t));
    t->int32_data[0] = 0x21, t->int32_data[1] = 0x0c, t->int32_data[2] = 0;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_ERR_INVALID_MODEL && !nt);
    CHECK_ERR(st, "int32_data has 3 entries", "float4e2m1 need 2");
    if (!st) nr_model_ir_free(ir);
    t = mk_tensor("t", NETRUN_DTYPE_FLOAT4E2M1, 1, d3);
    t->n_int32_data = 2;
    t->int32_data = malloc(2 * sizeof(int32_t));
    t->int32_data[0] = 0x21, t->int32_data[1] = 0x0c;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && ((uint8_t *)nt->data)[0] == 1 && ((uint8_t *)nt->data)[1] == 2 &&
          ((uint8_t *)nt->data)[2] == 12);
    nr_model_ir_free(ir);
    /* float8e8m0: one byte per element, raw and in int32_data */
    t = mk_tensor("t", NETRUN_DTYPE_FLOAT8E8M0, 1, d3);
    uint8_t pe[3] = {0, 127, 255};
    set_raw(t, pe, 3);
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 3 && ((uint8_t *)nt->data)[1] == 127 &&
          ((uint8_t *)nt->data)[2] == 255);
    nr_model_ir_free(ir);
    t = mk_tensor("t", NETRUN_DTYPE_FLOAT8E8M0, 1, d3);
    t->n_int32_data = 3;
    t->int32_data = malloc(3 * sizeof(int32_t));
    t->int32_data[0] = 0, t->int32_data[1] = 130, t->int32_data[2] = 254;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && ((uint8_t *)nt->data)[1] == 130 && ((uint8_t *)nt->data)[2] == 254);
    nr_model_ir_free(ir);
    /* int8 / float16 / int16 in int32_data */
    int types[3] = {ONNX__TENSOR_PROTO__DATA_TYPE__INT8, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16,
                    ONNX__TENSOR_PROTO__DATA_TYPE__INT16};
    for (int k = 0; k < 3; k++) {
        t = mk_tensor("t", types[k], 1, d3);
        t->n_int32_data = 3;
        t->int32_data = malloc(3 * sizeof(int32_t));
        t->int32_data[0] = -5, t->int32_data[1] = 0x3c00, t->int32_data[2] = 100;
        nt = import_one_initializer(t, &st, &ir);
        CHECK(st == NETRUN_OK && nt);
        if (nt && k == 0) CHECK(((int8_t *)nt->data)[0] == -5 && nt->nbytes == 3);
        if (nt && k == 1) CHECK(((uint16_t *)nt->data)[1] == 0x3c00 && nt->nbytes == 6);
        if (nt && k == 2) CHECK(((int16_t *)nt->data)[2] == 100 && ((int16_t *)nt->data)[0] == -5);
        nr_model_ir_free(ir);
    }
    /* uint32 in uint64_data, double in double_data */
    t = mk_tensor("t", ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, 1, d3);
    t->n_uint64_data = 3;
    t->uint64_data = malloc(3 * sizeof(uint64_t));
    t->uint64_data[0] = 1, t->uint64_data[1] = 4000000000u, t->uint64_data[2] = 3;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 12 && ((uint32_t *)nt->data)[1] == 4000000000u);
    nr_model_ir_free(ir);
    t = mk_tensor("t", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, 1, d3);
    t->n_double_data = 3;
    t->double_data = malloc(3 * sizeof(double));
    t->double_data[0] = 0.1, t->double_data[1] = -1e300, t->double_data[2] = 3;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && ((double *)nt->data)[1] == -1e300);
    nr_model_ir_free(ir);
    /* strings */
    int64_t d2[1] = {2};
    t = mk_tensor("t", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, d2);
    t->n_string_data = 2;
    t->string_data = malloc(2 * sizeof(ProtobufCBinaryData));
    t->string_data[0].data = (uint8_t *)xs("hello"), t->string_data[0].len = 5;
    t->string_data[1].data = (uint8_t *)xs("x"), t->string_data[1].len = 1;
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->dtype == NETRUN_DTYPE_STRING);
    if (nt) CHECK(strcmp(((char **)nt->data)[0], "hello") == 0 && strcmp(((char **)nt->data)[1], "x") == 0);
    nr_model_ir_free(ir);
    /* a big raw tensor (taken over from the decoder without a copy) keeps its bytes */
    int64_t dbig[2] = {64, 1000};
    float *big = malloc(64000 * sizeof(float));
    for (int i = 0; i < 64000; i++) big[i] = (float)i * 0.5f;
    t = mk_float_tensor("t", 2, dbig, big, 64000);
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 256000 && nt->owns_data);
    if (nt) CHECK(memcmp(nt->data, big, 256000) == 0 && (uintptr_t)nt->data % 64 == 0);
    free(big);
    nr_model_ir_free(ir);
    /* empty tensor: dims [0, 5] */
    int64_t d0[2] = {0, 5};
    t = mk_tensor("t", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d0);
    nt = import_one_initializer(t, &st, &ir);
    CHECK(st == NETRUN_OK && nt && nt->nbytes == 0 && nt->dims[0] == 0);
    nr_model_ir_free(ir);
}

/* ---- malformed tensors ---- */

static void test_bad_tensors(void) {
    netrun_status st;
    nr_model_ir *ir;
    int64_t wd[4] = {64, 3, 7, 7};
    Onnx__TensorProto *t = mk_tensor("conv1.weight", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, wd);
    uint8_t junk[100] = {0};
    set_raw(t, junk, 100);
    Onnx__GraphProto *g = mk_graph("g");
    APPEND(g->initializer, g->n_initializer, t);
    Onnx__ModelProto *m = mk_model(g);
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "initializer 'conv1.weight': raw_data has 100 bytes, dims [64,3,7,7] of float need 37632",
              NULL);
    CHECK(ir == NULL);
    /* negative dim */
    t->dims[1] = -3;
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "conv1.weight", "negative");
    /* element count overflow */
    t->dims[0] = INT64_MAX / 2, t->dims[1] = INT64_MAX / 2;
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "conv1.weight", "overflow");
    /* over the size limit */
    t->dims[0] = 1 << 20, t->dims[1] = 1 << 12;
    nr_import_limits lim = {1 << 20, 4, 0};
    st = import_msg(m, NULL, &lim, &ir);
    CHECK_ERR(st, "conv1.weight", "limit");
    /* wrong typed field */
    t->dims[0] = 1, t->dims[1] = 1, t->dims[2] = 1, t->dims[3] = 2;
    t->has_raw_data = 0;
    t->n_int64_data = 2;
    t->int64_data = calloc(2, sizeof(int64_t));
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "conv1.weight", "int64_data");
    /* typed count mismatch */
    free(t->int64_data);
    t->int64_data = NULL, t->n_int64_data = 0;
    t->n_float_data = 3;
    t->float_data = calloc(3, sizeof(float));
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "float_data has 3 entries", "need 2");
    /* unknown / unset data type */
    t->data_type = 99;
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "conv1.weight", "data_type 99");
    t->has_data_type = 0;
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "conv1.weight", "data_type is not set");
    /* rank over 8 */
    t->has_data_type = 1, t->data_type = 1;
    free(t->dims);
    t->n_dims = 9;
    t->dims = calloc(9, sizeof(int64_t));
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "conv1.weight", "rank 9");
    free_model(m);
}

/* ---- malformed graphs ---- */

static void test_bad_graphs(void) {
    netrun_status st;
    nr_model_ir *ir;
    /* no graph */
    Onnx__ModelProto *m = mk_model(NULL);
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "no graph", NULL);
    free_model(m);
    /* Constant with sparse_value */
    Onnx__GraphProto *g = mk_graph("g");
    const char *out1[1] = {"k"};
    Onnx__NodeProto *k = mk_node("Constant", "kk", 0, NULL, 1, out1);
    Onnx__AttributeProto *sa = mk_attr("sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
    sa->sparse_tensor = malloc(sizeof *sa->sparse_tensor);
    onnx__sparse_tensor_proto__init(sa->sparse_tensor);
    APPEND(k->attribute, k->n_attribute, sa);
    APPEND(g->node, g->n_node, k);
    m = mk_model(g);
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "node 'kk' (Constant)", "sparse");
    free_model(m);
    /* a value produced twice */
    g = mk_graph("g");
    const char *in1[1] = {"x"}, *o1[1] = {"y"};
    APPEND(g->input, g->n_input, mk_vi("x", 1, 1, (int64_t[]){2}, NULL));
    APPEND(g->node, g->n_node, mk_node("Relu", "a", 1, in1, 1, o1));
    APPEND(g->node, g->n_node, mk_node("Relu", "b", 1, in1, 1, o1));
    m = mk_model(g);
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "node 'b' (Relu)", "'y'");
    /* negative dim in a graph input */
    g->node[1]->output[0][0] = 'z';
    g->input[0]->type->tensor_type->shape->dim[0]->dim_value = -4;
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "graph input 'x'", "negative");
    g->input[0]->type->tensor_type->shape->dim[0]->dim_value = 4;
    /* attribute of an unknown type, and one that is duplicated */
    Onnx__AttributeProto *bad = mk_attr("weird", (Onnx__AttributeProto__AttributeType)42);
    APPEND(g->node[0]->attribute, g->node[0]->n_attribute, bad);
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "node 'a' (Relu): attribute 'weird'", "unknown attribute type 42");
    bad->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    APPEND(g->node[0]->attribute, g->node[0]->n_attribute, attr_ints("weird", 0, NULL));
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "node 'a' (Relu)", "given twice");
    /* TENSOR attribute without a tensor */
    g->node[0]->attribute[1]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    free(g->node[0]->attribute[1]->name);
    g->node[0]->attribute[1]->name = xs("value");
    st = import_msg(m, NULL, NULL, &ir);
    CHECK_ERR(st, "attribute 'value'", "no tensor");
    free_model(m);
}

/* Nested If nodes, `levels` deep. */
static Onnx__GraphProto *nested_graph(int levels) {
    Onnx__GraphProto *g = mk_graph("level");
    if (levels > 0) {
        const char *in[1] = {"c"}, *out[1] = {"o"};
        Onnx__NodeProto *n = mk_node("If", NULL, 1, in, 1, out);
        Onnx__AttributeProto *a = mk_attr("then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        a->g = nested_graph(levels - 1);
        APPEND(n->attribute, n->n_attribute, a);
        APPEND(g->node, g->n_node, n);
    }
    return g;
}

static void test_depth(void) {
    nr_model_ir *ir;
    Onnx__ModelProto *m = mk_model(nested_graph(5));
    CHECK(import_msg(m, NULL, NULL, &ir) == NETRUN_OK);
    const nr_graph *g = ir ? ir->graph : NULL;
    int depth = 0;
    while (g && g->n_nodes) {
        g = g->nodes[0].attrs[0].g;
        depth++;
    }
    CHECK(depth == 5);
    nr_model_ir_free(ir);
    nr_import_limits lim = NR_IMPORT_LIMITS_DEFAULT;
    lim.max_graph_depth = 4;
    CHECK_ERR(import_msg(m, NULL, &lim, &ir), "nested deeper than the limit of 4", "If_0");
    free_model(m);
    m = mk_model(nested_graph(40)); /* default limit 32 */
    CHECK_ERR(import_msg(m, NULL, NULL, &ir), "nested deeper", NULL);
    free_model(m);

    /* 100000 nested TypeProto.sequence_type on the wire: refused before protobuf-c recurses. Built back to
     * front: TypeProto{sequence_type(4){elem_type(1){TypeProto...}}} inside
     * ModelProto{graph(7){input(11){ValueInfo{type(2){...}}}}} */
    size_t levels = 100000, cap = levels * 16 + 64, pos = cap;
    uint8_t *buf = malloc(cap);
    for (size_t i = 0; i < 2 * levels + 3; i++) {
        uint8_t key = i < 2 * levels ? (i % 2 == 0 ? (1 << 3 | 2) : (4 << 3 | 2))
                      : i == 2 * levels ? (2 << 3 | 2) : i == 2 * levels + 1 ? (11 << 3 | 2) : (7 << 3 | 2);
        uint8_t hdr[12];
        size_t h = 0, v = cap - pos;
        hdr[h++] = key;
        do {
            hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            v >>= 7;
        } while (v);
        pos -= h;
        memcpy(buf + pos, hdr, h);
    }
    size_t len = cap - pos;
    memmove(buf, buf + pos, len);
    CHECK_ERR(nr_onnx_import(buf, len, "model.onnx", NULL, NULL, &ir), "nested too deeply", NULL);
    free(buf);
}

/* ---- hostile bytes ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int try_bytes(const uint8_t *buf, size_t len) {
    nr_model_ir *ir = NULL;
    netrun_status st = nr_onnx_import(buf, len, "model.onnx", NULL, NULL, &ir);
    if (st == NETRUN_OK) {
        nr_model_ir_free(ir);
        return 1;
    }
    return ir == NULL && strstr(nr_error_message(), "model.onnx") != NULL;
}

static void test_hostile(void) {
    Onnx__ModelProto *m = good_model();
    size_t size;
    uint8_t *good = pack(&m->base, &size);
    free_model(m);
    int ok = 1, failures = 0;
    /* every truncation */
    for (size_t n = 0; n < size; n++) {
        nr_model_ir *ir = NULL;
        netrun_status st = nr_onnx_import(good, n, "model.onnx", NULL, NULL, &ir);
        if (st == NETRUN_OK) nr_model_ir_free(ir);
        else {
            failures++;
            if (!strstr(nr_error_message(), "model.onnx")) ok = 0;
        }
    }
    CHECK(ok);
    CHECK(failures > (int)size / 2); /* most prefixes are not valid models */
    nr_model_ir *ir = NULL;
    CHECK_ERR(nr_onnx_import(good, size / 2, "model.onnx", NULL, NULL, &ir), "not a valid ONNX model", NULL);
    /* random bytes and mutations of the good model */
    uint8_t *buf = malloc(size + 64);
    for (int iter = 0; iter < 3000 && ok; iter++) {
        size_t len;
        if (iter < 500) {
            len = (size_t)(rng() % 200);
            for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rng();
        } else {
            len = size;
            memcpy(buf, good, size);
            int flips = 1 + (int)(rng() % 4);
            for (int f = 0; f < flips; f++) buf[rng() % size] ^= (uint8_t)(1u << (rng() % 8));
            if (rng() % 4 == 0) buf[rng() % size] = (uint8_t)rng();
        }
        if (!try_bytes(buf, len)) ok = 0;
    }
    CHECK(ok);
    free(buf);
    /* allocation failures at every step of a good import: an error, never a crash or leak */
    ok = 1;
    int saw_oom = 0, n_ok = 0;
    for (long k = 1; k < 5000 && !n_ok; k++) {
        nr_fault_fail_allocation(k);
        ir = NULL;
        netrun_status st = nr_onnx_import(good, size, "model.onnx", NULL, NULL, &ir);
        nr_fault_fail_allocation(0);
        if (st == NETRUN_OK) {
            nr_model_ir_free(ir);
            n_ok++;
        } else if (st == NETRUN_ERR_OUT_OF_MEMORY) {
            saw_oom++;
        } else {
            fprintf(stderr, "fault %ld: unexpected status %d: %s\n", k, (int)st, nr_error_message());
            ok = 0;
        }
    }
    CHECK(ok && saw_oom > 50 && n_ok > 0);
    free(good);
    /* empty and NULL */
    CHECK_ERR(nr_onnx_import("", 0, "model.onnx", NULL, NULL, &ir), "empty", NULL);
}

/* ---- external data ---- */

static char tmpdir[256];

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static Onnx__ModelProto *ext_model(const char *location, const char *offset, const char *length, int n) {
    Onnx__GraphProto *g = mk_graph("g");
    int64_t d[1] = {n};
    Onnx__TensorProto *t = mk_tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {location, offset, length};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        Onnx__StringStringEntryProto *e = malloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = xs(keys[i]);
        e->value = xs(vals[i]);
        APPEND(t->external_data, t->n_external_data, e);
    }
    APPEND(g->initializer, g->n_initializer, t);
    return mk_model(g);
}

static void test_external(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/netrun_import_test_%d", (int)getpid());
    char model_dir[300], path[400];
    snprintf(model_dir, sizeof model_dir, "%s/model", tmpdir);
    mkdir(tmpdir, 0700);
    mkdir(model_dir, 0700);
    float data[16];
    for (int i = 0; i < 16; i++) data[i] = (float)i + 0.5f;
    snprintf(path, sizeof path, "%s/weights.bin", model_dir);
    write_file(path, data, sizeof data);
    snprintf(path, sizeof path, "%s/outside.bin", tmpdir);
    write_file(path, data, sizeof data);
    snprintf(path, sizeof path, "%s/link.bin", model_dir);
    char target[400];
    snprintf(target, sizeof target, "%s/outside.bin", tmpdir);
    CHECK(symlink(target, path) == 0);

    nr_model_ir *ir;
    Onnx__ModelProto *m = ext_model("weights.bin", "16", "32", 8);
    netrun_status st = import_msg(m, model_dir, NULL, &ir);
    CHECK(st == NETRUN_OK);
    if (!st) {
        const nr_value *w = find_value(ir->graph, "w");
        CHECK(w && w->constant && w->constant->owns_data == 0 && ir->n_mappings == 1);
        CHECK(w && w->constant && ((float *)w->constant->data)[0] == 4.5f && ((float *)w->constant->data)[7] == 11.5f);
        nr_model_ir_free(ir);
    } else {
        fprintf(stderr, "external: %s\n", nr_error_message());
    }
    free_model(m);
    /* unaligned offset: copied, still right */
    m = ext_model("weights.bin", "2", NULL, 3);
    st = import_msg(m, model_dir, NULL, &ir);
    CHECK(st == NETRUN_OK);
    if (!st) {
        const nr_value *w = find_value(ir->graph, "w");
        float expect;
        memcpy(&expect, (const uint8_t *)data + 2, 4);
        CHECK(w && w->constant->owns_data == 1 && memcmp(w->constant->data, &expect, 4) == 0);
        nr_model_ir_free(ir);
    }
    free_model(m);
    m = ext_model("../outside.bin", NULL, NULL, 4);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "initializer 'w'", "outside the model's folder");
    free_model(m);
    m = ext_model("link.bin", NULL, NULL, 4);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "link.bin", "outside");
    free_model(m);
    m = ext_model(target, NULL, NULL, 4);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "absolute path", NULL);
    free_model(m);
    m = ext_model("weights.bin", "40", NULL, 8);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "initializer 'w'", "past the end");
    free_model(m);
    m = ext_model("weights.bin", "18446744073709551615", NULL, 8);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "past the end", NULL);
    free_model(m);
    m = ext_model("weights.bin", "-1", NULL, 8);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "offset '-1'", NULL);
    free_model(m);
    m = ext_model("weights.bin", NULL, "12", 8);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "length 12", NULL);
    free_model(m);
    m = ext_model("missing.bin", NULL, NULL, 8);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "missing.bin", NULL);
    free_model(m);
    m = ext_model("weights.bin", NULL, NULL, 8);
    CHECK_ERR(import_msg(m, NULL, NULL, &ir), "not allowed", NULL);
    free_model(m);
    m = ext_model(NULL, NULL, NULL, 8);
    CHECK_ERR(import_msg(m, model_dir, NULL, &ir), "no 'location'", NULL);
    free_model(m);

    snprintf(path, sizeof path, "%s/link.bin", model_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/weights.bin", model_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/outside.bin", tmpdir);
    unlink(path);
    rmdir(model_dir);
    rmdir(tmpdir);
}

/* ---- nr_onnx_parse_tensor ---- */

static void test_parse_tensor(void) {
    int64_t d[2] = {2, 2};
    Onnx__TensorProto *t = mk_tensor("input_0", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, d);
    int64_t v[4] = {1, -2, 3, -4};
    set_raw(t, v, sizeof v);
    size_t size;
    uint8_t *buf = pack(&t->base, &size);
    nr_tensor *nt = NULL;
    char *name = NULL;
    netrun_status st = nr_onnx_parse_tensor(buf, size, "model.onnx", &nt, &name);
    CHECK(st == NETRUN_OK && nt && name && strcmp(name, "input_0") == 0);
    CHECK(nt && nt->rank == 2 && nt->dtype == NETRUN_DTYPE_INT64 && ((int64_t *)nt->data)[3] == -4);
    nr_tensor_free(nt);
    nr_free(name);
    CHECK_ERR(nr_onnx_parse_tensor(buf, size - 3, "model.onnx", &nt, &name), NULL, NULL);
    CHECK(nt == NULL && name == NULL);
    free(buf);
    protobuf_c_message_free_unpacked(&t->base, NULL);
}

int main(void) {
    test_good();
    test_encodings();
    test_bad_tensors();
    test_bad_graphs();
    test_depth();
    test_external();
    test_parse_tensor();
    test_hostile();
    printf("test_importer: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
