"""A compile request as a value, and the caches its code is looked up in and kept in.

``Program.compile()``, ``compile_all``, ``cudaload compile`` and a recompilation after the
driver refused code each make one :class:`Request`: the program's inputs as checked and digested
when it was made (_prepare.Prepared), its code type, its options, the arch and output asked for
(the arch resolved where none was given: plan.default_arch), its bundle and its memory key.
The request then goes one way, and no step holds a Program:

    lookup(request)        the memory cache, the program's bundle, the disk cache: a Found with
                           the code, or for a miss the disk key, kind and target to build
    build(request, found)  NVRTC, then nvJitLink for ``lto=True``; PTX and NVVM IR linked
                           (build.py, imported by a miss alone)
    keep(request, found)   the code given what the launch side reads of its program and kept in
                           the memory cache; code built elsewhere is written to the disk cache

build.run is the three in turn.  A Linker's link (link/linker.py) is a request too
(:func:`link`), its inputs a :class:`Link`: looked up in memory, then on disk under the key of
the linker that links (:func:`linked`), nvJitLink first, then the driver, each tried by the
Linker, and kept.  The disk key (sha256) covers everything that changes the output: the
program's inputs, every path NVRTC's include search looks at now with the contents of the files
it reads (includes.py; that a program includes only the toolchain's headers is known from
_directives.py, without the search), the kind and target arch (plan.choose), NVRTC's version and
build and the CUDA header folders (toolchain.py), the cache format, for PTX the driver's
version, and for ``lto=True`` the linker's build.  A program that names an include by a macro
reads what is not known for certain: it is looked up and kept in memory only.

Imports of cudaload: _cache_folder, _prepare, cache.memory, options, plan, toolchain;
_directives, includes and _linker where asked.
"""

from __future__ import annotations

from _operator import itemgetter  # operator's own; the operator module costs 0.3 ms

from . import _cache_folder, _prepare, plan, toolchain
from .cache.memory import MEMORY
from .options import request as _arch_request, virtual
from .plan import LINKED

TYPE_CHECKING = False  # typing is not imported: a disk hit in a fresh process must cost little
if TYPE_CHECKING:
    from .includes import search as includes
    from .objectcode import ObjectCode

__all__ = ["Request", "Options", "Link", "Found", "Origin", "LINK", "make", "link", "lookup",
           "keyed", "linked", "link_key", "keep", "disk", "still_valid", "inputs_of",
           "bundle_digest", "headers_of"]

LINK = "link"  # the code type of a Linker's request (link/linker.py): code linked into one
_NO_NVRTC = (*LINKED, LINK)  # no NVRTC key, no origin: the Linker keys its link


class Options(tuple):
    """A request's options: ``flags`` (NVRTC's; a PTX program's link options, a NVVM IR
    program's libNVVM options) and ``lto``, whether nvJitLink links NVRTC's LTO IR."""

    __slots__ = ()
    flags = property(itemgetter(0))
    lto = property(itemgetter(1))


class Request(tuple):
    """One compile request, frozen (a tuple with a name for each item, as toolchain.Toolchain
    is): ``inputs`` (_prepare.Prepared: source, name, headers, name expressions, digest; a
    Linker's: :class:`Link`), ``code_type``, ``options`` (:class:`Options`), ``arch`` and
    ``output`` as asked (the arch resolved), ``explicit`` (whether the arch was given),
    ``bundle`` and ``memory_key``."""

    __slots__ = ()
    inputs = property(itemgetter(0))
    code_type = property(itemgetter(1))
    options = property(itemgetter(2))
    arch = property(itemgetter(3))
    output = property(itemgetter(4))
    explicit = property(itemgetter(5))
    bundle = property(itemgetter(6))
    memory_key = property(itemgetter(7))


class Link(tuple):
    """A Linker's inputs, as its request holds them: ``parts`` (its inputs' kinds, names and
    bytes, the options, the arch, LTO and the output) and their ``digest``, which its keys are
    made of (memory_key, link_key)."""

    __slots__ = ()
    parts = property(itemgetter(0))
    digest = property(itemgetter(1))
    chars = 0  # what keep() counts beyond the code: nothing, as no origin holds the inputs


class Found(tuple):
    """Where a request's code was found, or what builds it: ``code`` (None for a miss), ``where``
    ("memory", "bundle", "disk", "built", "elsewhere"; None for a miss), the disk ``key`` (None
    for a bundle's code and linked programs), the ``kind`` and ``target`` a build makes for the
    toolchain ``tc``, ``inputs`` (includes.Inputs: what the program reads now), ``linker`` (the
    nvJitLink build of ``lto=True``), ``stamps`` (what the memory cache watches of the files it
    read) and ``kept`` (whether the code may be kept)."""

    __slots__ = ()
    _fields = ("code", "where", "key", "kind", "target", "tc", "inputs", "linker", "stamps",
               "kept")
    code = property(itemgetter(0))
    where = property(itemgetter(1))
    key = property(itemgetter(2))
    kind = property(itemgetter(3))
    target = property(itemgetter(4))
    tc = property(itemgetter(5))
    inputs = property(itemgetter(6))
    linker = property(itemgetter(7))
    stamps = property(itemgetter(8))
    kept = property(itemgetter(9))

    def _replace(self, **changes) -> Found:
        return Found(changes.get(f, v) for f, v in zip(self._fields, self))


_UNKEYED = Found((None, None, None, None, None, None, None, None, None, True))  # linked: built


class Origin:
    """What compiled an ObjectCode, as plain data: the Program's prepared arguments (source,
    headers and options: counted in the memory cache's bound with the code) and the request."""

    __slots__ = ("prepared", "arch", "output", "key")

    def __init__(self, prepared, arch, output: str, key: str | None):
        self.prepared, self.arch, self.output, self.key = prepared, arch, output, key


def make(prepared, bundle, arch, output: str, explicit: bool, memory_key=None) -> Request:
    """The request of the program ``prepared`` for ``arch``/``output``.  Raises TypeError or
    ValueError for an arch or output that is none (options.request)."""
    if memory_key is None:
        memory_key = (prepared.digest, _arch_request(arch, output))
    return Request((prepared, prepared.code_type, Options((prepared.options, prepared.lto)),
                    arch, output, explicit, bundle, memory_key))


def link(parts: tuple, flags: tuple, lto: bool, arch, output: str) -> Request:
    """The request of a Linker's link: ``parts`` (what the link's digest covers: its inputs'
    kinds, names and bytes, the options, the arch, LTO and the output) for ``arch``/``output``,
    in memory under (digest, "link")."""
    inputs = Link((parts, _prepare.digest(*parts)))
    return Request((inputs, LINK, Options((flags, lto)), arch, output, True, None,
                    (inputs.digest, "link")))


def lookup(request: Request, tc: toolchain.Toolchain | None = None,
           shipped: bool = True) -> Found:
    """The request's code from the memory cache, the bundle (with ``shipped``: not for code
    the driver refused) or the disk cache (its key for ``tc``, default: toolchain.current());
    else the miss, keyed.  Raises ValueError for an arch NVRTC cannot target."""
    hit = MEMORY.get(request.memory_key)
    if hit is not None and (not hit.stamps or still_valid(hit.stamps)):
        return Found((hit.code, "memory", None, None, None, None, None, None, None, True))
    if request.code_type in _NO_NVRTC:  # no NVRTC key: the Linker's is linked()'s
        return _UNKEYED
    arch = request.arch
    if shipped and request.bundle is not None and arch is not None:
        read = inputs_of(request.inputs, None)
        code = request.bundle.find(None, arch, virtual(arch, request.output),
                                   digest=_with_files(request.inputs, read))
        if code is not None:  # no key: none to evict
            return Found((code, "bundle", None, None, None, None, read, None, read.stamps, True))
    tc = tc or toolchain.current()
    if request.explicit:  # a typo ("sm_900") is refused before any code is chosen for it
        plan.check_plausible(arch, tc)
    return keyed(request, tc)


def keyed(request: Request, tc: toolchain.Toolchain) -> Found:
    """The disk key of ``request`` for ``tc`` and the files the program reads now, with the
    disk cache's code under it, if any."""
    read = inputs_of(request.inputs, tc)
    kind, target = plan.choose(tc, request.arch, virtual(request.arch, request.output),
                               request.explicit)
    # LTO IR asked for is NVRTC's, unlinked: no linker in its key
    linker = _linker_identity() if request.options.lto and kind != "ltoir" else None
    driver = str(plan.driver_version() or 0) if kind == "ptx" else "-"
    key = _prepare.digest(str(_cache_folder.FORMAT), _with_files(request.inputs, read).hex(), kind,
                          target.sm(), tc.key, driver,
                          *(() if linker is None else ("nvJitLink", linker))).hex()
    code = disk(read).lookup(key)
    return Found((code, None if code is None else "disk", key, kind, target, tc, read, linker,
                  read.stamps, True))


def linked(request: Request, linker: str) -> Found:
    """The disk tier of a Linker's ``request`` linked by ``linker`` (its name and build, e.g.
    "driver 12020"): the disk key, with the disk cache's code under it, if any."""
    from . import cache  # deferred, as in disk()

    key = link_key(request, linker)
    code = cache.default().lookup(key)
    return Found((code, None if code is None else "disk", key, request.output, request.arch,
                  None, None, linker, None, True))


def link_key(request: Request, linker: str) -> str:
    """The disk key of a Linker's ``request`` linked by ``linker``: its own, not keyed()'s (a
    link reads no file and no NVRTC makes it; which linker links is known only as it links,
    nvJitLink first, then the driver, each under its key: link/linker.py)."""
    return _prepare.digest(str(_cache_folder.FORMAT), request.inputs.digest.hex(), linker).hex()


def keep(request: Request, found: Found, store: bool = False) -> ObjectCode:
    """``found``'s code, given what the launch side reads of its program (its source, and what
    compiled it, which rebuild.recompile_refused is given when the driver refuses it) and kept in
    the memory cache where it may be; with ``store``, written to the disk cache too (code built
    on another machine's worker)."""
    obj = found.code
    if found.where == "memory":
        return obj
    if request.code_type in _NO_NVRTC:  # the Linker's code: no origin to compile it again from
        MEMORY.put(request.memory_key, obj, None, request.inputs.chars + len(obj.code))
        return obj
    prepared = request.inputs
    obj.source = prepared.source
    obj.name = prepared.name
    obj.origin = Origin(prepared, request.arch, request.output, found.key)
    if store:
        disk(found.inputs).store(found.key, obj)
    if found.kept:
        MEMORY.put(request.memory_key, obj, found.stamps,
                   prepared.chars + len(obj.code) + len(obj.log))
    return obj


def disk(read: includes.Inputs):
    """The disk cache for a program that reads ``read``: none where that is not known for
    certain (a file named by a macro cannot be found without preprocessing)."""
    from . import cache  # deferred: imported with MEMORY already, named here for NULL

    return cache.default() if read.includes_known else cache.NULL


def headers_of(prepared) -> dict:
    """The in-memory headers of ``prepared``, by name."""
    return dict(prepared.headers) if prepared.headers else {}


def inputs_of(prepared, tc: toolchain.Toolchain | None) -> includes.Inputs:
    """What NVRTC will read for the C++ program ``prepared`` now, with ``tc``'s header folders.
    Without ``tc`` (code shipped in a bundle is looked up without NVRTC), the files outside
    CUDA's header folders that the program itself reaches."""
    # deferred: only this path needs it
    from .includes._directives import NOTHING_READ, only_toolchain

    # Most kernels include only the toolchain's headers: no search to follow then, nor its import.
    headers = headers_of(prepared)
    quick = only_toolchain(prepared.source, headers, prepared.options)
    if quick is not None:
        return NOTHING_READ[quick]
    # deferred: only a program that reads other files needs the search
    from .includes import search as includes

    folders = [o[2:] for o in tc.include_options] if tc is not None else []
    return includes.resolve(prepared.source, prepared.name, headers, prepared.options, folders)


def bundle_digest(prepared) -> bytes:
    """The digest a bundle files the program ``prepared`` under: with the files it reads now, as
    a lookup without NVRTC sees them; a PTX program's own (it reads no file, and its text is no
    C++ for the include scan)."""
    if prepared.code_type in LINKED:
        return prepared.digest
    return _with_files(prepared, inputs_of(prepared, None))


def _with_files(prepared, read: includes.Inputs) -> bytes:
    """The digest of ``prepared`` with what it reads: its own digest when it reads no file, so
    code shipped for it matches wherever it is compiled."""
    if not read.path_states:
        return prepared.digest
    return _prepare.digest(*prepared.parts, *[x for item in read.path_states for x in item])


def _linker_identity() -> str:
    """The nvJitLink build that links an ``lto=True`` program (compile/link/_linker.py, imported by
    the first such program: it imports the loader's bindings, which other disk hits do
    without)."""
    from .link import _linker  # deferred: see above

    return _linker.identity()


def still_valid(stamps) -> bool:
    """Whether the files a memory hit's compile read look as they did (includes.still_valid)."""
    # deferred: only a hit whose compile read files needs it
    from .includes.search import still_valid

    return still_valid(stamps)
