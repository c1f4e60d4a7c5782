"""ctypes declarations of include/netrun.h for the calls made once per model or session (the per-run path is
in _native.c). The structs mirror the header field by field; tests/python/test_api.py checks their sizes
against the compiler's (netrun._native.struct_sizes())."""
from __future__ import annotations

import ctypes as C

from . import _native

MAX_RANK = 8
vp = C.c_void_p
c_str = C.c_char_p


class TensorInfo(C.Structure):
    _fields_ = [("name", c_str), ("dtype", C.c_int), ("rank", C.c_int), ("dims", C.POINTER(C.c_int64)),
                ("dim_names", C.POINTER(c_str))]


class TensorView(C.Structure):
    _fields_ = [("name", c_str), ("dtype", C.c_int), ("rank", C.c_int), ("dims", C.c_int64 * MAX_RANK),
                ("data", vp), ("nbytes", C.c_size_t)]


class NodeInfo(C.Structure):
    _fields_ = [("name", c_str), ("op_type", c_str), ("backend", c_str), ("reason", c_str), ("kernel", c_str),
                ("workspace_bytes", C.c_size_t)]


class ProfileEvent(C.Structure):
    _fields_ = [("name", c_str), ("op_type", c_str), ("backend", c_str), ("is_copy", C.c_int),
                ("run", C.c_uint64), ("start_ms", C.c_double), ("duration_ms", C.c_double),
                ("bytes", C.c_size_t), ("node", C.c_int), ("depth", C.c_int)]


class OpSupportInfo(C.Structure):
    _fields_ = [("domain", c_str), ("op_type", c_str), ("dtypes", C.c_uint64), ("constraints", c_str)]


class SessionStats(C.Structure):
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
                ("n_fp16_nodes", C.c_int), ("n_fp16_casts", C.c_int)]


class DeviceView(C.Structure):
    _fields_ = [("name", c_str), ("dtype", C.c_int), ("rank", C.c_int), ("dims", C.c_int64 * MAX_RANK),
                ("data", vp), ("offset", C.c_size_t), ("nbytes", C.c_size_t), ("memory_type", C.c_int),
                ("device", C.c_int)]


class BackendInfo(C.Structure):
    _fields_ = [("name", c_str), ("path", c_str), ("available", C.c_int), ("reason", c_str),
                ("device_count", C.c_int), ("is_gpu", C.c_int)]


class LoadLimits(C.Structure):
    _fields_ = [("max_tensor_bytes", C.c_size_t), ("max_graph_depth", C.c_int), ("max_model_bytes", C.c_size_t)]


STRUCTS = {"tensor_info": TensorInfo, "tensor_view": TensorView, "node_info": NodeInfo,
           "profile_event": ProfileEvent, "op_support_info": OpSupportInfo, "session_stats": SessionStats,
           "backend_info": BackendInfo, "load_limits": LoadLimits, "device_view": DeviceView}

_P = C.POINTER
_SIGNATURES = [
    ("netrun_version", c_str, []),
    ("netrun_last_error", c_str, []),
    ("netrun_dtype_name", c_str, [C.c_int]),
    ("netrun_backend_count", C.c_int, []),
    ("netrun_backend_get_info", C.c_int, [C.c_int, _P(BackendInfo)]),
    ("netrun_backend_device_describe", C.c_int, [C.c_int, C.c_int, C.c_char_p, C.c_size_t]),
    ("netrun_backend_op_count", C.c_int, [C.c_int]),
    ("netrun_backend_op_get", C.c_int, [C.c_int, C.c_int, _P(OpSupportInfo)]),
    ("netrun_op_count", C.c_int, []),
    ("netrun_op_get", C.c_int, [C.c_int, _P(c_str), _P(c_str)]),
    ("netrun_tensor_read_file", C.c_int, [c_str, _P(_P(TensorView))]),
    ("netrun_tensor_read_memory", C.c_int, [vp, C.c_size_t, _P(_P(TensorView))]),
    ("netrun_tensor_free", None, [_P(TensorView)]),
    ("netrun_model_load_ex", C.c_int, [c_str, _P(LoadLimits), _P(vp)]),
    ("netrun_model_load_memory", C.c_int, [vp, C.c_size_t, c_str, _P(vp)]),
    ("netrun_model_release", None, [vp]),
    ("netrun_model_input_count", C.c_int, [vp]),
    ("netrun_model_output_count", C.c_int, [vp]),
    ("netrun_model_input_info", C.c_int, [vp, C.c_int, _P(TensorInfo)]),
    ("netrun_model_input_has_default", C.c_int, [vp, C.c_int]),
    ("netrun_model_output_info", C.c_int, [vp, C.c_int, _P(TensorInfo)]),
    ("netrun_model_node_count", C.c_int, [vp]),
    ("netrun_options_create", C.c_int, [_P(vp)]),
    ("netrun_options_destroy", None, [vp]),
    ("netrun_options_set_backends", C.c_int, [vp, c_str]),
    ("netrun_options_set_precision", C.c_int, [vp, C.c_int]),
    ("netrun_options_set_threads", C.c_int, [vp, C.c_int]),
    ("netrun_options_set_device", C.c_int, [vp, C.c_int]),
    ("netrun_options_set_workspace", C.c_int, [vp, C.c_int, C.c_size_t]),
    ("netrun_options_set_strict", C.c_int, [vp, C.c_int]),
    ("netrun_options_set_allow_fallback", C.c_int, [vp, C.c_int]),
    ("netrun_options_set_device_memory_budget", C.c_int, [vp, C.c_size_t]),
    ("netrun_options_set", C.c_int, [vp, c_str, c_str]),
    ("netrun_session_create", C.c_int, [vp, vp, _P(vp)]),
    ("netrun_session_error", c_str, [vp]),
    ("netrun_session_input_count", C.c_int, [vp]),
    ("netrun_session_output_count", C.c_int, [vp]),
    ("netrun_session_input_info", C.c_int, [vp, C.c_int, _P(TensorInfo)]),
    ("netrun_session_output_info", C.c_int, [vp, C.c_int, _P(TensorInfo)]),
    ("netrun_session_set_dim", C.c_int, [vp, c_str, C.c_int64]),
    ("netrun_session_prepare", C.c_int, [vp]),
    ("netrun_session_value", C.c_int, [vp, c_str, _P(TensorView)]),
    ("netrun_session_node_count", C.c_int, [vp]),
    ("netrun_session_node_info", C.c_int, [vp, C.c_int, _P(NodeInfo)]),
    ("netrun_session_node_io", C.c_int, [vp, C.c_int, C.c_int, C.c_int, _P(c_str)]),
    ("netrun_session_set_profiling", C.c_int, [vp, C.c_int]),
    ("netrun_session_profile_count", C.c_int, [vp]),
    ("netrun_session_profile_get", C.c_int, [vp, C.c_int, _P(ProfileEvent)]),
    ("netrun_session_get_stats_ex", C.c_int, [vp, _P(SessionStats), C.c_size_t]),
    ("netrun_session_set_input", C.c_int, [vp, c_str, C.c_int, C.c_int, _P(C.c_int64), vp, C.c_size_t]),
    ("netrun_session_bind_input_device", C.c_int, [vp, c_str, C.c_int, C.c_int, _P(C.c_int64), C.c_int, C.c_int, vp,
                                                   C.c_size_t]),
    ("netrun_session_bind_output_device", C.c_int, [vp, c_str, C.c_int, C.c_int, vp, C.c_size_t]),
    ("netrun_session_output_device", C.c_int, [vp, C.c_int, _P(DeviceView)]),
    ("netrun_session_set_stream", C.c_int, [vp, C.c_int, vp]),
    ("netrun_session_run", C.c_int, [vp]),
    ("netrun_session_output", C.c_int, [vp, C.c_int, _P(TensorView)]),
    ("netrun_session_micro_batch", c_str, [vp, _P(C.c_int)]),
    ("netrun_session_activity", C.c_size_t, [vp, C.c_char_p, C.c_size_t]),
    ("netrun_session_prepare_note", c_str, [vp]),
]

LIBRARY_PATH = _native.library_path()
# The same library the extension linked (already loaded: dlopen returns it). ctypes releases the GIL around
# every call, so prepare() and the other calls below let other threads run.
lib = C.CDLL(LIBRARY_PATH)
for _name, _res, _args in _SIGNATURES:
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def text(b: bytes | None) -> str:
    return b.decode("utf-8", errors="replace") if b else ""


def last_error() -> str:
    return text(lib.netrun_last_error())
