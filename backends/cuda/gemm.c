/* CUDA kernels: gemm. Gemm and MatMul through cuBLAS (float32 and float16, float accumulation). Row-major
 * products are computed as the column-major transposed product: Y^T = B^T A^T. TF32 tensor cores are used
 * only when the session's precision allows it. MatMul broadcasts batch dims: when the batch offsets of A and
 * B are arithmetic sequences one strided-batched call runs them all (a broadcast B over a contiguous A
 * becomes one tall GEMM), otherwise one call per batch. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "cuda_internal.h"

static int gemm_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = cuda_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t) return cuda_refuse(reason, size, "mixed dtypes");
    /* apply_act (cuda_kernels.cuh) knows kinds up to SWISH; a newer kind would silently be the identity */
    const netrun_gemm_params *p = node->params;
    if (!strcmp(node->op_type, "Gemm") && p && node->params_size >= sizeof *p &&
        ((int)p->activation.kind < 0 || p->activation.kind > NETRUN_ACT_SWISH))
        return cuda_refuse(reason, size, "fused activation kind %d not implemented", (int)p->activation.kind);
    return 1;
}

static cublasComputeType_t compute_type(cuda_context *ctx, netrun_dtype dt) {
    if (dt == NETRUN_DTYPE_FLOAT && ctx->config.precision != NETRUN_PRECISION_FP32) return CUBLAS_COMPUTE_32F_FAST_TF32;
    return CUBLAS_COMPUTE_32F;
}

/* Row-major Y[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * Y, batched with element strides. half_in:
 * A and B are float16, Y float32 (tensor cores, float accumulation). */
static netrun_status row_gemm_ex(cuda_context *ctx, netrun_dtype dt, int half_in, int ta, int tb, int64_t m, int64_t n,
                                 int64_t k, float alpha, const void *A, int64_t sa, const void *B, int64_t sb, float beta,
                                 void *Y, int64_t sy, int64_t batch) {
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda gemm: dims beyond int32");
    cudaDataType_t t = dt == NETRUN_DTYPE_FLOAT16 ? CUDA_R_16F : CUDA_R_32F, tin = half_in ? CUDA_R_16F : t;
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    cublasStatus_t s = cublasGemmStridedBatchedEx(ctx->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                  (int)n, (int)m, (int)k, &alpha, B, tin, ldb, sb, A, tin, lda, sa, &beta, Y, t,
                                                  (int)n, sy, (int)batch,
                                                  half_in ? CUBLAS_COMPUTE_32F : compute_type(ctx, dt), CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? NETRUN_OK : cublas_fail(s, "cublasGemmStridedBatchedEx");
}

static netrun_status row_gemm(cuda_context *ctx, netrun_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                              float alpha, const void *A, int64_t sa, const void *B, int64_t sb, float beta, void *Y,
                              int64_t sy, int64_t batch) {
    return row_gemm_ex(ctx, dt, 0, ta, tb, m, n, k, alpha, A, sa, B, sb, beta, Y, sy, batch);
}

netrun_status cuda_gemm_rows_batched(cuda_context *ctx, netrun_dtype in, netrun_dtype out, int ta, int tb, int64_t m,
                                     int64_t n, int64_t k, float alpha, const void *A, int64_t lda, int64_t sa,
                                     const void *B, int64_t ldb, int64_t sb, void *Y, int64_t ldy, int64_t sy,
                                     int64_t batch, void *const *ptrs) {
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX || ldy > INT32_MAX ||
        batch > INT32_MAX)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda batched gemm: dims beyond int32");
    if (!ctx->cublas) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda batched gemm: no cuBLAS handle");
    cudaDataType_t ti = in == NETRUN_DTYPE_FLOAT16 ? CUDA_R_16F : CUDA_R_32F;
    cudaDataType_t to = out == NETRUN_DTYPE_FLOAT16 ? CUDA_R_16F : CUDA_R_32F;
    cublasComputeType_t ct = in == NETRUN_DTYPE_FLOAT16 ? CUBLAS_COMPUTE_32F : compute_type(ctx, NETRUN_DTYPE_FLOAT);
    cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N, oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const float beta = 0.0f;
    cublasStatus_t s;
    /* column-major: Y^T = op(B)^T op(A)^T */
    if (!ptrs)
        s = cublasGemmStridedBatchedEx(ctx->cublas, ob, oa, (int)n, (int)m, (int)k, &alpha, B, ti, (int)ldb, sb, A, ti,
                                       (int)lda, sa, &beta, Y, to, (int)ldy, sy, (int)batch, ct, CUBLAS_GEMM_DEFAULT);
    else
        s = cublasGemmBatchedEx(ctx->cublas, ob, oa, (int)n, (int)m, (int)k, &alpha, (const void *const *)ptrs + batch,
                                ti, (int)ldb, (const void *const *)ptrs, ti, (int)lda, &beta, ptrs + 2 * batch, to,
                                (int)ldy, (int)batch, ct, CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? NETRUN_OK : cublas_fail(s, ptrs ? "cublasGemmBatchedEx" : "cublasGemmStridedBatchedEx");
}

/* --precision fp16 on a float32 Gemm / MatMul whose B is a constant matrix: B is converted to float16 once; the
 * float32 (TF32) product and the float16 one (A converted per run, float32 output straight from cuBLAS) are
 * timed at kernel creation on the real shapes and the faster kept. */
typedef struct gemm_state {
    int use16;
    int ta, tb;
    int64_t m, n, k;             /* of the product (MatMul: batch folded into m) */
    int64_t a_count;
    void *b16;
    double ms32, ms16;
    char desc[128];
} gemm_state;

typedef struct gemm_io {
    gemm_state *st;
    int half;
    const void *a, *b;
    void *y, *a16;
} gemm_io;

static netrun_status gemm_exec(cuda_context *ctx, void *arg) {
    gemm_io *io = arg;
    gemm_state *st = io->st;
    if (!io->half)
        return row_gemm(ctx, NETRUN_DTYPE_FLOAT, st->ta, st->tb, st->m, st->n, st->k, 1.0f, io->a, 0, io->b, 0, 0.0f,
                        io->y, 0, 1);
    netrun_status s = cuda_f32_to_f16(ctx, io->a, io->a16, 1, 1, st->a_count, 0);
    if (s != NETRUN_OK) return s;
    return row_gemm_ex(ctx, NETRUN_DTYPE_FLOAT, 1, st->ta, st->tb, st->m, st->n, st->k, 1.0f, io->a16, 0, st->b16, 0, 0.0f,
                       io->y, 0, 1);
}

static void gemm_destroy(cuda_context *ctx, void *state) {
    (void)ctx;
    gemm_state *st = state;
    if (!st) return;
    if (st->b16) cudaFree(st->b16);
    cuda_host->free(st);
}

void cuda_gemm_describe(void *state, char *buf, size_t size) {
    gemm_state *st = state;
    snprintf(buf, size, "%s", st ? st->desc : "");
}

static netrun_status gemm_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *ws = 0;
    *state = NULL;
    const netrun_value_desc *A = &node->inputs[0], *B = &node->inputs[1];
    if (ctx->config.precision != NETRUN_PRECISION_FP16 || cuda_main_dtype(node) != NETRUN_DTYPE_FLOAT || !B->const_data ||
        B->rank != 2 || cuda_desc_count(A) <= 0 || cuda_desc_count(B) <= 0 ||
        (size_t)cuda_desc_count(B) * 4 != B->const_nbytes || node->n_outputs < 1 || cuda_desc_count(&node->outputs[0]) <= 0)
        return NETRUN_OK; /* float32 only: nothing to prepare */
    int gemm = !strcmp(node->op_type, "Gemm");
    const netrun_gemm_params *p = node->params;
    if (gemm && (!p || A->rank != 2)) return NETRUN_OK;
    if (!gemm && A->rank < 2) return NETRUN_OK;
    gemm_state *st = cuda_host->alloc(sizeof *st, 16);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda gemm: out of memory");
    memset(st, 0, sizeof *st);
    st->ta = gemm ? p->trans_a : 0;
    st->tb = gemm ? p->trans_b : 0;
    st->a_count = cuda_desc_count(A);
    st->k = st->ta ? A->dims[0] : A->dims[A->rank - 1];
    st->n = st->tb ? B->dims[0] : B->dims[1];
    st->m = st->a_count / (st->k ? st->k : 1);
    int64_t nb = cuda_desc_count(B), mn;
    if (__builtin_mul_overflow(st->m, st->n, &mn) || mn > INT64_MAX / 8 || st->a_count > INT64_MAX / 8) {
        gemm_destroy(ctx, st); /* too big to time: float32 */
        return NETRUN_OK;
    }
    uint16_t *h = malloc(B->const_nbytes / 2); /* nb float16 values: const_nbytes = 4 * nb was checked */
    if (!h) {
        gemm_destroy(ctx, st);
        return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda gemm: out of memory converting B");
    }
    for (int64_t i = 0; i < nb; i++) h[i] = cuda_half_bits(((const float *)B->const_data)[i]);
    cudaError_t e = cudaMalloc(&st->b16, B->const_nbytes / 2);
    if (e == cudaSuccess) e = cudaMemcpy(st->b16, h, B->const_nbytes / 2, cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess) {
        gemm_destroy(ctx, st);
        return cuda_fail(e, "uploading float16 B");
    }
    /* time both on scratch buffers of the real sizes */
    size_t ab = ((size_t)st->a_count * 4 + 255) & ~(size_t)255, bb = ((size_t)nb * 4 + 255) & ~(size_t)255;
    size_t yb = (size_t)mn * 4, a16b = (size_t)st->a_count * 2;
    char *buf = NULL;
    st->ms32 = st->ms16 = -1;
    if (cudaMalloc((void **)&buf, ab + bb + ((yb + 255) & ~(size_t)255) + a16b) == cudaSuccess) {
        cudaMemsetAsync(buf, 0, ab + bb, ctx->stream);
        gemm_io io = {st, 0, buf, buf + ab, buf + ab + bb, buf + ab + bb + ((yb + 255) & ~(size_t)255)};
        st->ms32 = cuda_time_runs(ctx, gemm_exec, &io, 2, 5, NULL, 0);
        io.half = 1;
        st->ms16 = cuda_time_runs(ctx, gemm_exec, &io, 2, 5, NULL, 0);
        cudaStreamSynchronize(ctx->stream);
        cudaFree(buf);
    }
    cudaGetLastError();
    st->use16 = st->ms16 > 0 && (st->ms32 <= 0 || st->ms16 < st->ms32 * 0.97);
    snprintf(st->desc, sizeof st->desc, "cublas %s (timed fp32 %.3f / fp16 %.3f ms)", st->use16 ? "fp16 in, fp32 out" : "fp32",
             st->ms32, st->ms16);
    cuda_host->log(NETRUN_LOG_INFO, "cuda", "%s %s: fp32 %.4f ms, fp16 %.4f ms -> %s", node->op_type, node->name, st->ms32,
                   st->ms16, st->use16 ? "fp16" : "fp32");
    *ws = st->use16 ? a16b : 0;
    *state = st;
    return NETRUN_OK;
}

/* The float16 product when creation chose it and the shapes are the ones it was timed on. */
static int use_half(const gemm_state *st, const netrun_kernel_args *args, int64_t m, int64_t n, int64_t k) {
    return st && st->use16 && m == st->m && n == st->n && k == st->k && cuda_count(&args->inputs[0]) == st->a_count &&
           args->workspace_size >= (size_t)st->a_count * 2;
}

static netrun_status gemm_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_gemm_params *p = args->params;
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    if (!p || A->rank != 2 || B->rank != 2 || Y->rank != 2)
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda Gemm: needs 2-D A and B");
    int64_t m = Y->dims[0], n = Y->dims[1], k = p->trans_a ? A->dims[0] : A->dims[1];
    if (m == 0 || n == 0) return NETRUN_OK;
    float beta = 0.0f;
    size_t es = cuda_esize(Y->dtype);
    const netrun_tensor *C = p->has_c && args->n_inputs > 2 && args->inputs[2].rank >= 0 ? &args->inputs[2] : NULL;
    if (C && p->beta != 0.0f && cuda_count(C) > 0) {
        int64_t st[NETRUN_MAX_RANK];
        cuda_broadcast_strides(C->rank, C->dims, 2, Y->dims, st);
        netrun_status s = cuda_expand(ctx, es, Y->data, C->data, 2, Y->dims, st);
        if (s != NETRUN_OK) return s;
        beta = p->beta;
    }
    netrun_status s;
    if (k == 0) { /* empty product: Y = beta * C */
        if (beta == 0.0f) {
            cudaError_t e = cudaMemsetAsync(Y->data, 0, Y->nbytes, ctx->stream);
            if (e != cudaSuccess) return cuda_fail(e, "Gemm memset");
        } else if (beta != 1.0f) {
            s = row_gemm(ctx, Y->dtype, 0, 0, m, n, 0, 0.0f, A->data, 0, B->data, 0, beta, Y->data, 0, 1);
            if (s != NETRUN_OK) return s;
        }
    } else {
        gemm_state *gs = state;
        if (use_half(gs, args, m, n, k)) {
            void *a16 = cuda_workspace_address(args->workspace);
            if ((s = cuda_f32_to_f16(ctx, A->data, a16, 1, 1, gs->a_count, 0)) != NETRUN_OK) return s;
            s = row_gemm_ex(ctx, Y->dtype, 1, p->trans_a, p->trans_b, m, n, k, p->alpha, a16, 0, gs->b16, 0, beta, Y->data,
                            0, 1);
        } else
            s = row_gemm(ctx, Y->dtype, p->trans_a, p->trans_b, m, n, k, p->alpha, A->data, 0, B->data, 0, beta, Y->data,
                         0, 1);
        if (s != NETRUN_OK) return s;
    }
    return cuda_bias_activation(ctx, Y->dtype, Y->data, NULL, 1, m, n, &p->activation);
}

static netrun_status matmul_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1];
    netrun_tensor *Y = &args->outputs[0];
    if (A->rank < 1 || B->rank < 1) return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda MatMul: scalar input");
    int64_t m = A->rank == 1 ? 1 : A->dims[A->rank - 2], k = A->dims[A->rank - 1];
    int64_t n = B->rank == 1 ? 1 : B->dims[B->rank - 1];
    int64_t count = cuda_count(Y);
    if (count == 0) return NETRUN_OK;
    if (k == 0) {
        cudaError_t e = cudaMemsetAsync(Y->data, 0, Y->nbytes, ctx->stream);
        return e == cudaSuccess ? NETRUN_OK : cuda_fail(e, "MatMul memset");
    }
    /* batch dims: the output's leading dims (all but the matrix dims) */
    int ab = A->rank > 2 ? A->rank - 2 : 0, bb = B->rank > 2 ? B->rank - 2 : 0;
    int nb = ab > bb ? ab : bb;
    int64_t bdims[NETRUN_MAX_RANK], sa[NETRUN_MAX_RANK] = {0}, sb[NETRUN_MAX_RANK] = {0};
    int64_t batch = 1;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - ab), ib = i - (nb - bb);
        int64_t da = ia >= 0 ? A->dims[ia] : 1, db = ib >= 0 ? B->dims[ib] : 1;
        bdims[i] = da > db ? da : db;
        batch *= bdims[i];
    }
    /* element strides of A and B per batch dim (0 where broadcast) */
    int64_t s_a = m * k, s_b = k * n;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - ab), ib = i - (nb - bb);
        int64_t da = ia >= 0 ? A->dims[ia] : 1, db = ib >= 0 ? B->dims[ib] : 1;
        sa[i] = da == 1 ? 0 : s_a;
        sb[i] = db == 1 ? 0 : s_b;
        s_a *= da;
        s_b *= db;
    }
    size_t es = cuda_esize(Y->dtype);
    /* B shared by all batches and A contiguous: one tall GEMM */
    int b_shared = 1, a_full = 1;
    for (int i = 0; i < nb; i++) {
        if (sb[i]) b_shared = 0;
        if (bdims[i] > 1 && !sa[i]) a_full = 0;
    }
    if (b_shared && a_full) {
        gemm_state *gs = state;
        if (use_half(gs, args, m * batch, n, k)) {
            void *a16 = cuda_workspace_address(args->workspace);
            netrun_status s = cuda_f32_to_f16(ctx, A->data, a16, 1, 1, gs->a_count, 0);
            if (s != NETRUN_OK) return s;
            return row_gemm_ex(ctx, Y->dtype, 1, 0, 0, m * batch, n, k, 1.0f, a16, 0, gs->b16, 0, 0.0f, Y->data, 0, 1);
        }
        return row_gemm(ctx, Y->dtype, 0, 0, m * batch, n, k, 1.0f, A->data, 0, B->data, 0, 0.0f, Y->data, 0, 1);
    }
    /* offsets of batch j: arithmetic sequences? */
    int64_t step_a = 0, step_b = 0, prev_a = 0, prev_b = 0;
    int arith = 1;
    for (int64_t j = 0; j < batch && arith; j++) {
        int64_t r = j, oa = 0, ob = 0;
        for (int i = nb - 1; i >= 0; i--) {
            int64_t c = r % bdims[i];
            r /= bdims[i];
            oa += c * sa[i];
            ob += c * sb[i];
        }
        if (j == 1) {
            step_a = oa - prev_a;
            step_b = ob - prev_b;
        } else if (j > 1 && (oa - prev_a != step_a || ob - prev_b != step_b))
            arith = 0;
        prev_a = oa;
        prev_b = ob;
    }
    if (arith)
        return row_gemm(ctx, Y->dtype, 0, 0, m, n, k, 1.0f, A->data, step_a, B->data, step_b, 0.0f, Y->data, m * n, batch);
    for (int64_t j = 0; j < batch; j++) {
        int64_t r = j, oa = 0, ob = 0;
        for (int i = nb - 1; i >= 0; i--) {
            int64_t c = r % bdims[i];
            r /= bdims[i];
            oa += c * sa[i];
            ob += c * sb[i];
        }
        netrun_status s = row_gemm(ctx, Y->dtype, 0, 0, m, n, k, 1.0f, (const char *)A->data + oa * (int64_t)es, 0,
                                   (const char *)B->data + ob * (int64_t)es, 0, 0.0f,
                                   (char *)Y->data + j * m * n * (int64_t)es, 0, 1);
        if (s != NETRUN_OK) return s;
    }
    return NETRUN_OK;
}

/* ---- MatMulBias (com.netrun): the graph passes' MatMul(A, B[K, N]) + bias[N] [+ Relu / tanh Gelu] ----
 * One cuBLASLt call with the bias and the activation in its epilogue: the product is written once, where MatMul,
 * Add (and the activation) each read and wrote all of it (ViT-B/16 fp16 at batch 32 spent a fifth of its time in
 * those Adds). A is contiguous and B one matrix, so the batch dims fold into the rows: Y[R, N] = A[R, K] B + bias,
 * computed column-major as Y^T = B^T A^T with the bias along Y^T's rows. float32 runs TF32 where the precision
 * allows (as MatMul); float16 with float accumulation; a float32 node that gemm_create's timing put on float16
 * (--precision fp16, constant B) takes float16 A and B and writes float32. Where cuBLASLt has no algorithm (N or K
 * not a multiple of 8, no cuBLASLt) the plain GEMM runs, then one kernel adds the bias and applies the activation.
 * A 4th input R (the residual Add of a transformer block, Y's shape, no activation) is cuBLASLt's C with beta = 1
 * (D = A B + bias + C in one pass); on the plain path R is copied into Y and the GEMM accumulates onto it. */

/* cuBLASLt documents its GELU epilogue as GELU without naming the form: it is used once a small product showed it
 * is the tanh form to float32 accuracy (else the bias epilogue runs and our kernel applies the activation). */
static pthread_mutex_t gelu_mu = PTHREAD_MUTEX_INITIALIZER;
static int gelu_state; /* 0 not checked, 1 the tanh form, -1 not */

static double gelu_tanh_ref(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

static int lt_gelu_check(cuda_context *ctx) {
    enum { N = 8, R = 8, K = 8 };
    float w[K * N], x[R * K], bias[N], y[R * N];
    for (int i = 0; i < K * N; i++) w[i] = i / N == i % N ? 1.0f : 0.0f; /* B = I: Y = act(A + bias) */
    for (int i = 0; i < R * K; i++) x[i] = -5.0f + 10.0f * (float)i / (R * K - 1);
    for (int c = 0; c < N; c++) bias[c] = 0.125f * (float)(c - N / 2);
    cuda_lt_shape d = {.ab_type = CUDA_R_32F, .cd_type = CUDA_R_32F, .bias_type = CUDA_R_32F,
                       .compute = CUBLAS_COMPUTE_32F, .m = N, .n = R, .k = K, .lda = N, .ldb = K, .ldc = N,
                       .has_bias = 1, .act = CUDA_LT_GELU};
    cuda_lt_gemm *lt = cuda_lt_gemm_create_ex(&d);
    if (!lt) return 0;
    char *buf = NULL;
    int ok = 0;
    if (cudaMalloc((void **)&buf, 1024) == cudaSuccess &&
        cudaMemcpyAsync(buf, w, sizeof w, cudaMemcpyHostToDevice, ctx->stream) == cudaSuccess &&
        cudaMemcpyAsync(buf + 256, x, sizeof x, cudaMemcpyHostToDevice, ctx->stream) == cudaSuccess &&
        cudaMemcpyAsync(buf + 512, bias, sizeof bias, cudaMemcpyHostToDevice, ctx->stream) == cudaSuccess &&
        cuda_lt_gemm_run(ctx, lt, buf, buf + 256, buf + 512, NULL, buf + 768, NULL) == NETRUN_OK &&
        cudaMemcpyAsync(y, buf + 768, sizeof y, cudaMemcpyDeviceToHost, ctx->stream) == cudaSuccess &&
        cudaStreamSynchronize(ctx->stream) == cudaSuccess) {
        double err = 0;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < N; c++) {
                double e = fabs((double)y[r * N + c] - gelu_tanh_ref((double)x[r * K + c] + bias[c]));
                err = e > err || e != e ? e : err;
            }
        ok = err <= 5e-5; /* erf and tanh forms differ by up to 4.7e-4 on [-5, 5] */
        cuda_host->log(NETRUN_LOG_INFO, "cuda", "cuBLASLt GELU epilogue: max error %.2g against the tanh form -> %s",
                       err, ok ? "used for tanh Gelu" : "not used");
    }
    if (buf) cudaFree(buf);
    cudaGetLastError();
    cuda_lt_gemm_destroy(lt);
    return ok;
}

static int lt_gelu_is_tanh(cuda_context *ctx) {
    pthread_mutex_lock(&gelu_mu);
    if (!gelu_state) gelu_state = lt_gelu_check(ctx) ? 1 : -1;
    int ok = gelu_state > 0;
    pthread_mutex_unlock(&gelu_mu);
    return ok;
}

typedef struct mmb_state {
    gemm_state *g;           /* gemm_create's float16 choice for a float32 node (precision fp16), or NULL */
    cuda_lt_gemm *lt;        /* the fused call, or NULL: plain GEMM, then bias + activation */
    int lt_act;              /* the epilogue applies the activation too (else the bias kernel does) */
    int has_r;               /* a residual R (input 3): the Lt's C, planned with has_z */
    int64_t rows, n, k;      /* planned shape */
    size_t a16_bytes;        /* workspace for A in float16 (the float16-timed float32 node) before the Lt's own */
    char desc[192];
} mmb_state;

static int mmb_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (node->n_inputs != 3 && node->n_inputs != 4)
        return cuda_refuse(reason, size, "MatMulBias needs A, B, bias and optionally the residual R");
    if (!gemm_supports(node, reason, size)) return 0;
    const netrun_value_desc *b = &node->inputs[1], *bias = &node->inputs[2];
    if ((b->rank >= 0 && b->rank != 2) || (bias->rank >= 0 && bias->rank != 1))
        return cuda_refuse(reason, size, "MatMulBias needs a 2-D B and a 1-D bias");
    const netrun_gemm_params *p = node->params; /* NULL when the float16 region pass asks before the copy exists */
    if (p && node->params_size >= sizeof *p && p->activation.kind != NETRUN_ACT_NONE &&
        p->activation.kind != NETRUN_ACT_RELU && p->activation.kind != NETRUN_ACT_GELU_TANH)
        return cuda_refuse(reason, size, "MatMulBias: activation kind %d not implemented", (int)p->activation.kind);
    if (node->n_inputs == 4) { /* R: Y's shape (the same column-major layout as D), added before no activation */
        const netrun_value_desc *r = &node->inputs[3], *y = &node->outputs[0];
        int same = node->n_outputs >= 1 && r->rank == y->rank;
        for (int i = 0; same && i < r->rank; i++) same = r->dims[i] == y->dims[i];
        if (!same) return cuda_refuse(reason, size, "MatMulBias: the residual R must have Y's shape");
        if (p && node->params_size >= sizeof *p && p->activation.kind != NETRUN_ACT_NONE)
            return cuda_refuse(reason, size, "MatMulBias: a residual R with an activation");
    }
    return 1;
}

static void mmb_destroy(cuda_context *ctx, void *state) {
    mmb_state *st = state;
    if (!st) return;
    gemm_destroy(ctx, st->g);
    cuda_lt_gemm_destroy(st->lt);
    cuda_host->free(st);
}

void cuda_matmul_bias_describe(void *state, char *buf, size_t size) {
    mmb_state *st = state;
    snprintf(buf, size, "%s", st ? st->desc : "");
}

static netrun_status mmb_create(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *ws) {
    *state = NULL;
    *ws = 0;
    const netrun_gemm_params *p = node->params;
    const netrun_value_desc *A = &node->inputs[0], *B = &node->inputs[1];
    if (!p || (node->n_inputs != 3 && node->n_inputs != 4) || A->rank < 2 || B->rank != 2 || cuda_desc_count(A) <= 0 ||
        B->dims[0] <= 0 || B->dims[1] <= 0)
        return NETRUN_OK; /* nothing to plan: the plain path at run */
    mmb_state *st = cuda_host->alloc(sizeof *st, 16);
    if (!st) return cuda_host->error(NETRUN_ERR_OUT_OF_MEMORY, "cuda MatMulBias: out of memory");
    memset(st, 0, sizeof *st);
    st->k = B->dims[0];
    st->n = B->dims[1];
    st->rows = cuda_desc_count(A) / st->k;
    st->has_r = node->n_inputs == 4;
    size_t gws = 0;
    void *gs = NULL;
    netrun_status rc = gemm_create(ctx, node, &gs, &gws); /* float32 under --precision fp16: float16 timed */
    if (rc != NETRUN_OK) {
        mmb_destroy(ctx, st);
        return rc;
    }
    st->g = gs;
    netrun_dtype dt = A->dtype;
    int half_in = st->g && st->g->use16;
    st->a16_bytes = half_in ? ((size_t)st->g->a_count * 2 + 255) & ~(size_t)255 : 0;
    int kind = p->activation.kind;
    int want = kind == NETRUN_ACT_RELU ? CUDA_LT_RELU : kind == NETRUN_ACT_GELU_TANH ? CUDA_LT_GELU : CUDA_LT_NONE;
    /* 16-byte aligned rows for every operand: N and K multiples of 8 */
    if (st->n % 8 == 0 && st->k % 8 == 0 && st->rows <= INT32_MAX) {
        if (want == CUDA_LT_GELU && !lt_gelu_is_tanh(ctx)) want = CUDA_LT_NONE;
        size_t cap = (size_t)32 << 20;
        if (ctx->config.workspace_limit && cap > ctx->config.workspace_limit) cap = ctx->config.workspace_limit;
        cudaDataType_t out = dt == NETRUN_DTYPE_FLOAT16 ? CUDA_R_16F : CUDA_R_32F;
        cuda_lt_shape d = {.ab_type = half_in ? CUDA_R_16F : out, .cd_type = out, .bias_type = out,
                           .compute = dt == NETRUN_DTYPE_FLOAT && !half_in ? compute_type(ctx, dt) : CUBLAS_COMPUTE_32F,
                           .m = st->n, .n = st->rows, .k = st->k, .lda = st->n, .ldb = st->k, .ldc = st->n,
                           .has_bias = 1, .act = want, .has_z = st->has_r, .max_ws = cap};
        st->lt = cuda_lt_gemm_create_ex(&d);
        if (!st->lt && want != CUDA_LT_NONE) { /* the bias alone in the epilogue, the activation after */
            d.act = want = CUDA_LT_NONE;
            st->lt = cuda_lt_gemm_create_ex(&d);
        }
        st->lt_act = st->lt && want != CUDA_LT_NONE;
    }
    static const char *const acts[] = {"", " + ReLU", " + GELU"};
    int act_after = kind != NETRUN_ACT_NONE && !st->lt_act;
    if (st->lt)
        snprintf(st->desc, sizeof st->desc, "cublasLt %s, %sbias%s epilogue%s", half_in ? "fp16 in, fp32 out"
                 : dt == NETRUN_DTYPE_FLOAT16 ? "fp16" : "fp32", st->has_r ? "residual C (beta 1), " : "",
                 acts[st->lt_act ? want : 0], act_after ? ", activation kernel after" : "");
    else
        snprintf(st->desc, sizeof st->desc, "cublas %s%s, bias%s kernel after", half_in ? "fp16 in, fp32 out"
                 : dt == NETRUN_DTYPE_FLOAT16 ? "fp16" : "fp32", st->has_r ? " onto the residual (beta 1)" : "",
                 kind != NETRUN_ACT_NONE ? " + activation" : "");
    *ws = st->a16_bytes + (st->lt ? cuda_lt_gemm_workspace(st->lt) : 0);
    if (!st->lt) *ws = gws; /* the plain float16-timed GEMM's A */
    *state = st;
    return NETRUN_OK;
}

static netrun_status mmb_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    mmb_state *st = state;
    const netrun_gemm_params *p = args->params;
    const netrun_tensor *A = &args->inputs[0], *B = &args->inputs[1], *bias = &args->inputs[2];
    const netrun_tensor *R = args->n_inputs == 4 ? &args->inputs[3] : NULL;
    netrun_tensor *Y = &args->outputs[0];
    if (!p || (args->n_inputs != 3 && args->n_inputs != 4) || A->rank < 2 || B->rank != 2 || bias->rank != 1 ||
        bias->dims[0] != B->dims[1] || A->dims[A->rank - 1] != B->dims[0])
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT, "cuda MatMulBias: needs A [..., K], B [K, N], bias [N]");
    if (R && (R->dtype != Y->dtype || cuda_count(R) != cuda_count(Y) || R->nbytes < Y->nbytes ||
              p->activation.kind != NETRUN_ACT_NONE))
        return cuda_host->error(NETRUN_ERR_INVALID_ARGUMENT,
                                "cuda MatMulBias: the residual R must have Y's shape and dtype, without an activation");
    int64_t k = B->dims[0], n = B->dims[1], count = cuda_count(Y);
    if (count == 0) return NETRUN_OK;
    int64_t rows = count / n;
    gemm_state *gs = st ? st->g : NULL;
    int planned = st && rows == st->rows && n == st->n && k == st->k && st->has_r == (R != NULL);
    void *wsp = args->workspace_size ? cuda_workspace_address(args->workspace) : NULL;
    netrun_status s;
    /* the algorithm was chosen for 16-byte aligned operands (the arena's are; a caller's bound memory may not be) */
    int aligned = !(((uintptr_t)A->data | (uintptr_t)B->data | (uintptr_t)bias->data | (uintptr_t)Y->data |
                     (uintptr_t)(R ? R->data : NULL)) & 15);
    if (planned && st->lt && aligned && args->workspace_size >= st->a16_bytes + cuda_lt_gemm_workspace(st->lt) && k > 0) {
        const void *a = A->data, *b = B->data;
        if (st->a16_bytes) { /* the float16-timed float32 node: A to float16, B converted at creation */
            if (!use_half(gs, args, rows, n, k))
                return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda MatMulBias: float16 plan without its state");
            if ((s = cuda_f32_to_f16(ctx, A->data, wsp, 1, 1, gs->a_count, 0)) != NETRUN_OK) return s;
            a = wsp;
            b = gs->b16;
        }
        s = cuda_lt_gemm_run(ctx, st->lt, b, a, bias->data, R ? R->data : NULL, Y->data,
                             wsp ? (char *)wsp + st->a16_bytes : NULL);
        if (s != NETRUN_OK || st->lt_act || p->activation.kind == NETRUN_ACT_NONE) return s;
        return cuda_bias_activation(ctx, Y->dtype, Y->data, NULL, rows, n, 1, &p->activation);
    }
    /* the plain path: Y = R first (nothing to copy when the planner gave them one buffer), the GEMM adds onto it */
    float beta = R ? 1.0f : 0.0f;
    if (R && R->data != Y->data) {
        cudaError_t e = cudaMemcpyAsync(Y->data, R->data, (size_t)count * cuda_esize(Y->dtype),
                                        cudaMemcpyDeviceToDevice, ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "MatMulBias residual copy");
    }
    if (k == 0) {
        cudaError_t e = R ? cudaSuccess : cudaMemsetAsync(Y->data, 0, Y->nbytes, ctx->stream);
        if (e != cudaSuccess) return cuda_fail(e, "MatMulBias memset");
    } else if (use_half(gs, args, rows, n, k)) {
        if ((s = cuda_f32_to_f16(ctx, A->data, wsp, 1, 1, gs->a_count, 0)) != NETRUN_OK) return s;
        if ((s = row_gemm_ex(ctx, Y->dtype, 1, 0, 0, rows, n, k, 1.0f, wsp, 0, gs->b16, 0, beta, Y->data, 0, 1)) != NETRUN_OK)
            return s;
    } else if ((s = row_gemm(ctx, Y->dtype, 0, 0, rows, n, k, 1.0f, A->data, 0, B->data, 0, beta, Y->data, 0, 1)) != NETRUN_OK)
        return s;
    return cuda_bias_activation(ctx, Y->dtype, Y->data, bias->data, rows, n, 1, &p->activation);
}

const cuda_op cuda_ops_matmul_bias[] = {
    {"MatMulBias", CUDA_FLOAT_DTYPES,
     "graph passes' MatMul + bias [+ Relu / tanh Gelu | + residual R]: cuBLASLt bias/activation epilogue, R as C with "
     "beta 1 (N, K multiples of 8), else cuBLAS onto R and a bias kernel",
     mmb_supports, mmb_create, mmb_run, mmb_destroy},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};

const cuda_op cuda_ops_gemm[] = {
    {"Gemm", CUDA_FLOAT_DTYPES,
     "cuBLAS; C broadcast; fused activation; TF32 with precision tf32/fp16; fp16 timed under precision fp16 (constant B)",
     gemm_supports, gemm_create, gemm_run, gemm_destroy},
    {"MatMul", CUDA_FLOAT_DTYPES, "cuBLAS; batched with broadcasting; fp16 timed under precision fp16 (constant 2-D B)",
     gemm_supports, gemm_create, matmul_run, gemm_destroy},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
