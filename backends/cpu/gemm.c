/* CPU kernels: gemm. Gemm and MatMul go through oneDNN's sgemm where the backend has oneDNN, else OpenBLAS
 * (sgemm/dgemm; each single-threaded); the output is cut
 * into (batch, row block, column block) tasks run on netrun's pool. float16 is computed in float32; integer
 * MatMul uses a plain loop with wrap-around arithmetic. */
/* gu_act_n's compare-and-select activations (gemm_util.h) vectorize only without trapping math: netrun never
 * enables FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <cblas.h>
#include <limits.h>
#include <stdio.h>

#include "conv_dnnl.h" /* cpu_dnnl_sgemm */
#include "gemm_util.h"
#include "matmul_dnnl.h"

typedef struct mm_job {
    netrun_dtype dt;              /* FLOAT, DOUBLE or an integer type */
    size_t esz;
    int ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t nbatch, nrb, ncb, rbs, cbs;
    int nb;                       /* batch dims of the output */
    int64_t bdims[NETRUN_MAX_RANK], sa[NETRUN_MAX_RANK], sb[NETRUN_MAX_RANK];
    int64_t amat, bmat;           /* elements per matrix of A, B */
    const char *a, *b;
    char *y;
    float alpha;
    /* Gemm's C (beta * C broadcast to [M, N]) */
    const char *c;
    int64_t c_rs, c_cs;
    float beta;
    const float *bias;            /* MatMulBias: + bias[column] after the product, before the activation (float32) */
    const float *res;             /* MatMulBias: + R (Y's shape, float32) after the bias, or NULL */
    netrun_fused_activation act;
} mm_job;

/* MatMulBias's bias on rows x cols of y (row stride ldc) from column c0: the Add it replaces, in cache; then the
 * residual R at y's offset, as the residual Add did ((product + bias) + R: the same bits). */
static void mm_add_bias(const mm_job *j, float *y, int64_t rows, int64_t cols, int64_t c0) {
    const float *restrict b = j->bias + c0;
    const int64_t ld = j->ldc;
    if (j->res) {
        const float *res = j->res + (y - (float *)j->y);
        for (int64_t r = 0; r < rows; r++) {
            float *yr = y + r * ld;
            const float *rr = res + r * ld;
            for (int64_t c = 0; c < cols; c++) yr[c] = (yr[c] + b[c]) + rr[c];
        }
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        float *restrict yr = y + r * ld;
        for (int64_t c = 0; c < cols; c++) yr[c] += b[c];
    }
}

static int64_t mm_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Cut M and N so that there are at least `threads` tasks when the batch alone does not give them. */
static void mm_blocks(mm_job *j, int threads) {
    int64_t need = j->nbatch >= threads ? 1 : (threads + j->nbatch - 1) / j->nbatch;
    int64_t nrb = 1, ncb = 1;
    if (need > 1) {
        if (j->m >= j->n) {
            nrb = mm_min(need, j->m > 0 ? j->m : 1);
            ncb = mm_min((need + nrb - 1) / nrb, j->n > 0 ? j->n : 1);
        } else {
            ncb = mm_min(need, j->n > 0 ? j->n : 1);
            nrb = mm_min((need + ncb - 1) / ncb, j->m > 0 ? j->m : 1);
        }
    }
    j->rbs = j->m > 0 ? (j->m + nrb - 1) / nrb : 1;
    j->cbs = j->n > 0 ? (j->n + ncb - 1) / ncb : 1;
    j->nrb = j->m > 0 ? (j->m + j->rbs - 1) / j->rbs : 0;
    j->ncb = j->n > 0 ? (j->n + j->cbs - 1) / j->cbs : 0;
}

#define NAIVE_MM(T)                                                                                           \
    static void naive_##T(const mm_job *j, const T *a, const T *b, T *y, int64_t rows, int64_t cols) {       \
        for (int64_t r = 0; r < rows; r++)                                                                    \
            for (int64_t c = 0; c < cols; c++) {                                                              \
                T acc = 0;                                                                                    \
                for (int64_t k = 0; k < j->k; k++) {                                                          \
                    T av = j->ta ? a[k * j->lda + r] : a[r * j->lda + k];                                     \
                    T bv = j->tb ? b[c * j->ldb + k] : b[k * j->ldb + c];                                     \
                    acc += av * bv;                                                                           \
                }                                                                                             \
                y[r * j->ldc + c] = acc;                                                                      \
            }                                                                                                 \
    }
NAIVE_MM(uint32_t)
NAIVE_MM(uint64_t)

static void mm_range(void *arg, int64_t t0, int64_t t1) {
    const mm_job *j = arg;
    for (int64_t t = t0; t < t1; t++) {
        int64_t bi = t / (j->nrb * j->ncb), rb = (t / j->ncb) % j->nrb, cb = t % j->ncb;
        int64_t r0 = rb * j->rbs, c0 = cb * j->cbs;
        int64_t rows = mm_min(j->rbs, j->m - r0), cols = mm_min(j->cbs, j->n - c0);
        int64_t aoff = 0, boff = 0, rem = bi;
        for (int d = j->nb - 1; d >= 0; d--) {
            int64_t i = rem % j->bdims[d];
            rem /= j->bdims[d];
            aoff += i * j->sa[d];
            boff += i * j->sb[d];
        }
        const char *a = j->a + (size_t)(aoff * j->amat + (j->ta ? r0 : r0 * j->lda)) * j->esz;
        const char *b = j->b + (size_t)(boff * j->bmat + (j->tb ? c0 * j->ldb : c0)) * j->esz;
        char *y = j->y + (size_t)(bi * j->m * j->ldc + r0 * j->ldc + c0) * j->esz;
        int has_c = j->c && j->beta != 0.0f;
        /* y = beta * C first, then accumulate alpha * A B onto it */
        if (has_c) {
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < cols; c++) {
                    size_t ci = (size_t)((r0 + r) * j->c_rs + (c0 + c) * j->c_cs);
                    if (j->dt == NETRUN_DTYPE_DOUBLE)
                        ((double *)y)[r * j->ldc + c] = (double)j->beta * ((const double *)j->c)[ci];
                    else
                        ((float *)y)[r * j->ldc + c] = j->beta * ((const float *)j->c)[ci];
                }
        }
        CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans, tb = j->tb ? CblasTrans : CblasNoTrans;
        switch (j->dt) {
        case NETRUN_DTYPE_FLOAT:
            if (j->k == 0) {
                if (!has_c)
                    for (int64_t r = 0; r < rows; r++) memset(y + (size_t)(r * j->ldc) * 4, 0, (size_t)cols * 4);
            } else if (rows == 1) {
                /* one row (a classifier at batch 1): a matrix-vector product reads B once; sgemm packs B
                 * first (1280x1000 B: 0.08 ms against 0.4 ms). For sgemv, y is zeroed rather than trusting
                 * beta = 0 not to propagate what the arena held (gu_gemv never reads y when beta is 0). */
                int inca = j->ta ? (int)j->lda : 1;
                if (j->tb && inca == 1) { /* B is [n x k]: y = B[c0.., :] a, rows of B prefetched */
                    gu_gemv(cols, j->k, j->alpha, (const float *)b, j->ldb, (const float *)a, has_c ? 1.0f : 0.0f,
                            (float *)y);
                } else {
                    if (!has_c) memset(y, 0, (size_t)cols * sizeof(float));
                    if (j->tb)
                        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)cols, (int)j->k, j->alpha, (const float *)b,
                                    (int)j->ldb, (const float *)a, inca, 1.0f, (float *)y, 1);
                    else /* B is [k x n]: y = B[:, c0..]^T a */
                        cblas_sgemv(CblasRowMajor, CblasTrans, (int)j->k, (int)cols, j->alpha, (const float *)b,
                                    (int)j->ldb, (const float *)a, inca, 1.0f, (float *)y, 1);
                }
            } else if (!cpu_dnnl_sgemm(j->ta, j->tb, rows, cols, j->k, j->alpha, (const float *)a, j->lda,
                                       (const float *)b, j->ldb, has_c ? 1.0f : 0.0f, (float *)y, j->ldc)) {
                cblas_sgemm(CblasRowMajor, ta, tb, (int)rows, (int)cols, (int)j->k, j->alpha, (const float *)a,
                            (int)j->lda, (const float *)b, (int)j->ldb, has_c ? 1.0f : 0.0f, (float *)y, (int)j->ldc);
            }
            if (j->bias) mm_add_bias(j, (float *)y, rows, cols, c0);
            if (j->act.kind != NETRUN_ACT_NONE)
                for (int64_t r = 0; r < rows; r++) gu_act_n((float *)y + r * j->ldc, cols, &j->act);
            break;
        case NETRUN_DTYPE_DOUBLE:
            if (j->k == 0) {
                if (!has_c)
                    for (int64_t r = 0; r < rows; r++) memset(y + (size_t)(r * j->ldc) * 8, 0, (size_t)cols * 8);
            } else {
                cblas_dgemm(CblasRowMajor, ta, tb, (int)rows, (int)cols, (int)j->k, j->alpha, (const double *)a,
                            (int)j->lda, (const double *)b, (int)j->ldb, has_c ? 1.0 : 0.0, (double *)y, (int)j->ldc);
            }
            if (j->act.kind != NETRUN_ACT_NONE)
                for (int64_t r = 0; r < rows; r++) {
                    double *yr = (double *)y + r * j->ldc;
                    for (int64_t c = 0; c < cols; c++) yr[c] = gu_act((float)yr[c], &j->act);
                }
            break;
        case NETRUN_DTYPE_INT32:
        case NETRUN_DTYPE_UINT32:
            naive_uint32_t(j, (const uint32_t *)a, (const uint32_t *)b, (uint32_t *)y, rows, cols);
            break;
        default:
            naive_uint64_t(j, (const uint64_t *)a, (const uint64_t *)b, (uint64_t *)y, rows, cols);
            break;
        }
    }
}

static size_t dtype_size(netrun_dtype dt) {
    switch (dt) {
    case NETRUN_DTYPE_DOUBLE:
    case NETRUN_DTYPE_INT64:
    case NETRUN_DTYPE_UINT64: return 8;
    case NETRUN_DTYPE_FLOAT16:
    case NETRUN_DTYPE_BFLOAT16: return 2;
    default: return 4;
    }
}

static int is_half(netrun_dtype dt) { return dt == NETRUN_DTYPE_FLOAT16 || dt == NETRUN_DTYPE_BFLOAT16; }

#define MM_DTYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                   NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE) | \
                   NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_INT64) |   \
                   NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT32) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_UINT64))
#define GEMM_DTYPES (NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT16) | \
                     NETRUN_DTYPE_BIT(NETRUN_DTYPE_BFLOAT16) | NETRUN_DTYPE_BIT(NETRUN_DTYPE_DOUBLE))

/* Per-node state: a constant float B packed once for oneDNN's matmul (matmul_dnnl.c), or NULL. */
typedef struct mm_state {
    cpu_dnnl_mm *packed;
} mm_state;

/* B packs when it is a constant float matrix (MatMul: one matrix, any leading dims of 1; Gemm without transA)
 * and A has a few rows: 2 to MM_PACK_MAX_ROWS. sgemm packs B on every call, which costs as much as the product
 * when A has few rows and B is large: a batch-8 classifier's FC layers (AlexNet's 8x4096x4096 at 1 thread 30.0 ->
 * 16.4 ms, 8x9216x4096 at 2 threads 67.8 -> 40.3), 32x768x3072 1.59 -> 1.25 ms. From 64 rows on, the packing is
 * amortized and the packed kernel was no faster (1 thread: 0.98-1.08x sgemm's time on 64..1576-row transformer
 * shapes; 2 threads 1.02-1.25x, the slices' copies into Y included). A vector A (M = 1) stays on gu_gemv, which
 * reads B once anyway. cpu.pack_matmul=0 keeps every MatMul on sgemm (measurements). */
#define MM_PACK_MAX_ROWS 48
static int64_t pack_rows_hint(const netrun_value_desc *a, int is_gemm, int trans_a) {
    if (a->rank < 1) return 0;
    if (is_gemm) return a->dims[trans_a ? 1 : 0];
    int64_t m = 1;
    for (int i = 0; i < a->rank - 1; i++) {
        if (a->dims[i] < 0) return 0;
        m *= a->dims[i];
    }
    return a->rank >= 2 ? m : 1;
}

static netrun_status mm_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = NULL;
    *ws = 0;
    gu_blas_single_thread();
    if (node->n_inputs < 2) return NETRUN_OK;
    const netrun_value_desc *A = &node->inputs[0], *B = &node->inputs[1];
    int is_gemm = !strcmp(node->op_type, "Gemm");
    const netrun_gemm_params *p = is_gemm ? node->params : NULL;
    const char *opt = cpu_option(ctx, "cpu.pack_matmul");
    if ((opt && !strcmp(opt, "0")) || A->dtype != NETRUN_DTYPE_FLOAT || B->dtype != NETRUN_DTYPE_FLOAT ||
        !B->const_data || B->rank < 2 || A->rank < 2 || (is_gemm && (!p || p->trans_a)))
        return NETRUN_OK;
    int64_t lead = 1;
    for (int i = 0; i < B->rank - 2; i++) lead *= B->dims[i];
    int64_t r = B->dims[B->rank - 2], c = B->dims[B->rank - 1];
    int tb = is_gemm && p->trans_b;
    int64_t k = tb ? c : r, n = tb ? r : c, m = pack_rows_hint(A, is_gemm, 0);
    if (lead != 1 || k <= 0 || n <= 0 || m == 1 || m > MM_PACK_MAX_ROWS ||
        B->const_nbytes < (size_t)(r * c) * sizeof(float))
        return NETRUN_OK;
    cpu_dnnl_mm *packed = NULL;
    netrun_status rc = cpu_dnnl_mm_create(ctx->threads, k, n, tb, B->const_data, c, m, &packed);
    if (rc != NETRUN_OK || !packed) return rc;
    mm_state *st = cpu_alloc(sizeof *st);
    if (!st) {
        cpu_dnnl_mm_destroy(packed);
        return cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory", node->op_type);
    }
    st->packed = packed;
    *state = st;
    return NETRUN_OK;
}

static void mm_destroy(void *state) {
    mm_state *st = state;
    if (!st) return;
    cpu_dnnl_mm_destroy(st->packed);
    cpu_free(st);
}

static void mm_describe_state(const void *state, char *buf, size_t size) {
    const mm_state *st = state;
    if (st && st->packed) cpu_dnnl_mm_describe(st->packed, buf, size);
}

/* One slice of B's columns on one thread: Y's columns of the slice = beta C, then += alpha A B, then the
 * activation, while they are in cache. */
typedef struct packed_job {
    const mm_job *j;
    cpu_dnnl_mm *mm;
    int failed; /* a oneDNN error in some slice (each slot writes only to say so) */
} packed_job;

static void packed_slot(void *arg, int64_t slot, int64_t t0, int64_t t1) {
    packed_job *pj = arg;
    const mm_job *j = pj->j;
    int has_c = j->c && j->beta != 0.0f;
    for (int64_t t = t0; t < t1; t++) {
        int64_t n0, nc;
        cpu_dnnl_mm_slice_cols(pj->mm, (int)t, &n0, &nc);
        float *y = (float *)j->y;
        if (has_c)
            for (int64_t r = 0; r < j->m; r++)
                for (int64_t c = n0; c < n0 + nc; c++)
                    y[r * j->ldc + c] = j->beta * ((const float *)j->c)[(size_t)(r * j->c_rs + c * j->c_cs)];
        if (cpu_dnnl_mm_exec_slice(pj->mm, (int)t, j->m, (const float *)j->a, j->lda, j->alpha, has_c, y, j->ldc)) {
            pj->failed = 1;
            continue;
        }
        if (j->bias) mm_add_bias(j, y + n0, j->m, nc, n0);
        if (j->act.kind != NETRUN_ACT_NONE)
            for (int64_t r = 0; r < j->m; r++) gu_act_n(y + r * j->ldc + n0, nc, &j->act);
    }
    (void)slot;
}

/* The packed path when it applies: 1 done, 0 not taken (the caller runs sgemm), -1 a oneDNN error. */
static int mm_packed(cpu_context *ctx, const mm_state *st, mm_job *j, netrun_dtype dt) {
    if (!st || !st->packed || dt != NETRUN_DTYPE_FLOAT || j->ta || j->nbatch != 1 || j->m < 2 ||
        j->m > MM_PACK_MAX_ROWS || j->k <= 0)
        return 0;
    if (!cpu_dnnl_mm_prepare(st->packed, j->m, j->k, j->n, j->lda, j->ldc, j->alpha, j->c && j->beta != 0.0f)) return 0;
    packed_job pj = {j, st->packed, 0};
    int ns = cpu_dnnl_mm_slices(st->packed);
    gu_run_slots(ctx, ns, ns, packed_slot, &pj);
    return pj.failed ? -1 : 1;
}

/* Run the job, staging float16/bfloat16 through float32. */
static netrun_status mm_execute(cpu_context *ctx, const mm_state *st, mm_job *j, netrun_dtype dt, int64_t na,
                                int64_t nb, int64_t nc, int64_t ny, const char *op) {
    if (j->m > INT_MAX || j->n > INT_MAX || j->k > INT_MAX || j->lda > INT_MAX || j->ldb > INT_MAX ||
        j->ldc > INT_MAX)
        return cpu_host->error(NETRUN_ERR_UNSUPPORTED, "%s: a dimension exceeds the BLAS int range", op);
    if (ny == 0) return NETRUN_OK;
    int packed = mm_packed(ctx, st, j, dt);
    if (packed < 0) return cpu_host->error(NETRUN_ERR_BACKEND, "%s: oneDNN matmul on the packed B failed", op);
    if (packed) return NETRUN_OK;
    mm_blocks(j, ctx->threads);
    int64_t tasks = j->nbatch * j->nrb * j->ncb;
    if (!is_half(dt)) {
        j->dt = dt;
        j->esz = dtype_size(dt);
        cpu_parallel_for(ctx, tasks, 1, mm_range, j);
        return NETRUN_OK;
    }
    float *ta = NULL, *tb = NULL, *tc = NULL;
    float *ty = cpu_alloc((size_t)ny * sizeof(float));
    const void *hy = j->y;
    j->a = (const char *)gu_to_float(dt, j->a, na, &ta);
    j->b = (const char *)gu_to_float(dt, j->b, nb, &tb);
    if (j->c) j->c = (const char *)gu_to_float(dt, j->c, nc, &tc);
    netrun_status rc = NETRUN_OK;
    if (!ty || !j->a || !j->b || (nc && !j->c)) {
        rc = cpu_host->error(NETRUN_ERR_OUT_OF_MEMORY, "%s: out of memory staging 16-bit tensors", op);
    } else {
        j->dt = NETRUN_DTYPE_FLOAT;
        j->esz = 4;
        j->y = (char *)ty;
        cpu_parallel_for(ctx, tasks, 1, mm_range, j);
        gu_from_float(dt, ty, ny, (void *)hy);
    }
    gu_free(ta);
    gu_free(tb);
    gu_free(tc);
    gu_free(ty);
    return rc;
}

static netrun_status gemm_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_gemm_params *p = args->params;
    if (!p || args->n_inputs < 2 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Gemm: missing params or inputs");
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1];
    const netrun_tensor *C = p->has_c && args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    netrun_tensor *Y = &args->outputs[0];
    if (A->rank != 2 || B->rank != 2 || Y->rank != 2 || (C && C->rank > 2))
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Gemm: A, B, Y must be 2-D");
    mm_job j;
    memset(&j, 0, sizeof j);
    j.ta = p->trans_a;
    j.tb = p->trans_b;
    j.m = Y->dims[0];
    j.n = Y->dims[1];
    j.k = p->trans_a ? A->dims[0] : A->dims[1];
    j.lda = A->dims[1];
    j.ldb = B->dims[1];
    j.ldc = j.n;
    j.nbatch = 1;
    j.amat = j.bmat = 0;
    j.a = A->data;
    j.b = B->data;
    j.y = Y->data;
    j.alpha = p->alpha;
    j.beta = p->beta;
    j.act = p->activation;
    int64_t nc = 0;
    if (C) {
        j.c = C->data;
        nc = gu_count(C);
        int64_t d0 = C->rank == 2 ? C->dims[0] : 1, d1 = C->rank >= 1 ? C->dims[C->rank - 1] : 1;
        j.c_rs = d0 == 1 ? 0 : d1;
        j.c_cs = d1 == 1 ? 0 : 1;
    }
    int64_t na = gu_count(A), nb = gu_count(B), ny = gu_count(Y);
    if (na < 0 || nb < 0 || ny < 0 || nc < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "Gemm: tensor too large");
    return mm_execute(ctx, state, &j, A->dtype, na, nb, nc, ny, "Gemm");
}

/* MatMul, or MatMulBias with its bias (float32 [N]), activation or residual (float32, Y's shape). */
static netrun_status matmul_exec(cpu_context *ctx, void *state, const netrun_kernel_args *args, const float *bias,
                                 const float *res, const netrun_fused_activation *act) {
    if (args->n_inputs < 2 || args->n_outputs < 1)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MatMul: needs 2 inputs");
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    if (A->rank < 1 || B->rank < 1) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MatMul: scalar operand");
    mm_job j;
    memset(&j, 0, sizeof j);
    /* 1-D A is [1, K]; 1-D B is [K, 1] (ldb 1) */
    j.m = A->rank >= 2 ? A->dims[A->rank - 2] : 1;
    j.k = A->dims[A->rank - 1];
    j.n = B->rank >= 2 ? B->dims[B->rank - 1] : 1;
    j.lda = j.k;
    j.ldb = j.n;
    j.ldc = j.n;
    j.amat = j.m * j.k;
    j.bmat = j.k * j.n;
    j.alpha = 1.0f;
    j.a = A->data;
    j.b = B->data;
    j.y = Y->data;
    j.bias = bias;
    j.res = res;
    if (act) j.act = *act;
    int ra = A->rank > 2 ? A->rank - 2 : 0, rb = B->rank > 2 ? B->rank - 2 : 0;
    int nb = Y->rank - (A->rank >= 2) - (B->rank >= 2);
    if (nb < 0 || nb < ra || nb < rb) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MatMul: bad output rank");
    int64_t bcount_b = 1;
    for (int i = 0; i < rb; i++) bcount_b *= B->dims[i];
    j.nbatch = 1;
    for (int i = 0; i < nb; i++) j.nbatch *= Y->dims[i];
    if (bcount_b == 1 && A->rank >= 2) {
        /* B is one matrix: stack every batch of A into one tall GEMM */
        j.m *= j.nbatch;
        j.nbatch = 1;
        j.nb = 0;
    } else {
        j.nb = nb;
        for (int i = 0; i < nb; i++) j.bdims[i] = Y->dims[i];
        cpu_broadcast_strides(ra, A->dims, nb, Y->dims, j.sa);
        cpu_broadcast_strides(rb, B->dims, nb, Y->dims, j.sb);
    }
    int64_t na = gu_count(A), nbc = gu_count(B), ny = gu_count(Y);
    if (na < 0 || nbc < 0 || ny < 0) return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MatMul: tensor too large");
    return mm_execute(ctx, state, &j, A->dtype, na, nbc, 0, ny, bias ? "MatMulBias" : "MatMul");
}

static netrun_status matmul_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    return matmul_exec(ctx, state, args, NULL, NULL, NULL);
}

/* Input 3 of a MatMulBias is R of Y's shape and dtype (the residual Add), without an activation. */
static int mmbias_res_ok(const netrun_value_desc *r, const netrun_value_desc *y, const netrun_gemm_params *p) {
    if (r->dtype != NETRUN_DTYPE_FLOAT || r->rank != y->rank || p->activation.kind != NETRUN_ACT_NONE) return 0;
    for (int i = 0; i < r->rank; i++)
        if (r->dims[i] != y->dims[i]) return 0;
    return 1;
}

/* MatMulBias (com.netrun, the graph passes'): float32 only, so that Y is what MatMul, Add and Relu (or the tanh
 * Gelu node, whose loop it calls) give bit for bit (the bias, then the residual R, are added to the finished
 * product, as the Adds did), with one to three passes over Y less. R never shares Y's memory (cpu_may_alias
 * declines the com.netrun domain): each block of Y reads its own block of R. */
static netrun_status mmbias_run(cpu_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_gemm_params *p = args->params;
    if (!p || (args->n_inputs != 3 && args->n_inputs != 4) || args->n_outputs < 1 || args->inputs[2].rank != 1 ||
        args->inputs[2].dtype != NETRUN_DTYPE_FLOAT || args->inputs[0].rank < 2 || args->inputs[1].rank != 2 ||
        args->inputs[2].dims[0] != args->inputs[1].dims[1])
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MatMulBias: needs A, 2-D B and bias [N] (float32)");
    const netrun_tensor *R = args->n_inputs == 4 ? &args->inputs[3] : NULL;
    int r_ok = !R || (R->dtype == NETRUN_DTYPE_FLOAT && R->rank == args->outputs[0].rank &&
                      p->activation.kind == NETRUN_ACT_NONE && R->data != args->outputs[0].data);
    for (int i = 0; R && r_ok && i < R->rank; i++) r_ok = R->dims[i] == args->outputs[0].dims[i];
    if (!r_ok)
        return cpu_host->error(NETRUN_ERR_INVALID_ARGUMENT, "MatMulBias: residual R must be float32 of Y's shape "
                               "(not Y's memory), without an activation");
    return matmul_exec(ctx, state, args, args->inputs[2].data, R ? R->data : NULL, &p->activation);
}

static int mmbias_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_gemm_params *p = node->params;
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].dtype != NETRUN_DTYPE_FLOAT) {
            snprintf(reason, size, "MatMulBias: float32 only on the CPU");
            return 0;
        }
    if ((node->n_inputs != 3 && node->n_inputs != 4) || !p || node->params_size < sizeof *p ||
        (p->activation.kind != NETRUN_ACT_NONE && p->activation.kind != NETRUN_ACT_RELU &&
         p->activation.kind != NETRUN_ACT_GELU_TANH)) {
        snprintf(reason, size, "MatMulBias: activation none, Relu or tanh Gelu only on the CPU");
        return 0;
    }
    if (node->n_inputs == 4 && (node->n_outputs < 1 || !mmbias_res_ok(&node->inputs[3], &node->outputs[0], p))) {
        snprintf(reason, size, "MatMulBias: a residual R of Y's shape, without an activation, only");
        return 0;
    }
    return 1;
}

static int gemm_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = node->n_inputs > 0 ? node->inputs[0].dtype : NETRUN_DTYPE_UNDEFINED;
    uint64_t mask = !strcmp(node->op_type, "Gemm") ? GEMM_DTYPES : MM_DTYPES;
    if (!(mask & NETRUN_DTYPE_BIT(t))) {
        snprintf(reason, size, "dtype %d not supported by the CPU %s kernel", (int)t, node->op_type);
        return 0;
    }
    return 1;
}

const cpu_op cpu_ops_gemm[] = {
    {"Gemm", "", GEMM_DTYPES, "C unidirectionally broadcast; fused activation", gemm_supports, mm_create, gemm_run,
     mm_destroy, NULL, mm_describe_state},
    {"MatMul", "", MM_DTYPES, "numpy broadcasting of batch dims; integers by a plain loop", gemm_supports, mm_create,
     matmul_run, mm_destroy, NULL, mm_describe_state},
    {"MatMulBias", "com.netrun", NETRUN_DTYPE_BIT(NETRUN_DTYPE_FLOAT),
     "graph passes' MatMul + bias [+ Relu / tanh Gelu | + residual R]: 2-D B, bias [N], float32", mmbias_supports,
     mm_create, mmbias_run, mm_destroy, NULL, mm_describe_state},
    {0},
};
