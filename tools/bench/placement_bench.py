#!/usr/bin/env python3
"""Transfer-aware placement (runtime/place.c) against the greedy one, on models with nodes the device backend
cannot run: copies per run, bytes copied, nodes moved and latency, greedy (placement.transfer_aware=0) beside
transfer-aware (the default), in one process on one machine.

Models (onnx.helper, random weights, no download):
  lstm2        x -> MatMul -> LSTM -> Squeeze -> LSTM -> Squeeze -> MatMul (torch's export of a 2-layer LSTM: the
               Squeeze between the layers is a cheap node stranded between two host-only LSTMs)
  cpu_middle   Conv -> Relu -> LpNormalization (host only) -> Relu -> Mul -> LpNormalization -> Conv (cheap
               elementwise nodes between two host-only ops, then a device Conv)
  gn_block     Conv -> GroupNormalization (host only) -> SiLU -> Conv, twice (a diffusion ResBlock; nothing
               worth moving: the row shows the model leaves such graphs alone)
  det_yolo_nms tests/models/detectors.py: conv backbone, sigmoid scores, NonMaxSuppression (host only) and the
               Gathers of the kept boxes

Each model runs --rounds rounds of --runs runs per mode, the modes alternating (each goes first every other round); the figure is the median run
time of all rounds; ratios are transfer-aware / greedy (below 1: faster, fewer). Outputs of the two modes are
compared (max abs difference).

usage: placement_bench.py --lib build/lib/libnetrun.so [--backends opencl,cpu] [--models lstm2,cpu_middle,...]
       [--runs 20] [--rounds 3] [--out DIR]
"""
import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
from netrun_ctypes import Netrun  # noqa: E402

RNG = np.random.default_rng(3)


def const(name, shape, scale=0.1):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def save(nodes, inputs, outputs, inits, path, opset=18):
    g = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)


def lstm2(path):
    t, b, d, h = 32, 1, 64, 128
    inits = [const("W0", (d, d)), const("W1", (1, 4 * h, d)), const("R1", (1, 4 * h, h)),
             const("W2", (1, 4 * h, h)), const("R2", (1, 4 * h, h)), const("Wo", (h, d)),
             numpy_helper.from_array(np.array([1], np.int64), "ax1")]
    nodes = [helper.make_node("MatMul", ["x", "W0"], ["e"], name="embed"),
             helper.make_node("LSTM", ["e", "W1", "R1"], ["y1"], name="lstm1", hidden_size=h),
             helper.make_node("Squeeze", ["y1", "ax1"], ["s1"], name="squeeze1"),
             helper.make_node("LSTM", ["s1", "W2", "R2"], ["y2"], name="lstm2", hidden_size=h),
             helper.make_node("Squeeze", ["y2", "ax1"], ["s2"], name="squeeze2"),
             helper.make_node("MatMul", ["s2", "Wo"], ["y"], name="proj")]
    save(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, b, d])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [t, b, d])], inits, path)
    return {"x": RNG.standard_normal((t, b, d)).astype(np.float32)}


def cpu_middle(path):
    c, s = 32, 56
    inits = [const("Wa", (c, c, 3, 3)), const("Wb", (c, c, 3, 3)), const("S", (1, c, 1, 1))]
    nodes = [helper.make_node("Conv", ["x", "Wa"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
             helper.make_node("LpNormalization", ["ra"], ["n1"], name="lpnorm1", axis=1),
             helper.make_node("Relu", ["n1"], ["r1"], name="relu_mid"),
             helper.make_node("Mul", ["r1", "S"], ["m1"], name="scale_mid"),
             helper.make_node("LpNormalization", ["m1"], ["n2"], name="lpnorm2", axis=1),
             helper.make_node("Conv", ["n2", "Wb"], ["y"], name="conv_b", pads=[1, 1, 1, 1])]
    save(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, s, s])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, s, s])], inits, path)
    return {"x": RNG.standard_normal((1, c, s, s)).astype(np.float32)}


def gn_block(path):
    c, s = 64, 32
    inits = [const("W1", (c, c, 3, 3), 0.05), const("W2", (c, c, 3, 3), 0.05),
             numpy_helper.from_array(np.ones(8, np.float32), "g"), numpy_helper.from_array(np.zeros(8, np.float32), "b")]  # opset 18: per group
    nodes, x = [], "x"
    for i in (1, 2):
        nodes += [helper.make_node("GroupNormalization", [x, "g", "b"], [f"n{i}"], name=f"gn{i}", num_groups=8),
                  helper.make_node("Sigmoid", [f"n{i}"], [f"sg{i}"], name=f"sigmoid{i}"),
                  helper.make_node("Mul", [f"n{i}", f"sg{i}"], [f"a{i}"], name=f"silu{i}"),
                  helper.make_node("Conv", [f"a{i}", f"W{i}"], [f"c{i}" if i == 1 else "y"], name=f"conv{i}",
                                   pads=[1, 1, 1, 1])]
        x = f"c{i}"
    save(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, s, s])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, s, s])], inits, path)
    return {"x": RNG.standard_normal((1, c, s, s)).astype(np.float32)}


def det_yolo_nms(path, size=320):
    import build_models
    import detectors
    m, _ = detectors.build(build_models.Graph, build_models.fvi, "det_yolo_nms", size=size, batch_inputs=1)
    onnx.save(m, path)
    name = m.graph.input[0].name
    return {name: np.random.default_rng(7).uniform(0, 1, (1, 3, size, size)).astype(np.float32)}


MODELS = {"lstm2": lstm2, "cpu_middle": cpu_middle, "gn_block": gn_block, "det_yolo_nms": det_yolo_nms}


def measure(sess, feeds, runs):
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(feeds)
        t.append((time.perf_counter() - t0) * 1e3)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--backends", default="opencl,cpu")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="nr_place_bench_")
    os.makedirs(out, exist_ok=True)
    nr = Netrun(a.lib)
    print(f"# placement_bench {datetime.date.today()} {platform.node()} {platform.processor() or platform.machine()}"
          f" backends={a.backends} threads={a.threads} runs={a.runs} rounds={a.rounds}")
    hdr = (f"{'model':<14}{'copies g':>9}{'copies t':>9}{'MB g':>8}{'MB t':>8}{'moved':>6}"
           f"{'ms g':>9}{'ms t':>9}{'t/g':>7}{'max|diff|':>11}")
    print(hdr)
    for name in a.models.split(","):
        path = os.path.join(out, f"{name}.onnx")
        feeds = MODELS[name](path)
        modes = {"g": {"placement.transfer_aware": "0"}, "t": {}}
        sess = {k: nr.session(path, a.backends, a.threads, v) for k, v in modes.items()}
        try:
            ys = {k: [o.copy() for o in s.run(feeds)] for k, s in sess.items()}  # prepares; warm-up
            times = {k: [] for k in modes}
            for r in range(a.rounds):
                for k in (("g", "t") if r % 2 == 0 else ("t", "g")):  # alternating, each first in turn
                    times[k] += measure(sess[k], feeds, a.runs)
            st = {k: s.stats() for k, s in sess.items()}
            moved = sum(1 for _, r in sess["t"].node_reasons() if r.startswith("moved from"))
            diff = max(float(np.max(np.abs(y0 - y1))) if y0.size else 0.0 for y0, y1 in zip(ys["g"], ys["t"]))
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{name:<14}{st['g'].n_copies:>9}{st['t'].n_copies:>9}{st['g'].copy_bytes / 1e6:>8.2f}"
                  f"{st['t'].copy_bytes / 1e6:>8.2f}{moved:>6}{med['g']:>9.3f}{med['t']:>9.3f}"
                  f"{med['t'] / med['g']:>7.2f}{diff:>11.2e}")
        finally:
            for s in sess.values():
                s.close()


if __name__ == "__main__":
    main()
