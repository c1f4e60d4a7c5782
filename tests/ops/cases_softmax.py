"""Op cases: Softmax, LogSoftmax, Hardmax (compared with onnxruntime)."""
import numpy as np
import onnx

import optest
from optest import rand




def case(name, op, inputs, **kw):
    c = optest.node_case(name, op, inputs, **kw)
    return c


CASES = []
x4 = rand(2, 3, 4, 5, low=-5, high=5, seed=1)
ties = rand(3, 4, 6, dtype=np.int32, low=0, high=2, seed=2).astype(np.float32)  # Hardmax: first max wins
for op in ["Softmax", "LogSoftmax", "Hardmax"]:
    # opset 13+: one axis (default -1)
    CASES.append(case(f"{op}_default13", op, [x4], opset=13))
    for axis in [0, 1, 2, 3, -1, -3]:
        CASES.append(case(f"{op}_ax{axis}_13".replace("-", "m"), op, [x4], attrs={"axis": axis}, opset=13))
    # opset < 13: coerced to 2-D (axis default 1)
    CASES.append(case(f"{op}_default11", op, [x4], opset=11))
    for axis in [0, 2, 3, -1, -2]:
        CASES.append(case(f"{op}_ax{axis}_11".replace("-", "m"), op, [x4], attrs={"axis": axis}, opset=11))
    CASES.append(case(f"{op}_default1", op, [x4], opset=7))
    # ties
    CASES.append(case(f"{op}_ties_13", op, [ties], attrs={"axis": 1}, opset=13))
    CASES.append(case(f"{op}_ties_last_13", op, [ties], opset=13))
    # dtypes
    CASES.append(case(f"{op}_f16", op, [rand(3, 7, 5, dtype=np.float16, low=-4, high=4, seed=3)], opset=13,
                      rtol=1e-2, atol=5e-3))
    CASES.append(case(f"{op}_f16_mid", op, [rand(3, 7, 5, dtype=np.float16, low=-4, high=4, seed=3)],
                      attrs={"axis": 1}, opset=13, rtol=1e-2, atol=5e-3))
    if op != "Hardmax":  # onnxruntime has no double Hardmax to compare with
        CASES.append(case(f"{op}_f64", op, [rand(3, 7, 5, dtype=np.float64, low=-4, high=4, seed=4)], opset=13,
                          rtol=1e-9, atol=1e-12))
        CASES.append(case(f"{op}_f64_mid", op, [rand(3, 7, 5, dtype=np.float64, low=-4, high=4, seed=4)],
                          attrs={"axis": 0}, opset=13, rtol=1e-9, atol=1e-12))
    # large magnitudes: stable only if the max is subtracted
    CASES.append(case(f"{op}_large", op, [rand(4, 33, low=-500, high=500, seed=5)], opset=13))
    # long rows and a wide middle axis (several blocks of inner positions)
    CASES.append(case(f"{op}_long_rows", op, [rand(16, 3000, low=-3, high=3, seed=6)], opset=13, atol=1e-6))
    CASES.append(case(f"{op}_wide_mid", op, [rand(2, 10, 300, low=-3, high=3, seed=7)], attrs={"axis": 1},
                      opset=13))
    CASES.append(case(f"{op}_1d", op, [rand(9, seed=8)], opset=13))
