"""HostBuffer.__dlpack__ without a GPU: pinned host memory exported as kDLCUDAHost over the
memory-logging recording driver, capsules read back with cffi and consumed as a consumer does,
and NumPy viewing the pinned bytes for real.  tests/gpu/test_pinned_dlpack.py has PyTorch and
CuPy import it."""

from __future__ import annotations

from tests._fake_memory import memory_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def run(memory_driver, scenario: str) -> dict:
    return scenario_json("recorded_pinned_dlpack", scenario,
                         env={"CUDALOAD_LIBCUDA": memory_driver})


def test_pinned_memory_is_exported_in_place_as_cuda_host_memory(memory_driver):
    out = run(memory_driver, "exports")
    common = {"data": out["host_ptr"], "ndim": 1, "dtype": [1, 8, 1], "shape": 64, "strides": 1,
              "byte_offset": 0, "deleter": True}
    assert out["device"] == [3, 0]  # kDLCUDAHost
    assert out["legacy"] == {"name": "dltensor", "device": [3, 0], **common}
    assert out["own_device"] == out["legacy"]
    assert out["versioned"] == {"name": "dltensor_versioned", "device": [3, 0], **common,
                                "version": [1, 0], "flags": 0}
    # asked for on the host: the same bytes (pinned memory is host memory), not a copy
    assert out["as_host"] == {**out["versioned"], "device": [1, 0]}


def test_a_copy_is_a_host_copy_and_other_devices_are_refused(memory_driver):
    out = run(memory_driver, "exports")
    copy = out["copy"]
    assert copy["device"] == [1, 0] and copy["data"] != out["host_ptr"]
    assert copy["flags"] == 2 and copy["shape"] == 64  # DLPACK_FLAG_BITMASK_IS_COPIED
    kind, is_buffer_error, text = out["other_device"]
    assert kind == "DLPackError" and is_buffer_error and "(3, 0)" in text
    assert out["bad_stream"][0] == "ValueError" and out["bad_copy"][0] == "TypeError"


def test_free_waits_for_no_view_and_a_freed_buffer_exports_nothing(memory_driver):
    out = run(memory_driver, "exports")
    kind, is_buffer_error, text = out["free_while_viewed"]
    assert kind == "BufferError" and is_buffer_error and "DLPack" in text
    assert out["freed"][0] == "ValueError" and "alloc_host" in out["freed"][2]


def test_numpy_views_pinned_memory_without_a_copy(memory_driver):
    out = run(memory_driver, "numpy_views")
    assert out["own"] == [out["host_ptr"], bytes(range(16)).hex()]
    address, first, dtype, shape = out["cpu"]
    assert address == out["host_ptr"] and first == 99  # written through the view
    assert (dtype, shape) == ("|u1", [16])
