"""Python functions the driver calls in stream order (``cuLaunchHostFunc``), and what they raise.

The driver calls a C function pointer with a ``void *`` later, from a thread of its own.  One cffi
callback, made once, is that pointer; the ``void *`` is a cffi handle of the :class:`_Call`,
which :data:`_pending` keeps alive until the driver has called it (a captured one: as long as
its graph, which may replay it any number of times).  An exception cannot cross the driver: it is
kept per device and raised by the next synchronising call there (:func:`raise_pending`), never
lost and never printed instead.
"""

from __future__ import annotations

import _thread

from ..bindings import driver
from ..bindings._cuda_ffi import ffi

__all__ = ["launch", "capture_id", "capturing", "captured", "raise_pending"]

_ACTIVE = ffi.integer_const("CU_STREAM_CAPTURE_STATUS_ACTIVE")
_NONE = ffi.integer_const("CU_STREAM_CAPTURE_STATUS_NONE")
_lock = _thread.allocate_lock()
_pending: dict[int, _Call] = {}  # by id: each call until the driver has made it
_captures: dict[int, list[_Call]] = {}  # capture id -> calls captured into its graph
_errors: dict[int, list[BaseException]] = {}  # device ordinal -> what its calls raised, in order
_trampoline: list = []  # the C function pointer of _run, made on first use (a libffi closure)


class _Call:
    __slots__ = ("fn", "ordinal", "stream", "repeat", "handle")

    def __init__(self, fn, ordinal: int, stream: int, repeat: bool):
        self.fn, self.ordinal, self.stream, self.repeat = fn, ordinal, stream, repeat
        self.handle = ffi.new_handle(self)


def _run(user_data) -> None:
    call = ffi.from_handle(user_data)
    try:
        call.fn()
    except BaseException as exc:  # noqa: BLE001 (kept for the caller, whatever it is)
        exc.add_note(f"raised by the host function {call.fn!r} launched on stream "
                     f"0x{call.stream:x} of device {call.ordinal}")
        with _lock:
            _errors.setdefault(call.ordinal, []).append(exc)
    finally:
        if not call.repeat:
            with _lock:
                _pending.pop(id(call), None)


def launch(stream, fn) -> None:
    """Queue ``fn()`` on ``stream`` (a cudaload Stream, its device's context bound).  Raises
    ``TypeError`` for ``fn`` that is not callable, :class:`DriverError`."""
    if not callable(fn):
        raise TypeError(f"launch_host_func takes a function of no arguments, not "
                        f"{type(fn).__name__}")
    drv = driver.api()
    capture = capture_id(stream.handle)
    call = _Call(fn, stream.device.ordinal, stream.ptr, bool(capture))
    with _lock:
        if capture:
            _captures.setdefault(capture, []).append(call)
        else:
            _pending[id(call)] = call
    if not _trampoline:
        _trampoline.append(ffi.callback("CUhostFn", _run))
    rc = drv.cuLaunchHostFunc(stream.handle, _trampoline[0], call.handle)
    if rc:
        with _lock:
            if capture:
                _captures[capture].remove(call)
            else:
                _pending.pop(id(call), None)
        driver.check(rc, "cuLaunchHostFunc")


def capture_id(handle) -> int:
    """The id of the capture recording on the stream ``handle`` (its device's context bound), 0
    when none is.  A stream another joined into a capture (by waiting for an event recorded in
    it) has that capture's id, so its host functions become that graph's too."""
    status, ident = _capture_info(handle)
    return ident if status == _ACTIVE else 0


def capturing(handle) -> bool:
    """Whether the stream ``handle`` (its device's context bound) is in a capture: one records on
    it, or one was invalidated there and has not ended yet."""
    return _capture_info(handle)[0] != _NONE


def _capture_info(handle) -> tuple[int, int]:
    """(CUstreamCaptureStatus, capture id) of the stream ``handle``.  Raises DriverError."""
    status, ident = ffi.new("CUstreamCaptureStatus *"), ffi.new("cuuint64_t *")
    # Only the first two outputs: the driver's older entries behind this name take those alike.
    driver.check(driver.api().cuStreamGetCaptureInfo_v3(handle, status, ident, ffi.NULL,
                                                        ffi.NULL, ffi.NULL, ffi.NULL),
                 "cuStreamGetCaptureInfo")
    return status[0], int(ident[0])


def captured(capture: int) -> list:
    """The calls captured into the capture ``capture`` (see :func:`capture_id`), on its stream or
    the streams joined into it, which its graph must keep alive; forgotten here."""
    with _lock:
        return _captures.pop(capture, [])


def raise_pending(ordinal: int) -> None:
    """Raise the first exception a host function on device ``ordinal`` raised since the last
    call; a note names how many more there were."""
    if not _errors:  # the common case: one dict test
        return
    with _lock:
        errors = _errors.pop(ordinal, None)
    if errors:
        first = errors[0]
        if len(errors) > 1:
            first.add_note(f"{len(errors) - 1} more host functions raised after it: "
                           + ", ".join(map(repr, errors[1:])))
        raise first
