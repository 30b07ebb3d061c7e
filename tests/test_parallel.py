"""compile_all (compile/parallel/batch.py): many programs on spawned processes, with the real
NVRTC."""

from __future__ import annotations

import collections
import contextlib
import os
import random
import select
import signal
import subprocess
import sys
import time

import pytest

from tests import _fakelibs
from tests._support import (ROOT, child_env, last_json, run_json, run_py, run_scenario,
                            scenario_command, scenario_json)


def _tag() -> str:
    return f"{time.time_ns()}-{random.random()}"  # programs no earlier run compiled


def _log_lines(path) -> list[tuple[str, str]]:
    return [tuple(line.split()) for line in path.read_text().splitlines()] if path.exists() else []


def test_results_come_in_order_from_workers_each_key_once(tmp_path):
    log = tmp_path / "compiles.log"
    out = scenario_json("parallel_compiles", "compile_spec", "ggdgggg", _tag(), "90", "2",
                        env={"TESTS_COMPILE_LOG": str(log)})
    assert out["pools"] == [2]
    assert [r[0] for r in out["results"]] == [None] * 7
    assert all(r[1] == "sm_90" for r in out["results"])
    # each program's code holds its own kernel (k2 is the duplicate of k1)
    assert [r[2] for r in out["results"]] == [True, True, False, True, True, True, True]
    assert out["same"][1] is True  # the duplicate shares the code of the program it repeats
    compiled = _log_lines(log)
    keys = [key for _pid, key in compiled]
    assert len(keys) == 6 and len(set(keys)) == 6  # the duplicate was not compiled again
    assert any(pid != str(out["pid"]) for pid, _key in compiled)  # workers compiled


def test_every_failed_program_is_named_with_its_log_after_the_others_compiled():
    out = scenario_json("parallel_compiles", "compile_spec", "gbggb", _tag(), "90", "2")
    assert out["failures"] == [[1, "kernel.cu"], [4, "kernel.cu"]]
    assert "2 of 5 programs failed" in out["error"]
    assert "undefined_1" in out["logs"] and "undefined_4" in out["logs"]
    assert "program 1" in out["error"] and "program 4" in out["error"]
    assert out["good_again"] == ["memory"] * 3  # the good ones were compiled and kept


def test_programs_already_cached_cost_a_lookup_and_no_worker(tmp_path):
    tag = _tag()
    first = scenario_json("parallel_compiles", "compile_spec", "gggg", tag, "90", "2")
    assert [r[0] for r in first["results"]] == [None] * 4
    log = tmp_path / "compiles.log"
    again = scenario_json("parallel_compiles", "compile_spec", "gggg", tag, "90", "2",
                          env={"TESTS_COMPILE_LOG": str(log)})
    assert [r[0] for r in again["results"]] == ["disk"] * 4
    assert again["pools"] == [] and _log_lines(log) == []
    # one new program among cached ones: compiled here, still without a pool
    more = scenario_json("parallel_compiles", "compile_spec", "ggggg", tag, "90", "2",
                         env={"TESTS_COMPILE_LOG": str(log)})
    assert [r[0] for r in more["results"]] == ["disk"] * 4 + [None]
    assert more["pools"] == [] and [pid for pid, _k in _log_lines(log)] == [str(more["pid"])]


def test_a_batch_of_one_program_more_than_workers_is_shared_with_the_calling_process(tmp_path):
    """Three programs on two workers: two processes of their own took longer than compiling the
    three in turn (each one's start is as long as a short compilation).  Now one process is
    started, the calling process compiles the last program while it starts, then whatever no
    ready worker has taken; each key is compiled once.  A larger batch is the workers' alone."""
    log = tmp_path / "compiles.log"
    out = scenario_json("parallel_compiles", "compile_spec", "ggg", _tag(), "90", "2",
                        env={"TESTS_COMPILE_LOG": str(log)})
    assert out["pools"] == [1] and [r[0] for r in out["results"]] == [None] * 3
    assert all(r[2] for r in out["results"])  # each program's code holds its own kernel
    compiled = _log_lines(log)
    assert len({key for _pid, key in compiled}) == len(compiled) == 3
    assert str(out["pid"]) in [pid for pid, _key in compiled]
    more = scenario_json("parallel_compiles", "compile_spec", "gggg", _tag(), "90", "2",
                         env={"TESTS_COMPILE_LOG": str(tmp_path / "more.log")})
    assert more["pools"] == [2] and [r[0] for r in more["results"]] == [None] * 4
    assert str(more["pid"]) not in [pid for pid, _k in _log_lines(tmp_path / "more.log")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_shared_batch_never_waits_for_a_worker_that_is_slow_to_start(tmp_path):
    """Its workers' start made 30 s slower: the calling process compiles every program itself,
    ending the worker it no longer needs, instead of waiting for it; no process is left."""
    compiled = tmp_path / "compiles.log"
    env = _watched_env(tmp_path, tmp_path / "workers.log")
    env.update(TESTS_COMPILE_LOG=str(compiled), TESTS_WORKER_START_DELAY="30")
    started = time.monotonic()
    out = last_json(run_scenario("parallel_compiles", "compile_spec", "ggg", _tag(), "90", "2",
                                 environ=env))
    assert time.monotonic() - started < 20
    assert out["pools"] == [1] and [r[0] for r in out["results"]] == [None] * 3
    assert [pid for pid, _key in _log_lines(compiled)] == [str(out["pid"])] * 3
    assert out["alive"] == []  # the worker was ended, and reaped


def test_two_processes_compiling_the_same_keys_compile_each_once(tmp_path):
    tag, log = _tag(), tmp_path / "compiles.log"
    start = str(time.time() + 2.0)
    env = child_env({"TESTS_COMPILE_LOG": str(log)})
    procs = [subprocess.Popen(scenario_command("parallel_compiles", "at_once", start, "gggggg",
                                               tag), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    results = [last_json(subprocess.CompletedProcess([], 0, o, e))["results"] for o, e in outs]
    counts = collections.Counter(key for _pid, key in _log_lines(log))
    assert len(counts) == 6 and set(counts.values()) == {1}, counts
    # each program was compiled by one of the two runs; the other read it from the disk
    for i in range(6):
        assert sorted(str(r[i][0]) for r in results) in (["None", "disk"], ["None", "None"]) \
            or results[0][i][0] == results[1][i][0] == "disk"


def test_workers_never_load_the_driver_of_a_process_that_uses_it(tmp_path):
    driver = _fakelibs.build_shared_library(tmp_path, "libcuda.so.1", _fakelibs.ONE_DEVICE_DRIVER)
    log, maps = tmp_path / "compiles.log", tmp_path / "maps.log"
    site = tmp_path / "site"  # every process started, the workers too, imports sitecustomize
    site.mkdir()
    (site / "sitecustomize.py").write_text("import tests.scenarios.driver_mapped\n")
    env = {"CUDALOAD_LIBCUDA": driver, "TESTS_COMPILE_LOG": str(log), "TESTS_DRIVER_LOG": str(maps)}
    env = child_env(env)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", ROOT)])
    out = last_json(run_scenario("parallel_compiles", "using_the_driver", "gggg", _tag(),
                                 environ=env))
    assert [r[1] for r in out["results"]] == ["sm_86"] * 4  # the fake device's arch
    seen = [line.split() for line in maps.read_text().splitlines()]
    workers = [mapped for pid, mapped in seen if pid != str(out["pid"])]
    assert workers and set(workers) == {"0"}, seen  # compiled elsewhere, libcuda never mapped


def test_one_worker_compiles_in_this_process(tmp_path):
    log = tmp_path / "compiles.log"
    out = scenario_json("parallel_compiles", "compile_spec", "ggg", _tag(), "90", "1",
                        env={"TESTS_COMPILE_LOG": str(log)})
    assert out["pools"] == [] and [r[0] for r in out["results"]] == [None] * 3
    assert {pid for pid, _key in _log_lines(log)} == {str(out["pid"])}


@pytest.mark.parametrize("kw, error, words", [
    ({"programs": ["not a program"]}, TypeError, "item 0 is str"),
    ({"workers": 0}, ValueError, "1 or more"),
    ({"workers": 2.5}, TypeError, "number of processes"),
])
def test_bad_arguments_are_refused(kw, error, words):
    import cudaload

    kw = {"programs": [], **kw}
    with pytest.raises(error, match=words):
        cudaload.compile_all(kw.pop("programs"), **kw)


def test_an_empty_list_compiles_nothing():
    import cudaload

    assert cudaload.compile_all([]) == []


def test_the_first_error_of_another_kind_is_raised_as_it_is():
    out = subprocess.run([sys.executable, "-c", "\n".join([
        "import cudaload",
        "progs = [cudaload.Program('__global__ void k() {}')]",
        "try:",
        "    cudaload.compile_all(progs, arch='sm_20')",
        "except cudaload.NvrtcError as err:",
        "    print(type(err).__name__, 'sm_20' in str(err))"])],
        env=child_env(), capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["NvrtcError", "True"], out.stderr


def test_precompile_jobs_compile_every_arch_on_workers(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(KERNEL_TEXT + f"// {_tag()}\n")
    log = tmp_path / "compiles.log"
    proc = run_scenario("parallel_compiles", "cli", "precompile", src, "--arch", "sm_80",
                        "--arch", "sm_90", "--arch", "sm_100", "-j", "2", check=False,
                        env={"TESTS_COMPILE_LOG": str(log)}, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("(compiled)") == 3
    assert len({key for _pid, key in _log_lines(log)}) == 3


KERNEL_TEXT = 'extern "C" __global__ void pre(float *x) { x[threadIdx.x] *= 2.0f; }\n'


@pytest.mark.parametrize("run_as", ["path", "module"])
def test_workers_do_not_run_the_calling_script_again(tmp_path, run_as):
    """A spawned worker imported the calling script first (as ``__mp_main__``, by its path, or by
    its name when run with ``-m``): its top-level code ran again in every worker (whatever it
    imports, a framework's seconds included), and one that called compile_all outside a main
    guard made every worker die at start.  Workers need nothing of the script: it runs once,
    compile_all at its top level works, and the script's ``__file__`` and ``__spec__`` are as
    they were."""
    script = tmp_path / "unguarded.py"
    runs = tmp_path / "runs.txt"
    tag = _tag()
    script.write_text(
        "import json, os, sys, cudaload\n"
        f"with open({str(runs)!r}, 'a') as f:\n"
        "    f.write(f'{os.getpid()}\\n')\n"
        "progs = [cudaload.Program('extern \"C\" __global__ void k%d(int *p) { *p = %d; } // "
        + tag + "' % (i, i)) for i in range(4)]\n"
        "objs = cudaload.compile_all(progs, arch=90, workers=2)\n"
        "main = sys.modules['__main__']\n"
        "print(json.dumps({'kinds': [o.kind for o in objs], 'file': main.__file__,\n"
        "                  'spec': getattr(main.__spec__, 'name', None)}))\n")
    env = child_env({"CUDALOAD_CACHE_DIR": str(tmp_path / "c")})
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    command = [str(script)] if run_as == "path" else ["-m", "unguarded"]
    proc = subprocess.run([sys.executable, *command], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    out = last_json(proc)
    assert out["kinds"] == ["cubin"] * 4, proc.stderr[-2000:]
    assert len(runs.read_text().split()) == 1  # this process only, no worker
    assert out["file"] == str(script)
    assert out["spec"] == (None if run_as == "path" else "unguarded")


def test_the_workers_log_records_reach_the_callers_loggers(tmp_path):
    """A worker sends its DEBUG records back with its result: a caller that turned the cudaload
    log on after start (which no worker runs) sees every compilation, each under the process id
    of the worker that made it."""
    out = scenario_json("parallel_compiles", "logged", "gggg", _tag(), "2",
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path / "c")})
    compiled = [(pid, key) for name, pid, key, text in out["seen"]
                if name == "cudaload.compile" and key and text.startswith("NVRTC compiled")]
    assert len({key for _pid, key in compiled}) == 4, out["seen"]
    assert any(pid != out["pid"] for pid, _key in compiled)  # made in workers, logged here
    misses = [pid for name, pid, _key, text in out["seen"]
              if name == "cudaload.cache" and "miss" in text]
    assert any(pid != out["pid"] for pid in misses)  # every topic the caller turned on
    # how the workers started: forks of this process, which has no other thread
    said = [text for name, _pid, _key, text in out["seen"] if text.startswith("compile_all:")]
    assert said == ["compile_all: 0 of 4 programs found compiled, 4 to compile on 2 processes "
                    "(forks of this one)"], out["seen"]


def test_a_failed_jobs_log_records_reach_the_caller(tmp_path):
    """cudaload's errors pickle their own fields only: records attached to one were lost on the way
    back, so a job that failed (here NVRTC rejecting the program, on a worker: the first two
    programs are the workers' first jobs) sent none, its cache miss included."""
    out = scenario_json("parallel_compiles", "logged", "bbgg", _tag(), "2",
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path / "c")})
    assert out["failed"] == [0, 1]
    # Each key misses as often as any other: looked up here first, then where it is compiled.
    misses = [(pid, text.split()[2]) for _name, pid, _key, text in out["seen"]
              if text.startswith("disk miss")]
    counts = collections.Counter(key for _pid, key in misses)
    assert len(counts) == 4 and len(set(counts.values())) == 1, misses
    assert any(pid != out["pid"] for pid, _key in misses)


def test_two_threads_starting_pools_at_once_leave_the_script_as_it_was(tmp_path):
    """Each compile_all hides the script from the processes it starts and puts it back: two at once
    (the second one starting while the first one's pool starts) put back what the first one had
    hidden, and a script run with -m lost its ``__spec__`` for good."""
    out = scenario_json("parallel_compiles", "two_threads", _tag(),
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path / "c")})
    assert out == {"spec": "tests.scenarios.parallel_compiles",
                   "file": os.path.join(ROOT, "tests", "scenarios", "parallel_compiles.py")}


def _watched_env(tmp_path, log) -> dict:
    """The environment of a scenario whose processes, compile_all's workers included, import
    tests/_dying_workers.py: each writes itself down in ``log``, and a worker dies on a
    program that asks it to."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import tests._dying_workers\n")
    env = child_env({"TESTS_WORKERS_LOG": str(log), "CUDALOAD_CACHE_DIR": str(tmp_path / "c")})
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    return env


def _ended(proc: subprocess.Popen, log) -> tuple[str, str]:
    """Its output once it has exited by itself; a process that hangs at exit fails the test, and
    is killed with the processes it started (they hold its output open)."""
    try:
        return proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        for pid in [proc.pid, *_children(log, proc.pid)]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        pytest.fail("the process did not exit by itself")


def _children(log, pid: int) -> list[int]:
    """The processes ``pid`` started, as ``log`` (tests/_dying_workers.py) has them."""
    return [int(line.split()[0]) for line in log.read_text().splitlines()
            if line.split()[1:] == [str(pid), "started"]]


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _none_survive(log, pid: int) -> list[int]:
    """The processes ``pid`` started that still run 5 s after it ended (none, to pass)."""
    children = _children(log, pid)
    assert children  # the workers, and multiprocessing's resource tracker
    deadline = time.monotonic() + 5
    while any(map(_running, children)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [c for c in children if _running(c)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how, words", [("segv", "killed by SIGSEGV (11)"),
                                        ("abort", "killed by SIGABRT (6)"),
                                        ("exit", "exited with status 3"),
                                        ("hang", "killed by SIGKILL (9)")])
def test_a_worker_that_dies_fails_its_program_by_name_and_the_rest_compile(tmp_path, how, words):
    """A worker dying on a program (NVRTC crashing with SIGSEGV, aborting as it does on some
    options, ``os._exit``, or killed from outside) made every unfinished program fail with an
    error naming none of them; on Python 3.11 the pool's manager thread then failed on a job
    taken back with cancel(), the other worker was never ended and the interpreter hung at exit.
    Now the program it was compiling fails with an NvrtcError naming it and how the process
    ended, the other programs compile, and the process exits leaving no process behind."""
    log = tmp_path / "workers.log"
    proc = subprocess.Popen(scenario_command("parallel_compiles", "dying", how, _tag()),
                            env=_watched_env(tmp_path, log), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if how == "hang":  # killed from outside while it compiles
        deadline = time.monotonic() + 60
        while "compiles hang" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        hung = [line.split()[0] for line in log.read_text().splitlines()
                if line.endswith("compiles hang")]
        os.kill(int(hung[0]), signal.SIGKILL)
    out, err = _ended(proc, log)
    assert proc.returncode == 0, err[-3000:]
    assert "InvalidStateError" not in err and "Traceback" not in err, err[-3000:]
    result = last_json(subprocess.CompletedProcess([], 0, out, err))
    kind, message, program, exitcode, pickles = result["error"]
    assert kind == "NvrtcError" and program == "dies.cu" and pickles
    assert "program 2 (dies.cu)" in message and words in message, message
    assert message.endswith("(NVRTC may have crashed on it)")  # the next step
    assert exitcode == {"segv": -11, "abort": -6, "exit": 3, "hang": -9}[how]
    assert result["again"] == ["memory"] * 7  # the others were compiled, and kept
    assert _none_survive(log, result["pid"]) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_compile_all_at_once_and_ends_its_workers(tmp_path):
    """SIGINT while workers compiled took about 13 s to raise (the caller was compiling too,
    inside NVRTC, which holds off a KeyboardInterrupt until it returns).  Now the caller only
    waits: KeyboardInterrupt comes within a second, no worker is left, every cache entry written
    is whole and compile_all works again in the same process."""
    log = tmp_path / "workers.log"
    proc = subprocess.Popen(scenario_command("parallel_compiles", "interrupted", _tag()),
                            env=_watched_env(tmp_path, log), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    # the third compilation began: each worker is compiling, one has finished its first
    while sum(" compiles " in line for line in
              (log.read_text() if log.exists() else "").splitlines()) < 3:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    time.sleep(0.3)
    signalled = time.monotonic()
    proc.send_signal(signal.SIGINT)
    first = proc.stdout.readline()
    waited = time.monotonic() - signalled
    out, err = _ended(proc, log)
    assert first.strip() == "interrupted", (first, err[-3000:], log.read_text()[-3000:])
    assert waited < 1.5, waited
    result = last_json(subprocess.CompletedProcess([], 0, out, err))
    assert result["alive"] == []
    assert result["whole"] and all(result["whole"]), result  # at least the first one finished
    assert len(result["again"]) == 2
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    assert _none_survive(log, proc.pid) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_in_a_shared_batch_comes_once_this_process_compiled_and_ends_the_workers(tmp_path):
    """Two programs on two workers: one worker compiles the first, this process the second.
    SIGINT while both compile raises KeyboardInterrupt once this process's compilation returns
    (NVRTC holds it off, as in Program.compile()), the worker is ended, no process is left and
    every cache entry written is whole."""
    log = tmp_path / "workers.log"
    proc = subprocess.Popen(scenario_command("parallel_compiles", "interrupted", _tag(), "2"),
                            env=_watched_env(tmp_path, log), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while " compiles " not in (log.read_text() if log.exists() else ""):  # the worker's began
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    first = proc.stdout.readline()
    out, err = _ended(proc, log)
    assert first.strip() == "interrupted", (first, err[-3000:], log.read_text()[-3000:])
    result = last_json(subprocess.CompletedProcess([], 0, out, err))
    assert result["alive"] == [] and all(result["whole"]), result
    assert len(result["again"]) == 2
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    assert _none_survive(log, proc.pid) == []


def test_ctrl_c_once_this_process_holds_its_keys_lock_leaves_the_key_free(tmp_path):
    """KeyboardInterrupt in a shared batch after this process took its key's lock and before
    the block that releases it began (the first miss reads the mount table there) left the lock
    taken: the next compile_all of the same programs waited for it for good, as a CI run of the
    test above once did.  Now the key is released and both compile again."""
    proc = run_scenario("parallel_compiles", "interrupted_at_the_lock", _tag(), timeout=60,
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path / "c")})
    assert proc.stdout.splitlines()[0] == "interrupted", proc.stdout
    result = last_json(proc)
    assert result["fired"] == 1 and len(result["again"]) == 2, result


def _pid_of_job(what):
    """A job for the workers of the tests below: this process's id, else raises or answers
    something that does not pickle."""
    if what == "raise":
        raise LookupError("asked to")
    if what == "unsendable":
        return lambda: None
    return os.getpid()


def test_workers_answer_every_job_and_end_with_the_block():
    """Each job is answered once with what it returned or raised (an answer that does not pickle
    fails that job alone, and its process goes on); every process has ended when the block
    ends."""
    from cudaload.compile.parallel import _workers

    jobs = {i: (what,) for i, what in enumerate(["pid", "raise", "unsendable", "pid", "pid"])}
    with _workers.Workers(2, _pid_of_job, print, ()) as workers:
        got = {tag: (ok, value) for tag, ok, value in workers.run(jobs)}
        processes = [w.process for w in workers._processes]
    assert sorted(got) == list(jobs)
    assert got[1][0] is False and isinstance(got[1][1], LookupError)
    assert got[2][0] is False and "could not be sent back" in str(got[2][1])
    pids = {got[i][1] for i in (0, 3, 4)}
    assert all(got[i][0] for i in (0, 3, 4)) and pids <= {p.pid for p in processes}
    assert len(processes) == 2 and all(p.returncode == 0 for p in processes)


def _until(condition, what: str) -> None:
    """Wait until ``condition()`` holds: AssertionError after two minutes (nothing that slow)."""
    deadline = time.monotonic() + 120
    while not condition():
        assert time.monotonic() < deadline, f"waited two minutes for {what}"
        time.sleep(0.002)


def _gate(path: str) -> None:
    """Go on once the file ``path`` exists (a worker's initializer, its jobs'): what a worker
    does is then the test's choice, not the machine's speed."""
    _until(lambda: os.path.exists(path), path)


def _pid_behind_gate(gates: str, tag: int) -> int:
    """A job for the workers below: this process's id, once the test has opened ``gates/tag``."""
    _gate(os.path.join(gates, str(tag)))
    return os.getpid()


def _answered(worker) -> bool:
    """Whether the answers' pipe of ``worker`` (a _workers._Process) holds something unread."""
    return bool(select.select([worker.answers], [], [], 0)[0])


def test_workers_share_jobs_with_the_calling_process_each_run_once(tmp_path):
    """With ``here``, the calling process runs the last job while the processes start; free at
    once, it runs every job whose process has not said it is ready (ending that process).  Slow,
    it leaves to a process that has answered meanwhile the next job, and each job runs once.

    What the process does when is set by gates the test opens (files), not by how fast the
    machine is: a process whose initializer never ends is never ready, and each ``here`` of the
    slow run lasts until the process has done what it waits for."""
    from cudaload.compile.parallel import _workers

    gates = str(tmp_path)
    jobs = {i: (gates, i) for i in range(4)}
    ran: list = []
    never = os.path.join(gates, "never")  # the initializer's gate: not opened
    with _workers.Workers(1, _pid_behind_gate, _gate, (never,)) as workers:
        got = [tag for tag, _ok, _value in workers.run(jobs, here=ran.append)]
        left = list(workers._processes)
    assert got == [] and ran == [3, 2, 1, 0] and left == []

    ran = []
    open(os.path.join(gates, "0"), "w").close()  # job 0 answers at once; job 1 once here lets it
    with _workers.Workers(1, _pid_behind_gate, print, ()) as workers:
        def slow(tag):
            worker = workers._processes[0]
            if not ran:  # the first job here lasts until the process has said it is ready
                _until(lambda: worker.ready or _answered(worker), "the process to be ready")
            else:  # the next, until the process has answered again (job 0's answer or job 1's)
                open(os.path.join(gates, "1"), "w").close()
                _until(lambda: _answered(worker), "an answer")
            ran.append(tag)

        answers = {tag: value for tag, ok, value in workers.run(jobs, here=slow) if ok}
        pid = workers._processes[0].process.pid
    assert ran == [3, 2] and answers == {0: pid, 1: pid}


# A thread of the calling process: a worker is then a fresh interpreter, never a fork.
_ANOTHER_THREAD = ("import threading, time\n"
                   "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n")


def test_a_worker_is_a_plain_interpreter_with_the_callers_flags():
    """A worker starts without multiprocessing (a spawned process imports it, with pickle and
    socket, before anything: the start a small batch cannot pay back), reads its jobs and
    answers through its pipes, and runs with the interpreter flags of the process that started
    it."""
    code = ("import sys\n" + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import imported\n"
            "with _workers.Workers(1, imported, print, ()) as w:\n"
            "    print(dict((t, v) for t, ok, v in w.run({0: ('multiprocessing',), 1: ('pickle',)})))\n"
            "print('multiprocessing' in sys.modules)\n")
    out = run_py(code, flags=("-O", "-B"))
    lines = out.stdout.splitlines()
    assert lines[-2] == str({0: (False, 1, 1), 1: (False, 1, 1)}), out.stdout
    assert lines[-1] == "False", out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_starts_without_subprocess_and_inherits_only_its_pipes():
    """Workers were started with subprocess.Popen, whose import (signal, threading, selectors)
    cost a fresh process's first compile_all some 11 ms on the way to the worker's start.  Now
    a process started without interpreter options imports no subprocess to start one, and the
    worker still gets only its two pipes and /dev/null as stdin: not a descriptor the caller
    made inheritable, as Popen's close_fds would have closed it."""
    code = ("import json, os, sys\n" + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import descriptors\n"
            "r, w = os.pipe(); os.set_inheritable(r, True); os.set_inheritable(w, True)\n"
            "with _workers.Workers(1, descriptors, print, ()) as workers:\n"
            "    got = [value for _tag, _ok, value in workers.run({0: ()})][0]\n"
            "print(json.dumps({'mine': f'pipe:[{os.fstat(r).st_ino}]', 'got': got,\n"
            "                  'subprocess': 'subprocess' in sys.modules}))\n")
    result = run_json(code)
    assert result["subprocess"] is False
    links = result["got"]
    assert links["0"] == "/dev/null" and result["mine"] not in links.values()
    theirs = [link for fd, link in links.items() if int(fd) > 2 and link.startswith("pipe:")]
    assert len(theirs) == 2, links  # its jobs and its answers (1 and 2: this test's capture)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_single_threaded_caller_forks_its_workers_which_hold_no_end_of_the_callers():
    """A fresh interpreter took some 45-70 ms to be ready (its start, the compile path's imports,
    NVRTC), as long as a short kernel's compilation, so two short kernels on a worker took as
    long as in turn.  A process with no other thread now forks its workers.  Each closes the
    calling process's ends of every worker's pipes (else a worker would not see its jobs' pipe
    end while another held it open), and every one leaves by itself when asked (status 0)."""
    code = ("import json, os, sys\n"
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started\n"
            "with _workers.Workers(3, how_started, print, ()) as workers:\n"
            "    got, ends = [], None\n"
            "    for _t, ok, v in workers.run({i: () for i in range(6)}):\n"
            "        got.append(v)  # the ends while every worker has a job left (then it leaves)\n"
            "        ends = ends or [[os.fstat(fd).st_ino for fd in (w.jobs, w.answers)]\n"
            "                        for w in workers._processes]\n"
            "    processes = [w.process for w in workers._processes]\n"
            "print(json.dumps({'got': got, 'ends': ends, 'me': os.getpid(),\n"
            "                  'codes': [p.returncode for p in processes]}))\n")
    result = run_json(code)
    assert [g["forked"] for g in result["got"]] == [True] * 6, result
    assert {g["parent"] for g in result["got"]} == {result["me"]}
    assert result["codes"] == [0, 0, 0]  # asked to leave, each did
    every = {f"pipe:[{ino}]" for pair in result["ends"] for ino in pair}
    for worker in result["got"]:
        pipes = [link for fd, link in worker["links"].items()
                 if int(fd) > 2 and link in every]
        # its own jobs' and answers' ends, one descriptor each: no other worker's, no caller's
        assert len(pipes) == 2 and len(set(pipes)) == 2, (worker, result["ends"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_fork_that_fails_starts_a_fresh_interpreter_instead():
    """A fork refused (ENOMEM where the system does not overcommit memory for the copy) would
    have failed compile_all with an OSError; the worker is a fresh interpreter instead."""
    code = ("import errno, json, os\n"
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started\n"
            "def refused():\n"
            "    raise OSError(errno.ENOMEM, 'Cannot allocate memory')\n"
            "os.fork = refused\n"
            "with _workers.Workers(1, how_started, os.getpid, ()) as workers:\n"
            "    got = [v for _t, ok, v in workers.run({0: ()})]\n"
            "print(json.dumps({'forks': _workers.forks(), 'got': got}))\n")
    result = run_json(code)
    assert result["forks"] is True and [g["forked"] for g in result["got"]] == [False]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_forked_worker_runs_none_of_the_callers_signal_handlers_and_writes_none_of_its_output():
    """A forked worker inherits the caller's Python signal handlers and its buffered output.
    Terminated (in a job that does not end, the block left by an error), it dies of SIGTERM without
    running the caller's handler, and what the caller had printed but not flushed is written
    once, also where the worker writes to the same output."""
    code = ("import os, signal\n"
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started\n"
            "signal.signal(signal.SIGTERM, lambda *a: print('handled', os.getpid(), flush=True))\n"
            "print('before', end=' ')\n"  # buffered: stdout is a pipe
            "try:\n"
            "    with _workers.Workers(2, how_started, os.getpid, ()) as workers:\n"
            "        for _t, _ok, (forked, pid) in workers.run({0: ('sleep',), 1: ('forked',)}):\n"
            "            print('forked' if forked else 'spawned', end=' ')\n"
            "            sleeping = [w.process for w in workers._processes\n"
            "                        if w.process.pid != pid]\n"
            "            raise LookupError\n"
            "except LookupError:\n"
            "    print('code', *[p.returncode for p in sleeping])\n")
    # its output buffered, as a pipe's is by default
    out = run_py(code, unset=("PYTHONUNBUFFERED",))
    # the worker's own line (flushed by the job) comes between
    assert out.stdout == f"before worker\nforked code {-signal.SIGTERM}\n", out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_killed_between_jobs_fails_no_job():
    """A worker killed while it waits for its next job (from outside): that job goes to a new
    process instead of failing as if the dead one had been compiling it."""
    from cudaload.compile.parallel import _workers

    answers = []
    with _workers.Workers(1, _pid_of_job, print, ()) as workers:
        for _tag, ok, value in workers.run({0: ("pid",), 1: ("pid",)}):
            answers.append((ok, value))
            if len(answers) == 1:
                os.kill(value, signal.SIGKILL)
                while _running(value):
                    time.sleep(0.01)
    assert [ok for ok, _v in answers] == [True, True] and answers[0][1] != answers[1][1]


def test_compile_all_reaches_a_program_only_through_its_public_plan():
    # compile_all and compile() share one seam, Program.plan() -> a Request (looked up, built
    # and kept by request.py and build.py): parallel.py names no private attribute of Program.
    import ast

    from cudaload import Program

    private = {name for name in vars(Program) if name.startswith("_")
               and not name.startswith("__")} | {"_p"}  # _p: set on each instance
    with open(os.path.join(ROOT, "cudaload", "compile", "parallel", "batch.py"),
              encoding="utf-8") as f:
        tree = ast.parse(f.read())
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert "plan" in used and used & private == set(), used & private
