"""CUDA graphs from stream capture: launches recorded once, replayed with one driver call.

An instantiated graph can be uploaded ahead of its first launch (``cuGraphUpload``) and updated
in place from another capture of the same shape (``cuGraphExecUpdate``): new kernel arguments
without instantiating again.  Host functions captured into it (``Stream.launch_host_func``) are
kept alive with it.
"""

from __future__ import annotations

import contextlib
import weakref

from ..bindings import driver
from .. import lifetime
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from .device import Device, activate
from . import _child_graphs, _host_calls
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
_UPDATE_FAILURE = _cuda_ffi.integer_const("CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE")
_UNJOINED = _cuda_ffi.integer_const("CUDA_ERROR_STREAM_CAPTURE_UNJOINED")
# Why cuGraphExecUpdate refused, by CUgraphExecUpdateResult.
_REFUSALS = {_cuda_ffi.integer_const(f"CU_GRAPH_EXEC_UPDATE_ERROR{name}"): why for name, why in (
    ("", "the driver gives no reason"),
    ("_TOPOLOGY_CHANGED", "the graphs differ in their nodes or in how they depend on each other"),
    ("_NODE_TYPE_CHANGED", "a node is of another type (a kernel where a copy was, ...)"),
    ("_FUNCTION_CHANGED", "a kernel node runs another kernel, which this device cannot update"),
    ("_PARAMETERS_CHANGED", "a node's parameters changed in a way that cannot be updated"),
    ("_NOT_SUPPORTED", "the graph holds a node that cannot be updated"),
    ("_UNSUPPORTED_FUNCTION_CHANGE", "a kernel node runs another kernel in a way that cannot be "
                                     "updated"),
    ("_ATTRIBUTES_CHANGED", "a kernel node's launch attributes changed"))}


class _Handles:
    """A graph's driver handles, what its finalizer destroys: ``executable`` (None until
    instantiated) and ``graph``; apart from the Graph, which the finalizer must not hold."""

    __slots__ = ("executable", "graph")

    def __init__(self):
        self.executable = self.graph = None


def _release(handles: _Handles, dev: Device, _calls: list) -> None:
    """Destroy a graph's executable and the graph, then let go of the code its kernels use."""
    try:
        if not lifetime.forked():
            drv = activate(dev)
            if handles.executable is not None:
                drv.cuGraphExecDestroy(handles.executable)
            if handles.graph is not None:
                drv.cuGraphDestroy(handles.graph)
    finally:
        unpin()


def _explained(err, why: str, hint: str):
    """``err`` (a DriverError) again, its message saying ``why`` and its hint ``hint``."""
    return type(err)(f"{err.args[0]}; {why}", code=err.code, name=err.name,
                     function=err.function, detail=err.message, hint=hint)


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
        self._handles = _Handles()
        self._finalizer: weakref.finalize | None = None  # set once the capture has ended
        self._closed = False
        self._stream = None  # the stream while a capture block records into this graph
        self._calls: list = []  # captured host functions: alive as long as the graph
        self._source: Graph | None = None  # the graph last updated from, whose code we now run
        self._children: list[Graph] = []  # embedded: their code and host functions run in ours

    def _set(self, handle) -> None:
        """Take the captured graph and the pin its capture holds (see _graph_pins.pin)."""
        self.handle = self._handles.graph = handle
        # the host functions are finalizer arguments: alive until the executable is destroyed
        self._finalizer = weakref.finalize(self, _release, self._handles, self.device,
                                           self._calls)
        self._finalizer.atexit = False

    def close(self) -> None:
        """Destroy the executable and the graph now rather than when collected; a second call
        does nothing.  Raises ``RuntimeError`` while the graph is still being captured."""
        if self._closed:
            return
        if self._stream is not None:
            raise RuntimeError("the graph is still being captured: close it after the with block")
        self._closed = True
        self.handle = self._exec = None  # launch and instantiate find no executable: refused
        if self._finalizer is not None:
            self._finalizer()  # runs _release once; collection later runs nothing

    def add_child(self, child: Graph) -> None:
        """Inside the capture block, embed ``child`` (a finished graph) at the capturing stream's
        current point: each launch of this graph runs a copy of it there.  Raises ``TypeError``
        for anything but a Graph, ``ValueError`` for one closed, still being captured or of
        another device, ``RuntimeError`` outside the block, :class:`MissingSymbolError` on a
        driver before CUDA 12.3, :class:`DriverError`."""
        if not isinstance(child, Graph):
            raise TypeError(f"Graph.add_child takes a Graph, not {type(child).__name__}")
        child._open()
        if self._stream is None:
            raise RuntimeError("add_child embeds into a running capture: call it inside the "
                               "with block of this graph's capture")
        if child.handle is None or child.device is not self.device:
            raise ValueError("add a finished capture on the same device "
                             f"(device {self.device.ordinal}) as a child graph")
        _child_graphs.embed(self._stream, child.handle)
        self._children.append(child)  # the copy runs its kernels and host functions

    def _open(self) -> None:
        if self._closed:
            raise ValueError("the graph is closed: capture the launches again into a new graph")

    def instantiate(self) -> Graph:
        """Instantiate now (otherwise the first launch does)."""
        self._open()
        if self.handle is None:
            raise RuntimeError("the graph is still being captured: launch it after the with block")
        if self._exec is None:
            drv = activate(self.device)
            out = drv.ffi.new("CUgraphExec *")
            driver.check(drv.cuGraphInstantiateWithFlags(out, self.handle, 0),
                         "cuGraphInstantiate")
            self._exec = self._handles.executable = out[0]
            self._launch = drv.cuGraphLaunch
        return self

    def upload(self, stream=None) -> None:
        """Instantiate if needed and upload the graph's work to the device on ``stream``, so that
        the first launch costs no more than the next."""
        self.instantiate()
        drv = activate(self.device)
        driver.check(drv.cuGraphUpload(self._exec, handle_of(stream)), "cuGraphUpload")

    def update(self, other: Graph) -> None:
        """Make this graph's executable run ``other``'s nodes (new kernel arguments, ...) without
        instantiating again; ``other`` must be a capture of the same shape.  Raises
        :class:`DriverError` (``CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE``) saying why the driver
        refused, ``TypeError`` for anything but a Graph, ``ValueError`` for one of another
        device or still being captured."""
        if not isinstance(other, Graph):
            raise TypeError(f"Graph.update takes a Graph, not {type(other).__name__}")
        self._open()
        other._open()
        if other.handle is None or other.device is not self.device:
            raise ValueError("update from a finished capture on the same device "
                             f"(device {self.device.ordinal})")
        self.instantiate()
        drv = activate(self.device)
        info = drv.ffi.new("CUgraphExecUpdateResultInfo *")
        rc = drv.cuGraphExecUpdate_v2(self._exec, other.handle, info)
        if rc == _UPDATE_FAILURE:
            why = _REFUSALS.get(info.result, f"CUgraphExecUpdateResult {info.result}")
            raise _explained(driver.error(rc, "cuGraphExecUpdate"), f"refused because {why}",
                             "capture the same launches in the same order (only their "
                             "arguments may differ), or launch the other graph itself")
        driver.check(rc, "cuGraphExecUpdate")
        self._source = other  # its kernels' code and host functions must stay alive

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
    graph._stream = stream
    out = drv.ffi.new("CUgraph *")
    pin()  # from the first captured launch on, its code must stay loaded
    ident = 0
    try:
        ident = _host_calls.capture_id(stream.handle)
        yield graph
    except BaseException:
        graph._stream = None
        _host_calls.captured(ident)
        drv.cuStreamEndCapture(stream.handle, out)
        if out[0] != drv.ffi.NULL:
            drv.cuGraphDestroy(out[0])
        unpin()
        raise
    rc = drv.cuStreamEndCapture(stream.handle, out)
    graph._stream = None
    graph._calls.extend(_host_calls.captured(ident))
    if rc:
        unpin()
        err = driver.error(rc, "cuStreamEndCapture")
        if rc == _UNJOINED:
            raise _explained(err, "a stream that waited for this capture was not waited for "
                             "in turn", "end each forked stream's work with s.wait(other) on "
                             "the capturing stream before the with block ends")
        raise err
    graph._set(out[0])  # the graph holds the pin from here on
