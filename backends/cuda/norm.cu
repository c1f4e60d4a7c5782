/* CUDA kernels: norm. BatchNormalization (inference, with fused activation), LayerNormalization (Mean and
 * InvStdDev outputs), InstanceNormalization, RMSNormalization, GroupNormalization, MeanVarianceNormalization,
 * LpNormalization and LRN, float32/float16 with float statistics. Row statistics use one block per row and a
 * two-pass mean / variance over the row (read twice; rows are short). */
#include "nlp_common.cuh"

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

/* Rows of up to 32 * V values (a transformer's hidden size): one warp a row, the row held in registers, so it is
 * read from memory once (rows_k reads it three times and divides for every scale index; a ViT-B LayerNorm at
 * batch 32 ran at about a sixth of the memory bandwidth). Four rows a block. */
#define LN_WARP_ROWS 4
/* One warp's row in registers: v[k] = x[lane + 32 k] (0 past d); returns the warp's sum of the values (SQUARES: of
 * their squares), in every lane. */
template <typename T, int V, bool SQUARES>
__device__ __forceinline__ float warp_row_load(const T *xr, int d, int lane, float *v) {
    float s = 0;
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int j = lane + 32 * k;
        v[k] = j < d ? to_f(xr[j]) : 0.0f;
        s += SQUARES ? v[k] * v[k] : v[k];
    }
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}

template <typename T, int V>
__global__ void rows_warp_k(const T *x, T *y, const T *scale, const T *bias, int d, int ns, int nb, int64_t rows,
                            float eps, float *mean_out, float *rstd_out) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * LN_WARP_ROWS + (threadIdx.x >> 5);
    if (r >= rows) return;
    const T *xr = x + r * d;
    T *yr = y + r * d;
    float v[V];
    float s = warp_row_load<T, V, false>(xr, d, lane, v);
    const float mean = s / (float)d;
    float q = 0;
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int j = lane + 32 * k;
        const float t = j < d ? v[k] - mean : 0.0f;
        q += t * t;
    }
    for (int o = 16; o > 0; o /= 2) q += __shfl_xor_sync(0xffffffffu, q, o);
    const float rstd = rsqrtf(q / (float)d + eps);
    if (lane == 0) {
        if (mean_out) mean_out[r] = mean;
        if (rstd_out) rstd_out[r] = rstd;
    }
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int j = lane + 32 * k;
        if (j < d) {
            const float sc = to_f(scale[ns == d ? j : j % ns]), b = bias ? to_f(bias[nb == d ? j : j % nb]) : 0.0f;
            yr[j] = from_f<T>((v[k] - mean) * rstd * sc + b);
        }
    }
}

static netrun_status launch_rows(cuda_context *ctx, const netrun_tensor *X, netrun_tensor *Y, const void *scale,
                                 const void *bias, int64_t rows, int64_t d, int64_t ns, int64_t nb, int per_row,
                                 int64_t c, float eps, float *mean, float *rstd) {
    if (rows == 0 || d == 0) return NETRUN_OK;
    if (rows > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda norm: too many rows");
    if (!per_row && d <= 1024) {
        const unsigned blocks = (unsigned)((rows + LN_WARP_ROWS - 1) / LN_WARP_ROWS);
#define WROWS(T, V)                                                                                               \
    rows_warp_k<T, V><<<blocks, 32 * LN_WARP_ROWS, 0, ctx->stream>>>((const T *)X->data, (T *)Y->data,            \
                                                                    (const T *)scale, (const T *)bias, (int)d,    \
                                                                    (int)ns, (int)nb, rows, eps, mean, rstd)
#define WROWS_T(T)                                                                                                \
    if (d <= 128) WROWS(T, 4);                                                                                    \
    else if (d <= 256) WROWS(T, 8);                                                                               \
    else if (d <= 512) WROWS(T, 16);                                                                              \
    else WROWS(T, 32);
        if (X->dtype == NETRUN_DTYPE_FLOAT) {
            WROWS_T(float)
        } else {
            WROWS_T(__half)
        }
#undef WROWS_T
#undef WROWS
        return cuda_check_launch("normalization");
    }
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

/* ---- RMSNormalization: y = x / sqrt(mean(x^2) + eps) * scale over the dims from axis on ---- */

/* Any float dtypes: one block per row of n values; scale indexed by the position in the row (w_contig) or by
 * broadcast strides over X. The common case (one dtype, scale of the row's length) goes to rms_warp_k /
 * rms_block_k below. */
__global__ void rms_k(const void *x, const void *w, void *y, int xt, int wt, int yt, int64_t n, float eps,
                      int w_contig, shape8 xs, strides8 wst) {
    __shared__ float sh[32];
    const int64_t base = (int64_t)blockIdx.x * n;
    float s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float v = ldx(xt, x, base + i);
        s += v * v;
    }
    s = block_sum(s, sh);
    float inv = 1.0f / sqrtf(s / (float)n + eps);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float wv = ldx(wt, w, w_contig ? i : bcast_offset(base + i, xs, wst));
        stx(yt, y, base + i, ldx(xt, x, base + i) * inv * wv);
    }
}

static int row_threads(int64_t d) { return d >= 1024 ? 1024 : d >= 256 ? 256 : 64; }

/* X, scale and Y of one dtype (float32 or float16) and scale the row's length (T5 / LLaMA RMSNorm, the graph
 * pass's fused node): rows of up to 32 * V values one warp a row, the row held in registers and read once, four
 * rows a block (as rows_warp_k); longer rows one block a row (rms_block_k). Sum of squares in float32, then
 * y = (x * (1 / sqrt(mean + eps))) * scale, the exported graph's order. */
template <typename T, int V>
__global__ void rms_warp_k(const T *x, const T *w, T *y, int d, int64_t rows, float eps) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * LN_WARP_ROWS + (threadIdx.x >> 5);
    if (r >= rows) return;
    const T *xr = x + r * d;
    T *yr = y + r * d;
    float v[V];
    float s = warp_row_load<T, V, true>(xr, d, lane, v);
    const float inv = 1.0f / sqrtf(s / (float)d + eps);
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int j = lane + 32 * k;
        if (j < d) yr[j] = from_f<T>(v[k] * inv * to_f(w[j]));
    }
}

template <typename T>
__global__ void rms_block_k(const T *x, const T *w, T *y, int64_t d, float eps) {
    __shared__ float sh[32];
    const T *xr = x + (int64_t)blockIdx.x * d;
    T *yr = y + (int64_t)blockIdx.x * d;
    float s = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float v = to_f(xr[i]);
        s += v * v;
    }
    const float inv = 1.0f / sqrtf(block_sum(s, sh) / (float)d + eps);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = from_f<T>(to_f(xr[i]) * inv * to_f(w[i]));
}

template <typename T>
static void launch_rms_typed(cuda_context *ctx, const void *x, const void *w, void *y, int64_t rows, int64_t d,
                             float eps) {
    const T *xp = (const T *)x, *wp = (const T *)w;
    T *yp = (T *)y;
    if (d <= 1024) {
        const unsigned blocks = (unsigned)((rows + LN_WARP_ROWS - 1) / LN_WARP_ROWS), th = 32 * LN_WARP_ROWS;
        if (d <= 128) rms_warp_k<T, 4><<<blocks, th, 0, ctx->stream>>>(xp, wp, yp, (int)d, rows, eps);
        else if (d <= 256) rms_warp_k<T, 8><<<blocks, th, 0, ctx->stream>>>(xp, wp, yp, (int)d, rows, eps);
        else if (d <= 512) rms_warp_k<T, 16><<<blocks, th, 0, ctx->stream>>>(xp, wp, yp, (int)d, rows, eps);
        else rms_warp_k<T, 32><<<blocks, th, 0, ctx->stream>>>(xp, wp, yp, (int)d, rows, eps);
    } else {
        rms_block_k<T><<<(unsigned)rows, d >= 4096 ? 1024 : 256, 0, ctx->stream>>>(xp, wp, yp, d, eps);
    }
}

static netrun_status rms_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_norm_params *p = (const netrun_norm_params *)args->params;
    const netrun_tensor *X = &args->inputs[0], *W = &args->inputs[1];
    if (!p || p->axis < 0 || p->axis >= X->rank || W->rank > X->rank)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RMSNormalization: bad params (axis) or scale rank");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < X->rank; i++) (i < p->axis ? outer : inner) *= X->dims[i];
    strides8 wst;
    memset(&wst, 0, sizeof wst);
    cuda_broadcast_strides(W->rank, W->dims, X->rank, X->dims, wst.s);
    int w_contig = cuda_count(W) == inner;
    for (int i = 0; i < p->axis && w_contig; i++)
        if (wst.s[i] != 0) w_contig = 0;
    if (outer * inner == 0) return NETRUN_OK;
    if (outer > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda RMSNormalization: too many rows");
    netrun_dtype t = X->dtype;
    if (w_contig && W->dtype == t && args->outputs[0].dtype == t && inner <= INT32_MAX &&
        (t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16)) {
        if (t == NETRUN_DTYPE_FLOAT)
            launch_rms_typed<float>(ctx, X->data, W->data, args->outputs[0].data, outer, inner, p->epsilon);
        else
            launch_rms_typed<__half>(ctx, X->data, W->data, args->outputs[0].data, outer, inner, p->epsilon);
        return cuda_check_launch("RMSNormalization");
    }
    rms_k<<<(unsigned)outer, row_threads(inner), 0, ctx->stream>>>(X->data, W->data, args->outputs[0].data, X->dtype,
                                                                   W->dtype, args->outputs[0].dtype, inner, p->epsilon,
                                                                   w_contig, make_shape(X->rank, X->dims), wst);
    return cuda_check_launch("RMSNormalization");
}

/* ---- GroupNormalization: rows of (C/G) * spatial values, scale/bias per channel (or per group, opset 18) ---- */

__global__ void gn_k(const void *x, void *y, const void *scale, const void *bias, int dt, int st, int bt, int64_t d,
                     int64_t spatial, int64_t groups, int64_t cpg, int per_group, float eps) {
    __shared__ float sh[32];
    const int64_t r = blockIdx.x, base = r * d, g = r % groups;
    float s = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += ldx(dt, x, base + i);
    float mean = block_sum(s, sh) / (float)d;
    float v = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        float t = ldx(dt, x, base + i) - mean;
        v += t * t;
    }
    float inv = 1.0f / sqrtf(block_sum(v, sh) / (float)d + eps);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        int64_t ch = per_group ? g : g * cpg + i / spatial;
        stx(dt, y, base + i, (ldx(dt, x, base + i) - mean) * inv * ldx(st, scale, ch) + ldx(bt, bias, ch));
    }
}

static netrun_status gn_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_norm_params *p = (const netrun_norm_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || args->n_inputs < 3 || X->rank < 2 || p->num_groups < 1 || X->dims[1] % p->num_groups)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda GroupNormalization: bad shape or num_groups");
    int64_t total = cuda_count(X), ch = X->dims[1], g = p->num_groups;
    int64_t ns = cuda_count(&args->inputs[1]), nb = cuda_count(&args->inputs[2]);
    if ((ns != ch && ns != g) || nb != ns)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda GroupNormalization: scale/bias need C (or G) values");
    if (total == 0) return NETRUN_OK;
    int64_t rows = X->dims[0] * g, d = total / rows, spatial = total / (X->dims[0] * ch);
    if (rows > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda GroupNormalization: too many rows");
    gn_k<<<(unsigned)rows, row_threads(d), 0, ctx->stream>>>(
        X->data, args->outputs[0].data, args->inputs[1].data, args->inputs[2].data, X->dtype, args->inputs[1].dtype,
        args->inputs[2].dtype, d, spatial, g, ch / g, ns != ch, p->epsilon);
    return cuda_check_launch("GroupNormalization");
}

/* ---- MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over the given axes ---- */

/* One block per kept index; kept and reduced dims with their element strides in X. */
__global__ void mvn_k(const void *x, void *y, int dt, shape8 kd, strides8 ks, shape8 rd, strides8 rs, int64_t R) {
    __shared__ float sh[32];
    const int64_t base = bcast_offset(blockIdx.x, kd, ks);
    float s = 0;
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x) s += ldx(dt, x, base + bcast_offset(r, rd, rs));
    float mean = block_sum(s, sh) / (float)R;
    float v = 0;
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x) {
        float t = ldx(dt, x, base + bcast_offset(r, rd, rs)) - mean;
        v += t * t;
    }
    float den = sqrtf(block_sum(v, sh) / (float)R) + 1e-9f;
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x) {
        int64_t o = base + bcast_offset(r, rd, rs);
        stx(dt, y, o, (ldx(dt, x, o) - mean) / den);
    }
}

static netrun_status mvn_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_reduce_params *p = (const netrun_reduce_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || p->n_axes < 0 || p->n_axes > X->rank)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda MeanVarianceNormalization: bad params");
    int64_t total = cuda_count(X);
    if (total == 0) return NETRUN_OK;
    int red[NETRUN_MAX_RANK] = {0};
    for (int i = 0; i < p->n_axes; i++) {
        if (p->axes[i] < 0 || p->axes[i] >= X->rank)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda MeanVarianceNormalization: axis out of range");
        red[p->axes[i]] = 1;
    }
    shape8 kd, rd;
    strides8 ks, rs;
    memset(&kd, 0, sizeof kd); memset(&rd, 0, sizeof rd); memset(&ks, 0, sizeof ks); memset(&rs, 0, sizeof rs);
    int64_t stride = 1, R = 1;
    for (int i = X->rank - 1; i >= 0; i--) { /* filled from the back, shifted down below */
        if (red[i]) { rd.dims[NETRUN_MAX_RANK - 1 - rd.rank] = X->dims[i]; rs.s[NETRUN_MAX_RANK - 1 - rd.rank++] = stride; R *= X->dims[i]; }
        else { kd.dims[NETRUN_MAX_RANK - 1 - kd.rank] = X->dims[i]; ks.s[NETRUN_MAX_RANK - 1 - kd.rank++] = stride; }
        stride *= X->dims[i];
    }
    for (int i = 0; i < rd.rank; i++) { rd.dims[i] = rd.dims[NETRUN_MAX_RANK - rd.rank + i]; rs.s[i] = rs.s[NETRUN_MAX_RANK - rd.rank + i]; }
    for (int i = 0; i < kd.rank; i++) { kd.dims[i] = kd.dims[NETRUN_MAX_RANK - kd.rank + i]; ks.s[i] = ks.s[NETRUN_MAX_RANK - kd.rank + i]; }
    int64_t groups = total / R;
    if (groups > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda MeanVarianceNormalization: too many groups");
    mvn_k<<<(unsigned)groups, row_threads(R), 0, ctx->stream>>>(X->data, args->outputs[0].data, X->dtype, kd, ks, rd, rs, R);
    return cuda_check_launch("MeanVarianceNormalization");
}

/* ---- LpNormalization: x / ||x||_p along one axis ([outer, R, inner]); a zero norm gives 0 ---- */

__global__ void lpn_k(const void *x, void *y, int dt, int64_t cols, int64_t R, int64_t inner, int pw) {
    GRID_LOOP(t, cols) {
        int64_t base = (t / inner) * R * inner + t % inner;
        float s = 0;
        for (int64_t r = 0; r < R; r++) {
            float v = ldx(dt, x, base + r * inner);
            s += pw == 1 ? fabsf(v) : v * v;
        }
        float norm = pw == 1 ? s : sqrtf(s);
        for (int64_t r = 0; r < R; r++) {
            int64_t i = base + r * inner;
            stx(dt, y, i, norm == 0.0f ? 0.0f : ldx(dt, x, i) / norm);
        }
    }
}

static netrun_status lpn_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_lpnorm_params *p = (const netrun_lpnorm_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || p->axis < 0 || p->axis >= X->rank || (p->p != 1 && p->p != 2))
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda LpNormalization: bad params");
    int64_t total = cuda_count(X), R = X->dims[p->axis], inner = 1;
    if (total == 0) return NETRUN_OK;
    for (int i = p->axis + 1; i < X->rank; i++) inner *= X->dims[i];
    lpn_k<<<cuda_blocks(total / R), CUDA_THREADS, 0, ctx->stream>>>(X->data, args->outputs[0].data, X->dtype, total / R,
                                                                    R, inner, (int)p->p);
    return cuda_check_launch("LpNormalization");
}

/* ---- LRN: across channels, window [c - floor((size-1)/2), c + ceil((size-1)/2)] ---- */

__global__ void lrn_k(const void *x, void *y, int dt, int64_t total, int64_t C, int64_t plane, int64_t lo, int64_t hi,
                      float a, float bias, float beta) {
    GRID_LOOP(i, total) {
        int64_t s = i % plane, c = (i / plane) % C, n = i / (plane * C);
        int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi > C - 1 ? C - 1 : c + hi;
        float sq = 0;
        for (int64_t k = c0; k <= c1; k++) {
            float v = ldx(dt, x, (n * C + k) * plane + s);
            sq += v * v;
        }
        stx(dt, y, i, ldx(dt, x, i) / powf(bias + a * sq, beta));
    }
}

static netrun_status lrn_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_lrn_params *p = (const netrun_lrn_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || X->rank < 3 || p->size < 1) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda LRN: bad params");
    int64_t total = cuda_count(X);
    if (total == 0) return NETRUN_OK;
    int64_t C = X->dims[1], plane = total / (X->dims[0] * C);
    lrn_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(X->data, args->outputs[0].data, X->dtype, total, C, plane,
                                                                (p->size - 1) / 2, p->size / 2,
                                                                p->alpha / (float)p->size, p->bias, p->beta);
    return cuda_check_launch("LRN");
}

/* The ops above: every present input float32/float16 (dtypes may differ: loads go through float). */
static int float_inputs_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!node->params) return cuda_refuse(reason, size, "no params");
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && !nlp_float_dtype(node->inputs[i].dtype))
            return cuda_refuse(reason, size, "input %d dtype %s not supported by the CUDA %s kernel", i,
                               cuda_dtype_name(node->inputs[i].dtype), node->op_type);
    for (int o = 0; o < node->n_outputs && o < 1; o++)
        if (!nlp_float_dtype(node->outputs[o].dtype))
            return cuda_refuse(reason, size, "output dtype %s", cuda_dtype_name(node->outputs[o].dtype));
    return 1;
}

extern "C" const cuda_op cuda_ops_norm[] = {
    {"BatchNormalization", CUDA_FLOAT_DTYPES, "inference only; fused activation", norm_supports, NULL, bn_run, NULL},
    {"InstanceNormalization", CUDA_FLOAT_DTYPES, "", norm_supports, NULL, in_run, NULL},
    {"LayerNormalization", CUDA_FLOAT_DTYPES, "scale/B: full normalized shape or a trailing block; float32 Mean/InvStdDev",
     norm_supports, NULL, ln_run, NULL},
    {"RMSNormalization", CUDA_FLOAT_DTYPES, "scale broadcast over X; float statistics", float_inputs_supports, NULL,
     rms_run, NULL},
    {"GroupNormalization", CUDA_FLOAT_DTYPES, "scale/bias per channel (opset 21) or per group (opset 18)",
     float_inputs_supports, NULL, gn_run, NULL},
    {"MeanVarianceNormalization", CUDA_FLOAT_DTYPES, "", float_inputs_supports, NULL, mvn_run, NULL},
    {"LpNormalization", CUDA_FLOAT_DTYPES, "p = 1 or 2", float_inputs_supports, NULL, lpn_run, NULL},
    {"LRN", CUDA_FLOAT_DTYPES, "", float_inputs_supports, NULL, lrn_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
