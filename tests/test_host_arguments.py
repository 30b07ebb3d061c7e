"""Pinned, mapped and managed memory as kernel arguments without a GPU: what the recording driver
receives for a HostBuffer, a ManagedBuffer, an array inside cudaload.pin, and other libraries'
arrays over such memory, on the ordinary path and from the fast-path function; and the refusal
of host memory no kernel can reach.  tests/gpu/test_memory_kinds.py has kernels read and write
through those addresses."""

from __future__ import annotations

import pytest

from tests._fake_memory import memory_driver  # noqa: F401  (fixture)
from tests._support import scenario_json

pytest.importorskip("numpy")

MAPPED = 0x300000000  # where the memory driver maps the first range registered, the next 16 MiB on
HOST_HINT = "it is host memory, but the kernel needs device memory: copy it with cudaload"


def _run(driver: str, scenario: str) -> dict:
    return scenario_json("recorded_host_arguments", scenario, env={"CUDALOAD_LIBCUDA": driver})


@pytest.fixture
def pointers(memory_driver):
    return _run(memory_driver, "pointers")


def _through_both_paths(out, first, second):
    assert out["ordinary"] == [first, first]
    assert out["fast_path"] == [first, second, first] and out["fast"], out


def test_a_host_buffer_passes_its_device_address_on_both_paths(pointers):
    ptr, other, host_ptr = pointers["h"]
    assert ptr != host_ptr  # the driver's mapping, not the host address
    _through_both_paths(pointers["host_buffer"], ptr, other)


def test_a_host_buffer_passes_on_any_device_and_is_refused_once_freed(pointers):
    assert pointers["other_device"] == pointers["h"][0]
    assert "was freed (HostBuffer.free())" in pointers["freed"]


def test_a_managed_buffer_passes_its_address_on_both_paths(memory_driver):
    out = _run(memory_driver, "managed")
    _through_both_paths(out["managed"], *out["m"])


def test_an_array_pinned_for_a_block_passes_its_mapped_address_there_only(pointers):
    _through_both_paths(pointers["pinned_array"], MAPPED, MAPPED + 0x1000000)
    _through_both_paths(pointers["pinned_bytes"], MAPPED, MAPPED + 0x1000000)
    assert HOST_HINT in pointers["unpinned_array"] and HOST_HINT in pointers["unpinned_bytes"]


def test_other_arrays_over_pinned_memory_pass_its_device_address(pointers):
    ptr, other, _host_ptr = pointers["h"]
    _through_both_paths(pointers["interface"], ptr, other)  # __cuda_array_interface__
    _through_both_paths(pointers["dlpack"], ptr, other)  # DLPack's kDLCUDAHost
    _through_both_paths(pointers["numpy_view"], ptr + 16, other)  # host addresses, mapped


def test_host_memory_no_kernel_can_reach_is_refused_on_both_paths(memory_driver):
    out = _run(memory_driver, "refusals")
    for key in ("first", "bytes", "memoryview", "fast_path"):
        assert out[key] and HOST_HINT in out[key], key
        assert "argument 0 (float* x)" in out[key], key
    assert out["installed"]
