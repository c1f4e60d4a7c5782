/* netrun's own graph IR: what a model is once imported. No protobuf struct survives the import. */
#ifndef NR_IR_H
#define NR_IR_H

#include <stddef.h>
#include <stdint.h>

#include "netrun.h"
#include "strmap.h"

struct nr_layer;
struct nr_graph;

/* ONNX AttributeProto.AttributeType numbering. */
typedef enum nr_attr_type {
    NR_ATTR_UNDEFINED = 0,
    NR_ATTR_FLOAT = 1,
    NR_ATTR_INT = 2,
    NR_ATTR_STRING = 3,
    NR_ATTR_TENSOR = 4,
    NR_ATTR_GRAPH = 5,
    NR_ATTR_FLOATS = 6,
    NR_ATTR_INTS = 7,
    NR_ATTR_STRINGS = 8,
    NR_ATTR_TENSORS = 9,
    NR_ATTR_GRAPHS = 10
} nr_attr_type;

/* Constant data in host memory (initializers, Constant nodes, attribute tensors, folded values).
 * For NETRUN_DTYPE_STRING, data is an array of `count` NUL-terminated char* (each owned). Sub-byte types
 * (int4/uint4) are stored unpacked, one element per byte. */
typedef struct nr_tensor {
    netrun_dtype dtype;
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    void *data;
    size_t nbytes;
    int owns_data;   /* 0: data points into a mapping the model owns (external data) */
} nr_tensor;

typedef struct nr_attr {
    char *name;
    nr_attr_type type;
    int64_t i;
    float f;
    char *s;               /* NUL-terminated; s_len bytes (may contain NULs) */
    size_t s_len;
    nr_tensor *t;
    struct nr_graph *g;
    int64_t n;             /* element count of the list types */
    int64_t *ints;
    float *floats;
    char **strings;
    nr_tensor **tensors;
    struct nr_graph **graphs;
    struct netrun_model *sub_model;      /* GRAPH attribute compiled into a model at load (control flow) */
    int borrowed_graphs;                 /* g, graphs and sub_model belong to another graph's attribute (a pass's
                                          * copy, which holds a reference on that graph's model) */
} nr_attr;

typedef struct nr_value {
    char *name;
    netrun_dtype dtype;                  /* UNDEFINED when not declared */
    int rank;                            /* -1 when not declared */
    int64_t dims[NETRUN_MAX_RANK];       /* -1 when symbolic or unknown */
    char *dim_names[NETRUN_MAX_RANK];    /* symbolic name, or NULL */
    nr_tensor *constant;                 /* initializer / Constant data (owned), else NULL */
    nr_tensor *default_value;            /* a graph input that also has an initializer (IR 4+): its default (owned) */
    int producer;                        /* index of the producing node, -1 for inputs and constants */
    int producer_output;                 /* which output of the producer */
    int is_graph_input;
    int is_graph_output;
} nr_value;

typedef struct nr_node {
    char *name;                          /* never NULL: importer names unnamed nodes "<op>_<index>" */
    char *op_type;
    char *domain;                        /* "" for the default domain */
    int opset;                           /* the model's opset for that domain */
    int n_inputs;
    int *inputs;                         /* value ids; -1 for an absent optional input */
    int n_outputs;
    int *outputs;                        /* value ids; -1 for an absent optional output */
    int n_attrs;
    nr_attr *attrs;
    const struct nr_layer *layer;        /* resolved definition, NULL when the op is unknown */
    void *params;                        /* attributes parsed by layer->parse (owned), or NULL */
} nr_node;

typedef struct nr_graph {
    char *name;
    nr_value *values;
    int n_values, cap_values;
    nr_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs;                         /* graph inputs that are not initializers */
    int n_inputs, cap_inputs;
    int *outputs;
    int n_outputs, cap_outputs;
    int n_formal_inputs;                 /* subgraphs: inputs before the captured outer values (-1: not resolved) */
    nr_strmap value_ids;                 /* name -> value id */
    struct nr_graph *parent;             /* enclosing graph for subgraphs (outer-scope names) */
} nr_graph;

typedef struct nr_opset_import {
    char *domain;
    int64_t version;
} nr_opset_import;

/* A region of an external data file mapped with mmap, kept while the model lives (munmap at free). */
typedef struct nr_mapping {
    void *addr;
    size_t size;
} nr_mapping;

typedef struct nr_model_ir {
    nr_graph *graph;
    int64_t ir_version;
    nr_opset_import *opsets;
    int n_opsets;
    char *producer;
    nr_mapping *mappings;
    int n_mappings;
    int borrowed_graph;                  /* graph belongs to an attribute of an enclosing model */
    /* what the file says about itself (netrun_model_get_metadata); NULL for subgraph models */
    char *producer_version, *domain, *doc_string, *graph_doc_string;
    int64_t model_version;
    char **prop_keys, **prop_values;     /* metadata_props */
    int n_props;
} nr_model_ir;

/* ---- building (used by importers); each returns NETRUN_OK or an error recorded with nr_error ---- */
nr_graph *nr_graph_new(const char *name, nr_graph *parent);
void nr_graph_free(nr_graph *g);
/* Id of the value with this name, creating it when absent. Returns -1 on allocation failure. */
int nr_graph_value(nr_graph *g, const char *name);
/* Id of an existing value in this graph only, or -1. */
int nr_graph_find_value(const nr_graph *g, const char *name);
/* Append a node; copies the strings; inputs/outputs filled later by the caller through the returned node.
 * Returns NULL on allocation failure. The pointer is valid until the next nr_graph_add_node. */
nr_node *nr_graph_add_node(nr_graph *g, const char *name, const char *op_type, const char *domain,
                           int n_inputs, int n_outputs, int n_attrs);
netrun_status nr_graph_add_input(nr_graph *g, int value_id);
netrun_status nr_graph_add_output(nr_graph *g, int value_id);

nr_tensor *nr_tensor_new(netrun_dtype dtype, int rank, const int64_t *dims); /* zeroed, owned data */
void nr_tensor_free(nr_tensor *t);
int64_t nr_tensor_count(const nr_tensor *t);
void nr_attr_clear(nr_attr *a);
void nr_model_ir_free(nr_model_ir *m);
/* The model's opset for a domain ("" and "ai.onnx" are the same), or 0 when not imported. */
int64_t nr_model_opset(const nr_model_ir *m, const char *domain);

/* For graph passes that build a rewritten copy of a graph (the original model, kept alive by the copy's
 * reference on it, owns the data): a tensor header pointing at t's data (owns_data 0); a deep copy of an
 * attribute whose tensors are borrowed; values of g copied into the empty ng with the same ids (constants and
 * defaults borrowed), and its inputs and outputs; a new constant value named base + suffix (made unique) that
 * takes t (freed on failure; returns -1). Each returns NETRUN_OK / an id, or records the error. */
nr_tensor *nr_tensor_borrow(const nr_tensor *t);
netrun_status nr_attr_copy_borrowed(nr_attr *d, const nr_attr *a);
netrun_status nr_graph_copy_values_borrowed(const nr_graph *g, nr_graph *ng);
/* The same with value `renamed` (-1: none) named new_name in the copy (an error when g has that name already). */
netrun_status nr_graph_copy_values_renamed(const nr_graph *g, nr_graph *ng, int renamed, const char *new_name);
int nr_graph_new_const(nr_graph *g, const char *base, const char *suffix, nr_tensor *t);

/* The value v stands for through a chain of at most max_depth Identity nodes (torch's exporter writes one
 * initializer for equal constants and Identity nodes for the other users): the first value that is a constant or
 * not an Identity's output. *first (may be NULL) gets the Identity node that writes v, or -1. The writers are
 * found among g's nodes (a pass's copy of a graph need not keep `producer`). */
int nr_graph_identity_source(const nr_graph *g, int v, int max_depth, int *first);

/* Product of dims; -1 when any dim is negative; saturates at INT64_MAX on overflow. */
int64_t nr_shape_count(int rank, const int64_t *dims);

#endif
