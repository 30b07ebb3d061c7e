"""Finding and dlopening libcuda and libnvrtc in a fresh process (dlopen is per process).

    python -m tests.scenarios.library_loads SCENARIO ARGS...

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module loads nothing.
"""

from __future__ import annotations

import json
import sys


def _failure(err: Exception) -> dict:
    return {"type": type(err).__name__, "message": str(err),
            "library": getattr(err, "library", None),
            "tried": list(getattr(err, "tried", ())),
            "symbol": getattr(err, "symbol", None), "oserror": isinstance(err, OSError)}


def load_twice(which: str) -> None:
    """Load ``which`` ("driver" or "nvrtc") twice: what each attempt loaded or raised."""
    from cudaload.bindings import _loader

    out = []
    for _ in range(2):
        try:
            lib = getattr(_loader, which)()
            out.append({"path": lib.path, "found_via": lib.found_via})
        except Exception as err:
            out.append(_failure(err))
    print(json.dumps(out))


def optional_symbol() -> None:
    """Calls into a driver that lacks cuMemAlloc_v2 and cuGetProcAddress, before and after the
    call that needs the missing symbol."""
    from cudaload.bindings import driver

    drv = driver.api()
    out = {"version": drv.version, "proc_address": drv._proc_address is not None}
    v = drv.ffi.new("int *")
    out["rc"] = drv.cuDriverGetVersion(v)
    out["value"] = v[0]
    try:
        drv.cuMemAlloc_v2
    except Exception as err:
        out["missing"] = [type(err).__name__, err.symbol, isinstance(err, AttributeError)]
    driver.init()  # cuInit exists, so this works
    out["after"] = drv.cuDriverGetVersion(v)
    print(json.dumps(out))


def nvrtc_then_driver() -> None:
    """What loading NVRTC raised, and how the driver was found after it."""
    from cudaload.bindings import _loader

    try:
        _loader.nvrtc()
        nvrtc = "loaded"
    except Exception as err:
        nvrtc = type(err).__name__
    print(json.dumps({"nvrtc": nvrtc, "driver": _loader.driver().found_via}))


def nvrtc_found() -> None:
    """How NVRTC was found, its path, and whether loaded() then answers the same library."""
    from cudaload.bindings import _loader

    assert _loader.loaded("nvrtc") is None
    lib = _loader.nvrtc()
    same = _loader.loaded("nvrtc") is lib
    print(json.dumps({"via": lib.found_via, "path": lib.path, "same": same}))


def at_once(which: str) -> None:
    """16 threads released at once each load ``which``: how many distinct results came back."""
    import threading

    from cudaload.bindings import _loader

    barrier = threading.Barrier(16)
    got = []

    def worker():
        barrier.wait()
        try:
            got.append(getattr(_loader, which)())
        except Exception as err:
            got.append(err)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"n": len(got), "distinct": len({id(x) for x in got}),
                      "types": sorted({type(x).__name__ for x in got})}))


def load_named() -> None:
    """Load $WHICH ("driver" or "nvrtc"): its path, or what was raised; with $COMPILE set, also
    compile a kernel with it (a library that loads may still fail there)."""
    import os

    from cudaload.bindings import _loader, nvrtc

    out = {}
    try:
        lib = getattr(_loader, os.environ["WHICH"])()
        out["loaded"] = lib.path
        if os.environ.get("COMPILE"):
            out["code"] = len(nvrtc.compile('extern "C" __global__ void k() {}', "k.cu",
                                            ("-arch=sm_90",)).code)
    except Exception as err:
        out.update(type=type(err).__name__, message=str(err), code=getattr(err, "code", None),
                   mro=[c.__name__ for c in type(err).__mro__])
    print(json.dumps(out))


def old_nvrtc_calls() -> None:
    """What asking the NVRTC of $CUDALOAD_LIBNVRTC for its archs, and compiling with it, raise."""
    import cudaload
    from cudaload.bindings import nvrtc

    out = {}
    for what, call in (("archs", nvrtc.supported_archs), ("compile", lambda: cudaload.Program(
            'extern "C" __global__ void k() {}').compile(arch=80))):
        try:
            call()
        except Exception as err:
            out[what] = [type(err).__name__, str(err), getattr(err, "symbol", None)]
    print(json.dumps(out))


SCENARIOS = {f.__name__: f for f in (load_twice, optional_symbol, nvrtc_then_driver, nvrtc_found,
                                     at_once, load_named, old_nvrtc_calls)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
