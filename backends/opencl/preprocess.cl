/* OpenCL C 1.2: ImagePreprocess (include/netrun_ops.h): uint8 NHWC frames to float32 (or, with -DOUT_HALF=1,
 * float16) NCHW. The host computes the source taps of every output row and column with the CPU kernel's code
 * (backends/common/image_preprocess.h): idx holds (i0, i1) pairs, rows first then columns, w their weights. One
 * work item per output pixel writes its three channels, combining the taps in the CPU kernel's order. */
#if OUT_HALF
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#define OUT_T half
#else
#define STORE(p, i, v) ((p)[i] = (v))
#define OUT_T float
#endif

__kernel void image_preprocess(__global const uchar *x, ulong xo, __global OUT_T *y, ulong yo, long n_pix,
                               __global const int *idx, __global const float *w, int in_h, int in_w, int ch, int out_h,
                               int out_w, int by0, int bx0, int by1, int bx1, int swap, float pad, float m0, float m1,
                               float m2, float k0, float k1, float k2) {
    long t = get_global_id(0);
    if (t >= n_pix) return;
    long hw = (long)out_h * out_w;
    long n = t / hw, r = t - n * hw;
    int i = (int)(r / out_w), j = (int)(r - (long)i * out_w);
    float v0 = pad, v1 = pad, v2 = pad;
    if (i >= by0 && i < by1 && j >= bx0 && j < bx1) {
        int y0 = idx[2 * i], y1 = idx[2 * i + 1], x0 = idx[2 * (out_h + j)], x1 = idx[2 * (out_h + j) + 1];
        float wy = w[i], wx = w[out_h + j];
        __global const uchar *f = x + xo + (ulong)n * in_h * in_w * ch;
        __global const uchar *a = f + ((ulong)y0 * in_w + x0) * ch, *b = f + ((ulong)y0 * in_w + x1) * ch;
        __global const uchar *c = f + ((ulong)y1 * in_w + x0) * ch, *d = f + ((ulong)y1 * in_w + x1) * ch;
        float v[3];
        for (int q = 0; q < 3; q++) {
            int s = swap ? 2 - q : q;
            float h0 = (float)a[s] * (1.0f - wx) + (float)b[s] * wx;
            float h1 = (float)c[s] * (1.0f - wx) + (float)d[s] * wx;
            v[q] = h0 * (1.0f - wy) + h1 * wy;
        }
        v0 = v[0], v1 = v[1], v2 = v[2];
    }
    ulong o = yo + (ulong)n * 3 * hw + r;
    STORE(y, o, (v0 - m0) * k0);
    STORE(y, o + hw, (v1 - m1) * k1);
    STORE(y, o + 2 * hw, (v2 - m2) * k2);
}
