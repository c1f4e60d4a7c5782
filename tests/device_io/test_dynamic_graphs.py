#!/usr/bin/env python3
"""Device graphs in a session whose shapes are known only at run time, on the fake device backend of tests/plugins
(its graphs record each kernel's tensors, addresses and shapes included, and replay exactly those: a graph replayed
with another run's shapes gives wrong rows). Slice(x[8, 128], 0, e) on the CPU, then MatMul -> Relu -> MatMul on
fakedev: the rows the device nodes see depend on the value of input e, so the session stays dynamic (a new input
shape would prepare the session again instead); outputs compared with numpy on every run.
Then the same with a NonZero on fakedev in the middle (its output sized by the kernel from the data): the device
segment is split there, the steps before it and those after it replayed as two graphs, NonZero run eagerly.

    python3 tests/device_io/test_dynamic_graphs.py --lib build/lib/libnetrun.so \\
        --plugin build/test-device-plugin/libnetrun-fakedev.so
"""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devio_common import check, fakedev_main_setup, session_stats, verdict  # noqa: E402

RNG = np.random.default_rng(5)


def build(path, nonzero=False):
    """rows (Slice, on the CPU) -> MatMul -> Relu -> MatMul (output y) on fakedev; nonzero: a NonZero of the Relu's
    output too (output nz), between the two MatMuls"""
    w1 = (RNG.standard_normal((128, 96)) * 0.1).astype(np.float32)
    w2 = (RNG.standard_normal((96, 64)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Slice", ["x", "zero", "e", "zero"], ["xs"], name="rows"),
             helper.make_node("MatMul", ["xs", "W1"], ["h"], name="mm1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu")]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 64])]
    if nonzero:
        nodes.append(helper.make_node("NonZero", ["r"], ["nz"], name="nonzero"))
        outs.append(helper.make_tensor_value_info("nz", TensorProto.INT64, [2, "k"]))
    nodes.append(helper.make_node("MatMul", ["r", "W2"], ["y"], name="mm2"))
    g = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128]),
                                         helper.make_tensor_value_info("e", TensorProto.INT64, [1])], outs,
                          [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2"),
                           numpy_helper.from_array(np.array([0], np.int64), "zero")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return w1, w2


def main():
    nr, lib, SessionStats, _ = fakedev_main_setup()
    path = os.path.join(tempfile.mkdtemp(prefix="nr_dyngraph_"), "dyn.onnx")
    w1, w2 = build(path)

    def want(x, n):
        return np.maximum(x[:n] @ w1, 0) @ w2

    with nr.session(path, "fakedev,cpu", 1, {}) as s:
        def run(n, what):
            x = RNG.standard_normal((8, 128)).astype(np.float32)
            y = s.run({"x": x, "e": np.array([n], np.int64)})[0]
            err = float(np.max(np.abs(y - want(x, n)))) if y.shape == (n, 64) else float("inf")
            st = session_stats(nr, lib, s, SessionStats)
            check(err < 1e-4, f"{what}: n={n}, output {y.shape} matches (err {err:.1e}); graphs {st.n_graphs}, "
                              f"recaptures {st.graph_recaptures}, prepares {st.prepares}")
            return st

        run(4, "run 1 (eager)")
        st = run(4, "run 2 (captured)")
        check(st.n_graphs == 1 and st.graph_recaptures == 0, "the dynamic session captured its segment")
        st = run(4, "run 3, new data, same shapes")
        check(st.n_graphs == 1 and st.graph_recaptures == 0, "same shapes and addresses: replayed")
        st = run(7, "a larger batch")
        check(st.n_graphs == 1 and st.graph_recaptures == 1, "new shapes: captured again, the old graph not replayed")
        st = run(7, "the larger batch again")
        check(st.graph_recaptures == 1, "replayed at the new shapes")
        st = run(3, "a smaller batch (same buffers, fewer rows)")
        check(st.graph_recaptures == 2, "smaller shapes in the same buffers: captured again")
        prepares = st.prepares
        for i in range(6):  # shapes that change at every run: after a few captures the segment runs eagerly
            st = run(5 + i % 2, f"alternating batch, run {i + 1}")
        check(st.n_graphs == 0 and st.graph_recaptures <= 2 + 4, f"shapes that never repeat: eager from the "
              f"fourth capture on ({st.graph_recaptures} recaptures, {st.n_graphs} graphs)")
        check(st.prepares == prepares, "no prepare for any of these runs")

    with nr.session(path, "fakedev,cpu", 1, {"fakedev.graphs": "0"}) as s:
        for n in (4, 4, 4):
            x = RNG.standard_normal((8, 128)).astype(np.float32)
            y = s.run({"x": x, "e": np.array([n], np.int64)})[0]
        st = session_stats(nr, lib, s, SessionStats)
        check(st.n_graphs == 0 and float(np.max(np.abs(y - want(x, 4)))) < 1e-4,
              "fakedev.graphs=0: no graph, same output")
    # A data-sized output in the middle of the device steps: split there, both sides replayed
    path2 = os.path.join(os.path.dirname(path), "dyn_nz.onnx")
    w1, w2 = build(path2, nonzero=True)
    with nr.session(path2, "fakedev,cpu", 1, {}) as s:
        def run_nz(n, what):
            x = RNG.standard_normal((8, 128)).astype(np.float32)
            y, nz = s.run({"x": x, "e": np.array([n], np.int64)})
            r = np.maximum(x[:n] @ w1, 0)
            want_nz = np.array(np.nonzero(r), np.int64)
            err = float(np.max(np.abs(y - r @ w2))) if y.shape == (n, 64) else float("inf")
            same_nz = nz.shape == want_nz.shape and np.array_equal(nz, want_nz)
            st = session_stats(nr, lib, s, SessionStats)
            check(err < 1e-4 and same_nz, f"{what}: n={n}, y matches (err {err:.1e}), NonZero's {nz.shape[1]} "
                                          f"coordinates match: {same_nz}; graphs {st.n_graphs}, segments "
                                          f"{st.n_segments}, recaptures {st.graph_recaptures}")
            return st

        run_nz(4, "nonzero model, run 1 (eager)")
        run_nz(4, "nonzero model, run 2 (split at NonZero)")
        st = run_nz(4, "nonzero model, run 3")
        check(st.n_graphs == 2 and st.n_segments == 2, "the steps before NonZero and those after it: two graphs")
        st = run_nz(4, "nonzero model, run 4, new data")
        check(st.n_graphs == 2 and st.graph_recaptures == 0, "replayed, NonZero eager between them")
        st = run_nz(6, "nonzero model, a larger batch")
        check(st.n_graphs == 2 and st.graph_recaptures == 2, "new shapes: both captured again")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
