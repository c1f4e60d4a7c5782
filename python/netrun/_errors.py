"""netrun.Error and one subclass per netrun_status; each carries the library's message."""
from __future__ import annotations


class Error(Exception):
    """A netrun call failed. str(error) is the library's message (what was wrong and where)."""

    status: int = 8
    status_name: str = "NETRUN_ERR_INTERNAL"

    @property
    def message(self) -> str:
        return str(self)


class InvalidArgumentError(Error, ValueError):
    """A bad argument: unknown input or output name, wrong dtype or shape, a bad option."""
    status, status_name = 1, "NETRUN_ERR_INVALID_ARGUMENT"


class InvalidModelError(Error, ValueError):
    """The model file or graph is malformed (or is not ONNX)."""
    status, status_name = 2, "NETRUN_ERR_INVALID_MODEL"


class UnsupportedError(Error):
    """An op, dtype or attribute no usable backend supports (or, for now, device memory as input)."""
    status, status_name = 3, "NETRUN_ERR_UNSUPPORTED"


class OutOfMemoryError(Error, MemoryError):
    """Host or device allocation failed (or the session's memory_budget is exceeded)."""
    status, status_name = 4, "NETRUN_ERR_OUT_OF_MEMORY"


class BackendError(Error):
    """A backend failed (driver error, kernel failure)."""
    status, status_name = 5, "NETRUN_ERR_BACKEND"


class FileError(Error, OSError):
    """A file could not be read."""
    status, status_name = 6, "NETRUN_ERR_IO"


class StateError(Error):
    """The call is not allowed now: outputs before a run, placement before prepare, a closed session."""
    status, status_name = 7, "NETRUN_ERR_STATE"


class InternalError(Error):
    """A bug in netrun: please report it with the message."""
    status, status_name = 8, "NETRUN_ERR_INTERNAL"


# index = netrun_status (0 = OK is never raised)
BY_STATUS: tuple[type[Error], ...] = (InternalError, InvalidArgumentError, InvalidModelError, UnsupportedError,
                                      OutOfMemoryError, BackendError, FileError, StateError, InternalError)


def error_for(status: int, message: str) -> Error:
    cls = BY_STATUS[status] if 0 < status < len(BY_STATUS) else InternalError
    return cls(message)
