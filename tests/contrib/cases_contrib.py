"""Op cases of the contrib plugin: onnxruntime's contrib ops, one node each, compared with onnxruntime itself.
Run by test_contrib_ops.py (which also checks that the nodes ran on the contrib plugin)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
import optest  # noqa: E402
from optest import rand  # noqa: E402

MS = "com.microsoft"
CASES = []


def type_outputs(model):
    """onnx's shape inference does not know com.microsoft, nor onnxruntime's ai.onnx extras: outputs 0 and 3 (Skip*'s
    sum) have the first input's type, the statistics (mean, inv_std_var) are float."""
    g = model.graph
    node = g.node[0]
    types = {v.name: v.type.tensor_type.elem_type for v in g.input}
    types.update({t.name: t.data_type for t in g.initializer})
    for out in g.output:
        k = list(node.output).index(out.name)
        out.type.tensor_type.elem_type = types[node.input[0]] if k in (0, 3) else TensorProto.FLOAT


def case(name, op, inputs, domain=MS, opset=17, ref=None, **kw):
    """A one-node model importing com.microsoft opset 1 next to the default domain. ref: where onnxruntime has no
    CPU kernel for the op, a (domain, opset) at which it runs the same computation under the same name, or a
    function building an equivalent model from the case's model; onnxruntime runs that instead."""
    c = optest.node_case(name, op, inputs, domain=domain, opset=opset, **kw)
    if isinstance(ref, tuple):
        r = optest.node_case(name, op, inputs, domain=ref[0], opset=ref[1], **kw)
        c.ref_model = r.model
    c.model.opset_import.append(helper.make_opsetid(MS, 1))
    type_outputs(c.model)
    if hasattr(c, "ref_model"):
        type_outputs(c.ref_model)
    if callable(ref):
        c.ref_model = ref(c.model)
    return c


def bias_add_ref(model):
    """BiasAdd (onnxruntime has a CUDA kernel only) as Add(Add(X, bias), skip)."""
    m = type(model)()
    m.CopyFrom(model)
    n = m.graph.node[0]
    x, bias, skip = n.input
    del m.graph.node[:]
    m.graph.node.extend([helper.make_node("Add", [x, bias], ["xb"]), helper.make_node("Add", ["xb", skip], [n.output[0]])])
    del m.opset_import[1:]
    return m


B, S, Hd = 2, 5, 16
F16 = dict(rtol=1e-2, atol=2e-3)


def x3(seed=1, dt=np.float32, scale=3.0):
    return rand(B, S, Hd, seed=seed, dtype=dt, low=-scale, high=scale)


def vec(seed, dt=np.float32, low=-1.0, high=1.0):
    return rand(Hd, seed=seed, dtype=dt, low=low, high=high)


# ---- activations ----
for dt, tol, sfx in [(np.float32, {}, ""), (np.float16, F16, "_f16")]:
    CASES.append(case(f"gelu{sfx}", "Gelu", [x3(1, dt)], **tol))
    CASES.append(case(f"fast_gelu{sfx}", "FastGelu", [x3(2, dt)], **tol))
    CASES.append(case(f"fast_gelu_bias{sfx}", "FastGelu", [x3(3, dt), ("const", vec(4, dt))], **tol))
    CASES.append(case(f"bias_gelu{sfx}", "BiasGelu", [x3(5, dt), ("const", vec(6, dt))], **tol))
    CASES.append(case(f"quick_gelu{sfx}", "QuickGelu", [x3(7, dt)], **tol))
    CASES.append(case(f"bias_add{sfx}", "BiasAdd", [x3(9, dt), ("const", vec(10, dt)), x3(11, dt)], ref=bias_add_ref,
                      **tol))
CASES.append(case("gelu_2d", "Gelu", [rand(7, 3, seed=12, low=-6, high=6)]))
CASES.append(case("quick_gelu_alpha", "QuickGelu", [x3(8)], attrs={"alpha": 1.1}))

# ---- layer norms ----
gamma, beta, bias = ("const", vec(20, low=0.5, high=1.5)), ("const", vec(21)), ("const", vec(22))
for dt, tol, sfx in [(np.float32, dict(rtol=1e-4, atol=1e-4), ""), (np.float16, F16, "_f16")]:
    g16, b16, bi16 = [("const", t[1].astype(dt)) for t in (gamma, beta, bias)]
    CASES.append(case(f"skip_ln{sfx}", "SkipLayerNormalization", [x3(23, dt), x3(24, dt), g16, b16, bi16],
                      attrs={"epsilon": 1e-5}, **tol))
    CASES.append(case(f"skip_ln_all_outputs{sfx}", "SkipLayerNormalization", [x3(25, dt), x3(26, dt), g16, b16, bi16],
                      outputs=4, **tol))
    CASES.append(case(f"skip_simplified_ln{sfx}", "SkipSimplifiedLayerNormalization", [x3(27, dt), x3(28, dt), g16, bi16],
                      attrs={"epsilon": 1e-6}, **tol))
CASES.append(case("skip_ln_gamma_only", "SkipLayerNormalization", [x3(29), x3(30), gamma]))
CASES.append(case("skip_ln_skip_2d", "SkipLayerNormalization", [x3(31), rand(S, Hd, seed=32), gamma, beta]))
CASES.append(case("skip_ln_skip_1sh", "SkipLayerNormalization", [x3(33), rand(1, S, Hd, seed=34), gamma, beta],
                  outputs=4, output_names=["y", "", "", "sum"]))
CASES.append(case("skip_ln_input_2d", "SkipLayerNormalization", [rand(6, Hd, seed=35), rand(6, Hd, seed=36), gamma, beta, bias]))
CASES.append(case("skip_simplified_ln_all_outputs", "SkipSimplifiedLayerNormalization",
                  [x3(37), x3(38), gamma, bias], outputs=4, output_names=["y", "", "inv_std", "sum"]))
# LayerNormalization and SimplifiedLayerNormalization: onnxruntime runs them as ai.onnx ops (its LayerNormalization
# of opsets before 17, its SimplifiedLayerNormalization of any): com.microsoft's are compared with those
for dt, tol, sfx in [(np.float32, dict(rtol=1e-4, atol=1e-4), ""), (np.float16, F16, "_f16")]:
    g16, b16 = [("const", t[1].astype(dt)) for t in (gamma, beta)]
    CASES.append(case(f"ms_layer_norm{sfx}", "LayerNormalization", [x3(40, dt), g16, b16], outputs=3, ref=("", 13), **tol))
    CASES.append(case(f"ms_simplified_ln{sfx}", "SimplifiedLayerNormalization", [x3(41, dt), g16], outputs=2,
                      ref=("", 17), **tol))
    CASES.append(case(f"simplified_ln{sfx}", "SimplifiedLayerNormalization", [x3(41, dt), g16], domain="", outputs=2,
                      **tol))
CASES.append(case("ms_layer_norm_axis1", "LayerNormalization",
                  [x3(42), ("const", rand(S, Hd, seed=43)), ("const", rand(S, Hd, seed=44))], outputs=3,
                  attrs={"axis": 1, "epsilon": 1e-3}, ref=("", 13)))
CASES.append(case("ms_layer_norm_no_bias", "LayerNormalization", [x3(45), gamma], ref=("", 13)))

# ---- FusedMatMul ----
FM = "FusedMatMul"
CASES.append(case("fmm_plain", FM, [rand(2, 3, 4, 5, seed=50), rand(2, 3, 5, 6, seed=51)]))
CASES.append(case("fmm_alpha_transb", FM, [rand(2, 3, 4, 5, seed=52), rand(2, 3, 6, 5, seed=53)],
                  attrs={"alpha": 0.125, "transB": 1}))
CASES.append(case("fmm_transa", FM, [rand(3, 5, 4, seed=54), rand(3, 5, 6, seed=55)], attrs={"transA": 1}))
CASES.append(case("fmm_broadcast", FM, [rand(2, 1, 4, 5, seed=56), ("const", rand(3, 5, 6, seed=57))],
                  attrs={"alpha": 2.0}))
CASES.append(case("fmm_2d_const", FM, [rand(7, 5, seed=58), ("const", rand(6, 5, seed=59))], attrs={"transB": 1}))
CASES.append(case("fmm_1d", FM, [rand(5, seed=60), rand(2, 5, 3, seed=61)]))
CASES.append(case("fmm_trans_batch_a", FM, [rand(4, 2, 3, 5, seed=62), rand(2, 3, 5, 6, seed=63)],
                  attrs={"transBatchA": 1}))
CASES.append(case("fmm_trans_batch_b_trans_b", FM, [rand(2, 3, 4, 5, seed=64), rand(6, 2, 3, 5, seed=65)],
                  attrs={"transBatchB": 1, "transB": 1}))
CASES.append(case("fmm_f16", FM, [rand(2, 4, 8, seed=66, dtype=np.float16), rand(2, 8, 3, seed=67, dtype=np.float16)],
                  attrs={"alpha": 0.5}, **F16))

# ---- Attention (float32: onnxruntime's CPU kernel takes no float16) ----
AB, AS, AH, AN = 2, 6, 16, 4


def attn(name, extra=None, attrs=None, wcols=3 * AH, **kw):
    ins = [rand(AB, AS, AH, seed=70), ("const", rand(AH, wcols, seed=71, low=-0.5, high=0.5)),
           ("const", rand(wcols, seed=72))] + (extra or [])
    CASES.append(case(name, "Attention", ins, attrs=dict({"num_heads": AN}, **(attrs or {})), rtol=1e-4, atol=1e-5, **kw))


attn("attention")
attn("attention_mask_lengths", [np.array([AS, 3], np.int32)])
attn("attention_mask_raw_2d", [np.array([[1] * AS, [1, 1, 0, 1, 0, 0]], np.int32)])
attn("attention_mask_raw_3d", [rand(AB, AS, AS, dtype=np.int32, low=0, high=1, seed=73) | np.eye(AS, dtype=np.int32)])
attn("attention_mask_start_end", [np.array([AS, 5, 0, 2], np.int32)])
attn("attention_unidirectional_mask", [np.array([AS, 4], np.int32)], attrs={"unidirectional": 1})
attn("attention_scale_filter", [np.array([[1] * AS, [1, 0, 1, 1, 0, 1]], np.int32)],
     attrs={"scale": 0.2, "mask_filter_value": -3.4028234663852886e38})
attn("attention_qkv_sizes", attrs={"qkv_hidden_sizes": [AH, AH, 8]}, wcols=2 * AH + 8)
