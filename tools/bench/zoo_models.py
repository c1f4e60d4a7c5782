#!/usr/bin/env python3
"""The model set of cpu_zoo_bench.py, built without downloads (onnx.helper, random seeded weights):

- the ONNX model zoo's "light" models that ship inside the onnx wheel (onnx/backend/test/data/light: AlexNet,
  DenseNet-121, Inception v1 / v2, ResNet-50 (Caffe2), ShuffleNet v1, SqueezeNet 1.0, VGG-19, ZFNet-512). Their
  weights are ConstantOfShape fills of one value; here they become random initializers of the same shapes (He
  scaling, so activations stay finite), the input batch becomes a free dim and Reshapes that hard-code batch 1
  copy the batch instead;
- tools/bench/make_models.py's six torchvision-shaped classifiers (BatchNorm calibrated);
- tests/models/build_models.py's U-Net, YOLO-style net, super-resolution net, BERT and GPT-style encoders, LSTM
  tagger, and the detectors of tests/models/detectors.py (with NonMaxSuppression, TopK, RoiAlign), these at 320x320;
- two builders of this file: a MobileNetV3-small-shaped net (HardSwish, HardSigmoid squeeze-excite) and a ViT-Tiny-
  shaped vision transformer (patch conv, LayerNormalization, attention MatMuls and Softmax, Erf GELU).

    python3 tools/bench/zoo_models.py --out build/zoo-models     # writes NAME.onnx + NAME.json (family, feeds)
"""
import argparse
import glob
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
import make_models  # noqa: E402

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
DETECTOR_SIZE = 320
BIGGER = {"unet_small": (256, 256), "superres": (224, 224)}


def light(path, seed=0):
    """A light zoo model with random weights: ConstantOfShape fills -> initializers; batch dim free."""
    m = onnx.load(path)
    g = m.graph
    rng = np.random.default_rng(seed)
    inits = {t.name: t for t in g.initializer}
    consumers = {}
    for n in g.node:
        for i, x in enumerate(n.input):
            consumers.setdefault(x, []).append((n, i))
    keep, new = [], []
    for n in g.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in inits:
            shape = tuple(int(v) for v in numpy_helper.to_array(inits[n.input[0]]))
            users = consumers.get(n.output[0], [])
            role = (users[0][0].op_type, users[0][1]) if users else ("", 0)
            if role in (("Conv", 1), ("Gemm", 1)):
                fan_in = int(np.prod(shape[1:]))  # Conv [M, C/g, kh, kw]; Gemm [out, in] (transB=1)
                arr = rng.standard_normal(shape) * np.sqrt(2.0 / max(1, fan_in))
            elif role[0] == "BatchNormalization":
                arr = {1: rng.uniform(0.5, 1.5, shape), 2: rng.standard_normal(shape) * 0.1,
                       3: np.zeros(shape), 4: np.ones(shape)}[role[1]]
            elif role[0] in ("Mul",):  # Caffe2's scale of the BN-less nets
                arr = rng.uniform(0.5, 1.5, shape)
            else:  # biases, Add / Sum operands
                arr = rng.standard_normal(shape) * 0.05
            new.append(numpy_helper.from_array(arr.astype(np.float32), n.output[0]))
        else:
            keep.append(n)
    used = {x for n in keep for x in n.input}
    g.ClearField("node")
    g.node.extend(keep)
    init_list = [t for t in g.initializer if t.name in used] + new
    g.ClearField("initializer")
    g.initializer.extend(init_list)
    init_names = {t.name for t in init_list}
    ins = [i for i in g.input if i.name not in init_names and i.name in used]
    g.ClearField("input")
    g.input.extend(ins)
    m.ir_version = max(m.ir_version, 7)  # initializers need not be listed as inputs
    g.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    for o in g.output:
        o.type.tensor_type.shape.dim[0].dim_param = "batch"
    live = {t.name: t for t in g.initializer}
    for n in keep:  # Reshape to [1, -1] or [1, C]: copy the batch (0) instead
        if n.op_type == "Reshape" and n.input[1] in live:
            t = live[n.input[1]]
            s = numpy_helper.to_array(t).copy()
            if s.size and s[0] == 1:
                s[0] = 0
                t.CopyFrom(numpy_helper.from_array(s, t.name))
    return m


def hardswish_mbv3_small(seed=0):
    """torchvision's mobilenet_v3_small as torch.onnx.export (opset 17) writes it: HardSwish, HardSigmoid
    (alpha 1/6) squeeze-excite with Relu, BatchNormalization nodes, Gemm classifier."""
    b = make_models.Builder("mobilenet_v3_small", seed)

    def act(x, kind, name):
        return b.relu(x, name=name + ".relu") if kind == "RE" else b.node("HardSwish", [x], b.uniq(name + ".hswish"))

    def cba(x, cin, cout, k, stride=1, group=1, kind="HS", name="conv"):
        y = b.conv(x, cin, cout, k, stride, group=group, name=name)
        y = b.bn(y, cout, name=name + ".bn", eps=1e-3)
        return act(y, kind, name) if kind else y

    def se(x, c, name):
        sq = max(8, (c // 4 + 4) // 8 * 8)
        s = b.gap(x, name=name + ".avgpool")
        s = b.relu(b.conv(s, c, sq, 1, bias=True, name=name + ".fc1"), name=name + ".relu")
        s = b.conv(s, sq, c, 1, bias=True, name=name + ".fc2")
        s = b.node("HardSigmoid", [s], b.uniq(name + ".hsig"), alpha=1.0 / 6, beta=0.5)
        return b.node("Mul", [s, x], b.uniq(name + ".scale"))

    x = cba("input", 3, 16, 3, 2, name="features.0")
    cin = 16
    cfg = [(3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
           (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
           (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
           (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1)]
    for i, (k, exp, cout, use_se, kind, s) in enumerate(cfg):
        p = f"features.{i + 1}.block"
        y = x if exp == cin else cba(x, cin, exp, 1, kind=kind, name=p + ".expand")
        y = cba(y, exp, exp, k, s, group=exp, kind=kind, name=p + ".dw")
        if use_se:
            y = se(y, exp, p + ".se")
        y = cba(y, exp, cout, 1, kind=None, name=p + ".project")
        x = b.add(y, x, name=p + ".add") if s == 1 and cin == cout else y
        cin = cout
    x = cba(x, cin, 576, 1, name="features.12")
    x = b.flatten(b.gap(x))
    x = b.node("HardSwish", [b.linear(x, 576, 1024, name="classifier.0")], "classifier.1")
    return b.model("input", b.linear(x, 1024, 1000, name="classifier.3"))


class Tx:
    """A transformer graph as torch / transformers export it: MatMul + Add linears, LayerNormalization, Q / K / V
    MatMuls split into heads by Reshape + Transpose, scaled Softmax attention, Erf GELU."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.cnt = [], [], 0

    def c(self, arr):
        self.cnt += 1
        name = f"c{self.cnt}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def n(self, op, ins, **kw):
        self.cnt += 1
        out = f"{op.lower()}_{self.cnt}"
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def lin(self, x, cin, cout):
        w = (self.rng.standard_normal((cin, cout)) / np.sqrt(cin)).astype(np.float32)
        return self.n("Add", [self.n("MatMul", [x, self.c(w)]), self.c((self.rng.standard_normal(cout) * 0.02).astype(np.float32))])

    def ln(self, x, dim):
        return self.n("LayerNormalization", [x, self.c(np.ones(dim, np.float32)), self.c(np.zeros(dim, np.float32))],
                      axis=-1, epsilon=1e-6)

    def block(self, x, dim, heads, mlp, pre_norm, mask=None):
        """One encoder layer; pre_norm: ViT's LayerNorm before attention and MLP, else BERT's after the sums;
        mask: an additive [B, 1, 1, T] attention mask."""
        n, c, hd = self.n, self.c, dim // heads
        split = c(np.array([0, 0, heads, hd], np.int64))
        merge = c(np.array([0, 0, dim], np.int64))
        h = self.ln(x, dim) if pre_norm else x
        q, k, v = (n("Transpose", [n("Reshape", [self.lin(h, dim, dim), split])], perm=[0, 2, 1, 3]) for _ in range(3))
        s = n("Mul", [n("MatMul", [q, n("Transpose", [k], perm=[0, 1, 3, 2])]), c(np.array(1 / np.sqrt(hd), np.float32))])
        if mask is not None:
            s = n("Add", [s, mask])
        o = n("Reshape", [n("Transpose", [n("MatMul", [n("Softmax", [s], axis=-1), v])], perm=[0, 2, 1, 3]), merge])
        x = n("Add", [x, self.lin(o, dim, dim)])
        if not pre_norm:
            x = self.ln(x, dim)
        h = self.lin(self.ln(x, dim) if pre_norm else x, dim, mlp)
        gelu = n("Mul", [n("Mul", [h, n("Add", [n("Erf", [n("Div", [h, c(np.array(np.sqrt(2), np.float32))])]),
                                                 c(np.array(1.0, np.float32))])]), c(np.array(0.5, np.float32))])
        x = n("Add", [x, self.lin(gelu, mlp, dim)])
        return x if pre_norm else self.ln(x, dim)

    def model(self, name, inputs, y, y_shape):
        g = helper.make_graph(self.nodes, name, inputs, [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def vit_tiny(seed=0, depth=12, dim=192, heads=3, mlp=768, res=224, patch=16):
    """ViT-Tiny/16-shaped: patch Conv, Reshape + Transpose to tokens, class token Expanded to the batch, position
    embedding, pre-norm blocks, head on the class token."""
    t = Tx(seed)
    n, c, rng = t.n, t.c, t.rng
    tokens = (res // patch) ** 2 + 1
    w = (rng.standard_normal((dim, 3, patch, patch)) / np.sqrt(3 * patch * patch)).astype(np.float32)
    x = n("Conv", ["input", c(w), c(np.zeros(dim, np.float32))], kernel_shape=[patch, patch], strides=[patch, patch])
    x = n("Transpose", [n("Reshape", [x, c(np.array([0, dim, -1], np.int64))])], perm=[0, 2, 1])
    bshape = n("Concat", [n("Slice", [n("Shape", ["input"]), c(np.array([0], np.int64)), c(np.array([1], np.int64))]),
                          c(np.array([1, dim], np.int64))], axis=0)
    cls = n("Expand", [c((rng.standard_normal((1, 1, dim)) * 0.02).astype(np.float32)), bshape])
    x = n("Add", [n("Concat", [cls, x], axis=1), c((rng.standard_normal((1, tokens, dim)) * 0.02).astype(np.float32))])
    for _ in range(depth):
        x = t.block(x, dim, heads, mlp, pre_norm=True)
    x = n("Gather", [t.ln(x, dim), c(np.array(0, np.int64))], axis=1)
    return t.model("vit_tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, res, res])],
                   t.lin(x, dim, 1000), ["batch", 1000])


def bert_base(seed=0, depth=12, dim=768, heads=12, mlp=3072, vocab=30522, max_pos=512):
    """BERT-base-shaped classifier as transformers exports it: word + position + token-type embeddings (Gather),
    LayerNorm, an additive mask from attention_mask ((1 - mask) * -10000), post-norm layers, Tanh pooler on the
    first token, 2-class head. The word embedding is cut to 4096 rows (the model file stays small; the Gather
    costs the same)."""
    t = Tx(seed)
    n, c, rng = t.n, t.c, t.rng
    vocab = min(vocab, 4096)
    emb = lambda rows: c((rng.standard_normal((rows, dim)) * 0.02).astype(np.float32))  # noqa: E731
    seq = n("Gather", [n("Shape", ["input_ids"]), c(np.array(1, np.int64))], axis=0)
    pos = n("Unsqueeze", [n("Range", [c(np.array(0, np.int64)), seq, c(np.array(1, np.int64))]), c(np.array([0], np.int64))])
    x = n("Add", [n("Add", [n("Gather", [emb(vocab), "input_ids"]), n("Gather", [emb(max_pos), pos])]),
                  n("Gather", [emb(2), n("Mul", ["input_ids", c(np.array(0, np.int64))])])])
    x = t.ln(x, dim)
    m = n("Cast", [n("Unsqueeze", ["attention_mask", c(np.array([1, 2], np.int64))])], to=TensorProto.FLOAT)
    mask = n("Mul", [n("Sub", [c(np.array(1.0, np.float32)), m]), c(np.array(-10000.0, np.float32))])
    for _ in range(depth):
        x = t.block(x, dim, heads, mlp, pre_norm=False, mask=mask)
    pooled = n("Tanh", [t.lin(n("Gather", [x, c(np.array(0, np.int64))], axis=1), dim, dim)])
    return t.model("bert_base", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
                                 helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
                   t.lin(pooled, dim, 2), ["batch", 2])


def bert_feeds(seq=128, vocab=4096, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, (1, seq)).astype(np.int64)
    mask = np.ones((1, seq), np.int64)
    mask[0, seq * 3 // 4:] = 0  # padded tail
    return {"input_ids": ids, "attention_mask": mask}


def resize_image_input(m, h, w):
    """A fully convolutional model at another input size: input H, W and the output's spatial dims made free."""
    dims = m.graph.input[0].type.tensor_type.shape.dim
    dims[2].dim_value, dims[3].dim_value = h, w
    for o in m.graph.output:
        for d in o.type.tensor_type.shape.dim[2:]:
            d.dim_param = "s" + o.name
    del m.graph.value_info[:]
    return m


def image_feeds(m, batch, seed=0):
    i = m.graph.input[0]
    shape = [d.dim_value or batch for d in i.type.tensor_type.shape.dim]
    shape[0] = batch
    return {i.name: np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


def batch_free(m):
    """Every graph input's first dim is symbolic (so the model takes any batch)."""
    return all(i.type.tensor_type.shape.dim and not i.type.tensor_type.shape.dim[0].dim_value for i in m.graph.input)


def build_all(out, only=()):
    """Writes NAME.onnx and NAME.npz (feeds at batch 1; batch-free models tile them) + zoo.json."""
    import build_models
    import detectors
    os.makedirs(out, exist_ok=True)
    entries = {}

    def put(name, family, m, feeds, note=""):
        if only and name not in only:
            return
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(out, name + ".onnx"))
        np.savez(os.path.join(out, name + ".npz"), **feeds)
        entries[name] = {"family": family, "batch_free": batch_free(m), "note": note}
        print(f"{name}: {len(m.graph.node)} nodes, inputs {[(k, v.shape, str(v.dtype)) for k, v in feeds.items()]}",
              flush=True)

    fam = {"bvlc_alexnet": "AlexNet", "densenet121": "DenseNet", "inception_v1": "Inception (GoogLeNet)",
           "inception_v2": "Inception v2 (BN)", "resnet50": "ResNet (Caffe2)", "shufflenet": "ShuffleNet v1",
           "squeezenet": "SqueezeNet 1.0", "vgg19": "VGG", "zfnet512": "ZFNet"}
    for p in sorted(glob.glob(os.path.join(LIGHT_DIR, "light_*.onnx"))):
        stem = os.path.basename(p)[len("light_"):-len(".onnx")]
        if only and "zoo_" + stem not in only:
            continue
        m = light(p)
        put("zoo_" + stem, fam.get(stem, stem), m, image_feeds(m, 1))
    mm_fam = {"resnet50": "ResNet", "mobilenetv2": "MobileNetV2", "squeezenet1_1": "SqueezeNet 1.1",
              "efficientnet_b0": "EfficientNet", "shufflenetv2": "ShuffleNetV2", "mnasnet": "MnasNet"}
    for name, fn in make_models.MODELS.items():
        if only and name not in only:
            continue
        m, bns = fn(0)
        if bns:
            make_models.calibrate(m, bns, 0)
        put(name, mm_fam[name], m, image_feeds(m, 1))
    bm_fam = {"unet_small": "U-Net (segmentation)", "yolo_tiny": "YOLO-style", "superres": "super-resolution",
              "bert_class": "BERT", "gpt_causal": "GPT decoder", "lstm_tagger": "LSTM"}
    for name, family in bm_fam.items():
        if only and name not in only:
            continue
        m, cases = build_models.MODELS[name]()
        feeds, note = cases[""], ""
        if name in BIGGER:  # fully convolutional test models at a real image size
            h, w = BIGGER[name]
            m = resize_image_input(m, h, w)
            k = m.graph.input[0].name
            feeds = {k: np.random.default_rng(0).uniform(0, 1, feeds[k].shape[:2] + (h, w)).astype(np.float32)}
            note = f"{h}x{w}"
        put(name, family, m, feeds, note)
    det_fam = {"det_ssd_if": "SSD + NMS", "det_yolo_nms": "YOLO + NMS", "det_face": "face detector + NMS",
               "det_two_stage": "Faster R-CNN-like (RoiAlign)"}
    for name, family in det_fam.items():
        if only and name not in only:
            continue
        m, cases = detectors.build(build_models.Graph, build_models.fvi, name, size=DETECTOR_SIZE, batch_inputs=1)
        put(name, family, m, cases[""], note=f"{DETECTOR_SIZE}x{DETECTOR_SIZE}")
    if not only or "bert_base" in only:
        put("bert_base", "BERT-base (seq 128)", bert_base(0), bert_feeds(), "seq 128")
    for name, family, fn in (("mobilenetv3_small", "MobileNetV3", hardswish_mbv3_small), ("vit_tiny", "ViT", vit_tiny)):
        if only and name not in only:
            continue
        r = fn(0)
        m, bns = r if isinstance(r, tuple) else (r, [])
        if bns:
            make_models.calibrate(m, bns, 0)
        put(name, family, m, image_feeds(m, 1))
    path = os.path.join(out, "zoo.json")
    old = json.load(open(path)) if os.path.exists(path) else {}
    old.update(entries)
    with open(path, "w") as f:
        json.dump(old, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/zoo-models")
    ap.add_argument("--only", default="", help="comma-separated model names")
    a = ap.parse_args()
    build_all(a.out, tuple(filter(None, a.only.split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
