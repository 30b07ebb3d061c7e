"""cudaload: CUDA from Python with no link-time CUDA dependency.

Importing this package loads no CUDA library and imports neither cffi's parser nor numpy: every
public name below is bound on first access, and libcuda/libnvrtc are dlopened on first use.

Layers, each importing only from those before it (tests/test_layers.py checks, and that no
import circle exists):

0. foundation, in this folder: errors, lifetime (fork), _log, _version, releases (facts about
   CUDA releases), _trust and _untrusted (reading files others may have written), _atomic
   (atomic writes) and _file_lock (locks held through a file);
1. ``bindings``: finding and opening libcuda and libnvrtc, and checked calls into them;
2. ``compile``: programs, options, the include search, the toolchain, the kernel cache, bundles,
   compiled code (``ObjectCode``);
3. ``launch``: devices, memory, streams, graphs, modules, kernels and their arguments;
4. entry points, in this folder: availability (the status report) and _report (its text), cli
   and _compile_commands, ``wheelcheck`` (``cudaload check-wheel`` and the pytest plugin), and
   this package, which also hands the launch side's two services to the compile side
   (compile/_hooks.py).

Every lock is made with ``_thread`` (``_thread.allocate_lock()``, ``_thread.RLock()``: the very
objects ``threading.Lock()`` and ``threading.RLock()`` return), never with ``threading``: neither
``import cudaload``, a first compile nor a report without a driver imports ``threading`` otherwise,
and importing it costs a fresh process 0.6 ms once ``functools`` is in, 2.5 ms before.  One rule
for every module, so that none has to know which paths import it.  ``threading`` is imported only
for what ``_thread`` has no public form of: ``threading.local`` and ``threading.Thread``.

Entry point: may import every layer.
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

from .compile import _hooks
from ._version import __version__  # noqa: F401


def _current_arch() -> int:
    from .launch.device import current_arch

    return current_arch()


def _load(code):
    from .launch.module import load_once

    return load_once(code)


# The compile side reaches the launch side only through these (see _hooks.py).
_hooks.provide(_current_arch, _load)

# public name -> submodule that defines it; resolved by __getattr__ on first access.
_LAZY = {
    "is_available": "availability",
    "status": "availability",
    "Status": "availability",
    "Program": "compile.program",
    "compile_all": "compile.parallel",
    "ObjectCode": "compile.objectcode",
    "Module": "launch.module",
    "Kernel": "launch.kernel",
    "RawKernel": "launch.rawkernel",
    "Device": "launch.device",
    "device_count": "launch.device",
    "alloc": "launch.memory",
    "DeviceBuffer": "launch.memory",
    "alloc_host": "launch.pinned",
    "HostBuffer": "launch.pinned",
    "pin": "launch.pinned",
    "alloc_managed": "launch.managed",
    "ManagedBuffer": "launch.managed",
    "Stream": "launch.stream",
    "Event": "launch.stream",
    "Graph": "launch.graph",
    "Bundle": "compile.bundle",
}

__all__ = sorted([*_LAZY, "errors", "CompileError", "CudaLoadError", "CudaUnavailableError",
                  "DriverError", "ForkedProcessError", "LaunchArgumentError", "LibraryLoadError",
                  "LibraryNotFoundError", "MissingSymbolError", "NvrtcError"])


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cudaload' has no attribute {name!r}")
    # __import__, not importlib.import_module: importing importlib costs a compile in a fresh
    # process a millisecond or more
    value = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
