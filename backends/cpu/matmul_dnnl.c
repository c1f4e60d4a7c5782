/* MatMul / Gemm on a constant B through oneDNN's matmul primitive (see matmul_dnnl.h). sgemm packs B into its
 * panel layout on every call; a network's linear layers always multiply by the same B, so here B is reordered
 * once, at kernel creation, into the layout the primitive asks for (format_tag any; on AVX-512 the brgemm
 * kernel's blocked layout) and kept with the node. Threads: B's columns are cut into one slice per thread of
 * netrun's pool, each slice packed on its own with its own single-threaded primitive (as conv_dnnl.c's output
 * channel slices), so that every byte of B is read by one thread only. Primitives depend on the rows of A and
 * are built on first use of a row count, on the calling thread, and kept (a few row counts per node).
 * oneDNN 2.6's brgemm kernel wants a dense Y (a slice of Y's columns sends it to gemm:jit, which packs B again
 * on each call): a slice of several computes into its own dense buffer and copies (or adds) it into Y's
 * columns, 2 x M x N floats moved against M x N x K FMAs. */
#include "matmul_dnnl.h"

#include <stdio.h>

#ifdef NETRUN_CPU_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include "conv_dnnl.h" /* cpu_dnnl_engine */

#define MM_PRIMS 4 /* row counts kept per slice: a run cut in micro-batches, a last partial batch, ... */

typedef struct mm_prim {
    int64_t m, lda, ldy;
    float alpha;
    int accumulate;
    int via_tmp; /* Y's columns are a slice of a wider Y: the primitive writes the slice's dense buffer */
    dnnl_primitive_t prim;
    dnnl_memory_t m_a, m_y, m_sp; /* data handles set on each run */
    size_t sp_bytes;
} mm_prim;

typedef struct mm_slice {
    int64_t n0, nc; /* columns [n0, n0 + nc) of B and Y */
    dnnl_memory_desc_t w_md; /* the packed layout */
    dnnl_memory_t m_w;
    float *w;
    size_t w_bytes;
    dnnl_stream_t stream;
    void *sp; /* scratchpad, grown to the largest of its primitives' */
    size_t sp_bytes;
    float *tmp; /* dense m x nc result when Y is wider than the slice (see via_tmp) */
    size_t tmp_bytes;
    mm_prim prims[MM_PRIMS];
    int n_prims, next_evict;
    int cur; /* the primitive the last prepare chose */
} mm_slice;

struct cpu_dnnl_mm {
    int64_t k, n;
    int n_slices;
    char impl[48];
    mm_slice sl[];
};

static void prim_clear(mm_prim *p) {
    if (p->prim) dnnl_primitive_destroy(p->prim);
    if (p->m_a) dnnl_memory_destroy(p->m_a);
    if (p->m_y) dnnl_memory_destroy(p->m_y);
    if (p->m_sp) dnnl_memory_destroy(p->m_sp);
    memset(p, 0, sizeof *p);
}

void cpu_dnnl_mm_destroy(cpu_dnnl_mm *s) {
    if (!s) return;
    for (int i = 0; i < s->n_slices; i++) {
        mm_slice *q = &s->sl[i];
        for (int j = 0; j < q->n_prims; j++) prim_clear(&q->prims[j]);
        if (q->m_w) dnnl_memory_destroy(q->m_w);
        if (q->stream) dnnl_stream_destroy(q->stream);
        if (q->w) cpu_free(q->w);
        if (q->sp) cpu_free(q->sp);
        if (q->tmp) cpu_free(q->tmp);
    }
    cpu_free(s);
}

/* Primitive descriptor for Y[m x nc] (ldy) = alpha A[m x k] (lda) W[k x nc], W in the layout `w` (NULL: any).
 * NULL when oneDNN has nothing but its reference loops for it. */
static dnnl_primitive_desc_t make_pd(int64_t m, int64_t k, int64_t nc, int64_t lda, int64_t ldy, float alpha,
                                     int accumulate, const dnnl_memory_desc_t *w, dnnl_memory_desc_t *a_md,
                                     dnnl_memory_desc_t *y_md) {
    dnnl_dims_t ad = {m, k}, as = {lda, 1}, yd = {m, nc}, ys = {ldy, 1}, wd = {k, nc};
    dnnl_memory_desc_t w_any;
    if (dnnl_memory_desc_init_by_strides(a_md, 2, ad, dnnl_f32, as) ||
        dnnl_memory_desc_init_by_strides(y_md, 2, yd, dnnl_f32, ys) ||
        dnnl_memory_desc_init_by_tag(&w_any, 2, wd, dnnl_f32, dnnl_format_tag_any))
        return NULL;
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, a_md, w ? w : &w_any, NULL, y_md)) return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_attr_create(&attr) || dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user))
        goto out;
    if (alpha != 1.0f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha)) goto out;
    if (accumulate && (dnnl_post_ops_create(&po) || dnnl_post_ops_append_sum(po, 1.0f) ||
                       dnnl_primitive_attr_set_post_ops(attr, po)))
        goto out;
    if (dnnl_primitive_desc_create(&pd, &md, attr, cpu_dnnl_engine(), NULL)) pd = NULL;
    const char *impl = "";
    if (pd && (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) || !strncmp(impl, "ref", 3))) {
        dnnl_primitive_desc_destroy(pd); /* the reference loops are far slower than sgemm */
        pd = NULL;
    }
out:
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return pd;
}

/* Reorder slice q's columns of B into the layout of pd. 1 done, 0 failed. */
static int pack_slice(mm_slice *q, dnnl_primitive_desc_t pd, int64_t k, int tb, const float *b, int64_t ldb) {
    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (!qw) return 0;
    q->w_md = *qw;
    q->w_bytes = dnnl_memory_desc_get_size(qw);
    dnnl_engine_t eng = cpu_dnnl_engine();
    dnnl_dims_t wd = {k, q->nc}, ws = {tb ? 1 : ldb, tb ? ldb : 1};
    const float *src = tb ? b + q->n0 * ldb : b + q->n0;
    dnnl_memory_desc_t plain;
    dnnl_memory_t m_src = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    int ok = 0;
    if (!(q->w = cpu_alloc(q->w_bytes)) || dnnl_memory_desc_init_by_strides(&plain, 2, wd, dnnl_f32, ws) ||
        dnnl_memory_create(&q->m_w, qw, eng, q->w) || dnnl_memory_create(&m_src, &plain, eng, (void *)src) ||
        dnnl_reorder_primitive_desc_create(&rpd, &plain, eng, qw, eng, NULL) || dnnl_primitive_create(&r, rpd))
        goto out;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, m_src}, {DNNL_ARG_TO, q->m_w}};
    if (omp_get_max_threads() != 1) omp_set_num_threads(1);
    ok = !dnnl_primitive_execute(r, q->stream, 2, args) && !dnnl_stream_wait(q->stream);
out:
    if (r) dnnl_primitive_destroy(r);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (m_src) dnnl_memory_destroy(m_src);
    return ok;
}

netrun_status cpu_dnnl_mm_create(int threads, int64_t k, int64_t n, int tb, const float *b, int64_t ldb,
                                 int64_t m_hint, cpu_dnnl_mm **out) {
    *out = NULL;
    if (!cpu_dnnl_available() || k <= 0 || n <= 0 || !b) return NETRUN_OK;
    /* slices of whole 64-column blocks (the brgemm kernel's N block on AVX-512) where they share out evenly,
     * else of 16 columns (ViT-Tiny's N = 192 at 2 threads: 64 + 128 columns left one thread half idle) */
    int ns = threads < 1 ? 1 : threads;
    int64_t blk = (n % 64 == 0 && (n / 64) % ns == 0) || n >= 64 * 8 * (int64_t)ns ? 64 : 16;
    int64_t nblk = (n + blk - 1) / blk;
    if (ns > nblk) ns = (int)nblk;
    cpu_dnnl_mm *s = cpu_alloc(sizeof *s + (size_t)ns * sizeof(mm_slice));
    if (!s) return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "MatMul: out of memory packing B");
    memset(s, 0, sizeof *s + (size_t)ns * sizeof(mm_slice));
    s->k = k;
    s->n = n;
    s->n_slices = ns;
    int64_t m = m_hint > 0 ? m_hint : 16;
    for (int i = 0; i < ns; i++) {
        mm_slice *q = &s->sl[i];
        int64_t b0 = nblk * i / ns, b1 = nblk * (i + 1) / ns;
        q->n0 = b0 * blk;
        q->nc = (b1 * blk < n ? b1 * blk : n) - q->n0;
        q->cur = -1;
        dnnl_memory_desc_t a_md, y_md;
        dnnl_primitive_desc_t pd = make_pd(m, k, q->nc, k, q->nc, 1.0f, 0, NULL, &a_md, &y_md);
        if (!pd) { /* no fast kernel: leave B to sgemm */
            cpu_dnnl_mm_destroy(s);
            return NETRUN_OK;
        }
        const char *impl = "";
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(s->impl, sizeof s->impl, "%s", impl);
        int ok = !dnnl_stream_create(&q->stream, cpu_dnnl_engine(), dnnl_stream_default_flags) &&
                 pack_slice(q, pd, k, tb, b, ldb);
        dnnl_primitive_desc_destroy(pd);
        if (!ok) {
            cpu_dnnl_mm_destroy(s);
            return cpu_host->error(NETRUN_ERR_BACKEND, "MatMul (oneDNN): packing B (%lld x %lld) failed",
                                   (long long)k, (long long)n);
        }
    }
    *out = s;
    return NETRUN_OK;
}

/* *buf holds at least `bytes` (its old contents are not kept). 0: out of memory. */
static int grow(void **buf, size_t *have, size_t bytes) {
    if (bytes <= *have) return 1;
    void *p = cpu_alloc(bytes);
    if (!p) return 0;
    if (*buf) cpu_free(*buf);
    *buf = p;
    *have = bytes;
    return 1;
}

/* The primitive of slice q for these rows: found or built; -1 when oneDNN declines. */
static int slice_prim(mm_slice *q, int64_t k, int64_t m, int64_t lda, int64_t ldy, float alpha, int acc) {
    for (int j = 0; j < q->n_prims; j++) {
        mm_prim *p = &q->prims[j];
        if (p->m == m && p->lda == lda && p->ldy == ldy && p->alpha == alpha && p->accumulate == acc) return j;
    }
    int via_tmp = ldy != q->nc;
    dnnl_memory_desc_t a_md, y_md;
    dnnl_primitive_desc_t pd =
        make_pd(m, k, q->nc, lda, via_tmp ? q->nc : ldy, alpha, acc && !via_tmp, &q->w_md, &a_md, &y_md);
    if (!pd) return -1;
    const dnnl_memory_desc_t *qw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *qsp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sp = qsp ? dnnl_memory_desc_get_size(qsp) : 0;
    int j = q->n_prims < MM_PRIMS ? q->n_prims : q->next_evict;
    mm_prim *p = &q->prims[j];
    if (q->n_prims == MM_PRIMS) {
        prim_clear(p);
        q->next_evict = (q->next_evict + 1) % MM_PRIMS;
    }
    int ok = qw && dnnl_memory_desc_equal(qw, &q->w_md) && /* the packed B must suit this primitive too */
             grow(&q->sp, &q->sp_bytes, sp) && (!via_tmp || grow((void **)&q->tmp, &q->tmp_bytes, (size_t)(m * q->nc) * 4));
    const dnnl_engine_t eng = cpu_dnnl_engine();
    ok = ok && !dnnl_primitive_create(&p->prim, pd) && !dnnl_memory_create(&p->m_a, &a_md, eng, DNNL_MEMORY_NONE) &&
         !dnnl_memory_create(&p->m_y, &y_md, eng, DNNL_MEMORY_NONE) &&
         (!sp || !dnnl_memory_create(&p->m_sp, qsp, eng, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(pd);
    if (!ok) {
        prim_clear(p);
        return -1;
    }
    p->m = m;
    p->lda = lda;
    p->ldy = ldy;
    p->alpha = alpha;
    p->accumulate = acc;
    p->via_tmp = via_tmp;
    p->sp_bytes = sp;
    if (q->n_prims < MM_PRIMS) q->n_prims++;
    return j;
}

int cpu_dnnl_mm_prepare(cpu_dnnl_mm *s, int64_t m, int64_t k, int64_t n, int64_t lda, int64_t ldy, float alpha,
                        int accumulate) {
    if (!s || m <= 0 || k != s->k || n != s->n) return 0;
    for (int i = 0; i < s->n_slices; i++)
        if ((s->sl[i].cur = slice_prim(&s->sl[i], s->k, m, lda, ldy, alpha, accumulate)) < 0) return 0;
    return 1;
}

int cpu_dnnl_mm_slices(const cpu_dnnl_mm *s) { return s ? s->n_slices : 0; }

void cpu_dnnl_mm_slice_cols(const cpu_dnnl_mm *s, int slice, int64_t *n0, int64_t *nc) {
    *n0 = s->sl[slice].n0;
    *nc = s->sl[slice].nc;
}

int cpu_dnnl_mm_exec_slice(cpu_dnnl_mm *s, int slice, int64_t m, const float *a, int64_t lda, float alpha,
                           int accumulate, float *y, int64_t ldy) {
    mm_slice *q = &s->sl[slice];
    if (q->cur < 0) return dnnl_invalid_arguments;
    mm_prim *p = &q->prims[q->cur];
    if (p->m != m || p->lda != lda || p->ldy != ldy || p->alpha != alpha || p->accumulate != accumulate)
        return dnnl_invalid_arguments; /* not what cpu_dnnl_mm_prepare built */
    if (omp_get_max_threads() != 1) omp_set_num_threads(1); /* a pool worker's own ICV; no OpenMP team */
    dnnl_status_t st;
    if ((st = dnnl_memory_set_data_handle(p->m_a, (void *)a)) ||
        (st = dnnl_memory_set_data_handle(p->m_y, p->via_tmp ? q->tmp : y + q->n0)) ||
        (p->m_sp && (st = dnnl_memory_set_data_handle(p->m_sp, q->sp))))
        return st;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, p->m_a}, {DNNL_ARG_WEIGHTS, q->m_w}, {DNNL_ARG_DST, p->m_y},
                              {DNNL_ARG_SCRATCHPAD, p->m_sp}};
    if ((st = dnnl_primitive_execute(p->prim, q->stream, p->m_sp ? 4 : 3, args)) || (st = dnnl_stream_wait(q->stream)))
        return st;
    if (p->via_tmp) {
        const int64_t nc = q->nc;
        for (int64_t r = 0; r < m; r++) {
            float *yr = y + r * ldy + q->n0;
            const float *tr = q->tmp + r * nc;
            if (accumulate)
                for (int64_t c = 0; c < nc; c++) yr[c] += tr[c];
            else
                memcpy(yr, tr, (size_t)nc * sizeof(float));
        }
    }
    return 0;
}

size_t cpu_dnnl_mm_bytes(const cpu_dnnl_mm *s) {
    size_t t = 0;
    for (int i = 0; s && i < s->n_slices; i++) t += s->sl[i].w_bytes;
    return t;
}

void cpu_dnnl_mm_describe(const cpu_dnnl_mm *s, char *buf, size_t size) {
    snprintf(buf, size, "oneDNN matmul %s, B packed (%d slice%s, %.1f MB)", s->impl, s->n_slices,
             s->n_slices > 1 ? "s" : "", (double)cpu_dnnl_mm_bytes(s) / 1e6);
}

#else /* built without oneDNN */

netrun_status cpu_dnnl_mm_create(int threads, int64_t k, int64_t n, int tb, const float *b, int64_t ldb,
                                 int64_t m_hint, cpu_dnnl_mm **out) {
    (void)threads, (void)k, (void)n, (void)tb, (void)b, (void)ldb, (void)m_hint;
    *out = NULL;
    return NETRUN_OK;
}
void cpu_dnnl_mm_destroy(cpu_dnnl_mm *s) { (void)s; }
int cpu_dnnl_mm_prepare(cpu_dnnl_mm *s, int64_t m, int64_t k, int64_t n, int64_t lda, int64_t ldy, float alpha,
                        int accumulate) {
    (void)s, (void)m, (void)k, (void)n, (void)lda, (void)ldy, (void)alpha, (void)accumulate;
    return 0;
}
int cpu_dnnl_mm_slices(const cpu_dnnl_mm *s) { (void)s; return 0; }
void cpu_dnnl_mm_slice_cols(const cpu_dnnl_mm *s, int slice, int64_t *n0, int64_t *nc) {
    (void)s, (void)slice;
    *n0 = *nc = 0;
}
int cpu_dnnl_mm_exec_slice(cpu_dnnl_mm *s, int slice, int64_t m, const float *a, int64_t lda, float alpha,
                           int accumulate, float *y, int64_t ldy) {
    (void)s, (void)slice, (void)m, (void)a, (void)lda, (void)alpha, (void)accumulate, (void)y, (void)ldy;
    return -1;
}
size_t cpu_dnnl_mm_bytes(const cpu_dnnl_mm *s) { (void)s; return 0; }
void cpu_dnnl_mm_describe(const cpu_dnnl_mm *s, char *buf, size_t size) {
    (void)s;
    snprintf(buf, size, "oneDNN (not built)");
}

#endif
