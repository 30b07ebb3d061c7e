"""Many programs compiled at once on every core: :func:`compile_all`.

NVRTC serialises compilations across the threads of a process beyond about 1.5x (two CUB
programs on two threads took as long as in turn), so the work goes to processes.  They are forks
of this process where that is safe, else fresh interpreters (see _workers.py): a process that has
initialised the driver, or has another thread, is never forked, and no worker imports the calling
script.  A worker never initialises CUDA: the architecture (``arch=None``: the current device's,
else NVRTC's choice), the kind of code and, for PTX, the driver's version are settled here, in the
calling process, and sent.

In the calling process each program is looked up first, as ``compile()`` would (memory cache, its
bundle, the disk cache): a program found there costs that lookup and no worker.  The rest go to the
workers, one per distinct cache key, as the Program's text, name, options, headers and name
expressions; each worker makes the Program again and compiles it through the disk cache, whose
per-key locks make each key compiled once, by one process, also when other processes compile the
same keys.  Workers send back the code, its log and lowered names; the calling process makes the
ObjectCode and keeps it in its memory cache, in the order the programs were given.  Failures are
collected and reported together once every program is done: a worker that dies (NVRTC crashing on
a program) fails the program it was compiling, by name, and another process takes its place.

With ``timeout=``, a key not compiled within that many seconds of its worker beginning it fails
by name, and its worker is ended (_clock.py); every key is then compiled on a worker, none in this
process, whose NVRTC nothing could interrupt.

A fresh interpreter's start (the interpreter, the compile path's imports, NVRTC's loading: some
45-70 ms on 2 cores) is as long as a short kernel's compilation; a fork's is about a millisecond.
So a batch of at most one key more than ``workers`` (and no timeout) is shared with this process
(_workers.py's ``here``): it loads what a first build loads (before forking, so that the forks
have it too), starts ``workers - 1`` processes (no more than CPUs are idle: _idle.py), each with
a key, and compiles the last key itself meanwhile; then, whenever it is free, it hands the next
key to a worker that has finished, else compiles the last key no worker has taken, else the key
of a worker that has not yet started (ending that worker).  Each key is compiled once, and no
worker's start is waited for while this process could compile (bench/fleet_bench.py
--quick-kernels).  Ctrl-C then waits for the compilation this process is in, as it would for
Program.compile().  A larger batch is the workers' alone, where this process handing out keys
as workers finish gains more than its own share: it only waits for them, so Ctrl-C stops
compile_all at once; it loads NVRTC and the toolchain before its forks too.

A process that may not fork (it has used the GPU) forks its workers from one template process
instead (_template.py), which loads what a first build loads once for all of them.  In a batch
of four keys a worker or more, NVRTC's first compilation in a process (some 200 ms more than a
later one on the H200 host's 16 CPUs, where the workers' CPU time was 1.25-1.68x the serial
run's) is paid once, by a tiny program compiled before the forks (``_warm``): in the template,
or in this process where it forks (never with a timeout: NVRTC here cannot be interrupted), but
only where no CUDA driver is installed, which NVRTC's first compilation would load, with a
thread of its own after which the process may not fork (see ``_warm``).
"""

from __future__ import annotations

from . import _idle, _workers
from ._idle import cores
from .. import build as _build, program as _program, request as _request
from ..build import ready_to_build
from ..plan import assume_driver_version, driver_version
from ..._base import _log
from ...errors import CompileError, CudaLoadError, NvrtcError
from ..objectcode import ObjectCode

__all__ = ["compile_all", "compile_many", "cores"]


def compile_all(programs, arch=None, output: str = "auto", workers: int | None = None,
                executor=None, timeout: float | None = None, progress=None) -> list[ObjectCode]:
    """Compile every Program in ``programs`` for ``arch`` (as :meth:`Program.compile` does) on
    ``workers`` processes (None: one per CPU), or on ``executor`` (any
    ``concurrent.futures.Executor``-like, see _executor.py); the ObjectCode of each, in order,
    kept in this process's memory and disk caches.

    ``timeout``: seconds a program may take from when its worker begins it (None: no limit);
    past it, the program fails by name (NvrtcError) and its worker is ended, while the others
    are compiled.  With a timeout, every program NVRTC compiles is compiled on a worker, none in
    this process (whose NVRTC nothing could interrupt).  ``progress``: ``progress(done, total)``
    called each time more programs are done (and once before, with those found compiled), or
    True for a line on stderr where that is a terminal (_progress.py).

    Raises one CompileError naming every program NVRTC rejected, with each log, once all the
    others are compiled (``.failures``: (index, program name, error) for each program that
    failed); when no program was rejected but some failed otherwise, the first such error (an
    unknown arch, NVRTC missing, a program past ``timeout``).  Raises TypeError for something
    that is no Program, ValueError for a number of workers below 1 (each also for a bad
    ``timeout`` or ``progress``, before anything is compiled).
    """
    programs = list(programs)
    results, failures = compile_many([(p, arch) for p in programs], output, workers, executor,
                                     timeout, progress)
    if failures:
        raise _failure(failures, len(programs))
    return results


def compile_many(items, output: str = "auto", workers: int | None = None, executor=None,
                 timeout: float | None = None, progress=None):
    """``compile_all`` for (program, arch) pairs: (results, failures), with None in ``results``
    and (index, program name, error) in ``failures`` for each that failed.  Raises TypeError,
    ValueError for its arguments."""
    timeout = _seconds(timeout)
    line = _progress_line(progress)
    items = list(items)
    for i, (prog, _arch) in enumerate(items):
        if not isinstance(prog, _program.Program):
            raise TypeError(f"compile_all takes cudaload.Program objects; item {i} is "
                            f"{type(prog).__name__}")
    workers = cores() if workers is None else _count(workers)
    results: list = [None] * len(items)
    errors: dict = {}
    count = _Count(line or progress or None, results, errors)
    try:
        pending = _plan(items, output, results, errors)
        count()
        _compile(items, output, pending, (workers, executor, timeout), results, errors, count)
    finally:
        if line is not None:  # also when compile_all raised: the terminal's next line is its own
            line.end()
    return results, [(i, items[i][0].name, errors[i]) for i in sorted(errors)]


def _plan(items, output: str, results: list, errors: dict) -> dict:
    """Each program looked up in this process (see the module's docstring): its code in
    ``results``, or its error in ``errors``, or it is waiting in what is returned: key ->
    [(index, Request, Found), ...], what nobody compiled yet.  A PTX or NVVM IR program is
    linked now: no worker has anything to do for it."""
    pending: dict = {}
    for i, (prog, arch) in enumerate(items):
        try:
            request = prog.plan(arch, output)
            found = _request.lookup(request)
            if found.code is None and found.key is None:  # linked
                found = _build.build(request, found)
            if found.code is not None:
                results[i] = _request.keep(request, found)
            else:
                pending.setdefault(found.key, []).append((i, request, found))
        except (CudaLoadError, OSError, ValueError) as err:
            errors[i] = err
    return pending


def _compile(items, output: str, pending: dict, where: tuple, results: list, errors: dict,
             count) -> None:
    """Compile what is ``pending``, ``where`` (workers, executor, timeout) says; fill
    ``results``/``errors``, calling ``count()`` as programs are done."""
    workers, executor, timeout = where
    n = min(workers, len(pending)) if _workers.AVAILABLE else 1
    shared = 1 < n and len(pending) <= n + 1 and timeout is None and executor is None
    n = _idle.processes(n) if shared else n  # no more than CPUs are idle; one: each key here
    # timed: on workers alone, even one, which can be ended (NVRTC in this process cannot)
    timed = timeout is not None and _workers.AVAILABLE and bool(pending)
    if _log.enabled("compile"):
        _log.debug("compile", "compile_all: %d of %d programs found compiled, %d to compile on "
                   "%s", len(items) - len(pending) - len(errors), len(items), len(pending),
                   _where(n, executor is not None and bool(pending), timed))
    if pending and executor is not None:
        _in_workers(items, output, pending, n, results, errors, (executor, timeout, count, False))
    elif n > 1 or timed:
        _in_workers(items, output, pending, n, results, errors, (None, timeout, count, shared))
    else:
        for waiting in pending.values():
            _here(items, output, waiting, results, errors)
            count()


class _Count:
    """compile_all's progress: ``callback(done, total)`` whenever more programs are done (with a
    result or an error) than when it was last called."""

    def __init__(self, callback, results: list, errors: dict) -> None:
        self.callback, self.results, self.errors = callback, results, errors
        self.last = -1

    def __call__(self) -> None:
        if self.callback is not None:
            done = len(self.errors) + sum(r is not None for r in self.results)
            if done > self.last:
                self.last = done
                self.callback(done, len(self.results))


def _seconds(timeout) -> float | None:
    """``timeout`` checked: None, or a positive finite number of seconds."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds such as 600, or None for no "
                        f"limit; not {type(timeout).__name__}")
    if not 0 < timeout < float("inf"):  # NaN too
        raise ValueError(f"timeout must be a number of seconds above 0 (or None for no limit), "
                         f"not {timeout}")
    return float(timeout)


def _progress_line(progress):
    """The built-in display where ``progress`` is True, else None (``progress`` checked: None,
    False, True or a callable)."""
    if progress is True:
        from ._progress import Line  # deferred: only a batch that shows it needs it

        return Line()
    if not (progress is None or progress is False or callable(progress)):
        raise TypeError(f"progress must be True (a line on a terminal), a callable "
                        f"progress(done, total), or None; not {type(progress).__name__}")
    return None


def _where(n: int, executor: bool, timed: bool = False) -> str:
    """Where compile_all compiles, in its log: ``executor``'s workers, else ``n`` processes
    (``timed``: workers, even one)."""
    if executor:
        return "the executor"
    if n <= 1 and not timed:  # one key, or none (every program found compiled)
        return "this process"
    return f"{n} process{'es' if n > 1 else ''} ({'forks of this one' if _workers.forks() else 'started'})"


def _count(workers) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers must be a number of processes such as 4, or None for one per "
                        f"CPU; not {type(workers).__name__}")
    if workers < 1:
        raise ValueError(f"workers must be 1 or more (or None for one per CPU), not {workers}")
    return workers


def _in_workers(items, output: str, pending: dict, n: int, results: list, errors: dict,
                how: tuple) -> None:
    """Compile each pending key on one of ``n`` processes (this one among them where there are
    no more keys than that and no timeout: see the module's docstring), or on an executor;
    ``how`` is (executor or None, timeout, count, whether shared); fill ``results``/``errors``."""
    executor, timeout, count, share = how
    kinds = {found.kind for waiting in pending.values() for _i, _asked, found in waiting}
    driver = driver_version() if "ptx" in kinds else None  # part of a PTX key
    jobs = {}
    for key, waiting in pending.items():
        _i, request, found = waiting[0]
        prog = request.inputs
        spec = (prog.source, prog.name, prog.options, _request.headers_of(prog),
                prog.name_expressions)
        jobs[key] = (spec, found.target.sm(), found.kind)
    set_up = (driver, _log.enabled_topics())

    def deliver(done) -> None:
        for key, ok, made in done:
            if not ok:
                made = _raised(made, pending[key][0][0], items)
            # An executor's workers may be elsewhere, with disk caches of their own.
            _deliver(items, output, key, pending[key], made, results, errors,
                     land=executor is not None)
            count()

    def mine(key) -> None:
        _here(items, output, pending[key], results, errors)
        count()

    if executor is not None:
        from . import _executor  # deferred: only a batch given an executor needs it

        deliver(_executor.run(executor, _work, _start_worker, set_up, jobs, _Failed, timeout))
        return
    warm = None if share or len(jobs) < 4 * n or driver_version() is not None \
        else (_warm, (next(iter(jobs.values()))[1],))  # never where a driver is: see _warm
    if _workers.forks():  # loaded once, before the forks; NVRTC warmed (else in the template)
        _ready()
        if warm and timeout is None:  # never with a timeout: NVRTC here cannot be interrupted
            warm[0](*warm[1])
    with _workers.Workers(n - 1 if share else n, _work, _start_worker, set_up, warm) as workers:
        deliver(workers.run(jobs, here=mine if share else None, timeout=timeout))


def _raised(raised, i: int, items) -> Exception:
    """The error of the program at ``i`` whose job on a worker ``raised`` that (or died)."""
    if isinstance(raised, _Failed):  # what the job logged, then its error as raised
        _log.replay(raised.records)
        raised = raised.error
    if isinstance(raised, (CudaLoadError, OSError, ValueError)):
        return raised
    name = items[i][0].name
    if isinstance(raised, _workers.Late):
        return NvrtcError(f"program {i} ({name}) was not compiled by compile_all: {raised}.",
                          hint=raised.HINT, program=name, timeout=raised.timeout)
    if isinstance(raised, _workers.Died):
        return NvrtcError(f"the process compiling program {i} ({name}) for compile_all died "
                          f"before it finished: {raised}.", hint=raised.HINT, program=name,
                          exitcode=raised.exitcode)
    # anything else a worker raised, as compile() would have
    return NvrtcError(f"compiling program {i} ({name}) raised {type(raised).__name__}: {raised}",
                      hint="compile this program alone with Program.compile() to see the whole "
                      "error", program=name)


def _here(items, output: str, waiting: list, results: list, errors: dict) -> None:
    """Compile in this process what ``waiting`` waits for (a key no worker took)."""
    for i, *_asked in waiting:
        prog, arch = items[i]
        try:  # asked again: a program met before is a memory hit by now
            results[i] = _build.run(prog.plan(arch, output))
        except (CudaLoadError, OSError, ValueError) as err:
            errors[i] = err


def _deliver(items, output: str, key: str, waiting: list, made, results: list,
             errors: dict, land: bool = False) -> None:
    """Give each program waiting for ``key`` the code a worker ``made`` (or its error); with
    ``land``, also write it to this process's disk cache (a worker elsewhere wrote its own)."""
    if isinstance(made, BaseException):
        for i, *_rest in waiting:
            errors[i] = made
        return
    their_key, kept, stamps, code, kind, arch, log, names, linked, records = made
    _log.replay(records)
    first = None
    for i, request, found in waiting:
        obj = ObjectCode(code, kind, arch, log=log, lowered_names=names, linked=linked) \
            if first is None else first._as(None)  # one load for all programs of this key
        # Kept as what this request asked for only where the worker's key is its own (it is,
        # unless files or NVRTC changed meanwhile); the worker's stamps: what it watches
        # includes the files NVRTC read there that the key lacks.
        ours = kept and their_key == found.key
        made = found._replace(code=obj, where="elsewhere", key=their_key, stamps=stamps,
                              kept=ours)
        results[i] = _request.keep(request, made, store=first is None and land and ours)
        first = first or obj


def _start_worker(driver: int | None, topics: tuple) -> None:
    """A worker's start: the caller's driver version (see :func:`plan.assume_driver_version`),
    its log's topics kept to be sent back with each result, and what a first compilation loads
    (NVRTC, the toolchain): the worker says it is ready once it compiles as fast as this
    process, which in a shared batch compiles a key itself rather than wait for a start."""
    assume_driver_version(driver)
    _log.keep_for_parent(topics, _workers.forked)
    _ready()


def _ready() -> None:
    """What a first build loads, loaded now (:func:`build.ready_to_build`)."""
    try:
        ready_to_build()
    except Exception:  # raised again, typed, by the job that needs it
        pass


def _warm(arch: str) -> None:
    """NVRTC's first compilation in a process, paid now by a tiny program for ``arch``: on the
    H200 host it costs some 200 ms more than a later one (docs/benchmarks.md), which a worker
    forked after this should not pay again.  On 2 CPUs it takes some 35 ms and saves a fork
    little (what a first compilation costs more there is mostly page faults, each process's
    own): hence only in a batch of four programs a worker or more.  And only where no CUDA
    driver is installed: NVRTC 13.0's first compilation loads the driver where there is one and
    starts a thread of its own in the process (``cuda00001400006``, seen on the H100 host with
    driver 580), after which no worker may be a fork of it (_fork.py), so each would be a fresh
    interpreter; without the tiny program each fork pays its own first compilation instead."""
    try:
        from ...bindings import nvrtc  # deferred: as in _nvrtc

        nvrtc.compile('extern "C" __global__ void warm() {}', "warm.cu", (f"-arch={arch}",))
    except Exception:  # the jobs raise it again, typed, where it matters
        pass


class _Failed(Exception):
    """A worker's error, with the log records of its job: raised as it is, they would be lost
    (cudaload's errors pickle their own fields only)."""

    def __init__(self, error: Exception, records: list):
        super().__init__(error, records)  # pickled as these arguments
        self.error, self.records = error, records


def _work(spec, arch: str, kind: str):
    """In a worker: compile the program ``spec`` describes for ``arch`` as ``kind`` through the
    disk cache; (key, kept, stamps, code, kind, arch, log, lowered names, linked, log records).
    Raises :class:`_Failed`."""
    source, name, options, headers, names = spec
    try:
        prog = _program.Program(source, name=name, options=options, headers=headers,
                                name_expressions=names, std=None)  # options hold -std=, each -I
        request = prog.plan(arch, kind)
        found = _build.build(request, _request.lookup(request))
        obj = _request.keep(request, found)
    except Exception as exc:
        raise _Failed(exc, _log.taken()) from None
    return (found.key, found.kept, found.stamps, obj.code, obj.kind, obj.arch, obj.log,
            obj.lowered_names, obj.linked, _log.taken())


def _failure(failures: list, total: int) -> CudaLoadError:
    """The one error compile_all raises for ``failures``."""
    rejected = [f for f in failures if isinstance(f[2], CompileError)]
    if not rejected:
        return failures[0][2]
    names = ", ".join(name for _i, name, _err in failures)
    parts = [f"{len(failures)} of {total} programs failed ({names}):"]
    parts += [f"--- program {i}, {name} ---\n{err}" for i, name, err in failures]
    err = CompileError("\n".join(parts),
                       log="\n".join(f"--- program {i}, {name} ---\n{getattr(e, 'log', str(e))}"
                                     for i, name, e in failures),
                       name=names, hint="fix each program named above; the others compiled",
                       failures=tuple(failures))
    return err
