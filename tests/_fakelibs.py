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

# A driver with two devices (compute capability 9.0) that loads any image and records each launch
# instead of running it: the launch path (resolution, layout, checks, packing, the launch
# configuration) can then be tested without a GPU, down to the bytes cuLaunchKernelEx receives.
# The parameter layout it reports is the test's (fake_set_layout); fake_last gives the last launch.
RECORDING_DRIVER = r"""
#include <stddef.h>
#include <string.h>
typedef struct { unsigned grid[3], block[3], smem; void *stream; void *attrs; unsigned nattrs; } Config;
static const char *names[] = {"CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"};
static void *current;
static size_t offsets[64], sizes[64];
static int nparams, launches, loads, unloads;
static Config last;
static unsigned char params_seen[4096];
static char kernel_name[512];
static unsigned long long next_address = 0x700000000ULL;
int cuInit(unsigned int flags) { return 0; }
int cuDriverGetVersion(int *v) { *v = 12080; return 0; }
int cuGetErrorName(int code, const char **s) { if (code > 1) return 1; *s = names[code]; return 0; }
int cuGetErrorString(int code, const char **s) { return cuGetErrorName(code, s); }
int cuDeviceGetCount(int *n) { *n = 2; return 0; }
int cuDeviceGet(int *d, int i) { if (i < 0 || i > 1) return 1; *d = i; return 0; }
int cuDeviceGetName(char *s, int len, int d) { strncpy(s, "Recording GPU", len); return 0; }
int cuDeviceTotalMem_v2(unsigned long long *b, int d) { *b = 80ULL << 30; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    switch (attr) {
    case 1: *v = 1024; return 0;                                  /* threads per block */
    case 2: case 3: *v = 1024; return 0; case 4: *v = 64; return 0;  /* block dims */
    case 5: *v = 2147483647; return 0; case 6: case 7: *v = 65535; return 0;  /* grid dims */
    case 16: *v = 132; return 0; case 75: *v = 9; return 0; case 76: *v = 0; return 0;
    case 97: *v = 232448; return 0;                               /* shared memory opt-in */
    }
    return 1;
}
int cuModuleGetLoadingMode(int *mode) { *mode = 2; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int d) { *ctx = (void *)(0x1000 + 0x100 * (size_t)d); return 0; }
int cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
int cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
int cuCtxGetDevice(int *d) { *d = current == (void *)0x1100; return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuLibraryLoadData(void **lib, const void *code, void *o, void *ov, unsigned n, void *lo,
                      void *lov, unsigned ln) { *lib = (void *)0x2000; ++loads; return 0; }
int fake_loads(void) { return loads; }
int cuLibraryUnload(void *lib) { ++unloads; return 0; }
int fake_unloads(void) { return unloads; }
int cuStreamCreate(void **s, unsigned flags) { *s = (void *)0x5000; return 0; }
int cuStreamDestroy_v2(void *s) { return 0; }
int cuStreamSynchronize(void *s) { return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void *s, void **params, void **extra) {
    return ++launches, 0;
}
int cuStreamBeginCapture_v2(void *s, int mode) { return 0; }
int cuStreamEndCapture(void *s, void **graph) { *graph = (void *)0x8000; return 0; }
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    *exec = (void *)0x9000; return 0;
}
int cuGraphLaunch(void *exec, void *s) { return 0; }
int cuGraphExecDestroy(void *exec) { return 0; }
int cuGraphDestroy(void *graph) { return 0; }
int cuLibraryGetKernel(void **k, void *lib, const char *name) {
    strncpy(kernel_name, name, sizeof kernel_name - 1); *k = (void *)0x3000; return 0;
}
/* one function per context: 0x4000 in device 0's, 0x4100 in device 1's */
int cuKernelGetFunction(void **f, void *k) { *f = (void *)(0x4000 + ((size_t)current & 0x100)); return 0; }
int cuFuncSetAttribute(void *f, int attr, int value) { return 0; }
int cuFuncGetParamInfo(void *f, size_t i, size_t *offset, size_t *size) {
    if ((int)i >= nparams) return 1;
    *offset = offsets[i]; *size = sizes[i]; return 0;
}
/* of the last launch: the context current, the function, the parameter pointer array */
static void *launch_context, *launch_function, **launch_params;
void *fake_launch_context(void) { return launch_context; }
void *fake_launch_function(void) { return launch_function; }
void *fake_launch_params(void) { return launch_params; }
int cuLaunchKernelEx(const Config *c, void *f, void **params, void **extra) {
    last = *c; launch_context = current; launch_function = f; launch_params = params;
    for (int i = 0; i < nparams; i++) memcpy(params_seen + offsets[i], params[i], sizes[i]);
    return ++launches, 0;
}
static void *alloc_context;  /* the context current at the last allocation */
int cuMemAlloc_v2(unsigned long long *p, size_t n) {
    alloc_context = current; *p = next_address; next_address += (n + 255) & ~255ULL; return 0;
}
void *fake_alloc_context(void) { return alloc_context; }
int cuMemFree_v2(unsigned long long p) { return 0; }
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) { return 0; }
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n) { memset(dst, 0xab, n); return 0; }
int cuMemsetD8_v2(unsigned long long dst, unsigned char value, size_t n) { return 0; }
int cuPointerGetAttribute(void *data, int attr, unsigned long long p) {
    *(int *)data = attr == 2 ? 2 : 0;  /* device memory, on device 0 */
    return 0;
}
void fake_set_layout(int n, const size_t *off, const size_t *size) {
    nparams = n; memcpy(offsets, off, n * sizeof *off); memcpy(sizes, size, n * sizeof *size);
}
int fake_last(unsigned *dims, unsigned char *params, size_t n, char *name) {
    memcpy(dims, last.grid, 6 * sizeof *dims); dims[6] = last.smem;
    memcpy(params, params_seen, n); strcpy(name, kernel_name);
    return launches;
}
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
def recording_driver(tmp_path) -> str:
    """A libcuda look-alike with two compute capability 9.0 devices that records launches."""
    return build_shared_library(str(tmp_path), "libcuda_recording.so", RECORDING_DRIVER)


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
