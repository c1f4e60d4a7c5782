#!/usr/bin/env python3
"""The CPU paths for small models and small planes against onnxruntime (within 1e-4 of the largest output),
at 1 and 2 threads:
- Pad (data_movement.c: per-dim index tables and a row counter): constant / reflect / edge / wrap, 3-D to 5-D,
  pads on every dim, negative pads (crops), float32, int64 and uint8 (the 4-byte edge loop and the generic one);
- nearest Resize (resize.c: a row counter instead of divisions per row): 2x and odd upsamples, downsamples,
  scaled batch and channel dims, the nearest modes and coordinate modes, tf_crop_and_resize with its
  extrapolation value (rows and columns outside the input), float32 and uint8;
- oneDNN stems with 3 input channels on a plain X (conv_dnnl.c): into a plain Y of 24 / 8 channels at batch 2-8,
  cut by images (the kernel column says "by image"), and plain convs with small weights (232 -> 232 1x1,
  24 -> 40 3x3) the same; into one nChw16c block at batch 1 (a Conv after it keeps
  it blocked), cut into bands of output rows ("by rows"): odd row counts, strides 1 and 2, pads, Relu and
  HardSwish (the band's activation after the primitive); cpu.dnnl_images=0 keeps the channel slices;
- convs on a plain X and Y whose 16-channel slices would leave most threads idle (a detector head's 1-27 output
  channels): cut into bands of output rows with all the channels ("by rows") at 2-16 threads: odd planes,
  strides 1 and 2, 3x3 and 5x5 with asymmetric pads, dilation 2, Relu / HardSwish / Sigmoid / SiLU after;
  the same from an nChw16c X (a conv before it; each band's rows copied dense): 64 / 32 / 15 output channels;
- Split then Concat (data_movement.c: rows of 4-32 bytes copied at a fixed size): a detector's box columns
  [4800, 4] split 2 + 2 and 1 + 3, 3-D splits on inner and outer axes, float32 / int64 / uint8, pieces
  concatenated in the other order;
- plain depthwise convs on the own kernel with output rows 14+ wide (3x3) or 16+ wide (5x5), else oneDNN (conv.c);
- 1x1 convs on nChw16c X and Y at batch 1 with at most 2 blocks of output channels per thread on planes up to
  56x56, or 4 on planes from 28x28 (conv1x1_blk.c instead of oneDNN's channel slices; ResNet-50's 256 -> 64 at
  56x56, 256 / 512 -> 128), with a fused residual sum; cpu.conv1x1_bb=0 keeps oneDNN;
- 1x1 stride-2 downsamples with the residual sum fused (the direct kernel), its tasks by output row first or by
  pairs of output blocks (cpu.direct_rows=1 / 0 and the default choice);
- HardSwish, HardSigmoid and LeakyRelu fused into convs: the own 1x1 kernels plain / nChw16c on either side,
  the stride-2 direct and Winograd kernels, plain depthwise (their epilogues), and oneDNN's HardSwish post-op,
  at batch 1 and 2: every node's kernel is printed.
Where the CPU backend has no oneDNN the kernel columns are not checked (said so).

    python3 tests/cpu/test_small_planes.py --lib build/lib/libnetrun.so
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from netrun_ctypes import Netrun  # noqa: E402

RNG = np.random.default_rng(7)
NP_TO_TP = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8}


def model(nodes, x_shape, x_dtype, inits, opset=19):
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", NP_TO_TP[x_dtype], list(x_shape))],
                          [helper.make_tensor_value_info("y", NP_TO_TP[x_dtype], None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def rand(shape, dtype):
    if dtype == np.float32:
        return RNG.standard_normal(shape).astype(np.float32)
    hi = 250 if dtype == np.uint8 else 1000
    return RNG.integers(0, hi, size=shape).astype(dtype)


class Checker:
    def __init__(self, nr, tmp):
        self.nr, self.tmp = nr, tmp
        self.failed = self.checked = 0
        self.onednn = False

    def check(self, tag, m, x, options=None, kernel_node=None, kernel_want=None, threads_list=(1, 2)):
        path = os.path.join(self.tmp, "m.onnx")
        onnx.save(m, path)
        ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        for threads in threads_list:
            errors = []
            with self.nr.session(path, backends="cpu", threads=threads, options=options) as s:
                y = s.run({"x": x})[0]
                kernels = {nm: k for nm, _, _, k in s.nodes()}
            if y.shape != ref.shape:
                errors.append(f"shape {y.shape} vs onnxruntime's {ref.shape}")
            else:
                d = float(np.max(np.abs(y.astype(np.float64) - ref.astype(np.float64)))) if y.size else 0.0
                scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
                if not d <= 1e-4 * scale:
                    errors.append(f"max abs diff {d:.2e} vs onnxruntime")
            kernel = ""
            if kernel_node:
                kernel = next((k for nm, k in kernels.items() if nm.startswith(kernel_node)), "")
                if "oneDNN" in "".join(kernels.values()):
                    self.onednn = True
                    if kernel_want and threads > 1 and not kernel_want(kernel):
                        errors.append(f"kernel '{kernel}' is not the one expected")
            self.checked += 1
            full = f"{tag} threads {threads}" + (f" {options}" if options else "")
            if errors:
                self.failed += 1
                print(f"FAIL {full}: " + "; ".join(errors))
            else:
                print(f"ok   {full}" + (f": {kernel}" if kernel else ""))


def pad_cases(c):
    cases = [
        ((2, 5, 6, 7), [0, 1, 2, 3, 1, 0, 1, 2], "reflect"),
        ((8, 32, 16, 16), [0, 0, 1, 1, 0, 0, 1, 1], "reflect"),  # YOLO-style
        ((3, 4, 9, 5), [1, 0, 2, 3, 0, 2, 1, 4], "edge"),
        ((3, 4, 9, 5), [0, 1, 2, 3, 1, 0, 1, 2], "constant"),
        ((2, 3, 6, 7), [0, 0, -1, 2, 0, 0, 2, -3], "reflect"),  # crops
        ((2, 3, 6, 7), [1, 0, -2, -1, 0, 1, 1, 3], "edge"),
        ((2, 3, 6, 7), [0, -1, 2, -2, 1, 0, -1, 2], "constant"),
        ((2, 3, 6, 7), [0, 1, 2, 3, 0, 1, 4, 2], "wrap"),
        ((4, 11, 13), [1, 2, 3, 0, 4, 5], "reflect"),
        ((2, 3, 2, 4, 5), [0, 1, 1, 2, 1, 1, 0, 1, 2, 2], "edge"),
    ]
    for shape, pads, mode in cases:
        for dtype in (np.float32, np.int64, np.uint8):
            if mode == "reflect" and dtype == np.uint8 and len(shape) == 5:
                continue
            inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads")]
            ins = ["x", "pads"]
            if mode == "constant":
                inits.append(numpy_helper.from_array(np.array(7, dtype), "value"))
                ins.append("value")
            m = model([helper.make_node("Pad", ins, ["y"], mode=mode)], shape, dtype, inits)
            c.check(f"Pad {mode} {shape} pads {pads} {np.dtype(dtype).name}", m, rand(shape, dtype))


def resize_cases(c):
    cases = [
        ((8, 64, 8, 8), [1, 1, 2, 2], "asymmetric", "floor", np.float32),  # YOLO-style 2x
        ((2, 3, 5, 7), [1, 1, 3, 3], "asymmetric", "floor", np.float32),
        ((2, 3, 5, 7), [1, 1, 1.7, 2.3], "half_pixel", "round_prefer_floor", np.float32),
        ((2, 3, 9, 11), [1, 1, 0.5, 0.4], "half_pixel", "round_prefer_ceil", np.float32),
        ((2, 3, 5, 7), [1, 1, 2.5, 1.5], "align_corners", "ceil", np.float32),
        ((2, 3, 5, 7), [2, 3, 2, 2], "asymmetric", "floor", np.float32),  # batch and channels scaled too
        ((3, 4, 6, 6), [1, 1, 2, 2], "pytorch_half_pixel", "round_prefer_floor", np.uint8),
        ((5, 7, 9), [1, 2, 2], "asymmetric", "floor", np.float32),
    ]
    for shape, scales, ctm, nm, dtype in cases:
        inits = [numpy_helper.from_array(np.array(scales, np.float32), "scales")]
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                                coordinate_transformation_mode=ctm, nearest_mode=nm)
        m = model([node], shape, dtype, inits)
        c.check(f"Resize nearest {shape} x {scales} {ctm} {nm} {np.dtype(dtype).name}", m, rand(shape, dtype))
    # tf_crop_and_resize: a roi reaching past the input on both axes, so rows and columns fall outside
    shape = (2, 3, 6, 8)
    roi = np.array([0, 0, -0.3, 0.2, 1, 1, 1.2, 1.4], np.float32)
    inits = [numpy_helper.from_array(roi, "roi"), numpy_helper.from_array(np.array([2, 3, 9, 10], np.int64), "sizes")]
    node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="nearest",
                            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-5.0,
                            nearest_mode="round_prefer_floor")
    c.check("Resize nearest tf_crop_and_resize outside rows and columns", model([node], shape, np.float32, inits),
            rand(shape, np.float32))


def conv_w(m, c, k):
    return (RNG.standard_normal((m, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)


def stem_model(batch, hw, m, k, stride, act, follow):
    """3 -> m stem (+ act); follow: a 3x3 Conv m -> 16 after it (so that the nChw16c pass blocks the stem's Y)."""
    pad = k // 2
    inits = [numpy_helper.from_array(conv_w(m, 3, k), "w0"),
             numpy_helper.from_array((RNG.standard_normal(m) * 0.1).astype(np.float32), "b0")]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["s"], name="stem", pads=[pad] * 4, strides=[stride] * 2)]
    last = "s"
    if act == "relu":
        nodes.append(helper.make_node("Relu", [last], ["sa"], name="stem_act"))
        last = "sa"
    elif act == "hswish":
        nodes.append(helper.make_node("HardSwish", [last], ["sa"], name="stem_act"))
        last = "sa"
    if follow:
        inits.append(numpy_helper.from_array(conv_w(16, m, 3), "w1"))
        nodes.append(helper.make_node("Conv", [last, "w1"], ["y"], name="next", pads=[1] * 4))
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"]))
    return model(nodes, (batch, 3, hw, hw), np.float32, inits, opset=17)


def stem_cases(c):
    # plain X and Y, uneven channel slices, batch >= threads: by image
    for batch, hw, m, stride in [(8, 64, 24, 2), (4, 33, 24, 2), (2, 31, 8, 1), (6, 20, 24, 1)]:
        for act in ("relu", "hswish"):
            mo = stem_model(batch, hw, m, 3, stride, act, follow=False)
            x = rand((batch, 3, hw, hw), np.float32)
            c.check(f"stem 3->{m} {hw}x{hw}/{stride} batch {batch} {act} plain Y", mo, x, kernel_node="stem",
                    kernel_want=lambda k: "by image" in k or "oneDNN" not in k)
            c.check(f"stem 3->{m} {hw}x{hw}/{stride} batch {batch} {act} plain Y", mo, x,
                    options={"cpu.dnnl_images": "0"}, kernel_node="stem",
                    kernel_want=lambda k: "by image" not in k, threads_list=(2,))
    # plain X and Y with small weights and uneven channel slices (ShuffleNetV2's 232-channel 1x1 at 7x7): by image
    for batch, cin, m, hw, k in [(8, 232, 232, 7, 1), (4, 24, 40, 20, 3)]:
        inits = [numpy_helper.from_array(conv_w(m, cin, k), "w"),
                 numpy_helper.from_array((RNG.standard_normal(m) * 0.1).astype(np.float32), "b")]
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[k // 2] * 4),
                 helper.make_node("Relu", ["c"], ["y"])]
        mo = model(nodes, (batch, cin, hw, hw), np.float32, inits, opset=17)
        x = rand((batch, cin, hw, hw), np.float32)
        c.check(f"conv {cin}->{m} k{k} {hw}x{hw} batch {batch} plain X and Y", mo, x, kernel_node="conv",
                kernel_want=lambda kk: "by image" in kk or "oneDNN" not in kk)
    # nChw16c Y of one block at batch 1: bands of rows
    for hw, k, stride in [(224, 3, 2), (17, 3, 2), (19, 3, 1), (24, 5, 2), (16, 3, 1)]:
        for act in ("relu", "hswish", None):
            mo = stem_model(1, hw, 16, k, stride, act, follow=True)
            x = rand((1, 3, hw, hw), np.float32)
            c.check(f"stem 3->16 {hw}x{hw} k{k}/{stride} batch 1 {act} nChw16c Y", mo, x, kernel_node="stem",
                    kernel_want=lambda kk: "by rows" in kk or "nChw16c" not in kk)
            c.check(f"stem 3->16 {hw}x{hw} k{k}/{stride} batch 1 {act} nChw16c Y", mo, x,
                    options={"cpu.dnnl_images": "0"}, kernel_node="stem",
                    kernel_want=lambda kk: "by rows" not in kk, threads_list=(2,))


def padded_stem_case(c):
    # pads far wider than the input: with 4 threads the first band of rows would read no input row at all, so
    # the stem is not cut into bands there (and the output must still match)
    inits = [numpy_helper.from_array(conv_w(16, 3, 3), "w0"), numpy_helper.from_array(conv_w(16, 16, 3), "w1")]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["s"], name="stem", pads=[20, 20, 20, 20]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Conv", ["r", "w1"], ["y"], name="next", pads=[1] * 4)]
    mo = model(nodes, (1, 3, 4, 4), np.float32, inits, opset=17)
    c.check("stem 3->16 4x4 pads 20 batch 1", mo, rand((1, 3, 4, 4), np.float32), kernel_node="stem",
            threads_list=(1, 2, 4))


def head_band_cases(c):
    for cin, m, h, w, k, stride, pads, dil, act in [
            (32, 16, 40, 40, 3, 1, [1, 1, 1, 1], 1, "relu"),     # a face detector's head: bands at 2-16 threads
            (64, 15, 40, 40, 3, 1, [1, 1, 1, 1], 1, None),       # a two-stage detector's RPN heads (siblings)
            (48, 14, 23, 17, 3, 1, [1, 1, 1, 1], 1, "hswish"),
            (64, 27, 20, 20, 3, 1, [1, 1, 1, 1], 1, "sigmoid"),  # two channel slices
            (32, 8, 41, 37, 5, 2, [2, 1, 3, 2], 1, "relu"),
            (32, 3, 40, 40, 3, 1, [2, 2, 2, 2], 2, None),
            (32, 12, 33, 40, 3, 1, [1, 1, 1, 1], 1, "silu"),     # Swish after the primitive, band by band
            (64, 1, 10, 10, 3, 1, [1, 1, 1, 1], 1, "relu")]:     # too little work to cut
        inits = [numpy_helper.from_array(conv_w(m, cin, k), "w"),
                 numpy_helper.from_array((RNG.standard_normal(m) * 0.1).astype(np.float32), "b")]
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="head", pads=pads, strides=[stride] * 2,
                                  dilations=[dil] * 2)]
        if act == "silu":
            nodes += [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
        else:
            nodes.append(helper.make_node({"relu": "Relu", "hswish": "HardSwish", "sigmoid": "Sigmoid"}[act], ["c"],
                                          ["y"]) if act else helper.make_node("Identity", ["c"], ["y"]))
        mo = model(nodes, (1, cin, h, w), np.float32, inits, opset=17)
        x = rand((1, cin, h, w), np.float32)
        big = m <= 16 and h * w >= 900 and stride == 1 and dil == 1
        c.check(f"head conv {cin}->{m} k{k}/{stride} dil {dil} pads {pads} {h}x{w} {act} plain X and Y", mo, x,
                kernel_node="head", kernel_want=(lambda kk: "by rows" in kk or "oneDNN" not in kk) if big else None,
                threads_list=(1, 2, 3, 16))


def blocked_x_band_cases(c):
    for m, h, w in [(64, 40, 40), (32, 23, 30), (15, 40, 40), (64, 9, 40)]:
        inits = [numpy_helper.from_array(conv_w(64, 16, 3), "w0"), numpy_helper.from_array(conv_w(m, 64, 3), "w1"),
                 numpy_helper.from_array((RNG.standard_normal(m) * 0.1).astype(np.float32), "b1")]
        nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="pre", pads=[1] * 4),
                 helper.make_node("Relu", ["a"], ["r"]),
                 helper.make_node("Conv", ["r", "w1", "b1"], ["c"], name="head", pads=[1] * 4),
                 helper.make_node("Relu", ["c"], ["y"])]
        mo = model(nodes, (1, 16, h, w), np.float32, inits, opset=17)
        x = rand((1, 16, h, w), np.float32)
        c.check(f"head conv 64->{m} {h}x{w} from an nChw16c X, plain Y", mo, x, kernel_node="head",
                kernel_want=(lambda kk: "by rows" in kk or "oneDNN" not in kk) if m == 15 and h >= 20 else None,
                threads_list=(1, 2, 3, 16))


def split_concat_cases(c):
    for shape, axis, sizes, dtype in [((4800, 4), 1, [2, 2], np.float32), ((4800, 4), -1, [1, 3], np.float32),
                                      ((7, 5, 6), 1, [2, 3], np.int64), ((3, 10, 3), 2, [1, 1, 1], np.uint8),
                                      ((2100, 8), 1, [4, 4], np.float32), ((6, 2, 3), 0, [1, 5], np.float32),
                                      ((9, 3, 4), 2, [3, 1], np.int64)]:
        outs = [f"p{i}" for i in range(len(sizes))]
        nodes = [helper.make_node("Split", ["x", "sizes"], outs, axis=axis),
                 helper.make_node("Concat", outs[::-1], ["y"], axis=axis)]
        m = model(nodes, shape, dtype, [numpy_helper.from_array(np.array(sizes, np.int64), "sizes")], opset=18)
        c.check(f"Split {shape} axis {axis} {sizes} + Concat {np.dtype(dtype).name}", m, rand(shape, dtype),
                threads_list=(1, 2, 4))


def dw_cases(c):
    for batch, ch, hw, stride, k in [(8, 116, 28, 2, 3), (2, 40, 14, 1, 3), (1, 72, 15, 1, 3), (2, 232, 14, 2, 3),
                                     (1, 24, 7, 1, 3), (2, 120, 14, 1, 5), (1, 40, 16, 1, 5)]:
        w = (RNG.standard_normal((ch, 1, k, k)) / k).astype(np.float32)
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="dw", group=ch, pads=[k // 2] * 4,
                                  strides=[stride] * 2),
                 helper.make_node("Relu", ["c"], ["y"])]
        mo = model(nodes, (batch, ch, hw, hw), np.float32, [numpy_helper.from_array(w, "w")], opset=17)
        ow = (hw + 2 * (k // 2) - k) // stride + 1
        own = ow >= (14 if k == 3 else 16)
        c.check(f"depthwise {k}x{k} {ch} ch {hw}x{hw}/{stride} ({ow} wide) batch {batch}", mo,
                rand((batch, ch, hw, hw), np.float32), kernel_node="dw",
                kernel_want=lambda k, own=own: ("depthwise direct" in k) == own)


def pw_cases(c):
    # up to 2 blocks of output channels a thread on any plane up to 56x56, up to 4 on planes from 28x28 (ResNet-50's
    # 256 / 512 -> 128 in layer2); 384 -> 96 at 14x14 (6 blocks, 3 a thread) stays on oneDNN
    for cin, m, hw, res in [(256, 64, 56, False), (64, 64, 56, True), (32, 64, 55, False), (32, 32, 41, True),
                            (256, 128, 56, False), (512, 128, 28, False), (128, 128, 28, True), (128, 112, 30, False),
                            (384, 96, 14, False)]:
        inits = [numpy_helper.from_array(conv_w(cin, 16, 3), "w0"), numpy_helper.from_array(conv_w(m, cin, 1), "w1"),
                 numpy_helper.from_array((RNG.standard_normal(m) * 0.1).astype(np.float32), "b1"),
                 numpy_helper.from_array(conv_w(16, m, 3), "w2")]
        nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="pre", pads=[1] * 4),
                 helper.make_node("Conv", ["a", "w1", "b1"], ["p"], name="pw")]
        last = "p"
        if res:  # cin == m: the residual sum fused into the 1x1 conv
            nodes.append(helper.make_node("Add", ["p", "a"], ["s"], name="res"))
            last = "s"
        nodes += [helper.make_node("Relu", [last], ["r"]), helper.make_node("Conv", ["r", "w2"], ["y"], name="post", pads=[1] * 4)]
        mo = model(nodes, (1, 16, hw, hw), np.float32, inits, opset=17)
        x = rand((1, 16, hw, hw), np.float32)
        tag = f"1x1 {cin}->{m} {hw}x{hw} batch 1{' + residual' if res else ''} nChw16c in/out"
        own = hw * hw >= 784 or m <= 64
        c.check(tag, mo, x, kernel_node="pw",
                kernel_want=lambda k, own=own: ("1x1 avx512 (nChw16c in/out)" in k) == own or "nChw16c" not in k)
        c.check(tag, mo, x, options={"cpu.conv1x1_bb": "0"}, kernel_node="pw",
                kernel_want=lambda k: "avx512" not in k, threads_list=(2,))


def downsample_cases(c):
    # ResNet's 1x1 stride-2 downsample with the residual sum fused (conv_direct_blk.c): tasks by output row first
    # where the weights are smaller than X (256 -> 512 at 56x56), by pairs of output blocks otherwise (512 -> 1024
    # at 28x28); cpu.direct_rows forces either order. Odd plane sizes leave a partial last row tile.
    for cin, m, hw, batch in [(256, 512, 56, 1), (64, 128, 29, 2), (512, 1024, 28, 1), (32, 64, 15, 3)]:
        oh = (hw - 1) // 2 + 1
        inits = [numpy_helper.from_array(conv_w(cin, 16, 3), "w0"), numpy_helper.from_array(conv_w(m, cin, 1), "wd"),
                 numpy_helper.from_array((RNG.standard_normal(m) * 0.1).astype(np.float32), "bd"),
                 numpy_helper.from_array(conv_w(m, cin, 3), "w1"), numpy_helper.from_array(conv_w(16, m, 1), "w2")]
        # the main branch first, as in torchvision's ResNet: the downsample then takes the sum (and the Relu);
        # a Conv after it keeps its Y on nChw16c
        nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="pre", pads=[1] * 4),
                 helper.make_node("Conv", ["a", "w1"], ["b"], name="main", pads=[1] * 4, strides=[2, 2]),
                 helper.make_node("Conv", ["a", "wd", "bd"], ["d"], name="down", strides=[2, 2]),
                 helper.make_node("Add", ["b", "d"], ["s"], name="res"),
                 helper.make_node("Relu", ["s"], ["r"]),
                 helper.make_node("Conv", ["r", "w2"], ["y"], name="post")]
        mo = model(nodes, (batch, 16, hw, hw), np.float32, inits, opset=17)
        x = rand((batch, 16, hw, hw), np.float32)
        tag = f"1x1 stride 2 {cin}->{m} {hw}x{hw} -> {oh}x{oh} batch {batch} + residual"
        for opt in (None, {"cpu.direct_rows": "1"}, {"cpu.direct_rows": "0"}):
            c.check(tag, mo, x, options=opt, kernel_node="down", threads_list=(1, 2) if opt is None else (2,),
                    kernel_want=lambda k: "direct stride 2" in k)


def act_node(kind, x, y, name):
    if kind == "hswish":
        return helper.make_node("HardSwish", [x], [y], name=name)
    if kind == "hsig":
        return helper.make_node("HardSigmoid", [x], [y], name=name, alpha=0.25, beta=0.45)
    return helper.make_node("LeakyRelu", [x], [y], name=name, alpha=0.1)


def act_cases(c):
    for act in ("hswish", "hsig", "leaky"):
        for batch in (1, 2):
            # plain depthwise (own kernel) and plain 1x1 (own kernel), then a chain through the nChw16c kernels:
            # 24 -> 48 1x1 (plain X), 48 -> 48 1x1, 3x3 stride 2, 3x3 stride 1, 48 -> 24 1x1 (plain Y)
            specs = [("dw", 24, 24, 3, 1, 24), ("pw0", 24, 24, 1, 1, 1), ("pw1", 24, 48, 1, 1, 1), ("pw2", 48, 48, 1, 1, 1),
                     ("s2", 48, 48, 3, 2, 1), ("s1", 48, 48, 3, 1, 1), ("pw3", 48, 24, 1, 1, 1)]
            nodes, inits, last = [], [], "x"
            for name, cin, m, k, st, grp in specs:
                inits.append(numpy_helper.from_array(conv_w(m, cin // grp, k), f"w_{name}"))
                inits.append(numpy_helper.from_array((RNG.standard_normal(m) * 0.5).astype(np.float32), f"b_{name}"))
                nodes.append(helper.make_node("Conv", [last, f"w_{name}", f"b_{name}"], [f"c_{name}"], name=name, group=grp,
                                              pads=[k // 2] * 4, strides=[st] * 2))
                nodes.append(act_node(act, f"c_{name}", f"a_{name}", f"{name}_act"))
                last = f"a_{name}"
            nodes.append(helper.make_node("Identity", [last], ["y"]))
            mo = model(nodes, (batch, 24, 30, 30), np.float32, inits, opset=17)
            x = (RNG.standard_normal((batch, 24, 30, 30)) * 3).astype(np.float32)
            for threads in (1, 2):
                path = os.path.join(c.tmp, "m.onnx")
                onnx.save(mo, path)
                with c.nr.session(path, backends="cpu", threads=threads) as s:
                    s.run({"x": x})
                    kernels = "; ".join(f"{nm.split('+')[0]}: {k}" for nm, _, _, k in s.nodes())
                print(f"     {act} batch {batch} threads {threads} kernels: {kernels}")
            c.check(f"conv chain + {act} batch {batch}", mo, x)
    # a oneDNN conv with HardSwish as its post-op (3x3, 16 -> 32, nChw16c both sides)
    inits = [numpy_helper.from_array(conv_w(16, 3, 3), "w0"), numpy_helper.from_array(conv_w(32, 16, 3), "w1"),
             numpy_helper.from_array((RNG.standard_normal(32) * 0.5).astype(np.float32), "b1"),
             numpy_helper.from_array(conv_w(16, 32, 3), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="pre", pads=[1] * 4),
             helper.make_node("Conv", ["a", "w1", "b1"], ["c"], name="mid", pads=[1] * 4),
             helper.make_node("HardSwish", ["c"], ["h"], name="mid_act"),
             helper.make_node("Conv", ["h", "w2"], ["y"], name="post", pads=[1] * 4)]
    mo = model(nodes, (2, 3, 20, 20), np.float32, inits, opset=17)
    c.check("oneDNN 3x3 16 -> 32 + HardSwish post-op", mo, (RNG.standard_normal((2, 3, 20, 20)) * 3).astype(np.float32),
            options={"cpu.conv_wino": "0", "cpu.winograd": "0"}, kernel_node="mid", kernel_want=lambda k: "oneDNN" in k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    with tempfile.TemporaryDirectory() as tmp:
        c = Checker(nr, tmp)
        pad_cases(c)
        resize_cases(c)
        stem_cases(c)
        padded_stem_case(c)
        head_band_cases(c)
        blocked_x_band_cases(c)
        split_concat_cases(c)
        dw_cases(c)
        pw_cases(c)
        downsample_cases(c)
        act_cases(c)
    if not c.onednn:
        print("note: no node ran on oneDNN (built without it): the kernel columns were not checked")
    print(f"{c.checked - c.failed}/{c.checked} passed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
