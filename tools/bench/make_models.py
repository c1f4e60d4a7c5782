#!/usr/bin/env python3
"""Build the CPU benchmark models with onnx.helper, layer by layer, with random weights (no torch here).

The structure follows torchvision's ResNet-50, MobileNetV2, SqueezeNet 1.1, EfficientNet-B0, ShuffleNetV2 x1.0
and MnasNet 1.0 as torch.onnx.export (eval mode, do_constant_folding=False, opset 17) writes them: every
BatchNormalization stays a node, ReLU6 is Clip(0, 6) with constant min/max inputs, SiLU is Sigmoid + Mul,
adaptive average pooling is GlobalAveragePool (ReduceMean over [2, 3] where torchvision calls x.mean),
Linear is Gemm(transB=1), Dropout disappears in eval. ShuffleNet's channel shuffle uses constant Reshape
shapes (-1 for the batch) instead of the Shape/Gather chain torch would emit for a dynamic batch.

The batch is a free dim named "batch". BatchNorm statistics are calibrated on random input (running mean and
variance set to the per-channel statistics the layer actually sees, as a trained network's would be), so the
activations stay O(1) through 50 layers and outputs can be compared at 1e-4.

    python3 tools/bench/make_models.py --out build/bench-models [--only resnet50,mobilenetv2]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class Builder:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.counter = {}
        self.bns = []  # (node name, input value, channels) for calibration

    def uniq(self, base):
        k = self.counter.get(base, 0)
        self.counter[base] = k + 1
        return f"{base}" if k == 0 else f"{base}_{k}"

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, inputs, name, n_out=1, **attrs):
        outs = [name if n_out == 1 else f"{name}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k, stride=1, pad=None, group=1, bias=False, name="conv"):
        name = self.uniq(name)
        if pad is None:
            pad = k // 2
        fan_in = (cin // group) * k * k
        w = (self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        ins = [x, self.const(name + ".weight", w)]
        if bias:
            ins.append(self.const(name + ".bias", (self.rng.standard_normal(cout) * 0.1).astype(np.float32)))
        return self.node("Conv", ins, name, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad, pad, pad, pad], group=group, dilations=[1, 1])

    def bn(self, x, c, name="bn", eps=1e-5):
        name = self.uniq(name)
        gamma = self.rng.uniform(0.5, 1.5, c).astype(np.float32)
        beta = (self.rng.standard_normal(c) * 0.1).astype(np.float32)
        ins = [x, self.const(name + ".weight", gamma), self.const(name + ".bias", beta),
               self.const(name + ".running_mean", np.zeros(c, np.float32)),
               self.const(name + ".running_var", np.ones(c, np.float32))]
        self.bns.append((name, x, c))
        return self.node("BatchNormalization", ins, name, epsilon=eps, momentum=0.9)

    def relu(self, x, name="relu"):
        return self.node("Relu", [x], self.uniq(name))

    def relu6(self, x, name="relu6"):
        if "relu6.min" not in self.counter:
            self.counter["relu6.min"] = 1
            self.const("relu6.min", np.array(0.0, np.float32))
            self.const("relu6.max", np.array(6.0, np.float32))
        return self.node("Clip", [x, "relu6.min", "relu6.max"], self.uniq(name))

    def silu(self, x, name="silu"):
        name = self.uniq(name)
        s = self.node("Sigmoid", [x], name + ".sigmoid")
        return self.node("Mul", [x, s], name)

    def add(self, a, b, name="add"):
        return self.node("Add", [a, b], self.uniq(name))

    def gap(self, x, name="avgpool"):
        return self.node("GlobalAveragePool", [x], self.uniq(name))

    def flatten(self, x, name="flatten"):
        return self.node("Flatten", [x], self.uniq(name), axis=1)

    def linear(self, x, cin, cout, name="fc"):
        name = self.uniq(name)
        w = (self.rng.standard_normal((cout, cin)) * np.sqrt(1.0 / cin)).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.1).astype(np.float32)
        return self.node("Gemm", [x, self.const(name + ".weight", w), self.const(name + ".bias", b)], name,
                         alpha=1.0, beta=1.0, transB=1)

    def cbr(self, x, cin, cout, k, stride=1, group=1, act="relu", name="conv", eps=1e-5, pad=None):
        y = self.conv(x, cin, cout, k, stride, pad=pad, group=group, name=name)
        y = self.bn(y, cout, name=name + ".bn", eps=eps)
        if act == "relu":
            y = self.relu(y, name=name + ".relu")
        elif act == "relu6":
            y = self.relu6(y, name=name + ".relu6")
        elif act == "silu":
            y = self.silu(y, name=name + ".silu")
        return y

    def model(self, x_name, y, res=224):
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(x_name, TensorProto.FLOAT, ["batch", 3, res, res])],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["batch", 1000])],
            self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="netrun tools/bench/make_models.py")
        m.ir_version = 8
        return m, self.bns


def resnet50(seed):
    b = Builder("resnet50", seed)
    x = b.cbr("input", 3, 64, 7, 2, name="conv1")
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for li, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]):
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            p = f"layer{li + 1}.{bi}"
            y = b.cbr(x, cin, width, 1, 1, name=p + ".conv1")
            y = b.cbr(y, width, width, 3, s, name=p + ".conv2")
            y = b.cbr(y, width, width * 4, 1, 1, act=None, name=p + ".conv3")
            if bi == 0:
                sc = b.cbr(x, cin, width * 4, 1, s, act=None, name=p + ".downsample")
            else:
                sc = x
            x = b.relu(b.add(y, sc, name=p + ".add"), name=p + ".relu")
            cin = width * 4
    x = b.flatten(b.gap(x))
    return b.model("input", b.linear(x, 2048, 1000))


def mobilenetv2(seed):
    b = Builder("mobilenetv2", seed)
    x = b.cbr("input", 3, 32, 3, 2, act="relu6", name="features.0")
    cin, idx = 32, 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            p = f"features.{idx}"
            hid = cin * t
            y = x
            if t != 1:
                y = b.cbr(y, cin, hid, 1, act="relu6", name=p + ".expand")
            y = b.cbr(y, hid, hid, 3, stride, group=hid, act="relu6", name=p + ".dw")
            y = b.cbr(y, hid, c, 1, act=None, name=p + ".project")
            x = b.add(x, y, name=p + ".add") if stride == 1 and cin == c else y
            cin, idx = c, idx + 1
    x = b.cbr(x, cin, 1280, 1, act="relu6", name=f"features.{idx}")
    x = b.flatten(b.gap(x))
    return b.model("input", b.linear(x, 1280, 1000, name="classifier.1"))


def squeezenet11(seed):
    b = Builder("squeezenet1_1", seed)

    def fire(x, cin, sq, e1, e3, p):
        s = b.relu(b.conv(x, cin, sq, 1, bias=True, name=p + ".squeeze"), name=p + ".squeeze_activation")
        a = b.relu(b.conv(s, sq, e1, 1, bias=True, name=p + ".expand1x1"), name=p + ".expand1x1_activation")
        c = b.relu(b.conv(s, sq, e3, 3, bias=True, name=p + ".expand3x3"), name=p + ".expand3x3_activation")
        return b.node("Concat", [a, c], b.uniq(p + ".concat"), axis=1)

    def pool(x):
        return b.node("MaxPool", [x], b.uniq("maxpool"), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1,
                      pads=[0, 0, 0, 0])

    x = b.relu(b.conv("input", 3, 64, 3, 2, pad=0, bias=True, name="features.0"), name="features.1")
    x = pool(x)
    x = fire(x, 64, 16, 64, 64, "features.3")
    x = fire(x, 128, 16, 64, 64, "features.4")
    x = pool(x)
    x = fire(x, 128, 32, 128, 128, "features.6")
    x = fire(x, 256, 32, 128, 128, "features.7")
    x = pool(x)
    x = fire(x, 256, 48, 192, 192, "features.9")
    x = fire(x, 384, 48, 192, 192, "features.10")
    x = fire(x, 384, 64, 256, 256, "features.11")
    x = fire(x, 512, 64, 256, 256, "features.12")
    x = b.relu(b.conv(x, 512, 1000, 1, bias=True, name="classifier.1"), name="classifier.2")
    return b.model("input", b.flatten(b.gap(x)))


def efficientnet_b0(seed):
    b = Builder("efficientnet_b0", seed)
    x = b.cbr("input", 3, 32, 3, 2, act="silu", name="features.0")
    cin, stage = 32, 1
    for e, k, s, c, n in [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            p = f"features.{stage}.{i}"
            hid = cin * e
            y = x
            if e != 1:
                y = b.cbr(y, cin, hid, 1, act="silu", name=p + ".expand")
            y = b.cbr(y, hid, hid, k, stride, group=hid, act="silu", name=p + ".dw")
            sq = max(1, cin // 4)
            se = b.gap(y, name=p + ".se.avgpool")
            se = b.silu(b.conv(se, hid, sq, 1, bias=True, name=p + ".se.fc1"), name=p + ".se.silu")
            se = b.node("Sigmoid", [b.conv(se, sq, hid, 1, bias=True, name=p + ".se.fc2")],
                        b.uniq(p + ".se.sigmoid"))
            y = b.node("Mul", [se, y], b.uniq(p + ".se.mul"))
            y = b.cbr(y, hid, c, 1, act=None, name=p + ".project")
            x = b.add(y, x, name=p + ".add") if stride == 1 and cin == c else y
            cin = c
        stage += 1
    x = b.cbr(x, cin, 1280, 1, act="silu", name="features.8")
    x = b.flatten(b.gap(x))
    return b.model("input", b.linear(x, 1280, 1000, name="classifier.1"))


def shufflenetv2(seed):
    b = Builder("shufflenet_v2_x1_0", seed)

    def shuffle(x, c, hw, p):
        s1 = b.const(p + ".shape1", np.array([-1, 2, c // 2, hw, hw], np.int64))
        s2 = b.const(p + ".shape2", np.array([-1, c, hw, hw], np.int64))
        y = b.node("Reshape", [x, s1], b.uniq(p + ".view"))
        y = b.node("Transpose", [y], b.uniq(p + ".transpose"), perm=[0, 2, 1, 3, 4])
        return b.node("Reshape", [y, s2], b.uniq(p + ".view2"))

    x = b.cbr("input", 3, 24, 3, 2, name="conv1")
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin, hw = 24, 56
    for si, (reps, cout) in enumerate([(4, 116), (8, 232), (4, 464)]):
        for i in range(reps):
            p = f"stage{si + 2}.{i}"
            bf = cout // 2
            if i == 0:
                hw //= 2
                b1 = b.cbr(x, cin, cin, 3, 2, group=cin, act=None, name=p + ".branch1.0")
                b1 = b.cbr(b1, cin, bf, 1, name=p + ".branch1.2")
                b2 = b.cbr(x, cin, bf, 1, name=p + ".branch2.0")
                b2 = b.cbr(b2, bf, bf, 3, 2, group=bf, act=None, name=p + ".branch2.3")
                b2 = b.cbr(b2, bf, bf, 1, name=p + ".branch2.5")
                y = b.node("Concat", [b1, b2], b.uniq(p + ".concat"), axis=1)
            else:
                split = b.const(b.uniq(p + ".split_sizes"), np.array([bf, bf], np.int64))
                x1, x2 = b.node("Split", [x, split], b.uniq(p + ".chunk"), n_out=2, axis=1)
                b2 = b.cbr(x2, bf, bf, 1, name=p + ".branch2.0")
                b2 = b.cbr(b2, bf, bf, 3, 1, group=bf, act=None, name=p + ".branch2.3")
                b2 = b.cbr(b2, bf, bf, 1, name=p + ".branch2.5")
                y = b.node("Concat", [x1, b2], b.uniq(p + ".concat"), axis=1)
            x = shuffle(y, cout, hw, p)
            cin = cout
    x = b.cbr(x, cin, 1024, 1, name="conv5")
    x = b.node("ReduceMean", [x], "mean", axes=[2, 3], keepdims=0)
    return b.model("input", b.linear(x, 1024, 1000))


def mnasnet10(seed):
    b = Builder("mnasnet1_0", seed)
    x = b.cbr("input", 3, 32, 3, 2, name="layers.0")
    x = b.cbr(x, 32, 32, 3, 1, group=32, name="layers.3")
    x = b.cbr(x, 32, 16, 1, act=None, name="layers.6")
    cin = 16
    for si, (cout, k, s, e, n) in enumerate([(24, 3, 2, 3, 3), (40, 5, 2, 3, 3), (80, 5, 2, 6, 3),
                                              (96, 3, 1, 6, 2), (192, 5, 2, 6, 4), (320, 3, 1, 6, 1)]):
        for i in range(n):
            stride = s if i == 0 else 1
            p = f"layers.{8 + si}.{i}"
            hid = cin * e
            y = b.cbr(x, cin, hid, 1, name=p + ".expand")
            y = b.cbr(y, hid, hid, k, stride, group=hid, name=p + ".dw")
            y = b.cbr(y, hid, cout, 1, act=None, name=p + ".project")
            x = b.add(y, x, name=p + ".add") if stride == 1 and cin == cout else y
            cin = cout
    x = b.cbr(x, cin, 1280, 1, name="layers.14")
    x = b.node("ReduceMean", [x], "mean", axes=[2, 3], keepdims=0)
    return b.model("input", b.linear(x, 1280, 1000, name="classifier.1"))


MODELS = {
    "resnet50": resnet50,
    "mobilenetv2": mobilenetv2,
    "squeezenet1_1": squeezenet11,
    "efficientnet_b0": efficientnet_b0,
    "shufflenetv2": shufflenetv2,
    "mnasnet": mnasnet10,
}


def calibrate(m, bns, seed, batch=2):
    """Set each BatchNormalization's running mean/var to the statistics of its input on random data.

    One onnxruntime session exposes every BN input as an output and takes the running stats as inputs; the
    statistics of layer i are exact once the layers before it are, so passes repeat until nothing moves (about
    one pass per BN layer in depth)."""
    import onnxruntime as ort
    rng = np.random.default_rng(seed + 1000)
    x = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
    stat_names = {n + s for n, _, _ in bns for s in (".running_mean", ".running_var")}
    probe = onnx.ModelProto()
    probe.CopyFrom(m)
    keep = [t for t in probe.graph.initializer if t.name not in stat_names]
    del probe.graph.initializer[:]
    probe.graph.initializer.extend(keep)
    feeds = {"input": x}
    for name, inp, c in bns:
        for suffix, init in ((".running_mean", 0.0), (".running_var", 1.0)):
            probe.graph.input.append(helper.make_tensor_value_info(name + suffix, TensorProto.FLOAT, [c]))
            feeds[name + suffix] = np.full(c, init, np.float32)
        probe.graph.output.append(helper.make_tensor_value_info(inp, TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"])
    for it in range(3 * len(bns) + 10):
        outs = sess.run([inp for _, inp, _ in bns], feeds)
        worst = 0.0
        with np.errstate(all="ignore"):
            for (name, _, c), v in zip(bns, outs):
                v64 = v.astype(np.float64)
                mean = v64.mean(axis=(0, 2, 3))
                var = v64.var(axis=(0, 2, 3)) + 1e-3
                if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var < 1e30)):
                    worst = np.inf  # an upstream layer is not calibrated yet
                    continue
                old = feeds[name + ".running_var"]
                worst = max(worst, float(np.max(np.abs(var - old) / var)))
                feeds[name + ".running_mean"] = mean.astype(np.float32)
                feeds[name + ".running_var"] = var.astype(np.float32)
        if worst < 1e-3:
            break
    else:
        raise RuntimeError(f"{m.graph.name}: BatchNorm calibration did not converge")
    for t in m.graph.initializer:
        if t.name in stat_names:
            t.CopyFrom(numpy_helper.from_array(feeds[t.name], t.name))
    return it + 1


def _ort_run(m):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(7).standard_normal((1, 3, 224, 224)).astype(np.float32)
    return sess.run(None, {"input": x})[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/bench-models")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ",".join(MODELS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"unknown model {n}; known: {', '.join(MODELS)}")
        m, bns = MODELS[n](args.seed)
        passes = calibrate(m, bns, args.seed) if bns else 0
        onnx.checker.check_model(m)
        y = _ort_run(m)
        if not np.all(np.isfinite(y)):
            sys.exit(f"{n}: outputs are not finite")
        path = os.path.join(args.out, n + ".onnx")
        onnx.save(m, path)
        print(f"{path}: {len(m.graph.node)} nodes, "
              f"{sum(int(np.prod(t.dims)) for t in m.graph.initializer) / 1e6:.1f} M params, "
              f"BN calibration passes: {passes}, output std {y.std():.3g} max |y| {np.abs(y).max():.3g}")



if __name__ == "__main__":
    main()
