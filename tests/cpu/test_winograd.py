#!/usr/bin/env python3
"""cpu.winograd: 3x3 stride-1 convolutions on oneDNN's Winograd kernels give onnxruntime's outputs (within the
suite's 1e-4 of the largest output) at batch 1 and 2, 1 and 2 threads, with a fused bias + Relu and a fused
residual sum; the kernel column names the Winograd implementation when it is on (and oneDNN is built in),
never when it is off.
Then the CPU's own Winograd kernel (conv_wino_blk.c, cpu.conv_wino) on nChw16c X and Y against onnxruntime, on
and off, at batch 1-3 and 1-3 threads: its one-pass mode (small weights) and its banded one (one band or
several), odd planes (tiles whose last row or column falls outside Y), a lone last block of output channels,
a plane of one row, bias or none, a fused residual sum, Relu / Clip / SiLU / LeakyRelu. With AVX-512F the kernel
column must name it exactly when it is on (with cpu.wino_min_tiles=0: the few-tile cases would otherwise run the
direct kernel, which tests/cpu/test_blocked_kernels.py covers).

    python3 tests/cpu/test_winograd.py --lib build/lib/libnetrun.so
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

RNG = np.random.default_rng(7)


def model(batch):
    """x [B,64,20,20] -> conv3x3 64 + Relu -> conv3x3 64 + Add(a) + Relu -> conv3x3 stride 2 (direct) -> y;
    plus an odd shape (48 -> 40 channels on 9x11) that oneDNN may or may not take on Winograd. The first conv reads
    plain X and so runs oneDNN's kernel: 64 input channels, enough for Winograd to pay (conv_dnnl.c's wino_pays;
    tests/cpu/test_conv_algo.py checks that rule)."""
    inits, nodes = [], []

    def c(name, arr):
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    def conv(x, cin, cout, name, stride=1):
        w = RNG.standard_normal((cout, cin, 3, 3)) * (1.0 / np.sqrt(9 * cin))
        nodes.append(helper.make_node("Conv", [x, c(name + ".w", w), c(name + ".b", RNG.standard_normal(cout) * 0.1)],
                                      [name], name=name, pads=[1, 1, 1, 1], strides=[stride, stride]))
        return name

    a = conv("x", 64, 64, "a")
    nodes.append(helper.make_node("Relu", [a], ["a.relu"], name="a.relu"))
    b = conv("a.relu", 64, 64, "b")
    nodes.append(helper.make_node("Add", [b, "a.relu"], ["b.add"], name="b.add"))
    nodes.append(helper.make_node("Relu", ["b.add"], ["b.relu"], name="b.relu"))
    conv("b.relu", 64, 64, "y", stride=2)
    conv("z_in", 48, 40, "z")
    g = helper.make_graph(nodes, "winograd",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 64, 20, 20]),
                           helper.make_tensor_value_info("z_in", TensorProto.FLOAT, [batch, 48, 9, 11])],
                          [helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
                           for n in ("y", "z")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


OWN = [  # (in channels, out channels, H, W, activation, bias, residual): conv_wino_blk.c's cases
    (16, 32, 14, 14, "relu", True, False),  # one pass (U of 128 KB), even plane
    (32, 48, 13, 11, None, True, True),  # odd plane; blocks 2 + 1; Z
    (64, 64, 56, 56, "relu", True, False),  # ResNet's layer1: one pass, many tasks
    (128, 160, 9, 7, "silu", False, False),  # U of 1.3 MB: banded; SiLU after the store
    (256, 32, 28, 28, "relu6", True, True),  # banded: 196 tiles in 5 bands of up to 48 (batch 2: 9 of up to 48); Z
    (512, 32, 3, 3, "leaky", True, False),  # 4 tiles, one band
    (16, 16, 1, 3, None, True, False),  # one row: every tile's second row outside Y, the last column too
]


def report(tag, errors, note=""):
    """Prints one case's line; 1 when it failed."""
    if errors:
        print(f"FAIL {tag}: " + "; ".join(errors))
        return 1
    print(f"ok   {tag}{note}")
    return 0


def own_model(cin, cout, h, w, act, bias, residual, batch):
    """x -> Conv 3x3 + Relu (nChw16c X) -> e: Conv 3x3 cin -> cout (+ Z) (+ act) -> depthwise Conv (reads
    nChw16c, so e writes it)."""
    inits, nodes = [], []

    def c(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    def n(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def conv(x, ci, co, name, group=1, with_bias=True):
        wt = RNG.standard_normal((co, ci // group, 3, 3)) * (1.0 / np.sqrt(9 * ci / group))
        ins = [x, c(name + ".w", wt)] + ([c(name + ".b", RNG.standard_normal(co) * 0.3)] if with_bias else [])
        return n("Conv", ins, name, pads=[1, 1, 1, 1], group=group)

    y = conv(n("Relu", [conv("x", cin, cin, "a")], "a.relu"), cin, cout, "e", with_bias=bias)
    if residual:
        y = n("Add", [y, n("Relu", [conv("x2", 16, cout, "z")], "z.relu")], "e.add")
    if act == "relu":
        y = n("Relu", [y], "e.relu")
    elif act == "relu6":
        y = n("Clip", [y, c("lo", 0), c("hi", 6)], "e.clip")
    elif act == "silu":
        y = n("Mul", [y, n("Sigmoid", [y], "e.sig")], "e.silu")
    elif act == "leaky":
        y = n("LeakyRelu", [y], "e.leaky", alpha=0.1)
    conv(y, cout, cout, "dw", group=cout)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, h, w])]
    if residual:
        ins.append(helper.make_tensor_value_info("x2", TensorProto.FLOAT, [batch, 16, h, w]))
    g = helper.make_graph(nodes, "own_wino", ins,
                          [helper.make_value_info("dw", helper.make_tensor_type_proto(TensorProto.FLOAT, None))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def own_cases(nr, tmp):
    """conv_wino_blk.c against onnxruntime; returns the number of failed cases."""
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    avx512 = " avx512f" in flags
    failed = 0
    for params in OWN:
        cin, cout, h, w, act, bias, residual = params
        for batch in (1, 2, 3):
            m = own_model(*params, batch)
            path = os.path.join(tmp, "own.onnx")
            onnx.save(m, path)
            feeds = {"x": RNG.standard_normal((batch, cin, h, w)).astype(np.float32)}
            if residual:
                feeds["x2"] = RNG.standard_normal((batch, 16, h, w)).astype(np.float32)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            ref = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            errors = []
            for on in ("1", "0"):
                for threads in (1, 2, 3):
                    with nr.session(path, backends="cpu", threads=threads, options={"cpu.conv_wino": on, "cpu.wino_min_tiles": "0"}) as s:
                        out = s.run(feeds)[0]
                        d = float(np.max(np.abs(ref - out)))
                        if not d <= 1e-4 * max(1.0, float(np.max(np.abs(ref)))):
                            errors.append(f"cpu.conv_wino={on} threads={threads}: max abs diff {d:.2e}")
                        kernels = {nm: k for nm, _, _, k in s.nodes()}
                    own = [nm for nm, k in kernels.items() if "Winograd F(2x2) avx512" in k]
                    onednn = any("oneDNN" in k for k in kernels.values())  # the nChw16c pass needs oneDNN
                    want = ["e"] if on == "1" and avx512 and onednn else []
                    if [nm.split("+")[0] for nm in own] != want:
                        errors.append(f"cpu.conv_wino={on} threads={threads}: own Winograd on {own}, expected {want}")
            failed += report(f"own Winograd {params} batch {batch}", errors)
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        failed += own_cases(nr, tmp)
        for batch in (1, 2):
            m = model(batch)
            path = os.path.join(tmp, f"wino{batch}.onnx")
            onnx.save(m, path)
            feeds = {"x": RNG.standard_normal((batch, 64, 20, 20)).astype(np.float32),
                     "z_in": RNG.standard_normal((batch, 48, 9, 11)).astype(np.float32)}
            ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
            for on in ("1", "0"):
                for threads in (1, 2):
                    errors = []
                    with nr.session(path, backends="cpu", threads=threads, options={"cpu.winograd": on}) as s:
                        outs = s.run(feeds)
                        for name, r, o in zip(("y", "z"), ref, outs):
                            d = float(np.max(np.abs(r - o)))
                            if not d <= 1e-4 * max(1.0, float(np.max(np.abs(r)))):
                                errors.append(f"{name}: max abs diff {d:.2e}")
                        kernels = {n[0]: n[3] for n in s.nodes()}
                    wino = [n for n, k in kernels.items() if "wino" in k.lower()]
                    onednn = any("oneDNN" in k for k in kernels.values())
                    if on == "0" and wino:
                        errors.append(f"cpu.winograd=0 but Winograd kernels on {wino}")
                    if on == "1" and onednn:
                        # the two stride-1 3x3 convs of the chain; never the stride-2 one
                        if not any(n.startswith("a") for n in wino) or not any(n.startswith("b") for n in wino):
                            errors.append(f"cpu.winograd=1: stride-1 convs not on Winograd: {kernels}")
                        if any(n.startswith("y") for n in wino):
                            errors.append(f"the stride-2 conv took Winograd: {kernels}")
                    failed += report(f"batch {batch} threads {threads} cpu.winograd={on}", errors,
                                     "" if onednn else " (no oneDNN: direct paths only)")
    print("failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
