/* Op family: elementwise (definitions: attribute parsing, validation, shape inference).
 *
 * Unary ops keep the input's shape; binary, variadic and Where broadcast numpy-style (opset >= 7; the legacy
 * `broadcast`/`axis` attributes of opset < 7 are not supported: those ops start at opset 7).
 *
 * Params (netrun_ops.h): ops with constants use netrun_unary_params. Three ops without a struct of their
 * own borrow it too, and backends read them this way:
 *   Mod:      alpha = fmod (0 or 1)
 *   BitShift: alpha = 1 for direction "RIGHT", 0 for "LEFT"
 *   IsInf:    alpha = detect_negative, beta = detect_positive (0 or 1)
 * Cast and CastLike use netrun_cast_params (CastLike's `to` is input 1's dtype). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "layer.h"

#define DT(t) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##t)
#define M_FLT NR_DTYPES_FLOAT
#define M_SINT (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define M_UINT (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define M_INT NR_DTYPES_INT
#define M_NUM NR_DTYPES_NUMERIC
#define M_BOOL DT(BOOL)
#define M_POW_BASE (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16) | DT(INT32) | DT(INT64))

/* ---- checks shared by the infer functions ---- */

static netrun_status need_inputs(nr_layer_ctx *c, int lo, int hi) {
    int n = nr_in_count(c);
    if (n < lo || n > hi) {
        if (lo == hi) return nr_layer_error(c, "takes %d input%s, got %d", lo, lo == 1 ? "" : "s", n);
        return nr_layer_error(c, "takes %d to %d inputs, got %d", lo, hi, n);
    }
    for (int i = 0; i < lo; i++)
        if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d is required", i);
    return NETRUN_OK;
}

#define TRY(x)                                  \
    do {                                        \
        netrun_status st_ = (x);                \
        if (st_ != NETRUN_OK) return st_;       \
    } while (0)

/* Same shape as input 0; out_dtype 0 = input 0's dtype. */
static netrun_status infer_unary(nr_layer_ctx *c, uint64_t mask, netrun_dtype out_dtype) {
    TRY(need_inputs(c, 1, 1));
    TRY(nr_check_dtype(c, 0, mask));
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, out_dtype ? out_dtype : x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* Broadcast inputs [first, n) together (all present); result into rank/dims. */
static netrun_status broadcast_inputs(nr_layer_ctx *c, int first, int n, int *rank, int64_t *dims) {
    const netrun_value_desc *a = nr_in(c, first);
    *rank = a->rank;
    memcpy(dims, a->dims, sizeof(int64_t) * (size_t)a->rank);
    for (int i = first + 1; i < n; i++) {
        const netrun_value_desc *b = nr_in(c, i);
        int64_t tmp[NETRUN_MAX_RANK];
        int r;
        TRY(nr_broadcast_shapes(c, *rank, dims, b->rank, b->dims, &r, tmp));
        *rank = r;
        memcpy(dims, tmp, sizeof(int64_t) * (size_t)r);
    }
    return NETRUN_OK;
}

/* Two inputs of one dtype in mask, broadcast; output bool or the input dtype. */
static netrun_status infer_binary(nr_layer_ctx *c, uint64_t mask, int out_bool) {
    TRY(need_inputs(c, 2, 2));
    TRY(nr_check_dtype(c, 0, mask));
    TRY(nr_check_same_dtype(c, 0, 1));
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    TRY(broadcast_inputs(c, 0, 2, &rank, dims));
    nr_out_set(c, 0, out_bool ? NETRUN_DTYPE_BOOL : nr_in(c, 0)->dtype, rank, dims);
    return NETRUN_OK;
}

/* Sum, Mean, Max, Min: one or more inputs of one dtype, all broadcast together. */
static netrun_status infer_variadic(nr_layer_ctx *c, uint64_t mask) {
    int n = nr_in_count(c);
    if (n < 1) return nr_layer_error(c, "needs at least one input");
    for (int i = 0; i < n; i++) {
        if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d is missing (no input is optional)", i);
        TRY(nr_check_dtype(c, i, mask));
        TRY(nr_check_same_dtype(c, 0, i));
    }
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    TRY(broadcast_inputs(c, 0, n, &rank, dims));
    nr_out_set(c, 0, nr_in(c, 0)->dtype, rank, dims);
    return NETRUN_OK;
}

/* ---- infer wrappers per dtype class ---- */
#define INFER_UNARY(fn, mask, out) \
    static netrun_status fn(nr_layer_ctx *c, void *p) { return infer_unary(c, mask, out); }
#define INFER_BINARY(fn, mask, out_bool) \
    static netrun_status fn(nr_layer_ctx *c, void *p) { return infer_binary(c, mask, out_bool); }
#define INFER_VARIADIC(fn, mask) \
    static netrun_status fn(nr_layer_ctx *c, void *p) { return infer_variadic(c, mask); }

INFER_UNARY(infer_un_float, M_FLT, 0)
INFER_UNARY(infer_un_signed, M_FLT | M_SINT, 0)
INFER_UNARY(infer_un_numeric, M_NUM, 0)
INFER_UNARY(infer_un_int, M_INT, 0)
INFER_UNARY(infer_un_bool, M_BOOL, 0)
INFER_UNARY(infer_un_float_to_bool, M_FLT, NETRUN_DTYPE_BOOL)
INFER_BINARY(infer_bin_numeric, M_NUM, 0)
INFER_BINARY(infer_bin_int, M_INT, 0)
INFER_BINARY(infer_cmp_numeric, M_NUM, 1)
INFER_BINARY(infer_cmp_equal, M_NUM | M_BOOL, 1)
INFER_BINARY(infer_logic, M_BOOL, 1)
INFER_VARIADIC(infer_var_numeric, M_NUM)
INFER_VARIADIC(infer_var_float, M_FLT)

/* ---- ops with attributes ---- */

static netrun_status get_float(nr_layer_ctx *c, const char *name, float def, float *out) {
    return nr_attr_float(c, name, def, out);
}

static netrun_status get_flag(nr_layer_ctx *c, const char *name, int64_t def, int *out) {
    int64_t v;
    TRY(nr_attr_int(c, name, def, &v));
    if (v != 0 && v != 1) return nr_layer_error(c, "attribute %s must be 0 or 1, got %lld", name, (long long)v);
    *out = (int)v;
    return NETRUN_OK;
}

static netrun_status parse_alpha(nr_layer_ctx *c, netrun_unary_params *p, float def) {
    return get_float(c, "alpha", def, &p->alpha);
}

static netrun_status parse_leaky_relu(nr_layer_ctx *c, void *p) { return parse_alpha(c, p, 0.01f); }
static netrun_status parse_alpha_one(nr_layer_ctx *c, void *p) { return parse_alpha(c, p, 1.0f); }

static netrun_status parse_celu(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    TRY(parse_alpha(c, p, 1.0f));
    if (p->alpha == 0) return nr_layer_error(c, "attribute alpha must not be 0 (Celu divides by it)");
    return NETRUN_OK;
}

static netrun_status parse_hard_sigmoid(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    TRY(get_float(c, "alpha", 0.2f, &p->alpha));
    return get_float(c, "beta", 0.5f, &p->beta);
}

static netrun_status parse_selu(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    TRY(get_float(c, "alpha", 1.67326319217681884765625f, &p->alpha));
    return get_float(c, "gamma", 1.05070102214813232421875f, &p->gamma);
}

static netrun_status parse_shrink(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    TRY(get_float(c, "bias", 0.0f, &p->alpha));
    return get_float(c, "lambd", 0.5f, &p->beta);
}

static netrun_status parse_gelu(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    const char *a;
    TRY(nr_attr_string(c, "approximate", "none", &a));
    if (!strcmp(a, "tanh")) p->approximate_tanh = 1;
    else if (strcmp(a, "none")) return nr_layer_error(c, "attribute approximate must be \"none\" or \"tanh\", got \"%s\"", a);
    return NETRUN_OK;
}

static netrun_status parse_is_inf(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    int neg = 1, pos = 1;
    TRY(get_flag(c, "detect_negative", 1, &neg));
    TRY(get_flag(c, "detect_positive", 1, &pos));
    p->alpha = (float)neg;
    p->beta = (float)pos;
    return NETRUN_OK;
}

static netrun_status parse_mod(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    int f = 0;
    TRY(get_flag(c, "fmod", 0, &f));
    p->alpha = (float)f;
    return NETRUN_OK;
}

static netrun_status infer_mod(nr_layer_ctx *c, void *pv) {
    (void)pv; /* floats with fmod=0: floor modulo, defined from opset 28 and taken for older models too */
    return infer_binary(c, M_NUM, 0);
}

static netrun_status parse_bitshift(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    const char *d;
    TRY(nr_attr_string(c, "direction", NULL, &d));
    if (!d) return nr_layer_error(c, "attribute direction (\"LEFT\" or \"RIGHT\") is required");
    if (!strcmp(d, "RIGHT")) p->alpha = 1;
    else if (!strcmp(d, "LEFT")) p->alpha = 0;
    else return nr_layer_error(c, "attribute direction must be \"LEFT\" or \"RIGHT\", got \"%s\"", d);
    return NETRUN_OK;
}

/* Clip: opset < 11 takes min/max attributes; later opsets take optional scalar inputs 1 and 2. */
static netrun_status parse_clip(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    if (nr_opset(c) >= 11) return NETRUN_OK;
    p->has_min = nr_attr_has(c, "min");
    p->has_max = nr_attr_has(c, "max");
    TRY(get_float(c, "min", -FLT_MAX, &p->alpha));
    TRY(get_float(c, "max", FLT_MAX, &p->beta));
    return NETRUN_OK;
}

static netrun_status infer_clip(nr_layer_ctx *c, void *pv) {
    netrun_unary_params *p = pv;
    int legacy = nr_opset(c) < 11;
    TRY(need_inputs(c, 1, legacy ? 1 : 3));
    TRY(nr_check_dtype(c, 0, M_NUM));
    netrun_dtype t = nr_in(c, 0)->dtype;
    for (int i = 1; i < nr_in_count(c); i++) {
        if (!nr_in_present(c, i)) continue;
        const netrun_value_desc *b = nr_in(c, i);
        const char *what = i == 1 ? "min" : "max";
        TRY(nr_check_same_dtype(c, 0, i));
        int64_t cnt = nr_shape_count(b->rank, b->dims);
        if (cnt != 1) return nr_layer_error(c, "%s must be a scalar, has %lld elements", what, (long long)cnt);
        double v;
        netrun_status st = nr_in_scalar(c, i, &v);
        if (st == NR_STATUS_NEED_VALUE) continue; /* the kernel reads the input */
        if (st != NETRUN_OK) return st;
        /* Integer bounds only go into the float param when exact; else the kernel reads the input. */
        if (!(M_FLT & NETRUN_DTYPE_BIT(t)) && (double)(float)v != v) continue;
        if (i == 1) {
            p->has_min = 1;
            p->alpha = (float)v;
        } else {
            p->has_max = 1;
            p->beta = (float)v;
        }
    }
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, t, x->rank, x->dims);
    return NETRUN_OK;
}

/* PRelu: slope broadcasts to X (unidirectionally): the output has X's shape. */
static netrun_status infer_prelu(nr_layer_ctx *c, void *p) {
    TRY(need_inputs(c, 2, 2));
    TRY(nr_check_dtype(c, 0, M_NUM));
    TRY(nr_check_same_dtype(c, 0, 1));
    const netrun_value_desc *x = nr_in(c, 0), *s = nr_in(c, 1);
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    TRY(nr_broadcast_shapes(c, x->rank, x->dims, s->rank, s->dims, &rank, dims));
    int same = rank == x->rank;
    for (int i = 0; same && i < rank; i++) same = dims[i] == x->dims[i];
    if (!same) return nr_layer_error(c, "slope (rank %d) does not broadcast to X's shape (rank %d) unidirectionally",
                                     s->rank, x->rank);
    nr_out_set(c, 0, x->dtype, x->rank, x->dims);
    return NETRUN_OK;
}

/* Pow: base and exponent may have different dtypes (opset >= 12); the output has the base's. */
static netrun_status infer_pow(nr_layer_ctx *c, void *p) {
    TRY(need_inputs(c, 2, 2));
    TRY(nr_check_dtype(c, 0, M_POW_BASE));
    TRY(nr_check_dtype(c, 1, M_NUM));
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    TRY(broadcast_inputs(c, 0, 2, &rank, dims));
    nr_out_set(c, 0, nr_in(c, 0)->dtype, rank, dims);
    return NETRUN_OK;
}

static netrun_status infer_where(nr_layer_ctx *c, void *p) {
    TRY(need_inputs(c, 3, 3));
    TRY(nr_check_dtype(c, 0, M_BOOL));
    TRY(nr_check_same_dtype(c, 1, 2));
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    TRY(broadcast_inputs(c, 0, 3, &rank, dims));
    nr_out_set(c, 0, nr_in(c, 1)->dtype, rank, dims);
    return NETRUN_OK;
}

/* ---- Cast, CastLike ---- */
static int valid_dtype(int64_t t) {
    return t > NETRUN_DTYPE_UNDEFINED && t < NETRUN_DTYPE_COUNT_;
}

/* saturate (opset 19+) and round_mode (opset 24+, used when casting to float8e8m0). */
static netrun_status parse_saturate(nr_layer_ctx *c, netrun_cast_params *p) {
    const char *rm = "up";
    TRY(get_flag(c, "saturate", 1, &p->saturate));
    if (nr_opset(c) >= 24) TRY(nr_attr_string(c, "round_mode", "up", &rm));
    if (strcmp(rm, "up") == 0) p->round_mode = NETRUN_CAST_ROUND_UP;
    else if (strcmp(rm, "down") == 0) p->round_mode = NETRUN_CAST_ROUND_DOWN;
    else if (strcmp(rm, "nearest") == 0) p->round_mode = NETRUN_CAST_ROUND_NEAREST;
    else return nr_layer_error(c, "attribute round_mode = '%s' must be 'up', 'down' or 'nearest'", rm);
    return NETRUN_OK;
}

static netrun_status parse_cast(nr_layer_ctx *c, void *pv) {
    netrun_cast_params *p = pv;
    int64_t to;
    if (!nr_attr_has(c, "to")) return nr_layer_error(c, "attribute to is required");
    TRY(nr_attr_int(c, "to", 0, &to));
    if (!valid_dtype(to)) return nr_layer_error(c, "attribute to = %lld is not a known element type", (long long)to);
    p->to = (int)to;
    TRY(parse_saturate(c, p));
    int64_t finite = 0; /* netrun's border Casts of float16 regions (runtime/opt_half.c), not an ONNX attribute */
    TRY(nr_attr_int(c, "netrun.finite", 0, &finite));
    if (finite && p->to == NETRUN_DTYPE_FLOAT16) p->saturate = 2;
    return NETRUN_OK;
}

static netrun_status infer_cast(nr_layer_ctx *c, void *pv) {
    netrun_cast_params *p = pv;
    TRY(need_inputs(c, 1, 1));
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, (netrun_dtype)p->to, x->rank, x->dims);
    return NETRUN_OK;
}

static netrun_status parse_cast_like(nr_layer_ctx *c, void *pv) { return parse_saturate(c, pv); }

static netrun_status infer_cast_like(nr_layer_ctx *c, void *pv) {
    netrun_cast_params *p = pv;
    TRY(need_inputs(c, 2, 2));
    const netrun_value_desc *x = nr_in(c, 0);
    p->to = (int)nr_in(c, 1)->dtype;
    nr_out_set(c, 0, (netrun_dtype)p->to, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- the table ---- */
#define UP sizeof(netrun_unary_params)
#define U(name, opset, infer) {#name, "", opset, 0, NULL, infer, 0},
#define P(name, opset, parse, infer) {#name, "", opset, UP, parse, infer, 0},

const nr_layer nr_layers_elementwise[] = {
    /* unary, float only */
    U(Sigmoid, 1, infer_un_float) U(Tanh, 1, infer_un_float) U(Erf, 9, infer_un_float) U(Exp, 1, infer_un_float)
    U(Log, 1, infer_un_float) U(Sqrt, 1, infer_un_float) U(Reciprocal, 1, infer_un_float)
    U(Floor, 1, infer_un_float) U(Ceil, 1, infer_un_float) U(Round, 11, infer_un_float)
    U(Sin, 7, infer_un_float) U(Cos, 7, infer_un_float) U(Tan, 7, infer_un_float) U(Asin, 7, infer_un_float)
    U(Acos, 7, infer_un_float) U(Atan, 7, infer_un_float) U(Sinh, 9, infer_un_float) U(Cosh, 9, infer_un_float)
    U(Asinh, 9, infer_un_float) U(Acosh, 9, infer_un_float) U(Atanh, 9, infer_un_float)
    U(Softplus, 1, infer_un_float) U(Softsign, 1, infer_un_float) U(HardSwish, 14, infer_un_float)
    U(Mish, 18, infer_un_float)
    /* unary with constants */
    P(LeakyRelu, 1, parse_leaky_relu, infer_un_float) P(Elu, 1, parse_alpha_one, infer_un_float)
    P(Selu, 1, parse_selu, infer_un_float) P(Celu, 12, parse_celu, infer_un_float)
    P(HardSigmoid, 1, parse_hard_sigmoid, infer_un_float) P(ThresholdedRelu, 10, parse_alpha_one, infer_un_float)
    P(Gelu, 20, parse_gelu, infer_un_float) P(Shrink, 9, parse_shrink, infer_un_float)
    P(Clip, 1, parse_clip, infer_clip)
    /* unary on integers too */
    U(Relu, 1, infer_un_signed) U(Neg, 1, infer_un_signed) U(Abs, 1, infer_un_numeric) U(Sign, 9, infer_un_numeric)
    U(Not, 1, infer_un_bool) U(BitwiseNot, 18, infer_un_int) U(IsNaN, 9, infer_un_float_to_bool)
    P(IsInf, 10, parse_is_inf, infer_un_float_to_bool)
    /* binary, numpy broadcasting */
    U(Add, 7, infer_bin_numeric) U(Sub, 7, infer_bin_numeric) U(Mul, 7, infer_bin_numeric)
    U(Div, 7, infer_bin_numeric) P(Mod, 10, parse_mod, infer_mod) U(Pow, 7, infer_pow)
    U(Equal, 7, infer_cmp_equal) U(Greater, 7, infer_cmp_numeric) U(GreaterOrEqual, 12, infer_cmp_numeric)
    U(Less, 7, infer_cmp_numeric) U(LessOrEqual, 12, infer_cmp_numeric) U(And, 7, infer_logic)
    U(Or, 7, infer_logic) U(Xor, 7, infer_logic) P(BitShift, 11, parse_bitshift, infer_bin_int)
    U(BitwiseAnd, 18, infer_bin_int) U(BitwiseOr, 18, infer_bin_int) U(BitwiseXor, 18, infer_bin_int)
    U(PRelu, 6, infer_prelu)
    /* variadic */
    U(Max, 6, infer_var_numeric) U(Min, 6, infer_var_numeric) U(Sum, 6, infer_var_numeric)
    U(Mean, 6, infer_var_float)
    U(Where, 9, infer_where)
    {"Cast", "", 6, sizeof(netrun_cast_params), parse_cast, infer_cast, 0},
    {"CastLike", "", 15, sizeof(netrun_cast_params), parse_cast_like, infer_cast_like, 0},
    {0},
};
