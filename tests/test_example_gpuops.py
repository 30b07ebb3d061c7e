"""The example host package examples/gpuops without a GPU: numpy fallback, said once, no CUDA
library mapped beyond the driver it was pointed at.  (tests/gpu/test_example_gpuops.py runs it on a
GPU.)"""

from __future__ import annotations

import os

import pytest

from tests.conftest import ROOT, run_json

EXAMPLE = os.path.join(ROOT, "examples", "gpuops")

FALLBACK = r'''
    import json, warnings
    import numpy as np
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import gpuops
        rng = np.random.default_rng(1)
        bad = []
        for dt in (np.float16, np.float32, np.float64):
            x = rng.uniform(-2, 2, (7, 33)).astype(dt)
            y = rng.uniform(-2, 2, (7, 33)).astype(dt)
            acc = np.float64 if dt == np.float64 else np.float32
            wide = x.astype(acc)
            e = np.exp(wide - wide.max(axis=-1, keepdims=True))
            want = {
                "add": (gpuops.add(x, y), x + y),
                "mul": (gpuops.mul(x, y), x * y),
                "axpy": (gpuops.axpy(0.5, x, y),
                         (acc(dt(0.5)) * wide + y.astype(acc)).astype(dt)),
                "relu": (gpuops.relu(x), np.maximum(x, 0).astype(dt)),
                "sum": (gpuops.sum(x), dt(np.sum(x, dtype=acc))),
                "softmax": (gpuops.softmax(x), (e / e.sum(axis=-1, keepdims=True)).astype(dt)),
            }
            for op, (got, expected) in want.items():
                if np.asarray(got).dtype != np.dtype(dt) or not np.array_equal(got, expected):
                    bad.append(f"{op} {np.dtype(dt)}")
    ours = [str(w.message) for w in caught if w.category is gpuops.GpuopsWarning]
    with open("/proc/self/maps") as f:
        mapped = sorted({l.split()[-1] for l in f if "libcuda" in l or "libnvrtc" in l
                         or "libcudart" in l})
    print(json.dumps({"bad": bad, "warnings": ours, "backend": gpuops.backend(),
                      "loaded": gpuops.loaded_kernels(), "mapped": mapped}))
'''


def run(env):
    return run_json(FALLBACK, env={"PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}", **env})


def test_without_a_driver_ops_are_numpy_and_say_so_once():
    out = run({"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert out["bad"] == []
    assert len(out["warnings"]) == 1 and "libcuda not found" in out["warnings"][0]
    assert out["backend"][0] == "numpy" and out["loaded"] == [] and out["mapped"] == []


def test_with_a_driver_but_no_gpu_the_reason_names_the_missing_device(libcuda_535):
    out = run({"CUDALOAD_LIBCUDA": libcuda_535})
    assert out["bad"] == []
    assert len(out["warnings"]) == 1 and "CUDA_ERROR_NO_DEVICE" in out["warnings"][0]
    assert out["backend"] == ["numpy", out["backend"][1]] and "NO_DEVICE" in out["backend"][1]
    assert out["mapped"] == [os.path.realpath(libcuda_535)] or out["mapped"] == [libcuda_535]


@pytest.mark.parametrize("op", ["add", "relu", "sum", "softmax"])
def test_programs_list_every_kernel_and_compile_without_a_gpu(op, tmp_path):
    out = run_json(f'''
        import json
        import numpy as np
        from gpuops import _kernels
        progs = [p for p in _kernels.programs() if p.name_expressions[0].startswith("{op}")]
        objs = [p.compile(arch="sm_80") for p in progs]
        print(json.dumps([[o.kind, o.arch, sorted(o.lowered_names)] for o in objs]))
    ''', env={"PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}",
              "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert len(out) == 3 and all(kind == "cubin" and arch == "sm_80" for kind, arch, _ in out)
    names = sorted(n for _k, _a, lowered in out for n in lowered)
    assert any("__half" in n for n in names) and any("double" in n for n in names)


def test_the_fallback_refuses_what_the_gpu_path_refuses_and_typed_bytes_stay_typed():
    out = run_json(r'''
        import json
        import numpy as np
        import gpuops
        from gpuops import _arrays
        got = {}
        for name, call in (
                ("broadcast", lambda: gpuops.add(np.ones(3, np.float32), np.ones((2, 3), np.float32))),
                ("promote", lambda: gpuops.mul(np.ones(3, np.float32), np.ones(3, np.float64)))):
            try:
                call()
                got[name] = None
            except ValueError as err:
                got[name] = str(err)

        class Int8Array:  # a typed 1-byte device array, as CuPy's int8
            __cuda_array_interface__ = {"shape": (8,), "typestr": "|i1", "data": (4096, False),
                                        "version": 3, "strides": None}
        try:
            _arrays.DeviceArray(Int8Array(), "float32")
            got["int8"] = None
        except TypeError as err:
            got["int8"] = str(err)
        print(json.dumps(got))
    ''', env={"PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}",
              "CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert "does not broadcast" in out["broadcast"] and "does not broadcast" in out["promote"]
    assert "float16, float32 and float64, not int8" in out["int8"]
