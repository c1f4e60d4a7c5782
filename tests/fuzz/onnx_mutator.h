/* A structure-aware libFuzzer mutator for ONNX models (fuzz_importer.c): byte flips mostly break the protobuf and
 * stop in the parser, so half of the mutations decode the model, change its graph (an op, an attribute value, a
 * dim, a node's inputs, an opset, a node turned into a call of a new local function, a node duplicated or
 * removed, in the main graph or any subgraph) and encode it again. Values come from the interesting edges:
 * 0, +-1, INT32/INT64 limits, NaN, +-inf, huge dims. Op names come from the runtime itself (netrun_op_get).
 * The rest of the time, and for inputs that do not decode, libFuzzer's own mutations run (with the dictionary
 * tests/fuzz/onnx.dict: op, attribute and domain names). Everything is allocated with malloc, as protobuf-c's
 * default allocator does, so that protobuf_c_message_free_unpacked frees what was changed. */
#ifndef NR_ONNX_MUTATOR_H
#define NR_ONNX_MUTATOR_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netrun.h"
#include "onnx.pb-c.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint32_t mut_rand(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static const int64_t mut_ints[] = {0, 1, -1, 2, -2, 3, 7, 255, 256, 65535, 65536, INT32_MAX, INT32_MIN,
                                   (int64_t)1 << 31, (int64_t)1 << 32, (int64_t)1 << 40, (int64_t)1 << 62,
                                   INT64_MAX, INT64_MIN, INT64_MIN + 1, -((int64_t)1 << 31), 1000000007};
static const float mut_floats[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-45f, 3.4028235e38f, -3.4028235e38f, 1e30f};

static int64_t pick_int(uint32_t *s) { return mut_ints[mut_rand(s) % (sizeof mut_ints / sizeof mut_ints[0])]; }
static float pick_float(uint32_t *s) {
    uint32_t k = mut_rand(s) % 11;
    if (k == 8) return NAN;
    if (k == 9) return INFINITY;
    if (k == 10) return -INFINITY;
    return mut_floats[k];
}

/* Every graph of the model (main graph and subgraphs, depth first), at most max. */
static int collect_graphs(Onnx__GraphProto *g, Onnx__GraphProto **out, int n, int max) {
    if (!g || n >= max) return n;
    out[n++] = g;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t a = 0; a < g->node[i]->n_attribute; a++) {
            Onnx__AttributeProto *at = g->node[i]->attribute[a];
            n = collect_graphs(at->g, out, n, max);
            for (size_t k = 0; k < at->n_graphs; k++) n = collect_graphs(at->graphs[k], out, n, max);
        }
    return n;
}

static void set_str(char **field, const char *v) {
    char *c = strdup(v);
    if (!c) return;
    free(*field);
    *field = c;
}

/* A deep copy through the wire format. */
static ProtobufCMessage *mut_copy(const ProtobufCMessage *m) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return NULL;
    protobuf_c_message_pack(m, buf);
    ProtobufCMessage *c = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
    free(buf);
    return c;
}

static int append_ptr(void ***arr, size_t *n, void *p) {
    void **a = realloc(*arr, sizeof(void *) * (*n + 1));
    if (!a) return 0;
    a[(*n)++] = p;
    *arr = a;
    return 1;
}

static void add_opset(Onnx__OperatorSetIdProto ***arr, size_t *n, const char *domain, int64_t version) {
    Onnx__OperatorSetIdProto *o = malloc(sizeof *o);
    if (!o) return;
    onnx__operator_set_id_proto__init(o);
    o->domain = strdup(domain);
    o->has_version = 1;
    o->version = version;
    if (!append_ptr((void ***)arr, n, o)) protobuf_c_message_free_unpacked(&o->base, NULL);
}

/* Make node n of g a call of a new model-local function whose body is the node itself. */
static void mut_to_function(Onnx__ModelProto *m, Onnx__NodeProto *node, uint32_t *s) {
    Onnx__FunctionProto *f = malloc(sizeof *f);
    if (!f) return;
    onnx__function_proto__init(f);
    char name[32];
    snprintf(name, sizeof name, "fz%u", mut_rand(s) % 1000);
    f->name = strdup(name);
    f->domain = strdup("fuzz.local");
    Onnx__NodeProto *body = (Onnx__NodeProto *)mut_copy(&node->base);
    f->input = calloc(node->n_input + 1, sizeof(char *));
    f->output = calloc(node->n_output + 1, sizeof(char *));
    if (!f->name || !f->domain || !body || !f->input || !f->output) {
        if (body) protobuf_c_message_free_unpacked(&body->base, NULL);
        protobuf_c_message_free_unpacked(&f->base, NULL);
        return;
    }
    for (size_t i = 0; i < node->n_input; i++) f->input[f->n_input++] = strdup(node->input[i] ? node->input[i] : "");
    for (size_t i = 0; i < node->n_output; i++) f->output[f->n_output++] = strdup(node->output[i] ? node->output[i] : "");
    /* some attributes become references to the call's (ref_attr_name) */
    for (size_t a = 0; a < body->n_attribute; a++)
        if (mut_rand(s) % 2 && body->attribute[a]->name) {
            set_str(&body->attribute[a]->ref_attr_name, body->attribute[a]->name);
            char *an = strdup(body->attribute[a]->name);
            if (an) append_ptr((void ***)&f->attribute, &f->n_attribute, an);
        }
    append_ptr((void ***)&f->node, &f->n_node, body);
    add_opset(&f->opset_import, &f->n_opset_import, "", 17);
    if (mut_rand(s) % 4 == 0) /* now and then a call of itself */
        set_str(&body->op_type, name), set_str(&body->domain, "fuzz.local");
    append_ptr((void ***)&m->functions, &m->n_functions, f);
    set_str(&node->op_type, name);
    set_str(&node->domain, "fuzz.local");
    add_opset(&m->opset_import, &m->n_opset_import, "fuzz.local", 1);
}

static void mutate_model(Onnx__ModelProto *m, uint32_t *s) {
    Onnx__GraphProto *graphs[64];
    int ng = collect_graphs(m->graph, graphs, 0, 64);
    if (!ng) return;
    Onnx__GraphProto *g = graphs[mut_rand(s) % (uint32_t)ng];
    Onnx__NodeProto *node = g->n_node ? g->node[mut_rand(s) % g->n_node] : NULL;
    switch (mut_rand(s) % 10) {
    case 0: /* another op */
        if (node && netrun_op_count() > 0) {
            const char *domain = NULL, *op = NULL;
            if (netrun_op_get((int)(mut_rand(s) % (uint32_t)netrun_op_count()), &domain, &op) == NETRUN_OK && op) {
                set_str(&node->op_type, op);
                set_str(&node->domain, domain ? domain : "");
            }
        }
        break;
    case 1: /* an attribute value at an edge */
        if (node && node->n_attribute) {
            Onnx__AttributeProto *a = node->attribute[mut_rand(s) % node->n_attribute];
            if (a->n_ints) a->ints[mut_rand(s) % a->n_ints] = pick_int(s);
            else if (a->n_floats) a->floats[mut_rand(s) % a->n_floats] = pick_float(s);
            else if (a->has_f) a->f = pick_float(s);
            else a->i = pick_int(s), a->has_i = 1;
        }
        break;
    case 2: { /* a declared dim */
        size_t n = g->n_input + g->n_value_info + g->n_output;
        if (!n) break;
        size_t k = mut_rand(s) % n;
        Onnx__ValueInfoProto *v = k < g->n_input ? g->input[k]
                                  : k < g->n_input + g->n_value_info ? g->value_info[k - g->n_input]
                                                                     : g->output[k - g->n_input - g->n_value_info];
        Onnx__TypeProto *t = v->type;
        if (t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && t->tensor_type) {
            if (mut_rand(s) % 4 == 0) t->tensor_type->elem_type = (int32_t)(mut_rand(s) % 28), t->tensor_type->has_elem_type = 1;
            Onnx__TensorShapeProto *sh = t->tensor_type->shape;
            if (sh && sh->n_dim) {
                Onnx__TensorShapeProto__Dimension *d = sh->dim[mut_rand(s) % sh->n_dim];
                if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) free(d->dim_param);
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = mut_rand(s) % 2 ? (int64_t)(mut_rand(s) % 5) : pick_int(s);
            }
        }
        break;
    }
    case 3: /* rewire an input to another value of the graph (cycles, type mismatches, self loops) */
        if (node && node->n_input && g->n_node) {
            Onnx__NodeProto *other = g->node[mut_rand(s) % g->n_node];
            if (other->n_output && other->output[0]) set_str(&node->input[mut_rand(s) % node->n_input], other->output[0]);
        }
        break;
    case 4: /* an opset at an edge */
        if (m->n_opset_import) {
            Onnx__OperatorSetIdProto *o = m->opset_import[mut_rand(s) % m->n_opset_import];
            static const int64_t versions[] = {0, 1, 6, 7, 11, 13, 17, 18, 21, 27, 28, 999, -1};
            o->version = versions[mut_rand(s) % (sizeof versions / sizeof versions[0])];
            o->has_version = 1;
            if (mut_rand(s) % 3 == 0) set_str(&o->domain, mut_rand(s) % 2 ? "ai.onnx.ml" : "ai.onnx.preview.training");
        }
        break;
    case 5: /* a node becomes a call of a local function */
        if (node) mut_to_function(m, node, s);
        break;
    case 6: /* duplicate a node (two producers, or a second consumer) */
        if (node) {
            Onnx__NodeProto *c = (Onnx__NodeProto *)mut_copy(&node->base);
            if (c && !append_ptr((void ***)&g->node, &g->n_node, c)) protobuf_c_message_free_unpacked(&c->base, NULL);
        }
        break;
    case 7: /* remove a node (a value loses its producer) */
        if (g->n_node) {
            size_t k = mut_rand(s) % g->n_node;
            protobuf_c_message_free_unpacked(&g->node[k]->base, NULL);
            memmove(&g->node[k], &g->node[k + 1], sizeof(g->node[0]) * (g->n_node - k - 1));
            g->n_node--;
        }
        break;
    case 8: /* an initializer's dims or type */
        if (g->n_initializer) {
            Onnx__TensorProto *t = g->initializer[mut_rand(s) % g->n_initializer];
            if (t->n_dims && mut_rand(s) % 2) t->dims[mut_rand(s) % t->n_dims] = pick_int(s);
            else t->data_type = (int32_t)(mut_rand(s) % 28), t->has_data_type = 1;
        }
        break;
    default: /* drop or blank a node's input or output (optional ones, required ones) */
        if (node && node->n_input && mut_rand(s) % 2) set_str(&node->input[mut_rand(s) % node->n_input], "");
        else if (node && node->n_output) set_str(&node->output[mut_rand(s) % node->n_output], "");
        break;
    }
}

/* Whether the message nests at most `left` levels deep (protobuf-c's unpack recurses per level, and this
 * mutator, unlike the importer, has no pre-scan of its own to bound that). */
static int shallow(const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *desc, int left) {
    size_t pos = 0;
    while (pos < len) {
        uint64_t key = 0, n = 0;
        int shift = 0;
        do {
            if (pos >= len || shift > 63) return 0;
            key |= (uint64_t)(p[pos] & 0x7f) << shift;
            shift += 7;
        } while (p[pos++] & 0x80);
        switch (key & 7) {
        case 0:
            while (pos < len && (p[pos] & 0x80)) pos++;
            pos++;
            break;
        case 1: pos += 8; break;
        case 5: pos += 4; break;
        case 2:
            shift = 0;
            do {
                if (pos >= len || shift > 63) return 0;
                n |= (uint64_t)(p[pos] & 0x7f) << shift;
                shift += 7;
            } while (p[pos++] & 0x80);
            if (n > len - pos) return 0;
            const ProtobufCFieldDescriptor *f = desc ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3)) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && (left <= 0 || !shallow(p + pos, (size_t)n, f->descriptor, left - 1)))
                return 0;
            pos += (size_t)n;
            break;
        default: return 0;
        }
    }
    return pos == len;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    uint32_t s = seed | 1u;
    if (mut_rand(&s) % 2 || !shallow(data, size, &onnx__model_proto__descriptor, 100))
        return LLVMFuzzerMutate(data, size, max_size);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    if (!m) return LLVMFuzzerMutate(data, size, max_size);
    int rounds = 1 + (int)(mut_rand(&s) % 3);
    for (int r = 0; r < rounds; r++) mutate_model(m, &s);
    size_t n = onnx__model_proto__get_packed_size(m);
    if (n > max_size) {
        onnx__model_proto__free_unpacked(m, NULL);
        return LLVMFuzzerMutate(data, size, max_size);
    }
    onnx__model_proto__pack(m, data);
    onnx__model_proto__free_unpacked(m, NULL);
    return n;
}

#endif
