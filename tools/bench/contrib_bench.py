#!/usr/bin/env python3
"""netrun on models written by onnxruntime's transformer optimizer (the contrib plugin's ops) against the same
model unoptimized, and against onnxruntime on both, in ONE process with interleaved rounds.

The model is tests/models' bert_class (2 layers, hidden 64, 4 heads: small, so per-node overheads weigh in).
optimize_model(model_type="bert") writes it twice: with its default fusions (com.microsoft Attention,
SkipLayerNormalization, BiasGelu) and without attention fusion. Every engine gets the same threads (netrun
threads=N; onnxruntime intra_op_num_threads=N, inter_op=1, its graph optimizations at their default, all).
Each round runs every engine `--block` times back to back; the time of an engine is the median over all its runs,
and "paired" is the median over rounds of the per-round ratio. Outputs are compared with onnxruntime's on the
unoptimized model (max abs diff).

    python3 tools/bench/contrib_bench.py --lib build/lib/libnetrun.so --threads 1 --batch 4 --seq 32
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.transformers.fusion_options import FusionOptions
from onnxruntime.transformers.optimizer import optimize_model

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
from netrun_ctypes import Netrun  # noqa: E402
import build_models  # noqa: E402
from cpu_bench import cpu_model  # noqa: E402


def optimized(src, dst, attention):
    opts = FusionOptions("bert")
    opts.enable_attention = attention
    opts.enable_shape_inference = False  # needs sympy, which the pinned environment leaves out
    m = optimize_model(src, model_type="bert", num_heads=4, hidden_size=64, opt_level=0, optimization_options=opts)
    m.save_model_to_file(dst)
    return sorted({n.op_type for n in onnx.load(dst).graph.node if n.domain == "com.microsoft"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32, help="at most 32 (the model's position table)")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--block", type=int, default=20)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="netrun-contrib-bench-")
    model, _ = build_models.bert_class()
    paths = {"original": os.path.join(work, "bert.onnx")}
    onnx.save(model, paths["original"])
    ops = {}
    for name, att in (("optimized", True), ("optimized, no Attention", False)):
        paths[name] = os.path.join(work, name.replace(", ", "_").replace(" ", "_") + ".onnx")
        ops[name] = optimized(paths["original"], paths[name], att)
    rng = np.random.default_rng(1)
    feeds = {"input_ids": rng.integers(0, 100, (a.batch, a.seq)).astype(np.int64),
             "attention_mask": np.ones((a.batch, a.seq), np.int64)}
    feeds["attention_mask"][0, a.seq // 2:] = 0
    nr = Netrun(a.lib)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
    engines = {}
    for name, p in paths.items():
        s = nr.session(p, backends="cpu", threads=a.threads)
        engines[f"netrun {name}"] = (lambda s=s: s.run(feeds), s)
        o = ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
        engines[f"onnxruntime {name}"] = (lambda o=o: o.run(None, feeds), None)
    want = engines["onnxruntime original"][0]()
    for name, (fn, _) in engines.items():
        got = fn()
        err = max(float(np.max(np.abs(np.asarray(g, np.float64) - w))) for g, w in zip(got, want))
        print(f"{name:36s} max abs diff vs onnxruntime original: {err:.2g}")
    times = {n: [] for n in engines}
    per_round = {n: [] for n in engines}
    for _ in range(a.rounds):
        for name, (fn, _) in engines.items():
            t0 = time.perf_counter()
            for _ in range(a.block):
                fn()
            dt = (time.perf_counter() - t0) / a.block * 1e3
            times[name].append(dt)
            per_round[name].append(dt)
    print(f"\nbert_class batch {a.batch} seq {a.seq}, {a.threads} thread(s), {a.rounds} rounds x {a.block} runs; "
          f"{cpu_model()}")
    for name, o in ops.items():
        print(f"  {name}: com.microsoft {', '.join(o)}")
    print(f"\n{'engine':36s} {'median ms':>10s}")
    for name in engines:
        print(f"{name:36s} {np.median(times[name]):10.3f}")
    base = "netrun original"
    print(f"\n{'ratio (lower is faster)':54s} {'medians':>8s} {'paired':>8s}")
    for name in engines:
        if name == base:
            continue
        r = np.median(times[name]) / np.median(times[base])
        paired = np.median(np.asarray(per_round[name]) / np.asarray(per_round[base]))
        print(f"{name + ' / ' + base:54s} {r:8.2f} {paired:8.2f}")
    for kind in ("optimized", "optimized, no Attention", "original"):
        r = np.median(times[f"netrun {kind}"]) / np.median(times[f"onnxruntime {kind}"])
        paired = np.median(np.asarray(per_round[f"netrun {kind}"]) / np.asarray(per_round[f"onnxruntime {kind}"]))
        print(f"{'netrun / onnxruntime, ' + kind:54s} {r:8.2f} {paired:8.2f}")


if __name__ == "__main__":
    main()
