"""Device memory through the Python package (docs/python.md, "Device memory").

On every machine, with the fake device backend of tests/plugins (NETRUN_TEST_FAKEDEV; it serves "CUDA memory" that
is host memory it hands out): tensors exposing __cuda_array_interface__ are read in place, out= tensors written in
place, device_outputs=True gives DeviceArray objects whose __cuda_array_interface__ and __dlpack__ point at the
session's device memory (a DLPack round trip into a second session reads them without a copy), the stats count no
host <-> device bytes, and misuse is a clear error.

With a CUDA device and PyTorch: torch CUDA tensors in and out (DLPack and CAI), a torch stream honoured, results
equal to the host path, pointer changes under CUDA Graphs, PCIe bytes 0."""
import ctypes as C
import os

import numpy as np
import pytest

FAKEDEV = os.environ.get("NETRUN_TEST_FAKEDEV", "")
if FAKEDEV:  # before netrun loads its plugins
    os.environ["NETRUN_BACKEND_PATH"] = ":".join(p for p in (os.environ.get("NETRUN_BACKEND_PATH"), FAKEDEV) if p)

import netrun  # noqa: E402
from onnx import TensorProto, helper, numpy_helper, save  # noqa: E402

RNG = np.random.default_rng(3)


def mlp(path, w):
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"], name="r")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 24])],
                          [numpy_helper.from_array(w, "W")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    w = (RNG.standard_normal((32, 24)) * 0.2).astype(np.float32)
    path = str(tmp_path_factory.mktemp("devio") / "mlp.onnx")
    mlp(path, w)
    return path, w


# ---- the fake device: "CUDA memory" handed out by the plugin ----
def fake_lib():
    if not FAKEDEV:
        pytest.skip("NETRUN_TEST_FAKEDEV not set (the fake device plugin of tests/plugins)")
    path = os.path.join(FAKEDEV, "libnetrun-fakedev.so") if os.path.isdir(FAKEDEV) else FAKEDEV
    lib = C.CDLL(path)
    lib.fakedev_alloc.restype, lib.fakedev_alloc.argtypes = C.c_void_p, [C.c_size_t]
    lib.fakedev_free.restype, lib.fakedev_free.argtypes = None, [C.c_void_p]
    lib.fakedev_last_stream.restype = C.c_void_p
    return lib


class FakeCudaArray:
    """A CUDA-array-interface producer over the fake device's memory (what a CuPy array looks like to netrun)."""

    def __init__(self, lib, arr=None, shape=None, dtype=np.float32, stream=None):
        self.lib, self.shape, self.dtype = lib, tuple(arr.shape if arr is not None else shape), np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self.ptr = lib.fakedev_alloc(self.nbytes)
        self.stream = stream
        if arr is not None:
            a = np.ascontiguousarray(arr, dtype=self.dtype)
            C.memmove(self.ptr, a.ctypes.data, self.nbytes)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3,
                "strides": None, "stream": self.stream}

    def numpy(self):
        return read(self.ptr, self.shape, self.dtype)

    def free(self):
        self.lib.fakedev_free(self.ptr)


def read(ptr, shape, dtype=np.float32):
    a = np.empty(shape, dtype)
    C.memmove(a.ctypes.data, ptr, a.nbytes)
    return a


def test_fake_device_in_out(model):
    lib = fake_lib()
    path, w = model
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    want = np.maximum(x @ w, 0)
    dx, dy = FakeCudaArray(lib, x, stream=0x5150), FakeCudaArray(lib, shape=(16, 24))
    try:
        with netrun.Session(path, backends="fakedev,cpu") as s:
            for _ in range(3):  # the second run captures a device graph
                (y,) = s.run({"x": dx}, out={"y": dy})
                assert y is dy
                np.testing.assert_allclose(dy.numpy(), want, rtol=1e-5, atol=1e-6)
            st = s.stats
            assert (st.h2d_bytes, st.d2h_bytes, st.d2d_bytes, st.n_outputs_in_place) == (0, 0, 0, 1)
            assert lib.fakedev_last_stream() == 0x5150  # the producer's CAI stream
            # a new input buffer: the captured graph is captured again, never replayed on the old pointer
            x2 = RNG.standard_normal((16, 32)).astype(np.float32)
            dx2 = FakeCudaArray(lib, x2, stream=0x5150)
            s.run({"x": dx2}, out={"y": dy})
            np.testing.assert_allclose(dy.numpy(), np.maximum(x2 @ w, 0), rtol=1e-5, atol=1e-6)
            assert s.stats.graph_recaptures >= 1
            dx2.free()
            # device outputs owned by the session, and back to host outputs afterwards
            (d,) = s.run({"x": dx}, device_outputs=True)
            assert isinstance(d, netrun.DeviceArray) and d.shape == (16, 24) and d.dtype == np.float32
            cai = d.__cuda_array_interface__
            np.testing.assert_allclose(read(cai["data"][0], d.shape), want, rtol=1e-5, atol=1e-6)
            assert d.__dlpack_device__() == (2, 0)
            assert s.stats.d2h_bytes == 0
            # DLPack round trip: a second session reads the first one's device output in place
            w2 = np.eye(24, 32, dtype=np.float32)  # y [16,24] -> pad to [16,32]: reuse the model with x = d @ w2
            with netrun.Session(path, backends="fakedev,cpu") as s2:
                (host_y,) = s2.run({"x": np.maximum(want @ w2, 0)})
                d_pad = FakeCudaArray(lib, want @ w2)
                (y2,) = s2.run({"x": d_pad})
                np.testing.assert_allclose(y2, host_y, rtol=1e-5, atol=1e-6)
                assert s2.stats.h2d_bytes == 0 and s2.stats.d2h_bytes == host_y.nbytes
                d_pad.free()
            np.testing.assert_allclose(s.run({"x": x})[0], want, rtol=1e-5, atol=1e-6)
    finally:
        dx.free()
        dy.free()


def test_dlpack_roundtrip(model):
    lib = fake_lib()
    path, w = model
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    dx = FakeCudaArray(lib, x)
    try:
        # a model y = relu(x @ W) with W [32, 24]: feed a DeviceArray of [16, 32] made by an identity session
        ident = os.path.join(os.path.dirname(path), "ident.onnx")
        nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
        g = helper.make_graph(nodes, "ident", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 32])])
        save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), ident)
        with netrun.Session(ident, backends="fakedev,cpu") as a, netrun.Session(path, backends="fakedev,cpu") as b:
            (d,) = a.run({"x": dx}, device_outputs=True)

            class OnlyDLPack:  # a producer with DLPack alone: netrun takes the capsule
                def __init__(self, inner):
                    self.inner = inner

                def __dlpack__(self, stream=None):
                    return self.inner.__dlpack__(stream=stream)

                def __dlpack_device__(self):
                    return self.inner.__dlpack_device__()

            (y,) = b.run({"x": OnlyDLPack(d)})
            np.testing.assert_allclose(y, np.maximum(np.maximum(x, 0) @ w, 0), rtol=1e-5, atol=1e-6)
            assert b.stats.h2d_bytes == 0
            from netrun import _device
            assert not _device._live, "every exported capsule was released by its consumer"
            cap = d.__dlpack__()  # never consumed: its destructor frees it
            del cap
            assert not _device._live
    finally:
        dx.free()


def test_misuse(model):
    lib = fake_lib()
    path, _ = model
    dx = FakeCudaArray(lib, np.zeros((16, 32), np.float32))
    try:
        with netrun.Session(path, backends="cpu") as s:
            with pytest.raises(netrun.UnsupportedError, match="input 'x'.*no backend"):
                s.run({"x": dx})
        with netrun.Session(path, backends="fakedev,cpu") as s:
            small = FakeCudaArray(lib, shape=(4, 4))
            with pytest.raises(netrun.InvalidArgumentError, match="output 'y' needs"):
                s.run({"x": dx}, out={"y": small})
            small.free()
            with pytest.raises(netrun.InvalidArgumentError, match="no output 'z'"):
                s.run({"x": dx}, out={"z": dx})
            wrong = FakeCudaArray(lib, np.zeros((16, 32)), dtype=np.float64)
            with pytest.raises(netrun.InvalidArgumentError, match="float32"):
                s.run({"x": wrong})
            wrong.free()
    finally:
        dx.free()


# ---- a real GPU with PyTorch ----
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or not [b for b in netrun.backends() if b.name == "cuda" and b.available]:
        pytest.skip("no CUDA device with the cuda backend")
    return torch


def cnn(path):
    """A small ResNet-like block stack, all of it on the CUDA backend."""
    r = np.random.default_rng(9)
    inits, nodes, c, x = [], [], 3, "x"
    for i, co in enumerate((16, 16, 32)):
        wn, bn = f"w{i}", f"b{i}"
        inits += [numpy_helper.from_array((r.standard_normal((co, c, 3, 3)) * 0.2).astype(np.float32), wn),
                  numpy_helper.from_array((r.standard_normal(co) * 0.1).astype(np.float32), bn)]
        nodes += [helper.make_node("Conv", [x, wn, bn], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x, c = f"r{i}", co
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32, 1, 1])], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_torch_cuda_in_out(tmp_path):
    torch = torch_cuda()
    path = str(tmp_path / "cnn.onnx")
    cnn(path)
    x = torch.randn(2, 3, 32, 32, device="cuda")
    with netrun.Session(path, backends="cuda", strict=True) as s:
        want = s.run({"x": x.cpu().numpy()})[0]
        y = torch.empty(2, 32, 1, 1, device="cuda")
        st = torch.cuda.Stream()
        with torch.cuda.stream(st):
            for _ in range(4):  # graphs captured at run 2, replayed after
                xs = x * 1.0  # produced on the torch stream: netrun must wait for it
                (yy,) = s.run({"x": xs}, out={"y": y})
                assert yy is y
                np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
        stats = s.stats
        assert stats.h2d_bytes == 0 and stats.d2h_bytes == 0, (stats.h2d_bytes, stats.d2h_bytes)
        # pointer change with CUDA Graphs on
        x2 = torch.randn(2, 3, 32, 32, device="cuda")
        y2 = torch.empty_like(y)
        s.run({"x": x2}, out={"y": y2})
        torch.cuda.synchronize()
        want2 = s.run({"x": x2.cpu().numpy()})[0]
        np.testing.assert_allclose(y2.cpu().numpy(), want2, rtol=1e-4, atol=1e-5)
        # device outputs into torch without a copy (DLPack and CAI)
        (d,) = s.run({"x": x}, device_outputs=True)
        t = torch.from_dlpack(d)
        assert t.data_ptr() == d.ptr and t.is_cuda
        np.testing.assert_allclose(t.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
        t2 = torch.as_tensor(d, device="cuda")
        assert t2.data_ptr() == d.ptr


def test_torch_misuse(tmp_path):
    torch = torch_cuda()
    path = str(tmp_path / "cnn.onnx")
    cnn(path)
    with netrun.Session(path, backends="cuda", strict=True) as s:
        with pytest.raises(netrun.InvalidArgumentError, match="output 'y' needs"):
            s.run({"x": torch.randn(2, 3, 32, 32, device="cuda")}, out={"y": torch.empty(2, device="cuda")})
        with pytest.raises(netrun.InvalidArgumentError, match="strided"):
            s.run({"x": torch.randn(2, 3, 32, 64, device="cuda")[..., ::2]})
