"""Op cases: Attention, RMSNormalization, RotaryEmbedding (opset 23; compared with onnxruntime).
LinearAttention, CausalConvWithState (opset 27) and ai.onnx.preview FlexAttention are not in onnxruntime
1.31: they are covered by the ONNX conformance node tests only."""
import numpy as np

import optest
from optest import rand


def case(name, op, inputs, **kw):
    kw.setdefault("opset", 23)
    c = optest.node_case(name, op, inputs, **kw)
    c.model.ir_version = 10  # opset 23 needs IR 10 in onnxruntime
    return c


CASES = []

# ---- Attention ----
B, Hq, Hk, Lq, Lk, E, Ev, Lp = 2, 4, 2, 5, 7, 8, 6, 3


def q4(h=Hq, l=Lq, e=E, seed=1, dt=np.float32):
    return rand(B, h, l, e, seed=seed, dtype=dt)


A = "Attention"
CASES.append(case("attn_4d", A, [q4(), q4(Hq, Lk, E, 2), q4(Hq, Lk, Ev, 3)]))
CASES.append(case("attn_4d_gqa", A, [q4(), q4(Hk, Lk, E, 2), q4(Hk, Lk, Ev, 3)]))
CASES.append(case("attn_4d_mqa_causal", A, [q4(), q4(1, Lk, E, 2), q4(1, Lk, Ev, 3)], attrs={"is_causal": 1}))
CASES.append(case("attn_4d_scale_softcap", A, [q4(), q4(Hk, Lk, E, 2), q4(Hk, Lk, Ev, 3)],
                  attrs={"scale": 0.3, "softcap": 1.5}))
CASES.append(case("attn_4d_mask2d", A, [q4(), q4(Hk, Lk, E, 2), q4(Hk, Lk, Ev, 3), rand(Lq, Lk, seed=4)]))
CASES.append(case("attn_4d_mask_bool4d", A, [q4(), q4(Hk, Lk, E, 2), q4(Hk, Lk, Ev, 3),
                                             rand(B, 1, Lq, Lk, dtype=np.bool_, seed=5) | np.eye(Lq, Lk, dtype=bool)]))
CASES.append(case("attn_4d_mask3d_causal", A, [q4(), q4(Hk, Lk, E, 2), q4(Hk, Lk, Ev, 3), rand(Hq, Lq, Lk, seed=6)],
                  attrs={"is_causal": 1}))
# KV cache: past + new -> present, causal offset by the past length; every output compared
CASES.append(case("attn_4d_past", A, [q4(), q4(Hk, Lk, E, 2), q4(Hk, Lk, Ev, 3), rand(Lq, Lp + Lk, seed=7),
                                      q4(Hk, Lp, E, 8), q4(Hk, Lp, Ev, 9)], outputs=3))
CASES.append(case("attn_4d_past_causal", A, [q4(), q4(Hk, Lk, E, 2), q4(Hk, Lk, Ev, 3), None,
                                             q4(Hk, Lp, E, 8), q4(Hk, Lp, Ev, 9)], outputs=3, attrs={"is_causal": 1}))
for mode in range(4):
    CASES.append(case(f"attn_4d_qk_mode{mode}", A, [q4(), q4(Hq, Lk, E, 2), q4(Hq, Lk, Ev, 3), rand(Lq, Lk, seed=4)],
                      outputs=4, output_names=["y", "", "", "qk"], attrs={"qk_matmul_output_mode": mode}))
# 3-D inputs need the head counts
CASES.append(case("attn_3d", A, [rand(B, Lq, Hq * E, seed=1), rand(B, Lk, Hq * E, seed=2), rand(B, Lk, Hq * Ev, seed=3)],
                  attrs={"q_num_heads": Hq, "kv_num_heads": Hq}))
CASES.append(case("attn_3d_gqa_causal_mask", A, [rand(B, Lq, Hq * E, seed=1), rand(B, Lk, Hk * E, seed=2),
                                                 rand(B, Lk, Hk * Ev, seed=3), rand(Lq, Lk, seed=4)],
                  attrs={"q_num_heads": Hq, "kv_num_heads": Hk, "is_causal": 1}))
CASES.append(case("attn_3d_past", A, [rand(B, Lq, Hq * E, seed=1), rand(B, Lk, Hk * E, seed=2),
                                      rand(B, Lk, Hk * Ev, seed=3), None, q4(Hk, Lp, E, 8), q4(Hk, Lp, Ev, 9)],
                  outputs=3, attrs={"q_num_heads": Hq, "kv_num_heads": Hk}))
# a longer sequence: larger GEMMs, several tasks per thread
CASES.append(case("attn_4d_long", A, [rand(1, 2, 64, 32, seed=11), rand(1, 2, 96, 32, seed=12),
                                      rand(1, 2, 96, 16, seed=13)], attrs={"is_causal": 1}))
CASES.append(case("attn_4d_f16", A, [q4(dt=np.float16), q4(Hk, Lk, E, 2, dt=np.float16), q4(Hk, Lk, Ev, 3, dt=np.float16)],
                  rtol=1e-2, atol=2e-3))

# The CUDA backend runs these through cuBLAS batched GEMMs around a softmax kernel (backends/cuda/attention.cu):
# BERT-sized heads, 3-D and 4-D layouts, GQA 8/2, masks broadcast over batch, heads or rows, causal with
# Lq != Lk, past/present, float16 (P in float16), and chunks of heads when the score buffer is capped.
def qkv3(b, lq, lk, hq, hk, e, ev, seed, dt=np.float32):
    return [rand(b, lq, hq * e, seed=seed, dtype=dt), rand(b, lk, hk * e, seed=seed + 1, dtype=dt),
            rand(b, lk, hk * ev, seed=seed + 2, dtype=dt)]


def qkv4(b, lq, lk, hq, hk, e, ev, seed, dt=np.float32):
    return [rand(b, hq, lq, e, seed=seed, dtype=dt), rand(b, hk, lk, e, seed=seed + 1, dtype=dt),
            rand(b, hk, lk, ev, seed=seed + 2, dtype=dt)]


def pad_mask(b, lq, lk):
    """BERT's additive padding mask, repeated over the query rows (onnxruntime wants them): [B, 1, Lq, Lk], 0 for
    kept keys, -10000 for the last keys of each sequence."""
    m = np.zeros((b, 1, lq, lk), np.float32)
    for i in range(b):
        m[i, ..., lk - 3 * (i + 1):] = -10000.0
    return m


H3 = {"q_num_heads": 12, "kv_num_heads": 12}
CASES.append(case("attn_bert_3d", A, qkv3(2, 128, 128, 12, 12, 64, 64, 41) + [pad_mask(2, 128, 128)], attrs=H3))
CASES.append(case("attn_bert_4d", A, qkv4(2, 128, 128, 12, 12, 64, 64, 44) + [pad_mask(2, 128, 128)]))
CASES.append(case("attn_bert_3d_f16", A, qkv3(2, 128, 128, 12, 12, 64, 64, 41, np.float16) +
                  [pad_mask(2, 128, 128).astype(np.float16)], attrs=H3, rtol=1e-2, atol=2e-3))
c = case("attn_bert_3d_simple", A, qkv3(2, 128, 128, 12, 12, 64, 64, 41) + [pad_mask(2, 128, 128)], attrs=H3)
c.settings = {"cuda.attention_workspace_mb": "0"}  # the simple kernel (no cuBLAS path) on the same case
CASES.append(c)
G = {"q_num_heads": 8, "kv_num_heads": 2}
CASES.append(case("attn_3d_gqa8_2_bool_rows", A, qkv3(2, 24, 40, 8, 2, 32, 16, 47) +
                  [rand(24, 40, dtype=np.bool_, seed=50) | np.eye(24, 40, dtype=bool)], attrs=G))
CASES.append(case("attn_4d_gqa8_2_mask_heads", A, qkv4(2, 24, 40, 8, 2, 32, 32, 51) + [rand(1, 8, 24, 40, seed=54)]))
CASES.append(case("attn_3d_gqa8_2_causal_lq_lt_lk", A, qkv3(2, 16, 48, 8, 2, 16, 16, 55), attrs=dict(G, is_causal=1)))
CASES.append(case("attn_4d_causal_lq_gt_lk", A, qkv4(2, 40, 24, 4, 4, 16, 16, 58), attrs={"is_causal": 1}))
CASES.append(case("attn_4d_gqa8_2_past_causal", A, qkv4(2, 6, 6, 8, 2, 32, 32, 61) +
                  [None, rand(2, 2, 50, 32, seed=64), rand(2, 2, 50, 32, seed=65)], outputs=3, attrs={"is_causal": 1}))
CASES.append(case("attn_3d_past_mask_f16", A, qkv3(2, 4, 4, 8, 2, 32, 32, 66, np.float16) +
                  [rand(2, 1, 4, 36, seed=69, dtype=np.float16), rand(2, 2, 32, 32, seed=70, dtype=np.float16),
                   rand(2, 2, 32, 32, seed=71, dtype=np.float16)], outputs=3, attrs=G, rtol=1e-2, atol=2e-3))
CASES.append(case("attn_4d_softcap_qk3_big", A, qkv4(2, 64, 96, 8, 2, 32, 32, 72) + [rand(64, 96, seed=75)],
                  outputs=4, output_names=["y", "", "", "qk"], attrs={"softcap": 2.0, "qk_matmul_output_mode": 3}))
# rows of more than 1024 keys: the softmax works the row in place instead of in registers
CASES.append(case("attn_4d_long_rows_bool", A, qkv4(1, 3, 1100, 2, 2, 8, 8, 85) +
                  [rand(1, 1, 3, 1100, dtype=np.bool_, seed=88) | np.eye(3, 1100, dtype=bool)]))
# a 1 MiB cap on the score buffer: 16 heads of 256 x 256 scores (256 KiB each) run 3 (2 in float16) at a time
for nm, dt, tol in [("", np.float32, {}), ("_f16", np.float16, {"rtol": 1e-2, "atol": 2e-3})]:
    c = case("attn_4d_chunked" + nm, A, qkv4(2, 256, 256, 8, 8, 32, 32, 76, dt), attrs={"is_causal": 1}, **tol)
    c.settings = {"cuda.attention_workspace_mb": "1"}
    CASES.append(c)
    c = case("attn_3d_gqa_chunked" + nm, A, qkv3(2, 256, 256, 8, 2, 32, 32, 79, dt) +
             [rand(2, 1, 256, 256, seed=82, dtype=dt)], attrs=G, **tol)
    c.settings = {"cuda.attention_workspace_mb": "1"}
    CASES.append(c)

# ---- RMSNormalization ----
R = "RMSNormalization"
x4 = rand(2, 3, 4, 5, low=-3, high=3, seed=21)
for axis in [-1, -2, 0, 1, 3]:
    ax = axis % 4
    CASES.append(case(f"rms_ax{axis}".replace("-", "m"), R, [x4, rand(*x4.shape[ax:], seed=22)], attrs={"axis": axis}))
CASES.append(case("rms_eps", R, [x4, rand(5, seed=22)], attrs={"epsilon": 0.5}))
CASES.append(case("rms_scale_bcast", R, [x4, rand(1, 5, seed=23)], attrs={"axis": 2}))
CASES.append(case("rms_f16", R, [x4.astype(np.float16), rand(5, seed=22, dtype=np.float16)], rtol=1e-2, atol=2e-3))
CASES.append(case("rms_f64", R, [x4.astype(np.float64), rand(5, seed=22, dtype=np.float64)], rtol=1e-9, atol=1e-12))
CASES.append(case("rms_wide", R, [rand(3, 1000, seed=24), rand(1000, seed=25)]))
# the graph pass's fused node (axis -1, scale of the row's length, one dtype): rows of T5 / LLaMA sizes and odd
# lengths, through CUDA's warp-per-row (up to 1024 values) and block-per-row kernels, float32 and float16
for nm, shape in [("d1", (5, 1)), ("d32", (7, 32)), ("d100", (37, 100)), ("t5", (2, 64, 512)), ("d1024", (3, 1024)),
                  ("d1500", (2, 3, 1500)), ("d4096", (1, 9, 4096))]:
    for dt, tol in [(np.float32, {}), (np.float16, {"rtol": 1e-2, "atol": 2e-3})]:
        sfx = "" if dt == np.float32 else "_f16"
        CASES.append(case(f"rms_rows_{nm}{sfx}", R, [rand(*shape, low=-3, high=3, seed=26, dtype=dt),
                                                     rand(shape[-1], low=0.5, high=1.5, seed=27, dtype=dt)],
                          attrs={"epsilon": 1e-6}, **tol))

# ---- RotaryEmbedding ----
RO = "RotaryEmbedding"
S, H, D = 5, 3, 8
pos = np.array([[0, 1, 2, 3, 4], [7, 3, 9, 0, 1]], dtype=np.int64)
for inter in [0, 1]:
    for rd in [0, 4]:
        half = (rd or D) // 2
        cos, sin = rand(12, half, seed=31), rand(12, half, seed=32)
        attrs = {"interleaved": inter, "rotary_embedding_dim": rd}
        CASES.append(case(f"rope_4d_i{inter}_rd{rd}", RO, [rand(2, H, S, D, seed=33), cos, sin, pos], attrs=attrs))
        CASES.append(case(f"rope_3d_i{inter}_rd{rd}", RO, [rand(2, S, H * D, seed=34), cos, sin, pos],
                          attrs=dict(attrs, num_heads=H)))
        CASES.append(case(f"rope_nopos_i{inter}_rd{rd}", RO, [rand(2, H, S, D, seed=35), rand(2, S, half, seed=36),
                                                              rand(2, S, half, seed=37)], attrs=attrs))
CASES.append(case("rope_f16", RO, [rand(2, H, S, D, seed=33, dtype=np.float16), rand(12, 4, seed=31, dtype=np.float16),
                                   rand(12, 4, seed=32, dtype=np.float16), pos], rtol=1e-2, atol=2e-3))
