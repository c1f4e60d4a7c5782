#!/usr/bin/env python3
"""One session per model, fed every case of the model in turn for several rounds (detectors: images whose kept box
counts differ): every output must match the case's onnxruntime reference, and after the first round the session
must not prepare again (netrun_session_stats.prepares, which counts the control-flow bodies' prepares too): a
body whose inputs change size with the data is prepared once more with those dims left to run time, never per run.

usage: check_prepares.py --lib build/lib/libnetrun.so --models DIR [--filter det_] [--backend cpu] [--rounds 3]
Prints one line per model and 'N passed, N failed'; exit 1 on any failure."""
import argparse
import glob
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
from netrun_ctypes import Netrun  # noqa: E402


def cases(model_dir):
    out = []
    for d in [model_dir] + sorted(glob.glob(os.path.join(model_dir, "*", ""))):
        d = d.rstrip("/")
        if os.path.isdir(os.path.join(d, "inputs")) and os.path.isdir(os.path.join(d, "expected")):
            load = lambda sub: {f[:-4]: np.load(os.path.join(d, sub, f)) for f in sorted(os.listdir(os.path.join(d, sub)))}
            out.append((os.path.basename(d), load("inputs"), load("expected")))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--filter", default="det_")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    nr = Netrun(a.lib)
    passed = failed = 0
    for md in sorted(glob.glob(os.path.join(a.models, f"*{a.filter}*"))):
        name = os.path.basename(md)
        cs = cases(md)
        if len(cs) < 2:
            continue
        why = None
        names = [o.name for o in onnx.load(os.path.join(md, "model.onnx"), load_external_data=False).graph.output]
        with nr.session(os.path.join(md, "model.onnx"), backends=a.backend, threads=2) as s:
            after_round = []
            for r in range(a.rounds):
                for cname, feeds, want in cs:
                    got = dict(zip(names, s.run(feeds)))
                    for k, w in want.items():
                        g = got[k]
                        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-3):
                            why = why or f"round {r} case {cname}: output {k} {g.shape} differs from {w.shape}"
                after_round.append(s.stats().prepares)
        if not why and after_round[-1] != after_round[0]:
            why = f"prepared again after the first round: prepares after each round {after_round}"
        if why:
            failed += 1
            print(f"FAIL {name}: {why}")
        else:
            passed += 1
            print(f"ok   {name}: {len(cs)} cases x {a.rounds} rounds, {after_round[-1]} prepares in all (bodies included)")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
