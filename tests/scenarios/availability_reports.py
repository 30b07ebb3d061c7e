"""status() and is_available() in a fresh process, for the availability tests.

    python -m tests.scenarios.availability_reports SCENARIO ARGS...

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module probes nothing.
"""

from __future__ import annotations

import json
import sys


def _nvrtc_version_raises() -> None:
    from cudaload.bindings import nvrtc

    def boom():
        raise ValueError("boom")

    nvrtc.version = boom


def _no_cffi() -> None:
    sys.modules["_cffi_backend"] = None  # as if cffi were not installed


def _device_count_refused() -> None:
    from cudaload.launch import device
    from cudaload import errors

    def refuse():
        raise errors.DriverError("cuDeviceGetCount failed: CUDA_ERROR_UNKNOWN (999): unknown",
                                 code=999, name="CUDA_ERROR_UNKNOWN", function="cuDeviceGetCount",
                                 detail="unknown", hint="reseat the GPU in its slot")

    device.visible_devices = refuse  # what the report asks: device_count() never raises


BREAKS = {"nvrtc_version_raises": _nvrtc_version_raises, "no_cffi": _no_cffi,
          "device_count_refused": _device_count_refused}


def report(broken: str = "") -> None:
    """The status report, its text, is_available(), and whether status() is remembered; ``broken``
    names one of BREAKS, done first."""
    if broken:
        BREAKS[broken]()
    import cudaload

    st = cudaload.status()
    print(json.dumps({"available": cudaload.is_available(), "report": st.as_dict(),
                      "text": str(st), "cached": cudaload.status() is st}))


def ptx_loadable() -> None:
    """_ptx_loadable for three (driver, NVRTC) pairs, and how many problems they recorded."""
    from cudaload import availability

    problems = []
    print(json.dumps([availability._ptx_loadable(13050, (13, 5), problems),
                      availability._ptx_loadable(12080, (12, 4), problems),
                      availability._ptx_loadable(12040, (12, 8), problems), len(problems)]))


def probe_raises() -> None:
    """status() when the whole probe raises: [available, problems]."""
    from cudaload import availability

    def broken():
        raise RuntimeError("probe exploded")

    availability._probe = broken
    st = availability.status()
    print(json.dumps([st.available, st.problems]))


def driver_init_raises() -> None:
    """is_available() when driver.init raises MemoryError."""
    import cudaload
    from cudaload.bindings import driver

    def broken():
        raise MemoryError("odd")

    driver.init = broken
    print(json.dumps(cudaload.is_available()))


def remembered_report() -> None:
    """The NVRTC section of the report, and whether making it mapped libnvrtc or imported
    cuda.pathfinder."""
    import cudaload

    rep = cudaload.status().as_dict()["nvrtc"]
    maps = open("/proc/self/maps").read()
    print(json.dumps({"rep": rep, "mapped": "libnvrtc" in maps,
                      "pathfinder": "cuda.pathfinder" in sys.modules}))


def refresh_retries(libcuda: str) -> None:
    """The driver section before and after CUDALOAD_LIBCUDA is set to ``libcuda``, without and
    with refresh: [found, found, found, version, cuinit]."""
    import os

    import cudaload

    first = cudaload.status().as_dict()["driver"]
    os.environ["CUDALOAD_LIBCUDA"] = libcuda
    cached = cudaload.status().as_dict()["driver"]
    again = cudaload.status(refresh=True).as_dict()["driver"]
    print(json.dumps([first["found"], cached["found"], again["found"], again["version"],
                      again["cuinit"]]))


def refresh_finds_nvjitlink_again(first: str, second: str) -> None:
    """The nvJitLink file reported while the wheel's place holds ``first``, then, after it holds
    ``second`` (a wheel installed meanwhile), without and with refresh: [path, path, path]."""
    from cudaload.bindings import _sites

    import cudaload

    original, chosen = _sites.library, [first]
    _sites.library = lambda which: chosen[0] if which == "nvjitlink" else original(which)
    before = cudaload.status().as_dict()["nvjitlink"]["path"]
    chosen[0] = second
    cached = cudaload.status().as_dict()["nvjitlink"]["path"]
    again = cudaload.status(refresh=True).as_dict()["nvjitlink"]["path"]
    print(json.dumps([before, cached, again]))


SCENARIOS = {f.__name__: f for f in (report, ptx_loadable, probe_raises, driver_init_raises,
                                     remembered_report, refresh_retries,
                                     refresh_finds_nvjitlink_again)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
