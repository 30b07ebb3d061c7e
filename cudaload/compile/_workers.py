"""The processes :func:`compile_all` compiles on: :class:`Workers`, spawned, one job at a time each.

Not ``concurrent.futures.ProcessPoolExecutor``: when one of its processes dies (NVRTC crashing on
a program with a segmentation fault, aborting on an option it cannot honour, a kill from outside)
it fails every job not yet finished without saying which one the dead process was running, and
on Python 3.11 its manager thread then failed on a job taken back with ``cancel()``, leaving the
other processes running and the interpreter waiting for them at exit.  Here a process gets its
next job only once it has answered the last, so a process that dies names its job; the others go
on, and a new process takes the dead one's place while jobs remain.

A process gets its first job only once it has started (a fresh interpreter importing cudaload:
a few hundred milliseconds on a small machine), and until one has, the jobs are done from the end
of the list on a thread of the calling process (``run(jobs, here=...)``): a batch too small to
repay the start of a process is done here, as fast as compiling it in a loop would be, and the
processes that did not start in time are ended unused.  The calling thread itself only waits, in
``multiprocessing.connection.wait``, which Ctrl-C interrupts at once (a compilation on the calling
thread, inside NVRTC, would hold the KeyboardInterrupt until NVRTC returned; the thread's
compilation runs on, and its answer is dropped).  However the wait ends, every process is ended and joined before the caller goes on:
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

__all__ = ["Died", "HERE", "Workers"]

HERE = object()  # what run() yields as the answer of a job done by ``here``

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
        self.started = False  # it said so: it may be given a job

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
    """End every one of ``workers`` (see :meth:`_Process.leave`), all at once.  One still
    starting is terminated, not asked: it would finish its start before it read the request."""
    for worker in workers:
        worker.leave(ask and worker.started)
    for worker in workers:
        worker.join(ask and worker.started)


class _Here:
    """The caller's share of the jobs: ``here(tag)`` on one thread of this process for the whole
    batch (a new thread for each program compiled each slower, by about a fifth, on the
    64-kernel family of bench/fleet_bench.py), one job at a time, its answer
    kept here and announced by a byte on a pipe, which the caller waits on beside the processes'
    pipes."""

    _STOP = object()

    def __init__(self, context, here) -> None:
        from _queue import SimpleQueue  # deferred: only this path needs it

        self.conn, self._theirs = context.Pipe(duplex=False)
        self._here = here
        self._jobs: SimpleQueue = SimpleQueue()
        self.tag: object = None
        self.busy = False
        self._answer: tuple = ()
        _thread.start_new_thread(self._serve, ())

    def take(self, tag) -> None:
        self.tag, self.busy = tag, True
        self._jobs.put(tag)

    def _serve(self) -> None:
        if hasattr(signal, "pthread_sigmask"):  # Ctrl-C goes to the waiting thread, never here
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        while True:
            tag = self._jobs.get()
            if tag is self._STOP:
                return
            try:
                self._answer = (True, self._here(tag))
            except BaseException as exc:  # all, SystemExit too: a thread that ended unheard
                self._answer = (False, exc)  # would leave the caller waiting for ever
            try:
                self._theirs.send_bytes(b"")
            except OSError:  # the caller gave up waiting (Ctrl-C): nobody wants the answer
                return

    def answer(self) -> tuple:
        """(tag, ok, value) of the job just done, once :attr:`conn` is ready."""
        self.conn.recv_bytes()
        self.busy = False
        ok, value = self._answer
        return self.tag, ok, HERE if ok else value

    def close(self) -> None:
        """Close the caller's end and end the thread once its job is done (a thread still
        compiling finds the end closed and drops its answer).  The thread's end is closed when
        the last reference to it goes, never while the thread may still write to it (its number
        could be another file's by then)."""
        self.conn.close()
        self._jobs.put(self._STOP)


class Workers:
    """Up to ``n`` spawned processes, each running ``initializer(*initargs)`` once and then
    ``target(*args)`` for each job :meth:`run` hands it.  A context manager: leaving it ends
    every process (see the module's docstring)."""

    def __init__(self, n: int, target, initializer, initargs: tuple) -> None:
        import multiprocessing  # deferred: imported when there are jobs, not with cudaload

        self._context = multiprocessing.get_context("spawn")
        self._n, self._start = n, (target, initializer, initargs)
        self._processes: list[_Process] = []
        self._here: _Here | None = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind, *_rest) -> None:
        processes, self._processes = self._processes, []
        if self._here is not None:
            self._here.close()
        _end(processes, ask=kind is None)

    def _spawn(self) -> _Process:
        worker = _Process(self._context, *self._start)
        self._processes.append(worker)
        return worker

    def run(self, jobs: dict, here=None):
        """Run ``target(*args)`` for each ``tag: args`` of ``jobs``; yields (tag, True, what it
        returned), (tag, False, what it raised) or (tag, False, :class:`Died`) for each, as each
        finishes.  With ``here``, the jobs at the end of ``jobs`` are done by ``here(tag)`` on a
        thread of this process instead, each yielding (tag, True, :data:`HERE`) or (tag, False,
        what it raised).  Raises what ends the wait (KeyboardInterrupt)."""
        from multiprocessing.connection import wait  # deferred: only this path needs it

        todo = collections.deque(jobs.items())
        if here is not None:
            self._here = _Here(self._context, here)
        for _ in range(min(self._n, len(todo))):  # all start at once
            self._spawn()
        busy: dict[_Process, object] = {}
        while todo or busy or (self._here is not None and self._here.busy):
            self._hand_out(todo, busy)
            if not (busy or self._processes or self._here):
                # every process died before it started, and nothing here can do the jobs
                for tag, _args in todo:
                    yield tag, False, Died(self._died_at_start)
                return
            ready = set(wait(self._waited_on()))
            if self._here is not None and self._here.conn in ready:
                yield self._here.answer()
            for worker in list(self._processes):
                if worker.conn not in ready and worker.process.sentinel not in ready:
                    continue
                if worker not in busy:  # its start said, or its death before any job
                    self._started(worker, todo)
                    continue
                tag = busy.pop(worker)
                answer = _answer(worker)
                if answer is None or worker.process.sentinel in ready:
                    self._retire(worker, todo)
                yield (tag, *answer) if answer else (tag, False, Died(worker.process.exitcode))

    _died_at_start: int | None = None

    def _waited_on(self) -> list:
        waited = [w.conn for w in self._processes] + [w.process.sentinel for w in self._processes]
        return waited + ([self._here.conn] if self._here is not None else [])

    def _hand_out(self, todo, busy: dict) -> None:
        """Give each started, idle process the next job from the front, and this process's
        thread the next from the end while no process has started."""
        for worker in self._processes:
            if not todo:
                return
            if worker.started and worker not in busy:
                tag, args = todo.popleft()
                try:
                    worker.conn.send(args)
                except OSError:  # dead already: killed from outside while it waited for a job
                    todo.appendleft((tag, args))
                    continue  # its sentinel is ready: retired below, in the wait's answer
                busy[worker] = tag  # else its death is this job's answer
        # This process compiles only while no process has started (or none is left): once they
        # work, its waiting thread stays the only one, as Ctrl-C wants.
        if todo and self._here is not None and not self._here.busy \
                and not any(w.started for w in self._processes):
            tag, _args = todo.pop()
            self._here.take(tag)

    def _started(self, worker: _Process, todo) -> None:
        """``worker`` said it started, or ended without a job: idle, or retired."""
        if worker.started or _answer(worker) is None:  # an end, not the start's word
            if not worker.started:
                self._died_at_start = worker.process.exitcode
            self._retire(worker, todo, replace=worker.started)
        else:
            worker.started = True

    def _retire(self, worker: _Process, todo, replace: bool = True) -> None:
        """Join the dead ``worker``; start another in its place while jobs wait for one (not for
        one that died before it started: its replacement would too)."""
        self._processes.remove(worker)
        _end([worker], ask=False)
        idle = sum(not w.started for w in self._processes)
        if replace and len(todo) > idle:
            self._spawn()


def _answer(worker: _Process) -> tuple | None:
    """(ok, value) that ``worker`` sent; None if it died first."""
    try:
        ok, value = worker.conn.recv()
    except (EOFError, OSError):
        return None
    except Exception as exc:  # it came whole but does not unpickle here
        ok, value = False, exc
    return ok, value


def _serve(conn, target, initializer, initargs: tuple) -> None:
    """A worker's life: ``initializer(*initargs)``, then each job's ``target(*args)`` answered as
    (True, value) or (False, exception), until the caller closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer(*initargs)
    try:
        conn.send((True, None))  # started: it may be given jobs
    except OSError:  # the caller is done without it
        return
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
