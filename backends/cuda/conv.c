/* CUDA kernels: conv. Conv (cudnnConvolutionForward) and ConvTranspose (cudnnConvolutionBackwardData, whose
 * filter layout [C, M/group, k...] is ONNX's) in 1-3 spatial dims, float32/float16. The algorithm is chosen
 * at kernel creation under the session's workspace policy and cap:
 *   fastest:    benchmark (cudnnFind*) and take the fastest whose workspace fits the cap (3/4 of free memory
 *               when no cap is set);
 *   balanced:   cuDNN's heuristic ranking (cudnnGet*_v7), the best whose workspace fits 1/8 of free memory;
 *   min-memory: the smallest workspace of the heuristic's list.
 * 1-D convolutions run as 2-D with height 1. Asymmetric Conv pads are applied by copying the input into a
 * zero-padded workspace area first. Bias, the fused "+ Z" and the fused activation are applied after cuDNN
 * (Z through beta = 1 on a copy of Z in Y). When shapes change at run time the descriptors are rebuilt and
 * the heuristic's best algorithm that fits the given workspace is taken. */
#include <stdlib.h>

#include "cuda_internal.h"

#define MAXD 5

typedef struct conv_state {
    int transpose;
    netrun_dtype dt;
    netrun_conv_params p;
    int prepad;                    /* Conv with asymmetric pads: pad into the workspace first */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int nd;                        /* cuDNN rank (4 or 5) */
    int64_t xdims[NETRUN_MAX_RANK], wdims[NETRUN_MAX_RANK], ydims[NETRUN_MAX_RANK];
    int xrank;
    int ready;
    int algo;
    size_t algo_ws, pad_bytes;
    void *scratch;                 /* own workspace when the shared one is too small (run-time shapes) */
    size_t scratch_size;
} conv_state;

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

static int conv_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_conv_params *p = node->params;
    netrun_dtype t = cuda_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    if (!p) return cuda_refuse(reason, size, "no params");
    if (p->n_spatial < 1 || p->n_spatial > 3) return cuda_refuse(reason, size, "%d spatial dims", p->n_spatial);
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t) return cuda_refuse(reason, size, "mixed dtypes");
    if (node->n_inputs < 2 || node->inputs[1].rank != p->n_spatial + 2)
        return cuda_refuse(reason, size, "weights of unknown shape");
    int transpose = !strcmp(node->op_type, "ConvTranspose");
    for (int d = 0; d < p->n_spatial; d++) {
        if (p->pads_begin[d] < 0 || p->pads_end[d] < 0) return cuda_refuse(reason, size, "negative pads");
        if (transpose && p->pads_begin[d] != p->pads_end[d])
            return cuda_refuse(reason, size, "asymmetric ConvTranspose pads");
        if (p->strides[d] < 1 || p->dilations[d] < 1) return cuda_refuse(reason, size, "bad strides or dilations");
        if (p->kernel[d] > INT32_MAX || p->pads_begin[d] > INT32_MAX) return cuda_refuse(reason, size, "huge kernel");
    }
    if (p->group < 1 || p->group > INT32_MAX) return cuda_refuse(reason, size, "bad group");
    if (p->has_sum && transpose) return cuda_refuse(reason, size, "fused sum on ConvTranspose");
    return 1;
}

/* cuDNN dims of a tensor: 1-D spatial gets a height of 1. */
static int to_cudnn_dims(int n_spatial, const int64_t *dims, int *out) {
    int r = n_spatial + 2;
    for (int i = 0; i < r; i++)
        if (dims[i] < 0 || dims[i] > INT32_MAX) return -1;
    if (n_spatial == 1) {
        out[0] = (int)dims[0];
        out[1] = (int)dims[1];
        out[2] = 1;
        out[3] = (int)dims[2];
        return 4;
    }
    for (int i = 0; i < r; i++) out[i] = (int)dims[i];
    return r;
}

static netrun_status set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t t, int nd, const int *dims) {
    int strides[MAXD];
    strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) strides[i] = strides[i + 1] * (dims[i + 1] > 0 ? dims[i + 1] : 1);
    cudnnStatus_t s = cudnnSetTensorNdDescriptor(d, t, nd, dims, strides);
    return s == CUDNN_STATUS_SUCCESS ? NETRUN_OK : cudnn_fail(s, "cudnnSetTensorNdDescriptor");
}

/* Pick an algorithm from a perf list: fastest fitting the cap, or the smallest workspace. */
#define PICK(perf, n, cap, minmem, algo_out, ws_out)                                                             \
    do {                                                                                                        \
        int best = -1;                                                                                          \
        for (int i_ = 0; i_ < (n); i_++) {                                                                      \
            if ((perf)[i_].status != CUDNN_STATUS_SUCCESS || (perf)[i_].memory > (cap)) continue;               \
            if (best < 0 || ((minmem) && (perf)[i_].memory < (perf)[best].memory)) best = i_;                   \
        }                                                                                                       \
        if (best >= 0) {                                                                                        \
            (algo_out) = (int)(perf)[best].algo;                                                                \
            (ws_out) = (perf)[best].memory;                                                                     \
        }                                                                                                       \
        found = best >= 0;                                                                                      \
    } while (0)

/* Build the descriptors for these shapes and choose an algorithm whose workspace is at most cap. */
static netrun_status conv_setup(cuda_context *ctx, conv_state *st, int xrank, const int64_t *xdims,
                                const int64_t *wdims, const int64_t *ydims, size_t cap, int benchmark) {
    const netrun_conv_params *p = &st->p;
    int ns = p->n_spatial;
    int xd[MAXD], wd[MAXD], yd[MAXD];
    int64_t xpad[NETRUN_MAX_RANK];
    memcpy(xpad, xdims, sizeof(int64_t) * (size_t)xrank);
    st->prepad = 0;
    if (!st->transpose)
        for (int d = 0; d < ns; d++)
            if (p->pads_begin[d] != p->pads_end[d]) st->prepad = 1;
    if (st->prepad)
        for (int d = 0; d < ns; d++) xpad[2 + d] = xdims[2 + d] + p->pads_begin[d] + p->pads_end[d];
    int nd = to_cudnn_dims(ns, xpad, xd);
    if (nd < 0 || to_cudnn_dims(ns, wdims, wd) < 0 || to_cudnn_dims(ns, ydims, yd) < 0)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda conv: dims beyond int32");
    int pads[3], strides[3], dil[3], k = 0;
    if (ns == 1) {
        pads[0] = 0;
        strides[0] = 1;
        dil[0] = 1;
        k = 1;
    }
    for (int d = 0; d < ns; d++, k++) {
        pads[k] = st->prepad ? 0 : (int)p->pads_begin[d];
        strides[k] = (int)p->strides[d];
        dil[k] = (int)p->dilations[d];
    }
    cudnnDataType_t dt = st->dt == NETRUN_DTYPE_FLOAT16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    netrun_status s;
    if ((s = set_tensor(st->xd, dt, nd, xd)) != NETRUN_OK || (s = set_tensor(st->yd, dt, nd, yd)) != NETRUN_OK) return s;
    cudnnStatus_t cs = cudnnSetFilterNdDescriptor(st->wd, dt, CUDNN_TENSOR_NCHW, nd, wd);
    if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "cudnnSetFilterNdDescriptor");
    cs = cudnnSetConvolutionNdDescriptor(st->cd, nd - 2, pads, strides, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "cudnnSetConvolutionNdDescriptor");
    if ((cs = cudnnSetConvolutionGroupCount(st->cd, (int)p->group)) != CUDNN_STATUS_SUCCESS)
        return cudnn_fail(cs, "cudnnSetConvolutionGroupCount");
    /* exact float32 unless TF32 (or lower) was allowed; float16 data may always use tensor cores */
    cudnnMathType_t mt = st->dt == NETRUN_DTYPE_FLOAT16 || ctx->config.precision != NETRUN_PRECISION_FP32
                             ? CUDNN_TENSOR_OP_MATH
                             : CUDNN_FMA_MATH;
    if ((cs = cudnnSetConvolutionMathType(st->cd, mt)) != CUDNN_STATUS_SUCCESS)
        return cudnn_fail(cs, "cudnnSetConvolutionMathType");
    if (!st->transpose) { /* the output shape must agree with cuDNN's */
        int od[MAXD];
        cs = cudnnGetConvolutionNdForwardOutputDim(st->cd, st->xd, st->wd, nd, od);
        if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "cudnnGetConvolutionNdForwardOutputDim");
        for (int i = 0; i < nd; i++)
            if (od[i] != yd[i])
                return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda conv: cuDNN output dim %d is %d, expected %d", i, od[i], yd[i]);
    }
    st->pad_bytes = 0;
    if (st->prepad) {
        size_t n = cuda_esize(st->dt);
        for (int i = 0; i < xrank; i++) n *= (size_t)xpad[i];
        st->pad_bytes = align256(n);
    }
    size_t algo_cap = cap > st->pad_bytes ? cap - st->pad_bytes : 0;
    int minmem = ctx->config.workspace_policy == NETRUN_WORKSPACE_MIN_MEMORY, found = 0, n = 0;
    if (!st->transpose) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        if (benchmark)
            cs = cudnnFindConvolutionForwardAlgorithm(ctx->cudnn, st->xd, st->wd, st->cd, st->yd,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
        else
            cs = cudnnGetConvolutionForwardAlgorithm_v7(ctx->cudnn, st->xd, st->wd, st->cd, st->yd,
                                                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
        if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "choosing a convolution algorithm");
        PICK(perf, n, algo_cap, minmem, st->algo, st->algo_ws);
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        if (benchmark)
            cs = cudnnFindConvolutionBackwardDataAlgorithm(ctx->cudnn, st->wd, st->xd, st->cd, st->yd,
                                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
        else
            cs = cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx->cudnn, st->wd, st->xd, st->cd, st->yd,
                                                             CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
        if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, "choosing a transposed convolution algorithm");
        PICK(perf, n, algo_cap, minmem, st->algo, st->algo_ws);
    }
    if (!found)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED,
                                "cuda conv: no cuDNN algorithm fits a workspace of %zu bytes (%d candidates)", algo_cap, n);
    st->nd = nd;
    st->xrank = xrank;
    memcpy(st->xdims, xdims, sizeof(int64_t) * (size_t)xrank);
    memcpy(st->wdims, wdims, sizeof(int64_t) * (size_t)xrank);
    memcpy(st->ydims, ydims, sizeof(int64_t) * (size_t)xrank);
    st->ready = 1;
    return NETRUN_OK;
}

static void conv_destroy(cuda_context *ctx, void *state) {
    conv_state *st = state;
    if (!st) return;
    if (st->xd) cudnnDestroyTensorDescriptor(st->xd);
    if (st->yd) cudnnDestroyTensorDescriptor(st->yd);
    if (st->wd) cudnnDestroyFilterDescriptor(st->wd);
    if (st->cd) cudnnDestroyConvolutionDescriptor(st->cd);
    if (st->scratch) cudaFree(st->scratch);
    cuda_host->free(st);
}

static int known(const netrun_value_desc *d) { return d->rank >= 0 && cuda_desc_count(d) >= 0; }

static netrun_status conv_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    conv_state *st = cuda_host->alloc(sizeof *st, 16);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: out of memory");
    memset(st, 0, sizeof *st);
    st->transpose = !strcmp(node->op_type, "ConvTranspose");
    st->dt = cuda_main_dtype(node);
    st->p = *(const netrun_conv_params *)node->params;
    if (cudnnCreateTensorDescriptor(&st->xd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateTensorDescriptor(&st->yd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateFilterDescriptor(&st->wd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateConvolutionDescriptor(&st->cd) != CUDNN_STATUS_SUCCESS) {
        conv_destroy(ctx, st);
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: cannot create cuDNN descriptors");
    }
    *ws = 0;
    if (node->n_outputs > 0 && known(&node->inputs[0]) && known(&node->inputs[1]) && known(&node->outputs[0]) &&
        cuda_desc_count(&node->inputs[0]) > 0 && cuda_desc_count(&node->outputs[0]) > 0) { /* empty: nothing to plan */
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) free_b = 0;
        size_t limit = ctx->config.workspace_limit ? ctx->config.workspace_limit : SIZE_MAX, cap;
        switch (ctx->config.workspace_policy) {
        case NETRUN_WORKSPACE_FASTEST: cap = free_b / 4 * 3; break;
        case NETRUN_WORKSPACE_MIN_MEMORY: cap = SIZE_MAX; break;
        default: cap = free_b / 8; break;
        }
        if (cap > limit) cap = limit;
        int bench = ctx->config.workspace_policy == NETRUN_WORKSPACE_FASTEST;
        netrun_status s = conv_setup(ctx, st, node->inputs[0].rank, node->inputs[0].dims, node->inputs[1].dims,
                                     node->outputs[0].dims, cap, bench);
        if (s != NETRUN_OK) {
            conv_destroy(ctx, st);
            return s;
        }
        *ws = st->pad_bytes + st->algo_ws;
    }
    *state = st;
    return NETRUN_OK;
}

static int same_dims(int r, const int64_t *a, const int64_t *b) {
    for (int i = 0; i < r; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static netrun_status conv_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    conv_state *st = state;
    const netrun_tensor *X = &args->inputs[0], *W = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    const netrun_conv_params *p = args->params ? (const netrun_conv_params *)args->params : &st->p;
    if (cuda_count(Y) == 0) return NETRUN_OK;
    netrun_status s;
    if (!st->ready || X->rank != st->xrank || !same_dims(X->rank, X->dims, st->xdims) ||
        !same_dims(X->rank, W->dims, st->wdims) || !same_dims(X->rank, Y->dims, st->ydims)) {
        st->p = *p;
        /* shapes known only now: the heuristic's best that fits what we can get (shared workspace or own) */
        size_t cap = args->workspace_size > (size_t)256 << 20 ? args->workspace_size : (size_t)256 << 20;
        if (ctx->config.workspace_limit && cap > ctx->config.workspace_limit) cap = ctx->config.workspace_limit;
        if ((s = conv_setup(ctx, st, X->rank, X->dims, W->dims, Y->dims, cap, 0)) != NETRUN_OK) return s;
    }
    size_t need = st->pad_bytes + st->algo_ws;
    char *ws = cuda_workspace_address(args->workspace);
    if (need > args->workspace_size) {
        if (need > st->scratch_size) {
            if (st->scratch) cudaFree(st->scratch);
            st->scratch = NULL;
            st->scratch_size = 0;
            cudaError_t e = cudaMalloc(&st->scratch, need);
            if (e != cudaSuccess) {
                cudaGetLastError();
                return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda conv: cannot allocate a %zu-byte workspace", need);
            }
            st->scratch_size = need;
        }
        ws = st->scratch;
    }
    const void *x = X->data;
    if (st->prepad) {
        int64_t pb[NETRUN_MAX_RANK] = {0}, od[NETRUN_MAX_RANK];
        for (int i = 0; i < X->rank; i++) od[i] = X->dims[i];
        for (int d = 0; d < p->n_spatial; d++) {
            pb[2 + d] = p->pads_begin[d];
            od[2 + d] += p->pads_begin[d] + p->pads_end[d];
        }
        if ((s = cuda_zero_pad(ctx, cuda_esize(st->dt), ws, X->data, X->rank, X->dims, pb, od)) != NETRUN_OK) return s;
        x = ws;
    }
    float alpha = 1.0f, beta = 0.0f;
    if (p->has_sum) {
        const netrun_tensor *Z = &args->inputs[args->n_inputs - 1];
        if (Z->nbytes != Y->nbytes) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda conv: fused sum of another size");
        cudaError_t e = cudaMemcpyAsync(Y->data, Z->data, Y->nbytes, cudaMemcpyDeviceToDevice, ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "conv sum copy");
        beta = 1.0f;
    }
    void *algo_ws = ws ? ws + st->pad_bytes : NULL;
    cudnnStatus_t cs;
    if (!st->transpose)
        cs = cudnnConvolutionForward(ctx->cudnn, &alpha, st->xd, x, st->wd, W->data, st->cd,
                                     (cudnnConvolutionFwdAlgo_t)st->algo, algo_ws, st->algo_ws, &beta, st->yd, Y->data);
    else
        cs = cudnnConvolutionBackwardData(ctx->cudnn, &alpha, st->wd, W->data, st->xd, x, st->cd,
                                          (cudnnConvolutionBwdDataAlgo_t)st->algo, algo_ws, st->algo_ws, &beta,
                                          st->yd, Y->data);
    if (cs != CUDNN_STATUS_SUCCESS) return cudnn_fail(cs, st->transpose ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward");
    int64_t inner = 1;
    for (int i = 2; i < Y->rank; i++) inner *= Y->dims[i];
    const void *bias = p->has_bias && args->n_inputs > 2 && args->inputs[2].rank >= 0 ? args->inputs[2].data : NULL;
    return cuda_bias_activation(ctx, st->dt, Y->data, bias, Y->dims[0], Y->dims[1], inner, &p->activation);
}

const cuda_op cuda_ops_conv[] = {
    {"Conv", CUDA_FLOAT_DTYPES, "cuDNN; 1-3 spatial dims; groups, dilations; fused bias, sum and activation",
     conv_supports, conv_create, conv_run, conv_destroy},
    {"ConvTranspose", CUDA_FLOAT_DTYPES, "cuDNN; 1-3 spatial dims; symmetric pads", conv_supports, conv_create,
     conv_run, conv_destroy},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
