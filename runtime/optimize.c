/* Graph passes (see optimize.h and docs/design.md, "Graph passes").
 *
 * They run after placement: a fusion is only made when the Conv and the nodes fused into it run on the same
 * backend, and that backend's supports() accepts the fused node; so a pass never moves work to another
 * backend nor causes a fallback. The rewrite goes into a private copy of the model (the loaded model is
 * shared by concurrent sessions and stays untouched); constants of the copy borrow the original's data, and
 * only folded weights are new. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netrun_ops.h"
#include "optimize.h"
#include "qdq_fuse.h"
#include "backend_registry.h"
#include "../backends/common/dtype_convert.h" /* float -> IEEE half for the region pass's weights */

#define MARK_ATTR "netrun.optimized_from" /* on node 0 of a copy: counts (ints) + the original (sub_model) */

/* One planned rewrite per Conv: the nodes it absorbs and what its node becomes. */
typedef struct conv_plan {
    int bn;            /* BatchNormalization node folded into it, or -1 */
    int add;           /* Add node fused as "+ Z", or -1 */
    int z;             /* Z value */
    int act;           /* activation node, or -1 */
    netrun_fused_activation fa;
    int out;           /* value the fused node writes */
    int mul, sx, sv;   /* squeeze-excite Mul(sx, sv) folded in as X times scale (CPU nChw16c 1x1), or -1 */
} conv_plan;

/* Whether the plan absorbs any node, and the value the (fused) node then writes. */
static int plan_absorbs(const conv_plan *p) { return p->bn >= 0 || p->add >= 0 || p->act >= 0 || p->mul >= 0; }
static int plan_out(const conv_plan *p, const nr_node *nd) {
    return plan_absorbs(p) ? p->out : nd->n_outputs ? nd->outputs[0] : -1; /* p->out is set by fusions only */
}

typedef struct opt_state {
    netrun_session *s;
    const nr_graph *g;
    int *alias;        /* value -> value it stands for once Identity/Dropout are gone (itself otherwise) */
    int *users;        /* value -> number of uses by kept nodes (graph outputs count as one) */
    int *user;         /* value -> the (last) kept node using it */
    int *removed;      /* node -> 1 when dropped or absorbed */
    int *snode_of;     /* node -> snode index */
    conv_plan *plan;   /* node -> plan (bn/add/act -1 when none) */
    int *swish_x;      /* Mul node -> x when Mul(x, Sigmoid(x)) becomes Swish(x) (its Sigmoid removed), else -1 */
    int *blk_conv;     /* node -> 1 when its CPU kernel takes and gives nChw16c (the nChw16c pass, (f)) */
    int blk_query;     /* backend_accepts asks with 1: src_blocked = dst_blocked = 1; 2: dst_blocked only; 3: src */
    int *h_conv;       /* node -> 1 when its CUDA kernel may run float16 NHWC (the float16 region pass, (g)) */
    int nhwc_query;    /* backend_accepts asks for float16 X/W/B/Z/Y with src_nhwc = dst_nhwc = 1 */
} opt_state;

static int val(const opt_state *o, int v) { return v >= 0 ? o->alias[v] : v; }

static int is_op(const nr_node *nd, const char *op) { return !*nd->domain && !strcmp(nd->op_type, op); }

static const nr_attr *find_attr(const nr_node *nd, const char *name) {
    for (int a = 0; a < nd->n_attrs; a++)
        if (nd->attrs[a].name && !strcmp(nd->attrs[a].name, name)) return &nd->attrs[a];
    return NULL;
}

static float attr_f(const nr_node *nd, const char *name, float def) {
    const nr_attr *a = find_attr(nd, name);
    return a && a->type == NR_ATTR_FLOAT ? a->f : def;
}

/* A float32 constant of the original graph (initializer or Constant folded at import), or NULL. */
static const nr_tensor *const_f32(const nr_graph *g, int v) {
    if (v < 0 || !g->values[v].constant) return NULL;
    const nr_tensor *t = g->values[v].constant;
    return t->dtype == NETRUN_DTYPE_FLOAT && t->data ? t : NULL;
}

/* Scalar float constant input, or def when the input is absent; returns 0 when present but not constant. */
static int scalar_input(const nr_graph *g, const nr_node *nd, int i, float def, float *out) {
    if (i >= nd->n_inputs || nd->inputs[i] < 0) {
        *out = def;
        return 1;
    }
    const nr_tensor *t = const_f32(g, nd->inputs[i]);
    if (!t || nr_tensor_count(t) != 1) return 0;
    *out = *(const float *)t->data;
    return 1;
}

/* The fused activation an op stands for (0 when it is not one a Conv can take). */
static int activation_of(const nr_graph *g, const nr_node *nd, netrun_fused_activation *fa) {
    memset(fa, 0, sizeof *fa);
    if (*nd->domain || nd->n_outputs != 1 || nd->n_inputs < 1) return 0;
    if (is_op(nd, "Relu")) fa->kind = NETRUN_ACT_RELU;
    else if (is_op(nd, "LeakyRelu")) fa->kind = NETRUN_ACT_LEAKY_RELU, fa->alpha = attr_f(nd, "alpha", 0.01f);
    else if (is_op(nd, "Sigmoid")) fa->kind = NETRUN_ACT_SIGMOID;
    else if (is_op(nd, "Tanh")) fa->kind = NETRUN_ACT_TANH;
    else if (is_op(nd, "HardSwish")) fa->kind = NETRUN_ACT_HARD_SWISH;
    else if (is_op(nd, "Swish")) fa->kind = NETRUN_ACT_SWISH, fa->alpha = attr_f(nd, "alpha", 1.0f);
    else if (is_op(nd, "HardSigmoid")) {
        fa->kind = NETRUN_ACT_HARD_SIGMOID;
        fa->alpha = attr_f(nd, "alpha", 0.2f);
        fa->beta = attr_f(nd, "beta", 0.5f);
    } else if (is_op(nd, "Clip")) {
        fa->kind = NETRUN_ACT_CLIP;
        if (nd->opset < 11) {
            fa->alpha = attr_f(nd, "min", -INFINITY);
            fa->beta = attr_f(nd, "max", INFINITY);
        } else if (!scalar_input(g, nd, 1, -INFINITY, &fa->alpha) || !scalar_input(g, nd, 2, INFINITY, &fa->beta))
            return 0; /* bounds computed at run time */
    } else
        return 0;
    return 1;
}

/* Dropout that is the identity: inference (no training_mode, or a constant false one), mask unused. */
static int is_noop(const opt_state *o, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    if (*nd->domain || nd->n_inputs < 1 || nd->inputs[0] < 0 || nd->n_outputs < 1 || nd->outputs[0] < 0) return 0;
    if (g->values[nd->outputs[0]].is_graph_output) return 0; /* its name must stay an output */
    if (is_op(nd, "Identity")) return nd->n_outputs == 1;
    if (!is_op(nd, "Dropout")) return 0;
    if (nd->n_outputs > 1 && nd->outputs[1] >= 0) return 0; /* mask requested: keep the node */
    if (nd->opset < 12) {
        const nr_attr *t = find_attr(nd, "is_test");
        if (nd->opset < 7 && !(t && t->i)) return 0;
        return 1;
    }
    if (nd->n_inputs > 2 && nd->inputs[2] >= 0) {
        const nr_tensor *t = g->values[nd->inputs[2]].constant;
        if (!t || t->dtype != NETRUN_DTYPE_BOOL || nr_tensor_count(t) != 1 || *(const uint8_t *)t->data) return 0;
    }
    return 1;
}

/* The single kept consumer of value v, or -1 (several users, a graph output, or none). */
static int only_user(const opt_state *o, int v) {
    if (v < 0 || o->users[v] != 1 || o->g->values[v].is_graph_output) return -1;
    return o->removed[o->user[v]] ? -1 : o->user[v]; /* already absorbed by another Conv (Add of two Convs) */
}

static int same_slot(const opt_state *o, int a, int b) {
    return o->s->snodes[o->snode_of[a]].slot == o->s->snodes[o->snode_of[b]].slot;
}

/* Ask the Conv's backend whether it runs the fused node. */
static int backend_accepts(const opt_state *o, const netrun_backend_config *cfg, int n, const conv_plan *p) {
    netrun_session *s = o->s;
    const nr_node *nd = &o->g->nodes[n];
    const nr_snode *sn = &s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || !sn->params || nd->layer->params_size < sizeof(netrun_conv_params)) return 0;
    netrun_conv_params cp;
    memcpy(&cp, sn->params, sizeof cp);
    netrun_value_desc in[5];
    memset(in, 0, sizeof in);
    int n_in = nd->n_inputs < 3 ? nd->n_inputs : 3;
    for (int i = 0; i < n_in; i++) in[i] = sn->in_desc[i];
    if (n_in < 3) { /* bias absent */
        in[2].rank = -1;
        in[2].name = "";
        n_in = 3;
    }
    if (p->bn >= 0) { /* a folded BN gives a bias of M values */
        cp.has_bias = 1;
        in[2].name = "bias";
        in[2].dtype = in[1].dtype;
        in[2].rank = 1;
        in[2].dims[0] = sn->out_desc[0].dims[1];
    }
    if (p->mul >= 0) { /* X is the Mul's other input (same dims); S goes right after B */
        cp.src_scale = 1;
        in[0] = s->values[p->sx].desc;
        in[n_in++] = s->values[p->sv].desc;
    }
    if (p->add >= 0) {
        cp.has_sum = 1;
        in[n_in++] = s->values[p->z].desc;
    }
    if (p->act >= 0) cp.activation = p->fa;
    if (o->blk_query) cp.src_blocked = o->blk_query != 2, cp.dst_blocked = o->blk_query != 3;
    netrun_value_desc yd = s->values[p->out].desc;
    if (o->nhwc_query) { /* the region pass's question: everything float16, the constants too */
        cp.src_nhwc = cp.dst_nhwc = 1;
        for (int i = 0; i < n_in; i++) {
            if (in[i].rank < 0) continue;
            if (in[i].dtype == NETRUN_DTYPE_FLOAT) in[i].dtype = NETRUN_DTYPE_FLOAT16;
            if (i == 1 || i == 2) { /* supports() looks at presence and size only, never at the bytes */
                int64_t cnt = 1;
                for (int d = 0; d < in[i].rank; d++) cnt *= in[i].dims[d] > 0 ? in[i].dims[d] : 0;
                if (!in[i].const_data) in[i].const_data = &cp;
                in[i].const_nbytes = (size_t)cnt * 2;
            }
        }
        if (yd.dtype == NETRUN_DTYPE_FLOAT) yd.dtype = NETRUN_DTYPE_FLOAT16;
    }
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = nd->op_type, .domain = nd->domain,
                          .opset = nd->opset, .params = &cp, .params_size = nd->layer->params_size,
                          .n_inputs = n_in, .inputs = in, .n_outputs = 1, .outputs = &yd};
    char why[256] = "";
    const nr_slot *sl = &s->slots[sn->slot];
    return sl->api->supports(cfg, &d, why, sizeof why);
}

/* Plan the fusions around Conv node n. */
static void plan_conv(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    conv_plan *p = &o->plan[n];
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || sn->dynamic || nd->n_outputs != 1 || nd->outputs[0] < 0 || nd->n_inputs < 2) return;
    if (sn->out_desc[0].dtype != NETRUN_DTYPE_FLOAT || sn->out_desc[0].rank < 3) return;
    int transpose = is_op(nd, "ConvTranspose");
    int out = nd->outputs[0];
    /* (a) BatchNormalization with constant statistics, the Conv's only consumer */
    int b = only_user(o, out);
    if (b >= 0 && is_op(&g->nodes[b], "BatchNormalization") && val(o, g->nodes[b].inputs[0]) == out &&
        g->nodes[b].n_outputs >= 1 && g->nodes[b].outputs[0] >= 0 && g->nodes[b].n_inputs == 5) {
        const nr_node *bn = &g->nodes[b];
        int64_t m = sn->out_desc[0].dims[1];
        int ok = const_f32(g, val(o, nd->inputs[1])) != NULL && m > 0;
        if (nd->n_inputs > 2 && nd->inputs[2] >= 0) ok = ok && const_f32(g, val(o, nd->inputs[2]));
        for (int i = 1; i < 5 && ok; i++) {
            const nr_tensor *t = const_f32(g, val(o, bn->inputs[i]));
            ok = t && nr_tensor_count(t) == m;
        }
        for (int k = 1; k < bn->n_outputs; k++) ok = ok && bn->outputs[k] < 0; /* no training outputs */
        const nr_attr *tm = find_attr(bn, "training_mode");
        if (tm && tm->i) ok = 0;
        (void)transpose;
        if (ok) {
            p->bn = b;
            p->out = out = bn->outputs[0];
            if (!backend_accepts(o, cfg, n, p)) {
                p->bn = -1;
                p->out = out = nd->outputs[0];
            }
        }
    }
    /* (c) + Z: an Add of the (folded) Conv output and another value of the same shape, same backend */
    int a = only_user(o, out);
    if (a >= 0 && is_op(&g->nodes[a], "Add") && g->nodes[a].n_inputs == 2 && g->nodes[a].outputs[0] >= 0 &&
        same_slot(o, n, a)) {
        const nr_node *ad = &g->nodes[a];
        int i0 = val(o, ad->inputs[0]), i1 = val(o, ad->inputs[1]);
        int z = i0 == out ? i1 : i0;
        const netrun_value_desc *zd = &o->s->values[z].desc, *yd = &o->s->values[out].desc;
        if ((i0 == out) != (i1 == out) && z >= 0 && !o->s->values[z].dynamic && zd->dtype == yd->dtype &&
            zd->rank == yd->rank && !memcmp(zd->dims, yd->dims, sizeof(int64_t) * (size_t)yd->rank)) {
            p->add = a;
            p->z = z;
            int prev = p->out;
            p->out = ad->outputs[0];
            if (!backend_accepts(o, cfg, n, p)) {
                p->add = -1;
                p->out = prev;
            } else
                out = p->out;
        }
    }
    /* (b) activation, same backend; a Mul the SiLU pass turned into Swish(out) counts as one */
    int u = only_user(o, out);
    netrun_fused_activation fa;
    int is_act = 0;
    if (u >= 0 && o->swish_x[u] >= 0) {
        memset(&fa, 0, sizeof fa);
        fa.kind = NETRUN_ACT_SWISH;
        fa.alpha = 1.0f;
        is_act = o->swish_x[u] == out;
    } else if (u >= 0)
        is_act = activation_of(g, &g->nodes[u], &fa) && val(o, g->nodes[u].inputs[0]) == out;
    if (is_act && g->nodes[u].outputs[0] >= 0 && same_slot(o, n, u)) {
        p->act = u;
        p->fa = fa;
        int prev = p->out;
        p->out = g->nodes[u].outputs[0];
        if (!backend_accepts(o, cfg, n, p)) {
            p->act = -1;
            p->out = prev;
        }
    }
}

/* The graph node producing value v (after aliasing), or -1 (graph input, constant). */
static int producer(const opt_state *o, int v) {
    if (v < 0 || o->s->values[v].producer < 0) return -1;
    return o->s->snodes[o->s->values[v].producer].node;
}

/* (e) SiLU: Mul n = Mul(x, Sigmoid(x)) (either order), the Sigmoid's output used by that Mul only, both on one
 * backend whose supports() takes Swish(x) with alpha 1: the Mul becomes Swish(x) (one pass over memory instead
 * of two) and the Sigmoid goes. Returns 1 when planned. */
static int plan_silu(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    netrun_session *s = o->s;
    if (!is_op(nd, "Mul") || nd->n_inputs != 2 || nd->n_outputs != 1 || nd->outputs[0] < 0 || o->snode_of[n] < 0)
        return 0;
    const nr_snode *sn = &s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || sn->dynamic) return 0;
    for (int side = 0; side < 2; side++) {
        int x = val(o, nd->inputs[side]), sv = val(o, nd->inputs[1 - side]);
        int sg = producer(o, sv);
        if (x < 0 || sg < 0 || o->removed[sg] || only_user(o, sv) != n) continue;
        const nr_node *sd = &g->nodes[sg];
        if (!is_op(sd, "Sigmoid") || sd->n_inputs != 1 || sd->n_outputs != 1 || val(o, sd->inputs[0]) != x ||
            o->snode_of[sg] < 0 || !same_slot(o, n, sg))
            continue;
        const netrun_value_desc *xd = &s->values[x].desc, *yd = &s->values[nd->outputs[0]].desc;
        if (s->values[x].dynamic || xd->rank != yd->rank || xd->dtype != yd->dtype ||
            memcmp(xd->dims, yd->dims, sizeof(int64_t) * (size_t)(yd->rank > 0 ? yd->rank : 0)))
            continue;
        netrun_unary_params up;
        memset(&up, 0, sizeof up);
        up.alpha = 1.0f;
        netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = "Swish", .domain = "",
                              .opset = 24, .params = &up, .params_size = sizeof up, .n_inputs = 1, .inputs = xd,
                              .n_outputs = 1, .outputs = yd};
        char why[256] = "";
        const nr_slot *sl = &s->slots[sn->slot];
        if (!sl->api->supports(cfg, &d, why, sizeof why)) return 0;
        o->swish_x[n] = x;
        o->removed[sg] = 1;
        /* x loses the Sigmoid as a user: the Swish may be the only one left, which a Conv then absorbs */
        if (--o->users[x] == 1) o->user[x] = n;
        return 1;
    }
    return 0;
}

/* ---- building the copy ---- */

static nr_tensor *borrow(const nr_tensor *t) {
    nr_tensor *c = nr_calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = *t;
    c->owns_data = 0; /* data stays the original model's, kept alive by the copy's reference on it */
    return c;
}

static netrun_status copy_attr(nr_attr *d, const nr_attr *a) {
    d->type = a->type;
    d->i = a->i;
    d->f = a->f;
    d->n = a->n;
    if (!(d->name = nr_strdup(a->name ? a->name : ""))) goto oom;
    if (a->s) {
        if (!(d->s = nr_malloc(a->s_len + 1))) goto oom;
        memcpy(d->s, a->s, a->s_len);
        d->s[a->s_len] = 0;
        d->s_len = a->s_len;
    }
    if (a->t && !(d->t = borrow(a->t))) goto oom;
    size_t n = a->n > 0 ? (size_t)a->n : 0;
    if (a->ints) {
        if (!(d->ints = nr_calloc(n + 1, sizeof(int64_t)))) goto oom;
        memcpy(d->ints, a->ints, n * sizeof(int64_t));
    }
    if (a->floats) {
        if (!(d->floats = nr_calloc(n + 1, sizeof(float)))) goto oom;
        memcpy(d->floats, a->floats, n * sizeof(float));
    }
    if (a->strings) {
        if (!(d->strings = nr_calloc(n + 1, sizeof(char *)))) goto oom;
        for (size_t i = 0; i < n; i++)
            if (a->strings[i] && !(d->strings[i] = nr_strdup(a->strings[i]))) goto oom;
    }
    if (a->tensors) {
        if (!(d->tensors = nr_calloc(n + 1, sizeof(nr_tensor *)))) goto oom;
        for (size_t i = 0; i < n; i++)
            if (a->tensors[i] && !(d->tensors[i] = borrow(a->tensors[i]))) goto oom;
    }
    return NETRUN_OK;
oom:
    return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying attribute '%s'", a->name ? a->name : "");
}

/* A new float constant value named after base (unique in g). */
static int new_const(nr_graph *g, const char *base, const char *suffix, nr_tensor *t) {
    char name[512];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    for (int k = 2; nr_graph_find_value(g, name) >= 0; k++) snprintf(name, sizeof name, "%s%s%d", base, suffix, k);
    int id = nr_graph_value(g, name);
    if (id < 0) {
        nr_tensor_free(t);
        return -1;
    }
    nr_value *v = &g->values[id];
    v->constant = t;
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int d = 0; d < t->rank; d++) v->dims[d] = t->dims[d];
    return id;
}

/* W' = W * s per output channel, B' = (B - mean) * s + beta, s = gamma / sqrt(var + eps). */
static netrun_status fold_bn(const opt_state *o, nr_graph *ng, const nr_node *nd, const nr_node *bn, int *w_id,
                             int *b_id) {
    const nr_graph *g = o->g;
    const nr_tensor *w = const_f32(g, val(o, nd->inputs[1]));
    const nr_tensor *b = nd->n_inputs > 2 && nd->inputs[2] >= 0 ? const_f32(g, val(o, nd->inputs[2])) : NULL;
    const float *gamma = const_f32(g, val(o, bn->inputs[1]))->data, *beta = const_f32(g, val(o, bn->inputs[2]))->data;
    const float *mean = const_f32(g, val(o, bn->inputs[3]))->data, *var = const_f32(g, val(o, bn->inputs[4]))->data;
    int64_t m = nr_tensor_count(const_f32(g, val(o, bn->inputs[1])));
    float eps = attr_f(bn, "epsilon", 1e-5f);
    int transpose = is_op(nd, "ConvTranspose");
    const netrun_conv_params *cp = nd->params;
    int64_t group = cp && cp->group > 0 ? cp->group : 1;
    int64_t nw = nr_tensor_count(w);
    if (w->rank < 3 || nw <= 0 || (b && nr_tensor_count(b) != m))
        return nr_error(NETRUN_ERR_INTERNAL, "node '%s': unexpected weight shape folding '%s'", nd->name, bn->name);
    int64_t inner = nw / w->dims[0] / w->dims[1]; /* kernel elements */
    float *scale = nr_calloc((size_t)m + 1, sizeof(float));
    nr_tensor *nw_t = nr_tensor_new(NETRUN_DTYPE_FLOAT, w->rank, w->dims);
    int64_t bd[1] = {m};
    nr_tensor *nb_t = nr_tensor_new(NETRUN_DTYPE_FLOAT, 1, bd);
    if (!scale || !nw_t || !nb_t) {
        nr_free(scale);
        nr_tensor_free(nw_t);
        nr_tensor_free(nb_t);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory folding '%s' into '%s'", bn->name, nd->name);
    }
    for (int64_t c = 0; c < m; c++) scale[c] = gamma[c] / sqrtf(var[c] + eps);
    const float *src = w->data;
    float *dst = nw_t->data, *bias = nb_t->data;
    for (int64_t i0 = 0; i0 < w->dims[0]; i0++)
        for (int64_t i1 = 0; i1 < w->dims[1]; i1++) {
            /* output channel: W dim 0 for Conv; for ConvTranspose W is [C, M/group, k...] */
            int64_t oc = transpose ? (i0 / (w->dims[0] / group)) * w->dims[1] + i1 : i0;
            float sc = oc < m ? scale[oc] : 1.0f;
            const float *s = src + (i0 * w->dims[1] + i1) * inner;
            float *d = dst + (i0 * w->dims[1] + i1) * inner;
            for (int64_t k = 0; k < inner; k++) d[k] = s[k] * sc;
        }
    for (int64_t c = 0; c < m; c++)
        bias[c] = ((b ? ((const float *)b->data)[c] : 0.0f) - mean[c]) * scale[c] + beta[c];
    nr_free(scale);
    *w_id = new_const(ng, g->values[nd->inputs[1]].name, ".bn_folded", nw_t);
    *b_id = *w_id < 0 ? -1 : new_const(ng, bn->name, ".bias_folded", nb_t);
    if (*w_id < 0 && nb_t) nr_tensor_free(nb_t);
    if (*w_id < 0 || *b_id < 0) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory adding folded weights");
    return NETRUN_OK;
}

static netrun_status copy_values(const nr_graph *g, nr_graph *ng) {
    for (int v = 0; v < g->n_values; v++) {
        const nr_value *a = &g->values[v];
        int id = nr_graph_value(ng, a->name);
        if (id != v) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying the graph's values");
        nr_value *b = &ng->values[id];
        b->dtype = a->dtype;
        b->rank = a->rank;
        memcpy(b->dims, a->dims, sizeof b->dims);
        for (int d = 0; d < NETRUN_MAX_RANK; d++)
            if (a->dim_names[d] && !(b->dim_names[d] = nr_strdup(a->dim_names[d])))
                return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying the graph's values");
        if (a->constant && !(b->constant = borrow(a->constant)))
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying the graph's values");
        if (a->default_value && !(b->default_value = borrow(a->default_value)))
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying the graph's values");
        b->is_graph_input = a->is_graph_input;
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (nr_graph_add_input(ng, g->inputs[i]) != NETRUN_OK) return NETRUN_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < g->n_outputs; i++)
        if (nr_graph_add_output(ng, g->outputs[i]) != NETRUN_OK) return NETRUN_ERR_OUT_OF_MEMORY;
    ng->n_formal_inputs = g->n_formal_inputs;
    return NETRUN_OK;
}

/* Name of the node that stands for node n: "<sigmoid>+<mul>" for a SiLU pair, else n's own. */
static void swish_name(const opt_state *o, int n, char *buf, size_t size) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    if (o->swish_x[n] < 0) {
        snprintf(buf, size, "%s", nd->name);
        return;
    }
    for (int i = 0; i < nd->n_inputs; i++) {
        int v = val(o, nd->inputs[i]);
        if (v == o->swish_x[n]) continue;
        int sg = producer(o, v);
        snprintf(buf, size, "%s+%s", sg >= 0 ? g->nodes[sg].name : "?", nd->name);
        return;
    }
    snprintf(buf, size, "%s", nd->name);
}

static netrun_status build_copy(opt_state *o, nr_graph *ng, int **params_from) {
    const nr_graph *g = o->g;
    netrun_status st = copy_values(g, ng);
    if (st != NETRUN_OK) return st;
    int *from = nr_calloc((size_t)g->n_nodes + 1, sizeof(int)); /* new node -> original node */
    if (!from) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory");
    *params_from = from;
    for (int n = 0; n < g->n_nodes; n++) {
        if (o->removed[n]) continue;
        const nr_node *nd = &g->nodes[n];
        const conv_plan *p = &o->plan[n];
        int fused = plan_absorbs(p);
        char name[1280], act_name[512] = "";
        if (p->act >= 0) swish_name(o, p->act, act_name, sizeof act_name);
        snprintf(name, sizeof name, "%s%s%s%s%s%s%s%s%s", p->mul >= 0 ? g->nodes[p->mul].name : "", p->mul >= 0 ? "+" : "",
                 nd->name, p->bn >= 0 ? "+" : "", p->bn >= 0 ? g->nodes[p->bn].name : "", p->add >= 0 ? "+" : "",
                 p->add >= 0 ? g->nodes[p->add].name : "", p->act >= 0 ? "+" : "", act_name);
        if (o->swish_x[n] >= 0) { /* Mul(x, Sigmoid(x)) -> Swish(x); alpha defaults to 1 */
            swish_name(o, n, name, sizeof name);
            nr_node *sw = nr_graph_add_node(ng, name, "Swish", "", 1, 1, ng->n_nodes == 0);
            if (!sw) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", nd->name);
            from[ng->n_nodes - 1] = n;
            sw->inputs[0] = o->swish_x[n];
            sw->outputs[0] = nd->outputs[0];
            continue;
        }
        int w_id = -1, b_id = -1;
        if (p->bn >= 0 && (st = fold_bn(o, ng, nd, &g->nodes[p->bn], &w_id, &b_id)) != NETRUN_OK) return st;
        int n_in = nd->n_inputs;
        int zi = 3 + (p->mul >= 0); /* Z's index: after S when a scale is folded in */
        if (fused) {
            n_in = zi + (p->add >= 0);
            if (p->add < 0 && p->bn < 0 && p->mul < 0 && nd->n_inputs < 3) n_in = nd->n_inputs;
        }
        int n_attrs = nd->n_attrs + (ng->n_nodes == 0);
        nr_node *nn = nr_graph_add_node(ng, name, nd->op_type, nd->domain, n_in, nd->n_outputs, n_attrs);
        if (!nn) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", nd->name);
        from[ng->n_nodes - 1] = n;
        for (int i = 0; i < n_in; i++) nn->inputs[i] = i < nd->n_inputs ? val(o, nd->inputs[i]) : -1;
        if (w_id >= 0) nn->inputs[1] = w_id;
        if (b_id >= 0) nn->inputs[2] = b_id;
        if (p->mul >= 0) nn->inputs[0] = p->sx, nn->inputs[3] = p->sv;
        if (p->add >= 0) nn->inputs[zi] = p->z;
        for (int k = 0; k < nd->n_outputs; k++) nn->outputs[k] = nd->outputs[k];
        if (fused) nn->outputs[0] = p->out;
        for (int a = 0; a < nd->n_attrs; a++)
            if ((st = copy_attr(&nn->attrs[a], &nd->attrs[a])) != NETRUN_OK) return st;
    }
    return NETRUN_OK;
}

/* ---- (f) nChw16c across CPU layers ----
 * oneDNN's convs run on nChw16c ([N][C/16][H][W][16]); a chain of them (and the elementwise ops between
 * them) keeps that order instead of reordering NCHW <-> nChw16c inside every Conv. Only 4-D float32 values
 * with C % 16 == 0 are blocked, so a blocked value has the same dims and bytes as its NCHW self: the runtime
 * never knows. Decided on the copy (its nodes are the final ones): a value is blocked when a blocked-capable
 * Conv (the CPU's supports() with src_blocked = dst_blocked = 1) writes it, or an elementwise op all of whose
 * inputs are blocked with its own shape; any other consumer, and a graph output, reads it through a
 * ReorderNCHWc node (com.netrun) inserted before it; GlobalAveragePool reads it directly
 * (GlobalAveragePoolNCHWc). A Conv with no blocked consumer writes NCHW (it reorders inside, as before). */

static int on_cpu(const opt_state *o, int n) {
    int k = o->snode_of[n];
    if (k < 0) return 0;
    int sl = o->s->snodes[k].slot;
    return sl >= 0 && o->s->slots[sl].be && o->s->slots[sl].be->name && !strcmp(o->s->slots[sl].be->name, "cpu");
}

static int nchwc_enabled(const opt_state *o) {
    const char *on = nr_options_get(&o->s->opts, "cpu.nchwc");
    return !(on && !strcmp(on, "0"));
}

/* [N, C, 1, 1] values stay plain: the same memory either way, and squeeze-excite scales must be plain */
static int blockable_desc(const netrun_value_desc *d) {
    return d->dtype == NETRUN_DTYPE_FLOAT && d->rank == 4 && d->dims[0] > 0 && d->dims[1] > 0 && d->dims[1] % 16 == 0 &&
           d->dims[2] > 0 && d->dims[3] > 0 && d->dims[2] * d->dims[3] > 1;
}

/* Conv node n (fusions planned) runs blocked on the CPU: 1 reading and writing nChw16c, 2 writing it only
 * (X has a C that is no multiple of 16: the first conv of a net), 3 reading it only (Y's C is no multiple of
 * 16: MobileNet/EfficientNet projections), 0 not at all. */
static int plan_blk_conv(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_node *nd = &o->g->nodes[n];
    if (!is_op(nd, "Conv") || !nd->layer || !on_cpu(o, n) || o->s->snodes[o->snode_of[n]].dynamic) return 0;
    const conv_plan *p = &o->plan[n];
    int out = plan_out(p, nd);
    const netrun_value_desc *xd = &o->s->snodes[o->snode_of[n]].in_desc[0];
    if (out < 0 || o->s->values[out].dynamic || o->s->values[out].desc.rank != 4 || xd->dtype != NETRUN_DTYPE_FLOAT ||
        xd->rank != 4)
        return 0;
    int bx = blockable_desc(xd), by = blockable_desc(&o->s->values[out].desc);
    if (!bx && !by) return 0;
    conv_plan q = *p;
    q.out = out;
    o->blk_query = bx && by ? 1 : by ? 2 : 3;
    int ok = backend_accepts(o, cfg, n, &q) ? o->blk_query : 0;
    o->blk_query = 0;
    return ok;
}

/* The kept node that writes value v, a fused Conv included (it writes its last absorbed node's output, which
 * producer() gives as that absorbed node), or -1. */
static int writer_of(const opt_state *o, int v) {
    for (int k = 0; k < o->g->n_nodes; k++) {
        if (!o->removed[k] && plan_out(&o->plan[k], &o->g->nodes[k]) == v) return k;
    }
    return -1;
}

/* Squeeze-excite's Mul(X, S [N or 1, C, 1, 1]) read only by 1x1 Conv n (stride 1, no pads, group 1): the
 * Conv takes X and S instead (params.src_scale) when its CPU kernel then reads X blocked; the Mul is gone.
 * The scale costs the kernel one multiply per packed weight and task (conv1x1_blk.c); the Mul was a pass
 * over the block's widest tensor (EfficientNet-B0 batch 8: 5% of the run). Returns the Conv's blk_conv. */
static int plan_se_fold(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    netrun_session *s = o->s;
    conv_plan *p = &o->plan[n];
    int base = plan_blk_conv(o, cfg, n);
    if (!is_op(nd, "Conv") || !nd->layer || nd->n_inputs < 2 || nd->layer->params_size < sizeof(netrun_conv_params))
        return base;
    const nr_snode *sn = &s->snodes[o->snode_of[n]];
    const netrun_conv_params *cp = sn->params;
    int x = val(o, nd->inputs[0]);
    const char *on = nr_options_get(&s->opts, "cpu.se_fold");
    if ((on && !strcmp(on, "0")) || !cp || cp->n_spatial != 2 || cp->group != 1 || x < 0 || only_user(o, x) != n) return base;
    for (int i = 0; i < 2; i++)
        if (cp->kernel[i] != 1 || cp->strides[i] != 1 || cp->pads_begin[i] || cp->pads_end[i]) return base;
    int m = producer(o, x);
    if (m < 0 || o->removed[m] || !is_op(&g->nodes[m], "Mul") || g->nodes[m].n_inputs != 2 || o->swish_x[m] >= 0 || !on_cpu(o, m) ||
        !same_slot(o, m, n) ||
        s->snodes[o->snode_of[m]].dynamic || s->values[x].dynamic)
        return base;
    const netrun_value_desc *yd = &s->values[x].desc;
    for (int j = 0; j < 2; j++) {
        int xv = val(o, g->nodes[m].inputs[j]), sv = val(o, g->nodes[m].inputs[1 - j]);
        if (xv < 0 || sv < 0 || s->values[xv].dynamic || s->values[sv].dynamic) continue;
        /* X must come blocked: from a Conv writing nChw16c (it keeps doing so, this Conv reads it blocked) */
        int px = writer_of(o, xv);
        if (px < 0 || (o->blk_conv[px] != 1 && o->blk_conv[px] != 2)) continue;
        const netrun_value_desc *xd = &s->values[xv].desc, *sd = &s->values[sv].desc;
        if (xd->rank != 4 || xd->dtype != NETRUN_DTYPE_FLOAT || memcmp(xd->dims, yd->dims, 4 * sizeof(int64_t)) ||
            sd->rank != 4 || sd->dtype != NETRUN_DTYPE_FLOAT || (sd->dims[0] != 1 && sd->dims[0] != xd->dims[0]) ||
            sd->dims[1] != xd->dims[1] || sd->dims[2] != 1 || sd->dims[3] != 1)
            continue;
        int out0 = p->out;
        if (!plan_absorbs(p)) p->out = nd->outputs[0];
        p->mul = m, p->sx = xv, p->sv = sv;
        int blk = plan_blk_conv(o, cfg, n);
        if (blk == 1 || blk == 3) { /* reads X blocked: the kernels that take the scale */
            o->removed[m] = 1;
            return blk;
        }
        p->mul = -1;
        p->out = out0;
    }
    return base;
}

/* Layout-agnostic when all its data inputs have its output's dims. */
static int agnostic_op(const nr_node *nd) {
    static const char *const unary[] = {"Relu", "Sigmoid", "Tanh", "Swish", "LeakyRelu", "HardSwish",
                                        "HardSigmoid", "Clip", "Elu", "Abs", "Neg", "Exp", "Softplus", NULL};
    static const char *const binary[] = {"Add", "Sub", "Mul", "Max", "Min", NULL};
    if (*nd->domain || nd->n_outputs != 1) return 0;
    for (int i = 0; unary[i]; i++)
        if (!strcmp(nd->op_type, unary[i])) return 1;
    for (int i = 0; binary[i]; i++)
        if (!strcmp(nd->op_type, binary[i])) return 2;
    /* Concat on channels: per image, nChw16c inputs with C % 16 == 0 are [C/16][H][W][16] blocks one after
     * another, so it is the same memory concatenation as in NCHW (the kernel needs no change) */
    if (!strcmp(nd->op_type, "Concat") && nd->n_inputs >= 1) {
        const nr_attr *a = find_attr(nd, "axis");
        if (a && a->type == NR_ATTR_INT && (a->i == 1 || a->i == -3)) return 3;
    }
    return 0;
}

enum { NK_PLAIN = 0, NK_CONV, NK_AGN, NK_GAP, NK_POOL, NK_MULCH };

/* MaxPool node n (no Indices) runs on nChw16c on its CPU kernel (its supports() with params.blocked = 1). */
static int pool_accepts_blocked(const opt_state *o, const netrun_backend_config *cfg, int n) {
    netrun_session *s = o->s;
    const nr_node *nd = &o->g->nodes[n];
    if (!is_op(nd, "MaxPool") || !on_cpu(o, n) || nd->n_inputs != 1 || nd->n_outputs < 1 || nd->outputs[0] < 0 ||
        (nd->n_outputs > 1 && nd->outputs[1] >= 0) || !nd->layer || nd->layer->params_size < sizeof(netrun_pool_params))
        return 0;
    const nr_snode *sn = &s->snodes[o->snode_of[n]];
    if (sn->dynamic || !sn->params || !blockable_desc(&s->values[nd->outputs[0]].desc)) return 0;
    netrun_pool_params pp;
    memcpy(&pp, sn->params, sizeof pp);
    pp.blocked = 1;
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = nd->op_type, .domain = nd->domain,
                          .opset = nd->opset, .params = &pp, .params_size = nd->layer->params_size,
                          .n_inputs = 1, .inputs = sn->in_desc, .n_outputs = 1,
                          .outputs = &s->values[nd->outputs[0]].desc};
    char why[256] = "";
    return s->slots[sn->slot].api->supports(cfg, &d, why, sizeof why);
}

typedef struct nchwc_state {
    nr_graph *ng;
    int nv0;           /* values before the pass */
    char *vblk;        /* value -> written blocked */
    int *blkval;       /* value -> value holding its nChw16c data (-1: none yet) */
    int *plainval;     /* value -> value holding its NCHW data (-1: none yet) */
    int reorders;
} nchwc_state;

/* A new value like v (same dtype and dims), named v's name + suffix. */
static int like_value(nr_graph *ng, int v, const char *suffix) {
    char name[600];
    snprintf(name, sizeof name, "%s%s", ng->values[v].name, suffix);
    for (int k = 2; nr_graph_find_value(ng, name) >= 0; k++)
        snprintf(name, sizeof name, "%s%s%d", ng->values[v].name, suffix, k);
    int id = nr_graph_value(ng, name);
    if (id < 0) return -1;
    nr_value *a = &ng->values[v], *b = &ng->values[id];
    b->dtype = a->dtype;
    b->rank = a->rank;
    memcpy(b->dims, a->dims, sizeof b->dims);
    return id;
}

/* An internal layout node (com.netrun) from -> to with one int attribute, named after to's value. 1, or 0 on OOM. */
static int add_layout_node(nr_graph *ng, int from, int to, const char *op, const char *attr, int value,
                           const char *suffix) {
    char name[640];
    snprintf(name, sizeof name, "%s.%s", ng->values[to].name, suffix);
    nr_node *r = nr_graph_add_node(ng, name, op, "com.netrun", 1, 1, 1);
    if (!r) return 0;
    r->inputs[0] = from;
    r->outputs[0] = to;
    r->attrs[0].type = NR_ATTR_INT;
    r->attrs[0].i = value;
    return (r->attrs[0].name = nr_strdup(attr)) != NULL;
}

static int add_reorder(nchwc_state *st, int from, int to, int to_blocked) {
    if (!add_layout_node(st->ng, from, to, "ReorderNCHWc", "to_blocked", to_blocked,
                         to_blocked ? "to_nchw16c" : "to_nchw"))
        return 0;
    st->reorders++;
    return 1;
}

/* The value holding v in the wanted layout (a reorder is added the first time one is needed); -1 on OOM. */
static int layout_of(nchwc_state *st, int v, int blocked) {
    if (v < 0 || v >= st->nv0) return v;
    if (!st->vblk[v] && !blocked) return v;
    if (st->vblk[v] && blocked) return st->blkval[v] >= 0 ? st->blkval[v] : v;
    int *slot = blocked ? &st->blkval[v] : &st->plainval[v];
    if (*slot >= 0) return *slot;
    int src = st->vblk[v] ? (st->blkval[v] >= 0 ? st->blkval[v] : v) : v;
    int id = like_value(st->ng, v, blocked ? ".nchw16c" : ".nchw");
    if (id < 0 || !add_reorder(st, src, id, blocked)) return -1;
    return *slot = id;
}

/* Decide and rewire the copy ng (nodes 0..n_copied-1 come from original nodes from[]); conv_blk[k] gets
 * 1 (src) | 2 (dst) for the copy's Conv nodes that run blocked. */
static netrun_status plan_nchwc(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
                                int n_copied, int *conv_blk, int *n_reorders) {
    const nr_graph *g = o->g;
    netrun_session *s = o->s;
    netrun_status rc = NETRUN_OK;
    nchwc_state st = {.ng = ng, .nv0 = ng->n_values};
    int *to = nr_calloc((size_t)g->n_nodes + 1, sizeof(int));
    char *kind = nr_calloc((size_t)n_copied + 1, 1);
    st.vblk = nr_calloc((size_t)st.nv0 + 1, 1);
    st.blkval = nr_calloc((size_t)st.nv0 + 1, sizeof(int));
    st.plainval = nr_calloc((size_t)st.nv0 + 1, sizeof(int));
    if (!to || !kind || !st.vblk || !st.blkval || !st.plainval) {
        rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the nChw16c pass");
        goto done;
    }
    for (int n = 0; n < g->n_nodes; n++) to[n] = -1;
    for (int k = 0; k < n_copied; k++) to[from[k]] = k;
    for (int v = 0; v < st.nv0; v++) st.blkval[v] = st.plainval[v] = -1;
    /* forward, in execution order: who writes blocked */
    for (int i = 0; i < s->n_snodes; i++) {
        int n = s->snodes[i].node, k = n >= 0 && n < g->n_nodes ? to[n] : -1;
        if (k < 0) continue;
        const nr_node *nd = &ng->nodes[k];
        int out = nd->n_outputs > 0 ? nd->outputs[0] : -1;
        if (out < 0 || out >= g->n_values) continue;
        if (o->blk_conv[n]) {
            kind[k] = NK_CONV;
            st.vblk[out] = o->blk_conv[n] != 3;
            continue;
        }
        if (!on_cpu(o, n)) continue;
        /* squeeze-excite: Mul(X blocked, S [N or 1, C, 1, 1] plain), either order -> MulChannelNCHWc(X, S) */
        if (is_op(nd, "Mul") && nd->n_inputs == 2 && !s->values[out].dynamic && blockable_desc(&s->values[out].desc)) {
            int side = -1;
            for (int j = 0; j < 2 && side < 0; j++) {
                int xv = nd->inputs[j], sv = nd->inputs[1 - j];
                if (xv < 0 || sv < 0 || xv >= g->n_values || sv >= g->n_values || !st.vblk[xv] || st.vblk[sv]) continue;
                const netrun_value_desc *xd = &s->values[xv].desc, *sd = &s->values[sv].desc;
                if (!memcmp(xd->dims, s->values[out].desc.dims, 4 * sizeof(int64_t)) && sd->rank == 4 &&
                    sd->dtype == NETRUN_DTYPE_FLOAT && (sd->dims[0] == xd->dims[0] || sd->dims[0] == 1) &&
                    sd->dims[1] == xd->dims[1] && sd->dims[2] == 1 && sd->dims[3] == 1 && !s->values[sv].dynamic)
                    side = j;
            }
            if (side >= 0) {
                nr_node *mn = &ng->nodes[k];
                int xv = mn->inputs[side], sv = mn->inputs[1 - side];
                mn->inputs[0] = xv;
                mn->inputs[1] = sv;
                kind[k] = NK_MULCH;
                st.vblk[out] = 1;
                continue;
            }
        }
        int x = nd->n_inputs > 0 ? nd->inputs[0] : -1;
        if (x < 0 || x >= g->n_values || !st.vblk[x]) continue;
        if (is_op(nd, "GlobalAveragePool") && nd->n_inputs == 1) {
            kind[k] = NK_GAP;
            continue;
        }
        if (is_op(nd, "MaxPool")) {
            if (pool_accepts_blocked(o, cfg, n)) {
                kind[k] = NK_POOL;
                st.vblk[out] = 1;
            }
            continue;
        }
        int a = agnostic_op(nd);
        if (!a || s->values[out].dynamic || !blockable_desc(&s->values[out].desc)) continue;
        const netrun_value_desc *yd = &s->values[out].desc;
        int ok = 1;
        for (int j = 0; j < nd->n_inputs && ok; j++) {
            int v = nd->inputs[j];
            if (a == 1 && j > 0) { /* Clip's bounds: scalars */
                ok = v < 0 || (v < g->n_values && !st.vblk[v] && s->values[v].desc.rank <= 1);
                continue;
            }
            if (a == 3) { /* Concat: same N, H, W; every C a multiple of 16 */
                const netrun_value_desc *vd = v >= 0 && v < g->n_values ? &s->values[v].desc : NULL;
                ok = vd && st.vblk[v] && blockable_desc(vd) && vd->dims[0] == yd->dims[0] &&
                     vd->dims[2] == yd->dims[2] && vd->dims[3] == yd->dims[3];
                continue;
            }
            ok = v >= 0 && v < g->n_values && st.vblk[v] && !memcmp(s->values[v].desc.dims, yd->dims, 4 * sizeof(int64_t));
        }
        if (a == 2) ok = ok && nd->n_inputs == 2;
        if (ok) {
            kind[k] = NK_AGN;
            st.vblk[out] = 1;
        }
    }
    /* a Conv none of whose consumers reads blocked writes NCHW (it reorders inside, as before) */
    for (int k = 0; k < n_copied; k++) {
        if (kind[k] != NK_CONV) continue;
        int out = ng->nodes[k].outputs[0], blk_users = 0;
        for (int u = 0; u < n_copied && !blk_users; u++)
            for (int j = 0; j < ng->nodes[u].n_inputs; j++)
                if (ng->nodes[u].inputs[j] == out &&
                    kind[u] != NK_PLAIN && (kind[u] != NK_MULCH || j == 0)) /* Z (j == 3) included: that Conv's Y is likely blocked too */
                    blk_users = 1;
        if (!blk_users) st.vblk[out] = 0;
    }
    /* rewire: every input in the layout its consumer reads; blocked graph outputs written under a new name */
    for (int k = 0; k < n_copied && rc == NETRUN_OK; k++) {
        int out = ng->nodes[k].n_outputs > 0 ? ng->nodes[k].outputs[0] : -1;
        if (out >= 0 && out < g->n_values && st.vblk[out] && g->values[out].is_graph_output) {
            int id = like_value(ng, out, ".nchw16c");
            if (id < 0 || !add_reorder(&st, id, out, 0)) {
                rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the nChw16c pass");
                break;
            }
            st.blkval[out] = id;
            st.plainval[out] = out;
            ng->nodes[k].outputs[0] = id;
        }
    }
    for (int k = 0; k < n_copied && rc == NETRUN_OK; k++) {
        int out = ng->nodes[k].n_outputs > 0 ? ng->nodes[k].outputs[0] : -1;
        int out_blk = kind[k] == NK_CONV && out >= 0 && (out >= st.nv0 || st.vblk[out]); /* >= nv0: renamed */
        if (kind[k] == NK_CONV) conv_blk[k] = out_blk ? 2 : 0;
        if (kind[k] == NK_POOL) conv_blk[k] = 4;
        for (int j = 0; j < ng->nodes[k].n_inputs; j++) {
            int v = ng->nodes[k].inputs[j];
            if (v < 0 || v >= g->n_values || ng->values[v].constant) continue; /* (new values are constants) */
            int want;
            if (kind[k] == NK_CONV) /* Z (last, when fused) follows Y; a folded scale S stays plain */
                want = j == 0 ? st.vblk[v] : j == ng->nodes[k].n_inputs - 1 && o->plan[from[k]].add >= 0 ? out_blk : 0;
            else if (kind[k] == NK_AGN) want = j == 0 || agnostic_op(&ng->nodes[k]) >= 2;
            else if (kind[k] == NK_GAP || kind[k] == NK_POOL) want = 1;
            else if (kind[k] == NK_MULCH) want = j == 0;
            else want = 0;
            int id = layout_of(&st, v, want);
            if (id < 0) {
                rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the nChw16c pass");
                break;
            }
            ng->nodes[k].inputs[j] = id;
            if (kind[k] == NK_CONV && j == 0 && want) conv_blk[k] |= 1;
        }
        if (kind[k] == NK_GAP || kind[k] == NK_MULCH) {
            nr_node *nd = &ng->nodes[k];
            char *op = nr_strdup(kind[k] == NK_GAP ? "GlobalAveragePoolNCHWc" : "MulChannelNCHWc");
            char *dom = nr_strdup("com.netrun");
            if (!op || !dom) {
                nr_free(op);
                nr_free(dom);
                rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the nChw16c pass");
                break;
            }
            nr_free(nd->op_type);
            nr_free(nd->domain);
            nd->op_type = op;
            nd->domain = dom;
        }
    }
    *n_reorders = st.reorders;
done:
    nr_free(to);
    nr_free(kind);
    nr_free(st.vblk);
    nr_free(st.blkval);
    nr_free(st.plainval);
    return rc;
}

/* ---- (g) float16 NHWC regions across CUDA layers ----
 * Under --precision fp16, a Conv on CUDA otherwise converts its float32 NCHW X to float16 (NHWC) and Y back
 * inside its kernel, two conversion kernels per Conv. Here connected CUDA nodes that gain from float16 keep
 * their values float16 and channels last: Convs with constant weights (cuDNN NHWC tensor-core kernels), the
 * same-shape elementwise ops between them (layout-agnostic), MaxPool/AveragePool (params.nhwc),
 * GlobalAveragePool (GlobalAveragePoolNHWC, com.netrun) and squeeze-excite's Mul(X, S[N,C,1,1])
 * (MulChannelNHWC, com.netrun) and Concat on channels (ConcatNHWC, com.netrun). Region values become FLOAT16 in the copy with their
 * logical NCHW dims (the layout is the pass's business); their Conv weights and biases become float16
 * constants; a ReorderNHWC (com.netrun) converts float32 NCHW <-> float16 NHWC in one kernel at each border
 * (graph outputs stay float32 under their own names). Everything else (Softmax, norms, Gemm, reshapes,
 * broadcasting ops) stays float32 outside. A Conv with neither a region input nor a region consumer is left to
 * the per-layer fp16 paths of conv.c. Inside a region, conv.c still times float16 NHWC against float32 with
 * conversions around it for each Conv and keeps the faster (docs/cuda.md). Option cuda.fp16_regions=0: off. */

static int on_backend(const opt_state *o, int n, const char *name) {
    int k = o->snode_of[n];
    if (k < 0) return 0;
    int sl = o->s->snodes[k].slot;
    return sl >= 0 && o->s->slots[sl].be && o->s->slots[sl].be->name && !strcmp(o->s->slots[sl].be->name, name);
}

static int fp16_regions_enabled(const opt_state *o, const netrun_backend_config *cfg) {
    const char *on = nr_options_get(&o->s->opts, "cuda.fp16_regions");
    return cfg->precision == NETRUN_PRECISION_FP16 && !(on && !strcmp(on, "0"));
}

/* Float32 constant data of value v: an initializer of the original graph, or a value folded at prepare
 * (exporters often feed weights through Identity nodes); NULL otherwise. *count gets its element count. */
static const float *const_data_f32(const opt_state *o, int v, int64_t *count) {
    const nr_tensor *t = const_f32(o->g, v);
    if (t) {
        *count = nr_tensor_count(t);
        return t->data;
    }
    if (v < 0 || v >= o->g->n_values) return NULL;
    const nr_svalue *sv = &o->s->values[v];
    if (!sv->is_const || sv->desc.dtype != NETRUN_DTYPE_FLOAT || !sv->desc.const_data || sv->desc.rank < 0) return NULL;
    int64_t n = 1;
    for (int d = 0; d < sv->desc.rank; d++) n *= sv->desc.dims[d];
    if (n < 0 || sv->desc.const_nbytes != (size_t)n * 4) return NULL;
    *count = n;
    return sv->desc.const_data;
}

/* 4-D float32 with known positive dims: the values a region holds. */
static int regionable_desc(const netrun_value_desc *d) {
    return d->dtype == NETRUN_DTYPE_FLOAT && d->rank == 4 && d->dims[0] > 0 && d->dims[1] > 0 && d->dims[2] > 0 &&
           d->dims[3] > 0;
}

/* Conv node n (fusions planned) on CUDA may run float16 NHWC: 2-D, constant float32 weights (and bias), its
 * backend's supports() agrees with float16 descs and src_nhwc = dst_nhwc = 1. */
static int plan_h_conv(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_node *nd = &o->g->nodes[n];
    if (!is_op(nd, "Conv") || !nd->layer || !on_backend(o, n, "cuda") || o->s->snodes[o->snode_of[n]].dynamic)
        return 0;
    const conv_plan *p = &o->plan[n];
    int out = plan_out(p, nd);
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    int64_t cnt;
    if (out < 0 || o->s->values[out].dynamic || !regionable_desc(&sn->in_desc[0]) ||
        !regionable_desc(&o->s->values[out].desc) || !const_data_f32(o, val(o, nd->inputs[1]), &cnt))
        return 0;
    if (nd->n_inputs > 2 && nd->inputs[2] >= 0 && !const_data_f32(o, val(o, nd->inputs[2]), &cnt)) return 0;
    if (p->add >= 0 && (p->z < 0 || !regionable_desc(&o->s->values[p->z].desc))) return 0;
    conv_plan q = *p;
    q.out = out;
    o->nhwc_query = 1;
    int ok = backend_accepts(o, cfg, n, &q);
    o->nhwc_query = 0;
    return ok;
}

/* Copy node k (from original node n) on CUDA takes float16 for its float32 inputs and output: supports()
 * with those descs (params optionally replaced). */
static int cuda_takes_f16(const opt_state *o, const netrun_backend_config *cfg, const nr_graph *ng, int k, int n,
                          const void *params, size_t params_size) {
    const nr_node *nd = &ng->nodes[k];
    const nr_layer *layer = o->g->nodes[n].layer; /* the copy's nodes get theirs only when it is loaded */
    netrun_session *s = o->s;
    const nr_snode *sn = &s->snodes[o->snode_of[n]];
    enum { MAXIN = 8 };
    netrun_value_desc in[MAXIN], out;
    if (nd->n_inputs > MAXIN || nd->n_outputs != 1 || nd->outputs[0] < 0 || nd->outputs[0] >= o->g->n_values) return 0;
    for (int i = 0; i < nd->n_inputs; i++) {
        int v = nd->inputs[i];
        if (v >= o->g->n_values) return 0;
        if (v < 0) {
            memset(&in[i], 0, sizeof in[i]);
            in[i].rank = -1;
            in[i].name = "";
            continue;
        }
        in[i] = s->values[v].desc;
        if (in[i].dtype == NETRUN_DTYPE_FLOAT) in[i].dtype = NETRUN_DTYPE_FLOAT16;
    }
    out = s->values[nd->outputs[0]].desc;
    out.dtype = NETRUN_DTYPE_FLOAT16;
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = nd->op_type, .domain = nd->domain,
                          .opset = nd->opset, .params = params ? params : sn->params,
                          .params_size = params ? params_size : (layer ? layer->params_size : 0),
                          .n_inputs = nd->n_inputs, .inputs = in, .n_outputs = 1, .outputs = &out};
    char why[256] = "";
    return s->slots[sn->slot].api->supports(cfg, &d, why, sizeof why);
}

enum { HK_PLAIN = 0, HK_CONV, HK_AGN, HK_POOL, HK_GAP, HK_MULCH, HK_CONCAT };

typedef struct h_state {
    const opt_state *o;
    nr_graph *ng;
    int nv0;
    char *vh;          /* value -> float16 NHWC */
    int *hval;         /* value -> value holding its float16 NHWC data (constants: its float16 copy), -1 none */
    int *fval;         /* value -> value holding its float32 NCHW data, -1 none */
    int converts;
} h_state;

static int add_convert(h_state *st, int from, int to, int to_nhwc) {
    if (!add_layout_node(st->ng, from, to, "ReorderNHWC", "to_nhwc", to_nhwc, to_nhwc ? "to_fp16_nhwc" : "to_fp32_nchw"))
        return 0;
    st->converts++;
    return 1;
}

/* The value holding v as its consumer wants it (float16 NHWC or float32 NCHW); -1 on OOM. */
static int h_layout_of(h_state *st, int v, int want_h) {
    if (v < 0 || v >= st->nv0) return v;
    if (!st->vh[v] && !want_h) return v;
    if (st->vh[v] && want_h) return st->hval[v] >= 0 ? st->hval[v] : v;
    int *slot = want_h ? &st->hval[v] : &st->fval[v];
    if (*slot >= 0) return *slot;
    int src = st->vh[v] ? (st->hval[v] >= 0 ? st->hval[v] : v) : v;
    int id = like_value(st->ng, v, want_h ? ".fp16_nhwc" : ".fp32");
    if (id < 0) return -1;
    st->ng->values[id].dtype = want_h ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT;
    if (!add_convert(st, src, id, want_h)) return -1;
    return *slot = id;
}

/* A float16 copy of float32 constant v of ng (cached in hval); -1 on OOM or when v is no float32 constant. */
static int h_const(h_state *st, int v) {
    if (v < 0 || v >= st->nv0) return -1;
    if (st->hval[v] >= 0) return st->hval[v];
    const nr_tensor *t = st->ng->values[v].constant;
    const float *src = NULL;
    int64_t cnt = 0;
    int rank;
    const int64_t *dims;
    if (t && t->dtype == NETRUN_DTYPE_FLOAT && t->data) { /* initializer, or weights folded by this pass */
        src = t->data;
        cnt = nr_tensor_count(t);
        rank = t->rank;
        dims = t->dims;
    } else if (v < st->o->g->n_values && (src = const_data_f32(st->o, v, &cnt))) { /* folded at prepare */
        rank = st->o->s->values[v].desc.rank;
        dims = st->o->s->values[v].desc.dims;
    } else
        return -1;
    nr_tensor *h = nr_tensor_new(NETRUN_DTYPE_FLOAT16, rank, dims);
    if (!h) return -1;
    uint16_t *dst = h->data;
    for (int64_t i = 0; i < cnt; i++) dst[i] = nr_float_to_half(src[i]);
    int id = new_const(st->ng, st->ng->values[v].name, ".fp16", h); /* frees h on failure */
    return id < 0 ? -1 : (st->hval[v] = id);
}

static int h_unary(const nr_node *nd) {
    static const char *const unary[] = {"Relu", "Sigmoid", "Tanh", "Swish", "LeakyRelu", "HardSwish",
                                        "HardSigmoid", "Elu", "Softplus", "Clip", NULL};
    if (*nd->domain || nd->n_outputs != 1) return 0;
    for (int i = 0; unary[i]; i++)
        if (!strcmp(nd->op_type, unary[i])) return nd->n_inputs == 1; /* Clip with bound inputs: float32 inputs */
    return 0;
}

static int h_binary(const nr_node *nd) {
    static const char *const binary[] = {"Add", "Sub", "Mul", "Max", "Min", NULL};
    if (*nd->domain || nd->n_outputs != 1 || nd->n_inputs != 2) return 0;
    for (int i = 0; binary[i]; i++)
        if (!strcmp(nd->op_type, binary[i])) return 1;
    return 0;
}

/* Decide and rewire the copy ng; kind_out[k] gets HK_CONV / HK_POOL for nodes whose params the caller flags. */
static netrun_status plan_fp16(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
                               int n_copied, char *kind, int *n_convs, int *n_converts) {
    const nr_graph *g = o->g;
    netrun_session *s = o->s;
    netrun_status rc = NETRUN_OK;
    h_state st = {.o = o, .ng = ng, .nv0 = ng->n_values};
    int *to = nr_calloc((size_t)g->n_nodes + 1, sizeof(int));
    st.vh = nr_calloc((size_t)st.nv0 + 1, 1);
    st.hval = nr_calloc((size_t)st.nv0 + 1, sizeof(int));
    st.fval = nr_calloc((size_t)st.nv0 + 1, sizeof(int));
    if (!to || !st.vh || !st.hval || !st.fval) {
        rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the float16 region pass");
        goto done;
    }
    for (int n = 0; n < g->n_nodes; n++) to[n] = -1;
    for (int k = 0; k < n_copied; k++) to[from[k]] = k;
    for (int v = 0; v < st.nv0; v++) st.hval[v] = st.fval[v] = -1;
    /* forward, in execution order: which nodes run float16 NHWC and which values they write */
    for (int i = 0; i < s->n_snodes; i++) {
        int n = s->snodes[i].node, k = n >= 0 && n < g->n_nodes ? to[n] : -1;
        if (k < 0) continue;
        const nr_node *nd = &ng->nodes[k];
        int out = nd->n_outputs > 0 ? nd->outputs[0] : -1;
        if (out < 0 || out >= g->n_values) continue;
        if (o->h_conv[n]) {
            kind[k] = HK_CONV;
            st.vh[out] = 1;
            continue;
        }
        if (!on_backend(o, n, "cuda") || s->snodes[o->snode_of[n]].dynamic || s->values[out].dynamic) continue;
        const netrun_value_desc *yd = &s->values[out].desc;
        /* squeeze-excite: Mul(X float16 NHWC [N,C,H,W], S [N or 1, C, 1, 1]), either order -> MulChannelNHWC(X, S)
         * (S float16 too: a region value already, or converted) */
        if (is_op(nd, "Mul") && nd->n_inputs == 2 && regionable_desc(yd) && yd->dims[2] * yd->dims[3] > 1 &&
            o->swish_x[n] < 0) {
            int side = -1;
            for (int j = 0; j < 2 && side < 0; j++) {
                int xv = nd->inputs[j], sv = nd->inputs[1 - j];
                if (xv < 0 || sv < 0 || xv >= g->n_values || sv >= g->n_values || !st.vh[xv] ||
                    s->values[sv].dynamic || ng->values[sv].constant || s->values[sv].is_const)
                    continue;
                const netrun_value_desc *xd = &s->values[xv].desc, *sd = &s->values[sv].desc;
                if (!memcmp(xd->dims, yd->dims, 4 * sizeof(int64_t)) && sd->rank == 4 &&
                    sd->dtype == NETRUN_DTYPE_FLOAT && (sd->dims[0] == xd->dims[0] || sd->dims[0] == 1) &&
                    sd->dims[1] == xd->dims[1] && sd->dims[2] == 1 && sd->dims[3] == 1)
                    side = j;
            }
            if (side >= 0) {
                nr_node *mn = &ng->nodes[k];
                int xv = mn->inputs[side], sv = mn->inputs[1 - side];
                mn->inputs[0] = xv;
                mn->inputs[1] = sv;
                kind[k] = HK_MULCH;
                st.vh[out] = 1;
                continue;
            }
        }
        int x = nd->n_inputs > 0 ? nd->inputs[0] : -1;
        if (x < 0 || x >= g->n_values || !st.vh[x]) continue;
        if (is_op(nd, "GlobalAveragePool") && nd->n_inputs == 1) {
            kind[k] = HK_GAP;
            st.vh[out] = 1;
            continue;
        }
        if ((is_op(nd, "MaxPool") || is_op(nd, "AveragePool")) && nd->n_inputs == 1 &&
            (nd->n_outputs == 1 || nd->outputs[1] < 0) && g->nodes[n].layer &&
            g->nodes[n].layer->params_size >= sizeof(netrun_pool_params) && s->snodes[o->snode_of[n]].params &&
            regionable_desc(yd)) {
            netrun_pool_params pp;
            memcpy(&pp, s->snodes[o->snode_of[n]].params, sizeof pp);
            pp.nhwc = 1;
            if (pp.n_spatial == 2 && cuda_takes_f16(o, cfg, ng, k, n, &pp, g->nodes[n].layer->params_size)) {
                kind[k] = HK_POOL;
                st.vh[out] = 1;
            }
            continue;
        }
        /* Concat on channels of float16 NHWC inputs with the same N, H, W: ConcatNHWC (per input a 2-D copy) */
        if (is_op(nd, "Concat") && agnostic_op(nd) == 3 && regionable_desc(yd)) {
            int ok = nd->n_inputs >= 1;
            for (int j = 0; j < nd->n_inputs && ok; j++) {
                int v = nd->inputs[j];
                const netrun_value_desc *vd = v >= 0 && v < g->n_values ? &s->values[v].desc : NULL;
                ok = vd && st.vh[v] && vd->rank == 4 && vd->dims[0] == yd->dims[0] && vd->dims[2] == yd->dims[2] &&
                     vd->dims[3] == yd->dims[3];
            }
            if (ok) {
                kind[k] = HK_CONCAT;
                st.vh[out] = 1;
            }
            continue;
        }
        int un = h_unary(nd), bin = h_binary(nd);
        if ((!un && !bin) || !regionable_desc(yd)) continue;
        int ok = 1;
        for (int j = 0; j < nd->n_inputs && ok; j++) {
            int v = nd->inputs[j];
            ok = v >= 0 && v < g->n_values && st.vh[v] && !memcmp(s->values[v].desc.dims, yd->dims, 4 * sizeof(int64_t));
        }
        if (!ok) continue;
        if (o->swish_x[n] >= 0) { /* a SiLU pair rewritten to Swish(x): ask with its params */
            netrun_unary_params up;
            memset(&up, 0, sizeof up);
            up.alpha = 1.0f;
            ok = cuda_takes_f16(o, cfg, ng, k, n, &up, sizeof up);
        } else
            ok = cuda_takes_f16(o, cfg, ng, k, n, NULL, 0);
        if (ok) {
            kind[k] = HK_AGN;
            st.vh[out] = 1;
        }
    }
    /* a Conv with neither a float16 input nor a float16 consumer would only add two conversions: conv.c's
     * per-layer fp16 paths serve it better (they may keep float32 where that is faster) */
    for (int k = 0; k < n_copied; k++) {
        if (kind[k] != HK_CONV) continue;
        int x = ng->nodes[k].inputs[0], out = ng->nodes[k].outputs[0], used = 0;
        if (x >= 0 && x < st.nv0 && st.vh[x]) continue;
        for (int u = 0; u < n_copied && !used; u++)
            for (int j = 0; j < ng->nodes[u].n_inputs; j++)
                if (ng->nodes[u].inputs[j] == out && kind[u] != HK_PLAIN && (kind[u] != HK_CONV || j == 0 || j == 3))
                    used = 1;
        if (!used) {
            kind[k] = HK_PLAIN;
            st.vh[out] = 0;
        }
    }
    for (int v = 0; v < st.nv0; v++)
        if (st.vh[v]) ng->values[v].dtype = NETRUN_DTYPE_FLOAT16;
    /* float16 graph outputs: the node writes a new value, a conversion gives the output its float32 */
    for (int k = 0; k < n_copied && rc == NETRUN_OK; k++) {
        int out = ng->nodes[k].n_outputs > 0 ? ng->nodes[k].outputs[0] : -1;
        if (out >= 0 && out < g->n_values && st.vh[out] && g->values[out].is_graph_output) {
            int id = like_value(ng, out, ".fp16_nhwc");
            if (id < 0 || !add_convert(&st, id, out, 0)) {
                rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the float16 region pass");
                break;
            }
            ng->values[id].dtype = NETRUN_DTYPE_FLOAT16;
            ng->values[out].dtype = NETRUN_DTYPE_FLOAT;
            st.hval[out] = id;
            st.fval[out] = out;
            ng->nodes[k].outputs[0] = id;
        }
    }
    for (int k = 0; k < n_copied && rc == NETRUN_OK; k++) {
        nr_node *nd = &ng->nodes[k];
        for (int j = 0; j < nd->n_inputs; j++) {
            int v = nd->inputs[j], id;
            if (v < 0 || v >= st.nv0) continue;
            if (kind[k] == HK_CONV && (j == 1 || j == 2)) {
                id = h_const(&st, v); /* constants of the copy (checked in plan_h_conv) */
                if (id < 0) {
                    rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "float16 region pass: cannot make a float16 copy of '%s'",
                                  ng->values[v].name);
                    break;
                }
            } else {
                if (ng->values[v].constant) continue;
                int want = kind[k] == HK_CONV ? j == 0 || j == 3 : kind[k] == HK_PLAIN ? 0 : 1;
                id = h_layout_of(&st, v, want);
                if (id < 0) {
                    rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the float16 region pass");
                    break;
                }
            }
            nd = &ng->nodes[k]; /* adding nodes may have moved the array */
            nd->inputs[j] = id;
        }
        if (rc == NETRUN_OK && (kind[k] == HK_GAP || kind[k] == HK_MULCH || kind[k] == HK_CONCAT)) {
            char *op = nr_strdup(kind[k] == HK_GAP ? "GlobalAveragePoolNHWC" : kind[k] == HK_MULCH ? "MulChannelNHWC" : "ConcatNHWC");
            char *dom = nr_strdup("com.netrun");
            if (!op || !dom) {
                nr_free(op);
                nr_free(dom);
                rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the float16 region pass");
                break;
            }
            nr_free(nd->op_type);
            nr_free(nd->domain);
            nd->op_type = op;
            nd->domain = dom;
        }
        if (kind[k] == HK_CONV) ++*n_convs;
    }
    *n_converts = st.converts;
done:
    nr_free(to);
    nr_free(st.vh);
    nr_free(st.hval);
    nr_free(st.fval);
    return rc;
}

static void free_state(opt_state *o) {
    nr_free(o->alias);
    nr_free(o->users);
    nr_free(o->user);
    nr_free(o->removed);
    nr_free(o->snode_of);
    nr_free(o->plan);
    nr_free(o->swish_x);
    nr_free(o->blk_conv);
    nr_free(o->h_conv);
}

netrun_model *nr_optimize_original(const netrun_model *m) {
    const nr_graph *g = m && m->ir ? m->ir->graph : NULL;
    const nr_attr *a = g && g->n_nodes > 0 ? find_attr(&g->nodes[0], MARK_ATTR) : NULL;
    return a ? a->sub_model : NULL;
}

void nr_optimize_model_counts(const netrun_model *m, nr_optimize_counts *c) {
    memset(c, 0, sizeof *c);
    const nr_graph *g = m && m->ir ? m->ir->graph : NULL;
    if (!g || g->n_nodes < 1) return;
    const nr_attr *a = find_attr(&g->nodes[0], MARK_ATTR);
    if (!a || a->type != NR_ATTR_INTS || a->n < 5 || !a->ints) return;
    c->bn_folded = (int)a->ints[0];
    c->act_fused = (int)a->ints[1];
    c->sum_fused = (int)a->ints[2];
    c->dropped = (int)a->ints[3];
    c->swish_fused = (int)a->ints[4];
    if (a->n >= 7) {
        c->nchwc_convs = (int)a->ints[5];
        c->nchwc_reorders = (int)a->ints[6];
    }
    if (a->n >= 9) {
        c->fp16_convs = (int)a->ints[7];
        c->fp16_converts = (int)a->ints[8];
    }
}

netrun_status nr_optimize_session(netrun_session *s, const netrun_backend_config *cfg, netrun_model **out,
                                  nr_optimize_counts *counts) {
    *out = NULL;
    memset(counts, 0, sizeof *counts);
    const char *on = nr_options_get(&s->opts, "graph.optimize");
    if ((on && !strcmp(on, "0")) || s->keep_values || s->root) return NETRUN_OK;
    const nr_graph *g = s->model->ir->graph;
    if (g->n_nodes < 2 || g->parent || find_attr(&g->nodes[0], MARK_ATTR)) return NETRUN_OK;
    for (int n = 0; n < g->n_nodes; n++)
        for (int a = 0; a < g->nodes[n].n_attrs; a++) {
            nr_attr_type t = g->nodes[n].attrs[a].type;
            if (t == NR_ATTR_GRAPH || t == NR_ATTR_GRAPHS) return NETRUN_OK; /* subgraphs capture by name */
        }
    int n_qdq = 0; /* QDQ groups -> QLinearConv / QLinearMatMul first: the passes below run on that copy */
    netrun_status qst = nr_qdq_fuse_session(s, cfg, out, &n_qdq);
    if (qst != NETRUN_OK || *out) return qst;
    opt_state o = {.s = s, .g = g};
    size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
    o.alias = nr_calloc(nv, sizeof(int));
    o.users = nr_calloc(nv, sizeof(int));
    o.user = nr_calloc(nv, sizeof(int));
    o.removed = nr_calloc(nn, sizeof(int));
    o.snode_of = nr_calloc(nn, sizeof(int));
    o.plan = nr_calloc(nn, sizeof(conv_plan));
    o.swish_x = nr_calloc(nn, sizeof(int));
    o.blk_conv = nr_calloc(nn, sizeof(int));
    o.h_conv = nr_calloc(nn, sizeof(int));
    if (!o.alias || !o.users || !o.user || !o.removed || !o.snode_of || !o.plan || !o.swish_x || !o.blk_conv ||
        !o.h_conv) {
        free_state(&o);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
    }
    for (int v = 0; v < g->n_values; v++) o.alias[v] = v;
    for (int n = 0; n < g->n_nodes; n++) {
        o.plan[n].bn = o.plan[n].add = o.plan[n].act = o.plan[n].z = o.plan[n].mul = -1;
        o.snode_of[n] = o.swish_x[n] = -1;
    }
    for (int k = 0; k < s->n_snodes; k++) o.snode_of[s->snodes[k].node] = k;
    /* (d) Identity / inference Dropout: consumers read the input instead (topological order resolves chains).
     * Nodes folded at prepare are left alone (they cost nothing). */
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        if (s->snodes[k].slot == NR_SLOT_FOLDED || !is_noop(&o, n)) continue;
        const nr_node *nd = &g->nodes[n];
        o.alias[nd->outputs[0]] = o.alias[nd->inputs[0]];
        o.removed[n] = 1;
        counts->dropped++;
    }
    for (int n = 0; n < g->n_nodes; n++) {
        if (o.removed[n]) continue;
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = val(&o, g->nodes[n].inputs[i]);
            if (v < 0) continue;
            o.users[v]++;
            o.user[v] = n;
        }
    }
    /* (e) SiLU pairs first, so that a Conv below can take the Swish as its activation */
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        if (!o.removed[n] && plan_silu(&o, cfg, n)) counts->swish_fused++;
    }
    /* (a)-(c) around each Conv, in execution order; absorbed nodes are marked as they are planned */
    for (int k = 0; k < s->n_snodes; k++) {
        int n = s->snodes[k].node;
        const nr_node *nd = &g->nodes[n];
        if (o.removed[n] || !(is_op(nd, "Conv") || is_op(nd, "ConvTranspose")) || !nd->layer) continue;
        plan_conv(&o, cfg, n);
        conv_plan *p = &o.plan[n];
        if (p->bn >= 0) o.removed[p->bn] = 1, counts->bn_folded++;
        if (p->add >= 0) o.removed[p->add] = 1, counts->sum_fused++;
        if (p->act >= 0) o.removed[p->act] = 1, counts->act_fused++;
    }
    /* (f) which Convs could run nChw16c (decided on the copy below) */
    int n_blk = 0;
    if (nchwc_enabled(&o))
        for (int k = 0; k < s->n_snodes; k++) {
            int n = s->snodes[k].node;
            if (!o.removed[n] && (o.blk_conv[n] = plan_se_fold(&o, cfg, n))) n_blk++;
        }
    int n_se = 0;
    for (int n = 0; n < g->n_nodes; n++) n_se += !o.removed[n] && o.plan[n].mul >= 0;
    if (n_se)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "squeeze-excite: %d Mul nodes folded into the 1x1 Convs "
                           "reading them (cpu.se_fold=0 keeps them)", n_se);
    /* (g) which CUDA Convs could run float16 NHWC (regions decided on the copy below) */
    int n_h = 0;
    if (fp16_regions_enabled(&o, cfg))
        for (int k = 0; k < s->n_snodes; k++) {
            int n = s->snodes[k].node;
            if (!o.removed[n] && (o.h_conv[n] = plan_h_conv(&o, cfg, n))) n_h++;
        }
    if (!counts->bn_folded && !counts->act_fused && !counts->sum_fused && !counts->dropped && !counts->swish_fused &&
        !n_blk && !n_h) {
        free_state(&o);
        return NETRUN_OK;
    }
    /* the copy */
    netrun_status st = NETRUN_OK;
    int *from = NULL, *conv_blk = NULL;
    char *hkind = NULL;
    nr_model_ir *ir = nr_calloc(1, sizeof *ir);
    const nr_model_ir *src = s->model->ir;
    if (!ir || !(ir->graph = nr_graph_new(g->name, NULL))) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
        goto fail;
    }
    ir->ir_version = src->ir_version;
    if (src->producer && !(ir->producer = nr_strdup(src->producer))) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
        goto fail;
    }
    if (src->n_opsets) {
        if (!(ir->opsets = nr_calloc((size_t)src->n_opsets, sizeof *ir->opsets))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        for (int i = 0; i < src->n_opsets; i++, ir->n_opsets++) {
            ir->opsets[i].version = src->opsets[i].version;
            if (!(ir->opsets[i].domain = nr_strdup(src->opsets[i].domain ? src->opsets[i].domain : ""))) {
                st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
                goto fail;
            }
        }
    }
    if ((st = build_copy(&o, ir->graph, &from)) != NETRUN_OK) goto fail;
    int n_copied = ir->graph->n_nodes;
    if (n_blk) {
        if (!(conv_blk = nr_calloc((size_t)n_copied + 1, sizeof(int)))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        if ((st = plan_nchwc(&o, cfg, ir->graph, from, n_copied, conv_blk, &counts->nchwc_reorders)) != NETRUN_OK)
            goto fail;
        for (int k = 0; k < n_copied; k++) counts->nchwc_convs += conv_blk[k] != 0 && conv_blk[k] != 4;
    }
    if (n_h) {
        if (!(hkind = nr_calloc((size_t)n_copied + 1, 1))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        if ((st = plan_fp16(&o, cfg, ir->graph, from, n_copied, hkind, &counts->fp16_convs, &counts->fp16_converts)) !=
            NETRUN_OK)
            goto fail;
    }
    if (n_blk || n_h) { /* the internal ops' domain */
        nr_opset_import *ops = nr_realloc(ir->opsets, (size_t)(ir->n_opsets + 1) * sizeof *ops);
        if (!ops) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        ir->opsets = ops;
        ops[ir->n_opsets].version = 1;
        if (!(ops[ir->n_opsets].domain = nr_strdup("com.netrun"))) {
            st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
            goto fail;
        }
        ir->n_opsets++;
    }
    /* the mark: counts, and the reference that keeps the borrowed constants alive */
    nr_node *first = &ir->graph->nodes[0];
    nr_attr *mark = &first->attrs[first->n_attrs - 1];
    if (!(mark->name = nr_strdup(MARK_ATTR)) || !(mark->ints = nr_calloc(10, sizeof(int64_t)))) {
        st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the graph passes");
        goto fail;
    }
    mark->type = NR_ATTR_INTS;
    mark->n = 9;
    mark->ints[0] = counts->bn_folded;
    mark->ints[1] = counts->act_fused;
    mark->ints[2] = counts->sum_fused;
    mark->ints[3] = counts->dropped;
    mark->ints[4] = counts->swish_fused;
    mark->ints[5] = counts->nchwc_convs;
    mark->ints[6] = counts->nchwc_reorders;
    mark->ints[7] = counts->fp16_convs;
    mark->ints[8] = counts->fp16_converts;
    nr_model_retain(s->model);
    mark->sub_model = s->model;
    char source[1100];
    snprintf(source, sizeof source, "%s", s->model->source ? s->model->source : "<memory>");
    netrun_model *m = NULL;
    st = nr_model_from_ir(ir, source, &m); /* takes ir, also on failure */
    ir = NULL;
    if (st != NETRUN_OK) goto fail;
    /* the fused fields are no ONNX attributes: set them on the copy's parsed params */
    for (int n = 0; n < n_copied && n < m->ir->graph->n_nodes; n++) {
        if (conv_blk && conv_blk[n] == 4) { /* MaxPool */
            netrun_pool_params *pp = m->ir->graph->nodes[n].params;
            if (pp) pp->blocked = 1;
        } else if (conv_blk && conv_blk[n]) {
            netrun_conv_params *bp = m->ir->graph->nodes[n].params;
            if (bp) bp->src_blocked = conv_blk[n] & 1, bp->dst_blocked = (conv_blk[n] & 2) != 0;
        }
        if (hkind && hkind[n] == HK_CONV) {
            netrun_conv_params *hp = m->ir->graph->nodes[n].params;
            if (hp) hp->src_nhwc = hp->dst_nhwc = 1;
        } else if (hkind && hkind[n] == HK_POOL) {
            netrun_pool_params *pp = m->ir->graph->nodes[n].params;
            if (pp) pp->nhwc = 1;
        }
        if (o.swish_x[from[n]] >= 0) m->ir->graph->nodes[n].opset = 24; /* Swish is an opset-24 op */
        const conv_plan *p = &o.plan[from[n]];
        netrun_conv_params *cp = m->ir->graph->nodes[n].params;
        if (!cp || !plan_absorbs(p)) continue;
        if (p->mul >= 0) cp->src_scale = 1;
        if (p->add >= 0) cp->has_sum = 1;
        if (p->act >= 0) cp->activation = p->fa;
    }
    if (counts->fp16_convs || counts->fp16_converts)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "float16 NHWC regions: %d CUDA Convs, %d border conversions",
                           counts->fp16_convs, counts->fp16_converts);
    *out = m;
    nr_free(from);
    nr_free(conv_blk);
    nr_free(hkind);
    free_state(&o);
    return NETRUN_OK;
fail:
    nr_free(from);
    nr_free(conv_blk);
    nr_free(hkind);
    nr_model_ir_free(ir);
    free_state(&o);
    memset(counts, 0, sizeof *counts);
    return st;
}
