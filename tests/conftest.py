"""The fixtures every test may name: a private kernel cache for the whole run, ``cache_dir`` (a
fresh one for one test), ``libcuda_535`` (a real driver library without GPU).  Helpers that run
code in fresh interpreters are tests/_support.py's."""

from __future__ import annotations

import os

import pytest

from tests._support import LIBCUDA_535


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


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh, empty kernel cache folder for this test, in this process and in the subprocesses
    it starts: on (``CUDALOAD_CACHE`` unset), unbounded (``CUDALOAD_CACHE_MAX_BYTES`` unset), and
    this process's memory cache emptied if it was imported."""
    import sys

    folder = tmp_path / "cache"
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", str(folder))
    for name in ("CUDALOAD_CACHE", "CUDALOAD_CACHE_MAX_BYTES"):
        monkeypatch.delenv(name, raising=False)
    memory = sys.modules.get("cudaload.compile.cache.memory")
    if memory is not None:
        memory.MEMORY.clear()
    return folder
