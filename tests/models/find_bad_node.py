#!/usr/bin/env python3
"""Find the first node of a model whose output netrun computes wrongly (or cannot compute).

usage: find_bad_node.py --netrun PATH MODEL_DIR [--case main|batch2] [--backend cpu] [--keep DIR]

MODEL_DIR is one model directory written by build_models.py. Every intermediate tensor is exposed as
an extra graph output (through an Identity node named t<N>, so output file names stay plain), the
model is run by onnxruntime and by netrun, and tensors are compared in node order. Prints the first
node whose output differs (op type, node name, inputs, error) — or netrun's error when the exposed
model does not run at all.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_model_tests import compare  # noqa: E402


def expose(model):
    """Model with every node output also a graph output 't<N>'; returns (model, [(tname, node)])."""
    inferred = shape_inference.infer_shapes(model)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input)}
    g = model.graph
    graph_outs = {o.name for o in g.output}
    extra, nodes, mapping = [], [], []
    for node in g.node:
        if node.op_type == "Constant":
            continue
        for o in node.output:
            if not o or o in graph_outs or not types.get(o):
                continue
            t = f"t{len(mapping)}"
            nodes.append(helper.make_node("Identity", [o], [t], name=f"expose_{t}"))
            extra.append(helper.make_tensor_value_info(t, types[o], None))
            mapping.append((t, node, o))
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.node.extend(nodes)
    m.graph.output.extend(extra)
    return m, mapping


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("model_dir")
    ap.add_argument("--case", default="main")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--keep")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-4)
    a = ap.parse_args()
    case_dir = a.model_dir if a.case == "main" else os.path.join(a.model_dir, a.case)
    model = onnx.load(os.path.join(a.model_dir, "model.onnx"))
    exposed, mapping = expose(model)
    work = a.keep or tempfile.mkdtemp(prefix="netrun-bisect-")
    os.makedirs(work, exist_ok=True)
    mpath = os.path.join(work, "exposed.onnx")
    onnx.save(exposed, mpath)
    feeds = {os.path.basename(p)[:-4]: np.load(p) for p in glob.glob(os.path.join(case_dir, "inputs", "*.npy"))}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(mpath, so, providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    out = os.path.join(work, "out")
    cmd = [a.netrun, mpath, "--backend", a.backend, "--output-dir", out, "--warmup", "0", "--iterations", "1",
           "--quiet"]
    for k in feeds:
        cmd += ["--input", f"{k}={os.path.join(case_dir, 'inputs', k + '.npy')}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"netrun exit {r.returncode} on the exposed model: {(r.stderr or r.stdout).strip()[-2000:]}")
        return 1
    for t, node, o in mapping:
        p = os.path.join(out, f"{t}.npy")
        if not os.path.exists(p):
            print(f"{node.op_type} node '{node.name}': output {o} not written")
            return 1
        msg, err = compare(np.load(p), want[t], a.rtol, a.atol)
        if msg:
            print(f"first bad node: {node.op_type} '{node.name}' inputs {list(node.input)} -> {o}: {msg}")
            return 1
    print(f"all {len(mapping)} intermediate tensors match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
