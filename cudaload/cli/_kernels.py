"""Whether compiled code holds a kernel, and what ``cudaload compile``/``precompile`` say when it
holds none because every kernel is a template that no name expression instantiates.
"""

from __future__ import annotations

import re
import struct

__all__ = ["holds_kernel", "no_kernel_problem"]

# A kernel in a CUBIN: an ELF64 function symbol marked as an entry (STO_CUDA_ENTRY in st_other).
_STT_FUNC, _STO_CUDA_ENTRY = 2, 0x10
_PTX_ENTRY = re.compile(rb"^\s*(?:\.(?:visible|weak)\s+)?\.entry\s", re.M)


def holds_kernel(code: bytes, kind: str) -> bool | None:
    """Whether compiled ``code`` holds a kernel; None when it cannot be read as expected."""
    if kind == "ptx":
        return _PTX_ENTRY.search(code) is not None
    if kind != "cubin" or code[:5] != b"\x7fELF\x02":
        return None
    try:
        shoff, = struct.unpack_from("<Q", code, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", code, 0x3A)
        for i in range(shnum):
            sh_type, = struct.unpack_from("<I", code, shoff + i * shentsize + 4)
            if sh_type != 2:  # SHT_SYMTAB
                continue
            offset, size, _link, _info, _align, entsize = struct.unpack_from(
                "<QQIIQQ", code, shoff + i * shentsize + 24)
            for at in range(offset, offset + size - entsize + 1, max(entsize, 1)):
                info, other = struct.unpack_from("<BB", code, at + 4)
                if info & 0xF == _STT_FUNC and other & _STO_CUDA_ENTRY:
                    return True
        return False
    except struct.error:
        return None


def _template_kernels(source: str) -> list[str]:
    """The names of the ``__global__`` function templates declared in ``source``."""
    from ..launch.signature import _without_comments  # deferred: each command imports what it runs

    text = _without_comments(source)
    names = []
    for match in re.finditer(r"\b__global__\b", text):
        start = max(text.rfind(c, 0, match.start()) for c in ";{}")  # this declaration's start
        if not re.search(r"\btemplate\s*<", text[start + 1:match.start()]):
            continue
        # the declarator's name: the first identifier before "(" not spelled __like_this__
        name = re.search(r"\b(?!__)([A-Za-z_]\w*)\s*\(", text[match.end():])
        if name and name.group(1) not in names:
            names.append(name.group(1))
    return names


def no_kernel_problem(command: str, source_path: str, program, obj) -> str | None:
    """Why ``obj`` (no kernel in it) is no result of ``cudaload COMMAND``; None when it is one."""
    names = _template_kernels(program.source)
    if not names:  # device functions only, as for linking with -rdc=true: what was asked
        return None
    return (f"cudaload {command}: {source_path} defines only kernel templates ({', '.join(names)}) "
            f"and no --name-expression instantiates one, so the {obj.kind.upper()} would hold "
            f"no kernel. Next step: pass one --name-expression for each instantiation the "
            f"kernel is launched with, e.g. --name-expression '{names[0]}<float>'")
