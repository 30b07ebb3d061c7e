"""The processes :func:`compile_all` compiles on: :class:`Workers`, spawned, one job at a time each.

Not ``concurrent.futures.ProcessPoolExecutor``: when one of its processes dies (NVRTC crashing on
a program with a segmentation fault, aborting on an option it cannot honour, a kill from outside)
it fails every job not yet finished without saying which one the dead process was running, and
on Python 3.11 its manager thread then failed on a job taken back with ``cancel()``, leaving the
other processes running and the interpreter waiting for them at exit.  Here a process gets its
next job only once it has answered the last, so a process that dies names its job; the others go
on, and a new process takes the dead one's place while jobs remain.

The calling process only waits, in ``multiprocessing.connection.wait``, which Ctrl-C interrupts at
once (a compilation of its own, inside NVRTC, would hold the KeyboardInterrupt until NVRTC
returned).  However the wait ends, every process is ended and joined before the caller goes on:
asked to leave when all went well, else terminated, and killed if it lingers.  Workers ignore
SIGINT: Ctrl-C at a terminal reaches the whole process group, and the caller ends them.

Imports of cudaload: nothing.
"""

from __future__ import annotations

import _thread
import collections
import contextlib
import signal
import sys
import types

__all__ = ["Died", "Workers"]

_LINGER = 2.0  # seconds a process asked to leave, or terminated, has to exit before the next step


class Died:
    """The answer of a job whose process died before answering."""

    __slots__ = ("exitcode",)

    def __init__(self, exitcode: int | None) -> None:
        self.exitcode = exitcode  # as multiprocessing says: -N for signal N

    def __str__(self) -> str:
        if self.exitcode is not None and self.exitcode < 0:
            try:
                name = signal.Signals(-self.exitcode).name
            except ValueError:
                name = "signal"
            return f"it was killed by {name} ({-self.exitcode})"
        return f"it exited with status {self.exitcode}"


class _Process:
    """One worker: its process and the caller's end of the pipe to it."""

    def __init__(self, context, target, initializer, initargs) -> None:
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_serve, daemon=True,  # ended at exit if need be
                                       args=(theirs, target, initializer, initargs))
        with _without_main():
            self.process.start()
        theirs.close()  # theirs only: once it dies, writing to it fails and reading it ends
        self.answered = False

    def leave(self, ask: bool) -> None:
        """Ask the process to leave (``ask``: a worker waiting for its next job reads the end of
        the pipe and returns) or terminate it."""
        self.conn.close()
        if not ask:
            self.process.terminate()

    def join(self, ask: bool) -> None:
        """Wait for the process to end, after :meth:`leave`: terminated if it lingers (or
        killed, if it was terminated already), then killed."""
        self.process.join(_LINGER)
        if self.process.exitcode is None:
            self.process.terminate() if ask else self.process.kill()
            self.process.join(_LINGER)
            if self.process.exitcode is None:
                self.process.kill()
                self.process.join()


def _end(workers: list[_Process], ask: bool) -> None:
    """End every one of ``workers`` (see :meth:`_Process.leave`), all at once."""
    for worker in workers:
        worker.leave(ask)
    for worker in workers:
        worker.join(ask)


class Workers:
    """Up to ``n`` spawned processes, each running ``initializer(*initargs)`` once and then
    ``target(*args)`` for each job :meth:`run` hands it.  A context manager: leaving it ends
    every process (see the module's docstring)."""

    def __init__(self, n: int, target, initializer, initargs: tuple) -> None:
        import multiprocessing  # deferred: imported when there are jobs, not with cudaload

        self._context = multiprocessing.get_context("spawn")
        self._n, self._start = n, (target, initializer, initargs)
        self._processes: list[_Process] = []

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind, *_rest) -> None:
        processes, self._processes = self._processes, []
        _end(processes, ask=kind is None)

    def _spawn(self) -> _Process:
        worker = _Process(self._context, *self._start)
        self._processes.append(worker)
        return worker

    def run(self, jobs: dict):
        """Run ``target(*args)`` for each ``tag: args`` of ``jobs``; yields (tag, True, what it
        returned), (tag, False, what it raised) or (tag, False, :class:`Died`) for each, as each
        finishes.  Raises what ends the wait (KeyboardInterrupt)."""
        from multiprocessing.connection import wait  # deferred: only this path needs it

        todo = collections.deque(jobs.items())
        idle = [self._spawn() for _ in range(min(self._n, len(todo)))]  # all start at once
        busy: dict[_Process, object] = {}
        while todo or busy:
            while todo and (idle or not busy):
                worker = idle.pop() if idle else self._spawn()
                tag, args = todo.popleft()
                try:
                    worker.conn.send(args)
                except OSError:  # dead already: killed from outside while it waited for a job
                    if worker.answered:
                        todo.appendleft((tag, args))
                        self._retire(worker, todo, idle)
                        continue
                busy[worker] = tag  # else its death is this job's answer
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for worker in [w for w in busy if w.conn in ready or w.process.sentinel in ready]:
                tag = busy.pop(worker)
                answer = _answer(worker)
                if answer is None or worker.process.sentinel in ready:
                    self._retire(worker, todo, idle)
                else:
                    idle.append(worker)
                yield (tag, *answer) if answer else (tag, False, Died(worker.process.exitcode))

    def _retire(self, worker: _Process, todo, idle: list) -> None:
        """Join the dead ``worker``; start another in its place while jobs wait for one."""
        self._processes.remove(worker)
        _end([worker], ask=False)
        if len(todo) > len(idle):
            idle.append(self._spawn())


def _answer(worker: _Process) -> tuple | None:
    """(ok, value) that ``worker`` sent; None if it died first."""
    try:
        ok, value = worker.conn.recv()
    except (EOFError, OSError):
        return None
    except Exception as exc:  # it came whole but does not unpickle here
        ok, value = False, exc
    worker.answered = True
    return ok, value


def _serve(conn, target, initializer, initargs: tuple) -> None:
    """A worker's life: ``initializer(*initargs)``, then each job's ``target(*args)`` answered as
    (True, value) or (False, exception), until the caller closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer(*initargs)
    while True:
        try:
            args = conn.recv()
        except EOFError:
            return
        try:
            answer = (True, target(*args))
        except Exception as exc:
            answer = (False, exc)
        try:
            conn.send(answer)
        except Exception as exc:  # an answer that does not pickle: nothing of it was sent
            conn.send((False, RuntimeError(f"its answer could not be sent back: "
                                           f"{type(exc).__name__}: {exc}")))


_hiding = _thread.allocate_lock()  # one thread at a time hides and restores __main__


@contextlib.contextmanager
def _without_main():
    """Processes started meanwhile do not import the calling script.  A spawned process imports
    ``__main__`` again (as ``__mp_main__``, by ``__spec__`` name or ``__file__`` path) before it
    runs anything: the script's top-level code would run once more in every worker, with all it
    imports (seconds for a framework), and a compile_all outside a main guard would start
    processes from a process still starting, which multiprocessing ends.  A worker needs nothing
    of the script: it gets plain data and runs functions of cudaload.  multiprocessing reads
    both attributes while it starts a process, so they are hidden for that time and put back,
    by one thread at a time (two that overlapped would put back what the other had hidden).

    They are the process's: a process that another thread starts with "spawn" or "forkserver"
    in that time (a few milliseconds per worker) does not import the script either, and fails if
    what it runs was defined there."""
    main = sys.modules.get("__main__")
    if not isinstance(main, types.ModuleType):  # none, or another object (some embedders)
        yield
        return
    with _hiding:
        names = vars(main)
        saved = {name: names[name] for name in ("__spec__", "__file__") if name in names}
        try:
            names["__spec__"] = None  # read without a default: set, not removed
            names.pop("__file__", None)
            yield
        finally:
            names.pop("__spec__", None)
            names.update(saved)
