"""The exception tree: hierarchy, fields, hints, pickling; errors.py imports nothing of cudaload."""

from __future__ import annotations

import pickle

import pytest

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
    errors.LibraryNotFoundError("libcuda not found; tried x.", library="cuda", tried=["x"],
                                hint="install the NVIDIA driver"),
    errors.DriverError("cuInit failed: CUDA_ERROR_NO_DEVICE (100): none", code=100,
                       name="CUDA_ERROR_NO_DEVICE", function="cuInit", detail="none",
                       hint="check `nvidia-smi`"),
    errors.CompileError("k.cu: compilation failed", log="x", hint="fix the option"),
    errors.ForkedProcessError("used after fork().", hint="start workers with 'spawn'"),
    errors.DriverNotFoundError("libcuda not found; tried x.", library="cuda", tried=["x"],
                               hint="install the NVIDIA driver"),
    errors.DriverLoadError("libcuda was found but could not be loaded", library="cuda",
                           tried=["/x (CUDALOAD_LIBCUDA): is a directory"], hint="check it"),
    errors.NotADriverError("/x loaded but lacks cuInit", library="cuda", symbol="cuInit",
                           path="/x", hint="point CUDALOAD_LIBCUDA at libcuda.so.1"),
    errors.DriverUnavailableError("cuInit failed: CUDA_ERROR_NO_DEVICE (100): none", code=100,
                                  name="CUDA_ERROR_NO_DEVICE", function="cuInit", detail="none",
                                  hint="check `nvidia-smi`"),
]
# Errors of the launch side's objects and exports, and of a link, pickled like the others.
LAUNCH_SAMPLES = [
    errors.LinkError("nvJitLink could not link a.cu+b.cu", log="error   : Undefined reference "
                     "to '_Z1ci' in 'b.cu'", info_log="", symbol="_Z1ci", linker="nvJitLink",
                     result="NVJITLINK_ERROR_INTERNAL", hint="add the code that defines _Z1ci"),
    errors.NotPicklableError("a Module cannot be pickled", hint="send its ObjectCode"),
    errors.DLPackError("no host copy of 0 bytes", hint="export a buffer of one byte or more"),
]


def _fields(err) -> dict:
    return {k: v for k, v in vars(err).items()}


@pytest.mark.parametrize("err", SAMPLES + LAUNCH_SAMPLES, ids=lambda e: type(e).__name__)
def test_every_error_pickles_with_its_fields(err):
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert _fields(back) == _fields(err)


def test_every_public_error_class_has_a_sample():
    public = {getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)}
    assert public == {type(e) for e in SAMPLES + LAUNCH_SAMPLES}


@pytest.mark.parametrize("err, hint, text", [
    (SAMPLES[10], "install the NVIDIA driver",
     "libcuda not found; tried x. Next step: install the NVIDIA driver"),
    (SAMPLES[11], "check `nvidia-smi`",
     "cuInit failed: CUDA_ERROR_NO_DEVICE (100): none; check `nvidia-smi`"),
    (SAMPLES[12], "fix the option", "k.cu: compilation failed\nNext step: fix the option"),
    (SAMPLES[13], "start workers with 'spawn'",
     "used after fork(). Next step: start workers with 'spawn'"),
    (SAMPLES[0], "", "base"),
], ids=lambda v: type(v).__name__ if isinstance(v, Exception) else None)
def test_the_hint_is_a_field_kept_through_pickling_and_ends_the_message(err, hint, text):
    back = pickle.loads(pickle.dumps(err))
    assert err.hint == back.hint == hint
    assert str(err) == str(back) == text


def test_errors_module_imports_nothing_of_cudaload():
    import ast

    tree = ast.parse(open(errors.__file__).read())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names]
    levels = [node.level for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert all(level == 0 for level in levels), imported
    assert not [name for name in imported if name.split(".")[0] == "cudaload"]
    assert set(imported) <= {"__future__"}, imported


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
    (errors.LinkError, (errors.CudaLoadError, RuntimeError)),
    (errors.DriverNotFoundError, (errors.LibraryNotFoundError, OSError,
                                  errors.CudaUnavailableError, RuntimeError)),
    (errors.DriverLoadError, (errors.LibraryLoadError, errors.LibraryNotFoundError, OSError,
                              errors.CudaUnavailableError)),
    (errors.NotADriverError, (errors.MissingSymbolError, AttributeError,
                              errors.CudaUnavailableError)),
    (errors.DriverUnavailableError, (errors.DriverError, errors.CudaUnavailableError)),
])
def test_hierarchy_keeps_standard_except_clauses_working(cls, bases):
    for base in bases:
        assert issubclass(cls, base)


def test_compile_error_default_code_is_nvrtc_error_compilation():
    from cudaload.bindings._nvrtc_ffi import ffi

    assert errors.CompileError("x").code == ffi.integer_const("NVRTC_ERROR_COMPILATION")


@pytest.mark.parametrize("err", [e for e in SAMPLES if isinstance(e, errors.CudaUnavailableError)],
                         ids=lambda e: type(e).__name__)
def test_an_unavailable_error_is_caught_by_the_one_except_and_by_its_old_class(err):
    back = pickle.loads(pickle.dumps(err))
    for caught in (err, back):
        with pytest.raises(errors.CudaUnavailableError):
            raise caught
    old = {errors.DriverNotFoundError: OSError, errors.DriverLoadError: errors.LibraryLoadError,
           errors.NotADriverError: errors.MissingSymbolError,
           errors.DriverUnavailableError: errors.DriverError}.get(type(err))
    if old is not None:
        with pytest.raises(old):
            raise back


def test_unavailable_driver_errors_keep_the_driver_fields_and_format():
    err = SAMPLES[-1]
    assert (err.code, err.name, err.function, err.message) == (100, "CUDA_ERROR_NO_DEVICE",
                                                               "cuInit", "none")
    assert str(err) == "cuInit failed: CUDA_ERROR_NO_DEVICE (100): none; check `nvidia-smi`"
    assert SAMPLES[-4].errno is None and SAMPLES[-4].tried == ("x",)  # still an OSError


def test_no_error_of_the_nvrtc_or_launch_side_is_unavailable():
    for cls in (errors.NvrtcError, errors.CompileError, errors.LaunchArgumentError,
                errors.LibraryNotFoundError, errors.LibraryLoadError, errors.MissingSymbolError,
                errors.DriverError):
        assert not issubclass(cls, errors.CudaUnavailableError), cls
