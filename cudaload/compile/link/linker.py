"""Linker: device code of several pieces (CUBIN, PTX, LTO IR, fatbins, libraries such as
``libcudadevrt.a``) linked into one CUBIN (or, from LTO IR, PTX), each result cached.

nvJitLink links (the ``nvidia-nvjitlink`` wheel of the ``nvrtc`` extra, found as for
``Program(lto=True)``: compile/link/_linker.py).  Where it is missing, or refuses the arch or the
code as newer than it knows (or the arch as older than it supports), the driver's linker
(``cuLink*``) links instead, in the current device's context: it needs a GPU, and it cannot link LTO
IR; where it cannot or fails too, the error names both linkers.  Both logs are kept on the Linker
after the link (``info_log``, ``error_log``); a failed link raises
:class:`~cudaload.errors.LinkError` with the error log and the undefined symbol it names
(``.symbol``, mangled; the message names the C++ declaration too: ``foo(int) (mangled _Z3fooi)``).

The result is cached as a compile is, one request (request.link) looked up and kept by
request.py's steps: in memory by a digest of every input (each one's kind, name and bytes), the
options, the arch, LTO and the output; on disk under that digest and the linker's identity
(nvJitLink's build, or the driver's version), the entry recording which linker made the code, so
that a hit reports it (``Linker.linker``).  So a second process links nothing, and another
nvJitLink build or another input's bytes is a miss, as is an entry without the record (written
before it was kept).

Imports of cudaload: errors, _log, _demangle, bindings (nvjitlink, driver_linker, driver, _sites,
thread_device), _hooks, _linker, _link_options, cache, objectcode, options, request.
"""

from __future__ import annotations

import os

from .. import _hooks, cache, request as _request
from . import _link_options, _linker
from ..._base import _log
from ..._base._demangle import demangled
from ...bindings import thread_device
from ...errors import CudaLoadError, CudaUnavailableError, LibraryNotFoundError, LinkError
from ..objectcode import ObjectCode, check
from ..options import Arch, parse_arch

__all__ = ["Linker", "OUTPUTS", "BACKENDS"]

OUTPUTS = ("cubin", "ptx")
# nvJitLink's answers that it does not know the arch (newer than it) or no longer supports it,
# and that it is older than the code: the driver may know them.
_ARCH_REFUSED = ("NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH")
_TOO_OLD = (*_ARCH_REFUSED, "NVJITLINK_ERROR_OUTDATED_LIBRARY")
_REFUSED_OPTIONS = ("NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS")
# backend= -> the linker it names, as Linker.linker and the cache entry spell it
BACKENDS = {"nvjitlink": "nvJitLink", "driver": "driver"}


class Linker:
    """``objects`` (each an ObjectCode, or the path of a .cubin, .ptx, .fatbin, .ltoir or .a
    file) to be linked for ``arch`` (None: the current device's; without one, the inputs'),
    with link-time optimisation of LTO IR inputs where ``lto``, and nvJitLink ``options``
    (compile/link/_link_options.py lists them: ``-lineinfo``, ``-g``, ``-O3``, ``-ftz=true``, ...),
    by ``backend`` ("nvjitlink" or "driver" alone; None: nvJitLink, else the driver's linker).

    Raises ValueError for no input, code that is no device code (an ObjectCode's too: its
    constructor checks nothing), an option not taken, LTO IR without ``lto=True``, an unknown
    backend, LTO for the driver's linker; TypeError for an input that is neither code nor a path,
    code that is no bytes, a backend that is no string; OSError for a file that cannot be read.
    """

    def __init__(self, *objects, arch=None, lto: bool = False, options=(), backend=None):
        if not objects:
            raise ValueError("Linker needs the code to link, e.g. Linker(obj_a, obj_b, "
                             "'libcudadevrt.a')")
        self.objects = tuple(_input(o, i) for i, o in enumerate(objects))
        if arch is not None:
            parse_arch(arch)  # a typo is refused now, not at the link
        if not isinstance(lto, bool):
            raise TypeError(f"lto must be True or False, not {type(lto).__name__}")
        self.arch, self.lto = arch, lto
        self.options = _link_options.check(options)
        ir = [o.name or "LTO IR" for o in self.objects if o.kind == "ltoir"]
        if ir and not lto:
            raise ValueError(f"{', '.join(ir)}: LTO IR is linked with link-time optimisation: "
                             "make the Linker with lto=True")
        self.backend = backend
        self._only = _backend(backend, lto)  # the one linker asked for, as it names itself
        self.info_log = self.error_log = ""
        self.linker: str | None = None  # which linked last: "nvJitLink" or "driver"

    @staticmethod
    def cudadevrt() -> str:
        """The path of ``libcudadevrt.a``, the device runtime a kernel that launches kernels
        (dynamic parallelism) is linked with: from the nvidia-cuda-runtime wheel, else where
        cuda.pathfinder finds it (a toolkit, conda).  Raises LibraryNotFoundError with the
        places searched and the next step."""
        from ...bindings import _sites  # deferred: only this path needs it

        found = _sites.static_library("cudadevrt")
        if found is not None:
            return found
        tried = ["the nvidia-cuda-runtime wheel in site-packages: not there"]
        try:
            from cuda import pathfinder  # deferred: only this path needs it

            return pathfinder.find_static_lib("cudadevrt")
        except AttributeError:  # a cuda.pathfinder before find_static_lib
            tried.append("cuda.pathfinder: too old to find static libraries")
        except Exception as exc:  # its StaticLibNotFoundError
            tried.append(f"cuda.pathfinder: {exc}")
        raise LibraryNotFoundError(
            f"libcudadevrt.a not found; tried {'; '.join(tried)}", library="cudadevrt",
            tried=tried, hint="pip install nvidia-cuda-runtime (the nvrtc extra brings it), or "
                              "pass the path of a CUDA toolkit's lib64/libcudadevrt.a")

    def __repr__(self) -> str:
        return f"<cudaload.Linker {' + '.join(o.name or o.kind for o in self.objects)}>"

    def link(self, output: str = "cubin") -> ObjectCode:
        """The linked code as ``output`` ("cubin", or "ptx" of LTO IR inputs), found in the
        cache or linked now.

        Raises LinkError with the linker's log when the link fails (``.symbol``: an undefined
        one), ValueError for an unknown output or arch, the loader's error when nvJitLink is
        missing and the driver cannot link instead (no GPU, LTO IR, an option it lacks);
        with ``backend="nvjitlink"`` nvJitLink's errors as they are, with ``"driver"``
        CudaUnavailableError where no driver can link (no GPU).
        """
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
        if output == "ptx" and not (self.lto and all(o.kind == "ltoir" for o in self.objects)):
            raise ValueError("only LTO IR links to PTX: give LTO IR inputs and lto=True, or "
                             "link to output='cubin'")
        target = self._target()
        parts: list[str | bytes] = ["link", output, target.sm(), str(self.lto), *self.options,
                                    "inputs"]
        for obj in self.objects:
            parts += [obj.kind, obj.name or "", obj.code]
        # One request, as a compile's (request.py): its memory tier here, its disk tier under
        # the key of the linker that links (linked()), the code kept by keep()
        request = _request.link(tuple(parts), self.options, self.lto, target, output)
        hit = _request.lookup(request).code
        if hit is not None and self._only in (None, hit._linker):
            return self._done(hit, "memory hit")  # its linker recorded with it
        if self._only == "driver":
            return self._by_driver(request, None)
        return self._by_nvjitlink(request)

    def _by_nvjitlink(self, request: _request.Request) -> ObjectCode:
        """The link by nvJitLink, or by the driver where nvJitLink cannot and the backend is
        either linker."""
        alone = self._only is not None
        try:
            identity = "nvJitLink " + _linker.identity()
        except LibraryNotFoundError as missing:
            if alone:
                raise
            return self._by_driver(request, missing)
        target, output = request.arch, request.output
        with cache.default().lock(_request.link_key(request, identity)) as publish:
            found = self._disk_hit(request, identity, "nvJitLink")
            if found is not None:
                return found
            fallback: Exception | None = None
            try:
                obj = self._nvjitlink(target, output)
            except LinkError as err:
                if alone or err.result not in _TOO_OLD or any(o.kind == "ltoir"
                                                              for o in self.objects):
                    raise
                fallback = err
            except LibraryNotFoundError as err:  # found, but the loader refused the file
                if alone:
                    raise
                fallback = err
            else:
                publish(obj)
        if fallback is not None:  # the key's lock released: the driver's link has its own key
            _log.debug("compile", "nvJitLink cannot link %s for %s (%s): the driver links",
                       self._name(), target.sm(), fallback)
            return self._by_driver(request, fallback)
        return _request.keep(request, _BUILT._replace(code=obj))

    def _target(self) -> Arch:
        """The arch to link for: the one asked, else the current device's, else the inputs'."""
        if self.arch is not None:
            return parse_arch(self.arch)
        try:
            return parse_arch(thread_device.arch())
        except CudaLoadError:
            pass
        known = sorted({parse_arch(o.arch) for o in self.objects if o.arch})
        if not known:
            raise ValueError("no GPU here and no input says its arch: give Linker(..., "
                             "arch='sm_90')")
        return known[-1]

    def _inputs(self) -> list[tuple[str, bytes, str]]:
        return [(o.kind, o.code, o.name or f"{o.kind}{i}") for i, o in enumerate(self.objects)]

    def _name(self) -> str:
        return "+".join(name for _kind, _code, name in self._inputs())

    def _nvjitlink(self, target: Arch, output: str) -> ObjectCode:
        from ...bindings import nvjitlink  # deferred: only this path needs it

        gpu = target.compute() if output == "ptx" else target.sm()
        options = (f"-arch={gpu}", *(("-lto",) if self.lto else ()), *self.options)
        self.linker = "nvJitLink"
        code, info = self._logged(lambda: nvjitlink.link_inputs(self._inputs(), options, output))
        _log.debug("compile", "nvJitLink linked %s to %s for %s", self._name(), output,
                   target.sm())
        # Unused variables removed: the host must not reach the module's variables (as for
        # Program(lto=True), ObjectCode.linked).
        obj = ObjectCode(code, output, target.sm(), log=info, name=self._name(),
                         linked=self.lto and "-optimize-unused-variables" in self.options)
        obj._linker = "nvJitLink"
        return obj

    def _by_driver(self, request: _request.Request, why: Exception | None) -> ObjectCode:
        """The link by the driver's linker, where nvJitLink cannot (``why``; None: the driver's
        linker was asked for): cached under the driver's version.  Raises ``why`` where the
        driver cannot either (without one, why the driver cannot)."""
        from ...bindings import driver, driver_linker  # deferred: only this path needs it

        target, output = request.arch, request.output
        ir = [o.name or o.kind for o in self.objects if o.kind == "ltoir"]
        try:
            if ir or output == "ptx":
                raise ValueError(f"the driver's linker links no LTO IR ({', '.join(ir)})")
            options = _link_options.for_driver(self.options, target)
            _hooks.activate()
            version = driver.version()
        except (ValueError, CudaUnavailableError) as cannot:
            said = cannot.args[0] if cannot.args else cannot  # its own next step left out
            if why is None:
                raise
            if isinstance(why, LibraryNotFoundError):
                raise LibraryNotFoundError(
                    f"{why.args[0]}; the driver's linker cannot link instead: {said}",
                    library=why.library, tried=why.tried, hint=why.hint) from cannot
            if isinstance(why, LinkError):
                raise _refined(why, f"{why.args[0]}\nThe driver's linker cannot link instead: "
                                    f"{said}") from cannot
            raise why from cannot
        identity = f"driver {version}"
        with cache.default().lock(_request.link_key(request, identity)) as publish:
            found = self._disk_hit(request, identity, "driver")
            if found is not None:
                return found
            self.linker = "driver"
            try:
                code, info = self._logged(lambda: driver_linker.link(self._inputs(), options))
            except LinkError as failed:
                raise _after(failed, why) from None
            _log.debug("compile", "the driver linked %s for %s (nvJitLink: %s)", self._name(),
                       target.sm(), why or "not asked")
            obj = ObjectCode(code, "cubin", target.sm(), log=info, name=self._name())
            obj._linker = "driver"
            publish(obj)
        return _request.keep(request, _BUILT._replace(code=obj))

    def _logged(self, run):
        """``run()``'s (code, info log), with both logs kept on the Linker; a LinkError gets
        the message that names the inputs, the symbol and the next step."""
        self.info_log = self.error_log = ""
        try:
            code, self.info_log = run()
        except LinkError as err:
            self.info_log, self.error_log = err.info_log, err.log
            raise _explained(err, self._name()) from None
        return code, self.info_log

    def _disk_hit(self, request: _request.Request, identity: str, linker: str
                  ) -> ObjectCode | None:
        """The disk entry of ``request`` for ``identity`` (request.linked), made by ``linker``,
        kept in memory too (request.keep); None for a miss.  The Linker's own test, so kept
        here: an entry that does not record ``linker`` (one written before the linker was
        recorded) is a miss, linked again and written over."""
        found = _request.linked(request, identity)
        if found.code is None or found.code._linker != linker:
            return None
        return self._done(_request.keep(request, found), "disk hit")

    def _done(self, obj: ObjectCode, how: str) -> ObjectCode:
        """A hit ``obj``, reported: the logs and the linker its entry recorded."""
        self.info_log, self.error_log, self.linker = obj.log, "", obj._linker
        obj.name = self._name()
        _log.debug("cache", "%s: link %s", obj.name, how)
        return obj


def _backend(backend, lto: bool) -> str | None:
    """The linker ``backend`` names ("nvJitLink", "driver"; None: either), checked."""
    if backend is None:
        return None
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string or None, not {type(backend).__name__}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))} or None "
                         f"(either), not {backend!r}")
    if backend == "driver" and lto:
        raise ValueError("the driver's linker does no link-time optimisation (LTO IR, "
                         "lto=True): give backend='nvjitlink' or None")
    return BACKENDS[backend]


def _input(obj, i: int) -> ObjectCode:
    if isinstance(obj, ObjectCode):
        # One made by its constructor is unchecked: its bytes are checked here, as from_bytes
        # does, so that text given as a CUBIN is refused now rather than by the linker.
        named = f"Linker input {i} ({obj.name or obj.kind})"
        if not isinstance(obj.code, bytes):
            raise TypeError(f"{named}: its code is {type(obj.code).__name__}, not bytes")
        try:
            check(obj.code, obj.kind)
        except ValueError as err:
            raise ValueError(f"{named}: {err}") from None
        return obj
    if isinstance(obj, (str, os.PathLike)):
        return ObjectCode.from_file(obj)
    raise TypeError(f"Linker input {i} is {type(obj).__name__}: give an ObjectCode or the path "
                    "of a .cubin, .ptx, .fatbin, .ltoir or .a file")


def _explained(err: LinkError, name: str) -> LinkError:
    """``err`` with the message a user reads: what was linked, the symbol, the log, what to do."""
    # The log names the symbol mangled (_Z3fooi); the message says the declaration too (foo(int))
    declared = demangled(err.symbol) if err.symbol else None
    named = f"{declared} (mangled {err.symbol})" if declared else repr(err.symbol)
    symbol = f": {named} is not defined in any input" if err.symbol else ""
    if err.symbol:
        hint = (f"add the code that defines {declared or err.symbol} (compiled with "
                "relocatable=True, or as LTO IR) to the Linker's inputs")
    elif err.hint:  # the linker's own: for an arch nvJitLink refuses, which arch and release
        hint = err.hint
    elif err.result in _REFUSED_OPTIONS:
        hint = ("fix or remove the option it refuses (the values of the options only nvJitLink "
                "takes are its to check)")
    else:
        hint = ("read the log above; the inputs must be for one arch, and nvJitLink of their "
                "CUDA release or newer (pip install -U nvidia-nvjitlink)")
    return LinkError(f"{err.linker} could not link {name}{symbol} ({err.args[0]})"
                     + (f"\n{err.log}" if err.log else ""), log=err.log, info_log=err.info_log,
                     symbol=err.symbol, linker=err.linker, result=err.result, hint=hint,
                     function=err.function)


def _refined(err: LinkError, message: str, hint: str | None = None) -> LinkError:
    """``err`` with another message (and hint), its other fields kept."""
    return LinkError(message, log=err.log, info_log=err.info_log, symbol=err.symbol,
                     linker=err.linker, result=err.result, function=err.function,
                     hint=err.hint if hint is None else hint)


def _after(failed: LinkError, why: Exception | None) -> LinkError:
    """The driver's ``failed`` link, tried because nvJitLink could not (``why``): the message
    names both linkers' answers; the next step is nvJitLink's where it refused the arch (which
    the driver refused too), else the driver's."""
    if not isinstance(why, LinkError):  # nvJitLink missing: the driver's error alone
        return failed
    hint = why.hint if why.result in _ARCH_REFUSED else failed.hint
    return _refined(failed, f"{failed.args[0]}\nBefore it, {why.args[0]}", hint)


# What a link made here is, for request.keep: code of no disk entry, kept in memory
_BUILT = _request.Found((None, "built", None, None, None, None, None, None, None, True))
