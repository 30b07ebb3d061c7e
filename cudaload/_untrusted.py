"""Reading files and JSON that may be anything: a cache entry, ``toolchain.json``, a bundle.

A path in a folder others could have touched may name a FIFO (opening it for reading waits for a
writer forever), a device (``/dev/zero`` never ends), a symbolic link to either, or a file far
larger than anything cudaload writes; JSON may nest deeper than the parser's recursion allows.
:func:`read_regular` opens without following a final symbolic link and without blocking, and reads
only a regular file within a size bound; :func:`load_json` refuses nesting beyond a depth bound.
Both raise ValueError for what they refuse, so a caller treats it as a damaged file.

Foundation: imports only other foundation modules of cudaload, if any.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat

__all__ = ["kind", "read_regular", "regular_problem", "load_json"]

_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
          | getattr(os, "O_BINARY", 0))
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def kind(mode: int) -> str:
    """What a file of ``mode`` is, in words ("a pipe", "a device"...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path, limit: int, check=None, follow: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` of them).  ``check(stat)`` may
    return why the file is refused; ``follow`` follows a final symbolic link.  Raises OSError
    when it cannot be opened (ELOOP for a symbolic link not followed), ValueError for anything
    but a regular file, a larger one, or one ``check`` refuses."""
    fd = os.open(path, _FLAGS if follow else _FLAGS | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{os.fspath(path)} is {kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{os.fspath(path)} holds {st.st_size} bytes, more than the "
                             f"{limit} expected at most")
        why = check(st) if check is not None else None
        if why:
            raise ValueError(f"{os.fspath(path)} is not to be trusted: {why}")
        chunks, left = [], st.st_size
        while left > 0:  # one read, unless a signal cuts it short
            chunk = os.read(fd, left)
            if not chunk:
                break  # truncated meanwhile: its own checks find it short
            chunks.append(chunk)
            left -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def regular_problem(path, limit: int) -> str | None:
    """Why ``path`` (symbolic links followed) is not a regular file of at most ``limit`` bytes
    that can be looked at, in words with a next step, or None."""
    try:
        st = os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "its symbolic links form a loop. Next step: point the link at the file"
        return f"{err.strerror or err}. Next step: check the path"
    except ValueError as err:  # a NUL in the path
        return f"{err}. Next step: check the path"
    if not stat.S_ISREG(st.st_mode):
        return f"it is {kind(st.st_mode)}, not a regular file. Next step: give a file's path"
    if st.st_size > limit:
        return f"it holds {st.st_size} bytes, more than the {limit} expected at most"
    return None


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(rb"[\[\]{}]")


def load_json(data: bytes, depth: int):
    """``data`` parsed as JSON, refused when arrays and objects nest more than ``depth`` deep.
    Raises ValueError."""
    if data.count(b"[") + data.count(b"{") > depth:  # only then can it nest deeper
        level = 0
        for m in _BRACKET.finditer(_STRING.sub(b'""', data)):
            level += 1 if m.group() in (b"[", b"{") else -1
            if level > depth:
                raise ValueError(f"JSON nested more than {depth} levels deep")
    try:
        return json.loads(data)
    except RecursionError:  # not reached within the bound; kept so no input can raise it
        raise ValueError("JSON nested too deeply") from None
