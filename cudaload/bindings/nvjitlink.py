"""Checked calls into nvJitLink: a link of device code (LTO IR, PTX, CUBIN, fatbins, libraries)
into one CUBIN or PTX.

NVRTC compiles a program with ``-dlto`` to LTO IR; linking it with ``-lto`` optimises the whole
program at once, and ``-optimize-unused-variables`` removes the device variables no device code
reads (a header's constants, emitted into every module that includes it, are most of a small
module's GPU memory).  Which programs are linked, and how they are cached, is program.py's and
linker.py's.
"""

from __future__ import annotations

import re

from . import _loader
from .. import _sigint
from ..errors import CompileError, LinkError, NvrtcError

__all__ = ["link", "link_inputs", "OPTIONS", "INPUTS", "undefined_symbol"]

# Whole-program optimisation of a program linked alone: nothing outside it can refer to its
# device variables, except the host through the module's globals (documented for lto=True).
OPTIONS = ("-lto", "-optimize-unused-variables")

# ObjectCode kind -> nvJitLink's input type
INPUTS = {"cubin": "NVJITLINK_INPUT_CUBIN", "ptx": "NVJITLINK_INPUT_PTX",
          "ltoir": "NVJITLINK_INPUT_LTOIR", "fatbin": "NVJITLINK_INPUT_FATBIN",
          "library": "NVJITLINK_INPUT_LIBRARY"}

# How nvJitLink's log names a symbol nothing defines: ptxas after an LTO link, the linker of
# relocatable CUBINs, and the driver's linker (the same words).
_UNDEFINED = re.compile(r"(?:Unresolved extern function|Undefined reference to|"
                        r"unresolved extern function) '([^']+)'")


def undefined_symbol(log: str) -> str:
    """The first symbol a linker's ``log`` says nothing defines, "" when it names none."""
    match = _UNDEFINED.search(log)
    return match.group(1) if match else ""


def link(ltoir: bytes, name: str, arch: str, kind: str = "cubin") -> tuple[bytes, str]:
    """(code, info log) of the LTO IR ``ltoir`` of program ``name`` linked alone for ``arch``
    ("sm_90"; "compute_90" with ``kind`` "ptx").  Raises CompileError with nvJitLink's log when
    the link fails (an undefined device function, IR from a newer NVRTC), NvrtcError when the
    library refuses a call."""
    try:
        code, info = link_inputs([("ltoir", ltoir, name)], (f"-arch={arch}", *OPTIONS), kind)
    except LinkError as err:
        raise CompileError(
            f"{name}: nvJitLink could not link its LTO IR for {arch}: {err.args[0]}"
            + (f"\n{err.log}" if err.log else ""), log=err.log, name=name,
            hint="a program compiled with lto=True is linked alone: every device function "
                 "it calls must be defined in it; and nvJitLink must be of NVRTC's CUDA "
                 "release or newer (pip install -U nvidia-nvjitlink)") from None
    # Its "INFO:" lines are progress notes ("LTOIR Container created"), not about the code.
    notes = "\n".join(line for line in info.splitlines()
                      if line.strip() and not line.startswith("INFO:"))
    return code, notes


def link_inputs(inputs, options, kind: str = "cubin") -> tuple[bytes, str]:
    """(code, info log) of ``inputs``, (kind, bytes, name) each, linked with nvJitLink
    ``options`` (``-arch=sm_90`` among them) into ``kind`` ("cubin", or "ptx" of LTO IR).
    Raises LinkError with both logs when nvJitLink refuses an input or the link, NvrtcError
    when the library refuses a call."""
    library = _loader.nvjitlink()
    ffi, lib = library.ffi, library.lib
    options = [ffi.new("char[]", o.encode()) for o in (*options, *(("-ptx",) if kind == "ptx"
                                                                  else ()))]
    handle = ffi.new("nvJitLinkHandle *")
    rc = lib.nvJitLinkCreate(handle, len(options), ffi.new("char *[]", options))
    if rc in (lib.NVJITLINK_ERROR_UNRECOGNIZED_OPTION, lib.NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS):
        words = " ".join(ffi.string(o).decode() for o in options)
        raise LinkError(f"{_describe(rc)} ({rc}): this nvJitLink refuses the options {words}",
                        linker="nvJitLink", result=_describe(rc))
    _check(rc, "nvJitLinkCreate")
    try:
        rc, failed = 0, "the link"
        for input_kind, data, name in inputs:
            rc = lib.nvJitLinkAddData(handle[0], getattr(lib, INPUTS[input_kind]), data,
                                      len(data), name.encode())
            if rc:
                failed = f"{input_kind} input {name}"
                break
        if not rc:
            held = _sigint.hold()  # Ctrl-C comes once the link returns (_sigint.py says why)
            try:
                rc = lib.nvJitLinkComplete(handle[0])
            finally:
                _sigint.release(held)
        info = _text(_read(ffi, lib, handle[0], "InfoLog"))
        if rc:
            log = _text(_read(ffi, lib, handle[0], "ErrorLog"))
            raise LinkError(f"{_describe(rc)} ({rc}) at {failed}", log=log, info_log=info,
                            symbol=undefined_symbol(log), linker="nvJitLink",
                            result=_describe(rc))
        code = _read(ffi, lib, handle[0], "LinkedPtx" if kind == "ptx" else "LinkedCubin")
        return (code.rstrip(b"\0") if kind == "ptx" else code), info
    finally:
        lib.nvJitLinkDestroy(handle)


def _text(data: bytes) -> str:
    return data.decode(errors="replace").strip("\0 \n")


def _read(ffi, lib, handle, what: str) -> bytes:
    size = ffi.new("size_t *")
    _check(getattr(lib, f"nvJitLinkGet{what}Size")(handle, size), f"nvJitLinkGet{what}Size")
    buf = ffi.new("char[]", max(size[0], 1))
    _check(getattr(lib, f"nvJitLinkGet{what}")(handle, buf), f"nvJitLinkGet{what}")
    return ffi.buffer(buf, size[0])[:]


def _describe(code: int) -> str:
    from ._nvjitlink_ffi import ffi  # deferred: only this path needs it

    return ffi.string(ffi.cast("nvJitLinkResult", code))


def _check(rc: int, function: str) -> None:
    if rc:
        name = _describe(int(rc))
        raise NvrtcError(f"{function} failed: {name} ({int(rc)})", code=int(rc), name=name,
                         function=function, detail=name,
                         hint="reinstall nvidia-nvjitlink, or set CUDALOAD_LIBNVJITLINK to a "
                              "complete install")
