"""GPU tests: skipped without a usable GPU, failed instead when CUDALOAD_REQUIRE_GPU=1."""

from __future__ import annotations

import functools
import multiprocessing
import os

import pytest


@functools.cache
def _no_gpu_reason() -> str | None:
    import cudaload

    if cudaload.is_available():
        return None
    problems = cudaload.status().as_dict().get("problems", [])
    return "; ".join(p["what"] for p in problems) or "CUDA is not available"


@pytest.fixture(autouse=True)
def _gpu_present():
    reason = _no_gpu_reason()
    if reason is None:
        return
    if os.environ.get("CUDALOAD_REQUIRE_GPU") == "1":
        pytest.fail(f"CUDALOAD_REQUIRE_GPU=1 but there is no usable GPU: {reason}")
    pytest.skip(f"{_NO_GPU}{reason}")


_NO_GPU = "no usable GPU: "


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Give every no-GPU skip this file as its place, so that ``-rs`` folds them all into one
    line ("SKIPPED [N] tests/gpu/conftest.py:..."): pytest reports a fixture's skip at each
    test's own line, one summary line per test, all saying the same."""
    outcome = yield
    report = outcome.get_result()
    longrepr = report.longrepr
    if (report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3
            and str(longrepr[2]).startswith("Skipped: " + _NO_GPU)):
        report.longrepr = (__file__, _SKIP_LINE, longrepr[2])


_SKIP_LINE = _no_gpu_reason.__wrapped__.__code__.co_firstlineno  # type: ignore[attr-defined]


def _ready() -> bool:
    """Bring CUDA up in the child before the parent starts the work it must wait for."""
    import cudaload

    cudaload.Device(0).synchronize()
    return True


@pytest.fixture
def child():
    """A spawned process with CUDA up, for what one process shares with another (function-scoped:
    made after the GPU check)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_ready)
        yield pool
