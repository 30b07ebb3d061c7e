"""The README's fallback code, as written there, on a GPU: the GPU path runs and is right."""

from __future__ import annotations

from ..test_readme import run_readme_fallback


def test_the_readme_fallback_code_runs_on_the_gpu(tmp_path):
    out = run_readme_fallback(tmp_path, unset=("CUDALOAD_LIBNVRTC",))
    assert out == {"right": True, "gpu": True, "nvrtc": True}, out
