/* 1x1 stride-1 unpadded float32 Conv from plain NCHW X (any channel count) into nChw16c Y (M % 16 == 0), with
 * bias, "+ Z" (nChw16c) and the fused activation in the epilogue: the expand convs of MobileNetV2 /
 * EfficientNet / MnasNet whose inputs have 24 or 40 channels (no nChw16c), where oneDNN pads X to 32 channels
 * and reorders it inside the node. AVX-512 only (cpu_c1x1_available); other CPUs keep oneDNN. */
#ifndef CPU_CONV1X1_BLK_H
#define CPU_CONV1X1_BLK_H

#include "cpu_internal.h"

typedef struct cpu_c1x1 cpu_c1x1;

/* 1 when this CPU runs the kernel (AVX-512F) and cpu.conv1x1_blk is not 0. */
int cpu_c1x1_available(cpu_context *ctx);
/* W [M][C] (row-major, constant), packed at create. */
netrun_status cpu_c1x1_create(int64_t c, int64_t m, const float *w, const netrun_fused_activation *act,
                              cpu_c1x1 **out);
/* Y[n] = act(W X[n] + b + Z[n]) for the n images of `hw` pixels; b and z may be NULL. */
netrun_status cpu_c1x1_run(cpu_context *ctx, const cpu_c1x1 *s, const float *x, const float *b, const float *z,
                           float *y, int64_t n, int64_t hw);
void cpu_c1x1_destroy(cpu_c1x1 *s);

#endif
