"""Conv and ConvTranspose cases: 1D/2D/3D, groups, depthwise, dilations, strides, pads, auto_pad, bias,
constant vs run-time weights, float16, ConvTranspose output_padding/output_shape."""
import numpy as np
import onnx
import optest
from optest import rand

CASES = []


node_case = optest.node_case


def conv(name, x, w, b=None, const_w=True, opset=17, rtol=1e-4, atol=1e-4, op="Conv", **attrs):
    ins = [x, ("const", w) if const_w else w]
    if b is not None:
        ins.append(("const", b) if const_w else b)
    CASES.append(node_case(name, op, ins, attrs=attrs, opset=opset, rtol=rtol, atol=atol))


# Conv 2D basics
conv("c2d_basic", rand(1, 3, 8, 8, seed=1), rand(4, 3, 3, 3, seed=2))
conv("c2d_bias_pads", rand(2, 3, 7, 9, seed=3), rand(5, 3, 3, 3, seed=4), rand(5, seed=5), pads=[1, 1, 1, 1])
conv("c2d_asym_pads_strides", rand(1, 2, 10, 11, seed=6), rand(3, 2, 3, 2, seed=7), pads=[0, 1, 2, 0],
     strides=[2, 3])
conv("c2d_dilations", rand(1, 2, 12, 12, seed=8), rand(2, 2, 3, 3, seed=9), dilations=[2, 3], pads=[2, 1, 0, 3])
conv("c2d_kernel_shape_attr", rand(1, 1, 5, 5, seed=10), rand(2, 1, 2, 2, seed=11), kernel_shape=[2, 2])
conv("c2d_runtime_weights", rand(2, 4, 6, 6, seed=12), rand(6, 4, 3, 3, seed=13), rand(6, seed=14),
     const_w=False, pads=[1, 1, 1, 1])
conv("c2d_1x1", rand(2, 8, 5, 7, seed=15), rand(16, 8, 1, 1, seed=16), rand(16, seed=17))
conv("c2d_1x1_stride2", rand(1, 8, 6, 6, seed=18), rand(4, 8, 1, 1, seed=19), strides=[2, 2])
conv("c2d_1x1_pad", rand(1, 3, 4, 4, seed=20), rand(2, 3, 1, 1, seed=21), pads=[1, 0, 1, 0])
conv("c2d_big", rand(1, 16, 40, 40, seed=22), rand(32, 16, 3, 3, seed=23), rand(32, seed=24), pads=[1, 1, 1, 1],
     rtol=1e-3, atol=1e-3)
# groups and depthwise
conv("c2d_group2", rand(2, 4, 7, 7, seed=25), rand(6, 2, 3, 3, seed=26), rand(6, seed=27), group=2, pads=[1, 1, 1, 1])
conv("c2d_group4_1x1", rand(1, 8, 5, 5, seed=28), rand(8, 2, 1, 1, seed=29), group=4)
conv("c2d_depthwise", rand(2, 6, 9, 9, seed=30), rand(6, 1, 3, 3, seed=31), rand(6, seed=32), group=6,
     pads=[1, 1, 1, 1])
conv("c2d_depthwise_stride_dil", rand(1, 5, 13, 11, seed=33), rand(5, 1, 3, 5, seed=34), group=5, strides=[2, 1],
     dilations=[2, 1], pads=[2, 2, 1, 2])
conv("c2d_depthwise_mult2", rand(1, 3, 6, 6, seed=35), rand(6, 1, 3, 3, seed=36), group=3)
# auto_pad
for ap in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
    conv(f"c2d_auto_{ap.lower()}", rand(1, 2, 7, 8, seed=37), rand(3, 2, 4, 3, seed=38), auto_pad=ap, strides=[2, 2])
    conv(f"c2d_auto_{ap.lower()}_dw", rand(1, 3, 6, 5, seed=39), rand(3, 1, 2, 2, seed=40), auto_pad=ap, group=3)
# 1D and 3D
conv("c1d", rand(2, 3, 20, seed=41), rand(4, 3, 5, seed=42), rand(4, seed=43), pads=[2, 1], strides=[2])
conv("c1d_dil_group", rand(1, 4, 17, seed=44), rand(4, 2, 3, seed=45), dilations=[3], group=2)
conv("c3d", rand(1, 2, 5, 6, 7, seed=46), rand(3, 2, 3, 2, 3, seed=47), rand(3, seed=48), pads=[1, 0, 1, 1, 1, 0],
     strides=[1, 2, 2])
conv("c3d_depthwise", rand(1, 3, 4, 5, 6, seed=49), rand(3, 1, 2, 3, 2, seed=50), group=3, dilations=[1, 2, 1])
conv("c3d_same", rand(1, 2, 5, 5, 5, seed=51), rand(2, 2, 3, 3, 3, seed=52), auto_pad="SAME_UPPER", strides=[2, 2, 2])
# older opsets, float16
conv("c2d_opset7", rand(1, 2, 6, 6, seed=53), rand(3, 2, 3, 3, seed=54), rand(3, seed=55), opset=7)
conv("c2d_opset11_autopad", rand(1, 2, 6, 6, seed=56), rand(3, 2, 3, 3, seed=57), opset=11, auto_pad="SAME_LOWER")
conv("c2d_fp16", rand(1, 3, 8, 8, dtype=np.float16, seed=58), rand(4, 3, 3, 3, dtype=np.float16, seed=59),
     rand(4, dtype=np.float16, seed=60), pads=[1, 1, 1, 1], rtol=1e-2, atol=1e-2)
conv("c2d_fp16_runtime_w_dw", rand(1, 4, 8, 8, dtype=np.float16, seed=61), rand(4, 1, 3, 3, dtype=np.float16, seed=62),
     const_w=False, group=4, rtol=1e-2, atol=1e-2)
conv("c2d_batch_more_than_threads", rand(5, 3, 6, 6, seed=63), rand(4, 3, 3, 3, seed=64), pads=[1, 1, 1, 1])
conv("c2d_empty_batch", np.zeros((0, 3, 6, 6), np.float32), rand(4, 3, 3, 3, seed=65))

# ConvTranspose
def convt(name, x, w, b=None, **kw):
    conv(name, x, w, b, op="ConvTranspose", **kw)


convt("ct2d_basic", rand(1, 3, 5, 5, seed=70), rand(3, 4, 3, 3, seed=71))
convt("ct2d_stride_pads_bias", rand(2, 2, 4, 5, seed=72), rand(2, 3, 3, 3, seed=73), rand(3, seed=74),
      strides=[2, 2], pads=[1, 0, 1, 2])
convt("ct2d_output_padding", rand(1, 2, 4, 4, seed=75), rand(2, 2, 3, 3, seed=76), strides=[2, 3],
      output_padding=[1, 2])
convt("ct2d_dilations", rand(1, 2, 5, 4, seed=77), rand(2, 3, 2, 3, seed=78), dilations=[2, 2], strides=[1, 2])
convt("ct2d_group", rand(1, 4, 5, 5, seed=79), rand(4, 3, 3, 3, seed=80), rand(6, seed=81), group=2, strides=[2, 2])
convt("ct2d_depthwise", rand(1, 3, 4, 4, seed=82), rand(3, 1, 3, 3, seed=83), group=3, strides=[2, 2])
convt("ct2d_output_shape", rand(1, 2, 4, 4, seed=84), rand(2, 2, 3, 3, seed=85), strides=[2, 2],
      output_shape=[8, 9])
convt("ct2d_output_shape_upper", rand(1, 2, 4, 4, seed=86), rand(2, 2, 3, 3, seed=87), strides=[2, 2],
      output_shape=[8, 8], auto_pad="SAME_UPPER")
for ap in ["SAME_UPPER", "SAME_LOWER", "VALID"]:
    convt(f"ct2d_auto_{ap.lower()}", rand(1, 2, 3, 4, seed=88), rand(2, 2, 4, 3, seed=89), strides=[2, 2], auto_pad=ap)
convt("ct1d", rand(2, 3, 7, seed=90), rand(3, 2, 4, seed=91), rand(2, seed=92), strides=[3], pads=[1, 2])
convt("ct3d", rand(1, 2, 3, 4, 3, seed=93), rand(2, 2, 2, 3, 2, seed=94), strides=[2, 1, 2], pads=[0, 1, 0, 0, 1, 1])
convt("ct2d_runtime_w", rand(1, 3, 5, 5, seed=95), rand(3, 2, 3, 3, seed=96), rand(2, seed=97), const_w=False,
      strides=[2, 2], output_padding=[1, 1])
convt("ct2d_fp16", rand(1, 2, 4, 4, dtype=np.float16, seed=98), rand(2, 3, 3, 3, dtype=np.float16, seed=99),
      strides=[2, 2], rtol=1e-2, atol=1e-2)
convt("ct2d_opset7", rand(1, 2, 4, 4, seed=100), rand(2, 2, 3, 3, seed=101), opset=7, strides=[2, 2])
convt("ct2d_big", rand(1, 16, 12, 12, seed=102), rand(16, 8, 4, 4, seed=103), strides=[2, 2], pads=[1, 1, 1, 1],
      rtol=1e-3, atol=1e-3)

# A sweep of multi-channel shapes, one axis of variation at a time around a base case, so that every backend is
# compared with the CPU (tests/ops/compare_backends.py) on what real models have: several input channels, batch
# sizes 1-4, groups, depthwise with a channel multiplier, dilations and strides, 1D/2D/3D. (A CUDA build whose
# cuDNN calls crashed on every Conv of more than one input channel once passed every single-channel case.)
def _sweep(op, rank, batch, cin, cout, group, dil, stride, seed):
    spatial = {1: (19,), 2: (11, 9), 3: (5, 6, 7)}[rank]
    kernel = {1: (3,), 2: (3, 3), 3: (3, 2, 3)}[rank]
    x = rand(batch, cin, *spatial, seed=seed)
    if op == "Conv":
        w = rand(cout, cin // group, *kernel, seed=seed + 1)
    else:
        w = rand(cin, cout // group, *kernel, seed=seed + 1)
    b = rand(cout, seed=seed + 2)
    kind = "c" if op == "Conv" else "ct"
    name = f"{kind}{rank}d_sweep_n{batch}_c{cin}_k{cout}_g{group}_d{dil}_s{stride}"
    attrs = dict(group=group, dilations=[dil] * rank, strides=[stride] * rank, pads=[1] * (2 * rank))
    conv(name, x, w, b, op=op, rtol=1e-3, atol=1e-3, **attrs)


_seed = 200
for _op in ("Conv", "ConvTranspose"):
    for _rank in (1, 2, 3):
        for _batch, _cin, _cout, _group, _dil, _stride in [(1, 8, 16, 1, 1, 1), (3, 8, 16, 1, 1, 1),
                                                          (2, 8, 12, 4, 1, 1), (2, 8, 8, 8, 1, 1),
                                                          (1, 6, 12, 6, 1, 1), (4, 5, 7, 1, 2, 1),
                                                          (2, 16, 8, 1, 1, 2)]:
            _sweep(_op, _rank, _batch, _cin, _cout, _group, _dil, _stride, _seed)
            _seed += 3
