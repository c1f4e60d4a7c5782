/* Depthwise 2-D convolution kernel of the CPU backend (conv_depthwise.c). */
#ifndef CPU_CONV_DEPTHWISE_H
#define CPU_CONV_DEPTHWISE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_internal.h"
#include "netrun_ops.h"

typedef struct cpu_dw_args {
    int64_t planes, c;              /* planes = N * C; channel of plane t is t % c */
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    const float *x, *w, *b, *z;     /* b, z optional */
    float *y;
    const netrun_fused_activation *act;
    float *ws;                      /* slots * cpu_dw_slot_floats floats */
} cpu_dw_args;

/* Workspace floats per slot (one zero-padded plane). */
size_t cpu_dw_slot_floats(const cpu_dw_args *a);
/* Run over `slots` slots (<= the context's threads), slot s owning ws + s * cpu_dw_slot_floats. */
void cpu_dw_run(cpu_context *ctx, const cpu_dw_args *a, int64_t slots);
const char *cpu_dw_variant(void);
/* 1 when the tiled AVX-512 kernel runs (AVX-512F and not cpu.dw_tiled=0). */
int cpu_dw_tiled(cpu_context *ctx);

#endif
