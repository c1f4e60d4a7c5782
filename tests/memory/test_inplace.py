#!/usr/bin/env python3
"""Memory plan (runtime/prepare.c, plan_aliases): in-place outputs, Concat and Reshape views. Models built with
onnx.helper run on the CPU with memory.inplace on and off: outputs identical bit for bit (and close to
onnxruntime's), the arena strictly smaller with it on, the views reported ("view: no copy"), and the cases
that must not alias do not.

    python3 tests/memory/test_inplace.py --lib build/lib/libnetrun.so
"""
import argparse
import ctypes as C
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from netrun_ctypes import Netrun, NetrunError, SessionStats  # noqa: E402

RNG = np.random.default_rng(5)


def stats(nr, s):
    st = SessionStats()
    nr.check(nr.lib.netrun_session_get_stats(s.handle, C.byref(st)), "stats")
    return st


class G:
    def __init__(self):
        self.nodes, self.inits = [], []

    def c(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def n(self, op, ins, out, **kw):
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def conv(self, x, cin, cout, name):
        w = (RNG.standard_normal((cout, cin, 3, 3)) * 0.2).astype(np.float32)
        b = (RNG.standard_normal(cout) * 0.1).astype(np.float32)
        return self.n("Conv", [x, self.c(name + ".w", w), self.c(name + ".b", b)], name, pads=[1, 1, 1, 1])

    def model(self, inputs, outputs):
        g = helper.make_graph(self.nodes, "memory",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
                               for n in outputs], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def residual_concat(batch):
    """A ResNet identity block (its last Conv gets the Add fused, Z = the block's input, which dies there), a
    channel Concat of two Conv outputs, a Reshape and elementwise ops after it."""
    g = G()
    r0 = g.n("Relu", [g.conv("x", 16, 16, "c0")], "r0")
    r1 = g.n("Relu", [g.conv(r0, 16, 16, "c1")], "r1")
    r2 = g.n("Relu", [g.n("Add", [g.conv(r1, 16, 16, "c2"), r0], "add")], "r2")
    p = g.conv(r2, 16, 16, "p")
    q = g.n("Relu", [g.conv(r2, 16, 32, "q")], "q.relu")
    cat = g.n("Concat", [p, q], "cat", axis=1)
    e = g.conv(cat, 48, 16, "e")
    f = g.n("Reshape", [e, g.c("shape", np.array([batch, 16 * 64], np.int64))], "flat")
    s = g.n("Sigmoid", [f], "sig")
    g.n("Mul", [s, g.c("k", np.float32(3))], "out")
    return g.model([("x", [batch, 16, 8, 8])], ["out"])


def output_is_input():
    """t is a graph output and the input of u: u must not take t's memory; n dies at t: t may take n's."""
    g = G()
    n = g.n("Neg", ["x"], "n")
    t = g.n("Exp", [n], "t")
    g.n("Sigmoid", [t], "u")
    return g.model([("x", [1, 4, 8, 8])], ["t", "u"])


def identity_ops():
    """Slice, Pad, Transpose, Expand and Tile that change nothing for these shapes (zero pads, a full slice, the
    identity perm, repeats of 1) are views; a reversing Slice and a real Pad keep their kernels."""
    g = G()
    a = g.n("Relu", ["x"], "a")
    p = g.n("Pad", [a, g.c("zero_pads", np.zeros(8, np.int64))], "pad0")
    sl = g.n("Slice", [p, g.c("st", np.array([0, 0], np.int64)), g.c("en", np.array([99, 99], np.int64)),
                       g.c("ax", np.array([2, 3], np.int64))], "slice_all")
    t = g.n("Transpose", [sl], "perm_id", perm=[0, 1, 2, 3])
    e = g.n("Expand", [t, g.c("same", np.array([1, 4, 7, 7], np.int64))], "expand_same")
    ti = g.n("Tile", [e, g.c("ones", np.ones(4, np.int64))], "tile_1")
    r = g.n("Slice", [ti, g.c("st2", np.array([-1], np.int64)), g.c("en2", np.array([-99], np.int64)),
                      g.c("ax2", np.array([3], np.int64)), g.c("sp2", np.array([-1], np.int64))], "reverse")
    q = g.n("Pad", [r, g.c("pads1", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], "pad1")
    g.n("Sigmoid", [q], "out")
    return g.model([("x", [1, 4, 7, 7])], ["out"])


def run(nr, path, feeds, inplace, backends="cpu"):
    with nr.session(path, backends=backends, threads=2, options={"memory.inplace": inplace}) as s:
        outs = s.run(feeds)
        outs = [o.copy() for o in s.run(feeds)]  # a second run: the same memory reused
        kern = {name: kernel for name, _, _, kernel in s.nodes()}
        return outs, stats(nr, s), kern


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    fails = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        for batch in (1, 2):
            path = os.path.join(tmp, f"res{batch}.onnx")
            onnx.save(residual_concat(batch), path)
            x = RNG.standard_normal((batch, 16, 8, 8)).astype(np.float32)
            on, st_on, k_on = run(nr, path, {"x": x}, 1)
            off, st_off, k_off = run(nr, path, {"x": x}, 0)
            tag = f"batch {batch}:"
            check(all(a.tobytes() == b.tobytes() for a, b in zip(on, off)), f"{tag} outputs bitwise equal on/off")
            if ort:
                ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
                err = max(float(np.abs(a - r).max()) for a, r in zip(on, ref))
                check(err < 1e-4, f"{tag} outputs vs onnxruntime, max error {err:.2e}")
            check(st_off.n_inplace == 0 and st_off.n_views == 0, f"{tag} memory.inplace=0: no aliases")
            # batch 2: the peak is at the Concat (p, q and cat live together), which stays a copy there
            smaller = st_on.arena_bytes < st_off.arena_bytes if batch == 1 else st_on.arena_bytes <= st_off.arena_bytes
            check(smaller, f"{tag} arena {st_on.arena_bytes} {'<' if batch == 1 else '<='} {st_off.arena_bytes} bytes "
                           "with memory.inplace=0")
            check(k_on["flat"] == "view: no copy" and k_off["flat"] != "view: no copy", f"{tag} Reshape is a view")
            check("in place" in k_on["sig"], f"{tag} Sigmoid over the Reshape view, in place: '{k_on['sig']}'")
            check(st_on.n_inplace >= 3, f"{tag} in-place outputs: {st_on.n_inplace} (Conv+Z, Sigmoid, Mul)")
            # the Conv with the residual Add fused writes over Z (the block's input): its kernel says so
            conv_sum = [n for n in k_on if n.startswith("c2")]
            check(len(conv_sum) == 1 and "in place" in k_on[conv_sum[0]],
                  f"{tag} fused Conv+Add writes over Z: {conv_sum} '{k_on.get(conv_sum[0] if conv_sum else '', '')}'")
            if batch == 1:
                check(k_on["cat"] == "view: no copy", f"{tag} channel Concat is a view: '{k_on['cat']}'")
                check(st_on.n_views == 3, f"{tag} views: {st_on.n_views} (2 Concat inputs + the Reshape)")
            else:
                check(k_on["cat"] != "view: no copy", f"{tag} Concat on axis 1 is not a view: '{k_on['cat']}'")
                check(st_on.n_views == 1, f"{tag} views: {st_on.n_views} (the Reshape)")

        path = os.path.join(tmp, "identity.onnx")
        onnx.save(identity_ops(), path)
        x = RNG.standard_normal((1, 4, 7, 7)).astype(np.float32)
        on, st_on, k_on = run(nr, path, {"x": x}, 1)
        off, _, _ = run(nr, path, {"x": x}, 0)
        want = 1 / (1 + np.exp(-np.pad(np.maximum(x, 0)[..., ::-1], ((0, 0), (0, 0), (1, 1), (1, 1)))))
        check(np.allclose(on[0], want, rtol=1e-6) and on[0].tobytes() == off[0].tobytes(),
              "identity Slice/Pad/Transpose/Expand/Tile: output correct, equal with memory.inplace=0")
        views = [n for n in ("pad0", "slice_all", "perm_id", "expand_same", "tile_1") if k_on[n] == "view: no copy"]
        check(len(views) == 5, f"the five identity ops are views: {views}")
        check(k_on["reverse"] != "view: no copy" and k_on["pad1"] != "view: no copy",
              f"a reversing Slice and a real Pad are not: '{k_on['reverse']}', '{k_on['pad1']}'")

        path = os.path.join(tmp, "outin.onnx")
        onnx.save(output_is_input(), path)
        x = RNG.standard_normal((1, 4, 8, 8)).astype(np.float32)
        on, st_on, k_on = run(nr, path, {"x": x}, 1)
        off, _, _ = run(nr, path, {"x": x}, 0)
        t = np.exp(-x)
        check(np.allclose(on[0], t, rtol=1e-6) and np.allclose(on[1], 1 / (1 + np.exp(-t)), rtol=1e-5),
              "graph output t and u = Sigmoid(t) correct")
        check(all(a.tobytes() == b.tobytes() for a, b in zip(on, off)), "outputs bitwise equal on/off")
        check("in place" in k_on["t"] and "in place" not in k_on["u"],
              f"t over n (dies), u not over t (a graph output): '{k_on['t']}', '{k_on['u']}'")
        check(st_on.n_inplace == 1, f"one in-place output: {st_on.n_inplace}")

        try:
            with nr.session(path, backends="cpu", threads=1, options={"memory.inplace": "yes"}) as s:
                s.run({"x": x})
            check(False, "memory.inplace=yes refused")
        except NetrunError as e:
            check("memory.inplace" in str(e), f"memory.inplace=yes refused: {e}")

    print(f"{len(fails)} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
