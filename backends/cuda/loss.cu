/* CUDA kernels: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (float32/float16/float64 scores, int32/int64
 * labels), Einsum and Det, after backends/cpu/loss.c. The scores are seen as [N, C, D] and the labels as [N, D]:
 * loss[n, d] = -weight[t] * logp[n, t, d] with t = label[n, d], 0 where t == ignore_index; "mean" divides the
 * sum by the sum of the weights used. Work is done in double like the CPU kernel.
 * Reduction "none": one thread per (n, d). "sum"/"mean": a single block walks every (n, d) and reduces in a
 * fixed order (deterministic, no workspace; fine for loss-sized inputs). A label outside [0, C) that is not
 * ignore_index cannot be reported from the device without a sync: it makes its loss (and so a reduced loss)
 * NaN. */
#include "nlp_common.cuh"

/* Loads and stores in double (float32, float16, float64): the loss and Einsum/Det work is done in double. */
__device__ __forceinline__ double ldd(int dt, const void *p, int64_t i) {
    if (dt == NETRUN_DTYPE_DOUBLE) return ((const double *)p)[i];
    return (double)ldx(dt, p, i);
}
__device__ __forceinline__ void std_(int dt, void *p, int64_t i, double v) {
    if (dt == NETRUN_DTYPE_DOUBLE) ((double *)p)[i] = v;
    else stx(dt, p, i, (float)v);
}
static inline int loss_dtype(netrun_dtype t) { return nlp_float_dtype(t) || t == NETRUN_DTYPE_DOUBLE; }

struct loss_args {
    const void *x, *t, *w;
    void *y, *lp;
    int xt, tt, wt, yt, lpt;
    int softmax, reduction, has_ii;
    int64_t ii, N, C, D;
};

/* Loss and weight of column (n, d); for SoftmaxCrossEntropyLoss also writes the column's log-probabilities. */
__device__ void loss_col(const loss_args &a, int64_t col, double *loss, double *weight) {
    const int64_t n = col / a.D, d = col % a.D, base = n * a.C * a.D + d;
    double sub = 0;
    if (a.softmax) {
        double mx = -INFINITY, s = 0;
        for (int64_t k = 0; k < a.C; k++) mx = fmax(mx, ldd(a.xt, a.x, base + k * a.D));
        for (int64_t k = 0; k < a.C; k++) s += exp(ldd(a.xt, a.x, base + k * a.D) - mx);
        sub = mx + log(s);
        if (a.lp)
            for (int64_t k = 0; k < a.C; k++) std_(a.lpt, a.lp, base + k * a.D, ldd(a.xt, a.x, base + k * a.D) - sub);
    }
    int64_t t = ldi64(a.tt, a.t, col);
    *loss = 0;
    *weight = 0;
    if (a.has_ii && t == a.ii) return;
    if (t < 0 || t >= a.C) {
        *loss = NAN;
        *weight = NAN;
        return;
    }
    double w = a.w ? ldd(a.wt, a.w, t) : 1.0;
    *weight = w;
    *loss = -w * (ldd(a.xt, a.x, base + t * a.D) - sub);
}

__global__ void loss_none_k(loss_args a, int64_t cols) {
    GRID_LOOP(col, cols) {
        double l, w;
        loss_col(a, col, &l, &w);
        std_(a.yt, a.y, col, l);
    }
}

__global__ void loss_reduce_k(loss_args a, int64_t cols) {
    __shared__ double sl[1024], sw[1024];
    double ls = 0, ws = 0;
    for (int64_t col = threadIdx.x; col < cols; col += blockDim.x) {
        double l, w;
        loss_col(a, col, &l, &w);
        ls += l;
        ws += w;
    }
    sl[threadIdx.x] = ls;
    sw[threadIdx.x] = ws;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            sl[threadIdx.x] += sl[threadIdx.x + s];
            sw[threadIdx.x] += sw[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) std_(a.yt, a.y, 0, a.reduction == NETRUN_LOSS_MEAN ? sl[0] / sw[0] : sl[0]);
}

static int loss_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!node->params) return cuda_refuse(reason, size, "no params");
    if (node->n_inputs < 2 || !loss_dtype(node->inputs[0].dtype))
        return cuda_refuse(reason, size, "scores dtype %s (float32/float16/float64 only)",
                           cuda_dtype_name(node->n_inputs ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED));
    if (node->inputs[1].dtype != NETRUN_DTYPE_INT32 && node->inputs[1].dtype != NETRUN_DTYPE_INT64)
        return cuda_refuse(reason, size, "labels dtype %s (int32/int64 only)", cuda_dtype_name(node->inputs[1].dtype));
    const netrun_value_desc *w = nlp_desc_in(node, 2);
    if (w && !loss_dtype(w->dtype)) return cuda_refuse(reason, size, "weights dtype %s", cuda_dtype_name(w->dtype));
    for (int o = 0; o < node->n_outputs && o < 2; o++)
        if (nlp_desc_out(node, o) && !loss_dtype(node->outputs[o].dtype))
            return cuda_refuse(reason, size, "output %d dtype %s", o, cuda_dtype_name(node->outputs[o].dtype));
    return 1;
}

static netrun_status loss_run(cuda_context *ctx, const netrun_kernel_args *args, int softmax) {
    const char *op = softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
    const netrun_loss_params *p = (const netrun_loss_params *)args->params;
    if (!p || args->n_inputs < 2 || args->n_outputs < 1)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda %s: needs params, scores and labels", op);
    const netrun_tensor *X = &args->inputs[0], *T = &args->inputs[1], *W = nlp_opt_in(args, 2);
    netrun_tensor *Y = &args->outputs[0], *LP = softmax ? nlp_opt_out(args, 1) : NULL;
    if (X->rank < 2 || T->rank != X->rank - 1)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda %s: scores [N, C, ...] need labels [N, ...]", op);
    loss_args a;
    memset(&a, 0, sizeof a);
    a.N = X->dims[0];
    a.C = X->dims[1];
    a.D = 1;
    for (int i = 2; i < X->rank; i++) a.D *= X->dims[i];
    if (W && cuda_count(W) != a.C)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda %s: weight needs C values", op);
    if (cuda_count(T) != a.N * a.D) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda %s: labels shape", op);
    a.x = X->data; a.t = T->data; a.w = W ? W->data : NULL; a.y = Y->data; a.lp = LP ? LP->data : NULL;
    a.xt = X->dtype; a.tt = T->dtype; a.wt = W ? W->dtype : 0; a.yt = Y->dtype; a.lpt = LP ? LP->dtype : 0;
    a.softmax = softmax;
    a.reduction = p->reduction;
    a.has_ii = p->has_ignore_index;
    a.ii = p->ignore_index;
    int64_t cols = a.N * a.D;
    if (p->reduction == NETRUN_LOSS_NONE) {
        if (cols == 0) return NETRUN_OK;
        loss_none_k<<<cuda_blocks(cols), CUDA_THREADS, 0, ctx->stream>>>(a, cols);
    } else {
        /* an empty batch still writes the reduced value (0, or NaN for mean) */
        loss_reduce_k<<<1, 256, 0, ctx->stream>>>(a, cols);
    }
    return cuda_check_launch(op);
}

static netrun_status nll_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return loss_run(ctx, args, 0);
}
static netrun_status sce_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return loss_run(ctx, args, 1);
}

/* ---------------- Einsum: per output element, the sum over the summed labels of the operands' product ----
 * Label ids 0..out_rank-1 are the output dims in order, the rest are summed. One thread per output element
 * walks the summed labels as an odometer, updating the operand offsets incrementally (as the CPU kernel). Floats
 * accumulate in double; int32/int64 in int64 with wrap-around like the narrower type. */
struct einsum_args {
    const void *in[NETRUN_EINSUM_MAX_INPUTS];
    void *y;
    int dt, ni, orank, n_sum;
    int64_t n_sum_total, n_out;
    int64_t label_dim[NETRUN_EINSUM_MAX_LABELS];
    int64_t stride[NETRUN_EINSUM_MAX_INPUTS][NETRUN_EINSUM_MAX_LABELS]; /* 0: label absent or broadcast */
};

/* The argument block (about 4.4 KB) goes by value: kernel parameters up to 32 KB need CUDA 12.1+ and Volta+, which
 * every architecture this backend builds for is. */
__global__ void einsum_k(const einsum_args a) {
    const int is_int = a.dt == NETRUN_DTYPE_INT32 || a.dt == NETRUN_DTYPE_INT64;
    GRID_LOOP(o, a.n_out) {
        int64_t off[NETRUN_EINSUM_MAX_INPUTS], idx[NETRUN_EINSUM_MAX_LABELS], rem = o;
        for (int i = 0; i < a.ni; i++) off[i] = 0;
        for (int d = a.orank - 1; d >= 0; d--) {
            int64_t v = rem % a.label_dim[d];
            rem /= a.label_dim[d];
            for (int i = 0; i < a.ni; i++) off[i] += v * a.stride[i][d];
        }
        for (int k = 0; k < a.n_sum; k++) idx[k] = 0;
        double acc = 0;
        uint64_t iacc = 0;
        for (int64_t s = 0; s < a.n_sum_total; s++) {
            if (is_int) {
                uint64_t prod = 1;
                for (int i = 0; i < a.ni; i++) prod *= (uint64_t)ldi64(a.dt, a.in[i], off[i]);
                iacc += prod;
            } else {
                double prod = 1;
                for (int i = 0; i < a.ni; i++) prod *= ldd(a.dt, a.in[i], off[i]);
                acc += prod;
            }
            for (int k = a.n_sum - 1; k >= 0; k--) {
                int l = a.orank + k;
                if (++idx[k] < a.label_dim[l]) {
                    for (int i = 0; i < a.ni; i++) off[i] += a.stride[i][l];
                    break;
                }
                for (int i = 0; i < a.ni; i++) off[i] -= (a.label_dim[l] - 1) * a.stride[i][l];
                idx[k] = 0;
            }
        }
        if (a.dt == NETRUN_DTYPE_INT32) ((int32_t *)a.y)[o] = (int32_t)(uint32_t)iacc;
        else if (a.dt == NETRUN_DTYPE_INT64) ((int64_t *)a.y)[o] = (int64_t)iacc;
        else std_(a.dt, a.y, o, acc);
    }
}

static int einsum_dtype(netrun_dtype t) {
    return loss_dtype(t) || t == NETRUN_DTYPE_INT32 || t == NETRUN_DTYPE_INT64;
}

static int einsum_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_einsum_params *p = (const netrun_einsum_params *)node->params;
    if (!p) return cuda_refuse(reason, size, "no params");
    if (node->n_inputs < 1 || node->n_inputs > NETRUN_EINSUM_MAX_INPUTS)
        return cuda_refuse(reason, size, "%d operands (1 to %d)", node->n_inputs, NETRUN_EINSUM_MAX_INPUTS);
    for (int i = 0; i < node->n_inputs; i++)
        if (!einsum_dtype(node->inputs[i].dtype) || node->inputs[i].dtype != node->inputs[0].dtype)
            return cuda_refuse(reason, size, "operands of one dtype: float32, float16, float64, int32 or int64");
    return 1;
}

static netrun_status einsum_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_einsum_params *p = (const netrun_einsum_params *)args->params;
    if (!p || p->n_inputs != args->n_inputs || p->n_inputs < 1 || p->n_inputs > NETRUN_EINSUM_MAX_INPUTS ||
        p->n_labels > NETRUN_EINSUM_MAX_LABELS || p->out_rank > p->n_labels || p->out_rank < 0)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Einsum: bad params");
    einsum_args *a = (einsum_args *)cuda_host->alloc(sizeof(einsum_args), 16);
    if (!a) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda Einsum: out of memory");
    memset(a, 0, sizeof *a);
    a->dt = args->inputs[0].dtype;
    a->ni = p->n_inputs;
    a->orank = p->out_rank;
    a->y = args->outputs[0].data;
    for (int l = 0; l < p->n_labels; l++) a->label_dim[l] = p->label_dim[l];
    for (int i = 0; i < p->n_inputs; i++) {
        const netrun_tensor *t = &args->inputs[i];
        if (t->rank != p->in_rank[i] || t->dtype != (netrun_dtype)a->dt) {
            cuda_host->free(a);
            return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Einsum: input %d does not match params", i);
        }
        a->in[i] = t->data;
        int64_t st = 1;
        for (int d = t->rank - 1; d >= 0; d--) {
            int l = p->in_label[i][d];
            if (l < 0 || l >= p->n_labels) {
                cuda_host->free(a);
                return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Einsum: bad label id");
            }
            if (t->dims[d] != 1 || p->label_dim[l] == 1) a->stride[i][l] += st; /* repeated label: diagonal */
            st *= t->dims[d];
        }
    }
    a->n_sum = p->n_labels - p->out_rank;
    a->n_sum_total = 1;
    for (int l = p->out_rank; l < p->n_labels; l++) a->n_sum_total *= p->label_dim[l];
    a->n_out = cuda_count(&args->outputs[0]);
    netrun_status st = NETRUN_OK;
    if (a->n_out > 0) {
        einsum_k<<<cuda_blocks(a->n_out), 128, 0, ctx->stream>>>(*a);
        st = cuda_check_launch("Einsum");
    }
    cuda_host->free(a);
    return st;
}

/* ---------------- Det: LU with partial pivoting, one block per matrix held in shared memory (double) ---------- */

__global__ void det_k(const void *x, void *y, int dt, int64_t m) {
    extern __shared__ double am[];
    __shared__ double det;
    const int64_t b = blockIdx.x, mm = m * m;
    for (int64_t i = threadIdx.x; i < mm; i += blockDim.x) am[i] = ldd(dt, x, b * mm + i);
    if (threadIdx.x == 0) det = 1;
    __syncthreads();
    for (int64_t k = 0; k < m; k++) {
        if (threadIdx.x == 0) {
            int64_t piv = k;
            for (int64_t r = k + 1; r < m; r++)
                if (fabs(am[r * m + k]) > fabs(am[piv * m + k])) piv = r;
            if (am[piv * m + k] == 0) det = 0;
            else {
                if (piv != k) {
                    for (int64_t c = 0; c < m; c++) {
                        double t = am[k * m + c];
                        am[k * m + c] = am[piv * m + c];
                        am[piv * m + c] = t;
                    }
                    det = -det;
                }
                det *= am[k * m + k];
            }
        }
        __syncthreads();
        if (det == 0) break; /* the same value in every thread: read after the barrier */
        const double d = am[k * m + k];
        const int64_t n = m - k - 1;
        for (int64_t q = threadIdx.x; q < n * n; q += blockDim.x) {
            int64_t r = k + 1 + q / n, c = k + 1 + q % n;
            am[r * m + c] -= am[r * m + k] / d * am[k * m + c]; /* column k and row k are not written here */
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) std_(dt, y, b, det);
}

static int det_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs < 1 || !loss_dtype(node->inputs[0].dtype))
        return cuda_refuse(reason, size, "dtype %s (float32/float16/float64 only)",
                           cuda_dtype_name(node->n_inputs ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED));
    const netrun_value_desc *x = &node->inputs[0];
    if (x->rank >= 2 && x->dims[x->rank - 1] > 160)
        return cuda_refuse(reason, size, "matrices larger than 160 x 160 (shared memory)");
    return 1;
}

static netrun_status det_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *X = &args->inputs[0];
    if (X->rank < 2 || X->dims[X->rank - 1] != X->dims[X->rank - 2])
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Det: input must be [*, M, M]");
    int64_t m = X->dims[X->rank - 1], batch = cuda_count(&args->outputs[0]);
    if (batch == 0) return NETRUN_OK;
    if (batch > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Det: too many matrices");
    size_t smem = (size_t)(m * m) * sizeof(double);
    netrun_status st = nlp_smem((const void *)det_k, smem, "Det");
    if (st != NETRUN_OK) return st;
    det_k<<<(unsigned)batch, m > 16 ? 256 : 32, smem, ctx->stream>>>(X->data, args->outputs[0].data, X->dtype, m);
    return cuda_check_launch("Det");
}

#define LOSS_DTYPES (CUDA_FLOAT_DTYPES | CUDA_DT(DOUBLE))

extern "C" const cuda_op cuda_ops_loss[] = {
    {"NegativeLogLikelihoodLoss", LOSS_DTYPES, "labels int32/int64; a label out of range gives NaN",
     loss_supports, NULL, nll_run, NULL},
    {"SoftmaxCrossEntropyLoss", LOSS_DTYPES, "labels int32/int64; a label out of range gives NaN", loss_supports,
     NULL, sce_run, NULL},
    {"Einsum", LOSS_DTYPES | CUDA_DT(INT32) | CUDA_DT(INT64), "up to 8 operands; direct summation (no GEMM path)",
     einsum_supports, NULL, einsum_run, NULL},
    {"Det", LOSS_DTYPES, "up to 160 x 160 (one matrix per block in shared memory)", det_supports, NULL, det_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
