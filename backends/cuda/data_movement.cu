/* CUDA kernels: data movement. Transpose, Concat / Split (2-D strided copies), Slice, Gather,
 * GatherElements, GatherND, ScatterElements / Scatter / ScatterND, Pad (constant / reflect / edge / wrap),
 * DepthToSpace / SpaceToDepth. These move elements by size, so every fixed-size dtype works; Pad converts its fill
 * value per dtype, the scatter reductions compute in the dtype. */
#include <type_traits>

#include "cuda_kernels.cuh"

/* ---- Transpose ----
 * The permutation is first reduced: dims of size 1 dropped, input dims that stay neighbours in the output merged
 * (a [B, S, H, D] -> [B, H, S, D] stays 4-D, an NCHW -> NHWC becomes [N, C, HW] -> [N, HW, C]). Then:
 * - the last dim stays last: rows of that dim are copied whole, 16 / 8 / 4 bytes at a time (attention's head
 *   split and merge);
 * - otherwise, with both inner dims of 8+: 32 x 32 tiles through shared memory, so reads follow the input's
 *   last dim and writes the output's (K^T, layout changes);
 * - else one element a thread. An element a thread with the index divisions of the full rank ran ViT-B/16's
 *   float16 head transposes at batch 32 (19 MB) in 0.16 ms, about 120 GB/s. */

template <typename E> __global__ void transpose_k(const E *x, E *y, int64_t n, shape8 out, strides8 in_strides) {
    GRID_LOOP(i, n) y[i] = x[bcast_offset(i, out, in_strides)];
}

/* Rows of `units` V-sized units: output row r comes from the input row at bcast_offset(r) (in rows). */
template <typename V>
__global__ void transpose_rows_k(const V *x, V *y, int64_t n, int64_t units, shape8 rows, strides8 in_rows) {
    GRID_LOOP(i, n) {
        const int64_t r = i / units, u = i - r * units;
        y[i] = x[bcast_offset(r, rows, in_rows) * units + u];
    }
}

/* Output dim `a` (size A) is the input's last dim; the output's last dim (size B) has input stride in_sb; the
 * other dims (shape rest, strides rest_in / rest_out) are the batch, walked by blockIdx.y. */
template <typename E>
__global__ void transpose_tiles_k(const E *x, E *y, int64_t A, int64_t B, int64_t in_sb, int64_t out_sa,
                                  int64_t tiles_b, int64_t nb, shape8 rest, strides8 rest_in, strides8 rest_out) {
    __shared__ E t[32][33];
    const int64_t ta = (int64_t)blockIdx.x / tiles_b, tb = (int64_t)blockIdx.x - ta * tiles_b;
    for (int64_t b = blockIdx.y; b < nb; b += gridDim.y) {
        const E *xb = x + bcast_offset(b, rest, rest_in);
        E *yb = y + bcast_offset(b, rest, rest_out);
        for (int k = threadIdx.y; k < 32; k += blockDim.y) {
            const int64_t a = ta * 32 + threadIdx.x, bb = tb * 32 + k;
            if (a < A && bb < B) t[k][threadIdx.x] = xb[a + bb * in_sb];
        }
        __syncthreads();
        for (int k = threadIdx.y; k < 32; k += blockDim.y) {
            const int64_t a = ta * 32 + k, bb = tb * 32 + threadIdx.x;
            if (a < A && bb < B) yb[a * out_sa + bb] = t[threadIdx.x][k];
        }
        __syncthreads();
    }
}

/* Drop size-1 dims and merge input dims that stay adjacent in the output. In: rank, input dims, perm (output
 * dim k reads input dim perm[k]). Out: the reduced rank (0 when every dim is 1), its input dims and perm. */
static int transpose_reduce(int rank, const int64_t *xd, const int *perm, int64_t *d, int *p) {
    int idx[NETRUN_MAX_RANK], nk = 0; /* input dims renumbered without the size-1 ones (they move nothing) */
    int64_t kd[NETRUN_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        idx[i] = xd[i] != 1 ? nk : -1;
        if (xd[i] != 1) kd[nk++] = xd[i];
    }
    int start[NETRUN_MAX_RANK], len[NETRUN_MAX_RANK], ng = 0; /* runs of consecutive input dims, output order */
    for (int k = 0; k < rank; k++) {
        const int q = idx[perm[k]];
        if (q < 0) continue;
        if (ng && q == start[ng - 1] + len[ng - 1]) {
            len[ng - 1]++;
            continue;
        }
        start[ng] = q;
        len[ng++] = 1;
    }
    for (int g = 0; g < ng; g++) {
        int in_pos = 0; /* the run's place in input order */
        for (int h = 0; h < ng; h++) in_pos += start[h] < start[g];
        p[g] = in_pos;
        int64_t sz = 1;
        for (int i = start[g]; i < start[g] + len[g]; i++) sz *= kd[i];
        d[in_pos] = sz;
    }
    return ng;
}

static netrun_status transpose_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_transpose_params *tp = (const netrun_transpose_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    const size_t es = cuda_esize(X->dtype);
    if (!es) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Transpose: dtype %s", cuda_dtype_name(X->dtype));
    int perm[NETRUN_MAX_RANK];
    for (int i = 0; i < X->rank; i++) {
        perm[i] = tp ? tp->perm[i] : X->rank - 1 - i;
        if (perm[i] < 0 || perm[i] >= X->rank)
            return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Transpose: bad perm");
    }
    int64_t d[NETRUN_MAX_RANK];
    int p[NETRUN_MAX_RANK];
    const int r = transpose_reduce(X->rank, X->dims, perm, d, p);
    int identity = 1;
    for (int i = 0; i < r; i++) identity &= p[i] == i;
    if (identity) {
        cudaError_t e = cudaMemcpyAsync(Y->data, X->data, (size_t)n * es, cudaMemcpyDeviceToDevice, ctx->stream);
        return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "Transpose");
    }
    int64_t xs[NETRUN_MAX_RANK], s = 1; /* input strides of the reduced dims, in elements */
    for (int i = r - 1; i >= 0; i--) {
        xs[i] = s;
        s *= d[i];
    }
    int64_t od[NETRUN_MAX_RANK];
    for (int k = 0; k < r; k++) od[k] = d[p[k]];
    if (p[r - 1] == r - 1) { /* rows of the last dim move whole */
        const int64_t L = d[r - 1];
        size_t vb = 16;
        while (vb > es && ((L * es) % vb || ((uintptr_t)X->data | (uintptr_t)Y->data) % vb)) vb /= 2;
        if (vb < es) vb = es;
        strides8 st;
        memset(&st, 0, sizeof st);
        for (int k = 0; k < r - 1; k++) st.s[k] = xs[p[k]] / L;
        shape8 rows = make_shape(r - 1, od);
        const int64_t units = L * (int64_t)es / (int64_t)vb, total = n * (int64_t)es / (int64_t)vb;
        if (vb == 16)
            transpose_rows_k<uint4><<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(
                (const uint4 *)X->data, (uint4 *)Y->data, total, units, rows, st);
        else
            DISPATCH_ES(vb, (transpose_rows_k<E><<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(
                                (const E *)X->data, (E *)Y->data, total, units, rows, st)));
        return cuda_check_launch("Transpose");
    }
    int a = -1; /* the output dim that is the input's last */
    for (int k = 0; k < r; k++)
        if (p[k] == r - 1) a = k;
    const int64_t A = od[a], B = od[r - 1];
    if (A >= 8 && B >= 8) {
        int64_t os[NETRUN_MAX_RANK];
        s = 1;
        for (int k = r - 1; k >= 0; k--) {
            os[k] = s;
            s *= od[k];
        }
        int64_t rd[NETRUN_MAX_RANK];
        strides8 ri, ro;
        memset(&ri, 0, sizeof ri);
        memset(&ro, 0, sizeof ro);
        int nr = 0;
        for (int k = 0; k < r - 1; k++) {
            if (k == a) continue;
            rd[nr] = od[k];
            ri.s[nr] = xs[p[k]];
            ro.s[nr++] = os[k];
        }
        const int64_t nb = n / (A * B), tiles_a = (A + 31) / 32, tiles_b = (B + 31) / 32;
        if (tiles_a * tiles_b <= INT_MAX) {
            const dim3 grid((unsigned)(tiles_a * tiles_b), (unsigned)(nb < 65535 ? nb : 65535)), block(32, 8);
            shape8 rest = make_shape(nr, rd);
            DISPATCH_ES(es, (transpose_tiles_k<E><<<grid, block, 0, ctx->stream>>>(
                                (const E *)X->data, (E *)Y->data, A, B, xs[p[r - 1]], os[a], tiles_b, nb, rest, ri, ro)));
            return cuda_check_launch("Transpose");
        }
    }
    strides8 st;
    memset(&st, 0, sizeof st);
    for (int k = 0; k < r; k++) st.s[k] = xs[p[k]];
    shape8 sh = make_shape(r, od);
    DISPATCH_ES(es, (transpose_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((const E *)X->data, (E *)Y->data,
                                                                                       n, sh, st)));
    return cuda_check_launch("Transpose");
}

/* ---- Concat / Split: each input is a 2-D block of the output (rows = outer dims) ---- */

static netrun_status copy2d(cuda_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                            size_t height) {
    if (!width || !height) return NETRUN_OK;
    cudaError_t e = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDeviceToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "strided copy");
}

/* Concat as one kernel for up to CAT_MAX inputs (more: one launch per CAT_MAX): each output row (outer index)
 * is the inputs' rows side by side; moved in units of U (16 bytes down to 1, the largest that divides every
 * width and address). The input is picked with unrolled compares so the arguments stay in registers. */
#define CAT_MAX 8
struct cat_args {
    const void *src[CAT_MAX];
    uint32_t w[CAT_MAX];   /* row width of each input, in units */
    uint32_t pre[CAT_MAX]; /* its first column in this launch's part of the output row */
    int n;
};

template <typename U>
__global__ void concat_k(U *dst, uint32_t row, uint32_t col0, fdiv32 width, uint32_t total, cat_args a) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        uint32_t r = fdiv_q(width, i), c = i - r * width.d;
        const U *s = (const U *)a.src[0];
        uint32_t w = a.w[0], p = 0;
#pragma unroll
        for (int j = 1; j < CAT_MAX; j++)
            if (j < a.n && c >= a.pre[j]) {
                s = (const U *)a.src[j];
                w = a.w[j];
                p = a.pre[j];
            }
        dst[(size_t)r * row + col0 + c] = s[(size_t)r * w + (c - p)];
    }
}

template <typename U>
static netrun_status concat_launch(cuda_context *ctx, void *dst, size_t row_b, size_t col0_b, int64_t outer,
                                   const cat_args &bytes_args, size_t width_b) {
    cat_args a = bytes_args;
    for (int j = 0; j < a.n; j++) {
        a.w[j] /= (uint32_t)sizeof(U);
        a.pre[j] /= (uint32_t)sizeof(U);
    }
    uint32_t width = (uint32_t)(width_b / sizeof(U)), total = (uint32_t)(outer * (int64_t)width);
    concat_k<U><<<cuda_blocks32(total, CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
        (U *)dst, (uint32_t)(row_b / sizeof(U)), (uint32_t)(col0_b / sizeof(U)), make_fdiv(width), total, a);
    return cuda_check_launch("Concat");
}

/* The one-kernel path; returns 0 (nothing launched) when sizes need 64-bit indices. */
static int concat_fast(cuda_context *ctx, const netrun_kernel_args *args, int axis, int64_t outer, int64_t inner,
                       size_t es, netrun_status *st) {
    netrun_tensor *Y = &args->outputs[0];
    size_t row = (size_t)(Y->dims[axis] * inner) * es;
    if ((int64_t)row * outer > INT32_MAX || outer < 1) return 0;
    size_t u = 16;
    uintptr_t bits = (uintptr_t)Y->data | row;
    for (int k = 0; k < args->n_inputs; k++) {
        const netrun_tensor *X = &args->inputs[k];
        if (X->rank < 0) continue;
        bits |= (uintptr_t)X->data | (uintptr_t)((size_t)(X->dims[axis] * inner) * es);
    }
    while (u > 1 && (bits & (u - 1))) u /= 2;
    cat_args a;
    size_t at = 0, start = 0;
    memset(&a, 0, sizeof a);
    *st = NETRUN_OK;
    for (int k = 0; k <= args->n_inputs && *st == NETRUN_OK; k++) {
        const netrun_tensor *X = k < args->n_inputs ? &args->inputs[k] : NULL;
        size_t w = X && X->rank >= 0 ? (size_t)(X->dims[axis] * inner) * es : 0;
        if (X && w > 0) {
            a.src[a.n] = X->data;
            a.w[a.n] = (uint32_t)w;
            a.pre[a.n] = (uint32_t)(at - start);
            a.n++;
            at += w;
        }
        if (a.n > 0 && (a.n == CAT_MAX || !X)) { /* launch this group */
            size_t width = at - start;
            switch (u) {
            case 16: *st = concat_launch<uint4>(ctx, Y->data, row, start, outer, a, width); break;
            case 8: *st = concat_launch<uint2>(ctx, Y->data, row, start, outer, a, width); break;
            case 4: *st = concat_launch<uint32_t>(ctx, Y->data, row, start, outer, a, width); break;
            case 2: *st = concat_launch<uint16_t>(ctx, Y->data, row, start, outer, a, width); break;
            default: *st = concat_launch<uint8_t>(ctx, Y->data, row, start, outer, a, width); break;
            }
            memset(&a, 0, sizeof a);
            start = at;
        }
    }
    return 1;
}

static netrun_status concat_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_axis_params *p = (const netrun_axis_params *)args->params;
    netrun_tensor *Y = &args->outputs[0];
    int axis = p ? p->axis : 0;
    size_t es = cuda_esize(Y->dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= Y->dims[i];
    for (int i = axis + 1; i < Y->rank; i++) inner *= Y->dims[i];
    netrun_status st;
    if (concat_fast(ctx, args, axis, outer, inner, es, &st)) return st;
    size_t row = (size_t)(Y->dims[axis] * inner) * es, at = 0;
    for (int k = 0; k < args->n_inputs; k++) {
        const netrun_tensor *X = &args->inputs[k];
        if (X->rank < 0) continue;
        size_t w = (size_t)(X->dims[axis] * inner) * es;
        netrun_status s = copy2d(ctx, (char *)Y->data + at, row, X->data, w, w, (size_t)outer);
        if (s != NETRUN_OK) return s;
        at += w;
    }
    return NETRUN_OK;
}

static netrun_status split_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_split_params *p = (const netrun_split_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    int axis = p ? p->axis : 0;
    size_t es = cuda_esize(X->dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= X->dims[i];
    for (int i = axis + 1; i < X->rank; i++) inner *= X->dims[i];
    size_t row = (size_t)(X->dims[axis] * inner) * es, at = 0;
    for (int k = 0; k < args->n_outputs; k++) {
        netrun_tensor *Y = &args->outputs[k];
        int64_t len = p && p->sizes && k < p->n_outputs ? p->sizes[k] : (Y->rank >= 0 ? Y->dims[axis] : 0);
        size_t w = (size_t)(len * inner) * es;
        if (Y->rank >= 0 && Y->data) {
            netrun_status s = copy2d(ctx, Y->data, w, (const char *)X->data + at, row, w, (size_t)outer);
            if (s != NETRUN_OK) return s;
        }
        at += w;
    }
    return NETRUN_OK;
}

/* ---- Slice ---- */

template <typename E>
__global__ void slice_k(const E *x, E *y, int64_t n, shape8 out, strides8 step_strides, int64_t base) {
    GRID_LOOP(i, n) y[i] = x[base + bcast_offset(i, out, step_strides)];
}

static netrun_status slice_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_slice_params *p = (const netrun_slice_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    int64_t xs[NETRUN_MAX_RANK], s = 1, base = 0;
    for (int i = X->rank - 1; i >= 0; i--) {
        xs[i] = s;
        s *= X->dims[i];
    }
    strides8 st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < X->rank; i++) {
        base += p->start[i] * xs[i];
        st.s[i] = p->step[i] * xs[i];
    }
    shape8 sh = make_shape(Y->rank, Y->dims);
    DISPATCH_ES(cuda_esize(X->dtype), (slice_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (E *)Y->data, n, sh, st, base)));
    return cuda_check_launch("Slice");
}

/* ---- Gather / GatherElements ---- */

template <typename E, typename I>
__global__ void gather_k(const E *x, const I *idx, E *y, int64_t n, int64_t nidx, int64_t axis_len, int64_t inner,
                         int *bad) {
    GRID_LOOP(i, n) {
        int64_t in = i % inner, r = i / inner, j = r % nidx, o = r / nidx;
        int64_t k = (int64_t)idx[j];
        if (k < 0) k += axis_len;
        if (k < 0 || k >= axis_len) {
            *bad = 1;
            y[i] = 0;
            continue;
        }
        y[i] = x[(o * axis_len + k) * inner + in];
    }
}

template <typename E, typename I>
__global__ void gather_elements_k(const E *x, const I *idx, E *y, int64_t n, shape8 ish, strides8 xs, int axis,
                                  int64_t axis_len, int *bad) {
    GRID_LOOP(i, n) {
        int64_t r = i, off = 0;
        for (int d = ish.rank - 1; d >= 0; d--) {
            int64_t c = r % ish.dims[d];
            r /= ish.dims[d];
            if (d == axis) {
                c = (int64_t)idx[i];
                if (c < 0) c += axis_len;
                if (c < 0 || c >= axis_len) {
                    *bad = 1;
                    c = 0;
                }
            }
            off += c * xs.s[d];
        }
        y[i] = x[off];
    }
}

static int gather_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    netrun_dtype it = node->inputs[1].dtype;
    if (it != NETRUN_DTYPE_INT32 && it != NETRUN_DTYPE_INT64) return cuda_refuse(reason, size, "indices not int32/int64");
    return 1;
}

/* Out-of-range indices are an error in ONNX: the Gather/Scatter kernels raise a device flag (cuda_flag), read back
 * after the launch (one stream synchronization per run; a graph cannot hold it, so the runtime runs such a step
 * eagerly between graphs). Constant indices (a class token's x[:, 0], position ids) are checked once here: that
 * Gather reads nothing back and is captured with its neighbours. */
static netrun_status gather_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    netrun_status st = cuda_flag_create(ctx, node, state, workspace);
    if (st != NETRUN_OK) return st;
    const netrun_axis_params *p = (const netrun_axis_params *)node->params;
    const netrun_value_desc *X = &node->inputs[0], *I = &node->inputs[1];
    int axis = p ? p->axis : 0;
    if (!I->const_data || I->rank < 0 || axis < 0 || axis >= X->rank || X->dims[axis] < 0) return NETRUN_OK;
    int64_t n = 1, len = X->dims[axis];
    for (int d = 0; d < I->rank; d++) {
        if (I->dims[d] < 0) return NETRUN_OK;
        n *= I->dims[d];
    }
    int wide = I->dtype == NETRUN_DTYPE_INT64;
    if (I->const_nbytes < (size_t)n * (wide ? 8 : 4)) return NETRUN_OK;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = wide ? ((const int64_t *)I->const_data)[i] : ((const int32_t *)I->const_data)[i];
        if (v < -len || v >= len) return NETRUN_OK; /* reported by the run-time check, with its message */
    }
    ((cuda_flag *)*state)->checked = 1;
    return NETRUN_OK;
}

static netrun_status gather_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_axis_params *p = (const netrun_axis_params *)args->params;
    cuda_flag *g = (cuda_flag *)state;
    netrun_status rs = g->checked ? NETRUN_OK : cuda_refuse_capture(ctx, "Gather");
    if (rs != NETRUN_OK) return rs;
    const netrun_tensor *X = &args->inputs[0], *I = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    int axis = p ? p->axis : 0;
    int64_t inner = 1;
    for (int i = axis + 1; i < X->rank; i++) inner *= X->dims[i];
    int64_t nidx = cuda_count(I), alen = X->dims[axis];
    unsigned b = cuda_blocks(n);
    if (I->dtype == NETRUN_DTYPE_INT64) {
        DISPATCH_ES(cuda_esize(X->dtype), (gather_k<E, int64_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                              (const E *)X->data, (const int64_t *)I->data, (E *)Y->data, n, nidx, alen, inner, g->bad)));
    } else {
        DISPATCH_ES(cuda_esize(X->dtype), (gather_k<E, int32_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                              (const E *)X->data, (const int32_t *)I->data, (E *)Y->data, n, nidx, alen, inner, g->bad)));
    }
    netrun_status s = cuda_check_launch("Gather");
    return s != NETRUN_OK || g->checked ? s : cuda_flag_check(ctx, g, "Gather", "index out of range");
}

static netrun_status gather_elements_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_axis_params *p = (const netrun_axis_params *)args->params;
    cuda_flag *g = (cuda_flag *)state;
    netrun_status rs = cuda_refuse_capture(ctx, "GatherElements");
    if (rs != NETRUN_OK) return rs;
    const netrun_tensor *X = &args->inputs[0], *I = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    int axis = p ? p->axis : 0;
    strides8 xs;
    memset(&xs, 0, sizeof xs);
    int64_t s = 1;
    for (int i = X->rank - 1; i >= 0; i--) {
        xs.s[i] = s;
        s *= X->dims[i];
    }
    shape8 ish = make_shape(I->rank, I->dims);
    unsigned b = cuda_blocks(n);
    if (I->dtype == NETRUN_DTYPE_INT64) {
        DISPATCH_ES(cuda_esize(X->dtype), (gather_elements_k<E, int64_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                              (const E *)X->data, (const int64_t *)I->data, (E *)Y->data, n, ish, xs, axis, X->dims[axis], g->bad)));
    } else {
        DISPATCH_ES(cuda_esize(X->dtype), (gather_elements_k<E, int32_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                              (const E *)X->data, (const int32_t *)I->data, (E *)Y->data, n, ish, xs, axis, X->dims[axis], g->bad)));
    }
    netrun_status st = cuda_check_launch("GatherElements");
    return st != NETRUN_OK ? st : cuda_flag_check(ctx, g, "GatherElements", "index out of range");
}

/* ---- GatherND (batch_dims), ScatterElements / Scatter, ScatterND (reductions none/add/mul/max/min) ---- */

/* Offset (elements) of the slice an index tuple names in dims [first, first + k) of x; -1 when out of range. */
__device__ __forceinline__ int64_t nd_offset(const int64_t *tuple, int64_t k, int first, const shape8 &xd,
                                             const strides8 &xs) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t dim = xd.dims[first + j], v = tuple[j];
        if (v < -dim || v >= dim) return -1;
        off += (v < 0 ? v + dim : v) * xs.s[first + j];
    }
    return off;
}

template <typename E>
__global__ void gather_nd_k(const E *x, const int64_t *idx, E *y, int64_t n, int64_t m, int64_t k, int64_t slice,
                            int64_t batch_elems, int b, shape8 xd, strides8 xs, int *bad) {
    GRID_LOOP(i, n) {
        int64_t t = i / slice, s = i - t * slice, bi = t / m;
        int64_t off = nd_offset(idx + t * k, k, b, xd, xs);
        if (off < 0) {
            *bad = 1;
            y[i] = (E)0;
        } else
            y[i] = x[bi * batch_elems + off + s];
    }
}

static void strides_of(const netrun_tensor *X, strides8 *xs) {
    memset(xs, 0, sizeof *xs);
    int64_t s = 1;
    for (int i = X->rank - 1; i >= 0; i--) {
        xs->s[i] = s;
        s *= X->dims[i];
    }
}

static int int64_indices_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    if (node->n_inputs < 2 || node->inputs[1].dtype != NETRUN_DTYPE_INT64) return cuda_refuse(reason, size, "indices not int64");
    return 1;
}

static netrun_status gather_nd_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_axis_params *p = (const netrun_axis_params *)args->params;
    cuda_flag *g = (cuda_flag *)state;
    netrun_status rs = cuda_refuse_capture(ctx, "GatherND");
    if (rs != NETRUN_OK) return rs;
    const netrun_tensor *X = &args->inputs[0], *I = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    int b = p ? p->axis : 0, q = I->rank;
    if (q < 1 || b < 0 || b >= q || b >= X->rank) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda GatherND: bad params");
    int64_t k = I->dims[q - 1], m = 1, slice = 1;
    if (k < 1 || b + k > X->rank) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda GatherND: index tuples of %lld", (long long)k);
    for (int d = b; d < q - 1; d++) m *= I->dims[d];
    for (int d = b + (int)k; d < X->rank; d++) slice *= X->dims[d];
    strides8 xs;
    strides_of(X, &xs);
    int64_t batch_elems = b ? xs.s[b - 1] : cuda_count(X);
    shape8 xd = make_shape(X->rank, X->dims);
    DISPATCH_ES(cuda_esize(X->dtype), (gather_nd_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (const int64_t *)I->data, (E *)Y->data, n, m, k, slice,
                                          batch_elems, b, xd, xs, g->bad)));
    netrun_status st = cuda_check_launch("GatherND");
    return st != NETRUN_OK ? st : cuda_flag_check(ctx, g, "GatherND", "index out of range");
}

/* a (op) u in T's arithmetic; half and bfloat16 in float rounded back (like the CPU kernel) */
template <typename T> __device__ __forceinline__ T red_apply(T a, T u, int red) {
    switch (red) {
    case NETRUN_SCATTER_ADD: return (T)(a + u);
    case NETRUN_SCATTER_MUL: return (T)(a * u);
    case NETRUN_SCATTER_MAX: return u > a ? u : a;
    case NETRUN_SCATTER_MIN: return u < a ? u : a;
    default: return u;
    }
}
template <> __device__ __forceinline__ __half red_apply<__half>(__half a, __half u, int red) {
    float x = __half2float(a), v = __half2float(u);
    float r = red == NETRUN_SCATTER_ADD ? x + v : red == NETRUN_SCATTER_MUL ? x * v : red == NETRUN_SCATTER_MAX ? (v > x ? v : x) : red == NETRUN_SCATTER_MIN ? (v < x ? v : x) : v;
    return __float2half_rn(r);
}
template <> __device__ __forceinline__ cuda_bf16_bits red_apply<cuda_bf16_bits>(cuda_bf16_bits a, cuda_bf16_bits u, int red) {
    float x = nr_bf16_to_float(a.b), v = nr_bf16_to_float(u.b);
    float r = red == NETRUN_SCATTER_ADD ? x + v : red == NETRUN_SCATTER_MUL ? x * v : red == NETRUN_SCATTER_MAX ? (v > x ? v : x) : red == NETRUN_SCATTER_MIN ? (v < x ? v : x) : v;
    cuda_bf16_bits o;
    o.b = nr_float_to_bf16(r);
    return o;
}

/* *addr = red_apply(*addr, u) atomically: a compare-and-swap loop on the (aligned) word that holds the element,
 * so duplicate indices combine whatever the order. */
template <typename T> __device__ void atomic_red(T *addr, T u, int red) {
    if constexpr (sizeof(T) >= 4) {
        typedef typename std::conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type W;
        W *wp = (W *)addr, old = *wp, assumed;
        do {
            assumed = old;
            T cur, nv;
            memcpy(&cur, &assumed, sizeof(T));
            nv = red_apply(cur, u, red);
            W nw;
            memcpy(&nw, &nv, sizeof(T));
            old = atomicCAS(wp, assumed, nw);
        } while (old != assumed);
    } else {
        uintptr_t a = (uintptr_t)addr;
        unsigned int *wp = (unsigned int *)(a & ~(uintptr_t)3), shift = (unsigned)(a & 3) * 8;
        unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift, old = *wp, assumed;
        do {
            assumed = old;
            unsigned int bits = (assumed & mask) >> shift, nb = 0;
            T cur, nv;
            memcpy(&cur, &bits, sizeof(T)); /* little-endian: the low bytes */
            nv = red_apply(cur, u, red);
            memcpy(&nb, &nv, sizeof(T));
            old = atomicCAS(wp, assumed, (assumed & ~mask) | (nb << shift));
        } while (old != assumed);
    }
}

template <typename T, typename I>
__global__ void scatter_elements_k(const I *idx, const T *upd, T *y, int64_t n, shape8 id, strides8 ys, int axis,
                                   int64_t alen, int red, int *bad) {
    GRID_LOOP(i, n) {
        int64_t rem = i, off = 0;
        bool ok = true;
        for (int d = id.rank - 1; d >= 0; d--) {
            int64_t q = rem / id.dims[d], c = rem - q * id.dims[d];
            rem = q;
            if (d == axis) {
                int64_t v = (int64_t)idx[i];
                if (v < -alen || v >= alen) ok = false;
                c = v < 0 ? v + alen : v;
            }
            off += c * ys.s[d];
        }
        if (!ok) {
            *bad = 1;
            continue;
        }
        if (red == NETRUN_SCATTER_NONE) y[off] = upd[i];
        else atomic_red(y + off, upd[i], red);
    }
}

template <typename T>
__global__ void scatter_nd_k(const int64_t *idx, const T *upd, T *y, int64_t n, int64_t k, int64_t slice, shape8 xd,
                             strides8 xs, int red, int *bad) {
    GRID_LOOP(i, n) {
        int64_t mi = i / slice, s = i - mi * slice;
        int64_t off = nd_offset(idx + mi * k, k, 0, xd, xs);
        if (off < 0) {
            *bad = 1;
            continue;
        }
        if (red == NETRUN_SCATTER_NONE) y[off + s] = upd[i];
        else atomic_red(y + off + s, upd[i], red);
    }
}

/* Numeric element types for the reductions, as T; reduction none moves bytes. */
#define DISPATCH_RED(dt, CALL)                                                                                   \
    switch (dt) {                                                                                                \
        DT_NUMERIC(cuda_bf16_bits, typedef E T; CALL)                                                            \
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda scatter reduction: dtype %s", cuda_dtype_name(dt)); \
    }

static int scatter_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = node->inputs[0].dtype;
    if (!cuda_esize(t)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(t));
    netrun_dtype it = node->n_inputs > 1 ? node->inputs[1].dtype : NETRUN_DTYPE_UNDEFINED;
    int nd = !strcmp(node->op_type, "ScatterND");
    if (it != NETRUN_DTYPE_INT64 && (nd || it != NETRUN_DTYPE_INT32))
        return cuda_refuse(reason, size, "indices %s", cuda_dtype_name(it));
    const netrun_scatter_params *p = (const netrun_scatter_params *)node->params;
    if (p && (p->reduction < NETRUN_SCATTER_NONE || p->reduction > NETRUN_SCATTER_MIN))
        return cuda_refuse(reason, size, "reduction %d", p->reduction);
    if (p && p->reduction != NETRUN_SCATTER_NONE && t == NETRUN_DTYPE_BOOL)
        return cuda_refuse(reason, size, "reductions on bool");
    return 1;
}

/* y = x before the updates (unless the runtime made them one buffer). */
static netrun_status scatter_prepare(cuda_context *ctx, const netrun_kernel_args *args, const char *op) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (ctx->capturing) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: not capturable in a CUDA graph", op);
    size_t bytes = (size_t)cuda_count(X) * cuda_esize(X->dtype);
    if (!bytes || X->data == Y->data) return NETRUN_OK;
    cudaError_t e = cudaMemcpyAsync(Y->data, X->data, bytes, cudaMemcpyDeviceToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, op);
}

static netrun_status scatter_elements_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_scatter_params *p = (const netrun_scatter_params *)args->params;
    cuda_flag *g = (cuda_flag *)state;
    const netrun_tensor *X = &args->inputs[0], *I = &args->inputs[1], *U = &args->inputs[2];
    netrun_tensor *Y = &args->outputs[0];
    netrun_status st = scatter_prepare(ctx, args, "ScatterElements");
    if (st != NETRUN_OK) return st;
    int64_t n = cuda_count(I);
    if (n == 0) return NETRUN_OK;
    int axis = p ? p->axis : 0, red = p ? p->reduction : NETRUN_SCATTER_NONE;
    if (axis < 0 || axis >= X->rank || I->rank != X->rank || cuda_count(U) != n)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda ScatterElements: bad params");
    strides8 ys;
    strides_of(X, &ys);
    shape8 id = make_shape(I->rank, I->dims);
    unsigned b = cuda_blocks(n);
    int64_t alen = X->dims[axis];
    if (red == NETRUN_SCATTER_NONE) {
        if (I->dtype == NETRUN_DTYPE_INT64) {
            DISPATCH_ES(cuda_esize(X->dtype), (scatter_elements_k<E, int64_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                                  (const int64_t *)I->data, (const E *)U->data, (E *)Y->data, n, id, ys, axis, alen, red, g->bad)));
        } else {
            DISPATCH_ES(cuda_esize(X->dtype), (scatter_elements_k<E, int32_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                                  (const int32_t *)I->data, (const E *)U->data, (E *)Y->data, n, id, ys, axis, alen, red, g->bad)));
        }
    } else if (I->dtype == NETRUN_DTYPE_INT64) {
        DISPATCH_RED(X->dtype, (scatter_elements_k<T, int64_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                   (const int64_t *)I->data, (const T *)U->data, (T *)Y->data, n, id, ys, axis, alen, red, g->bad)));
    } else {
        DISPATCH_RED(X->dtype, (scatter_elements_k<T, int32_t><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                   (const int32_t *)I->data, (const T *)U->data, (T *)Y->data, n, id, ys, axis, alen, red, g->bad)));
    }
    if ((st = cuda_check_launch("ScatterElements")) != NETRUN_OK) return st;
    return cuda_flag_check(ctx, g, "ScatterElements", "index out of range");
}

static netrun_status scatter_nd_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_scatter_params *p = (const netrun_scatter_params *)args->params;
    cuda_flag *g = (cuda_flag *)state;
    const netrun_tensor *X = &args->inputs[0], *I = &args->inputs[1], *U = &args->inputs[2];
    netrun_tensor *Y = &args->outputs[0];
    netrun_status st = scatter_prepare(ctx, args, "ScatterND");
    if (st != NETRUN_OK) return st;
    int q = I->rank, red = p ? p->reduction : NETRUN_SCATTER_NONE;
    if (q < 1) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda ScatterND: indices of rank 0");
    int64_t k = I->dims[q - 1], slice = 1;
    if (k < 1 || k > X->rank) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ScatterND: index tuples of %lld", (long long)k);
    for (int d = (int)k; d < X->rank; d++) slice *= X->dims[d];
    int64_t n = cuda_count(I) / k * slice;
    if (n == 0) return NETRUN_OK;
    if (cuda_count(U) != n) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda ScatterND: updates shape");
    strides8 xs;
    strides_of(X, &xs);
    shape8 xd = make_shape(X->rank, X->dims);
    unsigned b = cuda_blocks(n);
    if (red == NETRUN_SCATTER_NONE) {
        DISPATCH_ES(cuda_esize(X->dtype), (scatter_nd_k<E><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                              (const int64_t *)I->data, (const E *)U->data, (E *)Y->data, n, k, slice, xd, xs, red, g->bad)));
    } else {
        DISPATCH_RED(X->dtype, (scatter_nd_k<T><<<b, CUDA_THREADS, 0, ctx->stream>>>(
                                   (const int64_t *)I->data, (const T *)U->data, (T *)Y->data, n, k, slice, xd, xs, red, g->bad)));
    }
    if ((st = cuda_check_launch("ScatterND")) != NETRUN_OK) return st;
    return cuda_flag_check(ctx, g, "ScatterND", "index out of range");
}

/* ---- Pad ---- */

template <typename T>
__global__ void pad_k(const T *x, T *y, int64_t n, shape8 in, shape8 out, shape8 pb, int mode, T value) {
    GRID_LOOP(i, n) {
        int64_t r = i, off = 0, mul = 1;
        bool outside = false;
        for (int d = out.rank - 1; d >= 0; d--) {
            int64_t c = r % out.dims[d] - pb.dims[d], len = in.dims[d];
            r /= out.dims[d];
            if (c < 0 || c >= len) {
                if (mode == NETRUN_PAD_CONSTANT || len == 0) outside = true;
                else if (mode == NETRUN_PAD_EDGE) c = c < 0 ? 0 : len - 1;
                else if (mode == NETRUN_PAD_WRAP) c = ((c % len) + len) % len;
                else if (len == 1) c = 0;
                else { /* reflect without repeating the edge */
                    int64_t period = 2 * (len - 1);
                    c = ((c % period) + period) % period;
                    if (c >= len) c = period - c;
                }
            }
            off += c * mul;
            mul *= len;
        }
        y[i] = outside ? value : x[off];
    }
}

static int pad_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = node->inputs[0].dtype;
    if (!cuda_esize(t) || t == NETRUN_DTYPE_BFLOAT16) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(t));
    return 1;
}

template <typename T> static netrun_status launch_pad(cuda_context *ctx, const netrun_tensor *X, netrun_tensor *Y,
                                                      const int64_t *pads_begin, int mode, T value) {
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    shape8 in = make_shape(X->rank, X->dims), out = make_shape(Y->rank, Y->dims), pb = make_shape(X->rank, pads_begin);
    pad_k<T><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((const T *)X->data, (T *)Y->data, n, in, out, pb, mode, value);
    return cuda_check_launch("Pad");
}

static netrun_status pad_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_pad_params *p = (const netrun_pad_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (cuda_count(X) == 0 && p->mode != NETRUN_PAD_CONSTANT && cuda_count(Y) > 0)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Pad: cannot %s-pad an empty tensor",
                                p->mode == NETRUN_PAD_EDGE ? "edge" : "reflect");
    double v = p->value;
    int m = (int)p->mode;
    switch (X->dtype) {
    case NETRUN_DTYPE_FLOAT: return launch_pad<float>(ctx, X, Y, p->pads_begin, m, (float)v);
    case NETRUN_DTYPE_DOUBLE: return launch_pad<double>(ctx, X, Y, p->pads_begin, m, v);
    case NETRUN_DTYPE_FLOAT16: return launch_pad<__half>(ctx, X, Y, p->pads_begin, m, __float2half_rn((float)v));
    case NETRUN_DTYPE_INT8: return launch_pad<int8_t>(ctx, X, Y, p->pads_begin, m, (int8_t)v);
    case NETRUN_DTYPE_UINT8: return launch_pad<uint8_t>(ctx, X, Y, p->pads_begin, m, (uint8_t)v);
    case NETRUN_DTYPE_BOOL: return launch_pad<uint8_t>(ctx, X, Y, p->pads_begin, m, (uint8_t)(v != 0));
    case NETRUN_DTYPE_INT16: return launch_pad<int16_t>(ctx, X, Y, p->pads_begin, m, (int16_t)v);
    case NETRUN_DTYPE_UINT16: return launch_pad<uint16_t>(ctx, X, Y, p->pads_begin, m, (uint16_t)v);
    case NETRUN_DTYPE_INT32: return launch_pad<int32_t>(ctx, X, Y, p->pads_begin, m, (int32_t)v);
    case NETRUN_DTYPE_UINT32: return launch_pad<uint32_t>(ctx, X, Y, p->pads_begin, m, (uint32_t)v);
    case NETRUN_DTYPE_INT64: return launch_pad<int64_t>(ctx, X, Y, p->pads_begin, m, (int64_t)v);
    case NETRUN_DTYPE_UINT64: return launch_pad<uint64_t>(ctx, X, Y, p->pads_begin, m, (uint64_t)v);
    default: return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Pad: dtype %s", cuda_dtype_name(X->dtype));
    }
}

extern "C" netrun_status cuda_zero_pad(cuda_context *ctx, size_t es, void *dst, const void *src, int rank,
                                       const int64_t *in_dims, const int64_t *pads_begin, const int64_t *out_dims) {
    netrun_tensor X, Y;
    memset(&X, 0, sizeof X);
    memset(&Y, 0, sizeof Y);
    X.rank = Y.rank = rank;
    memcpy(X.dims, in_dims, sizeof(int64_t) * (size_t)rank);
    memcpy(Y.dims, out_dims, sizeof(int64_t) * (size_t)rank);
    X.data = (void *)src;
    Y.data = dst;
    if (es == 2) return launch_pad<uint16_t>(ctx, &X, &Y, pads_begin, NETRUN_PAD_CONSTANT, (uint16_t)0);
    if (es == 4) return launch_pad<uint32_t>(ctx, &X, &Y, pads_begin, NETRUN_PAD_CONSTANT, 0u);
    return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda zero pad: element size %zu", es);
}

/* ---- DepthToSpace / SpaceToDepth (4-D) ---- */

template <typename E>
__global__ void d2s_k(const E *x, E *y, int64_t n, int64_t C, int64_t H, int64_t W, int64_t b, int crd, int to_space) {
    /* y index decomposed in the output's layout; x is the other side */
    GRID_LOOP(i, n) {
        if (to_space) { /* out [N, C/(b*b), H*b, W*b] */
            int64_t oc = C / (b * b), ow = W * b, oh = H * b;
            int64_t w = i % ow, h = (i / ow) % oh, c = (i / (ow * oh)) % oc, nn = i / (ow * oh * oc);
            int64_t bh = h % b, bw = w % b, ih = h / b, iw = w / b;
            int64_t ic = crd ? c * b * b + bh * b + bw : (bh * b + bw) * oc + c;
            y[i] = x[((nn * C + ic) * H + ih) * W + iw];
        } else { /* SpaceToDepth: out [N, C*b*b, H/b, W/b], DCR order (CRD: c * b * b + block) */
            int64_t oc = C * b * b, oh = H / b, ow = W / b;
            int64_t w = i % ow, h = (i / ow) % oh, c = (i / (ow * oh)) % oc, nn = i / (ow * oh * oc);
            int64_t ic = crd ? c / (b * b) : c % C, blk = crd ? c % (b * b) : c / C, bh = blk / b, bw = blk % b;
            y[i] = x[((nn * C + ic) * H + h * b + bh) * W + w * b + bw];
        }
    }
}

static netrun_status d2s_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_space_depth_params *p = (const netrun_space_depth_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t n = cuda_count(Y);
    if (n == 0) return NETRUN_OK;
    if (X->rank != 4 || !p || p->blocksize < 1) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda DepthToSpace: 4-D input");
    int to_space = (intptr_t)state == 1;
    DISPATCH_ES(cuda_esize(X->dtype), (d2s_k<E><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                                          (const E *)X->data, (E *)Y->data, n, X->dims[1], X->dims[2], X->dims[3],
                                          p->blocksize, p->crd, to_space)));
    return cuda_check_launch("DepthToSpace");
}

static netrun_status d2s_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(intptr_t)(!strcmp(node->op_type, "DepthToSpace") ? 1 : 2);
    return NETRUN_OK;
}

extern "C" const cuda_op cuda_ops_data_movement[] = {
    {"Transpose", CUDA_ALL_DTYPES, "", NULL, NULL, transpose_run, NULL},
    {"Concat", CUDA_ALL_DTYPES, "", NULL, NULL, concat_run, NULL},
    {"Split", CUDA_ALL_DTYPES, "", NULL, NULL, split_run, NULL},
    {"Slice", CUDA_ALL_DTYPES, "", NULL, NULL, slice_run, NULL},
    {"Gather", CUDA_ALL_DTYPES, "int32/int64 indices", gather_supports, gather_create, gather_run, cuda_flag_destroy},
    {"GatherElements", CUDA_ALL_DTYPES, "int32/int64 indices", gather_supports, cuda_flag_create, gather_elements_run,
     cuda_flag_destroy},
    {"GatherND", CUDA_ALL_DTYPES, "int64 indices, batch_dims", int64_indices_supports, cuda_flag_create, gather_nd_run,
     cuda_flag_destroy},
    {"ScatterElements", CUDA_ALL_DTYPES, "reduction none/add/mul/max/min (atomic; none with duplicate indices: any "
     "one wins)", scatter_supports, cuda_flag_create, scatter_elements_run, cuda_flag_destroy},
    {"Scatter", CUDA_ALL_DTYPES, "", scatter_supports, cuda_flag_create, scatter_elements_run, cuda_flag_destroy},
    {"ScatterND", CUDA_ALL_DTYPES, "reduction none/add/mul/max/min (atomic)", scatter_supports, cuda_flag_create,
     scatter_nd_run, cuda_flag_destroy},
    {"Pad", CUDA_ALL_DTYPES & ~CUDA_DT(BFLOAT16), "constant, reflect, edge, wrap", pad_supports, NULL, pad_run, NULL},
    {"DepthToSpace", CUDA_ALL_DTYPES, "4-D; DCR and CRD", NULL, d2s_create, d2s_run, NULL},
    {"SpaceToDepth", CUDA_ALL_DTYPES, "4-D; DCR and CRD", NULL, d2s_create, d2s_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
