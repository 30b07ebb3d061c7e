"""Program: CUDA C++ source compiled by NVRTC for one architecture, each result cached.

``compile()`` answers from the memory cache itself: the key is what the Program hashed when it
was made (remembered for equal arguments, _prepare.py) plus the ``arch``/``output`` normalised
(``90``, ``"90"``, ``"sm_90"`` and ``(9, 0)`` are one entry), so a hit costs two dict lookups,
plus a ``stat`` of each file the compile read, if any (includes.py).  Anything else is one
request (request.py: a frozen value, then lookup, build, keep): the program's bundle of shipped
code, if any (bundle.py), the disk cache, NVRTC.  ``output="ltoir"`` is NVRTC's LTO IR,
unlinked, for ``cudaload.Linker``.

Making a Program imports only what checks its arguments (_prepare.py); the first ``compile()``
imports what a lookup needs (``_bind``), and only a miss what building needs (build.py): a host
that makes Programs it may never compile, or makes them at import, pays 1-2 ms, not the 30-40
ms of the whole path.
"""

from __future__ import annotations

import os
from _operator import attrgetter  # operator's own; the operator module costs a Program 0.3 ms

from . import _prepare
from .options import OUTPUTS, REQUESTS as _requests, request as _request

TYPE_CHECKING = False  # typing is not imported: a Program made in a fresh process must cost little
if TYPE_CHECKING:
    from typing import Any, Callable

    from .objectcode import ObjectCode
    from .request import Request

__all__ = ["Program", "recompile_refused", "OUTPUTS"]

_memory: Any = None  # the memory cache (cache/memory.py), bound by _bind() at the first compile
_default_arch: Any = None  # plan.default_arch, bound by _bind()
_steps: Any = None  # request.py, bound by _bind()
_resource_programs: Callable[..., Program] | None = None  # _resources.program, bound by from_resource() at its first call


def _bind() -> None:
    """Import what a lookup needs, once (deferred: see the module docstring)."""
    global _memory, _default_arch, _steps
    from . import plan, request  # deferred: see the module docstring
    from .cache.memory import MEMORY  # deferred: see the module docstring

    _memory, _default_arch, _steps = MEMORY, plan.default_arch, request


def _field(name: str, doc: str) -> property:
    """Field ``name`` of a Program's prepared arguments (_prepare.Prepared), read-only (an
    attrgetter: read in C, as fast as a tuple's item)."""
    return property(attrgetter("_p." + name), doc=doc)


class Program:
    """CUDA C++ source with the headers, options and name expressions to compile it with; PTX
    (``code_type="ptx"``) or NVVM IR (``"nvvm"``, libNVVM's PTX) is linked to CUBIN instead.

    Raises ValueError/TypeError for malformed arguments (source or headers that are not UTF-8,
    options without their value); reading include files never raises.
    """

    bundle = None  # a cudaload.Bundle of precompiled code, asked before NVRTC

    def __init__(self, source: str | bytes, *, name: str = "kernel.cu", options=(), headers=None,
                 include_paths=(), name_expressions=(), std: str | None = "c++17",
                 defines=None, fast_math: bool = False, line_info: bool = False,
                 debug: bool = False, max_registers: int | None = None,
                 relocatable: bool = False, lto: bool = False, bundle=None,
                 code_type: str = "c++"):
        if bundle is not None:
            self.bundle = bundle
        if code_type != "c++":  # PTX (or NVVM IR): linked to CUBIN, by nvJitLink, not NVRTC
            from .link import _ptx_input  # deferred: only this path needs it

            self._p = _ptx_input.prepare(code_type, source, name, options, _prepare.Keywords(
                headers=headers, include_paths=include_paths, defines=defines,
                name_expressions=name_expressions, fast_math=fast_math,
                relocatable=relocatable, lto=lto, line_info=line_info, debug=debug,
                max_registers=max_registers))
            self.headers = {}
            return
        # Checked, normalised and digested once per distinct arguments (_prepare.py), and kept
        # whole: setting each of its fields as an attribute cost a new Program a quarter of its
        # time (hosts that build kernel text per call make one per call).  Given by position:
        # by keyword (or as one named value) a new Program took a tenth longer (0.97 us, not
        # 0.88), and prepare() checks and freezes each one by its place in Program's signature.
        self._p = p = _prepare.prepare(
            source, name, options, headers, include_paths, name_expressions, std, defines,
            fast_math, line_info, debug, max_registers, relocatable, lto)
        self.headers = dict(p.headers) if p.headers else {}

    source = _field("source", "the text (bytes are decoded as UTF-8)")
    name = _field("name", "the file name NVRTC reports in its log")
    include_paths = _field("include_paths", "the folders searched for #include, as given")
    options = _field("options", "the NVRTC options the keywords and options= make")
    name_expressions = _field("name_expressions", "C++ names instantiated and looked up")
    _digest = _field("digest", "the digest")

    @classmethod
    def from_file(cls, path, **kw) -> Program:
        """The program in the file ``path``; its folder is searched for ``#include "..."``.

        Raises OSError when the file cannot be read, ValueError (naming the file) when it is not
        UTF-8 text.
        """
        path = os.fspath(path)
        if path.lower().endswith(".ptx"):
            kw.setdefault("code_type", "ptx")
        with open(path, encoding="utf-8") as f:
            try:
                source = f.read()
            except UnicodeDecodeError as exc:
                # deferred: only a file that is no text needs it
                from .includes.search import not_utf8

                raise not_utf8(path, exc) from None
        kw.setdefault("name", os.path.basename(path))
        if kw.get("code_type", "c++") == "c++":
            kw["include_paths"] = (os.path.dirname(os.path.abspath(path)),
                                   *kw.get("include_paths", ()))
        return cls(source, **kw)

    @classmethod
    def from_resource(cls, package: str, resource: str, **kw) -> Program:
        """The program in the package data file ``resource`` of ``package``, with the sibling files
        it includes passed as in-memory headers; a ``.ptx`` file is a PTX program, as for
        :meth:`from_file`; the same Program again for equal arguments while its files are
        unchanged (_resources.py).  Raises FileNotFoundError, ModuleNotFoundError."""
        global _resource_programs
        if _resource_programs is None:  # bound at the first call: an import per call is 0.5 us
            from ._resources import program  # deferred: see the module docstring

            _resource_programs = program
        return _resource_programs(cls, package, resource, kw)

    def __repr__(self) -> str:
        return f"<Program {self.name} {len(self.source)} chars>"

    def compile(self, arch=None, output: str = "auto") -> ObjectCode:
        """Compiled code for ``arch`` (None: see plan.default_arch); ``output`` "auto" picks
        CUBIN where NVRTC knows the arch, else PTX the driver can load.

        Raises TypeError/ValueError for a wrong arch or output before any device or library is
        asked, CudaUnavailableError for ``arch=None`` without a usable device where machine code
        for this GPU is asked for (before NVRTC is looked for), CompileError when NVRTC rejects
        the source, NvrtcError when no code this machine can load can be made, the loader's
        errors when NVRTC is missing.
        """
        if _memory is None:
            _bind()
        explicit = arch is not None
        if arch is None:
            arch = _default_arch(self._p.code_type, output)
        # (arch, output, memory key) asked last of any Program made with these arguments: a
        # Program made again, asked as the last one was, looks its key up in the memory cache
        # as the same object, which is then the newest there already.
        shared = self._p.asked
        asked = shared.last
        if arch is asked[0] and output is asked[1]:
            key = asked[2]
        else:
            try:
                request = _requests[(arch.__class__, arch, output)]
            except (KeyError, TypeError):  # first asked, or not an arch: request() says which
                request = _request(arch, output)
            # Only an arch request() took is remembered: hashable, so never changed in place.
            key = (self._p.digest, request)
            shared.last = (arch, output, key)
        # A hit holds while the files its compile read are as they were (nothing to check for
        # a program that reads none, the common case).
        hit = _memory.get(key)
        if hit is not None and (not hit.stamps or _steps.still_valid(hit.stamps)):
            return hit.code
        # Past the memory cache: one request, looked up, built on a miss, kept (request.py)
        request = _steps.make(self._p, self.bundle, arch, output, explicit, key)
        found = _steps.lookup(request)
        if found.code is None:
            from .build import build  # deferred: a miss's

            found = build(request, found)
        return _steps.keep(request, found)

    def plan(self, arch=None, output: str = "auto", *, device: bool = True) -> Request:
        """The request that compiling for ``arch``/``output`` makes (request.py: a frozen value,
        then looked up, built and kept); ``arch=None``: the device's, as :meth:`compile` asks,
        or with ``device=False`` none (plan.choose picks).  Raises as :meth:`compile` does, but
        looks nothing up."""
        if _memory is None:
            _bind()
        explicit = arch is not None
        if arch is None and device:
            arch = _default_arch(self._p.code_type, output)
        return _steps.make(self._p, self.bundle, arch, output, explicit)

    def _bundle_digest(self) -> bytes:
        """The digest a bundle files this program under (request.bundle_digest)."""
        from .request import bundle_digest  # deferred: see the module docstring

        return bundle_digest(self._p)


def recompile_refused(refused: ObjectCode) -> ObjectCode | None:
    """Code the driver can load in place of ``refused`` (rebuild.recompile_refused): None where
    no Program made it, or nothing else can be tried."""
    from .rebuild import recompile_refused as again  # deferred: only a refusal needs it

    return again(refused)

