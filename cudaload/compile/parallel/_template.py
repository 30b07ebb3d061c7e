"""compile_all's workers forked from one warm process where the calling process may not fork.

A process that has initialised the CUDA driver, or has another thread, is never forked
(_fork.py): there every worker used to be a fresh interpreter (_spawn.py) that imported the
compile path, loaded NVRTC, found the toolchain and paid NVRTC's first compilation (some 200 ms
on the H200 host's 16 CPUs, against 15-20 ms for each later one) before its first job: 16 workers
cost some 5 CPU-seconds more than compiling the 64-kernel family in turn (bench/family_bench.py).
Instead one fresh interpreter, the *template*, runs the workers' initializer once, then what it
is given to run before the forks (compile_all's: a tiny program compiled, so that NVRTC's first
compilation is behind it), and forks every worker from that state: each is ready in about a
millisecond, and the CPU time over the serial run is one start, not one per worker.

The template is itself a fresh interpreter, single-threaded and without CUDA, so the rules of
_fork.py hold for its forks: it checks them (``_fork.possible()``) before each, and a worker it
may not fork is started as a fresh interpreter by the calling process instead.  The template is
given, when it starts, both pipes of every worker it forks (the calling process keeps its own
ends), and a pipe each way to the caller: a fork closes every descriptor but its own two, and
the template closes a worker's two once it has forked it, so a worker's end is seen as it exits.

A worker is the template's child, not the caller's: the caller signals it by its pid, which
stays the worker's because the template reaps a worker only when the caller asks
(:meth:`Template.reap`), and tells the caller its exit status.  The template leaves once the
caller closes its pipe (also when the caller dies); workers it had not reaped are reaped by
init, and a worker waiting for a job leaves once its jobs' pipe ends, as any other.

Imports of cudaload: _log, _messages, _spawn; _fork, in the template (whose life _workers starts)
and where its log is on.
"""

from __future__ import annotations

import _signal
import os
import sys

from ..._base import _log
from ._messages import frame as _frame, read as _read, write as _write
from ._spawn import Child, spawn

__all__ = ["Template", "Forked", "start"]

# The template's program: as _workers._BOOT, with the number of workers before the descriptors.
_BOOT = ("import _signal,sys;_signal.signal(_signal.SIGINT,_signal.SIG_IGN);"
         "sys.path[:]=sys.argv[1:-2];from cudaload.compile.parallel._workers import _templated;"
         "_templated(int(sys.argv[-1]),int(sys.argv[-2]))")


def start(names: tuple, n: int) -> tuple:
    """(the Template, the (jobs, answers, Forked) of each worker it forked) for ``n`` workers
    started as ``names`` says (see :meth:`Template.start`); (None, []) where no template
    starts.  The ``compile`` topic's log says how many it forked, and why not the others."""
    template = Template()
    try:
        made = [made for made in template.start(names, n) if made is not None]
    except OSError as exc:  # no template: each worker started on its own, as before
        _say(0, n, [f"the template did not start: {exc}"])
        return None, []
    _say(len(made), n, template.refused)
    return template, made


def _say(forked: int, n: int, refused: list[str]) -> None:
    """Log, on the ``compile`` topic, how many of ``n`` workers the template forked and why it
    did not fork the others."""
    if _log.enabled("compile"):
        from . import _fork  # deferred: imported by whoever asked for a template already

        _log.debug("compile", "compile_all: no worker is a fork of this process (%s): %d of %d "
                   "forked from a template process%s", _fork.refusal(), forked, n,
                   f"; the others start as fresh interpreters: {'; '.join(sorted(set(refused)))}"
                   if refused else "", forked=forked, refused=refused)


class Forked:
    """A worker the template forked, for _workers._Process as a _spawn.Child is: ``pid``, and
    ``returncode`` once the template has reaped it."""

    __slots__ = ("pid", "returncode", "_template")

    def __init__(self, pid: int, template: Template) -> None:
        self.pid, self._template = pid, template
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """Its exit code, reaped by the template if it has ended; None while it runs."""
        self.wait(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> bool:
        """Whether it has ended (and is reaped) within ``timeout`` seconds (None: however long)."""
        if self.returncode is None:
            self.returncode = self._template.reap(self.pid, timeout)
        return self.returncode is not None

    def signal(self, number: int) -> None:
        """Send it signal ``number`` while it is not reaped (its pid is not another's)."""
        if self.returncode is None and self._template.alive():
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:
                pass


class Template:
    """The calling process's side of a template (see the module's docstring)."""

    def __init__(self) -> None:
        self.process: Child | None = None
        self._ctl = self._status = -1
        self.refused: list[str] = []  # why the template forked no worker, for each it did not

    def start(self, start: tuple, n: int) -> list:
        """Start a template that runs ``start`` (target, initializer, initargs, and the function
        and arguments run before the forks, as _workers' names) and forks ``n`` workers; for
        each, (jobs, answers, Forked) -- the caller's ends of its pipes -- or None where the
        template could not fork it.  Raises OSError where the template cannot be started."""
        theirs, mine, pairs = [], [], []
        try:
            ctl_theirs, self._ctl = os.pipe()
            self._status, status_theirs = os.pipe()
            theirs += [ctl_theirs, status_theirs]
            for _ in range(n):
                jobs_theirs, jobs = os.pipe()
                answers, answers_theirs = os.pipe()
                theirs += [jobs_theirs, answers_theirs]
                mine += [jobs, answers]
                pairs.append((jobs, answers))
            self.process = spawn(["-c", _BOOT, *sys.path, str(n)], tuple(theirs))
            # The template's ends closed here before its answers are read: held open, a template
            # that died before it answered would never be seen to end, and this would wait forever.
            while theirs:
                os.close(theirs.pop())
            _write(self._ctl, _frame(start))
            return [self._forked(pair) for pair in pairs]
        except BaseException:  # a KeyboardInterrupt while the template starts too
            for fd in mine:
                _close(fd)
            self.close(kill=True)
            raise
        finally:
            for fd in theirs:
                os.close(fd)

    def _forked(self, pair: tuple):
        """The next worker the template says it forked, on ``pair``; None (the pair closed) where
        it could not, and why kept in :attr:`refused`."""
        try:
            pid = _read(self._status)
        except (EOFError, OSError):  # the template died first
            # Its pipe ends as it exits, a moment before it can be reaped: its status is known
            # once it is (a template alive with its pipe closed is not: its status is unknown).
            process = self.process
            status = process.returncode if process is not None and process.wait(1.0) \
                else "unknown"
            pid = f"the template ended before it forked them (exit status {status})"
        if isinstance(pid, int) and pid > 0:
            return (*pair, Forked(pid, self))
        self.refused.append(str(pid))
        for fd in pair:
            os.close(fd)
        return None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def reap(self, pid: int, timeout: float | None) -> int | None:
        """The exit code of the worker ``pid`` once it has ended within ``timeout`` seconds
        (None: however long), or None; 0 where the template is gone (init reaps its workers:
        the code is lost, as _spawn.Child says for a process reaped elsewhere)."""
        try:
            _write(self._ctl, _frame((pid, timeout)))
            return _read(self._status)
        except (EOFError, OSError):
            return 0

    def close(self, kill: bool = False) -> None:
        """Let the template leave (its pipe closed: it exits at once) and reap it."""
        for fd in (self._ctl, self._status):
            _close(fd)
        self._ctl = self._status = -1
        if self.process is not None:
            if kill:
                self.process.signal(_signal.SIGKILL)
            self.process.wait()


def _close(fd: int) -> None:
    if fd >= 0:
        os.close(fd)


def serve(first: int, n: int, started) -> None:
    """The template's life (``_BOOT``, through _workers): ``started(ctl)`` reads the start
    message from the caller's pipe and runs it, giving the function each fork then runs with
    its jobs' and answers' descriptors; ``n`` workers forked, then the caller's requests to
    reap them."""
    fds = list(range(first, first + 2 + 2 * n))
    for fd in fds:
        os.set_inheritable(fd, False)
    ctl, status = fds[:2]
    worker = started(ctl)
    for i in range(n):
        jobs, answers = fds[2 + 2 * i], fds[3 + 2 * i]
        open_now = [ctl, status, *fds[2 + 2 * i:]]
        _write(status, _frame(_fork_one(lambda: worker(jobs, answers), open_now, (jobs, answers))))
        os.close(jobs)
        os.close(answers)
    _reaping(ctl, status)


def _fork_one(child, open_now: list, keep: tuple) -> int | str:
    """The pid of a fork that runs ``child()`` with only ``keep`` of ``open_now`` open, or why
    no fork is made (_fork.py's rules) or it failed."""
    from . import _fork  # deferred: imported by the template alone

    refusal = _fork.refusal()
    if refusal is not None:
        return f"the template may not fork: {refusal}"
    try:
        return _fork.fork(child, [fd for fd in open_now if fd not in keep]).pid
    except (OSError, RuntimeError) as exc:
        return f"the template's fork failed: {exc}"


def _reaping(ctl: int, status: int) -> None:
    """Answer each (pid, timeout) of the caller with the worker's exit code, or None while it
    runs; leave when the caller's pipe ends."""
    children: dict[int, Child] = {}
    while True:
        try:
            pid, timeout = _read(ctl)
        except EOFError:
            os._exit(0)  # nothing of the caller's to run: the template ran its initializer only
        child = children.setdefault(pid, Child(pid))
        _write(status, _frame(child.returncode if child.wait(timeout) else None))
