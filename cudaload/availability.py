"""Whether CUDA works here, and if not, why: ``is_available()``, ``status()`` and the report.

Neither function raises, whatever the machine: each section of the report (driver, devices, NVRTC)
is probed on its own, and any failure, expected or not, becomes an entry of ``problems`` with a
hint that names the next step.  ``status(refresh=True)`` probes again, retrying a library that
failed to open (after ``CUDALOAD_LIBCUDA`` was set, say); a failed ``cuInit`` stays failed, as the
driver answers the same for the life of the process.
"""

from __future__ import annotations

import _thread
import os

from ._base import lifetime
from .bindings import _loader
from .errors import CudaLoadError, DriverError, LibraryLoadError, MissingSymbolError

__all__ = ["is_available", "status", "Status"]

_LOADING_MODES = {"CU_MODULE_EAGER_LOADING": "eager", "CU_MODULE_LAZY_LOADING": "lazy"}
_REPORT_BUG = ("this is a bug in cudaload: please report it with the output of "
               "`cudaload doctor --json`")

_PROBE_SOURCE = 'extern "C" __global__ void cudaload_probe(float *x) { x[threadIdx.x] = 1.0f; }\n'


def is_available() -> bool:
    """True when the driver loads, ``cuInit`` succeeds and a device is visible; never raises."""
    try:
        from .launch.device import device_count  # deferred: each part of the report, when it runs

        return device_count() > 0
    except Exception:
        return False


class Status:
    """The availability report: ``str()`` is for people, ``as_dict()`` for programs (JSON-ready)."""

    def __init__(self, report: dict):
        self._report = report

    @property
    def available(self) -> bool:
        return self._report["available"]

    @property
    def problems(self) -> list[dict]:
        return [dict(p) for p in self._report["problems"]]

    def as_dict(self) -> dict:
        """A copy of the report; docs/api.md lists its keys."""
        import copy  # deferred: each part of the report, when it runs

        return copy.deepcopy(self._report)

    def __repr__(self):
        return f"<Status available={self.available} problems={len(self._report['problems'])}>"

    def __str__(self):
        from ._report import text  # deferred: each part of the report, when it runs

        return text(self._report)


_cached: Status | None = None
_lock = _thread.allocate_lock()


def status(refresh: bool = False) -> Status:
    """Probe the driver, devices and NVRTC once (again with ``refresh=True``); never raises."""
    global _cached
    with _lock:
        if _cached is None or refresh:
            if refresh:
                lifetime.forget_found()  # each module imported so far registered what it found
            try:
                _cached = Status(_probe())
            except Exception as exc:  # _probe guards each section; this is the last line of defence
                _cached = Status(_empty_report([_unexpected("the status report", exc)]))
    return _cached


def _empty_report(problems: list) -> dict:
    return {
        "available": False,
        "driver": {"found": False, "refused": False, "path": None, "found_via": None,
                   "version": None, "cuinit": None, "error": None},
        "nvrtc": {"found": False, "refused": False, "path": None, "found_via": None,
                  "version": None, "supported_archs": [], "builtins": None, "header_dirs": {},
                  "error": None},
        "nvjitlink": {"found": False, "refused": False, "path": None, "found_via": None,
                      "cuda_major": None, "error": None},
        "devices": [],
        "ptx_loadable": None,
        "module_loading_mode": None,
        "problems": problems,
    }


def _probe() -> dict:
    report = _empty_report([])
    problems = report["problems"]
    driver_version = _probe_driver(report, problems)
    nvrtc_version = _probe_nvrtc(report["nvrtc"], problems)
    _probe_nvjitlink(report["nvjitlink"], problems, nvrtc_version)
    if driver_version and nvrtc_version:
        report["ptx_loadable"] = _ptx_loadable(driver_version, nvrtc_version, problems)
    report["available"] = report["driver"]["cuinit"] == "CUDA_SUCCESS" and bool(report["devices"])
    return report


def _problem(what: str, hint: str) -> dict:
    return {"what": what, "hint": hint}


def _unexpected(section: str, exc: BaseException) -> dict:
    return _problem(f"probing {section} raised {type(exc).__name__}: {exc}", _REPORT_BUG)


def _error_problem(err: CudaLoadError, default_hint: str = _REPORT_BUG) -> dict:
    """The problem entry for a cudaload error met while probing: what it says happened, and its
    next step."""
    what = err.args[0] if err.args else ""
    return _problem(what.strip().rstrip(".").rstrip(), err.hint.strip().rstrip(".") or default_hint)


def _record(name: str, section: dict | None, problems: list, exc: Exception,
            default_hint: str = _REPORT_BUG) -> None:
    """Note a failure while probing library ``name`` ("cuda" or "nvrtc") in the report."""
    if isinstance(exc, CudaLoadError):
        error, problem = str(exc), _error_problem(exc, default_hint)
    elif isinstance(exc, ImportError):  # a broken installation: cffi itself is missing
        error = f"{type(exc).__name__}: {exc}"
        problem = _problem(f"cudaload cannot run here: {exc}",
                           "reinstall cudaload with its dependencies: pip install "
                           "--force-reinstall cudaload (it needs cffi and cuda-pathfinder)")
    else:
        error = f"{type(exc).__name__}: {exc}"
        problem = _unexpected({"cuda": "the CUDA driver", "nvrtc": "NVRTC"}.get(name, name), exc)
    if section is not None:
        section["error"] = error
        # a file was there, but the loader refused it or it is not the library
        section["refused"] = isinstance(exc, (LibraryLoadError, MissingSymbolError))
    problems.append(problem)


def _open(name: str, section: dict, problems: list):
    """The library through the loader, its place noted in ``section``; None when it did not load."""
    try:
        library = _loader.driver() if name == "cuda" else _loader.nvrtc()
    except Exception as exc:
        _record(name, section, problems, exc)
        return None
    section.update(found=True, path=library.path, found_via=library.found_via)
    return library


def _probe_driver(report: dict, problems: list) -> int:
    """Fill the driver, devices and loading-mode parts; return the driver's CUDA version or 0."""
    section = report["driver"]
    if _open("cuda", section, problems) is None:
        return 0
    version = 0
    try:
        from .bindings import driver  # deferred: each part of the report, when it runs

        version = driver.version()
        section["version"] = driver.format_version(version) if version else None
        drv = driver.init()
        section["cuinit"] = "CUDA_SUCCESS"
    except DriverError as err:
        section["cuinit"] = err.name
        section["error"] = str(err)
        problems.append(_problem(
            f"cuInit failed: {err.name}: {err.message}",
            err.hint or "check `nvidia-smi`; after a driver upgrade, reboot (kernel module and "
                        "library must match)"))
        return version
    except Exception as exc:  # e.g. ForkedProcessError: used after fork()
        _record("cuda", section, problems, exc)
        return version
    try:
        report["devices"] = _probe_devices(problems)
        mode = drv.ffi.new("CUmoduleLoadingMode *")
        if not drv.cuModuleGetLoadingMode(mode):
            name = drv.ffi.string(drv.ffi.cast("CUmoduleLoadingMode", mode[0]))  # or the number
            report["module_loading_mode"] = _LOADING_MODES.get(name, name)
    except Exception as exc:  # e.g. a driver too old for an entry point the probe uses
        _record("cuda", None, problems, exc)
    return version


def _probe_devices(problems: list) -> list[dict]:
    # deferred: each part of the report, when it runs
    # deferred: each part of the report, when it runs
    # deferred: each part of the report, when it runs
    # deferred: each part of the report, when it runs
    from .launch.device import Device, visible_devices

    count = visible_devices()  # device_count() would hide why it cannot say
    if count == 0:
        problems.append(_problem("the driver initialised but reports no device",
                                 "check CUDA_VISIBLE_DEVICES (empty or invalid hides every GPU) "
                                 "and `nvidia-smi`"))
        return []
    devices = []
    for index in range(count):
        try:
            dev = Device(index)
            devices.append({"index": index, "name": dev.name,
                            "compute_capability": list(dev.compute_capability),
                            "total_memory": dev.total_memory,
                            "multiprocessors": dev.attribute(
                                "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")})
        except CudaLoadError as err:
            problems.append(_problem(f"device {index} could not be queried: {err}",
                                     "check `nvidia-smi` for this GPU's state (Xid errors, "
                                     "fallen off the bus)"))
    return devices


def _probe_nvrtc(section: dict, problems: list) -> tuple[int, int] | None:
    """Fill the NVRTC part; return its (major, minor) version or None.

    The toolchain remembered beside the kernel cache (revalidated with ``os.stat``) answers without
    importing cuda.pathfinder or mapping libnvrtc, so a repeated report costs milliseconds.
    """
    override = os.environ.get("CUDALOAD_LIBNVRTC")
    if override and not os.path.exists(override):
        _open("nvrtc", section, problems)  # the loader's own "not found", naming the path
        return None
    from .compile import toolchain  # deferred: each part of the report, when it runs

    try:
        tc = toolchain.current()
    except Exception as exc:
        library = _loader.loaded("nvrtc")
        if isinstance(library, _loader.Library):  # it loaded; what failed came after
            section.update(found=True, path=library.path, found_via=library.found_via)
        _record("nvrtc", section, problems, exc)
        return None
    section.update(found=True, path=tc.nvrtc_path, found_via=tc.found_via or None,
                   version=f"{tc.version[0]}.{tc.version[1]}", supported_archs=list(tc.archs))
    # A real compilation is the only proof that libnvrtc-builtins loads; it is run only where
    # NVRTC is loaded anyway.  A remembered NVRTC compiled before; its builtins must still be there.
    if _loader.loaded("nvrtc") is not None:
        section["builtins"] = _builtins_load(section, problems)
    else:
        section["builtins"] = _builtins_present(tc.nvrtc_path, section, problems)
    section["header_dirs"] = _header_dirs(tc, problems)
    return tc.version


def _probe_nvjitlink(section: dict, problems: list, nvrtc_version) -> None:
    """Fill the nvJitLink part.  Only ``Program(lto=True)`` needs nvJitLink, so its absence is no
    problem; a file that cannot be it is, and so is one of another CUDA major than NVRTC, which
    cannot link NVRTC's LTO IR.  It is found as a link finds it, loaded only where no variable or
    wheel names a file (compile/link/_linker.py)."""
    from .compile.link import _linker  # deferred: each part of the report, when it runs
    from .errors import LibraryNotFoundError  # deferred: each part of the report, when it runs

    try:
        path, how = _linker.found()
    except LibraryNotFoundError as exc:
        section["error"] = str(exc)
        return
    except Exception as exc:  # a library that refused to load, or a bug
        _record("nvJitLink", section, problems, exc)
        return
    section.update(path=path, found_via=how)
    problem = _loader.file_problem(path)
    if problem:
        section.update(refused=True, error=f"{path} {problem}")
        problems.append(_problem(f"libnvJitLink at {path} ({how}) {problem}: Program(lto=True) "
                                 "cannot link", _loader.hint("nvjitlink", LibraryLoadError)))
        return
    name = os.path.basename(os.path.realpath(path))
    major = name.partition(".so.")[2].split(".")[0]  # libnvJitLink.so.13(.0.88)
    section.update(found=True, cuda_major=int(major) if major.isascii() and major.isdigit()
                   else None)
    if section["cuda_major"] and nvrtc_version and section["cuda_major"] != nvrtc_version[0]:
        from ._base import releases  # deferred: each part of the report, when it runs

        problems.append(_problem(
            f"nvJitLink at {path} is of CUDA {major}, NVRTC of CUDA {nvrtc_version[0]}: it "
            "cannot link NVRTC's LTO IR, so Program(lto=True) fails",
            f"{releases.pip_install(releases.linker_requirement(nvrtc_version))}, and unset "
            "CUDALOAD_LIBNVJITLINK if it names this file"))


_HEADER_SETS = {"cudart": ("CUDA's runtime headers", "cuda_fp16.h, cuda_runtime.h, "
                                                 "cooperative_groups.h, cuComplex.h"),
                "cccl": ("CCCL's headers", "cuda/std/..., cub/..., and cooperative_groups.h, "
                                           "which needs nv/target")}


def _header_dirs(tc, problems: list) -> dict:
    """Each header folder with the release it comes from; a missing set, or one of another CUDA
    major than NVRTC, is a problem whose hint installs the set that matches."""
    from ._base import releases  # deferred: each part of the report, when it runs

    dirs = {}
    for name, path, _ident in tc.headers:
        release = releases.header_release(name, path) if path else None
        dirs[name] = {"path": path, "version": release and releases.format_release(release),
                      "cuda_major": release and release[0]}
        what, used_by = _HEADER_SETS.get(name, (name, "them"))
        fix = releases.pip_install(releases.header_requirement(name, tc.version))
        nvrtc = f"NVRTC {tc.version[0]}.{tc.version[1]}"
        if path is None:
            problems.append(_problem(f"{what} were not found: kernels that include {used_by} "
                                     "will not compile", fix))
        elif release is None or release[0] != tc.version[0]:
            of = f"are from CUDA {release[0]}" if release else "do not say which CUDA they are from"
            problems.append(_problem(
                f"{what} at {path} {of}, but {nvrtc} compiles: kernels that include {used_by} "
                "may not compile, or not as this NVRTC's release would", fix))
    return dirs


_BUILTINS_HINT = ("libnvrtc-builtins must sit next to libnvrtc with the same version: "
                  "pip install --force-reinstall nvidia-cuda-nvrtc")


def _builtins_load(section: dict, problems: list) -> bool:
    """Whether libnvrtc-builtins loads: only a real compilation tells."""
    from .bindings import nvrtc  # deferred: each part of the report, when it runs
    from .errors import NvrtcError  # deferred: each part of the report, when it runs

    try:
        nvrtc.compile(_PROBE_SOURCE, "cudaload_probe.cu", kind="ptx",
                      options=(f"-arch=compute_{min(section['supported_archs'])}",))
        return True
    except NvrtcError as err:
        section["error"] = str(err)
        problems.append(_problem(f"NVRTC cannot compile even a trivial kernel: {err}",
                                 _BUILTINS_HINT))
        return False


def _builtins_present(nvrtc_path: str, section: dict, problems: list) -> bool:
    folder = os.path.dirname(nvrtc_path)
    try:
        present = any(n.startswith(("libnvrtc-builtins", "nvrtc-builtins"))
                      for n in os.listdir(folder))
    except OSError:
        present = False
    if not present:
        section["error"] = f"no libnvrtc-builtins in {folder}: NVRTC cannot compile"
        problems.append(_problem(section["error"], _BUILTINS_HINT))
    return present


def _ptx_loadable(driver_version: int, nvrtc_version: tuple[int, int], problems: list) -> bool:
    # A driver JIT-compiles PTX only up to the PTX ISA of its own CUDA version.
    from .bindings.driver import format_version  # deferred: each part of the report, when it runs

    major, minor = nvrtc_version
    if driver_version >= major * 1000 + minor * 10:
        return True
    dmajor = driver_version // 1000
    package = "nvidia-cuda-nvrtc" if dmajor >= 13 else f"nvidia-cuda-nvrtc-cu{dmajor}"
    older = (f", or use an NVRTC no newer than the driver (pip install "
             f"'{package}=={format_version(driver_version)}.*', and set CUDALOAD_LIBNVRTC to it if "
             f"several are installed)") if dmajor >= 12 else ""
    problems.append(_problem(
        f"PTX from NVRTC {major}.{minor} would not load on this driver (CUDA "
        f"{format_version(driver_version)}): a driver cannot JIT PTX newer than its own CUDA "
        "version",
        f"upgrade the NVIDIA driver to one for CUDA {major}.{minor} or newer{older}"))
    return False
