"""Memory pools of the program's own, allocations from them, managed memory advice and the range
attributes without a GPU: the pool-logging recording driver (tests/_fake_pools.py) shows the
exact driver calls, their enum values, locations and sizes.  What a device does with them is
checked by tests/gpu/test_pools_gpu.py."""

from __future__ import annotations

from tests._fake_pools import cuda_12_0_pool_driver, pool_driver  # noqa: F401  (fixtures)
from tests._support import scenario_json


def run(driver: str, scenario: str) -> dict:
    return scenario_json("recorded_pools", scenario, env={"CUDALOAD_LIBCUDA": driver})


def test_a_pool_is_made_with_its_options_allocated_from_trimmed_and_destroyed_once(pool_driver):
    out = run(pool_driver, "pool_made")
    assert out["calls"] == [
        # pinned (1), no export handles (0), on device 1 (location type 1), 4 GiB at most; the
        # reserved bytes zero, as the driver wants
        f"cuMemPoolCreate b000 alloc=1 handles=0 location=1:1 max={1 << 32} usage=0 win32=0 "
        "reserved=0",
        f"cuMemPoolSetAttribute b000 4 {1 << 30}",  # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
        "cuMemPoolGetAttribute b000 4",
        "cuMemAllocFromPoolAsync 1000 b000 0x5000",
        "cuMemPoolGetAttribute b000 7", "cuMemPoolGetAttribute b000 5",  # used, reserved
        "cuMemAllocFromPoolAsync 24 b000 0x5000",
        f"cuMemFreeAsync {0x900000400:x} 0x5000",  # garbage: freed on its stream
        "cuMemFreeAsync 900000000 0x5000",
        "cuMemPoolTrimTo b000 16",
        "cuMemPoolGetAttribute b000 7", "cuMemPoolGetAttribute b000 5",
        "cuMemPoolGetAttribute b000 8", "cuMemPoolGetAttribute b000 6",  # the high-water marks
        "cuMemPoolSetAttribute b000 6 0", "cuMemPoolSetAttribute b000 8 0",  # reset: 0 each
        "cuMemPoolGetAttribute b000 8", "cuMemPoolGetAttribute b000 6",
        "cuMemPoolGetAttribute b000 1", "cuMemPoolGetAttribute b000 2",  # the reuse policies
        "cuMemPoolGetAttribute b000 3",
        "cuMemPoolSetAttribute b000 2 0", "cuMemPoolGetAttribute b000 2",
        "cuMemPoolDestroy b000",  # once, though closed twice
    ]
    assert out["threshold"] == 1 << 30 and out["device"] == 1
    assert out["buffer"] == [0x900000000, 1, "DeviceBuffer"]
    assert (out["used"], out["reserved"]) == (1000, 1000)
    # freed: nothing used; trimmed to 16 bytes kept; the high-water marks remember until reset
    assert out["after_trim"] == [0, 16, 1024, 1024]
    assert out["after_reset"] == [0, 16]
    assert out["policies"] == [True, True, True] and out["opportunistic"] is False
    assert out["repr"] == "<cudaload.MemoryPool on device 1>"
    assert out["closed_repr"] == "<cudaload.MemoryPool on device 1, closed>"
    for key in ("closed_use", "closed_alloc"):
        assert out[key].startswith("ValueError") and "closed" in out[key]


def test_a_pool_no_longer_referenced_is_destroyed(pool_driver):
    out = run(pool_driver, "pool_collected")
    assert out["calls"] == [
        "cuMemPoolCreate b000 alloc=1 handles=0 location=1:0 max=0 usage=0 win32=0 reserved=0",
        "cuMemPoolDestroy b000",
    ]


def test_alloc_draws_from_the_device_s_current_pool_when_given_it(pool_driver):
    out = run(pool_driver, "pool_current")
    assert out["calls"] == ["cuDeviceGetMemPool 0", "cuMemAllocFromPoolAsync 64 a000 0x5000",
                            "cuMemFreeAsync 900000000 0x5000"]


def test_bad_pool_arguments_are_refused_before_the_driver(pool_driver):
    out = run(pool_driver, "pool_refused")
    assert out.pop("driver_calls") == 0
    assert out.pop("current_repr") == "<cudaload.MemoryPool of device 0>"
    kinds = {"float_device": "TypeError", "no_device": "ValueError", "negative_max": "ValueError",
             "huge_max": "ValueError", "text_threshold": "TypeError", "no_stream": "ValueError",
             "not_a_pool": "TypeError", "other_device": "ValueError",
             "negative_trim": "ValueError", "float_trim": "TypeError",
             "set_used": "AttributeError", "set_high": "AttributeError",
             "int_policy": "TypeError", "negative_threshold": "ValueError",
             "close_current": "ValueError", "pickle": "NotPicklableError",
             "copy": "NotPicklableError"}
    assert {name: text.split(":")[0] for name, text in out.items()} == kinds
    assert "2**64-1" in out["huge_max"] and "max_size" in out["huge_max"]
    assert "stream=s" in out["no_stream"]
    assert "device 0's" in out["other_device"]
    assert "reset_high()" in out["set_high"]
    assert "make a MemoryPool with them" in out["pickle"]


def test_advice_reaches_the_driver_with_its_enum_and_location_and_reads_back(pool_driver):
    out = run(pool_driver, "advice")
    assert out["start"] == [False, None, [], None]
    assert out["set"] == [True, 1, [0, "cpu"]]
    assert out["preferred_cpu"] == "cpu"
    assert out["unset"] == [False, None, ["cpu"]]
    assert (out["prefetched"], out["prefetched_cpu"]) == (1, "cpu")
    advised = [c for c in out["calls"] if c.startswith("cuMemAdvise_v2")]
    # CUmem_advise 1..6 (set/unset read-mostly, preferred location, accessed by), then the
    # location by value: type 1 a device and its ordinal (the buffer's, 0, by default), 2 the host
    assert advised == [f"cuMemAdvise_v2 600000000 4096 {advice} {where}" for advice, where in (
        (1, "1:0"), (3, "1:1"), (5, "1:0"), (5, "2:0"), (3, "2:0"), (2, "1:0"), (4, "1:0"),
        (6, "1:0"))]
    ranges = {c for c in out["calls"] if c.startswith("cuMemRangeGetAttribute")}
    # the legacy attributes 1..4, one int each; accessed-by one per device and the host (12 bytes)
    assert ranges == {"cuMemRangeGetAttribute 1 4 600000000 4096",
                      "cuMemRangeGetAttribute 2 4 600000000 4096",
                      "cuMemRangeGetAttribute 3 12 600000000 4096",
                      "cuMemRangeGetAttribute 4 4 600000000 4096"}


def test_bad_advice_is_refused_before_the_driver(pool_driver):
    out = run(pool_driver, "advice_refused")
    assert out.pop("driver_calls") == 0
    kinds = {"unknown": "ValueError", "not_text": "TypeError", "read_mostly_device": "ValueError",
             "unset_preferred_device": "ValueError", "int_unset": "TypeError",
             "float_device": "ValueError", "no_device": "ValueError", "gpu_text": "ValueError",
             "freed": "ValueError", "freed_read": "ValueError"}
    assert {name: text.split(":")[0] for name, text in out.items()} == kinds
    assert "'accessed_by'" in out["unknown"]
    assert "leave device out" in out["read_mostly_device"]
    assert "'cpu'" in out["gpu_text"]


def test_a_driver_before_12_2_is_told_the_release_advice_and_a_maximum_pool_size_need(
        cuda_12_0_pool_driver):
    out = run(cuda_12_0_pool_driver, "pool_old_driver")
    assert out["advise_kinds"] == ["MissingSymbolError", True, "cuMemAdvise_v2"]
    assert "CUDA 12.2 or newer" in out["advise"] and "(CUDA 12.0)" in out["advise"]
    assert out["max_size"].startswith("DriverError") and "CUDA 12.2 or newer" in out["max_size"]
    assert out["read_back"] is False
    # the refused maximum size reached no driver call; a pool without one is made as before
    assert out["calls"] == [
        "cuMemPoolCreate b000 alloc=1 handles=0 location=1:0 max=0 usage=0 win32=0 reserved=0",
        "cuMemPoolDestroy b000", "cuMemAllocManaged 256 1",
        "cuMemRangeGetAttribute 1 4 600000000 256"]


def test_every_buffer_kind_says_where_it_is_accessible(pool_driver):
    out = run(pool_driver, "accessible")
    assert out == {"device": [True, False], "host": [True, True], "managed": [True, True],
                   "pool": [True, False]}
