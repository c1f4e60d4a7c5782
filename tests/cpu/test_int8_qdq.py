#!/usr/bin/env python3
"""QDQ-quantized models on the CPU against onnxruntime on the same QDQ model.

Float models are made with onnx.helper (random weights), then quantized with
onnxruntime.quantization.quantize_static (QDQ format; a calibration reader of random inputs), per tensor and per
channel, with uint8 and int8 activations, int8 weights (and uint8 weights per tensor: the convolutions whose
weight zero point is not 0 or 128 take the direct int32 loops). Checked:
- the QDQ pass rewrote the groups: the session has QLinearConv / QLinearMatMul nodes and no float Conv or
  MatMul left (Gemm: a 1x1 QLinearConv between two Reshapes), Flatten runs on the 8-bit values, the int8 kernels ran (kernel column "oneDNN int8" / "oneDNN gemm" where built with oneDNN), and
  the int8 values between two fused convolutions stayed NHWC;
- one-layer models (DQ -> Conv / MatMul -> Q -> DQ): every output within one unit of the output scale of
  onnxruntime's (the requantization may round a value that lies at a tie the other way), and at least 97% of
  them equal;
- whole networks (strided, depthwise and 1x1 convs, a Relu and a ReLU6 between Conv and Q, a residual Add,
  MaxPool, GlobalAveragePool, Gemm, at batch 1 and, with a free batch dim, 3; a BERT-like MatMul block with the
  attention MatMuls between two activations): outputs within 4 units of the output scale of onnxruntime's, 90% within one unit; and
  the same model with the pass off (graph.qdq_fuse=0: the float Conv between DQ and Q) within the same bound;
- graph.int8_nhwc=0 (reorders inside each QLinearConv) gives the same bytes as the NHWC chain;
- the BERT-like block and the conv net quantized dynamically (quantize_dynamic: MatMulInteger on oneDNN's
  integer GEMM, ConvInteger on its int8 convolution, x_zero_point known at run time only) within 1e-4 of the
  largest output of onnxruntime's;
- QDQ Convs written by hand around what must not fuse (a Relu the quantization does not make redundant, the
  Conv's float output also a graph output, weights from a graph input, a bias scale that is not
  x_scale * w_scale) stay unfused and agree with onnxruntime without its fusions, within one unit; a Relu
  before a Q with zero point 0 fuses;
- residual Adds (DQ(q), DQ(Z) -> Add -> Q, q a fused conv's output): no Add left, the conv that wrote q runs
  them (its node named ...+add, kernel "... + residual": oneDNN's post-ops, or the direct loops for uint8
  weights); one conv + residual
  within one unit of onnxruntime's (its QLinearConv + QLinearAdd) and at least 97% equal, also with
  graph.qdq_residual=0 (the float Add) and with inputs 3x the calibration's (the saturations); ResNet-like blocks (a downsample conv written after the main branch)
  within 4 units, 90% within one, the same bytes at 1 and 2 threads and with graph.int8_nhwc=0;
- MaxPool between DQ and Q runs on the 8-bit values (no DequantizeLinear before it), and the 8-bit MaxPool
  kernel gives onnx.reference's bytes (int8, uint8; strides, pads, dilations, ceil_mode; AVX-512 on and off).

With --backend cuda (tools/gpu/run-gpu-tests.sh, stage int8) the same models and bounds on the CUDA backend: the
QLinearConv / QLinearMatMul nodes must run there (kernel "int8 cuBLASLt ..." or "int8 depthwise"), the int8
values stay NHWC between them, and the 8-bit MaxPool is checked against onnx.reference; the CPU-only checks
(oneDNN kernel names, thread counts, dynamic quantization) are left out.

    python3 tests/cpu/test_int8_qdq.py --lib build/lib/libnetrun.so [--backend cuda]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from netrun_ctypes import Netrun  # noqa: E402

RNG = np.random.default_rng(5)


class G:
    def __init__(self):
        self.nodes, self.inits = [], []

    def c(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    def n(self, op, ins, out, **kw):
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def conv(self, x, cin, cout, name, k=3, stride=1, group=1):
        w = RNG.standard_normal((cout, cin // group, k, k)) * (1.5 / np.sqrt(k * k * cin / group))
        ins = [x, self.c(name + ".w", w), self.c(name + ".b", RNG.standard_normal(cout) * 0.2)]
        return self.n("Conv", ins, name, pads=[k // 2] * 4, strides=[stride] * 2, group=group, kernel_shape=[k, k])

    def matmul(self, x, k, n, name):
        return self.n("MatMul", [x, self.c(name + ".w", RNG.standard_normal((k, n)) / np.sqrt(k))], name)

    def model(self, x_shape, y, name):  # x_shape[0] may be a name: a free batch dim
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def one_conv(k, stride, group, cin, cout, hw):
    g = G()
    return g.model([1, cin, hw, hw], g.conv("x", cin, cout, "conv", k, stride, group), "one_conv"), [1, cin, hw, hw]


def one_matmul():
    g = G()
    return g.model([2, 12, 40], g.matmul("x", 40, 24, "mm"), "one_matmul"), [2, 12, 40]


def convnet(batch=1):
    """MobileNet / ResNet pieces: stem, MaxPool, depthwise + ReLU6, 1x1 project, residual Add, GAP, Gemm.
    batch "N": a free batch dim (calibrated at 1, run at 3: the oneDNN kernels cut by images)."""
    g = G()
    y = g.n("Relu", [g.conv("x", 3, 16, "stem", 3, 2)], "stem.relu")
    y = g.n("MaxPool", [y], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    e = g.n("Clip", [g.conv(y, 16, 48, "expand", 1), g.c("lo", 0.0), g.c("hi", 6.0)], "expand.relu6")
    d = g.n("Clip", [g.conv(e, 48, 48, "dw", 3, 1, 48), g.c("lo2", 0.0), g.c("hi2", 6.0)], "dw.relu6")
    p = g.conv(d, 48, 16, "project", 1)
    r = g.n("Add", [p, y], "residual")
    z = g.n("Relu", [g.conv(r, 16, 32, "conv5", 3, 2)], "conv5.relu")
    z = g.n("Flatten", [g.n("GlobalAveragePool", [z], "gap")], "flat")
    w = RNG.standard_normal((10, 32)) * 0.3
    y = g.n("Gemm", [z, g.c("fc.w", w), g.c("fc.b", RNG.standard_normal(10) * 0.1)], "fc", transB=1)
    return g.model([batch, 3, 40, 40], y, "convnet"), [1, 3, 40, 40]


def shared_bias_net():
    """Three convs whose all-zero biases are one initializer read through Identity nodes, as torch.onnx.export
    writes a network whose BatchNorms were folded at random init: the quantizer quantizes the shared bias once,
    with the first conv's scales; every conv must still fuse (zero is a multiple of any scale)."""
    g = G()
    g.c("zero_b", np.zeros(16))
    ws = [g.c(f"c{i}.w", RNG.standard_normal((16, 16 if i else 4, 3, 3)) * 0.2) for i in range(3)]
    y = "x"
    for i in range(3):
        b = g.n("Identity", ["zero_b"], f"c{i}.b") if i else "zero_b"
        y = g.n("Relu", [g.n("Conv", [y, ws[i], b], f"c{i}", pads=[1, 1, 1, 1], kernel_shape=[3, 3])], f"c{i}.relu")
    return g.model([1, 4, 12, 12], y, "shared_bias_net"), [1, 4, 12, 12]


def downsample_b3():
    """ResNet's downsample: a strided 1x1 conv that reads every other row, at batch 3 (the CPU cuts the batch
    into bands of whole images; the rows such a conv never reads must still count in the image stride)."""
    g = G()
    y = g.n("Relu", [g.conv("x", 16, 24, "c3", 3)], "c3.relu")
    y = g.conv(y, 24, 32, "down", 1, 2)
    return g.model(["N", 16, 14, 14], y, "downsample_b3"), [1, 16, 14, 14]


def one_residual():
    """conv(x) + conv1x1(x): the Add joins the 1x1 conv (written second), the 3x3 conv's output is Z."""
    g = G()
    y = g.n("Add", [g.conv("x", 8, 16, "c3", 3), g.conv("x", 8, 16, "c1", 1)], "add")
    return g.model([1, 8, 10, 10], y, "one_residual"), [1, 8, 10, 10]


def residual_net():
    """Two ResNet blocks: conv -> conv + skip -> Relu, the second block's skip a strided 1x1 conv written after
    the main branch (as torchvision exports the downsample)."""
    g = G()
    y = g.n("Relu", [g.conv("x", 8, 16, "stem", 3)], "stem.relu")
    y = g.n("MaxPool", [y], "pool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    y = g.n("Relu", [g.conv(y, 16, 16, "b0", 1)], "b0.relu")
    a = g.n("Relu", [g.conv(y, 16, 16, "b1.c1", 3)], "b1.c1.relu")
    y = g.n("Relu", [g.n("Add", [g.conv(a, 16, 16, "b1.c2", 3), y], "b1.add")], "b1.relu")
    a = g.n("Relu", [g.conv(y, 16, 24, "b2.c1", 3, 2)], "b2.c1.relu")
    b = g.conv(a, 24, 24, "b2.c2", 1)
    y = g.n("Relu", [g.n("Add", [b, g.conv(y, 16, 24, "b2.down", 1, 2)], "b2.add")], "b2.relu")
    return g.model([1, 8, 14, 14], y, "residual_net"), [1, 8, 14, 14]


def igemm_net(batch="N"):
    """3x3 and strided 1x1 convs on 32 and 64 channels (the CUDA implicit-GEMM kernel's convs: patches read in
    place), 11x11 and 6x6 planes (pixel counts that leave partial 128-row tiles), a residual Add, 96 and 40 output
    channels (partial 128-channel tiles), at batch 3."""
    g = G()
    y = g.n("Relu", [g.conv("x", 8, 32, "stem", 3)], "stem.relu")
    y = g.n("Relu", [g.conv(y, 32, 32, "c1", 3)], "c1.relu")
    a = g.n("Relu", [g.conv(y, 32, 64, "c2", 3, 2)], "c2.relu")
    b = g.conv(a, 64, 64, "c3", 3)
    y = g.n("Relu", [g.n("Add", [b, g.conv(y, 32, 64, "down", 1, 2)], "add")], "add.relu")
    y = g.n("Relu", [g.conv(y, 64, 96, "c4", 3)], "c4.relu")
    y = g.conv(y, 96, 40, "c5", 3, 2)
    return g.model([batch, 8, 11, 11], y, "igemm_net"), [1, 8, 11, 11]


def bert_block():
    """One encoder layer's MatMuls: Q/K/V projections, scores = Q K^T, softmax, context = P V, FFN with Relu."""
    g = G()
    s, d = 16, 32
    q, k, v = (g.matmul("x", d, d, n) for n in ("q", "k", "v"))
    kt = g.n("Transpose", [k], "kt", perm=[0, 2, 1])
    sc = g.n("Mul", [g.n("MatMul", [q, kt], "scores"), g.c("scale", 1.0 / np.sqrt(d))], "scaled")
    ctx = g.n("MatMul", [g.n("Softmax", [sc], "probs", axis=-1), v], "context")
    h = g.n("Add", [g.matmul(ctx, d, d, "out"), "x"], "res1")
    f = g.n("Relu", [g.n("Add", [g.matmul(h, d, 64, "ffn1"), g.c("ffn1.b", RNG.standard_normal(64) * 0.1)], "ffn1.add")],
            "ffn1.relu")
    y = g.n("Add", [g.matmul(f, 64, d, "ffn2"), h], "res2")
    return g.model([1, s, d], y, "bert_block"), [1, s, d]


def hand_qdq(kind):
    """A QDQ Conv written by hand around what must not fuse (the float ops then give the answer):
    relu_mid: a Relu between Conv and Q whose zero point is mid-range (the Relu clamps where Q does not);
    shared: the Conv's float output also read by a graph output; dyn_w: weights from a graph input through Q/DQ;
    bias_scale: an int32 bias whose scale is not x_scale * w_scale; fused: the plain group (fuses); relu_low: a
    Relu before a Q whose zero point is 0 (uint8: Q's saturation is the Relu, so it fuses)."""
    g = G()
    x = g.n("QuantizeLinear", ["x", g.c("xs", 0.05), "xz"], "xq")
    g.inits.append(numpy_helper.from_array(np.array(10, np.uint8), "xz"))
    xd = g.n("DequantizeLinear", [x, "xs", "xz"], "xd")
    wq = RNG.integers(-60, 60, (8, 4, 3, 3)).astype(np.int8)
    g.inits.append(numpy_helper.from_array(wq, "wq"))
    ws = g.c("ws", RNG.uniform(0.005, 0.02, 8))
    g.inits.append(numpy_helper.from_array(np.zeros(8, np.int8), "wz"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])]
    if kind == "dyn_w":
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 4, 3, 3]))
        w = g.n("DequantizeLinear", [g.n("QuantizeLinear", ["w", g.c("wst", 0.01), "wzt"], "wq2"), "wst", "wzt"], "wd")
        g.inits.append(numpy_helper.from_array(np.array(0, np.int8), "wzt"))
    else:
        w = g.n("DequantizeLinear", ["wq", ws, "wz"], "wd", axis=0)
    bs = (np.float32(0.05) * numpy_helper.to_array(g.inits[[i.name for i in g.inits].index("ws")])).astype(np.float32)
    if kind == "bias_scale":
        bs = bs * np.float32(1.5)
    g.inits.append(numpy_helper.from_array(RNG.integers(-500, 500, 8).astype(np.int32), "bq"))
    b = g.n("DequantizeLinear", ["bq", g.c("bs", bs)], "bd", axis=0)
    y = g.n("Conv", [xd, w, b], "conv", pads=[1, 1, 1, 1])
    if kind in ("relu_mid", "relu_low"):
        y = g.n("Relu", [y], "relu")
    q = g.n("QuantizeLinear", [y, g.c("ys", 0.1), "yz"], "yq")
    g.inits.append(numpy_helper.from_array(np.array(0 if kind == "relu_low" else 128, np.uint8), "yz"))
    out = g.n("DequantizeLinear", [q, "ys", "yz"], "y")
    outs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]
    if kind == "shared":
        outs.append(helper.make_tensor_value_info("conv", TensorProto.FLOAT, None))
    gr = helper.make_graph(g.nodes, "hand_" + kind, inputs, outs, g.inits)
    return helper.make_model(gr, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


class Reader(CalibrationDataReader):
    def __init__(self, shape, n=6):
        rng = np.random.default_rng(1)
        self.it = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.it, None)


def quantize(m, shape, tmp, per_channel, act, weight):
    src, dst = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
    onnx.save(m, src)
    quantize_static(src, dst, Reader(shape), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=act, weight_type=weight)
    return dst


def ort_run(path, x):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def out_scale(path):
    """The scale of the last DequantizeLinear (the graph output's quantization step)."""
    m = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for n in reversed(m.graph.node):
        if n.op_type == "DequantizeLinear" and n.output[0] == m.graph.output[0].name:
            return float(inits[n.input[1]])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    ap.add_argument("--backend", default="cpu", help="cpu (default) or cuda: where the int8 nodes must run")
    args = ap.parse_args()
    nr = Netrun(args.lib)
    be = args.backend
    on_cpu = be == "cpu"
    bes = be if on_cpu else be + ",cpu"  # the CPU takes what the device refuses (and says so)
    failures, checks = [], 0

    def check(cond, what):
        nonlocal checks
        checks += 1
        if not cond:
            failures.append(what)
            print("FAIL", what)

    def run(path, x, threads=2, **opts):
        with nr.session(path, backends=bes, threads=threads, options={k: str(v) for k, v in opts.items()}) as s:
            return s.run({"x": x})[0], s.nodes()

    def fusable(weight):  # the CUDA kernels take symmetric weights only (uint8 ones quantize with a zero point)
        return on_cpu or weight == QuantType.QInt8

    def int8_kernels_ok(nodes, tag):
        q = [n for n in nodes if n[1] in ("QLinearConv", "QLinearMatMul")]
        check(all(n[2] == be for n in q), f"{tag}: int8 nodes not all on {be}: {[n[:3] for n in q]}")
        if not on_cpu:
            check(all(n[3].startswith("int8 ") for n in q), f"{tag}: kernels {[n[3] for n in q]}")

    configs = [(True, QuantType.QInt8, QuantType.QInt8), (False, QuantType.QInt8, QuantType.QInt8),
               (True, QuantType.QUInt8, QuantType.QInt8), (False, QuantType.QUInt8, QuantType.QInt8),
               (False, QuantType.QUInt8, QuantType.QUInt8)]
    cases = [("conv3x3", lambda: one_conv(3, 1, 1, 8, 24, 12)), ("conv3x3s2", lambda: one_conv(3, 2, 1, 5, 16, 17)),
             ("dw3x3", lambda: one_conv(3, 1, 32, 32, 32, 9)), ("conv1x1", lambda: one_conv(1, 1, 1, 40, 24, 7)),
             ("matmul", lambda: (one_matmul())), ("convnet", convnet), ("bert_block", bert_block),
             ("convnet_b3", lambda: convnet("N")), ("shared_bias", shared_bias_net), ("downsample_b3", downsample_b3),
             ("igemm_b3", igemm_net)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in cases:
            m, shape = make()
            for per_channel, act, weight in configs:
                tag = f"{name} per_channel={per_channel} act={act.name} w={weight.name}"
                path = quantize(m, shape, tmp, per_channel, act, weight)
                x = RNG.standard_normal([3] + shape[1:] if name.endswith("_b3") else shape).astype(np.float32)
                ref = ort_run(path, x)
                scale = out_scale(path)
                if scale is None:  # the output is a float op after the last DQ (bert_block's residual Add)
                    scale = float(np.abs(ref).max()) / 100
                # the CUDA implicit-GEMM kernel takes only grids that fill the GPU: on these small shapes, force it
                y, nodes = run(path, x, **({"cuda.int8_igemm": "always"} if name == "igemm_b3" and not on_cpu else {}))
                ops = [n[1] for n in nodes]
                kernels = " | ".join(n[3] for n in nodes if n[1] in ("QLinearConv", "QLinearMatMul"))
                conv = name not in ("matmul", "bert_block")
                if fusable(weight):
                    check(("QLinearConv" if conv else "QLinearMatMul") in ops, f"{tag}: nothing fused ({sorted(set(ops))})")
                    check(not any(o in ("Conv", "MatMul") for o in ops) or name == "bert_block",
                          f"{tag}: a float Conv/MatMul left ({sorted(set(ops))})")
                    int8_kernels_ok(nodes, tag)
                else:  # asymmetric uint8 weights stay float there; a tensor whose zero point is 128 may still fuse
                    int8_kernels_ok(nodes, tag)
                if name == "bert_block" and fusable(weight):  # the FFN and projection MatMuls at least
                    check(ops.count("QLinearMatMul") >= 5, f"{tag}: {ops.count('QLinearMatMul')} QLinearMatMul")
                if conv and weight == QuantType.QInt8 and on_cpu:
                    check("oneDNN int8" in kernels or "direct" in kernels, f"{tag}: kernels {kernels}")
                diff = np.abs(y.astype(np.float64) - ref) / scale
                one_layer = name not in ("convnet", "bert_block", "convnet_b3", "shared_bias", "downsample_b3", "igemm_b3")
                if name == "igemm_b3" and not on_cpu and fusable(weight) and act == QuantType.QInt8:
                    check(kernels.count("implicit GEMM") >= 5, f"{tag}: implicit GEMM on {kernels.count('implicit GEMM')} "
                          f"convs: {kernels}")
                bound, share = (1.01, 0.97) if one_layer else (4.01, 0.90)
                within = float(np.mean(diff <= (0.01 if one_layer else 1.01)))
                print(f"{tag}: max {diff.max():.2f} units of the output scale, {within:.1%} "
                      f"{'equal' if one_layer else 'within one unit'}")
                check(diff.max() <= bound and within >= share, f"{tag}: max {diff.max():.2f} units, {within:.1%}")
                if name.startswith("convnet") and fusable(weight):  # Flatten, MaxPool, Add on 8 bits: Q only at the input, GAP
                    check(ops.count("QuantizeLinear") <= 2, f"{tag}: {ops.count('QuantizeLinear')} QuantizeLinear: {ops}")
                    check("Add" not in ops and "MaxPool" in ops, f"{tag}: the residual Add or MaxPool left: {ops}")
                    check("NHWC in" in kernels and "NHWC out" in kernels, f"{tag}: no NHWC chain: {kernels}")
                    y2, _ = run(path, x, **{"graph.int8_nhwc": 0})
                    check(np.array_equal(y, y2), f"{tag}: graph.int8_nhwc=0 differs")
                    y1, _ = run(path, x, threads=1)
                    check(np.array_equal(y, y1), f"{tag}: 1 thread differs from 2")
                if not one_layer and fusable(weight):
                    yu, nodes_u = run(path, x, **{"graph.qdq_fuse": 0})
                    check("QLinearConv" not in [n[1] for n in nodes_u], f"{tag}: graph.qdq_fuse=0 still fused")
                    du = np.abs(yu.astype(np.float64) - ref) / scale
                    print(f"{tag}: unfused max {du.max():.2f} units")
                    check(du.max() <= bound, f"{tag}: unfused max {du.max():.2f} units")
    # dynamic quantization (quantize_dynamic: DynamicQuantizeLinear -> MatMulInteger -> float scales): the
    # integer products are exact, so within float rounding of onnxruntime's (the CPU's kernels)
    from onnxruntime.quantization import quantize_dynamic
    if on_cpu:
        with tempfile.TemporaryDirectory() as tmp:
            m, shape = bert_block()
            src, dst = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "dyn.onnx")
            onnx.save(m, src)
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
            x = RNG.standard_normal(shape).astype(np.float32)
            ref = ort_run(dst, x)
            y, nodes = run(dst, x)
            kernels = [n[3] for n in nodes if n[1] == "MatMulInteger"]
            check(len(kernels) >= 5, f"dynamic: {len(kernels)} MatMulInteger")
            check(all("oneDNN gemm" in k for k in kernels) or not kernels, f"dynamic: kernels {kernels}")
            err = float(np.abs(y - ref).max() / np.abs(ref).max())
            print(f"dynamic quantization (MatMulInteger): max error {err:.2e} of the largest output")
            check(err < 1e-4, f"dynamic: max error {err:.2e}")
            m, shape = convnet()  # ConvInteger, x_zero_point from DynamicQuantizeLinear at run time
            onnx.save(m, src)
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, op_types_to_quantize=["Conv"])
            x = RNG.standard_normal(shape).astype(np.float32)
            ref = ort_run(dst, x)
            y, nodes = run(dst, x)
            kernels = [n[3] for n in nodes if n[1] == "ConvInteger"]
            check(len(kernels) >= 4 and all("oneDNN int8" in k for k in kernels), f"dynamic conv: kernels {kernels}")
            err = float(np.abs(y - ref).max() / np.abs(ref).max())
            print(f"dynamic quantization (ConvInteger): max error {err:.2e} of the largest output")
            check(err < 1e-4, f"dynamic conv: max error {err:.2e}")
    # groups that must stay unfused (and still be right), against onnxruntime with its fusions off (the float
    # ops as written): within one unit of y_scale (the float Conv's sum order)
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("relu_mid", "shared", "dyn_w", "bias_scale", "fused", "relu_low"):
            path = os.path.join(tmp, kind + ".onnx")
            onnx.save(hand_qdq(kind), path)
            feeds = {"x": RNG.standard_normal((1, 4, 9, 9)).astype(np.float32) * 3}
            if kind == "dyn_w":
                feeds["w"] = RNG.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.log_severity_level = 3
            ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
            with nr.session(path, backends=bes, threads=2, options={}) as s:
                got = s.run(feeds)
                ops = [n[1] for n in s.nodes()]
            want_fused = kind in ("fused", "relu_low")  # (int8 weights: fusable on every backend)
            check(("QLinearConv" in ops) == want_fused, f"hand {kind}: fused {('QLinearConv' in ops)}, ops {ops}")
            d = np.abs(got[0].astype(np.float64) - ref[0]) / 0.1
            print(f"hand {kind}: {'fused' if 'QLinearConv' in ops else 'left as is'}, max {d.max():.2f} units")
            check(d.max() <= 1.01, f"hand {kind}: max {d.max():.2f} units of y_scale")
            if kind == "shared":
                check(np.allclose(got[1], ref[1], rtol=1e-4, atol=1e-4), "hand shared: the float Conv output differs")
    # residual Adds joined to the conv that writes one of their inputs, MaxPool on 8 bits
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("one_residual", one_residual), ("residual_net", residual_net)):
            m, shape = make()
            for per_channel, act, weight in configs:
                tag = f"{name} per_channel={per_channel} act={act.name} w={weight.name}"
                path = quantize(m, shape, tmp, per_channel, act, weight)
                x = RNG.standard_normal(shape).astype(np.float32)
                ref, scale = ort_run(path, x), out_scale(path)
                # the CUDA implicit-GEMM kernel takes only grids that fill the GPU: on these small shapes, force it
                y, nodes = run(path, x, **({"cuda.int8_igemm": "always"} if name == "igemm_b3" and not on_cpu else {}))
                ops = [n[1] for n in nodes]
                res = [n for n in nodes if n[1] == "QLinearConv" and n[0].endswith("add") and "+ residual" in n[3]]
                if fusable(weight):
                    check("Add" not in ops and len(res) == ops.count("Add") + (1 if name == "one_residual" else 2),
                          f"{tag}: residual not joined: {[n[:2] for n in nodes]}")
                    int8_kernels_ok(nodes, tag)
                want = ("oneDNN int8" if weight == QuantType.QInt8 else "direct") if on_cpu else "int8 "
                check(all(want in n[3] for n in res), f"{tag}: residual kernels {[n[3] for n in res]}")
                diff = np.abs(y.astype(np.float64) - ref) / scale
                one = name == "one_residual"
                bound, share = (1.01, 0.97) if one else (4.01, 0.90)
                within = float(np.mean(diff <= (0.01 if one else 1.01)))
                yu, nodes_u = run(path, x, **{"graph.qdq_residual": 0})
                du = np.abs(yu.astype(np.float64) - ref) / scale
                print(f"{tag}: max {diff.max():.2f} units of the output scale, {within:.1%} "
                      f"{'equal' if one else 'within one unit'}; residual Add unfused: max {du.max():.2f}")
                check(diff.max() <= bound and within >= share, f"{tag}: max {diff.max():.2f} units, {within:.1%}")
                check(("Add" in [n[1] for n in nodes_u] or not fusable(weight)) and du.max() <= bound,
                      f"{tag}: graph.qdq_residual=0: max {du.max():.2f}")
                if one:  # inputs 3x the calibration's: the conv's own Q and the Add's saturate, as unfused
                    big = x * 3
                    d3 = np.abs(run(path, big)[0].astype(np.float64) - ort_run(path, big)) / scale
                    w3 = float(np.mean(d3 <= 0.01))
                    print(f"{tag}: inputs x3: max {d3.max():.2f} units, {w3:.1%} equal")
                    check(d3.max() <= 1.01 and w3 >= 0.97, f"{tag}: inputs x3: max {d3.max():.2f} units, {w3:.1%}")
                if not one and fusable(weight):
                    check("MaxPool" in ops and ops.count("DequantizeLinear") == 1,
                          f"{tag}: MaxPool not on 8 bits: {ops}")
                    y2, _ = run(path, x, **{"graph.int8_nhwc": 0})
                    check(np.array_equal(y, y2), f"{tag}: graph.int8_nhwc=0 differs")
                    y1, _ = run(path, x, threads=1)
                    check(np.array_equal(y, y1), f"{tag}: 1 thread differs from 2")
                    # b1's residual output read NHWC by b2's first conv (the kernel column is cut at 63 characters)
                    b2 = [n[3] for n in nodes if n[0].startswith("b2.c1+")]
                    check(b2 and ("NHWC in" in b2[0] or (weight != QuantType.QInt8 and on_cpu)),
                          f"{tag}: no NHWC chain through a residual: {b2}")
    # the 8-bit MaxPool kernel against onnx.reference: strides, dilations, pads, ceil_mode, with its AVX-512
    # path and without (cpu.pool_avx512=0)
    from onnx.reference import ReferenceEvaluator
    with tempfile.TemporaryDirectory() as tmp:
        geoms = [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                 dict(kernel_shape=[2, 2], strides=[1, 1]),
                 dict(kernel_shape=[3, 2], strides=[3, 2], pads=[0, 1, 2, 0], ceil_mode=1),
                 dict(kernel_shape=[3, 3], strides=[1, 2], dilations=[2, 2], pads=[2, 2, 2, 2]),
                 dict(kernel_shape=[5, 5], strides=[4, 4], pads=[2, 2, 2, 2])]
        for t, np_t in ((TensorProto.INT8, np.int8), (TensorProto.UINT8, np.uint8)):
            for k, attrs in enumerate(geoms):
                nd = helper.make_node("MaxPool", ["x"], ["y"], **attrs)
                gr = helper.make_graph([nd], "pool", [helper.make_tensor_value_info("x", t, [2, 5, 23, 37])],
                                       [helper.make_tensor_value_info("y", t, None)])
                path = os.path.join(tmp, f"pool{k}.onnx")
                onnx.save(helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
                info = np.iinfo(np_t)
                x = RNG.integers(info.min, info.max + 1, (2, 5, 23, 37)).astype(np_t)
                fgr = helper.make_graph([nd], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
                fm = helper.make_model(fgr, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
                # onnx.reference pads integers with NaN (fails): its float MaxPool on the same (exact) values
                want = ReferenceEvaluator(fm).run(None, {"x": x.astype(np.float32)})[0].astype(np_t)
                for opt in ({}, {"cpu.pool_avx512": "0"}) if on_cpu else ({},):
                    with nr.session(path, backends=bes, threads=2, options=opt) as sess:
                        got = sess.run({"x": x})[0]
                        pool_be = [n[2] for n in sess.nodes() if n[1] == "MaxPool"]
                    check(pool_be == [be], f"MaxPool {np.dtype(np_t).name}: ran on {pool_be}")
                    check(got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want),
                          f"MaxPool {np.dtype(np_t).name} {attrs} {opt}: differs from onnx.reference")
    print(f"{checks - len(failures)}/{checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
