"""The thread that writes a cache miss's entry after the compile that made it has returned.

Everything cudaload does on a miss besides NVRTC may cost 2 % of the compile
(bench/compile_bench.py).  Writing the entry is most of it: encoding it, creating its temporary
file, writing and renaming it took 0.2-0.3 ms right after NVRTC had evicted the CPU's caches, and
with them on the caller's thread a miss cost 2.0-2.4 % of a 20-30 ms compile on the H200 host.
So the caller hands the write, with the key's lock, to :class:`Writer`: one daemon thread per
process writes and renames the entry and only then releases the lock, so another process or
thread waiting for that key finds the entry when it gets the lock.  cffi releases the GIL around
NVRTC's calls, so the thread mostly runs while the next compile does.

Jobs still pending when the interpreter exits are finished first (an exit hook, see lifetime.py).
A process that multiprocessing started, and the child of a ``fork()``, write on the calling
thread instead: a fork-started worker ends with ``os._exit``, which runs no exit hook, and a
worker's entries are then on disk when it hands back its result.  A job that is lost all the
same (a process killed, or a child that imported cudaload after a bare ``fork()`` and ended with
``os._exit``) leaves a miss, never a part of an entry: the rename is the last step.

Imports of cudaload: lifetime.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

import _queue
import _thread
import sys

from .. import lifetime

__all__ = ["Writer", "DEFAULT"]


class Writer:
    """Runs jobs (functions of no argument) in the order given, on one daemon thread started at
    the first, or on the caller's thread with ``inline``.  :meth:`wait` returns once every job
    given before it has run."""

    def __init__(self, inline: bool = False):
        self._reset(inline)

    def _reset(self, inline: bool) -> None:
        self.inline = inline
        self._jobs: _queue.SimpleQueue = _queue.SimpleQueue()
        self._guard = _thread.allocate_lock()
        self._pending = 0
        self._idle = _thread.allocate_lock()  # held while a job is pending
        self._started = False

    def submit(self, job) -> None:
        """Run ``job()`` on the thread (now, with ``inline``)."""
        if not self._started and _started_by_multiprocessing():
            self.inline = True
        if self.inline:
            _run(job)
            return
        with self._guard:
            if not self._pending:
                self._idle.acquire()
            self._pending += 1
            start, self._started = not self._started, True
        self._jobs.put(job)
        if start:
            # _thread, not threading: Thread.start() waits until the new thread runs.
            try:
                _thread.start_new_thread(self._serve, ())
            except RuntimeError:  # no new threads: the interpreter is shutting down
                self.inline = True
                self._serve(until_empty=True)

    def wait(self) -> None:
        """Return once every job given so far has run."""
        with self._idle:
            pass

    def _serve(self, until_empty: bool = False) -> None:
        while True:
            try:
                job = self._jobs.get(block=not until_empty)
            except _queue.Empty:
                return
            try:
                _run(job)
            finally:
                with self._guard:
                    self._pending -= 1
                    if not self._pending:
                        self._idle.release()


def _started_by_multiprocessing() -> bool:
    mp = sys.modules.get("multiprocessing")  # a process it started has imported it
    return mp is not None and mp.parent_process() is not None


def _run(job) -> None:
    """Run ``job``; an exception it raises (a bug: jobs handle what they expect) is printed, as an
    uncaught one on any thread is, and the thread goes on with the next."""
    try:
        job()
    except Exception:
        import traceback

        traceback.print_exc()


# The process's writer.  A forked child has no thread of its parent's: it drops its copy of the
# parent's pending jobs (the parent runs them) and writes on the calling thread.
DEFAULT = Writer()
lifetime.on_fork_in_child(lambda: DEFAULT._reset(inline=True))
lifetime.at_exit(DEFAULT.wait)
