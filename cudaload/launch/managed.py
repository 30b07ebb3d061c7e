"""Managed (unified) memory: ``alloc_managed`` and ``ManagedBuffer``, one address valid on the host
and every device, migrated on demand or ahead of use by :meth:`ManagedBuffer.prefetch`, placed by
the advice :meth:`ManagedBuffer.advise` gives the driver, which the range attributes read back.
"""

from __future__ import annotations

import weakref

from ..bindings import driver
from ._sizes import allocation_size
from .device import Device, activate, as_device, visible_devices
from ._foreign import stream_handle as handle_of
from .memory import DeviceBuffer, _free

__all__ = ["alloc_managed", "ManagedBuffer"]

_ATTACH_GLOBAL = 0x1  # CU_MEM_ATTACH_GLOBAL: any stream of any device may use it
# CU_DEVICE_CPU and CU_DEVICE_INVALID: how the range attributes name the host, and no place at all
_CPU, _NOWHERE = -1, -2
# advice by name: its CUmem_advise (set, unset), and whether it applies to one place (a location)
_ADVICE = {"read_mostly": ("CU_MEM_ADVISE_SET_READ_MOSTLY", "CU_MEM_ADVISE_UNSET_READ_MOSTLY"),
           "preferred_location": ("CU_MEM_ADVISE_SET_PREFERRED_LOCATION",
                                  "CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION"),
           "accessed_by": ("CU_MEM_ADVISE_SET_ACCESSED_BY", "CU_MEM_ADVISE_UNSET_ACCESSED_BY")}


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

    @property
    def is_host_accessible(self) -> bool:
        """True: the host reads and writes managed memory at ``.ptr`` itself."""
        return True

    def export_ipc(self):
        """Refused: CUDA IPC shares memory of ``cudaload.alloc`` only.  Raises TypeError saying
        what to share instead."""
        raise TypeError("managed memory cannot be shared through CUDA IPC; allocate the memory "
                        "to share with cudaload.alloc(nbytes) and export that")

    def prefetch(self, device=None, stream=None) -> ManagedBuffer:
        """Migrate the pages to ``device`` (a Device or ordinal; ``"cpu"`` for the host; default:
        this buffer's) in ``stream`` order (default: the legacy stream).  Raises ValueError once
        freed or for a bad device, DriverError where the device cannot prefetch (no concurrent
        managed access)."""
        drv = self._live()
        where = _location(drv, device, self.device)
        driver.check(drv.cuMemPrefetchAsync_v2(self.ptr, self.nbytes, where[0], 0,
                                               handle_of(stream)),
                     f"cuMemPrefetchAsync (to {'the host' if device == 'cpu' else where.id})")
        return self

    def advise(self, advice: str, device=None, *, unset: bool = False) -> ManagedBuffer:
        """Tell the driver how the memory is used (``cuMemAdvise_v2``): ``"read_mostly"`` (read
        copies on each device that reads it), ``"preferred_location"`` (its pages stay on
        ``device``), ``"accessed_by"`` (``device`` maps it, taking no faults); ``unset=True``
        takes the advice back.  ``device``: a Device or ordinal, ``"cpu"`` for the host (default:
        this buffer's); read-mostly advice and unsetting the preferred location take none.
        Raises TypeError/ValueError for a bad advice, ``unset``, ``device`` or a freed buffer
        (before the driver is called), MissingSymbolError on a driver before CUDA 12.2,
        DriverError where the device refuses."""
        if not isinstance(advice, str):
            raise TypeError(f"advice must be a string ({', '.join(map(repr, _ADVICE))}), "
                            f"not {advice!r}")
        if advice not in _ADVICE:
            raise ValueError(f"advice must be one of {', '.join(map(repr, _ADVICE))}, "
                             f"not {advice!r}")
        if type(unset) is not bool:
            raise TypeError(f"unset must be True or False, not {unset!r}")
        if device is not None and (advice == "read_mostly" or advice == "preferred_location" and unset):
            raise ValueError(f"{'unsetting ' if unset else ''}{advice!r} advice takes no device: "
                             "the driver applies it wherever the memory is; leave device out")
        drv = self._live()
        where = _location(drv, device, self.device)
        code = drv.ffi.integer_const(_ADVICE[advice][unset])
        driver.check(drv.cuMemAdvise_v2(self.ptr, self.nbytes, code, where[0]),
                     f"cuMemAdvise ({'unset ' if unset else ''}{advice})")
        return self

    @property
    def read_mostly(self) -> bool:
        """Whether read-mostly advice is set on all of the memory
        (``CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY``).  Raises ValueError once freed, DriverError."""
        return bool(self._range("CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY", 1)[0])

    @property
    def preferred_location(self) -> int | str | None:
        """The preferred location of all of the memory: a device ordinal, ``"cpu"``, or None
        (none set, or not the same for every page).  Raises ValueError once freed, DriverError."""
        return _place(self._range("CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION", 1)[0])

    @property
    def accessed_by(self) -> tuple[int | str, ...]:
        """The places accessed-by advice is set for (device ordinals, ``"cpu"``).  Raises
        ValueError once freed, DriverError."""
        places = self._range("CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY", visible_devices() + 1)
        return tuple("cpu" if v == _CPU else v for v in places if v != _NOWHERE)

    @property
    def last_prefetch_location(self) -> int | str | None:
        """Where all of the memory was last prefetched to: a device ordinal, ``"cpu"``, or None
        (never, or not the same place for every page).  Raises ValueError once freed,
        DriverError."""
        return _place(self._range("CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION", 1)[0])

    def _range(self, attribute: str, count: int) -> list[int]:
        """``count`` ints of the range attribute named ``attribute`` (``cuMemRangeGetAttribute``)."""
        drv = self._live()
        out = drv.ffi.new("int[]", count)
        driver.check(drv.cuMemRangeGetAttribute(out, 4 * count, drv.ffi.integer_const(attribute),
                                                self.ptr, self.nbytes),
                     f"cuMemRangeGetAttribute ({attribute})")
        return list(out)


def _location(drv, device, default: Device):
    """A ``CUmemLocation *`` for ``device``: a Device or ordinal, ``"cpu"`` for the host, None
    for ``default``.  Raises ValueError for another string or an ordinal that is no device."""
    where = drv.ffi.new("CUmemLocation *")
    if isinstance(device, str):
        if device != "cpu":
            raise ValueError(f"device must be a Device, an ordinal or 'cpu' (the host), "
                             f"not {device!r}")
        where.type, where.id = drv.ffi.integer_const("CU_MEM_LOCATION_TYPE_HOST"), 0
    else:
        where.type = drv.ffi.integer_const("CU_MEM_LOCATION_TYPE_DEVICE")
        where.id = (default if device is None else
                    device if isinstance(device, Device) else Device(device)).ordinal
    return where


def _place(value: int) -> int | str | None:
    """A range attribute's location as cudaload names it: an ordinal, ``"cpu"``, None."""
    return "cpu" if value == _CPU else None if value == _NOWHERE else value
