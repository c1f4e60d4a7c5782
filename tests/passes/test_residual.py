#!/usr/bin/env python3
"""The residual Add of transformer blocks taken into MatMulBias (runtime/opt_transformer.c): Add(Linear(x), R) with
R of the product's exact shape becomes MatMulBias's 4th input (Y = A B + bias + R), in either operand order, after a
MatMul + bias or a Gemm with a bias vector, on the CPU and on the fake device backend (which takes the 4-input node
as the CUDA backend does). Left alone: a residual that broadcasts, a product another node also reads, a Linear with
an activation (the Add would come after it), and everything with graph.fuse_matmul_bias=0. Each case's outputs
equal onnxruntime's; on the CPU the fused outputs are the unfused ones bit for bit ((product + bias) + R, as the two
Adds computed); under --precision fp16 the fake device runs the 4-input node inside its float16 region. A model
holding the 4-input node itself runs (numpy's result) or, with a broadcast R or an activation, fails naming the node.

    python3 tests/passes/test_residual.py --lib build/lib/libnetrun.so --plugin build/.../libnetrun-fakedev.so
"""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bench"))

RNG = np.random.default_rng(23)
H, FF = 32, 64


class Graph:
    def __init__(self, seed, dev=False):
        self.rng = np.random.default_rng(seed)
        self.dev = dev
        self.nodes, self.inits, self.k = [], [], 0

    def init(self, arr):
        self.k += 1
        self.inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), f"c{self.k}"))
        return self.inits[-1].name

    def op(self, op, ins, name, **kw):
        self.nodes.append(helper.make_node(op, ins, [name], name=name, **kw))
        return name

    def linear(self, x, fin, fout, name, gemm=False):
        w = self.init(self.rng.standard_normal((fin, fout)) / np.sqrt(fin))
        b = self.init(self.rng.standard_normal(fout) * 0.1)
        if gemm:
            return self.op("Gemm", [x, w, b], name)
        return self.op("Add", [self.op("MatMul", [x, w], name + "_mm"), b], name)

    def norm(self, x, name):
        if self.dev:  # a node fakedev runs, so that the placement keeps the block on it
            return self.op("Relu", [x], name)
        g = self.init(self.rng.uniform(0.8, 1.2, H))
        b = self.init(self.rng.standard_normal(H) * 0.02)
        return self.op("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-5)

    def model(self, inputs, outputs):
        g = helper.make_graph(self.nodes, "residual",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def bert_block(shape, gemm=False, dev=False):
    """x -> attention output projection + x -> LayerNorm -> FFN (Relu) -> down projection, the residual first
    -> LayerNorm: two residual Adds, one in each operand order."""
    g = Graph(3, dev)
    y = g.linear("x", H, H, "attn_out", gemm)
    h = g.norm(g.op("Add", [y, "x"], "attn_res"), "ln1")
    f = g.op("Relu", [g.linear(h, H, FF, "ffn_up", gemm)], "ffn_act")
    d = g.linear(f, FF, H, "ffn_down", gemm)
    out = g.norm(g.op("Add", [h, d], "ffn_res"), "ln2")
    return g.model([("x", list(shape))], [out])


def second_reader(shape, dev=False):
    """The projection's output is also read by a Sigmoid (a Relu on fakedev): it must stay a value, the Add stays."""
    g = Graph(5, dev)
    y = g.linear("x", H, H, "proj")
    s = g.op("Add", ["x", y], "res")
    return g.model([("x", list(shape))], [g.op("Relu" if dev else "Sigmoid", [y], "sig"), g.norm(s, "ln")])


def broadcast_residual(shape, dev=False):
    """R [1, ..., H] broadcasts over the rows: not Y's shape, the Add stays."""
    g = Graph(7, dev)
    y = g.linear("x", H, H, "proj")
    rshape = [1] + list(shape[1:])
    return g.model([("x", list(shape)), ("r", rshape)], [g.norm(g.op("Add", [y, "r"], "res"), "ln")])


def activation_then_residual(shape):
    """Linear -> Relu -> + x: the Relu joins the MatMulBias, the Add (after the activation) stays."""
    g = Graph(9)
    a = g.op("Relu", [g.linear("x", H, H, "proj")], "act")
    return g.model([("x", list(shape))], [g.norm(g.op("Add", [a, "x"], "res"), "ln")])


def residual_from_input(shape, dev=False):
    """R another graph input (not A): Add(R, Linear(x))."""
    g = Graph(11, dev)
    y = g.linear("x", H, H, "proj")
    return g.model([("x", list(shape)), ("r", list(shape))], [g.norm(g.op("Add", ["r", y], "res"), "ln")])


# (name, model, MatMulBias nodes, of them with the residual, Add nodes left)
CPU_CASES = [
    ("block_rank3", bert_block((2, 5, H)), 3, 2, 0),
    ("block_rank2", bert_block((10, H)), 3, 2, 0),
    ("block_gemm", bert_block((10, H), gemm=True), 3, 2, 0),
    ("residual_from_input", residual_from_input((2, 5, H)), 1, 1, 0),
    ("no_res_second_reader", second_reader((2, 5, H)), 1, 0, 1),
    ("no_res_broadcast", broadcast_residual((2, 5, H)), 1, 0, 1),
    ("no_res_after_activation", activation_then_residual((2, 5, H)), 1, 0, 1),
]
# fakedev runs 2-D MatMul, MatMulBias, Add and Relu only: Relu stands for LayerNormalization there
DEV_CASES = [
    ("dev_block", bert_block((10, H), dev=True), 3, 2, 0),
    ("dev_block_gemm", bert_block((10, H), gemm=True, dev=True), 3, 2, 0),
    ("dev_residual_from_input", residual_from_input((10, H), dev=True), 1, 1, 0),
    ("dev_no_res_second_reader", second_reader((10, H), dev=True), 1, 0, 1),
    ("dev_no_res_broadcast", broadcast_residual((10, H), dev=True), 1, 0, 1),
]


def feeds_for(model):
    return {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


def ort_run(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def residual_names(model):
    return {n.name for n in model.graph.node if n.name.endswith("_res") or n.name == "res"}


def check_case(nr, tmp, name, model, want_mmb, want_res, want_add, backends, precision=None):
    from test_fp16_regions import PSession
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    feeds = feeds_for(model)
    ref = ort_run(path, feeds)
    errors, outs_by_opt = [], {}
    res_adds = residual_names(model)
    tol = 2e-2 if precision == "fp16" else 1e-4
    for opt in ("1", "0"):
        with PSession(nr, path, backends, {"graph.fuse_matmul_bias": opt}, precision or "fp32") as s:
            outs = [o.copy() for o in s.run(feeds)]
            outs_by_opt[opt] = outs
            casts = [n[0] for n in s.nodes() if n[1] == "Cast"]
            nodes = [n for n in s.nodes() if n[1] != "Cast"]
        for r, o in zip(ref, outs):
            d = float(np.max(np.abs(r - o.astype(np.float64))))
            if not d <= tol * max(1.0, float(np.max(np.abs(r)))):
                errors.append(f"fuse_matmul_bias={opt}: max abs diff {d:.2e} against onnxruntime")
        ops = [n[1] for n in nodes]
        mmb = [n for n in nodes if n[1] == "MatMulBias"]
        # the fused node is named "first..last": the residual Add's name at its end when it took the Add
        with_res = [n for n in mmb if n[0].split("..")[-1] in res_adds]
        if opt == "1":
            if (len(mmb), len(with_res), ops.count("Add")) != (want_mmb, want_res, want_add):
                errors.append(f"(MatMulBias, with residual, Add) = ({len(mmb)}, {len(with_res)}, {ops.count('Add')}), "
                              f"expected ({want_mmb}, {want_res}, {want_add}): {[(n[0], n[1], n[2]) for n in nodes]}")
            if backends.startswith("fakedev") and any(n[2] != "fakedev" for n in mmb):
                errors.append(f"a MatMulBias not on fakedev: {[(n[0], n[2]) for n in mmb]}")
            borders = len(model.graph.input) + len(model.graph.output)
            if precision == "fp16" and len(casts) != borders:  # R is float16 inside the region like the other inputs
                errors.append(f"fp16: Casts inside the region, not only at its {borders} borders ({casts})")
        elif mmb:
            errors.append(f"graph.fuse_matmul_bias=0 still fused ({ops})")
    # the CPU adds the bias, then R, to the finished product, as the two Adds did: the same bits (not a Gemm's
    # sgemm with C, not fakedev's loop, which differs from the CPU's unfused MatMul)
    if backends == "cpu" and "gemm" not in name and \
            not all(np.array_equal(a, b) for a, b in zip(outs_by_opt["1"], outs_by_opt["0"])):
        errors.append("fused and unfused CPU outputs differ")
    label = f"{name}{' fp16' if precision == 'fp16' else ''}"
    if errors:
        print(f"FAIL {label}: " + "; ".join(errors))
        return 0, 1
    print(f"ok   {label} ({want_mmb} MatMulBias, {want_res} with the residual Add)")
    return 1, 0


def written_node(r_shape, activation=""):
    """A model holding MatMulBias (com.netrun) with a residual R itself: x [6, 16], W [16, 8], R r_shape."""
    rng = np.random.default_rng(13)
    attrs = {"activation": activation} if activation else {}
    node = helper.make_node("MatMulBias", ["x", "W", "B", "r"], ["y"], name="mmb_written", domain="com.netrun", **attrs)
    g = helper.make_graph([node], "written", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 16]),
                                              helper.make_tensor_value_info("r", TensorProto.FLOAT, list(r_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W"),
                           numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "B")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.netrun", 1)])
    m.ir_version = 8
    return m


def check_written(nr, tmp):
    """The 4-input node's shape inference (layers/gemm.c): Y = x W + B + r where r has Y's shape; a broadcast R or
    an activation with R is an error naming the node, not a wrong answer."""
    from netrun_ctypes import NetrunError
    passed = failed = 0
    for name, r_shape, act, want_err in (("written_ok", (6, 8), "", None),
                                         ("written_r_broadcast", (1, 8), "", "residual R must have Y's shape"),
                                         ("written_r_rank", (8,), "", "residual R must have Y's shape"),
                                         ("written_r_relu", (6, 8), "Relu", "takes no activation")):
        path = os.path.join(tmp, name + ".onnx")
        m = written_node(r_shape, act)
        onnx.save(m, path)
        feeds = feeds_for(m)
        err = None
        try:
            with nr.session(path, backends="cpu", threads=2) as s:
                y = s.run(feeds)[0].copy()
        except NetrunError as e:
            err = str(e)
        if want_err is None:
            w = numpy_helper.to_array(m.graph.initializer[0]).astype(np.float64)
            b = numpy_helper.to_array(m.graph.initializer[1]).astype(np.float64)
            ref = feeds["x"].astype(np.float64) @ w + b + feeds["r"]
            ok = err is None and float(np.max(np.abs(y - ref))) <= 1e-4
            what = err or f"max diff {float(np.max(np.abs(y - ref))):.1e} against numpy"
        else:
            ok = err is not None and want_err in err and "mmb_written" in err
            what = err or "no error"
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {what}")
        passed, failed = passed + ok, failed + (not ok)
    return passed, failed


def main():
    from netrun_ctypes import Netrun, plugin_test_args
    a = plugin_test_args(__doc__)
    sys.path.insert(0, HERE)
    nr = Netrun(a.lib)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(c, "cpu", None) for c in CPU_CASES] + [(c, "fakedev,cpu", None) for c in DEV_CASES] + \
               [(c, "fakedev,cpu", "fp16") for c in (DEV_CASES[0], DEV_CASES[2])]
        for (name, model, mmb, res, add), backends, prec in runs:
            p, f = check_case(nr, tmp, name, model, mmb, res, add, backends, prec)
            passed, failed = passed + p, failed + f
        p, f = check_written(nr, tmp)
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
