#!/usr/bin/env python3
"""RMSNorm as exporters write it (T5LayerNorm / LLaMA RMSNorm: Pow, ReduceMean, Add eps, Sqrt, Div, Mul, weight
Mul) on one backend: the graph pass's one RMSNormalization node (graph.fuse_transformer=1, the default) against the
exported nodes (graph.fuse_transformer=0), and onnxruntime on the same model (CPU only; all graph optimizations,
one intra-op thread per --threads).

Each row: shape [rows, dim], the median latency of both netrun forms (netrun CLI, --iters runs after 20 warm-ups,
the two alternating over --rounds rounds; the figure is the median of the rounds' medians), fused / unfused, and
onnxruntime's median with netrun fused / onnxruntime. Ratios below 1 mean the first is faster; every row is printed,
losing ones included. The model holds --norms norms in a row (a Relu between them) so that one run is not all
launch overhead.

    python3 tools/bench/rmsnorm_bench.py --netrun build/bin/netrun [--backend cuda] [--shapes 128x512,32x4096]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_bench  # noqa: E402


def build(rows, dim, norms):
    b = transformer_bench.Builder(3)
    h = "x"
    for k in range(norms):
        s = f"/norm{k}"
        w = b.init(f"norm{k}.weight", b.rng.uniform(0.5, 1.5, dim).astype(np.float32))
        v = b.op("ReduceMean", [b.op("Pow", [h, b.const(np.float32(2.0), s)], s)], s, axes=[-1], keepdims=1)
        r = b.op("Div", [b.const(np.float32(1.0), s), b.op("Sqrt", [b.op("Add", [v, b.const(np.float32(1e-6), s)], s)], s)], s)
        h = b.op("Mul", [w, b.op("Mul", [h, r], s)], s)
        if k + 1 < norms:
            h = b.op("Relu", [h], s)
    return b.model("rmsnorm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows, dim])],
                   [helper.make_tensor_value_info(h, TensorProto.FLOAT, None)], opset=17)


def netrun_ms(a, path, xin, fuse):
    cmd = [a.netrun, path, "--backend", a.backend, "--strict", "--warmup", "20", "--iterations", str(a.iters),
           "--json", "-", "--input", f"x={xin}", "--set", f"graph.fuse_transformer={fuse}"]
    if a.backend == "cpu":
        cmd += ["--threads", str(a.threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(f"netrun exit {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
    return json.loads(p.stdout)["timings"]["latency_ms"]["median"]


def ort_ms(a, path, x):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(20):
        s.run(None, {"x": x})
    ts = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        s.run(None, {"x": x})
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--shapes", default="128x512,16x512,32x4096,512x1024", help="rows x dim list")
    ap.add_argument("--norms", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print(f"{'shape':>10} {'fused ms':>9} {'unfused ms':>10} {'fused/unf':>9} {'ort ms':>8} {'fused/ort':>9}")
    with tempfile.TemporaryDirectory() as d:
        for sh in a.shapes.split(","):
            rows, dim = (int(v) for v in sh.split("x"))
            path = os.path.join(d, f"rms_{sh}.onnx")
            onnx.save(build(rows, dim, a.norms), path)
            x = np.random.default_rng(1).standard_normal((1, rows, dim)).astype(np.float32)
            xin = os.path.join(d, "x.npy")
            np.save(xin, x)
            fused, plain, ort_t = [], [], []
            for _ in range(a.rounds):
                fused.append(netrun_ms(a, path, xin, "1"))
                plain.append(netrun_ms(a, path, xin, "0"))
                if a.backend == "cpu":
                    ort_t.append(ort_ms(a, path, x))
            mf, mu = statistics.median(fused), statistics.median(plain)
            mo = statistics.median(ort_t) if ort_t else float("nan")
            print(f"{sh:>10} {mf:9.4f} {mu:10.4f} {mf / mu:9.2f} {mo:8.4f} {mf / mo:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
