#!/usr/bin/env python3
"""Run netrun-conformance on the ONNX node tests of the installed onnx package (ctest conformance.<backend>).

Uses onnx/backend/test/data/node next to the onnx module of this Python. Wheels that ship no test data (onnx
1.23 on) get them written once from onnx's own test cases (onnx.backend.test.case.node, what onnx's data was
made from) into --cache/node-<onnx version>, so a cache never outlives the onnx it came from. Says which onnx
the tests came from. Everything after the known options is passed to netrun-conformance unchanged.
"""
import argparse
import fcntl
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def write_node_tests(out):
    """Each node test case of the installed onnx as model.onnx + test_data_set_N/{input,output}_K.pb, written by
    onnx's own writer (backend-test-tools generate-data, which from 1.23 writes only the model tests) fed with the
    node cases; into out (through a temporary folder, renamed when complete)."""
    import argparse as ap
    import warnings
    from onnx.backend.test import cmd_tools
    from onnx.backend.test.case import node
    tmp = "%s.partial-%d" % (out, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    model_cases = cmd_tools.model_test.collect_testcases
    cmd_tools.model_test.collect_testcases = lambda *a, **k: node.collect_testcases(None)
    try:
        with warnings.catch_warnings():  # the cases' own numpy overflow notes, expected by them
            warnings.simplefilter("ignore", RuntimeWarning)
            cmd_tools.generate_data(ap.Namespace(output=tmp))
    finally:
        cmd_tools.model_test.collect_testcases = model_cases
    os.rename(os.path.join(tmp, "node"), out)
    shutil.rmtree(tmp, ignore_errors=True)


def node_test_dir(cache):
    carried = os.path.join(cache, "node")  # unpacked from tools/gpu/pack-deps.sh's node-tests.tar.gz
    if os.path.isdir(carried) and os.listdir(carried):
        print("run_conformance: the node tests in %s (carried; pack-deps.sh names their onnx version)" % carried,
              file=sys.stderr, flush=True)
        return carried
    try:
        import onnx
    except ImportError:
        sys.exit("run_conformance: the onnx Python package is not installed (pip install -r tests/requirements.txt)")
    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if os.path.isdir(shipped) and any(os.path.isfile(os.path.join(shipped, d, "model.onnx"))
                                      for d in os.listdir(shipped)):
        print("run_conformance: the node tests of onnx %s (shipped in the wheel)" % onnx.__version__, file=sys.stderr,
              flush=True)
        return shipped
    generated = os.path.join(cache, "node-" + onnx.__version__)
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w") as lock:  # ctest runs several backends' runs at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (os.path.isdir(generated) and os.listdir(generated)):
            print("run_conformance: onnx %s ships no node tests; writing them from its test cases into %s" %
                  (onnx.__version__, generated), file=sys.stderr, flush=True)
            write_node_tests(generated)
    print("run_conformance: the node tests of onnx %s (written from its test cases)" % onnx.__version__,
          file=sys.stderr, flush=True)
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
