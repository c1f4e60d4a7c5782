#!/usr/bin/env python3
"""Device memory inputs and outputs (netrun_session_bind_input_device / bind_output_device / output_device), the
caller's stream, run_async/wait and the host <-> device byte counts, on the fake device backend of tests/plugins
(fakedev: host memory behind handles that declares itself CUDA memory; its fakedev_alloc hands out the "device
memory", so host pointers are told apart). Outputs are compared with numpy.

    python3 tests/device_io/test_device_io.py --lib build/lib/libnetrun.so \\
        --plugin build/test-device-plugin/libnetrun-fakedev.so
"""
import ctypes as C
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devio_common import (DeviceView, ERR_ARG, ERR_STATE, ERR_UNSUPPORTED, MEM_CUDA, MEM_HOST, MEM_OPENCL, OK,
                          check, fakedev_main_setup, session_error, session_stats, verdict)  # noqa: E402

RNG = np.random.default_rng(11)


def build(path, host_tail=False, two_outputs=False):
    """x[64,128] -> MatMul W -> Relu -> y (every node on fakedev); host_tail: ... -> Sigmoid (CPU only) -> y;
    two_outputs: h (the MatMul's output) is an output too."""
    w = (RNG.standard_normal((128, 96)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["r" if host_tail else "y"], name="relu")]
    if host_tail:
        nodes.append(helper.make_node("Sigmoid", ["r"], ["y"], name="sig"))
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 96])]
    if two_outputs:
        outs.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [64, 96]))
    g = helper.make_graph(nodes, "devio", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 128])], outs,
                          [numpy_helper.from_array(w, "W")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return w


def build_host_input(path):
    """x -> Sigmoid (CPU only) -> MatMul W (fakedev) -> y: a device input read on the host."""
    w = (RNG.standard_normal((128, 96)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
             helper.make_node("MatMul", ["s", "W"], ["y"], name="mm")]
    g = helper.make_graph(nodes, "devio_host", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 128])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 96])],
                          [numpy_helper.from_array(w, "W")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return w


def main():
    # lib: a handle of our own: nr.lib's declarations stay as they are
    nr, lib, SessionStats, plugin = fakedev_main_setup()
    vp = C.c_void_p
    # the plugin as netrun loads it (same path: the same handle, so the same block table)
    fd = C.CDLL(os.path.join(plugin, "libnetrun-fakedev.so") if os.path.isdir(plugin) else plugin)
    fd.fakedev_alloc.restype, fd.fakedev_alloc.argtypes = vp, [C.c_size_t]
    fd.fakedev_free.restype, fd.fakedev_free.argtypes = None, [vp]
    fd.fakedev_last_stream.restype = vp

    tmp = tempfile.mkdtemp(prefix="nr_devio_")
    path = os.path.join(tmp, "devio.onnx")
    w = build(path)
    relu = lambda v: np.maximum(v, 0)  # noqa: E731

    def dev_array(arr):
        p = fd.fakedev_alloc(arr.nbytes)
        assert p
        C.memmove(p, arr.ctypes.data, arr.nbytes)
        return p

    def dev_read(p, shape):
        out = np.empty(shape, np.float32)
        C.memmove(out.ctypes.data, p, out.nbytes)
        return out

    def bind_in(s, p, nbytes, mem=MEM_CUDA, device=0, dims=(64, 128)):
        d = (C.c_int64 * 2)(*dims)
        return lib.netrun_session_bind_input_device(s.handle, b"x", 1, 2, d, mem, device, p, nbytes)

    def stats(s):
        return session_stats(nr, lib, s, SessionStats)

    def err(s):
        return session_error(lib, s)

    x1 = RNG.standard_normal((64, 128)).astype(np.float32)
    x2 = RNG.standard_normal((64, 128)).astype(np.float32)
    want1, want2 = relu(x1 @ w), relu(x2 @ w)
    px1, px2 = dev_array(x1), dev_array(x2)
    py1, py2 = fd.fakedev_alloc(want1.nbytes), fd.fakedev_alloc(want1.nbytes)

    # 1. all on the device, input and output bound: read and written in place, no host <-> device bytes
    with nr.session(path, "fakedev,cpu", 1, {}) as s:
        nr.check(bind_in(s, px1, x1.nbytes), "bind x")
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, py1, want1.nbytes), "bind y")
        for run in range(3):  # run 2 captures the graph, run 3 replays it
            nr.check(lib.netrun_session_run(s.handle), "run")
            err1 = float(np.max(np.abs(dev_read(py1, want1.shape) - want1)))
            st = stats(s)
            check(err1 < 1e-4 and st.h2d_bytes == 0 and st.d2h_bytes == 0 and st.d2d_bytes == 0 and
                  st.n_outputs_in_place == 1,
                  f"run {run + 1}: device in/out: output matches (err {err1:.1e}), 0 bytes host<->device "
                  f"(h2d {st.h2d_bytes}, d2h {st.d2h_bytes}, d2d {st.d2d_bytes}), "
                  f"written in place ({st.n_outputs_in_place})")
        check(st.n_graphs >= 1, f"a device graph was captured ({st.n_graphs})")
        # 2. new pointers between runs: the captured graph must not replay the old ones
        nr.check(bind_in(s, px2, x2.nbytes), "rebind x")
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, py2, want1.nbytes), "rebind y")
        nr.check(lib.netrun_session_run(s.handle), "run after rebind")
        st = stats(s)
        e2 = float(np.max(np.abs(dev_read(py2, want2.shape) - want2)))
        old = float(np.max(np.abs(dev_read(py1, want1.shape) - want1)))
        check(e2 < 1e-4 and old < 1e-4 and st.graph_recaptures >= 1 and st.n_graphs >= 1,
              f"pointer change: new buffers used (err {e2:.1e}), the old output untouched, graph captured again "
              f"({st.graph_recaptures} recaptures)")
        nr.check(lib.netrun_session_run(s.handle), "replay")
        check(stats(s).graph_recaptures == st.graph_recaptures and
              float(np.max(np.abs(dev_read(py2, want2.shape) - want2))) < 1e-4, "same pointers: replayed, no recapture")
        dv = DeviceView()
        nr.check(lib.netrun_session_output_device(s.handle, 0, C.byref(dv)), "output_device")
        check(dv.data == py2 and dv.memory_type == MEM_CUDA and dv.nbytes == want1.nbytes,
              "output_device gives the caller's buffer")
        # 3. async: other calls are refused until wait
        nr.check(lib.netrun_session_set_stream(s.handle, MEM_CUDA, 0x1234), "set_stream")
        nr.check(lib.netrun_session_run_async(s.handle), "run_async")
        rc = lib.netrun_session_run(s.handle)
        check(rc == ERR_STATE and "netrun_session_wait" in err(s), f"run while an async run is in flight: {err(s)}")
        nr.check(lib.netrun_session_wait(s.handle), "wait")
        check(fd.fakedev_last_stream() == 0x1234, "the backend queues on the caller's stream")
        check(float(np.max(np.abs(dev_read(py2, want2.shape) - want2))) < 1e-4 and stats(s).runs >= 6,
              "async run: output ready after wait, counted as a run")
        check(lib.netrun_session_wait(s.handle) == OK, "wait with nothing in flight: OK")
        # 4. back to host memory for the input: prepared again, host bytes counted
        s.set_inputs({"x": x1})
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_HOST, 0, None, 0), "unbind y")
        y = s.run({"x": x1})[0]
        st = stats(s)
        check(float(np.max(np.abs(y - want1))) < 1e-4 and st.h2d_bytes == x1.nbytes and st.d2h_bytes == want1.nbytes,
              f"host in/out again: h2d {st.h2d_bytes} = x, d2h {st.d2h_bytes} = y")

    # 5. output left in the session's device memory (data NULL), read through output_device
    with nr.session(path, "fakedev,cpu", 1, {}) as s:
        nr.check(bind_in(s, px1, x1.nbytes), "bind x")
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, None, 0), "y on device")
        nr.check(lib.netrun_session_run(s.handle), "run")
        dv = DeviceView()
        nr.check(lib.netrun_session_output_device(s.handle, 0, C.byref(dv)), "output_device")
        st = stats(s)
        got = dev_read(dv.data, want1.shape)
        check(dv.memory_type == MEM_CUDA and float(np.max(np.abs(got - want1))) < 1e-4 and st.d2h_bytes == 0,
              f"session-owned device output: right values, 0 bytes to the host ({st.d2h_bytes})")
        tv = (C.c_byte * 256)()
        rc = lib.netrun_session_output(s.handle, 0, C.cast(tv, vp))
        check(rc == ERR_STATE and "netrun_session_output_device" in err(s), f"host read of a device output: {err(s)}")

    # 6. output copied at the end (memory.bound_in_place=0), and a second output: device-to-device copies
    path2 = os.path.join(tmp, "devio2.onnx")
    w2 = build(path2, two_outputs=True)
    h_want = x1 @ w2
    ph = fd.fakedev_alloc(h_want.nbytes)
    with nr.session(path2, "fakedev,cpu", 1, {"memory.bound_in_place": "0"}) as s:
        nr.check(bind_in(s, px1, x1.nbytes), "bind x")
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, py1, h_want.nbytes), "bind y")
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"h", MEM_CUDA, 0, ph, h_want.nbytes), "bind h")
        nr.check(lib.netrun_session_run(s.handle), "run")
        st = stats(s)
        ey = float(np.max(np.abs(dev_read(py1, h_want.shape) - relu(h_want))))
        eh = float(np.max(np.abs(dev_read(ph, h_want.shape) - h_want)))
        check(ey < 1e-4 and eh < 1e-4 and st.d2d_bytes == 2 * h_want.nbytes and st.n_outputs_in_place == 0 and
              st.h2d_bytes == 0 and st.d2h_bytes == 0,
              f"outputs copied device to device ({st.d2d_bytes} B), none in place, no host bytes")

    # 7. a device input read by a CPU node: copied to the host (counted); the device tail still reads it in place
    path3 = os.path.join(tmp, "devio3.onnx")
    w3 = build_host_input(path3)
    with nr.session(path3, "fakedev,cpu", 1, {}) as s:
        nr.check(bind_in(s, px1, x1.nbytes), "bind x")
        nr.check(lib.netrun_session_run(s.handle), "run")
        y = s.outputs()[0]
        st = stats(s)
        want3 = (1 / (1 + np.exp(-x1))) @ w3
        err3 = float(np.max(np.abs(y - want3)))
        check(err3 < 1e-4 and st.d2h_bytes == x1.nbytes + want3.nbytes and st.h2d_bytes == x1.nbytes,
              f"device input read by a CPU node: copied to the host and counted (d2h {st.d2h_bytes} = x + y, "
              f"h2d {st.h2d_bytes} = sigmoid(x)), output matches (err {err3:.1e})")

    # 8. misuse: each a clear status naming the input or output
    with nr.session(path, "cpu", 1, {}) as s:
        rc = bind_in(s, px1, x1.nbytes)
        check(rc == ERR_UNSUPPORTED and "input 'x'" in err(s) and "no backend" in err(s),
              f"CUDA memory with no backend serving it: {err(s)}")
        rc = lib.netrun_session_set_stream(s.handle, MEM_CUDA, 0x1234)
        check(rc == ERR_UNSUPPORTED, f"a CUDA stream with no backend serving it: {err(s)}")
        check(bind_in(s, px1, x1.nbytes, mem=MEM_OPENCL) == ERR_UNSUPPORTED, "OpenCL memory on a CPU session")
    with nr.session(path, "fakedev,cpu", 1, {}) as s:
        rc = bind_in(s, x1.ctypes.data, x1.nbytes)
        check(rc == ERR_ARG and "input 'x'" in err(s) and "host pointer" in err(s),
              f"host pointer as device memory: {err(s)}")
        rc = bind_in(s, px1, x1.nbytes, device=1)
        check(rc == ERR_ARG and "device 1" in err(s), f"wrong device: {err(s)}")
        small = fd.fakedev_alloc(1024)
        rc = bind_in(s, small, x1.nbytes)
        check(rc == ERR_ARG and "1024 bytes" in err(s), f"too small an input buffer: {err(s)}")
        rc = bind_in(s, px1, x1.nbytes - 4)
        check(rc == ERR_ARG, f"nbytes that do not match the shape: {err(s)}")
        rc = lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, small, 1024)
        nr.check(bind_in(s, px1, x1.nbytes), "bind x")
        rc2 = lib.netrun_session_run(s.handle) if rc == OK else -1
        check(rc == OK and rc2 == ERR_ARG and "output 'y'" in err(s) and "1024" in err(s),
              f"too small an output buffer fails the run: {err(s)}")
        rc = lib.netrun_session_bind_output_device(s.handle, b"nope", MEM_CUDA, 0, py1, want1.nbytes)
        check(rc == ERR_ARG and "nope" in err(s), f"unknown output: {err(s)}")
        rc = lib.netrun_session_bind_output_device(s.handle, b"y", MEM_HOST, 0, py1, want1.nbytes)
        check(rc == ERR_ARG, f"host type with a buffer: {err(s)}")
        fd.fakedev_free(small)

    # 9. netrun_session_get_stats writes the 0.7 struct only (older callers pass that size)
    with nr.session(path, "cpu", 1, {}) as s:
        s.run({"x": x1})
        full = C.sizeof(SessionStats)
        buf = (C.c_ubyte * (full + 16))(*([0xAB] * (full + 16)))
        nr.check(lib.netrun_session_get_stats(s.handle, buf), "get_stats")
        old = SessionStats.h2d_bytes.offset
        check(all(b == 0xAB for b in bytes(buf)[old:]), f"get_stats writes {old} bytes, none of the 0.8 fields")
        buf2 = (C.c_ubyte * (full + 16))(*([0xAB] * (full + 16)))
        nr.check(lib.netrun_session_get_stats_ex(s.handle, buf2, 40), "get_stats_ex small")
        check(all(b == 0xAB for b in bytes(buf2)[40:]), "get_stats_ex writes at most the size given")

    for p in (px1, px2, py1, py2, ph):
        fd.fakedev_free(p)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
