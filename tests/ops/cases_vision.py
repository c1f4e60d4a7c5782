"""Op cases: GridSample, NonMaxSuppression, RoiAlign, MaxRoiPool, MaxUnpool, AffineGrid, Col2Im,
CenterCropPad, DeformConv (compared with onnxruntime). ImageDecoder is not here: onnxruntime has no kernel
for it (the ONNX node tests cover it)."""
import numpy as np

import optest
from optest import rand


def case(name, op, inputs, **kw):
    return optest.node_case(name, op, inputs, **kw)


def f32(*v):
    return np.array(v, dtype=np.float32)


def i64(*v):
    return np.array(v, dtype=np.int64)


CASES = []

# ---- GridSample: every mode x padding x align_corners, 4-D (opset 16 names and 20 names) and 5-D ----
x4 = rand(2, 3, 5, 6, seed=1)
g4 = rand(2, 4, 7, 2, low=-1.3, high=1.3, seed=2)  # some samples fall outside [-1, 1]
x5 = rand(1, 2, 3, 4, 5, seed=3)
g5 = rand(1, 2, 3, 4, 3, low=-1.2, high=1.2, seed=4)
for ac in [0, 1]:
    for pad in ["zeros", "border", "reflection"]:
        for m16, m20 in [("bilinear", "linear"), ("nearest", "nearest"), ("bicubic", "cubic")]:
            attrs = {"mode": m16, "padding_mode": pad, "align_corners": ac}
            CASES.append(case(f"gridsample_{m16}_{pad}_ac{ac}", "GridSample", [x4, g4], attrs=attrs, opset=16))
            if m20 != "cubic":  # onnxruntime has no 5-D cubic
                CASES.append(case(f"gridsample5d_{m20}_{pad}_ac{ac}", "GridSample", [x5, g5],
                                  attrs={"mode": m20, "padding_mode": pad, "align_corners": ac}, opset=20))
# far outside: reflection folds several times
CASES.append(case("gridsample_reflect_far", "GridSample", [x4, rand(2, 3, 3, 2, low=-5, high=5, seed=5)],
                  attrs={"mode": "bilinear", "padding_mode": "reflection"}, opset=16))
# (no double case: onnxruntime has no double GridSample to compare with)

# ---- NonMaxSuppression ----
rng = np.random.default_rng(7)
ctr = rng.uniform(0, 10, size=(2, 30, 2)).astype(np.float32)
wh = rng.uniform(0.5, 4, size=(2, 30, 2)).astype(np.float32)
boxes = np.concatenate([ctr - wh / 2, ctr + wh / 2], axis=2)  # [y1, x1, y2, x2]
flipped = np.concatenate([ctr + wh / 2, ctr - wh / 2], axis=2)
centered = np.concatenate([ctr, wh], axis=2)
scores = rand(2, 3, 30, low=0, high=1, seed=8)
scores[0, 1, 5] = scores[0, 1, 6]  # a tie: lower index first
for nm, b, cpb in [("corners", boxes, 0), ("flipped", flipped, 0), ("center", centered, 1)]:
    for mo, iou, st in [(5, 0.5, 0.3), (100, 0.3, None), (2, 0.7, 0.0)]:
        ins = [b, scores, ("const", i64(mo)), ("const", f32(iou))] + ([("const", f32(st))] if st is not None else [])
        CASES.append(case(f"nms_{nm}_{mo}_{int(iou * 10)}_{'s' if st is not None else 'n'}", "NonMaxSuppression",
                          ins, attrs={"center_point_box": cpb}, opset=11))
CASES.append(case("nms_no_max", "NonMaxSuppression", [boxes, scores], opset=11))  # max absent: nothing selected
CASES.append(case("nms_all_below", "NonMaxSuppression", [boxes, scores, ("const", i64(3)), ("const", f32(0.5)),
                                                         ("const", f32(2.0))], opset=11))
CASES.append(case("nms_dyn_inputs", "NonMaxSuppression", [boxes, scores, i64(4), f32(0.4), f32(0.1)], opset=11))
# Detectors' batched NMS: every class in one call, boxes shifted apart per class so thousands are kept (the
# vectorized search over the kept boxes), and a second batch item with overlapping boxes of two classes.
rng = np.random.default_rng(11)
n = 3000
xy = rng.uniform(0, 60, (2, n, 2))
big = np.concatenate([xy, xy + rng.uniform(2, 20, (2, n, 2))], axis=2) + rng.integers(0, 40, (2, n, 1)) * 100.0
big_scores = rng.uniform(0, 1, (2, 2, n)).astype(np.float32)
CASES.append(case("nms_batched_many", "NonMaxSuppression", [big.astype(np.float32), big_scores,
                                                             ("const", i64(5000)), ("const", f32(0.5)),
                                                             ("const", f32(0.05))], opset=11))
# The per-class cap reached inside a 64-box chunk, with repeated scores across chunks (the order of ties)
mid_scores = np.round(rng.uniform(0, 1, (1, 2, 500)), 2).astype(np.float32)
CASES.append(case("nms_cap_mid_chunk", "NonMaxSuppression", [big[:1, :500].astype(np.float32), mid_scores,
                                                              ("const", i64(100)), ("const", f32(0.3))], opset=11))

# ---- RoiAlign ----
xr = rand(2, 3, 12, 10, seed=9)
rois = f32([1.0, 1.5, 8.0, 9.0], [0.0, 0.0, 9.0, 11.0], [3.2, 2.1, 3.9, 4.0], [-2.0, -1.0, 4.0, 3.0],
           [5.0, 6.0, 14.0, 15.0])
bidx = i64(0, 1, 1, 0, 1)
for mode in ["avg", "max"]:
    for ctm in ["half_pixel", "output_half_pixel"]:
        for sr in [0, 2]:
            CASES.append(case(f"roialign_{mode}_{ctm}_sr{sr}", "RoiAlign", [xr, rois, bidx],
                              attrs={"mode": mode, "coordinate_transformation_mode": ctm, "output_height": 3,
                                     "output_width": 4, "sampling_ratio": sr, "spatial_scale": 0.8}, opset=16))
CASES.append(case("roialign_opset10", "RoiAlign", [xr, rois, bidx], attrs={"output_height": 2, "output_width": 2},
                  opset=10))

# ---- MaxRoiPool ----
rois5 = f32([0, 1, 1, 7, 9], [1, 0, 0, 9, 11], [1, 3.4, 2.6, 3.9, 4.2], [0, -2, -1, 4, 3], [1, 5, 6, 14, 15])
CASES.append(case("maxroipool", "MaxRoiPool", [xr, rois5], attrs={"pooled_shape": [3, 2]}))
CASES.append(case("maxroipool_scale", "MaxRoiPool", [xr, rois5], attrs={"pooled_shape": [2, 4], "spatial_scale": 0.5}))

# ---- MaxUnpool (indices from a MaxPool of the same geometry, as in real models) ----
def pooled(x, k, s):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    y = np.zeros((n, c, oh, ow), np.float32)
    ind = np.zeros((n, c, oh, ow), np.int64)
    for a in range(n):
        for b in range(c):
            for i in range(oh):
                for j in range(ow):
                    win = x[a, b, i * s:i * s + k, j * s:j * s + k]
                    r, q = np.unravel_index(np.argmax(win), win.shape)
                    y[a, b, i, j] = win[r, q]
                    ind[a, b, i, j] = ((a * c + b) * h + i * s + r) * w + j * s + q
    return y, ind


xp, ip = pooled(rand(2, 3, 6, 8, seed=10), 2, 2)
CASES.append(case("maxunpool_2x2", "MaxUnpool", [xp, ip], attrs={"kernel_shape": [2, 2], "strides": [2, 2]}, opset=11))
xq, iq = pooled(rand(1, 2, 7, 7, seed=11), 3, 2)
CASES.append(case("maxunpool_3x3s2", "MaxUnpool", [xq, iq], attrs={"kernel_shape": [3, 3], "strides": [2, 2]}, opset=11))

# ---- AffineGrid ----
th2 = rand(2, 2, 3, seed=12)
th3 = rand(2, 3, 4, seed=13)
for ac in [0, 1]:
    CASES.append(case(f"affinegrid_2d_ac{ac}", "AffineGrid", [th2, ("const", i64(2, 3, 5, 7))],
                      attrs={"align_corners": ac}, opset=20))
    CASES.append(case(f"affinegrid_3d_ac{ac}", "AffineGrid", [th3, ("const", i64(2, 3, 4, 5, 6))],
                      attrs={"align_corners": ac}, opset=20))

# ---- Col2Im ----
def col2im_case(name, img, blk, n=2, c=3, **attrs):
    dil = attrs.get("dilations", [1] * len(img))
    st = attrs.get("strides", [1] * len(img))
    pads = attrs.get("pads", [0] * 2 * len(img))
    L = 1
    for i in range(len(img)):
        L *= (img[i] + pads[i] + pads[i + len(img)] - dil[i] * (blk[i] - 1) - 1) // st[i] + 1
    x = rand(n, c * int(np.prod(blk)), L, seed=len(CASES))
    CASES.append(case(name, "Col2Im", [x, ("const", i64(*img)), ("const", i64(*blk))], attrs=attrs, opset=18))


col2im_case("col2im_basic", [5, 6], [2, 3])
col2im_case("col2im_strided", [7, 8], [3, 2], strides=[2, 3])
col2im_case("col2im_dil_pad", [6, 7], [2, 2], dilations=[2, 3], pads=[1, 0, 2, 1])

# ---- CenterCropPad ----
xc = rand(6, 9, 4, seed=14)
for nm, shape, axes in [("crop", [4, 5, 4], None), ("pad", [9, 12, 5], None), ("mixed", [3, 12], [0, 1]),
                        ("neg_axes", [7, 2], [-1, -3]), ("odd", [5, 8], [0, 1])]:
    attrs = {"axes": axes} if axes else {}
    CASES.append(case(f"centercroppad_{nm}", "CenterCropPad", [xc, ("const", i64(*shape))], attrs=attrs, opset=18))
CASES.append(case("centercroppad_int32", "CenterCropPad",
                  [rand(5, 6, dtype=np.int32, low=-9, high=9, seed=15), ("const", i64(8, 3))], opset=18))

# ---- DeformConv (2-D) ----
xd = rand(2, 4, 7, 6, seed=16)
for nm, attrs, og, g, mask, bias in [("basic", {}, 1, 1, False, False),
                                     ("pad_stride", {"pads": [1, 2, 1, 0], "strides": [2, 1]}, 1, 1, True, True),
                                     ("dilated", {"dilations": [2, 1], "offset_group": 2}, 2, 1, False, True),
                                     ("groups", {"group": 2, "offset_group": 2}, 2, 2, True, False)]:
    st = attrs.get("strides", [1, 1])
    dl = attrs.get("dilations", [1, 1])
    pd = attrs.get("pads", [0, 0, 0, 0])
    oh = (7 + pd[0] + pd[2] - (dl[0] * 2 + 1)) // st[0] + 1
    ow = (6 + pd[1] + pd[3] - (dl[1] * 2 + 1)) // st[1] + 1
    ins = [xd, rand(6, 4 // g, 3, 3, seed=17), rand(2, og * 18, oh, ow, low=-2, high=2, seed=18),
           rand(6, seed=19) if bias else None, rand(2, og * 9, oh, ow, low=0, high=1, seed=20) if mask else None]
    while ins[-1] is None:
        ins.pop()
    CASES.append(case(f"deformconv_{nm}", "DeformConv", ins, attrs={**attrs, "kernel_shape": [3, 3]}, opset=19))
