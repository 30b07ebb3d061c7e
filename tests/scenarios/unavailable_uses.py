"""Every public entry point that touches the GPU, used where CUDA cannot be, in a fresh process.

    python -m tests.scenarios.unavailable_uses SCENARIO

The driver is whatever CUDALOAD_LIBCUDA names (or the system's).  Each scenario prints what it
found as JSON on its last line; cudaload is imported inside each, so importing this module loads
nothing.
"""

from __future__ import annotations

import json
import os
import pickle
import sys

SOURCE = 'extern "C" __global__ void k(int *p) { if (p) *p = 1; }\n__device__ int g;\n'
NO_PARAMETERS = 'extern "C" __global__ void z() {}\n'
PTX = b""".version 7.0
.target sm_50
.address_size 64
.visible .global .align 4 .u32 g;
.visible .entry k() { ret; }
"""
# The classes a caller may have caught before CudaUnavailableError existed, and ours.
CLASSES = ("CudaUnavailableError", "ForkedProcessError", "LibraryNotFoundError",
           "LibraryLoadError", "MissingSymbolError", "DriverError", "OSError", "ValueError")


def fields(err: BaseException) -> dict:
    """What a caller can tell of ``err``: its type, the classes it is an instance of, its
    fields, and whether it comes back from pickling the same."""
    back = pickle.loads(pickle.dumps(err))
    return {"type": type(err).__name__, "message": str(err),
            "is": [c for c in CLASSES if c in {k.__name__ for k in type(err).__mro__}],
            "code": getattr(err, "code", None), "name": getattr(err, "name", None),
            "function": getattr(err, "function", None), "hint": getattr(err, "hint", None),
            "pickles": type(back) is type(err) and str(back) == str(err)
            and vars(back) == vars(err)}


def uses(cudaload) -> dict:
    """Entry point -> a call of it that reaches the GPU (chains start at the first public step)."""
    obj = cudaload.ObjectCode.from_bytes(PTX, "ptx")  # plain data: no library is needed for it

    def capture():
        with cudaload.Stream().capture():
            pass

    return {
        "alloc": lambda: cudaload.alloc(16),
        "alloc(device=0)": lambda: cudaload.alloc(16, device=0),
        "DeviceBuffer.copy_from_host": lambda: cudaload.alloc(4).copy_from_host(bytearray(4)),
        "Device(0)": lambda: cudaload.Device(0),
        "Device(1)": lambda: cudaload.Device(1),
        "Device(0).synchronize": lambda: cudaload.Device(0).synchronize(),
        "Stream()": lambda: cudaload.Stream(),
        "Stream.from_handle(0)": lambda: cudaload.Stream.from_handle(0),
        "Stream().capture()": capture,
        "Event()": lambda: cudaload.Event(),
        "Module(obj)": lambda: cudaload.Module(obj),
        "ObjectCode.load": lambda: obj.load(),
        "load().get_kernel": lambda: obj.load().get_kernel("k")(1, 1, ()),
        "load().get_global": lambda: obj.load().get_global("g"),
        "RawKernel call": lambda: cudaload.RawKernel(SOURCE, "k")(1, 1, (0,)),
        "RawKernel.module": lambda: cudaload.RawKernel(SOURCE, "k").module,
    }


def _run(cudaload) -> dict:
    out = {}
    for name, use in uses(cudaload).items():
        try:
            use()
            out[name] = None
        except Exception as err:
            out[name] = fields(err)
    return out


def entry_points() -> None:
    """What each entry point raises; then device_count(), is_available() and status()."""
    import cudaload

    result = {"raised": _run(cudaload), "device_count": cudaload.device_count(),
              "is_available": cudaload.is_available(),
              "status": cudaload.status().available}
    from cudaload.bindings import _loader

    lib = _loader.loaded("cuda")
    result["driver"] = getattr(lib, "path", None)
    print(json.dumps(result))


def after_fork() -> None:
    """In a child forked after CUDA's use: what each entry point, a kernel launched before the
    fork, and the parent's buffer and stream raise; device_count() and is_available()."""
    import cudaload

    buf = cudaload.alloc(64)
    stream = cudaload.Stream()
    kernel = cudaload.RawKernel(NO_PARAMETERS, "z")  # the recording driver reports no parameter
    kernel(1, 1, ())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        got = _run(cudaload)
        for name, use in {"launch of the parent's kernel": lambda: kernel(1, 1, ()),
                          "parent's buffer": lambda: buf.copy_from_host(bytearray(64)),
                          "parent's stream": lambda: stream.synchronize()}.items():
            try:
                use()
                got[name] = None
            except Exception as err:
                got[name] = fields(err)
        report = {"raised": got, "device_count": cudaload.device_count(),
                  "is_available": cudaload.is_available()}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = json.loads(f.read())
    os.waitpid(pid, 0)
    kernel(1, 1, ())  # the parent goes on
    child["parent_count"] = cudaload.device_count()
    print(json.dumps(child))


def error_classes(*codes: str) -> None:
    """[class name, is CudaUnavailableError] of driver.error for each code, after a call and at
    cuInit."""
    import cudaload
    from cudaload.bindings import driver

    out = {}
    for code in codes:
        after = driver.error(int(code), "cuMemAlloc")
        init = driver.error(int(code), "cuInit", unavailable=True)
        out[code] = [after.name, isinstance(after, cudaload.CudaUnavailableError),
                     isinstance(after, cudaload.DriverError),
                     isinstance(init, cudaload.CudaUnavailableError)]
    print(json.dumps(out))


SCENARIOS = {f.__name__: f for f in (entry_points, after_fork, error_classes)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
