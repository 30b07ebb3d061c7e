"""An exclusive lock held through a file, shared by every process that uses the same cache folder.

``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows.  A lock file may be removed by whoever holds
its lock (``cudaload cache prune``/``clear``); a waiter that then wakes holding a lock on the removed
file notices that the path now names another file (or none) and locks again, so removal never lets
two holders in at once.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

__all__ = ["hold", "remove_if_free"]

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
        held, named = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (held.st_ino, held.st_dev) == (named.st_ino, named.st_dev)


@contextlib.contextmanager
def hold(path: str):
    """Hold the lock of ``path`` (created if absent) for the ``with`` block, which gets the file's
    descriptor.  Raises OSError."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            _lock(fd, wait=True)
        except BaseException:
            os.close(fd)
            raise
        if sys.platform == "win32" or _same_file(fd, path):
            break
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def remove_if_free(path: str) -> bool:
    """Delete the lock file ``path`` unless a process holds it; True when it is gone."""
    try:
        fd = os.open(path, os.O_RDWR)
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
