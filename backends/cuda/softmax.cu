/* CUDA kernels: softmax. Softmax / LogSoftmax / Hardmax over one axis (or the opset < 13 flattened 2-D form).
 * The tensor is seen as [outer, n, inner]: with inner == 1 one block per row, else one thread per
 * (outer, inner) column walking the axis. float32/float16, float arithmetic. LogSoftmax is (x - max) - log(sum)
 * (x - (max + log(sum)) loses all to rounding at large |max|); NaN wins the max, so a row holding NaN is all NaN
 * and Hardmax marks its first NaN, as in the ONNX reference. */
#include "cuda_kernels.cuh"

enum { SM_SOFTMAX, SM_LOG, SM_HARD };

__device__ __forceinline__ float finish(int kind, float v, float mx, float sum) {
    return kind == SM_LOG ? (v - mx) - logf(sum) : expf(v - mx) / sum;
}

template <typename T> __global__ void softmax_rows_k(const T *x, T *y, int64_t n, int kind) {
    __shared__ float sh[32];
    const T *xr = x + (int64_t)blockIdx.x * n;
    T *yr = y + (int64_t)blockIdx.x * n;
    float mx = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = nan_max(mx, to_f(xr[i]));
    mx = block_nan_max(mx, sh);
    if (kind == SM_HARD) {
        /* first index holding the max (a NaN max: the first NaN) */
        float first = (float)n;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            float v = to_f(xr[i]);
            if ((v == mx || (v != v && mx != mx)) && (float)i < first) first = (float)i;
        }
        __syncthreads();
        first = -block_max(-first, sh);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = from_f<T>((float)i == first ? 1.0f : 0.0f);
        return;
    }
    float s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += expf(to_f(xr[i]) - mx);
    __syncthreads();
    s = block_sum(s, sh);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = from_f<T>(finish(kind, to_f(xr[i]), mx, s));
}

template <typename T> __global__ void softmax_cols_k(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, int kind) {
    GRID_LOOP(c, outer * inner) {
        int64_t o = c / inner, in = c % inner;
        const T *xp = x + o * n * inner + in;
        T *yp = y + o * n * inner + in;
        float mx = -INFINITY;
        int64_t arg = 0;
        for (int64_t i = 0; i < n; i++) {
            float v = to_f(xp[i * inner]);
            if (v > mx || (v != v && mx == mx)) { mx = v; arg = i; }
        }
        if (kind == SM_HARD) {
            for (int64_t i = 0; i < n; i++) yp[i * inner] = from_f<T>(i == arg ? 1.0f : 0.0f);
            continue;
        }
        float s = 0;
        for (int64_t i = 0; i < n; i++) s += expf(to_f(xp[i * inner]) - mx);
        for (int64_t i = 0; i < n; i++) yp[i * inner] = from_f<T>(finish(kind, to_f(xp[i * inner]), mx, s));
    }
}

static netrun_status softmax_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(intptr_t)(!strcmp(node->op_type, "LogSoftmax") ? SM_LOG : !strcmp(node->op_type, "Hardmax") ? SM_HARD : SM_SOFTMAX);
    return NETRUN_OK;
}

static netrun_status softmax_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_softmax_params *p = (const netrun_softmax_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int kind = (int)(intptr_t)state;
    int axis = p ? p->axis : X->rank - 1;
    int64_t outer = 1, n = 1, inner = 1;
    for (int i = 0; i < X->rank; i++) {
        if (i < axis) outer *= X->dims[i];
        else if (i == axis || (p && p->coerce_2d)) n *= X->dims[i];
        else inner *= X->dims[i];
    }
    if (outer * n * inner == 0) return NETRUN_OK;
    if (inner == 1) {
        if (outer > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda softmax: too many rows");
        int threads = n >= 1024 ? 512 : n >= 128 ? 128 : 32;
        if (X->dtype == NETRUN_DTYPE_FLOAT)
            softmax_rows_k<float><<<(unsigned)outer, threads, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, n, kind);
        else
            softmax_rows_k<__half><<<(unsigned)outer, threads, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, n, kind);
    } else {
        unsigned b = cuda_blocks(outer * inner);
        if (X->dtype == NETRUN_DTYPE_FLOAT)
            softmax_cols_k<float><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, outer, n, inner, kind);
        else
            softmax_cols_k<__half><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, outer, n, inner, kind);
    }
    return cuda_check_launch("softmax");
}

extern "C" const cuda_op cuda_ops_softmax[] = {
    {"Softmax", CUDA_FLOAT_DTYPES, "", NULL, softmax_create, softmax_run, NULL},
    {"LogSoftmax", CUDA_FLOAT_DTYPES, "", NULL, softmax_create, softmax_run, NULL},
    {"Hardmax", CUDA_FLOAT_DTYPES, "", NULL, softmax_create, softmax_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
