/*
 * Inside the CPU backend. Each op family lives in one file (mirroring layers/) and exports a table
 * `const cpu_op cpu_ops_<family>[]` ended by an entry with op_type == NULL; cpu_backend.c lists the tables.
 * Buffers are host pointers (NETRUN_BACKEND_HOST_MEMORY): args->inputs[i].data is the element array.
 */
#ifndef CPU_INTERNAL_H
#define CPU_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "netrun_backend.h"
#include "../common/dtype_convert.h"

typedef struct cpu_pool cpu_pool;

typedef struct cpu_context {
    netrun_backend_config config;
    int threads;
    cpu_pool *pool;
    int winograd; /* cpu.winograd (default 1): Winograd (own, or oneDNN's) for 3x3 stride-1 convs where it fits */
    int64_t wino_min_tiles; /* cpu.wino_min_tiles (default 16): see conv.c's want_cdir */
} cpu_context;

extern const netrun_host_api *cpu_host; /* set by the entry point */

typedef struct cpu_op {
    const char *op_type;
    const char *domain;         /* NULL or "" = default domain */
    uint64_t dtypes;            /* element types accepted for the op's main dtype (see supports) */
    const char *constraints;    /* for the support matrix ("" = none) */
    /* Finer check. NULL: supported when input 0's dtype (output 0's when there are no inputs) is in dtypes. */
    int (*supports)(const netrun_node_desc *node, char *reason, size_t reason_size);
    /* Optional per-node state (packed weights...) and workspace need. NULL: state is NULL, no workspace. */
    netrun_status (*create)(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
    netrun_status (*run)(cpu_context *ctx, void *state, const netrun_kernel_args *args);
    void (*destroy)(void *state);
    /* Optional: name the kernel chosen for this node (profiles show it), e.g. "im2col + sgemm". */
    void (*describe)(const netrun_node_desc *node, char *buf, size_t size);
    /* Optional: refine describe's text in buf once the state exists (what the library actually chose). */
    void (*describe_state)(const void *state, char *buf, size_t size);
    /* Optional, after supports: a check that depends on the session's config (threads, cpu.* options). */
    int (*supports_config)(const netrun_backend_config *config, const netrun_node_desc *node, char *reason,
                           size_t reason_size);
} cpu_op;

/* Run fn(arg, begin, end) over [0, n) split into chunks on the context's threads (the caller thread takes
 * part). grain: smallest chunk worth a task. Returns when all chunks are done. */
typedef void (*cpu_range_fn)(void *arg, int64_t begin, int64_t end);
void cpu_parallel_for(cpu_context *ctx, int64_t n, int64_t grain, cpu_range_fn fn, void *arg);

/* threads - 1 workers; idle workers spin spin_us microseconds before sleeping (0: sleep at once), except while
 * watch is set and another process is seen taking the cores (threadpool.c says how). */
cpu_pool *cpu_pool_create(int threads, int spin_us, int watch);
/* How many times the pool has stopped spinning because another process took its cores. */
int cpu_pool_contended_count(cpu_pool *p);
/* Thread count of the most recently created pool (labels only: kernel_describe cannot see the context). */
int cpu_pool_last_threads(void);
void cpu_pool_destroy(cpu_pool *pool);

/* Scratch memory for a kernel run (host->alloc, 64-byte aligned). */
static inline void *cpu_alloc(size_t bytes) { return cpu_host->alloc(bytes ? bytes : 1, 64); }
static inline void cpu_free(void *p) { cpu_host->free(p); }

/* Elements of t: 0 when a dim is 0 (whatever the others), saturated at INT64_MAX (the runtime refuses such
 * tensors before kernels see their data; Size and Shape see only the dims). */
static inline int64_t cpu_count(const netrun_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] == 0) return 0;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(n, t->dims[i], &n)) return INT64_MAX;
    return n;
}

/* 1 when the CPU runs AVX-512F (asked once): kernels built with an AVX-512 variant choose it at run time. */
static inline int cpu_has_avx512f(void) {
    static int v = -1; /* benign race: every thread computes the same value */
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") ? 1 : 0;
    }
    return v;
}

/* The backend option `key` (netrun_session_options / cpu_bench --netrun NAME:key=value), or NULL. */
static inline const char *cpu_option(const cpu_context *ctx, const char *key) {
    const netrun_backend_config *c = &ctx->config;
    if (c->struct_size < offsetof(netrun_backend_config, opaque) + sizeof c->opaque || !c->get_option) return NULL;
    return c->get_option(c->opaque, key);
}

/* The switch of netrun's own AVX-512 kernels: 1 when the CPU runs AVX-512F and option `key` is not "0". */
static inline int cpu_avx512_enabled(const cpu_context *ctx, const char *key) {
    const char *v = cpu_option(ctx, key);
    return cpu_has_avx512f() && !(v && !strcmp(v, "0"));
}

/* IEEE half and bfloat16 <-> float: backends/common/dtype_convert.h (shared with the CUDA plugin). */
static inline float cpu_half_to_float(uint16_t h) { return nr_half_to_float(h); }
static inline uint16_t cpu_float_to_half(float f) { return nr_float_to_half(f); }
static inline float cpu_bf16_to_float(uint16_t h) { return nr_bf16_to_float(h); }
static inline uint16_t cpu_float_to_bf16(float f) { return nr_float_to_bf16(f); }

/* always_inline (on exp, tanh, erf, log below): GCC inlines no plain function into an arch=haswell target
 * clone ("target specific option mismatch"), so the AVX2 loops called these out of line, one lane at a time. */
#define CPU_MATH_INLINE __attribute__((always_inline))
/* expf that the compiler can vectorize (Cephes polynomial, within 2 ulp of exp: tests/cpu/test_fast_math.c): libm's
 * expf is a scalar call. The scale 2^n is applied in two halves so that results run smoothly into subnormals and
 * infinity (x is clamped to [-104, 89]: exp(-104) rounds to 0, exp(89) overflows). NaN stays NaN (no float->int
 * conversion of the input happens). */
CPU_MATH_INLINE static inline float cpu_expf(float x) {
    /* Clamp to [-104, 89] by bit masks: GCC keeps float selects as branches (trapping math) and would not
     * vectorize. NaN compares false both ways and passes through. */
    uint32_t xb, mlo = 0u - (uint32_t)(x < -104.0f), mhi = 0u - (uint32_t)(x > 89.0f);
    const uint32_t lob = 0xC2D00000u, hib = 0x42B20000u; /* -104.0f, 89.0f */
    memcpy(&xb, &x, 4);
    xb = (xb & ~(mlo | mhi)) | (lob & mlo) | (hib & mhi);
    memcpy(&x, &xb, 4);
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer in the low bits */
    float t = x * 1.44269504088896341f + magic;
    float nf = t - magic;
    uint32_t tb;
    memcpy(&tb, &t, 4);
    int32_t n = (int32_t)(tb - 0x4B400000u);
    float r = x - nf * 0.693359375f + nf * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* n in [-150, 128]: halves n >> 1 and n - (n >> 1) (an arithmetic shift, one instruction where n / 2 took
     * three) both lie in [-75, 64], so each scale is a normal float */
    int32_t n1 = n >> 1, n2 = n - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    return p * s1 * s2;
}
/* Select by mask (all ones or zero), branch-free so that loops calling these vectorize (see cpu_expf). */
static inline float cpu_selectf(uint32_t mask, float a, float b) {
    uint32_t ab, bb;
    memcpy(&ab, &a, 4);
    memcpy(&bb, &b, 4);
    ab = (ab & mask) | (bb & ~mask);
    memcpy(&a, &ab, 4);
    return a;
}
/* tanhf that vectorizes (libm's is a scalar call: GPT's tanh GELU spent half its run there): x P(x^2) / Q(x^2),
 * |x| clamped to 7.905 (where it rounds to 1), x itself below 0.0004; Eigen's float32 rational approximation, one
 * division and 11 multiply-adds (the exp-based form before cost 2.7x onnxruntime's time). Within 8 ulp of tanh over
 * the floats (tests/cpu/test_fast_math.c); NaN stays NaN. */
/* Gelu(approximate="tanh") over n floats (elementwise.c; y may be x): the Gelu node's loop, which MatMulBias's
 * fused activation calls too. */
void cpu_gelu_tanh_f32(float *y, const float *x, int64_t n);
/* |x| clamped to hi (NaN passes through), and x's sign bit; cpu_signedf puts the sign back: tanh and erf are odd. */
static inline float cpu_abs_clampf(float x, float hi, uint32_t *sign) {
    uint32_t xb;
    memcpy(&xb, &x, 4);
    *sign = xb & 0x80000000u;
    xb &= 0x7FFFFFFFu;
    float ax;
    memcpy(&ax, &xb, 4);
    return cpu_selectf(0u - (uint32_t)(ax > hi), hi, ax);
}
static inline float cpu_signedf(float r, uint32_t sign) {
    uint32_t rb;
    memcpy(&rb, &r, 4);
    rb |= sign;
    memcpy(&r, &rb, 4);
    return r;
}
CPU_MATH_INLINE static inline float cpu_tanhf(float x) {
    uint32_t sign;
    const float ax = cpu_abs_clampf(x, 7.90531110763549805f, &sign);
    const float x2 = ax * ax;
    float p = -2.76076847742355e-16f;
    p = p * x2 + 2.00018790482477e-13f;
    p = p * x2 - 8.60467152213735e-11f;
    p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f;
    p = p * x2 + 6.37261928875436e-04f;
    p = p * x2 + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * x2 + 1.18534705686654e-04f;
    q = q * x2 + 2.26843463243900e-03f;
    q = q * x2 + 4.89352518554385e-03f;
    const float r = ax * p / q;
    return cpu_signedf(cpu_selectf(0u - (uint32_t)(ax < 0.0004f), ax, r), sign);
}
/* erff that vectorizes (BERT's, ViT's and ConvNeXt's Erf GELU): x P(x^2) / Q(x^2), |x| clamped to 4 (erf(4) rounds
 * to 1), the rational approximation Eigen and XLA use for float32: one division and 12 multiply-adds, where the
 * series-and-exp form before cost twice onnxruntime's time. Within 8 ulp and 5e-7 absolute of erf over the floats
 * (tests/cpu/test_fast_math.c); NaN stays NaN. */
CPU_MATH_INLINE static inline float cpu_erff(float x) {
    uint32_t sign;
    const float ax = cpu_abs_clampf(x, 4.0f, &sign);
    const float x2 = ax * ax;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 - 2.10102402082508e-06f;
    p = p * x2 - 5.69250639462346e-05f;
    p = p * x2 - 7.34990630326855e-04f;
    p = p * x2 - 2.95459980854025e-03f;
    p = p * x2 - 1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 - 2.13374055278905e-04f;
    q = q * x2 - 1.68282697438203e-03f;
    q = q * x2 - 7.37332916720468e-03f;
    q = q * x2 - 1.42647390514189e-02f;
    return cpu_signedf(ax * p / q, sign);
}
/* logf that vectorizes (libm's is a scalar call: Log ran at a quarter of onnxruntime's speed): x = m 2^e with m in
 * [sqrt(1/2), sqrt(2)) taken from the bits (subnormals scaled by 2^23 first), then Cephes' polynomial. Within 2 ulp
 * of log over the floats (tests/cpu/test_fast_math.c); log(+-0) = -inf, log(+inf) = +inf, x < 0 gives NaN, NaN
 * stays NaN (libm's results). */
CPU_MATH_INLINE static inline float cpu_logf(float x) {
    const uint32_t msub = 0u - (uint32_t)(x < 1.17549435e-38f); /* subnormal (and zero, negative: fixed below) */
    float xs = cpu_selectf(msub, x * 8388608.0f, x);
    uint32_t xb;
    memcpy(&xb, &xs, 4);
    /* k: the exponent that leaves the mantissa in [sqrt(1/2), sqrt(2)) (0x3F3504F3 = sqrt(1/2)) */
    const int32_t k = (int32_t)(xb - 0x3F3504F3u) >> 23;
    const uint32_t mb = xb - ((uint32_t)k << 23);
    float m;
    memcpy(&m, &mb, 4);
    const float e = (float)(k - (int32_t)(msub & 23u));
    const float f = m - 1.0f, z = f * f;
    /* Cephes' log(1 + f) = f - f^2/2 + f^3 P(f), f in [sqrt(1/2) - 1, sqrt(2) - 1) */
    float y = 7.0376836292e-2f;
    y = y * f - 1.1514610310e-1f;
    y = y * f + 1.1676998740e-1f;
    y = y * f - 1.2420140846e-1f;
    y = y * f + 1.4249322787e-1f;
    y = y * f - 1.6668057665e-1f;
    y = y * f + 2.0000714765e-1f;
    y = y * f - 2.4999993993e-1f;
    y = y * f + 3.3333331174e-1f;
    y = y * f * z;
    y += e * -2.12194440e-4f;
    y += -0.5f * z;
    float r = f + y;
    r += e * 0.693359375f;
    /* the special values, by masks (NaN compares false) */
    r = cpu_selectf(0u - (uint32_t)(x == INFINITY), x, r);
    r = cpu_selectf(0u - (uint32_t)(x == 0.0f), -INFINITY, r);
    r = cpu_selectf(0u - (uint32_t)(x < 0.0f), NAN, r);
    return cpu_selectf(0u - (uint32_t)(x != x), x, r);
}

/* The same exp and log on 16 floats with AVX-512F and FMA (callers check cpu_has_avx512f and carry the target
 * attribute CPU_AVX512_MATH): scalef applies 2^n in one step, running into subnormals and infinity with one
 * rounding, and getexp / getmant split x, subnormals included, where the portable forms above need two scales and
 * masks. log's polynomial is the one above, exp's a shorter one; both keep the bounds stated above (tested in
 * tests/cpu/test_fast_math.c). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CPU_HAVE_AVX512_MATH 1
#define CPU_AVX512_MATH __attribute__((target("avx512f,fma")))
/* the 16-lane helpers: GCC left them out of line in the row loops (a call and the constants reloaded per vector) */
#define CPU_AVX512_INLINE __attribute__((target("avx512f,fma"), always_inline))
/* exp over all floats, x clamped to [-104, 89] as cpu_expf's (hi_clamp 0: Softmax's x - max <= 0 needs no upper
 * clamp). NaN stays NaN: vminps / vmaxps return their second operand when either is NaN. */
CPU_AVX512_INLINE static inline __m512 cpu_exp_ps512_(__m512 x, int hi_clamp) {
    if (hi_clamp) x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    const __m512 nf = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic), magic);
    __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(-2.12194440e-4f), r);
    /* 1 + r (1 + r q(r)), q of degree 4 fitted to exp's relative error on [-ln2/2, ln2/2] (3e-9 before rounding
     * to float): 6 FMAs where Cephes' degree-7 form above takes 8 operations */
    __m512 p = _mm512_set1_ps(1.3814445119e-3f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3687119186e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1668388993e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666521132e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999994040e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, nf);
}
CPU_AVX512_INLINE static inline __m512 cpu_exp_ps512(__m512 x) { return cpu_exp_ps512_(x, 1); }
/* log: getmant's sign control gives NaN for x < 0 (and NaN for NaN); +-0 and +inf, whose getexp is -inf and +inf,
 * take that exponent as the result. */
CPU_AVX512_INLINE static inline __m512 cpu_log_ps512(__m512 x) {
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan); /* [1, 2) */
    __m512 e = _mm512_getexp_ps(x);
    const __mmask16 big = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, _mm512_set1_ps(0.5f));
    e = _mm512_mask_add_ps(e, big, e, _mm512_set1_ps(1.0f));
    const __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.0f)), z = _mm512_mul_ps(f, f);
    __m512 y = _mm512_set1_ps(7.0376836292e-2f);
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(-1.1514610310e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.1676998740e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(-1.2420140846e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.4249322787e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(-1.6668057665e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(2.0000714765e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(-2.4999993993e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(3.3333331174e-1f));
    y = _mm512_mul_ps(_mm512_mul_ps(y, f), z);
    y = _mm512_fmadd_ps(e, _mm512_set1_ps(-2.12194440e-4f), y);
    y = _mm512_fmadd_ps(z, _mm512_set1_ps(-0.5f), y);
    __m512 r = _mm512_add_ps(f, y);
    r = _mm512_fmadd_ps(e, _mm512_set1_ps(0.693359375f), r);
    const __mmask16 special = _mm512_cmp_ps_mask(_mm512_abs_ps(e), _mm512_set1_ps(INFINITY), _CMP_EQ_OQ) &
                              _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NLT_UQ);
    return _mm512_mask_mov_ps(r, special, e);
}
/* tanh and erf: cpu_tanhf's and cpu_erff's rational forms with FMA (|x| clamped by vminps, which keeps a NaN in its
 * second operand; the sign put back by bits), 13 and 14 operations where the portable loops' AVX-512 clone, without
 * FMA, takes 24 and 26. Same bounds (8 ulp; erf 5e-7 absolute) and special values. */
CPU_AVX512_INLINE static inline __m512 cpu_sign_ps512_(__m512 r, __m512 x) {
    const __m512i sign = _mm512_and_epi32(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(r), sign));
}
CPU_AVX512_INLINE static inline __m512 cpu_tanh_ps512(__m512 x) {
    const __m512 ax = _mm512_min_ps(_mm512_set1_ps(7.90531110763549805f), _mm512_abs_ps(x)), x2 = _mm512_mul_ps(ax, ax);
    __m512 p = _mm512_set1_ps(-2.76076847742355e-16f);
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(2.00018790482477e-13f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-8.60467152213735e-11f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(5.12229709037114e-08f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(1.48572235717979e-05f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(6.37261928875436e-04f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(4.89352455891786e-03f));
    __m512 q = _mm512_set1_ps(1.19825839466702e-06f);
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.18534705686654e-04f));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(2.26843463243900e-03f));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(4.89352518554385e-03f));
    __m512 r = _mm512_div_ps(_mm512_mul_ps(ax, p), q);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.0004f), _CMP_LT_OQ), ax);
    /* at the clamp the FMA form gives 0.99999976 (the portable one 1): +-1 there, as tanh(+-inf) must be */
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(ax, _mm512_set1_ps(7.90531110763549805f), _CMP_EQ_OQ),
                           _mm512_set1_ps(1.0f));
    return cpu_sign_ps512_(r, x);
}
CPU_AVX512_INLINE static inline __m512 cpu_erf_ps512(__m512 x) {
    const __m512 ax = _mm512_min_ps(_mm512_set1_ps(4.0f), _mm512_abs_ps(x)), x2 = _mm512_mul_ps(ax, ax);
    __m512 p = _mm512_set1_ps(-2.72614225801306e-10f);
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(2.77068142495902e-08f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-2.10102402082508e-06f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-5.69250639462346e-05f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-7.34990630326855e-04f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-2.95459980854025e-03f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-1.60960333262415e-02f));
    __m512 q = _mm512_set1_ps(-1.45660718464996e-05f);
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-2.13374055278905e-04f));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.68282697438203e-03f));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-7.37332916720468e-03f));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.42647390514189e-02f));
    return cpu_sign_ps512_(_mm512_div_ps(_mm512_mul_ps(ax, p), q), x);
}
/* The max of a row of n >= 16 floats with four accumulators (one chains on vmaxps' latency: a quarter of
 * Softmax's time on rows of 1024). NaN is not tracked: vmaxps may drop it, but a NaN in the row makes the softmax
 * sum NaN, so the row still comes out all NaN. */
CPU_AVX512_INLINE static inline float cpu_row_max_ps512(const float *x, int64_t n) {
    __m512 m0 = _mm512_loadu_ps(x), m1 = m0, m2 = m0, m3 = m0;
    int64_t i = 16;
    for (; i + 64 <= n; i += 64) {
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
        m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
        m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + i + 32));
        m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + i + 48));
    }
    for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    if (i < n) m1 = _mm512_mask_max_ps(m1, (__mmask16)((1u << (n - i)) - 1), m1, _mm512_maskz_loadu_ps(
                                           (__mmask16)((1u << (n - i)) - 1), x + i));
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}
/* Softmax of a row of n >= 16 floats: y = exp(x - max) / sum (y may be x), the exp without its upper clamp
 * (x - max <= 0, or NaN: a NaN row, or one whose every entry is -inf, comes out all NaN), the sum taken in the exp
 * pass; next (or NULL): the following row, prefetched during that pass. Softmax (softmax.c) and the fused
 * attention's score rows (transformer.c). */
CPU_AVX512_INLINE static inline void cpu_softmax_row_ps512(const float *x, float *y, int64_t n, const float *next) {
    const int64_t nv = n & ~(int64_t)15;
    const __mmask16 kt = (__mmask16)((1u << (n & 15)) - 1); /* the tail's lanes */
    const __m512 mx = _mm512_set1_ps(cpu_row_max_ps512(x, n));
    __m512 acc = _mm512_setzero_ps();
    int64_t i;
    for (i = 0; i < nv; i += 16) {
        if (next) _mm_prefetch((const char *)(next + i), _MM_HINT_T0);
        const __m512 v = cpu_exp_ps512_(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx), 0);
        _mm512_storeu_ps(y + i, v);
        acc = _mm512_add_ps(acc, v);
    }
    if (kt) {
        const __m512 v = cpu_exp_ps512_(_mm512_sub_ps(_mm512_maskz_loadu_ps(kt, x + i), mx), 0);
        _mm512_mask_storeu_ps(y + i, kt, v);
        acc = _mm512_mask_add_ps(acc, kt, acc, v);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(acc));
    for (i = 0; i < nv; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
    if (kt) _mm512_mask_storeu_ps(y + i, kt, _mm512_mul_ps(_mm512_maskz_loadu_ps(kt, y + i), inv));
}
#endif
/* Every dtype the byte-moving kernels (copies, gathers, pads...) serve. */
#define CPU_ALL_DTYPES                                                                                          \
    (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT8) |                              \
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT8) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT16) |                              \
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) |                              \
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BOOL) |                               \
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) |                           \
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT64) |                            \
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))

/* Element size of the dtypes in CPU_ALL_DTYPES (0 for others). */
static inline size_t cpu_esize(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_BOOL: return 1;
    case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: return 2;
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: case NETRUN_DTYPE_DOUBLE: return 8;
    default: return 0;
    }
}

static inline netrun_status cpu_need_esize(const netrun_tensor *t, size_t *es, const char *op) {
    *es = cpu_esize(t->dtype);
    if (!*es) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu %s: dtype %d not supported", op, (int)t->dtype);
    return NETRUN_OK;
}

/* Element i of a numeric array (float types, and integers as a C cast does) as double, and back. */
static inline double cpu_load_f(const void *p, netrun_dtype t, int64_t i) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)p)[i];
    case NETRUN_DTYPE_DOUBLE: return ((const double *)p)[i];
    case NETRUN_DTYPE_FLOAT16: return cpu_half_to_float(((const uint16_t *)p)[i]);
    case NETRUN_DTYPE_BFLOAT16: return cpu_bf16_to_float(((const uint16_t *)p)[i]);
    case NETRUN_DTYPE_INT32: return ((const int32_t *)p)[i];
    case NETRUN_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    default: return 0;
    }
}
static inline void cpu_store_f(void *p, netrun_dtype t, int64_t i, double v) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case NETRUN_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case NETRUN_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_float_to_half((float)v); break;
    case NETRUN_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_float_to_bf16((float)v); break;
    case NETRUN_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case NETRUN_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case NETRUN_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case NETRUN_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case NETRUN_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case NETRUN_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case NETRUN_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case NETRUN_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    default: break;
    }
}

/* Broadcasting: strides of a tensor of rank r (dims d) seen as rank `out_rank` output, 0 where broadcast. */
void cpu_broadcast_strides(int r, const int64_t *d, int out_rank, const int64_t *out_dims, int64_t *strides);

#endif
