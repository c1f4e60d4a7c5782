/* Softmax, LogSoftmax, Hardmax along one axis: rows of D elements with stride `inner`; one work group of LOCAL
 * lanes (a power of two) per row, reducing max and sum in local memory. -DT=float | -DT=half -DIS_HALF. */
#ifdef IS_HALF
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

/* b beats a for the maximum: NaN beats every number (a row holding NaN is all NaN, and Hardmax marks its first
 * NaN, as in the ONNX reference) */
#define GT(b, a) ((isnan(b) && !isnan(a)) || (b) > (a))
#define SAME(b, a) ((b) == (a) || (isnan(b) && isnan(a)))

/* kind: 0 softmax, 1 log-softmax, 2 hardmax (1 at the first maximum) */
__kernel void softmax_rows(__global const T *x, ulong xo, __global T *y, ulong yo, ulong D, ulong inner, int kind,
                           __local float *red, __local int *redi) {
    size_t row = get_group_id(0), lane = get_local_id(0), nl = get_local_size(0);
    ulong o = row / inner, in = row % inner;
    ulong base = o * D * inner + in;
    float m = -INFINITY;
    int mi = -1;
    for (ulong j = lane; j < D; j += nl) {
        float v = LOAD(x, xo + base + j * inner);
        if (mi < 0 || GT(v, m)) {
            m = v;
            mi = (int)j;
        }
    }
    red[lane] = m;
    redi[lane] = mi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = nl / 2; s > 0; s >>= 1) {
        if (lane < s) {
            float a = red[lane], b = red[lane + s];
            int ia = redi[lane], ib = redi[lane + s];
            /* larger wins; on ties the lower index (first occurrence) */
            if (ib >= 0 && (ia < 0 || GT(b, a) || (SAME(b, a) && ib < ia))) {
                red[lane] = b;
                redi[lane] = ib;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float mx = red[0];
    int arg = redi[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    /* no early exit for hardmax: every lane reaches every barrier (PoCL needs barriers out of divergent code) */
    float s = 0.0f;
    for (ulong j = lane; j < D; j += nl) s += exp(LOAD(x, xo + base + j * inner) - mx);
    red[lane] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t t = nl / 2; t > 0; t >>= 1) {
        if (lane < t) red[lane] += red[lane + t];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float sum = red[0];
    float lsum = log(sum);
    for (ulong j = lane; j < D; j += nl) {
        float v = LOAD(x, xo + base + j * inner) - mx;
        STORE(y, yo + base + j * inner, kind == 2 ? ((int)j == arg ? 1.0f : 0.0f) : kind == 1 ? v - lsum : exp(v) / sum);
    }
}
