/* Internals of the graph passes (optimize.c and its opt_*.c files): the state of one session's passes, the plan of
 * each Conv's fusions, and what the files share. Plan layer: passes on IR after placement. */
#ifndef NR_OPTIMIZE_INTERNAL_H
#define NR_OPTIMIZE_INTERNAL_H

#include <string.h>

#include "netrun_ops.h"
#include "optimize.h"

#define MARK_ATTR "netrun.optimized_from" /* on node 0 of a copy: counts (ints) + the original (sub_model) */

/* One planned rewrite per Conv: the nodes it absorbs and what its node becomes. */
#define OPT_MAX_AFFINE 4 /* Mul / Add nodes of per-channel constants folded into one Conv */

typedef struct conv_plan {
    int bn;            /* BatchNormalization node folded into it, or -1 */
    int aff[OPT_MAX_AFFINE]; /* then Mul / Add by per-output-channel constants folded like it, in order */
    int n_aff;
    int add;           /* Add node fused as "+ Z", or -1 */
    int z;             /* Z value */
    int act;           /* activation node, or -1 */
    netrun_fused_activation fa;
    int out;           /* value the fused node writes */
    int mul, sx, sv;   /* squeeze-excite Mul(sx, sv) folded in as X times scale (nChw16c 1x1), or -1 */
} conv_plan;

/* Whether the plan absorbs any node, and the value the (fused) node then writes. */
static inline int plan_absorbs(const conv_plan *p) {
    return p->bn >= 0 || p->n_aff > 0 || p->add >= 0 || p->act >= 0 || p->mul >= 0;
}
/* Whether the plan folds constants into W and B (a BatchNormalization, per-channel Mul / Add). */
static inline int plan_folds(const conv_plan *p) { return p->bn >= 0 || p->n_aff > 0; }
static inline int plan_out(const conv_plan *p, const nr_node *nd) {
    return plan_absorbs(p) ? p->out : nd->n_outputs ? nd->outputs[0] : -1; /* p->out is set by fusions only */
}

/* A pattern replaced by one ONNX op (opt_transformer.c); the node standing for it is the pattern's last. */
enum { OPT_REPL_ATTENTION = 0, OPT_REPL_LAYERNORM, OPT_REPL_GELU, OPT_REPL_MATMUL_BIAS, OPT_REPL_RMSNORM };
typedef struct opt_repl {
    int kind;
    int n_in, in[4];   /* values read (-1: absent) */
    int out;           /* value written */
    int first;         /* the pattern's first node (for the name) */
    float scale, epsilon;
    int is_causal, heads, axis, approx_tanh; /* heads: the 3-D form of Attention (0: 4-D) */
    int act;           /* MatMulBias: the activation folded in (netrun_activation: NONE, RELU or GELU_TANH) */
    int extra_out;     /* Attention 3-D: the [B, L, H, Ev] value still read elsewhere, made by a Reshape (-1: none) */
    int64_t extra_dims[4];
    int two_masks, mask2; /* Attention: scores + in[3] + mask2 (T5's position bias and padding mask): an Add of
                           * the two, of dims mask_dims, is the fused node's mask */
    int64_t mask_dims[4];
    int64_t zero_bias;  /* MatMulBias without a bias in the model (in[2] -1): a constant of this many zeros, of
                         * dtype zero_bias_dtype, made in the copy */
    int zero_bias_dtype;
} opt_repl;

typedef struct opt_state {
    netrun_session *s;
    const nr_graph *g;
    int *alias;        /* value -> value it stands for once Identity/Dropout are gone (itself otherwise) */
    char *pinned;      /* value -> 1 when its name must keep its value as written: a graph output, or read by a
                        * control-flow node's subgraph (captured by name) */
    int *users;        /* value -> number of uses by kept nodes (graph outputs count as one) */
    int *user;         /* value -> the (last) kept node using it */
    int *removed;      /* node -> 1 when dropped or absorbed */
    int *snode_of;     /* node -> snode index */
    conv_plan *plan;   /* node -> plan (bn/add/act -1 when none) */
    int *swish_x;      /* Mul node -> x when Mul(x, Sigmoid(x)) becomes Swish(x) (its Sigmoid removed), else -1 */
    int *blk_conv;     /* node -> 1 when its backend's kernel takes and gives nChw16c (the nChw16c pass, (f)) */
    int blk_query;     /* backend_accepts asks with 1: src_blocked = dst_blocked = 1; 2: dst_blocked only; 3: src */
    int *h_conv;       /* node -> 1 when its backend's kernel may run float16 NHWC (the float16 region pass, (g)) */
    int nhwc_query;    /* backend_accepts asks for float16 X/W/B/Z/Y with src_nhwc = dst_nhwc = 1 */
    const char *se_option; /* the option that turns squeeze-excite folding off (for the log) */
    int *repl_of;      /* node -> index in repls when a fused op replaces it, else -1 */
    int *sib_lead;     /* node -> the first Conv of its sibling group (opt_siblings.c), else -1 */
    int *sib_out;      /* group member -> the value its Split output writes (what its consumers read) */
    opt_repl *repls;
    int n_repls;
} opt_state;

static inline int val(const opt_state *o, int v) { return v >= 0 ? o->alias[v] : v; }

static inline int is_op(const nr_node *nd, const char *op) { return !*nd->domain && !strcmp(nd->op_type, op); }


enum { HK_PLAIN = 0, HK_CONV, HK_AGN, HK_POOL, HK_GAP, HK_MULCH, HK_CONCAT };


/* ---- shared by the pass files ---- */
/* opt_fuse.c: attribute and constant helpers, the backend questions, the Conv fusions and the SiLU pair */
const nr_attr *opt_find_attr(const nr_node *nd, const char *name);
float opt_attr_f(const nr_node *nd, const char *name, float def);
const nr_tensor *opt_const_f32(const nr_graph *g, int v);
/* As opt_const_f32, or a float32 value computed at prepare (a constant's Unsqueeze), or NULL. */
const nr_tensor *opt_value_f32(const opt_state *o, int v);
int opt_is_noop(const opt_state *o, int n);
int opt_only_user(const opt_state *o, int v);
int opt_same_slot(const opt_state *o, int a, int b);
int opt_producer(const opt_state *o, int v);
const netrun_region_spec *opt_region_on(const opt_state *o, const netrun_backend_config *cfg, int n,
                                        netrun_region_kind kind);
int opt_region_crosses(const netrun_region_spec *r, const nr_node *nd, const char *op);
int opt_region_takes(const opt_state *o, const netrun_backend_config *cfg, const netrun_region_spec *r,
                     const nr_graph *ng, int k, int n, const void *params, size_t params_size, int f16);
int opt_backend_accepts(const opt_state *o, const netrun_backend_config *cfg, int n, const conv_plan *p);
void opt_plan_conv(opt_state *o, const netrun_backend_config *cfg, int n);
void opt_plan_bn(opt_state *o, const netrun_backend_config *cfg, int n);
int opt_plan_silu(opt_state *o, const netrun_backend_config *cfg, int n);
/* opt_siblings.c: Convs reading one value with one window merged, a Split after (returns the groups) */
#define OPT_MAX_SIBLINGS 32
int opt_plan_siblings(opt_state *o, int *n_convs);
netrun_status opt_emit_siblings(const opt_state *o, nr_graph *ng, int n, int *from);
/* opt_transformer.c: Attention, LayerNormalization, RMSNormalization and Gelu from their exported subgraphs; MatMul + bias Add
 * [+ Relu / tanh Gelu] as MatMulBias (com.netrun) */
netrun_status opt_plan_transformer(opt_state *o, const netrun_backend_config *cfg, int *n_attn, int *n_ln,
                                   int *n_gelu, int *n_matmul_bias);
/* The graph passes' MatMulBias (com.netrun). */
static inline int opt_is_matmul_bias(const nr_node *nd) {
    return !strcmp(nd->domain, "com.netrun") && !strcmp(nd->op_type, "MatMulBias");
}
netrun_status opt_emit_repl(const opt_state *o, nr_graph *ng, int n, int *from);
/* opt_copy.c: the session's private copy of the graph */
netrun_status opt_build_copy(opt_state *o, nr_graph *ng, int **params_from);
int opt_like_value(nr_graph *ng, int v, const char *suffix);
int opt_add_layout_node(nr_graph *ng, int from, int to, const char *op, const char *attr, int value,
                        const char *suffix);
/* opt_nchw16c.c: the nChw16c region */
int opt_agnostic_op(const nr_node *nd);
int opt_plan_se_fold(opt_state *o, const netrun_backend_config *cfg, int n);
netrun_status opt_plan_nchwc(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
                             int n_copied, int *conv_blk, int *n_reorders);
/* opt_fp16.c: the float16 NHWC region */
int opt_plan_h_conv(opt_state *o, const netrun_backend_config *cfg, int n);
netrun_status opt_plan_fp16(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
                            int n_copied, char *kind, int *n_convs, int *n_converts);
int opt_half_const(const opt_state *o, nr_graph *ng, int v, int nv0, int *cache);
/* opt_half.c: the plain float16 region (transformer-style nodes, layout unchanged) */
int opt_half_seeds(const opt_state *o, const netrun_backend_config *cfg);
netrun_status opt_plan_half(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
                            int n_copied, const char *hkind, int *n_nodes, int *n_casts);

#endif
