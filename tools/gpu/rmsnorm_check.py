#!/usr/bin/env python3
"""RMSNorm on CUDA through the graph pass: T5- and LLaMA-shaped blocks as torch exports them (RMSNorm written as
Pow, ReduceMean, Add eps, 1 / Sqrt, Mul, weight Mul; Linear layers as MatMul; a residual Add) run with the norms
fused into RMSNormalization (graph.fuse_transformer=1, the default) and unfused (=0), under --precision fp32 and
fp16, on --backend (cuda,cpu), against the CPU's float32 outputs of the unfused model.

Models: "t5" (d 512, rows 2 x 128: the warp-per-row kernel; Div(1, Sqrt) and Reciprocal(Sqrt) forms), "llama"
(d 4096, rows 1 x 32: the block-per-row kernel; Pow(-0.5) form, the weight Mul last).

A row fails when: the fused run has not exactly the model's norms as RMSNormalization nodes on the first backend
(the unfused run any); an output is not finite; the difference relative to the output's largest value exceeds 1e-3
(fp32) or 3e-2 (fp16); under fp16 with the norms fused, more than the one float16 Cast at the input (the norms sit
inside the plain float16 region, no Casts around them). Also prints the median latency of both forms (netrun CLI,
--iters runs after 10 warm-ups, alternating over --rounds rounds) and their ratio (informational; losing rows
included).

    NETRUN_BACKEND_PATH=build/lib/netrun/backends python3 tools/gpu/rmsnorm_check.py --netrun build/bin/netrun
    (--backend cpu --precisions fp32: a dry run of the script without a GPU)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import transformer_bench  # noqa: E402  (Builder)


def rms(b, x, scope, d, rsqrt, weight_last):
    w = b.init(f"{scope}.weight", b.rng.uniform(0.5, 1.5, d).astype(np.float32))
    x32 = b.op("Cast", [x], scope, to=TensorProto.FLOAT)
    v = b.op("ReduceMean", [b.op("Pow", [x32, b.const(np.float32(2.0), scope)], scope)], scope, axes=[-1], keepdims=1)
    ve = b.op("Add", [v, b.const(np.float32(1e-6), scope)], scope)
    if rsqrt == "pow":
        r = b.op("Pow", [ve, b.const(np.float32(-0.5), scope)], scope)
    elif rsqrt == "recip":
        r = b.op("Reciprocal", [b.op("Sqrt", [ve], scope)], scope)
    else:
        r = b.op("Div", [b.const(np.float32(1.0), scope), b.op("Sqrt", [ve], scope)], scope)
    h = b.op("Mul", [x32, r], scope)
    return b.op("Mul", [h, w] if weight_last else [w, h], scope)


def block(name):
    """x -> RMSNorm -> MatMul -> Relu -> MatMul -> + x -> RMSNorm -> MatMul -> y; (model, x shape, norms)."""
    d, ff, shape, forms = {"t5": (512, 1024, (2, 128), ("div", "recip")),
                           "llama": (4096, 1024, (1, 32), ("pow", "pow"))}[name]
    b = transformer_bench.Builder(21)
    h = rms(b, "x", "/ln0", d, forms[0], name == "llama")
    h = b.op("Relu", [b.op("MatMul", [h, b.init("/ff.wi", b.w(d, ff))])])
    h = b.op("MatMul", [h, b.init("/ff.wo", b.w(ff, d))])
    h = b.op("Add", ["x", h])
    h = rms(b, h, "/ln1", d, forms[1], name == "llama")
    y = b.op("MatMul", [h, b.init("/out", b.w(d, 64))])
    m = b.model(name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape) + [d])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], opset=17)
    return m, list(shape) + [d], 2


def run(a, path, xin, backend, prec, fuse, out_dir, iters):
    cmd = [a.netrun, path, "--backend", backend, "--precision", prec, "--warmup", "10", "--iterations", str(iters),
           "--json", "-", "--output-dir", out_dir, "--input", f"x={xin}", "--set", f"graph.fuse_transformer={fuse}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
    j = json.loads(p.stdout)
    outs = [np.load(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir)) if f.endswith(".npy") and f != "x.npy"]
    return j, outs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--backend", default="cuda,cpu")
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--models", default="t5,llama")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    first = a.backend.split(",")[0]
    r = subprocess.run([a.netrun, "--backends"], capture_output=True, text=True)
    if not any(line.split()[:2] == [first, "yes"] for line in r.stdout.splitlines()):
        print(f"rmsnorm_check: backend {first} not available:\n{r.stdout}")
        return 1
    fails = 0
    print(f"{'model':>6} {'prec':>5} {'fuse':>4} {'RMSNorm on ' + first:>16} {'f16 Casts':>9} {'rel diff':>9} "
          f"{'median ms':>9}")
    with tempfile.TemporaryDirectory() as d:
        for name in a.models.split(","):
            m, shape, norms = block(name)
            path = os.path.join(d, f"{name}.onnx")
            onnx.save(m, path)
            xin = os.path.join(d, "x.npy")
            np.save(xin, np.random.default_rng(3).standard_normal(shape).astype(np.float32))
            ref_dir = os.path.join(d, "ref")
            os.makedirs(ref_dir, exist_ok=True)
            _, ref = run(a, path, xin, "cpu", "fp32", "0", ref_dir, 1)
            for prec in a.precisions.split(","):
                times = {"1": [], "0": []}
                for rnd in range(a.rounds):
                    for fuse in ("1", "0"):
                        od = os.path.join(d, f"o_{name}_{prec}_{fuse}_{rnd}")
                        os.makedirs(od)
                        try:
                            j, outs = run(a, path, xin, a.backend, prec, fuse, od, a.iters)
                        except RuntimeError as e:
                            print(f"FAIL {name} {prec} fuse={fuse}: {e}")
                            fails += 1
                            continue
                        times[fuse].append(j["timings"]["latency_ms"]["median"])
                        if rnd:
                            continue
                        nodes = j["nodes"]
                        n_rms = sum(1 for n in nodes if n["op"] == "RMSNormalization" and n["backend"] == first)
                        n_any = sum(1 for n in nodes if n["op"] == "RMSNormalization")
                        casts = sum(1 for n in nodes if n["op"] == "Cast" and n["name"].endswith(".to_fp16"))
                        diff = max(float(np.abs(o.astype(np.float64) - r).max() / max(1.0, float(np.abs(r).max())))
                                   for o, r in zip(outs, ref))
                        errs = []
                        if fuse == "1" and n_rms != norms:
                            errs.append(f"{n_rms} RMSNormalization on {first}, expected {norms}")
                        if fuse == "0" and n_any:
                            errs.append("fused with graph.fuse_transformer=0")
                        if not all(np.isfinite(o).all() for o in outs):
                            errs.append("output not finite")
                        if not diff <= (3e-2 if prec == "fp16" else 1e-3):
                            errs.append(f"relative diff {diff:.2e}")
                        if prec == "fp16" and fuse == "1" and first == "cuda" and casts != 1:
                            errs.append(f"{casts} Casts to float16 (expected 1: the norms inside the region)")
                        fails += bool(errs)
                        print(f"{name:>6} {prec:>5} {fuse:>4} {n_rms:>16} {casts:>9} {diff:9.2e} "
                              f"{statistics.median(times[fuse]):9.4f} " + ("FAIL " + "; ".join(errs) if errs else "ok"))
                if times["1"] and times["0"]:
                    tf, tu = statistics.median(times["1"]), statistics.median(times["0"])
                    print(f"{name:>6} {prec:>5} fused {tf:.4f} ms, unfused {tu:.4f} ms, fused/unfused {tf / tu:.2f} "
                          f"(median of {a.rounds} rounds)")
    print(f"rmsnorm_check: {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
