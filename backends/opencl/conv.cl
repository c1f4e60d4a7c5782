/* Convolution kernels: im2col, col2im (ConvTranspose) and a direct kernel (depthwise, or when im2col's
 * workspace does not fit the cap). 1-D and 2-D convolutions run as 3-D with leading spatial dims of 1.
 * Built with -DT=float or -DT=half -DIS_HALF (half is storage only). */
#ifdef IS_HALF
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#else
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

/* Must match conv_geom in conv.c (all cl_int: no padding differences between host and device). */
typedef struct {
    int C, M, group, Cg, Mg;
    int in[3], out[3], k[3], s[3], d[3], pb[3];
} conv_geom;

/* col[row, p] for one image n and group g: row = (c, kd, kh, kw) over Cg x K, p over the output positions. */
__kernel void im2col(__global const T *x, ulong xo, __global T *col, ulong co, conv_geom g, int n, int grp, ulong total) {
    size_t i = get_global_id(0);
    if (i >= total) return;
    ulong P = (ulong)g.out[0] * g.out[1] * g.out[2], Kp = (ulong)g.k[0] * g.k[1] * g.k[2];
    ulong row = i / P, p = i % P;
    int c = (int)(row / Kp), kk = (int)(row % Kp);
    int kw = kk % g.k[2], kh = (kk / g.k[2]) % g.k[1], kd = kk / (g.k[2] * g.k[1]);
    int ow = (int)(p % g.out[2]), oh = (int)((p / g.out[2]) % g.out[1]), od = (int)(p / ((ulong)g.out[2] * g.out[1]));
    int id = od * g.s[0] - g.pb[0] + kd * g.d[0];
    int ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
    int iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
    float v = 0.0f;
    if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2]) {
        ulong ch = (ulong)n * g.C + (ulong)grp * g.Cg + c;
        v = LOAD(x, xo + ((ch * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw);
    }
    STORE(col, co + i, v);
}

/* Direct convolution: y[n, m, o] = sum over the group's channels and the window (no bias: added after). */
__kernel void conv_direct(__global const T *x, ulong xo, __global const T *w, ulong wo, __global T *y, ulong yo,
                          conv_geom g, ulong total) {
    size_t i = get_global_id(0);
    if (i >= total) return;
    ulong P = (ulong)g.out[0] * g.out[1] * g.out[2];
    ulong p = i % P, nm = i / P;
    int m = (int)(nm % g.M), n = (int)(nm / g.M);
    int grp = m / g.Mg;
    int ow = (int)(p % g.out[2]), oh = (int)((p / g.out[2]) % g.out[1]), od = (int)(p / ((ulong)g.out[2] * g.out[1]));
    float acc = 0.0f;
    for (int c = 0; c < g.Cg; c++) {
        ulong ch = (ulong)n * g.C + (ulong)grp * g.Cg + c;
        ulong wbase = wo + ((ulong)m * g.Cg + c) * g.k[0] * g.k[1] * g.k[2];
        for (int kd = 0; kd < g.k[0]; kd++) {
            int id = od * g.s[0] - g.pb[0] + kd * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int kh = 0; kh < g.k[1]; kh++) {
                int ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                if (ih < 0 || ih >= g.in[1]) continue;
                ulong xrow = xo + ((ch * g.in[0] + id) * g.in[1] + ih) * g.in[2];
                ulong wrow = wbase + ((ulong)kd * g.k[1] + kh) * g.k[2];
                for (int kw = 0; kw < g.k[2]; kw++) {
                    int iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (iw < 0 || iw >= g.in[2]) continue;
                    acc += LOAD(x, xrow + iw) * LOAD(w, wrow + kw);
                }
            }
        }
    }
    STORE(y, yo + i, acc);
}

/* ConvTranspose, after col = W_g^T X_g (rows (m, kd, kh, kw) over Mg x K, columns the input positions): gather
 * y[n, grp*Mg + m, o] = sum of col over the (k, i) with o = i * s - pb + k * d. Here g.in is the ConvTranspose
 * input (X) spatial size and g.out the output's. */
__kernel void col2im(__global const T *col, ulong co, __global T *y, ulong yo, conv_geom g, int n, int grp, ulong total) {
    size_t i = get_global_id(0);
    if (i >= total) return;
    ulong P = (ulong)g.out[0] * g.out[1] * g.out[2], Pin = (ulong)g.in[0] * g.in[1] * g.in[2];
    ulong p = i % P;
    int m = (int)(i / P);
    int ow = (int)(p % g.out[2]), oh = (int)((p / g.out[2]) % g.out[1]), od = (int)(p / ((ulong)g.out[2] * g.out[1]));
    float acc = 0.0f;
    for (int kd = 0; kd < g.k[0]; kd++) {
        int td = od + g.pb[0] - kd * g.d[0];
        if (td < 0 || td % g.s[0]) continue;
        int id = td / g.s[0];
        if (id >= g.in[0]) continue;
        for (int kh = 0; kh < g.k[1]; kh++) {
            int th = oh + g.pb[1] - kh * g.d[1];
            if (th < 0 || th % g.s[1]) continue;
            int ih = th / g.s[1];
            if (ih >= g.in[1]) continue;
            for (int kw = 0; kw < g.k[2]; kw++) {
                int tw = ow + g.pb[2] - kw * g.d[2];
                if (tw < 0 || tw % g.s[2]) continue;
                int iw = tw / g.s[2];
                if (iw >= g.in[2]) continue;
                ulong row = ((ulong)m * g.k[0] + kd) * g.k[1] * g.k[2] + (ulong)kh * g.k[2] + kw;
                acc += LOAD(col, co + row * Pin + ((ulong)id * g.in[1] + ih) * g.in[2] + iw);
            }
        }
    }
    ulong ch = (ulong)n * g.M + (ulong)grp * g.Mg + m;
    STORE(y, yo + ch * P + p, acc);
}
