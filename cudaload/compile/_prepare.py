"""What a Program's constructor arguments become: checked, normalised and digested, remembered.

Host packages that build kernel text per call (as MXNet's operators do) make the same Program
again and again, so the work of making one (the checks, the option list, the sha256 of the source)
is remembered by the arguments as given, in a bounded table: a Program made again with equal
arguments costs a dictionary lookup.  Arguments that are not hashable (a bytearray source, a list
inside the options) are prepared afresh each time.  Only equal arguments share a result, and
equal arguments give equal results: define values are compared with their types (``4`` and
``4.0`` are equal in Python but become ``-DN=4`` and ``-DN=4.0``).

Options that name a file NVRTC opens (a time trace, a precompiled header) are checked each time a
Program is made with them, never remembered: the check is of the file system as it is then.

Every digest of cudaload's keys is made here (:func:`digest`, :data:`sha256`).  ``hashlib`` loads
OpenSSL's library when first imported: 1-3 ms, a few percent of a small kernel's first compile in
a fresh process, where everything hashed (the program, its key, its entry) is a few kilobytes.
The interpreter's own sha256 needs no library but is about 12 times slower (8 ms per MiB against
0.7), so it hashes only the first :data:`BUDGET` bytes a process hashes (about what importing
hashlib costs); after that, and for any larger piece, hashlib's.  Both give the same digest.

Imports of cudaload: _option_files (for options that name a file), options.  A Program made
in a fresh process imports nothing else (neither ``collections`` nor ``re``): 5 ms at most.
"""

from __future__ import annotations

import os
import _thread
from _operator import itemgetter  # operator's own; the operator module costs 0.3 ms

from . import options as _options

TYPE_CHECKING = False  # typing itself is not imported: it costs more than hashing does
if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = ["Prepared", "prepare", "digest", "sha256", "BUDGET", "Keywords", "cxx_keywords"]

_ARCH_OPTIONS = ("-arch", "--gpu-architecture", "--gpu-name")
# The remembered results hold their source text: bounded in count and in characters.
MAX_ENTRIES = 1024
MAX_CHARS = 16 << 20


class Prepared:
    """A Program's checked arguments: source, name, headers as (name, text) pairs,
    include_paths, options, name_expressions; the parts the digest covers, the digest, the
    characters of source and headers (what the memory cache counts), whether nvJitLink links it,
    ``asked``, an :class:`Asked` that every Program made with these arguments shares, and the
    code type ("c++", "ptx" or "nvvm"), decided here once.  Read by field name (Program's
    properties are attrgetters of these names), never changed."""

    __slots__ = ("source", "name", "headers", "include_paths", "options", "name_expressions",
                 "parts", "digest", "chars", "lto", "asked", "code_type")

    def __init__(self, source, name, headers, include_paths, options, name_expressions, parts,
                 digest, chars, lto, asked, code_type="c++"):
        self.source, self.name, self.headers, self.include_paths = source, name, headers, \
            include_paths
        self.options, self.name_expressions, self.parts, self.digest = options, \
            name_expressions, parts, digest
        self.chars, self.lto, self.asked, self.code_type = chars, lto, asked, code_type


class Asked:
    """The request a Program made with these arguments was asked last, shared by all of them:
    ``last`` is (arch, output, memory key), set as one tuple so a thread never reads half of one.
    A Program made again and asked as the last one was then finds its memory key without hashing
    anything (Program.compile)."""

    __slots__ = ("last",)

    def __init__(self):
        self.last = NOTHING_ASKED


class _Remembered:
    """The results remembered for frozen arguments, least recently used first, bounded in count
    and in characters; ``newest`` is the one found last (the most recent in ``table`` then)."""

    __slots__ = ("table", "chars", "newest", "lock")

    def __init__(self):
        self.table: dict = {}  # insertion order is use order: a use moves its entry to the end
        self.chars = 0
        self.newest = None
        self.lock = _thread.allocate_lock()


_UNHASHABLE = object()
NOTHING_ASKED = (_UNHASHABLE, None, None)  # no arch is this object
_remembered = _Remembered()


def _frozen(value, kind: str = ""):
    """``value`` in a hashable form that only equal arguments share, or _UNHASHABLE."""
    if value is None or value.__class__ is tuple:
        return value
    if value.__class__ is list:
        return tuple(value)
    if value.__class__ is dict:  # with the types: 1 and True are equal keys, but "1" != "True"
        if kind == "defines":
            return tuple((k.__class__, k, v.__class__, v) for k, v in value.items())
        return tuple((k.__class__, k, v) for k, v in value.items())
    return _UNHASHABLE


# Where prepare()'s memo holds the arguments it froze: options, headers, include_paths,
# name_expressions, std and defines.
_FROZEN = slice(3, 9)


def prepare(source, name, options, headers, include_paths, name_expressions, std, defines,
            fast_math, line_info, debug, max_registers, relocatable, lto) -> Prepared:
    """The prepared arguments of a Program, given in the order of its keywords.  Raises what
    :func:`_prepare` raises."""
    # The defaults ((), None) are taken as they are: building the key must cost little, so it
    # is one tuple display (unpacking a tuple of the frozen arguments into it cost a new Program
    # a tenth of its time); _FROZEN names where those arguments are in it.
    memo: tuple = (source, name.__class__, name,
                   options if options.__class__ is tuple else _frozen(options),
                   headers if headers is None else _frozen(headers),
                   include_paths if include_paths.__class__ is tuple else _frozen(include_paths),
                   name_expressions if name_expressions.__class__ is tuple
                   else _frozen(name_expressions),
                   std, defines if defines is None else _frozen(defines, "defines"),
                   # max_registers with its type: True == 1, and True is refused where 1 is not.
                   fast_math, line_info, debug, max_registers.__class__, max_registers,
                   relocatable, lto)
    remembered = _remembered
    try:
        found = remembered.table.get(memo)
    except TypeError:  # something unhashable inside
        found = memo = None  # type: ignore[assignment]  # no memo for this call
    if found is not None:
        # The same Program made again (the common case) is the most recent entry already.
        # (Threads racing here can leave it one place off: which entry is dropped first.)
        if found is not remembered.newest:
            table = remembered.table
            try:
                table[memo] = table.pop(memo)  # now the most recent
            except KeyError:  # dropped by another thread meanwhile
                pass
            remembered.newest = found
        return found
    made = _prepare(source, name, options, headers, include_paths, name_expressions, std,
                    defines, (fast_math, line_info, debug, max_registers, relocatable, lto))
    # Options that name a file are checked at each Program (the file may go): never remembered.
    if memo is not None and _UNHASHABLE not in memo[_FROZEN] \
            and not _options.names_files(made.options):
        _remember(memo, made)
    return made


def _remember(memo, made: Prepared) -> None:
    remembered = _remembered
    with remembered.lock:
        if memo in remembered.table:
            return
        remembered.table[memo] = made
        remembered.chars += made.chars
        while remembered.table and (len(remembered.table) > MAX_ENTRIES
                                    or remembered.chars > MAX_CHARS):
            oldest = next(iter(remembered.table))
            remembered.chars -= remembered.table.pop(oldest).chars


def forget() -> None:
    """Forget every remembered result."""
    remembered = _remembered
    with remembered.lock:
        remembered.table.clear()
        remembered.chars = 0


def _prepare(source, name, options, headers, include_paths, name_expressions, std, defines,
             flags) -> Prepared:
    """Raises ValueError/TypeError for malformed arguments (source or headers that are not UTF-8,
    a name or header name that is no str, options without their value, an architecture given as
    an option, a file option NVRTC could not use)."""
    fast_math, line_info, debug, max_registers, relocatable, lto = flags
    source = _text(source, "source")
    name = _name(name, "name", "name='kernel.cu'")
    if headers is not None and not hasattr(headers, "items"):
        raise TypeError(f"headers must map names to source text, e.g. {{'util.h': '...'}}, "
                        f"not {type(headers).__name__}")
    pairs = tuple((_name(k, "a header's name", "headers={'util.h': '...'}"),
                   _text(v, f"header {k}")) for k, v in (headers or {}).items())
    if isinstance(include_paths, (str, bytes, os.PathLike)):
        raise TypeError(f"include_paths must be a sequence of folders, e.g. "
                        f"({os.fspath(include_paths)!r},), not one path")
    include_paths = tuple(os.fspath(p) for p in include_paths)
    built = _options.build(options, std=std, defines=defines, include_paths=include_paths,
                           fast_math=fast_math, line_info=line_info, debug=debug,
                           max_registers=max_registers, relocatable=relocatable, lto=lto)
    if any(o.split("=")[0] in _ARCH_OPTIONS or o.startswith("-arch") for o in built):
        raise ValueError("give the architecture to compile(arch=...), not as an option")
    if _options.names_files(built):
        from .includes._option_files import check_files  # deferred: only such options need it

        check_files(built)
    names = _options.strings(name_expressions, "name_expressions", "('scale<float>',)")
    # What NVRTC reads besides this text (files it includes, and whether they exist) is looked
    # up at compile(), where NVRTC looks: the current folder and the files may change after the
    # Program is made.  This digest covers the Program's own inputs.
    parts = ("program", name, source, *[x for item in sorted(pairs) for x in item],
             "options", *built, "names", *names, "files")
    chars = len(source) + sum(len(k) + len(v) for k, v in pairs)
    return Prepared(source, name, pairs, include_paths, built, names, parts, digest(*parts),
                    chars, _options.links(built), Asked())


def _name(value, what: str, example: str) -> str:
    """A file name NVRTC is given: str only (``str(5)`` would name a file "5" without a word);
    no NUL, at which NVRTC would cut it short."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__} ({value!r}): give "
                        f"the file name NVRTC reports, e.g. {example}")
    if "\0" in value:
        raise ValueError(f"{what} ({value!r}) contains a NUL character, which would cut it short; "
                         "remove it")
    return value


def _text(value, what: str) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"the {what} must be CUDA C++ source as str (or UTF-8 bytes), "
                        f"not {type(value).__name__}")
    try:
        return bytes(value).decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"the {what} is not UTF-8 text (byte 0x{value[exc.start]:02x} at offset "
                         f"{exc.start}): pass CUDA C++ source as str, or as UTF-8 bytes") from None


def digest(*parts: str | bytes) -> bytes:
    """sha256 of ``parts``, each length-prefixed so that no two splits collide."""
    hashed = sha256(size=sum(map(len, parts)))
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hashed.update(len(data).to_bytes(8, "little"))
        hashed.update(data)
    return hashed.digest()


# ---- sha256 -----------------------------------------------------------------------------------

BUDGET = 256 << 10


def _builtin_sha256() -> Callable[..., Any] | None:
    # The interpreter's own module: _sha256 up to CPython 3.11, _sha2 from 3.12; None in an
    # interpreter built without it.
    for name in ("_sha256", "_sha2"):
        try:
            return __import__(name).sha256  # no importlib: its import costs more
        except ImportError:
            continue
    return None


class _Hasher:
    """Which sha256 to use: the interpreter's while the budget lasts, then hashlib's for good."""

    def __init__(self) -> None:
        self.builtin = _builtin_sha256()
        self.left = BUDGET if self.builtin is not None else 0  # bytes the builtin may still hash
        self.openssl: Callable[..., Any] | None = None

    def __call__(self, data: bytes = b"", size: int | None = None) -> Any:
        size = len(data) if size is None else size
        if size < self.left:
            self.left -= size
            return self.builtin(data)  # type: ignore[misc]  # left > 0 only with a builtin
        if self.openssl is None:
            import hashlib  # deferred: only this path needs it

            self.openssl, self.left = hashlib.sha256, 0
        return self.openssl(data)


# sha256(data=b"", size=None): a sha256 hash object fed ``data``, for about ``size`` bytes in
# all (default: those of ``data``).
sha256 = _Hasher()


class Keywords(tuple):
    """Program's CUDA C++ keywords as given, for a program of another code type (PTX, NVVM IR),
    which takes a few of them and refuses the others (:func:`cxx_keywords`): frozen, a name for
    each.  ``std`` is not among them: its default is no choice of the caller's."""

    __slots__ = ()
    # In the order cxx_keywords names those given
    _fields = ("headers", "include_paths", "defines", "name_expressions", "fast_math",
               "relocatable", "lto", "line_info", "debug", "max_registers")

    def __new__(cls, *, headers, include_paths, defines, name_expressions, fast_math,
                relocatable, lto, line_info, debug, max_registers):
        return tuple.__new__(cls, (headers, include_paths, defines, name_expressions, fast_math,
                                   relocatable, lto, line_info, debug, max_registers))

    headers = property(itemgetter(0))
    include_paths = property(itemgetter(1))
    defines = property(itemgetter(2))
    name_expressions = property(itemgetter(3))
    fast_math = property(itemgetter(4))
    relocatable = property(itemgetter(5))
    lto = property(itemgetter(6))
    line_info = property(itemgetter(7))
    debug = property(itemgetter(8))
    max_registers = property(itemgetter(9))


def cxx_keywords(keywords: Keywords, taken) -> list[str]:
    """The names of Program's ``keywords`` given a value other than their default, except
    those ``taken``: the CUDA C++ ones, which a program of another code type refuses."""
    return [k for k, v in zip(keywords._fields, keywords) if k not in taken
            and v not in (None, False) and v != () and v != [] and v != {}]
