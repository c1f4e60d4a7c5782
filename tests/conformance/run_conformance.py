#!/usr/bin/env python3
"""Run netrun-conformance on the ONNX node tests of the installed onnx package (ctest conformance.<backend>).

Finds onnx/backend/test/data/node next to the onnx module of this Python; if the wheel lacks the data, generates
it once with onnx's console script `backend-test-tools generate-data -o DIR` (into --cache). Everything after
the known options is passed to netrun-conformance unchanged.
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def node_test_dir(cache):
    try:
        import onnx
    except ImportError:
        sys.exit("run_conformance: the onnx Python package is not installed (pip install -r tests/requirements.txt)")
    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if os.path.isdir(shipped) and any(os.path.isfile(os.path.join(shipped, d, "model.onnx"))
                                      for d in os.listdir(shipped)):
        return shipped
    generated = os.path.join(cache, "node")
    if os.path.isdir(generated) and os.listdir(generated):
        return generated
    # The wheel has no test data: generate it (writes DIR/node, DIR/simple, ...).
    tool = shutil.which("backend-test-tools") or os.path.join(os.path.dirname(sys.executable), "backend-test-tools")
    cmd = [tool] if os.path.exists(tool) else [sys.executable, "-m", "onnx.backend.test.cmd_tools"]
    cmd += ["generate-data", "-o", cache]
    print("run_conformance: onnx %s ships no node tests; generating them: %s" % (onnx.__version__, " ".join(cmd)),
          flush=True)
    subprocess.run(cmd, check=True)
    if not os.path.isdir(generated):
        sys.exit("run_conformance: %s did not produce %s" % (" ".join(cmd), generated))
    return generated


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tool", required=True, help="path of the netrun-conformance binary")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--cache", default=os.path.join(os.getcwd(), "onnx-node-tests"),
                    help="where to generate the node tests when the onnx wheel lacks them")
    ap.add_argument("--print-dir", action="store_true", help="only print the node test folder")
    args, rest = ap.parse_known_args()
    node_dir = node_test_dir(os.path.abspath(args.cache))
    if args.print_dir:
        print(node_dir)
        return 0
    cmd = [args.tool, "--backend", args.backend, "--skip", os.path.join(HERE, "skip.txt")] + rest + [node_dir]
    print("run_conformance: " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
