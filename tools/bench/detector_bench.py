#!/usr/bin/env python3
"""Detectors end to end, post-processing included: netrun beside onnxruntime (CPU) and PyTorch eager (GPU, where
torch sees one), in one run on one machine.

Models:
  torchvision (exported here when torch and torchvision are installed; random weights, opset 17, batch 1):
    ssdlite      ssdlite320_mobilenet_v3_large
    frcnn        fasterrcnn_mobilenet_v3_large_320_fpn (box_score_thresh=0: every box reaches NMS)
    retinanet    retinanet_resnet50_fpn at 512x512
  written with onnx helpers (tests/models/detectors.py, no download, no torch), at --size (default 320):
    det_ssd_if, det_yolo_nms, det_face, det_two_stage

Every engine runs the same --images seeded images in turn (their kept box counts differ, so control-flow bodies see
new sizes). The engines alternate over --rounds rounds, each timed once over the images after one untimed pass:
netrun's sessions are made once and kept; onnxruntime's is made and closed in each round, so that its thread pool
is gone while netrun runs (two pools alive in one process disturb each other: not what an application running one
engine sees). The figure is the median over rounds of each round's median per image, and cpu / ort is the median
of the rounds' paired ratios. PyTorch eager runs --rounds times after one warm-up round. netrun runs in-process
through its C API (tools/bench/netrun_ctypes.py), so its stats count the prepares: the table gives those made
during the timed runs (0 expected: a control-flow body's sizes are left to run time after its first change).
Outputs are compared with onnxruntime's on every image (max abs error; "shape" when a count differs).
Ratios are netrun / peer (below 1: netrun faster).

usage: detector_bench.py --lib build/lib/libnetrun.so [--models ssdlite,frcnn,det_yolo_nms,...] [--backends cuda,cpu]
       [--threads 2] [--images 4] [--rounds 5] [--size 320] [--out DIR] [--json results.json]
"""
import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
from netrun_ctypes import Netrun  # noqa: E402

TV = {"ssdlite": ("ssdlite320_mobilenet_v3_large", 320, {}),
      "frcnn": ("fasterrcnn_mobilenet_v3_large_320_fpn", 320, {"box_score_thresh": 0.0}),
      "retinanet": ("retinanet_resnet50_fpn", 512, {})}
HELPER = ["det_ssd_if", "det_yolo_nms", "det_face", "det_two_stage"]


def export_tv(name, out):
    import torch
    import torchvision
    fn, size, kw = TV[name]
    path = os.path.join(out, f"{name}.onnx")
    torch.manual_seed(0)
    m = getattr(torchvision.models.detection, fn)(weights=None, weights_backbone=None, **kw).eval()
    if not os.path.exists(path):
        x = torch.rand(1, 3, size, size)
        with torch.no_grad():
            try:
                torch.onnx.export(m, ([x[0]],), path, opset_version=17, input_names=["images"], dynamo=False)
            except TypeError:
                torch.onnx.export(m, ([x[0]],), path, opset_version=17, input_names=["images"])
    return path, size, m


def build_helper(name, out, size):
    import build_models
    import detectors
    import onnx
    path = os.path.join(out, f"{name}_{size}.onnx")
    if not os.path.exists(path):
        m, _ = detectors.build(build_models.Graph, build_models.fvi, name, size=size, batch_inputs=1)
        onnx.save(m, path)
    return path, size


def images(n, size, tv):
    rng = np.random.default_rng(7)
    # torchvision detection models take one image [3, H, W] (a list of one when exported); the helpers [1, 3, H, W]
    return [rng.uniform(0, 1, (3, size, size) if tv else (1, 3, size, size)).astype(np.float32) for _ in range(n)]


def timed(fn, imgs, rounds, warm=True):
    for x in imgs if warm else []:  # warm-up round
        fn(x)
    ts = []
    for _ in range(rounds):
        for x in imgs:
            t = time.perf_counter()
            fn(x)
            ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def compare(got, ref):
    err = 0.0
    for g, r in zip(got, ref):
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape:
            return f"shape {g.shape} vs {r.shape}"
        if g.size:
            err = max(err, float(np.abs(g.astype(np.float64) - r.astype(np.float64)).max()))
    return err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--models", default="ssdlite,frcnn,retinanet," + ",".join(HELPER))
    ap.add_argument("--backends", default="cuda,cpu", help="netrun backends to time, each on its own")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", type=int, default=320)
    ap.add_argument("--out", default="/tmp/netrun-detectors")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import onnxruntime as ort
    nr = Netrun(a.lib)
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        torch, gpu = None, False
    rows = []
    for name in a.models.split(","):
        tvm = None
        try:
            if name in TV:
                if torch is None:
                    print(f"skip {name}: torch/torchvision not installed")
                    continue
                path, size, tvm = export_tv(name, a.out)
            else:
                path, size = build_helper(name, a.out, a.size)
        except Exception as e:
            print(f"skip {name}: could not make the model: {type(e).__name__}: {str(e)[:200]}")
            continue
        imgs = images(a.images, size, name in TV)
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        iname = sess.get_inputs()[0].name
        refs = [sess.run(None, {iname: x}) for x in imgs]
        del sess
        row = {"model": name, "size": size, "kept": [int(np.asarray(r[0]).shape[0]) for r in refs]}
        # Rounds alternate the engines. netrun's sessions are made once and kept, as an application keeps them
        # (a fresh session per round would time its device graphs being captured); onnxruntime's is made, warmed
        # up, timed and closed in each round, so that its thread pool is gone while netrun runs. (With both pools
        # alive, netrun's saw onnxruntime's threads take cores and stopped spinning for up to 1.6 s, threadpool.c's
        # contention watch: det_face at 16 threads 0.58 ms alone, 1.06-1.11 ms beside a live onnxruntime session,
        # which no application running one engine sees; netrun's own pool sleeps while onnxruntime runs.)
        samples = {"ort_cpu": []}
        sessions = {}
        for be in a.backends.split(","):
            try:
                s = sessions[be] = nr.session(path, backends=be, threads=a.threads)
                errs = [compare(s.run({iname: x}), ref) for x, ref in zip(imgs, refs)]
                num = [e for e in errs if not isinstance(e, str)]
                row[f"netrun_{be}_err"] = next((e for e in errs if isinstance(e, str)), max(num) if num else 0.0)
                for x in imgs:  # the images' sizes are seen once more before the timed runs
                    s.run({iname: x})
                row[f"netrun_{be}_prepares_timed"] = 0
            except Exception as e:
                row[f"netrun_{be}_error"] = str(e)[:300]
        for r in range(a.rounds):
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            samples["ort_cpu"].append(timed(lambda x: sess.run(None, {iname: x}), imgs, 1))
            del sess
            gc.collect()
            for be, s in sessions.items():
                if f"netrun_{be}_error" in row:
                    continue
                try:
                    p0 = s.stats().prepares
                    # one untimed pass first, as onnxruntime's: the pool sleeps while the other engine runs
                    samples.setdefault(f"netrun_{be}", []).append(timed(lambda x: s.run({iname: x}), imgs, 1))
                    row[f"netrun_{be}_prepares_timed"] += int(s.stats().prepares - p0)
                except Exception as e:
                    row[f"netrun_{be}_error"] = str(e)[:300]
        for s in sessions.values():
            s.close()
        for k, v in samples.items():  # the median over rounds of each round's median per image
            if v:
                row[f"{k}_ms"] = statistics.median(v)
        if samples.get("netrun_cpu"):  # paired: netrun / onnxruntime within each round
            row["cpu_ort_paired"] = statistics.median(n / o for n, o in zip(samples["netrun_cpu"], samples["ort_cpu"]))
        if tvm is not None and gpu:
            m = tvm.cuda()
            with torch.no_grad():
                def tfn(x):
                    m([torch.from_numpy(x).cuda()])
                    torch.cuda.synchronize()
                row["torch_eager_gpu_ms"] = timed(tfn, imgs, a.rounds)
        rows.append(row)
        print(json.dumps(row), flush=True)

    def f(v):
        return f"{v:.2f}" if isinstance(v, float) else ("-" if v is None else str(v))
    print(f"\n# Detectors, batch 1, median ms per image ({a.images} images x {a.rounds} rounds), threads {a.threads}; "
          f"{platform.processor() or platform.machine()}, {datetime.date.today()}")
    cols = ["model", "kept (ort)"]
    for be in a.backends.split(","):
        cols += [f"netrun {be}", f"prepares timed ({be})", f"err ({be})"]
    cols += ["onnxruntime cpu", "cpu / ort (paired)", "torch eager gpu", "cuda / torch"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        cells = [r["model"], "/".join(map(str, r["kept"]))]
        for be in a.backends.split(","):
            if f"netrun_{be}_error" in r:
                cells += ["error: " + r[f"netrun_{be}_error"][:60], "-", "-"]
            else:
                e = r.get(f"netrun_{be}_err")
                cells += [f(r.get(f"netrun_{be}_ms")), f(r.get(f"netrun_{be}_prepares_timed")),
                          e if isinstance(e, str) else f"{e:.1e}"]
        cpu, ortv, cu, tg = r.get("netrun_cpu_ms"), r.get("ort_cpu_ms"), r.get("netrun_cuda_ms"), r.get("torch_eager_gpu_ms")
        paired = r.get("cpu_ort_paired")
        cells += [f(ortv), f(paired) if paired else "-", f(tg), f(cu / tg) if cu and tg else "-"]
        print("| " + " | ".join(cells) + " |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"date": str(datetime.date.today()), "threads": a.threads, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
