#!/usr/bin/env python3
"""Transformer benchmark: netrun beside onnxruntime on the CPU, and beside PyTorch on a GPU.

CPU part (runs anywhere): BERT-base, GPT-2 small (logits, no cache) and ViT-B/16 sized models built with
onnx.helper in the shape torch.onnx.export writes them (opset 14: decomposed LayerNormalization, erf / tanh
Gelu subgraphs, MatMul/Div/Add/Softmax/MatMul attention with its Reshape/Transpose), random weights. Each model
runs on onnxruntime (all its graph optimizations, intra-op threads = --threads), netrun with its graph passes
(the transformer fusions on) and netrun with graph.fuse_transformer=0; outputs are checked against
onnxruntime's. Timing: --rounds rounds, the runtimes alternating inside each round, --iters runs each; the
figure is the median over rounds of each round's median.

GPU part (only where torch and a CUDA GPU exist; --gpu): models from transformers / torchvision with random
weights, exported with torch.onnx.export (opset 17, dynamic batch / sequence), run by the netrun CLI on cuda
(fp32 / tf32 / fp16) beside PyTorch eager, a captured CUDA graph and torch.compile(mode="reduce-overhead"), at
batch 1 and 32. netrun's outputs are checked against onnxruntime on the CPU at batch 1.

    python3 tools/bench/transformer_bench.py --cpu-only --lib build/lib/libnetrun.so
    python3 tools/bench/transformer_bench.py --cpu-only --dry-run          # tiny models, one round: a smoke test
    python3 tools/bench/transformer_bench.py --gpu --netrun build/bin/netrun
    python3 tools/bench/transformer_bench.py --gpu-only --gpu-models vit-b16 --gpu-precisions fp32,fp16 --no-compile
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# real sizes: hidden, heads, ffn, layers, vocab / image
SIZES = {
    "bert-base": dict(H=768, NH=12, FF=3072, L=12, V=30522, P=512),
    "gpt2-small": dict(H=768, NH=12, FF=3072, L=12, V=50257, P=1024),
    "vit-b16": dict(H=768, NH=12, FF=3072, L=12, IMG=224, PATCH=16),
}
TINY = {
    "bert-base": dict(H=64, NH=4, FF=128, L=2, V=100, P=64),
    "gpt2-small": dict(H=64, NH=4, FF=128, L=2, V=100, P=64),
    "vit-b16": dict(H=64, NH=4, FF=128, L=2, IMG=32, PATCH=8),
}


class Builder:
    """torch.onnx.export-like graph: '/scope/Op_N' node names, Constant nodes for literals."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], {}

    def name(self, base):
        k = self.count.get(base, 0)
        self.count[base] = k + 1
        return base if k == 0 else f"{base}_{k}"

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), self.name(name)))
        return self.inits[-1].name

    def w(self, *shape, scale=None):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def op(self, op, ins, scope="", n_out=1, **attrs):
        nm = self.name(f"{scope}/{op}")
        outs = [f"{nm}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=nm, **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, arr, scope=""):
        return self.op("Constant", [], scope, value=numpy_helper.from_array(np.asarray(arr)))

    def linear(self, x, scope, fin, fout):
        y = self.op("MatMul", [x, self.init(f"{scope}.weight", self.w(fin, fout))], scope)
        return self.op("Add", [self.init(f"{scope}.bias", self.w(fout, scale=0.02)), y], scope)

    def layernorm(self, x, scope, H, eps):
        """The decomposed form exported below opset 17."""
        gamma = self.init(f"{scope}.weight", self.rng.uniform(0.8, 1.2, H).astype(np.float32))
        beta = self.init(f"{scope}.bias", self.w(H, scale=0.02))
        mu = self.op("ReduceMean", [x], scope, axes=[-1], keepdims=1)
        d = self.op("Sub", [x, mu], scope)
        var = self.op("ReduceMean", [self.op("Pow", [d, self.const(np.float32(2.0), scope)], scope)], scope,
                      axes=[-1], keepdims=1)
        sd = self.op("Sqrt", [self.op("Add", [var, self.const(np.float32(eps), scope)], scope)], scope)
        y = self.op("Mul", [self.op("Div", [d, sd], scope), gamma], scope)
        return self.op("Add", [y, beta], scope)

    def gelu_erf(self, x, scope):
        e = self.op("Erf", [self.op("Div", [x, self.const(np.float32(1.4142135623730951), scope)], scope)], scope)
        e = self.op("Add", [e, self.const(np.float32(1.0), scope)], scope)
        return self.op("Mul", [self.op("Mul", [x, e], scope), self.const(np.float32(0.5), scope)], scope)

    def gelu_tanh(self, x, scope):
        c = self.op("Pow", [x, self.const(np.float32(3.0), scope)], scope)
        c = self.op("Mul", [self.const(np.float32(0.044715), scope), c], scope)
        c = self.op("Mul", [self.const(np.float32(0.7978845608028654), scope), self.op("Add", [x, c], scope)], scope)
        c = self.op("Add", [self.const(np.float32(1.0), scope), self.op("Tanh", [c], scope)], scope)
        return self.op("Mul", [self.op("Mul", [self.const(np.float32(0.5), scope), x], scope), c], scope)

    def dyn_shape(self, x, scope, tail):
        """Concat(batch, seq, *tail) from Shape(x): the run-time Reshape target exporters write."""
        parts = []
        for i in (0, 1):
            s = self.op("Gather", [self.op("Shape", [x], scope), self.const(np.int64(i), scope)], scope, axis=0)
            parts.append(self.op("Unsqueeze", [s, self.const(np.array([0], np.int64), scope)], scope))
        parts += [self.const(np.array([v], np.int64), scope) for v in tail]
        return self.op("Concat", parts, scope, axis=0)

    def attention(self, x, scope, H, NH, mask=None, causal=None):
        """Self-attention as transformers exports it; causal: GPT-2's, one Q/K/V linear (c_attn) then Split, and
        a bool [1, 1, P, P] buffer sliced to the length."""
        DH = H // NH
        qkv = None
        if causal is not None:
            qkv = self.op("Split", [self.linear(x, f"{scope}/c_attn", H, 3 * H),
                                    self.const(np.array([H, H, H], np.int64), scope)], scope, n_out=3, axis=2)

        def heads(i, name, perm):
            y = qkv[i] if qkv else self.linear(x, f"{scope}/{name}", H, H)
            y = self.op("Reshape", [y, self.dyn_shape(y, scope, [NH, DH])], scope)
            return self.op("Transpose", [y], scope, perm=perm)

        q, k, v = heads(0, "query", [0, 2, 1, 3]), heads(1, "key", [0, 2, 3, 1]), heads(2, "value", [0, 2, 1, 3])
        s = self.op("Div", [self.op("MatMul", [q, k], scope), self.const(np.float32(np.sqrt(DH)), scope)], scope)
        if causal is not None:
            n = self.op("Unsqueeze", [self.op("Gather", [self.op("Shape", [q], scope), self.const(np.int64(2), scope)],
                                              scope, axis=0), self.const(np.array([0], np.int64), scope)], scope)
            cm = self.op("Slice", [causal, self.const(np.array([0, 0], np.int64), scope),
                                   self.op("Concat", [n, n], scope, axis=0),
                                   self.const(np.array([2, 3], np.int64), scope)], scope)
            s = self.op("Where", [cm, s, self.const(np.float32(np.finfo(np.float32).min), scope)], scope)
        if mask is not None:
            s = self.op("Add", [s, mask], scope)
        p = self.op("Softmax", [s], scope, axis=-1)
        c = self.op("Transpose", [self.op("MatMul", [p, v], scope)], scope, perm=[0, 2, 1, 3])
        c = self.op("Reshape", [c, self.dyn_shape(c, scope, [H])], scope)
        return self.linear(c, f"{scope}/output/dense", H, H)

    def model(self, name, inputs, outputs, opset=14):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="transformer_bench")
        m.ir_version = 8
        return m


def fvi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def build_bert(sz):
    """BERT encoder (post-LN, erf Gelu, additive padding mask); outputs last_hidden_state."""
    H, NH, FF = sz["H"], sz["NH"], sz["FF"]
    b = Builder(1)
    ids, am = "input_ids", "attention_mask"
    pos = b.op("Range", [b.const(np.int64(0)), b.op("Gather", [b.op("Shape", [ids]), b.const(np.int64(1))], axis=0),
                         b.const(np.int64(1))])
    e = b.op("Add", [b.op("Gather", [b.init("word_embeddings", b.w(sz["V"], H, scale=0.5)), ids]),
                     b.op("Gather", [b.init("position_embeddings", b.w(sz["P"], H, scale=0.2)),
                                     b.op("Unsqueeze", [pos, b.const(np.array([0], np.int64))])])])
    h = b.layernorm(e, "/embeddings/LayerNorm", H, 1e-12)
    m4 = b.op("Unsqueeze", [am, b.const(np.array([1, 2], np.int64))])
    m4 = b.op("Sub", [b.const(np.float32(1.0)), b.op("Cast", [m4], to=TensorProto.FLOAT)])
    m4 = b.op("Mul", [m4, b.const(np.float32(np.finfo(np.float32).min))])
    for li in range(sz["L"]):
        L = f"/encoder/layer.{li}"
        a = b.attention(h, f"{L}/attention/self", H, NH, mask=m4)
        h = b.layernorm(b.op("Add", [a, h], L), f"{L}/attention/output/LayerNorm", H, 1e-12)
        f = b.gelu_erf(b.linear(h, f"{L}/intermediate/dense", H, FF), f"{L}/intermediate/act")
        h = b.layernorm(b.op("Add", [b.linear(f, f"{L}/output/dense", FF, H), h], L), f"{L}/output/LayerNorm", H,
                        1e-12)
    b.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"], name="/Identity_out"))
    m = b.model("bert", [fvi(ids, ["batch", "sequence"], TensorProto.INT64),
                         fvi(am, ["batch", "sequence"], TensorProto.INT64)],
                [fvi("last_hidden_state", ["batch", "sequence", H])])

    def feeds(batch, seq, rng):
        mask = np.ones((batch, seq), np.int64)
        mask[:, seq - seq // 8:] = 0  # some padding
        return {ids: rng.integers(0, sz["V"], (batch, seq)).astype(np.int64), am: mask}
    return m, feeds


def build_gpt2(sz):
    """GPT-2 decoder (pre-LN, causal Where mask, tanh Gelu, tied lm_head); outputs logits."""
    H, NH, FF, P = sz["H"], sz["NH"], sz["FF"], sz["P"]
    b = Builder(2)
    ids = "input_ids"
    wte = b.init("transformer.wte.weight", b.w(sz["V"], H, scale=0.1))
    pos = b.op("Range", [b.const(np.int64(0)), b.op("Gather", [b.op("Shape", [ids]), b.const(np.int64(1))], axis=0),
                         b.const(np.int64(1))])
    h = b.op("Add", [b.op("Gather", [wte, ids]),
                     b.op("Gather", [b.init("transformer.wpe.weight", b.w(P, H, scale=0.05)),
                                     b.op("Unsqueeze", [pos, b.const(np.array([0], np.int64))])])])
    causal = b.init("transformer.h.attn.bias", np.tril(np.ones((P, P), bool)).reshape(1, 1, P, P))
    for li in range(sz["L"]):
        L = f"/transformer/h.{li}"
        a = b.attention(b.layernorm(h, f"{L}/ln_1", H, 1e-5), f"{L}/attn", H, NH, causal=causal)
        h = b.op("Add", [a, h], L)
        f = b.gelu_tanh(b.linear(b.layernorm(h, f"{L}/ln_2", H, 1e-5), f"{L}/mlp/c_fc", H, FF), f"{L}/mlp/act")
        h = b.op("Add", [h, b.linear(f, f"{L}/mlp/c_proj", FF, H)], L)
    h = b.layernorm(h, "/transformer/ln_f", H, 1e-5)
    b.nodes.append(helper.make_node("MatMul", [h, b.op("Transpose", [wte], "/lm_head", perm=[1, 0])], ["logits"],
                                    name="/lm_head/MatMul"))
    m = b.model("gpt2", [fvi(ids, ["batch", "sequence"], TensorProto.INT64)],
                [fvi("logits", ["batch", "sequence", sz["V"]])])
    return m, lambda batch, seq, rng: {ids: rng.integers(0, sz["V"], (batch, seq)).astype(np.int64)}


def build_vit(sz):
    """ViT (patch Conv, class token, pre-LN, erf Gelu, no mask); outputs last_hidden_state."""
    H, NH, FF, IMG, PT = sz["H"], sz["NH"], sz["FF"], sz["IMG"], sz["PATCH"]
    n_patch = (IMG // PT) ** 2
    b = Builder(3)
    x = "pixel_values"
    pe = b.op("Conv", [x, b.init("patch.weight", b.w(H, 3, PT, PT, scale=0.02)), b.init("patch.bias", b.w(H))],
              "/embeddings/patch_embeddings", kernel_shape=[PT, PT], strides=[PT, PT])
    pe = b.op("Transpose", [b.op("Reshape", [pe, b.const(np.array([0, H, -1], np.int64))])], perm=[0, 2, 1])
    cls = b.op("Expand", [b.init("cls_token", b.w(1, 1, H, scale=0.02)),
                          b.op("Concat", [b.op("Slice", [b.op("Shape", [x]), b.const(np.array([0], np.int64)),
                                                         b.const(np.array([1], np.int64))]),
                                          b.const(np.array([1, H], np.int64))], axis=0)])
    h = b.op("Add", [b.op("Concat", [cls, pe], axis=1), b.init("position_embeddings", b.w(1, n_patch + 1, H,
                                                                                         scale=0.02))])
    for li in range(sz["L"]):
        L = f"/encoder/layer.{li}"
        a = b.attention(b.layernorm(h, f"{L}/layernorm_before", H, 1e-12), f"{L}/attention/attention", H, NH)
        h = b.op("Add", [a, h], L)
        f = b.gelu_erf(b.linear(b.layernorm(h, f"{L}/layernorm_after", H, 1e-12), f"{L}/intermediate/dense", H, FF),
                       f"{L}/intermediate/act")
        h = b.op("Add", [b.linear(f, f"{L}/output/dense", FF, H), h], L)
    h = b.layernorm(h, "/layernorm", H, 1e-12)
    b.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"], name="/Identity_out"))
    m = b.model("vit", [fvi(x, ["batch", 3, IMG, IMG])], [fvi("last_hidden_state", ["batch", n_patch + 1, H])])
    return m, lambda batch, seq, rng: {x: rng.standard_normal((batch, 3, IMG, IMG)).astype(np.float32)}


BUILDERS = {"bert-base": build_bert, "gpt2-small": build_gpt2, "vit-b16": build_vit}


# ---------------------------------------------------------------------------------------------------------- CPU
def exported_feeds(path, batch, seq, rng):
    """Inputs for a model exported elsewhere (the GPU part's files): dims named like a batch or sequence get
    `batch` / `seq`, token ids are random ids below 100 (every vocabulary has that many), masks ones, floats
    normal."""
    import onnxruntime as ort

    feeds = {}
    for i in ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_inputs():
        shape = [d if isinstance(d, int) else (batch if "batch" in str(d) else seq) for d in i.shape]
        if "int64" in i.type:
            feeds[i.name] = (np.ones(shape, np.int64) if "mask" in i.name
                             else rng.integers(0, 100, size=shape).astype(np.int64))
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def cpu_part(a):
    import onnxruntime as ort
    from netrun_ctypes import Netrun

    nr = Netrun(a.lib)
    sizes = TINY if a.dry_run else SIZES
    rounds, iters = (1, 2) if a.dry_run else (a.rounds, a.iters)
    if a.dry_run:
        a.seq = min(a.seq, 16)
    rng = np.random.default_rng(0)
    rows = []
    os.makedirs(a.model_dir, exist_ok=True)
    todo = []  # (name, path, feeds, tokens)
    for name in [m for m in a.models.split(",") if m]:
        model, mk_feeds = BUILDERS[name](sizes[name])
        path = os.path.join(a.model_dir, f"{name}{'-tiny' if a.dry_run else ''}.onnx")
        if not os.path.exists(path):
            onnx.save(model, path)
        del model
        tokens = (sizes[name]["IMG"] // sizes[name]["PATCH"]) ** 2 + 1 if "IMG" in sizes[name] else a.seq
        todo.append((name, path, mk_feeds(a.batch, a.seq, rng), tokens))
    for path in [p for p in (a.onnx or "").split(",") if p]:  # models exported by torch (the GPU part's files)
        feeds = exported_feeds(path, a.batch, a.seq, rng)
        todo.append((os.path.splitext(os.path.basename(path))[0], path, feeds, a.seq))
    for name, path, feeds, tokens in todo:
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        ort_s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        ref = ort_s.run(None, feeds)
        runners = {"onnxruntime": lambda: ort_s.run(None, feeds)}
        sessions, errors, fusions = {}, [], None
        for label, opt in (("netrun fused", "1"), ("netrun unfused", "0")):
            s = nr.session(path, backends="cpu", threads=a.threads, options={"graph.fuse_transformer": opt})
            sessions[label] = s
            outs = s.run(feeds)
            for r, o in zip(ref, outs):
                d = float(np.max(np.abs(r - o)))
                if not d <= 1e-3 * max(1.0, float(np.max(np.abs(r)))):
                    errors.append(f"{label}: max abs diff {d:.2e} against onnxruntime")
            if opt == "1":
                st = s.stats()
                fusions = (st.n_attention_fused, st.n_layernorm_fused, st.n_gelu_fused)
            runners[label] = s.run_only
        times = {k: [] for k in runners}
        cpu = {k: [] for k in runners}  # process CPU time per run: moves less than wall time on a loaded machine
        for r in range(rounds):
            order = list(runners) if r % 2 == 0 else list(reversed(runners))
            for k in order:
                runners[k]()  # warm
                ts, cs = [], []
                for _ in range(iters):
                    c0, t0 = time.process_time(), time.perf_counter()
                    runners[k]()
                    ts.append((time.perf_counter() - t0) * 1e3)
                    cs.append((time.process_time() - c0) * 1e3)
                times[k].append(statistics.median(ts))
                cpu[k].append(statistics.median(cs))
        for s in sessions.values():
            s.close()
        del ort_s
        med = {k: statistics.median(v) for k, v in times.items()}
        cmed = {k: statistics.median(v) for k, v in cpu.items()}
        rows.append(dict(model=name, batch=a.batch, seq=a.seq, threads=a.threads, ms=med, cpu_ms=cmed,
                         fusions=fusions, errors=errors, tokens=tokens))
        o, f, u = med["onnxruntime"], med["netrun fused"], med["netrun unfused"]
        print(f"{name:11s} b{a.batch} {tokens} tokens: onnxruntime {o:8.2f} ms  netrun fused {f:8.2f} ms  unfused {u:8.2f} ms"
              f"  fused/ort {f / o:5.2f}  fused/unfused {f / u:5.2f}  cpu ms/run ort {cmed['onnxruntime']:.0f} fused "
              f"{cmed['netrun fused']:.0f} unfused {cmed['netrun unfused']:.0f}  fusions (attn, ln, gelu) {fusions}"
              + ("  " + "; ".join(errors) if errors else "  outputs ok"), flush=True)
    print("\n| model | threads | onnxruntime ms | netrun fused ms | netrun unfused ms | fused / ort | fused / unfused | "
          "CPU ms per run: ort / fused / unfused | Attention, LayerNorm, Gelu fused |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m, c = r["ms"], r["cpu_ms"]
        print(f"| {r['model']} | {r['threads']} | {m['onnxruntime']:.1f} | {m['netrun fused']:.1f} | "
              f"{m['netrun unfused']:.1f} | {m['netrun fused'] / m['onnxruntime']:.2f} | "
              f"{m['netrun fused'] / m['netrun unfused']:.2f} | {c['onnxruntime']:.0f} / {c['netrun fused']:.0f} / "
              f"{c['netrun unfused']:.0f} | {r['fusions']} |")
    return rows, any(r["errors"] for r in rows)


# ---------------------------------------------------------------------------------------------------------- GPU
def gpu_models(only=None):
    """(name, ONNX file stem, torch module, example inputs as a tuple, input names, dynamic axes, netrun --dim
    values); random weights. Rows sharing a file stem share one export (BERT at 128 and 384 tokens). only: a
    set of names, the others are not built (None: all)."""
    import torch
    import torchvision
    import transformers as tf

    out = []

    def want(*names):
        return only is None or any(n in only for n in names)

    def eager(cfg):
        # the attention modules' eager path exports as MatMul/Div/Add/Softmax/MatMul, the pattern netrun fuses
        # (the scaled_dot_product_attention export computes its scale from shapes)
        cfg._attn_implementation = "eager"
        return cfg

    def tokens(cfg, seq):
        return (torch.randint(0, cfg.vocab_size, (1, seq)), torch.ones(1, seq, dtype=torch.int64))

    text_names = ["input_ids", "attention_mask"]
    text_dyn = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}

    class LMWithMask(torch.nn.Module):
        """GPT-2 given its attention mask by name: without one, transformers 5.x looks for packed sequences in the
        position ids with torch.diff, which the ONNX exporter has no symbolic for (aten::diff)"""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).logits

    class Hidden(torch.nn.Module):
        """an encoder's last hidden state alone (one output, as the ONNX file has)"""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            return self.m(*args).last_hidden_state

    class TextHidden(Hidden):
        """a text encoder given its inputs by name (the positional order of forward() differs between
        `transformers` releases)"""

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    if want("bert-base", "bert-base-384"):
        cfg = eager(tf.BertConfig())
        bert = TextHidden(tf.BertModel(cfg))
        for seq in (128, 384):
            out.append(("bert-base" if seq == 128 else f"bert-base-{seq}", "bert-base", bert, tokens(cfg, seq),
                        text_names, text_dyn, {"sequence": seq}))
    if want("gpt2-small"):
        cfg = eager(tf.GPT2Config(use_cache=False))
        out.append(("gpt2-small", "gpt2-small", LMWithMask(tf.GPT2LMHeadModel(cfg)), tokens(cfg, 128), text_names,
                    text_dyn, {"sequence": 128}))
    if want("t5-small-encoder"):
        # the defaults are t5-small's: 6 layers, d_model 512, 8 heads, relative position bias
        cfg = eager(tf.T5Config())
        out.append(("t5-small-encoder", "t5-small-encoder", TextHidden(tf.T5EncoderModel(cfg)), tokens(cfg, 128),
                    text_names, text_dyn, {"sequence": 128}))
    if want("distilbert"):
        cfg = eager(tf.DistilBertConfig())
        out.append(("distilbert", "distilbert", TextHidden(tf.DistilBertModel(cfg)), tokens(cfg, 128), text_names,
                    text_dyn, {"sequence": 128}))
    if want("vit-b16"):
        cfg = eager(tf.ViTConfig())
        out.append(("vit-b16", "vit-b16", Hidden(tf.ViTModel(cfg)), (torch.randn(1, 3, 224, 224),), ["pixel_values"],
                    {"pixel_values": {0: "batch"}}, {}))
    if want("whisper-tiny-encoder"):
        # the defaults are whisper-tiny's (4 layers, d_model 384, 6 heads); 30 s of 80 mel bins -> 1500 positions
        cfg = eager(tf.WhisperConfig())
        out.append(("whisper-tiny-encoder", "whisper-tiny-encoder", Hidden(tf.WhisperModel(cfg).get_encoder()),
                    (torch.randn(1, cfg.num_mel_bins, 2 * cfg.max_source_positions),), ["input_features"],
                    {"input_features": {0: "batch"}}, {}))
    for nm, ctor in (("swin-t", torchvision.models.swin_t), ("convnext-t", torchvision.models.convnext_tiny)):
        if want(nm):
            out.append((nm, nm, ctor(weights=None), (torch.randn(1, 3, 224, 224),), ["x"], {"x": {0: "batch"}}, {}))
    return out


def export_onnx(model, inputs, path, in_names, dyn):
    """torch.onnx.export of one gpu_models() entry (opset 17, the TorchScript exporter)."""
    import torch

    kw = dict(input_names=in_names, dynamic_axes=dyn, opset_version=17)
    try:
        torch.onnx.export(model, inputs, path, dynamo=False, **kw)
    except TypeError:  # torch < 2.5 has no dynamo argument
        torch.onnx.export(model, inputs, path, **kw)


def torch_times(model, inputs, iters, warmup, compile_=True):
    """PyTorch eager, CUDA graph (where capture works) and torch.compile(mode="reduce-overhead"), ms per run."""
    import torch

    def timed(fn):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)

    res = {}
    with torch.inference_mode():
        res["eager"] = timed(lambda: model(*inputs))
        try:
            static = [t.clone() for t in inputs]
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(*static)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                model(*static)
            res["cuda graph"] = timed(g.replay)
        except Exception as e:  # noqa: BLE001 - capture fails on some models: reported, not fatal
            res["cuda graph"] = f"capture failed: {type(e).__name__}"
    if not compile_:
        return res
    try:
        cm = torch.compile(model, mode="reduce-overhead")
        with torch.inference_mode():
            res["torch.compile"] = timed(lambda: cm(*inputs))
    except Exception as e:  # noqa: BLE001
        res["torch.compile"] = f"failed: {type(e).__name__}"
    return res


def netrun_cli(a, path, batch, prec, dims):
    # outputs stay on the GPU in the timed runs, as PyTorch's do (GPT-2's logits at batch 32 are 823 MB: copying
    # them to the host took longer than the model)
    cmd = [a.netrun, path, "--backend", "cuda", "--batch", str(batch), "--precision", prec, "--warmup", "10",
           "--iterations", str(a.iters), "--json", "-", "--seed", "1", "--outputs-on-device"]
    for k, v in dims.items():
        cmd += ["--dim", f"{k}={v}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:], "cmd": " ".join(cmd)}
    r = json.loads(p.stdout)
    return {"ms": r["timings"]["latency_ms"]["median"], "prepare_ms": r["timings"].get("prepare_ms"),
            "cmd": " ".join(cmd)}


def check_against_ort(a, path, feeds, precision):
    """netrun cuda at batch 1 against onnxruntime CPU: max abs difference of the first output."""
    import onnxruntime as ort

    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with tempfile.TemporaryDirectory() as td:
        cmd = [a.netrun, path, "--backend", "cuda", "--precision", precision, "--output-dir", td, "--iterations", "1"]
        for k, v in feeds.items():
            np.save(os.path.join(td, f"{k}.npy"), v)
            cmd += ["--input", f"{k}={os.path.join(td, k + '.npy')}"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        outs = sorted(f for f in os.listdir(td) if f.endswith(".npy") and f[:-4] not in feeds)
        if p.returncode or not outs:
            return float("nan")
        got = [np.load(os.path.join(td, f)) for f in outs if np.load(os.path.join(td, f)).shape == ref.shape]
        return float(np.max(np.abs(got[0] - ref))) if got else float("nan")


def gpu_part(a):
    import torch

    if not torch.cuda.is_available():
        print("GPU part: no CUDA device; skipped")
        return []
    rows = []
    os.makedirs(a.model_dir, exist_ok=True)
    want = set(a.gpu_models.split(",")) if a.gpu_models else None
    for name, stem, model, inputs, in_names, dyn, dims in gpu_models(want):
        if want is not None and name not in want:
            continue
        model = model.eval()
        path = os.path.join(a.model_dir, f"{stem}.onnx")
        if not os.path.exists(path):
            try:
                export_onnx(model, inputs, path, in_names, dyn)
            except Exception as e:  # noqa: BLE001 - an exporter limit of this torch / transformers: reported
                row = dict(model=name, error=f"export failed: {str(e).splitlines()[-1][:200]}")
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
        feeds = {n: t.numpy() for n, t in zip(in_names, inputs)}
        err = check_against_ort(a, path, feeds, "fp32")
        for batch in (int(b) for b in a.gpu_batches.split(",")):
            big = tuple(t.repeat(batch, *([1] * (t.dim() - 1))).cuda() for t in inputs)
            for prec in a.gpu_precisions.split(","):
                torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = prec == "tf32"
                m = model.cuda().half() if prec == "fp16" else model.cuda().float()
                ins = tuple(t.half() if prec == "fp16" and t.is_floating_point() else t for t in big)
                pt = torch_times(m, ins, a.iters, 10, compile_=not a.no_compile)
                nrr = netrun_cli(a, path, batch, prec, dims)
                best = min([v for v in pt.values() if isinstance(v, float)], default=float("nan"))
                row = dict(model=name, batch=batch, precision=prec, torch=pt, netrun=nrr, max_abs_vs_ort_fp32=err,
                           netrun_over_best_torch=(nrr.get("ms", float("nan")) / best))
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "..", "build", "lib", "libnetrun.so"))
    ap.add_argument("--netrun", default=os.path.join(HERE, "..", "..", "build", "bin", "netrun"))
    ap.add_argument("--cpu-only", action="store_true", help="the CPU part only (the default unless --gpu)")
    ap.add_argument("--gpu", action="store_true", help="also the GPU part (needs torch, transformers, torchvision)")
    ap.add_argument("--gpu-only", action="store_true", help="the GPU part alone")
    ap.add_argument("--dry-run", action="store_true", help="tiny models and one round: checks the script works")
    ap.add_argument("--models", default="bert-base,gpt2-small,vit-b16",
                    help="CPU part: models built here with onnx.helper (empty: none)")
    ap.add_argument("--onnx", help="CPU part: also these ONNX files (comma-separated), e.g. the GPU part's exports "
                    "in --model-dir; inputs made from their declared shapes (--batch, --seq)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--gpu-models", default="", help="GPU part: only these (bert-base,bert-base-384,gpt2-small,"
                    "t5-small-encoder,distilbert,vit-b16,whisper-tiny-encoder,swin-t,convnext-t; default all)")
    ap.add_argument("--gpu-batches", default="1,32")
    ap.add_argument("--gpu-precisions", default="fp32,tf32,fp16")
    ap.add_argument("--no-compile", action="store_true", help="GPU part: no torch.compile rows (they take minutes)")
    ap.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "netrun_transformer_bench"))
    ap.add_argument("--json", help="write the rows to this file")
    a = ap.parse_args()
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; threads {a.threads}", flush=True)
    cpu_rows, bad = ([], 0) if a.gpu_only else cpu_part(a)
    gpu_rows = []
    if (a.gpu or a.gpu_only) and not a.cpu_only:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("GPU part: torch is not installed; skipped")
        else:
            gpu_rows = gpu_part(a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_rows, "gpu": gpu_rows}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
