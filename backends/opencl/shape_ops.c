/* OpenCL kernels: shape ops. Reshape / Flatten / Squeeze / Unsqueeze / Identity / Dropout (inference) are
 * device copies, skipped when the runtime already placed the output on the input's bytes (views); Expand is a
 * broadcast copy; Shape and Size write dims known on the host; Range, ConstantOfShape and EyeLike fill. */
#include "opencl_internal.h"
#include "oclops_shared.h"

OCL_SOURCE(elementwise);
OCL_SOURCE(data_movement);


enum { SH_COPY, SH_DROPOUT, SH_EXPAND, SH_SHAPE, SH_SIZE, SH_RANGE, SH_CONSTANT_OF_SHAPE, SH_EYELIKE };

typedef struct sh_state {
    int kind;
    cl_kernel k, k2; /* k2: Dropout's mask fill */
    netrun_dtype t, out; /* the input and output dtypes k is built for */
    int zero_mask;       /* Dropout before opset 12: onnxruntime writes an all-false mask (the CPU backend too) */
} sh_state;

static int sh_kind(const char *op) {
    if (!strcmp(op, "Dropout")) return SH_DROPOUT;
    if (!strcmp(op, "Expand")) return SH_EXPAND;
    if (!strcmp(op, "Shape")) return SH_SHAPE;
    if (!strcmp(op, "Size")) return SH_SIZE;
    if (!strcmp(op, "Range")) return SH_RANGE;
    if (!strcmp(op, "ConstantOfShape")) return SH_CONSTANT_OF_SHAPE;
    if (!strcmp(op, "EyeLike")) return SH_EYELIKE;
    return SH_COPY;
}

static int sh_supports(const netrun_node_desc *node, char *reason, size_t size) {
    int kind = sh_kind(node->op_type);
    if (node->n_outputs < 1) return ocl_refuse(reason, size, "no output");
    netrun_dtype t = node->n_inputs > 0 ? node->inputs[0].dtype : node->outputs[0].dtype;
    netrun_dtype out = node->outputs[0].dtype;
    switch (kind) {
    case SH_SHAPE: case SH_SIZE: return 1;
    case SH_CONSTANT_OF_SHAPE: case SH_EYELIKE:
        if (!ocl_esize(out) || out == NETRUN_DTYPE_BFLOAT16)
            return ocl_refuse(reason, size, "output dtype %s", ocl_dtype_name(out));
        if (kind == SH_EYELIKE && (node->n_inputs < 1 || node->inputs[0].rank != 2))
            return ocl_refuse(reason, size, "EyeLike needs a 2-D input");
        return 1;
    case SH_RANGE:
        if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_DOUBLE && t != NETRUN_DTYPE_FLOAT16 &&
            t != NETRUN_DTYPE_BFLOAT16 && t != NETRUN_DTYPE_INT16 && t != NETRUN_DTYPE_INT32 && t != NETRUN_DTYPE_INT64)
            return ocl_refuse(reason, size, "Range of %s", ocl_dtype_name(t));
        return 1;
    case SH_DROPOUT:
        if (node->n_inputs > 2 && node->inputs[2].rank >= 0) {
            const netrun_value_desc *tm = &node->inputs[2];
            if (!tm->const_data || tm->dtype != NETRUN_DTYPE_BOOL || tm->const_nbytes < 1 ||
                *(const unsigned char *)tm->const_data)
                return ocl_refuse(reason, size, "Dropout training_mode not constant false");
        }
        break;
    default: break;
    }
    if (!ocl_esize(t)) return ocl_refuse(reason, size, "dtype %s", ocl_dtype_name(t));
    if (!strcmp(node->op_type, "BitCast") && !ocl_esize(out)) return ocl_refuse(reason, size, "BitCast to %s", ocl_dtype_name(out));
    return 1;
}

static void sh_destroy(ocl_context *ctx, void *state) {
    (void)ctx;
    ocl_host->free(state);
}

/* Get the kernels for input dtype t and output dtype out. Descs at kernel creation may carry best guesses for
 * nodes inferred at run time, so runs compare and rebuild when needed. */
static netrun_status sh_kernels(ocl_context *ctx, sh_state *s, netrun_dtype t, netrun_dtype out) {
    char opts[128];
    netrun_status st = NETRUN_OK;
    switch (s->kind) {
    case SH_EXPAND:
        if (!oclops_bytes_options(ocl_esize(t), opts, sizeof opts)) goto bad;
        st = ocl_kernel_get(ctx, "data_movement", ocl_src_data_movement, opts, "dm_copy_nd", &s->k);
        break;
    case SH_CONSTANT_OF_SHAPE: case SH_EYELIKE:
        if (!oclops_bytes_options(ocl_esize(out), opts, sizeof opts)) goto bad;
        st = ocl_kernel_get(ctx, "data_movement", ocl_src_data_movement, opts,
                            s->kind == SH_EYELIKE ? "dm_eye" : "dm_fill", &s->k);
        break;
    case SH_RANGE:
        if (!oclops_type_options(out, opts, sizeof opts)) goto bad;
        st = ocl_kernel_get(ctx, "elementwise", ocl_src_elementwise, opts, "ew_range", &s->k);
        break;
    default: break;
    }
    if (st == NETRUN_OK) {
        s->t = t;
        s->out = out;
    }
    return st;
bad:
    return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl shape op: dtypes %s -> %s not supported", ocl_dtype_name(t),
                           ocl_dtype_name(out));
}

static netrun_status sh_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)workspace;
    sh_state *s = ocl_host->alloc(sizeof *s, 16);
    if (!s) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl %s: out of memory", node->op_type);
    memset(s, 0, sizeof *s);
    s->kind = sh_kind(node->op_type);
    netrun_dtype t = node->n_inputs > 0 ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED;
    netrun_status st = sh_kernels(ctx, s, t, node->outputs[0].dtype);
    s->zero_mask = node->opset < 12;
    if (st == NETRUN_OK && s->kind == SH_DROPOUT && node->n_outputs > 1 && node->outputs[1].rank >= 0 &&
        node->outputs[1].name && *node->outputs[1].name) {
        char opts[32];
        if (!oclops_bytes_options(ocl_esize(node->outputs[1].dtype), opts, sizeof opts))
            st = ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl Dropout: mask of %s", ocl_dtype_name(node->outputs[1].dtype));
        else
            st = ocl_kernel_get(ctx, "data_movement", ocl_src_data_movement, opts, "dm_fill", &s->k2);
    }
    if (st != NETRUN_OK) {
        ocl_host->free(s);
        return st;
    }
    *state = s;
    return NETRUN_OK;
}

/* y = x, unless the runtime made y a view of x. */
static netrun_status copy_tensor(ocl_context *ctx, const netrun_tensor *x, netrun_tensor *y) {
    size_t bytes = y->nbytes < x->nbytes ? y->nbytes : x->nbytes;
    if (!bytes || (ocl_mem(x) == ocl_mem(y) && x->offset == y->offset)) return NETRUN_OK;
    return ocl_copy(ctx, ocl_mem(y), y->offset, ocl_mem(x), x->offset, bytes);
}

static netrun_status write_host(ocl_context *ctx, netrun_tensor *y, const void *src, size_t bytes, const char *what) {
    if (bytes > y->nbytes) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: output too small", what);
    if (!bytes) return NETRUN_OK;
    /* blocking: src lives on this stack frame */
    cl_int e = clEnqueueWriteBuffer(ctx->queue, ocl_mem(y), CL_TRUE, y->offset, bytes, src, 0, NULL, NULL);
    return e == CL_SUCCESS ? NETRUN_OK : ocl_fail(e, what);
}

static netrun_status sh_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    sh_state *s = state;
    netrun_tensor *y = &args->outputs[0];
    const netrun_tensor *x = args->n_inputs > 0 ? &args->inputs[0] : NULL;
    int64_t n = ocl_count(y);
    netrun_dtype t = x ? x->dtype : NETRUN_DTYPE_UNDEFINED;
    if ((s->kind == SH_EXPAND || s->kind == SH_RANGE || s->kind == SH_CONSTANT_OF_SHAPE || s->kind == SH_EYELIKE) &&
        (t != s->t || y->dtype != s->out)) {
        netrun_status st = sh_kernels(ctx, s, t, y->dtype);
        if (st != NETRUN_OK) return st;
    }
    switch (s->kind) {
    case SH_COPY:
        if (!x) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl copy: no input");
        return copy_tensor(ctx, x, y);
    case SH_DROPOUT: {
        netrun_status st = copy_tensor(ctx, x, y);
        if (st != NETRUN_OK || !s->k2 || args->n_outputs < 2 || args->outputs[1].rank < 0) return st;
        netrun_tensor *mask = &args->outputs[1];
        int64_t m = ocl_count(mask);
        if (!m) return NETRUN_OK;
        uint64_t bits = s->zero_mask ? 0 : oclops_value_bits(mask->dtype, 1.0);
        ocl_arg a[] = {OCL_TENSOR(mask), OCL_LONG(m), OCL_ULONG(bits)};
        return ocl_launch1d(ctx, s->k2, "Dropout mask", (size_t)m, 4, a);
    }
    case SH_EXPAND: {
        int64_t st[NETRUN_MAX_RANK];
        if (x->rank > y->rank) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Expand: rank grows down");
        ocl_broadcast_strides(x->rank, x->dims, y->rank, y->dims, st);
        return oclops_copy_nd(ctx, s->k, x, 0, y, 0, y->rank, y->dims, st, NULL, NULL, "Expand");
    }
    case SH_SHAPE: case SH_SIZE: {
        int64_t v[NETRUN_MAX_RANK + 1];
        size_t k = 0;
        if (s->kind == SH_SIZE) v[k++] = ocl_count(x);
        else {
            const netrun_shape_params *p = args->params;
            int a = p ? p->start : 0, b = p ? p->end : x->rank;
            for (int i = a < 0 ? 0 : a; i < b && i < x->rank; i++) v[k++] = x->dims[i];
        }
        return write_host(ctx, y, v, k * sizeof(int64_t), s->kind == SH_SIZE ? "Size" : "Shape");
    }
    case SH_RANGE: {
        if (args->n_inputs < 3) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Range: 3 inputs needed");
        if (!n) return NETRUN_OK;
        ocl_arg a[] = {OCL_TENSOR(&args->inputs[0]), OCL_TENSOR(&args->inputs[2]), OCL_TENSOR(y), OCL_LONG(n)};
        return ocl_launch1d(ctx, s->k, "Range", (size_t)n, 7, a);
    }
    case SH_CONSTANT_OF_SHAPE: {
        if (!n) return NETRUN_OK;
        const netrun_fill_params *p = args->params;
        uint64_t bits = 0;
        size_t es = ocl_esize(y->dtype);
        if (p && es <= sizeof bits) memcpy(&bits, p->value, es); /* little-endian: the low bytes */
        ocl_arg a[] = {OCL_TENSOR(y), OCL_LONG(n), OCL_ULONG(bits)};
        return ocl_launch1d(ctx, s->k, "ConstantOfShape", (size_t)n, 4, a);
    }
    case SH_EYELIKE: {
        if (!n) return NETRUN_OK;
        if (y->rank != 2) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl EyeLike: 2-D output needed");
        const netrun_eyelike_params *p = args->params;
        ocl_arg a[] = {OCL_TENSOR(y), OCL_LONG(y->dims[0]), OCL_LONG(y->dims[1]), OCL_LONG(p ? p->k : 0),
                       OCL_ULONG(oclops_value_bits(y->dtype, 1.0))};
        return ocl_launch1d(ctx, s->k, "EyeLike", (size_t)n, 6, a);
    }
    }
    return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl shape op: unknown kind");
}

#define ANY (OCL_ALL_DTYPES)
#define OP(name, mask, cons) {name, mask, cons, sh_supports, sh_create, sh_run, sh_destroy, NULL},

const ocl_op ocl_ops_shape_ops[] = {
    OP("Reshape", ANY, "device copy or view") OP("Flatten", ANY, "device copy or view")
    OP("Squeeze", ANY, "device copy or view") OP("Unsqueeze", ANY, "device copy or view")
    OP("Identity", ANY, "device copy or view") OP("BitCast", ANY, "same bytes: a device copy")
    OP("Dropout", ANY, "inference only (training_mode constant false)")
    OP("Expand", ANY, "") OP("Shape", ANY, "") OP("Size", ANY, "")
    OP("Range", OCL_DT(FLOAT) | OCL_DT(DOUBLE) | OCL_DT(FLOAT16) | OCL_DT(BFLOAT16) | OCL_DT(INT16) | OCL_DT(INT32) |
                OCL_DT(INT64), "")
    OP("ConstantOfShape", ANY & ~OCL_DT(BFLOAT16), "") OP("EyeLike", ANY & ~OCL_DT(BFLOAT16), "2-D")
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
