/* Resize tap tables, shared by the host-side code of the CPU, OpenCL and CUDA plugins (header-only, C and C++:
 * plugins link no common library). For one dim: the source index and weight of every tap of every output index
 * (1 tap for nearest, 2 linear, 4 cubic), computed as onnxruntime does in float, and collapsed to 1 tap when
 * every output index takes one source with weight 1 (unscaled dims such as N and C). */
#ifndef NETRUN_RESIZE_TAPS_H
#define NETRUN_RESIZE_TAPS_H

#include <math.h>
#include <stdint.h>

#include "netrun_ops.h"

#define NR_RESIZE_MAX_TAPS 4

/* Source coordinate of output index x. */
static inline float nr_resize_coord(const netrun_resize_params *p, int d, float x, float in_n, float out_n) {
    float s = p->scale[d];
    switch (p->coord) {
    case NETRUN_COORD_ASYMMETRIC: return x / s;
    case NETRUN_COORD_PYTORCH_HALF_PIXEL: return out_n > 1 ? (x + 0.5f) / s - 0.5f : 0.0f;
    case NETRUN_COORD_TF_CROP_AND_RESIZE:
        return out_n > 1 ? p->roi_start[d] * (in_n - 1) + (x * (p->roi_end[d] - p->roi_start[d]) * (in_n - 1)) / (out_n - 1)
                         : 0.5f * (p->roi_start[d] + p->roi_end[d]) * (in_n - 1);
    case NETRUN_COORD_ALIGN_CORNERS: return out_n == 1 ? 0.0f : x * (in_n - 1) / (out_n - 1);
    case NETRUN_COORD_HALF_PIXEL_SYMMETRIC: {
        float adj = out_n / (s * in_n), center = in_n / 2, offset = center * (1 - adj);
        return offset + (x + 0.5f) / s - 0.5f;
    }
    case NETRUN_COORD_HALF_PIXEL:
    default: return (x + 0.5f) / s - 0.5f;
    }
}

static inline int64_t nr_resize_nearest(netrun_resize_nearest m, float x) {
    switch (m) {
    case NETRUN_NEAREST_ROUND_PREFER_CEIL: return (int64_t)roundf(x);
    case NETRUN_NEAREST_FLOOR: return (int64_t)floorf(x);
    case NETRUN_NEAREST_CEIL: return (int64_t)ceilf(x);
    case NETRUN_NEAREST_ROUND_PREFER_FLOOR:
    default:
        if (x == (float)(int64_t)x + 0.5f) return (int64_t)floorf(x);
        return (int64_t)roundf(x);
    }
}

static inline int64_t nr_resize_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Taps of dim d (in_n source, out_n output indices) into idx / w (room for out_n * NR_RESIZE_MAX_TAPS) and
 * outside (out_n flags: the output index lies outside the ROI of tf_crop_and_resize, so it takes the
 * extrapolation value). Indices are source positions along the dim (the caller scales them by its stride).
 * Returns the taps per output index after collapsing. */
static inline int nr_resize_taps(const netrun_resize_params *p, int d, int64_t in_n, int64_t out_n, int64_t *idx,
                                 float *w, unsigned char *outside) {
    int k = p->mode == NETRUN_RESIZE_NEAREST ? 1 : p->mode == NETRUN_RESIZE_LINEAR ? 2 : 4;
    int tf = p->coord == NETRUN_COORD_TF_CROP_AND_RESIZE;
    float A = p->cubic_coeff_a;
    for (int64_t o = 0; o < out_n; o++) {
        float x = nr_resize_coord(p, d, (float)o, (float)in_n, (float)out_n);
        int64_t *ix = idx + o * k;
        float *wo = w + o * k;
        outside[o] = tf && (x < 0 || x > (float)(in_n - 1));
        if (k == 1) {
            ix[0] = nr_resize_clamp(nr_resize_nearest(p->nearest, x), 0, in_n - 1);
            wo[0] = 1;
        } else if (k == 2) {
            float c = x < 0 ? 0 : x > (float)(in_n - 1) ? (float)(in_n - 1) : x;
            int64_t x1 = nr_resize_clamp((int64_t)c, 0, in_n - 1), x2 = nr_resize_clamp(x1 + 1, 0, in_n - 1);
            ix[0] = x1;
            ix[1] = x2;
            if (x1 == x2) wo[0] = wo[1] = 0.5f;
            else { wo[0] = fabsf(c - (float)x2); wo[1] = fabsf(c - (float)x1); }
        } else {
            float f = floorf(x), s = x - f;
            int64_t xi = (int64_t)f;
            wo[0] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
            wo[1] = ((A + 2) * s - (A + 3)) * s * s + 1;
            wo[2] = ((A + 2) * (1 - s) - (A + 3)) * (1 - s) * (1 - s) + 1;
            wo[3] = ((A * (2 - s) - 5 * A) * (2 - s) + 8 * A) * (2 - s) - 4 * A;
            float sum = 0;
            for (int j = 0; j < 4; j++) {
                int64_t src = xi - 1 + j;
                if (p->exclude_outside && (src < 0 || src >= in_n)) wo[j] = 0;
                sum += wo[j];
                ix[j] = nr_resize_clamp(src, 0, in_n - 1);
            }
            if (p->exclude_outside && sum != 0)
                for (int j = 0; j < 4; j++) wo[j] /= sum;
        }
    }
    /* one tap where every output index takes a single source with weight 1 (unscaled dims) */
    int single = k > 1;
    for (int64_t o = 0; single && o < out_n; o++) {
        int64_t src = -1;
        float sum = 0;
        for (int j = 0; j < k; j++) {
            float wj = w[o * k + j];
            if (wj == 0) continue;
            if (src >= 0 && idx[o * k + j] != src) { single = 0; break; }
            src = idx[o * k + j];
            sum += wj;
        }
        if (sum != 1.0f || src < 0) single = 0;
    }
    if (single) {
        for (int64_t o = 0; o < out_n; o++) {
            int64_t src = 0;
            for (int j = 0; j < k; j++)
                if (w[o * k + j] != 0) src = idx[o * k + j];
            idx[o] = src;
            w[o] = 1;
        }
        k = 1;
    }
    return k;
}

#endif
