"""The exception tree: hierarchy, fields, pickling, and code -> name translation."""

from __future__ import annotations

import pickle

import pytest

from tests.conftest import run_json
from cudaload import errors

SAMPLES = [
    errors.CudaLoadError("base"),
    errors.LibraryNotFoundError("nf", library="cuda",
                                tried=["a (x): not found", "b (y): not found"]),
    errors.LibraryLoadError("bad", library="nvrtc", tried=["/x (CUDALOAD_LIBNVRTC): invalid ELF"]),
    errors.MissingSymbolError("old", library="cuda", symbol="cuMemAlloc_v2",
                              path="/lib/libcuda.so.1"),
    errors.CudaUnavailableError("no gpu"),
    errors.ForkedProcessError("forked"),
    errors.DriverError("cuInit failed", code=100, name="CUDA_ERROR_NO_DEVICE", function="cuInit",
                       detail="no CUDA-capable device is detected"),
    errors.NvrtcError("nvrtc failed", code=3, name="NVRTC_ERROR_INVALID_INPUT",
                      function="nvrtcCreateProgram", detail="NVRTC_ERROR_INVALID_INPUT"),
    errors.CompileError("k.cu: compilation failed", log="k.cu(1): error: x", source="bad",
                        options=["-arch=sm_90"], name="k.cu"),
    errors.LaunchArgumentError("argument 2 (n: unsigned int) got a str"),
]


def _fields(err) -> dict:
    return {k: v for k, v in vars(err).items()}


@pytest.mark.parametrize("err", SAMPLES, ids=lambda e: type(e).__name__)
def test_every_error_pickles_with_its_fields(err):
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert _fields(back) == _fields(err)


def test_every_public_error_class_has_a_sample():
    public = {getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)}
    assert public == {type(e) for e in SAMPLES}


def test_fields_are_what_the_constructor_was_given():
    drv = SAMPLES[6]
    assert (drv.code, drv.name, drv.function, drv.message) == (
        100, "CUDA_ERROR_NO_DEVICE", "cuInit", "no CUDA-capable device is detected")
    missing = SAMPLES[3]
    assert (missing.library, missing.symbol, missing.path) == ("cuda", "cuMemAlloc_v2",
                                                               "/lib/libcuda.so.1")
    comp = SAMPLES[8]
    assert (comp.log, comp.source, comp.options, comp.name, comp.code) == (
        "k.cu(1): error: x", "bad", ("-arch=sm_90",), "k.cu", 6)
    assert SAMPLES[1].tried == ("a (x): not found", "b (y): not found")


@pytest.mark.parametrize("cls, bases", [
    (errors.LibraryNotFoundError, (errors.CudaLoadError, OSError)),
    (errors.LibraryLoadError, (errors.LibraryNotFoundError,)),
    (errors.MissingSymbolError, (errors.CudaLoadError, AttributeError)),
    (errors.CudaUnavailableError, (errors.CudaLoadError, RuntimeError)),
    (errors.ForkedProcessError, (errors.CudaUnavailableError,)),
    (errors.DriverError, (errors.CudaLoadError, RuntimeError)),
    (errors.NvrtcError, (errors.CudaLoadError, RuntimeError)),
    (errors.CompileError, (errors.NvrtcError,)),
    (errors.LaunchArgumentError, (errors.CudaLoadError, TypeError)),
])
def test_hierarchy_keeps_standard_except_clauses_working(cls, bases):
    for base in bases:
        assert issubclass(cls, base)


def test_driver_error_without_a_driver_names_the_code_from_the_header():
    result = run_json("""
        import json
        from cudaload.errors import driver_error
        known, unknown = driver_error(100, "cuInit"), driver_error(987654, "cuFoo")
        print(json.dumps([known.name, known.code, known.function, str(known), unknown.name]))
    """, env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    name, code, function, message, unknown = result
    assert (name, code, function) == ("CUDA_ERROR_NO_DEVICE", 100, "cuInit")
    assert message.startswith("cuInit failed: CUDA_ERROR_NO_DEVICE (100)")
    assert "nvidia-smi" in message  # the hint
    assert unknown == "CUresult 987654"


def test_driver_error_with_a_driver_uses_its_own_words(libcuda_535):
    result = run_json("""
        import json
        from cudaload.errors import driver_error
        err = driver_error(2, "cuMemAlloc_v2")
        print(json.dumps([err.name, err.message, str(err)]))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert result[0] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert result[1] == "out of memory"
    assert "free device memory" in result[2]


def test_nvrtc_error_names_the_code_with_or_without_nvrtc():
    code = """
        import json
        from cudaload.errors import nvrtc_error
        err = nvrtc_error(3, "nvrtcCreateProgram")
        print(json.dumps([err.name, err.code, err.function]))
    """
    expected = ["NVRTC_ERROR_INVALID_INPUT", 3, "nvrtcCreateProgram"]
    assert run_json(code, unset=("CUDALOAD_LIBNVRTC",)) == expected
    assert run_json(code, env={"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}) == expected


def test_compile_error_default_code_is_nvrtc_error_compilation():
    from cudaload._nvrtc_ffi import ffi

    assert errors.CompileError("x").code == ffi.integer_const("NVRTC_ERROR_COMPILATION")
