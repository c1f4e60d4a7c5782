#!/usr/bin/env python3
"""Transfer-aware placement (runtime/place.c) on the fake device backend of tests/plugins (its own memory domain,
MatMul/Add/Relu only): where greedy placement strands cheap device nodes between host nodes, moving them saves copies
and the outputs stay those of numpy; with placement.transfer_aware=0 the greedy placement is kept; nodes that are
well where they are stay (a chain of device MatMuls); strict mode keeps its meaning (no fallback, no move).

    python3 tests/placement/test_transfer_aware.py --lib build/lib/libnetrun.so \
        --plugin build/test-device-plugin/libnetrun-fakedev.so
"""
import argparse
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))

RNG = np.random.default_rng(5)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def build_stranded(path):
    """x[64,256] -> MatMul W (device) -> Sigmoid (host only) -> Relu (device, cheap) -> Add B (device, cheap)
    -> Tanh (host only) -> Relu (device, cheap) -> Sigmoid (host only) -> y. Greedy puts each Relu/Add on the
    device between host nodes: two copies each way around them."""
    w = (RNG.standard_normal((256, 256)) * 0.05).astype(np.float32)
    b = (RNG.standard_normal((64, 256)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Sigmoid", ["h"], ["s1"], name="sig1"),
             helper.make_node("Relu", ["s1"], ["r1"], name="relu1"),
             helper.make_node("Add", ["r1", "B"], ["a1"], name="add1"),
             helper.make_node("Tanh", ["a1"], ["t1"], name="tanh1"),
             helper.make_node("Relu", ["t1"], ["r2"], name="relu2"),
             helper.make_node("Sigmoid", ["r2"], ["y"], name="sig2")]
    g = helper.make_graph(nodes, "stranded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
                          [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return w, b


def ref_stranded(x, w, b):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h = x.astype(np.float64) @ w.astype(np.float64)
    t = np.tanh(np.maximum(sig(h), 0) + b)
    return sig(np.maximum(t, 0))


def build_chain(path):
    """x -> MatMul -> Relu -> MatMul -> Sigmoid (host only) -> y: the device chain is where it belongs."""
    w1 = (RNG.standard_normal((256, 256)) * 0.05).astype(np.float32)
    w2 = (RNG.standard_normal((256, 256)) * 0.05).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="mm1"),
             helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
             helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="mm2"),
             helper.make_node("Sigmoid", ["h2"], ["y"], name="sig")]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
                          [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--plugin", required=True)
    a = ap.parse_args()
    os.environ["NETRUN_BACKEND_PATH"] = ":".join(p for p in (os.environ.get("NETRUN_BACKEND_PATH"), a.plugin) if p)
    from netrun_ctypes import Netrun

    nr = Netrun(a.lib)
    tmp = tempfile.mkdtemp(prefix="nr_place_")
    path = os.path.join(tmp, "stranded.onnx")
    w, b = build_stranded(path)
    x = RNG.standard_normal((64, 256)).astype(np.float32)
    want = ref_stranded(x, w, b)

    def placed(path, opts, backends="fakedev,cpu"):
        with nr.session(path, backends, 1, opts) as s:
            y = s.run({"x": x})[0].copy()
            return y, s.stats(), s.nodes(), s.node_reasons()

    y0, st0, nodes0, _ = placed(path, {"placement.transfer_aware": "0"})
    y1, st1, nodes1, why1 = placed(path, {})
    dev0 = [n[0] for n in nodes0 if n[2] == "fakedev"]
    dev1 = [n[0] for n in nodes1 if n[2] == "fakedev"]
    print(f"greedy: {st0.n_copies} copies ({st0.copy_bytes} B), device {dev0}")
    print(f"transfer-aware: {st1.n_copies} copies ({st1.copy_bytes} B), device {dev1}")
    check(set(dev0) == {"mm", "relu1", "add1", "relu2"}, "greedy puts every node fakedev can run on it")
    check(st1.n_copies < st0.n_copies and st1.copy_bytes < st0.copy_bytes,
          f"transfer-aware placement copies less: {st0.n_copies} -> {st1.n_copies} copies")
    check(dev1 == ["mm"], f"the stranded Relu/Add/Relu moved to the host, the MatMul stayed ({dev1})")
    moved = [r for n, r in why1 if n in ("relu1", "add1", "relu2")]
    check(len(moved) == 3 and all(r.startswith("moved from fakedev: saves") and "copies" in r and "MB" in r
                                  for r in moved), f"their reasons say what moving saved: {moved[:1]}")
    for y, name in ((y0, "greedy"), (y1, "transfer-aware")):
        err = float(np.max(np.abs(y - want)))
        check(err < 1e-4, f"{name}: output matches numpy (max err {err:.2e})")

    chain = os.path.join(tmp, "chain.onnx")
    build_chain(chain)
    _, stc0, nc0, _ = placed(chain, {"placement.transfer_aware": "0"})
    _, stc1, nc1, _ = placed(chain, {})
    check([n[2] for n in nc1] == [n[2] for n in nc0] and stc1.n_copies == stc0.n_copies,
          f"a device chain ending in a host-only node stays as greedy placed it ({[n[2] for n in nc1]})")
    # one backend domain: nothing to weigh
    _, stcpu, ncpu, _ = placed(path, {}, backends="cpu")
    check(stcpu.n_copies == 0 and all(n[2] == "cpu" for n in ncpu), "cpu only: no copies, nothing moved")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
