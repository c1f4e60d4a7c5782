#!/usr/bin/env python3
"""Convolutions on channel counts that are no multiple of 16 (MnasNet's, MobileNet's, EfficientNet's 24, 40, 72,
120 and 3 / 5), against onnxruntime (within 1e-4 of the largest output), at 1 and 2 threads:
- depthwise 3x3 and 5x5, strides 1 and 2, batch 1 and 8, rows 7-70 wide (1-4 vectors of 16 columns and a partial
  last one; row counts that leave rows over from the kernels' multi-row tiles), with Relu, Relu6 (Clip) or
  HardSwish fused, and a fused residual sum at stride 1; each with the row-stationary kernel of
  conv_depthwise.c reading X in place at stride 1 (default), on the zero-padded copy (cpu.dw_direct=0), and
  with cpu.dw_rows=0 (the per-row tiles); asymmetric and wide pads;
- group-1 convs between such tensors (MnasNet's inverted residual blocks: 24 -> 72 1x1, 72 -> 72 depthwise,
  72 -> 24 1x1 + residual; 40 -> 120 -> 40; 3 -> 24 and 5 -> 40 3x3 stems with strides 1 and 2), batch 1 and 8.

    python3 tests/cpu/test_odd_channels.py --lib build/lib/libnetrun.so
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

RNG = np.random.default_rng(11)


def model(nodes, x_shape, inits):
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


def conv_w(m, c, k):
    return (RNG.standard_normal((m, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)


def bias(m):
    return (RNG.standard_normal(m) * 0.3).astype(np.float32)


def act_nodes(act, x, y):
    if act == "relu":
        return [helper.make_node("Relu", [x], [y])]
    if act == "relu6":
        return [helper.make_node("Clip", [x, "lo", "hi"], [y])]
    return [helper.make_node("HardSwish", [x], [y])]


CLIP_INITS = [numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]


class Checker:
    def __init__(self, nr, tmp):
        self.nr, self.tmp = nr, tmp
        self.failed = self.checked = 0

    def check(self, tag, m, x, options_list=(None,)):
        path = os.path.join(self.tmp, "m.onnx")
        onnx.save(m, path)
        ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        for options in options_list:
            for threads in (1, 2):
                with self.nr.session(path, backends="cpu", threads=threads, options=options) as s:
                    y = s.run({"x": x})[0]
                    kernels = "; ".join(f"{nm.split('+')[0]}: {k}" for nm, _, _, k in s.nodes())
                self.checked += 1
                full = f"{tag} threads {threads}" + (f" {options}" if options else "")
                err = ""
                if y.shape != ref.shape:
                    err = f"shape {y.shape} vs onnxruntime's {ref.shape}"
                else:
                    d = float(np.max(np.abs(y.astype(np.float64) - ref.astype(np.float64))))
                    scale = max(1.0, float(np.max(np.abs(ref))))
                    if not d <= 1e-4 * scale:
                        err = f"max abs diff {d:.2e} vs onnxruntime"
                if err:
                    self.failed += 1
                    print(f"FAIL {full}: {err} ({kernels})")
                else:
                    print(f"ok   {full}: {kernels}")


def dw_cases(c):
    sizes = [56, 28, 33, 17, 70, 14, 30, 61]
    i = 0
    for ch in (3, 5, 24, 40, 72, 120):
        for batch in (1, 8):
            for k, stride in ((3, 1), (3, 2), (5, 1), (5, 2)):
                hw = sizes[i % len(sizes)]
                act = ("relu", "relu6", "hswish")[i % 3]
                res = stride == 1 and i % 2 == 0
                i += 1
                if batch == 8 and ch * hw * hw > 120 * 33 * 33:
                    hw = 28  # keep the test short
                inits = [numpy_helper.from_array((RNG.standard_normal((ch, 1, k, k)) / k).astype(np.float32), "w"),
                         numpy_helper.from_array(bias(ch), "b")] + (CLIP_INITS if act == "relu6" else [])
                nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="dw", group=ch, pads=[k // 2] * 4,
                                          strides=[stride] * 2)]
                last = "c"
                if res:
                    nodes.append(helper.make_node("Add", ["c", "x"], ["s"]))
                    last = "s"
                nodes += act_nodes(act, last, "y")
                mo = model(nodes, (batch, ch, hw, hw), inits)
                ow = (hw + 2 * (k // 2) - k) // stride + 1
                x = (RNG.standard_normal((batch, ch, hw, hw)) * 2).astype(np.float32)
                c.check(f"depthwise {k}x{k}/{stride} {ch} ch {hw}x{hw} ({ow} wide) batch {batch} {act}"
                        f"{' + residual' if res else ''}", mo, x,
                        options_list=(None, {"cpu.dw_direct": "0"}, {"cpu.dw_rows": "0"}))


def dw_pad_cases(c):
    # asymmetric pads, pads wider than half the kernel, no pads: the in-place kernel's column masks and skipped
    # rows at every edge
    for ch, hw, k, stride, pads in [(24, 40, 3, 1, [0, 2, 1, 0]), (40, 33, 5, 1, [4, 0, 0, 3]),
                                    (72, 36, 3, 2, [2, 1, 0, 2]), (120, 20, 5, 1, [0, 0, 0, 0]),
                                    (5, 50, 5, 2, [3, 4, 1, 0])]:
        inits = [numpy_helper.from_array((RNG.standard_normal((ch, 1, k, k)) / k).astype(np.float32), "w")]
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="dw", group=ch, pads=pads, strides=[stride] * 2)]
        mo = model(nodes, (2, ch, hw, hw), inits)
        x = RNG.standard_normal((2, ch, hw, hw)).astype(np.float32)
        c.check(f"depthwise {k}x{k}/{stride} {ch} ch {hw}x{hw} pads {pads} batch 2", mo, x,
                options_list=(None, {"cpu.dw_direct": "0"}, {"cpu.dw_rows": "0"}))


def block(nodes, inits, x, cin, mid, hw_in, k, stride, tag):
    """MnasNet's inverted residual: 1x1 cin -> mid + Relu, k x k depthwise + Relu, 1x1 mid -> cin (+ x)."""
    for name, shape in ((f"{tag}e", (mid, cin, 1, 1)), (f"{tag}d", (mid, 1, k, k)), (f"{tag}p", (cin, mid, 1, 1))):
        inits.append(numpy_helper.from_array(conv_w(*shape[:2], shape[2]), f"w_{name}"))
        inits.append(numpy_helper.from_array(bias(shape[0]), f"b_{name}"))
    nodes += [helper.make_node("Conv", [x, f"w_{tag}e", f"b_{tag}e"], [f"{tag}e"]),
              helper.make_node("Relu", [f"{tag}e"], [f"{tag}er"]),
              helper.make_node("Conv", [f"{tag}er", f"w_{tag}d", f"b_{tag}d"], [f"{tag}d"], group=mid,
                               pads=[k // 2] * 4, strides=[stride] * 2),
              helper.make_node("Relu", [f"{tag}d"], [f"{tag}dr"]),
              helper.make_node("Conv", [f"{tag}dr", f"w_{tag}p", f"b_{tag}p"], [f"{tag}p"])]
    if stride == 1:
        nodes.append(helper.make_node("Add", [f"{tag}p", x], [f"{tag}o"]))
        return f"{tag}o"
    return f"{tag}p"


def group1_cases(c):
    for batch in (1, 8):
        # stem 3 -> 24 3x3 stride 2, then blocks of 24 (72 inside) and 40 (120 inside) channels
        for cin, stem_c, stride in ((3, 24, 2), (5, 40, 1)):
            hw = 40 if stride == 2 else 20
            inits = [numpy_helper.from_array(conv_w(stem_c, cin, 3), "w0"), numpy_helper.from_array(bias(stem_c), "b0")]
            nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["s"], pads=[1] * 4, strides=[stride] * 2),
                     helper.make_node("Relu", ["s"], ["sr"])]
            last = block(nodes, inits, "sr", stem_c, 3 * stem_c, hw // stride, 3, 1, "a")
            last = block(nodes, inits, last, stem_c, 3 * stem_c, hw // stride, 5, 1, "b")
            last = block(nodes, inits, last, stem_c, 3 * stem_c, hw // stride, 5, 2, "c")
            nodes.append(helper.make_node("Identity", [last], ["y"]))
            mo = model(nodes, (batch, cin, hw, hw), inits)
            x = RNG.standard_normal((batch, cin, hw, hw)).astype(np.float32)
            c.check(f"stem {cin} -> {stem_c} 3x3/{stride} + blocks {stem_c} -> {3 * stem_c} -> {stem_c} batch {batch}",
                    mo, x, options_list=(None, {"cpu.dw_rows": "0"}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    a = ap.parse_args()
    nr = Netrun(a.lib)
    with tempfile.TemporaryDirectory() as tmp:
        c = Checker(nr, tmp)
        dw_cases(c)
        dw_pad_cases(c)
        group1_cases(c)
    print(f"{c.checked - c.failed}/{c.checked} checks passed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
