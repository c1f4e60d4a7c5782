/* The plan's stages (plan layer), run in this order by prepare.c: infer.c (shapes, folding), place.c (placement),
 * optimize.c (graph passes), memplan.c (steps, aliases, arenas). */
#ifndef NR_PLAN_H
#define NR_PLAN_H

#include "session.h"

#define NR_ALIGN 256
/* Largest intermediate value (the importer's default max_tensor_bytes): larger shapes are refused. */
#define NR_MAX_VALUE_BYTES ((uint64_t)16 << 30)

static inline size_t nr_align_up(size_t x) { return (x + NR_ALIGN - 1) & ~(size_t)(NR_ALIGN - 1); }

/* place.c: the settings handed to the session's backends */
netrun_backend_config nr_backend_config_of(const netrun_session *s);
/* infer.c */
void nr_desc_from_tensor(netrun_value_desc *d, const char *name, const nr_tensor *t);
netrun_status nr_bind_inputs(netrun_session *s);
netrun_status nr_infer_all(netrun_session *s);
/* memplan.c */
netrun_status nr_build_steps(netrun_session *s);
netrun_status nr_plan_aliases(netrun_session *s);
netrun_status nr_plan_domain(netrun_session *s, int dom, size_t *arena_size);

#endif
