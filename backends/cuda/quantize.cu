/* CUDA kernels: QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked; every quantized type the CPU
 * backend has: (u)int8/16, (u)int4, (u)int2 unpacked, float4e2m1, float8 with saturate; float8e8m0 scales),
 * DynamicQuantizeLinear and BitCast. The arithmetic is the CPU backend's (backends/cpu/quantize.c), with the
 * element conversions of cast_dev.cuh, so that both agree bit for bit. */
#include "cast_dev.cuh"

#define QUANT_X_DTYPES (CUDA_DT(FLOAT) | CUDA_DT(FLOAT16) | CUDA_DT(BFLOAT16) | CUDA_DT(INT32))
#define QUANT_SCALE_DTYPES (QUANT_X_DTYPES | CUDA_DT(FLOAT8E8M0))
#define DEQUANT_X_DTYPES                                                                                      \
    (CUDA_DT(UINT8) | CUDA_DT(INT8) | CUDA_DT(UINT16) | CUDA_DT(INT16) | CUDA_DT(INT32) | CUDA_DT(UINT4) |       \
     CUDA_DT(INT4) | CUDA_DT(UINT2) | CUDA_DT(INT2) | CUDA_DT(FLOAT4E2M1) | CAST_F8_MASK)
#define QUANT_Y_DTYPES (DEQUANT_X_DTYPES & ~CUDA_DT(INT32))
#define DEQUANT_Y_DTYPES (CUDA_DT(FLOAT) | CUDA_DT(FLOAT16) | CUDA_DT(BFLOAT16))

static int in_mask(netrun_dtype t, uint64_t mask) { return (unsigned)t < 64 && ((mask >> t) & 1); }

/* x seen as [outer, dim, inner] around the axis; blocks = the scale's extent along the axis. */
struct qgeom {
    int mode;
    int64_t inner, dim, blocks, block_size;
};

__device__ __forceinline__ int64_t q_param_index(const qgeom &g, int64_t e) {
    return nr_quant_param_index(g.mode, e, g.inner, g.dim, g.blocks, g.block_size);
}

struct qargs {
    const void *x, *s, *z; /* z NULL when absent */
    void *y;
    int xt, st, zt, yt, prec, saturate, integer;
    double lo, hi;
};

__global__ void quantize_k(qargs a, qgeom g, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t k = q_param_index(g, i);
        double s = nr_load_as_double(a.s, a.st, k), x = nr_load_as_double(a.x, a.xt, i);
        double zp = a.z ? nr_load_as_double(a.z, a.zt, k) : 0;
        /* x / scale in the precision type (float division, then rounded once more to half when asked) */
        double q = a.prec == NETRUN_DTYPE_DOUBLE
                       ? __ddiv_rn(x, s)
                       : nr_round_to(__fdiv_rn((float)nr_round_to(x, a.prec), (float)nr_round_to(s, a.prec)), a.prec);
        if (a.integer) nr_store_qint(a.y, a.yt, i, nr_sat_round(__dadd_rn(rint(q), zp), a.lo, a.hi));
        else if (a.yt == NETRUN_DTYPE_FLOAT4E2M1) ((uint8_t *)a.y)[i] = nr_float_to_f4((float)__dadd_rn(q, zp));
        else ((uint8_t *)a.y)[i] = nr_float_to_f8((float)__dadd_rn(q, zp), a.yt, a.saturate);
    }
}

__global__ void dequantize_k(qargs a, qgeom g, int64_t n) {
    /* float8 and float4e2m1 zero points are ignored (the reference requires float8 ones to be 0) */
    int float_q = ((CAST_F8_MASK >> a.xt) & 1) || a.xt == NETRUN_DTYPE_FLOAT4E2M1;
    GRID_LOOP(i, n) {
        int64_t k = q_param_index(g, i);
        float x = (float)nr_load_as_double(a.x, a.xt, i);
        float zp = a.z && !float_q ? (float)nr_load_as_double(a.z, a.zt, k) : 0.0f;
        float s = (float)nr_load_as_double(a.s, a.st, k);
        dev_store_f(a.y, a.yt, i, __fmul_rn(__fsub_rn(x, zp), s));
    }
}

/* The common case, fast: float32 x and scale, (u)int8 y (and zero point), per tensor or per axis with the axis'
 * inner extent a multiple of 4: four elements a thread (one 16-byte load, one 4-byte store) sharing one scale, and
 * no per-element dtype switch or 64-bit index division (the generic kernel above took 65% of a QDQ BERT's time).
 * Same arithmetic as quantize_k / dequantize_k: x / scale as a float division, rounded half to even, plus the
 * zero point, saturated; dequantization (x - zp) * scale in float. */
struct q8geom {
    fdiv32 inner4, dim; /* per axis: element group i has parameter (i / inner4) % dim; per tensor: dim.d == 1 */
    int axis;
};

__device__ __forceinline__ uint32_t q8_param(const q8geom &g, uint32_t i) {
    if (!g.axis) return 0;
    uint32_t r = fdiv_q(g.inner4, i);
    return r - fdiv_q(g.dim, r) * g.dim.d;
}

template <bool U8>
__global__ void quantize_f32_q8_k(const float4 *__restrict__ x, const float *__restrict__ s, const void *__restrict__ z,
                                  uint32_t *__restrict__ y, uint32_t n4, q8geom g) {
    const double lo = U8 ? 0.0 : -128.0, hi = U8 ? 255.0 : 127.0;
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const uint32_t k = q8_param(g, i);
        const float sc = __ldg(&s[k]);
        const double zp = z ? (U8 ? (double)((const uint8_t *)z)[k] : (double)((const int8_t *)z)[k]) : 0.0;
        const float4 v = x[i];
        const float e[4] = {v.x, v.y, v.z, v.w};
        uint32_t packed = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const double q = nr_sat_round(__dadd_rn((double)rintf(__fdiv_rn(e[j], sc)), zp), lo, hi);
            packed |= (uint32_t)(U8 ? (uint8_t)(int)q : (uint8_t)(int8_t)(int)q) << (8 * j);
        }
        y[i] = packed;
    }
}

template <bool U8>
__global__ void dequantize_q8_f32_k(const uint32_t *__restrict__ x, const float *__restrict__ s,
                                    const void *__restrict__ z, float4 *__restrict__ y, uint32_t n4, q8geom g) {
    uint32_t stride = blockDim.x * gridDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const uint32_t k = q8_param(g, i);
        const float sc = __ldg(&s[k]);
        const float zp = z ? (U8 ? (float)((const uint8_t *)z)[k] : (float)((const int8_t *)z)[k]) : 0.0f;
        const uint32_t b = x[i];
        float e[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint8_t u = (uint8_t)(b >> (8 * j));
            e[j] = __fmul_rn(__fsub_rn(U8 ? (float)u : (float)(int8_t)u, zp), sc);
        }
        y[i] = make_float4(e[0], e[1], e[2], e[3]);
    }
}

/* 1 when the fast kernels took the node (else the generic kernels run). */
static int q8_fast(cuda_context *ctx, const netrun_quantize_params *p, const netrun_tensor *x, const netrun_tensor *s,
                   const netrun_tensor *z, netrun_tensor *y, const qgeom &g, int64_t n, int quantize) {
    netrun_dtype qt = quantize ? y->dtype : x->dtype, ft = quantize ? x->dtype : y->dtype;
    if (ft != NETRUN_DTYPE_FLOAT || s->dtype != NETRUN_DTYPE_FLOAT ||
        (qt != NETRUN_DTYPE_UINT8 && qt != NETRUN_DTYPE_INT8) || (z && z->dtype != qt) ||
        (quantize && p->precision != NETRUN_DTYPE_FLOAT) || n % 4 || n / 4 >= INT32_MAX ||
        ((uintptr_t)x->data & 15) || ((uintptr_t)y->data & 15))
        return 0;
    q8geom q;
    q.axis = p->mode == NETRUN_QUANT_PER_AXIS;
    if (p->mode != NETRUN_QUANT_PER_TENSOR && !(q.axis && g.inner % 4 == 0)) return 0;
    q.inner4 = make_fdiv((uint32_t)(q.axis ? g.inner / 4 : 1));
    q.dim = make_fdiv((uint32_t)(q.axis ? g.dim : 1));
    uint32_t n4 = (uint32_t)(n / 4);
    int u8 = qt == NETRUN_DTYPE_UINT8;
    const void *zp = z ? z->data : NULL;
    unsigned blocks = cuda_blocks32(n4, CUDA_THREADS);
    if (quantize) {
        if (u8) quantize_f32_q8_k<true><<<blocks, CUDA_THREADS, 0, ctx->stream>>>((const float4 *)x->data, (const float *)s->data, zp, (uint32_t *)y->data, n4, q);
        else quantize_f32_q8_k<false><<<blocks, CUDA_THREADS, 0, ctx->stream>>>((const float4 *)x->data, (const float *)s->data, zp, (uint32_t *)y->data, n4, q);
    } else {
        if (u8) dequantize_q8_f32_k<true><<<blocks, CUDA_THREADS, 0, ctx->stream>>>((const uint32_t *)x->data, (const float *)s->data, zp, (float4 *)y->data, n4, q);
        else dequantize_q8_f32_k<false><<<blocks, CUDA_THREADS, 0, ctx->stream>>>((const uint32_t *)x->data, (const float *)s->data, zp, (float4 *)y->data, n4, q);
    }
    return 1;
}

static int q_supports_common(const netrun_node_desc *node, char *reason, size_t size, int quantize) {
    const netrun_quantize_params *p = (const netrun_quantize_params *)node->params;
    if (!p) return cuda_refuse(reason, size, "%s without params", node->op_type);
    if (node->n_inputs < 2 || node->n_outputs < 1)
        return cuda_refuse(reason, size, "%s needs x, scale and an output", node->op_type);
    netrun_dtype xt = node->inputs[0].dtype, st = node->inputs[1].dtype, yt = node->outputs[0].dtype;
    if (!in_mask(xt, quantize ? QUANT_X_DTYPES : DEQUANT_X_DTYPES))
        return cuda_refuse(reason, size, "%s: x of dtype %s not supported", node->op_type, cuda_dtype_name(xt));
    if (!in_mask(st, QUANT_SCALE_DTYPES))
        return cuda_refuse(reason, size, "%s: scale of dtype %s not supported", node->op_type, cuda_dtype_name(st));
    /* A node whose shapes wait for run-time values is placed before its infer ran: its params then hold only
     * the attributes (out_dtype 0, precision 0) and its output dtype is a guess. The layer only produces types
     * the kernels serve; the run checks them again. */
    if (p->out_dtype) yt = (netrun_dtype)p->out_dtype;
    if (p->out_dtype && !in_mask(yt, quantize ? QUANT_Y_DTYPES : DEQUANT_Y_DTYPES))
        return cuda_refuse(reason, size, "%s: output dtype %s not supported", node->op_type, cuda_dtype_name(yt));
    if (node->n_inputs > 2 && node->inputs[2].rank >= 0 && !cast_esize(node->inputs[2].dtype))
        return cuda_refuse(reason, size, "%s: zero point of dtype %s not supported", node->op_type,
                           cuda_dtype_name(node->inputs[2].dtype));
    if (p->mode != NETRUN_QUANT_PER_TENSOR && p->mode != NETRUN_QUANT_PER_AXIS && p->mode != NETRUN_QUANT_BLOCKED)
        return cuda_refuse(reason, size, "%s: quantization mode %d unknown", node->op_type, p->mode);
    if (quantize && p->precision && p->precision != NETRUN_DTYPE_FLOAT && p->precision != NETRUN_DTYPE_FLOAT16 &&
        p->precision != NETRUN_DTYPE_BFLOAT16 && p->precision != NETRUN_DTYPE_DOUBLE)
        return cuda_refuse(reason, size, "QuantizeLinear: precision %d not supported", p->precision);
    return 1;
}

static int quantize_supports(const netrun_node_desc *node, char *reason, size_t size) {
    return q_supports_common(node, reason, size, 1);
}
static int dequantize_supports(const netrun_node_desc *node, char *reason, size_t size) {
    return q_supports_common(node, reason, size, 0);
}

static netrun_status q_run_common(cuda_context *ctx, const netrun_kernel_args *args, int quantize) {
    const char *op = quantize ? "QuantizeLinear" : "DequantizeLinear";
    const netrun_quantize_params *p = (const netrun_quantize_params *)args->params;
    if (!p) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda %s: params missing", op);
    const netrun_tensor *x = &args->inputs[0], *s = &args->inputs[1];
    const netrun_tensor *z = args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    netrun_tensor *y = &args->outputs[0];
    qgeom g = {p->mode, 1, 1, 1, 1};
    if (p->mode != NETRUN_QUANT_PER_TENSOR) {
        if (p->axis < 0 || p->axis >= x->rank || (p->mode == NETRUN_QUANT_BLOCKED && s->rank != x->rank))
            return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda %s: axis %d out of range", op, p->axis);
        g.dim = x->dims[p->axis];
        for (int i = p->axis + 1; i < x->rank; i++) g.inner *= x->dims[i];
        g.blocks = p->mode == NETRUN_QUANT_BLOCKED ? s->dims[p->axis] : g.dim;
        if (p->mode == NETRUN_QUANT_BLOCKED) {
            if (p->block_size <= 0)
                return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda %s: block_size %lld", op, (long long)p->block_size);
            g.block_size = p->block_size;
        }
        if (g.inner == 0 || g.dim == 0) return NETRUN_OK; /* x is empty */
    }
    if (!in_mask(y->dtype, quantize ? QUANT_Y_DTYPES : DEQUANT_Y_DTYPES) || !in_mask(s->dtype, QUANT_SCALE_DTYPES) ||
        (z && !cast_esize(z->dtype)) ||
        (quantize && p->precision != NETRUN_DTYPE_FLOAT && p->precision != NETRUN_DTYPE_FLOAT16 &&
         p->precision != NETRUN_DTYPE_BFLOAT16 && p->precision != NETRUN_DTYPE_DOUBLE))
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda %s: output %s, scale %s, precision %d not supported", op,
                                cuda_dtype_name(y->dtype), cuda_dtype_name(s->dtype), p->precision);
    int64_t n = cuda_count(x);
    if (n == 0) return NETRUN_OK;
    qargs a;
    memset(&a, 0, sizeof a);
    a.x = x->data;
    a.s = s->data;
    a.z = z ? z->data : NULL;
    a.y = y->data;
    a.xt = (int)x->dtype;
    a.st = (int)s->dtype;
    a.zt = z ? (int)z->dtype : 0;
    a.yt = (int)y->dtype;
    a.prec = p->precision;
    a.saturate = p->saturate;
    a.integer = nr_int_range(y->dtype, &a.lo, &a.hi);
    if (q8_fast(ctx, p, x, s, z, y, g, n, quantize)) return cuda_check_launch(op);
    if (quantize) quantize_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(a, g, n);
    else dequantize_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(a, g, n);
    return cuda_check_launch(op);
}

static netrun_status quantize_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return q_run_common(ctx, args, 1);
}
static netrun_status dequantize_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    return q_run_common(ctx, args, 0);
}

/* ---- DynamicQuantizeLinear (uint8, computed in float32 as the ONNX function body) ----
 * Pass 1: per-block min/max into the workspace; pass 2 (one block): the range (always including 0), scale and
 * zero point, written to outputs 1 and 2; pass 3 reads them back on the device and quantizes. */
#define DYNQ_BLOCKS 256

__global__ void dynq_minmax_k(const float *x, int64_t n, float *part) {
    __shared__ float sh[32];
    float mx = 0.0f, mn = 0.0f;
    GRID_LOOP(i, n) {
        float v = x[i];
        if (v > mx) mx = v; /* NaN compares false and is skipped, as on the CPU */
        if (v < mn) mn = v;
    }
    mx = block_max(mx, sh);
    mn = -block_max(-mn, sh);
    if (threadIdx.x == 0) {
        part[2 * blockIdx.x] = mn;
        part[2 * blockIdx.x + 1] = mx;
    }
}

__global__ void dynq_params_k(const float *part, int nparts, float *scale_out, uint8_t *zp_out) {
    __shared__ float sh[32];
    float mx = 0.0f, mn = 0.0f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) {
        mn = fminf(mn, part[2 * i]);
        mx = fmaxf(mx, part[2 * i + 1]);
    }
    mx = block_max(mx, sh);
    mn = -block_max(-mn, sh);
    if (threadIdx.x == 0) {
        /* a constant-zero input gets scale 1 (onnxruntime; the CPU backend too) */
        float scale = mx == mn ? 1.0f : __fdiv_rn(__fsub_rn(mx, mn), 255.0f);
        float izp = __fsub_rn(0.0f, __fdiv_rn(mn, scale));
        float zp = rintf(izp < 0.0f ? 0.0f : izp > 255.0f ? 255.0f : izp);
        *scale_out = scale;
        *zp_out = (uint8_t)zp;
    }
}

__global__ void dynq_quant_k(const float *x, uint8_t *y, int64_t n, const float *scale_p, const uint8_t *zp_p) {
    float scale = *scale_p, zp = (float)*zp_p;
    GRID_LOOP(i, n) {
        double v = rint((double)__fadd_rn(rintf(__fdiv_rn(x[i], scale)), zp));
        y[i] = (uint8_t)(!(v >= 0.0) ? 0.0 : v > 255.0 ? 255.0 : v);
    }
}

static int dynq_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs < 1 || node->n_outputs < 3)
        return cuda_refuse(reason, size, "DynamicQuantizeLinear needs x and three outputs");
    if (node->inputs[0].dtype != NETRUN_DTYPE_FLOAT)
        return cuda_refuse(reason, size, "DynamicQuantizeLinear: x of dtype %s (float32 only)",
                           cuda_dtype_name(node->inputs[0].dtype));
    return 1;
}

static netrun_status dynq_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)ctx, (void)node;
    *state = NULL;
    *workspace = 2 * DYNQ_BLOCKS * sizeof(float);
    return NETRUN_OK;
}

static netrun_status dynq_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *x = &args->inputs[0];
    if (args->n_outputs < 3)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda DynamicQuantizeLinear: %d outputs", args->n_outputs);
    float *part = (float *)cuda_workspace_address(args->workspace);
    if (!part || args->workspace_size < 2 * DYNQ_BLOCKS * sizeof(float))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda DynamicQuantizeLinear: workspace missing");
    int64_t n = cuda_count(x);
    int64_t nb64 = (n + CUDA_THREADS - 1) / CUDA_THREADS;
    int nb = nb64 < 1 ? 1 : nb64 > DYNQ_BLOCKS ? DYNQ_BLOCKS : (int)nb64;
    float *scale = (float *)args->outputs[1].data;
    uint8_t *zp = (uint8_t *)args->outputs[2].data;
    dynq_minmax_k<<<nb, CUDA_THREADS, 0, ctx->stream>>>((const float *)x->data, n, part);
    netrun_status st = cuda_check_launch("DynamicQuantizeLinear min/max");
    if (st != NETRUN_OK) return st;
    dynq_params_k<<<1, CUDA_THREADS, 0, ctx->stream>>>(part, nb, scale, zp);
    if ((st = cuda_check_launch("DynamicQuantizeLinear scale")) != NETRUN_OK) return st;
    if (n == 0) return NETRUN_OK;
    dynq_quant_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((const float *)x->data,
                                                                   (uint8_t *)args->outputs[0].data, n, scale, zp);
    return cuda_check_launch("DynamicQuantizeLinear");
}

/* ---- BitCast: the bytes unchanged, except that unpacked 4-bit values are re-extended ---- */
__global__ void bitcast_fix4_k(uint8_t *d, int64_t n, int is_signed) {
    GRID_LOOP(i, n) {
        uint8_t v = d[i];
        d[i] = is_signed ? (uint8_t)((v & 0x08) ? (v | 0xf0) : (v & 0x0f)) : (uint8_t)(v & 0x0f);
    }
}

#define BITCAST_DTYPES (CUDA_ALL_DTYPES | CAST_F8_MASK | CUDA_DT(UINT4) | CUDA_DT(INT4))

static int bitcast_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs < 1 || node->n_outputs < 1) return cuda_refuse(reason, size, "BitCast needs x and y");
    netrun_dtype a = node->inputs[0].dtype, b = node->outputs[0].dtype;
    if (!in_mask(a, BITCAST_DTYPES) || !cast_esize(b))
        return cuda_refuse(reason, size, "BitCast %s -> %s not supported", cuda_dtype_name(a), cuda_dtype_name(b));
    return 1;
}

static netrun_status bitcast_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    if (x->nbytes != y->nbytes)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda BitCast: output has %zu bytes, input %zu", y->nbytes,
                                x->nbytes);
    if (!y->nbytes) return NETRUN_OK;
    cudaError_t e = cudaMemcpyAsync(y->data, x->data, y->nbytes, cudaMemcpyDeviceToDevice, ctx->stream);
    if (e != cudaSuccess) return cuda_fail(e, "BitCast copy");
    int64_t n = cuda_count(x);
    if ((y->dtype == NETRUN_DTYPE_UINT4 || y->dtype == NETRUN_DTYPE_INT4) && n > 0) {
        bitcast_fix4_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>((uint8_t *)y->data, n,
                                                                        y->dtype == NETRUN_DTYPE_INT4);
        return cuda_check_launch("BitCast");
    }
    return NETRUN_OK;
}

extern "C" const cuda_op cuda_ops_quantize[] = {
    {"QuantizeLinear", QUANT_X_DTYPES, "per-tensor, per-axis and blocked; to (u)int8/16, (u)int4, (u)int2, "
     "float4e2m1, float8 (saturate); float8e8m0 scales", quantize_supports, NULL, quantize_run, NULL},
    {"DequantizeLinear", DEQUANT_X_DTYPES, "per-tensor, per-axis and blocked; to float/float16/bfloat16; "
     "float8e8m0 scales", dequantize_supports, NULL, dequantize_run, NULL},
    {"DynamicQuantizeLinear", CUDA_DT(FLOAT), "float32 in, uint8 out", dynq_supports, dynq_create, dynq_run, NULL},
    {"BitCast", BITCAST_DTYPES, "same bit width", bitcast_supports, NULL, bitcast_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
