"""The arch ``compile(arch=None)`` compiles for: the current device's, and none without one.

Code compiled for no device would be thrown away (nothing here can load it), and compiling it
takes NVRTC, which a machine without a GPU often lacks.  So without a usable device
``compile(arch=None)`` compiles nothing and raises the error that says why there is none, a
:class:`~cudaload.errors.CudaUnavailableError` (no driver, a failed ``cuInit``, no device, a
forked child), before NVRTC is looked for: a host package's ``except CudaUnavailableError``
fallback then works with or without NVRTC.  An explicit arch compiles anywhere (precompiling
for a target, ``cudaload compile --arch``).

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

from . import _hooks

__all__ = ["required"]


def required(device_arch: int | None) -> int:
    """``device_arch``, the current device's arch as found, or, where none was found (None), the
    error saying why: asked of the launch side again, which remembers its failure, so that the
    error is the one a launch would raise.  Raises CudaUnavailableError (or the DriverError that
    kept the device from being used)."""
    if device_arch is not None:
        return device_arch
    return _hooks.current_arch()  # a device set up since answers; otherwise it raises why not
