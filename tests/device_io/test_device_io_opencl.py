#!/usr/bin/env python3
"""Device memory inputs and outputs on the OpenCL backend (cl_mem and the caller's command queue), run in CI on the
CPU through PoCL (exit 77, skipped, without an OpenCL device): a session's output left in its device memory is read
as a cl_mem (netrun_session_output_device), whose context (netrun's for the device) the test uses to make its own
buffers and in-order queue; a second session reads and writes those buffers in place on that queue. Outputs are
compared with the host path; misuse (host memory given as a cl_mem, a cl_mem too small, a queue of another
context) is a clear error.

    python3 tests/device_io/test_device_io_opencl.py --lib build/lib/libnetrun.so
"""
import argparse
import ctypes as C
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devio_common import (DeviceView, ERR_ARG, MEM_OPENCL, check, device_api, session_error,  # noqa: E402
                          session_stats, verdict)

CL_MEM_CONTEXT, CL_MEM_SIZE, CL_CONTEXT_DEVICES = 0x1106, 0x1102, 0x1081
CL_MEM_READ_WRITE = 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
    from netrun_ctypes import Netrun, SessionStats

    nr = Netrun(a.lib)
    lib = device_api(a.lib)  # a handle of our own: nr.lib's declarations stay as they are
    vp = C.c_void_p
    info = (C.c_char * 256)()
    idx = lib.netrun_backend_find(b"opencl", info)
    available = idx >= 0 and C.c_int.from_buffer(info, 16).value  # name, path, then int available
    if not available:
        print("SKIP: the opencl backend is not available here")
        return 77
    try:
        cl = C.CDLL("libOpenCL.so.1")
    except OSError:
        print("SKIP: no libOpenCL.so.1")
        return 77
    cl.clGetMemObjectInfo.argtypes = [vp, C.c_uint, C.c_size_t, vp, vp]
    cl.clGetContextInfo.argtypes = [vp, C.c_uint, C.c_size_t, vp, vp]
    cl.clCreateCommandQueue.restype, cl.clCreateCommandQueue.argtypes = vp, [vp, vp, C.c_uint64, C.POINTER(C.c_int)]
    cl.clCreateBuffer.restype, cl.clCreateBuffer.argtypes = vp, [vp, C.c_uint64, C.c_size_t, vp, C.POINTER(C.c_int)]
    cl.clEnqueueWriteBuffer.argtypes = [vp, vp, C.c_uint, C.c_size_t, C.c_size_t, vp, C.c_uint, vp, vp]
    cl.clEnqueueReadBuffer.argtypes = [vp, vp, C.c_uint, C.c_size_t, C.c_size_t, vp, C.c_uint, vp, vp]
    cl.clCreateContext.restype = vp
    cl.clCreateContext.argtypes = [vp, C.c_uint, C.POINTER(vp), vp, vp, C.POINTER(C.c_int)]
    for f in ("clReleaseMemObject", "clReleaseCommandQueue", "clReleaseContext", "clFinish"):
        getattr(cl, f).argtypes = [vp]

    def stats(s):
        return session_stats(nr, lib, s, SessionStats)

    def err(s):
        return session_error(lib, s)

    rng = np.random.default_rng(8)
    w = (rng.standard_normal((32, 24)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 24])],
                          [numpy_helper.from_array(w, "W")])
    path = os.path.join(tempfile.mkdtemp(prefix="nr_devio_ocl_"), "mlp.onnx")
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    want = np.maximum(x @ w, 0)
    dims = (C.c_int64 * 2)(16, 32)

    with nr.session(path, "opencl", 1, {}) as a, nr.session(path, "opencl", 1, {}) as b:
        # session a: its output left in device memory, read as a cl_mem
        nr.check(lib.netrun_session_bind_output_device(a.handle, b"y", MEM_OPENCL, 0, None, 0), "y on device")
        a.set_inputs({"x": x})
        nr.check(lib.netrun_session_run(a.handle), "run a")
        v = DeviceView()
        nr.check(lib.netrun_session_output_device(a.handle, 0, C.byref(v)), "output_device")
        check(v.memory_type == MEM_OPENCL and v.data and v.nbytes == want.nbytes,
              f"output_device: a cl_mem (offset {v.offset}), {v.nbytes} bytes")
        ctx, dev = vp(), vp()
        assert cl.clGetMemObjectInfo(v.data, CL_MEM_CONTEXT, C.sizeof(ctx), C.byref(ctx), None) == 0
        assert cl.clGetContextInfo(ctx, CL_CONTEXT_DEVICES, C.sizeof(dev), C.byref(dev), None) == 0
        e = C.c_int(0)
        q = cl.clCreateCommandQueue(ctx, dev, 0, C.byref(e))
        assert e.value == 0 and q
        got = np.empty_like(want)
        assert cl.clEnqueueReadBuffer(q, v.data, 1, v.offset, got.nbytes, got.ctypes.data, 0, None, None) == 0
        check(float(np.max(np.abs(got - want))) < 1e-4 and stats(a).d2h_bytes == 0,
              "the session-owned device output holds the result, and nothing came back to the host")
        # session b: the caller's buffers and queue, in netrun's context
        bx = cl.clCreateBuffer(ctx, CL_MEM_READ_WRITE, x.nbytes, None, C.byref(e))
        by = cl.clCreateBuffer(ctx, CL_MEM_READ_WRITE, want.nbytes, None, C.byref(e))
        assert cl.clEnqueueWriteBuffer(q, bx, 1, 0, x.nbytes, x.ctypes.data, 0, None, None) == 0
        nr.check(lib.netrun_session_set_stream(b.handle, MEM_OPENCL, q), "set_stream")
        nr.check(lib.netrun_session_bind_input_device(b.handle, b"x", 1, 2, dims, MEM_OPENCL, 0, bx, x.nbytes),
                 "bind x")
        nr.check(lib.netrun_session_bind_output_device(b.handle, b"y", MEM_OPENCL, 0, by, want.nbytes), "bind y")
        for run in range(2):
            nr.check(lib.netrun_session_run(b.handle), "run b")
            got = np.zeros_like(want)
            assert cl.clEnqueueReadBuffer(q, by, 1, 0, got.nbytes, got.ctypes.data, 0, None, None) == 0
            st = stats(b)
            check(float(np.max(np.abs(got - want))) < 1e-4 and st.h2d_bytes == 0 and st.d2h_bytes == 0,
                  f"run {run + 1}: cl_mem in and out on the caller's queue: matches, 0 bytes host<->device "
                  f"(in place: {st.n_outputs_in_place})")
        # misuse
        rc = lib.netrun_session_bind_input_device(b.handle, b"x", 1, 2, dims, MEM_OPENCL, 0, x.ctypes.data, x.nbytes)
        check(rc == ERR_ARG and "input 'x'" in err(b) and "not an OpenCL memory object" in err(b),
              f"host memory given as a cl_mem: {err(b)}")
        small = cl.clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, None, C.byref(e))
        rc = lib.netrun_session_bind_input_device(b.handle, b"x", 1, 2, dims, MEM_OPENCL, 0, small, x.nbytes)
        check(rc == ERR_ARG and "holds 64 bytes" in err(b), f"a cl_mem too small: {err(b)}")
        ctx2 = cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(e))
        q2 = cl.clCreateCommandQueue(ctx2, dev, 0, C.byref(e))
        rc = lib.netrun_session_set_stream(b.handle, MEM_OPENCL, q2)
        check(rc == ERR_ARG and "another context" in err(b), f"a queue of another context: {err(b)}")
        other = cl.clCreateBuffer(ctx2, CL_MEM_READ_WRITE, x.nbytes, None, C.byref(e))
        rc = lib.netrun_session_bind_input_device(b.handle, b"x", 1, 2, dims, MEM_OPENCL, 0, other, x.nbytes)
        check(rc == ERR_ARG and "another cl_context" in err(b), f"a cl_mem of another context: {err(b)}")
        nr.check(lib.netrun_session_set_stream(b.handle, MEM_OPENCL, None), "own queue again")
        nr.check(lib.netrun_session_run(b.handle), "run b on its own queue")
        for m in (bx, by, small, other):
            cl.clReleaseMemObject(m)
        cl.clReleaseCommandQueue(q2)
        cl.clReleaseContext(ctx2)
        cl.clFinish(q)
    cl.clReleaseCommandQueue(q)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
