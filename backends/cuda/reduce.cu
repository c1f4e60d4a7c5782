/* CUDA kernels: reduce. ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp over any set of axes:
 * float32/float16/bfloat16 with float accumulation, double in double; ReduceMax/Min also on int8, uint8,
 * int32, int64 and bool (any / all), in the element type. Each output element owns a set of input elements addressed by the
 * kept and reduced dims; large reductions take one block per output, small ones one thread per output. */
#include <limits>
#include <type_traits>

#include "cuda_kernels.cuh"

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LSE };

struct red_geo {
    int nk, nr;
    int64_t kd[NETRUN_MAX_RANK], ks[NETRUN_MAX_RANK]; /* kept dims and their input strides */
    int64_t rd[NETRUN_MAX_RANK], rs[NETRUN_MAX_RANK]; /* reduced dims and strides */
    int64_t count;                                    /* reduced elements per output */
};

__device__ __forceinline__ int64_t geo_off(int64_t i, int n, const int64_t *d, const int64_t *s) {
    int64_t off = 0;
    for (int k = n - 1; k >= 0; k--) {
        int64_t q = i / d[k];
        off += (i - q * d[k]) * s[k];
        i = q;
    }
    return off;
}

__device__ __forceinline__ float red_map(int op, float v) {
    switch (op) {
    case R_L1: return fabsf(v);
    case R_L2: case R_SUMSQ: return v * v;
    default: return v;
    }
}

__device__ __forceinline__ float red_final(int op, float acc, int64_t count) {
    switch (op) {
    case R_MEAN: return acc / (float)count;
    case R_L2: return sqrtf(acc);
    case R_LOGSUM: return logf(acc);
    default: return acc;
    }
}

/* one thread per output */
template <typename T> __global__ void reduce_thread_k(const T *x, T *y, int64_t nout, red_geo g, int op) {
    GRID_LOOP(o, nout) {
        const T *base = x + geo_off(o, g.nk, g.kd, g.ks);
        float acc;
        if (op == R_LSE) {
            /* a NaN, +inf or all -inf (or empty) maximum is the result itself; else the stable sum */
            float mx = -INFINITY;
            for (int64_t r = 0; r < g.count; r++) mx = nan_max(mx, to_f(base[geo_off(r, g.nr, g.rd, g.rs)]));
            float s = 0;
            if (isfinite(mx))
                for (int64_t r = 0; r < g.count; r++) s += expf(to_f(base[geo_off(r, g.nr, g.rd, g.rs)]) - mx);
            acc = isfinite(mx) ? mx + logf(s) : mx;
        } else {
            acc = op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : op == R_PROD ? 1.0f : 0.0f;
            for (int64_t r = 0; r < g.count; r++) {
                float v = red_map(op, to_f(base[geo_off(r, g.nr, g.rd, g.rs)]));
                if (op == R_MAX) acc = (v != v || acc != acc) ? NAN : fmaxf(acc, v);
                else if (op == R_MIN) acc = (v != v || acc != acc) ? NAN : fminf(acc, v);
                else if (op == R_PROD) acc *= v;
                else acc += v;
            }
            acc = red_final(op, acc, g.count);
        }
        y[o] = from_f<T>(acc);
    }
}

/* one block per output (sum-like, max, min) */
template <typename T> __global__ void reduce_block_k(const T *x, T *y, red_geo g, int op) {
    __shared__ float sh[32];
    int64_t o = blockIdx.x;
    const T *base = x + geo_off(o, g.nk, g.kd, g.ks);
    int mx = op == R_MAX, mn = op == R_MIN;
    float acc = mx || mn ? -INFINITY : 0.0f, nan = 0;
    for (int64_t r = threadIdx.x; r < g.count; r += blockDim.x) {
        float v = red_map(op, to_f(base[geo_off(r, g.nr, g.rd, g.rs)]));
        if (v != v) nan = 1;
        if (mx) acc = fmaxf(acc, v);
        else if (mn) acc = fmaxf(acc, -v);
        else acc += v;
    }
    float r = mx || mn ? block_max(acc, sh) : block_sum(acc, sh);
    __syncthreads();
    nan = block_sum(nan, sh);
    if (threadIdx.x == 0) {
        float v = mn ? -r : r;
        if (mx || mn) v = nan > 0 ? NAN : v;
        else v = red_final(op, v, g.count);
        y[o] = from_f<T>(v);
    }
}

/* ---- double and integer types: the accumulator A is the element type ---- */

__device__ __forceinline__ double r_abs(double v) { return fabs(v); }
template <typename A> __device__ __forceinline__ A r_abs(A v) {
    if constexpr (std::is_signed<A>::value) return v < 0 ? (A)(0 - v) : v;
    else return v;
}

template <typename A> __device__ __forceinline__ A gen_map(int op, A v) {
    switch (op) {
    case R_L1: return r_abs(v);
    case R_L2: case R_SUMSQ: return gen_comb(R_PROD, v, v);
    default: return v;
    }
}

template <typename A> __device__ __forceinline__ A gen_final(int op, A acc, int64_t count) {
    if constexpr (std::is_floating_point<A>::value) {
        switch (op) {
        case R_MEAN: return acc / (A)count;
        case R_L2: return sqrt(acc);
        case R_LOGSUM: return log(acc);
        default: return acc;
        }
    } else {
        /* integer mean: truncated, like the CPU (an empty one, NaN there, is the type's minimum: the kernels) */
        if (op == R_MEAN) return count ? (A)(acc / (A)count) : acc;
        return acc;
    }
}

/* max / min with NaN propagating (the comparisons are false for integers' NaN-free values); integer sums and
 * products wrap (two's complement, computed unsigned: signed overflow would be undefined) */
template <typename A> __device__ __forceinline__ A gen_comb(int op, A acc, A v) {
    if (op == R_MAX) return (v != v || acc != acc) ? (v != v ? v : acc) : (v > acc ? v : acc);
    if (op == R_MIN) return (v != v || acc != acc) ? (v != v ? v : acc) : (v < acc ? v : acc);
    if constexpr (std::is_integral<A>::value) {
        typedef typename std::make_unsigned<A>::type U;
        return op == R_PROD ? (A)((U)acc * (U)v) : (A)((U)acc + (U)v);
    } else {
        return op == R_PROD ? acc * v : acc + v;
    }
}

template <typename A> __device__ __forceinline__ A gen_init(int op, A lowest, A highest) {
    return op == R_MAX ? lowest : op == R_MIN ? highest : op == R_PROD ? (A)1 : (A)0;
}

/* int32 accumulates in int64 like the CPU (a truncated mean of an overflowing sum agrees); others in their type */
template <typename A> struct gen_acc { typedef A type; };
template <> struct gen_acc<int32_t> { typedef int64_t type; };

/* one thread per output */
template <typename A>
__global__ void reduce_gen_thread_k(const A *x, A *y, int64_t nout, red_geo g, int op, A lowest, A highest) {
    typedef typename gen_acc<A>::type C;
    GRID_LOOP(o, nout) {
        const A *base = x + geo_off(o, g.nk, g.kd, g.ks);
        C acc;
        if constexpr (std::is_floating_point<A>::value) {
            if (op == R_LSE) {
                A mx = lowest;
                for (int64_t r = 0; r < g.count; r++) mx = gen_comb(R_MAX, mx, base[geo_off(r, g.nr, g.rd, g.rs)]);
                A s = 0;
                if (mx == mx && mx != lowest && mx != highest)
                    for (int64_t r = 0; r < g.count; r++) s += exp(base[geo_off(r, g.nr, g.rd, g.rs)] - mx);
                /* empty: log(0) = -inf; an infinite or NaN maximum is the result itself */
                y[o] = g.count == 0 ? -(A)INFINITY : (mx == mx && mx != lowest && mx != highest) ? mx + log(s) : mx;
                continue;
            }
        }
        acc = gen_init(op, (C)lowest, (C)highest);
        for (int64_t r = 0; r < g.count; r++)
            acc = gen_comb(op, acc, gen_map(op, (C)base[geo_off(r, g.nr, g.rd, g.rs)]));
        y[o] = op == R_MEAN && !g.count ? lowest : (A)gen_final(op, acc, g.count);
    }
}

/* one block of 256 threads per output (not LogSumExp): a shared-memory tree */
template <typename A> __global__ void reduce_gen_block_k(const A *x, A *y, red_geo g, int op, A lowest, A highest) {
    typedef typename gen_acc<A>::type C;
    __shared__ C sh[256];
    int64_t o = blockIdx.x;
    const A *base = x + geo_off(o, g.nk, g.kd, g.ks);
    C acc = gen_init(op, (C)lowest, (C)highest);
    for (int64_t r = threadIdx.x; r < g.count; r += blockDim.x)
        acc = gen_comb(op, acc, gen_map(op, (C)base[geo_off(r, g.nr, g.rd, g.rs)]));
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] = gen_comb(op == R_PROD ? R_PROD : op == R_MAX || op == R_MIN ? op : R_SUM,
                                                          sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) y[o] = op == R_MEAN && !g.count ? lowest : (A)gen_final(op, sh[0], g.count);
}

template <typename A>
static void launch_gen(cuda_context *ctx, const void *x, void *y, int64_t nout, const red_geo &g, int op) {
    A lo = std::numeric_limits<A>::lowest(), hi = std::numeric_limits<A>::max();
    if (std::is_floating_point<A>::value) {
        lo = -std::numeric_limits<A>::infinity();
        hi = std::numeric_limits<A>::infinity();
    }
    if (g.count >= 256 && op != R_LSE && nout <= INT32_MAX)
        reduce_gen_block_k<A><<<(unsigned)nout, 256, 0, ctx->stream>>>((const A *)x, (A *)y, g, op, lo, hi);
    else
        reduce_gen_thread_k<A><<<cuda_blocks(nout), CUDA_THREADS, 0, ctx->stream>>>((const A *)x, (A *)y, nout, g, op, lo, hi);
}

static const struct {
    const char *name;
    int op;
} red_ops[] = {{"ReduceSum", R_SUM}, {"ReduceMean", R_MEAN}, {"ReduceMax", R_MAX}, {"ReduceMin", R_MIN},
               {"ReduceProd", R_PROD}, {"ReduceL1", R_L1}, {"ReduceL2", R_L2}, {"ReduceSumSquare", R_SUMSQ},
               {"ReduceLogSum", R_LOGSUM}, {"ReduceLogSumExp", R_LSE}, {NULL, 0}};

static netrun_status reduce_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    for (int i = 0; red_ops[i].name; i++)
        if (!strcmp(red_ops[i].name, node->op_type)) {
            *state = (void *)(intptr_t)(red_ops[i].op + 1);
            return NETRUN_OK;
        }
    return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "no CUDA kernel for %s", node->op_type);
}

static netrun_status reduce_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_reduce_params *p = (const netrun_reduce_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int op = (int)(intptr_t)state - 1;
    int64_t nout = cuda_count(Y);
    if (nout == 0) return NETRUN_OK;
    int red[NETRUN_MAX_RANK] = {0};
    if (p && !p->noop) {
        if (p->n_axes == 0)
            for (int i = 0; i < X->rank; i++) red[i] = 1;
        for (int i = 0; i < p->n_axes; i++)
            if (p->axes[i] >= 0 && p->axes[i] < X->rank) red[p->axes[i]] = 1;
    }
    red_geo g;
    memset(&g, 0, sizeof g);
    int64_t stride = 1, strides[NETRUN_MAX_RANK];
    for (int i = X->rank - 1; i >= 0; i--) {
        strides[i] = stride;
        stride *= X->dims[i];
    }
    g.count = 1;
    for (int i = 0; i < X->rank; i++) {
        if (red[i]) {
            g.rd[g.nr] = X->dims[i];
            g.rs[g.nr++] = strides[i];
            g.count *= X->dims[i];
        } else {
            g.kd[g.nk] = X->dims[i];
            g.ks[g.nk++] = strides[i];
        }
    }
    int block = g.count >= 256 && op != R_PROD && op != R_LSE && nout <= INT32_MAX;
#define RED(T)                                                                                                     \
    if (block)                                                                                                     \
        reduce_block_k<T><<<(unsigned)nout, 256, 0, ctx->stream>>>((const T *)X->data, (T *)Y->data, g, op);     \
    else                                                                                                           \
        reduce_thread_k<T><<<cuda_blocks(nout), CUDA_THREADS, 0, ctx->stream>>>((const T *)X->data, (T *)Y->data, nout, g, op);
    switch (X->dtype) {
    case NETRUN_DTYPE_FLOAT: RED(float) break;
    case NETRUN_DTYPE_FLOAT16: RED(__half) break;
    case NETRUN_DTYPE_BFLOAT16: RED(__nv_bfloat16) break;
    case NETRUN_DTYPE_DOUBLE: launch_gen<double>(ctx, X->data, Y->data, nout, g, op); break;
    case NETRUN_DTYPE_INT8: launch_gen<int8_t>(ctx, X->data, Y->data, nout, g, op); break;
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_BOOL: launch_gen<uint8_t>(ctx, X->data, Y->data, nout, g, op); break;
    case NETRUN_DTYPE_INT32: launch_gen<int32_t>(ctx, X->data, Y->data, nout, g, op); break;
    case NETRUN_DTYPE_INT64: launch_gen<int64_t>(ctx, X->data, Y->data, nout, g, op); break;
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda reduce: dtype %s", cuda_dtype_name(X->dtype));
    }
#undef RED
    return cuda_check_launch("reduce");
}

static int reduce_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = cuda_main_dtype(node);
    if (t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16 || t == NETRUN_DTYPE_BFLOAT16 || t == NETRUN_DTYPE_DOUBLE)
        return 1;
    int minmax = !strcmp(node->op_type, "ReduceMax") || !strcmp(node->op_type, "ReduceMin");
    if (minmax && (t == NETRUN_DTYPE_INT8 || t == NETRUN_DTYPE_UINT8 || t == NETRUN_DTYPE_INT32 ||
                   t == NETRUN_DTYPE_INT64 || t == NETRUN_DTYPE_BOOL))
        return 1;
    /* int32/int64 sums, products, means (truncated), L1 and sums of squares: wrapping like the CPU's (detectors'
     * shape arithmetic: ReduceProd of a Shape) */
    int arith = !strcmp(node->op_type, "ReduceSum") || !strcmp(node->op_type, "ReduceProd") ||
                !strcmp(node->op_type, "ReduceMean") || !strcmp(node->op_type, "ReduceL1") ||
                !strcmp(node->op_type, "ReduceSumSquare");
    if (arith && (t == NETRUN_DTYPE_INT32 || t == NETRUN_DTYPE_INT64)) return 1;
    return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
}

#define R(name) {name, CUDA_FLOAT_DTYPES | CUDA_DT(BFLOAT16) | CUDA_DT(DOUBLE), "any axes; Max/Min also int8, uint8, int32, int64, bool; Sum/Prod/Mean/L1/SumSquare also int32, int64 (wrapping, like the CPU)", reduce_supports, reduce_create, reduce_run, NULL},
extern "C" const cuda_op cuda_ops_reduce[] = {
    R("ReduceSum") R("ReduceMean") R("ReduceMax") R("ReduceMin") R("ReduceProd") R("ReduceL1") R("ReduceL2")
    R("ReduceSumSquare") R("ReduceLogSum") R("ReduceLogSumExp")
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
