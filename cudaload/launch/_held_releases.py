"""Releases of driver objects held back while a stream capture records.

A capture that is not relaxed forbids its thread (in global mode, every thread) the calls the
driver calls potentially unsafe: ``cuMemFree``, ``cuMemFreeHost``, ``cuStreamDestroy``,
``cuGraphExecDestroy``, a wait on the legacy stream...  One such call invalidates the capture,
and its next captured launch fails with ``CUDA_ERROR_STREAM_CAPTURE_INVALIDATED``.  The cycle
collector runs finalizers in whichever thread allocates, inside a ``with stream.capture()``
block too: a buffer held by a graph of an earlier capture (graphs are cycles) was freed there.
So every release a finalizer or a ``free()``/``close()`` makes goes through :func:`held`: while
any capture records, in any thread, it is kept, and the last capture to end makes them all.

Imports of cudaload: none.
"""

from __future__ import annotations

import _thread

__all__ = ["held", "recording", "any_recording"]

_lock = _thread.allocate_lock()
_open = 0  # captures recording now, in any thread
_kept: list = []  # (release, args) held back while one was


def any_recording() -> bool:
    """Whether a capture records now, in any thread."""
    return _open > 0


def held(release, *args) -> bool:
    """Whether ``release(*args)`` is held back, to be made when the last capture has ended
    (True), or is to be made now by the caller (False: no capture records)."""
    if not _open:  # read without the lock: the common case, a release per free, costs a load
        return False
    with _lock:
        if not _open:
            return False
        _kept.append((release, args))
    return True


def recording(opened: bool) -> None:
    """A capture begins (``opened``: counted from before it begins) or ends; the last to end
    makes the releases held back meanwhile, in the order they were asked for."""
    global _open
    with _lock:
        _open += 1 if opened else -1
        ready = _kept[:] if not _open else []
        del _kept[:len(ready)]
    for release, args in ready:
        try:
            release(*args)
        except Exception:  # noqa: BLE001  as a finalizer's would be: the others are still made
            pass
