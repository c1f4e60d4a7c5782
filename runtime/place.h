/* Placement (plan layer): the session's backend slots and memory domains, and the slot of each node. */
#ifndef NR_PLACE_H
#define NR_PLACE_H

#include "plan.h"

/* The slots of a session from its backend list (or the default order: GPU backends, the fallback, the others). */
netrun_status nr_session_choose_backends(netrun_session *s);
/* Place every inferred node: greedy, then transfer-aware (place.c); reasons in snodes[k].reason. */
netrun_status nr_place_nodes(netrun_session *s);

#endif
