"""Kernel.attributes and Kernel.occupancy without a GPU: the recording driver of tests/_fakelibs.py
answers cuFuncGetAttribute and the occupancy queries with fixed values and keeps their arguments.
On the GPU, tests/gpu/test_attributes.py compares the answers with CuPy's and cuda.bindings'."""

from __future__ import annotations

import pytest

from tests._fakelibs import RECORDING_DRIVER, build_shared_library, recording_driver  # noqa: F401
from tests._support import scenario_json


def run(recording_driver, scenario: str) -> dict:
    return scenario_json("recorded_attributes", scenario, env={"CUDALOAD_LIBCUDA": recording_driver})


def test_attributes_are_read_when_first_used_and_kept(recording_driver):
    out = run(recording_driver, "attributes")
    assert out["before"] == out["made"] == 0  # Kernel.attributes itself asks the driver nothing
    assert out["num_regs"] == out["num_regs_again"] == 40 and out["after_one"] == 1
    assert out["dict"] == {"max_threads_per_block": 768, "num_regs": 40, "shared_size_bytes": 1024,
                           "const_size_bytes": 256, "local_size_bytes": 16, "ptx_version": 90,
                           "binary_version": 90, "max_dynamic_shared_size_bytes": 48 * 1024}
    assert out["dynamic_reads"] == 1  # launches raise it, so it is read each time
    assert out["repr"].startswith("<KernelAttributes of k on device 0: num_regs=40")
    assert out["raw"] == [768, 90]  # a RawKernel compiles and loads on its first read
    assert out["pickled"] == ["NotPicklableError", "send the values (attrs.as_dict())"]
    assert out["occupancy_pickles"] == [128, 16]  # plain numbers


def test_occupancy_passes_block_and_shared_memory_and_derives_the_fraction(recording_driver):
    out = run(recording_driver, "occupancy")
    first = out["256"]
    assert (first["block"], first["active_blocks_per_multiprocessor"], first["occupancy"]) == (
        256, 8, 1.0)
    assert (first["suggested_block_size"], first["min_grid_size"]) == (768, 264)
    # [block, shared memory] of the active-blocks query; shared memory and block size limit of
    # the potential-block-size query, and no callback (the same shared memory for every size).
    assert first["query"] == [256, 0, 0, 0, False]
    assert out["16x16"]["query"][0] == 256 and out["list"]["block"] == 64
    # 100 threads take four whole warps: 16 blocks of 4 warps fill the 64.
    assert out["100"]["active_blocks_per_multiprocessor"] == 16 and out["100"]["occupancy"] == 1.0
    assert out["768"]["occupancy"] == 0.75  # 2 blocks of 24 warps
    assert out["smem"]["query"][:3] == [256, 32768, 32768] and out["smem"]["occupancy"] == 0.75
    assert out["smem"]["set"][0] == -1  # within the default 48 KiB: nothing to raise
    big = out["big_smem"]
    assert big["query"][:3] == [256, 100000, 100000]
    assert (big["active_blocks_per_multiprocessor"], big["suggested_block_size"]) == (2, 256)
    assert big["set"] == [8, 100000]  # MAX_DYNAMIC_SHARED_SIZE_BYTES raised, as a launch does
    assert out["repr"].startswith("Occupancy(block=256, shared_mem=0, active_blocks_per_")


@pytest.fixture(scope="module")
def refusals(tmp_path_factory) -> dict:
    """What each bad occupancy() call raised, from one process."""
    folder = str(tmp_path_factory.mktemp("recording"))
    return run(build_shared_library(folder, "libcuda_recording.so", RECORDING_DRIVER), "refusals")


@pytest.mark.parametrize("case, kind, words", [
    ("zero", "ValueError", "at least 1, not 0"),
    ("negative", "ValueError", "not -32"),
    ("too_many", "ValueError", "at most 768"),
    ("float", "TypeError", "not 2.5"),
    ("str", "TypeError", "not '256'"),
    ("bool", "TypeError", "not True"),
    ("four_dims", "ValueError", "one to three dimensions"),
    ("zero_dim", "ValueError", "not (32, 0)"),
    ("smem_negative", "ValueError", "shared_mem = -1 is out of range: it must be 0..2**32-1"),
    ("smem_float", "TypeError", "not 1.5"),
    ("smem_too_much", "ValueError", "ask for at most 231424"),
])
def test_bad_occupancy_input_is_refused_before_the_driver(refusals, case, kind, words):
    got_kind, message = refusals[case]
    assert got_kind == kind and words in message and message.startswith("k: ")
    assert refusals["last_query"] == [0, 0, 0, -1, False]  # no refused call reached the driver
