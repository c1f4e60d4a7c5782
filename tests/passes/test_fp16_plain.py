#!/usr/bin/env python3
"""The plain float16 region planner (runtime/opt_half.c) without a GPU: the fake device backend of tests/plugins
declares NETRUN_REGION_FP16 over its MatMul, Add and Relu (float16 kernels computing in float) and runs Cast.

Model: x -> MatMul(W1) -> Add(MatMul(x, W2)) -> Relu (also a graph output) -> Add(m) -> MatMul(W3) -> Sigmoid (CPU
only) -> y. W1's first row is -1e30: x's first column is 0, so float32 computes 0 * -1e30 = 0, and only a saturated
float16 copy of W1 (-65504, not -inf) keeps 0 * w from becoming NaN. The same for the input m (an additive mask:
-1e30 in its first column, which W3's zero first row then multiplies): the border Cast keeps it finite.

Checks, on fakedev,cpu under --precision fp16:
  - the MatMuls, Add and Relu run on fakedev between Casts named *.to_fp16 / *.to_fp32 (no Cast inside the group);
  - y and the inner output "r" (a graph output inside the region: float32 under its name) match the CPU's float32
    within float16 rounding, with no NaN;
  - a second run (device graph replay) gives the same outputs;
  - fakedev.fp16_plain=0, --precision fp32 and a group without a MatMul (Add -> Relu) leave no float16 Cast;
  - two Linear layers (MatMul + bias Add [+ Relu]) run as the graph passes' MatMulBias on fakedev, inside one
    float16 region (Casts only at x and before the CPU's Sigmoid), close to the CPU's unfused float32.

    python3 tests/passes/test_fp16_plain.py --lib build/lib/libnetrun.so --plugin build/test-device-plugin/libnetrun-fakedev.so
"""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bench"))
sys.path.insert(0, HERE)

RNG = np.random.default_rng(5)
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def build(path, with_matmul=True):
    w1 = (RNG.standard_normal((32, 32)) * 0.1).astype(np.float32)
    w1[0, :] = -1e30  # read only by x's first column, which is 0
    w2 = (RNG.standard_normal((32, 32)) * 0.1).astype(np.float32)
    w3 = (RNG.standard_normal((32, 32)) * 0.1).astype(np.float32)
    w3[0, :] = 0.0  # multiplies m's -1e30 column
    if with_matmul:
        nodes = [helper.make_node("MatMul", ["x", "W1"], ["a"], name="mm1"),
                 helper.make_node("MatMul", ["x", "W2"], ["b"], name="mm2"),
                 helper.make_node("Add", ["a", "b"], ["s"], name="add"),
                 helper.make_node("Relu", ["s"], ["r"], name="relu"),
                 helper.make_node("Add", ["r", "m"], ["rm"], name="mask"),
                 helper.make_node("MatMul", ["rm", "W3"], ["h"], name="mm3"),
                 helper.make_node("Sigmoid", ["h"], ["y"], name="sig")]
        outs, ins = ["y", "r"], ["x", "m"]
        inits = [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2"), numpy_helper.from_array(w3, "W3")]
    else:
        nodes = [helper.make_node("Add", ["x", "x"], ["s"], name="add"),
                 helper.make_node("Relu", ["s"], ["r"], name="relu"),
                 helper.make_node("Sigmoid", ["r"], ["y"], name="sig")]
        outs, inits, ins = ["y"], [], ["x"]
    g = helper.make_graph(nodes, "half", [helper.make_tensor_value_info(i, TensorProto.FLOAT, [16, 32]) for i in ins],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [16, 32]) for o in outs], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    from netrun_ctypes import Netrun, plugin_test_args
    a = plugin_test_args(__doc__)
    from test_fp16_regions import PSession

    nr = Netrun(a.lib)
    tmp = tempfile.mkdtemp(prefix="nr_half_")
    path = os.path.join(tmp, "half.onnx")
    build(path)
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    x[:, 0] = 0.0
    m = np.zeros((16, 32), np.float32)
    m[:, 0] = -1e30
    feeds = {"x": x, "m": m}
    with nr.session(path, "cpu", 1) as s:
        ref = [o.copy() for o in s.run(feeds)]
    check(all(np.isfinite(r).all() for r in ref), "the CPU's float32 outputs are finite")

    def run(opts, precision, p=path):
        with PSession(nr, p, "fakedev,cpu", opts, precision) as s:
            f = feeds if p == path else {"x": x}
            first = [o.copy() for o in s.run(f)]
            second = [o.copy() for o in s.run(f)]
            st = s.stats()
            run.counts = (st.n_fp16_nodes, st.n_fp16_casts)
            return first, second, s.nodes()

    first, second, nodes = run({}, "fp16")
    to16 = [n for n in nodes if n[1] == "Cast" and n[0].endswith(".to_fp16")]
    to32 = [n for n in nodes if n[1] == "Cast" and n[0].endswith(".to_fp32")]
    on_dev = sorted(n[1] for n in nodes if n[2] == "fakedev" and n[1] != "Cast")
    print("nodes:", [(n[0], n[1], n[2]) for n in nodes])
    # mm1's product and the Add of mm2's run as one MatMulBias (zero bias, mm2's product as its residual input)
    check(on_dev == ["Add", "MatMul", "MatMul", "MatMulBias", "Relu"], f"MatMuls, Adds and Relu on fakedev ({on_dev})")
    check(len(to16) == 2 and all(n[2] == "fakedev" for n in to16),
          f"two Casts to float16 (x and m), on fakedev ({[n[0] for n in to16]})")
    check(len(to32) == 2, f"two Casts to float32: r as a graph output and h for the CPU's Sigmoid ({[n[0] for n in to32]})")
    check(run.counts == (5, 4), f"stats: 5 nodes in float16, 4 Casts ({run.counts})")
    for name, got, want in zip(("y", "r"), first, ref):
        err = float(np.abs(got.astype(np.float64) - want).max() / max(1.0, float(np.abs(want).max())))
        check(got.dtype == np.float32 and np.isfinite(got).all() and err < 1e-2,
              f"{name}: float32, finite (the saturated -1e30 weight and mask), within float16 rounding of the CPU "
              f"(rel {err:.1e})")
    check(all(np.array_equal(p, q) for p, q in zip(first, second)), "a second run gives the same outputs")

    for label, opts, prec, p in (("fakedev.fp16_plain=0", {"fakedev.fp16_plain": "0"}, "fp16", path),
                                 ("--precision fp32", {}, "fp32", path)):
        outs, _, nodes = run(opts, prec, p)
        casts = [n[0] for n in nodes if n[1] == "Cast"]
        err = max(float(np.abs(o - r).max()) for o, r in zip(outs, ref))
        check(not casts and err < 1e-4, f"{label}: no Cast, float32 outputs (max err {err:.1e})")
    no_mm = os.path.join(tmp, "no_matmul.onnx")
    build(no_mm, with_matmul=False)
    _, _, nodes = run({}, "fp16", no_mm)
    check(not [n for n in nodes if n[1] == "Cast"], "a group without MatMul stays float32 (two Casts would gain nothing)")

    # Linear layers as exporters write them (MatMul + bias Add, Relu after the first): the graph passes' MatMulBias
    # (com.netrun) joins the region where it lists MatMul, its bias a float16 constant.
    lin = os.path.join(tmp, "linear.onnx")
    w1, w2 = [(RNG.standard_normal((32, 32)) * 0.2).astype(np.float32) for _ in range(2)]
    b1, b2 = [RNG.standard_normal(32).astype(np.float32) for _ in range(2)]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["a"], name="fc1"),
             helper.make_node("Add", ["a", "B1"], ["ab"], name="fc1_bias"),
             helper.make_node("Relu", ["ab"], ["r"], name="fc1_relu"),
             helper.make_node("MatMul", ["r", "W2"], ["c"], name="fc2"),
             helper.make_node("Add", ["B2", "c"], ["h"], name="fc2_bias"),
             helper.make_node("Sigmoid", ["h"], ["y"], name="sig")]
    inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "W1"), (b1, "B1"), (w2, "W2"), (b2, "B2"))]
    g = helper.make_graph(nodes, "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 32])], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), lin)
    with nr.session(lin, "cpu", 1, options={"graph.fuse_matmul_bias": "0"}) as s:
        lref = s.run({"x": x})[0].copy()
    for prec in ("fp16", "fp32"):
        (out,), _, nodes = run({}, prec, lin)
        dev = sorted(n[1] for n in nodes if n[2] == "fakedev" and n[1] != "Cast")
        casts = sorted(n[0] for n in nodes if n[1] == "Cast")
        err = float(np.abs(out.astype(np.float64) - lref).max())
        check(dev == ["MatMulBias", "MatMulBias"], f"{prec}: both Linear layers run as MatMulBias on fakedev ({dev})")
        if prec == "fp16":
            check(casts == ["h.fp32.to_fp32", "x.fp16.to_fp16"] and run.counts == (2, 2),
                  f"fp16: one region over both MatMulBias nodes, Casts at its borders only ({casts}, {run.counts})")
        else:
            check(not casts, f"fp32: no Cast ({casts})")
        check(err < (1e-2 if prec == "fp16" else 1e-5), f"{prec}: output matches the CPU's unfused float32 ({err:.1e})")
    # a region value read by a Shape too (exporters read the shape of most activations for Reshape targets): the
    # Shape reads the float16 value (same dims), no Cast to float32 for it
    shp = os.path.join(tmp, "shape_reader.onnx")
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["a"], name="mm"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Shape", ["a"], ["sh"], name="shape"),
             helper.make_node("Sigmoid", ["r"], ["sg"], name="sig"),
             helper.make_node("Reshape", ["sg", "sh"], ["y"], name="reshape")]
    g = helper.make_graph(nodes, "shape_reader", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 32])],
                          [numpy_helper.from_array(w1, "W1")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), shp)
    with nr.session(shp, "cpu", 1) as s:
        sref = s.run({"x": x})[0].copy()
    (out,), _, nodes = run({}, "fp16", shp)
    casts = sorted(n[0] for n in nodes if n[1] == "Cast")
    err = float(np.abs(out.astype(np.float64) - sref).max())
    check(casts == ["r.fp32.to_fp32", "x.fp16.to_fp16"] and err < 1e-2,
          f"a Shape reading a float16 value needs no Cast ({casts}; max err {err:.1e})")
    # no bias, a residual Add (T5, LLaMA): MatMulBias with a bias of zeros the passes make, inside the region (the
    # zeros get their float16 copy like any constant)
    nob = os.path.join(tmp, "no_bias_residual.onnx")
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["a"], name="mm"),
             helper.make_node("Add", ["a", "x"], ["h"], name="residual"),
             helper.make_node("Sigmoid", ["h"], ["y"], name="sig")]
    g = helper.make_graph(nodes, "no_bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 32])],
                          [numpy_helper.from_array(w1, "W1")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), nob)
    with nr.session(nob, "cpu", 1, options={"graph.fuse_matmul_bias": "0"}) as s:
        nref = s.run({"x": x})[0].copy()
    (out,), _, nodes = run({}, "fp16", nob)
    dev = sorted(n[1] for n in nodes if n[2] == "fakedev" and n[1] != "Cast")
    casts = sorted(n[0] for n in nodes if n[1] == "Cast")
    err = float(np.abs(out.astype(np.float64) - nref).max())
    check(dev == ["MatMulBias"] and casts == ["h.fp32.to_fp32", "x.fp16.to_fp16"] and err < 1e-2,
          f"MatMul + residual Add without a bias: one float16 MatMulBias on fakedev ({dev}, {casts}, {err:.1e})")

    # a weight of 4.2 M values converts in parts on several threads: every part lands where it belongs (outputs
    # within float16 rounding), and the -1e30 row in the last part saturates there too (finite output)
    big = os.path.join(tmp, "big_weight.onnx")
    k = 2049  # odd: the parts' boundaries fall inside rows
    wb = (RNG.standard_normal((k, 2048)) * 0.05).astype(np.float32)
    wb[-1, :] = -1e30  # read only by xb's last column, which is 0
    nodes = [helper.make_node("MatMul", ["x", "WB"], ["a"], name="mm"),
             helper.make_node("Sigmoid", ["a"], ["y"], name="sig")]
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2048])],
                          [numpy_helper.from_array(wb, "WB")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), big)
    xb = RNG.standard_normal((4, k)).astype(np.float32)
    xb[:, -1] = 0.0
    with nr.session(big, "cpu", 1) as s:
        bref = s.run({"x": xb})[0].copy()
    with PSession(nr, big, "fakedev,cpu", {}, "fp16") as s:
        bout = s.run({"x": xb})[0].copy()
        on_dev = [n[1] for n in s.nodes() if n[2] == "fakedev"]
    err = float(np.abs(bout.astype(np.float64) - bref).max())
    check("MatMul" in on_dev and np.isfinite(bout).all() and err < 1e-2,
          f"a 4.2 M-value weight converted in parts: finite, within float16 rounding of the CPU ({err:.1e}; {on_dev})")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
