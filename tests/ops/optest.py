"""Helpers for op test cases: build one-node ONNX models and declare their inputs.

A family file cases_<family>.py defines CASES: a list of Case objects. run_op_tests.py computes the
reference outputs with onnxruntime and compares netrun's CPU backend against them.
"""
import numpy as np
import onnx
from onnx import helper, TensorProto

DEFAULT_OPSET = 17


class Case:
    def __init__(self, name, model, inputs, rtol=1e-4, atol=1e-5, outputs=None):
        self.name = name          # unique within the family, [A-Za-z0-9_]+
        self.model = model        # onnx.ModelProto
        self.inputs = inputs      # {input name: np.ndarray}
        self.rtol = rtol
        self.atol = atol
        self.outputs = outputs    # None = compare every graph output
        self.settings = {}        # backend settings {"cuda.key": "value"}: passed as --set to runs on that backend


def np_to_elem(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def node_case(name, op_type, inputs, outputs=1, attrs=None, initializers=None, opset=DEFAULT_OPSET,
              output_names=None, rtol=1e-4, atol=1e-5, domain="", input_names=None):
    """One-node model. inputs: list of np.ndarray (graph inputs) in node input order; an entry may be None
    (absent optional input) or ('const', array) for an initializer. outputs: count of outputs.
    Output shapes are left for inference (declared without shape)."""
    attrs = attrs or {}
    node_inputs, graph_inputs, feeds, inits = [], [], {}, list(initializers or [])
    for i, x in enumerate(inputs):
        if x is None:
            node_inputs.append("")
            continue
        nm = input_names[i] if input_names else f"in{i}"
        if isinstance(x, tuple) and x[0] == "const":
            arr = np.asarray(x[1])
            inits.append(onnx.numpy_helper.from_array(arr, nm))
        else:
            arr = np.asarray(x)
            graph_inputs.append(helper.make_tensor_value_info(nm, np_to_elem(arr.dtype), list(arr.shape)))
            feeds[nm] = arr
        node_inputs.append(nm)
    out_names = output_names or [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op_type, node_inputs, out_names, domain=domain or None, **attrs)
    graph_outputs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in out_names if o]
    graph = helper.make_graph([node], name, graph_inputs, graph_outputs, initializer=inits)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="netrun-tests")
    model.ir_version = 8
    fix_output_types(model)
    return Case(name, model, feeds, rtol=rtol, atol=atol)


def fix_output_types(model):
    """node_case declares outputs without a type, which onnxruntime refuses: fill in the element types from
    onnx shape inference (shapes stay undeclared so netrun infers them itself)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        return model
    types = {v.name: v.type.tensor_type.elem_type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in model.graph.output:
        if out.type.tensor_type.elem_type == 0 and types.get(out.name):
            out.type.tensor_type.elem_type = types[out.name]
    return model


def rand(*shape, dtype=np.float32, low=-1.0, high=1.0, seed=None):
    rng = np.random.default_rng(seed if seed is not None else abs(hash(shape)) % (2**32))
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    return rng.uniform(low, high, size=shape).astype(dtype)


def settings_args(case, backends):
    """--set arguments for the case's settings whose backend (the key's prefix) is among backends ("cuda,cpu")."""
    names = set(b.strip() for b in backends.split(","))
    args = []
    for k, v in sorted(getattr(case, "settings", {}).items()):
        if k.split(".", 1)[0] in names:
            args += ["--set", f"{k}={v}"]
    return args
