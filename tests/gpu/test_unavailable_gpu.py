"""The one exception to catch, on a real GPU and its real driver: where the GPU is hidden or the
process was forked after CUDA's use every entry point raises CudaUnavailableError; with the GPU
in view nothing does, and a wrong ordinal is bad input, not "unavailable"."""

from __future__ import annotations

import pytest

import cudaload

from .._support import scenario_json
from ..test_unavailable import ENTRY_POINTS, assert_unavailable


def test_with_the_gpu_in_view_no_entry_point_is_unavailable():
    result = scenario_json("unavailable_uses", "entry_points")
    assert result["device_count"] >= 1 and result["is_available"] and result["status"]
    for name, err in result["raised"].items():
        if err is not None:
            assert "CudaUnavailableError" not in err["is"], (name, err)
    for name in ("alloc", "Stream()", "Event()", "Device(0)", "ObjectCode.load",
                 "load().get_global", "RawKernel call", "RawKernel.module"):
        assert result["raised"][name] is None, (name, result["raised"][name])


def test_an_ordinal_past_the_last_device_is_a_value_error_not_unavailable():
    with pytest.raises(ValueError) as info:
        cudaload.Device(cudaload.device_count())
    assert not isinstance(info.value, cudaload.CudaUnavailableError)


def test_with_every_gpu_hidden_the_real_driver_makes_every_entry_point_unavailable():
    # CUDA_VISIBLE_DEVICES="": the driver is real and loads; cuInit finds no device.
    result = scenario_json("unavailable_uses", "entry_points", env={"CUDA_VISIBLE_DEVICES": ""})
    errors = assert_unavailable(result, "DriverError")
    assert {e["name"] for e in errors} == {"CUDA_ERROR_NO_DEVICE"}, errors[0]


def test_in_a_child_forked_after_a_launch_every_entry_point_is_unavailable():
    child = scenario_json("unavailable_uses", "after_fork", timeout=120)
    names = ENTRY_POINTS + ["launch of the parent's kernel", "parent's buffer", "parent's stream"]
    errors = assert_unavailable(child, "ForkedProcessError", entry_points=names)
    assert all("spawn" in e["hint"] for e in errors)
    assert child["parent_count"] >= 1
