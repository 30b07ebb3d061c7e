"""Checked calls into NVRTC: version, supported architectures, and one compilation.

The caching, option building and architecture choice live in ``program.py``; this module only turns
one request into one NVRTC program and back into bytes, or into a :class:`CompileError`.
"""

from __future__ import annotations

import os

from . import _loader
from ._nvrtc_ffi import ffi as _nvrtc_ffi
from .._base import _sigint
from ..errors import CompileError, NvrtcError

__all__ = ["Compiled", "compile", "version", "supported_archs", "describe", "check", "error"]

_COMPILATION = _nvrtc_ffi.integer_const("NVRTC_ERROR_COMPILATION")
_INVALID_OPTION = _nvrtc_ffi.integer_const("NVRTC_ERROR_INVALID_OPTION")
_BUILTIN_OPERATION_FAILURE = _nvrtc_ffi.integer_const("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE")
INVALID_OPTION = _INVALID_OPTION



class Compiled:
    """What one NVRTC compilation produced: ``code``, ``kind`` ("cubin" | "ptx" | "ltoir"),
    ``log`` and ``lowered_names``."""

    # A plain class rather than a dataclass: importing dataclasses (inspect, ast, ...) cost 7-8 ms
    # of the first compile in a fresh process, a sixth of NVRTC's own time for a small kernel.
    __slots__ = ("code", "kind", "log", "lowered_names")

    def __init__(self, code: bytes, kind: str, log: str, lowered_names: dict | None = None):
        self.code, self.kind, self.log = code, kind, log
        self.lowered_names = {} if lowered_names is None else lowered_names

    def __repr__(self) -> str:
        return f"Compiled({self.kind}, {len(self.code)} bytes)"


def _lib():
    library = _loader.nvrtc()
    return library.ffi, library.lib


def check(rc: int, function: str) -> None:
    """Raise the :class:`NvrtcError` for ``rc`` unless it is ``NVRTC_SUCCESS``."""
    if rc:
        raise error(int(rc), function)


def error(code: int, function: str) -> NvrtcError:
    """The :class:`NvrtcError` for a failed NVRTC call."""
    name = describe(code)
    return NvrtcError(f"{function} failed: {name} ({code})", code=code, name=name,
                      function=function, detail=name)


def describe(code: int) -> str:
    """The name of an ``nvrtcResult``, e.g. ``NVRTC_ERROR_COMPILATION``."""
    try:
        ffi, lib = _lib()
        return ffi.string(lib.nvrtcGetErrorString(code)).decode()
    except Exception:  # the library itself may be what failed; fall back to the declarations
        from ._nvrtc_ffi import ffi  # deferred: only this path needs it

        return ffi.string(ffi.cast("nvrtcResult", code))


def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    ffi, lib = _lib()
    major, minor = ffi.new("int *"), ffi.new("int *")
    check(lib.nvrtcVersion(major, minor), "nvrtcVersion")
    return major[0], minor[0]


def supported_archs() -> list[int]:
    """Compute capabilities NVRTC can emit code for, e.g. [75, 80, 86, 89, 90, ...].

    Raises MissingSymbolError for an NVRTC older than CUDA 11.2, which cannot say."""
    library = _loader.nvrtc()
    ffi = library.ffi
    count = ffi.new("int *")
    check(library.function("nvrtcGetNumSupportedArchs", "CUDA 11.2")(count),
          "nvrtcGetNumSupportedArchs")
    archs = ffi.new("int[]", count[0])
    check(library.function("nvrtcGetSupportedArchs", "CUDA 11.2")(archs),
          "nvrtcGetSupportedArchs")
    return list(archs)


def compile(source: str, name: str, options=(), headers=None, name_expressions=(),
            kind: str = "cubin", own_options=()) -> Compiled:
    """Compile ``source`` once.  Raises :class:`CompileError` with the log when NVRTC rejects it.

    ``own_options`` go to NVRTC after ``options`` but are cudaload's, not the caller's: errors do
    not show them."""
    ffi, lib = _lib()
    headers = dict(headers or {})
    keep = []  # cdata must outlive the NVRTC calls that read them

    def cstr(s: str):
        if "\0" in s:  # C strings end there: NVRTC would silently see only the part before it
            raise ValueError(f"{name}: a NUL character at offset {s.index(chr(0))} of "
                             f"{s[:40]!r}...; remove it (CUDA source and options are text)")
        keep.append(ffi.new("char[]", s.encode()))
        return keep[-1]

    header_src = ffi.new("char *[]", [cstr(text) for text in headers.values()]) if headers else ffi.NULL
    header_names = ffi.new("char *[]", [cstr(n) for n in headers]) if headers else ffi.NULL
    prog_p = ffi.new("nvrtcProgram *")
    check(lib.nvrtcCreateProgram(prog_p, cstr(source), cstr(name), len(headers), header_src,
                                 header_names), "nvrtcCreateProgram")
    prog = prog_p[0]
    try:
        for expr in name_expressions:
            check(lib.nvrtcAddNameExpression(prog, cstr(expr)), "nvrtcAddNameExpression")
        opts = [cstr(o) for o in (*options, *own_options)]
        try:
            _sigint.hold()  # Ctrl-C comes once NVRTC returns (_sigint.py says why)
            rc = lib.nvrtcCompileProgram(prog, len(opts),
                                         ffi.new("char *[]", opts) if opts else ffi.NULL)
        finally:
            _sigint.release()
        log = _read(ffi, lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").rstrip("\0")
        if rc in (_COMPILATION, _INVALID_OPTION):
            hint = _HINT_INVALID_OPTION if rc == _INVALID_OPTION else (
                _HINT_NAME_EXPRESSION.format(", ".join(name_expressions))
                if "__nv_name_map" in log else _include_hint(log))
            raise CompileError(format_compile_error(name, source, options, log, describe(rc)),
                               log=log, source=source, options=options, name=name, code=rc,
                               hint=hint)
        if rc == _BUILTIN_OPERATION_FAILURE:
            raise _builtins_error(rc, log)
        check(rc, "nvrtcCompileProgram")
        getter = {"cubin": "CUBIN", "ptx": "PTX", "ltoir": "LTOIR"}[kind]
        code = _read(ffi, lib, prog, f"nvrtcGet{getter}Size", f"nvrtcGet{getter}", raw=True)
        if kind == "ptx":
            code = code.rstrip(b"\0")
        if not code:
            raise NvrtcError(
                f"{name}: NVRTC succeeded but produced no {kind.upper()}: an option asked for "
                "something else (e.g. -dlto gives LTO IR).", function="nvrtcGet" + getter,
                hint=f"remove it; options: {' '.join(options)}")
        lowered = {}
        for expr in name_expressions:
            out = ffi.new("char **")
            check(lib.nvrtcGetLoweredName(prog, cstr(expr), out), "nvrtcGetLoweredName")
            lowered[expr] = ffi.string(out[0]).decode()
        return Compiled(code, kind, log.strip(), lowered)
    finally:
        lib.nvrtcDestroyProgram(prog_p)


def _builtins_error(rc: int, log: str) -> NvrtcError:
    """The error for a compilation that failed because NVRTC could not use libnvrtc-builtins."""
    import glob  # deferred: only this path needs it

    path = _loader.nvrtc().path
    folder = os.path.dirname(os.path.abspath(path))
    major, minor = version()
    wanted = (f"nvrtc-builtins64_{major}{minor}.dll" if os.name == "nt"
              else f"libnvrtc-builtins.so.{major}.{minor}")
    present = sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "*nvrtc-builtins*")))
    if wanted not in present:
        found = f"found only {', '.join(present)}" if present else "found none"
        what = f"its builtins library {wanted} is missing: NVRTC looks for it beside {path}, {found}"
    else:
        what = f"its builtins library {os.path.join(folder, wanted)} failed to load or is damaged"
    if log.strip():  # one line: the next step ends the message
        what += f" (NVRTC says: {' '.join(log.split())})"
    name = describe(rc)
    return NvrtcError(
        f"NVRTC {major}.{minor} cannot compile anything: {what}.", code=rc, name=name,
        function="nvrtcCompileProgram", detail=name, log=log.strip(),
        hint="reinstall NVRTC so that libnvrtc and libnvrtc-builtins of the same version sit in "
             "one folder (pip install --force-reinstall nvidia-cuda-nvrtc), or set "
             "CUDALOAD_LIBNVRTC to a complete install")


def _read(ffi, lib, prog, size_fn: str, get_fn: str, raw: bool = False):
    size = ffi.new("size_t *")
    check(getattr(lib, size_fn)(prog, size), size_fn)
    buf = ffi.new("char[]", max(size[0], 1))
    check(getattr(lib, get_fn)(prog, buf), get_fn)
    data = ffi.buffer(buf, size[0])[:]
    return data if raw else data.decode(errors="replace")


# Patterns of NVRTC's log, compiled by the failed compilation that reads one (importing re costs
# a fresh process's first compile 2-4 ms, and a compilation that succeeds reads no log).
_LOG_LINE = r"^(.*)\((\d+)\): (?:error|warning|catastrophic error)"
# NVRTC's wordings, with and without folders to search
_MISSING_INCLUDE = r'(?:cannot|could not) open source file "([^"]*)"'
# What NVRTC (and CCCL's own check) says of host code pulled in by a header such as <cub/cub.cuh>
_HOST_CODE = r"not allowed in JIT mode|is not supported when compiling with NVRTC"


_HINT_INVALID_OPTION = ("fix or remove the option the log names; NVRTC's options are "
                        "listed at https://docs.nvidia.com/cuda/nvrtc/#supported-compile-options")
_HINT_INCLUDE = ("pass the folder as Program(include_paths=...) or the file's text as "
                 "headers={name: text}; CUDA's own headers (cuda_fp16.h, cuda/std/...) come from "
                 "the nvidia-cuda-runtime and nvidia-cuda-cccl wheels or a CUDA toolkit: "
                 "`cudaload doctor` says which header folders were found")
_HINT_HOST_CODE = ("a header included here holds host code, which NVRTC cannot compile "
                   "(<cub/cub.cuh>, <cub/device/...> and <thrust/...> are for the host compiler): "
                   "include the device-side headers instead, such as <cub/block/block_reduce.cuh>, "
                   "<cub/warp/warp_reduce.cuh> or <cuda/std/...>")
_HINT_NAME_EXPRESSION = ("each name expression ({}) must name a __global__ function or "
                         "template instantiation declared in the source, e.g. 'scale<float>'")


def _include_hint(log: str) -> str:
    """The next step for a log that shows a missing or host-only header, else ""."""
    import re  # deferred: see _LOG_LINE

    from .._base import releases  # deferred: only this path needs it

    # Host code first: a host-only header may also include a host header NVRTC lacks (CCCL 3.0's
    # <cub/cub.cuh> reaches <cstdint>), and no include path would fix that.
    if re.search(_HOST_CODE, log):
        return _HINT_HOST_CODE
    missing = re.search(_MISSING_INCLUDE, log)
    if missing is None:
        return ""
    requirement = releases.wheel_for_header(missing.group(1), version())
    if requirement is None:
        return _HINT_INCLUDE
    header, (major, minor) = missing.group(1), version()
    wheel = re.split(r"[=<>]", requirement)[0]
    return (f"{header} is one of CUDA's headers, from the {wheel} wheel for NVRTC "
            f"{major}.{minor}: {releases.pip_install(requirement)} (`cudaload doctor` lists the "
            "header folders in use)")


def format_compile_error(name: str, source: str, options, log: str, reason: str) -> str:
    """What a failed compilation says, before its next step: the log, then each source line it
    points at, numbered (lines of the program itself, not of the headers it includes)."""
    import re  # deferred: see _LOG_LINE

    lines = source.split("\n")  # as NVRTC counts them: a form feed or U+2028 is no line break
    if lines[-1] == "":
        lines.pop()
    wanted = sorted({int(m.group(2)) for m in re.finditer(_LOG_LINE, log, re.M)
                     if m.group(1).strip() == name})
    shown = []
    for number in wanted:
        for n in range(max(1, number - 2), min(len(lines), number + 2) + 1):
            if n not in shown:
                shown.append(n)
    width = len(str(shown[-1])) if shown else 1
    excerpt = "\n".join(
        f"{'>' if n in wanted else ' '} {n:>{width}} | {lines[n - 1]}" for n in shown)
    message = f"{name}: compilation failed ({reason})\n{log.strip()}"
    if excerpt:
        message += f"\n\n{excerpt}"
    message += f"\n\noptions: {' '.join(options) if options else '(none)'}"
    return message
