/* Micro-batching: run a batch as several runs of a plan built for fewer images (micro_batch.c). */
#ifndef NR_MICRO_BATCH_H
#define NR_MICRO_BATCH_H

#include "session.h"

/* The split rule: a value of the whole batch from this size on leaves the caches (measured at batch 8, 2 threads:
 * micro-batching MnasNet, whose largest value is 18.4 MiB, ran slower; SqueezeNet's 24 MiB and MobileNetV2's
 * 37 MiB ran faster) */
#define NR_MICRO_BATCH_CACHE_BYTES (20 << 20)
/* splits whose savings differ by less than this are equal to the rule (micro_batch.c, best_split) */
#define NR_MICRO_BATCH_TIE_BYTES (1 << 20)

/* After inference, placement and the graph passes at the full batch: the images per run into *images (0: off),
 * the number of first nodes that run in runs into *head (0: all of them; the rest then runs once on the whole
 * batch), and the decision into why as one line ("4 runs of 2 images ..." or "off: <reason>"). Fails only on a
 * bad run.micro_batch. */
netrun_status nr_micro_batch_choose(netrun_session *s, int *images, int *head, char *why, size_t n);
/* After inference and placement of the plan for s->mb images: the same checks again at that batch (a shape the
 * model fixes to the whole batch shows only here); an error says which node. */
netrun_status nr_micro_batch_verify(netrun_session *s);
/* Inference, before snode s->mb_head (> 0): the values of the first nodes that later nodes (or the graph outputs)
 * read become mb_cut and hold the whole batch (s->mb_n). */
void nr_micro_batch_cut(netrun_session *s);

/* At prepare, when on: the output buffers the whole batch is gathered into (none on the run path). */
netrun_status nr_micro_batch_alloc_outputs(netrun_session *s);
/* After run s->mb_chunk of the plan: its outputs into their slices of those buffers. */
netrun_status nr_micro_batch_gather(netrun_session *s);

#endif
