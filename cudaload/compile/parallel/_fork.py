"""A compile_all worker forked from the calling process, where that is safe: ready in about a
millisecond, with the compile path imported and NVRTC loaded, against some 45-70 ms for a fresh
interpreter on 2 cores (_spawn.py), which in a batch of two short kernels is all a worker gains.

A fork is safe only where the calling process has no other thread (Linux's /proc says so): a
child holds every lock that another thread held at the fork, forever.  Nor where this process has
initialised the CUDA driver (lifetime.mark_unforkable), whose state a child may not use.  And a
fork copies the page tables: some 13 ms for 1 GiB resident, 33 ms for 4 GiB here, so a process
with more than ``MAX_RESIDENT`` resident gets a fresh interpreter instead.

The child inherits what the caller holds open, as any fork does; it lives only while the calling
thread, the process's only one, is inside compile_all, which ends and reaps it before returning,
so the caller's descriptors are never held open by it alone.  Its own pipes aside, it closes the
calling process's ends of every worker's pipes (a worker whose jobs' pipe another child held open
would never see it end).  It ignores SIGINT as a spawned worker does, takes the default action for
every signal the caller handles in Python (the caller's handlers are not the worker's), and ends
with ``os._exit``: neither the caller's exit hooks nor its buffered output, flushed before the
fork, run or are written twice.  Its cache entries are written on its calling thread
(cache/writer.py), before it answers.

Imports of cudaload: lifetime, _spawn (Child).
"""

from __future__ import annotations

import _signal
import os
import sys
import time

from ..._base import lifetime
from ._spawn import Child

__all__ = ["MAX_RESIDENT", "possible", "refusal", "fork", "flush_output"]

MAX_RESIDENT = 2 << 30  # bytes resident above which a fresh interpreter is started instead
SETTLE_LOOKS = 3  # more looks at the thread list, a millisecond apart, before a fork is refused


def possible(settle: bool = False) -> bool:
    """Whether a worker may be a fork of this process now (see the module's docstring); with
    ``settle``, as :func:`refusal` says."""
    return refusal(settle) is None


def refusal(settle: bool = False) -> str | None:
    """Why no worker may be a fork of this process now, in words; None where one may.  With
    ``settle`` (once a batch, not once a worker), a thread that has just ended is waited for."""
    if not (hasattr(os, "fork") and hasattr(_signal, "pthread_sigmask")):
        return "this platform has no fork"
    if lifetime.unforkable():
        return "it has initialised the CUDA driver"
    try:
        threads = os.listdir("/proc/self/task")
        for _ in range(SETTLE_LOOKS if settle else 0):
            if len(threads) == 1:
                break
            # A thread joined a moment ago is still listed while the kernel ends it (its Python
            # join returns first): seen in about 1 of 200 refusals right after a join.
            time.sleep(0.001)
            threads = os.listdir("/proc/self/task")
        if len(threads) != 1:  # no /proc: not known, so not safe
            return f"{len(threads)} threads run in it ({_thread_names(threads)})"
        with open("/proc/self/statm", "rb") as f:
            resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return "/proc does not say how many threads it runs and how much of it is resident"
    if resident > MAX_RESIDENT:
        return f"{resident >> 20} MiB of it are resident, more than {MAX_RESIDENT >> 20} MiB"
    return None


def _thread_names(threads: list[str]) -> str:
    """The names the threads ``threads`` (ids under /proc/self/task) go by, for a refusal."""
    names = []
    for tid in threads:
        try:
            with open(f"/proc/self/task/{tid}/comm", "rb") as f:
                names.append(f.read().decode(errors="replace").strip())
        except OSError:  # ended meanwhile
            pass
    return ", ".join(sorted(names))


def fork(child, close: list[int]) -> Child:
    """Fork; in the child, close the descriptors ``close``, call ``child()`` and end (status 0,
    or 1 where it raised).  Raises OSError where the fork fails."""
    flush_output()  # else the child's copy of what is buffered could be written again
    # Every signal held until the child has its own handlers: the caller's Python handler run in
    # the child would raise there, in the caller's code.
    held = _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
    forked = None
    try:
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                _own_signals()
                _signal.pthread_sigmask(_signal.SIG_SETMASK, held)
                for fd in close:
                    os.close(fd)
                child()
                status = 0
                flush_output()  # what the child wrote itself: the caller's was written before
            finally:
                os._exit(status)  # whatever happened: never back in the caller's code
        forked = Child(pid)
    finally:
        try:  # a Ctrl-C that came meanwhile raises here, once the mask is restored
            _signal.pthread_sigmask(_signal.SIG_SETMASK, held)
        except BaseException:  # the caller never learns of the child: it is ended here
            if forked is not None:
                _end(forked, held)
            raise
    return forked


def _end(child: Child, held) -> None:
    """Kill and reap ``child`` with every signal held, and again where a signal handler raised on
    the way (of signals pending together, one handler raises at each check); the first such
    error is raised once it is reaped."""
    late = None
    for _ in range(64):  # each turn reaps it or runs a handler that raised: a few at most
        if child.returncode is not None:
            break
        try:
            _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
            try:
                child.signal(_signal.SIGKILL)
                child.wait()
            finally:
                _signal.pthread_sigmask(_signal.SIG_SETMASK, held)
        except BaseException as exc:  # raised below, once the child is reaped
            late = late or exc
    if late is not None:
        raise late


def flush_output() -> None:
    """Write out what this process holds buffered for stdout and stderr."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # closed, or a pipe nobody reads
            pass


def _own_signals() -> None:
    """In the child: SIGINT ignored (Ctrl-C reaches the whole process group: the caller ends its
    workers), the default action for every other signal the caller handles in Python."""
    for number in _signal.valid_signals():
        try:
            if number != _signal.SIGINT and callable(_signal.getsignal(number)):
                _signal.signal(number, _signal.SIG_DFL)
        except (OSError, ValueError, TypeError):  # one Python cannot set
            pass
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
