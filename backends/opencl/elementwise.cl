/* OpenCL C 1.2: elementwise kernels of netrun's OpenCL backend (unary, binary with numpy broadcasting, Range,
 * Cast). Built once per dtype with -D options (see ew_options in elementwise.c):
 *   T, CT          storage and compute type (float16 is stored as half and computed in float through
 *                  vload_half/vstore_half, which need no cl_khr_fp16; integers are computed in long)
 *   IS_FLOAT, IS_HALF, IS_BF16 (bfloat16 stored as ushort), IS_UNSIGNED, ES (element size in bytes)
 *   T2, CT2        the second operand's types (Pow's exponent; T and CT otherwise)
 *   DT, DST_KIND, DST_HALF, DST_BF16   Cast's target (see ew_cast)
 * Tensors are (buffer, offset in elements) pairs. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifndef IS_FLOAT
#define IS_FLOAT 0
#endif
#ifndef IS_HALF
#define IS_HALF 0
#endif
#ifndef IS_UNSIGNED
#define IS_UNSIGNED 0
#endif
#ifndef T2
#define T2 T
#define CT2 CT
#define T2_HALF IS_HALF
#endif
#ifndef T2_HALF
#define T2_HALF 0
#endif

/* bfloat16 (stored as ushort): the high half of a float; stores round to nearest even, NaN stays NaN (as the
 * CPU backend's cpu_float_to_bf16). */
inline ushort bf16_of(float f) {
    uint x = as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
    return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
#define BF16_LD(p, i) as_float((uint)(p)[i] << 16)

#if IS_HALF
#define LD(p, i) vload_half((i), (p))
#define ST(p, i, v) vstore_half_rte((float)(v), (i), (p))
#elif defined(IS_BF16)
#define LD(p, i) BF16_LD(p, i)
#define ST(p, i, v) ((p)[i] = bf16_of((float)(v)))
#else
#define LD(p, i) ((CT)(p)[i])
#define ST(p, i, v) ((p)[i] = (T)(v))
#endif
#if T2_HALF
#define LD2(p, i) vload_half((i), (p))
#else
#define LD2(p, i) ((CT2)(p)[i])
#endif

#define PTR(type, p, off) ((p) + (off))
#define CPTR(type, p, off) ((p) + (off))

/* Iteration space and up to three stride sets (elements), all longs so that the host struct matches. */
typedef struct nr_meta {
    long rank;
    long dims[8];
    long s0[8];
    long s1[8];
    long s2[8];
} nr_meta;

/* Offsets of flat index i in the tensors with strides s0 / s1 over m.dims. */
#define NR_OFFSETS2(m, i, o0, o1)                                     \
    do {                                                              \
        long r_ = (i);                                                \
        o0 = 0;                                                       \
        o1 = 0;                                                       \
        for (int d_ = (int)(m).rank - 1; d_ >= 0; d_--) {             \
            long q_ = r_ / (m).dims[d_], c_ = r_ - q_ * (m).dims[d_]; \
            o0 += c_ * (m).s0[d_];                                    \
            o1 += c_ * (m).s1[d_];                                    \
            r_ = q_;                                                  \
        }                                                             \
    } while (0)

/* Unary op codes (mirrored in elementwise.c). */
enum {
    U_RELU, U_NEG, U_ABS, U_SIGN, U_SIGMOID, U_TANH, U_ERF, U_EXP, U_LOG, U_SQRT, U_RECIPROCAL, U_FLOOR, U_CEIL,
    U_ROUND, U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH, U_ATANH, U_SOFTPLUS,
    U_SOFTSIGN, U_HARD_SWISH, U_MISH, U_LEAKY_RELU, U_ELU, U_SELU, U_CELU, U_HARD_SIGMOID, U_THRESHOLDED_RELU,
    U_GELU, U_SHRINK, U_CLIP, U_NOT, U_BITNOT, U_ISNAN, U_ISINF, U_SWISH
};

#if IS_FLOAT
inline CT un_op(int op, CT x, CT a, CT b, CT g, int approx, CT lo, CT hi) {
    switch (op) {
    case U_RELU: return x < 0 ? (CT)0 : x;
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_SIGN: return x > 0 ? (CT)1 : x < 0 ? (CT)-1 : x;
    case U_SIGMOID: return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    case U_TANH: return tanh(x);
    case U_ERF: return erf(x);
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_SQRT: return sqrt(x);
    case U_RECIPROCAL: return 1 / x;
    case U_FLOOR: return floor(x);
    case U_CEIL: return ceil(x);
    case U_ROUND: return rint(x); /* half to even */
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
    case U_SOFTSIGN: return x / (1 + fabs(x));
    case U_HARD_SWISH: return x * fmax((CT)0, fmin((CT)1, x / 6 + (CT)0.5));
    case U_MISH: return x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
    case U_LEAKY_RELU: return x >= 0 ? x : x * a;
    case U_ELU: return x >= 0 ? x : a * expm1(x);
    case U_SELU: return x > 0 ? g * x : g * (a * exp(x) - a);
    case U_CELU: return isnan(x) ? x : fmax((CT)0, x) + fmin((CT)0, a * expm1(x / a)); /* fmax/fmin drop NaN */
    case U_HARD_SIGMOID: return isnan(x) ? x : fmax((CT)0, fmin((CT)1, a * x + b));
    case U_THRESHOLDED_RELU: return x > a ? x : (CT)0;
    case U_GELU:
        if (approx) return (CT)0.5 * x * (1 + tanh((CT)0.7978845608028654 * (x + (CT)0.044715 * x * x * x)));
        return (CT)0.5 * x * (1 + erf(x * (CT)0.7071067811865476));
    case U_SHRINK: return x < -b ? x + a : x > b ? x - a : (CT)0;
    case U_CLIP: return isnan(x) ? x : fmin(fmax(x, lo), hi);
    case U_SWISH: return x / (1 + exp(-a * x));
    default: return x;
    }
}
#else
inline CT un_op(int op, CT x, CT a, CT b, CT g, int approx, CT lo, CT hi) {
    switch (op) {
#if IS_UNSIGNED
    case U_RELU: return x;
    case U_ABS: return x;
    case U_SIGN: return x > 0 ? (CT)1 : (CT)0;
#else
    case U_RELU: return x < 0 ? (CT)0 : x;
    case U_NEG: return (CT)((ulong)0 - (ulong)x);
    case U_ABS: return x < 0 ? (CT)((ulong)0 - (ulong)x) : x;
    case U_SIGN: return x > 0 ? (CT)1 : x < 0 ? (CT)-1 : (CT)0;
#endif
    case U_NOT: return x == 0;
    case U_BITNOT: return ~x;
    case U_CLIP: return x < lo ? lo : x > hi ? hi : x;
    default: return x;
    }
}
#endif

/* y = f(x). Clip's bounds are lo / hi, or element 0 of the bound tensors when has_lo / has_hi. */
__kernel void ew_unary(__global const T *x, ulong xo, __global T *y, ulong yo, long n, int op, float a, float b,
                       float g, int approx, __global const T *lop, ulong loo, int has_lo, __global const T *hip,
                       ulong hio, int has_hi, float flo, float fhi, long ilo, long ihi) {
    __global const T *px = CPTR(T, x, xo);
    __global T *py = PTR(T, y, yo);
#if IS_FLOAT
    CT lo = (CT)flo, hi = (CT)fhi;
#else
    CT lo = (CT)ilo, hi = (CT)ihi;
#endif
    if (has_lo) lo = LD(CPTR(T, lop, loo), 0);
    if (has_hi) hi = LD(CPTR(T, hip, hio), 0);
    for (long i = get_global_id(0); i < n; i += get_global_size(0))
        ST(py, i, un_op(op, LD(px, i), (CT)a, (CT)b, (CT)g, approx, lo, hi));
}

#if IS_FLOAT
/* IsNaN / IsInf: bool output. */
__kernel void ew_predicate(__global const T *x, ulong xo, __global uchar *y, ulong yo, long n, int op, int neg,
                           int pos) {
    __global const T *px = CPTR(T, x, xo);
    __global uchar *py = PTR(uchar, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        CT v = LD(px, i);
        py[i] = op == U_ISNAN ? isnan(v) != 0 : (isinf(v) && ((v > 0 && pos) || (v < 0 && neg)));
    }
}
#endif

/* Binary op codes (mirrored in elementwise.c). */
enum {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAX, B_MIN, B_PRELU, B_MOD, B_FMOD, B_SHL, B_SHR, B_BAND, B_BOR, B_BXOR,
    B_EQ, B_LT, B_GT, B_LE, B_GE, B_AND, B_OR, B_XOR
};

#if IS_FLOAT
inline CT bin_arith(int op, CT x, CT2 z, __global int *err) {
    CT y = (CT)z;
    switch (op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_POW: return y == 2 ? x * x : pow(x, y);
    case B_MAX: return (x > y || isnan(x)) ? x : y;
    case B_MIN: return (x < y || isnan(x)) ? x : y;
    case B_PRELU: return x < 0 ? x * y : x;
    case B_FMOD: case B_MOD: return fmod(x, y);
    default: return 0;
    }
}
#else
inline CT bin_arith(int op, CT x, CT2 z, __global int *err) {
    CT y = (CT)z;
    switch (op) {
    case B_ADD: return (CT)((ulong)x + (ulong)y);
    case B_SUB: return (CT)((ulong)x - (ulong)y);
    case B_MUL: return (CT)((ulong)x * (ulong)y);
    case B_DIV:
        if (y == 0) { *err = 1; return 0; }
#if !IS_UNSIGNED
        if (y == -1) return (CT)((ulong)0 - (ulong)x);
#endif
        return x / y;
    case B_POW: { /* through double (float without cl_khr_fp64), converted back as Cast does */
#ifdef cl_khr_fp64
        double v = pow((double)x, (double)z);
        double lim = ES == 8 ? 9223372036854775808.0 : 2147483648.0;
#else
        float v = pow((float)x, (float)z);
        float lim = ES == 8 ? 9223372036854775808.0f : 2147483648.0f;
#endif
        if (!(v >= -lim && v < lim)) return ES == 8 ? (CT)LONG_MIN : (CT)INT_MIN;
        return (CT)(long)v;
    }
    case B_MAX: return x > y ? x : y;
    case B_MIN: return x < y ? x : y;
#if IS_UNSIGNED
    case B_PRELU: return x;
#else
    case B_PRELU: return x < 0 ? (CT)((ulong)x * (ulong)y) : x;
#endif
    case B_FMOD: case B_MOD: {
        if (y == 0) { *err = 1; return 0; }
#if !IS_UNSIGNED
        if (y == -1) return 0;
#endif
        CT r = x % y;
#if !IS_UNSIGNED
        if (op == B_MOD && r != 0 && ((r < 0) != (y < 0))) r += y; /* Python semantics: sign of the divisor */
#endif
        return r;
    }
    case B_SHL: return y >= 8 * ES ? (CT)0 : (CT)((ulong)x << y);
    case B_SHR: return y >= 8 * ES ? (CT)0 : (CT)((ulong)x >> y);
    case B_BAND: return x & y;
    case B_BOR: return x | y;
    case B_BXOR: return x ^ y;
    default: return 0;
    }
}
#endif

inline int bin_cmp(int op, CT x, CT y) {
    switch (op) {
    case B_EQ: return x == y;
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    case B_AND: return (x != 0) && (y != 0);
    case B_OR: return (x != 0) || (y != 0);
    case B_XOR: return (x != 0) != (y != 0);
    default: return 0;
    }
}

/* y = a op b over m (s0: a, s1: b; y contiguous). plain: a and b have y's shape. err: an integer division by
 * zero was seen (the host reads the flag back). */
__kernel void ew_binary(__global const T *a, ulong ao, __global const T2 *b, ulong bo, __global T *y, ulong yo,
                        long n, int op, int plain, __constant const nr_meta *mp_, __global int *err) { const nr_meta m = *mp_;
    __global const T *pa = CPTR(T, a, ao);
    __global const T2 *pb = CPTR(T2, b, bo);
    __global T *py = PTR(T, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long ia = i, ib = i;
        if (!plain) NR_OFFSETS2(m, i, ia, ib);
        ST(py, i, bin_arith(op, LD(pa, ia), LD2(pb, ib), err));
    }
}

/* Comparisons and logic: bool output. */
__kernel void ew_compare(__global const T *a, ulong ao, __global const T *b, ulong bo, __global uchar *y, ulong yo,
                         long n, int op, int plain, __constant const nr_meta *mp_) { const nr_meta m = *mp_;
    __global const T *pa = CPTR(T, a, ao);
    __global const T *pb = CPTR(T, b, bo);
    __global uchar *py = PTR(uchar, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long ia = i, ib = i;
        if (!plain) NR_OFFSETS2(m, i, ia, ib);
        py[i] = (uchar)bin_cmp(op, LD(pa, ia), LD(pb, ib));
    }
}

/* y /= count (Mean). */
__kernel void ew_divide(__global T *y, ulong yo, long n, float count) {
    __global T *py = PTR(T, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) ST(py, i, LD(py, i) / (CT)count);
}

/* Range: y[i] = start + i * delta (start and delta read from their tensors on the device). */
__kernel void ew_range(__global const T *s, ulong so, __global const T *d, ulong dof, __global T *y, ulong yo,
                       long n) {
    CT start = LD(CPTR(T, s, so), 0), delta = LD(CPTR(T, d, dof), 0);
    __global T *py = PTR(T, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) ST(py, i, start + (CT)i * delta);
}

#ifdef DT
/* int4 / uint4 / int2 / uint2 targets (stored unpacked, one per byte) keep the low DST_BITS bits, sign-extended
 * when DST_SIGNED, as the CPU backend does. */
#ifdef DST_BITS
#if DST_SIGNED
#define WRAP_BITS(r) ((((r) & ((1L << DST_BITS) - 1)) ^ (1L << (DST_BITS - 1))) - (1L << (DST_BITS - 1)))
#else
#define WRAP_BITS(r) ((r) & ((1L << DST_BITS) - 1))
#endif
#else
#define WRAP_BITS(r) (r)
#endif
/* Cast from T to DT. DST_KIND: 0 float types, 1 narrow integers (through int32), 2 int64 / uint32 (through
 * int64), 3 uint64, 4 bool. Float -> integer follows x86's cvtt conversions, as the CPU backend and
 * onnxruntime do: NaN and out of range give the intermediate's minimum. */
__kernel void ew_cast(__global const T *x, ulong xo, __global DT *y, ulong yo, long n) {
    __global const T *px = CPTR(T, x, xo);
    __global DT *py = PTR(DT, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        CT v = LD(px, i);
#if DST_KIND == 0
#if DST_HALF && IS_FLOAT
        vstore_half_rte(v, i, py); /* one rounding from float or double */
#elif DST_HALF
        vstore_half_rte((float)v, i, py); /* integers: through float, as the CPU backend */
#elif defined(DST_BF16)
        py[i] = bf16_of((float)v);
#else
        py[i] = (DT)v;
#endif
#elif DST_KIND == 4
        py[i] = (DT)(v != 0);
#elif IS_FLOAT
#if DST_KIND == 1
        long r = (v > (CT)-2147483649.0 && v < (CT)2147483648.0) ? (long)(int)v : (long)INT_MIN;
        py[i] = (DT)WRAP_BITS(r);
#elif DST_KIND == 2
        long r = (v >= (CT)-9223372036854775808.0 && v < (CT)9223372036854775808.0) ? (long)v : LONG_MIN;
        py[i] = (DT)r;
#else
        ulong r;
        if (v >= (CT)9223372036854775808.0 && v < (CT)18446744073709551616.0) r = (ulong)v;
        else r = (ulong)((v >= (CT)-9223372036854775808.0 && v < (CT)9223372036854775808.0) ? (long)v : LONG_MIN);
        py[i] = (DT)r;
#endif
#else
        py[i] = (DT)WRAP_BITS((long)v);
#endif
    }
}
#endif

/* ---- Scatter with reduction (none, add, mul, max, min), typed: duplicates are applied in index order ---- */

inline CT sc_apply(int red, CT a, CT b) {
    switch (red) {
    case 1: return a + b;
    case 2: return a * b;
    case 3: return b > a ? b : a;
    case 4: return b < a ? b : a;
    default: return b;
    }
}

#define SCATTER_KERNELS(SUF, IDX)                                                                             \
    /* ScatterND: a work-item per element of a slice walks every index tuple in order; tuples start at       \
     * multiples of the slice size, so no two work-items ever touch the same element.                       \
     * m.dims[0..q) / m.s0[0..q): data dims indexed and their strides. */                                    \
    __kernel void ew_scatter_nd##SUF(__global const IDX *idx, ulong io, __global const T *u, ulong uo,        \
                                     __global T *y, ulong yo, long tuples, long q, long slice, int red,       \
                                     __constant const nr_meta *mp_, __global int *err) { const nr_meta m = *mp_;                                        \
        __global const IDX *pi = idx + io;                                                                  \
        __global const T *pu = u + uo;                                                                      \
        __global T *py = y + yo;                                                                            \
        for (long s = get_global_id(0); s < slice; s += get_global_size(0))                                 \
            for (long t = 0; t < tuples; t++) {                                                             \
                long off = 0;                                                                               \
                int bad = 0;                                                                                \
                for (long d = 0; d < q; d++) {                                                              \
                    long c = (long)pi[t * q + d];                                                           \
                    if (c < 0) c += m.dims[d];                                                              \
                    if (c < 0 || c >= m.dims[d]) bad = 1;                                                   \
                    off += c * m.s0[d];                                                                     \
                }                                                                                           \
                if (bad) { *err = 1; continue; }                                                            \
                ST(py, off + s, sc_apply(red, LD(py, off + s), LD(pu, t * slice + s)));                     \
            }                                                                                               \
    }                                                                                                       \
    /* ScatterElements: a work-item per update position with the axis coordinate dropped walks the axis in  \
     * order (only those positions can collide). m.dims: update dims; m.s0: y strides; m.s1: update strides. \
     */                                                                                                     \
    __kernel void ew_scatter_elements##SUF(__global const IDX *idx, ulong io, __global const T *u, ulong uo,  \
                                           __global T *y, ulong yo, long nwork, int axis, long axis_len,     \
                                           int red, __constant const nr_meta *mp_, __global int *err) { const nr_meta m = *mp_;                         \
        __global const IDX *pi = idx + io;                                                                  \
        __global const T *pu = u + uo;                                                                      \
        __global T *py = y + yo;                                                                            \
        for (long w = get_global_id(0); w < nwork; w += get_global_size(0)) {                               \
            long r = w, ub = 0, yb = 0;                                                                     \
            for (int d = (int)m.rank - 1; d >= 0; d--) {                                                    \
                if (d == axis) continue;                                                                    \
                long c = r % m.dims[d];                                                                     \
                r /= m.dims[d];                                                                             \
                ub += c * m.s1[d];                                                                          \
                yb += c * m.s0[d];                                                                          \
            }                                                                                               \
            for (long j = 0; j < m.dims[axis]; j++) {                                                       \
                long ui = ub + j * m.s1[axis], k = (long)pi[ui];                                            \
                if (k < 0) k += axis_len;                                                                   \
                if (k < 0 || k >= axis_len) { *err = 1; continue; }                                         \
                long yi = yb + k * m.s0[axis];                                                              \
                ST(py, yi, sc_apply(red, LD(py, yi), LD(pu, ui)));                                          \
            }                                                                                               \
        }                                                                                                   \
    }

SCATTER_KERNELS(_i64, long)
SCATTER_KERNELS(_i32, int)

#ifdef E
/* OneHot with indices of this program's type T and values / output of element type E: y[o, j, in] =
 * values[1] where the index (+ depth when negative) is j, else values[0]; a float index that is not a whole
 * number matches no j (as the CPU backend and onnxruntime: 1.7 is not index 1). */
__kernel void ew_onehot(__global const T *idx, ulong io, __global const E *vals, ulong vo, __global E *y, ulong yo,
                        long n, long depth, long inner) {
    __global const T *pi = idx + io;
    E off = vals[vo], on = vals[vo + 1];
    __global E *py = y + yo;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long in = i % inner, r = i / inner, j = r % depth, o = r / depth;
        CT v = LD(pi, o * inner + in);
        long k = (long)v;
        if ((CT)k != v) k = -1 - 2 * depth; /* not a whole number: out of range */
        if (k < 0) k += depth;
        py[i] = k == j ? on : off;
    }
}
#endif
