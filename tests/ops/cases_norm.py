"""BatchNormalization (inference, opsets 7..15, spatial=0), InstanceNormalization, LayerNormalization
(axis, epsilon, optional B, Mean/InvStdDev outputs, broadcast Scale; onnxruntime's form at opset 13) cases."""
import numpy as np
import onnx
import optest
from optest import rand

CASES = []


node_case = optest.node_case

def add(name, op, ins, outputs=1, rtol=1e-4, atol=1e-4, opset=17, **attrs):
    CASES.append(node_case(name, op, ins, outputs=outputs, attrs=attrs, opset=opset, rtol=rtol, atol=atol))


def bn_params(c, seed, dtype=np.float32, shape=None):
    shape = shape or (c,)
    return [("const", rand(*shape, dtype=dtype, seed=seed)), ("const", rand(*shape, dtype=dtype, seed=seed + 1)),
            ("const", rand(*shape, dtype=dtype, seed=seed + 2)),
            ("const", rand(*shape, dtype=dtype, low=0.1, high=2.0, seed=seed + 3))]


add("bn_4d", "BatchNormalization", [rand(2, 3, 5, 6, seed=1)] + bn_params(3, 10))
add("bn_2d", "BatchNormalization", [rand(4, 6, seed=2)] + bn_params(6, 20), epsilon=1e-3)
add("bn_3d_runtime_params", "BatchNormalization",
    [rand(2, 4, 7, seed=3), rand(4, seed=4), rand(4, seed=5), rand(4, seed=6), rand(4, low=0.5, high=1.5, seed=7)])
add("bn_5d", "BatchNormalization", [rand(1, 2, 3, 4, 5, seed=8)] + bn_params(2, 30))
add("bn_opset7", "BatchNormalization", [rand(2, 3, 4, 4, seed=9)] + bn_params(3, 40), opset=7)
add("bn_opset7_spatial0", "BatchNormalization", [rand(2, 3, 4, 4, seed=10)] + bn_params(3, 50, shape=(3, 4, 4)),
    opset=7, spatial=0)
add("bn_opset9", "BatchNormalization", [rand(2, 3, 4, 4, seed=11)] + bn_params(3, 60), opset=9, momentum=0.8)
add("bn_opset14", "BatchNormalization", [rand(2, 3, 4, 4, seed=12)] + bn_params(3, 70), opset=14, training_mode=0)
add("bn_opset15_fp16", "BatchNormalization", [rand(2, 3, 4, 4, dtype=np.float16, seed=13)] +
    bn_params(3, 80, dtype=np.float16), opset=15, rtol=1e-2, atol=1e-2)
add("bn_double", "BatchNormalization", [rand(2, 3, 4, 4, dtype=np.float64, seed=14)] +
    bn_params(3, 90, dtype=np.float64), rtol=1e-10, atol=1e-10)
add("bn_large_plane", "BatchNormalization", [rand(1, 4, 64, 64, seed=15)] + bn_params(4, 100))

add("in_4d", "InstanceNormalization", [rand(2, 3, 5, 6, seed=20), ("const", rand(3, seed=21)),
                                       ("const", rand(3, seed=22))])
add("in_3d_eps", "InstanceNormalization", [rand(3, 4, 17, seed=23), rand(4, seed=24), rand(4, seed=25)],
    epsilon=0.01)
add("in_5d", "InstanceNormalization", [rand(1, 2, 3, 4, 5, seed=26), rand(2, seed=27), rand(2, seed=28)])
add("in_fp16", "InstanceNormalization", [rand(2, 3, 8, 8, dtype=np.float16, seed=29),
                                         rand(3, dtype=np.float16, seed=30), rand(3, dtype=np.float16, seed=31)],
    rtol=1e-2, atol=1e-2)
add("in_opset7", "InstanceNormalization", [rand(2, 3, 5, 5, seed=32), rand(3, seed=33), rand(3, seed=34)], opset=7)

add("ln_last_axis", "LayerNormalization", [rand(2, 5, 16, seed=40), ("const", rand(16, seed=41)),
                                           ("const", rand(16, seed=42))])
add("ln_axis1", "LayerNormalization", [rand(2, 3, 4, 5, seed=43), rand(3, 4, 5, seed=44), rand(3, 4, 5, seed=45)],
    axis=1)
add("ln_neg_axis_no_bias", "LayerNormalization", [rand(3, 4, 6, seed=46), rand(4, 6, seed=47)], axis=-2,
    epsilon=1e-3)
add("ln_mean_invstd", "LayerNormalization", [rand(2, 3, 8, seed=48), rand(8, seed=49), rand(8, seed=50)],
    outputs=3)
add("ln_mean_invstd_axis0", "LayerNormalization", [rand(2, 3, 8, seed=51), rand(2, 3, 8, seed=52)], outputs=3,
    axis=0)
add("ln_broadcast_scale", "LayerNormalization", [rand(2, 3, 4, 5, seed=53), rand(1, 5, seed=54), rand(4, 1, seed=55)],
    axis=2)
add("ln_fp16", "LayerNormalization", [rand(2, 4, 32, dtype=np.float16, seed=56), rand(32, dtype=np.float16, seed=57),
                                      rand(32, dtype=np.float16, seed=58)], rtol=1e-2, atol=1e-2)
add("ln_double", "LayerNormalization", [rand(3, 10, dtype=np.float64, seed=59), rand(10, dtype=np.float64, seed=60)],
    rtol=1e-10, atol=1e-10)
add("ln_wide", "LayerNormalization", [rand(4, 1000, seed=61), rand(1000, seed=62), rand(1000, seed=63)])
# a transformer's hidden sizes (one warp a row on CUDA, the row in registers): 768 in float16, 300 (a partial
# last lane group), a scale over the last dim only of two normalized dims
add("ln_hidden768_fp16", "LayerNormalization", [rand(2, 7, 768, dtype=np.float16, seed=102),
                                                rand(768, dtype=np.float16, seed=103), rand(768, dtype=np.float16, seed=104)],
    rtol=1e-2, atol=1e-2)
add("ln_hidden300_stats", "LayerNormalization", [rand(5, 300, seed=105), rand(300, seed=106), rand(300, seed=107)],
    outputs=3)
add("ln_scale_last_of_two", "LayerNormalization", [rand(3, 6, 20, seed=108), rand(20, seed=109), rand(20, seed=110)],
    axis=1)
add("ln_opset18", "LayerNormalization", [rand(2, 6, seed=64), rand(6, seed=65)], opset=18)
# onnxruntime's LayerNormalization of opsets before 17 (its transformer optimizer writes it into such models): the
# same computation; onnx's shape inference does not know it there, so the outputs are typed here
_ln13 = node_case("ln_opset13_onnxruntime", "LayerNormalization", [rand(2, 5, 16, seed=90), ("const", rand(16, seed=91)),
                  ("const", rand(16, seed=92))], outputs=3, opset=13, rtol=1e-4, atol=1e-4, attrs={"epsilon": 1e-5})
for _o in _ln13.model.graph.output:
    _o.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
CASES.append(_ln13)
add("ln_fp16_stats", "LayerNormalization", [rand(2, 3, 16, dtype=np.float16, seed=66), rand(16, dtype=np.float16, seed=67)],
    outputs=3, rtol=1e-2, atol=1e-2)
add("bn_opset15_mixed", "BatchNormalization", [rand(2, 3, 4, 4, dtype=np.float16, seed=68)] + bn_params(3, 110),
    opset=15, rtol=1e-2, atol=1e-2)

# ---- GroupNormalization (opset 21: scale/bias per channel; opset 18: per group) ----
def add_gn(name, ins, opset, **attrs):
    # onnx shape inference does not type this function op's output: declare it like X
    c = node_case(name, "GroupNormalization", ins, attrs=attrs, opset=opset, rtol=1e-4, atol=1e-4)
    c.model.graph.output[0].type.tensor_type.elem_type = optest.np_to_elem(ins[0].dtype)
    CASES.append(c)


xg = rand(2, 6, 4, 5, seed=81, low=-3, high=3)
for g in [1, 2, 3, 6]:
    add_gn(f"gn21_g{g}", [xg, rand(6, seed=82), rand(6, seed=83)], opset=21, num_groups=g)
    add_gn(f"gn18_g{g}", [xg, rand(g, seed=84), rand(g, seed=85)], opset=18, num_groups=g)
add_gn("gn21_eps_3d", [rand(3, 4, 7, seed=86), rand(4, seed=87), rand(4, seed=88)], opset=21,
    num_groups=2, epsilon=0.1)
add_gn("gn21_2d", [rand(3, 4, seed=89), rand(4, seed=90), rand(4, seed=91)], opset=21,
    num_groups=2)

# ---- MeanVarianceNormalization ----
xm = rand(3, 4, 5, 2, seed=92, low=-2, high=4)
add("mvn_default", "MeanVarianceNormalization", [xm], opset=13)
add("mvn_axes_123", "MeanVarianceNormalization", [xm], opset=13, axes=[1, 2, 3])
add("mvn_axes_neg", "MeanVarianceNormalization", [xm], opset=13, axes=[-1])
add("mvn_axes_02", "MeanVarianceNormalization", [rand(4, 3, 6, seed=93)], opset=13, axes=[0, 2])
add("mvn_opset9", "MeanVarianceNormalization", [xm], opset=9)

# ---- LpNormalization ----
xn = rand(3, 4, 5, seed=94, low=-2, high=2)
for pv in [1, 2]:
    for axis in [0, 1, -1]:
        add(f"lpn_p{pv}_ax{axis}".replace("-", "m"), "LpNormalization", [xn], opset=17, p=pv, axis=axis)
add("lpn_default", "LpNormalization", [xn], opset=17)
zr = xn.copy()
zr[1, :, 2] = 0  # a zero norm gives zeros (onnxruntime too)
add("lpn_zero_row", "LpNormalization", [zr], opset=17, axis=1)
add("lpn_f64", "LpNormalization", [rand(4, 7, dtype=np.float64, seed=95)], opset=17, rtol=1e-9, atol=1e-12)

# ---- LRN ----
xr = rand(2, 7, 4, 5, seed=96, low=-3, high=3)
for size in [1, 3, 5]:  # onnxruntime: odd sizes and 4-D only
    add(f"lrn_size{size}", "LRN", [xr], opset=13, size=size)
add("lrn_params", "LRN", [xr], opset=13, size=3, alpha=0.01, beta=0.5, bias=2.0)
add("lrn_wide", "LRN", [rand(1, 16, 3, 3, seed=97)], opset=13, size=5, alpha=0.1)
