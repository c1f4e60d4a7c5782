#!/usr/bin/env python3
"""CPU benchmark: netrun's CPU backend vs onnxruntime (CPUExecutionProvider) vs OpenCV DNN, in ONE process.

Runs are interleaved (one inference of each engine in turn, over and over), so background load on a shared
machine hits all engines alike and the ratios stay fair even when absolute times move. Every engine gets the
same number of threads: netrun threads=N, ORT intra_op_num_threads=N / inter_op_num_threads=1 (graph
optimizations at ORT's default, all), OpenCV cv2.setNumThreads(N).

    python3 tools/bench/make_models.py --out build/bench-models
    python3 tools/bench/cpu_bench.py --models build/bench-models --lib build/lib/libnetrun.so \
        --threads 2 --batch 1,8 --runs 20

netrun variants are compared in the same loop with --netrun NAME:key=value,key=value (repeatable), e.g.
--netrun opt: --netrun noopt:graph.optimize=0 measures the graph passes on and off.
Outputs of each engine are compared with ORT's (max abs diff; flagged when above --tol, default 1e-4).

Two ratios are printed for netrun against each peer. "netrun/ORT" is the ratio of the medians over all runs.
"paired" is the median over rounds of the per-round ratio (in a round each engine runs one block back to back,
within about a second). On a shared VM the speed of the cores changes over seconds (the neighbours' load);
a paired ratio compares engines within a round, so it moves less from one run of the benchmark to the next.
"""
import argparse
import ctypes
import glob
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netrun_ctypes import Netrun  # noqa: E402


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def pct(xs, q):
    return float(np.percentile(np.asarray(xs), q))


def parse_netrun_variants(specs):
    out = []
    for spec in specs or ["netrun:"]:
        name, _, kv = spec.partition(":")
        opts = {}
        for item in filter(None, kv.split(",")):
            k, _, v = item.partition("=")
            opts[k] = v
        out.append((name or "netrun", opts))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="build/bench-models", help="folder of .onnx files (make_models.py)")
    ap.add_argument("--only", default="", help="comma-separated model names (file stems)")
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    ap.add_argument("--threads", default=f"2,{os.cpu_count()}", help="comma-separated thread counts")
    ap.add_argument("--batch", default="1,8", help="comma-separated batch sizes")
    ap.add_argument("--runs", type=int, default=20, help="timed runs per engine")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--block", type=int, default=1,
                    help="timed runs of one engine per turn, after one untimed run (default 1: strict alternation, "
                         "one inference each). onnxruntime's workers spin on after Run returns and take cores from "
                         "the next engine; blocks keep the rounds interleaved without charging that to netrun")
    ap.add_argument("--pause", type=float, default=0,
                    help="milliseconds of sleep before each engine's turn, so that the previous engine's spinning "
                         "workers (onnxruntime spins for milliseconds after Run returns; netrun 2 ms) have gone to "
                         "sleep and do not take the 2 cores from the next one (default 0)")
    ap.add_argument("--netrun", action="append", help="NAME:key=value,... a netrun variant (repeatable)")
    ap.add_argument("--no-opencv", action="store_true")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--json", help="write all figures here")
    args = ap.parse_args()

    import onnxruntime as ort
    cv2 = None
    if not args.no_opencv:
        try:
            import cv2
        except ImportError:
            print("OpenCV not installed (pip install -r tools/bench/requirements.txt); skipping it")

    nr = Netrun(args.lib)
    variants = parse_netrun_variants(args.netrun)
    paths = sorted(glob.glob(os.path.join(args.models, "*.onnx")))
    if args.only:
        keep = set(args.only.split(","))
        paths = [p for p in paths if os.path.splitext(os.path.basename(p))[0] in keep]
    if not paths:
        sys.exit(f"no models in {args.models}; run tools/bench/make_models.py first")
    threads = [int(t) for t in dict.fromkeys(args.threads.split(","))]
    batches = [int(b) for b in args.batch.split(",")]
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  CPU: {cpu_model()} ({os.cpu_count()} cores)  "
          f"load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"# onnxruntime {ort.__version__}" + (f", OpenCV {cv2.__version__}" if cv2 else "") +
          f"; runs {args.runs}, warmup {args.warmup}, block {args.block}, pause {args.pause:g} ms; netrun variants: " +
          ", ".join(f"{n}{o or ''}" for n, o in variants))
    first = variants[0][0]
    hdr = (f"{'model':<16} {'thr':>3} {'bat':>3} " +
           " ".join(f"{n + ' med':>11} {'p90':>7}" for n, _ in variants) +
           f" {'ORT med':>8} {'p90':>7}" + (f" {'OCV med':>8} {'p90':>7}" if cv2 else "") +
           f" {first + '/ORT':>11}" + (f" {first + '/OCV':>11}" if cv2 else "") +
           f" {'paired':>7}" + (f" {'paired':>7}" if cv2 else "") + "  max|diff| vs ORT")
    print(hdr)
    results = []
    for n_thr in threads:
        if cv2:
            cv2.setNumThreads(n_thr)
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            so = ort.SessionOptions()
            so.intra_op_num_threads = n_thr
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.log_severity_level = 3
            osess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            in_name = osess.get_inputs()[0].name
            for batch in batches:
                x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
                engines = []  # (label, run() -> output)
                for vname, vopts in variants:
                    s = nr.session(path, backends="cpu", threads=n_thr, options=vopts)
                    s.set_inputs({in_name: x})
                    s.prepare()

                    def run_nr(s=s):
                        s.run_only()
                        return s.outputs()[0]
                    engines.append((vname, run_nr, s))
                engines.append(("ORT", lambda: osess.run(None, {in_name: x})[0], None))
                if cv2:
                    net = cv2.dnn.readNetFromONNX(path)
                    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
                    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)

                    def run_cv(net=net):
                        net.setInput(x)
                        return net.forward()
                    engines.append(("OCV", run_cv, None))
                outs = {}
                for label, fn, _ in engines:
                    for _ in range(args.warmup):
                        outs[label] = np.array(fn())
                times = {label: [] for label, _, _ in engines}
                rounds = {label: [] for label, _, _ in engines}  # each round's median, for the paired ratios
                for _ in range(max(1, args.runs // args.block)):
                    for label, fn, _ in engines:
                        if args.pause > 0:
                            time.sleep(args.pause / 1e3)
                        if args.block > 1:
                            fn()  # untimed: the previous engine's workers may still be spinning down
                        for _ in range(args.block):
                            t0 = time.perf_counter()
                            fn()
                            times[label].append((time.perf_counter() - t0) * 1e3)
                        rounds[label].append(pct(times[label][-args.block:], 50))
                ref = outs["ORT"]
                diffs = {label: float(np.max(np.abs(o.reshape(ref.shape) - ref))) for label, o in outs.items()
                         if label != "ORT"}
                row = {"model": name, "threads": n_thr, "batch": batch,
                       "median_ms": {k: pct(v, 50) for k, v in times.items()},
                       "p90_ms": {k: pct(v, 90) for k, v in times.items()},
                       "paired_ratio": {f"{vname}/{o}": pct([a / b for a, b in zip(rounds[vname], rounds[o])], 50)
                                        for vname, _ in variants for o in ["ORT"] + (["OCV"] if cv2 else [])},
                       "round_median_ms": rounds,
                       "max_abs_diff_vs_ort": diffs}
                nodes = engines[0][2].nodes()
                row["netrun_nodes"] = len(nodes)
                results.append(row)
                med, p90 = row["median_ms"], row["p90_ms"]
                line = f"{name:<16} {n_thr:>3} {batch:>3} "
                line += " ".join(f"{med[n]:>11.2f} {p90[n]:>7.2f}" for n, _ in variants)
                line += f" {med['ORT']:>8.2f} {p90['ORT']:>7.2f}"
                if cv2:
                    line += f" {med['OCV']:>8.2f} {p90['OCV']:>7.2f}"
                line += f" {med[first] / med['ORT']:>11.2f}"
                if cv2:
                    line += f" {med[first] / med['OCV']:>11.2f}"
                line += f" {row['paired_ratio'][first + '/ORT']:>7.2f}"
                if cv2:
                    line += f" {row['paired_ratio'][first + '/OCV']:>7.2f}"
                line += "  " + " ".join(f"{k}={v:.1e}{'!' if v > args.tol else ''}" for k, v in diffs.items())
                print(line, flush=True)
                for _, _, s in engines:
                    if s:
                        s.close()
    # Geometric means of the ratios per (threads, batch).
    print("# geometric mean of median ratios")
    for n_thr in threads:
        for batch in batches:
            rows = [r for r in results if r["threads"] == n_thr and r["batch"] == batch]
            msg = f"#   threads {n_thr} batch {batch}:"
            for vname, _ in variants:
                for other in ["ORT"] + (["OCV"] if cv2 else []):
                    g = float(np.exp(np.mean([np.log(r["median_ms"][vname] / r["median_ms"][other]) for r in rows])))
                    gp = float(np.exp(np.mean([np.log(r["paired_ratio"][f"{vname}/{other}"]) for r in rows])))
                    msg += f" {vname}/{other} {g:.2f} (paired {gp:.2f})"
            print(msg)
    bad = [(r["model"], r["threads"], r["batch"], k, v) for r in results
           for k, v in r["max_abs_diff_vs_ort"].items() if v > args.tol]
    worst = max((v for r in results for v in r["max_abs_diff_vs_ort"].values()), default=0.0)
    print(f"# largest max abs diff vs ORT: {worst:.2e}" + (f"; above {args.tol}: {bad}" if bad else ""))
    if args.json:
        with open(args.json, "w") as f:
            lib = ctypes.CDLL(args.lib)
            lib.netrun_version.restype = ctypes.c_char_p
            meta = {"machine": "%s, %d cores" % (cpu_model(), os.cpu_count() or 0),
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "netrun": lib.netrun_version().decode(), "command": " ".join(sys.argv)}
            json.dump({"meta": meta, "cpu": cpu_model(), "load": load, "results": results}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
