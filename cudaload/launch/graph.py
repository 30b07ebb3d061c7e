"""CUDA graphs: launches recorded once by stream capture, or built node by node, replayed with one
driver call.

``Graph()`` is an empty graph to add nodes to (graph_nodes.py; conditional nodes in
conditional_nodes.py), whose conditional nodes' bodies are graphs of their own, part of it: built
node by node too, or by a capture into them (``Graph.capture``).  An instantiated graph can be
uploaded ahead of its first launch (``cuGraphUpload``) and updated in place from another capture
of the same shape (``cuGraphExecUpdate``): new kernel arguments without instantiating again.
Host functions captured into it (``Stream.launch_host_func``) are kept alive with it.
"""

from __future__ import annotations

import contextlib
import weakref

from ..bindings import driver
from .._base import lifetime
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from .device import Device, activate, as_device
from . import _child_graphs, _host_calls
from .conditional_nodes import ConditionalBuilding
from .graph_nodes import GraphNode
from ._foreign import stream_handle as handle_of
from ._graph_pins import pin, unpin
from ._held_releases import held, recording
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
    """Destroy a graph's executable and the graph, then let go of the code its kernels use; while
    a capture records, once it has ended (_held_releases.py; ``_calls``, its host functions,
    live until then)."""
    if not held(_release, handles, dev, _calls):
        _destroy(handles, dev)


def _destroy(handles: _Handles, dev: Device) -> None:
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


class Graph(GpuState, ConditionalBuilding):
    """A graph of ``device`` (default: the current one), empty to add nodes to, or made by
    ``Stream.capture``; ``launch(stream)`` replays it (instantiated on first launch).

    Raises :class:`DriverError` when making, instantiating or launching it fails."""

    _launch: Callable[..., int]  # the driver's cuGraphLaunch, bound by instantiate()
    _root: Graph  # graph_nodes.py's NodeBuilding, which cannot name Graph, says NodeBuilding
    _SEND_INSTEAD = ("send the ObjectCode of its kernels and capture the launches again in the "
                     "receiving process")

    def __init__(self, device=None):
        self._fields(as_device(device))
        drv = activate(self.device)
        out = drv.ffi.new("CUgraph *")
        driver.check(drv.cuGraphCreate(out, 0), "cuGraphCreate")
        pin()  # its kernel nodes' code must stay loaded
        self._set(out[0])

    @classmethod
    def _captured(cls, device: Device) -> Graph:
        """A Graph for a capture to fill (``_set`` once it ends)."""
        graph = cls.__new__(cls)
        graph._fields(device)
        return graph

    def _body(self, handle) -> Graph:
        """The Graph of a body graph (``handle``) of this graph's conditional node: the driver
        owns it with the node, and what its nodes run lives as long as this graph's root."""
        body = Graph._captured(self.device)
        body.handle, body._root, body._parent = handle, self._root, self
        body._calls, body._children = self._root._calls, self._root._children
        return body

    def _fields(self, device: Device) -> None:
        self.device = device
        self.handle = None
        self._exec = None
        self._handles = _Handles()
        self._finalizer: weakref.finalize | None = None  # set once the capture has ended
        self._closed = False
        self._ruined = False  # a capture into it failed: refused, and never destroyed
        self._stream = None  # the stream while a capture block records into this graph
        self._calls: list = []  # captured host functions: alive as long as the graph
        self._source: Graph | None = None  # the graph last updated from, whose code we now run
        self._children: list[Graph] = []  # embedded: their code and host functions run in ours
        self._root = self  # the graph that is launched: itself, or a body's outermost graph
        self._parent: Graph | None = None  # a body's graph, kept alive by its body

    def _set(self, handle) -> None:
        """Take the captured graph and the pin its capture holds (see _graph_pins.pin)."""
        self.handle = self._handles.graph = handle
        # the host functions are finalizer arguments: alive until the executable is destroyed
        self._finalizer = weakref.finalize(self, _release, self._handles, self.device,
                                           self._calls)
        self._finalizer.atexit = False

    def close(self) -> None:
        """Destroy the executable and the graph now rather than when collected (while a capture
        records: once it has ended); a second call does nothing.  Raises ``RuntimeError``
        while the graph is still being captured."""
        if self._closed:
            return
        self._whole("closed")
        if self._stream is not None:
            raise RuntimeError("the graph is still being captured: close it after the with block")
        self._closed = True
        self.handle = self._exec = None  # launch and instantiate find no executable: refused
        if self._finalizer is not None:
            self._finalizer()  # runs _release once; collection later runs nothing

    def add_child(self, child: Graph, *, after=()) -> GraphNode | None:
        """Embed ``child`` (a finished graph): inside the capture block at the capturing
        stream's current point; outside it, as a node after the nodes ``after`` (returned).
        Each launch of this graph runs a copy of it there.  Raises ``TypeError`` for anything
        but a Graph, ``ValueError`` for one closed, still being captured, of another device or
        this graph itself, ``RuntimeError`` once this graph is instantiated,
        :class:`MissingSymbolError` in a capture on a driver before CUDA 12.3,
        :class:`DriverError`."""
        if not isinstance(child, Graph):
            raise TypeError(f"Graph.add_child takes a Graph, not {type(child).__name__}")
        child._open()
        if child.handle is None or child.device is not self.device or child is self:
            raise ValueError("add a finished graph on the same device "
                             f"(device {self.device.ordinal}), not this one, as a child graph")
        node = None
        if self._stream is not None:
            _child_graphs.embed(self._stream, child.handle)
        else:
            drv, deps, n = self._building(after)
            node = self._added("cuGraphAddChildGraphNode", "graph", drv.cuGraphAddChildGraphNode,
                               deps, n, child.handle)
        self._children.append(child)  # the copy runs its kernels and host functions
        return node

    def _open(self) -> None:
        if self._root._ruined:
            raise ValueError("a capture into this graph (or into a body of one of its "
                             "conditional nodes) failed, after which the driver may have freed "
                             "part of it: the graph is refused, and never destroyed; build a "
                             "new graph")
        if self._closed or self._root._closed:
            raise ValueError("the graph is closed: capture the launches again into a new graph")

    def _ruin(self) -> None:
        """A capture into this graph or a body of it ended with an error.  The driver frees a
        conditional node's body when a capture into it was invalidated, while the node still
        owns it: destroying the graph would free it again.  Its root is refused from now on and
        never destroyed (its pin dropped: it can never run)."""
        root = self._root
        root._ruined = root._closed = True
        root.handle = None
        if root._finalizer is not None and root._finalizer.detach() is not None:
            unpin()

    def _whole(self, what: str) -> None:
        if self._root is not self:
            raise ValueError(f"a conditional node's body is {what} with its graph: use the graph "
                             "the node was added to")

    def instantiate(self) -> Graph:
        """Instantiate now (otherwise the first launch does)."""
        self._open()
        self._whole("instantiated and launched")
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
        self._whole("updated")
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

    def capture(self, stream, *, after=(), mode: str = "thread_local"
                ) -> contextlib.AbstractContextManager[Graph]:
        """Inside the ``with`` block, record the launches made on ``stream`` (a Stream of this
        graph's device) into this graph, after the nodes ``after``
        (``cuStreamBeginCaptureToGraph``): how a conditional node's body is captured.  A capture
        the driver ends with an error leaves this graph and its root refused (``_ruin``).  Raises
        as ``Stream.capture`` and the node methods do, :class:`MissingSymbolError` on a driver
        before CUDA 12.3."""
        return _capture_into(self, stream, after, mode)

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
    drv = _capturable(stream, mode)
    graph = Graph._captured(stream.device)
    _begin(lambda: drv.cuStreamBeginCapture_v2(stream.handle, _MODES[mode]),
           "cuStreamBeginCapture")
    pin()  # from the first captured launch on, its code must stay loaded
    yield from _record(drv, stream, graph, fresh=True)


@contextlib.contextmanager
def _capture_into(graph: Graph, stream, after, mode: str) -> Iterator[Graph]:
    """See :meth:`Graph.capture`."""
    drv = _capturable(stream, mode)
    _child_graphs.require(drv, 12030, "cannot capture into a graph", "cuStreamBeginCaptureToGraph")
    if stream.device is not graph.device:
        raise ValueError(f"the stream is of device {stream.device.ordinal}, the graph of device "
                         f"{graph.device.ordinal}: capture on a stream of the graph's device")
    drv, deps, n = graph._building(after)
    _begin(lambda: drv.cuStreamBeginCaptureToGraph(stream.handle, graph.handle, deps,
                                                   drv.ffi.NULL, n, _MODES[mode]),
           "cuStreamBeginCaptureToGraph")
    yield from _record(drv, stream, graph, fresh=False)


def _begin(call: Callable[[], int], name: str) -> None:
    """Begin a capture (``call``, the driver's ``name``), counted as recording from before it
    begins to the end of ``_record``.  Raises DriverError."""
    recording(True)
    rc = call()
    if rc:
        recording(False)
        raise driver.error(rc, name)


def _capturable(stream, mode: str):
    """The driver, ``stream``'s device bound.  Raises ValueError for an unknown mode or the
    legacy default stream, TypeError for an object that is no cudaload Stream."""
    if mode not in _MODES:
        raise ValueError(f"capture mode must be one of {sorted(_MODES)}, not {mode!r}")
    if not hasattr(stream, "handle") or not hasattr(stream, "device"):  # stream imports graph
        raise TypeError(f"a capture records on a cudaload Stream, not {type(stream).__name__}")
    if stream.ptr == 0:
        raise ValueError("the legacy default stream cannot be captured: use cudaload.Stream()")
    return activate(stream.device)


def _record(drv, stream, graph: Graph, fresh: bool) -> Iterator[Graph]:
    """Yield ``graph`` while ``stream`` records into it, then end the capture.  ``fresh``: the
    capture makes the graph (taken by ``graph._set``; destroyed, its pin dropped, on failure),
    else it adds to ``graph``, which keeps what was recorded before an exception, and is
    refused (``Graph._ruin``) where the capture itself failed."""
    graph._stream = stream
    out = drv.ffi.new("CUgraph *")
    ident = 0
    try:
        try:
            ident = _host_calls.capture_id(stream.handle)
            yield graph
        except BaseException:
            graph._stream = None
            _host_calls.captured(ident)
            rc = drv.cuStreamEndCapture(stream.handle, out)
            if fresh:
                if out[0] != drv.ffi.NULL:
                    drv.cuGraphDestroy(out[0])
                unpin()
            elif rc:
                graph._ruin()
            raise
        rc = drv.cuStreamEndCapture(stream.handle, out)
    finally:
        recording(False)
    graph._stream = None
    graph._calls.extend(_host_calls.captured(ident))
    if rc:
        if fresh:
            unpin()
        else:
            graph._ruin()
        err = driver.error(rc, "cuStreamEndCapture")
        if rc == _UNJOINED:
            raise _explained(err, "a stream that waited for this capture was not waited for "
                             "in turn", "end each forked stream's work with s.wait(other) on "
                             "the capturing stream before the with block ends")
        raise err
    if fresh:
        graph._set(out[0])  # the graph holds the pin from here on
