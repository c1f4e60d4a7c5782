#!/usr/bin/env python3
"""Ratchet on NATIVE conformance passes of a device backend: runs tests/conformance/run_conformance.py with
--backend B and --json, then checks that every test listed in the expected file passed with all nodes on B
(status 'passed'; 'passed_fallback' does not count), and that at least --min tests passed natively. Newly
native tests are listed (add them with --write). netrun-conformance's own --expected counts fallback passes
too, which is why this wrapper exists.

usage: native_ratchet.py --tool CONFORMANCE --backend opencl --expected FILE --json OUT [--min 800]
                         [--write] -- [run_conformance.py options...]
       native_ratchet.py --from-json RESULTS.json --backend cuda --expected FILE [--min N] [--write]
                         (check a finished run's --json output, e.g. tools/gpu/run-gpu-tests.sh's)
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(HERE), "conformance", "run_conformance.py")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool")
    ap.add_argument("--from-json", help="check this finished run instead of running the suite")
    ap.add_argument("--backend", default="opencl")
    ap.add_argument("--expected", required=True)
    ap.add_argument("--json")
    ap.add_argument("--min", type=int, default=800)
    ap.add_argument("--write", action="store_true", help="rewrite the expected file with today's native passes")
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.from_json:
        a.json = a.from_json
    else:
        if not a.tool or not a.json:
            ap.error("--tool and --json are needed unless --from-json is given")
        rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
        cmd = [sys.executable, RUNNER, "--tool", a.tool, "--backend", a.backend, "--json", a.json] + rest
        print(" ".join(cmd), flush=True)
        r = subprocess.run(cmd)
        if not os.path.exists(a.json):
            print(f"FAIL: the conformance run (exit {r.returncode}) wrote no {a.json}")
            return 1
    with open(a.json) as f:
        tests = json.load(f)["tests"]
    status = {t["name"]: t.get("status") for t in tests}
    native = sorted(n for n, s in status.items() if s == "passed")
    print(f"{len(native)} native passes on {a.backend} ({len(tests)} tests)")
    if a.write:
        with open(a.expected, "w") as f:
            f.write("".join(n + "\n" for n in native))
        print(f"wrote {len(native)} names to {a.expected}")
        return 0
    with open(a.expected) as f:
        expected = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    lost = [(n, status.get(n, "not found")) for n in expected if status.get(n) != "passed"]
    fresh = sorted(set(native) - set(expected))
    if fresh:
        print(f"\nNEWLY NATIVE ({len(fresh)}): add them (native_ratchet.py ... --write):")
        for n in fresh:
            print("  " + n)
    if lost:
        print(f"\nREGRESSIONS ({len(lost)}): listed in {a.expected} but not passing natively:")
        for n, s in lost:
            detail = next((t.get("detail", "") for t in tests if t["name"] == n), "")
            print(f"  {n}: {s} {detail[:200]}")
    ok = not lost and len(native) >= a.min
    if len(native) < a.min:
        print(f"FAIL: {len(native)} native passes, fewer than {a.min}")
    print(f"\nnative ratchet: {'ok' if ok else 'FAILED'}: {len(expected) - len(lost)} of {len(expected)} expected pass natively")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
