/* Graph passes, the fusions (docs/design.md, "Graph passes"): BatchNormalization folded into the Conv before it, an
 * Add of a same-shaped value fused as "+ Z", an activation fused into the Conv, and SiLU pairs Mul(x, Sigmoid(x))
 * rewritten to Swish(x); each asked of the backend that runs the nodes. Also the helpers and backend questions the
 * region passes share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimize_internal.h"

const nr_attr *opt_find_attr(const nr_node *nd, const char *name) {
    for (int a = 0; a < nd->n_attrs; a++)
        if (nd->attrs[a].name && !strcmp(nd->attrs[a].name, name)) return &nd->attrs[a];
    return NULL;
}

float opt_attr_f(const nr_node *nd, const char *name, float def) {
    const nr_attr *a = opt_find_attr(nd, name);
    return a && a->type == NR_ATTR_FLOAT ? a->f : def;
}

/* A float32 constant of the original graph (initializer or Constant folded at import), or NULL. */
const nr_tensor *opt_const_f32(const nr_graph *g, int v) {
    if (v < 0 || !g->values[v].constant) return NULL;
    const nr_tensor *t = g->values[v].constant;
    return t->dtype == NETRUN_DTYPE_FLOAT && t->data ? t : NULL;
}

const nr_tensor *opt_value_f32(const opt_state *o, int v) {
    const nr_tensor *t = opt_const_f32(o->g, v);
    if (t || v < 0) return t;
    t = o->s->values[v].folded;
    return t && t->dtype == NETRUN_DTYPE_FLOAT && t->data ? t : NULL;
}

/* Whether constant t broadcast against a [N, M, ...] output of `rank` dims gives one value per output channel
 * (dims of 1 except M or 1 at the channel axis): a Mul or Add by it can be folded into the Conv's W and B. */
static int per_channel(const nr_tensor *t, int rank, int64_t m) {
    if (!t || t->rank > rank) return 0;
    for (int i = 0; i < t->rank; i++) {
        int axis = rank - t->rank + i;
        if (t->dims[i] != 1 && !(axis == 1 && t->dims[i] == m)) return 0;
    }
    return 1;
}

/* Scalar float constant input, or def when the input is absent; returns 0 when present but not constant. */
static int scalar_input(const nr_graph *g, const nr_node *nd, int i, float def, float *out) {
    if (i >= nd->n_inputs || nd->inputs[i] < 0) {
        *out = def;
        return 1;
    }
    const nr_tensor *t = opt_const_f32(g, nd->inputs[i]);
    if (!t || nr_tensor_count(t) != 1) return 0;
    *out = *(const float *)t->data;
    return 1;
}

/* The fused activation an op stands for (0 when it is not one a Conv can take). */
static int activation_of(const nr_graph *g, const nr_node *nd, netrun_fused_activation *fa) {
    memset(fa, 0, sizeof *fa);
    if (*nd->domain || nd->n_outputs != 1 || nd->n_inputs < 1) return 0;
    if (is_op(nd, "Relu")) fa->kind = NETRUN_ACT_RELU;
    else if (is_op(nd, "LeakyRelu")) fa->kind = NETRUN_ACT_LEAKY_RELU, fa->alpha = opt_attr_f(nd, "alpha", 0.01f);
    else if (is_op(nd, "Sigmoid")) fa->kind = NETRUN_ACT_SIGMOID;
    else if (is_op(nd, "Tanh")) fa->kind = NETRUN_ACT_TANH;
    else if (is_op(nd, "HardSwish")) fa->kind = NETRUN_ACT_HARD_SWISH;
    else if (is_op(nd, "Swish")) fa->kind = NETRUN_ACT_SWISH, fa->alpha = opt_attr_f(nd, "alpha", 1.0f);
    else if (is_op(nd, "HardSigmoid")) {
        fa->kind = NETRUN_ACT_HARD_SIGMOID;
        fa->alpha = opt_attr_f(nd, "alpha", 0.2f);
        fa->beta = opt_attr_f(nd, "beta", 0.5f);
    } else if (is_op(nd, "Clip")) {
        fa->kind = NETRUN_ACT_CLIP;
        if (nd->opset < 11) {
            fa->alpha = opt_attr_f(nd, "min", -INFINITY);
            fa->beta = opt_attr_f(nd, "max", INFINITY);
        } else if (!scalar_input(g, nd, 1, -INFINITY, &fa->alpha) || !scalar_input(g, nd, 2, INFINITY, &fa->beta))
            return 0; /* bounds computed at run time */
    } else
        return 0;
    return 1;
}

/* Identity; Dropout that is the identity: inference (no training_mode, or a constant false one), mask unused;
 * a Cast or CastLike to the type its input already has (torch writes `softmax(x, dtype=float32)` as
 * Cast -> Softmax -> Cast, which a float32 model turns into two copies that also hide the attention pattern). */
int opt_is_noop(const opt_state *o, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    if (*nd->domain || nd->n_inputs < 1 || nd->inputs[0] < 0 || nd->n_outputs < 1 || nd->outputs[0] < 0) return 0;
    if (o->pinned[nd->outputs[0]]) return 0; /* its name must keep this value (a graph output, a capture) */
    if (is_op(nd, "Identity")) return nd->n_outputs == 1;
    if (is_op(nd, "Cast") || is_op(nd, "CastLike")) {
        netrun_dtype a = o->s->values[nd->inputs[0]].desc.dtype, b = o->s->values[nd->outputs[0]].desc.dtype;
        return nd->n_outputs == 1 && a != NETRUN_DTYPE_UNDEFINED && a == b;
    }
    if (!is_op(nd, "Dropout")) return 0;
    if (nd->n_outputs > 1 && nd->outputs[1] >= 0) return 0; /* mask requested: keep the node */
    if (nd->opset < 12) {
        const nr_attr *t = opt_find_attr(nd, "is_test");
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
int opt_only_user(const opt_state *o, int v) {
    if (v < 0 || o->users[v] != 1 || o->pinned[v]) return -1;
    int u = o->user[v];
    if (o->removed[u] || (o->repl_of && o->repl_of[u] >= 0)) return -1; /* absorbed (Add of two Convs), or fused */
    return u;
}

int opt_same_slot(const opt_state *o, int a, int b) {
    return o->s->snodes[o->snode_of[a]].slot == o->s->snodes[o->snode_of[b]].slot;
}

/* The region of `kind` that node n's backend declares (ABI 1.10) and that is on in this session, or NULL. */
const netrun_region_spec *opt_region_on(const opt_state *o, const netrun_backend_config *cfg, int n,
                                           netrun_region_kind kind) {
    int k = n >= 0 ? o->snode_of[n] : -1;
    if (k < 0) return NULL;
    int sl = o->s->snodes[k].slot;
    if (sl < 0) return NULL;
    const netrun_backend_api *api = o->s->slots[sl].api;
    if (!api || !NR_API_HAS(api, regions)) return NULL;
    for (const netrun_region_spec *r = api->regions; r->kind != NETRUN_REGION_END; r++) {
        if (r->kind != kind) continue;
        if ((r->conditions & NETRUN_REGION_IF_FP16) && cfg->precision != NETRUN_PRECISION_FP16) continue;
        const char *on = r->option ? nr_options_get(&o->s->opts, r->option) : NULL;
        if (on && !strcmp(on, "0")) continue;
        return r;
    }
    return NULL;
}

/* Whether the region crosses op `op` (default domain) of node nd. */
int opt_region_crosses(const netrun_region_spec *r, const nr_node *nd, const char *op) {
    if (!r || !r->ops || *nd->domain || strcmp(nd->op_type, op)) return 0;
    for (const char *const *p = r->ops; *p; p++)
        if (!strcmp(*p, op)) return 1;
    return 0;
}

/* Copy node k (from original node n) keeps region r on its backend with the descs the region gives it (float16
 * for its float32 inputs and output when f16): the region's keeps() or else supports() (params optionally
 * replaced). */
int opt_region_takes(const opt_state *o, const netrun_backend_config *cfg, const netrun_region_spec *r,
                        const nr_graph *ng, int k, int n, const void *params, size_t params_size, int f16) {
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
        if (f16 && in[i].dtype == NETRUN_DTYPE_FLOAT) in[i].dtype = NETRUN_DTYPE_FLOAT16;
    }
    out = s->values[nd->outputs[0]].desc;
    if (f16) out.dtype = NETRUN_DTYPE_FLOAT16;
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = nd->op_type, .domain = nd->domain,
                          .opset = nd->opset, .params = params ? params : sn->params,
                          .params_size = params ? params_size : (layer ? layer->params_size : 0),
                          .n_inputs = nd->n_inputs, .inputs = in, .n_outputs = 1, .outputs = &out};
    if (r->keeps) return r->keeps(cfg, &d);
    char why[256] = "";
    return s->slots[sn->slot].api->supports(cfg, &d, why, sizeof why);
}

/* Ask the Conv's backend whether it runs the fused node. */
int opt_backend_accepts(const opt_state *o, const netrun_backend_config *cfg, int n, const conv_plan *p) {
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
    if (plan_folds(p)) { /* a folded BN (or Mul / Add) gives a bias of M values */
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

/* Mul / Add nodes by per-channel constants after node n (Conv or BatchNormalization) whose output, so far, is
 * *out: added to n's plan while each is the only user of the value before it (at most OPT_MAX_AFFINE), on n's
 * backend; conv: ask the backend whether it runs the Conv with the folded bias. */
static void plan_affine(opt_state *o, const netrun_backend_config *cfg, int n, int *out, int conv) {
    const nr_graph *g = o->g;
    conv_plan *p = &o->plan[n];
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    while (p->n_aff < OPT_MAX_AFFINE) {
        int u = opt_only_user(o, *out);
        if (u < 0) break;
        const nr_node *ud = &g->nodes[u];
        if ((!is_op(ud, "Mul") && !is_op(ud, "Add")) || *ud->domain || ud->n_inputs != 2 || ud->n_outputs != 1 ||
            ud->outputs[0] < 0 || o->swish_x[u] >= 0 || o->snode_of[u] < 0 || !opt_same_slot(o, n, u))
            break;
        int i0 = val(o, ud->inputs[0]), i1 = val(o, ud->inputs[1]);
        if ((i0 == *out) == (i1 == *out)) break;
        const nr_tensor *c = opt_value_f32(o, i0 == *out ? i1 : i0);
        if (!per_channel(c, sn->out_desc[0].rank, sn->out_desc[0].dims[1])) break;
        p->aff[p->n_aff++] = u;
        int prev = p->out;
        p->out = ud->outputs[0];
        if (conv && !opt_backend_accepts(o, cfg, n, p)) {
            p->n_aff--;
            p->out = prev;
            break;
        }
        *out = p->out;
    }
}

/* Whether the backend of BatchNormalization node n runs it with activation fa fused. */
static int bn_backend_accepts(const opt_state *o, const netrun_backend_config *cfg, int n,
                              const netrun_fused_activation *fa) {
    const nr_node *nd = &o->g->nodes[n];
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || !sn->params || !nd->layer || nd->layer->params_size < sizeof(netrun_norm_params)) return 0;
    netrun_norm_params np;
    memcpy(&np, sn->params, sizeof np);
    np.activation = *fa;
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = nd->op_type, .domain = nd->domain,
                          .opset = nd->opset, .params = &np, .params_size = nd->layer->params_size,
                          .n_inputs = nd->n_inputs, .inputs = sn->in_desc, .n_outputs = 1, .outputs = sn->out_desc};
    char why[256] = "";
    return o->s->slots[sn->slot].api->supports(cfg, &d, why, sizeof why);
}

/* (a'') A BatchNormalization with constant statistics that no Conv absorbed (DenseNet's pre-activation BNs), then
 * Mul / Add by per-channel constants: one BatchNormalization with gamma s and beta s + t; then the activation
 * after it, where its backend takes one (BN, Mul, Add, Relu: four passes over the activations become one). */
void opt_plan_bn(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || sn->dynamic || !is_op(nd, "BatchNormalization") || nd->n_inputs != 5 || nd->n_outputs < 1 ||
        nd->outputs[0] < 0 || sn->out_desc[0].dtype != NETRUN_DTYPE_FLOAT || sn->out_desc[0].rank < 2)
        return;
    for (int k = 1; k < nd->n_outputs; k++)
        if (nd->outputs[k] >= 0) return; /* training outputs */
    const nr_attr *tm = opt_find_attr(nd, "training_mode");
    if (tm && tm->i) return;
    int64_t m = sn->out_desc[0].dims[1];
    for (int i = 1; i < 5; i++) {
        const nr_tensor *t = opt_const_f32(g, val(o, nd->inputs[i]));
        if (!t || nr_tensor_count(t) != m) return;
    }
    int out = nd->outputs[0];
    conv_plan *p = &o->plan[n];
    plan_affine(o, cfg, n, &out, 0);
    int u = opt_only_user(o, out);
    netrun_fused_activation fa;
    if (u >= 0 && o->swish_x[u] < 0 && activation_of(g, &g->nodes[u], &fa) && val(o, g->nodes[u].inputs[0]) == out &&
        g->nodes[u].outputs[0] >= 0 && o->snode_of[u] >= 0 && opt_same_slot(o, n, u) &&
        bn_backend_accepts(o, cfg, n, &fa)) {
        p->act = u;
        p->fa = fa;
        p->out = g->nodes[u].outputs[0];
    }
}

/* Plan the fusions around Conv node n. */
void opt_plan_conv(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    conv_plan *p = &o->plan[n];
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || sn->dynamic || nd->n_outputs != 1 || nd->outputs[0] < 0 || nd->n_inputs < 2) return;
    if (sn->out_desc[0].dtype != NETRUN_DTYPE_FLOAT || sn->out_desc[0].rank < 3) return;
    int transpose = is_op(nd, "ConvTranspose");
    int out = nd->outputs[0];
    /* (a) BatchNormalization with constant statistics, the Conv's only consumer */
    int b = opt_only_user(o, out);
    if (b >= 0 && is_op(&g->nodes[b], "BatchNormalization") && val(o, g->nodes[b].inputs[0]) == out &&
        g->nodes[b].n_outputs >= 1 && g->nodes[b].outputs[0] >= 0 && g->nodes[b].n_inputs == 5) {
        const nr_node *bn = &g->nodes[b];
        int64_t m = sn->out_desc[0].dims[1];
        int ok = opt_const_f32(g, val(o, nd->inputs[1])) != NULL && m > 0;
        if (nd->n_inputs > 2 && nd->inputs[2] >= 0) ok = ok && opt_const_f32(g, val(o, nd->inputs[2]));
        for (int i = 1; i < 5 && ok; i++) {
            const nr_tensor *t = opt_const_f32(g, val(o, bn->inputs[i]));
            ok = t && nr_tensor_count(t) == m;
        }
        for (int k = 1; k < bn->n_outputs; k++) ok = ok && bn->outputs[k] < 0; /* no training outputs */
        const nr_attr *tm = opt_find_attr(bn, "training_mode");
        if (tm && tm->i) ok = 0;
        (void)transpose;
        if (ok) {
            p->bn = b;
            p->out = out = bn->outputs[0];
            if (!opt_backend_accepts(o, cfg, n, p)) {
                p->bn = -1;
                p->out = out = nd->outputs[0];
            }
        }
    }
    /* (a') Mul and Add by per-output-channel constants, after the BN or alone: Caffe2's exports write an affine
     * BatchNorm (or the BN's scale and shift) as Mul + Add, their constants through Unsqueeze (folded at
     * prepare). Folded into W and B as a BN is: (conv + b) s + c = conv(W s) + (b s + c). */
    int wb_const = opt_const_f32(g, val(o, nd->inputs[1])) != NULL &&
                   (nd->n_inputs < 3 || nd->inputs[2] < 0 || opt_const_f32(g, val(o, nd->inputs[2])));
    if (wb_const) plan_affine(o, cfg, n, &out, 1);
    /* (c) + Z: an Add (or a Sum of two) of the (folded) Conv output and another value of the same shape, same
     * backend (Caffe2's ResNets write their residual Adds as Sum) */
    int a = opt_only_user(o, out);
    if (a >= 0 && (is_op(&g->nodes[a], "Add") || is_op(&g->nodes[a], "Sum")) && g->nodes[a].n_inputs == 2 &&
        g->nodes[a].outputs[0] >= 0 && opt_same_slot(o, n, a)) {
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
            if (!opt_backend_accepts(o, cfg, n, p)) {
                p->add = -1;
                p->out = prev;
            } else
                out = p->out;
        }
    }
    /* (b) activation, same backend; a Mul the SiLU pass turned into Swish(out) counts as one */
    int u = opt_only_user(o, out);
    netrun_fused_activation fa;
    int is_act = 0;
    if (u >= 0 && o->swish_x[u] >= 0) {
        memset(&fa, 0, sizeof fa);
        fa.kind = NETRUN_ACT_SWISH;
        fa.alpha = 1.0f;
        is_act = o->swish_x[u] == out;
    } else if (u >= 0)
        is_act = activation_of(g, &g->nodes[u], &fa) && val(o, g->nodes[u].inputs[0]) == out;
    if (is_act && g->nodes[u].outputs[0] >= 0 && opt_same_slot(o, n, u)) {
        p->act = u;
        p->fa = fa;
        int prev = p->out;
        p->out = g->nodes[u].outputs[0];
        if (!opt_backend_accepts(o, cfg, n, p)) {
            p->act = -1;
            p->out = prev;
        }
    }
}

/* The graph node producing value v (after aliasing), or -1 (graph input, constant). */
int opt_producer(const opt_state *o, int v) {
    if (v < 0 || o->s->values[v].producer < 0) return -1;
    return o->s->snodes[o->s->values[v].producer].node;
}

/* (e) SiLU: Mul n = Mul(x, Sigmoid(x)) (either order), the Sigmoid's output used by that Mul only, both on one
 * backend whose supports() takes Swish(x) with alpha 1: the Mul becomes Swish(x) (one pass over memory instead
 * of two) and the Sigmoid goes. Returns 1 when planned. */
int opt_plan_silu(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    netrun_session *s = o->s;
    if (!is_op(nd, "Mul") || nd->n_inputs != 2 || nd->n_outputs != 1 || nd->outputs[0] < 0 || o->snode_of[n] < 0)
        return 0;
    const nr_snode *sn = &s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || sn->dynamic) return 0;
    for (int side = 0; side < 2; side++) {
        int x = val(o, nd->inputs[side]), sv = val(o, nd->inputs[1 - side]);
        int sg = opt_producer(o, sv);
        if (x < 0 || sg < 0 || o->removed[sg] || opt_only_user(o, sv) != n) continue;
        const nr_node *sd = &g->nodes[sg];
        if (!is_op(sd, "Sigmoid") || sd->n_inputs != 1 || sd->n_outputs != 1 || val(o, sd->inputs[0]) != x ||
            o->snode_of[sg] < 0 || !opt_same_slot(o, n, sg))
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

