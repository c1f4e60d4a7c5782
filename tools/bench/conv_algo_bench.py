#!/usr/bin/env python3
"""Conv algorithm micro-benchmark: one Conv (+ bias + Relu) per shape, netrun's CPU backend under several option
sets (default, cpu.winograd=0, ...) and onnxruntime, alternated run by run in one process, medians. Prints the
kernel netrun picked (its kernel column) beside each time, so that a rule of conv.c can be checked against
what the shapes measure.

    python3 tools/bench/conv_algo_bench.py --lib build/lib/libnetrun.so --threads 2 \
        --variant default: --variant direct:cpu.winograd=0

A shape is CIN,COUT,H,W[,K[,STRIDE[,BATCH]]] (--shape, repeatable; default: a sweep of first layers and of
channel counts around the Winograd threshold).
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netrun_ctypes import Netrun  # noqa: E402

DEFAULT_SHAPES = [
    "3,16,416,416",    # YOLO-style first layer
    "3,32,416,416",
    "3,64,224,224",    # VGG / U-Net first layer
    "3,8,32,32",       # examples/tiny_cnn.onnx's first conv
    "8,16,112,112",
    "16,16,112,112",
    "16,32,112,112",
    "24,24,56,56",
    "32,32,56,56",
    "32,64,56,56",
    "64,64,56,56",     # ResNet layer1
    "128,128,28,28",
    "64,3,224,224",    # a last layer to RGB (super-resolution, U-Net)
    "64,12,112,112",   # super-resolution's last conv before DepthToSpace
]


def conv_model(cin, cout, h, w, k, stride, batch, chain=1):
    """Conv cin -> cout (+ bias + Relu), then chain - 1 more convs cout -> cout of the same kind: inside a chain
    the activations may be channel-blocked (nChw16c), as inside a network."""
    rng = np.random.default_rng(cin * 1000 + cout)
    nodes, inits, x = [], [], "x"
    for i in range(chain):
        ci = cin if i == 0 else cout
        wt = (rng.standard_normal((cout, ci, k, k)) / np.sqrt(ci * k * k)).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(wt, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        y = "y" if i == chain - 1 else f"r{i}"
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[k // 2] * 4,
                                   strides=[stride if i == 0 else 1] * 2),
                  helper.make_node("Relu", [f"c{i}"], [y], name=f"relu{i}")]
        x = y
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--shape", action="append", help="CIN,COUT,H,W[,K[,STRIDE[,BATCH]]] (repeatable)")
    ap.add_argument("--variant", action="append", help="NAME:key=value,... netrun option set (repeatable)")
    ap.add_argument("--chain", type=int, default=1, help="convs in a row (the kernel shown is the last one's)")
    ap.add_argument("--stat", choices=["median", "min"], default="median")
    ap.add_argument("--no-ort", action="store_true")
    args = ap.parse_args()
    import onnxruntime as ort

    nr = Netrun(args.lib)
    variants = []
    for spec in args.variant or ["default:", "direct:cpu.winograd=0"]:
        name, _, kv = spec.partition(":")
        variants.append((name, dict(item.split("=", 1) for item in kv.split(",") if item)))
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} threads {args.threads}, runs {args.runs}, "
          f"load avg {os.getloadavg()[0]:.2f}; {args.stat} ms (kernel)")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.shape or DEFAULT_SHAPES:
            v = [int(t) for t in spec.split(",")]
            cin, cout, h, w = v[:4]
            k, stride, batch = (v[4:] + [3, 1, 1][len(v) - 4:])[:3]
            path = os.path.join(tmp, "conv.onnx")
            onnx.save(conv_model(cin, cout, h, w, k, stride, batch, args.chain), path)
            x = np.random.default_rng(0).standard_normal((batch, cin, h, w)).astype(np.float32)
            engines, kernels = [], {}
            for name, opts in variants:
                s = nr.session(path, backends="cpu", threads=args.threads, options=opts)
                s.set_inputs({"x": x})
                s.prepare()
                kernels[name] = [k for nm, _, _, k in s.nodes() if nm.startswith("conv")][-1]
                engines.append((name, s.run_only, s))
            if not args.no_ort:
                so = ort.SessionOptions()
                so.intra_op_num_threads = args.threads
                so.inter_op_num_threads = 1
                so.log_severity_level = 3
                osess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                engines.append(("ORT", lambda o=osess: o.run(None, {"x": x}), None))
            times = {n: [] for n, _, _ in engines}
            for fn in [e[1] for e in engines]:
                fn()
            for _ in range(args.runs):
                for n, fn, _ in engines:
                    t0 = time.perf_counter()
                    fn()
                    times[n].append((time.perf_counter() - t0) * 1e3)
            # the minimum: on a shared machine the other tenants only ever add time
            med = {n: float(np.min(t) if args.stat == "min" else np.median(t)) for n, t in times.items()}
            base = variants[0][0]
            line = f"{cin:>4} {cout:>4} {h:>4}x{w:<4} k{k} s{stride} b{batch}: "
            line += "  ".join(f"{n} {med[n]:.3f}" + (f" ({kernels[n]})" if n in kernels else "") for n, _, _ in engines)
            line += "  " + " ".join(f"{base}/{n} {med[base] / med[n]:.2f}" for n, _, _ in engines if n != base)
            print(line, flush=True)
            for _, _, s in engines:
                if s:
                    s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
