/* OpenCL C 1.2: reductions of netrun's OpenCL backend (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/
 * LogSumExp over any set of axes, ArgMax/ArgMin). Built per dtype with the same -D options as elementwise.cl
 * (T, CT, IS_FLOAT, IS_HALF, IS_UNSIGNED, ES). Tensors are (buffer, offset in elements) pairs. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifndef IS_FLOAT
#define IS_FLOAT 0
#endif
#ifndef IS_HALF
#define IS_HALF 0
#endif
#ifndef IS_UNSIGNED
#define IS_UNSIGNED 0
#endif
#ifndef T2
#define T2 T
#define CT2 CT
#define T2_HALF IS_HALF
#endif
#ifndef T2_HALF
#define T2_HALF 0
#endif

#if IS_HALF
#define LD(p, i) vload_half((i), (p))
#define ST(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define LD(p, i) ((CT)(p)[i])
#define ST(p, i, v) ((p)[i] = (T)(v))
#endif
#if T2_HALF
#define LD2(p, i) vload_half((i), (p))
#else
#define LD2(p, i) ((CT2)(p)[i])
#endif

#define PTR(type, p, off) ((p) + (off))
#define CPTR(type, p, off) ((p) + (off))


/* Each output owns the input elements addressed by the kept dims (kd, ks: dims and input strides) and the
 * reduced dims (rd, rs); count = product of rd. All longs so that the host struct matches. */
typedef struct rd_geo {
    long nk, nr, count;
    long kd[8], ks[8], rd[8], rs[8];
} rd_geo;

inline long geo_off(long i, long n, const long *d, const long *s) {
    long off = 0;
    for (int k = (int)n - 1; k >= 0; k--) {
        long q = i / d[k];
        off += (i - q * d[k]) * s[k];
        i = q;
    }
    return off;
}

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LSE };

#if IS_FLOAT
#define LOWEST (CT)(-INFINITY)
#define HIGHEST (CT)(INFINITY)
#elif IS_UNSIGNED
#define LOWEST (CT)0
#define HIGHEST ((CT)ULONG_MAX > 0 ? (CT)ULONG_MAX : (CT)LONG_MAX) /* CT is long below 64-bit unsigned */
#else
#define LOWEST (CT)LONG_MIN
#define HIGHEST (CT)LONG_MAX
#endif

inline CT rd_init(int op) {
    return op == R_MAX || op == R_LSE ? LOWEST : op == R_MIN ? HIGHEST : op == R_PROD ? (CT)1 : (CT)0;
}

inline CT rd_map(int op, CT v) {
#if IS_FLOAT
    if (op == R_L1) return fabs(v);
#elif !IS_UNSIGNED
    if (op == R_L1) return v < 0 ? -v : v;
#endif
    if (op == R_L2 || op == R_SUMSQ) return v * v;
    return v;
}

inline CT rd_combine(int op, CT acc, CT v) {
    switch (op) {
#if IS_FLOAT
    case R_MAX: case R_LSE: return (isnan(v) || isnan(acc)) ? (CT)NAN : fmax(acc, v);
    case R_MIN: return (isnan(v) || isnan(acc)) ? (CT)NAN : fmin(acc, v);
#else
    case R_MAX: case R_LSE: return v > acc ? v : acc;
    case R_MIN: return v < acc ? v : acc;
#endif
    case R_PROD: return acc * v;
    default: return acc + v;
    }
}

/* Group-wide combine of one value per work-item (local size a power of two, or 1). Every barrier is reached by
 * every work-item, with no early return (PoCL miscompiles a return before a barrier, even a uniform one). */
inline CT group_combine(int op, CT v, __local CT *sh) {
    int lid = get_local_id(0), ls = get_local_size(0);
    sh[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = ls / 2; s > 0; s >>= 1) {
        if (lid < s) sh[lid] = rd_combine(op, sh[lid], sh[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    CT r = sh[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* A work-group (local size 1: a work-item) per output element; the group's items share the reduced
 * elements. Groups loop over outputs so that any global size works. */
__kernel void rd_reduce(__global const T *x, ulong xo, __global T *y, ulong yo, long nout, int op, rd_geo g,
                        __local CT *sh) {
    __global const T *px = x + xo;
    __global T *py = y + yo;
    int ls = get_local_size(0), lid = get_local_id(0);
    long step = ls == 1 ? (long)get_global_size(0) : (long)get_num_groups(0);
    for (long o = ls == 1 ? (long)get_global_id(0) : (long)get_group_id(0); o < nout; o += step) {
        __global const T *base = px + geo_off(o, g.nk, g.kd, g.ks);
        CT mx = 0;
        if (op == R_LSE) { /* max first, for a stable log-sum-exp */
            CT m = LOWEST;
            for (long r = lid; r < g.count; r += ls) m = rd_combine(R_MAX, m, LD(base, geo_off(r, g.nr, g.rd, g.rs)));
            mx = group_combine(R_MAX, m, sh);
#if IS_FLOAT
            if (isinf(mx)) mx = 0;
#endif
        }
        CT acc = op == R_LSE ? (CT)0 : rd_init(op);
        for (long r = lid; r < g.count; r += ls) {
            CT v = LD(base, geo_off(r, g.nr, g.rd, g.rs));
#if IS_FLOAT
            if (op == R_LSE) { acc += exp(v - mx); continue; }
#endif
            acc = rd_combine(op, acc, rd_map(op, v));
        }
        acc = group_combine(op == R_LSE ? R_SUM : op, acc, sh);
        if (lid == 0) {
            CT res = acc;
#if IS_FLOAT
            if (op == R_MEAN) res = acc / (CT)g.count;
            else if (op == R_L2) res = sqrt(acc);
            else if (op == R_LOGSUM) res = log(acc);
            else if (op == R_LSE) res = mx + log(acc);
#else
            if (op == R_MEAN) res = g.count ? acc / (CT)g.count : (CT)0;
#endif
            ST(py, o, res);
        }
    }
}

/* ArgMax / ArgMin along one axis: [outer, R, inner] -> [outer, inner] of int64. First (or last) best index. */
__kernel void rd_arg(__global const T *x, ulong xo, __global long *y, ulong yo, long outer, long R, long inner,
                     int is_max, int last) {
    __global const T *px = x + xo;
    long n = outer * inner;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long o = i / inner, in = i - o * inner;
        __global const T *base = px + o * R * inner + in;
        CT best = LD(base, 0);
        long bi = 0;
        for (long r = 1; r < R; r++) {
            CT v = LD(base, r * inner);
            int better = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
            if (better) { best = v; bi = r; }
        }
        y[yo + i] = bi;
    }
}

/* CumSum / CumProd along one axis: [outer, R, inner]; a work-item per (outer, inner) line walks the axis. */
__kernel void rd_cum(__global const T *x, ulong xo, __global T *y, ulong yo, long outer, long R, long inner, int prod,
                     int exclusive, int reverse) {
    __global const T *px = x + xo;
    __global T *py = y + yo;
    long n = outer * inner;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long o = i / inner, in = i - o * inner, base = o * R * inner + in;
        CT acc = prod ? (CT)1 : (CT)0;
        for (long rr = 0; rr < R; rr++) {
            long at = base + (reverse ? R - 1 - rr : rr) * inner;
            CT v = LD(px, at);
            if (exclusive) ST(py, at, acc);
#if IS_FLOAT
            acc = prod ? acc * v : acc + v;
#else
            acc = prod ? (CT)((ulong)acc * (ulong)v) : (CT)((ulong)acc + (ulong)v); /* wraps like the CPU's */
#endif
            if (!exclusive) ST(py, at, acc);
        }
    }
}

/* TopK along one axis ([outer, R, inner]): a work-item per input element counts the elements that rank before
 * it (better value, or equal value at a lower index; NaN ranks first, as in the CPU backend and onnxruntime)
 * and, when that rank is below k, writes itself at that position: sorted output without a sort. */
__kernel void rd_topk(__global const T *x, ulong xo, __global T *v, ulong vo, __global long *ix, ulong io, long outer,
                      long R, long inner, long k, int largest) {
    __global const T *px = x + xo;
    long n = outer * R * inner;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long in = i % inner, r = (i / inner) % R, o = i / (inner * R);
        __global const T *line = px + o * R * inner + in;
        CT a = LD(line, r * inner);
#if IS_FLOAT
        if (isnan(a)) a = largest ? (CT)INFINITY : (CT)(-INFINITY);
#endif
        long rank = 0;
        for (long j = 0; j < R && rank < k; j++) {
            CT b = LD(line, j * inner);
#if IS_FLOAT
            if (isnan(b)) b = largest ? (CT)INFINITY : (CT)(-INFINITY);
#endif
            int before = largest ? (b > a || (b == a && j < r)) : (b < a || (b == a && j < r));
            rank += before;
        }
        if (rank < k) {
            long at = (o * k + rank) * inner + in;
            ST(v + vo, at, LD(line, r * inner));
            ix[io + at] = r;
        }
    }
}
