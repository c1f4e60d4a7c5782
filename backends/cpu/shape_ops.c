/* CPU kernels: shape_ops. Everything here moves bytes by element size, so it serves every numeric dtype. */
#include <stdio.h>

#include "cpu_internal.h"

/* The value 1 in dtype t. */
static void write_one(netrun_dtype t, void *p) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: { float v = 1; memcpy(p, &v, 4); break; }
    case NETRUN_DTYPE_DOUBLE: { double v = 1; memcpy(p, &v, 8); break; }
    case NETRUN_DTYPE_FLOAT16: { uint16_t v = 0x3c00; memcpy(p, &v, 2); break; }
    case NETRUN_DTYPE_BFLOAT16: { uint16_t v = 0x3f80; memcpy(p, &v, 2); break; }
    default: {
        size_t es = cpu_esize(t);
        uint64_t v = 1; /* little-endian integer 1 of any width */
        memcpy(p, &v, es);
    }
    }
}

/* Fill n elements of size es with the pattern at v. */
static void fill_pattern(void *dst, const void *v, size_t es, int64_t n) {
    unsigned char *d = dst;
    int zero = 1;
    for (size_t i = 0; i < es; i++) zero &= ((const unsigned char *)v)[i] == 0;
    if (zero) { memset(d, 0, (size_t)n * es); return; }
    if (n <= 0) return;
    memcpy(d, v, es);
    /* doubling copies */
    int64_t have = 1;
    while (have < n) {
        int64_t c = have < n - have ? have : n - have;
        memcpy(d + (size_t)have * es, d, (size_t)c * es);
        have += c;
    }
}

/* ---- byte copies, split over threads for large tensors ---- */

typedef struct { unsigned char *dst; const unsigned char *src; } copy_job;

static void copy_range(void *arg, int64_t b, int64_t e) {
    copy_job *j = arg;
    memcpy(j->dst + b, j->src + b, (size_t)(e - b));
}

static void parallel_copy(cpu_context *ctx, void *dst, const void *src, size_t bytes) {
    if (dst == src || !bytes) return;
    unsigned char *d = dst;
    const unsigned char *s = src;
    /* overlapping buffers (aliasing) must use memmove, and serially */
    if (bytes < ((size_t)1 << 20) || (d < s + bytes && s < d + bytes)) {
        memmove(dst, src, bytes);
        return;
    }
    copy_job j = {d, s};
    cpu_parallel_for(ctx, (int64_t)bytes, 1 << 18, copy_range, &j);
}

static netrun_status run_view(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)state;
    const netrun_tensor *x = &a->inputs[0];
    netrun_tensor *y = &a->outputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "copy");
    if (st) return st;
    size_t bytes = (size_t)cpu_count(y) * es;
    if (bytes > x->nbytes && x->nbytes) bytes = x->nbytes;
    parallel_copy(ctx, y->data, x->data, bytes);
    return NETRUN_OK;
}

/* Dropout before opset 12: onnxruntime (the reference) writes an all-false mask in inference; from 12 the
 * spec says all true. The kernel state marks the old behaviour. */
static const int dropout_zero_mask;

static netrun_status create_dropout(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    (void)ctx;
    *ws = 0;
    *state = node->opset < 12 ? (void *)&dropout_zero_mask : NULL;
    return NETRUN_OK;
}

static netrun_status run_dropout(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    netrun_status st = run_view(ctx, state, a);
    if (st) return st;
    if (a->n_outputs > 1 && a->outputs[1].rank >= 0 && a->outputs[1].data) {
        netrun_tensor *m = &a->outputs[1];
        size_t es = cpu_esize(m->dtype);
        if (!es) return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu Dropout: mask dtype %d", (int)m->dtype);
        unsigned char one[8] = {0};
        if (state != &dropout_zero_mask) write_one(m->dtype, one);
        fill_pattern(m->data, one, es, cpu_count(m));
    }
    return NETRUN_OK;
}

static netrun_status run_shape(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)ctx; (void)state;
    const netrun_shape_params *p = a->params;
    const netrun_tensor *x = &a->inputs[0];
    int start = p ? p->start : 0, end = p ? p->end : x->rank;
    if (start < 0 || end > x->rank || start > end)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Shape: range [%d, %d) outside rank %d", start, end, x->rank);
    int64_t *y = a->outputs[0].data;
    for (int i = start; i < end; i++) y[i - start] = x->dims[i];
    return NETRUN_OK;
}

static netrun_status run_size(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)ctx; (void)state;
    *(int64_t *)a->outputs[0].data = cpu_count(&a->inputs[0]);
    return NETRUN_OK;
}

static netrun_status run_cos(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)ctx; (void)state;
    const netrun_fill_params *p = a->params;
    netrun_tensor *y = &a->outputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(y, &es, "ConstantOfShape");
    if (st) return st;
    static const unsigned char zero[16];
    fill_pattern(y->data, p ? p->value : zero, es, cpu_count(y));
    return NETRUN_OK;
}

static int supports_out_dtype(const netrun_node_desc *node, char *reason, size_t size) {
    /* UNDEFINED: the node is inferred at run time (shape known late); the kernel checks the dtype then */
    if (node->n_outputs < 1 || !((CPU_ALL_DTYPES | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UNDEFINED)) &
                                 NETRUN_DTYPE_BIT(node->outputs[0].dtype))) {
        snprintf(reason, size, "output dtype %d not supported", node->n_outputs ? (int)node->outputs[0].dtype : -1);
        return 0;
    }
    return 1;
}

/* ---- Expand and Tile: per output row (all dims but the last) ---- */

typedef struct {
    const unsigned char *src;
    unsigned char *dst;
    size_t es;
    int rank;
    int64_t odims[NETRUN_MAX_RANK];
    int64_t idims[NETRUN_MAX_RANK];
    int64_t istr[NETRUN_MAX_RANK];   /* Expand: broadcast strides (0 on broadcast dims) */
} bcast_job;

static void expand_rows(void *arg, int64_t b, int64_t e) {
    bcast_job *j = arg;
    int r = j->rank;
    int64_t inner = j->odims[r - 1], s_in = j->istr[r - 1];
    for (int64_t row = b; row < e; row++) {
        int64_t rem = row, off = 0;
        for (int d = r - 2; d >= 0; d--) {
            off += (rem % j->odims[d]) * j->istr[d];
            rem /= j->odims[d];
        }
        unsigned char *dst = j->dst + (size_t)(row * inner) * j->es;
        const unsigned char *src = j->src + (size_t)off * j->es;
        if (s_in) memcpy(dst, src, (size_t)inner * j->es);
        else fill_pattern(dst, src, j->es, inner);
    }
}

static void tile_rows(void *arg, int64_t b, int64_t e) {
    bcast_job *j = arg;
    int r = j->rank;
    int64_t inner = j->odims[r - 1], in_inner = j->idims[r - 1];
    for (int64_t row = b; row < e; row++) {
        int64_t rem = row, off = 0, str = in_inner;
        for (int d = r - 2; d >= 0; d--) {
            off += (rem % j->odims[d]) % j->idims[d] * str;
            rem /= j->odims[d];
            str *= j->idims[d];
        }
        unsigned char *dst = j->dst + (size_t)(row * inner) * j->es;
        const unsigned char *src = j->src + (size_t)off * j->es;
        for (int64_t k = 0; k < inner; k += in_inner) memcpy(dst + (size_t)k * j->es, src, (size_t)in_inner * j->es);
    }
}

static netrun_status run_bcast(cpu_context *ctx, const netrun_kernel_args *a, int tile) {
    const netrun_tensor *x = &a->inputs[0];
    netrun_tensor *y = &a->outputs[0];
    bcast_job j;
    netrun_status st = cpu_need_esize(x, &j.es, tile ? "Tile" : "Expand");
    if (st) return st;
    int64_t n = cpu_count(y);
    if (n == 0) return NETRUN_OK;
    j.src = x->data;
    j.dst = y->data;
    if (y->rank == 0) { memcpy(j.dst, j.src, j.es); return NETRUN_OK; }
    j.rank = y->rank;
    memcpy(j.odims, y->dims, sizeof(int64_t) * (size_t)y->rank);
    if (tile) {
        if (x->rank != y->rank) return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu Tile: rank mismatch");
        memcpy(j.idims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    } else {
        cpu_broadcast_strides(x->rank, x->dims, y->rank, y->dims, j.istr);
    }
    int64_t rows = n / y->dims[y->rank - 1];
    int64_t grain = 1 + (1 << 16) / (y->dims[y->rank - 1] * (int64_t)j.es + 1);
    cpu_parallel_for(ctx, rows, grain, tile ? tile_rows : expand_rows, &j);
    return NETRUN_OK;
}

static netrun_status run_expand(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)state;
    return run_bcast(ctx, a, 0);
}

static netrun_status run_tile(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)state;
    return run_bcast(ctx, a, 1);
}

/* ---- Range ---- */

static double scalar_of(const netrun_tensor *t) {
    switch (t->dtype) {
    case NETRUN_DTYPE_FLOAT: return *(const float *)t->data;
    case NETRUN_DTYPE_DOUBLE: return *(const double *)t->data;
    case NETRUN_DTYPE_INT16: return *(const int16_t *)t->data;
    case NETRUN_DTYPE_INT32: return *(const int32_t *)t->data;
    case NETRUN_DTYPE_INT64: return (double)*(const int64_t *)t->data;
    default: return 0;
    }
}

static netrun_status run_range(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)ctx; (void)state;
    netrun_tensor *y = &a->outputs[0];
    int64_t n = cpu_count(y);
    switch (y->dtype) {
    case NETRUN_DTYPE_FLOAT: {
        float s = *(const float *)a->inputs[0].data, d = *(const float *)a->inputs[2].data, *o = y->data;
        for (int64_t i = 0; i < n; i++) o[i] = s + (float)i * d;
        break;
    }
    case NETRUN_DTYPE_DOUBLE: {
        double s = *(const double *)a->inputs[0].data, d = *(const double *)a->inputs[2].data, *o = y->data;
        for (int64_t i = 0; i < n; i++) o[i] = s + (double)i * d;
        break;
    }
    case NETRUN_DTYPE_INT64: {
        int64_t s = *(const int64_t *)a->inputs[0].data, d = *(const int64_t *)a->inputs[2].data, *o = y->data;
        /* unsigned: i * d may pass INT64_MAX on the way (start -2^63, delta 2^62) though each value is in range */
        for (int64_t i = 0; i < n; i++) o[i] = (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
        break;
    }
    case NETRUN_DTYPE_INT32: {
        int32_t *o = y->data;
        int64_t s = (int64_t)scalar_of(&a->inputs[0]), d = (int64_t)scalar_of(&a->inputs[2]);
        for (int64_t i = 0; i < n; i++) o[i] = (int32_t)(s + i * d);
        break;
    }
    case NETRUN_DTYPE_INT16: {
        int16_t *o = y->data;
        int64_t s = (int64_t)scalar_of(&a->inputs[0]), d = (int64_t)scalar_of(&a->inputs[2]);
        for (int64_t i = 0; i < n; i++) o[i] = (int16_t)(s + i * d);
        break;
    }
    case NETRUN_DTYPE_FLOAT16:
    case NETRUN_DTYPE_BFLOAT16: { /* computed in float, stored rounded */
        double s = cpu_load_f(a->inputs[0].data, y->dtype, 0), d = cpu_load_f(a->inputs[2].data, y->dtype, 0);
        for (int64_t i = 0; i < n; i++) cpu_store_f(y->data, y->dtype, i, (float)(s + (double)i * d));
        break;
    }
    default: return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu Range: dtype %d not supported", (int)y->dtype);
    }
    return NETRUN_OK;
}

/* ---- EyeLike / Trilu ---- */

static netrun_status run_eyelike(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)ctx; (void)state;
    const netrun_eyelike_params *p = a->params;
    netrun_tensor *y = &a->outputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(y, &es, "EyeLike");
    if (st) return st;
    int64_t rows = y->dims[0], cols = y->dims[1], k = p ? p->k : 0;
    unsigned char *o = y->data, one[8] = {0};
    write_one(y->dtype, one);
    memset(o, 0, (size_t)(rows * cols) * es);
    for (int64_t i = 0; i < rows; i++) {
        int64_t j = i + k;
        if (j >= 0 && j < cols) memcpy(o + (size_t)(i * cols + j) * es, one, es);
    }
    return NETRUN_OK;
}

static netrun_status run_trilu(cpu_context *ctx, void *state, const netrun_kernel_args *a) {
    (void)state;
    const netrun_trilu_params *p = a->params;
    const netrun_tensor *x = &a->inputs[0];
    netrun_tensor *y = &a->outputs[0];
    size_t es;
    netrun_status st = cpu_need_esize(x, &es, "Trilu");
    if (st) return st;
    int64_t k = p ? p->k : 0;
    int upper = p ? p->upper : 1;
    if (a->n_inputs > 1 && a->inputs[1].rank >= 0 && a->inputs[1].data) k = *(const int64_t *)a->inputs[1].data;
    int64_t n = cpu_count(y);
    if (!n) return NETRUN_OK;
    int64_t rows = y->dims[y->rank - 2], cols = y->dims[y->rank - 1], mats = n / (rows * cols);
    parallel_copy(ctx, y->data, x->data, (size_t)n * es);
    unsigned char *o = y->data;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++) {
            unsigned char *row = o + (size_t)((m * rows + i) * cols) * es;
            /* upper keeps j >= i + k; lower keeps j <= i + k */
            int64_t lo, hi; /* zero the range [lo, hi) */
            if (upper) { lo = 0; hi = i + k; }
            else { lo = i + k + 1; hi = cols; }
            if (lo < 0) lo = 0;
            if (hi > cols) hi = cols;
            if (hi > lo) memset(row + (size_t)lo * es, 0, (size_t)(hi - lo) * es);
        }
    return NETRUN_OK;
}

const cpu_op cpu_ops_shape_ops[] = {
    {"Reshape", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_view, NULL},
    {"Flatten", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_view, NULL},
    {"Squeeze", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_view, NULL},
    {"Unsqueeze", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_view, NULL},
    {"Identity", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_view, NULL},
    {"Dropout", NULL, CPU_ALL_DTYPES, "inference only", NULL, create_dropout, run_dropout, NULL},
    {"Shape", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_shape, NULL},
    {"Size", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_size, NULL},
    {"ConstantOfShape", NULL, CPU_ALL_DTYPES, "", supports_out_dtype, NULL, run_cos, NULL},
    {"Expand", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_expand, NULL},
    {"Tile", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_tile, NULL},
    {"Range", NULL,
     NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) |
         NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) |
         NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) |
         NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16),
     "", NULL, NULL, run_range, NULL},
    {"EyeLike", NULL, CPU_ALL_DTYPES, "", supports_out_dtype, NULL, run_eyelike, NULL},
    {"Trilu", NULL, CPU_ALL_DTYPES, "", NULL, NULL, run_trilu, NULL},
    {0},
};
