/* QDQ fusion (see qdq_fuse.h and docs/design.md, "QDQ models run in int8").
 *
 * What a group must look like to be rewritten (anything else is left as it is, and the float ops between the
 * DequantizeLinear and QuantizeLinear nodes still give the answer the model defines):
 *  - X: DequantizeLinear of an 8-bit tensor with one scale and one zero point (constants);
 *  - W: DequantizeLinear of an 8-bit constant, scale (and zero point) per tensor or per output channel
 *    (axis 0 for Conv; for MatMul per tensor, or per column of a 2-D B with axis 1; for Gemm per column of
 *    B, which becomes the output channel of a 1x1 QLinearConv over A's rows, with alpha = beta = 1, no transA);
 *  - bias (Conv, Gemm): DequantizeLinear of an int32 constant whose scale is x_scale * w_scale (float32, bit for bit,
 *    as quantizers write it) and zero point 0, or a float constant that is an exact multiple of that scale;
 *  - the Conv / MatMul / Gemm output read only by one QuantizeLinear (one scale and zero point, 8-bit output), or by
 *    a Relu / Clip read only by that QuantizeLinear, when the activation cannot change the quantized result:
 *    Q is monotonic, so Q(Relu(v)) = max(Q(v), Q(0)) and Q(Clip(v, lo, hi)) = clamp(Q(v), Q(lo), Q(hi)), and
 *    when Q(lo) (Q(0) for Relu) is at or below the type's minimum and Q(hi) at or above its maximum, the
 *    saturation of Q already does the clamp (quantizers calibrate ReLU6 outputs to about that range).
 * The DequantizeLinear nodes stay when something else reads their output (a residual Add, say).
 * QLinearConv then computes round((sum (x - x_zp)(w - w_zp) + b) * x_scale * w_scale / y_scale) + y_zp, which
 * is what DQ -> Conv -> Q computes up to the float rounding of the unfused Conv's sum and of the multiplier:
 * the two may differ by one unit of y_scale where the real value lies near a rounding tie.
 * A residual DQ(q), DQ(Z) -> Add (-> redundant Relu / Clip) -> Q whose q is a fused QLinearConv's output read
 * by nothing else joins that QLinearConv (its residual form, layers/quantize.c: Z and the Add's scales as
 * inputs 9 to 13): the conv's own Q (rounding, saturation) and the Add then run in its epilogue with
 * onnxruntime's QLinearAdd formula, (q - q_zp) * q_scale / s + (Z - z_zp) * z_scale / s rounded, so the result
 * matches the unfused graph but for float rounding at ties (one unit of s).
 * Also: DQ -> Reshape / Transpose / Flatten / Squeeze / Unsqueeze / Concat / MaxPool -> Q with one scale and zero point
 * runs the op on the 8-bit values (plan_move), and the 8-bit values between fused convolutions stay NHWC where
 * their backend takes a QLinearConv with src_nhwc / dst_nhwc (asked through supports(); plan_nhwc). */
#include "qdq_fuse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_registry.h"
#include "netrun_ops.h"

#define QDQ_ATTR "netrun.qdq_fused_from" /* on node 0 of the copy: the original (sub_model) */

enum { Q_NONE, Q_CONV, Q_MATMUL, Q_GEMM, Q_MOVE }; /* Q_GEMM: Reshape -> 1x1 QLinearConv -> Reshape; Q_MOVE: see plan_move */

/* One planned group: what replaces its node (the Conv, MatMul or Gemm; for Q_MOVE the op itself, on 8 bits). */
typedef struct qdq_group {
    int kind;
    int x, xs, xz;       /* 8-bit input, its scale and zero point (-1: absent, a zero is added) */
    int w, ws, wz;       /* weights (Conv) or B (MatMul) */
    int ys, yz, y;       /* the QuantizeLinear's scale, zero point and output */
    int bias_src;        /* Conv: the value holding the bias (int32 DQ input, or float constant), or -1 */
    int bias_dq;         /* 1: bias_src is already int32; 2: int32 of another scale (bias_scale), converted */
    int bias_scale;      /* bias_dq 2: the scale of that DequantizeLinear */
    int trans_b;         /* Gemm: W is [N, K] (else [K, N], transposed into the 1x1 conv's [N, K, 1, 1]) */
    int64_t gm, gk, gn;  /* Gemm: A [gm, gk], Y [gm, gn] */
    int dx, dw, db, act, q; /* the nodes it absorbs (-1 when none) */
    /* the residual (Q_CONV): Z, its scale and zero point, the Add's Q's scale, zero point and output; the Add
     * and its Q */
    int res, z, zs, zz, ss, sz, y2, radd, rq;
    int nhwc_ok;         /* its backend takes the QLinearConv with 8-bit X and Y in NHWC (plan_nhwc) */
} qdq_group;

typedef struct qdq_state {
    netrun_session *s;
    const nr_graph *g;
    int *users;          /* value -> number of reading nodes (+1 when a graph output) */
    int *snode_of;       /* node -> snode index, -1 when none */
    int *removed;        /* node -> 1 when absorbed */
    qdq_group *grp;      /* node -> group (kind Q_NONE when none) */
} qdq_state;

static int is_op(const nr_node *nd, const char *op) { return !*nd->domain && !strcmp(nd->op_type, op); }

static const nr_attr *find_attr(const nr_node *nd, const char *name) {
    for (int a = 0; a < nd->n_attrs; a++)
        if (nd->attrs[a].name && !strcmp(nd->attrs[a].name, name)) return &nd->attrs[a];
    return NULL;
}

static int64_t attr_i(const nr_node *nd, const char *name, int64_t def) {
    const nr_attr *a = find_attr(nd, name);
    return a && a->type == NR_ATTR_INT ? a->i : def;
}

static int in_at(const nr_node *nd, int i) { return i < nd->n_inputs ? nd->inputs[i] : -1; }

static const nr_tensor *cst(const qdq_state *o, int v) { return v >= 0 ? o->g->values[v].constant : NULL; }

static int is_8bit(netrun_dtype t) { return t == NETRUN_DTYPE_UINT8 || t == NETRUN_DTYPE_INT8; }

/* The node writing value v, or -1. */
static int producer(const qdq_state *o, int v) { return v >= 0 ? o->g->values[v].producer : -1; }

/* Node of the only reader of v (v not a graph output), or -1. */
static int only_reader(const qdq_state *o, int v) {
    if (v < 0 || o->users[v] != 1 || o->g->values[v].is_graph_output) return -1;
    for (int n = 0; n < o->g->n_nodes; n++)
        for (int i = 0; i < o->g->nodes[n].n_inputs; i++)
            if (o->g->nodes[n].inputs[i] == v) return n;
    return -1;
}

static int slot_of(const qdq_state *o, int n) {
    return n >= 0 && o->snode_of[n] >= 0 ? o->s->snodes[o->snode_of[n]].slot : -100;
}

/* A float32 scale constant with `count` values (count 1: one value). */
static const float *scale_const(const qdq_state *o, int v, int64_t *count) {
    const nr_tensor *t = cst(o, v);
    if (!t || t->dtype != NETRUN_DTYPE_FLOAT || !t->data) return NULL;
    *count = nr_tensor_count(t);
    for (int64_t i = 0; i < *count; i++)
        if (!(((const float *)t->data)[i] > 0) || !isfinite(((const float *)t->data)[i])) return NULL;
    return t->data;
}

/* A zero point: absent (-1, fine), or an 8-bit constant of type t with `count` values. */
static int zp_ok(const qdq_state *o, int v, netrun_dtype t, int64_t count) {
    if (v < 0) return 1;
    const nr_tensor *z = cst(o, v);
    return z && z->dtype == t && nr_tensor_count(z) == count;
}

/* DequantizeLinear node d of an 8-bit value with per-tensor parameters (activations). */
static int per_tensor_dq(const qdq_state *o, int d, int want_const) {
    if (d < 0) return 0;
    const nr_node *nd = &o->g->nodes[d];
    if (!is_op(nd, "DequantizeLinear") || nd->n_inputs < 2 || nd->n_outputs != 1) return 0;
    int x = nd->inputs[0];
    netrun_dtype t = o->s->values[x].desc.dtype;
    int64_t c = 0;
    if (!is_8bit(t) || !scale_const(o, nd->inputs[1], &c) || c != 1 || !zp_ok(o, in_at(nd, 2), t, 1)) return 0;
    if (want_const && !cst(o, x)) return 0;
    return o->s->values[nd->outputs[0]].desc.dtype == NETRUN_DTYPE_FLOAT;
}

/* Weight DequantizeLinear d: 8-bit constant, scale per tensor or `channels` values along `axis`. */
static int weight_dq(const qdq_state *o, int d, int axis, int64_t channels) {
    if (d < 0) return 0;
    const nr_node *nd = &o->g->nodes[d];
    if (!is_op(nd, "DequantizeLinear") || nd->n_inputs < 2 || nd->n_outputs != 1) return 0;
    const nr_tensor *w = cst(o, nd->inputs[0]);
    int64_t c = 0;
    if (!w || !is_8bit(w->dtype) || !scale_const(o, nd->inputs[1], &c)) return 0;
    if (o->s->values[nd->outputs[0]].desc.dtype != NETRUN_DTYPE_FLOAT) return 0;
    if (c == 1) return zp_ok(o, in_at(nd, 2), w->dtype, 1);
    int64_t ax = attr_i(nd, "axis", 1);
    if (ax < 0) ax += w->rank;
    if (ax != axis || c != channels || attr_i(nd, "block_size", 0) != 0) return 0;
    return zp_ok(o, in_at(nd, 2), w->dtype, channels) || zp_ok(o, in_at(nd, 2), w->dtype, 1);
}

static float scale_at(const qdq_state *o, int v, int64_t i) {
    const nr_tensor *t = cst(o, v);
    return ((const float *)t->data)[nr_tensor_count(t) == 1 ? 0 : i];
}

/* The Conv's bias B: 1 when it can be given as int32 (see the top comment); sets the group's bias fields. */
static int plan_bias(const qdq_state *o, int b, qdq_group *gr, int64_t m) {
    gr->bias_src = -1;
    gr->db = -1;
    if (b < 0) return 1;
    /* exporters share equal constants (a network's all-zero biases, BatchNorm folded at random init) through
     * Identity nodes; the quantizer then quantizes the shared bias once, with the first conv's scales */
    int via;
    b = nr_graph_identity_source(o->g, b, 8, &via);
    int d = producer(o, b);
    if (d >= 0) { /* DequantizeLinear of int32 */
        const nr_node *nd = &o->g->nodes[d];
        if (!is_op(nd, "DequantizeLinear") || nd->n_inputs < 2) return 0;
        const nr_tensor *q = cst(o, nd->inputs[0]), *z = cst(o, in_at(nd, 2));
        int64_t c = 0;
        if (!q || q->dtype != NETRUN_DTYPE_INT32 || nr_tensor_count(q) != m || !scale_const(o, nd->inputs[1], &c) ||
            (c != 1 && c != m))
            return 0;
        if (in_at(nd, 2) >= 0 && (!z || z->dtype != NETRUN_DTYPE_INT32)) return 0;
        for (int64_t i = 0; z && i < nr_tensor_count(z); i++)
            if (((const int32_t *)z->data)[i]) return 0;
        int same = 1;
        for (int64_t i = 0; i < m && same; i++)
            same = scale_at(o, nd->inputs[1], i) == scale_at(o, gr->xs, 0) * scale_at(o, gr->ws, i);
        /* another scale (a shared bias): the float values DQ gives must be exact multiples of this conv's */
        for (int64_t i = 0; i < m && !same; i++) {
            float sc = scale_at(o, gr->xs, 0) * scale_at(o, gr->ws, i);
            float v = (float)((const int32_t *)q->data)[i] * scale_at(o, nd->inputs[1], i);
            double r = nearbyint((double)v / sc);
            if (!(fabs(r) < 2147483647.0) || (float)(r * sc) != v) return 0;
        }
        gr->bias_src = nd->inputs[0];
        gr->bias_dq = same ? 1 : 2;
        gr->bias_scale = nd->inputs[1];
        gr->db = via >= 0 ? via : d;
        return 1;
    }
    const nr_tensor *t = cst(o, b); /* a float bias that is an exact multiple of x_scale * w_scale */
    if (!t || t->dtype != NETRUN_DTYPE_FLOAT || nr_tensor_count(t) != m) return 0;
    for (int64_t i = 0; i < m; i++) {
        float sc = scale_at(o, gr->xs, 0) * scale_at(o, gr->ws, i), v = ((const float *)t->data)[i];
        double q = nearbyint((double)v / sc);
        if (!(fabs(q) < 2147483647.0) || (float)(q * sc) != v) return 0;
    }
    gr->bias_src = b;
    gr->bias_dq = 0;
    gr->db = via;
    return 1;
}

/* QuantizeLinear q(v): saturate(round(v / scale) + zp) in the output type, as the kernel computes it. */
static double quantize_value(float v, float scale, double zp, double lo, double hi) {
    double r = nearbyint((double)(v / scale)) + zp;
    return r < lo ? lo : r > hi ? hi : r;
}

/* Relu / Clip node a between the op and QuantizeLinear node q: 1 when the saturation of q already clamps as
 * the activation would (exact by monotonicity; see the top comment). */
static int activation_redundant(const qdq_state *o, int a, int q) {
    const nr_node *an = &o->g->nodes[a], *qn = &o->g->nodes[q];
    float s = scale_at(o, qn->inputs[1], 0), lo = 0.0f, hi = INFINITY;
    netrun_dtype t = o->s->values[qn->outputs[0]].desc.dtype;
    const nr_tensor *z = cst(o, in_at(qn, 2));
    double zp = z ? (t == NETRUN_DTYPE_INT8 ? *(const int8_t *)z->data : *(const uint8_t *)z->data) : 0;
    double tlo = t == NETRUN_DTYPE_INT8 ? -128 : 0, thi = t == NETRUN_DTYPE_INT8 ? 127 : 255;
    if (is_op(an, "Clip")) {
        if (an->opset < 11) {
            const nr_attr *mn = find_attr(an, "min"), *mx = find_attr(an, "max");
            lo = mn ? mn->f : -INFINITY;
            hi = mx ? mx->f : INFINITY;
        } else {
            const nr_tensor *mn = cst(o, in_at(an, 1)), *mx = cst(o, in_at(an, 2));
            if ((in_at(an, 1) >= 0 && (!mn || mn->dtype != NETRUN_DTYPE_FLOAT)) ||
                (in_at(an, 2) >= 0 && (!mx || mx->dtype != NETRUN_DTYPE_FLOAT)))
                return 0;
            lo = mn ? *(const float *)mn->data : -INFINITY;
            hi = mx ? *(const float *)mx->data : INFINITY;
        }
    } else if (!is_op(an, "Relu"))
        return 0;
    int lo_ok = isinf(lo) || quantize_value(lo, s, zp, tlo, thi) <= tlo;
    int hi_ok = isinf(hi) || quantize_value(hi, s, zp, tlo, thi) >= thi;
    return lo_ok && hi_ok;
}

/* The QuantizeLinear reading value v (directly, or through one redundant Relu / Clip): sets gr->q, gr->act. */
static int plan_output(const qdq_state *o, int v, qdq_group *gr) {
    gr->act = -1;
    int r = only_reader(o, v);
    if (r < 0) return 0;
    const nr_node *rn = &o->g->nodes[r];
    if ((is_op(rn, "Relu") || is_op(rn, "Clip")) && rn->n_outputs == 1) {
        int q = only_reader(o, rn->outputs[0]);
        if (q < 0 || !is_op(&o->g->nodes[q], "QuantizeLinear")) return 0;
        gr->act = r;
        r = q;
        rn = &o->g->nodes[r];
    }
    if (!is_op(rn, "QuantizeLinear") || rn->n_inputs < 2 || rn->n_outputs != 1) return 0;
    netrun_dtype t = o->s->values[rn->outputs[0]].desc.dtype;
    int64_t c = 0;
    if (!is_8bit(t) || !scale_const(o, rn->inputs[1], &c) || c != 1 || !zp_ok(o, in_at(rn, 2), t, 1)) return 0;
    if (gr->act >= 0 && !activation_redundant(o, gr->act, r)) return 0;
    gr->q = r;
    gr->ys = rn->inputs[1];
    gr->yz = in_at(rn, 2);
    gr->y = rn->outputs[0];
    return 1;
}

/* Ask the backend running node n whether it takes the quantized node of group gr; nhwc: with X and Y in NHWC
 * (netrun_conv_params.src_nhwc / dst_nhwc, which a backend that does not handle them refuses). */
static int backend_takes(const qdq_state *o, const netrun_backend_config *cfg, int n, const qdq_group *gr, int nhwc) {
    netrun_session *s = o->s;
    const nr_snode *sn = &s->snodes[o->snode_of[n]];
    if (sn->slot < 0) return 0;
    netrun_value_desc in[14];
    memset(in, 0, sizeof in);
    int ids[14] = {gr->x, gr->xs, gr->xz, gr->w, gr->ws, gr->wz, gr->ys, gr->yz, gr->bias_src,
                   gr->z, gr->zs, gr->zz, gr->ss, gr->sz};
    int qconv = gr->kind != Q_MATMUL, n_in = gr->res ? 14 : qconv && gr->bias_src >= 0 ? 9 : 8;
    for (int i = 0; i < n_in; i++) {
        if (ids[i] >= 0) {
            in[i] = s->values[ids[i]].desc;
            continue;
        }
        if (i == 8) { /* no bias */
            in[i].name = "";
            in[i].rank = -1;
            continue;
        }
        in[i].name = "zero_point"; /* absent zero point: the rewrite adds a zero of the quantized type */
        in[i].dtype = s->values[i == 2 ? gr->x : i == 5 ? gr->w : i == 11 ? gr->z : i == 13 ? gr->y2 : gr->y].desc.dtype;
        in[i].rank = 0;
    }
    if (n_in >= 9 && gr->bias_src >= 0) in[8].dtype = NETRUN_DTYPE_INT32;
    netrun_conv_params cp;
    memset(&cp, 0, sizeof cp);
    if (gr->kind == Q_CONV && sn->params) memcpy(&cp, sn->params, sizeof cp);
    cp.has_bias = gr->bias_src >= 0 && qconv;
    cp.has_sum = gr->res;
    cp.src_nhwc = cp.dst_nhwc = nhwc;
    netrun_value_desc yd = s->values[gr->res ? gr->y2 : gr->y].desc;
    if (gr->kind == Q_GEMM) { /* the 1x1 conv over [M, K, 1, 1] the rewrite makes */
        cp.n_spatial = 2;
        cp.group = 1;
        for (int i = 0; i < 2; i++) cp.kernel[i] = cp.strides[i] = cp.dilations[i] = 1;
        int64_t xd[4] = {gr->gm, gr->gk, 1, 1}, wd[4] = {gr->gn, gr->gk, 1, 1}, yd4[4] = {gr->gm, gr->gn, 1, 1};
        in[0].rank = in[3].rank = yd.rank = 4;
        memcpy(in[0].dims, xd, sizeof xd);
        memcpy(in[3].dims, wd, sizeof wd);
        memcpy(yd.dims, yd4, sizeof yd4);
    }
    const nr_node *nd = &o->g->nodes[n];
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name,
                          .op_type = qconv ? "QLinearConv" : "QLinearMatMul", .domain = "",
                          .opset = qconv ? 10 : 21, .params = qconv ? &cp : NULL,
                          .params_size = qconv ? sizeof cp : 0, .n_inputs = n_in, .inputs = in,
                          .n_outputs = 1, .outputs = &yd};
    char why[256] = "";
    int ok = s->slots[sn->slot].api->supports(cfg, &d, why, sizeof why);
    if (!ok && !nhwc) /* the group stays in float: say why (netrun -v) */
        nr_host_api()->log(NETRUN_LOG_INFO, "qdq", "'%s' stays in float on %s: %s", nd->name ? nd->name : "",
                           s->slots[sn->slot].be && s->slots[sn->slot].be->name ? s->slots[sn->slot].be->name : "its backend", why[0] ? why : "refused");
    return ok;
}

static int dwn_input(const qdq_state *o, int d) { return d >= 0 ? o->g->nodes[d].inputs[0] : -1; }

/* Data inputs of an op that only moves or selects values (so it commutes with a monotonic per-tensor
 * DequantizeLinear), or 0. */
static int move_inputs(const nr_node *nd) {
    if (*nd->domain || nd->n_outputs != 1) return 0;
    if (is_op(nd, "Concat")) return nd->n_inputs;
    if (is_op(nd, "Reshape") || is_op(nd, "Transpose") || is_op(nd, "Flatten") ||
        is_op(nd, "Squeeze") || is_op(nd, "Unsqueeze"))
        return 1;
    if (is_op(nd, "MaxPool")) return 1; /* max commutes with a monotonic DQ (one output: no Indices) */
    return 0;
}

static int same_scalar(const qdq_state *o, int a, int b) {
    const nr_tensor *x = cst(o, a), *y = cst(o, b);
    if (a < 0 || b < 0) return a < 0 && b < 0;
    return x && y && x->dtype == y->dtype && nr_tensor_count(x) == 1 && nr_tensor_count(y) == 1 &&
           !memcmp(x->data, y->data, netrun_dtype_size(x->dtype));
}

/* DQ -> Reshape | Transpose | Flatten | Squeeze | Unsqueeze | Concat | MaxPool -> Q with the same scale and zero point
 * on every side: the op runs on the 8-bit values (Q(DQ(q)) = q for one scale and zero point). */
static int plan_move(qdq_state *o, const netrun_backend_config *cfg, int n) {
    const nr_node *nd = &o->g->nodes[n];
    int k = move_inputs(nd);
    if (!k || o->snode_of[n] < 0 || nd->outputs[0] < 0) return 0;
    if (o->s->values[nd->outputs[0]].desc.dtype != NETRUN_DTYPE_FLOAT) return 0;
    qdq_group gr;
    memset(&gr, 0, sizeof gr);
    gr.act = -1;
    int q = only_reader(o, nd->outputs[0]), sl = slot_of(o, n);
    if (q < 0 || !is_op(&o->g->nodes[q], "QuantizeLinear") || slot_of(o, q) != sl || sl < 0) return 0;
    const nr_node *qn = &o->g->nodes[q];
    netrun_dtype t = o->s->values[qn->outputs[0]].desc.dtype;
    int64_t c = 0;
    if (qn->n_inputs < 2 || !is_8bit(t) || !scale_const(o, qn->inputs[1], &c) || c != 1) return 0;
    netrun_value_desc in[16];
    if (nd->n_inputs > 16) return 0;
    for (int i = 0; i < nd->n_inputs; i++) {
        in[i] = nd->inputs[i] >= 0 ? o->s->values[nd->inputs[i]].desc : (netrun_value_desc){.name = "", .rank = -1};
        if (i >= k) continue;
        int d = producer(o, nd->inputs[i]);
        if (!per_tensor_dq(o, d, 0) || slot_of(o, d) != sl) return 0;
        const nr_node *dn = &o->g->nodes[d];
        if (o->s->values[dn->inputs[0]].desc.dtype != t || !same_scalar(o, dn->inputs[1], qn->inputs[1]) ||
            !same_scalar(o, in_at(dn, 2), in_at(qn, 2)))
            return 0;
        in[i].dtype = t;
    }
    netrun_value_desc yd = o->s->values[qn->outputs[0]].desc;
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = nd->op_type, .domain = nd->domain,
                          .opset = nd->opset, .params = sn->params,
                          .params_size = nd->layer ? nd->layer->params_size : 0, .n_inputs = nd->n_inputs,
                          .inputs = in, .n_outputs = 1, .outputs = &yd};
    char why[256] = "";
    if (!o->s->slots[sl].api->supports(cfg, &d, why, sizeof why)) return 0;
    gr.kind = Q_MOVE;
    gr.q = q;
    gr.y = qn->outputs[0];
    gr.dx = gr.dw = gr.db = -1;
    o->grp[n] = gr;
    return 1;
}

/* Node n (Conv, MatMul or Gemm): plan its group. 1 when planned. */
static int plan_group(qdq_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    const nr_node *nd = &g->nodes[n];
    qdq_group gr;
    memset(&gr, 0, sizeof gr);
    int conv = is_op(nd, "Conv"), mm = is_op(nd, "MatMul"), gemm = is_op(nd, "Gemm");
    if ((!conv && !mm && !gemm) || nd->n_outputs != 1 || nd->n_inputs < 2 || o->snode_of[n] < 0) return 0;
    const netrun_value_desc *yd = &o->s->values[nd->outputs[0]].desc, *wd = &o->s->values[nd->inputs[1]].desc;
    if (yd->dtype != NETRUN_DTYPE_FLOAT || yd->rank < 2 || wd->rank < 2) return 0;
    gr.kind = conv ? Q_CONV : mm ? Q_MATMUL : Q_GEMM;
    gr.dx = producer(o, nd->inputs[0]);
    gr.dw = producer(o, nd->inputs[1]);
    if (!per_tensor_dq(o, gr.dx, 0)) return 0;
    int64_t channels = conv ? wd->dims[0] : wd->dims[wd->rank - 1];
    if (gemm) { /* Y = A W (+ C): exact as a 1x1 conv only with alpha = beta = 1 and A not transposed */
        const nr_attr *al = find_attr(nd, "alpha"), *be = find_attr(nd, "beta");
        gr.trans_b = (int)attr_i(nd, "transB", 0);
        if (attr_i(nd, "transA", 0) || (al && al->f != 1.0f) || (be && be->f != 1.0f) || wd->rank != 2 ||
            yd->rank != 2 || !cst(o, dwn_input(o, gr.dw)))
            return 0;
        channels = wd->dims[gr.trans_b ? 0 : 1];
        gr.gm = yd->dims[0], gr.gk = wd->dims[gr.trans_b ? 1 : 0], gr.gn = channels;
        const netrun_value_desc *c = in_at(nd, 2) >= 0 ? &o->s->values[nd->inputs[2]].desc : NULL;
        if (gr.gm < 1 || gr.gk < 1 || (c && (c->rank != 1 || c->dims[0] != channels))) return 0;
        if (!weight_dq(o, gr.dw, gr.trans_b ? 0 : 1, channels)) return 0;
    } else if (conv ? !weight_dq(o, gr.dw, 0, channels)
                    : !(per_tensor_dq(o, gr.dw, 0) || (wd->rank == 2 && weight_dq(o, gr.dw, 1, channels))))
        return 0;
    const nr_node *dxn = &g->nodes[gr.dx], *dwn = &g->nodes[gr.dw];
    gr.x = dxn->inputs[0], gr.xs = dxn->inputs[1], gr.xz = in_at(dxn, 2);
    gr.w = dwn->inputs[0], gr.ws = dwn->inputs[1], gr.wz = in_at(dwn, 2);
    if ((conv || gemm) && !plan_bias(o, in_at(nd, 2), &gr, channels)) return 0;
    if (mm) gr.bias_src = gr.db = -1;
    if (!plan_output(o, nd->outputs[0], &gr)) return 0;
    /* one backend for all of it */
    int sl = slot_of(o, n);
    if (sl < 0 || slot_of(o, gr.dx) != sl || slot_of(o, gr.q) != sl || (gr.act >= 0 && slot_of(o, gr.act) != sl))
        return 0;
    if (!backend_takes(o, cfg, n, &gr, 0)) return 0;
    o->grp[n] = gr;
    return 1;
}

/* The group whose QuantizeLinear is node q, or -1. */
static int group_of_q(const qdq_state *o, int q) {
    for (int n = 0; q >= 0 && n < o->g->n_nodes; n++)
        if (o->grp[n].kind != Q_NONE && o->grp[n].kind != Q_MOVE && o->grp[n].q == q) return n;
    return -1;
}

/* Where the copy writes value v: the node of the group that absorbed its writer (a QuantizeLinear), else its
 * writer (-1: a graph input). */
static int written_at(const qdq_state *o, int v) {
    int p = producer(o, v);
    for (int n = 0; p >= 0 && n < o->g->n_nodes; n++)
        if (o->grp[n].kind != Q_NONE && (o->grp[n].q == p || (o->grp[n].res && o->grp[n].rq == p))) return n;
    return p;
}

static int same_desc(const netrun_value_desc *a, const netrun_value_desc *b) {
    return a->rank == b->rank && !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)(a->rank > 0 ? a->rank : 0));
}

/* Add node a: DQ(q), DQ(Z) -> Add -> Q (see the top comment) with q the output of a planned QLinearConv group
 * (not a Gemm's) read only through that DQ, the Add only; Z written before the conv runs (its writer comes
 * first in the node order). Sets the group's residual fields; 1 when planned. */
static int plan_residual(qdq_state *o, const netrun_backend_config *cfg, int a) {
    const nr_graph *g = o->g;
    const nr_node *an = &g->nodes[a];
    if (!is_op(an, "Add") || an->n_inputs != 2 || an->n_outputs != 1 || an->outputs[0] < 0 || o->snode_of[a] < 0)
        return 0;
    const netrun_value_desc *ad = &o->s->values[an->outputs[0]].desc;
    for (int side = 1; side >= 0; side--) { /* the later input first: usually the main branch's last conv */
        int da = producer(o, an->inputs[side]), dz = producer(o, an->inputs[1 - side]);
        if (da == dz || !per_tensor_dq(o, da, 0) || !per_tensor_dq(o, dz, 0)) continue;
        int q1 = g->nodes[da].inputs[0], c = group_of_q(o, producer(o, q1));
        if (c < 0 || o->grp[c].kind != Q_CONV || o->grp[c].res || o->users[q1] != 1 || g->values[q1].is_graph_output ||
            o->users[an->inputs[side]] != 1 || g->values[an->inputs[side]].is_graph_output)
            continue;
        int z = g->nodes[dz].inputs[0];
        if (written_at(o, z) >= c || cst(o, z) || !same_desc(&o->s->values[an->inputs[0]].desc, ad) ||
            !same_desc(&o->s->values[an->inputs[1]].desc, ad) || !same_desc(&o->s->values[q1].desc, ad))
            continue;
        qdq_group gr = o->grp[c], out;
        memset(&out, 0, sizeof out);
        if (!plan_output(o, an->outputs[0], &out)) return 0;
        int sl = slot_of(o, c);
        if (slot_of(o, a) != sl || slot_of(o, da) != sl || slot_of(o, dz) != sl || slot_of(o, out.q) != sl ||
            (out.act >= 0 && slot_of(o, out.act) != sl))
            return 0;
        const nr_node *dzn = &g->nodes[dz];
        gr.res = 1;
        gr.z = z, gr.zs = dzn->inputs[1], gr.zz = in_at(dzn, 2);
        gr.ss = out.ys, gr.sz = out.yz, gr.y2 = out.y;
        gr.radd = a, gr.rq = out.q;
        if (!backend_takes(o, cfg, c, &gr, 0)) return 0;
        o->grp[c] = gr;
        o->removed[da] = o->removed[a] = o->removed[out.q] = 1; /* DQ(q), the Add (its activation) and its Q go */
        if (out.act >= 0) o->removed[out.act] = 1;
        if (--o->users[an->inputs[1 - side]] == 0 && !g->values[an->inputs[1 - side]].is_graph_output)
            o->removed[dz] = 1; /* DQ(Z) too when nothing else reads it */
        return 1;
    }
    return 0;
}

/* ---- the copy ---- */

/* A zero point of type t (one value) for an absent one. */
static int zero_const(const qdq_state *o, nr_graph *ng, int like, netrun_dtype t) {
    return nr_graph_new_const(ng, o->g->values[like].name, ".zero_point", nr_tensor_new(t, 0, NULL));
}

/* The int32 bias of group gr (a float bias converted; an int32 one borrowed as it is). */
static int bias_value(const qdq_state *o, nr_graph *ng, const qdq_group *gr) {
    if (gr->bias_dq == 1) return gr->bias_src;
    const nr_tensor *t = cst(o, gr->bias_src);
    nr_tensor *b = nr_tensor_new(NETRUN_DTYPE_INT32, 1, t->dims);
    if (!b) return -1;
    for (int64_t i = 0; i < t->dims[0]; i++) {
        float sc = scale_at(o, gr->xs, 0) * scale_at(o, gr->ws, i);
        float v = gr->bias_dq == 2 ? (float)((const int32_t *)t->data)[i] * scale_at(o, gr->bias_scale, i)
                                   : ((const float *)t->data)[i];
        ((int32_t *)b->data)[i] = (int32_t)nearbyint((double)v / sc);
    }
    return nr_graph_new_const(ng, o->g->values[gr->bias_src].name, ".int32", b);
}

/* An int64 constant shape (Reshape's second input). */
static int shape_const(nr_graph *ng, const char *base, const char *suffix, int n, const int64_t *v) {
    int64_t d[1] = {n};
    nr_tensor *t = nr_tensor_new(NETRUN_DTYPE_INT64, 1, d);
    if (t) memcpy(t->data, v, sizeof(int64_t) * (size_t)n);
    return nr_graph_new_const(ng, base, suffix, t);
}

/* A new value named base + suffix (unique), written by a node of the copy. */
static int new_value(nr_graph *ng, const char *base, const char *suffix) {
    char name[512];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    for (int k = 2; nr_graph_find_value(ng, name) >= 0; k++) snprintf(name, sizeof name, "%s%s%d", base, suffix, k);
    return nr_graph_value(ng, name);
}

/* Gemm: W as the 1x1 conv's [N, K, 1, 1] (transposed from [K, N] unless transB). */
static int gemm_weights(const qdq_state *o, nr_graph *ng, const qdq_group *gr) {
    const nr_tensor *w = cst(o, gr->w);
    int64_t d[4] = {gr->gn, gr->gk, 1, 1};
    nr_tensor *t = nr_tensor_new(w->dtype, 4, d);
    if (!t) return -1;
    const uint8_t *src = w->data;
    uint8_t *dst = t->data;
    for (int64_t n = 0; n < gr->gn; n++)
        for (int64_t k = 0; k < gr->gk; k++) dst[n * gr->gk + k] = gr->trans_b ? src[n * gr->gk + k] : src[k * gr->gn + n];
    return nr_graph_new_const(ng, o->g->values[gr->w].name, ".nk11", t);
}

/* Adds the group's nodes; *conv_node: the index in ng of its QLinearConv (-1 for QLinearMatMul). */
static netrun_status add_group(const qdq_state *o, nr_graph *ng, int n, int first, int *conv_node) {
    const qdq_group *gr = &o->grp[n];
    const nr_node *nd = &o->g->nodes[n];
    int conv = gr->kind != Q_MATMUL, gemm = gr->kind == Q_GEMM, n_in = conv && gr->bias_src >= 0 ? 9 : 8;
    char name[1024];
    snprintf(name, sizeof name, "%s+%s%s%s", nd->name, gr->act >= 0 ? o->g->nodes[gr->act].name : "",
             gr->act >= 0 ? "+" : "", o->g->nodes[gr->q].name);
    int ids[14] = {gr->x, gr->xs, gr->xz, gemm ? gemm_weights(o, ng, gr) : gr->w, gr->ws, gr->wz, gr->ys, gr->yz, -1,
                   gr->z, gr->zs, gr->zz, gr->ss, gr->sz};
    if (ids[2] < 0) ids[2] = zero_const(o, ng, gr->x, o->s->values[gr->x].desc.dtype);
    if (ids[5] < 0) ids[5] = zero_const(o, ng, gr->w, o->s->values[gr->w].desc.dtype);
    if (ids[7] < 0) ids[7] = zero_const(o, ng, gr->y, o->s->values[gr->y].desc.dtype);
    if (n_in == 9) ids[8] = bias_value(o, ng, gr);
    int y = gr->y;
    if (gr->res) { /* the residual form: 14 inputs, B possibly absent */
        if (gr->bias_src >= 0 && (ids[8] = bias_value(o, ng, gr)) < 0)
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory fusing '%s'", nd->name);
        if (ids[11] < 0) ids[11] = zero_const(o, ng, gr->z, o->s->values[gr->z].desc.dtype);
        if (ids[13] < 0) ids[13] = zero_const(o, ng, gr->y2, o->s->values[gr->y2].desc.dtype);
        n_in = 14;
        y = gr->y2;
        snprintf(name + strlen(name), sizeof name - strlen(name), "+%s", o->g->nodes[gr->radd].name);
    }
    static const int64_t to4[4] = {0, 0, 1, 1}, to2[2] = {0, 0}; /* 0: the dim as it is */
    if (gemm) { /* [M, K] -> [M, K, 1, 1] -> QLinearConv -> [M, N, 1, 1] -> [M, N] */
        int s4 = shape_const(ng, nd->name, ".to_nk11", 4, to4), s2 = shape_const(ng, nd->name, ".to_mn", 2, to2);
        int x4 = new_value(ng, nd->name, ".x_nk11"), y4 = new_value(ng, nd->name, ".y_mn11");
        nr_node *r = s4 < 0 || s2 < 0 || x4 < 0 || y4 < 0 ? NULL
                         : nr_graph_add_node(ng, nd->name, "Reshape", "", 2, 1, first);
        if (!r) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory fusing '%s'", nd->name);
        r->inputs[0] = ids[0];
        r->inputs[1] = s4;
        r->outputs[0] = x4;
        ids[0] = x4;
        first = 0;
        y = y4;
        nr_node *r2 = nr_graph_add_node(ng, o->g->nodes[gr->q].name, "Reshape", "", 2, 1, 0);
        if (!r2) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory fusing '%s'", nd->name);
        r2->inputs[0] = y4;
        r2->inputs[1] = s2;
        r2->outputs[0] = gr->y;
    }
    for (int i = 0; i < n_in; i++)
        if (ids[i] < 0 && i != 8) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory fusing '%s'", nd->name);
    int n_attrs = gr->kind == Q_CONV ? nd->n_attrs : 0;
    nr_node *nn = nr_graph_add_node(ng, name, conv ? "QLinearConv" : "QLinearMatMul", "", n_in, 1,
                                    n_attrs + gr->res + first);
    if (!nn) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory fusing '%s'", nd->name);
    *conv_node = conv ? ng->n_nodes - 1 : -1;
    memcpy(nn->inputs, ids, sizeof(int) * (size_t)n_in);
    nn->outputs[0] = y;
    for (int a = 0; a < n_attrs; a++) {
        netrun_status st = nr_attr_copy_borrowed(&nn->attrs[a], &nd->attrs[a]);
        if (st != NETRUN_OK) return st;
    }
    if (gr->res) { /* before the pass's mark, which stays the last attribute of node 0 */
        if (!(nn->attrs[n_attrs].name = nr_strdup("netrun.qdq_residual")))
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory fusing '%s'", nd->name);
        nn->attrs[n_attrs].type = NR_ATTR_INT;
        nn->attrs[n_attrs].i = 1;
    }
    if (gemm) { /* the output Reshape after the conv: swap the last two nodes */
        nr_node tmp = ng->nodes[ng->n_nodes - 1];
        ng->nodes[ng->n_nodes - 1] = ng->nodes[ng->n_nodes - 2];
        ng->nodes[ng->n_nodes - 2] = tmp;
        *conv_node = ng->n_nodes - 2;
    }
    return NETRUN_OK;
}

static void free_state(qdq_state *o) {
    nr_free(o->users);
    nr_free(o->snode_of);
    nr_free(o->removed);
    nr_free(o->grp);
}

/* ---- channels-last int8 between the fused convolutions ----
 * The CPU's int8 convolution works on NHWC; reordering X and Y inside every QLinearConv costs more than the
 * convolution itself (MobileNetV2: about 70% of the node time). So a value stays NHWC (same dims, its bytes
 * in NHWC order) when every node that writes or reads it knows: QLinearConvs that run on the CPU (params
 * src_nhwc / dst_nhwc), and elementwise nodes over one shape that do not care about the order (QuantizeLinear
 * and DequantizeLinear per tensor, Add / Sub / Mul without broadcasting, Relu, Clip with constant bounds),
 * whose other inputs and outputs are then NHWC too. Values seen by anything else (graph inputs and outputs,
 * other ops) stay NCHW, and the QLinearConvs at those borders reorder inside. A residual QLinearConv's Z
 * shares its Y's layout. */

static int uf_find(int *par, int v) {
    while (par[v] != v) v = par[v] = par[par[v]];
    return v;
}

static int desc4(const qdq_state *o, int v, int64_t *dims) {
    if (v < 0 || v >= o->g->n_values) return 0; /* a zero point the rewrite added */
    const netrun_value_desc *d = &o->s->values[v].desc;
    if (d->rank != 4 || o->s->values[v].dynamic || o->g->values[v].constant) return 0;
    for (int i = 0; i < 4; i++)
        if ((dims[i] = d->dims[i]) < 1) return 0;
    return 1;
}

/* Data inputs of an order-agnostic elementwise node (see above): count, or -1 when the node is not one. */
static int agnostic_inputs(const qdq_state *o, const nr_node *nd) {
    if (*nd->domain || nd->n_outputs != 1) return -1;
    int64_t c = 0;
    if (is_op(nd, "QuantizeLinear") || is_op(nd, "DequantizeLinear"))
        return nd->n_inputs >= 2 && scale_const(o, nd->inputs[1], &c) && c == 1 ? 1 : -1;
    if (is_op(nd, "Relu")) return 1;
    if (is_op(nd, "Clip")) {
        for (int i = 1; i < nd->n_inputs; i++)
            if (nd->inputs[i] >= 0 && !cst(o, nd->inputs[i])) return -1;
        return 1;
    }
    if (is_op(nd, "Add") || is_op(nd, "Sub") || is_op(nd, "Mul")) return 2;
    return -1;
}

/* Which values of the copy ng are NHWC: nhwc[v] = 1. */
static netrun_status plan_nhwc(const qdq_state *o, const nr_graph *ng, const int *nhwc_conv, char *nhwc) {
    int nv = ng->n_values;
    int *par = nr_calloc((size_t)nv + 1, sizeof(int));
    char *bad = nr_calloc((size_t)nv + 1, 1), *conv = nr_calloc((size_t)nv + 1, 1);
    if (!par || !bad || !conv) {
        nr_free(par);
        nr_free(bad);
        nr_free(conv);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the QDQ fusion pass");
    }
    for (int v = 0; v < nv; v++) par[v] = v;
    int64_t d0[4], d1[4];
    for (int n = 0; n < ng->n_nodes; n++) { /* join the values of agnostic nodes of one shape */
        const nr_node *nd = &ng->nodes[n];
        int k = agnostic_inputs(o, nd), y = nd->n_outputs ? nd->outputs[0] : -1;
        if (nhwc_conv[n] && nd->n_inputs == 14 && y >= 0) { /* a residual conv's Z has Y's layout (same shape) */
            if (nd->inputs[9] >= 0 && nd->inputs[9] < nv) par[uf_find(par, nd->inputs[9])] = uf_find(par, y);
            continue;
        }
        if (k < 0 || nd->n_inputs < k || !desc4(o, y, d0)) continue;
        int same = 1;
        for (int i = 0; i < k && same; i++) same = desc4(o, nd->inputs[i], d1) && !memcmp(d0, d1, sizeof d0);
        if (!same) continue;
        for (int i = 0; i < k; i++) par[uf_find(par, nd->inputs[i])] = uf_find(par, y);
    }
    for (int n = 0; n < ng->n_nodes; n++) { /* what else reads or writes a value pins it to NCHW */
        const nr_node *nd = &ng->nodes[n];
        int k = agnostic_inputs(o, nd), y = nd->n_outputs ? nd->outputs[0] : -1;
        if (nhwc_conv[n]) {
            if (y >= 0 && desc4(o, y, d0)) conv[uf_find(par, y)] = 1;
            for (int i = 1; i < nd->n_inputs; i++)
                if (nd->inputs[i] >= 0 && nd->inputs[i] < nv && !(i == 9 && nd->n_inputs == 14))
                    bad[uf_find(par, nd->inputs[i])] = 1;
            continue;
        }
        int joined = k >= 0 && y >= 0 && uf_find(par, y) != y ? 1 : k >= 0 && y >= 0;
        for (int i = 0; i < nd->n_inputs; i++) {
            int v = nd->inputs[i];
            if (v < 0 || v >= nv) continue;
            if (!(joined && i < k && uf_find(par, v) == uf_find(par, y))) bad[uf_find(par, v)] = 1;
        }
        for (int i = 0; i < nd->n_outputs; i++) {
            int v = nd->outputs[i];
            if (v >= 0 && v < nv && !(k >= 0 && i == 0 && desc4(o, v, d0))) bad[uf_find(par, v)] = 1;
        }
    }
    for (int v = 0; v < nv; v++)
        if (ng->values[v].is_graph_input || ng->values[v].is_graph_output || ng->values[v].constant || !desc4(o, v, d0))
            bad[uf_find(par, v)] = 1;
    for (int v = 0; v < nv; v++) {
        int r = uf_find(par, v);
        nhwc[v] = conv[r] && !bad[r];
    }
    nr_free(par);
    nr_free(bad);
    nr_free(conv);
    return NETRUN_OK;
}


static netrun_status build_model(qdq_state *o, netrun_model **out, int *n_nhwc) {
    const nr_graph *g = o->g;
    int *nhwc_conv = NULL;
    char *nhwc = NULL;
    const nr_model_ir *src = o->s->model->ir;
    netrun_status st = NETRUN_OK;
    nr_model_ir *ir = nr_calloc(1, sizeof *ir);
    if (!ir || !(ir->graph = nr_graph_new(g->name, NULL))) goto oom;
    ir->ir_version = src->ir_version;
    if (src->producer && !(ir->producer = nr_strdup(src->producer))) goto oom;
    if (src->n_opsets && !(ir->opsets = nr_calloc((size_t)src->n_opsets, sizeof *ir->opsets))) goto oom;
    for (int i = 0; i < src->n_opsets; i++, ir->n_opsets++) {
        ir->opsets[i].version = src->opsets[i].version;
        if (!(ir->opsets[i].domain = nr_strdup(src->opsets[i].domain ? src->opsets[i].domain : ""))) goto oom;
    }
    nr_graph *ng = ir->graph;
    if ((st = nr_graph_copy_values_borrowed(g, ng)) != NETRUN_OK) goto fail;
    if (!(nhwc_conv = nr_calloc(2 * (size_t)g->n_nodes + 1, sizeof(int)))) goto oom; /* a Gemm becomes 3 nodes */
    for (int n = 0; n < g->n_nodes; n++) {
        if (o->removed[n]) continue;
        int first = ng->n_nodes == 0;
        if (o->grp[n].kind != Q_NONE && o->grp[n].kind != Q_MOVE) {
            int ci = -1;
            if ((st = add_group(o, ng, n, first, &ci)) != NETRUN_OK) goto fail;
            if (ci >= 0) nhwc_conv[ci] = o->grp[n].nhwc_ok;
            continue;
        }
        const nr_node *nd = &g->nodes[n];
        nr_node *nn = nr_graph_add_node(ng, nd->name, nd->op_type, nd->domain, nd->n_inputs, nd->n_outputs,
                                        nd->n_attrs + first);
        if (!nn) goto oom;
        memcpy(nn->inputs, nd->inputs, sizeof(int) * (size_t)nd->n_inputs);
        memcpy(nn->outputs, nd->outputs, sizeof(int) * (size_t)nd->n_outputs);
        if (o->grp[n].kind == Q_MOVE) { /* the op on the 8-bit values: the DQs' inputs in, the Q's output out */
            for (int i = 0; i < move_inputs(nd); i++) nn->inputs[i] = g->nodes[producer(o, nd->inputs[i])].inputs[0];
            nn->outputs[0] = o->grp[n].y;
        }
        for (int a = 0; a < nd->n_attrs; a++)
            if ((st = nr_attr_copy_borrowed(&nn->attrs[a], &nd->attrs[a])) != NETRUN_OK) goto fail;
    }
    /* the mark: the reference that keeps the borrowed constants alive, and "done" for the next prepare */
    nr_node *first = &ng->nodes[0];
    nr_attr *mark = &first->attrs[first->n_attrs - 1];
    if (!(mark->name = nr_strdup(QDQ_ATTR))) goto oom;
    mark->type = NR_ATTR_INTS;
    nr_model_retain(o->s->model);
    mark->sub_model = o->s->model;
    const char *lay = nr_options_get(&o->s->opts, "graph.int8_nhwc");
    if (!(lay && !strcmp(lay, "0"))) {
        if (!(nhwc = nr_calloc((size_t)ng->n_values + 1, 1))) goto oom;
        if ((st = plan_nhwc(o, ng, nhwc_conv, nhwc)) != NETRUN_OK) goto fail;
    }
    char source[1100];
    snprintf(source, sizeof source, "%s", o->s->model->source ? o->s->model->source : "<memory>");
    int n_copied = ng->n_nodes;
    st = nr_model_from_ir(ir, source, out); /* takes ir, also on failure */
    ir = NULL;
    if (st != NETRUN_OK) goto fail;
    /* the layout is no ONNX attribute: set it on the copy's parsed params (infer keeps it) */
    for (int n = 0; nhwc && n < n_copied && n < (*out)->ir->graph->n_nodes; n++) {
        const nr_node *nd = &(*out)->ir->graph->nodes[n];
        netrun_conv_params *cp = nd->params;
        if (!nhwc_conv[n] || !cp) continue;
        cp->src_nhwc = nhwc[nd->inputs[0]];
        cp->dst_nhwc = nhwc[nd->outputs[0]];
        *n_nhwc += cp->src_nhwc + cp->dst_nhwc;
    }
    nr_free(nhwc_conv);
    nr_free(nhwc);
    return st;
oom:
    st = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the QDQ fusion pass");
fail:
    nr_model_ir_free(ir);
    nr_free(nhwc_conv);
    nr_free(nhwc);
    return st;
}

netrun_status nr_qdq_fuse_session(netrun_session *s, const netrun_backend_config *cfg, netrun_model **out,
                                  int *n_fused) {
    *out = NULL;
    *n_fused = 0;
    const nr_graph *g = s->model->ir->graph;
    if (g->n_nodes < 3 || find_attr(&g->nodes[0], QDQ_ATTR)) return NETRUN_OK;
    const char *on = nr_options_get(&s->opts, "graph.qdq_fuse");
    if (on && !strcmp(on, "0")) return NETRUN_OK;
    int any = 0;
    for (int n = 0; n < g->n_nodes && !any; n++) any = is_op(&g->nodes[n], "QuantizeLinear");
    if (!any) return NETRUN_OK;
    qdq_state o = {.s = s, .g = g};
    o.users = nr_calloc((size_t)g->n_values + 1, sizeof(int));
    o.snode_of = nr_calloc((size_t)g->n_nodes + 1, sizeof(int));
    o.removed = nr_calloc((size_t)g->n_nodes + 1, sizeof(int));
    o.grp = nr_calloc((size_t)g->n_nodes + 1, sizeof(qdq_group));
    if (!o.users || !o.snode_of || !o.removed || !o.grp) {
        free_state(&o);
        return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the QDQ fusion pass");
    }
    for (int n = 0; n < g->n_nodes; n++) {
        o.snode_of[n] = -1;
        for (int i = 0; i < g->nodes[n].n_inputs; i++)
            if (g->nodes[n].inputs[i] >= 0) o.users[g->nodes[n].inputs[i]]++;
    }
    for (int v = 0; v < g->n_values; v++) o.users[v] += g->values[v].is_graph_output;
    for (int k = 0; k < s->n_snodes; k++) o.snode_of[s->snodes[k].node] = k;
    for (int n = 0; n < g->n_nodes; n++) {
        if (!plan_group(&o, cfg, n) && !plan_move(&o, cfg, n)) continue;
        qdq_group *gr = &o.grp[n];
        (*n_fused)++;
        if (gr->kind == Q_MOVE) {
            o.removed[gr->q] = 1;
            for (int i = 0; i < move_inputs(&g->nodes[n]); i++) {
                int d = producer(&o, g->nodes[n].inputs[i]), v = g->nodes[n].inputs[i];
                if (--o.users[v] == 0 && !g->values[v].is_graph_output) o.removed[d] = 1;
            }
            continue;
        }
        o.removed[gr->q] = 1;
        if (gr->act >= 0) o.removed[gr->act] = 1;
        /* the DQs go with their last reader */
        int dq[3] = {gr->dx, gr->dw, gr->db};
        for (int i = 0; i < 3; i++)
            if (dq[i] >= 0 && --o.users[g->nodes[dq[i]].outputs[0]] == 0 && !g->values[g->nodes[dq[i]].outputs[0]].is_graph_output)
                o.removed[dq[i]] = 1;
    }
    int n_res = 0;
    const char *ro = nr_options_get(&s->opts, "graph.qdq_residual");
    for (int n = 0; *n_fused && !(ro && !strcmp(ro, "0")) && n < g->n_nodes; n++) {
        if (!o.removed[n] && plan_residual(&o, cfg, n)) n_res++;
    }
    /* which fused convolutions' backends keep 8-bit values NHWC between them (asked on the final groups) */
    for (int n = 0; n < g->n_nodes; n++)
        if (!o.removed[n] && o.grp[n].kind != Q_NONE && o.grp[n].kind != Q_MOVE && o.grp[n].kind != Q_MATMUL)
            o.grp[n].nhwc_ok = backend_takes(&o, cfg, n, &o.grp[n], 1);
    netrun_status st = NETRUN_OK;
    if (*n_fused) {
        int n_nhwc = 0;
        st = build_model(&o, out, &n_nhwc);
        if (st == NETRUN_OK)
            nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "QDQ fusion: %d groups rewritten to QLinearConv / "
                               "QLinearMatMul, %d residual Adds joined to their QLinearConv (graph.qdq_residual=0: "
                               "none); %d of their inputs and outputs kept NHWC (graph.int8_nhwc=0: none)",
                               *n_fused, n_res, n_nhwc);
    }
    free_state(&o);
    if (st != NETRUN_OK) *out = NULL, *n_fused = 0;
    return st;
}
