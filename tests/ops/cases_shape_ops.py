"""Op cases: Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, ConstantOfShape, Expand, Identity, Dropout,
Range, Tile, EyeLike, Trilu (compared with onnxruntime)."""
import numpy as np
import onnx
from onnx import helper, TensorProto

import optest
from optest import rand




def case(name, op, inputs, **kw):
    c = optest.node_case(name, op, inputs, **kw)
    return c


def i64(*v):
    return np.array(v, dtype=np.int64)


CASES = []
x = rand(2, 3, 4, seed=1)
x4 = rand(2, 3, 4, 5, seed=2)

# ---- Reshape ----
for nm, shape in [("flat", i64(-1)), ("copy0", i64(0, 12)), ("m1mid", i64(2, -1, 2)), ("4d", i64(1, 2, 3, 4)),
                  ("back", i64(6, 4))]:
    CASES.append(case(f"reshape_{nm}", "Reshape", [x, ("const", shape)], opset=13))
    CASES.append(case(f"reshape_{nm}_dyn", "Reshape", [x, shape], opset=13))  # shape known only at run time
CASES.append(case("reshape_allowzero", "Reshape", [np.zeros((0, 3), np.float32), ("const", i64(3, 0))],
                  attrs={"allowzero": 1}, opset=14))
CASES.append(case("reshape_opset5", "Reshape", [x, ("const", i64(4, -1))], opset=5))
for dt in [np.int64, np.int8, np.uint8, np.float16, np.bool_, np.int32, np.float64]:
    CASES.append(case(f"reshape_{np.dtype(dt).name}", "Reshape", [rand(2, 6, dtype=dt, low=-5, high=5, seed=3),
                                                                 ("const", i64(3, 4))], opset=13))

# ---- Flatten ----
for axis in [0, 1, 2, 3, 4, -1, -4]:
    CASES.append(case(f"flatten_ax{axis}".replace("-", "m"), "Flatten", [x4], attrs={"axis": axis}, opset=13))
CASES.append(case("flatten_default9", "Flatten", [x4], opset=9))

# ---- Squeeze / Unsqueeze ----
s = rand(1, 3, 1, 4, seed=4)
CASES.append(case("squeeze_all", "Squeeze", [s], opset=13))
CASES.append(case("squeeze_axes13", "Squeeze", [s, ("const", i64(0, -2))], opset=13))
CASES.append(case("squeeze_axes13_dyn", "Squeeze", [s, i64(2)], opset=13))
CASES.append(case("squeeze_attr11", "Squeeze", [s], attrs={"axes": [0]}, opset=11))
CASES.append(case("squeeze_attr_neg11", "Squeeze", [s], attrs={"axes": [-2, 0]}, opset=11))
CASES.append(case("unsqueeze13", "Unsqueeze", [x, ("const", i64(0, 4))], opset=13))
CASES.append(case("unsqueeze13_neg", "Unsqueeze", [x, ("const", i64(-1, 1))], opset=13))
CASES.append(case("unsqueeze_attr11", "Unsqueeze", [x], attrs={"axes": [1, -1]}, opset=11))
CASES.append(case("unsqueeze_attr9", "Unsqueeze", [x], attrs={"axes": [0]}, opset=9))
CASES.append(case("unsqueeze_scalar", "Unsqueeze", [np.array(3.5, np.float32), ("const", i64(0))], opset=13))

# ---- Shape / Size ----
CASES.append(case("shape", "Shape", [x4], opset=13))
for st, en in [(1, None), (None, -1), (-3, 3), (2, 1), (-10, 10)]:
    attrs = {}
    if st is not None:
        attrs["start"] = st
    if en is not None:
        attrs["end"] = en
    CASES.append(case(f"shape_{st}_{en}".replace("-", "m"), "Shape", [x4], attrs=attrs, opset=15))
CASES.append(case("size", "Size", [x4], opset=13))
CASES.append(case("size_int", "Size", [rand(3, 7, dtype=np.int32, seed=5)], opset=13))

# ---- ConstantOfShape ----
CASES.append(case("cos_default", "ConstantOfShape", [("const", i64(2, 3))], opset=13))
CASES.append(case("cos_dyn", "ConstantOfShape", [i64(3, 1, 2)], opset=13))
for nm, t in [("f", helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])),
              ("i64", helper.make_tensor("v", TensorProto.INT64, [1], [-7])),
              ("i32", helper.make_tensor("v", TensorProto.INT32, [1], [9])),
              ("b", helper.make_tensor("v", TensorProto.BOOL, [1], [True])),
              ("f16", helper.make_tensor("v", TensorProto.FLOAT16, [1], [np.float16(1.5).view(np.uint16)])),
              ("d", helper.make_tensor("v", TensorProto.DOUBLE, [1], [0.25]))]:
    CASES.append(case(f"cos_{nm}", "ConstantOfShape", [("const", i64(4, 2))], attrs={"value": t}, opset=13))

# ---- Expand ----
CASES.append(case("expand_basic", "Expand", [rand(3, 1, seed=6), ("const", i64(2, 3, 4))], opset=13))
CASES.append(case("expand_smaller_shape", "Expand", [rand(2, 3, 4, seed=7), ("const", i64(3, 1))], opset=13))
CASES.append(case("expand_ones", "Expand", [rand(1, 4, 1, seed=8), ("const", i64(3, 1, 5))], opset=8))
CASES.append(case("expand_dyn_int", "Expand", [rand(1, 3, dtype=np.int64, low=-9, high=9, seed=9), i64(4, 1)], opset=13))
CASES.append(case("expand_scalar_bool", "Expand", [np.array(True), ("const", i64(2, 2))], opset=13))

# ---- Identity / Dropout ----
CASES.append(case("identity", "Identity", [x], opset=13))
CASES.append(case("identity_i8", "Identity", [rand(5, dtype=np.int8, low=-100, high=100, seed=10)], opset=16))
CASES.append(case("dropout13", "Dropout", [x], opset=13))
CASES.append(case("dropout13_mask", "Dropout", [x], outputs=2, opset=13))
CASES.append(case("dropout12_ratio", "Dropout", [x, ("const", np.array(0.3, np.float32))], outputs=2, opset=12))
CASES.append(case("dropout12_train_false", "Dropout",
                  [x, ("const", np.array(0.3, np.float32)), ("const", np.array(False))], outputs=2, opset=12))
CASES.append(case("dropout10_mask", "Dropout", [x], outputs=2, attrs={"ratio": 0.2}, opset=10))
CASES.append(case("dropout7", "Dropout", [x], opset=7))

# ---- Range ----
for nm, (a, b, d), dt in [("f", (0.5, 4.0, 0.7), np.float32), ("fneg", (3.0, -1.0, -0.5), np.float32),
                          ("i64", (-3, 10, 3), np.int64), ("i32", (10, 2, -2), np.int32),
                          ("empty", (5, 1, 1), np.int64), ("d", (1.0, 2.0, 0.125), np.float64)]:
    ins = [np.array(a, dt), np.array(b, dt), np.array(d, dt)]
    CASES.append(case(f"range_{nm}", "Range", [("const", v) for v in ins], opset=13))
    CASES.append(case(f"range_{nm}_dyn", "Range", ins, opset=13))

# ---- Tile ----
CASES.append(case("tile_2d", "Tile", [rand(2, 3, seed=11), ("const", i64(2, 3))], opset=13))
CASES.append(case("tile_3d", "Tile", [x, ("const", i64(1, 2, 2))], opset=13))
CASES.append(case("tile_dyn_i32", "Tile", [rand(3, 2, dtype=np.int32, low=-9, high=9, seed=12), i64(3, 1)], opset=13))
CASES.append(case("tile_1d_u8", "Tile", [rand(4, dtype=np.uint8, low=0, high=200, seed=13), ("const", i64(3))], opset=6))

# ---- EyeLike ----
for k in [0, 1, -2, 5]:
    CASES.append(case(f"eyelike_k{k}".replace("-", "m"), "EyeLike", [rand(4, 5, seed=14)], attrs={"k": k}, opset=13))
CASES.append(case("eyelike_dtype", "EyeLike", [rand(3, 3, seed=15)], attrs={"dtype": TensorProto.INT32}, opset=13))
CASES.append(case("eyelike_int", "EyeLike", [rand(3, 2, dtype=np.int64, seed=16)], opset=9))

# ---- Trilu ----
t = rand(2, 4, 5, seed=17)
for upper in [0, 1]:
    CASES.append(case(f"trilu_u{upper}", "Trilu", [t], attrs={"upper": upper}, opset=14))
    for k in [1, -1, 3, -6]:
        CASES.append(case(f"trilu_u{upper}_k{k}".replace("-", "m"), "Trilu", [t, ("const", i64(k).reshape(()))],
                          attrs={"upper": upper}, opset=14))
CASES.append(case("trilu_int_dynk", "Trilu", [rand(5, 3, dtype=np.int64, low=-9, high=9, seed=18),
                                             np.array(1, np.int64)], attrs={"upper": 0}, opset=14))
