#!/usr/bin/env python3
"""The rules for ops that plugins define (ABI 1.9), with the test plugins of tests/plugins/op_plugin.c:
  - a plugin's op runs on its kernel, wherever the backend list leaves it out (unless strict);
  - two plugins defining the same op: a model using it fails to load, and the error names both;
  - a plugin redefining one of netrun's ops (Relu) is listed as unavailable, naming the op;
  - a malformed definition (no infer) makes its plugin unavailable, naming the row;
  - an op nobody defines fails with a message that says so;
  - --support-matrix lists a plugin's op under that plugin;
  - a plugin built for ABI 1.8 (struct_size before op_defs) loads and runs, and what lies past its struct_size
    (an op_defs pointer) is not read.

usage: test_plugin_op_rules.py --netrun PATH --plugins DIR --backends DIR"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

failures = []


def check(cond, what, detail=""):
    print(f"{'ok  ' if cond else 'FAIL'} {what}")
    if not cond:
        failures.append(what)
        print("     " + detail.strip().replace("\n", "\n     ")[-1500:])


def model(path, op):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    r = helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node(op, ["x"], ["t"], domain="com.example.test"), helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("Neg", ["t"], ["y"])]
    g = helper.make_graph(nodes, "g", [x], [y, r])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example.test", 1)])
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--backends", required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="netrun-op-rules-")
    twice, nothing = os.path.join(work, "twice.onnx"), os.path.join(work, "nothing.onnx")
    model(twice, "Twice")
    model(nothing, "Nothing")
    xv = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    np.save(os.path.join(work, "x.npy"), xv)

    def run(path_dirs, *args):
        env = dict(os.environ, NETRUN_BACKEND_PATH=":".join([a.backends] + [os.path.join(a.plugins, d) for d in path_dirs]))
        return subprocess.run([a.netrun, *args], capture_output=True, text=True, timeout=120, env=env)

    # one definer: runs, on its own kernel, though the list names only the CPU
    out = os.path.join(work, "out")
    r = run(["opdefa"], twice, "--backend", "cpu", "--input", f"x={work}/x.npy", "--output-dir", out, "--quiet",
            "--iterations", "1", "--warmup", "0")
    check(r.returncode == 0, "a plugin's op runs (backend list 'cpu')", r.stderr)
    if r.returncode == 0:
        check(np.array_equal(np.load(f"{out}/y.npy"), -2 * xv) and np.array_equal(np.load(f"{out}/r.npy"),
              np.maximum(2 * xv, 0)), "its outputs are the kernel's (2x, then netrun's ops on the CPU)")
    r = run(["opdefa"], twice, "--explain", "--backend", "cpu")
    check("(Twice) -> opdefa" in r.stdout, "--explain places the op on its definer", r.stdout + r.stderr)
    r = run(["opdefa"], twice, "--backend", "cpu", "--strict")
    check(r.returncode != 0 and "Twice" in r.stderr, "--strict with a list that leaves the definer out fails", r.stderr)
    r = run(["opdefa"], "--support-matrix", "--format", "csv")
    check(any(l.startswith("com.example.test,Twice,1,opdefa,") for l in r.stdout.splitlines()),
          "--support-matrix lists the op as known, under its plugin", r.stdout[-800:])

    # two definers
    r = run(["opdefa", "opdefb"], twice, "--backend", "cpu")
    check(r.returncode != 0 and "opdefa" in r.stderr and "opdefb" in r.stderr and "two plugins" in r.stderr,
          "two plugins defining one op: the model fails, naming both", r.stderr)

    # a plugin redefining netrun's Relu
    r = run(["opshadow"], "--backends")
    line = r.stdout[r.stdout.find("opshadow"):][:400]
    check("opshadow" in r.stdout and "no " in line.split("\n")[0] and "Relu" in line and "netrun defines itself" in line,
          "a plugin redefining Relu is unavailable, naming the op", r.stdout)

    # a definition without infer
    r = run(["opbad"], "--backends")
    line = r.stdout[r.stdout.find("opbad"):][:300]
    check(line.split()[1:2] == ["no"] and "Twice" in line and "no infer function" in line,
          "a definition without infer: the plugin is unavailable, naming the row", r.stdout)

    # nobody defines it
    r = run(["opdefa"], nothing, "--backend", "cpu")
    check(r.returncode != 0 and "Nothing" in r.stderr and "nor defined by a plugin" in r.stderr,
          "an op no one defines: the error says so", r.stderr)
    # a plugin of ABI 1.8: available, runs Relu; its Twice definition lies past its struct_size and is not seen
    r = run(["oldabi"], "--backends")
    check(any(l.split()[:2] == ["oldabi", "yes"] for l in r.stdout.splitlines()), "an ABI 1.8 plugin is available",
          r.stdout)
    r = run(["oldabi"], twice, "--backend", "cpu")
    check(r.returncode != 0 and "nor defined by a plugin" in r.stderr,
          "an ABI 1.8 plugin's fields past its struct_size are not read (Twice stays unknown)", r.stderr)
    relu = os.path.join(work, "relu.onnx")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), relu)
    r = run(["oldabi"], relu, "--backend", "oldabi", "--strict", "--input", f"x={work}/x.npy", "--output-dir", out,
            "--quiet", "--iterations", "1", "--warmup", "0")
    check(r.returncode == 0 and np.array_equal(np.load(f"{out}/y.npy"), np.maximum(xv, 0)),
          "an ABI 1.8 plugin runs its op (Relu, --strict)", r.stderr)
    print("FAILED: " + "; ".join(failures) if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
