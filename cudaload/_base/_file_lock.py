"""Exclusive locks held through a whole file, shared by every process that opens the same path.

:func:`hold` locks a file: ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows.  A lock file
may be removed by whoever holds its lock (``cudaload cache prune``/``clear``); a waiter that then
wakes holding a lock on the removed file notices that the path now names another file (or none)
and locks again, so removal never lets two holders in at once.  ``toolchain.json`` is written
under one (compile/toolchain.py), and so is a kernel cache key on Windows (compile/cache/locks.py).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time

__all__ = ["hold", "remove_if_free", "open_lock_file"]

# Never through a symbolic link (one planted in the folder would have the lock file created, as
# whoever runs this, wherever it points), never waiting to open a pipe.
_NOT_THROUGH = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
    | getattr(os, "O_CLOEXEC", 0)


def open_lock_file(path: str, mode: int = 0o600, create: bool = True) -> int:
    """A descriptor of the lock file ``path``, open for writing.  Raises OSError, also when
    ``path`` is a symbolic link or anything but a regular file."""
    fd = os.open(path, os.O_RDWR | _NOT_THROUGH | (os.O_CREAT if create else 0), mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file, so not a lock file", path)
        if mode & 0o070 and (st.st_mode & 0o777) != mode and st.st_uid == _euid() \
                and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # a group's shared folder: its members lock through it too
    except BaseException:
        os.close(fd)
        raise
    return fd


def _euid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0

if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int, wait: bool) -> bool:
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return True
            except OSError:
                if not wait:
                    return False
                time.sleep(0.01)
else:
    import fcntl

    def _lock(fd: int, wait: bool) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False


def _same_file(fd: int, path: str) -> bool:
    try:
        held, named = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (held.st_ino, held.st_dev) == (named.st_ino, named.st_dev)


class hold:
    """Hold the lock of ``path`` (created if absent) for the ``with`` block, which gets the file's
    descriptor.  Raises OSError.  (A class rather than contextlib.contextmanager: a cache miss
    imports this module, and importing contextlib cost a fresh process's first compile 1 ms.)"""

    __slots__ = ("path", "fd")

    def __init__(self, path: str):
        self.path = path

    def __enter__(self) -> int:
        path = self.path
        while True:
            fd = open_lock_file(path)
            try:
                _lock(fd, wait=True)
            except BaseException:
                os.close(fd)
                raise
            if sys.platform == "win32" or _same_file(fd, path):
                break
            os.close(fd)
        self.fd = fd
        return fd

    def __exit__(self, *_exc) -> None:
        os.close(self.fd)  # closing the descriptor releases the lock


def remove_if_free(path: str) -> bool:
    """Delete the lock file ``path`` unless a process holds it; True when it is gone."""
    try:
        fd = open_lock_file(path, create=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not _lock(fd, wait=False):
            return False
        if sys.platform == "win32":
            return False  # Windows cannot delete an open file; an idle lock file costs nothing
        if _same_file(fd, path):
            os.unlink(path)
        return True
    finally:
        os.close(fd)
