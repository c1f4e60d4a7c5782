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

int8 rows (--int8 resnet50,mobilenet_v2,bert; default none): QDQ models run in int8 on the CUDA backend. The float
model is exported as above (CNNs) or by transformer_bench's helpers (BERT-base from `transformers`, random weights,
input_ids + attention_mask, sequence 128), then quantized by int8_bench.quantize (onnxruntime quant_pre_process +
quantize_static: QDQ format, per-channel int8 weights, int8 activations or --int8-act uint8, calibrated on 4
seeded random inputs at batch 1 -- not real data, so the scales say nothing about accuracy on real inputs). Both
files are kept in WORK/int8 and reused (the QDQ one is remade when older than the float one). Per model and batch
(--int8-batches, default 1,32,256; BERT only at those <= 32), all on the same seeded inputs (.npy files given
to the CLI with --input):
  netrun int8    `netrun QDQ.onnx --backend cuda --precision fp32` (the ops left in float stay float32)
  netrun fp16    the float model with --precision fp16
  torch fp16     model.half() in a CUDA graph (CNNs: run_torch, also eager and channels_last in the notes; BERT:
                 BertModel given input_ids alone -- the mask is all ones, which BertModel skips after a host
                 synchronising check that a CUDA graph cannot capture -- eager where capture fails)
  ratios         int8 throughput / netrun fp16 throughput (> 1: int8 faster), netrun int8 time / torch fp16 graph
                 time (< 1: netrun faster); throughput in img/s or seq/s
  check          netrun int8's output against onnxruntime (CPU) on the same QDQ model and inputs: max |diff| in
                 output quantization steps (int8_bench.out_step: the final DequantizeLinear's scale; as a share of
                 max |onnxruntime| where there is none) and the share of outputs that differ. PASS when the max is
                 at most the larger of 4 steps and twice what onnxruntime's own runs with and without its graph
                 optimizations differ by (one-unit differences at rounding ties propagate through the network,
                 docs/design.md: on BERT-base about 9 steps, on the CNNs 1-2), and the share of outputs that differ
                 at most 1.5x theirs + 5 points, and never below 40% (20-30% on the CNNs, 78% on BERT: a layer wrong on part of the
                 batch that the network's output hides from the max shows there). Also, for information, the int8
                 outputs against the float model's (onnxruntime fp32): max |diff| / max |fp32| of netrun int8 and
                 of onnxruntime int8, and top-1 agreement for logits.
  path           from the CLI's node list: how many QLinearConv / QLinearMatMul ran on cuda and elsewhere, the
                 float Conv / MatMul / Gemm and Q / DQ left ("FELL BACK" when the int8 path was not taken
                 everywhere); at --int8-profile-batches (default 32) one --profile run splits the time by op.
The hidden option --int8-backend cpu runs the same rows on the CPU backend (with --no-torch): the script's test
on a machine without a GPU.

usage (on the GPU machine, after building): python3 tools/bench/gpu_bench.py --netrun BUILD/bin/netrun
  [--models resnet50,mobilenet_v2,squeezenet1_1,efficientnet_b0] [--batches 1,32] [--big 256]
  [--precisions fp32,fp16] [--no-torch] [--no-memcheck] [--md results.md] [--json results.json]
  [--int8 resnet50,mobilenet_v2,bert] [--int8-batches 1,32,256] [--int8-act int8|uint8] [--int8-profile-batches 32]
  [--int8-only]
int8 rows alone: python3 tools/bench/gpu_bench.py --netrun BUILD/bin/netrun --int8-only
  --int8 resnet50,mobilenet_v2,bert --work /tmp/bw --md int8.md --json int8.json
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


def run_netrun(a, model, batch, prec, iters, warmup, extra=(), outdir=None, backend="cuda", op_counts=False):
    pa = PREC_ARGS.get(prec, ["--precision", prec])
    cmd = [a.netrun, model, "--backend", backend, "--batch", str(batch)] + pa + ["--warmup", str(warmup),
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
    res = {
        "median_ms": t["latency_ms"]["median"], "throughput": batch * 1e3 / t["latency_ms"]["median"],
        "cold_ms": (t.get("load_ms") or 0) + (t.get("prepare_ms") or 0) + (t.get("first_run_ms") or 0),
        "load_ms": t.get("load_ms"), "prepare_ms": t.get("prepare_ms"), "first_run_ms": t.get("first_run_ms"),
        "planned_mib": planned / 2**20, "stream_mib": (mem.get("stream_bytes") or 0) / 2**20, "device_peak_mib": (mem.get("device_peak_bytes") or 0) / 2**20, "gpu_peak_mib": mp.delta(), "fp16_nodes": fp16_nodes, "cpu_nodes": cpu_nodes,
        "region_convs": region_convs, "converts": converts,
        "cmd": " ".join(cmd), "placement": placement,
    }
    if op_counts:  # {op: {backend: nodes}} of the graph as it ran (after the passes; "const": folded at load)
        res["op_counts"] = {}
        for n in nodes:
            c = res["op_counts"].setdefault(n.get("op"), {})
            c[n.get("backend")] = c.get(n.get("backend"), 0) + 1
    return res


def run_netrun_d2d(model, batch, prec, iters, warmup, seed=1):
    """netrun with its input already on the GPU and the output left there (the Python package, a torch CUDA
    tensor as the input, device_outputs=True), as PyTorch's CUDA-graph rows are timed: median ms per run, or None
    when the package or a GPU is missing. The float32 NCHW input is what the ONNX model takes."""
    try:
        import netrun
        import torch
    except ImportError:
        return None
    try:
        with netrun.Session(model, backends="cuda", precision=prec) as s:
            name = s.inputs[0].name
            g = torch.Generator(device="cuda").manual_seed(seed)
            x = torch.randn((batch, 3, 224, 224), device="cuda", generator=g)
            s.run({name: x}, device_outputs=True)  # prepare
            return time_torch(lambda: s.run({name: x}, device_outputs=True), iters, warmup)
    except Exception as e:  # noqa: BLE001 (reported, the row goes on without it)
        print(f"# netrun device-to-device run failed: {e}", flush=True)
        return None


def profile_netrun(a, model, batch, prec, extra=(), backend="cuda"):
    """netrun --profile (backends synchronised after every node, CUDA graphs off): mean ms per run on the
    device (nodes on cuda) and in host<->device copies, so the host-to-host figure can be split; by_op: mean ms
    per run of each op type."""
    pa = PREC_ARGS.get(prec, ["--precision", prec])
    cmd = [a.netrun, model, "--backend", backend, "--batch", str(batch)] + pa + ["--warmup", "2", "--iterations", "5",
           "--profile", "--json", "-", "--seed", "1"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None
    prof = json.loads(p.stdout).get("profile") or {}
    by = {g.get("backend"): g.get("mean_ms") or 0 for g in prof.get("by_backend") or []}
    by_op = {g.get("op"): g.get("mean_ms") or 0 for g in prof.get("by_op") or []}
    return {"device_ms": by.get(backend), "copy_ms": by.get("copy"), "by_op": by_op}


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


# ------------------------------------------------------------------------------------------------ int8 (QDQ)
INT8_MODELS = ("resnet50", "mobilenet_v2", "bert")
INT8_SEQ = 128          # BERT's sequence length
INT8_BERT_MAX_BATCH = 32
INT8_CALIB = 4          # calibration inputs (seeded random, batch 1)
# PASS: max |netrun int8 - onnxruntime int8| <= max(INT8_TOL_STEPS output quantization steps, twice what
# onnxruntime's own fused and unfused runs of the QDQ model differ by): one-unit differences at rounding ties
# propagate (docs/design.md)
INT8_TOL_STEPS = 4
INT8_TOL_REL = 0.02     # the floor where the output is no DequantizeLinear: this share of max |onnxruntime|
# ... and the share of outputs that differ at most 1.5x onnxruntime's own (optimized vs unoptimized) + 5 points: a
# wrong layer that a robust network hides from the max shows here (a convolution wrong beyond the first image of
# the batch left ResNet-50's output only 6 steps off, but 45% of it differing against onnxruntime's own 22%); never
# below INT8_TOL_DIFFER_FLOOR: one-step ties touch 20-33% of the CNNs' outputs even where onnxruntime's own two runs
# happen to agree (MobileNetV2 at batch 1 on one run: 0% against netrun's 33%, max 1 step)
INT8_TOL_DIFFER = 0.05
INT8_TOL_DIFFER_FLOOR = 0.40


def int8_feeds(name, fp, batch, seed):
    """Seeded inputs: images N(0, 1); BERT token ids below 100 and an all-ones mask (transformer_bench's)."""
    rng = np.random.default_rng(seed)
    if name == "bert":
        import transformer_bench

        return transformer_bench.exported_feeds(fp, batch, INT8_SEQ, rng)
    return {"input": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}


def int8_models(a, name, d):
    """The float model (exported here as the fp32/fp16 rows' are; BERT-base by transformer_bench's helpers) and
    its QDQ model (int8_bench.quantize: quant_pre_process, then quantize_static, QDQ format, per-channel int8
    weights, --int8-act activations, INT8_CALIB seeded random inputs), both kept in d and reused (the QDQ file is
    remade when older than the float one); and the torch module of the PyTorch rows (None with --no-torch: random
    weights, as the ONNX file's, for timing only)."""
    import int8_bench

    fp = os.path.join(d, name + ".onnx")
    qp = os.path.join(d, f"{name}.qdq_{a.int8_act}.onnx")
    module = None
    if name == "bert":
        if not os.path.exists(fp) or not a.no_torch:
            import transformer_bench

            _, _, module, inputs, in_names, dyn, _ = transformer_bench.gpu_models({"bert-base"})[0]
            module = module.eval()
            if not os.path.exists(fp):
                transformer_bench.export_onnx(module, inputs, fp, in_names, dyn)
    elif not os.path.exists(fp):
        module = export(name, fp, a.opset)
    elif not a.no_torch:
        import torchvision

        module = getattr(torchvision.models, name)(weights=None).eval()
    if not os.path.exists(qp) or os.path.getmtime(qp) < os.path.getmtime(fp):
        t0 = time.time()
        feeds = [int8_feeds(name, fp, 1, seed) for seed in range(INT8_CALIB)]
        int8_bench.quantize(fp, qp, d, a.int8_act, True, feeds=feeds)
        pre = os.path.join(d, os.path.basename(fp) + ".pre.onnx")
        if os.path.exists(pre):
            os.remove(pre)
        print(f"# quantized {name} in {time.time() - t0:.1f} s", flush=True)
    return fp, qp, module


def int8_path(op_counts, backend):
    """What ran in int8 and what stayed float, from the CLI's node list (after the passes)."""
    def n(op):  # nodes that run (not folded at load)
        return sum(v for k, v in (op_counts.get(op) or {}).items() if k != "const")
    q_on = sum((op_counts.get(op) or {}).get(backend, 0) for op in ("QLinearConv", "QLinearMatMul"))
    q_all = n("QLinearConv") + n("QLinearMatMul")
    flt = {op: n(op) for op in ("Conv", "MatMul", "Gemm") if n(op)}
    others = {}
    for op, c in op_counts.items():
        for k, v in c.items():
            if k not in (backend, "const"):
                others[k] = others.get(k, 0) + v
    return {"qlinear_on_backend": q_on, "qlinear_elsewhere": q_all - q_on, "QLinearConv": n("QLinearConv"),
            "QLinearMatMul": n("QLinearMatMul"), "float_conv_matmul": flt, "Q": n("QuantizeLinear"),
            "DQ": n("DequantizeLinear"), "nodes_elsewhere": others,
            "taken": q_on > 0 and q_all == q_on and not flt}


def int8_check(y, step, r_q, r_u, r_f):
    """netrun int8 (y) against onnxruntime on the same QDQ model, with its graph optimizations (r_q: its QDQ
    fusions) and without (r_u: the DQ -> float op -> Q chain), and against the float model (r_f)."""
    y, r_q, r_u, r_f = (np.asarray(v, np.float64) for v in (y, r_q, r_u, r_f))
    d = np.abs(y - r_q)
    ref = max(float(np.abs(r_q).max()), 1e-12)
    f_max = max(float(np.abs(r_f).max()), 1e-12)
    unit = step or ref  # differences in output steps, or as a share of max |onnxruntime int8|
    tiny = step / 2 if step else 1e-4 * ref
    ort_self = float(np.abs(r_q - r_u).max())
    res = {"step": step, "max": float(d.max()) / unit, "differ": float((d > tiny).mean()),
           "vs_unfused": float(np.abs(y - r_u).max()) / unit, "ort_self": ort_self / unit,
           "ort_self_differ": float((np.abs(r_q - r_u) > tiny).mean()),
           "nr_vs_fp32": float(np.abs(y - r_f).max() / f_max), "ort_vs_fp32": float(np.abs(r_q - r_f).max() / f_max)}
    res["tol"] = max(INT8_TOL_STEPS if step else INT8_TOL_REL, 2 * res["ort_self"])
    res["tol_differ"] = min(1.0, max(1.5 * res["ort_self_differ"] + INT8_TOL_DIFFER, INT8_TOL_DIFFER_FLOOR))
    res["per_image_max"] = [float(v) / unit for v in d.reshape(d.shape[0], -1).max(1)]
    res["pass"] = res["max"] <= res["tol"] and res["differ"] <= res["tol_differ"]
    if y.ndim == 2:  # logits: top-1 agreement with the float model
        res["top1_nr"] = float((y.argmax(-1) == r_f.argmax(-1)).mean())
        res["top1_ort"] = float((r_q.argmax(-1) == r_f.argmax(-1)).mean())
    return res


def int8_torch(name, module, feeds, batch, iters, warm):
    """PyTorch float16 on the GPU, input already there: CNNs through run_torch (eager, CUDA graph, channels_last
    graph), BERT eager and in a CUDA graph (transformer_bench.torch_times) given input_ids alone: the inputs'
    attention mask is all ones, which BertModel skips after a check that synchronises with the host
    (padding_mask.all()), and a CUDA graph cannot capture that check."""
    import torch

    if name != "bert":
        return run_torch(module, batch, "fp16", iters, warm)
    import transformer_bench

    class Ids(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids).last_hidden_state

    m = Ids(module.m).to("cuda", torch.float16)
    ids = torch.from_numpy(feeds["input_ids"]).cuda()
    t = transformer_bench.torch_times(m, (ids,), iters, warm, compile_=False)
    module.to("cpu", torch.float32)
    del ids, m
    torch.cuda.empty_cache()
    g = t.get("cuda graph")
    return {"eager_ms": t.get("eager"), "graph_ms": g if isinstance(g, float) else None,
            "graph_note": None if isinstance(g, float) else g}


def int8_section(a, work, extra):
    """The --int8 rows: (markdown rows, notes, results)."""
    import int8_bench
    import onnxruntime as ort

    d = os.path.join(work, "int8")
    os.makedirs(d, exist_ok=True)
    be = a.int8_backend
    rows, notes, results = [], [], []
    so, so_u = ort.SessionOptions(), ort.SessionOptions()
    so.log_severity_level = so_u.log_severity_level = 3
    so_u.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for name in [n for n in a.int8.split(",") if n]:
        t0 = time.time()
        fp, qp, module = int8_models(a, name, d)
        print(f"# int8 {name}: models ready in {time.time() - t0:.1f} s", flush=True)
        step = int8_bench.out_step(qp)
        o_q = ort.InferenceSession(qp, so, providers=["CPUExecutionProvider"])
        o_u = ort.InferenceSession(qp, so_u, providers=["CPUExecutionProvider"])
        o_f = ort.InferenceSession(fp, so, providers=["CPUExecutionProvider"])
        unit = "seq/s" if name == "bert" else "img/s"
        batches = [int(b) for b in a.int8_batches.split(",")]
        if name == "bert":
            batches = [b for b in batches if b <= INT8_BERT_MAX_BATCH]
        for b in batches:
            t_row = time.time()
            feeds = int8_feeds(name, fp, b, 1000 + b)
            ind, od = os.path.join(d, f"in_{name}_b{b}"), os.path.join(d, f"out_{name}_b{b}")
            for p in (ind, od):
                os.makedirs(p, exist_ok=True)
                for f in os.listdir(p):
                    os.remove(os.path.join(p, f))
            inputs = []
            for k, v in feeds.items():
                np.save(os.path.join(ind, k + ".npy"), v)
                inputs += ["--input", f"{k}={os.path.join(ind, k + '.npy')}"]
            if be == "cuda":
                iters, warm = (50, 10) if b == 1 else (20, 3) if b <= 32 else (8, 3)
            else:  # the CPU run that tests this script: short
                iters, warm = 3, 1
            q = run_netrun(a, qp, b, "fp32", iters, warm, extra + inputs, outdir=od, backend=be, op_counts=True)
            f16 = run_netrun(a, fp, b, "fp16", iters, warm, extra + inputs, backend=be)
            tr = {}
            if not a.no_torch and module is not None:
                tr = int8_torch(name, module, feeds, b, iters, warm)
            r = {"model": name, "batch": b, "netrun_int8": q, "netrun_fp16": f16, "torch_fp16": tr,
                 "act": a.int8_act, "backend": be}
            if "error" not in q:
                names = [o.name for o in o_q.get_outputs()]
                got = load_outputs(od).get(names[0].replace("/", "_") + ".npy")
                if got is None:
                    r["check"] = {"error": f"netrun wrote no {names[0]} in {od}"}
                else:
                    t_check = time.time()
                    r["check"] = int8_check(got, step, o_q.run(None, feeds)[0], o_u.run(None, feeds)[0],
                                            o_f.run(None, feeds)[0])
                    r["check"]["seconds"] = time.time() - t_check  # the three onnxruntime runs
                r["path"] = int8_path(q.pop("op_counts"), be)
                if str(b) in a.int8_profile_batches.split(","):
                    r["profile"] = profile_netrun(a, qp, b, "fp32", extra + inputs, backend=be)
            r["seconds"] = time.time() - t_row
            results.append(r)
            print(json.dumps(r, default=str), flush=True)
            rows.append(int8_row(r, unit))
            notes.extend(int8_notes(r))
        del o_q, o_u, o_f, module
    return rows, notes, results


def int8_row(r, unit):
    fmt = lambda v, f="%.3f": (f % v) if v is not None else "-"
    q, h, t, c = r["netrun_int8"], r["netrun_fp16"], r["torch_fp16"], r.get("check") or {}
    if "error" in q:
        return f"| {r['model']} | {r['batch']} | netrun int8 failed: {q['error']} | | | | | | | | |"
    hm = h.get("median_ms")
    g = t.get("graph_ms") or t.get("eager_ms")
    if "error" in c or not c:
        chk = "FAIL: " + c.get("error", "no check")
    else:
        u = "%.1f steps" if c["step"] else "%.2g of max"
        chk = ("%s: " + u + " (tol " + u + "), %.1f%% differ (tol %.1f%%)") % (
            "PASS" if c["pass"] else "FAIL", c["max"], c["tol"], 100 * c["differ"], 100 * c["tol_differ"])
    path = r.get("path") or {}
    return "| %s | %d | %s | %s %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["model"], r["batch"], fmt(q["median_ms"]), fmt(q["throughput"], "%.0f"), unit,
        fmt(hm) if "error" not in h else "failed", fmt(h.get("throughput"), "%.0f"),
        fmt(q["throughput"] / h["throughput"] if h.get("throughput") else None, "%.2f"),
        fmt(g) + ("" if t.get("graph_ms") or not g else " (eager)"), fmt(q["median_ms"] / g if g else None, "%.2f"),
        chk, "%d on %s, %d elsewhere" % (path.get("qlinear_on_backend", 0), r["backend"],
                                        path.get("qlinear_elsewhere", 0)) + ("" if path.get("taken") else " FELL BACK"))


def int8_notes(r):
    nm, b, be = r["model"], r["batch"], r["backend"]
    out = []
    q, h, t, c, p = r["netrun_int8"], r["netrun_fp16"], r["torch_fp16"], r.get("check") or {}, r.get("path")
    if "error" in h:
        out.append(f"{nm} b{b}: netrun fp16 failed: {h['error']}")
    if p:
        flt = ", ".join(f"{k} {v}" for k, v in p["float_conv_matmul"].items()) or "none"
        where = ", ".join(f"{k} {v}" for k, v in p["nodes_elsewhere"].items()) or "none"
        out.append(f"{nm} b{b} int8 path: {p['QLinearConv']} QLinearConv + {p['QLinearMatMul']} QLinearMatMul, "
                   f"{p['qlinear_on_backend']} of them on {be}; float Conv/MatMul/Gemm left: {flt}; "
                   f"QuantizeLinear {p['Q']}, DequantizeLinear {p['DQ']} left (not folded); nodes not on {be}: {where}"
                   + ("" if p["taken"] else " -- the int8 path was NOT taken everywhere"))
    if c and "error" not in c:
        u = f"output steps (step {c['step']:.4g})" if c["step"] else "x max |onnxruntime int8|"
        out.append(f"{nm} b{b} outputs: netrun int8 ({be}) vs onnxruntime int8 (CPU, same QDQ model and inputs): max "
                   f"|diff| {c['max']:.3g} {u}, {100 * c['differ']:.2f}% of outputs differ (against onnxruntime "
                   f"without graph optimizations: {c['vs_unfused']:.3g}); onnxruntime's own optimized vs unoptimized "
                   f"runs: {c['ort_self']:.3g}, {100 * c['ort_self_differ']:.2f}% differ; tolerance {c['tol']:.3g} and "
                   f"{100 * c['tol_differ']:.1f}%: " + ("PASS" if c["pass"] else "FAIL") + "; max per image "
                   + " ".join(f"{v:.3g}" for v in c["per_image_max"][:8])
                   + ("..." if len(c["per_image_max"]) > 8 else "")
                   + f". Against the float model (onnxruntime fp32): max |diff| / "
                   f"max |fp32| netrun int8 {c['nr_vs_fp32']:.3g}, onnxruntime int8 {c['ort_vs_fp32']:.3g}"
                   + (f"; top-1 agreement with fp32 netrun {c['top1_nr']:.0%}, onnxruntime {c['top1_ort']:.0%}"
                      if "top1_nr" in c else ""))
    if t.get("graph_cl_ms") and "error" not in q:
        out.append(f"{nm} b{b}: PyTorch fp16 channels_last graph {t['graph_cl_ms']:.3f} ms (netrun int8 / it "
                   f"{q['median_ms'] / t['graph_cl_ms']:.2f}); eager {t['eager_ms']:.3f} ms")
    if t.get("graph_note"):
        out.append(f"{nm} b{b}: PyTorch CUDA graph {t['graph_note']}; eager time used")
    pf = r.get("profile") or {}
    if pf.get("by_op"):
        tot = sum(pf["by_op"].values()) or 1e-12
        top = sorted(pf["by_op"].items(), key=lambda kv: -kv[1])[:5]
        out.append(f"{nm} b{b} netrun int8 --profile (per node synchronised): {be} {pf.get('device_ms') or 0:.3f} ms "
                   f"+ copies {pf.get('copy_ms') or 0:.3f} ms per run; by op: "
                   + ", ".join(f"{k} {v:.3f} ms ({v / tot:.0%})" for k, v in top))
    return out


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
    ap.add_argument("--int8", default="", help="QDQ int8 rows for these models (resnet50,mobilenet_v2,bert)")
    ap.add_argument("--int8-batches", default="1,32,256", help="batches of the int8 rows (BERT: those <= 32)")
    ap.add_argument("--int8-act", choices=["int8", "uint8"], default="int8", help="activation type of the quantizer")
    ap.add_argument("--int8-profile-batches", default="32", help="int8 batches also run once with --profile")
    ap.add_argument("--int8-only", action="store_true", help="the int8 rows alone (no --models rows, no memcheck)")
    ap.add_argument("--int8-backend", default="cuda", help=argparse.SUPPRESS)  # cpu: tests the rows without a GPU
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.int8_only:
        a.models, a.no_memcheck = "", True
    for n in (x for x in a.int8.split(",") if x):
        if n not in INT8_MODELS:
            ap.error(f"--int8: {n} is not one of {','.join(INT8_MODELS)}")
    work = a.work or tempfile.mkdtemp(prefix="netrun-gpubench-")
    os.makedirs(work, exist_ok=True)
    try:
        import torch

        dev = torch.cuda.get_device_name(0)
    except Exception as e:  # noqa: BLE001 - only without PyTorch rows: the int8 rows' CPU test (--int8-backend cpu)
        if not a.no_torch:
            raise
        dev = f"no CUDA device through PyTorch ({type(e).__name__})"
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    extra = a.extra.split() if a.extra else []
    rows, notes, results = [], [], []
    t_start = time.time()
    for name in [n for n in a.models.split(",") if n]:
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
                if b > 1 and "error" not in nr and not a.no_torch:
                    nr["d2d_ms"] = run_netrun_d2d(path, b, prec, iters, warm)
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
                if nr.get("d2d_ms") and tr.get("graph_cl_ms"):
                    best = min(v for v in (tr.get("graph_ms"), tr["graph_cl_ms"]) if v)
                    notes.append(f"{name} b{b} {prec}: netrun with the input and output on the GPU (Python package, "
                                 f"torch CUDA tensor) {nr['d2d_ms']:.3f} ms; / PyTorch's best CUDA graph "
                                 f"({best:.3f} ms) {nr['d2d_ms'] / best:.2f}")
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
    int8_rows, int8_notes_ = [], []
    if a.int8:
        int8_rows, int8_notes_, res8 = int8_section(a, work, extra)
        results.extend(res8)
    hdr = ("| model | batch | prec | netrun ms | netrun img/s | torch eager ms | torch graph ms | /eager | /graph | "
           "cold start ms | netrun planned / GPU peak MiB / torch tensors MiB |\n|---|---|---|---|---|---|---|---|---|---|---|")
    md = [f"Measured {started} on {dev}, one run of `python3 tools/bench/gpu_bench.py {' '.join(sys.argv[1:])}` "
          f"({time.time() - t_start:.0f} s).", ""]
    if rows or notes:
        md += [hdr] + rows + [""] + ["- " + n for n in notes]
    if int8_rows:
        md += ["", f"int8 (QDQ: onnxruntime quantize_static, per-channel int8 weights, {a.int8_act} activations, "
               f"calibrated on {INT8_CALIB} seeded random inputs, not real data) on {a.int8_backend}: netrun int8 = "
               "the QDQ model with --precision fp32; netrun fp16 = the float model with --precision fp16; PyTorch = "
               "model.half() in a CUDA graph, input on the GPU. int8/fp16 = throughput ratio (> 1: int8 faster); "
               "int8 / torch = time ratio (< 1: netrun faster). check = netrun int8 against onnxruntime CPU on the "
               f"same QDQ model and inputs (PASS: max |diff| <= the larger of {INT8_TOL_STEPS} output steps and twice "
               "what onnxruntime's optimized and unoptimized runs differ by, and the share of outputs that differ <= "
               "1.5x theirs + 5 points, at least 40%).", "",
               "| model | batch | netrun int8 ms | int8 throughput | netrun fp16 ms | fp16 throughput | int8/fp16 | "
               "torch fp16 graph ms | int8 / torch | check vs onnxruntime int8 | QLinearConv/MatMul |",
               "|---|---|---|---|---|---|---|---|---|---|---|"] + int8_rows + [""] + ["- " + n for n in int8_notes_]
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
