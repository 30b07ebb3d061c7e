"""GPU tests: skipped without a usable GPU, failed instead when CUDALOAD_REQUIRE_GPU=1."""

from __future__ import annotations

import functools
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
    pytest.skip(f"no usable GPU: {reason}")
