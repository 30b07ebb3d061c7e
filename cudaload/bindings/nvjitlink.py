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
from .._base import _sigint
from ..errors import CompileError, LinkError, NvrtcError

__all__ = ["link", "link_inputs", "version", "OPTIONS", "INPUTS", "undefined_symbol"]

# Whole-program optimisation of a program linked alone: nothing outside it can refer to its
# device variables, except the host through the module's globals (documented for lto=True).
OPTIONS = ("-lto", "-optimize-unused-variables")

# ObjectCode kind -> nvJitLink's input type
INPUTS = {"cubin": "NVJITLINK_INPUT_CUBIN", "ptx": "NVJITLINK_INPUT_PTX",
          "ltoir": "NVJITLINK_INPUT_LTOIR", "fatbin": "NVJITLINK_INPUT_FATBIN",
          "library": "NVJITLINK_INPUT_LIBRARY"}

# nvJitLinkCreate's answers for an arch it does not know (newer than its release) and one it no
# longer supports (older than its release supports): the caller's arch to change, not a broken
# library.  Its answers for the other options are the caller's to fix too.
_ARCH_REFUSALS = ("NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH")
_OPTION_REFUSALS = ("NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS")

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
            function=err.function,
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
    handle = _create(ffi, lib, [ffi.string(o).decode() for o in options], options)
    try:
        rc, failed, call = 0, "the link", "nvJitLinkComplete"
        for input_kind, data, name in inputs:
            rc = lib.nvJitLinkAddData(handle[0], getattr(lib, INPUTS[input_kind]), data,
                                      len(data), name.encode())
            if rc:
                failed, call = f"{input_kind} input {name}", "nvJitLinkAddData"
                break
        if not rc:
            try:
                _sigint.hold()  # Ctrl-C comes once the link returns (_sigint.py says why)
                rc = lib.nvJitLinkComplete(handle[0])
            finally:
                _sigint.release()
        info = _text(_read(ffi, lib, handle[0], "InfoLog"))
        if rc:
            log = _text(_read(ffi, lib, handle[0], "ErrorLog"))
            raise LinkError(f"{_describe(rc)} ({rc}) at {failed}", log=log, info_log=info,
                            symbol=undefined_symbol(log), linker="nvJitLink",
                            result=_describe(rc), function=call)
        code = _read(ffi, lib, handle[0], "LinkedPtx" if kind == "ptx" else "LinkedCubin")
        return (code.rstrip(b"\0") if kind == "ptx" else code), info
    finally:
        lib.nvJitLinkDestroy(handle)


def _create(ffi, lib, words: list[str], options):
    """A new link handle for ``options`` (``words`` as text).  Raises LinkError where nvJitLink
    refuses an option or the arch (with its error log), NvrtcError where it fails otherwise."""
    handle = ffi.new("nvJitLinkHandle *")
    rc = lib.nvJitLinkCreate(handle, len(options), ffi.new("char *[]", options))
    if not rc:
        return handle
    result, log = _describe(rc), ""
    if handle[0] != ffi.NULL:  # made though refused: it holds the error log, then is destroyed
        try:
            log = _text(_read(ffi, lib, handle[0], "ErrorLog"))
        except NvrtcError:
            pass
        finally:
            lib.nvJitLinkDestroy(handle)
    if result in _ARCH_REFUSALS:
        arch = next((w.partition("=")[2] for w in words if w.startswith("-arch=")), "?")
        raise LinkError(f"{result} ({rc}): {_release()} does not "
                        f"{'know' if result == _ARCH_REFUSALS[0] else 'support'} the arch {arch}",
                        log=log, linker="nvJitLink", result=result, hint=_arch_hint(result, arch),
                        function="nvJitLinkCreate")
    if result in _OPTION_REFUSALS:
        raise LinkError(f"{result} ({rc}): this nvJitLink refuses the options {' '.join(words)}",
                        log=log, linker="nvJitLink", result=result, function="nvJitLinkCreate")
    _check(rc, "nvJitLinkCreate")


def version() -> tuple[int, int] | None:
    """(major, minor) of the nvJitLink loaded (loading it); None for one before CUDA 12.3,
    which cannot say.  Raises the loader's errors."""
    library = _loader.nvjitlink()
    try:
        call = library.lib.nvJitLinkVersion
    except AttributeError:  # a release before nvJitLinkVersion
        return None
    major, minor = library.ffi.new("unsigned int *"), library.ffi.new("unsigned int *")
    if call(major, minor):
        return None
    return major[0], minor[0]


def _release() -> str:
    """The nvJitLink loaded, as a message names it: "nvJitLink 13.5"."""
    known = version()
    return f"nvJitLink {known[0]}.{known[1]}" if known else "this nvJitLink (before CUDA 12.3)"


def _arch_hint(result: str, arch: str) -> str:
    """The next step where nvJitLink refuses ``arch``: another nvJitLink, or another arch."""
    if result == _ARCH_REFUSALS[0]:  # newer than it
        return (f"install a newer nvJitLink that knows {arch} (pip install -U "
                f"nvidia-nvjitlink), or link for an arch {_release()} knows (arch=)")
    return (f"link for {arch} with an nvJitLink of an older CUDA release that supports it "
            f"(CUDALOAD_LIBNVJITLINK names its file), or for an arch {_release()} supports "
            "(arch=)")


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
