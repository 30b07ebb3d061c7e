"""The README's CPU fallback on a GPU with its real driver: with NVRTC the GPU path runs and
gives the right result, whether it compiles first or allocates first; without NVRTC nothing falls
back silently: the missing compiler is a LibraryNotFoundError (not "unavailable") whose hint
names the ``cudaload[nvrtc]`` extra a host package depends on."""

from __future__ import annotations

import pytest

from .._support import scenario_json

# No disk cache: each test compiles (or fails to) itself, whatever an earlier one left there.
NO_CACHE = {"CUDALOAD_CACHE": "0"}


@pytest.mark.parametrize("order", ["compile_first", "alloc_first"])
def test_with_a_gpu_and_nvrtc_the_gpu_path_runs(order):
    out = scenario_json("readme_fallback", order, env=NO_CACHE, unset=("CUDALOAD_LIBNVRTC",))
    assert out["escaped"] is None, out["escaped"]
    assert out["ran"] == "gpu" and out["right"], out
    assert out["nvrtc_loaded"] is True, out


@pytest.mark.parametrize("order", ["compile_first", "alloc_first"])
def test_with_a_gpu_and_no_nvrtc_the_missing_compiler_is_reported_not_hidden(order):
    out = scenario_json("readme_fallback", order,
                        env={**NO_CACHE, "CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"})
    assert out["ran"] is None, out  # neither path: a GPU user is told, not slowed down silently
    assert out["escaped"]["type"] == "LibraryNotFoundError", out
    assert "cudaload[nvrtc]" in out["escaped"]["hint"], out
