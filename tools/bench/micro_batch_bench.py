#!/usr/bin/env python3
"""Micro-batching on the CPU (option run.micro_batch): the "auto" split against no micro-batching (0) and against
every node in runs of the thread count (the whole plan, what "auto" did before it could split), per model, at one
batch size, in one process.

    python3 tools/bench/zoo_models.py --out build/zoo-models        # builds the models (no downloads)
    python3 tools/bench/micro_batch_bench.py --models build/zoo-models --lib build/lib/libnetrun.so \\
        --threads 2 --batch 8 --rounds 31 [--only mnasnet,resnet50]

Each round runs every variant once, in turn (the order reversed every other round), back to back; a row gives
each variant's median time, then auto/off and auto/whole as paired ratios (the median over rounds of the ratio
within the round, so that a slow phase of a shared machine hits all variants alike). A ratio below 1 means
"auto" is faster; rows where it is not are listed at the end. "whole" is left out where the model does not allow
every node in runs. The outputs of every variant are compared with those of "off".
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netrun_ctypes import Netrun  # noqa: E402

DEFAULT = ("mnasnet,mobilenetv2,mobilenetv3_small,resnet50,efficientnet_b0,squeezenet1_1,shufflenetv2,unet_small,"
           "superres,zoo_resnet50,zoo_squeezenet,zoo_shufflenet")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="build/zoo-models", help="folder written by zoo_models.py")
    ap.add_argument("--only", default=DEFAULT, help="comma-separated model names")
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--json", help="write all figures here")
    args = ap.parse_args()
    nr = Netrun(args.lib)
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  threads {args.threads}, batch {args.batch}, "
          f"{args.rounds} rounds; load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'model':<18} {'auto ms':>8} {'off ms':>8} {'whole ms':>9} {'auto/off':>9} {'auto/whole':>11}  auto's choice")
    rows, losing = [], []
    for name in args.only.split(","):
        path = os.path.join(args.models, name + ".onnx")
        feeds = {k: np.ascontiguousarray(np.repeat(v, args.batch, axis=0))
                 for k, v in np.load(os.path.join(args.models, name + ".npz")).items()}
        sessions, outs = {}, {}
        for label, mb in (("auto", "auto"), ("off", "0"), ("whole", str(args.threads))):
            s = nr.session(path, backends="cpu", threads=args.threads, options={"run.micro_batch": mb})
            s.set_inputs(feeds)
            s.prepare()
            if label == "whole" and s.micro_batch()[0] == 0:  # not every node keeps the images apart
                s.close()
                continue
            s.run_only()
            outs[label] = [np.array(o).copy() for o in s.outputs()]
            sessions[label] = s
        note = sessions["auto"].micro_batch()[1]
        err = max(float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b))))
                  for label in outs for a, b in zip(outs[label], outs["off"]))
        times = {label: [] for label in sessions}
        for r in range(args.rounds):
            order = list(sessions) if r % 2 == 0 else list(sessions)[::-1]
            for label in order:
                t0 = time.perf_counter()
                sessions[label].run_only()
                times[label].append((time.perf_counter() - t0) * 1e3)
        med = {k: float(np.median(v)) for k, v in times.items()}
        paired = {f"auto/{o}": float(np.median(np.array(times["auto"]) / np.array(times[o])))
                  for o in ("off", "whole") if o in times}
        row = {"model": name, "median_ms": med, "paired_ratio": paired, "auto": note, "max_rel_diff": err}
        rows.append(row)
        worst = max(paired.values())
        if worst > 1.0:
            losing.append((name, round(worst, 3)))
        print(f"{name:<18} {med['auto']:8.2f} {med['off']:8.2f} "
              f"{med['whole'] if 'whole' in med else float('nan'):9.2f} {paired['auto/off']:9.3f} "
              f"{paired.get('auto/whole', float('nan')):11.3f}  {note[:110]}", flush=True)
        for s in sessions.values():
            s.close()
    print(f"# rows where auto is slower than a peer: {losing or 'none'}")
    print(f"# largest difference of any variant's outputs from off's: "
          f"{max((r['max_rel_diff'] for r in rows), default=0):.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": {"threads": args.threads, "batch": args.batch, "rounds": args.rounds}, "rows": rows},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
