"""Atomic writes: cache entries, ``toolchain.json``, bundles, and the output files a user names.

A file is written to a temporary file beside it (named ``PREFIX``...) and renamed into place, so a
reader sees the old file or the new one, never a part.

Creating a file is most of what writing a cache entry costs: 0.1-0.2 ms on a warm ext4, but over
1 ms right after an NVRTC compile has evicted the caches, or on a slow virtual disk (2-3% of a
compile, measured by bench/compile_bench.py).  So a miss asks for its temporary file
(:class:`Ahead`) when it takes the key's lock, and a thread of its own creates it while NVRTC
compiles (cffi releases the GIL around NVRTC's calls); the write, the rename and the unlock follow
NVRTC on the caller's thread, and nothing outlives the compile that asked for it.

Imports of cudaload: _untrusted (to describe what an output path names).

Foundation: imports only other foundation modules of cudaload, if any.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import _thread

__all__ = ["PREFIX", "Ahead", "commit", "write_atomic", "check_output", "write_output"]

PREFIX = ".tmp-"


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
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
    """The file a write to the output ``path`` named by a user replaces (symbolic links
    followed).  Raises OSError when that is anything but a regular file or absent: renaming over a
    device or pipe (``-o /dev/null``) would replace it, for every user of the system."""
    target = os.path.realpath(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(st.st_mode):
        from ._untrusted import kind

        raise OSError(errno.EEXIST, f"it is {kind(st.st_mode)}, and only a regular file is "
                                    "replaced", path)
    return target


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to the output ``path`` a user named, atomically: a regular file gets the
    mode a new file gets (or keeps its own).  Raises OSError, as :func:`check_output` does."""
    target = check_output(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = _create(os.path.dirname(target) or ".")  # no folder made
    commit(fd, tmp, target, data, mode=mode)


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



class Ahead:
    """A temporary file in ``folder``, created on a thread of its own while the caller compiles."""

    __slots__ = ("_done", "_made")

    def __init__(self, folder: str):
        self._made: tuple[int, str] | OSError | None = None
        # _thread, not threading: Thread.start() waits until the new thread runs, which costs
        # what running it here would.
        done = _thread.allocate_lock()
        self._done: _thread.LockType | None = done
        done.acquire()
        try:
            _thread.start_new_thread(self._create, (folder, done))
        except RuntimeError:  # no new threads (the interpreter is shutting down)
            self._create(folder, done)

    def _create(self, folder: str, done: _thread.LockType) -> None:
        try:
            self._made = _mkstemp(folder)
        except OSError as exc:  # raised to whoever takes the file
            self._made = exc
        finally:
            done.release()

    def take(self) -> tuple[int, str] | None:
        """(descriptor, path) of the file, now the caller's; None once taken.  Raises the
        OSError that creating it raised."""
        if self._done is not None:
            with self._done:
                pass
            self._done = None
        made, self._made = self._made, None
        if isinstance(made, OSError):
            raise made
        return made

    def discard(self) -> None:
        """Remove the file unless it was taken."""
        with contextlib.suppress(OSError):
            made = self.take()
            if made is not None:
                os.close(made[0])
                os.unlink(made[1])
