/* cuBLASLt GEMMs with fused epilogues. Pointwise region Convs: Y[rows, m] = act(X[rows, c] W[m, c]^T + bias[m] + Z[rows, m]), float16
 * NHWC data, float32 accumulation, the bias, ReLU and the residual Z fused into the GEMM's epilogue (Z as the
 * C matrix with beta = 1, Y as D). The plain cublasGemmEx path needs one more pass over Y for bias + ReLU and,
 * with a fused Add, a copy of Z into Y first: at batch 256 those passes move gigabytes per ResNet-50 run.
 *
 * cuBLASLt is not linked: libcublas (loaded by lazy_libs.c) depends on it, so it is in the process once cuBLAS
 * is; its functions are looked up here with dlsym. Any failure only means "no Lt path" (conv.c then times the
 * others).
 *
 * The graph passes' MatMulBias (gemm.c) uses the general form, cuda_lt_gemm_create_ex: float32 (TF32 where the
 * precision allows), float16, or float16 A/B with a float32 output, bias + ReLU / tanh GELU in the epilogue. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cublasLt.h>

#include "cuda_internal.h"

#ifndef NR_CUBLAS_DIR
#define NR_CUBLAS_DIR ""
#endif
#define LT_STR2(x) #x
#define LT_STR(x) LT_STR2(x)

#define LT_FUNCS(X)                                                                                              \
    X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                \
    X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)              \
    X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
    X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
#define LT_DECLARE(f) static __typeof__(f) *lt_##f;
LT_FUNCS(LT_DECLARE)
#undef LT_DECLARE

static pthread_once_t lt_once = PTHREAD_ONCE_INIT;
static int lt_ok;

static void lt_load(void) {
    const char *so = "libcublasLt.so." LT_STR(CUBLAS_VER_MAJOR);
    void *lib = dlopen(so, RTLD_LAZY | RTLD_LOCAL);
    if (!lib && *NR_CUBLAS_DIR) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NR_CUBLAS_DIR, so);
        lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    }
    if (!lib) {
        cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv: %s not found: no cuBLASLt path for pointwise region Convs", so);
        return;
    }
    const char *missing = NULL;
#define LT_RESOLVE(f) \
    if (!missing && !(*(void **)&lt_##f = dlsym(lib, #f))) missing = #f;
    LT_FUNCS(LT_RESOLVE)
#undef LT_RESOLVE
    if (missing) {
        cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv: %s has no %s: no cuBLASLt path", so, missing);
        return;
    }
    lt_ok = 1;
}

struct cuda_lt_gemm {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    size_t ws;
    int has_bias, has_z, int_scale, alpha_vector;
};

void cuda_lt_gemm_destroy(cuda_lt_gemm *g) {
    if (!g) return;
    if (g->a) lt_cublasLtMatrixLayoutDestroy(g->a);
    if (g->b) lt_cublasLtMatrixLayoutDestroy(g->b);
    if (g->c) lt_cublasLtMatrixLayoutDestroy(g->c);
    if (g->op) lt_cublasLtMatmulDescDestroy(g->op);
    if (g->h) lt_cublasLtDestroy(g->h);
    cuda_host->free(g);
}

/* NULL when cuBLASLt is missing or has no algorithm for this shape/epilogue (the caller keeps its other paths). */
cuda_lt_gemm *cuda_lt_gemm_create_ex(const cuda_lt_shape *d) {
    if (cuda_load_cublas() != NETRUN_OK) return NULL;
    pthread_once(&lt_once, lt_load);
    if (!lt_ok || d->m <= 0 || d->n <= 0 || d->k <= 0 || d->m > INT32_MAX || d->n > INT32_MAX || d->k > INT32_MAX ||
        d->lda > INT32_MAX || d->ldb > INT32_MAX || d->ldc > INT32_MAX)
        return NULL;
    cuda_lt_gemm *g = cuda_host->alloc(sizeof *g, 16);
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    g->has_bias = d->has_bias;
    g->has_z = d->has_z;
    g->int_scale = d->int_scale;
    g->alpha_vector = d->alpha_vector;
    cublasLtMatmulPreference_t pref = NULL;
    int bad = lt_cublasLtCreate(&g->h) != CUBLAS_STATUS_SUCCESS;
    if (bad) g->h = NULL;
    bad = bad || lt_cublasLtMatmulDescCreate(&g->op, d->compute, d->int_scale ? CUDA_R_32I : CUDA_R_32F) != CUBLAS_STATUS_SUCCESS;
    cublasOperation_t ta = d->ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = d->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    uint32_t epi = d->act == CUDA_LT_GELU ? (d->has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                   : d->act == CUDA_LT_RELU ? (d->has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
                                            : (d->has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    bad = bad || lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) != CUBLAS_STATUS_SUCCESS;
    if (!bad && d->alpha_vector) { /* (the mode that has beta zero is refused for an int8 D on Hopper; this one is not) */
        int32_t pm = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
        bad = lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm) != CUBLAS_STATUS_SUCCESS;
    }

    if (!bad && d->has_bias) { /* the bias's type (the output's, as cuBLASLt wants); the pointer is set per run */
        cudaDataType_t bt = d->bias_type;
        bad = lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt) != CUBLAS_STATUS_SUCCESS;
    }
    /* layouts of the stored matrices (column-major): op(A) is m x k, op(B) k x n, C and D m x n */
    bad = bad || lt_cublasLtMatrixLayoutCreate(&g->a, d->ab_type, (uint64_t)(d->ta ? d->k : d->m),
                                               (uint64_t)(d->ta ? d->m : d->k), d->lda) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatrixLayoutCreate(&g->b, d->ab_type, (uint64_t)(d->tb ? d->n : d->k),
                                               (uint64_t)(d->tb ? d->k : d->n), d->ldb) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatrixLayoutCreate(&g->c, d->cd_type, (uint64_t)d->m, (uint64_t)d->n, d->ldc) !=
                     CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS;
    if (!bad) {
        uint64_t wsmax = d->max_ws;
        /* the arena's items are 256-byte aligned, but ask only for what every tensor here guarantees (an int8 D
         * is cut into chunks of whole rows of m bytes: 4-byte aligned where m % 4 == 0) */
        uint32_t al = 16, al_cd = d->cd_type == CUDA_R_8I ? 4 : 16;
        bad = lt_cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsmax, sizeof wsmax) !=
                  CUBLAS_STATUS_SUCCESS;
        cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
        for (int i = 0; i < 4 && !bad; i++)
            bad = lt_cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], i < 2 ? &al : &al_cd, sizeof al) !=
                  CUBLAS_STATUS_SUCCESS;
    }
    if (!bad && d->has_bias) { /* the heuristic reads the bias pointer's alignment: any 16-byte aligned value */
        const void *fake = (const void *)(uintptr_t)256;
        bad = lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &fake, sizeof fake) !=
              CUBLAS_STATUS_SUCCESS;
    }
    if (!bad) {
        cublasLtMatmulHeuristicResult_t r;
        int found = 0;
        memset(&r, 0, sizeof r);
        if (lt_cublasLtMatmulAlgoGetHeuristic(g->h, g->op, g->a, g->b, g->c, g->c, pref, 1, &r, &found) !=
                CUBLAS_STATUS_SUCCESS ||
            found < 1 || r.state != CUBLAS_STATUS_SUCCESS)
            bad = 1;
        else {
            g->algo = r.algo;
            g->ws = r.workspaceSize;
        }
    }
    if (pref) lt_cublasLtMatmulPreferenceDestroy(pref);
    if (bad) {
        cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "cuBLASLt has no GEMM for %lld x %lld x %lld with epilogue %u",
                       (long long)d->m, (long long)d->n, (long long)d->k, (unsigned)epi);
        cuda_lt_gemm_destroy(g);
        return NULL;
    }
    return g;
}

cuda_lt_gemm *cuda_lt_gemm_create(int64_t m, int64_t rows, int64_t c, int has_bias, int relu, int has_z, size_t max_ws) {
    /* column-major view: D[m, rows] = W^T[m, c] (W stored [m, c] row-major = [c, m] column-major) X[c, rows] */
    cuda_lt_shape d = {.ab_type = CUDA_R_16F, .cd_type = CUDA_R_16F, .bias_type = CUDA_R_16F,
                       .compute = CUBLAS_COMPUTE_32F, .ta = 1, .tb = 0, .m = m, .n = rows, .k = c, .lda = c, .ldb = c,
                       .ldc = m, .has_bias = has_bias, .act = relu ? CUDA_LT_RELU : CUDA_LT_NONE, .has_z = has_z,
                       .max_ws = max_ws};
    return cuda_lt_gemm_create_ex(&d);
}

size_t cuda_lt_gemm_workspace(const cuda_lt_gemm *g) { return g ? g->ws : 0; }

netrun_status cuda_lt_gemm_run_scaled(cuda_context *ctx, cuda_lt_gemm *g, const void *a, const void *b, const void *bias,
                                      float alpha, const float *alpha_vec, void *d, void *ws) {
    if ((bias != NULL) != g->has_bias || g->int_scale || (g->alpha_vector && !alpha_vec))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: cuBLASLt GEMM run with another bias/scale than planned");
    if (bias && lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) !=
                    CUBLAS_STATUS_SUCCESS)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: cuBLASLt bias pointer refused");
    float beta = 0.0f;
    const void *pa = g->alpha_vector ? (const void *)alpha_vec : (const void *)&alpha;
    cublasStatus_t s = lt_cublasLtMatmul(g->h, g->op, pa, a, g->a, b, g->b, &beta, d, g->c, d, g->c, &g->algo,
                                         g->ws ? ws : NULL, g->ws, ctx->stream);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_host->error(NETRUN_ERR_BACKEND, "cuda: cublasLtMatmul failed (status %d)", (int)s);
    return NETRUN_OK;
}

netrun_status cuda_lt_gemm_run(cuda_context *ctx, cuda_lt_gemm *g, const void *w, const void *x, const void *bias,
                               const void *z, void *y, void *ws) {
    if ((bias != NULL) != g->has_bias || (z != NULL) != g->has_z)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: cuBLASLt GEMM run with another bias/sum than planned");
    if (bias && lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) !=
                    CUBLAS_STATUS_SUCCESS)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda: cuBLASLt bias pointer refused");
    float alpha = 1.0f, beta = z ? 1.0f : 0.0f;
    int32_t ialpha = 1, ibeta = z ? 1 : 0;
    const void *pa = g->int_scale ? (const void *)&ialpha : (const void *)&alpha;
    const void *pb = g->int_scale ? (const void *)&ibeta : (const void *)&beta;
    cublasStatus_t s = lt_cublasLtMatmul(g->h, g->op, pa, w, g->a, x, g->b, pb, z ? z : y, g->c, y, g->c, &g->algo,
                                         g->ws ? ws : NULL, g->ws, ctx->stream);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_host->error(NETRUN_ERR_BACKEND, "cuda: cublasLtMatmul failed (status %d)", (int)s);
    return NETRUN_OK;
}
