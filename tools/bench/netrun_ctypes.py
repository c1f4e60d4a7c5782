"""A small ctypes binding of include/netrun.h: load a model, make a CPU session, set inputs, run, read outputs.

    nr = Netrun("build/lib/libnetrun.so")
    with nr.session("model.onnx", backends="cpu", threads=2, options={"graph.optimize": "0"}) as s:
        y = s.run({"input": x})[0]
"""
import ctypes as C
import os

import numpy as np

MAX_RANK = 8

_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
           9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
_NP_TO_DT = {np.dtype(v): k for k, v in _DTYPES.items()}


def plugin_test_args(description=None):
    """--lib and --plugin of a test that loads a plugin backend (the fake device of tests/plugins), parsed, with the
    plugin put on NETRUN_BACKEND_PATH before netrun loads its backends."""
    import argparse
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--plugin", required=True)
    a = ap.parse_args()
    os.environ["NETRUN_BACKEND_PATH"] = ":".join(p for p in (os.environ.get("NETRUN_BACKEND_PATH"), a.plugin) if p)
    return a


class TensorView(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int), ("dims", C.c_int64 * MAX_RANK),
                ("data", C.c_void_p), ("nbytes", C.c_size_t)]


class NodeInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("op_type", C.c_char_p), ("backend", C.c_char_p), ("reason", C.c_char_p),
                ("kernel", C.c_char_p), ("workspace_bytes", C.c_size_t)]


class SessionStats(C.Structure):
    """netrun_session_stats, as include/netrun.h lays it out (fields appended at the end over time)."""
    _fields_ = [("prepare_ms", C.c_double), ("init_ms", C.c_double), ("first_run_ms", C.c_double),
                ("last_run_ms", C.c_double), ("runs", C.c_uint64), ("arena_bytes", C.c_size_t),
                ("weight_bytes", C.c_size_t), ("workspace_bytes", C.c_size_t), ("n_copies", C.c_int),
                ("copy_bytes", C.c_size_t), ("n_folded", C.c_int), ("device_peak_bytes", C.c_size_t),
                ("n_graphs", C.c_int), ("n_segments", C.c_int), ("n_bn_folded", C.c_int), ("n_act_fused", C.c_int),
                ("n_sum_fused", C.c_int), ("n_nodes_dropped", C.c_int), ("n_swish_fused", C.c_int),
                ("n_nchwc_convs", C.c_int), ("n_nchwc_reorders", C.c_int), ("n_inplace", C.c_int),
                ("n_views", C.c_int), ("n_fp16_convs", C.c_int), ("n_fp16_converts", C.c_int),
                ("stream_bytes", C.c_size_t), ("micro_batch", C.c_int), ("prepares", C.c_uint64),
                ("host_peak_bytes", C.c_size_t), ("host_memory_budget", C.c_size_t), ("profile_dropped", C.c_uint64),
                ("n_attention_fused", C.c_int), ("n_layernorm_fused", C.c_int), ("n_gelu_fused", C.c_int),
                ("h2d_bytes", C.c_size_t), ("d2h_bytes", C.c_size_t), ("d2d_bytes", C.c_size_t),
                ("n_outputs_in_place", C.c_int), ("graph_recaptures", C.c_uint64),
                ("n_fp16_nodes", C.c_int), ("n_fp16_casts", C.c_int),
                ("_reserve", C.c_char * 256)]


class NetrunError(RuntimeError):
    pass


class Netrun:
    def __init__(self, lib_path):
        self.lib = lib = C.CDLL(os.path.abspath(lib_path))
        vp = C.c_void_p
        for name, res, args in [
            ("netrun_last_error", C.c_char_p, []),
            ("netrun_model_load", C.c_int, [C.c_char_p, C.POINTER(vp)]),
            ("netrun_model_release", None, [vp]),
            ("netrun_options_create", C.c_int, [C.POINTER(vp)]),
            ("netrun_options_destroy", None, [vp]),
            ("netrun_options_set_backends", C.c_int, [vp, C.c_char_p]),
            ("netrun_options_set_threads", C.c_int, [vp, C.c_int]),
            ("netrun_options_set", C.c_int, [vp, C.c_char_p, C.c_char_p]),
            ("netrun_options_set_workspace", C.c_int, [vp, C.c_int, C.c_size_t]),
            ("netrun_options_set_device_memory_budget", C.c_int, [vp, C.c_size_t]),
            ("netrun_session_create", C.c_int, [vp, vp, C.POINTER(vp)]),
            ("netrun_session_destroy", None, [vp]),
            ("netrun_session_set_input", C.c_int,
             [vp, C.c_char_p, C.c_int, C.c_int, C.POINTER(C.c_int64), vp, C.c_size_t]),
            ("netrun_session_bind_input", C.c_int,
             [vp, C.c_char_p, C.c_int, C.c_int, C.POINTER(C.c_int64), vp, C.c_size_t]),
            ("netrun_session_prepare", C.c_int, [vp]),
            ("netrun_session_run", C.c_int, [vp]),
            ("netrun_session_output_count", C.c_int, [vp]),
            ("netrun_session_output", C.c_int, [vp, C.c_int, C.POINTER(TensorView)]),
            ("netrun_session_node_count", C.c_int, [vp]),
            ("netrun_session_node_info", C.c_int, [vp, C.c_int, C.POINTER(NodeInfo)]),
            ("netrun_session_get_stats", C.c_int, [vp, C.POINTER(SessionStats)]),
            ("netrun_session_micro_batch", C.c_char_p, [vp, C.POINTER(C.c_int)]),
            ("netrun_session_get_stats_ex", C.c_int, [vp, C.POINTER(SessionStats), C.c_size_t]),
        ]:
            if not hasattr(lib, name):  # a library older than this binding (get_stats_ex: 0.8)
                continue
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args

    def check(self, st, what):
        if st != 0:
            raise NetrunError(f"{what}: {self.lib.netrun_last_error().decode(errors='replace')}")

    def session(self, model_path, backends="cpu", threads=0, options=None, policy=None, budget=None):
        """policy: "balanced" | "fastest" | "min-memory" (workspace policy); budget: device memory bytes."""
        return Session(self, model_path, backends, threads, options or {}, policy, budget)


class Session:
    def __init__(self, nr, model_path, backends, threads, options, policy=None, budget=None):
        self.nr, lib = nr, nr.lib
        self.model = C.c_void_p()
        self.handle = C.c_void_p()
        nr.check(lib.netrun_model_load(model_path.encode(), C.byref(self.model)), f"load {model_path}")
        opts = C.c_void_p()
        nr.check(lib.netrun_options_create(C.byref(opts)), "options")
        try:
            nr.check(lib.netrun_options_set_backends(opts, backends.encode()), "backends")
            nr.check(lib.netrun_options_set_threads(opts, threads), "threads")
            for k, v in options.items():
                nr.check(lib.netrun_options_set(opts, k.encode(), str(v).encode()), f"option {k}")
            if policy is not None:
                code = {"balanced": 0, "fastest": 1, "min-memory": 2}[policy]
                nr.check(lib.netrun_options_set_workspace(opts, code, 0), "workspace policy")
            if budget is not None:
                nr.check(lib.netrun_options_set_device_memory_budget(opts, budget), "device memory budget")
            nr.check(lib.netrun_session_create(self.model, opts, C.byref(self.handle)), "session")
        finally:
            lib.netrun_options_destroy(opts)
        self._keep = []

    def close(self):
        if self.handle:
            self.nr.lib.netrun_session_destroy(self.handle)
            self.handle = C.c_void_p()
        if self.model:
            self.nr.lib.netrun_model_release(self.model)
            self.model = C.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def set_inputs(self, feeds):
        """Inputs read in place (netrun_session_bind_input: as onnxruntime's Python binding reads numpy arrays, and
        as netrun's Python package does); the arrays are held until the next call."""
        lib = self.nr.lib
        set_fn = getattr(lib, "netrun_session_bind_input", None) or lib.netrun_session_set_input  # an older library
        self._keep = []
        for name, arr in feeds.items():
            arr = np.ascontiguousarray(arr)
            dims = (C.c_int64 * max(1, arr.ndim))(*arr.shape)
            self._keep.append(arr)
            self.nr.check(set_fn(self.handle, name.encode(), _NP_TO_DT[arr.dtype], arr.ndim, dims, arr.ctypes.data,
                                 arr.nbytes), f"input {name}")

    def prepare(self):
        self.nr.check(self.nr.lib.netrun_session_prepare(self.handle), "prepare")

    def run_only(self):
        self.nr.check(self.nr.lib.netrun_session_run(self.handle), "run")

    def outputs(self):
        lib, res = self.nr.lib, []
        for i in range(lib.netrun_session_output_count(self.handle)):
            v = TensorView()
            self.nr.check(lib.netrun_session_output(self.handle, i, C.byref(v)), f"output {i}")
            shape = tuple(v.dims[:v.rank])
            dt = np.dtype(_DTYPES[v.dtype])
            buf = (C.c_char * v.nbytes).from_address(v.data) if v.nbytes else b""
            res.append(np.frombuffer(bytes(buf), dtype=dt).reshape(shape))
        return res

    def run(self, feeds):
        self.set_inputs(feeds)
        self.run_only()
        return self.outputs()

    def stats(self):
        st = SessionStats()
        lib = self.nr.lib
        if hasattr(lib, "netrun_session_get_stats_ex"):  # the whole struct (0.8); get_stats stops at the 0.7 fields
            self.nr.check(lib.netrun_session_get_stats_ex(self.handle, C.byref(st), C.sizeof(st)), "stats")
        else:
            self.nr.check(lib.netrun_session_get_stats(self.handle, C.byref(st)), "stats")
        return st

    def micro_batch(self):
        """(images per run of the plan, 0 when off; the line saying why) of the prepared session."""
        n = C.c_int(0)
        note = self.nr.lib.netrun_session_micro_batch(self.handle, C.byref(n))
        return n.value, note.decode()

    def pass_counts(self):
        """(BatchNorms folded, activations fused, sums fused, nodes dropped) by the graph passes."""
        st = self.stats()
        return (st.n_bn_folded, st.n_act_fused, st.n_sum_fused, st.n_nodes_dropped)

    def node_reasons(self):
        """(name, why it was placed where it is) of every node of the prepared session."""
        lib, res = self.nr.lib, []
        for i in range(lib.netrun_session_node_count(self.handle)):
            info = NodeInfo()
            self.nr.check(lib.netrun_session_node_info(self.handle, i, C.byref(info)), f"node {i}")
            res.append(((info.name or b"").decode(), (info.reason or b"").decode()))
        return res

    def nodes(self):
        """(name, op_type, backend, kernel) of every node of the prepared session."""
        lib, res = self.nr.lib, []
        for i in range(lib.netrun_session_node_count(self.handle)):
            info = NodeInfo()
            self.nr.check(lib.netrun_session_node_info(self.handle, i, C.byref(info)), f"node {i}")
            res.append(tuple((getattr(info, f) or b"").decode() for f in ("name", "op_type", "backend", "kernel")))
        return res
