/* CPU conv through oneDNN (when built with it): the primitive picks its own blocked layout (nChw16c on
 * AVX-512, JIT-compiled for the CPU it runs on, so no -march is needed); X is reordered into it and Y back
 * out of it, inside the node. Weights are reordered once at kernel_create. Bias and the fused activation
 * (and the fused "+ Z" as a sum post-op) are applied by the primitive while the output tile is hot.
 * Threads: this oneDNN runs on OpenMP; each call sets the calling thread's OpenMP team size to the
 * context's thread count, and netrun's own pool sleeps meanwhile, so --threads N stays N busy threads.
 * Scratch (blocked X and Y, the primitive's scratchpad) lives in the runtime's workspace. */
#include "conv_dnnl.h"

#include <stdio.h>

#ifdef NETRUN_CPU_DNNL
#include <dnnl.h>
#include <omp.h>
#include <pthread.h>

#include "gemm_util.h"

static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static void engine_init(void) { g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0); }

struct cpu_dnnl_conv {
    dnnl_primitive_t conv, r_src, r_dst, r_sum; /* r_*: plain <-> blocked reorders, NULL when not needed */
    dnnl_stream_t stream;
    dnnl_memory_t m_x, m_xb, m_w, m_b, m_y, m_yb, m_z, m_sp;
    size_t off_yb, off_sp, ws_bytes;
    float *w;          /* weights in the primitive's layout */
    int has_bias, has_sum, post_act, threads;
    int64_t ny;        /* output elements */
    netrun_fused_activation act;
    char impl[64];
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
    dnnl_primitive_t prims[] = {s->conv, s->r_src, s->r_dst, s->r_sum};
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (prims[i]) dnnl_primitive_destroy(prims[i]);
    dnnl_memory_t mems[] = {s->m_x, s->m_xb, s->m_w, s->m_b, s->m_y, s->m_yb, s->m_z, s->m_sp};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->w) cpu_free(s->w);
    cpu_free(s);
}

const char *cpu_dnnl_conv_impl(const cpu_dnnl_conv *s) { return s ? s->impl : ""; }

/* Primitive descriptor for these shapes; NULL when oneDNN cannot do them (the caller falls back). */
static dnnl_primitive_desc_t make_pd(const netrun_conv_params *p, const int64_t *xd, const int64_t *wd,
                                     const int64_t *yd, int has_bias, int has_sum, int *post_act,
                                     dnnl_memory_desc_t *x_plain, dnnl_memory_desc_t *w_plain,
                                     dnnl_memory_desc_t *y_plain, dnnl_memory_desc_t *b_md) {
    int ns = p->n_spatial, rank = ns + 2;
    if (ns < 1 || ns > 3 || p->group < 1 || xd[1] % p->group || yd[1] % p->group) return NULL;
    dnnl_dims_t xdims, ydims, wdims, bdims = {yd[1]}, st, dl, pl, pr;
    for (int i = 0; i < rank; i++) {
        xdims[i] = xd[i];
        ydims[i] = yd[i];
    }
    int g = p->group > 1, wrank = rank + g;
    if (g) {
        wdims[0] = p->group;
        wdims[1] = yd[1] / p->group;
        for (int i = 1; i < rank; i++) wdims[i + 1] = wd[i];
    } else
        for (int i = 0; i < rank; i++) wdims[i] = wd[i];
    for (int i = 0; i < ns; i++) {
        if (p->dilations[i] < 1 || p->strides[i] < 1) return NULL;
        st[i] = p->strides[i];
        dl[i] = p->dilations[i] - 1; /* oneDNN counts dilation from 0 */
        pl[i] = p->pads_begin[i];
        pr[i] = p->pads_end[i];
    }
    dnnl_memory_desc_t x_any, w_any, y_any;
    if (dnnl_memory_desc_init_by_tag(x_plain, rank, xdims, dnnl_f32, plain_tag(rank)) ||
        dnnl_memory_desc_init_by_tag(y_plain, rank, ydims, dnnl_f32, plain_tag(rank)) ||
        dnnl_memory_desc_init_by_tag(w_plain, wrank, wdims, dnnl_f32, plain_tag(wrank)) ||
        dnnl_memory_desc_init_by_tag(b_md, 1, bdims, dnnl_f32, dnnl_a) ||
        dnnl_memory_desc_init_by_tag(&x_any, rank, xdims, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&y_any, rank, ydims, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&w_any, wrank, wdims, dnnl_f32, dnnl_format_tag_any))
        return NULL;
    dnnl_convolution_desc_t cd;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &x_any,
                                                   &w_any, has_bias ? b_md : NULL, &y_any, st, dl, pl, pr))
        return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_alg_kind_t alg = dnnl_eltwise_relu;
    float alpha, beta;
    *post_act = map_act(&p->activation, &alg, &alpha, &beta);
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

int cpu_dnnl_available(void) {
    pthread_once(&g_engine_once, engine_init);
    return g_engine_status == dnnl_success;
}

int cpu_dnnl_conv_describe(const netrun_conv_params *p, const int64_t *xd, const int64_t *wd,
                           const int64_t *yd, int has_bias, char *buf, size_t size) {
    if (!cpu_dnnl_available()) return 0;
    dnnl_memory_desc_t xp, wp, yp, bm;
    int post_act;
    dnnl_primitive_desc_t pd = make_pd(p, xd, wd, yd, has_bias, p->has_sum, &post_act, &xp, &wp, &yp, &bm);
    if (!pd) return 0;
    const char *impl = "";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    const dnnl_memory_desc_t *qx = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    int used = strncmp(impl, "ref", 3) != 0;
    if (used) snprintf(buf, size, "oneDNN %s%s", impl, dnnl_memory_desc_equal(qx, &xp) ? "" : " (blocked, reorders)");
    dnnl_primitive_desc_destroy(pd);
    return used;
}

netrun_status cpu_dnnl_conv_create(cpu_context *ctx, const netrun_conv_params *p, const int64_t *xd,
                                   const int64_t *wd, const int64_t *yd, const float *w, int has_bias,
                                   cpu_dnnl_conv **out, size_t *ws) {
    *out = NULL;
    *ws = 0;
    if (!cpu_dnnl_available()) return NETRUN_OK;
    omp_set_num_threads(ctx->threads); /* the primitive tunes its blocking to the team size */
    dnnl_memory_desc_t xp, wp, yp, bm;
    int post_act;
    dnnl_primitive_desc_t pd = make_pd(p, xd, wd, yd, has_bias, p->has_sum, &post_act, &xp, &wp, &yp, &bm);
    if (!pd) return NETRUN_OK; /* not expressible: the caller keeps its own path */
    const char *impl = "";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (!strncmp(impl, "ref", 3)) { /* the reference loops are slower than im2col + sgemm */
        dnnl_primitive_desc_destroy(pd);
        return NETRUN_OK;
    }
    netrun_status rc = NETRUN_OK;
    cpu_dnnl_conv *s = cpu_alloc(sizeof *s);
    if (!s) {
        dnnl_primitive_desc_destroy(pd);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "Conv (oneDNN): out of memory");
    }
    memset(s, 0, sizeof *s);
    snprintf(s->impl, sizeof s->impl, "%s", impl);
    s->has_bias = has_bias;
    s->has_sum = p->has_sum;
    s->post_act = post_act;
    s->act = p->activation;
    s->threads = ctx->threads;
    s->ny = 1;
    for (int i = 0; i < p->n_spatial + 2; i++) s->ny *= yd[i];
    const dnnl_memory_desc_t *qx = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *qy = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *qsp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    int blk_x = !dnnl_memory_desc_equal(qx, &xp), blk_y = !dnnl_memory_desc_equal(qy, &yp);
    size_t xb = blk_x ? round64(dnnl_memory_desc_get_size(qx)) : 0;
    size_t yb = blk_y ? round64(dnnl_memory_desc_get_size(qy)) : 0;
    size_t sp = qsp ? round64(dnnl_memory_desc_get_size(qsp)) : 0;
    s->off_yb = xb;
    s->off_sp = xb + yb;
    s->ws_bytes = xb + yb + sp + 64; /* + 64: the runtime's workspace is aligned here */
    size_t wbytes = dnnl_memory_desc_get_size(qw);
    dnnl_memory_t m_wp = NULL;
    dnnl_primitive_t r_w = NULL;
    if (dnnl_stream_create(&s->stream, g_engine, dnnl_stream_default_flags) || dnnl_primitive_create(&s->conv, pd) ||
        !(s->w = cpu_alloc(wbytes)) ||
        dnnl_memory_create(&s->m_x, &xp, g_engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&s->m_y, &yp, g_engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&s->m_w, qw, g_engine, s->w) ||
        (has_bias && dnnl_memory_create(&s->m_b, &bm, g_engine, DNNL_MEMORY_NONE)) ||
        (sp && dnnl_memory_create(&s->m_sp, qsp, g_engine, DNNL_MEMORY_NONE)) ||
        (blk_x && (dnnl_memory_create(&s->m_xb, qx, g_engine, DNNL_MEMORY_NONE) || !make_reorder(&xp, qx, &s->r_src))) ||
        (blk_y && (dnnl_memory_create(&s->m_yb, qy, g_engine, DNNL_MEMORY_NONE) || !make_reorder(qy, &yp, &s->r_dst))) ||
        (blk_y && s->has_sum &&
         (dnnl_memory_create(&s->m_z, &yp, g_engine, DNNL_MEMORY_NONE) || !make_reorder(&yp, qy, &s->r_sum))) ||
        dnnl_memory_create(&m_wp, &wp, g_engine, (void *)w) || !make_reorder(&wp, qw, &r_w)) {
        rc = cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN %s): cannot build the primitive", impl);
        goto done;
    }
    dnnl_exec_arg_t wa[] = {{DNNL_ARG_FROM, m_wp}, {DNNL_ARG_TO, s->m_w}};
    if (dnnl_primitive_execute(r_w, s->stream, 2, wa) || dnnl_stream_wait(s->stream))
        rc = cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN %s): weight reorder failed", impl);
done:
    if (r_w) dnnl_primitive_destroy(r_w);
    if (m_wp) dnnl_memory_destroy(m_wp);
    dnnl_primitive_desc_destroy(pd);
    if (rc != NETRUN_OK) {
        cpu_dnnl_conv_destroy(s);
        return rc;
    }
    *out = s;
    *ws = s->ws_bytes;
    return NETRUN_OK;
}

size_t cpu_dnnl_conv_workspace(const cpu_dnnl_conv *s) { return s ? s->ws_bytes : 0; }

typedef struct act_job {
    float *y;
    int64_t n;
    const netrun_fused_activation *a;
} act_job;
static void act_range(void *arg, int64_t b, int64_t e) {
    const act_job *j = arg;
    gu_act_n(j->y + b, e - b, j->a);
}

netrun_status cpu_dnnl_conv_run(cpu_context *ctx, cpu_dnnl_conv *s, const float *x, const float *b,
                                const float *z, float *y, void *ws, size_t ws_size) {
    if (!ws || ws_size < s->ws_bytes || (s->has_bias && !b) || (s->has_sum && !z))
        return cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN): workspace or inputs missing at run");
    char *base = (char *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);
    omp_set_num_threads(s->threads);
    dnnl_status_t st = dnnl_memory_set_data_handle(s->m_x, (void *)x);
    st = st ? st : dnnl_memory_set_data_handle(s->m_y, y);
    if (!st && s->m_xb) st = dnnl_memory_set_data_handle(s->m_xb, base);
    if (!st && s->m_yb) st = dnnl_memory_set_data_handle(s->m_yb, base + s->off_yb);
    if (!st && s->m_sp) st = dnnl_memory_set_data_handle(s->m_sp, base + s->off_sp);
    if (!st && s->m_b) st = dnnl_memory_set_data_handle(s->m_b, (void *)b);
    if (!st && s->m_z) st = dnnl_memory_set_data_handle(s->m_z, (void *)z);
    dnnl_memory_t src = s->m_xb ? s->m_xb : s->m_x, dst = s->m_yb ? s->m_yb : s->m_y;
    if (!st && s->has_sum) { /* the sum post-op adds what dst holds before the primitive */
        if (s->r_sum) {
            dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, s->m_z}, {DNNL_ARG_TO, dst}};
            st = dnnl_primitive_execute(s->r_sum, s->stream, 2, a);
        } else if (z != y)
            memmove(y, z, (size_t)s->ny * sizeof(float));
    }
    if (!st && s->r_src) {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, s->m_x}, {DNNL_ARG_TO, s->m_xb}};
        st = dnnl_primitive_execute(s->r_src, s->stream, 2, a);
    }
    if (!st) {
        dnnl_exec_arg_t a[5] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, s->m_w}, {DNNL_ARG_DST, dst}};
        int n = 3;
        if (s->m_b) a[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, s->m_b};
        if (s->m_sp) a[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, s->m_sp};
        st = dnnl_primitive_execute(s->conv, s->stream, n, a);
    }
    if (!st && s->r_dst) {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, s->m_yb}, {DNNL_ARG_TO, s->m_y}};
        st = dnnl_primitive_execute(s->r_dst, s->stream, 2, a);
    }
    if (!st) st = dnnl_stream_wait(s->stream);
    if (st) return cpu_host->error(NETRUN_ERR_BACKEND, "Conv (oneDNN %s): execution failed (status %d)", s->impl, (int)st);
    if (!s->post_act && s->act.kind != NETRUN_ACT_NONE) {
        act_job j = {y, s->ny, &s->act};
        cpu_parallel_for(ctx, s->ny, 4096, act_range, &j);
    }
    return NETRUN_OK;
}

#else /* built without oneDNN */

int cpu_dnnl_available(void) { return 0; }
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
size_t cpu_dnnl_conv_workspace(const cpu_dnnl_conv *s) { (void)s; return 0; }
int cpu_dnnl_conv_describe(const netrun_conv_params *p, const int64_t *xd, const int64_t *wd,
                           const int64_t *yd, int has_bias, char *buf, size_t size) {
    (void)p, (void)xd, (void)wd, (void)yd, (void)has_bias, (void)buf, (void)size;
    return 0;
}

#endif
