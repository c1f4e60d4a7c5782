#!/usr/bin/env python3
"""Compare a backend (cuda, opencl, a plugin of yours) with the CPU backend on every op test case (tests/ops/cases_*.py).

usage: compare_backends.py --netrun PATH --backend NAME [--family NAME[,NAME...]] [--filter SUBSTRING] [--keep DIR]
                           [--rtol 1e-3] [--atol 1e-4] [--jobs N] [--require-device] [--min-passed N]
                           [--sample N [--full FAMILY,...]]

First reads `netrun --backends`. When the
backend is listed as unavailable (no device, no driver: a CI machine without OpenCL), it checks that a reason
is given, prints it and exits 0 (or 1 with --require-device). Without a line for it at all it fails: the
plugin was built but not found.

Otherwise, for each case: netrun runs the model with `--backend B --strict`. A case that strict mode refuses
(some node has no kernel on B for its dtype/attributes) counts as skipped, with the reason. A case that runs
is run again with `--backend cpu` and the outputs must agree within rtol/atol (the larger of the case's
tolerances and these). Prints one line per case and 'N passed, N failed, N skipped'; exit 1 on any failure
or when fewer than --min-passed cases passed.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(os.path.dirname(HERE), "ops")
sys.path.insert(0, OPS)
import optest  # noqa: E402  (settings_args)
import run_op_tests  # noqa: E402  (load_family, compare)


def backend_status(netrun, backend):
    """(available, text) of the backend's line of `netrun --backends`; None when there is no such line."""
    r = subprocess.run([netrun, "--backends"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"netrun --backends failed with exit {r.returncode}: {r.stderr.strip()}")
    for line in r.stdout.splitlines():
        m = re.match(r"^" + re.escape(backend) + r"\s+(yes|no)\s*(.*)$", line)
        if m:
            return m.group(1) == "yes", m.group(2).strip()
    return None


def run_netrun(netrun, model, inputs, out_dir, backend, strict, extra=()):
    cmd = [netrun, model, "--backend", backend, "--warmup", "0", "--iterations", "1", "--quiet",
           "--output-dir", out_dir] + (["--strict"] if strict else []) + list(extra)
    for nm, path in inputs.items():
        cmd += ["--input", f"{nm}={path}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def run_case(case, netrun, workdir, rtol, atol, backend):
    """None when it passed, ('skip', why) or ('fail', why)."""
    d = os.path.join(workdir, case.name)
    os.makedirs(d, exist_ok=True)
    mpath = os.path.join(d, "model.onnx")
    onnx.save(case.model, mpath)
    inputs = {}
    for nm, arr in case.inputs.items():
        p = os.path.join(d, f"in_{nm}.npy")
        np.save(p, arr)
        inputs[nm] = p
    r = run_netrun(netrun, mpath, inputs, os.path.join(d, "dev"), backend, True,
                   optest.settings_args(case, backend))
    if r.returncode != 0:
        err = (r.stderr or r.stdout).strip()
        if "strict mode" in err or "no backend supports" in err:
            return "skip", err.splitlines()[-1][-300:] if err else "refused"
        return "fail", f"{backend} run exit {r.returncode}: {err[-600:]}"
    r = run_netrun(netrun, mpath, inputs, os.path.join(d, "cpu"), "cpu", False)
    if r.returncode != 0:
        return "skip", f"cpu run failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}"
    names = sorted(os.listdir(os.path.join(d, "cpu")))
    if not names:
        return "fail", "no outputs written"
    for nm in names:
        got_p = os.path.join(d, "dev", nm)
        if not os.path.exists(got_p):
            return "fail", f"output {nm} not written by the {backend} run"
        want = np.load(os.path.join(d, "cpu", nm))
        msg = run_op_tests.compare(nm, np.load(got_p), want, max(rtol, case.rtol), max(atol, case.atol))
        if msg:
            return "fail", msg
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--family", default=None)
    ap.add_argument("--filter", default=None)
    ap.add_argument("--keep", default=None, help="keep the case folders here")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once")
    ap.add_argument("--backend", required=True)
    ap.add_argument("--require-device", action="store_true", help="fail when the backend is unavailable")
    ap.add_argument("--min-passed", type=int, default=1, help="fail when fewer cases pass")
    ap.add_argument("--sample", type=int, default=1,
                    help="run every Nth case of each family (not of the --full families): a quicker CI pass")
    ap.add_argument("--full", default="", help="families always run in full with --sample (comma list)")
    a = ap.parse_args()

    st = backend_status(a.netrun, a.backend)
    if st is None:
        print(f"FAIL: netrun --backends lists no {a.backend} backend (is NETRUN_BACKEND_PATH right?)")
        return 1
    available, text = st
    if not available:
        if not text:
            print(f"FAIL: {a.backend} is unavailable but no reason is given")
            return 1
        print(f"{a.backend} backend unavailable: {text}")
        if a.require_device:
            return 1
        print("no device: only the unavailable-with-reason check ran")
        return 0
    print(f"{a.backend} backend: {text}", flush=True)

    files = sorted(glob.glob(os.path.join(OPS, "cases_*.py")))
    if a.family:
        wanted = {f"cases_{x.strip()}.py" for x in a.family.split(",")}
        files = [f for f in files if os.path.basename(f) in wanted]
    full = set(x.strip() for x in a.full.split(",") if x.strip())
    workdir = a.keep or tempfile.mkdtemp(prefix=f"netrun-{a.backend}-cmp-")
    passed = failed = skipped = 0
    work = []
    for f in files:
        fam = os.path.basename(f)[6:-3]
        try:
            cases = run_op_tests.load_family(f)
        except Exception as e:  # a broken case file is reported, not fatal
            print(f"FAIL {fam}: cannot load cases: {type(e).__name__}: {e}")
            failed += 1
            continue
        picked = [c for c in cases if not a.filter or a.filter in c.name]
        if a.sample > 1 and fam not in full:
            picked = picked[::a.sample]
        work += [(fam, c) for c in picked]

    def one(item):
        fam, case = item
        try:
            return run_case(case, a.netrun, os.path.join(workdir, fam), a.rtol, a.atol, a.backend)
        except Exception as e:
            return ("fail", f"{type(e).__name__}: {e}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for (fam, case), res in zip(work, pool.map(one, work)):
            if res is None:
                passed += 1
                print(f"ok   {fam}.{case.name}", flush=True)
            elif res[0] == "skip":
                skipped += 1
                print(f"skip {fam}.{case.name}: {res[1]}", flush=True)
            else:
                failed += 1
                print(f"FAIL {fam}.{case.name}: {res[1]}", flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if passed < a.min_passed:
        print(f"FAIL: {passed} passed, fewer than --min-passed {a.min_passed}")
    return 1 if failed or passed < a.min_passed else 0


if __name__ == "__main__":
    sys.exit(main())
