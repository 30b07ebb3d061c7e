"""CUDA IPC handles, and how buffers, pools and events make them: ``MemoryHandle`` and
``EventHandle`` (picklable: the driver's 64 bytes, the GPU's UUID, the process that made them),
``PoolHandle`` (a shareable pool's file descriptor, which pickles through multiprocessing) and
``PoolMemoryHandle`` (an allocation of such a pool); ``export_memory``, ``export_pool`` and
``export_event``.  Opening them is ``ipc.import_ipc``'s.

A handle names its GPU by UUID, not by ordinal: ``CUDA_VISIBLE_DEVICES`` may number the devices
of two processes differently.  It also names the process that made it, as the driver refuses to
open a handle in the process that exported it with an error that does not say so.
"""

from __future__ import annotations

import os
import weakref

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ..errors import CudaLoadError, DriverError
from .device import activate

TYPE_CHECKING = False  # true for type checkers only
if TYPE_CHECKING:
    from typing import Any, Protocol

    from .device import Device

    # What exporting reads of a DeviceBuffer, a MemoryPool and an Event: memory, mempool and
    # stream import this module (on first export), so it names none of their classes, for type
    # checkers neither.  Their export_ipc() methods say what each exports.
    class DeviceBuffer(Protocol):
        ptr: int
        nbytes: int
        device: Device

        def _live(self) -> Any: ...  # the driver, the buffer's device bound

    class MemoryPool(Protocol):
        device: Device
        _ipc_id: str | None

        @property
        def handle(self) -> Any: ...  # the CUmemoryPool

    class Event(Protocol):
        device: Device
        handle: Any  # the CUevent

__all__ = ["MemoryHandle", "PoolMemoryHandle", "EventHandle", "PoolHandle", "export_memory",
           "export_event", "export_pool", "share", "HANDLE_SIZE"]

_const = _cuda_ffi.integer_const
_IPC_CAPABLE = _const("CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE")
_RANGE_START = _const("CU_POINTER_ATTRIBUTE_RANGE_START_ADDR")
_MEMPOOL = _const("CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE")
_POSIX_FD = _const("CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR")
HANDLE_SIZE = 64  # CU_IPC_HANDLE_SIZE
# This process, beside its pid (which the system hands out again once a process ends).
_PROCESS = os.urandom(8).hex()
# The pools made here with ipc=True, by CUmemoryPool address: their allocations export by pool.
_SHAREABLE: weakref.WeakValueDictionary[int, MemoryPool] = weakref.WeakValueDictionary()


class _Handle:
    """What one process sends another: the GPU's UUID, the process that made it."""

    __slots__ = ("device_uuid", "pid", "process")
    _FIELDS: tuple[str, ...] = ("device_uuid", "pid", "process")

    def __init__(self, device_uuid: str, pid: int, process: str):
        self.device_uuid, self.pid, self.process = device_uuid, pid, process

    def _key(self) -> tuple:
        return tuple(getattr(self, f) for f in self._FIELDS)

    def __reduce__(self):
        return type(self), self._key()

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _exported_here(self) -> bool:
        return self.pid == os.getpid() and self.process == _PROCESS


class _DriverBytes(_Handle):
    """A handle whose substance is the driver's 64 bytes, which travel by any channel."""

    __slots__ = ("data",)
    _FIELDS = ("data",) + _Handle._FIELDS

    def __init__(self, data: bytes, device_uuid: str, pid: int, process: str):
        if type(data) is not bytes or len(data) != HANDLE_SIZE:
            raise ValueError(f"a CUDA IPC handle is {HANDLE_SIZE} bytes, not {data!r:.40}")
        super().__init__(device_uuid, pid, process)
        self.data = data


class MemoryHandle(_DriverBytes):
    """A buffer's CUDA IPC handle: ``.nbytes``, ``.offset`` (from the base of the allocation the
    driver shares), ``.device_uuid``; pickles."""

    __slots__ = ("nbytes", "offset")
    _FIELDS = _DriverBytes._FIELDS + ("nbytes", "offset")

    def __init__(self, data: bytes, device_uuid: str, pid: int, process: str, nbytes: int,
                 offset: int):
        super().__init__(data, device_uuid, pid, process)
        self.nbytes, self.offset = nbytes, offset

    def __repr__(self) -> str:
        return f"<cudaload.{type(self).__name__} {self.nbytes} bytes on GPU {self.device_uuid}>"


class PoolMemoryHandle(MemoryHandle):
    """An allocation of a shared pool (``cuMemPoolExportPointer``'s data): a MemoryHandle that
    also names its pool (``.pool_id``), which the importing process imports first."""

    __slots__ = ("pool_id",)
    _FIELDS = MemoryHandle._FIELDS + ("pool_id",)

    def __init__(self, data: bytes, device_uuid: str, pid: int, process: str, nbytes: int,
                 offset: int, pool_id: str):
        super().__init__(data, device_uuid, pid, process, nbytes, offset)
        self.pool_id = pool_id


class EventHandle(_DriverBytes):
    """An interprocess event's CUDA IPC handle: ``.device_uuid``; pickles."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<cudaload.EventHandle on GPU {self.device_uuid}>"


class PoolHandle(_Handle):
    """A shared memory pool's handle: ``.fd``, a POSIX file descriptor of this process (closed
    when the handle is garbage), ``.pool_id``, ``.device_uuid``.

    It pickles through ``multiprocessing.reduction.DupFd``: the descriptor is handed to the
    receiving process over a Unix socket (SCM_RIGHTS), or inherited by a process being spawned;
    the receiver must be a process of the same multiprocessing family (its authentication key)
    while this one runs."""

    __slots__ = ("fd", "pool_id", "_closer", "__weakref__")
    _FIELDS = _Handle._FIELDS + ("pool_id",)  # the descriptor's number differs in each process

    def __init__(self, fd: int, device_uuid: str, pid: int, process: str, pool_id: str):
        super().__init__(device_uuid, pid, process)
        self.fd, self.pool_id = fd, pool_id
        self._closer = weakref.finalize(self, os.close, fd)

    def __reduce__(self):
        from multiprocessing.reduction import DupFd  # deferred: only pickling needs it

        return _received_pool, (DupFd(self.fd),) + self._key()

    def __repr__(self) -> str:
        return f"<cudaload.PoolHandle of pool {self.pool_id} on GPU {self.device_uuid}>"


def _received_pool(descriptor, device_uuid: str, pid: int, process: str,
                   pool_id: str) -> PoolHandle:
    """A PoolHandle in the receiving process, over the descriptor handed to it.  Raises
    CudaLoadError where it cannot be had (a process outside the exporter's multiprocessing family,
    an exporter that has ended)."""
    # deferred: multiprocessing is imported where a handle is received, not with cudaload
    from multiprocessing import ProcessError  # what an authentication key that differs raises

    try:
        fd = descriptor.detach()
    except (OSError, EOFError, ProcessError) as e:
        raise CudaLoadError(
            f"the memory pool's file descriptor could not be received from process {pid} ({e})",
            hint="send the pool's handle through multiprocessing (a Pool's arguments, a Queue, a "
                 "Pipe) to a process it started, while the exporting process still runs") from e
    return PoolHandle(fd, device_uuid, pid, process, pool_id)


def export_memory(buf: DeviceBuffer) -> MemoryHandle:
    """``buf``'s handle: ``cuIpcGetMemHandle``'s, or for an allocation of a shareable pool
    ``cuMemPoolExportPointer``'s (a PoolMemoryHandle).  Raises TypeError for memory CUDA IPC
    cannot share (a stream-ordered allocation from a pool made without ``ipc=True``), ValueError
    once freed, DriverError."""
    drv = buf._live()
    pool = _SHAREABLE.get(_pointer_attribute(drv, _MEMPOOL, buf.ptr) or 0)
    if pool is not None:
        return _export_pooled(drv, buf, pool)
    if _pointer_attribute(drv, _IPC_CAPABLE, buf.ptr) == 0:
        raise TypeError("this memory cannot be shared through CUDA IPC: it comes from a memory "
                        "pool (cudaload.alloc(n, stream=s)) made without ipc=True; allocate the "
                        "memory to share with cudaload.alloc(nbytes), without a stream, or from "
                        "a pool made with cudaload.MemoryPool(ipc=True), and export that")
    base = _pointer_attribute(drv, _RANGE_START, buf.ptr) or buf.ptr
    out = drv.ffi.new("CUipcMemHandle *")
    driver.check(drv.cuIpcGetMemHandle(out, base), "cuIpcGetMemHandle")
    return MemoryHandle(bytes(drv.ffi.buffer(out)), buf.device.uuid, os.getpid(), _PROCESS,
                        buf.nbytes, buf.ptr - base)


def _export_pooled(drv, buf: DeviceBuffer, pool: MemoryPool) -> PoolMemoryHandle:
    # The allocation's own address: the driver exports allocations, and a pool's address range
    # (RANGE_START_ADDR) may span several of them.
    out = drv.ffi.new("CUmemPoolPtrExportData *")
    driver.check(drv.cuMemPoolExportPointer(out, buf.ptr), "cuMemPoolExportPointer")
    return PoolMemoryHandle(bytes(drv.ffi.buffer(out)), buf.device.uuid, os.getpid(), _PROCESS,
                            buf.nbytes, 0, _id_of(pool))


def share(pool: MemoryPool) -> None:
    """Note ``pool``, just made with ``ipc=True``, as one whose allocations export by pool."""
    _SHAREABLE[_address(pool.handle)] = pool


def export_pool(pool: MemoryPool) -> PoolHandle:
    """``pool``'s handle (``cuMemPoolExportToShareableHandle``, a POSIX file descriptor).  Raises
    DriverError for a pool not made with ``ipc=True`` (or imported here), ValueError once closed,
    MissingSymbolError for a driver without the call."""
    if _SHAREABLE.get(_address(pool.handle)) is not pool:
        imported = pool._ipc_id is not None
        raise DriverError(
            "this memory pool " + ("was imported from another process; the process that made it "
                                   "exports it" if imported else "was made without ipc=True, so "
                                   "the driver has no handle to share it by"),
            code=1, name="CUDA_ERROR_INVALID_VALUE", function="cuMemPoolExportToShareableHandle",
            hint="export the pool in the process that made it" if imported else
                 "make the pool to share with cudaload.MemoryPool(ipc=True)")
    drv = activate(pool.device)
    out = drv.ffi.new("int *")
    driver.check(drv.cuMemPoolExportToShareableHandle(out, pool.handle, _POSIX_FD, 0),
                 "cuMemPoolExportToShareableHandle")
    return PoolHandle(out[0], pool.device.uuid, os.getpid(), _PROCESS, _id_of(pool))


def _id_of(pool: MemoryPool) -> str:
    ipc_id = pool._ipc_id
    assert ipc_id is not None, "a pool share() noted has its id"
    return ipc_id


def _address(handle) -> int:
    return int(_cuda_ffi.cast("uintptr_t", handle))


def _pointer_attribute(drv, attribute: int, ptr: int) -> int | None:
    """A pointer attribute of ``ptr`` as an int, None where the driver cannot say (an older
    driver): then the export itself is left to succeed or fail."""
    out = drv.ffi.new("unsigned long long *")  # zeroed: a narrower answer (a bool) reads right
    if drv.cuPointerGetAttribute(out, attribute, ptr):
        return None
    return int(out[0])


def export_event(event: Event) -> EventHandle:
    """``event``'s handle (``cuIpcGetEventHandle``).  Raises ValueError for an event not made
    with ``interprocess=True``, DriverError."""
    if not getattr(event, "interprocess", False):
        raise ValueError("only an interprocess event can be shared: make it with "
                         "cudaload.Event(interprocess=True)")
    drv = activate(event.device)
    out = drv.ffi.new("CUipcEventHandle *")
    driver.check(drv.cuIpcGetEventHandle(out, event.handle), "cuIpcGetEventHandle")
    return EventHandle(bytes(drv.ffi.buffer(out)), event.device.uuid, os.getpid(), _PROCESS)
