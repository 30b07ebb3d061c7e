"""CUDA IPC handles, and how buffers and events make them: ``MemoryHandle`` and ``EventHandle``
(picklable: the driver's 64 bytes, the GPU's UUID, the process that made them), ``export_memory``
and ``export_event``.  Opening them is ``ipc.import_ipc``'s.

A handle names its GPU by UUID, not by ordinal: ``CUDA_VISIBLE_DEVICES`` may number the devices
of two processes differently.  It also names the process that made it, as the driver refuses to
open a handle in the process that exported it with an error that does not say so.
"""

from __future__ import annotations

import os

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from .device import activate

TYPE_CHECKING = False  # true for type checkers only: memory and stream import this module
if TYPE_CHECKING:
    from .memory import DeviceBuffer
    from .stream import Event

__all__ = ["MemoryHandle", "EventHandle", "export_memory", "export_event", "HANDLE_SIZE"]

_const = _cuda_ffi.integer_const
_IPC_CAPABLE = _const("CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE")
_RANGE_START = _const("CU_POINTER_ATTRIBUTE_RANGE_START_ADDR")
HANDLE_SIZE = 64  # CU_IPC_HANDLE_SIZE
# This process, beside its pid (which the system hands out again once a process ends).
_PROCESS = os.urandom(8).hex()


class _Handle:
    """What one process sends another: the driver's 64 bytes, the GPU's UUID, the process."""

    __slots__ = ("data", "device_uuid", "pid", "process")
    _FIELDS: tuple[str, ...] = ("data", "device_uuid", "pid", "process")

    def __init__(self, data: bytes, device_uuid: str, pid: int, process: str):
        if type(data) is not bytes or len(data) != HANDLE_SIZE:
            raise ValueError(f"a CUDA IPC handle is {HANDLE_SIZE} bytes, not {data!r:.40}")
        self.data, self.device_uuid, self.pid, self.process = data, device_uuid, pid, process

    def __reduce__(self):
        return type(self), tuple(getattr(self, f) for f in self._FIELDS)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.__reduce__() == other.__reduce__()

    def __hash__(self) -> int:
        return hash(self.__reduce__()[1])

    def _exported_here(self) -> bool:
        return self.pid == os.getpid() and self.process == _PROCESS


class MemoryHandle(_Handle):
    """A buffer's CUDA IPC handle: ``.nbytes``, ``.offset`` (from the base of the allocation the
    driver shares), ``.device_uuid``; pickles."""

    __slots__ = ("nbytes", "offset")
    _FIELDS = _Handle._FIELDS + ("nbytes", "offset")

    def __init__(self, data: bytes, device_uuid: str, pid: int, process: str, nbytes: int,
                 offset: int):
        super().__init__(data, device_uuid, pid, process)
        self.nbytes, self.offset = nbytes, offset

    def __repr__(self) -> str:
        return f"<cudaload.MemoryHandle {self.nbytes} bytes on GPU {self.device_uuid}>"


class EventHandle(_Handle):
    """An interprocess event's CUDA IPC handle: ``.device_uuid``; pickles."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<cudaload.EventHandle on GPU {self.device_uuid}>"


def export_memory(buf: DeviceBuffer) -> MemoryHandle:
    """``buf``'s handle (``cuIpcGetMemHandle``).  Raises TypeError for memory CUDA IPC cannot
    share (a stream-ordered allocation from a pool), ValueError once freed, DriverError."""
    drv = buf._live()
    _check_exportable(drv, buf)
    base = _pointer_attribute(drv, _RANGE_START, buf.ptr) or buf.ptr
    out = drv.ffi.new("CUipcMemHandle *")
    driver.check(drv.cuIpcGetMemHandle(out, base), "cuIpcGetMemHandle")
    return MemoryHandle(bytes(drv.ffi.buffer(out)), buf.device.uuid, os.getpid(), _PROCESS,
                        buf.nbytes, buf.ptr - base)


def _check_exportable(drv, buf: DeviceBuffer) -> None:
    if _pointer_attribute(drv, _IPC_CAPABLE, buf.ptr) == 0:
        raise TypeError("this memory cannot be shared through CUDA IPC: it comes from a memory "
                        "pool (cudaload.alloc(n, stream=s)) whose allocations have no IPC handle; "
                        "allocate the memory to share with cudaload.alloc(nbytes), without a "
                        "stream, and export that")


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
