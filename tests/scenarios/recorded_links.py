"""Links by the driver's linker (the fallback of cudaload.Linker where nvJitLink is missing or
refuses the arch) onto the recording driver of tests/_fakelibs.py (named by $CUDALOAD_LIBCUDA),
one fresh process each.  The inputs are real: NVRTC's relocatable CUBIN and PTX, and a
library's bytes.

    python -m tests.scenarios.recorded_links SCENARIO ARGS...

Each scenario prints what it saw as JSON on the last line.  The recording driver and cudaload are
loaded inside the scenarios, so importing this module loads nothing.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

CALLER = r"""
extern __device__ int helper(int);
extern "C" __global__ void caller(int *p) { p[0] = helper(p[1]); }
"""
HELPER = "__device__ int helper(int x) { return x + 1; }"
# An ar archive holding nothing: the driver's linker here only records that it was given one.
LIBRARY = b"!<arch>\n"


def _recorded() -> dict:
    """What the recording driver's linker received at the last cuLinkCreate."""
    fake = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])
    options, values = (ctypes.c_int * 64)(), (ctypes.c_long * 64)()
    types, names = (ctypes.c_int * 16)(), ctypes.create_string_buffer(1024)
    context, destroyed = ctypes.c_void_p(), ctypes.c_int()
    count = fake.fake_link(options, values, types, names, ctypes.byref(context),
                           ctypes.byref(destroyed))
    inputs = names.value.decode().split(";")[:-1]
    return {"options": {str(options[i]): values[i] for i in range(count)
                        if options[i] not in (3, 5)},  # the log buffers' addresses vary
            "types": list(types)[:len(inputs)], "names": inputs,
            "context": context.value, "destroyed": destroyed.value,
            "calls": fake.fake_link_calls()}


def _inputs():
    import cudaload

    caller = cudaload.Program(CALLER, name="caller.cu", relocatable=True).compile(
        arch=90, output="cubin")
    ptx = cudaload.Program(HELPER, name="helper.cu", relocatable=True).compile(
        arch=90, output="ptx")
    return caller, ptx, cudaload.ObjectCode.from_bytes(LIBRARY, "library", name="libdevrt.a")


def fallback() -> None:
    """A CUBIN, PTX and a library linked by the driver with options: the linker used, what the
    driver got, the result and where it came from."""
    import cudaload

    linker = cudaload.Linker(*_inputs(), arch="sm_90",
                             options=("-lineinfo", "-O3", "-maxrregcount=32", "-ftz=true",
                                      "-split-compile=0"))
    obj = linker.link()
    print(json.dumps({"linker": linker.linker, "kind": obj.kind, "arch": obj.arch,
                      "name": obj.name, "cached": obj.cached, "info_log": linker.info_log,
                      "error_log": linker.error_log, "tail": obj.code[0x40:].decode(),
                      **_recorded()}))


def undefined() -> None:
    """A link the driver fails with an undefined reference: the error's fields, and the logs
    the Linker kept."""
    import pickle

    import cudaload

    caller, _ptx, _library = _inputs()
    stub = cudaload.ObjectCode(caller.code, "cubin", "sm_90", name="undefined")
    linker = cudaload.Linker(caller, stub, arch=90)
    try:
        linker.link()
    except cudaload.LinkError as err:
        again = pickle.loads(pickle.dumps(err))
        print(json.dumps({"type": type(err).__name__, "symbol": err.symbol, "log": err.log,
                          "linker": err.linker, "message": str(err), "hint": err.hint,
                          "pickled": [again.symbol, again.log], "kept": linker.error_log,
                          **_recorded()}))
        return
    print(json.dumps({"type": None}))


def cannot(what: str) -> None:
    """A link the driver cannot do (``what``: "ltoir" input, or an option it lacks, "option"):
    the error raised, and whether the driver's linker was called."""
    import cudaload

    caller, _ptx, _library = _inputs()
    if what == "ltoir":
        ir = cudaload.Program(HELPER, name="helper.cu").compile(arch=90, output="ltoir")
        linker = cudaload.Linker(caller, ir, arch=90, lto=True)
    else:
        linker = cudaload.Linker(caller, arch=90, options=("-Xptxas=-v",))
    try:
        linker.link()
        error = None
    except cudaload.CudaLoadError as err:
        error = {"type": type(err).__name__, "message": str(err),
                 "cause": str(err.__cause__)}
    print(json.dumps({"error": error, "calls": _recorded()["calls"]}))


def refused_arch(arch: str) -> None:
    """A link for ``arch``, which the real nvJitLink refuses (sm_52: no longer supported; sm_99:
    unknown, which the recording driver refuses too): the linker used, what the driver got, and
    the error where neither linked; then the same link again, as a second process makes it."""
    import cudaload

    caller, ptx, _library = _inputs()
    linker = cudaload.Linker(caller, ptx, arch=arch)
    try:
        obj = linker.link()
    except cudaload.LinkError as err:
        print(json.dumps({"error": {"linker": err.linker, "result": err.result,
                                    "message": str(err), "hint": err.hint},
                          "linker": linker.linker, **_recorded()}))
        return
    print(json.dumps({"linker": linker.linker, "arch": obj.arch, "cached": obj.cached,
                      **_recorded()}))


def _nvjitlink_mapped() -> bool:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return "libnvJitLink" in maps.read()


def only(backend: str, arch: str) -> None:
    """A link for ``arch`` by ``backend`` alone: the linker used (or the error), whether the
    driver's linker was called and whether nvJitLink was loaded."""
    import cudaload

    caller, ptx, _library = _inputs()
    linker = cudaload.Linker(caller, ptx, arch=arch, backend=backend)
    try:
        obj = linker.link()
        error = None
    except cudaload.CudaLoadError as err:
        obj, error = None, {"type": type(err).__name__, "message": str(err),
                            "result": getattr(err, "result", None),
                            "unavailable": isinstance(err, cudaload.CudaUnavailableError)}
    try:
        recorded = _recorded()
    except (OSError, AttributeError):  # no driver, or a real one: nothing recorded
        recorded = {}
    print(json.dumps({"linker": linker.linker, "cached": obj and obj.cached, "error": error,
                      "nvjitlink": _nvjitlink_mapped(), **recorded}))


def honoured(*backends: str) -> None:
    """The same link by each of ``backends`` ("none": None) in turn: (linker, where it came
    from, the driver's links so far) of each."""
    import cudaload

    caller, ptx, _library = _inputs()
    seen = []
    for backend in backends:
        linker = cudaload.Linker(caller, ptx, arch="sm_90",
                                 backend=None if backend == "none" else backend)
        obj = linker.link()
        seen.append([linker.linker, obj.cached, _recorded()["calls"]])
    print(json.dumps(seen))


SCENARIOS = {f.__name__: f for f in (fallback, undefined, cannot, refused_arch, only, honoured)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
