/* CUDA kernels: shape ops. Reshape / Flatten / Squeeze / Unsqueeze / Identity / Dropout (inference) are device
 * copies (skipped when the runtime already aliases input and output); Expand broadcasts; Shape and Size write
 * the dims they read on the host; ConstantOfShape, EyeLike, Trilu, Tile and Range write their outputs from
 * params and device inputs. */
#include <type_traits>

#include "cuda_kernels.cuh"

static netrun_status copy_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    size_t bytes = Y->nbytes < X->nbytes ? Y->nbytes : X->nbytes;
    if (!bytes || X->data == Y->data) return NETRUN_OK;
    cudaError_t e = cudaMemcpyAsync(Y->data, X->data, bytes, cudaMemcpyDeviceToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "device copy");
}

static int copy_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    return 1;
}

static int dropout_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!copy_supports(node, reason, size)) return 0;
    if (node->n_outputs > 1 && node->outputs[1].name && *node->outputs[1].name && !cuda_esize(node->outputs[1].dtype))
        return cuda_refuse(reason, size, "Dropout mask dtype %s", cuda_dtype_name(node->outputs[1].dtype));
    if (node->n_inputs > 2 && node->inputs[2].rank >= 0) {
        const netrun_value_desc *t = &node->inputs[2];
        if (!t->const_data || t->dtype != NETRUN_DTYPE_BOOL || t->const_nbytes < 1 || *(const uint8_t *)t->const_data)
            return cuda_refuse(reason, size, "Dropout training_mode not constant false");
    }
    return 1;
}

static netrun_status expand_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t st[NETRUN_MAX_RANK];
    cuda_broadcast_strides(X->rank, X->dims, Y->rank, Y->dims, st);
    return cuda_expand(ctx, cuda_esize(X->dtype), Y->data, X->data, Y->rank, Y->dims, st);
}

static netrun_status shape_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_shape_params *p = (const netrun_shape_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t v[NETRUN_MAX_RANK + 1];
    size_t n = 0;
    if (!strcmp((const char *)state, "Size")) v[n++] = cuda_count(X);
    else {
        int a = p ? p->start : 0, b = p ? p->end : X->rank;
        for (int i = a; i < b && i < X->rank; i++) v[n++] = X->dims[i];
    }
    if (n * sizeof(int64_t) > Y->nbytes) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Shape: output too small");
    if (!n) return NETRUN_OK;
    /* pageable source: the copy returns once v has been staged */
    cudaError_t e = cudaMemcpyAsync(Y->data, v, n * sizeof(int64_t), cudaMemcpyHostToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "Shape copy");
}

static netrun_status shape_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(!strcmp(node->op_type, "Size") ? "Size" : "Shape");
    return NETRUN_OK;
}

static int any_supports(const netrun_node_desc *node, char *reason, size_t size) { return 1; }

/* ---- ConstantOfShape / EyeLike / Trilu / Tile / Range ---- */

/* The output's element size, for ops whose input 0 is only a shape. */
static int out_bytes_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_outputs < 1 || !cuda_esize(node->outputs[0].dtype))
        return cuda_refuse(reason, size, "output dtype %s", node->n_outputs < 1 ? "absent" : cuda_dtype_name(node->outputs[0].dtype));
    return 1;
}

template <typename E> __global__ void fill_k(E *y, int64_t n, E v) {
    GRID_LOOP(i, n) y[i] = v;
}

template <typename E> static void launch_fill(cuda_context *ctx, void *y, int64_t n, const unsigned char *bits) {
    E v;
    memcpy(&v, bits, sizeof v);
    fill_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((E *)y, n, v);
}

static netrun_status cos_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_fill_params *p = (const netrun_fill_params *)args->params;
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    unsigned char v[16];
    memset(v, 0, sizeof v);
    if (p) memcpy(v, p->value, sizeof v);
    DISPATCH_ES(cuda_esize(Y->dtype), (launch_fill<E>(ctx, Y->data, n, v)));
    return cuda_check_launch("ConstantOfShape");
}

/* 1 as the bits of a dtype. */
static uint64_t one_bits(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: { float f = 1.0f; uint32_t b; memcpy(&b, &f, 4); return b; }
    case NETRUN_DTYPE_DOUBLE: { double f = 1.0; uint64_t b; memcpy(&b, &f, 8); return b; }
    case NETRUN_DTYPE_FLOAT16: return 0x3c00u;
    case NETRUN_DTYPE_BFLOAT16: return 0x3f80u;
    default: return 1; /* integers and bool */
    }
}

template <typename E> __global__ void eye_k(E *y, int64_t n, int64_t cols, int64_t k, E one) {
    GRID_LOOP(i, n) {
        int64_t r = i / cols, c = i - r * cols;
        y[i] = c - r == k ? one : (E)0;
    }
}

static netrun_status eyelike_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_eyelike_params *p = (const netrun_eyelike_params *)args->params;
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    if (Y->rank != 2) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda EyeLike: output rank %d", Y->rank);
    uint64_t one = one_bits(Y->dtype);
    int64_t k = p ? p->k : 0;
    DISPATCH_ES(cuda_esize(Y->dtype), (eye_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (E *)Y->data, n, Y->dims[1], k, (E)one)));
    return cuda_check_launch("EyeLike");
}

/* upper keeps column j >= i + k of row i; lower keeps j <= i + k */
template <typename E> __global__ void trilu_k(const E *x, E *y, int64_t n, int64_t rows, int64_t cols, int64_t k, int upper) {
    GRID_LOOP(i, n) {
        int64_t t = i / cols, j = i - t * cols, r = t % rows;
        bool keep = upper ? j >= r + k : j <= r + k;
        y[i] = keep ? x[i] : (E)0;
    }
}

static netrun_status trilu_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_trilu_params *p = (const netrun_trilu_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    if (X->rank < 2) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Trilu: rank %d", X->rank);
    int64_t k = p ? p->k : 0;
    int upper = p ? p->upper : 1;
    /* |k| beyond the matrix keeps all or nothing; clamp so r + k cannot overflow */
    int64_t lim = X->dims[X->rank - 2] + X->dims[X->rank - 1] + 1;
    if (k > lim) k = lim;
    if (k < -lim) k = -lim;
    DISPATCH_ES(cuda_esize(X->dtype), (trilu_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (E *)Y->data, n, X->dims[X->rank - 2],
                                          X->dims[X->rank - 1], k, upper)));
    return cuda_check_launch("Trilu");
}

template <typename E> __global__ void tile_k(const E *x, E *y, int64_t n, shape8 out, shape8 in) {
    GRID_LOOP(i, n) {
        int64_t rem = i, off = 0, mul = 1;
        for (int d = out.rank - 1; d >= 0; d--) {
            int64_t q = rem / out.dims[d], c = rem - q * out.dims[d];
            rem = q;
            off += (c % in.dims[d]) * mul;
            mul *= in.dims[d];
        }
        y[i] = x[off];
    }
}

static netrun_status tile_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    if (X->rank != Y->rank) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Tile: rank mismatch");
    if (Y->rank == 0) {
        cudaError_t e = cudaMemcpyAsync(Y->data, X->data, cuda_esize(X->dtype), cudaMemcpyDeviceToDevice, ctx->stream);
        return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "Tile copy");
    }
    shape8 out = make_shape(Y->rank, Y->dims), in = make_shape(X->rank, X->dims);
    DISPATCH_ES(cuda_esize(X->dtype), (tile_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (E *)Y->data, n, out, in)));
    return cuda_check_launch("Tile");
}

/* Range reads start and delta on the device (the output length came from the host copy at inference):
 * floats compute start + i * delta in their type, half and bfloat16 in double rounded to float, integers in
 * int64 (the CPU kernel's arithmetic). */
__device__ __forceinline__ uint16_t bf16_round(float f) {
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

template <typename T> __global__ void range_k(const T *start, const T *delta, T *y, int64_t n) {
    GRID_LOOP(i, n) {
        /* the product rounded on its own (no fused multiply-add), as the CPU kernel computes it */
        if constexpr (std::is_same<T, float>::value) y[i] = start[0] + __fmul_rn((float)i, delta[0]);
        else if constexpr (std::is_same<T, double>::value) y[i] = start[0] + __dmul_rn((double)i, delta[0]);
        else /* unsigned: i * delta may pass INT64_MAX on the way though each value is in range */
            y[i] = (T)(int64_t)((uint64_t)(int64_t)start[0] + (uint64_t)i * (uint64_t)(int64_t)delta[0]);
    }
}

__global__ void range_half_k(const uint16_t *start, const uint16_t *delta, uint16_t *y, int64_t n, int bf16) {
    double s = bf16 ? (double)__uint_as_float((uint32_t)start[0] << 16) : (double)__half2float(__ushort_as_half(start[0]));
    double d = bf16 ? (double)__uint_as_float((uint32_t)delta[0] << 16) : (double)__half2float(__ushort_as_half(delta[0]));
    GRID_LOOP(i, n) {
        float v = (float)(s + __dmul_rn((double)i, d));
        y[i] = bf16 ? bf16_round(v) : __half_as_ushort(__float2half_rn(v));
    }
}

static netrun_status range_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    const void *s = args->inputs[0].data, *d = args->inputs[2].data;
    unsigned b = cuda_blocks(n);
    switch (Y->dtype) {
    case NETRUN_DTYPE_FLOAT: range_k<float><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)s, (const float *)d, (float *)Y->data, n); break;
    case NETRUN_DTYPE_DOUBLE: range_k<double><<<b, CUDA_THREADS, 0, ctx->stream>>>((const double *)s, (const double *)d, (double *)Y->data, n); break;
    case NETRUN_DTYPE_INT16: range_k<int16_t><<<b, CUDA_THREADS, 0, ctx->stream>>>((const int16_t *)s, (const int16_t *)d, (int16_t *)Y->data, n); break;
    case NETRUN_DTYPE_INT32: range_k<int32_t><<<b, CUDA_THREADS, 0, ctx->stream>>>((const int32_t *)s, (const int32_t *)d, (int32_t *)Y->data, n); break;
    case NETRUN_DTYPE_INT64: range_k<int64_t><<<b, CUDA_THREADS, 0, ctx->stream>>>((const int64_t *)s, (const int64_t *)d, (int64_t *)Y->data, n); break;
    case NETRUN_DTYPE_FLOAT16:
    case NETRUN_DTYPE_BFLOAT16:
        range_half_k<<<b, CUDA_THREADS, 0, ctx->stream>>>((const uint16_t *)s, (const uint16_t *)d, (uint16_t *)Y->data, n,
                                                          Y->dtype == NETRUN_DTYPE_BFLOAT16);
        break;
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Range: dtype %s", cuda_dtype_name(Y->dtype));
    }
    return cuda_check_launch("Range");
}

/* Dropout in inference: y = x; the mask is all true from opset 12, all false before (onnxruntime, the
 * reference, writes false there; the CPU kernel does the same). */
static netrun_status dropout_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(intptr_t)(node->opset < 12 ? 1 : 0);
    return NETRUN_OK;
}

static netrun_status dropout_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    netrun_status st = copy_run(ctx, NULL, args);
    if (st != NETRUN_OK || args->n_outputs < 2) return st;
    netrun_tensor *M = &args->outputs[1];
    int64_t n = cuda_count(M);
    if (M->rank < 0 || !M->data || n == 0) return NETRUN_OK;
    size_t es = cuda_esize(M->dtype);
    uint64_t bits = (intptr_t)state == 1 ? 0 : one_bits(M->dtype);
    unsigned char v[16];
    memset(v, 0, sizeof v);
    memcpy(v, &bits, es <= sizeof bits ? es : sizeof bits); /* little-endian: the low bytes hold the value */
    DISPATCH_ES(es, (launch_fill<E>(ctx, M->data, n, v)));
    return cuda_check_launch("Dropout mask");
}

#define RANGE_DTYPES                                                                                             \
    (CUDA_DT(FLOAT) | CUDA_DT(DOUBLE) | CUDA_DT(INT16) | CUDA_DT(INT32) | CUDA_DT(INT64) | CUDA_DT(FLOAT16) |    \
     CUDA_DT(BFLOAT16))

#define COPY(name) {name, CUDA_ALL_DTYPES, "device copy", copy_supports, NULL, copy_run, NULL},
extern "C" const cuda_op cuda_ops_shape_ops[] = {
    COPY("Reshape") COPY("Flatten") COPY("Squeeze") COPY("Unsqueeze") COPY("Identity")
    {"Dropout", CUDA_ALL_DTYPES, "inference only (mask all true, all false before opset 12)", dropout_supports,
     dropout_create, dropout_run, NULL},
    {"Expand", CUDA_ALL_DTYPES, "", copy_supports, NULL, expand_run, NULL},
    {"Shape", CUDA_ALL_DTYPES, "", any_supports, shape_create, shape_run, NULL},
    {"Size", CUDA_ALL_DTYPES, "", any_supports, shape_create, shape_run, NULL},
    {"ConstantOfShape", CUDA_DT(INT64), "", out_bytes_supports, NULL, cos_run, NULL},
    {"EyeLike", CUDA_ALL_DTYPES, "2-D", out_bytes_supports, NULL, eyelike_run, NULL},
    {"Trilu", CUDA_ALL_DTYPES, "", copy_supports, NULL, trilu_run, NULL},
    {"Tile", CUDA_ALL_DTYPES, "", copy_supports, NULL, tile_run, NULL},
    {"Range", RANGE_DTYPES, "", NULL, NULL, range_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
