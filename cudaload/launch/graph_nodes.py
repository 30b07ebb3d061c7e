"""Graphs built node by node: the nodes a :class:`Graph` adds without a capture.

A kernel node takes its arguments as a kernel call does (``arguments.Packer``: the same
conversions and errors) and its launch shape through the kernel's own checks; the driver copies
the packed arguments, so each node packs into a buffer of its own.  A node waits for the nodes
given as ``after`` (the graph's edges); copies and fills take the ends ``copy_batch`` takes.
``KernelNode.update`` changes a kernel node in the graph and, once the graph is instantiated,
in its executable (``cuGraphExecKernelNodeSetParams``) without instantiating again.
"""

from __future__ import annotations

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._byte_interface import ByteSpan
from ._sizes import C_UINT64, bounded
from .device import Device, activate

# Stream.capture imports graph, which imports this module: nothing here may import stream, nor
# what imports it (memory, copies, arguments); what they make is asked of the objects given.
TYPE_CHECKING = False  # true for type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol, Self

    class _Packer(Protocol):
        """What a kernel node asks of its arguments.Packer (which arguments.py defines: see
        above), the buffer that its ``CUDA_KERNEL_NODE_PARAMS`` point into."""

        pointers: Any  # void *[]: each argument's address in the buffer

        def pack(self, args) -> None: ...

__all__ = ["GraphNode", "KernelNode", "NodeBuilding"]

_UNIFIED = _cuda_ffi.integer_const("CU_MEMORYTYPE_UNIFIED")


class GraphNode:
    """A node of a graph: pass it in another node's ``after`` to run that one after it.
    ``kind`` names what it does (``"kernel"``, ``"memset"``, ``"memcpy"``, ...), ``handle`` is
    the ``CUgraphNode``."""

    __slots__ = ("graph", "handle", "kind")

    def __init__(self, graph: NodeBuilding, handle, kind: str):
        self.graph = graph  # the node lives as long as its graph: keep the graph with it
        self.handle = handle
        self.kind = kind

    def __repr__(self) -> str:
        return f"<cudaload.GraphNode {self.kind} of device {self.graph.device.ordinal}>"


class KernelNode(GraphNode):
    """A kernel launch in a graph; ``update`` gives it other arguments or another shape."""

    __slots__ = ("kernel", "_packer", "_params", "_shape")
    kernel: object  # the Kernel it launches
    _packer: _Packer  # the node's own argument buffer, which _params points into
    _params: object  # its CUDA_KERNEL_NODE_PARAMS
    _shape: tuple  # (grid, block, shared_mem) as given

    def update(self, args=None, *, grid=None, block=None, shared_mem=None) -> None:
        """Launch with ``args`` (a tuple, packed as a kernel call packs it), ``grid``, ``block``
        or ``shared_mem`` from now on; what is left out stays.  Changes the node in the graph
        and, once it is instantiated, in its executable, which runs the new launch from its next
        launch on without instantiating again.  Raises :class:`LaunchArgumentError`, ``TypeError``
        and ``ValueError`` as a kernel call does, ``ValueError`` for a closed graph,
        :class:`DriverError`."""
        self.graph._open()
        drv = activate(self.graph.device)
        if args is not None:
            self._packer.pack(args)
        old = self._shape
        shape = (old[0] if grid is None else grid, old[1] if block is None else block,
                 old[2] if shared_mem is None else shared_mem)
        if shape != old:
            _set_shape(self._params, self.kernel, self.graph.device, shape)
            self._shape = shape
        driver.check(drv.cuGraphKernelNodeSetParams_v2(self.handle, self._params),
                     "cuGraphKernelNodeSetParams")
        executable = self.graph._root._exec
        if executable is not None:
            driver.check(drv.cuGraphExecKernelNodeSetParams_v2(executable, self.handle,
                                                               self._params),
                         "cuGraphExecKernelNodeSetParams")


def _state(kernel):
    """The kernel's launch state (kernel._KernelState).  Raises TypeError for a non-kernel."""
    state = getattr(kernel, "_kernel_state", None)
    if state is None:
        raise TypeError(f"add_kernel takes a cudaload Kernel (Module.get_kernel, RawKernel), not "
                        f"{type(kernel).__name__}")
    return state


def _set_shape(params, kernel, device, shape) -> None:
    """Grid, block and shared memory into ``params`` (CUDA_KERNEL_NODE_PARAMS), checked as a
    launch of ``kernel`` on ``device`` checks them (and large shared memory enabled)."""
    state = _state(kernel)
    with device:  # the kernel's launch state is the current device's
        launch = state._prepare()
        config = state._config(launch, *shape, None, None, False)[0]
    params.func = launch.func
    params.gridDimX, params.gridDimY, params.gridDimZ = \
        config.gridDimX, config.gridDimY, config.gridDimZ
    params.blockDimX, params.blockDimY, params.blockDimZ = \
        config.blockDimX, config.blockDimY, config.blockDimZ
    params.sharedMemBytes = config.sharedMemBytes


class NodeBuilding:
    """The node-adding methods of :class:`Graph` (graph.py): each returns its node, made after
    the nodes ``after`` names (one node, or an iterable of them; none: a root of the graph)."""

    # graph.py's Graph, whose module imports this one, is named by no annotation here: its own
    # class body narrows _root to Graph; _body's graphs are of the class of the graph (Self).
    handle: object
    device: Device
    _root: NodeBuilding  # the graph that is launched: itself, or a body's outermost graph
    _exec: object  # the root's CUgraphExec, None until instantiated
    _stream: object
    _open: Callable[[], None]
    _body: Callable[[object], Self]  # a Graph of a body graph's CUgraph, part of this one

    def _building(self, after):
        """(driver, CUgraphNode[] of ``after``, their count) for a node added now.  Raises
        ValueError for a closed graph or a node of another graph, RuntimeError while a capture
        records into it or once it is instantiated, TypeError for ``after`` of other objects."""
        self._open()
        if self._stream is not None or self.handle is None:
            raise RuntimeError("the graph is being captured: add nodes after the with block, "
                               "or launch on the capturing stream inside it")
        if self._root._exec is not None:
            raise RuntimeError("the graph is instantiated: add every node before its first "
                               "launch (or build another graph)")
        nodes = (after,) if isinstance(after, GraphNode) else tuple(() if after is None else after)
        for node in nodes:
            if not isinstance(node, GraphNode):
                raise TypeError(f"after takes graph nodes, not {type(node).__name__}")
            if node.graph is not self:
                raise ValueError("a node can only follow nodes of its own graph (a conditional "
                                 "node's body is a graph of its own)")
        drv = activate(self.device)
        deps = drv.ffi.new("CUgraphNode[]", [n.handle for n in nodes] or 1)
        return drv, deps, len(nodes)

    def _added(self, name: str, kind: str, add, *args) -> GraphNode:
        out = activate(self.device).ffi.new("CUgraphNode *")
        driver.check(add(out, self.handle, *args), name)
        return GraphNode(self, out[0], kind)

    def add_kernel(self, kernel, grid, block, args, *, shared_mem=0, after=()) -> KernelNode:
        """A launch of ``kernel`` as ``kernel(grid, block, args, shared_mem=...)`` would make it,
        its arguments converted and checked the same way.  Raises as that call does,
        ``TypeError`` for a non-kernel, :class:`DriverError`."""
        state = _state(kernel)
        drv, deps, n = self._building(after)
        params = drv.ffi.new("CUDA_KERNEL_NODE_PARAMS *")
        shape = (grid, block, shared_mem)
        _set_shape(params, kernel, self.device, shape)
        with self.device:
            packer = state._prepare().packer.another()  # the driver copies what it packs
        packer.pack(args)
        params.kernelParams = packer.pointers
        out = drv.ffi.new("CUgraphNode *")
        driver.check(drv.cuGraphAddKernelNode_v2(out, self.handle, deps, n, params),
                     "cuGraphAddKernelNode")
        node = KernelNode(self, out[0], "kernel")
        node.kernel, node._packer, node._params, node._shape = kernel, packer, params, shape
        return node

    def add_memset(self, dst, value: int, nbytes: int | None = None, *, after=()) -> GraphNode:
        """Set ``nbytes`` bytes at ``dst`` (default: all of a buffer's) to the byte ``value``.
        Raises ``TypeError``, ``ValueError`` (a value outside 0..255, a size past the buffer's,
        an int address without ``nbytes``), :class:`DriverError`."""
        value = bounded(value, "the memset value (a byte)", 0, 255)
        address, size = _end(dst, "dst")
        if nbytes is None and size is None:
            raise ValueError("a memset of an int address needs nbytes")
        count = size if nbytes is None else _count(nbytes, size, "dst")
        drv, deps, n = self._building(after)
        params = drv.ffi.new("CUDA_MEMSET_NODE_PARAMS *")
        params.dst, params.value, params.elementSize = address, value, 1
        params.width, params.height = count, 1
        return self._added("cuGraphAddMemsetNode", "memset", drv.cuGraphAddMemsetNode, deps, n,
                           params, self.device.context)

    def add_memcpy(self, dst, src, nbytes: int, *, after=()) -> GraphNode:
        """Copy ``nbytes`` from ``src`` to ``dst``: each a DeviceBuffer, a HostBuffer (pinned),
        a ManagedBuffer or an address (int).  Raises ``TypeError`` for another kind,
        ``ValueError`` for freed memory, a NULL address or more bytes than an end has,
        :class:`DriverError`."""
        (to, dst_size), (start, src_size) = _end(dst, "dst"), _end(src, "src")
        count = _count(_count(nbytes, dst_size, "dst"), src_size, "src")
        drv, deps, n = self._building(after)
        params = drv.ffi.new("CUDA_MEMCPY3D *")
        params.srcMemoryType = params.dstMemoryType = _UNIFIED  # any address of the process
        params.srcDevice, params.dstDevice = start, to
        # one row of count bytes, its pitch the row, as the runtime's 1-D copy node makes it
        params.srcPitch = params.dstPitch = count
        params.srcHeight = params.dstHeight = 1
        params.WidthInBytes, params.Height, params.Depth = count, 1, 1
        return self._added("cuGraphAddMemcpyNode", "memcpy", drv.cuGraphAddMemcpyNode, deps, n,
                           params, self.device.context)

    def add_empty(self, *, after=()) -> GraphNode:
        """A node that does nothing: one point that many nodes wait for, or follow."""
        drv, deps, n = self._building(after)
        return self._added("cuGraphAddEmptyNode", "empty", drv.cuGraphAddEmptyNode, deps, n)

    def add_event_record(self, event, *, after=()) -> GraphNode:
        """Record ``event`` (a cudaload Event of this device) when the nodes before are done."""
        drv, deps, n = self._building(after)
        return self._added("cuGraphAddEventRecordNode", "event_record",
                           drv.cuGraphAddEventRecordNode, deps, n, self._event(event))

    def add_event_wait(self, event, *, after=()) -> GraphNode:
        """Wait for ``event``'s last record (by a stream or another graph) before going on."""
        drv, deps, n = self._building(after)
        return self._added("cuGraphAddEventWaitNode", "event_wait", drv.cuGraphAddEventWaitNode,
                           deps, n, self._event(event))

    def _event(self, event):
        if not hasattr(event, "elapsed_ms") or not hasattr(event, "handle"):  # see the imports
            raise TypeError(f"an event node takes a cudaload Event, not {type(event).__name__}")
        if event.device is not self.device:
            raise ValueError(f"the event is of device {event.device.ordinal}, the graph of "
                             f"device {self.device.ordinal}")
        return event.handle


def _end(obj, what: str) -> tuple[int, int | None]:
    """(address, size in bytes; None for an int, whose size no one knows) of the memory at one
    end of a copy or memset node.  Raises TypeError, ValueError for freed or NULL memory."""
    if isinstance(obj, ByteSpan):  # DeviceBuffer, ManagedBuffer, HostBuffer: its device address
        obj._live()  # raises once it is freed
        return obj.ptr, obj.nbytes
    if isinstance(obj, int) and not isinstance(obj, bool):
        address = bounded(obj, f"the {what} address", *C_UINT64)
        if not address:
            raise ValueError(f"the {what} address is 0 (NULL)")
        return address, None
    raise TypeError(f"the {what} of a graph's copy or memset is a DeviceBuffer, HostBuffer, "
                    f"ManagedBuffer or an address (int), not {type(obj).__name__}")


def _count(nbytes, size: int | None, what: str) -> int:
    """``nbytes``, checked to fit the ``size`` of the end ``what``.  Raises ValueError."""
    count = bounded(nbytes, "nbytes", *C_UINT64)
    if size is not None and count > size:
        raise ValueError(f"{count} bytes do not fit the {what}, which has {size}")
    return count
