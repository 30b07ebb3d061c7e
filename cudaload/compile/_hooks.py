"""What compiling asks of the launch side: loading compiled code (``ObjectCode.load()``).

The launch side is the layer above compiling, so no compile module imports it: the package
(cudaload/__init__.py) hands this function over when it is imported; it imports the launch module
it needs on its first call.  Importing cudaload therefore still loads nothing.  (The current
device's architecture, which ``compile(arch=None)`` needs, is the bindings' thread_device.py.)

Imports of cudaload: nothing.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

__all__ = ["provide", "load"]

TYPE_CHECKING = False  # mypy reads it as true; importing typing would cost the import its budget
if TYPE_CHECKING:
    from collections.abc import Callable

_load: Callable[[object], object] | None = None


def provide(load: Callable[[object], object]) -> None:
    """Install the launch side's ``load(ObjectCode) -> Module``."""
    global _load
    _load = load


def load(code):  # -> the launch side's Module, a layer this one may not name
    """The Module holding ``code``, loaded once for all copies of it."""
    if _load is None:
        raise RuntimeError("cudaload.compile used before the package provided its hooks")
    return _load(code)
