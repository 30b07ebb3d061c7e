"""The exception tree, and the translation of CUDA and NVRTC result codes into it.

Every class keeps the constructor arguments it was built from, so each one pickles (exceptions cross
process pools and ``concurrent.futures``).  Multiple inheritance keeps ``except OSError`` /
``except RuntimeError`` / ``except TypeError`` working for callers that know nothing of cudaload.
"""

from __future__ import annotations

__all__ = [
    "CudaLoadError",
    "LibraryNotFoundError",
    "LibraryLoadError",
    "MissingSymbolError",
    "CudaUnavailableError",
    "DriverError",
    "NvrtcError",
    "CompileError",
    "LaunchArgumentError",
    "ForkedProcessError",
    "driver_error",
    "nvrtc_error",
]


class CudaLoadError(Exception):
    """Base of every error cudaload raises."""

    # ``message`` is positional-only: DriverError and NvrtcError keep a field of the same name.
    def __init__(self, message: str = "", /, **fields):
        super().__init__(message)
        self._fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def __reduce__(self):
        return (_rebuild, (type(self), str(self), self._fields))


def _rebuild(cls, message, fields):
    err = cls.__new__(cls)
    CudaLoadError.__init__(err, message, **fields)
    return err


class LibraryNotFoundError(CudaLoadError, OSError):
    """A CUDA library was not found.  ``.library`` names it, ``.tried`` lists every attempt."""

    def __init__(self, message: str = "", *, library: str = "", tried=()):
        super().__init__(message, library=library, tried=tuple(tried))


class LibraryLoadError(LibraryNotFoundError):
    """A CUDA library file was found but the dynamic loader refused it (wrong file, arch, or deps)."""


class MissingSymbolError(CudaLoadError, AttributeError):
    """The library loaded but lacks an entry point: it is too old, or not the library it claims."""

    def __init__(self, message: str = "", *, library: str = "", symbol: str = "", path=None):
        super().__init__(message, library=library, symbol=symbol, path=path)


class CudaUnavailableError(CudaLoadError, RuntimeError):
    """A GPU feature was used where ``cudaload.status()`` says CUDA is not available."""


class ForkedProcessError(CudaUnavailableError):
    """CUDA was initialised in a parent process; a forked child cannot use it."""


class DriverError(CudaLoadError, RuntimeError):
    """A CUDA driver call failed.  ``.code``, ``.name``, ``.message`` and ``.function`` say how."""

    def __init__(self, message: str = "", *, code: int = 0, name: str = "", function: str = "",
                 detail: str = ""):
        super().__init__(message, code=code, name=name, function=function, message=detail)


class NvrtcError(CudaLoadError, RuntimeError):
    """An NVRTC call failed.  Same fields as :class:`DriverError`."""

    def __init__(self, message: str = "", *, code: int = 0, name: str = "", function: str = "",
                 detail: str = "", **extra):
        super().__init__(message, code=code, name=name, function=function, message=detail, **extra)


# nvrtcResult NVRTC_ERROR_COMPILATION, written out because this module imports no bindings (it
# is imported by ``import cudaload``); tests/test_errors.py checks it against headers/nvrtc.h.
_NVRTC_ERROR_COMPILATION = 6


class CompileError(NvrtcError):
    """NVRTC rejected the source.  ``.log``, ``.source``, ``.options`` and ``.name`` say why."""

    def __init__(self, message: str = "", *, log: str = "", source: str = "", options=(),
                 name: str = "", code: int = _NVRTC_ERROR_COMPILATION):
        CudaLoadError.__init__(self, message, code=code, function="nvrtcCompileProgram",
                               log=log, source=source, options=tuple(options), name=name,
                               message=log)


class LaunchArgumentError(CudaLoadError, TypeError):
    """A kernel argument does not fit its parameter.  The message names both and the signature."""


# Codes whose plain meaning the driver's one-line message does not convey; the hint is the next step.
_DRIVER_HINTS = {
    "CUDA_ERROR_NO_DEVICE": "no CUDA GPU is visible: check `nvidia-smi` and CUDA_VISIBLE_DEVICES",
    "CUDA_ERROR_INSUFFICIENT_DRIVER": "the driver is older than this CUDA code needs: upgrade it",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": (
        "the PTX came from an NVRTC newer than the driver: upgrade the driver, or compile to CUBIN"),
    "CUDA_ERROR_OUT_OF_MEMORY": "free device memory (other processes: `nvidia-smi`) or use less",
    "CUDA_ERROR_ILLEGAL_ADDRESS": (
        "a kernel touched memory it does not own; the context is now unusable: restart the process"),
    "CUDA_ERROR_LAUNCH_FAILED": "a kernel faulted; the context is now unusable: restart the process",
    "CUDA_ERROR_NOT_INITIALIZED": "cuInit has not succeeded in this process",
}


def driver_error(code: int, function: str) -> DriverError:
    """Build the :class:`DriverError` for a failed driver call; asks the driver for its own words."""
    from . import driver

    name, text = driver.describe(code)
    hint = _DRIVER_HINTS.get(name)
    message = f"{function} failed: {name} ({code}): {text}"
    if hint:
        message += f"; {hint}"
    return DriverError(message, code=code, name=name, function=function, detail=text)


def nvrtc_error(code: int, function: str) -> NvrtcError:
    """Build the :class:`NvrtcError` for a failed NVRTC call."""
    from . import nvrtc

    name = nvrtc.describe(code)
    return NvrtcError(f"{function} failed: {name} ({code})", code=code, name=name,
                      function=function, detail=name)
