#!/usr/bin/env python3
"""Real models on a GPU backend, checked against netrun's CPU backend: families of networks exported here from
torchvision, transformers and a few written in torch (random weights, opset 17), each run with
`--backend B` at every precision asked for, outputs compared with `--backend cpu` (fp32) on the same inputs.

usage (on the GPU machine): model_zoo.py --netrun BUILD/bin/netrun --out DIR [--backend cuda]
          [--models NAME,...] [--precisions fp32,tf32,fp16] [--timeout 600] [--json FILE]

Prints one line per model and precision: the normalised error max|got - cpu| / max|cpu| over every output, the
nodes that ran on the GPU backend out of all, prepare and median run times; and a last line
'N passed, N failed'. A model that cannot be exported here (a library missing, an exporter error) is listed as
skipped with the reason, not as a failure of netrun. Exit 1 on any failure.

Limits of the error (random weights make activations grow, and reduced precisions compound through depth):
fp32 2e-3, tf32 3e-2, fp16 8e-2 of the output's largest magnitude; an output holding NaN/Inf where the CPU's
does not is always a failure.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

LIMITS = {"fp32": 2e-3, "tf32": 3e-2, "fp16": 8e-2}


# ---------------------------------------------------------------- exports (torch is imported only here)

def tv(name, shape=(1, 3, 224, 224), **kw):
    def make():
        import torch
        import torchvision
        m = getattr(torchvision.models, name)(weights=None, **kw).eval()
        return m, (torch.randn(*shape),), ["input"]
    return make


def video(name):
    def make():
        import torch
        import torchvision
        m = getattr(torchvision.models.video, name)(weights=None).eval()
        return m, (torch.randn(1, 3, 8, 112, 112),), ["input"]
    return make


def seg(name):
    def make():
        import torch
        import torchvision

        class Out(torch.nn.Module):  # the dict output of torchvision's segmentation models, as a tensor
            def __init__(self):
                super().__init__()
                self.m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None,
                                                                         aux_loss=False).eval()

            def forward(self, x):
                return self.m(x)["out"]
        return Out().eval(), (torch.randn(1, 3, 256, 256),), ["input"]
    return make


def unet():
    import torch
    import torch.nn as nn

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                             nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self, c=(32, 64, 128, 256)):
            super().__init__()
            self.down = nn.ModuleList([block(3 if i == 0 else c[i - 1], c[i]) for i in range(len(c))])
            self.up = nn.ModuleList([nn.ConvTranspose2d(c[i], c[i - 1], 2, stride=2) for i in range(len(c) - 1, 0, -1)])
            self.dec = nn.ModuleList([block(2 * c[i - 1], c[i - 1]) for i in range(len(c) - 1, 0, -1)])
            self.head = nn.Conv2d(c[0], 2, 1)

        def forward(self, x):
            skips = []
            for i, d in enumerate(self.down):
                x = d(x)
                if i < len(self.down) - 1:
                    skips.append(x)
                    x = nn.functional.max_pool2d(x, 2)
            for u, d in zip(self.up, self.dec):
                x = d(torch.cat([u(x), skips.pop()], 1))
            return self.head(x)
    return UNet().eval(), (torch.randn(1, 3, 128, 128),), ["input"]


def c3d_small():
    import torch
    import torch.nn as nn
    m = nn.Sequential(nn.Conv3d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv3d(16, 16, 3, padding=1, groups=4),
                      nn.ReLU(), nn.ConvTranspose3d(16, 8, 2, stride=2), nn.ReLU(), nn.Conv3d(8, 4, 1)).eval()
    return m, (torch.randn(2, 3, 6, 12, 12),), ["input"]


def hf(kind):
    def make():
        import torch
        import transformers as T
        torch.manual_seed(0)
        if kind == "bert":
            cfg = T.BertConfig()
            m = T.BertModel(cfg)
            ids = torch.randint(0, cfg.vocab_size, (1, 128))
            args, names = (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"]
        elif kind == "gpt2":
            cfg = T.GPT2Config()
            m = T.GPT2Model(cfg)
            args, names = (torch.randint(0, cfg.vocab_size, (1, 128)),), ["input_ids"]
        elif kind == "whisper_encoder":
            cfg = T.WhisperConfig.from_dict(dict(d_model=384, encoder_layers=4, encoder_attention_heads=6,
                                                 decoder_layers=4, decoder_attention_heads=6,
                                                 encoder_ffn_dim=1536, decoder_ffn_dim=1536))
            m = T.WhisperModel(cfg).get_encoder()
            args, names = (torch.randn(1, 80, 3000),), ["input_features"]
        else:
            raise ValueError(kind)
        m.config.return_dict = False
        m.eval()

        class First(torch.nn.Module):  # the first output (hidden states) only
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, *a):
                return self.m(*a)[0]
        return First().eval(), args, names
    return make


MODELS = {
    "resnet50": tv("resnet50"), "mobilenet_v2": tv("mobilenet_v2"), "mobilenet_v3_large": tv("mobilenet_v3_large"),
    "efficientnet_b0": tv("efficientnet_b0"), "squeezenet1_1": tv("squeezenet1_1"),
    "densenet121": tv("densenet121"), "shufflenet_v2_x1_0": tv("shufflenet_v2_x1_0"),
    "regnet_y_400mf": tv("regnet_y_400mf"), "mnasnet1_0": tv("mnasnet1_0"), "googlenet": tv("googlenet", aux_logits=False, init_weights=True),
    "convnext_tiny": tv("convnext_tiny"), "swin_t": tv("swin_t"), "vit_b_16": tv("vit_b_16"),
    "deeplabv3_mobilenet_v3_large": seg("deeplabv3_mobilenet_v3_large"), "fcn_resnet50": seg("fcn_resnet50"),
    "r3d_18": video("r3d_18"), "unet": unet, "conv3d_small": c3d_small,
    "bert_base": hf("bert"), "gpt2": hf("gpt2"), "whisper_tiny_encoder": hf("whisper_encoder"),
}


def export(name, out):
    """Writes out/name.onnx and out/name.inputs/*.npy once; returns (path, {input: npy}) or raises."""
    path = os.path.join(out, name + ".onnx")
    idir = os.path.join(out, name + ".inputs")
    if not os.path.exists(path):
        import torch
        torch.manual_seed(0)
        model, args, names = MODELS[name]()
        os.makedirs(idir, exist_ok=True)
        with torch.no_grad():
            kw = dict(input_names=names, opset_version=17)
            try:
                torch.onnx.export(model, args, path + ".tmp", dynamo=False, **kw)
            except TypeError:
                torch.onnx.export(model, args, path + ".tmp", **kw)
        for n, a in zip(names, args):
            np.save(os.path.join(idir, n + ".npy"), a.numpy())
        os.replace(path + ".tmp", path)
    inputs = {f[:-4]: os.path.join(idir, f) for f in sorted(os.listdir(idir)) if f.endswith(".npy")}
    return path, inputs


# ---------------------------------------------------------------- runs

def run(netrun, model, inputs, outdir, backend, precision, timeout):
    os.makedirs(outdir, exist_ok=True)
    cmd = [netrun, model, "--backend", backend, "--warmup", "2", "--iterations", "10", "--output-dir", outdir,
           "--json", os.path.join(outdir, "report.json"), "-q"]
    if precision != "fp32":
        cmd += ["--precision", precision]
    for n, p in inputs.items():
        cmd += ["--input", f"{n}={p}"]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout} s"
    if r.returncode != 0:
        how = f"signal {-r.returncode}" if r.returncode < 0 else f"exit {r.returncode}"
        return None, f"{how}: {(r.stderr.strip().splitlines() or [''])[-1][:300]}"
    with open(os.path.join(outdir, "report.json")) as f:
        rep = json.load(f)
    outs = {f[:-4]: np.load(os.path.join(outdir, f)) for f in sorted(os.listdir(outdir)) if f.endswith(".npy")}
    rep["_wall_s"] = time.time() - t0
    return (rep, outs), None


def norm_err(got, want):
    if got.shape != want.shape:
        return float("inf"), f"shape {got.shape} != cpu {want.shape}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    if np.isfinite(w).all() and not np.isfinite(g).all():
        return float("inf"), "NaN/Inf where the cpu has none"
    fin = np.isfinite(w) & np.isfinite(g)
    if not fin.any():
        return 0.0, None
    scale = max(np.abs(w[fin]).max(), 1e-6)
    return float(np.abs(g[fin] - w[fin]).max() / scale), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--precisions", default="fp32,tf32,fp16")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    passed = failed = skipped = 0
    rows = []
    for name in a.models.split(","):
        if name not in MODELS:
            sys.exit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        try:
            model, inputs = export(name, a.out)
        except Exception as e:  # an exporter or library problem, not netrun's
            skipped += 1
            print(f"skip {name}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}",
                  flush=True)
            continue
        ref, why = run(a.netrun, model, inputs, os.path.join(a.out, name + ".cpu"), "cpu", "fp32", a.timeout)
        if ref is None:
            failed += 1
            print(f"FAIL {name} cpu: {why}", flush=True)
            rows.append(dict(model=name, precision="cpu", ok=False, why=why))
            continue
        for prec in a.precisions.split(","):
            res, why = run(a.netrun, model, inputs, os.path.join(a.out, f"{name}.{a.backend}.{prec}"), a.backend,
                           prec, a.timeout)
            row = dict(model=name, precision=prec)
            if res is None:
                row.update(ok=False, why=why)
            else:
                rep, outs = res
                errs, whys = [], []
                for k, want in ref[1].items():
                    if k not in outs:
                        errs.append(float("inf"))
                        whys.append(f"output {k} missing")
                        continue
                    e, w = norm_err(outs[k], want)
                    errs.append(e)
                    if w:
                        whys.append(f"{k}: {w}")
                err = max(errs) if errs else float("inf")
                nodes = rep.get("nodes", [])
                on = sum(1 for n in nodes if n.get("backend") == a.backend)
                t = rep.get("timings", {})
                lat = (t.get("latency_ms") or {}).get("median") if isinstance(t.get("latency_ms"), dict) else None
                row.update(ok=err <= LIMITS[prec] and not whys, err=err, on_backend=on, nodes=len(nodes),
                           prepare_ms=t.get("prepare_ms"), median_ms=lat,
                           why="; ".join(whys) or (None if err <= LIMITS[prec] else f"error {err:.2e} > {LIMITS[prec]:.0e}"))
            rows.append(row)
            if row["ok"]:
                passed += 1
                print(f"ok   {name:30s} {prec}: err {row['err']:.2e} (limit {LIMITS[prec]:.0e}), "
                      f"{row['on_backend']}/{row['nodes']} nodes on {a.backend}, prepare {row['prepare_ms'] or 0:.0f} ms, "
                      f"median {row['median_ms'] or 0:.3f} ms", flush=True)
            else:
                failed += 1
                print(f"FAIL {name:30s} {prec}: {row['why']}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
