#!/usr/bin/env python3
"""Fused Swish (from Mul(x, Sigmoid(x))) and Sigmoid in the CPU conv epilogues (1x1 sgemm and depthwise paths)
on extreme inputs (+-120, +-1e30, NaN, +-inf) against float64 of the conv output onnxruntime computes: relative
error under 1e-6 where the reference is above 1e-30, and the same NaN and infinity positions.

    python3 tests/passes/test_act_extremes.py --lib build/lib/libnetrun.so
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


def model(c, h, w, depthwise):
    wt = (np.ones((c, 1, 1, 1)) if depthwise else np.eye(c).reshape(c, c, 1, 1)).astype(np.float32)
    kw = {"group": c} if depthwise else {}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", **kw),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig1"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="mul1"),
             helper.make_node("Conv", ["x", "w"], ["c2"], name="conv2", **kw),
             helper.make_node("Sigmoid", ["c2"], ["z"], name="sig2")]
    g = helper.make_graph(nodes, "act", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")],
                          [numpy_helper.from_array(wt, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    c, h, w = 4, 16, 37  # 592 columns: the 1x1 goes to sgemm; rows of 37 to the own depthwise kernel
    x = np.linspace(-120, 120, c * h * w).astype(np.float32).reshape(1, c, h, w)
    x.flat[::37] = np.random.default_rng(1).standard_normal(x.flat[::37].shape).astype(np.float32) * 5
    x.flat[5:10] = [np.nan, np.inf, -np.inf, 1e30, -1e30]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for depthwise in (False, True):
            m = model(c, h, w, depthwise)
            path = os.path.join(tmp, "act.onnx")
            onnx.save(m, path)
            probe = onnx.ModelProto()
            probe.CopyFrom(m)
            probe.graph.output.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, None))
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            conv = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
                ["c"], {"x": x})[0].astype(np.float64)
            with np.errstate(all="ignore"):
                refs = (conv / (1 + np.exp(-conv)), 1 / (1 + np.exp(-conv)))
            for threads in (1, 2):
                with nr.session(path, backends="cpu", threads=threads) as s:
                    outs = s.run({"x": x})
                    names = [n[0] for n in s.nodes()]
                for what, a, r in zip(("swish", "sigmoid"), outs, refs):
                    errors = []
                    if "conv1+sig1+mul1" not in names or "conv2+sig2" not in names:
                        errors.append(f"not fused: {names}")
                    if not np.array_equal(np.isnan(a), np.isnan(r)) or not np.array_equal(np.isinf(a), np.isinf(r)):
                        errors.append("NaN/inf positions differ")
                    ok = np.isfinite(r) & np.isfinite(a) & (np.abs(r) > 1e-30)
                    with np.errstate(invalid="ignore"):
                        rel = float((np.abs(a - r)[ok] / np.abs(r[ok])).max())
                    if not rel < 1e-6:
                        errors.append(f"max relative error {rel:.2e}")
                    tag = f"{'depthwise' if depthwise else '1x1'} {what} threads={threads}"
                    if errors:
                        failed += 1
                        print(f"FAIL {tag}: " + "; ".join(errors))
                    else:
                        print(f"ok   {tag} (max relative error {rel:.1e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
