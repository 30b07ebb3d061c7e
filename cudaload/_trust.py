"""Whether a file or folder of the kernel cache may be believed, judged by who could write it.

The rule is ssh's and pip's: it belongs to this process's user (or root), and neither its group nor
other users may write it.  Anyone who can write the cache folder chooses the code a compile returns
and, through ``toolchain.json``, the library that is loaded into the process, so a folder that
fails the rule is not used at all.

``CUDALOAD_CACHE_SHARED=1`` declares a cache deliberately shared by a group: the folder may then
belong to another user if its group is one of this process's groups, and the group may write it
and its files.  Compiled code from such a folder is used (a member's kernel runs on the GPU, in
this user's context), but no library path is ever taken from it: ``toolchain.json`` is neither
read nor written there.  Nothing that every user may write is ever believed.

Imports nothing of cudaload.

Foundation: imports only other foundation modules of cudaload, if any.
"""

from __future__ import annotations

import os
import stat

__all__ = ["SHARED_ENV", "shared", "problem", "path_problem", "folder_problem", "cache_problem"]

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
