/* OpenCL kernels: reductions. ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp over any set of
 * axes and ArgMax/ArgMin, from reduce.cl built per dtype (float16 accumulates in float, integers in long).
 * Each output owns the input elements addressed by its kept dims and the reduced dims; long reductions take a
 * work-group per output (tree in local memory), short ones a work-item per output. */
#include "opencl_internal.h"
#include "oclops_shared.h"

OCL_SOURCE(reduce);


enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LSE, R_ARGMAX, R_ARGMIN, R_CUMSUM,
       R_CUMPROD, R_TOPK };

/* rd_geo in reduce.cl: all 64-bit. */
typedef struct rd_geo {
    int64_t nk, nr, count;
    int64_t kd[NETRUN_MAX_RANK], ks[NETRUN_MAX_RANK], rd[NETRUN_MAX_RANK], rs[NETRUN_MAX_RANK];
} rd_geo;

#define DT(t) OCL_DT(t)
#define M_FLT (DT(FLOAT) | DT(FLOAT16) | DT(DOUBLE))
#define M_INT (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64) | DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))

static const struct {
    const char *name;
    int op;
    uint64_t dtypes;
} rd_ops[] = {
    {"ReduceSum", R_SUM, M_FLT | M_INT}, {"ReduceMean", R_MEAN, M_FLT | M_INT},
    {"ReduceMax", R_MAX, M_FLT | M_INT | DT(BOOL)}, {"ReduceMin", R_MIN, M_FLT | M_INT | DT(BOOL)},
    {"ReduceProd", R_PROD, M_FLT | M_INT}, {"ReduceL1", R_L1, M_FLT | M_INT}, {"ReduceL2", R_L2, M_FLT},
    {"ReduceSumSquare", R_SUMSQ, M_FLT | M_INT}, {"ReduceLogSum", R_LOGSUM, M_FLT},
    {"ReduceLogSumExp", R_LSE, M_FLT}, {"ArgMax", R_ARGMAX, M_FLT | M_INT}, {"ArgMin", R_ARGMIN, M_FLT | M_INT},
    {"TopK", R_TOPK, M_FLT | M_INT}, {"CumSum", R_CUMSUM, M_FLT | DT(INT32) | DT(INT64)}, {"CumProd", R_CUMPROD, M_FLT | DT(INT32) | DT(INT64)},
    {NULL, 0, 0}};

static int rd_find(const char *name) {
    for (int i = 0; rd_ops[i].name; i++)
        if (!strcmp(rd_ops[i].name, name)) return i;
    return -1;
}

static int rd_supports(const netrun_node_desc *node, char *reason, size_t size) {
    int i = rd_find(node->op_type);
    if (i < 0) return ocl_refuse(reason, size, "no OpenCL kernel for %s", node->op_type);
    if (node->n_inputs < 1) return ocl_refuse(reason, size, "no input");
    netrun_dtype t = node->inputs[0].dtype;
    if (!(rd_ops[i].dtypes & NETRUN_DTYPE_BIT(t)))
        return ocl_refuse(reason, size, "dtype %s not supported by the OpenCL %s kernel", ocl_dtype_name(t),
                          node->op_type);
    if (!node->params) return ocl_refuse(reason, size, "no params");
    if ((rd_ops[i].op == R_CUMSUM || rd_ops[i].op == R_CUMPROD) && node->params_size < sizeof(netrun_axis_params))
        return ocl_refuse(reason, size, "params of another kind");
    if (rd_ops[i].op == R_TOPK && (node->n_outputs < 2 || node->outputs[1].dtype != NETRUN_DTYPE_INT64))
        return ocl_refuse(reason, size, "TopK needs its int64 indices output");
    return 1;
}

typedef struct rd_state {
    int op;
    const char *name;
    cl_kernel k;
    netrun_dtype t; /* the dtype k is built for */
} rd_state;

static void rd_destroy(ocl_context *ctx, void *state) {
    (void)ctx;
    ocl_host->free(state);
}

/* Get the kernel for input dtype t. Descs at kernel creation may carry best guesses for nodes inferred at run
 * time, so runs compare and rebuild when needed. */
static netrun_status rd_kernels(ocl_context *ctx, rd_state *s, netrun_dtype t) {
    char opts[128];
    int i = rd_find(s->name);
    if (i < 0 || !(rd_ops[i].dtypes & NETRUN_DTYPE_BIT(t)) || !oclops_type_options(t, opts, sizeof opts))
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl %s: dtype %s", s->name, ocl_dtype_name(t));
    int arg = s->op == R_ARGMAX || s->op == R_ARGMIN, cum = s->op == R_CUMSUM || s->op == R_CUMPROD;
    netrun_status st =
        ocl_kernel_get(ctx, "reduce", ocl_src_reduce, opts,
                       arg ? "rd_arg" : cum ? "rd_cum" : s->op == R_TOPK ? "rd_topk" : "rd_reduce", &s->k);
    if (st == NETRUN_OK) s->t = t;
    return st;
}

static netrun_status rd_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)workspace;
    int i = rd_find(node->op_type);
    if (i < 0) return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "no OpenCL kernel for %s", node->op_type);
    rd_state *s = ocl_host->alloc(sizeof *s, 16);
    if (!s) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl %s: out of memory", node->op_type);
    memset(s, 0, sizeof *s);
    s->op = rd_ops[i].op;
    s->name = rd_ops[i].name;
    netrun_status st = rd_kernels(ctx, s, node->inputs[0].dtype);
    if (st != NETRUN_OK) {
        ocl_host->free(s);
        return st;
    }
    *state = s;
    return NETRUN_OK;
}

static netrun_status run_arg(ocl_context *ctx, rd_state *s, const netrun_kernel_args *args) {
    const netrun_reduce_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || p->n_axes != 1 || p->axes[0] < 0 || p->axes[0] >= x->rank)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: bad params", s->name);
    int axis = p->axes[0];
    int64_t outer = 1, inner = 1, R = x->dims[axis];
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dims[i];
    if (outer * inner == 0) return NETRUN_OK;
    if (R == 0) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl %s over an empty axis", s->name);
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(outer), OCL_LONG(R), OCL_LONG(inner),
                   OCL_INT(s->op == R_ARGMAX), OCL_INT(p->select_last_index)};
    return ocl_launch1d(ctx, s->k, s->name, (size_t)(outer * inner), (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status run_cum(ocl_context *ctx, rd_state *s, const netrun_kernel_args *args) {
    const netrun_axis_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p || p->axis < 0 || p->axis >= x->rank) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: bad params", s->name);
    int64_t outer = 1, inner = 1, R = x->dims[p->axis];
    for (int i = 0; i < p->axis; i++) outer *= x->dims[i];
    for (int i = p->axis + 1; i < x->rank; i++) inner *= x->dims[i];
    if (outer * inner * R == 0) return NETRUN_OK;
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(outer), OCL_LONG(R), OCL_LONG(inner),
                   OCL_INT(s->op == R_CUMPROD), OCL_INT(p->exclusive), OCL_INT(p->reverse)};
    return ocl_launch1d(ctx, s->k, s->name, (size_t)(outer * inner), (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status run_topk(ocl_context *ctx, rd_state *s, const netrun_kernel_args *args) {
    const netrun_topk_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *v = &args->outputs[0], *ix = &args->outputs[1];
    if (!p || p->axis < 0 || p->axis >= x->rank || args->n_outputs < 2 || ix->rank < 0 || v->rank < 0)
        return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl TopK: bad params or outputs");
    int64_t outer = 1, inner = 1, R = x->dims[p->axis];
    for (int i = 0; i < p->axis; i++) outer *= x->dims[i];
    for (int i = p->axis + 1; i < x->rank; i++) inner *= x->dims[i];
    if (p->k < 0 || p->k > R) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl TopK: k %lld of %lld", (long long)p->k, (long long)R);
    int64_t n = outer * R * inner;
    if (n == 0 || p->k == 0) return NETRUN_OK;
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(v), OCL_TENSOR(ix), OCL_LONG(outer), OCL_LONG(R), OCL_LONG(inner),
                   OCL_LONG(p->k), OCL_INT(p->largest)};
    return ocl_launch1d(ctx, s->k, "TopK", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status rd_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    rd_state *s = state;
    const netrun_reduce_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (!p) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: no params", s->name);
    if (x->dtype != s->t) {
        netrun_status st = rd_kernels(ctx, s, x->dtype);
        if (st != NETRUN_OK) return st;
    }
    if (s->op == R_ARGMAX || s->op == R_ARGMIN) return run_arg(ctx, s, args);
    if (s->op == R_CUMSUM || s->op == R_CUMPROD) return run_cum(ctx, s, args);
    if (s->op == R_TOPK) return run_topk(ctx, s, args);
    int64_t nout = ocl_count(y);
    if (nout == 0) return NETRUN_OK;
    /* noop_with_empty_axes: identity for the plain reductions; the mapped ones (L1, L2, SumSquare, LogSum)
     * still map each element, like a reduction over one element (n_axes is 0 then) */
    if (p->noop && (s->op == R_SUM || s->op == R_MEAN || s->op == R_MAX || s->op == R_MIN || s->op == R_PROD)) {
        size_t bytes = y->nbytes < x->nbytes ? y->nbytes : x->nbytes;
        if (!bytes || (ocl_mem(x) == ocl_mem(y) && x->offset == y->offset)) return NETRUN_OK;
        return ocl_copy(ctx, ocl_mem(y), y->offset, ocl_mem(x), x->offset, bytes);
    }
    rd_geo g;
    memset(&g, 0, sizeof g);
    int64_t xs[NETRUN_MAX_RANK], v = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        xs[i] = v;
        v *= x->dims[i];
    }
    g.count = 1;
    for (int i = 0, k = 0; i < x->rank; i++) {
        int red = k < p->n_axes && p->axes[k] == i;
        if (red) k++;
        if (red) {
            g.rd[g.nr] = x->dims[i];
            g.rs[g.nr++] = xs[i];
            g.count *= x->dims[i];
        } else {
            g.kd[g.nk] = x->dims[i];
            g.ks[g.nk++] = xs[i];
        }
    }
    /* a group of work-items per output when each output reduces many elements */
    size_t ls = 1;
    if (g.count >= 256) {
        ls = 64;
        while (ls > 1 && ls > ctx->max_wg) ls >>= 1;
    }
    size_t groups = (size_t)nout;
    if (ls > 1 && groups > 4096) groups = 4096; /* groups loop over the outputs */
    size_t global = ls > 1 ? groups * ls : (size_t)nout, local = ls;
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(nout), OCL_INT(s->op), OCL_BYTES(&g, sizeof g),
                   OCL_LOCAL(8 * ls) /* the compute type is at most 8 bytes */};
    return ocl_launch(ctx, s->k, s->name, 1, &global, &local, (int)(sizeof a / sizeof a[0]), a);
}

#define OP(name, mask, cons) {name, mask, cons, rd_supports, rd_create, rd_run, rd_destroy, NULL},
const ocl_op ocl_ops_reduce[] = {
    OP("ReduceSum", M_FLT | M_INT, "any axes") OP("ReduceMean", M_FLT | M_INT, "any axes")
    OP("ReduceMax", M_FLT | M_INT | DT(BOOL), "any axes; NaN propagates")
    OP("ReduceMin", M_FLT | M_INT | DT(BOOL), "any axes; NaN propagates")
    OP("ReduceProd", M_FLT | M_INT, "any axes") OP("ReduceL1", M_FLT | M_INT, "any axes")
    OP("ReduceL2", M_FLT, "any axes") OP("ReduceSumSquare", M_FLT | M_INT, "any axes")
    OP("ReduceLogSum", M_FLT, "any axes") OP("ReduceLogSumExp", M_FLT, "any axes")
    OP("ArgMax", M_FLT | M_INT, "select_last_index") OP("ArgMin", M_FLT | M_INT, "select_last_index")
    OP("TopK", M_FLT | M_INT, "ties to the lower index; always sorted; O(R^2) per line (rank counting)")
    OP("CumSum", M_FLT | DT(INT32) | DT(INT64), "exclusive, reverse")
    OP("CumProd", M_FLT | DT(INT32) | DT(INT64), "exclusive, reverse")
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
