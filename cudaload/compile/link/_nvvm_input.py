"""NVVM IR as a program's input (``Program(ir, code_type="nvvm")``): LLVM IR text or bitcode,
compiled to PTX by libNVVM, then linked to CUBIN as a PTX program is (by
:class:`~cudaload.Linker`: nvJitLink, else the driver).

A NVVM program is a Program whose prepared arguments have "nvvm" as the first of their
digested parts, so that its memory-cache key can be no other program's.  Its options are
libNVVM's (``-opt=3``, ``-ftz=1``, ``-prec-div=0``, ``-g``, ``-generate-line-info``, ...),
given to it as they are, the arch excepted: that is compile's argument (``-arch=compute_90``).
The PTX is cached on disk under the digest, the compute arch and libNVVM's build (its version,
the IR version it reads and its file's fingerprint), so a second process compiles nothing; it
loads libNVVM to learn that build.  The CUBIN is the Linker's, cached as a link is.

Imports of cudaload: bindings (nvvm, _loader), _outputs, _prepare, cache, linker, objectcode,
options, toolchain.
"""

from __future__ import annotations

from .. import _prepare, cache
from ._outputs import check_output
from ..objectcode import ObjectCode
from ..options import Arch, parse_arch, strings

__all__ = ["prepare", "build"]

_KEYWORDS = {"line_info": "-generate-line-info", "debug": "-g"}  # Program's keywords it takes
_BITCODE = b"BC\xc0\xde"  # LLVM bitcode's magic number
_builds: dict = {}  # libNVVM's file -> its build, as the cache key names it


def prepare(source, name, options, keywords: _prepare.Keywords) -> _prepare.Prepared:
    """The prepared arguments of a program of NVVM IR ``source`` (text, or bytes: bitcode or
    text); ``keywords``: Program's other keywords as given.  Raises ValueError for empty
    source, an ``-arch`` option or a C++ keyword given, TypeError for source that is neither
    str nor bytes or a name that is no str."""
    if isinstance(source, str):
        ir = source.encode()
    elif isinstance(source, (bytes, bytearray, memoryview)):
        ir = bytes(source)
    else:
        raise TypeError(f"NVVM IR is text (LLVM IR) or bytes (bitcode), not "
                        f"{type(source).__name__}")
    if not ir.strip():
        raise ValueError("the NVVM IR is empty: give LLVM IR text or bitcode")
    name = _prepare._name(name, "name", "name='kernel.ll'")
    given = _prepare.cxx_keywords(keywords, _KEYWORDS)
    if given:
        raise ValueError(f"{', '.join(given)}: keywords for CUDA C++ source, not for NVVM IR "
                         "(code_type='nvvm'), which libNVVM compiles; leave them out, and give "
                         "libNVVM's own options as options=")
    options = (*(flag for keyword, flag in _KEYWORDS.items() if getattr(keywords, keyword)),
               *strings(options, "options", "('-opt=3',)"))
    arch = [o for o in options if o.startswith(("-arch", "--arch"))]
    if arch:
        raise ValueError(f"{arch[0]}: the arch is compile()'s argument, not an option: "
                         "program.compile(arch='sm_90')")
    parts = ("nvvm", name, ir, "options", *options)
    source = source if isinstance(source, str) else ir
    return _prepare.Prepared(source, name, (), (), options, (), parts, _prepare.digest(*parts),
                             len(ir), False, _prepare.Asked(), "nvvm")


def build(request) -> ObjectCode:
    """The code of the NVVM program's ``request`` (request.Request) for its arch and output:
    libNVVM's PTX (from the disk cache, or compiled now), linked to CUBIN unless PTX is asked
    for.  Raises ValueError for an output it does not give or an arch that is none,
    CompileError with libNVVM's log where it refuses the IR, the loader's LibraryNotFoundError
    where there is no libNVVM, and as :meth:`Linker.link` does."""
    from .linker import Linker  # deferred: only this path needs it

    check_output(request.output, "nvvm")
    target = parse_arch(request.arch)
    program = request.inputs
    ptx = _ptx(program, target)
    if request.output == "ptx":
        return ptx
    obj = Linker(ptx, arch=target.sm()).link("cubin")
    obj.name = program.name
    return obj


def _ptx(program, target: Arch) -> ObjectCode:
    """libNVVM's PTX of the NVVM program ``program`` (_prepare.Prepared) for ``target``'s
    virtual arch, cached on disk."""
    from ...bindings import nvvm  # deferred: only this path needs it

    key = _prepare.digest(str(cache.FORMAT), "nvvm", program.digest.hex(), target.compute(),
                          _build()).hex()
    disk = cache.default()
    with disk.lock(key) as publish:
        found = disk.lookup(key)
        if found is not None and found.kind == "ptx":
            found.name = program.name
            return found
        code, log = nvvm.compile_ptx(program.parts[2], program.name,
                                     (f"-arch={target.compute()}", *program.options))
        obj = ObjectCode(code, "ptx", target.sm(), log=log, name=program.name)
        publish(obj)
    return obj


def _build() -> str:
    """libNVVM's build, loading it: version, IR version and its file's fingerprint."""
    from .. import toolchain  # deferred: only this path needs it
    from ...bindings import _loader, nvvm  # deferred: only this path needs it

    path = _loader.nvvm().path
    known = _builds.get(path)
    if known is None:
        known = _builds[path] = (f"libNVVM {nvvm.version()} IR {nvvm.ir_version()} "
                                 f"{toolchain.fingerprint(path)}")
    return known
