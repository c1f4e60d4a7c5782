/* CUDA kernels: elementwise unary and binary ops with numpy broadcasting, variadic Sum/Max/Min/Mean, Where,
 * PRelu, Mod, BitShift, Bitwise*, IsInf/IsNaN (Cast and BitCast: cast.cu, quantize.cu), plus the bias +
 * activation and broadcast-copy launchers that Conv and Gemm use. Kernels are templates over the element type:
 * float16 and bfloat16 are computed in float, double in double, integers in their own type (wrapping, as the CPU
 * backend). */
#include <limits>
#include <type_traits>

#include "cuda_kernels.cuh"

/* Compute type: half types in float, everything else in its own type. */
template <typename T> struct compute_of { typedef T t; };
template <> struct compute_of<__half> { typedef float t; };
template <> struct compute_of<__nv_bfloat16> { typedef float t; };

template <typename T, typename C> __device__ __forceinline__ C ld(const T *p, int64_t i) { return (C)p[i]; }
template <> __device__ __forceinline__ float ld<__half, float>(const __half *p, int64_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16, float>(const __nv_bfloat16 *p, int64_t i) {
    return __bfloat162float(p[i]);
}
template <typename T, typename C> __device__ __forceinline__ void st(T *p, int64_t i, C v) { p[i] = (T)v; }
template <> __device__ __forceinline__ void st<__half, float>(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
template <> __device__ __forceinline__ void st<__nv_bfloat16, float>(__nv_bfloat16 *p, int64_t i, float v) {
    p[i] = __float2bfloat16_rn(v);
}

/* ---- unary ---- */

enum un_op {
    U_RELU, U_NEG, U_ABS, U_SIGN, U_SIGMOID, U_TANH, U_ERF, U_EXP, U_LOG, U_SQRT, U_RECIPROCAL, U_FLOOR, U_CEIL,
    U_ROUND, U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH, U_ATANH, U_SOFTPLUS,
    U_SOFTSIGN, U_HARD_SWISH, U_MISH, U_LEAKY_RELU, U_ELU, U_SELU, U_CELU, U_HARD_SIGMOID, U_THRESHOLDED_RELU,
    U_GELU, U_SHRINK, U_CLIP, U_SCALE, U_SWISH, U_NOT, U_BNOT, U_ISINF, U_ISNAN, U_COUNT
};

struct un_args {
    int op;
    float alpha, beta, gamma;
    int approx;
};

__device__ __forceinline__ float un_float(float x, const un_args &a, float lo, float hi) {
    switch (a.op) {
    case U_RELU: return x > 0 ? x : (x == x ? 0.0f : x);
    case U_NEG: return -x;
    case U_ABS: return fabsf(x);
    case U_SIGN: return x > 0 ? 1.0f : x < 0 ? -1.0f : x;
    case U_SIGMOID: { /* one exp: e = exp(-|x|) never overflows */
        float e = expf(-fabsf(x)), r = 1.0f / (1.0f + e);
        return x >= 0 ? r : e * r;
    }
    case U_TANH: return tanhf(x);
    case U_ERF: return erff(x);
    case U_EXP: return expf(x);
    case U_LOG: return logf(x);
    case U_SQRT: return sqrtf(x);
    case U_RECIPROCAL: return 1.0f / x;
    case U_FLOOR: return floorf(x);
    case U_CEIL: return ceilf(x);
    case U_ROUND: return rintf(x); /* half to even, as ONNX asks */
    case U_SIN: return sinf(x);
    case U_COS: return cosf(x);
    case U_TAN: return tanf(x);
    case U_ASIN: return asinf(x);
    case U_ACOS: return acosf(x);
    case U_ATAN: return atanf(x);
    case U_SINH: return sinhf(x);
    case U_COSH: return coshf(x);
    case U_ASINH: return asinhf(x);
    case U_ACOSH: return acoshf(x);
    case U_ATANH: return atanhf(x);
    case U_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    case U_SOFTSIGN: return x / (1.0f + fabsf(x));
    case U_HARD_SWISH: return x * fminf(fmaxf(x / 6.0f + 0.5f, 0.0f), 1.0f);
    case U_MISH: return x * tanhf(x > 20.0f ? x : log1pf(expf(x)));
    case U_LEAKY_RELU: return x >= 0 ? x : a.alpha * x;
    case U_ELU: return x >= 0 ? x : a.alpha * (expf(x) - 1.0f);
    case U_SELU: return x > 0 ? a.gamma * x : a.gamma * (a.alpha * expf(x) - a.alpha);
    /* fminf/fmaxf drop a NaN: keep it, as the ONNX reference does */
    case U_CELU: return x != x ? x : fmaxf(0.0f, x) + fminf(0.0f, a.alpha * (expf(x / a.alpha) - 1.0f));
    case U_HARD_SIGMOID: return x != x ? x : fminf(fmaxf(a.alpha * x + a.beta, 0.0f), 1.0f);
    case U_THRESHOLDED_RELU: return x > a.alpha ? x : 0.0f;
    case U_GELU:
        if (a.approx) return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case U_SHRINK: return x < -a.beta ? x + a.alpha : x > a.beta ? x - a.alpha : 0.0f;
    case U_CLIP: return x != x ? x : fminf(fmaxf(x, lo), hi);
    case U_SCALE: return x * a.alpha;
    case U_SWISH: { /* x * sigmoid(alpha x), the sigmoid as U_SIGMOID */
        float z = a.alpha * x, e = expf(-fabsf(z)), r = 1.0f / (1.0f + e);
        return x * (z >= 0 ? r : e * r);
    }
    default: return x;
    }
}

template <typename T>
__global__ void unary_k(const T *x, T *y, int64_t n, un_args a, const T *minp, const T *maxp) {
    float lo = a.alpha, hi = a.beta;
    if (minp) lo = to_f(*minp);
    if (maxp) hi = to_f(*maxp);
    GRID_LOOP(i, n) y[i] = from_f<T>(un_float(to_f(x[i]), a, lo, hi));
}

/* float32, 16-byte aligned: four elements per load/store and 32-bit indices (n4 = n / 4 < 2^31); the tail
 * (n % 4) is done by the first threads. */
__global__ void unary_vec4_k(const float4 *x, float4 *y, uint32_t n4, const float *xt, float *yt, uint32_t tail,
                             un_args a, const float *minp, const float *maxp) {
    float lo = a.alpha, hi = a.beta;
    if (minp) lo = *minp;
    if (maxp) hi = *maxp;
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = un_float(v.x, a, lo, hi);
        v.y = un_float(v.y, a, lo, hi);
        v.z = un_float(v.z, a, lo, hi);
        v.w = un_float(v.w, a, lo, hi);
        y[i] = v;
    }
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < tail) yt[t] = un_float(xt[t], a, lo, hi);
}

/* float16, 16-byte aligned: eight elements per load/store (Gelu, activations in a float16 region), the tail
 * (n % 8) by the first threads. */
__global__ void unary_half8_k(const uint4 *x, uint4 *y, uint32_t n8, const __half *xt, __half *yt, uint32_t tail,
                              un_args a, const __half *minp, const __half *maxp) {
    float lo = a.alpha, hi = a.beta;
    if (minp) lo = __half2float(*minp);
    if (maxp) hi = __half2float(*maxp);
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
        union { uint4 u; __half2 h[4]; } v;
        v.u = x[i];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float2 f = __half22float2(v.h[k]);
            v.h[k] = __floats2half2_rn(un_float(f.x, a, lo, hi), un_float(f.y, a, lo, hi));
        }
        y[i] = v.u;
    }
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < tail) yt[t] = __float2half_rn(un_float(__half2float(xt[t]), a, lo, hi));
}

/* double: the same functions in double precision (the CPU backend computes double in double). */
__device__ __forceinline__ double un_double(double x, const un_args &a, double lo, double hi) {
    double A = a.alpha, B = a.beta, G = a.gamma;
    switch (a.op) {
    case U_RELU: return x > 0 ? x : (x == x ? 0.0 : x);
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    case U_SIGMOID: {
        double e = exp(-fabs(x)), r = 1.0 / (1.0 + e);
        return x >= 0 ? r : e * r;
    }
    case U_TANH: return tanh(x);
    case U_ERF: return erf(x);
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_SQRT: return sqrt(x);
    case U_RECIPROCAL: return 1.0 / x;
    case U_FLOOR: return floor(x);
    case U_CEIL: return ceil(x);
    case U_ROUND: return rint(x);
    case U_SIN: return sin(x);
    case U_COS: return cos(x);
    case U_TAN: return tan(x);
    case U_ASIN: return asin(x);
    case U_ACOS: return acos(x);
    case U_ATAN: return atan(x);
    case U_SINH: return sinh(x);
    case U_COSH: return cosh(x);
    case U_ASINH: return asinh(x);
    case U_ACOSH: return acosh(x);
    case U_ATANH: return atanh(x);
    case U_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case U_SOFTSIGN: return x / (1.0 + fabs(x));
    case U_HARD_SWISH: return x * fmin(fmax(x / 6.0 + 0.5, 0.0), 1.0);
    case U_MISH: return x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
    case U_LEAKY_RELU: return x >= 0 ? x : A * x;
    case U_ELU: return x >= 0 ? x : A * expm1(x);
    case U_SELU: return x > 0 ? G * x : G * (A * exp(x) - A);
    case U_CELU: return x != x ? x : fmax(0.0, x) + fmin(0.0, A * expm1(x / A));
    case U_HARD_SIGMOID: return x != x ? x : fmin(fmax(A * x + B, 0.0), 1.0);
    case U_THRESHOLDED_RELU: return x > A ? x : 0.0;
    case U_GELU:
        if (a.approx) return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    case U_SHRINK: return x < -B ? x + A : x > B ? x - A : 0.0;
    case U_CLIP: return x != x ? x : fmin(fmax(x, lo), hi);
    case U_SCALE: return x * A;
    case U_SWISH: {
        double z = A * x, e = exp(-fabs(z)), r = 1.0 / (1.0 + e);
        return x * (z >= 0 ? r : e * r);
    }
    default: return x;
    }
}

__global__ void unary_dbl_k(const double *x, double *y, int64_t n, un_args a, double lo, double hi, const double *minp,
                            const double *maxp) {
    if (minp) lo = *minp;
    if (maxp) hi = *maxp;
    GRID_LOOP(i, n) y[i] = un_double(x[i], a, lo, hi);
}

/* Integer forms (and Not on bool): wrapping as the CPU backend (-INT_MIN is INT_MIN). Clip bounds: the
 * run-time inputs when given, else lo / hi (the attribute or the type's limits). */
template <typename T> __global__ void unary_int_k(const T *x, T *y, int64_t n, int op, T lo, T hi, const T *minp, const T *maxp) {
    if (minp) lo = *minp;
    if (maxp) hi = *maxp;
    GRID_LOOP(i, n) {
        T v = x[i];
        switch (op) {
        case U_RELU: v = v > 0 ? v : (T)0; break;
        case U_NEG: v = (T)(0 - (uint64_t)v); break;
        case U_ABS:
            if constexpr (std::is_signed<T>::value) v = v < 0 ? (T)(0 - (uint64_t)v) : v;
            break;
        case U_SIGN:
            if constexpr (std::is_signed<T>::value) v = (T)((v > 0) - (v < 0));
            else v = (T)(v > 0);
            break;
        case U_BNOT: v = (T)~v; break;
        case U_NOT: v = (T)!v; break;
        case U_CLIP: v = v < lo ? lo : v; v = v > hi ? hi : v; break;
        default: break;
        }
        y[i] = v;
    }
}

/* IsInf / IsNaN: bool output. */
template <typename T> __global__ void unary_isx_k(const T *x, uint8_t *y, int64_t n, int op, int neg, int pos) {
    typedef typename compute_of<T>::t C;
    GRID_LOOP(i, n) {
        C v = ld<T, C>(x, i);
        if (op == U_ISNAN) y[i] = v != v;
        else y[i] = (v == (C)INFINITY || v == -(C)INFINITY) && ((v < 0 && neg) || (v > 0 && pos));
    }
}

/* Which dtypes an op takes beyond the float types (float32/16, bfloat16, double). */
enum { UT_FLOAT, UT_SINT, UT_INT, UT_NUM_NOFLOAT, UT_BOOL, UT_FLOAT_TO_BOOL };

struct un_entry {
    const char *name;
    int op;
    int types; /* UT_FLOAT: float types; UT_SINT: also signed ints; UT_INT: also every int; UT_NUM_NOFLOAT:
                  every int, no floats; UT_BOOL: bool only; UT_FLOAT_TO_BOOL: float types, bool output */
};

static const un_entry un_table[] = {
    {"Relu", U_RELU, UT_SINT}, {"Neg", U_NEG, UT_SINT}, {"Abs", U_ABS, UT_INT}, {"Sign", U_SIGN, UT_INT},
    {"Sigmoid", U_SIGMOID, 0},
    {"Tanh", U_TANH, 0}, {"Erf", U_ERF, 0}, {"Exp", U_EXP, 0}, {"Log", U_LOG, 0}, {"Sqrt", U_SQRT, 0},
    {"Reciprocal", U_RECIPROCAL, 0}, {"Floor", U_FLOOR, 0}, {"Ceil", U_CEIL, 0}, {"Round", U_ROUND, 0},
    {"Sin", U_SIN, 0}, {"Cos", U_COS, 0}, {"Tan", U_TAN, 0}, {"Asin", U_ASIN, 0}, {"Acos", U_ACOS, 0},
    {"Atan", U_ATAN, 0}, {"Sinh", U_SINH, 0}, {"Cosh", U_COSH, 0}, {"Asinh", U_ASINH, 0}, {"Acosh", U_ACOSH, 0},
    {"Atanh", U_ATANH, 0}, {"Softplus", U_SOFTPLUS, 0}, {"Softsign", U_SOFTSIGN, 0}, {"HardSwish", U_HARD_SWISH, 0},
    {"Mish", U_MISH, 0}, {"LeakyRelu", U_LEAKY_RELU, 0}, {"Elu", U_ELU, 0}, {"Selu", U_SELU, 0},
    {"Celu", U_CELU, 0}, {"HardSigmoid", U_HARD_SIGMOID, 0}, {"ThresholdedRelu", U_THRESHOLDED_RELU, 0},
    {"Gelu", U_GELU, 0}, {"Shrink", U_SHRINK, 0}, {"Clip", U_CLIP, UT_INT}, {"Swish", U_SWISH, 0},
    {"Not", U_NOT, UT_BOOL}, {"BitwiseNot", U_BNOT, UT_NUM_NOFLOAT}, {"IsInf", U_ISINF, UT_FLOAT_TO_BOOL},
    {"IsNaN", U_ISNAN, UT_FLOAT_TO_BOOL}, {NULL, 0, 0}};

static const un_entry *un_find(const char *name) {
    for (const un_entry *e = un_table; e->name; e++)
        if (!strcmp(e->name, name)) return e;
    return NULL;
}

/* dtype classes of the unary and binary tables */
static int dt_float(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16 || t == NETRUN_DTYPE_BFLOAT16 || t == NETRUN_DTYPE_DOUBLE;
}
static int dt_uint(netrun_dtype t) {
    return t == NETRUN_DTYPE_UINT8 || t == NETRUN_DTYPE_UINT16 || t == NETRUN_DTYPE_UINT32 || t == NETRUN_DTYPE_UINT64;
}
static int dt_sint(netrun_dtype t) {
    return t == NETRUN_DTYPE_INT8 || t == NETRUN_DTYPE_INT16 || t == NETRUN_DTYPE_INT32 || t == NETRUN_DTYPE_INT64;
}

static int unary_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const un_entry *e = un_find(node->op_type);
    netrun_dtype t = cuda_main_dtype(node);
    if (!e) return cuda_refuse(reason, size, "no CUDA kernel for %s", node->op_type);
    int fl = dt_float(t), ok;
    switch (e->types) {
    case UT_SINT: ok = fl || dt_sint(t); break;
    case UT_INT: ok = fl || dt_sint(t) || dt_uint(t); break;
    case UT_NUM_NOFLOAT: ok = dt_sint(t) || dt_uint(t); break;
    case UT_BOOL: ok = t == NETRUN_DTYPE_BOOL; break;
    default: ok = fl; break;
    }
    if (!ok) return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    if (e->op == U_CLIP)
        for (int i = 1; i < node->n_inputs && i < 3; i++)
            if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t)
                return cuda_refuse(reason, size, "Clip bounds of another dtype");
    return 1;
}

static netrun_status unary_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)un_find(node->op_type);
    return *state ? NETRUN_OK : cuda_host->error(NETRUN_ERR_UNSUPPORTED, "no CUDA kernel for %s", node->op_type);
}

/* A Clip bound given as a float attribute, in the integer type T (clamped to its range; NaN: no bound). */
template <typename T> static T clip_bound(int has, float v, int is_hi) {
    double lo = (double)std::numeric_limits<T>::lowest(), hi = (double)std::numeric_limits<T>::max();
    if (!has || v != v) return is_hi ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
    if ((double)v <= lo) return std::numeric_limits<T>::lowest();
    if ((double)v >= hi) return std::numeric_limits<T>::max();
    return (T)v;
}

static netrun_status unary_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const un_entry *e = (const un_entry *)state;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(X);
    if (n == 0) return NETRUN_OK;
    un_args a;
    memset(&a, 0, sizeof a);
    a.op = e->op;
    const netrun_unary_params *p = (const netrun_unary_params *)args->params;
    if (p) {
        a.alpha = p->alpha;
        a.beta = p->beta;
        a.gamma = p->gamma;
        a.approx = p->approximate_tanh;
    }
    if (e->op == U_SWISH && !p) a.alpha = 1.0f;
    const void *minp = NULL, *maxp = NULL;
    int has_min = p && p->has_min, has_max = p && p->has_max;
    if (e->op == U_CLIP) {
        if (!has_min) {
            a.alpha = -INFINITY;
            if (args->n_inputs > 1 && args->inputs[1].rank >= 0 && cuda_count(&args->inputs[1]) > 0) minp = args->inputs[1].data;
        }
        if (!has_max) {
            a.beta = INFINITY;
            if (args->n_inputs > 2 && args->inputs[2].rank >= 0 && cuda_count(&args->inputs[2]) > 0) maxp = args->inputs[2].data;
        }
    }
    unsigned b = cuda_blocks(n);
    if (e->types == UT_FLOAT_TO_BOOL) {
        int neg = p ? p->alpha != 0 : 1, pos = p ? p->beta != 0 : 1;
#define ISX unary_isx_k<E><<<b, CUDA_THREADS, 0, ctx->stream>>>((const E *)X->data, (uint8_t *)Y->data, n, e->op, neg, pos)
        switch (X->dtype) {
        DT_FLOATS(ISX)
        default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: dtype %s", e->name, cuda_dtype_name(X->dtype));
        }
#undef ISX
        return cuda_check_launch(e->name);
    }
    if (X->dtype == NETRUN_DTYPE_FLOAT && n / 4 <= INT32_MAX && ((uintptr_t)X->data & 15) == 0 &&
        ((uintptr_t)Y->data & 15) == 0) {
        uint32_t n4 = (uint32_t)(n / 4), tail = (uint32_t)(n % 4);
        unary_vec4_k<<<cuda_blocks32(n4 > 0 ? n4 : 1, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
            (const float4 *)X->data, (float4 *)Y->data, n4, (const float *)X->data + 4 * (int64_t)n4,
            (float *)Y->data + 4 * (int64_t)n4, tail, a, (const float *)minp, (const float *)maxp);
        return cuda_check_launch(e->name);
    }
    if (X->dtype == NETRUN_DTYPE_FLOAT16 && n / 8 <= INT32_MAX && ((uintptr_t)X->data & 15) == 0 &&
        ((uintptr_t)Y->data & 15) == 0) {
        uint32_t n8 = (uint32_t)(n / 8), tail = (uint32_t)(n % 8);
        unary_half8_k<<<cuda_blocks32(n8 > 0 ? n8 : 1, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
            (const uint4 *)X->data, (uint4 *)Y->data, n8, (const __half *)X->data + 8 * (int64_t)n8,
            (__half *)Y->data + 8 * (int64_t)n8, tail, a, (const __half *)minp, (const __half *)maxp);
        return cuda_check_launch(e->name);
    }
#define UINT_K                                                                                                    \
    unary_int_k<E><<<b, CUDA_THREADS, 0, ctx->stream>>>((const E *)X->data, (E *)Y->data, n, a.op,               \
                                                        clip_bound<E>(has_min, a.alpha, 0),                       \
                                                        clip_bound<E>(has_max, a.beta, 1), (const E *)minp,       \
                                                        (const E *)maxp)
    switch (X->dtype) {
    case NETRUN_DTYPE_FLOAT:
        unary_k<float><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, n, a,
                                                            (const float *)minp, (const float *)maxp);
        break;
    case NETRUN_DTYPE_FLOAT16:
        unary_k<__half><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, n, a,
                                                             (const __half *)minp, (const __half *)maxp);
        break;
    case NETRUN_DTYPE_BFLOAT16:
        unary_k<__nv_bfloat16><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __nv_bfloat16 *)X->data,
                                                                    (__nv_bfloat16 *)Y->data, n, a,
                                                                    (const __nv_bfloat16 *)minp,
                                                                    (const __nv_bfloat16 *)maxp);
        break;
    case NETRUN_DTYPE_DOUBLE:
        unary_dbl_k<<<b, CUDA_THREADS, 0, ctx->stream>>>((const double *)X->data, (double *)Y->data, n, a,
                                                         (double)a.alpha, (double)a.beta, (const double *)minp,
                                                         (const double *)maxp);
        break;
    DT_INTS(UINT_K)
    DT_CASE(BOOL, uint8_t, UINT_K)
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: dtype %s", e->name, cuda_dtype_name(X->dtype));
    }
#undef UINT_K
    return cuda_check_launch(e->name);
}

/* ---- binary ---- */

/* B_MOD is Python's modulo (sign of the divisor) on integers; B_FMOD C's fmod (sign of the dividend); the
 * float forms of Mod always compute fmod, as the CPU backend does. Integer arithmetic wraps in the element
 * type; integer division or modulo by zero gives 0 (the CPU backend reports an error instead: a kernel cannot
 * without a synchronization). */
enum bin_op {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAX, B_MIN, B_PRELU, B_EQ, B_LT, B_GT, B_LE, B_GE, B_AND, B_OR, B_XOR,
    B_MOD, B_FMOD, B_SHL, B_SHR, B_BAND, B_BOR, B_BXOR
};

__device__ __forceinline__ float f_max(float x, float y) { return fmaxf(x, y); }
__device__ __forceinline__ double f_max(double x, double y) { return fmax(x, y); }
__device__ __forceinline__ float f_min(float x, float y) { return fminf(x, y); }
__device__ __forceinline__ double f_min(double x, double y) { return fmin(x, y); }
__device__ __forceinline__ float f_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double f_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float f_mod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double f_mod(double x, double y) { return fmod(x, y); }

template <typename C> __device__ __forceinline__ C bin_arith(int op, C x, C y) {
    if constexpr (std::is_floating_point<C>::value) {
        switch (op) {
        case B_ADD: return x + y;
        case B_SUB: return x - y;
        case B_MUL: return x * y;
        case B_DIV: return x / y;
        case B_POW: return f_pow(x, y);
        case B_MAX: return (x != x || y != y) ? x + y : f_max(x, y);
        case B_MIN: return (x != x || y != y) ? x + y : f_min(x, y);
        case B_PRELU: return x < 0 ? x * y : x;
        case B_MOD: case B_FMOD: return f_mod(x, y);
        default: return 0;
        }
    } else {
        typedef uint64_t U; /* wrapping arithmetic: modulo 2^64, then truncated to C */
        switch (op) {
        case B_ADD: return (C)((U)x + (U)y);
        case B_SUB: return (C)((U)x - (U)y);
        case B_MUL: return (C)((U)x * (U)y);
        case B_MAX: return x > y ? x : y;
        case B_MIN: return x < y ? x : y;
        case B_BAND: return (C)(x & y);
        case B_BOR: return (C)(x | y);
        case B_BXOR: return (C)(x ^ y);
        case B_SHL: return (U)y >= 8 * sizeof(C) ? (C)0 : (C)((U)x << (U)y);
        case B_SHR: return (U)y >= 8 * sizeof(C) ? (C)0 : (C)((U)x >> (U)y);
        default: break;
        }
        if constexpr (std::is_signed<C>::value) {
            switch (op) {
            case B_DIV: return y == 0 ? (C)0 : y == -1 ? (C)(0 - (U)x) : (C)(x / y); /* MIN / -1 wraps */
            case B_FMOD: return (y == 0 || y == -1) ? (C)0 : (C)(x % y);
            case B_MOD: {
                C r = (y == 0 || y == -1) ? (C)0 : (C)(x % y);
                if (r != 0 && ((r < 0) != (y < 0))) r = (C)(r + y);
                return r;
            }
            case B_PRELU: return x < 0 ? (C)((U)x * (U)y) : x;
            default: return 0;
            }
        } else {
            switch (op) {
            case B_DIV: return y == 0 ? (C)0 : (C)(x / y);
            case B_MOD: case B_FMOD: return y == 0 ? (C)0 : (C)(x % y);
            case B_PRELU: return x; /* nothing is negative */
            default: return 0;
            }
        }
    }
}
template <typename C> __device__ __forceinline__ bool bin_cmp(int op, C x, C y) {
    switch (op) {
    case B_EQ: return x == y;
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    case B_AND: return (x != 0) && (y != 0);
    case B_OR: return (x != 0) || (y != 0);
    case B_XOR: return (x != 0) != (y != 0);
    default: return false;
    }
}

template <typename T, bool CMP>
__global__ void binary_k(int op, const T *a, const T *b, void *y, int64_t n, int plain, shape8 sh, strides8 sa,
                         strides8 sb) {
    typedef typename compute_of<T>::t C;
    GRID_LOOP(i, n) {
        int64_t ia = i, ib = i;
        if (!plain) {
            ia = bcast_offset(i, sh, sa);
            ib = bcast_offset(i, sh, sb);
        }
        C x = ld<T, C>(a, ia), z = ld<T, C>(b, ib);
        if (CMP) ((bool *)y)[i] = bin_cmp<C>(op, x, z);
        else st<T, C>((T *)y, i, bin_arith<C>(op, x, z));
    }
}

/* Fast paths (n < 2^31, at most 4 dims once merged): the output shape with its size-1 dims dropped and
 * neighbouring dims merged where both operands are contiguous (or both broadcast) across them, so a same-shape
 * op has one dim, the squeeze-excite [N,C,1,1] * [N,C,H,W] two ([N*C, H*W], strides (1, 0) and (H*W, 1)) and a
 * per-channel [1,C,1,1] operand three. Coordinates come from 32-bit multiply-shift divisions; R is a template
 * argument so the geometry stays in registers. */
#define BIN_FAST_MAX_RANK 4
template <int R> struct bgeo {
    fdiv32 dim[R];
    uint32_t sa[R], sb[R];
};

template <int R> __device__ __forceinline__ void bgeo_offsets(const bgeo<R> &g, uint32_t i, uint32_t &ia, uint32_t &ib) {
    ia = 0;
    ib = 0;
#pragma unroll
    for (int d = R - 1; d > 0; d--) {
        uint32_t q = fdiv_q(g.dim[d], i), c = i - q * g.dim[d].d;
        ia += c * g.sa[d];
        ib += c * g.sb[d];
        i = q;
    }
    ia += i * g.sa[0];
    ib += i * g.sb[0];
}

template <typename T, bool CMP, int R>
__global__ void binary_fast_k(int op, const T *a, const T *b, void *y, uint32_t n, bgeo<R> g) {
    typedef typename compute_of<T>::t C;
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint32_t ia, ib;
        bgeo_offsets<R>(g, i, ia, ib);
        C x = ld<T, C>(a, ia), z = ld<T, C>(b, ib);
        if (CMP) ((bool *)y)[i] = bin_cmp<C>(op, x, z);
        else st<T, C>((T *)y, i, bin_arith<C>(op, x, z));
    }
}

/* float32, innermost merged dim a multiple of 4, 16-byte aligned: four outputs per thread; an operand with
 * inner stride 1 is read as a float4, one broadcast along the inner dim as one float. */
__device__ __forceinline__ float4 ld4(const float *p, uint32_t off, bool vec) {
    if (vec) return *(const float4 *)(p + off);
    float v = p[off];
    return make_float4(v, v, v, v);
}

template <int R> __global__ void binary_vec4_k(int op, const float *a, const float *b, float *y, uint32_t n4, bgeo<R> g) {
    bool va = g.sa[R - 1] != 0, vb = g.sb[R - 1] != 0;
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        uint32_t ia, ib;
        bgeo_offsets<R>(g, 4 * i, ia, ib);
        float4 x = ld4(a, ia, va), z = ld4(b, ib, vb), r;
        r.x = bin_arith<float>(op, x.x, z.x);
        r.y = bin_arith<float>(op, x.y, z.y);
        r.z = bin_arith<float>(op, x.z, z.z);
        r.w = bin_arith<float>(op, x.w, z.w);
        ((float4 *)y)[i] = r;
    }
}

/* float16, innermost merged dim a multiple of 8, 16-byte aligned: eight outputs per thread (a transformer's bias
 * and residual Adds, squeeze-excite's Mul in NHWC); computed in float like binary_fast_k. One element a thread
 * ran a [6304, 768] + [768] bias Add at about a fifth of the memory bandwidth. */
template <int R> __global__ void binary_half8_k(int op, const __half *a, const __half *b, __half *y, uint32_t n8, bgeo<R> g) {
    const bool va = g.sa[R - 1] != 0, vb = g.sb[R - 1] != 0;
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
        uint32_t ia, ib;
        bgeo_offsets<R>(g, 8 * i, ia, ib);
        union { uint4 u; __half2 h[4]; } x, z, r;
        if (va) x.u = *(const uint4 *)(a + ia);
        else for (int k = 0; k < 4; k++) x.h[k] = __half2half2(a[ia]);
        if (vb) z.u = *(const uint4 *)(b + ib);
        else for (int k = 0; k < 4; k++) z.h[k] = __half2half2(b[ib]);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float2 p = __half22float2(x.h[k]), q = __half22float2(z.h[k]);
            r.h[k] = __floats2half2_rn(bin_arith<float>(op, p.x, q.x), bin_arith<float>(op, p.y, q.y));
        }
        *(uint4 *)(y + 8 * (size_t)i) = r.u;
    }
}

/* Drop size-1 dims and merge neighbours (see above); returns the merged rank (at least 1). */
static int bin_collapse(int rank, const int64_t *dims, const int64_t *sa, const int64_t *sb, int64_t *od, int64_t *oa,
                        int64_t *ob) {
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1) continue;
        if (r > 0 && oa[r - 1] == sa[d] * dims[d] && ob[r - 1] == sb[d] * dims[d]) {
            od[r - 1] *= dims[d];
            oa[r - 1] = sa[d];
            ob[r - 1] = sb[d];
            continue;
        }
        od[r] = dims[d];
        oa[r] = sa[d];
        ob[r] = sb[d];
        r++;
    }
    if (r == 0) {
        od[0] = 1;
        oa[0] = ob[0] = 0;
        r = 1;
    }
    return r;
}

template <int R>
static netrun_status launch_binary_fast(cuda_context *ctx, int op, int cmp, const netrun_tensor *A, const netrun_tensor *B,
                                        netrun_tensor *Y, uint32_t n, const int64_t *cd, const int64_t *ca,
                                        const int64_t *cb) {
    bgeo<R> g;
    memset(&g, 0, sizeof g);
    for (int d = 0; d < R; d++) {
        g.dim[d] = make_fdiv((uint32_t)cd[d]);
        g.sa[d] = (uint32_t)ca[d];
        g.sb[d] = (uint32_t)cb[d];
    }
    if (!cmp && A->dtype == NETRUN_DTYPE_FLOAT && cd[R - 1] % 4 == 0 && ca[R - 1] <= 1 && cb[R - 1] <= 1 &&
        (((uintptr_t)A->data | (uintptr_t)B->data | (uintptr_t)Y->data) & 15) == 0) {
        uint32_t n4 = n / 4;
        binary_vec4_k<R><<<cuda_blocks32(n4, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
            op, (const float *)A->data, (const float *)B->data, (float *)Y->data, n4, g);
        return cuda_check_launch("binary op");
    }
    if (!cmp && A->dtype == NETRUN_DTYPE_FLOAT16 && cd[R - 1] % 8 == 0 && ca[R - 1] <= 1 && cb[R - 1] <= 1 &&
        (((uintptr_t)A->data | (uintptr_t)B->data | (uintptr_t)Y->data) & 15) == 0) {
        uint32_t n8 = n / 8;
        binary_half8_k<R><<<cuda_blocks32(n8, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
            op, (const __half *)A->data, (const __half *)B->data, (__half *)Y->data, n8, g);
        return cuda_check_launch("binary op");
    }
    unsigned bl = cuda_blocks32(n, CUDA_THREADS);
#define BINF(T)                                                                                                   \
    if (cmp) binary_fast_k<T, true, R><<<bl, CUDA_THREADS, 0, ctx->stream>>>(op, (const T *)A->data,              \
                                                                            (const T *)B->data, Y->data, n, g);  \
    else binary_fast_k<T, false, R><<<bl, CUDA_THREADS, 0, ctx->stream>>>(op, (const T *)A->data,                 \
                                                                         (const T *)B->data, Y->data, n, g);
    switch (A->dtype) {
    case NETRUN_DTYPE_FLOAT: BINF(float) break;
    case NETRUN_DTYPE_FLOAT16: BINF(__half) break;
    case NETRUN_DTYPE_INT32: BINF(int32_t) break;
    case NETRUN_DTYPE_INT64: BINF(int64_t) break;
    case NETRUN_DTYPE_BOOL:
        binary_fast_k<uint8_t, true, R><<<bl, CUDA_THREADS, 0, ctx->stream>>>(op, (const uint8_t *)A->data,
                                                                             (const uint8_t *)B->data, Y->data, n, g);
        break;
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda binary op: dtype %s", cuda_dtype_name(A->dtype));
    }
#undef BINF
    return cuda_check_launch("binary op");
}

struct bin_entry {
    const char *name;
    int op;
    int cmp;       /* bool output */
    int variadic;  /* Sum/Max/Min/Mean: any number of inputs */
    int mean;
};

static const bin_entry bin_table[] = {
    {"Add", B_ADD, 0, 0, 0}, {"Sub", B_SUB, 0, 0, 0}, {"Mul", B_MUL, 0, 0, 0}, {"Div", B_DIV, 0, 0, 0},
    {"Pow", B_POW, 0, 0, 0}, {"PRelu", B_PRELU, 0, 0, 0}, {"Equal", B_EQ, 1, 0, 0}, {"Less", B_LT, 1, 0, 0},
    {"Greater", B_GT, 1, 0, 0}, {"LessOrEqual", B_LE, 1, 0, 0}, {"GreaterOrEqual", B_GE, 1, 0, 0},
    {"And", B_AND, 1, 0, 0}, {"Or", B_OR, 1, 0, 0}, {"Xor", B_XOR, 1, 0, 0}, {"Sum", B_ADD, 0, 1, 0},
    {"Max", B_MAX, 0, 1, 0}, {"Min", B_MIN, 0, 1, 0}, {"Mean", B_ADD, 0, 1, 1}, {"Mod", B_MOD, 0, 0, 0},
    {"BitShift", B_SHL, 0, 0, 0}, {"BitwiseAnd", B_BAND, 0, 0, 0}, {"BitwiseOr", B_BOR, 0, 0, 0},
    {"BitwiseXor", B_BXOR, 0, 0, 0}, {NULL, 0, 0, 0, 0}};

static const bin_entry *bin_find(const char *name) {
    for (const bin_entry *e = bin_table; e->name; e++)
        if (!strcmp(e->name, name)) return e;
    return NULL;
}

static int dt_num(netrun_dtype t) { return dt_float(t) || dt_uint(t) || dt_sint(t); }

/* Pow: base types the kernel computes (as the CPU backend); the exponent may be any numeric type. */
static int pow_base_ok(netrun_dtype t) {
    return dt_float(t) || t == NETRUN_DTYPE_INT32 || t == NETRUN_DTYPE_INT64;
}

static int binary_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const bin_entry *e = bin_find(node->op_type);
    if (!e) return cuda_refuse(reason, size, "no CUDA kernel for %s", node->op_type);
    netrun_dtype t = cuda_main_dtype(node);
    if (node->n_inputs < 1 || node->n_inputs > 64) return cuda_refuse(reason, size, "%d inputs", node->n_inputs);
    if (e->op == B_POW) {
        if (node->n_inputs != 2) return cuda_refuse(reason, size, "Pow needs 2 inputs");
        netrun_dtype et = node->inputs[1].dtype;
        if (!pow_base_ok(t) || !dt_num(et))
            return cuda_refuse(reason, size, "Pow %s ^ %s not supported", cuda_dtype_name(t), cuda_dtype_name(et));
        return 1;
    }
    for (int i = 1; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t)
            return cuda_refuse(reason, size, "inputs of different dtypes");
    if (e->op == B_MOD && dt_float(t) && (!node->params || ((const netrun_unary_params *)node->params)->alpha == 0))
        return cuda_refuse(reason, size, "Mod on floats with fmod=0 (floor modulo) has no CUDA kernel");
    int ok;
    switch (e->op) {
    case B_AND: case B_OR: case B_XOR: ok = t == NETRUN_DTYPE_BOOL; break;
    case B_EQ: ok = dt_num(t) || t == NETRUN_DTYPE_BOOL; break;
    case B_SHL: ok = dt_uint(t); break;
    case B_BAND: case B_BOR: case B_BXOR: ok = dt_uint(t) || dt_sint(t); break;
    default: ok = e->mean ? dt_float(t) : dt_num(t); break;
    }
    if (!ok) return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    return 1;
}

static netrun_status binary_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)bin_find(node->op_type);
    return *state ? NETRUN_OK : cuda_host->error(NETRUN_ERR_UNSUPPORTED, "no CUDA kernel for %s", node->op_type);
}

static netrun_status launch_binary(cuda_context *ctx, int op, int cmp, const netrun_tensor *A, const netrun_tensor *B,
                                   netrun_tensor *Y) {
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    shape8 sh = make_shape(Y->rank, Y->dims);
    strides8 sa, sb;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    cuda_broadcast_strides(A->rank, A->dims, Y->rank, Y->dims, sa.s);
    cuda_broadcast_strides(B->rank, B->dims, Y->rank, Y->dims, sb.s);
    netrun_dtype t = A->dtype;
    /* the 32-bit fast paths serve the common types; the others take the general kernel */
    int fast_type = t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16 || t == NETRUN_DTYPE_INT32 ||
                    t == NETRUN_DTYPE_INT64 || t == NETRUN_DTYPE_BOOL;
    if (n <= INT32_MAX && fast_type) {
        int64_t cd[NETRUN_MAX_RANK], ca[NETRUN_MAX_RANK], cb[NETRUN_MAX_RANK];
        int r = bin_collapse(Y->rank, Y->dims, sa.s, sb.s, cd, ca, cb);
        switch (r) {
        case 1: return launch_binary_fast<1>(ctx, op, cmp, A, B, Y, (uint32_t)n, cd, ca, cb);
        case 2: return launch_binary_fast<2>(ctx, op, cmp, A, B, Y, (uint32_t)n, cd, ca, cb);
        case 3: return launch_binary_fast<3>(ctx, op, cmp, A, B, Y, (uint32_t)n, cd, ca, cb);
        case 4: return launch_binary_fast<4>(ctx, op, cmp, A, B, Y, (uint32_t)n, cd, ca, cb);
        default: break; /* more dims: the general kernel below */
        }
    }
    int plain = cuda_count(A) == n && cuda_count(B) == n;
    unsigned bl = cuda_blocks(n);
#define BIN                                                                                                       \
    if (cmp) binary_k<E, true><<<bl, CUDA_THREADS, 0, ctx->stream>>>(op, (const E *)A->data, (const E *)B->data,  \
                                                                     Y->data, n, plain, sh, sa, sb);              \
    else binary_k<E, false><<<bl, CUDA_THREADS, 0, ctx->stream>>>(op, (const E *)A->data, (const E *)B->data,     \
                                                                  Y->data, n, plain, sh, sa, sb);
    switch (t) {
    DT_FLOATS(BIN)
    DT_INTS(BIN)
    case NETRUN_DTYPE_BOOL:
        binary_k<uint8_t, true><<<bl, CUDA_THREADS, 0, ctx->stream>>>(op, (const uint8_t *)A->data,
                                                                      (const uint8_t *)B->data, Y->data, n, plain, sh, sa, sb);
        break;
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda binary op: dtype %s", cuda_dtype_name(t));
    }
#undef BIN
    return cuda_check_launch("binary op");
}

/* ---- Pow with an exponent of any numeric type: as the CPU backend, the exponent is read as double, the
 * power computed in double (x*x for an exponent of 2) and converted back to the base type (integers: out of
 * range gives the type's minimum, as Cast does). ---- */

__device__ __forceinline__ double pow_exp_ld(const void *p, int t, int64_t i) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)p)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)p)[i];
    case NETRUN_DTYPE_FLOAT16: return __half2float(((const __half *)p)[i]);
    case NETRUN_DTYPE_BFLOAT16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case NETRUN_DTYPE_INT8: return ((const int8_t *)p)[i];
    case NETRUN_DTYPE_INT16: return ((const int16_t *)p)[i];
    case NETRUN_DTYPE_INT32: return ((const int32_t *)p)[i];
    case NETRUN_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case NETRUN_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case NETRUN_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case NETRUN_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case NETRUN_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

template <typename T> __device__ __forceinline__ T pow_store(double v) {
    if constexpr (std::is_same<T, int32_t>::value) return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
    else if constexpr (std::is_same<T, int64_t>::value)
        return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
    else if constexpr (std::is_same<T, double>::value) return v;
    else return from_f<T>((float)v);
}

template <typename T>
__global__ void pow_k(const T *a, const void *b, int bt, T *y, int64_t n, shape8 sh, strides8 sa, strides8 sb) {
    typedef typename compute_of<T>::t C;
    GRID_LOOP(i, n) {
        double x = (double)ld<T, C>(a, bcast_offset(i, sh, sa)), e = pow_exp_ld(b, bt, bcast_offset(i, sh, sb));
        y[i] = pow_store<T>(e == 2.0 ? x * x : pow(x, e));
    }
}

static netrun_status launch_pow(cuda_context *ctx, const netrun_tensor *A, const netrun_tensor *B, netrun_tensor *Y) {
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    shape8 sh = make_shape(Y->rank, Y->dims);
    strides8 sa, sb;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    cuda_broadcast_strides(A->rank, A->dims, Y->rank, Y->dims, sa.s);
    cuda_broadcast_strides(B->rank, B->dims, Y->rank, Y->dims, sb.s);
#define POW pow_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((const E *)A->data, B->data, (int)B->dtype, \
                                                                       (E *)Y->data, n, sh, sa, sb)
    switch (A->dtype) {
    DT_FLOATS(POW)
    DT_CASE(INT32, int32_t, POW)
    DT_CASE(INT64, int64_t, POW)
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Pow: base dtype %s", cuda_dtype_name(A->dtype));
    }
#undef POW
    return cuda_check_launch("Pow");
}

/* Mean of float16/bfloat16 inputs summed in float in one pass (x0 + x1 rounded to a half first overflows:
 * 65504 + 20), for up to MEAN_MAX_IN inputs. */
#define MEAN_MAX_IN 8
struct mean_in {
    const void *x[MEAN_MAX_IN];
    strides8 s[MEAN_MAX_IN];
    int n;
};
template <typename T> __global__ void mean_half_k(mean_in a, T *y, int64_t n, shape8 sh, float inv) {
    GRID_LOOP(i, n) {
        float acc = 0.0f;
        for (int k = 0; k < a.n; k++) acc += to_f(((const T *)a.x[k])[bcast_offset(i, sh, a.s[k])]);
        y[i] = from_f<T>(acc * inv);
    }
}

static netrun_status launch_mean_half(cuda_context *ctx, const netrun_kernel_args *args, netrun_tensor *Y) {
    mean_in a;
    memset(&a, 0, sizeof a);
    a.n = args->n_inputs;
    for (int k = 0; k < a.n; k++) {
        a.x[k] = args->inputs[k].data;
        cuda_broadcast_strides(args->inputs[k].rank, args->inputs[k].dims, Y->rank, Y->dims, a.s[k].s);
    }
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    shape8 sh = make_shape(Y->rank, Y->dims);
    float inv = 1.0f / (float)a.n;
    if (Y->dtype == NETRUN_DTYPE_FLOAT16)
        mean_half_k<__half><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(a, (__half *)Y->data, n, sh, inv);
    else
        mean_half_k<__nv_bfloat16><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(a, (__nv_bfloat16 *)Y->data, n, sh, inv);
    return cuda_check_launch("Mean");
}

/* y *= s in place for the float types (Mean). */
template <typename T> __global__ void scale_k(T *y, int64_t n, double s) {
    typedef typename compute_of<T>::t C;
    GRID_LOOP(i, n) st<T, C>(y, i, (C)(ld<T, C>(y, i) * (C)s));
}

static netrun_status binary_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const bin_entry *e = (const bin_entry *)state;
    netrun_tensor *Y = &args->outputs[0];
    const netrun_unary_params *p = (const netrun_unary_params *)args->params;
    int op = e->op;
    if (op == B_POW) {
        netrun_dtype ta = args->inputs[0].dtype, tb = args->inputs[1].dtype;
        if (!(ta == tb && (ta == NETRUN_DTYPE_FLOAT || ta == NETRUN_DTYPE_FLOAT16)))
            return launch_pow(ctx, &args->inputs[0], &args->inputs[1], Y);
    }
    if (op == B_MOD && p && p->alpha != 0) op = B_FMOD;
    if (op == B_SHL && p && p->alpha != 0) op = B_SHR;
    if (!e->variadic) return launch_binary(ctx, op, e->cmp, &args->inputs[0], &args->inputs[1], Y);
    if (e->mean && args->n_inputs > 1 && args->n_inputs <= MEAN_MAX_IN &&
        (Y->dtype == NETRUN_DTYPE_FLOAT16 || Y->dtype == NETRUN_DTYPE_BFLOAT16))
        return launch_mean_half(ctx, args, Y);
    int64_t st[NETRUN_MAX_RANK];
    netrun_status s;
    if (args->n_inputs == 1) {
        cuda_broadcast_strides(args->inputs[0].rank, args->inputs[0].dims, Y->rank, Y->dims, st);
        s = cuda_expand(ctx, cuda_esize(Y->dtype), Y->data, args->inputs[0].data, Y->rank, Y->dims, st);
    } else {
        s = launch_binary(ctx, op, 0, &args->inputs[0], &args->inputs[1], Y);
        /* then fold the rest in: Y is contiguous with Y's shape, so it is its own left operand */
        for (int i = 2; s == NETRUN_OK && i < args->n_inputs; i++) s = launch_binary(ctx, op, 0, Y, &args->inputs[i], Y);
    }
    if (s == NETRUN_OK && e->mean && args->n_inputs > 1) {
        int64_t n = cuda_count(Y);
        if (n == 0) return NETRUN_OK;
        if (Y->dtype == NETRUN_DTYPE_FLOAT || Y->dtype == NETRUN_DTYPE_FLOAT16) {
            /* float: multiply by the float reciprocal, as before */
            un_args a;
            memset(&a, 0, sizeof a);
            a.op = U_SCALE;
            a.alpha = 1.0f / (float)args->n_inputs;
            if (Y->dtype == NETRUN_DTYPE_FLOAT)
                unary_k<float><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((const float *)Y->data, (float *)Y->data, n, a, NULL, NULL);
            else
                unary_k<__half><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((const __half *)Y->data, (__half *)Y->data, n, a, NULL, NULL);
        } else if (Y->dtype == NETRUN_DTYPE_DOUBLE) {
            scale_k<double><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((double *)Y->data, n, 1.0 / args->n_inputs);
        } else if (Y->dtype == NETRUN_DTYPE_BFLOAT16) {
            scale_k<__nv_bfloat16><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((__nv_bfloat16 *)Y->data, n,
                                                                                    1.0 / args->n_inputs);
        } else return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Mean: dtype %s", cuda_dtype_name(Y->dtype));
        s = cuda_check_launch("Mean");
    }
    return s;
}

/* ---- Where ---- */

template <typename E>
__global__ void where_k(const uint8_t *c, const E *x, const E *y, E *out, int64_t n, shape8 sh, strides8 sc,
                        strides8 sx, strides8 sy) {
    GRID_LOOP(i, n) {
        out[i] = c[bcast_offset(i, sh, sc)] ? x[bcast_offset(i, sh, sx)] : y[bcast_offset(i, sh, sy)];
    }
}

static int where_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs != 3 || node->inputs[0].dtype != NETRUN_DTYPE_BOOL)
        return cuda_refuse(reason, size, "Where needs a bool condition");
    if (!cuda_esize(node->inputs[1].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[1].dtype));
    return 1;
}

static netrun_status where_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    shape8 sh = make_shape(Y->rank, Y->dims);
    strides8 s[3];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 3; i++) cuda_broadcast_strides(args->inputs[i].rank, args->inputs[i].dims, Y->rank, Y->dims, s[i].s);
    DISPATCH_ES(cuda_esize(Y->dtype),
                (where_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                    (const uint8_t *)args->inputs[0].data, (const E *)args->inputs[1].data,
                    (const E *)args->inputs[2].data, (E *)Y->data, n, sh, s[0], s[1], s[2])));
    return cuda_check_launch("Where");
}

/* ---- launchers for other families ---- */

template <typename T>
__global__ void bias_act_k(T *y, const T *bias, int64_t total, int64_t c, int64_t inner, act_params a) {
    GRID_LOOP(i, total) {
        float v = to_f(y[i]);
        if (bias) v += to_f(bias[(i / inner) % c]);
        y[i] = from_f<T>(apply_act(v, a));
    }
}

extern "C" netrun_status cuda_bias_activation(cuda_context *ctx, netrun_dtype dt, void *y, const void *bias, int64_t n,
                                              int64_t c, int64_t inner, const netrun_fused_activation *act) {
    int64_t total = n * c * inner;
    if (total == 0 || (!bias && (!act || act->kind == NETRUN_ACT_NONE))) return NETRUN_OK;
    act_params a = make_act(act);
    if (inner < 1) inner = 1;
    if (c < 1) c = 1;
    if (dt == NETRUN_DTYPE_FLOAT)
        bias_act_k<float><<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((float *)y, (const float *)bias, total, c, inner, a);
    else if (dt == NETRUN_DTYPE_FLOAT16)
        bias_act_k<__half><<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>((__half *)y, (const __half *)bias, total, c, inner, a);
    else return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda bias/activation: dtype %s", cuda_dtype_name(dt));
    return cuda_check_launch("bias + activation");
}

template <typename E> __global__ void expand_k(E *dst, const E *src, int64_t n, shape8 sh, strides8 ss) {
    GRID_LOOP(i, n) dst[i] = src[bcast_offset(i, sh, ss)];
}

extern "C" netrun_status cuda_expand(cuda_context *ctx, size_t es, void *dst, const void *src, int rank,
                                     const int64_t *out_dims, const int64_t *src_strides) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= out_dims[i];
    if (n == 0) return NETRUN_OK;
    shape8 sh = make_shape(rank, out_dims);
    strides8 ss;
    memset(&ss, 0, sizeof ss);
    for (int i = 0; i < rank; i++) ss.s[i] = src_strides[i];
    DISPATCH_ES(es, (expand_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((E *)dst, (const E *)src, n, sh, ss)));
    return cuda_check_launch("broadcast copy");
}

/* The support matrix's dtypes of each unary op, as unary_supports decides them from un_table's types. */
#define UN_FLOATS (CUDA_DT(FLOAT) | CUDA_DT(FLOAT16) | CUDA_DT(BFLOAT16) | CUDA_DT(DOUBLE))
#define UN_SINTS (CUDA_DT(INT8) | CUDA_DT(INT16) | CUDA_DT(INT32) | CUDA_DT(INT64))
#define UN_UINTS (CUDA_DT(UINT8) | CUDA_DT(UINT16) | CUDA_DT(UINT32) | CUDA_DT(UINT64))
#define UNARY_T(name, dtypes) {name, dtypes, "", unary_supports, unary_create, unary_run, NULL},
#define UNARY(name) UNARY_T(name, UN_FLOATS)
/* The support matrix's dtypes of each binary op, as binary_supports decides them. */
#define BIN_NUM (UN_FLOATS | UN_SINTS | UN_UINTS)
#define BINARY_T(name, dtypes) {name, dtypes, "numpy broadcasting; integers wrap; integer x / 0 and x % 0 give 0", binary_supports, binary_create, binary_run, NULL},
#define BINARY(name) BINARY_T(name, BIN_NUM)

extern "C" const cuda_op cuda_ops_elementwise[] = {
    UNARY_T("Relu", UN_FLOATS | UN_SINTS) UNARY_T("Neg", UN_FLOATS | UN_SINTS)
    UNARY_T("Abs", UN_FLOATS | UN_SINTS | UN_UINTS) UNARY_T("Sign", UN_FLOATS | UN_SINTS | UN_UINTS) UNARY("Sigmoid") UNARY("Tanh") UNARY("Erf") UNARY("Exp")
    UNARY("Log") UNARY("Sqrt") UNARY("Reciprocal") UNARY("Floor") UNARY("Ceil") UNARY("Round") UNARY("Sin")
    UNARY("Cos") UNARY("Tan") UNARY("Asin") UNARY("Acos") UNARY("Atan") UNARY("Sinh") UNARY("Cosh") UNARY("Asinh")
    UNARY("Acosh") UNARY("Atanh") UNARY("Softplus") UNARY("Softsign") UNARY("HardSwish") UNARY("Mish")
    UNARY("LeakyRelu") UNARY("Elu") UNARY("Selu") UNARY("Celu") UNARY("HardSigmoid") UNARY("ThresholdedRelu")
    UNARY("Gelu") UNARY("Shrink") UNARY_T("Clip", UN_FLOATS | UN_SINTS | UN_UINTS) UNARY("Swish")
    UNARY_T("Not", CUDA_DT(BOOL)) UNARY_T("BitwiseNot", UN_SINTS | UN_UINTS) UNARY("IsInf")
    UNARY("IsNaN")
    BINARY("Add") BINARY("Sub") BINARY("Mul") BINARY("Div")
    BINARY_T("Pow", UN_FLOATS | CUDA_DT(INT32) | CUDA_DT(INT64)) BINARY("PRelu") BINARY_T("Equal", BIN_NUM | CUDA_DT(BOOL))
    BINARY("Less") BINARY("Greater") BINARY("LessOrEqual") BINARY("GreaterOrEqual") BINARY_T("And", CUDA_DT(BOOL))
    BINARY_T("Or", CUDA_DT(BOOL)) BINARY_T("Xor", CUDA_DT(BOOL)) BINARY("Sum") BINARY("Max") BINARY("Min")
    BINARY_T("Mean", UN_FLOATS) BINARY("Mod") BINARY_T("BitShift", UN_UINTS)
    BINARY_T("BitwiseAnd", UN_SINTS | UN_UINTS) BINARY_T("BitwiseOr", UN_SINTS | UN_UINTS)
    BINARY_T("BitwiseXor", UN_SINTS | UN_UINTS)
    {"Where", CUDA_ALL_DTYPES, "bool condition; three-way broadcasting", where_supports, NULL, where_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
