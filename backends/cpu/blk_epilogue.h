/* The epilogue of the AVX-512 register tiles on nChw16c Y (conv1x1_blk.c, conv_direct_blk.c): one 16-channel
 * vector of Y = act(acc + bias (+ Z)), Relu and Clip applied in registers; any other activation afterwards by
 * gu_act_n over the tile once stored (still in L1). */
#ifndef CPU_BLK_EPILOGUE_H
#define CPU_BLK_EPILOGUE_H

#include "cpu_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* 1 when blk_epilogue leaves the activation to gu_act_n. */
static inline int blk_act_after(const netrun_fused_activation *a) {
    return a->kind != NETRUN_ACT_NONE && a->kind != NETRUN_ACT_RELU && a->kind != NETRUN_ACT_CLIP;
}

/* acc + bias (+ the 16 floats at z unless NULL), then Relu or Clip. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 blk_epilogue(__m512 acc, __m512 bias,
                                                                                   const float *z,
                                                                                   const netrun_fused_activation *a) {
    __m512 v = _mm512_add_ps(acc, bias);
    if (z) v = _mm512_add_ps(v, _mm512_loadu_ps(z));
    if (a->kind == NETRUN_ACT_RELU) v = _mm512_max_ps(v, _mm512_setzero_ps());
    else if (a->kind == NETRUN_ACT_CLIP)
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(a->alpha)), _mm512_set1_ps(a->beta));
    return v;
}
#endif

#endif
