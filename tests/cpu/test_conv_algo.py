#!/usr/bin/env python3
"""The CPU backend's rule for oneDNN's Winograd kernels (backends/cpu/conv_dnnl.c, wino_pays): a 3x3 stride-1 conv
that oneDNN runs goes to Winograd only where C x M / (C + M) >= 24 (input channels C, output channels M), since
Winograd's transforms cost per channel and its savings per channel pair. First layers on 3-channel images (YOLO,
VGG, U-Net, examples/tiny_cnn.onnx) and convs of 16-32 channels run direct; 64 -> 64 and wider run Winograd.

Each shape is one Conv (+ bias + Relu) on NCHW X and Y (so oneDNN's kernel runs it, not the nChw16c kernels of
conv_wino_blk.c / conv_direct_blk.c), at batch 1 and 2 and 1 and 2 threads. The kernel column (session node info)
must say Winograd exactly where the rule says so, and the output must match onnxruntime's. With cpu.winograd=0
no shape takes Winograd. Skipped (as passed, with a note) where the CPU backend has no oneDNN.

    python3 tests/cpu/test_conv_algo.py --lib build/lib/libnetrun.so
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

RNG = np.random.default_rng(33)

# (C, M, H, W, Winograd expected with cpu.winograd=1)
SHAPES = [
    (3, 16, 104, 104, False),  # YOLO-style first conv (the rule does not look at the plane)
    (3, 64, 56, 56, False),    # VGG / U-Net first conv
    (3, 8, 32, 32, False),     # examples/tiny_cnn.onnx's first conv
    (8, 16, 28, 28, False),
    (16, 16, 28, 28, False),   # 8 < 24
    (32, 32, 28, 28, False),   # 16 < 24
    (32, 64, 28, 28, False),   # 21.3 < 24
    (48, 48, 28, 28, True),    # 24: the threshold
    (64, 64, 28, 28, True),
    (128, 128, 14, 14, True),
    (256, 48, 14, 14, True),   # 40.4
    (256, 16, 14, 14, False),  # 15.1: a wide input does not make up for few outputs
]


def rule(c, m):
    return c * m >= 24 * (c + m)


def conv_model(c, m, h, w, batch):
    wt = (RNG.standard_normal((m, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = (RNG.standard_normal(m) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    failed = checked = 0
    onednn_seen = False
    with tempfile.TemporaryDirectory() as tmp:
        for c, m, h, w, want in SHAPES:
            assert rule(c, m) == want, f"table row ({c}, {m}) disagrees with the rule it documents"
            for batch in (1, 2):
                mo = conv_model(c, m, h, w, batch)
                path = os.path.join(tmp, "conv.onnx")
                onnx.save(mo, path)
                x = RNG.standard_normal((batch, c, h, w)).astype(np.float32)
                ref = ort.InferenceSession(mo.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
                for wino in ("1", "0"):
                    for threads in (1, 2):
                        errors = []
                        with nr.session(path, backends="cpu", threads=threads, options={"cpu.winograd": wino}) as s:
                            y = s.run({"x": x})[0]
                            kernel = [k for nm, _, _, k in s.nodes() if nm.startswith("conv")][0]
                        d = float(np.max(np.abs(y - ref)))
                        if not d <= 1e-4 * max(1.0, float(np.max(np.abs(ref)))):
                            errors.append(f"max abs diff {d:.2e} vs onnxruntime")
                        if "oneDNN" in kernel:
                            onednn_seen = True
                            got = "wino" in kernel.lower()
                            expect = want and wino == "1"
                            if got != expect:
                                errors.append(f"kernel '{kernel}': Winograd {got}, the rule says {expect}")
                        tag = f"{c}->{m} {h}x{w} batch {batch} threads {threads} cpu.winograd={wino}"
                        checked += 1
                        if errors:
                            failed += 1
                            print(f"FAIL {tag}: " + "; ".join(errors))
                        else:
                            print(f"ok   {tag}: {kernel}")
    if not onednn_seen:
        print("note: no conv ran on oneDNN (built without it): only the outputs were checked")
    print(f"{checked - failed}/{checked} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
