/* 16 x 16 float transpose in AVX-512 registers: the step between NCHW rows of pixels and nChw16c pixels of 16
 * channels (the 1x1 kernel's plain-Y tiles, the layout reorders). Include where AVX-512 code is compiled with
 * target attributes (<immintrin.h> first). */
#ifndef NETRUN_CPU_AVX512_TRANSPOSE_H
#define NETRUN_CPU_AVX512_TRANSPOSE_H

#include <immintrin.h>

/* r[i] (16 lanes) := column i of the 16 x 16 matrix whose rows were r[0..15]. */
__attribute__((target("avx512f"), always_inline)) static inline void avx512_transpose16(__m512 *r) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
}

#endif
