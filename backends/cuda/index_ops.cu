/* CUDA kernels: index ops. ArgMax/ArgMin, TopK, CumSum/CumProd, OneHot, ReverseSequence, Compress, NonZero,
 * Unique, TensorScatter, TfIdfVectorizer, and the index-driven vision ops MaxUnpool, Col2Im, CenterCropPad. Values are compared in their own type (half
 * and bfloat16 as float); indices are int64 throughout. Compress, NonZero and Unique size their outputs at run time:
 * they read a count back to the host (one stream synchronization) and call args->alloc_output. */
#include <type_traits>

#include "cuda_kernels.cuh"

/* ---- element types: comparable value, conversions back ---- */

/* num<T>::c is the type T is compared and accumulated in (small ints widen to int so warp shuffles take them). */
template <typename T> struct num { typedef T c; static __device__ __forceinline__ T get(T v) { return v; } };
template <> struct num<int8_t> { typedef int c; static __device__ __forceinline__ int get(int8_t v) { return v; } };
template <> struct num<uint8_t> { typedef int c; static __device__ __forceinline__ int get(uint8_t v) { return v; } };
template <> struct num<int16_t> { typedef int c; static __device__ __forceinline__ int get(int16_t v) { return v; } };
template <> struct num<uint16_t> { typedef int c; static __device__ __forceinline__ int get(uint16_t v) { return v; } };
template <> struct num<__half> { typedef float c; static __device__ __forceinline__ float get(__half v) { return __half2float(v); } };
template <> struct num<cuda_bf16_bits> {
    typedef float c;
    static __device__ __forceinline__ float get(cuda_bf16_bits v) { return nr_bf16_to_float(v.b); }
};

/* Store a float/double/integer accumulator as T (round to nearest even for half and bfloat16, like the CPU). */
template <typename T> struct conv {
    template <typename A> static __device__ __forceinline__ T to(A v) { return (T)v; }
};
template <> struct conv<__half> {
    template <typename A> static __device__ __forceinline__ __half to(A v) { return __float2half_rn((float)v); }
};
template <> struct conv<cuda_bf16_bits> {
    template <typename A> static __device__ __forceinline__ cuda_bf16_bits to(A v) {
        cuda_bf16_bits r;
        r.b = nr_float_to_bf16((float)v);
        return r;
    }
};

/* Every numeric dtype, as T. */
#define DISPATCH_NUM(dt, what, CALL)                                                                             \
    switch (dt) {                                                                                                \
        DT_NUMERIC(cuda_bf16_bits, typedef E T; CALL)                                                            \
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: dtype %s", what, cuda_dtype_name(dt));    \
    }

#define NUM_DTYPES                                                                                               \
    (CUDA_DT(FLOAT) | CUDA_DT(DOUBLE) | CUDA_DT(FLOAT16) | CUDA_DT(BFLOAT16) | CUDA_DT(INT8) | CUDA_DT(UINT8) |   \
     CUDA_DT(INT16) | CUDA_DT(UINT16) | CUDA_DT(INT32) | CUDA_DT(UINT32) | CUDA_DT(INT64) | CUDA_DT(UINT64))
#define FLOAT4_DTYPES (CUDA_DT(FLOAT) | CUDA_DT(DOUBLE) | CUDA_DT(FLOAT16) | CUDA_DT(BFLOAT16))

static void split_axis(const netrun_tensor *x, int axis, int64_t *outer, int64_t *R, int64_t *inner) {
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) *inner *= x->dims[i];
    *R = x->dims[axis];
}

/* Invalid indices raise a device flag (cuda_flag, cuda_backend.c), read back after the launch. */

/* ---- ArgMax / ArgMin ---- */

/* NaN is ArgMax's and ArgMin's pick, the first (or with select_last_index the last) one, as numpy's argmax */
template <typename C> __device__ __forceinline__ bool arg_take(C v, C best, int is_max, int last) {
    bool vn = v != v, bn = best != best;
    if (bn) return last && vn;
    if (vn) return true;
    return is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
}

/* One thread per output, walking the axis (inner > 1: neighbouring threads read neighbouring elements). */
template <typename T>
__global__ void arg_k(const T *x, int64_t *y, int64_t n, int64_t R, int64_t inner, int is_max, int last) {
    typedef typename num<T>::c C;
    GRID_LOOP(i, n) {
        int64_t o = i / inner, in = i - o * inner;
        const T *p = x + o * R * inner + in;
        C best = num<T>::get(p[0]);
        int64_t bi = 0;
        for (int64_t r = 1; r < R; r++) {
            C v = num<T>::get(p[r * inner]);
            if (arg_take(v, best, is_max, last)) {
                best = v;
                bi = r;
            }
        }
        y[i] = bi;
    }
}

/* One warp per contiguous row (inner == 1): each lane scans a strided part, then (value, index) pairs merge,
 * ties going to the lower (or, with select_last_index, the higher) index. */
template <typename T> __global__ void arg_rows_k(const T *x, int64_t *y, int64_t rows, int64_t R, int is_max, int last) {
    typedef typename num<T>::c C;
    int lane = threadIdx.x & 31;
    int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nw = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t row = w; row < rows; row += nw) {
        const T *p = x + row * R;
        C best = num<T>::get(p[0]);
        long long bi = -1;
        for (int64_t r = lane; r < R; r += 32) {
            C v = num<T>::get(p[r]);
            if (bi < 0 || arg_take(v, best, is_max, last)) {
                best = v;
                bi = r;
            }
        }
        for (int off = 16; off > 0; off >>= 1) {
            C ov = __shfl_xor_sync(0xffffffffu, best, off);
            long long oi = __shfl_xor_sync(0xffffffffu, bi, off);
            bool take, on = ov != ov, bn = best != best;
            if (oi < 0) take = false;
            else if (bi < 0) take = true;
            else if (on || bn) take = on && bn ? (last ? oi > bi : oi < bi) : on;
            else if (ov == best) take = last ? oi > bi : oi < bi;
            else take = is_max ? ov > best : ov < best;
            if (take) {
                best = ov;
                bi = oi;
            }
        }
        if (lane == 0) y[row] = bi;
    }
}

static netrun_status arg_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_reduce_params *p = (const netrun_reduce_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    int is_max = (intptr_t)state == 1;
    if (!p || p->n_axes != 1 || p->axes[0] < 0 || p->axes[0] >= X->rank)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda ArgMax/ArgMin: bad params");
    int64_t outer, R, inner;
    split_axis(X, p->axes[0], &outer, &R, &inner);
    int64_t n = outer * inner;
    if (n == 0) return NETRUN_OK;
    if (R == 0) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ArgMax/ArgMin over an empty axis");
    int64_t *Y = (int64_t *)args->outputs[0].data;
    int last = p->select_last_index;
    if (inner == 1 && R >= 64) {
        DISPATCH_NUM(X->dtype, "ArgMax", (arg_rows_k<T><<<cuda_blocks(n * 32), CUDA_THREADS, 0, ctx->stream>>>(
                                             (const T *)X->data, Y, n, R, is_max, last)));
    } else {
        DISPATCH_NUM(X->dtype, "ArgMax", (arg_k<T><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                             (const T *)X->data, Y, n, R, inner, is_max, last)));
    }
    return cuda_check_launch("ArgMax/ArgMin");
}

static netrun_status arg_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(intptr_t)(!strcmp(node->op_type, "ArgMax") ? 1 : 2);
    return NETRUN_OK;
}

/* ---- TopK: each element's rank is the number of elements that go before it (better value, or an equal value
 * at a lower index, as the spec orders ties); ranks below k are written at their place. O(R) per element, with
 * an early stop once the rank reaches k. NaN ranks as the best value (like the CPU kernel and onnxruntime). ---- */

template <typename C> __device__ __forceinline__ C topk_key(C v, int largest) { return v; }
template <> __device__ __forceinline__ float topk_key<float>(float v, int largest) {
    return v != v ? (largest ? INFINITY : -INFINITY) : v;
}
template <> __device__ __forceinline__ double topk_key<double>(double v, int largest) {
    return v != v ? (largest ? (double)INFINITY : -(double)INFINITY) : v;
}

template <typename T>
__global__ void topk_k(const T *x, T *vals, int64_t *idx, int64_t n, int64_t R, int64_t inner, int64_t k, int largest) {
    typedef typename num<T>::c C;
    GRID_LOOP(i, n) {
        int64_t line = i / R, r = i - line * R;
        int64_t o = line / inner, in = line - o * inner;
        const T *p = x + o * R * inner + in;
        C a = topk_key(num<T>::get(p[r * inner]), largest);
        int64_t rank = 0;
        for (int64_t s = 0; s < R && rank < k; s++) {
            C b = topk_key(num<T>::get(p[s * inner]), largest);
            bool before = largest ? b > a : b < a;
            if (before || (b == a && s < r)) rank++;
        }
        if (rank < k) {
            int64_t oi = (o * k + rank) * inner + in;
            if (vals) vals[oi] = p[r * inner];
            if (idx) idx[oi] = r;
        }
    }
}

/* The same ranking for lines of 256+ with the line's keys in shared memory, spread over the whole GPU: a block
 * ranks TOPK_EPB elements of one line (grid: chunks x lines), TOPK_TPE threads per element each counting over a
 * strided quarter of the line, summed with shuffles. SSD-lite's 90 per-class TopKs (about 3,200 scores, k 300)
 * took 0.33-0.36 ms each both as one thread per element reading global memory and as one block per line (a warp
 * waits for its longest scan, and one SM did the whole O(R^2) count); a few microseconds this way. */
#define TOPK_TPE 4
#define TOPK_EPB 64
template <typename T>
__global__ void topk_line_k(const T *x, T *vals, int64_t *idx, int R, int64_t inner, int64_t k, int largest) {
    typedef typename num<T>::c C;
    extern __shared__ unsigned char topk_smem[];
    C *key = (C *)topk_smem;
    const int64_t line = blockIdx.y, o = line / inner, in = line - o * inner;
    const T *p = x + o * (int64_t)R * inner + in;
    for (int r = threadIdx.x; r < R; r += blockDim.x) key[r] = topk_key(num<T>::get(p[r * inner]), largest);
    __syncthreads();
    const int part = threadIdx.x % TOPK_TPE, r = blockIdx.x * TOPK_EPB + threadIdx.x / TOPK_TPE;
    int rank = 0;
    if (r < R) {
        const C a = key[r];
        for (int s = part; s < R; s += TOPK_TPE) {
            const C b = key[s];
            rank += (largest ? b > a : b < a) || (b == a && s < r);
        }
    }
    /* the TOPK_TPE lanes of an element are adjacent lanes of one warp */
    for (int off = TOPK_TPE / 2; off > 0; off /= 2) rank += __shfl_down_sync(0xffffffffu, rank, off, TOPK_TPE);
    if (part == 0 && r < R && rank < k) {
        int64_t oi = (o * k + rank) * inner + in;
        if (vals) vals[oi] = p[r * inner];
        if (idx) idx[oi] = r;
    }
}

/* Long lines with a small k (a detector's TopK over every anchor of a level: RetinaNet's 3.3 million scores, k
 * 1000), too long for shared memory and far too long to rank element by element: a radix select finds the k-th
 * best key (8 bits a pass, a histogram of the keys that match the digits found so far), a stable compaction takes
 * the keys better than it and, in index order, as many equal to it as k still needs, and one block sorts those k
 * by (key, index). Keys are the values' bits mapped so that unsigned order is the TopK order (NaN as infinity
 * like the kernels above, -0 as +0), so ties and NaN come out as they do from the ranking kernels. */
template <typename C> struct ordkey;
template <> struct ordkey<float> {
    typedef unsigned type;
    static __device__ __forceinline__ unsigned get(float v, int largest) {
        v = topk_key(v, largest);
        unsigned b = __float_as_uint(v == 0.0f ? 0.0f : v);
        b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
        return largest ? b : ~b;
    }
};
template <> struct ordkey<double> {
    typedef unsigned long long type;
    static __device__ __forceinline__ unsigned long long get(double v, int largest) {
        v = topk_key(v, largest);
        unsigned long long b = (unsigned long long)__double_as_longlong(v == 0.0 ? 0.0 : v);
        b = (b >> 63) ? ~b : (b | (1ull << 63));
        return largest ? b : ~b;
    }
};
template <typename S, typename U> struct ordkey_int {
    typedef U type;
    static __device__ __forceinline__ U get(S v, int largest) {
        U b = (U)v;
        if ((S)-1 < (S)0) b ^= (U)1 << (sizeof(U) * 8 - 1); /* signed: flip the sign bit */
        return largest ? b : (U)~b;
    }
};
template <> struct ordkey<int> : ordkey_int<int, unsigned> {};
template <> struct ordkey<unsigned> : ordkey_int<unsigned, unsigned> {};
template <> struct ordkey<long long> : ordkey_int<long long, unsigned long long> {};
template <> struct ordkey<long> : ordkey_int<long, unsigned long long> {};
template <> struct ordkey<unsigned long long> : ordkey_int<unsigned long long, unsigned long long> {};
template <> struct ordkey<unsigned long> : ordkey_int<unsigned long, unsigned long long> {};

template <typename T> struct topk_rs {
    typedef typename num<T>::c C;
    typedef typename ordkey<C>::type K;
    static __device__ __forceinline__ K key(const T *p, int64_t r, int64_t inner, int largest) {
        return ordkey<C>::get(num<T>::get(p[r * inner]), largest);
    }
};

#define TOPK_RS_MAX_K 2048 /* the final sort: one block, keys and indices in shared memory */
#define TOPK_RS_BLOCKS 1024 /* blocks a line is cut into for the compaction (the offsets scan is serial) */
template <typename K> struct topk_rs_line {
    K prefix, mask; /* the digits of the k-th best key found so far */
    unsigned long long need; /* how many keys with that prefix k still needs */
};

template <typename T, typename K>
__global__ void topk_rs_hist_k(const T *x, int64_t R, int64_t inner, int largest, const topk_rs_line<K> *st,
                               unsigned *hist, int shift) {
    __shared__ unsigned h[256];
    const int64_t line = blockIdx.y, o = line / inner, in = line - o * inner;
    const T *p = x + o * R * inner + in;
    const K prefix = st[line].prefix, mask = st[line].mask;
    h[threadIdx.x] = 0;
    __syncthreads();
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < R; r += (int64_t)gridDim.x * blockDim.x) {
        K k = topk_rs<T>::key(p, r, inner, largest);
        if ((k & mask) == prefix) atomicAdd(&h[(unsigned)(k >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (h[threadIdx.x]) atomicAdd(&hist[line * 256 + threadIdx.x], h[threadIdx.x]);
}

/* The digit at shift: the bin, from the best down, where the count reaches what is still needed. */
template <typename K> __global__ void topk_rs_pick_k(topk_rs_line<K> *st, unsigned *hist, int shift, int64_t k) {
    __shared__ unsigned h[256];
    const int64_t line = blockIdx.x;
    h[threadIdx.x] = hist[line * 256 + threadIdx.x];
    hist[line * 256 + threadIdx.x] = 0; /* ready for the next pass */
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long need = st[line].mask ? st[line].need : (unsigned long long)k, above = 0; /* first pass: k */
        int b = 255;
        for (; b > 0 && above + h[b] < need; b--) above += h[b];
        st[line].prefix |= (K)b << shift;
        st[line].mask |= (K)255 << shift;
        st[line].need = need - above;
    }
}

/* Per block of the line: how many keys beat the k-th best, how many equal it. */
template <typename T, typename K>
__global__ void topk_rs_count_k(const T *x, int64_t R, int64_t inner, int largest, int64_t chunk,
                                const topk_rs_line<K> *st, unsigned *gt, unsigned *eq) {
    __shared__ unsigned sg, se;
    const int64_t line = blockIdx.y, o = line / inner, in = line - o * inner;
    const T *p = x + o * R * inner + in;
    const K kth = st[line].prefix;
    if (threadIdx.x == 0) sg = se = 0;
    __syncthreads();
    unsigned g = 0, e = 0;
    const int64_t end = min(R, (int64_t)(blockIdx.x + 1) * chunk);
    for (int64_t r = (int64_t)blockIdx.x * chunk + threadIdx.x; r < end; r += blockDim.x) {
        K k = topk_rs<T>::key(p, r, inner, largest);
        g += k > kth;
        e += k == kth;
    }
    for (int off = 16; off > 0; off /= 2) {
        g += __shfl_down_sync(0xffffffffu, g, off);
        e += __shfl_down_sync(0xffffffffu, e, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&sg, g);
        atomicAdd(&se, e);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        gt[line * gridDim.x + blockIdx.x] = sg;
        eq[line * gridDim.x + blockIdx.x] = se;
    }
}

/* Exclusive offsets of the blocks' counts, in place (one thread a line: at most TOPK_RS_BLOCKS entries). */
__global__ void topk_rs_scan_k(unsigned *gt, unsigned *eq, int blocks) {
    const int64_t line = blockIdx.x;
    unsigned g = 0, e = 0;
    for (int b = 0; b < blocks; b++) {
        unsigned a = gt[line * blocks + b], c = eq[line * blocks + b];
        gt[line * blocks + b] = g;
        eq[line * blocks + b] = e;
        g += a;
        e += c;
    }
}

/* Write the chosen keys and indices in index order: the better ones from 0, the equal ones after them. */
template <typename T, typename K>
__global__ void topk_rs_write_k(const T *x, int64_t R, int64_t inner, int largest, int64_t chunk, int64_t k,
                                const topk_rs_line<K> *st, const unsigned *gt, const unsigned *eq, K *ckey,
                                int *cidx) {
    __shared__ unsigned wg[32], we[32];
    const int64_t line = blockIdx.y, o = line / inner, in = line - o * inner;
    const T *p = x + o * R * inner + in;
    const K kth = st[line].prefix;
    const unsigned long long need = st[line].need, n_gt = (unsigned long long)k - need;
    unsigned og = gt[line * gridDim.x + blockIdx.x], oe = eq[line * gridDim.x + blockIdx.x];
    K *kk = ckey + line * k;
    int *ki = cidx + line * k;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int64_t begin = (int64_t)blockIdx.x * chunk, end = min(R, begin + chunk);
    for (int64_t base = begin; base < end; base += blockDim.x) {
        const int64_t r = base + threadIdx.x;
        K key = 0;
        bool is_gt = false, is_eq = false;
        if (r < end) {
            key = topk_rs<T>::key(p, r, inner, largest);
            is_gt = key > kth;
            is_eq = key == kth;
        }
        const unsigned bg = __ballot_sync(0xffffffffu, is_gt), be = __ballot_sync(0xffffffffu, is_eq);
        if (lane == 0) {
            wg[warp] = __popc(bg);
            we[warp] = __popc(be);
        }
        __syncthreads();
        unsigned pg = og, pe = oe, tg = 0, te = 0;
        for (int w = 0; w < warps; w++) {
            if (w < warp) {
                pg += wg[w];
                pe += we[w];
            }
            tg += wg[w];
            te += we[w];
        }
        const unsigned below = (1u << lane) - 1u;
        pg += __popc(bg & below);
        pe += __popc(be & below);
        if (is_gt) {
            kk[pg] = key;
            ki[pg] = (int)r;
        } else if (is_eq && pe < need) {
            kk[n_gt + pe] = key;
            ki[n_gt + pe] = (int)r;
        }
        og += tg;
        oe += te;
        __syncthreads(); /* wg / we are rewritten next tile */
    }
}

/* Sort a line's k chosen keys (better key first, then lower index) with a bitonic sort in shared memory and
 * write the outputs. */
template <typename T, typename K>
__global__ void topk_rs_sort_k(const T *x, T *vals, int64_t *idx, int64_t R, int64_t inner, int64_t k,
                               const K *ckey, const int *cidx) {
    extern __shared__ unsigned char topk_rs_smem[];
    int n = 1;
    while (n < k) n *= 2;
    K *sk = (K *)topk_rs_smem;
    int *si = (int *)(sk + n);
    const int64_t line = blockIdx.x, o = line / inner, in = line - o * inner;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        sk[i] = i < k ? ckey[line * k + i] : (K)0;
        si[i] = i < k ? cidx[line * k + i] : INT_MAX;
    }
    __syncthreads();
    for (int size = 2; size <= n; size *= 2) {
        for (int stride = size / 2; stride > 0; stride /= 2) {
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                const int j = i ^ stride;
                if (j > i) {
                    /* "first" orders (key descending, index ascending); blocks alternate direction */
                    const bool j_first = sk[j] > sk[i] || (sk[j] == sk[i] && si[j] < si[i]);
                    const bool up = (i & size) == 0;
                    if (up == j_first) {
                        K tk = sk[i];
                        sk[i] = sk[j];
                        sk[j] = tk;
                        int ti = si[i];
                        si[i] = si[j];
                        si[j] = ti;
                    }
                }
            }
            __syncthreads();
        }
    }
    const T *p = x + o * R * inner + in;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
        const int64_t oi = (o * k + j) * inner + in;
        if (vals) vals[oi] = p[(int64_t)si[j] * inner];
        if (idx) idx[oi] = si[j];
    }
}

typedef struct topk_state {
    void *buf;
    size_t cap;
} topk_state;

static netrun_status topk_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    topk_state *st = (topk_state *)calloc(1, sizeof *st);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda TopK: out of memory");
    *state = st;
    return NETRUN_OK;
}

static void topk_destroy(cuda_context *ctx, void *state) {
    topk_state *st = (topk_state *)state;
    if (st) cuda_scratch_free(ctx, st->buf);
    free(st);
}

template <typename T>
static netrun_status topk_radix(cuda_context *ctx, topk_state *st, const T *x, T *vals, int64_t *idx, int64_t lines,
                                int64_t R, int64_t inner, int64_t k, int largest) {
    typedef typename topk_rs<T>::K K;
    const int blocks = (int)min((int64_t)TOPK_RS_BLOCKS, (R + 2047) / 2048);
    const int64_t chunk = (R + blocks - 1) / blocks;
    /* scratch: line states, histograms, block counts (2), chosen keys, chosen indices (256-byte aligned parts) */
    size_t part[6] = {sizeof(topk_rs_line<K>) * (size_t)lines, 256 * sizeof(unsigned) * (size_t)lines,
                      sizeof(unsigned) * (size_t)(lines * blocks), sizeof(unsigned) * (size_t)(lines * blocks),
                      sizeof(K) * (size_t)(lines * k), sizeof(int) * (size_t)(lines * k)};
    size_t off[6];
    char what[80];
    snprintf(what, sizeof what, "TopK (%lld lines of %lld)", (long long)lines, (long long)R);
    netrun_status ss = cuda_scratch_parts(ctx, &st->buf, &st->cap, part, 6, off, 0.5, what); /* 0.5: lines grow */
    if (ss != NETRUN_OK) return ss;
    char *b = (char *)st->buf;
    topk_rs_line<K> *ls = (topk_rs_line<K> *)(b + off[0]);
    unsigned *hist = (unsigned *)(b + off[1]), *gt = (unsigned *)(b + off[2]), *eq = (unsigned *)(b + off[3]);
    K *ckey = (K *)(b + off[4]);
    int *cidx = (int *)(b + off[5]);
    /* line states and histograms start at zero (no digit known; the first pick reads k as what is needed) */
    cudaError_t e = cudaMemsetAsync(b, 0, off[2], ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "TopK");
    const int hblocks = (int)min((int64_t)256, (R + 4095) / 4096);
    for (int shift = (int)sizeof(K) * 8 - 8; shift >= 0; shift -= 8) {
        topk_rs_hist_k<T, K><<<dim3((unsigned)hblocks, (unsigned)lines), 256, 0, ctx->stream>>>(
            x, R, inner, largest, ls, hist, shift);
        topk_rs_pick_k<K><<<(unsigned)lines, 256, 0, ctx->stream>>>(ls, hist, shift, k);
    }
    topk_rs_count_k<T, K><<<dim3((unsigned)blocks, (unsigned)lines), 256, 0, ctx->stream>>>(x, R, inner, largest, chunk,
                                                                                             ls, gt, eq);
    topk_rs_scan_k<<<(unsigned)lines, 1, 0, ctx->stream>>>(gt, eq, blocks);
    topk_rs_write_k<T, K><<<dim3((unsigned)blocks, (unsigned)lines), 256, 0, ctx->stream>>>(
        x, R, inner, largest, chunk, k, ls, gt, eq, ckey, cidx);
    int n = 1;
    while (n < k) n *= 2;
    topk_rs_sort_k<T, K><<<(unsigned)lines, 1024, (size_t)n * (sizeof(K) + sizeof(int)), ctx->stream>>>(
        x, vals, idx, R, inner, k, ckey, cidx);
    return NETRUN_OK;
}

static netrun_status topk_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_topk_params *p = (const netrun_topk_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    if (!p || p->axis < 0 || p->axis >= X->rank) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda TopK: bad params");
    int64_t outer, R, inner;
    split_axis(X, p->axis, &outer, &R, &inner);
    if (p->k < 0 || p->k > R)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda TopK: k %lld outside [0, %lld]", (long long)p->k,
                                (long long)R);
    int64_t n = outer * inner * R;
    if (p->k == 0 || n == 0) return NETRUN_OK;
    void *vals = args->n_outputs > 0 && args->outputs[0].rank >= 0 ? args->outputs[0].data : NULL;
    int64_t *idx = args->n_outputs > 1 && args->outputs[1].rank >= 0 ? (int64_t *)args->outputs[1].data : NULL;
    /* a line per block where its keys fit the default 48 KB of shared memory and lines are few enough that one
     * thread per element would leave the GPU mostly idle anyway */
    const int64_t lines = outer * inner;
    const size_t key_bytes = X->dtype == NETRUN_DTYPE_DOUBLE || X->dtype == NETRUN_DTYPE_INT64 ||
                                     X->dtype == NETRUN_DTYPE_UINT64 || X->dtype == NETRUN_DTYPE_UINT32
                                 ? 8 : 4;
    if (R >= 256 && (size_t)R * key_bytes <= 48 * 1024 && lines <= 65535) {
        const dim3 grid((unsigned)((R + TOPK_EPB - 1) / TOPK_EPB), (unsigned)lines);
        DISPATCH_NUM(X->dtype, "TopK", (topk_line_k<T><<<grid, TOPK_EPB * TOPK_TPE, (size_t)R * sizeof(typename num<T>::c),
                                                         ctx->stream>>>((const T *)X->data, (T *)vals, idx, (int)R, inner,
                                                                         p->k, p->largest)));
    } else if (p->k <= TOPK_RS_MAX_K && R <= INT_MAX && lines <= 65535 && state) {
        DISPATCH_NUM(X->dtype, "TopK", {
            netrun_status rs = topk_radix<T>(ctx, (topk_state *)state, (const T *)X->data, (T *)vals, idx, lines, R,
                                             inner, p->k, p->largest);
            if (rs != NETRUN_OK) return rs;
        });
    } else {
        DISPATCH_NUM(X->dtype, "TopK", (topk_k<T><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                           (const T *)X->data, (T *)vals, idx, n, R, inner, p->k, p->largest)));
    }
    return cuda_check_launch("TopK");
}

/* ---- CumSum / CumProd: one thread per line along the axis; integers wrap like the CPU kernel ---- */

template <typename T> struct cum_acc { typedef typename num<T>::c t; };
template <> struct cum_acc<int32_t> { typedef uint64_t t; };
template <> struct cum_acc<int64_t> { typedef uint64_t t; };

template <typename T>
__global__ void cum_k(const T *x, T *y, int64_t lines, int64_t R, int64_t inner, int excl, int rev, int prod) {
    typedef typename cum_acc<T>::t A;
    GRID_LOOP(i, lines) {
        int64_t o = i / inner, in = i - o * inner;
        const T *p = x + o * R * inner + in;
        T *q = y + o * R * inner + in;
        A acc = prod ? (A)1 : (A)0;
        for (int64_t rr = 0; rr < R; rr++) {
            int64_t r = rev ? R - 1 - rr : rr;
            A v = (A)num<T>::get(p[r * inner]);
            if (excl) {
                q[r * inner] = conv<T>::to(acc);
                acc = prod ? acc * v : acc + v;
            } else {
                acc = prod ? acc * v : acc + v;
                q[r * inner] = conv<T>::to(acc);
            }
        }
    }
}

static netrun_status cum_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_axis_params *p = (const netrun_axis_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    int prod = (intptr_t)state == 2;
    if (!p || p->axis < 0 || p->axis >= X->rank) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda CumSum: bad params");
    int64_t outer, R, inner;
    split_axis(X, p->axis, &outer, &R, &inner);
    int64_t lines = outer * inner;
    if (lines * R == 0) return NETRUN_OK;
    void *Y = args->outputs[0].data;
    unsigned b = cuda_blocks(lines);
    switch (X->dtype) {
    case NETRUN_DTYPE_FLOAT:
        cum_k<float><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y, lines, R, inner, p->exclusive, p->reverse, prod);
        break;
    case NETRUN_DTYPE_DOUBLE:
        cum_k<double><<<b, CUDA_THREADS, 0, ctx->stream>>>((const double *)X->data, (double *)Y, lines, R, inner, p->exclusive, p->reverse, prod);
        break;
    case NETRUN_DTYPE_FLOAT16:
        cum_k<__half><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y, lines, R, inner, p->exclusive, p->reverse, prod);
        break;
    case NETRUN_DTYPE_INT32:
        cum_k<int32_t><<<b, CUDA_THREADS, 0, ctx->stream>>>((const int32_t *)X->data, (int32_t *)Y, lines, R, inner, p->exclusive, p->reverse, prod);
        break;
    case NETRUN_DTYPE_INT64:
        cum_k<int64_t><<<b, CUDA_THREADS, 0, ctx->stream>>>((const int64_t *)X->data, (int64_t *)Y, lines, R, inner, p->exclusive, p->reverse, prod);
        break;
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda CumSum: dtype %s", cuda_dtype_name(X->dtype));
    }
    return cuda_check_launch(prod ? "CumProd" : "CumSum");
}

static netrun_status cum_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(intptr_t)(!strcmp(node->op_type, "CumProd") ? 2 : 1);
    return NETRUN_OK;
}

/* ---- OneHot: indices of any numeric type; a class matches only an equal integral value ---- */

template <typename T> __device__ __forceinline__ int64_t class_of(T v, int *ok) {
    if constexpr (std::is_same<T, uint64_t>::value) {
        *ok = v <= (uint64_t)INT64_MAX;
        return (int64_t)v;
    } else if constexpr (std::is_integral<T>::value) {
        *ok = 1;
        return (int64_t)v;
    } else {
        double d = (double)num<T>::get(v);
        *ok = d > -9.0e18 && d < 9.0e18 && d == floor(d);
        return *ok ? (int64_t)d : 0;
    }
}

template <typename I, typename E>
__global__ void onehot_k(const I *ind, const E *vals, E *y, int64_t n, int64_t depth, int64_t inner) {
    GRID_LOOP(i, n) {
        int64_t t = i / inner, in = i - t * inner, o = t / depth, d = t - o * depth;
        int ok;
        int64_t k = class_of(ind[o * inner + in], &ok);
        if (k < 0) k += depth;
        y[i] = ok && k == d ? vals[1] : vals[0];
    }
}

static int onehot_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs < 3 || !cuda_esize(node->inputs[2].dtype))
        return cuda_refuse(reason, size, "values dtype %s", node->n_inputs < 3 ? "absent" : cuda_dtype_name(node->inputs[2].dtype));
    return 1;
}

static netrun_status onehot_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_onehot_params *p = (const netrun_onehot_params *)args->params;
    const netrun_tensor *I = &args->inputs[0], *V = &args->inputs[2];
    netrun_tensor *Y = &args->outputs[0];
    if (!p || p->axis < 0 || p->axis >= Y->rank || Y->dims[p->axis] != p->depth || cuda_count(V) < 2)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda OneHot: bad params");
    int64_t n = cuda_count(Y), inner = 1;
    if (n == 0) return NETRUN_OK;
    for (int d = p->axis + 1; d < Y->rank; d++) inner *= Y->dims[d];
    unsigned b = cuda_blocks(n);
    size_t es = cuda_esize(V->dtype);
    DISPATCH_NUM(I->dtype, "OneHot",
                 DISPATCH_ES(es, (onehot_k<T, E><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                     (const T *)I->data, (const E *)V->data, (E *)Y->data, n, p->depth, inner))));
    return cuda_check_launch("OneHot");
}

/* ---- ReverseSequence (time and batch are dims 0 and 1 in some order) ---- */

template <typename E>
__global__ void revseq_k(const E *x, E *y, const int64_t *lens, int64_t n, int64_t T, int64_t B, int64_t inner,
                         int time_first, int *bad) {
    GRID_LOOP(i, n) {
        int64_t row = i / inner, in = i - row * inner;
        int64_t a = row / (time_first ? B : T), c = row - a * (time_first ? B : T);
        int64_t t = time_first ? a : c, b = time_first ? c : a;
        int64_t len = lens[b], src = t;
        if (len < 0 || len > T) *bad = 1;
        else if (t < len) src = len - 1 - t;
        int64_t srow = time_first ? src * B + b : b * T + src;
        y[i] = x[srow * inner + in];
    }
}

static int revseq_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    if (node->n_inputs < 2 || node->inputs[1].dtype != NETRUN_DTYPE_INT64) return cuda_refuse(reason, size, "sequence_lens not int64");
    return 1;
}

static netrun_status revseq_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_reverse_sequence_params *p = (const netrun_reverse_sequence_params *)args->params;
    const netrun_tensor *X = &args->inputs[0], *L = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    netrun_status st = cuda_refuse_capture(ctx, "ReverseSequence");
    if (st != NETRUN_OK) return st;
    if (!p || X->rank < 2 || (p->time_axis != 0 && p->time_axis != 1) || p->batch_axis != 1 - p->time_axis)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda ReverseSequence: bad params");
    int64_t n = cuda_count(Y), T = X->dims[p->time_axis], B = X->dims[p->batch_axis], inner = 1;
    if (n == 0) return NETRUN_OK;
    if (cuda_count(L) != B)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ReverseSequence: %lld sequence_lens for batch %lld",
                                (long long)cuda_count(L), (long long)B);
    for (int d = 2; d < X->rank; d++) inner *= X->dims[d];
    cuda_flag *f = (cuda_flag *)state;
    DISPATCH_ES(cuda_esize(X->dtype), (revseq_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (E *)Y->data, (const int64_t *)L->data, n, T, B, inner,
                                          p->time_axis == 0, f->bad)));
    if ((st = cuda_check_launch("ReverseSequence")) != NETRUN_OK) return st;
    return cuda_flag_check(ctx, f, "ReverseSequence", "a sequence_lens entry is outside [0, time steps]");
}

/* ---- Compress: the condition is read on the host (its length is small), the kept positions go to the device
 * workspace and a gather kernel copies the slices ---- */

typedef struct compress_state {
    int64_t clen;      /* condition length the workspace was sized for */
    uint8_t *cond;     /* host copy of the condition */
    int64_t *pos;      /* host list of kept positions */
} compress_state;

static int compress_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    if (node->n_inputs < 2 || node->inputs[1].rank != 1 || node->inputs[1].dims[0] < 0)
        return cuda_refuse(reason, size, "condition length unknown at placement (it sizes the workspace)");
    return 1;
}

static netrun_status compress_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    int64_t clen = node->inputs[1].rank == 1 ? node->inputs[1].dims[0] : -1;
    if (clen < 0) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Compress: condition length unknown");
    compress_state *s = (compress_state *)cuda_host->alloc(sizeof *s, 16);
    if (!s) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda Compress: out of memory");
    s->clen = clen;
    s->cond = (uint8_t *)cuda_host->alloc((size_t)clen + 1, 16);
    s->pos = (int64_t *)cuda_host->alloc(sizeof(int64_t) * (size_t)(clen + 1), 16);
    if (!s->cond || !s->pos) {
        if (s->cond) cuda_host->free(s->cond);
        if (s->pos) cuda_host->free(s->pos);
        cuda_host->free(s);
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda Compress: out of memory");
    }
    *state = s;
    *ws = sizeof(int64_t) * (size_t)(clen + 1);
    return NETRUN_OK;
}

static void compress_destroy(cuda_context *ctx, void *state) {
    compress_state *s = (compress_state *)state;
    if (!s) return;
    cuda_host->free(s->cond);
    cuda_host->free(s->pos);
    cuda_host->free(s);
}

template <typename E>
__global__ void compress_k(const E *x, E *y, const int64_t *pos, int64_t n, int64_t kept, int64_t len, int64_t inner) {
    GRID_LOOP(i, n) {
        int64_t row = i / inner, in = i - row * inner, o = row / kept, j = row - o * kept;
        y[i] = x[(o * len + pos[j]) * inner + in];
    }
}

static netrun_status compress_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_compress_params *p = (const netrun_compress_params *)args->params;
    compress_state *s = (compress_state *)state;
    const netrun_tensor *X = &args->inputs[0], *Cn = &args->inputs[1];
    netrun_status st = cuda_refuse_capture(ctx, "Compress");
    if (st != NETRUN_OK) return st;
    if (!p || (p->has_axis && (p->axis < 0 || p->axis >= X->rank)))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Compress: bad params");
    int64_t clen = cuda_count(Cn);
    if (clen > s->clen)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Compress: condition has %lld entries, the kernel "
                                "was created for %lld", (long long)clen, (long long)s->clen);
    int64_t outer = 1, len = cuda_count(X), inner = 1;
    if (p->has_axis) split_axis(X, p->axis, &outer, &len, &inner);
    if (clen > 0) {
        cudaError_t e = cudaMemcpyAsync(s->cond, Cn->data, (size_t)clen, cudaMemcpyDeviceToHost, ctx->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "Compress condition read");
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < clen; i++) {
        if (!s->cond[i]) continue;
        if (i >= len)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Compress: condition selects entry %lld but the "
                                    "input has %lld along the axis", (long long)i, (long long)len);
        s->pos[kept++] = i;
    }
    int64_t dims[NETRUN_MAX_RANK];
    int rank = 1;
    if (p->has_axis) {
        rank = X->rank;
        memcpy(dims, X->dims, sizeof(int64_t) * (size_t)rank);
        dims[p->axis] = kept;
    } else
        dims[0] = kept;
    if ((st = args->alloc_output(args->exec, 0, rank, dims)) != NETRUN_OK) return st;
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = outer * kept * inner;
    if (n == 0) return NETRUN_OK;
    int64_t *dpos = (int64_t *)cuda_workspace_address(args->workspace);
    if (!dpos || args->workspace_size < sizeof(int64_t) * (size_t)kept)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Compress: workspace too small");
    /* the stream is idle (synchronized above): a plain copy from pageable memory */
    cudaError_t e = cudaMemcpyAsync(dpos, s->pos, sizeof(int64_t) * (size_t)kept, cudaMemcpyHostToDevice, ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "Compress positions");
    DISPATCH_ES(cuda_esize(X->dtype), (compress_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (E *)Y->data, dpos, n, kept, len, inner)));
    if ((st = cuda_check_launch("Compress")) != NETRUN_OK) return st;
    /* s->pos is reused by the next run: make sure the copy has consumed it */
    e = cudaStreamSynchronize(ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "Compress");
}

/* ---- NonZero: a stream compaction of our own in two passes over a fixed grid of NZ_BLOCKS blocks, each owning
 * one contiguous chunk of the input: pass 1 counts each chunk's nonzeros, one block turns the counts into
 * offsets (and the total), the total comes back to the host to size the output, and pass 2 walks each chunk
 * again writing the coordinates of its nonzeros in order. The workspace is NZ_BLOCKS + 1 counts whatever the
 * input's size, so placement needs no shape. (Not CUB: its DeviceSelect pulled the C++ runtime into the
 * plugin, which must stay a C library: see docs/cuda.md.) ---- */

#define NZ_BLOCKS 1024
#define NZ_THREADS 256

/* Nonzero test on raw bits: floats ignore the sign bit (-0.0 is zero, NaN is nonzero); integers and bool whole. */
template <typename E> __device__ __forceinline__ bool nz_at(const E *x, E mask, int64_t i) { return (x[i] & mask) != 0; }

static __device__ __forceinline__ void nz_chunk(int64_t n, int64_t *lo, int64_t *hi) {
    int64_t per = (n + NZ_BLOCKS - 1) / NZ_BLOCKS;
    *lo = per * blockIdx.x < n ? per * blockIdx.x : n;
    *hi = *lo + per < n ? *lo + per : n;
}

template <typename E> __global__ void nz_count_k(const E *x, E mask, int64_t n, int64_t *counts) {
    int64_t lo, hi, c = 0;
    nz_chunk(n, &lo, &hi);
    for (int64_t i = lo + threadIdx.x; i < hi; i += NZ_THREADS) c += nz_at(x, mask, i);
    __shared__ int64_t part[NZ_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        int64_t t = 0;
        for (int w = 0; w < NZ_THREADS / 32; w++) t += part[w];
        counts[blockIdx.x] = t;
    }
}

/* counts[0..NZ_BLOCKS) -> exclusive offsets in place, the total in counts[NZ_BLOCKS]; one block of NZ_BLOCKS. */
__global__ void nz_offsets_k(int64_t *counts) {
    __shared__ int64_t v[NZ_BLOCKS];
    int t = threadIdx.x;
    v[t] = counts[t];
    __syncthreads();
    for (int d = 1; d < NZ_BLOCKS; d <<= 1) { /* Hillis-Steele inclusive scan */
        int64_t add = t >= d ? v[t - d] : 0;
        __syncthreads();
        v[t] += add;
        __syncthreads();
    }
    counts[t] = t ? v[t - 1] : 0;
    if (t == NZ_BLOCKS - 1) counts[NZ_BLOCKS] = v[t];
}

template <typename E>
__global__ void nz_write_k(const E *x, E mask, int64_t n, const int64_t *offsets, int64_t *y, int64_t nnz, shape8 xd) {
    int64_t lo, hi;
    nz_chunk(n, &lo, &hi);
    __shared__ int warp_sum[NZ_THREADS / 32];
    int64_t base = offsets[blockIdx.x];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int64_t t0 = lo; t0 < hi; t0 += NZ_THREADS) {
        int64_t i = t0 + threadIdx.x;
        bool f = i < hi && nz_at(x, mask, i);
        unsigned ballot = __ballot_sync(0xffffffffu, f);
        if (lane == 0) warp_sum[warp] = __popc(ballot);
        __syncthreads();
        int before = 0, tile = 0;
        for (int w = 0; w < NZ_THREADS / 32; w++) {
            before += w < warp ? warp_sum[w] : 0;
            tile += warp_sum[w];
        }
        if (f) {
            int64_t k = base + before + __popc(ballot & ((1u << lane) - 1u)), rem = i;
            if (xd.rank == 0) y[k] = 0;
            for (int d = xd.rank - 1; d >= 0; d--) {
                int64_t q = rem / xd.dims[d];
                y[d * nnz + k] = rem - q * xd.dims[d];
                rem = q;
            }
        }
        base += tile;
        __syncthreads(); /* warp_sum is rewritten by the next tile */
    }
}

static uint64_t nz_mask(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return 0x7fffffffu;
    case NETRUN_DTYPE_DOUBLE: return 0x7fffffffffffffffull;
    case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: return 0x7fffu;
    default: return ~(uint64_t)0;
    }
}

/* The element size as an unsigned type of that size: the test reads raw bits. */
#define NZ_DISPATCH(es, CALL)                                                                                    \
    switch (es) {                                                                                                \
    case 1: { typedef uint8_t E; CALL; } break;                                                                \
    case 2: { typedef uint16_t E; CALL; } break;                                                               \
    case 4: { typedef uint32_t E; CALL; } break;                                                               \
    case 8: { typedef uint64_t E; CALL; } break;                                                               \
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda NonZero: element size %zu", (size_t)(es));   \
    }

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

static int nonzero_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    return 1;
}

static netrun_status nonzero_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = NULL;
    *ws = sizeof(int64_t) * (NZ_BLOCKS + 1); /* the chunks' counts, then offsets, and the total */
    return NETRUN_OK;
}

static void nonzero_destroy(cuda_context *ctx, void *state) {}

static netrun_status nonzero_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_status st = cuda_refuse_capture(ctx, "NonZero");
    if (st != NETRUN_OK) return st;
    int64_t n = cuda_count(X), nnz = 0;
    int64_t *counts = (int64_t *)cuda_workspace_address(args->workspace);
    size_t es = cuda_esize(X->dtype);
    uint64_t mask = nz_mask(X->dtype);
    if (n > 0) {
        if (!counts) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda NonZero: no workspace");
        NZ_DISPATCH(es, (nz_count_k<E><<<NZ_BLOCKS, NZ_THREADS, 0, ctx->stream>>>((const E *)X->data, (E)mask, n, counts)));
        nz_offsets_k<<<1, NZ_BLOCKS, 0, ctx->stream>>>(counts);
        if ((st = cuda_check_launch("NonZero count")) != NETRUN_OK) return st;
        cudaError_t e = cudaMemcpyAsync(&nnz, counts + NZ_BLOCKS, sizeof nnz, cudaMemcpyDeviceToHost, ctx->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "NonZero count");
    }
    int rank = X->rank > 0 ? X->rank : 1;
    int64_t dims[2] = {rank, nnz};
    if ((st = args->alloc_output(args->exec, 0, 2, dims)) != NETRUN_OK) return st;
    if (nnz == 0) return NETRUN_OK;
    shape8 xd = make_shape(X->rank, X->dims);
    NZ_DISPATCH(es, (nz_write_k<E><<<NZ_BLOCKS, NZ_THREADS, 0, ctx->stream>>>((const E *)X->data, (E)mask, n, counts,
                                                                         (int64_t *)args->outputs[0].data, nnz, xd)));
    return cuda_check_launch("NonZero");
}

/* ---- Unique: slices (elements when there is no axis) compared lexicographically, floats by value with NaN
 * last and NaNs equal (the CPU kernel's order). Each slice finds its first equal slice and its count, the number
 * of distinct slices comes back to the host to size the outputs, then each first slice's output position is the
 * number of distinct slices before it (in value order, or in order of first occurrence when sorted=0). O(m^2)
 * slice compares for m slices: supports() leaves larger inputs to the CPU kernel (a sort-based one is future
 * work). ---- */

#define UNIQUE_MAX_SLICES 16384

template <typename C> __device__ __forceinline__ int cmp3(C x, C y) {
    if constexpr (std::is_floating_point<C>::value) {
        bool nx = x != x, ny = y != y;
        if (nx || ny) return nx && ny ? 0 : nx ? 1 : -1;
    }
    return x < y ? -1 : x > y ? 1 : 0;
}

struct uview {
    int64_t outer, m, inner;
};

template <typename T> __device__ int slice_cmp(const T *x, const uview &v, int64_t a, int64_t b) {
    for (int64_t o = 0; o < v.outer; o++)
        for (int64_t i = 0; i < v.inner; i++) {
            int64_t base = o * v.m * v.inner + i;
            int r = cmp3(num<T>::get(x[base + a * v.inner]), num<T>::get(x[base + b * v.inner]));
            if (r) return r;
        }
    return 0;
}

/* firstof[s]: the first slice equal to s; cnt[s]: how many equal it (kept for first slices); *u: distinct count */
template <typename T> __global__ void uniq_first_k(const T *x, uview v, int64_t *firstof, int64_t *cnt, unsigned long long *u) {
    GRID_LOOP(s, v.m) {
        int64_t f = s, c = 0;
        for (int64_t t = 0; t < v.m; t++)
            if (slice_cmp(x, v, t, s) == 0) {
                if (t < f) f = t;
                c++;
            }
        firstof[s] = f;
        cnt[s] = c;
        if (f == s) atomicAdd(u, 1ull);
    }
}

/* rank[s] for first slices; order[rank] = s */
template <typename T> __global__ void uniq_rank_k(const T *x, uview v, const int64_t *firstof, int64_t *rank, int64_t *order, int sorted) {
    GRID_LOOP(s, v.m) {
        if (firstof[s] != s) continue;
        int64_t r = 0;
        for (int64_t t = 0; t < v.m; t++)
            if (firstof[t] == t && t != s && (sorted ? slice_cmp(x, v, t, s) < 0 : t < s)) r++;
        rank[s] = r;
        order[r] = s;
    }
}

__global__ void uniq_small_outputs_k(int64_t m, int64_t u, const int64_t *firstof, const int64_t *cnt, const int64_t *rank,
                                     const int64_t *order, int64_t *indices, int64_t *inverse, int64_t *counts) {
    GRID_LOOP(i, m) {
        if (inverse) inverse[i] = rank[firstof[i]];
        if (i < u) {
            if (indices) indices[i] = order[i];
            if (counts) counts[i] = cnt[order[i]];
        }
    }
}

template <typename E> __global__ void uniq_y_k(const E *x, E *y, int64_t n, int64_t u, uview v, const int64_t *order) {
    GRID_LOOP(i, n) {
        int64_t in = i % v.inner, t = i / v.inner, r = t % u, o = t / u;
        y[i] = x[(o * v.m + order[r]) * v.inner + in];
    }
}

static void unique_view_of(const netrun_unique_params *p, int rank, const int64_t *dims, uview *v) {
    v->outer = v->inner = 1;
    v->m = 1;
    if (p->has_axis) {
        v->m = dims[p->axis];
        for (int d = 0; d < p->axis; d++) v->outer *= dims[d];
        for (int d = p->axis + 1; d < rank; d++) v->inner *= dims[d];
    } else
        for (int d = 0; d < rank; d++) v->m *= dims[d];
}

static int unique_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_unique_params *p = (const netrun_unique_params *)node->params;
    const netrun_value_desc *x = &node->inputs[0];
    if (!p || (p->has_axis && (p->axis < 0 || p->axis >= x->rank))) return cuda_refuse(reason, size, "no params");
    if (cuda_desc_count(x) < 0) return cuda_refuse(reason, size, "input shape unknown at placement (it sizes the workspace)");
    uview v;
    unique_view_of(p, x->rank, x->dims, &v);
    if (v.m > UNIQUE_MAX_SLICES)
        return cuda_refuse(reason, size, "%lld slices (the kernel is quadratic; at most %d)", (long long)v.m, UNIQUE_MAX_SLICES);
    return 1;
}

static netrun_status unique_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    const netrun_unique_params *p = (const netrun_unique_params *)node->params;
    const netrun_value_desc *x = &node->inputs[0];
    if (!p || cuda_desc_count(x) < 0) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Unique: input shape unknown");
    uview v;
    unique_view_of(p, x->rank, x->dims, &v);
    int64_t *m = (int64_t *)cuda_host->alloc(sizeof(int64_t), 16);
    if (!m) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda Unique: out of memory");
    *m = v.m;
    *state = m;
    /* [distinct count][firstof][cnt][rank][order], m entries each */
    *ws = 256 + 4 * align256(sizeof(int64_t) * (size_t)(v.m + 1));
    return NETRUN_OK;
}

static void unique_destroy(cuda_context *ctx, void *state) {
    if (state) cuda_host->free(state);
}

template <typename T> static void unique_launch_a(cuda_context *ctx, const void *x, uview v, int64_t *firstof, int64_t *cnt,
                                                  unsigned long long *u) {
    uniq_first_k<T><<<cuda_blocks(v.m), CUDA_THREADS, 0, ctx->stream>>>((const T *)x, v, firstof, cnt, u);
}
template <typename T> static void unique_launch_b(cuda_context *ctx, const void *x, uview v, const int64_t *firstof,
                                                  int64_t *rank, int64_t *order, int sorted) {
    uniq_rank_k<T><<<cuda_blocks(v.m), CUDA_THREADS, 0, ctx->stream>>>((const T *)x, v, firstof, rank, order, sorted);
}

static netrun_status unique_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_unique_params *p = (const netrun_unique_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_status st = cuda_refuse_capture(ctx, "Unique");
    if (st != NETRUN_OK) return st;
    if (!p || (p->has_axis && (p->axis < 0 || p->axis >= X->rank)))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Unique: bad params");
    uview v;
    unique_view_of(p, X->rank, X->dims, &v);
    if (v.m > *(int64_t *)state)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Unique: %lld slices, the kernel was created for %lld",
                                (long long)v.m, (long long)*(int64_t *)state);
    char *ws = (char *)cuda_workspace_address(args->workspace);
    size_t part = align256(sizeof(int64_t) * (size_t)(*(int64_t *)state + 1));
    if (!ws) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Unique: no workspace");
    unsigned long long *du = (unsigned long long *)ws;
    int64_t *firstof = (int64_t *)(ws + 256), *cnt = (int64_t *)(ws + 256 + part), *rank = (int64_t *)(ws + 256 + 2 * part),
            *order = (int64_t *)(ws + 256 + 3 * part);
    unsigned long long u = 0;
    netrun_dtype dt = X->dtype == NETRUN_DTYPE_BOOL ? NETRUN_DTYPE_UINT8 : X->dtype;
    if (v.m > 0) { /* (empty slices are all equal: the kernels then never read x) */
        cudaError_t e = cudaMemsetAsync(du, 0, sizeof *du, ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "Unique");
        DISPATCH_NUM(dt, "Unique", (unique_launch_a<T>(ctx, X->data, v, firstof, cnt, du)));
        DISPATCH_NUM(dt, "Unique", (unique_launch_b<T>(ctx, X->data, v, firstof, rank, order, p->sorted)));
        if ((st = cuda_check_launch("Unique")) != NETRUN_OK) return st;
        e = cudaMemcpyAsync(&u, du, sizeof u, cudaMemcpyDeviceToHost, ctx->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "Unique count read");
    }
    int64_t dims[NETRUN_MAX_RANK], du64 = (int64_t)u;
    int64_t *outs[4] = {NULL, NULL, NULL, NULL};
    for (int o = 0; o < 4 && o < args->n_outputs; o++) {
        if (!p->present[o]) continue;
        int rank_o = 1;
        if (o == 0 && p->has_axis) {
            rank_o = X->rank;
            memcpy(dims, X->dims, sizeof(int64_t) * (size_t)rank_o);
            dims[p->axis] = du64;
        } else
            dims[0] = o == 2 ? v.m : du64;
        if (!args->outputs[o].data || args->outputs[o].rank < 0)
            if ((st = args->alloc_output(args->exec, o, rank_o, dims)) != NETRUN_OK) return st;
        outs[o] = (int64_t *)args->outputs[o].data;
    }
    if (v.m == 0) return NETRUN_OK;
    if (outs[1] || outs[2] || outs[3])
        uniq_small_outputs_k<<<cuda_blocks(v.m), CUDA_THREADS, 0, ctx->stream>>>(v.m, du64, firstof, cnt, rank, order, outs[1],
                                                                                 outs[2], outs[3]);
    int64_t n = v.outer * du64 * v.inner;
    if (outs[0] && n > 0)
        DISPATCH_ES(cuda_esize(X->dtype), (uniq_y_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                              (const E *)X->data, (E *)outs[0], n, du64, v, order)));
    return cuda_check_launch("Unique");
}

/* ---- TensorScatter: y = past_cache with each batch's update rows written from write_indices[b] along axis
 * (wrapping in circular mode) ---- */

template <typename E>
__global__ void tscatter_k(const E *u, E *y, const int64_t *wi, int64_t n, int64_t seq, int64_t maxlen, int64_t inner,
                           int64_t per_batch, int circular, int *bad) {
    GRID_LOOP(i, n) {
        int64_t row = i / inner, in = i - row * inner, q = row / seq, s = row - q * seq;
        int64_t w = wi ? wi[q / per_batch] : 0;
        if (w < 0 || (!circular && w + seq > maxlen)) {
            *bad = 1;
            continue;
        }
        y[(q * maxlen + (w + s) % maxlen) * inner + in] = u[i];
    }
}

static int tscatter_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    return 1;
}

static netrun_status tscatter_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor_scatter_params *p = (const netrun_tensor_scatter_params *)args->params;
    const netrun_tensor *X = &args->inputs[0], *U = &args->inputs[1];
    const netrun_tensor *W = args->n_inputs > 2 && args->inputs[2].rank == 1 ? &args->inputs[2] : NULL;
    netrun_tensor *Y = &args->outputs[0];
    netrun_status st = cuda_refuse_capture(ctx, "TensorScatter");
    if (st != NETRUN_OK) return st;
    if (!p || p->axis < 1 || p->axis >= X->rank || U->rank != X->rank)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda TensorScatter: bad params");
    size_t es = cuda_esize(X->dtype), bytes = (size_t)cuda_count(X) * es;
    if (bytes && Y->data != X->data) {
        cudaError_t e = cudaMemcpyAsync(Y->data, X->data, bytes, cudaMemcpyDeviceToDevice, ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "TensorScatter copy");
    }
    int64_t prefix = 1, per_batch = 1, inner = 1, maxlen = X->dims[p->axis], seq = U->dims[p->axis];
    for (int d = 0; d < p->axis; d++) prefix *= X->dims[d];
    for (int d = 1; d < p->axis; d++) per_batch *= X->dims[d];
    for (int d = p->axis + 1; d < X->rank; d++) inner *= X->dims[d];
    int64_t n = prefix * seq * inner;
    if (n == 0) return NETRUN_OK;
    if (maxlen < 1) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda TensorScatter: empty cache axis");
    cuda_flag *f = (cuda_flag *)state;
    DISPATCH_ES(es, (tscatter_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                        (const E *)U->data, (E *)Y->data, W ? (const int64_t *)W->data : NULL, n, seq, maxlen, inner,
                        per_batch, p->circular, f->bad)));
    if ((st = cuda_check_launch("TensorScatter")) != NETRUN_OK) return st;
    return cuda_flag_check(ctx, f, "TensorScatter", "a write_indices entry with its updates does not fit the cache");
}

/* ---- TfIdfVectorizer (integer tokens): one thread per (row, start position) counts the pool n-grams that
 * start there (the CPU kernel's loops with the start fixed); counts are whole numbers, so float atomics add
 * them exactly (below 2^24 per cell); a second pass applies IDF / TFIDF weights ---- */

typedef struct tfidf_state {
    int64_t *grams;  /* device copies of the params' tables */
    int64_t *pool;
    float *weights;  /* NULL when the node has none */
} tfidf_state;

struct tfidf_args {
    int64_t min_gram, max_gram, max_skip, out, n_grams;
};

template <typename I>
__global__ void tfidf_count_k(const I *x, float *y, int64_t rows, int64_t C, tfidf_args a, const int64_t *grams,
                              const int64_t *pool) {
    GRID_LOOP(t, rows * C) {
        int64_t r = t / C, s0 = t - r * C, base = r * C, start_size = a.min_gram;
        float *f = y + r * a.out;
        for (int64_t d = 1; d - 1 <= a.max_skip; d++) {
            if (start_size > 1 && d * (start_size - 1) >= C) break;
            if (s0 + d * (start_size - 1) < C)
                for (int64_t n = start_size; n <= a.max_gram && s0 + d * (n - 1) < C; n++) {
                    int64_t col = -1;
                    for (int64_t g = 0; g < a.n_grams; g++) { /* the last equal n-gram of the pool wins */
                        const int64_t *gr = grams + 3 * g;
                        if (gr[0] != n) continue;
                        int64_t k = 0;
                        while (k < n && (int64_t)x[base + s0 + k * d] == pool[gr[1] + k]) k++;
                        if (k == n) col = gr[2];
                    }
                    if (col >= 0 && col < a.out) atomicAdd(f + col, 1.0f);
                }
            if (start_size == 1) { /* unigrams count once, not once per skip distance */
                start_size = 2;
                if (start_size > a.max_gram) break;
            }
        }
    }
}

__global__ void tfidf_weight_k(float *y, int64_t n, int64_t out, int mode, const float *w) {
    GRID_LOOP(i, n) {
        int64_t c = i % out;
        if (mode == 1) y[i] = y[i] > 0 ? (w ? w[c] : 1.0f) : 0.0f;
        else if (mode == 2 && w) y[i] *= w[c];
    }
}

static int tfidf_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = node->inputs[0].dtype;
    if (t != NETRUN_DTYPE_INT32 && t != NETRUN_DTYPE_INT64) return cuda_refuse(reason, size, "tokens %s", cuda_dtype_name(t));
    if (!node->params) return cuda_refuse(reason, size, "no params");
    return 1;
}

static void tfidf_destroy(cuda_context *ctx, void *state) {
    tfidf_state *s = (tfidf_state *)state;
    if (!s) return;
    if (s->grams) cudaFree(s->grams);
    if (s->pool) cudaFree(s->pool);
    if (s->weights) cudaFree(s->weights);
    cuda_host->free(s);
}

/* The n-gram tables and weights go to the device once. */
static netrun_status tfidf_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    const netrun_tfidf_params *p = (const netrun_tfidf_params *)node->params;
    if (!p || p->n_grams < 0 || p->output_size < 0) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda TfIdfVectorizer: bad params");
    tfidf_state *s = (tfidf_state *)cuda_host->alloc(sizeof *s, 16);
    if (!s) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda TfIdfVectorizer: out of memory");
    memset(s, 0, sizeof *s);
    int64_t pool_len = 1;
    for (int64_t g = 0; g < p->n_grams; g++)
        if (p->grams[3 * g + 1] + p->grams[3 * g] > pool_len) pool_len = p->grams[3 * g + 1] + p->grams[3 * g];
    size_t gb = sizeof(int64_t) * 3 * (size_t)(p->n_grams ? p->n_grams : 1), pb = sizeof(int64_t) * (size_t)pool_len;
    cudaError_t e = cudaMalloc((void **)&s->grams, gb);
    if (e == cudaSuccess) e = cudaMalloc((void **)&s->pool, pb);
    if (e == cudaSuccess && p->n_grams) e = cudaMemcpy(s->grams, p->grams, gb, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && p->n_grams && p->pool) e = cudaMemcpy(s->pool, p->pool, pb, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && p->weights && p->output_size > 0) {
        size_t wb = sizeof(float) * (size_t)p->output_size;
        e = cudaMalloc((void **)&s->weights, wb);
        if (e == cudaSuccess) e = cudaMemcpy(s->weights, p->weights, wb, cudaMemcpyHostToDevice);
    }
    if (e != cudaSuccess) {
        tfidf_destroy(ctx, s);
        return cuda_fail(e, "TfIdfVectorizer tables");
    }
    *state = s;
    return NETRUN_OK;
}

static netrun_status tfidf_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tfidf_params *p = (const netrun_tfidf_params *)args->params;
    tfidf_state *s = (tfidf_state *)state;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (!p || X->rank < 1 || X->rank > 2) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda TfIdfVectorizer: bad params");
    int64_t rows = X->rank == 2 ? X->dims[0] : 1, C = X->dims[X->rank - 1], out = p->output_size;
    if (rows * out == 0) return NETRUN_OK;
    cudaError_t e = cudaMemsetAsync(Y->data, 0, sizeof(float) * (size_t)(rows * out), ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "TfIdfVectorizer zero");
    tfidf_args a = {p->min_gram, p->max_gram, p->max_skip, out, p->n_grams};
    if (rows * C > 0) {
        if (X->dtype == NETRUN_DTYPE_INT32)
            tfidf_count_k<int32_t><<<cuda_blocks(rows * C), CUDA_THREADS, 0, ctx->stream>>>(
                (const int32_t *)X->data, (float *)Y->data, rows, C, a, s->grams, s->pool);
        else
            tfidf_count_k<int64_t><<<cuda_blocks(rows * C), CUDA_THREADS, 0, ctx->stream>>>(
                (const int64_t *)X->data, (float *)Y->data, rows, C, a, s->grams, s->pool);
    }
    if (p->mode == 1 || (p->mode == 2 && s->weights))
        tfidf_weight_k<<<cuda_blocks(rows * out), CUDA_THREADS, 0, ctx->stream>>>((float *)Y->data, rows * out, out,
                                                                                   p->mode, s->weights);
    return cuda_check_launch("TfIdfVectorizer");
}

/* ---- MaxUnpool: zero the output, then each input element goes where its index points ---- */

template <typename E>
__global__ void unpool_k(const E *x, const int64_t *ix, E *y, int64_t n, int64_t total, int64_t inf_sp,
                         int64_t out_sp, shape8 inferred, shape8 out_sp_dims, int *bad) {
    GRID_LOOP(e, n) {
        int64_t id = ix[e];
        if (id < 0 || id >= total) {
            *bad = 1;
            continue;
        }
        int64_t nc = id / inf_sp, rem = id - nc * inf_sp, off = 0, stride = 1;
        for (int d = inferred.rank - 1; d >= 0; d--) {
            int64_t q = rem / inferred.dims[d];
            off += (rem - q * inferred.dims[d]) * stride;
            rem = q;
            stride *= out_sp_dims.dims[d];
        }
        y[nc * out_sp + off] = x[e];
    }
}

static int unpool_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs < 2 || node->inputs[1].dtype != NETRUN_DTYPE_INT64) return cuda_refuse(reason, size, "indices not int64");
    return 1;
}

static netrun_status unpool_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_max_unpool_params *p = (const netrun_max_unpool_params *)args->params;
    const netrun_tensor *X = &args->inputs[0], *I = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    netrun_status st = cuda_refuse_capture(ctx, "MaxUnpool");
    if (st != NETRUN_OK) return st;
    if (!p || p->n_spatial < 1 || X->rank != p->n_spatial + 2 || Y->rank != X->rank || cuda_count(I) != cuda_count(X))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda MaxUnpool: bad params");
    cudaError_t e = cudaMemsetAsync(Y->data, 0, Y->nbytes, ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "MaxUnpool zero");
    int k = p->n_spatial;
    int64_t inf_sp = 1, out_sp = 1, n = cuda_count(X);
    for (int d = 0; d < k; d++) {
        inf_sp *= p->inferred[d];
        out_sp *= Y->dims[2 + d];
    }
    if (n == 0) return NETRUN_OK;
    int64_t total = X->dims[0] * X->dims[1] * inf_sp;
    shape8 inf = make_shape(k, p->inferred), osd = make_shape(k, Y->dims + 2);
    cuda_flag *f = (cuda_flag *)state;
    DISPATCH_ES(cuda_esize(X->dtype), (unpool_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (const int64_t *)I->data, (E *)Y->data, n, total, inf_sp,
                                          out_sp, inf, osd, f->bad)));
    if ((st = cuda_check_launch("MaxUnpool")) != NETRUN_OK) return st;
    return cuda_flag_check(ctx, f, "MaxUnpool", "an index is out of range");
}

/* ---- Col2Im: each image element sums the column entries that land on it (a gather: no atomics) ---- */

template <typename T>
__global__ void col2im_k(const T *x, T *y, int64_t n, int64_t C, int64_t kprod, int64_t L, int64_t img,
                         netrun_col2im_params p) {
    GRID_LOOP(i, n) {
        int64_t nc = i / img, pix = i - nc * img, nn = nc / C, c = nc - nn * C;
        int64_t coord[NETRUN_MAX_RANK];
        int64_t rem = pix;
        for (int d = p.n_spatial - 1; d >= 0; d--) {
            int64_t q = rem / p.image[d];
            coord[d] = rem - q * p.image[d];
            rem = q;
        }
        double acc = 0;
        const T *base = x + (nn * C + c) * kprod * L;
        for (int64_t kk = 0; kk < kprod; kk++) {
            int64_t kr = kk, l = 0, lmul = 1;
            bool ok = true;
            for (int d = p.n_spatial - 1; d >= 0 && ok; d--) {
                int64_t kq = kr / p.block[d], kpos = kr - kq * p.block[d];
                kr = kq;
                int64_t t = coord[d] + p.pads_begin[d] - kpos * p.dilations[d];
                if (t < 0 || t % p.strides[d]) ok = false;
                else {
                    int64_t b = t / p.strides[d];
                    if (b >= p.blocks[d]) ok = false;
                    l += b * lmul;
                    lmul *= p.blocks[d];
                }
            }
            if (ok) acc += (double)num<T>::get(base[kk * L + l]);
        }
        y[i] = conv<T>::to(acc);
    }
}

static netrun_status col2im_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_col2im_params *p = (const netrun_col2im_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (!p || X->rank != 3 || Y->rank != p->n_spatial + 2 || p->n_spatial < 1)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Col2Im: bad params");
    int64_t kprod = 1, img = 1, L = X->dims[2], C = Y->dims[1], n = cuda_count(Y);
    for (int d = 0; d < p->n_spatial; d++) {
        kprod *= p->block[d];
        img *= p->image[d];
        if (p->strides[d] < 1) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Col2Im: stride < 1");
    }
    if (n == 0) return NETRUN_OK;
    if (X->dims[1] != C * kprod) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Col2Im: bad input channels");
    unsigned b = cuda_blocks(n);
    switch (X->dtype) {
    case NETRUN_DTYPE_FLOAT: col2im_k<float><<<b, CUDA_THREADS, 0, ctx->stream>>>((const float *)X->data, (float *)Y->data, n, C, kprod, L, img, *p); break;
    case NETRUN_DTYPE_DOUBLE: col2im_k<double><<<b, CUDA_THREADS, 0, ctx->stream>>>((const double *)X->data, (double *)Y->data, n, C, kprod, L, img, *p); break;
    case NETRUN_DTYPE_FLOAT16: col2im_k<__half><<<b, CUDA_THREADS, 0, ctx->stream>>>((const __half *)X->data, (__half *)Y->data, n, C, kprod, L, img, *p); break;
    case NETRUN_DTYPE_BFLOAT16: col2im_k<cuda_bf16_bits><<<b, CUDA_THREADS, 0, ctx->stream>>>((const cuda_bf16_bits *)X->data, (cuda_bf16_bits *)Y->data, n, C, kprod, L, img, *p); break;
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Col2Im: dtype %s", cuda_dtype_name(X->dtype));
    }
    return cuda_check_launch("Col2Im");
}

/* ---- CenterCropPad: out[i] = in[i + offset] per axis, zero outside the input ---- */

template <typename E>
__global__ void ccp_k(const E *x, E *y, int64_t n, shape8 in, shape8 out, shape8 offset) {
    GRID_LOOP(i, n) {
        int64_t rem = i, src = 0, mul = 1;
        bool inside = true;
        for (int d = out.rank - 1; d >= 0; d--) {
            int64_t q = rem / out.dims[d], c = rem - q * out.dims[d] + offset.dims[d];
            rem = q;
            if (c < 0 || c >= in.dims[d]) inside = false;
            src += c * mul;
            mul *= in.dims[d];
        }
        y[i] = inside ? x[src] : (E)0;
    }
}

static netrun_status ccp_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_center_crop_pad_params *p = (const netrun_center_crop_pad_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (!p || p->rank != X->rank || Y->rank != X->rank)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda CenterCropPad: bad params");
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    shape8 in = make_shape(X->rank, X->dims), out = make_shape(Y->rank, Y->dims), off = make_shape(p->rank, p->offset);
    DISPATCH_ES(cuda_esize(X->dtype), (ccp_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (E *)Y->data, n, in, out, off)));
    return cuda_check_launch("CenterCropPad");
}

static int bytes_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    return 1;
}

#define ARG_DTYPES NUM_DTYPES
#define CUM_DTYPES (CUDA_DT(FLOAT) | CUDA_DT(DOUBLE) | CUDA_DT(FLOAT16) | CUDA_DT(INT32) | CUDA_DT(INT64))

extern "C" const cuda_op cuda_ops_index_ops[] = {
    {"ArgMax", ARG_DTYPES, "keepdims, select_last_index", NULL, arg_create, arg_run, NULL},
    {"ArgMin", ARG_DTYPES, "keepdims, select_last_index", NULL, arg_create, arg_run, NULL},
    {"TopK", NUM_DTYPES, "always sorted; lines of 256+ from shared memory, spread over blocks; longer lines by radix select for k up to 2048; O(axis length) per element beyond", NULL, topk_create, topk_run, topk_destroy},
    {"CumSum", CUM_DTYPES, "exclusive, reverse", NULL, cum_create, cum_run, NULL},
    {"CumProd", CUM_DTYPES, "exclusive, reverse", NULL, cum_create, cum_run, NULL},
    {"OneHot", NUM_DTYPES, "", onehot_supports, NULL, onehot_run, NULL},
    {"ReverseSequence", CUDA_ALL_DTYPES, "int64 sequence_lens", revseq_supports, cuda_flag_create, revseq_run, cuda_flag_destroy},
    {"Compress", CUDA_ALL_DTYPES, "condition length known at placement; reads the condition on the host",
     compress_supports, compress_create, compress_run, compress_destroy},
    {"NonZero", CUDA_ALL_DTYPES, "reads the count on the host", nonzero_supports,
     nonzero_create, nonzero_run, nonzero_destroy},
    {"Unique", CUDA_ALL_DTYPES, "input shape known at placement; at most 16384 slices (quadratic kernel)",
     unique_supports, unique_create, unique_run, unique_destroy},
    {"TensorScatter", CUDA_ALL_DTYPES, "linear and circular", tscatter_supports, cuda_flag_create, tscatter_run, cuda_flag_destroy},
    {"TfIdfVectorizer", CUDA_DT(INT32) | CUDA_DT(INT64), "integer tokens", tfidf_supports, tfidf_create, tfidf_run,
     tfidf_destroy},
    {"MaxUnpool", FLOAT4_DTYPES, "int64 indices", unpool_supports, cuda_flag_create, unpool_run, cuda_flag_destroy},
    {"Col2Im", FLOAT4_DTYPES, "", NULL, NULL, col2im_run, NULL},
    {"CenterCropPad", CUDA_ALL_DTYPES, "", bytes_supports, NULL, ccp_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
