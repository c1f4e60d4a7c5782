#!/usr/bin/env python3
"""Per-call overhead of netrun's Python package on tiny models, side by side with the C CLI and onnxruntime.

For each model, in one process on one machine, one thread everywhere:
  C run      the CLI's median steady-state run (`netrun MODEL --threads 1 --json`): netrun_session_run alone
  run()      netrun.Session.run(feeds): inputs in, run, outputs copied out into new numpy arrays
  run(view)  the same with copy=False (read-only views of the session's memory)
  ort        onnxruntime.InferenceSession.run(None, feeds)
The Python columns are timed in interleaved blocks (netrun, onnxruntime, netrun, ...) and the median block is
reported, in microseconds per call. "py overhead" = run() - C run. Ratio column: run() / ort (< 1: netrun's
call is cheaper).

usage: python_overhead.py [--cli build/bin/netrun] [--calls 20000] [--blocks 9] [--model extra.onnx ...]
Needs the netrun package importable (PYTHONPATH=build/python, or an installed wheel), onnx and onnxruntime.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import netrun

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def tiny_models(d):
    """(name, path): an Add of 16 floats; a 3-layer MLP of 64; two inputs and three outputs (dict traffic)."""
    out = []

    def save(name, nodes, inputs, outputs, inits):
        g = helper.make_graph(nodes, name, inputs, outputs, inits)
        p = os.path.join(d, name + ".onnx")
        with open(p, "wb") as f:
            f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
        out.append((name, p))

    vi = helper.make_tensor_value_info
    rng = np.random.default_rng(0)
    save("add_1x16", [helper.make_node("Add", ["x", "b"], ["y"])], [vi("x", TensorProto.FLOAT, [1, 16])],
         [vi("y", TensorProto.FLOAT, [1, 16])], [helper.make_tensor("b", TensorProto.FLOAT, [16], np.ones(16))])
    nodes, inits, prev = [], [], "x"
    for i in range(3):
        inits += [helper.make_tensor(f"w{i}", TensorProto.FLOAT, [64, 64], rng.standard_normal(64 * 64) * 0.1),
                  helper.make_tensor(f"b{i}", TensorProto.FLOAT, [64], rng.standard_normal(64) * 0.1)]
        nodes += [helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"g{i}"]),
                  helper.make_node("Relu", [f"g{i}"], [f"h{i}"])]
        prev = f"h{i}"
    save("mlp_1x64", nodes, [vi("x", TensorProto.FLOAT, [1, 64])], [vi(prev, TensorProto.FLOAT, [1, 64])], inits)
    save("two_in_three_out", [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["a", "b"], ["p"]),
                              helper.make_node("Sub", ["a", "b"], ["d"])],
         [vi("a", TensorProto.FLOAT, [1, 8]), vi("b", TensorProto.FLOAT, [1, 8])],
         [vi(n, TensorProto.FLOAT, [1, 8]) for n in ("s", "p", "d")], [])
    return out


def feeds_for(model_path):
    m = netrun.Model(model_path)
    rng = np.random.default_rng(1)
    return {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(i.dtype)
            for i in m.inputs}


def cli_run_us(cli, model, calls):
    with tempfile.TemporaryDirectory() as t:
        rep = os.path.join(t, "r.json")
        subprocess.run([cli, model, "--backend", "cpu", "--threads", "1", "--iterations", str(calls), "--warmup",
                        "1000", "--json", rep, "--quiet"], check=True, stdout=subprocess.DEVNULL)
        with open(rep) as f:
            return json.load(f)["timings"]["latency_ms"]["median"] * 1000.0


def block_us(f, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls * 1e6


def machine():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, numpy {np.__version__}, "
            f"onnxruntime {ort.__version__}, netrun {netrun.__version__}; {datetime.date.today()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "netrun"))
    ap.add_argument("--calls", type=int, default=20000, help="calls per timed block")
    ap.add_argument("--blocks", type=int, default=9, help="timed blocks per column (the median is reported)")
    ap.add_argument("--model", action="append", default=[], help="more models (first input shapes: symbolic = 1)")
    a = ap.parse_args()
    print(machine())
    tmp = tempfile.TemporaryDirectory()
    models = tiny_models(tmp.name) + [(os.path.basename(p), p) for p in
                                      [os.path.join(ROOT, "examples", "tiny_cnn.onnx")] + a.model]
    print(f"{'model':<20} {'C run':>8} {'run()':>8} {'run(view)':>10} {'ort':>8} {'py overhead':>12} "
          f"{'run()/ort':>10}   (microseconds per call, median of {a.blocks} blocks of {a.calls})")
    for name, path in models:
        feeds = feeds_for(path)
        s = netrun.Session(path, backends="cpu", threads=1)
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        for k, want in zip(s.output_names, o.run(None, feeds)):  # same answers before timing anything
            np.testing.assert_allclose(s.run(feeds)[k], want, rtol=1e-4, atol=1e-5)
        cols = {"run": [], "view": [], "ort": []}
        fns = {"run": lambda: s.run(feeds), "view": lambda: s.run(feeds, copy=False),
               "ort": lambda: o.run(None, feeds)}
        for f in fns.values():  # warm up
            block_us(f, min(a.calls, 2000))
        for _ in range(a.blocks):
            for k, f in fns.items():
                cols[k].append(block_us(f, a.calls))
        med = {k: float(np.median(v)) for k, v in cols.items()}
        c_us = cli_run_us(a.cli, path, a.calls) if os.access(a.cli, os.X_OK) else float("nan")
        print(f"{name:<20} {c_us:8.2f} {med['run']:8.2f} {med['view']:10.2f} {med['ort']:8.2f} "
              f"{med['run'] - c_us:12.2f} {med['run'] / med['ort']:9.2f}x")
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
