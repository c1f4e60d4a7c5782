/* The epilogue of the AVX-512 register tiles (conv1x1_blk.c, conv_direct_blk.c, conv_wino_blk.c,
 * conv_depthwise.c): one vector of Y = act(acc + bias (+ Z)), Relu, Clip, LeakyRelu, HardSwish and HardSigmoid
 * applied in registers; any other activation afterwards by gu_act_n over the tile once stored (still in L1).
 * HardSwish in registers instead of a second pass (and as oneDNN's post-op, conv_dnnl.c): MobileNetV3-small's
 * 18 convs with HardSwish at batch 8, 2 threads, 3.63 -> 2.60 ms. */
#ifndef CPU_BLK_EPILOGUE_H
#define CPU_BLK_EPILOGUE_H

#include "cpu_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* 1 when blk_act leaves the activation to gu_act_n. */
static inline int blk_act_after(const netrun_fused_activation *a) {
    return a->kind != NETRUN_ACT_NONE && a->kind != NETRUN_ACT_RELU && a->kind != NETRUN_ACT_CLIP &&
           a->kind != NETRUN_ACT_LEAKY_RELU && a->kind != NETRUN_ACT_HARD_SWISH && a->kind != NETRUN_ACT_HARD_SIGMOID;
}

/* The activations blk_act_after does not leave to gu_act_n, on one vector (gu_act's formulas). */
__attribute__((target("avx512f"), always_inline)) static inline __m512 blk_act(__m512 v,
                                                                              const netrun_fused_activation *a) {
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    switch (a->kind) {
    case NETRUN_ACT_RELU: return _mm512_max_ps(v, zero);
    case NETRUN_ACT_CLIP: return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(a->alpha)), _mm512_set1_ps(a->beta));
    case NETRUN_ACT_LEAKY_RELU:
        return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, _mm512_set1_ps(a->alpha));
    case NETRUN_ACT_HARD_SWISH: { /* x * clamp(x / 6 + 1 / 2, 0, 1) */
        __m512 t = _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.0f / 6.0f)), _mm512_set1_ps(0.5f));
        return _mm512_mul_ps(v, _mm512_min_ps(_mm512_max_ps(t, zero), one));
    }
    case NETRUN_ACT_HARD_SIGMOID: {
        __m512 t = _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(a->alpha)), _mm512_set1_ps(a->beta));
        return _mm512_min_ps(_mm512_max_ps(t, zero), one);
    }
    default: return v;
    }
}

/* acc + bias (+ the 16 floats at z unless NULL), then blk_act. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 blk_epilogue(__m512 acc, __m512 bias,
                                                                                   const float *z,
                                                                                   const netrun_fused_activation *a) {
    __m512 v = _mm512_add_ps(acc, bias);
    if (z) v = _mm512_add_ps(v, _mm512_loadu_ps(z));
    return blk_act(v, a);
}
#endif

#endif
