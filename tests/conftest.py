"""Shared test helpers.  dlopen state is process-wide, so each library scenario runs in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBCUDA_535 = os.environ.get("CUDALOAD_TEST_LIBCUDA", "")


def run_py(code: str, env: dict | None = None, timeout: float = 120, check: bool = True,
           unset=()) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with the repository importable; return the result."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    for key in unset:
        full_env.pop(key, None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_json(code: str, **kw):
    """Run ``code``, which must print one JSON document as its last line, and return it parsed."""
    proc = run_py(code, **kw)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Tests never read or write the user's kernel cache; subprocesses inherit this folder."""
    if "CUDALOAD_CACHE_DIR" not in os.environ:
        os.environ["CUDALOAD_CACHE_DIR"] = str(tmp_path_factory.mktemp("cudaload-cache"))
    yield


@pytest.fixture
def libcuda_535():
    """Path of a real driver library (Debian libcuda1, CUDA 12.2), fetched by ci/fetch_libcuda.sh."""
    if not LIBCUDA_535 or not os.path.exists(LIBCUDA_535):
        if os.environ.get("CI"):
            pytest.fail("CUDALOAD_TEST_LIBCUDA is not set or missing in CI: ci/fetch_libcuda.sh must run")
        pytest.skip("set CUDALOAD_TEST_LIBCUDA to a libcuda.so.1 (ci/fetch_libcuda.sh fetches one)")
    return LIBCUDA_535
