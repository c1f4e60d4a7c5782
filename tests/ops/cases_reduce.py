"""Op cases: ReduceXxx, ArgMax/ArgMin, TopK, CumSum (compared with onnxruntime)."""
import numpy as np
import onnx

import optest
from optest import rand

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
# ops whose values must stay positive (log of a sum) or small (products)
POSITIVE = {"ReduceLogSum"}




def case(name, op, inputs, **kw):
    c = optest.node_case(name, op, inputs, **kw)
    return c


def data(op, shape, dtype=np.float32, seed=0):
    if np.issubdtype(np.dtype(dtype), np.integer):
        lo, hi = (1, 3) if op in POSITIVE or op == "ReduceProd" else (-5, 5)
        return rand(*shape, dtype=dtype, low=lo, high=hi, seed=seed)
    if op in POSITIVE:
        return rand(*shape, dtype=dtype, low=0.1, high=2.0, seed=seed)
    return rand(*shape, dtype=dtype, low=-2.0, high=2.0, seed=seed)


def tol(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype == np.float16 else dict(rtol=1e-4, atol=1e-5)


CASES = []
for op in REDUCE_OPS:
    short = op[len("Reduce"):]
    axes_input_opset = 13 if op == "ReduceSum" else 18
    x = data(op, (3, 4, 5, 6))
    # attribute form (opset 11..17): innermost, middle, negative, several non-adjacent, all
    for tag, axes, keep in [("inner", [3], 1), ("middle", [1], 0), ("neg", [-2], 1), ("first", [0], 0),
                            ("multi", [0, 2], 1), ("adj", [2, 3], 0), ("multi_neg", [-1, 1], 0)]:
        CASES.append(case(f"{short}_attr_{tag}_k{keep}", op, [x], attrs={"axes": axes, "keepdims": keep},
                          opset=11))
    CASES.append(case(f"{short}_attr_all", op, [x], attrs={"keepdims": 0}, opset=11))
    CASES.append(case(f"{short}_attr_all_keep", op, [x], opset=axes_input_opset - 1))
    # input form: constant axes, axes as a run-time graph input, empty axes with and without noop
    CASES.append(case(f"{short}_input_const", op, [x, ("const", np.array([1, -1], np.int64))],
                      attrs={"keepdims": 1}, opset=axes_input_opset))
    CASES.append(case(f"{short}_input_runtime", op, [x, np.array([-3], np.int64)], attrs={"keepdims": 0},
                      opset=axes_input_opset))
    CASES.append(case(f"{short}_input_none", op, [x], attrs={"keepdims": 0}, opset=axes_input_opset))
    CASES.append(case(f"{short}_input_noop", op, [x, ("const", np.array([], np.int64))],
                      attrs={"noop_with_empty_axes": 1}, opset=axes_input_opset))
    CASES.append(case(f"{short}_opset18", op, [x, ("const", np.array([2], np.int64))], opset=18))
    # dtypes
    for dt in [np.float16, np.float64, np.int32, np.int64]:
        xd = data(op, (4, 3, 7), dtype=dt, seed=3)
        CASES.append(case(f"{short}_{np.dtype(dt).name}_inner", op, [xd], attrs={"axes": [2]}, opset=11, **tol(dt)))
        CASES.append(case(f"{short}_{np.dtype(dt).name}_middle", op, [xd], attrs={"axes": [1], "keepdims": 0},
                          opset=11, **tol(dt)))
    # a wide middle axis (several inner blocks) and a long innermost line (parallel chunks)
    CASES.append(case(f"{short}_wide_middle", op, [data(op, (2, 9, 700), seed=5)], attrs={"axes": [1]},
                      opset=11, rtol=1e-3, atol=1e-4))
    if op not in ("ReduceProd",):
        CASES.append(case(f"{short}_long_inner", op, [data(op, (64, 1000), seed=6)], attrs={"axes": [1]},
                          opset=11, rtol=1e-3, atol=1e-3))

for op in ["ReduceMax", "ReduceMin"]:
    for dt in [np.uint8, np.int8]:
        xd = rand(3, 5, 4, dtype=dt, low=0, high=100, seed=9)
        CASES.append(case(f"{op[6:]}_{np.dtype(dt).name}", op, [xd], attrs={"axes": [1]}, opset=13))

# ---- ArgMax / ArgMin ----
ties = rand(4, 6, 5, dtype=np.int32, low=0, high=2, seed=11)  # many ties
for op in ["ArgMax", "ArgMin"]:
    x = rand(4, 6, 5, seed=12)
    for axis in [0, 1, 2, -1, -2]:
        for keep in [0, 1]:
            CASES.append(case(f"{op}_ax{axis}_k{keep}".replace("-", "m"), op, [x],
                              attrs={"axis": axis, "keepdims": keep}, opset=13))
    for last in [0, 1]:
        for axis in [1, 2]:
            CASES.append(case(f"{op}_ties_ax{axis}_last{last}", op, [ties],
                              attrs={"axis": axis, "select_last_index": last}, opset=12))
    CASES.append(case(f"{op}_default_axis_opset11", op, [x], opset=11))
    # long contiguous lines (the lane path) with ties, first and last index
    long_ties = np.round(rand(6, 1000, low=-4, high=4, seed=14)).astype(np.float32)
    for last in [0, 1]:
        CASES.append(case(f"{op}_long_ties_last{last}", op, [long_ties], attrs={"axis": -1, "select_last_index": last},
                          opset=13))
    for dt in [np.float16, np.float64, np.int64, np.uint8, np.int8]:
        xd = rand(5, 7, dtype=dt, low=0 if dt == np.uint8 else -50, high=50, seed=13)
        CASES.append(case(f"{op}_{np.dtype(dt).name}", op, [xd], attrs={"axis": 1}, opset=13))

# ---- TopK ----
xt = rand(3, 10, 4, seed=21)
ti = rand(3, 10, 4, dtype=np.int64, low=0, high=3, seed=22)  # ties: lower index first
for axis in [-1, 1, 0]:
    for largest in [1, 0]:
        CASES.append(case(f"TopK_ax{axis}_l{largest}".replace("-", "m"), "TopK",
                          [xt, ("const", np.array([3], np.int64))], outputs=2,
                          attrs={"axis": axis, "largest": largest}, opset=11))
        CASES.append(case(f"TopK_ties_ax{axis}_l{largest}".replace("-", "m"), "TopK",
                          [ti, ("const", np.array([2], np.int64))], outputs=2,
                          attrs={"axis": axis, "largest": largest}, opset=11))
CASES.append(case("TopK_opset9_attr_k", "TopK", [xt], outputs=2, attrs={"k": 2, "axis": 1}, opset=9))
CASES.append(case("TopK_opset7_default_axis", "TopK", [xt], outputs=2, attrs={"k": 4}, opset=7))
CASES.append(case("TopK_opset10_input", "TopK", [xt, ("const", np.array([4], np.int64))], outputs=2, opset=10))
CASES.append(case("TopK_k_runtime", "TopK", [xt, np.array([2], np.int64)], outputs=2, attrs={"axis": 1},
                  opset=11))
CASES.append(case("TopK_k_all", "TopK", [xt, ("const", np.array([10], np.int64))], outputs=2,
                  attrs={"axis": 1}, opset=11))
CASES.append(case("TopK_k0", "TopK", [xt, ("const", np.array([0], np.int64))], outputs=2,
                  attrs={"axis": 1}, opset=11))
CASES.append(case("TopK_long", "TopK", [rand(8, 500, seed=23), ("const", np.array([7], np.int64))], outputs=2,
                  opset=11))
# lines of 256+ take a block each with the line in shared memory on CUDA: a detector's per-class scores (k 300
# of 3234), ties, a middle axis (inner > 1), int64 and float16 keys, the smallest k
CASES.append(case("TopK_line_detector", "TopK", [rand(1, 3234, seed=25), ("const", np.array([300], np.int64))],
                  outputs=2, opset=11))
CASES.append(case("TopK_line_ties_inner", "TopK",
                  [rand(2, 700, 3, dtype=np.int64, low=0, high=9, seed=26), ("const", np.array([40], np.int64))],
                  outputs=2, attrs={"axis": 1, "largest": 0}, opset=11))
CASES.append(case("TopK_line_float16_all", "TopK",
                  [rand(3, 1500, dtype=np.float16, seed=27), ("const", np.array([1500], np.int64))], outputs=2,
                  opset=11))
for dt in [np.float16, np.float64, np.int32, np.int64]:
    CASES.append(case(f"TopK_{np.dtype(dt).name}", "TopK",
                      [rand(4, 9, dtype=dt, low=-50, high=50, seed=24), ("const", np.array([3], np.int64))],
                      outputs=2, opset=11))
# the sort path (integer keys, quickselect + introsort): k close to a long line's length (a detector keeps most of
# its scores), many ties, -0 beside +0 (equal: the lower index first), k of the whole line, a middle axis
tied = np.round(rand(2, 5000, seed=28) * 8).astype(np.float32) / 8
tied[0, 10:20] = 0.0
tied[0, 15:18] = -0.0
for largest in [1, 0]:
    CASES.append(case(f"TopK_sort_ties_l{largest}", "TopK", [tied, ("const", np.array([4000], np.int64))],
                      outputs=2, attrs={"largest": largest}, opset=11))
CASES.append(case("TopK_sort_all_inner", "TopK",
                  [rand(3, 2000, 2, dtype=np.int32, low=-30, high=30, seed=29), ("const", np.array([2000], np.int64))],
                  outputs=2, attrs={"axis": 1}, opset=11))
CASES.append(case("TopK_sort_sorted_input", "TopK",
                  [np.arange(3000, dtype=np.float32).reshape(1, 3000), ("const", np.array([2999], np.int64))],
                  outputs=2, attrs={"largest": 0}, opset=11))

# lines too long for shared memory (a detector's TopK over every anchor of a level): radix select on CUDA, for k
# up to 2048: many ties at the k-th value, -0 beside +0, the smallest k, a middle axis, 64-bit keys, k of 1
big = rand(1, 70000, seed=47)
CASES.append(case("TopK_radix_anchors", "TopK", [big, ("const", np.array([1000], np.int64))], outputs=2, opset=11))
CASES.append(case("TopK_radix_k1", "TopK", [rand(2, 100000, seed=48), ("const", np.array([1], np.int64))],
                  outputs=2, opset=11))
rz = np.round(rand(1, 20000, seed=49) * 4).astype(np.float32) / 4
rz[0, ::7] = -0.0
for largest in [1, 0]:
    CASES.append(case(f"TopK_radix_ties_l{largest}", "TopK", [rz, ("const", np.array([1500], np.int64))],
                      outputs=2, attrs={"largest": largest}, opset=11))
CASES.append(case("TopK_radix_int32_ties", "TopK",
                  [rand(1, 30000, dtype=np.int32, low=-25, high=25, seed=50), ("const", np.array([700], np.int64))],
                  outputs=2, attrs={"largest": 0}, opset=11))
CASES.append(case("TopK_radix_float16_inner", "TopK",
                  [rand(2, 30000, 3, dtype=np.float16, seed=51), ("const", np.array([2048], np.int64))], outputs=2,
                  attrs={"axis": 1}, opset=11))
CASES.append(case("TopK_radix_float64", "TopK", [rand(3, 9000, dtype=np.float64, seed=52),
                                                 ("const", np.array([50], np.int64))], outputs=2, opset=11))
CASES.append(case("TopK_radix_int64_smallest", "TopK",
                  [rand(1, 10000, dtype=np.int64, low=-1000, high=1000, seed=53), ("const", np.array([300], np.int64))],
                  outputs=2, attrs={"largest": 0}, opset=11))

# ---- CumSum ----
xc = rand(3, 4, 5, seed=31)
for axis in [0, 1, 2, -1]:
    for excl in [0, 1]:
        for rev in [0, 1]:
            CASES.append(case(f"CumSum_ax{axis}_e{excl}_r{rev}".replace("-", "m"), "CumSum",
                              [xc, ("const", np.array(axis, np.int64))],
                              attrs={"exclusive": excl, "reverse": rev}, opset=14))
CASES.append(case("CumSum_axis_int32_1d", "CumSum", [xc, ("const", np.array([1], np.int32))], opset=11))
CASES.append(case("CumSum_axis_runtime", "CumSum", [xc, np.array(-2, np.int64)], opset=14))
for dt in [np.float64, np.int32, np.int64]:
    CASES.append(case(f"CumSum_{np.dtype(dt).name}", "CumSum",
                      [rand(4, 6, dtype=dt, low=-9, high=9, seed=32), ("const", np.array(1, np.int64))],
                      attrs={"exclusive": 1}, opset=14))
CASES.append(case("CumSum_wide", "CumSum", [rand(3, 5, 600, seed=33), ("const", np.array(1, np.int64))],
                  opset=14, rtol=1e-4, atol=1e-4))

# ---- CumProd (opset 26): values near 1 keep products in range ----
xp = rand(3, 4, 5, seed=41, low=0.5, high=1.5)
for axis in [0, 1, 2, -1]:
    for excl in [0, 1]:
        for rev in [0, 1]:
            CASES.append(case(f"CumProd_ax{axis}_e{excl}_r{rev}".replace("-", "m"), "CumProd",
                              [xp, ("const", np.array(axis, np.int64))],
                              attrs={"exclusive": excl, "reverse": rev}, opset=26))
CASES.append(case("CumProd_axis_runtime", "CumProd", [xp, np.array(-2, np.int32)], opset=26))
for dt in [np.float64, np.int32, np.int64]:
    CASES.append(case(f"CumProd_{np.dtype(dt).name}", "CumProd",
                      [rand(4, 6, dtype=dt, low=-3, high=3, seed=42), ("const", np.array(1, np.int64))],
                      attrs={"reverse": 1}, opset=26, rtol=1e-9, atol=0))
CASES.append(case("CumProd_wide", "CumProd", [rand(3, 5, 600, seed=43, low=0.8, high=1.2),
                                              ("const", np.array(1, np.int64))], opset=26))

# ---- ReduceMax / ReduceMin on bool (opset 20: any / all) ----
xb = rand(3, 4, 5, dtype=np.bool_, seed=44)
for op in ["ReduceMax", "ReduceMin"]:
    CASES.append(case(f"{op}_bool_axis1", op, [xb, ("const", np.array([1], np.int64))], opset=20))
    CASES.append(case(f"{op}_bool_all", op, [xb], attrs={"keepdims": 0}, opset=20))
    CASES.append(case(f"{op}_bool_mid", op, [rand(2, 3, 300, dtype=np.bool_, seed=45),
                                             ("const", np.array([0, 2], np.int64))], opset=20))

# ---- TopK on more integer types (onnxruntime has no uint32/uint64 TopK; test_top_k_uint64 covers those) ----
for dt in [np.int16]:
    CASES.append(case(f"TopK_{np.dtype(dt).name}", "TopK",
                      [rand(4, 9, dtype=dt, low=0, high=60, seed=46), ("const", np.array([3], np.int64))],
                      outputs=2, attrs={"largest": 0}, opset=11))
