"""Finding and dlopening libcuda, libnvrtc, libnvJitLink and libnvvm: the one place that does it.

Search order, first success wins:

libcuda
  1. ``CUDALOAD_LIBCUDA``, a full path (nothing else is tried when it is set).
  2. ``libcuda.so.1`` through the system loader.  Never the bare ``libcuda.so`` first: in a toolkit
     that name is the link stub, which loads and then fails every call.
  3. ``/usr/lib/wsl/lib/libcuda.so.1`` (WSL2).  On Windows: ``nvcuda.dll``.

libnvrtc
  1. ``CUDALOAD_LIBNVRTC``, a full path.
  2. The NVRTC the kernel cache remembers compiling with, when its file is unchanged (the caller
     passes it; see toolchain.py): a process compiling a new kernel need not search again.
  3. The wheel in site-packages that cuda.pathfinder would load, found as it finds it without
     importing it (_sites.py), unless a libnvrtc is loaded in the process already.
  4. ``cuda.pathfinder`` (pip wheels, conda, ``CUDA_HOME``/``CUDA_PATH``, the system), imported only
     here, only now: importing it costs tens of milliseconds.

libnvJitLink (only to link a program compiled with link-time optimization)
  The same, with ``CUDALOAD_LIBNVJITLINK``; what is remembered is the file the cache key was made
  with (see compile/link/_linker.py).

libnvvm (only to compile NVVM IR, ``Program(..., code_type="nvvm")``)
  The same, with ``CUDALOAD_LIBNVVM``.

Each library is loaded once per process under a lock.  A failure is remembered and raised again on
each later use (until :func:`forget_failures`), listing every place tried; "not found"
(:class:`LibraryNotFoundError`), "found but refused by the loader" (:class:`LibraryLoadError`) and
"loaded but not the library, or too old" (:class:`MissingSymbolError`) stay distinct.  For the
driver each is also a :class:`CudaUnavailableError` (``DriverNotFoundError``, ``DriverLoadError``,
``NotADriverError``): without it CUDA cannot be used at all, while a missing NVRTC only stops
compiling.
"""

from __future__ import annotations

import _thread
import os
import stat
import sys

from .._base import _log, lifetime
from ..errors import (CudaLoadError, DriverLoadError, DriverNotFoundError, LibraryLoadError,
                      LibraryNotFoundError, MissingSymbolError, NotADriverError)

__all__ = ["Library", "driver", "nvrtc", "nvjitlink", "nvvm", "loaded", "forget_failures",
           "driver_candidates"]

_WSL_LIBCUDA = "/usr/lib/wsl/lib/libcuda.so.1"

# Symbols without which the file cannot be the library it is named for (every release has them).
_REQUIRED = {
    "cuda": ("cuInit", "cuDriverGetVersion", "cuGetErrorName"),
    "nvrtc": ("nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram"),
    "nvjitlink": ("nvJitLinkCreate", "nvJitLinkAddData", "nvJitLinkComplete"),
    "nvvm": ("nvvmVersion", "nvvmCreateProgram", "nvvmCompileProgram"),
}
# Each toolkit library: the variable naming its file, cuda.pathfinder's name for it, and the file
# name used in messages.
_TOOLKIT = {"nvrtc": ("CUDALOAD_LIBNVRTC", "nvrtc", "libnvrtc"),
            "nvjitlink": ("CUDALOAD_LIBNVJITLINK", "nvJitLink", "libnvJitLink"),
            "nvvm": ("CUDALOAD_LIBNVVM", "nvvm", "libnvvm")}


class Library:
    """A loaded library: its cffi ``ffi`` and ``lib``, the file, and how it was found."""

    # A plain class rather than a dataclass: importing dataclasses costs about 8 ms, more than the
    # whole no-driver status() budget.
    __slots__ = ("name", "ffi", "lib", "path", "found_via")

    def __init__(self, name: str, ffi, lib, path: str, found_via: str):
        self.name, self.ffi, self.lib, self.path, self.found_via = name, ffi, lib, path, found_via

    def __repr__(self):
        return f"Library({self.name!r}, path={self.path!r}, found_via={self.found_via!r})"

    def function(self, symbol: str, since: str):
        """Entry point ``symbol``, which releases before ``since`` (e.g. "CUDA 11.2") lack.
        Raises MissingSymbolError saying so, where cffi would raise its own ``ffi.error``."""
        try:
            return getattr(self.lib, symbol)
        except (AttributeError, self.ffi.error):
            raise _missing(self.name, self.path, symbol,
                           f"it is older than {since}, which added it") from None


_lock = _thread.allocate_lock()
_results: dict[str, Library | CudaLoadError] = {}


def driver() -> Library:
    """The CUDA driver library, loaded on first call.  Raises the errors of this module."""
    return _get("cuda")


def nvrtc(remembered: str | None = None) -> Library:
    """The NVRTC library, loaded on first call, trying ``remembered`` (a path known to hold NVRTC:
    the file that loaded when it was remembered, its stat unchanged since, so it is not read
    before dlopen) before searching.  Raises the errors of this module."""
    return _get("nvrtc", remembered)


def nvjitlink(remembered: str | None = None) -> Library:
    """The nvJitLink library, loaded on first call, trying ``remembered`` (as :func:`nvrtc`'s)
    before searching.  Raises the errors of this module."""
    return _get("nvjitlink", remembered)


def nvvm() -> Library:
    """The libNVVM library, loaded on first call.  Raises the errors of this module."""
    return _get("nvvm")


def loaded(name: str) -> Library | CudaLoadError | None:
    """What the first load of ``name`` ("cuda", "nvrtc", "nvjitlink", "nvvm") gave, without
    attempting one."""
    return _results.get(name)


def forget_failures() -> None:
    """Let the next use try again to load each library that failed (a loaded one stays)."""
    with _lock:
        for name, result in list(_results.items()):
            if isinstance(result, CudaLoadError):
                del _results[name]


lifetime.on_forget(forget_failures)


@lifetime.on_fork_in_child
def _forget_failures_in_child() -> None:
    """A forked child looks again too, under a lock of its own (a parent's thread may hold it)."""
    global _lock
    _lock = _thread.allocate_lock()
    forget_failures()


def _get(name: str, remembered: str | None = None) -> Library:
    result = _results.get(name)
    if result is None:
        with _lock:
            result = _results.get(name)
            if result is None:
                try:
                    result = _load(name, remembered)
                    _log.debug("loader", "loaded %s from %s (found via %s)", name, result.path,
                               result.found_via, library=name, path=result.path)
                except CudaLoadError as err:
                    _log.debug("loader", "could not load %s: %s", name, err, library=name)
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


FROM_WHEEL = "site-packages, where cuda.pathfinder looks first"  # how a wheel's library is found
REMEMBERED = "remembered by the kernel cache"


def toolkit_override(name: str) -> str | None:
    """The file ``CUDALOAD_LIBNVRTC`` / ``_LIBNVJITLINK`` / ``_LIBNVVM`` names for ``name``."""
    return os.environ.get(_TOOLKIT[name][0]) or None


def _toolkit_candidates(name: str, remembered: str | None):
    """The (file, how found) pairs tried for toolkit library ``name`` ("nvrtc", "nvjitlink",
    "nvvm"), in order; a generator, so that cuda.pathfinder is imported only when the remembered
    file did not load."""
    variable, pathfinder_name, label = _TOOLKIT[name]
    override = toolkit_override(name)
    if override:
        yield override, variable
        return
    if remembered and os.path.isfile(remembered):
        yield remembered, REMEMBERED
    from . import _sites  # deferred: a remembered library that loads needs no search

    wheel = _sites.library(name)
    if wheel is not None:
        yield wheel, FROM_WHEEL
    try:
        from cuda import pathfinder  # deferred: only this path needs it
    except ImportError as exc:
        raise LibraryNotFoundError(
            f"{label} not found: cuda.pathfinder is not importable ({exc}); "
            f"pip install cuda-pathfinder, or set {variable}",
            library=name, tried=("cuda.pathfinder: not importable",)) from None
    try:
        found = pathfinder.load_nvidia_dynamic_lib(pathfinder_name)
    except Exception as exc:  # pathfinder's errors carry its own list of places searched
        searched = _each_once(str(exc).strip())
        raise LibraryNotFoundError(
            f"{label} not found by cuda.pathfinder: {searched}.",
            hint=hint(name, LibraryNotFoundError),
            library=name, tried=(f"cuda.pathfinder: {searched}",)) from None
    yield found.abs_path, f"cuda.pathfinder ({found.found_via})"


def _each_once(message: str) -> str:
    """cuda.pathfinder's message with each place it searched said once: it lists one search
    per search mode ("...: No such file: libnvrtc.so.13, No such file: libnvrtc.so.13")."""
    head, sep, places = message.partition(": ")
    return head + sep + ", ".join(dict.fromkeys(places.split(", ")))


def _open_ffi(name: str):
    if name == "cuda":
        from ._cuda_ffi import ffi  # deferred: only this path needs it
    elif name == "nvrtc":
        from ._nvrtc_ffi import ffi  # deferred: only this path needs it
    elif name == "nvjitlink":
        from ._nvjitlink_ffi import ffi  # deferred: only this path needs it
    else:
        from ._nvvm_ffi import ffi  # deferred: only this path needs it
    return ffi


def _load(name: str, remembered: str | None = None) -> Library:
    candidates = driver_candidates() if name == "cuda" else _toolkit_candidates(name, remembered)
    ffi = _open_ffi(name)
    tried: list[str] = []
    refused: list[str] = []
    for path, how in candidates:
        # A remembered file is the one that loaded when it was remembered (the caller checked
        # its size, times and inode since): not read again.
        problem = None if how == REMEMBERED else file_problem(path)
        if problem:
            refused.append(f"{path} ({how}): {problem}")
            continue
        try:
            lib = ffi.dlopen(path)
        except OSError as exc:
            reason = str(exc)
            absent = ("/" in path or "\\" in path) and not os.path.exists(path)
            # glibc says "No such file" also for a file of another architecture: trust the file
            # system about whether it exists.
            if absent or (not os.path.exists(path)
                          and ("No such file" in reason or "cannot find" in reason.lower())):
                tried.append(f"{path} ({how}): not found")
            else:
                refused.append(f"{path} ({how}): {reason}")
            continue
        _check_symbols(name, ffi, lib, path)
        return Library(name, ffi, lib, _real_path(path), how)
    attempts = refused + tried
    label = "libcuda" if name == "cuda" else _TOOLKIT[name][2]
    listing = "; ".join(attempts)
    if refused:
        refusal = DriverLoadError if name == "cuda" else LibraryLoadError
        raise refusal(f"{label} was found but could not be loaded: {listing}.",
                      hint=hint(name, LibraryLoadError), library=name, tried=attempts)
    absence = DriverNotFoundError if name == "cuda" else LibraryNotFoundError
    raise absence(f"{label} not found; tried {listing}.",
                  hint=hint(name, LibraryNotFoundError), library=name, tried=attempts)


def hint(name: str, error: type) -> str:
    """The next step after ``error`` (LibraryNotFoundError, LibraryLoadError or
    MissingSymbolError) for library ``name``."""
    from ._load_hints import HINTS  # deferred: a library that loads needs no next step

    return HINTS[name, error]


def file_problem(path: str) -> str | None:
    """Why the file ``path`` cannot be loaded as a library, told without loading it ("is a
    directory, not a shared library"), or None when it may be."""
    kind = _not_a_file(path)
    return f"is {kind}, not a shared library" if kind else _elf_problem(path)


def _not_a_file(path: str) -> str | None:
    """What ``path`` is when it exists but is no regular file: opening a FIFO would block.
    A bare name is the system loader's to search, not a file in the current folder."""
    if "/" not in path and os.sep not in path:
        return None
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # absent, or a name the file system refuses: the loader says
        return None
    if stat.S_ISREG(mode):
        return None
    return "a directory" if stat.S_ISDIR(mode) else "a special file (a pipe, socket or device)"


_ENDIAN = {"<": "little", ">": "big"}
_ELF_MACHINES = {3: "x86 (32-bit)", 40: "ARM (32-bit)", 62: "x86-64", 183: "aarch64 (ARM64)",
                 21: "ppc64", 22: "s390x", 243: "RISC-V"}


def _elf_problem(path: str) -> str | None:
    """Why the ELF file ``path`` cannot be this process's library, or None when it may be.

    Checked before dlopen because glibc maps a truncated library and the process dies of SIGBUS
    when the loader touches the missing pages, and it reports a foreign architecture as "No such
    file".  Only files named by a path are checked; the rest is left to the loader.
    """
    if not sys.platform.startswith("linux") or "/" not in path:
        return None
    from .._base import _elf  # deferred: only a library named by a path is read

    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = f.read(_elf.HEADER_BYTES)
            with open("/proc/self/exe", "rb") as exe:
                ours = exe.read(_elf.HEADER_BYTES)
            if size == 0:
                return "is an empty file, not a shared library"
            if not (start[:4] == _elf.MAGIC or _elf.MAGIC.startswith(start)):
                return f"is not a shared library (no ELF header; {size} bytes)"
            try:
                head = _elf.header(start)
            except _elf.ElfError as err:
                if len(start) < _elf.HEADER_BYTES:  # the file ends within its header
                    return (f"is truncated or damaged: {size} bytes, shorter than an ELF "
                            "header; reinstall it")
                return f"is damaged: {err}; reinstall it"
            try:
                mine = _elf.header(ours)
            except _elf.ElfError:
                mine = None  # this interpreter's own file says nothing: leave it to the loader
            if mine is not None and head.bits != mine.bits:
                return f"is a {head.bits}-bit library, this process is {mine.bits}-bit"
            if mine is not None and head.order != mine.order:
                return (f"is a {_ENDIAN[head.order]}-endian library, this process is "
                        f"{_ENDIAN[mine.order]}-endian")
            if mine is not None and head.machine != mine.machine:
                theirs = _ELF_MACHINES.get(head.machine, f"machine {head.machine}")
                return (f"is built for {theirs}, this process runs on "
                        f"{_ELF_MACHINES.get(mine.machine, 'another')}")
            needed = max(head.program_headers_end(), head.section_headers_end())
            if needed <= size:
                f.seek(head.phoff)
                table = f.read(head.program_headers_end() - head.phoff)
                for kind, offset, _vaddr, filesz in _elf.segments(head, table):
                    if kind == _elf.PT_LOAD:  # the pages the loader maps from the file
                        needed = max(needed, offset + filesz)
    except _elf.ElfError as err:
        return f"is damaged: {err}; reinstall it"
    except OSError:
        return None  # unreadable here: the loader gives its own reason
    if needed > size:
        return (f"is truncated or damaged: its ELF headers describe {needed} bytes but the file "
                f"has {size}; reinstall it")
    return None


def _check_symbols(name: str, ffi, lib, path: str) -> None:
    for symbol in _REQUIRED[name]:
        try:
            getattr(lib, symbol)
        except (AttributeError, ffi.error):  # ABI-mode cffi raises ffi.error for an absent symbol
            label = {"cuda": "the CUDA driver", "nvrtc": "NVRTC", "nvjitlink": "nvJitLink",
                     "nvvm": "libNVVM"}[name]
            # Without a symbol every driver has, the file is no driver: CUDA is unavailable.
            raise _missing(name, path, symbol, f"it is not {label}, or far too old",
                           NotADriverError if name == "cuda" else MissingSymbolError) from None


def _missing(name: str, path: str, symbol: str, why: str,
             cls: type[MissingSymbolError] = MissingSymbolError) -> MissingSymbolError:
    return cls(f"{path} loaded but lacks {symbol}: {why}.", hint=hint(name, MissingSymbolError),
               library=name, symbol=symbol, path=path)


def _real_path(path: str) -> str:
    """The file the loader actually mapped: a soname resolves to a path only after dlopen."""
    if os.path.isabs(path) or not sys.platform.startswith("linux"):
        return path
    from . import _sites  # deferred: only a library named without a folder needs it

    prefix = path.split(".so")[0] + ".so"
    return next((mapped for mapped in _sites.mapped() or () if
                 os.path.basename(mapped).startswith(prefix)), path)
