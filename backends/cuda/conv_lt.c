/* Pointwise region Convs through cuBLASLt: Y[rows, m] = act(X[rows, c] W[m, c]^T + bias[m] + Z[rows, m]), float16
 * NHWC data, float32 accumulation, the bias, ReLU and the residual Z fused into the GEMM's epilogue (Z as the
 * C matrix with beta = 1, Y as D). The plain cublasGemmEx path needs one more pass over Y for bias + ReLU and,
 * with a fused Add, a copy of Z into Y first: at batch 256 those passes move gigabytes per ResNet-50 run.
 *
 * cuBLASLt is not linked: libcublas (loaded by lazy_libs.c) depends on it, so it is in the process once cuBLAS
 * is; its functions are looked up here with dlsym. Any failure only means "no Lt path" (conv.c then times the
 * others). */
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
    int has_bias, has_z;
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
cuda_lt_gemm *cuda_lt_gemm_create(int64_t m, int64_t rows, int64_t c, int has_bias, int relu, int has_z, size_t max_ws) {
    if (cuda_load_cublas() != NETRUN_OK) return NULL;
    pthread_once(&lt_once, lt_load);
    if (!lt_ok || m <= 0 || rows <= 0 || c <= 0 || m > INT32_MAX || rows > INT32_MAX || c > INT32_MAX) return NULL;
    cuda_lt_gemm *g = cuda_host->alloc(sizeof *g, 16);
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    g->has_bias = has_bias;
    g->has_z = has_z;
    cublasLtMatmulPreference_t pref = NULL;
    int bad = lt_cublasLtCreate(&g->h) != CUBLAS_STATUS_SUCCESS;
    if (bad) g->h = NULL;
    bad = bad || lt_cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS;
    /* column-major view: D[m, rows] = W^T[m, c] (W stored [m, c] row-major = [c, m] column-major) X[c, rows] */
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    uint32_t epi = has_bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                            : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    bad = bad || lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) != CUBLAS_STATUS_SUCCESS;
    if (!bad && has_bias) { /* float16 bias (the output's type); the pointer is set per run */
        cudaDataType_t bt = CUDA_R_16F;
        bad = lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt) != CUBLAS_STATUS_SUCCESS;
    }
    bad = bad || lt_cublasLtMatrixLayoutCreate(&g->a, CUDA_R_16F, (uint64_t)c, (uint64_t)m, c) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatrixLayoutCreate(&g->b, CUDA_R_16F, (uint64_t)c, (uint64_t)rows, c) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatrixLayoutCreate(&g->c, CUDA_R_16F, (uint64_t)m, (uint64_t)rows, m) != CUBLAS_STATUS_SUCCESS;
    bad = bad || lt_cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS;
    if (!bad) {
        uint64_t wsmax = max_ws;
        /* the arena's items are 256-byte aligned, but ask only for what every tensor here guarantees */
        uint32_t al = 16;
        bad = lt_cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsmax, sizeof wsmax) !=
                  CUBLAS_STATUS_SUCCESS;
        cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
        for (int i = 0; i < 4 && !bad; i++)
            bad = lt_cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al, sizeof al) != CUBLAS_STATUS_SUCCESS;
    }
    if (!bad && has_bias) { /* the heuristic reads the bias pointer's alignment: any 16-byte aligned value */
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
        cuda_host->log(NETRUN_LOG_DEBUG, "cuda", "conv: cuBLASLt has no fused GEMM for %lld x %lld x %lld", (long long)m,
                       (long long)rows, (long long)c);
        cuda_lt_gemm_destroy(g);
        return NULL;
    }
    return g;
}

size_t cuda_lt_gemm_workspace(const cuda_lt_gemm *g) { return g ? g->ws : 0; }

netrun_status cuda_lt_gemm_run(cuda_context *ctx, cuda_lt_gemm *g, const void *w, const void *x, const void *bias,
                               const void *z, void *y, void *ws) {
    if ((bias != NULL) != g->has_bias || (z != NULL) != g->has_z)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda conv: cuBLASLt GEMM run with another bias/sum than planned");
    if (bias && lt_cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) !=
                    CUBLAS_STATUS_SUCCESS)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda conv: cuBLASLt bias pointer refused");
    float alpha = 1.0f, beta = z ? 1.0f : 0.0f;
    cublasStatus_t s = lt_cublasLtMatmul(g->h, g->op, &alpha, w, g->a, x, g->b, &beta, z ? z : y, g->c, y, g->c, &g->algo,
                                         g->ws ? ws : NULL, g->ws, ctx->stream);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_host->error(NETRUN_ERR_BACKEND, "cuda conv: cublasLtMatmul failed (status %d)", (int)s);
    return NETRUN_OK;
}
