"""The thread that writes a cache miss's entry after the compile that made it has returned.

Everything cudaload does on a miss besides NVRTC may cost 2 % of the compile
(bench/compile_bench.py).  Writing the entry is most of it: encoding it, creating its temporary
file, writing and renaming it took 0.2-0.3 ms right after NVRTC had evicted the CPU's caches, and
with them on the caller's thread a miss cost 2.0-2.4 % of a 20-30 ms compile on the H200 host.
So the caller hands the write, with the key's lock, to :class:`Writer`: one daemon thread per
process writes and renames the entry and only then releases the lock, so another process or
thread waiting for that key finds the entry when it gets the lock.  cffi releases the GIL around
NVRTC's calls, so the thread mostly runs while the next compile does.

Jobs still pending when the interpreter exits are finished first (an exit hook, see lifetime.py);
a job given after that (by an exit hook that runs later) runs on the caller's thread.  A process
that multiprocessing started, and the child of a ``fork()``, write on the calling thread
instead: a fork-started worker ends with ``os._exit``, which runs no exit hook, and a worker's
entries are then on disk when it hands back its result.  A job that is lost all the
same (a process killed, or a child that imported cudaload after a bare ``fork()`` and ended with
``os._exit``) leaves a miss, never a part of an entry: the rename is the last step.

Imports of cudaload: lifetime, _sigint.
"""

from __future__ import annotations

import _queue
import _thread
import sys

from ..._base import _sigint, lifetime

__all__ = ["Handover", "Writer", "DEFAULT"]


class Writer:
    """Runs jobs (functions of no argument) in the order given, on one daemon thread started at
    the first, or on the caller's thread with ``inline``.  :meth:`wait` returns once every job
    given before it has run.  ``pending`` is for the submitters: what their jobs will write,
    under keys of their choosing (reset with the jobs in a forked child)."""

    def __init__(self, inline: bool = False):
        self._reset(inline)

    def _reset(self, inline: bool) -> None:
        self.inline = inline
        self.pending: dict = {}
        self._jobs: _queue.SimpleQueue = _queue.SimpleQueue()
        self._start = _thread.allocate_lock()  # taken, never given back, to start the thread
        self._thread: int | None = None  # the serving thread's ident, once started

    def submit(self, job) -> None:
        """Run ``job()`` on the thread (now, with ``inline``)."""
        if self._thread is None and not self.inline and _started_by_multiprocessing():
            self.inline = True
        if self.inline:
            _run(job)
            return
        # A job is queued only once its thread exists, and no lock is held across anything, so
        # an interrupt (KeyboardInterrupt) at any point leaves no job waiting for no thread.
        if self._thread is None:
            if self._start.acquire(False):  # the first to get here starts it, once
                try:
                    # _thread, not threading: Thread.start() waits until the new thread runs.
                    self._thread = _thread.start_new_thread(self._serve, ())
                except RuntimeError:  # no new threads: the interpreter is shutting down
                    pass
            if self._thread is None:  # not started (being started, or impossible): write here
                _run(job)
                return
        self._jobs.put(job)

    def wait(self) -> None:
        """Return once every job given so far has run (at once on the writer's own thread)."""
        if self._thread is None or self._thread == _thread.get_ident():
            return
        done = _thread.allocate_lock()
        done.acquire()
        self._jobs.put(done.release)  # run after every job before it: one thread, in order
        with done:
            pass

    def finish(self) -> None:
        """Run what is pending, and from now on every job on the caller's thread: the
        interpreter exits (a job given by a later exit hook would find the thread stopped)."""
        self.inline = True
        self.wait()

    def _serve(self) -> None:
        # Said here too: a KeyboardInterrupt as start_new_thread returned loses its answer, and
        # every later job would be written on its caller's thread.
        self._thread = _thread.get_ident()
        # Never this thread's: a SIGINT the compiling thread holds off (_sigint.py) waits for it
        # rather than reach a process inside NVRTC here.
        _sigint.block_here()
        while True:
            _run(self._jobs.get())


def _started_by_multiprocessing() -> bool:
    mp = sys.modules.get("multiprocessing")  # a process it started has imported it
    return mp is not None and mp.parent_process() is not None


def _run(job) -> None:
    """Run ``job``; an exception it raises (a bug: jobs handle what they expect) is printed, as an
    uncaught one on any thread is, and the thread goes on with the next."""
    try:
        job()
    except Exception:
        import traceback  # deferred: only this path needs it

        traceback.print_exc()


# The process's writer.  A forked child has no thread of its parent's: it drops its copy of the
# parent's pending jobs and entries (the parent writes them) and writes on the calling thread;
# so does a child whose first miss imports this module (a parent whose compiles all hit the disk
# never imported it).
DEFAULT = Writer(inline=lifetime.child_of_fork())
lifetime.on_fork_in_child(lambda: DEFAULT._reset(inline=True))
lifetime.at_exit(DEFAULT.finish)


def _discard(_obj) -> None:
    pass  # nothing was locked: nothing is kept


class Handover:
    """What ``with disk.lock(key)`` holds (disk.py).  Entering calls ``take()``, which takes the
    key's lock and gives the function that releases it, or None where nothing was locked; the
    block gets ``publish(obj)``, which calls ``hand(obj, release)`` to have the writer store the
    entry and then release the key (a function that keeps nothing where nothing was locked).
    Unless handed over, the key is released on leaving the block, whatever ended it
    (KeyboardInterrupt included).  A class rather than contextlib.contextmanager: importing
    contextlib cost a fresh process's first compile 1 ms."""

    __slots__ = ("_take", "_hand", "_release", "_handed")

    def __init__(self, take, hand):
        self._take, self._hand, self._release, self._handed = take, hand, None, False

    def __enter__(self):
        try:  # a KeyboardInterrupt once the key is taken (before the block, so no __exit__)
            self._release = self._take()
            return _discard if self._release is None else self.publish
        except BaseException:
            self.__exit__()
            raise

    def publish(self, obj) -> None:
        self._hand(obj, self._release)
        self._handed = True

    def __exit__(self, *_exc) -> None:
        if self._release is not None and not self._handed:
            self._release()
