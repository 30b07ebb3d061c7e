"""Streams and events, including streams owned by other libraries (CuPy, PyTorch, raw handles).

Layer 3, launch: may import the foundation, bindings, compile and launch.
"""

from __future__ import annotations

import weakref

from ..bindings import driver
from .. import lifetime
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._foreign import stream_handle as handle_of, stream_pointer
from .device import Device, activate, as_device
from ._unpicklable import GpuState

TYPE_CHECKING = False  # true for type checkers only: graph imports this module
if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from .graph import Graph

__all__ = ["Stream", "Event", "handle_of"]

_const = _cuda_ffi.integer_const
_CU_STREAM_DEFAULT = _const("CU_STREAM_DEFAULT")
_CU_STREAM_NON_BLOCKING = _const("CU_STREAM_NON_BLOCKING")
_CU_EVENT_DEFAULT = _const("CU_EVENT_DEFAULT")
_CU_EVENT_DISABLE_TIMING = _const("CU_EVENT_DISABLE_TIMING")
_CU_EVENT_WAIT_DEFAULT = _const("CU_EVENT_WAIT_DEFAULT")
_CUDA_ERROR_NOT_READY = _const("CUDA_ERROR_NOT_READY")


def _destroyer(name: str):
    def destroy(handle, dev: Device) -> None:
        if not lifetime.forked():
            getattr(activate(dev), name)(handle)
    return destroy


class Stream(GpuState):
    """A CUDA stream: ``.handle`` (``CUstream``), ``.ptr`` (int), ``.device``; ``__cuda_stream__``.

    ``Stream()`` creates a non-blocking stream on the thread's device; ``Stream.from_handle``
    wraps one another library owns.  Raises :class:`DriverError`."""

    _finalizer: weakref.finalize | None
    _SEND_INSTEAD = "make a new cudaload.Stream() in the receiving process"

    def __init__(self, device=None, *, priority: int | None = None, non_blocking: bool = True):
        self.device = as_device(device)
        drv = activate(self.device, owning=True)
        out = drv.ffi.new("CUstream *")
        flags = _CU_STREAM_NON_BLOCKING if non_blocking else _CU_STREAM_DEFAULT
        if priority is None:
            driver.check(drv.cuStreamCreate(out, flags), "cuStreamCreate")
        else:
            driver.check(drv.cuStreamCreateWithPriority(out, flags, priority),
                         "cuStreamCreateWithPriority")
        self._set(out[0], None)
        self._finalizer = weakref.finalize(self, _destroyer("cuStreamDestroy_v2"), out[0],
                                           self.device)
        self._finalizer.atexit = False  # process exit destroys the context with its streams

    def _set(self, handle, owner) -> None:
        self.handle = handle
        self.ptr = int(driver.api().ffi.cast("uintptr_t", handle))
        self._owner = owner

    @classmethod
    def from_handle(cls, obj, device=None) -> Stream:
        """Wrap a foreign stream: ``__cuda_stream__``, CuPy (``.ptr``), PyTorch (``.cuda_stream``),
        or an int handle (0 is the legacy default stream).  Its device is the one a CuPy or
        PyTorch stream names, else ``device`` (default: the thread's).  Raises ``TypeError``."""
        if isinstance(obj, Stream):
            return obj
        ptr, index = stream_pointer(obj)
        if index is not None:
            device = index
        stream = cls.__new__(cls)
        stream.device = as_device(device)
        stream._set(driver.init().ffi.cast("CUstream", int(ptr)), obj)
        stream._finalizer = None
        return stream

    def __cuda_stream__(self):
        return (0, self.ptr)

    def __repr__(self) -> str:
        return f"<cudaload.Stream 0x{self.ptr:x} on device {self.device.ordinal}>"

    def synchronize(self) -> None:
        """Wait for the stream's work.  Raises :class:`DriverError` (a kernel's fault too)."""
        driver.check(activate(self.device).cuStreamSynchronize(self.handle), "cuStreamSynchronize")

    def wait(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        driver.check(activate(self.device).cuStreamWaitEvent(self.handle, event.handle,
                                                                _CU_EVENT_WAIT_DEFAULT),
                     "cuStreamWaitEvent")

    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (default: a new one) on this stream and return it."""
        event = event or Event(self.device)
        event.record(self)
        return event

    def capture(self, mode: str = "thread_local") -> AbstractContextManager[Graph]:
        """Context manager: launches on this stream are recorded into a :class:`Graph`."""
        from .graph import capture

        return capture(self, mode)


class Event(GpuState):
    """A CUDA event for ordering streams and timing.  Raises :class:`DriverError`."""

    _SEND_INSTEAD = "make a new cudaload.Event() in the receiving process"

    def __init__(self, device=None, *, timing: bool = True):
        self.device = as_device(device)
        drv = activate(self.device, owning=True)
        out = drv.ffi.new("CUevent *")
        driver.check(drv.cuEventCreate(
            out, _CU_EVENT_DEFAULT if timing else _CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
        self.handle = out[0]
        self._finalizer = weakref.finalize(self, _destroyer("cuEventDestroy_v2"), out[0],
                                           self.device)
        self._finalizer.atexit = False

    def record(self, stream=None) -> Event:
        """Record on ``stream`` (default: the legacy default stream)."""
        drv = activate(self.device)
        driver.check(drv.cuEventRecord(self.handle, handle_of(stream)), "cuEventRecord")
        return self

    def synchronize(self) -> None:
        """Wait until the event has happened."""
        driver.check(activate(self.device).cuEventSynchronize(self.handle), "cuEventSynchronize")

    def query(self) -> bool:
        """Whether the event has happened, without waiting."""
        rc = activate(self.device).cuEventQuery(self.handle)
        if rc == _CUDA_ERROR_NOT_READY:
            return False
        driver.check(rc, "cuEventQuery")
        return True

    def elapsed_ms(self, other: Event) -> float:
        """Milliseconds from this event to ``other`` (both recorded, ``other`` completed)."""
        drv = activate(self.device)
        out = drv.ffi.new("float *")
        driver.check(drv.cuEventElapsedTime_v2(out, self.handle, other.handle),
                     "cuEventElapsedTime")
        return out[0]
