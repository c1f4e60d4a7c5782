#!/usr/bin/env python3
"""Run op test cases through the netrun CLI (CPU backend) and compare with onnxruntime.

usage: run_op_tests.py --netrun PATH [--family NAME] [--filter SUBSTRING] [--keep DIR] [--backend cpu]
Prints one line per case and a last line 'N passed, N failed'. Exit 1 when any case fails.
"""
import argparse
import glob
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import optest  # noqa: E402  (settings_args)


def load_family(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, HERE)
    spec.loader.exec_module(mod)
    return mod.CASES


def compare(name, got, want, rtol, atol):
    if got.shape != want.shape:
        return f"{name}: shape {got.shape} != expected {want.shape}"
    if got.dtype != want.dtype:
        return f"{name}: dtype {got.dtype} != expected {want.dtype}"
    if want.dtype.kind in "fc":
        g, w = got.astype(np.float64), want.astype(np.float64)
        same_nan = np.isnan(g) == np.isnan(w)
        if not same_nan.all():
            return f"{name}: NaN pattern differs"
        ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        if not ok.all():
            idx = np.unravel_index(np.argmax(~ok), ok.shape)
            err = np.nanmax(np.abs(g - w))
            return f"{name}: max abs err {err:.3g}; first bad at {idx}: got {g[idx]!r}, want {w[idx]!r}"
        return None
    if atol >= 1 and want.dtype.kind in "iu":  # an integer tolerance (requantization rounding ties)
        err = np.abs(got.astype(np.int64) - want.astype(np.int64))
        if got.size and err.max() > atol:
            idx = np.unravel_index(np.argmax(err), got.shape)
            return f"{name}: off by {err.max()} (tolerance {atol:g}) at {idx}: got {got[idx]!r}, want {want[idx]!r}"
        return None
    if not np.array_equal(got, want):
        idx = np.unravel_index(np.argmax(got != want), got.shape) if got.size else ()
        return f"{name}: values differ; first at {idx}: got {got[idx]!r}, want {want[idx]!r}"
    return None


def run_case(case, netrun, backend, workdir):
    d = os.path.join(workdir, case.name)
    os.makedirs(d, exist_ok=True)
    mpath = os.path.join(d, "model.onnx")
    onnx.save(case.model, mpath)
    # a case may name an equivalent model for onnxruntime (an op it runs only on GPUs, or under another domain)
    ref = getattr(case, "ref_model", None)
    sess = ort.InferenceSession(ref.SerializeToString() if ref is not None else mpath,
                                providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    want = dict(zip(out_names, sess.run(None, case.inputs)))
    cmd = [netrun, mpath, "--backend", backend, "--warmup", "0", "--iterations", "1", "--quiet",
           "--output-dir", os.path.join(d, "out")] + optest.settings_args(case, backend)
    for nm, arr in case.inputs.items():
        p = os.path.join(d, f"in_{nm}.npy")
        np.save(p, arr)
        cmd += ["--input", f"{nm}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return f"netrun exit {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}"
    for nm in (case.outputs or out_names):
        p = os.path.join(d, "out", f"{nm}.npy")
        if not os.path.exists(p):
            return f"output {nm} not written"
        msg = compare(nm, np.load(p), want[nm], case.rtol, case.atol)
        if msg:
            return msg
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--family", default=None, help="run only cases_<family>.py")
    ap.add_argument("--filter", default=None)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--keep", default=None, help="keep the case folders here")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(HERE, "cases_*.py")))
    if a.family:
        files = [f for f in files if os.path.basename(f) == f"cases_{a.family}.py"]
        if not files:
            sys.exit(f"no cases_{a.family}.py")
    workdir = a.keep or tempfile.mkdtemp(prefix="netrun-ops-")
    passed = failed = 0
    for f in files:
        fam = os.path.basename(f)[6:-3]
        for case in load_family(f):
            if a.filter and a.filter not in case.name:
                continue
            try:
                msg = run_case(case, a.netrun, a.backend, os.path.join(workdir, fam))
            except Exception as e:  # a broken case is a failure, not a crash of the run
                msg = f"{type(e).__name__}: {e}"
            if msg:
                failed += 1
                print(f"FAIL {fam}.{case.name}: {msg}")
            else:
                passed += 1
                print(f"ok   {fam}.{case.name}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
