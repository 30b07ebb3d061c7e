"""The processes :func:`compile_all` compiles on: :class:`Workers`, one job at a time each.

Not ``concurrent.futures.ProcessPoolExecutor``: when one of its processes dies (NVRTC crashing on
a program with a segmentation fault, aborting on an option it cannot honour, a kill from outside)
it fails every job not yet finished without saying which one the dead process was running, and
on Python 3.11 its manager thread then failed on a job taken back with ``cancel()``, leaving the
other processes running and the interpreter waiting for them at exit.  Here a process gets its
next job only once it has answered the last, so a process that dies names its job; the others go
on, and a new process takes the dead one's place while jobs remain.

Nor ``multiprocessing``: a worker is a fork of the calling process where that is safe (no other
thread, no CUDA driver initialised, not too large: _fork.py), ready in a millisecond; else a
fork of one template process that is (_template.py), else a fresh interpreter started with
``-c`` (``_BOOT``) and the caller's ``sys.path``, ready in some 45-70 ms on 2 cores (_spawn.py).
Each reads its jobs from one pipe and writes its answers to another (_messages.py).  A
multiprocessing "spawn" process imports multiprocessing, pickle and socket before it runs
anything, and the caller imports multiprocessing to start it: 60 ms or more on a 2-core machine,
as much as a batch of a few programs gains from its workers (bench/fleet_bench.py
--batches-only).  Nor does a worker import the calling script, as a spawned process does (its
``__main__`` again): the script's top-level code never runs twice, and a call at its top level
needs no main guard.

A worker says it is ready (its initializer has run) before it reads its first job.  The calling
process only waits, in ``poll``, which Ctrl-C interrupts at once (a compilation of its own, inside
NVRTC, holds the KeyboardInterrupt until NVRTC returns) -- unless :meth:`Workers.run` is given a
share of the jobs (``here``): then the caller runs the last job itself while the processes start,
one for each other job; whenever it is free again, it hands the next job to a process that has
answered meanwhile, else runs the last job no process has taken, else the job of a process that
has not yet said it is ready, ending that process rather than wait for its start.

With a ``timeout``, a job not answered within that many seconds of its process starting it (the
process ready and the job sent: its own start is not counted) is answered :class:`Late`; its
process is ended and reaped as a dead one is, and another takes its place while jobs remain.

However the wait ends, every process is ended and reaped before the caller goes on: asked to
leave (its job pipe closed) once no job is left to hand out, else terminated, and killed if
it lingers.  A fresh interpreter asked leaves through its exit hooks and ``os._exit``
(``_leave``), a fork with ``os._exit`` alone (the hooks are its caller's).  Workers ignore
SIGINT: Ctrl-C at a terminal reaches the whole process group, and the caller ends them.  A
caller that dies closes their job pipes, and a waiting worker leaves.

Imports of cudaload: _messages, _unanswered; _fork, _spawn and _template, when a worker starts.
"""

from __future__ import annotations

import _signal  # the C module: signal.py imports enum (Died's words import it, when said)
import os
import sys

from ._messages import frame as _frame, read as _read, write as _write
from ._unanswered import Died, Late

__all__ = ["Died", "Late", "Workers", "forks"]

_LINGER = 2.0  # seconds a process asked to leave, or terminated, has to exit before the next step


# A worker's whole program: SIGINT ignored before anything else, the caller's sys.path (its
# arguments but the last), then _serve with the pipes' descriptors (the last: _spawn.spawn's).
_BOOT = ("import _signal,sys;_signal.signal(_signal.SIGINT,_signal.SIG_IGN);"
         "sys.path[:]=sys.argv[1:-1];n=int(sys.argv[-1]);"
         "from cudaload.compile.parallel._workers import _serve,_leave;_serve(n,n+1);_leave()")

in_worker = False  # True in a worker process
forked = False  # True in a worker forked from its caller (_fork.py)

# Pipes waited on with poll() and passed by descriptor: POSIX.  Elsewhere (Windows) compile_all
# compiles in the calling process.
AVAILABLE = os.name == "posix"


def forks() -> bool:
    """Whether a worker started now would be a fork of this process (_fork.py)."""
    from . import _fork  # deferred: imported when there are jobs, not with cudaload

    return _fork.possible(settle=True)


class _Process:
    """One worker: its process, and the caller's ends of the pipes to it (jobs) and from it
    (answers)."""

    def __init__(self, start: bytes, others: list[_Process], made: tuple = ()) -> None:
        if made:  # (jobs, answers, process): a worker a template forked (_template.py)
            self.jobs, self.answers, self.process, self.ready = (*made, False)
            return
        from . import _spawn  # deferred: imported when there are jobs, not with cudaload

        their_jobs, self.jobs = os.pipe()  # not inheritable: no spawned worker holds them open
        self.answers, their_answers = os.pipe()
        try:
            self.process = self._forked(their_jobs, their_answers, others) \
                or _spawn.spawn(["-c", _BOOT, *sys.path], (their_jobs, their_answers))
        except BaseException:
            os.close(self.jobs)
            os.close(self.answers)
            raise
        finally:
            os.close(their_jobs)  # theirs only: once it dies, writing fails and reading ends
            os.close(their_answers)
        self.ready = False  # it said so: its initializer has run, it reads its jobs
        self.send(start)

    def _forked(self, jobs: int, answers: int, others: list[_Process]):
        """A fork of this process serving the pipes ``jobs`` and ``answers``, where that is safe
        (_fork.py); else None."""
        from . import _fork  # deferred: as _spawn

        if not _fork.possible():
            return None
        # the caller's ends of every worker's pipes, closed in the fork
        mine = [fd for w in (self, *others) for fd in (w.jobs, w.answers) if fd >= 0]
        try:
            return _fork.fork(lambda: _serve(jobs, answers, True), mine)
        except (OSError, RuntimeError):  # no memory for a copy (overcommit refused), or no fork
            return None                  # here (a subinterpreter): a fresh interpreter instead

    def send(self, message: bytes) -> None:
        """Write ``message`` (a frame of :func:`_frame`) to the process; OSError if it is gone."""
        _write(self.jobs, message)

    def answer(self) -> tuple | None:
        """(ok, value) that the process sent; None if it died first."""
        try:
            ok, value = _read(self.answers)
        except (EOFError, OSError):
            return None
        except Exception as exc:  # it came whole but does not unpickle here
            ok, value = False, exc
        return ok, value

    def _heard(self, timeout: float) -> bool:
        """Whether its answers' pipe has something to read (an answer, or its end: the process
        exited) within ``timeout`` seconds."""
        import select  # deferred: imported by run() already

        poll = select.poll()
        poll.register(self.answers, select.POLLIN)
        return bool(poll.poll(int(timeout * 1000)))

    def says_ready(self) -> bool | None:
        """Whether the process has said it is ready, without waiting (reading what it said);
        None if it died first."""
        if not self.ready and self._heard(0):
            if self.answer() is None:
                return None
            self.ready = True
        return self.ready

    def leave(self, ask: bool) -> None:
        """Ask the process to leave (``ask``: a worker waiting for its next job reads the end of
        the pipe and returns) or terminate it."""
        if self.jobs >= 0:
            os.close(self.jobs)
            self.jobs = -1
        if not ask:
            self.process.signal(_signal.SIGTERM)

    def join(self, ask: bool) -> None:
        """Wait for the process to end, after :meth:`leave`: terminated if it lingers (or
        killed, if it was terminated already), then killed; its answers' pipe closed."""
        if not self._ended(_LINGER):
            self.process.signal(_signal.SIGTERM if ask else _signal.SIGKILL)
            if not self._ended(_LINGER):
                self.process.signal(_signal.SIGKILL)
                self.process.wait()
        if self.answers >= 0:
            os.close(self.answers)
            self.answers = -1

    def _ended(self, timeout: float) -> bool:
        """Whether the process has ended within ``timeout`` seconds.  Waited for in poll() on
        its answers' pipe, whose end closes as it exits (or which holds an answer never read),
        before it is reaped: a wait in steps of sleep (Popen.wait's, up to 50 ms) cost every
        compile_all some 30 ms."""
        if self.answers >= 0:
            self._heard(timeout)
        return self.process.wait(timeout)


def _end(workers: list[_Process], ask: bool) -> None:
    """End every one of ``workers`` (see :meth:`_Process.leave`), all at once."""
    for worker in workers:
        worker.leave(ask)
    for worker in workers:
        worker.join(ask)


class Workers:
    """Up to ``n`` processes, each running ``initializer(*initargs)`` once and then
    ``target(*args)`` for each job :meth:`run` hands it (both functions importable by their
    module and name; the arguments and answers marshal's or pickle's values).  A context
    manager: leaving it ends every process (see the module's docstring)."""

    def __init__(self, n: int, target, initializer, initargs: tuple, before=None) -> None:
        self._n = n
        self._names = (_name(target), _name(initializer), tuple(initargs))
        self._start = _frame(self._names)
        self._before = (_name(before[0]), tuple(before[1])) if before else ("", ())  # a template's
        self._processes: list[_Process] = []
        self._template = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind, *_rest) -> None:
        processes, self._processes = self._processes, []
        _end(processes, ask=kind is None)
        if self._template is not None:
            self._template.close()

    def _spawn(self) -> _Process:
        self._processes.append(_Process(self._start, self._processes))
        return self._processes[-1]

    def _start_all(self, n: int) -> list[_Process]:
        """``n`` processes: where this process may not fork and more than one is wanted, forks
        of one template (_template.py), and fresh interpreters for any it could not fork."""
        made: list = []
        if n > 1 and self._template is None and not forks():
            from . import _template  # deferred: only a process that may not fork needs it
            self._template, made = _template.start((*self._names, *self._before), n)
        workers = [_Process(self._start, self._processes, ends) for ends in made]
        self._processes += workers
        return workers + [self._spawn() for _ in range(n - len(workers))]

    def run(self, jobs: dict, here=None, timeout: float | None = None):
        """Run ``target(*args)`` for each ``tag: args`` of ``jobs``; yields (tag, True, what it
        returned), (tag, False, what it raised) or (tag, False, :class:`Died` or :class:`Late`)
        for each, as each finishes.  With ``here``, this process's share (see the module's
        docstring): ``here(tag)`` runs a job here, and nothing is yielded for it (nor is it
        timed).  Raises what ends the wait (KeyboardInterrupt) or what ``here`` raised."""
        import select  # deferred: only this path needs it

        from ._clock import Clock  # deferred: as select; before the processes start, not after

        # The jobs to hand out, the next one last (a list: importing collections for a deque
        # cost every worker's start some 4 ms, the calling process's first run too).
        todo = list(jobs.items())[::-1]
        share = here is not None
        # all start at once, each with its first job waiting in its pipe (one job fewer: here's)
        idle = self._start_all(min(self._n, len(todo) - share))
        busy: dict[int, tuple[_Process, object]] = {}  # answers' descriptor -> (worker, tag)
        clock = Clock(timeout)
        poll = select.poll()
        while todo or busy:
            while todo and (idle or not (busy or share)):
                worker = idle.pop() if idle else self._spawn()
                tag, args = todo.pop()
                try:  # it reads the job once ready
                    worker.send(_frame(args))
                except OSError:  # dead already: killed from outside while it waited for a job
                    if worker.ready:
                        todo.append((tag, args))
                        self._retire(worker, todo, idle)
                        continue
                busy[worker.answers] = (worker, tag)  # else its death is this job's answer
                poll.register(worker.answers, select.POLLIN)
                clock.sent(worker)
            self._last(todo)
            # Shared: what came meanwhile first (a process that is free takes the next job)
            events = poll.poll(0) if share else None
            mine = self._own(todo, busy, poll) if share and not events else []
            if mine:
                self._last(todo)
                here(mine[0])
                continue
            for fd, _event in events or poll.poll(clock.wait()) or clock.late(busy):
                worker, tag = busy[fd]
                late = fd in clock.ended
                answer = (False, Late(timeout or 0.0)) if late else worker.answer()
                if answer is not None and not worker.ready:  # its first answer: it is ready
                    worker.ready = True
                    clock.sent(worker)
                    continue
                poll.unregister(fd)
                del busy[fd]
                clock.done(fd)
                if answer is None or late:
                    self._retire(worker, todo, idle)
                else:
                    idle.append(worker)
                yield (tag, *answer) if answer else (tag, False, Died(worker.process.returncode))

    def _last(self, todo) -> None:
        """Once no job is left to hand out, ask every process to leave after its answer: its
        exit then overlaps the others' jobs (this process's own too), not the run's end."""
        if not todo:
            for worker in self._processes:
                worker.leave(ask=True)

    def _own(self, todo, busy: dict, poll) -> list:
        """In a shared run, the job this process runs next, as [tag]: the last no process has
        taken, else that of a process that has not said it is ready (ended: sooner here than
        after its start); [] if there is none."""
        if todo:
            return [todo.pop(0)[0]]  # a shared batch's: a few jobs
        late = next((fd for fd, (w, _tag) in busy.items() if not w.says_ready()), None)
        if late is None:
            return []
        poll.unregister(late)
        worker, tag = busy.pop(late)
        self._processes.remove(worker)
        _end([worker], ask=False)
        return [tag]

    def _retire(self, worker: _Process, todo, idle: list) -> None:
        """Reap the dead ``worker``; start another in its place while jobs wait for one."""
        self._processes.remove(worker)
        _end([worker], ask=False)
        if len(todo) > len(idle):
            idle.append(self._spawn())


def _name(function) -> str:
    """``function`` as a worker finds it: "module:qualified name"."""
    return f"{function.__module__}:{function.__qualname__}"


def _named(name: str):
    """The function :func:`_name` named, imported."""
    module, _sep, qualname = name.partition(":")
    __import__(module)
    found = sys.modules[module]
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _serve(jobs: int, answers: int, fork: bool = False) -> None:
    """A worker's life (see ``_BOOT``, _fork.py): the start message's ``initializer(*initargs)``,
    then each job's ``target(*args)`` answered as (True, value) or (False, exception), until the
    caller closes the jobs' pipe."""
    global in_worker, forked
    in_worker, forked = True, fork
    for fd in (jobs, answers):  # a process this one starts must not hold them open
        os.set_inheritable(fd, False)
    target, initializer, initargs = _read(jobs)
    target = _named(target)
    _named(initializer)(*initargs)
    _answering(target, jobs, answers)


def _templated(first: int, n: int) -> None:
    """A template's life (_template.py): its start message run here, then ``n`` forks of it."""
    global in_worker
    in_worker = True
    from . import _template  # deferred: only a template needs it

    def started(ctl: int):
        target, initializer, initargs, before, args = _read(ctl)
        _named(initializer)(*initargs)
        if before:
            _named(before)(*args)
        target = _named(target)
        return lambda jobs, answers: _forked_worker(target, jobs, answers)

    _template.serve(first, n, started)


def _forked_worker(target, jobs: int, answers: int) -> None:
    """The life of a worker a template forked: its initializer ran in the template."""
    global forked
    forked = True
    _answering(target, jobs, answers)


def _answering(target, jobs: int, answers: int) -> None:
    """Say the worker is ready, then answer each job until the caller closes the jobs' pipe."""
    _write(answers, _frame((True, None)))  # ready: see Workers.run
    while True:
        try:
            args = _read(jobs)
        except EOFError:
            return
        try:
            answer = (True, target(*args))
        except Exception as exc:
            answer = (False, exc)
        try:
            message = _frame(answer)
        except Exception as exc:  # neither marshal nor pickle writes it: nothing of it was sent
            message = _frame((False, RuntimeError(f"its answer could not be sent back: "
                                                  f"{type(exc).__name__}: {exc}")))
        _write(answers, message)


def _leave():
    """A spawned worker's end, once the caller has closed its jobs' pipe: the exit hooks
    (cudaload's writes the cache entries still pending), then ``os._exit``.  The interpreter's
    own teardown (every module's, NVRTC's unloading) took some 12 ms more, which the caller
    waits for."""
    import atexit  # deferred: only this path needs it

    from ._fork import flush_output  # deferred: as atexit

    getattr(atexit, "_run_exitfuncs")()  # what Python's exit runs first (private: untyped)
    flush_output()
    os._exit(0)
