/* Shared helpers of the conv/gemm/norm/pool kernels (see gemm_util.h). */
#include <cblas.h>
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
 * which made SiLU 18% of EfficientNet-B0 at one thread. sigmoid(v) = 1 / (1 + exp(-v)) in 16 vector
 * operations: 2^n by the 1.5 * 2^23 shift trick (n = round(-v log2 e) lands in the low mantissa bits of k and
 * is shifted into the exponent with integer ops), one-step reduction r = v + n ln2 (= -(-v - n ln2)), a
 * degree-5 polynomial for exp(-r) (a least-squares fit of exp on [-ln2/2, ln2/2], its odd coefficients
 * negated; relative error 2.2e-7 in float), 1 / d by rcp14 and one Newton step (~2^-28). A row in L1: 4.0 ns
 * a vector of x * sigmoid(x) against 6.7 for Cephes' expf with roundscale and scalef. v is clamped to
 * [-87, 87] so that n stays in the exponent's range and d under 2^126 (where rcp14 is exact); below -87
 * exactly 0 (the true value is under 2e-38: x * sigmoid(x) at -1e30 a zero, and at -inf a NaN, as in libm).
 * keep_nan puts a NaN v back at the end (the integer exponent add could turn its bits into a number); Swish
 * needs no such step: its product with v is NaN anyway. */
__attribute__((target("avx512f,fma"), always_inline)) static inline __m512 sigmoid512(__m512 v, const int keep_nan) {
    __mmask16 tiny = _mm512_cmp_ps_mask(v, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
    __m512 vc = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(87.0f));
    const __m512 magic = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    __m512 k = _mm512_fmadd_ps(vc, _mm512_set1_ps(-1.44269504088896341f), magic);
    __m512 n = _mm512_sub_ps(k, magic);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(0.693147180559945f), vc);
    __m512 p = _mm512_set1_ps(-0.00829172f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.04191503f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(-0.16667663f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.499989f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(-0.99999964f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0000001f));
    __m512i e = _mm512_slli_epi32(_mm512_castps_si512(k), 23);
    __m512 d = _mm512_add_ps(_mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e)), _mm512_set1_ps(1.0f));
    __m512 q = _mm512_rcp14_ps(d);
    q = _mm512_fmadd_ps(q, _mm512_fnmadd_ps(d, q, _mm512_set1_ps(1.0f)), q);
    q = _mm512_mask_mov_ps(q, tiny, _mm512_setzero_ps());
    if (keep_nan) q = _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
    return q;
}

__attribute__((target("avx512f,fma"))) static void swish_avx512(float *y, int64_t n, float bias, float alpha) {
    const __m512 b = _mm512_set1_ps(bias), al = _mm512_set1_ps(alpha);
    int64_t i = 0;
    if (bias == 0.0f && alpha == 1.0f) /* SiLU after a fused bias: two operations fewer a vector */
        for (; i + 16 <= n; i += 16) {
            __m512 v = _mm512_loadu_ps(y + i);
            _mm512_storeu_ps(y + i, _mm512_mul_ps(v, sigmoid512(v, 0)));
        }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), b);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, sigmoid512(_mm512_mul_ps(al, v), 0)));
    }
}

__attribute__((target("avx512f,fma"))) static void sigmoid_avx512(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, sigmoid512(_mm512_maskz_loadu_ps(m, y + i), 1));
    }
}
/* Four rows at a time, each row's dot product in its own accumulator; the rows 8 ahead are prefetched into
 * L2 as these are read (the hardware prefetcher alone keeps too few lines in flight: 1280x1000 weights not in
 * cache, 1 thread, 0.14-0.22 ms against 0.24-0.35 for OpenBLAS's sgemv and 0.20-0.29 without the prefetch). */
__attribute__((target("avx512f,fma"))) static void gemv_avx512(int64_t rows, int64_t k, float alpha, const float *w,
                                                             int64_t ldw, const float *x, float beta, float *y) {
    const int64_t ahead = 8 * ldw;
    const __mmask16 tail = (__mmask16)((1u << (k & 15)) - 1);
    const int64_t kv = k & ~(int64_t)15;
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *w0 = w + r * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t i = 0; i < kv; i += 16) {
            _mm_prefetch((const char *)(w0 + ahead + i), _MM_HINT_T1);
            _mm_prefetch((const char *)(w1 + ahead + i), _MM_HINT_T1);
            _mm_prefetch((const char *)(w2 + ahead + i), _MM_HINT_T1);
            _mm_prefetch((const char *)(w3 + ahead + i), _MM_HINT_T1);
            __m512 xv = _mm512_loadu_ps(x + i);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), xv, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), xv, a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), xv, a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), xv, a3);
        }
        if (tail) {
            __m512 xv = _mm512_maskz_loadu_ps(tail, x + kv);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w0 + kv), xv, a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w1 + kv), xv, a1);
            a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w2 + kv), xv, a2);
            a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w3 + kv), xv, a3);
        }
        float d[4] = {_mm512_reduce_add_ps(a0), _mm512_reduce_add_ps(a1), _mm512_reduce_add_ps(a2),
                      _mm512_reduce_add_ps(a3)};
        for (int q = 0; q < 4; q++) y[r + q] = alpha * d[q] + (beta != 0.0f ? beta * y[r + q] : 0.0f);
    }
    for (; r < rows; r++) {
        const float *wr = w + r * ldw;
        __m512 a = _mm512_setzero_ps();
        for (int64_t i = 0; i < kv; i += 16) a = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i), _mm512_loadu_ps(x + i), a);
        if (tail) a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, wr + kv), _mm512_maskz_loadu_ps(tail, x + kv), a);
        y[r] = alpha * _mm512_reduce_add_ps(a) + (beta != 0.0f ? beta * y[r] : 0.0f);
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

void gu_gemv(int64_t rows, int64_t k, float alpha, const float *w, int64_t ldw, const float *x, float beta, float *y) {
    if (rows <= 0) return;
#ifdef GU_AVX512
    if (has_avx512() && k > 0) {
        gemv_avx512(rows, k, alpha, w, ldw, x, beta, y);
        return;
    }
#endif
    if (beta == 0.0f) memset(y, 0, (size_t)rows * sizeof(float)); /* sgemv reads y even when beta is 0 */
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)rows, (int)k, alpha, w, (int)ldw, x, 1, beta, y, 1);
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
