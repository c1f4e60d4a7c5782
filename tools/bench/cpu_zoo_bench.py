#!/usr/bin/env python3
"""CPU benchmark over many model families: netrun's CPU backend vs onnxruntime (CPUExecutionProvider) vs OpenCV
DNN, in one process, runs alternated engine by engine (as tools/bench/cpu_bench.py does), same thread count.

    python3 tools/bench/zoo_models.py --out build/zoo-models        # builds the models (no downloads)
    python3 tools/bench/cpu_zoo_bench.py --models build/zoo-models --lib build/lib/libnetrun.so \\
        --threads 2 --batch 1,8 [--md table.md] [--json results.json]

Every row: the median latency of each engine, then netrun/ORT and netrun/OCV as paired ratios (the median over
rounds of the per-round ratio; in a round each engine runs once, so a slow phase of this shared machine hits all
of them alike). A ratio below 1 means netrun is faster. OpenCV rows read n/a where cv2.dnn cannot import or run
the model. Each output of netrun and OpenCV is compared with onnxruntime's: the largest absolute difference over
the largest absolute value of the reference, flagged with ! above --tol. Models whose batch is fixed in the
graph (the detectors) run at batch 1 only. The summary gives the geometric mean of the ratios per batch and over
all rows, and lists the rows above 1.05.

Runs per row: --runs, fewer where one round would take past --row-seconds / --runs (at least --min-runs).
Before / after a change: --lib-before OTHER_BUILD/lib/libnetrun.so runs that build too, in the same rounds, and
adds the paired ratio netrun/before to every row and to the summary.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_bench import cpu_model, parse_netrun_variants  # noqa: E402
from netrun_ctypes import Netrun  # noqa: E402


def tile(feeds, batch):
    return {k: np.ascontiguousarray(np.repeat(v, batch, axis=0)) for k, v in feeds.items()}


def rel_err(got, ref):
    """max |got - ref| / max(1, max |ref|) over all outputs; inf on a shape mismatch."""
    worst = 0.0
    for g, r in zip(got, ref):
        g, r = np.asarray(g), np.asarray(r)
        if g.size != r.size:
            return float("inf")
        if r.size == 0:
            continue
        if r.dtype.kind in "fc":
            d = float(np.max(np.abs(g.reshape(r.shape).astype(np.float64) - r))) / max(1.0, float(np.max(np.abs(r))))
        else:
            d = 0.0 if np.array_equal(g.reshape(r.shape), r) else float("inf")
        worst = max(worst, d)
    return worst


def opencv_engine(cv2, path, feeds, out_names):
    """(run, note): cv2.dnn on the model, or (None, why) where it cannot import or run it."""
    try:
        net = cv2.dnn.readNetFromONNX(path)
        net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
        net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)

        def run():
            for k, v in feeds.items():
                net.setInput(v if v.dtype == np.float32 else v.astype(np.float32), k)
            return net.forward(out_names) if len(out_names) > 1 else [net.forward(out_names[0])]
        run()
        return run, ""
    except Exception as e:  # cv2.error: an op or a pattern OpenCV does not support
        import re
        m = re.search(r"Node \[([^\]]+)\]", str(e))
        return None, f"cannot import ({m.group(1).split('@')[0]})" if m else "cannot import or run"


def geomean(xs):
    xs = [x for x in xs if x and np.isfinite(x)]
    return float(np.exp(np.mean(np.log(xs)))) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="build/zoo-models", help="folder written by zoo_models.py")
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--skip", default="", help="comma-separated model names to leave out")
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--runs", type=int, default=10, help="timed rounds per row at most")
    ap.add_argument("--min-runs", type=int, default=3)
    ap.add_argument("--row-seconds", type=float, default=20.0, help="time budget of a row's timed rounds")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--pause", type=float, default=60.0,
                    help="milliseconds of sleep before each engine's run, so that the previous engine's spinning "
                         "workers have gone to sleep and do not take the cores from the next one (default 60: "
                         "onnxruntime's spin about 50 ms after Run returns, netrun's 2 ms; with 10 ms, netrun's pool "
                         "saw onnxruntime's spinning workers as another busy process, stopped spinning "
                         "(cpu.spin_watch) and MobileNetV3-small at batch 8 took 18.8 ms instead of 7.8)")
    ap.add_argument("--netrun", action="append", help="NAME:key=value,... a netrun variant (first one is compared)")
    ap.add_argument("--lib-before", help="another build's libnetrun (the one before a change), run in the same process "
                                         "as engine 'before' in every round: rows then give the paired ratio "
                                         "netrun/before as well")
    ap.add_argument("--no-opencv", action="store_true")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--json", help="write all figures here")
    ap.add_argument("--md", help="write the table as Markdown here")
    args = ap.parse_args()

    import onnxruntime as ort
    cv2 = None
    if not args.no_opencv:
        try:
            import cv2
            cv2.setNumThreads(args.threads)
        except ImportError:
            print("OpenCV not installed (pip install -r tools/bench/requirements.txt); skipping it")
    with open(os.path.join(args.models, "zoo.json")) as f:
        zoo = json.load(f)
    names = [n for n in zoo if (not args.only or n in args.only.split(",")) and n not in args.skip.split(",")]
    nr = Netrun(args.lib)
    nr_before = Netrun(args.lib_before) if args.lib_before else None  # its own path: its own copy and plugins
    variants = parse_netrun_variants(args.netrun)
    first = variants[0][0]
    batches = [int(b) for b in args.batch.split(",")]
    load = os.getloadavg()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# {stamp}  CPU: {cpu_model()} ({os.cpu_count()} cores)  load avg {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"# threads {args.threads}; onnxruntime {ort.__version__}" + (f", OpenCV {cv2.__version__}" if cv2 else "") +
          f"; up to {args.runs} rounds a row, pause {args.pause:g} ms; netrun variants: " + ", ".join(f"{n}{o or ''}" for n, o in variants))
    hdr = (f"{'model':<18} {'family':<28} {'bat':>3} " + " ".join(f"{n + ' ms':>10}" for n, _ in variants) +
           f" {'ORT ms':>9} {'OCV ms':>9} {first + '/ORT':>10} {first + '/OCV':>10}  err(netrun, OCV) vs ORT")
    print(hdr)
    rows = []
    for name in names:
        meta = zoo[name]
        path = os.path.join(args.models, name + ".onnx")
        base = dict(np.load(os.path.join(args.models, name + ".npz")))
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        osess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        out_names = [o.name for o in osess.get_outputs()]
        for batch in batches:
            if batch > 1 and not meta["batch_free"]:
                continue
            feeds = tile(base, batch)
            engines, notes = [], {}
            try:
                osess.run(None, feeds)
            except Exception as e:  # the model fixes its batch somewhere onnxruntime checks
                print(f"{name:<18} batch {batch}: onnxruntime cannot run it ({str(e).splitlines()[0][:100]}); row skipped")
                continue
            failed = None
            for vname, vopts in variants:
                try:
                    s = nr.session(path, backends="cpu", threads=args.threads, options=vopts)
                    s.set_inputs(feeds)
                    s.prepare()
                except Exception as e:  # reported as a row, so that one model does not end the run
                    failed = f"{vname}: {e}"
                    break

                def run_nr(s=s):
                    s.run_only()
                    return s.outputs()
                engines.append((vname, run_nr, s))
            if failed:
                print(f"{name:<18} batch {batch}: netrun failed ({failed}); row skipped", flush=True)
                rows.append({"model": name, "family": meta["family"], "batch": batch, "error": failed})
                continue
            if nr_before:
                try:
                    sb = nr_before.session(path, backends="cpu", threads=args.threads)
                    sb.set_inputs(feeds)
                    sb.prepare()
                except Exception as e:
                    print(f"{name:<18} batch {batch}: the build before failed ({e}); row skipped", flush=True)
                    rows.append({"model": name, "family": meta["family"], "batch": batch, "error": f"before: {e}"})
                    continue

                def run_before(s=sb):
                    s.run_only()
                    return s.outputs()
                engines.append(("before", run_before, sb))
            engines.append(("ORT", lambda: osess.run(None, feeds), None))
            if cv2:
                run_cv, why = opencv_engine(cv2, path, feeds, out_names)
                if run_cv:
                    engines.append(("OCV", run_cv, None))
                else:
                    notes["OCV"] = why
            outs = {}
            t_one = 0.0
            for label, fn, _ in engines:
                for i in range(args.warmup):
                    if args.pause > 0:
                        time.sleep(args.pause / 1e3)
                    t0 = time.perf_counter()
                    outs[label] = fn()
                    if i == args.warmup - 1:
                        t_one += time.perf_counter() - t0
            n_runs = max(args.min_runs, min(args.runs, int(args.row_seconds / max(t_one, 1e-6))))
            times = {label: [] for label, _, _ in engines}
            for _ in range(n_runs):
                for label, fn, _ in engines:
                    if args.pause > 0:
                        time.sleep(args.pause / 1e3)
                    t0 = time.perf_counter()
                    fn()
                    times[label].append((time.perf_counter() - t0) * 1e3)
            ref = outs["ORT"]
            errs = {label: rel_err(o, ref) for label, o in outs.items() if label != "ORT"}
            med = {k: float(np.median(v)) for k, v in times.items()}
            paired = {f"{v}/{o}": float(np.median([a / b for a, b in zip(times[v], times[o])]))
                      for v, _ in variants for o in ("ORT", "OCV", "before") if o in times}
            row = {"model": name, "family": meta["family"], "note": meta.get("note", ""), "batch": batch,
                   "runs": n_runs, "median_ms": med, "paired_ratio": paired, "err_vs_ort": errs,
                   "opencv_note": notes.get("OCV", "")}
            rows.append(row)
            fam = meta["family"] + (f" {meta['note']}" if meta.get("note") else "")
            line = f"{name:<18} {fam[:28]:<28} {batch:>3} " + " ".join(f"{med[n]:>10.2f}" for n, _ in variants)
            line += f" {med['ORT']:>9.2f} " + (f"{med['OCV']:>9.2f}" if "OCV" in med else f"{'n/a':>9}")
            line += f" {paired[first + '/ORT']:>10.2f} " + (f"{paired[first + '/OCV']:>10.2f}" if "OCV" in med else f"{'n/a':>10}")
            if "before" in times:
                line += f" {first}/before={paired[first + '/before']:.2f} (before {med['before']:.2f} ms)"
            line += "  " + " ".join(f"{k}={v:.1e}{'!' if v > args.tol else ''}" for k, v in errs.items())
            if notes.get("OCV"):
                line += f"  (OpenCV: {notes['OCV']})"
            print(line, flush=True)
            for _, _, s in engines:
                if s:
                    s.close()
    print("# geometric means of the paired ratios (below 1: netrun faster)")
    summary = {}
    failed_rows = [(r["model"], r["batch"]) for r in rows if "error" in r]
    rows_ok = [r for r in rows if "error" not in r]
    for label, sel in [(f"batch {b}", [r for r in rows_ok if r["batch"] == b]) for b in batches] + [("all rows", rows_ok)]:
        g_ort = geomean([r["paired_ratio"][first + "/ORT"] for r in sel])
        ocv = [r["paired_ratio"][first + "/OCV"] for r in sel if first + "/OCV" in r["paired_ratio"]]
        g_ocv = geomean(ocv)
        summary[label] = {"vs_ort": g_ort, "vs_ocv": g_ocv, "rows": len(sel), "ocv_rows": len(ocv)}
        print(f"#   {label}: {first}/ORT {g_ort:.2f} over {len(sel)} rows, {first}/OCV {g_ocv:.2f} over {len(ocv)} rows")
        if nr_before:
            g_b = geomean([r["paired_ratio"].get(first + "/before") for r in sel])
            summary[label]["vs_before"] = g_b
            print(f"#   {label}: {first}/before {g_b:.2f}")
    losing = [(r["model"], r["batch"], round(r["paired_ratio"][first + "/ORT"], 2)) for r in rows_ok
              if r["paired_ratio"][first + "/ORT"] > 1.05]
    if failed_rows:
        print(f"# rows netrun could not run: {failed_rows}")
    print(f"# rows above 1.05x onnxruntime: {losing if losing else 'none'}")
    bad = [(r["model"], r["batch"], k, v) for r in rows_ok for k, v in r["err_vs_ort"].items() if v > args.tol]
    print(f"# outputs beyond {args.tol} of onnxruntime's: {bad if bad else 'none'}")
    if args.md:
        with open(args.md, "w") as f:
            f.write(f"| model | family | batch | netrun ms | onnxruntime ms | OpenCV ms | netrun/ORT | netrun/OpenCV |\n")
            f.write("|---|---|---:|---:|---:|---:|---:|---:|\n")
            for r in rows_ok:
                m, p = r["median_ms"], r["paired_ratio"]
                fam = r["family"] + (f", {r['note']}" if r["note"] else "")
                f.write(f"| {r['model']} | {fam} | {r['batch']} | {m[first]:.2f} | {m['ORT']:.2f} | " +
                        (f"{m['OCV']:.2f}" if "OCV" in m else "n/a") + f" | {p[first + '/ORT']:.2f} | " +
                        (f"{p[first + '/OCV']:.2f}" if first + "/OCV" in p else "n/a") + " |\n")
            for label, s in summary.items():
                ocv = f"**{s['vs_ocv']:.2f}**" if s["ocv_rows"] else "n/a"
                f.write(f"| **geometric mean, {label}** | | | | | | **{s['vs_ort']:.2f}** | {ocv} |\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": {"machine": f"{cpu_model()}, {os.cpu_count()} cores", "date": stamp, "load": load,
                                "command": " ".join(sys.argv)}, "rows": rows, "summary": summary}, f, indent=1)
    return 1 if bad or failed_rows else 0


if __name__ == "__main__":
    sys.exit(main())
