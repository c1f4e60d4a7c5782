/* CUDA kernels: gemm. Gemm and MatMul through cuBLAS (float32 and float16, float accumulation). Row-major
 * products are computed as the column-major transposed product: Y^T = B^T A^T. TF32 tensor cores are used
 * only when the session's precision allows it. MatMul broadcasts batch dims: when the batch offsets of A and
 * B are arithmetic sequences one strided-batched call runs them all (a broadcast B over a contiguous A
 * becomes one tall GEMM), otherwise one call per batch. */
#include "cuda_internal.h"

static int gemm_supports(const netrun_node_desc *node, char *reason, size_t size) {
    netrun_dtype t = cuda_main_dtype(node);
    if (t != NETRUN_DTYPE_FLOAT && t != NETRUN_DTYPE_FLOAT16)
        return cuda_refuse(reason, size, "dtype %s not supported by the CUDA %s kernel", cuda_dtype_name(t), node->op_type);
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && node->inputs[i].dtype != t) return cuda_refuse(reason, size, "mixed dtypes");
    return 1;
}

static cublasComputeType_t compute_type(cuda_context *ctx, netrun_dtype dt) {
    if (dt == NETRUN_DTYPE_FLOAT && ctx->config.precision != NETRUN_PRECISION_FP32) return CUBLAS_COMPUTE_32F_FAST_TF32;
    return CUBLAS_COMPUTE_32F;
}

/* Row-major Y[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * Y, batched with element strides. */
static netrun_status row_gemm(cuda_context *ctx, netrun_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                              float alpha, const void *A, int64_t sa, const void *B, int64_t sb, float beta, void *Y,
                              int64_t sy, int64_t batch) {
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda gemm: dims beyond int32");
    cudaDataType_t t = dt == NETRUN_DTYPE_FLOAT16 ? CUDA_R_16F : CUDA_R_32F;
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    cublasStatus_t s = cublasGemmStridedBatchedEx(ctx->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                  (int)n, (int)m, (int)k, &alpha, B, t, ldb, sb, A, t, lda, sa, &beta, Y, t,
                                                  (int)n, sy, (int)batch, compute_type(ctx, dt), CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? NETRUN_OK : cublas_fail(s, "cublasGemmStridedBatchedEx");
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
        s = row_gemm(ctx, Y->dtype, p->trans_a, p->trans_b, m, n, k, p->alpha, A->data, 0, B->data, 0, beta, Y->data, 0, 1);
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
    if (b_shared && a_full) return row_gemm(ctx, Y->dtype, 0, 0, m * batch, n, k, 1.0f, A->data, 0, B->data, 0, 0.0f, Y->data, 0, 1);
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

const cuda_op cuda_ops_gemm[] = {
    {"Gemm", CUDA_FLOAT_DTYPES, "cuBLAS; C broadcast; fused activation; TF32 only with precision tf32",
     gemm_supports, NULL, gemm_run, NULL},
    {"MatMul", CUDA_FLOAT_DTYPES, "cuBLAS; batched with broadcasting", gemm_supports, NULL, matmul_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
