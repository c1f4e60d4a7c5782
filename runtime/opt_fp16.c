/* Graph passes: the float16 NHWC region (NETRUN_REGION_FP16_NHWC), planned on the copy for the nodes of a backend
 * that declares it. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "optimize_internal.h"
#include "../backends/common/dtype_convert.h" /* float -> IEEE half for the region's weights */

/* ---- (g) float16 NHWC regions across the layers of a backend declaring NETRUN_REGION_FP16_NHWC (CUDA's) ----
 * Under --precision fp16, a Conv on such a backend otherwise converts its float32 NCHW X to float16 (NHWC) and Y back
 * inside its kernel, two conversion kernels per Conv. Here connected nodes of that backend that gain from float16 keep
 * their values float16 and channels last: Convs with constant weights (cuDNN NHWC tensor-core kernels), the
 * same-shape elementwise ops between them (layout-agnostic), MaxPool/AveragePool (params.nhwc),
 * GlobalAveragePool (GlobalAveragePoolNHWC, com.netrun) and squeeze-excite's Mul(X, S[N,C,1,1])
 * (MulChannelNHWC, com.netrun) and Concat on channels (ConcatNHWC, com.netrun). Region values become FLOAT16 in the copy with their
 * logical NCHW dims (the layout is the pass's business); their Conv weights and biases become float16
 * constants; a ReorderNHWC (com.netrun) converts float32 NCHW <-> float16 NHWC in one kernel at each border
 * (graph outputs stay float32 under their own names). Everything else (Softmax, norms, Gemm, reshapes,
 * broadcasting ops) stays float32 outside. A Conv with neither a region input nor a region consumer is left to
 * the per-layer fp16 paths of conv.c. Inside a region, conv.c still times float16 NHWC against float32 with
 * conversions around it for each Conv and keeps the faster (docs/cuda.md). The region's option (the
 * backend's, e.g. NAME.fp16_regions=0) turns it off. */

/* Float32 constant data of value v: an initializer of the original graph, or a value folded at prepare
 * (exporters often feed weights through Identity nodes); NULL otherwise. *count gets its element count. */
static const float *const_data_f32(const opt_state *o, int v, int64_t *count) {
    const nr_tensor *t = opt_const_f32(o->g, v);
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

/* Node k is a Transpose with the 4-D perm given. */
static int transpose_perm(const opt_state *o, int k, int a, int b, int c, int d) {
    if (k < 0 || o->removed[k] || !is_op(&o->g->nodes[k], "Transpose")) return 0;
    const nr_attr *p = opt_find_attr(&o->g->nodes[k], "perm");
    return p && p->type == NR_ATTR_INTS && p->n == 4 && p->ints[0] == a && p->ints[1] == b && p->ints[2] == c &&
           p->ints[3] == d;
}

/* A Conv between channels-last layers (ConvNeXt's: its output read only by Transpose(0 2 3 1), or its input
 * written by Transpose(0 3 1 2)): NHWC there would be undone by the Transposes' copies and cost a conversion on
 * each side; it is left to the plain float16 region, which takes Conv, Transposes and the MLP between them. */
static int between_channels_last(const opt_state *o, int n, int out) {
    if (transpose_perm(o, opt_producer(o, val(o, o->g->nodes[n].inputs[0])), 0, 3, 1, 2)) return 1;
    int readers = 0;
    for (int k = 0; k < o->g->n_nodes; k++) {
        if (o->removed[k]) continue;
        const nr_node *u = &o->g->nodes[k];
        for (int j = 0; j < u->n_inputs; j++)
            if (val(o, u->inputs[j]) == out) {
                if (!transpose_perm(o, k, 0, 2, 3, 1)) return 0;
                readers++;
            }
    }
    return readers > 0 && !o->pinned[out];
}

/* Conv node n (fusions planned) may run float16 NHWC on its backend: 2-D, constant float32 weights (and bias), its
 * backend's supports() agrees with float16 descs and src_nhwc = dst_nhwc = 1, not between channels-last layers. */
int opt_plan_h_conv(opt_state *o, const netrun_backend_config *cfg, int n) {
    const nr_node *nd = &o->g->nodes[n];
    if (!is_op(nd, "Conv") || !nd->layer || !opt_region_on(o, cfg, n, NETRUN_REGION_FP16_NHWC) ||
        o->s->snodes[o->snode_of[n]].dynamic)
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
    if (between_channels_last(o, n, out)) return 0;
    conv_plan q = *p;
    q.out = out;
    o->nhwc_query = 1;
    int ok = opt_backend_accepts(o, cfg, n, &q);
    o->nhwc_query = 0;
    return ok;
}

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
    if (!opt_add_layout_node(st->ng, from, to, "ReorderNHWC", "to_nhwc", to_nhwc, to_nhwc ? "to_fp16_nhwc" : "to_fp32_nchw"))
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
    int id = opt_like_value(st->ng, v, want_h ? ".fp16_nhwc" : ".fp32");
    if (id < 0) return -1;
    st->ng->values[id].dtype = want_h ? NETRUN_DTYPE_FLOAT16 : NETRUN_DTYPE_FLOAT;
    if (!add_convert(st, src, id, want_h)) return -1;
    return *slot = id;
}

/* float32 -> float16 weights, finite values saturated to +-65504 (infinities and NaN kept as such). Scalar, one
 * value at a time, this took 1.2 s of a 1.7 s float16 prepare of BERT-base (110 M weights) on an H200's host; with
 * F16C (x86) 8 at a time. Same bits either way: the hardware rounds to nearest even, as nr_float_to_half does. */
static void to_half_scalar(uint16_t *dst, const float *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float x = src[i];
        if (x > 65504.0f && x < INFINITY) x = 65504.0f;
        else if (x < -65504.0f && x > -INFINITY) x = -65504.0f;
        dst[i] = nr_float_to_half(x);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx,f16c"))) static void to_half_f16c(uint16_t *dst, const float *src, int64_t n) {
    const __m256 lim = _mm256_set1_ps(65504.0f), nlim = _mm256_set1_ps(-65504.0f), inf = _mm256_set1_ps(INFINITY);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(src + i);
        /* a block with an infinity or NaN: the scalar rule (min/max would turn them into +-65504) */
        if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(x, absmask), inf, _CMP_NLT_UQ))) {
            to_half_scalar(dst + i, src + i, 8);
            continue;
        }
        x = _mm256_min_ps(_mm256_max_ps(x, nlim), lim);
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    to_half_scalar(dst + i, src + i, n - i);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
/* F16C and AVX with the YMM state enabled by the OS (CPUID.1:ECX bits 29, 28, 27; XCR0 bits 1-2); cpuid rather
 * than __builtin_cpu_supports, whose "f16c" not every compiler knows (clang 14) */
static int have_f16c(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29)) || !(c & (1u << 28)) || !(c & (1u << 27))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
}
#endif

static void to_half_one(uint16_t *dst, const float *src, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_f16c()) {
        to_half_f16c(dst, src, n);
        return;
    }
#endif
    to_half_scalar(dst, src, n);
}

typedef struct half_part {
    uint16_t *dst;
    const float *src;
    int64_t n;
} half_part;

static void *half_part_run(void *arg) {
    half_part *p = arg;
    to_half_one(p->dst, p->src, p->n);
    return NULL;
}

/* Large tensors (GPT-2's 38 M-value embedding, read again as its lm_head) in parts on up to 8 threads: one core
 * converts about 1 GB/s of float32, and the weights' first read from the model file comes with it; a thread
 * that cannot start leaves its part to this one. */
static void to_half_saturate(uint16_t *dst, const float *src, int64_t n) {
    enum { MAXT = 8, MIN_PART = 1 << 21 };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int t = (int)(n / MIN_PART);
    if (t > MAXT) t = MAXT;
    if (cpus > 0 && t > cpus) t = (int)cpus;
    if (t < 2) {
        to_half_one(dst, src, n);
        return;
    }
    half_part parts[MAXT];
    pthread_t th[MAXT];
    int started[MAXT] = {0};
    int64_t per = (n / t + 7) & ~(int64_t)7;
    for (int i = 0; i < t; i++) {
        int64_t a = per * i, b = i == t - 1 ? n : per * (i + 1);
        parts[i] = (half_part){dst + a, src + a, b > a ? b - a : 0};
        if (i > 0) started[i] = pthread_create(&th[i], NULL, half_part_run, &parts[i]) == 0;
    }
    for (int i = 0; i < t; i++)
        if (!started[i]) to_half_one(parts[i].dst, parts[i].src, parts[i].n);
    for (int i = 1; i < t; i++)
        if (started[i]) pthread_join(th[i], NULL);
}

/* A float16 copy of float32 constant v of ng, cached in cache[v] (values of ng before the pass); -1 on OOM or when
 * v is no float32 constant. Finite values beyond float16's range become its largest finite value, not infinities:
 * masks written as x * -3.4e38 (0 * -inf would be NaN) and biases of -1e9 keep their meaning. Shared with the
 * plain float16 region (opt_half.c). */
int opt_half_const(const opt_state *o, nr_graph *ng, int v, int nv0, int *cache) {
    if (v < 0 || v >= nv0) return -1;
    if (cache[v] >= 0) return cache[v];
    const nr_tensor *t = ng->values[v].constant;
    const float *src = NULL;
    int64_t cnt = 0;
    int rank;
    const int64_t *dims;
    if (t && t->dtype == NETRUN_DTYPE_FLOAT && t->data) { /* initializer, or weights folded by this pass */
        src = t->data;
        cnt = nr_tensor_count(t);
        rank = t->rank;
        dims = t->dims;
    } else if (v < o->g->n_values && (src = const_data_f32(o, v, &cnt))) { /* folded at prepare */
        rank = o->s->values[v].desc.rank;
        dims = o->s->values[v].desc.dims;
    } else
        return -1;
    nr_tensor *h = nr_tensor_new(NETRUN_DTYPE_FLOAT16, rank, dims);
    if (!h) return -1;
    to_half_saturate(h->data, src, cnt);
    int id = nr_graph_new_const(ng, ng->values[v].name, ".fp16", h); /* frees h on failure */
    return id < 0 ? -1 : (cache[v] = id);
}

static int h_const(h_state *st, int v) { return opt_half_const(st->o, st->ng, v, st->nv0, st->hval); }

/* Elementwise ops a float16 region crosses: unary ones with no other input (Clip's bound inputs would stay
 * float32), binary ones without broadcast (checked by the caller). */
static int h_unary(const nr_node *nd) { return opt_agnostic_op(nd) == 1 && nd->n_inputs == 1; }
static int h_binary(const nr_node *nd) { return opt_agnostic_op(nd) == 2 && nd->n_inputs == 2; }

/* Decide and rewire the copy ng; kind_out[k] gets HK_CONV / HK_POOL for nodes whose params the caller flags. */
netrun_status opt_plan_fp16(opt_state *o, const netrun_backend_config *cfg, nr_graph *ng, const int *from,
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
    for (int k = 0; k < n_copied; k++)
        if (from[k] >= 0) to[from[k]] = k;
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
        const netrun_region_spec *r = opt_region_on(o, cfg, n, NETRUN_REGION_FP16_NHWC);
        if (!r || s->snodes[o->snode_of[n]].dynamic || s->values[out].dynamic) continue;
        const netrun_value_desc *yd = &s->values[out].desc;
        /* squeeze-excite: Mul(X float16 NHWC [N,C,H,W], S [N or 1, C, 1, 1]), either order -> MulChannelNHWC(X, S)
         * (S float16 too: a region value already, or converted) */
        if (opt_region_crosses(r, nd, "Mul") && nd->n_inputs == 2 && regionable_desc(yd) && yd->dims[2] * yd->dims[3] > 1 &&
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
        if (opt_region_crosses(r, nd, "GlobalAveragePool") && nd->n_inputs == 1) {
            kind[k] = HK_GAP;
            st.vh[out] = 1;
            continue;
        }
        if ((opt_region_crosses(r, nd, "MaxPool") || opt_region_crosses(r, nd, "AveragePool")) && nd->n_inputs == 1 &&
            (nd->n_outputs == 1 || nd->outputs[1] < 0) && g->nodes[n].layer &&
            g->nodes[n].layer->params_size >= sizeof(netrun_pool_params) && s->snodes[o->snode_of[n]].params &&
            regionable_desc(yd)) {
            netrun_pool_params pp;
            memcpy(&pp, s->snodes[o->snode_of[n]].params, sizeof pp);
            pp.nhwc = 1;
            if (pp.n_spatial == 2 && opt_region_takes(o, cfg, r, ng, k, n, &pp, g->nodes[n].layer->params_size, 1)) {
                kind[k] = HK_POOL;
                st.vh[out] = 1;
            }
            continue;
        }
        /* Concat on channels of float16 NHWC inputs with the same N, H, W: ConcatNHWC (per input a 2-D copy) */
        if (opt_region_crosses(r, nd, "Concat") && opt_agnostic_op(nd) == 3 && regionable_desc(yd)) {
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
        if ((!un && !bin) || !opt_region_crosses(r, nd, nd->op_type) || !regionable_desc(yd)) continue;
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
            ok = opt_region_takes(o, cfg, r, ng, k, n, &up, sizeof up, 1);
        } else
            ok = opt_region_takes(o, cfg, r, ng, k, n, NULL, 0, 1);
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
        if (out >= 0 && out < g->n_values && st.vh[out] && o->pinned[out]) {
            int id = opt_like_value(ng, out, ".fp16_nhwc");
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

