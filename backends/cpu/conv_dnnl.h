/* oneDNN convolution path of the CPU backend (conv_dnnl.c); stubs that decline when built without it. */
#ifndef CPU_CONV_DNNL_H
#define CPU_CONV_DNNL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_internal.h"
#include "netrun_ops.h"

typedef struct cpu_dnnl_conv cpu_dnnl_conv;

int cpu_dnnl_available(void);
#ifdef NETRUN_CPU_DNNL
#include <oneapi/dnnl/dnnl.h>
/* The CPU engine every oneDNN primitive of the backend uses (NULL when cpu_dnnl_available() is 0). */
dnnl_engine_t cpu_dnnl_engine(void);
#endif
/* Row-major C = alpha op(A) op(B) + beta C by oneDNN's sgemm on the calling thread; 0 (nothing done) without
 * oneDNN or when it fails, and the caller runs its BLAS instead. */
int cpu_dnnl_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* NETRUN_CPU_DNNL=all: every conv oneDNN can do goes to it (measurements). */
int cpu_dnnl_all(void);
/* Build a primitive for these dims (xd, wd, yd: ranks n_spatial + 2; w: float weights in ONNX layout).
 * *out stays NULL (and NETRUN_OK is returned) when oneDNN cannot do it well: the caller keeps its own path.
 * *ws: workspace bytes cpu_dnnl_conv_run needs. */
netrun_status cpu_dnnl_conv_create(cpu_context *ctx, const netrun_conv_params *p, const int64_t *xd,
                                   const int64_t *wd, const int64_t *yd, const float *w, int has_bias,
                                   cpu_dnnl_conv **out, size_t *ws);
/* y = act(conv(x) + b (+ z)) on float buffers of the create-time dims. */
netrun_status cpu_dnnl_conv_run(cpu_context *ctx, cpu_dnnl_conv *s, const float *x, const float *b,
                                const float *z, float *y, void *ws, size_t ws_size);
void cpu_dnnl_conv_destroy(cpu_dnnl_conv *s);
const char *cpu_dnnl_conv_impl(const cpu_dnnl_conv *s);
/* 1 when a batch runs cut by images (cpu.dnnl_images), not by output channels */
int cpu_dnnl_conv_by_image(const cpu_dnnl_conv *s);
int cpu_dnnl_conv_by_rows(const cpu_dnnl_conv *s); /* slices are bands of output rows (plain stems, few images) */
size_t cpu_dnnl_conv_workspace(const cpu_dnnl_conv *s);
/* "oneDNN <implementation> (blocked, reorders)" for the profile's kernel column. */
void cpu_dnnl_conv_describe_state(const cpu_dnnl_conv *s, char *buf, size_t size);

#endif
