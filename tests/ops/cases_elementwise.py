"""Elementwise op cases: unary math, binary broadcasting, variadic, comparisons, logic, Clip, PRelu, Pow,
Where, Cast/CastLike, compared with onnxruntime."""
import numpy as np
import onnx
from onnx import TensorProto

import optest
from optest import rand

CASES = []
F32, F64, F16 = np.float32, np.float64, np.float16


def add(name, op, inputs, **kw):
    c = optest.node_case(name, op, inputs, **kw)
    CASES.append(c)
    return c


# ---- unary float ops: (op, low, high) ----
UNARY = [("Relu", -2, 2), ("Sigmoid", -8, 8), ("Tanh", -3, 3), ("HardSwish", -5, 5), ("Erf", -2, 2),
         ("Exp", -3, 3), ("Log", 0.05, 5), ("Sqrt", 0, 9), ("Neg", -3, 3), ("Abs", -3, 3),
         ("Reciprocal", 0.2, 4), ("Floor", -5, 5), ("Ceil", -5, 5), ("Sign", -2, 2), ("Sin", -4, 4),
         ("Cos", -4, 4), ("Tan", -1.2, 1.2), ("Asin", -0.99, 0.99), ("Acos", -0.99, 0.99), ("Atan", -5, 5),
         ("Sinh", -3, 3), ("Cosh", -3, 3), ("Asinh", -5, 5), ("Acosh", 1.01, 6), ("Atanh", -0.95, 0.95),
         ("Elu", -3, 3), ("Selu", -3, 3), ("Celu", -3, 3), ("Softplus", -20, 20), ("Softsign", -4, 4),
         ("ThresholdedRelu", -3, 3), ("LeakyRelu", -3, 3), ("HardSigmoid", -5, 5), ("Shrink", -2, 2)]
for op, lo, hi in UNARY:
    add(f"{op}_f32", op, [rand(2, 3, 7, low=lo, high=hi, seed=1)], opset=18 if op != "HardSwish" else 14)
add("Mish_f32", "Mish", [rand(3, 17, low=-6, high=6, seed=2)], opset=18)
for op, lo, hi in [("Relu", -2, 2), ("Sigmoid", -6, 6), ("Exp", -2, 2), ("Abs", -2, 2), ("Neg", -2, 2),
                   ("Sqrt", 0, 4), ("Tanh", -2, 2), ("Floor", -4, 4)]:
    add(f"{op}_f16", op, [rand(4, 9, low=lo, high=hi, seed=3).astype(F16)], opset=18, rtol=2e-3, atol=2e-3)
    add(f"{op}_f64", op, [rand(4, 9, low=lo, high=hi, seed=4).astype(F64)], opset=18, rtol=1e-10, atol=1e-12)
add("Round_half_even", "Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.7, -3.7], F32)], opset=11)
add("Sign_zero_nan", "Sign", [np.array([0.0, -0.0, np.nan, -4, 9], F32)], opset=13)
add("Relu_large_parallel", "Relu", [rand(70001, low=-1, high=1, seed=5)])
add("Sigmoid_large_parallel", "Sigmoid", [rand(3, 40000, low=-9, high=9, seed=6)])
add("Sigmoid_f16_large", "Sigmoid", [rand(40000, low=-6, high=6, seed=6).astype(F16)], rtol=2e-3, atol=2e-3)
add("Relu_opset6", "Relu", [rand(5, 5, seed=7)], opset=6)
add("Exp_scalar", "Exp", [np.array(0.7, F32)])
add("Neg_empty", "Neg", [np.zeros((0, 3), F32)])
# integer forms
for dt in (np.int8, np.int32, np.int64):
    x = rand(3, 10, dtype=dt, low=-100, high=100, seed=8)
    if dt != np.int64:  # onnxruntime has no int64 Relu kernel
        add(f"Relu_{dt.__name__}", "Relu", [x], opset=14)
    add(f"Neg_{dt.__name__}", "Neg", [x], opset=13)
    add(f"Abs_{dt.__name__}", "Abs", [x], opset=13)
    add(f"Sign_{dt.__name__}", "Sign", [x], opset=13)
add("Abs_uint8", "Abs", [rand(12, dtype=np.uint8, low=0, high=255, seed=9)], opset=13)
# attributes
add("LeakyRelu_alpha", "LeakyRelu", [rand(4, 8, low=-3, high=3, seed=10)], attrs={"alpha": 0.3})
add("Elu_alpha", "Elu", [rand(4, 8, low=-3, high=3, seed=10)], attrs={"alpha": 0.5})
add("Selu_attrs", "Selu", [rand(4, 8, low=-3, high=3, seed=10)], attrs={"alpha": 2.0, "gamma": 0.5})
add("Celu_alpha", "Celu", [rand(4, 8, low=-3, high=3, seed=10)], attrs={"alpha": 2.5})
add("HardSigmoid_attrs", "HardSigmoid", [rand(4, 8, low=-4, high=4, seed=10)], attrs={"alpha": 0.3, "beta": 0.4})
add("ThresholdedRelu_alpha", "ThresholdedRelu", [rand(4, 8, low=-3, high=3, seed=10)], attrs={"alpha": 0.5})
add("Shrink_attrs", "Shrink", [rand(4, 8, low=-3, high=3, seed=10)], attrs={"bias": 0.5, "lambd": 1.0})
add("Gelu_none", "Gelu", [rand(5, 11, low=-4, high=4, seed=11)], opset=20)
add("Gelu_tanh", "Gelu", [rand(5, 11, low=-4, high=4, seed=11)], opset=20, attrs={"approximate": "tanh"})
add("Gelu_f16", "Gelu", [rand(5, 11, low=-4, high=4, seed=11).astype(F16)], opset=20, rtol=3e-3, atol=3e-3)
add("Softplus_wide", "Softplus", [rand(4, 6, low=-30, high=30, seed=12)])

# ---- IsNaN / IsInf / Not ----
special = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.5], F32)
add("IsNaN_f32", "IsNaN", [special], opset=13)
add("IsNaN_f16", "IsNaN", [special.astype(F16)], opset=13)
add("IsInf_default", "IsInf", [special])
add("IsInf_neg_only", "IsInf", [special], attrs={"detect_positive": 0})
add("IsInf_pos_only", "IsInf", [special.astype(F64)], attrs={"detect_negative": 0})
add("Not_bool", "Not", [rand(3, 5, dtype=np.bool_, seed=13)])

# ---- Clip ----
cx = rand(4, 9, low=-5, high=5, seed=14)
add("Clip_opset6_attrs", "Clip", [cx], opset=6, attrs={"min": -1.5, "max": 2.0})
add("Clip_opset6_min_only", "Clip", [cx], opset=6, attrs={"min": 0.0})
add("Clip_opset11_const", "Clip", [cx, ("const", np.array(-1.0, F32)), ("const", np.array(1.0, F32))], opset=11)
add("Clip_opset13_runtime_bounds", "Clip", [cx, np.array(-2.0, F32), np.array(0.5, F32)], opset=13)
add("Clip_max_only", "Clip", [cx, None, ("const", np.array(3.0, F32))], opset=13)
add("Clip_min_only_runtime", "Clip", [cx, np.array(1.0, F32)], opset=13)
add("Clip_no_bounds", "Clip", [cx], opset=13)
add("Clip_int32", "Clip", [rand(20, dtype=np.int32, low=-50, high=50, seed=15), ("const", np.array(-10, np.int32)),
                           ("const", np.array(25, np.int32))], opset=13)
add("Clip_int64_big", "Clip", [np.array([2**40 + 1, -2**40 - 3, 5], np.int64), ("const", np.array(-2**40 - 1, np.int64)),
                               np.array(2**40, np.int64)], opset=13)
add("Clip_uint8", "Clip", [rand(20, dtype=np.uint8, low=0, high=255, seed=16), ("const", np.array(30, np.uint8)),
                           ("const", np.array(200, np.uint8))], opset=13)
add("Clip_int8", "Clip", [rand(20, dtype=np.int8, low=-120, high=120, seed=16), None, np.array(7, np.int8)], opset=13)
add("Clip_f16", "Clip", [cx.astype(F16), ("const", np.array(-1, F16)), ("const", np.array(2, F16))], opset=13)
add("Clip_f64_large", "Clip", [rand(50000, low=-3, high=3, seed=17).astype(F64), ("const", np.array(-1, F64)),
                               ("const", np.array(1, F64))], opset=13)
add("Clip_nan", "Clip", [np.array([np.nan, 5, -5, 0.5], F32), ("const", np.array(0, F32)),
                         ("const", np.array(1, F32))], opset=13)

# ---- binary broadcasting patterns ----
SHAPES = [("same", (3, 4, 5), (3, 4, 5)), ("scalar_b", (3, 4, 5), ()), ("scalar_a", (), (2, 7)),
          ("row", (6, 8), (8,)), ("column", (6, 8), (6, 1)), ("middle", (2, 3, 4), (1, 3, 1)),
          ("rank_diff", (2, 1, 4, 5), (3, 1, 5)), ("outer", (5, 1), (1, 6)), ("one_elem", (4, 3), (1, 1)),
          ("both_bcast_4d", (2, 1, 3, 1), (1, 4, 1, 5)), ("size1_dims", (1, 5, 1), (5, 1))]
for tag, sa, sb in SHAPES:
    for op in ("Add", "Sub", "Mul", "Div"):
        b = rand(*sb, low=0.5, high=2, seed=18) if op == "Div" else rand(*sb, seed=19)
        add(f"{op}_{tag}", op, [rand(*sa, seed=20), b])
for tag, sa, sb in SHAPES[:7]:
    add(f"Greater_{tag}", "Greater", [rand(*sa, seed=21), rand(*sb, seed=22)])
    add(f"Max_{tag}", "Max", [rand(*sa, seed=21), rand(*sb, seed=22)])
add("Add_large_parallel", "Add", [rand(64, 1024, seed=23), rand(1024, seed=24)])
add("Mul_large_column", "Mul", [rand(300, 200, seed=25), rand(300, 1, seed=26)])
add("Add_large_f16", "Add", [rand(200, 300, seed=27).astype(F16), rand(300, seed=28).astype(F16)], rtol=2e-3, atol=2e-3)
add("Add_opset7", "Add", [rand(3, 4, seed=29), rand(4, seed=30)], opset=7)
add("Add_opset13", "Add", [rand(3, 4, seed=29), rand(3, 1, seed=30)], opset=13)
add("Sub_empty", "Sub", [np.zeros((0, 4), F32), rand(4, seed=31)])

# dtypes
for dt in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint16, np.uint32, np.uint64):
    lo = 0 if np.issubdtype(dt, np.unsignedinteger) else -60
    a, b = rand(3, 6, dtype=dt, low=lo, high=60, seed=32), rand(6, dtype=dt, low=lo, high=60, seed=33)
    nm = dt.__name__
    add(f"Add_{nm}", "Add", [a, b], opset=14)
    add(f"Sub_{nm}", "Sub", [a, b], opset=14)
    add(f"Mul_{nm}", "Mul", [a, b], opset=14)
    nz = np.where(b == 0, 7, b).astype(dt)
    add(f"Div_{nm}", "Div", [a, nz], opset=14)
    add(f"Less_{nm}", "Less", [a, b], opset=13)
    add(f"Equal_{nm}", "Equal", [a, b], opset=13)
add("Add_int32_wrap", "Add", [np.array([2**31 - 1, -2**31], np.int32), np.array([1, -1], np.int32)])
add("Mul_int64_wrap", "Mul", [np.array([2**62, -3], np.int64), np.array([4, 2**62], np.int64)])
add("Div_int_trunc", "Div", [np.array([7, -7, 7, -7, 0, -2**31], np.int32), np.array([2, 2, -2, -2, 5, 1], np.int32)])
add("Div_int64_bcast", "Div", [rand(4, 5, dtype=np.int64, low=-1000, high=1000, seed=34), np.array([3], np.int64)])
for dt, tol in ((F64, 1e-12), (F16, 2e-3)):
    for op in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
        add(f"{op}_{dt.__name__}", op, [rand(3, 5, low=0.5, high=2, seed=35).astype(dt),
                                         rand(5, low=0.5, high=2, seed=36).astype(dt)], rtol=tol, atol=tol)
add("Div_f32_by_zero", "Div", [np.array([1, -1, 0], F32), np.array([0, 0, 0], F32)])

# Mod
mi, md = np.array([7, -7, 7, -7, 0, 5, -9], np.int32), np.array([2, 2, -2, -2, 3, -3, 4], np.int32)
add("Mod_int32", "Mod", [mi, md])
add("Mod_int32_fmod", "Mod", [mi, md], attrs={"fmod": 1})
add("Mod_int64_bcast", "Mod", [rand(4, 6, dtype=np.int64, low=-100, high=100, seed=37), np.array([7, -5, 3, -2, 9, 4], np.int64)])
add("Mod_int8", "Mod", [mi.astype(np.int8), md.astype(np.int8)])
add("Mod_uint8", "Mod", [np.array([7, 250, 3], np.uint8), np.array([3, 7, 5], np.uint8)])
add("Mod_f32_fmod", "Mod", [rand(4, 6, low=-10, high=10, seed=38), rand(6, low=1, high=3, seed=39)], attrs={"fmod": 1})
add("Mod_f64_fmod", "Mod", [rand(4, 6, low=-10, high=10, seed=38).astype(F64), np.array(-2.5, F64)], attrs={"fmod": 1},
    rtol=1e-12, atol=1e-12)

# Pow
add("Pow_f32", "Pow", [rand(3, 4, low=0.1, high=3, seed=40), rand(3, 4, low=-2, high=2, seed=41)])
add("Pow_f32_square", "Pow", [rand(3, 4, low=-3, high=3, seed=40), np.array(2.0, F32)])
add("Pow_f32_int64_exp", "Pow", [rand(3, 4, low=-3, high=3, seed=40), np.array([0, 1, 2, 3], np.int64)], opset=15)
add("Pow_f32_int32_exp_bcast", "Pow", [rand(2, 3, 4, low=-2, high=2, seed=42), np.array([[1], [2], [3]], np.int32)], opset=15)
add("Pow_int32", "Pow", [np.array([2, 3, -2, 5, 7], np.int32), np.array([3, 2, 3, 0, 1], np.int32)], opset=15)
add("Pow_int64", "Pow", [np.array([2, 3, -2, 10], np.int64), np.array([10, 5, 7, 12], np.int64)], opset=15)
add("Pow_f64", "Pow", [rand(3, 4, low=0.1, high=3, seed=40).astype(F64), rand(4, low=-2, high=2, seed=41).astype(F64)],
    rtol=1e-12, atol=1e-12)
add("Pow_f16", "Pow", [rand(3, 4, low=0.1, high=2, seed=40).astype(F16), np.array(1.5, F16)], rtol=3e-3, atol=3e-3)

# Max / Min / Sum / Mean (variadic)
va, vb, vc = rand(2, 3, 4, seed=43), rand(3, 1, seed=44), rand(4, seed=45)
for op in ("Max", "Min", "Sum", "Mean"):
    add(f"{op}_one", op, [va])
    add(f"{op}_two", op, [va, vb])
    add(f"{op}_three_bcast", op, [vb, vc, va])
    if op != "Mean":  # onnxruntime has no double Mean kernel
        add(f"{op}_three_f64", op, [va.astype(F64), vb.astype(F64), vc.astype(F64)], rtol=1e-12, atol=1e-12)
add("Max_nan", "Max", [np.array([np.nan, 1, 2], F32), np.array([1, np.nan, 1], F32)], opset=13)
add("Min_int32_three", "Min", [rand(3, 4, dtype=np.int32, low=-9, high=9, seed=46), np.array([0], np.int32),
                               rand(4, dtype=np.int32, low=-9, high=9, seed=47)], opset=13)
add("Max_uint8", "Max", [rand(6, dtype=np.uint8, low=0, high=255, seed=48), rand(6, dtype=np.uint8, low=0, high=255, seed=49)], opset=13)
add("Max_opset8", "Max", [va, vb], opset=8)
add("Sum_f16", "Sum", [va.astype(F16), vb.astype(F16), vc.astype(F16)], rtol=3e-3, atol=3e-3)
add("Mean_f16", "Mean", [va.astype(F16), vc.astype(F16)], rtol=3e-3, atol=3e-3)
add("Sum_large", "Sum", [rand(100, 500, seed=50), rand(500, seed=51), rand(100, 1, seed=52)])

# comparisons
ca = rand(4, 5, dtype=np.int64, low=-3, high=3, seed=53)
cb = rand(5, dtype=np.int64, low=-3, high=3, seed=54)
for op in ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"):
    add(f"{op}_cmp_int64", op, [ca, cb], opset=16)
    add(f"{op}_cmp_f32", op, [ca.astype(F32), cb.astype(F32)], opset=16)
    add(f"{op}_cmp_f16", op, [ca.astype(F16), np.array(0.0, F16)], opset=16)
add("Equal_bool", "Equal", [rand(3, 4, dtype=np.bool_, seed=55), rand(4, dtype=np.bool_, seed=56)], opset=13)
add("Less_nan", "Less", [np.array([np.nan, 1, 2], F32), np.array([1, np.nan, 3], F32)])

# logic and bits
la, lb = rand(3, 1, 4, dtype=np.bool_, seed=57), rand(5, 1, dtype=np.bool_, seed=58)
for op in ("And", "Or", "Xor"):
    add(f"{op}_bcast", op, [la, lb])
for dt in (np.uint8, np.uint32, np.uint64):  # onnxruntime has no uint16 BitShift
    bits = 8 * np.dtype(dt).itemsize
    x = rand(2, 6, dtype=dt, low=0, high=200, seed=59)
    s = np.array([0, 1, 3, bits - 1, bits, bits + 3], dt)
    add(f"BitShift_left_{dt.__name__}", "BitShift", [x, s], attrs={"direction": "LEFT"})
    add(f"BitShift_right_{dt.__name__}", "BitShift", [x, s], attrs={"direction": "RIGHT"})
for dt in (np.int8, np.int32, np.int64, np.uint8, np.uint64):
    x = rand(3, 5, dtype=dt, low=0 if dt in (np.uint8, np.uint64) else -100, high=100, seed=60)
    y = rand(5, dtype=dt, low=0 if dt in (np.uint8, np.uint64) else -100, high=100, seed=61)
    for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
        add(f"{op}_{dt.__name__}", op, [x, y], opset=18)
    add(f"BitwiseNot_{dt.__name__}", "BitwiseNot", [x], opset=18)

# PRelu
add("PRelu_channel", "PRelu", [rand(2, 3, 4, 5, low=-2, high=2, seed=62), rand(3, 1, 1, seed=63)])
add("PRelu_scalar_slope", "PRelu", [rand(4, 7, low=-2, high=2, seed=64), np.array([0.2], F32)])
add("PRelu_same", "PRelu", [rand(4, 7, low=-2, high=2, seed=64), rand(4, 7, seed=65)], opset=9)
add("PRelu_last_dim", "PRelu", [rand(3, 6, low=-2, high=2, seed=66), ("const", rand(6, seed=67))])
add("PRelu_f64", "PRelu", [rand(3, 6, low=-2, high=2, seed=66).astype(F64), rand(6, seed=67).astype(F64)], rtol=1e-12, atol=1e-12)
add("PRelu_int32", "PRelu", [rand(3, 6, dtype=np.int32, low=-9, high=9, seed=68), rand(6, dtype=np.int32, low=-3, high=3, seed=69)], opset=16)

# Where
wc = rand(3, 1, 5, dtype=np.bool_, seed=70)
add("Where_f32_bcast", "Where", [wc, rand(4, 5, seed=71), rand(3, 4, 1, seed=72)])
add("Where_int64_scalar", "Where", [wc, np.array(7, np.int64), rand(5, dtype=np.int64, low=-9, high=9, seed=73)])
add("Where_f16", "Where", [wc, rand(5, seed=75).astype(F16), np.array(0, F16)])
add("Where_uint8", "Where", [wc, rand(1, 5, dtype=np.uint8, low=0, high=255, seed=76), np.array(3, np.uint8)])
add("Where_large", "Where", [rand(300, 1, dtype=np.bool_, seed=77), rand(300, 200, seed=78), rand(200, seed=79)])
add("Where_same", "Where", [rand(6, 7, dtype=np.bool_, seed=80), rand(6, 7, seed=81), rand(6, 7, seed=82)], opset=16)

# Cast
cast_src = {
    "f32": np.array([0.0, -1.5, 2.7, 100.25, -100.75, 3.0, 1e-3, 65.5], F32),
    "f64": np.array([0.0, -1.5, 2.7, 100.25, -100.75, 3.0, 1e-3, 65.5], F64),
    "f16": np.array([0.0, -1.5, 2.7, 100.25, -100.75, 3.0, 1e-3, 65.5], F16),
    "i8": np.array([0, -1, 2, 100, -100, 3, 127, -128], np.int8),
    "u8": np.array([0, 1, 2, 100, 200, 3, 255, 128], np.uint8),
    "i16": np.array([0, -1, 2, 1000, -30000, 3, 300, -129], np.int16),
    "u16": np.array([0, 1, 2, 1000, 60000, 3, 300, 129], np.uint16),
    "i32": np.array([0, -1, 2, 100000, -70000, 3, 300, 2**31 - 1], np.int32),
    "u32": np.array([0, 1, 2, 100000, 4000000000, 3, 300, 129], np.uint32),
    "i64": np.array([0, -1, 2, 2**40 + 1, -2**33, 3, 300, -129], np.int64),
    "u64": np.array([0, 1, 2, 2**40 + 1, 2**63 + 5, 3, 300, 129], np.uint64),
    "bool": np.array([0, 1, 1, 0, 1, 0, 0, 1], np.bool_),
}
TO = {"f32": TensorProto.FLOAT, "f64": TensorProto.DOUBLE, "f16": TensorProto.FLOAT16, "i8": TensorProto.INT8,
      "u8": TensorProto.UINT8, "i16": TensorProto.INT16, "u16": TensorProto.UINT16, "i32": TensorProto.INT32,
      "u32": TensorProto.UINT32, "i64": TensorProto.INT64, "u64": TensorProto.UINT64, "bool": TensorProto.BOOL}
FLOATS = ("f32", "f64", "f16")
INT_RANGE = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767), "u16": (0, 65535), "i32": (-2**31, 2**31 - 1),
             "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1)}
for s, arr in cast_src.items():
    for d, to in TO.items():
        x = arr
        if s in FLOATS and d in INT_RANGE:  # float -> int out of range is undefined: keep values in range
            lo, hi = INT_RANGE[d]
            wide = arr.astype(F64)
            x = np.where((wide >= lo) & (wide <= hi), arr, arr.dtype.type(1))
        add(f"Cast_{s}_to_{d}", "Cast", [x], attrs={"to": to}, opset=13, rtol=1e-3, atol=1e-3)
add("Cast_opset6", "Cast", [cast_src["f32"]], attrs={"to": TensorProto.INT32}, opset=6)
add("Cast_opset19_saturate", "Cast", [cast_src["f32"]], attrs={"to": TensorProto.FLOAT16, "saturate": 1}, opset=19)
add("Cast_opset21", "Cast", [rand(3, 4, seed=83)], attrs={"to": TensorProto.DOUBLE}, opset=21)
add("Cast_nan_inf_to_f16_bool", "Cast", [np.array([np.nan, np.inf, -np.inf, 1e6, 0], F32)],
    attrs={"to": TensorProto.FLOAT16}, opset=13)
add("Cast_nan_to_bool", "Cast", [np.array([np.nan, 0, -0.0, 0.1], F32)], attrs={"to": TensorProto.BOOL}, opset=13)
add("Cast_nan_to_int32", "Cast", [np.array([np.nan, np.inf, -3e9, 2.9], F32)], attrs={"to": TensorProto.INT32}, opset=13)
add("Cast_large", "Cast", [rand(50000, low=-100, high=100, seed=84)], attrs={"to": TensorProto.INT64}, opset=13)
# float32 <-> float16 eight values a thread on CUDA, with a tail of 5 (values past float16's range become inf)
_big = rand(8 * 1001 + 5, low=-70000, high=70000, seed=85)
add("Cast_f32_f16_vector_tail", "Cast", [_big], attrs={"to": TensorProto.FLOAT16}, opset=13, rtol=1e-3, atol=1e-3)
add("Cast_f16_f32_vector_tail", "Cast", [rand(8 * 1001 + 5, low=-60000, high=60000, seed=86).astype(np.float16)],
    attrs={"to": TensorProto.FLOAT}, opset=13, rtol=0, atol=0)
add("Cast_f16_round", "Cast", [np.array([1.0 + 2**-11, 1.0 + 3 * 2**-11, 65519.0, 65520.0, 6e-8, 3e-8], F32)],
    attrs={"to": TensorProto.FLOAT16}, opset=13)
add("CastLike_f32_to_i64", "CastLike", [cast_src["f32"], np.array([0], np.int64)], opset=15)
add("CastLike_i32_to_f16", "CastLike", [cast_src["i32"][:7], np.zeros((2, 2), F16)], opset=19)

# exp-based kernels over their whole range: overflow to inf, underflow to 0, NaN passes through
wide = np.concatenate([np.linspace(-110, 95, 4001, dtype=F32), np.array([np.nan, np.inf, -np.inf, 0, -0.0], F32)])
add("Exp_wide_range", "Exp", [wide], rtol=2e-6, atol=1e-30)
add("Sigmoid_wide_range", "Sigmoid", [wide], rtol=2e-6, atol=1e-6)  # onnxruntime flushes tails to 0
add("Exp_f16_range", "Exp", [np.linspace(-17, 11, 999).astype(F16)], rtol=1e-3, atol=1e-7)

# newest opsets
add("Elu_opset22", "Elu", [rand(3, 5, low=-2, high=2, seed=85)], opset=22, attrs={"alpha": 0.7})
add("Sin_opset22", "Sin", [rand(3, 5, low=-3, high=3, seed=86)], opset=22)
add("HardSigmoid_opset22_f16", "HardSigmoid", [rand(3, 5, low=-4, high=4, seed=87).astype(F16)], opset=22,
    rtol=2e-3, atol=2e-3)
add("Add_opset22_int8", "Add", [rand(3, 5, dtype=np.int8, low=-100, high=100, seed=88), np.array(100, np.int8)], opset=22)

# float16 eight lanes at a time on CUDA: a bias over the last dim, squeeze-excite in NHWC, same shapes, an operand
# broadcast over leading dims, odd lengths (the tail of a unary op), and a last dim not a multiple of 8
h16 = dict(rtol=3e-3, atol=3e-3)
add("Add_f16_bias", "Add", [rand(4, 24, 40, seed=89).astype(F16), rand(40, seed=90).astype(F16)], **h16)
add("Mul_f16_se_nhwc", "Mul", [rand(2, 5, 5, 16, seed=91).astype(F16), rand(2, 1, 1, 16, seed=92).astype(F16)], **h16)
add("Sub_f16_same", "Sub", [rand(3, 64, seed=93).astype(F16), rand(3, 64, seed=94).astype(F16)], **h16)
add("Div_f16_lead_bcast", "Div", [rand(1, 1, 8, seed=95).astype(F16), rand(7, 6, 8, low=0.5, high=2, seed=96).astype(F16)],
    **h16)
add("Add_f16_odd_inner", "Add", [rand(5, 12, seed=97).astype(F16), rand(12, seed=98).astype(F16)], **h16)
add("Gelu_f16_tail", "Gelu", [rand(5, 37, low=-4, high=4, seed=99).astype(F16)], opset=20, **h16)
add("Relu_f16_long", "Relu", [rand(1000, low=-2, high=2, seed=100).astype(F16)], **h16)
add("Sigmoid_f16_rows", "Sigmoid", [rand(16, 64, low=-8, high=8, seed=101).astype(F16)], **h16)
