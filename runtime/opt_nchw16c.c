/* Graph passes: the nChw16c region (NETRUN_REGION_NCHW16C), planned on the copy for the nodes of a backend that
 * declares it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimize_internal.h"

/* ---- (f) nChw16c across the layers of a backend declaring NETRUN_REGION_NCHW16C (the CPU's) ----
 * oneDNN's convs run on nChw16c ([N][C/16][H][W][16]); a chain of them (and the elementwise ops between
 * them) keeps that order instead of reordering NCHW <-> nChw16c inside every Conv. Only 4-D float32 values
 * with C % 16 == 0 are blocked, so a blocked value has the same dims and bytes as its NCHW self: the runtime
 * never knows. Decided on the copy (its nodes are the final ones): a value is blocked when a blocked-capable
 * Conv (its backend's supports() with src_blocked = dst_blocked = 1) writes it, or an elementwise op all of whose
 * inputs are blocked with its own shape; any other consumer, and a graph output, reads it through a
 * ReorderNCHWc node (com.netrun) inserted before it; GlobalAveragePool reads it directly
 * (GlobalAveragePoolNCHWc). A Conv with no blocked consumer writes NCHW (it reorders inside, as before). */

/* [N, C, 1, 1] values stay plain: the same memory either way, and squeeze-excite scales must be plain */
static int blockable_desc(const netrun_value_desc *d) {
    return d->dtype == NETRUN_DTYPE_FLOAT && d->rank == 4 && d->dims[0] > 0 && d->dims[1] > 0 && d->dims[1] % 16 == 0 &&
           d->dims[2] > 0 && d->dims[3] > 0 && d->dims[2] * d->dims[3] > 1;
}

/* Conv node n (fusions planned) runs blocked on its backend: 1 reading and writing nChw16c, 2 writing it only
 * (X has a C that is no multiple of 16: the first conv of a net), 3 reading it only (Y's C is no multiple of
 * 16: MobileNet/EfficientNet projections), 0 not at all. */
static int plan_blk_conv(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_node *nd = &o->g->nodes[n];
    if (!is_op(nd, "Conv") || !nd->layer || !opt_region_on(o, cfg, n, NETRUN_REGION_NCHW16C) ||
        o->s->snodes[o->snode_of[n]].dynamic)
        return 0;
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
    int ok = opt_backend_accepts(o, cfg, n, &q) ? o->blk_query : 0;
    o->blk_query = 0;
    return ok;
}

/* The kept node that writes value v, a fused Conv included (it writes its last absorbed node's output, which
 * opt_producer() gives as that absorbed node), or -1. */
static int writer_of(const opt_state *o, int v) {
    for (int k = 0; k < o->g->n_nodes; k++) {
        if (!o->removed[k] && plan_out(&o->plan[k], &o->g->nodes[k]) == v) return k;
    }
    return -1;
}

/* Squeeze-excite's Mul(X, S [N or 1, C, 1, 1]) read only by 1x1 Conv n (stride 1, no pads, group 1): the
 * Conv takes X and S instead (params.src_scale) when its kernel then reads X blocked; the Mul is gone.
 * The scale costs the kernel one multiply per packed weight and task (conv1x1_blk.c); the Mul was a pass
 * over the block's widest tensor (EfficientNet-B0 batch 8: 5% of the run). Returns the Conv's blk_conv. */
int opt_plan_se_fold(opt_state *o, const netrun_backend_config *cfg, int n) {
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
    const netrun_region_spec *r = opt_region_on(o, cfg, n, NETRUN_REGION_NCHW16C);
    const char *on = r && r->fold_scale_option ? nr_options_get(&s->opts, r->fold_scale_option) : NULL;
    if (!r || !r->fold_scale_option || (on && !strcmp(on, "0")) || !cp || cp->n_spatial != 2 || cp->group != 1 || x < 0 || opt_only_user(o, x) != n) return base;
    for (int i = 0; i < 2; i++)
        if (cp->kernel[i] != 1 || cp->strides[i] != 1 || cp->pads_begin[i] || cp->pads_end[i]) return base;
    int m = opt_producer(o, x);
    if (m < 0 || o->removed[m] || !is_op(&g->nodes[m], "Mul") || g->nodes[m].n_inputs != 2 || o->swish_x[m] >= 0 ||
        !opt_region_on(o, cfg, m, NETRUN_REGION_NCHW16C) ||
        !opt_same_slot(o, m, n) ||
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
            o->se_option = r->fold_scale_option;
            return blk;
        }
        p->mul = -1;
        p->out = out0;
    }
    return base;
}

/* Layout-agnostic when all its data inputs have its output's dims. */
int opt_agnostic_op(const nr_node *nd) {
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
        const nr_attr *a = opt_find_attr(nd, "axis");
        if (a && a->type == NR_ATTR_INT && (a->i == 1 || a->i == -3)) return 3;
    }
    return 0;
}

enum { NK_PLAIN = 0, NK_CONV, NK_AGN, NK_GAP, NK_POOL, NK_MULCH };

/* MaxPool (no Indices) or AveragePool node n runs on nChw16c on its backend (its supports() with params.blocked
 * = 1). */
static int pool_accepts_blocked(const opt_state *o, const netrun_backend_config *cfg, int n) {
    netrun_session *s = o->s;
    const nr_node *nd = &o->g->nodes[n];
    if ((!is_op(nd, "MaxPool") && !is_op(nd, "AveragePool")) || nd->n_inputs != 1 || nd->n_outputs < 1 || nd->outputs[0] < 0 ||
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

/* Every kept reader of value v (original graph) reads nChw16c: a Conv the pass runs blocked, or an op the region
 * crosses. An AveragePool whose output also goes to a plain op stays plain: DenseNet's transition pools feed a
 * BatchNormalization and the next block's Concats, which would then all run blocked and reorder for every BN. */
static int users_read_blocked(const opt_state *o, const netrun_backend_config *cfg, int v) {
    const nr_graph *g = o->g;
    if (o->pinned[v]) return 0;
    for (int u = 0; u < g->n_nodes; u++) {
        if (o->removed[u]) continue;
        const nr_node *ud = &g->nodes[u];
        for (int i = 0; i < ud->n_inputs; i++) {
            if (ud->inputs[i] < 0 || val(o, ud->inputs[i]) != v) continue;
            const netrun_region_spec *r = opt_region_on(o, cfg, u, NETRUN_REGION_NCHW16C);
            if (!o->blk_conv[u] && !opt_region_crosses(r, ud, ud->op_type)) return 0;
        }
    }
    return 1;
}

typedef struct nchwc_state {
    nr_graph *ng;
    int nv0;           /* values before the pass */
    char *vblk;        /* value -> written blocked */
    int *blkval;       /* value -> value holding its nChw16c data (-1: none yet) */
    int *plainval;     /* value -> value holding its NCHW data (-1: none yet) */
    int reorders;
} nchwc_state;

static int add_reorder(nchwc_state *st, int from, int to, int to_blocked) {
    if (!opt_add_layout_node(st->ng, from, to, "ReorderNCHWc", "to_blocked", to_blocked,
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
    int id = opt_like_value(st->ng, v, blocked ? ".nchw16c" : ".nchw");
    if (id < 0 || !add_reorder(st, src, id, blocked)) return -1;
    return *slot = id;
}

/* Decide and rewire the copy ng (nodes 0..n_copied-1 come from original nodes from[]); conv_blk[k] gets
 * 1 (src) | 2 (dst) for the copy's Conv nodes that run blocked. */
netrun_status opt_plan_nchwc(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
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
    for (int k = 0; k < n_copied; k++)
        if (from[k] >= 0) to[from[k]] = k;
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
        const netrun_region_spec *r = opt_region_on(o, cfg, n, NETRUN_REGION_NCHW16C);
        if (!r) continue;
        /* squeeze-excite: Mul(X blocked, S [N or 1, C, 1, 1] plain), either order -> MulChannelNCHWc(X, S) */
        if (opt_region_crosses(r, nd, "Mul") && nd->n_inputs == 2 && !s->values[out].dynamic && blockable_desc(&s->values[out].desc)) {
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
            if (opt_region_crosses(r, nd, "GlobalAveragePool")) kind[k] = NK_GAP;
            continue;
        }
        if (is_op(nd, "MaxPool") || is_op(nd, "AveragePool")) {
            if (opt_region_crosses(r, nd, nd->op_type) && pool_accepts_blocked(o, cfg, n) &&
                (is_op(nd, "MaxPool") || users_read_blocked(o, cfg, out))) {
                kind[k] = NK_POOL;
                st.vblk[out] = 1;
            }
            continue;
        }
        int a = opt_agnostic_op(nd);
        if (!a || !opt_region_crosses(r, nd, nd->op_type) || s->values[out].dynamic ||
            !blockable_desc(&s->values[out].desc))
            continue;
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
        if (ok && r->keeps) ok = opt_region_takes(o, cfg, r, ng, k, n, NULL, 0, 0);
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
        if (out >= 0 && out < g->n_values && st.vblk[out] && o->pinned[out]) {
            int id = opt_like_value(ng, out, ".nchw16c");
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
            else if (kind[k] == NK_AGN) want = j == 0 || opt_agnostic_op(&ng->nodes[k]) >= 2;
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

