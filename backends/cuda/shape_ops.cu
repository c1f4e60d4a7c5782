/* CUDA kernels: shape ops. Reshape / Flatten / Squeeze / Unsqueeze / Identity / Dropout (inference) are device
 * copies (skipped when the runtime already aliases input and output); Expand broadcasts; Shape and Size write
 * the dims they read on the host. */
#include "cuda_kernels.cuh"

static netrun_status copy_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    size_t bytes = Y->nbytes < X->nbytes ? Y->nbytes : X->nbytes;
    if (!bytes || X->data == Y->data) return NETRUN_OK;
    cudaError_t e = cudaMemcpyAsync(Y->data, X->data, bytes, cudaMemcpyDeviceToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "device copy");
}

static int copy_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!cuda_esize(node->inputs[0].dtype)) return cuda_refuse(reason, size, "dtype %s", cuda_dtype_name(node->inputs[0].dtype));
    return 1;
}

static int dropout_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!copy_supports(node, reason, size)) return 0;
    if (node->n_outputs > 1 && node->outputs[1].name && *node->outputs[1].name)
        return cuda_refuse(reason, size, "Dropout mask output");
    if (node->n_inputs > 2 && node->inputs[2].rank >= 0) {
        const netrun_value_desc *t = &node->inputs[2];
        if (!t->const_data || t->dtype != NETRUN_DTYPE_BOOL || t->const_nbytes < 1 || *(const uint8_t *)t->const_data)
            return cuda_refuse(reason, size, "Dropout training_mode not constant false");
    }
    return 1;
}

static netrun_status expand_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t st[NETRUN_MAX_RANK];
    cuda_broadcast_strides(X->rank, X->dims, Y->rank, Y->dims, st);
    return cuda_expand(ctx, cuda_esize(X->dtype), Y->data, X->data, Y->rank, Y->dims, st);
}

static netrun_status shape_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_shape_params *p = (const netrun_shape_params *)args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    int64_t v[NETRUN_MAX_RANK + 1];
    size_t n = 0;
    if (!strcmp((const char *)state, "Size")) v[n++] = cuda_count(X);
    else {
        int a = p ? p->start : 0, b = p ? p->end : X->rank;
        for (int i = a; i < b && i < X->rank; i++) v[n++] = X->dims[i];
    }
    if (n * sizeof(int64_t) > Y->nbytes) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Shape: output too small");
    if (!n) return NETRUN_OK;
    /* pageable source: the copy returns once v has been staged */
    cudaError_t e = cudaMemcpyAsync(Y->data, v, n * sizeof(int64_t), cudaMemcpyHostToDevice, ctx->stream);
    return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "Shape copy");
}

static netrun_status shape_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = (void *)(!strcmp(node->op_type, "Size") ? "Size" : "Shape");
    return NETRUN_OK;
}

static int any_supports(const netrun_node_desc *node, char *reason, size_t size) { return 1; }

#define COPY(name) {name, CUDA_ALL_DTYPES, "device copy", copy_supports, NULL, copy_run, NULL},
extern "C" const cuda_op cuda_ops_shape_ops[] = {
    COPY("Reshape") COPY("Flatten") COPY("Squeeze") COPY("Unsqueeze") COPY("Identity")
    {"Dropout", CUDA_ALL_DTYPES, "inference only (no mask output)", dropout_supports, NULL, copy_run, NULL},
    {"Expand", CUDA_ALL_DTYPES, "", copy_supports, NULL, expand_run, NULL},
    {"Shape", CUDA_ALL_DTYPES, "", any_supports, shape_create, shape_run, NULL},
    {"Size", CUDA_ALL_DTYPES, "", any_supports, shape_create, shape_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
