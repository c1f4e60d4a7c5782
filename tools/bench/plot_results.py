#!/usr/bin/env python3
"""Charts of benchmark results for docs/benchmarks.md, as PNG, from the JSON the benchmarks write.

usage: plot_results.py RESULT.json [RESULT.json ...] --out docs/images
  - a CPU result (tools/bench/cpu_bench.py --json): bench-cpu.png, netrun's time over onnxruntime's and over
    OpenCV DNN's per model and batch (the paired ratio: each round's medians, so both engines saw the same load);
  - a GPU result (tools/bench/gpu_bench.py --json): bench-gpu.png, netrun's time over PyTorch's CUDA graph per
    model, batch and precision.
Below 1: netrun faster. Every chart names the machine, the date and the netrun version the JSON records.
Needs matplotlib (tools/bench/requirements-plot.txt); nothing else in netrun does.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def caption(res):
    meta = res.get("meta", {})
    parts = [meta.get("machine") or res.get("device") or res.get("cpu") or "unknown machine",
             meta.get("date") or res.get("date") or "undated"]
    if meta.get("netrun"):
        parts.append("netrun " + meta["netrun"])
    if meta.get("commit"):
        parts.append("commit " + meta["commit"])
    if res.get("load"):  # cpu_bench.py records the load average: a loaded machine slows every engine
        parts.append("load average %.1f" % res["load"][0])
    return ", ".join(str(p) for p in parts)


def bars(ax, labels, series, title, ylabel):
    """Grouped bars: series = [(name, values)], one group per label; the 1.0 line is parity."""
    n = len(series)
    width = 0.8 / max(n, 1)
    for k, (name, values) in enumerate(series):
        xs = [i + (k - (n - 1) / 2) * width for i in range(len(labels))]
        b = ax.bar(xs, values, width, label=name)
        ax.bar_label(b, fmt="%.2f", fontsize=7, padding=1)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


def plot_cpu(res, out):
    rows = res["results"]
    labels = ["%s b%d" % (r["model"], r["batch"]) for r in rows]
    keys = sorted({k for r in rows for k in r.get("paired_ratio", {})})
    netrun = keys[0].split("/")[0] if keys else "netrun"
    series = []
    for peer, name in (("ORT", "onnxruntime"), ("OCV", "OpenCV DNN")):
        key = "%s/%s" % (netrun, peer)
        if all(key in r.get("paired_ratio", {}) for r in rows):
            series.append(("netrun / " + name, [r["paired_ratio"][key] for r in rows]))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bars(ax, labels, series, "CPU, %d threads: netrun's time over its peers' (below 1: netrun faster)\n%s" %
         (rows[0]["threads"], caption(res)), "time ratio (paired medians)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench-cpu.png"), dpi=110)
    plt.close(fig)


def plot_gpu(res, out):
    rows = [r for r in res["results"] if r.get("torch", {}).get("graph_ms") and "median_ms" in r.get("netrun", {})]
    labels = ["%s b%d %s" % (r["model"], r["batch"], r["precision"]) for r in rows]
    series = [("netrun / PyTorch CUDA graph", [r["netrun"]["median_ms"] / r["torch"]["graph_ms"] for r in rows]),
              ("netrun / PyTorch eager", [r["netrun"]["median_ms"] / r["torch"]["eager_ms"] for r in rows])]
    fig, ax = plt.subplots(figsize=(11, 4.8))
    bars(ax, labels, series, "GPU: netrun's time over PyTorch's (below 1: netrun faster)\n%s" % caption(res),
         "time ratio (medians)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench-gpu.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for path in a.results:
        with open(path) as f:
            res = json.load(f)
        rows = res.get("results") or []
        if rows and "paired_ratio" in rows[0]:
            plot_cpu(res, a.out)
        elif rows and "netrun" in rows[0]:
            plot_gpu(res, a.out)
        else:
            print("plot_results: %s is neither a cpu_bench nor a gpu_bench result" % path, file=sys.stderr)
            return 2
        print("plot_results: %s -> %s" % (path, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
