/* CUDA kernels: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, float32/float16 scores, int32/int64
 * labels, after backends/cpu/loss.c. The scores are seen as [N, C, D] and the labels as [N, D]:
 * loss[n, d] = -weight[t] * logp[n, t, d] with t = label[n, d], 0 where t == ignore_index; "mean" divides the
 * sum by the sum of the weights used. Work is done in double like the CPU kernel.
 * Reduction "none": one thread per (n, d). "sum"/"mean": a single block walks every (n, d) and reduces in a
 * fixed order (deterministic, no workspace; fine for loss-sized inputs). A label outside [0, C) that is not
 * ignore_index cannot be reported from the device without a sync: it makes its loss (and so a reduced loss)
 * NaN. */
#include "nlp_common.cuh"

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
        for (int64_t k = 0; k < a.C; k++) mx = fmax(mx, (double)ldx(a.xt, a.x, base + k * a.D));
        for (int64_t k = 0; k < a.C; k++) s += exp((double)ldx(a.xt, a.x, base + k * a.D) - mx);
        sub = mx + log(s);
        if (a.lp)
            for (int64_t k = 0; k < a.C; k++) stx(a.lpt, a.lp, base + k * a.D, (float)((double)ldx(a.xt, a.x, base + k * a.D) - sub));
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
    double w = a.w ? (double)ldx(a.wt, a.w, t) : 1.0;
    *weight = w;
    *loss = -w * ((double)ldx(a.xt, a.x, base + t * a.D) - sub);
}

__global__ void loss_none_k(loss_args a, int64_t cols) {
    GRID_LOOP(col, cols) {
        double l, w;
        loss_col(a, col, &l, &w);
        stx(a.yt, a.y, col, (float)l);
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
    if (threadIdx.x == 0) stx(a.yt, a.y, 0, (float)(a.reduction == NETRUN_LOSS_MEAN ? sl[0] / sw[0] : sl[0]));
}

static int loss_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!node->params) return cuda_refuse(reason, size, "no params");
    if (node->n_inputs < 2 || !nlp_float_dtype(node->inputs[0].dtype))
        return cuda_refuse(reason, size, "scores dtype %s (float32/float16 only)",
                           cuda_dtype_name(node->n_inputs ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED));
    if (node->inputs[1].dtype != NETRUN_DTYPE_INT32 && node->inputs[1].dtype != NETRUN_DTYPE_INT64)
        return cuda_refuse(reason, size, "labels dtype %s (int32/int64 only)", cuda_dtype_name(node->inputs[1].dtype));
    const netrun_value_desc *w = nlp_desc_in(node, 2);
    if (w && !nlp_float_dtype(w->dtype)) return cuda_refuse(reason, size, "weights dtype %s", cuda_dtype_name(w->dtype));
    for (int o = 0; o < node->n_outputs && o < 2; o++)
        if (nlp_desc_out(node, o) && !nlp_float_dtype(node->outputs[o].dtype))
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

extern "C" const cuda_op cuda_ops_loss[] = {
    {"NegativeLogLikelihoodLoss", CUDA_FLOAT_DTYPES, "labels int32/int64; a label out of range gives NaN",
     loss_supports, NULL, nll_run, NULL},
    {"SoftmaxCrossEntropyLoss", CUDA_FLOAT_DTYPES, "labels int32/int64; a label out of range gives NaN", loss_supports,
     NULL, sce_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
