"""Opening in one process what another shared (CUDA IPC): ``import_ipc`` of a handle from
``DeviceBuffer.export_ipc`` (an ``ImportedBuffer``, closed when garbage), ``MemoryPool.export_ipc``
(a ``MemoryPool``, which that process's buffers of the pool are then imported from) or
``Event.export_ipc`` (an ``Event``), on the GPU the handle names.
"""

from __future__ import annotations

import weakref

from ..bindings import driver
from .._base import lifetime
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._ipc_handles import (HANDLE_SIZE, EventHandle, MemoryHandle, PoolHandle, PoolMemoryHandle,
                           _Handle)
from .device import Device, activate, as_device, visible_devices
from .memory import DeviceBuffer
from .mempool import MemoryPool, imported_pool
from .stream import Event, _destroyer
from ._held_releases import held

__all__ = ["ImportedBuffer", "import_ipc"]

_LAZY_PEER_ACCESS = _cuda_ffi.integer_const("CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS")
_INVALID_CONTEXT = _cuda_ffi.integer_const("CUDA_ERROR_INVALID_CONTEXT")
_POSIX_FD = _cuda_ffi.integer_const("CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR")
# The pools imported here, by the exporter's id for each: what its buffers' handles name.
_IMPORTED: weakref.WeakValueDictionary[str, MemoryPool] = weakref.WeakValueDictionary()


class ImportedBuffer(DeviceBuffer):
    """A :class:`DeviceBuffer` over memory another process exported: closed when garbage or by
    :meth:`free` (``cuIpcCloseMemHandle``; an allocation of an imported pool, ``cuMemFree``, which
    releases this process's mapping), never freed for the exporter."""

    __slots__ = ()

    def __repr__(self) -> str:
        return (f"<cudaload.ImportedBuffer 0x{self.ptr:x} {self.nbytes} bytes on device "
                f"{self.device.ordinal}>")

    def free(self, stream=None) -> None:
        """Close the mapping now.  Raises ValueError for a ``stream``: memory of another process
        is unmapped at once, not freed in a stream's order."""
        if stream is not None:
            raise ValueError("memory imported from another process is closed, not freed in "
                             "stream order; call free() without a stream")
        super().free()


def import_ipc(handle, device=None):
    """Open ``handle`` (what ``export_ipc()`` gave in another process) on its GPU, or on
    ``device`` when given (it must be that GPU): an :class:`ImportedBuffer` for a buffer's, a
    :class:`~cudaload.MemoryPool` for a pool's, an :class:`Event` for an event's.  Raises
    TypeError for anything else, ValueError for a handle of a GPU this process does not see (or
    not ``device``), for one exported by this very process and for a buffer of a pool not
    imported here first, DriverError."""
    opener = _OPENERS.get(type(handle))
    if opener is None:
        raise TypeError(f"import_ipc takes what export_ipc() returned (a MemoryHandle, "
                        f"PoolHandle or EventHandle), not {type(handle).__name__}")
    if handle._exported_here():
        raise ValueError("this handle was exported by this process, and CUDA opens a handle only "
                         "in another one; here, use the buffer, pool or event itself")
    return opener(handle, _device_of(handle, device))


def _device_of(handle: _Handle, device) -> Device:
    if device is not None:
        dev = as_device(device)
        if dev.uuid != handle.device_uuid:
            raise ValueError(f"the handle is of GPU {handle.device_uuid}, but device "
                             f"{dev.ordinal} is GPU {dev.uuid}; import it on the same GPU")
        return dev
    for ordinal in range(visible_devices()):
        if Device(ordinal).uuid == handle.device_uuid:
            return Device(ordinal)
    raise ValueError(f"the handle is of GPU {handle.device_uuid}, which this process does not "
                     "see; import it in a process where that GPU is visible (CUDA_VISIBLE_DEVICES)")


def _open_memory(handle: MemoryHandle, dev: Device) -> ImportedBuffer:
    drv = activate(dev, owning=True)
    raw = drv.ffi.new("CUipcMemHandle *")
    drv.ffi.memmove(raw, handle.data, HANDLE_SIZE)
    out = drv.ffi.new("CUdeviceptr *")
    _check_open(drv.cuIpcOpenMemHandle_v2(out, raw[0], _LAZY_PEER_ACCESS), "cuIpcOpenMemHandle")
    return _imported_buffer(out[0], handle, dev, "cuIpcCloseMemHandle")


def _open_pool(handle: PoolHandle, dev: Device) -> MemoryPool:
    drv = activate(dev, owning=True)
    out = drv.ffi.new("CUmemoryPool *")
    # A file descriptor is passed as the handle's value itself, not through a pointer.
    driver.check(drv.cuMemPoolImportFromShareableHandle(out, drv.ffi.cast("void *", handle.fd),
                                                        _POSIX_FD, 0),
                 "cuMemPoolImportFromShareableHandle")
    pool = _IMPORTED[handle.pool_id] = imported_pool(out[0], dev, handle.pool_id)
    return pool


def _open_pool_memory(handle: PoolMemoryHandle, dev: Device) -> ImportedBuffer:
    pool = _IMPORTED.get(handle.pool_id)
    if pool is None:
        raise ValueError("this buffer is of a memory pool not imported in this process: import "
                         "the pool first, cudaload.import_ipc(pool.export_ipc()) with the pool's "
                         "handle from the exporting process, and keep it while its buffers are "
                         "used")
    drv = activate(dev, owning=True)
    data = drv.ffi.new("CUmemPoolPtrExportData *")
    drv.ffi.memmove(data, handle.data, HANDLE_SIZE)
    out = drv.ffi.new("CUdeviceptr *")
    driver.check(drv.cuMemPoolImportPointer(out, pool.handle, data), "cuMemPoolImportPointer")
    return _imported_buffer(out[0], handle, dev, "cuMemFree_v2", owner=pool)


def _imported_buffer(ptr: int, handle: MemoryHandle, dev: Device, release: str,
                     owner=None) -> ImportedBuffer:
    """The buffer over ``ptr``, which the driver mapped here, released by ``release``."""
    buf = ImportedBuffer(ptr + handle.offset, handle.nbytes, dev, owner)
    buf._finalizer = weakref.finalize(buf, _close, release, ptr, dev)
    buf._finalizer.atexit = False  # the process's exit unmaps it with the context
    return buf


def _close(release: str, ptr: int, dev: Device) -> None:
    # the child of a fork maps nothing (the driver would fail there); held while a capture records
    if not lifetime.forked() and not held(_close, release, ptr, dev):
        getattr(activate(dev), release)(ptr)


def _open_event(handle: EventHandle, dev: Device) -> Event:
    drv = activate(dev, owning=True)
    raw = drv.ffi.new("CUipcEventHandle *")
    drv.ffi.memmove(raw, handle.data, HANDLE_SIZE)
    out = drv.ffi.new("CUevent *")
    _check_open(drv.cuIpcOpenEventHandle(out, raw[0]), "cuIpcOpenEventHandle")
    event = Event.__new__(Event)
    event.device, event.handle = dev, out[0]
    event.timing, event.blocking_sync, event.interprocess = False, False, True
    event._finalizer = weakref.finalize(event, _destroyer("cuEventDestroy_v2"), out[0], dev)
    event._finalizer.atexit = False
    return event


def _check_open(rc: int, function: str) -> None:
    if rc == _INVALID_CONTEXT:  # what the driver answers for a handle this process exported
        raise ValueError(f"{function} refused the handle (CUDA_ERROR_INVALID_CONTEXT): CUDA opens "
                         "a handle only in a process other than the one that exported it")
    driver.check(rc, function)


# handle type -> opener
_OPENERS = {MemoryHandle: _open_memory, PoolMemoryHandle: _open_pool_memory,
            PoolHandle: _open_pool, EventHandle: _open_event}
