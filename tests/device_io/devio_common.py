"""What the device-I/O tests share: the record of their checks, netrun_device_view, and the device calls of the
C API declared on a ctypes handle of libnetrun of their own (tools/bench/netrun_ctypes.py keeps its own)."""
import ctypes as C

MEM_HOST, MEM_CUDA, MEM_OPENCL = 0, 1, 2
OK, ERR_ARG, ERR_UNSUPPORTED, ERR_STATE = 0, 1, 3, 7
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def verdict():
    """The exit code: 1 when a check failed."""
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


class DeviceView(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int), ("dims", C.c_int64 * 8),
                ("data", C.c_void_p), ("offset", C.c_size_t), ("nbytes", C.c_size_t), ("memory_type", C.c_int),
                ("device", C.c_int)]


def device_api(lib_path):
    """A ctypes handle of libnetrun with the calls these tests make declared."""
    import os
    lib = C.CDLL(os.path.abspath(lib_path))
    vp, i64p = C.c_void_p, C.POINTER(C.c_int64)
    for name, res, args in [
            ("netrun_backend_find", C.c_int, [C.c_char_p, vp]),
            ("netrun_session_bind_input_device", C.c_int, [vp, C.c_char_p, C.c_int, C.c_int, i64p, C.c_int, C.c_int, vp,
                                                           C.c_size_t]),
            ("netrun_session_bind_output_device", C.c_int, [vp, C.c_char_p, C.c_int, C.c_int, vp, C.c_size_t]),
            ("netrun_session_output_device", C.c_int, [vp, C.c_int, C.POINTER(DeviceView)]),
            ("netrun_session_output", C.c_int, [vp, C.c_int, vp]),
            ("netrun_session_set_stream", C.c_int, [vp, C.c_int, vp]),
            ("netrun_session_run", C.c_int, [vp]), ("netrun_session_run_async", C.c_int, [vp]),
            ("netrun_session_wait", C.c_int, [vp]), ("netrun_session_error", C.c_char_p, [vp]),
            ("netrun_session_get_stats", C.c_int, [vp, vp]),
            ("netrun_session_get_stats_ex", C.c_int, [vp, vp, C.c_size_t])]:
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def session_stats(nr, lib, s, SessionStats):
    st = SessionStats()
    nr.check(lib.netrun_session_get_stats_ex(s.handle, C.byref(st), C.sizeof(st)), "stats")
    return st


def session_error(lib, s):
    return (lib.netrun_session_error(s.handle) or b"").decode()


def fakedev_main_setup():
    """The start of a fake-device test's main(): --lib and --plugin parsed, the plugin put on the backend path, and
    (the netrun_ctypes wrapper, this module's ctypes handle, netrun_ctypes.SessionStats, the plugin's path)
    returned."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
    from netrun_ctypes import Netrun, SessionStats, plugin_test_args
    a = plugin_test_args()
    return Netrun(a.lib), device_api(a.lib), SessionStats, a.plugin
