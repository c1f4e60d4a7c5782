/* Gelu, FastGelu, BiasGelu, QuickGelu and BiasAdd on host memory (float32, float16; math in float). */
#include <math.h>

#include "contrib.h"

/* erf as a rational function of x (odd degree 13 over even degree 8, on [-4, 4]; +-1 beyond), the approximation
 * Eigen and XLA use: within 5e-7 of erf, and free of library calls, so the loops below vectorise. */
static inline float erf_rational(float x) {
    x = x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x;
    const float a1 = -1.60960333262415e-02f, a3 = -2.95459980854025e-03f, a5 = -7.34990630326855e-04f,
                a7 = -5.69250639462346e-05f, a9 = -2.10102402082508e-06f, a11 = 2.77068142495902e-08f,
                a13 = -2.72614225801306e-10f;
    const float b0 = -1.42647390514189e-02f, b2 = -7.37332916720468e-03f, b4 = -1.68282697438203e-03f,
                b6 = -2.13374055278905e-04f, b8 = -1.45660718464996e-05f;
    float x2 = x * x;
    float p = ((((((a13 * x2 + a11) * x2 + a9) * x2 + a7) * x2 + a5) * x2 + a3) * x2 + a1) * x;
    float q = (((b8 * x2 + b6) * x2 + b4) * x2 + b2) * x2 + b0;
    return p / q;
}

static inline float gelu_erf(float x) { return 0.5f * x * (1.0f + erf_rational(x * 0.70710678118654752f)); }

/* the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static inline float gelu_tanh(float x) {
    const float c = 0.7978845608028654f, b = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(c * (x + b * x * x * x)));
}

static inline float activate(nrc_op op, float v, float alpha) {
    switch (op) {
    case NRC_GELU: case NRC_BIAS_GELU: return gelu_erf(v);
    case NRC_FAST_GELU: return gelu_tanh(v);
    case NRC_QUICK_GELU: return v / (1.0f + expf(-alpha * v));
    default: return v; /* BiasAdd: the adds are all */
    }
}

/* float32 loops compiled for AVX-512, AVX2+FMA and baseline (the loader picks, as in the CPU backend): one loop per
 * op and per bias/skip presence, so that each vectorises (Gelu and BiasGelu do; tanhf and expf stay scalar). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SIMD_F32 __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define SIMD_F32
#endif

#define ROWS(EXPR)                                                                                                \
    for (size_t r = 0; r < n; r += nb)                                                                            \
        for (size_t j = 0; j < nb; j++) y[r + j] = (EXPR);

SIMD_F32 static void activation_f32(nrc_op op, const float *x, const float *b, const float *sk, float *y, size_t n,
                                    size_t nb, float alpha) {
    switch (op) {
    case NRC_GELU: ROWS(gelu_erf(x[r + j])) break;
    case NRC_BIAS_GELU: ROWS(gelu_erf(x[r + j] + b[j])) break;
    case NRC_BIAS_ADD: ROWS(x[r + j] + b[j] + sk[r + j]) break;
    default:
        if (b) ROWS(activate(op, x[r + j] + b[j], alpha))
        else ROWS(activate(op, x[r + j], alpha))
    }
}
#undef ROWS

netrun_status nrc_run_activation(nrc_op op, const void *params, const netrun_kernel_args *a) {
    const netrun_tensor *x = &a->inputs[0];
    netrun_tensor *y = &a->outputs[0];
    int f16 = x->dtype == NETRUN_DTYPE_FLOAT16;
    size_t es = f16 ? 2 : 4, n = x->nbytes / es;
    if (y->nbytes != x->nbytes)
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": output of %zu bytes for an input of %zu", y->nbytes,
                               x->nbytes);
    /* bias (BiasGelu, FastGelu) or bias and skip (BiasAdd) over the last dim: rows of nb elements */
    const netrun_tensor *bias = a->n_inputs > 1 && a->inputs[1].rank >= 0 ? &a->inputs[1] : NULL;
    const netrun_tensor *skip = op == NRC_BIAS_ADD ? &a->inputs[2] : NULL;
    size_t nb = bias ? bias->nbytes / es : n;
    if (!n) return NETRUN_OK;
    if (!nb || n % nb || (skip && skip->nbytes != x->nbytes))
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": bias of %zu elements for an input of %zu", nb, n);
    float alpha = op == NRC_QUICK_GELU ? ((const nrc_quick_gelu_params *)params)->alpha : 0.0f;
    if (!f16) {
        activation_f32(op, x->data, bias ? bias->data : NULL, skip ? skip->data : NULL, y->data, n, nb, alpha);
        return NETRUN_OK;
    }
    for (size_t r = 0; r < n; r += nb)
        for (size_t j = 0; j < nb; j++) {
            float v = nrc_load(x->data, 1, r + j) + (bias ? nrc_load(bias->data, 1, j) : 0.0f) +
                      (skip ? nrc_load(skip->data, 1, r + j) : 0.0f);
            nrc_store(y->data, 1, r + j, activate(op, v, alpha));
        }
    return NETRUN_OK;
}
