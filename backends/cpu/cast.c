/* CPU kernels: Cast and CastLike, and the dtype conversion matrix the other elementwise kernels reuse
 * (Pow exponents, Clip bounds). Referenced from the table in elementwise.c. */
#include <stdio.h>

#include "cpu_internal.h"

#define CAST_GRAIN 16384

/* Float -> integer conversions defined for every input (C leaves NaN and out-of-range undefined). They
 * follow onnxruntime on x86-64 (cvttss2si): narrow targets convert through int32, wide ones through int64,
 * and NaN / out of range give that intermediate's minimum, then wrap to the target. */
static inline int32_t f_to_i32(double v) { return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN; }
static inline int64_t f_to_i64(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
static inline uint64_t f_to_u64(double v) {
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) return (uint64_t)v;
    return (uint64_t)f_to_i64(v);
}

/* Load one stored element as a C value (halves widen to float, bool stays 0/1). */
#define LD_f32(x) (x)
#define LD_f64(x) (x)
#define LD_f16(x) cpu_half_to_float(x)
#define LD_bf16(x) cpu_bf16_to_float(x)
#define LD_i8(x) (x)
#define LD_i16(x) (x)
#define LD_i32(x) (x)
#define LD_i64(x) (x)
#define LD_u8(x) (x)
#define LD_u16(x) (x)
#define LD_u32(x) (x)
#define LD_u64(x) (x)
#define LD_bool(x) (x)

/* Store a C value of any type into a target element; _Generic picks the safe path for float sources. */
#define FLT_OR(v, ffn, cast) _Generic((v), float: cast ffn((double)(v)), double: cast ffn((double)(v)), \
                                      default: cast(v))
#define TO_f32(v) ((float)(v))
#define TO_f64(v) ((double)(v))
#define TO_f16(v) cpu_float_to_half((float)(v))
#define TO_bf16(v) cpu_float_to_bf16((float)(v))
#define TO_i8(v) FLT_OR(v, f_to_i32, (int8_t))
#define TO_i16(v) FLT_OR(v, f_to_i32, (int16_t))
#define TO_i32(v) FLT_OR(v, f_to_i32, (int32_t))
#define TO_i64(v) FLT_OR(v, f_to_i64, (int64_t))
#define TO_u8(v) FLT_OR(v, f_to_i32, (uint8_t))
#define TO_u16(v) FLT_OR(v, f_to_i32, (uint16_t))
#define TO_u32(v) FLT_OR(v, f_to_i64, (uint32_t))
#define TO_u64(v) FLT_OR(v, f_to_u64, (uint64_t))
#define TO_bool(v) ((uint8_t)((v) != 0))

/* The 13 element types (suffix, storage type, dtype). Two copies so that the matrix can nest them. */
#define CAST_TYPES_OUTER(X)                                                                                   \
    X(f32, float, NETRUN_DTYPE_FLOAT) X(f64, double, NETRUN_DTYPE_DOUBLE) X(f16, uint16_t, NETRUN_DTYPE_FLOAT16) \
    X(bf16, uint16_t, NETRUN_DTYPE_BFLOAT16) X(i8, int8_t, NETRUN_DTYPE_INT8) X(i16, int16_t, NETRUN_DTYPE_INT16) \
    X(i32, int32_t, NETRUN_DTYPE_INT32) X(i64, int64_t, NETRUN_DTYPE_INT64) X(u8, uint8_t, NETRUN_DTYPE_UINT8)    \
    X(u16, uint16_t, NETRUN_DTYPE_UINT16) X(u32, uint32_t, NETRUN_DTYPE_UINT32)                                 \
    X(u64, uint64_t, NETRUN_DTYPE_UINT64) X(bool, uint8_t, NETRUN_DTYPE_BOOL)
#define CAST_TYPES_INNER(X, S, ST, SE)                                                                         \
    X(S, ST, SE, f32, float, NETRUN_DTYPE_FLOAT) X(S, ST, SE, f64, double, NETRUN_DTYPE_DOUBLE)                \
    X(S, ST, SE, f16, uint16_t, NETRUN_DTYPE_FLOAT16) X(S, ST, SE, bf16, uint16_t, NETRUN_DTYPE_BFLOAT16)       \
    X(S, ST, SE, i8, int8_t, NETRUN_DTYPE_INT8) X(S, ST, SE, i16, int16_t, NETRUN_DTYPE_INT16)                 \
    X(S, ST, SE, i32, int32_t, NETRUN_DTYPE_INT32) X(S, ST, SE, i64, int64_t, NETRUN_DTYPE_INT64)              \
    X(S, ST, SE, u8, uint8_t, NETRUN_DTYPE_UINT8) X(S, ST, SE, u16, uint16_t, NETRUN_DTYPE_UINT16)             \
    X(S, ST, SE, u32, uint32_t, NETRUN_DTYPE_UINT32) X(S, ST, SE, u64, uint64_t, NETRUN_DTYPE_UINT64)          \
    X(S, ST, SE, bool, uint8_t, NETRUN_DTYPE_BOOL)

typedef void (*cast_fn)(const void *src, void *dst, int64_t n);

#define CAST_FN(S, ST, SE, D, DT, DE)                                                  \
    static void cast_##S##_##D(const void *src, void *dst, int64_t n) {                \
        const ST *s = src;                                                             \
        DT *d = dst;                                                                   \
        for (int64_t i = 0; i < n; i++) d[i] = TO_##D(LD_##S(s[i]));                   \
    }
#define CAST_ROW(S, ST, SE) CAST_TYPES_INNER(CAST_FN, S, ST, SE)
CAST_TYPES_OUTER(CAST_ROW)

#define CAST_ENTRY(S, ST, SE, D, DT, DE) [SE][DE] = cast_##S##_##D,
#define CAST_TAB_ROW(S, ST, SE) CAST_TYPES_INNER(CAST_ENTRY, S, ST, SE)
static const cast_fn cast_table[NETRUN_DTYPE_COUNT_][NETRUN_DTYPE_COUNT_] = {CAST_TYPES_OUTER(CAST_TAB_ROW)};

static size_t elem_size(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: return 8;
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_UINT16: return 2;
    case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

static const char *dtype_name(netrun_dtype t) {
    static const char *names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                  "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                  "float8e5m2fnuz", "uint4", "int4"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* float <-> float16 blocks: with F16C when the CPU has it (same round-to-nearest-even as the scalar code),
 * else the portable conversions of cpu_internal.h. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_F16C_PATH 1
__attribute__((target("avx,f16c"))) static void f32_to_f16_hw(const float *s, uint16_t *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = cpu_float_to_half(s[i]);
}
__attribute__((target("avx,f16c"))) static void f16_to_f32_hw(const uint16_t *s, float *d, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + i))));
    for (; i < n; i++) d[i] = cpu_half_to_float(s[i]);
}
static int has_f16c(void) {
    static int cached = -1; /* benign race: every thread computes the same value */
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    }
    return cached;
}
#endif

void cpu_f32_to_f16(const float *s, uint16_t *d, int64_t n);
void cpu_f16_to_f32(const uint16_t *s, float *d, int64_t n);

void cpu_f32_to_f16(const float *s, uint16_t *d, int64_t n) {
#ifdef HAVE_F16C_PATH
    if (has_f16c()) {
        f32_to_f16_hw(s, d, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = cpu_float_to_half(s[i]);
}

void cpu_f16_to_f32(const uint16_t *s, float *d, int64_t n) {
#ifdef HAVE_F16C_PATH
    if (has_f16c()) {
        f16_to_f32_hw(s, d, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = cpu_half_to_float(s[i]);
}

/* Exported to elementwise.c. */
int cpu_cast_supported(netrun_dtype from, netrun_dtype to);
void cpu_cast_elems(const void *src, netrun_dtype from, void *dst, netrun_dtype to, int64_t n);
int cpu_cast_supports(const netrun_node_desc *node, char *reason, size_t reason_size);
netrun_status cpu_cast_run(cpu_context *ctx, void *state, const netrun_kernel_args *args);

int cpu_cast_supported(netrun_dtype from, netrun_dtype to) {
    return (unsigned)from < NETRUN_DTYPE_COUNT_ && (unsigned)to < NETRUN_DTYPE_COUNT_ && cast_table[from][to];
}

/* Convert n elements; the pair must be cpu_cast_supported. Same dtype is a copy. */
void cpu_cast_elems(const void *src, netrun_dtype from, void *dst, netrun_dtype to, int64_t n) {
    if (n <= 0) return;
    if (from == to) {
        memmove(dst, src, (size_t)n * elem_size(from));
    } else if (from == NETRUN_DTYPE_FLOAT && to == NETRUN_DTYPE_FLOAT16) {
        cpu_f32_to_f16(src, dst, n);
    } else if (from == NETRUN_DTYPE_FLOAT16 && to == NETRUN_DTYPE_FLOAT) {
        cpu_f16_to_f32(src, dst, n);
    } else if (from == NETRUN_DTYPE_FLOAT16) { /* through float blocks: the same values as directly */
        float t[256];
        size_t dsz = elem_size(to);
        for (int64_t b = 0; b < n; b += 256) {
            int64_t m = n - b < 256 ? n - b : 256;
            cpu_f16_to_f32((const uint16_t *)src + b, t, m);
            cast_table[NETRUN_DTYPE_FLOAT][to](t, (char *)dst + (size_t)b * dsz, m);
        }
    } else {
        cast_table[from][to](src, dst, n);
    }
}

int cpu_cast_supports(const netrun_node_desc *node, char *reason, size_t reason_size) {
    if (node->n_inputs < 1 || node->n_outputs < 1) {
        snprintf(reason, reason_size, "%s needs an input and an output", node->op_type);
        return 0;
    }
    netrun_dtype from = node->inputs[0].dtype, to = node->outputs[0].dtype;
    if (!cpu_cast_supported(from, to)) {
        snprintf(reason, reason_size, "%s from %s to %s not supported (float8, int4, string and complex casts "
                 "are not implemented on the CPU)", node->op_type, dtype_name(from), dtype_name(to));
        return 0;
    }
    return 1;
}

typedef struct cast_job {
    const char *src;
    char *dst;
    netrun_dtype from, to;
    size_t ssz, dsz;
} cast_job;

static void cast_range(void *arg, int64_t b, int64_t e) {
    const cast_job *j = arg;
    cpu_cast_elems(j->src + (size_t)b * j->ssz, j->from, j->dst + (size_t)b * j->dsz, j->to, e - b);
}

/* Cast and CastLike (input 1 of CastLike only lends its dtype, which is the output's). */
netrun_status cpu_cast_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!cpu_cast_supported(x->dtype, y->dtype))
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "Cast from %s to %s not supported by the CPU backend",
                               dtype_name(x->dtype), dtype_name(y->dtype));
    int64_t n = cpu_count(x);
    if (n != cpu_count(y))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "Cast: output has %lld elements, input %lld",
                               (long long)cpu_count(y), (long long)n);
    cast_job j = {x->data, y->data, x->dtype, y->dtype, elem_size(x->dtype), elem_size(y->dtype)};
    if (n >= 2 * CAST_GRAIN) cpu_parallel_for(ctx, n, CAST_GRAIN, cast_range, &j);
    else cast_range(&j, 0, n);
    return NETRUN_OK;
}
