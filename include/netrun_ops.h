/*
 * netrun_ops.h — typed parameters of the ops, as backends receive them (part of the plugin ABI).
 *
 * The runtime's layers/ parse and validate ONNX attributes (and constant inputs such as Reshape's shape or
 * Slice's starts) and hand backends these structs fully resolved: defaults applied, negative axes made
 * non-negative, auto_pad turned into explicit pads, the forms of older opsets converted to the newest. A
 * backend never parses attributes. Ops not listed here take no parameters (params == NULL).
 *
 * ABI rule: fields are only appended to a struct; a struct is never reordered.
 */
#ifndef NETRUN_OPS_H
#define NETRUN_OPS_H

#include <stdint.h>

#include "netrun.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NETRUN_MAX_SPATIAL 3 /* most spatial dims of Conv / pooling handled by the runtime's layers */

/* Fused activation a backend may apply after an op (set by fusion passes; NONE when not fused). */
typedef enum netrun_activation {
    NETRUN_ACT_NONE = 0,
    NETRUN_ACT_RELU = 1,
    NETRUN_ACT_LEAKY_RELU = 2, /* alpha */
    NETRUN_ACT_CLIP = 3,       /* alpha = min, beta = max */
    NETRUN_ACT_SIGMOID = 4,
    NETRUN_ACT_HARD_SIGMOID = 5, /* alpha, beta */
    NETRUN_ACT_HARD_SWISH = 6,
    NETRUN_ACT_TANH = 7,
    NETRUN_ACT_AFFINE = 8,       /* alpha * x + beta (RNN activations) */
    NETRUN_ACT_THRESHOLDED_RELU = 9, /* alpha */
    NETRUN_ACT_SCALED_TANH = 10, /* alpha * tanh(beta * x) */
    NETRUN_ACT_ELU = 11,         /* alpha */
    NETRUN_ACT_SOFTSIGN = 12,
    NETRUN_ACT_SOFTPLUS = 13
} netrun_activation;

typedef struct netrun_fused_activation {
    netrun_activation kind;
    float alpha, beta;
} netrun_fused_activation;

/* Conv, ConvTranspose. Input X is [N, C, spatial...], W is [M, C/group, k...] (Conv) or [C, M/group, k...]
 * (ConvTranspose). */
typedef struct netrun_conv_params {
    int n_spatial;                         /* 1, 2 or 3 */
    int64_t kernel[NETRUN_MAX_SPATIAL];
    int64_t strides[NETRUN_MAX_SPATIAL];
    int64_t dilations[NETRUN_MAX_SPATIAL];
    int64_t pads_begin[NETRUN_MAX_SPATIAL];  /* resolved from pads / auto_pad */
    int64_t pads_end[NETRUN_MAX_SPATIAL];
    int64_t output_padding[NETRUN_MAX_SPATIAL]; /* ConvTranspose only */
    int64_t group;
    int has_bias;                          /* input B present */
    netrun_fused_activation activation;    /* fused activation (NONE unless a pass fused one) */
    int has_sum;                           /* a pass fused "+ Z" (an extra last input) before activation */
} netrun_conv_params;

/* Gemm: Y = alpha * A' * B' + beta * C. */
typedef struct netrun_gemm_params {
    float alpha, beta;
    int trans_a, trans_b;
    int has_c;
    netrun_fused_activation activation;
} netrun_gemm_params;

/* MaxPool, AveragePool, LpPool (GlobalXxxPool take no params). */
typedef struct netrun_pool_params {
    int n_spatial;
    int64_t kernel[NETRUN_MAX_SPATIAL];
    int64_t strides[NETRUN_MAX_SPATIAL];
    int64_t dilations[NETRUN_MAX_SPATIAL];
    int64_t pads_begin[NETRUN_MAX_SPATIAL];
    int64_t pads_end[NETRUN_MAX_SPATIAL];
    int ceil_mode;
    int count_include_pad;                 /* AveragePool */
    int storage_order;                     /* MaxPool Indices output: 0 row major, 1 column major */
    int64_t p;                             /* LpPool */
} netrun_pool_params;

/* BatchNormalization (inference), InstanceNormalization, LayerNormalization, GroupNormalization. */
typedef struct netrun_norm_params {
    float epsilon;
    int axis;                              /* LayerNormalization: first normalized axis (non-negative) */
    int64_t num_groups;                    /* GroupNormalization */
    netrun_fused_activation activation;
} netrun_norm_params;

/* Elementwise unary ops with constants: LeakyRelu(alpha), Elu(alpha), Selu(alpha, gamma),
 * HardSigmoid(alpha, beta), Clip(min = alpha, max = beta when has_min/has_max; opset < 11 attributes and
 * constant min/max inputs both land here), ThresholdedRelu(alpha), Celu(alpha), Gelu(approximate),
 * Shrink(bias = alpha, lambd = beta), Softplus, Mod(alpha = fmod), BitShift(alpha = 1 for RIGHT),
 * IsInf(alpha = detect_negative, beta = detect_positive), ... */
typedef struct netrun_unary_params {
    float alpha, beta, gamma;
    int has_min, has_max;                  /* Clip: bounds known at prepare (else from inputs 1/2) */
    int approximate_tanh;                  /* Gelu approximate="tanh" */
} netrun_unary_params;

/* Softmax, LogSoftmax, Hardmax. */
typedef struct netrun_softmax_params {
    int axis;                              /* non-negative */
    int coerce_2d;                         /* opset < 13: flatten to [prod(d<axis), prod(d>=axis)] */
} netrun_softmax_params;

/* ReduceXxx, ArgMax/ArgMin. */
typedef struct netrun_reduce_params {
    int n_axes;                            /* number of axes reduced (0 with noop = identity) */
    int axes[NETRUN_MAX_RANK];             /* sorted, non-negative */
    int keepdims;
    int noop;                              /* noop_with_empty_axes and no axes: identity */
    int select_last_index;                 /* ArgMax/ArgMin */
} netrun_reduce_params;

/* TopK. */
typedef struct netrun_topk_params {
    int axis;
    int64_t k;
    int largest;
    int sorted;
} netrun_topk_params;

/* Ops with one axis: Concat, Gather, GatherElements, Flatten, CumSum(+flags), Compress, ... */
typedef struct netrun_axis_params {
    int axis;                              /* non-negative */
    int exclusive, reverse;                /* CumSum */
} netrun_axis_params;

/* Split: output i takes sizes[i] along axis. */
typedef struct netrun_split_params {
    int axis;
    int n_outputs;
    const int64_t *sizes;                  /* n_outputs entries (owned by the runtime) */
} netrun_split_params;

/* Slice, resolved per dim of the input: element j of the output along dim d is start[d] + j*step[d]. */
typedef struct netrun_slice_params {
    int64_t start[NETRUN_MAX_RANK];
    int64_t step[NETRUN_MAX_RANK];         /* 1 for dims not sliced */
} netrun_slice_params;

/* Transpose: output dim i is input dim perm[i]. */
typedef struct netrun_transpose_params {
    int perm[NETRUN_MAX_RANK];
} netrun_transpose_params;

/* Cast. */
typedef struct netrun_cast_params {
    int to;                                /* netrun_dtype */
    int saturate;
} netrun_cast_params;

/* Pad, resolved to every dim. */
typedef enum netrun_pad_mode { NETRUN_PAD_CONSTANT = 0, NETRUN_PAD_REFLECT = 1, NETRUN_PAD_EDGE = 2,
                               NETRUN_PAD_WRAP = 3 } netrun_pad_mode;
typedef struct netrun_pad_params {
    netrun_pad_mode mode;
    int64_t pads_begin[NETRUN_MAX_RANK];   /* may be negative (crop) */
    int64_t pads_end[NETRUN_MAX_RANK];
    double value;                          /* constant mode fill value (converted to the dtype) */
} netrun_pad_params;

/* ConstantOfShape: the fill value as raw bytes of the output dtype. */
typedef struct netrun_fill_params {
    unsigned char value[16];
} netrun_fill_params;

/* DepthToSpace, SpaceToDepth. */
typedef struct netrun_space_depth_params {
    int64_t blocksize;
    int crd;                               /* DepthToSpace mode "CRD" (else "DCR") */
} netrun_space_depth_params;

/* Resize (and Upsample), resolved per dim of the input. */
typedef enum netrun_resize_mode { NETRUN_RESIZE_NEAREST = 0, NETRUN_RESIZE_LINEAR = 1,
                                  NETRUN_RESIZE_CUBIC = 2 } netrun_resize_mode;
typedef enum netrun_resize_coord {
    NETRUN_COORD_HALF_PIXEL = 0, NETRUN_COORD_ASYMMETRIC = 1, NETRUN_COORD_PYTORCH_HALF_PIXEL = 2,
    NETRUN_COORD_TF_CROP_AND_RESIZE = 3, NETRUN_COORD_ALIGN_CORNERS = 4, NETRUN_COORD_HALF_PIXEL_SYMMETRIC = 5
} netrun_resize_coord;
typedef enum netrun_resize_nearest {
    NETRUN_NEAREST_ROUND_PREFER_FLOOR = 0, NETRUN_NEAREST_ROUND_PREFER_CEIL = 1, NETRUN_NEAREST_FLOOR = 2,
    NETRUN_NEAREST_CEIL = 3
} netrun_resize_nearest;
typedef struct netrun_resize_params {
    netrun_resize_mode mode;
    netrun_resize_coord coord;
    netrun_resize_nearest nearest;
    float cubic_coeff_a;
    int exclude_outside;
    float extrapolation_value;
    int antialias;
    float scale[NETRUN_MAX_RANK];          /* output/input per dim, as the spec defines it */
    float roi_start[NETRUN_MAX_RANK];      /* tf_crop_and_resize */
    float roi_end[NETRUN_MAX_RANK];
} netrun_resize_params;

/* LSTM, GRU, RNN. */
typedef enum netrun_rnn_direction { NETRUN_RNN_FORWARD = 0, NETRUN_RNN_REVERSE = 1,
                                    NETRUN_RNN_BIDIRECTIONAL = 2 } netrun_rnn_direction;
typedef struct netrun_rnn_params {
    int64_t hidden_size;
    netrun_rnn_direction direction;
    int layout;                            /* 0: [seq, batch, ...]; 1: [batch, seq, ...] */
    int n_activations;
    netrun_activation activations[6];      /* per direction: f, g, h (LSTM) / f, g (GRU) / f (RNN) */
    float activation_alpha[6], activation_beta[6];
    float clip;                            /* 0 = none */
    int input_forget;                      /* LSTM */
    int linear_before_reset;               /* GRU */
} netrun_rnn_params;

/* Shape: output dims [start, end) of the input's shape. */
typedef struct netrun_shape_params {
    int start, end;
} netrun_shape_params;

/* ScatterElements (axis) and ScatterND (axis unused). */
typedef enum netrun_scatter_reduction { NETRUN_SCATTER_NONE = 0, NETRUN_SCATTER_ADD = 1, NETRUN_SCATTER_MUL = 2,
                                        NETRUN_SCATTER_MAX = 3, NETRUN_SCATTER_MIN = 4 } netrun_scatter_reduction;
typedef struct netrun_scatter_params {
    int axis;                              /* non-negative */
    int reduction;                         /* netrun_scatter_reduction */
} netrun_scatter_params;

/* Trilu: keep the upper (or lower) triangle from diagonal k (resolved from the optional k input). */
typedef struct netrun_trilu_params {
    int upper;
    int64_t k;
} netrun_trilu_params;

/* EyeLike: ones on diagonal k. */
typedef struct netrun_eyelike_params {
    int64_t k;
} netrun_eyelike_params;

/* GatherND carries batch_dims in netrun_axis_params.axis. */

/* Dropout, Identity and ops whose output is a reshaped view (Reshape, Flatten, Squeeze, Unsqueeze) carry
 * no params: the output desc has the shape. */

#ifdef __cplusplus
}
#endif
#endif /* NETRUN_OPS_H */
