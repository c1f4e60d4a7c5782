/* The context a layer's parse/infer sees (built by the runtime for one node). */
#ifndef NR_LAYER_CTX_H
#define NR_LAYER_CTX_H

#include "layer.h"

/* Allocations hung on a node's params (nr_layer_alloc). */
typedef struct nr_alloc_list {
    void **ptrs;
    int n, cap;
} nr_alloc_list;

struct netrun_op_ctx { /* nr_layer_ctx */
    const nr_node *node;
    int opset;
    int n_in;
    const netrun_value_desc *in;
    int n_out;
    netrun_value_desc *out;
    nr_alloc_list *allocs;
};

void nr_alloc_list_free(nr_alloc_list *l);
/* Read element i of a numeric array of dtype t as double (0 for non-numeric types). */
double nr_read_number(netrun_dtype t, const void *data, int64_t i);

#endif
