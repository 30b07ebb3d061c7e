"""gpuops where CUDA is absent, through cudaload's pytest fixtures: every operation gives
numpy's result, says once why it used numpy, loads no kernel and maps no CUDA library but the
driver it was pointed at.

    pip install gpuops pytest && pytest tests    # the fixtures come with cudaload
"""

from __future__ import annotations

import os


def run_every_operation() -> dict:
    """In the fresh process: each operation on each dtype against numpy, and what gpuops said,
    loaded and mapped."""
    import warnings

    import numpy as np

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import gpuops

        rng = np.random.default_rng(0)
        wrong = []
        for dt in (np.float16, np.float32, np.float64):
            acc = np.float64 if dt == np.float64 else np.float32
            x = rng.uniform(-3, 3, (9, 41)).astype(dt)
            y = rng.uniform(-3, 3, (9, 41)).astype(dt)
            wide = x.astype(acc)
            e = np.exp(wide - wide.max(axis=-1, keepdims=True))
            checks = {
                "add": (gpuops.add(x, y), x + y),
                "mul": (gpuops.mul(x, y), x * y),
                "axpy": (gpuops.axpy(-1.25, x, y),
                         (acc(dt(-1.25)) * wide + y.astype(acc)).astype(dt)),
                "relu": (gpuops.relu(x), np.maximum(x, dt(0))),
                "sum": (gpuops.sum(x), dt(np.sum(x, dtype=acc))),
                "softmax": (gpuops.softmax(x), (e / e.sum(axis=-1, keepdims=True)).astype(dt)),
            }
            for op, (got, want) in checks.items():
                if np.asarray(got).dtype != np.dtype(dt) or not np.array_equal(got, want):
                    wrong.append(f"{op} {np.dtype(dt)}")
    with open("/proc/self/maps") as maps:
        mapped = sorted({line.split()[-1] for line in maps
                         if any(lib in line for lib in ("libcuda", "libnvrtc", "libcudart"))})
    return {"wrong": wrong, "loaded": gpuops.loaded_kernels(), "mapped": mapped,
            "said": [str(w.message) for w in caught if w.category is gpuops.GpuopsWarning],
            "backend": gpuops.backend()[0]}


def test_without_a_driver_every_operation_is_numpy_said_once(no_cuda):
    out = no_cuda(run_every_operation)
    assert out["wrong"] == [] and out["backend"] == "numpy" and out["loaded"] == []
    assert len(out["said"]) == 1 and "libcuda not found" in out["said"][0], out["said"]
    assert out["mapped"] == []


def test_with_a_driver_but_no_gpu_the_reason_is_the_missing_device(cuda_without_gpu):
    out = cuda_without_gpu(run_every_operation)
    assert out["wrong"] == [] and out["backend"] == "numpy" and out["loaded"] == []
    assert len(out["said"]) == 1 and "CUDA_ERROR_NO_DEVICE" in out["said"][0], out["said"]
    driver = os.path.realpath(cuda_without_gpu.driver)
    assert {os.path.realpath(m) for m in out["mapped"]} <= {driver}, out["mapped"]

