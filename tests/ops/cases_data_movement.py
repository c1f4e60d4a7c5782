"""Op cases: Concat, Split, Slice, Gather, GatherElements, GatherND, ScatterElements, ScatterND, Transpose, Pad,
DepthToSpace, SpaceToDepth (compared with onnxruntime)."""
import numpy as np
import onnx
from onnx import helper

import optest
from optest import rand




def case(name, op, inputs, **kw):
    c = optest.node_case(name, op, inputs, **kw)
    return c


def i64(*v):
    """i64(1, 2) -> [1, 2]; i64([[1], [2]]) -> that nested array."""
    return np.array(v[0] if len(v) == 1 and isinstance(v[0], list) else v, dtype=np.int64)


CASES = []
x = rand(2, 3, 4, seed=1)
x4 = rand(2, 3, 4, 5, seed=2)
DTYPES = [np.float32, np.int64, np.int8, np.uint8, np.float16, np.bool_, np.int32, np.float64, np.int16]


def dt_name(dt):
    return np.dtype(dt).name


# ---- Concat ----
for axis in [0, 1, 2, -1, -3]:
    a, b = rand(2, 3, 4, seed=3), rand(2, 3, 4, seed=4)
    CASES.append(case(f"concat_ax{axis}".replace("-", "m"), "Concat", [a, b, rand(2, 3, 4, seed=5)],
                      attrs={"axis": axis}, opset=13))
CASES.append(case("concat_uneven", "Concat", [rand(2, 1, 4, seed=6), rand(2, 5, 4, seed=7), rand(2, 2, 4, seed=8)],
                  attrs={"axis": 1}, opset=11))
CASES.append(case("concat_empty", "Concat", [rand(2, 0, seed=6), rand(2, 5, seed=7)], attrs={"axis": 1}, opset=13))
CASES.append(case("concat_one", "Concat", [x], attrs={"axis": 0}, opset=4))
for dt in DTYPES:
    CASES.append(case(f"concat_{dt_name(dt)}", "Concat", [rand(3, 2, dtype=dt, low=-50, high=50, seed=9),
                                                         rand(3, 5, dtype=dt, low=-50, high=50, seed=10)],
                      attrs={"axis": -1}, opset=13))

# ---- Split ----
CASES.append(case("split_equal", "Split", [x4], outputs=3, attrs={"axis": 1}, opset=13))
CASES.append(case("split_input13", "Split", [x4, ("const", i64(1, 3, 1))], outputs=3, attrs={"axis": -1}, opset=13))
CASES.append(case("split_input13_dyn", "Split", [x4, i64(2, 2)], outputs=2, attrs={"axis": 2}, opset=13))
CASES.append(case("split_attr11", "Split", [x4], outputs=2, attrs={"axis": 3, "split": [4, 1]}, opset=11))
CASES.append(case("split_default_axis", "Split", [x4], outputs=2, opset=13))
CASES.append(case("split_num_outputs18", "Split", [rand(7, 3, seed=11)], outputs=3, attrs={"num_outputs": 3},
                  opset=18))
CASES.append(case("split_num_outputs18_even", "Split", [x4], outputs=2, attrs={"num_outputs": 2, "axis": 2}, opset=18))
CASES.append(case("split_zero", "Split", [x4, ("const", i64(0, 5))], outputs=2, attrs={"axis": 3}, opset=13))
CASES.append(case("split_i64", "Split", [rand(6, 2, dtype=np.int64, low=-9, high=9, seed=12)], outputs=3, opset=13))

# ---- Slice ----
d = rand(5, 6, 7, seed=13)
SL = [
    ("basic", i64(1, 0), i64(4, 3), None, None),
    ("axes", i64(2), i64(5), i64(2), None),
    ("neg_axes", i64(-3), i64(-1), i64(-1), None),
    ("steps", i64(0, 1), i64(5, 7), i64(0, 2), i64(2, 3)),
    ("neg_step", i64(4, -1), i64(0, -8), i64(0, 2), i64(-1, -2)),
    ("neg_step_all", i64(-1), i64(-100), i64(1), i64(-1)),
    ("clamp_big", i64(-1000, 2), i64(1000, 2**62), i64(0, 1), None),
    ("int64_limits", i64(0), i64(np.iinfo(np.int64).max), i64(2), i64(3)),
    ("empty", i64(3), i64(1), i64(0), None),
    ("neg_start_end", i64(-4, -5), i64(-1, -1), i64(1, 2), None),
    ("neg_step_min", i64(5), i64(np.iinfo(np.int64).min), i64(1), i64(-2)),
]
for nm, st, en, ax, sp in SL:
    ins = [d, ("const", st), ("const", en)]
    if ax is not None or sp is not None:
        ins.append(("const", ax) if ax is not None else None)
    if sp is not None:
        ins.append(("const", sp))
    CASES.append(case(f"slice_{nm}", "Slice", ins, opset=13))
CASES.append(case("slice_dyn", "Slice", [d, i64(1, -3), i64(4, 100), i64(0, 2), i64(1, -1)], opset=13))
CASES.append(case("slice_opset1", "Slice", [d], attrs={"starts": [1, 0], "ends": [3, 100], "axes": [0, 2]}, opset=9))
CASES.append(case("slice_opset1_noaxes", "Slice", [d], attrs={"starts": [1, -2], "ends": [-1, 1000]}, opset=1))
CASES.append(case("slice_opset10", "Slice", [d, ("const", i64(0)), ("const", i64(3)), ("const", i64(1)),
                                             ("const", i64(2))], opset=10))
CASES.append(case("slice_i32_idx", "Slice", [d, ("const", np.array([1], np.int32)), ("const", np.array([3], np.int32))],
                  opset=13))
for dt in [np.int8, np.float16, np.int64, np.bool_]:
    CASES.append(case(f"slice_{dt_name(dt)}", "Slice", [rand(4, 5, dtype=dt, low=-9, high=9, seed=14),
                                                       ("const", i64(1, 4)), ("const", i64(3, 0)),
                                                       ("const", i64(0, 1)), ("const", i64(1, -2))], opset=13))

# ---- Gather ----
for axis in [0, 1, 2, -1]:
    n = x.shape[axis]
    idx = np.array([[0, n - 1], [-1, 1 % n]], np.int64)
    CASES.append(case(f"gather_ax{axis}".replace("-", "m"), "Gather", [x, ("const", idx)], attrs={"axis": axis}, opset=13))
CASES.append(case("gather_scalar_idx", "Gather", [x, np.array(-2, np.int64)], attrs={"axis": 1}, opset=13))
CASES.append(case("gather_i32", "Gather", [x, np.array([2, 0, 1, 1], np.int32)], attrs={"axis": 2}, opset=11))
CASES.append(case("gather_int64_data", "Gather", [rand(5, 3, dtype=np.int64, low=-9, high=9, seed=15),
                                                  np.array([4, -5, 2], np.int64)], opset=13))
CASES.append(case("gather_opset1", "Gather", [x, np.array([1, 0], np.int64)], opset=1))

# ---- GatherElements ----
ge = rand(3, 4, 5, seed=16)
for axis in [0, 1, 2, -1]:
    shp = list(ge.shape)
    shp[axis] = 2
    idx = np.random.default_rng(17).integers(-ge.shape[axis], ge.shape[axis], size=shp).astype(np.int64)
    CASES.append(case(f"gather_elements_ax{axis}".replace("-", "m"), "GatherElements", [ge, idx],
                      attrs={"axis": axis}, opset=13))
CASES.append(case("gather_elements_small", "GatherElements", [ge, np.zeros((2, 3, 5), np.int32)], attrs={"axis": 1},
                  opset=11))

# ---- GatherND ----
gd = rand(2, 3, 4, seed=18)
CASES.append(case("gather_nd_k1", "GatherND", [gd, i64([[1], [0]])], opset=13))
CASES.append(case("gather_nd_k2", "GatherND", [gd, i64([[1, 2], [0, -1]])], opset=13))
CASES.append(case("gather_nd_k3", "GatherND", [gd, i64([[[1, 2, 3]], [[0, 0, -4]]])], opset=12))
CASES.append(case("gather_nd_b1", "GatherND", [gd, i64([[1], [2]])], attrs={"batch_dims": 1}, opset=12))
CASES.append(case("gather_nd_b1_k2", "GatherND", [gd, i64([[[1, 2], [0, 3]], [[2, 0], [1, 1]]])],
                  attrs={"batch_dims": 1}, opset=13))
CASES.append(case("gather_nd_int", "GatherND", [rand(3, 3, dtype=np.int32, low=-9, high=9, seed=19), i64([[2, 1], [0, 0]])],
                  opset=11))

# ---- ScatterElements / ScatterND ----
sd = rand(3, 4, seed=20)
for axis in [0, 1, -1]:
    shp = [2, 3] if axis == 0 else [3, 2]
    rng = np.random.default_rng(21 + axis)
    n = sd.shape[axis]
    # distinct indices along the axis so that the result does not depend on update order
    idx = np.stack([rng.permutation(n)[:shp[axis]] for _ in range(shp[1 - axis if axis >= 0 else 0])], axis=1 - (axis % 2))
    idx = idx.astype(np.int64).reshape(shp)
    upd = rand(*shp, seed=22)
    CASES.append(case(f"scatter_elements_ax{axis}".replace("-", "m"), "ScatterElements", [sd, idx, upd],
                      attrs={"axis": axis}, opset=13))
for red in ["add", "mul"]:
    CASES.append(case(f"scatter_elements_{red}", "ScatterElements",
                      [sd, i64([[1, 1], [0, -1], [3, 3]]), rand(3, 2, seed=23)],
                      attrs={"axis": 1, "reduction": red}, opset=16))
for red in ["max", "min"]:
    CASES.append(case(f"scatter_elements_{red}", "ScatterElements",
                      [sd, i64([[1, 1], [0, -1], [3, 3]]), rand(3, 2, seed=24)],
                      attrs={"axis": 1, "reduction": red}, opset=18))
CASES.append(case("scatter_elements_int", "ScatterElements",
                  [rand(4, dtype=np.int64, low=-9, high=9, seed=25), i64(3, 0), i64(7, 8)], opset=11))
CASES.append(case("scatter_nd_elem", "ScatterND", [sd, i64([[0, 1], [2, 3]]), np.array([5, 6], np.float32)], opset=13))
CASES.append(case("scatter_nd_rows", "ScatterND", [sd, i64([[2], [0]]), rand(2, 4, seed=26)], opset=11))
CASES.append(case("scatter_nd_neg", "ScatterND", [sd, i64([[-1]]), rand(1, 4, seed=27)], opset=13))
for red in ["add", "mul"]:
    CASES.append(case(f"scatter_nd_{red}", "ScatterND", [sd, i64([[1], [1]]), rand(2, 4, seed=28)],
                      attrs={"reduction": red}, opset=16))
CASES.append(case("scatter_nd_max", "ScatterND", [sd, i64([[1, 2], [1, 2]]), np.array([3, -1], np.float32)],
                  attrs={"reduction": "max"}, opset=18))

# ---- Transpose ----
for perm in [None, [0, 2, 1], [1, 0, 2], [2, 0, 1], [1, 2, 0]]:
    attrs = {"perm": perm} if perm else {}
    CASES.append(case("transpose_" + ("default" if not perm else "".join(map(str, perm))), "Transpose", [x],
                      attrs=attrs, opset=13))
for perm in [[0, 2, 3, 1], [0, 3, 1, 2], [3, 2, 1, 0], [0, 1, 3, 2], [1, 0, 2, 3]]:
    CASES.append(case("transpose4_" + "".join(map(str, perm)), "Transpose", [x4], attrs={"perm": perm}, opset=13))
CASES.append(case("transpose_big", "Transpose", [rand(3, 67, 45, 9, seed=29)], attrs={"perm": [0, 2, 3, 1]}, opset=13))
CASES.append(case("transpose_big2d", "Transpose", [rand(130, 70, seed=30)], opset=13))
CASES.append(case("transpose_ones", "Transpose", [rand(1, 5, 1, 3, seed=31)], attrs={"perm": [3, 2, 0, 1]}, opset=13))
CASES.append(case("transpose_6d", "Transpose", [rand(2, 3, 2, 1, 3, 2, seed=32)], attrs={"perm": [5, 0, 3, 1, 4, 2]},
                  opset=13))
for dt in DTYPES:
    CASES.append(case(f"transpose_{dt_name(dt)}", "Transpose", [rand(3, 4, 5, dtype=dt, low=-50, high=50, seed=33)],
                      attrs={"perm": [2, 0, 1]}, opset=13))

# the shapes the CUDA kernel tells apart: attention's head split / merge (the last dim moves whole: 16-byte, 8-byte
# and element units), K^T and layout changes (tiles: edges of 32, a batch), dims of 1 between merged dims, float16
hs = rand(2, 37, 3, 64, dtype=np.float16, seed=35)
CASES.append(case("transpose_heads_f16", "Transpose", [hs], attrs={"perm": [0, 2, 1, 3]}, opset=13))
CASES.append(case("transpose_kt_f16", "Transpose", [hs], attrs={"perm": [0, 2, 3, 1]}, opset=13))
CASES.append(case("transpose_rows_odd", "Transpose", [rand(4, 5, 3, 6, seed=36)], attrs={"perm": [1, 0, 2, 3]},
                  opset=13))
CASES.append(case("transpose_rows_int8", "Transpose", [rand(3, 7, 5, dtype=np.int8, low=-9, high=9, seed=37)],
                  attrs={"perm": [1, 0, 2]}, opset=13))
CASES.append(case("transpose_nhwc_tiles", "Transpose", [rand(2, 40, 9, 11, seed=38)], attrs={"perm": [0, 2, 3, 1]},
                  opset=13))
CASES.append(case("transpose_tiles_int64", "Transpose", [rand(33, 70, dtype=np.int64, low=-99, high=99, seed=39)],
                  opset=13))
CASES.append(case("transpose_merge_over_ones", "Transpose", [rand(3, 1, 4, 1, 5, 6, seed=40)],
                  attrs={"perm": [4, 5, 1, 0, 3, 2]}, opset=13))
CASES.append(case("transpose_noop_perm", "Transpose", [rand(1, 6, 1, 7, seed=41)], attrs={"perm": [2, 1, 0, 3]},
                  opset=13))

# ---- Pad ----
p = rand(3, 4, 5, seed=34)
for mode in ["constant", "reflect", "edge", "wrap"]:
    CASES.append(case(f"pad_{mode}", "Pad", [p, ("const", i64(1, 0, 2, 0, 3, 2))], attrs={"mode": mode}, opset=19))
    CASES.append(case(f"pad_{mode}_dyn", "Pad", [p, i64(0, 2, 1, 1, 0, 3)], attrs={"mode": mode}, opset=19))
    CASES.append(case(f"pad_{mode}_axes", "Pad", [p, ("const", i64(2, 1, 1, 2)), None, ("const", i64(-1, 0))],
                      attrs={"mode": mode}, opset=19))
for mode in ["constant", "edge"]:
    CASES.append(case(f"pad_{mode}_negative", "Pad", [p, ("const", i64(-1, 2, 1, 1, -2, -1))], attrs={"mode": mode},
                      opset=13))
CASES.append(case("pad_value", "Pad", [p, ("const", i64(1, 1, 1, 1, 1, 1)), ("const", np.array(2.5, np.float32))],
                  opset=13))
CASES.append(case("pad_value_dyn", "Pad", [p, ("const", i64(0, 0, 1, 0, 0, 2)), np.array(-1.5, np.float32)], opset=11))
CASES.append(case("pad_attr2", "Pad", [p], attrs={"pads": [0, 1, 2, 1, 0, 0], "value": 3.0}, opset=2))
CASES.append(case("pad_attr2_reflect", "Pad", [p], attrs={"pads": [0, 1, 2, 1, 0, 3], "mode": "reflect"}, opset=9))
CASES.append(case("pad_int", "Pad", [rand(3, 3, dtype=np.int32, low=-9, high=9, seed=35), ("const", i64(1, 1, 1, 1)),
                                     ("const", np.array(7, np.int32))], opset=13))
CASES.append(case("pad_u8_edge", "Pad", [rand(3, 3, dtype=np.uint8, low=0, high=200, seed=36), ("const", i64(2, 0, 0, 2))],
                  attrs={"mode": "edge"}, opset=13))
CASES.append(case("pad_f16", "Pad", [rand(2, 3, dtype=np.float16, seed=37), ("const", i64(1, 1, 1, 1)),
                                     ("const", np.array(0.5, np.float16))], opset=13))
CASES.append(case("pad_4d_reflect", "Pad", [x4, ("const", i64(0, 0, 2, 3, 0, 0, 1, 4))], attrs={"mode": "reflect"},
                  opset=13))

# ---- DepthToSpace / SpaceToDepth ----
ds = rand(2, 8, 3, 4, seed=38)
CASES.append(case("d2s_dcr", "DepthToSpace", [ds], attrs={"blocksize": 2}, opset=13))
CASES.append(case("d2s_crd", "DepthToSpace", [ds], attrs={"blocksize": 2, "mode": "CRD"}, opset=13))
CASES.append(case("d2s_opset1", "DepthToSpace", [rand(1, 9, 2, 2, seed=39)], attrs={"blocksize": 3}, opset=9))
CASES.append(case("d2s_crd_b3", "DepthToSpace", [rand(1, 18, 2, 3, seed=40)],
                  attrs={"blocksize": 3, "mode": "CRD"}, opset=11))
CASES.append(case("s2d", "SpaceToDepth", [rand(2, 3, 4, 6, seed=41)], attrs={"blocksize": 2}, opset=13))
CASES.append(case("s2d_b3", "SpaceToDepth", [rand(1, 2, 6, 3, seed=42)], attrs={"blocksize": 3}, opset=1))
CASES.append(case("s2d_u8", "SpaceToDepth", [rand(1, 2, 4, 4, dtype=np.uint8, low=0, high=200, seed=43)],
                  attrs={"blocksize": 2}, opset=13))
