/* 3x3 stride-1 float32 Conv with pads of 1 (same-size output), nChw16c X -> nChw16c Y, by Winograd F(2x2, 3x3),
 * with bias, "+ Z" (nChw16c) and the fused activation in the output transform. In place of oneDNN 2.6's
 * Winograd kernel (the same F(2x2) arithmetic, so the same rounding error), whose transforms go through
 * scratch buffers of up to 15 MB a slice. AVX-512 only (cpu_cw_available); elsewhere oneDNN keeps them. */
#ifndef CPU_CONV_WINO_BLK_H
#define CPU_CONV_WINO_BLK_H

#include "cpu_internal.h"

typedef struct cpu_cw cpu_cw;

/* U = G W G^T takes 16 x C x M floats; up to this many it stays in a core's L2 (one pass, no bands; and no reason
 * to prefer a direct kernel for few tiles: conv.c's want_cdir). */
#define CPU_CW_U_L2 (512 * 1024)

/* 1 when this CPU runs the kernel (AVX-512F) and cpu.conv_wino is not 0. */
int cpu_cw_available(cpu_context *ctx);
/* 1 when the kernel takes this geometry: C and M multiples of 16, 3x3, strides and dilations 1, pads 1 on
 * every side, Y as large as X. */
int cpu_cw_fits(int64_t c, int64_t m, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const int64_t k[2],
                const int64_t s[2], const int64_t d[2], const int64_t pads_begin[2], const int64_t pads_end[2]);
/* W [M][C][3][3] (constant), transformed at create. *ws_bytes: the workspace a run with up to `threads` threads
 * needs (V of one band of tiles, or one task's V a thread). */
netrun_status cpu_cw_create(int64_t c, int64_t m, int64_t h, int64_t w, const float *wt,
                            const netrun_fused_activation *act, int threads, cpu_cw **out, size_t *ws_bytes);
/* Y[n] = act(conv(X[n], W) + b + Z[n]) for n images; b and z may be NULL; ws: cpu_cw_create's ws_bytes. */
netrun_status cpu_cw_run(cpu_context *ctx, const cpu_cw *s, const float *x, const float *b, const float *z, float *y,
                         int64_t n, float *ws, size_t ws_bytes);
void cpu_cw_destroy(cpu_cw *s);

#endif
