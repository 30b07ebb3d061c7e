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

from .._base._demangle import mangled_types
from ..errors import LaunchArgumentError

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
    # a conditional node's handle (graph_nodes.ConditionalHandle), set by cudaGraphSetConditional
    "cudaGraphConditionalHandle": ("int", "Q"), "CUgraphConditionalHandle": ("int", "Q"),
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
    if text.endswith(("*", "&", "]")) or _pointer_declarator(text):
        return "ptr", "Q"
    text = text.removeprefix("::").removeprefix("std::")
    return _TYPES.get(_ALIASES.get(text, text), (None, None))


def _pointer_declarator(text: str) -> bool:
    """Whether ``text`` is a pointer (or reference) written around its declarator, as function
    pointers are: ``float (*)(float)``, ``int (&)[4]``; not a template argument's."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth <= 0:
            return text[i + 1:i + 3].lstrip()[:1] in ("*", "&", "^")
    return False


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
    made: list[Param] = []
    offset = 0
    for i, ctype in enumerate(types):
        kind, code = classify(ctype)
        size = _natural(kind, code, ctype)
        offset = (offset + size - 1) // size * size
        made.append(Param(i, offset, size, ctype, names[i]))
        offset += size
    return tuple(made)


def describe_signature(name: str, params) -> str:
    """``saxpy(const float* x, float a, int n)``, for error messages."""
    return f"{name}({', '.join(p.label for p in params)})"


# ---- C types from a signature string, a mangled name, or the source -------------------------------
# Each reader is one left-to-right pass over tokens, or a regex without nested quantifiers: the
# text comes from users and from sources of any size, and a backtracking pattern once took seconds
# for a function-pointer parameter with a name of 26 characters (and never ended for 40).

_TOKEN = re.compile(r"[^\W\d]\w*|\d[\w.]*|::|\S")
_RESTRICT = frozenset({"__restrict__", "__restrict", "restrict"})
_POINTER_QUALIFIERS = frozenset({"const", "volatile"}) | _RESTRICT
# Words that name no type by themselves: "const Foo" declares no parameter named Foo.
_SPECIFIERS = frozenset({"const", "volatile", "struct", "class", "union", "enum", "typename"})
_OPEN, _CLOSE = {"(": ")", "[": "]"}, {")": "(", "]": "["}


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
    return [p.strip() for p in parts]


_TYPE_WORDS = {"int", "char", "short", "long", "float", "double", "unsigned", "signed", "bool",
               "void", "const", "volatile"} | set(_TYPES)


def _is_word(token: str) -> bool:
    return token[0].isalnum() or token[0] == "_"


def _pairs(tokens: list[str]) -> list[int | None]:
    """For each ( or [ the index of its closing token and the reverse; None where unmatched."""
    pair: list[int | None] = [None] * len(tokens)
    stack: list[int] = []
    for i, token in enumerate(tokens):
        if token in _OPEN:
            stack.append(i)
        elif token in _CLOSE and stack and tokens[stack[-1]] == _CLOSE[token]:
            j = stack.pop()
            pair[i], pair[j] = j, i
    return pair


def _declarator(tokens: list[str], pair, lo: int, hi: int):
    """(open, close) of the parenthesised declarator in tokens[lo:hi], as in ``float (*f)(float)``
    or ``int (&a)[4]``, or None.  Groups it passes over are skipped whole, so a pass is linear."""
    depth, i = 0, lo
    while i < hi:
        token = tokens[i]
        if token == "<":
            depth += 1
        elif token == ">":
            depth -= 1
        elif token in _OPEN and pair[i] is not None:
            if depth <= 0 and token == "(" and tokens[i + 1] in ("*", "&", "^"):
                return i, pair[i]
            i = pair[i]
        i += 1
    return None


def _render(tokens) -> str:
    """Tokens as a C type is written: ``const float* const``, ``W<int, 3>``, ``void (*)(int)``."""
    out, prev = [], ""
    for token in tokens:
        if prev and (_is_word(token) and (_is_word(prev) or prev in "*&")
                     or token == "(" and _is_word(prev)):
            out.append(" ")
        out.append(token)
        if token == ",":
            out.append(" ")
            token = ""
        prev = token
    return "".join(out)


def _strip_name(decl: str) -> tuple[str, str | None]:
    """(C type, parameter name or None) of one parameter declaration, default value dropped."""
    tokens = [t for t in _TOKEN.findall(decl.split("=")[0]) if t not in _RESTRICT]
    pair = _pairs(tokens)
    found = _innermost_declarator(tokens, pair)
    if found is not None:
        return _strip_declarator_name(tokens, found)
    array = _drop_array_bounds(tokens, pair)
    name = tokens.pop() if _ends_in_name(tokens) else None
    _drop_pointer_qualifiers(tokens)
    return _render(tokens) + ("*" if array else ""), name


def _innermost_declarator(tokens: list[str], pair):
    """(open, close) of the innermost parenthesised declarator, which names the parameter, as in
    ``void (*(*f)(int))(float)``; None when there is none."""
    group, found = (0, len(tokens)), None
    while True:
        inner = _declarator(tokens, pair, group[0] + (found is not None), group[1])
        if inner is None:
            return found
        group = found = inner


def _strip_declarator_name(tokens: list[str], found) -> tuple[str, str | None]:
    """The type and name of a parameter declared around its declarator ``found``: ``(*f)``."""
    close, name = found[1], None
    if _is_word(tokens[close - 1]) and tokens[close - 1] not in _POINTER_QUALIFIERS:
        name, close = tokens[close - 1], close - 1
    start = close
    while tokens[start - 1] in _POINTER_QUALIFIERS:  # the parameter's own: (* const f)
        start -= 1
    return _render(tokens[:start] + tokens[found[1]:]), name


def _drop_array_bounds(tokens: list[str], pair) -> bool:
    """Remove the trailing ``[...]`` groups (``float a[4][4]``); whether there were any: an
    array parameter is a pointer."""
    array = False
    while tokens and tokens[-1] == "]" and pair[len(tokens) - 1] is not None:
        del tokens[pair[len(tokens) - 1]:]
        array = True
    return array


def _ends_in_name(tokens: list[str]) -> bool:
    """Whether the last token names the parameter: a word that is no type word, after a type."""
    if len(tokens) < 2:
        return False
    last, before = tokens[-1], tokens[-2]
    return _is_word(last) and not last[0].isdigit() and last not in _TYPE_WORDS \
        and (before in ("*", "&", ">") or _is_word(before)) \
        and any(t not in _SPECIFIERS for t in tokens[:-1])


def _drop_pointer_qualifiers(tokens: list[str]) -> None:
    """Words after the last * or & qualify the pointer itself (const, or a macro such as RESTRICT
    for __restrict__): the parameter is a pointer whatever they are."""
    end = len(tokens)
    while end and _is_word(tokens[end - 1]):
        end -= 1
    if end < len(tokens) and end and tokens[end - 1] in ("*", "&"):
        del tokens[end:]


def _unwrapped(text: str) -> str:
    """``text`` without one pair of parentheses around all of it: ``(float, int)``."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                return text[1:-1] if i == len(text) - 1 else text
    return text


def signature_types(signature: str) -> tuple[list[str], list[str | None]]:
    """C types (and names, where given) of a signature such as ``"const float* x, float, int"``.

    Raises LaunchArgumentError (a TypeError) when ``signature`` is not a str, or names a
    parameter without a type (``"int, = 4"``)."""
    if not isinstance(signature, str):
        raise LaunchArgumentError(f"signature must be a str such as 'const float* x, int n', not "
                                  f"{type(signature).__name__}")
    parts = _split_top(_unwrapped(signature.strip()))
    # "" and "void" declare no parameter; an empty one between commas ("float *x,, int") is no
    # declaration, and dropping it would shift every later argument onto the wrong parameter
    pairs = [] if parts in ([""], ["void"]) else [_strip_name(part) for part in parts]
    for i, (ctype, _) in enumerate(pairs):
        if not ctype:
            raise LaunchArgumentError(f"parameter {i} of the signature {signature[:80]!r} has no "
                                      "type: write each as a C declaration, e.g. 'const float* x'")
    return [t for t, _ in pairs], [n for _, n in pairs]


def _without_comments(source: str) -> str:
    parts, i = [], 0
    while True:
        start = source.find("/", i)
        while start >= 0 and source[start + 1:start + 2] not in ("/", "*"):
            start = source.find("/", start + 1)
        if start < 0:
            parts.append(source[i:])
            return "".join(parts)
        parts += [source[i:start], " "]
        if source[start + 1] == "/":
            i = source.find("\n", start)
        else:
            i = source.find("*/", start + 2)
            i = -1 if i < 0 else i + 2
        if i < 0:  # the comment runs to the end
            return "".join(parts)


def source_types(source: str, name: str):
    """C types and names of ``__global__`` kernel ``name``'s parameters in ``source``, or None."""
    if not name:
        return None
    text = _without_comments(source)
    # The first "name (" after a __global__ with no ; { or } between them: the kernel's declarator.
    seen, start = False, None
    for match in re.finditer(r"[;{}]|\b__global__\b|\b" + re.escape(name) + r"\s*\(", text):
        token = match.group()
        if token == "__global__":
            seen = True
        elif len(token) == 1 and token in ";{}":
            seen = False
        elif seen:
            start = match.end()
            break
    if start is None:
        return None
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            try:
                return signature_types(text[start:i])
            except LaunchArgumentError:  # not a declaration this reader understands
                return None
    return None
