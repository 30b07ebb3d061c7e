"""compile_all in a fresh process, for tests/test_parallel.py.

    python -m tests.scenarios.parallel_compiles SCENARIO ARGS...

With ``$TESTS_COMPILE_LOG`` each NVRTC compilation, in this process or in a worker of
compile_all (which sends its log records here), appends ``<pid> <key>`` (compile_log.py).  Each
scenario prints what it found as JSON on its last line.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import tests.scenarios.compile_log  # noqa: F401  (counts compilations)


KERNEL = 'extern "C" __global__ void k{i}(float *x) {{ x[threadIdx.x] = {i}.0f * x[0]; }} // {tag}'
BAD = 'extern "C" __global__ void k{i}(float *x) {{ x[0] = undefined_{i}; }} // {tag}'


def _programs(spec: str, tag: str):
    """One Program per letter of ``spec``: "g" a good kernel, "b" one NVRTC rejects, "d" the
    same as the previous one (a duplicate)."""
    from cudaload import Program

    out = []
    for i, letter in enumerate(spec):
        if letter == "d":
            out.append(Program(out[-1].source))
        else:
            out.append(Program((KERNEL if letter == "g" else BAD).format(i=i, tag=tag)))
    return out


def _whatever_else_runs() -> None:
    """Have a shared batch start its workers whatever else runs on this machine now, as where
    the idle CPUs are not known: its own rule (compile/parallel/_idle.py) is
    tests/test_parallel_idle.py's."""
    from cudaload.compile.parallel import _idle

    _idle.idle_cpus = lambda: None


def _counting_pools() -> list:
    """Count the sets of worker processes compile_all starts (each is a list item: how many)."""
    from cudaload.compile.parallel import _workers

    _whatever_else_runs()

    started = []
    real = _workers.Workers.__init__

    def counted(self, n, *a, **kw):
        started.append(n)
        real(self, n, *a, **kw)

    _workers.Workers.__init__ = counted  # type: ignore[method-assign]
    return started


def compile_spec(spec: str, tag: str, arch: str = "90", workers: str = "") -> None:
    """compile_all of the programs of ``spec``: for each, [where its code came from, its arch,
    whether it holds its own kernel], the pools started, this process's pid and its child
    processes after compile_all returned (none, to pass); or the error."""
    import cudaload

    pools = _counting_pools()
    progs = _programs(spec, tag)
    try:
        got = cudaload.compile_all(progs, arch=None if arch == "none" else int(arch),
                                   workers=int(workers) if workers else None)
    except cudaload.CompileError as err:
        again = [p.compile(arch=int(arch)).cached for p, c in zip(progs, spec) if c == "g"]
        print(json.dumps({"error": str(err), "failures": [f[:2] for f in err.failures],
                          "logs": err.log, "good_again": again, "pools": pools}))
        return
    print(json.dumps({"results": [[o.cached, o.arch, f"k{i}".encode() in o.code]
                                  for i, o in enumerate(got)],
                      "same": [got[i] is got[i - 1] or got[i]._module is got[i - 1]._module
                               for i in range(1, len(got))],
                      "pools": pools, "pid": os.getpid(), "alive": _children()}))


def at_once(start: str, spec: str, tag: str) -> None:
    """From the wall-clock time ``start``, compile_all the programs of ``spec``."""
    while time.time() < float(start):
        time.sleep(0.001)
    compile_spec(spec, tag)


def using_the_driver(spec: str, tag: str) -> None:
    """In a process that initialised the driver (CUDALOAD_LIBCUDA, a fake one-device driver):
    compile_all with arch=None, as compile_spec prints it, with the device's arch."""
    import cudaload

    assert cudaload.is_available(), cudaload.status()
    print("device", cudaload.Device(0).compute_capability, file=sys.stderr)
    compile_spec(spec, tag, arch="none", workers="2")


def logged(spec: str, tag: str, workers: str) -> None:
    """compile_all of the programs of ``spec`` with the cudaload log turned on here, after start (so
    in no worker): [logger name, process id, key, message] of each record this process's handler
    got, the indexes of the programs that failed, and this process's pid."""
    import logging

    import cudaload

    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append([record.name, record.process, getattr(record, "key", None),
                         record.getMessage()])

    logging.getLogger("cudaload").setLevel(logging.DEBUG)
    logging.getLogger("cudaload").addHandler(Keep())
    failed = []
    try:
        cudaload.compile_all(_programs(spec, tag), arch=90, workers=int(workers))
    except cudaload.CompileError as err:
        failed = [f[0] for f in err.failures]
    print(json.dumps({"pid": os.getpid(), "failed": failed, "seen": seen}))


def two_threads(tag: str) -> None:
    """Two threads' compile_all at once, the second one starting while the first one's workers
    start (each start slowed by 0.2 s): this module's ``__spec__`` name and ``__file__`` after
    both."""
    import threading

    import cudaload
    from cudaload.compile.parallel import _workers

    start = _workers._Process.__init__

    def slow(self, *args):
        time.sleep(0.2)
        start(self, *args)

    _workers._Process.__init__ = slow  # type: ignore[method-assign]
    threads = [threading.Thread(target=cudaload.compile_all, args=(_programs("gg", tag + str(i)),),
                                kwargs={"arch": 90, "workers": 2}) for i in range(2)]
    threads[0].start()
    time.sleep(0.05)
    threads[1].start()
    for t in threads:
        t.join()
    main = sys.modules["__main__"]
    print(json.dumps({"spec": getattr(main.__spec__, "name", None),
                      "file": getattr(main, "__file__", None)}))


def dying(how: str, tag: str, unforkable: str = "") -> None:
    """compile_all of eight programs on two workers, the one at index 2 making its worker die
    ``how`` (tests/_dying_workers.py): the error raised, as [type, message, its program and exit
    code, whether it pickles], where the others' code came from when compiled again, and this
    process's pid.  ``unforkable``: this process first marks itself as one that has initialised
    the driver (its workers are then forks of a template, compile/parallel/_template.py)."""
    import pickle

    import cudaload

    if unforkable:
        from cudaload._base import lifetime

        lifetime.mark_unforkable()

    progs = _programs("gggggggg", tag)
    progs[2] = cudaload.Program(progs[2].source + f" // DIE:{how}", name="dies.cu")
    try:
        cudaload.compile_all(progs, arch=90, workers=2)
        error = None
    except cudaload.CudaLoadError as err:
        back = pickle.loads(pickle.dumps(err))
        error = [type(err).__name__, str(err), getattr(err, "program", None),
                 getattr(err, "exitcode", None), str(back) == str(err) and type(back) is type(err)]
    again = [p.compile(arch=90).cached for i, p in enumerate(progs) if i != 2]
    print(json.dumps({"error": error, "again": again, "pid": os.getpid()}))


def timed(how: str, timeout: str, workers: str, tag: str) -> None:
    """compile_all of four programs on ``workers`` workers with ``timeout`` ("none": None), the one
    at index 1 holding ``DIE:how`` (tests/_dying_workers.py): the error raised, as [type, message,
    its program, its timeout], the seconds compile_all took, the counts its progress callback
    got, where the others' code came from when compiled again, the children left, this pid, and
    the descriptors open before and after compile_all."""
    import time

    import cudaload

    progs = _programs("gggg", tag)
    progs[1] = cudaload.Program(progs[1].source + f" // DIE:{how}", name="late.cu")
    counts = []
    fds = [len(os.listdir("/proc/self/fd"))]
    began = time.monotonic()
    try:
        cudaload.compile_all(progs, arch=90, workers=int(workers),
                             timeout=None if timeout == "none" else float(timeout),
                             progress=lambda done, total: counts.append([done, total]))
        error = None
    except cudaload.CudaLoadError as err:
        error = [type(err).__name__, str(err), getattr(err, "program", None),
                 getattr(err, "timeout", None)]
    took = time.monotonic() - began
    fds.append(len(os.listdir("/proc/self/fd")))
    again = [p.compile(arch=90).cached for i, p in enumerate(progs) if i != 1]
    print(json.dumps({"error": error, "took": took, "counts": counts, "again": again,
                      "alive": _children(), "pid": os.getpid(),
                      "fds": fds}))


CUB = ('#include <cub/block/block_reduce.cuh>\n'
       'extern "C" __global__ void k{i}(int *p) {{ typedef cub::BlockReduce<int, 128> R;\n'
       '  __shared__ typename R::TempStorage t; p[{i}] = R(t).Sum(p[threadIdx.x]); }} // {tag}')


def _children() -> list:
    """This process's child processes, living or not yet reaped (Linux's /proc): compile_all's
    workers are plain processes, which multiprocessing.active_children() does not list."""
    me = f"/proc/{os.getpid()}/task"
    found = []
    for task in os.listdir(me):
        with open(os.path.join(me, task, "children")) as f:
            found += [int(pid) for pid in f.read().split()]
    return found


def interrupted(tag: str, count: str = "24") -> None:
    """compile_all of ``count`` programs including CUB (seconds each) on two workers, until SIGINT:
    prints "interrupted" the moment KeyboardInterrupt reaches this process, then [every cache
    entry whole?, the worker processes still alive, two programs compiled again (where from)]."""
    import cudaload
    from cudaload.compile import cache

    # Ctrl-C as at a terminal, also where this process was started with SIGINT ignored (as a
    # shell's background job is), which Python then leaves ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _whatever_else_runs()
    progs = [cudaload.Program(CUB.format(i=i, tag=tag)) for i in range(int(count))]
    try:
        cudaload.compile_all(progs, arch=90, workers=2)
        print("finished", flush=True)
        return
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    disk = cache.default()
    keys = [name[:-4] for name in os.listdir(disk.folder) if name.endswith(".bin")]
    whole = [disk.lookup(key) is not None for key in keys]
    alive = _children()
    again = [o.cached for o in cudaload.compile_all(progs[:2], arch=90, workers=2)]
    print(json.dumps({"whole": whole, "alive": alive, "again": again}))


def interrupted_at_the_lock(tag: str) -> None:
    """compile_all of two programs on two workers (a shared batch: this process compiles one),
    KeyboardInterrupt raised in this process once it holds its key's lock, before NVRTC (where
    the first miss looks up the folder's filesystem, claims.py), as Ctrl-C there would: then
    both compiled again, [where from], as JSON (before the fix, the lock was left taken and this
    process waited for it for good)."""
    import cudaload
    from cudaload.compile.cache import claims
    from cudaload.compile.parallel import _workers

    _whatever_else_runs()
    real, fired = claims.crosses_machines, []

    def interrupted(folder):
        if not _workers.in_worker and not fired:
            fired.append(folder)
            raise KeyboardInterrupt
        return real(folder)

    claims.crosses_machines = interrupted
    progs = _programs("gg", tag)
    try:
        cudaload.compile_all(progs, arch=90, workers=2)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    again = [o.cached for o in cudaload.compile_all(progs, arch=90, workers=2)]
    print(json.dumps({"fired": len(fired), "again": again}))


def cli(*words: str) -> None:
    """The command line, with ``words``; exits with its status."""
    from cudaload.cli import main

    sys.exit(main(list(words)))


SCENARIOS = {"compile_spec": compile_spec, "at_once": at_once,
             "using_the_driver": using_the_driver, "logged": logged, "two_threads": two_threads,
             "dying": dying, "timed": timed, "interrupted": interrupted,
             "interrupted_at_the_lock": interrupted_at_the_lock, "cli": cli}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
