"""examples/fleet/: compile_all on Ray and on mpi4py's MPIPoolExecutor.  Neither is installed in
CI, so each example runs against a stand-in module of the same calls (``ray.remote(fn)
.options(**kw).remote(*args).future()``, ``MPIPoolExecutor(max_workers=)``) over a spawn
process pool: what is checked is the example's own code against compile_all's executor
contract, the code coming back and staying in the caller's cache."""

from __future__ import annotations

import os

import pytest

from tests._support import ROOT, run_json

STAND_INS = r"""
import concurrent.futures, json, multiprocessing, runpy, sys, types

pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
calls = []

class Remote:
    def __init__(self, fn, options):
        self.fn, self.opts = fn, options
    def options(self, **options):
        calls.append(sorted(options))
        return Remote(self.fn, options)
    def remote(self, *args):
        return types.SimpleNamespace(future=lambda: pool.submit(self.fn, *args))

ray = types.ModuleType("ray")
ray.remote = lambda fn: Remote(fn, {})
ray.init = lambda address=None: calls.append(["init", address])
ray.shutdown = lambda: calls.append(["shutdown"])

class MPIPoolExecutor(concurrent.futures.ProcessPoolExecutor):
    def __init__(self, max_workers=None):
        calls.append(["mpi", max_workers])
        super().__init__(max_workers, mp_context=multiprocessing.get_context("spawn"))

futures = types.ModuleType("mpi4py.futures")
futures.MPIPoolExecutor = MPIPoolExecutor
sys.modules.update({"ray": ray, "mpi4py": types.ModuleType("mpi4py"), "mpi4py.futures": futures})
example = runpy.run_path(sys.argv[1])
rc = example["main"](*sys.argv[2:])
pool.shutdown()
print(json.dumps({"rc": rc, "calls": calls}))
"""


@pytest.mark.parametrize("name, args, calls", [
    ("compile_on_ray.py", (), [["init", None], ["num_cpus"], ["shutdown"]]),
    ("compile_on_mpi.py", ("2",), [["mpi", 2]])])
def test_each_fleet_example_compiles_on_its_executor(tmp_path, name, args, calls):
    path = os.path.join(ROOT, "examples", "fleet", name)
    code = "import sys; sys.argv[1:] = " + repr([path, *args]) + "\n" + STAND_INS
    out = run_json(code, env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert out["rc"] == 0 and out["calls"] == calls, out
