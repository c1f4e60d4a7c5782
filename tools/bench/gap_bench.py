#!/usr/bin/env python3
"""netrun's CPU backend against onnxruntime on one model, back to back and after an idle gap, in one process.

    python3 tools/bench/gap_bench.py --models build/zoo-models --lib build/lib/libnetrun.so \\
        --only unet_small,gpt_causal,bert_class --threads 2 --batch 1 [--gap-ms 60] [--rounds 30]

cpu_zoo_bench.py pauses before every run, so its batch-1 rows time the first run after an idle gap; this tells
apart what the kernels cost (back to back: each timed run follows an untimed one of the same engine) from what the
gap adds (the timed run follows --gap-ms of sleep). Both engines return their outputs (netrun's are read through
netrun_session_output, as cpu_zoo_bench.py does). Engines alternate within a round, the order reversed every
other round; a row gives the median times and the median of the per-round ratios netrun/onnxruntime.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netrun_ctypes import Netrun  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="build/zoo-models", help="folder written by zoo_models.py")
    ap.add_argument("--only", default="unet_small,gpt_causal,bert_class", help="comma-separated model names")
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--gap-ms", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    import onnxruntime as ort
    nr = Netrun(args.lib)
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  threads {args.threads}, batch {args.batch}, "
          f"gap {args.gap_ms:g} ms, {args.rounds} rounds; load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'model':<16} {'mode':<12} {'netrun ms':>10} {'ORT ms':>9} {'netrun/ORT':>11}")
    for name in args.only.split(","):
        path = os.path.join(args.models, name + ".onnx")
        feeds = {k: np.ascontiguousarray(np.repeat(v, args.batch, axis=0))
                 for k, v in np.load(os.path.join(args.models, name + ".npz")).items()}
        s = nr.session(path, backends="cpu", threads=args.threads)
        s.set_inputs(feeds)
        s.prepare()
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

        def run_nr():
            s.run_only()
            return s.outputs()

        engines = {"netrun": run_nr, "ORT": lambda: o.run(None, feeds)}
        for fn in engines.values():
            fn()
        for mode in ("back to back", "after gap"):
            times = {k: [] for k in engines}
            for r in range(args.rounds):
                for k in list(engines) if r % 2 == 0 else list(engines)[::-1]:
                    if mode == "after gap":
                        time.sleep(args.gap_ms / 1e3)
                    else:
                        engines[k]()
                    t0 = time.perf_counter()
                    engines[k]()
                    times[k].append((time.perf_counter() - t0) * 1e3)
            ratio = float(np.median(np.array(times["netrun"]) / np.array(times["ORT"])))
            print(f"{name:<16} {mode:<12} {np.median(times['netrun']):10.3f} {np.median(times['ORT']):9.3f} "
                  f"{ratio:11.2f}", flush=True)
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
