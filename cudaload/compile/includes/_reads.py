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
there the key rests on the scan alone.  A traced compilation that NVRTC abandons (a missing
include, a syntax error inside a header) leaves NVRTC's profiler broken for the rest of the
process: its later traces omit headers it read (NVRTC 13.5; its own built-in header among them).
After such a failure the scan is trusted, as with an NVRTC without the option, and every later
compilation still names a trace file of ours, read by nobody: NVRTC's profiler stays on, and a
compilation without the option would write its trace to ``.json`` in the current folder; a trace without the built-in header (broken by a traced failure outside cudaload) is
taken as unknown: nothing that needed it goes to disk.  Where which files were read is not known,
a program naming an include by a macro is kept in no cache (plan.py).

Imports of cudaload: nothing.
"""

from __future__ import annotations

import itertools
import os

__all__ = ["OPTION", "Request", "request", "asked_by", "uncovered", "unsupported", "untraced",
           "mark_unsupported", "mark_broken", "broken"]

OPTION = "--fdevice-time-trace="
_BUILTIN = "__nv_nvrtc_builtin_header.h"  # NVRTC's own, compiled into it
_names = itertools.count()
_unsupported = False  # whether this process's NVRTC refused the option
_broken = False  # whether a traced compilation failed in this process (see above)


def unsupported() -> bool:
    return _unsupported


def broken() -> bool:
    """Whether a traced compilation failed in this process (see above)."""
    return _broken


def untraced() -> bool:
    """Whether this process gets no usable trace from NVRTC: it has no such option, or its
    profiler broke on a traced compilation that failed."""
    return _unsupported or _broken


def mark_unsupported() -> None:
    global _unsupported
    _unsupported = True


def mark_broken() -> None:
    global _broken
    _broken = True


def asked_by(options) -> bool:
    """Whether the caller's own options ask NVRTC for a trace: then no other is asked for, and the
    result is not kept on disk (a hit would write no trace)."""
    return any(OPTION[2:-1] in o for o in options)  # -Xptxas=--fdevice-time-trace=... too


# NVRTC aborts the whole process when it cannot write its trace (LLVM's fatal error): a trace is
# asked for only into a new folder of this process's, with room to spare (a large program's trace
# is ~1 MiB).  One folder per compilation, removed with its trace: worker processes of
# multiprocessing end without running exit handlers, so nothing may wait for the exit.
_ROOM = 64 << 20


def request() -> Request | None:
    """A trace for the next compilation, or None where none can be written safely.  (The folder
    is made with os.mkdir: importing tempfile costs 5-18 ms of a fresh process's first compile.)"""
    parent = os.environ.get("TMPDIR") or "/tmp"
    for _attempt in range(16):
        folder = os.path.join(parent, f"cudaload-trace-{os.getpid()}-{next(_names)}-"
                                      f"{os.urandom(4).hex()}")
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        except OSError:
            return None
        try:
            room = os.statvfs(folder)
        except OSError:
            room = None
        if room is not None and room.f_bavail * room.f_frsize >= _ROOM:
            return Request(folder)
        _remove(folder)
        return None
    return None


def _remove(folder: str) -> None:
    try:
        for entry in os.scandir(folder):
            os.unlink(entry.path)
        os.rmdir(folder)
    except OSError:
        pass


class Request:
    """One compilation's trace: :attr:`option` to pass to NVRTC, then :meth:`names`."""

    __slots__ = ("_folder", "option")

    def __init__(self, folder: str):
        self._folder = folder
        self.option = OPTION + os.path.join(folder, "trace")

    def names(self) -> tuple[str, ...] | None:
        """The header names NVRTC read, or None when the trace is missing or unreadable; the
        trace and its folder are removed."""
        import json  # deferred: here, not at import: a program that needs no trace needs no json

        try:
            with open(os.path.join(self._folder, "trace.json"), "rb") as f:
                events = json.load(f)["traceEvents"]
            names = tuple(e["args"]["detail"] for e in events
                          if isinstance(e, dict) and e.get("name") == "Processing Header File")
        except (OSError, ValueError, KeyError, TypeError):
            return None
        finally:
            _remove(self._folder)
        # NVRTC always reads its built-in header first: a trace without it is a broken one.
        return names if _BUILTIN in names and not _broken else None


def uncovered(names, path_states, headers, toolchain_dirs, cwd: str) -> list[str]:
    """The files in ``names`` (as NVRTC named them, relative to ``cwd``) that are neither
    in-memory ``headers``, nor under ``toolchain_dirs``, nor read files of ``path_states`` (the
    include scan's (path, state) pairs), compared by the file each path leads to."""
    read = {os.path.realpath(path) for path, state in path_states if len(state) == 64}
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
