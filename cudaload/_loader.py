"""Finding and dlopening libcuda and libnvrtc: the one place that does it.

Search order, first success wins:

libcuda
  1. ``CUDALOAD_LIBCUDA``, a full path (nothing else is tried when it is set).
  2. ``libcuda.so.1`` through the system loader.  Never the bare ``libcuda.so`` first: in a toolkit
     that name is the link stub, which loads and then fails every call.
  3. ``/usr/lib/wsl/lib/libcuda.so.1`` (WSL2).  On Windows: ``nvcuda.dll``.

libnvrtc
  1. ``CUDALOAD_LIBNVRTC``, a full path.
  2. ``cuda.pathfinder`` (pip wheels, conda, ``CUDA_HOME``/``CUDA_PATH``, the system), imported only
     here, only now: importing it costs tens of milliseconds.

Each library is loaded once per process under a lock.  A failure is remembered and raised again on
each later use, listing every place tried; "not found" (:class:`LibraryNotFoundError`), "found but
refused by the loader" (:class:`LibraryLoadError`) and "loaded but not the library, or too old"
(:class:`MissingSymbolError`) stay distinct.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

from .errors import CudaLoadError, LibraryLoadError, LibraryNotFoundError, MissingSymbolError

__all__ = ["Library", "driver", "nvrtc", "loaded", "driver_candidates"]

_WSL_LIBCUDA = "/usr/lib/wsl/lib/libcuda.so.1"

# Symbols without which the file cannot be the library it is named for (every release has them).
_REQUIRED = {
    "cuda": ("cuInit", "cuDriverGetVersion", "cuGetErrorName"),
    "nvrtc": ("nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram"),
}

_HINTS = {
    "cuda": ("install the NVIDIA driver (it provides libcuda.so.1), or set CUDALOAD_LIBCUDA to the "
             "full path of libcuda.so.1"),
    "nvrtc": ("pip install 'cudaload[nvrtc]' (the nvidia-cuda-nvrtc wheel), or set "
              "CUDALOAD_LIBNVRTC to the full path of libnvrtc.so"),
}


@dataclass(frozen=True)
class Library:
    """A loaded library: its cffi ``ffi`` and ``lib``, the file, and how it was found."""

    name: str
    ffi: object
    lib: object
    path: str
    found_via: str


_lock = threading.Lock()
_results: dict[str, Library | CudaLoadError] = {}


def driver() -> Library:
    """The CUDA driver library, loaded on first call.  Raises the errors of this module."""
    return _get("cuda")


def nvrtc() -> Library:
    """The NVRTC library, loaded on first call.  Raises the errors of this module."""
    return _get("nvrtc")


def loaded(name: str) -> Library | CudaLoadError | None:
    """What the first load of ``name`` ("cuda" or "nvrtc") gave, without attempting one."""
    return _results.get(name)


def _get(name: str) -> Library:
    result = _results.get(name)
    if result is None:
        with _lock:
            result = _results.get(name)
            if result is None:
                try:
                    result = _load(name)
                except CudaLoadError as err:
                    result = err
                _results[name] = result
    if isinstance(result, CudaLoadError):
        raise result.with_traceback(None)
    return result


def driver_candidates() -> list[tuple[str, str]]:
    """The (file, how found) pairs tried for libcuda, in order."""
    override = os.environ.get("CUDALOAD_LIBCUDA")
    if override:
        return [(override, "CUDALOAD_LIBCUDA")]
    if sys.platform == "win32":
        return [("nvcuda.dll", "system loader")]
    return [("libcuda.so.1", "system loader"), (_WSL_LIBCUDA, "WSL folder")]


def _nvrtc_candidates() -> list[tuple[str, str]]:
    override = os.environ.get("CUDALOAD_LIBNVRTC")
    if override:
        return [(override, "CUDALOAD_LIBNVRTC")]
    try:
        from cuda import pathfinder
    except ImportError as exc:
        raise LibraryNotFoundError(
            f"libnvrtc not found: cuda.pathfinder is not importable ({exc}); "
            "pip install cuda-pathfinder, or set CUDALOAD_LIBNVRTC",
            library="nvrtc", tried=("cuda.pathfinder: not importable",)) from None
    try:
        found = pathfinder.load_nvidia_dynamic_lib("nvrtc")
    except Exception as exc:  # pathfinder's errors carry its own list of places searched
        raise LibraryNotFoundError(
            f"libnvrtc not found by cuda.pathfinder: {exc}. Next step: {_HINTS['nvrtc']}",
            library="nvrtc", tried=(f"cuda.pathfinder: {exc}",)) from None
    return [(found.abs_path, f"cuda.pathfinder ({found.found_via})")]


def _open_ffi(name: str):
    if name == "cuda":
        from ._cuda_ffi import ffi
    else:
        from ._nvrtc_ffi import ffi
    return ffi


def _load(name: str) -> Library:
    candidates = driver_candidates() if name == "cuda" else _nvrtc_candidates()
    ffi = _open_ffi(name)
    tried: list[str] = []
    refused: list[str] = []
    for path, how in candidates:
        if os.path.isdir(path):
            refused.append(f"{path} ({how}): is a directory, not a shared library")
            continue
        try:
            lib = ffi.dlopen(path)
        except OSError as exc:
            reason = str(exc)
            absent = ("/" in path or "\\" in path) and not os.path.exists(path)
            if absent or "No such file" in reason or "cannot find" in reason.lower():
                tried.append(f"{path} ({how}): not found")
            else:
                refused.append(f"{path} ({how}): {reason}")
            continue
        _check_symbols(name, lib, path)
        return Library(name, ffi, lib, _real_path(path), how)
    attempts = refused + tried
    label = "libcuda" if name == "cuda" else "libnvrtc"
    listing = "; ".join(attempts)
    if refused:
        raise LibraryLoadError(
            f"{label} was found but could not be loaded: {listing}. Next step: {_HINTS[name]}",
            library=name, tried=attempts)
    raise LibraryNotFoundError(
        f"{label} not found; tried {listing}. Next step: {_HINTS[name]}",
        library=name, tried=attempts)


def _check_symbols(name: str, lib, path: str) -> None:
    for symbol in _REQUIRED[name]:
        try:
            getattr(lib, symbol)
        except AttributeError:
            label = "the CUDA driver" if name == "cuda" else "NVRTC"
            raise MissingSymbolError(
                f"{path} loaded but lacks {symbol}: it is not {label}, or far too old. "
                f"Next step: {_HINTS[name]}", library=name, symbol=symbol, path=path) from None


def _real_path(path: str) -> str:
    """The file the loader actually mapped: a soname resolves to a path only after dlopen."""
    if os.path.isabs(path) or not sys.platform.startswith("linux"):
        return path
    prefix = path.split(".so")[0] + ".so"
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                mapped = line.split(None, 5)[-1].strip()
                if os.path.basename(mapped).startswith(prefix):
                    return mapped
    except OSError:
        pass
    return path
