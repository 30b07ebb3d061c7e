"""Peer access between two devices and copies from another device's buffer, on the recording
driver of tests/_fakelibs.py (two devices): the exact driver calls, that enabling twice is no
error, and the refusals made before the driver is asked."""

from __future__ import annotations

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def run(driver: str, scenario: str) -> dict:
    return scenario_json("recorded_peer", scenario, env={"CUDALOAD_LIBCUDA": driver})


def test_peer_access_is_asked_and_enabled_per_direction_and_enabling_again_is_no_error(
        recording_driver):
    out = run(recording_driver, "enable")
    assert out["identity"] == [True, True, True]
    assert out["can"] == [True, True, False]
    # a device and itself: False without asking the driver
    assert out["after_can"] == {"queries": 2, "calls": 0, "granted": []}
    # the second enable reached the driver, which answered ALREADY_ENABLED: no error, no grant
    assert out["after_twice"] == {"queries": 4, "calls": 2, "granted": [[0, 1]]}
    assert out["after_both"] == {"queries": 5, "calls": 3, "granted": [[0, 1], [1, 0]]}


def test_peer_access_refusals_are_typed_and_say_what_to_do(recording_driver):
    out = run(recording_driver, "enable")
    kind, message, _ = out["same"]
    assert kind == "ValueError" and "device 0 always reaches its own memory" in message
    (k2, m2, _), (k1, m1, _), (ks, ms, _) = out["bad"]
    assert k2 == "ValueError" and "no CUDA device 2" in m2
    assert k1 == "TypeError" and ks == "TypeError"
    # none of them reached cuDeviceCanAccessPeer or cuCtxEnablePeerAccess
    assert out["after_refusals"] == out["after_both"]
    kind, message, _ = out["refused"]
    assert kind == "DriverError"
    assert "device 1 cannot access device 0's memory" in message
    assert "answered 0); copy between the two devices instead" in message
    after = out["after_refused"]
    assert after["queries"] == out["after_both"]["queries"] + 1
    assert after["calls"] == out["after_both"]["calls"]  # cuCtxEnablePeerAccess never called
    kind, message, name = out["enable_refused"]
    assert kind == "DriverError" and name == "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"
    assert "cuCtxEnablePeerAccess failed" in message and "(device 1 -> device 0)" in message
    assert "; copy between the two devices instead" in message


def test_a_copy_from_another_devices_buffer_is_a_peer_copy_naming_both_contexts(
        recording_driver):
    out = run(recording_driver, "copy")
    sync, stream = out["sync"], out["stream"]
    assert sync == {"count": 1, "dst": out["dst"], "src": out["src"], "nbytes": 256,
                    "contexts": [1, 0], "stream": None}
    assert stream["count"] == 2 and stream["stream"] == out["stream_ptr"]
    assert stream["contexts"] == [1, 0] and stream["nbytes"] == 256
    # two buffers of one device: cuMemcpyDtoD, no peer copy
    n, dst, src, same, peer_copies = out["same_device"]
    assert (n, dst, src, peer_copies) == (256, out["dst"], same, 2)
