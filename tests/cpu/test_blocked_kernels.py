#!/usr/bin/env python3
"""The CPU's own nChw16c kernels against onnxruntime (within the suite's 1e-4 of the largest output), with
their AVX-512 paths on and off (cpu.pool_avx512 / cpu.conv1x1_blk = 0: the portable MaxPool loop, oneDNN's
1x1), at batch 1 and 2, 1 and 2 threads:
- blocked MaxPool (pool.c) between two nChw16c Convs: odd planes, ceil_mode, pads (asymmetric), dilations,
  strides 1-3, kernels 1-5, 16 and 32 channels;
- plain 2-D MaxPool (pool.c's row kernel; stride 2 vectorized 16 outputs at a time): rows of 1-130 columns,
  ceil_mode, pads, -inf inputs;
- 1x1 Conv from a plain X whose channel count is no multiple of 16 into nChw16c Y (conv1x1_blk.c): 3, 24, 40
  channels to 16/48/144, pixel counts that leave partial tiles, bias or none, Relu / Clip / SiLU / LeakyRelu
  epilogues, a fused residual sum with a blocked Z;
- and the other way, nChw16c X into a plain Y of 24 / 40 / 56 / 12 / 8 / 1 channels (projections), with a
  plain Z, on the two-block tile (cpu.conv1x1_yp2, 8-lane second blocks) and on the one-block tile;
- nChw16c X and Y (cpu.conv1x1_bb: 16 or 48 output channels, 2 threads; up to 64 channels on planes up to
  28x28 at batch 1), with a blocked Z;
- stride-2 3x3 (pad 1) and 1x1 convs on nChw16c X and Y (conv_direct_blk.c, cpu.conv_s2): rows of 28 / 14 / 7
  columns (the fixed tiles), 12 / 20 / 15 / 29 (tail tiles, at the left pad, at the right pad of odd widths, one
  tile at both), odd planes, pads_end 0,
  16 / 48 output channels (a lone last block), bias or none, Relu / Clip / SiLU, a fused blocked Z;
- the same kernel on stride-1 3x3 convs with pads 1 (cpu.wino_min_tiles large: the direct kernel wherever
  Winograd's U is beyond L2; 0 with everything else off: oneDNN): rows of 7 / 14 / 28 / 56 columns (one tile at both pads, tiles at the
  left and the right pad), 19 / 3 / 23 (tail tiles), a lone last block, bias or none, activations, a fused Z;
- 1x1 Conv on plain X and Y (conv1x1_blk.c, cpu.conv1x1_plain): ShuffleNet's channel counts, pixel counts
  that leave partial vectors and tiles, output channels not a multiple of the 6-row tile, bias or none,
  Relu / SiLU / no activation, a fused plain Z;
- plain NCHW depthwise Conv (conv_depthwise.c; cpu.dw_tiled / cpu.dw_split: the tiled AVX-512 kernel, stride 2
  on rows split into even and odd columns, or the one-vector kernel):
  rows of 17-130 columns (1-4 vectors, chunks of 64, 2- and 4-row tiles with rows left over), strides 1-3,
  dilations, asymmetric pads, 3x3 / 5x5 / 3x1 / 1x3 kernels, Relu / Clip / SiLU / LeakyRelu, a fused sum;
- depthwise Conv on nChw16c X and Y (oneDNN, between the kernels above): 3x3 / 5x5 / 1x1 / 3x5 kernels,
  strides 1-2, pads (asymmetric, none, wider than the kernel), dilations, small planes, with and without
  bias, Clip / SiLU epilogues;
- 1x1 convs on the 1x1 planes of a GlobalAveragePool (cpu.conv_gemv: one GEMV per image, output channels cut
  over the threads; off: oneDNN): squeeze-excite shapes, few rows, a fused sum, SiLU / Sigmoid / Relu;
- oneDNN nChw16c convs at batch 2-6 and 2 threads cut by images (cpu.dnnl_images; uneven channel slices or small
  weights on big planes; a plain-X conv with fewer 16-channel slices than threads; a depthwise conv of 1 or 3
  blocks of 16 channels, not 4) and by output channels (cpu.dnnl_images=0; batch 3: too few images for 2 threads).
The kernel column must name the AVX-512 1x1 kernel when it is on and the CPU has AVX-512F, never when off.

    python3 tests/cpu/test_blocked_kernels.py --lib build/lib/libnetrun.so
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

RNG = np.random.default_rng(11)


class G:
    def __init__(self):
        self.nodes, self.inits = [], []

    def c(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    def n(self, op, ins, out, **kw):
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def conv(self, x, cin, cout, name, k=3, bias=True, group=1, pad=None):
        w = RNG.standard_normal((cout, cin // group, k, k)) * (1.0 / np.sqrt(k * k * cin / group))
        ins = [x, self.c(name + ".w", w)] + ([self.c(name + ".b", RNG.standard_normal(cout) * 0.3)] if bias else [])
        p = k // 2 if pad is None else pad
        return self.n("Conv", ins, name, pads=[p, p, p, p], group=group)

    def act(self, y, kind, name):
        """y through the activation named kind (None: y itself), nodes named name.*"""
        if kind == "relu6":
            return self.n("Clip", [y, self.c("lo", np.array(0)), self.c("hi", np.array(6))], name + ".clip")
        if kind == "silu":
            return self.n("Mul", [y, self.n("Sigmoid", [y], name + ".sig")], name + ".silu")
        if kind == "relu":
            return self.n("Relu", [y], name + ".relu")
        if kind == "leaky":
            return self.n("LeakyRelu", [y], name + ".leaky", alpha=0.1)
        return y

    def model(self, inputs, outputs):
        g = helper.make_graph(self.nodes, "blk", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None)) for n in outputs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


POOLS = [  # (channels, H, W, MaxPool attributes)
    (16, 13, 17, dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    (32, 16, 16, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    (16, 12, 9, dict(kernel_shape=[2, 2], strides=[2, 2])),
    (16, 11, 14, dict(kernel_shape=[3, 3], strides=[1, 1], pads=[0, 1, 2, 1])),
    (32, 15, 13, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[2, 2, 2, 2], dilations=[2, 2])),
    (16, 17, 19, dict(kernel_shape=[5, 5], strides=[3, 3], pads=[2, 1, 2, 2], ceil_mode=1)),
    (16, 7, 5, dict(kernel_shape=[1, 1], strides=[1, 1])),
    (16, 5, 6, dict(kernel_shape=[3, 2], strides=[1, 3], pads=[1, 0, 1, 1])),
]

C1X1 = [  # (in channels, out channels, H, W, activation, bias, residual[, "proj": nChw16c X -> plain Y])
    (24, 144, 14, 13, "relu6", True, False),
    (40, 48, 17, 9, "silu", True, False),
    (3, 16, 5, 7, None, False, False),
    (24, 32, 13, 17, "relu", True, True),
    (40, 16, 1, 1, "leaky", True, False),
    (24, 144, 56, 56, "silu", True, False),
    (144, 24, 14, 13, None, True, True, "proj"),
    (96, 40, 17, 9, "relu", True, False, "proj"),
    (32, 8, 5, 7, "silu", False, False, "proj"),
    (16, 1, 3, 3, "relu6", True, True, "proj"),
    (48, 24, 56, 56, None, True, True, "proj"),
    (144, 40, 11, 13, "silu", True, True, "proj"),  # cpu.conv1x1_yp2: a block pair, then a lone 8-lane block
    (96, 56, 7, 9, "relu6", False, False, "proj"),  # two pairs, the second 16 + 8 lanes
    (64, 12, 5, 5, None, True, False, "proj"),  # one 12-lane block (zmm, masked)
    (240, 40, 28, 28, "leaky", True, False, "proj"),
    (32, 16, 56, 56, "relu6", True, False, "bb"),  # nChw16c both sides (cpu.conv1x1_bb): pixels cut, not channels
    (32, 48, 57, 61, None, True, True, "bb"),
    (64, 16, 60, 60, "silu", False, False, "bb"),
    # up to 2 blocks a thread on planes up to 28x28 at batch 1 (SqueezeNet's squeezes): chunks of fewer pixels, tail tiles
    (256, 32, 27, 27, "relu", True, False, "bb1"),
    (384, 48, 13, 13, None, True, True, "bb1"),
    (512, 64, 13, 13, "relu", False, False, "bb1"),
    (64, 32, 3, 5, "relu6", True, True, "bb1"),
]


S2S = [  # (in channels, out channels, H, W, kernel, pads, activation, bias, residual): stride-2 nChw16c convs
    (16, 32, 14, 14, 3, (1, 1, 1, 1), "relu", True, False),  # 7 columns
    (32, 48, 56, 56, 3, (1, 1, 1, 1), "relu", True, True),  # 28 = 14 + 14; a block pair and a lone block; Z
    (16, 16, 15, 23, 3, (1, 1, 1, 1), None, False, False),  # odd plane: 8 x 12, bottom and right pads: one tile, both pads
    (16, 32, 9, 57, 3, (1, 1, 1, 1), "relu", True, False),  # 29 = 10 + 10 + 9, the last tile at the right pad
    (32, 32, 9, 40, 3, (1, 1, 0, 0), "relu6", True, False),  # pads_end 0: 4 x 20 (10 + 10)
    (16, 32, 10, 30, 3, (1, 1, 1, 1), "silu", True, False),  # 15 = 8 (a tail tile at the pad) + 7
    (64, 32, 28, 28, 1, (0, 0, 0, 0), None, True, True),  # 1x1 downsample: 14 columns, Z
    (32, 16, 13, 27, 1, (0, 0, 0, 0), "relu", False, False),  # 7 x 14
    (16, 48, 14, 14, 1, (0, 0, 0, 0), "relu6", True, False),  # 7 columns, a pair and a lone block
]


S1S = [  # (in channels, out channels, H, W, activation, bias, residual): stride-1 3x3 pad-1 nChw16c convs whose
    # Winograd U (16 x C x M floats) is beyond 512 KB, so that the direct kernel may take them
    (96, 112, 7, 7, "relu", True, True),  # ResNet's layer4 width: one 7-pixel tile at both pads; 3 pairs + a lone block
    (64, 160, 14, 14, None, True, False),  # one 14-pixel tile at both pads
    (96, 96, 28, 28, "relu6", False, True),  # 14 + 14: the left pad, then the right pad
    (64, 144, 6, 56, "silu", True, False),  # 4 tiles of 14
    (96, 96, 9, 19, "relu", True, False),  # 10 + 9: tail tiles at each pad
    (64, 144, 5, 3, None, True, True),  # 3 columns: one tail tile at both pads
    (96, 96, 4, 23, "relu", False, False),  # 12 + 11
]


def s1_case(cin, cout, h, w, act, bias, residual):
    return s2_case(cin, cout, h, w, 3, (1, 1, 1, 1), act, bias, residual, stride=1)


def s2_case(cin, cout, h, w, k, pads, act, bias, residual, stride=2):
    g = G()
    x = g.n("Relu", [g.conv("x", cin, cin, "a")], "a.relu")  # nChw16c X
    wt = RNG.standard_normal((cout, cin, k, k)) * (1.0 / np.sqrt(k * k * cin))
    ins = [x, g.c("e.w", wt)] + ([g.c("e.b", RNG.standard_normal(cout) * 0.3)] if bias else [])
    y = g.n("Conv", ins, "e", kernel_shape=[k, k], strides=[stride, stride], pads=list(pads))
    oh, ow = (h + pads[0] + pads[2] - k) // stride + 1, (w + pads[1] + pads[3] - k) // stride + 1
    if residual:  # a blocked Z
        y = g.n("Add", [y, g.n("Relu", [g.conv("x2", 16, cout, "z")], "z.relu")], "e.add")
    y = g.act(y, act, "e")
    g.conv(y, cout, cout, "dw", group=cout)  # depthwise: reads nChw16c, so the conv writes it
    ins = [("x", None)] + ([("x2", None)] if residual else [])
    return g.model(ins, ["dw"]), (cin, h, w), (16, oh, ow) if residual else None


PLAIN_POOLS = [  # (channels, H, W, MaxPool attributes)
    (3, 112, 112, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    (5, 13, 17, dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    (2, 9, 130, dict(kernel_shape=[2, 2], strides=[2, 2])),
    (4, 7, 67, dict(kernel_shape=[5, 5], strides=[2, 2], pads=[2, 1, 2, 2], ceil_mode=1)),
    (3, 6, 1, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    (2, 8, 45, dict(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1])),
]


def plain_pool_case(c, h, w, attrs):
    g = G()
    g.n("MaxPool", ["x"], "pool", **attrs)
    return g.model([("x", None)], ["pool"]), (c, h, w), None


PLAINS = [  # (in channels, out channels, H, W, activation, bias, residual)
    (24, 58, 56, 56, "relu", True, False),
    (58, 58, 9, 13, None, True, True),
    (116, 116, 14, 14, "relu", True, False),
    (232, 232, 7, 10, "silu", False, False),
    (3, 5, 8, 8, "relu", True, True),
    (464, 1024, 8, 9, "relu", True, False),
]


def plain1x1_case(cin, cout, h, w, act, bias, residual):
    g = G()
    y = g.conv("x", cin, cout, "e", k=1, bias=bias)
    if residual:
        y = g.n("Add", [y, "x2"], "e.add")
    if act == "relu":
        y = g.n("Relu", [y], "e.relu")
    elif act == "silu":
        y = g.n("Mul", [y, g.n("Sigmoid", [y], "e.sig")], "e.silu")
    ins = [("x", None)] + ([("x2", None)] if residual else [])
    return g.model(ins, [y]), (cin, h, w), (cout, h, w) if residual else None


DWS = [  # (channels, H, W, kernel, strides, pads, dilations, bias, activation)
    (32, 13, 17, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True, "relu6"),
    (16, 14, 15, (3, 3), (2, 2), (0, 1, 1, 0), (1, 1), True, None),
    (48, 11, 23, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), True, "silu"),
    (32, 12, 12, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), False, "relu6"),
    (16, 9, 10, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), True, None),
    (16, 4, 3, (3, 5), (1, 2), (1, 3, 0, 2), (1, 1), True, "silu"),
    (32, 6, 7, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), True, "relu6"),
]


def dw_case(c, h, w, k, st, pads, dil, bias, act):
    g = G()
    y = g.conv("x", 16, c, "a", k=1)
    wt = RNG.standard_normal((c, 1) + k) * (1.0 / np.sqrt(k[0] * k[1]))
    ins = [y, g.c("dw.w", wt)] + ([g.c("dw.b", RNG.standard_normal(c) * 0.3)] if bias else [])
    y = g.n("Conv", ins, "dw", group=c, kernel_shape=list(k), strides=list(st), pads=list(pads), dilations=list(dil))
    if act == "relu6":
        y = g.n("Clip", [y, g.c("lo", np.array(0)), g.c("hi", np.array(6))], "dw.clip")
    elif act == "silu":
        y = g.n("Mul", [y, g.n("Sigmoid", [y], "dw.sig")], "dw.silu")
    g.conv(y, c, 16, "b", k=1)  # a blocked consumer
    return g.model([("x", None)], ["b"]), (16, h, w), None


PLAIN_DWS = [  # (channels, H, W, kernel, strides, pads, dilations, bias, activation, residual): plain NCHW depthwise
    (72, 56, 56, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True, "relu", False),     # 4 vectors a row
    (72, 23, 45, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), True, "relu6", False),    # stride 2, 23 columns
    (24, 31, 28, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), False, "silu", True),     # 2 rows x 2 vectors, odd rows
    (5, 19, 19, (3, 3), (1, 1), (0, 2, 2, 0), (2, 2), True, "leaky", False),     # dilation, asymmetric pads
    (3, 11, 130, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True, None, True),        # 2 chunks of 64 columns + 2
    (8, 21, 100, (3, 1), (3, 3), (1, 0, 1, 0), (1, 1), True, "relu", False),     # stride 3 (gather)
    (12, 9, 70, (1, 3), (1, 2), (0, 1, 0, 1), (1, 1), False, None, False),       # 1x3, 35 columns stride 2
    (6, 17, 77, (3, 5), (2, 2), (1, 3, 2, 0), (2, 2), True, "relu6", True),       # stride 2 + dilation, split rows
    (58, 56, 56, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, None, False),       # ShuffleNet's stride-2 dw
]


def plain_dw_case(c, h, w, k, st, pads, dil, bias, act, residual):
    g = G()
    wt = RNG.standard_normal((c, 1) + k) * (1.0 / np.sqrt(k[0] * k[1]))
    ins = ["x", g.c("dw.w", wt)] + ([g.c("dw.b", RNG.standard_normal(c) * 0.3)] if bias else [])
    y = g.n("Conv", ins, "dw", group=c, kernel_shape=list(k), strides=list(st), pads=list(pads), dilations=list(dil))
    oh = (h + pads[0] + pads[2] - dil[0] * (k[0] - 1) - 1) // st[0] + 1
    ow = (w + pads[1] + pads[3] - dil[1] * (k[1] - 1) - 1) // st[1] + 1
    if residual:
        y = g.n("Add", [y, "x2"], "dw.add")
    if act == "relu":
        y = g.n("Relu", [y], "dw.relu")
    elif act == "relu6":
        y = g.n("Clip", [y, g.c("lo", np.array(0)), g.c("hi", np.array(6))], "dw.clip")
    elif act == "silu":
        y = g.n("Mul", [y, g.n("Sigmoid", [y], "dw.sig")], "dw.silu")
    elif act == "leaky":
        y = g.n("LeakyRelu", [y], "dw.leaky", alpha=0.1)
    ins = [("x", None)] + ([("x2", None)] if residual else [])
    return g.model(ins, [y]), (c, h, w), (c, oh, ow) if residual else None


def pool_case(c, h, w, attrs):
    g = G()
    y = g.n("Relu", [g.conv("x", c, c, "a")], "a.relu")
    y = g.n("MaxPool", [y], "pool", **attrs)
    g.conv(y, c, 32, "b", k=1)  # a blocked consumer: the MaxPool stays nChw16c
    return g.model([("x", None)], ["b"]), (c, h, w), None


def c1x1_case(cin, cout, h, w, act, bias, residual, proj=None):
    g = G()
    x = g.n("Relu", [g.conv("x", cin, cin, "a")], "a.relu") if proj else "x"  # nChw16c X for a projection
    y = g.conv(x, cin, cout, "e", k=1, bias=bias)
    if residual and proj == "proj":  # a plain Z
        y = g.n("Add", [y, "x2"], "e.add")
    elif residual:  # a blocked Z: Conv + Add (+ Relu) fused into one of the Convs
        z = g.n("Relu", [g.conv("x2", 16, cout, "z")], "z.relu")
        y = g.n("Add", [y, z], "e.add")
    y = g.act(y, act, "e")
    ins = [("x", None)] + ([("x2", None)] if residual else [])
    if proj == "proj":  # a graph output: plain
        return g.model(ins, [y]), (cin, h, w), (cout, h, w) if residual else None
    g.conv(y, cout, cout, "dw", group=cout)  # depthwise: reads nChw16c, so the 1x1 writes it
    return g.model(ins, ["dw"]), (cin, h, w), (16, h, w) if residual else None


GEMVS = [  # (in channels, out channels, activation, bias, residual): 1x1 convs on the 1x1 planes of a GlobalAveragePool
    (1152, 48, "silu", True, False),  # EfficientNet's squeeze-excite FCs
    (48, 1152, "sigmoid", True, False),
    (96, 4, "relu", False, True),  # fewer rows than a task's minimum
    (37, 203, None, True, True),  # rows not a multiple of 8
]


def gemv_case(cin, cout, act, bias, residual):
    g = G()
    y = g.conv(g.n("GlobalAveragePool", ["x"], "gap"), cin, cout, "e", k=1, bias=bias)
    if residual:
        y = g.n("Add", [y, "x2"], "e.add")
    if act == "silu":
        y = g.n("Mul", [y, g.n("Sigmoid", [y], "e.sig")], "e.silu")
    elif act == "sigmoid":
        y = g.n("Sigmoid", [y], "e.sig")
    elif act == "relu":
        y = g.n("Relu", [y], "e.relu")
    ins = [("x", None)] + ([("x2", None)] if residual else [])
    return g.model(ins, [y]), (cin, 5, 3), (cout, 1, 1) if residual else None


IMGS = [  # (in channels, middle channels, out channels, H, W): oneDNN nChw16c convs cut by images (cpu.dnnl_images)
    (3, 48, 32, 29, 31),  # 48: uneven channel slices; 32 with small weights on a plane of 899 pixels
    (16, 144, 48, 9, 7),
    (32, 80, 16, 28, 28),
    (16, 48, 64, 9, 8),  # a 64-channel depthwise: two blocks a thread, channel slices; c: X outweighs W
]


def img_case(cin, mid, cout, h, w):
    g = G()
    y = g.n("Relu", [g.conv("x", cin, mid, "a")], "a.relu")  # plain X -> nChw16c: channel slices
    y = g.n("Relu", [g.conv(y, mid, mid, "b")], "b.relu")  # 3x3, nChw16c both sides
    y = g.n("Clip", [g.conv(y, mid, cout, "c", k=1), g.c("lo", np.array(0)), g.c("hi", np.array(6))], "c.clip")
    g.conv(y, cout, cout, "dw", group=cout)  # depthwise: by image where its 16-channel blocks split unevenly
    return g.model([("x", None)], ["dw"]), (cin, h, w), None


def fix_inputs(model, batch, shape, shape2):
    for i, s in zip(model.graph.input, [shape, shape2]):
        i.type.tensor_type.shape.Clear()
        for d in (batch,) + s:
            i.type.tensor_type.shape.dim.add().dim_value = d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    failed = passed = 0
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    avx512 = " avx512f" in flags
    cases = ([("pool", pool_case, p) for p in POOLS] + [("plainpool", plain_pool_case, p) for p in PLAIN_POOLS] +
             [("1x1", c1x1_case, p) for p in C1X1] + [("s2", s2_case, p) for p in S2S] + [("s1", s1_case, p) for p in S1S] + [("plain1x1", plain1x1_case, p) for p in PLAINS] +
             [("dw", dw_case, p) for p in DWS] + [("plaindw", plain_dw_case, p) for p in PLAIN_DWS] +
             [("img", img_case, p) for p in IMGS] + [("gemv", gemv_case, p) for p in GEMVS])
    with tempfile.TemporaryDirectory() as tmp:
        for kind, fn, params in cases:
            for batch in (1, 2) + ((3, 4, 6) if kind == "img" else ()):
                model, shape, shape2 = fn(*params)
                fix_inputs(model, batch, shape, shape2)
                path = os.path.join(tmp, "m.onnx")
                onnx.save(model, path)
                feeds = {"x": RNG.standard_normal((batch,) + shape).astype(np.float32)}
                if kind == "plainpool":  # NaN never wins (netrun's rule), so compare around it: -inf only
                    feeds["x"].reshape(-1)[::7] = -np.inf
                if shape2:
                    feeds["x2"] = RNG.standard_normal((batch,) + shape2).astype(np.float32)
                so = ort.SessionOptions()
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                ref = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
                errors = []
                # plain depthwise: also the tiled kernel with stride 2 from two loads and a permute (split off)
                for fast in ("1", "0") + (("nosplit",) if kind == "plaindw" else ()) + \
                        (("yp1",) if kind == "1x1" and len(params) > 7 and params[7] == "proj" else ()) + \
                        (("noimg",) if kind == "img" else ()):
                    for threads in (1, 2):
                        on = "0" if fast == "0" else "1"
                        opts = {"cpu.pool_avx512": on, "cpu.conv1x1_blk": on, "cpu.conv1x1_plain": on,
                                "cpu.dw_tiled": on, "cpu.dw_split": "0" if fast == "nosplit" else on,
                                "cpu.conv1x1_bb": on, "cpu.conv1x1_yp2": "0" if fast == "yp1" else on,
                                "cpu.dnnl_images": "0" if fast == "noimg" else on, "cpu.conv_gemv": on,
                                "cpu.conv_s2": on, "cpu.wino_min_tiles": "1000000" if on == "1" else "0",
                                # the img cases test oneDNN's by-image cut: their 3x3 stays on oneDNN
                                "cpu.conv_wino": "0" if kind == "img" else on}
                        with nr.session(path, backends="cpu", threads=threads, options=opts) as s:
                            out = s.run(feeds)[0]
                            d = float(np.max(np.abs(ref - out)))
                            if not d <= 1e-4 * max(1.0, float(np.max(np.abs(ref)))):
                                errors.append(f"fast={fast} threads={threads}: max abs diff {d:.2e}")
                            nodes = s.nodes()
                            if kind == "pool" and not any(op == "MaxPool" for _, op, _, _ in nodes):
                                errors.append("no MaxPool node")
                            c1 = [nm for nm, _, _, k in nodes if "1x1 avx512" in k]
                            if fast == "0" and c1:
                                errors.append(f"cpu.conv1x1_blk=0 still ran {c1} on the AVX-512 kernel")
                            by_img = [nm for nm, _, _, k in nodes if "by image" in k]
                            if by_img and (opts["cpu.dnnl_images"] == "0" or threads == 1 or batch in (1, 3)):
                                errors.append(f"{by_img} cut by images with cpu.dnnl_images={on}, batch {batch}")
                            # b and c where oneDNN runs them (an 80 -> 16 1x1 takes conv1x1_bb), never a; dw where
                            # its blocks of 16 channels split unevenly over the 2 threads and are fewer than 8
                            dw_uneven = kind == "img" and (params[2] // 16) % 2 == 1 and params[2] // 16 < 8
                            dn = [nm for nm, _, _, k in nodes if "oneDNN" in k and (nm[0] in "bc" or
                                                                                   (nm == "dw" and dw_uneven))]
                            if kind == "img" and fast == "1" and threads == 2 and batch in (2, 4, 6) and \
                                    (by_img != dn or (avx512 and not dn)):
                                errors.append(f"convs cut by images: {by_img}, expected {dn}")
                            paired = [nm for nm, _, _, k in nodes if "nChw16c in, paired" in k]
                            if fast == "yp1" and paired:
                                errors.append(f"cpu.conv1x1_yp2=0 still ran {paired} on the two-block tile")
                            if fast == "1" and avx512 and len(params) > 7 and params[7] == "proj" and c1 and paired != c1:
                                errors.append(f"the projection {c1} did not take the two-block tile")
                            if (kind == "dw" and any("oneDNN" in k for _, _, _, k in nodes)
                                    and not any(nm.startswith("dw") and "nChw16c in/out" in k for nm, _, _, k in nodes)):
                                errors.append(f"the depthwise conv is not on the nChw16c path: {nodes}")
                            s2 = [nm for nm, _, _, k in nodes if "stride 2 avx512" in k]
                            if s2 != ([n for n, _, _, _ in nodes if n.startswith("e")] if kind == "s2" and fast == "1"
                                      and avx512 else []):
                                errors.append(f"cpu.conv_s2={on}: the stride-2 kernel ran on {s2}: {nodes}")
                            s1 = [nm for nm, _, _, k in nodes if "stride 1 avx512" in k]
                            wino = [nm for nm, _, _, k in nodes if "Winograd F(2x2) avx512" in k]
                            e = [n for n, _, _, _ in nodes if n.startswith("e")]
                            if kind == "s1" and avx512 and (s1, wino) != ((e, []) if fast == "1" else ([], [])):
                                errors.append(f"cpu.wino_min_tiles: direct on {s1}, Winograd on {wino}: {nodes}")
                            gemv = [nm for nm, _, _, k in nodes if "1x1 GEMV" in k]
                            if kind == "gemv" and gemv != ([] if fast == "0" else [n for n, _, _, _ in nodes if n.startswith("e")]):
                                errors.append(f"cpu.conv_gemv={on}: GEMV path on {gemv}: {nodes}")
                            if kind == "plaindw" and not any("depthwise direct" in k for _, _, _, k in nodes):
                                errors.append(f"the plain depthwise conv did not run conv_depthwise.c: {nodes}")
                            # with oneDNN built in (the nChw16c pass needs it) and AVX-512F, the 1x1 must take it
                            bb = len(params) > 7 and params[7] in ("bb", "bb1")  # bb1: only with fewer images than threads
                            want = ("nChw16c in/out" if bb else "nChw16c in" if len(params) > 7 else
                                    "NCHW" if kind == "plain1x1" else "nChw16c out")
                            # the nChw16c-both kernel is taken only where oneDNN's channel slices leave a thread idle
                            if (kind in ("1x1", "plain1x1") and fast == "1" and avx512
                                    and ((threads == 2 and (params[7:] != ("bb1",) or batch == 1)) or not bb)
                                    and (kind == "plain1x1" or any("oneDNN" in k for _, _, _, k in nodes))
                                    and [nm for nm, _, _, k in nodes if nm.startswith("e") and want in k] != c1):
                                errors.append(f"the AVX-512 1x1 kernel ({want}) ran on {c1}, expected the conv 'e'")
                name = f"{kind} {params} batch {batch}"
                if errors:
                    failed += 1
                    print(f"FAIL {name}: " + "; ".join(errors))
                else:
                    passed += 1
                    print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
