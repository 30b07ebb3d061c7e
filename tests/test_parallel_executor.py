"""compile_all(..., executor=...): the jobs run on an executor the caller gives (a
concurrent.futures process pool, a Dask LocalCluster of worker processes); the code comes back as
ObjectCode, lands in the caller's memory and disk caches, and a program NVRTC rejects is named."""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests._support import ROOT, scenario_json


def _run(how: str, spec: str, tag: str, cache_dir, log):
    return scenario_json("executor_compiles", how, spec, tag, timeout=300,
                         env={"CUDALOAD_CACHE_DIR": str(cache_dir), "TESTS_COMPILE_LOG": str(log)})


def _dying_env(tmp_path) -> dict:
    """The environment of a scenario whose processes, the executor's included, import
    tests/_dying_workers.py (a worker dies, or hangs, on a program that asks it to)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import tests._dying_workers\n")
    return {"CUDALOAD_CACHE_DIR": str(tmp_path / "cache"),
            "TESTS_WORKERS_LOG": str(tmp_path / "workers.log"),
            "PYTHONPATH": os.pathsep.join([str(site), ROOT, os.environ.get("PYTHONPATH", "")])}


def _compilers(log) -> set:
    return {line.split()[0] for line in log.read_text().splitlines()}


def test_a_process_pool_compiles_and_its_code_lands_here(tmp_path):
    log = tmp_path / "compiles.log"
    got = _run("processes", "ggg", "pool", tmp_path / "cache", log)
    assert got["kinds"] == ["cubin"] * 3 and got["entries"] == 3
    assert got["again"] == ["memory"] * 3
    # A spawned worker logs its compilations itself (it imports the scenario) and sends them
    # here too: one distinct line per compilation.
    assert len(set(log.read_text().splitlines())) == 3
    assert str(got["pid"]) not in _compilers(log)  # compiled by the pool's processes


def test_a_program_rejected_on_an_executor_is_named(tmp_path):
    got = _run("processes", "gb", "pool-bad", tmp_path / "cache", tmp_path / "log")
    assert [i for i, _n in got["failed"]] == [1] and got["kinds"] == []


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="distributed (Dask) is not installed")
def test_a_dask_local_cluster_compiles_and_its_code_lands_here(tmp_path):
    log = tmp_path / "compiles.log"
    got = _run("dask", "gggg", "dask", tmp_path / "cache", log)
    assert got["kinds"] == ["cubin"] * 4 and got["entries"] == 4
    assert got["again"] == ["memory"] * 4
    assert str(got["pid"]) not in _compilers(log) and len(_compilers(log)) >= 1


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="distributed (Dask) is not installed")
def test_a_dask_worker_killed_mid_job_fails_its_program_by_name_and_the_rest_land_here(tmp_path):
    """A Dask worker dying while it compiles (a crash in NVRTC: SIGSEGV) comes back from the
    scheduler as KilledWorker: compile_all raises a CudaLoadError naming that program, and the
    programs the other worker compiled, in a cache folder of its own, are in this process's
    memory and disk caches."""
    env = _dying_env(tmp_path)
    got = scenario_json("executor_compiles", "dask_dying", "segv", "dask-dies",
                        tmp_path / "workers-cache", 0, timeout=300, env=env)
    kind, message, program = got["error"]
    assert kind == "NvrtcError" and program == "dies.cu", got["error"]
    assert "program 1 (dies.cu)" in message and "KilledWorker" in message, message
    assert got["again"] == ["memory"] * 3  # the others compiled, kept here
    assert got["entries"] == 3  # and landed in this process's disk cache, not only the workers'


def test_a_program_past_its_timeout_on_an_executor_fails_by_name_and_the_rest_land_here(tmp_path):
    """An executor's job that hangs kept compile_all waiting for ever; with ``timeout=`` its
    future is given up (cancelled) after that long, the program fails with an NvrtcError naming
    it, and the other programs, compiled by the pool's other process, are kept here."""
    env = _dying_env(tmp_path)
    got = scenario_json("executor_compiles", "pool_timed", "pool-late", "8", timeout=300,
                        env=env)
    kind, message, program = got["error"]
    assert kind == "NvrtcError" and program == "late.cu", got["error"]
    assert "program 1 (late.cu)" in message and "timeout of 8 s" in message, message
    assert "future was cancelled" in message, message
    assert got["took"] < 90, got["took"]  # the hang sleeps 120 s
    assert got["again"] == ["memory"] * 3
