#!/usr/bin/env python3
"""An onnxruntime-optimized BERT on netrun: tests/models' bert_class (a 2-layer encoder as transformers exports it)
goes through onnxruntime.transformers.optimizer.optimize_model(model_type="bert"), which fuses it into contrib ops
(Attention, SkipLayerNormalization, BiasGelu; Gelu or FastGelu when asked); netrun (CPU + the contrib plugin) must match
onnxruntime on the optimized model. The contrib ops each variant must contain are asserted, so that a change of
the optimizer cannot leave this test with nothing of ours to run.

usage: test_contrib_bert.py --netrun PATH"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.transformers.fusion_options import FusionOptions
from onnxruntime.transformers.optimizer import optimize_model

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import build_models  # noqa: E402

MS = "com.microsoft"


def optimized(src, dst, **flags):
    opts = FusionOptions("bert")
    opts.enable_attention = False
    opts.enable_shape_inference = False  # it needs sympy, which the pinned environment leaves out
    for k, v in flags.items():
        setattr(opts, k, v)
    m = optimize_model(src, model_type="bert", num_heads=4, hidden_size=64, opt_level=0, optimization_options=opts)
    m.save_model_to_file(dst)
    return collections.Counter((n.domain, n.op_type) for n in onnx.load(dst).graph.node)


def run_netrun(netrun, model, feeds, d):
    os.makedirs(d, exist_ok=True)
    cmd = [netrun, model, "--warmup", "0", "--iterations", "1", "--quiet", "--output-dir", os.path.join(d, "out")]
    for nm, arr in feeds.items():
        p = os.path.join(d, f"in_{nm}.npy")
        np.save(p, arr)
        cmd += ["--input", f"{nm}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"netrun exit {r.returncode}: {(r.stderr or r.stdout)[-800:]}")
    return os.path.join(d, "out")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="netrun-contrib-bert-")
    model, cases = build_models.bert_class()
    src = os.path.join(work, "bert.onnx")
    onnx.save(model, src)
    # the same model at opset 14, as transformers exports at its default: the optimizer's LayerNormalization is then
    # onnxruntime's ai.onnx op of opsets before 17, which netrun accepts as the same computation
    src14 = os.path.join(work, "bert14.onnx")
    model.opset_import[0].version = 14
    onnx.save(model, src14)
    # each variant: optimizer flags, and the contrib ops its output must hold
    variants = {
        "default": ({"enable_attention": True}, {"Attention", "SkipLayerNormalization", "BiasGelu"}),
        "no_attention": ({}, {"SkipLayerNormalization", "BiasGelu"}),
        "opset14": ({"enable_attention": True}, {"Attention", "SkipLayerNormalization", "BiasGelu"}),
        "no_bias_gelu": ({"enable_bias_gelu": False, "enable_skip_layer_norm": False}, {"Gelu"}),
        "gelu_approximation": ({"enable_gelu_approximation": True}, {"FastGelu", "SkipLayerNormalization"}),
    }
    failures = 0
    for name, (flags, must) in variants.items():
        d = os.path.join(work, name)
        os.makedirs(d)
        dst = os.path.join(d, "model.onnx")
        ops = optimized(src14 if name == "opset14" else src, dst, **flags)
        if name == "opset14" and not ops.get(("", "LayerNormalization")):
            print(f"FAIL {name}: no LayerNormalization at opset 14 in the optimized model: {dict(ops)}")
            failures += 1
            continue
        ours = {op for (dom, op), n in ops.items() if dom == MS}
        print(f"{name}: contrib ops written by the optimizer: {dict((op, n) for (dom, op), n in ops.items() if dom == MS)}")
        if not must <= ours:
            print(f"FAIL {name}: the optimizer did not write {sorted(must - ours)}: nothing of the contrib plugin "
                  f"would be tested")
            failures += 1
            continue
        sess = ort.InferenceSession(dst, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        # FastGelu is the tanh approximation in both runtimes, but the model's reference is onnxruntime's own run
        tol = dict(rtol=1e-3, atol=1e-4)
        for cname, feeds in cases.items():
            want = dict(zip(names, sess.run(None, feeds)))
            try:
                out = run_netrun(a.netrun, dst, feeds, os.path.join(d, cname or "base"))
            except RuntimeError as e:
                print(f"FAIL {name}/{cname or 'base'}: {e}")
                failures += 1
                continue
            for nm in names:
                got = np.load(os.path.join(out, f"{nm}.npy"))
                err = float(np.max(np.abs(got.astype(np.float64) - want[nm])))
                ok = got.shape == want[nm].shape and np.allclose(got, want[nm], **tol)
                print(f"{'ok  ' if ok else 'FAIL'} {name}/{cname or 'base'} {nm}: max abs err {err:.3g}")
                failures += not ok
        r = subprocess.run([a.netrun, dst, "--explain"], capture_output=True, text=True, timeout=300)
        placed = sum(1 for line in r.stdout.splitlines() if line.rstrip().endswith("-> contrib"))
        n_ours = sum(n for (dom, _), n in ops.items() if dom == MS)
        print(f"{name}: {placed} nodes placed on contrib, {n_ours} contrib nodes in the model")
        if placed != n_ours:
            print(f"FAIL {name}: --explain shows {placed} nodes on the contrib plugin, expected {n_ours}:\n{r.stdout[-1500:]}")
            failures += 1
    print("FAILED" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
