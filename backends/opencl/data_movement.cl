/* OpenCL C 1.2: kernels that move elements without looking at them (Transpose, Slice, Expand, Tile,
 * Concat, Split, DepthToSpace, Pad, Gather*, Scatter*, Trilu, Where, fills). Built once per element size with
 * -DE=uchar|ushort|uint|ulong (see data_movement.c). Index tensors are int64 or int32
 * (IDX chosen per kernel by the suffix _i64 / _i32). Tensors are (buffer, offset in elements). */

#define PTR(type, p, off) ((p) + (off))
#define CPTR(type, p, off) ((p) + (off))

typedef struct nr_meta {
    long rank;
    long dims[8];
    long s0[8];
    long s1[8];
    long s2[8];
} nr_meta;

/* y[base_y + sum c_d * s2_d] = x[base_x + sum (c_d mod s1_d) * s0_d], c = flat index i over dims
 * (s1_d == 0: no modulo). Covers Transpose, Slice, Expand, Tile, Concat/Split pieces, DepthToSpace. */
__kernel void dm_copy_nd(__global const E *x, ulong xo, __global E *y, ulong yo, long n, long base_x, long base_y,
                         __constant const nr_meta *mp_) { const nr_meta m = *mp_;
    __global const E *px = CPTR(E, x, xo);
    __global E *py = PTR(E, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long r = i, ox = base_x, oy = base_y;
        for (int d = (int)m.rank - 1; d >= 0; d--) {
            long q = r / m.dims[d], c = r - q * m.dims[d];
            oy += c * m.s2[d];
            if (m.s1[d]) c %= m.s1[d];
            ox += c * m.s0[d];
            r = q;
        }
        py[oy] = px[ox];
    }
}

/* Where: y = c ? a : b over m (s0: cond, s1: a, s2: b). */
__kernel void dm_where(__global const uchar *c, ulong co, __global const E *a, ulong ao, __global const E *b,
                       ulong bo, __global E *y, ulong yo, long n, __constant const nr_meta *mp_) { const nr_meta m = *mp_;
    __global const uchar *pc = CPTR(uchar, c, co);
    __global const E *pa = CPTR(E, a, ao), *pb = CPTR(E, b, bo);
    __global E *py = PTR(E, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long r = i, oc = 0, oa = 0, ob = 0;
        for (int d = (int)m.rank - 1; d >= 0; d--) {
            long q = r / m.dims[d], k = r - q * m.dims[d];
            oc += k * m.s0[d];
            oa += k * m.s1[d];
            ob += k * m.s2[d];
            r = q;
        }
        py[i] = pc[oc] ? pa[oa] : pb[ob];
    }
}

/* Fill with a constant bit pattern (ConstantOfShape). */
__kernel void dm_fill(__global E *y, ulong yo, long n, ulong bits) {
    __global E *py = PTR(E, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) py[i] = (E)bits;
}

/* EyeLike: rows x cols, `one` on diagonal k, else zero. */
__kernel void dm_eye(__global E *y, ulong yo, long rows, long cols, long k, ulong one) {
    __global E *py = PTR(E, y, yo);
    long n = rows * cols;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long r = i / cols, c = i - r * cols;
        py[i] = c - r == k ? (E)one : (E)0;
    }
}

/* Trilu over the last two dims [rows, cols]: keep j - i >= k (upper) or j - i <= k (lower). */
__kernel void dm_trilu(__global const E *x, ulong xo, __global E *y, ulong yo, long n, long rows, long cols, long k,
                       int upper) {
    __global const E *px = CPTR(E, x, xo);
    __global E *py = PTR(E, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long c = i % cols, r = (i / cols) % rows;
        int keep = upper ? (c - r >= k) : (c - r <= k);
        py[i] = keep ? px[i] : (E)0;
    }
}

/* Pad: m.dims = output dims, m.s0 = input dims, m.s1 = pads_begin; mode as netrun_pad_mode. */
__kernel void dm_pad(__global const E *x, ulong xo, __global E *y, ulong yo, long n, int mode, ulong value_bits,
                     __constant const nr_meta *mp_) { const nr_meta m = *mp_;
    __global const E *px = CPTR(E, x, xo);
    __global E *py = PTR(E, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long r = i, off = 0, mul = 1;
        int outside = 0;
        for (int d = (int)m.rank - 1; d >= 0; d--) {
            long c = r % m.dims[d] - m.s1[d], len = m.s0[d];
            r /= m.dims[d];
            if (c < 0 || c >= len) {
                if (mode == 0 || len == 0) outside = 1;
                else if (mode == 2) c = c < 0 ? 0 : len - 1;                  /* edge */
                else if (mode == 3) c = ((c % len) + len) % len;              /* wrap */
                else if (len == 1) c = 0;
                else { /* reflect without repeating the edge */
                    long period = 2 * (len - 1);
                    c = ((c % period) + period) % period;
                    if (c >= len) c = period - c;
                }
            }
            off += c * mul;
            mul *= len;
        }
        py[i] = outside ? (E)value_bits : px[off];
    }
}

#define GATHER_KERNELS(SUF, IDX)                                                                              \
    /* Gather: y[o, j, in] = x[o, idx[j], in]. */                                                             \
    __kernel void dm_gather##SUF(__global const E *x, ulong xo, __global const IDX *idx, ulong io, __global E *y, \
                                 ulong yo, long n, long nidx, long axis_len, long inner, __global int *err) {   \
        __global const E *px = CPTR(E, x, xo);                                                                \
        __global const IDX *pi = CPTR(IDX, idx, io);                                                          \
        __global E *py = PTR(E, y, yo);                                                                       \
        for (long i = get_global_id(0); i < n; i += get_global_size(0)) {                                     \
            long in = i % inner, r = i / inner, j = r % nidx, o = r / nidx;                                   \
            long k = (long)pi[j];                                                                             \
            if (k < 0) k += axis_len;                                                                         \
            if (k < 0 || k >= axis_len) { *err = 1; py[i] = (E)0; continue; }                                 \
            py[i] = px[(o * axis_len + k) * inner + in];                                                      \
        }                                                                                                     \
    }                                                                                                         \
    /* GatherElements: m.dims = index dims, m.s0 = x strides. */                                              \
    __kernel void dm_gather_elements##SUF(__global const E *x, ulong xo, __global const IDX *idx, ulong io,     \
                                          __global E *y, ulong yo, long n, int axis, long axis_len, __constant const nr_meta *mp_,  \
                                          __global int *err) { const nr_meta m = *mp_;                                                \
        __global const E *px = CPTR(E, x, xo);                                                                \
        __global const IDX *pi = CPTR(IDX, idx, io);                                                          \
        __global E *py = PTR(E, y, yo);                                                                       \
        for (long i = get_global_id(0); i < n; i += get_global_size(0)) {                                     \
            long r = i, off = 0;                                                                              \
            for (int d = (int)m.rank - 1; d >= 0; d--) {                                                      \
                long c = r % m.dims[d];                                                                       \
                r /= m.dims[d];                                                                               \
                if (d == axis) {                                                                              \
                    c = (long)pi[i];                                                                          \
                    if (c < 0) c += axis_len;                                                                 \
                    if (c < 0 || c >= axis_len) { *err = 1; c = 0; }                                          \
                }                                                                                             \
                off += c * m.s0[d];                                                                           \
            }                                                                                                 \
            py[i] = px[off];                                                                                  \
        }                                                                                                     \
    }                                                                                                         \
    /* ScatterElements without reduction: y (a copy of data) at idx positions along axis = updates.           \
     * m.dims = update dims, m.s0 = y strides. */                                                             \
    __kernel void dm_scatter_elements##SUF(__global const IDX *idx, ulong io, __global const E *u, ulong uo,    \
                                           __global E *y, ulong yo, long n, int axis, long axis_len, __constant const nr_meta *mp_, \
                                           __global int *err) { const nr_meta m = *mp_;                                               \
        __global const IDX *pi = CPTR(IDX, idx, io);                                                          \
        __global const E *pu = CPTR(E, u, uo);                                                                \
        __global E *py = PTR(E, y, yo);                                                                       \
        for (long i = get_global_id(0); i < n; i += get_global_size(0)) {                                     \
            long r = i, off = 0;                                                                              \
            int bad = 0;                                                                                      \
            for (int d = (int)m.rank - 1; d >= 0; d--) {                                                      \
                long c = r % m.dims[d];                                                                       \
                r /= m.dims[d];                                                                               \
                if (d == axis) {                                                                              \
                    c = (long)pi[i];                                                                          \
                    if (c < 0) c += axis_len;                                                                 \
                    if (c < 0 || c >= axis_len) bad = 1;                                                      \
                }                                                                                             \
                off += c * m.s0[d];                                                                           \
            }                                                                                                 \
            if (bad) *err = 1;                                                                                \
            else py[off] = pu[i];                                                                             \
        }                                                                                                     \
    }                                                                                                         \
    /* GatherND: idx [..., q] over data dims after batch_dims. m.dims[0..q) = data dims indexed,              \
     * m.s0[0..q) = their strides; slice = elements copied per index tuple; bstride = data elements per batch \
     * entry; nper = index tuples per batch entry. */                                                         \
    __kernel void dm_gather_nd##SUF(__global const E *x, ulong xo, __global const IDX *idx, ulong io,           \
                                    __global E *y, ulong yo, long n, long q, long slice, long bstride,          \
                                    long nper, __constant const nr_meta *mp_, __global int *err) { const nr_meta m = *mp_;                                \
        __global const E *px = CPTR(E, x, xo);                                                                \
        __global const IDX *pi = CPTR(IDX, idx, io);                                                          \
        __global E *py = PTR(E, y, yo);                                                                       \
        for (long i = get_global_id(0); i < n; i += get_global_size(0)) {                                     \
            long t = i / slice, s = i - t * slice, off = (t / nper) * bstride;                                \
            for (long d = 0; d < q; d++) {                                                                    \
                long c = (long)pi[t * q + d];                                                                 \
                if (c < 0) c += m.dims[d];                                                                    \
                if (c < 0 || c >= m.dims[d]) { *err = 1; c = 0; }                                             \
                off += c * m.s0[d];                                                                           \
            }                                                                                                 \
            py[i] = px[off + s];                                                                              \
        }                                                                                                     \
    }                                                                                                         \
    /* ScatterND without reduction: one work-item per (tuple, element of slice); y is a copy of data. */      \
    __kernel void dm_scatter_nd##SUF(__global const IDX *idx, ulong io, __global const E *u, ulong uo,          \
                                     __global E *y, ulong yo, long n, long q, long slice, __constant const nr_meta *mp_,            \
                                     __global int *err) { const nr_meta m = *mp_;                                                     \
        __global const IDX *pi = CPTR(IDX, idx, io);                                                          \
        __global const E *pu = CPTR(E, u, uo);                                                                \
        __global E *py = PTR(E, y, yo);                                                                       \
        for (long i = get_global_id(0); i < n; i += get_global_size(0)) {                                     \
            long t = i / slice, s = i - t * slice, off = 0;                                                   \
            int bad = 0;                                                                                      \
            for (long d = 0; d < q; d++) {                                                                    \
                long c = (long)pi[t * q + d];                                                                 \
                if (c < 0) c += m.dims[d];                                                                    \
                if (c < 0 || c >= m.dims[d]) bad = 1;                                                         \
                off += c * m.s0[d];                                                                           \
            }                                                                                                 \
            if (bad) *err = 1;                                                                                \
            else py[off + s] = pu[i];                                                                         \
        }                                                                                                     \
    }

GATHER_KERNELS(_i64, long)
GATHER_KERNELS(_i32, int)

/* OneHot (int64 indices): y[o, j, in] = idx[o, in] (+depth when negative) == j ? on : off. */
__kernel void dm_onehot(__global const long *idx, ulong io, __global E *y, ulong yo, long n, long depth, long inner,
                        ulong on_bits, ulong off_bits) {
    __global const long *pi = CPTR(long, idx, io);
    __global E *py = PTR(E, y, yo);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long in = i % inner, r = i / inner, j = r % depth, o = r / depth;
        long k = pi[o * inner + in];
        if (k < 0) k += depth;
        py[i] = k == j ? (E)on_bits : (E)off_bits;
    }
}
