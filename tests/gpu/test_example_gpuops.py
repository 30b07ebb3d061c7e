"""The example host package examples/gpuops on a GPU: every operation matches numpy for every dtype
with numpy, cudaload-buffer, __cuda_array_interface__, CuPy and PyTorch inputs, with a cold kernel
cache, a warm one, and from a shipped bundle with NVRTC hidden.  Each scenario is a fresh process
(gpuops_worker.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests._support import ROOT

EXAMPLE = os.path.join(ROOT, "examples", "gpuops")
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpuops_worker.py")
OWN = ["numpy", "cudaload", "cai"]
INTEROP = [name for name in ("cupy", "torch") if importlib.util.find_spec(name)]
PROGRAMS = 18  # six operations x three dtypes, one Program each


def worker(site, cache, *families, env=None, hide=False):
    full = dict(os.environ, CUDALOAD_CACHE_DIR=str(cache),
                PYTHONPATH=os.pathsep.join([str(site), ROOT, os.environ.get("PYTHONPATH", "")]))
    full.pop("CUDALOAD_CACHE", None)
    full.update(env or {})
    args = [sys.executable, WORKER, *(["--hide-nvrtc"] if hide else []), *families]
    proc = subprocess.run(args, env=full, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failures"] == [], "\n".join(report["failures"][:40])
    assert set(report["checks"]) == set(families)
    return report


def compiles(log) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A copy of the gpuops package (so a bundle can be added to it) on its own sys.path entry."""
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(os.path.join(EXAMPLE, "gpuops"), root / "gpuops",
                    ignore=shutil.ignore_patterns("_kernels.bundle", "__pycache__"))
    return root


def test_cold_then_warm_cache(site, tmp_path):
    cache, log = tmp_path / "cache", tmp_path / "compiles.log"
    env = {"TESTS_COMPILE_LOG": str(log)}
    cold = worker(site, cache, *OWN, *INTEROP, env=env)
    assert compiles(log) == PROGRAMS
    assert len(cold["loaded"]) == PROGRAMS
    assert {k["cached"] for k in cold["loaded"]} == {None}
    assert {k["kind"] for k in cold["loaded"]} == {"cubin"}
    warm = worker(site, cache, *OWN, *INTEROP, env=env)
    assert compiles(log) == PROGRAMS  # nothing compiled again
    assert {k["cached"] for k in warm["loaded"]} == {"disk"}


_bundled: list = []


@pytest.fixture
def bundled_site(site, tmp_path_factory):
    """The package copy with a bundle for sm_80, sm_90, sm_100 and this GPU's arch (made once;
    function-scoped so that the GPU check of conftest.py runs first)."""
    import cudaload

    if _bundled:
        return _bundled[0]

    arch = f"sm_{cudaload.Device(0).arch}"
    archs = sorted({"sm_80", "sm_90", "sm_100", arch})
    out = site / "gpuops" / "_kernels.bundle"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), ROOT]),
               CUDALOAD_CACHE_DIR=str(tmp_path_factory.mktemp("precompile-cache")))
    proc = subprocess.run([sys.executable, "-m", "cudaload", "precompile", "--programs",
                           "gpuops._kernels:programs", *[f"--arch={a}" for a in archs],
                           "-o", str(out)], cwd=site, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {PROGRAMS * len(archs)} entries" in proc.stdout
    _bundled.append(site)
    return site


def test_from_bundle_with_nvrtc_hidden(bundled_site, tmp_path):
    log = tmp_path / "compiles.log"
    env = {"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so", "TESTS_COMPILE_LOG": str(log)}
    report = worker(bundled_site, tmp_path / "cache", *OWN, env=env, hide=True)
    assert compiles(log) == 0
    assert len(report["loaded"]) == PROGRAMS
    assert {k["cached"] for k in report["loaded"]} == {"bundle"}
    assert {k["arch"] for k in report["loaded"]} == {f"sm_{report['arch']}"}
    assert report["nvrtc_loaded_by_cudaload"] is False
    assert report["nvrtc_mapped"] is False
    assert report["pathfinder_imported"] is False


@pytest.mark.skipif(not INTEROP, reason="neither CuPy nor PyTorch is installed")
def test_interop_from_bundle_with_nvrtc_hidden(bundled_site, tmp_path):
    # CuPy and PyTorch may load their own NVRTC; what matters is that cudaload never needed one.
    log = tmp_path / "compiles.log"
    env = {"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so", "TESTS_COMPILE_LOG": str(log)}
    report = worker(bundled_site, tmp_path / "cache", *INTEROP, env=env)
    assert compiles(log) == 0
    assert {k["cached"] for k in report["loaded"]} == {"bundle"}
    assert report["nvrtc_loaded_by_cudaload"] is False


@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_interop_library_present(library):
    if library not in INTEROP:
        pytest.skip(f"{library} is not installed here, so its inputs were not checked")


def test_errors_say_what_to_do():
    sys.path.insert(0, EXAMPLE)
    try:
        import numpy as np

        import cudaload
        import gpuops
    finally:
        sys.path.remove(EXAMPLE)
    buf = cudaload.alloc(64)
    with pytest.raises(TypeError, match="dtype="):
        gpuops.relu(buf)
    with pytest.raises(TypeError, match="mix of device and host"):
        gpuops.add(buf, np.zeros(16, np.float32), dtype="float32")
    with pytest.raises(TypeError, match="int32"):
        gpuops.relu(buf, dtype="int32")
    with pytest.raises(ValueError, match="does not broadcast"):
        gpuops.add(buf, cudaload.alloc(32), dtype="float32")
    out = cudaload.alloc(64)
    assert gpuops.relu(buf.memset(0), out=out, dtype="float32") is out
