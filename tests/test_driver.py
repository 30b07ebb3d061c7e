"""Checked driver calls against a real driver library without GPU (Debian libcuda1, CUDA 12.2)."""

from __future__ import annotations

import pytest

from tests.conftest import run_json
from cudaload.bindings import driver

_ERR = """
def err_fields(err):
    return {"type": type(err).__name__, "code": getattr(err, "code", None),
            "name": getattr(err, "name", None), "function": getattr(err, "function", None)}
"""


def test_entry_points_resolve_through_cuGetProcAddress_and_check_results(libcuda_535):
    result = run_json(_ERR + """
import json
from cudaload.bindings import driver
drv = driver.api()
count = drv.ffi.new("int *")
rc = drv.cuDeviceGetCount(count)  # before cuInit
try:
    driver.check(rc, "cuDeviceGetCount")
    checked = None
except Exception as err:
    checked = err_fields(err)
print(json.dumps({"version": driver.version(), "text": driver.format_version(driver.version()),
                  "proc_address": drv._proc_address is not None, "rc": rc, "checked": checked,
                  "cached": drv.cuDeviceGetCount is drv.cuDeviceGetCount}))
""", env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert result["version"] == 12020 and result["text"] == "12.2"
    assert result["proc_address"]
    assert result["rc"] == 3
    assert result["checked"] == {"type": "DriverError", "code": 3, "function": "cuDeviceGetCount",
                                 "name": "CUDA_ERROR_NOT_INITIALIZED"}
    assert result["cached"]


def test_cuinit_without_gpu_raises_no_device_and_remembers_it(libcuda_535):
    result = run_json(_ERR + """
import json
from cudaload.bindings import driver
out = []
for attempt in (driver.init, driver.init,
                lambda: driver.call("cuDeviceGetCount", driver.api().ffi.new("int *"))):
    try:
        attempt()
        out.append(None)
    except Exception as err:
        out.append(err_fields(err))
print(json.dumps({"errors": out, "describe": list(driver.describe(100))}))
""", env={"CUDALOAD_LIBCUDA": libcuda_535})
    expected = {"type": "DriverError", "code": 100, "name": "CUDA_ERROR_NO_DEVICE",
                "function": "cuInit"}
    assert result["errors"] == [expected] * 3
    assert result["describe"] == ["CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"]


def test_undeclared_names_are_attribute_errors(libcuda_535):
    result = run_json("""
        import json
        from cudaload.bindings import driver
        drv = driver.api()
        out = []
        for name in ("cuNoSuchFunction", "not_an_entry_point"):
            try:
                getattr(drv, name)
                out.append(None)
            except AttributeError as err:
                out.append(type(err).__name__)
        print(json.dumps(out))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535})
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
    result = run_json("""
        import json
        from cudaload.bindings import driver
        known, unknown = driver.error(100, "cuInit"), driver.error(987654, "cuFoo")
        print(json.dumps([known.name, known.code, known.function, str(known), known.hint,
                          unknown.name, unknown.hint]))
    """, env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    name, code, function, message, hint, unknown, no_hint = result
    assert (name, code, function) == ("CUDA_ERROR_NO_DEVICE", 100, "cuInit")
    assert message.startswith("cuInit failed: CUDA_ERROR_NO_DEVICE (100)")
    assert "nvidia-smi" in hint and message.endswith(f"; {hint}")
    assert unknown == "CUresult 987654" and no_hint == ""


def test_error_with_a_driver_uses_its_own_words(libcuda_535):
    result = run_json("""
        import json
        from cudaload.bindings import driver
        err = driver.error(2, "cuMemAlloc_v2")
        print(json.dumps([err.name, err.message, str(err), err.hint]))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert result[0] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert result[1] == "out of memory"
    assert "free device memory" in result[3] and result[2].endswith(result[3])
