"""Op cases: Resize (opsets 10-19) and Upsample (7, 9), compared with onnxruntime."""
import numpy as np
import onnx

import optest
from optest import rand




def case(name, op, inputs, **kw):
    c = optest.node_case(name, op, inputs, **kw)
    return c


def f32(*v):
    return np.array(v, dtype=np.float32)


def i64(*v):
    return np.array(v, dtype=np.int64)


CASES = []
x = rand(1, 2, 5, 6, seed=1)
x3 = rand(2, 4, 7, seed=2)

COORDS = ["half_pixel", "asymmetric", "pytorch_half_pixel", "align_corners"]
for mode in ["nearest", "linear", "cubic"]:
    for coord in COORDS:
        for nm, sc in [("up", f32(1, 1, 2, 1.5)), ("down", f32(1, 1, 0.6, 0.5)), ("mixed", f32(1, 1, 1.7, 0.7))]:
            CASES.append(case(f"resize_{mode}_{coord}_{nm}", "Resize", [x, None, ("const", sc)],
                              attrs={"mode": mode, "coordinate_transformation_mode": coord}, opset=13))
    # sizes instead of scales
    CASES.append(case(f"resize_{mode}_sizes", "Resize", [x, None, None, ("const", i64(1, 2, 9, 4))],
                      attrs={"mode": mode}, opset=13))
    CASES.append(case(f"resize_{mode}_sizes_dyn", "Resize", [x, None, None, i64(1, 2, 3, 11)],
                      attrs={"mode": mode}, opset=13))
    CASES.append(case(f"resize_{mode}_scales_dyn", "Resize", [x, None, f32(1, 1, 2, 2)], attrs={"mode": mode}, opset=13))
    # opset 11: roi and scales inputs present even when empty
    CASES.append(case(f"resize_{mode}_opset11", "Resize", [x, ("const", np.zeros(0, np.float32)),
                                                          ("const", f32(1, 1, 1.5, 2.5))], attrs={"mode": mode}, opset=11))
    CASES.append(case(f"resize_{mode}_opset11_sizes", "Resize",
                      [x, ("const", np.zeros(0, np.float32)), ("const", np.zeros(0, np.float32)),
                       ("const", i64(1, 2, 8, 3))], attrs={"mode": mode}, opset=11))
    # half_pixel_symmetric (19)
    CASES.append(case(f"resize_{mode}_hps", "Resize", [x, None, ("const", f32(1, 1, 1.7, 0.6))],
                      attrs={"mode": mode, "coordinate_transformation_mode": "half_pixel_symmetric"}, opset=19))
    # tf_crop_and_resize with roi and extrapolation
    CASES.append(case(f"resize_{mode}_tfcrop", "Resize",
                      [x, ("const", f32(0, 0, 0.2, -0.3, 1, 1, 0.9, 1.2)), None, ("const", i64(1, 2, 4, 7))],
                      attrs={"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
                             "extrapolation_value": 2.5}, opset=13))

for nmode in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
    for nm, sc in [("up", f32(1, 1, 2.5, 1.5)), ("down", f32(1, 1, 0.6, 0.4))]:
        CASES.append(case(f"resize_nearest_{nmode}_{nm}", "Resize", [x, None, ("const", sc)],
                          attrs={"mode": "nearest", "nearest_mode": nmode, "coordinate_transformation_mode": "asymmetric"},
                          opset=13))
        CASES.append(case(f"resize_nearest_{nmode}_{nm}_hp", "Resize", [x, None, ("const", sc)],
                          attrs={"mode": "nearest", "nearest_mode": nmode}, opset=13))

for a in [-0.5, -0.75]:
    for exc in [0, 1]:
        CASES.append(case(f"resize_cubic_a{-a}_ex{exc}".replace(".", "p"), "Resize", [x, None, ("const", f32(1, 1, 1.8, 0.7))],
                          attrs={"mode": "cubic", "cubic_coeff_a": a, "exclude_outside": exc}, opset=13))

# n-d: 3-D input, 5-D input, scaling outer dims
CASES.append(case("resize_linear_3d", "Resize", [x3, None, ("const", f32(1, 2, 1.5))], attrs={"mode": "linear"}, opset=13))
# (onnxruntime's linear resizes only inner dims of 4-D inputs: no case for scaled N/C)
CASES.append(case("resize_nearest_5d", "Resize", [rand(1, 2, 3, 4, 2, seed=3), None, ("const", f32(1, 1, 2, 0.5, 3))],
                  attrs={"mode": "nearest"}, opset=13))
CASES.append(case("resize_linear_5d", "Resize", [rand(1, 2, 3, 4, 2, seed=4), None, ("const", f32(1, 1, 2, 0.5, 3))],
                  attrs={"mode": "linear"}, opset=13))
CASES.append(case("resize_big", "Resize", [rand(1, 3, 64, 48, seed=5), None, ("const", f32(1, 1, 2, 2))],
                  attrs={"mode": "linear"}, opset=13))

# opset 18: axes and keep_aspect_ratio_policy
CASES.append(case("resize18_axes_scales", "Resize", [x, None, ("const", f32(2, 0.5))],
                  attrs={"mode": "linear", "axes": [2, 3]}, opset=18))
CASES.append(case("resize18_axes_neg_sizes", "Resize", [x, None, None, ("const", i64(7))],
                  attrs={"mode": "nearest", "axes": [-1]}, opset=18))
for pol in ["stretch", "not_larger", "not_smaller"]:
    CASES.append(case(f"resize18_{pol}", "Resize", [x, None, None, ("const", i64(8, 8))],
                      attrs={"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": pol}, opset=18))
CASES.append(case("resize18_antialias_up", "Resize", [x, None, ("const", f32(1, 1, 2, 2))],
                  attrs={"mode": "linear", "antialias": 1}, opset=18))

# dtypes
CASES.append(case("resize_nearest_u8", "Resize", [rand(1, 1, 4, 4, dtype=np.uint8, low=0, high=250, seed=6), None,
                                                  ("const", f32(1, 1, 2, 3))], attrs={"mode": "nearest"}, opset=13))
CASES.append(case("resize_nearest_i32", "Resize", [rand(1, 1, 4, 4, dtype=np.int32, low=-99, high=99, seed=7), None,
                                                   ("const", f32(1, 1, 0.5, 1.5))], attrs={"mode": "nearest"}, opset=13))
CASES.append(case("resize_linear_f16", "Resize", [rand(1, 2, 4, 5, dtype=np.float16, seed=8), None,
                                                  ("const", f32(1, 1, 2, 1.5))], attrs={"mode": "linear"}, opset=13,
                  rtol=1e-2, atol=1e-2))

# Resize-10 and Upsample
for mode in ["nearest", "linear"]:
    CASES.append(case(f"resize10_{mode}_up", "Resize", [x, ("const", f32(1, 1, 2, 3))], attrs={"mode": mode}, opset=10))
    CASES.append(case(f"resize10_{mode}_down", "Resize", [x, ("const", f32(1, 1, 0.6, 0.5))], attrs={"mode": mode},
                      opset=10))
    CASES.append(case(f"upsample9_{mode}", "Upsample", [x, ("const", f32(1, 1, 2, 1.5))], attrs={"mode": mode}, opset=9))
    CASES.append(case(f"upsample7_{mode}", "Upsample", [x], attrs={"mode": mode, "scales": [1.0, 1.0, 3.0, 2.0]}, opset=7))
CASES.append(case("upsample9_dyn", "Upsample", [x, f32(1, 1, 2, 2)], attrs={"mode": "nearest"}, opset=9))
