"""Detector-shaped test models, written with onnx.helper in the shape torch.onnx.export gives torchvision and YOLO
detectors: a convolutional backbone and heads, then the post-processing whose sizes depend on the data (score
thresholds through NonZero, TopK of a run-time k, NonMaxSuppression, Gather of what it kept, RoiAlign of the kept
proposals, an If that skips NMS when nothing is left). build_models.py registers them; every function takes the
input size so that tools/bench/detector_bench.py can build larger copies of the same networks.

Random weights, seeded. Scores are made peaky enough that thresholds and NMS keep a few dozen boxes, so the
post-processing does real work and the kept counts differ from one input to the next."""
import numpy as np
from onnx import TensorProto, helper

F, I = TensorProto.FLOAT, TensorProto.INT64


def _backbone(g, x, chans, scope="/backbone", dw=False):
    """Conv-BN-ReLU stages of stride 2; dw: depthwise-separable after the first. Returns the stage outputs."""
    feats, cin = [], 3
    for i, c in enumerate(chans):
        sc = f"{scope}/stage{i}"
        if dw and i > 0:
            y = g.conv(x, f"{sc}/dw", cin, cin, 3, stride=2, group=cin, bias=False)
            y = g.op("Relu", [g.bn(y, f"{sc}/dw_bn", cin)], scope=f"{sc}/dw_relu")
            y = g.conv(y, f"{sc}/pw", cin, c, 1, pad=0, bias=False)
        else:
            y = g.conv(x, f"{sc}/conv", cin, c, 3, stride=2, bias=False)
        x = g.op("Relu", [g.bn(y, f"{sc}/bn", c)], scope=f"{sc}/relu")
        feats.append(x)
        cin = c
    return feats


def _anchors(levels, size, per_cell):
    """Anchor boxes (x1, y1, x2, y2) of every cell of every level, in image pixels."""
    out = []
    for (h, w), stride in levels:
        cy, cx = np.meshgrid((np.arange(h) + 0.5) * stride, (np.arange(w) + 0.5) * stride, indexing="ij")
        for a in range(per_cell):
            s = stride * (2.0 + 1.5 * a)
            out.append(np.stack([cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2], -1).reshape(-1, 4))
    return np.concatenate(out, 0).astype(np.float32)


def _decode(g, deltas, anchors_name, scope, size):
    """torchvision BoxCoder.decode: anchors + (dx, dy, dw, dh) -> (x1, y1, x2, y2), clamped to the image."""
    a = anchors_name
    axy = g.op("Slice", [a, g.const(np.array([0], np.int64), scope), g.const(np.array([2], np.int64), scope),
                         g.const(np.array([1], np.int64), scope)], scope=scope)
    bxy = g.op("Slice", [a, g.const(np.array([2], np.int64), scope), g.const(np.array([4], np.int64), scope),
                         g.const(np.array([1], np.int64), scope)], scope=scope)
    wh = g.op("Sub", [bxy, axy], scope=scope)
    ctr = g.op("Add", [axy, g.op("Mul", [wh, g.const(np.array(0.5, np.float32), scope)], scope=scope)], scope=scope)
    dxy, dwh = g.op("Split", [deltas, g.const(np.array([2, 2], np.int64), scope)], scope=scope, n_out=2, axis=-1)
    pctr = g.op("Add", [g.op("Mul", [dxy, wh], scope=scope), ctr], scope=scope)
    dwh = g.op("Clip", [dwh, g.const(np.array(-4.0, np.float32), scope), g.const(np.array(4.135, np.float32), scope)],
               scope=scope)
    pwh = g.op("Mul", [g.op("Exp", [dwh], scope=scope), wh], scope=scope)
    half = g.op("Mul", [pwh, g.const(np.array(0.5, np.float32), scope)], scope=scope)
    boxes = g.op("Concat", [g.op("Sub", [pctr, half], scope=scope), g.op("Add", [pctr, half], scope=scope)],
                 scope=scope, axis=-1)
    return g.op("Clip", [boxes, g.const(np.array(0.0, np.float32), scope), g.const(np.array(float(size), np.float32), scope)],
                scope=scope)


def _head(g, feats, cins, n_out, scope, per_cell):
    """One 3x3 conv per level to per_cell * n_out channels, flattened to [1, cells * per_cell, n_out]."""
    outs = []
    for i, (f, c) in enumerate(zip(feats, cins)):
        y = g.conv(f, f"{scope}/{i}", c, per_cell * n_out, 3)
        y = g.op("Transpose", [g.op("Reshape", [y, g.const(np.array([1, per_cell, n_out, -1], np.int64), scope)],
                                    scope=scope)], scope=scope, perm=[0, 1, 3, 2])
        outs.append(g.op("Reshape", [y, g.const(np.array([1, -1, n_out], np.int64), scope)], scope=scope))
    return outs[0] if len(outs) == 1 else g.op("Concat", outs, scope=scope, axis=1)


def ssd_postprocess(g, x, size, n_classes=6, topk=1000, score_thr=0.2):
    """SSD / torchvision-style: softmax scores, NonZero of scores > threshold, TopK of a run-time k, then an If whose
    then-branch runs batched NMS (the coordinate-offset trick) and whose else-branch returns empty results."""
    feats = _backbone(g, x, [16, 32, 48, 64], dw=True)
    levels = [((size // 8, size // 8), 8), ((size // 16, size // 16), 16)]
    cins = [48, 64]
    per_cell = 2
    cls = _head(g, feats[2:], cins, n_classes + 1, "/head/cls", per_cell)
    reg = _head(g, feats[2:], cins, 4, "/head/reg", per_cell)
    anchors = g.init("anchors", _anchors(levels, size, per_cell))
    S = "/postprocess"
    boxes = _decode(g, g.op("Squeeze", [reg, g.const(np.array([0], np.int64), S)], scope=S), anchors, S, size)
    cls = g.op("Mul", [cls, g.const(np.array(4.0, np.float32), S)], scope=S)  # peaky, like a trained head
    scores = g.op("Softmax", [g.op("Squeeze", [cls, g.const(np.array([0], np.int64), S)], scope=S)], scope=S, axis=-1)
    fg = g.op("Slice", [scores, g.const(np.array([1], np.int64), S), g.const(np.array([n_classes + 1], np.int64), S),
                        g.const(np.array([1], np.int64), S)], scope=S)                     # [A, C]
    flat = g.op("Reshape", [fg, g.const(np.array([-1], np.int64), S)], scope=S)           # [A*C]
    keep = g.op("Squeeze", [g.op("NonZero", [g.op("Greater", [flat, g.const(np.array(score_thr, np.float32), S)],
                                                  scope=S)], scope=S), g.const(np.array([0], np.int64), S)], scope=S)
    kscores = g.op("Gather", [flat, keep], scope=S, axis=0)
    # k = min(topk, number kept): torchvision's min(topk_candidates, num_topk)
    n = g.op("Shape", [kscores], scope=S)
    k = g.op("Min", [n, g.const(np.array([topk], np.int64), S)], scope=S)
    top_s, top_i = g.op("TopK", [kscores, k], scope=S, n_out=2, axis=0, largest=1, sorted=1)
    idx = g.op("Gather", [keep, top_i], scope=S, axis=0)
    anchor_idx = g.op("Div", [idx, g.const(np.array(n_classes, np.int64), S)], scope=S)
    labels = g.op("Add", [g.op("Mod", [idx, g.const(np.array(n_classes, np.int64), S)], scope=S),
                          g.const(np.array(1, np.int64), S)], scope=S)
    kboxes = g.op("Gather", [boxes, anchor_idx], scope=S, axis=0)                          # [K, 4]
    # if boxes.numel() == 0: empty results, else batched NMS
    empty = g.op("Equal", [g.op("Size", [kboxes], scope=S), g.const(np.array(0, np.int64), S)], scope=S)

    def branch_empty():
        nodes = [helper.make_node("Constant", [], ["e_boxes"], value=helper.make_tensor("v", TensorProto.FLOAT, [0, 4], [])),
                 helper.make_node("Constant", [], ["e_scores"], value=helper.make_tensor("v", TensorProto.FLOAT, [0], [])),
                 helper.make_node("Constant", [], ["e_labels"], value=helper.make_tensor("v", TensorProto.INT64, [0], []))]
        return helper.make_graph(nodes, "else_branch", [], [helper.make_tensor_value_info("e_boxes", TensorProto.FLOAT, [0, 4]),
                                                            helper.make_tensor_value_info("e_scores", TensorProto.FLOAT, [0]),
                                                            helper.make_tensor_value_info("e_labels", TensorProto.INT64, [0])])

    def branch_nms():
        off = "b_off"
        nodes = [
            helper.make_node("ReduceMax", [kboxes], ["b_max"], keepdims=0),
            helper.make_node("Cast", [labels], ["b_labf"], to=TensorProto.FLOAT),
            helper.make_node("Constant", [], ["b_one"], value=helper.make_tensor("v", TensorProto.FLOAT, [], [1.0])),
            helper.make_node("Add", ["b_max", "b_one"], ["b_span"]),
            helper.make_node("Mul", ["b_labf", "b_span"], [off]),
            helper.make_node("Constant", [], ["b_ax"], value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
            helper.make_node("Unsqueeze", [off, "b_ax"], ["b_off2"]),
            helper.make_node("Add", [kboxes, "b_off2"], ["b_shift"]),
            helper.make_node("Constant", [], ["b_ax0"], value=helper.make_tensor("v", TensorProto.INT64, [1], [0])),
            helper.make_node("Unsqueeze", ["b_shift", "b_ax0"], ["b_nb"]),
            helper.make_node("Unsqueeze", [top_s, "b_ax0"], ["b_s1"]),
            helper.make_node("Unsqueeze", ["b_s1", "b_ax0"], ["b_ns"]),
            helper.make_node("Constant", [], ["b_max_out"], value=helper.make_tensor("v", TensorProto.INT64, [1], [200])),
            helper.make_node("Constant", [], ["b_iou"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
            helper.make_node("NonMaxSuppression", ["b_nb", "b_ns", "b_max_out", "b_iou"], ["b_sel"]),
            helper.make_node("Constant", [], ["b_col"], value=helper.make_tensor("v", TensorProto.INT64, [], [2])),
            helper.make_node("Gather", ["b_sel", "b_col"], ["b_keep"], axis=1),
            helper.make_node("Gather", [kboxes, "b_keep"], ["t_boxes"], axis=0),
            helper.make_node("Gather", [top_s, "b_keep"], ["t_scores"], axis=0),
            helper.make_node("Gather", [labels, "b_keep"], ["t_labels"], axis=0),
        ]
        return helper.make_graph(nodes, "then_branch", [], [helper.make_tensor_value_info("t_boxes", TensorProto.FLOAT, ["K", 4]),
                                                            helper.make_tensor_value_info("t_scores", TensorProto.FLOAT, ["K"]),
                                                            helper.make_tensor_value_info("t_labels", TensorProto.INT64, ["K"])])

    name = g._unique(f"{S}/If")
    g.nodes.append(helper.make_node("If", [empty], ["boxes", "scores", "labels"], name=name,
                                    then_branch=branch_empty(), else_branch=branch_nms()))
    return [("boxes", F, ["K", 4]), ("scores", F, ["K"]), ("labels", I, ["K"])]


def yolo_nms(g, x, size, n_classes=4, score_thr=0.3, iou=0.45):
    """YOLO-style with the NMS in the graph (as ultralytics exports with nms=True): sigmoid objectness and class
    scores, boxes from a grid, NonMaxSuppression per class, the kept boxes gathered with GatherND."""
    feats = _backbone(g, x, [16, 32, 64, 64])
    S = "/postprocess"
    levels = [((size // 8, size // 8), 8), ((size // 16, size // 16), 16)]
    per_cell = 3
    out = _head(g, feats[2:], [64, 64], 5 + n_classes, "/head", per_cell)                 # [1, A, 5+C]
    out = g.op("Sigmoid", [out], scope=S)
    xywh, obj, cls = g.op("Split", [out, g.const(np.array([4, 1, n_classes], np.int64), S)], scope=S, n_out=3, axis=-1)
    anchors = _anchors(levels, size, per_cell)
    ctr = (anchors[:, :2] + anchors[:, 2:]) / 2
    wh = anchors[:, 2:] - anchors[:, :2]
    grid = g.init("grid", np.concatenate([ctr, wh], -1)[None].astype(np.float32))
    xy, whp = g.op("Split", [xywh, g.const(np.array([2, 2], np.int64), S)], scope=S, n_out=2, axis=-1)
    gxy, gwh = g.op("Split", [grid, g.const(np.array([2, 2], np.int64), S)], scope=S, n_out=2, axis=-1)
    pxy = g.op("Add", [gxy, g.op("Mul", [g.op("Sub", [xy, g.const(np.array(0.5, np.float32), S)], scope=S), gwh], scope=S)], scope=S)
    pwh = g.op("Mul", [g.op("Mul", [whp, g.const(np.array(2.0, np.float32), S)], scope=S), gwh], scope=S)
    half = g.op("Mul", [pwh, g.const(np.array(0.5, np.float32), S)], scope=S)
    boxes = g.op("Concat", [g.op("Sub", [pxy, half], scope=S), g.op("Add", [pxy, half], scope=S)], scope=S, axis=-1)
    conf = g.op("Mul", [obj, cls], scope=S)                                                   # [1, A, C]
    conf = g.op("Transpose", [conf], scope=S, perm=[0, 2, 1])                                 # [1, C, A]
    sel = g.op("NonMaxSuppression", [boxes, conf, g.const(np.array([200], np.int64), S),
                                     g.const(np.array([iou], np.float32), S), g.const(np.array([score_thr], np.float32), S)],
               scope=S, center_point_box=0)                                                   # [K, 3]
    bi = g.op("Gather", [sel, g.const(np.array([0, 2], np.int64), S)], scope=S, axis=1)      # (batch, box)
    kept = g.op("GatherND", [boxes, bi], scope=S)                                             # [K, 4]
    g.nodes[-1].output[0] = "boxes"
    ci = g.op("Gather", [sel, g.const(np.array(1, np.int64), S)], scope=S, axis=1)
    sc = g.op("GatherND", [conf, sel], scope=S)
    g.nodes[-1].output[0] = "scores"
    g.op("Identity", [ci], scope=S)
    g.nodes[-1].output[0] = "labels"
    return [("boxes", F, ["K", 4]), ("scores", F, ["K"]), ("labels", I, ["K"])]


def face_detector(g, x, size, score_thr=0.5):
    """YuNet-like face detector: depthwise backbone, three strides, class/objectness/box/5-landmark heads, priors
    from the grid, NMS on one class, kept faces gathered with their landmarks."""
    feats = _backbone(g, x, [16, 24, 32, 48, 64], dw=True)
    S = "/postprocess"
    use = feats[2:]                                                                           # strides 8, 16, 32
    cins = [32, 48, 64]
    levels = [((size // s, size // s), s) for s in (8, 16, 32)]
    cls = _head(g, use, cins, 1, "/head/cls", 1)
    obj = _head(g, use, cins, 1, "/head/obj", 1)
    bbox = _head(g, use, cins, 4, "/head/bbox", 1)
    kps = _head(g, use, cins, 10, "/head/kps", 1)
    pri = np.concatenate([np.stack(np.meshgrid(np.arange(w) * s, np.arange(h) * s, indexing="xy"), -1).reshape(-1, 2)
                          .repeat(1, 0).astype(np.float32) for (h, w), s in levels], 0)
    strides = np.concatenate([np.full((h * w, 1), s, np.float32) for (h, w), s in levels], 0)
    p = g.init("priors", pri[None])
    st = g.init("prior_strides", strides[None])
    score = g.op("Sqrt", [g.op("Mul", [g.op("Sigmoid", [cls], scope=S), g.op("Sigmoid", [obj], scope=S)], scope=S)], scope=S)
    dxy, dwh = g.op("Split", [bbox, g.const(np.array([2, 2], np.int64), S)], scope=S, n_out=2, axis=-1)
    cxy = g.op("Add", [p, g.op("Mul", [dxy, st], scope=S)], scope=S)
    wh = g.op("Mul", [g.op("Exp", [g.op("Clip", [dwh, g.const(np.array(-4.0, np.float32), S), g.const(np.array(4.0, np.float32), S)],
                                        scope=S)], scope=S), st], scope=S)
    half = g.op("Mul", [wh, g.const(np.array(0.5, np.float32), S)], scope=S)
    boxes = g.op("Concat", [g.op("Sub", [cxy, half], scope=S), g.op("Add", [cxy, half], scope=S)], scope=S, axis=-1)
    sel = g.op("NonMaxSuppression", [boxes, g.op("Transpose", [score], scope=S, perm=[0, 2, 1]),
                                     g.const(np.array([100], np.int64), S), g.const(np.array([0.3], np.float32), S),
                                     g.const(np.array([score_thr], np.float32), S)], scope=S)
    keep = g.op("Gather", [sel, g.const(np.array(2, np.int64), S)], scope=S, axis=1)
    b0 = g.op("Squeeze", [boxes, g.const(np.array([0], np.int64), S)], scope=S)
    g.op("Gather", [b0, keep], scope=S, axis=0)
    g.nodes[-1].output[0] = "faces"
    k0 = g.op("Squeeze", [kps, g.const(np.array([0], np.int64), S)], scope=S)
    g.op("Gather", [k0, keep], scope=S, axis=0)
    g.nodes[-1].output[0] = "landmarks"
    s0 = g.op("Squeeze", [score, g.const(np.array([0, 2], np.int64), S)], scope=S)
    g.op("Gather", [s0, keep], scope=S, axis=0)
    g.nodes[-1].output[0] = "scores"
    return [("faces", F, ["K", 4]), ("landmarks", F, ["K", 10]), ("scores", F, ["K"])]


def two_stage(g, x, size, n_classes=5, pre_nms=150, post_nms=40):
    """Faster R-CNN-like: an RPN (objectness TopK, decode, NMS), RoiAlign of the kept proposals on the feature map,
    a two-layer box head, softmax scores, per-class boxes, and a second NMS."""
    feats = _backbone(g, x, [16, 32, 64])
    f = feats[2]                                                                              # stride 8, 64 ch
    S = "/rpn"
    per_cell = 3
    levels = [((size // 8, size // 8), 8)]
    t = g.op("Relu", [g.conv(f, f"{S}/conv", 64, 64, 3)], scope=S)
    objn = _head(g, [t], [64], 1, f"{S}/cls", per_cell)
    deltas = _head(g, [t], [64], 4, f"{S}/bbox", per_cell)
    anchors = g.init("rpn_anchors", _anchors(levels, size, per_cell))
    props = _decode(g, g.op("Squeeze", [deltas, g.const(np.array([0], np.int64), S)], scope=S), anchors, S, size)
    o = g.op("Reshape", [objn, g.const(np.array([-1], np.int64), S)], scope=S)
    n = g.op("Shape", [o], scope=S)
    k = g.op("Min", [n, g.const(np.array([pre_nms], np.int64), S)], scope=S)
    ts, ti = g.op("TopK", [o, k], scope=S, n_out=2, axis=0)
    tp = g.op("Gather", [props, ti], scope=S, axis=0)
    sel = g.op("NonMaxSuppression", [g.op("Unsqueeze", [tp, g.const(np.array([0], np.int64), S)], scope=S),
                                     g.op("Unsqueeze", [g.op("Sigmoid", [ts], scope=S), g.const(np.array([0, 1], np.int64), S)], scope=S),
                                     g.const(np.array([post_nms], np.int64), S), g.const(np.array([0.7], np.float32), S)], scope=S)
    keep = g.op("Gather", [sel, g.const(np.array(2, np.int64), S)], scope=S, axis=1)
    rois = g.op("Gather", [tp, keep], scope=S, axis=0)                                        # [R, 4]
    R = "/roi_heads"
    bidx = g.op("ConstantOfShape", [g.op("Shape", [keep], scope=R)], scope=R,
                value=helper.make_tensor("v", TensorProto.INT64, [1], [0]))
    pooled = g.op("RoiAlign", [f, rois, bidx], scope=R, output_height=4, output_width=4, sampling_ratio=2,
                  spatial_scale=0.125, coordinate_transformation_mode="half_pixel")           # [R, 64, 4, 4]
    h = g.op("Flatten", [pooled], scope=R, axis=1)
    h = g.op("Relu", [g.linear(h, f"{R}/fc6", 64 * 16, 128)], scope=R)
    h = g.op("Relu", [g.linear(h, f"{R}/fc7", 128, 128)], scope=R)
    logits = g.linear(h, f"{R}/cls", 128, n_classes + 1, scale=0.3)
    prob = g.op("Softmax", [logits], scope=R, axis=-1)
    fg = g.op("Slice", [prob, g.const(np.array([1], np.int64), R), g.const(np.array([n_classes + 1], np.int64), R),
                        g.const(np.array([1], np.int64), R)], scope=R)                       # [R, C]
    bd = g.linear(h, f"{R}/bbox", 128, 4, scale=0.05)
    fb = _decode(g, bd, rois, f"{R}/decode", size)                                            # [R, 4] (class-agnostic)
    sel2 = g.op("NonMaxSuppression", [g.op("Unsqueeze", [fb, g.const(np.array([0], np.int64), R)], scope=R),
                                      g.op("Unsqueeze", [g.op("Transpose", [fg], scope=R, perm=[1, 0]), g.const(np.array([0], np.int64), R)], scope=R),
                                      g.const(np.array([20], np.int64), R), g.const(np.array([0.5], np.float32), R),
                                      g.const(np.array([0.05], np.float32), R)], scope=R)
    kb = g.op("Gather", [sel2, g.const(np.array(2, np.int64), R)], scope=R, axis=1)
    g.op("Gather", [fb, kb], scope=R, axis=0)
    g.nodes[-1].output[0] = "boxes"
    g.op("Gather", [sel2, g.const(np.array(1, np.int64), R)], scope=R, axis=1)
    g.nodes[-1].output[0] = "labels"
    g.op("GatherND", [fg, g.op("Gather", [sel2, g.const(np.array([2, 1], np.int64), R)], scope=R, axis=1)], scope=R)
    g.nodes[-1].output[0] = "scores"
    return [("boxes", F, ["K", 4]), ("labels", I, ["K"]), ("scores", F, ["K"])]


# name -> (builder, test input size, seed, description)
DETECTORS = {
    "det_ssd_if": (ssd_postprocess, 96, 2001, "SSD-style: softmax, NonZero threshold, TopK of a run-time k, If around batched NMS"),
    "det_yolo_nms": (yolo_nms, 96, 2002, "YOLO-style with NonMaxSuppression per class and GatherND in the graph"),
    "det_face": (face_detector, 96, 2003, "YuNet-like face detector: depthwise backbone, 3 strides, NMS, landmarks"),
    "det_two_stage": (two_stage, 96, 2004, "Faster R-CNN-like: RPN TopK + NMS, RoiAlign, box head, second NMS"),
}


def build(Graph, fvi, name, size=None, batch_inputs=3):
    """(model, cases) for build_models.py: `batch_inputs` seeded images (their kept counts differ)."""
    fn, test_size, seed, doc = DETECTORS[name]
    size = size or test_size
    g = Graph(seed)
    outs = fn(g, "images", size)
    m = g.model(name, [fvi("images", [1, 3, size, size])], [fvi(o, shape, t) for o, t, shape in outs], 17, doc)
    rng = np.random.default_rng(seed)
    cases = {"" if i == 0 else f"image{i}": {"images": rng.uniform(0, 1, (1, 3, size, size)).astype(np.float32)}
             for i in range(batch_inputs)}
    return m, cases
