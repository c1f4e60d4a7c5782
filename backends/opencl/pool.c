/* MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool; 1-3 spatial dims run as 3-D.
 * float32 (float16 with cl_khr_fp16); MaxPool also int8/uint8. */
#include "opencl_internal.h"

OCL_SOURCE(pool);

/* Must match pool_geom in pool.cl. */
typedef struct pool_geom {
    cl_int in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    cl_int mode, count_include_pad, storage_order, lp;
} pool_geom;

enum { MODE_AVG = 0, MODE_MAX = 1, MODE_LP = 2 };

static const char *pool_options(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_INT8: return "-DT=char -DLOWEST=-128.0f";
    case NETRUN_DTYPE_UINT8: return "-DT=uchar -DLOWEST=0.0f";
    default: return ocl_float_options(t);
    }
}

static int mode_of(const char *op) {
    return !strcmp(op, "MaxPool") || !strcmp(op, "GlobalMaxPool") ? MODE_MAX : !strcmp(op, "LpPool") ? MODE_LP : MODE_AVG;
}

static int pool_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = ocl_main_dtype(node);
    int mode = mode_of(node->op_type), global = !strncmp(node->op_type, "Global", 6);
    int ok = t == NETRUN_DTYPE_FLOAT || t == NETRUN_DTYPE_FLOAT16 ||
             (mode == MODE_MAX && !global && (t == NETRUN_DTYPE_INT8 || t == NETRUN_DTYPE_UINT8));
    if (!ok) return ocl_refuse(reason, size, "dtype %s not supported by the OpenCL %s kernel", ocl_dtype_name(t),
                               node->op_type);
    if (global) return node->inputs[0].rank >= 2 ? 1 : ocl_refuse(reason, size, "input rank below 2");
    const netrun_pool_params *p = node->params;
    if (!p || p->n_spatial < 1 || p->n_spatial > 3) return ocl_refuse(reason, size, "1-3 spatial dims only");
    if (node->params_size >= sizeof *p && (p->blocked || p->nhwc))
        return ocl_refuse(reason, size, "blocked or NHWC activations (CPU/CUDA layout passes) not supported");
    for (int d = 0; d < p->n_spatial; d++)
        if (p->kernel[d] < 1 || p->kernel[d] > 65536 || p->strides[d] < 1 || p->dilations[d] < 1 ||
            p->strides[d] > 65536 || p->dilations[d] > 65536 || p->pads_begin[d] < 0 || p->pads_end[d] < 0 ||
            p->pads_begin[d] > 65536 || p->pads_end[d] > 65536)
            return ocl_refuse(reason, size, "kernel, strides, dilations or pads out of range");
    if (mode == MODE_LP && (p->p < 1 || p->p > 64)) return ocl_refuse(reason, size, "LpPool p out of range");
    return 1;
}

/* Descs inside Loop/Scan bodies may carry guessed dtypes: the kernel for the real one. */
static netrun_status real_kernel(ocl_context *ctx, netrun_dtype t, const char *name, cl_kernel *k) {
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16 && t != NETRUN_DTYPE_INT8 && t != NETRUN_DTYPE_UINT8)
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl pool: dtype %s at run time", ocl_dtype_name(t));
    return ocl_kernel_get(ctx, "pool", ocl_src_pool, pool_options(t), name, k);
}

static netrun_status pool_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    int global = !strncmp(node->op_type, "Global", 6);
    return ocl_kernel_get(ctx, "pool", ocl_src_pool, pool_options(ocl_main_dtype(node)), global ? "global_pool" : "pool",
                          (cl_kernel *)state);
}

static netrun_status pool_run_mode(ocl_context *ctx, cl_kernel k, const netrun_kernel_args *args, int mode) {
    const netrun_pool_params *p = args->params;
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    netrun_status st = real_kernel(ctx, X->dtype, "pool", &k);
    if (st != NETRUN_OK) return st;
    int ns = p->n_spatial;
    if (X->rank != ns + 2 || Y->rank != X->rank)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl pool: shapes do not match params");
    pool_geom g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < 3; i++) {
        int s = i - (3 - ns);
        int64_t in = s >= 0 ? X->dims[2 + s] : 1, out = s >= 0 ? Y->dims[2 + s] : 1;
        if (in > INT32_MAX || out > INT32_MAX)
            return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl pool: spatial size beyond 32 bits");
        g.in[i] = (cl_int)in;
        g.out[i] = (cl_int)out;
        g.k[i] = (cl_int)(s >= 0 ? p->kernel[s] : 1);
        g.s[i] = (cl_int)(s >= 0 ? p->strides[s] : 1);
        g.d[i] = (cl_int)(s >= 0 ? p->dilations[s] : 1);
        g.pb[i] = (cl_int)(s >= 0 ? p->pads_begin[s] : 0);
        g.pe[i] = (cl_int)(s >= 0 ? p->pads_end[s] : 0);
    }
    g.mode = mode;
    g.count_include_pad = p->count_include_pad;
    g.storage_order = p->storage_order;
    g.lp = (cl_int)p->p;
    size_t n = (size_t)ocl_count(Y);
    const netrun_tensor *I = mode == MODE_MAX && args->n_outputs > 1 && args->outputs[1].rank >= 0 &&
                                     args->outputs[1].buffer ? &args->outputs[1] : NULL;
    ocl_arg a[] = {OCL_TENSOR(X), OCL_TENSOR(Y), I ? OCL_MEM(I) : OCL_MEM(Y), OCL_ULONG(I ? ocl_eoff(I) : 0),
                   OCL_INT(I != NULL), OCL_BYTES(&g, sizeof g), OCL_ULONG(n)};
    return ocl_launch1d(ctx, k, "pool", n, OCL_NARGS(a), a);
}

static netrun_status maxpool_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return pool_run_mode(ctx, state, args, MODE_MAX);
}
static netrun_status avgpool_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return pool_run_mode(ctx, state, args, MODE_AVG);
}
static netrun_status lppool_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return pool_run_mode(ctx, state, args, MODE_LP);
}

static netrun_status global_run(ocl_context *ctx, cl_kernel k, const netrun_kernel_args *args, int is_max) {
    const netrun_tensor *X = &args->inputs[0];
    netrun_tensor *Y = &args->outputs[0];
    netrun_status st = real_kernel(ctx, X->dtype, "global_pool", &k);
    if (st != NETRUN_OK) return st;
    size_t planes = (size_t)(X->dims[0] * X->dims[1]);
    if (!planes) return NETRUN_OK;
    size_t plane = (size_t)ocl_count(X) / planes;
    size_t local = 64;
    while (local > 1 && local > ctx->max_wg) local /= 2;
    size_t global = planes * local;
    ocl_arg a[] = {OCL_TENSOR(X), OCL_TENSOR(Y), OCL_ULONG(plane), OCL_INT(is_max), OCL_LOCAL(local * sizeof(cl_float))};
    return ocl_launch(ctx, k, is_max ? "GlobalMaxPool" : "GlobalAveragePool", 1, &global, &local, OCL_NARGS(a), a);
}

static netrun_status gavg_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return global_run(ctx, state, args, 0);
}
static netrun_status gmax_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    return global_run(ctx, state, args, 1);
}

#define MAX_DTYPES (OCL_FLOAT_DTYPES | OCL_DT(INT8) | OCL_DT(UINT8))
const ocl_op ocl_ops_pool[] = {
    {"MaxPool", MAX_DTYPES, "1-3 spatial dims; dilations, ceil_mode, Indices (storage_order)", pool_supports,
     pool_create, maxpool_run, NULL, NULL},
    {"AveragePool", OCL_FLOAT_DTYPES, "1-3 spatial dims; dilations, ceil_mode, count_include_pad", pool_supports,
     pool_create, avgpool_run, NULL, NULL},
    {"LpPool", OCL_FLOAT_DTYPES, "1-3 spatial dims; dilations, ceil_mode", pool_supports, pool_create, lppool_run,
     NULL, NULL},
    {"GlobalAveragePool", OCL_FLOAT_DTYPES, "", pool_supports, pool_create, gavg_run, NULL, NULL},
    {"GlobalMaxPool", OCL_FLOAT_DTYPES, "", pool_supports, pool_create, gmax_run, NULL, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
