/* Softmax, LogSoftmax, Hardmax (float32; float16 with cl_khr_fp16): one work group per row. */
#include "opencl_internal.h"

OCL_SOURCE(softmax);

static netrun_status sm_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    return ocl_kernel_get(ctx, "softmax", ocl_src_softmax, ocl_float_options(ocl_main_dtype(node)), "softmax_rows",
                          (cl_kernel *)state);
}

static netrun_status sm_run(ocl_context *ctx, cl_kernel k, const netrun_kernel_args *args, int kind) {
    const netrun_softmax_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    /* descs inside Loop/Scan bodies may carry guessed dtypes: use the kernel of the real one */
    netrun_status st = ocl_float_kernel_for(ctx, X->dtype, "softmax", ocl_src_softmax, "softmax_rows", &k);
    if (st != NETRUN_OK) return st;
    if (!p || p->axis < 0 || (X->rank > 0 && p->axis >= X->rank) || (X->rank == 0 && p->axis != 0))
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl softmax: bad axis");
    size_t outer = 1, D = 1, inner = 1;
    for (int i = 0; i < p->axis; i++) outer *= (size_t)X->dims[i];
    if (p->coerce_2d) {
        for (int i = p->axis; i < X->rank; i++) D *= (size_t)X->dims[i];
    } else if (X->rank > 0) {
        D = (size_t)X->dims[p->axis];
        for (int i = p->axis + 1; i < X->rank; i++) inner *= (size_t)X->dims[i];
    }
    size_t rows = outer * inner;
    if (!rows || !D) return NETRUN_OK;
    size_t local = 1;
    while (local < 128 && local < D) local *= 2; /* lanes: a power of two up to 128, no more than the row needs */
    while (local > 1 && local > ctx->max_wg) local /= 2;
    size_t global = rows * local;
    ocl_arg a[] = {OCL_TENSOR(X), OCL_TENSOR(Y), OCL_ULONG(D), OCL_ULONG(inner), OCL_INT(kind),
                   OCL_LOCAL(local * sizeof(cl_float)), OCL_LOCAL(local * sizeof(cl_int))};
    return ocl_launch(ctx, k, kind == 0 ? "Softmax" : kind == 1 ? "LogSoftmax" : "Hardmax", 1, &global, &local, OCL_NARGS(a), a);
}

static netrun_status softmax_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return sm_run(ctx, state, args, 0);
}
static netrun_status logsoftmax_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return sm_run(ctx, state, args, 1);
}
static netrun_status hardmax_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return sm_run(ctx, state, args, 2);
}

const ocl_op ocl_ops_softmax[] = {
    {"Softmax", OCL_FLOAT_DTYPES, "", NULL, sm_create, softmax_run, NULL, NULL},
    {"LogSoftmax", OCL_FLOAT_DTYPES, "", NULL, sm_create, logsoftmax_run, NULL, NULL},
    {"Hardmax", OCL_FLOAT_DTYPES, "", NULL, sm_create, hardmax_run, NULL, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
