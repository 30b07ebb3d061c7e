"""The per-key locks of a kernel cache folder, shared by every process that uses the folder.

:func:`acquire_key` locks one key.  On POSIX it locks one byte, chosen by the key, of a single file
per folder that each process opens once: no file is created per key, and creating a file was most
of what a cache miss cost (0.1-0.2 ms on ext4).  Two keys that share a byte only wait for each
other.  POSIX byte locks belong to the process, not the thread, so a per-byte thread lock
keeps this process's threads apart.  On Windows it holds a lock file per key (_file_lock.hold).

Imports of cudaload: _file_lock, lifetime (to forget, in a forked child, the threads that held
locks).
"""

from __future__ import annotations

import errno
import os
import sys
import time
import _thread

from ..._base import lifetime
from ..._base._file_lock import hold, open_lock_file

__all__ = ["KEYS_FILE", "acquire_key"]

KEYS_FILE = ".locks"  # the per-folder file whose bytes are the POSIX key locks
_SLOTS = 1 << 31  # bytes to choose from: distinct keys rarely share one


if sys.platform == "win32":
    def acquire_key(folder: str, key: str, mode: int = 0o600):
        """Take the lock of ``key`` (a hex digest) in ``folder``; return the function that releases
        it, which any thread may call.  Raises OSError."""
        held = hold(os.path.join(folder, key + ".lock"))
        held.__enter__()
        return lambda: held.__exit__(None, None, None)
else:
    import fcntl

    _guard = _thread.allocate_lock()
    # Keep this process's threads apart: POSIX byte locks do not.  Two keys whose bytes share a
    # slot here only wait for each other.
    _threads = tuple(_thread.allocate_lock() for _ in range(64))
    _files: dict[str, int] = {}  # folder -> descriptor of its KEYS_FILE
    # Descriptor -> threads waiting for or holding a byte lock through it.  A descriptor whose
    # file was removed (``cudaload cache clear``) is closed only when this drops to zero: closing
    # any descriptor of a file drops every byte lock this process holds on that file.
    _users: dict[int, int] = {}

    def _use_keys_fd(folder: str, replaced: int | None = None, mode: int = 0o600) -> int:
        """The descriptor of ``folder``'s key-lock file, counted as used once more; with
        ``replaced``, a descriptor of a removed file that the caller stops using."""
        with _guard:
            fd = _files.get(folder)
            if fd is None or fd == replaced:
                path = os.path.join(folder, KEYS_FILE)
                try:
                    fd = open_lock_file(path, mode)
                except FileNotFoundError:  # the folder was removed by hand: make it, private
                    os.makedirs(folder, 0o700, exist_ok=True)
                    fd = open_lock_file(path, mode)
                _files[folder] = fd
            _users[fd] = _users.get(fd, 0) + 1
            if replaced is not None:
                _unuse(replaced)
            return fd

    def _unuse(fd: int) -> None:  # with _guard held
        left = _users[fd] - 1
        if left or fd in _files.values():
            _users[fd] = left
        else:
            del _users[fd]
            os.close(fd)

    def _lock_byte(fd: int, byte: int) -> None:
        delay = 0.001
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX, 1, byte)
                return
            except OSError as exc:
                if exc.errno != errno.EDEADLK:
                    raise
            # Linux fails a wait that closes a cycle of processes' record locks, but no cycle
            # here is a deadlock: a thread holds one key at a time and waits for no other while
            # it holds it.  The kernel sees processes, not threads: with thread A of process P
            # holding key a and thread B of P waiting for key b, held by Q, a thread of Q that
            # then waits for a "closes a cycle" P -> Q -> P.  A compiles and releases a, so
            # waiting again succeeds.
            time.sleep(delay)
            delay = min(2 * delay, 0.05)

    def acquire_key(folder: str, key: str, mode: int = 0o600):
        """Take the lock of ``key`` (a hex digest) in ``folder``, whose lock file gets ``mode``
        when made; return the function that releases it, which any thread may call.  Raises
        OSError."""
        byte = int(key[:16], 16) % _SLOTS
        local = _threads[byte % len(_threads)]
        fd = None
        stale = taken = False
        # Everything from the thread lock's acquire to the return is inside the try, each lock
        # noted in the line that takes it: a KeyboardInterrupt between any two lines (Ctrl-C in
        # the main thread) gives back what was taken.  One left taken blocked the key for good,
        # this process's next compile of it included (tests/test_writer.py).
        try:
            taken = local.acquire()
            fd = _use_keys_fd(folder, mode=mode)
            while True:
                try:
                    _lock_byte(fd, byte)
                    linked = os.fstat(fd).st_nlink
                except OSError as exc:
                    # ESTALE: another machine removed the file (``cudaload cache clear`` on a
                    # network filesystem), and this descriptor names nothing now: open the new
                    # file, once.  What fails again is the folder's failure (the caller warns).
                    if exc.errno != errno.ESTALE or stale:
                        raise
                    stale = True
                    fd = _use_keys_fd(folder, replaced=fd, mode=mode)
                    continue
                if linked:  # not removed while we waited
                    break
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, byte)  # the folder was cleared: lock the new file
                fd = _use_keys_fd(folder, replaced=fd, mode=mode)

            def release() -> None:
                try:
                    # A failed unlock (ESTALE: the file's handle went stale on a network
                    # filesystem; EIO) leaves nothing to give back: the lock went with the file,
                    # or goes with the descriptor once closed.  Raised, it would fail a compile
                    # that has its code.
                    try:
                        fcntl.lockf(fd, fcntl.LOCK_UN, 1, byte)
                    except OSError:
                        pass
                finally:
                    local.release()  # first: an interrupt in what follows leaves no thread waiting
                    with _guard:
                        _unuse(fd)
            return release
        except BaseException:
            if taken:
                if fd is not None:
                    _unlock_quietly(fd, byte)  # taken or not: no thread of ours holds the byte
                    with _guard:
                        _unuse(fd)
                local.release()
            raise

    def _unlock_quietly(fd: int, byte: int) -> None:
        try:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, byte)
        except OSError:
            pass

    def _forget_threads() -> None:  # in a forked child no thread holds or waits for anything
        global _guard, _threads
        _guard = _thread.allocate_lock()
        _threads = tuple(_thread.allocate_lock() for _ in _threads)
        for fd in _users:
            _users[fd] = 0

    lifetime.on_fork_in_child(_forget_threads)
