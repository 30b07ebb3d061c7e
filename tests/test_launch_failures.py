"""Launches the driver refuses: a typed error naming the cause, never an AttributeError from
inside the launch path; a foreign context is replaced and the launch retried once."""

from __future__ import annotations

import struct

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def run(recording_driver, scenario: str) -> dict:
    return scenario_json("failed_launches", scenario, env={"CUDALOAD_LIBCUDA": recording_driver})


def test_a_cooperative_grid_too_large_names_the_largest_grid_that_fits(recording_driver):
    out = run(recording_driver, "cooperative_too_large")
    assert out["type"] == "DriverError", out
    assert out["name"] == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" and out["code"] == 720
    # 8 blocks of 256 threads per multiprocessor (the driver's occupancy) times 132 of them
    assert "5000 blocks" in out["str"] and "at most 1056" in out["str"], out["str"]
    assert "1056" in out["hint"]
    assert out["refused"] == 1


def test_a_launch_the_fast_path_makes_fails_with_the_drivers_error(recording_driver):
    out = run(recording_driver, "fast_path_failure")
    assert out["type"] == "DriverError", out
    assert out["name"] == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" and "cuLaunchKernelEx(k)" in out["str"]
    count, _dims, data, _name = out["after"]
    assert count == 6 and bytes.fromhex(data) == struct.pack("<i", 11)


def test_a_launch_refused_for_a_foreign_context_is_retried_once_in_ours(recording_driver):
    out = run(recording_driver, "foreign_context_retried")
    assert out["refused"] == 1
    count, _dims, data, _name = out["last"]
    assert count == 2 and bytes.fromhex(data) == struct.pack("<i", 2)


def test_an_image_the_driver_refuses_is_named_in_the_error(recording_driver):
    """The error named the driver call alone; which code it refused (ObjectCode.name: the
    program or file it came from) was left to guess."""
    out = run(recording_driver, "refused_image")
    assert out["type"] == "DriverError" and out["name"] == "CUDA_ERROR_INVALID_IMAGE", out
    assert "shipped.ptx" in out["str"], out["str"]
