"""Op cases: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, MatMulInteger,
QLinearConv, ConvInteger, and float8 / int4 / int2 / float8e8m0 Cast (compared with onnxruntime).

float8, int4 and int2 tensors cannot travel in .npy files, so those cases are two-node models that go there and
back (float -> float8/int4 -> float) and compare the float result, which pins every rounding decision."""
import numpy as np
import onnx
from onnx import helper, TensorProto

import optest
from optest import rand

F32, F16 = np.float32, np.float16
CASES = []


def add(name, op, inputs, **kw):
    CASES.append(optest.node_case(name, op, inputs, **kw))


def chain(name, x, nodes, opset, extra_inits=(), rtol=0, atol=0):
    """A model of several nodes: graph input 'x' (float array), output 'y' (the last node's output)."""
    inits = [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in extra_inits]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", optest.np_to_elem(x.dtype), list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="netrun-tests")
    m.ir_version = 9
    optest.fix_output_types(m)
    CASES.append(optest.Case(name, m, {"x": x}, rtol=rtol, atol=atol))


def const(v):
    return ("const", np.asarray(v))


# ---- QuantizeLinear ----
xq = rand(2, 3, 4, 5, low=-300, high=300, seed=11)
ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.0, 1000.0, -1000.0, 0.0, 127.5, -128.5], F32)
add("Q_u8_tensor", "QuantizeLinear", [xq, const(F32(2.0)), const(np.uint8(128))], opset=13)
add("Q_i8_tensor", "QuantizeLinear", [xq, const(F32(1.7)), const(np.int8(-3))], opset=13)
add("Q_ties_i8", "QuantizeLinear", [ties, const(F32(1.0)), const(np.int8(0))], opset=13)
add("Q_ties_u8", "QuantizeLinear", [ties, const(F32(1.0)), const(np.uint8(10))], opset=13)
add("Q_no_zp", "QuantizeLinear", [xq, const(F32(0.5))], opset=13)
add("Q_opset10", "QuantizeLinear", [xq, const(F32(3.0)), const(np.uint8(7))], opset=10)
add("Q_runtime_scale", "QuantizeLinear", [xq, np.array(2.5, F32), np.array(100, np.uint8)], opset=13)
add("Q_axis1", "QuantizeLinear", [xq, const(np.array([1.0, 2.5, 0.3], F32)), const(np.array([0, 128, 255], np.uint8))],
    opset=13)
add("Q_axis0", "QuantizeLinear", [xq, const(np.array([0.9, 2.0], F32)), const(np.array([-5, 5], np.int8))],
    attrs={"axis": 0}, opset=13)
add("Q_axis_m1", "QuantizeLinear", [xq, const(np.array([1, 2, 3, 4, 5], F32)), const(np.array([0, 1, 2, 3, 4], np.int8))],
    attrs={"axis": -1}, opset=13)
add("Q_i16", "QuantizeLinear", [xq * 100, const(F32(0.25)), const(np.int16(-1000))], opset=21)
add("Q_u16", "QuantizeLinear", [xq * 100, const(F32(0.5)), const(np.uint16(30000))], opset=21)
add("Q_out_dtype_i8", "QuantizeLinear", [xq, const(F32(2.0))], attrs={"output_dtype": TensorProto.INT8}, opset=21)
add("Q_f16", "QuantizeLinear", [xq.astype(F16), const(F16(1.5)), const(np.int8(2))], opset=19)
xb = rand(3, 7, 4, low=-50, high=50, seed=12)
add("Q_blocked_ax1_b2", "QuantizeLinear",
    [xb, const(rand(3, 4, 4, low=0.5, high=3, seed=13)), const(rand(3, 4, 4, dtype=np.uint8, low=0, high=255, seed=14))],
    attrs={"axis": 1, "block_size": 2}, opset=21)
add("Q_blocked_ax2_b3", "QuantizeLinear",
    [xb, const(rand(3, 7, 2, low=0.5, high=3, seed=15)), const(rand(3, 7, 2, dtype=np.int8, low=-20, high=20, seed=16))],
    attrs={"axis": 2, "block_size": 3}, opset=21)
add("Q_large", "QuantizeLinear", [rand(70000, low=-200, high=200, seed=17), const(F32(0.8)), const(np.int8(1))], opset=13)

# ---- DequantizeLinear ----
add("DQ_u8", "DequantizeLinear", [rand(3, 4, 5, dtype=np.uint8, low=0, high=255, seed=21), const(F32(0.1)),
                                  const(np.uint8(128))], opset=13)
add("DQ_i8", "DequantizeLinear", [rand(3, 4, 5, dtype=np.int8, low=-128, high=127, seed=22), const(F32(0.37)),
                                  const(np.int8(-7))], opset=13)
add("DQ_i32", "DequantizeLinear", [rand(3, 4, dtype=np.int32, low=-100000, high=100000, seed=23), const(F32(0.01))],
    opset=13)
add("DQ_no_zp", "DequantizeLinear", [rand(3, 4, dtype=np.uint8, low=0, high=255, seed=24), const(F32(2.0))], opset=13)
add("DQ_axis1", "DequantizeLinear", [rand(2, 3, 4, dtype=np.uint8, low=0, high=255, seed=25),
                                     const(np.array([0.5, 1.0, 2.0], F32)), const(np.array([1, 128, 250], np.uint8))],
    opset=13)
add("DQ_axis_m1", "DequantizeLinear", [rand(2, 3, 4, dtype=np.int8, low=-128, high=127, seed=26),
                                       const(np.array([0.5, 1.0, 2.0, 0.1], F32)), const(np.array([1, 2, -3, 0], np.int8))],
    attrs={"axis": -1}, opset=13)
add("DQ_i16", "DequantizeLinear", [rand(3, 4, dtype=np.int16, low=-30000, high=30000, seed=27), const(F32(0.5)),
                                   const(np.int16(-100))], opset=21)
add("DQ_u16", "DequantizeLinear", [rand(3, 4, dtype=np.uint16, low=0, high=65535, seed=28), const(F32(0.5)),
                                   const(np.uint16(32767))], opset=21)
add("DQ_f16", "DequantizeLinear", [rand(3, 4, dtype=np.uint8, low=0, high=255, seed=29), const(F16(0.25)),
                                   const(np.uint8(3))], opset=19, rtol=1e-3, atol=1e-3)
add("DQ_blocked", "DequantizeLinear", [rand(2, 5, 3, dtype=np.uint8, low=0, high=255, seed=30),
                                       const(rand(2, 3, 3, low=0.1, high=2, seed=31)),
                                       const(rand(2, 3, 3, dtype=np.uint8, low=0, high=255, seed=32))],
    attrs={"axis": 1, "block_size": 2}, opset=21)

# ---- float8 and int4 through QuantizeLinear / DequantizeLinear (there and back) ----
special = np.array([0.0, -0.0, 1.0, -1.0, 0.3, 1e-3, 1e-5, -1e-7, 300.0, 447.0, 449.0, 470.0, 1e5, -1e5,
                    57344.0, 61440.0, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -11, 0.1875, np.inf, -np.inf], F32)
wide = np.concatenate([special, rand(200, low=-600, high=600, seed=41), rand(100, low=-0.05, high=0.05, seed=42)])
# Without saturation, finite values beyond the largest float8 are NaN (Inf for E5M2) in the ONNX reference
# (ml_dtypes) and in netrun; onnxruntime 1.31 returns -448 for some negative ones and NaN for the E5M2 tie at
# 61440, so the sat0 cases stay inside the finite range (plus the infinities).
in_range = wide[(np.abs(wide) <= 200) | np.isinf(wide)]
f8types = {"e4m3fn": TensorProto.FLOAT8E4M3FN, "e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
           "e5m2": TensorProto.FLOAT8E5M2, "e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ}
for nm, t in f8types.items():
    zp = helper.make_tensor("zp", t, [], [0.0])
    for sat in (1, 0):
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], saturate=sat),
                 helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])]
        name = f"QDQ_{nm}_sat{sat}"
        chain(name, wide if sat else in_range, nodes, 19, [("s", F32(0.5))])
        CASES[-1].model.graph.initializer.append(zp)
        optest.fix_output_types(CASES[-1].model)
    # Cast there and back, with and without saturation
    for sat in (1, 0):
        chain(f"Cast_f32_{nm}_sat{sat}", np.concatenate([wide if sat else in_range, np.array([np.nan], F32)]),
              [helper.make_node("Cast", ["x"], ["q"], to=t, saturate=sat),
               helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 19)
    chain(f"Cast_f16_{nm}", in_range.astype(F16), [helper.make_node("Cast", ["x"], ["q"], to=t),
                                               helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT16)], 19)
    chain(f"CastLike_{nm}", wide, [helper.make_node("CastLike", ["x", "like"], ["q"]),
                                   helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 19)
    CASES[-1].model.graph.initializer.append(helper.make_tensor("like", t, [1], [0.0]))
    optest.fix_output_types(CASES[-1].model)

ints4 = np.array([-9.0, -8.0, -7.5, -0.5, 0.5, 1.5, 2.5, 7.0, 7.5, 8.0, 15.0, 16.0, 100.0, -100.0], F32)
for nm, t in {"int4": TensorProto.INT4, "uint4": TensorProto.UINT4}.items():
    zpv = 1 if nm == "int4" else 3
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])]
    chain(f"QDQ_{nm}", np.concatenate([ints4, rand(50, low=-20, high=20, seed=43)]), nodes, 21, [("s", F32(1.5))])
    CASES[-1].model.graph.initializer.append(helper.make_tensor("zp", t, [], [zpv]))
    optest.fix_output_types(CASES[-1].model)
    # integral values only: the reference (ml_dtypes) truncates fractions, onnxruntime rounds them
    chain(f"Cast_f32_{nm}", np.array([-9, -8, -7, -1, 0, 1, 7, 8, 9, 15, 16, 17, -16, -17], F32),
          [helper.make_node("Cast", ["x"], ["q"], to=t), helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 21)
    chain(f"Cast_i32_{nm}", np.array([-9, -8, -7, -1, 0, 1, 7, 8, 9, 15, 16, 17, 1000, -1000], np.int32),
          [helper.make_node("Cast", ["x"], ["q"], to=t), helper.make_node("Cast", ["q"], ["y"], to=TensorProto.INT32)], 21)

# int2 / uint2 (opset 25): QuantizeLinear/DequantizeLinear there and back, and Cast through them. Values stay
# inside the int32 range: beyond it the reference (numpy's int32 cast) and onnxruntime give the low end while
# netrun saturates, as it does for the wider types.
ints2 = np.array([-3.0, -2.0, -1.5, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 1e6,
                  -1e6, np.nan], F32)
for nm, t, zpv in (("int2", TensorProto.INT2, 0), ("int2_zp", TensorProto.INT2, -1), ("uint2", TensorProto.UINT2, 1)):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])]
    # NaN: the reference's int32 cast gives INT32_MIN, which a negative zero point wraps to the top of the range
    xs = ints2[~np.isnan(ints2)] if zpv < 0 else ints2
    chain(f"QDQ_{nm}", np.concatenate([xs, rand(40, low=-3, high=3, seed=44)]), nodes, 25, [("s", F32(0.5))])
    CASES[-1].model.graph.initializer.append(helper.make_tensor("zp", t, [], [zpv]))
    optest.fix_output_types(CASES[-1].model)
    if nm == "int2_zp":
        continue
    # integral values only (fractions: the reference truncates, onnxruntime may round); NaN and Inf give 0
    chain(f"Cast_f32_{nm}", np.array([-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 100, -100, np.nan, np.inf, -np.inf], F32),
          [helper.make_node("Cast", ["x"], ["q"], to=t), helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 25)
    chain(f"Cast_f16_{nm}", np.array([-5, -3, -2, -1, 0, 1, 2, 3, 6, 7, 1000], F16),
          [helper.make_node("Cast", ["x"], ["q"], to=t),
           helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT16)], 25)
    chain(f"Cast_i32_{nm}", np.array([-9, -5, -3, -2, -1, 0, 1, 2, 3, 4, 7, 1000, -1001, 2**31 - 1], np.int32),
          [helper.make_node("Cast", ["x"], ["q"], to=t), helper.make_node("Cast", ["q"], ["y"], to=TensorProto.INT32)], 25)
    chain(f"CastLike_{nm}", np.array([-3, -2, -1, 0, 1, 2, 3, 6], F32),
          [helper.make_node("CastLike", ["x", "like"], ["q"]),
           helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 25)
    CASES[-1].model.graph.initializer.append(helper.make_tensor("like", t, [1], [0]))
    optest.fix_output_types(CASES[-1].model)

# float8e8m0 (opset 25): Cast to it with every round_mode and saturate, and back. onnxruntime agrees with the
# ONNX reference (which netrun follows) on normal floats below 2^127, and with saturation also on 0 and the
# top of the range; it differs on float subnormals (the reference rounds the exponent field, onnxruntime the
# value) and, without saturation, on 0 and on values above 2^127 that round down (NaN in onnxruntime).
e8_norm = np.concatenate([np.array([2.0 ** -126, 2.0 ** -100, 0.124, 0.125, 0.1875, 0.25, 0.3, 0.375, 0.75, 0.76,
                                    1.0, 1.0000001, 1.1, 1.5, 1.75, 2.0, 3.0, 6.0, 1e10, 2.0 ** 100, 2.0 ** 126,
                                    1.5 * 2.0 ** 126, 2.0 ** 127], F32),
                          rand(60, low=0.001, high=1000, seed=45), np.array([np.nan], F32)])
e8_top = np.array([0.0, 1.2 * 2.0 ** 127, 1.5 * 2.0 ** 127, 3.4e38], F32)
for rm in ("up", "down", "nearest"):
    for sat in (1, 0):
        x8 = np.concatenate([e8_norm, e8_top]) if sat else e8_norm
        chain(f"Cast_f32_e8m0_{rm}_sat{sat}", x8,
              [helper.make_node("Cast", ["x"], ["q"], to=TensorProto.FLOAT8E8M0, round_mode=rm, saturate=sat),
               helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 25)
chain("Cast_f16_e8m0", np.array([2.0 ** -14, 0.001, 0.3, 1.0, 1.5, 3.0, 1000.0, 65504.0, 0.0], F16),
      [helper.make_node("Cast", ["x"], ["q"], to=TensorProto.FLOAT8E8M0),
       helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT16)], 25)
# CastLike with the default round_mode only: onnxruntime, the ONNX reference and CastLike's function body all
# ignore a round_mode given to CastLike; netrun applies it as the attribute's documentation says.
chain("CastLike_e8m0", e8_norm, [helper.make_node("CastLike", ["x", "like"], ["q"]),
                                 helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 25)
CASES[-1].model.graph.initializer.append(helper.make_tensor("like", TensorProto.FLOAT8E8M0, [1], [1.0]))
optest.fix_output_types(CASES[-1].model)
# Many elements (several blocks of a GPU grid): float32 -> float8e4m3fn -> float32 inside the finite range.
chain("Cast_f32_e4m3fn_large", rand(70000, low=-200, high=200, seed=46),
      [helper.make_node("Cast", ["x"], ["q"], to=TensorProto.FLOAT8E4M3FN),
       helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], 19)
# float4e2m1: onnxruntime 1.31 has no CPU kernel for it (Cast, QuantizeLinear); the ONNX node tests cover it.

# ---- DynamicQuantizeLinear ----
for nm, x in {"mixed": rand(4, 7, low=-3, high=5, seed=51), "positive": rand(20, low=0.5, high=9, seed=52),
              "negative": rand(3, 5, low=-9, high=-0.5, seed=53), "zeros": np.zeros((2, 3), F32),
              "large": rand(70000, low=-1000, high=10, seed=54)}.items():
    add(f"DynQ_{nm}", "DynamicQuantizeLinear", [x], outputs=3, opset=11, rtol=1e-6, atol=0)

# ---- QLinearMatMul ----
def qlmm(name, a, b, a_s, a_z, b_s, b_z, y_s, y_z, opset=10):
    add(name, "QLinearMatMul", [a, const(a_s), const(a_z), b, const(b_s), const(b_z), const(y_s), const(y_z)],
        opset=opset)


u8 = lambda *s, seed: rand(*s, dtype=np.uint8, low=0, high=255, seed=seed)  # noqa: E731
i8 = lambda *s, seed: rand(*s, dtype=np.int8, low=-128, high=127, seed=seed)  # noqa: E731
qlmm("QLMM_u8_2d", u8(5, 7, seed=61), u8(7, 3, seed=62), F32(0.02), np.uint8(120), F32(0.03), np.uint8(130),
     F32(0.5), np.uint8(128))
qlmm("QLMM_i8_2d", i8(5, 7, seed=63), i8(7, 3, seed=64), F32(0.02), np.int8(-3), F32(0.03), np.int8(0),
     F32(0.4), np.int8(1))
qlmm("QLMM_u8_i8", u8(4, 6, seed=65), i8(6, 9, seed=66), F32(0.01), np.uint8(100), F32(0.02), np.int8(0),
     F32(0.3), np.uint8(10))
qlmm("QLMM_3d_batch", u8(2, 4, 6, seed=67), u8(2, 6, 5, seed=68), F32(0.02), np.uint8(120), F32(0.03),
     np.uint8(130), F32(0.5), np.uint8(128))
qlmm("QLMM_3d_2d", i8(3, 4, 6, seed=69), i8(6, 5, seed=70), F32(0.02), np.int8(1), F32(0.03), np.int8(0),
     F32(0.2), np.int8(-2))
qlmm("QLMM_f16_scales", u8(5, 7, seed=71), u8(7, 3, seed=72), F16(0.02), np.uint8(120), F16(0.03), np.uint8(130),
     F16(0.5), np.uint8(128), opset=21)
qlmm("QLMM_big", u8(64, 200, seed=73), u8(200, 48, seed=74), F32(0.01), np.uint8(128), F32(0.01), np.uint8(128),
     F32(0.8), np.uint8(128))

# ---- MatMulInteger ----
add("MMI_u8", "MatMulInteger", [u8(4, 5, seed=81), u8(5, 3, seed=82), const(np.uint8(12)), const(np.uint8(3))], opset=10)
add("MMI_no_zp", "MatMulInteger", [u8(4, 5, seed=83), u8(5, 3, seed=84)], opset=10)
add("MMI_i8", "MatMulInteger", [i8(4, 5, seed=85), i8(5, 3, seed=86), const(np.int8(-2)), const(np.int8(1))], opset=10)
add("MMI_u8_i8", "MatMulInteger", [u8(4, 5, seed=87), i8(5, 3, seed=88), const(np.uint8(128)), const(np.int8(0))],
    opset=10)
add("MMI_batch", "MatMulInteger", [u8(2, 3, 4, 5, seed=89), u8(5, 6, seed=90), const(np.uint8(100))], opset=10)
add("MMI_b_per_col", "MatMulInteger", [u8(4, 5, seed=91), u8(5, 3, seed=92), const(np.uint8(12)),
                                       const(np.array([1, 200, 3], np.uint8))], opset=10)
add("MMI_runtime_zp", "MatMulInteger", [u8(4, 5, seed=93), u8(5, 3, seed=94), np.array(7, np.uint8),
                                        np.array(9, np.uint8)], opset=10)

# ---- QLinearConv ----
def qlconv(name, x, w, xs, xz, ws, wz, ys, yz, b=None, **attrs):
    ins = [x, const(xs), const(xz), const(w), const(ws), const(wz), const(ys), const(yz)]
    if b is not None:
        ins.append(const(b))
    # atol 1: the CPU's oneDNN int8 kernel multiplies the int32 sums by x_scale * w_scale / y_scale in float32,
    # the reference in float64; where the product is a rounding tie in reals (QLConv_group_dilation: -5500 *
    # 0.001) the two round it to neighbouring integers
    add(name, "QLinearConv", ins, attrs=attrs, opset=10, atol=1)


qlconv("QLConv_u8", u8(1, 3, 8, 8, seed=101), u8(4, 3, 3, 3, seed=102), F32(0.02), np.uint8(128), F32(0.01),
       np.uint8(127), F32(0.3), np.uint8(100))
qlconv("QLConv_pads_strides_bias", u8(2, 3, 9, 7, seed=103), u8(4, 3, 3, 3, seed=104), F32(0.02), np.uint8(128),
       F32(0.01), np.uint8(127), F32(0.3), np.uint8(100), b=rand(4, dtype=np.int32, low=-500, high=500, seed=105),
       pads=[1, 2, 1, 0], strides=[2, 1])
qlconv("QLConv_i8_per_channel", i8(1, 4, 6, 6, seed=106), i8(6, 4, 3, 3, seed=107), F32(0.05), np.int8(-1),
       rand(6, low=0.005, high=0.02, seed=108), np.zeros(6, np.int8), F32(0.5), np.int8(3), pads=[1, 1, 1, 1])
qlconv("QLConv_group_dilation", u8(1, 4, 10, 10, seed=109), u8(6, 2, 3, 3, seed=110), F32(0.02), np.uint8(120),
       F32(0.01), np.uint8(128), F32(0.2), np.uint8(128), group=2, dilations=[2, 2], pads=[2, 1, 2, 3])
qlconv("QLConv_1d", u8(2, 3, 12, seed=111), u8(5, 3, 4, seed=112), F32(0.02), np.uint8(128), F32(0.01),
       np.uint8(127), F32(0.3), np.uint8(100), pads=[1, 2])

# Geometries of the integer GEMM path of backends that run QLinearConv on patches (the CUDA backend): channel
# counts that are not multiples of 4 or 16, uint8 X (moved to int8 there), nonzero X zero points at padded
# borders, strides, dilations, asymmetric pads, a 7x7 stem, 1x1 convs, depthwise, uint8 weights at zero point 128.
def qlconv_sym(name, x, cout, k, xs, xz, yz, seed, group=1, per_channel=True, w_u8=False, bias=True, **attrs):
    cin = x.shape[1] // group
    w = u8(cout, cin, *k, seed=seed) if w_u8 else i8(cout, cin, *k, seed=seed)
    ws = rand(cout, low=0.004, high=0.012, seed=seed + 1) if per_channel else F32(0.008)
    wz = np.uint8(128) if w_u8 else (np.zeros(cout, np.int8) if per_channel else np.int8(0))
    ys = F32(xs * 0.008 * np.sqrt(cin * k[0] * k[1]) * 74 * 74 / 40)  # about 40 output steps a standard deviation
    b = rand(cout, dtype=np.int32, low=-3000, high=3000, seed=seed + 2) if bias else None
    qlconv(name, x, w, F32(xs), xz, ws, wz, ys, yz, b=b, group=group, **attrs)


qlconv_sym("QLConv_i8_3x3_c8", i8(2, 8, 11, 9, seed=131), 20, (3, 3), 0.03, np.int8(5), np.int8(-2), 132,
           pads=[1, 1, 1, 1])
qlconv_sym("QLConv_u8_stem_7x7", u8(1, 3, 23, 23, seed=133), 16, (7, 7), 0.02, np.uint8(131), np.uint8(7), 134,
           pads=[3, 3, 3, 3], strides=[2, 2])
qlconv_sym("QLConv_u8_1x1", u8(3, 32, 5, 6, seed=135), 24, (1, 1), 0.02, np.uint8(128), np.uint8(128), 136)
qlconv_sym("QLConv_i8_1x1_c16_zp0", i8(2, 16, 4, 4, seed=137), 17, (1, 1), 0.05, np.int8(0), np.int8(0), 138,
           per_channel=False, bias=False)
qlconv_sym("QLConv_dw_u8_s2", u8(2, 12, 9, 10, seed=139), 12, (3, 3), 0.02, np.uint8(100), np.uint8(128), 140,
           group=12, strides=[2, 2], pads=[1, 1, 1, 1])
qlconv_sym("QLConv_dw_i8_dil", i8(1, 8, 12, 12, seed=141), 8, (3, 3), 0.04, np.int8(-9), np.int8(0), 142,
           group=8, dilations=[2, 2], pads=[2, 2, 2, 2])
qlconv_sym("QLConv_u8w_128", u8(1, 5, 8, 8, seed=143), 6, (3, 3), 0.02, np.uint8(140), np.uint8(120), 144,
           per_channel=False, w_u8=True, pads=[0, 1, 2, 1])
qlconv_sym("QLConv_i8_dil_asym", i8(1, 6, 10, 10, seed=145), 4, (3, 3), 0.03, np.int8(-7), np.int8(3), 146,
           dilations=[2, 1], pads=[2, 0, 1, 3])
qlconv_sym("QLConv_i8_5x5_s3_c36", i8(2, 36, 13, 14, seed=147), 40, (5, 5), 0.03, np.int8(2), np.int8(0), 148,
           strides=[3, 3], pads=[2, 2, 2, 2])


# QLinearMatMul with a constant B (weights): per-column scales, K not a multiple of 16, uint8 A, uint8 B at 128
def qlmm_const_b(name, a, b, a_s, a_z, b_s, b_z, y_s, y_z):
    add(name, "QLinearMatMul", [a, const(a_s), const(a_z), const(b), const(b_s), const(b_z), const(y_s), const(y_z)],
        opset=10, atol=1)


qlmm_const_b("QLMM_constB_i8_3d", i8(3, 4, 40, seed=151), i8(40, 24, seed=152), F32(0.03), np.int8(3),
             rand(24, low=0.004, high=0.012, seed=153), np.zeros(24, np.int8), F32(1.0), np.int8(0))
qlmm_const_b("QLMM_constB_u8a", u8(37, 64, seed=154), i8(64, 50, seed=155), F32(0.02), np.uint8(120), F32(0.01),
             np.int8(0), F32(1.2), np.uint8(128))
# per-tensor weight scales with N % 4 == 0: a backend may requantise inside its int8 GEMM (the CUDA backend does)
qlmm_const_b("QLMM_constB_per_tensor_u8", u8(33, 48, seed=158), i8(48, 32, seed=159), F32(0.02), np.uint8(120),
             F32(0.01), np.int8(0), F32(1.0), np.uint8(128))
qlmm_const_b("QLMM_constB_per_tensor_i8", i8(2, 9, 64, seed=160), i8(64, 20, seed=161), F32(0.03), np.int8(-4),
             F32(0.008), np.int8(0), F32(0.8), np.int8(5))
qlmm_const_b("QLMM_constB_u8b128", u8(5, 7, seed=156), u8(7, 3, seed=157), F32(0.02), np.uint8(130), F32(0.03),
             np.uint8(128), F32(0.5), np.uint8(128))


# ---- ConvInteger ----
add("ConvI_u8", "ConvInteger", [u8(1, 3, 7, 7, seed=121), const(u8(4, 3, 3, 3, seed=122)), const(np.uint8(128)),
                                const(np.uint8(120))], opset=10)
add("ConvI_pads_group", "ConvInteger", [u8(2, 4, 6, 5, seed=123), const(u8(6, 2, 2, 3, seed=124)),
                                        const(np.uint8(3))], attrs={"pads": [1, 0, 1, 2], "group": 2,
                                                                    "strides": [1, 2]}, opset=10)
add("ConvI_no_zp", "ConvInteger", [u8(1, 2, 5, 5, seed=125), const(u8(3, 2, 3, 3, seed=126))], opset=10)

# ---- BitCast (opset 26) ----
add("BitCast_f32_i32", "BitCast", [rand(3, 4, low=-100, high=100, seed=131)], attrs={"to": TensorProto.INT32}, opset=26)
add("BitCast_i64_f64", "BitCast", [rand(5, dtype=np.int64, low=0, high=2**40, seed=132)],
    attrs={"to": TensorProto.DOUBLE}, opset=26, rtol=0, atol=0)
add("BitCast_u16_f16", "BitCast", [np.arange(0, 65536, 97, dtype=np.uint16)], attrs={"to": TensorProto.FLOAT16},
    opset=26, rtol=0, atol=0)
add("BitCast_i8_u8", "BitCast", [rand(2, 3, 4, dtype=np.int8, low=-128, high=127, seed=133)],
    attrs={"to": TensorProto.UINT8}, opset=26)
# every float8 code decoded: a float8 initializer holding the 256 codes, Cast to float, plus a zero input
codes = np.arange(256, dtype=np.uint8)
for nm, t in f8types.items():
    q = helper.make_tensor("q", t, [256], codes.tobytes(), raw=True)
    g = helper.make_graph([helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT),
                           helper.make_node("Add", ["qf", "x"], ["y"])], f"f8codes_{nm}",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[q])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], producer_name="netrun-tests")
    m.ir_version = 9
    CASES.append(optest.Case(f"F8_decode_{nm}", m, {"x": np.zeros(256, F32)}, rtol=0, atol=0))
