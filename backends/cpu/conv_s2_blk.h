/* Stride-2 float32 Conv, 3x3 pad 1 or 1x1 pad 0, from nChw16c X to nChw16c Y (ResNet's downsampling convs),
 * with bias, "+ Z" (nChw16c) and the fused activation in the epilogue. oneDNN 2.6's direct kernel runs the 3x3
 * ones at 70-75% of the FMA peak on one core (98% for stride 1); this one at about 100%. AVX-512 only
 * (cpu_cs2_available); elsewhere oneDNN keeps them. */
#ifndef CPU_CONV_S2_BLK_H
#define CPU_CONV_S2_BLK_H

#include "cpu_internal.h"

typedef struct cpu_cs2 cpu_cs2;

/* 1 when this CPU runs the kernel (AVX-512F) and cpu.conv_s2 is not 0. */
int cpu_cs2_available(cpu_context *ctx);
/* 1 when the kernel takes this geometry: C and M multiples of 16, a 3x3 kernel with pads begin 1 or a 1x1 one
 * with none, strides 2, dilations 1, and every output pixel reading at least one column and row of X (kernel
 * columns and rows past the right and bottom edges are skipped: any pads_end). */
int cpu_cs2_fits(int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const int64_t k[2],
                 const int64_t s[2], const int64_t d[2], const int64_t pads_begin[2]);
/* W [M][C][kernel][kernel] (constant), packed at create for a geometry that cpu_cs2_fits. */
netrun_status cpu_cs2_create(int64_t kernel, int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
                             const float *w, const netrun_fused_activation *act, cpu_cs2 **out);
/* Y[n] = act(conv(X[n], W) + b + Z[n]) for n images of the create-time geometry; b and z may be NULL. */
netrun_status cpu_cs2_run(cpu_context *ctx, const cpu_cs2 *s, const float *x, const float *b, const float *z,
                          float *y, int64_t n);
void cpu_cs2_destroy(cpu_cs2 *s);

#endif
