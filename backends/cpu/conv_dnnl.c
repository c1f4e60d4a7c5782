/* CPU conv through oneDNN (when built with it): the primitive picks its own blocked layout (nChw16c on
 * AVX-512, JIT-compiled for the CPU it runs on, so no -march is needed); X is reordered into it and Y back
 * out of it, inside the node. Weights are reordered once at kernel_create. Bias and the fused activation
 * (and the fused "+ Z" as a sum post-op) are applied by the primitive while the output tile is hot.
 * Threads: the output channels are cut into one slice per thread of netrun's pool, each slice its own
 * single-threaded primitive (see dnnl_slice). Scratch (blocked X and Y, the scratchpads) lives in the
 * runtime's workspace; nothing is allocated on the run path by this file. */
/* gu_act_n's compare-and-select activations (gemm_util.h) vectorize only without trapping math: netrun never
 * enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "conv_dnnl.h"

#include <stdio.h>

#ifdef NETRUN_CPU_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "gemm_util.h"

static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
/* NETRUN_CPU_DNNL in the environment, for A/B measurements and bug isolation: 0 turns the oneDNN path off,
 * "all" also gives it the 1x1 and depthwise convs the other paths normally take. */
static int g_all;
static void engine_init(void) {
    const char *e = getenv("NETRUN_CPU_DNNL");
    if (e && !strcmp(e, "0")) return;
    g_all = e && !strcmp(e, "all");
    g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
}

/* One primitive per slice of output channels: with T threads the conv is cut into up to T slices (multiples
 * of 16 channels), each run single-threaded by one thread of netrun's pool. No OpenMP team is ever started,
 * so --threads N is exactly N threads and no second pool spins on the cores (an OpenMP team of 2 measured
 * 2-10x slower on a loaded machine: its workers spin between regions while netrun's kernels run). */
typedef struct dnnl_slice {
    dnnl_primitive_t conv, r_src, r_dst, r_sum; /* r_*: plain <-> blocked reorders, NULL when not needed */
    dnnl_stream_t stream;
    dnnl_memory_t m_x, m_xb, m_w, m_b, m_y, m_yb, m_z, m_sp;
    size_t ws_off, off_yb, off_sp, ws_bytes; /* this slice's part of the workspace */
    float *w;                                /* its weights in the primitive's layout */
    int64_t m0, mc;                          /* output channels [m0, m0 + mc) */
    int64_t r0, r1;   /* output rows [r0, r1) of a row slice (cut_rows); r1 = 0: all rows */
    int64_t x_row0;   /* first input row a row slice reads */
    int64_t x_rows;   /* and how many (a band of nChw16c X is copied dense to off_xband first) */
    size_t off_xband;
} dnnl_slice;

struct cpu_dnnl_conv {
    int n_slices, has_bias, has_sum, post_act, blocked, dw;
    int winograd; /* cpu.winograd: try oneDNN's Winograd kernels for 3x3 stride-1 convs */
    int own_swish; /* Swish by gu_swish_n after each image instead of oneDNN's post-op (cpu.dnnl_swish=1 keeps it) */
    int src_blk, dst_blk, per_image; /* nChw16c user X / Y (the nChw16c pass); per_image: primitives for N = 1 */
    int by_image; /* every slice holds all the channels; a batch is cut by images, one slice per running thread */
    int cut_rows; /* every slice holds all the channels and a band of output rows (slice k on thread k) */
    int64_t ow, iw; /* output and input row lengths */
    atomic_int busy[64]; /* by_image: the slice a thread runs on is taken while it runs */
    int64_t cin;                     /* input channels */
    int64_t ny, plane, m, n; /* output elements, output plane size, channels, batch */
    int64_t xplane;          /* input plane size (a depthwise slice starts at channel m0 of X too) */
    size_t ws_bytes;
    netrun_fused_activation act;
    char impl[64];
    dnnl_slice sl[];
};

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* oneDNN's eltwise for a fused activation; 0 when it has none (then it runs in C after the primitive). */
static int map_act(const netrun_fused_activation *a, dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    *alpha = 0.0f;
    *beta = 0.0f;
    switch (a->kind) {
    case NETRUN_ACT_RELU: *alg = dnnl_eltwise_relu; return 1;
    case NETRUN_ACT_LEAKY_RELU: *alg = dnnl_eltwise_relu; *alpha = a->alpha; return 1;
    case NETRUN_ACT_CLIP: *alg = dnnl_eltwise_clip; *alpha = a->alpha; *beta = a->beta; return 1;
    case NETRUN_ACT_SIGMOID: *alg = dnnl_eltwise_logistic; return 1;
    case NETRUN_ACT_TANH: *alg = dnnl_eltwise_tanh; return 1;
    case NETRUN_ACT_AFFINE: *alg = dnnl_eltwise_linear; *alpha = a->alpha; *beta = a->beta; return 1;
    case NETRUN_ACT_SWISH: *alg = dnnl_eltwise_swish; *alpha = a->alpha; return 1; /* x * sigmoid(alpha x) */
    case NETRUN_ACT_HARD_SWISH: *alg = dnnl_eltwise_hardswish; return 1; /* x * relu6(x + 3) / 6, ONNX's only form */
    default: return 0;
    }
}

static dnnl_format_tag_t plain_tag(int rank) {
    switch (rank) {
    case 3: return dnnl_abc;
    case 4: return dnnl_abcd;
    case 5: return dnnl_abcde;
    case 6: return dnnl_abcdef;
    default: return dnnl_format_tag_undef;
    }
}

void cpu_dnnl_conv_destroy(cpu_dnnl_conv *s) {
    if (!s) return;
    for (int k = 0; k < s->n_slices; k++) {
        dnnl_slice *q = &s->sl[k];
        dnnl_primitive_t prims[] = {q->conv, q->r_src, q->r_dst, q->r_sum};
        for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
            if (prims[i]) dnnl_primitive_destroy(prims[i]);
        dnnl_memory_t mems[] = {q->m_x, q->m_xb, q->m_w, q->m_b, q->m_y, q->m_yb, q->m_z, q->m_sp};
        for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
            if (mems[i]) dnnl_memory_destroy(mems[i]);
        if (q->stream) dnnl_stream_destroy(q->stream);
        if (q->w) cpu_free(q->w);
    }
    cpu_free(s);
}

const char *cpu_dnnl_conv_impl(const cpu_dnnl_conv *s) { return s ? s->impl : ""; }
int cpu_dnnl_conv_by_image(const cpu_dnnl_conv *s) { return s && s->by_image; }
int cpu_dnnl_conv_by_rows(const cpu_dnnl_conv *s) { return s && s->cut_rows; }

int cpu_dnnl_all(void) { return cpu_dnnl_available() && g_all; }

/* Primitive descriptor for output channels [m0, m0 + mc) of these shapes; NULL when oneDNN cannot do them
 * (the caller falls back). y_plain describes that slice inside the whole NCHW output. blocked16: ask for
 * nChw16c activations (2-D, channels multiples of 16; NULL otherwise) instead of letting oneDNN choose: it
 * chooses NHWC, and the NCHW <-> NHWC reorders around every node cost more than NCHW <-> nChw16c (oneDNN
 * node time at 1 thread, EfficientNet-B0 7.3 -> 6.5 ms, MobileNetV2 4.6 -> 3.8, SqueezeNet 6.1 -> 5.7). */
static dnnl_primitive_desc_t make_pd(const netrun_conv_params *p, const int64_t *xd, const int64_t *wd,
                                     const int64_t *yd, int64_t mc, const dnnl_slice *q, int blocked16, int n1,
                                     int has_bias, int has_sum, int wino, int own_swish, int *post_act,
                                     dnnl_memory_desc_t *x_plain, dnnl_memory_desc_t *w_plain,
                                     dnnl_memory_desc_t *y_plain, dnnl_memory_desc_t *b_md) {
    int ns = p->n_spatial, rank = ns + 2;
    if (ns < 1 || ns > 3 || p->group < 1 || xd[1] % p->group || yd[1] % p->group) return NULL;
    int dw = p->group > 1 && p->group == xd[1] && p->group == yd[1];
    if (p->group > 1 && !dw && mc != yd[1]) return NULL; /* grouped convs are sliced only when depthwise */
    dnnl_dims_t xdims, xstr, ydims, ystr, wdims, bdims = {mc}, st, dl, pl, pr;
    for (int i = 0; i < rank; i++) {
        xdims[i] = xd[i];
        ydims[i] = yd[i];
    }
    ydims[1] = mc;
    if (n1) xdims[0] = ydims[0] = 1; /* one image per execution: a slice of nChw16c Y is dense per image */
    if (dw) xdims[1] = mc; /* a depthwise slice reads only its own input channels */
    xstr[rank - 1] = ystr[rank - 1] = 1;
    for (int i = rank - 2; i >= 0; i--) { /* strides of the whole input and output */
        xstr[i] = xstr[i + 1] * xd[i + 1];
        ystr[i] = ystr[i + 1] * yd[i + 1];
    }
    int g = p->group > 1, wrank = rank + g;
    if (g) {
        wdims[0] = dw ? mc : p->group;
        wdims[1] = yd[1] / p->group;
        for (int i = 1; i < rank; i++) wdims[i + 1] = wd[i];
    } else {
        for (int i = 0; i < rank; i++) wdims[i] = wd[i];
        wdims[0] = mc;
    }
    for (int i = 0; i < ns; i++) {
        if (p->dilations[i] < 1 || p->strides[i] < 1) return NULL;
        st[i] = p->strides[i];
        dl[i] = p->dilations[i] - 1; /* oneDNN counts dilation from 0 */
        pl[i] = p->pads_begin[i];
        pr[i] = p->pads_end[i];
    }
    if (q->r1 > 0) { /* a band of output rows: the input rows it reads, its own top and bottom pads */
        int64_t ext = (wd[2] - 1) * p->dilations[0] + 1;
        int64_t a = q->r0 * p->strides[0] - p->pads_begin[0], b = (q->r1 - 1) * p->strides[0] - p->pads_begin[0] + ext;
        int64_t a_in = a < 0 ? 0 : a, b_in = b > xd[2] ? xd[2] : b;
        if (b_in <= a_in || a_in != q->x_row0) return NULL;
        xdims[2] = b_in - a_in;
        ydims[2] = q->r1 - q->r0;
        pl[0] = a_in - a;
        pr[0] = b - b_in;
    }
    dnnl_memory_desc_t x_any, w_any, y_any;
    /* per image (nChw16c pass): X may be plain with any C (the first conv of a net), then its format is free */
    if (blocked16 && (rank != 4 || ((xdims[1] % 16 || mc % 16) && !n1))) return NULL;
    dnnl_format_tag_t act_tag = blocked16 && mc % 16 == 0 ? dnnl_aBcd16b : dnnl_format_tag_any;
    dnnl_format_tag_t x_tag = blocked16 && xdims[1] % 16 == 0 ? dnnl_aBcd16b : dnnl_format_tag_any;
    if (dnnl_memory_desc_init_by_strides(x_plain, rank, xdims, dnnl_f32, xstr) ||
        dnnl_memory_desc_init_by_strides(y_plain, rank, ydims, dnnl_f32, ystr) ||
        dnnl_memory_desc_init_by_tag(w_plain, wrank, wdims, dnnl_f32, plain_tag(wrank)) ||
        dnnl_memory_desc_init_by_tag(b_md, 1, bdims, dnnl_f32, dnnl_a) ||
        dnnl_memory_desc_init_by_tag(&x_any, rank, xdims, dnnl_f32, x_tag) ||
        dnnl_memory_desc_init_by_tag(&y_any, rank, ydims, dnnl_f32, act_tag) ||
        dnnl_memory_desc_init_by_tag(&w_any, wrank, wdims, dnnl_f32, dnnl_format_tag_any))
        return NULL;
    dnnl_convolution_desc_t cd;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   wino ? dnnl_convolution_winograd : dnnl_convolution_direct, &x_any,
                                                   &w_any, has_bias ? b_md : NULL, &y_any, st, dl, pl, pr))
        return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_alg_kind_t alg = dnnl_eltwise_relu;
    float alpha, beta;
    *post_act = map_act(&p->activation, &alg, &alpha, &beta);
    if (own_swish && p->activation.kind == NETRUN_ACT_SWISH) *post_act = 0;
    if (dnnl_primitive_attr_create(&attr) || dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ||
        dnnl_post_ops_create(&po))
        goto out;
    if (has_sum && dnnl_post_ops_append_sum(po, 1.0f)) goto out;
    if (*post_act && dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta)) goto out;
    if (dnnl_primitive_attr_set_post_ops(attr, po)) goto out;
    if (dnnl_primitive_desc_create(&pd, &cd, attr, g_engine, NULL)) pd = NULL;
out:
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return pd;
}

static int make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, dnnl_primitive_t *out) {
    dnnl_primitive_desc_t rpd;
    *out = NULL;
    if (dnnl_reorder_primitive_desc_create(&rpd, from, g_engine, to, g_engine, NULL)) return 0;
    dnnl_status_t st = dnnl_primitive_create(out, rpd);
    dnnl_primitive_desc_destroy(rpd);
    return st == dnnl_success;
}

/* Winograd F(2x2, 3x3) saves 20 of the 36 FMAs of each (input channel, output channel) pair of a 2x2 tile, and
 * pays per tile an input transform per input channel and an output transform per output channel (oneDNN's also
 * pads both to 16 and reorders plain X and Y): savings grow as C x M, costs as C + M. It pays where
 * C x M / (C + M) >= 24 (the harmonic mean of C and M at least 48). Single 3x3 convs + bias + Relu at 2 threads,
 * batch 1, NCHW in and out, minimum over 15 runs, Winograd vs direct (tools/bench/conv_algo_bench.py):
 * 3 -> 16 at 416x416 (YOLO's first conv) 42.1 vs 3.1 ms, 3 -> 64 at 224x224 (VGG's, U-Net's) 22.1 vs 2.6,
 * 16 -> 16 at 112x112 0.65 vs 0.44, 32 -> 32 at 56x56 0.46 vs 0.38 (batch 8 also 1.26x slower), 48 -> 48 0.74 vs
 * 0.75, 64 -> 64 1.33 vs 1.41, 128 -> 128 at 28x28 0.86 vs 1.33. */
static int wino_pays(int64_t c, int64_t m) {
    return c > 0 && m > 0 && c * m >= 24 * (c + m);
}

int cpu_dnnl_available(void) {
    pthread_once(&g_engine_once, engine_init);
    return g_engine_status == dnnl_success;
}

dnnl_engine_t cpu_dnnl_engine(void) { return cpu_dnnl_available() ? g_engine : NULL; }

/* oneDNN's sgemm on the calling thread only (its JIT kernels ran MatMul 8-20% faster than OpenBLAS's sgemm at
 * 1 thread on ViT / BERT shapes: 197x192x768 0.36 -> 0.31 ms, 128x768x768 0.98 -> 0.84). */
int cpu_dnnl_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (!cpu_dnnl_available()) return 0;
    if (omp_get_max_threads() != 1) omp_set_num_threads(1); /* a pool worker's own ICV; no OpenMP team */
    return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}

void cpu_dnnl_conv_describe_state(const cpu_dnnl_conv *s, char *buf, size_t size) {
    snprintf(buf, size, "oneDNN %s%s%s%s", s->impl, s->blocked ? " (blocked, reorders)" : "",
             s->src_blk ? " (nChw16c in)" : "", s->dst_blk ? " (nChw16c out)" : "");
}

/* Build slice q (channels q->m0 .. + q->mc). 1: built; 0: oneDNN declines (*rc stays OK) or failed (*rc). */
static int build_slice(cpu_dnnl_conv *s, dnnl_slice *q, const netrun_conv_params *p, const int64_t *xd,
                       const int64_t *wd, const int64_t *yd, const float *w, netrun_status *rc) {
    dnnl_memory_desc_t xp, wp, yp, bm;
    int post_act;
    const char *impl = "";
    dnnl_primitive_desc_t pd = NULL;
    /* Winograd first where it applies (oneDNN declines the shapes it has no kernel for): 3x3 stride-1 layers
     * of ResNet-50 at 1 thread 1.19 -> 0.85 ms (layer1), 1.10 -> 0.60 (layer2), 1.15 -> 0.75 (layer3); output
     * error vs onnxruntime 6.3e-5 -> 7.1e-5 on ResNet-50. cpu.winograd=0 turns it off. */
    int wino_fits = s->winograd && p->n_spatial == 2 && p->group == 1 && wd[2] == 3 && wd[3] == 3 &&
                    p->strides[0] == 1 && p->strides[1] == 1 && p->dilations[0] == 1 && p->dilations[1] == 1 &&
                    wino_pays(wd[1], wd[0]) && q->r1 == 0; /* not a band: its scratchpad is per band (16 bands of
                                                               a 64-channel 40 x 40 conv held 66 MB) */
    for (int wino = wino_fits; wino >= 0 && !pd; wino--)
    for (int blocked16 = 1; blocked16 >= s->per_image && !pd; blocked16--) {
        pd = make_pd(p, xd, wd, yd, q->mc, q, blocked16, s->per_image, s->has_bias, s->has_sum, wino, s->own_swish,
                     &post_act, &xp, &wp, &yp, &bm);
        if (pd && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl)) {
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        } else if (pd && !s->src_blk && !s->dst_blk && !strncmp(impl, "ref", 3)) {
            dnnl_primitive_desc_destroy(pd); /* the reference loops are slower than im2col + sgemm */
            pd = NULL;
        }
    }
    if (!pd) return 0;
    snprintf(s->impl, sizeof s->impl, "%s", impl);
    s->post_act = post_act;
    const dnnl_memory_desc_t *qx = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *qy = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *qsp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    /* nChw16c user memory is the primitive's own (asked for by tag): no reorder on that side */
    if (s->src_blk) xp = *qx;
    if (s->dst_blk) yp = *qy;
    int blk_x = !dnnl_memory_desc_equal(qx, &xp), blk_y = !dnnl_memory_desc_equal(qy, &yp);
    s->blocked |= blk_x || blk_y;
    size_t xb = blk_x ? round64(dnnl_memory_desc_get_size(qx)) : 0;
    size_t yb = blk_y ? round64(dnnl_memory_desc_get_size(qy)) : 0;
    size_t sp = qsp ? round64(dnnl_memory_desc_get_size(qsp)) : 0;
    q->off_yb = xb;
    q->off_sp = xb + yb;
    q->ws_bytes = xb + yb + sp;
    size_t wbytes = dnnl_memory_desc_get_size(qw);
    dnnl_memory_t m_wp = NULL;
    dnnl_primitive_t r_w = NULL;
    int64_t per_oc = 1; /* floats of W per output channel */
    for (int i = 1; i < p->n_spatial + 2; i++) per_oc *= wd[i];
    const float *wsrc = w + q->m0 * per_oc;
    int ok = 0;
    if (dnnl_stream_create(&q->stream, g_engine, dnnl_stream_default_flags) || dnnl_primitive_create(&q->conv, pd) ||
        !(q->w = cpu_alloc(wbytes)) ||
        dnnl_memory_create(&q->m_x, &xp, g_engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&q->m_y, &yp, g_engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&q->m_w, qw, g_engine, q->w) ||
        (s->has_bias && dnnl_memory_create(&q->m_b, &bm, g_engine, DNNL_MEMORY_NONE)) ||
        (sp && dnnl_memory_create(&q->m_sp, qsp, g_engine, DNNL_MEMORY_NONE)) ||
        (blk_x && (dnnl_memory_create(&q->m_xb, qx, g_engine, DNNL_MEMORY_NONE) || !make_reorder(&xp, qx, &q->r_src))) ||
        (blk_y && (dnnl_memory_create(&q->m_yb, qy, g_engine, DNNL_MEMORY_NONE) || !make_reorder(qy, &yp, &q->r_dst))) ||
        (blk_y && s->has_sum &&
         (dnnl_memory_create(&q->m_z, &yp, g_engine, DNNL_MEMORY_NONE) || !make_reorder(&yp, qy, &q->r_sum))) ||
        dnnl_memory_create(&m_wp, &wp, g_engine, (void *)wsrc) || !make_reorder(&wp, qw, &r_w)) {
        *rc = cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN %s): cannot build the primitive", impl);
        goto done;
    }
    dnnl_exec_arg_t wa[] = {{DNNL_ARG_FROM, m_wp}, {DNNL_ARG_TO, q->m_w}};
    if (dnnl_primitive_execute(r_w, q->stream, 2, wa) || dnnl_stream_wait(q->stream))
        *rc = cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN %s): weight reorder failed", impl);
    else
        ok = 1;
done:
    if (r_w) dnnl_primitive_destroy(r_w);
    if (m_wp) dnnl_memory_destroy(m_wp);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

netrun_status cpu_dnnl_conv_create(cpu_context *ctx, const netrun_conv_params *p, const int64_t *xd,
                                   const int64_t *wd, const int64_t *yd, const float *w, int has_bias,
                                   cpu_dnnl_conv **out, size_t *ws) {
    *out = NULL;
    *ws = 0;
    if (!cpu_dnnl_available() || p->n_spatial < 1 || p->n_spatial > 3) return NETRUN_OK;
    int64_t m = yd[1], threads = ctx->threads > 0 ? ctx->threads : 1;
    if (threads > 64) threads = 64;
    int dw = p->group > 1 && p->group == xd[1] && p->group == m;
    int64_t n_sl = p->group > 1 && !dw ? 1 : (m + 15) / 16;
    if (n_sl > threads) n_sl = threads;
    if (n_sl < 1) n_sl = 1;
    int64_t per = (m + n_sl - 1) / n_sl;
    if (n_sl > 1) per = (per + 15) / 16 * 16;
    n_sl = (m + per - 1) / per;
    /* A batch of nChw16c images (per-image primitives) is cut by images instead: slices of 16-channel multiples
     * leave threads uneven (144 channels: 80 + 64; 16: one thread idle) and each image's primitive does more
     * work per call. One full-channel primitive per thread (weights packed once each), taken by whichever
     * thread runs an image. Only where the slices are uneven or the weights are small against a big plane:
     * each thread then reads all the weights (SqueezeNet b8's 64 -> 256 3x3 at 13x13, 590 KB: 15% slower by
     * image); not for depthwise convs (EfficientNet-B0 b8: 10-15% slower; the two threads reading one image
     * share it in L3) but those of dw_uneven below, nor a plain X (the stem). cpu.dnnl_images=0 keeps the
     * channel slices. */
    const char *bi = cpu_option(ctx, "cpu.dnnl_images");
    int64_t wbytes = 4 * m, plane = 1;
    for (int i = 1; i < p->n_spatial + 2; i++) wbytes *= wd[i];
    for (int i = 2; i < p->n_spatial + 2; i++) plane *= yd[i];
    int uneven = m % (16 * threads) != 0, small_w = wbytes <= 256 * 1024 && plane >= 784;
    /* Also where one image of X outweighs the (small) weights: channel slices make every thread read the whole
     * batch's X, images make each read its own X and all of W, which stays in L2 (MnasNet's 480 -> 96 and
     * 576 -> 96 1x1 projections at 14x14, X 376-451 KB an image, W 184-221 KB, batch 8 at 2 threads: 0.52 ->
     * 0.40 and 0.61 -> 0.48 ms, min of 6 rounds). */
    int64_t xbytes = 4 * xd[1];
    for (int i = 2; i < p->n_spatial + 2; i++) xbytes *= xd[i];
    int x_heavy = wbytes <= 256 * 1024 && xbytes >= wbytes;
    /* A plain-X stem writing nChw16c Y with fewer 16-channel slices than threads (MobileNetV3's 3 -> 16: one
     * slice, so one thread busy) is cut by images too: batch 8 at 2 threads 6.2 -> 3.4 ms (min of 4 rounds). */
    int idle = p->dst_blocked && !p->src_blocked && n_sl < threads;
    /* A conv on plain X and Y (a stem of few input channels, or small weights: channel counts no multiple of
     * 16) cut into uneven channel slices reorders the whole batch's X and Y once per slice, through buffers of
     * megabytes: per-image primitives instead reorder one image while it is cached. Batch 8 at 2 threads:
     * ShuffleNetV2's 3 -> 24 3x3/2 at 224x224 2.6 -> 1.2 ms, U-Net's first conv 4.7 -> 2.4, ShuffleNetV2's
     * 232 -> 232 1x1 at 7x7 0.22 -> 0.175. */
    int plain_small = !p->src_blocked && !p->dst_blocked && p->group == 1 && p->n_spatial == 2 &&
                      (xd[1] <= 4 || wbytes <= 256 * 1024) && uneven;
    /* Depthwise convs stay in channel slices, but not where few 16-channel blocks split unevenly (48 channels:
     * 32 + 16, one thread with twice the other's work; 16: one thread idle): batch 8 at 2 threads, MnasNet's
     * 48 x 112x112 3x3/2 0.66 -> 0.52 ms, MobileNetV3-small's 16 x 112x112 3x3/2 0.30 -> 0.17 (min of 8 rounds). */
    int64_t blocks = (m + 15) / 16;
    int dw_uneven = dw && blocks % threads && blocks < 4 * threads;
    int by_image = (p->src_blocked || idle || plain_small) && (!dw || dw_uneven) && threads > 1 &&
                   !(bi && !strcmp(bi, "0")) &&
                   (uneven || small_w || x_heavy) && yd[0] >= threads &&
                   (yd[0] % threads == 0 || yd[0] >= 3 * threads);
    /* A plain stem (few input channels, plain X) writing one nChw16c block with fewer images than threads
     * (MobileNetV3's 3 -> 16 at batch 1: one slice, one thread busy) is cut into bands of output rows instead,
     * each a dense part of Y. Not with a fused sum; not into a plain Y (oneDNN reorders a band of a plain
     * Y from its blocked result through a strided copy: ShuffleNetV2's 3 -> 24 at batch 1 0.17 -> 0.25 ms).
     * MobileNetV3-small's stem at batch 1, 2 threads, --profile: 0.167 -> 0.114 ms. */
    int64_t bands = threads;
    int rows_ok = !by_image && !dw && threads > 1 && p->group == 1 && p->n_spatial == 2 && !p->has_sum &&
                  !(bi && !strcmp(bi, "0"));
    int cut_rows = rows_ok && !p->src_blocked && xd[1] <= 4 && p->dst_blocked && m == 16 && n_sl < threads &&
                   yd[2] >= 4 * threads;
    /* The same where the channel slices would leave most threads idle on a plain X and Y (a detector head's
     * 16 or fewer output channels: one slice, one thread of 16; 64 channels: 4 of 16): bands of at least two
     * output rows and about 0.5 M multiply-adds each, every band with all the channels (and its own copy of
     * the weights, so only for weights up to 1 MB). Y's band is then a strided view of each channel plane that
     * the primitive's blocked result is reordered into; an nChw16c X band (its rows of every block, halo
     * included) is copied dense first. At 16 threads, --profile: a face detector's 16-channel heads at 40 x 40
     * 0.23 -> 0.09 ms, a two-stage detector's RPN heads 0.32 -> 0.09 ms (docs/benchmarks.md). */
    if (rows_ok && !cut_rows && !p->dst_blocked && 2 * n_sl <= threads && wbytes <= (1 << 20)) {
        int64_t macs = wbytes / 4 * yd[0] * plane, by_work = macs / (512 * 1024), by_rows = yd[2] / 2;
        bands = threads < by_rows ? threads : by_rows;
        if (by_work < bands) bands = by_work;
        cut_rows = bands >= 2 && bands > n_sl;
    }
    for (int64_t k = 0; cut_rows && k < bands; k++) { /* every band reads some input row (not all pads) */
        int64_t r0 = yd[2] * k / bands, r1 = yd[2] * (k + 1) / bands;
        int64_t a = r0 * p->strides[0] - p->pads_begin[0], b = (r1 - 1) * p->strides[0] - p->pads_begin[0] +
                                                                (wd[2] - 1) * p->dilations[0] + 1;
        if ((b < xd[2] ? b : xd[2]) <= (a > 0 ? a : 0)) cut_rows = 0;
    }
    if (by_image || cut_rows) {
        n_sl = cut_rows ? bands : threads;
        per = m;
    }
    cpu_dnnl_conv *s = cpu_alloc(sizeof *s + (size_t)n_sl * sizeof(dnnl_slice));
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv (oneDNN): out of memory");
    memset(s, 0, sizeof *s + (size_t)n_sl * sizeof(dnnl_slice));
    s->has_bias = has_bias;
    s->has_sum = p->has_sum;
    s->winograd = ctx->winograd;
    /* oneDNN 2.7's eltwise_swish post-op cost more than netrun's AVX-512 loop over the image's slice after
     * the primitive (still in L2/L3): EfficientNet-B0, 1 thread, --profile node sums, three rounds each,
     * depthwise 3.1-3.4 -> 2.7-2.9 ms at batch 1 and 34.3-35.6 -> 28.4-33.1 at batch 8, the 1x1 expands
     * 5.8-6.3 -> 5.7-5.8 and 47.6-49.1 -> 43.6-48.4; a lone 32-channel 112x112 depthwise 0.40-0.42 -> 0.32 ms */
    const char *sw = cpu_option(ctx, "cpu.dnnl_swish");
    s->own_swish = !(sw && !strcmp(sw, "1"));
    s->act = p->activation;
    s->m = m;
    s->n = yd[0];
    s->plane = 1;
    for (int i = 2; i < p->n_spatial + 2; i++) s->plane *= yd[i];
    s->ny = s->n * m * s->plane;
    s->dw = dw;
    s->xplane = 1;
    for (int i = 2; i < p->n_spatial + 2; i++) s->xplane *= xd[i];
    s->cin = xd[1];
    s->src_blk = p->src_blocked;
    s->dst_blk = p->dst_blocked;
    s->per_image = s->src_blk || s->dst_blk || by_image || cut_rows;
    s->cut_rows = cut_rows;
    s->ow = yd[p->n_spatial + 1];
    s->iw = xd[p->n_spatial + 1];
    if ((s->src_blk || s->dst_blk) && (p->n_spatial != 2 || (s->src_blk && xd[1] % 16) || (s->dst_blk && (m % 16 || per % 16)))) {
        cpu_dnnl_conv_destroy(s);
        return cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN): nChw16c needs 2-D and channels multiples of 16");
    }
    netrun_status rc = NETRUN_OK;
    size_t off = 0;
    for (int64_t k = 0; k < n_sl; k++) {
        dnnl_slice *q = &s->sl[k];
        q->m0 = by_image || cut_rows ? 0 : k * per;
        q->mc = m - q->m0 < per ? m - q->m0 : per;
        if (cut_rows) { /* bands of about equal rows */
            q->r0 = yd[2] * k / n_sl;
            q->r1 = yd[2] * (k + 1) / n_sl;
            int64_t a = q->r0 * p->strides[0] - p->pads_begin[0];
            q->x_row0 = a < 0 ? 0 : a;
            int64_t b = (q->r1 - 1) * p->strides[0] - p->pads_begin[0] + (wd[2] - 1) * p->dilations[0] + 1;
            q->x_rows = (b < xd[2] ? b : xd[2]) - q->x_row0;
        }
        s->n_slices = (int)k + 1; /* destroy frees what was built */
        int prev = omp_get_max_threads(); /* the caller's own OpenMP setting is left as it was */
        omp_set_num_threads(1);            /* blocking is tuned for the one thread that runs the slice */
        int ok = build_slice(s, q, p, xd, wd, yd, w, &rc);
        omp_set_num_threads(prev);
        if (!ok) {
            cpu_dnnl_conv_destroy(s);
            return rc; /* NETRUN_OK when oneDNN just declined */
        }
        if (cut_rows && s->src_blk) { /* the dense copy of the band's nChw16c X rows */
            q->off_xband = round64(q->ws_bytes);
            q->ws_bytes = q->off_xband + round64((size_t)(xd[1] * q->x_rows * xd[3]) * sizeof(float));
        }
        q->ws_off = off;
        off += round64(q->ws_bytes);
    }
    s->by_image = by_image;
    for (int k = 0; k < 64; k++) atomic_init(&s->busy[k], 0);
    s->ws_bytes = off + 64; /* + 64: the runtime's workspace is aligned here */
    *out = s;
    *ws = s->ws_bytes;
    return NETRUN_OK;
}

size_t cpu_dnnl_conv_workspace(const cpu_dnnl_conv *s) { return s ? s->ws_bytes : 0; }

typedef struct run_job {
    cpu_dnnl_conv *s;
    const float *x, *b, *z;
    float *y;
    char *base;
    dnnl_status_t st[64];
} run_job;

/* One execution of slice q on image `img` (per_image) or on the whole batch (img = -1). */
static dnnl_status_t run_one(const run_job *j, dnnl_slice *q, int64_t img) {
    cpu_dnnl_conv *s = j->s;
    char *base = j->base + q->ws_off;
    size_t yoff = (size_t)q->m0 * (size_t)s->plane; /* the slice's first channel in the (image's) output */
    size_t xoff = s->dw ? (size_t)q->m0 * (size_t)s->xplane : 0;
    if (img >= 0) { /* same offsets in NCHW and nChw16c: a block of 16 channels is 16 planes of floats */
        yoff += (size_t)(img * s->m) * (size_t)s->plane;
        xoff += (size_t)(img * s->cin) * (size_t)s->xplane;
    }
    const float *xsrc = j->x + xoff;
    if (q->r1 > 0) { /* a band of rows: its first row in every channel plane (Y plain or one nChw16c block) */
        yoff += (size_t)(q->r0 * s->ow * (s->dst_blk ? 16 : 1));
        if (s->src_blk) { /* X's band rows of each 16-channel block, made one dense nChw16c band */
            float *band = (float *)(base + q->off_xband);
            const size_t rowf = (size_t)s->iw * 16, n = (size_t)q->x_rows * rowf;
            for (int64_t cb = 0; cb < s->cin / 16; cb++)
                memcpy(band + (size_t)cb * n, xsrc + (size_t)cb * (size_t)s->xplane * 16 + (size_t)q->x_row0 * rowf,
                       n * sizeof(float));
            xsrc = band;
        } else
            xsrc += (size_t)(q->x_row0 * s->iw);
    }
    dnnl_status_t st = dnnl_memory_set_data_handle(q->m_x, (void *)xsrc);
    if (!st) st = dnnl_memory_set_data_handle(q->m_y, j->y + yoff);
    if (!st && q->m_xb) st = dnnl_memory_set_data_handle(q->m_xb, base);
    if (!st && q->m_yb) st = dnnl_memory_set_data_handle(q->m_yb, base + q->off_yb);
    if (!st && q->m_sp) st = dnnl_memory_set_data_handle(q->m_sp, base + q->off_sp);
    if (!st && q->m_b) st = dnnl_memory_set_data_handle(q->m_b, (void *)(j->b + q->m0));
    if (!st && q->m_z) st = dnnl_memory_set_data_handle(q->m_z, (void *)(j->z + yoff));
    dnnl_memory_t src = q->m_xb ? q->m_xb : q->m_x, dst = q->m_yb ? q->m_yb : q->m_y;
    if (!st && s->has_sum) { /* the sum post-op adds what dst holds before the primitive */
        if (q->r_sum) {
            dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, q->m_z}, {DNNL_ARG_TO, dst}};
            st = dnnl_primitive_execute(q->r_sum, q->stream, 2, a);
        } else if (j->z != j->y) /* dst is Y: copy Z's channels of the slice, image by image */
            for (int64_t n = img >= 0 ? img : 0; n < (img >= 0 ? img + 1 : s->n); n++) {
                size_t o = (size_t)q->m0 * (size_t)s->plane + (size_t)(n * s->m) * (size_t)s->plane;
                memmove(j->y + o, j->z + o, (size_t)(q->mc * s->plane) * sizeof(float));
            }
    }
    if (!st && q->r_src) {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, q->m_x}, {DNNL_ARG_TO, q->m_xb}};
        st = dnnl_primitive_execute(q->r_src, q->stream, 2, a);
    }
    if (!st) {
        dnnl_exec_arg_t a[5] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, q->m_w}, {DNNL_ARG_DST, dst}};
        int n = 3;
        if (q->m_b) a[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, q->m_b};
        if (q->m_sp) a[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, q->m_sp};
        st = dnnl_primitive_execute(q->conv, q->stream, n, a);
    }
    if (!st && q->r_dst) {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, q->m_yb}, {DNNL_ARG_TO, q->m_y}};
        st = dnnl_primitive_execute(q->r_dst, q->stream, 2, a);
    }
    if (!st) st = dnnl_stream_wait(q->stream);
    return st;
}

/* The activation oneDNN does not run (map_act, own_swish) over image n of slice q: elementwise, so the same
 * in both layouts over the slice's channels. */
static void act_image(const run_job *j, const dnnl_slice *q, int64_t n) {
    const cpu_dnnl_conv *s = j->s;
    if (q->r1 > 0) { /* its band of rows only: the other threads' bands are theirs */
        float *img = j->y + (size_t)(n * s->m) * (size_t)s->plane;
        if (s->dst_blk) /* one nChw16c block */
            gu_act_n(img + q->r0 * s->ow * 16, (q->r1 - q->r0) * s->ow * 16, &s->act);
        else
            for (int64_t c = 0; c < s->m; c++) gu_act_n(img + c * s->plane + q->r0 * s->ow, (q->r1 - q->r0) * s->ow, &s->act);
        return;
    }
    gu_act_n(j->y + (size_t)(n * s->m) * (size_t)s->plane + (size_t)q->m0 * (size_t)s->plane, q->mc * s->plane,
             &s->act);
}

/* images [n0, n1) of slice q */
static dnnl_status_t run_images(const run_job *j, dnnl_slice *q, int64_t n0, int64_t n1) {
    cpu_dnnl_conv *s = j->s;
    dnnl_status_t st = dnnl_success;
    const int act = !s->post_act && s->act.kind != NETRUN_ACT_NONE;
    if (s->per_image) /* the activation right after each image, while its output is still cached */
        for (int64_t n = n0; n < n1 && !st; n++) {
            st = run_one(j, q, n);
            if (!st && act) act_image(j, q, n);
        }
    else {
        st = run_one(j, q, -1);
        for (int64_t n = n0; act && !st && n < n1; n++) act_image(j, q, n);
    }
    return st;
}

static dnnl_status_t run_slice(const run_job *j, dnnl_slice *q) { return run_images(j, q, 0, j->s->n); }

/* by_image: tasks are images; the thread takes a free slice (there are as many as threads) for its range */
static void image_range(void *arg, int64_t b, int64_t e) {
    run_job *j = arg;
    cpu_dnnl_conv *s = j->s;
    omp_set_num_threads(1);
    int k = 0;
    for (;; k = (k + 1) % s->n_slices)
        if (!atomic_exchange(&s->busy[k], 1)) break;
    dnnl_status_t st = run_images(j, &s->sl[k], b, e);
    if (st) j->st[k] = st;
    atomic_store(&s->busy[k], 0);
}

static void slice_range(void *arg, int64_t b, int64_t e) {
    run_job *j = arg;
    omp_set_num_threads(1); /* on a pool worker: its own ICV */
    for (int64_t k = b; k < e; k++) j->st[k] = run_slice(j, &j->s->sl[k]);
}

netrun_status cpu_dnnl_conv_run(cpu_context *ctx, cpu_dnnl_conv *s, const float *x, const float *b,
                                const float *z, float *y, void *ws, size_t ws_size) {
    if (!ws || ws_size < s->ws_bytes || (s->has_bias && !b) || (s->has_sum && !z))
        return cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN): workspace or inputs missing at run");
    if (s->n_slices > 64) return cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN): too many slices");
    run_job j = {s, x, b, z, y, (char *)(((uintptr_t)ws + 63) & ~(uintptr_t)63), {0}};
    /* oneDNN parallelizes over omp_get_max_threads() of the calling thread: 1 keeps each slice on the
     * pool thread that runs it (the pool's workers are not OpenMP threads: their default would be all cores) */
    int prev = omp_get_max_threads();
    omp_set_num_threads(1);
    if (s->by_image) cpu_parallel_for(ctx, s->n, 1, image_range, &j);
    else if (s->n_slices == 1) j.st[0] = run_slice(&j, &s->sl[0]);
    else cpu_parallel_for(ctx, s->n_slices, 1, slice_range, &j);
    omp_set_num_threads(prev);
    for (int k = 0; k < s->n_slices; k++)
        if (j.st[k])
            return cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN %s): execution failed (status %d)", s->impl,
                                   (int)j.st[k]);
    return NETRUN_OK;
}

#else /* built without oneDNN */

int cpu_dnnl_available(void) { return 0; }
int cpu_dnnl_all(void) { return 0; }
int cpu_dnnl_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
    (void)c, (void)ldc;
    return 0;
}
netrun_status cpu_dnnl_conv_create(cpu_context *ctx, const netrun_conv_params *p, const int64_t *xd,
                                   const int64_t *wd, const int64_t *yd, const float *w, int has_bias,
                                   cpu_dnnl_conv **out, size_t *ws) {
    (void)ctx, (void)p, (void)xd, (void)wd, (void)yd, (void)w, (void)has_bias;
    *out = NULL;
    *ws = 0;
    return NETRUN_OK;
}
netrun_status cpu_dnnl_conv_run(cpu_context *ctx, cpu_dnnl_conv *s, const float *x, const float *b,
                                const float *z, float *y, void *ws, size_t ws_size) {
    (void)ctx, (void)s, (void)x, (void)b, (void)z, (void)y, (void)ws, (void)ws_size;
    return cpu_host->error(NETRUN_ERR_BACKEND, "Conv: built without oneDNN");
}
void cpu_dnnl_conv_destroy(cpu_dnnl_conv *s) { (void)s; }
const char *cpu_dnnl_conv_impl(const cpu_dnnl_conv *s) { (void)s; return ""; }
int cpu_dnnl_conv_by_image(const cpu_dnnl_conv *s) { (void)s; return 0; }
int cpu_dnnl_conv_by_rows(const cpu_dnnl_conv *s) { (void)s; return 0; }
size_t cpu_dnnl_conv_workspace(const cpu_dnnl_conv *s) { (void)s; return 0; }
void cpu_dnnl_conv_describe_state(const cpu_dnnl_conv *s, char *buf, size_t size) {
    (void)s;
    snprintf(buf, size, "oneDNN (not built)");
}

#endif
