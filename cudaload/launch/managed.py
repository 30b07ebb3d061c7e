"""Managed (unified) memory: ``alloc_managed`` and ``ManagedBuffer``, one address valid on the host
and every device, migrated on demand or ahead of use by :meth:`ManagedBuffer.prefetch`.
"""

from __future__ import annotations

import weakref

from ..bindings import driver
from ._sizes import allocation_size
from .device import activate, as_device
from ._foreign import stream_handle as handle_of
from .memory import DeviceBuffer, _free

__all__ = ["alloc_managed", "ManagedBuffer"]

_ATTACH_GLOBAL = 0x1  # CU_MEM_ATTACH_GLOBAL: any stream of any device may use it


def alloc_managed(nbytes: int, device=None) -> ManagedBuffer:
    """Allocate ``nbytes`` of managed memory (``cuMemAllocManaged``) in ``device``'s context
    (default: the thread's).  Raises TypeError for a size that is no integer, ValueError for
    one outside 0..2**64-1 (before the driver is called), DriverError when the device has no
    managed memory or none left."""
    nbytes = allocation_size(nbytes)
    dev = as_device(device)
    drv = activate(dev, owning=True)
    out = drv.ffi.new("CUdeviceptr *")
    driver.check(drv.cuMemAllocManaged(out, max(nbytes, 1), _ATTACH_GLOBAL),
                 f"cuMemAllocManaged ({nbytes} bytes on device {dev.ordinal})")
    buf = ManagedBuffer(out[0], nbytes, dev)
    buf._finalizer = weakref.finalize(buf, _free, out[0], dev)  # cuMemFree frees managed memory
    buf._finalizer.atexit = False
    return buf


class ManagedBuffer(DeviceBuffer):
    """A :class:`DeviceBuffer` of managed memory: its ``.ptr`` is also a host address, and
    :meth:`prefetch` moves its pages ahead of use."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<cudaload.ManagedBuffer 0x{self.ptr:x} {self.nbytes} bytes>"

    def free(self, stream=None) -> None:
        """Release the memory now.  Raises ValueError for a ``stream``: stream-ordered frees
        are for memory of a pool (``alloc(n, stream=s)``), which managed memory is not."""
        if stream is not None:
            raise ValueError("managed memory is not stream-ordered; free it with free()")
        super().free()

    def export_ipc(self):
        """Refused: CUDA IPC shares memory of ``cudaload.alloc`` only.  Raises TypeError saying
        what to share instead."""
        raise TypeError("managed memory cannot be shared through CUDA IPC; allocate the memory "
                        "to share with cudaload.alloc(nbytes) and export that")

    def prefetch(self, device=None, stream=None) -> ManagedBuffer:
        """Migrate the pages to ``device`` (a Device or ordinal; ``"cpu"`` for the host; default:
        this buffer's) in ``stream`` order (default: the legacy stream).  Raises DriverError
        where the device cannot prefetch (no concurrent managed access)."""
        drv = self._live()
        where = drv.ffi.new("CUmemLocation *")
        if device == "cpu":
            where.type, where.id = drv.ffi.integer_const("CU_MEM_LOCATION_TYPE_HOST"), 0
        else:
            where.type = drv.ffi.integer_const("CU_MEM_LOCATION_TYPE_DEVICE")
            where.id = as_device(self.device if device is None else device).ordinal
        driver.check(drv.cuMemPrefetchAsync_v2(self.ptr, self.nbytes, where[0], 0,
                                               handle_of(stream)),
                     f"cuMemPrefetchAsync (to {'the host' if device == 'cpu' else where.id})")
        return self
