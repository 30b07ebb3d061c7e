"""The README's CPU fallback (``except cudaload.CudaUnavailableError``) on a machine without a
GPU: with Debian's real libcuda 535 (cuInit finds no device) or no driver at all, with NVRTC or
without, compiling first or allocating first, it falls back, and compiles nothing (NVRTC is
never loaded).  The cells with a GPU are tests/gpu/test_fallback_pattern_gpu.py's."""

from __future__ import annotations

import pytest

from tests._support import scenario_json

NO_NVRTC = {"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}
NO_DRIVER = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"}


@pytest.mark.parametrize("order", ["compile_first", "alloc_first"])
@pytest.mark.parametrize("nvrtc", ["nvrtc", "no nvrtc"])
@pytest.mark.parametrize("driver", ["libcuda 535, no GPU", "no driver"])
def test_without_a_gpu_the_pattern_falls_back_and_compiles_nothing(request, driver, nvrtc, order):
    env = dict(NO_DRIVER)
    if driver != "no driver":
        env["CUDALOAD_LIBCUDA"] = request.getfixturevalue("libcuda_535")
    if nvrtc == "no nvrtc":
        env.update(NO_NVRTC)
    out = scenario_json("readme_fallback", order, env=env, unset=() if nvrtc == "no nvrtc"
                        else ("CUDALOAD_LIBNVRTC",))
    assert out["escaped"] is None, out["escaped"]
    assert out["ran"] == "cpu" and out["right"], out
    assert out["nvrtc_loaded"] is False, out  # no device to compile for: nothing compiled


def test_an_explicit_arch_still_compiles_without_a_gpu(libcuda_535):
    # Precompiling for a target needs no device: only arch=None asks for one.
    from tests._support import run_json

    out = run_json("""
        import json
        import cudaload
        obj = cudaload.Program('extern "C" __global__ void k(int *x) { *x = 1; }').compile(arch=90)
        try:
            cudaload.Program('extern "C" __global__ void k(int *x) { *x = 2; }').compile()
            refused = None
        except cudaload.CudaUnavailableError as exc:
            refused = type(exc).__name__
        print(json.dumps([obj.kind, obj.arch, refused]))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535}, unset=("CUDALOAD_LIBNVRTC",))
    assert out == ["cubin", "sm_90", "DriverUnavailableError"]
