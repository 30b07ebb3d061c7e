"""NVRTC options that name a file or folder NVRTC opens itself, checked before NVRTC sees them.

NVRTC checks none of these paths first.  A time trace it cannot open (``--fdevice-time-trace=P``,
written to ``P.json``: a missing folder, a folder under /proc or /sys, a folder of that name)
aborts the whole interpreter with SIGABRT; a FIFO where any of these files should be makes it
wait forever; the others fail with an error that names no path.  The checks see the file system
as it is when they run; NVRTC opens the paths at compile time, relative to the current folder.

Imports of cudaload: options (which options name a file).
"""

from __future__ import annotations

import os
import stat

from ..options import FILE_OPTIONS, file_option

__all__ = ["check_files"]

# The kernel's own file systems: no trace or header file of NVRTC's can be made there.
_SYSTEM = ("/proc", "/sys", "/dev")


def check_files(options) -> None:
    """Raise ValueError, naming the option and what to do, for an option whose path NVRTC could
    not use: one under /proc, /sys or /dev, in no folder one can write in (for the files NVRTC
    writes), an existing thing that is no regular file (no folder, for ``--pch-dir``)."""
    for option in options:
        named = file_option(option)
        if named is not None:
            _check(option, *named)


def _check(option: str, name: str, path: str) -> None:
    use, suffix, example = FILE_OPTIONS[name]
    fix = f"e.g. --{name}={example}"
    if name == "time" and path == "-":
        return
    if not path or path == "-":
        raise ValueError(f"option {option!r} names no file: NVRTC needs a path there; give one, "
                         f"{fix}")
    target = path + suffix
    real = os.path.realpath(target)
    where = _system_folder(real)
    if where is not None:
        raise ValueError(f"option {option!r}: {target} is under {where}, which holds the "
                         f"kernel's files, not NVRTC's; name a file in a folder of your own, {fix}")
    if use == "folder":
        if not os.path.isdir(real) or not os.access(real, os.W_OK | os.X_OK):
            raise ValueError(f"option {option!r}: {path} is no folder you can write in; create "
                             f"it first or name another, {fix}")
        return
    if use == "write":
        folder = os.path.dirname(real)
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
            raise ValueError(f"option {option!r}: NVRTC writes {target}, but "
                             f"{os.path.dirname(target) or '.'} is no folder you can write in; "
                             f"create it first or name another, {fix}")
    try:
        mode = os.stat(real).st_mode
    except OSError:  # a file yet to be written, or one NVRTC reports missing
        return
    if not stat.S_ISREG(mode):
        raise ValueError(f"option {option!r}: {target} is no regular file (a folder, FIFO or "
                         f"device, which NVRTC cannot use or would wait on forever); name another "
                         f"file, {fix}")


def _system_folder(real: str) -> str | None:
    for top in _SYSTEM:
        if real == top or real.startswith(top + os.sep):
            return top
    return None
