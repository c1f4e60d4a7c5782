/* Graph passes, the transformer fusions (docs/design.md, "Graph passes"): the subgraphs exporters write for
 * attention, LayerNormalization, RMSNormalization and Gelu are rewritten to the one ONNX op they compute
 * (Attention of opset 23, LayerNormalization of opset 17, RMSNormalization of opset 23, Gelu of opset 20), so
 * that a backend with a kernel for it runs one node.
 *
 * A pattern is taken only when it computes exactly what the op computes (constants checked, axes and shapes
 * checked, intermediate values used by the pattern alone), all its nodes run on one backend, and that backend's
 * supports() takes the fused node; otherwise nothing changes. The fused node stands where the pattern's last
 * node stood; the nodes it replaces are marked removed (a node whose output is also read outside the pattern,
 * e.g. by a Shape, is kept). Option graph.fuse_transformer=0 turns the pass off. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimize_internal.h"

#define MAXPAT 24

typedef struct pattern {
    int nodes[MAXPAT]; /* nodes that go (the last one is replaced by the fused node) */
    int n;
} pattern;

static void pat_add(pattern *p, int n) {
    if (p->n < MAXPAT) p->nodes[p->n++] = n;
}

/* Node n is a kept, placed, statically shaped node of op `op` on the same backend as node `ref`. */
static int live(const opt_state *o, int n, const char *op, int ref) {
    if (n < 0 || o->removed[n] || o->repl_of[n] >= 0 || o->snode_of[n] < 0 || !is_op(&o->g->nodes[n], op)) return 0;
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    if (sn->slot < 0 || sn->dynamic || o->g->nodes[n].n_outputs < 1 || o->g->nodes[n].outputs[0] < 0) return 0;
    return ref < 0 || opt_same_slot(o, n, ref);
}

/* The producer of v when it is op `op` on ref's backend and v is read by `user` alone; else -1. */
static int single(const opt_state *o, int v, const char *op, int user, int ref) {
    int n = opt_producer(o, v);
    if (!live(o, n, op, ref) || opt_only_user(o, v) != user || val(o, o->g->nodes[n].outputs[0]) != v) return -1;
    return n;
}

static const netrun_value_desc *dsc(const opt_state *o, int v) { return &o->s->values[v].desc; }

static int in(const opt_state *o, int n, int i) {
    const nr_node *nd = &o->g->nodes[n];
    return i < nd->n_inputs ? val(o, nd->inputs[i]) : -1;
}
static int out0(const opt_state *o, int n) { return o->g->nodes[n].outputs[0]; }

/* A float32 constant scalar of the model (initializer or Constant). Not a value folded at prepare: the copy is
 * prepared again when input shapes change, and a value computed from shapes could then differ. */
static int const_scalar(const opt_state *o, int v, float *f) {
    if (v < 0 || !o->g->values[v].constant) return 0;
    const netrun_value_desc *d = dsc(o, v);
    if (d->dtype != NETRUN_DTYPE_FLOAT || !d->const_data || d->const_nbytes != sizeof(float)) return 0;
    *f = *(const float *)d->const_data;
    return 1;
}

static int near(float a, double b) { return fabs((double)a - b) <= 1e-6 * fabs(b); }

static int same_dims(const netrun_value_desc *a, const netrun_value_desc *b) {
    if (a->rank != b->rank || a->rank < 0) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i] || a->dims[i] <= 0) return 0;
    return 1;
}

static int perm_is(const nr_node *nd, int a, int b, int c, int d) {
    const nr_attr *p = opt_find_attr(nd, "perm");
    return p && p->type == NR_ATTR_INTS && p->n == 4 && p->ints[0] == a && p->ints[1] == b && p->ints[2] == c &&
           p->ints[3] == d;
}

/* Binary node n with one input a constant scalar: the other input, and the constant in *c (-1 when not so).
 * `side` 0: the constant may be on either side; 1: second input only (Div, Sub). */
static int with_const(const opt_state *o, int n, int side, float *c) {
    int a = in(o, n, 0), b = in(o, n, 1);
    if (const_scalar(o, b, c)) return a;
    if (!side && const_scalar(o, a, c)) return b;
    return -1;
}

/* Ask node ref's backend whether it runs op (of domain `domain`) with these params, inputs and output. */
/* Whether ref's backend takes the node described (input `over_i` described by *over instead of its value's desc:
 * a value the copy makes, or -1). */
static int backend_takes_descs(const opt_state *o, const netrun_backend_config *cfg, int ref, const char *domain,
                               const char *op, int opset, const void *params, size_t params_size, const int *ins,
                               int n_in, int out, int over_i, const netrun_value_desc *over) {
    enum { MAXIN = 6 };
    netrun_value_desc id[MAXIN];
    if (n_in > MAXIN) return 0;
    for (int i = 0; i < n_in; i++) id[i] = i == over_i ? *over : *dsc(o, ins[i]);
    netrun_value_desc od = *dsc(o, out);
    const nr_snode *sn = &o->s->snodes[o->snode_of[ref]];
    netrun_node_desc d = {.struct_size = sizeof d, .name = o->g->nodes[ref].name, .op_type = op, .domain = domain,
                          .opset = opset, .params = params, .params_size = params_size, .n_inputs = n_in,
                          .inputs = id, .n_outputs = 1, .outputs = &od};
    char why[256] = "";
    return o->s->slots[sn->slot].api->supports(cfg, &d, why, sizeof why);
}

static int backend_takes_in(const opt_state *o, const netrun_backend_config *cfg, int ref, const char *domain,
                            const char *op, int opset, const void *params, size_t params_size, const int *ins,
                            int n_in, int out) {
    return backend_takes_descs(o, cfg, ref, domain, op, opset, params, params_size, ins, n_in, out, -1, NULL);
}

static int backend_takes(const opt_state *o, const netrun_backend_config *cfg, int ref, const char *op, int opset,
                         const void *params, size_t params_size, const int *ins, int n_in, int out) {
    return backend_takes_in(o, cfg, ref, "", op, opset, params, params_size, ins, n_in, out);
}

static int add_repl(opt_state *o, const pattern *p, const opt_repl *r) {
    opt_repl *rs = nr_realloc(o->repls, (size_t)(o->n_repls + 1) * sizeof *rs);
    if (!rs) return 0;
    o->repls = rs;
    rs[o->n_repls] = *r;
    int last = p->nodes[p->n - 1];
    for (int i = 0; i < p->n; i++) o->removed[p->nodes[i]] = 1;
    o->removed[last] = 0; /* stays, as the fused node */
    o->repl_of[last] = o->n_repls++;
    for (int i = 0; i < r->n_in; i++) /* the fused node reads its inputs (once each, as far as users go) */
        if (r->in[i] >= 0) o->user[r->in[i]] = last;
    return 1;
}

/* ---- LayerNormalization: ReduceMean, Sub, Pow(2) (or Mul(d, d)), ReduceMean, Add(eps), Sqrt, Div, Mul(gamma),
 * Add(beta), over the last axis ---- */

static int mean_last(const opt_state *o, int n) {
    const netrun_reduce_params *rp = o->s->snodes[o->snode_of[n]].params;
    int rank = dsc(o, in(o, n, 0))->rank;
    return rp && !rp->noop && rp->n_axes == 1 && rp->axes[0] == rank - 1 && rp->keepdims;
}

/* A float constant of exactly d values (gamma / beta). */
static int vec_const(const opt_state *o, int v, int64_t d) {
    if (v < 0 || !o->g->values[v].constant) return 0;
    const netrun_value_desc *vd = dsc(o, v);
    return vd->dtype == NETRUN_DTYPE_FLOAT && vd->const_data && vd->rank == 1 && vd->dims[0] == d &&
           vd->const_nbytes == (size_t)d * sizeof(float);
}

static int plan_layernorm(opt_state *o, const netrun_backend_config *cfg, int n) {
    if (!live(o, n, "Add", -1) || o->g->nodes[n].n_inputs != 2) return 0;
    pattern p = {.n = 0};
    for (int side = 0; side < 2; side++) {
        p.n = 0;
        int beta = in(o, n, 1 - side), mg = single(o, in(o, n, side), "Mul", n, n);
        if (mg < 0) continue;
        int y1 = -1, gamma = -1;
        for (int s2 = 0; s2 < 2 && y1 < 0; s2++) {
            int dv = single(o, in(o, mg, s2), "Div", mg, n);
            if (dv >= 0) y1 = dv, gamma = in(o, mg, 1 - s2);
        }
        if (y1 < 0) continue;
        int sd = single(o, in(o, y1, 1), "Sqrt", y1, n);
        int ae = sd >= 0 ? single(o, in(o, sd, 0), "Add", sd, n) : -1;
        float eps = 0;
        int var_v = ae >= 0 ? with_const(o, ae, 0, &eps) : -1;
        int rm2 = single(o, var_v, "ReduceMean", ae, n);
        if (rm2 < 0 || !mean_last(o, rm2)) continue;
        int d = in(o, y1, 0), sq = opt_producer(o, in(o, rm2, 0));
        float two = 0;
        int uses_d; /* reads of d inside the pattern: Div + Pow, or Div + Mul(d, d) */
        if (single(o, in(o, rm2, 0), "Pow", rm2, n) >= 0 && in(o, sq, 0) == d && const_scalar(o, in(o, sq, 1), &two) &&
            two == 2.0f)
            uses_d = 2;
        else if (single(o, in(o, rm2, 0), "Mul", rm2, n) >= 0 && in(o, sq, 0) == d && in(o, sq, 1) == d)
            uses_d = 3;
        else
            continue;
        int sub = opt_producer(o, d);
        if (!live(o, sub, "Sub", n) || o->users[d] != uses_d || o->pinned[d]) continue;
        int x = in(o, sub, 0);
        int rm1 = single(o, in(o, sub, 1), "ReduceMean", sub, n);
        if (rm1 < 0 || in(o, rm1, 0) != x || !mean_last(o, rm1)) continue;
        const netrun_value_desc *xd = dsc(o, x);
        if (xd->dtype != NETRUN_DTYPE_FLOAT || !same_dims(xd, dsc(o, out0(o, n))) || xd->rank < 1) continue;
        int64_t dlast = xd->dims[xd->rank - 1];
        if (!vec_const(o, gamma, dlast) || !vec_const(o, beta, dlast)) continue;
        netrun_norm_params np;
        memset(&np, 0, sizeof np);
        np.epsilon = eps;
        np.axis = xd->rank - 1;
        int ins[3] = {x, gamma, beta};
        if (!backend_takes(o, cfg, n, "LayerNormalization", 17, &np, sizeof np, ins, 3, out0(o, n))) return 0;
        int order[] = {rm1, sub, sq, rm2, ae, sd, y1, mg, n};
        for (int i = 0; i < 9; i++) pat_add(&p, order[i]);
        opt_repl r = {.kind = OPT_REPL_LAYERNORM, .extra_out = -1, .n_in = 3, .in = {x, gamma, beta}, .out = out0(o, n),
                      .first = rm1, .epsilon = eps, .axis = -1};
        return add_repl(o, &p, &r) ? 1 : -1;
    }
    return 0;
}

/* ---- RMSNormalization: Mul(weight, Mul(x, r)) with r = 1 / Sqrt(ReduceMean(Pow(x, 2)) + eps) written as
 * Div(1, Sqrt(..)), Reciprocal(Sqrt(..)) or Pow(.., -0.5), over the last axis (T5LayerNorm, LLaMA / Mistral
 * RMSNorm; their Casts to float are gone in float32 models). Without the weight Mul it is left alone. ---- */

/* Value r = 1 / sqrt(v + eps) read by `user` alone: v, eps in *eps, r's nodes (producer first) in p; else -1. */
static int rsqrt_of(const opt_state *o, int r, int user, int ref, float *eps, pattern *p) {
    int dv = single(o, r, "Div", user, ref), rc = single(o, r, "Reciprocal", user, ref);
    int pw = single(o, r, "Pow", user, ref), sd = -1, ae = -1;
    float c = 0;
    if (dv >= 0 && const_scalar(o, in(o, dv, 0), &c) && c == 1.0f) sd = single(o, in(o, dv, 1), "Sqrt", dv, ref);
    else if (rc >= 0) sd = single(o, in(o, rc, 0), "Sqrt", rc, ref);
    else if (pw >= 0 && const_scalar(o, in(o, pw, 1), &c) && c == -0.5f) ae = single(o, in(o, pw, 0), "Add", pw, ref);
    if (sd >= 0) ae = single(o, in(o, sd, 0), "Add", sd, ref);
    int v = ae >= 0 && o->g->nodes[ae].n_inputs == 2 ? with_const(o, ae, 0, eps) : -1;
    if (v < 0) return -1;
    pat_add(p, ae);
    if (sd >= 0) pat_add(p, sd);
    pat_add(p, dv >= 0 ? dv : rc >= 0 ? rc : pw);
    return v;
}

/* v, or the constant of the model v is an Identity (chain) of: torch's exporter writes one initializer for equal
 * weights (T5's all-ones norm weights) and Identity nodes for the others, folded at prepare. */
static int through_identity(const opt_state *o, int v) { return nr_graph_identity_source(o->g, v, 4, NULL); }

static int plan_rmsnorm(opt_state *o, const netrun_backend_config *cfg, int n) {
    if (!live(o, n, "Mul", -1) || o->g->nodes[n].n_inputs != 2) return 0;
    for (int side = 0; side < 2; side++) { /* in(n, side): the weight */
        int w = through_identity(o, in(o, n, side)), mi = single(o, in(o, n, 1 - side), "Mul", n, n);
        if (mi < 0 || o->g->nodes[mi].n_inputs != 2) continue;
        for (int xs = 0; xs < 2; xs++) { /* in(mi, xs): x, the other r */
            pattern p = {.n = 0};
            int x = in(o, mi, xs);
            float eps = 0, two = 0;
            pattern rp = {.n = 0};
            int v = rsqrt_of(o, in(o, mi, 1 - xs), mi, n, &eps, &rp);
            int rm = v >= 0 ? single(o, v, "ReduceMean", rp.nodes[0], n) : -1;
            if (rm < 0 || !mean_last(o, rm)) continue;
            int sq = single(o, in(o, rm, 0), "Pow", rm, n), sm = single(o, in(o, rm, 0), "Mul", rm, n);
            if (sq >= 0 ? in(o, sq, 0) != x || !const_scalar(o, in(o, sq, 1), &two) || two != 2.0f
                        : sm < 0 || in(o, sm, 0) != x || in(o, sm, 1) != x)
                continue;
            if (x < 0 || x == w) continue;
            const netrun_value_desc *xd = dsc(o, x);
            if (xd->dtype != NETRUN_DTYPE_FLOAT || xd->rank < 1 || !same_dims(xd, dsc(o, out0(o, n)))) continue;
            int64_t dlast = xd->dims[xd->rank - 1];
            if (!vec_const(o, w, dlast)) continue;
            netrun_norm_params np;
            memset(&np, 0, sizeof np);
            np.epsilon = eps;
            np.axis = xd->rank - 1;
            int ins[2] = {x, w};
            if (!backend_takes(o, cfg, n, "RMSNormalization", 23, &np, sizeof np, ins, 2, out0(o, n))) return 0;
            pat_add(&p, sq >= 0 ? sq : sm);
            pat_add(&p, rm);
            for (int i = 0; i < rp.n; i++) pat_add(&p, rp.nodes[i]);
            pat_add(&p, mi);
            pat_add(&p, n);
            opt_repl r = {.kind = OPT_REPL_RMSNORM, .extra_out = -1, .n_in = 2, .in = {x, w, -1, -1},
                          .out = out0(o, n), .first = p.nodes[0], .epsilon = eps, .axis = -1};
            return add_repl(o, &p, &r) ? 1 : -1;
        }
    }
    return 0;
}

/* ---- Gelu: 0.5 * x * (1 + Erf(x / sqrt(2))) and 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), the
 * three factors in any grouping ---- */

/* The Add(1, Erf(x / sqrt 2)) or Add(1, Tanh(...)) branch read by `user`: x, and *tanh; -1 when a is not one. */
static int gelu_branch(const opt_state *o, int a, int user, int ref, int *tanh_form, pattern *p) {
    int ad = single(o, a, "Add", user, ref);
    float one = 0;
    int e = ad >= 0 ? with_const(o, ad, 0, &one) : -1;
    if (e < 0 || one != 1.0f) return -1;
    int er = single(o, e, "Erf", ad, ref), th = single(o, e, "Tanh", ad, ref);
    float c = 0;
    if (er >= 0) { /* Erf(x / sqrt 2) or Erf(x * (1 / sqrt 2)) */
        int dv = single(o, in(o, er, 0), "Div", er, ref), mu = single(o, in(o, er, 0), "Mul", er, ref);
        int x = -1, t = -1;
        if (dv >= 0 && (x = with_const(o, dv, 1, &c)) >= 0 && near(c, sqrt(2.0))) t = dv;
        else if (mu >= 0 && (x = with_const(o, mu, 0, &c)) >= 0 && near(c, sqrt(0.5))) t = mu;
        if (t < 0) return -1;
        pat_add(p, t);
        pat_add(p, er);
        pat_add(p, ad);
        *tanh_form = 0;
        return x;
    }
    if (th < 0) return -1;
    /* Tanh(sqrt(2/pi) * (x + 0.044715 * Pow(x, 3))) */
    int m1 = single(o, in(o, th, 0), "Mul", th, ref);
    int w = m1 >= 0 ? with_const(o, m1, 0, &c) : -1;
    if (w < 0 || !near(c, sqrt(2.0 / M_PI))) return -1;
    int a2 = single(o, w, "Add", m1, ref);
    if (a2 < 0) return -1;
    for (int side = 0; side < 2; side++) {
        int x = in(o, a2, side);
        int m2 = single(o, in(o, a2, 1 - side), "Mul", a2, ref);
        float k = 0, three = 0;
        int pv = m2 >= 0 ? with_const(o, m2, 0, &k) : -1;
        int pw = pv >= 0 ? single(o, pv, "Pow", m2, ref) : -1;
        if (pw < 0 || !near(k, 0.044715) || in(o, pw, 0) != x || !const_scalar(o, in(o, pw, 1), &three) ||
            three != 3.0f)
            continue;
        int order[] = {pw, m2, a2, m1, th, ad};
        for (int i = 0; i < 6; i++) pat_add(p, order[i]);
        *tanh_form = 1;
        return x;
    }
    return -1;
}

/* Factors {0.5, x, branch} of Mul n: three values, with one inner Mul (read by n alone) grouping two of them. */
static int plan_gelu(opt_state *o, const netrun_backend_config *cfg, int n) {
    if (!live(o, n, "Mul", -1) || o->g->nodes[n].n_inputs != 2) return 0;
    for (int grp = 0; grp < 2; grp++) {
        int inner = single(o, in(o, n, grp), "Mul", n, n);
        if (inner < 0 || o->g->nodes[inner].n_inputs != 2) continue;
        int f[3] = {in(o, inner, 0), in(o, inner, 1), in(o, n, 1 - grp)};
        int fuser[3] = {inner, inner, n};
        for (int h = 0; h < 3; h++) { /* f[h]: the constant 0.5 */
            float half = 0;
            if (!const_scalar(o, f[h], &half) || half != 0.5f) continue;
            for (int b = 0; b < 3; b++) { /* f[b]: the branch; the remaining one is x */
                if (b == h) continue;
                int xi = 3 - h - b;
                pattern p = {.n = 0};
                int tanh_form = 0;
                int x = gelu_branch(o, f[b], fuser[b], n, &tanh_form, &p);
                if (x < 0 || x != f[xi]) continue;
                const netrun_value_desc *xd = dsc(o, x);
                if (xd->dtype != NETRUN_DTYPE_FLOAT || !same_dims(xd, dsc(o, out0(o, n)))) continue;
                netrun_unary_params up;
                memset(&up, 0, sizeof up);
                up.approximate_tanh = tanh_form;
                int ins[1] = {x};
                if (!backend_takes(o, cfg, n, "Gelu", 20, &up, sizeof up, ins, 1, out0(o, n))) return 0;
                pat_add(&p, inner);
                pat_add(&p, n);
                opt_repl r = {.kind = OPT_REPL_GELU, .extra_out = -1, .n_in = 1, .in = {x, -1, -1, -1}, .out = out0(o, n),
                              .first = p.nodes[0], .approx_tanh = tanh_form};
                return add_repl(o, &p, &r) ? 1 : -1;
            }
        }
    }
    return 0;
}

/* ---- Attention: MatMul(Q, K^T) [* scale] [Where(causal)] [+ mask] -> Softmax(last) -> MatMul(., V), Q/K/V
 * [B, H, L, E]; with Reshape/Transpose from and to [B, L, H * E] around it, the 3-D form of the op ---- */

/* v = Transpose(Reshape(x3d [B, L, H*E] -> [B, L, H, E]), perm): x3d, else -1. Adds the nodes read only on the
 * way to the pattern to p (they go with it). */
static int from_3d(const opt_state *o, int v, int user, int ref, int a, int b, int c, int d, pattern *p) {
    int tr = opt_producer(o, v);
    if (!live(o, tr, "Transpose", -1) || !perm_is(&o->g->nodes[tr], a, b, c, d)) return -1;
    int rs = opt_producer(o, in(o, tr, 0));
    if (!live(o, rs, "Reshape", -1)) return -1;
    int x = in(o, rs, 0);
    const netrun_value_desc *xd = dsc(o, x), *rd = dsc(o, in(o, tr, 0));
    if (xd->rank != 3 || rd->rank != 4 || xd->dtype != NETRUN_DTYPE_FLOAT || xd->dims[0] != rd->dims[0] ||
        xd->dims[1] != rd->dims[1] || rd->dims[2] <= 0 || rd->dims[3] <= 0 || xd->dims[2] != rd->dims[2] * rd->dims[3])
        return -1;
    if (opt_only_user(o, v) == user && opt_same_slot(o, tr, ref)) {
        pat_add(p, tr);
        if (opt_only_user(o, in(o, tr, 0)) == tr && opt_same_slot(o, rs, ref)) pat_add(p, rs);
    }
    return x;
}

/* A square bool constant of the original graph that is lower-triangular over its last two dims (leading dims 1). */
static int tril_const(const opt_state *o, int v) {
    const nr_tensor *t = v >= 0 ? o->g->values[v].constant : NULL;
    if (!t || t->dtype != NETRUN_DTYPE_BOOL || !t->data || t->rank < 2) return 0;
    int64_t L = t->dims[t->rank - 1];
    if (t->dims[t->rank - 2] != L) return 0;
    for (int i = 0; i < t->rank - 2; i++)
        if (t->dims[i] != 1) return 0;
    const uint8_t *c = t->data;
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < L; j++)
            if ((c[i * L + j] != 0) != (j <= i)) return 0;
    return 1;
}

/* The copy is prepared again when input shapes change, so the causal condition found lower-triangular at this
 * shape must stay so at any length: a constant of the model (its shape cannot change), or Slices of a
 * lower-triangular constant taken for Q and K of the same length (3-D Q and K made by one node: the sequence is
 * the same, the slice [k - q : k, :k] is then the top-left block). */
static int causal_for_any_length(const opt_state *o, int cond, int q3, int k3) {
    if (o->g->values[cond].constant) return 1;
    if (q3 < 0 || k3 < 0 || (q3 != k3 && (opt_producer(o, q3) < 0 || opt_producer(o, q3) != opt_producer(o, k3))))
        return 0;
    int v = cond;
    for (int depth = 0; depth < 4; depth++) {
        int pn = -1; /* from the graph: nodes folded at prepare are no producers in the session */
        for (int k = 0; k < o->g->n_nodes && pn < 0; k++)
            if (o->g->nodes[k].n_outputs > 0 && val(o, o->g->nodes[k].outputs[0]) == v) pn = k;
        if (pn < 0 || !is_op(&o->g->nodes[pn], "Slice")) return 0;
        v = in(o, pn, 0);
        if (o->g->values[v].constant) return tril_const(o, v);
    }
    return 0;
}

static int plan_attention(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_graph *g = o->g;
    if (!live(o, n, "MatMul", -1)) return 0; /* n: MatMul(P, V) */
    int sm = single(o, in(o, n, 0), "Softmax", n, n);
    if (sm < 0) return 0;
    const netrun_softmax_params *sp = o->s->snodes[o->snode_of[sm]].params;
    int srank = dsc(o, out0(o, sm))->rank;
    if (!sp || srank != 4 || sp->axis != 3) return 0;
    pattern core = {.n = 0};
    pat_add(&core, sm);
    int cur = in(o, sm, 0), cur_user = sm;
    int mask = -1, mask2 = -1, causal = 0, cond = -1;
    /* [+ mask [+ mask]]: additive float masks broadcast (right-aligned) to the scores' shape; two of them (T5's
     * relative position bias, then its padding mask) are added to each other into the fused node's mask */
    for (int level = 0; level < 2; level++) {
        int ad = single(o, cur, "Add", cur_user, n), mv = -1;
        if (ad < 0) break;
        for (int side = 0; side < 2 && mv < 0; side++) {
            int sv = in(o, ad, side), m = in(o, ad, 1 - side);
            int sp2 = opt_producer(o, sv);
            /* the scores: a scale, a causal Where, the product itself or (outer Add) the inner mask's Add */
            if (sp2 < 0 || !(is_op(&g->nodes[sp2], "Where") || is_op(&g->nodes[sp2], "Div") ||
                             is_op(&g->nodes[sp2], "Mul") || is_op(&g->nodes[sp2], "MatMul") ||
                             (level == 0 && single(o, sv, "Add", ad, n) >= 0)))
                continue;
            const netrun_value_desc *md = dsc(o, m), *sd = dsc(o, sv);
            if (md->dtype != NETRUN_DTYPE_FLOAT || md->rank < 1 || md->rank > 4 || !same_dims(sd, dsc(o, out0(o, ad))) ||
                sd->rank != 4)
                continue;
            int ok = 1;
            for (int i = 0; i < md->rank; i++) {
                int64_t want = sd->dims[4 - md->rank + i];
                ok = ok && (md->dims[i] == 1 || md->dims[i] == want);
            }
            if (!ok) continue;
            mv = m;
            pat_add(&core, ad);
            cur = sv, cur_user = ad;
        }
        if (mv < 0) return 0;
        if (level == 0) mask = mv;
        else mask2 = mask, mask = mv; /* the inner Add's mask first, as the model adds them */
    }
    /* [Where(causal, s, very negative)]: a constant lower-triangular bool condition over [L, L] */
    int wh = single(o, cur, "Where", cur_user, n);
    if (wh >= 0) {
        float neg = 0;
        int cv = in(o, wh, 0), sv = in(o, wh, 1);
        const netrun_value_desc *cd = dsc(o, cv), *sd = dsc(o, sv);
        if (!const_scalar(o, in(o, wh, 2), &neg) || !(neg <= -1e30f) || cd->dtype != NETRUN_DTYPE_BOOL ||
            !cd->const_data || cd->rank < 2 || cd->rank > 4 || !same_dims(sd, dsc(o, out0(o, wh))) ||
            sd->rank != 4 || sd->dims[2] != sd->dims[3])
            return 0;
        int64_t L = sd->dims[2];
        for (int i = 0; i < cd->rank - 2; i++)
            if (cd->dims[i] != 1) return 0;
        if (cd->dims[cd->rank - 2] != L || cd->dims[cd->rank - 1] != L || cd->const_nbytes != (size_t)(L * L))
            return 0;
        const uint8_t *c = cd->const_data;
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < L; j++)
                if ((c[i * L + j] != 0) != (j <= i)) return 0;
        causal = 1;
        cond = cv;
        pat_add(&core, wh);
        cur = sv, cur_user = wh;
    }
    /* [* scale | / scale] */
    float scale = 1.0f, c = 0;
    int dv = single(o, cur, "Div", cur_user, n), mu = single(o, cur, "Mul", cur_user, n);
    int pre = -1;
    if (dv >= 0 && (pre = with_const(o, dv, 1, &c)) >= 0 && c != 0) scale = 1.0f / c, pat_add(&core, dv);
    else if (mu >= 0 && (pre = with_const(o, mu, 0, &c)) >= 0) scale = c, pat_add(&core, mu);
    else pre = -1;
    if (pre >= 0) cur = pre, cur_user = core.nodes[core.n - 1];
    int qk = single(o, cur, "MatMul", cur_user, n);
    if (qk < 0) return 0;
    pat_add(&core, qk);
    /* Q and K^T, each possibly pre-scaled by a constant (torch's scaled_dot_product_attention export) */
    int qv = in(o, qk, 0), ktv = in(o, qk, 1), q_user = qk, kt_user = qk;
    for (int side = 0; side < 2; side++) {
        int *v = side ? &ktv : &qv, *u = side ? &kt_user : &q_user;
        int m = single(o, *v, "Mul", qk, n);
        int x = m >= 0 ? with_const(o, m, 0, &c) : -1;
        if (x < 0 || !same_dims(dsc(o, x), dsc(o, *v))) continue;
        scale *= c;
        pat_add(&core, m);
        *v = x, *u = m;
    }
    int vv = in(o, n, 1);
    const netrun_value_desc *qd = dsc(o, qv), *ktd = dsc(o, ktv), *vd = dsc(o, vv), *yd = dsc(o, out0(o, n));
    if (qd->rank != 4 || ktd->rank != 4 || vd->rank != 4 || qd->dtype != NETRUN_DTYPE_FLOAT ||
        ktd->dtype != NETRUN_DTYPE_FLOAT || vd->dtype != NETRUN_DTYPE_FLOAT)
        return 0;
    int64_t B = qd->dims[0], H = qd->dims[1], Lq = qd->dims[2], E = qd->dims[3], Lk = ktd->dims[3], Ev = vd->dims[3];
    if (B <= 0 || H <= 0 || Lq <= 0 || E <= 0 || Lk <= 0 || Ev <= 0 || ktd->dims[0] != B || ktd->dims[1] != H ||
        ktd->dims[2] != E || vd->dims[0] != B || vd->dims[1] != H || vd->dims[2] != Lk || yd->rank != 4 ||
        yd->dims[0] != B || yd->dims[1] != H || yd->dims[2] != Lq || yd->dims[3] != Ev)
        return 0;
    if (causal && Lq != Lk) return 0;
    /* the 3-D form: Q, K, V from [B, L, H*E] and the output back to it (Transpose + Reshape, read by nothing else) */
    pattern p3 = core;
    int q3 = from_3d(o, qv, q_user, n, 0, 2, 1, 3, &p3);
    int k3 = from_3d(o, ktv, kt_user, n, 0, 2, 3, 1, &p3);
    if (k3 < 0) { /* Transpose(Transpose(Reshape(k), 0 2 1 3), 0 1 3 2) */
        int t = opt_producer(o, ktv);
        if (live(o, t, "Transpose", -1) && perm_is(&g->nodes[t], 0, 1, 3, 2)) {
            pattern tmp = p3;
            int take = opt_only_user(o, ktv) == kt_user && opt_same_slot(o, t, n);
            k3 = from_3d(o, in(o, t, 0), take ? t : -2, n, 0, 2, 1, 3, &tmp);
            if (k3 >= 0) {
                p3 = tmp;
                if (take) pat_add(&p3, t);
            }
        }
    }
    int v3 = from_3d(o, vv, n, n, 0, 2, 1, 3, &p3);
    /* the output: Transpose(0 2 1 3) read by this MatMul alone, then a Reshape to [B, L, H*Ev]; the transposed
     * value may have other readers (a Shape, as exporters write the Reshape's target): a Reshape of the fused
     * output gives it back for them (a view, no copy) */
    int ot = opt_only_user(o, out0(o, n)), orr = -1;
    if (ot >= 0 && live(o, ot, "Transpose", n) && perm_is(&g->nodes[ot], 0, 2, 1, 3) &&
        !o->pinned[out0(o, n)]) {
        int ctv = out0(o, ot);
        for (int k = o->snode_of[ot] + 1; k < o->s->n_snodes && orr < 0; k++) {
            int r = o->s->snodes[k].node;
            if (!live(o, r, "Reshape", n) || in(o, r, 0) != ctv) continue;
            const netrun_value_desc *od = dsc(o, out0(o, r));
            if (od->rank == 3 && od->dims[0] == B && od->dims[1] == Lq && od->dims[2] == H * Ev) orr = r;
        }
    }
    int three_d = q3 >= 0 && k3 >= 0 && v3 >= 0 && orr >= 0;
    int keep_ct = three_d && (o->users[out0(o, ot)] > 1 || o->pinned[out0(o, ot)]);
    int kq = -1; /* the 4-D form needs K itself: K^T = Transpose(K, 0 1 3 2) */
    if (!three_d) {
        int t = opt_producer(o, ktv);
        if (!live(o, t, "Transpose", -1) || !perm_is(&g->nodes[t], 0, 1, 3, 2)) return 0;
        kq = in(o, t, 0);
        if (opt_only_user(o, ktv) == kt_user && opt_same_slot(o, t, n)) pat_add(&core, t);
    }
    pattern *p = three_d ? &p3 : &core;
    if (three_d) pat_add(p, n), pat_add(p, ot), pat_add(p, orr);
    else pat_add(p, n);
    int ins[4] = {three_d ? q3 : qv, three_d ? k3 : kq, three_d ? v3 : vv, mask};
    int out = three_d ? out0(o, orr) : out0(o, n), last = n;
    netrun_value_desc both; /* two masks: the dims of their sum, what the fused node reads */
    int64_t mdims[4] = {1, 1, 1, 1};
    if (mask2 >= 0) {
        const netrun_value_desc *m1 = dsc(o, mask), *m2 = dsc(o, mask2);
        for (int i = 0; i < 4; i++) {
            int64_t a = i >= 4 - m1->rank ? m1->dims[i - 4 + m1->rank] : 1;
            int64_t b = i >= 4 - m2->rank ? m2->dims[i - 4 + m2->rank] : 1;
            mdims[i] = a > b ? a : b;
        }
        both = *m1;
        both.rank = 4;
        memcpy(both.dims, mdims, sizeof mdims);
    }
    if (causal && !causal_for_any_length(o, cond, three_d ? q3 : -1, three_d ? k3 : -1)) return 0;
    netrun_attention_params ap;
    memset(&ap, 0, sizeof ap);
    ap.q_num_heads = ap.kv_num_heads = (int)H;
    ap.input_3d = three_d;
    ap.is_causal = causal;
    ap.scale = scale;
    ap.mask_kind = mask >= 0 ? 2 : 0;
    ap.batch = B, ap.q_len = Lq, ap.kv_len = Lk, ap.total_len = Lk, ap.head_size = E, ap.v_head_size = Ev;
    if (!backend_takes_descs(o, cfg, last, "", "Attention", 23, &ap, sizeof ap, ins, mask >= 0 ? 4 : 3, out,
                             mask2 >= 0 ? 3 : -1, &both))
        return 0;
    /* the replaced node must be the last in execution order: put it at the end of the list */
    for (int i = 0; i < p->n; i++)
        if (p->nodes[i] == last) {
            p->nodes[i] = p->nodes[p->n - 1];
            p->nodes[p->n - 1] = last;
        }
    opt_repl r = {.kind = OPT_REPL_ATTENTION, .n_in = mask >= 0 ? 4 : 3, .in = {ins[0], ins[1], ins[2], ins[3]},
                  .out = out, .first = qk, .scale = scale, .is_causal = causal, .heads = three_d ? (int)H : 0,
                  .extra_out = keep_ct ? out0(o, ot) : -1, .extra_dims = {0, 0, H, Ev}, .two_masks = mask2 >= 0,
                  .mask2 = mask2};
    memcpy(r.mask_dims, mdims, sizeof mdims);
    if (!add_repl(o, p, &r)) return -1;
    if (mask2 >= 0) o->user[mask2] = last;
    return 1;
}

/* ---- MatMulBias: MatMul(A[..., M, K], B[K, N]) + bias[N] [-> Relu | tanh Gelu], as exporters write Linear, and
 * Gemm(A, B, bias[N]) [-> Relu | tanh Gelu] ----
 * One node computes the product, the bias and the activation (a GPU backend in its GEMM's epilogue, the CPU
 * while the product's block is in cache) instead of writing and reading the product once more per following
 * node. An erf Gelu stays a node of its own (the GEMM epilogues backends offer compute the tanh form). Without
 * an activation, the residual Add of a transformer block after it (R of Y's shape) becomes its 4th input. */

/* Uses of value v by kept nodes (a fused node reads its pattern's inputs); *user: the last such node. */
static int kept_uses(const opt_state *o, int v, int *user) {
    int c = 0;
    for (int k = 0; k < o->g->n_nodes; k++) {
        if (o->removed[k]) continue;
        const nr_node *nd = &o->g->nodes[k];
        const opt_repl *r = o->repl_of[k] >= 0 ? &o->repls[o->repl_of[k]] : NULL;
        int ni = r ? r->n_in : nd->n_inputs;
        for (int i = 0; i < ni; i++)
            if ((r ? r->in[i] : val(o, nd->inputs[i])) == v) c++, *user = k;
        if (r && r->two_masks && r->mask2 == v) c++, *user = k;
    }
    return c;
}

/* The activation node u applies to value y alone, one MatMulBias can take (NETRUN_ACT_NONE when not one). */
static int bias_act_of(const opt_state *o, int u, int y, int ref) {
    if (u < 0 || o->removed[u] || o->snode_of[u] < 0 || !opt_same_slot(o, u, ref)) return NETRUN_ACT_NONE;
    if (o->repl_of[u] >= 0) { /* a Gelu subgraph the pass above made one node */
        const opt_repl *r = &o->repls[o->repl_of[u]];
        return r->kind == OPT_REPL_GELU && r->approx_tanh && r->in[0] == y ? NETRUN_ACT_GELU_TANH : NETRUN_ACT_NONE;
    }
    if (live(o, u, "Relu", ref) && in(o, u, 0) == y) return NETRUN_ACT_RELU;
    if (live(o, u, "Gelu", ref) && in(o, u, 0) == y) { /* the model's own Gelu (opset 20) */
        const netrun_unary_params *up = o->s->snodes[o->snode_of[u]].params;
        if (up && up->approximate_tanh) return NETRUN_ACT_GELU_TANH;
    }
    return NETRUN_ACT_NONE;
}

/* The residual Add that alone reads y (transformer blocks' Add(Linear(x), x), either operand order) on ref's
 * backend: its other input R, of y's exact static shape and dtype (no broadcast), the Add in *add; else -1. */
static int residual_of(const opt_state *o, int y, int ref, int *add) {
    int u = -1;
    if (o->pinned[y] || kept_uses(o, y, &u) != 1 || !live(o, u, "Add", ref) || o->g->nodes[u].n_inputs != 2) return -1;
    int i0 = in(o, u, 0), i1 = in(o, u, 1), r = i0 == y ? i1 : i1 == y ? i0 : -1, z = out0(o, u);
    if (r < 0 || r == y || val(o, z) != z) return -1;
    const netrun_value_desc *rd = dsc(o, r), *yd = dsc(o, y);
    if (rd->dtype != yd->dtype || !same_dims(rd, yd) || !same_dims(dsc(o, z), yd)) return -1;
    *add = u;
    return r;
}

/* MatMulBias's params: Y = A B + bias (alpha and beta 1), the activation set by the caller. */
static netrun_gemm_params mmb_params(void) {
    netrun_gemm_params gp;
    memset(&gp, 0, sizeof gp);
    gp.alpha = gp.beta = 1.0f;
    gp.has_c = 1;
    return gp;
}

/* The MatMulBias for product node `first` (a MatMul, or a Gemm with its bias) whose node n writes y = A B + bias
 * (`pre`: a Reshape before `first` that goes too, or -1),
 * taking the activation that alone reads y where the backend takes it, else the residual Add that alone reads y
 * where the backend takes the 4-input node (*res_taken). 1 planned, 2 planned taking a Gelu the pass above had
 * made, 0 not (the backend refuses), -1 out of memory. */
static int take_linear(opt_state *o, const netrun_backend_config *cfg, int pre, int first, int n, int a, int b,
                       int bias, int *act_taken, int *res_taken) {
    int y = out0(o, n);
    int u = -1, act = o->pinned[y] || kept_uses(o, y, &u) != 1 ? NETRUN_ACT_NONE : bias_act_of(o, u, y, n);
    netrun_gemm_params gp = mmb_params();
    int ins[3] = {a, b, bias};
    for (;; act = NETRUN_ACT_NONE) { /* with the activation, else without */
        int made = act != NETRUN_ACT_NONE && o->repl_of[u] >= 0;
        int out = act == NETRUN_ACT_NONE ? y : made ? o->repls[o->repl_of[u]].out : out0(o, u);
        gp.activation.kind = (netrun_activation)act;
        if (backend_takes_in(o, cfg, n, "com.netrun", "MatMulBias", 1, &gp, sizeof gp, ins, 3, out)) break;
        if (act == NETRUN_ACT_NONE) return 0;
    }
    /* no activation: a residual Add after it goes in too (cuBLASLt's C with beta = 1, the CPU's bias loop) */
    int add = -1, res = act == NETRUN_ACT_NONE ? residual_of(o, y, n, &add) : -1;
    if (res >= 0) {
        int ins4[4] = {a, b, bias, res};
        if (!backend_takes_in(o, cfg, n, "com.netrun", "MatMulBias", 1, &gp, sizeof gp, ins4, 4, out0(o, add)))
            res = -1;
    }
    opt_repl r = {.kind = OPT_REPL_MATMUL_BIAS, .extra_out = -1, .n_in = res >= 0 ? 4 : 3, .in = {a, b, bias, res},
                  .first = first, .act = act};
    *act_taken = act != NETRUN_ACT_NONE;
    *res_taken = res >= 0;
    if (act != NETRUN_ACT_NONE && o->repl_of[u] >= 0) { /* the Gelu's node stands for the whole now */
        opt_repl *g = &o->repls[o->repl_of[u]];
        r.out = g->out;
        *g = r;
        o->removed[first] = o->removed[n] = 1;
        if (pre >= 0) o->removed[pre] = 1;
        for (int i = 0; i < 3; i++) o->user[ins[i]] = u;
        return 2;
    }
    pattern p = {.n = 0};
    if (pre >= 0) pat_add(&p, pre);
    pat_add(&p, first);
    if (n != first) pat_add(&p, n);
    if (act != NETRUN_ACT_NONE) pat_add(&p, u);
    if (res >= 0) pat_add(&p, add); /* after n in execution order, and after R's producer: the node stands there */
    r.out = out0(o, p.nodes[p.n - 1]);
    return add_repl(o, &p, &r) ? 1 : -1;
}

/* A, B and bias fit MatMulBias: float A[..., K] (rank >= min_rank), B[K, N], bias[N] of A's type. */
static int linear_operands(const opt_state *o, int a, int b, int bias, int min_rank) {
    if (a < 0 || b < 0 || bias < 0) return 0;
    const netrun_value_desc *ad = dsc(o, a), *bd = dsc(o, b), *cd = dsc(o, bias);
    return (ad->dtype == NETRUN_DTYPE_FLOAT || ad->dtype == NETRUN_DTYPE_FLOAT16) && bd->dtype == ad->dtype &&
           cd->dtype == ad->dtype && ad->rank >= min_rank && bd->rank == 2 && cd->rank == 1 && bd->dims[1] > 0 &&
           cd->dims[0] == bd->dims[1] && ad->dims[ad->rank - 1] == bd->dims[0];
}

/* Add node n after a MatMul. As take_linear. */
static int plan_matmul_bias(opt_state *o, const netrun_backend_config *cfg, int n, int *act_taken, int *res_taken) {
    if (!live(o, n, "Add", -1) || o->g->nodes[n].n_inputs != 2) return 0;
    int y = out0(o, n);
    if (val(o, y) != y) return 0;
    for (int side = 0; side < 2; side++) {
        int mm = single(o, in(o, n, side), "MatMul", n, n), bias = in(o, n, 1 - side);
        if (mm < 0 || bias < 0 || o->g->nodes[mm].n_inputs != 2) continue;
        int a = in(o, mm, 0), b = in(o, mm, 1);
        if (!linear_operands(o, a, b, bias, 2) || !same_dims(dsc(o, out0(o, mm)), dsc(o, y)))
            continue; /* the bias broadcasts along N only: Y keeps the product's shape */
        return take_linear(o, cfg, -1, mm, n, a, b, bias, act_taken, res_taken);
    }
    return 0;
}

/* A MatMul without a bias whose product is read only by the residual Add of a block (T5's and LLaMA's layers have
 * no biases): MatMulBias with R as its 4th input and a bias of zeros the copy makes, so that the Add runs in the
 * GEMM's epilogue as it does for BERT's. R must be an activation, not a constant (that is a bias of another
 * shape). As take_linear. */
static int plan_matmul_residual(opt_state *o, const netrun_backend_config *cfg, int n, int *res_taken) {
    if (!live(o, n, "MatMul", -1) || o->g->nodes[n].n_inputs != 2) return 0;
    int a = in(o, n, 0), b = in(o, n, 1), y = out0(o, n), add = -1;
    if (a < 0 || b < 0 || val(o, y) != y) return 0;
    const netrun_value_desc *ad = dsc(o, a), *bd = dsc(o, b);
    if ((ad->dtype != NETRUN_DTYPE_FLOAT && ad->dtype != NETRUN_DTYPE_FLOAT16) || bd->dtype != ad->dtype ||
        ad->rank < 2 || bd->rank != 2 || bd->dims[1] <= 0 || ad->dims[ad->rank - 1] != bd->dims[0])
        return 0;
    int res = residual_of(o, y, n, &add);
    if (res < 0 || o->g->values[res].constant || o->s->values[res].is_const) return 0;
    netrun_value_desc zd = *bd; /* the zeros: [N] of B's type, a constant */
    zd.rank = 1;
    zd.dims[0] = bd->dims[1];
    netrun_gemm_params gp = mmb_params();
    int ins4[4] = {a, b, -1, res};
    if (!backend_takes_descs(o, cfg, n, "com.netrun", "MatMulBias", 1, &gp, sizeof gp, ins4, 4, out0(o, add), 2, &zd))
        return 0;
    opt_repl r = {.kind = OPT_REPL_MATMUL_BIAS, .extra_out = -1, .n_in = 4, .in = {a, b, -1, res}, .first = n,
                  .act = NETRUN_ACT_NONE, .out = out0(o, add), .zero_bias = bd->dims[1], .zero_bias_dtype = bd->dtype};
    pattern p = {.n = 0};
    pat_add(&p, n);
    pat_add(&p, add);
    *res_taken = 1;
    return add_repl(o, &p, &r) ? 1 : -1;
}

/* The Reshape that alone reads Gemm n's output y = Gemm(Reshape(x)) and gives it x's leading dims back, where the
 * Reshape `flat` (read by n alone) made A = x flattened to [prod(x's leading dims), K]; else -1. */
static int unflatten_of(const opt_state *o, int n, int flat, int x) {
    int y = out0(o, n), u = -1;
    const netrun_value_desc *xd = dsc(o, x), *yd = dsc(o, y);
    if (xd->rank < 3 || xd->dtype != yd->dtype || o->pinned[y] || kept_uses(o, y, &u) != 1 || !live(o, u, "Reshape", n) ||
        in(o, u, 0) != y || val(o, out0(o, u)) != out0(o, u))
        return -1;
    const netrun_value_desc *ad = dsc(o, out0(o, flat)), *zd = dsc(o, out0(o, u));
    int64_t m = 1;
    for (int i = 0; i < xd->rank - 1; i++) m *= xd->dims[i];
    if (ad->rank != 2 || ad->dims[0] != m || ad->dims[1] != xd->dims[xd->rank - 1] || zd->rank != xd->rank) return -1;
    for (int i = 0; i < xd->rank - 1; i++)
        if (zd->dims[i] != xd->dims[i]) return -1;
    return zd->dims[zd->rank - 1] == yd->dims[1] ? u : -1;
}

/* A Gemm computing A B + c with a bias vector c (alpha and beta 1, neither transposed, no activation of its own:
 * GPT-2's Conv1D layers export so): the same node, so that the activation after it joins the GEMM's epilogue
 * and the bias is not first broadcast over the whole output. Where A is x [..., K] flattened by a Reshape and
 * the product goes back to x's leading dims by another (Conv1D's view(-1, K) ... view(*lead, N)), the node
 * takes x itself and writes the second Reshape's output: no reshapes, and the residual Add and float16 region
 * then see the [B, L, N] value they read. As take_linear. */
static int plan_gemm_bias(opt_state *o, const netrun_backend_config *cfg, int n, int *act_taken, int *res_taken) {
    if (!live(o, n, "Gemm", -1) || o->g->nodes[n].n_inputs != 3) return 0;
    const netrun_gemm_params *p = o->s->snodes[o->snode_of[n]].params;
    int y = out0(o, n), a = in(o, n, 0), b = in(o, n, 1), c = in(o, n, 2);
    if (!p || p->trans_a || p->trans_b || p->alpha != 1.0f || p->beta != 1.0f || !p->has_c ||
        p->activation.kind != NETRUN_ACT_NONE || val(o, y) != y || !linear_operands(o, a, b, c, 2) ||
        dsc(o, a)->rank != 2)
        return 0;
    int flat = single(o, a, "Reshape", n, n), x = flat >= 0 ? in(o, flat, 0) : -1;
    int back = x >= 0 && linear_operands(o, x, b, c, 3) ? unflatten_of(o, n, flat, x) : -1;
    if (back >= 0) {
        int r = take_linear(o, cfg, flat, n, back, x, b, c, act_taken, res_taken);
        if (r) return r;
    }
    return take_linear(o, cfg, -1, n, n, a, b, c, act_taken, res_taken);
}

netrun_status opt_plan_transformer(opt_state *o, const netrun_backend_config *cfg, int *n_attn, int *n_ln,
                                   int *n_gelu, int *n_matmul_bias) {
    *n_attn = *n_ln = *n_gelu = *n_matmul_bias = 0;
    int n_rms = 0; /* RMSNormalization: in the log line only (no stats field) */
    const char *on = nr_options_get(&o->s->opts, "graph.fuse_transformer");
    for (int k = 0; !(on && !strcmp(on, "0")) && k < o->s->n_snodes; k++) {
        int n = o->s->snodes[k].node, r;
        if (o->removed[n] || o->repl_of[n] >= 0) continue;
        if ((r = plan_attention(o, cfg, n)) > 0) (*n_attn)++;
        else if (!r && (r = plan_layernorm(o, cfg, n)) > 0) (*n_ln)++;
        else if (!r && (r = plan_rmsnorm(o, cfg, n)) > 0) n_rms++;
        else if (!r && (r = plan_gelu(o, cfg, n)) > 0) (*n_gelu)++;
        if (r < 0) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the transformer fusions");
    }
    if (*n_attn || *n_ln || *n_gelu || n_rms)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "transformer fusions: %d Attention, %d LayerNormalization, "
                           "%d RMSNormalization, %d Gelu (graph.fuse_transformer=0 keeps the exported nodes)", *n_attn,
                           *n_ln, n_rms, *n_gelu);
    /* then the bias Adds after MatMuls (an activation after them may be a Gelu made above) */
    const char *mb = nr_options_get(&o->s->opts, "graph.fuse_matmul_bias");
    int n_act = 0, n_res = 0;
    for (int k = 0; !(mb && !strcmp(mb, "0")) && k < o->s->n_snodes; k++) {
        int n = o->s->snodes[k].node, r, with_act = 0, with_res = 0;
        if (o->removed[n] || o->repl_of[n] >= 0) continue;
        if ((r = plan_matmul_bias(o, cfg, n, &with_act, &with_res)) == 0 &&
            (r = plan_gemm_bias(o, cfg, n, &with_act, &with_res)) == 0)
            r = plan_matmul_residual(o, cfg, n, &with_res);
        if (r < 0)
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the transformer fusions");
        if (r > 0) ++*n_matmul_bias, n_act += with_act, n_res += with_res;
        if (r == 2) --*n_gelu; /* that Gelu is the MatMulBias's activation now */
    }
    if (*n_matmul_bias)
        nr_host_api()->log(NETRUN_LOG_INFO, "optimize", "MatMul + bias: %d MatMulBias nodes, %d with their activation, "
                           "%d with the residual Add (graph.fuse_matmul_bias=0 keeps the Adds)", *n_matmul_bias, n_act,
                           n_res);
    return NETRUN_OK;
}

/* The copy's node for replacement r (standing for original node n). */
netrun_status opt_emit_repl(const opt_state *o, nr_graph *ng, int n, int *from) {
    const opt_repl *r = &o->repls[o->repl_of[n]];
    const nr_graph *g = o->g;
    static const char *const ops[] = {"Attention", "LayerNormalization", "Gelu", "MatMulBias", "RMSNormalization"};
    static const int opsets[] = {23, 17, 20, 1, 23};
    int mmb = r->kind == OPT_REPL_MATMUL_BIAS;
    int n_attrs = r->kind == OPT_REPL_ATTENTION ? 2 + (r->heads ? 2 : 0)
                  : r->kind == OPT_REPL_LAYERNORM ? 2
                  : r->kind == OPT_REPL_RMSNORM   ? 3
                  : mmb                           ? r->act != NETRUN_ACT_NONE
                                                  : r->approx_tanh;
    int first = ng->n_nodes == 0;
    char name[1100];
    snprintf(name, sizeof name, "%s..%s", g->nodes[r->first].name, g->nodes[n].name);
    int mask = r->n_in > 3 ? r->in[3] : -1;
    if (r->kind == OPT_REPL_ATTENTION && r->two_masks) { /* mask = in[3] + mask2, made once for all the layers */
        char mname[1200];
        snprintf(mname, sizeof mname, "%s+%s", g->values[r->in[3]].name, g->values[r->mask2].name);
        mask = nr_graph_find_value(ng, mname);
        if (mask < 0) {
            if ((mask = nr_graph_value(ng, mname)) < 0)
                return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
            ng->values[mask].dtype = NETRUN_DTYPE_FLOAT;
            ng->values[mask].rank = 4;
            memcpy(ng->values[mask].dims, r->mask_dims, sizeof r->mask_dims);
            nr_node *add = nr_graph_add_node(ng, mname, "Add", "", 2, 1, first);
            if (!add) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
            from[ng->n_nodes - 1] = -1; /* made here: stands for no original node */
            add->inputs[0] = r->in[3];
            add->inputs[1] = r->mask2;
            add->outputs[0] = mask;
            first = 0; /* the copy's first node has a slot for the passes' mark attribute (optimize.c) */
        }
    }
    nr_node *nn = nr_graph_add_node(ng, name, ops[r->kind], mmb ? "com.netrun" : "", r->n_in, 1, n_attrs + first);
    if (!nn) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
    from[ng->n_nodes - 1] = n;
    nn->opset = opsets[r->kind];
    for (int i = 0; i < r->n_in; i++) nn->inputs[i] = i == 3 ? mask : r->in[i];
    nn->outputs[0] = r->out;
    if (mmb && r->zero_bias > 0 && r->in[2] < 0) { /* the bias of zeros */
        nr_tensor *t = nr_tensor_new((netrun_dtype)r->zero_bias_dtype, 1, &r->zero_bias);
        int zb = nr_graph_new_const(ng, name, ".zero_bias", t); /* frees t on failure; adds a value, no node */
        if (zb < 0) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
        nn->inputs[2] = zb;
    }
    if (r->extra_out >= 0) { /* the transposed [B, L, H, Ev] value other nodes read: Reshape of the output */
        int64_t four = 4;
        nr_tensor *t = nr_tensor_new(NETRUN_DTYPE_INT64, 1, &four);
        if (!t) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
        memcpy(t->data, r->extra_dims, sizeof r->extra_dims);
        int sh = nr_graph_new_const(ng, g->values[r->extra_out].name, ".shape", t);
        if (sh < 0) {
            nr_tensor_free(t);
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
        }
        char rname[1200];
        snprintf(rname, sizeof rname, "%s.heads", name);
        nr_node *rs = nr_graph_add_node(ng, rname, "Reshape", "", 2, 1, 0);
        if (!rs) return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
        from[ng->n_nodes - 1] = -1; /* made here: stands for no original node */
        rs->inputs[0] = r->out;
        rs->inputs[1] = sh;
        rs->outputs[0] = r->extra_out;
        nn = &ng->nodes[ng->n_nodes - 2]; /* nr_graph_add_node may have moved the nodes */
    }
    int a = 0;
#define ATTR_I(nm, v) (nn->attrs[a].type = NR_ATTR_INT, nn->attrs[a].i = (v), nn->attrs[a++].name = nr_strdup(nm))
#define ATTR_F(nm, v) (nn->attrs[a].type = NR_ATTR_FLOAT, nn->attrs[a].f = (v), nn->attrs[a++].name = nr_strdup(nm))
    if (r->kind == OPT_REPL_ATTENTION) {
        ATTR_F("scale", r->scale);
        ATTR_I("is_causal", r->is_causal);
        if (r->heads) ATTR_I("q_num_heads", r->heads), ATTR_I("kv_num_heads", r->heads);
    } else if (r->kind == OPT_REPL_LAYERNORM) {
        ATTR_I("axis", r->axis);
        ATTR_F("epsilon", r->epsilon);
    } else if (r->kind == OPT_REPL_RMSNORM) {
        ATTR_I("axis", r->axis);
        ATTR_F("epsilon", r->epsilon);
        ATTR_I("stash_type", 1); /* statistics in float32, as the pattern computed them */
    } else if (mmb && r->act != NETRUN_ACT_NONE) {
        const char *act = r->act == NETRUN_ACT_RELU ? "Relu" : "GeluTanh";
        nn->attrs[a].type = NR_ATTR_STRING;
        nn->attrs[a].s = nr_strdup(act);
        nn->attrs[a].s_len = strlen(act);
        nn->attrs[a++].name = nr_strdup("activation");
    } else if (!mmb && r->approx_tanh) {
        nn->attrs[a].type = NR_ATTR_STRING;
        nn->attrs[a].s = nr_strdup("tanh");
        nn->attrs[a].s_len = 4;
        nn->attrs[a++].name = nr_strdup("approximate");
    }
#undef ATTR_I
#undef ATTR_F
    for (int i = 0; i < a; i++)
        if (!nn->attrs[i].name || (nn->attrs[i].type == NR_ATTR_STRING && !nn->attrs[i].s))
            return nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory copying node '%s'", g->nodes[n].name);
    return NETRUN_OK;
}
