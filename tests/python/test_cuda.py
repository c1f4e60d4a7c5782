"""The package on the CUDA backend (skipped where no CUDA device is available, e.g. CI): a model on cuda against
the CPU, sessions on several threads, and DLPack with PyTorch tensors when torch is installed (host tensors
read in place; device tensors read in place too: tests/python/test_device_io.py has the rest)."""
import os
import threading

import numpy as np
import pytest

import netrun

CUDA = [b for b in netrun.backends() if b.name == "cuda" and b.available]
pytestmark = pytest.mark.skipif(not CUDA, reason="no available cuda backend on this machine")
MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "tiny_cnn.onnx")


def image(seed=0):
    return np.random.default_rng(seed).standard_normal((1, 3, 32, 32)).astype(np.float32)


def test_cuda_matches_cpu():
    with netrun.Session(MODEL, backends="cuda", strict=True) as g, netrun.Session(MODEL, backends="cpu") as c:
        for seed in range(3):
            x = image(seed)
            np.testing.assert_allclose(g.run({"image": x})[0], c.run({"image": x})[0], rtol=1e-4, atol=1e-5)
        assert {p.backend for p in g.placement} <= {"cuda", "const"}
        assert g.stats.device_peak_bytes > 0
        with g.profile() as prof:
            g.run({"image": image()})
        assert any(e.backend == "cuda" for e in prof.events)


def test_cuda_sessions_on_threads():
    m = netrun.Model(MODEL)
    want = netrun.Session(m, backends="cpu").run({"image": image(7)})[0]
    errors = []

    def work():
        try:
            s = netrun.Session(m, backends="cuda", strict=True)
            for _ in range(200):
                np.testing.assert_allclose(s.run({"image": image(7)})[0], want, rtol=1e-4, atol=1e-5)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(300)
    assert errors == []


def test_torch_dlpack():
    torch = pytest.importorskip("torch")
    with netrun.Session(MODEL, backends="cuda") as s:
        x = torch.randn(1, 3, 32, 32)
        y = s.run({"image": x})[0]  # a host tensor, read in place through DLPack
        np.testing.assert_allclose(y, s.run({"image": x.numpy()})[0], rtol=1e-6)
        t = torch.from_dlpack(y)  # outputs go to torch without a copy
        assert t.data_ptr() == y.ctypes.data
        if torch.cuda.is_available():  # device tensors are read in place (tests/python/test_device_io.py)
            np.testing.assert_allclose(s.run({"image": x.cuda()})[0], y, rtol=1e-5, atol=1e-6)
