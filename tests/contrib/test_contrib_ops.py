#!/usr/bin/env python3
"""The contrib plugin's ops against onnxruntime: each case of cases_contrib.py runs through the netrun CLI with the
backend list 'cpu' (the plugin that defines the op is added by itself), its outputs are compared with
onnxruntime's, and `--explain` must show the op's node placed on the contrib plugin.

usage: test_contrib_ops.py --netrun PATH [--filter SUBSTRING]"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ops"))
import run_op_tests  # noqa: E402

sys.path.insert(0, HERE)
import cases_contrib  # noqa: E402


def placed_on_contrib(netrun, model_path):
    r = subprocess.run([netrun, model_path, "--explain", "--backend", "cpu"], capture_output=True, text=True, timeout=120)
    return r.returncode == 0 and "-> contrib" in r.stdout, (r.stdout + r.stderr)[-400:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--filter", default=None)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="netrun-contrib-")
    passed = failed = 0
    ops = set()
    for case in cases_contrib.CASES:
        if a.filter and a.filter not in case.name:
            continue
        try:
            msg = run_op_tests.run_case(case, a.netrun, "cpu", work)
            if not msg:
                ok, out = placed_on_contrib(a.netrun, os.path.join(work, case.name, "model.onnx"))
                msg = None if ok else f"not placed on the contrib plugin: {out}"
        except Exception as e:  # a broken case is a failure, not a crash of the run
            msg = f"{type(e).__name__}: {e}"
        if msg:
            failed += 1
            print(f"FAIL {case.name}: {msg}")
        else:
            passed += 1
            ops.add(case.model.graph.node[0].op_type)
            print(f"ok   {case.name}")
    # --support-matrix: every op the plugin defines is known to the runtime and listed under the contrib plugin
    if not a.filter:
        import csv
        import io
        r = subprocess.run([a.netrun, "--support-matrix", "--format", "csv"], capture_output=True, text=True, timeout=120)
        rows = [x for x in csv.DictReader(io.StringIO(r.stdout)) if x["backend"] == "contrib" and x["supported"] == "1"]
        listed = {(x["domain"], x["op"]) for x in rows if x["known_to_runtime"] == "1" and "float32" in x["dtypes"]}
        want = {(c.model.graph.node[0].domain, c.model.graph.node[0].op_type) for c in cases_contrib.CASES}
        if want <= listed:
            print(f"ok   --support-matrix lists the {len(want)} ops under contrib, known to the runtime")
            passed += 1
        else:
            print(f"FAIL --support-matrix: not listed under contrib: {sorted(want - listed)}")
            failed += 1
    print(f"{passed} passed, {failed} failed; ops covered: {', '.join(sorted(ops))}")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
