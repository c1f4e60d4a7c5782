#!/usr/bin/env python3
"""MatMulBias on CUDA: transformers whose Linear layers (MatMul + bias Add, and the Relu / tanh Gelu after them) run
as one GEMM with the bias in cuBLASLt's epilogue (graph.fuse_matmul_bias=1, the default) against the same model
with the bias Adds kept (graph.fuse_matmul_bias=0), on tools/bench/transformer_bench.py's exporter-shaped models
(ViT-B/16, BERT-base and GPT-2 small at their real sizes, random weights; GPT-2's Gelu is the tanh form, which the
GELU epilogue takes where its self-check at kernel creation passed).

Each row: model, batch, precision, how many MatMulBias nodes ran on cuda and with which kernels (cublasLt with the
bias epilogue, or the plain GEMM and a bias kernel), how many of them took the residual Add after them (column res:
cuBLASLt's C with beta 1, or the plain GEMM onto R; two per transformer block), the median latency of both forms
(netrun CLI, --iterations runs after 10 warm-ups, the two alternating over --rounds rounds; the figure is the median of the rounds' medians),
the ratio, and the largest difference between their outputs relative to the output's largest value (the fused
form adds the bias to the float32 accumulator where the unfused one rounds the product first: under fp16 they differ
by float16 rounding). A row fails when no MatMulBias ran, none took a residual Add (on cuda), an output is not
finite, or the difference exceeds 1e-3 (fp32) / 3e-2 (tf32, fp16).

    NETRUN_BACKEND_PATH=build/lib/netrun/backends python3 tools/gpu/matmul_bias_check.py --netrun build/bin/netrun
    (--tiny --backend cpu --precisions fp32: a dry run of the script without a GPU)
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import transformer_bench  # noqa: E402


def run(a, path, d, feeds, prec, fuse, out_dir, iters):
    cmd = [a.netrun, path, "--backend", a.backend, "--strict", "--precision", prec, "--warmup", "10", "--iterations",
           str(iters), "--json", "-", "--output-dir", out_dir, "--set", f"graph.fuse_matmul_bias={fuse}"]
    for nm in feeds:
        cmd += ["--input", f"{nm}={os.path.join(d, nm + '.npy')}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode:
        raise RuntimeError(f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--models", default="vit-b16:32,bert-base:8,gpt2-small:8", help="model:batch list")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--precisions", default="fp16,tf32,fp32")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="the tiny model sizes, one round (checks the script)")
    ap.add_argument("--backend", default="cuda", help="cpu: a dry run of the script on a machine without a GPU")
    a = ap.parse_args()
    r = subprocess.run([a.netrun, "--backends"], capture_output=True, text=True)
    if not any(line.split()[:2] == [a.backend, "yes"] for line in r.stdout.splitlines()):
        print(f"matmul_bias_check: no usable {a.backend} backend (netrun --backends)")
        return 1
    work = tempfile.mkdtemp(prefix="netrun-mmb-")
    rng = np.random.default_rng(3)
    bad = 0
    print(f"{'model':18s} {'prec':5s} {'MatMulBias (kernels)':58s} {'res':>4s} {'fused ms':>9s} {'unfused ms':>10s} "
          f"{'speedup':>8s} {'rel diff':>9s}")
    for item in a.models.split(","):
        name, batch = item.split(":")
        sz = (transformer_bench.TINY if a.tiny else transformer_bench.SIZES)[name]
        m, mk = transformer_bench.BUILDERS[name](sz)
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        feeds = mk(int(batch), min(a.seq, sz.get("P", a.seq)), rng)
        for nm, arr in feeds.items():
            np.save(os.path.join(d, nm + ".npy"), arr)
        for prec in a.precisions.split(","):
            fused, plain, kernels, outs, n_res = [], [], collections.Counter(), {}, 0
            try:
                for _ in range(1 if a.tiny else a.rounds):
                    for fuse in ("1", "0"):
                        od = os.path.join(d, f"{prec}-{fuse}")
                        j = run(a, path, d, feeds, prec, fuse, od, 3 if a.tiny else a.iters)
                        (fused if fuse == "1" else plain).append(j["timings"]["latency_ms"]["median"])
                        if fuse == "1":
                            kernels = collections.Counter(
                                n["kernel"].split(" (")[0] for n in j["nodes"]
                                if n["op"] == "MatMulBias" and n["backend"] == a.backend)
                            n_res = sum(1 for n in j["nodes"] if n["op"] == "MatMulBias" and n["backend"] == a.backend
                                        and "residual" in n["kernel"])
                        outs[fuse] = [np.load(os.path.join(od, f)).astype(np.float64) for f in sorted(os.listdir(od))]
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                print(f"{name + ':' + batch:18s} {prec:5s} FAIL {e}")
                bad += 1
                continue
            diff, finite = 0.0, True
            for yf, yu in zip(outs["1"], outs["0"]):
                finite = finite and bool(np.isfinite(yf).all())
                scale = max(1.0, float(np.max(np.abs(yu)))) if yu.size else 1.0
                diff = max(diff, float(np.max(np.abs(yf - yu))) / scale if yf.shape == yu.shape else float("inf"))
            tol = 1e-3 if prec == "fp32" else 3e-2
            ok = sum(kernels.values()) > 0 and finite and diff <= tol and (n_res > 0 or a.backend != "cuda")
            bad += not ok
            ks = "; ".join(f"{c} {k}" for k, c in kernels.most_common())
            mf, mu = statistics.median(fused), statistics.median(plain)
            print(f"{name + ':' + batch:18s} {prec:5s} {ks[:58]:58s} {n_res:4d} {mf:9.3f} {mu:10.3f} {mu / mf:7.2f}x "
                  f"{diff:9.2g}{'' if ok else '  FAIL'}", flush=True)
    print("matmul_bias_check:", "all rows agree" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
