"""Occupancy beyond one block size (a block-size limit, shared memory as a function of the block
size, dynamic shared memory left, clusters) and the settable kernel attributes, against the
recording driver: the exact queries and what comes back."""

from __future__ import annotations

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def run(recording_driver, scenario: str) -> dict:
    return scenario_json("recorded_occupancy", scenario,
                         env={"CUDALOAD_LIBCUDA": recording_driver})


def test_max_potential_block_size_with_a_limit_and_a_shared_memory_function(recording_driver):
    out = run(recording_driver, "queries")
    assert out["plain"] == [264, 768]  # (min grid, block) as the driver says
    assert out["limited"] == [528, 480]  # the limit of 500 reached the driver
    assert out["plain_query"][2:] == [0, 500, False]
    # the function is the driver's callback: asked for 768 threads, 96 KiB, so 256 threads
    assert out["by_function"] == [1056, 256] and out["asked"] == [768]
    assert out["function_query"][2:] == [768 * 128, 0, True]
    assert out["function_raises"][0] == "ZeroDivisionError"  # raised after the driver returned
    assert out["function_float"][0] == "TypeError"
    assert out["negative_limit"][0] == "ValueError"


def test_available_dynamic_shared_memory_and_clusters(recording_driver):
    out = run(recording_driver, "queries")
    assert out["available"] == [233472 - 1024, 233472 // 4 - 1024]
    assert out["available_zero"][0] == "ValueError"
    assert out["clusters"] == [132, 66]  # the cluster dimensions reached the driver
    assert out["cluster_size"] == 8 and out["cluster_size_non_portable"] == 16


def test_cluster_and_carveout_attributes_read_and_the_settable_ones_set(recording_driver):
    out = run(recording_driver, "attributes")
    assert out["read"] == {"cache_mode_ca": 0, "cluster_size_must_be_set": 0,
                           "preferred_shared_memory_carveout": -1, "required_cluster_width": 0,
                           "required_cluster_height": 0, "required_cluster_depth": 0,
                           "non_portable_cluster_size_allowed": 0,
                           "cluster_scheduling_policy_preference": 0}
    assert out["set_call"] == [11, 2]  # CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2
    assert out["read_back"] == [50, 2]  # read again, not a kept value
    kind, message = out["refused"]
    assert kind == "DriverError" and "preferred_shared_memory_carveout=101" in message
    assert out["float"][0] == "TypeError" and out["read_only"][0] == "AttributeError"


def test_more_shared_memory_is_enabled_once_per_device_for_every_thread(recording_driver):
    # cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = 8) when a launch asks for more than the
    # function allows so far: a second thread asking for less sets nothing.
    out = run(recording_driver, "shared_memory_opt_in")
    assert out["raised"] == [8, 100_000]
    assert out["other_thread_below"] == [8, 100_000]
    assert out["raised_again"] == [8, 120_000] and out["launched_with"] == 120_000
    kind, message = out["beyond_the_device"]
    assert kind == "ValueError" and "232448 bytes of shared memory per block" in message
