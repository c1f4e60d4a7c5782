#!/usr/bin/env python3
"""Export real PyTorch models (torchvision CNNs, a U-Net, a super-resolution net, an LSTM tagger, a BERT encoder
from transformers, all with random weights) to ONNX with torch.onnx.export, then run them with netrun and
compare with onnxruntime (CPU) at rtol/atol 1e-4. Needs torch, torchvision and transformers (the GPU machine
has them; CI does not run this). Prints one line per model and 'N passed, N failed'.

usage: torch_export_check.py --netrun PATH [--backend cpu] [--out DIR] [--opset 17] [--filter NAME]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def models(opset):
    import torch
    import torch.nn as nn
    import torchvision

    torch.manual_seed(0)
    out = []

    def tv(name, ctor, shape=(1, 3, 224, 224)):
        out.append((name, lambda: ctor(weights=None).eval(), {"input": torch.randn(*shape)}, {"input": {0: "batch"}}))

    tv("resnet50", torchvision.models.resnet50)
    tv("mobilenet_v2", torchvision.models.mobilenet_v2)
    tv("squeezenet1_1", torchvision.models.squeezenet1_1)
    tv("efficientnet_b0", torchvision.models.efficientnet_b0)
    tv("shufflenet_v2_x1_0", torchvision.models.shufflenet_v2_x1_0)
    tv("mnasnet1_0", torchvision.models.mnasnet1_0)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            def block(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                                     nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
            self.d1, self.d2, self.d3 = block(3, 16), block(16, 32), block(32, 64)
            self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
            self.u2 = block(64, 32)
            self.u1 = block(48, 16)
            self.head = nn.Conv2d(16, 2, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(nn.functional.max_pool2d(a, 2))
            c = self.d3(nn.functional.max_pool2d(b, 2))
            u = self.u2(torch.cat([self.up2(c), b], 1))
            u = nn.functional.interpolate(u, scale_factor=2, mode="bilinear", align_corners=False)
            return torch.sigmoid(self.head(self.u1(torch.cat([u, a], 1))))

    out.append(("unet", lambda: UNet().eval(), {"input": torch.randn(1, 3, 96, 96)}, {"input": {0: "batch"}}))

    class SuperRes(nn.Module):  # the PyTorch super-resolution tutorial network
        def __init__(self, f=3):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(1, 64, 5, padding=2), nn.Conv2d(64, 64, 3, padding=1)
            self.c3, self.c4 = nn.Conv2d(64, 32, 3, padding=1), nn.Conv2d(32, f * f, 3, padding=1)
            self.ps = nn.PixelShuffle(f)

        def forward(self, x):
            x = torch.relu(self.c3(torch.relu(self.c2(torch.relu(self.c1(x))))))
            return self.ps(self.c4(x))

    out.append(("superres", lambda: SuperRes().eval(), {"input": torch.randn(1, 1, 64, 64)}, {"input": {0: "batch"}}))

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(500, 32)
            self.lstm = nn.LSTM(32, 48, num_layers=2, bidirectional=True, batch_first=True)
            self.out = nn.Linear(96, 9)

        def forward(self, ids):
            h, _ = self.lstm(self.emb(ids))
            return torch.log_softmax(self.out(h), -1)

    out.append(("lstm_tagger", lambda: Tagger().eval(), {"ids": torch.randint(0, 500, (2, 12))},
                {"ids": {0: "batch", 1: "seq"}}))

    def bert():
        from transformers import BertConfig, BertModel
        cfg = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=256, max_position_embeddings=128)
        m = BertModel(cfg).eval()
        m.config.return_dict = False
        return m

    ids = torch.randint(0, 1000, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 10:] = 0
    out.append(("bert", bert, {"input_ids": ids, "attention_mask": mask},
                {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--filter", default=None)
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    import onnxruntime as ort
    import torch

    work = a.out or tempfile.mkdtemp(prefix="netrun-torch-")
    passed = failed = 0
    for name, make, feeds, dyn in models(a.opset):
        if a.filter and a.filter not in name:
            continue
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        try:
            m = make()
            with torch.no_grad():
                kw = dict(input_names=list(feeds), dynamic_axes=dyn, opset_version=a.opset)
                try:
                    torch.onnx.export(m, tuple(feeds.values()), path, dynamo=False, **kw)
                except TypeError:  # older torch without the dynamo argument
                    torch.onnx.export(m, tuple(feeds.values()), path, **kw)
            np_feeds = {k: v.numpy() for k, v in feeds.items()}
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            want = dict(zip(names, sess.run(None, np_feeds)))
            cmd = [a.netrun, path, "--backend", a.backend, "--warmup", "1", "--iterations", "3", "--quiet",
                   "--output-dir", os.path.join(d, "out")]
            for k, v in np_feeds.items():
                np.save(os.path.join(d, k + ".npy"), v)
                cmd += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
            t0 = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"netrun exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}")
            worst = 0.0
            for n in names:
                got = np.load(os.path.join(d, "out", n.replace("/", "_") + ".npy"))
                w = want[n]
                if got.shape != w.shape:
                    raise RuntimeError(f"{n}: shape {got.shape} != {w.shape}")
                err = float(np.max(np.abs(got.astype(np.float64) - w))) if w.size else 0.0
                worst = max(worst, err)
                if not np.allclose(got, w, rtol=a.tol, atol=a.tol):
                    raise RuntimeError(f"{n}: max abs err {err:.3g} over tolerance {a.tol}")
            passed += 1
            print(f"ok   {name}: max abs err {worst:.3g} ({time.time() - t0:.1f} s)", flush=True)
        except Exception as e:  # one model's failure must not hide the others
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
