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
linker's build.  Each NVRTC compilation is logged at DEBUG to
``cudaload.compile`` with its key (``record.key``), each recompilation after a refusal too.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

import os

from . import _hooks, _linker, _prepare, _reads, _targets, cache, includes, toolchain
from .. import _log
from ..errors import CudaLoadError, NvrtcError
from .objectcode import ObjectCode
from .options import Arch, parse_arch

__all__ = ["Program", "Origin", "recompile_refused"]

OUTPUTS = ("auto", "cubin", "ptx")


def _field(index: int, doc: str) -> property:
    """Field ``index`` of a Program's prepared arguments (_prepare.Prepared), read-only."""
    return property(lambda self: self._p[index], doc=doc)


class Program:
    """CUDA C++ source with the headers, options and name expressions to compile it with.

    Raises ValueError/TypeError for malformed arguments (source or headers that are not UTF-8,
    options without their value); reading include files never raises.
    """

    bundle = None  # a cudaload.Bundle of precompiled code, asked before NVRTC

    def __init__(self, source, *, name: str = "kernel.cu", options=(), headers=None,
                 include_paths=(), name_expressions=(), std: str | None = "c++17",
                 defines=None, fast_math: bool = False, line_info: bool = False,
                 debug: bool = False, max_registers: int | None = None,
                 relocatable: bool = False, lto: bool = False, bundle=None):
        if bundle is not None:
            self.bundle = bundle
        # Checked, normalised and digested once per distinct arguments (_prepare.py), and kept
        # whole: setting each of its fields as an attribute cost a new Program a quarter of its
        # time (hosts that build kernel text per call make one per call).
        self._p = p = _prepare.prepare(
            source, name, options, headers, include_paths, name_expressions, std, defines,
            fast_math, line_info, debug, max_registers, relocatable, lto)
        self.headers = dict(p[2]) if p[2] else {}

    source = _field(0, "the text (bytes are decoded as UTF-8)")
    name = _field(1, "the file name NVRTC reports in its log")
    include_paths = _field(3, "the folders searched for #include, as given")
    options = _field(4, "the NVRTC options the keywords and options= make")
    name_expressions = _field(5, "C++ names instantiated and looked up")
    _parts, _digest, _size = _field(6, "what the digest covers"), _field(7, "the digest"), \
        _field(8, "characters of source and headers")
    _lto = _field(9, "whether nvJitLink links it (lto=True)")

    @classmethod
    def from_file(cls, path, **kw) -> Program:
        """The program in the file ``path``; its folder is searched for ``#include "..."``.

        Raises OSError when the file cannot be read, ValueError (naming the file) when it is not
        UTF-8 text.
        """
        path = os.fspath(path)
        with open(path, encoding="utf-8") as f:
            try:
                source = f.read()
            except UnicodeDecodeError as exc:
                raise includes.not_utf8(path, exc) from None
        kw.setdefault("name", os.path.basename(path))
        kw["include_paths"] = (os.path.dirname(os.path.abspath(path)), *kw.get("include_paths", ()))
        return cls(source, **kw)

    @classmethod
    def from_resource(cls, package: str, resource: str, **kw) -> Program:
        """The program in the package data file ``resource`` of ``package``, with the sibling files
        it includes passed as in-memory headers.  Raises FileNotFoundError, ModuleNotFoundError."""
        source, found = includes.from_package(package, resource)
        kw["headers"] = {**found, **(kw.get("headers") or {})}
        kw.setdefault("name", resource)
        return cls(source, **kw)

    def __repr__(self) -> str:
        return f"<Program {self.name} {len(self.source)} chars>"

    def compile(self, arch=None, output: str = "auto") -> ObjectCode:
        """Compiled code for ``arch`` (None: the current device; without one, NVRTC's newest for
        CUBIN and its oldest for PTX, which loads on every newer GPU); ``output`` "auto" picks
        CUBIN where NVRTC knows the arch, else PTX the driver can load.

        Raises CompileError when NVRTC rejects the source, NvrtcError when no code this machine
        can load can be made, ValueError for an unknown arch or output, the loader's errors when
        NVRTC is missing.
        """
        explicit = arch is not None
        if arch is None:
            arch = _device_arch()
        # (arch, output, memory key) asked last of any Program made with these arguments: a
        # Program made again, asked as the last one was, looks its key up in the memory cache
        # as the same object, which is then the newest there already.
        last = self._p[10]
        asked = last[0]
        if arch is asked[0] and output is asked[1]:
            key = asked[2]
        else:
            try:
                request = _requests[(arch.__class__, arch, output)]
            except (KeyError, TypeError):  # first asked, or not an arch: _request says which
                request = _request(arch, output)
            # Only an arch _request took is remembered: hashable, so never changed in place.
            key = (self._p[7], request)
            last[0] = (arch, output, key)
        # A hit holds while the files its compile read are as they were (nothing to check for
        # a program that reads none, the common case).
        hit = cache.MEMORY.get(key)
        if hit is not None and (not hit[1] or includes.still_valid(hit[1])):
            return hit[0]
        return self._compile(arch, output, explicit)[0]

    def _remembered(self, arch, output: str) -> ObjectCode | None:
        """What the memory cache holds for ``arch``/``output``, while it holds."""
        hit = cache.MEMORY.get((self._digest, _request(arch, output)))
        return hit[0] if hit is not None and (not hit[1] or includes.still_valid(hit[1])) else None

    def _inputs(self, tc: toolchain.Toolchain | None) -> includes.Inputs:
        """What NVRTC will read for this program now, with ``tc``'s header folders.  Without
        ``tc`` (code shipped in a bundle is looked up without NVRTC), the files outside CUDA's
        header folders that the program itself reaches."""
        folders = [o[2:] for o in tc.include_options] if tc is not None else []
        return includes.resolve(self.source, self.name, self.headers, self.options, folders)

    def _bundle_digest(self) -> bytes:
        """The digest a bundle files this program under: with the files it reads now, as a lookup
        without NVRTC sees them."""
        return self._inputs_digest(self._inputs(None))

    def _inputs_digest(self, inputs: includes.Inputs) -> bytes:
        """The digest of this program with what it reads: its own digest when it reads no file, so
        code shipped for it matches wherever it is compiled."""
        if not inputs.material:
            return self._digest
        return _prepare.digest(*self._parts, *[x for item in inputs.material for x in item])

    def _compile(self, arch, output: str, explicit: bool, build: bool = True,
                 shipped: bool = True, tc: toolchain.Toolchain | None = None):
        """(code, its disk key, whether it was kept) from the program's bundle (with
        ``shipped``), the disk cache, or NVRTC; without ``build``, (None, key, (kind, target,
        witness)) where NVRTC would compile."""
        if shipped and self.bundle is not None and arch is not None:
            inputs = self._inputs(None)
            found = self.bundle.find(self, arch, _virtual(arch, output),
                                     digest=self._inputs_digest(inputs))
            if found is not None:
                self._keep(found, arch, output, None, inputs.witness)  # no key: none to evict
                return found, None, True
        tc = tc or toolchain.current()
        inputs = self._inputs(tc)
        if explicit:
            _targets.check_plausible(arch, tc)
        # A file the program names by a macro cannot be found without preprocessing, so what it
        # reads is not known for certain: such a program is not kept on disk (in this process's
        # memory it is, while the files it was seen to read stay as they were).
        disk = cache.default() if inputs.certain else cache.NULL
        digest = self._inputs_digest(inputs)
        keep = True
        witness = inputs.witness
        while True:
            kind, target = _targets.choose(tc, arch, _virtual(arch, output), explicit)
            key_linker = _linker.identity() if self._lto else None
            key = self._key(digest, tc, kind, target, key_linker)
            obj = disk.lookup(key)
            if obj is not None:
                break
            if not build:
                return None, key, (kind, target, inputs.witness)
            with disk.lock(key) as publish:
                obj = disk.lookup(key)  # another process may have compiled it meanwhile
                if obj is None:
                    loaded = toolchain.live()
                    if loaded != tc:  # the remembered NVRTC is not the one that would compile
                        tc = loaded
                        inputs = self._inputs(tc)
                        digest = self._inputs_digest(inputs)
                        witness = inputs.witness
                        continue
                    if self._lto and _linker.load() != key_linker:
                        continue  # the nvJitLink that loaded is not the one the key named
                    obj, names = self._build(tc, kind, target, key, inputs)
                    # A file that changed while NVRTC read it may have given a mix of old and new:
                    # such a result is returned but kept nowhere.  (A program that read no file
                    # outside the toolchain has nothing to look at again.)
                    keep = not inputs.material or self._inputs(tc).material == inputs.material
                    unkeyed = self._unkeyed(tc, inputs, names, key)
                    if keep and unkeyed == []:
                        publish(obj)
                    # The memory cache keeps it while the files NVRTC read stay as they are,
                    # those the scan missed included.
                    witness = self._watching(witness, unkeyed)
            break
        self._keep(obj, arch, output, key, witness, keep)
        return obj, key, keep

    def _keep(self, obj: ObjectCode, arch, output: str, key: str | None, witness,
              keep: bool = True) -> None:
        """Make ``obj`` this program's code for ``arch``/``output`` (see :meth:`_own`) and, with
        ``keep``, the memory cache's."""
        self._own(obj, arch, output, key)
        if keep:
            cache.MEMORY.put((self._digest, _request(arch, output)), obj, witness,
                             self._size + len(obj.code) + len(obj.log))

    def _key(self, digest: bytes, tc: toolchain.Toolchain, kind: str, target: Arch,
             linker: str | None = None) -> str:
        """The disk key; ``linker``: the nvJitLink build that links this program (``lto``)."""
        driver = str(_targets.driver_version() or 0) if kind == "ptx" else "-"
        return _prepare.digest(str(cache.FORMAT), digest.hex(), kind, target.sm(), tc.key,
                               driver, *(() if linker is None else ("nvJitLink", linker))).hex()

    def _build(self, tc: toolchain.Toolchain, kind: str, target: Arch, key: str,
               inputs: includes.Inputs) -> tuple[ObjectCode, tuple[str, ...] | None]:
        """(the code, the header files NVRTC read as it named them, or None where that is not
        known); no file where ``inputs`` are sure that none outside the toolchain can be read
        (NVRTC's trace costs 2-3 ms of each compilation: not asked for then)."""
        from ..bindings import nvrtc

        gpu = target.sm() if kind == "cubin" else target.compute()
        options = (*self.options, f"--gpu-architecture={gpu}", *tc.include_options)
        # A trace the caller asked for is theirs: none of ours beside it (see _unkeyed).
        trace = asked = None if inputs.sure or _reads.unsupported() or _reads.asked_by(
            self.options) else _reads.request()
        try:
            compiled = nvrtc.compile(self.source, self.name, options, self.headers,
                                     self.name_expressions, kind="ltoir" if self._lto else kind,
                                     own_options=(trace.option,) if trace else ())
        except NvrtcError as exc:
            # An NVRTC older than the option refuses it: asked once, then the scan is trusted.
            if trace is None or exc.code != nvrtc.INVALID_OPTION \
                    or _reads.OPTION[:-1] not in getattr(exc, "log", ""):
                raise
            _reads.mark_unsupported()
            trace = None
            compiled = nvrtc.compile(self.source, self.name, options, self.headers,
                                     self.name_expressions, kind="ltoir" if self._lto else kind)
        finally:  # read (and removed) however the compilation ended
            read = asked.names() if asked is not None else None
        code, log = (_linker.link(compiled, self.name, gpu, kind) if self._lto
                     else (compiled.code, compiled.log))
        _log.debug("compile", "NVRTC compiled %s to %s for %s%s, key %s", self.name, kind,
                   target.sm(), ", linked by nvJitLink" if self._lto else "", key, key=key)
        return (ObjectCode(code, kind, target.sm(), log=log,
                           lowered_names=dict(compiled.lowered_names), linked=self._lto),
                read if trace is not None else () if inputs.sure else None)

    def _watching(self, witness, unkeyed: list[str] | None):
        """``witness`` extended to the files NVRTC read that the key lacks (see _unkeyed)."""
        if not unkeyed:
            return witness
        return includes.watching(witness, unkeyed, includes.searched_folders(
            self.name, self.headers, self.options))

    def _unkeyed(self, tc: toolchain.Toolchain, inputs: includes.Inputs,
                 names: tuple[str, ...] | None, key: str) -> list[str] | None:
        """The files NVRTC read (``names``, from _build) that the key does not cover: [] when
        there are none or this NVRTC has no trace (the scan is trusted there), None when which
        files were read is not known."""
        if names is None:
            if _reads.unsupported() and not _reads.asked_by(self.options):
                return []
            _log.debug("cache", "%s: which files NVRTC read is not known (no trace): not kept on "
                       "disk, key %s", self.name, key, key=key)
            return None
        missing = _reads.uncovered(names, inputs.material, self.headers,
                                   [o[2:] for o in tc.include_options], os.getcwd())
        if missing:
            _log.debug("cache", "%s: NVRTC read %s, which the include scan did not find: not "
                       "kept on disk, key %s", self.name, ", ".join(missing), key, key=key)
        return missing

    def _own(self, obj: ObjectCode, arch, output: str, key: str | None) -> None:
        """Give ``obj`` what the launch side reads of its program: the source, and, as data, what
        compiled it (for ``arch``/``output`` as asked, under ``key``), which
        :func:`recompile_refused` is given when the driver refuses it."""
        obj.source = self.source
        obj.origin = Origin(self._p, arch, output, key)

    @classmethod
    def _from_prepared(cls, prepared) -> Program:
        """The Program whose prepared arguments are ``prepared`` (an :class:`Origin`'s)."""
        program = cls.__new__(cls)
        program._p = prepared
        program.headers = dict(prepared[2]) if prepared[2] else {}
        return program

    def _recompile_after_refusal(self, arch, output: str, key: str | None,
                                 refused: ObjectCode) -> ObjectCode | None:
        cache.MEMORY.pop((self._digest, _request(arch, output)), None)
        tc = toolchain.live()
        if key is None:  # shipped in a bundle: compile it here instead
            return self._compile(arch, output, False, shipped=False, tc=tc)[0]
        inputs = self._inputs(tc)
        disk = cache.default()
        disk.evict(key)
        before = parse_arch(refused.arch)
        device = _device_arch()
        device = parse_arch(device) if device is not None else before
        if refused.kind == "ptx" and device.number in tc.archs:
            kind, target = "cubin", device
        else:
            ceiling = before.number if refused.kind == "ptx" else device.number + 1
            older = [a for a in tc.archs if a < ceiling]
            if not older:
                return None
            kind, target = "ptx", Arch((max(older), ""))
        _log.debug("compile", "the driver refused %s %s for %s; recompiling as %s for %s",
                   self.name, refused.kind, refused.arch, kind, target.sm())
        obj, names = self._build(tc, kind, target, key, inputs)
        # What this driver refused is replaced by what it can load, under the same key: only
        # while the key still stands for what was just compiled (files and NVRTC unchanged).
        asked = _targets.choose(tc, arch, _virtual(arch, output), False)
        linker = _linker.identity() if self._lto else None
        unkeyed = self._unkeyed(tc, inputs, names, key)
        if inputs.certain and self._key(self._inputs_digest(inputs), tc, *asked, linker) == key \
                and unkeyed == []:
            disk.store(key, obj)
        self._keep(obj, arch, output, key, self._watching(inputs.witness, unkeyed))
        return obj


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
    return Program._from_prepared(origin.prepared)._recompile_after_refusal(
        origin.arch, origin.output, origin.key, refused)


_no_device = False


def _device_arch():
    """The current device's compute capability (e.g. 90), or None without a usable device."""
    global _no_device
    if _no_device:
        return None
    try:
        return _hooks.current_arch()
    except CudaLoadError:
        # No driver, no device or a failed cuInit stays so for the life of the process (the driver
        # remembers), so the memory-hit path need not ask again: 3-7 us per call otherwise.
        _no_device = True
        return None


def forget_no_device() -> None:
    """Ask the driver again at the next ``compile(arch=None)`` (after ``status(refresh=True)``)."""
    global _no_device
    _no_device = False


_requests: dict = {}  # (type, arch, output) as asked -> "sm_90/auto": a few values


def _request(arch, output: str) -> str:
    """``arch``/``output`` as the memory cache keys them, e.g. "sm_90/auto" (a str: its hash is
    computed once).  Raises TypeError for an unhashable arch, ValueError for an unknown arch or
    output."""
    asked = (arch.__class__, arch, output)  # 90 and 90.0 are equal keys, but 90.0 is no arch
    try:
        return _requests[asked]
    except KeyError:
        pass
    except TypeError:  # unhashable: a list or a dict
        raise TypeError(f"arch must be an int such as 90, a str such as 'sm_90' or a "
                        f"(major, minor) tuple, not {type(arch).__name__}") from None
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    request = f"{'-' if arch is None else parse_arch(arch).sm()}/{_virtual(arch, output)}"
    if len(_requests) > 256:  # only odd spellings ("SM_90 ", ...) could fill it
        _requests.clear()
    _requests[asked] = request
    return request


def _virtual(arch, output: str) -> str:
    """``output``, except that "auto" for a virtual arch ("compute_90") asks for PTX."""
    if output == "auto" and isinstance(arch, str) and arch.strip().lower().startswith("compute_"):
        return "ptx"
    return output
