"""Gemm and MatMul cases: transposes, alpha/beta, C broadcasting, optional C, numpy MatMul with 1-D operands
and broadcast batch dims, float16/double/int dtypes."""
import numpy as np
import onnx
import optest
from optest import rand

CASES = []


node_case = optest.node_case

def add(name, op, ins, rtol=1e-4, atol=1e-4, opset=17, **attrs):
    CASES.append(node_case(name, op, ins, attrs=attrs, opset=opset, rtol=rtol, atol=atol))


# Gemm
add("gemm_basic", "Gemm", [rand(4, 5, seed=1), rand(5, 6, seed=2), rand(4, 6, seed=3)])
add("gemm_transA", "Gemm", [rand(5, 4, seed=4), rand(5, 6, seed=5), rand(4, 6, seed=6)], transA=1)
add("gemm_transB", "Gemm", [rand(4, 5, seed=7), rand(6, 5, seed=8), rand(6, seed=9)], transB=1)
add("gemm_transAB_alpha_beta", "Gemm", [rand(5, 4, seed=10), rand(6, 5, seed=11), rand(4, 1, seed=12)],
    transA=1, transB=1, alpha=0.5, beta=-2.0)
add("gemm_c_scalar", "Gemm", [rand(3, 4, seed=13), rand(4, 2, seed=14), rand(1, seed=15)], beta=3.0)
add("gemm_c_row", "Gemm", [rand(3, 4, seed=16), rand(4, 2, seed=17), rand(1, 2, seed=18)])
add("gemm_c_const", "Gemm", [rand(3, 4, seed=19), ("const", rand(4, 7, seed=20)), ("const", rand(7, seed=21))],
    transB=0)
add("gemm_no_c", "Gemm", [rand(8, 9, seed=22), rand(9, 10, seed=23)], opset=13)
add("gemm_beta0", "Gemm", [rand(8, 9, seed=24), rand(9, 10, seed=25), rand(8, 10, seed=26)], beta=0.0)
add("gemm_big", "Gemm", [rand(64, 300, seed=27), ("const", rand(200, 300, seed=28)), ("const", rand(200, seed=29))],
    transB=1, rtol=1e-3, atol=1e-3)
add("gemm_m1", "Gemm", [rand(1, 64, seed=30), rand(64, 33, seed=31), rand(33, seed=32)])
# one row through the CPU's sgemv path: B transposed (a classifier's layout), A transposed, alpha/beta
add("gemm_m1_transB", "Gemm", [rand(1, 300, seed=130), ("const", rand(37, 300, seed=131)), ("const", rand(37, seed=132))],
    transB=1, alpha=0.7, beta=1.3)
# gu_gemv's edges: fewer than 16 columns (masked tail only), rows in blocks of 4 with none left over, and a
# classifier's shape split over threads
add("gemm_m1_transB_k7", "Gemm", [rand(1, 7, seed=136), ("const", rand(9, 7, seed=137))], transB=1, opset=13)
add("gemm_m1_transB_k32", "Gemm", [rand(1, 32, seed=138), rand(8, 32, seed=139), rand(8, seed=140)], transB=1,
    beta=0.0)
add("gemm_m1_classifier", "Gemm", [rand(1, 1280, seed=141), ("const", rand(1000, 1280, seed=142)),
                                   ("const", rand(1000, seed=143))], transB=1, atol=1e-3)
add("gemm_m1_transA", "Gemm", [rand(64, 1, seed=133), rand(64, 33, seed=134), rand(1, 33, seed=135)], transA=1, alpha=2.0)
add("gemm_opset7", "Gemm", [rand(3, 4, seed=33), rand(4, 5, seed=34), rand(5, seed=35)], opset=7)
add("gemm_opset9", "Gemm", [rand(3, 4, seed=36), rand(4, 5, seed=37), rand(3, 5, seed=38)], opset=9, alpha=2.0)
add("gemm_fp16", "Gemm", [rand(6, 8, dtype=np.float16, seed=39), rand(8, 5, dtype=np.float16, seed=40),
                          rand(5, dtype=np.float16, seed=41)], rtol=1e-2, atol=1e-2)
add("gemm_double", "Gemm", [rand(6, 8, dtype=np.float64, seed=42), rand(5, 8, dtype=np.float64, seed=43),
                            rand(6, 5, dtype=np.float64, seed=44)], transB=1, rtol=1e-10, atol=1e-10)
add("gemm_k0", "Gemm", [np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), rand(3, 4, seed=45)])

# MatMul
add("mm_2d", "MatMul", [rand(7, 5, seed=50), rand(5, 3, seed=51)])
add("mm_1d_1d", "MatMul", [rand(6, seed=52), rand(6, seed=53)])
add("mm_1d_2d", "MatMul", [rand(6, seed=54), rand(6, 4, seed=55)])
add("mm_2d_1d", "MatMul", [rand(3, 6, seed=56), rand(6, seed=57)])
add("mm_1d_3d", "MatMul", [rand(6, seed=58), rand(2, 6, 4, seed=59)])
add("mm_3d_1d", "MatMul", [rand(2, 3, 6, seed=60), rand(6, seed=61)])
add("mm_3d_2d", "MatMul", [rand(4, 3, 6, seed=62), ("const", rand(6, 5, seed=63))])
# a constant B whose N is not a multiple of 8 (a tied lm_head, 768 x 50257): rows of B and Y not 16-byte aligned
add("mm_const_b_odd_n", "MatMul", [rand(2, 33, 64, seed=160), ("const", rand(64, 203, seed=161))], rtol=1e-3, atol=1e-3)
add("mm_const_b_odd_n_fp16", "MatMul", [rand(2, 33, 64, dtype=np.float16, seed=162),
                                        ("const", rand(64, 203, dtype=np.float16, seed=163))], rtol=1e-2, atol=1e-2)
add("mm_2d_3d", "MatMul", [rand(3, 6, seed=64), rand(4, 6, 5, seed=65)])
add("mm_batched", "MatMul", [rand(2, 3, 4, 6, seed=66), rand(2, 3, 6, 5, seed=67)])
add("mm_broadcast_batch", "MatMul", [rand(2, 1, 4, 6, seed=68), rand(1, 3, 6, 5, seed=69)])
add("mm_broadcast_rank", "MatMul", [rand(5, 2, 3, 4, seed=70), rand(2, 4, 3, seed=71)])
add("mm_big", "MatMul", [rand(2, 64, 128, seed=72), rand(128, 96, seed=73)], rtol=1e-3, atol=1e-3)
add("mm_fp16", "MatMul", [rand(2, 3, 8, dtype=np.float16, seed=74), rand(8, 4, dtype=np.float16, seed=75)],
    rtol=1e-2, atol=1e-2)
add("mm_double", "MatMul", [rand(2, 3, 8, dtype=np.float64, seed=76), rand(2, 8, 4, dtype=np.float64, seed=77)],
    rtol=1e-10, atol=1e-10)
add("mm_int32", "MatMul", [rand(2, 3, 4, dtype=np.int32, low=-5, high=5, seed=78),
                           rand(4, 5, dtype=np.int32, low=-5, high=5, seed=79)])
add("mm_int64", "MatMul", [rand(3, 4, dtype=np.int64, low=-9, high=9, seed=80),
                           rand(2, 4, 2, dtype=np.int64, low=-9, high=9, seed=81)])
add("mm_empty", "MatMul", [np.zeros((0, 3), np.float32), rand(3, 4, seed=82)])
add("mm_opset7", "MatMul", [rand(2, 3, 4, seed=83), rand(4, 2, seed=84)], opset=7)

# A constant float B is packed once for oneDNN's matmul (backends/cpu/matmul_dnnl.c) where A has 2 to 48 rows:
# transposed B, alpha with beta * C of each broadcast form, B with leading dims of 1, N neither a multiple of 16
# nor of the 64-column slices, two rows (the smallest M that packs), and a Gemm whose C is an input.
add("gemm_packed_transB_alpha_beta_full_c", "Gemm", [rand(20, 96, seed=150), ("const", rand(150, 96, seed=151)),
                                                     rand(20, 150, seed=152)], transB=1, alpha=0.5, beta=-1.5,
    rtol=1e-3, atol=1e-4)
add("gemm_packed_c_col", "Gemm", [rand(33, 70, seed=153), ("const", rand(70, 129, seed=154)),
                                  ("const", rand(33, 1, seed=155))], beta=2.0, rtol=1e-3, atol=1e-4)
add("gemm_packed_c_scalar_beta0", "Gemm", [rand(9, 40, seed=156), ("const", rand(40, 17, seed=157)),
                                           ("const", rand(1, seed=158))], beta=0.0)
add("gemm_packed_no_c", "Gemm", [rand(5, 300, seed=159), ("const", rand(300, 260, seed=160))], opset=13,
    rtol=1e-3, atol=1e-4)
add("mm_packed_3d", "MatMul", [rand(2, 19, 64, seed=161), ("const", rand(64, 200, seed=162))], rtol=1e-3)
add("mm_packed_m2", "MatMul", [rand(2, 64, seed=163), ("const", rand(64, 64, seed=164))])
add("mm_packed_narrow", "MatMul", [rand(16, 8, seed=165), ("const", rand(8, 3, seed=166))])
add("mm_packed_b_lead1", "MatMul", [rand(2, 3, 5, 48, seed=167), ("const", rand(1, 48, 130, seed=168))], rtol=1e-3)
add("mm_packed_b_batched", "MatMul", [rand(3, 5, 48, seed=169), ("const", rand(3, 48, 20, seed=170))])
add("mm_packed_a_1row_3d", "MatMul", [rand(1, 1, 96, seed=171), ("const", rand(96, 40, seed=172))])


# Linear layers as exporters write them: MatMul(A, W[K, N] constant) + Add(bias[N] constant) [-> activation]. The
# graph passes run each as one MatMulBias node (com.netrun) where the backend takes it: on CUDA one cuBLASLt GEMM
# with the bias (and ReLU, or the tanh GELU) in its epilogue when N and K are multiples of 8, else cuBLAS and a bias
# kernel; an erf Gelu stays a node of its own. Ranks 2-4, float32 and float16, the bias on either side.
# residual: a transformer block's Add(Linear(x), R) after it (no activation), which the passes take in as
# MatMulBias's 4th input (cuBLASLt's C with beta 1): "input" R another graph input, "input_first" Add(R, h),
# "x" R = x itself (K == N).
def linear(name, a_shape, n, act=None, dtype=np.float32, bias_first=False, seed=0, rtol=1e-4, atol=1e-4,
           residual=None):
    from onnx import TensorProto, helper
    rng = np.random.default_rng(900 + seed)
    k = a_shape[-1]
    elem = optest.np_to_elem(dtype)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["mm"], name="linear"),
             helper.make_node("Add", ["B", "mm"] if bias_first else ["mm", "B"], ["h"], name="bias")]
    y, opset = "h", 17
    if act == "relu":
        nodes.append(helper.make_node("Relu", ["h"], ["y"], name="act"))
        y = "y"
    elif act in ("gelu_tanh", "gelu_erf"):  # the opset-20 op
        kw = {"approximate": "tanh"} if act == "gelu_tanh" else {}
        nodes.append(helper.make_node("Gelu", ["h"], ["y"], name="act", **kw))
        y, opset = "y", 20
    elif act == "gelu_tanh_decomposed":  # as GPT-2's exporters write it (the transformer pass makes it a Gelu)
        def c(nm, v):
            nodes.append(helper.make_node("Constant", [], [nm], value=onnx.numpy_helper.from_array(np.array(v, dtype))))
            return nm
        nodes += [helper.make_node("Pow", ["h", c("three", 3.0)], ["p3"]),
                  helper.make_node("Mul", ["p3", c("k1", 0.044715)], ["p3k"]),
                  helper.make_node("Add", ["h", "p3k"], ["inner"]),
                  helper.make_node("Mul", ["inner", c("k2", 0.7978845608028654)], ["scaled"]),
                  helper.make_node("Tanh", ["scaled"], ["t"]),
                  helper.make_node("Add", ["t", c("one", 1.0)], ["t1"]),
                  helper.make_node("Mul", ["h", "t1"], ["ht"]),
                  helper.make_node("Mul", ["ht", c("half", 0.5)], ["y"])]
        y = "y"
    x = rng.uniform(-1, 1, a_shape).astype(dtype)
    ins, feeds = [helper.make_tensor_value_info("x", elem, list(a_shape))], {"x": x}
    if residual:
        r_shape = list(a_shape[:-1]) + [n]
        r = "x" if residual == "x" else "r"
        if r == "r":
            ins.append(helper.make_tensor_value_info("r", elem, r_shape))
            feeds["r"] = rng.uniform(-1, 1, r_shape).astype(dtype)
        nodes.append(helper.make_node("Add", [r, y] if residual == "input_first" else [y, r], ["res"], name="residual"))
        y = "res"
    g = helper.make_graph(nodes, name, ins, [helper.make_tensor_value_info(y, elem, None)],
                          [onnx.numpy_helper.from_array(w, "W"), onnx.numpy_helper.from_array(b, "B")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="netrun-tests")
    m.ir_version = 8
    optest.fix_output_types(m)
    CASES.append(optest.Case(name, m, feeds, rtol=rtol, atol=atol))


F16 = dict(dtype=np.float16, rtol=1e-2, atol=1e-2)
linear("linear_r2_bias", (64, 96), 128, seed=1)
linear("linear_r3_bias", (4, 50, 64), 96, seed=2)
linear("linear_r4_bias_first", (2, 3, 10, 32), 48, bias_first=True, seed=3)
linear("linear_r3_relu", (4, 50, 64), 96, act="relu", seed=4)
linear("linear_r3_gelu_tanh", (4, 50, 64), 256, act="gelu_tanh", seed=5)
linear("linear_r3_gelu_tanh_decomposed", (4, 50, 64), 256, act="gelu_tanh_decomposed", seed=6)
linear("linear_r3_gelu_erf", (4, 50, 64), 256, act="gelu_erf", seed=7)
linear("linear_odd_nk_relu", (3, 7, 13), 11, act="relu", seed=8)
linear("linear_odd_n_gelu_tanh", (2, 9, 16), 12, act="gelu_tanh", seed=9)
linear("linear_fp16_r3_bias", (4, 50, 64), 96, seed=10, **F16)
linear("linear_fp16_r2_relu", (64, 96), 128, act="relu", seed=11, **F16)
linear("linear_fp16_r4_gelu_tanh", (2, 3, 10, 64), 256, act="gelu_tanh", seed=12, **F16)
linear("linear_fp16_r3_gelu_erf", (4, 50, 64), 256, act="gelu_erf", seed=13, **F16)
linear("linear_fp16_odd_nk_relu", (3, 7, 13), 11, act="relu", seed=14, **F16)
linear("linear_r3_residual", (4, 50, 64), 96, residual="input", seed=15)
linear("linear_r2_residual_first", (64, 96), 128, residual="input_first", seed=16)
linear("linear_r3_residual_x", (4, 50, 64), 64, residual="x", seed=17)
linear("linear_odd_nk_residual", (3, 7, 13), 11, residual="input", seed=18)
linear("linear_fp16_r3_residual", (4, 50, 64), 96, residual="input", seed=19, **F16)
linear("linear_fp16_r2_residual_x", (64, 96), 96, residual="x", seed=20, **F16)
linear("linear_fp16_odd_nk_residual", (3, 7, 13), 11, residual="input_first", seed=21, **F16)
