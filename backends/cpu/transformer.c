/* CPU kernels: transformer (Attention, FlexAttention, RMSNormalization, RotaryEmbedding, LinearAttention,
 * CausalConvWithState). float16/bfloat16 compute in float, double in double (Attention/Flex/RMS).
 * Attention runs one (batch, q head) per task: Q, K, V of the head are gathered into float (or double)
 * buffers with sqrt(scale) applied to Q and K (as the reference does), QK^T and P*V go through CBLAS
 * (single-threaded; the tasks are spread over netrun's pool); the float32 fast path through oneDNN's sgemm. */
/* The compare-and-select loops (attention rows) vectorize only without trapping math: netrun never enables FP
 * traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <cblas.h>
#include <stdio.h>

#include "conv_dnnl.h" /* cpu_dnnl_sgemm */
#include "cpu_internal.h"
#include "gemm_util.h"

/* ---- element access for the floating dtypes ---- */
static inline double ld(netrun_dtype t, const void *p, int64_t i) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)p)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)p)[i];
    case NETRUN_DTYPE_FLOAT16: return cpu_half_to_float(((const uint16_t *)p)[i]);
    case NETRUN_DTYPE_BFLOAT16: return cpu_bf16_to_float(((const uint16_t *)p)[i]);
    default: return 0;
    }
}
static inline void st(netrun_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case NETRUN_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case NETRUN_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_float_to_half((float)v); break;
    case NETRUN_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_float_to_bf16((float)v); break;
    default: break;
    }
}
/* Round v to dtype t's precision (float16 intermediates of the reference). */
static inline float round_to(netrun_dtype t, float v) {
    if (t == NETRUN_DTYPE_FLOAT16) return cpu_half_to_float(cpu_float_to_half(v));
    if (t == NETRUN_DTYPE_BFLOAT16) return cpu_bf16_to_float(cpu_float_to_bf16(v));
    return v;
}

static int is_float_dtype(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_DOUBLE || t == NETRUN_DTYPE_FLOAT16 ||
           t == NETRUN_DTYPE_BFLOAT16;
}

/* checked a * b (both >= 0); -1 on overflow */
static int64_t mul_chk(int64_t a, int64_t b) {
    if (a < 0 || b < 0) return -1;
    if (a && b > INT64_MAX / a) return -1;
    return a * b;
}

/* ================================ Attention ================================ */

typedef struct attn_job {
    const netrun_attention_params *p;
    const netrun_tensor *q, *k, *v, *mask, *pk, *pv, *np;
    netrun_tensor *y, *prk, *prv, *qk;
    /* element strides (batch, head, seq) of Q/K/V/Y; the last dim is contiguous */
    int64_t qs[3], ks[3], vs[3], ys[3];
    int64_t ms[4], mlast;              /* mask broadcast strides over [B, Hq, Lq, Lm], Lm */
    int64_t group;
    size_t ws_elems;                   /* per slot, in compute elements */
    void *ws;
    int dbl;                           /* compute in double */
} attn_job;

static void layout_strides(int is3d, int64_t heads, int64_t len, int64_t e, int64_t s[3]) {
    if (is3d) { s[0] = len * heads * e; s[1] = e; s[2] = heads * e; }
    else { s[0] = heads * len * e; s[1] = len * e; s[2] = e; }
}

/* Additive bias of (b, h, i, j) from the mask, causality and the padding lengths. */
static inline double attn_bias(const attn_job *j, int64_t b, int64_t h, int64_t i, int64_t c) {
    const netrun_attention_params *p = j->p;
    double bias = 0;
    if (p->mask_kind) {
        if (c >= j->mlast) return -INFINITY;
        int64_t off = b * j->ms[0] + h * j->ms[1] + i * j->ms[2] + c * j->ms[3];
        if (p->mask_kind == 1) {
            if (!((const uint8_t *)j->mask->data)[off]) return -INFINITY;
        } else bias = ld(j->mask->dtype, j->mask->data, off);
    }
    if (p->is_causal && c > i + p->past_len) return -INFINITY;
    if (p->has_nonpad && c >= ((const int64_t *)j->np->data)[b]) return -INFINITY;
    return bias;
}

/* Run a FlexAttention modifier program on value x at (b, h, i, c). */
static double flex_eval(const netrun_flex_prog *pr, double x, int64_t b, int64_t h, int64_t i, int64_t c) {
    double r[NETRUN_FLEX_MAX_INSN + 1];
    const double ax[4] = {(double)b, (double)h, (double)i, (double)c};
    r[0] = x;
    for (int n = 0; n < pr->n_insn; n++) {
        const netrun_flex_insn *in = &pr->insn[n];
        double a = r[in->a], bb = r[in->b], v;
        switch (in->op) {
        case NETRUN_FLEX_CONST: v = in->k; break;
        case NETRUN_FLEX_AXIS: v = ax[(int)in->k & 3]; break;
        case NETRUN_FLEX_ADD: v = a + bb; break;
        case NETRUN_FLEX_SUB: v = a - bb; break;
        case NETRUN_FLEX_MUL: v = a * bb; break;
        case NETRUN_FLEX_DIV: v = a / bb; break;
        case NETRUN_FLEX_POW: v = pow(a, bb); break;
        case NETRUN_FLEX_MIN: v = a < bb ? a : bb; break;
        case NETRUN_FLEX_MAX: v = a > bb ? a : bb; break;
        case NETRUN_FLEX_GE: v = a >= bb; break;
        case NETRUN_FLEX_GT: v = a > bb; break;
        case NETRUN_FLEX_LE: v = a <= bb; break;
        case NETRUN_FLEX_LT: v = a < bb; break;
        case NETRUN_FLEX_EQ: v = a == bb; break;
        case NETRUN_FLEX_AND: v = a != 0 && bb != 0; break;
        case NETRUN_FLEX_OR: v = a != 0 || bb != 0; break;
        case NETRUN_FLEX_WHERE: v = a != 0 ? bb : r[in->c]; break;
        case NETRUN_FLEX_NEG: v = -a; break;
        case NETRUN_FLEX_ABS: v = fabs(a); break;
        case NETRUN_FLEX_TANH: v = tanh(a); break;
        case NETRUN_FLEX_EXP: v = exp(a); break;
        case NETRUN_FLEX_LOG: v = log(a); break;
        case NETRUN_FLEX_SQRT: v = sqrt(a); break;
        case NETRUN_FLEX_SIGMOID: v = 1.0 / (1.0 + exp(-a)); break;
        case NETRUN_FLEX_RELU: v = a > 0 ? a : 0; break;
        case NETRUN_FLEX_NOT: v = a == 0; break;
        case NETRUN_FLEX_TRUNC: v = trunc(a); break;
        case NETRUN_FLEX_RECIP: v = 1.0 / a; break;
        case NETRUN_FLEX_FLOOR: v = floor(a); break;
        case NETRUN_FLEX_CEIL: v = ceil(a); break;
        default: v = a; break; /* COPY */
        }
        r[in->dst] = v;
    }
    return r[pr->out_reg];
}

/* T: compute type. */
#define DEFINE_ATTN(S, T, GEMM, EXPF, TANHF, SQRTF)                                                             \
    static void attn_range_##S(void *arg, int64_t slot, int64_t t0, int64_t t1) {                               \
        const attn_job *j = arg;                                                                                \
        const netrun_attention_params *p = j->p;                                                                \
        const int64_t Hq = p->q_num_heads, Lq = p->q_len, Lt = p->total_len, Lp = p->past_len;                  \
        const int64_t E = p->head_size, Ev = p->v_head_size;                                                    \
        T *qb = (T *)j->ws + (size_t)slot * j->ws_elems;                                                        \
        T *kb = qb + Lq * E, *vb = kb + Lt * E, *sb = vb + Lt * Ev, *ob = sb + Lq * Lt;                         \
        const T sq = (T)SQRTF((T)p->scale);                                                                     \
        const netrun_dtype qt = j->q->dtype, kt = j->k->dtype, vt = j->v->dtype;                                \
        for (int64_t task = t0; task < t1; task++) {                                                            \
            int64_t b = task / Hq, h = task % Hq, hk = h / j->group;                                            \
            for (int64_t i = 0; i < Lq; i++) {                                                                  \
                int64_t base = b * j->qs[0] + h * j->qs[1] + i * j->qs[2];                                      \
                for (int64_t e = 0; e < E; e++) qb[i * E + e] = (T)ld(qt, j->q->data, base + e) * sq;           \
            }                                                                                                   \
            for (int64_t c = 0; c < Lt; c++) {                                                                  \
                if (c < Lp) {                                                                                   \
                    int64_t kb0 = ((b * p->kv_num_heads + hk) * Lp + c) * E;                                    \
                    int64_t vb0 = ((b * p->kv_num_heads + hk) * Lp + c) * Ev;                                   \
                    for (int64_t e = 0; e < E; e++) kb[c * E + e] = (T)ld(kt, j->pk->data, kb0 + e) * sq;       \
                    for (int64_t e = 0; e < Ev; e++) vb[c * Ev + e] = (T)ld(vt, j->pv->data, vb0 + e);          \
                } else {                                                                                        \
                    int64_t kb0 = b * j->ks[0] + hk * j->ks[1] + (c - Lp) * j->ks[2];                           \
                    int64_t vb0 = b * j->vs[0] + hk * j->vs[1] + (c - Lp) * j->vs[2];                           \
                    for (int64_t e = 0; e < E; e++) kb[c * E + e] = (T)ld(kt, j->k->data, kb0 + e) * sq;        \
                    for (int64_t e = 0; e < Ev; e++) vb[c * Ev + e] = (T)ld(vt, j->v->data, vb0 + e);           \
                }                                                                                               \
            }                                                                                                   \
            if (Lq && Lt) {                                                                                     \
                if (E) GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Lq, (int)Lt, (int)E, 1, qb, (int)E,   \
                            kb, (int)E, 0, sb, (int)Lt);                                                        \
                else for (int64_t x = 0; x < Lq * Lt; x++) sb[x] = 0;                                           \
            }                                                                                                   \
            const int mode = p->qk_matmul_output_mode;                                                          \
            int64_t qk0 = (b * Hq + h) * Lq * Lt;                                                               \
            for (int64_t i = 0; i < Lq; i++) {                                                                  \
                T *row = sb + i * Lt;                                                                           \
                T mx = -INFINITY;                                                                               \
                for (int64_t c = 0; c < Lt; c++) {                                                              \
                    T x = row[c];                                                                               \
                    if (j->qk && mode == 0) st(j->qk->dtype, j->qk->data, qk0 + i * Lt + c, x);                 \
                    if (p->softcap > 0) x = (T)p->softcap * TANHF(x / (T)p->softcap);                           \
                    if (j->qk && mode == 1) st(j->qk->dtype, j->qk->data, qk0 + i * Lt + c, x);                 \
                    if (!p->is_flex) x += (T)attn_bias(j, b, h, i, c);                                          \
                    else if (p->score_mod) x = (T)flex_eval(p->score_mod, x, b, h, i, c);                       \
                    if (j->qk && mode == 2) st(j->qk->dtype, j->qk->data, qk0 + i * Lt + c, x);                 \
                    row[c] = x;                                                                                 \
                    mx = x > mx ? x : mx;                                                                       \
                }                                                                                               \
                T sum = 0;                                                                                      \
                for (int64_t c = 0; c < Lt; c++) { row[c] = EXPF(row[c] - mx); sum += row[c]; }                 \
                T inv = (T)1 / sum;                                                                             \
                for (int64_t c = 0; c < Lt; c++) row[c] *= inv;                                                 \
                if (p->prob_mod)                                                                                \
                    for (int64_t c = 0; c < Lt; c++) row[c] = (T)flex_eval(p->prob_mod, row[c], b, h, i, c);    \
                if (j->qk && mode == 3)                                                                         \
                    for (int64_t c = 0; c < Lt; c++) st(j->qk->dtype, j->qk->data, qk0 + i * Lt + c, row[c]);   \
            }                                                                                                   \
            if (Lq && Ev) {                                                                                     \
                if (Lt) GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Lq, (int)Ev, (int)Lt, 1, sb,        \
                             (int)Lt, vb, (int)Ev, 0, ob, (int)Ev);                                             \
                else for (int64_t x = 0; x < Lq * Ev; x++) ob[x] = 0;                                           \
            }                                                                                                   \
            for (int64_t i = 0; i < Lq; i++) {                                                                  \
                int64_t base = b * j->ys[0] + h * j->ys[1] + i * j->ys[2];                                      \
                for (int64_t e = 0; e < Ev; e++) st(j->y->dtype, j->y->data, base + e, ob[i * Ev + e]);         \
            }                                                                                                   \
        }                                                                                                       \
    }

DEFINE_ATTN(f32, float, cblas_sgemm, cpu_expf, tanhf, sqrtf)
DEFINE_ATTN(f64, double, cblas_dgemm, exp, tanh, sqrt)

/* Softmax of one score row over its first lim entries. The AVX-512 form is flattened so that cpu_expf inlines and
 * the exponentials vectorize (in this file's baseline build it stays a scalar call per score); max and sum run in
 * 16 independent lanes so that they vectorize too (a scalar max loop was a third of the row's time). */
#define ATTN_SOFTMAX_ROW(NAME, ATTR)                                                                           \
    ATTR static void NAME(float *row, int64_t lim) {                                                          \
        float lane[16], mx = -INFINITY, sum = 0;                                                              \
        int64_t c = 0;                                                                                        \
        for (int l = 0; l < 16; l++) lane[l] = -INFINITY;                                                     \
        for (; c + 16 <= lim; c += 16)                                                                        \
            for (int l = 0; l < 16; l++) lane[l] = row[c + l] > lane[l] ? row[c + l] : lane[l];               \
        for (int l = 0; l < 16; l++) mx = lane[l] > mx ? lane[l] : mx;                                        \
        for (; c < lim; c++) mx = row[c] > mx ? row[c] : mx;                                                  \
        for (c = 0; c < lim; c++) row[c] = cpu_expf(row[c] - mx);                                             \
        for (int l = 0; l < 16; l++) lane[l] = 0;                                                             \
        for (c = 0; c + 16 <= lim; c += 16)                                                                   \
            for (int l = 0; l < 16; l++) lane[l] += row[c + l];                                               \
        for (int l = 0; l < 16; l++) sum += lane[l];                                                          \
        for (; c < lim; c++) sum += row[c];                                                                   \
        float inv = lim > 0 ? 1.0f / sum : NAN; /* a row with every key masked: NaN, as the general path */   \
        for (c = 0; c < lim; c++) row[c] *= inv;                                                              \
    }
ATTN_SOFTMAX_ROW(attn_softmax_row, )
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(CPU_HAVE_AVX512_MATH)
ATTN_SOFTMAX_ROW(attn_softmax_row_avx512, __attribute__((flatten, target("avx512f,avx512dq,avx512vl,fma"))))
#define ATTN_HAS_AVX512 1
/* Rows of 16 or more: Softmax's own AVX-512 row (cpu_internal.h; a row whose every key is masked comes out NaN, as
 * above). */
__attribute__((target("avx512f,avx512dq,avx512vl,fma"))) static void attn_softmax_row_x512(float *row, int64_t lim) {
    if (lim < 16) attn_softmax_row_avx512(row, lim);
    else cpu_softmax_row_ps512(row, row, lim, NULL);
}
#endif

/* Q K^T and P V of one head: oneDNN's sgemm where the backend has it, else OpenBLAS. With the vectorized rows
 * above: BERT-base at 1 thread, the 12 Attention nodes took 10-11% of the run with OpenBLAS and scalar
 * exponentials, 7% now (3 runs each on a loaded machine, netrun --profile). */
static void attn_sgemm(int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float *c, int64_t ldc) {
    if (!cpu_dnnl_sgemm(0, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc))
        cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a,
                    (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}

/* float32 fast path (no past, no padding lengths, no softcap, no qk output, float mask or none: what the graph
 * passes make of exported attention): the GEMMs read Q, K, V and write Y in place through their leading
 * dimensions (no gathers), the scale rides on alpha, and causal rows stop at the diagonal. Per slot only the
 * score block [Lq, Lt] is used. */
static void attn_range_fast(void *arg, int64_t slot, int64_t t0, int64_t t1) {
    const attn_job *j = arg;
    const netrun_attention_params *p = j->p;
    const int64_t Hq = p->q_num_heads, Lq = p->q_len, Lt = p->total_len, E = p->head_size, Ev = p->v_head_size;
    float *sb = (float *)j->ws + (size_t)slot * j->ws_elems;
    const float *Q = j->q->data, *K = j->k->data, *V = j->v->data;
    const float *M = j->mask ? j->mask->data : NULL;
    float *Y = j->y->data;
    for (int64_t task = t0; task < t1; task++) {
        int64_t b = task / Hq, h = task % Hq, hk = h / j->group;
        const float *qp = Q + b * j->qs[0] + h * j->qs[1], *kp = K + b * j->ks[0] + hk * j->ks[1];
        const float *vp = V + b * j->vs[0] + hk * j->vs[1];
        float *yp = Y + b * j->ys[0] + h * j->ys[1];
        if (E) attn_sgemm(1, Lq, Lt, E, p->scale, qp, j->qs[2], kp, j->ks[2], sb, Lt);
        else memset(sb, 0, (size_t)(Lq * Lt) * sizeof(float));
        for (int64_t i = 0; i < Lq; i++) {
            float *row = sb + i * Lt;
            int64_t lim = Lt;
            if (M && j->mlast < lim) lim = j->mlast;
            if (p->is_causal && i + 1 < lim) lim = i + 1;
            if (M) {
                const float *mr = M + b * j->ms[0] + h * j->ms[1] + i * j->ms[2];
                if (j->ms[3]) for (int64_t c = 0; c < lim; c++) row[c] += mr[c];
                else for (int64_t c = 0; c < lim; c++) row[c] += mr[0];
            }
#ifdef ATTN_HAS_AVX512
            if (cpu_has_avx512f())
                attn_softmax_row_x512(row, lim);
            else
#endif
                attn_softmax_row(row, lim);
            for (int64_t c = lim; c < Lt; c++) row[c] = lim > 0 ? 0.0f : NAN;
        }
        if (Ev) {
            if (Lt) attn_sgemm(0, Lq, Ev, Lt, 1.0f, sb, Lt, vp, j->vs[2], yp, j->ys[2]);
            else for (int64_t i = 0; i < Lq; i++) memset(yp + i * j->ys[2], 0, (size_t)Ev * sizeof(float));
        }
    }
}

/* present_key/value = concat(past, new) along the sequence, in the 4-D layout. */
static void attn_present(const attn_job *j) {
    const netrun_attention_params *p = j->p;
    const int64_t Hk = p->kv_num_heads, Lt = p->total_len, Lp = p->past_len;
    for (int w = 0; w < 2; w++) {
        netrun_tensor *out = w ? j->prv : j->prk;
        if (!out || !out->data) continue;
        const netrun_tensor *past = w ? j->pv : j->pk, *cur = w ? j->v : j->k;
        const int64_t *cs = w ? j->vs : j->ks;
        int64_t E = w ? p->v_head_size : p->head_size;
        size_t es = cpu_esize(out->dtype);
        for (int64_t b = 0; b < p->batch; b++)
            for (int64_t h = 0; h < Hk; h++)
                for (int64_t c = 0; c < Lt; c++) {
                    char *dst = (char *)out->data + (size_t)(((b * Hk + h) * Lt + c) * E) * es;
                    const char *src = c < Lp ? (const char *)past->data + (size_t)(((b * Hk + h) * Lp + c) * E) * es
                                             : (const char *)cur->data +
                                                   (size_t)(b * cs[0] + h * cs[1] + (c - Lp) * cs[2]) * es;
                    memcpy(dst, src, (size_t)E * es);
                }
    }
}

static netrun_status attn_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_attention_params *p = args->params;
    if (!p || args->n_inputs < 3 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Attention: missing params or inputs");
    attn_job j;
    memset(&j, 0, sizeof j);
    j.p = p;
    j.q = &args->inputs[0];
    j.k = &args->inputs[1];
    j.v = &args->inputs[2];
#define OPT_IN(i) (args->n_inputs > (i) && args->inputs[i].rank >= 0 ? &args->inputs[i] : NULL)
#define OPT_OUT(i) (args->n_outputs > (i) && args->outputs[i].rank >= 0 && args->outputs[i].data ? &args->outputs[i] : NULL)
    j.mask = p->mask_kind ? OPT_IN(3) : NULL;
    j.pk = p->has_past ? OPT_IN(4) : NULL;
    j.pv = p->has_past ? OPT_IN(5) : NULL;
    j.np = p->has_nonpad ? OPT_IN(6) : NULL;
    j.y = &args->outputs[0];
    j.prk = OPT_OUT(1);
    j.prv = OPT_OUT(2);
    j.qk = OPT_OUT(3);
    if ((p->mask_kind && !j.mask) || (p->has_past && (!j.pk || !j.pv)) || (p->has_nonpad && !j.np))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Attention: optional inputs do not match params");
    const netrun_tensor *ts[3] = {j.q, j.k, j.v};
    for (int i = 0; i < 3; i++)
        if (!is_float_dtype(ts[i]->dtype))
            return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu Attention: input %d dtype %d not supported", i,
                                   (int)ts[i]->dtype);
    /* the params were inferred for these shapes: re-check what the indexing relies on */
    int64_t lead = p->input_3d ? 3 : 4;
    if (j.q->rank != lead || j.k->rank != lead || j.v->rank != lead || j.q->dims[0] != p->batch ||
        (p->input_3d ? j.q->dims[1] != p->q_len || j.k->dims[1] != p->kv_len || j.v->dims[1] != p->kv_len
                     : j.q->dims[2] != p->q_len || j.k->dims[2] != p->kv_len || j.v->dims[2] != p->kv_len))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Attention: input shapes differ from the inferred ones");
    int64_t Hq = p->q_num_heads, Hk = p->kv_num_heads;
    if (Hk < 1 || Hq % Hk) return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Attention: bad head counts");
    j.group = Hq / Hk;
    layout_strides(p->input_3d, Hq, p->q_len, p->head_size, j.qs);
    layout_strides(p->input_3d, Hk, p->kv_len, p->head_size, j.ks);
    layout_strides(p->input_3d, Hk, p->kv_len, p->v_head_size, j.vs);
    layout_strides(p->input_3d, Hq, p->q_len, p->v_head_size, j.ys);
    if (j.mask) {
        int64_t od[4] = {p->batch, Hq, p->q_len, j.mask->dims[j.mask->rank - 1]};
        cpu_broadcast_strides(j.mask->rank, j.mask->dims, 4, od, j.ms);
        j.mlast = od[3];
        if (j.mask->dims[j.mask->rank - 1] > 1 && j.ms[3] != 1)
            return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Attention: unexpected mask layout");
    }
    if (j.qk && !is_float_dtype(j.qk->dtype))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Attention: bad qk_matmul_output dtype");
    j.dbl = j.q->dtype == NETRUN_DTYPE_DOUBLE;
    int64_t Lq = p->q_len, Lt = p->total_len, E = p->head_size, Ev = p->v_head_size;
    int64_t per = 0, parts[5] = {mul_chk(Lq, E), mul_chk(Lt, E), mul_chk(Lt, Ev), mul_chk(Lq, Lt), mul_chk(Lq, Ev)};
    for (int i = 0; i < 5; i++) {
        if (parts[i] < 0 || per > INT64_MAX / 4 - parts[i])
            return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu Attention: workspace size overflows");
        per += parts[i];
    }
    if (Lq > INT32_MAX || Lt > INT32_MAX || E > INT32_MAX || Ev > INT32_MAX)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu Attention: dimensions exceed the BLAS int range");
    attn_present(&j);
    int64_t tasks = p->batch * Hq;
    if (tasks <= 0) return NETRUN_OK;
    int fast = j.q->dtype == NETRUN_DTYPE_FLOAT && j.k->dtype == NETRUN_DTYPE_FLOAT && j.v->dtype == NETRUN_DTYPE_FLOAT &&
               j.y->dtype == NETRUN_DTYPE_FLOAT && !p->is_flex && !j.qk && !(p->softcap > 0) && !p->has_past &&
               !p->has_nonpad && p->past_len == 0 && p->softmax_precision != 11 &&
               (!j.mask || (p->mask_kind == 2 && j.mask->dtype == NETRUN_DTYPE_FLOAT)) &&
               j.qs[2] <= INT32_MAX && j.ks[2] <= INT32_MAX && j.vs[2] <= INT32_MAX && j.ys[2] <= INT32_MAX;
    if (fast) per = Lq * Lt;
    int64_t slots = gu_slots(ctx, tasks);
    size_t esz = j.dbl ? sizeof(double) : sizeof(float);
    if ((uint64_t)per > SIZE_MAX / esz / (uint64_t)slots)
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu Attention: workspace size overflows");
    j.ws_elems = (size_t)per;
    j.ws = cpu_alloc((size_t)per * esz * (size_t)slots);
    if (!j.ws) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu Attention: out of memory for the workspace");
    gu_blas_single_thread();
    gu_run_slots(ctx, tasks, slots, fast ? attn_range_fast : j.dbl ? attn_range_f64 : attn_range_f32, &j);
    cpu_free(j.ws);
    return NETRUN_OK;
}

/* ================================ RMSNormalization ================================ */

typedef struct rms_job {
    const netrun_tensor *x, *w;
    netrun_tensor *y;
    int64_t inner;
    int w_contig;                      /* scale is indexed by the position inside the normalized block */
    int64_t wst[NETRUN_MAX_RANK];      /* else: broadcast strides of scale over X */
    float eps;
} rms_job;

static inline int64_t rms_woff(const rms_job *j, int64_t flat) {
    int64_t off = 0;
    for (int d = j->x->rank - 1; d >= 0; d--) {
        int64_t n = j->x->dims[d];
        off += (flat % n) * j->wst[d];
        flat /= n;
    }
    return off;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NETRUN_NO_CLONES)
#define RMS_SIMD __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define RMS_SIMD
#endif

/* One float32 row with a float32 scale of the row's length (the graph pass's T5 / LLaMA RMSNorm): 16 independent
 * partial sums so that the loops vectorize without -ffast-math; y = (x * (1 / sqrt(mean + eps))) * w, the
 * exported graph's order of operations. */
RMS_SIMD static void rms_row_f32(const float *x, const float *w, float *y, int64_t n, float eps) {
    float a[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) a[l] += x[i + l] * x[i + l];
    float s = 0;
    for (; i < n; i++) s += x[i] * x[i];
    for (int l = 0; l < 16; l++) s += a[l];
    const float inv = 1.0f / sqrtf(s / (float)n + eps);
    for (i = 0; i < n; i++) y[i] = x[i] * inv * w[i];
}

static void rms_rows(void *arg, int64_t r0, int64_t r1) {
    const rms_job *j = arg;
    const int64_t n = j->inner;
    netrun_dtype xt = j->x->dtype, wt = j->w->dtype, yt = j->y->dtype;
    for (int64_t r = r0; r < r1; r++) {
        int64_t base = r * n;
        if (xt == NETRUN_DTYPE_DOUBLE || wt == NETRUN_DTYPE_DOUBLE) {
            double s = 0;
            for (int64_t i = 0; i < n; i++) { double v = ld(xt, j->x->data, base + i); s += v * v; }
            double inv = 1.0 / sqrt(s / (double)n + (double)j->eps);
            for (int64_t i = 0; i < n; i++) {
                double w = ld(wt, j->w->data, j->w_contig ? i : rms_woff(j, base + i));
                st(yt, j->y->data, base + i, ld(xt, j->x->data, base + i) * inv * w);
            }
        } else if (xt == NETRUN_DTYPE_FLOAT && wt == NETRUN_DTYPE_FLOAT && j->w_contig) {
            rms_row_f32((const float *)j->x->data + base, j->w->data, (float *)j->y->data + base, n, j->eps);
        } else {
            float s = 0;
            for (int64_t i = 0; i < n; i++) { float v = (float)ld(xt, j->x->data, base + i); s += v * v; }
            float inv = 1.0f / sqrtf(s / (float)n + j->eps);
            for (int64_t i = 0; i < n; i++) {
                float w = (float)ld(wt, j->w->data, j->w_contig ? i : rms_woff(j, base + i));
                st(yt, j->y->data, base + i, (float)ld(xt, j->x->data, base + i) * inv * w);
            }
        }
    }
}

static netrun_status rms_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_norm_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *w = &args->inputs[1];
    if (!p || p->axis < 0 || p->axis >= x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu RMSNormalization: bad params (axis)");
    if (!is_float_dtype(x->dtype) || !is_float_dtype(w->dtype) || w->rank > x->rank)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu RMSNormalization: unsupported dtypes or scale rank");
    rms_job j = {.x = x, .w = w, .y = &args->outputs[0], .eps = p->epsilon};
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < p->axis; i++) outer *= x->dims[i];
    for (int i = p->axis; i < x->rank; i++) inner *= x->dims[i];
    j.inner = inner;
    cpu_broadcast_strides(w->rank, w->dims, x->rank, x->dims, j.wst);
    /* scale equal to X.shape[axis:] (leading 1s allowed): index = position in the block */
    j.w_contig = cpu_count(w) == inner;
    for (int i = 0; i < p->axis && j.w_contig; i++)
        if (j.wst[i] != 0) j.w_contig = 0;
    if (outer * inner == 0) return NETRUN_OK;
    int64_t grain = 16384 / (inner ? inner : 1);
    cpu_parallel_for(ctx, outer, grain > 0 ? grain : 1, rms_rows, &j);
    return NETRUN_OK;
}

/* ================================ RotaryEmbedding ================================ */

typedef struct rope_job {
    const netrun_rotary_params *p;
    const netrun_tensor *x, *cs, *sn, *pid;
    netrun_tensor *y;
    int64_t max_pos;
    int bad_pos;                       /* set by a task that met an out-of-range position id */
} rope_job;

static void rope_rows(void *arg, int64_t r0, int64_t r1) {
    rope_job *j = arg;
    const netrun_rotary_params *p = j->p;
    const int64_t H = p->num_heads, S = p->seq_len, D = p->head_size, half = p->rotary_dim / 2;
    netrun_dtype t = j->x->dtype;
    for (int64_t r = r0; r < r1; r++) { /* r = (b, s, h) */
        int64_t b = r / (S * H), s = (r / H) % S, h = r % H;
        int64_t base = p->input_3d ? (b * S + s) * H * D + h * D : ((b * H + h) * S + s) * D;
        int64_t cb;
        if (j->pid) {
            int64_t pos = j->pid->dtype == NETRUN_DTYPE_INT64 ? ((const int64_t *)j->pid->data)[b * S + s]
                                                              : ((const int32_t *)j->pid->data)[b * S + s];
            if (pos < 0 || pos >= j->max_pos) { j->bad_pos = 1; continue; }
            cb = pos * half;
        } else cb = (b * S + s) * half;
        for (int64_t k = 0; k < half; k++) {
            float c = (float)ld(t, j->cs->data, cb + k), sv = (float)ld(t, j->sn->data, cb + k);
            int64_t i1 = p->interleaved ? 2 * k : k, i2 = p->interleaved ? 2 * k + 1 : k + half;
            float x1 = (float)ld(t, j->x->data, base + i1), x2 = (float)ld(t, j->x->data, base + i2);
            st(t, j->y->data, base + i1, c * x1 - sv * x2);
            st(t, j->y->data, base + i2, sv * x1 + c * x2);
        }
        size_t es = cpu_esize(t);
        if (D > 2 * half)
            memcpy((char *)j->y->data + (size_t)(base + 2 * half) * es, (const char *)j->x->data + (size_t)(base + 2 * half) * es,
                   (size_t)(D - 2 * half) * es);
    }
}

static netrun_status rope_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_rotary_params *p = args->params;
    if (!p || args->n_inputs < 3) return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu RotaryEmbedding: bad params");
    rope_job j = {.p = p, .x = &args->inputs[0], .cs = &args->inputs[1], .sn = &args->inputs[2], .y = &args->outputs[0]};
    if (!cpu_esize(j.x->dtype) || !is_float_dtype(j.x->dtype) || j.x->dtype == NETRUN_DTYPE_DOUBLE)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu RotaryEmbedding: dtype %d not supported", (int)j.x->dtype);
    if (p->has_position_ids) {
        if (args->n_inputs < 4 || args->inputs[3].rank != 2)
            return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu RotaryEmbedding: position_ids missing");
        j.pid = &args->inputs[3];
        j.max_pos = j.cs->dims[0];
    }
    int64_t rows = p->batch * p->seq_len * p->num_heads;
    if (rows <= 0) return NETRUN_OK;
    int64_t grain = 8192 / (p->head_size ? p->head_size : 1);
    cpu_parallel_for(ctx, rows, grain > 0 ? grain : 1, rope_rows, &j);
    if (j.bad_pos)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "RotaryEmbedding: a position id is outside [0, %lld)",
                               (long long)j.max_pos);
    return NETRUN_OK;
}

/* ================================ LinearAttention ================================ */

typedef struct la_job {
    const netrun_linear_attention_params *p;
    const netrun_tensor *q, *k, *v, *past, *decay, *beta;
    netrun_tensor *y, *state;
    float *ws;                         /* per slot: state [dk*dv] + vt [dv] + kt [dk] */
    size_t ws_elems;
} la_job;

static void la_range(void *arg, int64_t slot, int64_t t0, int64_t t1) {
    const la_job *j = arg;
    const netrun_linear_attention_params *p = j->p;
    const int64_t Hq = p->q_num_heads, Hk = p->kv_num_heads, T = p->seq_len, dk = p->d_k, dv = p->d_v;
    const int64_t g = Hq / Hk;
    float *S = j->ws + (size_t)slot * j->ws_elems, *vt = S + dk * dv, *kt = vt + dv;
    netrun_dtype dt = j->q->dtype;
    for (int64_t task = t0; task < t1; task++) {
        int64_t b = task / Hk, h = task % Hk;
        if (j->past)
            for (int64_t x = 0; x < dk * dv; x++) S[x] = (float)ld(j->past->dtype, j->past->data, task * dk * dv + x);
        else
            for (int64_t x = 0; x < dk * dv; x++) S[x] = 0;
        for (int64_t t = 0; t < T; t++) {
            int64_t kb = (b * T + t) * Hk * dk + h * dk, vb = (b * T + t) * Hk * dv + h * dv;
            for (int64_t d = 0; d < dk; d++) kt[d] = (float)ld(dt, j->k->data, kb + d);
            for (int64_t m = 0; m < dv; m++) vt[m] = (float)ld(dt, j->v->data, vb + m);
            if (p->gating) {
                if (p->decay_per_key) {
                    for (int64_t d = 0; d < dk; d++) {
                        float e = expf((float)ld(dt, j->decay->data, kb + d));
                        for (int64_t m = 0; m < dv; m++) S[d * dv + m] *= e;
                    }
                } else {
                    float e = expf((float)ld(dt, j->decay->data, (b * T + t) * Hk + h));
                    for (int64_t x = 0; x < dk * dv; x++) S[x] *= e;
                }
            }
            if (p->delta) {
                float bt = (float)ld(dt, j->beta->data, (b * T + t) * p->beta_heads + (p->beta_heads == 1 ? 0 : h));
                for (int64_t m = 0; m < dv; m++) {
                    float r = 0;
                    for (int64_t d = 0; d < dk; d++) r += S[d * dv + m] * kt[d];
                    vt[m] = bt * (vt[m] - r);
                }
            }
            for (int64_t d = 0; d < dk; d++)
                for (int64_t m = 0; m < dv; m++) S[d * dv + m] += kt[d] * vt[m];
            for (int64_t hq = h * g; hq < (h + 1) * g; hq++) {
                int64_t qb = (b * T + t) * Hq * dk + hq * dk, yb = (b * T + t) * Hq * dv + hq * dv;
                for (int64_t m = 0; m < dv; m++) {
                    float o = 0;
                    for (int64_t d = 0; d < dk; d++) o += (float)ld(dt, j->q->data, qb + d) * S[d * dv + m];
                    st(j->y->dtype, j->y->data, yb + m, p->scale * o);
                }
            }
        }
        if (j->state && j->state->data)
            for (int64_t x = 0; x < dk * dv; x++) st(j->state->dtype, j->state->data, task * dk * dv + x, S[x]);
    }
}

static netrun_status la_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_linear_attention_params *p = args->params;
    if (!p || args->n_inputs < 3) return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu LinearAttention: bad params");
    la_job j = {.p = p, .q = &args->inputs[0], .k = &args->inputs[1], .v = &args->inputs[2], .y = &args->outputs[0]};
    j.past = p->has_past ? OPT_IN(3) : NULL;
    j.decay = p->gating ? OPT_IN(4) : NULL;
    j.beta = p->delta ? OPT_IN(5) : NULL;
    j.state = OPT_OUT(1);
    if ((p->has_past && !j.past) || (p->gating && !j.decay) || (p->delta && !j.beta))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu LinearAttention: optional inputs do not match params");
    if (j.q->rank != 3 || j.q->dims[0] != p->batch || j.q->dims[1] != p->seq_len || p->kv_num_heads < 1)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu LinearAttention: input shapes differ from the inferred ones");
    int64_t tasks = p->batch * p->kv_num_heads;
    if (tasks <= 0) return NETRUN_OK;
    int64_t per = mul_chk(p->d_k, p->d_v);
    if (per < 0 || per > INT64_MAX / 8 - p->d_k - p->d_v)
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu LinearAttention: state size overflows");
    per += p->d_k + p->d_v;
    int64_t slots = gu_slots(ctx, tasks);
    if ((uint64_t)per > SIZE_MAX / sizeof(float) / (uint64_t)slots)
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu LinearAttention: state size overflows");
    j.ws_elems = (size_t)per;
    j.ws = cpu_alloc((size_t)per * sizeof(float) * (size_t)slots);
    if (!j.ws) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu LinearAttention: out of memory");
    gu_run_slots(ctx, tasks, slots, la_range, &j);
    cpu_free(j.ws);
    return NETRUN_OK;
}

/* ================================ CausalConvWithState ================================ */

typedef struct cc_job {
    const netrun_causal_conv_params *p;
    const netrun_tensor *x, *w, *bias, *past;
    netrun_tensor *y, *state;
} cc_job;

/* Element c of the padded row [past or zeros (k-1), x] of (b, ch). */
static inline float cc_pad(const cc_job *j, int64_t b, int64_t ch, int64_t c) {
    const netrun_causal_conv_params *p = j->p;
    int64_t K1 = p->kernel - 1;
    if (c >= K1) return (float)ld(j->x->dtype, j->x->data, (b * p->channels + ch) * p->length + c - K1);
    return j->past ? (float)ld(j->past->dtype, j->past->data, (b * p->channels + ch) * K1 + c) : 0.0f;
}

static void cc_rows(void *arg, int64_t r0, int64_t r1) {
    const cc_job *j = arg;
    const netrun_causal_conv_params *p = j->p;
    const int64_t C = p->channels, L = p->length, K = p->kernel;
    netrun_dtype t = j->x->dtype;
    for (int64_t r = r0; r < r1; r++) {
        int64_t b = r / C, ch = r % C;
        float bias = j->bias ? (float)ld(t, j->bias->data, ch) : 0.0f;
        for (int64_t o = 0; o < L; o++) {
            float acc = bias;
            for (int64_t k = 0; k < K; k++) acc += (float)ld(t, j->w->data, ch * K + k) * cc_pad(j, b, ch, o + k);
            if (p->silu) {
                acc = round_to(t, acc); /* the reference rounds the conv output to the input type first */
                acc = acc / (1.0f + expf(-acc));
            }
            st(t, j->y->data, r * L + o, acc);
        }
        if (j->state && j->state->data)
            for (int64_t c = 0; c < K - 1; c++) /* the last k-1 positions of the padded row */
                st(t, j->state->data, r * (K - 1) + c, cc_pad(j, b, ch, L + c));
    }
}

static netrun_status cc_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_causal_conv_params *p = args->params;
    if (!p || args->n_inputs < 2) return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu CausalConvWithState: bad params");
    cc_job j = {.p = p, .x = &args->inputs[0], .w = &args->inputs[1], .y = &args->outputs[0]};
    j.bias = p->has_bias ? OPT_IN(2) : NULL;
    j.past = p->has_past ? OPT_IN(3) : NULL;
    j.state = OPT_OUT(1);
    if ((p->has_bias && !j.bias) || (p->has_past && !j.past) || j.x->rank != 3 || j.x->dims[0] != p->batch ||
        j.x->dims[1] != p->channels || j.x->dims[2] != p->length || p->kernel < 1)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu CausalConvWithState: inputs differ from the inferred ones");
    int64_t rows = p->batch * p->channels;
    if (rows <= 0) return NETRUN_OK;
    int64_t work = p->length * p->kernel;
    int64_t grain = 16384 / (work ? work : 1);
    cpu_parallel_for(ctx, rows, grain > 0 ? grain : 1, cc_rows, &j);
    return NETRUN_OK;
}

static int flex_supports(const netrun_node_desc *node, char *reason, size_t reason_size) {
    const netrun_attention_params *p = node->params;
    if (p && p->mod_error[0]) {
        snprintf(reason, reason_size, "%s", p->mod_error);
        return 0;
    }
    if (node->n_inputs < 1 || !is_float_dtype(node->inputs[0].dtype)) {
        snprintf(reason, reason_size, "dtype not supported");
        return 0;
    }
    return 1;
}

#define DT_ALL (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE))
#define DT_HALF (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                 NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))

const cpu_op cpu_ops_transformer[] = {
    {"Attention", NULL, DT_ALL, "3-D or 4-D; GQA; bool/float masks; past/present; softcap; qk output modes 0-3",
     NULL, NULL, attn_run, NULL},
    {"FlexAttention", "ai.onnx.preview", DT_ALL, "score_mod/prob_mod: elementwise ops and index ranges only", flex_supports, NULL, attn_run, NULL},
    {"RMSNormalization", NULL, DT_ALL, "", NULL, NULL, rms_run, NULL},
    {"RotaryEmbedding", NULL, DT_HALF, "", NULL, NULL, rope_run, NULL},
    {"LinearAttention", NULL, DT_HALF, "computed in float", NULL, NULL, la_run, NULL},
    {"CausalConvWithState", NULL, DT_HALF, "", NULL, NULL, cc_run, NULL},
    {0},
};
