"""Tiny shared libraries built with the C compiler: stand-ins for a wrong or too old libcuda."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

# Exports the four symbols the loader and Driver need, and nothing else: no cuGetProcAddress (as in
# drivers before CUDA 12.0), no device or memory entry points.
PARTIAL_DRIVER = r"""
static const char *names[] = {"CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"};
int cuInit(unsigned int flags) { return flags ? 1 : 0; }
int cuDriverGetVersion(int *v) { *v = 12000; return 0; }
int cuGetErrorName(int code, const char **s) { if (code > 1) return 1; *s = names[code]; return 0; }
int cuGetErrorString(int code, const char **s) { return cuGetErrorName(code, s); }
"""

# A driver with one device and enough entry points to describe it, built on PARTIAL_DRIVER: the
# device report and the device and stream objects can then be tested without a GPU.
ONE_DEVICE_DRIVER = PARTIAL_DRIVER + r"""
#include <string.h>
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { if (i) return 1; *d = 0; return 0; }
int cuDeviceGetName(char *s, int len, int d) { strncpy(s, "Fake GPU", len); return 0; }
int cuDeviceTotalMem_v2(unsigned long long *b, int d) { *b = 8ULL << 30; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    switch (attr) { case 75: *v = 8; return 0; case 76: *v = 6; return 0; case 16: *v = 84; return 0; }
    return 1;
}
int cuModuleGetLoadingMode(int *mode) { *mode = 2; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = 0; return 0; }  /* none current: device 0 */
"""

NO_DRIVER_SYMBOLS = "int cudaload_test_nothing(void) { return 0; }\n"


def build_shared_library(directory, name: str, source: str) -> str:
    """Compile ``source`` into ``directory/name`` as a shared library and return its path."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        if os.environ.get("CI"):
            pytest.fail("no C compiler (cc) in CI: install gcc")
        pytest.skip("no C compiler (cc) to build a test library")
    src = os.path.join(directory, name + ".c")
    out = os.path.join(directory, name)
    with open(src, "w") as f:
        f.write(source)
    subprocess.run([cc, "-shared", "-fPIC", "-o", out, src], check=True, capture_output=True)
    return out


@pytest.fixture
def partial_driver(tmp_path) -> str:
    """A libcuda look-alike that has cuInit and cuDriverGetVersion but no other entry point."""
    return build_shared_library(str(tmp_path), "libcuda_partial.so", PARTIAL_DRIVER)


@pytest.fixture
def one_device_driver(tmp_path) -> str:
    """A libcuda look-alike reporting one device (a "Fake GPU", compute capability 8.6)."""
    return build_shared_library(str(tmp_path), "libcuda_onedevice.so", ONE_DEVICE_DRIVER)


@pytest.fixture
def no_symbols_library(tmp_path) -> str:
    """A valid shared library that exports none of the driver's symbols."""
    return build_shared_library(str(tmp_path), "libnotcuda.so", NO_DRIVER_SYMBOLS)


@pytest.fixture
def text_file(tmp_path) -> str:
    """A file that is not a shared library at all."""
    path = tmp_path / "libcuda.so.1"
    path.write_text("this is not an ELF file\n")
    return str(path)
