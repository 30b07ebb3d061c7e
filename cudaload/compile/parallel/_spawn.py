"""A child process started with ``os.posix_spawn``, for compile_all's workers (_workers.py).

Not ``subprocess.Popen``: importing subprocess (signal, threading, selectors, ...) cost a fresh
process's first compile_all some 11 ms on 2 cores, on the way to the worker's start, which in a
batch of two short kernels is about what the worker gains.  What Popen does that a worker needs
is done here: the child gets exactly the two pipe ends it is given (as fds ``n`` and ``n + 1``,
said on its command line) and /dev/null as stdin; every other descriptor this process could
hand down (one made inheritable, as close_fds would close) is closed in it; it starts with no
signal blocked (a thread of the caller may have SIGINT blocked: bindings/nvrtc.py); it is
reaped by :meth:`Child.poll`.  The interpreter flags (-O, -E, -s, ...) that multiprocessing
passes on come from subprocess's helper only where the caller was started with some: a process
started without any (``sys.orig_argv``) needs none and imports no subprocess.

Imports of cudaload: nothing.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["Child", "spawn", "interpreter_flags"]


class Child:
    """A spawned process: ``pid``, and ``returncode`` once reaped (as subprocess says: -N for
    signal N)."""

    __slots__ = ("pid", "returncode")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """Its exit code, reaping it if it has ended; None while it runs."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): its code is lost
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> bool:
        """Whether it has ended (and is reaped) within ``timeout`` seconds (None: however long)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.0005
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return True

    def signal(self, number: int) -> None:
        """Send it signal ``number``, unless it has been reaped."""
        if self.poll() is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:  # ended meanwhile: poll() reaps it
                pass


def interpreter_flags() -> list[str]:
    """This interpreter's flags as command-line options for another (see the docstring)."""
    argv = getattr(sys, "orig_argv", None)
    if argv is not None and (len(argv) < 2 or not argv[1].startswith("-")
                             or argv[1] in ("-c", "-m")):
        return []
    import subprocess  # deferred: only a process started with options needs its helper

    return getattr(subprocess, "_args_from_interpreter_flags")()  # private: untyped


def spawn(args: list[str], fds: tuple[int, ...]) -> Child:
    """Start ``sys.executable`` with the interpreter's flags, then ``args`` followed by the
    number ``n`` at which the child finds ``fds`` (``n``, ``n + 1``, ...)."""
    first = max(fds) + 1  # above every source: no move overwrites one not yet moved
    actions: list = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable(fds)]
    actions += [(os.POSIX_SPAWN_DUP2, fd, first + i) for i, fd in enumerate(fds)]
    argv = [sys.executable, *interpreter_flags(), *args, str(first)]
    pid = os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions,
                         setsigmask=())
    return Child(pid)


def _inheritable(keep) -> list[int]:
    """This process's descriptors above stderr that a child would inherit, ``keep`` aside.  One
    another thread makes inheritable after this look is inherited too, as by any posix_spawn."""
    try:
        names = os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd")
    except OSError:
        return []
    found = []
    for name in names:
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                pass
    return found
