"""The API: library, models, sessions, outputs by index and by name, placement, stats, profiles, DLPack."""
import ctypes
import os
import threading

import numpy as np
import pytest

import netrun
from netrun import _capi, _native

B = np.arange(1, 17, dtype=np.float32)


def test_version_is_the_c_library_version():
    here = os.path.dirname(os.path.abspath(__file__))
    header = open(os.path.join(here, "..", "..", "include", "netrun.h")).read()
    want = ".".join(header.split(f"#define NETRUN_VERSION_{k} ")[1].split()[0] for k in ("MAJOR", "MINOR", "PATCH"))
    assert netrun.__version__ == netrun.version() == want


def test_ctypes_structs_match_the_header():
    sizes = _native.struct_sizes()
    assert set(sizes) == set(_capi.STRUCTS)
    for name, struct in _capi.STRUCTS.items():
        assert ctypes.sizeof(struct) == sizes[name], name


def test_backends_lists_cpu():
    bs = {b.name: b for b in netrun.backends()}
    assert "cpu" in bs and bs["cpu"].available and not bs["cpu"].is_gpu
    assert bs["cpu"].device_count >= 1 and len(bs["cpu"].devices) == bs["cpu"].device_count
    ops = {r.op_type: r for r in bs["cpu"].ops()}
    assert "Conv" in ops and "float32" in ops["Conv"].dtypes
    for b in bs.values():  # unavailable plugins say why
        assert b.available or b.reason
    assert ("", "Add") in netrun.ops()


def test_model_info(add_model, add_path):
    for m in (netrun.Model(add_model), netrun.Model(add_path)):
        with m:
            assert [i.name for i in m.inputs] == ["x"]
            assert m.inputs[0] == netrun.TensorInfo("x", "float32", (1, 16))
            assert [o.name for o in m.outputs] == ["y", "z"]
            assert m.node_count == 2
    assert m.path == add_path


def test_symbolic_dims_are_named(batch_model):
    m = netrun.Model(batch_model)
    assert m.inputs[0].shape == ("batch", 4) and m.inputs[1] == netrun.TensorInfo("n", "int64", ("batch",))


def test_run_outputs_by_index_and_name(add_session):
    x = np.linspace(-20, 20, 16, dtype=np.float32).reshape(1, 16)
    out = add_session.run({"x": x})
    assert isinstance(out, tuple) and len(out) == 2 and out.names == ("y", "z")
    np.testing.assert_array_equal(out[0], x + B)
    np.testing.assert_array_equal(out["z"], np.maximum(x + B, 0))
    y, z = out
    assert y is out["y"] and "z" in out and "w" not in out
    assert list(out.keys()) == ["y", "z"] and set(out.as_dict()) == {"y", "z"}
    assert out[0].flags.writeable and out[0].flags.c_contiguous
    with pytest.raises(KeyError, match="no output 'w'"):
        out["w"]


def test_run_selected_outputs(add_session):
    x = np.ones((1, 16), np.float32)
    out = add_session.run({"x": x}, outputs=["z"])
    assert out.names == ("z",) and len(out) == 1
    np.testing.assert_array_equal(out["z"], x + B)
    out = add_session.run({"x": x}, outputs=["z", "y"])
    assert out.names == ("z", "y")


def test_copies_are_yours(add_session):
    x = np.zeros((1, 16), np.float32)
    a = add_session.run({"x": x})[0]
    a[0, 0] = 1000.0  # writable, and owned: the next run does not touch it
    b = add_session.run({"x": x + 1})[0]
    assert a[0, 0] == 1000.0 and a[0, 1] == 2.0 and b[0, 0] == 2.0


def test_views_are_read_only_until_the_next_run(add_session):
    x = np.zeros((1, 16), np.float32)
    v = add_session.run({"x": x}, copy=False)[0]
    assert not v.flags.writeable
    np.testing.assert_array_equal(v, B.reshape(1, 16))
    with pytest.raises(ValueError):
        v[0, 0] = 1.0
    add_session.run({"x": x + 1}, copy=False)
    np.testing.assert_array_equal(v, B.reshape(1, 16) + 1)  # the same memory, rewritten by the run


def test_views_keep_a_closed_session_alive(add_model):
    s = netrun.Session(add_model, backends="cpu", threads=1)
    v = s.run({"x": np.zeros((1, 16), np.float32)}, copy=False)["y"]
    s.close()
    assert s.closed
    del s
    np.testing.assert_array_equal(v, B.reshape(1, 16))  # memory freed only when v goes


def test_input_forms(add_session):
    want = (np.arange(16, dtype=np.float32) + B).reshape(1, 16)
    base = np.arange(32, dtype=np.float32).reshape(2, 16)
    for x in (np.arange(16, dtype=np.float32).reshape(1, 16),           # contiguous
              base[:, ::2].reshape(1, 16) * 0 + np.arange(16, dtype=np.float32),  # a copy made anyway
              np.arange(16, dtype=np.float32).reshape(16, 1).T,         # not C-contiguous: copied
              np.arange(16, dtype=">f4").reshape(1, 16),                # big-endian: copied
              np.arange(16, dtype=np.float32).reshape(1, 16).tolist()):  # a list takes the input's dtype
        np.testing.assert_array_equal(add_session.run({"x": x})["y"], want)
    ro = np.arange(16, dtype=np.float32).reshape(1, 16)
    ro.setflags(write=False)
    np.testing.assert_array_equal(add_session.run({"x": ro})["y"], want)


class HostTensor:
    """A DLPack producer on the host that is not a numpy array (like a CPU torch tensor)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_in_and_out(add_session):
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    y = add_session.run({"x": HostTensor(x)})["y"]
    np.testing.assert_array_equal(y, x + B)
    back = np.from_dlpack(y)  # outputs are numpy arrays: they export DLPack
    assert np.shares_memory(back, y)
    view = add_session.run({"x": x}, copy=False)["y"]
    np.testing.assert_array_equal(np.from_dlpack(view), x + B)  # read-only views export too (DLPack 1.0)


def test_symbolic_batch_and_set_dim(batch_model):
    with netrun.Session(batch_model, backends="cpu", threads=1) as s:
        for n in (1, 3, 2):
            x = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
            out = s.run({"x": x, "n": np.arange(n, dtype=np.int64)})
            np.testing.assert_array_equal(out["y"], 2 * x)
            np.testing.assert_array_equal(out["m"], np.arange(n) + 1)
            assert out["m"].dtype == np.int64
        s.set_dim("batch", 5)
        assert s.inputs[0].shape[0] == 5
        s.prepare()
        assert s.placement[0].op_type in ("Mul", "Add")


def test_prepare_placement_stats(add_session):
    with pytest.raises(netrun.StateError, match="not prepared"):
        add_session.placement
    add_session.prepare()
    pl = add_session.placement
    assert [p.op_type for p in pl] == ["Add", "Relu"] or len(pl) == 1  # Relu may be fused into Add
    assert all(p.backend == "cpu" and p.reason for p in pl)
    assert pl[0].inputs[0] == "x" and pl[-1].outputs[-1] in ("z", "y")
    for _ in range(3):
        add_session.run({"x": np.zeros((1, 16), np.float32)})
    st = add_session.stats
    assert st.runs == 3 and st.prepare_ms > 0 and st.last_run_ms >= 0 and st.weight_bytes >= 64
    images, note = add_session.micro_batch
    assert images == 0 and note.startswith("off")


def test_profile(add_session):
    x = np.zeros((1, 16), np.float32)
    with add_session.profile() as prof:
        add_session.run({"x": x})
        add_session.run({"x": x})
    kernels = [e for e in prof.events if not e.is_copy]
    assert kernels and {e.run for e in kernels} == {0, 1}
    assert all(e.backend == "cpu" and e.duration_ms >= 0 for e in kernels)
    assert "Add" in prof.by_op()
    add_session.run({"x": x})  # profiling is off again: no events kept from this run
    with add_session.profile() as again:
        pass
    assert again.events == []


def test_options_and_values(add_model):
    opts = {"debug.keep_values": "1", "graph.optimize": False}
    with netrun.Session(add_model, backends=["cpu"], threads=1, workspace="min-memory", workspace_limit=1 << 20,
                        memory_budget=1 << 30, strict=True, options=opts) as s:
        x = np.full((1, 16), -100, np.float32)
        s.run({"x": x})
        np.testing.assert_array_equal(s.value("y"), x + B)  # an intermediate value
        np.testing.assert_array_equal(s.value("b"), B)       # a constant


def test_read_tensor(tmp_path):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    np.save(tmp_path / "a.npy", a)
    for src in (tmp_path / "a.npy", (tmp_path / "a.npy").read_bytes()):
        name, got = netrun.read_tensor(src)
        assert name == "" and got.dtype == np.int64
        np.testing.assert_array_equal(got, a)


def test_gil_released_during_run():
    """Another Python thread runs while run() is inside the library. The switch interval is made huge, so the
    only way the other thread gets the GIL during the runs is that run() lets it go."""
    import sys
    import time
    from onnx import TensorProto, helper
    from conftest import make_model, vi
    nodes, prev = [], "x"  # a model that takes a while: 16 MatMuls of 256x256
    w = helper.make_tensor("w", TensorProto.FLOAT, [256, 256], np.eye(256, dtype=np.float32).ravel())
    for i in range(16):
        nodes.append(helper.make_node("MatMul", [prev, "w"], [f"h{i}"]))
        prev = f"h{i}"
    model = make_model(nodes, [vi("x", TensorProto.FLOAT, [256, 256])], [vi(prev, TensorProto.FLOAT, [256, 256])],
                       [w])
    s = netrun.Session(model, backends="cpu", threads=1, options={"graph.optimize": "0"})
    x = np.ones((256, 256), np.float32)
    s.prepare()
    ticks, seen, done = [0], [], threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0)  # hands the GIL back whenever run() wants it

    def runs():
        start = ticks[0]
        for _ in range(10):
            s.run({"x": x})
        seen.append(ticks[0] - start)
        done.set()
    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        b, a = threading.Thread(target=spin), threading.Thread(target=runs)
        b.start()
        a.start()
        a.join(60)
        done.set()
        b.join(60)
    finally:
        sys.setswitchinterval(old)
    assert seen and seen[0] > 0, "no Python ran in another thread during 10 runs: the GIL was held"


def test_activity_and_allow_fallback(add_model):
    with netrun.Session(add_model, backends="cpu", threads=1, allow_fallback=True) as s:
        assert s.activity.startswith("idle")
        s.run({"x": np.zeros((1, 16), np.float32)})
        assert s.activity.startswith("idle")  # with the last node it ran
    with pytest.raises(netrun.StateError, match="closed"):
        s.activity


def test_inputs_are_read_in_place():
    """A C-contiguous array of the input's dtype is bound, not copied: the session's host memory (the host budget's
    count) holds the output but not a second copy of a 16 MiB input; the array stays referenced, so it may go."""
    from conftest import make_model, vi
    from onnx import TensorProto, helper
    n = 4 << 20
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, [n])],
                       [vi("y", TensorProto.FLOAT, [n])])
    with netrun.Session(model, backends="cpu", threads=1) as s:
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        y = s.run({"x": x})[0]
        assert np.array_equal(y, np.maximum(x, 0))
        peak = s.stats.host_peak_bytes
        assert peak < 1.5 * x.nbytes, f"host peak {peak} bytes: the {x.nbytes}-byte input was copied"
        del x  # the session keeps what it reads alive
        y2 = s.run({"x": np.ones(n, np.float32)})[0]
        assert y2[0] == 1.0 and y2[-1] == 1.0
