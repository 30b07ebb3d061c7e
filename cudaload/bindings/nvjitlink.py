"""Checked calls into nvJitLink: the link of one program's LTO IR into code.

NVRTC compiles a program with ``-dlto`` to LTO IR; linking it with ``-lto`` optimises the whole
program at once, and ``-optimize-unused-variables`` removes the device variables no device code
reads (a header's constants, emitted into every module that includes it, are most of a small
module's GPU memory).  Which programs are linked, and how they are cached, is program.py's.

Layer 1, bindings: may import the foundation and bindings.
"""

from __future__ import annotations

from . import _loader
from ..errors import CompileError, NvrtcError

__all__ = ["link", "OPTIONS"]

# Whole-program optimisation of a program linked alone: nothing outside it can refer to its
# device variables, except the host through the module's globals (documented for lto=True).
OPTIONS = ("-lto", "-optimize-unused-variables")


def link(ltoir: bytes, name: str, arch: str, kind: str = "cubin") -> tuple[bytes, str]:
    """(code, info log) of the LTO IR ``ltoir`` of program ``name`` linked alone for ``arch``
    ("sm_90"; "compute_90" with ``kind`` "ptx").  Raises CompileError with nvJitLink's log when
    the link fails (an undefined device function, IR from a newer NVRTC), NvrtcError when the
    library refuses a call."""
    library = _loader.nvjitlink()
    ffi, lib = library.ffi, library.lib
    options = [ffi.new("char[]", o.encode()) for o in
               (f"-arch={arch}", *OPTIONS, *(("-ptx",) if kind == "ptx" else ()))]
    handle = ffi.new("nvJitLinkHandle *")
    _check(lib.nvJitLinkCreate(handle, len(options), ffi.new("char *[]", options)),
           "nvJitLinkCreate")
    try:
        rc = lib.nvJitLinkAddData(handle[0], lib.NVJITLINK_INPUT_LTOIR, ltoir, len(ltoir),
                                  name.encode())
        if not rc:
            rc = lib.nvJitLinkComplete(handle[0])
        if rc:
            log = _read(ffi, lib, handle[0], "ErrorLog").decode(errors="replace").strip("\0 \n")
            raise CompileError(
                f"{name}: nvJitLink could not link its LTO IR for {arch}: {_describe(rc)} ({rc})"
                + (f"\n{log}" if log else ""), log=log, name=name,
                hint="a program compiled with lto=True is linked alone: every device function "
                     "it calls must be defined in it; and nvJitLink must be of NVRTC's CUDA "
                     "release or newer (pip install -U nvidia-nvjitlink)")
        code = _read(ffi, lib, handle[0], "LinkedPtx" if kind == "ptx" else "LinkedCubin")
        info = _read(ffi, lib, handle[0], "InfoLog").decode(errors="replace")
        # Its "INFO:" lines are progress notes ("LTOIR Container created"), not about the code.
        notes = "\n".join(line for line in info.rstrip("\0").splitlines()
                          if line.strip() and not line.startswith("INFO:"))
        return (code.rstrip(b"\0") if kind == "ptx" else code), notes
    finally:
        lib.nvJitLinkDestroy(handle)


def _read(ffi, lib, handle, what: str) -> bytes:
    size = ffi.new("size_t *")
    _check(getattr(lib, f"nvJitLinkGet{what}Size")(handle, size), f"nvJitLinkGet{what}Size")
    buf = ffi.new("char[]", max(size[0], 1))
    _check(getattr(lib, f"nvJitLinkGet{what}")(handle, buf), f"nvJitLinkGet{what}")
    return ffi.buffer(buf, size[0])[:]


def _describe(code: int) -> str:
    from ._nvjitlink_ffi import ffi

    return ffi.string(ffi.cast("nvJitLinkResult", code))


def _check(rc: int, function: str) -> None:
    if rc:
        name = _describe(int(rc))
        raise NvrtcError(f"{function} failed: {name} ({int(rc)})", code=int(rc), name=name,
                         function=function, detail=name,
                         hint="reinstall nvidia-nvjitlink, or set CUDALOAD_LIBNVJITLINK to a "
                              "complete install")
