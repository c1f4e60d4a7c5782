#!/usr/bin/env python3
"""Device graphs around a step that refuses the capture, on the fake device backend of tests/plugins: its Gather
checks its indices on the host (as CUDA's reads its bad-index flag back), so a graph cannot hold it. The runtime
splits the device segment at that step for good: the steps before it and those after it are captured and
replayed, the Gather runs eagerly between them (before, one such step kept the whole stretch eager: a
transformer's embedding Gather kept its encoder out of graphs). The Gather first, in the middle and last; outputs
compared with numpy on every run, with new data each run (a replayed graph must read it).

    python3 tests/device_io/test_graph_split.py --lib build/lib/libnetrun.so \\
        --plugin build/test-device-plugin/libnetrun-fakedev.so
"""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devio_common import check, fakedev_main_setup, session_stats, verdict  # noqa: E402

RNG = np.random.default_rng(11)
IDX = np.array([5, 0, -1, 2, 2, 7], np.int64)  # rows of an [8, n] tensor; repeats and a negative index


def build(path, where):
    """x[8, 128] -> MatMul -> Relu -> MatMul (output y), all on fakedev, with a Gather of rows IDX (a constant)
    first, in the middle (after the Relu) or last. Returns a numpy function of x giving y."""
    w1 = (RNG.standard_normal((128, 96)) * 0.1).astype(np.float32)
    w2 = (RNG.standard_normal((96, 64)) * 0.1).astype(np.float32)
    chain = [("MatMul", "W1"), ("Relu", None), ("MatMul", "W2")]
    pos = {"first": 0, "middle": 2, "last": 3}[where]
    chain.insert(pos, ("Gather", "idx"))
    nodes, cur = [], "x"
    for i, (op, const) in enumerate(chain):
        out = "y" if i == len(chain) - 1 else f"t{i}"
        nodes.append(helper.make_node(op, [cur] + ([const] if const else []), [out], name=f"{op.lower()}{i}"))
        cur = out
    g = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(IDX), 64])],
                          [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2"),
                           numpy_helper.from_array(IDX, "idx")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)

    def want(x):
        v = x
        for op, const in chain:
            v = v[IDX] if op == "Gather" else np.maximum(v, 0) if op == "Relu" else v @ (w1 if const == "W1" else w2)
        return v
    return want


def main():
    nr, lib, SessionStats, _ = fakedev_main_setup()
    work = tempfile.mkdtemp(prefix="nr_graphsplit_")
    # where the Gather is -> the graphs its split leaves (the steps before it, those after it)
    for where, graphs in (("first", 1), ("middle", 2), ("last", 1)):
        path = os.path.join(work, f"gather_{where}.onnx")
        want = build(path, where)
        with nr.session(path, "fakedev,cpu", 1, {}) as s:
            def run(what):
                x = RNG.standard_normal((8, 128)).astype(np.float32)
                y = s.run({"x": x})[0]
                ref = want(x)
                err = float(np.max(np.abs(y - ref))) if y.shape == ref.shape else float("inf")
                st = session_stats(nr, lib, s, SessionStats)
                check(err < 1e-4, f"Gather {where}, {what}: output {y.shape} matches (err {err:.1e}); graphs "
                                  f"{st.n_graphs}, segments {st.n_segments}")
                return st

            st = run("run 1 (eager)")
            check(st.n_graphs == 0, f"Gather {where}: run 1 is eager")
            run("run 2 (the capture refused at the Gather: split there)")
            st = run("run 3 (the parts captured)")
            check(st.n_graphs == graphs, f"Gather {where}: {graphs} graph(s) around the Gather ({st.n_graphs})")
            for i in range(3):
                st = run(f"run {4 + i}, new data")
            check(st.n_graphs == graphs and st.graph_recaptures == 0, f"Gather {where}: replayed, nothing recaptured")
        with nr.session(path, "fakedev,cpu", 1, {"fakedev.graphs": "0"}) as s:
            x = RNG.standard_normal((8, 128)).astype(np.float32)
            y = s.run({"x": x})[0]
            y = s.run({"x": x})[0]
            st = session_stats(nr, lib, s, SessionStats)
            check(st.n_graphs == 0 and float(np.max(np.abs(y - want(x)))) < 1e-4,
                  f"Gather {where}, fakedev.graphs=0: no graph, same output")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
