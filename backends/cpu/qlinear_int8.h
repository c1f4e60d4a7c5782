/* CPU int8 kernels for QLinearConv and QLinearMatMul (oneDNN where built with it; quantize.c keeps the direct
 * int32 loops for what these decline). */
#ifndef CPU_QLINEAR_INT8_H
#define CPU_QLINEAR_INT8_H

#include "cpu_internal.h"

/* Build the fast kernel for the node, or leave *state NULL (not an error) when its shapes, types or
 * non-constant parameters are outside what it does. */
netrun_status cpu_qconv_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
/* Run it; *done = 0 when the tensors at run time differ from those it was built for (the caller falls back). */
netrun_status cpu_qconv_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done);
void cpu_qconv_destroy(void *state);
/* ConvInteger's: destroyed and described as QLinearConv's. */
netrun_status cpu_convi_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
netrun_status cpu_convi_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done);
void cpu_qconv_describe_state(const void *state, char *buf, size_t size);

netrun_status cpu_qmm_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
/* MatMulInteger's fast kernel: its state runs through cpu_qmm_run / cpu_qmm_destroy too. */
netrun_status cpu_mmi_create(cpu_context *ctx, const netrun_node_desc *node, void **state, size_t *workspace);
netrun_status cpu_qmm_run(cpu_context *ctx, void *state, const netrun_kernel_args *args, int *done);
void cpu_qmm_destroy(void *state);
void cpu_qmm_describe_state(const void *state, char *buf, size_t size);

/* NCHW <-> NHWC for 8-bit tensors of n images, c channels, hw pixels (parallel over the pool). */
void cpu_u8_to_nhwc(cpu_context *ctx, const uint8_t *x, uint8_t *y, int64_t n, int64_t c, int64_t hw);
void cpu_u8_to_nchw(cpu_context *ctx, const uint8_t *x, uint8_t *y, int64_t n, int64_t c, int64_t hw);

/* Per-tensor QuantizeLinear float32 -> (u)int8 and DequantizeLinear back, vectorized; 0 when this CPU has no
 * AVX-512 (the caller runs its own loop). */
int cpu_quantize_f32_8(const float *x, void *y, int64_t n, float scale, int32_t zp, int s8);
int cpu_dequantize_8_f32(const void *x, float *y, int64_t n, float scale, int32_t zp, int s8);
/* y = saturate(round((a - za) * ra + (b - zb) * rb) + zy) over n 8-bit values (a8, b8, y8: int8, else uint8);
 * y may be a or b. */
void cpu_qlinear_add(const void *a, int a8, int32_t za, float ra, const void *b, int b8, int32_t zb, float rb, void *y,
                     int y8, int32_t zy, int64_t n);

#endif
