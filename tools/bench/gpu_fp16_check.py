#!/usr/bin/env python3
"""Accuracy of netrun's reduced precisions on the GPU (issue #4): for each model (torchvision, random weights,
exported as gpu_bench.py does) one seeded input [B, 3, 224, 224] in [0, 1) is run through

  netrun --precision fp32 / tf32 / fp16 (both float16 paths, then NCHW only, then NHWC only: --set
  cuda.fp16_paths=...), and PyTorch float32 and float16 (model.half()) on the same input,

and the error of each against netrun fp32 is printed as max |diff| / max |reference| (PyTorch fp16 against
PyTorch fp32 shows what float16 itself costs on this model). Exit 1 when netrun fp32 is off PyTorch fp32 by more
than 1e-3 or netrun fp16 is off netrun fp32 by more than --tol (default 1e-2) while PyTorch fp16 is within it.

usage: python3 tools/bench/gpu_fp16_check.py --netrun BUILD/bin/netrun [--models a,b] [--batch 1] [--tol 0.01]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_bench import export  # noqa: E402


def rel(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-12))


def netrun_out(a, model, x_path, prec, work, tag, extra=()):
    od = os.path.join(work, tag)
    os.makedirs(od, exist_ok=True)
    cmd = [a.netrun, model, "--backend", "cuda", "--precision", prec, "--input", "input=" + x_path, "--warmup", "0",
           "--iterations", "1", "--quiet", "--output-dir", od] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode:
        print(f"  {tag}: netrun failed: {p.stderr.strip()[-300:]}")
        return None
    return np.load(os.path.join(od, "logits.npy"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,squeezenet1_1,efficientnet_b0")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    import torch

    work = a.work or tempfile.mkdtemp(prefix="netrun-fp16check-")
    os.makedirs(work, exist_ok=True)
    bad = 0
    rng = np.random.default_rng(1)
    for name in a.models.split(","):
        path = os.path.join(work, name + ".onnx")
        m = export(name, path, 17)  # the model PyTorch runs is the one exported
        x = rng.random((a.batch, 3, 224, 224), dtype=np.float32)
        xp = os.path.join(work, name + "_x.npy")
        np.save(xp, x)
        with torch.inference_mode():
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
            mc = m.to("cuda")
            t32 = mc(torch.from_numpy(x).cuda()).float().cpu().numpy()
            t16 = mc.half()(torch.from_numpy(x).cuda().half()).float().cpu().numpy()
            m.float().cpu()
        ref = netrun_out(a, path, xp, "fp32", work, name + "_fp32")
        if ref is None:
            bad += 1
            continue
        row = {"netrun fp32 vs torch fp32": rel(t32, ref), "torch fp16 vs torch fp32": rel(t32, t16)}
        runs = [("tf32", "tf32", ()), ("fp16", "fp16", ()),
                ("fp16 NCHW only", "fp16", ("--set", "cuda.fp16_paths=nchw")),
                ("fp16 NHWC only", "fp16", ("--set", "cuda.fp16_paths=nhwc"))]
        for tag, prec, extra in runs:
            o = netrun_out(a, path, xp, prec, work, name + "_" + tag.replace(" ", "_"), extra)
            row["netrun " + tag + " vs netrun fp32"] = rel(ref, o) if o is not None else float("nan")
        print(f"{name} batch {a.batch}:")
        for k, v in row.items():
            print(f"  {k:34s} {v:.2e}")
        if row["netrun fp32 vs torch fp32"] > 1e-3:
            bad += 1
            print("  FAIL: netrun fp32 is off PyTorch fp32")
        if not row["netrun fp16 vs netrun fp32"] <= a.tol and row["torch fp16 vs torch fp32"] <= a.tol:
            bad += 1
            print(f"  FAIL: netrun fp16 is off fp32 by more than {a.tol} while PyTorch fp16 is within it")
    print("fp16 check:", "FAILED" if bad else "passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
