#!/usr/bin/env python3
"""How the CPU backend cuts convs over threads, against onnxruntime (within 1e-4 of the largest output), at 1 and
2 threads:
- oneDNN convs on nChw16c X whose one image of X outweighs small weights (conv_dnnl.c's x_heavy: 480 -> 96 and
  576 -> 96 1x1 projections at 14x14, with and without a fused residual Add) run by image at batch 8 on 2 threads
  (the kernel column says "by image"); an expand 96 -> 576 (weights heavier than an image of X) keeps the channel
  slices; batch 1 and 3 (no even cut by images) too;
- depthwise oneDNN convs on nChw16c whose few 16-channel blocks split unevenly (16 and 48 channels) run by image
  at batch 8; 64 channels (two blocks a thread) keep the channel slices; cpu.dnnl_images=0 keeps them always;
- plain 1x1 convs on NCHW (conv1x1_blk.c, tiles of up to 64 pixels): planes whose last tile holds 1 to 4 vectors
  of pixels (14x14, 12x12 and 28x28: one; 9x9: two; 10x10: three; 11x11: four), 1 to 6 output channels in the
  last group of 6, Relu and a fused Add, batch 1 and 2.
Where the CPU backend has no oneDNN the kernel columns are not checked (said so).

    python3 tests/cpu/test_conv_split.py --lib build/lib/libnetrun.so
"""
import argparse
import os
import sys
import tempfile

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from netrun_ctypes import Netrun  # noqa: E402
from test_small_planes import Checker, model  # noqa: E402

RNG = np.random.default_rng(11)


def conv(name, x, c, m, k=1, stride=1, group=1, relu=True, inits=None, nodes=None):
    w = (RNG.standard_normal((m, c // group, k, k)) / np.sqrt(c // group * k * k)).astype(np.float32)
    b = (0.1 * RNG.standard_normal(m)).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"{name}.w"), numpy_helper.from_array(b, f"{name}.b")]
    out = f"{name}.y"
    nodes.append(helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [out], name=name, kernel_shape=[k, k],
                                  strides=[stride, stride], pads=[k // 2] * 4, group=group))
    if relu:
        nodes.append(helper.make_node("Relu", [out], [f"{name}.r"], name=f"{name}.relu"))
        out = f"{name}.r"
    return out


def projection_cases(c):
    for cin, residual in ((480, False), (576, True)):
        inits, nodes = [], []
        h = conv("stem", "x", 32, cin, k=3, inits=inits, nodes=nodes)
        p = conv("project", h, cin, 96, relu=False, inits=inits, nodes=nodes)
        if residual:
            s = conv("side", "x", 32, 96, relu=False, inits=inits, nodes=nodes)
            nodes.append(helper.make_node("Add", [p, s], ["sum"], name="add"))
            p = "sum"
        e = conv("expand", p, 96, 576, inits=inits, nodes=nodes)
        out = conv("head", e, 576, 32, k=3, relu=False, inits=inits, nodes=nodes)
        nodes.append(helper.make_node("Identity", [out], ["y"], name="out"))
        for batch in (1, 3, 8):
            x = RNG.standard_normal((batch, 32, 14, 14)).astype(np.float32)
            m = model(nodes, x.shape, np.float32, inits)
            tag = f"{cin} -> 96 1x1 at 14x14{' + Add' if residual else ''}, batch {batch}"
            c.check(tag + ": projection", m, x, kernel_node="project",
                    kernel_want=lambda k, b=batch: ("by image" in k) == (b == 8))
            c.check(tag + ": expand 96 -> 576", m, x, kernel_node="expand", kernel_want=lambda k: "by image" not in k,
                    threads_list=(2,))
        c.check(tag + ": projection, cpu.dnnl_images=0", m, x, options={"cpu.dnnl_images": "0"},
                kernel_node="project", kernel_want=lambda k: "by image" not in k, threads_list=(2,))


def depthwise_cases(c):
    for ch, size in ((16, 56), (48, 28), (64, 28)):
        inits, nodes = [], []
        h = conv("stem", "x", 16, ch, k=3, inits=inits, nodes=nodes)
        d = conv("dw", h, ch, ch, k=3, stride=2, group=ch, inits=inits, nodes=nodes)
        out = conv("head", d, ch, 32, k=3, relu=False, inits=inits, nodes=nodes)
        nodes.append(helper.make_node("Identity", [out], ["y"], name="out"))
        for batch in (1, 8):
            x = RNG.standard_normal((batch, 16, size, size)).astype(np.float32)
            m = model(nodes, x.shape, np.float32, inits)
            c.check(f"depthwise {ch} x {size}x{size} 3x3/2, batch {batch}", m, x, kernel_node="dw",
                    kernel_want=lambda k, b=batch, n=ch: ("by image" in k) == (b == 8 and n < 64))
        c.check(f"depthwise {ch} x {size}x{size} 3x3/2, batch 8, cpu.dnnl_images=0", m, x,
                options={"cpu.dnnl_images": "0"}, kernel_node="dw", kernel_want=lambda k: "by image" not in k,
                threads_list=(2,))


def plain_1x1_cases(c):
    # C -> M on plain tensors (no multiples of 16); planes whose last 64-pixel tile holds 1..4 vectors
    for cin, m_out, size in ((116, 116, 14), (116, 116, 12), (24, 72, 28), (72, 23, 11), (40, 121, 10), (29, 7, 9)):
        inits, nodes = [], []
        p = conv("pw", "x", cin, m_out, inits=inits, nodes=nodes)
        q = conv("pw2", p, m_out, m_out, relu=False, inits=inits, nodes=nodes)
        nodes.append(helper.make_node("Add", [q, p], ["y"], name="add"))
        for batch in (1, 2):
            x = RNG.standard_normal((batch, cin, size, size)).astype(np.float32)
            m = model(nodes, x.shape, np.float32, inits)
            c.check(f"plain 1x1 {cin} -> {m_out} -> {m_out} + Add at {size}x{size}, batch {batch}", m, x,
                    kernel_node="pw2")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    args = ap.parse_args()
    nr = Netrun(args.lib)
    with tempfile.TemporaryDirectory() as tmp:
        c = Checker(nr, tmp)
        projection_cases(c)
        depthwise_cases(c)
        plain_1x1_cases(c)
    if not c.onednn:
        print("note: no oneDNN in this CPU backend; kernel columns not checked")
    print(f"{c.checked - c.failed} of {c.checked} checks passed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
