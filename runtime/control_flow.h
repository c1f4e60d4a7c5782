/* Control flow (If, Loop, Scan): subgraphs as models of their own, run by the runtime. */
#ifndef NR_CONTROL_FLOW_H
#define NR_CONTROL_FLOW_H

#include "execute.h"
#include "subgraphs.h"

/* Default cap on the Loop iterations of one run (option limits.max_loop_iterations; 0 = no cap): about 1.5 s of a
 * trivial body on one core, far above what inference loops (decoding, recurrences) do. */
#define NR_DEFAULT_MAX_LOOP_ITERATIONS 1000000
/* How the executor drives a body's session: the session layer's internal calls (no public entry point, no busy
 * guard, errors left in the thread's message), given to every session at create (netrun_session.body). So the
 * executor never calls up into the API it sits under. */
typedef struct nr_body_ops {
    netrun_status (*create)(netrun_model *m, const netrun_options *o, netrun_session **out);
    void (*destroy)(netrun_session *s);
    netrun_status (*set_input)(netrun_session *s, const char *name, netrun_dtype dtype, int rank, const int64_t *dims,
                               const void *data, size_t nbytes);
    netrun_status (*run)(netrun_session *s);
    netrun_status (*output)(netrun_session *s, int index, netrun_tensor_view *out);
    netrun_status (*set_profiling)(netrun_session *s, int on);
    int (*profile_count)(netrun_session *s);
    netrun_status (*profile_get)(netrun_session *s, int index, netrun_profile_event *ev);
} nr_body_ops;

/* Run: execute a control-flow node (its state is freed through snode.cf_free). */
netrun_status nr_run_control_flow(netrun_session *s, nr_snode *sn);
/* Prepares of the session and of every control-flow body it ran, since it was created (stats.prepares). */
uint64_t nr_session_prepares(const netrun_session *s);

#endif
