"""Conditional nodes: a graph's if, if/else, while and switch, steered from the device.

A :class:`ConditionalHandle` (``cuGraphConditionalHandleCreate``) is a kernel argument: device
code sets its value with ``cudaGraphSetConditional(handle, value)``, and the conditional node
that reads it runs its body graphs by that value.  The node (``cuGraphAddNode_v2`` of type
``CU_GRAPH_NODE_TYPE_CONDITIONAL``) comes with body graphs the driver makes and owns as part of
the node; each is a :class:`Graph` of its own to build node by node or to capture into
(``Graph.capture``).

If and while nodes need a CUDA 12.3 driver, if/else (two bodies) and switch nodes 12.8: an older
driver is refused with a :class:`MissingSymbolError` naming the release, before any driver call
(a 12.2 driver's ``cuGraphAddNode`` has another ABI, and lacks the node type).

Imports of cudaload: driver, device, graph_nodes, _child_graphs, _sizes.
"""

from __future__ import annotations

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._child_graphs import require
from ._sizes import C_UINT, bounded
from .graph_nodes import GraphNode, NodeBuilding

TYPE_CHECKING = False  # true for type checkers only: graph imports this module
if TYPE_CHECKING:
    from typing import Generic, Self

    from typing_extensions import TypeVar  # its default=, which typing has from Python 3.13

    # A node's bodies are graphs of the class of the graph it was added to (Self there): graph.py's
    # Graph, which this module, imported by graph.py, names nowhere.
    _Graph = TypeVar("_Graph", bound=NodeBuilding, covariant=True, default=NodeBuilding)

__all__ = ["ConditionalHandle", "ConditionalNode", "ConditionalBuilding"]

_CONDITIONAL = _cuda_ffi.integer_const("CU_GRAPH_NODE_TYPE_CONDITIONAL")
_ASSIGN_DEFAULT = 1  # CU_GRAPH_COND_ASSIGN_DEFAULT, a macro of cuda.h
# what -> (CUgraphConditionalNodeType, the release that added it)
_KINDS = {"if": ("CU_GRAPH_COND_TYPE_IF", 12030), "while": ("CU_GRAPH_COND_TYPE_WHILE", 12030),
          "if/else": ("CU_GRAPH_COND_TYPE_IF", 12080),
          "switch": ("CU_GRAPH_COND_TYPE_SWITCH", 12080)}


class ConditionalHandle(int):
    """The value of a ``CUgraphConditionalHandle``: pass it to a kernel whose parameter is a
    ``cudaGraphConditionalHandle``, which sets it with ``cudaGraphSetConditional``.  ``graph``
    is the graph it was made for (its conditional nodes are added there)."""

    graph: NodeBuilding | None = None

    def __new__(cls, value: int, graph: NodeBuilding | None):
        handle = super().__new__(cls, value)
        handle.graph = graph
        return handle

    def __repr__(self) -> str:
        return f"<cudaload.ConditionalHandle {int(self):#x}>"


if TYPE_CHECKING:  # generic in its bodies' class for type checkers, with no typing at run time
    class ConditionalNode(GraphNode, Generic[_Graph]):
        bodies: tuple[_Graph, ...]
        condition: ConditionalHandle

        @property
        def body(self) -> _Graph: ...
else:
    class ConditionalNode(GraphNode):
        """A conditional node; ``bodies`` are its body graphs (``body`` the first): an if node's
        body runs when the value is not 0 (an if/else node's second when it is), a while node's
        body again and again while it is not 0, a switch node's body ``n`` when it is ``n``."""

        __slots__ = ("bodies", "condition")

        @property
        def body(self):
            return self.bodies[0]


def entry_points(what: str):
    """The driver, checked to have ``what`` conditional nodes ("if", "while", "if/else",
    "switch").  Raises :class:`MissingSymbolError` naming the release a driver lacks (before it
    is asked anything else) or, on a driver that says it has that release, the entry point."""
    drv = driver.api()
    require(drv, _KINDS[what][1], f"has no {what} conditional nodes", "cuGraphAddNode_v2")
    drv.cuGraphConditionalHandleCreate, drv.cuGraphAddNode_v2  # noqa: B018 (resolved now)
    return drv


class ConditionalBuilding(NodeBuilding):
    """The conditional-node methods of :class:`Graph` (graph.py)."""

    def conditional_handle(self, default: int | None = 0) -> ConditionalHandle:
        """A handle for this graph's conditional nodes; at each launch its value starts as
        ``default`` (an unsigned int); for ``None`` no launch sets it (device code must, before
        a node reads it).  Raises
        ``ValueError``, :class:`MissingSymbolError` before CUDA 12.3, :class:`DriverError`."""
        value = 0 if default is None else bounded(default, "the handle's default", *C_UINT)
        entry_points("if")
        drv, _, _ = self._building(None)
        out = drv.ffi.new("CUgraphConditionalHandle *")
        driver.check(drv.cuGraphConditionalHandleCreate(
            out, self.handle, self.device.context, value,
            0 if default is None else _ASSIGN_DEFAULT), "cuGraphConditionalHandleCreate")
        return ConditionalHandle(out[0], self)

    def add_if(self, handle: ConditionalHandle, *, orelse: bool = False,
               after=()) -> ConditionalNode[Self]:
        """An if node: ``body`` runs when the handle's value is not 0; with ``orelse``,
        ``bodies[1]`` runs when it is 0 (CUDA 12.8)."""
        return self._conditional("if/else" if orelse else "if", handle, 2 if orelse else 1,
                                 after)

    def add_while(self, handle: ConditionalHandle, *, after=()) -> ConditionalNode[Self]:
        """A while node: ``body`` runs while the handle's value is not 0 (tested before each
        run: set it in the body to stop, and before the node to run the body at all)."""
        return self._conditional("while", handle, 1, after)

    def add_switch(self, handle: ConditionalHandle, count: int, *,
                   after=()) -> ConditionalNode[Self]:
        """A switch node of ``count`` bodies: ``bodies[n]`` runs when the value is ``n``, none
        for a value of ``count`` or more (CUDA 12.8)."""
        count = bounded(count, "the switch's body count", 1, C_UINT[1])
        return self._conditional("switch", handle, count, after)

    def _conditional(self, what: str, handle, size: int, after) -> ConditionalNode[Self]:
        """Raises ``TypeError`` for a handle that is no ConditionalHandle, ``ValueError`` for
        one of another graph, :class:`MissingSymbolError`, :class:`DriverError`."""
        if not isinstance(handle, ConditionalHandle):
            raise TypeError(f"a conditional node takes the ConditionalHandle that "
                            f"graph.conditional_handle() made, not {type(handle).__name__}")
        if handle.graph is not self:
            raise ValueError("the handle was made for another graph: make one with this graph's "
                             "conditional_handle()")
        entry_points(what)
        drv, deps, n = self._building(after)
        params = drv.ffi.new("CUgraphNodeParams *")
        params.type = _CONDITIONAL
        cond = params.conditional
        cond.handle, cond.size = handle, size
        cond.type = _cuda_ffi.integer_const(_KINDS[what][0])
        cond.ctx = self.device.context
        out = drv.ffi.new("CUgraphNode *")
        driver.check(drv.cuGraphAddNode_v2(out, self.handle, deps, drv.ffi.NULL, n,
                                           params), "cuGraphAddNode")
        node: ConditionalNode[Self] = ConditionalNode(self, out[0], what)
        node.condition = handle
        node.bodies = tuple(self._body(cond.phGraph_out[i])
                            for i in range(size))
        return node
