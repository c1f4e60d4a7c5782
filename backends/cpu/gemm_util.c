/* Shared helpers of the conv/gemm/norm/pool kernels (see gemm_util.h). */
#include <pthread.h>

#include "gemm_util.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_init(void) { openblas_set_num_threads(1); }
void gu_blas_single_thread(void) { pthread_once(&blas_once, blas_init); }

/* As elementwise.c: the float loops are compiled for AVX-512, AVX2+FMA and baseline and the loader picks one
 * (target_clones), so the default build still uses the whole vector unit (cpu_expf vectorizes). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NETRUN_NO_CLONES)
#define GU_SIMD __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define GU_SIMD
#endif

GU_SIMD static void swish_c(float *y, int64_t n, float bias, float alpha) {
    for (int64_t i = 0; i < n; i++) {
        float v = y[i] + bias;
        y[i] = v / (1.0f + cpu_expf(-alpha * v));
    }
}

GU_SIMD static void sigmoid_c(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + cpu_expf(-y[i]));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GU_AVX512 1
/* The AVX-512 forms, written out: the target_clones build above gets no FMA ("avx512f" alone) and divides,
 * which made SiLU 18% of EfficientNet-B0 at one thread. exp as cpu_expf (Cephes polynomial) with the 2^n scale
 * by scalef; 1 / d by rcp14 and one Newton step (relative error ~2^-28). Returns 1 / (1 + exp(t)); for t > 80
 * exactly 0 (the true value is below 2e-35; this keeps d = 1 + e under 2^126, where rcp14 stays exact, and
 * x * sigmoid(x) at -1e30 a zero as in libm). NaN passes through. */
__attribute__((target("avx512f,fma"))) static inline __m512 recip_1p_exp512(__m512 t) {
    __mmask16 huge = _mm512_cmp_ps_mask(t, _mm512_set1_ps(80.0f), _CMP_GT_OQ);
    t = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(80.0f), t)); /* NaN: 2nd operand */
    __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693359375f), t);
    r = _mm512_fmadd_ps(nf, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512 d = _mm512_add_ps(_mm512_scalef_ps(p, nf), _mm512_set1_ps(1.0f));
    __m512 q = _mm512_rcp14_ps(d);
    q = _mm512_fmadd_ps(q, _mm512_fnmadd_ps(d, q, _mm512_set1_ps(1.0f)), q);
    return _mm512_mask_mov_ps(q, huge, _mm512_setzero_ps());
}

__attribute__((target("avx512f,fma"))) static void swish_avx512(float *y, int64_t n, float bias, float alpha) {
    const __m512 b = _mm512_set1_ps(bias), na = _mm512_set1_ps(-alpha);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), b);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, recip_1p_exp512(_mm512_mul_ps(na, v))));
    }
}

__attribute__((target("avx512f,fma"))) static void sigmoid_avx512(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(y + i, m, recip_1p_exp512(_mm512_sub_ps(_mm512_setzero_ps(), v)));
    }
}
#endif

static int has_avx512(void) {
#ifdef GU_AVX512
    return cpu_has_avx512f();
#else
    return 0;
#endif
}

void gu_swish_n(float *y, int64_t n, float bias, float alpha) {
#ifdef GU_AVX512
    if (has_avx512()) {
        swish_avx512(y, n, bias, alpha);
        return;
    }
#endif
    swish_c(y, n, bias, alpha);
}

void gu_sigmoid_n(float *y, int64_t n) {
#ifdef GU_AVX512
    if (has_avx512()) {
        sigmoid_avx512(y, n);
        return;
    }
#endif
    sigmoid_c(y, n);
}

typedef struct slot_job {
    int64_t tasks, slots;
    gu_slot_fn fn;
    void *arg;
} slot_job;

static void slot_range(void *arg, int64_t b, int64_t e) {
    slot_job *j = arg;
    for (int64_t s = b; s < e; s++) {
        int64_t t0 = j->tasks * s / j->slots, t1 = j->tasks * (s + 1) / j->slots;
        if (t1 > t0) j->fn(j->arg, s, t0, t1);
    }
}

void gu_run_slots(cpu_context *ctx, int64_t tasks, int64_t slots, gu_slot_fn fn, void *arg) {
    if (tasks <= 0) return;
    if (slots < 1) slots = 1;
    if (slots > tasks) slots = tasks;
    slot_job j = {tasks, slots, fn, arg};
    if (slots == 1) {
        fn(arg, 0, 0, tasks);
        return;
    }
    cpu_parallel_for(ctx, slots, 1, slot_range, &j);
}
