#!/usr/bin/env python3
"""Write scaled_relu.onnx: x (1, 8) -> com.example.hello.ScaledRelu(alpha=0.5) -> Neg -> y, a model that only loads
where a plugin defines ScaledRelu (hello_backend.c does)."""
import os

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
nodes = [helper.make_node("ScaledRelu", ["x"], ["t"], name="scaled_relu", domain="com.example.hello", alpha=0.5),
         helper.make_node("Neg", ["t"], ["y"], name="neg")]
m = helper.make_model(helper.make_graph(nodes, "scaled_relu", [x], [y]), producer_name="netrun-examples",
                      opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example.hello", 1)])
m.ir_version = 8
onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scaled_relu.onnx"))
