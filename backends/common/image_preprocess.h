/* ImagePreprocess (netrun_ops.h): the source taps of one output row or column, shared by the CPU, CUDA and OpenCL
 * kernels so that they sample the frame at the same coordinates. cv2.resize's INTER_LINEAR: the source coordinate
 * is computed in double and rounded to float32 as OpenCV does, clamped to [0, n - 1]; INTER_NEAREST: floor. */
#ifndef NR_IMAGE_PREPROCESS_H
#define NR_IMAGE_PREPROCESS_H

#include <math.h>
#include <stdint.h>

#include "netrun_ops.h"

#ifdef __CUDACC__
#define NR_PREP_HD __host__ __device__ __forceinline__
#else
#define NR_PREP_HD static inline
#endif

typedef struct nr_prep_tap {
    int64_t i0, i1; /* the two source pixels (equal at the edges and for nearest) */
    float w;        /* weight of i1; i0 takes 1 - w */
} nr_prep_tap;

/* Output index i along an axis of `n` source pixels, with the axis's step and offset (params' step_y/off_y...). */
NR_PREP_HD nr_prep_tap nr_prep_tap_at(int64_t i, double step, double off, int64_t n, int nearest) {
    nr_prep_tap t;
    if (nearest) {
        int64_t s = (int64_t)floor(((double)i + off) * step);
        s = s < 0 ? 0 : s > n - 1 ? n - 1 : s;
        t.i0 = t.i1 = s;
        t.w = 0.0f;
        return t;
    }
    float f = (float)(((double)i + off + 0.5) * step - 0.5);
    int64_t s = (int64_t)floorf(f);
    float w = f - (float)s;
    if (s < 0) s = 0, w = 0.0f;
    if (s >= n - 1) s = n - 1, w = 0.0f;
    t.i0 = s;
    t.i1 = s + 1 < n ? s + 1 : s;
    t.w = w;
    return t;
}

/* The bilinear value of four source pixels, in the order OpenCV's float path combines them (rows, then columns). */
NR_PREP_HD float nr_prep_lerp2(float p00, float p01, float p10, float p11, float wy, float wx) {
    float h0 = p00 * (1.0f - wx) + p01 * wx;
    float h1 = p10 * (1.0f - wx) + p11 * wx;
    return h0 * (1.0f - wy) + h1 * wy;
}

#endif
