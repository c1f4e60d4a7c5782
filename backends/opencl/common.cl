/* Kernels shared by the gemm, conv and norm families: fused bias + activation, Gemm's broadcast C.
 * Built with -DT=float or -DT=half -DIS_HALF; arithmetic is float, half is only the storage (vload_half and
 * vstore_half are core OpenCL, no extension needed for them). */
#ifdef IS_HALF
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

/* netrun_activation (include/netrun_ops.h) */
float activate(float v, int kind, float a, float b) {
    switch (kind) {
    case 1: return v > 0.0f ? v : 0.0f;
    case 2: return v >= 0.0f ? v : a * v;
    case 3: return fmin(fmax(v, a), b);
    case 4: return 1.0f / (1.0f + exp(-v));
    case 5: return fmax(0.0f, fmin(1.0f, a * v + b));
    case 6: return v * fmax(0.0f, fmin(1.0f, v / 6.0f + 0.5f));
    case 7: return tanh(v);
    case 8: return a * v + b;
    case 9: return v > a ? v : 0.0f;
    case 10: return a * tanh(b * v);
    case 11: return v >= 0.0f ? v : a * (exp(v) - 1.0f);
    case 12: return v / (1.0f + fabs(v));
    case 13: return v > 20.0f ? v : log1p(exp(v));
    case 14: { float z = a * v, e = exp(-fabs(z)), r = 1.0f / (1.0f + e); return v * (z >= 0.0f ? r : e * r); }
    default: return v;
    }
}

/* y[i] = act(y[i] + bias[(i / inner) % c] + z[i]) (bias, z optional) */
__kernel void bias_act(__global T *y, ulong yo, __global const T *bias, ulong bo, int has_bias, __global const T *z,
                       ulong zo, int has_z, ulong c, ulong inner, ulong n, int kind, float a, float b) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    float v = LOAD(y, yo + i);
    if (has_bias) v += LOAD(bias, bo + (i / inner) % c);
    if (has_z) v += LOAD(z, zo + i);
    STORE(y, yo + i, activate(v, kind, a, b));
}

/* y[m, n] = beta * c[m * sm + n * sn] over an M x N output (Gemm's C, broadcast). */
__kernel void gemm_c_init(__global T *y, ulong yo, __global const T *c, ulong co, ulong N, ulong sm, ulong sn,
                          ulong total, float beta) {
    size_t i = get_global_id(0);
    if (i >= total) return;
    ulong m = i / N, k = i % N;
    STORE(y, yo + i, beta * LOAD(c, co + m * sm + k * sn));
}
