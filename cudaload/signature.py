"""Kernel parameters: their layout and C types, and where those come from.

The layout (offset and size of each parameter) comes from the driver (``cuFuncGetParamInfo``, CUDA
12.4+) or, on older drivers, from the C types laid out with natural alignment.  The C types come from
a declared signature, the Itanium-mangled name (``_demangle``), or the kernel's declaration in the
source.  ``arguments.Packer`` turns values into bytes by these parameters.
"""

from __future__ import annotations

import re
import struct
import sys

from ._demangle import mangled_types
from .errors import LaunchArgumentError

__all__ = ["Param", "build_params", "signature_types", "mangled_types", "source_types", "classify",
           "describe_signature"]

_LONG = "i" if sys.platform == "win32" else "q"
_ULONG = _LONG.upper()
# C type -> (kind, struct code).  kind decides which Python values fit; the code packs them exactly.
_TYPES = {
    "bool": ("bool", "?"), "char": ("int", "b"), "signed char": ("int", "b"),
    "unsigned char": ("int", "B"), "short": ("int", "h"), "unsigned short": ("int", "H"),
    "int": ("int", "i"), "unsigned int": ("int", "I"), "long": ("int", _LONG),
    "unsigned long": ("int", _ULONG), "long long": ("int", "q"), "unsigned long long": ("int", "Q"),
    "int8_t": ("int", "b"), "uint8_t": ("int", "B"), "int16_t": ("int", "h"),
    "uint16_t": ("int", "H"), "int32_t": ("int", "i"), "uint32_t": ("int", "I"),
    "int64_t": ("int", "q"), "uint64_t": ("int", "Q"), "size_t": ("int", "Q"),
    "ptrdiff_t": ("int", "q"), "ssize_t": ("int", "q"), "intptr_t": ("int", "q"),
    "uintptr_t": ("int", "Q"), "float": ("float", "f"), "double": ("float", "d"),
    "__half": ("float", "e"), "half": ("float", "e"), "__nv_bfloat16": ("bf16", "H"),
    "CUdeviceptr": ("int", "Q"),
}
_ALIASES = {"unsigned": "unsigned int", "signed": "int", "signed int": "int", "short int": "short",
            "long int": "long", "long long int": "long long", "unsigned short int": "unsigned short",
            "unsigned long int": "unsigned long", "unsigned long long int": "unsigned long long",
            "signed short": "short", "signed long": "long", "signed long long": "long long"}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|class)\b")


class Param:
    """One kernel parameter: index, offset, size, C type (or None), kind and struct code."""

    __slots__ = ("index", "offset", "size", "ctype", "name", "kind", "code")

    def __init__(self, index, offset, size, ctype=None, name=None):
        self.index, self.offset, self.size, self.ctype, self.name = index, offset, size, ctype, name
        kind, code = classify(ctype) if ctype else (None, None)
        if kind is None:  # a struct, an alias we do not know, or no type at all: bytes of its size
            kind, code = ("struct" if ctype else "raw"), f"{size}s"
        self.kind, self.code = kind, code

    def __repr__(self) -> str:
        return (f"Param({self.index}, offset={self.offset}, size={self.size}, "
                f"ctype={self.ctype!r}, name={self.name!r})")

    @property
    def label(self) -> str:
        text = self.ctype or f"<{self.size} bytes>"
        return f"{text} {self.name}" if self.name else text


def classify(ctype: str):
    """(kind, struct code) of a C type, or (None, None) when only its size can say."""
    text = " ".join(_QUALIFIERS.sub(" ", ctype).split())
    if text.endswith(("*", "&", "]")):
        return "ptr", "Q"
    text = text.removeprefix("::").removeprefix("std::")
    return _TYPES.get(_ALIASES.get(text, text), (None, None))


def _natural(kind, code, ctype):
    if kind is None:
        raise LaunchArgumentError(
            f"cannot lay out parameter type {ctype!r} without the driver's parameter info (CUDA "
            "12.4+ driver): declare it as bytes-sized in a signature, or upgrade the driver")
    return struct.calcsize("<" + code)


def build_params(types, layout, names=None) -> tuple[Param, ...]:
    """Parameters from C types and/or the driver's ``[(offset, size)]``.  Raises LaunchArgumentError."""
    names = names or [None] * len(types or layout or ())
    if layout is not None:
        if types is not None and len(types) != len(layout):
            raise LaunchArgumentError(
                f"the declared signature ({', '.join(types)}) has {len(types)} parameters but "
                f"the compiled kernel has {len(layout)}")
        params = tuple(Param(i, off, size, types[i] if types else None, names[i])
                       for i, (off, size) in enumerate(layout))
        for p in params:
            if p.kind not in ("struct", "raw") and struct.calcsize("<" + p.code) != p.size:
                raise LaunchArgumentError(
                    f"parameter {p.index} is declared {p.ctype!r} but the kernel's parameter is "
                    f"{p.size} bytes: the signature does not match the compiled kernel")
        return params
    if types is None:
        raise LaunchArgumentError(
            "the kernel's parameter types are unknown: pass signature='...' to get_kernel, use a "
            "name expression, or use a driver with CUDA 12.4+ (it reports the layout)")
    params, offset = [], 0
    for i, ctype in enumerate(types):
        kind, code = classify(ctype)
        size = _natural(kind, code, ctype)
        offset = (offset + size - 1) // size * size
        params.append(Param(i, offset, size, ctype, names[i]))
        offset += size
    return tuple(params)


def describe_signature(name: str, params) -> str:
    """``saxpy(const float* x, float a, int n)``, for error messages."""
    return f"{name}({', '.join(p.label for p in params)})"


# ---- C types from a signature string, a mangled name, or the source -------------------------------

def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


_TYPE_WORDS = {"int", "char", "short", "long", "float", "double", "unsigned", "signed", "bool",
               "void", "const", "volatile"} | set(_TYPES)


def _strip_name(decl: str) -> tuple[str, str | None]:
    decl = decl.split("=")[0].strip()
    array = decl.endswith("]")
    decl = re.sub(r"\[[^\]]*\]\s*$", "", decl).strip()
    match = re.search(r"([A-Za-z_]\w*)$", decl)
    name = None
    if match and match.group(1) not in _TYPE_WORDS:
        head = decl[:match.start()].rstrip()
        if head and (head[-1] in "*&>" or head[-1].isalnum() or head[-1] == "_"):
            name, decl = match.group(1), head
    decl = " ".join(re.sub(r"\b(__restrict__|__restrict|restrict)\b", " ", decl).split())
    # Words after the last * or & qualify the pointer itself (const, or a macro such as
    # RESTRICT for __restrict__): the parameter is a pointer whatever they are.
    decl = re.sub(r"([*&])\s*(?:[A-Za-z_]\w*\s*)+$", r"\1", decl)
    return decl.replace(" *", "*") + ("*" if array else ""), name


def signature_types(signature: str) -> tuple[list[str], list[str | None]]:
    """C types (and names, where given) of a signature such as ``"const float* x, float, int"``."""
    pairs = [_strip_name(part) for part in _split_top(signature.strip().strip("()"))]
    if pairs == [("void", None)]:
        pairs = []
    return [t for t, _ in pairs], [n for _, n in pairs]


def source_types(source: str, name: str):
    """C types and names of ``__global__`` kernel ``name``'s parameters in ``source``, or None."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    match = re.search(r"__global__[^;{}]*?\b" + re.escape(name) + r"\s*\(", text, flags=re.S)
    if not match:
        return None
    depth, start = 1, match.end()
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return signature_types(text[start:i])
    return None
