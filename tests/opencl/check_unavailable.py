#!/usr/bin/env python3
"""With no OpenCL driver visible (the caller points OCL_ICD_VENDORS at an empty folder), `netrun --backends`
must list opencl as unavailable with a reason, `--backend opencl --strict` must fail with that reason, and a
default run must still work (on the cpu).

usage: check_unavailable.py --netrun PATH --model MODEL
"""
import argparse
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    r = subprocess.run([a.netrun, "--backends"], capture_output=True, text=True, timeout=120)
    print(r.stdout)
    line = [l for l in r.stdout.splitlines() if re.match(r"^opencl\s", l)]
    if r.returncode != 0 or not line:
        print(f"FAIL: netrun --backends exit {r.returncode}, opencl line: {line}")
        return 1
    m = re.match(r"^opencl\s+(yes|no)\s*(.*)$", line[0])
    if not m or m.group(1) != "no" or "OpenCL" not in m.group(2):
        print(f"FAIL: expected 'opencl no <reason naming OpenCL>', got: {line[0]!r}")
        return 1
    r = subprocess.run([a.netrun, a.model, "--backend", "opencl", "--strict", "--quiet"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode == 0 or "unavailable" not in r.stderr and "not available" not in r.stderr:
        print(f"FAIL: --backend opencl --strict should fail saying opencl is unavailable: exit {r.returncode}, "
              f"{r.stderr.strip()}")
        return 1
    r = subprocess.run([a.netrun, a.model, "--quiet"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print(f"FAIL: a default run without OpenCL failed: {r.stderr.strip()}")
        return 1
    print("ok: opencl unavailable with a reason; strict refuses; default run works")
    return 0


if __name__ == "__main__":
    sys.exit(main())
