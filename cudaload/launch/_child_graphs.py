"""Embedding a finished graph into a running capture as a child graph node.

The driver clones the child into the capture's graph (``cuGraphAddChildGraphNode``) after the
capturing stream's current dependencies, and the stream then continues from that node
(``cuStreamUpdateCaptureDependencies``).  Both read and write the stream's dependency set, whose
entry points changed their arguments in CUDA 12.3 (edge data): cudaload asks for those of 12.3
and refuses an older driver with a :class:`MissingSymbolError` naming the release.

Imports of cudaload: driver, errors, device.
"""

from __future__ import annotations

from ..bindings import driver
from ..bindings._cuda_ffi import ffi
from ..errors import MissingSymbolError
from .device import activate

__all__ = ["embed", "require"]

_NEEDS = 12030  # cuStreamGetCaptureInfo_v3 and cuStreamUpdateCaptureDependencies_v2
_ACTIVE = ffi.integer_const("CU_STREAM_CAPTURE_STATUS_ACTIVE")
_SET = ffi.integer_const("CU_STREAM_SET_CAPTURE_DEPENDENCIES")


def require(drv, needed: int, cannot: str, symbol: str) -> None:
    """Refuse a driver before CUDA ``needed`` (e.g. 12030) that ``cannot`` do what is asked
    (without the entry point ``symbol``, or with another ABI under its name): a
    :class:`MissingSymbolError` naming the release."""
    if drv.version < needed:
        raise MissingSymbolError(
            f"the CUDA driver at {drv.library.path} (CUDA {driver.format_version(drv.version)}) "
            f"{cannot}: that needs a CUDA {driver.format_version(needed)} driver or newer",
            hint="upgrade the NVIDIA driver", library="cuda", symbol=symbol,
            path=drv.library.path)


def embed(stream, child) -> None:
    """Add the CUgraph ``child`` to the capture recording on ``stream`` at its current point.
    Raises :class:`MissingSymbolError` on a driver before CUDA 12.3, ``RuntimeError`` when the
    capture was invalidated, :class:`DriverError`."""
    drv = activate(stream.device)
    require(drv, _NEEDS, "cannot add a child graph to a capture", "cuStreamGetCaptureInfo_v3")
    status, graph = ffi.new("CUstreamCaptureStatus *"), ffi.new("CUgraph *")
    deps, edges = ffi.new("const CUgraphNode **"), ffi.new("const CUgraphEdgeData **")
    count = ffi.new("size_t *")
    driver.check(drv.cuStreamGetCaptureInfo_v3(stream.handle, status, ffi.NULL, graph, deps,
                                               edges, count), "cuStreamGetCaptureInfo")
    if status[0] != _ACTIVE:
        raise RuntimeError("the capture was invalidated by an earlier call: leave the with block, "
                           "which raises why")
    # edges[0] says how the dependencies are joined: cudaload makes only default edges (no
    # programmatic launches), which is what cuGraphAddChildGraphNode joins with.
    node = ffi.new("CUgraphNode *")
    driver.check(drv.cuGraphAddChildGraphNode(node, graph[0], deps[0], count[0], child),
                 "cuGraphAddChildGraphNode")
    driver.check(drv.cuStreamUpdateCaptureDependencies_v2(stream.handle, node, ffi.NULL, 1, _SET),
                 "cuStreamUpdateCaptureDependencies")
