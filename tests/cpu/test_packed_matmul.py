#!/usr/bin/env python3
"""MatMul / Gemm on a constant B packed once for oneDNN's matmul (backends/cpu/matmul_dnnl.c) against onnxruntime.

Packing is for A of 2 to 48 rows (gemm.c's MM_PACK_MAX_ROWS). Each model runs at 1, 2 and 3 threads (B cut into that many column slices, each packed on its own; with more than
one slice each slice computes into its own dense buffer and is copied or added into Y), with cpu.pack_matmul=1
and 0: the outputs must match onnxruntime's, and with packing on the kernel column must say "B packed" wherever
the backend has oneDNN and A's rows are in range. Shapes: a linear layer ([1, S, K] x [K, N], M = S rows stacked;
128 rows stay on sgemm), Gemm
with transB, alpha, beta and a full C and a fused Relu, B with leading dims of 1, N not a multiple of 16 or of the
64-column slices, M = 2 (the fewest rows that pack) and M = 1 (stays on the GEMV), and a session whose row count
changes from run to run (symbolic dim: each new shape prepares again; 64 rows stay on sgemm).
Skipped checks (noted) where the CPU backend has no oneDNN.

    python3 tests/cpu/test_packed_matmul.py --lib build/lib/libnetrun.so
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

RNG = np.random.default_rng(71)


def w(*shape):
    return (RNG.standard_normal(shape) / np.sqrt(shape[-2] if len(shape) > 1 else 1)).astype(np.float32)


def model(nodes, inputs, inits):
    g = helper.make_graph(nodes, "mm", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def linear(s, k, n):  # MatMul + bias Add, as exporters write a transformer's linear layers
    return model([helper.make_node("MatMul", ["x", "w"], ["t"], name="mm"),
                  helper.make_node("Add", ["t", "b"], ["y"], name="bias")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, s, k])],
                 {"w": w(k, n), "b": w(n)}), {"x": RNG.standard_normal((1, s, k)).astype(np.float32)}


def gemm_full(m, k, n):  # Gemm transB, alpha, beta, full C (an input), then Relu (fused into the Gemm)
    return model([helper.make_node("Gemm", ["x", "w", "c"], ["t"], name="mm", transB=1, alpha=0.75, beta=-0.5),
                  helper.make_node("Relu", ["t"], ["y"], name="relu")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k]),
                  helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, n])],
                 {"w": w(n, k)}), {"x": RNG.standard_normal((m, k)).astype(np.float32),
                                   "c": RNG.standard_normal((m, n)).astype(np.float32)}


def gemm_bias(m, k, n):  # Gemm with a constant bias row (a classifier at batch m)
    return model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="mm", transB=1)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                 {"w": w(n, k), "b": w(n)}), {"x": RNG.standard_normal((m, k)).astype(np.float32)}


def lead1(k, n):  # B [1, K, N] against A [2, 3, 5, K]
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, k])],
                 {"w": w(1, k, n)}), {"x": RNG.standard_normal((2, 3, 5, k)).astype(np.float32)}


CASES = [
    ("linear 1x37x64 -> 200", *linear(37, 64, 200), True),
    ("linear 1x48x768 -> 768", *linear(48, 768, 768), True),
    ("linear 1x128x768 -> 768 (many rows: sgemm)", *linear(128, 768, 768), False),
    ("linear 1x40x96 -> 192 (16-column slices)", *linear(40, 96, 192), True),
    ("gemm transB alpha beta C relu 20x96 -> 150", *gemm_full(20, 96, 150), True),
    ("gemm bias 8x1280 -> 1000", *gemm_bias(8, 1280, 1000), True),
    ("gemm bias M=2 64 -> 3", *gemm_bias(2, 64, 3), True),
    ("gemm bias M=1 300 -> 37 (GEMV)", *gemm_bias(1, 300, 37), False),
    ("matmul B [1, 48, 130]", *lead1(48, 130), True),
]


def check(tag, y, ref, kernel, want_packed, packing, onednn):
    errs = []
    d = float(np.max(np.abs(y - ref)))
    if not d <= 1e-4 * max(1.0, float(np.max(np.abs(ref)))):
        errs.append(f"max abs diff {d:.2e} vs onnxruntime")
    if onednn and ("B packed" in kernel) != (want_packed and packing):
        errs.append(f"kernel '{kernel}': packed {('B packed' in kernel)}, expected {want_packed and packing}")
    print(("FAIL " if errs else "ok   ") + f"{tag}: {kernel}" + ("  " + "; ".join(errs) if errs else ""))
    return not errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    failed = checked = 0
    onednn = None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mm.onnx")
        # does this build run MatMul on oneDNN at all? (a plain packable case)
        onnx.save(CASES[0][1], path)
        with nr.session(path, backends="cpu", threads=1) as s:
            s.run(CASES[0][2])  # kernels are made at the first run
            onednn = any("oneDNN" in k for _, _, _, k in s.nodes())
        if not onednn:
            print("note: no MatMul ran on oneDNN (built without it): only the outputs are checked")
        for name, mo, feeds, want_packed in CASES:
            onnx.save(mo, path)
            ref = ort.InferenceSession(mo.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            for pack in ("1", "0"):
                for threads in (1, 2, 3):
                    with nr.session(path, backends="cpu", threads=threads, options={"cpu.pack_matmul": pack}) as s:
                        y = s.run(feeds)[0]
                        y2 = s.run(feeds)[0]  # the kept primitives and packed B again
                        kernel = [k for nm, _, _, k in s.nodes() if nm.startswith("mm")][0]
                    checked += 1
                    ok = check(f"{name} threads {threads} cpu.pack_matmul={pack}", y, ref, kernel, want_packed,
                               pack == "1", onednn)
                    if ok and not np.array_equal(y, y2):
                        print("FAIL   second run differs from the first")
                        ok = False
                    failed += not ok
        # rows changing from run to run: M = S of a [1, S, K] input with a symbolic S
        k, n = 64, 96
        mo = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "S", k])], {"w": w(k, n)})
        onnx.save(mo, path)
        ort_s = ort.InferenceSession(mo.SerializeToString(), providers=["CPUExecutionProvider"])
        for threads in (1, 2):
            with nr.session(path, backends="cpu", threads=threads) as s:
                for rows in (5, 17, 64, 3, 40, 5, 2, 17):
                    x = RNG.standard_normal((1, rows, k)).astype(np.float32)
                    y = s.run({"x": x})[0]
                    kernel = [kk for nm, _, _, kk in s.nodes() if nm.startswith("mm")][0]
                    checked += 1
                    failed += not check(f"symbolic rows {rows} threads {threads}", y,
                                        ort_s.run(None, {"x": x})[0], kernel, 2 <= rows <= 48, True, onednn)
    print(f"{checked - failed}/{checked} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
