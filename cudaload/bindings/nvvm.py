"""Checked calls into libNVVM: one module of NVVM IR (LLVM IR text, or bitcode) compiled to PTX.

libNVVM is the optimiser and code generator behind NVRTC and nvcc, taking the IR that compilers
other than CUDA C++ emit (Numba, Julia, MLIR's NVVM dialect).  It gives PTX only; what turns
that PTX into CUBIN, and how the result is cached, is compile/link/_nvvm_input.py's.
"""

from __future__ import annotations

from . import _loader
from .._base import _sigint
from ..errors import CompileError, NvrtcError

__all__ = ["compile_ptx", "version", "ir_version"]


def compile_ptx(ir: bytes, name: str, options) -> tuple[bytes, str]:
    """(PTX, log) of NVVM IR ``ir`` of module ``name`` compiled with libNVVM ``options``
    (``-arch=compute_90`` among them), verified first.  Raises CompileError with libNVVM's log
    when it refuses the IR or the options, NvrtcError when the library fails a call otherwise;
    the loader's errors where there is no libNVVM."""
    library = _loader.nvvm()
    ffi, lib = library.ffi, library.lib
    handle = ffi.new("nvvmProgram *")
    _check(lib.nvvmCreateProgram(handle), "nvvmCreateProgram")
    try:
        words = [ffi.new("char[]", o.encode()) for o in options]
        array = ffi.new("char *[]", words)
        rc = lib.nvvmAddModuleToProgram(handle[0], ir, len(ir), name.encode())
        failed = "nvvmAddModuleToProgram"
        if not rc:
            rc, failed = lib.nvvmVerifyProgram(handle[0], len(words), array), "nvvmVerifyProgram"
        if not rc:
            try:
                _sigint.hold()  # Ctrl-C comes once the compile returns (_sigint.py says why)
                rc, failed = lib.nvvmCompileProgram(handle[0], len(words), array), \
                    "nvvmCompileProgram"
            finally:
                _sigint.release()
        log = _read(ffi, lib, handle[0], "ProgramLog")
        if rc:
            result = _describe(ffi, lib, rc)
            raise CompileError(f"{name}: libNVVM could not compile it: {failed}: {result}"
                               + (f"\n{log}" if log else ""), log=log, name=name,
                               options=tuple(options), code=int(rc), function=failed,
                               hint="read libNVVM's log above: the IR must be NVVM IR (the "
                                    "nvptx64-nvidia-cuda triple and datalayout, kernels marked "
                                    "in !nvvm.annotations) of a version this libNVVM reads")
        return _read(ffi, lib, handle[0], "CompiledResult", text=False).rstrip(b"\0"), log
    finally:
        lib.nvvmDestroyProgram(handle)


def version() -> tuple[int, int]:
    """(major, minor) of the libNVVM loaded (loading it).  Raises the loader's errors."""
    library = _loader.nvvm()
    major, minor = library.ffi.new("int *"), library.ffi.new("int *")
    _check(library.lib.nvvmVersion(major, minor), "nvvmVersion")
    return major[0], minor[0]


def ir_version() -> tuple[int, int, int, int]:
    """(IR major, IR minor, debug metadata major, minor) the libNVVM loaded reads."""
    library = _loader.nvvm()
    got = [library.ffi.new("int *") for _ in range(4)]
    _check(library.lib.nvvmIRVersion(*got), "nvvmIRVersion")
    return got[0][0], got[1][0], got[2][0], got[3][0]


def _read(ffi, lib, handle, what: str, text: bool = True):
    """The program's ``what`` ("ProgramLog", "CompiledResult"): text, or bytes."""
    size = ffi.new("size_t *")
    _check(getattr(lib, f"nvvmGet{what}Size")(handle, size), f"nvvmGet{what}Size")
    buffer = ffi.new("char[]", max(size[0], 1))
    _check(getattr(lib, f"nvvmGet{what}")(handle, buffer), f"nvvmGet{what}")
    data = ffi.buffer(buffer, size[0])[:]
    return data.rstrip(b"\0").decode(errors="replace").strip() if text else data


def _describe(ffi, lib, rc: int) -> str:
    return f"{ffi.string(ffi.cast('nvvmResult', rc))} ({int(rc)}): " \
           f"{ffi.string(lib.nvvmGetErrorString(rc)).decode(errors='replace')}"


def _check(rc: int, function: str) -> None:
    if rc:
        from ._nvvm_ffi import ffi  # deferred: only a failed call needs it

        name = ffi.string(ffi.cast("nvvmResult", rc))
        raise NvrtcError(f"{function} failed: {name} ({int(rc)})", code=int(rc), name=name,
                         function=function, detail=name,
                         hint="reinstall nvidia-nvvm, or set CUDALOAD_LIBNVVM to a complete "
                              "install")
