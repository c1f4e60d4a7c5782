/* Direct float32 Conv from nChw16c X to nChw16c Y: 3x3 pad 1 at stride 2 or 1, or 1x1 pad 0 at stride 2, with
 * bias, "+ Z" (nChw16c) and the fused activation in the epilogue. Stride 2: ResNet's downsampling convs, where
 * oneDNN 2.6's direct kernel runs the 3x3 ones at 70-75% of the FMA peak on one core (98% for stride 1) and this
 * one at about 100%. Stride 1: the 3x3s whose Winograd would read more weight bytes than its FMAs can hide (conv.c,
 * want_cdir). AVX-512 only (cpu_cdir_available); elsewhere oneDNN keeps them. */
#ifndef CPU_CONV_DIRECT_BLK_H
#define CPU_CONV_DIRECT_BLK_H

#include "cpu_internal.h"

typedef struct cpu_cdir cpu_cdir;

/* 1 when this build and CPU run the kernel (AVX-512F). */
int cpu_cdir_available(void);
/* 1 when the kernel takes this geometry: C and M multiples of 16, a 3x3 kernel with pads begin 1 at strides 2 or 1,
 * or a 1x1 one with none at strides 2, dilations 1, every output pixel reading at least one column and row of X,
 * and no pixel reading more than one column past X's last (kernel rows past the bottom edge are skipped: any
 * pads_end below, at most 1 on the right). */
int cpu_cdir_fits(int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const int64_t k[2],
                  const int64_t s[2], const int64_t d[2], const int64_t pads_begin[2]);
/* W [M][C][kernel][kernel] (constant), packed at create for a geometry that cpu_cdir_fits. */
netrun_status cpu_cdir_create(int64_t kernel, int64_t stride, int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh,
                              int64_t ow, const float *w, const netrun_fused_activation *act, cpu_cdir **out);
/* Y[n] = act(conv(X[n], W) + b + Z[n]) for n images of the create-time geometry; b and z may be NULL. */
netrun_status cpu_cdir_run(cpu_context *ctx, const cpu_cdir *s, const float *x, const float *b, const float *z,
                           float *y, int64_t n);
void cpu_cdir_destroy(cpu_cdir *s);

#endif
