/* CPU kernels: loss and small math ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Einsum, Det, SwiGLU;
 * Swish is an elementwise.c loop). Floating-point work is done in double (float16/bfloat16 loaded and stored through float), integer
 * Einsum accumulates in int64 with wrap-around like the narrower type. */
#include <math.h>
#include <stdio.h>

#include "cpu_internal.h"

static inline double ldf(netrun_dtype dt, const void *b, int64_t i) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)b)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)b)[i];
    case NETRUN_DTYPE_FLOAT16: return cpu_half_to_float(((const uint16_t *)b)[i]);
    case NETRUN_DTYPE_BFLOAT16: return cpu_bf16_to_float(((const uint16_t *)b)[i]);
    default: return 0.0;
    }
}

static inline void stf(netrun_dtype dt, void *b, int64_t i, double v) {
    switch (dt) {
    case NETRUN_DTYPE_FLOAT: ((float *)b)[i] = (float)v; break;
    case NETRUN_DTYPE_DOUBLE: ((double *)b)[i] = v; break;
    case NETRUN_DTYPE_FLOAT16: ((uint16_t *)b)[i] = cpu_float_to_half((float)v); break;
    case NETRUN_DTYPE_BFLOAT16: ((uint16_t *)b)[i] = cpu_float_to_bf16((float)v); break;
    default: break;
    }
}

static inline int64_t ldi(netrun_dtype dt, const void *b, int64_t i) {
    return dt == NETRUN_DTYPE_INT32 ? ((const int32_t *)b)[i] : ((const int64_t *)b)[i];
}

static int is_float_dtype(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_DOUBLE || t == NETRUN_DTYPE_FLOAT16 ||
           t == NETRUN_DTYPE_BFLOAT16;
}

#define FLOAT_DTYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                      NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE))

/* ---------------- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ----------------
 * The scores are seen as [N, C, D] and the labels as [N, D]. loss[n, d] = -weight[t] * logp[n, t, d] with
 * t = label[n, d], 0 where t == ignore_index; "mean" divides the sum by the sum of the weights used. */

/* logp: host pointer to [N, C, D] values read with the dtype `ldt` (double scratch for SCE). */
static netrun_status loss_reduce(const char *op, const netrun_loss_params *p, netrun_dtype ldt, const void *logp,
                                 int64_t N, int64_t C, int64_t D, const netrun_tensor *T, const netrun_tensor *W,
                                 netrun_tensor *Y) {
    double sum = 0, wsum = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            int64_t i = n * D + d, t = ldi(T->dtype, T->data, i);
            double l = 0, w = 0;
            if (!(p->has_ignore_index && t == p->ignore_index)) {
                if (t < 0 || t >= C)
                    return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                                           "%s: label %lld at flat index %lld is outside [0, %lld) and is not "
                                           "ignore_index", op, (long long)t, (long long)i, (long long)C);
                w = W ? ldf(W->dtype, W->data, t) : 1.0;
                l = -w * ldf(ldt, logp, (n * C + t) * D + d);
            }
            if (p->reduction == NETRUN_LOSS_NONE) stf(Y->dtype, Y->data, i, l);
            sum += l;
            wsum += w;
        }
    if (p->reduction == NETRUN_LOSS_SUM) stf(Y->dtype, Y->data, 0, sum);
    else if (p->reduction == NETRUN_LOSS_MEAN) stf(Y->dtype, Y->data, 0, sum / wsum); /* 0/0 = NaN, like ORT */
    return NETRUN_OK;
}

static netrun_status loss_run(const netrun_kernel_args *args, int softmax) {
    const char *op = softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
    const netrun_loss_params *p = args->params;
    if (!p || args->n_inputs < 2 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: needs params, scores and labels", op);
    const netrun_tensor *X = &args->inputs[0], *T = &args->inputs[1];
    const netrun_tensor *W = args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    netrun_tensor *Y = &args->outputs[0];
    netrun_tensor *LP = softmax && args->n_outputs > 1 && args->outputs[1].rank >= 0 ? &args->outputs[1] : NULL;
    if (X->rank < 2 || T->rank != X->rank - 1 || !is_float_dtype(X->dtype) ||
        (T->dtype != NETRUN_DTYPE_INT32 && T->dtype != NETRUN_DTYPE_INT64))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: unexpected shapes or dtypes", op);
    int64_t N = X->dims[0], C = X->dims[1], D = 1;
    for (int i = 2; i < X->rank; i++) D *= X->dims[i];
    if (W && cpu_count(W) != C) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: weight needs C values", op);
    if (!softmax) return loss_reduce(op, p, X->dtype, X->data, N, C, D, T, W, Y);
    /* log-softmax over C, in double scratch */
    int64_t total = N * C * D;
    if (total < 0 || (uint64_t)total > SIZE_MAX / sizeof(double))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: scores too large", op);
    double *lp = cpu_alloc((size_t)total * sizeof(double));
    if (!lp) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory (%lld scores)", op, (long long)total);
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            int64_t base = n * C * D + d;
            double mx = -INFINITY, s = 0;
            for (int64_t k = 0; k < C; k++) {
                double v = ldf(X->dtype, X->data, base + k * D);
                lp[base + k * D] = v;
                if (v > mx) mx = v;
            }
            for (int64_t k = 0; k < C; k++) s += exp(lp[base + k * D] - mx);
            double sub = mx + log(s);
            for (int64_t k = 0; k < C; k++) lp[base + k * D] -= sub;
        }
    if (LP)
        for (int64_t i = 0; i < total; i++) stf(LP->dtype, LP->data, i, lp[i]);
    netrun_status rc = loss_reduce(op, p, NETRUN_DTYPE_DOUBLE, lp, N, C, D, T, W, Y);
    cpu_free(lp);
    return rc;
}

static netrun_status run_nll(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    return loss_run(args, 0);
}
static netrun_status run_sce(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    return loss_run(args, 1);
}

static int loss_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs < 2 || !is_float_dtype(node->inputs[0].dtype) ||
        (node->inputs[1].dtype != NETRUN_DTYPE_INT32 && node->inputs[1].dtype != NETRUN_DTYPE_INT64) ||
        (node->n_inputs > 2 && node->inputs[2].rank >= 0 && node->inputs[2].dtype != node->inputs[0].dtype)) {
        snprintf(reason, size, "%s: scores float/float16/bfloat16/double, labels int32/int64", node->op_type);
        return 0;
    }
    return 1;
}

/* ---------------- Einsum: for each output element, sum over the summed labels of the operands' product ---- */

typedef struct einsum_job {
    const netrun_einsum_params *p;
    netrun_dtype dt;
    const void *in[NETRUN_EINSUM_MAX_INPUTS];
    void *y;
    int64_t stride[NETRUN_EINSUM_MAX_INPUTS][NETRUN_EINSUM_MAX_LABELS]; /* per operand and label (0: absent or broadcast) */
    int n_sum;                       /* summed labels are ids out_rank .. out_rank + n_sum - 1 */
    int64_t n_sum_total;             /* product of their sizes */
} einsum_job;

static inline int64_t wrap_i32(int64_t v) { return (int64_t)(int32_t)(uint32_t)(uint64_t)v; }

static void einsum_range(void *arg, int64_t o0, int64_t o1) {
    const einsum_job *j = arg;
    const netrun_einsum_params *p = j->p;
    int ni = p->n_inputs, orank = p->out_rank;
    int is_int = j->dt == NETRUN_DTYPE_INT32 || j->dt == NETRUN_DTYPE_INT64;
    for (int64_t o = o0; o < o1; o++) {
        int64_t base[NETRUN_EINSUM_MAX_INPUTS] = {0}, rem = o;
        for (int d = orank - 1; d >= 0; d--) {
            int64_t sz = p->label_dim[d], v = rem % sz;
            rem /= sz;
            for (int i = 0; i < ni; i++) base[i] += v * j->stride[i][d];
        }
        int64_t idx[NETRUN_EINSUM_MAX_LABELS] = {0}, off[NETRUN_EINSUM_MAX_INPUTS];
        for (int i = 0; i < ni; i++) off[i] = base[i];
        double acc = 0;
        int64_t iacc = 0;
        for (int64_t s = 0; s < j->n_sum_total; s++) {
            if (is_int) {
                int64_t prod = 1;
                for (int i = 0; i < ni; i++) prod = (int64_t)((uint64_t)prod * (uint64_t)ldi(j->dt, j->in[i], off[i]));
                iacc = (int64_t)((uint64_t)iacc + (uint64_t)prod);
            } else {
                double prod = 1;
                for (int i = 0; i < ni; i++) prod *= ldf(j->dt, j->in[i], off[i]);
                acc += prod;
            }
            /* odometer over the summed labels, updating offsets incrementally */
            for (int k = j->n_sum - 1; k >= 0; k--) {
                int l = orank + k;
                if (++idx[k] < p->label_dim[l]) {
                    for (int i = 0; i < ni; i++) off[i] += j->stride[i][l];
                    break;
                }
                for (int i = 0; i < ni; i++) off[i] -= (p->label_dim[l] - 1) * j->stride[i][l];
                idx[k] = 0;
            }
        }
        if (j->dt == NETRUN_DTYPE_INT32) ((int32_t *)j->y)[o] = (int32_t)wrap_i32(iacc);
        else if (j->dt == NETRUN_DTYPE_INT64) ((int64_t *)j->y)[o] = iacc;
        else stf(j->dt, j->y, o, acc);
    }
}

static netrun_status run_einsum(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_einsum_params *p = args->params;
    if (!p || p->n_inputs != args->n_inputs || p->n_inputs < 1 || p->n_inputs > NETRUN_EINSUM_MAX_INPUTS ||
        p->n_labels > NETRUN_EINSUM_MAX_LABELS || p->out_rank > p->n_labels)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "Einsum: bad params");
    einsum_job *j = cpu_alloc(sizeof *j);
    if (!j) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Einsum: out of memory");
    memset(j, 0, sizeof *j);
    j->p = p;
    j->dt = args->inputs[0].dtype;
    j->y = args->outputs[0].data;
    for (int i = 0; i < p->n_inputs; i++) {
        const netrun_tensor *t = &args->inputs[i];
        if (t->rank != p->in_rank[i] || t->dtype != j->dt) {
            cpu_free(j);
            return cpu_host->error(NETRUN_ERR_INTERNAL, "Einsum: input %d does not match params", i);
        }
        j->in[i] = t->data;
        int64_t st = 1;
        for (int d = t->rank - 1; d >= 0; d--) {
            int l = p->in_label[i][d];
            if (l < 0 || l >= p->n_labels) {
                cpu_free(j);
                return cpu_host->error(NETRUN_ERR_INTERNAL, "Einsum: bad label id");
            }
            if (t->dims[d] != 1 || p->label_dim[l] == 1) j->stride[i][l] += st; /* repeated label: diagonal */
            st *= t->dims[d];
        }
    }
    j->n_sum = p->n_labels - p->out_rank;
    j->n_sum_total = 1;
    for (int l = p->out_rank; l < p->n_labels; l++) j->n_sum_total *= p->label_dim[l];
    int64_t n_out = cpu_count(&args->outputs[0]);
    if (n_out > 0) {
        int64_t work = j->n_sum_total * p->n_inputs;
        cpu_parallel_for(ctx, n_out, work >= 4096 ? 1 : 4096 / (work > 0 ? work : 1) + 1, einsum_range, j);
    }
    cpu_free(j);
    return NETRUN_OK;
}

static int einsum_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = node->n_inputs > 0 ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED;
    if (!is_float_dtype(t) && t != NETRUN_DTYPE_INT32 && t != NETRUN_DTYPE_INT64) {
        snprintf(reason, size, "Einsum: float, float16, bfloat16, double, int32, int64 only");
        return 0;
    }
    return 1;
}

/* ---------------- Det: LU with partial pivoting per matrix ---------------- */

typedef struct det_job {
    netrun_dtype dt;
    const void *x;
    void *y;
    int64_t m;
    double *scratch;                 /* m * m doubles per matrix of a chunk, indexed by matrix */
} det_job;

static void det_range(void *arg, int64_t b0, int64_t b1) {
    const det_job *j = arg;
    int64_t m = j->m;
    for (int64_t b = b0; b < b1; b++) {
        double *a = j->scratch + b * m * m;
        for (int64_t i = 0; i < m * m; i++) a[i] = ldf(j->dt, j->x, b * m * m + i);
        double det = 1;
        for (int64_t k = 0; k < m && det != 0; k++) {
            int64_t piv = k;
            for (int64_t r = k + 1; r < m; r++)
                if (fabs(a[r * m + k]) > fabs(a[piv * m + k])) piv = r;
            if (a[piv * m + k] == 0) {
                det = 0;
                break;
            }
            if (piv != k) {
                for (int64_t c = 0; c < m; c++) {
                    double t = a[k * m + c];
                    a[k * m + c] = a[piv * m + c];
                    a[piv * m + c] = t;
                }
                det = -det;
            }
            double d = a[k * m + k];
            det *= d;
            for (int64_t r = k + 1; r < m; r++) {
                double f = a[r * m + k] / d;
                for (int64_t c = k + 1; c < m; c++) a[r * m + c] -= f * a[k * m + c];
            }
        }
        stf(j->dt, j->y, b, det);
    }
}

static netrun_status run_det(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *X = &args->inputs[0];
    if (X->rank < 2 || X->dims[X->rank - 1] != X->dims[X->rank - 2] || !is_float_dtype(X->dtype))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Det: input must be [*, M, M] floating point");
    int64_t m = X->dims[X->rank - 1], total = cpu_count(X), batch = cpu_count(&args->outputs[0]);
    if (batch == 0) return NETRUN_OK;
    if (total < 0 || (uint64_t)total > SIZE_MAX / sizeof(double))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Det: input too large");
    det_job j = {X->dtype, X->data, args->outputs[0].data, m, cpu_alloc((size_t)total * sizeof(double))};
    if (!j.scratch) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Det: out of memory");
    int64_t work = m * m * (m > 0 ? m : 1);
    cpu_parallel_for(ctx, batch, work >= 4096 ? 1 : 4096 / work + 1, det_range, &j);
    cpu_free(j.scratch);
    return NETRUN_OK;
}

/* SwiGLU: Y = A * sigmoid(alpha * A) * B, elementwise over A and B of one shape, in double for every float type
 * (a gated activation next to two projections: the GEMMs dominate, this pass is memory-bound). */
typedef struct swiglu_job {
    netrun_dtype dt;
    const void *a, *b;
    void *y;
    double alpha;
} swiglu_job;

static void swiglu_range(void *arg, int64_t begin, int64_t end) {
    const swiglu_job *j = arg;
    for (int64_t i = begin; i < end; i++) {
        double a = cpu_load_f(j->a, j->dt, i);
        cpu_store_f(j->y, j->dt, i, a / (1.0 + exp(-j->alpha * a)) * cpu_load_f(j->b, j->dt, i));
    }
}

static netrun_status run_swiglu(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_unary_params *p = args->params;
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1];
    int64_t n = cpu_count(&args->outputs[0]);
    if (n != cpu_count(A) || n != cpu_count(B) || A->dtype != B->dtype || !is_float_dtype(A->dtype))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "SwiGLU: A and B must be floats of one shape");
    swiglu_job j = {A->dtype, A->data, B->data, args->outputs[0].data, p ? p->alpha : 1.0};
    cpu_parallel_for(ctx, n, 4096, swiglu_range, &j);
    return NETRUN_OK;
}

#define EINSUM_DTYPES (FLOAT_DTYPES | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64))

const cpu_op cpu_ops_loss[] = {
    {"NegativeLogLikelihoodLoss", NULL, FLOAT_DTYPES, "labels int32/int64", loss_supports, NULL, run_nll, NULL},
    {"SoftmaxCrossEntropyLoss", NULL, FLOAT_DTYPES, "labels int32/int64", loss_supports, NULL, run_sce, NULL},
    {"Einsum", NULL, EINSUM_DTYPES, "up to 8 operands; direct summation (no GEMM path)", einsum_supports, NULL,
     run_einsum, NULL},
    {"Det", NULL, FLOAT_DTYPES, "", NULL, NULL, run_det, NULL},
    {"SwiGLU", NULL, FLOAT_DTYPES, "A and B of one shape", NULL, NULL, run_swiglu, NULL},
    {0},
};
