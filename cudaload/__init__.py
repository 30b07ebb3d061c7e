"""cudaload: CUDA from Python with no link-time CUDA dependency.

Importing this package loads no CUDA library and imports neither cffi's parser nor numpy: every
public name below is bound on first access, and libcuda/libnvrtc are dlopened on first use.
"""

from __future__ import annotations

from .errors import (  # noqa: F401  (the exception tree is cheap and always importable)
    CompileError,
    CudaLoadError,
    CudaUnavailableError,
    DriverError,
    ForkedProcessError,
    LaunchArgumentError,
    LibraryLoadError,
    LibraryNotFoundError,
    MissingSymbolError,
    NvrtcError,
)

from . import _hooks
from ._version import __version__  # noqa: F401


def _current_arch() -> int:
    from .device import current_arch

    return current_arch()


def _load(code):
    from .module import load_once

    return load_once(code)


# The compile side reaches the launch side only through these (see _hooks.py).
_hooks.provide(_current_arch, _load)

# public name -> submodule that defines it; resolved by __getattr__ on first access.
_LAZY = {
    "is_available": "availability",
    "status": "availability",
    "Status": "availability",
    "Program": "program",
    "ObjectCode": "objectcode",
    "Module": "module",
    "Kernel": "kernel",
    "RawKernel": "rawkernel",
    "Device": "device",
    "device_count": "device",
    "alloc": "memory",
    "DeviceBuffer": "memory",
    "Stream": "stream",
    "Event": "stream",
    "Graph": "graph",
    "Bundle": "bundle",
}

__all__ = sorted([*_LAZY, "errors", "CompileError", "CudaLoadError", "CudaUnavailableError",
                  "DriverError", "ForkedProcessError", "LaunchArgumentError", "LibraryLoadError",
                  "LibraryNotFoundError", "MissingSymbolError", "NvrtcError"])


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cudaload' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
