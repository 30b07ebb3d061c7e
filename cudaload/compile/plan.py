"""One compile request of a Program, from the code already there to what NVRTC builds: a Plan.

``Program.compile()`` answers from the memory cache itself.  Anything else is a :class:`Plan`,
made for (arch, output): it looks in the program's bundle and then in the disk cache (``code``
when either has it); otherwise it holds the key, kind and target NVRTC compiles for, and
:meth:`Plan.build` compiles under the disk cache's lock for that key.  ``compile_all`` makes the
plans, has the keys nobody holds compiled on its workers, and hands each plan what came back
(:meth:`Plan.accept`).  :meth:`Plan.replace` is the other build: code the driver refused.

Which code a request makes, the kind (CUBIN or PTX) and target architecture, is chosen from
NVRTC's supported architectures and the driver's version (:func:`choose`, with the errors for a
request that cannot be met).

What a build may keep: on disk, only a result whose inputs did not change while NVRTC read them
and for which NVRTC read no file the key lacks (its trace, _reads.py); in memory, a result whose
inputs did not change, watched by the files NVRTC read (those the scan missed too).
"""

from __future__ import annotations

import os

from . import cache, includes, toolchain
from .. import _log
from ..errors import CudaLoadError, NvrtcError
from .objectcode import ObjectCode
from .options import LTO_OPTION, Arch, parse_arch, virtual

__all__ = ["Plan", "ArchWarning", "choose", "check_plausible", "driver_version",
           "assume_driver_version", "ready_to_build"]


class Plan:
    """``program`` asked for ``arch``/``output``: ``code`` where it was found, else ``key``,
    ``kind`` and ``target`` of what :meth:`build` compiles, and ``stamps``, what the memory
    cache checks of the files it read.  Raises ValueError for an arch NVRTC cannot target."""

    __slots__ = ("program", "arch", "output", "explicit", "tc", "inputs", "code", "key", "kind",
                 "target", "linker", "stamps", "kept")

    def __init__(self, program, arch, output: str, explicit: bool, shipped: bool = True,
                 tc: toolchain.Toolchain | None = None):
        self.program, self.arch, self.output, self.explicit = program, arch, output, explicit
        self.code = self.key = None
        self.kept = True  # whether what the plan ends with may be kept (build() decides)
        if shipped and program.bundle is not None and arch is not None:
            inputs = program._inputs(None)
            found = program.bundle.find(program, arch, virtual(arch, output),
                                        digest=program._inputs_digest(inputs))
            if found is not None:
                self.inputs, self.stamps, self.code = inputs, inputs.stamps, found
                program._keep(found, arch, output, None, inputs.stamps)  # no key: none to evict
                return
        tc = tc or toolchain.current()
        if explicit:  # a typo ("sm_900") is refused before any code is chosen for it
            check_plausible(arch, tc)
        self._look(tc)

    @classmethod
    def found(cls, program, arch, output: str, code: ObjectCode) -> Plan:
        """The plan of a request the memory cache answered with ``code``."""
        plan = cls.__new__(cls)
        plan.program, plan.arch, plan.output, plan.code = program, arch, output, code
        plan.key, plan.kept, plan.explicit = None, True, arch is not None
        # Nothing was looked up: no key, inputs or stamps of its own (the memory cache has them).
        for name in ("tc", "inputs", "kind", "target", "linker", "stamps"):
            setattr(plan, name, None)
        return plan

    def _look(self, tc: toolchain.Toolchain) -> None:
        """The key for ``tc`` and the files the program reads now, and the disk cache's code."""
        program = self.program
        self.tc, self.inputs = tc, program._inputs(tc)
        self.stamps = self.inputs.stamps
        self.kind, self.target = choose(tc, self.arch, virtual(self.arch, self.output),
                                                 self.explicit)
        # LTO IR asked for is NVRTC's, unlinked: no linker in its key
        self.linker = _nvjitlink().identity() if program._lto and self.kind != "ltoir" else None
        self.key = program._key(program._inputs_digest(self.inputs), tc, self.kind, self.target,
                                self.linker)
        self.code = self._disk().lookup(self.key)
        if self.code is not None:
            program._keep(self.code, self.arch, self.output, self.key, self.stamps)

    def _disk(self):
        # A file the program names by a macro cannot be found without preprocessing, so what it
        # reads is not known for certain: such a program is not kept on disk.
        return cache.default() if self.inputs.includes_known else cache.NULL

    def build(self) -> ObjectCode:
        """The code: the one found, or NVRTC's, compiled once per key also across processes."""
        program = self.program
        while self.code is None:
            disk = self._disk()
            with disk.lock(self.key) as publish:
                found = disk.lookup(self.key)  # another process may have compiled it meanwhile
                if found is not None:
                    self.code = found
                    program._keep(found, self.arch, self.output, self.key, self.stamps)
                    break
                # The NVRTC (or nvJitLink) that loads may not be the one the key was made for.
                loaded = toolchain.live()
                if loaded != self.tc or (self.linker is not None and _nvjitlink().load() != self.linker):
                    self._look(loaded)
                    continue
                obj, names = self._nvrtc(self.kind, self.target)
                # A file that changed while NVRTC read it may have given a mix of old and new:
                # such a result is returned but kept nowhere.  (A program that read no file
                # outside the toolchain has nothing to look at again.)
                self.kept = not self.inputs.path_states or \
                    program._inputs(self.tc).path_states == self.inputs.path_states
                unkeyed = self._unkeyed(names)
                if self.kept and unkeyed == []:
                    publish(obj)
                # Where which files NVRTC read is unknown, a program naming an include by a
                # macro has nothing to watch it by: kept nowhere.
                self.kept = self.kept and (names is not None or self.inputs.includes_known)
                self.stamps = self._watching(unkeyed)
                program._keep(obj, self.arch, self.output, self.key, self.stamps, self.kept)
                self.code = obj
        return self.code

    def accept(self, obj: ObjectCode, key: str, kept: bool, stamps) -> ObjectCode:
        """``obj``, compiled elsewhere (a compile_all worker) under ``key``, which ``kept`` and
        watches ``stamps`` there: kept in memory as what this plan asked for only where the
        worker's key is this plan's (it is, unless files or NVRTC changed meanwhile)."""
        self.code, self.stamps = obj, stamps
        self.program._keep(obj, self.arch, self.output, key, stamps, kept and key == self.key)
        return obj

    def replace(self, refused: ObjectCode, key: str, device) -> ObjectCode | None:
        """Code the driver can load in place of ``refused`` (filed under ``key``; ``device``: the
        device's arch or None): CUBIN for the device where PTX was refused, else PTX for an arch
        older than the refused one; None where NVRTC has no such arch.  Kept under ``key`` while
        it still stands for what was just compiled (files and NVRTC unchanged)."""
        program = self.program
        before = parse_arch(refused.arch)
        device = parse_arch(device) if device is not None else before
        if refused.kind == "ptx" and device.number in self.tc.archs:
            kind, target = "cubin", device
        else:
            ceiling = before.number if refused.kind == "ptx" else device.number + 1
            older = [a for a in self.tc.archs if a < ceiling]
            if not older:
                return None
            kind, target = "ptx", Arch((max(older), ""))
        _log.debug("compile", "the driver refused %s %s for %s; recompiling as %s for %s",
                   program.name, refused.kind, refused.arch, kind, target.sm())
        obj, names = self._nvrtc(kind, target)
        unkeyed = self._unkeyed(names)
        if self.inputs.includes_known and unkeyed == [] and self.key == key:
            cache.default().store(key, obj)
        program._keep(obj, self.arch, self.output, key, self._watching(unkeyed))
        return obj

    def _nvrtc(self, kind: str, target: Arch) -> tuple[ObjectCode, tuple[str, ...] | None]:
        """NVRTC's code for ``kind``/``target`` and the header files it read as it named them, or
        None where that is not known; () where the inputs are sure that none outside the
        toolchain can be read (NVRTC's trace costs 2-3 ms of each compilation: not asked for
        then)."""
        from ..bindings import nvrtc  # deferred: only this path needs it
        from . import _reads  # deferred: a Plan that builds nothing (a disk hit) needs no trace
        from ._option_files import check_files  # deferred: only a build checks option files

        program, tc, sure = self.program, self.tc, self.inputs.sure
        # Checked when the Program was made, and again now: NVRTC aborts the process on a file
        # option whose folder has gone since.
        check_files(program.options)
        gpu = target.sm() if kind == "cubin" else target.compute()
        # NVRTC makes LTO IR for lto=True (nvJitLink links it into ``kind``) and where LTO IR
        # is asked for (returned unlinked: -dlto added where the program lacks it).
        links = program._lto and kind != "ltoir"
        made = "ltoir" if program._lto or kind == "ltoir" else kind
        dlto = (LTO_OPTION,) if made == "ltoir" and not program._lto else ()
        options = (*program.options, *dlto, f"--gpu-architecture={gpu}", *tc.include_options)
        # A trace the caller asked for is theirs: none of ours beside it (see _unkeyed).  Once
        # NVRTC's profiler broke, every compilation names one, or NVRTC writes ./.json.
        trace = asked = None if (sure and not _reads.broken()) or _reads.unsupported() or \
            _reads.asked_by(program.options) else _reads.request()
        try:
            compiled = nvrtc.compile(program.source, program.name, options, program.headers,
                                     program.name_expressions, kind=made,
                                     own_options=(trace.option,) if trace else ())
        except NvrtcError as exc:
            # An NVRTC older than the option refuses it: asked once, then the scan is trusted.
            if trace is None or exc.code != nvrtc.INVALID_OPTION \
                    or _reads.OPTION[:-1] not in getattr(exc, "log", ""):
                if trace is not None or _reads.asked_by(program.options):
                    _reads.mark_broken()  # NVRTC's later traces in this process are incomplete
                raise
            _reads.mark_unsupported()
            trace = None
            compiled = nvrtc.compile(program.source, program.name, options, program.headers,
                                     program.name_expressions, kind=made)
        finally:  # read (and removed) however the compilation ended
            read = asked.names() if asked is not None else None
        code, log = (_nvjitlink().link(compiled, program.name, gpu, kind) if links
                     else (compiled.code, compiled.log))
        _log.debug("compile", "NVRTC compiled %s to %s for %s%s, key %s", program.name, kind,
                   target.sm(), ", linked by nvJitLink" if links else "", self.key,
                   key=self.key)
        return (ObjectCode(code, kind, target.sm(), log=log,
                           lowered_names=dict(compiled.lowered_names), linked=links),
                read if trace is not None else () if sure else None)

    def _unkeyed(self, names: tuple[str, ...] | None) -> list[str] | None:
        """The files NVRTC read (``names``, from _nvrtc) that the key does not cover: [] when
        there are none or this NVRTC gives no trace (it has none, or its traces broke in this
        process: the scan is trusted there), None when which files were read is not known."""
        from . import _reads  # deferred: only this path needs it

        program, key = self.program, self.key
        if names is None:
            if _reads.untraced() and not _reads.asked_by(program.options):
                return []
            _log.debug("cache", "%s: which files NVRTC read is not known (no trace): not kept on "
                       "disk, key %s", program.name, key, key=key)
            return None
        missing = _reads.uncovered(names, self.inputs.path_states, program.headers,
                                   [o[2:] for o in self.tc.include_options], os.getcwd())
        if missing:
            _log.debug("cache", "%s: NVRTC read %s, which the include scan did not find: not "
                       "kept on disk, key %s", program.name, ", ".join(missing), key, key=key)
        return missing

    def _watching(self, unkeyed: list[str] | None):
        """The stamps extended to the files NVRTC read that the key lacks (see _unkeyed)."""
        if not unkeyed:
            return self.inputs.stamps
        program = self.program
        return includes.watching(self.inputs.stamps, unkeyed, includes.searched_folders(
            program.name, program.headers, program.options))


def ready_to_build() -> None:
    """Load now what a first :meth:`Plan.build` loads: NVRTC, the toolchain, the modules _nvrtc
    and the disk cache's miss import.  For a process that will build at once and wants that cost
    paid first: compile_all's workers, before they say they are ready (compile/_workers.py)."""
    from ..bindings import nvrtc  # deferred, as in _nvrtc
    from . import _option_files, _reads  # noqa: F401  (deferred, as in _nvrtc)
    from .cache import claims, locks  # noqa: F401  (deferred, as in cache/disk.py's miss)

    toolchain.current()
    nvrtc.version()  # loads NVRTC


def _nvjitlink():
    """compile/_linker.py, imported by the first program that nvJitLink links: it imports the
    loader's bindings, which a disk hit of any other program does without."""
    from . import _linker  # deferred: see above

    return _linker


# ---- which code a request makes ---------------------------------------------------------------

_NOT_ASSUMED = object()
_assumed_driver: object = _NOT_ASSUMED  # in a compile worker: the calling process's answer


def assume_driver_version(version: int | None) -> None:
    """From now on take ``version`` for the driver's, without loading libcuda: a compile worker
    (parallel.py) keys PTX as the process that asked for it does, and never touches CUDA."""
    global _assumed_driver
    _assumed_driver = version


def driver_version() -> int | None:
    """The driver's CUDA version (e.g. 13000), or None without a driver."""
    if _assumed_driver is not _NOT_ASSUMED:
        return _assumed_driver  # type: ignore[return-value]  # an int or None, as assumed
    try:
        from ..bindings import driver  # deferred: only this path needs it

        return driver.version() or None
    except CudaLoadError:
        return None


# Compute capability majors beyond the newest NVRTC knows by more than this are taken for typos
# ("sm_900") when written out; a device's own, however new, is always tried (as PTX).
_MAJORS_AHEAD = 3


class ArchWarning(UserWarning):
    """Code was made for another arch than the one asked for (NVRTC does not know that one): the
    message names both and how to get the code asked for."""


def check_plausible(arch, tc: toolchain.Toolchain) -> None:
    want, newest = parse_arch(arch), max(tc.archs)
    if want.number // 10 > newest // 10 + _MAJORS_AHEAD:
        # A digit too many ("sm_900"): the guess is offered only where NVRTC has it (sm_200's
        # sm_20 is no arch any NVRTC cudaload can use compiles for).
        guess = want.number // 10
        offer = (f" Did you mean sm_{guess}?" if want.number % 10 == 0 and guess in tc.archs
                 else f" Pick one of {_list(sorted(tc.archs))}.")
        raise ValueError(f"arch {arch!r} is no GPU architecture: NVRTC knows up to sm_{newest}, "
                         f"and compute capability {want.number // 10}.{want.number % 10} is far "
                         f"beyond it.{offer}")


def choose(tc: toolchain.Toolchain, arch, output: str, explicit: bool = True
            ) -> tuple[str, Arch]:
    """(kind, target arch) for a request, from NVRTC's supported archs and the driver's version;
    ``explicit``: whether ``arch`` was asked for (else it is the device's).  Code for another
    arch than ``arch`` is made only with an :class:`ArchWarning` that says so."""
    supported = sorted(tc.archs)
    # With no arch and no device (LTO IR, program._default_arch; cudaload compile): CUBIN or LTO
    # IR for NVRTC's newest; PTX for its oldest, which the driver compiles forward for every
    # newer GPU (never back), so it is the portable choice.
    default = supported[0] if output == "ptx" else supported[-1]
    want = Arch((default, "")) if arch is None else parse_arch(arch)
    name = _named(arch, want)
    asked = f"{name} ({_whose(explicit)})"
    known = want.number in supported
    if output != "auto" or known:
        if not known:
            raise NvrtcError(
                f"NVRTC {_v(tc)} cannot compile for {asked}: it supports {_list(supported)}",
                hint=f"pick one of those. {_support(want, tc, name)}", name="arch")
        return ("cubin" if output == "auto" else output), want
    older = [a for a in supported if a < want.number]
    if not older:
        raise NvrtcError(
            f"{asked} is older than anything NVRTC {_v(tc)} supports ({_list(supported)})",
            hint=_support(want, tc, name), name="arch")
    same_major = [a for a in older if a // 10 == want.number // 10]
    if want.number < supported[-1] and same_major:  # a CUBIN of the same major runs on it
        return _instead(tc, asked, want, "cubin", Arch((same_major[-1], "")))
    driver = driver_version()
    if driver is None or driver >= tc.version_number():
        return _instead(tc, asked, want, "ptx", Arch((older[-1], "")))
    if same_major:
        return _instead(tc, asked, want, "cubin", Arch((same_major[-1], "")))
    from ..bindings.driver import format_version  # deferred: only this path needs it

    raise NvrtcError(
        f"cannot make code for {asked}: NVRTC {_v(tc)} does not know this GPU, and its PTX "
        f"would need a driver for CUDA {_v(tc)} or newer, but the driver is for CUDA "
        f"{format_version(driver)}",
        hint=f"upgrade the NVIDIA driver. {_support(want, tc, name)}", name="arch")


def _instead(tc: toolchain.Toolchain, asked: str, want: Arch, kind: str, target: Arch
             ) -> tuple[str, Arch]:
    """(kind, target), made in place of code for ``want``: said once, with why it serves."""
    from .. import _warn  # deferred: only a substitution warns

    if kind == "cubin":
        made = (f"CUBIN for {target.sm()}, which runs on {want.sm()} (a CUBIN runs on the GPUs "
                f"of its major with a minor as new or newer)")
    else:
        made = (f"PTX for {target.compute()}, which the driver compiles for {want.sm()} when it "
                f"loads it (a driver for CUDA {_v(tc)} or newer)")
    _warn.warn(f"NVRTC {_v(tc)} cannot compile for {asked}: made {made}. For code of "
               f"{want.sm()} itself: {_support(want, tc, want.sm())}", ArchWarning)
    return kind, target


def _support(want: Arch, tc: toolchain.Toolchain, name: str) -> str:
    from ..releases import arch_support  # deferred: only an arch NVRTC lacks needs it

    return arch_support(want.number, tc.version, name)


def _named(arch, want: Arch) -> str:
    """The arch as asked: compute_91 where a virtual arch was asked for, else sm_91."""
    virtual_arch = isinstance(arch, str) and arch.strip().lower().startswith("compute_")
    return want.compute() if virtual_arch else want.sm()


def _whose(explicit: bool) -> str:
    return "the arch asked for" if explicit else "this GPU's arch, as no arch was given"


def _v(tc: toolchain.Toolchain) -> str:
    return f"{tc.version[0]}.{tc.version[1]}"


def _list(archs) -> str:
    return ", ".join(f"sm_{a}" for a in archs)
