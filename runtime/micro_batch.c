/*
 * Micro-batching (option run.micro_batch): a batch of N images runs as N / b runs of a plan built for b images,
 * each run reading its slice of the inputs and writing its slice of the outputs; or only the plan's first nodes
 * run so, and the rest once on the whole batch.
 *
 * Why: a CNN run layer by layer over a whole batch streams each layer's activations for all N images through
 * memory; MobileNetV2's 112x112x96 expand output is 4.8 MB an image, 38 MB at batch 8, more than the last-level
 * cache, so the depthwise conv after it reads from DRAM. Built for 2 images (one per thread) the same layers stay
 * in cache: at batch 8, 2 threads, MobileNetV2 ran 12% faster and SqueezeNet 10% (docs/design.md has the figures).
 *
 * Where: early layers have large activations and small weights, late layers the opposite, and each run reads the
 * weights again. So "auto" (default) may run only the first nodes in runs and the rest once on the whole batch,
 * the split chosen by bytes (best_split): what the runs keep in cache against the weights they read again.
 *
 * When: the nodes that run in runs must run in host memory, with static shapes, where every computed value
 * carries the batch as its dim 0 and every node treats the images apart (the checks below); the values that
 * cross the split carry the batch and hold all of it (mb_cut: the first nodes see a run's slice of them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "micro_batch.h"

enum { PLAIN = 0, BATCHED = 1, SHAPE_DERIVED = 2 };

static int is(const nr_node *nd, const char *op) { return !strcmp(nd->op_type, op); }
static int onnx(const nr_node *nd) { return !*nd->domain || !strcmp(nd->domain, "ai.onnx"); }

static int any_of(const nr_node *nd, const char *const *ops) {
    for (int i = 0; ops[i]; i++)
        if (is(nd, ops[i])) return 1;
    return 0;
}

/* Ops that compute each image from that image alone, whatever their attributes (given the dim-0 checks). */
static const char *const per_image_ops[] = {
    "Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu", "Gelu",
    "Softplus", "Softsign", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Floor", "Ceil", "Round", "Reciprocal",
    "Sign", "Sin", "Cos", "Not", "Cast", "Identity", "Dropout", "Mish", "ThresholdedRelu", "Conv", "ConvTranspose",
    "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
    "BatchNormalization", "InstanceNormalization", "LRN", "DepthToSpace", "SpaceToDepth", "Resize", "Upsample",
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Swish", NULL};
/* Broadcasting ops: fine unless an input without the batch has a dim 0 of its own to match (per-row data). */
static const char *const broadcast_ops[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Where", "Equal", "Less", "Greater",
    "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "PRelu", "Mod", "BitShift", NULL};
static const char *const reduce_ops[] = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                                         "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                         "ReduceSumSquare", NULL};
/* Inputs that may hold a value computed from the batch size (a folded Shape): shapes and slice bounds. */
static int shape_input(const nr_node *nd, int i) {
    return ((is(nd, "Reshape") || is(nd, "Expand")) && i == 1) || (is(nd, "Slice") && i >= 1) ||
           (is(nd, "Resize") && i >= 1);
}

/* Whether node sn keeps images apart; why says what stops it. kind[]: per input. */
static int node_ok(netrun_session *s, const nr_snode *sn, const int *kind, char *why, size_t n) {
    const nr_node *nd = &s->model->ir->graph->nodes[sn->node];
    const netrun_value_desc *in = sn->in_desc;
    if (!strcmp(nd->domain, "com.netrun")) return 1; /* the layout ops of the graph passes: per image */
    if (!onnx(nd)) goto refuse;
    if (any_of(nd, per_image_ops)) return 1;
    if (any_of(nd, broadcast_ops)) {
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && kind[i] == PLAIN && in[i].rank == sn->out_desc[0].rank && in[i].rank > 0 &&
                in[i].dims[0] != 1) {
                snprintf(why, n, "node '%s' (%s): input %d has a dim 0 of its own (%lld)", nd->name, nd->op_type, i,
                         (long long)in[i].dims[0]);
                return 0;
            }
        return 1;
    }
    if (is(nd, "Concat") || is(nd, "Split") || is(nd, "Softmax") || is(nd, "LogSoftmax") || is(nd, "Hardmax") ||
        is(nd, "LayerNormalization") || is(nd, "Transpose") || is(nd, "Slice") || is(nd, "Gather") ||
        any_of(nd, reduce_ops)) {
        int axis0 = 0; /* the node works across dim 0 */
        if (is(nd, "Concat")) axis0 = ((const netrun_axis_params *)sn->params)->axis == 0;
        else if (is(nd, "Split")) axis0 = ((const netrun_split_params *)sn->params)->axis == 0;
        else if (is(nd, "LayerNormalization")) axis0 = ((const netrun_norm_params *)sn->params)->axis == 0;
        else if (is(nd, "Transpose")) axis0 = ((const netrun_transpose_params *)sn->params)->perm[0] != 0;
        else if (is(nd, "Slice")) {
            const netrun_slice_params *p = sn->params;
            axis0 = p->start[0] != 0 || p->step[0] != 1;
        } else if (is(nd, "Gather")) { /* rows of data by unbatched indices, or a lookup by batched indices */
            int axis = ((const netrun_axis_params *)sn->params)->axis;
            axis0 = kind[0] == BATCHED ? axis == 0 || (nd->n_inputs > 1 && kind[1] != PLAIN) : axis != 0;
        } else if (any_of(nd, reduce_ops)) {
            const netrun_reduce_params *p = sn->params;
            axis0 = !p->noop && (p->n_axes == 0 || p->axes[0] == 0);
        } else
            axis0 = ((const netrun_softmax_params *)sn->params)->axis == 0;
        if (!axis0) return 1;
        snprintf(why, n, "node '%s' (%s) works across dim 0, the batch", nd->name, nd->op_type);
        return 0;
    }
    if (is(nd, "Gemm")) { /* rows of A; B and C are the same for every image */
        const netrun_gemm_params *p = sn->params;
        if (kind[0] == BATCHED && !p->trans_a && (nd->n_inputs < 2 || kind[1] == PLAIN) &&
            (nd->n_inputs < 3 || nd->inputs[2] < 0 || kind[2] == PLAIN))
            return 1;
        snprintf(why, n, "node '%s' (Gemm): the batch is not the rows of A alone", nd->name);
        return 0;
    }
    if (is(nd, "MatMul")) { /* rows of A times one B, or a batched product [N, ., .] x [N, ., .] */
        if (kind[0] == BATCHED && (kind[1] == PLAIN || (kind[1] == BATCHED && in[0].rank >= 3 && in[1].rank >= 3)))
            return 1;
        snprintf(why, n, "node '%s' (MatMul): B carries the batch", nd->name);
        return 0;
    }
refuse:
    snprintf(why, n, "node '%s' (%s%s%s) is not known to keep images apart", nd->name,
             *nd->domain ? nd->domain : "", *nd->domain ? "." : "", nd->op_type);
    return 0;
}

/* How many of the prepared nodes, from the first, keep the images of a batch of N apart: all n_snodes, or the
 * index of the first that does not (why says which and why). kind[] (n_values + 1) receives what each value
 * computed before that node is: PLAIN (constant), BATCHED (carries the batch as dim 0) or SHAPE_DERIVED. */
static int separable_prefix(netrun_session *s, int64_t N, int *kind, char *why, size_t n) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        const netrun_value_desc *d = &s->values[g->inputs[i]].desc;
        if (d->rank < 1 || d->dims[0] != N) {
            snprintf(why, n, "off: the inputs do not share a dim 0");
            return 0;
        }
    }
    int max_in = 0;
    for (int k = 0; k < g->n_nodes; k++)
        if (g->nodes[k].n_inputs > max_in) max_in = g->nodes[k].n_inputs;
    int *ikind = nr_calloc((size_t)max_in + 1, sizeof(int));
    if (!ikind) {
        snprintf(why, n, "off: out of memory");
        return 0;
    }
    for (int i = 0; i < g->n_inputs; i++) kind[g->inputs[i]] = BATCHED;
    int k = 0;
    for (; k < s->n_snodes; k++) {
        const nr_snode *sn = &s->snodes[k];
        const nr_node *nd = &g->nodes[sn->node];
        int batched = 0, derived = 0, ok = 1;
        for (int i = 0; i < nd->n_inputs; i++) {
            ikind[i] = nd->inputs[i] >= 0 ? kind[nd->inputs[i]] : PLAIN;
            if (ikind[i] == BATCHED) {
                batched = 1;
                if (sn->in_desc[i].rank < 1 || sn->in_desc[i].dims[0] != N) {
                    snprintf(why, n, "off: node '%s' (%s) reads input %d with a dim 0 other than the batch",
                             nd->name, nd->op_type, i);
                    ok = 0;
                }
            }
            if (ikind[i] == SHAPE_DERIVED) derived = 1;
        }
        if (!ok) break;
        if (!batched && !derived) continue; /* constants only */
        if (sn->slot == NR_SLOT_FOLDED) { /* Shape and what is computed from it: fine where it gives a shape */
            for (int o = 0; o < nd->n_outputs; o++)
                if (nd->outputs[o] >= 0) kind[nd->outputs[o]] = SHAPE_DERIVED;
            continue;
        }
        if (sn->slot < 0 || s->slots[sn->slot].domain != NR_HOST_DOMAIN) {
            snprintf(why, n, "off: node '%s' (%s) runs %s", nd->name, nd->op_type,
                     sn->slot < 0 ? "as control flow" : "in device memory");
            break;
        }
        for (int i = 0; i < nd->n_inputs && ok; i++)
            if (ikind[i] == SHAPE_DERIVED && !shape_input(nd, i)) {
                snprintf(why, n, "off: node '%s' (%s) reads a value computed from the batch size", nd->name,
                         nd->op_type);
                ok = 0;
            }
        if (!ok || !node_ok(s, sn, ikind, why, n)) break;
        for (int o = 0; o < nd->n_outputs && ok; o++) {
            if (nd->outputs[o] < 0) continue;
            if (sn->out_desc[o].rank < 1 || sn->out_desc[o].dims[0] != N) {
                snprintf(why, n, "off: node '%s' (%s) writes output %d with a dim 0 other than the batch", nd->name,
                         nd->op_type, o);
                ok = 0;
            }
        }
        if (!ok) break;
        for (int o = 0; o < nd->n_outputs; o++)
            if (nd->outputs[o] >= 0) kind[nd->outputs[o]] = BATCHED;
    }
    nr_free(ikind);
    return k;
}

/* What the split before node h (h < n_snodes: the first h nodes in runs, the rest on the whole batch; h ==
 * n_snodes: every node in runs) needs of the values that cross it: the later nodes (and the graph outputs, read
 * "at the end") may read values of the first nodes that carry the batch, which then hold the whole batch, but
 * no graph input (read a slice per run) and no shape computed from the batch size of a run. The later nodes run
 * in host memory, as the first do. prod[v]: the node index that computes v (-1: none); last[v]: the last node
 * index that reads it (n_snodes for a graph output, -1: none). */
static int split_ok(netrun_session *s, int h, const int *kind, const int *prod, const int *last, char *why, size_t n) {
    nr_graph *g = s->model->ir->graph;
    for (int v = 0; v < g->n_values; v++) {
        if (last[v] < h || prod[v] >= h) continue; /* not read after the split, or computed after it */
        if (kind[v] == SHAPE_DERIVED) {
            snprintf(why, n, "'%s', computed from the batch size, is read after the split", g->values[v].name);
            return 0;
        }
        if (s->values[v].is_const) continue;
        if (prod[v] < 0 && s->values[v].graph_input >= 0) {
            if (h == s->n_snodes) continue; /* an input that is also an output: gathered per run */
            snprintf(why, n, "input '%s' is read after the split", g->values[v].name);
            return 0;
        }
        if (kind[v] != BATCHED) {
            snprintf(why, n, "%s '%s' does not carry the batch", last[v] == s->n_snodes ? "output" : "value",
                     g->values[v].name);
            return 0;
        }
    }
    for (int k = h; k < s->n_snodes; k++) {
        const nr_snode *sn = &s->snodes[k];
        if (sn->slot == NR_SLOT_FOLDED || (sn->slot >= 0 && s->slots[sn->slot].domain == NR_HOST_DOMAIN)) continue;
        snprintf(why, n, "node '%s' after the split runs %s", g->nodes[sn->node].name,
                 sn->slot < 0 ? "as control flow" : "in device memory");
        return 0;
    }
    return 1;
}

/* prod[] and last[] of split_ok (n_values + 1 each). */
static void value_spans(netrun_session *s, int *prod, int *last) {
    nr_graph *g = s->model->ir->graph;
    for (int v = 0; v < g->n_values; v++) prod[v] = last[v] = -1;
    for (int k = 0; k < s->n_snodes; k++) {
        const nr_node *nd = &g->nodes[s->snodes[k].node];
        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0) last[nd->inputs[i]] = k;
        for (int o = 0; o < nd->n_outputs; o++)
            if (nd->outputs[o] >= 0) prod[nd->outputs[o]] = k;
    }
    for (int i = 0; i < g->n_outputs; i++) last[g->outputs[i]] = s->n_snodes;
}

/* The split rule (docs/design.md, "Micro-batching"). A value of the whole batch of act bytes leaves the caches
 * from NR_MICRO_BATCH_CACHE_BYTES on: written to memory and read back. Runs of b images keep the values computed
 * and read within the first h nodes in cache, which saves those bytes; the values that cross the split are
 * still written whole (the later nodes read them at once), and each run but the first reads the first nodes'
 * weights again, (N / b - 1) * w bytes. saved(h) = sum of the big values computed and read before h - (N / b - 1)
 * * the weights of the nodes before h. The first h nodes run in runs where saved(h) is largest, over the splits
 * that split_ok allows within the first `limit` nodes, the latest of those within NR_MICRO_BATCH_TIE_BYTES of the
 * largest (such a difference, weights of a few KiB read again, is below what the rule resolves, and values
 * under the cache size gain from runs too: U-Net ran 3-7% faster in runs to its end than split 2 nodes before
 * it, for a few KiB of weights); 0 where no split saves bytes, -1 when out of memory. *saved: the largest
 * saved(h). */
static int best_split(netrun_session *s, int64_t N, int64_t b, int limit, const int *kind, const int *prod,
                      const int *last, int64_t *saved) {
    nr_graph *g = s->model->ir->graph;
    const int ns = s->n_snodes;
    /* Both per-split quantities come from difference arrays over the splits, so the search is linear in the
     * nodes and values (a scan of every value per candidate took 14 ms more on a 6,000-node chain):
     * cross[k]: the big batched values computed at or before node k and read after it;
     * refuse[h]: the values crossing a split before node h that split_ok would refuse there. */
    int64_t *cross = nr_calloc((size_t)ns + 2, sizeof(int64_t));
    int *refuse = nr_calloc((size_t)ns + 2, sizeof(int));
    if (!cross || !refuse) {
        nr_free(cross);
        nr_free(refuse);
        *saved = 0;
        return -1;
    }
    for (int v = 0; v < g->n_values; v++) {
        if (last[v] < 0) continue;
        if (prod[v] >= 0 && last[v] > prod[v] && kind[v] == BATCHED &&
            s->values[v].nbytes >= NR_MICRO_BATCH_CACHE_BYTES) {
            cross[prod[v]] += (int64_t)s->values[v].nbytes;
            cross[last[v]] -= (int64_t)s->values[v].nbytes;
        }
        /* the splits h this value crosses (prod < h <= last), where split_ok refuses it */
        int lo = prod[v] + 1, hi = last[v];
        int input = prod[v] < 0 && s->values[v].graph_input >= 0;
        if (input && hi > ns - 1) hi = ns - 1; /* an input that is also an output: gathered per run at h == ns */
        int refused = kind[v] == SHAPE_DERIVED || (!s->values[v].is_const && (input || kind[v] != BATCHED));
        if (refused && lo <= hi) {
            refuse[lo]++;
            refuse[hi + 1]--;
        }
    }
    int first_ok = 0; /* split_ok wants every node from h on in host memory */
    for (int k = ns - 1; k >= 0; k--) {
        const nr_snode *sn = &s->snodes[k];
        if (!(sn->slot == NR_SLOT_FOLDED || (sn->slot >= 0 && s->slots[sn->slot].domain == NR_HOST_DOMAIN))) {
            first_ok = k + 1;
            break;
        }
    }
    int64_t sum = 0, best = 0, crossing = 0;
    int best_h = 0, refused = refuse[0];
    for (int k = 0; k < limit; k++) {
        const nr_snode *sn = &s->snodes[k];
        const nr_node *nd = &g->nodes[sn->node];
        if (sn->slot >= 0) {
            for (int o = 0; o < nd->n_outputs; o++) {
                int v = nd->outputs[o];
                if (v >= 0 && kind[v] == BATCHED && s->values[v].nbytes >= NR_MICRO_BATCH_CACHE_BYTES)
                    sum += (int64_t)s->values[v].nbytes;
            }
            for (int i = 0; i < nd->n_inputs; i++)
                if (nd->inputs[i] >= 0 && s->values[nd->inputs[i]].is_const)
                    sum -= (N / b - 1) * (int64_t)s->values[nd->inputs[i]].nbytes;
        }
        crossing += cross[k];     /* the big values computed before k + 1 and read after */
        refused += refuse[k + 1]; /* what split_ok(k + 1) would refuse */
        /* within NR_MICRO_BATCH_TIE_BYTES of the best: the later split (more of the plan in runs) */
        if (sum - crossing > 0 && sum - crossing + NR_MICRO_BATCH_TIE_BYTES >= best && !refused && k + 1 >= first_ok) {
            if (sum - crossing > best) best = sum - crossing;
            best_h = k + 1;
        }
    }
    nr_free(cross);
    nr_free(refuse);
    *saved = best;
    return best_h;
}

/* kind[], prod[] and last[] of a session's values, or NULL (out of memory): one block, nr_free it. */
static int *value_tables(netrun_session *s) {
    size_t nv = (size_t)s->model->ir->graph->n_values + 1;
    return nr_calloc(3 * nv, sizeof(int));
}

netrun_status nr_micro_batch_choose(netrun_session *s, int *images, int *head, char *why, size_t n) {
    nr_graph *g = s->model->ir->graph;
    *images = *head = 0;
    const char *opt = nr_options_get(&s->opts, "run.micro_batch");
    long forced = 0;
    if (opt && strcmp(opt, "auto") != 0) {
        char *end = NULL;
        forced = strtol(opt, &end, 10);
        if (!*opt || *end || forced < 0 || forced > INT32_MAX)
            return nr_error(NETRUN_ERR_INVALID_ARGUMENT,
                            "option run.micro_batch: 'auto', 0 (off) or a number of images per run, not '%s'", opt);
        if (forced == 0) {
            snprintf(why, n, "off (run.micro_batch=0)");
            return NETRUN_OK;
        }
    }
    if (nr_devio_any(s)) { /* slices of the caller's device memory: not worth it on a device */
        snprintf(why, n, "off: inputs or outputs are in device memory");
        return NETRUN_OK;
    }
    int defaults = 0;
    for (int i = 0; i < g->n_inputs; i++) defaults |= s->values[g->inputs[i]].graph_input < 0;
    if (defaults) {
        snprintf(why, n, "off: an input is left at its default value");
        return NETRUN_OK;
    }
    if (s->keep_values || s->root || s->dynamic || g->n_inputs < 1 || g->n_outputs < 1) {
        snprintf(why, n, "off: %s", s->keep_values ? "debug.keep_values keeps every value of one run"
                                    : s->root      ? "a subgraph runs as its parent does"
                                    : s->dynamic   ? "some shapes are known only at run time"
                                                   : "no inputs or outputs");
        return NETRUN_OK;
    }
    const netrun_value_desc *d0 = &s->values[g->inputs[0]].desc;
    int64_t N = d0->rank >= 1 ? d0->dims[0] : -1;
    if (N < 2) {
        snprintf(why, n, "off: batch %lld", (long long)N);
        return NETRUN_OK;
    }
    int64_t b = forced;
    if (!b) {
        long threads = s->opts.threads > 0 ? s->opts.threads : sysconf(_SC_NPROCESSORS_ONLN);
        b = threads > 0 ? threads : 1;
    }
    if (b >= N || N % b) {
        snprintf(why, n, "off: %lld images do not split into runs of %lld", (long long)N, (long long)b);
        return NETRUN_OK;
    }
    int *tab = value_tables(s);
    if (!tab) {
        snprintf(why, n, "off: out of memory");
        return NETRUN_OK;
    }
    size_t nv = (size_t)g->n_values + 1;
    int *kind = tab, *prod = tab + nv, *last = tab + 2 * nv;
    char whole_why[256];
    int limit = separable_prefix(s, N, kind, whole_why, sizeof whole_why);
    value_spans(s, prod, last);
    int h = 0;
    int64_t saved = 0;
    if (forced) { /* every node in runs, where they allow it */
        if (limit == s->n_snodes && split_ok(s, limit, kind, prod, last, whole_why, sizeof whole_why)) h = limit;
        else if (limit == s->n_snodes)
            snprintf(why, n, "off: %s", whole_why);
        else
            snprintf(why, n, "%s", whole_why);
    } else {
        h = best_split(s, N, b, limit, kind, prod, last, &saved);
        if (h < 0) {
            h = 0;
            snprintf(why, n, "off: out of memory");
        } else if (!h && limit == 0) /* the first node already mixes the images */
            snprintf(why, n, "%s", whole_why);
        else if (!h)
            snprintf(why, n, "off: no split saves memory traffic (no node's output of the batch reaches %d MiB%s, "
                     "or its runs would read more weights again)", NR_MICRO_BATCH_CACHE_BYTES >> 20,
                     limit < s->n_snodes ? " before the nodes that mix images" : "");
    }
    nr_free(tab);
    if (!h) return NETRUN_OK;
    if (h == s->n_snodes)
        snprintf(why, n, "%lld runs of %lld image%s (run.micro_batch=0 turns it off)", (long long)(N / b),
                 (long long)b, b > 1 ? "s" : "");
    else {
        const nr_node *nd = &g->nodes[s->snodes[h - 1].node];
        snprintf(why, n, "%lld runs of %lld image%s for the first %d of %d nodes (to '%s', %s), then the batch of "
                 "%lld (%lld MiB less memory traffic; run.micro_batch=0 turns it off)", (long long)(N / b),
                 (long long)b, b > 1 ? "s" : "", h, s->n_snodes, nd->name, nd->op_type, (long long)N,
                 (long long)(saved >> 20));
        *head = h;
    }
    *images = (int)b;
    return NETRUN_OK;
}

netrun_status nr_micro_batch_verify(netrun_session *s) {
    char why[256];
    int *tab = value_tables(s);
    if (!tab) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory checking micro-batching");
    size_t nv = (size_t)s->model->ir->graph->n_values + 1;
    int *kind = tab, *prod = tab + nv, *last = tab + 2 * nv;
    int h = s->mb_head ? s->mb_head : s->n_snodes;
    int limit = separable_prefix(s, s->mb, kind, why, sizeof why);
    value_spans(s, prod, last);
    int ok = limit >= h && split_ok(s, h, kind, prod, last, why, sizeof why);
    nr_free(tab);
    if (ok) return NETRUN_OK;
    /* a shape fixed to the whole batch in the model (a Reshape to [8, -1]...) */
    return nr_error(NETRUN_ERR_UNSUPPORTED, "%s", why + (strncmp(why, "off: ", 5) ? 0 : 5));
}

void nr_micro_batch_cut(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int k = s->mb_head; k <= s->n_snodes; k++) {
        const nr_node *nd = k < s->n_snodes ? &g->nodes[s->snodes[k].node] : NULL;
        int n = nd ? nd->n_inputs : g->n_outputs;
        for (int i = 0; i < n; i++) {
            int v = nd ? nd->inputs[i] : g->outputs[i];
            nr_svalue *sv = v >= 0 ? &s->values[v] : NULL;
            if (!sv || sv->is_const || sv->dynamic || sv->producer < 0 || sv->producer >= s->mb_head || sv->mb_cut)
                continue;
            sv->mb_cut = 1;
            sv->desc.dims[0] = s->mb_n;
            sv->nbytes = nr_desc_bytes(&sv->desc);
        }
    }
}

netrun_status nr_micro_batch_alloc_outputs(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    size_t chunks = (size_t)(s->mb_n / s->mb);
    for (int i = 0; i < g->n_outputs; i++) {
        netrun_status st = nr_output_reserve(s, &s->outputs[i], s->values[g->outputs[i]].nbytes * chunks,
                                             g->values[g->outputs[i]].name);
        if (st != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}

netrun_status nr_micro_batch_gather(netrun_session *s) {
    nr_graph *g = s->model->ir->graph;
    for (int i = 0; i < g->n_outputs; i++) {
        const nr_svalue *sv = &s->values[g->outputs[i]];
        size_t off = (size_t)s->mb_chunk * sv->nbytes;
        if (off + sv->nbytes > s->outputs[i].cap)
            return nr_error(NETRUN_ERR_INTERNAL, "micro-batching: output '%s' outgrew its buffer", sv->desc.name);
        netrun_tensor t;
        nr_value_tensor(s, g->outputs[i], NR_HOST_DOMAIN, &t);
        if (sv->nbytes) memcpy((char *)s->outputs[i].host + off, t.data, sv->nbytes);
    }
    return NETRUN_OK;
}
