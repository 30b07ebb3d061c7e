"""compile_all(..., timeout=...): a program not compiled within the timeout fails by name, its
worker is ended and reaped, and the other programs are compiled and kept; bad timeouts are
refused before anything is compiled."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests._support import last_json, scenario_command
from tests.test_parallel import _ended, _none_survive, _tag, _watched_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _timed(tmp_path, how: str, timeout: str, workers: int):
    tmp_path.mkdir(exist_ok=True)
    log = tmp_path / "workers.log"
    proc = subprocess.Popen(scenario_command("parallel_compiles", "timed", how, timeout,
                                             str(workers), _tag()),
                            env=_watched_env(tmp_path, log), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = _ended(proc, log)
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    return last_json(subprocess.CompletedProcess([], 0, out, err)), log


def _hung(log) -> list[int]:
    """The processes that began the program that hangs."""
    return [int(line.split()[0]) for line in log.read_text().splitlines()
            if line.endswith("compiles hang")]


@pytest.mark.parametrize("workers", [2, 1])
def test_a_program_past_its_timeout_fails_by_name_its_worker_ends_and_the_rest_compile(
        tmp_path, workers):
    """A worker hanging on a program (NVRTC stuck) kept compile_all waiting for ever; with
    ``timeout=`` the program fails with an NvrtcError naming it about the timeout after its
    worker began it, that worker is killed and reaped, and the other three programs are compiled
    and kept.  ``workers=1`` (otherwise compiled in the calling process) uses a worker too, which
    can be ended."""
    result, log = _timed(tmp_path, "hang", "4", workers)
    kind, message, program, timeout = result["error"]
    assert kind == "NvrtcError" and program == "late.cu" and timeout == 4.0, result["error"]
    assert "program 1 (late.cu)" in message and "timeout of 4 s" in message, message
    assert 4 <= result["took"] < 60, result["took"]  # the hang sleeps 120 s
    assert result["alive"] == []  # the hung worker, too, was ended and reaped in compile_all
    assert result["fds"][0] == result["fds"][1], result["fds"]  # its pipes closed too
    assert _hung(log) and _none_survive(log, result["pid"]) == []
    assert result["again"] == ["memory"] * 3  # the others were compiled, and kept
    assert [c[1] for c in result["counts"]] == [4] * len(result["counts"])
    assert result["counts"][-1] == [4, 4]


def test_without_a_timeout_a_slow_program_is_waited_for(tmp_path):
    """The default (None) waits however long a program takes (one 3 s longer here), and a
    timeout it stays within changes nothing."""
    for timeout in ("none", "60"):
        result, _log = _timed(tmp_path / timeout, "slow", timeout, 2)
        assert result["error"] is None and result["took"] >= 3, result
        assert result["again"] == ["memory"] * 3


@pytest.mark.parametrize("timeout, error", [("5", TypeError), (True, TypeError), ([], TypeError),
                                            (0, ValueError), (-1.5, ValueError),
                                            (float("nan"), ValueError),
                                            (float("inf"), ValueError)])
def test_a_bad_timeout_is_refused_before_anything_is_compiled(timeout, error):
    import cudaload

    class Watched(cudaload.Program):
        def plan(self, *args):  # nothing is asked of a program before the timeout is checked
            raise AssertionError("planned")

    with pytest.raises(error, match="timeout must be"):
        cudaload.compile_all([Watched('extern "C" __global__ void k() {}')], timeout=timeout)
