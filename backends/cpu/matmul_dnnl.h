/* MatMul / Gemm with a constant B packed once (matmul_dnnl.c): oneDNN's matmul primitive with its weights in
 * the layout it prefers, reordered at kernel creation and kept with the node. Stubs decline without oneDNN. */
#ifndef CPU_MATMUL_DNNL_H
#define CPU_MATMUL_DNNL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_internal.h"

typedef struct cpu_dnnl_mm cpu_dnnl_mm;

/* Pack B (K x N; tb: stored N x K; row-major with leading dimension ldb) into up to `threads` slices of
 * columns, one per thread of the pool. NETRUN_OK with *out NULL when oneDNN is absent or has no fast kernel
 * for it (the caller keeps its sgemm); an error only when packing failed. m_hint: rows of A if known, else 0. */
netrun_status cpu_dnnl_mm_create(int threads, int64_t k, int64_t n, int tb, const float *b, int64_t ldb,
                                 int64_t m_hint, cpu_dnnl_mm **out);
void cpu_dnnl_mm_destroy(cpu_dnnl_mm *s);

/* A run: cpu_dnnl_mm_prepare on the calling thread (builds the primitives for these rows once; 0: oneDNN
 * declined, nothing was done and the caller runs its own GEMM on the unpacked B), then cpu_dnnl_mm_exec_slice
 * for each slice, each on one thread: Y[:, cols of the slice] = alpha * A B (+ Y's old values when
 * accumulate: Gemm's beta * C written there first). A: m x K row-major, leading dimension lda; Y: ldy. */
int cpu_dnnl_mm_prepare(cpu_dnnl_mm *s, int64_t m, int64_t k, int64_t n, int64_t lda, int64_t ldy, float alpha,
                        int accumulate);
int cpu_dnnl_mm_slices(const cpu_dnnl_mm *s);
void cpu_dnnl_mm_slice_cols(const cpu_dnnl_mm *s, int slice, int64_t *n0, int64_t *nc);
/* 0 on success; else a oneDNN error. Only after cpu_dnnl_mm_prepare with the same m, lda, ldy, alpha, accumulate. */
int cpu_dnnl_mm_exec_slice(cpu_dnnl_mm *s, int slice, int64_t m, const float *a, int64_t lda, float alpha,
                           int accumulate, float *y, int64_t ldy);
/* Bytes of packed weights held. */
size_t cpu_dnnl_mm_bytes(const cpu_dnnl_mm *s);
/* "oneDNN matmul <impl>, B packed (N slices, MB held)" for the profile's kernel column. */
void cpu_dnnl_mm_describe(const cpu_dnnl_mm *s, char *buf, size_t size);

#endif
