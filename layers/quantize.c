/* Op family: quantize (definitions: attribute parsing, validation, shape inference).
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, MatMulInteger, QLinearConv,
 * ConvInteger, BitCast. */
#include <stdint.h>
#include <string.h>

#include "layer.h"
#include "netrun_ops.h"

#define TRY(x)                                   \
    do {                                         \
        netrun_status st_ = (x);                 \
        if (st_ != NETRUN_OK) return st_;        \
    } while (0)

#define DT(x) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##x)
#define F8_TYPES (DT(FLOAT8E4M3FN) | DT(FLOAT8E4M3FNUZ) | DT(FLOAT8E5M2) | DT(FLOAT8E5M2FNUZ))
#define SCALE_TYPES (DT(FLOAT) | DT(FLOAT16) | DT(BFLOAT16))
/* Scales may also be powers of two in float8e8m0 (opset 25, microscaling). */
#define SCALE_IN_TYPES (SCALE_TYPES | DT(FLOAT8E8M0))
/* Element types a quantized tensor may have. */
#define QUANT_TYPES (DT(UINT8) | DT(INT8) | DT(UINT16) | DT(INT16) | DT(UINT4) | DT(INT4) | DT(UINT2) | DT(INT2) | \
                     DT(FLOAT4E2M1) | F8_TYPES)
#define INT8_TYPES (DT(UINT8) | DT(INT8))

static int64_t numel(const netrun_value_desc *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->dims[i];
    return n;
}

static int in_mask(int64_t dtype, uint64_t mask) {
    return dtype > 0 && dtype < 64 && (mask & NETRUN_DTYPE_BIT(dtype));
}

static netrun_status need_inputs(const nr_layer_ctx *c, int lo, int hi) {
    int n = nr_in_count(c);
    if (n < lo || n > hi)
        return nr_layer_error(c, "expects %d to %d inputs, got %d", lo, hi, n);
    for (int i = 0; i < lo; i++)
        if (!nr_in_present(c, i)) return nr_layer_error(c, "input %d is required", i);
    return NETRUN_OK;
}

/* ---- QuantizeLinear, DequantizeLinear ---- */
static netrun_status q_parse_common(nr_layer_ctx *c, netrun_quantize_params *p, int quantize) {
    int64_t axis, block = 0, sat = 1, odt = 0, prec = 0;
    TRY(nr_attr_int(c, "axis", 1, &axis));
    if (axis < -NETRUN_MAX_RANK || axis >= NETRUN_MAX_RANK)
        return nr_layer_error(c, "attribute axis = %lld is out of range", (long long)axis);
    if (nr_opset(c) >= 21) TRY(nr_attr_int(c, "block_size", 0, &block));
    if (block < 0) return nr_layer_error(c, "attribute block_size = %lld must be >= 0", (long long)block);
    if (quantize && nr_opset(c) >= 19) TRY(nr_attr_int(c, "saturate", 1, &sat));
    if ((quantize && nr_opset(c) >= 21) || (!quantize && nr_opset(c) >= 23))
        TRY(nr_attr_int(c, "output_dtype", 0, &odt));
    if (quantize && nr_opset(c) >= 23) TRY(nr_attr_int(c, "precision", 0, &prec));
    if (odt < 0 || odt >= NETRUN_DTYPE_COUNT_)
        return nr_layer_error(c, "attribute output_dtype = %lld is not an element type netrun knows", (long long)odt);
    if (prec && !in_mask(prec, SCALE_TYPES))
        return nr_layer_error(c, "attribute precision = %lld must be float, float16 or bfloat16", (long long)prec);
    p->axis = (int)axis; /* resolved in infer */
    p->block_size = block;
    p->saturate = sat != 0;
    p->out_dtype = (int)odt; /* 0 = from the inputs, completed in infer */
    p->precision = (int)prec;
    return NETRUN_OK;
}

static netrun_status quantize_parse(nr_layer_ctx *c, void *pv) { return q_parse_common(c, pv, 1); }
static netrun_status dequantize_parse(nr_layer_ctx *c, void *pv) { return q_parse_common(c, pv, 0); }

/* Classify the granularity from the scale's shape; checks the zero point against it. The axis attribute is
 * read again (params hold the resolved axis of the previous infer); the resolved axis goes to *axis_out. */
static netrun_status q_granularity(nr_layer_ctx *c, const netrun_quantize_params *p, int *mode, int *axis_out) {
    const netrun_value_desc *x = nr_in(c, 0), *s = nr_in(c, 1);
    int64_t ns = numel(s), axis_attr;
    TRY(nr_attr_int(c, "axis", 1, &axis_attr));
    *axis_out = 0;
    if (p->block_size > 0) {
        int axis;
        if (x->rank < 1) return nr_layer_error(c, "blocked quantization needs x of rank >= 1");
        TRY(nr_resolve_axis(c, axis_attr, x->rank, 0, &axis));
        if (s->rank != x->rank)
            return nr_layer_error(c, "blocked quantization: scale has rank %d, x has rank %d; they must match",
                                  s->rank, x->rank);
        for (int i = 0; i < x->rank; i++) {
            int64_t d = x->dims[i]; /* ceil(d / block_size) without overflow (block_size may be 2^63 - 1) */
            int64_t want = i == axis ? (d ? (d - 1) / p->block_size + 1 : 0) : d;
            if (s->dims[i] != want)
                return nr_layer_error(c, "blocked quantization: scale dim %d is %lld, expected %lld (x dim %lld%s)",
                                      i, (long long)s->dims[i], (long long)want, (long long)x->dims[i],
                                      i == axis ? " split in blocks of block_size" : "");
        }
        *mode = NETRUN_QUANT_BLOCKED;
        *axis_out = axis;
    } else if (ns == 1) {
        *mode = NETRUN_QUANT_PER_TENSOR;
    } else if (s->rank == 1) {
        int axis;
        TRY(nr_resolve_axis(c, axis_attr, x->rank, 0, &axis));
        if (s->dims[0] != x->dims[axis])
            return nr_layer_error(c, "per-axis scale has %lld values but x dim %d (axis) is %lld",
                                  (long long)s->dims[0], axis, (long long)x->dims[axis]);
        *mode = NETRUN_QUANT_PER_AXIS;
        *axis_out = axis;
    } else {
        return nr_layer_error(c, "scale has rank %d: expected a scalar, a 1-D tensor (per axis) or block_size > 0",
                              s->rank);
    }
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
        const netrun_value_desc *z = nr_in(c, 2);
        int same = z->rank == s->rank && !memcmp(z->dims, s->dims, sizeof(int64_t) * (size_t)s->rank);
        if (!same && !(ns == 1 && numel(z) == 1))
            return nr_layer_error(c, "zero point must have the scale's shape");
    }
    return NETRUN_OK;
}

static netrun_status quantize_infer(nr_layer_ctx *c, void *pv) {
    netrun_quantize_params *p = pv;
    TRY(need_inputs(c, 2, 3));
    TRY(nr_check_dtype(c, 0, SCALE_TYPES | DT(INT32)));
    TRY(nr_check_dtype(c, 1, SCALE_IN_TYPES | DT(INT32)));
    netrun_dtype xt = nr_in(c, 0)->dtype, st = nr_in(c, 1)->dtype;
    int has_zp = nr_in_count(c) > 2 && nr_in_present(c, 2);
    int64_t odt_attr = 0, prec_attr = 0; /* read again: params hold the previous infer's results */
    if (nr_opset(c) >= 21) TRY(nr_attr_int(c, "output_dtype", 0, &odt_attr));
    if (nr_opset(c) >= 23) TRY(nr_attr_int(c, "precision", 0, &prec_attr));
    int odt = (int)odt_attr;
    if (has_zp) {
        netrun_dtype zt = nr_in(c, 2)->dtype;
        if (odt && odt != (int)zt)
            return nr_layer_error(c, "output_dtype %d differs from the zero point's type %d", odt, (int)zt);
        odt = (int)zt;
    }
    if (!odt) odt = NETRUN_DTYPE_UINT8;
    if (!in_mask(odt, QUANT_TYPES))
        return nr_layer_error(c, "output type %d is not a quantized type netrun supports (uint8, int8, uint16, "
                              "int16, uint4, int4, uint2, int2, float4e2m1, float8)", odt);
    int mode, axis;
    TRY(q_granularity(c, p, &mode, &axis));
    p->precision = (int)prec_attr;
    if (!p->precision) {
        /* The division runs in the wider of x's and scale's types (int32 needs double). */
        if (xt == NETRUN_DTYPE_INT32 || st == NETRUN_DTYPE_INT32) p->precision = NETRUN_DTYPE_DOUBLE;
        else if (xt == st) p->precision = (int)st;
        else p->precision = NETRUN_DTYPE_FLOAT;
    }
    p->mode = mode;
    p->axis = axis;
    p->out_dtype = odt;
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, (netrun_dtype)odt, x->rank, x->dims);
    return NETRUN_OK;
}

static netrun_status dequantize_infer(nr_layer_ctx *c, void *pv) {
    netrun_quantize_params *p = pv;
    TRY(need_inputs(c, 2, 3));
    TRY(nr_check_dtype(c, 0, QUANT_TYPES | DT(INT32)));
    TRY(nr_check_dtype(c, 1, SCALE_IN_TYPES));
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) TRY(nr_check_same_dtype(c, 0, 2));
    int64_t odt_attr = 0;
    if (nr_opset(c) >= 23) TRY(nr_attr_int(c, "output_dtype", 0, &odt_attr));
    int odt = odt_attr ? (int)odt_attr : (int)nr_in(c, 1)->dtype;
    if (!in_mask(odt, SCALE_TYPES))
        return nr_layer_error(c, "output_dtype %d must be float, float16 or bfloat16%s", odt,
                              odt_attr ? "" : " (set it when the scale is float8e8m0)");
    int mode, axis;
    TRY(q_granularity(c, p, &mode, &axis));
    p->mode = mode;
    p->axis = axis;
    p->out_dtype = odt;
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, (netrun_dtype)odt, x->rank, x->dims);
    return NETRUN_OK;
}

/* ---- DynamicQuantizeLinear: y (uint8), y_scale (float scalar), y_zero_point (uint8 scalar) ---- */
static netrun_status dynq_infer(nr_layer_ctx *c, void *pv) {
    (void)pv;
    TRY(need_inputs(c, 1, 1));
    TRY(nr_check_dtype(c, 0, DT(FLOAT)));
    const netrun_value_desc *x = nr_in(c, 0);
    nr_out_set(c, 0, NETRUN_DTYPE_UINT8, x->rank, x->dims);
    nr_out_set(c, 1, NETRUN_DTYPE_FLOAT, 0, NULL);
    nr_out_set(c, 2, NETRUN_DTYPE_UINT8, 0, NULL);
    return NETRUN_OK;
}

/* ---- QLinearMatMul, MatMulInteger ---- */
/* numpy.matmul output shape of a and b (1-D operands are promoted and the added dim dropped). */
static netrun_status matmul_shape(nr_layer_ctx *c, const netrun_value_desc *a, const netrun_value_desc *b,
                                  int *rank, int64_t *dims) {
    if (a->rank < 1 || b->rank < 1) return nr_layer_error(c, "matrix inputs must have rank >= 1");
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, ka = a->dims[a->rank - 1];
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0], n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (ka != kb)
        return nr_layer_error(c, "inner dims differ: A has K = %lld, B has K = %lld", (long long)ka, (long long)kb);
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0, r;
    int64_t bd[NETRUN_MAX_RANK];
    TRY(nr_broadcast_shapes(c, ra, a->dims, rb, b->dims, &r, bd));
    int out = 0;
    for (int i = 0; i < r; i++) dims[out++] = bd[i];
    if (a->rank >= 2) dims[out++] = m;
    if (b->rank >= 2) dims[out++] = n;
    if (out > NETRUN_MAX_RANK) return nr_layer_error(c, "output rank %d exceeds %d", out, NETRUN_MAX_RANK);
    *rank = out;
    return NETRUN_OK;
}

/* A scale/zero point of a QLinearMatMul operand: one value, a 1-D vector of `vec_len` values (per row of A /
 * per column of B), or an N-D tensor that broadcasts to the operand with size 1 along K (`k_dim` from the
 * end: 1 for A, 2 for B). */
static netrun_status check_mm_qparam(nr_layer_ctx *c, int i, const netrun_value_desc *op, int k_dim,
                                     int64_t vec_len, const char *what) {
    const netrun_value_desc *s = nr_in(c, i);
    if (numel(s) == 1 && s->rank <= 1) return NETRUN_OK;
    if (s->rank == 1) {
        if (s->dims[0] != vec_len)
            return nr_layer_error(c, "%s has %lld values; expected 1 or %lld", what, (long long)s->dims[0],
                                  (long long)vec_len);
        return NETRUN_OK;
    }
    if (op->rank < 2 || s->rank > op->rank)
        return nr_layer_error(c, "%s of rank %d does not fit its operand of rank %d", what, s->rank, op->rank);
    for (int j = 1; j <= s->rank; j++) {
        int64_t sd = s->dims[s->rank - j], od = op->dims[op->rank - j];
        if (j == k_dim ? sd != 1 : (sd != 1 && sd != od))
            return nr_layer_error(c, "%s dim %d (%lld) does not broadcast to its operand%s", what, s->rank - j,
                                  (long long)sd, j == k_dim ? " (it must be 1 along K)" : "");
    }
    return NETRUN_OK;
}

static netrun_status qlmm_infer(nr_layer_ctx *c, void *pv) {
    (void)pv;
    TRY(need_inputs(c, 8, 8));
    TRY(nr_check_dtype(c, 0, INT8_TYPES));
    TRY(nr_check_dtype(c, 3, INT8_TYPES));
    TRY(nr_check_dtype(c, 7, INT8_TYPES));
    TRY(nr_check_dtype(c, 1, SCALE_TYPES));
    TRY(nr_check_same_dtype(c, 1, 4));
    TRY(nr_check_same_dtype(c, 1, 6));
    TRY(nr_check_same_dtype(c, 0, 2));
    TRY(nr_check_same_dtype(c, 3, 5));
    const netrun_value_desc *a = nr_in(c, 0), *b = nr_in(c, 3);
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    TRY(matmul_shape(c, a, b, &rank, dims));
    if (a->rank < 2 || b->rank < 2)
        return nr_layer_error(c, "QLinearMatMul on the CPU needs A and B of rank >= 2");
    int64_t m = a->dims[a->rank - 2], n = b->dims[b->rank - 1];
    TRY(check_mm_qparam(c, 1, a, 1, m, "a_scale"));
    TRY(check_mm_qparam(c, 2, a, 1, m, "a_zero_point"));
    TRY(check_mm_qparam(c, 4, b, 2, n, "b_scale"));
    TRY(check_mm_qparam(c, 5, b, 2, n, "b_zero_point"));
    if (numel(nr_in(c, 6)) != 1 || numel(nr_in(c, 7)) != 1)
        return nr_layer_error(c, "y_scale and y_zero_point must have one value each");
    nr_out_set(c, 0, nr_in(c, 7)->dtype, rank, dims);
    return NETRUN_OK;
}

static netrun_status mmi_infer(nr_layer_ctx *c, void *pv) {
    (void)pv;
    TRY(need_inputs(c, 2, 4));
    TRY(nr_check_dtype(c, 0, INT8_TYPES));
    TRY(nr_check_dtype(c, 1, INT8_TYPES));
    const netrun_value_desc *a = nr_in(c, 0), *b = nr_in(c, 1);
    int rank;
    int64_t dims[NETRUN_MAX_RANK];
    TRY(matmul_shape(c, a, b, &rank, dims));
    if (a->rank < 2 || b->rank < 2)
        return nr_layer_error(c, "MatMulInteger on the CPU needs A and B of rank >= 2");
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
        TRY(nr_check_same_dtype(c, 0, 2));
        TRY(check_mm_qparam(c, 2, a, 1, a->dims[a->rank - 2], "a_zero_point"));
    }
    if (nr_in_count(c) > 3 && nr_in_present(c, 3)) {
        TRY(nr_check_same_dtype(c, 1, 3));
        TRY(check_mm_qparam(c, 3, b, 2, b->dims[b->rank - 1], "b_zero_point"));
    }
    nr_out_set(c, 0, NETRUN_DTYPE_INT32, rank, dims);
    return NETRUN_OK;
}

/* ---- QLinearConv, ConvInteger (netrun_conv_params) ---- */
static netrun_status ints_attr(const nr_layer_ctx *c, const char *name, int ns, int64_t min, int64_t def,
                               int64_t *out, int count_mult) {
    const int64_t *v;
    int64_t n;
    TRY(nr_attr_ints(c, name, &v, &n));
    for (int i = 0; i < ns * count_mult; i++) out[i] = def;
    if (!n) return NETRUN_OK;
    if (n != (int64_t)ns * count_mult)
        return nr_layer_error(c, "attribute %s has %lld values; expected %d", name, (long long)n, ns * count_mult);
    for (int64_t i = 0; i < n; i++) { /* bounded above too, so that the shape arithmetic stays in int64 */
        if (v[i] < min || v[i] > INT32_MAX)
            return nr_layer_error(c, "attribute %s[%lld] = %lld must be from %lld to %d (too large otherwise)", name,
                                  (long long)i, (long long)v[i], (long long)min, INT32_MAX);
        out[i] = v[i];
    }
    return NETRUN_OK;
}

/* x, w: the data and weight inputs; fills p completely (attributes are read again on every infer). */
static netrun_status qconv_common(nr_layer_ctx *c, netrun_conv_params *p, int xi, int wi, int64_t *out_dims) {
    const netrun_value_desc *x = nr_in(c, xi), *w = nr_in(c, wi);
    if (x->rank < 3 || x->rank > 2 + NETRUN_MAX_SPATIAL)
        return nr_layer_error(c, "input x has rank %d; expected [N, C, spatial...] with 1 to %d spatial dims",
                              x->rank, NETRUN_MAX_SPATIAL);
    if (w->rank != x->rank)
        return nr_layer_error(c, "weight w has rank %d but x has rank %d; they must match", w->rank, x->rank);
    int ns = x->rank - 2;
    int64_t group, kshape[NETRUN_MAX_SPATIAL], pads[2 * NETRUN_MAX_SPATIAL];
    int src_nhwc = p->src_nhwc, dst_nhwc = p->dst_nhwc; /* the layout the QDQ pass chose (runtime/qdq_fuse.c) */
    memset(p, 0, sizeof *p);
    p->src_nhwc = src_nhwc;
    p->dst_nhwc = dst_nhwc;
    p->n_spatial = ns;
    TRY(nr_attr_int(c, "group", 1, &group));
    if (group < 1) return nr_layer_error(c, "group = %lld must be >= 1", (long long)group);
    p->group = group;
    TRY(ints_attr(c, "kernel_shape", ns, 1, 0, kshape, 1));
    TRY(ints_attr(c, "strides", ns, 1, 1, p->strides, 1));
    TRY(ints_attr(c, "dilations", ns, 1, 1, p->dilations, 1));
    TRY(ints_attr(c, "pads", ns, 0, 0, pads, 2));
    const char *ap;
    TRY(nr_attr_string(c, "auto_pad", "NOTSET", &ap));
    int same_upper = !strcmp(ap, "SAME_UPPER"), same_lower = !strcmp(ap, "SAME_LOWER"), valid = !strcmp(ap, "VALID");
    if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET"))
        return nr_layer_error(c, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    if (x->dims[1] != w->dims[1] * group)
        return nr_layer_error(c, "x has %lld channels but w expects %lld (w dim 1 = %lld x group %lld)",
                              (long long)x->dims[1], (long long)(w->dims[1] * group), (long long)w->dims[1],
                              (long long)group);
    if (w->dims[0] % group)
        return nr_layer_error(c, "w has %lld output channels, not a multiple of group %lld", (long long)w->dims[0],
                              (long long)group);
    out_dims[0] = x->dims[0];
    out_dims[1] = w->dims[0];
    for (int i = 0; i < ns; i++) {
        int64_t k = w->dims[2 + i], in = x->dims[2 + i], s = p->strides[i];
        if (k < 1) return nr_layer_error(c, "w has an empty kernel dim %d", 2 + i);
        if (kshape[i] && kshape[i] != k)
            return nr_layer_error(c, "kernel_shape[%d] = %lld does not match w's dim %d (%lld)", i,
                                  (long long)kshape[i], 2 + i, (long long)k);
        p->kernel[i] = k;
        int64_t dk = (k - 1) * p->dilations[i] + 1;
        if (same_upper || same_lower) {
            int64_t target = (in + s - 1) / s, need = (target - 1) * s + dk - in;
            if (need < 0) need = 0;
            p->pads_begin[i] = same_lower ? (need + 1) / 2 : need / 2;
            p->pads_end[i] = need - p->pads_begin[i];
        } else if (!valid) {
            p->pads_begin[i] = pads[i];
            p->pads_end[i] = pads[ns + i];
        }
        int64_t span = in + p->pads_begin[i] + p->pads_end[i] - dk;
        if (span < 0)
            return nr_layer_error(c, "spatial dim %d: input %lld plus pads is smaller than the dilated kernel %lld",
                                  i, (long long)in, (long long)dk);
        out_dims[2 + i] = span / s + 1;
    }
    for (int i = ns; i < NETRUN_MAX_SPATIAL; i++) p->kernel[i] = p->strides[i] = p->dilations[i] = 1;
    return NETRUN_OK;
}

/* A per-tensor (one value) or per-output-channel (1-D of m values) quantization parameter. */
static netrun_status check_tensor_or_channel(nr_layer_ctx *c, int i, int64_t m, int allow_channel, const char *what) {
    const netrun_value_desc *v = nr_in(c, i);
    if (numel(v) == 1 && v->rank <= 1) return NETRUN_OK;
    if (allow_channel && v->rank == 1 && v->dims[0] == m) return NETRUN_OK;
    if (allow_channel)
        return nr_layer_error(c, "%s must be a scalar or have one value per output channel (%lld)", what,
                              (long long)m);
    return nr_layer_error(c, "%s must be a scalar", what);
}

/* The residual form the QDQ pass writes (runtime/qdq_fuse.c; attribute netrun.qdq_residual = 1, has_sum):
 * inputs 9 to 13 are Z, z_scale, z_zero_point, sum_scale, sum_zero_point, and the output is
 * saturate(round((q - y_zero_point) * y_scale / sum_scale + (Z - z_zero_point) * z_scale / sum_scale) +
 * sum_zero_point) in sum_zero_point's type, q the QLinearConv's own output (saturated in y_zero_point's type):
 * DQ(q), DQ(Z) -> Add -> Q(sum_scale, sum_zero_point) in one node. Input 8 (B) may be absent. */
#define QLCONV_RESIDUAL "netrun.qdq_residual"

static netrun_status qlconv_infer(nr_layer_ctx *c, void *pv) {
    netrun_conv_params *p = pv;
    int residual = nr_attr_has(c, QLCONV_RESIDUAL);
    TRY(need_inputs(c, residual ? 14 : 8, residual ? 14 : 9));
    TRY(nr_check_dtype(c, 0, INT8_TYPES));
    TRY(nr_check_dtype(c, 3, INT8_TYPES));
    TRY(nr_check_dtype(c, 7, INT8_TYPES));
    TRY(nr_check_same_dtype(c, 0, 2));
    TRY(nr_check_same_dtype(c, 3, 5));
    TRY(nr_check_dtype(c, 1, DT(FLOAT)));
    TRY(nr_check_dtype(c, 4, DT(FLOAT)));
    TRY(nr_check_dtype(c, 6, DT(FLOAT)));
    int64_t dims[NETRUN_MAX_RANK];
    TRY(qconv_common(c, p, 0, 3, dims));
    int64_t m = nr_in(c, 3)->dims[0];
    TRY(check_tensor_or_channel(c, 1, m, 0, "x_scale"));
    TRY(check_tensor_or_channel(c, 2, m, 0, "x_zero_point"));
    TRY(check_tensor_or_channel(c, 4, m, 1, "w_scale"));
    TRY(check_tensor_or_channel(c, 5, m, 1, "w_zero_point"));
    TRY(check_tensor_or_channel(c, 6, m, 0, "y_scale"));
    TRY(check_tensor_or_channel(c, 7, m, 0, "y_zero_point"));
    p->has_bias = nr_in_count(c) > 8 && nr_in_present(c, 8);
    if (p->has_bias) {
        const netrun_value_desc *b = nr_in(c, 8);
        TRY(nr_check_dtype(c, 8, DT(INT32)));
        if (b->rank != 1 || b->dims[0] != m)
            return nr_layer_error(c, "bias B must be 1-D with %lld values (output channels)", (long long)m);
    }
    p->has_sum = residual;
    if (residual) {
        const netrun_value_desc *z = nr_in(c, 9);
        TRY(nr_check_dtype(c, 9, INT8_TYPES));
        TRY(nr_check_same_dtype(c, 9, 11));
        TRY(nr_check_dtype(c, 13, INT8_TYPES));
        TRY(nr_check_dtype(c, 10, DT(FLOAT)));
        TRY(nr_check_dtype(c, 12, DT(FLOAT)));
        TRY(check_tensor_or_channel(c, 10, m, 0, "z_scale"));
        TRY(check_tensor_or_channel(c, 11, m, 0, "z_zero_point"));
        TRY(check_tensor_or_channel(c, 12, m, 0, "sum_scale"));
        TRY(check_tensor_or_channel(c, 13, m, 0, "sum_zero_point"));
        if (z->rank != nr_in(c, 0)->rank || memcmp(z->dims, dims, sizeof(int64_t) * (size_t)z->rank))
            return nr_layer_error(c, "the residual input Z must have the output's shape");
    }
    nr_out_set(c, 0, nr_in(c, residual ? 13 : 7)->dtype, nr_in(c, 0)->rank, dims);
    return NETRUN_OK;
}

static netrun_status convi_infer(nr_layer_ctx *c, void *pv) {
    netrun_conv_params *p = pv;
    TRY(need_inputs(c, 2, 4));
    TRY(nr_check_dtype(c, 0, INT8_TYPES));
    TRY(nr_check_dtype(c, 1, INT8_TYPES));
    int64_t dims[NETRUN_MAX_RANK];
    TRY(qconv_common(c, p, 0, 1, dims));
    int64_t m = nr_in(c, 1)->dims[0];
    if (nr_in_count(c) > 2 && nr_in_present(c, 2)) {
        TRY(nr_check_same_dtype(c, 0, 2));
        TRY(check_tensor_or_channel(c, 2, m, 0, "x_zero_point"));
    }
    if (nr_in_count(c) > 3 && nr_in_present(c, 3)) {
        TRY(nr_check_same_dtype(c, 1, 3));
        TRY(check_tensor_or_channel(c, 3, m, 1, "w_zero_point"));
    }
    nr_out_set(c, 0, NETRUN_DTYPE_INT32, nr_in(c, 0)->rank, dims);
    return NETRUN_OK;
}

/* ---- BitCast (netrun_cast_params.to) ---- */
static netrun_status bitcast_parse(nr_layer_ctx *c, void *pv) {
    netrun_cast_params *p = pv;
    int64_t to;
    if (!nr_attr_has(c, "to")) return nr_layer_error(c, "attribute to is required");
    TRY(nr_attr_int(c, "to", 0, &to));
    if (to <= NETRUN_DTYPE_UNDEFINED || to >= NETRUN_DTYPE_COUNT_ || to == NETRUN_DTYPE_STRING)
        return nr_layer_error(c, "attribute to = %lld is not a non-string element type netrun knows", (long long)to);
    p->to = (int)to;
    return NETRUN_OK;
}

/* Bits per element (int4/uint4 are stored one per byte but are 4 bits wide). */
static int dtype_bits(netrun_dtype t) {
    if (t == NETRUN_DTYPE_INT4 || t == NETRUN_DTYPE_UINT4) return 4;
    return (int)netrun_dtype_size(t) * 8;
}

static netrun_status bitcast_infer(nr_layer_ctx *c, void *pv) {
    netrun_cast_params *p = pv;
    TRY(need_inputs(c, 1, 1));
    const netrun_value_desc *x = nr_in(c, 0);
    if (x->dtype == NETRUN_DTYPE_STRING) return nr_layer_error(c, "BitCast of strings is not defined");
    int bx = dtype_bits(x->dtype), by = dtype_bits((netrun_dtype)p->to);
    if (!bx || bx != by)
        return nr_layer_error(c, "input type %d has %d bits but type %d has %d; BitCast needs the same width",
                              (int)x->dtype, bx, p->to, by);
    nr_out_set(c, 0, (netrun_dtype)p->to, x->rank, x->dims);
    return NETRUN_OK;
}

#define QP sizeof(netrun_quantize_params)
#define CP sizeof(netrun_conv_params)
const nr_layer nr_layers_quantize[] = {
    {"QuantizeLinear", "", 10, QP, quantize_parse, quantize_infer, 0},
    {"DequantizeLinear", "", 10, QP, dequantize_parse, dequantize_infer, 0},
    {"DynamicQuantizeLinear", "", 11, 0, NULL, dynq_infer, 0},
    {"QLinearMatMul", "", 10, 0, NULL, qlmm_infer, 0},
    {"MatMulInteger", "", 10, 0, NULL, mmi_infer, 0},
    {"QLinearConv", "", 10, CP, NULL, qlconv_infer, 0},
    {"ConvInteger", "", 10, CP, NULL, convi_infer, 0},
    {"BitCast", "", 26, sizeof(netrun_cast_params), bitcast_parse, bitcast_infer, 0},
    {0},
};
