/* Micro-batching: run a batch as several runs of a plan built for fewer images (micro_batch.c). */
#ifndef NR_MICRO_BATCH_H
#define NR_MICRO_BATCH_H

#include "session.h"

/* "auto" wants a value at least this large per image (below, a batch of them stays in cache) */
#define NR_MICRO_BATCH_MIN_BYTES (2 << 20)

/* After inference and placement at the full batch: the images per run into *images (0: off), and the decision
 * into why as one line ("4 runs of 2 images ..." or "off: <reason>"). Fails only on a bad run.micro_batch. */
netrun_status nr_micro_batch_choose(netrun_session *s, int *images, char *why, size_t n);
/* After inference and placement of the plan for s->mb images: the same checks again at that batch (a shape the
 * model fixes to the whole batch shows only here); an error says which node. */
netrun_status nr_micro_batch_verify(netrun_session *s);

/* At prepare, when on: the output buffers the whole batch is gathered into (none on the run path). */
netrun_status nr_micro_batch_alloc_outputs(netrun_session *s);
/* After run s->mb_chunk of the plan: its outputs into their slices of those buffers. */
netrun_status nr_micro_batch_gather(netrun_session *s);

#endif
