/* CPU kernels: softmax (Softmax, LogSoftmax, Hardmax).
 * The input is seen as [outer, D, inner]: D the normalized length (prod(d>=axis) with inner = 1 for the
 * 2-D form of opset < 13). inner == 1 runs one contiguous row per task; otherwise blocks of BLK inner
 * positions are normalized together so that the loops stay contiguous. Max is subtracted for stability, and
 * LogSoftmax is (x - max) - log(sum): x - (max + log(sum)) loses everything to rounding when |max| is large
 * (1e30 + 0.69 == 1e30). NaN wins the max (a row holding NaN is all NaN, Hardmax picks the first NaN), as in
 * the ONNX reference; float16 computes in float. */
#include "cpu_internal.h"

/* Let the branch-free clamps and selects below be if-converted and vectorized: netrun never enables FP
 * traps, so assuming none changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

enum { SM_SOFTMAX, SM_LOG, SM_HARD };

#define BLK 128
#define SHORT_ROWS 256 /* rows of under 16 values normalized together (range_rows) */

typedef struct softmax_job {
    int kind;
    const void *x;
    void *y;
    int64_t D, inner, nblk;
} softmax_job;

/* The larger of a and b, NaN when either is NaN (a plain `x > m ? x : m` drops a NaN that comes after m). */
#define NMAX(x, m) ((x) > (m) || (x) != (x) ? (x) : (m))

/* Sum and max of a contiguous float row with independent lanes (vectorizes without -ffast-math). */
static inline float row_sum(const float *x, int64_t n) {
    float a[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) a[l] += x[i + l];
    float s = 0;
    for (int l = 0; l < 16; l++) s += a[l];
    for (; i < n; i++) s += x[i];
    return s;
}

static inline float row_max(const float *x, int64_t n) {
    float a[16];
    for (int l = 0; l < 16; l++) a[l] = x[0];
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) a[l] = NMAX(x[i + l], a[l]);
    float m = a[0];
    for (int l = 1; l < 16; l++) m = NMAX(a[l], m);
    for (; i < n; i++) m = NMAX(x[i], m);
    return m;
}

static inline double row_sum_d(const double *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s;
}
static inline double row_max_d(const double *x, int64_t n) {
    double m = x[0];
    for (int64_t i = 1; i < n; i++) m = NMAX(x[i], m);
    return m;
}
static inline float row_max_h(const uint16_t *x, int64_t n) {
    float m = cpu_half_to_float(x[0]);
    for (int64_t i = 1; i < n; i++) {
        float v = cpu_half_to_float(x[i]);
        m = NMAX(v, m);
    }
    return m;
}
static inline float row_sum_h(const uint16_t *x, int64_t n) { (void)x, (void)n; return 0; } /* unused: not SAME */

#define ID(x) (x)
#define ST_HALF(a) cpu_float_to_half(a)

/* T stored, F compute type. SAME: T and F are the same type (exp stored in y, then scaled). */
#define DEFINE_SOFTMAX(S, ATTR, T, F, LOAD, STORE, EXP_, LOG_, SAME, ROWSUM, ROWMAX)                               \
    ATTR static void range_rows_##S(void *arg, int64_t b, int64_t e) {                                             \
        const softmax_job *j = arg;                                                                           \
        const int64_t D = j->D;                                                                               \
        if (SAME && j->kind == SM_SOFTMAX && D < 16) {                                                        \
            /* short rows (a detector's 6 class scores per anchor): one exp loop over a run of rows, so that it \
             * vectorizes across rows instead of running a few lanes per row */                               \
            F mx[SHORT_ROWS];                                                                                 \
            for (int64_t r0 = b; r0 < e; r0 += SHORT_ROWS) {                                                  \
                const int64_t nr = e - r0 < SHORT_ROWS ? e - r0 : SHORT_ROWS;                                 \
                const T *x = (const T *)j->x + r0 * D;                                                        \
                T *y = (T *)j->y + r0 * D;                                                                    \
                for (int64_t r = 0; r < nr; r++) mx[r] = ROWMAX(x + r * D, D);                                \
                for (int64_t r = 0; r < nr; r++)                                                              \
                    for (int64_t i = 0; i < D; i++) y[r * D + i] = x[r * D + i] - mx[r];                      \
                for (int64_t i = 0; i < nr * D; i++) y[i] = EXP_(y[i]);                                       \
                for (int64_t r = 0; r < nr; r++) {                                                            \
                    F sum = 0;                                                                                \
                    for (int64_t i = 0; i < D; i++) sum += y[r * D + i];                                      \
                    const F inv = (F)1 / sum;                                                                 \
                    for (int64_t i = 0; i < D; i++) y[r * D + i] *= inv;                                      \
                }                                                                                             \
            }                                                                                                 \
            return;                                                                                           \
        }                                                                                                     \
        for (int64_t row = b; row < e; row++) {                                                               \
            const T *x = (const T *)j->x + row * D;                                                           \
            T *y = (T *)j->y + row * D;                                                                       \
            if (j->kind == SM_HARD) {                                                                         \
                F mx = LOAD(x[0]);                                                                            \
                int64_t amax = 0;                                                                             \
                for (int64_t i = 1; i < D; i++) {                                                             \
                    F v = LOAD(x[i]);                                                                         \
                    if (v > mx || (v != v && mx == mx)) { mx = v; amax = i; }                                \
                }                                                                                             \
                for (int64_t i = 0; i < D; i++) y[i] = STORE((F)(i == amax));                                 \
                continue;                                                                                     \
            }                                                                                                 \
            F mx = ROWMAX(x, D);                                                                              \
            F sum = 0;                                                                                        \
            if (j->kind == SM_LOG) {                                                                          \
                for (int64_t i = 0; i < D; i++) sum += EXP_(LOAD(x[i]) - mx);                                 \
                F lse = LOG_(sum);                                                                            \
                for (int64_t i = 0; i < D; i++) y[i] = STORE((LOAD(x[i]) - mx) - lse);                        \
            } else if (SAME) {                                                                                \
                for (int64_t i = 0; i < D; i++) y[i] = STORE(EXP_(LOAD(x[i]) - mx));                          \
                sum = ROWSUM(y, D);                                                                               \
                F inv = (F)1 / sum;                                                                           \
                for (int64_t i = 0; i < D; i++) y[i] = STORE(LOAD(y[i]) * inv);                               \
            } else {                                                                                          \
                for (int64_t i = 0; i < D; i++) sum += EXP_(LOAD(x[i]) - mx);                                 \
                F inv = (F)1 / sum;                                                                           \
                for (int64_t i = 0; i < D; i++) y[i] = STORE(EXP_(LOAD(x[i]) - mx) * inv);                    \
            }                                                                                                 \
        }                                                                                                     \
    }                                                                                                         \
    ATTR static void range_blocks_##S(void *arg, int64_t b, int64_t e) {                                           \
        const softmax_job *j = arg;                                                                           \
        F mx[BLK], sum[BLK];                                                                                  \
        int64_t am[BLK];                                                                                      \
        for (int64_t t = b; t < e; t++) {                                                                     \
            int64_t o = t / j->nblk, i0 = (t % j->nblk) * BLK;                                                \
            int64_t n = j->inner - i0 < BLK ? j->inner - i0 : BLK;                                            \
            int64_t base = o * j->D * j->inner + i0;                                                          \
            const T *x = (const T *)j->x + base;                                                              \
            T *y = (T *)j->y + base;                                                                          \
            for (int64_t k = 0; k < n; k++) { mx[k] = LOAD(x[k]); am[k] = 0; sum[k] = 0; }                    \
            for (int64_t r = 1; r < j->D; r++)                                                                \
                for (int64_t k = 0; k < n; k++) {                                                             \
                    F v = LOAD(x[r * j->inner + k]);                                                          \
                    if (v > mx[k] || (v != v && mx[k] == mx[k])) { mx[k] = v; am[k] = r; }                    \
                }                                                                                             \
            if (j->kind == SM_HARD) {                                                                         \
                for (int64_t r = 0; r < j->D; r++)                                                            \
                    for (int64_t k = 0; k < n; k++) y[r * j->inner + k] = STORE((F)(am[k] == r));             \
                continue;                                                                                     \
            }                                                                                                 \
            if (SAME && j->kind == SM_SOFTMAX) {                                                              \
                for (int64_t r = 0; r < j->D; r++)                                                            \
                    for (int64_t k = 0; k < n; k++) {                                                         \
                        F v = EXP_(LOAD(x[r * j->inner + k]) - mx[k]);                                        \
                        y[r * j->inner + k] = STORE(v);                                                       \
                        sum[k] += v;                                                                          \
                    }                                                                                         \
                for (int64_t k = 0; k < n; k++) sum[k] = (F)1 / sum[k];                                       \
                for (int64_t r = 0; r < j->D; r++)                                                            \
                    for (int64_t k = 0; k < n; k++) y[r * j->inner + k] = STORE(LOAD(y[r * j->inner + k]) * sum[k]); \
                continue;                                                                                     \
            }                                                                                                 \
            for (int64_t r = 0; r < j->D; r++)                                                                \
                for (int64_t k = 0; k < n; k++) sum[k] += EXP_(LOAD(x[r * j->inner + k]) - mx[k]);            \
            if (j->kind == SM_LOG) {                                                                          \
                for (int64_t k = 0; k < n; k++) sum[k] = LOG_(sum[k]);                                        \
                for (int64_t r = 0; r < j->D; r++)                                                            \
                    for (int64_t k = 0; k < n; k++)                                                           \
                        y[r * j->inner + k] = STORE((LOAD(x[r * j->inner + k]) - mx[k]) - sum[k]);            \
            } else {                                                                                          \
                for (int64_t k = 0; k < n; k++) sum[k] = (F)1 / sum[k];                                       \
                for (int64_t r = 0; r < j->D; r++)                                                            \
                    for (int64_t k = 0; k < n; k++)                                                           \
                        y[r * j->inner + k] = STORE(EXP_(LOAD(x[r * j->inner + k]) - mx[k]) * sum[k]);        \
            }                                                                                                 \
        }                                                                                                     \
    }

/* flatten: GCC left cpu_expf out of line in these loops, so nothing vectorized (64x1000 Softmax: 0.65 ms,
 * onnxruntime 0.03 ms); inlined, the exp loops vectorize. */
#if defined(__GNUC__)
#define SM_INLINE __attribute__((flatten))
#else
#define SM_INLINE
#endif
DEFINE_SOFTMAX(f32, SM_INLINE, float, float, ID, ID, cpu_expf, logf, 1, row_sum, row_max)
DEFINE_SOFTMAX(f64, SM_INLINE, double, double, ID, ID, exp, log, 1, row_sum_d, row_max_d)
DEFINE_SOFTMAX(f16, SM_INLINE, uint16_t, float, cpu_half_to_float, ST_HALF, cpu_expf, logf, 0, row_sum_h, row_max_h)
/* The same float loops compiled for AVX-512, chosen at run time: the default build targets baseline x86-64
 * (no -march), where the exp polynomial runs 4 lanes wide at best. */
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SM_AVX512 1
#include <immintrin.h>
/* row_max in AVX-512: GCC keeps row_max's NaN-aware lanes scalar, and a 768-wide row (a transformer's attention)
 * spent half its Softmax there (197 x 768 at 1 thread 0.24 -> 0.1 ms). */
__attribute__((target("avx512f,avx512dq,avx512vl"))) static inline float row_max_avx512(const float *x, int64_t n) {
    if (n < 16) return row_max(x, n);
    __m512 m = _mm512_loadu_ps(x);
    __mmask16 nan = _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
    int64_t i = 16;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_max_ps(m, v);
    }
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mask_loadu_ps(m, k, x + i); /* lanes past the row keep m's values */
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_max_ps(m, v);
    }
    return nan ? NAN : _mm512_reduce_max_ps(m);
}
DEFINE_SOFTMAX(f32_avx512, __attribute__((flatten, target("avx512f,avx512dq,avx512vl,fma"))), float, float, ID, ID,
               cpu_expf, logf, 1, row_sum, row_max_avx512)
/* Softmax and LogSoftmax rows of 16 or more in AVX-512 with cpu_internal.h's 16-lane exp (FMA, one scalef; the
 * Softmax form skips the upper clamp: x - max <= 0 or NaN), the sum taken in the exp pass, and the next row
 * prefetched during it (the max pass waited on memory for 40% of the time): the portable loops took 1.9x (Softmax)
 * and 3.3x (LogSoftmax) onnxruntime's time on rows of 1024 at 1 thread. Hardmax and short rows keep the loops
 * above. */
__attribute__((target("avx512f,avx512dq,avx512vl,fma"))) static void range_rows_f32_x512(void *arg, int64_t b,
                                                                                          int64_t e) {
    const softmax_job *j = arg;
    const int64_t D = j->D;
    if (j->kind == SM_HARD || D < 16) {
        range_rows_f32_avx512(arg, b, e);
        return;
    }
    const int64_t Dv = D & ~(int64_t)15;
    const __mmask16 kt = (__mmask16)((1u << (D & 15)) - 1); /* the tail's lanes */
    for (int64_t row = b; row < e; row++) {
        const float *x = (const float *)j->x + row * D;
        float *y = (float *)j->y + row * D;
        const uintptr_t next = (uintptr_t)(x + D); /* the next row, fetched while this one computes */
        if (j->kind != SM_LOG) {
            cpu_softmax_row_ps512(x, y, D, x + D);
            continue;
        }
        /* LogSoftmax: x - max goes to y in the exp pass (its stores then overlap the exp work, where a separate
         * output pass waited on them), then y -= log(sum) */
        const __m512 mx = _mm512_set1_ps(cpu_row_max_ps512(x, D));
        __m512 acc = _mm512_setzero_ps();
        int64_t i;
        for (i = 0; i < Dv; i += 16) {
            _mm_prefetch((const char *)(next + 4 * (uintptr_t)i), _MM_HINT_T0);
            const __m512 v = _mm512_sub_ps(_mm512_loadu_ps(x + i), mx);
            _mm512_storeu_ps(y + i, v);
            acc = _mm512_add_ps(acc, cpu_exp_ps512_(v, 0));
        }
        if (kt) {
            const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(kt, x + i), mx);
            _mm512_mask_storeu_ps(y + i, kt, v);
            acc = _mm512_mask_add_ps(acc, kt, acc, cpu_exp_ps512_(v, 0));
        }
        const __m512 lse = _mm512_set1_ps(logf(_mm512_reduce_add_ps(acc)));
        for (i = 0; i < Dv; i += 16) _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_loadu_ps(y + i), lse));
        if (kt) _mm512_mask_storeu_ps(y + i, kt, _mm512_sub_ps(_mm512_maskz_loadu_ps(kt, y + i), lse));
    }
}
#endif

static netrun_status softmax_run(cpu_context *ctx, const netrun_kernel_args *args, int kind) {
    const netrun_softmax_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    if (!p || p->axis < 0 || p->axis >= x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "softmax: bad params (axis)");
    cpu_range_fn rows, blocks;
    switch (x->dtype) {
    case NETRUN_DTYPE_FLOAT:
        rows = range_rows_f32;
        blocks = range_blocks_f32;
#ifdef HAVE_SM_AVX512
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
            rows = range_rows_f32_x512;
            blocks = range_blocks_f32_avx512;
        }
#endif
        break;
    case NETRUN_DTYPE_DOUBLE: rows = range_rows_f64; blocks = range_blocks_f64; break;
    case NETRUN_DTYPE_FLOAT16: rows = range_rows_f16; blocks = range_blocks_f16; break;
    default: return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "softmax: dtype %d not supported", (int)x->dtype);
    }
    int64_t outer = 1, D = 1, inner = 1;
    for (int i = 0; i < p->axis; i++) outer *= x->dims[i];
    if (p->coerce_2d) {
        for (int i = p->axis; i < x->rank; i++) D *= x->dims[i];
    } else {
        D = x->dims[p->axis];
        for (int i = p->axis + 1; i < x->rank; i++) inner *= x->dims[i];
    }
    if (outer * D * inner == 0) return NETRUN_OK;
    softmax_job j = {.kind = kind, .x = x->data, .y = args->outputs[0].data, .D = D, .inner = inner};
    if (inner == 1) {
        int64_t grain = 16384 / D;
        cpu_parallel_for(ctx, outer, grain > 0 ? grain : 1, rows, &j);
    } else {
        j.nblk = (inner + BLK - 1) / BLK;
        int64_t grain = 16384 / (D * (inner < BLK ? inner : BLK));
        cpu_parallel_for(ctx, outer * j.nblk, grain > 0 ? grain : 1, blocks, &j);
    }
    return NETRUN_OK;
}

static netrun_status run_softmax(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return softmax_run(ctx, args, SM_SOFTMAX);
}
static netrun_status run_logsoftmax(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return softmax_run(ctx, args, SM_LOG);
}
static netrun_status run_hardmax(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return softmax_run(ctx, args, SM_HARD);
}

#define DT (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
            NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE))

const cpu_op cpu_ops_softmax[] = {
    {"Softmax", NULL, DT, "", NULL, NULL, run_softmax, NULL},
    {"LogSoftmax", NULL, DT, "", NULL, NULL, run_logsoftmax, NULL},
    {"Hardmax", NULL, DT, "", NULL, NULL, run_hardmax, NULL},
    {0},
};
