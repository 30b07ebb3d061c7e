"""Streams and events, including streams owned by other libraries (CuPy, PyTorch, raw handles).
"""

from __future__ import annotations

import weakref

from ..bindings import driver
from . import _host_calls
from .._base import lifetime
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._foreign import stream_handle as handle_of, stream_pointer
from ._sizes import C_INT, bounded
from .device import Device, activate, as_device
from ._unpicklable import GpuState
from ._held_releases import held

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
_CU_EVENT_BLOCKING_SYNC = _const("CU_EVENT_BLOCKING_SYNC")
_CU_EVENT_INTERPROCESS = _const("CU_EVENT_INTERPROCESS")
_CU_EVENT_WAIT_DEFAULT = _const("CU_EVENT_WAIT_DEFAULT")
_CUDA_ERROR_NOT_READY = _const("CUDA_ERROR_NOT_READY")


def _destroyer(name: str):
    def destroy(handle, dev: Device) -> None:
        # held while a capture records: destroyed once it has ended
        if not lifetime.forked() and not held(destroy, handle, dev):
            getattr(activate(dev), name)(handle)
    return destroy


class Stream(GpuState):
    """A CUDA stream: ``.handle`` (``CUstream``), ``.ptr`` (int), ``.device``; ``__cuda_stream__``.

    ``Stream()`` creates a non-blocking stream on the thread's device; ``Stream.from_handle``
    wraps one another library owns.  Two Stream objects of the same handle are equal and hash
    alike.  Raises ``TypeError`` for a priority that is no integer, ``ValueError`` for one
    outside the device's range, :class:`DriverError`."""

    _finalizer: weakref.finalize | None
    _SEND_INSTEAD = "make a new cudaload.Stream() in the receiving process"

    def __init__(self, device=None, *, priority: int | None = None, non_blocking: bool = True,
                 nonblocking: bool | None = None):
        if nonblocking is not None:  # the spelling of the API contract; non_blocking came first
            non_blocking = nonblocking
        self.device = as_device(device)
        drv = activate(self.device, owning=True)
        out = drv.ffi.new("CUstream *")
        flags = _CU_STREAM_NON_BLOCKING if non_blocking else _CU_STREAM_DEFAULT
        if priority is None:
            driver.check(drv.cuStreamCreate(out, flags), "cuStreamCreate")
        else:
            priority = _check_priority(drv, priority, self.device)
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
        PyTorch stream names, else ``device`` (default: the thread's).  Raises ``TypeError``,
        ``ValueError`` for an int handle outside 0..2**64-1."""
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

    def __eq__(self, other) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        return self.ptr == other.ptr and self.device is other.device

    def __hash__(self) -> int:
        return hash((self.ptr, self.device.ordinal))

    @property
    def priority(self) -> int:
        """The stream's priority, as the driver reports it (lower numbers run first)."""
        drv = activate(self.device)
        out = drv.ffi.new("int *")
        driver.check(drv.cuStreamGetPriority(self.handle, out), "cuStreamGetPriority")
        return out[0]

    @property
    def is_nonblocking(self) -> bool:
        """Whether the stream runs concurrently with the legacy default stream."""
        drv = activate(self.device)
        out = drv.ffi.new("unsigned int *")
        driver.check(drv.cuStreamGetFlags(self.handle, out), "cuStreamGetFlags")
        return bool(out[0] & _CU_STREAM_NON_BLOCKING)

    def __cuda_stream__(self):
        return (0, self.ptr)

    def __repr__(self) -> str:
        return f"<cudaload.Stream 0x{self.ptr:x} on device {self.device.ordinal}>"

    def synchronize(self) -> None:
        """Wait for the stream's work.  Raises :class:`DriverError` (a kernel's fault too), and
        what a host function on this device raised since the last synchronising call."""
        driver.check(activate(self.device).cuStreamSynchronize(self.handle), "cuStreamSynchronize")
        _host_calls.raise_pending(self.device.ordinal)

    def launch_host_func(self, fn) -> None:
        """Call ``fn()`` in stream order, from a driver thread, once the work queued before it is
        done; ``fn`` must not call CUDA.  What it raises is raised by the next ``synchronize``
        of a stream, event or device of this device.  Raises ``TypeError``,
        :class:`DriverError`."""
        activate(self.device)
        _host_calls.launch(self, fn)

    def wait(self, event: Event | Stream) -> None:
        """Make later work on this stream wait for ``event``, or for the work queued so far on
        another stream.  Raises ``TypeError`` for anything else."""
        if isinstance(event, Stream):
            event = event.record(Event(event.device, timing=False))
        elif not isinstance(event, Event):
            raise TypeError(f"Stream.wait takes an Event or a Stream, not "
                            f"{type(event).__name__}; record an Event on the other work first")
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
        from .graph import capture  # deferred: only this path needs it

        return capture(self, mode)

    def close(self) -> None:
        """Destroy the stream now rather than when collected (one ``from_handle`` wrapped is let
        go of, never destroyed); a second call does nothing.  Work queued on it still runs.
        Raises ``RuntimeError`` while a capture records on it."""
        last_work = None
        if not lifetime.forked():
            activate(self.device)
            if _host_calls.capturing(self.handle):
                raise RuntimeError(f"{self!r} is being captured: close it after the capture "
                                   "block has ended")
            # Memory allocated in this stream's order and freed later must wait for the work
            # queued here so far, which the driver still runs once the handle is gone.
            last_work = self.record(Event(self.device, timing=False))
        if self._finalizer is not None:
            self._finalizer()  # cuStreamDestroy once; collection later runs nothing
        self._owner = None
        self.__class__ = _ClosedStream
        self._last_work = last_work
        # Kernels keep launch configurations naming this stream: those forget them, so that a
        # launch on it makes its configuration again, which a closed stream refuses.  Only
        # those: every other kernel's cached launch shape stays.
        for last in list(self.__dict__.pop("_launches", ())):
            last.forget_stream(self)


def launch_handle(stream, device: Device, name: str, last):
    """The ``CUstream`` of ``stream`` (anything ``Stream.from_handle`` takes) for a launch of the
    kernel ``name`` on ``device``, whose launch configuration ``last`` (the thread's
    _fast_path.LastLaunch of the kernel) caches: a cudaload Stream's ``close()`` makes it forget
    that (weakly held: it goes with its kernel or thread).  Raises ValueError for a stream of
    another device or a closed one, what ``from_handle`` raises."""
    wrapped = Stream.from_handle(stream, device.ordinal if not isinstance(stream, Stream) else None)
    if wrapped.device is not device:
        raise ValueError(f"{name}: the stream is on device {wrapped.device.ordinal} but "
                         f"device {device.ordinal} is current in this thread; call "
                         f"cudaload.Device({wrapped.device.ordinal}).set_current() first")
    handle = wrapped.handle  # a closed stream refuses it here
    if wrapped is stream:
        launches = stream.__dict__.get("_launches")
        if launches is None:
            launches = stream.__dict__["_launches"] = weakref.WeakSet()
        launches.add(last)
    return handle


def _closed(self):
    raise ValueError(f"the stream on device {self.device.ordinal} is closed: make a new "
                     "cudaload.Stream()")


class _ClosedStream(Stream):
    """What a Stream becomes once closed: every use refuses it with ValueError.  ``_last_work``
    is an Event recorded after the last work queued on it (None in a forked child): what is
    freed in its order after the close waits for that (memory.py's _free)."""

    handle = ptr = property(_closed)  # type: ignore[assignment]
    __cuda_stream__ = _closed  # type: ignore[assignment]

    def close(self) -> None:
        return

    def __eq__(self, other) -> bool:  # its handle may already be another stream's
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<cudaload.Stream (closed) on device {self.device.ordinal}>"


class Event(GpuState):
    """A CUDA event for ordering streams and timing.  ``timing``, ``blocking_sync`` and
    ``interprocess`` read back the flags it was made with: ``blocking_sync`` makes
    ``synchronize`` sleep until the event happens, instead of the default busy wait;
    ``interprocess`` lets :meth:`export_ipc` share it with another process (such an event does
    not time).  Raises ValueError for ``interprocess`` with ``timing=True``,
    :class:`DriverError`."""

    _SEND_INSTEAD = ("make a new cudaload.Event() in the receiving process, or share one made "
                     "with interprocess=True through its export_ipc()")

    def __init__(self, device=None, *, timing: bool | None = None, blocking_sync: bool = False,
                 interprocess: bool = False):
        if interprocess and timing:
            raise ValueError("an interprocess event cannot time (CUDA makes it with timing "
                             "disabled); leave timing out or pass timing=False")
        self.device = as_device(device)
        drv = activate(self.device, owning=True)
        out = drv.ffi.new("CUevent *")
        timing = not interprocess if timing is None else timing
        self.timing, self.blocking_sync = bool(timing), bool(blocking_sync)
        self.interprocess = bool(interprocess)
        flags = (0 if timing else _CU_EVENT_DISABLE_TIMING) | \
            (_CU_EVENT_BLOCKING_SYNC if blocking_sync else _CU_EVENT_DEFAULT) | \
            (_CU_EVENT_INTERPROCESS if interprocess else 0)
        driver.check(drv.cuEventCreate(out, flags), "cuEventCreate")
        self.handle = out[0]
        self._finalizer = weakref.finalize(self, _destroyer("cuEventDestroy_v2"), out[0],
                                           self.device)
        self._finalizer.atexit = False

    def export_ipc(self):
        """A picklable :class:`~cudaload.launch._ipc_handles.EventHandle` (``cuIpcGetEventHandle``) that
        ``cudaload.import_ipc`` opens in another process on the same GPU.  Raises ValueError
        for an event not made with ``interprocess=True``, DriverError."""
        from ._ipc_handles import export_event  # deferred: only this path needs it

        return export_event(self)

    def record(self, stream=None) -> Event:
        """Record on ``stream`` (default: the legacy default stream)."""
        drv = activate(self.device)
        driver.check(drv.cuEventRecord(self.handle, handle_of(stream)), "cuEventRecord")
        return self

    def synchronize(self) -> None:
        """Wait until the event has happened; raise what a host function raised before it."""
        driver.check(activate(self.device).cuEventSynchronize(self.handle), "cuEventSynchronize")
        _host_calls.raise_pending(self.device.ordinal)

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


def _check_priority(drv, priority, device: Device) -> int:
    """``priority`` as an int, refused outside the device's range, where the driver would clamp
    it silently.  Raises TypeError, ValueError."""
    priority = bounded(priority, "a stream priority", *C_INT)  # before asking the device
    least, greatest = drv.ffi.new("int *"), drv.ffi.new("int *")
    driver.check(drv.cuCtxGetStreamPriorityRange(least, greatest), "cuCtxGetStreamPriorityRange")
    if not greatest[0] <= priority <= least[0]:
        raise ValueError(f"stream priority {priority} is outside device {device.ordinal}'s range "
                         f"{greatest[0]} (highest) to {least[0]} (lowest); pick one in it")
    return priority
