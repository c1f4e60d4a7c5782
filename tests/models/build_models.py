#!/usr/bin/env python3
"""Build the end-to-end test models for netrun, with onnxruntime reference outputs.

usage: build_models.py OUTDIR [--filter NAME]

Each model is written with onnx.helper from a seeded numpy RNG (so the files are deterministic) in the
shape a real exporter (torch.onnx.export, transformers) produces: torch-style node and tensor names,
BatchNormalization nodes, Clip with min/max inputs, shape subgraphs computed at run time, and so on.

Layout written for every model NAME:
  OUTDIR/NAME/model.onnx
  OUTDIR/NAME/inputs/<input>.npy       OUTDIR/NAME/expected/<output>.npy     (the main case)
  OUTDIR/NAME/<variant>/inputs/...     OUTDIR/NAME/<variant>/expected/...   (extra cases, e.g. batch2:
                                        other values of the symbolic dims, to exercise dynamic shapes)
  OUTDIR/NAME/info.json                 description, opset, cases
References come from onnxruntime's CPU provider with graph optimizations disabled.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import detectors  # noqa: E402

MAX_MODEL_BYTES = 2 * 1024 * 1024


class Graph:
    """A small torch-exporter-like graph builder: unique node names '/scope/Op_N', outputs '<node>_output_0'."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.init_names = set()
        self.used = {}
        self.const_count = 0

    def _unique(self, base):
        n = self.used.get(base, 0)
        self.used[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def init(self, name, arr):
        """Add an initializer (a weight); returns its name."""
        name = self._unique(name)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        self.init_names.add(name)
        return name

    def const(self, arr, scope=""):
        """A Constant node, as torch emits for small literal values; returns its output name."""
        arr = np.asarray(arr)
        return self.op("Constant", [], scope=scope, value=numpy_helper.from_array(arr))

    def op(self, op_type, inputs, scope="", n_out=1, **attrs):
        name = self._unique(f"{scope}/{op_type}")
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    # weights -----------------------------------------------------------------------------------------
    def conv_w(self, cout, cin_per_group, k):
        fan_in = cin_per_group * k * k
        return (self.rng.standard_normal((cout, cin_per_group, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(self, n, scale=0.05):
        return (self.rng.standard_normal(n) * scale).astype(np.float32)

    def dense_w(self, rows, cols, scale=None):
        s = scale if scale is not None else 1.0 / np.sqrt(cols)
        return (self.rng.standard_normal((rows, cols)) * s).astype(np.float32)

    # layers ------------------------------------------------------------------------------------------
    def conv(self, x, scope, cin, cout, k, stride=1, pad=None, group=1, bias=True, dilation=1, w_scale=1.0):
        if pad is None:
            pad = (k // 2) * dilation
        w = self.conv_w(cout, cin // group, k) * np.float32(w_scale)
        w = self.init(f"{scope.strip('/').replace('/', '.')}.weight", w)
        ins = [x, w]
        if bias:
            ins.append(self.init(f"{scope.strip('/').replace('/', '.')}.bias", self.bias(cout)))
        return self.op("Conv", ins, scope=scope, dilations=[dilation, dilation], group=group,
                       kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride])

    def bn(self, x, scope, c):
        p = scope.strip("/").replace("/", ".")
        g = self.init(f"{p}.weight", self.rng.uniform(0.6, 1.4, c).astype(np.float32))
        b = self.init(f"{p}.bias", self.bias(c, 0.1))
        m = self.init(f"{p}.running_mean", self.bias(c, 0.1))
        v = self.init(f"{p}.running_var", self.rng.uniform(0.5, 1.5, c).astype(np.float32))
        return self.op("BatchNormalization", [x, g, b, m, v], scope=scope, epsilon=1e-5, momentum=0.9)

    def linear(self, x, scope, fin, fout, gemm=True, scale=None):
        """torch Linear: Gemm(transB=1) for 2-D inputs, MatMul(x, W^T) + Add for N-D inputs."""
        p = scope.strip("/").replace("/", ".")
        w = self.dense_w(fout, fin, scale)
        b = self.bias(fout)
        if gemm:
            return self.op("Gemm", [x, self.init(f"{p}.weight", w), self.init(f"{p}.bias", b)], scope=scope,
                           alpha=1.0, beta=1.0, transB=1)
        wt = self.init(f"onnx::MatMul_{p}", np.ascontiguousarray(w.T))
        y = self.op("MatMul", [x, wt], scope=scope)
        return self.op("Add", [self.init(f"{p}.bias", b), y], scope=scope)

    def clip6(self, x, scope):
        # torch exports ReLU6 / hardtanh as Clip with min and max as inputs (opset >= 11)
        lo = self.const(np.array(0.0, np.float32), scope)
        hi = self.const(np.array(6.0, np.float32), scope)
        return self.op("Clip", [x, lo, hi], scope=scope)

    def model(self, name, inputs, outputs, opset, doc):
        g = helper.make_graph(self.nodes, "main_graph", inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="pytorch", producer_version="2.1.0")
        m.ir_version = 8
        m.doc_string = doc
        return m


def fvi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


# ---------------------------------------------------------------------------------------------------------
def resnet_class():
    g = Graph(1001)
    x = "input"
    h = g.conv(x, "/conv1", 3, 16, 7, stride=2, pad=3, bias=False)
    h = g.bn(h, "/bn1", 16)
    h = g.op("Relu", [h], scope="/relu")
    h = g.op("MaxPool", [h], scope="/maxpool", ceil_mode=0, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             strides=[2, 2])
    cin = 16
    stages = [(16, 1, 2), (32, 2, 1), (64, 2, 1), (128, 2, 1)]  # (width, first stride, blocks)
    for si, (c, stride, nblocks) in enumerate(stages):
        for bi in range(nblocks):
            s = stride if bi == 0 else 1
            sc = f"/layer{si + 1}/layer{si + 1}.{bi}"
            idn = h
            y = g.conv(h, f"{sc}/conv1", cin, c, 3, stride=s, bias=False)
            y = g.bn(y, f"{sc}/bn1", c)
            y = g.op("Relu", [y], scope=f"{sc}/relu")
            y = g.conv(y, f"{sc}/conv2", c, c, 3, bias=False)
            y = g.bn(y, f"{sc}/bn2", c)
            if s != 1 or cin != c:
                idn = g.conv(h, f"{sc}/downsample/downsample.0", cin, c, 1, stride=s, pad=0, bias=False)
                idn = g.bn(idn, f"{sc}/downsample/downsample.1", c)
            y = g.op("Add", [y, idn], scope=sc)
            h = g.op("Relu", [y], scope=f"{sc}/relu_1")
            cin = c
    h = g.op("GlobalAveragePool", [h], scope="/avgpool")
    h = g.op("Flatten", [h], scope="", axis=1)
    h = g.linear(h, "/fc", 128, 10)
    g.nodes[-1].output[0] = "logits"
    m = g.model("resnet_class", [fvi("input", ["batch", 3, 64, 64])], [fvi("logits", ["batch", 10])], 13,
                "ResNet-style classifier (BasicBlocks 16-32-64-128), torch.onnx.export style, opset 13")
    rng = np.random.default_rng(1)
    cases = {
        "": {"input": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)},
        "batch2": {"input": rng.standard_normal((2, 3, 64, 64)).astype(np.float32)},
    }
    return m, cases


# ---------------------------------------------------------------------------------------------------------
def mobilenet_class():
    g = Graph(1002)
    h = g.conv("input", "/features/features.0/features.0.0", 3, 16, 3, stride=2, bias=False)
    h = g.bn(h, "/features/features.0/features.0.1", 16)
    h = g.clip6(h, "/features/features.0/features.0.2")
    cin = 16
    # (expand ratio, out channels, stride, squeeze-excite + hardswish)
    cfg = [(1, 16, 1, False), (4, 24, 2, False), (3, 24, 1, False), (4, 32, 2, True), (3, 32, 1, True)]
    for i, (t, c, s, se) in enumerate(cfg):
        sc = f"/features/features.{i + 1}/conv"
        x = h
        hid = cin * t
        y = h
        li = 0

        def act(v, scope):
            return g.op("HardSwish", [v], scope=scope) if se else g.clip6(v, scope)

        if t != 1:
            y = g.conv(y, f"{sc}/conv.{li}/conv.{li}.0", cin, hid, 1, bias=False)
            y = g.bn(y, f"{sc}/conv.{li}/conv.{li}.1", hid)
            y = act(y, f"{sc}/conv.{li}/conv.{li}.2")
            li += 1
        y = g.conv(y, f"{sc}/conv.{li}/conv.{li}.0", hid, hid, 3, stride=s, group=hid, bias=False)
        y = g.bn(y, f"{sc}/conv.{li}/conv.{li}.1", hid)
        y = act(y, f"{sc}/conv.{li}/conv.{li}.2")
        li += 1
        if se:
            ss = f"{sc}/se"
            sq = max(8, hid // 4)
            z = g.op("GlobalAveragePool", [y], scope=f"{ss}/avgpool")
            z = g.conv(z, f"{ss}/fc1", hid, sq, 1, pad=0)
            z = g.op("Relu", [z], scope=f"{ss}/activation")
            z = g.conv(z, f"{ss}/fc2", sq, hid, 1, pad=0)
            z = g.op("HardSigmoid", [z], scope=f"{ss}/scale_activation", alpha=1.0 / 6, beta=0.5)
            y = g.op("Mul", [z, y], scope=ss)
        y = g.conv(y, f"{sc}/conv.{li}", hid, c, 1, bias=False)
        y = g.bn(y, f"{sc}/conv.{li + 1}", c)
        if s == 1 and cin == c:
            y = g.op("Add", [x, y], scope=f"/features/features.{i + 1}")
        h = y
        cin = c
    h = g.conv(h, "/features/features.6/features.6.0", cin, 128, 1, bias=False)
    h = g.bn(h, "/features/features.6/features.6.1", 128)
    h = g.op("HardSwish", [h], scope="/features/features.6/features.6.2")
    h = g.op("GlobalAveragePool", [h], scope="/avgpool")
    h = g.op("Flatten", [h], scope="", axis=1)
    h = g.linear(h, "/classifier/classifier.1", 128, 10)
    g.nodes[-1].output[0] = "logits"
    m = g.model("mobilenet_class", [fvi("input", [1, 3, 64, 64])], [fvi("logits", [1, 10])], 14,
                "MobileNetV2-style classifier with MobileNetV3 squeeze-excite/HardSwish blocks, opset 14")
    rng = np.random.default_rng(2)
    cases = {"": {"input": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}}
    return m, cases


# ---------------------------------------------------------------------------------------------------------
def bert_class():
    H, NH, DH, FF, V, P = 64, 4, 16, 256, 100, 32
    g = Graph(1003)
    ids, mask = "input_ids", "attention_mask"
    sc = "/embeddings"
    we = g.init("embeddings.word_embeddings.weight", g.dense_w(V, H, 0.5))
    pe = g.init("embeddings.position_embeddings.weight", g.dense_w(P, H, 0.5))
    te = g.init("embeddings.token_type_embeddings.weight", g.dense_w(2, H, 0.5))
    # position ids from the run-time sequence length: Shape -> Gather(1) -> Range -> Unsqueeze
    shp = g.op("Shape", [ids], scope=sc)
    seq = g.op("Gather", [shp, g.const(np.array(1, np.int64), sc)], scope=sc, axis=0)
    pos = g.op("Range", [g.const(np.array(0, np.int64), sc), seq, g.const(np.array(1, np.int64), sc)],
               scope=sc)
    pos = g.op("Unsqueeze", [pos, g.const(np.array([0], np.int64), sc)], scope=sc)
    # token_type_ids default to zeros of input_ids' shape
    tt = g.op("ConstantOfShape", [g.op("Shape", [ids], scope=sc)], scope=sc,
              value=numpy_helper.from_array(np.array([0], np.int64)))
    e = g.op("Gather", [we, ids], scope=f"{sc}/word_embeddings")
    t = g.op("Gather", [te, tt], scope=f"{sc}/token_type_embeddings")
    e = g.op("Add", [e, t], scope=sc)
    p = g.op("Gather", [pe, pos], scope=f"{sc}/position_embeddings")
    e = g.op("Add", [e, p], scope=sc)

    def layernorm(x, scope, fused):
        pfx = scope.strip("/").replace("/", ".")
        gamma = g.init(f"{pfx}.weight", g.rng.uniform(0.8, 1.2, H).astype(np.float32))
        beta = g.init(f"{pfx}.bias", g.bias(H))
        if fused:
            return g.op("LayerNormalization", [x, gamma, beta], scope=scope, axis=-1, epsilon=1e-12)
        # the decomposed form exported at opset < 17
        mu = g.op("ReduceMean", [x], scope=scope, axes=[-1], keepdims=1)
        d = g.op("Sub", [x, mu], scope=scope)
        sq = g.op("Pow", [d, g.const(np.array(2.0, np.float32), scope)], scope=scope)
        var = g.op("ReduceMean", [sq], scope=scope, axes=[-1], keepdims=1)
        var = g.op("Add", [var, g.const(np.array(1e-12, np.float32), scope)], scope=scope)
        sd = g.op("Sqrt", [var], scope=scope)
        y = g.op("Div", [d, sd], scope=scope)
        y = g.op("Mul", [y, gamma], scope=scope)
        return g.op("Add", [y, beta], scope=scope)

    h = layernorm(e, f"{sc}/LayerNorm", True)

    # extended attention mask: (1 - mask[:, None, None, :]) * finfo(float32).min
    m4 = g.op("Unsqueeze", [mask, g.const(np.array([1], np.int64), "")], scope="")
    m4 = g.op("Unsqueeze", [m4, g.const(np.array([2], np.int64), "")], scope="")
    m4 = g.op("Cast", [m4], scope="", to=TensorProto.FLOAT)
    m4 = g.op("Sub", [g.const(np.array(1.0, np.float32), ""), m4], scope="")
    m4 = g.op("Mul", [m4, g.const(np.array(np.finfo(np.float32).min, np.float32), "")], scope="")

    def dyn_shape(x, scope, tail):
        """Concat(batch, seq, *tail) from Shape(x), the dynamic reshape target transformers exports."""
        s = g.op("Shape", [x], scope=scope)
        b = g.op("Gather", [s, g.const(np.array(0, np.int64), scope)], scope=scope, axis=0)
        s2 = g.op("Shape", [x], scope=scope)
        n = g.op("Gather", [s2, g.const(np.array(1, np.int64), scope)], scope=scope, axis=0)
        b = g.op("Unsqueeze", [b, g.const(np.array([0], np.int64), scope)], scope=scope)
        n = g.op("Unsqueeze", [n, g.const(np.array([0], np.int64), scope)], scope=scope)
        parts = [b, n] + [g.const(np.array([v], np.int64), scope) for v in tail]
        return g.op("Concat", parts, scope=scope, axis=0)

    for li in range(2):
        L = f"/encoder/layer.{li}"
        A = f"{L}/attention/self"

        def heads(x, name, perm):
            y = g.linear(x, f"{A}/{name}", H, H, gemm=False)
            y = g.op("Reshape", [y, dyn_shape(y, A, [NH, DH])], scope=A)
            return g.op("Transpose", [y], scope=A, perm=perm)

        q = heads(h, "query", [0, 2, 1, 3])
        k = heads(h, "key", [0, 2, 3, 1])      # k.transpose(-1, -2) folded into the permute
        v = heads(h, "value", [0, 2, 1, 3])
        s = g.op("MatMul", [q, k], scope=A)
        s = g.op("Div", [s, g.const(np.array(np.sqrt(DH), np.float32), A)], scope=A)
        s = g.op("Add", [s, m4], scope=A)
        s = g.op("Softmax", [s], scope=A, axis=-1)
        c = g.op("MatMul", [s, v], scope=A)
        c = g.op("Transpose", [c], scope=A, perm=[0, 2, 1, 3])
        c = g.op("Reshape", [c, dyn_shape(c, A, [H])], scope=A)
        o = g.linear(c, f"{L}/attention/output/dense", H, H, gemm=False)
        o = g.op("Add", [o, h], scope=f"{L}/attention/output")
        h1 = layernorm(o, f"{L}/attention/output/LayerNorm", li == 1)
        f = g.linear(h1, f"{L}/intermediate/dense", H, FF, gemm=False)
        # erf GELU: x * 0.5 * (1 + erf(x / sqrt(2)))
        G = f"{L}/intermediate/intermediate_act_fn"
        ge = g.op("Div", [f, g.const(np.array(1.4142135, np.float32), G)], scope=G)
        ge = g.op("Erf", [ge], scope=G)
        ge = g.op("Add", [ge, g.const(np.array(1.0, np.float32), G)], scope=G)
        ge = g.op("Mul", [f, ge], scope=G)
        ge = g.op("Mul", [ge, g.const(np.array(0.5, np.float32), G)], scope=G)
        f2 = g.linear(ge, f"{L}/output/dense", FF, H, gemm=False)
        f2 = g.op("Add", [f2, h1], scope=f"{L}/output")
        h = layernorm(f2, f"{L}/output/LayerNorm", li == 1)
    last = g.op("Identity", [h], scope="")
    g.nodes[-1].output[0] = "last_hidden_state"
    first = g.op("Gather", ["last_hidden_state", g.const(np.array(0, np.int64), "/pooler")], scope="/pooler",
                 axis=1)
    pooled = g.linear(first, "/pooler/dense", H, H)
    g.op("Tanh", [pooled], scope="/pooler/activation")
    g.nodes[-1].output[0] = "pooler_output"
    del last
    m = g.model("bert_class",
                [fvi(ids, ["batch", "sequence"], TensorProto.INT64), fvi(mask, ["batch", "sequence"], TensorProto.INT64)],
                [fvi("last_hidden_state", ["batch", "sequence", H]), fvi("pooler_output", ["batch", H])], 17,
                "2-layer BERT-style encoder as transformers exports it (hidden 64, 4 heads), opset 17")
    rng = np.random.default_rng(3)

    def mk(b, n, pad):
        i = rng.integers(0, V, (b, n)).astype(np.int64)
        mk_ = np.ones((b, n), np.int64)
        for r in range(b):
            if pad[r]:
                mk_[r, n - pad[r]:] = 0
        return {ids: i, mask: mk_}

    cases = {"": mk(1, 16, [3]), "batch2": mk(2, 11, [0, 4])}
    return m, cases


# ---------------------------------------------------------------------------------------------------------
def lstm_tagger():
    V, E, HID, T = 50, 32, 32, 9
    g = Graph(1004)
    emb = g.init("embedding.weight", g.dense_w(V, E, 0.5))
    x = g.op("Gather", [emb, "tokens"], scope="/embedding")          # [B, S, E]
    x = g.op("Transpose", [x], scope="/lstm", perm=[1, 0, 2])          # batch_first -> [S, B, E]
    s = 1.0 / np.sqrt(HID)

    def lstm_w(ndir, fin):
        W = g.rng.uniform(-s, s, (ndir, 4 * HID, fin)).astype(np.float32)
        R = g.rng.uniform(-s, s, (ndir, 4 * HID, HID)).astype(np.float32)
        B = g.rng.uniform(-s, s, (ndir, 8 * HID)).astype(np.float32)
        return W, R, B

    # layer 1: bidirectional. Y is [S, 2, B, H] -> Transpose [S, B, 2, H] -> Reshape [S, B, 2H]
    W, R, B = lstm_w(2, E)
    y, _, _ = g.op("LSTM", [x, g.init("onnx::LSTM_W0", W), g.init("onnx::LSTM_R0", R),
                            g.init("onnx::LSTM_B0", B)], scope="/lstm", n_out=3,
                   direction="bidirectional", hidden_size=HID)
    y = g.op("Transpose", [y], scope="/lstm", perm=[0, 2, 1, 3])
    y = g.op("Reshape", [y, g.const(np.array([0, 0, -1], np.int64), "/lstm")], scope="/lstm")
    # layer 2: forward only. Y is [S, 1, B, H] -> Squeeze(axis 1)
    W, R, B = lstm_w(1, 2 * HID)
    y2, _, _ = g.op("LSTM", [y, g.init("onnx::LSTM_W1", W), g.init("onnx::LSTM_R1", R),
                             g.init("onnx::LSTM_B1", B)], scope="/lstm2", n_out=3,
                    direction="forward", hidden_size=HID)
    y2 = g.op("Squeeze", [y2, g.const(np.array([1], np.int64), "/lstm2")], scope="/lstm2")
    y2 = g.op("Transpose", [y2], scope="/lstm2", perm=[1, 0, 2])        # back to [B, S, H]
    z = g.linear(y2, "/hidden2tag", HID, T, gemm=False, scale=1.0)  # peaked scores
    g.op("LogSoftmax", [z], scope="", axis=-1)
    g.nodes[-1].output[0] = "tag_scores"
    m = g.model("lstm_tagger", [fvi("tokens", ["batch", "sequence"], TensorProto.INT64)],
                [fvi("tag_scores", ["batch", "sequence", T])], 14,
                "Embedding + bidirectional LSTM + LSTM sequence tagger, torch export style, opset 14")
    rng = np.random.default_rng(4)
    cases = {"": {"tokens": rng.integers(0, V, (1, 12)).astype(np.int64)},
             "batch2": {"tokens": rng.integers(0, V, (3, 7)).astype(np.int64)}}
    return m, cases


# ---------------------------------------------------------------------------------------------------------
def unet_small():
    g = Graph(1005)

    def double_conv(x, scope, cin, cout):
        for j in range(2):
            x = g.conv(x, f"{scope}/double_conv/double_conv.{3 * j}", cin if j == 0 else cout, cout, 3,
                       bias=False)
            x = g.bn(x, f"{scope}/double_conv/double_conv.{3 * j + 1}", cout)
            x = g.op("Relu", [x], scope=f"{scope}/double_conv/double_conv.{3 * j + 2}")
        return x

    e1 = double_conv("input", "/inc", 3, 8)                                      # 8 x 32 x 32
    p1 = g.op("MaxPool", [e1], scope="/down1/maxpool_conv/maxpool_conv.0", ceil_mode=0,
              kernel_shape=[2, 2], pads=[0, 0, 0, 0], strides=[2, 2])
    e2 = double_conv(p1, "/down1/maxpool_conv/maxpool_conv.1", 8, 16)            # 16 x 16 x 16
    p2 = g.op("MaxPool", [e2], scope="/down2/maxpool_conv/maxpool_conv.0", ceil_mode=0,
              kernel_shape=[2, 2], pads=[0, 0, 0, 0], strides=[2, 2])
    bt = double_conv(p2, "/down2/maxpool_conv/maxpool_conv.1", 16, 32)           # 32 x 8 x 8
    # level 2 up: ConvTranspose 2x2 stride 2
    wt = (g.rng.standard_normal((32, 16, 2, 2)) * np.sqrt(1.0 / 32)).astype(np.float32)
    u2 = g.op("ConvTranspose", [bt, g.init("up1.up.weight", wt), g.init("up1.up.bias", g.bias(16))],
              scope="/up1/up", dilations=[1, 1], group=1, kernel_shape=[2, 2], pads=[0, 0, 0, 0],
              strides=[2, 2])
    u2 = g.op("Concat", [e2, u2], scope="/up1", axis=1)                          # 32 x 16 x 16
    d2 = double_conv(u2, "/up1/conv", 32, 16)
    # level 1 up: nn.Upsample(scale_factor=2, mode='nearest') -> Resize with scales
    roi = g.const(np.array([], np.float32), "/up2/up")
    scales = g.const(np.array([1.0, 1.0, 2.0, 2.0], np.float32), "/up2/up")
    u1 = g.op("Resize", [d2, roi, scales], scope="/up2/up", coordinate_transformation_mode="asymmetric",
              cubic_coeff_a=-0.75, mode="nearest", nearest_mode="floor")
    u1 = g.op("Concat", [e1, u1], scope="/up2", axis=1)                          # 24 x 32 x 32
    d1 = double_conv(u1, "/up2/conv", 24, 8)
    o = g.conv(d1, "/outc/conv", 8, 1, 1, pad=0, w_scale=0.2)  # keep Sigmoid out of saturation
    g.op("Sigmoid", [o], scope="")
    g.nodes[-1].output[0] = "mask"
    m = g.model("unet_small", [fvi("input", ["batch", 3, 32, 32])], [fvi("mask", ["batch", 1, 32, 32])], 13,
                "2-level U-Net (ConvTranspose and nearest Resize upsampling, Concat skips), opset 13")
    rng = np.random.default_rng(5)
    cases = {"": {"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)},
             "batch2": {"input": rng.standard_normal((2, 3, 32, 32)).astype(np.float32)}}
    return m, cases


# ---------------------------------------------------------------------------------------------------------
def superres():
    g = Graph(1006)
    h = g.conv("input", "/conv1", 1, 64, 5, pad=2)
    h = g.op("Relu", [h], scope="/relu")
    h = g.conv(h, "/conv2", 64, 64, 3, pad=1)
    h = g.op("Relu", [h], scope="/relu_1")
    h = g.conv(h, "/conv3", 64, 32, 3, pad=1)
    h = g.op("Relu", [h], scope="/relu_2")
    h = g.conv(h, "/conv4", 32, 9, 3, pad=1)
    g.op("DepthToSpace", [h], scope="/pixel_shuffle", blocksize=3, mode="CRD")
    g.nodes[-1].output[0] = "output"
    m = g.model("superres", [fvi("input", ["batch", 1, 32, 32])], [fvi("output", ["batch", 1, 96, 96])], 15,
                "PyTorch super-resolution tutorial net (pixel shuffle x3), opset 15")
    rng = np.random.default_rng(6)
    cases = {"": {"input": rng.uniform(0, 1, (1, 1, 32, 32)).astype(np.float32)},
             "batch2": {"input": rng.uniform(0, 1, (2, 1, 32, 32)).astype(np.float32)}}
    return m, cases


# ---------------------------------------------------------------------------------------------------------
def gpt_causal():
    """GPT-2 style decoder as transformers exports it: fused QKV + Split, causal mask by Slice of a bool
    buffer with run-time bounds + Where, tanh GELU, decomposed LayerNorm, tied lm_head."""
    H, NH, DH, FF, V, P = 64, 4, 16, 256, 100, 32
    g = Graph(1007)
    ids = "input_ids"
    wte = g.init("transformer.wte.weight", g.dense_w(V, H, 0.5))
    wpe = g.init("transformer.wpe.weight", g.dense_w(P, H, 0.2))
    sc = "/transformer"
    shp = g.op("Shape", [ids], scope=sc)
    seq = g.op("Gather", [shp, g.const(np.array(-1, np.int64), sc)], scope=sc, axis=0)
    pos = g.op("Range", [g.const(np.array(0, np.int64), sc), seq, g.const(np.array(1, np.int64), sc)], scope=sc)
    pos = g.op("Unsqueeze", [pos, g.const(np.array([0], np.int64), sc)], scope=sc)
    h = g.op("Add", [g.op("Gather", [wte, ids], scope=f"{sc}/wte"), g.op("Gather", [wpe, pos], scope=f"{sc}/wpe")],
             scope=sc)
    causal = g.init("transformer.h.0.attn.bias", np.tril(np.ones((P, P), bool)).reshape(1, 1, P, P))
    neg = g.const(np.array(np.finfo(np.float32).min, np.float32), sc)

    def layernorm(x, scope):
        pfx = scope.strip("/").replace("/", ".")
        gamma = g.init(f"{pfx}.weight", g.rng.uniform(0.8, 1.2, H).astype(np.float32))
        beta = g.init(f"{pfx}.bias", g.bias(H))
        mu = g.op("ReduceMean", [x], scope=scope, axes=[-1], keepdims=1)
        d = g.op("Sub", [x, mu], scope=scope)
        var = g.op("ReduceMean", [g.op("Pow", [d, g.const(np.array(2.0, np.float32), scope)], scope=scope)],
                   scope=scope, axes=[-1], keepdims=1)
        sd = g.op("Sqrt", [g.op("Add", [var, g.const(np.array(1e-5, np.float32), scope)], scope=scope)], scope=scope)
        return g.op("Add", [g.op("Mul", [g.op("Div", [d, sd], scope=scope), gamma], scope=scope), beta], scope=scope)

    def dim(x, i, scope):
        s_ = g.op("Shape", [x], scope=scope)
        return g.op("Unsqueeze", [g.op("Gather", [s_, g.const(np.array(i, np.int64), scope)], scope=scope, axis=0),
                                  g.const(np.array([0], np.int64), scope)], scope=scope)

    for li in range(2):
        L = f"{sc}/h.{li}"
        A = f"{L}/attn"
        x = layernorm(h, f"{L}/ln_1")
        qkv = g.linear(x, f"{A}/c_attn", H, 3 * H, gemm=False)
        q, k, v = g.op("Split", [qkv, g.const(np.array([H, H, H], np.int64), A)], scope=A, n_out=3, axis=2)

        def heads(t, perm):
            tgt = g.op("Concat", [dim(t, 0, A), dim(t, 1, A), g.const(np.array([NH], np.int64), A),
                                  g.const(np.array([DH], np.int64), A)], scope=A, axis=0)
            return g.op("Transpose", [g.op("Reshape", [t, tgt], scope=A)], scope=A, perm=perm)

        q, k, v = heads(q, [0, 2, 1, 3]), heads(k, [0, 2, 3, 1]), heads(v, [0, 2, 1, 3])
        w = g.op("Div", [g.op("MatMul", [q, k], scope=A), g.const(np.array(4.0, np.float32), A)], scope=A)
        # causal_mask = bias[:, :, kl - ql : kl, :kl] with ql, kl from the run-time shapes
        ql = dim(q, 2, A)
        kl = dim(k, 3, A)
        start = g.op("Sub", [kl, ql], scope=A)
        cm = g.op("Slice", [causal, start, kl, g.const(np.array([2], np.int64), A),
                            g.const(np.array([1], np.int64), A)], scope=A)
        cm = g.op("Slice", [cm, g.const(np.array([0], np.int64), A), kl, g.const(np.array([3], np.int64), A),
                            g.const(np.array([1], np.int64), A)], scope=A)
        w = g.op("Where", [cm, w, neg], scope=A)
        w = g.op("Softmax", [w], scope=A, axis=-1)
        a = g.op("Transpose", [g.op("MatMul", [w, v], scope=A)], scope=A, perm=[0, 2, 1, 3])
        tgt = g.op("Concat", [dim(a, 0, A), dim(a, 1, A), g.const(np.array([H], np.int64), A)], scope=A, axis=0)
        a = g.op("Reshape", [a, tgt], scope=A)
        a = g.linear(a, f"{A}/c_proj", H, H, gemm=False)
        h = g.op("Add", [a, h], scope=L)
        x = layernorm(h, f"{L}/ln_2")
        f = g.linear(x, f"{L}/mlp/c_fc", H, FF, gemm=False)
        G = f"{L}/mlp/act"
        # gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
        c = g.op("Pow", [f, g.const(np.array(3.0, np.float32), G)], scope=G)
        c = g.op("Mul", [g.const(np.array(0.044715, np.float32), G), c], scope=G)
        c = g.op("Add", [f, c], scope=G)
        c = g.op("Mul", [g.const(np.array(0.7978845608, np.float32), G), c], scope=G)
        c = g.op("Add", [g.const(np.array(1.0, np.float32), G), g.op("Tanh", [c], scope=G)], scope=G)
        c = g.op("Mul", [g.op("Mul", [g.const(np.array(0.5, np.float32), G), f], scope=G), c], scope=G)
        f = g.linear(c, f"{L}/mlp/c_proj", FF, H, gemm=False)
        h = g.op("Add", [h, f], scope=L)
    h = layernorm(h, f"{sc}/ln_f")
    wt = g.op("Transpose", [wte], scope="/lm_head", perm=[1, 0])   # tied weights
    g.op("MatMul", [h, wt], scope="/lm_head")
    g.nodes[-1].output[0] = "logits"
    m = g.model("gpt_causal", [fvi(ids, ["batch", "sequence"], TensorProto.INT64)],
                [fvi("logits", ["batch", "sequence", V])], 15,
                "2-layer GPT-2 style causal decoder (hidden 64, 4 heads), transformers export style, opset 15")
    rng = np.random.default_rng(7)
    cases = {"": {ids: rng.integers(0, V, (1, 16)).astype(np.int64)},
             "batch2": {ids: rng.integers(0, V, (2, 5)).astype(np.int64)}}
    return m, cases


# ---------------------------------------------------------------------------------------------------------
def yolo_tiny():
    """YOLO-style detector: LeakyRelu and SiLU (Sigmoid*Mul) convs, reflect Pad, SPP MaxPool, Resize to
    run-time sizes, two detection heads decoded with Reshape/Transpose/Split/grid arithmetic."""
    NA, NC = 3, 3
    NO = 5 + NC
    g = Graph(1008)

    def cbl(x, scope, cin, cout, k, s, act, pad=None):
        y = g.conv(x, f"{scope}/conv", cin, cout, k, stride=s, pad=pad, bias=False)
        y = g.bn(y, f"{scope}/bn", cout)
        if act == "leaky":
            return g.op("LeakyRelu", [y], scope=f"{scope}/act", alpha=0.1)
        return g.op("Mul", [y, g.op("Sigmoid", [y], scope=f"{scope}/act")], scope=f"{scope}/act")

    x = cbl("images", "/model.0", 3, 8, 3, 1, "leaky")                      # 64x64
    x = cbl(x, "/model.1", 8, 16, 3, 2, "silu")                            # 32x32
    p3 = cbl(x, "/model.2", 16, 32, 3, 2, "silu")                          # 16x16
    x = g.op("Pad", [p3, g.const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "/model.3/pad")],
             scope="/model.3/pad", mode="reflect")
    p4 = cbl(x, "/model.3", 32, 64, 3, 2, "leaky", pad=0)                  # 8x8
    mp = g.op("MaxPool", [p4], scope="/model.4/m", ceil_mode=0, kernel_shape=[5, 5], pads=[2, 2, 2, 2],
              strides=[1, 1])
    p4 = cbl(g.op("Concat", [p4, mp], scope="/model.4", axis=1), "/model.4/cv", 128, 64, 1, 1, "silu")
    # F.interpolate(p4, size=p3.shape[2:]) -> Resize with sizes from Shape
    s3 = g.op("Shape", [p3], scope="/model.5")
    s4 = g.op("Shape", [p4], scope="/model.5")
    hw = g.op("Slice", [s3, g.const(np.array([2], np.int64), "/model.5"), g.const(np.array([4], np.int64), "/model.5"),
                        g.const(np.array([0], np.int64), "/model.5")], scope="/model.5")
    nc = g.op("Slice", [s4, g.const(np.array([0], np.int64), "/model.5"), g.const(np.array([2], np.int64), "/model.5"),
                        g.const(np.array([0], np.int64), "/model.5")], scope="/model.5")
    sizes = g.op("Concat", [nc, hw], scope="/model.5", axis=0)
    up = g.op("Resize", [p4, "", "", sizes], scope="/model.5", coordinate_transformation_mode="asymmetric",
              mode="nearest", nearest_mode="floor")
    p3 = cbl(g.op("Concat", [up, p3], scope="/model.6", axis=1), "/model.6/cv", 96, 32, 1, 1, "silu")

    outs = []
    anchors = [np.array([[10, 13], [16, 30], [33, 23]], np.float32),
               np.array([[30, 61], [62, 45], [59, 119]], np.float32)]
    for i, (feat, cin, ny, stride) in enumerate([(p3, 32, 16, 4), (p4, 64, 8, 8)]):
        D = f"/model.7/m.{i}"
        y = g.conv(feat, D, cin, NA * NO, 1, pad=0)
        sh = g.op("Shape", [y], scope=f"{D}/view")
        bs = g.op("Unsqueeze", [g.op("Gather", [sh, g.const(np.array(0, np.int64), D)], scope=D, axis=0),
                                g.const(np.array([0], np.int64), D)], scope=D)
        tgt = g.op("Concat", [bs, g.const(np.array([NA, NO, ny, ny], np.int64), D)], scope=D, axis=0)
        y = g.op("Transpose", [g.op("Reshape", [y, tgt], scope=D)], scope=D, perm=[0, 1, 3, 4, 2])
        y = g.op("Sigmoid", [y], scope=D)
        xy, wh, conf = g.op("Split", [y, g.const(np.array([2, 2, NO - 4], np.int64), D)], scope=D, n_out=3, axis=4)
        gy, gx = np.meshgrid(np.arange(ny), np.arange(ny), indexing="ij")
        grid = (np.stack([gx, gy], -1).reshape(1, 1, ny, ny, 2) - 0.5).astype(np.float32)
        xy = g.op("Mul", [xy, g.const(np.array(2.0, np.float32), D)], scope=D)
        xy = g.op("Mul", [g.op("Add", [xy, g.init(f"model.7.grid.{i}", grid)], scope=D),
                          g.const(np.array(float(stride), np.float32), D)], scope=D)
        wh = g.op("Pow", [g.op("Mul", [wh, g.const(np.array(2.0, np.float32), D)], scope=D),
                          g.const(np.array(2.0, np.float32), D)], scope=D)
        wh = g.op("Mul", [wh, g.init(f"model.7.anchor_grid.{i}", anchors[i].reshape(1, NA, 1, 1, 2))], scope=D)
        y = g.op("Concat", [xy, wh, conf], scope=D, axis=4)
        tgt = g.op("Concat", [bs, g.const(np.array([-1, NO], np.int64), D)], scope=D, axis=0)
        outs.append(g.op("Reshape", [y, tgt], scope=D))
    g.op("Concat", outs, scope="/model.7", axis=1)
    g.nodes[-1].output[0] = "detections"
    n = NA * (16 * 16 + 8 * 8)
    m = g.model("yolo_tiny", [fvi("images", ["batch", 3, 64, 64])], [fvi("detections", ["batch", n, NO])], 13,
                "YOLO-style two-scale detector with decoded boxes, torch export style, opset 13")
    rng = np.random.default_rng(8)
    cases = {"": {"images": rng.uniform(0, 1, (1, 3, 64, 64)).astype(np.float32)},
             "batch2": {"images": rng.uniform(0, 1, (2, 3, 64, 64)).astype(np.float32)}}
    return m, cases


def superres_init_inputs():
    """superres as older exporters wrote it (keep_initializers_as_inputs=True): every weight is also a
    graph input with the initializer as its default value; only 'input' is fed."""
    m, cases = superres()
    inits = {t.name: t for t in m.graph.initializer}
    for name, t in inits.items():
        m.graph.input.append(helper.make_tensor_value_info(name, t.data_type, list(t.dims)))
    m.doc_string = "superres with initializers listed as graph inputs (keep_initializers_as_inputs), opset 15"
    return m, cases


def example_tiny_cnn():
    """The committed example model examples/tiny_cnn.onnx, so the example is tested like the others."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "tiny_cnn.onnx")
    m = onnx.load(path)
    rng = np.random.default_rng(9)
    return m, {"": {"image": rng.uniform(0, 1, (1, 3, 32, 32)).astype(np.float32)}}


MODELS = {f.__name__: f for f in [resnet_class, mobilenet_class, bert_class, lstm_tagger, unet_small, superres,
                                   gpt_causal, yolo_tiny, superres_init_inputs,
                                   example_tiny_cnn]}
# detectors with their post-processing (tests/models/detectors.py)
for _name in detectors.DETECTORS:
    MODELS[_name] = (lambda n: lambda: detectors.build(Graph, fvi, n))(_name)


def reference(model_path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # no warning per initializer listed as an input (superres_init_inputs)
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def build(name, outdir):
    model, cases = MODELS[name]()
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    size = os.path.getsize(path)
    if size > MAX_MODEL_BYTES:
        raise SystemExit(f"{name}: model is {size} bytes, over the {MAX_MODEL_BYTES} limit")
    info = {"name": name, "doc": model.doc_string, "opset": model.opset_import[0].version,
            "nodes": len(model.graph.node), "bytes": size,
            "op_types": sorted({n.op_type for n in model.graph.node}), "cases": {}}
    for case, feeds in cases.items():
        cd = os.path.join(d, case) if case else d
        os.makedirs(os.path.join(cd, "inputs"), exist_ok=True)
        os.makedirs(os.path.join(cd, "expected"), exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(cd, "inputs", f"{k}.npy"), v)
        ref = reference(path, feeds)
        for k, v in ref.items():
            if not np.all(np.isfinite(v)):
                raise SystemExit(f"{name}/{case or 'main'}: reference output {k} is not finite")
            np.save(os.path.join(cd, "expected", f"{k}.npy"), v)
        info["cases"][case or "main"] = {
            "inputs": {k: list(v.shape) for k, v in feeds.items()},
            "outputs": {k: [list(v.shape), float(np.abs(v).max())] for k, v in ref.items()}}
    with open(os.path.join(d, "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--filter", default="", help="build only models whose name contains this")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    for name in MODELS:
        if a.filter and a.filter not in name:
            continue
        info = build(name, a.outdir)
        outs = "; ".join(f"{c}: " + ", ".join(f"{k}{tuple(s)} max|y|={mx:.3g}" for k, (s, mx) in v["outputs"].items())
                         for c, v in info["cases"].items())
        print(f"{name}: opset {info['opset']}, {info['nodes']} nodes, {info['bytes']} bytes; {outs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
