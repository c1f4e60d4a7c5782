/* CPU kernels: elementwise ops (unary math, binary with numpy broadcasting, variadic, comparisons, logic,
 * Clip, PRelu, Pow, Where). Cast/CastLike live in cast.c and are listed in the table here.
 *
 * Shape of the code: per op an expression macro; generator macros turn it into one inner loop per element
 * type; a table per op maps dtype -> loop. float16/bfloat16 run the float32 loop on blocks converted to
 * float. Broadcasting collapses dims first so that the innermost run has input strides 0 or 1 (a scalar or
 * a contiguous row), which the inner loops handle with separate vectorizable branches.
 *
 * Ops without a params struct of their own read netrun_unary_params (set by layers/elementwise.c; Swish's alpha
 * by layers/loss.c):
 *   Mod: alpha = fmod (0/1); BitShift: alpha = 1 for RIGHT; IsInf: alpha = detect_negative,
 *   beta = detect_positive. */
#include <float.h>
#include <stdatomic.h>
#include <stdio.h>

#include "cpu_internal.h"

#define GRAIN 16384 /* elements per parallel task */
#define HBLK 256    /* elements per float16 conversion block */
#define NDT NETRUN_DTYPE_COUNT_

/* From cast.c. */
int cpu_cast_supported(netrun_dtype from, netrun_dtype to);
void cpu_cast_elems(const void *src, netrun_dtype from, void *dst, netrun_dtype to, int64_t n);
int cpu_cast_supports(const netrun_node_desc *node, char *reason, size_t reason_size);
netrun_status cpu_cast_run(cpu_context *ctx, void *state, const netrun_kernel_args *args);

static size_t dt_size(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: return 8;
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_UINT16: return 2;
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

static const char *dt_name(netrun_dtype t) {
    static const char *names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                  "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                  "float8e5m2fnuz", "uint4", "int4"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* 0: not a half type; 1: float16; 2: bfloat16. */
static int half_kind(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT16 ? 1 : t == NETRUN_DTYPE_BFLOAT16 ? 2 : 0;
}
void cpu_f32_to_f16(const float *s, uint16_t *d, int64_t n); /* cast.c: F16C when available */
void cpu_f16_to_f32(const uint16_t *s, float *d, int64_t n);
static void half_to_f32(int kind, const uint16_t *s, float *d, int64_t n) {
    if (kind == 1) cpu_f16_to_f32(s, d, n);
    else for (int64_t i = 0; i < n; i++) d[i] = cpu_bf16_to_float(s[i]);
}
static void f32_to_half(int kind, const float *s, uint16_t *d, int64_t n) {
    if (kind == 1) cpu_f32_to_f16(s, d, n);
    else for (int64_t i = 0; i < n; i++) d[i] = cpu_float_to_bf16(s[i]);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Element type lists: X(suffix, type, wide unsigned type for wrapping arithmetic, dtype, extra args...).   */

#define T_FLT(X, ...) X(f32, float, float, NETRUN_DTYPE_FLOAT, __VA_ARGS__) \
    X(f64, double, double, NETRUN_DTYPE_DOUBLE, __VA_ARGS__)
#define T_SINT(X, ...) X(i8, int8_t, uint32_t, NETRUN_DTYPE_INT8, __VA_ARGS__)  \
    X(i16, int16_t, uint32_t, NETRUN_DTYPE_INT16, __VA_ARGS__)                  \
    X(i32, int32_t, uint32_t, NETRUN_DTYPE_INT32, __VA_ARGS__)                  \
    X(i64, int64_t, uint64_t, NETRUN_DTYPE_INT64, __VA_ARGS__)
#define T_UINT(X, ...) X(u8, uint8_t, uint32_t, NETRUN_DTYPE_UINT8, __VA_ARGS__) \
    X(u16, uint16_t, uint32_t, NETRUN_DTYPE_UINT16, __VA_ARGS__)                 \
    X(u32, uint32_t, uint32_t, NETRUN_DTYPE_UINT32, __VA_ARGS__)                 \
    X(u64, uint64_t, uint64_t, NETRUN_DTYPE_UINT64, __VA_ARGS__)
#define T_BOOL(X, ...) X(b, uint8_t, uint32_t, NETRUN_DTYPE_BOOL, __VA_ARGS__)
#define T_INT(X, ...) T_SINT(X, __VA_ARGS__) T_UINT(X, __VA_ARGS__)
#define T_NUM(X, ...) T_FLT(X, __VA_ARGS__) T_INT(X, __VA_ARGS__)
#define T_FLT_SINT(X, ...) T_FLT(X, __VA_ARGS__) T_SINT(X, __VA_ARGS__)
#define T_NUM_BOOL(X, ...) T_NUM(X, __VA_ARGS__) T_BOOL(X, __VA_ARGS__)

#define OUT_SAME(T) T
#define OUT_BOOL(T) uint8_t

/* Per-run constants the inner loops read. */
typedef struct ew_args {
    const netrun_unary_params *p;
    atomic_int div_zero; /* set when an integer Div/Mod meets a zero divisor */
} ew_args;

static void flag_div_zero(ew_args *k) { atomic_store_explicit(&k->div_zero, 1, memory_order_relaxed); }

/* float32 loops are compiled three times (AVX-512, AVX2+FMA, baseline) and the loader picks the widest the CPU
 * has (GCC/clang target_clones, an ifunc): the default build stays portable and still uses the whole vector
 * unit. Other dtypes keep one baseline copy (code size; they are rarely hot). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NETRUN_NO_CLONES)
#define SIMD_f32 __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define SIMD_f32
#endif
#define SIMD_f64
#define SIMD_i8
#define SIMD_i16
#define SIMD_i32
#define SIMD_i64
#define SIMD_u8
#define SIMD_u16
#define SIMD_u32
#define SIMD_u64
#define SIMD_b

/* ------------------------------------------------------------------------------------------------------ */
/* Binary ops: y[i] = f(a[i*sa], b[i*sb]) for sa, sb in {0, 1}.                                          */

typedef void (*bin_fn)(void *y, const void *a, const void *b, int64_t n, int sa, int sb, ew_args *k);

#define BIN_LOOP(NAME, T, TB, OT, EXPR) BIN_LOOP_A(NAME, T, TB, OT, EXPR, )
#define BIN_LOOP_A(NAME, T, TB, OT, EXPR, ATTR)                                                           \
    ATTR static void NAME(void *yv, const void *av, const void *bv, int64_t n, int sa, int sb, ew_args *k) { \
        const T *pa = av;                                                                               \
        const TB *pb = bv;                                                                              \
        OT *y = yv;                                                                                     \
        (void)k;                                                                                        \
        if (sa && sb) {                                                                                 \
            for (int64_t i = 0; i < n; i++) { const T a = pa[i]; const TB b = pb[i]; y[i] = (OT)(EXPR); } \
        } else if (sa) {                                                                                \
            const TB b = pb[0];                                                                         \
            for (int64_t i = 0; i < n; i++) { const T a = pa[i]; y[i] = (OT)(EXPR); }                   \
        } else if (sb) {                                                                                \
            const T a = pa[0];                                                                          \
            for (int64_t i = 0; i < n; i++) { const TB b = pb[i]; y[i] = (OT)(EXPR); }                  \
        } else {                                                                                        \
            const T a = pa[0];                                                                          \
            const TB b = pb[0];                                                                         \
            const OT v = (OT)(EXPR);                                                                    \
            for (int64_t i = 0; i < n; i++) y[i] = v;                                                   \
        }                                                                                               \
    }

#define GEN_BIN(S, T, WT, E, NAME, OT, EXPR) BIN_LOOP_A(NAME##_##S, T, T, OT(T), EXPR(T, WT), SIMD_##S)
#define TAB_BIN(S, T, WT, E, NAME, OT, EXPR) [E] = NAME##_##S,
#define DEF_BIN(NAME, SET, OT, EXPR) \
    SET(GEN_BIN, NAME, OT, EXPR) static const bin_fn NAME##_tab[NDT] = {SET(TAB_BIN, NAME, OT, EXPR)};

/* Integer helpers that stay defined for every input (zero divisors are flagged and give 0). */
#define SINT_HELPERS(S, T, WT, E, ...)                                                                 \
    static inline T div_##S(T a, T b, ew_args *k) {                                                    \
        if (b == 0) { flag_div_zero(k); return 0; }                                                    \
        if (b == -1) return (T)(0 - (WT)a); /* MIN / -1 wraps as in two's complement */                \
        return (T)(a / b);                                                                             \
    }                                                                                                  \
    static inline T rem_##S(T a, T b, ew_args *k) { /* C fmod semantics: sign of the dividend */       \
        if (b == 0) { flag_div_zero(k); return 0; }                                                    \
        if (b == -1) return 0;                                                                         \
        return (T)(a % b);                                                                             \
    }                                                                                                  \
    static inline T mod_##S(T a, T b, ew_args *k) { /* Python semantics: sign of the divisor */        \
        T r = rem_##S(a, b, k);                                                                        \
        if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);                                            \
        return r;                                                                                      \
    }
#define UINT_HELPERS(S, T, WT, E, ...)                                                                 \
    static inline T div_##S(T a, T b, ew_args *k) {                                                    \
        if (b == 0) { flag_div_zero(k); return 0; }                                                    \
        return (T)(a / b);                                                                             \
    }                                                                                                  \
    static inline T rem_##S(T a, T b, ew_args *k) {                                                    \
        if (b == 0) { flag_div_zero(k); return 0; }                                                    \
        return (T)(a % b);                                                                             \
    }                                                                                                  \
    static inline T mod_##S(T a, T b, ew_args *k) { return rem_##S(a, b, k); }
T_SINT(SINT_HELPERS, ~)
T_UINT(UINT_HELPERS, ~)

#define E_ADD(T, WT) (T)((WT)a + (WT)b)
#define E_SUB(T, WT) (T)((WT)a - (WT)b)
#define E_MUL(T, WT) (T)((WT)a * (WT)b)
#define E_FDIV(T, WT) a / b
#define E_MAX(T, WT) (a > b || a != a) ? a : b /* NaN propagates, as onnxruntime */
#define E_MIN(T, WT) (a < b || a != a) ? a : b
#define E_EQ(T, WT) a == b
#define E_GT(T, WT) a > b
#define E_GE(T, WT) a >= b
#define E_LT(T, WT) a < b
#define E_LE(T, WT) a <= b
#define E_AND(T, WT) (a != 0) & (b != 0)
#define E_OR(T, WT) (a != 0) | (b != 0)
#define E_XOR(T, WT) (a != 0) ^ (b != 0)
#define E_BAND(T, WT) a & b
#define E_BOR(T, WT) a | b
#define E_BXOR(T, WT) a ^ b
#define E_SHL(T, WT) b >= 8 * sizeof(T) ? 0 : (T)((WT)a << b)
#define E_SHR(T, WT) b >= 8 * sizeof(T) ? 0 : (T)(a >> b)
/* signed (opset 28): shifted as two's complement, arithmetic right shift; a count < 0 or >= the width leaves
 * what the sign extension alone gives (-1 for a negative X shifted right, else 0) */
#define E_SHL_S(T, WT) (b < 0 || b >= (T)(8 * sizeof(T))) ? 0 : (T)((WT)a << b)
#define E_SHR_S(T, WT) (b < 0 || b >= (T)(8 * sizeof(T))) ? (T)(a < 0 ? -1 : 0) : (T)(a >> b)
#define E_PRELU(T, WT) a < 0 ? (T)((WT)a * (WT)b) : a
#define E_FIRST(T, WT) ((void)b, a) /* PRelu on unsigned X: nothing is negative */
#define E_FMODF(T, WT) _Generic(a, float: fmodf((float)a, (float)b), default: fmod((double)a, (double)b))

DEF_BIN(Add, T_NUM, OUT_SAME, E_ADD)
DEF_BIN(Sub, T_NUM, OUT_SAME, E_SUB)
DEF_BIN(Mul, T_NUM, OUT_SAME, E_MUL)
DEF_BIN(Max, T_NUM, OUT_SAME, E_MAX)
DEF_BIN(Min, T_NUM, OUT_SAME, E_MIN)
DEF_BIN(Equal, T_NUM_BOOL, OUT_BOOL, E_EQ)
DEF_BIN(Greater, T_NUM, OUT_BOOL, E_GT)
DEF_BIN(GreaterOrEqual, T_NUM, OUT_BOOL, E_GE)
DEF_BIN(Less, T_NUM, OUT_BOOL, E_LT)
DEF_BIN(LessOrEqual, T_NUM, OUT_BOOL, E_LE)
DEF_BIN(And, T_BOOL, OUT_BOOL, E_AND)
DEF_BIN(Or, T_BOOL, OUT_BOOL, E_OR)
DEF_BIN(Xor, T_BOOL, OUT_BOOL, E_XOR)
DEF_BIN(BitwiseAnd, T_INT, OUT_SAME, E_BAND)
DEF_BIN(BitwiseOr, T_INT, OUT_SAME, E_BOR)
DEF_BIN(BitwiseXor, T_INT, OUT_SAME, E_BXOR)
T_UINT(GEN_BIN, ShiftLeft, OUT_SAME, E_SHL)
T_SINT(GEN_BIN, ShiftLeft, OUT_SAME, E_SHL_S)
static const bin_fn ShiftLeft_tab[NDT] = {T_INT(TAB_BIN, ShiftLeft, OUT_SAME, ~)};
T_UINT(GEN_BIN, ShiftRight, OUT_SAME, E_SHR)
T_SINT(GEN_BIN, ShiftRight, OUT_SAME, E_SHR_S)
static const bin_fn ShiftRight_tab[NDT] = {T_INT(TAB_BIN, ShiftRight, OUT_SAME, ~)};
T_FLT_SINT(GEN_BIN, PRelu, OUT_SAME, E_PRELU)
T_UINT(GEN_BIN, PRelu, OUT_SAME, E_FIRST)
static const bin_fn PRelu_tab[NDT] = {T_NUM(TAB_BIN, PRelu, OUT_SAME, ~)};

/* Div and Mod: float and integer forms differ. */
#define GEN_IDIV(S, T, WT, E, ...) BIN_LOOP(Div_##S, T, T, T, div_##S(a, b, k))
#define GEN_FDIV(S, T, WT, E, ...) BIN_LOOP_A(Div_##S, T, T, T, a / b, SIMD_##S)
#define GEN_IREM(S, T, WT, E, ...) BIN_LOOP(Fmod_##S, T, T, T, rem_##S(a, b, k))
#define GEN_IMOD(S, T, WT, E, ...) BIN_LOOP(Mod_##S, T, T, T, mod_##S(a, b, k))
#define GEN_FMOD(S, T, WT, E, ...) BIN_LOOP(Fmod_##S, T, T, T, E_FMODF(T, WT))
/* float Mod with fmod=0 (opset 28): a - floor(a / b) * b, the sign of b; a zero result takes b's sign */
static inline double py_fmod(double a, double b) {
    double r = fmod(a, b);
    if (r == 0) return copysign(0.0, b);
    return (r < 0) != (b < 0) ? r + b : r;
}
#define GEN_FPYMOD(S, T, WT, E, ...) BIN_LOOP(Mod_##S, T, T, T, (T)py_fmod((double)a, (double)b))
T_INT(GEN_IDIV, ~)
T_FLT(GEN_FDIV, ~)
T_INT(GEN_IREM, ~)
T_INT(GEN_IMOD, ~)
T_FLT(GEN_FMOD, ~)
T_FLT(GEN_FPYMOD, ~)
#define TAB_NAMED(S, T, WT, E, NAME) [E] = NAME##_##S,
static const bin_fn Div_tab[NDT] = {T_NUM(TAB_NAMED, Div)};
static const bin_fn Fmod_tab[NDT] = {T_NUM(TAB_NAMED, Fmod)};
static const bin_fn Mod_tab[NDT] = {T_NUM(TAB_NAMED, Mod)};

/* Pow: the exponent arrives converted to double; the result converts back to the base type with the same
 * defined float->int conversion as Cast. */
static inline int32_t pw_i32(double v) { return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN; }
static inline int64_t pw_i64(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
/* float x^3 (GPT-2's tanh GELU): the product in double, rounded once more than pow's, and vectorized */
BIN_LOOP(Pow_f32, float, double, float,
         b == 2.0 ? a * a : b == 3.0 ? (float)((double)a * a * a) : (float)pow((double)a, b))
BIN_LOOP(Pow_f64, double, double, double, b == 2.0 ? a * a : pow(a, b))
BIN_LOOP(Pow_i32, int32_t, double, int32_t, pw_i32(pow((double)a, b)))
BIN_LOOP(Pow_i64, int64_t, double, int64_t, pw_i64(pow((double)a, b)))
static const bin_fn Pow_tab[NDT] = {[NETRUN_DTYPE_FLOAT] = Pow_f32, [NETRUN_DTYPE_DOUBLE] = Pow_f64,
                                    [NETRUN_DTYPE_INT32] = Pow_i32, [NETRUN_DTYPE_INT64] = Pow_i64};

/* ------------------------------------------------------------------------------------------------------ */
/* Unary ops: y[i] = f(x[i]) with constants A, B, G (alpha, beta, gamma) from the params.                  */

typedef void (*un_fn)(void *y, const void *x, int64_t n, const netrun_unary_params *p);

/* EXPR sees x and the constants; F(name) picks the float or double libm function. */
#define UN_LOOP(NAME, T, OT, EXPR) UN_LOOP_A(NAME, T, OT, EXPR, )
#define UN_LOOP_A(NAME, T, OT, EXPR, ATTR)                                           \
    ATTR static void NAME(void *yv, const void *xv, int64_t n, const netrun_unary_params *p) { \
        const T *px = xv;                                                                 \
        OT *y = yv;                                                                       \
        const T A = (T)p->alpha, B = (T)p->beta, G = (T)p->gamma;                         \
        const int APPROX = p->approximate_tanh;                                           \
        (void)A, (void)B, (void)G, (void)APPROX;                                          \
        for (int64_t i = 0; i < n; i++) {                                                 \
            const T x = px[i];                                                            \
            y[i] = (OT)(EXPR);                                                            \
        }                                                                                 \
    }

#define GEN_UNF(S, T, WT, E, NAME, OT, EXPR) UN_LOOP_A(NAME##_##S, T, OT(T), EXPR(T, F_##S), SIMD_##S)
#define TAB_UN(S, T, WT, E, NAME, OT, EXPR) [E] = NAME##_##S,
#define DEF_UN(NAME, SET, OT, EXPR) \
    SET(GEN_UNF, NAME, OT, EXPR) static const un_fn NAME##_tab[NDT] = {SET(TAB_UN, NAME, OT, EXPR)};
/* libm name for the type: F_f32(exp) -> expf. Integer types never use libm. */
#define F_f32(fn) fn##f
#define F_f64(fn) fn
#define F_i8(fn) fn
#define F_i16(fn) fn
#define F_i32(fn) fn
#define F_i64(fn) fn
#define F_u8(fn) fn
#define F_u16(fn) fn
#define F_u32(fn) fn
#define F_u64(fn) fn
#define F_b(fn) fn

/* fexp / fexpf: exp by dtype for the F(...) name mapping below; the float one vectorizes (cpu_internal.h). */
CPU_MATH_INLINE static inline float fexpf(float x) { return cpu_expf(x); }
static inline double fexp(double x) { return exp(x); }
/* flog: the same for log (cpu_internal.h: within 2 ulp) */
CPU_MATH_INLINE static inline float flogf(float x) { return cpu_logf(x); }
static inline double flog(double x) { return log(x); }
/* ftanh / ferf: the same for tanh and erf (cpu_internal.h: within 8 ulp) */
CPU_MATH_INLINE static inline float ftanhf(float x) { return cpu_tanhf(x); }
static inline double ftanh(double x) { return tanh(x); }
CPU_MATH_INLINE static inline float ferff(float x) { return cpu_erff(x); }
static inline double ferf(double x) { return erf(x); }

#define U_RELU(T, F) x < 0 ? (T)0 : x
#define U_LEAKY(T, F) x >= 0 ? x : x * A
#define U_SIGMOID(T, F) 1 / (1 + F(fexp)(-x))
#define U_TANH(T, F) F(ftanh)(x)
/* clamp to [0, 1] by compares (NaN compares false and passes through), not fminf / fmaxf: GCC makes those scalar
 * libm calls, and HardSwish ran at half onnxruntime's speed */
#define U_CLAMP01(T, v) F_clamp01_##T(v)
CPU_MATH_INLINE static inline float F_clamp01_float(float v) {
    v = cpu_selectf(0u - (uint32_t)(v < 0.0f), 0.0f, v);
    return cpu_selectf(0u - (uint32_t)(v > 1.0f), 1.0f, v);
}
static inline double F_clamp01_double(double v) { return v != v ? v : fmax(0.0, fmin(1.0, v)); }
#define U_HSIG(T, F) U_CLAMP01(T, A * x + B)
#define U_HSWISH(T, F) x * U_CLAMP01(T, x / 6 + (T)0.5)
#define U_SWISH(T, F) x / (1 + F(fexp)(-A * x)) /* x * sigmoid(alpha * x) */
#define U_ERF(T, F) F(ferf)(x)
#define U_EXP(T, F) F(fexp)(x)
#define U_LOG(T, F) F(flog)(x)
#define U_SQRT(T, F) F(sqrt)(x)
#define U_NEGF(T, F) -x
#define U_ABSF(T, F) F(fabs)(x)
#define U_RECIP(T, F) 1 / x
#define U_FLOOR(T, F) F(floor)(x)
#define U_CEIL(T, F) F(ceil)(x)
#define U_ROUND(T, F) F(nearbyint)(x) /* default rounding mode: half to even */
#define U_SIGNF(T, F) x > 0 ? (T)1 : x < 0 ? (T)-1 : x
#define U_SIN(T, F) F(sin)(x)
#define U_COS(T, F) F(cos)(x)
#define U_TAN(T, F) F(tan)(x)
#define U_ASIN(T, F) F(asin)(x)
#define U_ACOS(T, F) F(acos)(x)
#define U_ATAN(T, F) F(atan)(x)
#define U_SINH(T, F) F(sinh)(x)
#define U_COSH(T, F) F(cosh)(x)
#define U_ASINH(T, F) F(asinh)(x)
#define U_ACOSH(T, F) F(acosh)(x)
#define U_ATANH(T, F) F(atanh)(x)
#define U_ELU(T, F) x >= 0 ? x : A * F(expm1)(x)
#define U_SELU(T, F) x > 0 ? G * x : G * (A * F(exp)(x) - A)
#define U_CELU(T, F) x != x ? x : F(fmax)((T)0, x) + F(fmin)((T)0, A * F(expm1)(x / A))
#define U_SOFTPLUS(T, F) x > 0 ? x + F(log1p)(F(exp)(-x)) : F(log1p)(F(exp)(x))
#define U_SOFTSIGN(T, F) x / (1 + F(fabs)(x))
#define U_THRELU(T, F) x > A ? x : (T)0
#define U_GELU(T, F) APPROX ? (T)0.5 * x * (1 + F(ftanh)((T)0.7978845608028654 * (x + (T)0.044715 * x * x * x))) \
                            : (T)0.5 * x * (1 + F(ferf)(x * (T)0.7071067811865476))
#define U_MISH(T, F) x * F(tanh)(x > 0 ? x + F(log1p)(F(exp)(-x)) : F(log1p)(F(exp)(x)))
#define U_SHRINK(T, F) x < -B ? x + A : x > B ? x - A : (T)0
#define U_ISNAN(T, F) x != x
#define U_ISINF(T, F) F(fabs)(x) == (T)INFINITY && ((x < 0 && A != 0) || (x > 0 && B != 0))
/* Integer forms. */
#define U_NEGI(T, F) (T)(0 - (uint64_t)x)
#define U_ABSI(T, F) x < 0 ? (T)(0 - (uint64_t)x) : x
#define U_SIGNI(T, F) (T)((x > 0) - (x < 0))
#define U_SIGNU(T, F) (T)(x > 0)
#define U_NOT(T, F) !x
#define U_BNOT(T, F) (T)~x

/* Ops with an AVX-512 float loop beside the portable ones (DEF_UN_X512; Gelu's two forms below): exp, log, sigmoid,
 * swish, tanh, erf through cpu_internal.h's 16-lane forms, where the auto-vectorized portable loops (no FMA: ISO C
 * keeps a * b + c apart; two scalings for exp; masks for log) took 1.1x to 4x onnxruntime's time at 1 thread. Same
 * special values; the bounds are tested on both forms (tests/cpu/test_fast_math.c). The portable loops stay for
 * other CPUs and double. */
#ifdef CPU_HAVE_AVX512_MATH
/* sigmoid = 1 / (1 + exp(-x)) and swish = x / (1 + exp(-alpha x)): one exp and one division, as the portable
 * loops (rcp14 and a Newton step measured no faster here). -x >= 89 gives exp = inf and 0 (the true value is below
 * 2^-128), +-inf give 0 and 1, NaN stays NaN. */
CPU_AVX512_INLINE static inline __m512 v512_sigmoid(__m512 x, float a) {
    (void)a;
    const __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_div_ps(one, _mm512_add_ps(one, cpu_exp_ps512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}
CPU_AVX512_INLINE static inline __m512 v512_swish(__m512 x, float a) {
    const __m512 e = cpu_exp_ps512(_mm512_mul_ps(_mm512_set1_ps(-a), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}
CPU_AVX512_INLINE static inline __m512 v512_exp(__m512 x, float a) { (void)a; return cpu_exp_ps512(x); }
CPU_AVX512_INLINE static inline __m512 v512_log(__m512 x, float a) { (void)a; return cpu_log_ps512(x); }
CPU_AVX512_INLINE static inline __m512 v512_tanh(__m512 x, float a) { (void)a; return cpu_tanh_ps512(x); }
CPU_AVX512_INLINE static inline __m512 v512_erf(__m512 x, float a) { (void)a; return cpu_erf_ps512(x); }
/* Gelu's two forms: 0.5 x (1 + tanh(0.79788456 (x + 0.044715 x^3))) and 0.5 x (1 + erf(x / sqrt(2))) */
CPU_AVX512_INLINE static inline __m512 v512_gelu_tanh(__m512 x, float a) {
    (void)a;
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), x), x), x);
    const __m512 t = cpu_tanh_ps512(_mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_add_ps(x, x3)));
    const __m512 h = _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
    return _mm512_fmadd_ps(h, t, h);
}
CPU_AVX512_INLINE static inline __m512 v512_gelu_erf(__m512 x, float a) {
    (void)a;
    const __m512 e = cpu_erf_ps512(_mm512_mul_ps(x, _mm512_set1_ps(0.7071067811865476f)));
    const __m512 h = _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
    return _mm512_fmadd_ps(h, e, h);
}
/* 16 at a time, the tail under a mask (masked-off lanes compute on zeros and are not stored); x fetched 2 KB ahead
 * (5-10% on 1.2 M values, where the loads waited on memory). */
#define X512_AHEAD 2048
#define X512_LOOP(NAME, VF)                                                                                    \
    CPU_AVX512_MATH static void NAME##_f32_x512(void *yv, const void *xv, int64_t n, const netrun_unary_params *p) { \
        const float *x = xv;                                                                                   \
        float *y = yv;                                                                                         \
        const float a = (float)p->alpha;                                                                       \
        (void)a;                                                                                               \
        int64_t i = 0;                                                                                         \
        for (; i + 16 <= n; i += 16) {                                                                         \
            _mm_prefetch((const char *)((uintptr_t)(x + i) + X512_AHEAD), _MM_HINT_T0);                        \
            _mm512_storeu_ps(y + i, VF(_mm512_loadu_ps(x + i), a));                                            \
        }                                                                                                      \
        if (i < n) {                                                                                           \
            const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);                                              \
            _mm512_mask_storeu_ps(y + i, k, VF(_mm512_maskz_loadu_ps(k, x + i), a));                           \
        }                                                                                                      \
    }
#define DEF_UN_X512(NAME, EXPR, VF)                                                                            \
    T_FLT(GEN_UNF, NAME, OUT_SAME, EXPR)                                                                       \
    X512_LOOP(NAME, VF)                                                                                        \
    static void NAME##_f32_best(void *y, const void *x, int64_t n, const netrun_unary_params *p) {             \
        if (cpu_has_avx512f()) NAME##_f32_x512(y, x, n, p);                                                    \
        else NAME##_f32(y, x, n, p);                                                                           \
    }                                                                                                          \
    static const un_fn NAME##_tab[NDT] = {[NETRUN_DTYPE_FLOAT] = NAME##_f32_best, [NETRUN_DTYPE_DOUBLE] = NAME##_f64};
#else
#define DEF_UN_X512(NAME, EXPR, VF) DEF_UN(NAME, T_FLT, OUT_SAME, EXPR)
#endif

DEF_UN(Relu, T_FLT_SINT, OUT_SAME, U_RELU)
DEF_UN(LeakyRelu, T_FLT, OUT_SAME, U_LEAKY)
DEF_UN_X512(Sigmoid, U_SIGMOID, v512_sigmoid)
DEF_UN_X512(Tanh, U_TANH, v512_tanh)
DEF_UN(HardSigmoid, T_FLT, OUT_SAME, U_HSIG)
DEF_UN(HardSwish, T_FLT, OUT_SAME, U_HSWISH)
DEF_UN_X512(Swish, U_SWISH, v512_swish)
DEF_UN_X512(Erf, U_ERF, v512_erf)
DEF_UN_X512(Exp, U_EXP, v512_exp)
DEF_UN_X512(Log, U_LOG, v512_log)
DEF_UN(Sqrt, T_FLT, OUT_SAME, U_SQRT)
DEF_UN(Reciprocal, T_FLT, OUT_SAME, U_RECIP)
DEF_UN(Floor, T_FLT, OUT_SAME, U_FLOOR)
DEF_UN(Ceil, T_FLT, OUT_SAME, U_CEIL)
DEF_UN(Round, T_FLT, OUT_SAME, U_ROUND)
DEF_UN(Sin, T_FLT, OUT_SAME, U_SIN)
DEF_UN(Cos, T_FLT, OUT_SAME, U_COS)
DEF_UN(Tan, T_FLT, OUT_SAME, U_TAN)
DEF_UN(Asin, T_FLT, OUT_SAME, U_ASIN)
DEF_UN(Acos, T_FLT, OUT_SAME, U_ACOS)
DEF_UN(Atan, T_FLT, OUT_SAME, U_ATAN)
DEF_UN(Sinh, T_FLT, OUT_SAME, U_SINH)
DEF_UN(Cosh, T_FLT, OUT_SAME, U_COSH)
DEF_UN(Asinh, T_FLT, OUT_SAME, U_ASINH)
DEF_UN(Acosh, T_FLT, OUT_SAME, U_ACOSH)
DEF_UN(Atanh, T_FLT, OUT_SAME, U_ATANH)
DEF_UN(Elu, T_FLT, OUT_SAME, U_ELU)
DEF_UN(Selu, T_FLT, OUT_SAME, U_SELU)
DEF_UN(Celu, T_FLT, OUT_SAME, U_CELU)
DEF_UN(Softplus, T_FLT, OUT_SAME, U_SOFTPLUS)
DEF_UN(Softsign, T_FLT, OUT_SAME, U_SOFTSIGN)
DEF_UN(ThresholdedRelu, T_FLT, OUT_SAME, U_THRELU)
/* Gelu: one float32 loop per form (a loop holding both forms computes both where it vectorizes). */
/* Gelu_tanh_f32 is also MatMulBias's tanh GELU (cpu_gelu_tanh_f32): one function, so a fused product gives the
 * Gelu node's bits. */
SIMD_f32 static void Gelu_tanh_f32(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + ftanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}
SIMD_f32 static void Gelu_erf_f32(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + ferff(x[i] * 0.7071067811865476f));
}
#ifdef CPU_HAVE_AVX512_MATH
X512_LOOP(Gelu_tanh, v512_gelu_tanh)
X512_LOOP(Gelu_erf, v512_gelu_erf)
#endif
void cpu_gelu_tanh_f32(float *y, const float *x, int64_t n) {
#ifdef CPU_HAVE_AVX512_MATH
    if (cpu_has_avx512f()) {
        const netrun_unary_params none = {0};
        Gelu_tanh_f32_x512(y, x, n, &none);
        return;
    }
#endif
    Gelu_tanh_f32(y, x, n);
}
static void Gelu_f32(void *y, const void *x, int64_t n, const netrun_unary_params *p) {
    if (p->approximate_tanh) cpu_gelu_tanh_f32(y, x, n);
#ifdef CPU_HAVE_AVX512_MATH
    else if (cpu_has_avx512f()) Gelu_erf_f32_x512(y, x, n, p);
#endif
    else Gelu_erf_f32(y, x, n);
}
UN_LOOP_A(Gelu_f64, double, double, U_GELU(double, F_f64), SIMD_f64)
static const un_fn Gelu_tab[NDT] = {[NETRUN_DTYPE_FLOAT] = Gelu_f32, [NETRUN_DTYPE_DOUBLE] = Gelu_f64};
DEF_UN(Mish, T_FLT, OUT_SAME, U_MISH)
DEF_UN(Shrink, T_FLT, OUT_SAME, U_SHRINK)
DEF_UN(IsNaN, T_FLT, OUT_BOOL, U_ISNAN)
DEF_UN(IsInf, T_FLT, OUT_BOOL, U_ISINF)
DEF_UN(Not, T_BOOL, OUT_BOOL, U_NOT)
DEF_UN(BitwiseNot, T_INT, OUT_SAME, U_BNOT)

/* Ops whose float and integer forms differ: build the float part and the integer part separately. */
#define GEN_UN2(S, T, WT, E, NAME, EXPR) UN_LOOP(NAME##_##S, T, T, EXPR(T, F_##S))
#define TAB_UN2(S, T, WT, E, NAME, EXPR) [E] = NAME##_##S,
T_FLT(GEN_UN2, Neg, U_NEGF)
T_SINT(GEN_UN2, Neg, U_NEGI)
T_FLT(GEN_UN2, Abs, U_ABSF)
T_SINT(GEN_UN2, Abs, U_ABSI)
T_FLT(GEN_UN2, Sign, U_SIGNF)
T_SINT(GEN_UN2, Sign, U_SIGNI)
T_UINT(GEN_UN2, Sign, U_SIGNU)
#define U_ID(T, F) x
T_UINT(GEN_UN2, Abs, U_ID)
static const un_fn Neg_tab[NDT] = {T_FLT_SINT(TAB_UN2, Neg, ~)};
static const un_fn Abs_tab[NDT] = {T_NUM(TAB_UN2, Abs, ~)};
static const un_fn Sign_tab[NDT] = {T_NUM(TAB_UN2, Sign, ~)};

/* Clip with bounds already in the element type. */
typedef void (*clip_fn)(void *y, const void *x, int64_t n, const void *lo, const void *hi);
#define GEN_CLIP(S, T, WT, E, ...)                                                                    \
    static void Clip_##S(void *yv, const void *xv, int64_t n, const void *lov, const void *hiv) {     \
        const T *x = xv, lo = *(const T *)lov, hi = *(const T *)hiv;                                  \
        T *y = yv;                                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                             \
            T t = x[i] < lo ? lo : x[i];                                                              \
            y[i] = t > hi ? hi : t; /* min(max(x, lo), hi) as onnxruntime; NaN stays NaN */           \
        }                                                                                             \
    }
T_NUM(GEN_CLIP, ~)
#define TAB_CLIP(S, T, WT, E, ...) [E] = Clip_##S,
static const clip_fn Clip_tab[NDT] = {T_NUM(TAB_CLIP, ~)};

/* ------------------------------------------------------------------------------------------------------ */
/* Broadcasting plan: the output shape with dims of size 1 dropped and neighbours merged where every input
 * walks them contiguously (or not at all). Then the innermost run has input strides 0 or 1.             */

#define MAXIN 3
typedef struct bc_plan {
    int rank, n_in;
    int64_t dims[NETRUN_MAX_RANK];
    int64_t st[MAXIN][NETRUN_MAX_RANK];
    int64_t total;
} bc_plan;

static netrun_status bc_build(bc_plan *p, const netrun_tensor *out, int n_in, const netrun_tensor *const *in) {
    int64_t st[MAXIN][NETRUN_MAX_RANK];
    int R = out->rank;
    if (R < 0 || R > NETRUN_MAX_RANK) return cpu_host->error(NETRUN_ERR_INTERNAL, "output rank %d out of range", R);
    for (int k = 0; k < n_in; k++) {
        if (in[k]->rank < 0 || in[k]->rank > R)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "input %d of rank %d does not broadcast to rank %d",
                                   k, in[k]->rank, R);
        for (int d = 0; d < in[k]->rank; d++) {
            int64_t od = out->dims[d + R - in[k]->rank];
            if (in[k]->dims[d] != od && in[k]->dims[d] != 1)
                return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                                       "input %d dim %d (%lld) does not broadcast to the output's %lld", k, d,
                                       (long long)in[k]->dims[d], (long long)od);
        }
        cpu_broadcast_strides(in[k]->rank, in[k]->dims, R, out->dims, st[k]);
    }
    p->n_in = n_in;
    p->rank = 0;
    p->total = cpu_count(out);
    for (int d = 0; d < R; d++) {
        if (out->dims[d] == 1) continue;
        if (p->rank > 0) {
            int r = p->rank - 1, merge = 1;
            for (int k = 0; k < n_in; k++)
                if (p->st[k][r] != st[k][d] * out->dims[d]) merge = 0;
            if (merge) {
                p->dims[r] *= out->dims[d];
                for (int k = 0; k < n_in; k++) p->st[k][r] = st[k][d];
                continue;
            }
        }
        p->dims[p->rank] = out->dims[d];
        for (int k = 0; k < n_in; k++) p->st[k][p->rank] = st[k][d];
        p->rank++;
    }
    if (p->rank == 0) { /* a single element */
        p->rank = 1;
        p->dims[0] = 1;
        for (int k = 0; k < n_in; k++) p->st[k][0] = 1;
    }
    return NETRUN_OK;
}

/* Called per contiguous run of the output: y and x[k] point at the run's first elements, s[k] in {0, 1}. */
typedef void (*run_fn)(void *job, char *y, const char *const *x, const int *s, int64_t n);

typedef struct bc_job {
    const bc_plan *plan;
    char *y;
    const char *x[MAXIN];
    size_t ysz, xsz[MAXIN];
    run_fn fn;
    void *job;
} bc_job;

static void bc_range(void *arg, int64_t begin, int64_t end) {
    const bc_job *j = arg;
    const bc_plan *p = j->plan;
    int R = p->rank;
    int64_t idx[NETRUN_MAX_RANK], off[MAXIN] = {0, 0, 0}, rem = begin;
    for (int d = R - 1; d >= 0; d--) {
        idx[d] = rem % p->dims[d];
        rem /= p->dims[d];
    }
    for (int k = 0; k < p->n_in; k++)
        for (int d = 0; d < R; d++) off[k] += idx[d] * p->st[k][d];
    int s[MAXIN];
    for (int k = 0; k < p->n_in; k++) s[k] = p->st[k][R - 1] != 0;
    int64_t pos = begin;
    while (pos < end) {
        int64_t len = p->dims[R - 1] - idx[R - 1];
        if (len > end - pos) len = end - pos;
        const char *xs[MAXIN];
        for (int k = 0; k < p->n_in; k++) xs[k] = j->x[k] + (size_t)off[k] * j->xsz[k];
        j->fn(j->job, j->y + (size_t)pos * j->ysz, xs, s, len);
        pos += len;
        idx[R - 1] += len;
        for (int k = 0; k < p->n_in; k++) off[k] += len * p->st[k][R - 1];
        for (int d = R - 1; d > 0 && idx[d] == p->dims[d]; d--) {
            for (int k = 0; k < p->n_in; k++) off[k] += p->st[k][d - 1] - idx[d] * p->st[k][d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

static void bc_execute(cpu_context *ctx, bc_job *j) {
    if (j->plan->total <= 0) return;
    if (j->plan->total >= 2 * GRAIN) cpu_parallel_for(ctx, j->plan->total, GRAIN, bc_range, j);
    else bc_range(j, 0, j->plan->total);
}

/* A binary run: the op's loop, with float16/bfloat16 operands converted block by block. */
typedef struct bin_job {
    bin_fn fn;
    ew_args *k;
    int half_a, half_b, half_y; /* half kind of a, b and y (0: use as stored) */
    size_t asz, bsz;            /* stored element sizes of a and b */
    size_t ysz_f32;             /* output element size of the float loop (4, or 1 for bool results) */
} bin_job;

static void bin_run(void *arg, char *y, const char *const *x, const int *s, int64_t n) {
    const bin_job *b = arg;
    if (!b->half_a && !b->half_b && !b->half_y) {
        b->fn(y, x[0], x[1], n, s[0], s[1], b->k);
        return;
    }
    float ta[HBLK], tb[HBLK], ty[HBLK];
    for (int64_t o = 0; o < n; o += HBLK) {
        int64_t m = n - o < HBLK ? n - o : HBLK;
        const void *pa = x[0], *pb = x[1];
        if (b->half_a) {
            half_to_f32(b->half_a, (const uint16_t *)x[0] + (s[0] ? o : 0), ta, s[0] ? m : 1);
            pa = ta;
        } else if (s[0]) pa = x[0] + (size_t)o * b->asz;
        if (b->half_b) {
            half_to_f32(b->half_b, (const uint16_t *)x[1] + (s[1] ? o : 0), tb, s[1] ? m : 1);
            pb = tb;
        } else if (s[1]) pb = x[1] + (size_t)o * b->bsz; /* Pow's double exponent */
        if (b->half_y) {
            b->fn(ty, pa, pb, m, s[0], s[1], b->k);
            f32_to_half(b->half_y, ty, (uint16_t *)y + o, m);
        } else {
            b->fn(y + (size_t)o * b->ysz_f32, pa, pb, m, s[0], s[1], b->k);
        }
    }
}

/* y = f(a, b) with broadcasting. The float loop stands in for float16/bfloat16. */
static netrun_status binary_apply(cpu_context *ctx, const bin_fn *tab, const netrun_tensor *a,
                                  const netrun_tensor *b, netrun_dtype bdt, netrun_tensor *y, ew_args *k,
                                  const char *op) {
    netrun_dtype t = a->dtype;
    int hk = half_kind(t);
    bin_fn fn = tab[hk ? NETRUN_DTYPE_FLOAT : t];
    if (!fn) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "%s: dtype %s not supported", op, dt_name(t));
    bc_plan plan;
    const netrun_tensor *in[2] = {a, b};
    netrun_status st = bc_build(&plan, y, 2, in);
    if (st != NETRUN_OK) return st;
    int yhalf = half_kind(y->dtype);
    bin_job bj = {fn, k, hk, half_kind(bdt), yhalf, dt_size(t), dt_size(bdt), y->dtype == NETRUN_DTYPE_BOOL ? 1 : 4};
    bc_job j = {&plan, y->data, {a->data, b->data, NULL}, dt_size(y->dtype), {dt_size(t), dt_size(bdt), 0},
                bin_run, &bj};
    bc_execute(ctx, &j);
    return NETRUN_OK;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The ops as the backend sees them. A kernel's state points at its row of ew_ops.                          */

typedef enum ew_kind {
    K_UNARY, K_BINARY, K_VARIADIC, K_MEAN, K_MOD, K_SHIFT, K_POW, K_CLIP, K_WHERE, K_PRELU
} ew_kind;

typedef struct ew_op {
    const char *name;
    ew_kind kind;
    const void *tab; /* un_fn[NDT] or bin_fn[NDT] (K_MOD: Mod_tab, K_SHIFT: ShiftLeft_tab) */
} ew_op;

static const ew_op ew_ops[] = {
#define UN(n) {#n, K_UNARY, n##_tab},
    UN(Relu) UN(LeakyRelu) UN(Sigmoid) UN(Tanh) UN(HardSigmoid) UN(HardSwish) UN(Erf) UN(Exp) UN(Log) UN(Sqrt)
    UN(Neg) UN(Abs) UN(Reciprocal) UN(Floor) UN(Ceil) UN(Round) UN(Sign) UN(Sin) UN(Cos) UN(Tan) UN(Asin)
    UN(Acos) UN(Atan) UN(Sinh) UN(Cosh) UN(Asinh) UN(Acosh) UN(Atanh) UN(Elu) UN(Selu) UN(Celu) UN(Softplus)
    UN(Softsign) UN(ThresholdedRelu) UN(Gelu) UN(Mish) UN(Shrink) UN(IsNaN) UN(IsInf) UN(Not) UN(BitwiseNot)
    UN(Swish)
#undef UN
#define BI(n) {#n, K_BINARY, n##_tab},
    BI(Add) BI(Sub) BI(Mul) BI(Div) BI(Equal) BI(Greater) BI(GreaterOrEqual) BI(Less) BI(LessOrEqual) BI(And)
    BI(Or) BI(Xor) BI(BitwiseAnd) BI(BitwiseOr) BI(BitwiseXor)
#undef BI
    {"Max", K_VARIADIC, Max_tab}, {"Min", K_VARIADIC, Min_tab}, {"Sum", K_VARIADIC, Add_tab},
    {"Mean", K_MEAN, Add_tab}, {"Mod", K_MOD, Mod_tab}, {"BitShift", K_SHIFT, ShiftLeft_tab},
    {"Pow", K_POW, Pow_tab}, {"Clip", K_CLIP, Clip_tab}, {"Where", K_WHERE, NULL}, {"PRelu", K_PRELU, PRelu_tab},
    {NULL, K_UNARY, NULL},
};

static const ew_op *ew_find(const char *name) {
    for (const ew_op *o = ew_ops; o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}

static const netrun_unary_params zero_params;

static const netrun_unary_params *uparams(const netrun_kernel_args *args) {
    return args->params ? (const netrun_unary_params *)args->params : &zero_params;
}

/* The dtype table entry a dtype runs on (half types run the float loop). */
static const void *tab_entry(const void *tab, netrun_dtype t) {
    if ((unsigned)t >= NDT || !tab) return NULL;
    if (half_kind(t)) t = NETRUN_DTYPE_FLOAT;
    return ((const void *const *)tab)[t];
}

static int ew_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const ew_op *o = ew_find(node->op_type);
    if (!o) {
        snprintf(reason, size, "no CPU elementwise kernel for %s", node->op_type);
        return 0;
    }
    if (node->n_inputs < 1 || node->inputs[0].rank < 0 || node->n_outputs < 1) {
        snprintf(reason, size, "%s needs an input and an output", node->op_type);
        return 0;
    }
    netrun_dtype t = node->inputs[0].dtype;
    if (o->kind == K_WHERE) {
        if (node->n_inputs != 3 || t != NETRUN_DTYPE_BOOL || !dt_size(node->inputs[1].dtype)) {
            snprintf(reason, size, "Where needs a bool condition and X/Y of a fixed-size dtype (got %s)",
                     node->n_inputs == 3 ? dt_name(node->inputs[1].dtype) : "wrong input count");
            return 0;
        }
        return 1;
    }
    if (!tab_entry(o->tab, t)) { /* BitShift/Mod: both directions/forms cover the same dtypes */
        snprintf(reason, size, "%s: dtype %s not supported by the CPU kernel", node->op_type, dt_name(t));
        return 0;
    }
    if (o->kind == K_POW && (node->n_inputs < 2 || !cpu_cast_supported(node->inputs[1].dtype, NETRUN_DTYPE_DOUBLE))) {
        snprintf(reason, size, "Pow: exponent dtype %s not supported",
                 node->n_inputs < 2 ? "(missing)" : dt_name(node->inputs[1].dtype));
        return 0;
    }
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank > NETRUN_MAX_RANK) {
            snprintf(reason, size, "%s: rank %d too large", node->op_type, node->inputs[i].rank);
            return 0;
        }
    return 1;
}

static netrun_status ew_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    const ew_op *o = ew_find(node->op_type);
    if (!o) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "no CPU elementwise kernel for %s", node->op_type);
    *state = (void *)o; /* a static row, never freed */
    *ws = 0;
    return NETRUN_OK;
}

/* ---- unary ---- */
typedef struct un_job {
    un_fn fn;
    const netrun_unary_params *p;
    const char *x;
    char *y;
    size_t xsz, ysz;
    int half_x, half_y;
} un_job;

static void un_range(void *arg, int64_t b, int64_t e) {
    const un_job *j = arg;
    if (!j->half_x) {
        j->fn(j->y + (size_t)b * j->ysz, j->x + (size_t)b * j->xsz, e - b, j->p);
        return;
    }
    float tx[HBLK], ty[HBLK];
    for (int64_t o = b; o < e; o += HBLK) {
        int64_t m = e - o < HBLK ? e - o : HBLK;
        half_to_f32(j->half_x, (const uint16_t *)j->x + o, tx, m);
        if (j->half_y) {
            j->fn(ty, tx, m, j->p);
            f32_to_half(j->half_y, ty, (uint16_t *)j->y + o, m);
        } else j->fn(j->y + (size_t)o * j->ysz, tx, m, j->p); /* bool results */
    }
}

static netrun_status run_unary(cpu_context *ctx, const ew_op *o, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    un_fn fn = (un_fn)tab_entry(o->tab, x->dtype);
    if (!fn) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "%s: dtype %s not supported", o->name, dt_name(x->dtype));
    int64_t n = cpu_count(x);
    if (n != cpu_count(y)) return cpu_host->error(NETRUN_ERR_INTERNAL, "%s: output size differs from input", o->name);
    un_job j = {fn, uparams(args), x->data, y->data, dt_size(x->dtype), dt_size(y->dtype),
                half_kind(x->dtype), half_kind(y->dtype)};
    if (n >= 2 * GRAIN) cpu_parallel_for(ctx, n, GRAIN, un_range, &j);
    else if (n > 0) un_range(&j, 0, n);
    return NETRUN_OK;
}

/* ---- binary / variadic ---- */
static netrun_status div_zero_error(const ew_op *o, ew_args *k) {
    if (atomic_load(&k->div_zero))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: integer division by zero", o->name);
    return NETRUN_OK;
}

static netrun_status run_binary(cpu_context *ctx, const ew_op *o, const bin_fn *tab, const netrun_kernel_args *args) {
    if (args->n_inputs < 2) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s needs 2 inputs", o->name);
    ew_args k = {uparams(args), 0};
    netrun_status st = binary_apply(ctx, tab, &args->inputs[0], &args->inputs[1], args->inputs[1].dtype,
                                    &args->outputs[0], &k, o->name);
    return st != NETRUN_OK ? st : div_zero_error(o, &k);
}

/* Sum/Mean/Max/Min over n inputs: y = x0 op x1, then y = y op xk (y is read in place). */
static netrun_status run_variadic(cpu_context *ctx, const ew_op *o, const netrun_kernel_args *args) {
    netrun_tensor *y = &args->outputs[0];
    ew_args k = {uparams(args), 0};
    netrun_status st;
    if (args->n_inputs < 1) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s needs inputs", o->name);
    if (o->kind == K_MEAN && half_kind(y->dtype)) { /* float16/bfloat16: summed in float (65504 + 20 overflows a half before the /2) */
        int64_t n = cpu_count(y);
        float *acc = cpu_host->alloc((size_t)(n ? n : 1) * sizeof(float), 64);
        if (!acc) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Mean: out of memory");
        netrun_tensor t = *y;
        t.dtype = NETRUN_DTYPE_FLOAT;
        t.data = t.buffer = acc;
        t.offset = 0;
        t.nbytes = (size_t)n * sizeof(float);
        const netrun_tensor *x0 = &args->inputs[0], *x1 = args->n_inputs > 1 ? &args->inputs[1] : x0;
        st = binary_apply(ctx, args->n_inputs > 1 ? Add_tab : Max_tab, x0, x1, x1->dtype, &t, &k, o->name);
        netrun_tensor sum = t;
        for (int i = 2; i < args->n_inputs && st == NETRUN_OK; i++)
            st = binary_apply(ctx, Add_tab, &sum, &args->inputs[i], args->inputs[i].dtype, &t, &k, o->name);
        for (int64_t i = 0; st == NETRUN_OK && i < n; i++) {
            float v = acc[i] / (float)args->n_inputs;
            ((uint16_t *)y->data)[i] = y->dtype == NETRUN_DTYPE_FLOAT16 ? cpu_float_to_half(v) : cpu_float_to_bf16(v);
        }
        cpu_host->free(acc);
        return st;
    }
    if (args->n_inputs == 1) {
        /* Broadcast copy: max(x, x) is x for every value, NaN included. */
        st = binary_apply(ctx, Max_tab, &args->inputs[0], &args->inputs[0], args->inputs[0].dtype, y, &k, o->name);
    } else {
        st = binary_apply(ctx, o->tab, &args->inputs[0], &args->inputs[1], args->inputs[1].dtype, y, &k, o->name);
        netrun_tensor acc = *y;
        for (int i = 2; i < args->n_inputs && st == NETRUN_OK; i++)
            st = binary_apply(ctx, o->tab, &acc, &args->inputs[i], args->inputs[i].dtype, y, &k, o->name);
    }
    if (st != NETRUN_OK || o->kind != K_MEAN) return st;
    int64_t n = cpu_count(y);
    double inv = 1.0 / args->n_inputs;
    switch (y->dtype) {
    case NETRUN_DTYPE_FLOAT: for (int64_t i = 0; i < n; i++) ((float *)y->data)[i] /= (float)args->n_inputs; break;
    case NETRUN_DTYPE_DOUBLE: for (int64_t i = 0; i < n; i++) ((double *)y->data)[i] *= inv; break;
    case NETRUN_DTYPE_FLOAT16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t *h = (uint16_t *)y->data + i;
            *h = cpu_float_to_half(cpu_half_to_float(*h) / (float)args->n_inputs);
        }
        break;
    case NETRUN_DTYPE_BFLOAT16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t *h = (uint16_t *)y->data + i;
            *h = cpu_float_to_bf16(cpu_bf16_to_float(*h) / (float)args->n_inputs);
        }
        break;
    default: return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Mean: dtype %s not supported", dt_name(y->dtype));
    }
    return NETRUN_OK;
}

/* Pow: the exponent is converted to double once, so every base type pairs with every exponent type. */
static netrun_status run_pow(cpu_context *ctx, const ew_op *o, const netrun_kernel_args *args) {
    if (args->n_inputs < 2) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Pow needs 2 inputs");
    const netrun_tensor *e = &args->inputs[1];
    if (!cpu_cast_supported(e->dtype, NETRUN_DTYPE_DOUBLE))
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Pow: exponent dtype %s not supported", dt_name(e->dtype));
    int64_t ne = cpu_count(e);
    if (ne < 0 || (uint64_t)ne > SIZE_MAX / 8)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Pow: exponent too large");
    double *ed = cpu_alloc((size_t)ne * 8);
    if (!ed) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Pow: out of memory for %lld exponents", (long long)ne);
    cpu_cast_elems(e->data, e->dtype, ed, NETRUN_DTYPE_DOUBLE, ne);
    netrun_tensor et = *e;
    et.dtype = NETRUN_DTYPE_DOUBLE;
    et.data = ed;
    ew_args k = {uparams(args), 0};
    netrun_status st = binary_apply(ctx, Pow_tab, &args->inputs[0], &et, NETRUN_DTYPE_DOUBLE, &args->outputs[0],
                                    &k, "Pow");
    cpu_free(ed);
    return st;
}

/* ---- Clip ---- */
typedef struct clip_job {
    clip_fn fn;
    const char *x;
    char *y;
    size_t sz;
    const void *lo, *hi;
} clip_job;

static void clip_range(void *arg, int64_t b, int64_t e) {
    const clip_job *j = arg;
    j->fn(j->y + (size_t)b * j->sz, j->x + (size_t)b * j->sz, e - b, j->lo, j->hi);
}

/* Bound i of Clip as a double/int64 pair, converted to the compute type: the input when given (exact), else
 * the params constant, else the type's limit. */
static netrun_status clip_bound(const netrun_kernel_args *args, int i, int has, float v, netrun_dtype ct,
                                int upper, void *out) {
    const netrun_tensor *b = i < args->n_inputs ? &args->inputs[i] : NULL;
    if (b && b->rank >= 0 && b->data) {
        if (cpu_count(b) != 1)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Clip: %s must be a scalar, has %lld elements",
                                   upper ? "max" : "min", (long long)cpu_count(b));
        if (!cpu_cast_supported(b->dtype, ct))
            return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Clip: bound dtype %s", dt_name(b->dtype));
        cpu_cast_elems(b->data, b->dtype, out, ct, 1);
        return NETRUN_OK;
    }
    double d = has ? (double)v : upper ? INFINITY : -INFINITY;
    /* Saturate to the type's range so that the conversion below is defined. */
    switch (ct) {
#define LIM(E, T, MN, MX) case E: { T t = d <= (double)MN ? MN : d >= (double)MX ? MX : (T)d; memcpy(out, &t, sizeof t); break; }
        LIM(NETRUN_DTYPE_INT8, int8_t, INT8_MIN, INT8_MAX)
        LIM(NETRUN_DTYPE_INT16, int16_t, INT16_MIN, INT16_MAX)
        LIM(NETRUN_DTYPE_INT32, int32_t, INT32_MIN, INT32_MAX)
        LIM(NETRUN_DTYPE_INT64, int64_t, INT64_MIN, INT64_MAX)
        LIM(NETRUN_DTYPE_UINT8, uint8_t, 0, UINT8_MAX)
        LIM(NETRUN_DTYPE_UINT16, uint16_t, 0, UINT16_MAX)
        LIM(NETRUN_DTYPE_UINT32, uint32_t, 0, UINT32_MAX)
        LIM(NETRUN_DTYPE_UINT64, uint64_t, 0, UINT64_MAX)
#undef LIM
    case NETRUN_DTYPE_FLOAT: { float f = (float)d; memcpy(out, &f, 4); break; }
    case NETRUN_DTYPE_DOUBLE: memcpy(out, &d, 8); break;
    default: return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Clip: dtype %s", dt_name(ct));
    }
    return NETRUN_OK;
}

static netrun_status run_clip(cpu_context *ctx, const ew_op *o, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    const netrun_unary_params *p = uparams(args);
    int hk = half_kind(x->dtype);
    netrun_dtype ct = hk ? NETRUN_DTYPE_FLOAT : x->dtype;
    clip_fn fn = (clip_fn)tab_entry(o->tab, x->dtype);
    if (!fn) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Clip: dtype %s not supported", dt_name(x->dtype));
    uint64_t lo = 0, hi = 0; /* room for any element type */
    netrun_status st = clip_bound(args, 1, p->has_min, p->alpha, ct, 0, &lo);
    if (st == NETRUN_OK) st = clip_bound(args, 2, p->has_max, p->beta, ct, 1, &hi);
    if (st != NETRUN_OK) return st;
    int64_t n = cpu_count(x);
    if (!hk) {
        clip_job j = {fn, x->data, y->data, dt_size(x->dtype), &lo, &hi};
        if (n >= 2 * GRAIN) cpu_parallel_for(ctx, n, GRAIN, clip_range, &j);
        else if (n > 0) clip_range(&j, 0, n);
        return NETRUN_OK;
    }
    float t[HBLK];
    for (int64_t b = 0; b < n; b += HBLK) {
        int64_t m = n - b < HBLK ? n - b : HBLK;
        half_to_f32(hk, (const uint16_t *)x->data + b, t, m);
        fn(t, t, m, &lo, &hi);
        f32_to_half(hk, t, (uint16_t *)y->data + b, m);
    }
    return NETRUN_OK;
}

/* ---- Where: selection by element size, any dtype ---- */
static void where_run(void *arg, char *y, const char *const *x, const int *s, int64_t n) {
    size_t sz = *(const size_t *)arg;
    const uint8_t *c = (const uint8_t *)x[0];
/* Both sides are loaded and blended with a mask so that the loop vectorizes. */
#define SEL(T)                                                                                           \
    {                                                                                                    \
        const T *a = (const T *)x[1], *b = (const T *)x[2];                                              \
        T *o = (T *)y;                                                                                   \
        if (s[0] && s[1] && s[2])                                                                        \
            for (int64_t i = 0; i < n; i++) {                                                            \
                T m = (T)((T)0 - (T)(c[i] != 0)), av = a[i], bv = b[i];                                  \
                o[i] = (T)((av & m) | (bv & (T)~m));                                                     \
            }                                                                                            \
        else                                                                                             \
            for (int64_t i = 0; i < n; i++) {                                                            \
                T m = (T)((T)0 - (T)(c[i * s[0]] != 0)), av = a[i * s[1]], bv = b[i * s[2]];             \
                o[i] = (T)((av & m) | (bv & (T)~m));                                                     \
            }                                                                                            \
    }                                                                                                    \
    break;
    switch (sz) {
    case 1: SEL(uint8_t)
    case 2: SEL(uint16_t)
    case 4: SEL(uint32_t)
    default: SEL(uint64_t)
    }
#undef SEL
}

static netrun_status run_where(cpu_context *ctx, const ew_op *o, const netrun_kernel_args *args) {
    if (args->n_inputs != 3) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Where needs 3 inputs");
    netrun_tensor *y = &args->outputs[0];
    size_t sz = dt_size(y->dtype);
    if (!sz || args->inputs[0].dtype != NETRUN_DTYPE_BOOL)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Where: condition %s, values %s not supported",
                               dt_name(args->inputs[0].dtype), dt_name(y->dtype));
    bc_plan plan;
    const netrun_tensor *in[3] = {&args->inputs[0], &args->inputs[1], &args->inputs[2]};
    netrun_status st = bc_build(&plan, y, 3, in);
    if (st != NETRUN_OK) return st;
    bc_job j = {&plan, y->data, {in[0]->data, in[1]->data, in[2]->data}, sz, {1, sz, sz}, where_run, &sz};
    bc_execute(ctx, &j);
    return NETRUN_OK;
}

static netrun_status ew_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    const ew_op *o = state;
    if (args->n_inputs < 1 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s: missing input or output", o->name);
    switch (o->kind) {
    case K_UNARY: return run_unary(ctx, o, args);
    case K_BINARY: case K_PRELU: return run_binary(ctx, o, o->tab, args);
    case K_MOD: return run_binary(ctx, o, uparams(args)->alpha != 0 ? Fmod_tab : Mod_tab, args);
    case K_SHIFT: return run_binary(ctx, o, uparams(args)->alpha != 0 ? ShiftRight_tab : ShiftLeft_tab, args);
    case K_VARIADIC: case K_MEAN: return run_variadic(ctx, o, args);
    case K_POW: return run_pow(ctx, o, args);
    case K_CLIP: return run_clip(ctx, o, args);
    case K_WHERE: return run_where(ctx, o, args);
    }
    return cpu_host->error(NETRUN_ERR_INTERNAL, "%s: unknown kernel kind", o->name);
}

/* ------------------------------------------------------------------------------------------------------ */

#define DT(t) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##t)
#define M_FLT (DT(FLOAT) | DT(FLOAT16) | DT(DOUBLE) | DT(BFLOAT16))
#define M_SINT (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define M_UINT (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define M_NUM (M_FLT | M_SINT | M_UINT)
#define M_ALL (M_NUM | DT(BOOL))

#define OP(name, mask, cons) {#name, "", mask, cons, ew_supports, ew_create, ew_run, NULL},
#define FOP(name) OP(name, M_FLT, "float16/bfloat16 computed in float32")

const cpu_op cpu_ops_elementwise[] = {
    OP(Relu, M_FLT | M_SINT, "") FOP(LeakyRelu) FOP(Sigmoid) FOP(Tanh) FOP(HardSigmoid) FOP(HardSwish) FOP(Erf)
    FOP(Exp) FOP(Log) FOP(Sqrt) OP(Neg, M_FLT | M_SINT, "") OP(Abs, M_NUM, "") FOP(Reciprocal) FOP(Floor)
    FOP(Ceil) OP(Round, M_FLT, "half to even") OP(Sign, M_NUM, "") FOP(Sin) FOP(Cos) FOP(Tan) FOP(Asin)
    FOP(Acos) FOP(Atan) FOP(Sinh) FOP(Cosh) FOP(Asinh) FOP(Acosh) FOP(Atanh) FOP(Elu) FOP(Selu) FOP(Celu)
    FOP(Softplus) FOP(Softsign) FOP(ThresholdedRelu) OP(Gelu, M_FLT, "approximate none|tanh") FOP(Mish)
    OP(Shrink, M_FLT, "float types only") OP(IsNaN, M_FLT, "") OP(IsInf, M_FLT, "") OP(Not, DT(BOOL), "")
    OP(BitwiseNot, M_SINT | M_UINT, "") FOP(Swish)
    OP(Add, M_NUM, "numpy broadcasting") OP(Sub, M_NUM, "numpy broadcasting") OP(Mul, M_NUM, "numpy broadcasting")
    OP(Div, M_NUM, "numpy broadcasting; integer division truncates, division by zero is an error")
    OP(Mod, M_NUM, "fmod 0|1; integer modulo by zero is an error")
    OP(Pow, DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16) | DT(INT32) | DT(INT64),
       "exponent of any numeric dtype")
    OP(Max, M_NUM, "variadic; NaN propagates") OP(Min, M_NUM, "variadic; NaN propagates")
    OP(Sum, M_FLT | M_SINT | M_UINT, "variadic") OP(Mean, M_FLT, "variadic")
    OP(Equal, M_ALL, "") OP(Greater, M_NUM, "") OP(GreaterOrEqual, M_NUM, "") OP(Less, M_NUM, "")
    OP(LessOrEqual, M_NUM, "") OP(And, DT(BOOL), "") OP(Or, DT(BOOL), "") OP(Xor, DT(BOOL), "")
    OP(BitShift, M_SINT | M_UINT, "signed: arithmetic right shift") OP(BitwiseAnd, M_SINT | M_UINT, "") OP(BitwiseOr, M_SINT | M_UINT, "")
    OP(BitwiseXor, M_SINT | M_UINT, "")
    OP(Clip, M_NUM, "min/max from attributes, constants or run-time inputs")
    OP(PRelu, M_NUM, "slope broadcast to X") OP(Where, M_ALL, "X/Y of any fixed-size dtype")
    {"Cast", "", M_ALL, "string and complex casts not supported", cpu_cast_supports, NULL,
     cpu_cast_run, NULL},
    {"CastLike", "", M_ALL, "string and complex casts not supported", cpu_cast_supports, NULL,
     cpu_cast_run, NULL},
    {0},
};
