"""The memory pool stream-ordered allocations draw from: ``memory_pool`` and ``MemoryPool``, whose
release threshold says how much freed memory the pool keeps for reuse instead of returning it to
the device at each synchronization.
"""

from __future__ import annotations

from ..bindings import driver
from ._sizes import C_UINT64, bounded
from .device import Device, activate, as_device

__all__ = ["memory_pool", "MemoryPool"]


def memory_pool(device=None) -> MemoryPool:
    """The memory pool of ``device`` (default: the thread's) that ``alloc(n, stream=s)`` draws
    from.  Raises ValueError for a bad device, the availability errors."""
    return MemoryPool(as_device(device))


class MemoryPool:
    """A device's current memory pool (``cuDeviceGetMemPool``: the default pool unless another
    library set one), asked for at each use.  ``.device``; ``.release_threshold`` (bytes)."""

    __slots__ = ("device",)

    def __init__(self, device: Device):
        self.device = device

    def __repr__(self) -> str:
        return f"<cudaload.MemoryPool of device {self.device.ordinal}>"

    @property
    def handle(self):
        """The ``CUmemoryPool``.  Raises DriverError."""
        drv = activate(self.device)
        out = drv.ffi.new("CUmemoryPool *")
        driver.check(drv.cuDeviceGetMemPool(out, self.device.handle), "cuDeviceGetMemPool")
        return out[0]

    @property
    def release_threshold(self) -> int:
        """Bytes of freed memory the pool keeps (``CU_MEMPOOL_ATTR_RELEASE_THRESHOLD``); the
        rest goes back to the device when a stream, event or device synchronizes.  0 (CUDA's
        default) returns all of it; ``2**64 - 1`` keeps everything.  Raises DriverError; set,
        TypeError for a value that is no integer, ValueError for one outside 0..2**64-1."""
        return self._attribute(None)

    @release_threshold.setter
    def release_threshold(self, nbytes: int) -> None:
        self._attribute(bounded(nbytes, "release_threshold", *C_UINT64))

    def _attribute(self, value: int | None) -> int:
        pool = self.handle
        drv = driver.init()
        attr = drv.ffi.integer_const("CU_MEMPOOL_ATTR_RELEASE_THRESHOLD")
        box = drv.ffi.new("cuuint64_t *", value or 0)
        if value is None:
            driver.check(drv.cuMemPoolGetAttribute(pool, attr, box), "cuMemPoolGetAttribute")
        else:
            driver.check(drv.cuMemPoolSetAttribute(pool, attr, box), "cuMemPoolSetAttribute")
        return int(box[0])
