"""Device memory in and out of Session.run (docs/python.md, "Device memory"): feeds and `out=` tensors read through
__cuda_array_interface__ (PyTorch, CuPy, Numba...) or DLPack (__dlpack__ / __dlpack_device__), never copied; outputs
left on the device as DeviceArray objects that export both protocols. The stream netrun queues on is the one given,
else the producer's: PyTorch's or CuPy's current stream, the CAI "stream" entry, else the legacy default stream."""
from __future__ import annotations

import ctypes as C
from typing import Any, Callable

import numpy as np

from ._errors import InvalidArgumentError, UnsupportedError

MEM_HOST, MEM_CUDA, MEM_OPENCL = 0, 1, 2
_KDL_CPU, _KDL_CUDA, _KDL_OPENCL, _KDL_CUDA_MANAGED = 1, 2, 4, 13
_DEVICE_KDL = {_KDL_CUDA, _KDL_CUDA_MANAGED}
CUDA_STREAM_LEGACY = 1  # cudaStreamLegacy: what a cudaStream_t of 0 means


# ---- DLPack (dlpack.h, the unversioned DLManagedTensor) ----
class _DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class _DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class _DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", _DLDevice), ("ndim", C.c_int32), ("dtype", _DLDataType),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class _DLManagedTensor(C.Structure):
    pass


_DELETER = C.CFUNCTYPE(None, C.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", C.c_void_p), ("deleter", _DELETER)]

# (DLPack type code, bits) <-> netrun dtype
_DL_TO_NR = {(2, 32): 1, (1, 8): 2, (0, 8): 3, (1, 16): 4, (0, 16): 5, (0, 32): 6, (0, 64): 7, (6, 8): 9,
             (2, 16): 10, (2, 64): 11, (1, 32): 12, (1, 64): 13, (4, 16): 16}
_NR_TO_DL = {v: k for k, v in _DL_TO_NR.items()}

_api = C.pythonapi
_api.PyCapsule_GetPointer.restype, _api.PyCapsule_GetPointer.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
_api.PyCapsule_SetName.restype, _api.PyCapsule_SetName.argtypes = C.c_int, [C.py_object, C.c_char_p]
_api.PyCapsule_New.restype, _api.PyCapsule_New.argtypes = C.py_object, [C.c_void_p, C.c_char_p, C.c_void_p]
_api.PyCapsule_IsValid.restype, _api.PyCapsule_IsValid.argtypes = C.c_int, [C.c_void_p, C.c_char_p]
_CAPSULE_GET = C.PYFUNCTYPE(C.c_void_p, C.c_void_p, C.c_char_p)(("PyCapsule_GetPointer", _api))
_NAME = b"dltensor"       # module constants: the capsules point at these bytes for their lifetime
_USED_NAME = b"used_dltensor"


def stream_handle(stream: Any) -> int | None:
    """A cudaStream_t as an int from what a caller may hand over: an int, torch.cuda.Stream (.cuda_stream), a CuPy
    stream (.ptr); None stays None."""
    if stream is None or isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    raise InvalidArgumentError(f"stream: an int cudaStream_t, a torch.cuda.Stream or a CuPy stream, not "
                               f"{type(stream).__name__}")


def _cai(value: Any) -> Any:
    try:
        return getattr(value, "__cuda_array_interface__", None)  # CPU torch tensors raise here
    except (AttributeError, RuntimeError, TypeError):
        return None


def is_device(value: Any) -> bool:
    """Whether a feed lives in device memory (CUDA): CAI, or a DLPack device of CUDA kind."""
    if isinstance(value, np.ndarray):
        return False
    if _cai(value) is not None:
        return True
    dev = getattr(value, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        return int(dev()[0]) in _DEVICE_KDL
    except (TypeError, ValueError, IndexError, RuntimeError):
        return False


def producer_stream(value: Any) -> int | None:
    """The stream the producer's pending work on `value` is ordered on: PyTorch's or CuPy's current stream, or the
    CUDA Array Interface "stream" entry; None when unknown."""
    mod = type(value).__module__ or ""
    try:
        if mod.startswith("torch"):
            import torch
            return int(torch.cuda.current_stream(value.device).cuda_stream)
        if mod.startswith("cupy"):
            import cupy
            return int(cupy.cuda.get_current_stream().ptr)
    except Exception:  # noqa: BLE001 - a producer we cannot ask: fall back to its CAI entry
        pass
    cai = _cai(value)
    if cai is not None and cai.get("stream") is not None:
        return int(cai["stream"])
    return None


class DeviceTensor:
    """A caller's device tensor as netrun reads it: pointer, netrun dtype code, shape, bytes, device index; holds
    the DLPack capsule (released with release()) so that the producer keeps the memory alive during the run."""

    def __init__(self, ptr: int, code: int, shape: tuple[int, ...], device: int, keep: Any = None,
                 managed: Any = None) -> None:
        self.ptr, self.code, self.shape, self.device = ptr, code, shape, device
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * _ITEMSIZE.get(code, 1)
        self._keep, self._managed = keep, managed

    def release(self) -> None:
        if self._managed is not None and self._managed.deleter:
            self._managed.deleter(C.pointer(self._managed))
        self._managed = self._keep = None


_ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def _contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    """C order (strides in bytes); dims of size 1 may carry any stride."""
    want = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != want:
            return False
        want *= n
    return True


def device_tensor(name: str, value: Any, stream: int | None, default_device: int,
                  code_of: Callable[[np.dtype], int | None]) -> DeviceTensor:
    """Read a device tensor without a copy: CUDA Array Interface first, else DLPack (asked to be ready on
    `stream`)."""
    cai = _cai(value)
    if cai is not None:
        shape = tuple(int(d) for d in cai["shape"])
        dt = np.dtype(cai["typestr"])
        code = code_of(dt)
        if code is None:
            raise InvalidArgumentError(f"'{name}': device dtype {dt} has no netrun type")
        if cai.get("strides") is not None and not _contiguous(shape, cai["strides"], dt.itemsize):
            raise InvalidArgumentError(f"'{name}': a strided device tensor; netrun reads dense row-major memory "
                                       "(make it contiguous first: t.contiguous(), cupy.ascontiguousarray)")
        if cai.get("mask") is not None:
            raise InvalidArgumentError(f"'{name}': masked device arrays are not supported")
        device = default_device
        dev = getattr(value, "device", None)  # torch.device (.index) or cupy.cuda.Device (.id)
        for attr in ("index", "id"):
            if isinstance(getattr(dev, attr, None), int):
                device = getattr(dev, attr)
                break
        return DeviceTensor(int(cai["data"][0]), code, shape, device, keep=value)
    if not hasattr(value, "__dlpack__"):
        raise UnsupportedError(f"'{name}': neither __cuda_array_interface__ nor __dlpack__")
    capsule = value.__dlpack__(stream=stream if stream is not None else CUDA_STREAM_LEGACY)
    p = _api.PyCapsule_GetPointer(capsule, _NAME)
    mt = _DLManagedTensor.from_address(p)
    _api.PyCapsule_SetName(capsule, _USED_NAME)  # consumed: its destructor no longer calls the deleter; we do
    t = mt.dl_tensor
    tensor = DeviceTensor(0, 0, (), 0, keep=capsule, managed=mt)
    try:
        if t.device.device_type not in _DEVICE_KDL:
            raise UnsupportedError(f"'{name}': DLPack device type {t.device.device_type} is not CUDA memory")
        code = _DL_TO_NR.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
        if code is None:
            raise InvalidArgumentError(f"'{name}': DLPack type (code {t.dtype.code}, {t.dtype.bits} bits, "
                                       f"{t.dtype.lanes} lanes) has no netrun type")
        shape = tuple(int(t.shape[i]) for i in range(t.ndim))
        item = _ITEMSIZE[code]
        if t.strides and not _contiguous(shape, [int(t.strides[i]) * item for i in range(t.ndim)], item):
            raise InvalidArgumentError(f"'{name}': a strided device tensor; netrun reads dense row-major memory")
        tensor.ptr = int(t.data or 0) + int(t.byte_offset)
        tensor.code, tensor.shape, tensor.device = code, shape, int(t.device.device_id)
        tensor.nbytes = int(np.prod(shape, dtype=np.int64)) * item
        return tensor
    except BaseException:
        tensor.release()
        raise


# ---- outputs on the device ----
_live: dict[int, Any] = {}  # DLManagedTensor address -> what it keeps alive, until its deleter runs


@_DELETER
def _managed_deleter(mt: Any) -> None:
    _live.pop(C.addressof(mt.contents), None)


@C.CFUNCTYPE(None, C.c_void_p)
def _capsule_destructor(capsule: int) -> None:
    # never consumed (still named "dltensor"): the deleter is ours to call
    if _api.PyCapsule_IsValid(capsule, _NAME):
        p = _CAPSULE_GET(capsule, _NAME)
        if p:
            _live.pop(p, None)


class DeviceArray:
    """An output in device memory: Session.run(..., device_outputs=True). Exports __cuda_array_interface__ and
    __dlpack__ (torch.as_tensor / torch.from_dlpack / cupy.asarray read it without a copy). The memory belongs to
    the session and holds this output until the session's next run; copy it to keep it longer."""

    def __init__(self, view: Any, dtype: np.dtype, code: int) -> None:
        self.name = view.name.decode() if view.name else ""
        self.shape = tuple(int(view.dims[i]) for i in range(view.rank))
        self.dtype = dtype
        self.nbytes = int(view.nbytes)
        self.memory_type = int(view.memory_type)
        # CUDA and host: the address of the first element; OpenCL: the cl_mem, with the tensor at `offset`
        self.offset = int(view.offset)
        self.ptr = int(view.data or 0) + (0 if self.memory_type == MEM_OPENCL else self.offset)
        self.device = int(view.device)
        self._code = code

    def __repr__(self) -> str:
        where = {MEM_CUDA: "cuda", MEM_OPENCL: "opencl", MEM_HOST: "host"}.get(self.memory_type, "?")
        return f"DeviceArray('{self.name}', shape={self.shape}, dtype={self.dtype}, {where}:{self.device})"

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.memory_type != MEM_CUDA:
            raise AttributeError("not in CUDA memory")
        # the run that wrote it has finished: nothing to synchronise on (stream None)
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3,
                "strides": None, "stream": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        return ({MEM_CUDA: _KDL_CUDA, MEM_OPENCL: _KDL_OPENCL}.get(self.memory_type, _KDL_CPU), self.device)

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        if copy:
            raise BufferError("netrun DeviceArray: copy=True is not supported (export is always in place)")
        if self._code not in _NR_TO_DL:
            raise BufferError(f"netrun DeviceArray: dtype {self.dtype} has no DLPack type")
        mt = _DLManagedTensor()
        shape = (C.c_int64 * max(1, len(self.shape)))(*self.shape)
        code, bits = _NR_TO_DL[self._code]
        dev = self.__dlpack_device__()
        byte_offset = self.offset if self.memory_type == MEM_OPENCL else 0  # DLPack's cl_mem + byte offset
        mt.dl_tensor = _DLTensor(C.c_void_p(self.ptr), _DLDevice(dev[0], dev[1]), len(self.shape),
                                 _DLDataType(code, bits, 1), shape, None, byte_offset)
        mt.deleter = _managed_deleter
        addr = C.addressof(mt)
        _live[addr] = (mt, shape, self)
        return _api.PyCapsule_New(addr, _NAME, C.cast(_capsule_destructor, C.c_void_p))
