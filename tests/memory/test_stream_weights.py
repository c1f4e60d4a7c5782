#!/usr/bin/env python3
"""Streamed weights (runtime/prepare.c, plan_weights; docs/design.md "Streamed weights") on the fake device
backend of tests/plugins (a device memory domain without a GPU): with memory.stream_weights=1 the outputs equal
those of resident weights bit for bit, in eager runs and in replayed device graphs, the device holds less, the
stats say how much is copied per run, constants read by two nodes or smaller than memory.stream_min stay
resident, "auto" streams under the min-memory policy only, bad settings fail with their name, and a device
memory budget that the resident plan overflows is met by degrading to min-memory with streamed weights.

    python3 tests/memory/test_stream_weights.py --lib build/lib/libnetrun.so \
        --plugin build/test-device-plugin/libnetrun-fakedev.so
"""
import argparse
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))

RNG = np.random.default_rng(11)
KIB = 1024
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def build(path):
    """x[8,128] -> MatMul W1 (64 KiB) -> Relu -> MatMul W2 (128 KiB) -> Add B2 (8 KiB) -> MatMul W3 (128 KiB)
    -> Sigmoid (CPU: fakedev lacks it, so two device segments) -> MatMul S -> Relu -> MatMul S (S, 64 KiB, read
    twice)."""
    w = {"W1": (128, 128), "W2": (128, 256), "B2": (8, 256), "W3": (256, 128), "S": (128, 128)}
    inits = {k: (RNG.standard_normal(s) * 0.1).astype(np.float32) for k, s in w.items()}
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="mm1"),
             helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
             helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="mm2"),
             helper.make_node("Add", ["h2", "B2"], ["a2"], name="add2"),
             helper.make_node("MatMul", ["a2", "W3"], ["h3"], name="mm3"),
             helper.make_node("Sigmoid", ["h3"], ["s3"], name="sig3"),
             helper.make_node("MatMul", ["s3", "S"], ["h4"], name="mm4"),
             helper.make_node("Relu", ["h4"], ["r4"], name="relu4"),
             helper.make_node("MatMul", ["r4", "S"], ["y"], name="mm5")]
    g = helper.make_graph(nodes, "stream", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 128])],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return inits


def reference(x, w):
    f = lambda a: a.astype(np.float64)  # noqa: E731
    h = np.maximum(f(x) @ f(w["W1"]), 0) @ f(w["W2"]) + f(w["B2"])
    s = 1 / (1 + np.exp(-(h @ f(w["W3"]))))
    return np.maximum(s @ f(w["S"]), 0) @ f(w["S"])


def run_all(sess, xs):
    return [sess.run({"x": x})[0].copy() for x in xs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--plugin", required=True)
    a = ap.parse_args()
    # the fake device is found by path, next to the real backends (discovery runs on the first netrun call)
    os.environ["NETRUN_BACKEND_PATH"] = ":".join(p for p in (os.environ.get("NETRUN_BACKEND_PATH"), a.plugin) if p)
    from netrun_ctypes import Netrun, NetrunError

    nr = Netrun(a.lib)
    tmp = tempfile.mkdtemp(prefix="nr_stream_")
    path = os.path.join(tmp, "stream.onnx")
    w = build(path)
    xs = [RNG.standard_normal((8, 128)).astype(np.float32) for _ in range(5)]
    be = "fakedev,cpu"
    small = {"memory.stream_min": 16 * KIB}

    def session(opts, **kw):
        return nr.session(path, be, 1, dict(small, **opts), **kw)

    with session({"memory.stream_weights": "0"}) as s:
        ref = run_all(s, xs)
        st_off = s.stats()
        nodes = s.nodes()
    err = max(float(np.max(np.abs(r - reference(x, w)))) for r, x in zip(ref, xs))
    check(err < 1e-4, f"resident weights: outputs match numpy (max err {err:.2e})")
    check([n[2] for n in nodes].count("fakedev") == 8 and st_off.stream_bytes == 0,
          "8 of 9 nodes on fakedev (Sigmoid on the cpu); nothing streamed with memory.stream_weights=0")

    streamed = (128 * 128 + 128 * 256 + 256 * 128) * 4  # W1, W2, W3; B2 (8 KiB) is small, S is read twice
    with session({"memory.stream_weights": "1"}) as s:
        out = run_all(s, xs)
        st_on = s.stats()
    check(all(np.array_equal(o, r) for o, r in zip(out, ref)), "streamed weights: outputs equal bit for bit (5 runs)")
    check(st_on.stream_bytes == streamed, f"stream_bytes {st_on.stream_bytes} == {streamed} (W1+W2+W3)")
    # the device keeps B2 and S, plus two lanes as large as their largest node's streamed weights (W3 | W2)
    check(st_off.weight_bytes - st_on.weight_bytes == streamed - 2 * 128 * 256 * 4,
          f"device weights {st_off.weight_bytes} -> {st_on.weight_bytes} bytes")
    check(st_on.n_graphs == 2 and st_off.n_graphs == 2,
          f"both device segments replay as graphs, streaming copies captured ({st_on.n_graphs}, {st_off.n_graphs})")
    check(st_on.device_peak_bytes < st_off.device_peak_bytes,
          f"peak device memory {st_off.device_peak_bytes} -> {st_on.device_peak_bytes} bytes")

    # overlapped copies (ABI 1.6 prefetch): mm1 copies W1 in order and prefetches W2 into lane 1, mm2 prefetches
    # W3 into lane 0; the fake device does each prefetch at the earliest (default) or latest (late) moment allowed
    with session({"memory.stream_weights": "1", "memory.stream_overlap": "0"}) as s:
        out = run_all(s, xs)
        st_seq = s.stats()
    check(all(np.array_equal(o, r) for o, r in zip(out, ref)), "copies in order (memory.stream_overlap=0): same bits")
    check(st_on.weight_bytes - st_seq.weight_bytes == 128 * 256 * 4,
          f"two lanes of 128 KiB with prefetching, one without ({st_on.weight_bytes} vs {st_seq.weight_bytes} bytes)")
    for mode, word in (("late", "latest"), ("early", "earliest")):
        with session({"memory.stream_weights": "1", "fakedev.prefetch": mode}) as s:
            out = run_all(s, xs)
            st = s.stats()
        check(all(np.array_equal(o, r) for o, r in zip(out, ref)) and st.n_graphs == 2,
              f"prefetches done at the {word} moment allowed: same bits, both segments captured ({st.n_graphs})")

    with session({}, policy="min-memory") as s:
        out = run_all(s, xs[:3])
        auto_mm = s.stats().stream_bytes
    check(auto_mm == streamed and all(np.array_equal(o, r) for o, r in zip(out, ref)),
          "memory.stream_weights=auto streams under the min-memory policy")
    with session({}, policy="fastest") as s:
        run_all(s, xs[:1])
        check(s.stats().stream_bytes == 0, "memory.stream_weights=auto keeps weights resident under fastest")
    with nr.session(path, be, 1, {"memory.stream_weights": "1"}) as s:
        run_all(s, xs[:1])
        check(s.stats().stream_bytes == streamed, "default memory.stream_min (64 KiB): W1 (64 KiB), W2, W3 stream")
    with session({"memory.stream_weights": "1", "memory.stream_min": 128 * KIB}) as s:
        out = run_all(s, xs[:2])
        check(s.stats().stream_bytes == 2 * 128 * 256 * 4 and all(np.array_equal(o, r) for o, r in zip(out, ref)),
              "memory.stream_min=131072: W1 stays resident, W2 and W3 stream")

    for key, bad in (("memory.stream_weights", "yes"), ("memory.stream_min", "-5"), ("memory.stream_min", "4k")):
        try:
            with session({key: bad}) as s:
                s.run({"x": xs[0]})
            check(False, f"{key}={bad} refused")
        except NetrunError as e:
            check(key in str(e), f"{key}={bad} refused: {str(e)[:110]}")

    # a budget the resident plan overflows but the streamed one fits: prepare degrades to min-memory + streaming
    fixed_on = st_on.arena_bytes + st_on.weight_bytes + st_on.workspace_bytes
    fixed_off = st_off.arena_bytes + st_off.weight_bytes + st_off.workspace_bytes
    budget = fixed_on + 4096
    check(budget < fixed_off, f"budget {budget} below the resident plan's {fixed_off} bytes")
    with session({}, budget=budget) as s:
        out = run_all(s, xs)
        st = s.stats()
    check(st.stream_bytes == streamed and all(np.array_equal(o, r) for o, r in zip(out, ref)),
          f"budget {budget}: degraded to streamed weights, outputs unchanged")
    with session({"memory.stream_weights": "0"}, budget=budget) as s:
        try:
            s.run({"x": xs[0]})
            check(False, "memory.stream_weights=0 under that budget fails")
        except NetrunError as e:
            check("does not fit" in str(e) and "min-memory" in str(e),
                  f"memory.stream_weights=0 under that budget fails with the numbers: {str(e)[:150]}")

    if failures:
        print(f"{len(failures)} FAILED")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
