#!/usr/bin/env python3
"""Transformer fusions (runtime/opt_transformer.c): attention, decomposed LayerNormalization and Gelu subgraphs,
written as exporters write them, run as one Attention / LayerNormalization / Gelu node on the CPU, give
onnxruntime's outputs with graph.fuse_transformer on and off; variants that do not compute exactly what the op
computes (a scale from an input, softmax over another axis, a mask that is not causal, eps from an input, a
Gelu constant off) are left alone. Linear layers (MatMul + bias Add [+ Relu], or a Gemm with a bias vector) run as
one MatMulBias node (ranks
2-4, the bias on either side or from an input, odd N/K), the same bits as unfused and onnxruntime's outputs with
graph.fuse_matmul_bias on and off; a tanh Gelu after them joins them (the decomposed form once made one Gelu: the
Gelu count drops), an erf Gelu stays a node; an addend of the output's shape, a batched B or a product that is also
a graph output are left alone. RMSNorm as torch exports T5 / LLaMA (Div(1, Sqrt), Reciprocal(Sqrt), Pow(-0.5);
Mul(x, x) for the square; a weight that is an Identity of another norm's) runs as one RMSNormalization node with
onnxruntime's outputs; eps from an input, another exponent or numerator, the mean over another axis, no weight Mul
or the reciprocal also a graph output are left alone.

    python3 tests/passes/test_transformer.py --lib build/lib/libnetrun.so
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import build_models  # noqa: E402
import transformer_bench  # noqa: E402
from netrun_ctypes import Netrun  # noqa: E402

RNG = np.random.default_rng(11)


def attention_4d(scale_from_input=False, softmax_axis=-1, mask="add", prescaled=False, causal=None, casts=None,
                 unscaled=False):
    """Q, K, V [1, 2, 8, 4] inputs; K^T = Transpose(K, 0 1 3 2). causal: a bool [8, 8] constant for Where.
    casts: the element type of the Casts around Softmax (transformers' `softmax(x, dtype=torch.float32)`).
    mask "add": + mask [1, 1, 1, 8]; "bias+add": + bias [1, 2, 8, 8] (a per-head position bias, T5's) then + mask;
    "bias+add+add": one more Add of the mask (three: not fused). unscaled: no Div (T5 scales nothing)."""
    nodes, inits = [], []
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 8, 4]) for n in ("q", "k", "v")]

    def c(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def n(op, i, o, **kw):
        nodes.append(helper.make_node(op, i, [o], name=o, **kw))
        return o

    kt = n("Transpose", ["k"], "kt", perm=[0, 1, 3, 2])
    if prescaled:  # torch's scaled_dot_product_attention export: sqrt(scale) on both sides
        q = n("Mul", ["q", c("sq", np.float32(0.5 ** 0.5))], "qs")
        kt = n("Mul", [kt, c("sk", np.float32(0.5 ** 0.5))], "ks")
        s = n("MatMul", [q, kt], "qk")
    else:
        s = n("MatMul", ["q", kt], "qk")
        if scale_from_input:
            ins.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1]))
            s = n("Div", [s, "scale"], "scaled")
        elif not unscaled:
            s = n("Div", [s, c("two", np.float32(2.0))], "scaled")
    if causal is not None:
        s = n("Where", [c("causal", causal), s, c("neg", np.float32(np.finfo(np.float32).min))], "causal_w")
    if mask and mask.startswith("bias+"):
        ins.append(helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1, 2, 8, 8]))
        s = n("Add", [s, "bias"], "biased")
    if mask and mask.endswith("add"):
        ins.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, 8]))
        s = n("Add", [s, "mask"], "masked")
    if mask and mask.endswith("add+add"):
        s = n("Add", ["mask", s], "masked_again")
    if casts is not None:
        s = n("Cast", [s], "to_sm", to=casts)
    p = n("Softmax", [s], "sm", axis=softmax_axis)
    if casts is not None:
        p = n("Cast", [p], "from_sm", to=TensorProto.FLOAT)
    n("MatMul", [p, "v"], "y")
    g = helper.make_graph(nodes, "attn", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


def norm_gelu(eps_from_input=False, gelu_half=0.5):
    """A decomposed LayerNormalization then an erf Gelu (x * 0.5 after the product, as torch writes it)."""
    b = transformer_bench.Builder(5)
    x = "x"
    ins = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 5, 16])]
    if eps_from_input:
        ins.append(helper.make_tensor_value_info("eps", TensorProto.FLOAT, [1]))
        gamma = b.init("g", b.rng.uniform(0.8, 1.2, 16).astype(np.float32))
        beta = b.init("b", b.w(16))
        d = b.op("Sub", [x, b.op("ReduceMean", [x], axes=[-1], keepdims=1)])
        var = b.op("ReduceMean", [b.op("Pow", [d, b.const(np.float32(2.0))])], axes=[-1], keepdims=1)
        y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [var, "eps"])])])
        h = b.op("Add", [b.op("Mul", [y, gamma]), beta])
    else:
        h = b.layernorm(x, "/ln", 16, 1e-5)
    e = b.op("Erf", [b.op("Div", [h, b.const(np.float32(1.4142135623730951))])])
    e = b.op("Add", [e, b.const(np.float32(1.0))])
    b.op("Mul", [b.op("Mul", [h, e]), b.const(np.float32(gelu_half))])
    out = b.nodes[-1].output[0]
    return b.model("ng", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def convnext_block(c=16, hw=7):
    """ConvNeXt's block as torchvision exports it: depthwise Conv 7x7 -> Transpose(0 2 3 1) -> LayerNormalization
    (decomposed here) -> Linear -> erf Gelu -> Linear -> Transpose(0 3 1 2) -> Mul(layer scale [C, 1, 1]) ->
    Add(x). Under fp16 on a GPU its Conv stays out of the NHWC region (channels-last neighbours) and the whole
    block is one plain float16 region."""
    b = transformer_bench.Builder(9)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])]
    w = b.init("dw_w", (b.rng.standard_normal((c, 1, 7, 7)) * 0.2).astype(np.float32))
    h = b.op("Conv", ["x", w, b.init("dw_b", b.w(c))], group=c, kernel_shape=[7, 7], pads=[3, 3, 3, 3])
    h = b.op("Transpose", [h], perm=[0, 2, 3, 1])
    h = b.layernorm(h, "/ln", c, 1e-6)
    h = b.linear(h, "/fc1", c, 4 * c)
    h = b.gelu_erf(h, "/act")
    h = b.linear(h, "/fc2", 4 * c, c)
    h = b.op("Transpose", [h], perm=[0, 3, 1, 2])
    h = b.op("Mul", [b.init("gamma", b.rng.uniform(0.5, 1.5, (c, 1, 1)).astype(np.float32)), h])
    h = b.op("Add", [h, "x"])
    return b.model("convnext_block", ins, [helper.make_tensor_value_info(h, TensorProto.FLOAT, None)])


def feeds_for(model):
    f = {}
    for i in model.graph.input:
        shape = [d.dim_value or 2 for d in i.type.tensor_type.shape.dim]
        if i.name == "mask":
            m = np.zeros(shape, np.float32)
            m[..., -2:] = np.finfo(np.float32).min
            f[i.name] = m
        elif i.name in ("scale", "eps"):
            f[i.name] = np.array([2.0 if i.name == "scale" else 1e-5], np.float32)
        else:
            f[i.name] = RNG.standard_normal(shape).astype(np.float32)
    return f


def cases():
    """(name, model, list of feeds, expected (attention, layernorm, gelu) fused, op types the fused graph has)"""
    out = []
    m, cs = build_models.bert_class()
    out.append(("bert_class", m, list(cs.values()), (2, 2, 2), {"Attention", "LayerNormalization", "Gelu"}))
    m, cs = build_models.gpt_causal()
    # GPT-2's tanh Gelu: found (the subgraph becomes one Gelu), then taken into its MatMulBias (the count drops)
    out.append(("gpt_causal", m, list(cs.values()), (2, 5, 0), {"Attention", "LayerNormalization", "MatMulBias"}))
    sz = transformer_bench.TINY["vit-b16"]
    m, mk = transformer_bench.build_vit(sz)
    out.append(("vit_like", m, [mk(1, 0, RNG), mk(2, 0, RNG)], (2, 5, 2), {"Attention", "Gelu"}))
    m, mk = transformer_bench.build_bert(transformer_bench.TINY["bert-base"])
    out.append(("bert_bench_shape", m, [mk(2, 12, RNG), mk(1, 5, RNG)], (2, 5, 2), {"Attention"}))
    m, mk = transformer_bench.build_gpt2(transformer_bench.TINY["gpt2-small"])
    out.append(("gpt2_bench_shape", m, [mk(1, 9, RNG), mk(2, 4, RNG)], (2, 5, 0), {"Attention", "MatMulBias"}))
    tril = np.tril(np.ones((8, 8), bool))
    for name, m, want in [
        ("attn_4d_mask", attention_4d(), (1, 0, 0)),
        ("attn_4d_prescaled", attention_4d(prescaled=True), (1, 0, 0)),
        ("attn_4d_causal", attention_4d(mask=None, causal=tril), (1, 0, 0)),
        ("attn_4d_softmax_casts", attention_4d(casts=TensorProto.FLOAT), (1, 0, 0)),
        ("attn_4d_bias_and_mask", attention_4d(mask="bias+add"), (1, 0, 0)),
        ("attn_4d_unscaled_bias_and_mask", attention_4d(mask="bias+add", unscaled=True), (1, 0, 0)),
        ("no_attn_three_masks", attention_4d(mask="bias+add+add"), (0, 0, 0)),
        ("no_attn_softmax_in_double", attention_4d(casts=TensorProto.DOUBLE), (0, 0, 0)),
        ("no_attn_scale_input", attention_4d(scale_from_input=True), (0, 0, 0)),
        ("no_attn_softmax_axis2", attention_4d(softmax_axis=2), (0, 0, 0)),
        ("no_attn_not_causal", attention_4d(mask=None, causal=np.triu(np.ones((8, 8), bool))), (0, 0, 0)),
        ("norm_gelu", norm_gelu(), (0, 1, 1)),
        ("convnext_block", convnext_block(), (0, 1, 1)),
        ("no_norm_eps_input", norm_gelu(eps_from_input=True), (0, 0, 1)),
        ("no_gelu_constant_off", norm_gelu(gelu_half=0.49), (0, 1, 0)),
    ]:
        out.append((name, m, [feeds_for(m)], want, set()))
    return out


def report(name, errors, note):
    """Prints the case's line; (passed, failed) counts."""
    if errors:
        print(f"FAIL {name}: " + "; ".join(errors))
        return 0, 1
    print(f"ok   {name} {note}")
    return 1, 0


def ort_outputs(path, feed_list):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref_s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return [ref_s.run(None, feeds) for feeds in feed_list]


def linear(a_shape, n, bias="vec", act=None, bias_first=False, b_rank=2, mm_output=False):
    """MatMul(x, W[K, N]) + bias [-> act], as exporters write torch's Linear. bias "vec": [N] constant, "input": [N]
    graph input, "full": [.., N] of the output's shape (a residual, not a bias). act: None, "relu", "gelu_erf",
    "gelu_tanh" (decomposed as exporters write them) or "gelu20_tanh" (the opset-20 op). mm_output: the product is
    also a graph output."""
    b = transformer_bench.Builder(7)
    k = a_shape[-1]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(a_shape))]
    w = b.init("W", b.w(k, n) if b_rank == 2 else b.rng.standard_normal((2, k, n)).astype(np.float32) * 0.2)
    mm = b.op("MatMul", ["x", w])
    if bias == "vec":
        bv = b.init("bias", b.rng.standard_normal(n).astype(np.float32))
    elif bias == "input":
        bv = "bias"
        ins.append(helper.make_tensor_value_info("bias", TensorProto.FLOAT, [n]))
    elif bias == "residual":  # no bias: the block's input added back (T5, LLaMA), K == N
        bv = "x"
    else:
        bv = b.init("bias", b.rng.standard_normal(tuple(a_shape[:-1]) + (n,)).astype(np.float32))
    h = b.op("Add", [bv, mm] if bias_first else [mm, bv])
    if act == "relu":
        h = b.op("Relu", [h])
    elif act == "gelu_erf":
        h = b.gelu_erf(h, "")
    elif act == "gelu_tanh":
        h = b.gelu_tanh(h, "")
    elif act == "gelu20_tanh":
        h = b.op("Gelu", [h], approximate="tanh")
    outs = [helper.make_tensor_value_info(h, TensorProto.FLOAT, None)]
    if mm_output:
        outs.append(helper.make_tensor_value_info(mm, TensorProto.FLOAT, None))
    m = b.model("linear", ins, outs)
    if act == "gelu20_tanh":
        m.opset_import[0].version = 20
    return m


def gemm_linear(a_shape, n, act=None, trans_b=0, alpha=1.0, c="vec"):
    """Gemm(x[M, K], W, c) [-> act], as torch exports GPT-2's Conv1D (addmm). c "vec": [N], "matrix": [M, N].
    act: None, "relu", "gelu20_tanh" or "neg" (a node after it that no MatMulBias takes)."""
    b = transformer_bench.Builder(7)
    k = a_shape[-1]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(a_shape))]
    w = b.init("W", b.w(n, k).T.copy() if not trans_b else b.w(n, k))
    cv = b.init("c", b.rng.standard_normal(n if c == "vec" else (a_shape[0], n)).astype(np.float32))
    h = b.op("Gemm", ["x", w, cv], transB=trans_b, alpha=alpha)
    if act == "relu":
        h = b.op("Relu", [h])
    elif act == "gelu20_tanh":
        h = b.op("Gelu", [h], approximate="tanh")
    elif act == "neg":  # a node no MatMulBias takes (a graph of one node skips the passes)
        h = b.op("Neg", [h])
    m = b.model("gemm_linear", ins, [helper.make_tensor_value_info(h, TensorProto.FLOAT, None)])
    if act == "gelu20_tanh":
        m.opset_import[0].version = 20
    return m


def conv1d_linear(lead, k, n, residual=False, back=None):
    """GPT-2's Conv1D as torch exports it: Reshape(x[*lead, K], [-1, K]) -> Gemm(W, c) -> Reshape(*lead, N)
    [-> Add(x) when residual, K == N]. back: the second Reshape's target instead (other leading dims)."""
    b = transformer_bench.Builder(7)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(lead) + [k])]
    flat = b.op("Reshape", ["x", b.init("flat_shape", np.array([-1, k], np.int64))])
    w, cv = b.init("W", b.w(k, n)), b.init("c", b.rng.standard_normal(n).astype(np.float32))
    h = b.op("Gemm", [flat, w, cv])
    h = b.op("Reshape", [h, b.init("back_shape", np.array(back or list(lead) + [n], np.int64))])
    if residual:
        h = b.op("Add", [h, "x"])
    else:  # a node after it, so that the Reshape is not the graph's output
        h = b.op("Neg", [h])
    return b.model("conv1d_linear", ins, [helper.make_tensor_value_info(h, TensorProto.FLOAT, None)])


def matmul_bias_cases():
    """(name, model, MatMulBias nodes expected, op types that must remain beside them) on the CPU, which fuses the
    bias and a Relu or tanh Gelu (an erf Gelu stays a node of its own)."""
    return [
        ("mmb_rank2", linear((6, 16), 24), 1, set()),
        ("mmb_rank3", linear((2, 5, 16), 24), 1, set()),
        ("mmb_many_rows", linear((4, 20, 16), 24, act="relu"), 1, set()),  # past the packed-B row limit: sgemm
        ("mmb_rank4", linear((2, 3, 5, 16), 8), 1, set()),
        ("mmb_bias_first", linear((2, 5, 16), 24, bias_first=True), 1, set()),
        ("mmb_bias_input", linear((2, 5, 16), 24, bias="input"), 1, set()),
        ("mmb_relu", linear((2, 5, 16), 24, act="relu"), 1, set()),
        ("mmb_odd_nk", linear((3, 7, 13), 11, act="relu"), 1, set()),
        ("mmb_gelu_erf", linear((2, 5, 16), 24, act="gelu_erf"), 1, {"Gelu"}),
        ("mmb_gelu_tanh", linear((2, 5, 16), 24, act="gelu_tanh"), 1, set()),
        ("mmb_gelu_tanh_many_rows", linear((4, 20, 16), 24, act="gelu_tanh"), 1, set()),
        ("mmb_gelu20_tanh", linear((2, 5, 16), 24, act="gelu20_tanh"), 1, set()),
        ("no_mmb_full_addend", linear((2, 5, 16), 24, bias="full"), 0, {"MatMul", "Add"}),
        # no bias, the residual Add alone (T5, LLaMA): MatMulBias with a bias of zeros and R
        ("mmb_no_bias_residual", linear((2, 5, 16), 16, bias="residual"), 1, set()),
        ("mmb_no_bias_residual_first", linear((2, 5, 16), 16, bias="residual", bias_first=True), 1, set()),
        ("no_mmb_batched_b", linear((2, 5, 16), 24, b_rank=3), 0, {"MatMul", "Add"}),
        ("no_mmb_product_is_output", linear((2, 5, 16), 24, mm_output=True), 0, {"MatMul", "Add"}),
        # a Gemm with a bias vector (GPT-2's Conv1D) is the same node; transposed B, alpha or a matrix C are not
        ("mmb_gemm", gemm_linear((6, 16), 24, act="neg"), 1, {"Neg"}),
        ("mmb_gemm_relu", gemm_linear((9, 16), 24, act="relu"), 1, set()),
        ("mmb_gemm_gelu20_tanh", gemm_linear((9, 16), 24, act="gelu20_tanh"), 1, set()),
        ("no_mmb_gemm_trans_b", gemm_linear((6, 16), 24, act="neg", trans_b=1), 0, {"Gemm"}),
        ("no_mmb_gemm_alpha", gemm_linear((6, 16), 24, act="neg", alpha=0.5), 0, {"Gemm"}),
        ("no_mmb_gemm_c_matrix", gemm_linear((6, 16), 24, act="neg", c="matrix"), 0, {"Gemm"}),
        # Conv1D's Reshape -> Gemm -> Reshape: one MatMulBias on the 3-D input, no Reshape left (with the residual
        # Add as its 4th input); back to other leading dims: the Gemm alone, its Reshapes kept
        ("mmb_conv1d", conv1d_linear((2, 5), 16, 24), 1, {"Neg"}),
        ("mmb_conv1d_residual", conv1d_linear((2, 5), 16, 16, residual=True), 1, set()),
        ("mmb_conv1d_rank4", conv1d_linear((2, 3, 4), 8, 12), 1, {"Neg"}),
        ("mmb_conv1d_other_lead", conv1d_linear((2, 5), 16, 24, back=[5, 2, 24]), 1, {"Reshape", "Neg"}),
    ]


def on_and_off(nr, tmp, name, model, option, tol):
    """The model on the CPU with `option` 1 and 0: errors (outputs off onnxruntime's by more than tol relative),
    and per setting the outputs and the op types of the nodes that ran."""
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    feeds = feeds_for(model)
    ref = ort_outputs(path, [feeds])[0]
    errors, runs = [], {}
    for opt in ("1", "0"):
        with nr.session(path, backends="cpu", threads=2, options={option: opt}) as s:
            outs = [o.copy() for o in s.run(feeds)]
            runs[opt] = (outs, [n[1] for n in s.nodes()])
        for r, o in zip(ref, outs):
            d = float(np.max(np.abs(r - o)))
            if not d <= tol * max(1.0, float(np.max(np.abs(r)))):
                errors.append(f"{option.split('.')[1]}={opt}: max abs diff {d:.2e} against onnxruntime")
    return errors, runs


def run_matmul_bias(nr, tmp):
    passed = failed = 0
    for name, model, want, remain in matmul_bias_cases():
        errors, runs = on_and_off(nr, tmp, name, model, "graph.fuse_matmul_bias", 1e-4)
        outs_by_opt = {opt: outs for opt, (outs, _) in runs.items()}
        for opt, (_, ops) in runs.items():
            got = ops.count("MatMulBias")
            if opt == "1":
                if got != want:
                    errors.append(f"{got} MatMulBias nodes, expected {want} ({ops})")
                if want and ("Relu" in ops or ops.count("Add") or "MatMul" in ops or "Gemm" in ops or
                             ("Gelu" in ops and "Gelu" not in remain)):
                    errors.append(f"a MatMul, Gemm, Add, Relu or tanh Gelu left beside the MatMulBias ({ops})")
                if not remain <= set(ops):
                    errors.append(f"no {sorted(remain - set(ops))} node left ({ops})")
                if "Reshape" in ops and "Reshape" not in remain:
                    errors.append(f"a Reshape left beside the MatMulBias ({ops})")
            elif got:
                errors.append(f"graph.fuse_matmul_bias=0 still fused ({ops})")
        # the CPU adds the bias to the finished product, as the Add did: the same bits (a Gemm added its C first)
        if "gemm" not in name and not all(np.array_equal(a, b) for a, b in zip(outs_by_opt["1"], outs_by_opt["0"])):
            errors.append("fused and unfused CPU outputs differ")
        p, f = report(name, errors, f"({want} MatMulBias)")
        passed, failed = passed + p, failed + f
    return passed, failed


def rmsnorm(form="t5", rsqrt="div", eps_from_input=False, exponent=2.0, axis=-1, weight=True, rank=3,
            weight_first=True, r_output=False, numerator=1.0, opset=17, cast_back=False):
    """RMSNorm as torch exports T5LayerNorm / LLaMA's RMSNorm: Cast(x, float), Pow(., 2), ReduceMean(last,
    keepdims), Add(eps), then 1 / Sqrt as Div(1, Sqrt) ("div"), Reciprocal(Sqrt) ("recip") or Pow(., -0.5) ("pow"),
    Mul(x, r), Mul(weight, .). Two norms in a row with a Relu between; the second's weight is an Identity of the
    first's initializer (torch writes one initializer for equal weights). form "mul": Mul(x, x) for the square.
    cast_back: LLaMA's Cast back to the input's type (float here) before the weight Mul. The rest make variants
    that must not fuse: eps from an input, another exponent or numerator, the mean over another axis, no weight
    Mul, r also a graph output."""
    b = transformer_bench.Builder(13)
    shape = [2, 5, 16] if rank == 3 else [6, 16]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    if eps_from_input:
        ins.append(helper.make_tensor_value_info("eps", TensorProto.FLOAT, [1]))
    w = b.init("norm.weight", b.rng.uniform(0.5, 1.5, 16).astype(np.float32))
    outs = []

    def norm(x, w):
        x32 = b.op("Cast", [x], to=TensorProto.FLOAT)
        sq = b.op("Mul", [x32, x32]) if form == "mul" else b.op("Pow", [x32, b.const(np.float32(exponent))])
        if opset >= 18:
            v = b.op("ReduceMean", [sq, b.init(f"axes{len(b.nodes)}", np.array([axis], np.int64))], keepdims=1)
        else:
            v = b.op("ReduceMean", [sq], axes=[axis], keepdims=1)
        ve = b.op("Add", [v, "eps" if eps_from_input else b.const(np.float32(1e-6))])
        if rsqrt == "pow":
            r = b.op("Pow", [ve, b.const(np.float32(-0.5))])
        elif rsqrt == "recip":
            r = b.op("Reciprocal", [b.op("Sqrt", [ve])])
        else:
            r = b.op("Div", [b.const(np.float32(numerator)), b.op("Sqrt", [ve])])
        if r_output:
            outs.append(helper.make_tensor_value_info(r, TensorProto.FLOAT, None))
        h = b.op("Mul", [x32, r] if weight_first else [r, x32])
        if cast_back:
            h = b.op("Cast", [h], to=TensorProto.FLOAT)
        if not weight:
            return h
        return b.op("Mul", [w, h] if weight_first else [h, w])

    h = norm("x", w)
    h = norm(b.op("Relu", [h]), b.op("Identity", [w]))
    outs.insert(0, helper.make_tensor_value_info(h, TensorProto.FLOAT, None))
    m = b.model("rmsnorm", ins, outs)
    m.opset_import[0].version = opset
    return m


def rmsnorm_cases():
    """(name, model, RMSNormalization nodes expected)"""
    return [
        ("rms_t5", rmsnorm(), 2),
        ("rms_reciprocal", rmsnorm(rsqrt="recip", weight_first=False), 2),
        ("rms_pow_half", rmsnorm(rsqrt="pow"), 2),
        ("rms_mul_square_opset18", rmsnorm(form="mul", opset=18), 2),
        ("rms_rank2", rmsnorm(rank=2, rsqrt="recip"), 2),
        ("rms_llama_cast_back", rmsnorm(rsqrt="recip", cast_back=True), 2),
        ("no_rms_eps_input", rmsnorm(eps_from_input=True), 0),
        ("no_rms_exponent4", rmsnorm(exponent=4.0), 0),
        ("no_rms_numerator2", rmsnorm(numerator=2.0), 0),
        ("no_rms_mean_axis1", rmsnorm(axis=1), 0),
        ("no_rms_without_weight", rmsnorm(weight=False), 0),
        ("no_rms_r_is_output", rmsnorm(r_output=True), 0),
    ]


def run_rmsnorm(nr, tmp):
    passed = failed = 0
    gone = {"Pow", "ReduceMean", "Sqrt", "Reciprocal", "Div"}
    for name, model, want in rmsnorm_cases():
        errors, runs = on_and_off(nr, tmp, name, model, "graph.fuse_transformer", 1e-5)
        for opt, (_, ops) in runs.items():
            got = ops.count("RMSNormalization")
            if opt == "1":
                if got != want:
                    errors.append(f"{got} RMSNormalization nodes, expected {want} ({ops})")
                if want and gone & set(ops):
                    errors.append(f"{sorted(gone & set(ops))} left beside the RMSNormalization ({ops})")
            elif got:
                errors.append(f"graph.fuse_transformer=0 still fused ({ops})")
        p, f = report(name, errors, f"({want} RMSNormalization)")
        passed, failed = passed + p, failed + f
    return passed, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feed_list, want, ops in cases():
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            errors = []
            refs = ort_outputs(path, feed_list)
            for opt in ("1", "0"):
                # one session for every feed list: a new shape prepares the fused copy again
                with nr.session(path, backends="cpu", threads=2, options={"graph.fuse_transformer": opt}) as s:
                    for feeds, ref in zip(feed_list, refs):
                        outs = s.run(feeds)
                        for r, o in zip(ref, outs):
                            d = float(np.max(np.abs(r - o)))
                            if not d <= 1e-4 * max(1.0, float(np.max(np.abs(r)))):
                                errors.append(f"fuse_transformer={opt}: max abs diff {d:.2e}")
                        st = s.stats()
                        got = (st.n_attention_fused, st.n_layernorm_fused, st.n_gelu_fused)
                        have = {n[1] for n in s.nodes()}
                        if opt == "1":
                            if got != want:
                                errors.append(f"fused (attention, layernorm, gelu) {got}, expected {want}")
                            if not ops <= have:
                                errors.append(f"no {sorted(ops - have)} node in the fused graph")
                        elif got != (0, 0, 0) or ("Attention" in have) != any(
                                n.op_type == "Attention" for n in model.graph.node):
                            errors.append(f"graph.fuse_transformer=0 still fused: {got}")
            p, f = report(name, errors, want)
            passed, failed = passed + p, failed + f
        p, f = run_matmul_bias(nr, tmp)
        passed, failed = passed + p, failed + f
        p, f = run_rmsnorm(nr, tmp)
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
