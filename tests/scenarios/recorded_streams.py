"""Devices, streams and events on the recording driver of tests/_fakelibs.py (two devices), one
fresh process each: what the driver is asked and what the objects read back.

    python -m tests.scenarios.recorded_streams SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.
"""

from __future__ import annotations

import json
import sys

from tests.scenarios.recorded_launches import fake


def raised(call) -> list | None:
    """[type name, message] of what ``call`` raised, or None; the scenarios' one way to report."""
    try:
        call()
    except Exception as err:  # noqa: BLE001 (the type is what the test checks)
        return [type(err).__name__, str(err)]
    return None


def devices() -> dict:
    import cudaload
    from cudaload.launch.device import current_device

    out = {"before": current_device().ordinal}
    with cudaload.Device(1) as dev:
        out["inside"] = [dev.ordinal, current_device().ordinal]
        with cudaload.Device(0):
            out["nested"] = current_device().ordinal
        out["after_nested"] = current_device().ordinal
        out["stream_device"] = cudaload.Stream().device.ordinal
    out["after"] = current_device().ordinal
    try:
        with cudaload.Device(1):
            raise KeyError("inside")
    except KeyError:
        out["after_raise"] = current_device().ordinal
    out["uuid"] = [cudaload.Device(i).uuid for i in (0, 1)]
    out["pci"] = [cudaload.Device(i).pci_bus_id for i in (0, 1)]
    return out


def streams() -> dict:
    import cudaload

    out = {}
    s = cudaload.Stream(priority=-3, non_blocking=False)
    t = cudaload.Stream()
    u = cudaload.Stream(priority=0, nonblocking=False)
    out["read"] = [s.priority, s.is_nonblocking, t.priority, t.is_nonblocking, u.is_nonblocking]
    out["too_high"] = raised(lambda: cudaload.Stream(priority=-6))
    out["too_low"] = raised(lambda: cudaload.Stream(priority=1))
    out["float"] = raised(lambda: cudaload.Stream(priority=-1.0))
    wrapped = cudaload.Stream.from_handle(s.handle)
    by_int = cudaload.Stream.from_handle(s.ptr)
    out["equal"] = [wrapped == s, by_int == s, hash(wrapped) == hash(s), s == t, s != t,
                    len({s, wrapped, by_int, t})]
    out["other_device"] = cudaload.Stream.from_handle(s.ptr, 1) == s
    return out


def events_and_waits() -> dict:
    import ctypes

    import cudaload

    fake().fake_event_flags.restype = ctypes.c_uint
    out = {}
    e = cudaload.Event()
    out["default"] = [e.timing, e.blocking_sync, fake().fake_event_flags()]
    e = cudaload.Event(timing=False, blocking_sync=True)
    out["blocking"] = [e.timing, e.blocking_sync, fake().fake_event_flags()]
    s, t = cudaload.Stream(), cudaload.Stream()
    s.wait(t)  # an event recorded on t, waited for on s
    stream, event, recorded = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    waits = fake().fake_waits(ctypes.byref(stream), ctypes.byref(event), ctypes.byref(recorded))
    out["stream_wait"] = [waits, stream.value == s.ptr, recorded.value == t.ptr,
                          fake().fake_event_flags()]
    out["bad_wait"] = raised(lambda: s.wait(42))
    out["waits_after"] = fake().fake_waits(ctypes.byref(stream), ctypes.byref(event),
                                           ctypes.byref(recorded))
    return out


SCENARIOS = {f.__name__: f for f in (devices, streams, events_and_waits)}

if __name__ == "__main__":
    import cudaload  # noqa: F401  (imported before the recording driver is opened, as by a user)

    fake()
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
