"""Fixtures of the Python package's tests: small ONNX models written with onnx.helper.

The tests import the `netrun` that PYTHONPATH points at: the build tree's (build/python, as ctest sets it) or an
installed wheel's."""
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import netrun

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def make_model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


@pytest.fixture(scope="session")
def add_model():
    """y = x + b (b = 1..16), z = Relu(y); x: float32 [1, 16]."""
    b = np.arange(1, 17, dtype=np.float32)
    return make_model([helper.make_node("Add", ["x", "b"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
                      [vi("x", TensorProto.FLOAT, [1, 16])],
                      [vi("y", TensorProto.FLOAT, [1, 16]), vi("z", TensorProto.FLOAT, [1, 16])],
                      [helper.make_tensor("b", TensorProto.FLOAT, [16], b)])


@pytest.fixture(scope="session")
def batch_model():
    """y = x * 2 with a symbolic batch: x float32 ["batch", 4]; and n = x int64 ["batch"] + 1."""
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    one = helper.make_tensor("one", TensorProto.INT64, [], [1])
    return make_model([helper.make_node("Mul", ["x", "two"], ["y"]), helper.make_node("Add", ["n", "one"], ["m"])],
                      [vi("x", TensorProto.FLOAT, ["batch", 4]), vi("n", TensorProto.INT64, ["batch"])],
                      [vi("y", TensorProto.FLOAT, ["batch", 4]), vi("m", TensorProto.INT64, ["batch"])],
                      [two, one])


@pytest.fixture(scope="session")
def add_path(add_model, tmp_path_factory):
    p = tmp_path_factory.mktemp("models") / "add.onnx"
    p.write_bytes(add_model)
    return str(p)


@pytest.fixture
def add_session(add_model):
    with netrun.Session(add_model, backends="cpu", threads=1) as s:
        yield s
