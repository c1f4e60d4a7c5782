/* OpenCL kernels: elementwise ops. Unary math and activations, binary ops with numpy broadcasting (arithmetic,
 * comparisons, logic, bitwise, Mod, BitShift, Pow with an exponent of any numeric dtype, PRelu), variadic
 * Sum/Mean/Max/Min, Clip, IsNaN/IsInf, Where and Cast/CastLike.
 *
 * One source (elementwise.cl) serves every dtype: it is built per dtype with -D options (oclops_type_options),
 * float16 computed in float, integers in long. Op codes are runtime arguments, so a model needs one program per
 * dtype, not one per op. Also home of the helpers the other oclops families share (declared in their files). */
#include <math.h>

#include "opencl_internal.h"
#include "oclops_shared.h"

OCL_SOURCE(elementwise);
OCL_SOURCE(data_movement);


/* -D options that specialize elementwise.cl / reduce.cl / resize.cl for a dtype; 0 when the dtype has none. */
int oclops_type_options(netrun_dtype t, char *buf, size_t size) {
    const char *o;
    switch (t) {
    case NETRUN_DTYPE_FLOAT: o = "-DT=float -DCT=float -DIS_FLOAT=1 -DES=4"; break;
    case NETRUN_DTYPE_FLOAT16: o = "-DT=half -DCT=float -DIS_FLOAT=1 -DIS_HALF=1 -DES=2"; break;
    case NETRUN_DTYPE_DOUBLE: o = "-DT=double -DCT=double -DIS_FLOAT=1 -DES=8"; break;
    /* bfloat16: only elementwise.cl knows IS_BF16; other families leave it out of their dtype masks */
    case NETRUN_DTYPE_BFLOAT16: o = "-DT=ushort -DCT=float -DIS_FLOAT=1 -DIS_BF16=1 -DES=2"; break;
    case NETRUN_DTYPE_INT8: o = "-DT=char -DCT=long -DES=1"; break;
    case NETRUN_DTYPE_INT16: o = "-DT=short -DCT=long -DES=2"; break;
    case NETRUN_DTYPE_INT32: o = "-DT=int -DCT=long -DES=4"; break;
    case NETRUN_DTYPE_INT64: o = "-DT=long -DCT=long -DES=8"; break;
    case NETRUN_DTYPE_UINT8: o = "-DT=uchar -DCT=long -DIS_UNSIGNED=1 -DES=1"; break;
    case NETRUN_DTYPE_BOOL: o = "-DT=uchar -DCT=long -DIS_UNSIGNED=1 -DES=1"; break;
    case NETRUN_DTYPE_UINT16: o = "-DT=ushort -DCT=long -DIS_UNSIGNED=1 -DES=2"; break;
    case NETRUN_DTYPE_UINT32: o = "-DT=uint -DCT=long -DIS_UNSIGNED=1 -DES=4"; break;
    case NETRUN_DTYPE_UINT64: o = "-DT=ulong -DCT=ulong -DIS_UNSIGNED=1 -DES=8"; break;
    default: return 0;
    }
    return snprintf(buf, size, "%s", o) < (int)size;
}

/* -DE=<unsigned type of that size> for the byte-moving kernels (data_movement.cl, nearest resize). */
int oclops_bytes_options(size_t es, char *buf, size_t size) {
    const char *e = es == 1 ? "uchar" : es == 2 ? "ushort" : es == 4 ? "uint" : es == 8 ? "ulong" : NULL;
    return e && snprintf(buf, size, "-DE=%s", e) < (int)size;
}

/* A device int that kernels set to 1 on bad input (integer division by zero, index out of range). */
netrun_status oclops_flag_create(ocl_context *ctx, cl_mem *flag) {
    static const cl_int zero = 0;
    netrun_status st = ocl_upload(ctx, &zero, sizeof zero, flag);
    return st;
}

/* Read the flag back (waits for the queue) and reset it; an error naming the problem when it was set. */
netrun_status oclops_flag_check(ocl_context *ctx, cl_mem flag, const char *what, const char *problem) {
    static const cl_int zero = 0;
    cl_int v = 0;
    cl_int e = clEnqueueReadBuffer(ctx->queue, flag, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL);
    if (e != CL_SUCCESS) return ocl_fail(e, what);
    if (!v) return NETRUN_OK;
    e = clEnqueueWriteBuffer(ctx->queue, flag, CL_TRUE, 0, sizeof zero, &zero, 0, NULL, NULL);
    if (e != CL_SUCCESS) return ocl_fail(e, what);
    return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl %s: %s", what, problem);
}

/* ---- op descriptions ---- */

enum {
    U_RELU, U_NEG, U_ABS, U_SIGN, U_SIGMOID, U_TANH, U_ERF, U_EXP, U_LOG, U_SQRT, U_RECIPROCAL, U_FLOOR, U_CEIL,
    U_ROUND, U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH, U_ATANH, U_SOFTPLUS,
    U_SOFTSIGN, U_HARD_SWISH, U_MISH, U_LEAKY_RELU, U_ELU, U_SELU, U_CELU, U_HARD_SIGMOID, U_THRESHOLDED_RELU,
    U_GELU, U_SHRINK, U_CLIP, U_NOT, U_BITNOT, U_ISNAN, U_ISINF, U_SWISH
};
enum {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAX, B_MIN, B_PRELU, B_MOD, B_FMOD, B_SHL, B_SHR, B_BAND, B_BOR, B_BXOR,
    B_EQ, B_LT, B_GT, B_LE, B_GE, B_AND, B_OR, B_XOR
};

/* Which dtypes an op takes (checked in supports; the kernels themselves are dtype-generic). */
#define DT(t) OCL_DT(t)
#define M_FLT (DT(FLOAT) | DT(FLOAT16) | DT(DOUBLE))
#define M_SINT (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define M_UINT (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define M_INT (M_SINT | M_UINT)
#define M_NUM (M_FLT | M_INT)
#define M_CAST (M_NUM | DT(BOOL) | DT(BFLOAT16) | DT(INT4) | DT(UINT4) | DT(INT2) | DT(UINT2))

enum { K_UNARY, K_PRED, K_BINARY, K_COMPARE, K_VARIADIC, K_MEAN, K_MOD, K_SHIFT, K_WHERE, K_CAST };

typedef struct ew_op {
    const char *name;
    int kind;
    int code;       /* U_* / B_* */
    uint64_t dtypes;
} ew_op;

static const ew_op ew_ops[] = {
    {"Relu", K_UNARY, U_RELU, M_FLT | M_SINT}, {"Neg", K_UNARY, U_NEG, M_FLT | M_SINT},
    {"Abs", K_UNARY, U_ABS, M_NUM}, {"Sign", K_UNARY, U_SIGN, M_NUM}, {"Sigmoid", K_UNARY, U_SIGMOID, M_FLT},
    {"Tanh", K_UNARY, U_TANH, M_FLT}, {"Erf", K_UNARY, U_ERF, M_FLT}, {"Exp", K_UNARY, U_EXP, M_FLT},
    {"Log", K_UNARY, U_LOG, M_FLT}, {"Sqrt", K_UNARY, U_SQRT, M_FLT},
    {"Reciprocal", K_UNARY, U_RECIPROCAL, M_FLT}, {"Floor", K_UNARY, U_FLOOR, M_FLT},
    {"Ceil", K_UNARY, U_CEIL, M_FLT}, {"Round", K_UNARY, U_ROUND, M_FLT}, {"Sin", K_UNARY, U_SIN, M_FLT},
    {"Cos", K_UNARY, U_COS, M_FLT}, {"Tan", K_UNARY, U_TAN, M_FLT}, {"Asin", K_UNARY, U_ASIN, M_FLT},
    {"Acos", K_UNARY, U_ACOS, M_FLT}, {"Atan", K_UNARY, U_ATAN, M_FLT}, {"Sinh", K_UNARY, U_SINH, M_FLT},
    {"Cosh", K_UNARY, U_COSH, M_FLT}, {"Asinh", K_UNARY, U_ASINH, M_FLT}, {"Acosh", K_UNARY, U_ACOSH, M_FLT},
    {"Atanh", K_UNARY, U_ATANH, M_FLT}, {"Softplus", K_UNARY, U_SOFTPLUS, M_FLT},
    {"Softsign", K_UNARY, U_SOFTSIGN, M_FLT}, {"HardSwish", K_UNARY, U_HARD_SWISH, M_FLT},
    {"Mish", K_UNARY, U_MISH, M_FLT}, {"LeakyRelu", K_UNARY, U_LEAKY_RELU, M_FLT}, {"Elu", K_UNARY, U_ELU, M_FLT},
    {"Selu", K_UNARY, U_SELU, M_FLT}, {"Celu", K_UNARY, U_CELU, M_FLT},
    {"HardSigmoid", K_UNARY, U_HARD_SIGMOID, M_FLT}, {"ThresholdedRelu", K_UNARY, U_THRESHOLDED_RELU, M_FLT},
    {"Gelu", K_UNARY, U_GELU, M_FLT}, {"Shrink", K_UNARY, U_SHRINK, M_FLT},
    {"Swish", K_UNARY, U_SWISH, M_FLT}, {"Clip", K_UNARY, U_CLIP, M_NUM},
    {"Not", K_UNARY, U_NOT, DT(BOOL)}, {"BitwiseNot", K_UNARY, U_BITNOT, M_INT},
    {"IsNaN", K_PRED, U_ISNAN, M_FLT}, {"IsInf", K_PRED, U_ISINF, M_FLT},
    {"Add", K_BINARY, B_ADD, M_NUM}, {"Sub", K_BINARY, B_SUB, M_NUM}, {"Mul", K_BINARY, B_MUL, M_NUM},
    {"Div", K_BINARY, B_DIV, M_NUM}, {"Pow", K_BINARY, B_POW, M_FLT | DT(INT32) | DT(INT64)},
    {"PRelu", K_BINARY, B_PRELU, M_NUM}, {"Mod", K_MOD, B_MOD, M_NUM}, {"BitShift", K_SHIFT, B_SHL, M_UINT},
    {"BitwiseAnd", K_BINARY, B_BAND, M_INT}, {"BitwiseOr", K_BINARY, B_BOR, M_INT},
    {"BitwiseXor", K_BINARY, B_BXOR, M_INT},
    {"Equal", K_COMPARE, B_EQ, M_NUM | DT(BOOL)}, {"Less", K_COMPARE, B_LT, M_NUM},
    {"Greater", K_COMPARE, B_GT, M_NUM}, {"LessOrEqual", K_COMPARE, B_LE, M_NUM},
    {"GreaterOrEqual", K_COMPARE, B_GE, M_NUM}, {"And", K_COMPARE, B_AND, DT(BOOL)},
    {"Or", K_COMPARE, B_OR, DT(BOOL)}, {"Xor", K_COMPARE, B_XOR, DT(BOOL)},
    {"Sum", K_VARIADIC, B_ADD, M_NUM}, {"Max", K_VARIADIC, B_MAX, M_NUM}, {"Min", K_VARIADIC, B_MIN, M_NUM},
    {"Mean", K_MEAN, B_ADD, M_FLT},
    {"Where", K_WHERE, 0, OCL_ALL_DTYPES},
    {"Cast", K_CAST, 0, M_CAST}, {"CastLike", K_CAST, 0, M_CAST},
    {NULL, 0, 0, 0}};

static const ew_op *ew_find(const char *name) {
    for (const ew_op *e = ew_ops; e->name; e++)
        if (!strcmp(e->name, name)) return e;
    return NULL;
}

static int has_input(const netrun_node_desc *node, int i) { return i < node->n_inputs && node->inputs[i].rank >= 0; }

static int ew_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const ew_op *e = ew_find(node->op_type);
    if (!e) return ocl_refuse(reason, size, "no OpenCL kernel for %s", node->op_type);
    if (node->n_inputs < 1 || node->n_outputs < 1) return ocl_refuse(reason, size, "%s without inputs", node->op_type);
    netrun_dtype t = node->inputs[0].dtype;
    if (e->kind == K_WHERE) {
        if (node->n_inputs != 3 || t != NETRUN_DTYPE_BOOL) return ocl_refuse(reason, size, "Where needs a bool condition");
        t = node->inputs[1].dtype;
        if (node->inputs[2].dtype != t) return ocl_refuse(reason, size, "Where: X and Y of different dtypes");
    }
    if (!(e->dtypes & NETRUN_DTYPE_BIT(t)))
        return ocl_refuse(reason, size, "dtype %s not supported by the OpenCL %s kernel", ocl_dtype_name(t), e->name);
    if (e->kind == K_CAST) {
        netrun_dtype to = node->outputs[0].dtype;
        if (!(M_CAST & NETRUN_DTYPE_BIT(to)))
            return ocl_refuse(reason, size, "Cast to %s not supported", ocl_dtype_name(to));
        return 1;
    }
    if (e->kind == K_UNARY && e->code == U_CLIP) {
        for (int i = 1; i < 3; i++)
            if (has_input(node, i) && node->inputs[i].dtype != t)
                return ocl_refuse(reason, size, "Clip bounds of another dtype");
        return 1;
    }
    if (e->kind == K_BINARY || e->kind == K_COMPARE || e->kind == K_VARIADIC || e->kind == K_MEAN ||
        e->kind == K_MOD || e->kind == K_SHIFT) {
        if (node->n_inputs > 64) return ocl_refuse(reason, size, "%d inputs", node->n_inputs);
        if (e->kind != K_VARIADIC && e->kind != K_MEAN && node->n_inputs != 2)
            return ocl_refuse(reason, size, "%s needs 2 inputs", e->name);
        for (int i = 1; i < node->n_inputs; i++) {
            netrun_dtype u = node->inputs[i].dtype;
            if (e->code == B_POW && e->kind == K_BINARY) {
                if (!(M_NUM & NETRUN_DTYPE_BIT(u)))
                    return ocl_refuse(reason, size, "Pow exponent dtype %s", ocl_dtype_name(u));
            } else if (u != t) {
                return ocl_refuse(reason, size, "inputs of different dtypes");
            }
        }
        const netrun_unary_params *p = node->params;
        if (e->kind == K_MOD && (M_FLT & NETRUN_DTYPE_BIT(t)) && (!p || p->alpha == 0))
            return ocl_refuse(reason, size, "Mod on floats needs fmod=1");
    }
    return 1;
}

typedef struct ew_types {
    netrun_dtype t, u, to;
} ew_types;

/* Per-node state: the kernel(s), and a flag buffer for integer division by zero. */
typedef struct ew_state {
    const ew_op *op;
    cl_kernel k, k2; /* k2: the bool Max used by a one-input variadic op, or Mean's division */
    cl_mem flag;
    int code;        /* resolved B_* (Mod fmod, BitShift direction) */
    ew_types types;  /* the dtypes k / k2 are built for */
} ew_state;

static void ew_destroy(ocl_context *ctx, void *state) {
    (void)ctx;
    ew_state *s = state;
    if (!s) return;
    if (s->flag) clReleaseMemObject(s->flag);
    ocl_host->free(s);
}

static int dst_kind(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_DOUBLE: case NETRUN_DTYPE_BFLOAT16: return 0;
    case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT32: return 2;
    case NETRUN_DTYPE_UINT64: return 3;
    case NETRUN_DTYPE_BOOL: return 4;
    default: return 1;
    }
}

/* The dtypes a node's kernels are built for: t (input 0; Where: X), u (input 1: Pow's exponent), to (output 0:
 * Cast's target). Descs at kernel creation may carry best guesses for nodes inferred at run time, so runs
 * compare them with the tensors' and rebuild (the per-context cache makes that cheap). */

static ew_types types_of_node(const ew_op *e, const netrun_node_desc *node) {
    ew_types ty;
    ty.t = e->kind == K_WHERE && node->n_inputs > 1 ? node->inputs[1].dtype : node->inputs[0].dtype;
    ty.u = node->n_inputs > 1 ? node->inputs[1].dtype : ty.t;
    ty.to = node->n_outputs > 0 ? node->outputs[0].dtype : ty.t;
    return ty;
}

static ew_types types_of_args(const ew_op *e, const netrun_kernel_args *args) {
    ew_types ty;
    ty.t = e->kind == K_WHERE && args->n_inputs > 1 ? args->inputs[1].dtype : args->inputs[0].dtype;
    ty.u = args->n_inputs > 1 ? args->inputs[1].dtype : ty.t;
    ty.to = args->n_outputs > 0 ? args->outputs[0].dtype : ty.t;
    return ty;
}

/* int4 / uint4 / int2 / uint2 are stored unpacked, one per byte (int4 and int2 sign-extended): as Cast sources
 * they read as int8 / uint8; 0 for other dtypes. */
static netrun_dtype subbyte_as_byte(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_INT4: case NETRUN_DTYPE_INT2: return NETRUN_DTYPE_INT8;
    case NETRUN_DTYPE_UINT4: case NETRUN_DTYPE_UINT2: return NETRUN_DTYPE_UINT8;
    default: return NETRUN_DTYPE_UNDEFINED;
    }
}

/* Get the kernels of state s for dtypes ty. */
static netrun_status ew_kernels(ocl_context *ctx, ew_state *s, ew_types ty) {
    const ew_op *e = s->op;
    netrun_dtype t = ty.t;
    if (e->kind == K_CAST && subbyte_as_byte(t)) t = subbyte_as_byte(t);
    char opts[256];
    if (e->kind == K_WHERE) {
        if (!oclops_bytes_options(ocl_esize(t), opts, sizeof opts))
            return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "Where: dtype %s", ocl_dtype_name(t));
    } else if (!(e->dtypes & NETRUN_DTYPE_BIT(t)) || !oclops_type_options(t, opts, sizeof opts)) {
        return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "opencl %s: dtype %s", e->name, ocl_dtype_name(t));
    }
    if (e->kind == K_BINARY && e->code == B_POW && ty.u != t) {
        /* the exponent's own type: -DT2=.. -DCT2=.. (-DT2_HALF=1) */
        char o2[128];
        netrun_dtype u = ty.u;
        const char *tn = ocl_cl_type(u);
        if (!tn || u == NETRUN_DTYPE_BOOL || !oclops_type_options(u, o2, sizeof o2))
            return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "Pow: exponent dtype %s", ocl_dtype_name(u));
        int flt = u == NETRUN_DTYPE_FLOAT || u == NETRUN_DTYPE_FLOAT16 || u == NETRUN_DTYPE_DOUBLE;
        const char *ct = u == NETRUN_DTYPE_FLOAT16 ? "float" : flt ? tn : u == NETRUN_DTYPE_UINT64 ? "ulong" : "long";
        size_t l = strlen(opts);
        snprintf(opts + l, sizeof opts - l, " -DT2=%s -DCT2=%s%s", tn, ct,
                 u == NETRUN_DTYPE_FLOAT16 ? " -DT2_HALF=1" : "");
    }
    if (e->kind == K_CAST) {
        netrun_dtype to = ty.to;
        int bits = to == NETRUN_DTYPE_INT4 || to == NETRUN_DTYPE_UINT4 ? 4 : to == NETRUN_DTYPE_INT2 || to == NETRUN_DTYPE_UINT2 ? 2 : 0;
        int bsigned = to == NETRUN_DTYPE_INT4 || to == NETRUN_DTYPE_INT2;
        if (bits) to = subbyte_as_byte(to);
        const char *tn = to == NETRUN_DTYPE_BOOL ? "uchar" : to == NETRUN_DTYPE_BFLOAT16 ? "ushort" : ocl_cl_type(to);
        char o2[128];
        if (!tn || !oclops_type_options(to, o2, sizeof o2))
            return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "Cast to %s", ocl_dtype_name(to));
        size_t l = strlen(opts);
        snprintf(opts + l, sizeof opts - l, " -DDT=%s -DDST_KIND=%d%s", tn, dst_kind(to),
                 to == NETRUN_DTYPE_FLOAT16 ? " -DDST_HALF=1" : to == NETRUN_DTYPE_BFLOAT16 ? " -DDST_BF16=1" : "");
        l = strlen(opts);
        if (bits) snprintf(opts + l, sizeof opts - l, " -DDST_BITS=%d -DDST_SIGNED=%d", bits, bsigned);
    }
    const char *kname = "ew_binary";
    switch (e->kind) {
    case K_UNARY: kname = "ew_unary"; break;
    case K_PRED: kname = "ew_predicate"; break;
    case K_COMPARE: kname = "ew_compare"; break;
    case K_WHERE: kname = "dm_where"; break;
    case K_CAST: kname = "ew_cast"; break;
    default: break;
    }
    const char *src = e->kind == K_WHERE ? ocl_src_data_movement : ocl_src_elementwise;
    const char *sname = e->kind == K_WHERE ? "data_movement" : "elementwise";
    netrun_status st = ocl_kernel_get(ctx, sname, src, opts, kname, &s->k);
    if (st == NETRUN_OK && e->kind == K_MEAN) st = ocl_kernel_get(ctx, sname, src, opts, "ew_divide", &s->k2);
    if (st == NETRUN_OK) s->types = ty;
    return st;
}

static netrun_status ew_create(ocl_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)workspace;
    const ew_op *e = ew_find(node->op_type);
    if (!e) return ocl_host->error(NETRUN_ERR_UNSUPPORTED, "no OpenCL kernel for %s", node->op_type);
    ew_state *s = ocl_host->alloc(sizeof *s, 16);
    if (!s) return ocl_host->error(NETRUN_ERR_OUT_OF_MEMORY, "opencl %s: out of memory", e->name);
    memset(s, 0, sizeof *s);
    s->op = e;
    s->code = e->code;
    const netrun_unary_params *p = node->params;
    if (e->kind == K_MOD) s->code = p && p->alpha != 0 ? B_FMOD : B_MOD;
    if (e->kind == K_SHIFT) s->code = p && p->alpha != 0 ? B_SHR : B_SHL;
    netrun_status st = ew_kernels(ctx, s, types_of_node(e, node));
    if (st == NETRUN_OK && (e->kind == K_BINARY || e->kind == K_MOD || e->kind == K_SHIFT || e->kind == K_VARIADIC ||
                            e->kind == K_MEAN))
        st = oclops_flag_create(ctx, &s->flag);
    if (st != NETRUN_OK) {
        ew_destroy(ctx, s);
        return st;
    }
    *state = s;
    return NETRUN_OK;
}

/* ---- launches ---- */

static int is_int_dtype(netrun_dtype t) { return (M_INT | DT(BOOL)) & NETRUN_DTYPE_BIT(t) ? 1 : 0; }

static netrun_status run_unary(ocl_context *ctx, ew_state *s, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    const netrun_unary_params *p = args->params;
    netrun_unary_params z;
    if (!p) {
        memset(&z, 0, sizeof z);
        p = &z;
    }
    const netrun_tensor *lo = x, *hi = x;
    int has_lo = 0, has_hi = 0;
    float flo = -INFINITY, fhi = INFINITY;
    int64_t ilo = INT64_MIN, ihi = INT64_MAX;
    if (x->dtype == NETRUN_DTYPE_UINT64) ihi = -1; /* ULONG_MAX in the kernel's ulong */
    if (is_int_dtype(x->dtype) && (M_UINT & NETRUN_DTYPE_BIT(x->dtype))) ilo = 0;
    if (s->code == U_CLIP && s->op->kind == K_UNARY) {
        if (args->n_inputs > 1 && args->inputs[1].rank >= 0 && ocl_count(&args->inputs[1]) > 0) {
            lo = &args->inputs[1];
            has_lo = 1;
        } else if (p->has_min) {
            flo = p->alpha;
            ilo = isnan(p->alpha) ? ilo : p->alpha <= -9.2e18f ? INT64_MIN : p->alpha >= 9.2e18f ? INT64_MAX : (int64_t)p->alpha;
        }
        if (args->n_inputs > 2 && args->inputs[2].rank >= 0 && ocl_count(&args->inputs[2]) > 0) {
            hi = &args->inputs[2];
            has_hi = 1;
        } else if (p->has_max) {
            fhi = p->beta;
            ihi = isnan(p->beta) ? ihi : p->beta <= -9.2e18f ? INT64_MIN : p->beta >= 9.2e18f ? INT64_MAX : (int64_t)p->beta;
        }
    }
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n), OCL_INT(s->code), OCL_FLOAT(p->alpha),
                   OCL_FLOAT(p->beta), OCL_FLOAT(p->gamma), OCL_INT(p->approximate_tanh), OCL_TENSOR(lo),
                   OCL_INT(has_lo), OCL_TENSOR(hi), OCL_INT(has_hi), OCL_FLOAT(flo), OCL_FLOAT(fhi), OCL_LONG(ilo),
                   OCL_LONG(ihi)};
    return ocl_launch1d(ctx, s->k, s->op->name, (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status run_predicate(ocl_context *ctx, ew_state *s, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    const netrun_unary_params *p = args->params;
    int neg = p ? p->alpha != 0 : 1, pos = p ? p->beta != 0 : 1;
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n), OCL_INT(s->code), OCL_INT(neg), OCL_INT(pos)};
    return ocl_launch1d(ctx, s->k, s->op->name, (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

/* Broadcast strides of up to three inputs over y's shape; 0 when some input does not broadcast. */
static int make_meta(oclops_meta *m, const netrun_tensor *y, int n_in, const netrun_tensor *const *in) {
    memset(m, 0, sizeof *m);
    if (y->rank < 0 || y->rank > NETRUN_MAX_RANK) return 0;
    m->rank = y->rank;
    for (int d = 0; d < y->rank; d++) m->dims[d] = y->dims[d];
    int64_t *s[3] = {m->s0, m->s1, m->s2};
    for (int k = 0; k < n_in; k++) {
        if (in[k]->rank < 0 || in[k]->rank > y->rank) return 0;
        for (int d = 0; d < in[k]->rank; d++) {
            int64_t od = y->dims[d + y->rank - in[k]->rank];
            if (in[k]->dims[d] != od && in[k]->dims[d] != 1) return 0;
        }
        ocl_broadcast_strides(in[k]->rank, in[k]->dims, y->rank, y->dims, s[k]);
    }
    return 1;
}

static netrun_status launch_binary(ocl_context *ctx, ew_state *s, cl_kernel k, int code, const netrun_tensor *A,
                                   const netrun_tensor *B, netrun_tensor *Y, int with_flag) {
    int64_t n = ocl_count(Y);
    if (n == 0) return NETRUN_OK;
    oclops_meta m;
    const netrun_tensor *in[2] = {A, B};
    if (!make_meta(&m, Y, 2, in))
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl %s: inputs do not broadcast to the output",
                               s->op->name);
    int plain = ocl_count(A) == n && ocl_count(B) == n;
    if (with_flag) {
        ocl_arg a[] = {OCL_TENSOR(A), OCL_TENSOR(B), OCL_TENSOR(Y), OCL_LONG(n), OCL_INT(code), OCL_INT(plain),
                       OCL_CONST(&m, sizeof m), OCL_CLMEM(s->flag)};
        return ocl_launch1d(ctx, k, s->op->name, (size_t)n, (int)(sizeof a / sizeof a[0]), a);
    }
    ocl_arg a[] = {OCL_TENSOR(A), OCL_TENSOR(B), OCL_TENSOR(Y), OCL_LONG(n), OCL_INT(code), OCL_INT(plain),
                   OCL_CONST(&m, sizeof m)};
    return ocl_launch1d(ctx, k, s->op->name, (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

/* Integer Div / Mod raise the flag on a zero divisor: read it back (one wait) only for those. */
static netrun_status check_div(ocl_context *ctx, ew_state *s, netrun_dtype t) {
    int divides = s->code == B_DIV || s->code == B_MOD || s->code == B_FMOD;
    if (!divides || !is_int_dtype(t)) return NETRUN_OK;
    return oclops_flag_check(ctx, s->flag, s->op->name, "integer division by zero");
}

static netrun_status run_variadic(ocl_context *ctx, ew_state *s, const netrun_kernel_args *args) {
    netrun_tensor *y = &args->outputs[0];
    netrun_status st;
    if (args->n_inputs == 1) /* a broadcast copy: max(x, x) is x, NaN included */
        st = launch_binary(ctx, s, s->k, B_MAX, &args->inputs[0], &args->inputs[0], y, 1);
    else {
        st = launch_binary(ctx, s, s->k, s->code, &args->inputs[0], &args->inputs[1], y, 1);
        netrun_tensor acc = *y;
        for (int i = 2; i < args->n_inputs && st == NETRUN_OK; i++)
            st = launch_binary(ctx, s, s->k, s->code, &acc, &args->inputs[i], y, 1);
    }
    if (st != NETRUN_OK || s->op->kind != K_MEAN) return st;
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    ocl_arg a[] = {OCL_TENSOR(y), OCL_LONG(n), OCL_FLOAT((float)args->n_inputs)};
    return ocl_launch1d(ctx, s->k2, "Mean", (size_t)n, 4, a);
}

static netrun_status run_where(ocl_context *ctx, ew_state *s, const netrun_kernel_args *args) {
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(y);
    if (n == 0) return NETRUN_OK;
    if (args->n_inputs != 3) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Where needs 3 inputs");
    oclops_meta m;
    const netrun_tensor *in[3] = {&args->inputs[0], &args->inputs[1], &args->inputs[2]};
    if (!make_meta(&m, y, 3, in))
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl Where: inputs do not broadcast to the output");
    ocl_arg a[] = {OCL_TENSOR(in[0]), OCL_TENSOR(in[1]), OCL_TENSOR(in[2]), OCL_TENSOR(y), OCL_LONG(n),
                   OCL_CONST(&m, sizeof m)};
    return ocl_launch1d(ctx, s->k, "Where", (size_t)n, (int)(sizeof a / sizeof a[0]), a);
}

static netrun_status run_cast(ocl_context *ctx, ew_state *s, const netrun_kernel_args *args) {
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    int64_t n = ocl_count(x);
    if (n == 0) return NETRUN_OK;
    if (n != ocl_count(y)) return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl Cast: output size differs");
    ocl_arg a[] = {OCL_TENSOR(x), OCL_TENSOR(y), OCL_LONG(n)};
    return ocl_launch1d(ctx, s->k, "Cast", (size_t)n, 5, a);
}

static netrun_status ew_run(ocl_context *ctx, void *state, const netrun_kernel_args *args) {
    ew_state *s = state;
    if (args->n_inputs < 1 || args->n_outputs < 1)
        return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "opencl %s: missing input or output", s->op->name);
    ew_types ty = types_of_args(s->op, args);
    netrun_status st;
    if (ty.t != s->types.t || ty.u != s->types.u || ty.to != s->types.to) {
        st = ew_kernels(ctx, s, ty);
        if (st != NETRUN_OK) return st;
    }
    switch (s->op->kind) {
    case K_UNARY: return run_unary(ctx, s, args);
    case K_PRED: return run_predicate(ctx, s, args);
    case K_COMPARE:
        if (args->n_inputs < 2) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s needs 2 inputs", s->op->name);
        return launch_binary(ctx, s, s->k, s->code, &args->inputs[0], &args->inputs[1], &args->outputs[0], 0);
    case K_BINARY: case K_MOD: case K_SHIFT:
        if (args->n_inputs < 2) return ocl_host->error(NETRUN_ERR_INVALID_ARGUMENT, "%s needs 2 inputs", s->op->name);
        st = launch_binary(ctx, s, s->k, s->code, &args->inputs[0], &args->inputs[1], &args->outputs[0], 1);
        return st != NETRUN_OK ? st : check_div(ctx, s, args->inputs[0].dtype);
    case K_VARIADIC: case K_MEAN:
        st = run_variadic(ctx, s, args);
        return st != NETRUN_OK ? st : check_div(ctx, s, args->inputs[0].dtype);
    case K_WHERE: return run_where(ctx, s, args);
    case K_CAST: return run_cast(ctx, s, args);
    }
    return ocl_host->error(NETRUN_ERR_INTERNAL, "opencl %s: unknown kind", s->op->name);
}

/* The support-matrix rows; ew_ops holds the same dtype masks (checked in ew_supports). */
#define OP(name, mask, cons) {name, mask, cons, ew_supports, ew_create, ew_run, ew_destroy, NULL},
#define FOP(name) OP(name, M_FLT, "float16 computed in float")
#define BC "numpy broadcasting"

const ocl_op ocl_ops_elementwise[] = {
    OP("Relu", M_FLT | M_SINT, "") FOP("LeakyRelu") FOP("Sigmoid") FOP("Tanh") FOP("HardSigmoid")
    FOP("HardSwish") FOP("Erf") FOP("Exp") FOP("Log") FOP("Sqrt") OP("Neg", M_FLT | M_SINT, "")
    OP("Abs", M_NUM, "") FOP("Reciprocal") FOP("Floor") FOP("Ceil") OP("Round", M_FLT, "half to even")
    OP("Sign", M_NUM, "") FOP("Sin") FOP("Cos") FOP("Tan") FOP("Asin") FOP("Acos") FOP("Atan") FOP("Sinh")
    FOP("Cosh") FOP("Asinh") FOP("Acosh") FOP("Atanh") FOP("Elu") FOP("Selu") FOP("Celu") FOP("Softplus")
    FOP("Softsign") FOP("ThresholdedRelu") OP("Gelu", M_FLT, "approximate none|tanh") FOP("Mish") FOP("Shrink")
    FOP("Swish") FOP("IsNaN") FOP("IsInf") OP("Not", DT(BOOL), "") OP("BitwiseNot", M_INT, "")
    OP("Add", M_NUM, BC) OP("Sub", M_NUM, BC) OP("Mul", M_NUM, BC)
    OP("Div", M_NUM, BC "; integer division by zero is an error")
    OP("Mod", M_NUM, BC "; floats need fmod=1; integer modulo by zero is an error")
    OP("Pow", M_FLT | DT(INT32) | DT(INT64), BC "; exponent of any numeric dtype")
    OP("PRelu", M_NUM, "slope broadcast to X") OP("BitShift", M_UINT, BC) OP("BitwiseAnd", M_INT, BC)
    OP("BitwiseOr", M_INT, BC) OP("BitwiseXor", M_INT, BC)
    OP("Equal", M_NUM | DT(BOOL), BC) OP("Less", M_NUM, BC) OP("Greater", M_NUM, BC)
    OP("LessOrEqual", M_NUM, BC) OP("GreaterOrEqual", M_NUM, BC) OP("And", DT(BOOL), BC)
    OP("Or", DT(BOOL), BC) OP("Xor", DT(BOOL), BC)
    OP("Sum", M_NUM, "variadic") OP("Max", M_NUM, "variadic; NaN propagates")
    OP("Min", M_NUM, "variadic; NaN propagates") OP("Mean", M_FLT, "variadic")
    OP("Clip", M_NUM, "min/max from attributes, constants or run-time inputs")
    OP("Where", OCL_ALL_DTYPES, "bool condition; three-way broadcasting")
    OP("Cast", M_CAST, "numeric, bool, bfloat16, int4/uint4/int2/uint2 (no float8, float4, string)")
    OP("CastLike", M_CAST, "numeric, bool, bfloat16, int4/uint4/int2/uint2 (no float8, float4, string)")
    {NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
