/* Pooling kernels. Built with -DT=float | -DT=half -DIS_HALF | -DT=char -DLOWEST=-128 | -DT=uchar -DLOWEST=0;
 * arithmetic in float. Semantics follow backends/cpu/pool.c: max ignores padded taps (first max wins, NaN
 * skipped); the average divides by the taps inside the input, or with count_include_pad by the taps inside
 * the padded extent; LpPool's padded taps add nothing. */
#ifdef IS_HALF
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define LOAD(p, i) ((float)(p)[i])
#define STORE(p, i, v) ((p)[i] = (T)(v))
#endif
#ifndef LOWEST
#define LOWEST (-FLT_MAX)
#endif

/* Must match pool_geom in pool.c. */
typedef struct {
    int in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int mode; /* 0 average, 1 max, 2 Lp */
    int count_include_pad, storage_order, lp;
} pool_geom;

__kernel void pool(__global const T *x, ulong xo, __global T *y, ulong yo, __global long *ind, ulong io, int has_ind,
                   pool_geom g, ulong total) {
    size_t i = get_global_id(0);
    if (i >= total) return;
    ulong in_size = (ulong)g.in[0] * g.in[1] * g.in[2], out_size = (ulong)g.out[0] * g.out[1] * g.out[2];
    ulong pl = i / out_size, oi = i % out_size;
    int ow = (int)(oi % g.out[2]), oh = (int)((oi / g.out[2]) % g.out[1]), od = (int)(oi / ((ulong)g.out[2] * g.out[1]));
    int d0 = od * g.s[0] - g.pb[0], h0 = oh * g.s[1] - g.pb[1], w0 = ow * g.s[2] - g.pb[2];
    ulong base = xo + pl * in_size;
    float best = LOWEST, sum = 0.0f;
    long best_i = -1;
    int cnt = 0;
    for (int kd = 0; kd < g.k[0]; kd++) {
        int id = d0 + kd * g.d[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int kh = 0; kh < g.k[1]; kh++) {
            int ih = h0 + kh * g.d[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            for (int kw = 0; kw < g.k[2]; kw++) {
                int iw = w0 + kw * g.d[2];
                if (iw < 0 || iw >= g.in[2]) continue;
                long xi = ((long)id * g.in[1] + ih) * g.in[2] + iw;
                float v = LOAD(x, base + xi);
                cnt++;
                if (g.mode == 1) {
                    if (v > best) {
                        best = v;
                        best_i = xi;
                    }
                } else if (g.mode == 2) {
                    float a = fabs(v);
                    sum += g.lp == 1 ? a : g.lp == 2 ? a * a : pow(a, (float)g.lp);
                } else {
                    sum += v;
                }
            }
        }
    }
    float r;
    if (g.mode == 1) {
        r = best;
        if (has_ind) {
            long bi = best_i < 0 ? 0 : best_i;
            if (g.storage_order) {
                long bw = bi % g.in[2], bh = (bi / g.in[2]) % g.in[1], bd = bi / ((long)g.in[2] * g.in[1]);
                bi = (bw * g.in[1] + bh) * g.in[0] + bd;
            }
            ind[io + i] = (long)pl * (long)in_size + bi;
        }
    } else if (g.mode == 2) {
        r = g.lp == 1 ? sum : g.lp == 2 ? sqrt(sum) : pow(sum, 1.0f / (float)g.lp);
    } else {
        int div = cnt;
        if (g.count_include_pad) {
            int start[3] = {d0, h0, w0};
            div = 1;
            for (int a = 0; a < 3; a++) {
                int c = 0, lo = -g.pb[a], hi = g.in[a] + g.pe[a];
                for (int k = 0; k < g.k[a]; k++) {
                    int p = start[a] + k * g.d[a];
                    if (p >= lo && p < hi) c++;
                }
                div *= c;
            }
        }
        r = div > 0 ? sum / (float)div : 0.0f;
    }
    STORE(y, yo + i, r);
}

/* Global average / max: one work group (LOCAL lanes, a power of two) per plane. */
__kernel void global_pool(__global const T *x, ulong xo, __global T *y, ulong yo, ulong plane, int is_max,
                          __local float *scratch) {
    size_t pl = get_group_id(0), lane = get_local_id(0), nl = get_local_size(0);
    ulong base = xo + pl * plane;
    float acc = is_max ? -INFINITY : 0.0f;
    for (ulong j = lane; j < plane; j += nl) {
        float v = LOAD(x, base + j);
        acc = is_max ? fmax(acc, v) : acc + v;
    }
    scratch[lane] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = nl / 2; s > 0; s >>= 1) {
        if (lane < s) scratch[lane] = is_max ? fmax(scratch[lane], scratch[lane + s]) : scratch[lane] + scratch[lane + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0) STORE(y, yo + pl, is_max ? scratch[0] : scratch[0] / (float)plane);
}
