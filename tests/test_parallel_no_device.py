"""compile_all's workers see no GPU: NVRTC 13's first compilation in a process calls the driver's
``cuInit`` where one is installed, which on a GPU host sets up the driver in every worker (a
thread of its own and some 200 ms each).  A stand-in libcuda.so.1, found by NVRTC through
LD_LIBRARY_PATH, writes down the CUDA_VISIBLE_DEVICES each process's ``cuInit`` sees."""

from __future__ import annotations

import pytest

from tests._fakelibs import build_shared_library
from tests._support import scenario_json
from tests.test_parallel import _tag

STAND_IN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int cuInit(unsigned int flags) {
    const char *log = getenv("TESTS_CUINIT_LOG"), *seen = getenv("CUDA_VISIBLE_DEVICES");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "%d %s\n", (int)getpid(), seen ? (*seen ? seen : "(empty)") : "(unset)");
        fclose(f);
    }
    return 100; /* CUDA_ERROR_NO_DEVICE, as a machine without a GPU answers */
}
"""


def _stand_in(tmp_path) -> tuple[dict, object]:
    """The environment that has NVRTC find the stand-in libcuda.so.1, and the file its cuInit
    writes to."""
    folder = tmp_path / "driver"
    folder.mkdir()
    build_shared_library(str(folder), "libcuda.so.1", STAND_IN)
    log = tmp_path / "cuinit.log"
    return {"LD_LIBRARY_PATH": str(folder), "TESTS_CUINIT_LOG": str(log),
            "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}, log


def _seen(log) -> list[list[str]]:
    """[pid, what its cuInit saw] of each process whose NVRTC called it; skips where none did."""
    seen = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    if not seen:
        pytest.skip("this NVRTC calls no cuInit: there is no device to hide from it")
    return seen


@pytest.mark.parametrize("unforkable", ["", "unforkable"], ids=["forks", "template"])
def test_no_worker_lets_nvrtc_set_up_a_device(tmp_path, unforkable):
    env, log = _stand_in(tmp_path)
    out = scenario_json("parallel_compiles", "no_device", "gggg", _tag(), unforkable, env=env)
    assert out["pools"] == [2] and out["compiled"] == [None] * 4, out
    seen = _seen(log)
    workers = [value for pid, value in seen if int(pid) != out["pid"]]
    assert workers and set(workers) == {"(empty)"}, seen  # NVRTC ran there, and saw no device
    assert out["visible"] is None  # the calling process's own environment is its own


def test_an_executors_workers_keep_their_own_environment(tmp_path):
    """An executor's processes may run other work that uses the GPU: compile_all leaves what
    they see as it is."""
    env, log = _stand_in(tmp_path)
    out = scenario_json("executor_compiles", "processes", "ggg", _tag(), timeout=300, env=env)
    assert out["kinds"] == ["cubin"] * 3, out
    seen = _seen(log)
    assert {pid for pid, _v in seen} - {str(out["pid"])}, seen  # compiled in the pool's processes
    assert {value for _pid, value in seen} == {"(unset)"}, seen
