"""Checked calls into NVRTC: version, supported architectures, and one compilation.

The caching, option building and architecture choice live in ``program.py``; this module only turns
one request into one NVRTC program and back into bytes, or into a :class:`CompileError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import _loader
from .errors import CompileError, nvrtc_error

__all__ = ["Compiled", "compile", "version", "supported_archs", "describe", "check"]

_COMPILATION = 6  # NVRTC_ERROR_COMPILATION
_INVALID_OPTION = 5  # NVRTC_ERROR_INVALID_OPTION


@dataclass(frozen=True)
class Compiled:
    """What one NVRTC compilation produced."""

    code: bytes
    kind: str  # "cubin" | "ptx" | "ltoir"
    log: str
    lowered_names: dict = field(default_factory=dict)


def _lib():
    library = _loader.nvrtc()
    return library.ffi, library.lib


def check(rc: int, function: str) -> None:
    """Raise the :class:`NvrtcError` for ``rc`` unless it is ``NVRTC_SUCCESS``."""
    if rc:
        raise nvrtc_error(int(rc), function)


def describe(code: int) -> str:
    """The name of an ``nvrtcResult``, e.g. ``NVRTC_ERROR_COMPILATION``."""
    try:
        ffi, lib = _lib()
        return ffi.string(lib.nvrtcGetErrorString(code)).decode()
    except Exception:  # the library itself may be what failed; fall back to the declarations
        from ._nvrtc_ffi import ffi

        return ffi.string(ffi.cast("nvrtcResult", code))


def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    ffi, lib = _lib()
    major, minor = ffi.new("int *"), ffi.new("int *")
    check(lib.nvrtcVersion(major, minor), "nvrtcVersion")
    return major[0], minor[0]


def supported_archs() -> list[int]:
    """Compute capabilities NVRTC can emit code for, e.g. [75, 80, 86, 89, 90, ...]."""
    ffi, lib = _lib()
    count = ffi.new("int *")
    check(lib.nvrtcGetNumSupportedArchs(count), "nvrtcGetNumSupportedArchs")
    archs = ffi.new("int[]", count[0])
    check(lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
    return list(archs)


def compile(source: str, name: str, options=(), headers=None, name_expressions=(),
            kind: str = "cubin") -> Compiled:
    """Compile ``source`` once.  Raises :class:`CompileError` with the log when NVRTC rejects it."""
    ffi, lib = _lib()
    headers = dict(headers or {})
    keep = []  # cdata must outlive the NVRTC calls that read them

    def cstr(s: str):
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
        opts = [cstr(o) for o in options]
        rc = lib.nvrtcCompileProgram(prog, len(opts), ffi.new("char *[]", opts) if opts else ffi.NULL)
        log = _read(ffi, lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").rstrip("\0")
        if rc in (_COMPILATION, _INVALID_OPTION):
            raise CompileError(format_compile_error(name, source, options, log, describe(rc)),
                               log=log, source=source, options=options, name=name, code=rc)
        check(rc, "nvrtcCompileProgram")
        getter = {"cubin": "CUBIN", "ptx": "PTX", "ltoir": "LTOIR"}[kind]
        code = _read(ffi, lib, prog, f"nvrtcGet{getter}Size", f"nvrtcGet{getter}", raw=True)
        if kind == "ptx":
            code = code.rstrip(b"\0")
        lowered = {}
        for expr in name_expressions:
            out = ffi.new("char **")
            check(lib.nvrtcGetLoweredName(prog, cstr(expr), out), "nvrtcGetLoweredName")
            lowered[expr] = ffi.string(out[0]).decode()
        return Compiled(code, kind, log.strip(), lowered)
    finally:
        lib.nvrtcDestroyProgram(prog_p)


def _read(ffi, lib, prog, size_fn: str, get_fn: str, raw: bool = False):
    size = ffi.new("size_t *")
    check(getattr(lib, size_fn)(prog, size), size_fn)
    buf = ffi.new("char[]", max(size[0], 1))
    check(getattr(lib, get_fn)(prog, buf), get_fn)
    data = ffi.buffer(buf, size[0])[:]
    return data if raw else data.decode(errors="replace")


_LOG_LINE = re.compile(r"\((\d+)\): (?:error|warning|catastrophic error)")


def format_compile_error(name: str, source: str, options, log: str, reason: str) -> str:
    """The message of a failed compilation: the log, then each source line it points at, numbered."""
    lines = source.splitlines()
    wanted = sorted({int(m.group(1)) for m in _LOG_LINE.finditer(log)})
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
