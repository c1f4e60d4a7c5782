/* CPU kernels: reduce (ReduceXxx, ArgMax/ArgMin, TopK, CumSum, CumProd).
 *
 * A reduction first merges adjacent dims that are all reduced or all kept (dims of size 1 dropped), which
 * turns most cases into one of two fast shapes: [outer, R] (innermost contiguous axis: one line per output)
 * or [outer, R, inner] (a middle axis: rows of `inner` contiguous elements accumulated into a block of
 * outputs, which vectorizes). Anything else goes through a table of the reduced elements' offsets.
 * Integers accumulate in int64 (wrapping like the narrower type would) and finish in double where the op
 * needs it (mean, L2, logs); float16 computes in float. */
#include <stdatomic.h>
#include <stdint.h>

#include "cpu_internal.h"

/* Let compare-and-select loops be if-converted and vectorized: netrun never enables FP traps, so assuming
 * none changes no result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LSE, R_SUMSQ };

#define BLK 256 /* outputs accumulated together in the middle-axis path */

typedef struct reduce_job {
    int kind;
    const void *x;
    void *y;
    int64_t R;                       /* elements reduced per output */
    int64_t inner;                   /* middle path: contiguous kept elements after the reduced run */
    int64_t nblk;                    /* middle path: blocks of BLK per outer index */
    const int64_t *off;              /* general path: offsets of the reduced elements */
    int n_kept;                      /* general path: kept dims (merged) */
    int64_t kept_dims[NETRUN_MAX_RANK], kept_strides[NETRUN_MAX_RANK];
} reduce_job;

/* Saturating float -> integer conversions (NaN and out of range give the type's minimum, as ORT does). */
#define SAT(name, T, LO, HI) \
    static inline T name(double v) { return (v != v || v < (double)(LO) || v >= (double)(HI) + 1.0) ? (T)(LO) : (T)v; }
SAT(sat_i8, int8_t, INT8_MIN, INT8_MAX)
SAT(sat_u8, uint8_t, 0, UINT8_MAX)
SAT(sat_i32, int32_t, INT32_MIN, INT32_MAX)
static inline int64_t sat_i64(double v) {
    return (v != v || v < -9223372036854775808.0 || v >= 9223372036854775808.0) ? INT64_MIN : (int64_t)v;
}

static inline int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wmul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static inline int64_t iabs64(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }

/* The larger / smaller of v and acc, NaN when either is NaN: NaN propagates through max and min as in the ONNX
 * reference (a plain `v > acc ? v : acc` keeps acc when v is NaN); for integers v != v folds away. */
#define NMAX(v, acc) ((v) > (acc) || (v) != (v) ? (v) : (acc))
#define NMIN(v, acc) ((v) < (acc) || (v) != (v) ? (v) : (acc))

#define ID(x) (x)
#define FADD(a, b) ((a) + (b))
#define FMUL(a, b) ((a) * (b))
#define I64(x) ((int64_t)(x))

/* One reduction family per element type:
 *   T stored type, A accumulator, F type for transcendental math, LOAD T->A, ST_A A->T, ST_F F->T. */
#define DEFINE_REDUCE(S, T, A, F, LOAD, ST_A, ST_F, ADD, MUL, ABS, EXP_, LOG_, SQRT_, AMIN, AMAX, IS_INT, SACC) \
    static inline T finish_##S(int kind, A acc, int64_t R) {                                                  \
        switch (kind) {                                                                                       \
        case R_MEAN:                                                                                          \
            if (R == 0) return ST_F((F)NAN);                                                                  \
            return IS_INT ? ST_A(acc / (A)R) : ST_F((F)acc / (F)R);                                           \
        case R_L2: return ST_F(SQRT_((F)acc));                                                                \
        case R_LOGSUM: return ST_F(LOG_((F)acc));                                                             \
        default: return ST_A(acc);                                                                            \
        }                                                                                                     \
    }                                                                                                         \
    static inline A init_##S(int kind) {                                                                      \
        return kind == R_PROD ? (A)1 : kind == R_MAX || kind == R_LSE ? (A)(AMIN) : kind == R_MIN ? (A)(AMAX) \
                                                                                                 : (A)0;      \
    }                                                                                                         \
    /* Reduce R elements: element k at x[off[k]] (off != NULL) or x[k]. */                                    \
    static T line_##S(int kind, const T *x, const int64_t *off, int64_t R) {                                  \
        A acc = init_##S(kind);                                                                               \
        F s = 0;                                                                                              \
        switch (kind) {                                                                                       \
        case R_SUM: case R_MEAN: case R_LOGSUM:                                                               \
            LOOP_##S(acc = ADD(acc, v)); break;                                                               \
        case R_MAX: LOOP_##S(acc = NMAX(v, acc)); break;                                                      \
        case R_MIN: LOOP_##S(acc = NMIN(v, acc)); break;                                                      \
        case R_PROD: LOOP_##S(acc = MUL(acc, v)); break;                                                      \
        case R_L1: LOOP_##S(acc = ADD(acc, ABS(v))); break;                                                   \
        case R_L2: case R_SUMSQ: LOOP_##S(acc = ADD(acc, MUL(v, v))); break;                                  \
        case R_LSE: /* a NaN, +inf or all -inf max is the result itself; else the stable sum */               \
            LOOP_##S(acc = NMAX(v, acc));                                                                     \
            if (!isfinite((F)acc)) return ST_F((F)acc);                                                       \
            LOOP_##S(s = SACC(s, EXP_((F)v - (F)acc)));                                                       \
            return ST_F(LOG_(s) + (F)acc);                                                                    \
        }                                                                                                     \
        return finish_##S(kind, acc, R);                                                                      \
    }                                                                                                         \
    static void range_lines_##S(void *arg, int64_t b, int64_t e) {                                            \
        const reduce_job *j = arg;                                                                            \
        const T *x = j->x;                                                                                    \
        T *y = j->y;                                                                                          \
        for (int64_t i = b; i < e; i++) y[i] = line_##S(j->kind, x + i * j->R, NULL, j->R);                   \
    }                                                                                                         \
    static void range_general_##S(void *arg, int64_t b, int64_t e) {                                          \
        const reduce_job *j = arg;                                                                            \
        const T *x = j->x;                                                                                    \
        T *y = j->y;                                                                                          \
        for (int64_t i = b; i < e; i++) {                                                                     \
            int64_t rem = i, base = 0;                                                                        \
            for (int d = j->n_kept - 1; d >= 0; d--) {                                                        \
                base += (rem % j->kept_dims[d]) * j->kept_strides[d];                                         \
                rem /= j->kept_dims[d];                                                                       \
            }                                                                                                 \
            y[i] = line_##S(j->kind, x + base, j->off, j->R);                                                 \
        }                                                                                                     \
    }                                                                                                         \
    /* Task t = (outer o, block of BLK inner elements): rows of the reduced axis accumulated together. */     \
    static void range_middle_##S(void *arg, int64_t b, int64_t e) {                                           \
        const reduce_job *j = arg;                                                                            \
        const T *x = j->x;                                                                                    \
        T *y = j->y;                                                                                          \
        A acc[BLK];                                                                                           \
        F s[BLK];                                                                                             \
        for (int64_t t = b; t < e; t++) {                                                                     \
            int64_t o = t / j->nblk, i0 = (t % j->nblk) * BLK;                                                \
            int64_t n = j->inner - i0 < BLK ? j->inner - i0 : BLK;                                            \
            const T *base = x + o * j->R * j->inner + i0;                                                     \
            A a0 = init_##S(j->kind);                                                                         \
            for (int64_t k = 0; k < n; k++) acc[k] = a0;                                                      \
            for (int64_t r = 0; r < j->R; r++) {                                                              \
                const T *row = base + r * j->inner;                                                           \
                switch (j->kind) {                                                                            \
                case R_SUM: case R_MEAN: case R_LOGSUM:                                                       \
                    for (int64_t k = 0; k < n; k++) acc[k] = ADD(acc[k], (A)LOAD(row[k]));                    \
                    break;                                                                                    \
                case R_MAX: case R_LSE:                                                                       \
                    for (int64_t k = 0; k < n; k++) { A v = LOAD(row[k]); acc[k] = NMAX(v, acc[k]); }         \
                    break;                                                                                    \
                case R_MIN:                                                                                   \
                    for (int64_t k = 0; k < n; k++) { A v = LOAD(row[k]); acc[k] = NMIN(v, acc[k]); }         \
                    break;                                                                                    \
                case R_PROD:                                                                                  \
                    for (int64_t k = 0; k < n; k++) acc[k] = MUL(acc[k], (A)LOAD(row[k]));                    \
                    break;                                                                                    \
                case R_L1:                                                                                    \
                    for (int64_t k = 0; k < n; k++) acc[k] = ADD(acc[k], ABS((A)LOAD(row[k])));               \
                    break;                                                                                    \
                default: /* L2, SUMSQ */                                                                      \
                    for (int64_t k = 0; k < n; k++) { A v = LOAD(row[k]); acc[k] = ADD(acc[k], MUL(v, v)); }  \
                }                                                                                             \
            }                                                                                                 \
            T *out = y + o * j->inner + i0;                                                                   \
            if (j->kind == R_LSE) {                                                                           \
                for (int64_t k = 0; k < n; k++) s[k] = 0;                                                     \
                for (int64_t r = 0; r < j->R; r++) {                                                          \
                    const T *row = base + r * j->inner;                                                       \
                    for (int64_t k = 0; k < n; k++) s[k] = SACC(s[k], EXP_((F)LOAD(row[k]) - (F)acc[k]));       \
                }                                                                                             \
                for (int64_t k = 0; k < n; k++)                                                               \
                    out[k] = isfinite((F)acc[k]) ? ST_F(LOG_(s[k]) + (F)acc[k]) : ST_F((F)acc[k]);            \
            } else {                                                                                          \
                for (int64_t k = 0; k < n; k++) out[k] = finish_##S(j->kind, acc[k], j->R);                   \
            }                                                                                                 \
        }                                                                                                     \
    }

/* Loop over the line's elements, v = the loaded element. Two copies so the contiguous one vectorizes. */
#define LOOP_GEN(T, A, LOAD, body)                                                                            \
    do {                                                                                                      \
        if (off) { for (int64_t k = 0; k < R; k++) { A v = (A)LOAD(x[off[k]]); body; } }                     \
        else { for (int64_t k = 0; k < R; k++) { A v = (A)LOAD(x[k]); body; } }                               \
    } while (0)

#define LOOP_f32(body) LOOP_GEN(float, float, ID, body)
#define LOOP_f16(body) LOOP_GEN(uint16_t, float, cpu_half_to_float, body)
#define LOOP_f64(body) LOOP_GEN(double, double, ID, body)
#define LOOP_i32(body) LOOP_GEN(int32_t, int64_t, I64, body)
#define LOOP_i64(body) LOOP_GEN(int64_t, int64_t, I64, body)
#define LOOP_u8(body) LOOP_GEN(uint8_t, int64_t, I64, body)
#define LOOP_i8(body) LOOP_GEN(int8_t, int64_t, I64, body)

/* Integer LogSumExp: the sum of exp(x - max) is kept in the integer type, truncated at each step, as
 * onnxruntime does. */
#define ISACC(s, e) trunc((s) + (e))
#define ST_HALF(a) cpu_float_to_half((float)(a))
#define CAST_F(a) ((float)(a))
#define CAST_D(a) ((double)(a))
#define CAST_I32(a) ((int32_t)(a))
#define CAST_I64(a) ((int64_t)(a))
#define CAST_U8(a) ((uint8_t)(a))
#define CAST_I8(a) ((int8_t)(a))

DEFINE_REDUCE(f32, float, float, float, ID, CAST_F, CAST_F, FADD, FMUL, fabsf, expf, logf, sqrtf, -INFINITY,
              INFINITY, 0, FADD)
DEFINE_REDUCE(f16, uint16_t, float, float, cpu_half_to_float, ST_HALF, ST_HALF, FADD, FMUL, fabsf, expf, logf,
              sqrtf, -INFINITY, INFINITY, 0, FADD)
DEFINE_REDUCE(f64, double, double, double, ID, CAST_D, CAST_D, FADD, FMUL, fabs, exp, log, sqrt, -INFINITY,
              INFINITY, 0, FADD)
DEFINE_REDUCE(i32, int32_t, int64_t, double, I64, CAST_I32, sat_i32, wadd, wmul, iabs64, exp, log, sqrt,
              INT64_MIN, INT64_MAX, 1, ISACC)
DEFINE_REDUCE(i64, int64_t, int64_t, double, I64, CAST_I64, sat_i64, wadd, wmul, iabs64, exp, log, sqrt,
              INT64_MIN, INT64_MAX, 1, ISACC)
DEFINE_REDUCE(u8, uint8_t, int64_t, double, I64, CAST_U8, sat_u8, wadd, wmul, iabs64, exp, log, sqrt, INT64_MIN,
              INT64_MAX, 1, ISACC)
DEFINE_REDUCE(i8, int8_t, int64_t, double, I64, CAST_I8, sat_i8, wadd, wmul, iabs64, exp, log, sqrt, INT64_MIN,
              INT64_MAX, 1, ISACC)

/* float32 contiguous lines with 16 independent lanes: the plain loop is one serial dependency chain that
 * the compiler may not reorder (FP addition is not associative), this one vectorizes. */
#define LANES 16
#define LANE_LOOP(init, body)                                                                                 \
    do {                                                                                                      \
        for (int l = 0; l < LANES; l++) a[l] = (init);                                                        \
        int64_t k = 0;                                                                                        \
        for (; k + LANES <= R; k += LANES)                                                                    \
            for (int l = 0; l < LANES; l++) { float v = x[k + l]; float *acc = &a[l]; body; }                 \
        for (; k < R; k++) { float v = x[k]; float *acc = &a[0]; body; }                                      \
    } while (0)

static void range_lines_f32_fast(void *arg, int64_t b, int64_t e) {
    const reduce_job *j = arg;
    int kind = j->kind;
    if (kind == R_PROD || kind == R_LSE || j->R < LANES) {
        range_lines_f32(arg, b, e);
        return;
    }
    const int64_t R = j->R;
    float a[LANES];
    for (int64_t i = b; i < e; i++) {
        const float *x = (const float *)j->x + i * R;
        float r;
        switch (kind) {
        case R_MAX:
            LANE_LOOP(x[0], *acc = NMAX(v, *acc));
            r = a[0];
            for (int l = 1; l < LANES; l++) r = NMAX(a[l], r);
            break;
        case R_MIN:
            LANE_LOOP(x[0], *acc = NMIN(v, *acc));
            r = a[0];
            for (int l = 1; l < LANES; l++) r = NMIN(a[l], r);
            break;
        default:
            if (kind == R_L1) LANE_LOOP(0.f, *acc += fabsf(v));
            else if (kind == R_L2 || kind == R_SUMSQ) LANE_LOOP(0.f, *acc += v * v);
            else LANE_LOOP(0.f, *acc += v); /* SUM, MEAN, LOGSUM */
            r = 0.f;
            for (int l = 0; l < LANES; l++) r += a[l];
        }
        ((float *)j->y)[i] = finish_f32(kind, r, R);
    }
}

typedef struct reduce_fns {
    cpu_range_fn lines, middle, general;
} reduce_fns;

static int reduce_fns_for(netrun_dtype t, reduce_fns *f) {
#define CASE(D, S) case D: *f = (reduce_fns){range_lines_##S, range_middle_##S, range_general_##S}; return 1;
    switch (t) {
        case NETRUN_DTYPE_FLOAT: *f = (reduce_fns){range_lines_f32_fast, range_middle_f32, range_general_f32}; return 1;
        CASE(NETRUN_DTYPE_FLOAT16, f16)
        CASE(NETRUN_DTYPE_DOUBLE, f64)
        CASE(NETRUN_DTYPE_INT32, i32)
        CASE(NETRUN_DTYPE_INT64, i64)
        CASE(NETRUN_DTYPE_UINT8, u8)
        CASE(NETRUN_DTYPE_INT8, i8)
    default: return 0;
    }
#undef CASE
}

static size_t dtype_size(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_BOOL: return 1;
    case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_UINT16: return 2;
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: return 8;
    default: return 0;
    }
}

/* Merged view of a reduction: n dims, d[i] sizes, red[i] 1 when reduced. Dims of size 1 are dropped. */
typedef struct merged {
    int n;
    int64_t d[NETRUN_MAX_RANK];
    int red[NETRUN_MAX_RANK];
} merged;

static void merge_dims(const netrun_tensor *x, const int *axes, int n_axes, merged *m) {
    m->n = 0;
    for (int i = 0, k = 0; i < x->rank; i++) {
        int r = k < n_axes && axes[k] == i;
        if (r) k++;
        if (x->dims[i] == 1) continue;
        if (m->n > 0 && m->red[m->n - 1] == r) m->d[m->n - 1] *= x->dims[i];
        else {
            m->d[m->n] = x->dims[i];
            m->red[m->n] = r;
            m->n++;
        }
    }
}

/* Chunks of at least ~32K elements of work each. */
static int64_t grain_for(int64_t work_per_item) {
    int64_t g = 32768 / (work_per_item > 0 ? work_per_item : 1);
    return g > 0 ? g : 1;
}

static netrun_status reduce_run(cpu_context *ctx, const netrun_kernel_args *args, int kind) {
    const netrun_reduce_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p) return cpu_host->error(NETRUN_ERR_INTERNAL, "reduce: missing params");
    /* noop_with_empty_axes: identity for the plain reductions; L1, L2, LogSum, SumSquare still map each
     * element (|x|, log x, x^2), like a reduction over one element (n_axes is 0 then) */
    if (p->noop && (kind == R_SUM || kind == R_MEAN || kind == R_MAX || kind == R_MIN || kind == R_PROD)) {
        if (y->data != x->data && y->nbytes) memcpy(y->data, x->data, y->nbytes);
        return NETRUN_OK;
    }
    reduce_fns fns;
    netrun_dtype dt = x->dtype;
    if (dt == NETRUN_DTYPE_BOOL && (kind == R_MAX || kind == R_MIN)) dt = NETRUN_DTYPE_UINT8; /* any / all of 0, 1 */
    if (!reduce_fns_for(dt, &fns))
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "reduce: dtype %d not supported", (int)x->dtype);
    merged m;
    merge_dims(x, p->axes, p->n_axes, &m);
    int64_t n_out = cpu_count(y);
    if (n_out == 0) return NETRUN_OK;
    reduce_job j = {.kind = kind, .x = x->data, .y = y->data, .R = 1, .inner = 1};
    for (int i = 0; i < m.n; i++)
        if (m.red[i]) j.R *= m.d[i];
    int n_red_runs = 0;
    for (int i = 0; i < m.n; i++) n_red_runs += m.red[i];
    if (n_red_runs == 0 || (n_red_runs == 1 && m.red[m.n - 1])) {
        /* [outer, R]: one contiguous line per output */
        cpu_parallel_for(ctx, n_out, grain_for(j.R), fns.lines, &j);
        return NETRUN_OK;
    }
    if (n_red_runs == 1 && m.n <= 3) {
        /* [outer, R, inner] with the reduced run in the middle (or first) */
        j.inner = m.d[m.n - 1];
        j.nblk = (j.inner + BLK - 1) / BLK;
        int64_t tasks = (n_out / j.inner) * j.nblk;
        cpu_parallel_for(ctx, tasks, grain_for(j.R * (j.inner < BLK ? j.inner : BLK)), fns.middle, &j);
        return NETRUN_OK;
    }
    /* general: offsets of the reduced elements relative to an output's base element */
    int64_t strides[NETRUN_MAX_RANK], s = 1;
    for (int i = m.n - 1; i >= 0; i--) {
        strides[i] = s;
        s *= m.d[i];
    }
    size_t bytes;
    if ((uint64_t)j.R > SIZE_MAX / sizeof(int64_t))
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "reduce: %lld reduced elements are too many",
                               (long long)j.R);
    bytes = (size_t)j.R * sizeof(int64_t);
    int64_t *off = cpu_alloc(bytes);
    if (!off) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "reduce: cannot allocate %zu bytes", bytes);
    int64_t rd[NETRUN_MAX_RANK], rs[NETRUN_MAX_RANK];
    int nr = 0;
    for (int i = 0; i < m.n; i++) {
        if (m.red[i]) {
            rd[nr] = m.d[i];
            rs[nr++] = strides[i];
        } else {
            j.kept_dims[j.n_kept] = m.d[i];
            j.kept_strides[j.n_kept++] = strides[i];
        }
    }
    for (int64_t k = 0; k < j.R; k++) {
        int64_t rem = k, o = 0;
        for (int d = nr - 1; d >= 0; d--) {
            o += (rem % rd[d]) * rs[d];
            rem /= rd[d];
        }
        off[k] = o;
    }
    j.off = off;
    cpu_parallel_for(ctx, n_out, grain_for(j.R), fns.general, &j);
    cpu_free(off);
    return NETRUN_OK;
}

#define REDUCE_RUN(name, kind) \
    static netrun_status run_##name(cpu_context *ctx, void *state, const netrun_kernel_args *args) { \
        (void)state; return reduce_run(ctx, args, kind); }
REDUCE_RUN(sum, R_SUM)
REDUCE_RUN(mean, R_MEAN)
REDUCE_RUN(max, R_MAX)
REDUCE_RUN(min, R_MIN)
REDUCE_RUN(prod, R_PROD)
REDUCE_RUN(l1, R_L1)
REDUCE_RUN(l2, R_L2)
REDUCE_RUN(logsum, R_LOGSUM)
REDUCE_RUN(lse, R_LSE)
REDUCE_RUN(sumsq, R_SUMSQ)

/* ---------------- ArgMax / ArgMin: [outer, R, inner] with blocks of BLK inner positions ---------------- */

typedef struct arg_job {
    const void *x;
    int64_t *y;
    int64_t outer, R, inner, nblk;
    int is_max, last;
} arg_job;

#define SAME(v, m) ((v) == (m) || ((v) != (v) && (m) != (m)))
#define DEFINE_ARG(S, T, A, LOAD)                                                                             \
    static void range_arg_##S(void *arg, int64_t b, int64_t e) {                                              \
        const arg_job *j = arg;                                                                               \
        const T *x = j->x;                                                                                    \
        A best[BLK];                                                                                          \
        int64_t idx[BLK];                                                                                     \
        if (j->inner == 1) {                                                                                  \
            /* contiguous lines: the extreme value with independent lanes, then its first / last index */     \
            for (int64_t o = b; o < e; o++) {                                                                 \
                const T *row = x + o * j->R;                                                                  \
                A m = LOAD(row[0]);                                                                           \
                int64_t r = 0;                                                                                \
                if (j->R >= BLK) {                                                                            \
                    for (int l = 0; l < 16; l++) best[l] = m;                                                 \
                    for (; r + 16 <= j->R; r += 16)                                                           \
                        for (int l = 0; l < 16; l++) {                                                        \
                            A v = LOAD(row[r + l]);                                                           \
                            best[l] = j->is_max ? NMAX(v, best[l]) : NMIN(v, best[l]);                         \
                        }                                                                                     \
                    for (int l = 0; l < 16; l++) m = j->is_max ? NMAX(best[l], m) : NMIN(best[l], m);     \
                }                                                                                             \
                for (; r < j->R; r++) {                                                                       \
                    A v = LOAD(row[r]);                                                                       \
                    m = j->is_max ? NMAX(v, m) : NMIN(v, m);                                                  \
                }                                                                                             \
                int64_t at = 0; /* the first (or last) index of m; a NaN is both ArgMax's and ArgMin's pick */ \
                if (j->last) { for (at = j->R - 1; at > 0 && !SAME(LOAD(row[at]), m); at--) {} }            \
                else { while (at < j->R - 1 && !SAME(LOAD(row[at]), m)) at++; }                               \
                j->y[o] = at;                                                                                 \
            }                                                                                                 \
            return;                                                                                           \
        }                                                                                                     \
        for (int64_t t = b; t < e; t++) {                                                                     \
            int64_t o = t / j->nblk, i0 = (t % j->nblk) * BLK;                                                \
            int64_t n = j->inner - i0 < BLK ? j->inner - i0 : BLK;                                            \
            const T *base = x + o * j->R * j->inner + i0;                                                     \
            for (int64_t k = 0; k < n; k++) { best[k] = LOAD(base[k]); idx[k] = 0; }                         \
            for (int64_t r = 1; r < j->R; r++) {                                                              \
                const T *row = base + r * j->inner;                                                           \
                for (int64_t k = 0; k < n; k++) {                                                             \
                    A v = LOAD(row[k]);                                                                       \
                    int vn = v != v, bn = best[k] != best[k];                                                 \
                    int take = bn ? j->last && vn : vn ? 1                                                    \
                               : j->is_max ? (j->last ? v >= best[k] : v > best[k])                           \
                                           : (j->last ? v <= best[k] : v < best[k]);                          \
                    if (take) { best[k] = v; idx[k] = r; }                                                    \
                }                                                                                             \
            }                                                                                                 \
            memcpy(j->y + o * j->inner + i0, idx, sizeof(int64_t) * (size_t)n);                               \
        }                                                                                                     \
    }
DEFINE_ARG(f32, float, float, ID)
DEFINE_ARG(f16, uint16_t, float, cpu_half_to_float)
DEFINE_ARG(f64, double, double, ID)
DEFINE_ARG(i32, int32_t, int32_t, ID)
DEFINE_ARG(i64, int64_t, int64_t, ID)
DEFINE_ARG(u8, uint8_t, uint8_t, ID)
DEFINE_ARG(i8, int8_t, int8_t, ID)

static cpu_range_fn arg_fn(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return range_arg_f32;
    case NETRUN_DTYPE_FLOAT16: return range_arg_f16;
    case NETRUN_DTYPE_DOUBLE: return range_arg_f64;
    case NETRUN_DTYPE_INT32: return range_arg_i32;
    case NETRUN_DTYPE_INT64: return range_arg_i64;
    case NETRUN_DTYPE_UINT8: return range_arg_u8;
    case NETRUN_DTYPE_INT8: return range_arg_i8;
    default: return NULL;
    }
}

/* outer / R / inner around one axis */
static void split_axis(const netrun_tensor *x, int axis, int64_t *outer, int64_t *R, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) *inner *= x->dims[i];
    *R = x->dims[axis];
}

static netrun_status arg_run(cpu_context *ctx, const netrun_kernel_args *args, int is_max) {
    const netrun_reduce_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    cpu_range_fn fn = arg_fn(x->dtype);
    if (!fn) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "ArgMax/ArgMin: dtype %d not supported", (int)x->dtype);
    if (!p || p->n_axes != 1 || p->axes[0] < 0 || p->axes[0] >= x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "ArgMax/ArgMin: bad params");
    arg_job j = {.x = x->data, .y = args->outputs[0].data, .is_max = is_max, .last = p->select_last_index};
    split_axis(x, p->axes[0], &j.outer, &j.R, &j.inner);
    if (j.outer * j.inner == 0) return NETRUN_OK;
    if (j.R == 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ArgMax/ArgMin over an empty axis");
    j.nblk = (j.inner + BLK - 1) / BLK;
    cpu_parallel_for(ctx, j.outer * j.nblk, grain_for(j.R * (j.inner < BLK ? j.inner : BLK)), fn, &j);
    return NETRUN_OK;
}

static netrun_status run_argmax(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return arg_run(ctx, args, 1);
}
static netrun_status run_argmin(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return arg_run(ctx, args, 0);
}

/* ---------------- TopK: a heap of the k best per line, then sorted best first ---------------- */

typedef struct topk_item {
    double v;
    int64_t i;
} topk_item;

typedef struct topk_job {
    const unsigned char *x;
    unsigned char *values;
    int64_t *indices;
    netrun_dtype dtype;
    size_t esize;
    int64_t outer, R, inner, k;
    int largest;
    atomic_int failed;
} topk_job;

static double load_as_double(netrun_dtype t, const unsigned char *p) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case NETRUN_DTYPE_DOUBLE: { double v; memcpy(&v, p, 8); return v; }
    case NETRUN_DTYPE_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return cpu_half_to_float(v); }
    case NETRUN_DTYPE_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case NETRUN_DTYPE_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case NETRUN_DTYPE_UINT8: return *p;
    case NETRUN_DTYPE_INT8: return (int8_t)*p;
    case NETRUN_DTYPE_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case NETRUN_DTYPE_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case NETRUN_DTYPE_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case NETRUN_DTYPE_UINT64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case NETRUN_DTYPE_BFLOAT16: { uint16_t v; memcpy(&v, p, 2); return cpu_bf16_to_float(v); }
    default: return 0;
    }
}

/* a ranks before b: better value, ties to the lower index (the spec) */
static inline int topk_before(const topk_item *a, const topk_item *b, int largest) {
    if (a->v != b->v) return largest ? a->v > b->v : a->v < b->v;
    return a->i < b->i;
}

/* Heap whose root is the item that ranks last. */
static void topk_sift(topk_item *h, int64_t n, int64_t i, int largest) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && topk_before(&h[w], &h[l], largest)) w = l;
        if (r < n && topk_before(&h[w], &h[r], largest)) w = r;
        if (w == i) return;
        topk_item t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* ---- the sort path: dtypes whose order fits 32 bits ----
 * Each value becomes a 32-bit key whose unsigned order is the value's order (floats: sign-magnitude flipped,
 * -0 as +0, NaN as the best value like the heap path), inverted for largest, and the index goes in the low
 * half: ascending 64-bit integers are then "best first, ties to the lower index". A quickselect keeps the k
 * best, a sort orders them. A detector's TopK over a few thousand scores with k close to the count was a heap
 * sort of 16-byte items through a dtype switch per load: 0.7 ms for 12k scores; integer keys take a tenth. */

static int topk_keyed(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: case NETRUN_DTYPE_INT32:
    case NETRUN_DTYPE_UINT32: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_INT8:
    case NETRUN_DTYPE_UINT8: return 1;
    default: return 0;
    }
}

static inline uint32_t float_key(float f, int largest) {
    if (f != f) f = largest ? INFINITY : -INFINITY;
    if (f == 0.0f) f = 0.0f; /* -0 ties with +0 */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

static inline uint32_t value_key(netrun_dtype t, const unsigned char *p, int largest) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: { float v; memcpy(&v, p, 4); return float_key(v, largest); }
    case NETRUN_DTYPE_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return float_key(cpu_half_to_float(v), largest); }
    case NETRUN_DTYPE_BFLOAT16: { uint16_t v; memcpy(&v, p, 2); return float_key(cpu_bf16_to_float(v), largest); }
    case NETRUN_DTYPE_INT32: { uint32_t v; memcpy(&v, p, 4); return v ^ 0x80000000u; }
    case NETRUN_DTYPE_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case NETRUN_DTYPE_INT16: { int16_t v; memcpy(&v, p, 2); return (uint32_t)(int32_t)v ^ 0x80000000u; }
    case NETRUN_DTYPE_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case NETRUN_DTYPE_INT8: return (uint32_t)(int32_t)(int8_t)*p ^ 0x80000000u;
    default: return *p; /* UINT8 */
    }
}

static inline void u64_swap(uint64_t *a, uint64_t *b) {
    uint64_t t = *a;
    *a = *b;
    *b = t;
}

/* a[lo], a[mid], a[hi] ordered; the median then sits at mid (keys are distinct: the index is part of them) */
static uint64_t u64_median3(uint64_t *a, int64_t lo, int64_t hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < a[lo]) u64_swap(&a[mid], &a[lo]);
    if (a[hi] < a[lo]) u64_swap(&a[hi], &a[lo]);
    if (a[hi] < a[mid]) u64_swap(&a[hi], &a[mid]);
    return a[mid];
}

/* Hoare partition of a[lo..hi] around pivot: returns j with a[lo..j] <= pivot <= a[j+1..hi] */
static int64_t u64_partition(uint64_t *a, int64_t lo, int64_t hi, uint64_t pivot) {
    int64_t i = lo - 1, j = hi + 1;
    for (;;) {
        do i++; while (a[i] < pivot);
        do j--; while (a[j] > pivot);
        if (i >= j) return j;
        u64_swap(&a[i], &a[j]);
    }
}

static void u64_sift(uint64_t *a, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && a[l] > a[w]) w = l;
        if (r < n && a[r] > a[w]) w = r;
        if (w == i) return;
        u64_swap(&a[i], &a[w]);
        i = w;
    }
}

static void u64_heapsort(uint64_t *a, int64_t n) {
    for (int64_t i = n / 2 - 1; i >= 0; i--) u64_sift(a, n, i);
    for (int64_t m = n - 1; m > 0; m--) {
        u64_swap(&a[0], &a[m]);
        u64_sift(a, m, 0);
    }
}

/* Introsort: quicksort on median-of-3, insertion sort below 16, heapsort past a depth limit. */
static void u64_sort(uint64_t *a, int64_t n, int depth) {
    while (n > 16) {
        if (depth-- <= 0) {
            u64_heapsort(a, n);
            return;
        }
        int64_t j = u64_partition(a, 0, n - 1, u64_median3(a, 0, n - 1));
        u64_sort(a + j + 1, n - j - 1, depth); /* recurse on one side, loop on the other */
        n = j + 1;
    }
    for (int64_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        int64_t k = i - 1;
        for (; k >= 0 && a[k] > v; k--) a[k + 1] = a[k];
        a[k + 1] = v;
    }
}

/* Puts the k smallest of a[0..n) first (in no order): quickselect, a full sort past a depth limit. */
static void u64_select(uint64_t *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    int depth = 64;
    while (hi - lo > 16) {
        if (depth-- <= 0) {
            u64_sort(a + lo, hi - lo + 1, 64);
            return;
        }
        int64_t j = u64_partition(a, lo, hi, u64_median3(a, lo, hi));
        if (k <= j + 1) hi = j; /* the k-th smallest (position k-1) lies in [lo, j] */
        else lo = j + 1;
    }
    u64_sort(a + lo, hi - lo + 1, 64);
}

static void range_topk_keyed(void *arg, int64_t b, int64_t e) {
    topk_job *j = arg;
    uint64_t *keys = cpu_alloc(sizeof(uint64_t) * (size_t)j->R);
    if (!keys) {
        atomic_store(&j->failed, 1);
        return;
    }
    const uint32_t flip = j->largest ? 0xffffffffu : 0;
    for (int64_t line = b; line < e; line++) {
        int64_t o = line / j->inner, in = line % j->inner;
        const unsigned char *base = j->x + (size_t)((o * j->R * j->inner + in)) * j->esize;
        const size_t stride = (size_t)j->inner * j->esize;
        for (int64_t r = 0; r < j->R; r++)
            keys[r] = (uint64_t)(value_key(j->dtype, base + (size_t)r * stride, j->largest) ^ flip) << 32 |
                      (uint64_t)r;
        if (j->k < j->R) u64_select(keys, j->R, j->k);
        u64_sort(keys, j->k, 64);
        int64_t obase = o * j->k * j->inner + in;
        for (int64_t r = 0; r < j->k; r++) {
            int64_t oi = obase + r * j->inner, src = (int64_t)(keys[r] & 0xffffffffu);
            j->indices[oi] = src;
            memcpy(j->values + (size_t)oi * j->esize, base + (size_t)src * stride, j->esize);
        }
    }
    cpu_free(keys);
}

static void range_topk(void *arg, int64_t b, int64_t e) {
    topk_job *j = arg;
    topk_item *h = cpu_alloc(sizeof(topk_item) * (size_t)j->k);
    if (!h) {
        atomic_store(&j->failed, 1);
        return;
    }
    for (int64_t line = b; line < e; line++) {
        int64_t o = line / j->inner, in = line % j->inner;
        const unsigned char *base = j->x + (size_t)((o * j->R * j->inner + in)) * j->esize;
        int64_t n = 0;
        for (int64_t r = 0; r < j->R; r++) {
            topk_item it = {load_as_double(j->dtype, base + (size_t)(r * j->inner) * j->esize), r};
            if (it.v != it.v) it.v = j->largest ? INFINITY : -INFINITY; /* NaN ranks first, like ORT */
            if (n < j->k) {
                h[n++] = it;
                if (n == j->k)
                    for (int64_t i = n / 2 - 1; i >= 0; i--) topk_sift(h, n, i, j->largest);
            } else if (topk_before(&it, &h[0], j->largest)) {
                h[0] = it;
                topk_sift(h, n, 0, j->largest);
            }
        }
        if (n < j->k) /* only when k == R: heapify what we have */
            for (int64_t i = n / 2 - 1; i >= 0; i--) topk_sift(h, n, i, j->largest);
        /* pop the worst to the end: h ends up best first */
        for (int64_t m = n; m > 1; m--) {
            topk_item t = h[0];
            h[0] = h[m - 1];
            h[m - 1] = t;
            topk_sift(h, m - 1, 0, j->largest);
        }
        int64_t obase = o * j->k * j->inner + in;
        for (int64_t r = 0; r < n; r++) {
            int64_t oi = obase + r * j->inner;
            j->indices[oi] = h[r].i;
            memcpy(j->values + (size_t)oi * j->esize, base + (size_t)(h[r].i * j->inner) * j->esize, j->esize);
        }
    }
    cpu_free(h);
}

static netrun_status run_topk(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_topk_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    if (!p || p->axis < 0 || p->axis >= x->rank) return cpu_host->error(NETRUN_ERR_INTERNAL, "TopK: bad params");
    topk_job j = {.x = x->data, .values = args->outputs[0].data, .dtype = x->dtype, .esize = dtype_size(x->dtype),
                  .k = p->k, .largest = p->largest};
    if (args->n_outputs > 1) j.indices = args->outputs[1].data;
    if (!j.esize) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "TopK: dtype %d not supported", (int)x->dtype);
    split_axis(x, p->axis, &j.outer, &j.R, &j.inner);
    if (p->k > j.R) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "TopK: k %lld > axis size %lld",
                                           (long long)p->k, (long long)j.R);
    if (j.k == 0 || j.outer * j.inner == 0) return NETRUN_OK;
    /* the kernel always writes both; an absent output gets a scratch buffer */
    int64_t *scratch_idx = NULL;
    unsigned char *scratch_val = NULL;
    size_t n_out = (size_t)(j.outer * j.inner * j.k);
    if (!j.indices || args->outputs[1].rank < 0) {
        scratch_idx = cpu_alloc(n_out * sizeof(int64_t));
        if (!scratch_idx) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "TopK: out of memory");
        j.indices = scratch_idx;
    }
    if (!j.values || args->outputs[0].rank < 0) {
        scratch_val = cpu_alloc(n_out * j.esize);
        if (!scratch_val) {
            cpu_free(scratch_idx);
            return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "TopK: out of memory");
        }
        j.values = scratch_val;
    }
    atomic_init(&j.failed, 0);
    /* the heap path for 64-bit types and for lines too long for 32-bit indices in the keys */
    int keyed = topk_keyed(j.dtype) && j.R <= (int64_t)UINT32_MAX;
    cpu_parallel_for(ctx, j.outer * j.inner, grain_for(j.R * 4), keyed ? range_topk_keyed : range_topk, &j);
    if (scratch_idx) cpu_free(scratch_idx);
    if (scratch_val) cpu_free(scratch_val);
    if (atomic_load(&j.failed)) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "TopK: out of memory (k = %lld)",
                                                       (long long)p->k);
    return NETRUN_OK;
}

/* ---------------- CumSum, CumProd: [outer, R, inner], blocks of inner positions ---------------- */

typedef struct cumsum_job {
    const void *x;
    void *y;
    int64_t R, inner, nblk;
    int exclusive, reverse;
} cumsum_job;

#define DEFINE_CUMSUM(S, T, A, LOAD, STORE, ADD, INIT)                                                        \
    static void range_cumsum_##S(void *arg, int64_t b, int64_t e) {                                           \
        const cumsum_job *j = arg;                                                                            \
        const T *x = j->x;                                                                                    \
        T *y = j->y;                                                                                          \
        A acc[BLK];                                                                                           \
        for (int64_t t = b; t < e; t++) {                                                                     \
            int64_t o = t / j->nblk, i0 = (t % j->nblk) * BLK;                                                \
            int64_t n = j->inner - i0 < BLK ? j->inner - i0 : BLK;                                            \
            int64_t base = o * j->R * j->inner + i0;                                                          \
            for (int64_t k = 0; k < n; k++) acc[k] = INIT;                                                    \
            for (int64_t rr = 0; rr < j->R; rr++) {                                                           \
                int64_t r = j->reverse ? j->R - 1 - rr : rr;                                                  \
                const T *row = x + base + r * j->inner;                                                       \
                T *out = y + base + r * j->inner;                                                             \
                if (j->exclusive)                                                                             \
                    for (int64_t k = 0; k < n; k++) { A v = LOAD(row[k]); out[k] = STORE(acc[k]); acc[k] = ADD(acc[k], v); } \
                else                                                                                          \
                    for (int64_t k = 0; k < n; k++) { acc[k] = ADD(acc[k], (A)LOAD(row[k])); out[k] = STORE(acc[k]); } \
            }                                                                                                 \
        }                                                                                                     \
    }
DEFINE_CUMSUM(f32, float, float, ID, CAST_F, FADD, 0)
DEFINE_CUMSUM(f16, uint16_t, float, cpu_half_to_float, ST_HALF, FADD, 0)
DEFINE_CUMSUM(f64, double, double, ID, CAST_D, FADD, 0)
DEFINE_CUMSUM(i32, int32_t, int64_t, I64, CAST_I32, wadd, 0)
DEFINE_CUMSUM(i64, int64_t, int64_t, I64, CAST_I64, wadd, 0)
DEFINE_CUMSUM(prod_f32, float, float, ID, CAST_F, FMUL, 1)
DEFINE_CUMSUM(prod_f16, uint16_t, float, cpu_half_to_float, ST_HALF, FMUL, 1)
DEFINE_CUMSUM(prod_f64, double, double, ID, CAST_D, FMUL, 1)
DEFINE_CUMSUM(prod_i32, int32_t, int64_t, I64, CAST_I32, wmul, 1)
DEFINE_CUMSUM(prod_i64, int64_t, int64_t, I64, CAST_I64, wmul, 1)

static netrun_status cum_run(cpu_context *ctx, const netrun_kernel_args *args, int prod) {
    const char *op = prod ? "CumProd" : "CumSum";
    const netrun_axis_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    cpu_range_fn fn;
    switch (x->dtype) {
    case NETRUN_DTYPE_FLOAT: fn = prod ? range_cumsum_prod_f32 : range_cumsum_f32; break;
    case NETRUN_DTYPE_FLOAT16: fn = prod ? range_cumsum_prod_f16 : range_cumsum_f16; break;
    case NETRUN_DTYPE_DOUBLE: fn = prod ? range_cumsum_prod_f64 : range_cumsum_f64; break;
    case NETRUN_DTYPE_INT32: fn = prod ? range_cumsum_prod_i32 : range_cumsum_i32; break;
    case NETRUN_DTYPE_INT64: fn = prod ? range_cumsum_prod_i64 : range_cumsum_i64; break;
    default: return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "%s: dtype %d not supported", op, (int)x->dtype);
    }
    if (!p || p->axis < 0 || p->axis >= x->rank) return cpu_host->error(NETRUN_ERR_INTERNAL, "%s: bad params", op);
    cumsum_job j = {.x = x->data, .y = args->outputs[0].data, .exclusive = p->exclusive, .reverse = p->reverse};
    int64_t outer;
    split_axis(x, p->axis, &outer, &j.R, &j.inner);
    if (outer * j.inner * j.R == 0) return NETRUN_OK;
    j.nblk = (j.inner + BLK - 1) / BLK;
    cpu_parallel_for(ctx, outer * j.nblk, grain_for(j.R * (j.inner < BLK ? j.inner : BLK)), fn, &j);
    return NETRUN_OK;
}

static netrun_status run_cumsum(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return cum_run(ctx, args, 0);
}
static netrun_status run_cumprod(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return cum_run(ctx, args, 1);
}

#define B(t) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##t)
#define DT_MAIN (B(FLOAT) | B(FLOAT16) | B(DOUBLE) | B(INT32) | B(INT64))
#define DT_MINMAX (DT_MAIN | B(UINT8) | B(INT8))

const cpu_op cpu_ops_reduce[] = {
    {"ReduceSum", NULL, DT_MAIN, "", NULL, NULL, run_sum, NULL},
    {"ReduceMean", NULL, DT_MAIN, "", NULL, NULL, run_mean, NULL},
    {"ReduceMax", NULL, DT_MINMAX | B(BOOL), "", NULL, NULL, run_max, NULL},
    {"ReduceMin", NULL, DT_MINMAX | B(BOOL), "", NULL, NULL, run_min, NULL},
    {"ReduceProd", NULL, DT_MAIN, "", NULL, NULL, run_prod, NULL},
    {"ReduceL1", NULL, DT_MAIN, "", NULL, NULL, run_l1, NULL},
    {"ReduceL2", NULL, DT_MAIN, "", NULL, NULL, run_l2, NULL},
    {"ReduceLogSum", NULL, DT_MAIN, "", NULL, NULL, run_logsum, NULL},
    {"ReduceLogSumExp", NULL, DT_MAIN, "", NULL, NULL, run_lse, NULL},
    {"ReduceSumSquare", NULL, DT_MAIN, "", NULL, NULL, run_sumsq, NULL},
    {"ArgMax", NULL, DT_MINMAX, "", NULL, NULL, run_argmax, NULL},
    {"ArgMin", NULL, DT_MINMAX, "", NULL, NULL, run_argmin, NULL},
    {"TopK", NULL, DT_MINMAX | B(INT16) | B(UINT16) | B(UINT32) | B(UINT64) | B(BFLOAT16),
     "ties resolved to the lower index; output always sorted; 64-bit integers compared as double (exact to 2^53)",
     NULL, NULL, run_topk, NULL},
    {"CumSum", NULL, DT_MAIN, "", NULL, NULL, run_cumsum, NULL},
    {"CumProd", NULL, DT_MAIN, "", NULL, NULL, run_cumprod, NULL},
    {0},
};
