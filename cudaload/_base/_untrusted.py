"""Files others may have written: whether to believe them, judged by who could write them, and
reading them without being stalled or overrun.

Belief.  The rule is ssh's and pip's: a file or folder belongs to this process's user (or root),
and neither its group nor other users may write it.  Anyone who can write the cache folder chooses
the code a compile returns and, through ``toolchain.json``, the library that is loaded into the
process, so a folder that fails the rule is not used at all.  ``CUDALOAD_CACHE_SHARED=1`` declares
a cache deliberately shared by a group: the folder may then belong to another user if its group is
one of this process's groups, and the group may write it and its files.  Compiled code from such a
folder is used (a member's kernel runs on the GPU, in this user's context), but no library path is
ever taken from it: ``toolchain.json`` is neither read nor written there.  Nothing that every user
may write is ever believed.

Reading.  A path in a folder others could have touched may name a FIFO (opening it for reading
waits for a writer forever), a device (``/dev/zero`` never ends), a symbolic link to either, or a
file far larger than anything cudaload writes; JSON may nest deeper than the parser's recursion
allows.  :func:`read_regular` opens without following a final symbolic link and without blocking,
and reads only a regular file within a size bound; :func:`load_json` refuses nesting beyond a depth
bound.  Both raise ValueError for what they refuse, so a caller treats it as a damaged file.
:func:`dump_json` writes the JSON that :func:`load_json` reads back, as ``json.dumps`` does.
"""

from __future__ import annotations

import os
import stat

try:
    import _json as _json_c  # json's own C codec, without json itself (see _parse_json)
except ImportError:  # another Python: json itself is used
    _json_c = None  # type: ignore[assignment]  # a module or None

__all__ = ["SHARED_ENV", "shared", "problem", "path_problem", "folder_problem", "cache_problem",
           "kind", "read_regular", "regular_problem", "load_json", "dump_json"]

SHARED_ENV = "CUDALOAD_CACHE_SHARED"
_POSIX = hasattr(os, "geteuid")  # Windows has neither owners in st_uid nor these mode bits


def shared() -> bool:
    """Whether the cache folder is declared shared by a group (``CUDALOAD_CACHE_SHARED``)."""
    return os.environ.get(SHARED_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def problem(st, shared_by_group: bool = False) -> str | None:
    """Why a file or folder with the stat result ``st`` cannot be believed, or None."""
    if not _POSIX:
        return None
    mode = st.st_mode
    if mode & stat.S_IWOTH:
        return "every user may write it"
    if shared_by_group:
        return None
    if st.st_uid not in (0, os.geteuid()):
        return f"it belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()})"
    if mode & stat.S_IWGRP:
        return "its group may write it"
    return None


def path_problem(path: str) -> str | None:
    """Why the file at ``path`` (symbolic links followed) cannot be believed, or None; a path
    that cannot be looked at has nothing to believe (its user finds it missing)."""
    try:
        return problem(os.stat(path))
    except (OSError, ValueError):
        return None


def folder_problem(path: str, shared_by_group: bool) -> str | None:
    """Why the existing folder ``path`` cannot be used as a cache folder, or None.  Raises
    OSError when it cannot be looked at (FileNotFoundError: it does not exist)."""
    st = os.stat(path)
    why = problem(st, shared_by_group)
    if why is None and shared_by_group and _POSIX and st.st_uid not in (0, os.geteuid()) \
            and st.st_gid not in (os.getegid(), *os.getgroups()):
        why = (f"it belongs to uid {st.st_uid} and group {st.st_gid}, a group this user is "
               "not in")
    return why


def cache_problem(root: str, entries: str, shared_by_group: bool) -> tuple[str, str] | None:
    """(folder, why) when the cache folder ``root`` or its ``entries`` folder may not be used,
    else None.  Raises FileNotFoundError when ``root`` does not exist yet."""
    for folder in (root, entries):
        try:
            why = folder_problem(folder, shared_by_group)
        except FileNotFoundError:
            if folder == root and not os.path.lexists(root):
                raise
            return None  # no entries folder yet: only this user (or root) can make one in root
        except OSError:
            return None  # not a folder: creating or writing in it fails, and says so
        if why is not None:
            return folder, why
    return None


# ---- reading ----------------------------------------------------------------------------------

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
        import errno  # deferred: only a path that cannot be looked at needs it

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


def load_json(data: bytes, depth: int):
    """``data`` parsed as JSON, refused when arrays and objects nest more than ``depth`` deep.
    Raises ValueError."""
    try:
        value = _parse_json(data)
    except RecursionError:  # beyond what the parser follows, so beyond any bound given here
        raise ValueError("JSON nested too deeply") from None
    # Only text with more brackets than ``depth`` can nest deeper: the value is walked then.
    if data.count(b"[") + data.count(b"{") > depth and _nests_deeper(value, depth):
        raise ValueError(f"JSON nested more than {depth} levels deep")
    return value


def dump_json(value, sort_keys: bool = False) -> str:
    """``json.dumps(value, sort_keys=sort_keys)``, the same text (the records cudaload writes,
    and the identities its keys hash), made by the encoder json.dumps itself uses without
    importing json (see :func:`_parse_json`).  Raises as json.dumps does."""
    if _json_c is None or isinstance(value, str):
        import json  # deferred: another Python's json, or a plain string (json's own rule)

        return json.dumps(value, sort_keys=sort_keys)
    return "".join(_json_c.make_encoder({}, _unserializable, _json_c.encode_basestring_ascii,
                                        None, ": ", ", ", sort_keys, False, True)(value, 0))


class _Decoding:
    """json.loads's own settings (json.decoder.JSONDecoder's defaults), for its C scanner."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__


_BLANK = " \t\n\r"  # JSON's whitespace
# (typeshed types its argument as a scanner; it is any object with json.decoder's attributes)
_SCANNER = _json_c.make_scanner(_Decoding()) if _json_c is not None else None  # type: ignore[arg-type]


def _parse_json(data: bytes):
    """``json.loads(data)``, by the scanner json.loads itself uses: CPython's C scanner, called
    without importing json, which imports re and enum (2-5 ms of a fresh process's first
    compile).  ASCII text, which is all cudaload writes, is scanned so; anything else (text
    json.loads would read as UTF-16 or 32), another Python, and every error go to json.loads
    itself, so the value or the error is always json.loads's own.  (The C scanner reports an
    error through json.decoder, which it does not import: a SystemError where that is absent.)"""
    if _SCANNER is not None and data.isascii() and b"\0" not in data[:2]:
        text = data.decode("ascii")
        start = len(text) - len(text.lstrip(_BLANK))
        try:
            value, end = _SCANNER(text, start)
        except (StopIteration, SystemError, ValueError):
            pass  # json.loads says what is wrong
        else:
            if not text[end:].strip(_BLANK):
                return value
    import json  # deferred: only text the scanner did not take whole needs it

    return json.loads(data)


def _nests_deeper(value, depth: int) -> bool:
    """Whether arrays and objects nest more than ``depth`` deep in the parsed ``value`` (walked
    without recursion: a value may be nested as deep as the parser allows)."""
    todo = [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, (list, dict)):
            level += 1
            if level > depth:
                return True
            todo.extend((v, level) for v in (item.values() if isinstance(item, dict) else item))
    return False


def _unserializable(value):
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")
