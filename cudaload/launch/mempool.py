"""Memory pools, what stream-ordered allocations draw from: a device's current pool
(``memory_pool``) or a pool of the program's own (``MemoryPool(...)``, ``cuMemPoolCreate``), with
their attributes: the memory reserved and used (now and at its high-water mark), the reuse
policies, and the release threshold, how much freed memory the pool keeps for reuse instead of
returning it to the device at each synchronization.  ``alloc(n, stream=s, pool=p)`` allocates
from one (cudaload/launch/memory.py).  A pool made with ``ipc=True`` is shared with other
processes (``export_ipc``; cudaload/launch/_ipc_handles.py, ipc.py).
"""

from __future__ import annotations

import os
import struct
import weakref

from ..bindings import driver
from .._base import lifetime
from ..errors import DriverError
from ._sizes import C_UINT64, bounded
from .device import Device, activate, as_device
from ._unpicklable import GpuState
from ._held_releases import held

__all__ = ["memory_pool", "MemoryPool"]

# CUmemPoolProps as every release from 11.2 lays it out (headers/cuda.h says why it is packed
# here): allocType, handleTypes, location (type, id), win32SecurityAttributes, maxSize, usage,
# 54 reserved bytes that must be zero.  88 bytes.
_PROPS = struct.Struct("=IIiiQQH54x")
_MAX_SIZE_SINCE = 12020  # maxSize was reserved (and had to be zero) before CUDA 12.2
# What sharing a pool takes: a pool made with ipc=True is of no use on a driver without them.
_IPC_CALLS = ("cuMemPoolExportToShareableHandle", "cuMemPoolImportFromShareableHandle",
              "cuMemPoolExportPointer", "cuMemPoolImportPointer")


def memory_pool(device=None) -> MemoryPool:
    """The memory pool of ``device`` (default: the thread's) that ``alloc(n, stream=s)`` draws
    from.  Raises TypeError for a device that is no integer (nor a Device), ValueError for a bad
    ordinal, the availability errors."""
    pool = MemoryPool.__new__(MemoryPool)
    pool.device, pool._handle, pool._finalizer, pool._ipc_id = as_device(device), None, None, None
    return pool


def imported_pool(handle, dev: Device, ipc_id: str) -> MemoryPool:
    """The MemoryPool over ``handle``, a pool ``cuMemPoolImportFromShareableHandle`` opened on
    ``dev`` (ipc.import_ipc's): destroyed like one made here, its allocations imported, not made."""
    pool = MemoryPool.__new__(MemoryPool)
    pool.device, pool._ipc_id = dev, ipc_id
    pool._own(handle)
    return pool


def _check_driver(drv, dev: Device, max_size: int, ipc: bool) -> None:
    """Refuse what this driver cannot do before a pool is made: a ``max_size`` before CUDA 12.2
    (DriverError), ``ipc`` without the calls that share a pool (MissingSymbolError) or on a device
    that shares no pool by file descriptor (DriverError)."""
    if max_size and drv.version < _MAX_SIZE_SINCE:
        raise DriverError(
            f"the CUDA driver (CUDA {driver.format_version(drv.version)}) has no maximum pool "
            "size: max_size needs CUDA 12.2 or newer", code=801,
            name="CUDA_ERROR_NOT_SUPPORTED", function="cuMemPoolCreate",
            hint="upgrade the NVIDIA driver, or leave max_size out (no bound)")
    if not ipc:
        return
    for name in _IPC_CALLS:
        getattr(drv, name)  # resolved now: a MissingSymbolError names the release to upgrade to
    out = drv.ffi.new("int *")
    attr = drv.ffi.integer_const("CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES")
    fd = drv.ffi.integer_const("CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR")
    # Where the driver cannot say (an error), cuMemPoolCreate is left to succeed or fail.
    if drv.cuDeviceGetAttribute(out, attr, dev.handle) == 0 and not out[0] & fd:
        raise DriverError(
            f"device {dev.ordinal} shares no memory pool by POSIX file descriptor "
            f"(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES is {out[0]})", code=801,
            name="CUDA_ERROR_NOT_SUPPORTED", function="cuMemPoolCreate",
            hint="leave ipc out on this device; to share memory with another process here, try "
                 "cudaload.alloc(nbytes).export_ipc() (legacy CUDA IPC)")


def _destroy(handle, dev: Device) -> None:
    if lifetime.forked():  # the child of a fork owns no CUDA pool; touching the driver would fail
        return
    if held(_destroy, handle, dev):  # a capture records: destroyed once it has ended
        return
    # Allocations still out keep their memory: the driver releases the pool after the last is
    # freed (cuMemPoolDestroy's contract).
    activate(dev).cuMemPoolDestroy(handle)


class _Attribute:
    """A ``CUmemPool_attribute`` read at each access (``cuMemPoolGetAttribute``), of C type
    ``ctype``: ``cuuint64_t`` (bytes) or ``int`` (a policy, read as a bool); set where
    ``settable`` (``cuMemPoolSetAttribute``)."""

    def __init__(self, constant: str, ctype: str, settable: bool, doc: str):
        self.constant, self.ctype, self.settable = constant, ctype, settable
        self.__doc__ = doc

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, pool, owner=None):
        if pool is None:  # looked up on the class: the descriptor itself
            return self
        value = pool._attribute(self.constant, self.ctype)
        return bool(value) if self.ctype == "int" else value

    def __set__(self, pool, value) -> None:
        if not self.settable:
            raise AttributeError(f"MemoryPool.{self.name} is read by the driver, not set "
                                 "(reset_high() resets the high-water marks)")
        if self.ctype == "int":
            if type(value) is not bool:
                raise TypeError(f"MemoryPool.{self.name} must be True or False, not {value!r}")
            value = int(value)
        else:
            value = bounded(value, self.name, *C_UINT64)
        pool._attribute(self.constant, self.ctype, value)


def _bytes(constant: str, doc: str) -> _Attribute:
    return _Attribute(constant, "cuuint64_t", False, doc)


def _policy(constant: str, doc: str) -> _Attribute:
    return _Attribute(constant, "int", True, doc)


class MemoryPool(GpuState):
    """A pool of device memory for stream-ordered allocations: made by ``MemoryPool(...)``
    (``cuMemPoolCreate``; destroyed by :meth:`close` or when garbage) or by :func:`memory_pool`
    (the device's current pool, asked for at each use).  ``.device``, ``.handle``; the
    attributes below, read from the driver at each access.

    The constructor raises TypeError/ValueError for a bad device, ``release_threshold``,
    ``max_size`` or ``ipc`` (before the driver is called), DriverError where the driver refuses (a
    ``max_size`` on a driver before CUDA 12.2, which has none), MissingSymbolError for ``ipc`` on
    a driver without the pool IPC calls.  Pickling or copying one raises NotPicklableError
    (``export_ipc()`` shares a pool made with ``ipc=True``)."""

    __slots__ = ("device", "_handle", "_finalizer", "_ipc_id", "__weakref__")
    _finalizer: weakref.finalize | None
    _ipc_id: str | None  # shared pools': what the handles of their allocations name them by
    _SEND_INSTEAD = ("send the options it was made with (device, release_threshold, max_size) "
                     "and make a MemoryPool with them in the receiving process, or make it with "
                     "ipc=True and send pool.export_ipc()")

    def __init__(self, device=None, release_threshold: int | None = None, max_size: int = 0,
                 ipc: bool = False):
        threshold = (None if release_threshold is None
                     else bounded(release_threshold, "release_threshold", *C_UINT64))
        max_size = bounded(max_size, "max_size", *C_UINT64)
        if type(ipc) is not bool:
            raise TypeError(f"ipc must be True or False, not {ipc!r}")
        self.device = dev = as_device(device)
        self._handle, self._finalizer, self._ipc_id = None, None, None
        drv = activate(dev, owning=True)
        _check_driver(drv, dev, max_size, ipc)
        handles = "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR" if ipc else "CU_MEM_HANDLE_TYPE_NONE"
        props = _PROPS.pack(drv.ffi.integer_const("CU_MEM_ALLOCATION_TYPE_PINNED"),
                            drv.ffi.integer_const(handles),
                            drv.ffi.integer_const("CU_MEM_LOCATION_TYPE_DEVICE"), dev.ordinal,
                            0, max_size, 0)
        out, packed = drv.ffi.new("CUmemoryPool *"), drv.ffi.new("unsigned char[]", props)
        driver.check(drv.cuMemPoolCreate(out, drv.ffi.cast("struct CUmemPoolProps_st *", packed)),
                     f"cuMemPoolCreate (on device {dev.ordinal}{', ipc=True' if ipc else ''})")
        self._own(out[0])
        if ipc:
            from ._ipc_handles import share  # deferred: only shared pools need it

            self._ipc_id = os.urandom(8).hex()  # what the other process finds the pool by
            share(self)
        if threshold is not None:
            self.release_threshold = threshold  # destroyed by the finalizer should the driver refuse

    def _own(self, handle) -> None:
        self._handle = handle
        self._finalizer = weakref.finalize(self, _destroy, handle, self.device)
        self._finalizer.atexit = False  # the process's exit releases it with the context

    def __repr__(self) -> str:
        if self._finalizer is None:
            return f"<cudaload.MemoryPool of device {self.device.ordinal}>"
        shared = ", shareable" if self.ipc else ""
        closed = "" if self._finalizer.alive else ", closed"
        return f"<cudaload.MemoryPool on device {self.device.ordinal}{shared}{closed}>"

    @property
    def ipc(self) -> bool:
        """Whether the pool is shared between processes: made with ``ipc=True``, or imported."""
        return self._ipc_id is not None

    def export_ipc(self):
        """A :class:`~cudaload.launch._ipc_handles.PoolHandle`
        (``cuMemPoolExportToShareableHandle``: a POSIX file descriptor) that
        ``cudaload.import_ipc`` opens in another process on the same GPU; it pickles through
        multiprocessing.  Raises DriverError for a pool not made with ``ipc=True``, ValueError
        once closed, MissingSymbolError for a driver without the call."""
        from ._ipc_handles import export_pool  # deferred: only this path needs it

        return export_pool(self)

    @property
    def handle(self):
        """The ``CUmemoryPool``; for a device's current pool, asked for at each use
        (``cuDeviceGetMemPool``).  Raises ValueError once closed, DriverError."""
        if self._finalizer is not None:
            if not self._finalizer.alive:
                raise ValueError("this MemoryPool was closed; make a new one with "
                                 "cudaload.MemoryPool()")
            return self._handle
        drv = activate(self.device)
        out = drv.ffi.new("CUmemoryPool *")
        driver.check(drv.cuDeviceGetMemPool(out, self.device.handle), "cuDeviceGetMemPool")
        return out[0]

    release_threshold = _Attribute(
        "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD", "cuuint64_t", True,
        """Bytes of freed memory the pool keeps (``CU_MEMPOOL_ATTR_RELEASE_THRESHOLD``); the rest
        goes back to the device when a stream, event or device synchronizes.  0 (CUDA's default)
        returns all of it; ``2**64 - 1`` keeps everything.  Raises DriverError; set, TypeError
        for a value that is no integer, ValueError for one outside 0..2**64-1.""")
    reserved = _bytes("CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT",
                      "Bytes of device memory the pool holds now, in use or kept for reuse.")
    reserved_high = _bytes("CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH",
                           "The most bytes the pool held since it was made or reset_high().")
    used = _bytes("CU_MEMPOOL_ATTR_USED_MEM_CURRENT",
                  "Bytes of the pool's memory allocated and not yet freed.")
    used_high = _bytes("CU_MEMPOOL_ATTR_USED_MEM_HIGH",
                       "The most bytes in use since the pool was made or reset_high().")
    follow_event_dependencies = _policy(
        "CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES",
        "Whether memory freed on one stream is reused by another that waits on an event "
        "recorded after the free (default True).  Set: TypeError for no bool.")
    allow_opportunistic = _policy(
        "CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC",
        "Whether memory whose free has already completed is reused by any stream (default "
        "True).  Set: TypeError for no bool.")
    allow_internal_dependencies = _policy(
        "CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES",
        "Whether the driver may make a stream wait on a free on another stream to reuse its "
        "memory (default True).  Set: TypeError for no bool.")

    def reset_high(self) -> None:
        """Reset the high-water marks (``reserved_high``, ``used_high``) to what is reserved and
        used now.  Raises ValueError once closed, DriverError."""
        for constant in ("CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH", "CU_MEMPOOL_ATTR_USED_MEM_HIGH"):
            self._attribute(constant, "cuuint64_t", 0)  # the driver takes only 0: "reset"

    def trim(self, nbytes: int = 0) -> None:
        """Return the memory the pool keeps for reuse to the device, all but ``nbytes`` of it
        (``cuMemPoolTrimTo``); memory in use stays.  Raises TypeError for an ``nbytes`` that is
        no integer, ValueError for one outside 0..2**64-1 or once closed, DriverError."""
        keep = bounded(nbytes, "nbytes to keep", *C_UINT64)
        pool = self.handle
        driver.check(activate(self.device).cuMemPoolTrimTo(pool, keep),
                     f"cuMemPoolTrimTo ({keep} bytes)")

    def close(self) -> None:
        """Destroy the pool now (``cuMemPoolDestroy``); allocations from it that are still out
        keep their memory until freed.  A second call does nothing.  Raises ValueError for a
        device's current pool (from memory_pool()), which is the device's, not the program's."""
        if self._finalizer is None:
            raise ValueError("memory_pool() gives the device's own pool, which cannot be closed; "
                             "close pools made by cudaload.MemoryPool()")
        self._finalizer()

    def _attribute(self, constant: str, ctype: str, value: int | None = None) -> int:
        pool = self.handle
        drv = driver.init()
        attr = drv.ffi.integer_const(constant)
        box = drv.ffi.new(f"{ctype} *", value or 0)
        if value is None:
            driver.check(drv.cuMemPoolGetAttribute(pool, attr, box), "cuMemPoolGetAttribute")
        else:
            driver.check(drv.cuMemPoolSetAttribute(pool, attr, box), "cuMemPoolSetAttribute")
        return int(box[0])
