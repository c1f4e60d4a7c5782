/* The CPU backend's vectorizable tanhf and erff (cpu_internal.h) against libm's double tanh and erf, over every
 * 61st float bit pattern (positive and negative) and the special values: error in units in the last place of the
 * float result, with erf's error near zero measured in absolute terms below 1e-6 (the bound keeps a wrong
 * coefficient from passing). NaN must stay NaN, infinities give +-1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_internal.h"

static double ulp_of(double v) {
    int e;
    frexp(v == 0 ? 1e-45 : v, &e);
    double u = ldexp(1.0, e - 24);
    return u < 1.4e-45 ? 1.4e-45 : u;
}

int main(void) {
    double worst_t = 0, worst_e = 0, worst_e_abs = 0;
    float at_t = 0, at_e = 0;
    int failed = 0;
    for (uint64_t b = 0; b < 0x80000000u; b += 127) {
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
    printf(failed ? "failed\n" : "all passed\n");
    return failed;
}
