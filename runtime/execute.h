/* The executor (exec layer): runs a prepared session's steps (execute.c). */
#ifndef NR_EXECUTE_H
#define NR_EXECUTE_H

#include "session.h"

/* One run of the prepared steps. async: return once the device work is queued (copies into bound device outputs
 * included); nr_session_finish then waits and brings host outputs back. */
netrun_status nr_session_execute(netrun_session *s, int async);
netrun_status nr_session_finish(netrun_session *s);
/* The run stops here when netrun_session_cancel was called on the top session (sub-sessions of control flow
 * answer to their root's flag): takes the request and records the error. */
netrun_status nr_check_cancel(netrun_session *s);
/* A run-time buffer in a domain for a value whose shape is known only now (shape already in its desc). */
netrun_status nr_dyn_alloc(netrun_session *s, int value, int domain);
/* Make a device-resident value readable on the host (sv->host_copy); no-op for host values. */
netrun_status nr_host_value(netrun_session *s, int value);
/* Refresh stats.device_peak_bytes from the device backends (memory_info). */
void nr_exec_memory_stats(netrun_session *s);

#endif
