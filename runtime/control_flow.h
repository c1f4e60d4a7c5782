/* Control flow (If, Loop, Scan): subgraphs as models of their own, run by the runtime. */
#ifndef NR_CONTROL_FLOW_H
#define NR_CONTROL_FLOW_H

#include "session.h"

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
/* Default cap on the Loop iterations of one run (option limits.max_loop_iterations; 0 = no cap): about 1.5 s of a
 * trivial body on one core, far above what inference loops (decoding, recurrences) do. */
#define NR_DEFAULT_MAX_LOOP_ITERATIONS 1000000
/* Load: compile the model's GRAPH attributes into sub-models. */
netrun_status nr_compile_subgraphs(netrun_model *m);
/* Run: execute a control-flow node. */
netrun_status nr_run_control_flow(netrun_session *s, nr_snode *sn);
void nr_cf_free(netrun_session *s, nr_snode *sn);
/* Prepares of the session and of every control-flow body it ran, since it was created (stats.prepares). */
uint64_t nr_session_prepares(const netrun_session *s);

#endif
