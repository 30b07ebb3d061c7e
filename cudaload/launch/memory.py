"""Device memory: ``alloc`` and ``DeviceBuffer``, with copies to and from host buffers.
"""

from __future__ import annotations

import weakref

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from .._base import lifetime
from ..errors import CudaLoadError
from ._sizes import C_UINT64, allocation_size, bounded
from .device import Device, activate, as_device
from .mempool import MemoryPool
from ._foreign import stream_handle as handle_of
from ._byte_interface import ByteSpan
from . import dlpack as _dlpack, peer
from .pinned import HostBuffer
from ._held_releases import any_recording, held

TYPE_CHECKING = False  # true for type checkers only: no typing import at run time
if TYPE_CHECKING:
    from typing import TypeVar

    _Out = TypeVar("_Out")

__all__ = ["alloc", "DeviceBuffer"]

_CData = _cuda_ffi.CData  # a cffi value: a CUdeviceptr read from the driver

# element widths cuMemsetD8/D16/D32 fill, by dtype name
_FILL_WIDTHS = {"uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "uint32": 4, "int32": 4}


def alloc(nbytes: int, device=None, stream=None, pool: MemoryPool | None = None) -> DeviceBuffer:
    """Allocate ``nbytes`` on ``device`` (default: the thread's, or the pool's); with ``stream``,
    in its order from ``pool`` (default: the device's current pool; ``cuMemAllocAsync``,
    ``cuMemAllocFromPoolAsync``; in a stream capture, a graph memory node the graph owns), and
    freed in that stream's order when garbage.  Raises TypeError/ValueError for a bad size,
    device, stream or pool (a pool without a stream, or of another device) before the driver is
    called; out of memory is a DriverError."""
    nbytes = allocation_size(nbytes)
    dev = _device_for(device, stream, pool)
    drv = activate(dev, owning=True)
    out = drv.ffi.new("CUdeviceptr *")
    if stream is None:
        driver.check(drv.cuMemAlloc_v2(out, max(nbytes, 1)),
                     f"cuMemAlloc ({nbytes} bytes on device {dev.ordinal})")
        return _owned(DeviceBuffer._made(out[0], nbytes, dev), stream, None)
    handle = handle_of(stream)
    if pool is None:
        driver.check(drv.cuMemAllocAsync(out, max(nbytes, 1), handle),
                     f"cuMemAllocAsync ({nbytes} bytes on device {dev.ordinal})")
    else:
        driver.check(drv.cuMemAllocFromPoolAsync(out, max(nbytes, 1), pool.handle, handle),
                     f"cuMemAllocFromPoolAsync ({nbytes} bytes on device {dev.ordinal})")
    return _owned(DeviceBuffer._made(out[0], nbytes, dev), stream, handle)


def _owned(buf: DeviceBuffer, stream, handle, ptr: int | None = None) -> DeviceBuffer:
    """``buf``, whose memory at ``ptr`` (default: ``buf.ptr``) is freed when it is garbage: at
    once (no ``stream``), or in ``stream``'s order on its ``handle``, resolved once by the
    caller (resolving it again at each free would cost microseconds per allocation)."""
    # The finalizer holds the stream, so that the handle it frees on stays valid until then, or
    # until close(): then the memory is freed after the work queued on it before (see _free).
    buf._finalizer = weakref.finalize(buf, _free, buf.ptr if ptr is None else ptr,
                                     buf.device, stream, handle)
    # The process's exit tears the context down with all its memory; freeing from an exit hook
    # could run after another library reset the shared primary context.
    buf._finalizer.atexit = False
    return buf


def _device_for(device, stream, pool) -> Device:
    """The device an allocation is made on: ``device``'s, or ``pool``'s.  Raises TypeError for a
    pool that is no MemoryPool, ValueError for one without a stream or of another device."""
    if pool is None:
        return as_device(device)
    if not isinstance(pool, MemoryPool):
        raise TypeError(f"pool must be a cudaload.MemoryPool, not {type(pool).__name__}")
    if stream is None:
        raise ValueError("an allocation from a pool is stream-ordered: give its stream too, "
                         "alloc(nbytes, stream=s, pool=pool)")
    if device is not None and as_device(device) is not pool.device:
        raise ValueError(f"the pool is device {pool.device.ordinal}'s, not device "
                         f"{as_device(device).ordinal}'s; leave device out to allocate on it")
    return pool.device


def _free(ptr: int, dev: Device, stream=None, handle=None) -> None:
    if lifetime.forked():  # the child of a fork owns no CUDA memory; touching the driver would fail
        return
    drv = activate(dev)
    # While a capture records, a free waits for its end (_held_releases.py); but one in the order
    # of a stream being captured is that capture's free node, made now.
    if any_recording() and not _captured_free(stream, handle) \
            and held(_free, ptr, dev, stream, handle):
        return
    if stream is None:
        drv.cuMemFree_v2(ptr)
        return
    last_work = getattr(stream, "_last_work", None)  # a closed Stream's (stream.py)
    if last_work is None:
        drv.cuMemFreeAsync(ptr, handle)
    # A closed stream's handle is gone (the driver may have given it to a new stream), but the
    # work queued on it before still runs and may use the memory: it is freed in the legacy
    # default stream's order, made to wait for that work (a non-blocking stream's work is no
    # part of that order otherwise).  Where the wait fails, freeing could come first: it leaks.
    elif not drv.cuStreamWaitEvent(drv.ffi.NULL, last_work.handle, 0):
        drv.cuMemFreeAsync(ptr, drv.ffi.NULL)


def _captured_free(stream, handle) -> bool:
    """Whether a free in the order of ``stream`` (on ``handle``) is recorded by a capture on it."""
    if stream is None or getattr(stream, "_last_work", None) is not None:  # a closed stream's
        return False
    from ._host_calls import capturing  # deferred: only a free inside a capture needs it

    try:
        return capturing(handle)
    except CudaLoadError:  # a handle the driver no longer knows: no capture on it
        return False


class DeviceBuffer(ByteSpan):
    """A span of device memory: ``.ptr``, ``.nbytes``, ``.device``; ``__cuda_array_interface__``
    and ``__dlpack__`` (1-D uint8: raw bytes).

    Made by :func:`alloc` (owning, freed when garbage) or as a view (``Module.get_global``);
    the constructor raises TypeError for an address or size that is no integer, ValueError for
    one outside 0..2**64-1."""

    __slots__ = ("ptr", "nbytes", "device", "_finalizer", "_owner", "__weakref__")
    _SEND_INSTEAD = ("send the contents (buf.copy_to_host()) and copy them into a buffer allocated "
                     "in the receiving process")

    def __init__(self, ptr: int, nbytes: int, device: Device, owner=None):
        # An integer (int() would cut 10.7 bytes down), or a cffi integer such as a CUdeviceptr
        # (int() as before), in the range CUdeviceptr/size_t hold
        self.ptr = bounded(int(ptr) if isinstance(ptr, _CData) else ptr, "ptr", *C_UINT64)
        self.nbytes = bounded(nbytes, "nbytes", *C_UINT64)
        self.device = device
        self._finalizer: weakref.finalize | None = None
        self._owner = owner  # keeps what the view points into alive

    @classmethod
    def _made(cls, ptr: int, nbytes: int, device: Device) -> DeviceBuffer:
        """A buffer of an address and size the driver has just given (no checks to make)."""
        buf = cls.__new__(cls)
        buf.ptr, buf.nbytes, buf.device, buf._finalizer, buf._owner = \
            int(ptr), nbytes, device, None, None
        return buf

    def __repr__(self) -> str:
        return f"<cudaload.DeviceBuffer 0x{self.ptr:x} {self.nbytes} bytes on device {self.device.ordinal}>"

    def __int__(self) -> int:
        return self.ptr

    def __copy__(self):
        # A copy would share the memory but not its ownership: freeing one would leave the other
        # pointing at freed memory, past the guard that refuses freed buffers.
        raise TypeError("a DeviceBuffer cannot be copied; to copy the memory: "
                        "cudaload.alloc(buf.nbytes).copy_from(buf)")

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> object:
        """A DLPack capsule viewing this memory as 1-D uint8 of ``nbytes`` (raw bytes: view it as
        another dtype on the consumer's side); the consumer's ``stream`` waits for cudaload's
        work without a stream.  ``dl_device=(1, 0)`` (the host) gives a host copy, ``copy=True``
        a device copy.  Raises BufferError (DLPackError) for an export it cannot give,
        TypeError/ValueError for malformed keywords, ValueError once freed."""
        self._live()
        versioned, to_host, copied = _dlpack.request(self.device, stream, max_version,
                                                     dl_device, copy)
        if to_host:
            return _dlpack.host_export(self.copy_to_host(), versioned)
        source = alloc(self.nbytes, self.device).copy_from(self) if copied else self
        _dlpack.wait(stream, self.device)
        return _dlpack.export(source, source.ptr, source.nbytes,
                              (_dlpack.CUDA, self.device.ordinal), versioned, copied)

    def __dlpack_device__(self) -> tuple[int, int]:
        return _dlpack.CUDA, self.device.ordinal

    @property
    def is_device_accessible(self) -> bool:
        """True: kernels on its device read and write the memory at ``.ptr``."""
        return True

    @property
    def is_host_accessible(self) -> bool:
        """False: the host reaches device memory only through copies (``copy_to_host``)."""
        return False

    def free(self, stream=None) -> None:
        """Release the memory now (only for buffers made by :func:`alloc`), or in ``stream``'s
        order (``cuMemFreeAsync``; in a stream capture, a graph free node); while another
        library still views it through DLPack, when the last such view goes.

        Afterwards ``.ptr`` is 0, so every later use is refused instead of reaching freed memory
        (a kernel writing there would poison the whole context)."""
        if self._finalizer is not None:
            self.ptr = 0
            detached = self._finalizer.detach() if stream is not None else None
            if detached is not None:  # still owned: freed on the stream asked for instead
                _owned(self, stream, handle_of(stream), ptr=detached[2][0])
            if not _dlpack.viewed(self):
                self._finalizer()

    def export_ipc(self):
        """A picklable :class:`~cudaload.launch._ipc_handles.MemoryHandle` (``cuIpcGetMemHandle``) that
        ``cudaload.import_ipc`` opens in another process on the same GPU.  Raises TypeError for
        memory CUDA IPC cannot share (a stream-ordered allocation from a pool; managed
        memory), ValueError once freed, DriverError."""
        from ._ipc_handles import export_memory  # deferred: only this path needs it

        return export_memory(self)

    def _live(self):
        """The driver, with this buffer's device current.  Raises ValueError once freed."""
        if not self.ptr:
            raise ValueError(f"this DeviceBuffer of {self.nbytes} bytes was freed; "
                             "allocate a new one with cudaload.alloc()")
        return activate(self.device)

    def _host(self, obj, writable: bool, nbytes: int | None):
        ffi = driver.init().ffi
        if isinstance(obj, HostBuffer):  # pinned memory: no buffer protocol before Python 3.12
            obj = obj.view
        try:
            view = memoryview(obj)
        except TypeError:
            raise TypeError(f"{type(obj).__name__} does not support the buffer protocol; "
                            "pass a numpy array, bytes, bytearray or memoryview") from None
        if not view.c_contiguous:
            raise ValueError("host buffer must be C-contiguous (numpy.ascontiguousarray)")
        if writable and view.readonly:
            raise ValueError("host buffer is read-only; pass a writable one (bytearray, numpy)")
        count = view.nbytes if nbytes is None else self._count(nbytes)
        if count > self.nbytes or count > view.nbytes:
            raise ValueError(f"copy of {count} bytes does not fit: device buffer has "
                             f"{self.nbytes}, host buffer has {view.nbytes}")
        return ffi.from_buffer(view, require_writable=writable), count

    def _count(self, nbytes) -> int:
        """``nbytes`` of a copy: 0..this buffer's size.  Raises TypeError, ValueError."""
        return bounded(nbytes, "nbytes of the copy", 0, self.nbytes)

    def copy_from_host(self, obj, stream=None, nbytes: int | None = None) -> DeviceBuffer:
        """Copy a host buffer (numpy, bytes, ...) into this one; on ``stream`` when given.
        Raises TypeError for an ``nbytes`` that is no integer, ValueError for one outside
        0..this buffer's size or past the host buffer's."""
        src, count = self._host(obj, False, nbytes)
        drv = self._live()
        if stream is None:
            driver.check(drv.cuMemcpyHtoD_v2(self.ptr, src, count), "cuMemcpyHtoD")
        else:
            driver.check(drv.cuMemcpyHtoDAsync_v2(self.ptr, src, count, handle_of(stream)),
                         "cuMemcpyHtoDAsync")
        return self

    def copy_to_host(self, out: _Out | None = None, stream=None,
                     nbytes: int | None = None) -> _Out | bytearray:
        """Copy into ``out`` (default: a new bytearray) and return it; on ``stream`` when given.

        Copies into pageable memory return when complete; into pinned memory, synchronize the
        stream before reading ``out``.  Raises as :meth:`copy_from_host`; an ``nbytes`` out of
        range before a bytearray of that size is made."""
        if out is None:
            target: _Out | bytearray = bytearray(self.nbytes if nbytes is None
                                                 else self._count(nbytes))
        else:
            target = out
        dst, count = self._host(target, True, nbytes)
        drv = self._live()
        if stream is None:
            driver.check(drv.cuMemcpyDtoH_v2(dst, self.ptr, count), "cuMemcpyDtoH")
        else:
            driver.check(drv.cuMemcpyDtoHAsync_v2(dst, self.ptr, count, handle_of(stream)),
                         "cuMemcpyDtoHAsync")
        return target

    def copy_from(self, other, stream=None) -> DeviceBuffer:
        """Copy from another device buffer (anything with ``.ptr``/``.nbytes``) of at most this
        size; from a buffer whose ``.device`` is another Device with ``cuMemcpyPeer``
        (``cuMemcpyPeerAsync`` on ``stream``), which needs no peer access enabled.  Raises
        ValueError for a larger or freed source, or a ``.ptr`` outside 0..2**64-1;
        TypeError for a ``.ptr``/``.nbytes`` that is no integer."""
        nbytes = bounded(other.nbytes, "the source's nbytes", *C_UINT64)
        if nbytes > self.nbytes:
            raise ValueError(f"source has {nbytes} bytes, this buffer {self.nbytes}")
        source = bounded(other.ptr, "the source's ptr", *C_UINT64)
        if not source:
            raise ValueError("the source buffer was freed; copy from a live one")
        drv = self._live()
        source_device = getattr(other, "device", None)
        if isinstance(source_device, Device) and source_device is not self.device:
            peer.copy(drv, self.ptr, self.device, source, source_device, nbytes,
                      None if stream is None else handle_of(stream))
            return self
        if stream is None:
            driver.check(drv.cuMemcpyDtoD_v2(self.ptr, source, nbytes), "cuMemcpyDtoD")
        else:
            driver.check(drv.cuMemcpyDtoDAsync_v2(self.ptr, source, nbytes, handle_of(stream)),
                         "cuMemcpyDtoDAsync")
        return self

    def fill(self, value: int, dtype: str = "uint32", stream=None) -> DeviceBuffer:
        """Set every element of ``dtype`` (``uint8``, ``uint16``, ``uint32`` or their signed
        forms; the buffer's size a multiple of it) to ``value``; on ``stream`` when given.
        Raises ValueError for another dtype, a value out of its range or a size not a multiple."""
        width = _FILL_WIDTHS.get(dtype)
        if width is None:
            raise ValueError(f"fill dtype must be one of {', '.join(_FILL_WIDTHS)}, not {dtype!r}")
        bits = 8 * width
        low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if dtype[0] == "i" else (0, 1 << bits)
        value = bounded(value, f"the {dtype} fill value", low, high - 1)
        if self.nbytes % width:
            raise ValueError(f"a buffer of {self.nbytes} bytes is no whole number of {dtype} "
                             f"({width} bytes each); fill a view of a multiple of {width} bytes")
        pattern = value & ((1 << bits) - 1)  # a signed value as the bits the device stores
        drv, count = self._live(), self.nbytes // width
        name = f"cuMemsetD{bits}"
        if stream is None:
            sync = getattr(drv, name + "_v2")
            driver.check(sync(self.ptr, pattern, count), name)
        else:
            driver.check(getattr(drv, name + "Async")(self.ptr, pattern, count, handle_of(stream)),
                         name + "Async")
        return self

    def memset(self, value: int, stream=None) -> DeviceBuffer:
        """Set every byte to ``value`` (0..255); on ``stream`` when given."""
        value = bounded(value, "the memset value (a byte)", 0, 255)
        drv = self._live()
        if stream is None:
            driver.check(drv.cuMemsetD8_v2(self.ptr, value, self.nbytes), "cuMemsetD8")
        else:
            driver.check(drv.cuMemsetD8Async(self.ptr, value, self.nbytes,
                                             handle_of(stream)), "cuMemsetD8Async")
        return self
