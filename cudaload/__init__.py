"""cudaload: CUDA from Python with no link-time CUDA dependency.

Importing this package loads no CUDA library and imports neither cffi's parser nor numpy: every
public name below is bound on first access, and libcuda/libnvrtc are dlopened on first use.

Layers, each importing only from those before it (tests/test_layers.py checks, and that no
import circle exists):

0. foundation: errors and _version, in this folder, and ``_base``: lifetime (fork), _log,
   releases (facts about CUDA releases), _untrusted (files others may have written: whether to
   believe them, and reading them safely), _atomic (atomic writes), _file_lock (locks held
   through a file), _warn (warnings attributed to the caller's line), _demangle (C++ mangled
   names read: a kernel's parameter types, a link's undefined symbol), _sigint (Ctrl-C held off
   a thread inside NVRTC or nvJitLink) and _program_specs (``--programs MODULE:NAME``);
1. ``bindings``: finding and opening libcuda and libnvrtc, and checked calls into them;
2. ``compile``: programs, options, the include search (``compile.includes``), the toolchain,
   the kernel cache, bundles, compiled code (``ObjectCode``), compile_all
   (``compile.parallel``) and the linker (``compile.link``);
3. ``launch``: devices, memory, streams, graphs, modules, kernels and their arguments;
4. entry points: availability (the status report) and _report (its text), in this folder,
   ``cli`` (the command line: its parser, _compile_commands, _link_command, _kernels),
   ``wheelcheck`` (``cudaload check-wheel`` and the pytest
   plugin), and this package, which also hands two services of the launch side (loading code,
   binding a context) to the compile side (compile/_hooks.py).

Every lock is made with ``_thread`` (``_thread.allocate_lock()``, ``_thread.RLock()``: the very
objects ``threading.Lock()`` and ``threading.RLock()`` return), never with ``threading``: neither
``import cudaload``, a first compile nor a report without a driver imports ``threading`` otherwise,
and importing it costs a fresh process 0.6 ms once ``functools`` is in, 2.5 ms before.  One rule
for every module, so that none has to know which paths import it.  ``threading`` is imported only
for what ``_thread`` has no public form of: ``threading.local`` and ``threading.Thread``.

Entry point: may import every layer.
"""

from __future__ import annotations

# The exception tree is cheap and always importable (each ``X as X``: exported, for mypy --strict).
from .errors import (  # noqa: F401
    CompileError as CompileError,
    CudaLoadError as CudaLoadError,
    CudaUnavailableError as CudaUnavailableError,
    DriverError as DriverError,
    ForkedProcessError as ForkedProcessError,
    LaunchArgumentError as LaunchArgumentError,
    LibraryLoadError as LibraryLoadError,
    LibraryNotFoundError as LibraryNotFoundError,
    LinkError as LinkError,
    MissingSymbolError as MissingSymbolError,
    NvrtcError as NvrtcError,
)

from .compile import _hooks
from ._version import __version__ as __version__  # noqa: F401  (as: exported to mypy --strict)

# What __getattr__ binds on first access, for type checkers: mypy reads TYPE_CHECKING as true, so
# ``cudaload.Program`` is the class to it (each ``X as X``: exported, for ``mypy --strict``); at
# run time the block never runs (no typing import, nothing loaded).  tests/test_types.py keeps it
# equal to _LAZY and checks a consumer with it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .availability import Status as Status, is_available as is_available, status as status
    from .compile.bundle import Bundle as Bundle
    from .compile.link.linker import Linker as Linker
    from .compile.objectcode import ObjectCode as ObjectCode
    from .compile.parallel.batch import compile_all as compile_all
    from .compile.program import Program as Program
    from .launch.device import Device as Device, device_count as device_count
    from .launch.rank import device_for_rank as device_for_rank
    from .launch.copies import copy_batch as copy_batch
    from .launch.conditional_nodes import (ConditionalHandle as ConditionalHandle,
                                           ConditionalNode as ConditionalNode)
    from .launch.graph import Graph as Graph
    from .launch.graph_nodes import GraphNode as GraphNode, KernelNode as KernelNode
    from .launch.ipc import import_ipc as import_ipc
    from .launch.kernel import Kernel as Kernel
    from .launch.managed import ManagedBuffer as ManagedBuffer, alloc_managed as alloc_managed
    from .launch.memory import DeviceBuffer as DeviceBuffer, alloc as alloc
    from .launch.mempool import MemoryPool as MemoryPool, memory_pool as memory_pool
    from .launch.module import Module as Module
    from .launch.pinned import HostBuffer as HostBuffer, alloc_host as alloc_host, pin as pin
    from .launch.rawkernel import RawKernel as RawKernel
    from .launch.stream import Event as Event, Stream as Stream
    from .launch.tensor_map import TensorMap as TensorMap
    from .launch.view import ArrayView as ArrayView, view as view


def _load(code):
    from .launch.module import load_once  # deferred: import cudaload loads no launch module

    return load_once(code)


def _activate() -> None:
    from .launch.device import activate  # deferred: import cudaload loads no launch module

    activate(owning=True)  # the link's state belongs to the context current: ours, bound again


# The compile side reaches the launch side only through these (see _hooks.py).
_hooks.provide(_load, _activate)

# public name -> submodule that defines it; resolved by __getattr__ on first access.
_LAZY = {
    "is_available": "availability",
    "status": "availability",
    "Status": "availability",
    "Program": "compile.program",
    "compile_all": "compile.parallel.batch",
    "ObjectCode": "compile.objectcode",
    "Module": "launch.module",
    "Kernel": "launch.kernel",
    "RawKernel": "launch.rawkernel",
    "Device": "launch.device",
    "device_count": "launch.device",
    "device_for_rank": "launch.rank",
    "alloc": "launch.memory",
    "DeviceBuffer": "launch.memory",
    "memory_pool": "launch.mempool",
    "MemoryPool": "launch.mempool",
    "alloc_host": "launch.pinned",
    "HostBuffer": "launch.pinned",
    "pin": "launch.pinned",
    "alloc_managed": "launch.managed",
    "ManagedBuffer": "launch.managed",
    "Stream": "launch.stream",
    "Event": "launch.stream",
    "Graph": "launch.graph",
    "GraphNode": "launch.graph_nodes",
    "KernelNode": "launch.graph_nodes",
    "ConditionalHandle": "launch.conditional_nodes",
    "ConditionalNode": "launch.conditional_nodes",
    "import_ipc": "launch.ipc",
    "copy_batch": "launch.copies",
    "TensorMap": "launch.tensor_map",
    "view": "launch.view",
    "ArrayView": "launch.view",
    "Bundle": "compile.bundle",
    "Linker": "compile.link.linker",
}

__all__ = sorted([*_LAZY, "__version__", "errors", "CompileError", "CudaLoadError", "CudaUnavailableError",
                  "DriverError", "ForkedProcessError", "LaunchArgumentError", "LibraryLoadError",
                  "LibraryNotFoundError", "LinkError", "MissingSymbolError", "NvrtcError"])


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
