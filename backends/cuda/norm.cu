/* CUDA kernels: norm. BatchNormalization (inference, with fused activation), LayerNormalization (Mean and
 * InvStdDev outputs) and InstanceNormalization, float32/float16 with float statistics. Row statistics use one
 * block per row and a two-pass mean / variance over the row (read twice; rows are short). */
#include "cuda_kernels.cuh"

template <typename T>
__global__ void bn_k(const T *x, T *y, const T *scale, const T *bias, const T *mean, const T *var, float eps,
                     int64_t total, int64_t c, int64_t inner, int per_element, act_params act) {
    GRID_LOOP(i, total) {
        int64_t ch = per_element ? i % (c * inner) : (i / inner) % c; /* opset < 7 spatial=0: per activation */
        float a = to_f(scale[ch]) * rsqrtf(to_f(var[ch]) + eps);
        float v = (to_f(x[i]) - to_f(mean[ch])) * a + to_f(bias[ch]);
        y[i] = from_f<T>(apply_act(v, act));
    }
}

/* scale/B of LayerNormalization: after leading 1s, exactly the trailing dims of X (within the normalized
 * dims), so that element i of a row uses scale[i % size]. */
static int trailing_block(int sr, const int64_t *sd, int xr, const int64_t *xd, int axis) {
    int lead = 0;
    while (lead < sr && sd[lead] == 1) lead++;
    int n = sr - lead;
    if (n > xr - axis) return 0;
    for (int i = 0; i < n; i++)
        if (sd[sr - 1 - i] != xd[xr - 1 - i]) return 0;
    return 1;
}

static int norm_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = cuda_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    for (int i = 1; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t) return cuda_refuse(reason, size, "mixed dtypes");
    if (!strcmp(node->op_type, "BatchNormalization")) {
        for (int o = 1; o < node->n_outputs; o++)
            if (node->outputs[o].name && *node->outputs[o].name) return cuda_refuse(reason, size, "training outputs");
        if (node->n_inputs < 5) return cuda_refuse(reason, size, "needs 5 inputs");
    }
    if (!strcmp(node->op_type, "LayerNormalization")) {
        for (int o = 1; o < node->n_outputs; o++)
            if (node->outputs[o].name && *node->outputs[o].name && node->outputs[o].dtype != NETRUN_DTYPE_FLOAT &&
                node->outputs[o].rank >= 0)
                return cuda_refuse(reason, size, "Mean/InvStdDev not float32");
        const netrun_norm_params *p = (const netrun_norm_params *)node->params;
        const netrun_value_desc *X = &node->inputs[0];
        int known = p && cuda_desc_count(X) >= 0;
        for (int i = 1; i < node->n_inputs && i < 3; i++)
            if (known && node->inputs[i].rank >= 0 && cuda_desc_count(&node->inputs[i]) >= 0 &&
                !trailing_block(node->inputs[i].rank, node->inputs[i].dims, X->rank, X->dims, p->axis))
                return cuda_refuse(reason, size, "scale/B broadcast other than a trailing block");
    }
    return 1;
}

static netrun_status bn_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_norm_params *p = (const netrun_norm_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t total = cuda_count(X);
    if (total == 0) return NETRUN_OK;
    int64_t c = X->rank > 1 ? X->dims[1] : 1, inner = 1;
    for (int i = 2; i < X->rank; i++) inner *= X->dims[i];
    int per_element = cuda_count(&args->inputs[1]) != c;
    for (int i = 1; i < 5; i++)
        if (cuda_count(&args->inputs[i]) != (per_element ? c * inner : c))
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda BatchNormalization: input %d does not have %lld values",
                                    i, (long long)(per_element ? c * inner : c));
    act_params a = make_act(p ? &p->activation : NULL);
    float eps = p ? p->epsilon : 1e-5f;
#define BN(T)                                                                                                       \
    bn_k<T><<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(                                                  \
        (const T *)X->data, (T *)Y->data, (const T *)args->inputs[1].data, (const T *)args->inputs[2].data,         \
        (const T *)args->inputs[3].data, (const T *)args->inputs[4].data, eps, total, c, inner, per_element, a)
    if (X->dtype == NETRUN_DTYPE_FLOAT) BN(float);
    else BN(__half);
#undef BN
    return cuda_check_launch("BatchNormalization");
}

/* One block per row of d values: y = (x - mean) * rstd * scale + bias. LayerNorm: scale/bias index by the
 * position in the row modulo their size (their size divides d); InstanceNorm: by row % c. */
template <typename T>
__global__ void rows_k(const T *x, T *y, const T *scale, const T *bias, int64_t d, int64_t ns, int64_t nb,
                       int per_row, int64_t c, float eps, float *mean_out, float *rstd_out) {
    __shared__ float sh[32];
    int64_t r = blockIdx.x;
    const T *xr = x + r * d;
    T *yr = y + r * d;
    float s = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += to_f(xr[i]);
    float mean = block_sum(s, sh) / (float)d;
    float v = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        float t = to_f(xr[i]) - mean;
        v += t * t;
    }
    float var = block_sum(v, sh) / (float)d;
    float rstd = rsqrtf(var + eps);
    if (threadIdx.x == 0) {
        if (mean_out) mean_out[r] = mean;
        if (rstd_out) rstd_out[r] = rstd;
    }
    if (per_row) {
        float sc = to_f(scale[r % c]), b = bias ? to_f(bias[r % c]) : 0.0f;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = from_f<T>((to_f(xr[i]) - mean) * rstd * sc + b);
    } else {
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            float sc = to_f(scale[i % ns]), b = bias ? to_f(bias[i % nb]) : 0.0f;
            yr[i] = from_f<T>((to_f(xr[i]) - mean) * rstd * sc + b);
        }
    }
}

static netrun_status launch_rows(cuda_context *ctx, const netrun_tensor *X, netrun_tensor *Y, const void *scale,
                                 const void *bias, int64_t rows, int64_t d, int64_t ns, int64_t nb, int per_row,
                                 int64_t c, float eps, float *mean, float *rstd) {
    if (rows == 0 || d == 0) return NETRUN_OK;
    if (rows > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda norm: too many rows");
    int threads = d >= 1024 ? 1024 : d >= 256 ? 256 : 64;
#define ROWS(T)                                                                                                    \
    rows_k<T><<<(unsigned)rows, threads, 0, ctx->stream>>>((const T *)X->data, (T *)Y->data, (const T *)scale,    \
                                                          (const T *)bias, d, ns, nb, per_row, c, eps, mean, rstd)
    if (X->dtype == NETRUN_DTYPE_FLOAT) ROWS(float);
    else ROWS(__half);
#undef ROWS
    return cuda_check_launch("normalization");
}

static netrun_status ln_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_norm_params *p = (const netrun_norm_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    int axis = p ? p->axis : X->rank - 1;
    int64_t rows = 1, d = 1;
    for (int i = 0; i < X->rank; i++) (i < axis ? rows : d) *= X->dims[i];
    const netrun_tensor *S = &args->inputs[1];
    const netrun_tensor *B = args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    int64_t ns = cuda_count(S), nb = B ? cuda_count(B) : 1;
    if (!trailing_block(S->rank, S->dims, X->rank, X->dims, axis) || (B && !trailing_block(B->rank, B->dims, X->rank, X->dims, axis)))
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda LayerNormalization: scale/B broadcast not supported");
    float *mean = args->n_outputs > 1 && args->outputs[1].rank >= 0 ? (float *)args->outputs[1].data : NULL;
    float *rstd = args->n_outputs > 2 && args->outputs[2].rank >= 0 ? (float *)args->outputs[2].data : NULL;
    return launch_rows(ctx, X, &args->outputs[0], S->data, B ? B->data : NULL, rows, d, ns, nb, 0, 1,
                       p ? p->epsilon : 1e-5f, mean, rstd);
}

static netrun_status in_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_norm_params *p = (const netrun_norm_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (X->rank < 2) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda InstanceNormalization: rank < 2");
    int64_t c = X->dims[1], rows = X->dims[0] * c, d = 1;
    for (int i = 2; i < X->rank; i++) d *= X->dims[i];
    if (cuda_count(&args->inputs[1]) != c || cuda_count(&args->inputs[2]) != c)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda InstanceNormalization: scale/B need C values");
    return launch_rows(ctx, X, &args->outputs[0], args->inputs[1].data, args->inputs[2].data, rows, d, 1, 1, 1, c,
                       p ? p->epsilon : 1e-5f, NULL, NULL);
}

extern "C" const cuda_op cuda_ops_norm[] = {
    {"BatchNormalization", CUDA_FLOAT_DTYPES, "inference only; fused activation", norm_supports, NULL, bn_run, NULL},
    {"InstanceNormalization", CUDA_FLOAT_DTYPES, "", norm_supports, NULL, in_run, NULL},
    {"LayerNormalization", CUDA_FLOAT_DTYPES, "scale/B: full normalized shape or a trailing block; float32 Mean/InvStdDev",
     norm_supports, NULL, ln_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
