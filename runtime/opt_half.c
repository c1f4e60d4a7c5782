/* Graph passes: the plain float16 region (NETRUN_REGION_FP16), planned on the copy for the nodes of a backend that
 * declares it. Under --precision fp16 a GEMM on such a backend otherwise converts its float32 input to float16 and
 * its result back inside the kernel, and everything between the GEMMs (bias Adds, LayerNorm, Gelu, Softmax,
 * attention, reshapes) reads and writes float32: a transformer then runs no faster in fp16 than in fp32. Here
 * connected nodes of the ops the region lists keep their values float16 in their own layout, so a transformer
 * stays float16 from its embedding to its last GEMM. A group is kept only when it holds a MatMul, Gemm or
 * Attention (a lone Add gains nothing from two Casts); the passes' MatMulBias counts as a MatMul. Constants read by the group get float16 copies (saturated:
 * opt_half_const); an ONNX Cast converts at each border; graph outputs keep float32 under their own names. Values
 * of the float16 NHWC region (opt_fp16.c, planned before on the same copy) are left to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimize_internal.h"

static int half_seed_op(const nr_node *nd) {
    return is_op(nd, "MatMul") || is_op(nd, "Gemm") || is_op(nd, "Attention") || opt_is_matmul_bias(nd);
}

/* The dtype of value v of the copy: the session's desc for values of the original graph, else the copy's. */
static netrun_dtype dtype_of(const opt_state *o, const nr_graph *ng, int v) {
    return v < o->g->n_values ? o->s->values[v].desc.dtype : ng->values[v].dtype;
}

static int region_lists(const netrun_region_spec *r, const char *op) {
    for (const char *const *p = r->ops; p && *p; p++)
        if (!strcmp(*p, op)) return 1;
    return 0;
}

/* Whether some node could seed a region: a MatMul, Gemm or Attention (one the transformer pass made included) on
 * a backend declaring NETRUN_REGION_FP16, on in this session, that lists the op. Tells the driver whether to make a
 * copy at all. */
int opt_half_seeds(const opt_state *o, const netrun_backend_config *cfg) {
    for (int k = 0; k < o->s->n_snodes; k++) {
        int n = o->s->snodes[k].node;
        if (o->removed[n]) continue;
        const netrun_region_spec *r = opt_region_on(o, cfg, n, NETRUN_REGION_FP16);
        if (!r) continue;
        const nr_node *nd = &o->g->nodes[n];
        int kind = o->repl_of[n] >= 0 ? o->repls[o->repl_of[n]].kind : -1;
        if (kind >= 0 ? (kind == OPT_REPL_ATTENTION && region_lists(r, "Attention")) ||
                            (kind == OPT_REPL_MATMUL_BIAS && region_lists(r, "MatMul"))
                      : half_seed_op(nd) && opt_region_crosses(r, nd, nd->op_type))
            return 1;
    }
    return 0;
}

typedef struct half_state {
    const opt_state *o;
    nr_graph *ng;
    int nv0;
    int *hval;  /* value -> its float16 copy (a Cast's output or a constant's copy), -1 none */
    int *fval;  /* value -> its float32 copy (a Cast's output), -1 none */
    int casts;
} half_state;

/* A Cast of value `from` into new value `to` (dtype given by `to_type`), named after `to`. 1, or 0 on OOM. */
static int add_cast(half_state *st, int from, int to, int to_type) {
    char name[640];
    snprintf(name, sizeof name, "%s.%s", st->ng->values[to].name, to_type == NETRUN_DTYPE_FLOAT16 ? "to_fp16" : "to_fp32");
    int half = to_type == NETRUN_DTYPE_FLOAT16;
    nr_node *c = nr_graph_add_node(st->ng, name, "Cast", "", 1, 1, half ? 2 : 1);
    if (!c) return 0;
    c->inputs[0] = from;
    c->outputs[0] = to;
    c->attrs[0].type = NR_ATTR_INT;
    c->attrs[0].i = to_type; /* netrun_dtype follows ONNX's TensorProto numbering */
    st->casts++;
    if (half) { /* finite values stay finite, as the region's constants do: a mask's float32 lowest value read
                 * from an input becomes -65504, not -inf (a row masked whole would give NaN from softmax) */
        c->attrs[1].type = NR_ATTR_INT;
        c->attrs[1].i = 1;
        if (!(c->attrs[1].name = nr_strdup("netrun.finite"))) return 0;
    }
    return (c->attrs[0].name = nr_strdup("to")) != NULL;
}

/* The value holding v in the precision its consumer wants (float16 or float32); -1 on OOM. */
static int half_as(half_state *st, const char *is_half, int v, int want_half) {
    if (v < 0 || v >= st->nv0 || !is_half[v] == !want_half) return v;
    int *slot = want_half ? &st->hval[v] : &st->fval[v];
    if (*slot >= 0) return *slot;
    int id = opt_like_value(st->ng, v, want_half ? ".fp16" : ".fp32");
    if (id < 0) return -1;
    st->ng->values[id].dtype = want_half ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT;
    if (!add_cast(st, v, id, want_half ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT)) return -1;
    return *slot = id;
}

/* Copy node k (original node n) may run with float16 for its float32 inputs and output on its backend. */
static int half_takes(const opt_state *o, const netrun_backend_config *cfg, const netrun_region_spec *r,
                      const nr_graph *ng, int k, int n) {
    const nr_node *nd = &ng->nodes[k];
    enum { MAXIN = 8, MAXOUT = 8 };
    netrun_value_desc in[MAXIN], out[MAXOUT];
    /* Split (GPT-2's fused QKV projection) writes all its outputs float16; other ops' optional outputs
     * (LayerNorm's statistics) stay as they are */
    int n_out = is_op(nd, "Split") ? nd->n_outputs : 1;
    if (nd->n_inputs > MAXIN || n_out > MAXOUT || nd->n_outputs < 1) return 0;
    for (int j = 0; j < nd->n_outputs; j++) {
        int v = nd->outputs[j];
        if (j >= n_out ? v >= 0 : v < 0 || v >= o->g->n_values || (n_out > 1 && o->pinned[v])) return 0;
        if (j >= n_out) continue;
        const nr_svalue *ov = &o->s->values[v];
        if (ov->desc.dtype != NETRUN_DTYPE_FLOAT || ov->dynamic) return 0;
        out[j] = ov->desc;
        out[j].dtype = NETRUN_DTYPE_FLOAT16;
    }
    for (int i = 0; i < nd->n_inputs; i++) {
        int v = nd->inputs[i];
        if (v < 0) {
            memset(&in[i], 0, sizeof in[i]);
            in[i].rank = -1;
            in[i].name = "";
            continue;
        }
        if (v >= o->g->n_values) { /* a value another pass made: float32 ones (MatMulBias's zero bias, the sum of
                                    * an Attention's two masks) convert like the model's; float16 NHWC ones do not */
            const nr_value *nv = &ng->values[v];
            const nr_tensor *t = nv->constant;
            if ((t ? t->dtype : nv->dtype) != NETRUN_DTYPE_FLOAT || (t ? t->rank : nv->rank) < 0) return 0;
            memset(&in[i], 0, sizeof in[i]);
            in[i].name = nv->name;
            in[i].dtype = NETRUN_DTYPE_FLOAT16;
            in[i].rank = t ? t->rank : nv->rank;
            memcpy(in[i].dims, t ? t->dims : nv->dims, sizeof(int64_t) * (size_t)in[i].rank);
            continue;
        }
        in[i] = o->s->values[v].desc;
        /* float16 already: the NHWC region's layout, not a plain float16 value */
        if (ng->values[v].dtype == NETRUN_DTYPE_FLOAT16 || in[i].dtype == NETRUN_DTYPE_FLOAT16) return 0;
        if (in[i].dtype == NETRUN_DTYPE_FLOAT) in[i].dtype = NETRUN_DTYPE_FLOAT16;
    }
    const nr_snode *sn = &o->s->snodes[o->snode_of[n]];
    int made = o->repl_of[n] >= 0; /* the pattern's last node stands for it: its params are not the fused op's */
    const nr_layer *layer = o->g->nodes[n].layer;
    netrun_node_desc d = {.struct_size = sizeof d, .name = nd->name, .op_type = nd->op_type, .domain = nd->domain,
                          .opset = nd->opset, .params = made ? NULL : sn->params,
                          .params_size = made || !layer ? 0 : layer->params_size, .n_inputs = nd->n_inputs,
                          .inputs = in, .n_outputs = n_out, .outputs = out};
    if (r->keeps) return r->keeps(cfg, &d);
    if (made) return 0; /* supports() would need the fused op's params */
    char why[256] = "";
    return o->s->slots[sn->slot].api->supports(cfg, &d, why, sizeof why);
}

static int uf_find(int *p, int x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
}

netrun_status opt_plan_half(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
                            int n_copied, const char *hkind, int *n_nodes, int *n_casts) {
    const nr_graph *g = o->g;
    netrun_status rc = NETRUN_OK;
    half_state st = {.o = o, .ng = ng, .nv0 = ng->n_values};
    char *cand = nr_calloc((size_t)n_copied + 1, 1), *is_half = nr_calloc((size_t)st.nv0 + 1, 1);
    int *parent = nr_calloc((size_t)n_copied + 1, sizeof(int)), *seeded = nr_calloc((size_t)n_copied + 1, sizeof(int));
    int *producer = nr_calloc((size_t)st.nv0 + 1, sizeof(int));
    st.hval = nr_calloc((size_t)st.nv0 + 1, sizeof(int));
    st.fval = nr_calloc((size_t)st.nv0 + 1, sizeof(int));
    if (!cand || !is_half || !parent || !seeded || !producer || !st.hval || !st.fval) {
        rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the float16 region pass");
        goto done;
    }
    for (int v = 0; v < st.nv0; v++) st.hval[v] = st.fval[v] = producer[v] = -1;
    /* candidates: nodes of a backend declaring the region, of an op it lists, that take float16 */
    for (int k = 0; k < n_copied; k++) {
        parent[k] = k;
        const nr_node *nd = &ng->nodes[k];
        for (int j = 0; j < nd->n_outputs; j++)
            if (nd->outputs[j] >= 0 && nd->outputs[j] < st.nv0) producer[nd->outputs[j]] = k;
        int n = from[k];
        if ((hkind && hkind[k] != HK_PLAIN) || n < 0 || n >= g->n_nodes || o->snode_of[n] < 0 ||
            o->s->snodes[o->snode_of[n]].dynamic)
            continue;
        const netrun_region_spec *r = opt_region_on(o, cfg, n, NETRUN_REGION_FP16);
        /* the passes' MatMulBias goes where the region lists MatMul */
        int crosses = r && (opt_is_matmul_bias(nd) ? region_lists(r, "MatMul") : opt_region_crosses(r, nd, nd->op_type));
        if (crosses && half_takes(o, cfg, r, ng, k, n)) cand[k] = 1;
    }
    /* groups: candidates joined through the float values one writes and another reads */
    for (int k = 0; k < n_copied; k++) {
        if (!cand[k]) continue;
        const nr_node *nd = &ng->nodes[k];
        for (int j = 0; j < nd->n_inputs; j++) {
            int v = nd->inputs[j], p = v >= 0 && v < st.nv0 ? producer[v] : -1;
            if (p >= 0 && cand[p] && dtype_of(o, ng, v) == NETRUN_DTYPE_FLOAT) parent[uf_find(parent, p)] = uf_find(parent, k);
        }
    }
    for (int k = 0; k < n_copied; k++)
        if (cand[k] && half_seed_op(&ng->nodes[k])) seeded[uf_find(parent, k)] = 1;
    for (int k = 0; k < n_copied; k++) {
        if (cand[k] && !seeded[uf_find(parent, k)]) cand[k] = 0;
        if (!cand[k]) continue;
        ++*n_nodes;
        for (int j = 0; j < (is_op(&ng->nodes[k], "Split") ? ng->nodes[k].n_outputs : 1); j++)
            is_half[ng->nodes[k].outputs[j]] = 1; /* half_takes checked them all */
    }
    if (!*n_nodes) goto done;
    /* a Reshape the passes made of a float16 value (the fused Attention's [B, L, H, Ev] view of its output, for the
     * Shape nodes that read it) stays a float16 view: a Cast in front of it ran every time for nothing */
    for (int k = 0; k < n_copied; k++) {
        const nr_node *nd = &ng->nodes[k];
        int x = nd->n_inputs > 0 ? nd->inputs[0] : -1, y = nd->n_outputs > 0 ? nd->outputs[0] : -1;
        if (from[k] >= 0 || !is_op(nd, "Reshape") || x < 0 || x >= st.nv0 || !is_half[x] || y < 0 || y >= st.nv0 ||
            (y < g->n_values && o->pinned[y]))
            continue;
        cand[k] = 1;
        is_half[y] = 1;
        ++*n_nodes;
    }
    for (int v = 0; v < st.nv0; v++)
        if (is_half[v]) ng->values[v].dtype = NETRUN_DTYPE_FLOAT16;
    /* float16 graph outputs (and values read by name by subgraphs): the node writes a new value, a Cast gives the
     * output its float32 under its name */
    for (int k = 0; k < n_copied && rc == NETRUN_OK; k++) {
        int out = cand[k] ? ng->nodes[k].outputs[0] : -1;
        if (out < 0 || out >= g->n_values || !o->pinned[out]) continue;
        int id = opt_like_value(ng, out, ".fp16");
        if (id < 0 || !add_cast(&st, id, out, NETRUN_DTYPE_FLOAT)) {
            rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the float16 region pass");
            break;
        }
        ng->values[id].dtype = NETRUN_DTYPE_FLOAT16;
        ng->values[out].dtype = NETRUN_DTYPE_FLOAT;
        is_half[out] = 0;
        st.hval[out] = id;
        ng->nodes[k].outputs[0] = id;
    }
    /* inputs: float16 (a constant's copy or a Cast) for the group's nodes, float32 (a Cast) for everything else,
     * the conversions the float16 NHWC pass added after the copied nodes included (ConvNeXt: a Transpose of the
     * group feeds a Conv of that region, whose conversion reads float32) */
    int n_before = ng->n_nodes; /* not the Casts added below */
    for (int k = 0; k < n_before && rc == NETRUN_OK; k++) {
        int in_group = k < n_copied && cand[k];
        /* Shape and Size read dims alone, the same in float16: a Cast for them would run every time for nothing
         * (exporters read the shape of most activations to build Reshape targets) */
        if (!in_group && (is_op(&ng->nodes[k], "Shape") || is_op(&ng->nodes[k], "Size"))) continue;
        for (int j = 0; j < ng->nodes[k].n_inputs; j++) {
            int v = ng->nodes[k].inputs[j], id = v;
            if (v < 0 || v >= st.nv0) continue;
            int f32 = in_group && !is_half[v] && dtype_of(o, ng, v) == NETRUN_DTYPE_FLOAT;
            if (f32 && (ng->values[v].constant || (v < g->n_values && o->s->values[v].is_const))) {
                if ((id = opt_half_const(o, ng, v, st.nv0, st.hval)) < 0) { /* cached in hval like the Casts */
                    rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "float16 region pass: cannot make a float16 copy of '%s'",
                                  ng->values[v].name);
                    break;
                }
            } else if (f32 || is_half[v]) { /* a pinned output's float16 value is in hval: half_as finds it */
                if ((id = half_as(&st, is_half, v, in_group)) < 0) {
                    rc = nr_error(NETRUN_ERR_OUT_OF_MEMORY, "out of memory in the float16 region pass");
                    break;
                }
            }
            ng->nodes[k].inputs[j] = id; /* adding nodes may have moved the array: index it again */
        }
    }
    *n_casts = st.casts;
done:
    nr_free(cand);
    nr_free(is_half);
    nr_free(parent);
    nr_free(seeded);
    nr_free(producer);
    nr_free(st.hval);
    nr_free(st.fval);
    return rc;
}
