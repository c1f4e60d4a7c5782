#!/usr/bin/env python3
"""cpu.winograd: 3x3 stride-1 convolutions on oneDNN's Winograd kernels give onnxruntime's outputs (within the
suite's 1e-4 of the largest output) at batch 1 and 2, 1 and 2 threads, with a fused bias + Relu and a fused
residual sum; the kernel column names the Winograd implementation when it is on (and oneDNN is built in),
never when it is off.

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
    """x [B,32,20,20] -> conv3x3 64 + Relu -> conv3x3 64 + Add(a) + Relu -> conv3x3 stride 2 (direct) -> y;
    plus an odd shape (48 -> 40 channels on 9x11) that oneDNN may or may not take on Winograd."""
    inits, nodes = [], []

    def c(name, arr):
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    def conv(x, cin, cout, name, stride=1):
        w = RNG.standard_normal((cout, cin, 3, 3)) * (1.0 / np.sqrt(9 * cin))
        nodes.append(helper.make_node("Conv", [x, c(name + ".w", w), c(name + ".b", RNG.standard_normal(cout) * 0.1)],
                                      [name], name=name, pads=[1, 1, 1, 1], strides=[stride, stride]))
        return name

    a = conv("x", 32, 64, "a")
    nodes.append(helper.make_node("Relu", [a], ["a.relu"], name="a.relu"))
    b = conv("a.relu", 64, 64, "b")
    nodes.append(helper.make_node("Add", [b, "a.relu"], ["b.add"], name="b.add"))
    nodes.append(helper.make_node("Relu", ["b.add"], ["b.relu"], name="b.relu"))
    conv("b.relu", 64, 64, "y", stride=2)
    conv("z_in", 48, 40, "z")
    g = helper.make_graph(nodes, "winograd",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 32, 20, 20]),
                           helper.make_tensor_value_info("z_in", TensorProto.FLOAT, [batch, 48, 9, 11])],
                          [helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
                           for n in ("y", "z")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for batch in (1, 2):
            m = model(batch)
            path = os.path.join(tmp, f"wino{batch}.onnx")
            onnx.save(m, path)
            feeds = {"x": RNG.standard_normal((batch, 32, 20, 20)).astype(np.float32),
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
                    tag = f"batch {batch} threads {threads} cpu.winograd={on}"
                    if errors:
                        failed += 1
                        print(f"FAIL {tag}: " + "; ".join(errors))
                    else:
                        print(f"ok   {tag}" + ("" if onednn else " (no oneDNN: direct paths only)"))
    print("failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
