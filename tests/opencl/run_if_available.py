#!/usr/bin/env python3
"""Run a command only when `netrun --backends` lists the opencl backend as available; else exit 77 (ctest
SKIP_RETURN_CODE) after printing the reason.

usage: run_if_available.py --netrun PATH [--backend opencl] -- COMMAND...
"""
import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--backend", default="opencl")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        sys.exit("run_if_available.py: no command given")
    r = subprocess.run([a.netrun, "--backends"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"netrun --backends failed with exit {r.returncode}: {r.stderr.strip()}")
    for line in r.stdout.splitlines():
        m = re.match(r"^" + re.escape(a.backend) + r"\s+(yes|no)\s*(.*)$", line)
        if m:
            if m.group(1) != "yes":
                print(f"{a.backend} unavailable ({m.group(2).strip()}): skipped")
                return 77
            sys.stdout.flush()
            os.execvp(cmd[0], cmd)
    print(f"FAIL: netrun --backends lists no {a.backend} backend")
    return 1


if __name__ == "__main__":
    sys.exit(main())
