/* CPU int8 kernels: QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger, per-tensor Q/DQ.
 *
 * QLinearConv: oneDNN's int8 convolution (VNNI / AMX JIT kernels), which takes channels-last (NHWC) 8-bit
 * activations only (on NCHW it has reference loops alone). The zero points of X and Y and the per-channel
 * multiplier x_scale * w_scale / y_scale go to the primitive's attributes, the int32 bias is added to the
 * int32 sums before the multiplier (as QLinearConv defines), and the result is rounded half to even and
 * saturated by the primitive. The residual form the QDQ pass writes (layers/quantize.c: DQ(q), DQ(Z) -> Add ->
 * Q in the node) is the primitive's post-ops: round and clamp to q's type (q - y_zero_point, as the unfused
 * Q computes it), times y_scale / sum_scale, minus z_zero_point * z_scale / sum_scale, plus Z times
 * z_scale / sum_scale (the sum post-op over Z copied into Y first), then sum_zero_point, rounded and saturated:
 * onnxruntime's QLinearAdd formula, so only float rounding at ties can differ (one unit). X is reordered to NHWC and Y back to NCHW inside the node unless the QDQ pass
 * marked them NHWC already (netrun_conv_params.src_nhwc / dst_nhwc: the value is only read by int8 kernels
 * that know it). Threads: the output rows (or, for a batch, the images) are cut into one band per thread, each
 * band its own single-threaded primitive (its padding at the top and bottom is the band's own) with its own
 * scratchpad, so X and Y are read and written once and no OpenMP team runs. 1x1 convolutions on 1x1 planes
 * (a Gemm rewritten by the QDQ pass) run the images as the pixels of one row. ConvInteger: the same with an
 * int32 Y and no multiplier, the x zero point possibly given at run time.
 *
 * QLinearMatMul: a constant 2-D B runs as that 1x1 convolution over A's rows (W = B^T); otherwise oneDNN's
 * integer GEMM (dnnl_gemm_u8s8s32 / s8s8s32, zero points as its offsets), rows cut into one block per thread,
 * then the int32 sums requantized per row while cached. MatMulInteger: that GEMM, its sums the output. A uint8
 * B is moved to int8 (b - 128, zero point - 128: the same differences). */
#include "qlinear_int8.h"

#include <stdio.h>
#include <stdlib.h>
#include <immintrin.h>

/* ---- NCHW <-> NHWC, 8-bit ---- */
typedef struct tr_job {
    const uint8_t *x;
    uint8_t *y;
    int64_t c, hw, blocks; /* pixel blocks of 64 per image */
    int to_nhwc;
} tr_job;

static void tr_range(void *arg, int64_t b, int64_t e) {
    const tr_job *j = arg;
    for (int64_t t = b; t < e; t++) {
        int64_t img = t / j->blocks, p0 = (t % j->blocks) * 64, p1 = p0 + 64 < j->hw ? p0 + 64 : j->hw;
        const uint8_t *x = j->x + img * j->c * j->hw;
        uint8_t *y = j->y + img * j->c * j->hw;
        if (j->to_nhwc)
            for (int64_t c = 0; c < j->c; c++)
                for (int64_t p = p0; p < p1; p++) y[p * j->c + c] = x[c * j->hw + p];
        else
            for (int64_t c = 0; c < j->c; c++)
                for (int64_t p = p0; p < p1; p++) y[c * j->hw + p] = x[p * j->c + c];
    }
}

static void transpose8(cpu_context *ctx, const uint8_t *x, uint8_t *y, int64_t n, int64_t c, int64_t hw, int to_nhwc) {
    tr_job j = {x, y, c, hw, (hw + 63) / 64, to_nhwc};
    int64_t tasks = n * j.blocks;
    if (tasks > 1 && n * c * hw >= 16384) cpu_parallel_for(ctx, tasks, 1, tr_range, &j);
    else tr_range(&j, 0, tasks);
}

/* NHWC -> NCHW for ConvInteger's int32 Y */
typedef struct tr32_job {
    const int32_t *x;
    int32_t *y;
    int64_t c, hw, blocks;
} tr32_job;

static void tr32_range(void *arg, int64_t b, int64_t e) {
    const tr32_job *j = arg;
    for (int64_t t = b; t < e; t++) {
        int64_t img = t / j->blocks, p0 = (t % j->blocks) * 64, p1 = p0 + 64 < j->hw ? p0 + 64 : j->hw;
        const int32_t *x = j->x + img * j->c * j->hw;
        int32_t *y = j->y + img * j->c * j->hw;
        for (int64_t c = 0; c < j->c; c++)
            for (int64_t p = p0; p < p1; p++) y[c * j->hw + p] = x[p * j->c + c];
    }
}

static void transpose32(cpu_context *ctx, const int32_t *x, int32_t *y, int64_t n, int64_t c, int64_t hw) {
    tr32_job j = {x, y, c, hw, (hw + 63) / 64};
    int64_t tasks = n * j.blocks;
    if (tasks > 1 && n * c * hw >= 4096) cpu_parallel_for(ctx, tasks, 1, tr32_range, &j);
    else tr32_range(&j, 0, tasks);
}

void cpu_u8_to_nhwc(cpu_context *ctx, const uint8_t *x, uint8_t *y, int64_t n, int64_t c, int64_t hw) {
    transpose8(ctx, x, y, n, c, hw, 1);
}

void cpu_u8_to_nchw(cpu_context *ctx, const uint8_t *x, uint8_t *y, int64_t n, int64_t c, int64_t hw) {
    transpose8(ctx, x, y, n, c, hw, 0);
}

/* ---- per-tensor QuantizeLinear (float32 -> 8-bit) and DequantizeLinear (8-bit -> float32) ----
 * y = saturate(round_half_even(x / scale) + zp) with the division in float32, as the reference computes it;
 * x = (q - zp) * scale. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void quant_avx512(const float *x, void *y, int64_t n, float scale, int32_t zp, int s8) {
    float lo = (s8 ? -128.0f : 0.0f) - (float)zp, hi = (s8 ? 127.0f : 255.0f) - (float)zp;
    __m512 vs = _mm512_set1_ps(scale), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    __m512i vzp = _mm512_set1_epi32(zp);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(k, x + i), vs);
        v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi); /* NaN: max_ps gives vlo (the reference: saturates too) */
        _mm512_mask_cvtepi32_storeu_epi8((int8_t *)y + i, k, _mm512_add_epi32(_mm512_cvtps_epi32(v), vzp));
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl")))
static void dequant_avx512(const void *x, float *y, int64_t n, float scale, int32_t zp, int s8) {
    __m512 vs = _mm512_set1_ps(scale);
    __m512i vzp = _mm512_set1_epi32(zp);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m128i b = _mm_maskz_loadu_epi8(k, (const int8_t *)x + i);
        __m512i q = s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(q, vzp)), vs));
    }
}

/* y = saturate(round((a - za) * ra + (b - zb) * rb) + zy): the residual without oneDNN (same formula). */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void qadd_avx512(const void *a, int a8, int32_t za, float ra, const void *b, int b8, int32_t zb, float rb,
                        void *y, int y8, int32_t zy, int64_t n) {
    __m512 vra = _mm512_set1_ps(ra), vrb = _mm512_set1_ps(rb);
    __m512 vlo = _mm512_set1_ps((y8 ? -128.0f : 0.0f) - (float)zy), vhi = _mm512_set1_ps((y8 ? 127.0f : 255.0f) - (float)zy);
    __m512i vza = _mm512_set1_epi32(za), vzb = _mm512_set1_epi32(zb), vzy = _mm512_set1_epi32(zy);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m128i qa = _mm_maskz_loadu_epi8(k, (const int8_t *)a + i), qb = _mm_maskz_loadu_epi8(k, (const int8_t *)b + i);
        __m512 fa = _mm512_cvtepi32_ps(_mm512_sub_epi32(a8 ? _mm512_cvtepi8_epi32(qa) : _mm512_cvtepu8_epi32(qa), vza));
        __m512 fb = _mm512_cvtepi32_ps(_mm512_sub_epi32(b8 ? _mm512_cvtepi8_epi32(qb) : _mm512_cvtepu8_epi32(qb), vzb));
        __m512 v = _mm512_add_ps(_mm512_mul_ps(fa, vra), _mm512_mul_ps(fb, vrb));
        v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
        _mm512_mask_cvtepi32_storeu_epi8((int8_t *)y + i, k, _mm512_add_epi32(_mm512_cvtps_epi32(v), vzy));
    }
}

static int have_avx512bw(void);

void cpu_qlinear_add(const void *a, int a8, int32_t za, float ra, const void *b, int b8, int32_t zb, float rb, void *y,
                     int y8, int32_t zy, int64_t n) {
    if (have_avx512bw()) {
        qadd_avx512(a, a8, za, ra, b, b8, zb, rb, y, y8, zy, n);
        return;
    }
    float lo = (y8 ? -128.0f : 0.0f) - (float)zy, hi = (y8 ? 127.0f : 255.0f) - (float)zy;
    for (int64_t i = 0; i < n; i++) {
        int32_t qa = a8 ? ((const int8_t *)a)[i] : ((const uint8_t *)a)[i];
        int32_t qb = b8 ? ((const int8_t *)b)[i] : ((const uint8_t *)b)[i];
        float v = (float)(qa - za) * ra + (float)(qb - zb) * rb;
        v = v < lo ? lo : v > hi ? hi : v;
        ((int8_t *)y)[i] = (int8_t)((int32_t)nearbyintf(v) + zy);
    }
}

static int have_avx512bw(void) {
    static int v = -1;
    if (v < 0) v = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    return v;
}

int cpu_quantize_f32_8(const float *x, void *y, int64_t n, float scale, int32_t zp, int s8) {
    if (!have_avx512bw()) return 0;
    quant_avx512(x, y, n, scale, zp, s8);
    return 1;
}

int cpu_dequantize_8_f32(const void *x, float *y, int64_t n, float scale, int32_t zp, int s8) {
    if (!have_avx512bw()) return 0;
    dequant_avx512(x, y, n, scale, zp, s8);
    return 1;
}

#ifdef NETRUN_CPU_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>

static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static void engine_init(void) { g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0); }
static int engine_ok(void) {
    pthread_once(&g_engine_once, engine_init);
    return g_engine_status == dnnl_success;
}

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

static const char *cpu_dnnl_impl_name(const_dnnl_primitive_desc_t pd) {
    const char *impl = "";
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl)) return "";
    return impl;
}

/* One constant scalar or vector input: its data, or NULL. */
static const void *const_in(const netrun_node_desc *nd, int i, int64_t *count) {
    if (i >= nd->n_inputs || nd->inputs[i].rank < 0 || !nd->inputs[i].const_data) return NULL;
    int64_t c = 1;
    for (int d = 0; d < nd->inputs[i].rank; d++) c *= nd->inputs[i].dims[d];
    *count = c;
    return nd->inputs[i].const_data;
}

static int32_t zp_value(const void *p, netrun_dtype t) {
    return t == NETRUN_DTYPE_INT8 ? *(const int8_t *)p : *(const uint8_t *)p;
}

static dnnl_data_type_t dnnl_8(netrun_dtype t) { return t == NETRUN_DTYPE_INT8 ? dnnl_s8 : dnnl_u8; }

/* ---- QLinearConv ---- */
typedef struct qband {
    dnnl_primitive_t conv;
    dnnl_stream_t stream;
    dnnl_memory_t m_x, m_w, m_b, m_y, m_sp, m_zp; /* m_zp: a run-time x_zero_point */
    void *w;                 /* the weights in the primitive's layout (band 0's when the layout is the same) */
    int w_shared;            /* w belongs to band 0 */
    size_t sp_off, sp_bytes; /* its scratchpad in the workspace (concurrent bands: never the library's own) */
    int64_t r0, r1, lo;      /* output rows [r0, r1); first input row read */
    int64_t i0, ni;          /* images [i0, i0 + ni) (one primitive for ni images), or all images one by one (ni 0) */
} qband;

typedef struct qconv {
    int src_nhwc, dst_nhwc, n_bands;
    int ysize; /* bytes per Y element: 1, or 4 for ConvInteger's int32 */
    dnnl_memory_desc_t wmd; /* band 0's weight layout */
    int xzp_at_run; /* ConvInteger: x_zero_point read from the inputs at each run */
    int flat; /* 1x1 kernel on 1x1 planes (a Gemm): the images are run as the columns of one [1, C, 1, n] image */
    int res;  /* the residual form: Z (input 9) copied into Y, the sum post-op adds it */
    int64_t n, c, h, w, m, ho, wo;
    size_t x_bytes, y_bytes, ws_bytes;
    char impl[64];
    qband b[];
} qconv;

void cpu_qconv_destroy(void *state) {
    qconv *s = state;
    if (!s) return;
    for (int k = 0; k < s->n_bands; k++) {
        qband *q = &s->b[k];
        if (q->conv) dnnl_primitive_destroy(q->conv);
        dnnl_memory_t mems[] = {q->m_x, q->m_w, q->m_b, q->m_y, q->m_sp, q->m_zp};
        for (int i = 0; i < 6; i++)
            if (mems[i]) dnnl_memory_destroy(mems[i]);
        if (q->stream) dnnl_stream_destroy(q->stream);
        if (!q->w_shared) cpu_free(q->w);
    }
    cpu_free(s);
}

void cpu_qconv_describe_state(const void *state, char *buf, size_t size) {
    const qconv *s = state;
    snprintf(buf, size, "oneDNN int8 %s%s%s%s", s->res ? "+ residual " : "", s->impl,
             s->src_nhwc ? " (NHWC in)" : " (reorders X)", s->dst_nhwc ? " (NHWC out)" : " (reorders Y)");
}

typedef struct qconv_desc {
    const netrun_conv_params *p;
    netrun_dtype xt, yt;
    const int8_t *w;        /* int8 weights [M, C/g, kh, kw] */
    const int32_t *bias;    /* or NULL */
    const float *scales;    /* per output channel */
    int32_t xzp, yzp;
    int64_t kh, kw;
    int xzp_at_run;         /* ConvInteger: x_zero_point computed at run time (DynamicQuantizeLinear's) */
    /* the residual form (res): q's bounds less y_zero_point, y_scale / sum_scale, z_scale / sum_scale, Z's type */
    int res;
    float q_lo, q_hi, ratio_q, ratio_z, beta;
    netrun_dtype zt;
} qconv_desc;

/* AMX pays for its tile setup on large products only: small convs (MobileNetV2's, depthwise ones) ran faster
 * on the VNNI kernels (MobileNetV2 QDQ, 1 thread, CPU time per run: 3.5 ms with AMX everywhere, 3.0-3.2 with
 * VNNI only), large ones slower (ResNet-50: 15.7 ms with AMX, 24.6 with VNNI only). Below this many
 * multiply-adds per band, a non-AMX kernel is taken when oneDNN has one (NETRUN_INT8_AMX_MIN_MACS: A/B). */
static double amx_min_macs(void) {
    static double v = -1;
    if (v < 0) {
        const char *e = getenv("NETRUN_INT8_AMX_MIN_MACS");
        v = e ? atof(e) : 16e6;
    }
    return v;
}

static double band_macs(const qconv *s, const qband *q, const qconv_desc *d) {
    int64_t g = d->p->group > 0 ? d->p->group : 1;
    return (double)(q->ni ? q->ni : s->n) * (double)(q->r1 - q->r0) * (double)s->wo * (double)s->m *
           (double)(s->c / g) * (double)(d->kh * d->kw);
}

/* The first implementation oneDNN offers that is not its reference loops (not AMX when avoid_amx and another
 * exists), or NULL. */
static dnnl_primitive_desc_t pick_impl(const dnnl_convolution_desc_t *cd, const_dnnl_primitive_attr_t attr,
                                       int avoid_amx) {
    dnnl_primitive_desc_iterator_t it = NULL;
    dnnl_primitive_desc_t best = NULL;
    if (dnnl_primitive_desc_iterator_create(&it, cd, attr, g_engine, NULL)) return NULL;
    do {
        dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
        const char *impl = "";
        if (!pd) break;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) || !strncmp(impl, "ref", 3)) {
            dnnl_primitive_desc_destroy(pd);
            continue;
        }
        int amx = strstr(impl, "amx") != NULL;
        if (!best) best = pd;
        else if (avoid_amx && amx == 0 && strstr(cpu_dnnl_impl_name(best), "amx")) {
            dnnl_primitive_desc_destroy(best);
            best = pd;
        } else
            dnnl_primitive_desc_destroy(pd);
        if (!avoid_amx || !strstr(cpu_dnnl_impl_name(best), "amx")) break;
    } while (!dnnl_primitive_desc_iterator_next(it));
    dnnl_primitive_desc_iterator_destroy(it);
    return best;
}

/* Build band q. 1: built; 0: oneDNN declines (reference loops only, or an unsupported case). */
static int build_band(qconv *s, qband *q, const qconv_desc *d, netrun_status *rc) {
    const netrun_conv_params *p = d->p;
    int64_t sh = p->strides[0], dh = p->dilations[0], ext = (d->kh - 1) * dh;
    int64_t first = q->r0 * sh - p->pads_begin[0], last = (q->r1 - 1) * sh - p->pads_begin[0] + ext;
    int64_t lo = first < 0 ? 0 : first, hi = last > s->h - 1 ? s->h - 1 : last;
    if (hi < lo) return 0;
    int whole = q->ni > 1; /* several whole images: X's image stride is the full height's, so no rows are cut */
    if (whole) lo = 0, hi = s->h - 1;
    q->lo = lo;
    int64_t g = p->group, mg = s->m / g, cg = s->c / g;
    int64_t ni = q->ni ? q->ni : 1;
    dnnl_dims_t xd = {ni, s->c, hi - lo + 1, s->w}, yd = {ni, s->m, q->r1 - q->r0, s->wo}, bd = {s->m};
    dnnl_dims_t st = {sh, p->strides[1]}, dl = {dh - 1, p->dilations[1] - 1};
    if (s->flat) { /* same bytes: n images of C values = one row of n pixels */
        xd[0] = yd[0] = 1;
        xd[3] = yd[3] = ni;
        st[0] = st[1] = 1;
    }
    dnnl_dims_t pl = {lo - first, p->pads_begin[1]}, pr = {whole ? p->pads_end[0] : last - hi, p->pads_end[1]};
    dnnl_dims_t wd5 = {g, mg, cg, d->kh, d->kw}, wd4 = {s->m, cg, d->kh, d->kw};
    dnnl_memory_desc_t xm, ym, wm, wany, bm, zm;
    static const int32_t rt_zp = DNNL_RUNTIME_S32_VAL;
    dnnl_dims_t zd = {1};
    if (dnnl_memory_desc_init_by_tag(&zm, 1, zd, dnnl_s32, dnnl_a)) return 0;
    int grouped = g > 1;
    if (dnnl_memory_desc_init_by_tag(&xm, 4, xd, dnnl_8(d->xt), dnnl_acdb) ||
        dnnl_memory_desc_init_by_tag(&ym, 4, yd, d->yt == NETRUN_DTYPE_INT32 ? dnnl_s32 : dnnl_8(d->yt), dnnl_acdb) ||
        dnnl_memory_desc_init_by_tag(&bm, 1, bd, dnnl_s32, dnnl_a) ||
        dnnl_memory_desc_init_by_tag(&wm, grouped ? 5 : 4, grouped ? wd5 : wd4, dnnl_s8, grouped ? dnnl_abcde : dnnl_abcd) ||
        dnnl_memory_desc_init_by_tag(&wany, grouped ? 5 : 4, grouped ? wd5 : wd4, dnnl_s8, dnnl_format_tag_any))
        return 0;
    dnnl_convolution_desc_t cd;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &xm, &wany,
                                                   d->bias ? &bm : NULL, &ym, st, dl, pl, pr))
        return 0;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_post_ops_t po = NULL;
    const char *impl = "";
    int ok = 0;
    if (d->res && (dnnl_post_ops_create(&po) ||
                   dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f) ||
                   dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, d->q_lo, d->q_hi) ||
                   dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, d->ratio_q, d->beta) ||
                   dnnl_post_ops_append_sum_v2(po, d->ratio_z, dnnl_8(d->zt))))
        goto out;
    if (dnnl_primitive_attr_create(&attr) || dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ||
        (po && dnnl_primitive_attr_set_post_ops(attr, po)) ||
        (d->scales && dnnl_primitive_attr_set_output_scales(attr, s->m, 1 << 1, d->scales)) ||
        (d->xzp_at_run && dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &rt_zp)) ||
        (d->xzp && !d->xzp_at_run && dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &d->xzp)) ||
        (d->yzp && dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &d->yzp)) ||
        !(pd = pick_impl(&cd, attr, band_macs(s, q, d) < amx_min_macs())) ||
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) || !strncmp(impl, "ref", 3))
        goto out;
    snprintf(s->impl, sizeof s->impl, "%s", impl);
    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *qsp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    q->sp_bytes = qsp ? round64(dnnl_memory_desc_get_size(qsp)) : 0;
    /* the bands' primitives differ in their rows only: where they pick band 0's weight layout, they share its
     * weights (ResNet-50 int8 at 2 threads: one copy of the 25 MB instead of two) */
    if (q != &s->b[0] && s->b[0].w && dnnl_memory_desc_equal(qw, &s->wmd)) {
        q->w = s->b[0].w;
        q->w_shared = 1;
    }
    if (q == &s->b[0]) s->wmd = *qw;
    dnnl_memory_t m_wp = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r_w = NULL;
    if (dnnl_stream_create(&q->stream, g_engine, dnnl_stream_default_flags) || dnnl_primitive_create(&q->conv, pd) ||
        (!q->w && !(q->w = cpu_alloc(dnnl_memory_desc_get_size(qw)))) ||
        dnnl_memory_create(&q->m_x, &xm, g_engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&q->m_y, &ym, g_engine, DNNL_MEMORY_NONE) ||
        (q->sp_bytes && dnnl_memory_create(&q->m_sp, qsp, g_engine, DNNL_MEMORY_NONE)) ||
        (d->xzp_at_run && dnnl_memory_create(&q->m_zp, &zm, g_engine, DNNL_MEMORY_NONE)) ||
        dnnl_memory_create(&q->m_w, qw, g_engine, q->w) ||
        (d->bias && dnnl_memory_create(&q->m_b, &bm, g_engine, (void *)d->bias)) ||
        dnnl_memory_create(&m_wp, &wm, g_engine, (void *)d->w) ||
        dnnl_reorder_primitive_desc_create(&rpd, &wm, g_engine, qw, g_engine, NULL) ||
        dnnl_primitive_create(&r_w, rpd)) {
        *rc = cpu_host->error(NETRUN_ERR_BACKEND, "QLinearConv (oneDNN %s): cannot build the primitive", impl);
    } else if (q->w_shared)
        ok = 1;
    else {
        dnnl_exec_arg_t wa[] = {{DNNL_ARG_FROM, m_wp}, {DNNL_ARG_TO, q->m_w}};
        if (dnnl_primitive_execute(r_w, q->stream, 2, wa) || dnnl_stream_wait(q->stream))
            *rc = cpu_host->error(NETRUN_ERR_BACKEND, "QLinearConv (oneDNN %s): weight reorder failed", impl);
        else
            ok = 1;
    }
    if (r_w) dnnl_primitive_destroy(r_w);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (m_wp) dnnl_memory_destroy(m_wp);
out:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    return ok;
}

/* The bands of a convolution of d over dims {n, c, h, w, m, ho, wo}: *out NULL when oneDNN declines. */
static netrun_status qconv_build(cpu_context *ctx, const qconv_desc *d, const int64_t *dims, int src_nhwc,
                                 int dst_nhwc, int flat, qconv **out) {
    *out = NULL;
    /* one band per thread: whole images when there are enough (a Gemm as a 1x1 conv: one image per row), else
     * rows of each image */
    int64_t ho = dims[5], nimg = dims[0], threads = ctx->threads > 0 ? ctx->threads : 1, bands = threads;
    if (bands > 64) bands = 64;
    int by_image = nimg >= bands;
    if (!by_image && bands > ho) bands = ho;
    qconv *s = cpu_alloc(sizeof *s + (size_t)bands * sizeof(qband));
    netrun_status rc = NETRUN_OK;
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "QLinearConv: out of memory");
    memset(s, 0, sizeof *s + (size_t)bands * sizeof(qband));
    s->flat = flat;
    s->res = d->res;
    s->src_nhwc = src_nhwc;
    s->dst_nhwc = dst_nhwc;
    s->n = dims[0], s->c = dims[1], s->h = dims[2], s->w = dims[3], s->m = dims[4], s->ho = ho, s->wo = dims[6];
    int prev = omp_get_max_threads();
    omp_set_num_threads(1);
    for (int64_t k = 0; k < bands; k++) {
        qband *q = &s->b[k];
        q->r0 = by_image ? 0 : ho * k / bands;
        q->r1 = by_image ? ho : ho * (k + 1) / bands;
        q->i0 = by_image ? nimg * k / bands : 0;
        q->ni = by_image ? nimg * (k + 1) / bands - q->i0 : 0;
        s->n_bands = (int)k + 1;
        if (!build_band(s, q, d, &rc)) {
            cpu_qconv_destroy(s);
            omp_set_num_threads(prev);
            return rc;
        }
    }
    omp_set_num_threads(prev);
    s->x_bytes = s->src_nhwc ? 0 : round64((size_t)(s->n * s->c * s->h * s->w));
    s->ysize = d->yt == NETRUN_DTYPE_INT32 ? 4 : 1;
    s->y_bytes = s->dst_nhwc ? 0 : round64((size_t)(s->n * s->m * s->ho * s->wo * s->ysize));
    s->ws_bytes = s->x_bytes + s->y_bytes;
    for (int k = 0; k < s->n_bands; k++) {
        s->b[k].sp_off = s->ws_bytes;
        s->ws_bytes += s->b[k].sp_bytes;
    }
    s->ws_bytes += 64;
    *out = s;
    return NETRUN_OK;
}

netrun_status cpu_qconv_create(cpu_context *ctx, const netrun_node_desc *nd, void **state, size_t *workspace) {
    *state = NULL;
    *workspace = 0;
    const netrun_conv_params *p = nd->params;
    if (!engine_ok() || !p || p->n_spatial != 2 || nd->n_inputs < 8 || nd->n_outputs < 1) return NETRUN_OK;
    const netrun_value_desc *x = &nd->inputs[0], *w = &nd->inputs[3], *y = &nd->outputs[0];
    if (x->rank != 4 || w->rank != 4 || y->rank != 4 || p->group < 1) return NETRUN_OK;
    for (int i = 0; i < 4; i++)
        if (x->dims[i] < 1 || y->dims[i] < 1 || w->dims[i] < 1) return NETRUN_OK;
    int64_t m = w->dims[0], nxs = 0, nws = 0, nys = 0, nxz = 0, nwz = 0, nyz = 0, nb = 0, nw = 0;
    const float *xs = const_in(nd, 1, &nxs), *ws = const_in(nd, 4, &nws), *ys = const_in(nd, 6, &nys);
    const void *xz = const_in(nd, 2, &nxz), *wz = const_in(nd, 5, &nwz), *yz = const_in(nd, 7, &nyz);
    const void *wq = const_in(nd, 3, &nw);
    const int32_t *bias = p->has_bias && nd->n_inputs > 8 ? const_in(nd, 8, &nb) : NULL;
    if (nd->inputs[1].dtype != NETRUN_DTYPE_FLOAT || nd->inputs[4].dtype != NETRUN_DTYPE_FLOAT ||
        nd->inputs[6].dtype != NETRUN_DTYPE_FLOAT)
        return NETRUN_OK;
    if (!xs || !ws || !ys || !xz || !wz || !yz || !wq || (p->has_bias && !bias) || nxs != 1 || nys != 1 ||
        nxz != 1 || nyz != 1 || (nws != 1 && nws != m) || (nwz != 1 && nwz != m) || (bias && nb != m))
        return NETRUN_OK;
    /* weights as int8 with zero point 0: int8 with zero points 0, or uint8 with zero points 128 */
    int w_u8 = w->dtype == NETRUN_DTYPE_UINT8;
    for (int64_t i = 0; i < nwz; i++)
        if (zp_value((const char *)wz + i, w->dtype) != (w_u8 ? 128 : 0)) return NETRUN_OK;
    qconv_desc d = {p, x->dtype, y->dtype, wq, bias, NULL, zp_value(xz, x->dtype), zp_value(yz, y->dtype),
                    w->dims[2], w->dims[3]};
    float *scales = cpu_alloc((size_t)m * sizeof(float));
    int8_t *wshift = w_u8 ? cpu_alloc((size_t)nw) : NULL;
    if (!scales || (w_u8 && !wshift)) {
        cpu_free(scales);
        cpu_free(wshift);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "QLinearConv: out of memory");
    }
    if (p->has_sum) { /* the residual form: Y in sum_zero_point's type, q (y_scale, y_zero_point) inside */
        int64_t nzs = 0, nzz = 0, nss = 0, nsz = 0;
        const float *zs = const_in(nd, 10, &nzs), *ss = const_in(nd, 12, &nss);
        const void *zz = const_in(nd, 11, &nzz), *sz = const_in(nd, 13, &nsz);
        if (nd->n_inputs != 14 || !zs || !ss || !zz || !sz || nzs != 1 || nss != 1 || nzz != 1 || nsz != 1 ||
            nd->inputs[10].dtype != NETRUN_DTYPE_FLOAT || nd->inputs[12].dtype != NETRUN_DTYPE_FLOAT) {
            cpu_free(scales);
            cpu_free(wshift);
            return NETRUN_OK;
        }
        netrun_dtype qt = nd->inputs[7].dtype;
        int32_t yzp = zp_value(yz, qt), zzp = zp_value(zz, nd->inputs[9].dtype);
        d.res = 1;
        d.zt = nd->inputs[9].dtype;
        d.q_lo = (float)((qt == NETRUN_DTYPE_INT8 ? -128 : 0) - yzp);
        d.q_hi = (float)((qt == NETRUN_DTYPE_INT8 ? 127 : 255) - yzp);
        d.ratio_q = ys[0] / ss[0];
        d.ratio_z = zs[0] / ss[0];
        d.beta = -(float)zzp * d.ratio_z;
        d.yzp = zp_value(sz, y->dtype);
    }
    for (int64_t i = 0; i < m; i++) scales[i] = xs[0] * ws[nws == 1 ? 0 : i] / ys[0];
    for (int64_t i = 0; w_u8 && i < nw; i++) wshift[i] = (int8_t)(((const uint8_t *)wq)[i] ^ 0x80);
    if (w_u8) d.w = wshift;
    d.scales = scales;
    int64_t dims[7] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3], m, y->dims[2], y->dims[3]};
    int flat = x->dims[2] * x->dims[3] == 1 && y->dims[2] * y->dims[3] == 1 && w->dims[2] * w->dims[3] == 1 &&
               !p->pads_begin[0] && !p->pads_begin[1] && !p->pads_end[0] && !p->pads_end[1] && p->group == 1;
    qconv *s = NULL;
    netrun_status rc = qconv_build(ctx, &d, dims, p->src_nhwc || x->dims[2] * x->dims[3] == 1, /* one pixel: */
                                   p->dst_nhwc || y->dims[2] * y->dims[3] == 1, flat && !d.res, &s); /* NCHW is NHWC */
    cpu_free(scales);
    cpu_free(wshift);
    if (!s) return rc;
    *state = s;
    *workspace = s->ws_bytes;
    return NETRUN_OK;
}

typedef struct qconv_job {
    qconv *s;
    const uint8_t *x;
    uint8_t *y, *base;
    int32_t xzp;             /* a run-time x_zero_point */
    dnnl_status_t st[64];
} qconv_job;

static void band_range(void *arg, int64_t b, int64_t e) {
    qconv_job *j = arg;
    qconv *s = j->s;
    omp_set_num_threads(1); /* a pool worker: its own ICV */
    for (int64_t k = b; k < e; k++) {
        qband *q = &s->b[k];
        dnnl_status_t st = dnnl_success;
        for (int64_t img = q->ni ? q->i0 : 0; img < (q->ni ? q->i0 + 1 : s->n) && !st; img++) {
            const uint8_t *x = j->x + (img * s->h + q->lo) * s->w * s->c;
            uint8_t *y = j->y + (img * s->ho + q->r0) * s->wo * s->m * s->ysize;
            st = dnnl_memory_set_data_handle(q->m_x, (void *)x);
            if (!st) st = dnnl_memory_set_data_handle(q->m_y, y);
            if (!st && q->m_sp) st = dnnl_memory_set_data_handle(q->m_sp, j->base + q->sp_off);
            if (!st && q->m_zp) st = dnnl_memory_set_data_handle(q->m_zp, &j->xzp);
            dnnl_exec_arg_t a[6] = {{DNNL_ARG_SRC, q->m_x}, {DNNL_ARG_WEIGHTS, q->m_w}, {DNNL_ARG_DST, q->m_y}};
            int na = 3;
            if (q->m_zp) a[na++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, q->m_zp};
            if (q->m_b) a[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, q->m_b};
            if (q->m_sp) a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, q->m_sp};
            if (!st) st = dnnl_primitive_execute(q->conv, q->stream, na, a);
            if (!st) st = dnnl_stream_wait(q->stream);
        }
        j->st[k] = st;
    }
}

/* Run the bands of s on X (NCHW unless src_nhwc) into Y; base: the 64-aligned workspace. */
static netrun_status qconv_exec(cpu_context *ctx, qconv *s, const uint8_t *x, uint8_t *y, uint8_t *base, int32_t xzp,
                                const uint8_t *z) {
    qconv_job j = {s, x, s->dst_nhwc ? y : base + s->x_bytes, base, xzp, {0}};
    if (s->res && s->dst_nhwc && z != j.y) /* the sum post-op adds what Y holds; Z has Y's layout */
        memcpy(j.y, z, (size_t)(s->n * s->m * s->ho * s->wo));
    else if (s->res && !s->dst_nhwc)
        cpu_u8_to_nhwc(ctx, z, j.y, s->n, s->m, s->ho * s->wo);
    if (!s->src_nhwc) {
        cpu_u8_to_nhwc(ctx, x, base, s->n, s->c, s->h * s->w);
        j.x = base;
    }
    int prev = omp_get_max_threads();
    omp_set_num_threads(1);
    if (s->n_bands > 1) cpu_parallel_for(ctx, s->n_bands, 1, band_range, &j);
    else band_range(&j, 0, 1);
    omp_set_num_threads(prev);
    for (int k = 0; k < s->n_bands; k++)
        if (j.st[k])
            return cpu_host->error(NETRUN_ERR_BACKEND, "QLinearConv (oneDNN %s): execution failed (status %d)", s->impl,
                                   (int)j.st[k]);
    if (!s->dst_nhwc && s->ysize == 4) transpose32(ctx, (const int32_t *)j.y, (int32_t *)y, s->n, s->m, s->ho * s->wo);
    else if (!s->dst_nhwc) cpu_u8_to_nchw(ctx, j.y, y, s->n, s->m, s->ho * s->wo);
    return NETRUN_OK;
}

/* Whether the run's X and Y have the shapes the convolution was built for (else the caller's direct loops run). */
static int qconv_shapes_match(const qconv *s, const netrun_tensor *x, const netrun_tensor *y) {
    return x->dims[0] == s->n && x->dims[1] == s->c && x->dims[2] == s->h && x->dims[3] == s->w &&
           y->dims[2] == s->ho && y->dims[3] == s->wo;
}

/* The workspace at a 64-byte boundary (the runtime hands it out aligned, so this changes nothing there). */
static uint8_t *ws_base(const netrun_kernel_args *args) {
    return (uint8_t *)(((uintptr_t)args->workspace + 63) & ~(uintptr_t)63);
}

netrun_status cpu_qconv_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done) {
    qconv *s = state;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    *done = 0;
    if (!qconv_shapes_match(s, x, y)) return NETRUN_OK;
    if (!args->workspace || args->workspace_size < s->ws_bytes)
        return cpu_host->error(NETRUN_ERR_BACKEND, "QLinearConv (oneDNN): workspace missing at run");
    uint8_t *base = ws_base(args);
    if (s->res && (args->n_inputs != 14 || cpu_count(&args->inputs[9]) != cpu_count(y))) return NETRUN_OK;
    netrun_status st = qconv_exec(ctx, s, x->data, y->data, base, 0, s->res ? args->inputs[9].data : NULL);
    *done = st == NETRUN_OK;
    return st;
}

/* ---- ConvInteger: the same convolution with an int32 Y, no multiplier ---- */
netrun_status cpu_convi_create(cpu_context *ctx, const netrun_node_desc *nd, void **state, size_t *workspace) {
    *state = NULL;
    *workspace = 0;
    const netrun_conv_params *p = nd->params;
    if (!engine_ok() || !p || p->n_spatial != 2 || nd->n_inputs < 2 || nd->n_outputs < 1) return NETRUN_OK;
    const netrun_value_desc *x = &nd->inputs[0], *w = &nd->inputs[1], *y = &nd->outputs[0];
    if (x->rank != 4 || w->rank != 4 || y->rank != 4 || p->group < 1 || y->dtype != NETRUN_DTYPE_INT32) return NETRUN_OK;
    for (int i = 0; i < 4; i++)
        if (x->dims[i] < 1 || y->dims[i] < 1 || w->dims[i] < 1) return NETRUN_OK;
    int64_t m = w->dims[0], nxz = 1, nwz = 1, nw = 0;
    int has_xz = nd->n_inputs > 2 && nd->inputs[2].rank >= 0, has_wz = nd->n_inputs > 3 && nd->inputs[3].rank >= 0;
    const void *xz = has_xz ? const_in(nd, 2, &nxz) : NULL, *wz = has_wz ? const_in(nd, 3, &nwz) : NULL;
    const void *wq = const_in(nd, 1, &nw);
    int64_t xz_count = 1;
    for (int i = 0; has_xz && i < nd->inputs[2].rank; i++) xz_count *= nd->inputs[2].dims[i];
    if (!wq || xz_count != 1 || (has_wz && (!wz || (nwz != 1 && nwz != m)))) return NETRUN_OK;
    int w_u8 = w->dtype == NETRUN_DTYPE_UINT8; /* as int8 with zero point 0: uint8 needs zero points 128 */
    if (w_u8 && !wz) return NETRUN_OK;
    for (int64_t i = 0; wz && i < nwz; i++)
        if (zp_value((const char *)wz + i, w->dtype) != (w_u8 ? 128 : 0)) return NETRUN_OK;
    qconv_desc d = {p, x->dtype, NETRUN_DTYPE_INT32, wq, NULL, NULL, xz ? zp_value(xz, x->dtype) : 0, 0,
                    w->dims[2], w->dims[3], has_xz && !xz};
    int8_t *wshift = w_u8 ? cpu_alloc((size_t)nw) : NULL;
    if (w_u8 && !wshift) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "ConvInteger: out of memory");
    for (int64_t i = 0; w_u8 && i < nw; i++) wshift[i] = (int8_t)(((const uint8_t *)wq)[i] ^ 0x80);
    if (w_u8) d.w = wshift;
    int64_t dims[7] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3], m, y->dims[2], y->dims[3]};
    int flat = x->dims[2] * x->dims[3] == 1 && y->dims[2] * y->dims[3] == 1 && w->dims[2] * w->dims[3] == 1 &&
               !p->pads_begin[0] && !p->pads_begin[1] && !p->pads_end[0] && !p->pads_end[1] && p->group == 1;
    qconv *s = NULL;
    netrun_status rc = qconv_build(ctx, &d, dims, flat, flat, flat, &s);
    cpu_free(wshift);
    if (!s) return rc;
    s->xzp_at_run = d.xzp_at_run;
    *state = s;
    *workspace = s->ws_bytes;
    return NETRUN_OK;
}

netrun_status cpu_convi_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done) {
    qconv *s = state;
    const netrun_tensor *x = &args->inputs[0];
    netrun_tensor *y = &args->outputs[0];
    *done = 0;
    if (!qconv_shapes_match(s, x, y)) return NETRUN_OK;
    int32_t xzp = 0;
    if (s->xzp_at_run) {
        const netrun_tensor *z = &args->inputs[2];
        if (cpu_count(z) != 1) return NETRUN_OK;
        xzp = zp_value(z->data, z->dtype);
    }
    if (!args->workspace || args->workspace_size < s->ws_bytes)
        return cpu_host->error(NETRUN_ERR_BACKEND, "ConvInteger (oneDNN): workspace missing at run");
    uint8_t *base = ws_base(args);
    netrun_status st = qconv_exec(ctx, s, x->data, y->data, base, xzp, NULL);
    *done = st == NETRUN_OK;
    return st;
}

/* ---- QLinearMatMul ---- */
typedef struct qmm {
    netrun_dtype at, bt, yt;
    int64_t k, n;            /* A [..., M, K] x B [K, N] (or batches of B with A's batch dims) */
    int batched;             /* B has A's batch dims (no broadcast) */
    int8_t *bconst;          /* a constant B as int8 (shifted from uint8), or NULL */
    int32_t ao, bo, yzp;     /* zero points (bo after the shift) */
    float *mult;             /* per column (or one) */
    int per_col;
    double lo, hi;
    int64_t rows, m, bcount; /* rows of A (all batches), rows per matrix, elements of B */
    size_t b_bytes;          /* workspace for a uint8 B moved to int8 at run */
    int integer;             /* MatMulInteger: the int32 sums are the output (B is input 1, not 3) */
    int ao_at_run;           /* MatMulInteger: a_zero_point computed at run time (DynamicQuantizeLinear's) */
    qconv *conv;             /* a constant 2-D B: the product as a 1x1 int8 convolution over the rows of A (AMX) */
} qmm;

void cpu_qmm_destroy(void *state) {
    qmm *s = state;
    if (!s) return;
    cpu_free(s->bconst);
    cpu_free(s->mult);
    cpu_qconv_destroy(s->conv);
    cpu_free(s);
}

void cpu_qmm_describe_state(const void *state, char *buf, size_t size) {
    const qmm *s = state;
    if (s->conv)
        snprintf(buf, size, "oneDNN int8 1x1 conv over the rows %s", s->conv->impl);
    else
        snprintf(buf, size, "oneDNN gemm %s", s->at == NETRUN_DTYPE_UINT8 ? "u8s8s32" : "s8s8s32");
}

netrun_status cpu_qmm_create(cpu_context *ctx, const netrun_node_desc *nd, void **state, size_t *workspace) {
    *state = NULL;
    *workspace = 0;
    if (!engine_ok() || nd->n_inputs < 8 || nd->n_outputs < 1) return NETRUN_OK;
    const netrun_value_desc *a = &nd->inputs[0], *b = &nd->inputs[3], *y = &nd->outputs[0];
    if (a->rank < 2 || (b->rank != 2 && b->rank != a->rank)) return NETRUN_OK;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] < 0 || (i < b->rank && b->dims[i] < 0)) return NETRUN_OK;
    int batched = b->rank > 2;
    for (int i = 0; batched && i < a->rank - 2; i++)
        if (a->dims[i] != b->dims[i]) return NETRUN_OK;
    int64_t k = a->dims[a->rank - 1], n = b->dims[b->rank - 1], nas = 0, nbs = 0, nys = 0, naz = 0, nbz = 0, nyz = 0, nbq = 0;
    if (b->dims[b->rank - 2] != k) return NETRUN_OK;
    const float *as = const_in(nd, 1, &nas), *bs = const_in(nd, 4, &nbs), *ys = const_in(nd, 6, &nys);
    const void *az = const_in(nd, 2, &naz), *bz = const_in(nd, 5, &nbz), *yz = const_in(nd, 7, &nyz);
    const void *bq = const_in(nd, 3, &nbq);
    if (nd->inputs[1].dtype != NETRUN_DTYPE_FLOAT || nd->inputs[4].dtype != NETRUN_DTYPE_FLOAT ||
        nd->inputs[6].dtype != NETRUN_DTYPE_FLOAT)
        return NETRUN_OK;
    if (!as || !bs || !ys || !az || !bz || !yz || nas != 1 || nys != 1 || naz != 1 || nyz != 1 ||
        (nbz != 1 && nbz != n) || (nbs != 1 && (nbs != n || batched)))
        return NETRUN_OK;
    for (int64_t i = 1; i < nbz; i++) /* a per-column zero point (quantizers write zeros) must be one value */
        if (zp_value((const char *)bz + i, b->dtype) != zp_value(bz, b->dtype)) return NETRUN_OK;
    qmm *s = cpu_alloc(sizeof *s);
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "QLinearMatMul: out of memory");
    memset(s, 0, sizeof *s);
    s->at = a->dtype, s->bt = b->dtype, s->yt = y->dtype;
    s->k = k, s->n = n, s->batched = batched;
    s->ao = zp_value(az, a->dtype);
    s->bo = zp_value(bz, b->dtype) - (b->dtype == NETRUN_DTYPE_UINT8 ? 128 : 0);
    s->yzp = zp_value(yz, y->dtype);
    s->per_col = nbs != 1;
    s->lo = y->dtype == NETRUN_DTYPE_INT8 ? -128 : 0;
    s->hi = y->dtype == NETRUN_DTYPE_INT8 ? 127 : 255;
    if (!(s->mult = cpu_alloc((size_t)nbs * sizeof(float)))) {
        cpu_qmm_destroy(s);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "QLinearMatMul: out of memory");
    }
    for (int64_t i = 0; i < nbs; i++) s->mult[i] = as[0] * bs[i] / ys[0];
    if (bq) {
        if (!(s->bconst = cpu_alloc((size_t)nbq))) {
            cpu_qmm_destroy(s);
            return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "QLinearMatMul: out of memory");
        }
        for (int64_t i = 0; i < nbq; i++)
            s->bconst[i] = b->dtype == NETRUN_DTYPE_UINT8 ? (int8_t)(((const uint8_t *)bq)[i] ^ 0x80) : ((const int8_t *)bq)[i];
    }
    int64_t rows = 1, bcount = k * n;
    for (int i = 0; i < a->rank - 1; i++) rows *= a->dims[i];
    for (int i = 0; batched && i < b->rank - 2; i++) bcount *= b->dims[i];
    s->rows = rows;
    s->m = a->dims[a->rank - 2];
    s->b_bytes = bq || b->dtype == NETRUN_DTYPE_INT8 ? 0 : round64((size_t)bcount);
    s->bcount = bcount;
    *workspace = s->b_bytes + round64((size_t)(rows * n) * sizeof(int32_t)) + 64;
    *state = s;
    if (s->bconst && !batched && s->bo == 0) { /* Y = A B as a 1x1 conv: W = B^T [N, K, 1, 1], A's rows as pixels */
        netrun_conv_params cp;
        memset(&cp, 0, sizeof cp);
        cp.n_spatial = 2;
        cp.group = 1;
        for (int i = 0; i < 2; i++) cp.kernel[i] = cp.strides[i] = cp.dilations[i] = 1;
        int8_t *wt = cpu_alloc((size_t)(k * n));
        float *sc = cpu_alloc((size_t)n * sizeof(float));
        netrun_status rc = NETRUN_OK;
        if (!wt || !sc) rc = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "QLinearMatMul: out of memory");
        else {
            for (int64_t r = 0; r < k; r++)
                for (int64_t c = 0; c < n; c++) wt[c * k + r] = s->bconst[r * n + c];
            for (int64_t c = 0; c < n; c++) sc[c] = s->mult[s->per_col ? c : 0];
            qconv_desc d = {&cp, a->dtype, y->dtype, wt, NULL, sc, s->ao, s->yzp, 1, 1};
            int64_t dims[7] = {rows, k, 1, 1, n, 1, 1};
            rc = qconv_build(ctx, &d, dims, 1, 1, 1, &s->conv);
        }
        cpu_free(wt);
        cpu_free(sc);
        if (rc != NETRUN_OK) {
            cpu_qmm_destroy(s);
            *state = NULL;
            return rc;
        }
        if (s->conv) *workspace = s->conv->ws_bytes; /* no int32 sums of its own */
    }
    return NETRUN_OK;
}

/* y = saturate(round_half_even(acc * mult) + zp), mult per column (per_col) or one */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void requant_avx512(const int32_t *acc, const float *mult, int per_col, int32_t zp, float lo, float hi, int8_t *y,
                           int64_t n) {
    __m512 vlo = _mm512_set1_ps(lo - (float)zp), vhi = _mm512_set1_ps(hi - (float)zp), m0 = _mm512_set1_ps(mult[0]);
    __m512i vzp = _mm512_set1_epi32(zp);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k, acc + i));
        v = _mm512_mul_ps(v, per_col ? _mm512_maskz_loadu_ps(k, mult + i) : m0);
        v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi); /* integer bounds: clamping before rounding is the same */
        _mm512_mask_cvtepi32_storeu_epi8(y + i, k, _mm512_add_epi32(_mm512_cvtps_epi32(v), vzp));
    }
}

static void requant(const int32_t *acc, const float *mult, int per_col, int32_t zp, float lo, float hi, void *y,
                    int64_t n) {
    if (have_avx512bw()) {
        requant_avx512(acc, mult, per_col, zp, lo, hi, y, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float v = (float)acc[i] * mult[per_col ? i : 0];
        v = v < lo - (float)zp ? lo - (float)zp : v > hi - (float)zp ? hi - (float)zp : v;
        ((int8_t *)y)[i] = (int8_t)((int32_t)nearbyintf(v) + zp);
    }
}

typedef struct qmm_job {
    const qmm *s;
    const uint8_t *a;
    const int8_t *b;
    int32_t *c;
    uint8_t *y;
    int64_t blocks, per;     /* row blocks per matrix, rows per block */
    int64_t mats;            /* batches of B (batched) or 1 */
    int64_t mrows;           /* rows per matrix */
    dnnl_status_t st[64];
} qmm_job;

static void qmm_range(void *arg, int64_t t0, int64_t t1) {
    qmm_job *j = arg;
    const qmm *s = j->s;
    omp_set_num_threads(1);
    for (int64_t t = t0; t < t1; t++) {
        int64_t mat = t / j->blocks, r0 = (t % j->blocks) * j->per, r1 = r0 + j->per < j->mrows ? r0 + j->per : j->mrows;
        if (r1 <= r0) continue;
        int64_t row = mat * j->mrows + r0;
        const int8_t *b = j->b + (s->batched ? mat * s->k * s->n : 0);
        const int32_t zero = 0;
        dnnl_status_t st;
        if (s->at == NETRUN_DTYPE_UINT8)
            st = dnnl_gemm_u8s8s32('N', 'N', 'F', r1 - r0, s->n, s->k, 1.0f, j->a + row * s->k, s->k, (uint8_t)s->ao, b,
                                   s->n, (int8_t)s->bo, 0.0f, j->c + row * s->n, s->n, &zero);
        else
            st = dnnl_gemm_s8s8s32('N', 'N', 'F', r1 - r0, s->n, s->k, 1.0f, (const int8_t *)j->a + row * s->k, s->k,
                                   (int8_t)s->ao, b, s->n, (int8_t)s->bo, 0.0f, j->c + row * s->n, s->n, &zero);
        if (st) {
            j->st[t % 64] = st;
            continue;
        }
        for (int64_t r = row; !s->integer && r < row + (r1 - r0); r++)
            requant(j->c + r * s->n, s->mult, s->per_col, s->yzp, (float)s->lo, (float)s->hi, j->y + r * s->n, s->n);
    }
}

netrun_status cpu_qmm_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done) {
    qmm *s = state;
    const netrun_tensor *a = &args->inputs[0], *b = &args->inputs[s->integer ? 1 : 3];
    *done = 0;
    int64_t rows = 1;
    for (int i = 0; i < a->rank - 1; i++) rows *= a->dims[i];
    if (rows != s->rows || a->dims[a->rank - 1] != s->k || cpu_count(b) != s->bcount) return NETRUN_OK;
    size_t need = s->conv ? s->conv->ws_bytes : s->b_bytes + (s->integer ? 0 : (size_t)(rows * s->n) * 4);
    if (need && (!args->workspace || args->workspace_size < need))
        return cpu_host->error(NETRUN_ERR_BACKEND, "%s (oneDNN): workspace missing at run",
                               s->integer ? "MatMulInteger" : "QLinearMatMul");
    uint8_t *base = ws_base(args);
    if (s->conv) {
        netrun_status st = qconv_exec(ctx, s->conv, a->data, args->outputs[0].data, base, 0, NULL);
        *done = st == NETRUN_OK;
        return st;
    }
    const int8_t *bq = s->bconst ? s->bconst : b->data;
    if (!s->bconst && s->bt == NETRUN_DTYPE_UINT8) { /* uint8 B -> int8, zero point moved alike */
        for (int64_t i = 0; i < s->bcount; i++) ((int8_t *)base)[i] = (int8_t)(((const uint8_t *)b->data)[i] ^ 0x80);
        bq = (const int8_t *)base;
    }
    qmm run_s;
    if (s->ao_at_run) { /* one value, read now */
        const netrun_tensor *z = &args->inputs[2];
        if (cpu_count(z) != 1) return NETRUN_OK;
        run_s = *s;
        run_s.ao = zp_value(z->data, z->dtype);
        s = &run_s;
    }
    qmm_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.a = a->data;
    j.b = bq;
    j.c = s->integer ? args->outputs[0].data : (int32_t *)(base + s->b_bytes);
    j.y = args->outputs[0].data;
    j.mats = s->batched ? rows / s->m : 1;
    j.mrows = s->batched ? s->m : rows;
    int64_t threads = ctx->threads > 0 ? ctx->threads : 1;
    j.blocks = j.mats >= threads ? 1 : (threads + j.mats - 1) / j.mats;
    if (j.blocks > j.mrows) j.blocks = j.mrows;
    if (j.mrows * s->n * s->k < 65536) j.blocks = 1; /* small: one call per matrix */
    j.per = (j.mrows + j.blocks - 1) / j.blocks;
    int64_t tasks = j.mats * j.blocks;
    int prev = omp_get_max_threads();
    omp_set_num_threads(1);
    if (tasks > 1) cpu_parallel_for(ctx, tasks, 1, qmm_range, &j);
    else qmm_range(&j, 0, tasks);
    omp_set_num_threads(prev);
    for (int k = 0; k < 64; k++)
        if (j.st[k])
            return cpu_host->error(NETRUN_ERR_BACKEND, "%s (oneDNN gemm): failed (status %d)",
                                   s->integer ? "MatMulInteger" : "QLinearMatMul", (int)j.st[k]);
    *done = 1;
    return NETRUN_OK;
}

/* MatMulInteger: the same GEMM with the zero points as its offsets, the int32 sums straight into Y. */
netrun_status cpu_mmi_create(cpu_context *ctx, const netrun_node_desc *nd, void **state, size_t *workspace) {
    (void)ctx;
    *state = NULL;
    *workspace = 0;
    if (!engine_ok() || nd->n_inputs < 2 || nd->n_outputs < 1) return NETRUN_OK;
    const netrun_value_desc *a = &nd->inputs[0], *b = &nd->inputs[1];
    if (a->rank < 2 || (b->rank != 2 && b->rank != a->rank)) return NETRUN_OK;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] < 0 || (i < b->rank && b->dims[i] < 0)) return NETRUN_OK;
    int batched = b->rank > 2;
    for (int i = 0; batched && i < a->rank - 2; i++)
        if (a->dims[i] != b->dims[i]) return NETRUN_OK;
    int64_t k = a->dims[a->rank - 1], n = b->dims[b->rank - 1], naz = 1, nbz = 1, nbq = 0;
    if (b->dims[b->rank - 2] != k) return NETRUN_OK;
    int has_az = nd->n_inputs > 2 && nd->inputs[2].rank >= 0, has_bz = nd->n_inputs > 3 && nd->inputs[3].rank >= 0;
    const void *az = has_az ? const_in(nd, 2, &naz) : NULL, *bz = has_bz ? const_in(nd, 3, &nbz) : NULL;
    int64_t az_count = 1;
    for (int i = 0; has_az && i < nd->inputs[2].rank; i++) az_count *= nd->inputs[2].dims[i];
    if ((has_az && az_count != 1) || (has_bz && (!bz || (nbz != 1 && nbz != n)))) return NETRUN_OK;
    for (int64_t i = 1; bz && i < nbz; i++)
        if (zp_value((const char *)bz + i, b->dtype) != zp_value(bz, b->dtype)) return NETRUN_OK;
    const void *bq = const_in(nd, 1, &nbq);
    qmm *s = cpu_alloc(sizeof *s);
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "MatMulInteger: out of memory");
    memset(s, 0, sizeof *s);
    s->integer = 1;
    s->ao_at_run = has_az && !az;
    s->at = a->dtype, s->bt = b->dtype, s->yt = NETRUN_DTYPE_INT32;
    s->k = k, s->n = n, s->batched = batched;
    s->ao = az ? zp_value(az, a->dtype) : 0;
    s->bo = (bz ? zp_value(bz, b->dtype) : 0) - (b->dtype == NETRUN_DTYPE_UINT8 ? 128 : 0);
    int64_t rows = 1, bcount = k * n;
    for (int i = 0; i < a->rank - 1; i++) rows *= a->dims[i];
    for (int i = 0; batched && i < b->rank - 2; i++) bcount *= b->dims[i];
    s->rows = rows;
    s->m = a->dims[a->rank - 2];
    s->bcount = bcount;
    if (bq) {
        if (!(s->bconst = cpu_alloc((size_t)bcount))) {
            cpu_qmm_destroy(s);
            return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "MatMulInteger: out of memory");
        }
        for (int64_t i = 0; i < bcount; i++)
            s->bconst[i] = b->dtype == NETRUN_DTYPE_UINT8 ? (int8_t)(((const uint8_t *)bq)[i] ^ 0x80) : ((const int8_t *)bq)[i];
    }
    s->b_bytes = bq || b->dtype == NETRUN_DTYPE_INT8 ? 0 : round64((size_t)bcount);
    *workspace = s->b_bytes ? s->b_bytes + 64 : 0;
    *state = s;
    return NETRUN_OK;
}

#else /* built without oneDNN: quantize.c's loops run everything */

netrun_status cpu_convi_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)ctx, (void)node;
    *state = NULL;
    *workspace = 0;
    return NETRUN_OK;
}
netrun_status cpu_convi_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done) {
    (void)ctx, (void)state, (void)args;
    *done = 0;
    return NETRUN_OK;
}

netrun_status cpu_mmi_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)ctx, (void)node;
    *state = NULL;
    *workspace = 0;
    return NETRUN_OK;
}

netrun_status cpu_qconv_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    (void)ctx, (void)node;
    *state = NULL;
    *workspace = 0;
    return NETRUN_OK;
}
netrun_status cpu_qconv_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done) {
    (void)ctx, (void)state, (void)args;
    *done = 0;
    return NETRUN_OK;
}
void cpu_qconv_destroy(void *state) { (void)state; }
void cpu_qconv_describe_state(const void *state, char *buf, size_t size) {
    (void)state;
    snprintf(buf, size, "direct int32 convolution");
}
netrun_status cpu_qmm_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace) {
    return cpu_qconv_create(ctx, node, state, workspace);
}
netrun_status cpu_qmm_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done) {
    return cpu_qconv_run(ctx, state, args, done);
}
void cpu_qmm_destroy(void *state) { (void)state; }
void cpu_qmm_describe_state(const void *state, char *buf, size_t size) { cpu_qconv_describe_state(state, buf, size); }
#endif
