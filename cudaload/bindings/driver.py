"""Checked calls into the CUDA driver.

``api()`` gives the driver's entry points as attributes, each resolved once through
``cuGetProcAddress`` at the CUDA version ``headers/cuda.h`` was written for (so the ABI matches the
declaration whatever newer variants the driver has), falling back to the exported symbol on drivers
without ``cuGetProcAddress``.  A symbol the driver lacks raises :class:`MissingSymbolError` only when
that entry point is first used.  ``init()`` runs ``cuInit`` once and remembers a failure.
``error()`` turns a failed call's ``CUresult`` into the :class:`DriverError` that says what to do;
where the code means CUDA cannot be used in this process at all (any failed ``cuInit``, no
device, a device that refuses this process) it is a :class:`DriverUnavailableError`, which is
also a :class:`CudaUnavailableError`.
"""

from __future__ import annotations

import re
import _thread

from . import _loader
from .._base import lifetime
from ..errors import (CudaLoadError, DriverError, DriverUnavailableError, ForkedProcessError,
                      MissingSymbolError)

__all__ = ["api", "init", "call", "check", "describe", "error", "unavailable_code", "version",
           "forget_load_failure", "HEADER_CUDA_VERSION"]

HEADER_CUDA_VERSION = 13000  # headers/cuda.h is transcribed from CUDA 13.0
_VERSION_SUFFIX = re.compile(r"_v\d+$")
# Declared with their 12.x ABI: in 13.0 the base name resolves to a _v2 taking an extra CUcontext.
_RESOLVE_AT = {"cuCtxSynchronize": 12000, "cuCtxGetDevice": 12000,
               # Declared with its 12.8 ABI (with failIdx), which 13.0 replaced by a _v2 without.
               "cuMemcpyBatchAsync": 12080}
# Declared with their 13.0 ABI; a driver before 13.0 is asked for the versioned symbol itself
# (exported since 12.2), as a driver before 12.2 resolves the base name to an older ABI and would
# be called with the wrong arguments: there the symbol is missing, a MissingSymbolError.
# cuGraphAddNode_v2 likewise, exported since 12.3: a 12.2 driver's base name has no edge data.
_EXACT_BEFORE_13 = frozenset({"cuMemPrefetchAsync_v2", "cuMemAdvise_v2", "cuMemcpyBatchAsync_v2",
                              "cuGraphAddNode_v2"})
# The release that added an entry point, where a driver still in use may lack it: its
# MissingSymbolError names the release to upgrade to.
_ADDED_IN = {"cuMemPrefetchAsync_v2": 12020, "cuMemAdvise_v2": 12020, "cuGraphAddNode_v2": 12030,
             "cuGraphConditionalHandleCreate": 12030, "cuStreamBeginCaptureToGraph": 12030,
             # sharing memory pools between processes
             **dict.fromkeys(("cuMemPoolExportToShareableHandle",
                              "cuMemPoolImportFromShareableHandle", "cuMemPoolExportPointer",
                              "cuMemPoolImportPointer"), 11020)}


class Driver:
    """The driver's entry points, resolved on first attribute access and then cached on the object."""

    def __init__(self, library: _loader.Library):
        self.library = library
        self.ffi = library.ffi
        self._lib = library.lib
        out = self.ffi.new("int *")
        rc = self._lib.cuDriverGetVersion(out)
        self.version = 0 if rc else out[0]
        try:
            self._proc_address = self._lib.cuGetProcAddress_v2
        except (AttributeError, self.ffi.error):  # drivers before CUDA 12.0; cffi raises ffi.error
            self._proc_address = None

    def __getattr__(self, name: str):
        if not name.startswith("cu"):
            raise AttributeError(name)
        fn = self._resolve(name)
        setattr(self, name, fn)
        return fn

    def _resolve(self, name: str):
        from ._cuda_protos import PROTOTYPES  # deferred: only this path needs it

        proto = PROTOTYPES.get(name)
        if proto is None:
            raise AttributeError(f"{name} is not declared in headers/cuda.h")
        exact = name in _EXACT_BEFORE_13 and self.version < HEADER_CUDA_VERSION
        if self._proc_address is not None and not exact:
            ffi = self.ffi
            pfn = ffi.new("void **")
            status = ffi.new("CUdriverProcAddressQueryResult *")
            wanted = _RESOLVE_AT.get(name, HEADER_CUDA_VERSION)
            if self.version:
                wanted = min(wanted, self.version)
            rc = self._proc_address(_VERSION_SUFFIX.sub("", name).encode(), pfn, wanted,
                                    ffi.integer_const("CU_GET_PROC_ADDRESS_DEFAULT"), status)
            if not rc and pfn[0] != ffi.NULL:
                return ffi.cast(proto, pfn[0])
        try:
            return getattr(self._lib, name)
        except (AttributeError, self.ffi.error):  # ABI-mode cffi raises ffi.error for an absent symbol
            raise MissingSymbolError(
                f"the CUDA driver at {self.library.path} (CUDA {format_version(self.version)}) "
                f"lacks {name}; it needs a newer driver{_release_of(name)}.",
                hint="upgrade the NVIDIA driver",
                library="cuda", symbol=name, path=self.library.path) from None


def _release_of(name: str) -> str:
    """", one of CUDA 12.2 or newer" for an entry point :data:`_ADDED_IN` names, else ""."""
    added = _ADDED_IN.get(name)
    return f", one of CUDA {format_version(added)} or newer" if added else ""


_api: Driver | None = None
_api_lock = _thread.allocate_lock()
_init_lock = _thread.allocate_lock()
_init_result: CudaLoadError | bool | None = None


def api() -> Driver:
    """The driver's entry points, without ``cuInit``.  Raises the loader's errors."""
    global _api
    if _api is None:
        library = _loader.driver()
        with _api_lock:
            if _api is None:
                _api = Driver(library)
    return _api


def init() -> Driver:
    """The driver after a successful ``cuInit(0)``; the first failure is remembered and re-raised.
    Raises :class:`CudaUnavailableError` (the loader's errors, a failed ``cuInit``, after fork)."""
    global _init_result
    if lifetime.forked():
        raise ForkedProcessError(
            "CUDA was initialised in the parent process and cannot be used after fork().",
            hint="start workers with the 'spawn' method "
                 "(multiprocessing.set_start_method('spawn') or get_context('spawn')).")
    if _init_result is True and _api is not None:
        return _api
    with _init_lock:
        if _init_result is None:
            try:
                rc = api().cuInit(0)
                if rc:
                    # Whatever the code, cuInit answers the same for the life of the process
                    # (and is remembered here): CUDA is unavailable, as is_available() says.
                    raise error(int(rc), "cuInit", unavailable=True)
                _init_result = True
                lifetime.mark_unforkable()
            except CudaLoadError as err:
                _init_result = err
    if isinstance(_init_result, CudaLoadError):
        raise _init_result.with_traceback(None)
    return api()


def forget_load_failure() -> None:
    """Let the next :func:`init` try again when the library itself did not load.  A failed
    ``cuInit`` stays remembered: the driver answers the same for the life of the process."""
    global _init_result
    with _init_lock:
        if isinstance(_init_result, CudaLoadError) and not isinstance(_init_result, DriverError):
            _init_result = None


lifetime.on_forget(forget_load_failure)


def _in_child() -> None:
    global _init_lock
    _init_lock = _thread.allocate_lock()  # a thread of the parent may have held it at the fork
    forget_load_failure()  # and the child looks for the library again


lifetime.on_fork_in_child(_in_child)


def check(rc: int, function: str) -> None:
    """Raise the :class:`DriverError` for ``rc`` unless it is ``CUDA_SUCCESS``."""
    if rc:
        raise error(int(rc), function)


def call(name: str, *args) -> None:
    """Call the initialised driver's ``name`` with ``args``; raise :class:`DriverError` on failure."""
    check(getattr(init(), name)(*args), name)


def describe(code: int) -> tuple[str, str]:
    """(name, message) of a ``CUresult``, from the driver when it can say, else from the header."""
    try:
        drv = api()
    except CudaLoadError:
        drv = None
    if drv is not None:
        ffi = drv.ffi
        name_p, text_p = ffi.new("char **"), ffi.new("char **")
        if not drv.cuGetErrorName(code, name_p) and not drv.cuGetErrorString(code, text_p):
            return ffi.string(name_p[0]).decode(), ffi.string(text_p[0]).decode()
    from ._cuda_ffi import ffi  # deferred: only this path needs it

    name = ffi.string(ffi.cast("CUresult", code))
    return (name if not name.isdigit() else f"CUresult {code}"), "unknown error"


# Codes whose plain meaning the driver's one-line message does not convey; the hint is the next step.
_HINTS = {
    "CUDA_ERROR_NO_DEVICE": "no CUDA GPU is visible: check `nvidia-smi` and CUDA_VISIBLE_DEVICES",
    "CUDA_ERROR_INSUFFICIENT_DRIVER": "the driver is older than this CUDA code needs: upgrade it",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": (
        "the PTX came from an NVRTC newer than the driver: upgrade the driver, or compile to CUBIN"),
    "CUDA_ERROR_OUT_OF_MEMORY": "free device memory (other processes: `nvidia-smi`) or use less",
    "CUDA_ERROR_ILLEGAL_ADDRESS": (
        "a kernel touched memory it does not own; the context is now unusable: restart the process"),
    "CUDA_ERROR_LAUNCH_FAILED": "a kernel faulted; the context is now unusable: restart the process",
    "CUDA_ERROR_NOT_INITIALIZED": "cuInit has not succeeded in this process",
    "CUDA_ERROR_STUB_LIBRARY": (
        "this libcuda is the toolkit's link stub: install the NVIDIA driver, or point "
        "CUDALOAD_LIBCUDA at its libcuda.so.1"),
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": (
        "libcuda and the kernel module are of different driver releases: reboot after a driver "
        "upgrade, or reinstall the driver"),
    # From cuModuleGetFunction, cuLibraryGetKernel, cuModuleGetGlobal: a name the module lacks.
    "CUDA_ERROR_NOT_FOUND": (
        "check the name: a C++ (not extern \"C\") kernel or variable is found through a name "
        "expression (Program(..., name_expressions=[...]))"),
    "CUDA_ERROR_DEVICE_UNAVAILABLE": (
        "the GPU is in exclusive-process or prohibited compute mode (`nvidia-smi -q -d COMPUTE`) "
        "and not free for this process"),
}

# Codes that mean no CUDA work can run in this process whichever call returns them: no device,
# a driver that cannot serve it, a device that refuses it (compute mode, MPS).  Out of memory,
# a kernel fault, a missing entry point or a bad argument are not among them.
_UNAVAILABLE_NAMES = (
    "CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_STUB_LIBRARY", "CUDA_ERROR_NOT_INITIALIZED",
    "CUDA_ERROR_DEINITIALIZED", "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA_ERROR_DEVICE_NOT_LICENSED",
    "CUDA_ERROR_SYSTEM_NOT_READY", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "CUDA_ERROR_MPS_CONNECTION_FAILED",
    "CUDA_ERROR_MPS_SERVER_NOT_READY", "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
    "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED")
_unavailable_codes: frozenset[int] | None = None
_UNAVAILABLE_HINT = ("check `nvidia-smi`; after a driver upgrade, reboot (kernel module and "
                     "library must match); `cudaload doctor` reports the rest")


def unavailable_code(code: int) -> bool:
    """Whether a failed call's ``code`` means CUDA cannot be used in this process at all."""
    global _unavailable_codes
    if _unavailable_codes is None:
        from ._cuda_ffi import ffi  # deferred: only this path needs it

        _unavailable_codes = frozenset(map(ffi.integer_const, _UNAVAILABLE_NAMES))
    return code in _unavailable_codes


def error(code: int, function: str, *, unavailable: bool | None = None) -> DriverError:
    """The :class:`DriverError` for a failed driver call, in the driver's own words where it can
    say them, with the next step for the codes that need one: a :class:`DriverUnavailableError`
    when ``unavailable`` (default: when :func:`unavailable_code` says so)."""
    name, text = describe(code)
    if unavailable is None:
        unavailable = unavailable_code(code)
    hint = _HINTS.get(name, _UNAVAILABLE_HINT if unavailable else "")
    cls = DriverUnavailableError if unavailable else DriverError
    return cls(f"{function} failed: {name} ({code}): {text}", code=code, name=name,
               function=function, detail=text, hint=hint)


def version() -> int:
    """The driver's CUDA version as an int, e.g. 12020.  Raises the loader's errors."""
    return api().version


def format_version(v: int) -> str:
    """12020 -> "12.2"."""
    return f"{v // 1000}.{v % 1000 // 10}" if v else "unknown"
