#!/usr/bin/env python3
"""GPU benchmark (issue #4): netrun's CUDA backend against PyTorch on the same GPU, in one run.

Models (torchvision, random weights, exported here with torch.onnx.export, opset 17, dynamic batch):
ResNet-50, MobileNetV2, SqueezeNet 1.1, EfficientNet-B0. For each model, batch and precision:

  netrun     the CLI (`netrun M.onnx --backend cuda --batch N --precision P --json -`) in a fresh process:
             median latency of the timed runs (host input -> host output, copies included), throughput,
             cold start (load + prepare + first run, as the CLI reports them), netrun's planned device memory
             (arena + weights + workspace) and the GPU's memory.used peak over the process (nvidia-smi, minus
             what was in use before it started: CUDA context included).
  torch      PyTorch eager (cudnn.benchmark=True) and the same model captured in a CUDA graph, input already
             on the GPU (compute only), median of per-iteration times; fp16 = model.half(); peak memory =
             torch.cuda.max_memory_allocated (tensors only, no context).

Ratios are netrun / PyTorch (below 1 = netrun faster). Extra rows: fp16 vs fp32 outputs of netrun (same seeded
inputs), and `--workspace-policy min-memory` against `fastest` on ResNet-50 batch 32.

usage (on the GPU machine, after building): python3 tools/bench/gpu_bench.py --netrun BUILD/bin/netrun
  [--models resnet50,mobilenet_v2,squeezenet1_1,efficientnet_b0] [--batches 1,32] [--big 256]
  [--precisions fp32,fp16] [--no-torch] [--no-memcheck] [--md results.md] [--json results.json]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np


def gpu_mem_used_mib():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
        return float(out.split()[0])
    except Exception:
        return None


class MemPoll:
    """Peak of the GPU's memory.used while a block runs, minus the value before it."""

    def __enter__(self):
        self.base = gpu_mem_used_mib()
        self.peak = self.base
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()
        return self

    def loop(self):
        while not self.stop:
            v = gpu_mem_used_mib()
            if v is not None and (self.peak is None or v > self.peak):
                self.peak = v
            time.sleep(0.05)

    def __exit__(self, *a):
        self.stop = True
        self.t.join()

    def delta(self):
        return None if self.base is None or self.peak is None else self.peak - self.base


def export(name, path, opset):
    import torch
    import torchvision

    m = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        kw = dict(input_names=["input"], output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                  opset_version=opset)
        try:
            torch.onnx.export(m, (x,), path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(m, (x,), path, **kw)
    return m


# pseudo-precisions: fp16 with the float16 NHWC region pass turned off (conv.c's per-layer conversions only)
PREC_ARGS = {"fp16-noregions": ["--precision", "fp16", "--set", "cuda.fp16_regions=0"]}


def run_netrun(a, model, batch, prec, iters, warmup, extra=(), outdir=None):
    pa = PREC_ARGS.get(prec, ["--precision", prec])
    cmd = [a.netrun, model, "--backend", "cuda", "--batch", str(batch)] + pa + ["--warmup", str(warmup),
           "--iterations", str(iters), "--json", "-", "--seed", "1"] + list(extra)
    if outdir:
        cmd += ["--output-dir", outdir]
    with MemPoll() as mp:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, NETRUN_LOG_LEVEL="info"))
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["exit %d" % p.returncode], "cmd": cmd}
    r = json.loads(p.stdout)
    t = r["timings"]
    mem = r.get("memory") or {}
    planned = sum(mem.get(k) or 0 for k in ("arena_bytes", "weight_bytes", "workspace_bytes"))
    placement = r.get("placement") or {}
    nodes = r.get("nodes") or []
    # the per-layer choice: the kernel description, or the backend's info lines ("... -> fp16 NHWC")
    fp16_nodes = sum(1 for n in nodes if "fp16" in (n.get("kernel") or ""))
    if not fp16_nodes:
        fp16_nodes = sum(1 for line in p.stderr.splitlines() if "-> fp16" in line)
    cpu_nodes = sum(1 for n in nodes if n.get("backend") == "cpu")
    region_convs = sum(1 for n in nodes if "fp16 region" in (n.get("kernel") or ""))
    converts = sum(1 for n in nodes if n.get("op") == "Reorder (layout)" and "NHWC" in (n.get("kernel") or ""))
    return {
        "median_ms": t["latency_ms"]["median"], "throughput": batch * 1e3 / t["latency_ms"]["median"],
        "cold_ms": (t.get("load_ms") or 0) + (t.get("prepare_ms") or 0) + (t.get("first_run_ms") or 0),
        "load_ms": t.get("load_ms"), "prepare_ms": t.get("prepare_ms"), "first_run_ms": t.get("first_run_ms"),
        "planned_mib": planned / 2**20, "stream_mib": (mem.get("stream_bytes") or 0) / 2**20, "device_peak_mib": (mem.get("device_peak_bytes") or 0) / 2**20, "gpu_peak_mib": mp.delta(), "fp16_nodes": fp16_nodes, "cpu_nodes": cpu_nodes,
        "region_convs": region_convs, "converts": converts,
        "cmd": " ".join(cmd), "placement": placement,
    }


def profile_netrun(a, model, batch, prec, extra=()):
    """netrun --profile (backends synchronised after every node, CUDA graphs off): mean ms per run on the
    device (nodes on cuda) and in host<->device copies, so the host-to-host figure can be split."""
    pa = PREC_ARGS.get(prec, ["--precision", prec])
    cmd = [a.netrun, model, "--backend", "cuda", "--batch", str(batch)] + pa + ["--warmup", "2", "--iterations", "5",
           "--profile", "--json", "-", "--seed", "1"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None
    prof = json.loads(p.stdout).get("profile") or {}
    by = {g.get("backend"): g.get("mean_ms") or 0 for g in prof.get("by_backend") or []}
    return {"device_ms": by.get("cuda"), "copy_ms": by.get("copy")}


def time_torch(fn, iters, warmup):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def run_torch(m, batch, prec, iters, warmup):
    import torch

    torch.backends.cudnn.benchmark = True
    # fp32 means exact float32 as in netrun (PyTorch's default lets cuDNN use TF32); tf32 allows it everywhere
    torch.backends.cudnn.allow_tf32 = prec == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    dt = torch.float16 if prec == "fp16" else torch.float32
    mm = m.to("cuda", dt).eval()
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dt)
    res = {}
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        res["eager_ms"] = time_torch(lambda: mm(x), iters, warmup)
        res["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                mm(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = mm(x)
        res["graph_ms"] = time_torch(g.replay, iters, warmup)
        del g, y
        # channels_last (PyTorch's fastest layout for fp16 convs on tensor cores), also in a CUDA graph
        mc, xc = mm.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                mc(xc)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = mc(xc)
        res["graph_cl_ms"] = time_torch(g.replay, iters, warmup)
        del g, y, mc, xc
        # what netrun's host-to-host time holds and PyTorch's does not: the input's host -> device copy (float32
        # input, pageable memory as the CLI's)
        xh = torch.randn(batch, 3, 224, 224)
        res["h2d_ms"] = time_torch(lambda: xh.to("cuda"), max(3, iters // 2), 1)
        del xh
    mm.to("cpu", torch.float32)
    torch.cuda.empty_cache()
    return res


def load_outputs(d):
    """The .npy outputs netrun --output-dir wrote into d, by file name ({} when none)."""
    if not os.path.isdir(d):
        return {}
    return {f: np.load(os.path.join(d, f)).astype(np.float64) for f in os.listdir(d) if f.endswith(".npy")}


def rel_err(d32, d16):
    errs, b16 = {}, load_outputs(d16)
    for f, a in load_outputs(d32).items():
        if f in b16:
            b = b16[f]
            scale = max(np.abs(a).max(), 1e-12)
            errs[f] = (float(np.abs(a - b).max() / scale), float((a.argmax(-1) == b.argmax(-1)).mean()))
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,squeezenet1_1,efficientnet_b0")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--big", type=int, default=256, help="extra ResNet-50 batch (0: none)")
    ap.add_argument("--precisions", default="fp32,fp16",
                    help="fp32, tf32, fp16; fp16-noregions = fp16 with --set cuda.fp16_regions=0 (no PyTorch run)")
    ap.add_argument("--tf32-models", default="resnet50", help="models also run with --precision tf32 (1 < b <= 32)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-memcheck", action="store_true")
    ap.add_argument("--extra", default="", help="more netrun arguments, space separated")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--work", default=None)
    ap.add_argument("--profile-batches", default="256",
                    help="batches also run once with --profile to split netrun's time into device and copies")
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    import torch

    work = a.work or tempfile.mkdtemp(prefix="netrun-gpubench-")
    os.makedirs(work, exist_ok=True)
    dev = torch.cuda.get_device_name(0)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    extra = a.extra.split() if a.extra else []
    rows, notes, results = [], [], []
    t_start = time.time()
    for name in a.models.split(","):
        path = os.path.join(work, name + ".onnx")
        t0 = time.time()
        m = export(name, path, a.opset)
        print(f"# exported {name} in {time.time() - t0:.1f} s", flush=True)
        batches = [int(b) for b in a.batches.split(",")]
        if name == "resnet50" and a.big:
            batches.append(a.big)
        for b in batches:
            outs = {}
            precs = a.precisions.split(",")
            if name in a.tf32_models.split(",") and 1 < b <= 32 and "tf32" not in precs:
                precs.append("tf32")
            for prec in precs:
                iters = 50 if b == 1 else 20 if b <= 32 else 8
                warm = 10 if b == 1 else 3
                od = os.path.join(work, f"{name}_b{b}_{prec}")
                os.makedirs(od, exist_ok=True)
                nr = run_netrun(a, path, b, prec, iters, warm, extra, outdir=od if b == 1 else None)
                outs[prec] = od
                if str(b) in a.profile_batches.split(",") and "error" not in nr:
                    nr["profile"] = profile_netrun(a, path, b, prec, extra)
                tr = {} if a.no_torch or prec in PREC_ARGS else run_torch(m, b, prec, iters, warm)
                r = {"model": name, "batch": b, "precision": prec, "netrun": nr, "torch": tr}
                results.append(r)
                print(json.dumps({k: v for k, v in r.items()}, default=str), flush=True)
                if "error" in nr:
                    rows.append(f"| {name} | {b} | {prec} | netrun failed: {nr['error']} | | | | | | |")
                    continue
                eg, gr = tr.get("eager_ms"), tr.get("graph_ms")
                fmt = lambda v, f="%.3f": (f % v) if v is not None else "-"
                rows.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s |" % (
                    name, b, prec, fmt(nr["median_ms"]), fmt(nr["throughput"], "%.0f"), fmt(eg), fmt(gr),
                    fmt(nr["median_ms"] / eg if eg else None, "%.2f"), fmt(nr["median_ms"] / gr if gr else None, "%.2f"),
                    fmt(nr["cold_ms"], "%.0f"), fmt(nr["planned_mib"], "%.0f"), fmt(nr["gpu_peak_mib"], "%.0f"),
                    fmt(tr.get("peak_mib"), "%.0f")))
                if nr.get("cpu_nodes"):
                    notes.append(f"{name} b{b} {prec}: {nr['cpu_nodes']} nodes on the CPU")
                pf = nr.get("profile") or {}
                if pf.get("device_ms"):
                    notes.append(f"{name} b{b} {prec}: netrun --profile (synchronised per node, no CUDA graph): device "
                                 f"{pf['device_ms']:.3f} ms + host<->device copies {pf['copy_ms'] or 0:.3f} ms per run"
                                 + (f"; device / PyTorch channels_last graph {pf['device_ms'] / tr['graph_cl_ms']:.2f}"
                                    if tr.get("graph_cl_ms") else ""))
                if tr.get("graph_cl_ms"):
                    notes.append(f"{name} b{b} {prec}: PyTorch channels_last graph {tr['graph_cl_ms']:.3f} ms "
                                 f"(netrun / it {nr['median_ms'] / tr['graph_cl_ms']:.2f}); the input's host->device "
                                 f"copy (float32, pageable) alone takes {tr['h2d_ms']:.3f} ms in PyTorch")
                if prec.startswith("fp16"):
                    notes.append(f"{name} b{b} {prec}: {nr['fp16_nodes']} heavy layers chose float16; float16 NHWC "
                                 f"regions: {nr['region_convs']} Convs, {nr['converts']} ReorderNHWC conversions")
            if b == 1 and "fp32" in outs and "fp16" in outs:
                for f, (e, top1) in rel_err(outs["fp32"], outs["fp16"]).items():
                    notes.append(f"{name} b1: netrun fp16 vs fp32 output {f}: max |diff| / max |fp32| = {e:.2e}, "
                                 f"argmax agreement {top1:.0%}")
        del m
    if not a.no_memcheck and "resnet50" in a.models:
        path = os.path.join(work, "resnet50.onnx")
        mem, outs = {}, {}
        # min-memory streams the weights from host memory (memory.stream_weights=auto); "resident" keeps them
        variants = (("fastest", ["--workspace-policy", "fastest"]), ("min-memory", ["--workspace-policy", "min-memory"]),
                    ("min-memory resident", ["--workspace-policy", "min-memory", "--set", "memory.stream_weights=0"]))
        for pol, args in variants:
            od = os.path.join(work, "mem_" + pol.replace(" ", "_"))
            mem[pol] = run_netrun(a, path, 32, "fp32", 30, 5, extra + args, outdir=od)
            outs[pol] = load_outputs(od)
            print(json.dumps({"policy": pol, "netrun": mem[pol]}, default=str), flush=True)
        f = mem["fastest"]
        for pol in ("min-memory", "min-memory resident"):
            mn = mem[pol]
            if "error" in f or "error" in mn:
                continue
            diff = max((float(np.max(np.abs(outs[pol][k] - v))) for k, v in outs["fastest"].items()
                        if k in outs[pol]), default=float("nan"))
            notes.append("ResNet-50 b32 fp32 workspace policy: fastest %.3f ms, planned %.0f MiB (GPU peak %s MiB); "
                         "%s %.3f ms (%.2fx), planned %.0f MiB (%.2fx; GPU peak %s MiB), weights streamed %.0f MiB "
                         "per run; backend device peak (buffers) %.0f -> %.0f MiB (%.2fx); outputs max |diff| %.1e" % (
                             f["median_ms"], f["planned_mib"], f["gpu_peak_mib"], pol, mn["median_ms"],
                             mn["median_ms"] / f["median_ms"], mn["planned_mib"], mn["planned_mib"] / f["planned_mib"],
                             mn["gpu_peak_mib"], mn["stream_mib"], f["device_peak_mib"], mn["device_peak_mib"],
                             mn["device_peak_mib"] / max(f["device_peak_mib"], 1e-9), diff))
        results.append({"memcheck": mem})
    hdr = ("| model | batch | prec | netrun ms | netrun img/s | torch eager ms | torch graph ms | /eager | /graph | "
           "cold start ms | netrun planned / GPU peak MiB / torch tensors MiB |\n|---|---|---|---|---|---|---|---|---|---|---|")
    md = [f"Measured {started} on {dev}, one run of `python3 tools/bench/gpu_bench.py {' '.join(sys.argv[1:])}` "
          f"({time.time() - t_start:.0f} s).", "", hdr] + rows + [""] + ["- " + n for n in notes]
    text = "\n".join(md)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": started, "device": dev, "argv": sys.argv, "results": results}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
