"""Devices, streams and events against the recording driver: what each asks the driver and reads
back (``with Device``, uuid and PCI id, priority and flags, handle equality, event flags, waits)."""

from __future__ import annotations

import os

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import ROOT, scenario_json

LAUNCH = os.path.join(ROOT, "cudaload", "launch")


def run(recording_driver, scenario: str) -> dict:
    return scenario_json("recorded_streams", scenario, env={"CUDALOAD_LIBCUDA": recording_driver})


def test_with_device_makes_it_current_and_restores_the_previous(recording_driver):
    out = run(recording_driver, "devices")
    assert out["before"] == 0 and out["inside"] == [1, 1] and out["nested"] == 0
    assert out["after_nested"] == 1 and out["stream_device"] == 1
    assert out["after"] == 0 and out["after_raise"] == 0


def test_device_uuid_and_pci_bus_id_are_the_drivers(recording_driver):
    out = run(recording_driver, "devices")
    assert out["uuid"] == ["00010203-0405-0607-0809-0a0b0c0d0e0f",
                           "10111213-1415-1617-1819-1a1b1c1d1e1f"]
    assert out["pci"] == ["0000:19:00.0", "0000:2a:00.0"]


def test_stream_priority_and_flags_read_back_and_a_priority_out_of_range_is_refused(
        recording_driver):
    out = run(recording_driver, "streams")
    assert out["read"] == [-3, False, 0, True, False]
    for key, value in (("too_high", "-6"), ("too_low", "1")):
        kind, message = out[key]
        assert kind == "ValueError" and f"priority {value} is outside" in message
        assert "-5 (highest) to 0 (lowest)" in message
    assert out["float"][0] == "TypeError"


def test_streams_of_one_handle_are_equal_and_hash_alike(recording_driver):
    out = run(recording_driver, "streams")
    assert out["equal"] == [True, True, True, False, True, 2]
    assert out["other_device"] is False


def test_event_flags_read_back_and_a_stream_waits_for_another(recording_driver):
    out = run(recording_driver, "events_and_waits")
    assert out["default"] == [True, False, 0]
    assert out["blocking"] == [False, True, 1 | 2]  # CU_EVENT_BLOCKING_SYNC | DISABLE_TIMING
    assert out["stream_wait"] == [1, True, True, 2]  # a timing-free event recorded on the other
    kind, message = out["bad_wait"]
    assert kind == "TypeError" and "an Event or a Stream, not int" in message
    assert out["waits_after"] == 1  # the refused wait reached no driver call


def test_the_launch_layer_asks_the_driver_whether_a_stream_is_captured_in_one_place():
    # Stream.close, copy_batch and host functions act on one answer: _host_calls.capture_id and
    # capturing read cuStreamGetCaptureInfo (child graphs ask it for more: the graph, its nodes).
    asking = sorted(name for name in os.listdir(LAUNCH) if name.endswith(".py")
                    and "cuStreamIsCapturing" in open(os.path.join(LAUNCH, name)).read())
    assert asking == []
