// cuDNN's own int8 convolutions on this GPU, beside its float16 ones, on ResNet-50's convolution shapes: what an
// implicit-GEMM int8 kernel from the library would give the CUDA backend's QLinearConv (backends/cuda/qlinear.cu
// gathers patches and runs cuBLASLt instead). Legacy API, implicit precomputed GEMM (the only int8 algorithm):
//   int8  NHWC x, KRSC w, int32 compute: y float (INT8_EXT) or y int8 (INT8)
//   int8x32 NC/32HW32 x and w, y int8x32 (INT8x32), with cudnnConvolutionBiasActivationForward (float bias, ReLU)
//   half  NHWC, the fastest of cudnnFindConvolutionForwardAlgorithm's answers
// Prints ms per call and TOPS for each, or the status cuDNN answered. Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/cudnn_int8 tools/gpu/cudnn_int8_conv_bench.cu -lcudnn && /tmp/cudnn_int8 [batch]
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static cudnnHandle_t h;
static void *ws;
static const size_t wsz = (size_t)256 << 20;

#define CK(x)                                                                                                  \
    do {                                                                                                       \
        cudnnStatus_t s_ = (x);                                                                                \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                                      \
            printf(" %-10s", cudnnGetErrorString(s_) + 13);                                                    \
            return -1.0;                                                                                       \
        }                                                                                                      \
    } while (0)

struct shape {
    const char *name;
    int c, k, hw, r, stride;
};

/* kind 0: int8 -> float, 1: int8 -> int8, 2: int8x32 fused bias+relu -> int8x32, 3: half NHWC */
static double run(const shape &s, int n, int kind) {
    cudnnTensorDescriptor_t x, y, b;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t cv;
    cudnnActivationDescriptor_t act;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateTensorDescriptor(&b);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&cv);
    cudnnCreateActivationDescriptor(&act);
    int pad = s.r / 2, oh = (s.hw + 2 * pad - s.r) / s.stride + 1;
    cudnnDataType_t xt = kind == 3 ? CUDNN_DATA_HALF : kind == 2 ? CUDNN_DATA_INT8x32 : CUDNN_DATA_INT8;
    cudnnDataType_t yt = kind == 0 ? CUDNN_DATA_FLOAT : kind == 3 ? CUDNN_DATA_HALF : xt;
    cudnnTensorFormat_t f = kind == 2 ? CUDNN_TENSOR_NCHW_VECT_C : CUDNN_TENSOR_NHWC;
    CK(cudnnSetTensor4dDescriptor(x, f, xt, n, s.c, s.hw, s.hw));
    CK(cudnnSetFilter4dDescriptor(w, xt, f, s.k, s.c, s.r, s.r));
    CK(cudnnSetTensor4dDescriptor(y, f, yt, n, s.k, oh, oh));
    CK(cudnnSetTensor4dDescriptor(b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, s.k, 1, 1));
    CK(cudnnSetConvolution2dDescriptor(cv, pad, pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                       kind == 3 ? CUDNN_DATA_FLOAT : CUDNN_DATA_INT32));
    if (kind == 3) CK(cudnnSetConvolutionMathType(cv, CUDNN_TENSOR_OP_MATH));
    CK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    size_t xe = kind == 3 ? 2 : 1, ye = kind == 0 ? 4 : kind == 3 ? 2 : 1;
    size_t xs = (size_t)n * s.c * s.hw * s.hw * xe, wsize = (size_t)s.k * s.c * s.r * s.r * xe,
           ys = (size_t)n * s.k * oh * oh * ye;
    void *dx, *dw, *dy, *db;
    cudaMalloc(&dx, xs);
    cudaMalloc(&dw, wsize);
    cudaMalloc(&dy, ys);
    cudaMalloc(&db, s.k * 4);
    cudaMemset(dx, 1, xs);
    cudaMemset(dw, 1, wsize);
    cudaMemset(db, 0, s.k * 4);
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (kind == 3) {
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        int got = 0;
        CK(cudnnFindConvolutionForwardAlgorithmEx(h, x, dx, w, dw, cv, y, dy, 8, &got, perf, ws, wsz));
        algo = perf[0].algo;
    }
    float one = 1.0f, zero = 0.0f;
    auto call = [&]() -> cudnnStatus_t {
        if (kind == 2)
            return cudnnConvolutionBiasActivationForward(h, &one, x, dx, w, dw, cv, algo, ws, wsz, &zero, y, dy, b,
                                                         db, act, y, dy);
        return cudnnConvolutionForward(h, &one, x, dx, w, dw, cv, algo, ws, wsz, &zero, y, dy);
    };
    double ms = -1;
    CK(call());
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i < 3; i++) call();
    cudaEventRecord(e0);
    const int it = 20;
    for (int i = 0; i < it; i++) call();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t;
    cudaEventElapsedTime(&t, e0, e1);
    cudaError_t e = cudaGetLastError();
    if (e) printf(" cuda:%s", cudaGetErrorString(e));
    else ms = t / it;
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    cudaFree(db);
    return ms;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 256;
    if (cudnnCreate(&h) || cudaMalloc(&ws, wsz)) {
        printf("no cuDNN / GPU\n");
        return 1;
    }
    printf("cuDNN %zu, batch %d; ms per call (TOPS)\n", cudnnGetVersion(), n);
    const shape shapes[] = {
        {"l1 3x3 64", 64, 64, 56, 3, 1},      {"l1 1x1 256->64", 256, 64, 56, 1, 1},
        {"l1 1x1 64->256", 64, 256, 56, 1, 1}, {"l2 3x3 128 s2", 128, 128, 56, 3, 2},
        {"l2 3x3 128", 128, 128, 28, 3, 1},   {"l3 3x3 256", 256, 256, 14, 3, 1},
        {"l3 1x1 1024->256", 1024, 256, 14, 1, 1}, {"l4 3x3 512", 512, 512, 7, 3, 1},
    };
    const char *kinds[] = {"int8->f32", "int8->int8", "i8x32+b+relu", "half"};
    printf("%-18s", "shape");
    for (int k = 0; k < 4; k++) printf(" %22s", kinds[k]);
    printf("\n");
    for (const shape &s : shapes) {
        int oh = (s.hw + 2 * (s.r / 2) - s.r) / s.stride + 1;
        double ops = 2.0 * n * oh * oh * s.k * s.c * s.r * s.r;
        printf("%-18s", s.name);
        for (int k = 0; k < 4; k++) {
            double ms = run(s, n, k);
            if (ms > 0) printf(" %10.3f (%7.1f)", ms, ops / ms / 1e9);
            else printf(" %22s", "");
        }
        printf("\n");
    }
    return 0;
}
