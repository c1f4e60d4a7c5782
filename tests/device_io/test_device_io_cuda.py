#!/usr/bin/env python3
"""Device memory inputs and outputs on a real CUDA device (GPU stage "devio" of tools/gpu/run-gpu-tests.sh; skips,
exit 77, without a GPU): memory from cudaMalloc through ctypes, a ResNet-like model all on the cuda backend.

Checks: outputs bound in device memory equal the host path; host <-> device bytes 0 per run; the caller's stream
(cudaStreamCreate) used, with run_async + wait; pointer changes with CUDA Graphs on (new buffers every run for a few
runs, each result right, graphs captured again); the copy path (memory.bound_in_place=0, device to device); a
session-owned device output (output_device); a device input read by a CPU node (copied and counted); misuse: a host
pointer, page-locked host memory, device index 1 on a one-device session, a cudaMalloc too small for the tensor, an
output buffer too small.

    python3 tests/device_io/test_device_io_cuda.py --lib build/lib/libnetrun.so
"""
import argparse
import ctypes as C
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devio_common import (DeviceView, ERR_ARG, MEM_CUDA, check, device_api, session_error,  # noqa: E402
                          session_stats, verdict)


def cudart():
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so"):
        try:
            return C.CDLL(name)
        except OSError:
            pass
    return None


def resnet_like(path, n=4):
    """conv-bn-relu stem, two residual blocks (conv-bn-relu-conv-bn + skip, relu), global pool, Gemm: every op
    the cuda backend runs."""
    r = np.random.default_rng(2)
    inits, nodes = [], []

    def conv(x, cin, cout, name, relu=True):
        w = (r.standard_normal((cout, cin, 3, 3)) * np.sqrt(2 / (9 * cin))).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, name + "_w"),
                      numpy_helper.from_array((r.standard_normal(cout) * 0.1).astype(np.float32), name + "_b"),
                      numpy_helper.from_array((1 + 0.1 * r.standard_normal(cout)).astype(np.float32), name + "_g"),
                      numpy_helper.from_array((0.1 * r.standard_normal(cout)).astype(np.float32), name + "_be"),
                      numpy_helper.from_array((0.1 * r.standard_normal(cout)).astype(np.float32), name + "_m"),
                      numpy_helper.from_array((1 + 0.1 * np.abs(r.standard_normal(cout))).astype(np.float32),
                                              name + "_v")])
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name + "_c"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("BatchNormalization", [name + "_c", name + "_g", name + "_be", name + "_m",
                                                             name + "_v"], [name + "_n"]))
        if not relu:
            return name + "_n"
        nodes.append(helper.make_node("Relu", [name + "_n"], [name + "_r"]))
        return name + "_r"

    x = conv("x", 3, 32, "stem")
    for b in range(2):
        h = conv(x, 32, 32, f"b{b}a")
        h = conv(h, 32, 32, f"b{b}b", relu=False)
        nodes.append(helper.make_node("Add", [h, x], [f"b{b}_add"]))
        nodes.append(helper.make_node("Relu", [f"b{b}_add"], [f"b{b}_out"]))
        x = f"b{b}_out"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    inits.append(numpy_helper.from_array((r.standard_normal((32, 10)) * 0.2).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(10, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"]))
    g = helper.make_graph(nodes, "resnet_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, 10])], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    cu = cudart()
    n_dev = C.c_int(0)
    if cu is None or cu.cudaGetDeviceCount(C.byref(n_dev)) != 0 or n_dev.value < 1:
        print("SKIP: no CUDA runtime or device")
        return 77
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
    from netrun_ctypes import Netrun, SessionStats

    nr = Netrun(a.lib)
    lib = device_api(a.lib)  # a handle of our own: nr.lib's declarations stay as they are
    vp = C.c_void_p
    cu.cudaMalloc.argtypes = [C.POINTER(vp), C.c_size_t]
    cu.cudaFree.argtypes = [vp]
    cu.cudaMemcpy.argtypes = [vp, vp, C.c_size_t, C.c_int]
    cu.cudaMemcpyAsync.argtypes = [vp, vp, C.c_size_t, C.c_int, vp]
    cu.cudaStreamCreate.argtypes = [C.POINTER(vp)]
    cu.cudaStreamSynchronize.argtypes = [vp]
    cu.cudaMallocHost.argtypes = [C.POINTER(vp), C.c_size_t]
    cu.cudaFreeHost.argtypes = [vp]
    H2D, D2H = 1, 2

    def dmalloc(nbytes):
        p = vp()
        assert cu.cudaMalloc(C.byref(p), nbytes) == 0
        return p.value

    def upload(arr):
        p = dmalloc(arr.nbytes)
        assert cu.cudaMemcpy(p, arr.ctypes.data, arr.nbytes, H2D) == 0
        return p

    def download(p, shape):
        out = np.empty(shape, np.float32)
        assert cu.cudaMemcpy(out.ctypes.data, p, out.nbytes, D2H) == 0
        return out

    def stats(s):
        return session_stats(nr, lib, s, SessionStats)

    def err(s):
        return session_error(lib, s)

    def bind_in(s, p, nbytes, dims, device=0):
        d = (C.c_int64 * len(dims))(*dims)
        return lib.netrun_session_bind_input_device(s.handle, b"x", 1, len(dims), d, MEM_CUDA, device, p, nbytes)

    tmp = tempfile.mkdtemp(prefix="nr_devio_cuda_")
    path = os.path.join(tmp, "resnet_like.onnx")
    N = 4
    resnet_like(path, N)
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((N, 3, 32, 32)).astype(np.float32) for _ in range(4)]
    with nr.session(path, "cuda", 1, {}) as h:
        wants = [h.run({"x": x})[0].copy() for x in xs]
        hst = h.stats()
        print(f"host path: h2d {hst.h2d_bytes} B, d2h {hst.d2h_bytes} B per run "
              f"(x {xs[0].nbytes} B, y {wants[0].nbytes} B)")
        check(hst.h2d_bytes == xs[0].nbytes and hst.d2h_bytes == wants[0].nbytes,
              "host I/O: the input goes to the device and the output comes back, and the stats say so")
    dims = (N, 3, 32, 32)
    px = [upload(x) for x in xs]
    py = [dmalloc(wants[0].nbytes) for _ in xs]
    stream = vp()
    assert cu.cudaStreamCreate(C.byref(stream)) == 0

    with nr.session(path, "cuda", 1, {}) as s:
        nr.check(lib.netrun_session_set_stream(s.handle, MEM_CUDA, stream), "set_stream")
        nr.check(bind_in(s, px[0], xs[0].nbytes, dims), "bind x")
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, py[0], wants[0].nbytes), "bind y")
        for run in range(4):
            nr.check(lib.netrun_session_run_async(s.handle), "run_async")
            nr.check(lib.netrun_session_wait(s.handle), "wait")
            e = float(np.max(np.abs(download(py[0], wants[0].shape) - wants[0])))
            st = stats(s)
            check(e < 1e-4 and st.h2d_bytes == 0 and st.d2h_bytes == 0,
                  f"run {run + 1} on the caller's stream: matches the host path (err {e:.1e}), PCIe bytes "
                  f"{st.h2d_bytes}+{st.d2h_bytes}, in place {st.n_outputs_in_place}, graphs {st.n_graphs}")
        check(st.n_graphs >= 1 and st.n_outputs_in_place == 1, "CUDA graph captured; output written in place")
        # pointer changes with CUDA Graphs on: every run new buffers
        for i in range(1, 4):
            nr.check(bind_in(s, px[i], xs[i].nbytes, dims), "rebind x")
            nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, py[i], wants[0].nbytes),
                     "rebind y")
            nr.check(lib.netrun_session_run(s.handle), "run")
            e = float(np.max(np.abs(download(py[i], wants[i].shape) - wants[i])))
            check(e < 1e-4, f"pointer change {i}: frame {i} right (err {e:.1e})")
        st = stats(s)
        check(st.graph_recaptures >= 3, f"graphs captured again after each change ({st.graph_recaptures})")
        e0 = float(np.max(np.abs(download(py[0], wants[0].shape) - wants[0])))
        check(e0 < 1e-4, "the first output buffer was not written after it was unbound (no stale pointer)")
        # session-owned device output
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, None, 0), "y on device")
        nr.check(lib.netrun_session_run(s.handle), "run")
        view = DeviceView()
        nr.check(lib.netrun_session_output_device(s.handle, 0, C.byref(view)), "output_device")
        data = view.data
        e = float(np.max(np.abs(download(data, wants[3].shape) - wants[3])))
        check(e < 1e-4 and stats(s).d2h_bytes == 0, f"session-owned device output readable (err {e:.1e}), no D2H")

    with nr.session(path, "cuda", 1, {"memory.bound_in_place": "0"}) as s:
        nr.check(bind_in(s, px[1], xs[1].nbytes, dims), "bind x")
        nr.check(lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, py[0], wants[0].nbytes), "bind y")
        nr.check(lib.netrun_session_run(s.handle), "run")
        st = stats(s)
        e = float(np.max(np.abs(download(py[0], wants[1].shape) - wants[1])))
        check(e < 1e-4 and st.d2d_bytes == wants[1].nbytes and st.h2d_bytes == 0,
              f"copy path: one device-to-device copy ({st.d2d_bytes} B), right values")

    # misuse
    with nr.session(path, "cuda", 1, {}) as s:
        host = np.zeros(dims, np.float32)
        rc = bind_in(s, host.ctypes.data, host.nbytes, dims)
        check(rc == ERR_ARG and "input 'x'" in err(s) and "host pointer" in err(s), f"host pointer: {err(s)}")
        pinned = vp()
        assert cu.cudaMallocHost(C.byref(pinned), host.nbytes) == 0
        rc = bind_in(s, pinned.value, host.nbytes, dims)
        check(rc == ERR_ARG and "page-locked" in err(s), f"page-locked host memory: {err(s)}")
        cu.cudaFreeHost(pinned)
        rc = bind_in(s, px[0], xs[0].nbytes, dims, device=1)
        check(rc == ERR_ARG and "device 1" in err(s), f"wrong device index: {err(s)}")
        small = dmalloc(1024)
        rc = bind_in(s, small, xs[0].nbytes, dims)
        check(rc == ERR_ARG and "holds" in err(s), f"a cudaMalloc too small for the input: {err(s)}")
        nr.check(bind_in(s, px[0], xs[0].nbytes, dims), "bind x")
        rc = lib.netrun_session_bind_output_device(s.handle, b"y", MEM_CUDA, 0, small, 64)  # y takes 160 bytes
        rc2 = lib.netrun_session_run(s.handle)
        check((rc == ERR_ARG or rc2 == ERR_ARG) and "output 'y'" in err(s), f"an output buffer too small: {err(s)}")
        cu.cudaFree(small)

    for p in px + py:
        cu.cudaFree(p)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
