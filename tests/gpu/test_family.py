"""compile_all and the bounded memory cache on a real GPU: from a process that uses the GPU, and
code in use by a Module or a captured graph never dropped."""

from __future__ import annotations

import gc
import logging
import time

import pytest

import cudaload
from cudaload.compile import cache

from tests._support import run_json, scenario_json

np = pytest.importorskip("numpy")

ADD = 'extern "C" __global__ void add{i}(float *x, int n) {{ int j = threadIdx.x; if (j < n) x[j] += {i}.0f; }} // {tag}'


def test_compile_all_from_a_process_that_uses_the_gpu_loads_and_runs_each():
    buf = cudaload.alloc(256 * 4)
    buf.copy_from_host(np.zeros(256, np.float32))
    tag = time.time_ns()
    progs = [cudaload.Program(ADD.format(i=i, tag=tag)) for i in range(1, 9)]
    objs = cudaload.compile_all(progs, workers=4)  # arch=None: this GPU's, settled here
    major, minor = cudaload.Device(0).compute_capability
    assert all(o.kind == "cubin" and o.arch == f"sm_{major}{minor}" for o in objs)
    for i, obj in enumerate(objs, 1):
        obj.load().get_kernel(f"add{i}")(1, 256, (buf, 256))
    cudaload.Device(0).synchronize()
    assert (np.frombuffer(buf.copy_to_host(), np.float32) == sum(range(1, 9))).all()
    again = cudaload.compile_all(progs)
    assert [o.cached for o in again] == ["memory"] * 8


def test_a_process_that_uses_the_gpu_forks_a_batchs_workers_from_one_template(monkeypatch, caplog):
    """The driver's threads make this process one that may not fork: its workers are forks of
    one template process (compile/parallel/_template.py), a single interpreter started for them all
    (which compiles no tiny program before the forks where a driver is installed: batch.py)."""
    import os

    started = []
    real = os.posix_spawn

    def counted(*args, **kw):
        started.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(os, "posix_spawn", counted)
    caplog.set_level(logging.DEBUG, logger="cudaload.compile")  # it says why it forked none
    buf = cudaload.alloc(256 * 4)
    buf.copy_from_host(np.zeros(256, np.float32))
    tag = f"template {time.time_ns()}"
    progs = [cudaload.Program(ADD.format(i=i, tag=tag)) for i in range(1, 9)]
    objs = cudaload.compile_all(progs, workers=2)
    assert len(started) == 1, (started, [r.getMessage() for r in caplog.records
                                         if "template" in r.getMessage()])
    for i, obj in enumerate(objs, 1):
        obj.load().get_kernel(f"add{i}")(1, 256, (buf, 256))
    cudaload.Device(0).synchronize()
    assert (np.frombuffer(buf.copy_to_host(), np.float32) == sum(range(1, 9))).all()


def test_compile_all_in_a_fresh_process_after_the_driver_is_initialised():
    out = scenario_json("parallel_compiles", "compile_spec", "gggggg", f"gpu {time.time_ns()}",
                        "none", "3")
    major, minor = cudaload.Device(0).compute_capability
    assert [r[1] for r in out["results"]] == [f"sm_{major}{minor}"] * 6
    assert out["pools"] == [3]


def test_a_dropped_entry_whose_module_is_alive_is_found_not_loaded_again(monkeypatch):
    monkeypatch.setenv("CUDALOAD_MEMORY_CACHE_MAX_BYTES", "1")  # nothing is held
    src = ADD.format(i=1, tag=f"held {time.time_ns()}")
    module = cudaload.Program(src).compile().load()  # the ObjectCode lives on in the Module only
    module.get_kernel("add1")
    gc.collect()
    again = cudaload.Program(src).compile()
    assert again.cached == "memory"  # found through the live Module, not read from disk
    assert again.load() is module  # and not loaded a second time


def test_a_graph_replays_after_its_code_left_the_memory_cache(monkeypatch):
    monkeypatch.setenv("CUDALOAD_MEMORY_CACHE_MAX_BYTES", "1")
    buf = cudaload.alloc(256 * 4)
    buf.copy_from_host(np.zeros(256, np.float32))
    s = cudaload.Stream()
    kernel = cudaload.Program(ADD.format(i=2, tag=f"graph {time.time_ns()}")).compile() \
        .load().get_kernel("add2")
    with s.capture() as graph:
        kernel(1, 256, (buf, 256), stream=s)
    del kernel
    cache.MEMORY.clear()
    gc.collect()  # the module is collected: the graph keeps its code loaded
    graph.launch(s)
    graph.launch(s)
    s.synchronize()
    assert (np.frombuffer(buf.copy_to_host(), np.float32) == 4.0).all()


_WORKERS_AGAINST_HERE = r"""
import hashlib, json, os, time
import cudaload
from cudaload.compile import cache

cudaload.alloc(4)  # this process uses the GPU: NVRTC's first compilation here finds it
tag = time.time_ns()
sources = [ADD.format(i=i, tag=tag) for i in range(1, 9)]
made = cudaload.compile_all([cudaload.Program(s) for s in sources], arch=ARCH, workers=2)
os.environ["CUDALOAD_CACHE"] = "0"  # compiled again below, here, not found
cache.MEMORY.clear()
here = [cudaload.Program(s).compile(arch=ARCH) for s in sources]
print(json.dumps({"cached": [o.cached for o in made + here],
                  "workers": [hashlib.sha256(o.code).hexdigest() for o in made],
                  "here": [hashlib.sha256(o.code).hexdigest() for o in here]}))
"""


def test_workers_make_the_code_a_process_using_the_gpu_makes(tmp_path):
    """compile_all's workers (forks of a template: this process uses the GPU) and this process's
    own compile of the same programs give the same code byte for byte."""
    major, minor = cudaload.Device(0).compute_capability
    code = _WORKERS_AGAINST_HERE.replace("ADD", repr(ADD)).replace("ARCH", str(major * 10 + minor))
    out = run_json(code, env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert out["cached"] == [None] * 16, out
    assert out["workers"] == out["here"]
