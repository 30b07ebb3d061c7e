"""One exception to catch: every way CUDA cannot be used raises a CudaUnavailableError from every
public entry point that touches the GPU, while staying the error callers caught before; faults
and out-of-memory do not.  Each case runs in a fresh process (the driver is loaded once)."""

from __future__ import annotations

import os
import struct

import pytest

from tests._fakelibs import (build_shared_library,  # noqa: F401  (fixtures)
                             no_symbols_library, recording_driver, text_file)
from tests._support import scenario_json

NOWHERE = "/nonexistent/libcuda.so.1"
ENTRY_POINTS = ["alloc", "alloc(device=0)", "DeviceBuffer.copy_from_host", "Device(0)",
                "Device(1)", "Device(0).synchronize", "Stream()", "Stream.from_handle(0)",
                "Stream().capture()", "Event()", "Module(obj)", "ObjectCode.load",
                "load().get_kernel", "load().get_global", "RawKernel call", "RawKernel.module"]

# A driver whose answers the environment sets: cuInit's code ($FAKE_CUINIT), the device count
# ($FAKE_DEVICES), and the codes of context creation and allocation.  It names no error itself
# (cuGetErrorName fails), so the names come from headers/cuda.h.
CONFIGURABLE_DRIVER = r"""
#include <stdlib.h>
#include <stddef.h>
static int env(const char *name) { const char *v = getenv(name); return v ? atoi(v) : 0; }
static void *current;
int cuInit(unsigned int flags) { return env("FAKE_CUINIT"); }
int cuDriverGetVersion(int *v) { *v = 12080; return 0; }
int cuGetErrorName(int code, const char **s) { return 1; }
int cuGetErrorString(int code, const char **s) { return 1; }
int cuDeviceGetCount(int *n) { *n = env("FAKE_DEVICES"); return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return i < env("FAKE_DEVICES") ? 0 : 101; }
int cuDeviceGetAttribute(int *v, int attr, int d) { *v = attr == 75 ? 9 : 0; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int d) { *ctx = (void *)0x1000; return env("FAKE_RETAIN"); }
int cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
int cuMemAlloc_v2(unsigned long long *p, size_t n) { *p = 0x700000000ULL; return env("FAKE_ALLOC"); }
int cuMemFree_v2(unsigned long long p) { return 0; }
/* With no device there is nothing to load code onto (then context-free library loading fails). */
int cuLibraryLoadData(void **lib, const void *code, void *o, void *ov, unsigned n, void *lo,
                      void *lov, unsigned ln) { *lib = (void *)0x2000; return env("FAKE_DEVICES") ? 0 : 100; }
"""


@pytest.fixture
def configurable_driver(tmp_path) -> str:
    return build_shared_library(str(tmp_path), "libcuda_configurable.so", CONFIGURABLE_DRIVER)


def uses(env: dict, **kw) -> dict:
    """What every entry point raised (and device_count(), is_available(), status()) under ``env``."""
    return scenario_json("unavailable_uses", "entry_points", env={"CUDALOAD_CACHE": "0", **env},
                         **kw)


def assert_unavailable(result: dict, *also: str, entry_points=ENTRY_POINTS) -> list[dict]:
    """Every entry point raised a CudaUnavailableError that is each class of ``also`` too, has a
    next step and pickles; nothing else reports CUDA usable.  Returns the errors."""
    raised = result["raised"]
    assert set(entry_points) <= set(raised), sorted(raised)
    errors = []
    for name in entry_points:
        err = raised[name]
        assert err is not None, f"{name} did not raise"
        assert "CudaUnavailableError" in err["is"], (name, err)
        for cls in also:
            assert cls in err["is"], (name, cls, err)
        assert err["hint"] and err["pickles"], (name, err)
        errors.append(err)
    assert result["device_count"] == 0 and result["is_available"] is False
    assert result.get("status", False) is False
    return errors


# --- no driver, and a driver the loader refuses -------------------------------------------------

@pytest.mark.parametrize("nvrtc", ["found", "missing"])
def test_without_a_driver_every_entry_point_raises_one_error_that_is_still_not_found(nvrtc):
    # Without NVRTC too (a CPU-only machine without the nvrtc extra), the missing driver is what
    # a kernel call or RawKernel.module reports, not the compiler that could not have helped.
    env = {"CUDALOAD_LIBCUDA": NOWHERE}
    if nvrtc == "missing":
        env["CUDALOAD_LIBNVRTC"] = "/nonexistent/libnvrtc.so"
    errors = assert_unavailable(uses(env), "LibraryNotFoundError", "OSError")
    assert {e["type"] for e in errors} == {"DriverNotFoundError"}
    assert all("libcuda not found" in e["message"] for e in errors)


def test_an_empty_search_is_the_same_as_a_missing_path():
    result = uses({}, unset=("CUDALOAD_LIBCUDA",))
    if result["driver"] is not None:
        pytest.skip(f"this machine has a driver library: {result['driver']}")
    errors = assert_unavailable(result, "LibraryNotFoundError", "OSError")
    assert all("libcuda.so.1 (system loader): not found" in e["message"] for e in errors)


def _foreign(tmp_path) -> str:
    """A shared library built here, marked as one for aarch64 (or x86-64 on aarch64)."""
    path = build_shared_library(str(tmp_path), "native.so", "int cuInit(unsigned f) { return 0; }")
    data = bytearray(open(path, "rb").read())
    native = struct.unpack_from("<H", data, 18)[0]
    data[18:20] = struct.pack("<H", 62 if native == 183 else 183)
    out = tmp_path / "libcuda.so.1"
    out.write_bytes(bytes(data))
    return str(out)


@pytest.mark.parametrize("kind", ["text", "directory", "other-machine"])
def test_a_driver_the_loader_refuses_is_unavailable_and_still_a_load_error(kind, tmp_path,
                                                                          text_file):
    path = {"text": text_file, "directory": str(tmp_path)}.get(kind) or _foreign(tmp_path)
    errors = assert_unavailable(uses({"CUDALOAD_LIBCUDA": path}), "LibraryLoadError",
                                "LibraryNotFoundError", "OSError")
    assert {e["type"] for e in errors} == {"DriverLoadError"}


def test_a_library_that_is_no_driver_is_unavailable_and_still_a_missing_symbol(
        no_symbols_library):
    errors = assert_unavailable(uses({"CUDALOAD_LIBCUDA": no_symbols_library}),
                                "MissingSymbolError")
    assert {e["type"] for e in errors} == {"NotADriverError"}


# --- a driver that loads, without a usable GPU -------------------------------------------------

def test_debian_driver_without_gpu_every_entry_point_raises_one_error_that_is_a_driver_error(
        libcuda_535):
    errors = assert_unavailable(uses({"CUDALOAD_LIBCUDA": libcuda_535}), "DriverError")
    assert {(e["type"], e["code"], e["name"], e["function"]) for e in errors} == {
        ("DriverUnavailableError", 100, "CUDA_ERROR_NO_DEVICE", "cuInit")}
    assert "nvidia-smi" in errors[0]["hint"]


@pytest.mark.parametrize("code, name", [
    (100, "CUDA_ERROR_NO_DEVICE"), (800, "CUDA_ERROR_NOT_PERMITTED"),
    (801, "CUDA_ERROR_NOT_SUPPORTED"), (803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
    (804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"), (34, "CUDA_ERROR_STUB_LIBRARY"),
    (2, "CUDA_ERROR_OUT_OF_MEMORY"), (999, "CUDA_ERROR_UNKNOWN")])
def test_any_failed_cuinit_is_unavailable(code, name, configurable_driver):
    # cuInit answers the same for the life of the process, and cudaload remembers it: whatever
    # the code, nothing in this process can use CUDA, and is_available() says so.
    result = uses({"CUDALOAD_LIBCUDA": configurable_driver, "FAKE_CUINIT": str(code),
                   "FAKE_DEVICES": "1"})
    errors = assert_unavailable(result, "DriverError")
    assert {(e["type"], e["code"], e["name"], e["function"]) for e in errors} == {
        ("DriverUnavailableError", code, name, "cuInit")}


def test_no_device_after_a_successful_cuinit_is_unavailable_with_the_no_device_code(
        configurable_driver):
    result = uses({"CUDALOAD_LIBCUDA": configurable_driver, "FAKE_DEVICES": "0"})
    errors = assert_unavailable(result, "DriverError")
    assert {(e["type"], e["code"], e["name"]) for e in errors} == {
        ("DriverUnavailableError", 100, "CUDA_ERROR_NO_DEVICE")}
    assert "CUDA_VISIBLE_DEVICES" in errors[0]["hint"]


def test_a_device_that_refuses_this_process_is_unavailable(configurable_driver):
    # Exclusive-process or prohibited compute mode: the context cannot be made.
    result = uses({"CUDALOAD_LIBCUDA": configurable_driver, "FAKE_DEVICES": "1",
                   "FAKE_RETAIN": "46"})
    for name in ("alloc", "Stream()", "Event()"):
        err = result["raised"][name]
        assert err["type"] == "DriverUnavailableError" and err["name"] == \
            "CUDA_ERROR_DEVICE_UNAVAILABLE", (name, err)
        assert "compute mode" in err["hint"]
    assert result["device_count"] == 1  # the device is there; it is only taken


# --- what is not "unavailable" -----------------------------------------------------------------

def test_out_of_memory_and_a_missing_ordinal_are_not_unavailable(configurable_driver):
    result = uses({"CUDALOAD_LIBCUDA": configurable_driver, "FAKE_DEVICES": "1",
                   "FAKE_ALLOC": "2"})
    alloc = result["raised"]["alloc"]
    assert (alloc["type"], alloc["name"]) == ("DriverError", "CUDA_ERROR_OUT_OF_MEMORY")
    assert "CudaUnavailableError" not in alloc["is"] and alloc["pickles"]
    missing = result["raised"]["Device(1)"]  # one device exists: a wrong ordinal is bad input
    assert missing["type"] == "ValueError" and "1 visible" in missing["message"]
    assert result["raised"]["Device(0)"] is None
    assert result["device_count"] == 1 and result["is_available"] is True


def test_out_of_memory_while_making_the_context_is_not_unavailable(configurable_driver):
    result = uses({"CUDALOAD_LIBCUDA": configurable_driver, "FAKE_DEVICES": "1",
                   "FAKE_RETAIN": "2"})
    err = result["raised"]["alloc"]
    assert (err["type"], err["name"]) == ("DriverError", "CUDA_ERROR_OUT_OF_MEMORY")


def test_faults_and_out_of_memory_are_driver_errors_not_unavailable():
    got = scenario_json("unavailable_uses", "error_classes", "2", "700", "719", "715", "214",
                        "999", "801", "100", "46", "803", "4",
                        env={"CUDALOAD_LIBCUDA": NOWHERE})
    after = {code: v[1] for code, v in got.items()}
    assert after == {"2": False, "700": False, "719": False, "715": False, "214": False,
                     "999": False, "801": False, "100": True, "46": True, "803": True,
                     "4": True}
    assert all(v[2] for v in got.values())  # every one a DriverError
    assert all(v[3] for v in got.values())  # and at cuInit, every code means unavailable
    assert got["719"][0] == "CUDA_ERROR_LAUNCH_FAILED"


# --- after fork --------------------------------------------------------------------------------

def test_in_a_forked_child_every_entry_point_raises_forked_process_error(recording_driver):
    child = scenario_json("unavailable_uses", "after_fork",
                          env={"CUDALOAD_LIBCUDA": recording_driver, "CUDALOAD_CACHE": "0"})
    names = ENTRY_POINTS + ["launch of the parent's kernel", "parent's buffer", "parent's stream"]
    errors = assert_unavailable(child, "ForkedProcessError", entry_points=names)
    assert all("spawn" in e["hint"] for e in errors)
    assert child["parent_count"] == 2  # the parent still sees its devices
