"""Op cases: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Einsum, Det, Swish (compared with onnxruntime)."""
import numpy as np

import optest
from optest import rand

CASES = []


def case(name, op, inputs, **kw):
    CASES.append(optest.node_case(name, op, inputs, **kw))


def labels(shape, c, seed, dtype=np.int64, ignore=None, frac=0.3):
    t = rand(*shape, dtype=dtype, low=0, high=c - 1, seed=seed)
    if ignore is not None:  # put ignore_index at some positions
        m = rand(*shape, seed=seed + 100, low=0, high=1) < frac
        t[m] = ignore
    return t


# ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ----
for op, short in [("NegativeLogLikelihoodLoss", "nll"), ("SoftmaxCrossEntropyLoss", "sce")]:
    nout = 2 if op == "SoftmaxCrossEntropyLoss" else 1
    for red in ["none", "sum", "mean"]:
        x2 = rand(6, 5, low=-3, high=0, seed=1)
        case(f"{short}_2d_{red}", op, [x2, labels((6,), 5, 2)], attrs={"reduction": red}, opset=13, outputs=nout)
        x4 = rand(3, 4, 5, 2, low=-3, high=0, seed=3)
        t4 = labels((3, 5, 2), 4, 4)
        case(f"{short}_4d_{red}", op, [x4, t4], attrs={"reduction": red}, opset=13, outputs=nout)
        w = rand(4, low=0.1, high=2, seed=5)
        case(f"{short}_4d_weight_{red}", op, [x4, t4, w], attrs={"reduction": red}, opset=13, outputs=nout)
        # ignore_index inside [0, C) and negative, with and without weight
        ti = labels((3, 5, 2), 4, 6, ignore=1)
        case(f"{short}_ii1_{red}", op, [x4, ti], attrs={"reduction": red, "ignore_index": 1}, opset=13, outputs=nout)
        case(f"{short}_ii1_weight_{red}", op, [x4, ti, w], attrs={"reduction": red, "ignore_index": 1}, opset=13,
             outputs=nout)
        tn = labels((3, 5, 2), 4, 7, ignore=-5)
        case(f"{short}_iineg_weight_{red}", op, [x4, tn, w], attrs={"reduction": red, "ignore_index": -5},
             opset=13, outputs=nout)
    # 3-D input, int32 labels, default reduction (mean)
    case(f"{short}_3d_int32", op, [rand(4, 7, 3, low=-4, high=1, seed=8), labels((4, 3), 7, 9, dtype=np.int32)],
         opset=13, outputs=nout)
    # double, and float16
    case(f"{short}_f64", op, [rand(5, 6, 4, dtype=np.float64, low=-3, high=1, seed=10), labels((5, 4), 6, 11),
                              rand(6, dtype=np.float64, low=0.5, high=1.5, seed=12)],
         attrs={"reduction": "sum"}, opset=13, outputs=nout, rtol=1e-9, atol=1e-12)
    case(f"{short}_f16", op, [rand(5, 6, dtype=np.float16, low=-3, high=1, seed=13), labels((5,), 6, 14)],
         attrs={"reduction": "none"}, opset=13, outputs=nout, rtol=1e-2, atol=5e-3)
    # opset 12 form
    case(f"{short}_opset12", op, [rand(4, 3, low=-2, high=0, seed=15), labels((4,), 3, 16)], opset=12, outputs=nout)

# SCE: large scores (log-softmax must subtract the max); only the loss output requested
case("sce_large_scores", "SoftmaxCrossEntropyLoss", [rand(8, 40, low=-300, high=300, seed=17), labels((8,), 40, 18)],
     attrs={"reduction": "mean"}, opset=13, rtol=1e-4, atol=1e-3)

# ---- Einsum ----
A = rand(3, 4, seed=20)
B = rand(4, 5, seed=21)
case("einsum_matmul", "Einsum", [A, B], attrs={"equation": "ij,jk->ik"}, opset=12)
case("einsum_matmul_implicit", "Einsum", [A, B], attrs={"equation": "ij,jk"}, opset=12)
case("einsum_transpose", "Einsum", [A], attrs={"equation": "ij->ji"}, opset=12)
case("einsum_sum_all", "Einsum", [A], attrs={"equation": "ij->"}, opset=12)
case("einsum_rowsum", "Einsum", [A], attrs={"equation": "ij->i"}, opset=12)
S = rand(5, 5, seed=22)
case("einsum_trace", "Einsum", [S], attrs={"equation": "ii"}, opset=12)
case("einsum_diag", "Einsum", [S], attrs={"equation": "ii->i"}, opset=12)
case("einsum_outer", "Einsum", [rand(3, seed=23), rand(4, seed=24)], attrs={"equation": "i,j->ij"}, opset=12)
case("einsum_bmm", "Einsum", [rand(2, 3, 4, seed=25), rand(2, 4, 6, seed=26)],
     attrs={"equation": "bij,bjk->bik"}, opset=12)
case("einsum_ellipsis_bcast", "Einsum", [rand(2, 1, 3, 4, seed=27), rand(1, 5, 4, 2, seed=28)],
     attrs={"equation": "...ij,...jk->...ik"}, opset=12)
case("einsum_ellipsis_implicit", "Einsum", [rand(2, 3, 4, seed=29)], attrs={"equation": "...ij"}, opset=12)
case("einsum_three", "Einsum", [rand(2, 3, seed=30), rand(3, 4, seed=31), rand(4, 2, seed=32)],
     attrs={"equation": "ij,jk,kl->il"}, opset=12)
case("einsum_spaces_upper", "Einsum", [rand(2, 3, 4, seed=33), rand(4, 3, seed=34)],
     attrs={"equation": "Nij, jI -> NiI"}, opset=12)
case("einsum_attention", "Einsum", [rand(2, 4, 3, 8, seed=35), rand(2, 4, 5, 8, seed=36)],
     attrs={"equation": "bhqd,bhkd->bhqk"}, opset=12)
case("einsum_int32", "Einsum", [rand(3, 4, dtype=np.int32, low=-5, high=5, seed=37),
                                rand(4, 2, dtype=np.int32, low=-5, high=5, seed=38)],
     attrs={"equation": "ij,jk->ik"}, opset=12)
case("einsum_f64", "Einsum", [rand(3, 4, dtype=np.float64, seed=39), rand(4, 3, dtype=np.float64, seed=40)],
     attrs={"equation": "ij,ji->"}, opset=12, rtol=1e-9, atol=1e-12)
case("einsum_empty", "Einsum", [rand(0, 4, seed=41), rand(4, 3, seed=42)], attrs={"equation": "ij,jk->ik"},
     opset=12)
case("einsum_empty_sum", "Einsum", [rand(3, 0, seed=43), rand(0, 2, seed=44)], attrs={"equation": "ij,jk->ik"},
     opset=12)

# ---- Det ----
case("det_2x2", "Det", [rand(2, 2, seed=50)], opset=22)
case("det_batch", "Det", [rand(3, 2, 4, 4, seed=51, low=-2, high=2)], opset=22, rtol=1e-4, atol=1e-5)
sing = np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], dtype=np.float32)
case("det_singular", "Det", [sing], opset=22)
case("det_pivot", "Det", [np.array([[0, 1, 2], [3, 0, 1], [4, 5, 0]], dtype=np.float32)], opset=22)
case("det_1x1", "Det", [rand(4, 1, 1, seed=52)], opset=22)
case("det_6x6", "Det", [rand(2, 6, 6, seed=53)], opset=22, rtol=1e-4, atol=1e-6)  # ORT has no double Det

# ---- Swish ----
case("swish_default", "Swish", [rand(3, 17, low=-8, high=8, seed=60)], opset=24)
case("swish_alpha", "Swish", [rand(4, 5, low=-8, high=8, seed=61)], attrs={"alpha": 1.702}, opset=24)
case("swish_f16", "Swish", [rand(2, 9, dtype=np.float16, low=-6, high=6, seed=62)], attrs={"alpha": 0.5}, opset=24,
     rtol=1e-2, atol=5e-3)
