/* CPU kernels: Cast and CastLike, and the dtype conversion matrix the other elementwise kernels reuse
 * (Pow exponents, Clip bounds). Referenced from the table in elementwise.c. */
#include <stdio.h>

#include "cpu_internal.h"

#define CAST_GRAIN 16384

/* Float -> integer conversions defined for every input (x86-like: NaN and out of range give the
 * intermediate's minimum), float8, float4e2m1 and float8e8m0: backends/common/dtype_convert.h (nr_*), shared
 * with the CUDA plugin so that both agree bit for bit. */

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
#define LD_i4(x) (x) /* stored unpacked, int4 sign-extended */
#define LD_u4(x) (x)
#define LD_i2(x) (x) /* int2 sign-extended too */
#define LD_u2(x) (x)
#define LD_f4(x) nr_f4_to_float(x)
#define LD_e8m0(x) nr_e8m0_to_float(x)
#define LD_e4m3(x) nr_f8_to_float((x), NETRUN_DTYPE_FLOAT8E4M3FN)
#define LD_e4m3uz(x) nr_f8_to_float((x), NETRUN_DTYPE_FLOAT8E4M3FNUZ)
#define LD_e5m2(x) nr_f8_to_float((x), NETRUN_DTYPE_FLOAT8E5M2)
#define LD_e5m2uz(x) nr_f8_to_float((x), NETRUN_DTYPE_FLOAT8E5M2FNUZ)

/* Store a C value of any type into a target element; _Generic picks the safe path for float sources. */
#define FLT_OR(v, ffn, cast) _Generic((v), float: cast ffn((double)(v)), double: cast ffn((double)(v)), \
                                      default: cast(v))
#define TO_f32(v) ((float)(v))
#define TO_f64(v) ((double)(v))
#define TO_f16(v) cpu_float_to_half((float)(v))
#define TO_bf16(v) cpu_float_to_bf16((float)(v))
#define TO_i8(v) FLT_OR(v, nr_f_to_i32, (int8_t))
#define TO_i16(v) FLT_OR(v, nr_f_to_i32, (int16_t))
#define TO_i32(v) FLT_OR(v, nr_f_to_i32, (int32_t))
#define TO_i64(v) FLT_OR(v, nr_f_to_i64, (int64_t))
#define TO_u8(v) FLT_OR(v, nr_f_to_i32, (uint8_t))
#define TO_u16(v) FLT_OR(v, nr_f_to_i32, (uint16_t))
#define TO_u32(v) FLT_OR(v, nr_f_to_i64, (uint32_t))
#define TO_u64(v) FLT_OR(v, nr_f_to_u64, (uint64_t))
#define TO_bool(v) ((uint8_t)((v) != 0))
/* 4-bit integers keep the low 4 bits (wrap like the other fixed-point targets); int4 is sign-extended. */
static inline int8_t wrap_i4(int64_t v) { return (int8_t)((int)(((uint64_t)v & 0xfu) ^ 0x8u) - 8); }
static inline uint8_t wrap_u4(int64_t v) { return (uint8_t)((uint64_t)v & 0xfu); }
#define TO_i4(v) wrap_i4(FLT_OR(v, nr_f_to_i32, (int64_t)))
#define TO_u4(v) wrap_u4(FLT_OR(v, nr_f_to_i32, (int64_t)))
static inline int8_t wrap_i2(int64_t v) { return (int8_t)((int)(((uint64_t)v & 0x3u) ^ 0x2u) - 2); }
static inline uint8_t wrap_u2(int64_t v) { return (uint8_t)((uint64_t)v & 0x3u); }
#define TO_i2(v) wrap_i2(FLT_OR(v, nr_f_to_i32, (int64_t)))
#define TO_u2(v) wrap_u2(FLT_OR(v, nr_f_to_i32, (int64_t)))
/* float4e2m1 has no saturate variant; float8e8m0 saturates and rounds up here (the defaults), cpu_cast_run
 * handles the other settings. */
#define TO_f4(v) nr_float_to_f4((float)(v))
#define TO_e8m0(v) nr_float_to_e8m0((float)(v), 1, NETRUN_CAST_ROUND_UP)
/* float8 targets saturate here (the default); cpu_cast_run handles saturate = 0. */
#define TO_e4m3(v) nr_float_to_f8((float)(v), NETRUN_DTYPE_FLOAT8E4M3FN, 1)
#define TO_e4m3uz(v) nr_float_to_f8((float)(v), NETRUN_DTYPE_FLOAT8E4M3FNUZ, 1)
#define TO_e5m2(v) nr_float_to_f8((float)(v), NETRUN_DTYPE_FLOAT8E5M2, 1)
#define TO_e5m2uz(v) nr_float_to_f8((float)(v), NETRUN_DTYPE_FLOAT8E5M2FNUZ, 1)

/* The 23 element types (suffix, storage type, dtype). Two copies so that the matrix can nest them. */
#define CAST_TYPES_OUTER(X)                                                                                   \
    X(f32, float, NETRUN_DTYPE_FLOAT) X(f64, double, NETRUN_DTYPE_DOUBLE) X(f16, uint16_t, NETRUN_DTYPE_FLOAT16) \
    X(bf16, uint16_t, NETRUN_DTYPE_BFLOAT16) X(i8, int8_t, NETRUN_DTYPE_INT8) X(i16, int16_t, NETRUN_DTYPE_INT16) \
    X(i32, int32_t, NETRUN_DTYPE_INT32) X(i64, int64_t, NETRUN_DTYPE_INT64) X(u8, uint8_t, NETRUN_DTYPE_UINT8)    \
    X(u16, uint16_t, NETRUN_DTYPE_UINT16) X(u32, uint32_t, NETRUN_DTYPE_UINT32)                                 \
    X(u64, uint64_t, NETRUN_DTYPE_UINT64) X(bool, uint8_t, NETRUN_DTYPE_BOOL) X(i4, int8_t, NETRUN_DTYPE_INT4)   \
    X(u4, uint8_t, NETRUN_DTYPE_UINT4) X(e4m3, uint8_t, NETRUN_DTYPE_FLOAT8E4M3FN)                              \
    X(e4m3uz, uint8_t, NETRUN_DTYPE_FLOAT8E4M3FNUZ) X(e5m2, uint8_t, NETRUN_DTYPE_FLOAT8E5M2)                    \
    X(e5m2uz, uint8_t, NETRUN_DTYPE_FLOAT8E5M2FNUZ) X(i2, int8_t, NETRUN_DTYPE_INT2) X(u2, uint8_t, NETRUN_DTYPE_UINT2) \
    X(f4, uint8_t, NETRUN_DTYPE_FLOAT4E2M1) X(e8m0, uint8_t, NETRUN_DTYPE_FLOAT8E8M0)
#define CAST_TYPES_INNER(X, S, ST, SE)                                                                         \
    X(S, ST, SE, f32, float, NETRUN_DTYPE_FLOAT) X(S, ST, SE, f64, double, NETRUN_DTYPE_DOUBLE)                \
    X(S, ST, SE, f16, uint16_t, NETRUN_DTYPE_FLOAT16) X(S, ST, SE, bf16, uint16_t, NETRUN_DTYPE_BFLOAT16)       \
    X(S, ST, SE, i8, int8_t, NETRUN_DTYPE_INT8) X(S, ST, SE, i16, int16_t, NETRUN_DTYPE_INT16)                 \
    X(S, ST, SE, i32, int32_t, NETRUN_DTYPE_INT32) X(S, ST, SE, i64, int64_t, NETRUN_DTYPE_INT64)              \
    X(S, ST, SE, u8, uint8_t, NETRUN_DTYPE_UINT8) X(S, ST, SE, u16, uint16_t, NETRUN_DTYPE_UINT16)             \
    X(S, ST, SE, u32, uint32_t, NETRUN_DTYPE_UINT32) X(S, ST, SE, u64, uint64_t, NETRUN_DTYPE_UINT64)          \
    X(S, ST, SE, bool, uint8_t, NETRUN_DTYPE_BOOL) X(S, ST, SE, i4, int8_t, NETRUN_DTYPE_INT4)                 \
    X(S, ST, SE, u4, uint8_t, NETRUN_DTYPE_UINT4) X(S, ST, SE, e4m3, uint8_t, NETRUN_DTYPE_FLOAT8E4M3FN)        \
    X(S, ST, SE, e4m3uz, uint8_t, NETRUN_DTYPE_FLOAT8E4M3FNUZ) X(S, ST, SE, e5m2, uint8_t, NETRUN_DTYPE_FLOAT8E5M2) \
    X(S, ST, SE, e5m2uz, uint8_t, NETRUN_DTYPE_FLOAT8E5M2FNUZ) X(S, ST, SE, i2, int8_t, NETRUN_DTYPE_INT2)        \
    X(S, ST, SE, u2, uint8_t, NETRUN_DTYPE_UINT2) X(S, ST, SE, f4, uint8_t, NETRUN_DTYPE_FLOAT4E2M1)             \
    X(S, ST, SE, e8m0, uint8_t, NETRUN_DTYPE_FLOAT8E8M0)

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
    case NETRUN_DTYPE_INT4: case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_FLOAT8E4M3FN:
    case NETRUN_DTYPE_FLOAT8E4M3FNUZ: case NETRUN_DTYPE_FLOAT8E5M2: case NETRUN_DTYPE_FLOAT8E5M2FNUZ: return 1;
    case NETRUN_DTYPE_INT2: case NETRUN_DTYPE_UINT2: case NETRUN_DTYPE_FLOAT4E2M1: case NETRUN_DTYPE_FLOAT8E8M0: return 1;
    default: return 0;
    }
}

static const char *dtype_name(netrun_dtype t) {
    static const char *names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                  "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                  "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* float <-> float16 blocks: with F16C when the CPU has it (same round-to-nearest-even as the scalar code),
 * else the portable conversions of cpu_internal.h. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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
        /* F16C from CPUID leaf 1 (ECX bit 29): clang 14 does not know __builtin_cpu_supports("f16c") */
        unsigned a, b, c, d;
        int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
        __builtin_cpu_init();
        cached = f16c && __builtin_cpu_supports("avx");
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
        snprintf(reason, reason_size, "%s from %s to %s not supported (string and complex casts "
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
    int special;     /* float8 target with saturate = 0, or float8e8m0 target with non-default settings */
    int saturate, round_mode;
} cast_job;

static int is_f8(netrun_dtype t) {
    return t == NETRUN_DTYPE_FLOAT8E4M3FN || t == NETRUN_DTYPE_FLOAT8E4M3FNUZ || t == NETRUN_DTYPE_FLOAT8E5M2 ||
           t == NETRUN_DTYPE_FLOAT8E5M2FNUZ;
}

static void cast_range(void *arg, int64_t b, int64_t e) {
    const cast_job *j = arg;
    if (!j->special) {
        cpu_cast_elems(j->src + (size_t)b * j->ssz, j->from, j->dst + (size_t)b * j->dsz, j->to, e - b);
        return;
    }
    float t[256]; /* through float, then the float8 rounding with these settings */
    uint8_t *d = (uint8_t *)j->dst;
    for (int64_t i = b; i < e; i += 256) {
        int64_t m = e - i < 256 ? e - i : 256;
        cpu_cast_elems(j->src + (size_t)i * j->ssz, j->from, t, NETRUN_DTYPE_FLOAT, m);
        if (j->to == NETRUN_DTYPE_FLOAT8E8M0)
            for (int64_t k = 0; k < m; k++) d[i + k] = nr_float_to_e8m0(t[k], j->saturate, j->round_mode);
        else
            for (int64_t k = 0; k < m; k++) d[i + k] = nr_float_to_f8(t[k], j->to, 0);
    }
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
    /* Cast and CastLike params are netrun_cast_params (layers/elementwise.c) */
    const netrun_cast_params *p = args->params;
    int sat = p ? p->saturate != 0 : 1, rm = p ? p->round_mode : NETRUN_CAST_ROUND_UP;
    int special = x->dtype != y->dtype && ((!sat && is_f8(y->dtype)) ||
                                           (y->dtype == NETRUN_DTYPE_FLOAT8E8M0 && (!sat || rm != NETRUN_CAST_ROUND_UP)));
    if (p && p->saturate == 2 && x->dtype == NETRUN_DTYPE_FLOAT && y->dtype == NETRUN_DTYPE_FLOAT16) {
        const float *s = x->data; /* a float16 region's border Cast: finite values stay finite (layers/elementwise.c) */
        uint16_t *d = y->data;
        for (int64_t i = 0; i < n; i++) d[i] = nr_float_to_half(!isfinite(s[i]) ? s[i] : fminf(fmaxf(s[i], -65504.0f), 65504.0f));
        return NETRUN_OK;
    }
    cast_job j = {x->data, y->data, x->dtype, y->dtype, elem_size(x->dtype), elem_size(y->dtype), special, sat, rm};
    if (n >= 2 * CAST_GRAIN) cpu_parallel_for(ctx, n, CAST_GRAIN, cast_range, &j);
    else cast_range(&j, 0, n);
    return NETRUN_OK;
}
