"""The netrun API in Python: Model, Session, backends(). See docs/python.md."""
from __future__ import annotations

import ctypes as C
import dataclasses
import os
import threading
from typing import Any, Iterator, Mapping, NamedTuple, Sequence, Union

import numpy as np

from . import _capi, _device, _native
from ._errors import BY_STATUS, Error, InvalidArgumentError, StateError, UnsupportedError, error_for

lib = _capi.lib

# ---- element types: netrun dtype code <-> numpy dtype ----
_NUMPY = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
          10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128"}
# types numpy lacks, as the optional ml_dtypes package names them (used when it is installed)
_ML_DTYPES = {16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2", 20: "float8_e5m2fnuz",
              21: "uint4", 22: "int4", 23: "float4_e2m1fn", 24: "float8_e8m0fnu", 25: "uint2", 26: "int2"}
_N_DTYPES = 27


def _dtype_tables() -> tuple[tuple[Any, ...], dict[np.dtype, int]]:
    of: list[Any] = [None] * _N_DTYPES
    for code, name in _NUMPY.items():
        of[code] = np.dtype(name)
    try:
        import ml_dtypes  # optional: bfloat16, float8, int4 ... as numpy dtypes
    except ImportError:
        ml_dtypes = None
    if ml_dtypes is not None:
        for code, name in _ML_DTYPES.items():
            if hasattr(ml_dtypes, name):
                of[code] = np.dtype(getattr(ml_dtypes, name))
    return tuple(of), {dt: code for code, dt in enumerate(of) if dt is not None}


_DTYPE_OF, _CODE_OF = _dtype_tables()
_native.init(np.empty, np.ndarray, _DTYPE_OF, _CODE_OF, BY_STATUS)

# DLPack device types whose memory the host reads (kDLCPU, kDLCUDAHost, kDLROCMHost)
_DLPACK_HOST = {1, 3, 11}
_DLPACK_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
                 11: "rocm_host", 13: "cuda_managed", 14: "oneapi", 15: "webgpu", 16: "hexagon", 17: "maia"}


def _check(status: int) -> None:
    if status != 0:
        raise error_for(status, _capi.last_error())


def _dtype_name(code: int) -> str:
    return _capi.text(lib.netrun_dtype_name(code))


# ---- library, backends, tensor files ----

def version() -> str:
    """The version of the loaded libnetrun ("MAJOR.MINOR.PATCH"); also netrun.__version__."""
    return _capi.text(lib.netrun_version())


class OpSupport(NamedTuple):
    """One row of a backend's support matrix, as the plugin states it."""
    domain: str            # "" = the default ONNX domain
    op_type: str
    dtypes: tuple[str, ...]
    constraints: str       # human-readable limits ("" = none)


@dataclasses.dataclass(frozen=True)
class BackendInfo:
    """A backend plugin found on this machine (netrun.backends())."""
    name: str
    path: str
    available: bool
    reason: str            # why it is unavailable, or a one-line description of its devices
    device_count: int
    is_gpu: bool
    devices: tuple[str, ...]
    index: int = dataclasses.field(repr=False, default=-1)

    def ops(self) -> list[OpSupport]:
        """The plugin's support matrix (empty when it is unavailable)."""
        rows = []
        info = _capi.OpSupportInfo()
        for r in range(lib.netrun_backend_op_count(self.index)):
            _check(lib.netrun_backend_op_get(self.index, r, C.byref(info)))
            dts = tuple(_dtype_name(d) for d in range(_N_DTYPES) if info.dtypes >> d & 1)
            rows.append(OpSupport(_capi.text(info.domain), _capi.text(info.op_type), dts,
                                  _capi.text(info.constraints)))
        return rows


def backends() -> list[BackendInfo]:
    """Every backend plugin found (loaded on the first call), available or with the reason it is not."""
    out = []
    info = _capi.BackendInfo()
    buf = C.create_string_buffer(512)
    for i in range(lib.netrun_backend_count()):
        _check(lib.netrun_backend_get_info(i, C.byref(info)))
        devices = []
        if info.available:
            for d in range(info.device_count):
                if lib.netrun_backend_device_describe(i, d, buf, len(buf)) == 0:
                    devices.append(_capi.text(buf.value))
        out.append(BackendInfo(_capi.text(info.name), _capi.text(info.path), bool(info.available),
                               _capi.text(info.reason), info.device_count, bool(info.is_gpu), tuple(devices), i))
    return out


def ops() -> list[tuple[str, str]]:
    """(domain, op_type) of every op the runtime knows (parses, validates, infers): its own, then those the loaded
    plugins define (the contrib plugin's com.microsoft ops...)."""
    out = []
    dom, op = C.c_char_p(), C.c_char_p()
    for i in range(lib.netrun_op_count()):
        _check(lib.netrun_op_get(i, C.byref(dom), C.byref(op)))
        out.append((_capi.text(dom.value), _capi.text(op.value)))
    return out


def _view_to_array(v: _capi.TensorView) -> np.ndarray:
    dt = _DTYPE_OF[v.dtype] if 0 < v.dtype < _N_DTYPES else None
    name = _capi.text(v.name)
    if dt is None:
        raise UnsupportedError(f"tensor '{name}' is {_dtype_name(v.dtype)}, which numpy has no type for "
                               "(pip install ml_dtypes gives it one)")
    arr = np.empty(tuple(v.dims[:v.rank]), dt)
    if v.nbytes != arr.nbytes:
        raise error_for(8, f"tensor '{name}': {v.nbytes} bytes, numpy made {arr.nbytes} for that shape")
    if v.nbytes:
        C.memmove(arr.ctypes.data, v.data, v.nbytes)
    return arr


def read_tensor(source: Union[str, os.PathLike, bytes]) -> tuple[str, np.ndarray]:
    """Read a tensor from a .npy or ONNX TensorProto .pb file (or its bytes): (TensorProto name or "", array)."""
    p = C.POINTER(_capi.TensorView)()
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        _check(lib.netrun_tensor_read_memory(data, len(data), C.byref(p)))
    else:
        _check(lib.netrun_tensor_read_file(os.fsencode(source), C.byref(p)))
    try:
        return _capi.text(p.contents.name), _view_to_array(p.contents)
    finally:
        lib.netrun_tensor_free(p)


# ---- models ----

Dim = Union[int, str, None]


class TensorInfo(NamedTuple):
    """An input or output: name, dtype name ("float32", "int64", "bfloat16"...), and shape, whose entries are
    ints (known dims: fixed, or set by set_dim or the last inputs), the names of symbolic dims not known yet
    ("batch"), or None; shape is None when the rank is unknown."""
    name: str
    dtype: str
    shape: Union[tuple[Dim, ...], None]


def _tensor_info(info: _capi.TensorInfo) -> TensorInfo:
    shape: Union[tuple[Dim, ...], None] = None
    if info.rank >= 0:
        dims: list[Dim] = []
        for d in range(info.rank):
            sym = info.dim_names[d] if info.dim_names else None
            dims.append(int(info.dims[d]) if info.dims[d] >= 0 else (_capi.text(sym) if sym else None))
        shape = tuple(dims)
    return TensorInfo(_capi.text(info.name), _dtype_name(info.dtype), shape)


def _infos(count_fn: Any, info_fn: Any, ptr: int) -> tuple[TensorInfo, ...]:
    out = []
    info = _capi.TensorInfo()
    for i in range(count_fn(ptr)):
        _check(info_fn(ptr, i, C.byref(info)))
        out.append(_tensor_info(info))
    return tuple(out)


class Model:
    """An ONNX model, loaded once and immutable; one Model may back many Sessions on many threads.

    Model(path) reads a file (external data only from the model's folder); Model(data) reads the bytes of a
    model (external data from base_dir, or refused when base_dir is None). The limits keep a hostile model from
    taking the process down (0 = netrun's safe default; files only)."""

    def __init__(self, source: Union[str, os.PathLike, bytes, bytearray, memoryview], *,
                 base_dir: Union[str, os.PathLike, None] = None, max_tensor_bytes: int = 0,
                 max_graph_depth: int = 0, max_model_bytes: int = 0) -> None:
        self._ptr: Union[int, None] = None
        ptr = C.c_void_p()
        if isinstance(source, (bytes, bytearray, memoryview)):
            if max_tensor_bytes or max_graph_depth or max_model_bytes:
                raise InvalidArgumentError("Model(bytes): the load limits apply to model files only")
            data = bytes(source)
            _check(lib.netrun_model_load_memory(data, len(data), None if base_dir is None else os.fsencode(base_dir),
                                                C.byref(ptr)))
            self.path: Union[str, None] = None
        elif isinstance(source, (str, os.PathLike)):
            limits = _capi.LoadLimits(max_tensor_bytes, max_graph_depth, max_model_bytes)
            _check(lib.netrun_model_load_ex(os.fsencode(source), C.byref(limits), C.byref(ptr)))
            self.path = os.fsdecode(os.fspath(source))
        else:
            raise InvalidArgumentError(f"Model() takes a path or the model's bytes, not {type(source).__name__}")
        self._ptr = ptr.value
        self.inputs: tuple[TensorInfo, ...] = _infos(lib.netrun_model_input_count, lib.netrun_model_input_info,
                                                     self._ptr)
        self.outputs: tuple[TensorInfo, ...] = _infos(lib.netrun_model_output_count, lib.netrun_model_output_info,
                                                      self._ptr)
        self.node_count: int = lib.netrun_model_node_count(self._ptr)
        #: names of the inputs that have a default value (an initializer of the same name, ONNX IR 4+): run() may
        #: leave them out
        self.inputs_with_defaults: frozenset[str] = frozenset(
            i.name for k, i in enumerate(self.inputs) if lib.netrun_model_input_has_default(self._ptr, k))

    def _handle(self) -> int:
        if self._ptr is None:
            raise StateError("the model is closed")
        return self._ptr

    def close(self) -> None:
        """Drop this reference to the model. Sessions made from it keep their own."""
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            lib.netrun_model_release(ptr)

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_ptr", None) is not None:
            try:
                self.close()
            except Exception:  # noqa: BLE001 -- interpreter shutdown may have cleared the module
                pass

    def __repr__(self) -> str:
        return f"netrun.Model({self.path or '<bytes>'!r}, inputs={list(self.inputs)}, outputs={list(self.outputs)})"


# ---- sessions ----

class Outputs(tuple):  # type: ignore[type-arg]
    """The outputs of a run: a tuple of arrays in the model's (or the requested) order, that also answers by
    name: out[0], out["logits"], out.names, dict(out.items())."""

    names: tuple[str, ...]

    def __new__(cls, arrays: Sequence[np.ndarray], names: tuple[str, ...]) -> "Outputs":
        o = tuple.__new__(cls, arrays)
        o.names = names
        return o

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self.names.index(key))
            except ValueError:
                raise KeyError(f"no output '{key}' (outputs: {', '.join(self.names)})") from None
        return tuple.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            return key in self.names
        return any(key is a for a in self)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self.names else default

    def keys(self) -> tuple[str, ...]:
        return self.names

    def values(self) -> tuple[np.ndarray, ...]:
        return tuple(self)

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        return zip(self.names, self)

    def as_dict(self) -> dict[str, np.ndarray]:
        return dict(zip(self.names, self))

    def __repr__(self) -> str:
        return "Outputs(" + ", ".join(f"{n}={a!r}" for n, a in zip(self.names, self)) + ")"


class NodePlacement(NamedTuple):
    """Where one node of a prepared session runs, and why."""
    name: str
    op_type: str
    backend: str           # "const" when folded away at prepare
    reason: str            # why it was placed there
    kernel: str            # the kernel or algorithm the backend chose ("" when it does not say)
    workspace_bytes: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


class ProfileEvent(NamedTuple):
    """One timed event of a profiled run: a node's kernel, or a copy between memory domains."""
    name: str
    op_type: str           # or "Copy"
    backend: str           # "runtime" for control flow; "host->cuda" for copies
    is_copy: bool
    run: int               # index of the run since profiling was switched on
    start_ms: float
    duration_ms: float
    bytes: int             # copies: bytes moved
    node: int              # kernels: index in Session.placement; copies and control-flow bodies' nodes: -1
    depth: int = 0         # 0: a node of the model; 1: inside a control-flow body ("If_3/then_branch/Relu_1")


@dataclasses.dataclass(frozen=True)
class SessionStats:
    """Times (ms) and memory (bytes) of a session; the fields of netrun_session_stats (docs/api.md)."""
    prepare_ms: float
    init_ms: float
    first_run_ms: float
    last_run_ms: float
    runs: int
    arena_bytes: int
    weight_bytes: int
    workspace_bytes: int
    n_copies: int
    copy_bytes: int
    n_folded: int
    device_peak_bytes: int
    n_graphs: int
    n_segments: int
    n_bn_folded: int
    n_act_fused: int
    n_sum_fused: int
    n_nodes_dropped: int
    n_swish_fused: int
    n_nchwc_convs: int
    n_nchwc_reorders: int
    n_inplace: int
    n_views: int
    n_fp16_convs: int
    n_fp16_converts: int
    stream_bytes: int
    micro_batch: int
    prepares: int
    host_peak_bytes: int
    host_memory_budget: int
    profile_dropped: int
    n_attention_fused: int
    n_layernorm_fused: int
    n_gelu_fused: int
    h2d_bytes: int = 0           # host -> device bytes of the last run (PCIe on a discrete GPU)
    d2h_bytes: int = 0           # device -> host bytes of the last run
    d2d_bytes: int = 0           # device -> device copies into bound output buffers
    n_outputs_in_place: int = 0  # outputs written by their node straight into a caller's device buffer
    graph_recaptures: int = 0    # device graphs captured again because a bound device pointer changed
    n_fp16_nodes: int = 0        # nodes kept in float16 by plain float16 regions (--precision fp16, transformers)
    n_fp16_casts: int = 0        # Casts at the borders of those regions


class Profile:
    """with session.profile() as prof: session.run(...) -- then prof.events has one ProfileEvent per kernel and
    copy of every run inside the block (backends synchronise after each, so times are device times)."""

    def __init__(self, session: "Session") -> None:
        self._session = session
        self.events: list[ProfileEvent] = []

    def __enter__(self) -> "Profile":
        self._session._set_profiling(True)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.events = self._session._set_profiling(False)

    def by_op(self) -> dict[str, float]:
        """Total milliseconds per op type (copies under "Copy"), largest first."""
        tot: dict[str, float] = {}
        for e in self.events:
            tot[e.op_type] = tot.get(e.op_type, 0.0) + e.duration_ms
        return dict(sorted(tot.items(), key=lambda kv: -kv[1]))


_PRECISIONS = {"fp32": 0, "tf32": 1, "fp16": 2}
_WORKSPACE = {"balanced": 0, "fastest": 1, "min-memory": 2, "min_memory": 2}


def _option_text(v: Any) -> bytes:
    if isinstance(v, bool):
        return b"1" if v else b"0"
    return str(v).encode()


class Session:
    """A model prepared for running on a list of backends.

    Session(model, backends="cuda,cpu" or ["cuda", "cpu"], precision="fp32"|"tf32"|"fp16", threads=0 (all
    cores), device=0, workspace="balanced"|"fastest"|"min-memory", workspace_limit=bytes (0 = none),
    memory_budget=bytes of device memory (0 = none), strict=False, allow_fallback=False, options={"cuda.graph":
    "0", ...}). A listed backend that is unavailable here fails the session unless the list names another
    available one ("cuda,cpu") or allow_fallback=True (then the CPU runs what it cannot).
    model may be a Model, a path or the model's bytes.

    Threads: a session is used by one thread at a time. Every method takes the session's lock, so calls from
    several threads are serialised, never concurrent; for parallel runs give each thread its own Session (they
    may share one Model). prepare() and run() release the GIL while netrun works."""

    def __init__(self, model: Union[Model, str, os.PathLike, bytes], *,
                 backends: Union[str, Sequence[str], None] = None, precision: str = "fp32", threads: int = 0,
                 device: int = 0, workspace: str = "balanced", workspace_limit: int = 0, memory_budget: int = 0,
                 strict: bool = False, allow_fallback: bool = False,
                 options: Union[Mapping[str, Any], None] = None) -> None:
        self._h: Any = None
        self._lock = threading.Lock()
        own = not isinstance(model, Model)
        m = Model(model) if own else model  # type: ignore[arg-type]
        try:
            if precision not in _PRECISIONS:
                raise InvalidArgumentError(f"precision '{precision}': one of {', '.join(_PRECISIONS)}")
            if workspace not in _WORKSPACE:
                raise InvalidArgumentError(f"workspace '{workspace}': one of balanced, fastest, min-memory")
            if backends is not None and not isinstance(backends, str):
                backends = ",".join(backends)
            opts = C.c_void_p()
            _check(lib.netrun_options_create(C.byref(opts)))
            ptr = C.c_void_p()
            try:
                if backends is not None:
                    _check(lib.netrun_options_set_backends(opts, backends.encode()))
                _check(lib.netrun_options_set_precision(opts, _PRECISIONS[precision]))
                _check(lib.netrun_options_set_threads(opts, threads))
                _check(lib.netrun_options_set_device(opts, device))
                _check(lib.netrun_options_set_workspace(opts, _WORKSPACE[workspace], workspace_limit))
                _check(lib.netrun_options_set_device_memory_budget(opts, memory_budget))
                _check(lib.netrun_options_set_strict(opts, 1 if strict else 0))
                _check(lib.netrun_options_set_allow_fallback(opts, 1 if allow_fallback else 0))
                for k, v in (options or {}).items():
                    _check(lib.netrun_options_set(opts, str(k).encode(), _option_text(v)))
                _check(lib.netrun_session_create(m._handle(), opts, C.byref(ptr)))
            finally:
                lib.netrun_options_destroy(opts)
            self._h = _native.SessionHandle(ptr.value)
        finally:
            if own:
                m.close()  # the session holds its own reference
        self.model_inputs: tuple[TensorInfo, ...] = m.inputs
        self.model_outputs: tuple[TensorInfo, ...] = m.outputs
        self._model_nodes = m.node_count
        self._in_names = tuple(i.name for i in m.inputs)
        self._optional = m.inputs_with_defaults
        self._in_dtype = {i.name: _DTYPE_OF[_CODE_OF_NAME[i.dtype]] if i.dtype in _CODE_OF_NAME else None
                          for i in m.inputs}
        self._out_names = tuple(o.name for o in m.outputs)
        self._out_index = {n: i for i, n in enumerate(self._out_names)}
        self._normalize_fn = self._normalize
        self._device = device
        self._stream: Union[int, None] = None  # the stream last handed to netrun (device runs)
        self._dev_bound = False                # outputs were bound to device memory by a device run

    # -- state --
    def _ptr(self) -> int:
        if self._h is None:
            raise StateError("the session is closed")
        return self._h.ptr  # type: ignore[no-any-return]

    @property
    def closed(self) -> bool:
        return self._h is None

    def close(self) -> None:
        """Free the session (views from run(copy=False) keep its memory until they are gone)."""
        with self._lock:
            self._h = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"netrun.Session(inputs={list(self._in_names)}, outputs={list(self._out_names)}" + \
            (", closed)" if self._h is None else ")")

    # -- inputs and outputs --
    @property
    def input_names(self) -> tuple[str, ...]:
        return self._in_names

    @property
    def output_names(self) -> tuple[str, ...]:
        return self._out_names

    @property
    def inputs(self) -> tuple[TensorInfo, ...]:
        """Inputs as the session sees them (dims fixed by set_dim or by the last inputs filled in)."""
        with self._lock:
            return _infos(lib.netrun_session_input_count, lib.netrun_session_input_info, self._ptr())

    @property
    def outputs(self) -> tuple[TensorInfo, ...]:
        with self._lock:
            return _infos(lib.netrun_session_output_count, lib.netrun_session_output_info, self._ptr())

    def set_dim(self, name: str, value: int) -> None:
        """Fix a symbolic dimension (e.g. "batch") for every input that uses it; invalidates a prepare."""
        with self._lock:
            _check(lib.netrun_session_set_dim(self._ptr(), name.encode(), value))

    def prepare(self) -> None:
        """Shape inference, placement, memory plan, backend init, weight upload: so that the first run is not
        slower than the rest. Optional (the first run prepares). Releases the GIL."""
        with self._lock:
            _check(lib.netrun_session_prepare(self._ptr()))

    def _normalize(self, name: str, value: Any) -> np.ndarray:
        """Anything run() was given -> a C-contiguous ndarray of a netrun dtype, or the error saying why not."""
        if isinstance(value, np.ndarray):
            arr = value if type(value) is np.ndarray else np.asarray(value)
        elif hasattr(value, "__dlpack__"):
            arr = _from_dlpack(name, value)
        else:  # lists, scalars: no dtype of their own, so take the model's
            try:
                arr = np.asarray(value, dtype=self._in_dtype.get(name))
            except (TypeError, ValueError) as e:
                raise InvalidArgumentError(f"input '{name}': cannot make an array of {type(value).__name__}: {e}") \
                    from None
        dt = arr.dtype
        if dt not in _CODE_OF:
            if dt.kind in "OSUVMm":
                raise InvalidArgumentError(f"input '{name}': numpy {dt} arrays are not supported: netrun reads "
                                           "numeric and bool arrays")
            if not dt.isnative:
                arr = arr.astype(dt.newbyteorder("="))
            else:
                raise InvalidArgumentError(f"input '{name}': numpy dtype {dt} has no netrun type")
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)  # a copy (documented): netrun reads dense row-major memory
        return arr

    def _check_feed_names(self, feeds: Mapping[str, Any]) -> None:
        missing = [n for n in self._in_names if n not in feeds and n not in self._optional]
        unknown = [n for n in feeds if n not in self._in_names]
        parts = []
        if missing:
            parts.append("missing input" + ("s " if len(missing) > 1 else " ") + ", ".join(f"'{n}'" for n in missing))
        if unknown:
            parts.append("the model has no input" + ("s " if len(unknown) > 1 else " ") +
                         ", ".join(f"'{n}'" for n in unknown))
        raise InvalidArgumentError(f"{'; '.join(parts)} (inputs: {', '.join(self._in_names)})")

    def _select(self, outputs: Sequence[str]) -> tuple[tuple[int, ...], tuple[str, ...]]:
        if isinstance(outputs, str):
            outputs = (outputs,)
        try:
            return tuple(self._out_index[n] for n in outputs), tuple(outputs)
        except (KeyError, TypeError):
            bad = [n for n in outputs if n not in self._out_index]
            raise InvalidArgumentError(f"the model has no output {', '.join(repr(n) for n in bad)} "
                                       f"(outputs: {', '.join(self._out_names)})") from None

    def run(self, feeds: Mapping[str, Any], outputs: Union[Sequence[str], None] = None, *,
            copy: bool = True, out: Union[Mapping[str, Any], None] = None, device_outputs: bool = False,
            stream: Any = None) -> Outputs:
        """Run the model on feeds {input name: array} and return the outputs (all, or those named in outputs,
        in that order) as an Outputs tuple that also answers by name.

        Inputs: numpy arrays are read in place when C-contiguous and of a netrun dtype (other layouts and
        non-native byte order are copied first); any object with __dlpack__ on the host is read in place;
        lists and scalars take the input's declared dtype. The dtype must be the model's (no silent casts).
        Outputs: copy=True (default) gives new writable arrays that are yours; copy=False gives read-only
        views of the session's memory, valid until the next run, set_dim or prepare of this session.

        Device memory (docs/python.md, "Device memory"): CUDA tensors (PyTorch, CuPy: __cuda_array_interface__ or
        __dlpack__) are read in place, never copied; out={"name": tensor} has netrun write those outputs into your
        device tensors (returned as given); device_outputs=True returns the other outputs as DeviceArray objects
        in the session's device memory (valid until the next run). stream: the cudaStream_t (int,
        torch.cuda.Stream, CuPy stream) netrun queues on; by default the producer's (PyTorch's or CuPy's current
        stream). The run returns when its work is done."""
        if type(feeds) is not dict:
            if not isinstance(feeds, Mapping):
                raise InvalidArgumentError(f"run() takes a mapping of input name -> array, not {type(feeds).__name__}")
            feeds = dict(feeds)
        if len(feeds) != len(self._in_names) and (not self._optional or
                                                  any(n not in self._in_names for n in feeds) or
                                                  any(n not in feeds for n in self._in_names if n not in self._optional)):
            self._check_feed_names(feeds)
        if outputs is None:
            idx, names = None, self._out_names
        else:
            idx, names = self._select(outputs)
        if out is not None or device_outputs or stream is not None or any(
                type(v) is not np.ndarray and _device.is_device(v) for v in feeds.values()):
            return self._run_device(feeds, idx, names, copy, out or {}, device_outputs, stream)
        with self._lock:
            h = self._h
            if h is None:
                raise StateError("the session is closed")
            if self._dev_bound:  # back to host outputs after a device run
                for n in self._out_names:
                    _check(lib.netrun_session_bind_output_device(h.ptr, n.encode(), _device.MEM_HOST, 0, None, 0))
                self._dev_bound = False
            arrays = h.run(feeds, idx, copy, self._normalize_fn)
        return Outputs(arrays, names)

    def _run_device(self, feeds: Mapping[str, Any], idx: Union[tuple[int, ...], None], names: tuple[str, ...],
                    copy: bool, out: Mapping[str, Any], device_outputs: bool, stream: Any) -> Outputs:
        """run() with device tensors in feeds or out, or device_outputs: through the C API's device calls."""
        bad = [n for n in out if n not in self._out_index]
        if bad:
            raise InvalidArgumentError(f"out: the model has no output {', '.join(repr(n) for n in bad)} "
                                       f"(outputs: {', '.join(self._out_names)})")
        S = _device.stream_handle(stream)
        device_values = [(f"input '{n}'", v) for n, v in feeds.items()
                         if type(v) is not np.ndarray and _device.is_device(v)]
        device_values += [(f"output '{n}'", v) for n, v in out.items()]
        for _, v in device_values if S is None else ():  # the producer's stream: its pending work comes first
            S = _device.producer_stream(v)
            if S is not None:
                break
        if S is None and device_values:  # a producer that names no stream: the legacy default stream
            S = _device.CUDA_STREAM_LEGACY
        if S == 0:
            S = _device.CUDA_STREAM_LEGACY  # a cudaStream_t of 0; netrun's NULL means its own stream
        code_of = _CODE_OF.get
        held: list[Any] = []
        with self._lock:
            ptr = self._ptr()
            try:
                if S is not None and S != self._stream:  # before any capsule is taken: a CPU session says no here
                    st = lib.netrun_session_set_stream(ptr, _device.MEM_CUDA, S)
                    if st != 0:
                        what = device_values[0][0] + ": " if device_values else ""
                        raise error_for(st, what + _capi.last_error().replace("netrun_session_set_stream: ", ""))
                    self._stream = S
                for name, v in feeds.items():
                    if type(v) is not np.ndarray and _device.is_device(v):
                        t = _device.device_tensor(name, v, S, self._device, code_of)
                        held.append(t)
                        dims = (C.c_int64 * max(1, len(t.shape)))(*t.shape)
                        _check(lib.netrun_session_bind_input_device(ptr, name.encode(), t.code, len(t.shape), dims,
                                                                    _device.MEM_CUDA, t.device, t.ptr, t.nbytes))
                    else:
                        arr = self._normalize(name, v)
                        dims = (C.c_int64 * max(1, arr.ndim))(*arr.shape)
                        _check(lib.netrun_session_set_input(ptr, name.encode(), _CODE_OF[arr.dtype], arr.ndim, dims,
                                                            arr.ctypes.data, arr.nbytes))
                for n in self._out_names:
                    if n in out:
                        t = _device.device_tensor(n, out[n], S, self._device, code_of)
                        held.append(t)
                        _check(lib.netrun_session_bind_output_device(ptr, n.encode(), _device.MEM_CUDA, t.device,
                                                                     t.ptr, t.nbytes))
                    elif device_outputs:
                        _check(lib.netrun_session_bind_output_device(ptr, n.encode(), _device.MEM_CUDA, self._device,
                                                                     None, 0))
                    else:
                        _check(lib.netrun_session_bind_output_device(ptr, n.encode(), _device.MEM_HOST, 0, None, 0))
                self._dev_bound = bool(out) or device_outputs
                _check(lib.netrun_session_run(ptr))
                results: list[Any] = []
                for i in (idx if idx is not None else range(len(self._out_names))):
                    n = self._out_names[i]
                    if n in out:
                        results.append(out[n])
                    elif device_outputs:
                        dv = _capi.DeviceView()
                        _check(lib.netrun_session_output_device(ptr, i, C.byref(dv)))
                        results.append(_device.DeviceArray(dv, _DTYPE_OF[dv.dtype], dv.dtype))
                    else:
                        tv = _capi.TensorView()
                        _check(lib.netrun_session_output(ptr, i, C.byref(tv)))
                        results.append(_view_to_array(tv))  # a copy: the staging buffer is reused
            finally:
                for t in held:
                    t.release()
        return Outputs(results, names)

    def value(self, name: str) -> np.ndarray:
        """Any value of the graph after a run, as a copy: inputs, outputs and constants always; intermediate
        values only with options={"debug.keep_values": "1"} (no memory reuse)."""
        with self._lock:
            v = _capi.TensorView()
            _check(lib.netrun_session_value(self._ptr(), name.encode(), C.byref(v)))
            return _view_to_array(v)

    # -- what the session decided, and what it measured --
    @property
    def placement(self) -> list[NodePlacement]:
        """Every node of the prepared session: backend, why, kernel (prepare() or run() first)."""
        with self._lock:
            ptr = self._ptr()
            n = lib.netrun_session_node_count(ptr)
            if n == 0 and self._model_nodes > 0:
                raise StateError("the session is not prepared yet: call prepare() or run() first")
            out = []
            info = _capi.NodeInfo()
            vname = C.c_char_p()
            for i in range(n):
                _check(lib.netrun_session_node_info(ptr, i, C.byref(info)))
                io = []
                for side in (0, 1):
                    names = []
                    for k in range(max(0, lib.netrun_session_node_io(ptr, i, side, -1, None))):
                        lib.netrun_session_node_io(ptr, i, side, k, C.byref(vname))
                        names.append(_capi.text(vname.value))
                    io.append(tuple(names))
                t = _capi.text
                out.append(NodePlacement(t(info.name), t(info.op_type), t(info.backend), t(info.reason),
                                         t(info.kernel), info.workspace_bytes, io[0], io[1]))
            return out

    @property
    def stats(self) -> SessionStats:
        with self._lock:
            st = _capi.SessionStats()
            _check(lib.netrun_session_get_stats_ex(self._ptr(), C.byref(st), C.sizeof(st)))
            return SessionStats(**{f: getattr(st, f) for f, _ in _capi.SessionStats._fields_})

    @property
    def activity(self) -> str:
        """What the session is doing now ("preparing node 'conv1' (Conv) on backend 'cuda'", "running node ...",
        "idle"). The one call that does not wait for the session's lock: ask it from another thread while a long
        prepare() or run() is in progress."""
        h = self._h  # this reference keeps the session alive during the call
        if h is None:
            raise StateError("the session is closed")
        buf = C.create_string_buffer(512)
        lib.netrun_session_activity(h.ptr, buf, len(buf))
        return _capi.text(buf.value)

    @property
    def prepare_note(self) -> str:
        """Why the session (or a control-flow body of it) last had to prepare again ("" if it never did);
        stats.prepares counts the prepares."""
        with self._lock:
            return _capi.text(lib.netrun_session_prepare_note(self._ptr()))

    @property
    def micro_batch(self) -> tuple[int, str]:
        """(images per run of the plan, 0 when off; the line saying what was decided and why)."""
        with self._lock:
            n = C.c_int(0)
            note = lib.netrun_session_micro_batch(self._ptr(), C.byref(n))
            return n.value, _capi.text(note)

    def profile(self) -> Profile:
        """with session.profile() as prof: ...runs... ; then prof.events (see Profile)."""
        return Profile(self)

    def _set_profiling(self, on: bool) -> list[ProfileEvent]:
        with self._lock:
            ptr = self._ptr()
            _check(lib.netrun_session_set_profiling(ptr, 1 if on else 0))
            if on:
                return []
            events = []
            e = _capi.ProfileEvent()
            for i in range(lib.netrun_session_profile_count(ptr)):
                _check(lib.netrun_session_profile_get(ptr, i, C.byref(e)))
                events.append(ProfileEvent(_capi.text(e.name), _capi.text(e.op_type), _capi.text(e.backend),
                                           bool(e.is_copy), e.run, e.start_ms, e.duration_ms, e.bytes, e.node,
                                           e.depth))
            return events


_CODE_OF_NAME = {name: code for code, name in _NUMPY.items()}
_CODE_OF_NAME.update({_dtype_name(code): code for code in _ML_DTYPES if _DTYPE_OF[code] is not None})


def _from_dlpack(name: str, value: Any) -> np.ndarray:
    """A host DLPack tensor as a numpy array without a copy; device memory is refused with the reason."""
    dev = value.__dlpack_device__() if hasattr(value, "__dlpack_device__") else (1, 0)
    kind, index = int(dev[0]), int(dev[1])
    if kind not in _DLPACK_HOST:
        where = f"{_DLPACK_NAMES.get(kind, f'device type {kind}')}:{index}"
        raise UnsupportedError(f"input '{name}' is in {where} memory (DLPack): netrun does not take device memory "
                               "as input yet; copy it to the host first (torch: t.cpu(), cupy: cupy.asnumpy(a))")
    try:
        return np.from_dlpack(value)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise InvalidArgumentError(f"input '{name}': numpy cannot read this DLPack tensor ({e})") from None


DeviceArray = _device.DeviceArray

__all__ = ["Error", "Model", "Session", "DeviceArray", "Outputs", "TensorInfo", "NodePlacement", "ProfileEvent", "Profile",
           "SessionStats", "BackendInfo", "OpSupport", "backends", "ops", "read_tensor", "version"]
