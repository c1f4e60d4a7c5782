/*
 * Inside the CUDA backend. Each op family lives in one file (mirroring layers/) and exports a table
 * `const cuda_op cuda_ops_<family>[]` ended by an entry with op_type == NULL; cuda_backend.c lists the tables.
 * Buffers are device pointers from cudaMalloc: args->inputs[i].data is a device address. All work is queued
 * on the context's stream; nothing here synchronizes except copies to the host.
 *
 * This header is shared by C files (.c) and CUDA C++ files (.cu).
 */
#ifndef CUDA_INTERNAL_H
#define CUDA_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "netrun_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuda_context {
    netrun_backend_config config;
    int device;
    cudaStream_t stream;
    cublasHandle_t cublas;
    cudnnHandle_t cudnn;
    size_t allocated;     /* bytes of live buffer_alloc buffers (device_memory_budget) */
    size_t total_memory;  /* of the device */
    int sm_count;
} cuda_context;

extern const netrun_host_api *cuda_host; /* set by the entry point */

typedef struct cuda_op {
    const char *op_type;
    uint64_t dtypes;            /* element types accepted for input 0 (output 0 when no inputs) */
    const char *constraints;    /* for the support matrix ("" = none) */
    /* Finer check (no device work). NULL: supported when input 0's dtype is in dtypes. */
    int (*supports)(const netrun_node_desc *node, char *reason, size_t reason_size);
    /* Optional per-node state and workspace need. NULL: state is NULL, no workspace. */
    netrun_status (*create)(cuda_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
    netrun_status (*run)(cuda_context *ctx, void *state, const netrun_kernel_args *args);
    void (*destroy)(cuda_context *ctx, void *state);
} cuda_op;

#define CUDA_DT(t) NETRUN_DTYPE_BIT(NETRUN_DTYPE_##t)
#define CUDA_FLOAT_DTYPES (CUDA_DT(FLOAT) | CUDA_DT(FLOAT16))
/* Every dtype the byte-moving kernels (copies, gathers, pads...) serve. */
#define CUDA_ALL_DTYPES                                                                                         \
    (CUDA_DT(FLOAT) | CUDA_DT(UINT8) | CUDA_DT(INT8) | CUDA_DT(UINT16) | CUDA_DT(INT16) | CUDA_DT(INT32) |       \
     CUDA_DT(INT64) | CUDA_DT(BOOL) | CUDA_DT(FLOAT16) | CUDA_DT(DOUBLE) | CUDA_DT(UINT32) | CUDA_DT(UINT64) |   \
     CUDA_DT(BFLOAT16))

static inline size_t cuda_esize(netrun_dtype t) {
    switch (t) {
    case NETRUN_DTYPE_UINT8: case NETRUN_DTYPE_INT8: case NETRUN_DTYPE_BOOL: return 1;
    case NETRUN_DTYPE_UINT16: case NETRUN_DTYPE_INT16: case NETRUN_DTYPE_FLOAT16: case NETRUN_DTYPE_BFLOAT16: return 2;
    case NETRUN_DTYPE_FLOAT: case NETRUN_DTYPE_INT32: case NETRUN_DTYPE_UINT32: return 4;
    case NETRUN_DTYPE_INT64: case NETRUN_DTYPE_UINT64: case NETRUN_DTYPE_DOUBLE: return 8;
    default: return 0;
    }
}

static inline int64_t cuda_count(const netrun_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

static inline int64_t cuda_desc_count(const netrun_value_desc *d) {
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++) {
        if (d->dims[i] < 0) return -1;
        n *= d->dims[i];
    }
    return n;
}

/* Set reason and return 0 (for supports functions). */
int cuda_refuse(char *reason, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record a CUDA runtime error with what was being done. */
netrun_status cuda_fail(cudaError_t e, const char *what);
/* The error of the last kernel launch, if any (call right after <<<>>>). */
netrun_status cuda_check_launch(const char *what);
netrun_status cublas_fail(cublasStatus_t s, const char *what);
netrun_status cudnn_fail(cudnnStatus_t s, const char *what);
const char *cuda_dtype_name(netrun_dtype t);
/* The dtype of input 0 (or output 0 when the node has no inputs). */
netrun_dtype cuda_main_dtype(const netrun_node_desc *node);

/* The device address of a kernel's workspace: args->workspace may be the runtime's buffer handle (the
 * host record of buffer_alloc) or already a device address. */
void *cuda_workspace_address(void *workspace);

/* Broadcasting: strides (in elements) of a tensor of rank r with dims d seen as an out_rank output, 0 where
 * broadcast. */
void cuda_broadcast_strides(int r, const int64_t *d, int out_rank, const int64_t *out_dims, int64_t *strides);

/* ---- launchers shared between families (defined in .cu files) ---- */

/* y[n, c, inner] = act(y + bias[c]) for float32/float16 y (bias same dtype, may be NULL). */
netrun_status cuda_bias_activation(cuda_context *ctx, netrun_dtype dt, void *y, const void *bias, int64_t n,
                                   int64_t c, int64_t inner, const netrun_fused_activation *act);
/* dst (out dims, contiguous) = src broadcast with element strides src_strides; es bytes per element. */
netrun_status cuda_expand(cuda_context *ctx, size_t es, void *dst, const void *src, int rank, const int64_t *out_dims,
                          const int64_t *src_strides);
/* dst = src with the padding of a Conv input: [N, C, spatial...] zero padded by pads_begin/end. */
netrun_status cuda_zero_pad(cuda_context *ctx, size_t es, void *dst, const void *src, int rank, const int64_t *in_dims,
                            const int64_t *pads_begin, const int64_t *out_dims);

#ifdef __cplusplus
}
#endif
#endif
