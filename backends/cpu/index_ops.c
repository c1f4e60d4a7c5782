/* CPU kernels: index_ops (NonZero, Unique, OneHot, Compress, ReverseSequence, TensorScatter) and the ops
 * this family hosts for now. Byte-moving kernels serve every dtype by element size;
 * NonZero, Unique and Compress size their outputs at run time through args->alloc_output. */
#include <stdlib.h>

#include "cpu_internal.h"

/* Is element i nonzero? -0.0 counts as zero, NaN as nonzero. */
static int elem_nonzero(const void *p, netrun_dtype t, size_t es, int64_t i) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: return ((const float *)p)[i] != 0.0f;
    case NETRUN_DTYPE_DOUBLE: return ((const double *)p)[i] != 0.0;
    case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: return (((const uint16_t *)p)[i] & 0x7fffu) != 0;
    default: {
        const unsigned char *b = (const unsigned char *)p + (size_t)i * es;
        for (size_t k = 0; k < es; k++)
            if (b[k]) return 1;
        return 0;
    }
    }
}

/* ---- NonZero ---- */

/* One byte per element (bool, uint8, int8): nonzero flags are the bytes themselves. Otherwise a flag per element
 * is written first so that the dtype switch runs once per element, not twice. */
static void nonzero_flags(const netrun_tensor *x, size_t es, int64_t n, unsigned char *f) {
    switch (x->dtype) {
    case NETRUN_DTYPE_FLOAT: {
        const float *p = x->data;
        for (int64_t i = 0; i < n; i++) f[i] = p[i] != 0.0f;
        break;
    }
    case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: {
        const uint64_t *p = x->data;
        for (int64_t i = 0; i < n; i++) f[i] = p[i] != 0;
        break;
    }
    case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: {
        const uint32_t *p = x->data;
        for (int64_t i = 0; i < n; i++) f[i] = p[i] != 0;
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) f[i] = (unsigned char)elem_nonzero(x->data, x->dtype, es, i);
    }
}

static netrun_status run_nonzero(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_tensor *x = &args->inputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "NonZero");
    if (st != NETRUN_OK) return st;
    int64_t n = cpu_count(x), nnz = 0;
    unsigned char *flags = NULL;
    const unsigned char *f = x->data;
    if (x->dtype != NETRUN_DTYPE_BOOL && x->dtype != NETRUN_DTYPE_UINT8 && x->dtype != NETRUN_DTYPE_INT8) {
        flags = cpu_alloc(n > 0 ? (size_t)n : 1);
        if (!flags) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "NonZero: out of memory (%lld elements)",
                                           (long long)n);
        nonzero_flags(x, es, n, flags);
        f = flags;
    }
    for (int64_t i = 0; i < n; i++) nnz += f[i] != 0;
    int rank = x->rank > 0 ? x->rank : 1;
    int64_t dims[2] = {rank, nnz};
    st = args->alloc_output(args->exec, 0, 2, dims);
    if (st != NETRUN_OK) {
        cpu_free(flags);
        return st;
    }
    int64_t *y = args->outputs[0].data, k = 0;
    if (x->rank == 0) {
        if (nnz) y[0] = 0;
    } else {
        /* The coordinates are counted along, the last axis fastest (no division per element), and written for
         * every element at slot k, which only a nonzero one keeps: no branch on the data (a detector's score mask
         * is a coin toss for the branch predictor). */
        int64_t coord[NETRUN_MAX_RANK] = {0};
        const int last = x->rank - 1;
        if (last == 0) {
            for (int64_t i = 0; i < n && k < nnz; i++) {
                y[k] = i;
                k += f[i] != 0;
            }
        } else {
            for (int64_t i = 0; i < n && k < nnz; i++) {
                for (int d = 0; d <= last; d++) y[d * nnz + k] = coord[d];
                k += f[i] != 0;
                for (int d = last; d >= 0 && ++coord[d] == x->dims[d]; d--) coord[d] = 0;
            }
        }
    }
    cpu_free(flags);
    return NETRUN_OK;
}

/* ---- Unique ---- */

/* Order of two elements of one dtype: floats by value with NaN last (NaNs equal), integers exactly. */
static int elem_cmp(const void *p, netrun_dtype t, int64_t a, int64_t b) {
#define CMP3(x, y) ((x) < (y) ? -1 : (x) > (y) ? 1 : 0)
#define FCMP(x, y) ((x) != (x) ? ((y) != (y) ? 0 : 1) : (y) != (y) ? -1 : CMP3(x, y))
    switch (t) {
    case NETRUN_DTYPE_FLOAT: { float x = ((const float *)p)[a], y = ((const float *)p)[b]; return FCMP(x, y); }
    case NETRUN_DTYPE_DOUBLE: { double x = ((const double *)p)[a], y = ((const double *)p)[b]; return FCMP(x, y); }
    case NETRUN_DTYPE_FLOAT16: {
        float x = cpu_half_to_float(((const uint16_t *)p)[a]), y = cpu_half_to_float(((const uint16_t *)p)[b]);
        return FCMP(x, y);
    }
    case NETRUN_DTYPE_BFLOAT16: {
        float x = cpu_bf16_to_float(((const uint16_t *)p)[a]), y = cpu_bf16_to_float(((const uint16_t *)p)[b]);
        return FCMP(x, y);
    }
    case NETRUN_DTYPE_INT8: return CMP3(((const int8_t *)p)[a], ((const int8_t *)p)[b]);
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_BOOL: return CMP3(((const uint8_t *)p)[a], ((const uint8_t *)p)[b]);
    case NETRUN_DTYPE_INT16: return CMP3(((const int16_t *)p)[a], ((const int16_t *)p)[b]);
    case NETRUN_DTYPE_UINT16: return CMP3(((const uint16_t *)p)[a], ((const uint16_t *)p)[b]);
    case NETRUN_DTYPE_INT32: return CMP3(((const int32_t *)p)[a], ((const int32_t *)p)[b]);
    case NETRUN_DTYPE_UINT32: return CMP3(((const uint32_t *)p)[a], ((const uint32_t *)p)[b]);
    case NETRUN_DTYPE_INT64: return CMP3(((const int64_t *)p)[a], ((const int64_t *)p)[b]);
    case NETRUN_DTYPE_UINT64: return CMP3(((const uint64_t *)p)[a], ((const uint64_t *)p)[b]);
    default: return 0;
    }
#undef FCMP
#undef CMP3
}

typedef struct unique_view {
    const void *x;
    netrun_dtype dt;
    int64_t outer, m, inner; /* slice s = elements (o, s, i) */
} unique_view;

/* Lexicographic order of slices a and b. */
static int slice_cmp(const unique_view *v, int64_t a, int64_t b) {
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t i = 0; i < v->inner; i++) {
            int64_t base = o * v->m * v->inner + i;
            int r = elem_cmp(v->x, v->dt, base + a * v->inner, base + b * v->inner);
            if (r) return r;
        }
    return 0;
}

/* Stable merge sort of idx[0..n) by key(v, ...); tmp has n entries. by_first: order by first[] instead. */
static void merge_sort(int64_t *idx, int64_t *tmp, int64_t n, const unique_view *v, const int64_t *first) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                int c = first ? (first[idx[b]] < first[idx[a]] ? 1 : 0) : slice_cmp(v, idx[b], idx[a]) < 0;
                tmp[k++] = c ? idx[b++] : idx[a++];
            }
            while (a < mid) tmp[k++] = idx[a++];
            while (b < hi) tmp[k++] = idx[b++];
        }
        memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
    }
}

static netrun_status run_unique(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_unique_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "Unique");
    if (st != NETRUN_OK) return st;
    if (!p || (p->has_axis && (p->axis < 0 || p->axis >= x->rank)))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "unique: bad params");
    unique_view v = {x->data, x->dtype, 1, cpu_count(x), 1};
    if (p->has_axis) {
        v.m = x->dims[p->axis];
        for (int d = 0; d < p->axis; d++) v.outer *= x->dims[d];
        for (int d = p->axis + 1; d < x->rank; d++) v.inner *= x->dims[d];
    }
    const int64_t m = v.m;
    /* idx, tmp, group of each slice, first slice of each group, count of each group, rank of each group */
    int64_t *buf = cpu_alloc(sizeof(int64_t) * (size_t)(6 * m + 1));
    if (!buf) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "unique: out of memory for %lld slices", (long long)m);
    int64_t *idx = buf, *tmp = idx + m, *group = tmp + m, *first = group + m, *cnt = first + m, *order = cnt + m;
    for (int64_t i = 0; i < m; i++) idx[i] = i;
    merge_sort(idx, tmp, m, &v, NULL);
    int64_t u = 0;
    for (int64_t k = 0; k < m; k++) {
        if (k == 0 || slice_cmp(&v, idx[k - 1], idx[k]) != 0) {
            first[u] = idx[k]; /* stable: the first of a run is its first occurrence */
            cnt[u] = 0;
            u++;
        }
        group[idx[k]] = u - 1;
        cnt[u - 1]++;
    }
    /* order[r] = group shown at output position r; tmp[g] = output position of group g */
    for (int64_t g = 0; g < u; g++) order[g] = g;
    if (!p->sorted) merge_sort(order, tmp, u, &v, first);
    for (int64_t r = 0; r < u; r++) tmp[order[r]] = r;

    int64_t dims[NETRUN_MAX_RANK];
    if (p->present[0]) {
        int rank = 1;
        if (p->has_axis) {
            rank = x->rank;
            memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
            dims[p->axis] = u;
        } else
            dims[0] = u;
        st = args->alloc_output(args->exec, 0, rank, dims);
        if (st != NETRUN_OK) goto done;
        unsigned char *y = args->outputs[0].data;
        const unsigned char *xb = x->data;
        size_t row = es * (size_t)v.inner;
        for (int64_t o = 0; o < v.outer; o++)
            for (int64_t r = 0; r < u; r++)
                memcpy(y + (size_t)((o * u + r) * v.inner) * es, xb + (size_t)((o * m + first[order[r]]) * v.inner) * es, row);
    }
    dims[0] = u;
    if (p->present[1]) {
        if ((st = args->alloc_output(args->exec, 1, 1, dims)) != NETRUN_OK) goto done;
        for (int64_t r = 0; r < u; r++) ((int64_t *)args->outputs[1].data)[r] = first[order[r]];
    }
    if (p->present[2]) {
        dims[0] = m;
        if (!args->outputs[2].data && (st = args->alloc_output(args->exec, 2, 1, dims)) != NETRUN_OK) goto done;
        for (int64_t i = 0; i < m; i++) ((int64_t *)args->outputs[2].data)[i] = tmp[group[i]];
        dims[0] = u;
    }
    if (p->present[3]) {
        if ((st = args->alloc_output(args->exec, 3, 1, dims)) != NETRUN_OK) goto done;
        for (int64_t r = 0; r < u; r++) ((int64_t *)args->outputs[3].data)[r] = cnt[order[r]];
    }
done:
    cpu_free(buf);
    return st;
}

/* ---- OneHot ---- */

static int64_t load_index(const void *p, netrun_dtype t, int64_t i, int *ok) {
    *ok = 1;
    switch (t) {
    case NETRUN_DTYPE_INT8: return ((const int8_t *)p)[i];
    case NETRUN_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case NETRUN_DTYPE_INT16: return ((const int16_t *)p)[i];
    case NETRUN_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case NETRUN_DTYPE_INT32: return ((const int32_t *)p)[i];
    case NETRUN_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case NETRUN_DTYPE_INT64: return ((const int64_t *)p)[i];
    case NETRUN_DTYPE_UINT64: {
        uint64_t v = ((const uint64_t *)p)[i];
        if (v > INT64_MAX) *ok = 0;
        return (int64_t)v;
    }
    default: {
        double d = t == NETRUN_DTYPE_FLOAT ? ((const float *)p)[i]
                 : t == NETRUN_DTYPE_DOUBLE ? ((const double *)p)[i]
                 : t == NETRUN_DTYPE_FLOAT16 ? cpu_half_to_float(((const uint16_t *)p)[i])
                 : cpu_bf16_to_float(((const uint16_t *)p)[i]);
        /* a class matches only an equal value: NaN, fractions and values beyond int64 match none */
        if (!(d > -9.0e18 && d < 9.0e18) || d != floor(d)) { *ok = 0; return 0; }
        return (int64_t)d;
    }
    }
}

static netrun_status run_onehot(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_onehot_params *p = args->params;
    const netrun_tensor *ind = &args->inputs[0], *val = &args->inputs[2];
    netrun_tensor *y = &args->outputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(val, &es, "OneHot");
    if (st != NETRUN_OK) return st;
    if (!p || p->axis < 0 || p->axis >= y->rank || y->dims[p->axis] != p->depth)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "onehot: bad params");
    int64_t outer = 1, inner = 1, depth = p->depth;
    for (int d = 0; d < p->axis; d++) outer *= y->dims[d];
    for (int d = p->axis + 1; d < y->rank; d++) inner *= y->dims[d];
    unsigned char *yb = y->data;
    const unsigned char *off = val->data, *on = off + es;
    int64_t n = outer * depth * inner;
    for (int64_t i = 0; i < n; i++) memcpy(yb + (size_t)i * es, off, es);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int ok;
            int64_t k = load_index(ind->data, ind->dtype, o * inner + i, &ok);
            if (k < 0) k += depth;
            if (!ok || k < 0 || k >= depth) continue; /* out of range: all off */
            memcpy(yb + (size_t)((o * depth + k) * inner + i) * es, on, es);
        }
    return NETRUN_OK;
}

/* ---- Compress ---- */

static netrun_status run_compress(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_compress_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *cond = &args->inputs[1];
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "Compress");
    if (st != NETRUN_OK) return st;
    if (!p || (p->has_axis && (p->axis < 0 || p->axis >= x->rank)))
        return cpu_host->error(NETRUN_ERR_INTERNAL, "compress: bad params");
    int64_t outer = 1, n = cpu_count(x), inner = 1;
    if (p->has_axis) {
        n = x->dims[p->axis];
        for (int d = 0; d < p->axis; d++) outer *= x->dims[d];
        for (int d = p->axis + 1; d < x->rank; d++) inner *= x->dims[d];
    }
    const uint8_t *c = cond->data;
    int64_t clen = cond->dims[0], kept = 0;
    for (int64_t i = 0; i < clen; i++) {
        if (!c[i]) continue;
        if (i >= n)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                                   "Compress: condition selects entry %lld but the input has %lld along the axis",
                                   (long long)i, (long long)n);
        kept++;
    }
    int64_t dims[NETRUN_MAX_RANK];
    int rank = 1;
    if (p->has_axis) {
        rank = x->rank;
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
        dims[p->axis] = kept;
    } else
        dims[0] = kept;
    st = args->alloc_output(args->exec, 0, rank, dims);
    if (st != NETRUN_OK) return st;
    unsigned char *y = args->outputs[0].data;
    const unsigned char *xb = x->data;
    size_t row = es * (size_t)inner;
    int64_t lim = clen < n ? clen : n;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < lim; i++)
            if (c[i]) {
                memcpy(y, xb + (size_t)((o * n + i) * inner) * es, row);
                y += row;
            }
    return NETRUN_OK;
}

/* ---- ReverseSequence ---- */

static netrun_status run_revseq(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_reverse_sequence_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *lens = &args->inputs[1];
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "ReverseSequence");
    if (st != NETRUN_OK) return st;
    if (!p) return cpu_host->error(NETRUN_ERR_INTERNAL, "reversesequence: bad params");
    int64_t T = x->dims[p->time_axis], B = x->dims[p->batch_axis], inner = 1;
    for (int d = 2; d < x->rank; d++) inner *= x->dims[d];
    const int64_t *len = lens->data;
    for (int64_t b = 0; b < B; b++)
        if (len[b] < 0 || len[b] > T)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                                   "ReverseSequence: sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                                   (long long)len[b], (long long)T);
    size_t row = es * (size_t)inner;
    const unsigned char *xb = x->data;
    unsigned char *y = args->outputs[0].data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t src = t < len[b] ? len[b] - 1 - t : t;
            int64_t di = p->time_axis == 0 ? t * B + b : b * T + t, si = p->time_axis == 0 ? src * B + b : b * T + src;
            memcpy(y + (size_t)di * row, xb + (size_t)si * row, row);
        }
    return NETRUN_OK;
}

/* ---- TensorScatter ---- */

static netrun_status run_tscatter(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_tensor_scatter_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0], *u = &args->inputs[1];
    const netrun_tensor *wi = args->n_inputs > 2 && args->inputs[2].rank == 1 ? &args->inputs[2] : NULL;
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "TensorScatter");
    if (st != NETRUN_OK) return st;
    if (!p || p->axis < 1 || p->axis >= x->rank) return cpu_host->error(NETRUN_ERR_INTERNAL, "tensorscatter: bad params");
    unsigned char *y = args->outputs[0].data;
    if (y != x->data) memcpy(y, x->data, (size_t)cpu_count(x) * es);
    int64_t prefix = 1, per_batch = 1, inner = 1, maxlen = x->dims[p->axis], seq = u->dims[p->axis];
    for (int d = 0; d < p->axis; d++) prefix *= x->dims[d];
    for (int d = 1; d < p->axis; d++) per_batch *= x->dims[d];
    for (int d = p->axis + 1; d < x->rank; d++) inner *= x->dims[d];
    size_t row = es * (size_t)inner;
    const unsigned char *ub = u->data;
    for (int64_t q = 0; q < prefix; q++) {
        int64_t b = q / per_batch, w = wi ? ((const int64_t *)wi->data)[b] : 0;
        if (w < 0 || (!p->circular && w + seq > maxlen))
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                                   "TensorScatter: write_indices[%lld] = %lld with %lld updates does not fit %lld",
                                   (long long)b, (long long)w, (long long)seq, (long long)maxlen);
        for (int64_t s = 0; s < seq; s++) {
            int64_t dst = (w + s) % maxlen;
            memcpy(y + (size_t)(q * maxlen + dst) * row, ub + (size_t)(q * seq + s) * row, row);
        }
    }
    return NETRUN_OK;
}

/* ---- training optimizers: one update step per tensor, computed in double ---- */

static netrun_status run_optimizer(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_optimizer_params *p = args->params;
    int k_in = p && p->kind == NETRUN_OPT_ADAM ? 4 : 3;
    if (!p || p->n < 1 || args->n_inputs != 2 + k_in * p->n)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "optimizer: bad params");
    double r = cpu_load_f(args->inputs[0].data, args->inputs[0].dtype, 0);
    int64_t t = *(const int64_t *)args->inputs[1].data;
    const int n = p->n;
    const double nc = p->norm_coefficient, al = p->alpha, be = p->beta, eps = p->epsilon;
    for (int q = 0; q < n; q++) {
        const netrun_tensor *X = &args->inputs[2 + q];
        const void *G = args->inputs[2 + n + q].data, *S1 = args->inputs[2 + 2 * n + q].data;
        const void *S2 = k_in == 4 ? args->inputs[2 + 3 * n + q].data : NULL;
        netrun_dtype dt = X->dtype;
        /* absent outputs (rank -1, no data) are skipped */
        void *ox = args->n_outputs > q && args->outputs[q].data ? args->outputs[q].data : NULL;
        void *o1 = args->n_outputs > n + q && args->outputs[n + q].data ? args->outputs[n + q].data : NULL;
        void *o2 = k_in == 4 && args->n_outputs > 2 * n + q && args->outputs[2 * n + q].data ? args->outputs[2 * n + q].data : NULL;
        int64_t cnt = cpu_count(X);
        for (int64_t i = 0; i < cnt; i++) {
            double x = cpu_load_f(X->data, dt, i), g = nc * x + cpu_load_f(G, dt, i), s1 = cpu_load_f(S1, dt, i), xn, s1n, s2n = 0;
            if (p->kind == NETRUN_OPT_ADAGRAD) {
                double rr = r / (1.0 + (double)t * p->decay_factor);
                s1n = s1 + g * g;
                xn = x - rr * g / (sqrt(s1n) + eps);
            } else if (p->kind == NETRUN_OPT_ADAM) {
                double h = cpu_load_f(S2, dt, i);
                s1n = al * s1 + (1 - al) * g;
                s2n = be * h + (1 - be) * g * g;
                double ra = t > 0 ? r * sqrt(1 - pow(be, (double)t)) / (1 - pow(al, (double)t)) : r;
                xn = (1 - p->norm_coefficient_post) * (x - ra * (s1n / (sqrt(s2n) + eps)));
            } else {
                s1n = al * s1 + (t > 0 ? be : 1.0) * g;
                xn = p->nesterov ? x - r * (g + al * s1n) : x - r * s1n;
            }
            if (ox) cpu_store_f(ox, dt, i, xn);
            if (o1) cpu_store_f(o1, dt, i, s1n);
            if (o2) cpu_store_f(o2, dt, i, s2n);
        }
    }
    return NETRUN_OK;
}

/* ---- TfIdfVectorizer: count pool n-grams (items skip_distance apart) per row ---- */

static int64_t tok(const netrun_tensor *x, int64_t i) {
    return x->dtype == NETRUN_DTYPE_INT32 ? ((const int32_t *)x->data)[i] : ((const int64_t *)x->data)[i];
}

/* Pool n-grams by content: an open-addressing table of gram indices (the later of two equal n-grams wins, as the
 * spec's map does), so each window costs one hash and one compare instead of a scan of the pool. */
typedef struct {
    int64_t *slot; /* gram index or -1 */
    int64_t mask;
} tfidf_table;

static uint64_t tfidf_mix(uint64_t h, int64_t v) {
    h ^= (uint64_t)v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t tfidf_hash_pool(const netrun_tfidf_params *p, const int64_t *gr) {
    uint64_t h = (uint64_t)gr[0];
    for (int64_t k = 0; k < gr[0]; k++) h = tfidf_mix(h, p->pool[gr[1] + k]);
    return h;
}

static int tfidf_same_pool(const netrun_tfidf_params *p, const int64_t *a, const int64_t *b) {
    if (a[0] != b[0]) return 0;
    for (int64_t k = 0; k < a[0]; k++)
        if (p->pool[a[1] + k] != p->pool[b[1] + k]) return 0;
    return 1;
}

static void tfidf_destroy(void *state) {
    tfidf_table *t = state;
    if (t) free(t->slot);
    free(t);
}

/* The table is built once per node (the pool is an attribute); no table: no pool n-gram can match. */
static netrun_status tfidf_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    (void)ctx;
    const netrun_tfidf_params *p = node->params;
    *state = NULL;
    *ws = 0;
    if (!p) return cpu_host->error(NETRUN_ERR_INTERNAL, "tfidf: bad params");
    if (p->n_grams <= 0 || p->max_gram < p->min_gram) return NETRUN_OK;
    tfidf_table *t = calloc(1, sizeof *t);
    if (!t) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "TfIdfVectorizer: %lld n-grams", (long long)p->n_grams);
    int64_t size = 16;
    while (size < 2 * p->n_grams) size *= 2;
    t->mask = size - 1;
    t->slot = malloc(sizeof(int64_t) * (size_t)size);
    if (!t->slot) {
        free(t);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "TfIdfVectorizer: %lld n-grams", (long long)p->n_grams);
    }
    for (int64_t i = 0; i < size; i++) t->slot[i] = -1;
    for (int64_t g = 0; g < p->n_grams; g++) {
        const int64_t *gr = p->grams + 3 * g;
        int64_t i = (int64_t)(tfidf_hash_pool(p, gr) & (uint64_t)t->mask);
        while (t->slot[i] >= 0 && !tfidf_same_pool(p, p->grams + 3 * t->slot[i], gr)) i = (i + 1) & t->mask;
        t->slot[i] = g;
    }
    *state = t;
    return NETRUN_OK;
}

/* The column of the pool n-gram equal to the n tokens at base, base+d, ..., or -1. */
static int64_t tfidf_find(const netrun_tfidf_params *p, const tfidf_table *t, const netrun_tensor *x, int64_t base,
                          int64_t d, int64_t n) {
    uint64_t h = (uint64_t)n;
    for (int64_t k = 0; k < n; k++) h = tfidf_mix(h, tok(x, base + k * d));
    for (int64_t i = (int64_t)(h & (uint64_t)t->mask); t->slot[i] >= 0; i = (i + 1) & t->mask) {
        const int64_t *gr = p->grams + 3 * t->slot[i];
        if (gr[0] != n) continue;
        int64_t k = 0;
        while (k < n && tok(x, base + k * d) == p->pool[gr[1] + k]) k++;
        if (k == n) return gr[2];
    }
    return -1;
}

static netrun_status run_tfidf(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx;
    const tfidf_table *t = state;
    const netrun_tfidf_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || (x->dtype != NETRUN_DTYPE_INT32 && x->dtype != NETRUN_DTYPE_INT64) || x->rank < 1)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "tfidf: bad params");
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, C = x->dims[x->rank - 1], out = p->output_size;
    float *yv = y->data;
    memset(yv, 0, sizeof(float) * (size_t)(rows * out));
    /* n-gram lengths that can match: the layer clamps max_gram to the pool's longest, so an empty pool leaves
     * none, no table (tfidf_create), and nothing to count (a loop over the windows regardless took 50 s on a fuzzed
     * model) */
    const int64_t lo = p->min_gram, hi = p->max_gram;
    if (t) {
        /* windows: one per start, skip distance and length; distances up to max_skip + 1 and (2+ items) within
         * the row. A huge max_skip_count over long rows makes that quadratic: refused past 2^28 windows in all */
        double dists = hi > 1 ? (C > 1 ? (double)C - 1 : 1) : 1;
        if (hi > 1 && (double)p->max_skip + 1 < dists) dists = (double)p->max_skip + 1;
        double windows = (double)rows * (double)C * dists * (double)(hi - lo + 1);
        if (dists > 1 && windows > (double)(1 << 28))
            return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "TfIdfVectorizer: %lld rows of %lld tokens with "
                                   "max_skip_count %lld make %.3g windows, over netrun's limit of 2^28 (lower "
                                   "max_skip_count)", (long long)rows, (long long)C, (long long)p->max_skip, windows);
        for (int64_t r = 0; r < rows; r++) {
            float *f = yv + r * out;
            int64_t base = r * C, start_size = lo;
            for (int64_t d = 1; d - 1 <= p->max_skip; d++) {
                /* no n-gram of 2+ items fits once the distance spans the row (bounds a huge max_skip_count) */
                if (start_size > 1 && d * (start_size - 1) >= C) break;
                for (int64_t s0 = 0; s0 + d * (start_size - 1) < C; s0++)
                    for (int64_t n = start_size; n <= hi && s0 + d * (n - 1) < C; n++) {
                        int64_t col = tfidf_find(p, t, x, base + s0, d, n);
                        if (col >= 0 && col < out) f[col] += 1;
                    }
                if (start_size == 1) { /* unigrams count once, not once per skip distance */
                    start_size = 2;
                    if (start_size > hi) break;
                }
            }
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        float *f = yv + r * out;
        for (int64_t i = 0; i < out; i++) {
            if (p->mode == 1) f[i] = f[i] > 0 ? (p->weights ? p->weights[i] : 1.0f) : 0.0f;
            else if (p->mode == 2 && p->weights) f[i] *= p->weights[i];
        }
    }
    return NETRUN_OK;
}

/* ---- ai.onnx.ml Binarizer (x > threshold ? 1 : 0) and ArrayFeatureExtractor (gather on the last dim) ---- */

static netrun_status run_binarizer(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_unary_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p) return cpu_host->error(NETRUN_ERR_INTERNAL, "binarizer: bad params");
    int64_t n = cpu_count(x);
    switch (x->dtype) {
    case NETRUN_DTYPE_FLOAT:
        for (int64_t i = 0; i < n; i++) ((float *)y->data)[i] = ((const float *)x->data)[i] > p->alpha ? 1.0f : 0.0f;
        break;
    case NETRUN_DTYPE_DOUBLE:
        for (int64_t i = 0; i < n; i++) ((double *)y->data)[i] = ((const double *)x->data)[i] > (double)p->alpha ? 1.0 : 0.0;
        break;
    case NETRUN_DTYPE_INT32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)y->data)[i] = ((const int32_t *)x->data)[i] > p->alpha;
        break;
    case NETRUN_DTYPE_INT64:
        for (int64_t i = 0; i < n; i++) ((int64_t *)y->data)[i] = (double)((const int64_t *)x->data)[i] > p->alpha;
        break;
    default: return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "binarizer: dtype %d not supported", (int)x->dtype);
    }
    return NETRUN_OK;
}

static netrun_status run_afe(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx, (void)state;
    const netrun_tensor *x = &args->inputs[0], *ind = &args->inputs[1];
    netrun_tensor *y = &args->outputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "ArrayFeatureExtractor");
    if (st != NETRUN_OK) return st;
    int64_t n = x->dims[x->rank - 1], rows = cpu_count(x) / (n ? n : 1), k = cpu_count(ind);
    const int64_t *iv = ind->data;
    for (int64_t j = 0; j < k; j++)
        if (iv[j] < 0 || iv[j] >= n)
            return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "ArrayFeatureExtractor: index %lld is outside [0, %lld)",
                                   (long long)iv[j], (long long)n);
    const unsigned char *xb = x->data;
    unsigned char *yb = y->data;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < k; j++) memcpy(yb + (size_t)(r * k + j) * es, xb + (size_t)(r * n + iv[j]) * es, es);
    return NETRUN_OK;
}

#define FLOATS (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16))
#define NUMERIC_INDEX (CPU_ALL_DTYPES & ~NETRUN_DTYPE_BIT(NETRUN_DTYPE_BOOL))

const cpu_op cpu_ops_index_ops[] = {
    {"NonZero", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_nonzero, NULL},
    {"Unique", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_unique, NULL},
    {"OneHot", NULL, NUMERIC_INDEX, "", NULL, NULL, run_onehot, NULL},
    {"Compress", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_compress, NULL},
    {"ReverseSequence", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_revseq, NULL},
    {"TensorScatter", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_tscatter, NULL},
    {"TfIdfVectorizer", NULL, NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64),
     "integer tokens only", NULL, tfidf_create, run_tfidf, tfidf_destroy},
    {"Binarizer", "ai.onnx.ml", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) |
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64), "", NULL, NULL, run_binarizer, NULL},
    {"ArrayFeatureExtractor", "ai.onnx.ml", CPU_ALL_DTYPES, "", NULL, NULL, run_afe, NULL},
    {"Adagrad", "ai.onnx.preview.training", FLOATS, "X float or double", NULL, NULL, run_optimizer, NULL},
    {"Adam", "ai.onnx.preview.training", FLOATS, "X float or double", NULL, NULL, run_optimizer, NULL},
    {"Momentum", "ai.onnx.preview.training", FLOATS, "X float or double", NULL, NULL, run_optimizer, NULL},
    {0},
};
