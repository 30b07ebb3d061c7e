"""Keeping loaded code resident while a CUDA graph may still run it.

A graph refers to its kernels' code without holding the Python objects that loaded it.  While a
capture runs or a captured graph lives (:func:`pin` ... :func:`unpin`), code whose module is
collected stays loaded, and is unloaded once the last of them is gone.

Imports of cudaload: driver, lifetime, device, _held_releases.
"""

from __future__ import annotations

import _thread

from ..bindings import driver
from .._base import lifetime
from .device import Device, activate
from ._held_releases import held

__all__ = ["pin", "unpin", "unload"]

_pins = 0
_held: list = []  # (unload function name, handle, device) of collected modules
_pin_lock = _thread.RLock()  # a collection inside unpin may run unload in the same thread


def pin() -> None:
    """Keep collected modules' code loaded until the matching :func:`unpin`."""
    global _pins
    with _pin_lock:
        _pins += 1


def unpin() -> None:
    global _pins
    with _pin_lock:
        _pins -= 1
        held = _held[:] if not _pins else []
        del _held[:len(held)]
    for args in held:
        unload(*args)


def unload(fn_name: str, handle, dev: Device | None) -> None:
    """Unload a collected module's code (``cuLibraryUnload`` / ``cuModuleUnload``), or hold it
    while a graph may run it."""
    if lifetime.forked() or held(unload, fn_name, handle, dev):  # held: see _held_releases.py
        return
    with _pin_lock:
        if _pins:
            _held.append((fn_name, handle, dev))
            return
    drv = activate(dev) if dev is not None else driver.api()
    getattr(drv, fn_name)(handle)
