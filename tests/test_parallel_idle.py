"""A shared batch of compile_all (a few keys) starts no more processes than CPUs are idle
(compile/parallel/_idle.py): beside busy processes two short programs took 1.1-1.45x as long as
compiled in turn."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests._support import run_json

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# compile_all of three short programs on two workers (a shared batch) with the workers' starts
# counted; TESTS_IDLE: the idle CPUs to say, or "real".
_BATCH = r"""
import json, os
import cudaload
from cudaload.compile.parallel import _idle
if os.environ["TESTS_IDLE"] != "real":
    _idle.idle_cpus = lambda: int(os.environ["TESTS_IDLE"])
started = []
real_fork, real_spawn = os.fork, os.posix_spawn
def fork():
    pid = real_fork()
    if pid:
        started.append(pid)
    return pid
def spawn(*a, **kw):
    pid = real_spawn(*a, **kw)
    started.append(pid)
    return pid
os.fork, os.posix_spawn = fork, spawn
src = 'extern "C" __global__ void k%d(int *p) { *p = %d; } // ' + os.environ["TESTS_TAG"]
objs = cudaload.compile_all([cudaload.Program(src % (i, i))
                             for i in range(int(os.environ.get("TESTS_PROGRAMS", "3")))],
                            arch=90, workers=int(os.environ.get("TESTS_WORKERS", "2")))
print(json.dumps({"started": len(started), "kinds": [o.kind for o in objs],
                  "cached": [o.cached for o in objs]}))
"""


def _batch(idle: str, tmp_path, **env) -> dict:
    return run_json(_BATCH, env={"CUDALOAD_CACHE_DIR": str(tmp_path / idle), "TESTS_IDLE": idle,
                                 "TESTS_TAG": str(time.time_ns()), **env})


def test_a_shared_batch_cut_to_the_idle_cpus_is_still_shared_with_this_process(tmp_path):
    """Four programs on four workers with two CPUs idle: one worker and this process, not two
    workers while this process waits (the batch was judged again with the fewer processes)."""
    out = _batch("2", tmp_path, TESTS_PROGRAMS="4", TESTS_WORKERS="4")
    assert out == {"started": 1, "kinds": ["cubin"] * 4, "cached": [None] * 4}, out


@pytest.mark.parametrize("idle, started", [(0, 0), (1, 0), (2, 1), (8, 1)])
def test_a_shared_batch_starts_a_worker_for_each_idle_cpu_but_its_own(tmp_path, idle, started):
    out = _batch(str(idle), tmp_path)
    assert out == {"started": started, "kinds": ["cubin"] * 3, "cached": [None] * 3}, out


def test_beside_a_busy_process_on_every_cpu_a_shared_batch_compiles_here_in_turn(tmp_path):
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)  # each running
        out = _batch("real", tmp_path)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert out == {"started": 0, "kinds": ["cubin"] * 3, "cached": [None] * 3}, out


def test_the_idle_cpus_are_the_cpus_no_other_task_runs_on(monkeypatch, tmp_path):
    from cudaload.compile.parallel import _idle

    real_open = open

    def loadavg(text: bytes):
        def opened(path, *args, **kw):
            if path == "/proc/loadavg":
                (tmp_path / "loadavg").write_bytes(text)
                return real_open(tmp_path / "loadavg", *args, **kw)
            return real_open(path, *args, **kw)
        return opened

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    for text, idle in ((b"0.50 0.40 0.30 1/250 999\n", 4), (b"3.1 2.0 1.0 3/250 999\n", 2),
                       (b"9.0 9.0 9.0 12/250 999\n", 0), (b"garbage\n", None)):
        monkeypatch.setattr("builtins.open", loadavg(text))
        assert _idle.idle_cpus() == idle, text
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})  # some CPUs: not known
    assert _idle.idle_cpus() is None
