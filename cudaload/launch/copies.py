"""Many copies in one call: ``copy_batch``, through the driver's ``cuMemcpyBatchAsync`` (CUDA
12.8 and later) or, where it has none or cannot take the stream, one ``cuMemcpyAsync`` each.

Every copy is checked before any is issued, so that a bad one leaves the memory as it was.  The
batch has an ABI per CUDA major version: 12.8's reports the failing copy through ``failIdx``, 13.0's
(``_v2``) has no such parameter; each is called only on drivers of its ABI.
"""

from __future__ import annotations

import operator

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ..errors import MissingSymbolError
from . import _host_calls
from ._array_layout import _contiguous
from ._foreign import interface_problem
from ._sizes import C_UINT64, bounded
from .memory import DeviceBuffer
from .pinned import HostBuffer
from .device import activate
from .stream import Stream

__all__ = ["copy_batch"]

_STREAM_ORDER = _cuda_ffi.integer_const("CU_MEMCPY_SRC_ACCESS_ORDER_STREAM")
_LEGACY_HANDLES = (0, 1)  # NULL and CU_STREAM_LEGACY: streams the batch refuses
_NO_COPY = (1 << 64) - 1  # failIdx when no single copy failed
_KINDS = ("a DeviceBuffer, a HostBuffer, an address (int) or an object with "
          "__cuda_array_interface__")


def copy_batch(copies, stream) -> None:
    """Copy each ``(dst, src, nbytes)`` of ``copies`` in ``stream``'s order (a
    :class:`Stream`, a foreign stream, or None: the legacy default stream); copies within the
    batch run in no given order.  ``dst``/``src``: a DeviceBuffer, a HostBuffer, an address or
    a ``__cuda_array_interface__`` object.  One ``cuMemcpyBatchAsync``
    where the driver has it, else one ``cuMemcpyAsync`` per copy (also on the legacy default
    stream and in a stream capture, where the batch is refused).  Raises TypeError, ValueError
    (naming the copy) before any copy is issued, DriverError."""
    checked = [_checked(i, item) for i, item in enumerate(_listed(copies))]
    stream = Stream.from_handle(0 if stream is None else stream)
    drv = activate(stream.device)
    work = [c for c in checked if c[3]]  # a copy of no bytes is no work, and the batch refuses it
    if not work:
        return
    batch = None if _unbatchable(stream) else _batch_entry(drv)
    if batch is None:
        for index, dst, src, nbytes in work:
            driver.check(drv.cuMemcpyAsync(dst, src, nbytes, stream.handle),
                         f"cuMemcpyAsync (copy {index})")
    else:
        _issue_batch(drv, batch, work, stream.handle)


def _listed(copies) -> list:
    try:
        return list(copies)
    except TypeError:
        raise TypeError(f"copy_batch takes a list of (dst, src, nbytes) tuples, not "
                        f"{type(copies).__name__}") from None


def _checked(index: int, item) -> tuple[int, int, int, int]:
    """Copy ``index`` as (index, dst address, src address, nbytes).  Raises TypeError, ValueError."""
    try:
        dst, src, nbytes = item
    except (TypeError, ValueError):
        raise TypeError(f"copy {index}: each copy is a (dst, src, nbytes) tuple, not "
                        f"{item!r:.80}") from None
    nbytes = bounded(nbytes, f"copy {index}: nbytes", *C_UINT64)
    ends = (_address(dst, index, "dst", True), _address(src, index, "src", False))
    for (address, size), what in zip(ends, ("dst", "src")):
        if size is not None and nbytes > size:
            raise ValueError(f"copy {index}: {nbytes} bytes do not fit its {what}, which has "
                             f"{size}; copy at most {size}")
    return index, ends[0][0], ends[1][0], nbytes


def _address(obj, index: int, what: str, writable: bool) -> tuple[int, int | None]:
    """The address of one end of a copy and its size in bytes (None: an int, whose size no one
    knows).  Raises TypeError for another kind, ValueError for freed or null memory."""
    if isinstance(obj, (DeviceBuffer, HostBuffer)):
        address = obj.host_ptr if isinstance(obj, HostBuffer) else obj.ptr
        if not address:
            raise ValueError(f"copy {index}: its {what} ({type(obj).__name__}) was freed")
        return address, obj.nbytes
    if isinstance(obj, int) and not isinstance(obj, bool):
        address = bounded(obj, f"copy {index}: the {what} address", *C_UINT64)
        if not address:
            raise ValueError(f"copy {index}: its {what} address is 0 (NULL)")
        return address, None
    if hasattr(obj, "__cuda_array_interface__"):
        return _interface_span(obj.__cuda_array_interface__, index, what, writable)
    raise TypeError(f"copy {index}: its {what} must be {_KINDS}, not {type(obj).__name__}; copy "
                    "pageable host memory with DeviceBuffer.copy_from_host/copy_to_host")


def _interface_span(cai, index: int, what: str, writable: bool) -> tuple[int, int]:
    problem = interface_problem(cai)
    typestr = cai["typestr"] if problem is None else ""
    if problem is None and not typestr[2:].isdigit():
        problem = f"its __cuda_array_interface__['typestr'] {typestr!r} gives no item size"
    if problem:
        raise TypeError(f"copy {index}: {what}: {problem}")
    shape = tuple(operator.index(n) for n in cai["shape"])
    size = int(typestr[2:])
    strides = cai.get("strides")
    if strides is not None and tuple(strides) != _contiguous(shape, size):
        raise ValueError(f"copy {index}: its {what} is not C-contiguous; copy a contiguous array")
    if writable and cai["data"][1]:
        raise ValueError(f"copy {index}: its dst is read-only")
    nbytes = size
    for n in shape:
        nbytes *= n
    address = bounded(cai["data"][0], f"copy {index}: the {what} pointer", *C_UINT64)
    if not address and nbytes:  # an empty array may have none; a copy from it has no bytes
        raise ValueError(f"copy {index}: its {what}'s __cuda_array_interface__ data pointer is "
                         "0 (NULL)")
    return address, nbytes


def _unbatchable(stream: Stream) -> bool:
    """Whether ``stream`` is one the batch refuses: the legacy default stream, or a stream being
    captured (the batch has no graph node)."""
    return stream.ptr in _LEGACY_HANDLES or _host_calls.capturing(stream.handle)


def _batch_entry(drv):
    """(name, function) of the batch of the driver's ABI, None before CUDA 12.8 or where the
    driver lacks it."""
    if drv.version < 12080:
        return None
    name = "cuMemcpyBatchAsync_v2" if drv.version >= 13000 else "cuMemcpyBatchAsync"
    try:
        return name, getattr(drv, name)
    except MissingSymbolError:
        return None


def _issue_batch(drv, batch, work: list[tuple[int, int, int, int]], handle) -> None:
    name, call = batch
    ffi, count = drv.ffi, len(work)
    dsts = ffi.new("CUdeviceptr[]", [c[1] for c in work])
    srcs = ffi.new("CUdeviceptr[]", [c[2] for c in work])
    sizes = ffi.new("size_t[]", [c[3] for c in work])
    attrs = ffi.new("CUmemcpyAttributes *")  # no location hints: those are for managed memory
    attrs.srcAccessOrder = _STREAM_ORDER  # sources read in stream order, as cuMemcpyAsync does
    first = ffi.new("size_t[1]")  # the one set of attributes applies from copy 0 on
    if name.endswith("_v2"):
        rc = call(dsts, srcs, sizes, count, attrs, first, 1, handle)
        where = ""
    else:
        failed = ffi.new("size_t *", _NO_COPY)
        rc = call(dsts, srcs, sizes, count, attrs, first, 1, failed, handle)
        where = f", copy {work[failed[0]][0]}" if failed[0] < count else ""
    driver.check(rc, f"cuMemcpyBatchAsync ({count} copies{where})")
