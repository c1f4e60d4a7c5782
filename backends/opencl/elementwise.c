/* Elementwise ops (owner: oclops). For now only Relu, the skeleton's example of a complete op. */
#include "opencl_internal.h"

OCL_SOURCE(elementwise);

static netrun_status relu_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    char opts[64];
    snprintf(opts, sizeof opts, "-DT=%s", ocl_cl_type(node->inputs[0].dtype));
    cl_kernel k;
    netrun_status st = ocl_kernel_get(ctx, "elementwise", ocl_src_elementwise, opts, "relu", &k);
    if (st == NETRUN_OK) *state = k; /* the kernel belongs to the context: nothing to destroy */
    return st;
}

static netrun_status relu_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    size_t n = (size_t)ocl_count(y);
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_ULONG(n)};
    return ocl_launch1d(ctx, (cl_kernel)state, "Relu", n, 5, a);
}

const ocl_op ocl_ops_elementwise[] = {
    {"Relu", OCL_FLOAT_DTYPES, "", NULL, relu_create, relu_run, NULL, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
