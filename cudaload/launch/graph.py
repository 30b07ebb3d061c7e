"""CUDA graphs from stream capture: launches recorded once, replayed with one driver call.

Layer 3, launch: may import the foundation, bindings, compile and launch.
"""

from __future__ import annotations

import contextlib
import weakref

from ..bindings import driver
from .. import lifetime
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from .device import Device, activate
from ._foreign import stream_handle as handle_of
from ._graph_pins import pin, unpin
from ._unpicklable import GpuState

TYPE_CHECKING = False  # true for type checkers only: no typing import at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["Graph", "capture"]

_MODES = {mode: _cuda_ffi.integer_const(name) for mode, name in (
    ("global", "CU_STREAM_CAPTURE_MODE_GLOBAL"),
    ("thread_local", "CU_STREAM_CAPTURE_MODE_THREAD_LOCAL"),
    ("relaxed", "CU_STREAM_CAPTURE_MODE_RELAXED"))}


def _release(handles: list, dev: Device) -> None:
    """Destroy a graph's executable and the graph, then let go of the code its kernels use."""
    try:
        if not lifetime.forked():
            drv = activate(dev)
            for name, handle in zip(("cuGraphExecDestroy", "cuGraphDestroy"), handles):
                if handle is not None:
                    getattr(drv, name)(handle)
    finally:
        unpin()


class Graph(GpuState):
    """A captured graph; ``launch(stream)`` replays it (instantiated on first launch).

    Raises :class:`DriverError` when instantiation or launch fails."""

    _launch: Callable[..., int]  # the driver's cuGraphLaunch, bound by instantiate()
    _SEND_INSTEAD = ("send the ObjectCode of its kernels and capture the launches again in the "
                     "receiving process")

    def __init__(self, device: Device):
        self.device = device
        self.handle = None
        self._exec = None
        self._handles = [None, None]  # executable, graph: what the finalizer destroys

    def _set(self, handle) -> None:
        """Take the captured graph and the pin its capture holds (see _graph_pins.pin)."""
        self.handle = self._handles[1] = handle
        weakref.finalize(self, _release, self._handles, self.device).atexit = False

    def instantiate(self) -> Graph:
        """Instantiate now (otherwise the first launch does)."""
        if self.handle is None:
            raise RuntimeError("the graph is still being captured: launch it after the with block")
        if self._exec is None:
            drv = activate(self.device)
            out = drv.ffi.new("CUgraphExec *")
            driver.check(drv.cuGraphInstantiateWithFlags(out, self.handle, 0),
                         "cuGraphInstantiate")
            self._exec = self._handles[0] = out[0]
            self._launch = drv.cuGraphLaunch
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
def capture(stream, mode: str = "thread_local") -> Iterator[Graph]:
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
    pin()  # from the first captured launch on, its code must stay loaded
    try:
        yield graph
    except BaseException:
        drv.cuStreamEndCapture(stream.handle, out)
        if out[0] != drv.ffi.NULL:
            drv.cuGraphDestroy(out[0])
        unpin()
        raise
    rc = drv.cuStreamEndCapture(stream.handle, out)
    if rc:
        unpin()
        driver.check(rc, "cuStreamEndCapture")
    graph._set(out[0])  # the graph holds the pin from here on
