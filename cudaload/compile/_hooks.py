"""What compiling asks of the launch side: the current device's architecture
(``compile(arch=None)``), loading compiled code (``ObjectCode.load()``) and making the current
device's context current (the driver's linker links in it: compile/linker.py).

The launch side is the layer above compiling, so no compile module imports it: the package
(cudaload/__init__.py) hands these functions over when it is imported, each importing the
launch module it needs on its first call.  Importing cudaload therefore still loads nothing.

Imports of cudaload: nothing.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

__all__ = ["provide", "current_arch", "load", "activate"]

TYPE_CHECKING = False  # mypy reads it as true; importing typing would cost the import its budget
if TYPE_CHECKING:
    from collections.abc import Callable

_current_arch: Callable[[], int] | None = None
_load: Callable[[object], object] | None = None
_activate: Callable[[], object] | None = None


def provide(current_arch: Callable[[], int], load: Callable[[object], object],
            activate: Callable[[], object]) -> None:
    """Install the launch side's ``current_arch() -> int``, ``load(ObjectCode) -> Module`` and
    ``activate()``, which makes the current device's primary context current in this thread."""
    global _current_arch, _load, _activate
    _current_arch, _load, _activate = current_arch, load, activate


def current_arch() -> int:
    """Compute capability of the current device, e.g. 90.  Raises CudaLoadError without one."""
    if _current_arch is None:
        raise RuntimeError("cudaload.compile used before the package provided its hooks")
    return _current_arch()


def load(code):  # -> the launch side's Module, a layer this one may not name
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
