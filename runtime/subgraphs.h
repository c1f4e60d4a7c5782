/* Subgraphs of control flow at load (subgraphs.c): captures and sub-models. Model layer: reads and writes IR. */
#ifndef NR_SUBGRAPHS_H
#define NR_SUBGRAPHS_H

#include "model.h"

/* Scan's attributes (If and Loop have none besides their subgraphs). */
typedef struct nr_cf_params {
    int n_scan_inputs;
    int64_t scan_input_axes[NETRUN_MAX_RANK * 4];
    int64_t scan_input_directions[NETRUN_MAX_RANK * 4];
    int64_t scan_output_axes[NETRUN_MAX_RANK * 4];
    int64_t scan_output_directions[NETRUN_MAX_RANK * 4];
} nr_cf_params;

#define NR_CF_MAX_SCAN (NETRUN_MAX_RANK * 4)

/* Load: make the values each subgraph reads from enclosing graphs inputs of that subgraph. */
netrun_status nr_resolve_captures(nr_graph *g, const char *source, int depth);
/* Values of g that the subgraphs of node nd read (implicit inputs of nd): up to max ids into out. */
int nr_node_captures(const nr_graph *g, const nr_node *nd, int *out, int max);
#define NR_MAX_CAPTURES 256
/* Load: compile the model's GRAPH attributes into sub-models. */
netrun_status nr_compile_subgraphs(netrun_model *m);

#endif
