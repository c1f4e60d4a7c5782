/* Gelu, FastGelu, BiasGelu, QuickGelu and BiasAdd on host memory (float32, float16; math in float). */
#include <math.h>

#include "contrib.h"
#include "../common/dtype_convert.h"

float nrc_load(const void *p, int f16, size_t i) {
    return f16 ? nr_half_to_float(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

void nrc_store(void *p, int f16, size_t i, float v) {
    if (f16) ((uint16_t *)p)[i] = nr_float_to_half(v);
    else ((float *)p)[i] = v;
}

static float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static float gelu_tanh(float x) {
    const float c = 0.7978845608028654f, b = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(c * (x + b * x * x * x)));
}

netrun_status nrc_run_activation(nrc_op op, const void *params, const netrun_kernel_args *a) {
    const netrun_tensor *x = &a->inputs[0];
    netrun_tensor *y = &a->outputs[0];
    int f16 = x->dtype == NETRUN_DTYPE_FLOAT16;
    size_t es = f16 ? 2 : 4, n = x->nbytes / es;
    if (y->nbytes != x->nbytes)
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": output of %zu bytes for an input of %zu", y->nbytes,
                               x->nbytes);
    /* bias (BiasGelu, FastGelu) or bias and skip (BiasAdd) over the last dim */
    const netrun_tensor *bias = a->n_inputs > 1 && a->inputs[1].rank >= 0 ? &a->inputs[1] : NULL;
    const netrun_tensor *skip = op == NRC_BIAS_ADD ? &a->inputs[2] : NULL;
    size_t nb = bias ? bias->nbytes / es : 1;
    if (!nb || (bias && n % nb) || (skip && skip->nbytes != x->nbytes))
        return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": bias of %zu elements for an input of %zu", nb, n);
    float alpha = op == NRC_QUICK_GELU ? ((const nrc_quick_gelu_params *)params)->alpha : 0.0f;
    for (size_t i = 0; i < n; i++) {
        float v = nrc_load(x->data, f16, i);
        if (bias) v += nrc_load(bias->data, f16, i % nb);
        switch (op) {
        case NRC_GELU: case NRC_BIAS_GELU: v = gelu_erf(v); break;
        case NRC_FAST_GELU: v = gelu_tanh(v); break;
        case NRC_QUICK_GELU: v = v / (1.0f + expf(-alpha * v)); break;
        case NRC_BIAS_ADD: v += nrc_load(skip->data, f16, i); break;
        default: return nrc_host->error(NETRUN_ERR_INTERNAL, NRC_NAME ": op %d is not an activation", (int)op);
        }
        nrc_store(y->data, f16, i, v);
    }
    return NETRUN_OK;
}
