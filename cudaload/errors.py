"""The exception tree: every error cudaload raises, as data.

An error says what happened (``args[0]``) and, in ``.hint``, the next step for the user; ``str()``
joins the two.  Every class keeps the constructor arguments it was built from, so each one pickles
(exceptions cross process pools and ``concurrent.futures``).  Multiple inheritance keeps
``except OSError`` / ``except RuntimeError`` / ``except TypeError`` working for callers that know
nothing of cudaload.

Imports nothing of cudaload: ``import cudaload`` imports this module and nothing else.  The errors
made from a driver or NVRTC result code are built in driver.py and nvrtc.py, which know the codes.
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
    "LinkError",
    "LaunchArgumentError",
    "NotPicklableError",
    "DLPackError",
    "ForkedProcessError",
    "DriverNotFoundError",
    "DriverLoadError",
    "NotADriverError",
    "DriverUnavailableError",
]


class CudaLoadError(Exception):
    """Base of every error cudaload raises.  ``.hint`` is the next step, "" when there is none."""

    _NEXT_STEP = " Next step: "  # how str() puts the hint after what happened
    hint: str  # set from the constructor's fields, as every field below

    # ``message`` is positional-only: DriverError and NvrtcError keep a field of the same name.
    def __init__(self, message: str = "", /, *, hint: str = "", **fields: object) -> None:
        super().__init__(message)
        self._fields = {"hint": hint, **fields}
        for key, value in self._fields.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        what = super().__str__()
        return f"{what}{self._NEXT_STEP}{self.hint}" if self.hint else what

    def __reduce__(self) -> tuple:
        return (_rebuild, (type(self), self.args[0] if self.args else "", self._fields))


def _rebuild(cls: type[CudaLoadError], message: str, fields: dict) -> CudaLoadError:
    err = cls.__new__(cls)
    CudaLoadError.__init__(err, message, **fields)
    return err


class LibraryNotFoundError(CudaLoadError, OSError):
    """A CUDA library was not found.  ``.library`` names it, ``.tried`` lists every attempt."""

    library: str
    tried: tuple[str, ...]

    def __init__(self, message: str = "", *, library: str = "", tried: tuple[str, ...] | list[str] = (),
                 hint: str = "") -> None:
        super().__init__(message, hint=hint, library=library, tried=tuple(tried))


class LibraryLoadError(LibraryNotFoundError):
    """A CUDA library file was found but the dynamic loader refused it (wrong file, arch, or deps)."""


class MissingSymbolError(CudaLoadError, AttributeError):
    """The library loaded but lacks an entry point: it is too old, or not the library it claims."""

    library: str
    symbol: str
    path: str | None

    def __init__(self, message: str = "", *, library: str = "", symbol: str = "",
                 path: str | None = None, hint: str = "") -> None:
        super().__init__(message, hint=hint, library=library, symbol=symbol, path=path)


class CudaUnavailableError(CudaLoadError, RuntimeError):
    """CUDA cannot be used in this process (``cudaload.status()`` says why): the one error a host
    package catches to fall back to the CPU.

    Every such condition raises an instance of it: no driver library, one the loader refused, a
    failed ``cuInit``, no device, use after ``fork()``.  The subclasses below are also the error
    callers caught before (``LibraryNotFoundError``, ``DriverError``, ...)."""


class ForkedProcessError(CudaUnavailableError):
    """CUDA was initialised in a parent process; a forked child cannot use it."""


class DriverError(CudaLoadError, RuntimeError):
    """A CUDA driver call failed.  ``.code``, ``.name``, ``.message`` and ``.function`` say how."""

    _NEXT_STEP = "; "
    code: int
    name: str
    function: str
    message: str  # the driver's own words (``detail=``)

    def __init__(self, message: str = "", *, code: int = 0, name: str = "", function: str = "",
                 detail: str = "", hint: str = "") -> None:
        super().__init__(message, hint=hint, code=code, name=name, function=function,
                         message=detail)


class NvrtcError(CudaLoadError, RuntimeError):
    """An NVRTC call failed.  Same fields as :class:`DriverError`."""

    code: int
    name: str
    function: str
    message: str

    def __init__(self, message: str = "", *, code: int = 0, name: str = "", function: str = "",
                 detail: str = "", hint: str = "", **extra: object) -> None:
        super().__init__(message, hint=hint, code=code, name=name, function=function,
                         message=detail, **extra)


# nvrtcResult NVRTC_ERROR_COMPILATION, written out because this module imports no bindings (it
# is imported by ``import cudaload``); tests/test_errors.py checks it against headers/nvrtc.h.
_NVRTC_ERROR_COMPILATION = 6


class CompileError(NvrtcError):
    """NVRTC rejected the source.  ``.log``, ``.source``, ``.options`` and ``.name`` say why;
    from ``compile_all``, ``.failures`` holds (index, name, error) of each program that failed.
    ``.function`` is the call that refused it: ``nvrtcCompileProgram``, or libNVVM's."""

    _NEXT_STEP = "\nNext step: "  # after the log, the source excerpt and the options
    log: str
    source: str
    options: tuple[str, ...]
    failures: tuple

    def __init__(self, message: str = "", *, log: str = "", source: str = "",
                 options: tuple[str, ...] | list[str] = (), name: str = "", code: int = _NVRTC_ERROR_COMPILATION,
                 hint: str = "", failures: tuple = (),
                 function: str = "nvrtcCompileProgram") -> None:
        CudaLoadError.__init__(self, message, hint=hint, code=code, function=function,
                               log=log, source=source, options=tuple(options), name=name,
                               message=log, failures=tuple(failures))


class LinkError(CudaLoadError, RuntimeError):
    """A link of device code failed (``cudaload.Linker``).  ``.log`` is the linker's error log,
    ``.info_log`` its info log, ``.symbol`` the undefined symbol the log names ("" when the
    failure is another), ``.linker`` which linker ran ("nvJitLink" or "driver") and ``.result``
    the name of its answer (``NVJITLINK_ERROR_PTX_COMPILE``, ``CUDA_ERROR_INVALID_IMAGE``),
    ``.function`` the call that gave it (``nvJitLinkComplete``; "" where not known)."""

    _NEXT_STEP = "\nNext step: "  # after the log
    log: str
    info_log: str
    symbol: str
    linker: str
    result: str
    function: str

    def __init__(self, message: str = "", *, log: str = "", info_log: str = "", symbol: str = "",
                 linker: str = "", result: str = "", hint: str = "", function: str = "") -> None:
        super().__init__(message, hint=hint, log=log, info_log=info_log, symbol=symbol,
                         linker=linker, result=result, function=function)


class LaunchArgumentError(CudaLoadError, TypeError):
    """A kernel argument does not fit its parameter.  The message names both and the signature."""


class NotPicklableError(CudaLoadError, TypeError):
    """An object holding GPU state was pickled or copied; ``.hint`` says what to send instead.

    A TypeError, as ``pickle`` raises for any object it cannot pickle."""


class DLPackError(CudaLoadError, BufferError):
    """This memory cannot be exported as asked (``BufferError``, as the DLPack protocol says)."""


# The forms "CUDA cannot be used here" takes, each also the error of what went wrong, so that
# ``except cudaload.CudaUnavailableError`` and ``except LibraryNotFoundError`` (or ``OSError``,
# ``DriverError``) both catch it.  The bindings choose one where the error is made.

class DriverNotFoundError(LibraryNotFoundError, CudaUnavailableError):
    """No CUDA driver library (libcuda) was found."""


class DriverLoadError(LibraryLoadError, CudaUnavailableError):
    """A CUDA driver library was found but the dynamic loader refused it."""


class NotADriverError(MissingSymbolError, CudaUnavailableError):
    """The file loaded as the CUDA driver lacks an entry point every driver has."""


class DriverUnavailableError(DriverError, CudaUnavailableError):
    """The driver loaded but cannot be used: ``cuInit`` failed, no device is visible, or the
    device refuses this process (``.code`` and ``.name`` say which)."""
