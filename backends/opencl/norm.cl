/* Normalization kernels: BatchNormalization (inference), and rows normalized to mean 0 / variance 1
 * (LayerNormalization, InstanceNormalization: one work group per row, two-pass mean and variance in local
 * memory). -DT=float | -DT=half -DIS_HALF; arithmetic in float. */
#ifdef IS_HALF
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

/* y = (x - mean) * scale / sqrt(var + eps) + B, per channel ((i / plane) % c), or per activation (spatial=0:
 * parameters of c * plane values). */
__kernel void batchnorm(__global const T *x, ulong xo, __global T *y, ulong yo, __global const T *sc, ulong so,
                        __global const T *bi, ulong bo, __global const T *mu, ulong mo, __global const T *var, ulong vo,
                        ulong c, ulong plane, int per_act, float eps, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    ulong ch = (i / plane) % c;
    ulong pi = per_act ? ch * plane + i % plane : ch;
    float a = LOAD(sc, so + pi) / sqrt(LOAD(var, vo + pi) + eps);
    STORE(y, yo + i, (LOAD(x, xo + i) - LOAD(mu, mo + pi)) * a + LOAD(bi, bo + pi));
}

/* Row r of d elements: y = (x - mean) / sqrt(var + eps) * scale + bias. per_row (InstanceNorm): scale[r % c],
 * bias[r % c]; else (LayerNorm) scale[j % sn], bias[j % bn] (trailing-dims broadcast). mean / inv_std (float) are
 * written per row when asked. */
__kernel void rows_norm(__global const T *x, ulong xo, __global T *y, ulong yo, __global const T *sc, ulong so, ulong sn,
                        __global const T *bi, ulong bo, ulong bn, int has_bias, int per_row, ulong c, ulong d, float eps,
                        __global float *mean_out, ulong meo, int has_mean, __global float *inv_out, ulong io,
                        int has_inv, __local float *red) {
    size_t r = get_group_id(0), lane = get_local_id(0), nl = get_local_size(0);
    ulong base = (ulong)r * d;
    float s = 0.0f;
    for (ulong j = lane; j < d; j += nl) s += LOAD(x, xo + base + j);
    red[lane] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t t = nl / 2; t > 0; t >>= 1) {
        if (lane < t) red[lane] += red[lane + t];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float mean = d ? red[0] / (float)d : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    float q = 0.0f;
    for (ulong j = lane; j < d; j += nl) {
        float v = LOAD(x, xo + base + j) - mean;
        q += v * v;
    }
    red[lane] = q;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t t = nl / 2; t > 0; t >>= 1) {
        if (lane < t) red[lane] += red[lane + t];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / sqrt((d ? red[0] / (float)d : 0.0f) + eps);
    if (lane == 0) {
        if (has_mean) mean_out[meo + r] = mean;
        if (has_inv) inv_out[io + r] = inv;
    }
    float rs = 1.0f, rb = 0.0f;
    if (per_row) {
        rs = LOAD(sc, so + r % c);
        rb = LOAD(bi, bo + r % c);
    }
    for (ulong j = lane; j < d; j += nl) {
        float v = (LOAD(x, xo + base + j) - mean) * inv;
        if (per_row) v = v * rs + rb;
        else v = v * LOAD(sc, so + j % sn) + (has_bias ? LOAD(bi, bo + j % bn) : 0.0f);
        STORE(y, yo + base + j, v);
    }
}
