"""What compiling asks of the launch side: loading compiled code (``ObjectCode.load()``) and
making the current device's context current (the driver's linker links in it: linker.py).

The launch side is the layer above compiling, so no compile module imports it: the package
(cudaload/__init__.py) hands these functions over when it is imported, each importing the launch
module it needs on its first call.  Importing cudaload therefore still loads nothing.  (The
current device's architecture, which ``compile(arch=None)`` needs, is the bindings'
thread_device.py.)

Imports of cudaload: nothing.
"""

from __future__ import annotations

__all__ = ["provide", "load", "activate"]

TYPE_CHECKING = False  # mypy reads it as true; importing typing would cost the import its budget
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol, SupportsIndex, Union

    # A grid or block as launch/launch_types.py's Dims says it, spelled here again: that module
    # is the layer above's, which this one does not name, and the two must stay one type.
    _Dims = Union[SupportsIndex, tuple[SupportsIndex], tuple[SupportsIndex, SupportsIndex],
                  tuple[SupportsIndex, SupportsIndex, SupportsIndex]]

    class LoadedKernel(Protocol):
        """A kernel of a loaded module, as this layer can say it: its launch's shape and result
        (the launch side's ``cudaload.Kernel`` types its arguments and stream too)."""

        def __call__(self, grid: _Dims, block: _Dims, args: Any, *, shared_mem: SupportsIndex = 0,
                     stream: Any = None, cluster: _Dims | None = None,
                     cooperative: bool = False) -> None: ...

    class LoadedGlobal(Protocol):
        """A global of a loaded module: its device address and size (a ``DeviceBuffer``)."""

        ptr: int
        nbytes: int

    class Loaded(Protocol):
        """What ``ObjectCode.load()`` returns, as this layer can say it: the launch side's
        Module, a class of the layer above, which no compile module names (for type checkers
        neither: each layer reads only those below it).  Its kernels and globals are the launch
        side's ``cudaload.Kernel`` and ``cudaload.DeviceBuffer``; a host package that names
        ``cudaload.Module`` gets their full types."""

        def get_kernel(self, name: str, signature: str | None = None) -> LoadedKernel: ...

        def get_global(self, name: str, device: Any = None) -> LoadedGlobal: ...

_load: Callable[[object], Loaded] | None = None
_activate: Callable[[], object] | None = None


def provide(load: Callable[[object], Loaded], activate: Callable[[], object]) -> None:
    """Install the launch side's ``load(ObjectCode) -> Module`` and ``activate()``, which makes
    the current device's primary context current in this thread."""
    global _load, _activate
    _load, _activate = load, activate


def load(code) -> Loaded:
    """The Module holding ``code``, loaded once for all copies of it."""
    if _load is None:
        raise RuntimeError("cudaload.compile used before the package provided its hooks")
    return _load(code)


def activate() -> None:
    """Make the current device's primary context current in this thread.  Raises CudaLoadError
    (CudaUnavailableError without a device)."""
    if _activate is None:
        raise RuntimeError("cudaload.compile used before the package provided its hooks")
    _activate()
