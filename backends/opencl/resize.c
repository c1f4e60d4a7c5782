/* OpenCL kernels: Resize and Upsample. The tap tables (source offsets and weights per output index of every
 * dim) are computed on the host by the code the CPU backend uses (backends/common/resize_taps.h: coordinate
 * transforms, nearest rounding, cubic coefficients, exclude_outside and single-tap collapsing),
 * uploaded when shapes or params change, and resize.cl sums over every combination of taps per output element.
 * Nearest copies by element size (any dtype); linear and cubic take float, float16 and double. */
#include <math.h>

#include "opencl_internal.h"
#include "oclops_shared.h"
#include "../common/resize_taps.h"

OCL_SOURCE(resize);


#define MAX_TAPS NR_RESIZE_MAX_TAPS

typedef struct rs_state {
    cl_kernel k;
    netrun_dtype t;           /* the dtype k is built for */
    int nearest;              /* built as a copy by element size */
    cl_mem tidx, tw;          /* tap tables on the device */
    size_t cap;               /* entries they hold */
    int valid;                /* tables match the key below */
    int rank;
    int64_t in_dims[NETRUN_MAX_RANK], out_dims[NETRUN_MAX_RANK];
    netrun_resize_params params;
    oclops_meta m;            /* taps per dim (s0) and table starts (s1) */
} rs_state;

/* Taps of dim d (backends/common/resize_taps.h) into idx / w (out_n * MAX_TAPS room; outside: out_n scratch);
 * returns taps per output index. Offsets are scaled by stride; an output index outside the ROI
 * (tf_crop_and_resize) gets offsets -1, which resize.cl turns into the extrapolation value. */
static int build_taps(const netrun_resize_params *p, int d, int64_t in_n, int64_t out_n, int64_t stride, int64_t *idx,
                      float *w, unsigned char *outside) {
    int k = nr_resize_taps(p, d, in_n, out_n, idx, w, outside);
    for (int64_t o = 0; o < out_n; o++)
        for (int j = 0; j < k; j++) idx[o * k + j] = outside[o] ? -1 : idx[o * k + j] * stride;
    return k;
}

/* ---- the op ---- */

static int rs_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_resize_params *p = node->params;
    if (!p) return ocl_refuse(reason, size, "no params");
    if (node->n_inputs < 1 || node->inputs[0].rank < 1) return ocl_refuse(reason, size, "rank 0");
    netrun_dtype t = node->inputs[0].dtype;
    if (p->mode == NETRUN_RESIZE_NEAREST) {
        if (!ocl_esize(t)) return ocl_refuse(reason, size, "dtype %s", ocl_dtype_name(t));
    } else if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16 && t != NETRUN_DTYPE_DOUBLE) {
        return ocl_refuse(reason, size, "dtype %s not supported for %s mode", ocl_dtype_name(t),
                          p->mode == NETRUN_RESIZE_LINEAR ? "linear" : "cubic");
    }
    int down = 0;
    for (int d = 0; d < node->inputs[0].rank; d++) down |= p->scale[d] < 1.0f;
    if (p->antialias && p->mode != NETRUN_RESIZE_NEAREST && down)
        return ocl_refuse(reason, size, "antialias is not supported");
    return 1;
}

static void rs_destroy(ocl_context *ctx, void *state) {
    (void)ctx;
    rs_state *s = state;
    if (!s) return;
    if (s->tidx) clReleaseMemObject(s->tidx);
    if (s->tw) clReleaseMemObject(s->tw);
    ocl_host->free(s);
}

/* Get the kernel for dtype t (nearest: by element size). Descs at kernel creation may carry best guesses for
 * nodes inferred at run time, so runs compare and rebuild when needed. */
static netrun_status rs_kernels(ocl_context *ctx, rs_state *s, netrun_dtype t, int nearest) {
    char opts[128];
    int flt = t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16 || t == NETRUN_DTYPE_DOUBLE;
    int ok = nearest ? oclops_bytes_options(ocl_esize(t), opts, sizeof opts)
                     : flt && oclops_type_options(t, opts, sizeof opts);
    if (!ok) return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl Resize: dtype %s", ocl_dtype_name(t));
    netrun_status st = ocl_kernel_get(ctx, "resize", ocl_src_resize, opts, "rs_resize", &s->k);
    if (st == NETRUN_OK) {
        s->t = t;
        s->nearest = nearest;
    }
    return st;
}

static netrun_status rs_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)workspace;
    const netrun_resize_params *p = node->params;
    rs_state *s = ocl_host->alloc(sizeof *s, 16);
    if (!s) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl Resize: out of memory");
    memset(s, 0, sizeof *s);
    netrun_status st = rs_kernels(ctx, s, node->inputs[0].dtype, p && p->mode == NETRUN_RESIZE_NEAREST);
    if (st != NETRUN_OK) {
        ocl_host->free(s);
        return st;
    }
    *state = s;
    return NETRUN_OK;
}

/* (Re)build and upload the tap tables when the shapes or params differ from the last run's. */
static netrun_status rs_tables(ocl_context *ctx, rs_state *s, const netrun_resize_params *p, const netrun_tensor *x,
                               const netrun_tensor *y) {
    if (s->valid && s->rank == x->rank && !memcmp(s->in_dims, x->dims, sizeof(int64_t) * (size_t)x->rank) &&
        !memcmp(s->out_dims, y->dims, sizeof(int64_t) * (size_t)x->rank) && !memcmp(&s->params, p, sizeof *p))
        return NETRUN_OK;
    s->valid = 0;
    size_t total = 0;
    for (int d = 0; d < x->rank; d++) {
        if ((uint64_t)y->dims[d] > (SIZE_MAX / 64) / MAX_TAPS)
            return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Resize: output dim too large");
        total += (size_t)y->dims[d] * MAX_TAPS;
    }
    if (!total) total = 1;
    int64_t *idx = ocl_host->alloc(total * sizeof(int64_t), 64);
    float *w = ocl_host->alloc(total * sizeof(float), 64);
    unsigned char *outside = ocl_host->alloc(total, 64); /* per output index of one dim (total is larger) */
    netrun_status st = NETRUN_OK;
    if (!idx || !w || !outside) {
        st = ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl Resize: out of memory for %zu taps", total);
        goto done;
    }
    memset(&s->m, 0, sizeof s->m);
    s->m.rank = x->rank;
    int64_t stride = 1, at = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        int k = build_taps(p, d, x->dims[d], y->dims[d], stride, idx + at, w + at, outside);
        s->m.dims[d] = y->dims[d];
        s->m.s0[d] = k;
        s->m.s1[d] = at;
        at += y->dims[d] * k;
        stride *= x->dims[d];
    }
    if (total > s->cap) {
        if (s->tidx) clReleaseMemObject(s->tidx);
        if (s->tw) clReleaseMemObject(s->tw);
        s->tidx = s->tw = NULL;
        s->cap = 0;
        st = ocl_temp_alloc(ctx, total * sizeof(int64_t), &s->tidx);
        if (st == NETRUN_OK) st = ocl_temp_alloc(ctx, total * sizeof(float), &s->tw);
        if (st != NETRUN_OK) goto done;
        s->cap = total;
    }
    /* blocking writes: the host tables are freed right after */
    cl_int e = clEnqueueWriteBuffer(ctx->queue, s->tidx, CL_TRUE, 0, (size_t)at * sizeof(int64_t), idx, 0, NULL, NULL);
    if (e == CL_SUCCESS) e = clEnqueueWriteBuffer(ctx->queue, s->tw, CL_TRUE, 0, (size_t)at * sizeof(float), w, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        st = ocl_fail(e, "Resize taps upload");
        goto done;
    }
    s->rank = x->rank;
    memcpy(s->in_dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    memcpy(s->out_dims, y->dims, sizeof(int64_t) * (size_t)x->rank);
    s->params = *p;
    s->valid = 1;
done:
    ocl_host->free(idx);
    ocl_host->free(w);
    ocl_host->free(outside);
    return st;
}

static netrun_status rs_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    rs_state *s = state;
    const netrun_resize_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Resize: no params");
    if (x->rank < 1 || y->rank != x->rank)
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl Resize: rank %d -> %d", x->rank, y->rank);
    int64_t n = ocl_count(y);
    if (!n) return NETRUN_OK;
    if (!ocl_count(x)) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Resize: empty input, non-empty output");
    netrun_status st;
    int nearest = p->mode == NETRUN_RESIZE_NEAREST;
    if (x->dtype != s->t || nearest != s->nearest) {
        st = rs_kernels(ctx, s, x->dtype, nearest);
        if (st != NETRUN_OK) return st;
    }
    st = rs_tables(ctx, s, p, x, y);
    if (st != NETRUN_OK) return st;
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n), OCL_CLMEM(s->tidx), OCL_CLMEM(s->tw),
                   OCL_FLOAT(p->extrapolation_value), OCL_ULONG(oclops_value_bits(x->dtype, p->extrapolation_value)),
                   OCL_CONST(&s->m, sizeof s->m)};
    return ocl_launch1d(ctx, s->k, "Resize", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

#define OP(name, cons) {name, OCL_ALL_DTYPES, cons, rs_supports, rs_create, rs_run, rs_destroy, NULL},
const ocl_op ocl_ops_resize[] = {
    OP("Resize", "nearest: any dtype; linear/cubic: float, float16, double; no antialias downsampling")
    OP("Upsample", "nearest: any dtype; linear: float, float16, double")
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
