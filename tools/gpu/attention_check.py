#!/usr/bin/env python3
"""The CUDA Attention paths side by side on one GPU: the fused float16 kernel (the default for float16;
--set cuda.flash_attention=1 here) and the cuBLAS path (batched GEMMs around a softmax kernel;
cuda.flash_attention=0) against the simple kernel (cuda.attention_workspace_mb=0 cuda.flash_attention=0), on
single-node Attention models made with onnx.helper: BERT-base sized (3-D, batch 32, sequence 128, 12 heads of 64,
additive padding mask), the same 4-D, GQA 32/8 heads with causal masking at sequence 512, a 2048-key causal one
whose scores exceed a 64 MiB cap (several passes), and float16 edge cases of the fused kernel (197 tokens, head
size 128 with a full mask, head size 32 with a boolean causal mask and a fully masked row). Each row: the path's
median latency and the simple kernel's (netrun CLI, --iterations runs after 10 warm-ups, the paths alternating
over --rounds rounds; the figure is the median of the rounds' medians), the ratio, and the largest difference
between their outputs (the simple kernel computes in float32 without tensor cores).

    NETRUN_BACKEND_PATH=build/lib/netrun/backends python3 tools/gpu/attention_check.py --netrun build/bin/netrun
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

ELEM = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}


def model(name, q, k, v, mask, attrs, dt):
    t = ELEM[dt]
    ins = [helper.make_tensor_value_info("q", t, q), helper.make_tensor_value_info("k", t, k),
           helper.make_tensor_value_info("v", t, v)]
    names = ["q", "k", "v"]
    if mask is not None:
        mt = TensorProto.BOOL if name == "c" else t
        ins.append(helper.make_tensor_value_info("mask", mt, mask))
        names.append("mask")
    node = helper.make_node("Attention", names, ["y"], **attrs)
    g = helper.make_graph([node], name, ins, [helper.make_tensor_value_info("y", t, q)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], producer_name="attention_check")
    m.ir_version = 10
    return m


def cases():
    """(name, model, inputs, settings of the cuBLAS run)"""
    rng = np.random.default_rng(1)
    out = []
    for dt in (np.float32, np.float16):
        sfx = "f32" if dt == np.float32 else "f16"
        B, L, H, E = 32, 128, 12, 64
        mask = np.zeros((B, 1, 1, L), np.float32)
        for b in range(B):
            mask[b, ..., L - (b % 16) * 4:] = -10000.0
        feeds = {"q": rng.standard_normal((B, L, H * E)).astype(dt), "k": rng.standard_normal((B, L, H * E)).astype(dt),
                 "v": rng.standard_normal((B, L, H * E)).astype(dt), "mask": mask.astype(dt)}
        out.append((f"bert_3d_b32_{sfx}", model("b3", (B, L, H * E), (B, L, H * E), (B, L, H * E), mask.shape,
                                                 {"q_num_heads": H, "kv_num_heads": H}, dt), feeds, {}))
        f4 = {"q": feeds["q"].reshape(B, L, H, E).transpose(0, 2, 1, 3).copy(),
              "k": feeds["k"].reshape(B, L, H, E).transpose(0, 2, 1, 3).copy(),
              "v": feeds["v"].reshape(B, L, H, E).transpose(0, 2, 1, 3).copy(), "mask": feeds["mask"]}
        out.append((f"bert_4d_b32_{sfx}", model("b4", (B, H, L, E), (B, H, L, E), (B, H, L, E), mask.shape, {}, dt),
                    f4, {}))
        B, L, Hq, Hk = 4, 512, 32, 8
        feeds = {"q": rng.standard_normal((B, L, Hq * E)).astype(dt),
                 "k": rng.standard_normal((B, L, Hk * E)).astype(dt), "v": rng.standard_normal((B, L, Hk * E)).astype(dt)}
        out.append((f"gqa_3d_causal_512_{sfx}", model("g", (B, L, Hq * E), (B, L, Hk * E), (B, L, Hk * E), None,
                                                       {"q_num_heads": Hq, "kv_num_heads": Hk, "is_causal": 1}, dt),
                    feeds, {}))
        B, L, H = 1, 2048, 16
        feeds = {"q": rng.standard_normal((B, H, L, E)).astype(dt), "k": rng.standard_normal((B, H, L, E)).astype(dt),
                 "v": rng.standard_normal((B, H, L, E)).astype(dt)}
        out.append((f"long_4d_causal_2048_cap64_{sfx}", model("l", (B, H, L, E), (B, H, L, E), (B, H, L, E), None,
                                                               {"is_causal": 1}, dt), feeds,
                    {"cuda.attention_workspace_mb": "64"}))
    # float16 shapes for the fused kernel's edges: ViT's 197 tokens (a partial last tile of keys and of query rows),
    # head sizes 32 and 128, a full [B, 1, L, L] additive mask, a boolean mask with a fully masked row (NaN)
    dt = np.float16
    B, L, H, E = 8, 197, 12, 64
    feeds = {n: rng.standard_normal((B, H, L, E)).astype(dt) for n in "qkv"}
    out.append(("vit_4d_197_f16", model("v", (B, H, L, E), (B, H, L, E), (B, H, L, E), None, {}, dt), feeds, {}))
    B, L, H, E = 2, 77, 4, 128
    feeds = {n: rng.standard_normal((B, L, H * E)).astype(dt) for n in "qkv"}
    feeds["mask"] = (rng.standard_normal((B, 1, L, L)) * 3).astype(dt)
    out.append(("e128_3d_77_fullmask_f16", model("e", (B, L, H * E), (B, L, H * E), (B, L, H * E), (B, 1, L, L),
                                                 {"q_num_heads": H, "kv_num_heads": H}, dt), feeds, {}))
    B, L, H, E = 3, 40, 2, 32
    feeds = {n: rng.standard_normal((B, H, L, E)).astype(dt) for n in "qkv"}
    bmask = rng.random((B, H, L, L)) > 0.3
    bmask[0, 0, 5, :] = False
    feeds["mask"] = bmask
    out.append(("e32_4d_40_boolmask_causal_f16", model("c", (B, H, L, E), (B, H, L, E), (B, H, L, E), (B, H, L, L),
                                                       {"is_causal": 1}, dt), feeds, {}))
    return out


def run(a, path, feeds_dir, feeds, settings, prec, out_dir):
    cmd = [a.netrun, path, "--backend", "cuda", "--strict", "--precision", prec, "--warmup", "10", "--iterations",
           str(a.iters), "--json", "-", "--output-dir", out_dir]
    for nm in feeds:
        cmd += ["--input", f"{nm}={os.path.join(feeds_dir, nm + '.npy')}"]
    for k, v in settings.items():
        cmd += ["--set", f"{k}={v}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")
    return json.loads(p.stdout)["timings"]["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--precisions", default="fp32,tf32")
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    r = subprocess.run([a.netrun, "--backends"], capture_output=True, text=True)
    if not any(line.split()[:2] == ["cuda", "yes"] for line in r.stdout.splitlines()):
        print("attention_check: no usable cuda backend (netrun --backends)")
        return 1
    work = tempfile.mkdtemp(prefix="netrun-attn-")
    bad = 0
    print(f"{'case':34s} {'prec':5s} {'path':8s} {'ms':>10s} {'simple ms':>10s} {'speedup':>8s} {'max |diff|':>11s}")
    for name, m, feeds, settings in cases():
        if a.filter not in name:
            continue
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        for nm, arr in feeds.items():
            np.save(os.path.join(d, nm + ".npy"), arr)
        for prec in a.precisions.split(","):
            if "f16" in name and prec != a.precisions.split(",")[0]:
                continue  # float16 inputs: the precision mode changes nothing
            # the default (float16: the fused kernel), the cuBLAS path, the simple kernel
            paths = {"fused": dict(settings, **{"cuda.flash_attention": "1"}),
                     "cublas": dict(settings, **{"cuda.flash_attention": "0"}),
                     "simple": {"cuda.attention_workspace_mb": "0", "cuda.flash_attention": "0"}}
            if "f16" not in name:
                paths = {"cublas": settings, "simple": paths["simple"]}  # float32: no fused kernel
            times = {k: [] for k in paths}
            try:
                for _ in range(a.rounds):
                    for k, st in paths.items():
                        times[k].append(run(a, path, d, feeds, st, prec, os.path.join(d, k)))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{name:34s} {prec:5s} FAIL {e}")
                bad += 1
                continue
            ys = np.load(os.path.join(d, "simple", "y.npy")).astype(np.float64)
            ms = statistics.median(times["simple"])
            for k in paths:
                if k == "simple":
                    continue
                yf = np.load(os.path.join(d, k, "y.npy")).astype(np.float64)
                diff = float(np.nanmax(np.abs(yf - ys))) if yf.shape == ys.shape else float("inf")
                nan_same = bool((np.isnan(yf) == np.isnan(ys)).all()) if yf.shape == ys.shape else False
                # float16 outputs, and TF32 products with 64-wide heads, are the only sources of difference
                tol = 2e-2 if "f16" in name or prec != "fp32" else 1e-3
                ok = nan_same and diff <= tol
                bad += not ok
                mf = statistics.median(times[k])
                print(f"{name:34s} {prec:5s} {k:8s} {mf:10.3f} {ms:10.3f} {ms / mf:7.2f}x {diff:11.3g}"
                      f"{'' if ok else '  FAIL'}", flush=True)
    print("attention_check:", "all outputs agree" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
