"""Which header files NVRTC itself read in a compilation, from its device time trace.

The disk key covers the files the include scan (includes.py) finds; the scan repeats NVRTC's
preprocessor and search, and a repetition can be wrong.  NVRTC has no dependency output, but its
time trace (``--fdevice-time-trace=FILE``, which writes ``FILE.json``) has one "Processing Header
File" event for every header it opened, named as NVRTC opened it (``inc/a.h``, ``link/../x.h``,
an in-memory header's name, a toolchain header's full path).  Every compilation whose result could
go to disk asks for the trace, and a file NVRTC read that the key does not cover keeps the result
off the disk: a scan that misses a file costs a compilation, never a stale kernel.  The trace
changes nothing in the code NVRTC makes and costs no measurable time (bench/compile_bench.py).

An NVRTC without the option (it answers NVRTC_ERROR_INVALID_OPTION) is asked once per process;
there the key rests on the scan alone.

Imports of cudaload: nothing.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

import itertools
import json
import os
import stat

__all__ = ["OPTION", "Request", "request", "asked_by", "uncovered", "unsupported",
           "mark_unsupported"]

OPTION = "--fdevice-time-trace="
_BUILTIN = "__nv_nvrtc_builtin_header.h"  # NVRTC's own, compiled into it
_names = itertools.count()
_folder: tuple[int, str] | None = None  # (pid, folder): this process's folder for trace files
_unsupported = False  # whether this process's NVRTC refused the option


def unsupported() -> bool:
    return _unsupported


def mark_unsupported() -> None:
    global _unsupported
    _unsupported = True


def asked_by(options) -> bool:
    """Whether the caller's own options ask NVRTC for a trace: then no other is asked for, and the
    result is not kept on disk (a hit would write no trace)."""
    return any(o.lstrip("-").startswith(OPTION[2:-1]) for o in options)


# NVRTC aborts the whole process when it cannot write its trace (LLVM's fatal error): a trace is
# asked for only into a folder that is there, with room to spare (a large program's is ~1 MiB).
_ROOM = 64 << 20


def _private_folder() -> str | None:
    """A folder only this process writes to (mode 0700), removed when the process exits; None
    where none can be made or its file system is nearly full.  (Made with os.mkdir: importing
    tempfile costs 5-18 ms of a fresh process's first compile.)"""
    global _folder
    try:
        if _folder is None or _folder[0] != os.getpid():  # a forked child makes its own
            _folder = (os.getpid(), _make_folder())
        try:
            st = os.lstat(_folder[1])
        except FileNotFoundError:  # removed by a cleaner of the temporary folder
            os.mkdir(_folder[1], 0o700)
            st = os.lstat(_folder[1])
        # Made again by someone else meanwhile (the temporary folder is shared): not ours.
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        room = os.statvfs(_folder[1])
    except OSError:
        return None
    return _folder[1] if room.f_bavail * room.f_frsize >= _ROOM else None


def _make_folder() -> str:
    import atexit

    parent = os.environ.get("TMPDIR") or "/tmp"
    for _attempt in range(16):
        folder = os.path.join(parent, f"cudaload-reads-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        atexit.register(_remove, folder, os.getpid())
        return folder
    raise FileExistsError(f"no new folder could be made in {parent}")


def _remove(folder: str, owner: int) -> None:
    """Remove ``folder`` and the traces left in it (a compilation cut short leaves its own), in
    the process that made it (a forked child runs its parent's exit handlers too)."""
    if os.getpid() != owner:
        return
    try:
        for entry in os.scandir(folder):
            os.unlink(entry.path)
        os.rmdir(folder)
    except OSError:
        pass


def request() -> Request | None:
    """A trace for the next compilation, or None where none can be written safely."""
    folder = _private_folder()
    return None if folder is None else Request(os.path.join(folder, str(next(_names))))


class Request:
    """One compilation's trace: :attr:`option` to pass to NVRTC, then :meth:`names`."""

    __slots__ = ("_base", "option")

    def __init__(self, base: str):
        self._base = base
        self.option = OPTION + base

    def names(self) -> tuple[str, ...] | None:
        """The header names NVRTC read, or None when the trace is missing or unreadable; the
        trace file is removed."""
        path = self._base + ".json"
        try:
            with open(path, "rb") as f:
                events = json.load(f)["traceEvents"]
            return tuple(e["args"]["detail"] for e in events
                         if isinstance(e, dict) and e.get("name") == "Processing Header File")
        except (OSError, ValueError, KeyError, TypeError):
            return None
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass


def uncovered(names, material, headers, toolchain_dirs, cwd: str) -> list[str]:
    """The files in ``names`` (as NVRTC named them, relative to ``cwd``) that are neither
    in-memory ``headers``, nor under ``toolchain_dirs``, nor read files of ``material`` (the
    include scan's (path, state) pairs), compared by the file each path leads to."""
    read = {os.path.realpath(path) for path, state in material if len(state) == 64}
    toolchain = [os.path.realpath(d).rstrip(os.sep) + os.sep for d in toolchain_dirs]
    missing = []
    for name in dict.fromkeys(names):
        if name == _BUILTIN or name in headers:
            continue
        real = os.path.realpath(os.path.join(cwd, name))
        if real in read or real.startswith(tuple(toolchain)):
            continue
        missing.append(real)
    return missing
