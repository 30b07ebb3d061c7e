"""Checked driver calls against a real driver library without GPU (Debian libcuda1, CUDA 12.2)."""

from __future__ import annotations

import pytest

from tests._support import run_json, scenario_json
from cudaload.bindings import driver

def test_entry_points_resolve_through_cuGetProcAddress_and_check_results(libcuda_535):
    result = scenario_json("driver_calls", "checked_call", env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert result["version"] == 12020 and result["text"] == "12.2"
    assert result["proc_address"]
    assert result["rc"] == 3
    # NOT_INITIALIZED: no CUDA work can run, so it is also a CudaUnavailableError
    assert result["checked"] == {"type": "DriverUnavailableError", "code": 3, "function": "cuDeviceGetCount",
                                 "name": "CUDA_ERROR_NOT_INITIALIZED"}
    assert result["cached"]


def test_cuinit_without_gpu_raises_no_device_and_remembers_it(libcuda_535):
    result = scenario_json("driver_calls", "init_twice", env={"CUDALOAD_LIBCUDA": libcuda_535})
    expected = {"type": "DriverUnavailableError", "code": 100, "name": "CUDA_ERROR_NO_DEVICE",
                "function": "cuInit"}
    assert result["errors"] == [expected] * 3
    assert result["describe"] == ["CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"]


def test_undeclared_names_are_attribute_errors(libcuda_535):
    result = scenario_json("driver_calls", "undeclared_names",
                           env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert result == ["AttributeError", "AttributeError"]


def test_driver_without_gpu_is_not_available(libcuda_535):
    result = run_json("""
        import json, cudaload
        print(json.dumps(cudaload.is_available()))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert result is False


@pytest.mark.parametrize("value, text", [(12020, "12.2"), (13000, "13.0"), (12080, "12.8"),
                                         (0, "unknown")])
def test_format_version(value, text):
    assert driver.format_version(value) == text


def test_error_without_a_driver_names_the_code_from_the_header():
    result = scenario_json("driver_calls", "header_errors",
                           env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    name, code, function, message, hint, unknown, no_hint = result
    assert (name, code, function) == ("CUDA_ERROR_NO_DEVICE", 100, "cuInit")
    assert message.startswith("cuInit failed: CUDA_ERROR_NO_DEVICE (100)")
    assert "nvidia-smi" in hint and message.endswith(f"; {hint}")
    assert unknown == "CUresult 987654" and no_hint == ""


def test_error_with_a_driver_uses_its_own_words(libcuda_535):
    result = scenario_json("driver_calls", "out_of_memory_error",
                           env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert result[0] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert result[1] == "out of memory"
    assert "free device memory" in result[3] and result[2].endswith(result[3])


def test_a_name_the_module_lacks_points_at_name_expressions(libcuda_535):
    hint = run_json("""
        import json
        from cudaload.bindings import driver
        from cudaload.bindings._cuda_ffi import ffi
        code = ffi.integer_const("CUDA_ERROR_NOT_FOUND")
        print(json.dumps(driver.error(code, "cuModuleGetFunction('k')").hint))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert "name_expressions" in hint and 'extern \\"C\\"' not in hint and 'extern "C"' in hint
