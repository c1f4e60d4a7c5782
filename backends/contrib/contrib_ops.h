/*
 * contrib_ops.h — the params blobs of the ops the contrib plugin defines (onnxruntime's com.microsoft contrib ops
 * and the ai.onnx ops onnxruntime adds). A definer's params layout is its contract with every backend that runs its
 * ops: a GPU plugin that adds kernels for com.microsoft.SkipLayerNormalization answers supports() for it and reads
 * node->params as nrc_norm_params. Fields are only appended.
 */
#ifndef NETRUN_CONTRIB_OPS_H
#define NETRUN_CONTRIB_OPS_H

#include <stdint.h>

/* LayerNormalization, SimplifiedLayerNormalization, SkipLayerNormalization, SkipSimplifiedLayerNormalization. */
typedef struct nrc_norm_params {
    int32_t axis;        /* resolved by infer to [0, rank): the first normalized dim (the last one for Skip*) */
    float epsilon;
    int32_t stash_type;  /* 1 = float (the only one there is) */
} nrc_norm_params;

/* QuickGelu: y = x * sigmoid(alpha * x). */
typedef struct nrc_quick_gelu_params {
    float alpha;
} nrc_quick_gelu_params;

/* FusedMatMul: y = alpha * op(A) x op(B), numpy batch broadcasting. trans_batch moves the first dim behind the
 * other batch dims ([d0, d1 .. dn-2, dn-1] is read as [d1 .. dn-2, d0, dn-1]) before trans swaps the last two. */
typedef struct nrc_fused_matmul_params {
    float alpha;
    int32_t trans_a, trans_b;
    int32_t trans_batch_a, trans_batch_b;
} nrc_fused_matmul_params;

/* Attention (BERT/GPT-2 self-attention with merged Q/K/V weights): the hidden sizes of Q, K and V (from
 * qkv_hidden_sizes, else a third each of the weights' columns), resolved by infer. */
typedef struct nrc_attention_params {
    int32_t num_heads;
    int32_t unidirectional;
    float mask_filter_value;
    float scale;             /* 0: 1/sqrt(head_size) */
    int32_t do_rotary;
    int32_t q_hidden, k_hidden, v_hidden;
} nrc_attention_params;

#endif
