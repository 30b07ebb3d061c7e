"""Pinned (page-locked) host memory: ``alloc_host`` and ``HostBuffer``, which copies to and from
device memory asynchronously, so that a copy on a stream overlaps kernels on another.
"""

from __future__ import annotations

import contextlib
import sys
import weakref

from ..bindings import driver
from .._base import lifetime
from ._sizes import C_UINT64, allocation_size, bounded
from .device import Device, activate, as_device
from ._byte_interface import ByteSpan, array_interface
from . import dlpack as _dlpack
from ._held_releases import held

__all__ = ["alloc_host", "HostBuffer", "pin"]

# cuMemHostAlloc flags (cuda.h): usable from every context, and mapped into the device's address
# space, so that the memory also has a device address a kernel can read (zero-copy).
_PORTABLE, _DEVICEMAP = 0x01, 0x02


def alloc_host(nbytes: int, device=None) -> HostBuffer:
    """Allocate ``nbytes`` of pinned host memory (``cuMemHostAlloc``), mapped for ``device``
    (default: the thread's).  Raises TypeError for a size that is no integer, ValueError for
    one outside 0..2**64-1 (before the driver is called), DriverError when the driver has no
    page-locked memory left."""
    nbytes = allocation_size(nbytes)
    dev = as_device(device)
    drv = activate(dev, owning=True)
    out = drv.ffi.new("void **")
    driver.check(drv.cuMemHostAlloc(out, max(nbytes, 1), _PORTABLE | _DEVICEMAP),
                 f"cuMemHostAlloc ({nbytes} bytes)")
    host = int(drv.ffi.cast("uintptr_t", out[0]))
    mapped = drv.ffi.new("CUdeviceptr *")
    try:
        driver.check(drv.cuMemHostGetDevicePointer_v2(mapped, out[0], 0),
                     "cuMemHostGetDevicePointer")
    except BaseException:  # no buffer owns the memory yet: it would leak
        drv.cuMemFreeHost(out[0])
        raise
    buf = HostBuffer(host, mapped[0], nbytes, dev)
    buf._finalizer = weakref.finalize(buf, _free, out[0], dev)
    buf._finalizer.atexit = False  # the process's exit releases it with the context
    return buf


def _free(pointer, dev: Device) -> None:
    if lifetime.forked():  # the child of a fork owns no CUDA memory; touching the driver would fail
        return
    if not held(_free, pointer, dev):  # a capture records: freed once it has ended
        activate(dev).cuMemFreeHost(pointer)


class HostBuffer(ByteSpan):
    """Pinned host memory: ``.host_ptr`` (the host address), ``.ptr`` (its device address),
    ``.nbytes``; ``.view`` (a writable memoryview, what ``copy_from_host``/``copy_to_host`` and
    numpy take), ``__array_interface__`` (numpy: ``numpy.asarray(h)``) and
    ``__cuda_array_interface__`` (the mapped device address), ``__dlpack__`` (kDLCUDAHost).
    Freed when garbage or by :meth:`free`.  The constructor raises ValueError for an address
    outside 0..2**64-1 (which the cast to a pointer would cut short) or a size outside
    0..2**63-1 (a memoryview's length), TypeError for a size that is no integer."""

    __slots__ = ("host_ptr", "ptr", "nbytes", "device", "_bytes", "_finalizer", "__weakref__")
    _SEND_INSTEAD = "send the contents (bytes(h.view)) and copy them into pinned memory there"

    def __init__(self, host_ptr: int, ptr: int, nbytes: int, device: Device):
        self.host_ptr, self.ptr = (bounded(int(v), what, *C_UINT64)
                                   for v, what in ((host_ptr, "host_ptr"), (ptr, "ptr")))
        self.nbytes = bounded(nbytes, "nbytes", 0, sys.maxsize)  # a memoryview's ssize_t
        self.device = device
        ffi = driver.init().ffi
        self._bytes = ffi.buffer(ffi.cast("char *", self.host_ptr), nbytes)
        self._finalizer: weakref.finalize | None = None

    def __repr__(self) -> str:
        return f"<cudaload.HostBuffer 0x{self.host_ptr:x} {self.nbytes} bytes, pinned>"

    @property
    def view(self) -> memoryview:
        """The memory as a writable 1-D memoryview of bytes.  Raises ValueError once freed."""
        self._live()
        return memoryview(self._bytes)

    @property
    def __array_interface__(self) -> dict:
        self._live()
        return array_interface(self.host_ptr, self.nbytes)

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> object:
        """A DLPack capsule viewing this memory as 1-D uint8 of ``nbytes`` on kDLCUDAHost (pinned
        host memory), or on kDLCPU where ``dl_device=(1, 0)`` asks for the host; ``copy=True``
        a host copy.  The consumer's ``stream`` waits for cudaload's work without a stream.
        Raises BufferError (DLPackError) for another device, TypeError/ValueError for malformed
        keywords, ValueError once freed."""
        self._live()
        versioned, target, copied = _dlpack.pinned_request(stream, max_version, dl_device, copy)
        if copied:
            return _dlpack.host_export(bytearray(self._bytes), versioned)
        _dlpack.wait(stream, self.device)
        return _dlpack.export(self, self.host_ptr, self.nbytes, target, versioned)

    def __dlpack_device__(self) -> tuple[int, int]:
        return _dlpack.CUDA_HOST, 0

    @property
    def is_device_accessible(self) -> bool:
        """True: the memory is mapped, so kernels read and write it at ``.ptr`` (zero-copy)."""
        return True

    @property
    def is_host_accessible(self) -> bool:
        """True: the host reads and writes it at ``.host_ptr`` (``.view``)."""
        return True

    def free(self) -> None:
        """Release the memory now; every later use raises ValueError.  A memoryview or numpy
        array taken from it must not be used afterwards.  Raises BufferError while a view of it
        (memoryview, DLPack) is alive."""
        if self._finalizer is not None and self.host_ptr and _dlpack.viewed(self):
            raise BufferError("a DLPack view of this HostBuffer is still alive; drop the array "
                              "made from it before free()")
        if self._finalizer is not None and self.host_ptr:
            # Every live memoryview of h.view (slices and numpy.frombuffer included) holds a
            # reference to the buffer object; beyond ours and getrefcount's own, one is a view
            # that would read freed memory.
            if sys.getrefcount(self._bytes) > 2:
                raise BufferError("a view of this HostBuffer (memoryview, numpy.frombuffer) is "
                                  "still alive; release or drop it before free()")
            self.host_ptr = self.ptr = 0
            self._finalizer()

    def export_ipc(self):
        """Refused: CUDA IPC shares device memory only.  Raises TypeError saying what to share
        instead."""
        raise TypeError("pinned host memory cannot be shared through CUDA IPC; share device "
                        "memory (cudaload.alloc(nbytes).export_ipc()), or host memory through "
                        "multiprocessing.shared_memory, pinned in each process with cudaload.pin()")

    def _live(self) -> None:
        if not self.host_ptr:
            raise ValueError(f"this HostBuffer of {self.nbytes} bytes was freed; "
                             "allocate a new one with cudaload.alloc_host()")


@contextlib.contextmanager
def pin(array, device=None):
    """Page-lock an existing host array (anything with the writable buffer protocol, e.g. a
    numpy array) for the block (``cuMemHostRegister``), so that copies from and to it on a
    stream run asynchronously; unpinned at the block's end.  Synchronize the streams that copy
    before the block ends.  Raises TypeError for no buffer, ValueError for a read-only or
    non-contiguous one, DriverError when the driver refuses (already pinned)."""
    try:
        view = memoryview(array)
    except TypeError:
        raise TypeError(f"{type(array).__name__} does not support the buffer protocol; pass a "
                        "numpy array, bytearray or memoryview") from None
    if view.readonly or not view.c_contiguous:
        raise ValueError("pin() needs a writable C-contiguous host buffer (numpy.ascontiguousarray)")
    drv = activate(as_device(device), owning=True)
    pointer = drv.ffi.from_buffer(view, require_writable=True)
    driver.check(drv.cuMemHostRegister_v2(pointer, max(view.nbytes, 1), _PORTABLE),
                 f"cuMemHostRegister ({view.nbytes} bytes)")
    try:
        yield array
    finally:
        driver.check(drv.cuMemHostUnregister(pointer), "cuMemHostUnregister")
