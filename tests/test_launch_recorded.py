"""The launch path without a GPU: a driver look-alike records what ``cuLaunchKernelEx`` receives.

Kernels are compiled by the real NVRTC and go through the real Module, Kernel and Packer; only the
driver underneath is a recording one (tests/_fakelibs.py), which reports the parameter layout the
test gives, as ``cuFuncGetParamInfo`` does for the compiled kernel.  What a launch computes is
checked on the GPU by tests/gpu/; here, that the right bytes and dimensions reach the driver.
"""

from __future__ import annotations

import os
import struct

import pytest

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import ROOT, scenario_json

pytest.importorskip("numpy")

def run(recording_driver, scenario: str, *args) -> dict:
    """What the scenario of recorded_launches saw, run with the recording driver."""
    return scenario_json("recorded_launches", scenario, *args,
                         env={"CUDALOAD_LIBCUDA": recording_driver})


def test_arguments_and_dimensions_reach_the_driver_exactly(recording_driver):
    out = run(recording_driver, "exact_arguments")
    ptr = out["ptr"]
    count, dims, data, name = out["first"]
    assert (count, dims, name) == (1, [4, 2, 1, 128, 1, 1, 1024], "k")
    assert bytes.fromhex(data) == struct.pack("<QfidB", ptr, 2.5, -3, 1.25, 7)
    count, dims, data, _ = out["second"]
    assert (count, dims) == (2, [8, 1, 1, 32, 4, 1, 0])
    assert bytes.fromhex(data) == struct.pack("<QfidB", ptr, 0.5, 9, 2.0, 1)
    assert out["numpy_grid"][1][:3] == [3, 1, 1]
    assert out["float_grid"] == "TypeError" and out["too_big"] == "LaunchArgumentError"
    assert out["after_refusals"] == 3  # neither refused launch reached the driver


def test_template_parameter_types_come_from_the_lowered_name(recording_driver):
    out = run(recording_driver, "template_types")
    count, _dims, data, name = out["launch"]
    assert name.startswith("_Z5scale")  # launched by its lowered name
    assert bytes.fromhex(data) == struct.pack("<i4sfii", 11, struct.pack("<f", 0.75), 2.5, 7, 1000)
    assert out["float_into_int"] == "LaunchArgumentError"  # the last U is int, not float


def test_source_types_that_disagree_with_the_layout_give_way_to_it(recording_driver):
    out = run(recording_driver, "layout_wins")
    assert bytes.fromhex(out["launch"][2]) == struct.pack("<i4xd", 5, 2.5)


def test_buffer_sizes_and_values_are_integers_and_buffers_are_not_duplicated(recording_driver):
    out = run(recording_driver, "buffer_sizes")
    assert out["float_size"] == "TypeError" and out["float_memset"] == "TypeError"
    assert out["negative_copy"] == "ValueError" and out["float_copy"] == "TypeError"
    assert out["copied"] == "abababab"
    assert "alloc(buf.nbytes).copy_from(buf)" in out["copy"] and out["deepcopy"] == out["copy"]
    assert "cannot be pickled" in out["pickle"]


def test_a_context_another_library_made_current_is_replaced_before_allocating(recording_driver):
    out = run(recording_driver, "foreign_context")
    ours, allocated_in = out["contexts"]
    assert ours == allocated_in == 0x1000  # the device's primary context, bound again first


def test_a_foreign_stream_of_another_device_is_refused_before_the_launch(recording_driver):
    out = run(recording_driver, "foreign_stream")
    assert out["same_device"] == 2 and out["launches"] == 2
    assert "the stream is on device 1 but device 0 is current" in out["other_device"]


def test_code_compiled_once_is_loaded_once_however_many_kernels_are_made(recording_driver):
    out = run(recording_driver, "loaded_once")
    assert out["loads"] == 1 and out["same"] and out["explicit"] == 2
    assert out["launches"] == 5


def test_code_a_graph_captured_stays_loaded_while_the_graph_lives(recording_driver):
    out = run(recording_driver, "graph_keeps_code")
    assert out["during"] == out["after_launch"] == 0
    assert out["after_graph"] == 1 and out["no_graph"] == 2


def test_launch_state_of_finished_threads_is_released(recording_driver):
    out = run(recording_driver, "thread_states")
    assert out["launches"] == 41 and out["states"] == 1  # the main thread's only


def test_the_launch_benchmark_breakdown_still_reads_the_launch_state(recording_driver):
    # bench/launch_bench.py times each step of the hot path by reaching into the kernel's
    # launch state; a change there must not silently turn the breakdown into an error.
    out = run(recording_driver, "bench_breakdown", os.path.join(ROOT, "bench"))
    parts = out["breakdown"]
    assert set(parts) >= {"config_lookup", "pack_and_convert", "cffi_cuLaunchKernelEx_alone",
                          "full_launch"}
    assert all(isinstance(v, float) and v > 0 for v in parts.values()), parts


def test_the_launch_benchmark_measures_every_argument_kind_on_the_recording_driver(tmp_path):
    # bench/launch_bench.py --fake: the Python overhead per argument kind, on any machine
    import json
    import subprocess
    import sys

    out = tmp_path / "fake.json"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "launch_bench.py"), "--fake",
                    "--quick", "--launches", "200", "--repeats", "1", "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=300)
    floor = json.loads(out.read_text())["floor"]
    assert list(floor) == ["int pointer", "DeviceBuffer", "CuPy array", "PyTorch tensor",
                           "8 arguments", "16 arguments"]
    for kind, row in floor.items():
        assert isinstance(row["cudaload_us"], float) and isinstance(row["bare_cffi_us"], float), row
        assert row["over_bare_cffi"] > 0 and "overhead_us" in row, (kind, row)
        # the verdict is the paired rounds' ratio; the separate medians' is kept beside it
        assert row["over_bare_cffi_paired"] is True, (kind, row)
        assert row["over_bare_cffi_separate"] > 0, (kind, row)
        assert row["paired_cudaload_us"] > 0 and row["paired_bare_cffi_us"] > 0, (kind, row)
