#!/usr/bin/env python3
"""Write examples/tiny_cnn.onnx: a small CNN image classifier with fixed, seeded random weights.

usage: make_example_model.py [OUT.onnx]      (default: tiny_cnn.onnx next to this script)

The weights are not trained: the model is for trying netrun out and for smoke tests, not for
classifying anything. Rerunning the script writes the same bytes (numpy RNG seed 20240601).
With onnxruntime installed it also checks that onnxruntime runs the model.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240601


def build():
    rng = np.random.default_rng(SEED)
    inits, nodes = [], []

    def w(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    def conv_w(cout, cin, k):
        return rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=f"/{out}/{op}", **attrs))
        return out

    # Conv 3x3 (3 -> 16) + BatchNorm + Relu
    x = node("Conv", ["image", w("conv1.weight", conv_w(16, 3, 3))], "conv1",
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    x = node("BatchNormalization", [x, w("bn1.weight", rng.uniform(0.8, 1.2, 16)),
                                    w("bn1.bias", rng.standard_normal(16) * 0.1),
                                    w("bn1.running_mean", rng.standard_normal(16) * 0.1),
                                    w("bn1.running_var", rng.uniform(0.5, 1.5, 16))], "bn1", epsilon=1e-5)
    x = node("Relu", [x], "relu1")
    # depthwise 3x3 (group = channels) + Relu, then MaxPool 2x2 -> 16x16
    x = node("Conv", [x, w("dw.weight", conv_w(16, 1, 3)), w("dw.bias", rng.standard_normal(16) * 0.05)],
             "dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16)
    x = node("Relu", [x], "relu2")
    x = node("MaxPool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
    # pointwise 1x1 (16 -> 32) + Relu
    x = node("Conv", [x, w("pw.weight", conv_w(32, 16, 1)), w("pw.bias", rng.standard_normal(32) * 0.05)],
             "pw", kernel_shape=[1, 1])
    x = node("Relu", [x], "relu3")
    x = node("GlobalAveragePool", [x], "gap")
    x = node("Flatten", [x], "flatten", axis=1)
    x = node("Gemm", [x, w("fc.weight", rng.standard_normal((10, 32)) / np.sqrt(32)),
                      w("fc.bias", rng.standard_normal(10) * 0.05)], "fc", transB=1)
    nodes.append(helper.make_node("Softmax", [x], ["probabilities"], name="/softmax/Softmax", axis=1))

    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="netrun-examples", producer_version="1")
    model.ir_version = 8
    model.doc_string = "tiny_cnn: untrained 10-class CNN classifier (seeded random weights) for netrun examples"
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "tiny_cnn.onnx")
    model = build()
    onnx.save(model, out)
    size = os.path.getsize(out)
    if size > 100 * 1024:
        print(f"{out}: {size} bytes, over the 100 KB budget", file=sys.stderr)
        return 1
    msg = f"wrote {out} ({size} bytes)"
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        img = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
        p = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"image": img})[0]
        if p.shape != (1, 10) or abs(float(p.sum()) - 1.0) > 1e-5:
            print(f"onnxruntime gave unexpected output {p}", file=sys.stderr)
            return 1
        msg += f"; onnxruntime: class {int(p.argmax())} p={float(p.max()):.3f} on a random image"
    print(msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
