"""MaxPool (Indices, storage_order, dilations, ceil_mode, auto_pad), AveragePool (count_include_pad,
ceil_mode, dilations from opset 19), GlobalAveragePool, GlobalMaxPool cases."""
import numpy as np
import onnx
import optest
from optest import rand

CASES = []


node_case = optest.node_case

def add(name, op, ins, outputs=1, rtol=1e-4, atol=1e-5, opset=17, **attrs):
    CASES.append(node_case(name, op, ins, outputs=outputs, attrs=attrs, opset=opset, rtol=rtol, atol=atol))


x4 = rand(2, 3, 9, 10, seed=1)
add("max_basic", "MaxPool", [x4], kernel_shape=[2, 2])
add("max_strides_pads", "MaxPool", [x4], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
add("max_asym", "MaxPool", [x4], kernel_shape=[3, 2], strides=[2, 3], pads=[0, 1, 2, 0])
add("max_ceil", "MaxPool", [x4], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
add("max_ceil_pads", "MaxPool", [rand(1, 2, 8, 8, seed=2)], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1],
    ceil_mode=1)
add("max_dilations", "MaxPool", [x4], kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 1])
add("max_indices", "MaxPool", [x4], outputs=2, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
add("max_indices_colmajor", "MaxPool", [x4], outputs=2, kernel_shape=[2, 2], strides=[2, 2], storage_order=1)
add("max_indices_1d", "MaxPool", [rand(2, 3, 11, seed=3)], outputs=2, kernel_shape=[3], strides=[2])
for ap in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
    add(f"max_auto_{ap.lower()}", "MaxPool", [x4], kernel_shape=[3, 2], strides=[2, 2], auto_pad=ap)
    add(f"avg_auto_{ap.lower()}", "AveragePool", [x4], kernel_shape=[3, 2], strides=[2, 2], auto_pad=ap)
add("max_1d", "MaxPool", [rand(2, 3, 15, seed=4)], kernel_shape=[4], strides=[3], pads=[1, 2])
add("max_3d", "MaxPool", [rand(1, 2, 5, 6, 7, seed=5)], kernel_shape=[2, 3, 2], strides=[1, 2, 2], pads=[1, 1, 0, 0, 1, 1])
add("max_opset7", "MaxPool", [x4], kernel_shape=[2, 2], strides=[2, 2], opset=7)
add("max_opset8_indices", "MaxPool", [x4], outputs=2, kernel_shape=[2, 2], opset=8)
add("max_opset11", "MaxPool", [x4], kernel_shape=[3, 3], ceil_mode=1, strides=[2, 2], opset=11)
add("max_fp16", "MaxPool", [rand(1, 3, 8, 8, dtype=np.float16, seed=6)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
add("max_double", "MaxPool", [rand(1, 3, 8, 8, dtype=np.float64, seed=7)], kernel_shape=[2, 2], strides=[2, 2])
add("max_int8", "MaxPool", [rand(1, 3, 8, 8, dtype=np.int8, low=-128, high=127, seed=8)], kernel_shape=[3, 3],
    pads=[1, 1, 1, 1])
add("max_uint8", "MaxPool", [rand(1, 3, 8, 8, dtype=np.uint8, low=0, high=255, seed=9)], kernel_shape=[2, 2])
# 8-bit MaxPool as QDQ models run it (ResNet's 3x3 / 2 after the stem), batch 2; dilation and asymmetric pads
add("max_int8_s2_b2", "MaxPool", [rand(2, 4, 9, 9, dtype=np.int8, low=-128, high=127, seed=10)], kernel_shape=[3, 3],
    strides=[2, 2], pads=[1, 1, 1, 1])
add("max_uint8_dil_pads", "MaxPool", [rand(1, 2, 10, 10, dtype=np.uint8, low=0, high=255, seed=11)],
    kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 1, 0, 2])

add("avg_basic", "AveragePool", [x4], kernel_shape=[2, 2])
add("avg_pads_exclude", "AveragePool", [x4], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
add("avg_pads_include", "AveragePool", [x4], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
    count_include_pad=1)
add("avg_ceil", "AveragePool", [x4], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
add("avg_ceil_include", "AveragePool", [x4], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, pads=[1, 1, 1, 1],
    count_include_pad=1)
add("avg_dilations", "AveragePool", [x4], kernel_shape=[2, 2], dilations=[2, 3], opset=19)
add("avg_dilations_pads", "AveragePool", [x4], kernel_shape=[3, 2], dilations=[2, 2], pads=[1, 1, 1, 1], opset=19)
add("avg_1d", "AveragePool", [rand(2, 3, 15, seed=10)], kernel_shape=[4], strides=[3], pads=[1, 2],
    count_include_pad=1)
add("avg_3d", "AveragePool", [rand(1, 2, 5, 6, 7, seed=11)], kernel_shape=[2, 3, 2], strides=[2, 2, 2],
    pads=[1, 1, 0, 0, 1, 1])
add("avg_opset7", "AveragePool", [x4], kernel_shape=[2, 2], opset=7)
add("avg_fp16", "AveragePool", [rand(1, 3, 8, 8, dtype=np.float16, seed=12)], kernel_shape=[3, 3],
    pads=[1, 1, 1, 1], rtol=1e-2, atol=1e-3)
add("avg_large", "AveragePool", [rand(2, 16, 56, 56, seed=14)], kernel_shape=[3, 3], strides=[1, 1],
    pads=[1, 1, 1, 1])

add("gap_4d", "GlobalAveragePool", [rand(2, 5, 7, 9, seed=20)])
add("gap_3d", "GlobalAveragePool", [rand(2, 5, 11, seed=21)])
add("gap_5d", "GlobalAveragePool", [rand(1, 3, 3, 4, 5, seed=22)])
add("gap_fp16", "GlobalAveragePool", [rand(2, 4, 8, 8, dtype=np.float16, seed=23)], rtol=1e-2, atol=1e-3)
add("gmp_4d", "GlobalMaxPool", [rand(2, 5, 7, 9, seed=25)])
add("gmp_3d", "GlobalMaxPool", [rand(2, 5, 11, seed=26)])
add("gmp_fp16", "GlobalMaxPool", [rand(2, 4, 8, 8, dtype=np.float16, seed=27)])
add("gmp_opset7", "GlobalMaxPool", [rand(1, 3, 4, 4, seed=28)], opset=7)

# ---- LpPool: p, pads (zeros add nothing), strides, dilations, auto_pad, ceil_mode, 1-D/3-D ----
xl = rand(2, 3, 9, 10, seed=71)
for pv in [1, 2, 3]:
    add(f"lp_p{pv}", "LpPool", [xl], opset=18, kernel_shape=[3, 3], p=pv)
add("lp_default_p", "LpPool", [xl], opset=18, kernel_shape=[2, 2])
add("lp_pads_strides", "LpPool", [xl], opset=18, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], p=2)
add("lp_same_upper", "LpPool", [xl], opset=18, kernel_shape=[2, 3], auto_pad="SAME_UPPER", p=3)
add("lp_dilations", "LpPool", [xl], opset=18, kernel_shape=[2, 2], dilations=[2, 2], p=2)
add("lp_ceil", "LpPool", [xl], opset=18, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, p=2)
add("lp_1d", "LpPool", [rand(2, 4, 11, seed=72)], opset=18, kernel_shape=[3], p=2)
add("lp_3d", "LpPool", [rand(1, 2, 5, 6, 4, seed=73)], opset=18, kernel_shape=[2, 2, 2], p=2)
add("lp_opset11", "LpPool", [xl], opset=11, kernel_shape=[2, 2], p=2)
add("lp_f16", "LpPool", [rand(1, 2, 6, 6, dtype=np.float16, seed=74)], opset=18, kernel_shape=[2, 2], p=2,
    rtol=1e-2, atol=1e-2)
