/* CUDA kernels: Attention and RotaryEmbedding. */
#include "cuda_kernels.cuh"

extern "C" const cuda_op cuda_ops_attention[] = {
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};
