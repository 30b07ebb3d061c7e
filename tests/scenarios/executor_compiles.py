"""compile_all on an executor the caller gives, in a fresh process, for
tests/test_parallel_executor.py.

    python -m tests.scenarios.executor_compiles SCENARIO ARGS...

Each scenario prints what it found as JSON on its last line.
"""

from __future__ import annotations

import json
import os
import sys

import tests.scenarios.compile_log  # noqa: F401  (counts compilations)
from tests.scenarios.parallel_compiles import _programs


def _report(executor, spec: str, tag: str) -> None:
    from cudaload import compile_all
    from cudaload.compile import cache
    from cudaload.errors import CompileError

    programs = _programs(spec, tag)
    try:
        objs = compile_all(programs, arch=90, executor=executor)
        failed = None
    except CompileError as err:
        objs, failed = [], [[i, name] for i, name, _e in err.failures]
    print(json.dumps({
        "kinds": [o.kind for o in objs], "pid": os.getpid(),
        "entries": cache.default().info()["entries"],
        "again": [p.compile(arch=90).cached for p in programs] if not failed else [],
        "failed": failed}))


def processes(spec: str, tag: str) -> None:
    """compile_all on a spawn-started concurrent.futures.ProcessPoolExecutor of 2."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        _report(pool, spec, tag)


def dask(spec: str, tag: str) -> None:
    """compile_all on the executor of a Dask client of a LocalCluster of 2 worker processes."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        _report(client.get_executor(), spec, tag)


def dask_dying(how: str, tag: str, workers_cache: str, retries: str) -> None:
    """compile_all of four programs on a Dask LocalCluster of 2 worker processes whose cache
    folder is ``workers_cache`` (another machine's), the one at index 1 making its worker die
    ``how`` mid-job (tests/_dying_workers.py), the scheduler allowed ``retries`` more workers
    lost by a job before it fails it (Dask's default is 3): the error raised,
    as [type, message, its program], where the others came from when compiled again, and this
    process's disk cache entries."""
    import dask  # noqa: F401  (its config)
    from distributed import Client, LocalCluster

    import cudaload
    from cudaload.compile import cache

    programs = _programs("gggg", tag)
    programs[1] = cudaload.Program(programs[1].source + f" // DIE:{how}", name="dies.cu")
    # worker-saturation 1.0: a worker holds only the task it runs, so no other program is lost
    # with the one that kills it (Dask fails every task "processing" on a worker it loses).
    with dask.config.set({"distributed.scheduler.allowed-failures": int(retries),
                          "distributed.scheduler.worker-saturation": 1.0}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=None,
                         env={"CUDALOAD_CACHE_DIR": workers_cache}) as cluster, \
            Client(cluster) as client:
        try:
            cudaload.compile_all(programs, arch=90, executor=client.get_executor())
            error = None
        except cudaload.CudaLoadError as err:
            error = [type(err).__name__, str(err), getattr(err, "program", None)]
    print(json.dumps({
        "error": error, "entries": cache.default().info()["entries"],
        "again": [p.compile(arch=90).cached for i, p in enumerate(programs) if i != 1]}))


def pool_timed(tag: str, timeout: str) -> None:
    """compile_all of four programs on a spawn-started ProcessPoolExecutor of 2 with ``timeout``,
    the one at index 1 hanging in its worker (tests/_dying_workers.py): the error raised, as
    [type, message, its program], the seconds compile_all took, where the others came from when
    compiled again.  The pool's processes are killed after (the hung one would keep its
    shutdown waiting)."""
    import multiprocessing
    import time
    from concurrent.futures import ProcessPoolExecutor

    import cudaload

    programs = _programs("gggg", tag)
    programs[1] = cudaload.Program(programs[1].source + " // DIE:hang", name="late.cu")
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    began = time.monotonic()
    try:
        cudaload.compile_all(programs, arch=90, executor=pool, timeout=float(timeout))
        error = None
    except cudaload.CudaLoadError as err:
        error = [type(err).__name__, str(err), getattr(err, "program", None)]
    took = time.monotonic() - began
    for process in list(getattr(pool, "_processes").values()):
        process.kill()
    pool.shutdown(wait=True, cancel_futures=True)
    print(json.dumps({
        "error": error, "took": took,
        "again": [p.compile(arch=90).cached for i, p in enumerate(programs) if i != 1]}))


SCENARIOS = {f.__name__: f for f in (processes, dask, dask_dying, pool_timed)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
