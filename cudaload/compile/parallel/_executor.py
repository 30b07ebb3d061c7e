"""compile_all's jobs on an executor the caller gives (``compile_all(..., executor=...)``): any
object whose ``submit(fn, *args)`` returns a future with ``result()``, as a
``concurrent.futures.Executor``, a Dask ``distributed.Client`` or its ``get_executor()``, Ray's
and mpi4py's ``MPIPoolExecutor`` do.

Each job is sent as a module-level function and plain arguments, so it pickles by reference to
cudaload (installed on the workers) and never carries a Program.  A worker process is set up (the
caller's driver version, its log topics) before its first job, once: an executor's workers are
not started by cudaload.  What a job raises, and what the executor raises for a worker it lost,
comes back as the job's failure; the caller names the program.

A worker that dies takes along the jobs queued on it (Dask fails every task "processing" on a
worker it lost, queued ones included, once ``allowed-failures`` is spent), so a job the executor
failed itself, rather than the job raising, is submitted once more, alone, after the others:
alone it is lost again only by its own fault (NVRTC crashing on that program), and then it fails.

With a ``timeout``, a job's future not done within that many seconds of compile_all beginning to
wait for it (the futures are waited for in the order given, each once the earlier ones are done
or past their time) is cancelled and answered ``_workers.Late``: an executor says neither when a
job began nor how to end the process running it, so a job that hangs holds its worker until the
executor ends it, and a job queued behind it there may be late too.
"""

from __future__ import annotations

__all__ = ["run"]

_set_up: tuple | None = None  # in a worker process: what it was set up with


def run(executor, work, set_up, set_up_args: tuple, jobs: dict, job_error=Exception,
        timeout: float | None = None):
    """Submit ``work(*job)`` for each key's job to ``executor``, the worker first set up with
    ``set_up(*set_up_args)``; yield (key, True, result) or (key, False, error) for each.  A job
    whose error is no ``job_error`` (what ``work`` raises) is tried again alone, once; one past
    ``timeout`` is cancelled (see the docstring)."""
    futures = {key: executor.submit(_job, work, set_up, set_up_args, job)
               for key, job in jobs.items()}
    lost = []
    for key, future in futures.items():
        try:
            done = True, future.result(timeout=timeout)
        except job_error as exc:
            done = False, exc
        except TimeoutError:  # concurrent.futures' and asyncio's (Dask's) since Python 3.11
            done = False, _late(future, timeout)
        except Exception:  # the executor's own: a worker lost, maybe with another job's fault
            lost.append(key)
            continue
        yield (key, *done)
    for key in lost:
        # attempt 1: arguments of their own, or Dask (whose keys are the arguments' hash) would
        # answer with the failed task again
        future = executor.submit(_job, work, set_up, set_up_args, jobs[key], 1)
        try:
            done = True, future.result(timeout=timeout)
        except TimeoutError:
            done = False, _late(future, timeout)
        except Exception as exc:  # lost again, alone: its own fault
            done = False, exc
        yield (key, *done)


def _late(future, timeout):
    """The answer of ``future``, past ``timeout``: cancelled (where it has not begun)."""
    from ._workers import Late  # deferred: only a late job needs it

    future.cancel()
    return Late(timeout, ended=False)


def _job(work, set_up, set_up_args: tuple, job: tuple, attempt: int = 0):
    """In a worker: ``work(*job)``, the process set up first (once per setting); ``attempt``
    tells a job tried again from the first try, and is not used."""
    global _set_up
    if _set_up != set_up_args:
        set_up(*set_up_args)
        _set_up = set_up_args
    return work(*job)
