/* Graph passes run at prepare: BatchNormalization folded into Conv/ConvTranspose weights, Conv + Add(Z) +
 * activation fused into one Conv (netrun_conv_params.has_sum / .activation), Mul(x, Sigmoid(x)) rewritten to
 * Swish(x) (then fusable as a Conv activation), Identity and inference Dropout dropped. See docs/design.md, "Graph passes". */
#ifndef NR_OPTIMIZE_H
#define NR_OPTIMIZE_H

#include "session.h"

/* What the passes did to a session's graph. */
typedef struct nr_optimize_counts {
    int bn_folded;      /* BatchNormalization nodes folded into a Conv's weights and bias */
    int act_fused;      /* activations fused into a Conv */
    int sum_fused;      /* Add nodes fused into a Conv as "+ Z" */
    int dropped;        /* Identity / inference Dropout nodes removed */
    int swish_fused;    /* Mul(x, Sigmoid(x)) pairs rewritten to one Swish(x) node */
    int nchwc_convs;    /* Convs reading or writing nChw16c (a NETRUN_REGION_NCHW16C region; its option "0": none) */
    int nchwc_reorders; /* ReorderNCHWc nodes inserted at the edges of the blocked chains */
    int fp16_convs;     /* Convs inside float16 NHWC regions (a NETRUN_REGION_FP16_NHWC region; its option "0": none) */
    int fp16_converts;  /* ReorderNHWC conversions inserted at the borders of those regions */
    int attention_fused; /* attention subgraphs rewritten to one Attention node (graph.fuse_transformer) */
    int layernorm_fused; /* decomposed LayerNormalization subgraphs rewritten to one node */
    int gelu_fused;      /* erf / tanh Gelu subgraphs rewritten to one Gelu node */
    int fp16_nodes;      /* nodes inside plain float16 regions (a NETRUN_REGION_FP16 region: transformer-style) */
    int fp16_casts;      /* Casts inserted at the borders of those regions */
} nr_optimize_counts;

/* Called by prepare after placement (so that a fusion can be checked with supports() of the backend that
 * runs the Conv, and never crosses backends). When something can be rewritten, builds a private copy of the
 * session's model with the rewrites (the shared model and its constants are never modified: folded weights
 * are new constants of the copy), and sets *rewritten (the caller unprepares, swaps in *out and prepares
 * again). *rewritten = 0 and *out = NULL when nothing applies, when the passes are off (option
 * "graph.optimize" = "0"), for debug.keep_values sessions (every intermediate value must stay readable), for
 * sub-sessions, and for graphs with subgraphs. The copy keeps a reference on the original model. */
netrun_status nr_optimize_session(netrun_session *s, const netrun_backend_config *cfg, netrun_model **out,
                                  nr_optimize_counts *counts);

/* The model a copy built by nr_optimize_session was made from (the copy holds a reference on it), or NULL. */
netrun_model *nr_optimize_original(const netrun_model *m);

/* Counts of the passes that built model m (all zero for a model not built by nr_optimize_session). */
void nr_optimize_model_counts(const netrun_model *m, nr_optimize_counts *counts);

/* For an op the graph passes make (domain com.netrun), the layout it works in ("nChw16c", "float16 NHWC"), which the
 * kernel column carries since reports show the ONNX op it stands for; NULL for model ops. */
const char *nr_internal_op_layout(const nr_node *nd);
/* The op type reports show for a node: the ONNX op a pass's own op stands for, else its own. */
const char *nr_internal_op_shown(const nr_node *nd);

#endif
