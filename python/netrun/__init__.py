"""netrun: a DNN inference runtime (ONNX models on CPU, CUDA and OpenCL backend plugins), from Python.

    import netrun
    sess = netrun.Session("model.onnx", backends="cpu", threads=4)
    y = sess.run({"input": x})[0]

See docs/python.md for the whole API, output ownership, threads and DLPack.
"""
from ._api import (BackendInfo, DeviceArray, Model, NodePlacement, OpSupport, Outputs, Profile, ProfileEvent, Session,
                   SessionStats, TensorInfo, backends, ops, read_tensor, version)
from ._errors import (BackendError, Error, FileError, InternalError, InvalidArgumentError, InvalidModelError,
                      OutOfMemoryError, StateError, UnsupportedError)

__version__ = version()

__all__ = ["BackendError", "BackendInfo", "DeviceArray", "Error", "FileError", "InternalError", "InvalidArgumentError",
           "InvalidModelError", "Model", "NodePlacement", "OpSupport", "OutOfMemoryError", "Outputs", "Profile",
           "ProfileEvent", "Session", "SessionStats", "StateError", "TensorInfo", "UnsupportedError", "backends",
           "ops", "read_tensor", "version", "__version__"]
