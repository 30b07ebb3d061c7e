"""Atomic writes (cache entries, and the output files a user names), and the worker thread that
takes a miss's writes off the caller's path.

A cache miss costs the caller little besides NVRTC's own time only if its file work happens
elsewhere: creating a file costs 0.1-0.2 ms on ext4, and right after a compile every step runs
with caches NVRTC has evicted, several times slower than warm.  So a miss asks for its temporary
file (:class:`Ahead`) when it takes the key's lock, and a daemon thread creates it while NVRTC
compiles (cffi releases the GIL around NVRTC's calls); the write, the rename and the unlock that
follow the compile are a job for the same thread (:func:`later`).  The key stays locked until the
entry is in place, so another process waiting for that key finds it.  Jobs still queued when the
interpreter exits are run first: at threading's shutdown, which multiprocessing's workers also go
through before their ``os._exit``, and at ``atexit``.  In a child forked after this module was
imported, which may end with a bare ``os._exit``, jobs run on the calling thread.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import queue
import stat
import tempfile
import threading

__all__ = ["PREFIX", "Ahead", "commit", "write_atomic", "check_output", "write_output", "later",
           "drain"]

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


def _mkstemp(folder: str) -> tuple[int, str]:
    try:
        return tempfile.mkstemp(prefix=PREFIX, dir=folder)
    except FileNotFoundError:  # the folder was removed by hand: make it again, private
        os.makedirs(folder, 0o700, exist_ok=True)
        return tempfile.mkstemp(prefix=PREFIX, dir=folder)


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
    fd, tmp = tempfile.mkstemp(prefix=PREFIX, dir=os.path.dirname(target))  # no folder made
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
    """A temporary file in ``folder``, created on the worker thread."""

    __slots__ = ("_folder", "_done", "_made", "_error", "_taken")

    def __init__(self, folder: str):
        self._folder = folder
        self._done = threading.Lock()  # held until the file exists; a Lock costs less than an Event
        self._done.acquire()
        self._made: tuple[int, str] | None = None
        self._error: OSError | None = None
        self._taken = False
        later(self._create)

    def _create(self) -> None:
        try:
            self._made = _mkstemp(self._folder)
        except OSError as exc:  # raised to whoever takes the file
            self._error = exc
        finally:
            self._done.release()

    def take(self) -> tuple[int, str]:
        """(descriptor, path) of the file, now the caller's.  Raises the OSError that creating
        it raised."""
        with self._done:
            self._taken = True
        if self._error is not None:
            raise self._error
        return self._made

    def discard(self) -> None:
        """Remove the file unless it was taken, on the worker thread."""
        if not self._taken:
            self._taken = True
            later(self._remove)

    def _remove(self) -> None:  # runs after _create: one worker, jobs in order
        if self._made is not None:
            fd, tmp = self._made
            with contextlib.suppress(OSError):
                os.close(fd)
                os.unlink(tmp)


_jobs: queue.SimpleQueue = queue.SimpleQueue()
_worker: list = [None]  # the running thread; None before the first job
_starting = threading.Lock()
_forked = [False]


def _work() -> None:
    while True:
        _run(_jobs.get())


def _run(job) -> None:
    try:
        job()
    except BaseException:  # nothing a job raises may stop the thread every later miss waits on
        import traceback

        traceback.print_exc()


def later(job) -> None:
    """Run ``job()`` on the worker thread, after the jobs submitted before it."""
    if _forked[0]:
        _run(job)
        return
    if _worker[0] is None:
        with _starting:
            if _worker[0] is None:
                try:
                    thread = threading.Thread(target=_work, name="cudaload-cache", daemon=True)
                    thread.start()
                except RuntimeError:  # no new threads (the interpreter is shutting down)
                    _run(job)
                    return
                _worker[0] = thread
    _jobs.put(job)


def drain() -> None:
    """Wait until the jobs submitted so far have run."""
    if _worker[0] is not None and not _forked[0] and threading.current_thread() is not _worker[0]:
        done = threading.Event()
        _jobs.put(done.set)
        done.wait()


def _in_child() -> None:
    _forked[0] = True


atexit.register(drain)
try:  # runs before non-daemon threads are joined, also in multiprocessing's workers
    threading._register_atexit(drain)
except (AttributeError, RuntimeError):  # not this Python, or already shutting down
    pass
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_in_child)
