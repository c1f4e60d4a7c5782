#!/usr/bin/env python3
"""Video pipeline benchmark: uint8 frames already on the GPU -> preprocessing -> model -> outputs on the GPU.

A batch of synthetic 1080p uint8 RGB frames (NHWC, as a decoder or cv::cuda::GpuMat holds them) lives in a torch CUDA
tensor. Each row does the whole pipeline for the batch and is timed from the frames in GPU memory to the outputs
in GPU memory (torch.cuda.synchronize() at the end of every iteration); per-frame latency = median iteration time /
batch, throughput = frames per second.

  netrun compute-only (host)   the float input already preprocessed, fed from host memory, outputs to host: the
                               model alone as netrun runs it today (reference row for the ratios)
  netrun compute-only (device) the same with the float input in GPU memory and the outputs left there (the
                               device I/O API, when this netrun has it)
  netrun host round trip       frames copied to the host, netrun with preprocess.* (ImagePreprocess on the GPU),
                               outputs to the host and back into GPU tensors
  netrun device I/O            frames read in GPU memory by ImagePreprocess, outputs left in GPU memory (device
                               I/O API; rows marked n/a when this netrun lacks it)
  torch eager / torch graph    the same preprocessing in torch ops (permute, float, interpolate bilinear
                               align_corners=False, normalise; letterbox: F.pad) + the same model, eager and captured
                               in a CUDA graph (the frames copied into the graph's static input each iteration)

Targets: netrun device I/O within 5% of netrun compute-only (device) per frame, and below torch graph's.
Ratios are printed for every row, losing rows included. Outputs of netrun and torch are compared (max abs diff).

Models: resnet50 (torchvision, random weights, 224x224, stretch, ImageNet mean/std) and yolo (a YOLO-sized conv net
defined here, 640x640, letterbox with 114, /255); tiny (onnx.helper, no torch needed) for --device cpu dry runs.

usage (GPU machine, after building with the Python package):
  python3 tools/bench/pipeline_bench.py --build build --models resnet50,yolo --batches 1,8 --json pipeline.json
  python3 tools/bench/pipeline_bench.py --build build --device cpu --models tiny --frame 120x160 --iters 3  # dry run
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

MEAN_IMAGENET = (123.675, 116.28, 103.53)
STD_IMAGENET = (58.395, 57.12, 57.375)  # 255 * (0.229, 0.224, 0.225): (x - mean) / std on 0-255 pixels


# ---------------------------------------------------------------- models

def yolo_like():
    """A YOLOv8n-sized detector body (conv-BN-SiLU, CSP blocks, a 3-scale head): 640x640 in, 3 raw maps out."""
    import torch
    from torch import nn

    def cbs(ci, co, k=3, s=1):
        return nn.Sequential(nn.Conv2d(ci, co, k, s, k // 2, bias=False), nn.BatchNorm2d(co), nn.SiLU())

    class C2f(nn.Module):
        def __init__(self, ci, co, n):
            super().__init__()
            self.cv1 = cbs(ci, co, 1)
            self.m = nn.ModuleList(nn.Sequential(cbs(co // 2, co // 2), cbs(co // 2, co // 2)) for _ in range(n))
            self.cv2 = cbs(co // 2 * (2 + n), co, 1)

        def forward(self, x):
            y = list(self.cv1(x).chunk(2, 1))
            for m in self.m:
                y.append(y[-1] + m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class Net(nn.Module):
        def __init__(self, w=(16, 32, 64, 128, 256), nc=80):
            super().__init__()
            self.s1 = nn.Sequential(cbs(3, w[0], 3, 2), cbs(w[0], w[1], 3, 2), C2f(w[1], w[1], 1))
            self.s2 = nn.Sequential(cbs(w[1], w[2], 3, 2), C2f(w[2], w[2], 2))
            self.s3 = nn.Sequential(cbs(w[2], w[3], 3, 2), C2f(w[3], w[3], 2))
            self.s4 = nn.Sequential(cbs(w[3], w[4], 3, 2), C2f(w[4], w[4], 1))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.t3 = C2f(w[4] + w[3], w[3], 1)
            self.t2 = C2f(w[3] + w[2], w[2], 1)
            self.heads = nn.ModuleList(nn.Sequential(cbs(c, c), nn.Conv2d(c, 4 * 16 + nc, 1)) for c in (w[2], w[3], w[4]))

        def forward(self, x):
            p2 = self.s2(self.s1(x))
            p3 = self.s3(p2)
            p4 = self.s4(p3)
            t3 = self.t3(torch.cat([self.up(p4), p3], 1))
            t2 = self.t2(torch.cat([self.up(t3), p2], 1))
            return tuple(h(t) for h, t in zip(self.heads, (t2, t3, p4)))

    return Net()


# name: (input size h, w, resize mode, mean, std or None, scale)
SPECS = {
    "resnet50": (224, 224, "stretch", MEAN_IMAGENET, STD_IMAGENET, 1.0),
    "yolo": (640, 640, "letterbox", (0, 0, 0), None, 1 / 255),
    "tiny": (64, 64, "stretch", MEAN_IMAGENET, STD_IMAGENET, 1.0),
}


def export_torch(name, path):
    import torch
    import torchvision

    m = torchvision.models.resnet50(weights=None) if name == "resnet50" else yolo_like()
    m = m.eval()
    h, w = SPECS[name][:2]
    x = torch.randn(1, 3, h, w)
    with torch.no_grad():
        n_out = len(m(x)) if isinstance(m(x), tuple) else 1
        outs = [f"out{i}" for i in range(n_out)]
        kw = dict(input_names=["images"], output_names=outs, opset_version=17,
                  dynamic_axes={"images": {0: "N"}, **{o: {0: "N"} for o in outs}})
        try:
            torch.onnx.export(m, (x,), path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(m, (x,), path, **kw)
    return m


def tiny_model(path):
    """Conv-Relu-GlobalAveragePool-Gemm on [N, 3, 64, 64], made with onnx.helper (no torch needed)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.2).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal((10, 8)) * 0.2).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["images", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]), helper.make_node("Gemm", ["f", "fc"], ["out0"], transB=1)]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, 64, 64])],
                          [helper.make_tensor_value_info("out0", TensorProto.FLOAT, ["N", 10])], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


# ---------------------------------------------------------------- preprocessing references

def letterbox_geometry(H, W, h, w):
    f = min(h / H, w / W)
    rh, rw = min(max(int(np.rint(H * f)), 1), h), min(max(int(np.rint(W * f)), 1), w)
    return rh, rw, (h - rh) // 2, (w - rw) // 2


def torch_preprocess_fn(spec, device):
    """A function of uint8 [N, H, W, 3] frames on device -> [N, 3, h, w] as ImagePreprocess computes it. The constants
    are made here, once: a tensor made from a Python list inside a CUDA graph capture would be a forbidden copy."""
    import torch
    import torch.nn.functional as F

    h, w, mode, mean, std, scale = spec
    k = torch.tensor([scale / s for s in (std or (1.0, 1.0, 1.0))], dtype=torch.float32, device=device).view(1, 3, 1, 1)
    m = torch.tensor(mean, dtype=torch.float32, device=device).view(1, 3, 1, 1)

    def pre(frames, dtype):
        x = frames.permute(0, 3, 1, 2).float()
        if mode == "letterbox":
            rh, rw, top, left = letterbox_geometry(x.shape[2], x.shape[3], h, w)
            x = F.interpolate(x, size=(rh, rw), mode="bilinear", align_corners=False, antialias=False)
            x = F.pad(x, (left, w - rw - left, top, h - rh - top), value=114.0)
        else:
            x = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False, antialias=False)
        return ((x - m) * k).to(dtype)
    return pre


def bilinear_taps(n_out, n_in, step, off=0.0):
    """cv2.resize INTER_LINEAR's source taps (half-pixel centres, float32 coordinate, edges clamped)."""
    f = ((np.arange(n_out) + off + 0.5) * step - 0.5).astype(np.float32)
    s = np.floor(f).astype(np.int64)
    w = (f - s).astype(np.float32)
    w[s < 0], s[s < 0] = 0, 0
    hi = s >= n_in - 1
    s[hi], w[hi] = n_in - 1, 0
    return s, np.minimum(s + 1, n_in - 1), w


def numpy_resize(img, h, w):
    H, W = img.shape[:2]
    y0, y1, wy = bilinear_taps(h, H, H / h)
    x0, x1, wx = bilinear_taps(w, W, W / w)
    f = img.astype(np.float32)
    wy, wx = wy[:, None, None], wx[None, :, None]
    r0 = f[y0][:, x0] * (1 - wx) + f[y0][:, x1] * wx
    r1 = f[y1][:, x0] * (1 - wx) + f[y1][:, x1] * wx
    return r0 * (1 - wy) + r1 * wy


def numpy_preprocess(frames, spec):
    """The input of the compute-only rows: the same conversion on the host, in numpy (what ImagePreprocess does)."""
    h, w, mode, mean, std, scale = spec
    out = []
    for f in frames:
        if mode == "letterbox":
            rh, rw, top, left = letterbox_geometry(f.shape[0], f.shape[1], h, w)
            r = np.full((h, w, 3), 114.0, np.float32)
            r[top:top + rh, left:left + rw] = numpy_resize(f, rh, rw)
        else:
            r = numpy_resize(f, h, w)
        k = np.float32(scale) / np.asarray(std or (1, 1, 1), np.float32)
        out.append(((r - np.asarray(mean, np.float32)) * k).transpose(2, 0, 1))
    return np.ascontiguousarray(np.stack(out))


# ---------------------------------------------------------------- netrun

def preprocess_options(spec):
    h, w, mode, mean, std, scale = spec
    o = {"preprocess.input": "images", "preprocess.format": "rgb", "preprocess.order": "rgb",
         "preprocess.resize": mode, "preprocess.mean": ",".join(map(str, mean)), "preprocess.scale": repr(scale)}
    if std:
        o["preprocess.std"] = ",".join(map(str, std))
    if mode == "letterbox":
        o["preprocess.pad"] = "114"
    return o


def device_io_runner(netrun, sess):
    """A function(feeds) -> outputs that takes torch CUDA tensors and leaves the outputs on the GPU, or None when this
    netrun's Python API has no device I/O. The device-io work adds it to Session.run (torch CUDA tensors as feeds,
    outputs on the device on request): the keyword is probed here so the bench runs before and after it lands."""
    import inspect

    try:
        params = inspect.signature(netrun.Session.run).parameters
    except (TypeError, ValueError):
        return None
    run = None
    for kw, val in (("device_outputs", True), ("outputs_on", "device"), ("output_device", "cuda")):
        if kw in params:
            run = (lambda k, v: lambda feeds: sess.run(feeds, **{k: v}))(kw, val)
            break
    if run is None and hasattr(sess, "run_device"):
        run = sess.run_device
    if run is None:
        return None
    import torch

    # netrun queues on the producer's stream: on PyTorch's default (legacy) stream CUDA Graphs cannot be captured,
    # so the device rows run on a stream of their own, as a pipeline would
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())

    def on_side(feeds):
        with torch.cuda.stream(side):
            return run(feeds)
    return on_side


def as_torch(x):
    """An output of a device run (torch tensor, or any __dlpack__ object) as a torch tensor, else None."""
    import torch

    if isinstance(x, torch.Tensor):
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return torch.from_dlpack(x)
        except Exception:
            return None
    return None


def time_loop(fn, iters, warmup, sync):
    for _ in range(warmup):
        fn()
    sync()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), ts


def bench_model(a, netrun, name, path, tmodel, batch, frames_np):
    spec = SPECS[name]
    gpu = a.device == "cuda"
    rows, outs = {}, {}
    backends = "cuda" if gpu else "cpu"
    torch = None
    if gpu or a.torch_cpu:
        import torch
    dev = "cuda" if gpu else "cpu"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    frames_t = torch.from_numpy(frames_np).to(dev) if torch else None
    pre_np = numpy_preprocess(frames_np, spec)

    def row(label, fn, note=""):
        try:
            med, ts = time_loop(fn, a.iters, a.warmup, sync)
            rows[label] = {"median_ms": med, "per_frame_ms": med / batch, "fps": batch * 1e3 / med,
                           "p90_ms": float(np.percentile(ts, 90)), "note": note}
        except Exception as e:  # a failing row is reported, the others still run
            rows[label] = {"error": f"{type(e).__name__}: {e}"[:300]}

    # compute-only, host: the preprocessed float input from host memory, outputs to host
    s_plain = netrun.Session(path, backends=backends, precision=a.precision)
    s_plain.run({"images": pre_np})
    row("netrun compute-only (host)", lambda: s_plain.run({"images": pre_np}))
    outs["netrun_plain"] = s_plain.run({"images": pre_np})[0]

    # compute-only, device
    dio_plain = device_io_runner(netrun, s_plain) if torch else None
    if dio_plain and frames_t is not None:
        pre_t = torch.from_numpy(pre_np).to(dev)
        row("netrun compute-only (device)", lambda: dio_plain({"images": pre_t}))
    else:
        rows["netrun compute-only (device)"] = {"error": "n/a: this netrun's Python API has no device I/O"}

    # preprocessing in the graph
    s_pre = netrun.Session(path, backends=backends, precision=a.precision, options=preprocess_options(spec))
    if frames_t is not None:
        def round_trip():
            res = s_pre.run({"images": frames_t.cpu().numpy()})
            return [torch.from_numpy(r).to(dev) for r in res]
        row("netrun host round trip", round_trip, "frames to host, outputs back to the GPU")
    else:
        row("netrun host round trip", lambda: s_pre.run({"images": frames_np}), "frames from host memory")
    outs["netrun_pre"] = s_pre.run({"images": frames_np})[0]
    placed = {}  # nodes per backend, and where ImagePreprocess ran
    for n in s_pre.placement:
        placed[n.backend] = placed.get(n.backend, 0) + 1
        if n.op_type == "ImagePreprocess":
            placed["ImagePreprocess"] = n.backend
    dio_pre = device_io_runner(netrun, s_pre) if torch else None
    if dio_pre and frames_t is not None:
        row("netrun device I/O", lambda: dio_pre({"images": frames_t}))
        try:
            o = as_torch(dio_pre({"images": frames_t})[0])
            if o is not None:
                outs["netrun_device"] = o.float().cpu().numpy()
        except Exception:
            pass
    else:
        rows["netrun device I/O"] = {"error": "n/a: this netrun's Python API has no device I/O"}

    # torch
    if tmodel is not None and torch is not None:
        if gpu:
            torch.backends.cudnn.benchmark = True
            torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
            torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
        dt = torch.float16 if a.precision == "fp16" else torch.float32
        mm = tmodel.to(dev, dt).eval()
        torch_preprocess = torch_preprocess_fn(spec, dev)

        def eager():
            with torch.inference_mode():
                return mm(torch_preprocess(frames_t, dt))
        row("torch eager", eager)
        with torch.inference_mode():
            y = eager()
        outs["torch"] = (y[0] if isinstance(y, tuple) else y).float().cpu().numpy()
        if gpu:
            static = frames_t.clone()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.inference_mode():
                with torch.cuda.stream(s):
                    for _ in range(3):
                        mm(torch_preprocess(static, dt))
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    mm(torch_preprocess(static, dt))

            def graph():
                static.copy_(frames_t)
                g.replay()
            row("torch graph", graph, "frames copied into the graph's static input")
            del g
        mm.to("cpu", torch.float32)
        if gpu:
            torch.cuda.empty_cache()

    # agreement of the paths (first output)
    diffs = {}
    ref = outs.get("netrun_plain")
    for k in ("netrun_pre", "netrun_device", "torch"):
        if k in outs and ref is not None and outs[k].shape == ref.shape:
            diffs[k] = float(np.abs(outs[k].astype(np.float32) - ref.astype(np.float32)).max())
    # what each session did in its last run: device graphs replayed, host <-> device bytes (a copy left shows here)
    sessions = {}
    for label, sess in (("compute-only", s_plain), ("preprocess in the graph", s_pre)):
        try:
            st = sess.stats
            sessions[label] = {"device_graphs": st.n_graphs, "segments": st.n_segments, "h2d_bytes": st.h2d_bytes,
                               "d2h_bytes": st.d2h_bytes, "recaptures": st.graph_recaptures}
        except Exception as e:  # an older package: no stats
            sessions[label] = {"error": str(e)[:100]}
    s_pre.close()
    s_plain.close()
    return {"model": name, "batch": batch, "rows": rows, "max_abs_diff_vs_compute_only": diffs, "placement": placed,
            "sessions": sessions}


def print_result(r):
    rows = r["rows"]
    base = rows.get("netrun compute-only (device)", {}).get("per_frame_ms") or \
        rows.get("netrun compute-only (host)", {}).get("per_frame_ms")
    tg = rows.get("torch graph", {}).get("per_frame_ms")
    print(f"\n{r['model']} batch {r['batch']}")
    print(f"  {'row':32s} {'ms/frame':>9s} {'frames/s':>9s} {'vs compute-only':>16s} {'vs torch graph':>15s}")
    for label, v in rows.items():
        if "error" in v:
            print(f"  {label:32s} {v['error']}")
            continue
        pf = v["per_frame_ms"]
        rb = f"{pf / base:.3f}x" if base else "-"
        rt = f"{pf / tg:.3f}x" if tg else "-"
        print(f"  {label:32s} {pf:9.4f} {v['fps']:9.1f} {rb:>16s} {rt:>15s}")
    dev, comp = rows.get("netrun device I/O", {}), rows.get("netrun compute-only (device)", {})
    if "per_frame_ms" in dev and "per_frame_ms" in comp:
        q = dev["per_frame_ms"] / comp["per_frame_ms"]
        print(f"  target device I/O <= 1.05x compute-only (device): {q:.3f}x {'met' if q <= 1.05 else 'NOT met'}")
    if "per_frame_ms" in dev and tg:
        q = dev["per_frame_ms"] / tg
        print(f"  target device I/O below torch graph: {q:.3f}x {'met' if q < 1 else 'NOT met'}")
    print(f"  placement: {r['placement']}")
    for label, st in r.get("sessions", {}).items():
        print(f"  last run of the {label} session: {st}")
    if r["max_abs_diff_vs_compute_only"]:
        print("  max |output - compute-only output|: " +
              ", ".join(f"{k} {v:.3g}" for k, v in r["max_abs_diff_vs_compute_only"].items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="build tree with the Python package (BUILD/python)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--models", default="resnet50,yolo")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--frame", default="1080x1920", help="frame HxW")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16"])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--torch-cpu", action="store_true", help="with --device cpu: torch rows on the CPU too")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(build, "python"))
    os.environ.setdefault("NETRUN_BACKEND_PATH", os.path.join(build, "lib", "netrun", "backends"))
    try:
        import netrun
    except ImportError as e:
        sys.exit(f"cannot import netrun from {build}/python ({e}): build with the Python package (NETRUN_PYTHON=ON, "
                 "Python's headers installed)")

    H, W = (int(v) for v in a.frame.lower().split("x"))
    results = []
    with tempfile.TemporaryDirectory(prefix="netrun-pipeline-") as tmp:
        for name in a.models.split(","):
            if name not in SPECS:
                sys.exit(f"unknown model {name!r}: one of {', '.join(SPECS)}")
            path = os.path.join(tmp, name + ".onnx")
            if name == "tiny":
                tiny_model(path)
                tmodel = None
            else:
                tmodel = export_torch(name, path)
            for batch in (int(b) for b in a.batches.split(",")):
                frames = np.random.default_rng(batch).integers(0, 256, (batch, H, W, 3), dtype=np.uint8)
                r = bench_model(a, netrun, name, path, tmodel, batch, frames)
                print_result(r)
                results.append(r)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "device": a.device, "frame": [H, W], "precision": a.precision,
            "iters": a.iters, "warmup": a.warmup, "netrun": netrun.version()}
    if a.device == "cuda":
        try:
            import torch
            meta["gpu"] = torch.cuda.get_device_name(0)
            meta["torch"] = torch.__version__
        except Exception:
            pass
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)
        print(f"\nwrote {a.json}")


if __name__ == "__main__":
    main()
