"""Atomic writes: cache entries, ``toolchain.json``, bundles, and the output files a user names
(``cudaload compile -o``, ``compile-all``), so it belongs to no one of them.

A file is written to a temporary file beside it (named ``PREFIX``...) and renamed into place, so a
reader sees the old file or the new one, never a part.  :func:`sweep_stale` removes those a
crashed writer left; :func:`sweep_due` does so where no process has in the last hour.

A cache miss's entry is written this way on a thread of its own (compile/cache/writer.py).

Imports of cudaload: _untrusted (to describe what an output path names).
"""

from __future__ import annotations

import errno
import os
import stat
import time

__all__ = ["PREFIX", "STALE_S", "SWEPT", "SWEEP_EVERY_S", "commit", "sweep_stale", "sweep_due",
           "write_atomic", "check_output", "write_output"]

PREFIX = ".tmp-"
STALE_S = 300.0  # no write takes this long: an older temporary file is a crashed writer's
SWEPT = ".swept"  # in a swept folder: its modification time is when it was last swept
# A crashed writer's file left an hour longer costs its bytes; a scan of a folder of 10,000
# entries cost every process's first cache miss 6 ms (a tenth of a short kernel's compile).
SWEEP_EVERY_S = 3600.0


def commit(fd: int, tmp: str, path: str, data: bytes, durable: bool = False,
           mode: int | None = None) -> None:
    """Write ``data`` into the open temporary file ``tmp`` and rename it to ``path``, so readers
    see the old file or the new one, never a part.  Closes ``fd``; removes ``tmp`` on failure.
    Raises OSError.  ``durable`` adds an fsync before the rename; ``mode`` replaces the
    temporary file's 0600."""
    try:
        try:
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)  # before the rename: Windows cannot rename an open file
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def sweep_stale(folder: str, now: float | None = None) -> int:
    """Remove the temporary files in ``folder`` older than ``STALE_S``; return how many.  Here,
    not in compile/cache/pruning.py: a cache miss sweeps its folder once, and needs none of
    pruning's name patterns (nor ``re``, which compiling them imports)."""
    now = time.time() if now is None else now
    removed = 0
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.startswith(PREFIX):
                    try:
                        if now - entry.stat(follow_symlinks=False).st_mtime > STALE_S:
                            os.unlink(entry.path)
                            removed += 1
                    except OSError:
                        pass
    except OSError:
        pass
    return removed


def sweep_due(folder: str) -> int:
    """:func:`sweep_stale` of ``folder`` unless a process swept it less than ``SWEEP_EVERY_S``
    ago (the ``SWEPT`` file's modification time says when; one in the future is not believed);
    return how many files were removed."""
    marker = folder + os.sep + SWEPT
    now = time.time()
    try:
        if 0 <= now - os.stat(marker, follow_symlinks=False).st_mtime < SWEEP_EVERY_S:
            return 0
    except OSError:
        pass  # never swept, or unreadable: sweep
    try:
        os.close(os.open(marker, _CREATE & ~os.O_EXCL, 0o600))
        os.utime(marker, (now, now), follow_symlinks=False)
    except (OSError, NotImplementedError):  # kept unmarked: the next process sweeps again
        pass
    return sweep_stale(folder, now)


# As tempfile.mkstemp opens its files (importing tempfile, with random and shutil, cost 5 ms of
# the first compile in a fresh process): created, never through a symbolic link, private.
_CREATE = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
           | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOINHERIT", 0)
           | getattr(os, "O_BINARY", 0))


def _create(folder: str) -> tuple[int, str]:
    """A new private file named PREFIX + random letters in ``folder``: (descriptor, path).
    Raises OSError."""
    for _attempt in range(100):
        path = os.path.join(folder, PREFIX + os.urandom(8).hex())
        try:
            return os.open(path, _CREATE, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder)


def _mkstemp(folder: str) -> tuple[int, str]:
    try:
        return _create(folder)
    except FileNotFoundError:  # the folder was removed by hand: make it again, private
        os.makedirs(folder, 0o700, exist_ok=True)
        return _create(folder)


def write_atomic(path: str, data: bytes, durable: bool = False, mode: int | None = None) -> None:
    """:func:`commit` ``data`` to ``path`` through a new temporary file beside it.
    Raises OSError."""
    fd, tmp = _mkstemp(os.path.dirname(path))
    commit(fd, tmp, path, data, durable, mode)


def check_output(path: str) -> str:
    """The name a write to the output ``path`` named by a user replaces: ``path`` itself.  A
    symbolic link there is replaced, never written through, so the file it points to (perhaps
    another user's, from a link planted in a shared folder) is left as it is.  Raises OSError
    when ``path`` is anything else but a regular file or absent: renaming over a device or pipe
    (``-o /dev/null``) would replace it, for every user of the system."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        return path
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    from ._untrusted import kind  # deferred: only this path needs it

    raise OSError(errno.EEXIST, f"it is {kind(st.st_mode)}, and only a regular file is replaced",
                  path)


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to the output ``path`` a user named, atomically, as :func:`check_output`
    says: a regular file keeps its mode; a new file, or one replacing a symbolic link, gets the
    mode a new file gets.  Raises OSError."""
    target = check_output(path)
    try:
        st = os.lstat(target)
        mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    except FileNotFoundError:
        mode = None
    fd, tmp = _create(os.path.dirname(target) or ".")  # no folder made
    commit(fd, tmp, target, data, mode=0o666 & ~_umask() if mode is None else mode)


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:  # Linux: read, without changing it for a moment
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
