/* The CPU backend's vectorizable math (cpu_internal.h) against libm's double functions, over every 127th float bit
 * pattern (positive and negative) and the special values: error in units in the last place of the float result
 * (subnormal results in units of the smallest subnormal), with erf's error near zero measured in absolute terms
 * below 1e-6 (the bound keeps a wrong coefficient from passing).
 *   tanhf, erff (portable and AVX-512): NaN stays NaN, infinities give +-1.
 *   expf (portable and AVX-512, and the Softmax form for x <= 0): exp(-inf) = 0, exp(+inf) = +inf, NaN stays NaN,
 *     results run into subnormals and overflow to +inf where exp does.
 *   logf (portable and AVX-512): log(+-0) = -inf, log(+inf) = +inf, x < 0 (-inf too) gives NaN, NaN stays NaN.
 *   sigmoid as Sigmoid computes it, 1 / (1 + exp(-x)): within 3 ulp (or 1e-38 absolute, where it is subnormal). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_internal.h"

static double ulp_of(double v) {
    int e;
    v = fabs(v);
    if (v < 0x1p-126) return 0x1p-149;
    frexp(v, &e);
    return ldexp(1.0, e - 24);
}

/* error of got against want in ulp of want's float; infinities and NaN must match exactly (1e9 otherwise) */
static double ulp_err(float got, double want) {
    if (isnan(want)) return isnan(got) ? 0 : 1e9;
    if (isinf(want) || fabs(want) > FLT_MAX) {
        float wf = (float)want;
        return got == wf ? 0 : 1e9;
    }
    if (isinf(got) || isnan(got)) return 1e9;
    return fabs((double)got - want) / ulp_of(want);
}

typedef struct worst {
    const char *name;
    double ulp, bound;
    float at;
} worst;
static void note(worst *w, float x, double e) {
    if (e > w->ulp) w->ulp = e, w->at = x;
}
static int report(const worst *w) {
    printf("%-18s worst %.2f ulp at %.9g (bound %.0f)\n", w->name, w->ulp, w->at, w->bound);
    if (w->ulp > w->bound) {
        printf("FAIL %s beyond %.0f ulp\n", w->name, w->bound);
        return 1;
    }
    return 0;
}

#define N16 16
static void exp_c(float *y, const float *x) {
    for (int i = 0; i < N16; i++) y[i] = cpu_expf(x[i]);
}
static void log_c(float *y, const float *x) {
    for (int i = 0; i < N16; i++) y[i] = cpu_logf(x[i]);
}
static void sig_c(float *y, const float *x) {
    for (int i = 0; i < N16; i++) y[i] = 1 / (1 + cpu_expf(-x[i]));
}
#ifdef CPU_HAVE_AVX512_MATH
CPU_AVX512_MATH static void exp_v(float *y, const float *x) { _mm512_storeu_ps(y, cpu_exp_ps512(_mm512_loadu_ps(x))); }
CPU_AVX512_MATH static void exp0_v(float *y, const float *x) {
    _mm512_storeu_ps(y, cpu_exp_ps512_(_mm512_loadu_ps(x), 0));
}
CPU_AVX512_MATH static void log_v(float *y, const float *x) { _mm512_storeu_ps(y, cpu_log_ps512(_mm512_loadu_ps(x))); }
CPU_AVX512_MATH static void sig_v(float *y, const float *x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 e = cpu_exp_ps512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_loadu_ps(x)));
    _mm512_storeu_ps(y, _mm512_div_ps(one, _mm512_add_ps(one, e)));
}

CPU_AVX512_MATH static void tanh_v(float *y, const float *x) { _mm512_storeu_ps(y, cpu_tanh_ps512(_mm512_loadu_ps(x))); }
CPU_AVX512_MATH static void erf_v(float *y, const float *x) { _mm512_storeu_ps(y, cpu_erf_ps512(_mm512_loadu_ps(x))); }

/* The AVX-512 tanh and erf over the grid the portable forms are checked on, with the same bounds. */
static int check_tanh_erf_v(void) {
    double worst_t = 0, worst_e = 0, worst_e_abs = 0;
    float at_t = 0, at_e = 0, xs[N16], ts[N16], es[N16];
    int k = 0, failed = 0;
    for (uint64_t b = 0; b < 0x80000000u; b += 61) {
        for (int s = 0; s < 2; s++) {
            uint32_t bits = (uint32_t)b | (s ? 0x80000000u : 0);
            memcpy(&xs[k], &bits, 4);
            if (!isnan(xs[k])) k++;
            if (k < N16) continue;
            k = 0;
            tanh_v(ts, xs);
            erf_v(es, xs);
            for (int j = 0; j < N16; j++) {
                double t = tanh((double)xs[j]), e = erf((double)xs[j]);
                double dt = fabs((double)ts[j] - t) / ulp_of(t), de_abs = fabs((double)es[j] - e);
                double de = de_abs / ulp_of(e);
                if (dt > worst_t) worst_t = dt, at_t = xs[j];
                if (fabs(e) >= 1e-6 && de > worst_e) worst_e = de, at_e = xs[j];
                if (de_abs > worst_e_abs) worst_e_abs = de_abs;
            }
        }
    }
    printf("tanh avx512: worst %.2f ulp at %.9g\nerf avx512: worst %.2f ulp at %.9g (where |erf| >= 1e-6), worst abs "
           "%.3g\n", worst_t, at_t, worst_e, at_e, worst_e_abs);
    if (worst_t > 8) printf("FAIL tanh avx512 beyond 8 ulp\n"), failed = 1;
    if (worst_e > 8 || worst_e_abs > 5e-7) printf("FAIL erf avx512 beyond 8 ulp or 5e-7 absolute\n"), failed = 1;
    const float sp[N16] = {INFINITY, -INFINITY, 0.0f, -0.0f, NAN, 1e-30f, -1e-30f, 7.90531111f, 4.0f, -4.0f};
    const float want_t[4] = {1.0f, -1.0f, 0.0f, -0.0f};
    tanh_v(ts, sp);
    erf_v(es, sp);
    for (int i = 0; i < 4; i++)
        if (ts[i] != want_t[i] || signbit(ts[i]) != signbit(want_t[i]) || es[i] != want_t[i] ||
            signbit(es[i]) != signbit(want_t[i]))
            printf("FAIL avx512 at %g: tanh %.9g erf %.9g\n", sp[i], ts[i], es[i]), failed = 1;
    if (!isnan(ts[4]) || !isnan(es[4])) printf("FAIL avx512 NaN not kept\n"), failed = 1;
    if (ts[5] != 1e-30f || ts[6] != -1e-30f) printf("FAIL avx512 tanh of tiny x is not x\n"), failed = 1;
    return failed;
}
#endif

enum { F_EXP, F_EXP0, F_LOG, F_SIG };
typedef void (*vec_fn)(float *, const float *);

/* one implementation over the float grid and the special values */
static int check(const char *name, vec_fn fn, int kind, double bound) {
    worst w = {name, 0, bound, 0};
    float xs[N16], ys[N16];
    int k = 0, failed = 0;
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f, 1e-45f, FLT_MIN,
                                     FLT_MAX, 88.72283f, 88.7228394f, 89.0f, -87.33654f, -103.972084f, -104.0f,
                                     -110.0f, 0.99999994f, 1.00000012f, 16.0f, 0.1f, 1e10f};
    const int nspec = (int)(sizeof specials / sizeof specials[0]);
    const uint64_t step = 127;
    for (uint64_t i = 0;; i++) {
        float x;
        int more = 1;
        if (i < (uint64_t)nspec) x = specials[i];
        else {
            uint64_t b = (i - nspec) / 2 * step;
            if (b >= 0x80000000u) more = 0;
            uint32_t bits = (uint32_t)b | (((i - nspec) & 1) ? 0x80000000u : 0);
            memcpy(&x, &bits, 4);
        }
        if (more) xs[k++] = x;
        if (k < N16 && more) continue;
        for (int j = k; j < N16; j++) xs[j] = 0;
        fn(ys, xs);
        for (int j = 0; j < k; j++) {
            const double xd = xs[j];
            double want;
            if (kind == F_EXP0 && !(xd <= 0)) continue; /* the Softmax form sees x - max <= 0 (or NaN) */
            if (kind == F_EXP || kind == F_EXP0) want = exp(xd);
            else if (kind == F_LOG) want = log(xd);
            else want = 1.0 / (1.0 + exp(-xd));
            double e = ulp_err(ys[j], want);
            if (kind == F_SIG && fabs(want) < 0x1p-126 && fabs((double)ys[j] - want) <= 1e-38) e = 0;
            if (e >= 1e9) {
                if (failed < 5) printf("FAIL %s(%.9g) = %.9g, want %.9g\n", name, xs[j], ys[j], want);
                failed = 1;
                continue;
            }
            note(&w, xs[j], e);
        }
        k = 0;
        if (!more) break;
    }
    return report(&w) | failed;
}

int main(void) {
    double worst_t = 0, worst_e = 0, worst_e_abs = 0;
    float at_t = 0, at_e = 0;
    int failed = 0;
    for (uint64_t b = 0; b < 0x80000000u; b += 61) {
        for (int s = 0; s < 2; s++) {
            uint32_t bits = (uint32_t)b | (s ? 0x80000000u : 0);
            float x;
            memcpy(&x, &bits, 4);
            if (isnan(x)) continue;
            double t = tanh((double)x), e = erf((double)x);
            double dt = fabs((double)cpu_tanhf(x) - t) / ulp_of(fabs(t));
            double de_abs = fabs((double)cpu_erff(x) - e);
            double de = de_abs / ulp_of(fabs(e));
            if (dt > worst_t) worst_t = dt, at_t = x;
            if (fabs(e) >= 1e-6 && de > worst_e) worst_e = de, at_e = x;
            if (de_abs > worst_e_abs) worst_e_abs = de_abs;
        }
    }
    printf("tanh: worst %.2f ulp at %.9g\nerf: worst %.2f ulp at %.9g (where |erf| >= 1e-6), worst abs %.3g\n", worst_t,
           at_t, worst_e, at_e, worst_e_abs);
    /* the bounds cpu_internal.h states (rational approximations: 5.6 and 6.6 ulp at worst, near +-1) */
    if (worst_t > 8) printf("FAIL tanh beyond 8 ulp\n"), failed = 1;
    if (worst_e > 8 || worst_e_abs > 5e-7) printf("FAIL erf beyond 8 ulp or 5e-7 absolute\n"), failed = 1;
    const float specials[] = {INFINITY, -INFINITY, 0.0f, -0.0f};
    const float want[] = {1.0f, -1.0f, 0.0f, -0.0f};
    for (int i = 0; i < 4; i++) {
        float t = cpu_tanhf(specials[i]), e = cpu_erff(specials[i]);
        if (t != want[i] || signbit(t) != signbit(want[i]) || e != want[i] || signbit(e) != signbit(want[i]))
            printf("FAIL at %g: tanh %g erf %g\n", specials[i], t, e), failed = 1;
    }
    if (!isnan(cpu_tanhf(NAN)) || !isnan(cpu_erff(NAN))) printf("FAIL NaN not kept\n"), failed = 1;

    /* the bounds cpu_internal.h states for exp and log */
    failed |= check("expf", exp_c, F_EXP, 2);
    failed |= check("logf", log_c, F_LOG, 2);
    failed |= check("sigmoid", sig_c, F_SIG, 3);
#ifdef CPU_HAVE_AVX512_MATH
    if (cpu_has_avx512f()) {
        failed |= check("exp avx512", exp_v, F_EXP, 2);
        failed |= check("exp avx512 x<=0", exp0_v, F_EXP0, 2);
        failed |= check("log avx512", log_v, F_LOG, 2);
        failed |= check("sigmoid avx512", sig_v, F_SIG, 3);
        failed |= check_tanh_erf_v();
    } else {
        printf("(no AVX-512F: the AVX-512 forms are not checked here)\n");
    }
#endif
    printf(failed ? "failed\n" : "all passed\n");
    return failed;
}
