"""Program: CUDA C++ source compiled by NVRTC for one architecture, each result cached.

``compile()`` goes memory cache -> the program's bundle of shipped code, if any (bundle.py) ->
disk cache -> NVRTC.  The memory key is what the Program hashed when it was made (remembered for
equal arguments, _prepare.py) plus the ``arch``/``output`` normalised (``90``, ``"90"``,
``"sm_90"`` and ``(9, 0)`` are one entry), so a hit costs two dict lookups, plus a ``stat`` of
each file the compile read, if any (includes.py).  The disk key (sha256) covers everything that changes the
output: the program's inputs (source, name, in-memory headers, options, name expressions), every
path NVRTC's include search looks at when ``compile()`` runs, with the contents of the files it
reads, the target kind and arch, NVRTC's version and build, the CUDA header folders, the cache
format, for PTX the driver version, and for a program linked by nvJitLink (``lto=True``) the
linker's build.  ``output="ltoir"`` is NVRTC's LTO IR, unlinked, for ``cudaload.Linker``.
Each NVRTC compilation is logged at DEBUG to
``cudaload.compile`` with its key (``record.key``), each recompilation after a refusal too.

Making a Program imports only what checks its arguments (_prepare.py); the first ``compile()``
imports the rest of the compile path (``_compile_path``): a host that makes Programs it may never
compile, or makes them at import, pays 1-2 ms, not the 30-40 ms of the whole path.
"""

from __future__ import annotations

import os
from _operator import attrgetter  # operator's own; the operator module costs a Program 0.3 ms

from . import _prepare
from .. import lifetime
from ..errors import CudaLoadError
from .options import OUTPUTS, REQUESTS as _requests, check_output, request as _request

TYPE_CHECKING = False  # typing is not imported: a Program made in a fresh process must cost little
if TYPE_CHECKING:
    from typing import Callable

    from . import includes, toolchain
    from .objectcode import ObjectCode
    from .options import Arch
    from .plan import Plan

__all__ = ["Program", "Origin", "recompile_refused", "OUTPUTS"]

_memory = None  # the memory cache (cache/memory.py), bound by _compile_path() at the first compile
_resource_programs: Callable[..., Program] | None = None  # _resources.program, bound by from_resource() at its first call


def _compile_path():
    """Import what compiling needs, once: the memory cache, returned; the rest (plan.py and what
    it imports) is imported by plan.py on the way."""
    global _memory
    from . import plan  # noqa: F401  (deferred: see the module docstring)
    from .cache.memory import MEMORY  # deferred: only this path needs it

    _memory = MEMORY
    return MEMORY


def _memory_cache():
    """The memory cache, imported at the first call; "is None", not "or", which would call
    MemoryCache.__len__ (Program.compile has this inline: a call per hit is time)."""
    return _compile_path() if _memory is None else _memory


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
            from . import _ptx_input  # deferred: only this path needs it

            self._p = _ptx_input.prepare(code_type, source, name, options, {
                "headers": headers, "include_paths": include_paths, "defines": defines,
                "name_expressions": name_expressions, "fast_math": fast_math,
                "relocatable": relocatable, "lto": lto, "line_info": line_info,
                "debug": debug, "max_registers": max_registers})
            self.headers = {}
            return
        # Checked, normalised and digested once per distinct arguments (_prepare.py), and kept
        # whole: setting each of its fields as an attribute cost a new Program a quarter of its
        # time (hosts that build kernel text per call make one per call).
        self._p = p = _prepare.prepare(
            source, name, options, headers, include_paths, name_expressions, std, defines,
            fast_math, line_info, debug, max_registers, relocatable, lto)
        self.headers = dict(p.headers) if p.headers else {}

    source = _field("source", "the text (bytes are decoded as UTF-8)")
    name = _field("name", "the file name NVRTC reports in its log")
    include_paths = _field("include_paths", "the folders searched for #include, as given")
    options = _field("options", "the NVRTC options the keywords and options= make")
    name_expressions = _field("name_expressions", "C++ names instantiated and looked up")
    _parts = _field("parts", "what the digest covers")
    _digest = _field("digest", "the digest")
    _size = _field("chars", "characters of source and headers")
    _lto = _field("lto", "whether nvJitLink links it (lto=True)")

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
                from .includes import not_utf8  # deferred: only a file that is no text needs it

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
        """Compiled code for ``arch`` (None: see _default_arch); ``output`` "auto" picks CUBIN
        where NVRTC knows the arch, else PTX the driver can load.

        Raises TypeError/ValueError for a wrong arch or output before any device or library is
        asked, CudaUnavailableError for ``arch=None`` without a usable device where machine code
        for this GPU is asked for (before NVRTC is looked for), CompileError when NVRTC rejects
        the source, NvrtcError when no code this machine can load can be made, the loader's
        errors when NVRTC is missing.
        """
        explicit = arch is not None
        if arch is None:
            arch = _default_arch(self, output)
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
        # _memory_cache(), inline
        hit = (_compile_path() if _memory is None else _memory).get(key)
        if hit is not None and (not hit.stamps or _still_valid(hit.stamps)):
            return hit.code
        from .plan import Plan  # deferred: imported by _compile_path() already

        if self._parts[0] in _LINKED:  # PTX or NVVM IR input: no Plan, no NVRTC
            return _linked_ptx(self, arch, output, key)
        return Plan(self, arch, output, explicit).build()

    def plan(self, arch=None, output: str = "auto") -> Plan:
        """What compiling for ``arch``/``output`` takes now (see plan.py): ``Plan.code`` where the
        memory cache, the program's bundle or the disk cache has it, else the key, kind and
        target that ``Plan.build()`` compiles.  ``compile()`` is ``plan().build()`` with a faster
        memory hit.  Raises as :meth:`compile` does, but compiles nothing."""
        explicit = arch is not None
        if arch is None:
            arch = _default_arch(self, output)
        key = (self._digest, _request(arch, output))
        hit = _memory_cache().get(key)
        from .plan import Plan  # deferred: imported by _compile_path() already

        if hit is not None and (not hit.stamps or _still_valid(hit.stamps)):
            return Plan.found(self, arch, output, hit.code)
        if self._parts[0] in _LINKED:  # linked now: compile_all has nothing for its workers
            return Plan.found(self, arch, output, _linked_ptx(self, arch, output, key))
        return Plan(self, arch, output, explicit)

    def _inputs(self, tc: toolchain.Toolchain | None) -> includes.Inputs:
        """What NVRTC will read for this program now, with ``tc``'s header folders.  Without
        ``tc`` (code shipped in a bundle is looked up without NVRTC), the files outside CUDA's
        header folders that the program itself reaches."""
        from . import includes  # deferred: imported by _compile_path() already
        from ._directives import only_toolchain  # deferred: only this path needs it

        # Most kernels include only the toolchain's headers: no search to follow then.
        quick = only_toolchain(self.source, self.headers, self.options)
        if quick is not None:
            return includes.NOTHING_READ[quick]
        folders = [o[2:] for o in tc.include_options] if tc is not None else []
        return includes.resolve(self.source, self.name, self.headers, self.options, folders)

    def _bundle_digest(self) -> bytes:
        """The digest a bundle files this program under: with the files it reads now, as a lookup
        without NVRTC sees them; a PTX program's own (it reads no file, and its text is no C++
        for the include scan)."""
        if self._parts[0] in _LINKED:
            return self._digest
        return self._inputs_digest(self._inputs(None))

    def _inputs_digest(self, inputs: includes.Inputs) -> bytes:
        """The digest of this program with what it reads: its own digest when it reads no file, so
        code shipped for it matches wherever it is compiled."""
        if not inputs.path_states:
            return self._digest
        return _prepare.digest(*self._parts, *[x for item in inputs.path_states for x in item])

    def _keep(self, obj: ObjectCode, arch, output: str, key: str | None, stamps,
              keep: bool = True) -> None:
        """Make ``obj`` this program's code for ``arch``/``output`` (see :meth:`_own`) and, with
        ``keep``, the memory cache's."""
        self._own(obj, arch, output, key)
        if keep:
            _memory_cache().put((self._digest, _request(arch, output)), obj, stamps,
                                self._size + len(obj.code) + len(obj.log))

    def _key(self, digest: bytes, tc: toolchain.Toolchain, kind: str, target: Arch,
             linker: str | None = None) -> str:
        """The disk key; ``linker``: the nvJitLink build that links this program (``lto``)."""
        from ._cache_folder import FORMAT  # deferred: only this path needs it
        from .plan import driver_version  # deferred: imported by _compile_path() already

        driver = str(driver_version() or 0) if kind == "ptx" else "-"
        return _prepare.digest(str(FORMAT), digest.hex(), kind, target.sm(), tc.key,
                               driver, *(() if linker is None else ("nvJitLink", linker))).hex()

    def _own(self, obj: ObjectCode, arch, output: str, key: str | None) -> None:
        """Give ``obj`` what the launch side reads of its program: the source, and, as data, what
        compiled it (for ``arch``/``output`` as asked, under ``key``), which
        :func:`recompile_refused` is given when the driver refuses it."""
        obj.source = self.source
        obj.name = self.name
        obj.origin = Origin(self._p, arch, output, key)

    @classmethod
    def _from_prepared(cls, prepared) -> Program:
        """The Program whose prepared arguments are ``prepared`` (an :class:`Origin`'s)."""
        program = cls.__new__(cls)
        program._p = prepared
        program.headers = dict(prepared.headers) if prepared.headers else {}
        return program


class Origin:
    """What compiled an ObjectCode, as plain data: the Program's prepared arguments (source,
    headers and options: counted in the memory cache's bound with the code) and the request."""

    __slots__ = ("prepared", "arch", "output", "key")

    def __init__(self, prepared, arch, output: str, key: str | None):
        self.prepared, self.arch, self.output, self.key = prepared, arch, output, key


def recompile_refused(refused: ObjectCode) -> ObjectCode | None:
    """Code the driver can load in place of ``refused``, which it refused: compiled again by the
    program that made it (CUBIN for the device, or PTX for an older arch).  None where no Program
    made it, or nothing else can be tried.  The one way back from a refusal to a compiler."""
    origin = getattr(refused, "origin", None)
    if not isinstance(origin, Origin):
        return None
    from . import cache, toolchain  # deferred: only this path needs it
    from .plan import Plan  # deferred: only this path needs it

    program = Program._from_prepared(origin.prepared)
    cache.MEMORY.pop((program._digest, _request(origin.arch, origin.output)), None)
    tc = toolchain.live()
    if origin.key is None:  # shipped in a bundle: compile it here instead
        return Plan(program, origin.arch, origin.output, False, shipped=False, tc=tc).build()
    cache.default().evict(origin.key)
    return Plan(program, origin.arch, origin.output, False, shipped=False, tc=tc).replace(
        refused, origin.key, _device_arch())


def _still_valid(stamps) -> bool:
    """Whether the files a memory hit's compile read look as they did (includes.still_valid)."""
    from .includes import still_valid  # deferred: only a hit whose compile read files needs it

    return still_valid(stamps)


def _linked_ptx(program: Program, arch, output: str, memory_key) -> ObjectCode:
    """The CUBIN of PTX ``program`` for ``arch`` (a NVVM IR program's CUBIN or PTX), kept in the
    memory cache under ``memory_key`` as compiled code is.  Raises as Linker.link does."""
    from . import _ptx_input  # deferred: only this path needs it
    obj = _ptx_input.link(program, arch, output)
    _memory_cache().put(memory_key, obj, None, program._size + len(obj.code))
    return obj


_LINKED = ("ptx", "nvvm")  # the code types no NVRTC compiles: linked (after libNVVM) instead
_no_device = False
_unusable = None  # thread_device.unusable when _no_device was set: the reason, for every thread
_thread_device = None  # bindings/thread_device.py's state, once imported


def _device_arch():
    """The current device's compute capability (e.g. 90), or None without a usable device."""
    if _no_device:
        return None
    state = _thread_device
    found = state.arch if state is not None else None  # found by this thread before: no call
    return found if found is not None else _ask_device()


def _default_arch(program: Program, output: str):
    """The arch ``program.compile(arch=None, output)`` compiles for, one rule for every output
    and code type: the current device's; without a usable device, None where the code names no
    GPU's machine code (LTO IR: NVRTC's newest arch, plan.choose; a PTX program's CUBIN: the
    PTX's own ``.target``, _ptx_input.link), else the reason there is no device, raised
    (:func:`_without_device`).  ``output`` is checked first: a wrong one is the same ValueError
    with a GPU, with a driver and no device, and with no driver."""
    if output != "auto":  # "auto", every program's and the default, costs a hit no check
        check_output(output)
        if program._parts[0] in _LINKED:
            from ._ptx_input import check_output as check_linked  # deferred: PTX programs only

            check_linked(output, program._parts[0])
    found = _device_arch()
    if found is not None:
        return found
    if output == "ltoir" or program._parts[0] == "ptx":
        return None
    if _unusable is not None:  # the reason found before, again: no call into the driver
        raise _unusable.with_traceback(None)
    return _without_device()


def _without_device() -> int:
    """What ``compile(arch=None)`` does without a usable device where machine code for this GPU
    is asked for (CUBIN, PTX or "auto" of CUDA C++): compile nothing, and raise why there is
    none, a CudaUnavailableError (no driver, a failed ``cuInit``, no device, a forked child) or
    the DriverError that kept it from being used, before NVRTC is looked for.  Code compiled
    for no device would be thrown away, and NVRTC is what a machine without a GPU often lacks: a
    host package's ``except CudaUnavailableError`` fallback then works with or without it.  An
    explicit arch compiles anywhere (precompiling, ``cudaload compile --arch``), and so does
    code that names no GPU's machine code (see _default_arch).  A device set up since
    (``status(refresh=True)``) answers instead."""
    from ..bindings import thread_device  # deferred: loads the driver's bindings

    return thread_device.arch()


def _ask_device():
    global _no_device, _thread_device, _unusable
    try:
        from ..bindings import thread_device  # deferred: loads the driver's bindings

        _thread_device = thread_device.state
        return thread_device.arch()
    except CudaLoadError:
        # No driver, no device or a failed cuInit stays so for the life of the process (the driver
        # remembers), so the memory-hit path need not ask again: 3-7 us per call otherwise; and
        # where no thread can have a device, _default_arch raises the reason without a call.
        _no_device = True
        _unusable = thread_device.unusable
        return None


def forget_no_device() -> None:
    """Ask the driver again at the next ``compile(arch=None)`` (after ``status(refresh=True)``,
    and in the child of a fork)."""
    global _no_device, _unusable
    _no_device, _unusable = False, None


lifetime.on_forget(forget_no_device)  # a driver set up since may answer: ask it again
lifetime.on_fork_in_child(forget_no_device)  # the child asks its own driver state
