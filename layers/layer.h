/*
 * The backend-independent definition of an op: attribute parsing into the typed params of netrun_ops.h,
 * validation with clear messages, and output dtype/shape inference. One file per op family in layers/,
 * each exporting a table `const nr_layer nr_layers_<family>[]` ended by an entry with op_type == NULL,
 * listed in layers/registry.c.
 *
 * Contract of infer:
 *   - Every present input has a known dtype, rank and dims (>= 0). Absent optional inputs have rank -1.
 *   - An input's value is available (nr_in_value != NULL) when it is constant or computed at prepare (shape
 *     subgraphs are folded), or at run time when the node is inferred then. When infer needs a value that
 *     is not known, it returns NR_STATUS_NEED_VALUE (and the runtime retries at run time).
 *   - It sets dtype, rank and dims of every present output. A dim that depends on input *values* that only
 *     the kernel sees (NonZero) is set to -1; the kernel then allocates that output itself.
 *   - It completes params (resolve negative axes, auto_pad, constant inputs) so that a backend needs nothing
 *     else. params arrives holding what parse wrote.
 *   - Errors name the problem; the runtime prefixes the node's name and op.
 */
#ifndef NR_LAYER_H
#define NR_LAYER_H

#include "netrun_backend.h"
#include "../runtime/ir.h"
#include "../runtime/status.h"

/* The same type as the plugin ABI's netrun_op_ctx: a plugin op's parse and infer are called like a layer's. */
typedef struct netrun_op_ctx nr_layer_ctx;

enum {
    NR_LAYER_NO_FOLD = 1u << 0,     /* never fold to a constant at prepare (random ops) */
    NR_LAYER_VIEW = 1u << 1,        /* output 0 has input 0's bytes in another shape (Reshape, Squeeze...) */
    NR_LAYER_CONTROL_FLOW = 1u << 2 /* run by the runtime itself on its subgraphs (If, Loop, Scan) */
};

typedef struct nr_layer {
    const char *op_type;
    const char *domain;             /* "" = default ONNX domain */
    int min_opset;                  /* the first opset version of this op we implement */
    size_t params_size;             /* sizeof the params struct (0 = none) */
    /* Parse and validate attributes into params (zeroed before). Runs once at load. May be NULL. Input and
     * output counts and names are known then, shapes not (rank -1). */
    netrun_status (*parse)(nr_layer_ctx *c, void *params);
    /* Infer outputs and complete params, see the contract above. */
    netrun_status (*infer)(nr_layer_ctx *c, void *params);
    unsigned flags;
} nr_layer;

/* Find the definition of an op (NULL when unknown). */
const nr_layer *nr_layer_find(const char *domain, const char *op_type);
/* Iterate over all known layers: index 0.. until NULL. */
const nr_layer *nr_layer_at(int index);

/* ---- what parse and infer can ask ---- */
int nr_opset(const nr_layer_ctx *c);
const char *nr_node_name(const nr_layer_ctx *c);

/* Attributes. Each returns NETRUN_OK (value or default written) or a recorded error when the attribute has
 * the wrong type. `has` tells whether it was given. */
int nr_attr_has(const nr_layer_ctx *c, const char *name);
netrun_status nr_attr_int(const nr_layer_ctx *c, const char *name, int64_t def, int64_t *out);
netrun_status nr_attr_float(const nr_layer_ctx *c, const char *name, float def, float *out);
/* String attribute; *out points into the model (def when absent). */
netrun_status nr_attr_string(const nr_layer_ctx *c, const char *name, const char *def, const char **out);
/* List attributes: *out points into the model, *n = 0 and *out = NULL when absent. */
netrun_status nr_attr_ints(const nr_layer_ctx *c, const char *name, const int64_t **out, int64_t *n);
netrun_status nr_attr_floats(const nr_layer_ctx *c, const char *name, const float **out, int64_t *n);
netrun_status nr_attr_strings(const nr_layer_ctx *c, const char *name, char *const **out, int64_t *n);
netrun_status nr_attr_tensor(const nr_layer_ctx *c, const char *name, const nr_tensor **out);
/* Graph attribute (subgraph of control flow); *out is NULL when absent. */
netrun_status nr_attr_graph(const nr_layer_ctx *c, const char *name, const nr_graph **out);

/* Inputs (infer only). nr_in(c, i) is never NULL for i < nr_in_count; absent inputs have rank -1. */
int nr_in_count(const nr_layer_ctx *c);
const netrun_value_desc *nr_in(const nr_layer_ctx *c, int i);
int nr_in_present(const nr_layer_ctx *c, int i);
/* Host copy of the input's value when known, else NULL. */
const void *nr_in_value(const nr_layer_ctx *c, int i);
/* Read a known integer input (int32 or int64) as int64 into out (up to max entries); *n = element count.
 * Returns NR_STATUS_NEED_VALUE when the value is not known. */
netrun_status nr_in_ints(const nr_layer_ctx *c, int i, int64_t *out, int64_t max, int64_t *n);
/* Read a known scalar (any numeric dtype) as double. NR_STATUS_NEED_VALUE when not known. */
netrun_status nr_in_scalar(const nr_layer_ctx *c, int i, double *out);

/* Outputs (infer only). */
int nr_out_count(const nr_layer_ctx *c);
int nr_out_present(const nr_layer_ctx *c, int i);
/* Set output i (ignored when the output is absent). dims may be NULL for rank 0. */
void nr_out_set(nr_layer_ctx *c, int i, netrun_dtype dtype, int rank, const int64_t *dims);

/* Memory that lives as long as the params it is hung on (e.g. Split sizes). NULL on failure (recorded). */
void *nr_layer_alloc(nr_layer_ctx *c, size_t bytes);

/* Record an error for this node: `return nr_layer_error(c, "axis %d out of range", a);` */
netrun_status nr_layer_error(const nr_layer_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- helpers shared by many layers ---- */
/* Resolve axis in [-rank, rank) (or [-rank-1, rank] when `inclusive`); error names the attribute. */
netrun_status nr_resolve_axis(const nr_layer_ctx *c, int64_t axis, int rank, int inclusive, int *out);
/* Numpy-style broadcast of two shapes into out; error when incompatible. */
netrun_status nr_broadcast_shapes(const nr_layer_ctx *c, int ra, const int64_t *da, int rb, const int64_t *db,
                                  int *rank_out, int64_t *dims_out);
/* Require input i to have one of the dtypes in mask (NETRUN_DTYPE_BIT bits); error names the input. */
netrun_status nr_check_dtype(const nr_layer_ctx *c, int i, uint64_t mask);
/* Require inputs i and j to have the same dtype. */
netrun_status nr_check_same_dtype(const nr_layer_ctx *c, int i, int j);

#define NR_DTYPES_FLOAT (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                         NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))
#define NR_DTYPES_INT (NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT8) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT8) | \
                       NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT16) | \
                       NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT32) | \
                       NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT64))
#define NR_DTYPES_NUMERIC (NR_DTYPES_FLOAT | NR_DTYPES_INT)
#define NR_DTYPES_INDEX (NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64))
#define NR_DTYPES_ALL (~UINT64_C(0))

#endif
