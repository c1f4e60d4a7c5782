/* Params of the quantize family (QuantizeLinear, DequantizeLinear), shared by layers/quantize.c and
 * backends/cpu/quantize.c. To be moved into include/netrun_ops.h by the lead. QLinearConv and ConvInteger
 * use netrun_conv_params; BitCast uses netrun_cast_params; DynamicQuantizeLinear, QLinearMatMul and
 * MatMulInteger take no params. */
#ifndef NETRUN_QUANTIZE_PARAMS_H
#define NETRUN_QUANTIZE_PARAMS_H

#include <stdint.h>

typedef enum netrun_quant_mode {
    NETRUN_QUANT_PER_TENSOR = 0, /* scale has one element */
    NETRUN_QUANT_PER_AXIS = 1,   /* scale is 1-D with the length of x's dim `axis` */
    NETRUN_QUANT_BLOCKED = 2     /* scale has x's rank; dim `axis` is ceil(D / block_size) */
} netrun_quant_mode;

/* QuantizeLinear: y = saturate(round_even(x / scale) + zero_point); DequantizeLinear:
 * y = (x - zero_point) * scale. Zero point (input 2) is optional and has the scale's element count. */
typedef struct netrun_quantize_params {
    int mode;                /* netrun_quant_mode */
    int axis;                /* non-negative (per-axis and blocked) */
    int64_t block_size;      /* blocked only */
    int saturate;            /* QuantizeLinear to float8: 1 = clamp to the largest finite value */
    int out_dtype;           /* netrun_dtype of y */
    int precision;           /* QuantizeLinear: netrun_dtype the division is rounded to (float, float16,
                              * bfloat16, or double when an input is int32) */
} netrun_quantize_params;

#endif
