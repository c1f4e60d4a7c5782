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
    NETRUN_ACT_SOFTPLUS = 13,
    NETRUN_ACT_SWISH = 14,       /* x * sigmoid(alpha * x) (SiLU for alpha = 1) */
    NETRUN_ACT_GELU_TANH = 15    /* ABI 1.12: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), Gelu approximate="tanh"
                                  * (set on com.netrun MatMulBias only) */
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
    int has_sum;                           /* a pass fused "+ Z" (an extra last input) before activation;
                                            * QLinearConv: the QDQ pass's residual form (inputs 9 to 13) */
    /* Set by the CPU nChw16c pass only (0 otherwise): X (and Z) / Y are in oneDNN's nChw16c order, same dims
     * and bytes as NCHW (only 2-D, channel counts multiples of 16, so no padding). */
    int src_blocked, dst_blocked;
    /* Set by the float16 NHWC region pass (0 otherwise): X (and Z) / Y are float16 in NHWC order (channels last);
     * dims stay the logical NCHW ones. On a QLinearConv, set by the QDQ pass: its 8-bit X (and Z) / Y in NHWC
     * between fused convolutions. Backends that do not handle them refuse the node. */
    int src_nhwc, dst_nhwc;
    /* ABI 1.7. Set by the CPU nChw16c pass only (0 otherwise): X is taken times S, a float32 [N or 1, C, 1, 1]
     * input right after B (before Z): squeeze-excite's Mul folded into the 1x1 projection that reads it. */
    int src_scale;
} netrun_conv_params;

/* Gemm: Y = alpha * A' * B' + beta * C.
 * Also MatMulBias (domain com.netrun, made by the graph passes from MatMul(A, B) + Add(bias) [+ activation]):
 * Y[..., M, N] = act(A[..., M, K] B[K, N] + bias[N]), B 2-D, bias 1-D; alpha = beta = 1, has_c = 1, no transposes,
 * activation NONE, RELU or GELU_TANH. An optional 4th input R of Y's shape and dtype is a residual Add after it:
 * Y = A B + bias + R (activation NONE only); backends that do not take it refuse the 4-input node. */
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
    int blocked;                           /* MaxPool, AveragePool, set by the CPU nChw16c pass only: X and Y nChw16c
                                            * (2-D, float32, C % 16 == 0, no Indices) */
    int nhwc;                              /* MaxPool/AveragePool, set by the CUDA float16 region pass only: X and
                                            * Y float16 NHWC (2-D, no Indices; dims stay the NCHW ones) */
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
/* Cast's round_mode (opset 24+): how a value rounds to float8e8m0 (a power of two). */
typedef enum netrun_cast_round_mode {
    NETRUN_CAST_ROUND_UP = 0,     /* "up", the default: any fraction rounds to the next power of two */
    NETRUN_CAST_ROUND_DOWN = 1,   /* "down": truncate to the exponent */
    NETRUN_CAST_ROUND_NEAREST = 2 /* "nearest" */
} netrun_cast_round_mode;

typedef struct netrun_cast_params {
    int to;                                /* netrun_dtype */
    int saturate;                          /* 1/0: the ONNX attribute (float8 targets); 2: netrun's own Casts at
                                            * the borders of float16 regions (attribute "netrun.finite" = 1): float32
                                            * -> float16 clamps finite values to +-65504 instead of overflowing */
    int round_mode;                        /* netrun_cast_round_mode */
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

/* ---- index family ---- */
/* Params of the index_ops family (and the leftover ops it hosts); to move into netrun_ops.h later. */


/* Unique: over the flattened input (has_axis 0) or over slices along axis. */
typedef struct netrun_unique_params {
    int sorted;
    int has_axis;
    int axis;            /* non-negative when has_axis */
    int present[4];      /* which of Y, indices, inverse_indices, counts the node asks for */
} netrun_unique_params;

/* OneHot: output inserts a dim of size depth at axis. */
typedef struct netrun_onehot_params {
    int axis;            /* non-negative, in the output's rank */
    int64_t depth;
} netrun_onehot_params;

/* Compress: along axis, or over the flattened input when has_axis is 0. */
typedef struct netrun_compress_params {
    int has_axis;
    int axis;
} netrun_compress_params;

/* ReverseSequence. */
typedef struct netrun_reverse_sequence_params {
    int time_axis, batch_axis; /* 0 and 1 in some order */
} netrun_reverse_sequence_params;

/* TensorScatter: write update into a copy of past_cache along axis at write_indices[batch]. */
typedef struct netrun_tensor_scatter_params {
    int axis;            /* non-negative, >= 1 */
    int circular;
} netrun_tensor_scatter_params;

/* TfIdfVectorizer over integer tokens: the pool's n-grams (lengths in [min_gram, max_gram]) as a table. */
typedef struct netrun_tfidf_params {
    int mode;            /* 0 TF, 1 IDF, 2 TFIDF */
    int64_t min_gram, max_gram, max_skip;
    int64_t output_size;
    int64_t n_grams;
    const int64_t *grams; /* n_grams rows of (length, first item in pool, output column) */
    const int64_t *pool;  /* pool_int64s */
    const float *weights; /* output_size weights, or NULL */
} netrun_tfidf_params;

/* ai.onnx.preview.training Adagrad, Adam, Momentum over n tensors: inputs R, T, then groups of n. */
typedef enum netrun_optimizer_kind { NETRUN_OPT_ADAGRAD = 0, NETRUN_OPT_ADAM = 1, NETRUN_OPT_MOMENTUM = 2 }
    netrun_optimizer_kind;
typedef struct netrun_optimizer_params {
    int kind;            /* netrun_optimizer_kind */
    int n;               /* tensors optimized */
    int nesterov;        /* Momentum mode "nesterov" */
    float alpha, beta, epsilon, decay_factor, norm_coefficient, norm_coefficient_post;
} netrun_optimizer_params;

/* ---- loss family ---- */
/* Params of the ops added with the loss family (and of a few norm ops) that include/netrun_ops.h lacks yet.
 * Included by the layers and by the CPU kernels; the lead moves them into netrun_ops.h later. */



/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
typedef enum netrun_loss_reduction { NETRUN_LOSS_NONE = 0, NETRUN_LOSS_SUM = 1, NETRUN_LOSS_MEAN = 2 } netrun_loss_reduction;
typedef struct netrun_loss_params {
    int reduction;                         /* netrun_loss_reduction */
    int has_ignore_index;
    int64_t ignore_index;
} netrun_loss_params;

/* Einsum, resolved against the input shapes: every dim of every operand and of the output carries a label
 * id in [0, n_labels); ellipsis dims get their own ids. Labels of no output dim are summed over. */
#define NETRUN_EINSUM_MAX_INPUTS 8
#define NETRUN_EINSUM_MAX_LABELS (52 + NETRUN_MAX_RANK)
typedef struct netrun_einsum_params {
    int n_inputs;
    int n_labels;
    int64_t label_dim[NETRUN_EINSUM_MAX_LABELS];
    int in_rank[NETRUN_EINSUM_MAX_INPUTS];
    int in_label[NETRUN_EINSUM_MAX_INPUTS][NETRUN_MAX_RANK];
    int out_rank;
    int out_label[NETRUN_MAX_RANK];
} netrun_einsum_params;

/* LpNormalization. */
typedef struct netrun_lpnorm_params {
    int axis;                              /* non-negative */
    int64_t p;                             /* 1 or 2 */
} netrun_lpnorm_params;

/* LRN. */
typedef struct netrun_lrn_params {
    float alpha, beta, bias;
    int64_t size;
} netrun_lrn_params;

/* MeanVarianceNormalization uses netrun_reduce_params (axes sorted, non-negative). Swish uses
 * netrun_unary_params (alpha). */

/* ---- quantize family ---- */
/* Params of the quantize family (QuantizeLinear, DequantizeLinear), shared by layers/quantize.c and
 * backends/cpu/quantize.c. To be moved into include/netrun_ops.h by the lead. QLinearConv and ConvInteger
 * use netrun_conv_params; BitCast uses netrun_cast_params; DynamicQuantizeLinear, QLinearMatMul and
 * MatMulInteger take no params. */


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

/* ---- signal family ---- */
/* Params of the signal family (DFT, STFT, windows, MelWeightMatrix); to move into netrun_ops.h later. */


/* DFT: transform along `axis` of an input [..., n, ..., 1 or 2] (real or interleaved complex). */
typedef struct netrun_dft_params {
    int axis;            /* non-negative, never the last (real/imag) dim */
    int64_t dft_length;  /* transform length (input zero-padded or truncated to it) */
    int inverse;         /* inverse transform, scaled by 1/dft_length */
    int onesided;        /* forward: keep dft_length/2+1 bins; inverse: Hermitian input, real output */
} netrun_dft_params;

/* STFT of a signal [batch, length, 1 or 2] into [batch, frames, bins, 2]. */
typedef struct netrun_stft_params {
    int64_t frame_step, frame_length, n_frames;
    int onesided;
    int has_window;      /* input 2 present (length frame_length) */
} netrun_stft_params;

/* HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix. */
typedef struct netrun_window_params {
    int periodic;
    int output_datatype; /* netrun_dtype of the output */
} netrun_window_params;

/* ---- transformer family ---- */
/* Params of the transformer family (Attention, FlexAttention, RMSNormalization, RotaryEmbedding,
 * LinearAttention, CausalConvWithState), shared by layers/transformer.c and backends/cpu/transformer.c.
 * To be moved into netrun_ops.h by the lead. RMSNormalization uses netrun_norm_params. */


/* FlexAttention score_mod/prob_mod compiled to an elementwise program over the [B, Hq, L, S] score tensor:
 * register 0 holds the score (or probability), each instruction writes register dst. */
enum {
    NETRUN_FLEX_CONST = 0, NETRUN_FLEX_AXIS, /* k = value / axis index 0..3 */
    NETRUN_FLEX_ADD, NETRUN_FLEX_SUB, NETRUN_FLEX_MUL, NETRUN_FLEX_DIV, NETRUN_FLEX_POW, NETRUN_FLEX_MIN,
    NETRUN_FLEX_MAX, NETRUN_FLEX_GE, NETRUN_FLEX_GT, NETRUN_FLEX_LE, NETRUN_FLEX_LT, NETRUN_FLEX_EQ,
    NETRUN_FLEX_AND, NETRUN_FLEX_OR, NETRUN_FLEX_WHERE, NETRUN_FLEX_NEG, NETRUN_FLEX_ABS, NETRUN_FLEX_TANH,
    NETRUN_FLEX_EXP, NETRUN_FLEX_LOG, NETRUN_FLEX_SQRT, NETRUN_FLEX_SIGMOID, NETRUN_FLEX_RELU, NETRUN_FLEX_NOT,
    NETRUN_FLEX_TRUNC, NETRUN_FLEX_COPY, NETRUN_FLEX_RECIP, NETRUN_FLEX_FLOOR, NETRUN_FLEX_CEIL
};
#define NETRUN_FLEX_MAX_INSN 64
typedef struct netrun_flex_insn {
    int op, dst, a, b, c;
    double k;
} netrun_flex_insn;
typedef struct netrun_flex_prog {
    int n_insn, n_regs, out_reg;
    netrun_flex_insn insn[NETRUN_FLEX_MAX_INSN];
} netrun_flex_prog;

/* Attention (opset 23/24) and ai.onnx.preview FlexAttention (is_flex). All sizes resolved by infer. */
typedef struct netrun_attention_params {
    int q_num_heads, kv_num_heads;     /* resolved from the 4-D shapes or the attributes (3-D) */
    int input_3d;                      /* Q/K/V are [B, L, heads * E]; Y is 3-D too */
    int is_causal;
    float scale;                       /* resolved: 1/sqrt(head_size) unless given */
    float softcap;                     /* 0 = none */
    int softmax_precision;             /* ONNX TensorProto dtype, 0 = that of the inputs */
    int qk_matmul_output_mode;         /* 0 raw QK, 1 after softcap, 2 after mask, 3 after softmax */
    int mask_kind;                     /* 0 none, 1 bool, 2 additive float */
    int has_past;                      /* past_key and past_value present */
    int has_nonpad;                    /* nonpad_kv_seqlen present */
    int is_flex;                       /* FlexAttention: no mask/past; softmax in float (double for double) */
    int64_t batch, q_len, kv_len, past_len, total_len, head_size, v_head_size;
    const netrun_flex_prog *score_mod, *prob_mod; /* FlexAttention modifiers (NULL = none) */
    char mod_error[120];               /* FlexAttention: why a modifier subgraph cannot run ("" = fine) */
} netrun_attention_params;

/* RotaryEmbedding (opset 23). */
typedef struct netrun_rotary_params {
    int num_heads;                     /* resolved (3-D input: attribute; 4-D: dims[1]) */
    int interleaved;
    int input_3d;
    int has_position_ids;
    int64_t rotary_dim;                /* resolved: head_size when 0 */
    int64_t batch, seq_len, head_size;
} netrun_rotary_params;

/* LinearAttention (opset 27). */
typedef struct netrun_linear_attention_params {
    int q_num_heads, kv_num_heads;
    int gating, delta;                 /* from update_rule: linear, gated, delta, gated_delta */
    float scale;                       /* resolved: 1/sqrt(d_k) when 0 */
    int decay_per_key;                 /* decay last dim is kv_heads * d_k (else kv_heads) */
    int64_t beta_heads;                /* beta last dim: kv_heads or 1 */
    int has_past;
    int64_t batch, seq_len, d_k, d_v;
} netrun_linear_attention_params;

/* CausalConvWithState (opset 27). */
typedef struct netrun_causal_conv_params {
    int silu;                          /* activation "silu" or "swish" */
    int has_bias, has_past;
    int64_t batch, channels, length, kernel;
} netrun_causal_conv_params;

/* ---- vision family ---- */
/* Params of the vision ops (GridSample, NonMaxSuppression, RoiAlign, MaxRoiPool, MaxUnpool, AffineGrid,
 * Col2Im, CenterCropPad, DeformConv, ImageDecoder). Included by layers/vision.c and backends/cpu/vision.c;
 * meant to move into include/netrun_ops.h. */



enum { NETRUN_GS_LINEAR = 0, NETRUN_GS_NEAREST = 1, NETRUN_GS_CUBIC = 2 };
enum { NETRUN_GS_PAD_ZEROS = 0, NETRUN_GS_PAD_BORDER = 1, NETRUN_GS_PAD_REFLECTION = 2 };

/* GridSample: X [N, C, D1..Dk], grid [N, O1..Ok, k] (grid[..., 0] indexes the last spatial dim). */
typedef struct netrun_grid_sample_params {
    int mode;           /* NETRUN_GS_* */
    int padding_mode;   /* NETRUN_GS_PAD_* */
    int align_corners;
    int n_spatial;      /* k: 1..3 */
} netrun_grid_sample_params;

/* NonMaxSuppression: the thresholds are inputs 2..4, read by the kernel. */
typedef struct netrun_nms_params {
    int center_point_box;
} netrun_nms_params;

/* RoiAlign. */
typedef struct netrun_roi_align_params {
    int mode_max;       /* 0 avg, 1 max */
    int half_pixel;     /* coordinate_transformation_mode == half_pixel */
    int64_t output_height, output_width, sampling_ratio;
    float spatial_scale;
} netrun_roi_align_params;

/* MaxRoiPool. */
typedef struct netrun_max_roi_pool_params {
    int64_t pooled_h, pooled_w;
    float spatial_scale;
} netrun_max_roi_pool_params;

/* MaxUnpool: indices address the tensor of shape [N, C, inferred...]; that tensor is written at the
 * origin of the (possibly larger) output. */
typedef struct netrun_max_unpool_params {
    int n_spatial;
    int64_t kernel[NETRUN_MAX_SPATIAL];
    int64_t strides[NETRUN_MAX_SPATIAL];
    int64_t pads_begin[NETRUN_MAX_SPATIAL];
    int64_t pads_end[NETRUN_MAX_SPATIAL];
    int64_t inferred[NETRUN_MAX_SPATIAL]; /* spatial dims the indices refer to */
} netrun_max_unpool_params;

/* AffineGrid: output [N, H, W, 2] or [N, D, H, W, 3]. */
typedef struct netrun_affine_grid_params {
    int align_corners;
    int n_spatial;      /* 2 or 3 */
} netrun_affine_grid_params;

/* Col2Im: input [N, C * prod(block), L], output [N, C, image...]. */
typedef struct netrun_col2im_params {
    int n_spatial;
    int64_t image[NETRUN_MAX_RANK];
    int64_t block[NETRUN_MAX_RANK];
    int64_t dilations[NETRUN_MAX_RANK];
    int64_t pads_begin[NETRUN_MAX_RANK];
    int64_t pads_end[NETRUN_MAX_RANK];
    int64_t strides[NETRUN_MAX_RANK];
    int64_t blocks[NETRUN_MAX_RANK];  /* sliding positions per spatial dim (L = their product) */
} netrun_col2im_params;

/* CenterCropPad: out[i] = in[i + offset] along every axis (zero where that falls outside the input). */
typedef struct netrun_center_crop_pad_params {
    int rank;
    int64_t offset[NETRUN_MAX_RANK];
} netrun_center_crop_pad_params;

/* DeformConv (2-D): X [N, C, H, W], W [M, C/group, kH, kW], offset [N, og*kH*kW*2, oH, oW],
 * B [M] (optional), mask [N, og*kH*kW, oH, oW] (optional). */
typedef struct netrun_deform_conv_params {
    int64_t kernel[2], strides[2], dilations[2], pads_begin[2], pads_end[2];
    int64_t group, offset_group;
    int has_bias, has_mask;
} netrun_deform_conv_params;

/* ImageDecoder: output [H, W, 3] (RGB/BGR) or [H, W, 1] (Grayscale), uint8, shaped by the kernel. */
enum { NETRUN_PIXEL_RGB = 0, NETRUN_PIXEL_BGR = 1, NETRUN_PIXEL_GRAY = 2 };
typedef struct netrun_image_decoder_params {
    int pixel_format;
} netrun_image_decoder_params;

/* Dropout, Identity and ops whose output is a reshaped view (Reshape, Flatten, Squeeze, Unsqueeze) carry
 * no params: the output desc has the shape. */

/* ReorderNCHWc (domain "com.netrun", internal: inserted by the CPU nChw16c pass): a 4-D float tensor with
 * C % 16 == 0 between NCHW and nChw16c ([N][C/16][H][W][16]); same dims, same bytes. Also
 * GlobalAveragePoolNCHWc (com.netrun, no params): GlobalAveragePool of an nChw16c X, plain [N,C,1,1] Y;
 * MulChannelNCHWc(X, S) (com.netrun, no params): nChw16c X times plain S [N or 1, C, 1, 1], nChw16c Y. */
typedef struct netrun_reorder_nchwc_params {
    int to_blocked;                        /* 1: NCHW -> nChw16c, 0: back */
} netrun_reorder_nchwc_params;

/* ReorderNHWC (domain "com.netrun", internal: inserted by the CUDA float16 region pass, runtime/optimize.c):
 * a 4-D tensor between float32 NCHW and float16 NHWC (channels last) in one pass; the dims stay the logical
 * NCHW ones. to_nhwc 1: float32 NCHW X -> float16 NHWC Y; 0: float16 NHWC X -> float32 NCHW Y. Also
 * GlobalAveragePoolNHWC (com.netrun, no params): GlobalAveragePool of a float16 NHWC X (float32
 * accumulation), float16 [N,C,1,1] Y (the same bytes in both layouts); MulChannelNHWC(X, S) (com.netrun, no
 * params): float16 NHWC X times float16 S [N or 1, C, 1, 1] (squeeze-excite scaling), float16 NHWC Y;
 * ConcatNHWC(X0, X1, ...) (com.netrun, no params): float16 NHWC inputs with the same N, H, W joined on
 * channels (Concat axis 1 in logical dims), float16 NHWC Y. */
typedef struct netrun_reorder_nhwc_params {
    int to_nhwc;
} netrun_reorder_nhwc_params;

/* ImagePreprocess (domain "com.netrun", ABI 1.11): what a detector or classifier needs from a camera frame, OpenCV
 * blobFromImage's arithmetic. X: uint8 [N, H, W, C] frames (C = 3 or 4; a 4th channel, alpha, is ignored);
 * Y: float32 or float16 [N, 3, out_h, out_w]:
 *   Y[n, c, i, j] = (R(n, i, j, ch(c)) - mean[c]) * k[c],   k[c] = scale / std[c] (float32),
 * ch(c) = 2 - c when swap_rb, else c; R is the frame resized to the output (below), in float32, never rounded to
 * uint8; outside the letterbox's box R = pad_value. Resize (resize): STRETCH to out_h x out_w; LETTERBOX: keep
 * the aspect, f = min(out_h / H, out_w / W), the frame resized to round(H f) x round(W f) (round half to even)
 * centred at ((out_h - rh) / 2, (out_w - rw) / 2) (integer division), pad around it; CROP (blobFromImage
 * crop=true): f = max(out_w / W, out_h / H) in float32, the frame resized by f (source step 1 / f) to
 * round(H f) x round(W f) and the centre out_h x out_w taken, offset ((rh - out_h) / 2, (rw - out_w) / 2);
 * NONE: the frame's own size. Interpolation LINEAR is cv2.resize INTER_LINEAR (half-pixel centres, source
 * coordinate s = (i + off + 0.5) * step - 0.5 in float32, clamped to the edges) = torch interpolate
 * bilinear, align_corners=False, no antialias; NEAREST is cv2 INTER_NEAREST (s = floor((i + off) * step)).
 * Fields from `geometry` on are resolved by infer from the frame's H and W (backends read them as they are). */
enum { NETRUN_PREP_STRETCH = 0, NETRUN_PREP_LETTERBOX = 1, NETRUN_PREP_CROP = 2, NETRUN_PREP_NONE = 3 };
enum { NETRUN_PREP_LINEAR = 0, NETRUN_PREP_NEAREST = 1 };
typedef struct netrun_image_preprocess_params {
    int resize;                            /* NETRUN_PREP_STRETCH ... */
    int interpolation;                     /* NETRUN_PREP_LINEAR or NEAREST */
    int swap_rb;                           /* output channel c reads frame channel 2 - c */
    int64_t size[2];                       /* attribute: output height, width (0: the frame's, resize NONE) */
    float mean[3], std[3], scale, pad_value;
    netrun_dtype to;                       /* FLOAT or FLOAT16 */
    /* resolved by infer */
    int64_t in_h, in_w, channels;          /* the frame's H, W, C */
    int64_t out_h, out_w;
    int64_t box[4];                        /* y0, x0, y1, x1: the output pixels that show the frame */
    double step_y, step_x;                 /* source pixels per output pixel */
    double off_y, off_x;                   /* output index offset: s = (i + off + 0.5) * step - 0.5 */
    float k[3];                            /* scale / std[c] */
} netrun_image_preprocess_params;

#ifdef __cplusplus
}
#endif
#endif /* NETRUN_OPS_H */
