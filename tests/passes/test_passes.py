#!/usr/bin/env python3
"""Graph passes (runtime/optimize.c): models with each pattern, built with onnx.helper, give onnxruntime's
outputs with the passes on and off, and the fusions happened (node names and counts of the prepared session).

    python3 tests/passes/test_passes.py --lib build/lib/libnetrun.so
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from netrun_ctypes import Netrun  # noqa: E402

RNG = np.random.default_rng(3)


def w(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


class G:
    def __init__(self):
        self.nodes, self.inits = [], []

    def c(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def n(self, op, ins, out, **kw):
        self.nodes.append(helper.make_node(op, ins, [out] if isinstance(out, str) else out, name=kw.pop("name", out if isinstance(out, str) else out[0]), **kw))
        return out

    def conv(self, x, cin, cout, name, k=3, bias=True, group=1, transpose=False):
        ins = [x, self.c(name + ".w", w(cin, cout // group, k, k) if transpose else w(cout, cin // group, k, k))]
        if bias:
            ins.append(self.c(name + ".b", w(cout)))
        return self.n("ConvTranspose" if transpose else "Conv", ins, name, pads=[1, 1, 1, 1], group=group,
                      **({"strides": [2, 2], "output_padding": [1, 1]} if transpose else {}))

    def bn(self, x, c, name, eps=1e-3):
        ins = [x, self.c(name + ".g", RNG.uniform(0.5, 1.5, c).astype(np.float32)), self.c(name + ".beta", w(c)),
               self.c(name + ".mean", w(c)), self.c(name + ".var", RNG.uniform(0.5, 2.0, c).astype(np.float32))]
        return self.n("BatchNormalization", ins, name, epsilon=eps)

    def model(self, inputs, outputs, opset=17):
        g = helper.make_graph(self.nodes, "passes",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None)) for n in outputs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m


def case_conv_bn_relu():
    g = G()
    y = g.conv("x", 4, 8, "conv1")
    y = g.bn(y, 8, "bn1")
    g.n("Relu", [y], "relu1")
    # no bias, BN, Clip from constant inputs (ReLU6)
    y = g.conv("relu1", 8, 8, "conv2", bias=False)
    y = g.bn(y, 8, "bn2")
    g.n("Clip", [y, g.c("lo", np.array(0, np.float32)), g.c("hi", np.array(0.5, np.float32))], "clip2")
    return g.model([("x", [1, 4, 10, 10])], ["clip2"]), {"bn": 2, "act": 2, "sum": 0, "drop": 0}, \
        ["conv1+bn1+relu1", "conv2+bn2+clip2"]


def case_residual():
    """ResNet block: conv+bn+relu, conv+bn + x -> relu (sum fused); and a second Add with the conv output as
    input 1, no activation after it."""
    g = G()
    y = g.bn(g.conv("x", 8, 8, "c1"), 8, "b1")
    y = g.n("Relu", [y], "r1")
    y = g.bn(g.conv(y, 8, 8, "c2"), 8, "b2")
    y = g.n("Add", [y, "x"], "add2")
    y = g.n("Relu", [y], "r2")
    z = g.conv(y, 8, 8, "c3")
    y = g.n("Add", [y, z], "add3")
    # bottleneck with a downsample branch: the Add of two Conv+BN outputs is fused into one of them only
    d = g.bn(g.conv(y, 8, 8, "down"), 8, "down.bn")
    m = g.bn(g.conv(y, 8, 8, "main"), 8, "main.bn")
    g.n("Relu", [g.n("Add", [m, d], "add4")], "r4")
    return g.model([("x", [2, 8, 9, 9])], ["r4"]), {"bn": 4, "act": 3, "sum": 3, "drop": 0}, \
        ["c1+b1+r1", "c2+b2+add2+r2", "c3+add3", "down+down.bn+add4+r4", "main+main.bn"]


def case_activations():
    g = G()
    x = "x"
    acts = [("LeakyRelu", {"alpha": 0.2}), ("Sigmoid", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
            ("HardSwish", {}), ("Tanh", {})]
    names = []
    for i, (op, kw) in enumerate(acts):
        y = g.conv(x, 4, 4, f"conv{i}")
        x = g.n(op, [y], f"act{i}", **kw)
        names.append(f"conv{i}+act{i}")
    return g.model([("x", [1, 4, 7, 7])], [x]), {"bn": 0, "act": 5, "sum": 0, "drop": 0}, names


def case_identity_dropout_and_shared():
    """Identity and Dropout between Conv and BN are dropped, then the BN folds; a Conv whose output is also a
    graph output keeps its BN and Relu; a Conv output with two consumers is not fused."""
    g = G()
    y = g.conv("x", 4, 4, "c1")
    y = g.n("Identity", [y], "id1")
    y = g.n("Dropout", [y, g.c("ratio", np.array(0.3, np.float32))], "drop1")
    y = g.bn(y, 4, "b1")
    y = g.n("Relu", [y], "r1")
    y2 = g.conv(y, 4, 4, "c2")           # graph output: stays
    y3 = g.n("Relu", [y2], "r2")
    y4 = g.conv(y3, 4, 4, "c3")          # two consumers: no fusion
    a = g.n("Sigmoid", [y4], "s3")
    b = g.n("Tanh", [y4], "t3")
    g.n("Add", [a, b], "out")
    g.n("Identity", ["out"], "final")    # produces a graph output: stays
    return g.model([("x", [1, 4, 6, 6])], ["c2", "final"]), {"bn": 1, "act": 1, "sum": 0, "drop": 2}, \
        ["c1+b1+r1", "c2", "r2", "c3", "final"]


def case_convtranspose_group_bn():
    g = G()
    y = g.conv("x", 4, 6, "ct", transpose=True, group=2)
    y = g.bn(y, 6, "bnt")
    g.n("Relu", [y], "rt")
    y = g.conv("rt", 6, 6, "dw", group=6)
    y = g.bn(y, 6, "bnd")
    g.n("Relu", [y], "rd")
    return g.model([("x", [1, 4, 5, 5])], ["rd"]), {"bn": 2, "act": 2, "sum": 0, "drop": 0}, \
        ["ct+bnt+rt", "dw+bnd+rd"]


def case_silu():
    """SiLU as exported (x * Sigmoid(x)): after Conv+BN it becomes Swish and then the Conv's activation; after
    an Add (no Conv) a standalone Swish node, operands in the other order; a Sigmoid whose output is also used
    elsewhere is left alone (and so is its Conv, whose output then has two users)."""
    g = G()
    y = g.bn(g.conv("x", 4, 8, "c1"), 8, "b1")
    s = g.n("Sigmoid", [y], "s1")
    y = g.n("Mul", [y, s], "m1")
    a = g.n("Add", [y, y], "a2")
    s = g.n("Sigmoid", [a], "s2")
    y = g.n("Mul", [s, a], "m2")
    c = g.conv(y, 8, 8, "c3")
    s = g.n("Sigmoid", [c], "s3")
    y = g.n("Mul", [c, s], "m3")
    g.n("Add", [y, s], "out")
    # a Sigmoid that is a graph output keeps its node
    c = g.conv("out", 8, 4, "c4")
    s = g.n("Sigmoid", [c], "s4")
    g.n("Mul", [s, c], "m4")
    return g.model([("x", [2, 4, 8, 8])], ["out", "s4", "m4"]), \
        {"bn": 1, "act": 1, "sum": 0, "drop": 0, "swish": 2}, [("c1+b1+s1+m1", "Conv"), ("s2+m2", "Swish"), ("c3", "Conv"), ("s3", "Sigmoid"),
                                                          ("m3", "Mul"), ("s4", "Sigmoid"), ("m4", "Mul")]


def case_nchwc():
    """nChw16c chains (CPU, channels multiples of 16): a Conv from a plain input, a residual Conv+BN+Add+Relu
    whose Z is blocked, a non-agnostic consumer (Softmax) in the middle, Convs writing NCHW for a Concat, a
    Conv whose output is a graph output and feeds GlobalAveragePool and an elementwise Mul (blocked, then a
    graph output too). Batch 2, planes of 100 (not a multiple of 16). Returns the model and the expected
    ReorderNCHWc and GlobalAveragePoolNCHWc node counts."""
    g = G()
    a = g.n("Relu", [g.conv("x", 16, 32, "a")], "a.relu")
    b = g.bn(g.conv(a, 32, 32, "b"), 32, "b.bn")
    r = g.n("Relu", [g.n("Add", [b, a], "b.add")], "b.relu")
    sm = g.n("Softmax", [r], "sm", axis=1)
    c = g.conv(r, 32, 16, "c")
    d = g.conv(sm, 32, 16, "d")
    cat = g.n("Concat", [c, d], "cat", axis=1)
    e = g.conv(cat, 32, 32, "e")
    g.n("GlobalAveragePool", [e], "gap")
    g.n("Mul", [g.n("Sigmoid", [e], "sig"), e], "sq")
    # squeeze-excite: Mul(S [N,C,1,1], e) becomes MulChannelNCHWc(e, S), its output blocked
    se = g.n("Relu", [g.conv("gap", 32, 8, "se1")], "se1.relu")
    se = g.n("Sigmoid", [g.conv(se, 8, 32, "se2")], "se2.sig")
    g.n("Mul", [se, e], "se")
    # reorders: Softmax's input, and the three graph outputs written blocked (e, sq, se)
    return g.model([("x", [2, 16, 10, 10])], ["e", "gap", "sq", "se"]), 4, 2


def case_nchwc_stem():
    """A first Conv from 3 channels writing nChw16c, a blocked MaxPool (pads, ceil_mode), a blocked Concat of
    two Conv outputs (16 + 32 channels), a depthwise Conv + Clip, a last Conv writing NCHW itself; one reorder
    (for the blocked graph output s.sig; a plain MaxPool would need another)."""
    g = G()
    y = g.n("Relu", [g.conv("x", 3, 16, "s")], "s.relu")
    g.n("Sigmoid", [y], "s.sig")  # blocked, a graph output: the one reorder
    y = g.n("MaxPool", [y], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    p = g.conv(y, 16, 16, "p")
    q = g.n("Relu", [g.conv(y, 16, 32, "q")], "q.relu")
    cat = g.n("Concat", [p, q], "cat", axis=1)
    d = g.n("Clip", [g.conv(cat, 48, 48, "dw", group=48), g.c("lo", np.array(0, np.float32)),
                     g.c("hi", np.array(6, np.float32))], "dw.clip")
    g.conv(d, 48, 16, "r")  # no blocked consumer: writes NCHW itself
    return g.model([("x", [2, 3, 13, 13])], ["r", "s.sig"]), 1, 0


def case_nchwc_avgpool():
    """Blocked AveragePools between blocked Convs (3x3/1 pads 1 without count_include_pad, as Inception v2's;
    3x3/2 ceil_mode with count_include_pad and end pads), and one whose output also goes to a plain op (Softmax),
    which stays plain (so the Conv before it writes NCHW). No reorder: the graph outputs are written plain."""
    g = G()
    y = g.n("Relu", [g.conv("x", 16, 32, "a")], "a.relu")
    y = g.n("AveragePool", [y], "ap1", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y = g.n("Relu", [g.conv(y, 32, 32, "b")], "b.relu")
    y = g.n("AveragePool", [y], "ap2", kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1,
            count_include_pad=1)
    y = g.conv(y, 32, 32, "c")
    y = g.n("AveragePool", [y], "ap3", kernel_shape=[2, 2], strides=[1, 1])
    g.n("Softmax", [y], "sm", axis=1)
    g.conv(y, 32, 16, "d")
    return g.model([("x", [2, 16, 11, 11])], ["d", "sm"]), 0, 0


def run_nchwc_avgpool(nr, tmp):
    """case_nchwc_avgpool against onnxruntime (nChw16c on and off, 1 and 2 threads); which pools ran blocked."""
    model, _, _ = case_nchwc_avgpool()
    path = os.path.join(tmp, "nchwc_avgpool.onnx")
    onnx.save(model, path)
    feeds = {"x": RNG.standard_normal((2, 16, 11, 11)).astype(np.float32)}

    def check(s, on, threads):
        kern = {n[0]: n[3] for n in s.nodes()}
        want = {"ap1": on == "1", "ap2": on == "1", "ap3": False}
        got = {k: "nChw16c" in kern.get(k, "") for k in want}
        if not any(n[1] == "AveragePool" for n in s.nodes()):
            return [f"no AveragePool nodes: {list(kern)}"]
        return [f"cpu.nchwc={on}: blocked pools {got}, expected {want}"] if got != want else []
    errors = on_off_runs(nr, path, model, feeds, "cpu.nchwc", check)
    print(("FAIL nchwc_avgpool: " + "; ".join(errors)) if errors else "ok   nchwc_avgpool")
    return not errors


def on_off_runs(nr, path, model, feeds, key, check):
    """The model on the CPU with option key 1 and 0, at 1 and 2 threads, against onnxruntime (its graph
    optimizations off); check(session, on, threads) adds its own error strings."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    errors = []
    for on in ("1", "0"):
        for threads in (1, 2):
            with nr.session(path, backends="cpu", threads=threads, options={key: on}) as s:
                outs = s.run(feeds)
                for name, r, o in zip([o.name for o in model.graph.output], ref, outs):
                    dd = float(np.max(np.abs(r - o)))
                    if not dd <= 1e-4 * max(1.0, float(np.max(np.abs(r)))):
                        errors.append(f"{key}={on} threads={threads} {name}: max abs diff {dd:.2e}")
                errors += check(s, on, threads)
    return errors


def conv1x1(g, x, cin, cout, name, bias=True):
    ins = [x, g.c(name + ".w", w(cout, cin, 1, 1))] + ([g.c(name + ".b", w(cout))] if bias else [])
    return g.n("Conv", ins, name)


def case_se_fold():
    """Squeeze-excite into a 1x1 projection, as in EfficientNet: the Mul is folded into the Conv reading it
    (params.src_scale) where that Conv runs the AVX-512 1x1 kernel on nChw16c X. (a) a per-image scale
    S [N, 96, 1, 1] into a 96 -> 24 projection (nChw16c in, plain out: the two-block tile); (b) a constant
    S [1, 32, 1, 1] into a 32 -> 16 projection that is a graph output (asked with Y blocked, planned to write
    plain Y: the kernel must take the scale either way); (c) an SE Mul whose output is also a graph output:
    not folded. Returns the model and the folds expected on an AVX-512 CPU."""
    g = G()
    e = g.n("Relu", [conv1x1(g, "x", 24, 96, "ex")], "ex.relu")
    d = g.n("Relu", [g.conv(e, 96, 96, "dw", group=96)], "dw.relu")
    s = g.n("Relu", [conv1x1(g, g.n("GlobalAveragePool", [d], "gap"), 96, 8, "se1")], "se1.relu")
    s = g.n("Sigmoid", [conv1x1(g, s, 8, 96, "se2")], "se2.sig")
    conv1x1(g, g.n("Mul", [d, s], "se.mul"), 96, 24, "proj")  # (a)
    d2 = g.n("Relu", [g.conv(conv1x1(g, "y", 24, 32, "ex2"), 32, 32, "dw2", group=32)], "dw2.relu")
    scale = g.c("scale", RNG.uniform(0.5, 1.5, (1, 32, 1, 1)).astype(np.float32))
    conv1x1(g, g.n("Mul", [scale, d2], "se2.mul"), 32, 16, "proj2", bias=False)  # (b), operands swapped
    m3 = g.n("Mul", [d, s], "se3.mul")
    conv1x1(g, m3, 96, 24, "proj3")  # (c)
    return (g.model([("x", [2, 24, 14, 13]), ("y", [2, 24, 29, 28])], ["proj", "proj2", "proj3", "se3.mul"]),
            2)


def run_se_fold(nr, tmp):
    """case_se_fold against onnxruntime at 1 and 2 threads, cpu.se_fold on and off; folded Convs counted by
    name (the Mul's name first: 'se.mul+proj')."""
    model, want = case_se_fold()
    path = os.path.join(tmp, "se_fold.onnx")
    onnx.save(model, path)
    feeds = {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    with open("/proc/cpuinfo") as f:
        avx512 = " avx512f" in f.read()

    def check(s, on, threads):
        folded = sorted(n[0] for n in s.nodes() if ".mul+" in n[0] and n[1] == "Conv")
        expect = want if on == "1" and avx512 else 0
        if len(folded) != expect or any(f.startswith("se3.mul") for f in folded):
            return [f"cpu.se_fold={on} threads={threads}: folded {folded}, expected {expect} (not se3.mul, a graph output)"]
        return []
    errors = on_off_runs(nr, path, model, feeds, "cpu.se_fold", check)
    if errors:
        print("FAIL se_fold: " + "; ".join(errors))
        return 0
    print(f"ok   se_fold ({'AVX-512: folds checked' if avx512 else 'no AVX-512: nothing folds'})")
    return 1


def run_nchwc(nr, tmp, case):
    """The nChw16c pass against onnxruntime at 1 and 2 threads, with it on and off; counts of its nodes."""
    model, want_reorders, want_gap = case()
    path = os.path.join(tmp, case.__name__ + ".onnx")
    onnx.save(model, path)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32)}

    def check(s, on, threads):
        # the pass's own ops show as the ONNX op they stand for, their layout in the kernel column
        nodes = s.nodes()
        got = (sum(1 for n in nodes if n[1] == "Reorder (layout)" and "nChw16c" in n[3]),
               sum(1 for n in nodes if n[1] in ("GlobalAveragePool", "Mul") and "nChw16c" in n[3]))
        want = (want_reorders, want_gap) if on == "1" else (0, 0)
        return [f"cpu.nchwc={on}: (reorders, blocked GAP + SE Mul) {got}, expected {want}"] if got != want else []
    errors = on_off_runs(nr, path, model, feeds, "cpu.nchwc", check)
    if errors:
        print(f"FAIL {case.__name__}: " + "; ".join(errors))
        return 0
    print(f"ok   {case.__name__}")
    return 1


def case_caffe2_affine():
    """Caffe2's exports: BN then its scale and shift again as Mul + Add of Unsqueezed per-channel constants (folded
    at prepare), all folded into the Conv; Mul / Add alone, operands either way round, constants [1, C, 1, 1],
    [C, 1, 1] and a scalar; a ConvTranspose. Not folded: a Mul by a constant that varies over the plane, and a Mul
    by a per-channel value computed at run time."""
    g = G()
    ax = g.c("axes12", np.array([1, 2], np.int64))
    y = g.bn(g.conv("x", 4, 8, "c1"), 8, "b1")
    y = g.n("Mul", [y, g.n("Unsqueeze", [g.c("s1", w(8)), ax], "us1")], "m1")
    y = g.n("Add", [y, g.n("Unsqueeze", [g.c("t1", w(8)), ax], "ut1")], "a1")
    y = g.n("Relu", [y], "r1")
    y = g.conv(y, 8, 8, "c2", bias=False)
    y = g.n("Mul", [g.c("s2", w(1, 8, 1, 1)), y], "m2")
    y = g.n("Add", [g.c("t2", w(8, 1, 1)), y], "a2")
    y = g.n("Clip", [y, g.c("lo", np.array(-0.5, np.float32)), g.c("hi", np.array(0.5, np.float32))], "k2")
    y = g.n("Add", [g.conv(y, 8, 8, "c3"), g.c("t3", w(1))], "a3")
    y = g.n("Mul", [g.conv(y, 8, 8, "ct4", transpose=True, group=2), g.c("s4", w(8, 1, 1))], "m4")
    y = g.n("Mul", [g.conv(y, 8, 8, "c5"), g.c("s5", w(1, 8, 20, 20))], "m5")            # varies over the plane
    sc = g.n("Sigmoid", [g.n("GlobalAveragePool", [y], "gap6")], "sg6")
    g.n("Mul", [g.conv(y, 8, 8, "c6"), sc], "m6")                                      # computed at run time
    return g.model([("x", [1, 4, 10, 10])], ["m6"]), {"bn": 7, "act": 2, "sum": 0, "drop": 0}, \
        ["c1+b1+m1+a1+r1", "c2+m2+a2+k2", "c3+a3", "ct4+m4", "c5", "m5", "c6", "m6"]


def case_sum_residual():
    """Caffe2's ResNets write the residual Add as Sum: a Sum of two fuses as "+ Z" (then the Relu); a Sum of three
    stays."""
    g = G()
    y = g.n("Relu", [g.bn(g.conv("x", 8, 8, "c1"), 8, "b1")], "r1")
    y = g.n("Relu", [g.n("Sum", [g.bn(g.conv(y, 8, 8, "c2"), 8, "b2"), "x"], "sum2")], "r2")
    g.n("Sum", [g.conv(y, 8, 8, "c3"), y, "x"], "sum3")
    return g.model([("x", [2, 8, 9, 9])], ["sum3"]), {"bn": 2, "act": 2, "sum": 1, "drop": 0}, \
        ["c1+b1+r1", "c2+b2+sum2+r2", "c3", "sum3"]


def case_bn_affine():
    """DenseNet's pre-activation (Caffe2): BN (after a pool, no Conv to fold into) then Mul + Add of Unsqueezed
    per-channel constants: one BN with the scale and shift folded into gamma and beta, and the Relu after it
    fused. A BN whose Mul reads a per-plane constant keeps it; a BN alone takes its activation."""
    g = G()
    ax = g.c("axes12", np.array([1, 2], np.int64))
    y = g.bn(g.n("MaxPool", ["x"], "pool", kernel_shape=[2, 2], strides=[2, 2]), 8, "bn1")
    y = g.n("Mul", [y, g.n("Unsqueeze", [g.c("s1", w(8)), ax], "us1")], "m1")
    y = g.n("Add", [g.n("Unsqueeze", [g.c("t1", w(8)), ax], "ut1"), y], "a1")
    y = g.n("Relu", [y], "r1")
    y = g.conv(y, 8, 8, "c2")
    y = g.bn(g.n("Relu", [y], "r2"), 8, "bn3")
    y = g.n("Mul", [y, g.c("s3", w(1, 1, 5, 5))], "m3")
    g.n("LeakyRelu", [g.bn(y, 8, "bn4")], "lr4", alpha=0.1)
    return g.model([("x", [2, 8, 10, 10])], ["lr4"]), {"bn": 2, "act": 3, "sum": 0, "drop": 0}, \
        ["bn1+m1+a1+r1", "c2+r2", "bn3", "m3", "bn4+lr4"]


CASES = [case_conv_bn_relu, case_residual, case_activations, case_identity_dropout_and_shared,
         case_convtranspose_group_bn, case_silu, case_caffe2_affine, case_sum_residual,
         case_bn_affine]


def case_control_flow_captures():
    """A graph with an If whose branches read outer values by name (captures): the passes still run on it,
    and keep every captured value as written. a = Relu(BN(Conv(x))) fuses (its output name stays); Conv b's own
    output is captured, so its BN is not folded into it (the BN takes the Relu after it instead); c = Identity(a)
    is captured, so it is not dropped.
    16 channels, so the CPU's nChw16c region runs too (a captured value is handed to the If in NCHW)."""
    g = G()
    a = g.n("Relu", [g.bn(g.conv("x", 16, 16, "a"), 16, "a.bn")], "a.relu")
    b = g.conv(a, 16, 16, "b")
    g.n("Relu", [g.bn(b, 16, "b.bn")], "b.relu")
    g.n("Identity", [a], "c")
    g.n("Greater", [g.n("ReduceSum", ["x"], "total", keepdims=0), g.c("zero", np.array(0, np.float32))], "cond")
    out = lambda n: helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    then_g = helper.make_graph([helper.make_node("Add", ["b", "a.relu"], ["t"], name="then_add")], "then", [], [out("t")])
    else_g = helper.make_graph([helper.make_node("Mul", ["c", "a.relu"], ["e"], name="else_mul")], "else", [], [out("e")])
    g.n("If", ["cond"], "y", then_branch=then_g, else_branch=else_g)
    return g.model([("x", [1, 16, 8, 8])], ["y", "b.relu"])


def run_captures(nr, tmp):
    """case_control_flow_captures on both branches (x and -x), passes on and off, against onnxruntime; the
    fusion of a happened and b and c stayed."""
    model = case_control_flow_captures()
    path = os.path.join(tmp, "control_flow_captures.onnx")
    onnx.save(model, path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.abs(RNG.standard_normal((1, 16, 8, 8))).astype(np.float32)
    errors = []
    for sign in (1.0, -1.0):
        feeds = {"x": (sign * x).astype(np.float32)}
        ref = sess.run(None, feeds)
        for opt in ("1", "0"):
            with nr.session(path, backends="cpu", threads=2, options={"graph.optimize": opt}) as s:
                outs = s.run(feeds)
                for name, r, o in zip(["y", "b.relu"], ref, outs):
                    d = float(np.max(np.abs(r - o)))
                    if not d <= 1e-4 * max(1.0, float(np.max(np.abs(r)))):
                        errors.append(f"x*{sign:+.0f} optimize={opt} {name}: max abs diff {d:.2e}")
                nodes = [n[0] for n in s.nodes()]
                counts = s.pass_counts()
                if opt == "1":
                    if counts[0] != 1 or counts[1] != 2 or counts[3] != 0:
                        errors.append(f"pass counts {counts}: expected a's BN and Relu fused, b.bn's Relu, "
                                      "nothing dropped")
                    for nm in ("a+a.bn+a.relu", "b", "b.bn+b.relu", "c", "y"):
                        if nm not in nodes:
                            errors.append(f"no node named '{nm}' (nodes: {nodes})")
    print(("FAIL control_flow_captures: " + "; ".join(errors)) if errors else "ok   control_flow_captures")
    return not errors


def case_siblings(opset):
    """A detector head: four convs of 1, 1, 4 and 10 channels read one feature map (one without bias, two with a
    Relu fused: two groups), at opset 11 (Split's sizes an attribute) or 17 (an input). Left apart: a conv with
    other pads, a grouped conv, and two convs whose outputs feed further convs (a Split would end their layout)."""
    g = G()
    f = g.n("Relu", [g.conv("x", 3, 32, "stem")], "feat")
    heads = []
    for name, c, bias in (("cls", 1, True), ("obj", 1, False), ("box", 4, True), ("kps", 10, True)):
        heads.append(g.n("Conv", [f, g.c(name + ".w", w(c, 32, 3, 3))] + ([g.c(name + ".b", w(c))] if bias else []),
                         name, pads=[1, 1, 1, 1]))
    r1 = g.n("Relu", [g.n("Conv", [f, g.c("ra.w", w(8, 32, 1, 1)), g.c("ra.b", w(8))], "ra")], "ra_relu")
    r2 = g.n("Relu", [g.n("Conv", [f, g.c("rb.w", w(8, 32, 1, 1))], "rb")], "rb_relu")
    other = g.n("Conv", [f, g.c("op.w", w(2, 32, 3, 3))], "other_pads", pads=[0, 0, 0, 0])
    grp = g.n("Conv", [f, g.c("gr.w", w(32, 8, 3, 3))], "grouped", pads=[1, 1, 1, 1], group=4)
    t1 = g.n("Conv", [f, g.c("t1.w", w(16, 32, 1, 1))], "tower1")
    t2 = g.n("Conv", [f, g.c("t2.w", w(16, 32, 1, 1))], "tower2")
    t1 = g.n("Conv", [t1, g.c("t1b.w", w(4, 16, 3, 3))], "tower1b", pads=[1, 1, 1, 1])
    t2 = g.n("Conv", [t2, g.c("t2b.w", w(4, 16, 3, 3))], "tower2b", pads=[1, 1, 1, 1])
    outs = heads + [r1, r2, other, grp, t1, t2]
    return g.model([("x", [2, 3, 20, 20])], outs, opset=opset)


def run_siblings(nr, tmp, backend):
    """The sibling merge against onnxruntime (on and off, 1 and 2 threads, opsets 11 and 17); on the CPU, which
    convs merged."""
    errors = []
    for opset in (11, 17):
        model = case_siblings(opset)
        path = os.path.join(tmp, f"siblings{opset}.onnx")
        onnx.save(model, path)
        feeds = {"x": RNG.standard_normal((2, 3, 20, 20)).astype(np.float32)}

        def check(s, on, threads):
            merged = sorted(n[0] for n in s.nodes() if n[1] == "Conv" and "siblings" in n[0])
            want = ["cls+3 siblings", "ra+1 siblings"] if on == "1" else []
            if backend == "cpu" and merged != want:
                return [f"opset {opset}, graph.merge_siblings={on}: merged {merged}, expected {want}"]
            return []
        if backend == "cpu":
            errors += on_off_runs(nr, path, model, feeds, "graph.merge_siblings", check)
        else:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            ref = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
            with nr.session(path, backends=backend, threads=2) as s:
                for r, o in zip(ref, s.run(feeds)):
                    d = float(np.max(np.abs(r - o)))
                    if not d <= 1e-3 * max(1.0, float(np.max(np.abs(r)))):
                        errors.append(f"opset {opset} on {backend}: max abs diff {d:.2e}")
    print(("FAIL siblings: " + "; ".join(errors)) if errors else "ok   siblings")
    return not errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--backend", default="cpu",
                    help="backend list; the expected pass counts and node names are the CPU's and are checked "
                         "only with cpu (other backends accept other fusions): elsewhere the outputs are")
    args = ap.parse_args()
    nr = Netrun(args.lib)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            model, want, names = case()
            path = os.path.join(tmp, case.__name__ + ".onnx")
            onnx.save(model, path)
            feeds = {}
            for i in model.graph.input:
                shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
                feeds[i.name] = RNG.standard_normal(shape).astype(np.float32)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            ref = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
            errors = []
            for opt in ("1", "0"):
                with nr.session(path, backends=args.backend, threads=2, options={"graph.optimize": opt}) as s:
                    outs = s.run(feeds)
                    for r, o in zip(ref, outs):
                        d = float(np.max(np.abs(r - o)))
                        if not d <= 1e-4 * max(1.0, float(np.max(np.abs(r)))):
                            errors.append(f"optimize={opt}: max abs diff {d:.2e}")
                    ops = {n[0]: n[1] for n in s.nodes()}
                    nodes = list(ops)
                    counts = s.pass_counts() + (s.stats().n_swish_fused,)
                    if opt == "1" and args.backend != "cpu":
                        print(f"     {case.__name__} on {args.backend}: pass counts {counts}")
                    elif opt == "1":
                        got = {"bn": counts[0], "act": counts[1], "sum": counts[2], "drop": counts[3],
                               "swish": counts[4]}
                        want = dict({"swish": 0}, **want)
                        if got != want:
                            errors.append(f"pass counts {got}, expected {want}")
                        for nm in names:
                            nm, op = nm if isinstance(nm, tuple) else (nm, None)
                            if nm not in nodes:
                                errors.append(f"no node named '{nm}' (nodes: {nodes})")
                            elif op and ops[nm] != op:
                                errors.append(f"node '{nm}' is a {ops[nm]}, expected {op}")
                        n_orig = len(model.graph.node)
                        removed = want["bn"] + want["act"] + want["sum"] + want["drop"] + want["swish"]
                        if len(nodes) != n_orig - removed:
                            errors.append(f"{len(nodes)} nodes, expected {n_orig - removed}")
                    else:
                        if counts != (0, 0, 0, 0, 0) or len(nodes) != len(model.graph.node):
                            errors.append(f"graph.optimize=0 still rewrote: counts {counts}, {len(nodes)} nodes")
            if errors:
                failed += 1
                print(f"FAIL {case.__name__}: " + "; ".join(errors))
            else:
                passed += 1
                print(f"ok   {case.__name__}")
        if run_siblings(nr, tmp, args.backend):
            passed += 1
        else:
            failed += 1
        if args.backend == "cpu":
            for case in (case_nchwc, case_nchwc_stem):
                if run_nchwc(nr, tmp, case):
                    passed += 1
                else:
                    failed += 1
            for run in (run_se_fold, run_captures, run_nchwc_avgpool):
                if run(nr, tmp):
                    passed += 1
                else:
                    failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
