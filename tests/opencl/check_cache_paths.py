#!/usr/bin/env python3
"""Program binary cache and Conv path choice of the OpenCL backend.

1. Cache: with a fresh NETRUN_CACHE_DIR, a first run builds every program from source and writes binaries;
   a second process builds none from source (all from the cache) and gives the same outputs. Counts come
   from the backend's info log line 'programs: N built from source, M from the binary cache'.
2. Workspace: a Conv model reports 'im2col + clblast sgemm' with workspace under the default policy and
   'direct kernel' with --workspace-policy min-memory; both match the cpu backend.

usage: check_cache_paths.py --netrun PATH --model CONV_MODEL   (exit 77 when opencl is unavailable)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def run(netrun, args, env):
    return subprocess.run([netrun] + args, capture_output=True, text=True, timeout=600, env=env)


def counts(stderr):
    m = re.findall(r"programs: (\d+) built from source, (\d+) from the binary cache", stderr)
    return tuple(map(int, m[-1])) if m else None


def outputs(d):
    return {n: np.load(os.path.join(d, n)) for n in sorted(os.listdir(d))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    r = subprocess.run([a.netrun, "--backends"], capture_output=True, text=True, timeout=120)
    if not re.search(r"^opencl\s+yes", r.stdout, re.M):
        print("opencl unavailable: skipped")
        return 77
    work = tempfile.mkdtemp(prefix="netrun-ocl-cache-")
    env = dict(os.environ, NETRUN_CACHE_DIR=os.path.join(work, "cache"), NETRUN_LOG_LEVEL="info")
    common = [a.model, "--backend", "opencl", "--strict", "--iterations", "1", "--warmup", "0", "--seed", "5"]
    fails = []
    r1 = run(a.netrun, common + ["--output-dir", os.path.join(work, "o1")], env)
    r2 = run(a.netrun, common + ["--output-dir", os.path.join(work, "o2")], env)
    if r1.returncode or r2.returncode:
        print(f"FAIL: runs exited {r1.returncode}/{r2.returncode}: {r1.stderr[-500:]} {r2.stderr[-500:]}")
        return 1
    c1, c2 = counts(r1.stderr), counts(r2.stderr)
    print(f"first start: {c1} (from source, from cache); second start: {c2}")
    for line in (r1.stdout + r2.stdout).splitlines():
        if re.match(r"\s*(prepare|first run)\s", line):
            print("  " + line.strip())
    files = os.listdir(os.path.join(work, "cache", "opencl")) if os.path.isdir(os.path.join(work, "cache", "opencl")) else []
    if not c1 or c1[0] == 0 or c1[1] != 0:
        fails.append(f"first start should build from source only, got {c1}")
    if not c2 or c2[0] != 0 or c2[1] == 0:
        fails.append(f"second start should load every program from the cache, got {c2}")
    if c1 and len(files) < c1[0]:
        fails.append(f"{len(files)} cache files for {c1[0]} programs")
    o1, o2 = outputs(os.path.join(work, "o1")), outputs(os.path.join(work, "o2"))
    if o1.keys() != o2.keys() or any(not np.array_equal(o1[k], o2[k]) for k in o1):
        fails.append("outputs of the cached run differ")

    # Conv paths under the workspace policy
    ref = run(a.netrun, [a.model, "--backend", "cpu", "--iterations", "1", "--warmup", "0", "--seed", "5",
                         "--output-dir", os.path.join(work, "cpu")], env)
    if ref.returncode:
        fails.append(f"cpu run failed: {ref.stderr[-300:]}")
    want = outputs(os.path.join(work, "cpu")) if not ref.returncode else {}
    for policy, path in (("balanced", "im2col + clblast sgemm"), ("min-memory", "direct kernel")):
        e = run(a.netrun, [a.model, "--backend", "opencl", "--strict", "--workspace-policy", policy, "--explain"], env)
        if path not in e.stdout:
            fails.append(f"--workspace-policy {policy}: no Conv took '{path}':\n{e.stdout[-800:]}{e.stderr[-300:]}")
        od = os.path.join(work, policy)
        r = run(a.netrun, common + ["--workspace-policy", policy, "--output-dir", od], env)
        if r.returncode:
            fails.append(f"{policy} run failed: {r.stderr[-300:]}")
            continue
        got = outputs(od)
        for k, w in want.items():
            if k not in got or not np.allclose(got[k], w, rtol=1e-3, atol=1e-4):
                fails.append(f"{policy}: output {k} differs from cpu")
    for f in fails:
        print("FAIL: " + f)
    if not fails:
        print("ok: binary cache used by the second start; Conv paths follow the workspace policy")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
