/* Params of the transformer family (Attention, FlexAttention, RMSNormalization, RotaryEmbedding,
 * LinearAttention, CausalConvWithState), shared by layers/transformer.c and backends/cpu/transformer.c.
 * To be moved into netrun_ops.h by the lead. RMSNormalization uses netrun_norm_params. */
#ifndef NETRUN_TRANSFORMER_PARAMS_H
#define NETRUN_TRANSFORMER_PARAMS_H

#include <stdint.h>

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

#endif
