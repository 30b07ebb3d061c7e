"""CUDA graphs from stream capture: launches recorded once, replayed with one driver call."""

from __future__ import annotations

import contextlib
import weakref

from . import driver
from .device import Device, activate
from .stream import handle_of

__all__ = ["Graph", "capture"]

_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}


def _destroy(name: str, handle, dev: Device) -> None:
    if not driver._forked:
        getattr(activate(dev), name)(handle)


class Graph:
    """A captured graph; ``launch(stream)`` replays it (instantiated on first launch).

    Raises :class:`DriverError` when instantiation or launch fails."""

    def __init__(self, device: Device):
        self.device = device
        self.handle = None
        self._exec = None

    def _set(self, handle) -> None:
        self.handle = handle
        weakref.finalize(self, _destroy, "cuGraphDestroy", handle, self.device).atexit = False

    def instantiate(self) -> Graph:
        """Instantiate now (otherwise the first launch does)."""
        if self.handle is None:
            raise RuntimeError("the graph is still being captured: launch it after the with block")
        if self._exec is None:
            drv = activate(self.device)
            out = drv.ffi.new("CUgraphExec *")
            driver.check(drv.cuGraphInstantiateWithFlags(out, self.handle, 0),
                         "cuGraphInstantiate")
            self._exec = out[0]
            self._launch = drv.cuGraphLaunch
            weakref.finalize(self, _destroy, "cuGraphExecDestroy", out[0],
                             self.device).atexit = False
        return self

    def launch(self, stream=None) -> None:
        """Replay the graph on ``stream`` (default: the legacy default stream)."""
        if self._exec is None:
            self.instantiate()
        handle = handle_of(stream)
        activate(self.device)
        rc = self._launch(self._exec, handle)
        if rc:
            driver.check(rc, "cuGraphLaunch")


@contextlib.contextmanager
def capture(stream, mode: str = "thread_local"):
    """Record the launches made on ``stream`` inside the block into the yielded :class:`Graph`.

    Raises ``ValueError`` for the default stream (it cannot be captured) or an unknown mode."""
    if mode not in _MODES:
        raise ValueError(f"capture mode must be one of {sorted(_MODES)}, not {mode!r}")
    if stream.ptr == 0:
        raise ValueError("the legacy default stream cannot be captured: use cudaload.Stream()")
    drv = activate(stream.device)
    driver.check(drv.cuStreamBeginCapture_v2(stream.handle, _MODES[mode]), "cuStreamBeginCapture")
    graph = Graph(stream.device)
    out = drv.ffi.new("CUgraph *")
    try:
        yield graph
    except BaseException:
        drv.cuStreamEndCapture(stream.handle, out)
        if out[0] != drv.ffi.NULL:
            drv.cuGraphDestroy(out[0])
        raise
    driver.check(drv.cuStreamEndCapture(stream.handle, out), "cuStreamEndCapture")
    graph._set(out[0])
