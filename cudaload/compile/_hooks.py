"""What compiling asks of the launch side: the current device's architecture (``compile(arch=None)``)
and loading compiled code (``ObjectCode.load()``).

The launch side is the layer above compiling, so no compile module imports it: the package
(cudaload/__init__.py) hands these two functions over when it is imported, each importing the
launch module it needs on its first call.  Importing cudaload therefore still loads nothing.

Imports of cudaload: nothing.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

__all__ = ["provide", "current_arch", "load"]

TYPE_CHECKING = False  # mypy reads it as true; importing typing would cost the import its budget
if TYPE_CHECKING:
    from collections.abc import Callable

_current_arch: Callable[[], int] | None = None
_load: Callable[[object], object] | None = None


def provide(current_arch: Callable[[], int], load: Callable[[object], object]) -> None:
    """Install the launch side's ``current_arch() -> int`` and ``load(ObjectCode) -> Module``."""
    global _current_arch, _load
    _current_arch, _load = current_arch, load


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
