#!/usr/bin/env python3
"""CPU int8: QDQ-quantized models in netrun against the float model in netrun and the QDQ model in onnxruntime.

The float models are made with onnx.helper (tools/bench/make_models.py: torchvision-shaped MobileNetV2 and
ResNet-50 with calibrated BatchNorm; here: a BERT-base-width encoder, MatMul-heavy), then quantized with
onnxruntime.quantization.quantize_static (QDQ format, per-channel int8 weights, int8 activations by default;
after quant_pre_process, which folds BatchNorm into the convolutions; a calibration reader of random inputs).
Rows, per model:
  netrun int8   the QDQ model (the QDQ pass turns its groups into QLinearConv / QLinearMatMul, residual Adds
                join their QLinearConv, MaxPool runs on 8 bits)
  netrun fp32   the float model
  ort int8      onnxruntime on the same QDQ model (its own QDQ fusions)
Each round runs every row `--iters` times, rows alternated, and the table shows the median over the rounds of
the wall time per run (and of the process CPU time per run: on a shared machine that moves less with the other
processes' load), then the ratios netrun int8 / ort int8 and netrun int8 / netrun fp32 (< 1: netrun int8 faster).
The outputs are compared too: netrun int8 against onnxruntime on the QDQ model, in units of the output's
quantization step where the output is a DequantizeLinear (may differ by a few units: one-unit rounding
differences at ties inside the network propagate), and the int8 models against the float one (the cost of
quantizing, for the record).

    python3 tools/bench/int8_bench.py --lib build/lib/libnetrun.so --threads 2 [--models DIR] [--only mobilenetv2]
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from netrun_ctypes import Netrun  # noqa: E402


def bert_encoder(layers=4, seq=128, hidden=768, heads=12, ff=3072, seed=0):
    """BERT-base-width encoder layers as torch exports them (MatMul + Add bias, attention through Reshape /
    Transpose, Softmax, LayerNormalization; GELU as Erf), input [1, seq, hidden] float."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    dh = hidden // heads

    def c(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def n(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def linear(x, fin, fout, name):
        w = c(name + ".weight", (rng.standard_normal((fin, fout)) / np.sqrt(fin)).astype(np.float32))
        b = c(name + ".bias", (rng.standard_normal(fout) * 0.02).astype(np.float32))
        return n("Add", [n("MatMul", [x, w], name + ".matmul"), b], name + ".add")

    def layernorm(x, name):
        g = c(name + ".weight", rng.uniform(0.8, 1.2, hidden).astype(np.float32))
        b = c(name + ".bias", (rng.standard_normal(hidden) * 0.02).astype(np.float32))
        return n("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-12)

    split = c("shape.heads", np.array([1, seq, heads, dh], np.int64))
    merge = c("shape.merge", np.array([1, seq, hidden], np.int64))
    x = "input"
    for i in range(layers):
        p = f"layer{i}"

        def heads_of(t, perm, name):
            return n("Transpose", [n("Reshape", [t, split], name + ".reshape")], name + ".transpose", perm=perm)

        q = heads_of(linear(x, hidden, hidden, p + ".query"), [0, 2, 1, 3], p + ".q")
        k = heads_of(linear(x, hidden, hidden, p + ".key"), [0, 2, 3, 1], p + ".k")
        v = heads_of(linear(x, hidden, hidden, p + ".value"), [0, 2, 1, 3], p + ".v")
        s = n("Div", [n("MatMul", [q, k], p + ".scores"), c(p + ".sqrt_dh", np.array(np.sqrt(dh), np.float32))],
              p + ".scaled")
        ctx = n("MatMul", [n("Softmax", [s], p + ".probs", axis=-1), v], p + ".context")
        ctx = n("Reshape", [n("Transpose", [ctx], p + ".ctx.transpose", perm=[0, 2, 1, 3]), merge], p + ".ctx")
        h = layernorm(n("Add", [linear(ctx, hidden, hidden, p + ".attn_out"), x], p + ".res1"), p + ".ln1")
        f = linear(h, hidden, ff, p + ".ffn1")
        gelu = n("Mul", [n("Mul", [f, n("Add", [n("Erf", [n("Div", [f, c(p + ".sqrt2", np.array(np.sqrt(2), np.float32))],
                                                                  p + ".gelu.div")], p + ".gelu.erf"),
                                               c(p + ".one", np.array(1, np.float32))], p + ".gelu.add")], p + ".gelu.mul"),
                         c(p + ".half", np.array(0.5, np.float32))], p + ".gelu")
        x = layernorm(n("Add", [linear(gelu, ff, hidden, p + ".ffn2"), h], p + ".res2"), p + ".ln2")
    g = helper.make_graph(nodes, "bert_encoder", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, seq, hidden])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def make_float(name, path, seed):
    if name == "bert_encoder":
        onnx.save(bert_encoder(seed=seed), path)
        return
    import make_models
    m, bns = make_models.MODELS[name](seed)
    if bns:
        make_models.calibrate(m, bns, seed)
    m.ir_version = min(m.ir_version, 8)
    onnx.save(m, path)


def input_of(path):
    m = onnx.load(path, load_external_data=False)
    i = m.graph.input[0]
    shape = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
    return i.name, shape


def quantize(src, dst, tmp, act, per_channel, calib=4, feeds=None):
    """feeds: the calibration inputs (a list of {name: array}); default `calib` seeded normal inputs of the
    first input's shape."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            if feeds is not None:
                self.it = iter(feeds)
                return
            name, shape = input_of(src)
            rng = np.random.default_rng(0)
            self.it = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(calib)])

        def get_next(self):
            return next(self.it, None)

    pre = os.path.join(tmp, os.path.basename(src) + ".pre.onnx")
    quant_pre_process(src, pre, skip_symbolic_shape=True)
    quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QInt8 if act == "int8" else QuantType.QUInt8, weight_type=QuantType.QInt8)


def out_step(path):
    m = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for nd in m.graph.node:
        if nd.op_type == "DequantizeLinear" and nd.output[0] == m.graph.output[0].name and nd.input[1] in inits:
            return float(inits[nd.input[1]])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/lib/libnetrun.so")
    ap.add_argument("--models", default="build/bench-models/int8", help="where the models are made (kept, reused)")
    ap.add_argument("--only", default="mobilenetv2,resnet50,bert_encoder")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--act", choices=["int8", "uint8"], default="int8", help="activation type of the quantizer")
    ap.add_argument("--per-tensor", action="store_true", help="per-tensor weight scales (default per channel)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.models, exist_ok=True)
    nr = Netrun(args.lib)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    tag = f"{args.act}{'_pt' if args.per_tensor else ''}"
    print(f"threads {args.threads}, {args.rounds} rounds x {args.iters} runs, rows alternated; activations {args.act}, "
          f"weights int8 per {'tensor' if args.per_tensor else 'channel'}")
    print(f"{'model':14} {'row':12} {'wall ms':>9} {'cpu ms':>9}")
    summary = []
    for name in [s for s in args.only.split(",") if s]:
        fp = os.path.join(args.models, name + ".onnx")
        qp = os.path.join(args.models, f"{name}.qdq_{tag}.onnx")
        if not os.path.exists(fp):
            make_float(name, fp, args.seed)
        if not os.path.exists(qp):
            quantize(fp, qp, args.models, args.act, not args.per_tensor)
        iname, shape = input_of(fp)
        x = np.random.default_rng(args.seed + 7).standard_normal(shape).astype(np.float32)
        o_q = ort.InferenceSession(qp, so, providers=["CPUExecutionProvider"])
        o_f = ort.InferenceSession(fp, so, providers=["CPUExecutionProvider"])
        s_q = nr.session(qp, backends="cpu", threads=args.threads, options={})
        s_f = nr.session(fp, backends="cpu", threads=args.threads, options={})
        try:
            y_q = s_q.run({iname: x})[0]
            y_f = s_f.run({iname: x})[0]
            r_q = o_q.run(None, {iname: x})[0]
            r_f = o_f.run(None, {iname: x})[0]
            ops = [nd[1] for nd in s_q.nodes()]
            fused = ops.count("QLinearConv") + ops.count("QLinearMatMul")
            residual = sum(1 for nd in s_q.nodes() if nd[1] == "QLinearConv" and "residual" in nd[3])
            rows = {"netrun int8": lambda: s_q.run({iname: x}), "netrun fp32": lambda: s_f.run({iname: x}),
                    "ort int8": lambda: o_q.run(None, {iname: x})}
            wall = {k: [] for k in rows}
            cpu = {k: [] for k in rows}
            for f in rows.values():
                f()
            for r in range(args.rounds):
                order = list(rows) if r % 2 == 0 else list(reversed(rows))
                for k in order:
                    t0, c0 = time.perf_counter(), time.process_time()
                    for _ in range(args.iters):
                        rows[k]()
                    wall[k].append((time.perf_counter() - t0) / args.iters * 1e3)
                    cpu[k].append((time.process_time() - c0) / args.iters * 1e3)
            med = {k: (float(np.median(wall[k])), float(np.median(cpu[k]))) for k in rows}
            for k in rows:
                print(f"{name:14} {k:12} {med[k][0]:9.2f} {med[k][1]:9.2f}")
            vs_ort = med["netrun int8"][0] / med["ort int8"][0]
            vs_fp = med["netrun int8"][0] / med["netrun fp32"][0]
            vs_ort_cpu = med["netrun int8"][1] / med["ort int8"][1]
            step = out_step(qp)
            d = np.abs(y_q.astype(np.float64) - r_q)
            acc = (f"max |netrun int8 - ort int8| {d.max():.4g}" + (f" = {d.max() / step:.1f} output steps" if step else "") +
                   f"; int8 vs fp32 max {np.abs(y_q - y_f).max():.3g} (ort: {np.abs(r_q - r_f).max():.3g})")
            print(f"{name:14} ratios: netrun int8 / ort int8 {vs_ort:.2f}x wall, {vs_ort_cpu:.2f}x cpu; "
                  f"netrun int8 / netrun fp32 {vs_fp:.2f}x; {fused} quantized nodes ({residual} with a residual Add, "
                  f"{ops.count('Add')} Add and {ops.count('DequantizeLinear')} DequantizeLinear left); {acc}")
            summary.append((name, vs_ort, vs_ort_cpu, vs_fp))
        finally:
            s_q.close()
            s_f.close()
    print("summary (netrun int8 / ort int8 wall, cpu; netrun int8 / netrun fp32 wall): " +
          "; ".join(f"{n} {a:.2f}x {b:.2f}x {c:.2f}x" for n, a, b, c in summary))


if __name__ == "__main__":
    main()
