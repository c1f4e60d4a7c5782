#!/usr/bin/env python3
"""Export torchvision models (random weights, batch 1, opset 17) for the CUDA graph benchmark in
tools/gpu/run-gpu-tests.sh (stage cudart). usage: export_torchvision.py OUT_DIR [name ...]"""
import os
import sys

import torch
import torchvision


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or ["resnet50", "mobilenet_v2"]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name in names:
        m = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        path = os.path.join(out, name + ".onnx")
        kw = dict(input_names=["input"], output_names=["output"], opset_version=17)
        try:
            torch.onnx.export(m, (x,), path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(m, (x,), path, **kw)
        print("exported", path, flush=True)


if __name__ == "__main__":
    main()
