"""A request's code made on a miss: NVRTC's (linked by nvJitLink for ``lto=True``), or a PTX or
NVVM IR program linked (_ptx_input.py), the build step of request.py's pipeline.

:func:`build` compiles under the disk cache's lock for the request's key, so that a key is
compiled once also across processes: another process that compiled it meanwhile is a disk hit
here, and the code made here is handed to the disk cache's writer before the lock is released.
Where the NVRTC (or nvJitLink) that loads is not the one the key was made for, the request is
keyed again for it.

What a build may keep: on disk, only a result whose inputs did not change while NVRTC read them
and for which NVRTC read no file the key lacks (its trace, _reads.py); in memory, a result whose
inputs did not change, watched by the files NVRTC read (those the scan missed too).  Each NVRTC
compilation is logged at DEBUG to ``cudaload.compile`` with its key (``record.key``).

Imports of cudaload: _log, errors, objectcode, options, plan, request, toolchain; bindings
(nvrtc), _reads, includes (the search: files NVRTC read that the scan missed), _option_files
(options that name a file), _ptx_input and _linker where asked.
"""

from __future__ import annotations

import os

from . import request as _request, toolchain
from .._base import _log
from ..errors import NvrtcError
from .objectcode import ObjectCode
from .options import LTO_OPTION, names_files
from .plan import LINKED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .options import Arch

__all__ = ["run", "build", "nvrtc_code", "unkeyed", "watching", "ready_to_build"]


def run(request: _request.Request, tc: toolchain.Toolchain | None = None,
        shipped: bool = True) -> ObjectCode:
    """The request's code: looked up (request.lookup; ``tc``, ``shipped`` as it takes them),
    built on a miss, kept.  Raises what the steps raise."""
    found = _request.lookup(request, tc, shipped)
    if found.code is None:
        found = build(request, found)
    return _request.keep(request, found)


def build(request: _request.Request, found: _request.Found) -> _request.Found:
    """``found`` where it has the code; else the code built for it (``where`` "built"), with
    the stamps the memory cache watches and whether it may be kept.  Raises CompileError,
    NvrtcError, the loader's errors, and what Linker.link raises for linked programs."""
    if found.code is not None:
        return found
    if request.code_type in LINKED:  # PTX or NVVM IR input: linked, no NVRTC
        from .link import _ptx_input  # deferred: only this path needs it

        return found._replace(code=_ptx_input.link(request), where="built")
    while True:
        disk = _request.disk(found.inputs)
        with disk.lock(found.key) as publish:
            code = disk.lookup(found.key)  # another process may have compiled it meanwhile
            if code is not None:
                return found._replace(code=code, where="disk")
            # The NVRTC (or nvJitLink) that loads may not be the one the key was made for.
            loaded = toolchain.live()
            if loaded != found.tc or (found.linker is not None
                                      and _nvjitlink().load() != found.linker):
                found = _request.keyed(request, loaded)
                if found.code is not None:
                    return found
                continue
            obj, names = nvrtc_code(request, found, found.kind, found.target)
            # A file that changed while NVRTC read it may have given a mix of old and new:
            # such a result is returned but kept nowhere.  (A program that read no file
            # outside the toolchain has nothing to look at again.)
            read = found.inputs
            kept = not read.path_states or \
                _request.inputs_of(request.inputs, found.tc).path_states == read.path_states
            missing = unkeyed(request, found, names)
            if kept and missing == []:
                publish(obj)
            # Where which files NVRTC read is unknown, a program naming an include by a
            # macro has nothing to watch it by: kept nowhere.
            return found._replace(code=obj, where="built",
                                  kept=kept and (names is not None or read.includes_known),
                                  stamps=watching(request, found, missing))


def nvrtc_code(request: _request.Request, found: _request.Found, kind: str, target: Arch
               ) -> tuple[ObjectCode, tuple[str, ...] | None]:
    """NVRTC's code of ``request`` for ``kind``/``target`` with ``found.tc``'s headers, and the
    header files it read as it named them, or None where that is not known; () where the inputs
    are sure that none outside the toolchain can be read (NVRTC's trace costs 2-3 ms of each
    compilation: not asked for then)."""
    from ..bindings import nvrtc  # deferred: only this path needs it
    # deferred: a request that builds nothing (a disk hit) needs no trace
    from .includes import _reads

    program, flags, lto = request.inputs, request.options.flags, request.options.lto
    sure = found.inputs.sure
    # Checked when the Program was made, and again now: NVRTC aborts the process on a file
    # option whose folder has gone since.
    if names_files(flags):
        # deferred: only options that name a file are checked
        from .includes._option_files import check_files

        check_files(flags)
    gpu = target.sm() if kind == "cubin" else target.compute()
    # NVRTC makes LTO IR for lto=True (nvJitLink links it into ``kind``) and where LTO IR
    # is asked for (returned unlinked: -dlto added where the program lacks it).
    links = lto and kind != "ltoir"
    made = "ltoir" if lto or kind == "ltoir" else kind
    dlto = (LTO_OPTION,) if made == "ltoir" and not lto else ()
    options = (*flags, *dlto, f"--gpu-architecture={gpu}", *found.tc.include_options)
    headers = _request.headers_of(program)
    # A trace the caller asked for is theirs: none of ours beside it (see unkeyed).  Once
    # NVRTC's profiler broke, every compilation names one, or NVRTC writes ./.json.
    trace = asked = None if (sure and not _reads.broken()) or _reads.unsupported() or \
        _reads.asked_by(flags) else _reads.request()
    try:
        compiled = nvrtc.compile(program.source, program.name, options, headers,
                                 program.name_expressions, kind=made,
                                 own_options=(trace.option,) if trace else ())
    except NvrtcError as exc:
        # An NVRTC older than the option refuses it: asked once, then the scan is trusted.
        if trace is None or exc.code != nvrtc.INVALID_OPTION \
                or _reads.OPTION[:-1] not in getattr(exc, "log", ""):
            if trace is not None or _reads.asked_by(flags):
                _reads.mark_broken()  # NVRTC's later traces in this process are incomplete
            raise
        _reads.mark_unsupported()
        trace = None
        compiled = nvrtc.compile(program.source, program.name, options, headers,
                                 program.name_expressions, kind=made)
    finally:  # read (and removed) however the compilation ended
        read = asked.names() if asked is not None else None
    code, log = (_nvjitlink().link(compiled, program.name, gpu, kind) if links
                 else (compiled.code, compiled.log))
    _log.debug("compile", "NVRTC compiled %s to %s for %s%s, key %s", program.name, kind,
               target.sm(), ", linked by nvJitLink" if links else "", found.key, key=found.key)
    return (ObjectCode(code, kind, target.sm(), log=log,
                       lowered_names=dict(compiled.lowered_names), linked=links),
            read if trace is not None else () if sure else None)


def unkeyed(request: _request.Request, found: _request.Found,
            names: tuple[str, ...] | None) -> list[str] | None:
    """The files NVRTC read (``names``, from nvrtc_code) that ``found.key`` does not cover: []
    when there are none or this NVRTC gives no trace (it has none, or its traces broke in this
    process: the scan is trusted there), None when which files were read is not known."""
    from .includes import _reads  # deferred: only this path needs it

    program, key = request.inputs, found.key
    if names is None:
        if _reads.untraced() and not _reads.asked_by(program.options):
            return []
        _log.debug("cache", "%s: which files NVRTC read is not known (no trace): not kept on "
                   "disk, key %s", program.name, key, key=key)
        return None
    missing = _reads.uncovered(names, found.inputs.path_states, _request.headers_of(program),
                               [o[2:] for o in found.tc.include_options], os.getcwd())
    if missing:
        _log.debug("cache", "%s: NVRTC read %s, which the include scan did not find: not "
                   "kept on disk, key %s", program.name, ", ".join(missing), key, key=key)
    return missing


def watching(request: _request.Request, found: _request.Found, missing: list[str] | None):
    """``found``'s stamps extended to the files NVRTC read that the key lacks (see unkeyed)."""
    if not missing:
        return found.inputs.stamps
    from .includes import search as includes  # deferred: only files the scan missed need it

    program = request.inputs
    return includes.watching(found.inputs.stamps, missing, includes.searched_folders(
        program.name, _request.headers_of(program), program.options))


def ready_to_build() -> None:
    """Load now what a first :func:`build` loads: NVRTC, the toolchain, the modules nvrtc_code
    and the disk cache's miss import.  For a process that will build at once and wants that cost
    paid first: compile_all's workers, before they say they are ready
    (compile/parallel/_workers.py)."""
    from ..bindings import nvrtc  # deferred, as in nvrtc_code
    from .includes import _option_files, _reads  # noqa: F401  (deferred, as in nvrtc_code)
    from .cache import claims, locks  # noqa: F401  (deferred, as in cache/disk.py's miss)

    toolchain.current()
    nvrtc.version()  # loads NVRTC


def _nvjitlink():
    """compile/link/_linker.py, imported by the first program that nvJitLink links: it imports the
    loader's bindings, which a disk hit of any other program does without."""
    from .link import _linker  # deferred: see above

    return _linker
