#!/usr/bin/env python3
"""Micro-batching (runtime/micro_batch.c, option run.micro_batch): a batch of N runs as N / b runs of a plan built
for b images, or only its first nodes do and the rest runs once on the whole batch. Checked on small models built
with onnx.helper, on the CPU:
- a CNN (Conv, Relu, MaxPool, channel Concat, Flatten, Gemm, Softmax) forced to runs of 1, 2 and 4 images gives
  the outputs of one run (and onnxruntime's); output and input shapes keep the whole batch; the stats and the note
  say what was done; a second run and a new batch size give the right outputs too;
- "auto" splits a model whose first nodes write values of 20 MiB or more for the batch (3 MiB an image at batch 8)
  and whose later nodes hold the weights: the first nodes in runs, the rest at once, with the outputs of one run
  (also with a graph output computed before the split, a value that crosses it twice and a Reshape whose shape
  is computed from the batch size); it leaves a small model alone;
- models whose nodes mix the images (Concat or Softmax over dim 0, Gemm with transA, a Reshape to a fixed batch,
  a batch-shaped constant added) are refused with the node named, and still give the right outputs;
- a bad option value is an error.

    python3 tests/micro_batch/test_micro_batch.py --lib build/lib/libnetrun.so
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bench"))
sys.path.insert(0, os.path.join(HERE, "..", "memory"))
from netrun_ctypes import Netrun, NetrunError  # noqa: E402
from test_inplace import G as BaseG  # noqa: E402

RNG = np.random.default_rng(11)
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


class G(BaseG):
    """The graph builder of tests/memory, with a kernel size for conv and a model saved to a path."""

    def conv(self, x, cin, cout, name, k=3):
        w = (RNG.standard_normal((cout, cin, k, k)) * 0.2).astype(np.float32)
        b = (RNG.standard_normal(cout) * 0.1).astype(np.float32)
        return self.n("Conv", [x, self.c(name + ".w", w), self.c(name + ".b", b)], name, pads=[k // 2] * 4)

    def model(self, inputs, outputs, path):
        onnx.save(super().model(inputs, outputs), path)
        return path


def cnn(path, c=16, hw=16, batch_dim="N"):
    """Conv/Relu/MaxPool, a channel Concat of two branches, Flatten, Gemm, Softmax over the classes."""
    g = G()
    a = g.n("Relu", [g.conv("x", 3, c, "c0")], "r0")
    p = g.n("MaxPool", [a], "pool", kernel_shape=[2, 2], strides=[2, 2])
    b1 = g.n("Relu", [g.conv(p, c, c, "b1", k=1)], "r1")
    b2 = g.n("Relu", [g.conv(p, c, c, "b2")], "r2")
    cat = g.n("Concat", [b1, b2], "cat", axis=1)
    gap = g.n("GlobalAveragePool", [cat], "gap")
    f = g.n("Flatten", [gap], "flat", axis=1)
    w = (RNG.standard_normal((10, 2 * c)) * 0.3).astype(np.float32)
    y = g.n("Gemm", [f, g.c("fc.w", w), g.c("fc.b", np.zeros(10, np.float32))], "fc", transB=1)
    g.n("Softmax", [y], "prob", axis=-1)
    return g.model([("x", [batch_dim, 3, hw, hw])], ["prob"], path)


def split_model(path, shape_of="p"):
    """Big first values (48 x 128 x 128 an image), pooled to p, then heavy 3x3 convs: "auto" splits after the
    pooling. p crosses the split twice (the tail conv and a residual Add) and is a graph output too; the Reshape
    at the end takes its shape from Shape(p) (computed before the split from the batch size) -- so the split
    must come after that Reshape or before the Shape node. shape_of="r0": the Shape node reads the big value
    before the pooling, which rules out the split after the pooling."""
    g = G()
    a = g.n("Relu", [g.conv("x", 3, 48, "c0")], "r0")
    p = g.n("MaxPool", [a], "p", kernel_shape=[4, 4], strides=[4, 4])
    shp = g.n("Shape", [p if shape_of == "p" else a], "shape")
    n0 = g.n("Gather", [shp, g.c("zero", np.array([0], np.int64))], "n0", axis=0)
    target = g.n("Concat", [n0, g.c("minus1", np.array([-1], np.int64))], "target", axis=0)
    t = g.n("Relu", [g.conv(p, 48, 128, "t1")], "t1r")
    t = g.conv(t, 128, 48, "t2")
    t = g.n("Add", [t, p], "res")
    t = g.n("Relu", [g.conv(t, 48, 128, "t3")], "t3r")
    gap = g.n("GlobalAveragePool", [t], "gap")
    flat = g.n("Reshape", [gap, target], "flat")
    w = (RNG.standard_normal((10, 128)) * 0.1).astype(np.float32)
    g.n("Gemm", [flat, g.c("fc.w", w), g.c("fc.b", np.zeros(10, np.float32))], "fc", transB=1)
    return g.model([("x", ["N", 3, 128, 128])], ["fc", "p"], path)


def split_crossings(nr, tmp, shape_of="p"):
    path = split_model(os.path.join(tmp, f"mb_split_{shape_of}_{os.getpid()}.onnx"), shape_of)
    x = RNG.standard_normal((8, 3, 128, 128)).astype(np.float32)
    outs = {}
    for mb in ("0", None):
        s = nr.session(path, threads=2, options={} if mb is None else {"run.micro_batch": mb})
        s.set_inputs({"x": x})
        s.prepare()
        s.run_only()
        outs[mb] = [np.array(o).copy() for o in s.outputs()]
        if mb is None:
            n, note = s.micro_batch()
            if shape_of == "p":
                check(n == 2 and "for the first" in note, f"split with crossings: {note}")
            else:  # the pooling ran after Shape(r0): no split after it
                check("(to 'p'" not in note, f"split with crossings, Shape of r0: not after the pooling ({note})")
        s.close()
    so = ort.SessionOptions()
    so.log_severity_level = 3
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for k, name in enumerate(("fc", "p (computed before the split)")):
        got, one = outs[None][k], outs["0"][k]
        check(got.shape == ref[k].shape, f"split with crossings: {name} keeps the batch ({got.shape})")
        check(np.abs(got - one).max() < 1e-6, f"split with crossings: {name} as one run gives it "
              f"(max diff {np.abs(got - one).max():.2e})")
        check(np.abs(got - ref[k]).max() < 1e-4, f"split with crossings: {name} matches onnxruntime")


def run(nr, path, x, threads=2, mb=None):
    s = nr.session(path, threads=threads, options={} if mb is None else {"run.micro_batch": mb})
    s.set_inputs({"x": x})
    s.prepare()
    s.run_only()
    out = np.array(s.outputs()[0])
    return s, out


def ort_out(path, x):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    tmp = os.environ.get("TMPDIR", "/tmp")
    path = cnn(os.path.join(tmp, f"mb_cnn_{os.getpid()}.onnx"))
    x = RNG.standard_normal((8, 3, 16, 16)).astype(np.float32)
    ref = ort_out(path, x)
    s0, base = run(nr, path, x, mb="0")
    check(s0.micro_batch() == (0, "off (run.micro_batch=0)"), "run.micro_batch=0: off, and says so")
    check(np.abs(base - ref).max() < 1e-5, "one run of 8 matches onnxruntime")
    s0.close()
    for b in (1, 2, 4):
        s, out = run(nr, path, x, mb=str(b))
        n, note = s.micro_batch()
        check(n == b and note.startswith(f"{8 // b} runs of {b} image"), f"run.micro_batch={b}: {note}")
        check(s.stats().micro_batch == b, f"stats.micro_batch = {b}")
        check(out.shape == (8, 10), f"runs of {b}: output keeps the batch ({out.shape})")
        check(np.abs(out - base).max() < 1e-6, f"runs of {b}: same outputs as one run "
              f"(max diff {np.abs(out - base).max():.2e})")
        x2 = RNG.standard_normal((8, 3, 16, 16)).astype(np.float32)  # same shape: the plan is kept
        s.set_inputs({"x": x2})
        s.run_only()
        check(np.abs(np.array(s.outputs()[0]) - ort_out(path, x2)).max() < 1e-5, f"runs of {b}: a second input")
        x3 = RNG.standard_normal((6, 3, 16, 16)).astype(np.float32)  # a new batch: prepared again
        s.set_inputs({"x": x3})
        s.prepare()
        s.run_only()
        out3 = np.array(s.outputs()[0])
        n3, note3 = s.micro_batch()
        want = b if 6 % b == 0 and b < 6 else 0
        check(n3 == want and out3.shape == (6, 10) and np.abs(out3 - ort_out(path, x3)).max() < 1e-5,
              f"batch 6 with run.micro_batch={b}: {note3}")
        s.close()

    # auto: runs where the values of the whole batch reach 20 MiB (48 x 128 x 128 floats an image, 24 MiB at
    # batch 8); the later nodes hold few weights here, so all may run in runs (split_crossings: a split)
    big = cnn(os.path.join(tmp, f"mb_big_{os.getpid()}.onnx"), c=48, hw=128)
    xb = RNG.standard_normal((8, 3, 128, 128)).astype(np.float32)
    s, out = run(nr, big, xb)
    n, note = s.micro_batch()
    check(n == 2 and note.startswith("4 runs of 2 images"), f"auto, 3 MiB per image: {note}")
    check(s.stats().micro_batch == 2, "auto, 3 MiB per image: stats.micro_batch = 2")
    _, whole = run(nr, big, xb, mb="0")
    check(np.abs(out - whole).max() < 1e-6, f"auto, 3 MiB per image: the outputs of one run "
          f"(max diff {np.abs(out - whole).max():.2e})")
    check(np.abs(out - ort_out(big, xb)).max() < 1e-5, "auto, 3 MiB per image: matches onnxruntime")
    x2 = RNG.standard_normal((8, 3, 128, 128)).astype(np.float32)
    s.set_inputs({"x": x2})
    s.run_only()
    check(np.abs(np.array(s.outputs()[0]) - ort_out(big, x2)).max() < 1e-5, "auto, split: a second input")
    s.close()
    s, _ = run(nr, path, x)
    n, note = s.micro_batch()
    check(n == 0 and "no split saves memory traffic" in note, f"auto, small activations: {note}")
    s.close()
    s, _ = run(nr, big, xb, threads=3)
    check(s.micro_batch()[0] == 0 and "do not split" in s.micro_batch()[1], f"auto, 8 images on 3 threads: "
          f"{s.micro_batch()[1]}")
    s.close()
    split_crossings(nr, tmp)
    split_crossings(nr, tmp, shape_of="r0")

    # refused: nodes that mix the images; outputs stay right
    def refused(name, build, want, shape=(8, 4)):
        g = G()
        out = build(g)
        p = g.model([("x", list(shape))], [out], os.path.join(tmp, f"mb_{name}_{os.getpid()}.onnx"))
        xi = RNG.standard_normal(shape).astype(np.float32)
        s, got = run(nr, p, xi, mb="2")
        n, note = s.micro_batch()
        check(n == 0 and want in note, f"{name}: refused ({note})")
        check(np.abs(got - ort_out(p, xi)).max() < 1e-5, f"{name}: outputs still right")
        s.close()

    refused("concat_axis0", lambda g: g.n("Concat", [g.n("Relu", ["x"], "r"), "x"], "cat", axis=0),
            "node 'cat' (Concat) works across dim 0")
    refused("softmax_axis0", lambda g: g.n("Softmax", ["x"], "sm", axis=0), "node 'sm' (Softmax) works across dim 0")
    refused("gemm_transA", lambda g: g.n("Gemm", ["x", g.c("w", RNG.standard_normal((8, 3)).astype(np.float32))],
                                         "gm", transA=1), "node 'gm' (Gemm)")
    refused("per_row_constant", lambda g: g.n("Add", ["x", g.c("k", RNG.standard_normal((8, 4)).astype(np.float32))],
                                              "add"), "node 'add' (Add): input 1 has a dim 0 of its own")
    refused("fixed_reshape", lambda g: g.n("Relu", [g.n("Reshape", ["x", g.c("shape", np.array([8, 2, 2]))], "rs")],
                                           "out"), "the plan for runs of 2 images failed")
    # [8, -1] infers at 2 images too ([8, 2]): only the check of the plan for 2 images sees it
    refused("fixed_reshape_inferred", lambda g: g.n("Relu", [g.n("Reshape", ["x", g.c("shape", np.array([8, -1]))],
                                                                 "rs")], "out"),
            "node 'rs' (Reshape) writes output 0 with a dim 0 other than the batch", shape=(8, 4, 2))
    try:
        run(nr, path, x, mb="two")
        check(False, "run.micro_batch=two is an error")
    except NetrunError as e:
        check("run.micro_batch" in str(e) and "'two'" in str(e), f"run.micro_batch=two is an error: {e}")
    for p in (path, big):
        os.remove(p)
    for f in os.listdir(tmp):
        if f.startswith("mb_") and f.endswith(f"_{os.getpid()}.onnx"):
            os.remove(os.path.join(tmp, f))
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
