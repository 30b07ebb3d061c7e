"""compile_all's workers in a process that may not fork: forks of one template process
(compile/parallel/_template.py), and the workers' early leave (compile/parallel/_workers.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import child_env, last_json, run_json, scenario_command, scenario_json
from tests.test_parallel import _ended, _running, _tag, _watched_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A thread of the calling process: it may not fork (compile/parallel/_fork.py).
_ANOTHER_THREAD = ("import threading, time\n"
                   "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n")


def _gone(pids, seconds: float = 10.0) -> list[int]:
    """Those of ``pids`` still running after ``seconds`` (none, to pass)."""
    deadline = time.monotonic() + seconds
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _running(pid)]


def test_a_caller_that_may_not_fork_forks_its_workers_from_one_template():
    """Such a caller started every worker as a fresh interpreter, which imported the compile path
    and loaded NVRTC again (the 64-kernel family's CPU time 1.25-1.68x the serial run's on 16
    CPUs).  Now the workers are forks of one template process, which is not the caller; each
    holds its own two pipes and no other worker's, each leaves by itself when asked (status 0),
    and the template is gone with the block."""
    code = ("import json, os\n" + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started\n"
            "with _workers.Workers(3, how_started, print, ()) as workers:\n"
            "    got, ends = [], None\n"
            "    for _t, ok, v in workers.run({i: () for i in range(6)}):\n"
            "        got.append(v)  # the ends while every worker has a job left (then it leaves)\n"
            "        ends = ends or [[os.fstat(fd).st_ino for fd in (w.jobs, w.answers)]\n"
            "                        for w in workers._processes]\n"
            "    processes = [w.process for w in workers._processes]\n"
            "    template = workers._template.process.pid\n"
            "print(json.dumps({'got': got, 'ends': ends, 'me': os.getpid(), 'template': template,\n"
            "                  'codes': [p.returncode for p in processes]}))\n")
    result = run_json(code)
    assert [g["forked"] for g in result["got"]] == [True] * 6, result
    assert {g["parent"] for g in result["got"]} == {result["template"]} != {result["me"]}
    assert result["codes"] == [0, 0, 0]
    assert _gone([result["template"]]) == []
    every = {f"pipe:[{ino}]" for pair in result["ends"] for ino in pair}
    for worker in result["got"]:
        pipes = [link for fd, link in worker["links"].items() if int(fd) > 2 and link in every]
        assert len(pipes) == 2 and len(set(pipes)) == 2, (worker, result["ends"])
        # and no pipe of the template's to the caller: its only pipes are its own two
        assert len([link for fd, link in worker["links"].items()
                    if int(fd) > 2 and link.startswith("pipe:")]) == 2, worker


def test_compile_all_in_a_process_that_used_the_driver_starts_one_interpreter(tmp_path):
    """Eight programs on two workers in a process marked as one that has initialised the
    driver: one fresh interpreter started (the template, which compiles a tiny program before
    its forks in a batch of four programs a worker; before, one interpreter per worker), and the
    same code as each program compiled alone."""
    tag = _tag()
    code = ("import json, os\n"
            "import cudaload\n"
            "from cudaload._base import lifetime\n"
            "lifetime.mark_unforkable()\n"
            "started = []\n"
            "real = os.posix_spawn\n"
            "def counted(*a, **kw):\n"
            "    started.append(a[0]); return real(*a, **kw)\n"
            "os.posix_spawn = counted\n"
            "src = 'extern \"C\" __global__ void k%d(int *p) { *p = %d; } // " + tag + "'\n"
            "progs = [cudaload.Program(src % (i, i)) for i in range(8)]\n"
            "objs = cudaload.compile_all(progs, arch=90, workers=2)\n"
            "print(json.dumps({'started': len(started),\n"
            "                  'code': [o.code.hex() for o in objs]}))\n")
    result = run_json(code, env={"CUDALOAD_CACHE_DIR": str(tmp_path / "a")})
    assert result["started"] == 1, result["started"]
    alone = run_json("import json, cudaload\n"
                     "src = 'extern \"C\" __global__ void k%d(int *p) { *p = %d; } // " + tag +
                     "'\nprint(json.dumps([cudaload.Program(src % (i, i)).compile(arch=90)"
                     ".code.hex() for i in range(8)]))\n",
                     env={"CUDALOAD_CACHE_DIR": str(tmp_path / "b")})
    assert result["code"] == alone


def test_a_template_that_may_not_fork_leaves_fresh_interpreters_in_its_place():
    """The template checks _fork.py's rules before each fork: one whose initializer left another
    thread forks none, and each worker is a fresh interpreter, as before."""
    code = ("import json\n" + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started, start_a_thread\n"
            "with _workers.Workers(2, how_started, start_a_thread, ()) as workers:\n"
            "    got = [v for _t, ok, v in workers.run({i: ('forked',) for i in range(2)})]\n"
            "print(json.dumps({'got': got}))\n")
    result = run_json(code)
    assert [forked for forked, _pid in result["got"]] == [False, False], result


# The compile topic's records of the block that follows, printed as JSON at its end.
_LOGGED = ("import json, logging\n"
           "records = []\n"
           "class Keep(logging.Handler):\n"
           "    def emit(self, record): records.append(record.getMessage())\n"
           "logging.getLogger('cudaload.compile').addHandler(Keep())\n"
           "logging.getLogger('cudaload.compile').setLevel(logging.DEBUG)\n")


def test_the_log_says_how_many_workers_the_template_forked_and_why_not_the_others():
    """Where the template forked no worker, each started as a fresh interpreter and nothing said
    so, nor why (a process that used the GPU was seen to start its workers so, for a cause
    unknown): the ``compile`` topic now says how many it forked, why the caller forks none,
    and why the template did not fork the others."""
    code = (_LOGGED + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started, start_a_thread\n"
            "for start in (print, start_a_thread):\n"
            "    with _workers.Workers(2, how_started, start, ()) as workers:\n"
            "        got = [v for _t, ok, v in workers.run({i: ('forked',) for i in range(2)})]\n"
            "print(json.dumps({'said': [r for r in records if 'template' in r]}))\n")
    said = run_json(code)["said"]
    assert len(said) == 2, said
    forked, refused = said
    assert "no worker is a fork of this process (2 threads run in it" in forked, forked
    assert ": 2 of 2 forked from a template process" in forked and "fresh" not in forked, forked
    assert ": 0 of 2 forked from a template process; the others start as fresh interpreters: " \
        "the template may not fork: 2 threads run in it" in refused, refused


def test_the_log_gives_the_exit_status_of_a_template_that_ended_before_its_forks():
    """A template that died before it answered was never seen to end (the caller held the
    template's end of its pipe open while it read), and compile_all waited forever; and its pipe
    ends a moment before it can be reaped, so the log said "exit status None"."""
    code = (_LOGGED + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started, exit_in_the_template\n"
            "with _workers.Workers(2, how_started, exit_in_the_template, ()) as workers:\n"
            "    got = [ok for _t, ok, v in workers.run({i: ('forked',) for i in range(2)})]\n"
            "print(json.dumps({'said': [r for r in records if 'template' in r]}))\n")
    said = run_json(code)["said"]
    assert len(said) == 1 and ": 0 of 2 forked from a template process; the others start as " \
        "fresh interpreters: the template ended before it forked them (exit status 3)" \
        in said[0], said


def test_the_log_names_the_driver_where_a_process_that_used_it_forks_no_worker(tmp_path):
    code = (_LOGGED + "import cudaload\n"
            "from cudaload._base import lifetime\n"
            "lifetime.mark_unforkable()\n"
            "src = 'extern \"C\" __global__ void k%d(int *p) { *p = %d; } // " + _tag() + "'\n"
            "cudaload.compile_all([cudaload.Program(src % (i, i)) for i in range(8)], arch=90,"
            " workers=2)\n"
            "print(json.dumps({'said': [r for r in records if 'template' in r]}))\n")
    said = run_json(code, env={"CUDALOAD_CACHE_DIR": str(tmp_path)})["said"]
    assert said == ["compile_all: no worker is a fork of this process (it has initialised the "
                    "CUDA driver): 2 of 2 forked from a template process"], said


def test_a_template_worker_past_its_timeout_is_ended_by_its_pid():
    """A job of a template's worker past the timeout is answered Late and its worker ended by
    its pid (the template reaps it only when asked, so the pid is still its); the other jobs
    are answered."""
    code = ("import json, os, time\n" + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import how_started\n"
            "t = time.monotonic()\n"
            "with _workers.Workers(2, how_started, print, ()) as workers:\n"
            "    got = {tag: (ok, type(v).__name__) for tag, ok, v in\n"
            "           workers.run({0: ('sleep',), 1: ('forked',), 2: ('forked',)}, timeout=3)}\n"
            "    codes = [w.process.returncode for w in workers._processes]\n"
            "    pids = [w.process.pid for w in workers._processes]\n"
            "print(json.dumps({'got': got, 'codes': codes, 'pids': pids,\n"
            "                  'took': time.monotonic() - t}))\n")
    result = run_json(code)
    assert result["got"] == {"0": [False, "Late"], "1": [True, "tuple"], "2": [True, "tuple"]}
    assert result["took"] < 60, result
    assert _gone(result["pids"]) == []


@pytest.mark.parametrize("how, words", [("segv", "killed by SIGSEGV (11)"),
                                        ("hang", "killed by SIGKILL (9)")])
def test_a_template_worker_that_dies_fails_its_program_by_name(tmp_path, how, words):
    """As test_parallel's test of a dying worker, in a process that may not fork: the template
    tells the caller how its worker ended, the other programs compile, and no process is left
    (the template's forks included)."""
    log = tmp_path / "workers.log"
    proc = subprocess.Popen(scenario_command("parallel_compiles", "dying", how, _tag(), "1"),
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
    result = last_json(subprocess.CompletedProcess([], 0, out, err))
    kind, message, program, exitcode, _pickles = result["error"]
    assert kind == "NvrtcError" and program == "dies.cu", message
    assert words in message and exitcode == {"segv": -11, "hang": -9}[how], message
    assert result["again"] == ["memory"] * 7
    lines = [line.split() for line in log.read_text().splitlines()]
    started = {int(pid): int(parent) for pid, parent, what, *_rest in lines if what == "started"}
    descendants = [pid for pid, parent in started.items()
                   if parent == result["pid"] or started.get(parent) == result["pid"]]
    assert len(descendants) > 2, lines  # the template and its forks
    assert _gone(descendants) == []


def test_the_template_and_its_workers_leave_when_the_caller_dies():
    """A caller killed while its workers wait for jobs: the template reads the end of its pipe
    and leaves, and each worker the end of its jobs' pipe."""
    code = ("import json, os, signal, sys\n" + _ANOTHER_THREAD +
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import nap\n"
            "with _workers.Workers(3, nap, print, ()) as workers:\n"
            "    for _tag, _ok, _v in workers.run({i: (0,) for i in range(6)}):\n"
            "        pids = [w.process.pid for w in workers._processes]\n"
            "        print(json.dumps([workers._template.process.pid, *pids]), flush=True)\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=child_env())
    pids = last_json(proc)
    assert proc.returncode == -signal.SIGKILL and len(pids) == 4, proc.stderr[-2000:]
    assert _gone(pids) == []


def test_a_worker_with_no_job_left_leaves_while_the_others_work():
    """A worker that has answered when no job is left was kept until every job was answered,
    and its exit waited for at the end; now it is asked to leave at once."""
    code = ("import json, os\n"
            "from cudaload.compile.parallel import _workers\n"
            "from tests._worker_jobs import nap\n"
            "def _running(pid):\n"
            "    try:\n"
            "        with open(f'/proc/{pid}/stat') as f:\n"
            "            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
            "    except OSError:\n"
            "        return False\n"
            "seen = []\n"
            "with _workers.Workers(2, nap, print, ()) as workers:\n"
            "    for tag, ok, pid in workers.run({0: (0,), 1: (3,)}):\n"
            "        seen.append(pid)\n"
            "        if tag == 1:\n"
            "            first = seen[0]\n"
            "            running = _running(first)\n"
            "print(json.dumps({'running': running, 'seen': seen}))\n")
    result = run_json(code)
    assert result["running"] is False, result


# The restore of the mask after a fork, in the caller, raises KeyboardInterrupt as a Ctrl-C that
# came meanwhile is delivered (injected here: the caller's second call of pthread_sigmask).
_INTERRUPTED_AT_THE_FORKS_RESTORE = r"""
import json, os, time
import _signal
from cudaload.compile.parallel import _fork

parent = os.getpid()

class Interrupting:
    calls = 0
    def __getattr__(self, name):
        return getattr(_signal, name)
    def pthread_sigmask(self, how, mask):
        before = _signal.pthread_sigmask(how, mask)
        if os.getpid() == parent:
            Interrupting.calls += 1
            if Interrupting.calls == 2:
                raise KeyboardInterrupt
        return before

_fork._signal = Interrupting()
try:
    _fork.fork(lambda: time.sleep(30), [])
    raised = False
except KeyboardInterrupt:
    raised = True
_fork._signal = _signal
try:
    left = os.waitpid(-1, os.WNOHANG)[0] or "running"
except ChildProcessError:
    left = None
print(json.dumps({"raised": raised, "child left": left}))
"""


def test_a_ctrl_c_as_a_fork_restores_the_mask_leaves_no_child_behind():
    """A KeyboardInterrupt raised as the caller restored its signal mask after the fork lost
    the child's pid: nobody ended or reaped it (a worker left running, then a zombie).  Now the
    child is killed and reaped before the KeyboardInterrupt goes on."""
    result = run_json(_INTERRUPTED_AT_THE_FORKS_RESTORE, timeout=60)
    assert result == {"raised": True, "child left": None}, result


# Which batches compile the tiny program before the forks: Workers' ``before``, recorded.
_WARMED = ("import json, time, cudaload\n"
           "from cudaload.compile.parallel import _workers\n"
           "seen = []\n"
           "class Recording(_workers.Workers):\n"
           "    def __init__(self, n, target, initializer, initargs, before=None):\n"
           "        seen.append(before is not None)\n"
           "        super().__init__(n, target, initializer, initargs, before)\n"
           "_workers.Workers = Recording\n"
           "src = 'extern \"C\" __global__ void k%d(int *p) { *p = %d; } // ' + str(time.time_ns())\n"
           "objs = cudaload.compile_all([cudaload.Program(src % (i, i)) for i in range(8)],"
           " arch=90, workers=2)\n"
           "print(json.dumps({'warmed': seen, 'compiled': [o.cached for o in objs]}))\n")


def test_no_tiny_program_before_the_forks_where_a_driver_is_installed(recording_driver, tmp_path):
    """NVRTC 13.0's first compilation loads the CUDA driver where one is installed and starts a
    thread in the process (seen on the H100 host, driver 580): the template's tiny program left
    it one that may not fork, and every worker started as a fresh interpreter.  Where a driver is
    found the batch forks without it; where none is, the tiny program is compiled first."""
    with_driver = run_json(_WARMED, env={"CUDALOAD_LIBCUDA": recording_driver,
                                         "CUDALOAD_CACHE_DIR": str(tmp_path / "a")})
    without = run_json(_WARMED, env={"CUDALOAD_LIBCUDA": str(tmp_path / "none" / "libcuda.so.1"),
                                     "CUDALOAD_CACHE_DIR": str(tmp_path / "b")})
    assert with_driver == {"warmed": [False], "compiled": [None] * 8}, with_driver
    assert without == {"warmed": [True], "compiled": [None] * 8}, without


def _listings(monkeypatch, listings: list[list[str]]) -> None:
    """/proc/self/task as _fork sees it: ``listings`` in turn, then the last again."""
    from cudaload.compile.parallel import _fork

    real = os.listdir

    def listdir(path):
        if path == "/proc/self/task":
            return listings.pop(0) if len(listings) > 1 else listings[0]
        return real(path)
    monkeypatch.setattr(_fork.os, "listdir", listdir)
    monkeypatch.setattr(_fork.lifetime, "unforkable", lambda: False)


def test_a_thread_still_listed_as_it_ends_does_not_refuse_the_fork(monkeypatch):
    from cudaload.compile.parallel import _fork

    _listings(monkeypatch, [["1", "2"], ["1"]])  # joined in Python, ended by the kernel next
    assert _fork.refusal(settle=True) is None


def test_a_thread_that_goes_on_running_refuses_the_fork(monkeypatch):
    from cudaload.compile.parallel import _fork

    _listings(monkeypatch, [["1", "999999"]])
    assert _fork.refusal(settle=True).startswith("2 threads run in it")


def test_a_batch_waits_for_an_ending_thread_once_not_once_a_worker(monkeypatch):
    """A process with a thread of its own (a driver's) is asked once per worker started: the
    looks a millisecond apart, for a thread that is ending, come once a batch (_workers.forks)."""
    from cudaload.compile.parallel import _fork, _workers

    _listings(monkeypatch, [["1", "7"]])
    naps = []
    monkeypatch.setattr(_fork.time, "sleep", naps.append)
    assert not _workers.forks() and len(naps) == _fork.SETTLE_LOOKS
    assert not _fork.possible() and _fork.refusal().startswith("2 threads")
    assert len(naps) == _fork.SETTLE_LOOKS  # a worker's own look: no wait


def test_a_second_ctrl_c_while_an_interrupted_forks_child_is_ended_leaves_no_zombie():
    out = scenario_json("fork_children", "interrupted_twice")
    assert out == {"raised": "KeyboardInterrupt", "left_unreaped": False}
