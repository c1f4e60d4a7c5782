"""Op cases: ImagePreprocess (domain com.netrun: uint8 NHWC frames to float NCHW, include/netrun_ops.h).

onnxruntime does not know the op, so each case names an equivalent model of standard ops for it (ref_model):
Cast, Slice (the colour channels, reversed for swap_rb), Transpose to NCHW, Resize (linear half_pixel = cv2's
INTER_LINEAR; nearest asymmetric floor = INTER_NEAREST), Pad (letterbox) or Slice (crop), then (x - mean) * k.
compare_backends.py runs the same cases on a GPU against the CPU kernel."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import optest
from optest import rand

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("com.netrun", 1)]


def op_model(name, shape, to, attrs):
    node = helper.make_node("ImagePreprocess", ["frames"], ["y"], domain="com.netrun", to=to, **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("frames", TensorProto.UINT8, shape)],
                          [helper.make_tensor_value_info("y", to, None)])
    m = helper.make_model(g, opset_imports=OPSETS, producer_name="netrun-tests")
    m.ir_version = 8
    return m


def const(nodes, inits, name, arr):
    inits.append(numpy_helper.from_array(np.asarray(arr), name))
    return name


def ref_model(name, shape, to, resize_to, pad=None, crop=None, nearest=False, swap=False, mean=(0, 0, 0), k=(1, 1, 1),
              pad_value=0.0):
    """resize_to: (rh, rw) of the resized frame; pad: (top, left, bottom, right); crop: (y0, x0, h, w)."""
    N, H, W, C = shape
    nodes, inits = [], []
    nodes.append(helper.make_node("Cast", ["frames"], ["f"], to=TensorProto.FLOAT))
    if swap:
        s = [const(nodes, inits, "s0", np.array([2], np.int64)), const(nodes, inits, "s1", np.array([-4], np.int64)),
             const(nodes, inits, "ax", np.array([3], np.int64)), const(nodes, inits, "st", np.array([-1], np.int64))]
        nodes.append(helper.make_node("Slice", ["f"] + s, ["rgb"]))
    else:
        s = [const(nodes, inits, "s0", np.array([0], np.int64)), const(nodes, inits, "s1", np.array([3], np.int64)),
             const(nodes, inits, "ax", np.array([3], np.int64))]
        nodes.append(helper.make_node("Slice", ["f"] + s, ["rgb"]))
    nodes.append(helper.make_node("Transpose", ["rgb"], ["nchw"], perm=[0, 3, 1, 2]))
    cur = "nchw"
    if resize_to is not None:
        mode = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor") if nearest \
            else dict(mode="linear", coordinate_transformation_mode="half_pixel")
        if crop is not None:  # crop resizes by the factor itself (scales), as cv::resize with fx, fy
            sc = const(nodes, inits, "scales", np.array([1, 1, resize_to[0] / H, resize_to[1] / W], np.float32))
            nodes.append(helper.make_node("Resize", [cur, "", sc], ["rs"], **mode))
        else:
            sizes = const(nodes, inits, "sizes", np.array([N, 3, resize_to[0], resize_to[1]], np.int64))
            nodes.append(helper.make_node("Resize", [cur, "", "", sizes], ["rs"], **mode))
        cur = "rs"
    if pad is not None:
        t, l, b, r = pad
        p = const(nodes, inits, "pads", np.array([0, 0, t, l, 0, 0, b, r], np.int64))
        v = const(nodes, inits, "pv", np.array(pad_value, np.float32))
        nodes.append(helper.make_node("Pad", [cur, p, v], ["pd"], mode="constant"))
        cur = "pd"
    if crop is not None:
        y0, x0, h, w = crop
        s = [const(nodes, inits, "c0", np.array([y0, x0], np.int64)),
             const(nodes, inits, "c1", np.array([y0 + h, x0 + w], np.int64)),
             const(nodes, inits, "cax", np.array([2, 3], np.int64))]
        nodes.append(helper.make_node("Slice", [cur] + s, ["cr"]))
        cur = "cr"
    m_ = const(nodes, inits, "mean", np.array(mean, np.float32).reshape(1, 3, 1, 1))
    k_ = const(nodes, inits, "k", np.array(k, np.float32).reshape(1, 3, 1, 1))
    nodes.append(helper.make_node("Sub", [cur, m_], ["c"]))
    nodes.append(helper.make_node("Mul", ["c", k_], ["yf"]))
    nodes.append(helper.make_node("Cast", ["yf"], ["y"], to=to))
    g = helper.make_graph(nodes, name + "_ref", [helper.make_tensor_value_info("frames", TensorProto.UINT8, shape)],
                          [helper.make_tensor_value_info("y", to, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def case(name, shape, to=TensorProto.FLOAT, ref=None, rtol=1e-4, atol=2e-4, **attrs):
    c = optest.Case(name, op_model(name, list(shape), to, attrs),
                    {"frames": rand(*shape, dtype=np.uint8, low=0, high=255, seed=abs(hash(name)) % 1000)},
                    rtol=rtol, atol=atol)
    c.ref_model = ref
    return c


MEAN, STD, SC = (123.675, 116.28, 103.53), (0.229, 0.224, 0.225), 1 / 255
K = tuple(np.float32(SC) / np.float32(s) for s in STD)
NORM = dict(mean=list(MEAN), std=list(STD), scale=SC)
F16 = TensorProto.FLOAT16

CASES = []
for nm, shape, size in [("down", (1, 15, 17, 3), (8, 10)), ("up", (2, 7, 5, 3), (16, 11)),
                        ("rgba", (1, 37, 53, 4), (19, 23)), ("hd", (1, 108, 192, 3), (64, 64))]:
    for to, tn, tol in [(TensorProto.FLOAT, "f32", 2e-4), (F16, "f16", 1e-2)]:
        CASES.append(case(f"prep_stretch_{nm}_{tn}", shape, to, size=list(size), **NORM, rtol=tol, atol=tol,
                          ref=ref_model(nm, shape, to, size, mean=MEAN, k=K)))
CASES.append(case("prep_stretch_swap", (2, 9, 13, 3), size=[6, 6], swap_rb=1, mean=[1.0, 2.0, 3.0], scale=0.5,
                  ref=ref_model("swap", (2, 9, 13, 3), TensorProto.FLOAT, (6, 6), swap=True, mean=(1, 2, 3),
                                k=(0.5, 0.5, 0.5))))
CASES.append(case("prep_nearest_half", (1, 16, 20, 3), size=[8, 10], interpolation="nearest",
                  ref=ref_model("nearest", (1, 16, 20, 3), TensorProto.FLOAT, (8, 10), nearest=True)))
# letterbox: 48x80 frame into 40x40: f = 0.5, 24x40 resized, rows 8..32, 114 around
CASES.append(case("prep_letterbox", (1, 48, 80, 3), size=[40, 40], resize="letterbox", pad_value=114.0, scale=SC,
                  ref=ref_model("lb", (1, 48, 80, 3), TensorProto.FLOAT, (24, 40), pad=(8, 0, 8, 0), pad_value=114.0,
                                k=(SC, SC, SC))))
# crop: 30x40 frame to 15x15: f = 0.5, 15x20 resized, columns 2..17
CASES.append(case("prep_crop", (2, 30, 40, 3), size=[15, 15], resize="crop", swap_rb=1, **NORM,
                  ref=ref_model("crop", (2, 30, 40, 3), TensorProto.FLOAT, (15, 20), crop=(0, 2, 15, 15), swap=True,
                                mean=MEAN, k=K)))
CASES.append(case("prep_none", (1, 12, 14, 4), resize="none", mean=[10.0], scale=2.0,
                  ref=ref_model("none", (1, 12, 14, 4), TensorProto.FLOAT, None, mean=(10, 10, 10), k=(2, 2, 2))))
