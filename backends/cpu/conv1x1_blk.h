/* 1x1 stride-1 unpadded float32 Conv from plain NCHW X (any channel count) into nChw16c Y (M % 16 == 0), or
 * from nChw16c X (C % 16 == 0) into plain NCHW Y (any M), with bias, "+ Z" (in Y's layout) and the fused
 * activation in the epilogue: the expand and project convs of MobileNetV2 / EfficientNet / MnasNet next to
 * tensors of 24 or 40 channels (no nChw16c), where oneDNN pads them to 32 channels and reorders inside the
 * node. AVX-512 only (cpu_c1x1_available); other CPUs keep oneDNN. */
#ifndef CPU_CONV1X1_BLK_H
#define CPU_CONV1X1_BLK_H

#include "cpu_internal.h"

typedef struct cpu_c1x1 cpu_c1x1;

/* 1 when this CPU runs the kernel (AVX-512F) and cpu.conv1x1_blk is not 0. */
int cpu_c1x1_available(cpu_context *ctx);
enum {
    CPU_C1X1_PLAIN_BLK = 0, /* plain X -> nChw16c Y */
    CPU_C1X1_BLK_PLAIN = 1, /* nChw16c X -> plain Y */
    CPU_C1X1_PLAIN_PLAIN = 2, /* plain both (cpu.conv1x1_plain): instead of OpenBLAS sgemm on small K */
    CPU_C1X1_BLK_BLK = 3,     /* nChw16c both (cpu.conv1x1_bb): where oneDNN's output-channel slices cannot
                                 keep every thread busy (16 or 48 channels on big planes) */
    CPU_C1X1_BLK_PLAIN2 = 4   /* as BLK_PLAIN, two output blocks per tile (cpu.conv1x1_yp2, the default) */
};
/* W [M][C] (row-major, constant), packed at create; mode CPU_C1X1_*. */
netrun_status cpu_c1x1_create(int64_t c, int64_t m, const float *w, const netrun_fused_activation *act, int mode,
                              cpu_c1x1 **out);
/* 1 when mode's kernel takes a per-image input-channel scale (cpu_c1x1_run's sc): plain or nChw16c X into
 * nChw16c Y, and the two-block nChw16c -> plain tile. */
int cpu_c1x1_takes_scale(int mode);
/* Y[n] = act(W (X[n] * S[n]) + b + Z[n]) for the n images of `hw` pixels; b, z and sc may be NULL. sc: C
 * scales per image, sc_stride floats apart (0: one set for all images); only where cpu_c1x1_takes_scale. */
netrun_status cpu_c1x1_run(cpu_context *ctx, const cpu_c1x1 *s, const float *x, const float *b, const float *z,
                           const float *sc, int64_t sc_stride, float *y, int64_t n, int64_t hw);
void cpu_c1x1_destroy(cpu_c1x1 *s);

#endif
