/* OpenCL kernel of ImagePreprocess (layers/preprocess.c, domain "com.netrun"): uint8 NHWC frames to float32/float16
 * NCHW (include/netrun_ops.h). The row and column taps come from the CPU kernel's code
 * (backends/common/image_preprocess.h), computed on the host and uploaded when the geometry changes, so every
 * backend samples the same coordinates; preprocess.cl combines them. */
#include <stdlib.h>

#include "opencl_internal.h"
#include "../common/image_preprocess.h"

OCL_SOURCE(preprocess);

typedef struct prep_state {
    cl_kernel k;
    netrun_dtype to;              /* the output dtype k is built for */
    cl_mem idx, w;                /* taps of the rows then the columns */
    size_t cap;                   /* output rows + columns they hold */
    int valid;
    netrun_image_preprocess_params key; /* the params the tables were made for */
} prep_state;

static void prep_destroy(ocl_context *ctx, void *state) {
    (void)ctx;
    prep_state *s = state;
    if (!s) return;
    if (s->idx) clReleaseMemObject(s->idx);
    if (s->w) clReleaseMemObject(s->w);
    ocl_host->free(s);
}

static netrun_status prep_kernel(ocl_context *ctx, prep_state *s, netrun_dtype to) {
    netrun_status st = ocl_kernel_get(ctx, "preprocess", ocl_src_preprocess,
                                      to == NETRUN_DTYPE_FLOAT16 ? "-DOUT_HALF=1" : "-DOUT_HALF=0", "image_preprocess",
                                      &s->k);
    if (st == NETRUN_OK) s->to = to;
    return st;
}

static netrun_status prep_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)workspace;
    const netrun_image_preprocess_params *p = node->params;
    prep_state *s = ocl_host->alloc(sizeof *s, 16);
    if (!s) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl ImagePreprocess: out of memory");
    memset(s, 0, sizeof *s);
    netrun_status st = prep_kernel(ctx, s, p ? p->to : NETRUN_DTYPE_FLOAT);
    if (st != NETRUN_OK) {
        ocl_host->free(s);
        return st;
    }
    *state = s;
    return NETRUN_OK;
}

static netrun_status prep_tables(ocl_context *ctx, prep_state *s, const netrun_image_preprocess_params *p) {
    if (s->valid && !memcmp(&s->key, p, sizeof *p)) return NETRUN_OK;
    s->valid = 0;
    size_t n = (size_t)(p->out_h + p->out_w);
    cl_int *idx = ocl_host->alloc(2 * n * sizeof(cl_int), 64);
    float *w = ocl_host->alloc(n * sizeof(float), 64);
    netrun_status st = NETRUN_OK;
    if (!idx || !w) {
        st = ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl ImagePreprocess: out of memory for %zu taps", n);
        goto done;
    }
    int nearest = p->interpolation == NETRUN_PREP_NEAREST;
    for (int64_t i = 0; i < p->out_h + p->out_w; i++) {
        int row = i < p->out_h;
        nr_prep_tap t = row ? nr_prep_tap_at(i, p->step_y, p->off_y, p->in_h, nearest)
                            : nr_prep_tap_at(i - p->out_h, p->step_x, p->off_x, p->in_w, nearest);
        idx[2 * i] = (cl_int)t.i0, idx[2 * i + 1] = (cl_int)t.i1, w[i] = t.w;
    }
    if (n > s->cap) {
        if (s->idx) clReleaseMemObject(s->idx);
        if (s->w) clReleaseMemObject(s->w);
        s->idx = s->w = NULL;
        s->cap = 0;
        st = ocl_temp_alloc(ctx, 2 * n * sizeof(cl_int), &s->idx);
        if (st == NETRUN_OK) st = ocl_temp_alloc(ctx, n * sizeof(float), &s->w);
        if (st != NETRUN_OK) goto done;
        s->cap = n;
    }
    /* blocking writes: the host tables are freed right after */
    cl_int e = clEnqueueWriteBuffer(ctx->queue, s->idx, CL_TRUE, 0, 2 * n * sizeof(cl_int), idx, 0, NULL, NULL);
    if (e == CL_SUCCESS) e = clEnqueueWriteBuffer(ctx->queue, s->w, CL_TRUE, 0, n * sizeof(float), w, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        st = ocl_fail(e, "ImagePreprocess taps upload");
        goto done;
    }
    s->key = *p;
    s->valid = 1;
done:
    ocl_host->free(idx);
    ocl_host->free(w);
    return st;
}

static netrun_status prep_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    prep_state *s = state;
    const netrun_image_preprocess_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    if (!p || X->rank != 4 || X->dims[1] != p->in_h || X->dims[2] != p->in_w || X->dims[3] != p->channels ||
        Y->rank != 4 || Y->dims[2] != p->out_h || Y->dims[3] != p->out_w)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl ImagePreprocess: params do not match the tensors");
    if (p->in_h > INT32_MAX || p->in_w > INT32_MAX)
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl ImagePreprocess: frame too large");
    int64_t n_pix = X->dims[0] * p->out_h * p->out_w;
    if (!n_pix) return NETRUN_OK;
    netrun_status st = p->to != s->to ? prep_kernel(ctx, s, p->to) : NETRUN_OK;
    if (st == NETRUN_OK) st = prep_tables(ctx, s, p);
    if (st != NETRUN_OK) return st;
    ocl_arg a[] = {OCL_TENSOR(X), OCL_TENSOR(Y), OCL_LONG(n_pix), OCL_CLMEM(s->idx), OCL_CLMEM(s->w),
                   OCL_INT(p->in_h), OCL_INT(p->in_w), OCL_INT(p->channels), OCL_INT(p->out_h), OCL_INT(p->out_w),
                   OCL_INT(p->box[0]), OCL_INT(p->box[1]), OCL_INT(p->box[2]), OCL_INT(p->box[3]), OCL_INT(p->swap_rb),
                   OCL_FLOAT(p->pad_value), OCL_FLOAT(p->mean[0]), OCL_FLOAT(p->mean[1]), OCL_FLOAT(p->mean[2]),
                   OCL_FLOAT(p->k[0]), OCL_FLOAT(p->k[1]), OCL_FLOAT(p->k[2])};
    return ocl_launch1d(ctx, s->k, "ImagePreprocess", (size_t)n_pix, OCL_NARGS(a), a);
}

/* Found by find_op for the com.netrun domain (opencl_backend.c). */
const ocl_op ocl_ops_preprocess[] = {
    {"ImagePreprocess", OCL_DT(UINT8), "uint8 NHWC frames (3 or 4 channels) to float32/float16 NCHW", NULL,
     prep_create, prep_run, prep_destroy, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
