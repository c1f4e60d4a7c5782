/* BatchNormalization (inference), InstanceNormalization, LayerNormalization; float32 (float16 with
 * cl_khr_fp16), all inputs of X's dtype. A fused activation runs after, in the shared bias/activation pass. */
#include "opencl_internal.h"

OCL_SOURCE(norm);

static int same_dtypes(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = ocl_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return ocl_refuse(reason, size, "dtype %s not supported by the OpenCL %s kernel", ocl_dtype_name(t),
                          node->op_type);
    for (int i = 1; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t)
            return ocl_refuse(reason, size, "mixed dtypes (input %d is %s)", i, ocl_dtype_name(node->inputs[i].dtype));
    /* activate() (common.cl) knows kinds up to SWISH; a newer kind would silently be the identity */
    const netrun_norm_params *p = node->params;
    if (p && node->params_size >= sizeof *p && ((int)p->activation.kind < 0 || p->activation.kind > NETRUN_ACT_SWISH))
        return ocl_refuse(reason, size, "fused activation kind %d not implemented", (int)p->activation.kind);
    return 1;
}

static int bn_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!same_dtypes(node, reason, size)) return 0;
    if (node->n_inputs < 5 || node->inputs[0].rank < 2) return ocl_refuse(reason, size, "needs X (rank >= 2) and 4 params");
    for (int o = 1; o < node->n_outputs; o++)
        if (node->outputs[o].name && *node->outputs[o].name)
            return ocl_refuse(reason, size, "training-mode outputs");
    return 1;
}

static int in_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!same_dtypes(node, reason, size)) return 0;
    if (node->n_inputs < 3 || node->inputs[0].rank < 3) return ocl_refuse(reason, size, "needs X (rank >= 3), scale, B");
    return 1;
}

static int ln_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = ocl_main_dtype(node);
    if (!same_dtypes(node, reason, size)) return 0;
    const netrun_norm_params *p = node->params;
    const netrun_value_desc *X = &node->inputs[0];
    if (!p || node->n_inputs < 2 || X->rank < 1 || p->axis < 0 || p->axis >= X->rank)
        return ocl_refuse(reason, size, "needs X, Scale and an axis inside X");
    for (int o = 1; o < node->n_outputs && o < 3; o++)
        if (node->outputs[o].rank >= 0 && node->outputs[o].name && *node->outputs[o].name &&
            node->outputs[o].dtype != NETRUN_DTYPE_FLOAT)
            return ocl_refuse(reason, size, "Mean/InvStdDev of dtype %s (float32 only)",
                              ocl_dtype_name(node->outputs[o].dtype));
    /* Scale / B: broadcast over the trailing normalized dims only (index j % count) */
    for (int i = 1; i < node->n_inputs && i < 3; i++) {
        const netrun_value_desc *s = &node->inputs[i];
        if (s->rank < 0) continue;
        int r = s->rank;
        const int64_t *sd = s->dims;
        while (r > 0 && sd[0] == 1 && r > X->rank - p->axis) {
            sd++;
            r--;
        }
        int64_t cnt = ocl_desc_count(s);
        if (cnt == 1) continue;
        int suffix = r <= X->rank - p->axis;
        for (int k = 0; suffix && k < r; k++)
            if (sd[k] != X->dims[X->rank - r + k]) suffix = 0;
        /* a leading dim of 1 inside the normalized dims breaks j % count: refuse */
        if (!suffix) return ocl_refuse(reason, size, "Scale/B broadcast other than over leading normalized dims");
    }
    (void)t;
    return 1;
}

static netrun_status norm_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    const char *k = !strcmp(node->op_type, "BatchNormalization") ? "batchnorm" : "rows_norm";
    return ocl_kernel_get(ctx, "norm", ocl_src_norm, ocl_float_options(ocl_main_dtype(node)), k, (cl_kernel *)state);
}

static netrun_status finish_act(ocl_context *ctx, netrun_tensor *Y, const netrun_norm_params *p) {
    if (!p || p->activation.kind == NETRUN_ACT_NONE) return NETRUN_OK;
    return ocl_bias_activation(ctx, Y->dtype, ocl_mem(Y), ocl_eoff(Y), NULL, 0, NULL, 0, (size_t)ocl_count(Y), 1, 1,
                               &p->activation);
}

static netrun_status bn_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_norm_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    size_t n = (size_t)ocl_count(X);
    if (!n) return NETRUN_OK;
    cl_kernel k;
    netrun_status st = ocl_float_kernel_for(ctx, X->dtype, "norm", ocl_src_norm, "batchnorm", &k);
    if (st != NETRUN_OK) return st;
    for (int i = 1; i < 5; i++)
        if (args->inputs[i].dtype != X->dtype)
            return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl BatchNormalization: mixed dtypes at run time");
    size_t c = (size_t)X->dims[1], plane = n / ((size_t)X->dims[0] * c);
    size_t pc = (size_t)ocl_count(&args->inputs[1]);
    if (pc != c && pc != c * plane)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "BatchNormalization: scale has %zu values for %zu channels",
                               pc, c);
    for (int i = 2; i < 5; i++)
        if ((size_t)ocl_count(&args->inputs[i]) != pc)
            return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "BatchNormalization: input %d size differs from scale", i);
    const netrun_tensor *S = &args->inputs[1], *B = &args->inputs[2], *M = &args->inputs[3], *V = &args->inputs[4];
    ocl_arg a[] = {OCL_TENSOR(X), OCL_TENSOR(Y), OCL_TENSOR(S), OCL_TENSOR(B), OCL_TENSOR(M), OCL_TENSOR(V),
                   OCL_ULONG(c), OCL_ULONG(plane), OCL_INT(pc != c), OCL_FLOAT(p->epsilon), OCL_ULONG(n)};
    st = ocl_launch1d(ctx, k, "BatchNormalization", n, OCL_NARGS(a), a);
    return st != NETRUN_OK ? st : finish_act(ctx, Y, p);
}

static netrun_status rows_run(ocl_context *ctx, cl_kernel k, const netrun_kernel_args *args, int instance) {
    const netrun_norm_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0], *S = &args->inputs[1];
    const netrun_tensor *B = args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    netrun_tensor *Y = &args->outputs[0];
    size_t total = (size_t)ocl_count(X), d = 1, c = 1;
    if (!total) return NETRUN_OK;
    netrun_status st0 = ocl_float_kernel_for(ctx, X->dtype, "norm", ocl_src_norm, "rows_norm", &k);
    if (st0 != NETRUN_OK) return st0;
    if (S->dtype != X->dtype || (B && B->dtype != X->dtype))
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl normalization: mixed dtypes at run time");
    if (instance) {
        c = (size_t)X->dims[1];
        d = total / ((size_t)X->dims[0] * c);
        if ((size_t)ocl_count(S) != c || !B || (size_t)ocl_count(B) != c)
            return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "InstanceNormalization: scale/B need C values");
    } else {
        for (int i = p->axis; i < X->rank; i++) d *= (size_t)X->dims[i];
    }
    if (!d) return NETRUN_OK;
    size_t rows = total / d, sn = (size_t)ocl_count(S), bn = B ? (size_t)ocl_count(B) : 1;
    if (!instance && (!sn || d % sn || (B && (!bn || d % bn))))
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "LayerNormalization: Scale/B of %zu/%zu values for rows of %zu",
                               sn, bn, d);
    const netrun_tensor *Mo = !instance && args->n_outputs > 1 && args->outputs[1].rank >= 0 && args->outputs[1].buffer
                                  ? &args->outputs[1] : NULL;
    const netrun_tensor *Io = !instance && args->n_outputs > 2 && args->outputs[2].rank >= 0 && args->outputs[2].buffer
                                  ? &args->outputs[2] : NULL;
    size_t local = 1;
    while (local < 128 && local < d) local *= 2;
    while (local > 1 && local > ctx->max_wg) local /= 2;
    size_t global = rows * local;
    ocl_arg a[] = {OCL_TENSOR(X), OCL_TENSOR(Y), OCL_TENSOR(S), OCL_ULONG(sn),
                   B ? OCL_MEM(B) : OCL_MEM(S), OCL_ULONG(B ? ocl_eoff(B) : 0), OCL_ULONG(bn), OCL_INT(B != NULL),
                   OCL_INT(instance), OCL_ULONG(c), OCL_ULONG(d), OCL_FLOAT(p->epsilon),
                   Mo ? OCL_MEM(Mo) : OCL_MEM(Y), OCL_ULONG(Mo ? ocl_eoff(Mo) : 0), OCL_INT(Mo != NULL),
                   Io ? OCL_MEM(Io) : OCL_MEM(Y), OCL_ULONG(Io ? ocl_eoff(Io) : 0), OCL_INT(Io != NULL),
                   OCL_LOCAL(local * sizeof(cl_float))};
    netrun_status st = ocl_launch(ctx, k, instance ? "InstanceNormalization" : "LayerNormalization", 1, &global, &local,
                                  OCL_NARGS(a), a);
    return st != NETRUN_OK ? st : finish_act(ctx, Y, p);
}

static netrun_status in_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return rows_run(ctx, state, args, 1);
}
static netrun_status ln_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return rows_run(ctx, state, args, 0);
}

const ocl_op ocl_ops_norm[] = {
    {"BatchNormalization", OCL_FLOAT_DTYPES, "inference only; spatial=0; one dtype", bn_supports, norm_create, bn_run,
     NULL, NULL},
    {"InstanceNormalization", OCL_FLOAT_DTYPES, "one dtype", in_supports, norm_create, in_run, NULL, NULL},
    {"LayerNormalization", OCL_FLOAT_DTYPES, "Scale/B broadcast over trailing normalized dims; Mean/InvStdDev float32",
     ln_supports, norm_create, ln_run, NULL, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
