"""DeviceBuffer.__dlpack__ without a GPU: capsules made over the recording driver's fake device
pointers, read back with cffi, consumed (renamed, deleter called) as PyTorch and CuPy do, and
NumPy consuming host copies for real.  tests/gpu/test_dlpack.py has PyTorch and CuPy view
device memory."""

from __future__ import annotations

import pytest

from cudaload.bindings._dlpack_ffi import ffi
from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import run_scenario, scenario_json


def run(recording_driver, scenario: str) -> dict:
    return scenario_json("recorded_dlpack", scenario, env={"CUDALOAD_LIBCUDA": recording_driver})


def test_the_structures_have_the_layout_dlpack_specifies():
    # Offsets and sizes from DLPack's dlpack.h on LP64 platforms: a wrong field in headers/dlpack.h
    # would shift them (and every consumer would read garbage).
    assert ffi.sizeof("DLDevice") == 8 and ffi.sizeof("DLDataType") == 4
    assert [ffi.offsetof("DLTensor", f) for f in (
        "data", "device", "ndim", "dtype", "shape", "strides", "byte_offset")] == [
        0, 8, 16, 20, 24, 32, 40]
    assert ffi.sizeof("DLTensor") == 48 and ffi.sizeof("DLManagedTensor") == 64
    assert [ffi.offsetof("DLManagedTensor", f) for f in ("dl_tensor", "manager_ctx", "deleter")] \
        == [0, 48, 56]
    assert [ffi.offsetof("DLManagedTensorVersioned", f) for f in (
        "version", "manager_ctx", "deleter", "flags", "dl_tensor")] == [0, 8, 16, 24, 32]
    assert (ffi.integer_const("kDLCPU"), ffi.integer_const("kDLCUDA"),
            ffi.integer_const("kDLCUDAManaged"), ffi.integer_const("kDLUInt")) == (1, 2, 13, 1)
    assert ffi.integer_const("DLPACK_FLAG_BITMASK_IS_COPIED") == 2


def test_capsules_describe_the_buffer_as_uint8_bytes(recording_driver):
    out = run(recording_driver, "capsule_fields")
    common = {"data": out["ptr"], "device": [2, 0], "ndim": 1, "dtype": [1, 8, 1], "shape": 64,
              "strides": 1, "byte_offset": 0, "deleter": True}
    assert out["legacy"] == {"name": "dltensor", **common}
    assert out["old_consumer"] == out["legacy"]  # max_version (0, 8): the DLPack 0.x capsule
    assert out["versioned"] == {"name": "dltensor_versioned", **common, "version": [1, 0],
                                "flags": 0}
    assert out["device"] == [2, 0] and out["other_device"] == [2, 1]
    assert out["other"]["device"] == [2, 1] and out["other"]["shape"] == 16
    assert out["empty"] == 0


def test_an_export_keeps_its_buffer_until_the_consumer_or_nobody_holds_it(recording_driver):
    out = run(recording_driver, "lifetime")
    assert out["alive_while_exported"] and out["alive_after_capsule_consumed"]
    assert out["dead_after_deleter"] and out["freed_once"] == 1
    assert out["unconsumed_alive_while_held"] and out["unconsumed_released"]
    assert out["freed_twice"] == 2
    assert out["released_from_a_thread"] and out["freed_thrice"] == 3
    assert out["exports_left"] == 0


def test_free_of_a_viewed_buffer_waits_for_the_last_view(recording_driver):
    out = run(recording_driver, "free_while_viewed")
    assert out["ptr_after_free"] == 0 and out["freed_while_viewed"] == 0
    assert out["export_after_free"][0] == "ValueError" and "freed" in out["export_after_free"][2]
    assert out["freed_after_last_view"] == 1 and out["freed_unviewed"] == 2


def test_a_consumer_stream_other_than_the_legacy_one_waits_for_it(recording_driver):
    out = run(recording_driver, "streams")
    # [waits so far, the stream that waited, the stream the event was recorded on (0: legacy)]
    assert out["start"] == out["none"] == out["legacy"] == out["no_sync"] == [0, 0, 0]
    assert out["per_thread"] == [1, 2, 0]  # CU_STREAM_PER_THREAD is the handle 2
    count, waited, recorded, ptr = out["own_stream"]
    assert (count, waited, recorded) == (2, ptr, 0)
    assert out["zero"][0] == "ValueError" and "legacy default stream" in out["zero"][2]
    assert out["negative"][0] == "ValueError"
    assert out["bool"][0] == out["float"][0] == out["str"][0] == "TypeError"


def test_copies_to_the_device_and_the_host_and_refusals(recording_driver):
    out = run(recording_driver, "copies")
    copy = out["device_copy"]
    assert copy["data"] != out["ptr"] and copy["flags"] == 2 and copy["device"] == [2, 0]
    assert out["copied"] == [copy["data"], out["ptr"], 64]
    host = out["host_copy"]
    assert host["device"] == [1, 0] and host["flags"] == 2 and host["shape"] == 64
    assert out["host_bytes"] == "abababab"  # what the recording driver's DtoH copy writes
    assert out["same_device"] == out["ptr"]
    for name in ("host_without_copy", "other_gpu", "opencl"):
        kind, is_buffer_error, message = out[name]
        assert (kind, is_buffer_error) == ("DLPackError", True) and "Next step" in message, name
    assert "CUDA device 0" in out["other_gpu"][2]
    assert [out[n][0] for n in ("bad_device", "bad_version", "bad_copy")] == ["TypeError"] * 3


def _numpy_with_device() -> None:
    np = pytest.importorskip("numpy")
    if tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 1):
        pytest.skip("numpy.from_dlpack(device=...) needs NumPy 2.1")


def test_numpy_consumes_host_copies_and_refuses_device_memory_cleanly(recording_driver):
    _numpy_with_device()
    out = run(recording_driver, "numpy_consumes")
    assert out["host"] == ["|u1", [64], "abababab", True]
    assert out["held"] == 1 and out["after_release"] == 0  # NumPy called the deleter
    assert out["legacy"] == [64, 0xab]
    # NumPy's own refusal reaches the caller (a capsule destructor would have replaced it).
    kind, _is_buffer_error, message = out["refused"]
    assert kind in ("BufferError", "RuntimeError") and "device" in message.lower()
    assert out["left"] == 0  # the refused capsule was released


def test_a_dlpack_only_object_passes_its_pointer_to_a_kernel(recording_driver):
    out = run(recording_driver, "kernel_argument")
    assert out["passed"] == out["ptr"] and out["left"] == 0


def test_views_alive_at_exit_are_let_go_quietly(recording_driver):
    _numpy_with_device()
    proc = run_scenario("recorded_dlpack", "view_at_exit",
                        env={"CUDALOAD_LIBCUDA": recording_driver})
    assert proc.stdout.strip().endswith('{"kept": 3}') and proc.stderr == ""
