/* CPU kernels: quantize family. QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
 * MatMulInteger, QLinearConv, ConvInteger, BitCast. Integer products accumulate in int32 (wrapping, as the
 * spec allows); requantization follows the ONNX reference: multiplier in the scales' type, product in
 * double, round half to even, saturate. */
#include <float.h>
#include <stdio.h>

#include "cpu_internal.h"
#include "qlinear_int8.h"

#define DT(x) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##x)
#define F8_MASK (DT(FLOAT8E4M3FN) | DT(FLOAT8E4M3FNUZ) | DT(FLOAT8E5M2) | DT(FLOAT8E5M2FNUZ))
#define INT8_MASK (DT(UINT8) | DT(INT8))
#define GRAIN 4096

static int is_f8(netrun_dtype t) { return (F8_MASK >> t) & 1; }

/* Integer element of an 8-bit (or 4-bit, unpacked) quantized tensor. */
static inline int32_t ld_q8(const void *p, netrun_dtype t, int64_t i) {
    return t == NETRUN_DTYPE_INT8 || t == NETRUN_DTYPE_INT4 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

static void st_float(void *p, netrun_dtype t, int64_t i, float v) {
    switch (t) {
    case NETRUN_DTYPE_FLOAT: ((float *)p)[i] = v; break;
    case NETRUN_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_float_to_half(v); break;
    case NETRUN_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_float_to_bf16(v); break;
    default: break;
    }
}

/* ---- QuantizeLinear, DequantizeLinear ---- */
typedef struct q_job {
    const netrun_quantize_params *p;
    const netrun_tensor *x, *s, *z; /* z NULL when absent */
    netrun_tensor *y;
    int64_t inner, dim, blocks;      /* x as [outer, dim, inner]; blocks = scale's size along the axis */
    int quantize;
} q_job;

static inline int64_t q_param_index(const q_job *j, int64_t e) {
    return nr_quant_param_index(j->p->mode, e, j->inner, j->dim, j->blocks, j->p->block_size);
}

static void q_range(void *arg, int64_t b, int64_t e) {
    const q_job *j = arg;
    const netrun_quantize_params *p = j->p;
    netrun_dtype yt = j->y->dtype, xt = j->x->dtype, prec = (netrun_dtype)p->precision;
    double lo = 0, hi = 0;
    int integer = nr_int_range(yt, &lo, &hi);
    for (int64_t i = b; i < e; i++) {
        int64_t k = q_param_index(j, i);
        double s = nr_load_as_double(j->s->data, j->s->dtype, k), x = nr_load_as_double(j->x->data, xt, i);
        double zp = j->z ? nr_load_as_double(j->z->data, j->z->dtype, k) : 0;
        /* x / scale in the precision type (float division is exact enough to round once more to half) */
        double q = prec == NETRUN_DTYPE_DOUBLE ? x / s
                                               : nr_round_to((float)nr_round_to(x, prec) / (float)nr_round_to(s, prec), prec);
        if (integer) nr_store_qint(j->y->data, yt, i, nr_sat_round(nearbyint(q) + zp, lo, hi));
        else if (yt == NETRUN_DTYPE_FLOAT4E2M1) ((uint8_t *)j->y->data)[i] = nr_float_to_f4((float)(q + zp));
        else ((uint8_t *)j->y->data)[i] = nr_float_to_f8((float)(q + zp), yt, p->saturate);
    }
}

static void dq_range(void *arg, int64_t b, int64_t e) {
    const q_job *j = arg;
    netrun_dtype yt = j->y->dtype, xt = j->x->dtype;
    for (int64_t i = b; i < e; i++) {
        int64_t k = q_param_index(j, i);
        /* float8 and float4e2m1 zero points are ignored (the reference requires float8 ones to be 0) */
        int float_q = is_f8(xt) || xt == NETRUN_DTYPE_FLOAT4E2M1;
        float x = (float)nr_load_as_double(j->x->data, xt, i), zp = j->z && !float_q ? (float)nr_load_as_double(j->z->data, j->z->dtype, k) : 0.0f;
        float s = (float)nr_load_as_double(j->s->data, j->s->dtype, k);
        st_float(j->y->data, yt, i, (x - zp) * s);
    }
}

/* Per-tensor float32 <-> (u)int8 (QDQ models: every activation), vectorized in slices over the pool. */
typedef struct qv_job {
    const q_job *j;
    float scale;
    int32_t zp;
    int quantize, s8;
} qv_job;

static void qv_range(void *arg, int64_t b, int64_t e) {
    const qv_job *v = arg;
    int64_t o = b * 4096, n = (e - b) * 4096, total = cpu_count(v->j->x);
    if (o + n > total) n = total - o;
    if (v->quantize) cpu_quantize_f32_8((const float *)v->j->x->data + o, (int8_t *)v->j->y->data + o, n, v->scale, v->zp, v->s8);
    else cpu_dequantize_8_f32((const int8_t *)v->j->x->data + o, (float *)v->j->y->data + o, n, v->scale, v->zp, v->s8);
}

static int fast_per_tensor(cpu_context *ctx, const q_job *j, int quantize, int64_t n) {
    netrun_dtype q8 = quantize ? j->y->dtype : j->x->dtype, f = quantize ? j->x->dtype : j->y->dtype;
    if (j->p->mode != NETRUN_QUANT_PER_TENSOR || f != NETRUN_DTYPE_FLOAT || j->s->dtype != NETRUN_DTYPE_FLOAT ||
        (q8 != NETRUN_DTYPE_UINT8 && q8 != NETRUN_DTYPE_INT8) || (j->z && j->z->dtype != q8) || n < 1)
        return 0;
    if (quantize && j->p->precision && j->p->precision != NETRUN_DTYPE_FLOAT) return 0;
    qv_job v = {j, *(const float *)j->s->data, j->z ? (int32_t)ld_q8(j->z->data, q8, 0) : 0, quantize,
                q8 == NETRUN_DTYPE_INT8};
    if (quantize ? !cpu_quantize_f32_8(NULL, NULL, 0, 1.0f, 0, 0) : !cpu_dequantize_8_f32(NULL, NULL, 0, 1.0f, 0, 0))
        return 0; /* no AVX-512 here */
    int64_t chunks = (n + 4095) / 4096;
    if (chunks >= 4) cpu_parallel_for(ctx, chunks, 2, qv_range, &v);
    else qv_range(&v, 0, chunks);
    return 1;
}

static netrun_status q_run_common(cpu_context *ctx, const netrun_kernel_args *args, int quantize) {
    const netrun_quantize_params *p = args->params;
    const netrun_tensor *x = &args->inputs[0];
    if (!p) return cpu_host->error(NETRUN_ERR_INTERNAL, "%s: params missing", quantize ? "QuantizeLinear" : "DequantizeLinear");
    q_job j = {p, x, &args->inputs[1], args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL,
               &args->outputs[0], 1, 1, 1, quantize};
    if (p->mode != NETRUN_QUANT_PER_TENSOR) {
        if (p->axis < 0 || p->axis >= x->rank)
            return cpu_host->error(NETRUN_ERR_INTERNAL, "quantize: axis %d out of range", p->axis);
        j.dim = x->dims[p->axis];
        for (int i = p->axis + 1; i < x->rank; i++) j.inner *= x->dims[i];
        j.blocks = p->mode == NETRUN_QUANT_BLOCKED ? j.s->dims[p->axis] : j.dim;
        if (p->mode == NETRUN_QUANT_BLOCKED && p->block_size <= 0)
            return cpu_host->error(NETRUN_ERR_INTERNAL, "quantize: block_size %lld", (long long)p->block_size);
    }
    int64_t n = cpu_count(x);
    if (fast_per_tensor(ctx, &j, quantize, n)) return NETRUN_OK;
    cpu_range_fn fn = quantize ? q_range : dq_range;
    if (n >= 2 * GRAIN) cpu_parallel_for(ctx, n, GRAIN, fn, &j);
    else fn(&j, 0, n);
    return NETRUN_OK;
}

static netrun_status quantize_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return q_run_common(ctx, args, 1);
}

static netrun_status dequantize_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return q_run_common(ctx, args, 0);
}

/* ---- DynamicQuantizeLinear (uint8, as the ONNX function body computes it in float32) ---- */
typedef struct dq8_job {
    const float *x;
    uint8_t *y;
    float scale, zp;
} dq8_job;

static void dynq_range(void *arg, int64_t b, int64_t e) {
    const dq8_job *j = arg;
    for (int64_t i = b; i < e; i++) j->y[i] = (uint8_t)nr_sat_round(nearbyintf(j->x[i] / j->scale) + j->zp, 0, 255);
}

static netrun_status dynq_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *x = &args->inputs[0];
    int64_t n = cpu_count(x);
    const float *xd = x->data;
    float mx = 0.0f, mn = 0.0f; /* the range always includes 0 */
    for (int64_t i = 0; i < n; i++) {
        if (xd[i] > mx) mx = xd[i];
        if (xd[i] < mn) mn = xd[i];
    }
    /* A constant-zero input gets scale 1 (onnxruntime; the Python reference divides that 1 by 255 too). */
    float scale = mx == mn ? 1.0f : (mx - mn) / 255.0f;
    float izp = 0.0f - mn / scale;
    float zp = nearbyintf(izp < 0.0f ? 0.0f : izp > 255.0f ? 255.0f : izp);
    dq8_job j = {xd, args->outputs[0].data, scale, zp};
    if (n >= 2 * GRAIN) cpu_parallel_for(ctx, n, GRAIN, dynq_range, &j);
    else dynq_range(&j, 0, n);
    *(float *)args->outputs[1].data = scale;
    *(uint8_t *)args->outputs[2].data = (uint8_t)zp;
    return NETRUN_OK;
}

/* ---- QLinearMatMul, MatMulInteger ---- */
/* Dims of a scale / zero point as it broadcasts against its operand: one value -> rank 0; a 1-D vector ->
 * per row of A ([M, 1]) or per column of B ([N]); else its own dims. */
static int qparam_view(const netrun_tensor *v, int per_row, int64_t *dims) {
    if (cpu_count(v) == 1 && v->rank <= 1) return 0;
    if (v->rank == 1 && per_row) {
        dims[0] = v->dims[0];
        dims[1] = 1;
        return 2;
    }
    for (int i = 0; i < v->rank; i++) dims[i] = v->dims[i];
    return v->rank;
}

/* out[i] = t[i] - zp[broadcast i] as int32, in t's layout; with `transpose` the last two dims are swapped
 * (B stored [..., N, K] so that dot products run over contiguous memory). */
static void widen_sub(const netrun_tensor *t, const netrun_tensor *zp, int per_row, int transpose, int32_t *out) {
    int64_t zd[NETRUN_MAX_RANK], zs[NETRUN_MAX_RANK] = {0}, idx[NETRUN_MAX_RANK] = {0};
    int zr = zp ? qparam_view(zp, per_row, zd) : 0;
    if (zp && zr) cpu_broadcast_strides(zr, zd, t->rank, t->dims, zs);
    int r = t->rank;
    int64_t n = cpu_count(t), rows = r >= 2 ? t->dims[r - 2] : 1, cols = t->dims[r - 1];
    int64_t zoff = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t z = zp ? ld_q8(zp->data, zp->dtype, zr ? zoff : 0) : 0;
        int64_t o = i;
        if (transpose) {
            int64_t mat = rows * cols, base = i / mat * mat, rr = idx[r - 2], cc = idx[r - 1];
            o = base + cc * rows + rr;
        }
        out[o] = ld_q8(t->data, t->dtype, i) - z;
        for (int d = r - 1; d >= 0; d--) { /* odometer over t's dims, keeping the zero point's offset */
            zoff += zs[d];
            if (++idx[d] < t->dims[d]) break;
            zoff -= zs[d] * t->dims[d];
            idx[d] = 0;
        }
    }
}

typedef struct mm_job {
    const netrun_kernel_args *args;
    int qlinear;
    const int32_t *a32, *bt32;      /* A - a_zp (A's layout), B - b_zp transposed to [..., N, K] */
    int nb;                         /* output batch dims */
    int64_t bdims[NETRUN_MAX_RANK];
    int64_t M, K, N;
    int64_t sa[NETRUN_MAX_RANK], sb[NETRUN_MAX_RANK];   /* A / B strides against batch + [M, K] / [K, N] */
    int64_t ssa[NETRUN_MAX_RANK], ssb[NETRUN_MAX_RANK]; /* a_scale / b_scale strides, same shapes */
    int has_sa, has_sb;
    double ys, yzp, lo, hi;
} mm_job;

static void mm_rows(void *arg, int64_t r0, int64_t r1) {
    const mm_job *j = arg;
    const netrun_kernel_args *args = j->args;
    netrun_tensor *y = &args->outputs[0];
    const netrun_tensor *as = j->qlinear ? &args->inputs[1] : NULL, *bs = j->qlinear ? &args->inputs[4] : NULL;
    netrun_dtype st = as ? as->dtype : NETRUN_DTYPE_FLOAT;
    int nb = j->nb;
    for (int64_t r = r0; r < r1; r++) {
        int64_t bi = r / j->M, m = r % j->M, aoff = 0, boff = 0, saoff = 0, sboff = 0, rem = bi;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t id = rem % j->bdims[d];
            rem /= j->bdims[d];
            aoff += id * j->sa[d];
            boff += id * j->sb[d];
            saoff += id * j->ssa[d];
            sboff += id * j->ssb[d];
        }
        aoff += m * j->sa[nb];
        saoff += m * j->ssa[nb];
        const int32_t *arow = j->a32 + aoff;
        double sa = as ? nr_load_as_double(as->data, as->dtype, j->has_sa ? saoff : 0) : 0;
        for (int64_t n = 0; n < j->N; n++) {
            const int32_t *bcol = j->bt32 + boff + n * j->K;
            int64_t acc = 0;
            for (int64_t k = 0; k < j->K; k++) acc += (int64_t)arow[k] * bcol[k];
            int32_t acc32 = (int32_t)(uint32_t)(uint64_t)acc; /* int32 accumulation wraps */
            int64_t o = r * j->N + n;
            if (!j->qlinear) {
                ((int32_t *)y->data)[o] = acc32;
                continue;
            }
            double sb = nr_load_as_double(bs->data, bs->dtype, j->has_sb ? sboff + n * j->ssb[nb + 1] : 0);
            double mult = nr_round_to(nr_round_to(sa * sb, st) / j->ys, st);
            nr_store_qint(y->data, y->dtype, o, nr_sat_round((double)acc32 * mult + j->yzp, j->lo, j->hi));
        }
    }
}

static netrun_status mm_common(cpu_context *ctx, const netrun_kernel_args *args, int qlinear) {
    const char *op = qlinear ? "QLinearMatMul" : "MatMulInteger";
    int ia = 0, ib = qlinear ? 3 : 1, iaz = 2, ibz = qlinear ? 5 : 3;
    const netrun_tensor *a = &args->inputs[ia], *b = &args->inputs[ib], *y = &args->outputs[0];
    const netrun_tensor *az = args->n_inputs > iaz && args->inputs[iaz].rank >= 0 ? &args->inputs[iaz] : NULL;
    const netrun_tensor *bz = args->n_inputs > ibz && args->inputs[ibz].rank >= 0 ? &args->inputs[ibz] : NULL;
    if (a->rank < 2 || b->rank < 2 || y->rank < 2)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu %s: A and B need rank >= 2", op);
    mm_job j;
    memset(&j, 0, sizeof j);
    j.args = args;
    j.qlinear = qlinear;
    j.nb = y->rank - 2;
    j.M = a->dims[a->rank - 2];
    j.K = a->dims[a->rank - 1];
    j.N = b->dims[b->rank - 1];
    int64_t batch = 1;
    for (int d = 0; d < j.nb; d++) batch *= (j.bdims[d] = y->dims[d]);
    int64_t full_a[NETRUN_MAX_RANK], full_b[NETRUN_MAX_RANK], vd[NETRUN_MAX_RANK];
    memcpy(full_a, y->dims, sizeof(int64_t) * (size_t)j.nb);
    memcpy(full_b, y->dims, sizeof(int64_t) * (size_t)j.nb);
    full_a[j.nb] = j.M, full_a[j.nb + 1] = j.K;
    full_b[j.nb] = j.K, full_b[j.nb + 1] = j.N;
    cpu_broadcast_strides(a->rank, a->dims, y->rank, full_a, j.sa);
    cpu_broadcast_strides(b->rank, b->dims, y->rank, full_b, j.sb);
    if (qlinear) {
        int r = qparam_view(&args->inputs[1], 1, vd);
        j.has_sa = r > 0;
        if (r) cpu_broadcast_strides(r, vd, y->rank, full_a, j.ssa);
        r = qparam_view(&args->inputs[4], 0, vd);
        j.has_sb = r > 0;
        if (r) cpu_broadcast_strides(r, vd, y->rank, full_b, j.ssb);
        j.ys = nr_load_as_double(args->inputs[6].data, args->inputs[6].dtype, 0);
        j.yzp = nr_load_as_double(args->inputs[7].data, args->inputs[7].dtype, 0);
        if (!nr_int_range(y->dtype, &j.lo, &j.hi))
            return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu %s: output type %d", op, (int)y->dtype);
    }
    int64_t na = cpu_count(a), nbt = cpu_count(b);
    int32_t *a32 = cpu_alloc((size_t)na * sizeof(int32_t)), *bt32 = cpu_alloc((size_t)nbt * sizeof(int32_t));
    if (!a32 || !bt32) {
        cpu_free(a32);
        cpu_free(bt32);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu %s: out of memory for the widened operands", op);
    }
    widen_sub(a, az, 1, 0, a32);
    widen_sub(b, bz, 0, 1, bt32);
    /* transposing B keeps its batch strides but swaps the roles of the last two */
    j.sb[j.nb] = 1;
    j.sb[j.nb + 1] = j.K;
    j.a32 = a32;
    j.bt32 = bt32;
    int64_t rows = batch * j.M;
    int64_t grain = j.N * j.K > 0 ? 1 + 16384 / (j.N * j.K) : rows;
    if (rows > grain) cpu_parallel_for(ctx, rows, grain, mm_rows, &j);
    else mm_rows(&j, 0, rows);
    cpu_free(a32);
    cpu_free(bt32);
    return NETRUN_OK;
}

static netrun_status qlmm_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    int done = 0;
    if (state) {
        netrun_status st = cpu_qmm_run(ctx, state, args, &done);
        if (st != NETRUN_OK || done) return st;
    }
    return mm_common(ctx, args, 1);
}

static netrun_status mmi_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    int done = 0;
    if (state) {
        netrun_status st = cpu_qmm_run(ctx, state, args, &done);
        if (st != NETRUN_OK || done) return st;
    }
    return mm_common(ctx, args, 0);
}

/* ---- QLinearConv, ConvInteger: direct convolution over int32 operands with the zero points removed
 * (padding then contributes 0, which is what padding with the zero point means) ---- */
typedef struct cv_job {
    const int32_t *x32, *w32;
    const int32_t *bias;            /* QLinearConv B, or NULL */
    netrun_tensor *y;
    int qlinear;
    int64_t C, M, Cg, Mg;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
    const double *mult;             /* per output channel (QLinearConv) */
    double yzp, lo, hi;
} cv_job;

static void cv_planes(void *arg, int64_t p0, int64_t p1) {
    const cv_job *j = arg;
    int64_t in_plane = j->in[0] * j->in[1] * j->in[2], out_plane = j->out[0] * j->out[1] * j->out[2];
    int64_t ksz = j->k[0] * j->k[1] * j->k[2];
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / j->M, m = pl % j->M, g = m / j->Mg;
        const int32_t *xg = j->x32 + (n * j->C + g * j->Cg) * in_plane, *wm = j->w32 + m * j->Cg * ksz;
        int64_t o = 0;
        for (int64_t o0 = 0; o0 < j->out[0]; o0++)
            for (int64_t o1 = 0; o1 < j->out[1]; o1++)
                for (int64_t o2 = 0; o2 < j->out[2]; o2++, o++) {
                    int64_t acc = j->bias ? j->bias[m] : 0;
                    for (int64_t c = 0; c < j->Cg; c++) {
                        const int32_t *xc = xg + c * in_plane, *wc = wm + c * ksz;
                        for (int64_t k0 = 0; k0 < j->k[0]; k0++) {
                            int64_t i0 = o0 * j->s[0] - j->pb[0] + k0 * j->d[0];
                            if (i0 < 0 || i0 >= j->in[0]) continue;
                            for (int64_t k1 = 0; k1 < j->k[1]; k1++) {
                                int64_t i1 = o1 * j->s[1] - j->pb[1] + k1 * j->d[1];
                                if (i1 < 0 || i1 >= j->in[1]) continue;
                                const int32_t *xr = xc + (i0 * j->in[1] + i1) * j->in[2];
                                const int32_t *wr = wc + (k0 * j->k[1] + k1) * j->k[2];
                                for (int64_t k2 = 0; k2 < j->k[2]; k2++) {
                                    int64_t i2 = o2 * j->s[2] - j->pb[2] + k2 * j->d[2];
                                    if (i2 >= 0 && i2 < j->in[2]) acc += (int64_t)xr[i2] * wr[k2];
                                }
                            }
                        }
                    }
                    int32_t acc32 = (int32_t)(uint32_t)(uint64_t)acc;
                    int64_t oi = pl * out_plane + o;
                    if (j->qlinear)
                        nr_store_qint(j->y->data, j->y->dtype, oi, nr_sat_round((double)acc32 * j->mult[m] + j->yzp, j->lo, j->hi));
                    else
                        ((int32_t *)j->y->data)[oi] = acc32;
                }
    }
}

/* out = t - zp, zp one value or one per dim-0 slice (output channel of W). */
static void widen_channel(const netrun_tensor *t, const netrun_tensor *zp, int32_t *out) {
    int64_t n = cpu_count(t), per = t->dims[0] ? n / t->dims[0] : 0;
    int per_channel = zp && cpu_count(zp) > 1;
    for (int64_t i = 0; i < n; i++) {
        int32_t z = zp ? ld_q8(zp->data, zp->dtype, per_channel ? i / per : 0) : 0;
        out[i] = ld_q8(t->data, t->dtype, i) - z;
    }
}

static netrun_status conv_common(cpu_context *ctx, const netrun_kernel_args *args, int qlinear) {
    const char *op = qlinear ? "QLinearConv" : "ConvInteger";
    const netrun_conv_params *p = args->params;
    int iw = qlinear ? 3 : 1, ixz = qlinear ? 2 : 2, iwz = qlinear ? 5 : 3;
    const netrun_tensor *x = &args->inputs[0], *w = &args->inputs[iw];
    netrun_tensor *y = &args->outputs[0];
    const netrun_tensor *xz = args->n_inputs > ixz && args->inputs[ixz].rank >= 0 ? &args->inputs[ixz] : NULL;
    const netrun_tensor *wz = args->n_inputs > iwz && args->inputs[iwz].rank >= 0 ? &args->inputs[iwz] : NULL;
    int ns = x->rank - 2;
    if (!p || ns < 1 || ns > 3 || p->n_spatial != ns)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu %s: bad params or rank %d", op, x->rank);
    cv_job j;
    memset(&j, 0, sizeof j);
    j.y = y;
    j.qlinear = qlinear;
    j.C = x->dims[1];
    j.M = w->dims[0];
    j.Cg = w->dims[1];
    j.Mg = p->group > 0 ? j.M / p->group : j.M;
    if (j.Mg < 1) j.Mg = 1;
    for (int i = 0; i < 3; i++) { /* missing spatial dims become size 1 */
        int real = i < ns;
        j.in[i] = real ? x->dims[2 + i] : 1;
        j.out[i] = real ? y->dims[2 + i] : 1;
        j.k[i] = real ? w->dims[2 + i] : 1;
        j.s[i] = real ? p->strides[i] : 1;
        j.d[i] = real ? p->dilations[i] : 1;
        j.pb[i] = real ? p->pads_begin[i] : 0;
    }
    double *mult = NULL;
    if (qlinear) {
        if (!nr_int_range(y->dtype, &j.lo, &j.hi))
            return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu %s: output type %d", op, (int)y->dtype);
        const netrun_tensor *xs = &args->inputs[1], *ws = &args->inputs[4];
        mult = cpu_alloc((size_t)j.M * sizeof(double));
        if (!mult) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu %s: out of memory", op);
        float xsv = (float)nr_load_as_double(xs->data, xs->dtype, 0), ysv = (float)nr_load_as_double(args->inputs[6].data, args->inputs[6].dtype, 0);
        int per_ch = cpu_count(ws) > 1;
        for (int64_t m = 0; m < j.M; m++) /* float32 like the reference's x_scale * w_scale / y_scale */
            mult[m] = (float)(xsv * (float)nr_load_as_double(ws->data, ws->dtype, per_ch ? m : 0)) / ysv;
        j.mult = mult;
        j.yzp = nr_load_as_double(args->inputs[7].data, args->inputs[7].dtype, 0);
        if (p->has_bias && args->n_inputs > 8 && args->inputs[8].rank >= 0) j.bias = args->inputs[8].data;
    }
    int64_t nx = cpu_count(x), nw = cpu_count(w);
    int32_t *x32 = cpu_alloc((size_t)nx * sizeof(int32_t)), *w32 = cpu_alloc((size_t)nw * sizeof(int32_t));
    if (!x32 || !w32) {
        cpu_free(x32);
        cpu_free(w32);
        cpu_free(mult);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu %s: out of memory for the widened operands", op);
    }
    widen_channel(x, xz && cpu_count(xz) == 1 ? xz : NULL, x32);
    if (xz && cpu_count(xz) != 1) {
        cpu_free(x32);
        cpu_free(w32);
        cpu_free(mult);
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "cpu %s: x_zero_point must be one value", op);
    }
    widen_channel(w, wz, w32);
    j.x32 = x32;
    j.w32 = w32;
    int64_t planes = x->dims[0] * j.M;
    if (planes > 1) cpu_parallel_for(ctx, planes, 1, cv_planes, &j);
    else cv_planes(&j, 0, planes);
    cpu_free(x32);
    cpu_free(w32);
    cpu_free(mult);
    return NETRUN_OK;
}

/* The direct loops on a QLinearConv whose X or Y the QDQ pass marked NHWC (when the oneDNN kernel declines):
 * through NCHW copies. */
static netrun_status qlconv_direct(cpu_context *ctx, const netrun_kernel_args *args) {
    const netrun_conv_params *p = args->params;
    if (!p || (!p->src_nhwc && !p->dst_nhwc)) return conv_common(ctx, args, 1);
    const netrun_tensor *x = &args->inputs[0], *y = &args->outputs[0];
    if (x->rank < 3 || y->rank != x->rank)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "cpu QLinearConv: NHWC needs the same rank >= 3 for X and Y");
    int64_t xhw = cpu_count(x) / (x->dims[0] * x->dims[1]), yhw = cpu_count(y) / (y->dims[0] * y->dims[1]);
    uint8_t *xt = p->src_nhwc ? cpu_alloc(x->nbytes) : NULL, *yt = p->dst_nhwc ? cpu_alloc(y->nbytes) : NULL;
    if ((p->src_nhwc && !xt) || (p->dst_nhwc && !yt)) {
        cpu_free(xt);
        cpu_free(yt);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cpu QLinearConv: out of memory");
    }
    netrun_tensor in[9], out = *y;
    netrun_kernel_args a = *args;
    memcpy(in, args->inputs, sizeof(netrun_tensor) * (size_t)(args->n_inputs < 9 ? args->n_inputs : 9));
    if (xt) cpu_u8_to_nchw(ctx, x->data, xt, x->dims[0], x->dims[1], xhw), in[0].data = xt;
    if (yt) out.data = yt;
    a.inputs = in;
    a.outputs = &out;
    netrun_status st = conv_common(ctx, &a, 1);
    if (st == NETRUN_OK && yt) cpu_u8_to_nhwc(ctx, yt, y->data, y->dims[0], y->dims[1], yhw);
    cpu_free(xt);
    cpu_free(yt);
    return st;
}

static void qlconv_describe(const netrun_node_desc *node, char *buf, size_t size) {
    const netrun_conv_params *p = node->params;
    snprintf(buf, size, "direct int32 convolution%s%s%s", p && p->has_sum ? " + residual" : "",
             p && p->src_nhwc ? " (NHWC in)" : "", p && p->dst_nhwc ? " (NHWC out)" : "");
}

/* The residual form (layers/quantize.c) without the oneDNN kernel: q into Y (in q's type), then the Add. */
static netrun_status qlconv_residual_direct(cpu_context *ctx, const netrun_kernel_args *args) {
    const netrun_tensor *in = args->inputs, *y = &args->outputs[0];
    if (args->n_inputs != 14 || cpu_count(&in[9]) != cpu_count(y) || cpu_count(&in[6]) != 1 ||
        cpu_count(&in[7]) != 1 || cpu_count(&in[10]) != 1 || cpu_count(&in[11]) != 1 || cpu_count(&in[12]) != 1 ||
        cpu_count(&in[13]) != 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cpu QLinearConv (residual form): needs 14 inputs, "
                               "Z of Y's size and one value per scale and zero point");
    netrun_tensor q = *y;
    netrun_kernel_args a = *args;
    q.dtype = in[7].dtype;
    a.outputs = &q;
    a.n_inputs = 9;
    netrun_status st = qlconv_direct(ctx, &a);
    if (st != NETRUN_OK) return st;
    float ys = *(const float *)in[6].data, zs = *(const float *)in[10].data, ss = *(const float *)in[12].data;
    cpu_qlinear_add(y->data, in[7].dtype == NETRUN_DTYPE_INT8, ld_q8(in[7].data, in[7].dtype, 0), ys / ss, in[9].data,
                    in[9].dtype == NETRUN_DTYPE_INT8, ld_q8(in[11].data, in[11].dtype, 0), zs / ss, y->data,
                    y->dtype == NETRUN_DTYPE_INT8, ld_q8(in[13].data, in[13].dtype, 0), cpu_count(y));
    return NETRUN_OK;
}

static netrun_status qlconv_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    int done = 0;
    if (state) {
        netrun_status st = cpu_qconv_run(ctx, state, args, &done);
        if (st != NETRUN_OK || done) return st;
    }
    const netrun_conv_params *p = args->params;
    if (p && p->has_sum) return qlconv_residual_direct(ctx, args);
    return qlconv_direct(ctx, args);
}

static netrun_status convi_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    int done = 0;
    if (state) {
        netrun_status st = cpu_convi_run(ctx, state, args, &done);
        if (st != NETRUN_OK || done) return st;
    }
    return conv_common(ctx, args, 0);
}

/* ---- BitCast: the bytes unchanged, except that unpacked 4-bit values are re-extended ---- */
static netrun_status bitcast_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)ctx;
    (void)state;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (x->nbytes != y->nbytes)
        return cpu_host->error(NETRUN_ERR_INTERNAL, "BitCast: output has %zu bytes, input %zu", y->nbytes, x->nbytes);
    if (y->nbytes) memmove(y->data, x->data, y->nbytes);
    int64_t n = cpu_count(x);
    uint8_t *d = y->data;
    if (y->dtype == NETRUN_DTYPE_UINT4)
        for (int64_t i = 0; i < n; i++) d[i] &= 0x0f;
    else if (y->dtype == NETRUN_DTYPE_INT4)
        for (int64_t i = 0; i < n; i++) d[i] = (uint8_t)((d[i] & 0x08) ? (d[i] | 0xf0) : (d[i] & 0x0f));
    return NETRUN_OK;
}

#define QUANT_IN (DT(FLOAT) | DT(FLOAT16) | DT(BFLOAT16) | DT(INT32))
#define DEQUANT_IN (DT(UINT8) | DT(INT8) | DT(UINT16) | DT(INT16) | DT(INT32) | DT(UINT4) | DT(INT4) | DT(UINT2) | \
                    DT(INT2) | DT(FLOAT4E2M1) | F8_MASK)
#define BITCAST_IN (CPU_ALL_DTYPES | F8_MASK | DT(UINT4) | DT(INT4) | DT(COMPLEX64) | DT(COMPLEX128))

const cpu_op cpu_ops_quantize[] = {
    {"QuantizeLinear", "", QUANT_IN, "per-tensor, per-axis and blocked; to (u)int8/16, (u)int4, (u)int2, float4e2m1, float8; float8e8m0 scales",
     NULL, NULL, quantize_run, NULL},
    {"DequantizeLinear", "", DEQUANT_IN, "per-tensor, per-axis and blocked; to float/float16/bfloat16; float8e8m0 scales",
     NULL, NULL, dequantize_run, NULL},
    {"DynamicQuantizeLinear", "", DT(FLOAT), "uint8 output", NULL, NULL, dynq_run, NULL},
    {"QLinearMatMul", "", INT8_MASK, "A, B of rank >= 2; y_scale/y_zero_point one value; constant float32 scales and "
     "zero points (b's per column allowed): a constant 2-D B as a oneDNN int8 1x1 convolution (VNNI/AMX), else "
     "oneDNN's integer GEMM; otherwise direct int32 loops", NULL, cpu_qmm_create, qlmm_run, cpu_qmm_destroy,
     NULL, cpu_qmm_describe_state},
    {"MatMulInteger", "", INT8_MASK, "A, B of rank >= 2; constant zero points (b's per column if all equal): "
     "oneDNN's integer GEMM, else direct int32 loops", NULL, cpu_mmi_create, mmi_run, cpu_qmm_destroy, NULL,
     cpu_qmm_describe_state},
    {"QLinearConv", "", INT8_MASK, "w_scale/w_zero_point per tensor or channel; 2-D with constant parameters and "
     "symmetric weights: oneDNN int8 (VNNI/AMX), else direct int32 convolution",
     NULL, cpu_qconv_create, qlconv_run, cpu_qconv_destroy, qlconv_describe, cpu_qconv_describe_state},
    {"ConvInteger", "", INT8_MASK, "x_zero_point one value; 2-D with constant symmetric weights: oneDNN int8 "
     "(VNNI/AMX), else direct int32 convolution", NULL, cpu_convi_create, convi_run, cpu_qconv_destroy, NULL,
     cpu_qconv_describe_state},
    {"BitCast", "", BITCAST_IN, "same bit width", NULL, NULL, bitcast_run, NULL},
    {0},
};
