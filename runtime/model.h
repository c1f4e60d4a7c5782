/* A loaded model: the IR plus what every session shares (topological order, parsed params). */
#ifndef NR_MODEL_H
#define NR_MODEL_H

#include <pthread.h>
#include <stdatomic.h>

#include "ir.h"
#include "layer_ctx.h"
#include "status.h"

typedef struct nr_io_info {
    netrun_tensor_info info;
    const char *dim_names[NETRUN_MAX_RANK];
} nr_io_info;

struct netrun_model {
    atomic_int refs;
    nr_model_ir *ir;
    char *source;            /* path or "<memory>" */
    int *order;              /* nodes of the main graph in topological order */
    nr_alloc_list *param_allocs; /* per node: allocations made by parse */
    nr_io_info *inputs, *outputs;
    int n_formal_inputs;     /* a subgraph's own inputs; the rest are values captured from enclosing graphs */
    char error[NR_ERROR_MAX];  /* the last failure of a call on this model; written and read under error_lock
                                * (a model is shared by threads) */
    pthread_mutex_t error_lock;
};

void nr_model_retain(netrun_model *m);
/* Wrap imported IR into a model (checks the graph, resolves and parses ops). Takes ownership of ir. */
netrun_status nr_model_from_ir(nr_model_ir *ir, const char *source, netrun_model **out);
/* Record the thread's current error message on a handle's error buffer and return code. */
netrun_status nr_record(char *handle_error, netrun_status code);

#endif
