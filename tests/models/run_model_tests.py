#!/usr/bin/env python3
"""Run the end-to-end model tests: each model built by build_models.py through the netrun CLI,
every output compared with onnxruntime's reference.

usage: run_model_tests.py --netrun PATH --models OUTDIR [--filter NAME] [--backend cpu] [--keep DIR]
                          [--rtol 1e-4] [--atol 1e-4] [--timeout 300] [--arg=NETRUN_ARG ...]
--filter runs the model of exactly that name if there is one, else every model whose name contains it.

A model directory holds model.onnx, inputs/ and expected/ (the main case) and optional case
sub-directories (e.g. batch2/inputs, batch2/expected) that feed other values of the symbolic dims.
Prints one line per model (max abs error per output and case) and a last line 'N passed, N failed'.
Exit 1 when any model fails (or none was found).
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def cases_of(model_dir):
    """(case name, dir) for the main case and every sub-directory that has inputs/ and expected/."""
    out = []
    if os.path.isdir(os.path.join(model_dir, "inputs")):
        out.append(("main", model_dir))
    for d in sorted(glob.glob(os.path.join(model_dir, "*", ""))):
        d = d.rstrip("/")
        if os.path.isdir(os.path.join(d, "inputs")) and os.path.isdir(os.path.join(d, "expected")):
            out.append((os.path.basename(d), d))
    return out


def compare(got, want, rtol, atol):
    """(error message or None, max abs err)"""
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}", float("nan")
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}", float("nan")
    if want.dtype.kind not in "fc":
        if not np.array_equal(got, want):
            idx = tuple(int(i) for i in np.unravel_index(np.argmax(got != want), got.shape))
            return f"values differ; first at {idx}: got {got[idx]}, want {want[idx]}", float("nan")
        return None, 0.0
    g, w = got.astype(np.float64), want.astype(np.float64)
    if g.size == 0:
        return None, 0.0
    if not (np.isnan(g) == np.isnan(w)).all():
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(np.isnan(g) != np.isnan(w)), g.shape))
        return f"NaN pattern differs; first at {idx}: got {g[idx]:.7g}, want {w[idx]:.7g}", float("nan")
    err = float(np.nanmax(np.abs(g - w))) if np.isfinite(g).any() else 0.0
    ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(~ok), ok.shape))
        n_bad = int((~ok).sum())
        return (f"max abs err {err:.3g}, {n_bad}/{ok.size} elements out of tolerance; first at {idx}: "
                f"got {g[idx]:.7g}, want {w[idx]:.7g}"), err
    return None, err


def run_case(netrun, backend, model, case_dir, out_dir, rtol, atol, timeout, extra=()):
    """Returns (error or None, {output: max abs err})."""
    inputs = sorted(glob.glob(os.path.join(case_dir, "inputs", "*.npy")))
    expected = sorted(glob.glob(os.path.join(case_dir, "expected", "*.npy")))
    if not inputs or not expected:
        return "no inputs or expected outputs", {}
    os.makedirs(out_dir, exist_ok=True)
    cmd = [netrun, model, "--backend", backend, "--output-dir", out_dir, "--warmup", "0",
           "--iterations", "2", "--quiet"] + list(extra)
    for p in inputs:
        cmd += ["--input", f"{os.path.basename(p)[:-4]}={p}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"netrun timed out after {timeout}s", {}
    if r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip())[-1500:]
        return f"netrun exit {r.returncode}: {msg or '(no output)'}", {}
    errs, first_bad = {}, None
    for p in expected:
        nm = os.path.basename(p)[:-4]
        gp = os.path.join(out_dir, nm.replace("/", "_") + ".npy")  # the CLI maps '/' in names to '_'
        if not os.path.exists(gp):
            first_bad = first_bad or f"output {nm} not written to {out_dir}"
            continue
        try:
            got = np.load(gp)
        except Exception as e:  # a malformed .npy is a netrun failure, not a crash of the runner
            first_bad = first_bad or f"output {nm}: cannot read {gp}: {e}"
            continue
        msg, err = compare(got, np.load(p), rtol, atol)
        errs[nm] = err
        if msg and not first_bad:
            first_bad = f"{nm}: {msg}"
    return first_bad, errs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--models", required=True, help="the OUTDIR of build_models.py")
    ap.add_argument("--filter", default="", help="run only models whose name contains this")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--keep", help="keep netrun's outputs under this directory")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per netrun run")
    ap.add_argument("--skip", default="", help="comma-separated: leave out models whose name starts with one of these")
    ap.add_argument("--arg", action="append", default=[], metavar="ARG",
                    help="extra argument for netrun, repeatable (e.g. --arg=--threads --arg=1)")
    a = ap.parse_args()

    models = sorted(d for d in glob.glob(os.path.join(a.models, "*"))
                    if os.path.isfile(os.path.join(d, "model.onnx")) and a.filter in os.path.basename(d))
    exact = [d for d in models if os.path.basename(d) == a.filter]
    models = exact or models  # --filter superres means superres, not also superres_init_inputs
    skip = tuple(p for p in a.skip.split(",") if p)
    if skip:
        left = [d for d in models if os.path.basename(d).startswith(skip)]
        models = [d for d in models if d not in left]
        print(f"left out (--skip): {', '.join(os.path.basename(d) for d in left) or 'none'}")
    if not models:
        print(f"no models matching '{a.filter}' under {a.models}")
        print("0 passed, 1 failed")
        return 1
    work = a.keep or tempfile.mkdtemp(prefix="netrun-models-")
    passed = failed = 0
    try:
        for md in models:
            name = os.path.basename(md)
            cases = cases_of(md)
            parts, bad = [], []
            if not cases:
                bad.append("no test cases")
            for cname, cdir in cases:
                err, errs = run_case(a.netrun, a.backend, os.path.join(md, "model.onnx"), cdir,
                                     os.path.join(work, name, cname), a.rtol, a.atol, a.timeout, a.arg)
                if errs:
                    parts.append(f"{cname}: " + ", ".join(f"{k} {v:.2g}" for k, v in errs.items()))
                if err:
                    bad.append(f"[{cname}] {err}")
            detail = "max abs err " + "; ".join(parts) if parts else ""
            if bad:
                failed += 1
                print(f"FAIL {name}: " + " | ".join(bad) + (f"  ({detail})" if detail else ""))
            else:
                passed += 1
                print(f"ok   {name}: {detail}")
            sys.stdout.flush()
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
