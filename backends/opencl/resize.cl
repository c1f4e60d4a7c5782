/* OpenCL C 1.2: Resize / Upsample of netrun's OpenCL backend. The host builds, per dim, a table of source taps
 * (offsets in elements, -1 = outside for tf_crop_and_resize) and weights exactly as the CPU backend does
 * (resize.c); an output element sums over every combination of its dims' taps. Built either with -DE=<uint
 * type> (nearest: a copy by element size) or with the elementwise -D options (T, CT, ...: linear, cubic).
 * Tensors are (buffer, offset in elements) pairs. */
#ifdef E
#define T E
#define CT E
#define LD(p, i) ((p)[i])
#define ST(p, i, v) ((p)[i] = (v))
#define EXTRAP(v) (E)ext_bits
#else
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

#define EXTRAP(v) (CT)(v)
#endif

/* dims: output dims; s0: taps per output index of each dim; s1: where each dim's table starts. */
typedef struct nr_meta {
    long rank;
    long dims[8];
    long s0[8];
    long s1[8];
    long s2[8];
} nr_meta;

__kernel void rs_resize(__global const T *x, ulong xo, __global T *y, ulong yo, long n, __global const long *tidx,
                        __global const float *tw, float extrapolation, ulong ext_bits, __constant const nr_meta *mp_) { const nr_meta m = *mp_;
    __global const T *px = x + xo;
    __global T *py = y + yo;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long oc[8], r = i, combos = 1;
        int outside = 0;
        for (int d = (int)m.rank - 1; d >= 0; d--) {
            oc[d] = r % m.dims[d];
            r /= m.dims[d];
            if (tidx[m.s1[d] + oc[d] * m.s0[d]] < 0) outside = 1;
            combos *= m.s0[d];
        }
        if (outside) {
            ST(py, i, EXTRAP(extrapolation));
            continue;
        }
#ifdef E
        long off = 0;
        for (int d = 0; d < (int)m.rank; d++) off += tidx[m.s1[d] + oc[d] * m.s0[d]];
        py[i] = px[off];
#else
        CT acc = 0;
        for (long c = 0; c < combos; c++) {
            long q = c, off = 0;
            CT w = 1;
            for (int d = (int)m.rank - 1; d >= 0; d--) {
                long k = m.s0[d], j = q % k, t = m.s1[d] + oc[d] * k + j;
                q /= k;
                off += tidx[t];
                w *= (CT)tw[t];
            }
            acc += w * LD(px, off);
        }
        ST(py, i, acc);
#endif
    }
}
