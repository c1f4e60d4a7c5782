"""ImagePreprocess (com.netrun) and the preprocess.* session options on the CPU backend.

References: a numpy implementation of the documented formula (include/netrun_ops.h), written apart from the C code;
cv2.resize on the float frame (INTER_LINEAR / INTER_NEAREST) and cv2.dnn.blobFromImage where OpenCV is installed
(its uint8 resize works in fixed point and rounds each resized pixel to an integer: compared within one level). OpenCV's
own resize code is the reference, not the Intel IPP one opencv-python calls by default: IPP places the source
coordinates up to ~1e-4 pixel apart (0.017 levels off on a 1080p -> 224 downscale)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import netrun

try:
    import cv2
    cv2.ipp.setUseIPP(False)  # OpenCV's own resize: IPP's computes coordinates ~1e-4 pixel apart
except ImportError:  # the numpy reference still runs
    cv2 = None


def identity_model(shape, dtype=TensorProto.FLOAT, name="x"):
    g = helper.make_graph([helper.make_node("Identity", [name], ["y"])], "g",
                          [helper.make_tensor_value_info(name, dtype, shape)],
                          [helper.make_tensor_value_info("y", dtype, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def session(model, **opts):
    o = {"preprocess." + k: v for k, v in opts.items()}
    return netrun.Session(model, backends="cpu", options=o)


# ---- the numpy reference of the documented formula ----

def taps(n_out, n_in, step, off, nearest):
    i = np.arange(n_out, dtype=np.float64)
    if nearest:
        s = np.clip(np.floor((i + off) * step).astype(np.int64), 0, n_in - 1)
        return s, s, np.zeros(n_out, np.float32)
    f = ((i + off + 0.5) * step - 0.5).astype(np.float32)
    s = np.floor(f).astype(np.int64)
    w = (f - s.astype(np.float32)).astype(np.float32)
    w[s < 0] = 0
    s[s < 0] = 0
    hi = s >= n_in - 1
    s[hi] = n_in - 1
    w[hi] = 0
    return s, np.minimum(s + 1, n_in - 1), w


def geometry(H, W, h, w, resize):
    """(out_h, out_w, box, step_y, step_x, off_y, off_x) as the docs say."""
    if resize == "none":
        return H, W, (0, 0, H, W), 1.0, 1.0, 0.0, 0.0
    if resize == "stretch":
        return h, w, (0, 0, h, w), H / h, W / w, 0.0, 0.0
    if resize == "letterbox":
        f = min(h / H, w / W)
        rh, rw = min(max(int(np.rint(H * f)), 1), h), min(max(int(np.rint(W * f)), 1), w)
        y0, x0 = (h - rh) // 2, (w - rw) // 2
        return h, w, (y0, x0, y0 + rh, x0 + rw), H / rh, W / rw, -y0, -x0
    f = max(np.float32(w) / np.float32(W), np.float32(h) / np.float32(H))  # crop: float32 factor
    rh, rw = max(int(np.rint(H * float(f))), h), max(int(np.rint(W * float(f))), w)
    return h, w, (0, 0, h, w), 1 / float(f), 1 / float(f), (rh - h) // 2, (rw - w) // 2


def reference(frames, h, w, resize="stretch", interpolation="linear", swap_rb=False, mean=(0, 0, 0), scale=1.0,
              std=(1, 1, 1), pad=0.0, dtype=np.float32):
    N, H, W, C = frames.shape
    oh, ow, box, sy, sx, oy, ox = geometry(H, W, h, w, resize)
    near = interpolation == "nearest"
    y0, y1, wy = taps(oh, H, sy, oy, near)
    x0, x1, wx = taps(ow, W, sx, ox, near)
    f = frames.astype(np.float32)
    wy, wx = wy[:, None, None], wx[None, :, None]
    h0 = f[:, y0][:, :, x0] * (1 - wx) + f[:, y0][:, :, x1] * wx
    h1 = f[:, y1][:, :, x0] * (1 - wx) + f[:, y1][:, :, x1] * wx
    r = (h0 * (1 - wy) + h1 * wy)[..., :3]
    inside = np.zeros((oh, ow), bool)
    inside[box[0]:box[2], box[1]:box[3]] = True
    r = np.where(inside[None, :, :, None], r, np.float32(pad))
    if swap_rb:
        r = r[..., ::-1]
    k = np.float32(scale) / np.asarray(std, np.float32)
    y = (r - np.asarray(mean, np.float32)) * k
    return y.transpose(0, 3, 1, 2).astype(dtype)


def frames(n, H, W, C, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, H, W, C), dtype=np.uint8)


CASES = [  # (N, H, W, C, h, w, resize, interpolation, swap)
    (1, 15, 17, 3, 8, 10, "stretch", "linear", False),     # odd sizes, downscale
    (2, 7, 5, 3, 16, 11, "stretch", "linear", True),       # upscale, batch 2, swap
    (1, 37, 53, 4, 19, 23, "letterbox", "linear", False),  # RGBA, letterbox wide
    (1, 53, 37, 3, 24, 24, "letterbox", "linear", True),   # letterbox tall
    (2, 30, 41, 3, 16, 16, "crop", "linear", False),       # crop (blobFromImage crop=true)
    (1, 9, 31, 3, 12, 12, "crop", "linear", True),         # crop, upscale on one side
    (1, 15, 17, 3, 9, 6, "stretch", "nearest", False),
    (1, 20, 24, 4, 13, 13, "letterbox", "nearest", True),
    (1, 12, 14, 3, 12, 14, "none", "linear", True),
    (1, 1, 1, 3, 4, 5, "stretch", "linear", False),        # a one-pixel frame
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
@pytest.mark.parametrize("out", ["float32", "float16"])
def test_against_numpy_reference(case, out):
    N, H, W, C, h, w, resize, interp, swap = case
    dt = TensorProto.FLOAT if out == "float32" else TensorProto.FLOAT16
    mdl = identity_model([N, 3, h, w], dt)
    fmt = "rgba" if C == 4 else "rgb"
    s = session(mdl, input="x", format=fmt, order="bgr" if swap else "rgb", resize=resize, interpolation=interp,
                mean="123.675,116.28,103.53", scale=1 / 255, std="0.229,0.224,0.225", pad=114)
    fr = frames(N, H, W, C)
    got = s.run({"x": fr})[0]
    ref = reference(fr, h, w, resize, interp, swap, (123.675, 116.28, 103.53), np.float32(1 / 255),
                    (0.229, 0.224, 0.225), 114.0, np.float32)
    assert got.shape == (N, 3, h, w) and got.dtype == np.dtype(out)
    if out == "float16":
        np.testing.assert_allclose(got.astype(np.float32), ref, rtol=2e-3, atol=2e-3)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-5)


@pytest.mark.skipif(cv2 is None, reason="OpenCV not installed")
@pytest.mark.parametrize("size", [(15, 17, 8, 10), (7, 5, 16, 11), (1080, 1920, 224, 224), (480, 640, 640, 640),
                                  (33, 64, 16, 32)])
@pytest.mark.parametrize("interp", ["linear", "nearest"])
def test_stretch_matches_cv2_resize(size, interp):
    H, W, h, w = size
    fr = frames(1, H, W, 3, seed=H)
    s = session(identity_model([1, 3, h, w]), input="x", interpolation=interp)
    got = s.run({"x": fr})[0][0].transpose(1, 2, 0)
    flag = cv2.INTER_LINEAR if interp == "linear" else cv2.INTER_NEAREST
    ref = cv2.resize(fr[0].astype(np.float32), (w, h), interpolation=flag)
    np.testing.assert_allclose(got, ref, atol=1e-4, rtol=1e-6)
    if interp == "nearest":  # no arithmetic: equal to the uint8 resize
        np.testing.assert_array_equal(got, cv2.resize(fr[0], (w, h), interpolation=flag).astype(np.float32))


@pytest.mark.skipif(cv2 is None, reason="OpenCV not installed")
@pytest.mark.parametrize("crop", [False, True])
@pytest.mark.parametrize("size", [(375, 500, 224, 224), (720, 1280, 300, 300), (31, 45, 20, 16)])
def test_blob_from_image(size, crop):
    """cv2.dnn.blobFromImage resizes the uint8 frame in fixed point (11-bit weights) and rounds each pixel to an
    integer; netrun resizes in float32: within one level."""
    H, W, h, w = size
    fr = frames(1, H, W, 3, seed=W)
    mean, scale = (104.0, 117.0, 123.0), 0.017
    s = session(identity_model([1, 3, h, w]), input="x", format="bgr", order="rgb", resize="crop" if crop else "stretch",
                mean=",".join(map(str, mean)), scale=scale)
    got = s.run({"x": fr})[0]
    ref = cv2.dnn.blobFromImage(fr[0], scale, (w, h), mean, swapRB=True, crop=crop)
    assert got.shape == ref.shape
    err = np.abs(got - ref).max() / scale  # in pixel levels
    assert err <= 1.0, f"{err} levels off blobFromImage"
    # and the float resize that blobFromImage would do without its uint8 rounding: close to exact
    rounded = reference(fr, h, w, "crop" if crop else "stretch", swap_rb=True, mean=mean, scale=np.float32(scale))
    np.testing.assert_allclose(got, rounded, atol=1e-4, rtol=1e-5)


@pytest.mark.skipif(cv2 is None, reason="OpenCV not installed")
def test_letterbox_matches_cv2():
    """The YOLO letterbox: cv2.resize to the kept-aspect size, 114 around, centred."""
    H, W, h, w = 720, 1280, 640, 640
    fr = frames(1, H, W, 3, seed=5)
    s = session(identity_model([1, 3, h, w]), input="x", resize="letterbox", pad=114, scale=1 / 255)
    got = s.run({"x": fr})[0][0].transpose(1, 2, 0)
    rw, rh = 640, 360
    top, left = (h - rh) // 2, (w - rw) // 2
    r = cv2.resize(fr[0].astype(np.float32), (rw, rh), interpolation=cv2.INTER_LINEAR)
    ref = cv2.copyMakeBorder(r, top, h - rh - top, left, w - rw - left, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    np.testing.assert_allclose(got, ref * np.float32(1 / 255), atol=1e-5, rtol=1e-5)


def test_frame_size_changes_between_runs():
    s = session(identity_model([1, 3, 10, 12]), input="x", resize="letterbox")
    for H, W in [(20, 30), (31, 17), (20, 30)]:
        fr = frames(1, H, W, 3, seed=H * W)
        np.testing.assert_allclose(s.run({"x": fr})[0], reference(fr, 10, 12, "letterbox"), atol=2e-5, rtol=1e-5)


def test_symbolic_model_size_needs_size_option():
    mdl = identity_model([1, 3, "h", "w"])
    with pytest.raises(netrun.InvalidArgumentError, match="preprocess.size"):
        session(mdl, input="x")
    s = session(mdl, input="x", size="12x10")
    fr = frames(1, 21, 25, 3)
    np.testing.assert_allclose(s.run({"x": fr})[0], reference(fr, 10, 12), atol=2e-5, rtol=1e-5)


def test_symbolic_batch():
    s = session(identity_model(["n", 3, 6, 6]), input="x")
    fr = frames(3, 9, 9, 3)
    np.testing.assert_allclose(s.run({"x": fr})[0], reference(fr, 6, 6), atol=2e-5, rtol=1e-5)


def test_op_in_a_model():
    """ImagePreprocess written into a model by hand (domain com.netrun), attributes as documented."""
    node = helper.make_node("ImagePreprocess", ["f"], ["y"], domain="com.netrun", resize="letterbox", size=[9, 13],
                            mean=[1.0, 2.0, 3.0], std=[2.0], scale=0.5, pad_value=7.0, swap_rb=1, to=TensorProto.FLOAT16)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("f", TensorProto.UINT8, [2, 11, 29, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)])
    mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.netrun", 1)])
    s = netrun.Session(mdl.SerializeToString(), backends="cpu")
    fr = frames(2, 11, 29, 4)
    ref = reference(fr, 9, 13, "letterbox", swap_rb=True, mean=(1, 2, 3), scale=0.5, std=(2, 2, 2), pad=7.0)
    got = s.run({"f": fr})[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), ref, rtol=1e-3, atol=1e-3)


def op_model(shape, dtype=TensorProto.UINT8, **attrs):
    node = helper.make_node("ImagePreprocess", ["f"], ["y"], domain="com.netrun", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("f", dtype, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.netrun", 1)])
    return m.SerializeToString()


@pytest.mark.parametrize("shape,dtype,attrs,message", [
    ([1, 8, 8, 2], TensorProto.UINT8, {"size": [4, 4]}, "2 channels"),
    ([1, 8, 8, 3], TensorProto.FLOAT, {"size": [4, 4]}, "must be uint8"),
    ([8, 8, 3], TensorProto.UINT8, {"size": [4, 4]}, "rank 3"),
])
def test_op_errors_at_prepare(shape, dtype, attrs, message):
    s = netrun.Session(op_model(shape, dtype, **attrs), backends="cpu")
    with pytest.raises(netrun.Error, match=message):
        s.prepare()


@pytest.mark.parametrize("attrs,message", [
    ({"size": [4, 4], "resize": "squash"}, "resize 'squash'"),
    ({"size": [4, 4], "interpolation": "cubic"}, "interpolation 'cubic'"),
    ({"size": [4]}, "size must be"),
    ({"resize": "none", "size": [4, 4]}, "takes no size"),
    ({"size": [4, 4], "std": [1.0, 0.0, 1.0]}, "std"),
    ({"size": [4, 4], "mean": [1.0, 2.0]}, "mean takes 1 or 3"),
    ({"size": [4, 4], "to": 7}, "to must be"),
])
def test_op_attribute_errors(attrs, message):
    with pytest.raises(netrun.Error, match=message):
        netrun.Model(op_model([1, 8, 8, 3], **attrs))


@pytest.mark.parametrize("opts,message", [
    ({"resize": "squash"}, "preprocess.resize"),
    ({"format": "yuv"}, "preprocess.format"),
    ({"mean": "1,2"}, "preprocess.mean"),
    ({"std": "1,0,1"}, "preprocess.std"),
    ({"size": "12"}, "preprocess.size"),
    ({"scale": "half"}, "preprocess.scale"),
    ({"sclae": "1"}, "preprocess.scale"),  # a typo: did you mean
])
def test_option_errors(opts, message):
    with pytest.raises(netrun.InvalidArgumentError, match=message):
        session(identity_model([1, 3, 4, 4]), input="x", **opts)


def test_input_errors():
    with pytest.raises(netrun.InvalidArgumentError, match="no input 'image'"):
        session(identity_model([1, 3, 4, 4]), input="image")
    with pytest.raises(netrun.InvalidArgumentError, match="float32 or float16"):
        session(identity_model([1, 3, 4, 4], TensorProto.INT64), input="x")
    with pytest.raises(netrun.InvalidArgumentError, match=r"\[N, 3, H, W\]"):
        session(identity_model([1, 1, 4, 4]), input="x")
    s = session(identity_model([1, 3, 4, 4]), input="x", format="rgba")
    with pytest.raises(netrun.Error):  # 3 channels given where 4 are declared
        s.run({"x": frames(1, 6, 6, 3)})


def test_no_option_no_change():
    s = netrun.Session(identity_model([1, 3, 4, 4]), backends="cpu")
    assert s.inputs[0].dtype == "float32"


def conv_model(h, w):
    """Conv -> Relu -> GlobalAveragePool on [1, 3, h, w]: a model a device backend runs whole."""
    from onnx import numpy_helper
    wts = numpy_helper.from_array((np.random.default_rng(1).standard_normal((4, 3, 3, 3)) * 0.1).astype(np.float32),
                                  "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])], initializer=[wts])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.skipif(not any(b.name == "opencl" and b.available for b in netrun.backends()),
                    reason="no OpenCL device (PoCL) here")
def test_on_a_device_backend():
    """With a device backend (OpenCL, on PoCL in CI) the node runs there with the model: the frame crosses to the
    device as its uint8 bytes, the only copy, and the outputs agree with the CPU's."""
    opts = {"preprocess.input": "x", "preprocess.resize": "letterbox", "preprocess.pad": 114,
            "preprocess.scale": 1 / 255}
    fr = frames(1, 37, 61, 3, seed=9)
    dev = netrun.Session(conv_model(24, 32), backends="opencl", strict=True, options=opts)
    got = dev.run({"x": fr})[0]
    placed = {n.op_type: n.backend for n in dev.placement}
    assert placed["ImagePreprocess"] == "opencl", placed
    st = dev.stats
    # the copies between backends of a run: the frame's bytes in (outputs are read back apart from these)
    assert st.n_copies == 1 and st.copy_bytes == fr.nbytes, (st.n_copies, st.copy_bytes)
    cpu = netrun.Session(conv_model(24, 32), backends="cpu", options=opts)
    np.testing.assert_allclose(got, cpu.run({"x": fr})[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("resize", ["stretch", "letterbox", "crop", "none"])
@pytest.mark.parametrize("interp", ["linear", "nearest"])
@pytest.mark.parametrize("swap", [0, 1])
@pytest.mark.parametrize("C", [3, 4])
@pytest.mark.parametrize("to", [TensorProto.FLOAT, TensorProto.FLOAT16])
def test_every_attribute_combination(resize, interp, swap, C, to):
    """The op on its own, every combination of its attributes, a frame wider than the output and one taller."""
    for (H, W), (h, w) in [((13, 29), (7, 11)), ((31, 9), (10, 12))]:
        attrs = dict(resize=resize, interpolation=interp, swap_rb=swap, to=to, mean=[10.0, 20.0, 30.0],
                     std=[0.5, 2.0, 4.0], scale=0.25, pad_value=50.0)
        if resize != "none":
            attrs["size"] = [h, w]
        node = helper.make_node("ImagePreprocess", ["f"], ["y"], domain="com.netrun", **attrs)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("f", TensorProto.UINT8, [2, H, W, C])],
                              [helper.make_tensor_value_info("y", to, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.netrun", 1)])
        fr = frames(2, H, W, C, seed=H + W + C)
        got = netrun.Session(m.SerializeToString(), backends="cpu").run({"f": fr})[0]
        ref = reference(fr, h, w, resize, interp, bool(swap), (10, 20, 30), np.float32(0.25), (0.5, 2.0, 4.0), 50.0)
        tol = 1e-2 if to == TensorProto.FLOAT16 else 1e-5
        assert got.shape == ref.shape, (got.shape, ref.shape)
        np.testing.assert_allclose(got.astype(np.float32), ref, rtol=tol, atol=tol)
