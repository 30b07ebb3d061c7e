"""PTX as a program's input (``Program(ptx_text, code_type="ptx")``): checked when the Program is
made, and linked to CUBIN by :class:`~cudaload.Linker` (nvJitLink, else the driver) when it is
compiled, cached as the Linker caches.

A PTX program is a Program whose prepared arguments (_prepare.Prepared) have "ptx" as the first
of their digested parts, so that its memory-cache key can be no C++ program's, and whose options
are link options (``line_info``, ``debug`` and ``max_registers`` among them).  It has no headers,
include folders or name expressions, and no NVRTC compiles it: CUDA C++ keywords are refused with
the reason.  Its bundle entries (``cudaload precompile FILE.ptx``) are filed under that digest,
which covers the PTX text, the name and the link options: a CUBIN a bundle holds for it is used
before anything is linked, and other text or options are a miss.

Imports of cudaload: _link_options, _nvvm_input, _outputs, _prepare, linker, objectcode,
options.
"""

from __future__ import annotations

from . import _link_options
from ._outputs import check_output
from .. import _prepare
from ..objectcode import ObjectCode
from ..options import strings

__all__ = ["CODE_TYPES", "prepare", "check_output", "link"]

CODE_TYPES = ("c++", "ptx", "nvvm")
_LINK_KEYWORDS = ("line_info", "debug", "max_registers")  # Program's keywords a link takes


def prepare(code_type, source, name, options, keywords: _prepare.Keywords) -> _prepare.Prepared:
    """The prepared arguments of a program of PTX ``source``; ``keywords``: Program's other
    keywords as given.  ``line_info``, ``debug`` and ``max_registers`` become link options, the
    C++ ones must be left out.  Raises ValueError for an unknown code type, text that is no PTX
    or a C++ keyword given, TypeError for a name that is no str, and what the link options'
    check raises (compile/link/_link_options.py); for ``code_type="nvvm"``, what
    _nvvm_input.prepare raises."""
    if code_type == "nvvm":  # NVVM IR: compiled to PTX by libNVVM, then linked as PTX is
        from . import _nvvm_input  # deferred: only this path needs it

        return _nvvm_input.prepare(source, name, options, keywords)
    if code_type != "ptx":  # "c++" is _prepare.py's
        raise ValueError(f"code_type must be one of {', '.join(CODE_TYPES)}, not {code_type!r}")
    text = _prepare._text(source, "source")
    name = _prepare._name(name, "name", "name='kernel.ptx'")
    ObjectCode.from_bytes(text.encode(), "ptx")  # raises ValueError for text that is no PTX
    given = _prepare.cxx_keywords(keywords, _LINK_KEYWORDS)
    if given:
        raise ValueError(f"{', '.join(given)}: keywords for CUDA C++ source, not for PTX "
                         "(code_type='ptx'), which is linked, not compiled; leave them out")
    options = (*(("-lineinfo",) if keywords.line_info else ()),
               *(("-g",) if keywords.debug else ()),
               *((f"-maxrregcount={keywords.max_registers}",)
                 if keywords.max_registers is not None else ()),
               *strings(options, "options", "('-lineinfo',)"))
    options = _link_options.check(options)
    parts = ("ptx", name, text, "options", *options)
    return _prepare.Prepared(text, name, (), (), options, (), parts, _prepare.digest(*parts),
                             len(text), False, _prepare.Asked(), "ptx")


def link(request) -> ObjectCode:
    """The CUBIN of the PTX program's ``request`` (request.Request) for its arch (None: the
    PTX's own target, ``.target``): the program's bundle's entry for it, else linked (or found
    in the Linker's cache).  Raises ValueError for an output other than CUBIN or no arch known
    (neither given nor in the PTX), and as :meth:`Linker.link` does.  A NVVM IR program is
    compiled by libNVVM first (_nvvm_input.build)."""
    from .linker import Linker  # deferred: only this path needs it

    if request.code_type == "nvvm":
        from ._nvvm_input import build  # deferred: NVVM programs only

        return build(request)
    check_output(request.output)
    program = request.inputs
    ptx = ObjectCode.from_bytes(program.source.encode(), "ptx", name=program.name)
    target = request.arch if request.arch is not None else ptx.arch
    if target is None:  # arch=None without a device (plan.default_arch), and PTX without .target
        raise ValueError(f"{program.name}: its PTX has no .target and there is no GPU here to "
                         "link for: give the arch, e.g. compile(arch=90)")
    shipped = request.bundle.find(None, target, request.output, digest=program.digest) \
        if request.bundle is not None else None
    obj = shipped or Linker(ptx, arch=target, options=request.options.flags).link("cubin")
    obj.name = program.name
    return obj
