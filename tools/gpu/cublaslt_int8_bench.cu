// cuBLASLt's int8 GEMMs on this GPU, in the form the CUDA backend's QLinearConv / QLinearMatMul use
// (backends/cuda/qlinear.cu): D[m, n] = W[m, k] (stored [m][k], op T) x X[k, n] (stored [n][k], op N), with int32
// output, or int8 output through the requantising epilogue (host alpha, or a device alpha vector with a host
// beta; the beta-zero and device-vector modes are listed to show which the library refuses). Prints the
// heuristic's status and the time of its first algorithms per shape (ResNet-50 layers at batch 256).
// Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/lt_int8 tools/gpu/cublaslt_int8_bench.cu -lcublasLt && /tmp/lt_int8
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdint.h>
#define CK(x) do { cublasStatus_t s_ = (x); if (s_) { printf("  %s -> status %d\n", #x, (int)s_); return -1; } } while (0)
static cublasLtHandle_t h;
static void *ws; static size_t wsz = 64 << 20;
static float timeit(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                    const void *A, const void *B, void *D, const void *alpha, const void *beta, cublasLtMatmulAlgo_t *algo) {
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 3; i++) cublasLtMatmul(h, op, alpha, A, a, B, b, beta, D, c, D, c, algo, ws, wsz, 0);
  cudaEventRecord(e0);
  for (int i = 0; i < 10; i++) cublasLtMatmul(h, op, alpha, A, a, B, b, beta, D, c, D, c, algo, ws, wsz, 0);
  cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1);
  cudaError_t e = cudaGetLastError(); if (e) printf("  cuda error %s\n", cudaGetErrorString(e));
  return ms / 10;
}
static int run(const char *name, int64_t m, int64_t n, int64_t k, int out8, int avec, int bias, int order32) {
  cublasLtMatmulDesc_t op; cublasLtMatrixLayout_t a, b, c;
  CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, out8 ? CUDA_R_32F : CUDA_R_32I));
  cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N));
  if (avec) { int32_t pm = avec == 1 ? CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO : avec == 2 ? CUBLASLT_POINTER_MODE_DEVICE_VECTOR : CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST; CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm)); }
  void *A, *B, *D, *bv, *av; cudaMalloc(&A, m * k); cudaMalloc(&B, n * k); cudaMalloc(&D, m * n * 4); cudaMalloc(&bv, m * 4); cudaMalloc(&av, m * 4);
  cudaMemset(A, 1, m * k); cudaMemset(B, 1, n * k); cudaMemset(bv, 0, m * 4); cudaMemset(av, 0, m * 4);
  if (bias) { uint32_t epi = CUBLASLT_EPILOGUE_BIAS; CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    cudaDataType_t bt = CUDA_R_32F; CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bv, sizeof bv)); }
  CK(cublasLtMatrixLayoutCreate(&a, CUDA_R_8I, k, m, k));
  CK(cublasLtMatrixLayoutCreate(&b, CUDA_R_8I, k, n, k));
  CK(cublasLtMatrixLayoutCreate(&c, out8 ? CUDA_R_8I : CUDA_R_32I, m, n, m));
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz));
  cublasLtMatmulHeuristicResult_t r[8]; int found = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(h, op, a, b, c, c, pref, 8, r, &found);
  printf("%s m=%lld n=%lld k=%lld: heuristic status %d, %d algos\n", name, (long long)m, (long long)n, (long long)k, (int)hs, found);
  int32_t ia = 1, ib = 0; float fa = 1, fb = 0;
  for (int i = 0; i < found && i < 4; i++) {
    float ms = timeit(op, a, b, c, A, B, D, avec ? av : (out8 ? (void *)&fa : (void *)&ia), avec == 2 ? bv : out8 ? (void *)&fb : (void *)&ib, &r[i].algo);
    int id = 0, tile = 0; size_t sz;
    cublasLtMatmulAlgoConfigGetAttribute(&r[i].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &sz);
    cublasLtMatmulAlgoConfigGetAttribute(&r[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &sz);
    printf("  algo %d id %d tile %d ws %zu: %.4f ms = %.0f TOPS\n", i, id, tile, r[i].workspaceSize, ms, 2.0 * m * n * k / ms / 1e9);
  }
  cudaFree(A); cudaFree(B); cudaFree(D); cudaFree(bv); cudaFree(av);
  return 0;
}
int main() {
  cublasLtCreate(&h); cudaMalloc(&ws, wsz);
  int64_t shapes[][3] = {{64, 802816, 576}, {64, 802816, 64}, {256, 802816, 64}, {512, 100352, 1152}, {2048, 12544, 512}};
  for (auto &s : shapes) {
    run("int32 out", s[0], s[1], s[2], 0, 0, 0, 0);
    run("int8 out, host alpha + bias", s[0], s[1], s[2], 1, 0, 1, 0);
    run("int8 out, alpha vector (beta host) + bias", s[0], s[1], s[2], 1, 3, 1, 0);
    run("int8 out, alpha vector (beta zero)", s[0], s[1], s[2], 1, 1, 0, 0);
    run("int8 out, alpha and beta vectors", s[0], s[1], s[2], 1, 2, 0, 0);
  }
  return 0;
}
