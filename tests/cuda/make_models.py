#!/usr/bin/env python3
"""Models for tests/cuda/test_cuda_runtime.c. dyn_gather.onnx: shapes known only at run time, so the CUDA backend
allocates during runs: y = Relu(Gather(x, Reshape(NonZero(x > 0), [-1]))) with x float32 [16]."""
import os
import sys

import onnx
from onnx import TensorProto, helper


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["pos"]),
        helper.make_node("NonZero", ["pos"], ["nz"]),
        helper.make_node("Reshape", ["nz", "flat"], ["idx"]),
        helper.make_node("Gather", ["x", "idx"], ["g"], axis=0),
        helper.make_node("Relu", ["g"], ["y"]),
    ]
    inits = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("flat", TensorProto.INT64, [1], [-1])]
    g = helper.make_graph(nodes, "dyn_gather", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out_dir, "dyn_gather.onnx"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
