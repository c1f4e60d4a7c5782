#!/usr/bin/env python3
"""Runs onnxruntime and netrun side by side on the hostile corpus (tests/corpus/models) and prints, per file,
what each did: ran (exit 0), refused with an error, crashed (a signal), hung (past the timeout), or ran out of
the address space given to it. The numbers in docs/reliability.md come from this script.

usage: compare_ort.py --netrun PATH [--models DIR] [--timeout 20] [--mem-gb 8] [--markdown]

onnxruntime runs in a child Python process per file (InferenceSession on the CPU provider, then one run on
random inputs shaped as declared, symbolic dims 1), with RLIMIT_AS at --mem-gb so that a model that eats memory
fails there instead of taking the machine. netrun runs as run_corpus.py runs it (`--backend cpu`, the
file's extra arguments), under the same limits. Files made at run time (FIFOs, sockets...) are included.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_corpus import special_cases  # noqa: E402

ORT_CHILD = r"""
import sys, numpy as np, onnxruntime as ort
so = ort.SessionOptions()
so.log_severity_level = 4
so.intra_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
feeds = {}
types = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
         "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8,
         "tensor(float16)": np.float16, "tensor(string)": np.str_}
rng = np.random.default_rng(0)
for i in s.get_inputs():
    shape = [d if isinstance(d, int) and d >= 0 else 1 for d in (i.shape or [])]
    t = types.get(i.type, np.float32)
    feeds[i.name] = rng.uniform(-1, 1, shape).astype(t) if t != np.str_ else np.full(shape, "a")
s.run(None, feeds)
"""


def limit(mem_gb):
    def f():
        b = int(mem_gb * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (b, b))
    return f


def outcome(cmd, timeout, mem_gb, env=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                           preexec_fn=limit(mem_gb), env=env)
    except subprocess.TimeoutExpired:
        return "hung", ""
    err = (r.stderr or "").strip()
    if r.returncode < 0:
        return "crashed", f"signal {-r.returncode}"
    if r.returncode == 0:
        return "ran", ""
    low = err.lower()
    if "bad_alloc" in low or "memoryerror" in low or "failed to allocate" in low or "out of memory" in low:
        return "out of memory", err.splitlines()[-1][:160] if err else ""
    return "refused", err.splitlines()[-1][:160] if err else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--mem-gb", type=float, default=8.0)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    with open(os.path.join(a.models, "expect.json")) as f:
        expect = json.load(f)
    rows = []
    tmp = tempfile.mkdtemp(prefix="netrun-vs-ort-")
    try:
        cases, sock = special_cases(tmp, a.models)
        items = [(n, os.path.join(a.models, n), expect[n].get("args", [])) for n in sorted(expect)]
        items += [(n, p, []) for n, p, _ in cases]
        for name, path, args in items:
            ort_res = outcome([sys.executable, "-c", ORT_CHILD, path], a.timeout, a.mem_gb)
            if name.startswith("option_"):  # a netrun option's value is what the case is about
                ort_res = ("n/a", "netrun option " + " ".join(args))
            nr_res = outcome([a.netrun, path, "--backend", "cpu", "--threads", "1", "--iterations", "1", "--warmup", "0",
                              "-q"] + args, a.timeout, a.mem_gb)
            rows.append((name, ort_res, nr_res))
            print(f"{name:45s} onnxruntime: {ort_res[0]:13s} netrun: {nr_res[0]:13s} {ort_res[1][:70]}")
            sys.stdout.flush()
        sock.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    kinds = ["ran", "refused", "out of memory", "crashed", "hung", "n/a"]
    print()
    print(f"{len(rows)} files; per outcome (onnxruntime / netrun):")
    for k in kinds:
        print(f"  {k:14s} {sum(r[1][0] == k for r in rows):4d} / {sum(r[2][0] == k for r in rows):4d}")
    if a.markdown:
        print("\n| file | onnxruntime | netrun |\n|---|---|---|")
        for name, o, n in rows:
            if o[0] != n[0] or o[0] in ("crashed", "hung", "out of memory"):
                print(f"| `{name}` | {o[0]}{': ' + o[1] if o[1] and o[0] != 'ran' else ''} | {n[0]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
