"""Enough of the Itanium C++ ABI to read a mangled name: a kernel's parameter types (the launch
side packs its arguments by them) and the declaration a linker's undefined symbol stands for
(``_Z3fooi`` is ``foo(int)``, named so in a LinkError).  A foundation module: pure text, read by
the compile and the launch side alike.

Back-references let a name of a few hundred characters stand for billions (each type may repeat
the previous one twice), so the text a name may produce is bounded: past ``MAX_CHARS`` the name
is not read, and the kernel's types come from where they do for any name that cannot be read.
"""

from __future__ import annotations

import re

__all__ = ["mangled_types", "demangled", "MAX_CHARS"]

# Characters of text a name may build in all, every candidate for a back-reference included.
# Real kernels' names build a few thousand; templates of CUTLASS and CuTe some hundred thousand.
MAX_CHARS = 1 << 22


_BUILTINS = {"v": "void", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
             "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long",
             "m": "unsigned long", "x": "long long", "y": "unsigned long long", "f": "float",
             "d": "double", "e": "long double", "n": "__int128", "o": "unsigned __int128",
             "w": "wchar_t", "z": "..."}


class _Declarator(str):
    """A function or array type, ``float(float)`` or ``int[4]``, with its parts kept to write a
    pointer or reference to it: ``float (*)(float)``, ``int (&)[4]``."""

    head: str
    tail: str

    def __new__(cls, head: str, tail: str):
        self = super().__new__(cls, head + tail)
        self.head, self.tail = head, tail
        return self

    def pointer(self, symbol: str) -> str:
        return f"{self.head} ({symbol}){self.tail}"


class _Demangler:
    """Enough of the Itanium C++ ABI to read a kernel's parameter types from its mangled name."""

    def __init__(self, text: str):
        self.s, self.i = text, 0
        self.subs: list[str] = []
        self.targs: list[str] = []
        self.made = 0  # characters built so far, bounded by MAX_CHARS

    def built(self, text: str) -> str:
        self.made += len(text)
        if self.made > MAX_CHARS:
            raise ValueError(f"the name stands for more than {MAX_CHARS} characters")
        return text

    def candidate(self, text: str) -> None:
        """Record ``text`` as the next back-reference target."""
        self.subs.append(self.built(text))

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def take(self, n=1):
        out = self.s[self.i:self.i + n]
        self.i += n
        return out

    def number(self) -> int:
        m = re.compile(r"\d+").match(self.s, self.i)
        if not m:
            raise ValueError("number expected")
        self.i = m.end()
        return int(m.group())

    def source_name(self) -> str:
        n = self.number()
        if self.i + n > len(self.s):
            raise ValueError("the name ends inside an identifier")
        return self.take(n)

    def template_args(self) -> list[str]:
        assert self.take() == "I"
        args = []
        while self.peek() != "E":
            if self.peek() == "L":
                self.take()
                kind = self.type()
                if self.peek() == "n":
                    self.take()
                    value = "-" + str(self.number())
                else:
                    value = str(self.number())
                if self.take() != "E":
                    raise ValueError("literal")
                args.append(f"({kind}){value}")
            elif self.peek() == "J":
                raise ValueError("parameter packs are not read")
            else:
                args.append(self.type())
        self.take()
        return args

    def substitution(self) -> str:
        """A back-reference, S_ or S<seq-id>_ (std:: and the other S-abbreviations are not read
        here)."""
        self.take()  # S
        seq = 0
        if self.peek() != "_":
            m = re.compile(r"[0-9A-Z]+").match(self.s, self.i)
            if not m:
                raise ValueError("substitution")
            self.i = m.end()
            seq = int(m.group(), 36) + 1
        self.take()
        return self.subs[seq]

    def unqualified(self) -> str:
        name = self.source_name()
        if self.peek() == "I":
            self.candidate(name)
            name += "<" + ", ".join(self.template_args()) + ">"
        return name

    def nested(self) -> str:
        self.take()  # N
        while self.peek() in ("K", "V", "r"):
            self.take()
        parts = []
        while self.peek() != "E":
            if self.peek(2) == "St":  # std::, not itself a candidate: the names after it are
                self.take(2)
                parts = ["std"]
                continue
            if self.peek() == "S":  # a back-reference, already a candidate: not added again
                parts = [self.substitution()]
                continue
            if self.peek() == "I":
                parts[-1] += "<" + ", ".join(self.template_args()) + ">"
            else:
                parts.append(self.source_name())
            self.candidate("::".join(parts))
        self.take()
        self.subs.pop()  # the whole nested name is a candidate only as a prefix
        return "::".join(parts)

    def function(self) -> _Declarator:
        self.take()  # F
        if self.peek() == "Y":  # extern "C"
            self.take()
        result, params = self.type(), []
        while self.peek() != "E":
            if self.peek(2) in ("RE", "OE"):  # a ref-qualifier of a member function type
                self.take()
                continue
            params.append(self.type())
        self.take()
        return _Declarator(result, f"({', '.join([] if params == ['void'] else params)})")

    def array(self) -> _Declarator:
        self.take()  # A
        size = "" if self.peek() == "_" else str(self.number())
        if self.take() != "_":
            raise ValueError("array bound")
        return _Declarator(self.type(), f"[{size}]")

    def type(self) -> str:
        return self.built(self._type())

    def _type(self) -> str:
        c = self.peek()
        if not c:
            raise ValueError("the name ends inside a type")
        if c in _BUILTINS:
            self.take()
            return _BUILTINS[c]
        if c in "PRO":
            self.take()
            symbol = {"P": "*", "R": "&", "O": "&&"}[c]
            inner = self.type()
            out = inner.pointer(symbol) if isinstance(inner, _Declarator) else inner + symbol
        elif c in "KVr":
            quals = []
            while self.peek() in ("K", "V", "r"):
                quals.append({"K": "const", "V": "volatile", "r": "__restrict__"}[self.take()])
            inner = self.type()
            out = " ".join(q for q in quals if q != "__restrict__") + " " + inner
            out = out.strip()
        elif c == "T":
            self.take()
            index = 0 if self.peek() == "_" else self.number() + 1
            self.take()
            out = self.targs[index]
        elif self.peek(2) == "St":  # std::name: a new candidate, unlike other substitutions
            self.take(2)
            out = "std::" + self.source_name()
            if self.peek() == "I":
                self.candidate(out)
                out += "<" + ", ".join(self.template_args()) + ">"
        elif c == "S":
            out = self.substitution()
            if self.peek() != "I":
                return out
            out += "<" + ", ".join(self.template_args()) + ">"
        elif c == "N":
            name = self.nested()
            self.candidate(name)
            return name
        elif c.isdigit():
            out = self.unqualified()
        elif c == "F":
            out = self.function()
        elif c == "A":
            out = self.array()
        elif self.peek(2) == "Dh":
            self.take(2)
            return "__half"
        else:
            raise ValueError(f"type code {c!r} is not read")
        self.candidate(out)
        return out

    def parse(self) -> tuple[str, list[str] | None]:
        """(the qualified name, its parameter types; None for a variable's name, which has
        none)."""
        if self.take(2) != "_Z":
            raise ValueError("not a mangled name")
        if self.peek() == "N":
            self.take()
            parts: list[str] = []
            while self.peek() != "E":
                if self.peek() == "I":
                    self.candidate("::".join(parts))
                    self.targs = self.template_args()
                else:
                    if parts:
                        self.candidate("::".join(parts))
                    parts.append(self.source_name())
            self.take()
            name = "::".join(parts)
        else:
            name = self.source_name()
            if self.peek() == "I":
                self.candidate("name")
                self.targs = self.template_args()
        if self.targs:
            name += "<" + ", ".join(self.targs) + ">"
            self.type()  # a function template's mangled name carries its return type
        elif self.i == len(self.s):
            return name, None  # no parameter list, not even (void): a variable
        params = []
        while self.i < len(self.s):
            params.append(self.type())
        return name, [] if params == ["void"] else [str(p) for p in params]


def _read(name: str) -> tuple[str, list[str] | None] | None:
    if not name.startswith("_Z"):
        return None
    try:
        return _Demangler(name).parse()
    except (ValueError, IndexError, AssertionError, RecursionError):
        return None


def mangled_types(name: str):
    """Parameter C types from an Itanium-mangled name, or None when it cannot be read."""
    read = _read(name)
    return None if read is None else read[1] or []


def demangled(name: str) -> str | None:
    """The declaration the Itanium-mangled ``name`` stands for: ``foo(int)`` for ``_Z3fooi``,
    ``ns::x`` for the variable ``_ZN2ns1xE``; None when it is no mangled name or cannot be
    read."""
    read = _read(name)
    if read is None:
        return None
    qualified, params = read
    return qualified if params is None else f"{qualified}({', '.join(params)})"
