#!/usr/bin/env python3
"""Build the small classifier used for the placement pictures of docs/cli.md.

usage: make_placement_example.py OUT.onnx
Then:  netrun OUT.onnx --backend cuda,cpu --dot placement.dot --iterations 1 -q
       dot -Tsvg placement.dot -o docs/images/placement_cuda_cpu.svg
ArgMax has no CUDA kernel, so on cuda,cpu it falls back to the CPU and a copy appears at the border.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def w(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)


nodes = [
    helper.make_node("Conv", ["image", "c1w", "c1b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "c2w", "c2b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
    helper.make_node("Gemm", ["f", "fcw", "fcb"], ["logits"], name="fc", transB=1),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    helper.make_node("ArgMax", ["probs"], ["label"], name="argmax", axis=1, keepdims=0),
]
graph = helper.make_graph(
    nodes, "tiny_classifier",
    [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 32, 32])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10]),
     helper.make_tensor_value_info("label", TensorProto.INT64, ["N"])],
    [w("c1w", 8, 3, 3, 3), w("c1b", 8), w("c2w", 16, 8, 3, 3), w("c2b", 16), w("fcw", 10, 16), w("fcb", 10)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="netrun-docs")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1] if len(sys.argv) > 1 else "tiny_classifier.onnx")
