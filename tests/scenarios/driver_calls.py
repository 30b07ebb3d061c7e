"""Checked calls into the driver library named by CUDALOAD_LIBCUDA, and the stream handles made
for it, in a fresh process.

    python -m tests.scenarios.driver_calls SCENARIO

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module loads nothing.
"""

from __future__ import annotations

import json
import sys


def err_fields(err):
    return {"type": type(err).__name__, "code": getattr(err, "code", None),
            "name": getattr(err, "name", None), "function": getattr(err, "function", None)}


def checked_call() -> None:
    """cuDeviceGetCount before cuInit, its check, the driver's version, and whether entry points
    are resolved once."""
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


def init_twice() -> None:
    """What cuInit raises twice and a call needing it once, and describe(100)."""
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


def undeclared_names() -> None:
    """What asking the driver for names it does not declare raises."""
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


def header_errors() -> None:
    """The fields of driver errors for a known and an unknown code."""
    from cudaload.bindings import driver

    known, unknown = driver.error(100, "cuInit"), driver.error(987654, "cuFoo")
    print(json.dumps([known.name, known.code, known.function, str(known), known.hint,
                      unknown.name, unknown.hint]))


def out_of_memory_error() -> None:
    """The fields of the driver error for CUDA_ERROR_OUT_OF_MEMORY."""
    from cudaload.bindings import driver

    err = driver.error(2, "cuMemAlloc_v2")
    print(json.dumps([err.name, err.message, str(err), err.hint]))


def stream_handles() -> None:
    """The handle handle_of() reads from each kind of stream object, and what it raises for a
    str."""
    from cudaload.bindings import driver
    from cudaload.launch.stream import Stream, handle_of

    ffi = driver.api().ffi
    ptr = lambda h: int(ffi.cast("uintptr_t", h))

    class Torchish:  # torch.cuda.Stream's attribute
        cuda_stream = 0x5000

    class Protocol:
        def __cuda_stream__(self):
            return (0, 0x6000)

    wrapped = Stream.from_handle(0x7000)
    result = {"none": ptr(handle_of(None)), "int": ptr(handle_of(0x4000)),
              "torch": ptr(handle_of(Torchish())), "protocol": ptr(handle_of(Protocol())),
              "stream": ptr(handle_of(wrapped)), "same": Stream.from_handle(wrapped) is wrapped}
    try:
        handle_of("not a stream")
    except TypeError as err:
        result["bad"] = str(err)
    print(json.dumps(result))


SCENARIOS = {f.__name__: f for f in (checked_call, init_twice, undeclared_names, header_errors,
                                     out_of_memory_error, stream_handles)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
