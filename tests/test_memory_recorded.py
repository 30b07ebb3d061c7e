"""Pinned and managed memory, stream-ordered allocation and 8/16/32-bit fills without a GPU: the memory-logging recording
driver (tests/_fake_memory.py) shows the exact driver calls and their arguments.  What the memory
holds on a device is checked by tests/gpu/test_memory_kinds.py."""

from __future__ import annotations

from tests._fake_memory import memory_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def run(memory_driver, scenario: str) -> dict:
    return scenario_json("recorded_memory", scenario, env={"CUDALOAD_LIBCUDA": memory_driver})


def test_fills_reach_the_driver_with_the_element_width_count_and_bits(memory_driver):
    out = run(memory_driver, "fills")
    ptr = f"{out['ptr']:x}"
    assert out["calls"] == [
        f"cuMemsetD16 {ptr} {0xBEEF} 32",
        f"cuMemsetD32 {ptr} {0xFFFFFFFF} 16",  # -1 as int32: all bits set
        f"cuMemsetD32 {ptr} {0x12345678} 16",
        f"cuMemsetD8Async {ptr} 7 64 stream",
        f"cuMemsetD16Async {ptr} {0xFFFE} 32 stream",
        f"cuMemsetD32Async {ptr} {0xCAFEF00D} 16 stream",
    ]


def test_fills_out_of_range_or_of_another_dtype_are_refused_before_the_driver(memory_driver):
    out = run(memory_driver, "fills")
    refused = out["refused"]
    assert refused["too_big"].startswith("ValueError") and "uint16" in refused["too_big"]
    assert refused["too_small"].startswith("ValueError")
    assert refused["negative_unsigned"].startswith("ValueError")
    assert refused["dtype"].startswith("ValueError") and "uint32" in refused["dtype"]
    assert refused["float"].startswith("TypeError")
    assert refused["odd_size"].startswith("ValueError") and "multiple of 4" in refused["odd_size"]
    assert out["after_refusals"] == 0


def test_pinned_memory_is_allocated_mapped_copied_from_and_freed_once(memory_driver):
    out = run(memory_driver, "pinned")
    assert out["calls"] == [
        "cuMemHostAlloc 300 3",  # portable | device-mapped
        "cuMemHostGetDevicePointer 0 0",
        f"cuMemcpyHtoDAsync {0x700000000:x} pinned 300",  # the copy reads the pinned memory itself
        "cuMemFreeHost 0",  # garbage: freed
        "cuMemHostAlloc 16 3",
        "cuMemHostGetDevicePointer 512 0",
        "cuMemFreeHost 512",  # freed once, though free() was called twice
    ]
    assert out["cai"] == 0x500000000 and out["len"] == 300 and out["first"] == "01020304"
    assert out["held"].startswith("BufferError") and "still alive" in out["held"]
    assert out["freed_use"].startswith("ValueError") and "alloc_host" in out["freed_use"]
    assert out["negative"].startswith("ValueError")
    assert "cannot be pickled" in out["pickle"]


def test_pinned_memory_whose_mapping_fails_is_freed_not_leaked(memory_driver):
    out = run(memory_driver, "pinned_unmapped")
    assert out["error"].startswith("DriverError")
    assert out["calls"] == ["cuMemHostAlloc 32 3", "cuMemHostGetDevicePointer failed",
                            "cuMemFreeHost 0"]


def test_pin_registers_an_array_for_its_block_only_and_refuses_what_it_cannot_pin(memory_driver):
    out = run(memory_driver, "pinned_array")
    assert out["calls"] == ["cuMemHostRegister 256 1", "cuMemHostUnregister"]
    assert out["same"]
    assert out["read_only"].startswith("ValueError") and "writable" in out["read_only"]
    assert out["not_buffer"].startswith("TypeError")
    assert out["strided"].startswith("ValueError")


def test_managed_memory_is_allocated_global_and_prefetched_where_asked(memory_driver):
    out = run(memory_driver, "managed")
    assert out["calls"] == [
        "cuMemAllocManaged 4096 1",  # CU_MEM_ATTACH_GLOBAL
        # the 13.0 ABI: a location (type 1, the device; type 2, the host) passed by value
        "cuMemPrefetchAsync_v2 600000000 4096 1:0 0 legacy",
        "cuMemPrefetchAsync_v2 600000000 4096 1:1 0 stream",
        "cuMemPrefetchAsync_v2 600000000 4096 2:0 0 legacy",
    ]
    assert out["type"] == "ManagedBuffer" and out["is_device_buffer"]
    assert out["cai"] == 0x600000000
    assert out["freed_prefetch"].startswith("ValueError")
    assert out["stream_free"].startswith("ValueError") and "free()" in out["stream_free"]


def test_stream_ordered_allocations_are_freed_once_on_their_stream(memory_driver):
    out = run(memory_driver, "stream_ordered")
    # The recording driver's stream handles, as it gave them to the two streams.
    stream, other = out["calls"][0].split()[-1], out["calls"][4].split()[-1]
    assert stream != other
    assert out["calls"] == [
        f"cuMemAllocAsync 1000 {stream}",
        f"cuMemFreeAsync 800000000 {stream}",
        f"cuMemAllocAsync 24 {stream}",
        f"cuMemFreeAsync 800000000 {stream}",  # garbage, its stream dropped too: still valid
        f"cuMemAllocAsync 8 {other}",
        f"cuMemFreeAsync 800000000 {other}",  # freed on the stream it was allocated on
    ]
    assert out["ptr"] == 0x800000000
    assert out["freed_use"].startswith("ValueError") and "freed" in out["freed_use"]


def test_a_stream_ordered_allocation_freed_after_its_stream_closed_waits_for_that_work(memory_driver):
    out = run(memory_driver, "closed_stream")
    assert out["unraisable"] == []
    stream = out["calls"][0].split()[-1]
    # The closed stream's handle is used no more: the legacy default stream frees the memory,
    # after waiting for the event close() recorded on the stream.
    assert out["calls"] == [f"cuMemAllocAsync 64 {stream}", "cuMemFreeAsync 800000000 (nil)"]
    assert out["recorded"] == out["handle"] and out["waiting"] is None and out["waits"] == 1
