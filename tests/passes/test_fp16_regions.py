#!/usr/bin/env python3
"""The CUDA float16 NHWC region pass (runtime/optimize.c, pass (g)) and its internal ops; the plain float16
region (runtime/opt_half.c) on transformer models.

1. Always (CPU): the reference CPU kernels of the internal ops ReorderNHWC, GlobalAveragePoolNHWC, MulChannelNHWC,
   ConcatNHWC
   (domain com.netrun), through a model that uses them directly: float32 -> float16 NHWC -> float32 is the
   float16 rounding of X, and the NHWC average pool is the float32 mean within float16 rounding.
2. With a CUDA device (else that part is skipped; exit 77 when nothing could run at all): a small ResNet-like
   model (stem Conv C=3, BN, ReLU, MaxPool with pads, residual block with the Add fused, AveragePool, 1x1 Conv
   with SiLU, squeeze-excite (GlobalAveragePool, 1x1 Convs, Sigmoid, Mul), GlobalAveragePool, Flatten, Gemm,
   Softmax, plus an inner value as a graph output) under
   --precision fp16: the region pass must have put ReorderNHWC conversions, NHWC Convs ("fp16 region" in the
   kernel description), NHWC pools and GlobalAveragePoolNHWC on cuda; the outputs must match the CPU's float32
   ones within the float16 tolerance below; cuda.fp16_regions=0 and fp32 must leave no ReorderNHWC node.

Tolerance: max |cuda - cpu| <= 2e-2 * max(1, max |cpu|) per output (float16 has an 11-bit significand: a few
1e-3 relative per layer, a few layers deep).

    python3 tests/passes/test_fp16_regions.py --lib build/lib/libnetrun.so
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
from netrun_ctypes import Netrun, NetrunError, Session  # noqa: E402

RNG = np.random.default_rng(7)
TOL = 2e-2
TOL_PLAIN = 3e-2  # a transformer in float16 end to end: LayerNorm and softmax still compute in float32
PRECISION = {"fp32": 0, "tf32": 1, "fp16": 2}


class PSession(Session):
    """Session with a precision (netrun_options_set_precision; netrun_ctypes has no argument for it)."""

    def __init__(self, nr, model_path, backends, options, precision):
        lib = nr.lib
        lib.netrun_options_set_precision.restype = C.c_int
        lib.netrun_options_set_precision.argtypes = [C.c_void_p, C.c_int]
        orig = lib.netrun_options_set_threads

        def threads_and_precision(opts, t):
            r = orig(opts, t)
            return r if r else lib.netrun_options_set_precision(opts, PRECISION[precision])

        lib.netrun_options_set_threads = threads_and_precision
        try:
            super().__init__(nr, model_path, backends, 2, options)
        finally:
            lib.netrun_options_set_threads = orig


def w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def save(m, tmp, name):
    p = os.path.join(tmp, name)
    onnx.save(m, p)
    return p


def internal_ops_model(shape=(2, 5, 3, 7)):
    nodes = [
        helper.make_node("ReorderNHWC", ["x"], ["xh"], domain="com.netrun", to_nhwc=1, name="to_h"),
        helper.make_node("ReorderNHWC", ["xh"], ["back"], domain="com.netrun", to_nhwc=0, name="to_f"),
        helper.make_node("GlobalAveragePoolNHWC", ["xh"], ["gh"], domain="com.netrun", name="gap"),
        helper.make_node("ReorderNHWC", ["gh"], ["gap"], domain="com.netrun", to_nhwc=0, name="gap_f"),
        helper.make_node("MulChannelNHWC", ["xh", "gh"], ["mh"], domain="com.netrun", name="mulch"),
        helper.make_node("ReorderNHWC", ["mh"], ["mul"], domain="com.netrun", to_nhwc=0, name="mul_f"),
        helper.make_node("ConcatNHWC", ["xh", "mh", "xh"], ["ch"], domain="com.netrun", name="cat"),
        helper.make_node("ReorderNHWC", ["ch"], ["cat"], domain="com.netrun", to_nhwc=0, name="cat_f"),
    ]
    n, c, h, w_ = shape
    g = helper.make_graph(nodes, "nhwc_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("back", TensorProto.FLOAT, list(shape)),
                           helper.make_tensor_value_info("gap", TensorProto.FLOAT, [n, c, 1, 1]),
                           helper.make_tensor_value_info("mul", TensorProto.FLOAT, list(shape)),
                           helper.make_tensor_value_info("cat", TensorProto.FLOAT, [n, 3 * c, h, w_])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.netrun", 1)])
    m.ir_version = 8
    return m


def internal_name(n):
    """The internal op a node of s.nodes() is: reports show the ONNX op it stands for, its layout in the kernel."""
    op, kernel = n[1], n[3]
    if "NHWC" in kernel:
        return {"Reorder (layout)": "ReorderNHWC", "GlobalAveragePool": "GlobalAveragePoolNHWC",
                "Mul": "MulChannelNHWC", "Concat": "ConcatNHWC"}.get(op, op)
    return op


def check_internal_ops(nr, tmp, backend, shape=(2, 5, 3, 7)):
    """shape: 5 channels take the per-channel CUDA pool; 16 channels its 8-channel loads, at batch 300 in one pass
    over each plane, at batch 2 in slices"""
    path = save(internal_ops_model(shape), tmp, "nhwc_ops_%s.onnx" % "x".join(map(str, shape)))
    x = (RNG.standard_normal(shape) * 3).astype(np.float32)
    with nr.session(path, backends=backend, threads=2) as s:
        back, gap, mul, cat = s.run({"x": x})
        used = {internal_name(n): n[2] for n in s.nodes()}
    want_back = x.astype(np.float16).astype(np.float32)
    want_gap = x.astype(np.float16).astype(np.float32).mean(axis=(2, 3), keepdims=True)
    want_mul = want_back * gap  # S is the float16 pool output
    ok = np.array_equal(back, want_back) and np.allclose(gap, want_gap, rtol=2e-3, atol=2e-3) and \
        np.allclose(mul, want_mul, rtol=2e-3, atol=2e-3) and np.array_equal(cat, np.concatenate([back, mul, back], axis=1))
    print(f"{'ok' if ok else 'FAIL'}  internal ops on {backend}, x {list(shape)} ({used}): round trip max diff "
          f"{np.abs(back - want_back).max():.3g}, gap max diff {np.abs(gap - want_gap).max():.3g}, "
          f"mul max diff {np.abs(mul - want_mul).max():.3g}")
    return ok


class G:
    def __init__(self):
        self.nodes, self.inits = [], []

    def c(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def n(self, op, ins, out, **kw):
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def conv_bn(self, x, cin, cout, name, k=3, stride=1, group=1):
        y = self.n("Conv", [x, self.c(name + ".w", w(cout, cin // group, k, k)), self.c(name + ".b", w(cout))], name,
                   pads=[k // 2] * 4, strides=[stride, stride], group=group)
        ins = [y, self.c(name + ".g", RNG.uniform(0.5, 1.5, cout).astype(np.float32)),
               self.c(name + ".beta", w(cout)), self.c(name + ".mean", w(cout)),
               self.c(name + ".var", RNG.uniform(0.5, 2.0, cout).astype(np.float32))]
        return self.n("BatchNormalization", ins, name + ".bn", epsilon=1e-5)


def region_model():
    g = G()
    y = g.n("Relu", [g.conv_bn("x", 3, 16, "stem", k=3, stride=2)], "stem.relu")
    y = g.n("MaxPool", [y], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    r = g.n("Relu", [g.conv_bn(y, 16, 16, "b1c1")], "b1c1.relu")
    r = g.conv_bn(r, 16, 16, "b1c2")
    y = g.n("Relu", [g.n("Add", [r, y], "b1.add")], "b1.relu")  # also a graph output
    # fire-like: 1x1 and 3x3 Convs of the same input joined on channels (ConcatNHWC)
    a = g.n("Relu", [g.n("Conv", [y, g.c("fa.w", w(8, 16, 1, 1)), g.c("fa.b", w(8))], "fa")], "fa.relu")
    b = g.n("Relu", [g.n("Conv", [y, g.c("fb.w", w(8, 16, 3, 3)), g.c("fb.b", w(8))], "fb", pads=[1, 1, 1, 1])], "fb.relu")
    y = g.n("Concat", [a, b], "fire.cat", axis=1)
    y = g.n("AveragePool", [y], "avg", kernel_shape=[2, 2], strides=[2, 2])
    y = g.conv_bn(y, 16, 32, "c3", k=1)
    y = g.n("Mul", [y, g.n("Sigmoid", [y], "c3.sig")], "c3.silu")
    # depthwise 3x3 + ReLU (the region's own float16 NHWC depthwise kernel when it is the fastest)
    y = g.n("Relu", [g.conv_bn(y, 32, 32, "dw", k=3, group=32)], "dw.relu")
    # squeeze-excite: GAP -> 1x1 conv + ReLU -> 1x1 conv -> Sigmoid -> Mul(y, s) (MulChannelNHWC)
    s = g.n("GlobalAveragePool", [y], "se.gap")
    s = g.n("Relu", [g.n("Conv", [s, g.c("se1.w", w(8, 32, 1, 1)), g.c("se1.b", w(8))], "se1")], "se1.relu")
    s = g.n("Sigmoid", [g.n("Conv", [s, g.c("se2.w", w(32, 8, 1, 1)), g.c("se2.b", w(32))], "se2")], "se2.sig")
    y = g.n("Mul", [s, y], "se.mul")
    y = g.n("GlobalAveragePool", [y], "gap")
    y = g.n("Flatten", [y], "flat", axis=1)
    y = g.n("Gemm", [y, g.c("fc.w", w(10, 32)), g.c("fc.b", w(10))], "fc", transB=1)
    g.n("Softmax", [y], "prob", axis=1)
    graph = helper.make_graph(g.nodes, "fp16_regions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 32, 32])],
                              [helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
                               for n in ("prob", "b1.relu", "fc")], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def check_regions(nr, tmp):
    path = save(region_model(), tmp, "regions.onnx")
    x = RNG.standard_normal((2, 3, 32, 32)).astype(np.float32)
    with nr.session(path, backends="cpu", threads=2) as s:
        ref = s.run({"x": x})
    ok = True
    for label, prec, opts, want_regions in [("fp16 regions", "fp16", {}, True),
                                            ("fp16, cuda.fp16_regions=0", "fp16", {"cuda.fp16_regions": "0"}, False),
                                            ("fp32", "fp32", {}, False)]:
        with PSession(nr, path, "cuda,cpu", opts, prec) as s:
            outs = s.run({"x": x})
            nodes = s.nodes()
        conv_k = [n[3] for n in nodes if n[1] == "Conv"]
        reorders = [n for n in nodes if internal_name(n) == "ReorderNHWC"]
        diffs = [float(np.abs(o - r).max() / max(1.0, float(np.abs(r).max()))) for o, r in zip(outs, ref)]
        good = all(d <= TOL for d in diffs) and all(o.dtype == np.float32 for o in outs)
        if want_regions:
            on_cuda = {internal_name(n) for n in nodes if n[2] == "cuda"}
            need = {"ReorderNHWC", "GlobalAveragePoolNHWC", "MulChannelNHWC", "ConcatNHWC", "MaxPool", "AveragePool",
                    "Conv"}
            good = good and need <= on_cuda and reorders and all("fp16 region" in k for k in conv_k)
        else:
            good = good and not reorders
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'}  {label}: relative max diffs {['%.2e' % d for d in diffs]} (tol {TOL}); "
              f"{len(reorders)} ReorderNHWC; convs: {conv_k}")
        if not good:
            for n in nodes:
                print("      ", n)
    return ok


DW_CASES = [  # channels, kernel, stride, pad, dilation, activation, H, W, residual Add
    (32, 3, 1, 1, 1, "clip", 13, 13, False),  # 13 output columns: a partial 4-column tile
    (48, 3, 2, 1, 1, "relu", 15, 15, False),
    (40, 5, 1, 2, 1, "silu", 11, 11, False),
    (24, 5, 2, 2, 1, "none", 14, 14, False),
    (64, 3, 1, 1, 1, "none", 9, 9, True),     # Conv + Add + ReLU: the Add fused as Z
    (8, 3, 1, 0, 1, "relu", 6, 7, False),     # no padding, 5 output columns
    (20, 3, 1, 1, 1, "relu", 10, 10, False),  # C % 8 != 0: the two-channel kernel
    (16, 3, 1, 2, 2, "relu", 12, 12, False),  # dilation 2: the two-channel kernel
]


def depthwise_model(c, k, s, pad, dil, act, h, w_, res):
    """x [3, 8, h, w] -> 1x1 Conv + ReLU -> depthwise Conv (+ activation, + the 1x1's output) -> 1x1 Conv: the
    depthwise Conv sits inside a float16 NHWC region."""
    g = G()
    a = g.n("Relu", [g.n("Conv", ["x", g.c("pw1.w", w(c, 8, 1, 1)), g.c("pw1.b", w(c))], "pw1")], "pw1.relu")
    d = g.n("Conv", [a, g.c("dw.w", w(c, 1, k, k)), g.c("dw.b", w(c))], "dw", group=c, pads=[pad] * 4,
            strides=[s, s], dilations=[dil, dil], kernel_shape=[k, k])
    if act == "relu":
        d = g.n("Relu", [d], "dw.relu")
    elif act == "clip":
        d = g.n("Clip", [d, g.c("lo", np.array(0, np.float32)), g.c("hi", np.array(6, np.float32))], "dw.clip")
    elif act == "silu":
        d = g.n("Mul", [d, g.n("Sigmoid", [d], "dw.sig")], "dw.silu")
    if res:
        d = g.n("Relu", [g.n("Add", [d, a], "dw.add")], "dw.add.relu")
    g.n("Conv", [d, g.c("pw2.w", w(8, c, 1, 1)), g.c("pw2.b", w(8))], "y")
    graph = helper.make_graph(g.nodes, "depthwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8, h, w_])],
                              [helper.make_value_info("y", helper.make_tensor_type_proto(TensorProto.FLOAT, None))],
                              g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def check_depthwise(nr, tmp):
    """The region's own float16 NHWC depthwise kernels (eight channels and four output columns a thread for 3x3 and
    5x5 at stride 1 or 2; two channels a thread otherwise) against the CPU's float32, with cuDNN's float16 paths
    off (cuda.fp16_paths=none) so that the depthwise kernel, not a cuDNN one, is what ran."""
    ok = True
    for case in DW_CASES:
        c, k, s_, pad, dil, act, h, w_, res = case
        path = save(depthwise_model(*case), tmp, "dw_%d_%d_%d_%d.onnx" % (c, k, s_, dil))
        x = RNG.standard_normal((3, 8, h, w_)).astype(np.float32)
        with nr.session(path, backends="cpu", threads=2) as s:
            ref = s.run({"x": x})[0]
        with PSession(nr, path, "cuda,cpu", {"cuda.fp16_paths": "none"}, "fp16") as s:
            out = s.run({"x": x})[0]
            nodes = s.nodes()
        dw = [n for n in nodes if n[1] == "Conv" and "depthwise" in n[3]]
        fused_res = not res or not any(n[1] == "Add" for n in nodes)
        diff = float(np.abs(out - ref).max() / max(1.0, float(np.abs(ref).max())))
        good = len(dw) == 1 and dw[0][2] == "cuda" and diff <= TOL and fused_res
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'}  depthwise C={c} {k}x{k} stride {s_} pad {pad} dilation {dil} {act}"
              f"{' + residual' if res else ''} on {h}x{w_}: relative max diff {diff:.2e} (tol {TOL}); "
              f"kernel: {dw[0][3] if dw else 'none'}")
        if not good:
            for n in nodes:
                print("      ", n)
    return ok


def check_plain(nr, tmp):
    """The plain float16 region (runtime/opt_half.c) on the transformer pass's models: under --precision fp16 the
    GEMMs, attention, norms and the ops between them run float16 on cuda (Casts named *.to_fp16 at the borders), the
    outputs match the CPU's float32 within TOL_PLAIN, with no NaN from masks of float32's lowest value;
    cuda.fp16_plain=0 and fp32 leave no such Cast."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_transformer  # its models: BERT / GPT-2 / ViT shapes, attention variants, norm + Gelu
    ok = True
    for name, m, feeds_list, _, _ in test_transformer.cases():
        path = save(m, tmp, f"plain_{name}.onnx")
        feeds = feeds_list[0]
        with nr.session(path, backends="cpu", threads=2) as s:
            ref = s.run(feeds)
        has_gemm = any(n.op_type in ("MatMul", "Gemm") for n in m.graph.node)
        for label, prec, opts, want in [("fp16", "fp16", {}, has_gemm),
                                        ("fp16, cuda.fp16_plain=0", "fp16", {"cuda.fp16_plain": "0"}, False),
                                        ("fp32", "fp32", {}, False)]:
            with PSession(nr, path, "cuda,cpu", opts, prec) as s:
                outs = s.run(feeds)
                nodes = s.nodes()
                n_half = s.stats().n_fp16_nodes
            casts = [n for n in nodes if n[1] == "Cast" and n[0].endswith(".to_fp16")]
            half_gemms = [n for n in nodes if n[1] in ("MatMul", "MatMulBias", "Gemm", "Attention") and n[2] == "cuda"]
            diffs = [float(np.abs(o.astype(np.float64) - r).max() / max(1.0, float(np.abs(r).max())))
                     for o, r in zip(outs, ref)]
            good = all(np.isfinite(o).all() == np.isfinite(r).all() for o, r in zip(outs, ref))
            good = good and all(d <= (TOL_PLAIN if prec == "fp16" else 1e-3) for d in diffs)
            good = good and all(o.dtype == r.dtype for o, r in zip(outs, ref))
            # a region: nodes kept in float16 (a model whose float inputs are all constants, an embedding table
            # read by token ids, enters it with no Cast)
            good = good and (n_half > 0 and bool(half_gemms) if want else not casts and n_half == 0)
            if name == "convnext_block" and label == "fp16":  # one plain region: the Conv too, no NHWC reorders
                good = good and len(casts) == 1 and not [n for n in nodes if n[1] == "ReorderNHWC"]
            ok = ok and good
            print(f"{'ok' if good else 'FAIL'}  plain fp16 {name}, {label}: relative max diffs "
                  f"{['%.2e' % d for d in diffs]}; {n_half} nodes in float16, {len(casts)} Casts to float16, "
                  f"{len(half_gemms)} GEMM/attention on cuda")
            if not good:
                for n in nodes:
                    print("      ", n)
    return ok


def cuda_available(nr):
    lib = nr.lib
    lib.netrun_backend_count.restype = C.c_int

    class Info(C.Structure):
        _fields_ = [("name", C.c_char_p), ("path", C.c_char_p), ("available", C.c_int), ("reason", C.c_char_p),
                    ("device_count", C.c_int), ("is_gpu", C.c_int)]

    lib.netrun_backend_get_info.argtypes = [C.c_int, C.POINTER(Info)]
    for i in range(lib.netrun_backend_count()):
        info = Info()
        if lib.netrun_backend_get_info(i, C.byref(info)) == 0 and info.name == b"cuda" and info.available:
            return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    nr = Netrun(args.lib)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for shape in ((2, 5, 3, 7), (2, 16, 9, 9), (300, 16, 3, 3)):
                ok = check_internal_ops(nr, tmp, "cpu", shape) and ok
            if cuda_available(nr):
                for shape in ((2, 5, 3, 7), (2, 16, 9, 9), (300, 16, 3, 3)):
                    ok = check_internal_ops(nr, tmp, "cuda", shape) and ok
                ok = check_regions(nr, tmp) and ok
                ok = check_depthwise(nr, tmp) and ok
                ok = check_plain(nr, tmp) and ok
            else:
                print("skip  region checks: no CUDA device (the CPU reference kernels were checked)")
        except NetrunError as e:
            print(f"FAIL  {e}")
            ok = False
    print("fp16 regions:", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
