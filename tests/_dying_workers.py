"""Imported by a test's ``sitecustomize`` in every process it starts, compile_all's workers
included: makes a worker die on the programs that ask it to, and writes down the processes.

With ``$TESTS_WORKERS_LOG`` set, each process started (or forked) appends ``<pid> <parent pid>
started``, and each compilation a compile_all worker begins appends ``<pid> <parent pid> compiles
<marker>``.  A program whose source holds ``DIE:segv`` (a real segmentation fault), ``DIE:exit``
(``os._exit``), ``DIE:abort`` (SIGABRT, as NVRTC aborts the process on some options) or
``DIE:hang`` (waits to be killed from outside) does that in a worker, and one holding
``DIE:slow`` takes 3 s longer; never in the process that called compile_all.  With
``$TESTS_WORKER_START_DELAY`` (seconds), a compile_all worker's start takes that much longer
(before it says it is ready).
"""

from __future__ import annotations

import os
import re
import time

LOG = os.environ.get("TESTS_WORKERS_LOG")


def _note(what: str) -> None:
    with open(LOG, "a") as f:  # one short write per line: O_APPEND keeps lines whole
        f.write(f"{os.getpid()} {os.getppid()} {what}\n")


def _die(how: str) -> None:
    if how == "segv":
        import ctypes

        ctypes.string_at(0)  # reads address 0
    elif how == "exit":
        os._exit(3)
    elif how == "abort":
        os.abort()
    elif how == "hang":
        time.sleep(120)
    elif how == "slow":
        time.sleep(3)


def _install() -> None:
    import multiprocessing

    from cudaload.compile.parallel import _workers
    from cudaload.compile import build

    real = build.build

    def build_or_die(request, found):
        # a worker (compile_all's own, or an executor's multiprocessing process), not the caller
        if _workers.in_worker or multiprocessing.parent_process() is not None:
            how = re.search(r"DIE:(\w+)", request.inputs.source)
            _note("compiles " + (how.group(1) if how else "-"))
            if how:
                _die(how.group(1))
        return real(request, found)

    build.build = build_or_die
    delay = float(os.environ.get("TESTS_WORKER_START_DELAY") or 0)
    ready = build.ready_to_build  # bound by parallel.py when it is imported, after this

    def slow_ready() -> None:
        if _workers.in_worker:
            time.sleep(delay)
        ready()

    if delay:
        build.ready_to_build = slow_ready


if LOG:
    _note("started")
    _install()
    if hasattr(os, "register_at_fork"):  # a worker forked from its caller imports nothing again
        os.register_at_fork(after_in_child=lambda: _note("started"))
