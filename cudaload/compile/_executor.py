"""compile_all's jobs on an executor the caller gives (``compile_all(..., executor=...)``): any
object whose ``submit(fn, *args)`` returns a future with ``result()``, as a
``concurrent.futures.Executor``, a Dask ``distributed.Client`` or its ``get_executor()``, Ray's
and mpi4py's ``MPIPoolExecutor`` do.

Each job is sent as a module-level function and plain arguments, so it pickles by reference to
cudaload (installed on the workers) and never carries a Program.  A worker process is set up (the
caller's driver version, its log topics) before its first job, once: an executor's workers are
not started by cudaload.  What a job raises, and what the executor raises for a worker it lost,
comes back as the job's failure; the caller names the program.
"""

from __future__ import annotations

__all__ = ["run"]

_set_up: tuple | None = None  # in a worker process: what it was set up with


def run(executor, work, set_up, set_up_args: tuple, jobs: dict):
    """Submit ``work(*job)`` for each key's job to ``executor``, the worker first set up with
    ``set_up(*set_up_args)``; yield (key, True, result) or (key, False, error) for each."""
    futures = {key: executor.submit(_job, work, set_up, set_up_args, job)
               for key, job in jobs.items()}
    for key, future in futures.items():
        try:
            yield key, True, future.result()
        except Exception as exc:  # the job's error, or the executor's for a lost worker
            yield key, False, exc


def _job(work, set_up, set_up_args: tuple, job: tuple):
    """In a worker: ``work(*job)``, the process set up first (once per setting)."""
    global _set_up
    if _set_up != set_up_args:
        set_up(*set_up_args)
        _set_up = set_up_args
    return work(*job)
