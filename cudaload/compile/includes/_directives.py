"""The includes and ``__has_include`` probes that a CUDA text's preprocessor directives name.

A directive is a line whose first character after blanks is ``#`` (or the digraph ``%:``), or
the rest of a line after the end of a block comment (``/* ... */ #include "a.h"``).  Its words are
read after line splices are joined and its comments removed.  A directive inside a block comment
or a raw string is taken as one, which can only key more (see includes.py).

The common lines (``#include <x>``, ``#pragma``, ``#define N 4``) are read with ``str`` methods:
compiling the regular expressions of the rarer cases costs 0.15-0.3 ms each in a fresh process,
and they were most of the first ``compile()`` of a kernel found on disk (1.3 ms of 2).  Each is
compiled the first time a line needs it.

:func:`only_toolchain` answers for the common kernel, whose includes are all ``<...>`` with no user
folder: it reads nothing outside the toolchain (:data:`NOTHING_READ`, an :class:`Inputs` as
includes.py's search gives one), and that search is not needed, nor imported.

Imports of cudaload: options (the include folders an option list names).
"""

from __future__ import annotations

import os

from ..options import include_inputs

TYPE_CHECKING = False  # typing and re are not imported: see the module docstring
if TYPE_CHECKING:
    import re

__all__ = ["scan", "only_toolchain", "Inputs", "NOTHING_READ"]

_INCLUDES = ("include", "include_next", "import")
# What may stand before a directive's "#" and between its words: EDG takes the form feed and the
# vertical tab there as a blank, and a carriage return that ends no line (CR alone) as one too.
_BLANKS = " \t\f\v\r"
_CLOSING = {'"': '"', "<": ">"}  # what ends a header name that begins with the key
_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")

_SOURCES = {
    # Within a directive's line: comments go, string literals stay (a "/*" in one is no comment).
    "comment_or_string": (r'//.*|/\*(?:.*?\*/|.*)|"(?:[^"\\]|\\.)*"?', "S"),
    "has_include": (
        r'__has_include(_next)?[ \t\f\v\r]*\([ \t\f\v\r]*(?:"([^"\n]*)"|<([^>\n]*)>|([^)\n]*))', ""),
    # A header name given to any macro in a condition (CCCL's _CCCL_HAS_INCLUDE(<x>) wraps
    # __has_include): taken as a probe too, which at worst keys one more path.
    "condition_name": (r'\([ \t\f\v\r]*(?:"([^"\n]+)"|<([^>\n]+)>)[ \t\f\v\r]*\)', ""),
    "trigraph": (r"\?\?([=/'()!<>-])", ""),
    # A backslash and blanks before a line break, which some preprocessors take as a splice.
    "spaced_splice": (r"\\[ \t\f\v]+\r?\n", ""),
}
_TRIGRAPHS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{", ">": "}",
              "-": "~"}


_compiled: dict[str, re.Pattern] = {}  # name -> its pattern, compiled when first needed


def _pattern(name: str) -> re.Pattern:
    found = _compiled.get(name)
    if found is None:
        import re  # deferred: compiled only for a text that needs it (see the module docstring)

        source, flag = _SOURCES[name]
        found = _compiled[name] = re.compile(source, getattr(re, flag) if flag else 0)
    return found


def _mark_length(text: str, at: int) -> int:
    """1 for ``#`` at ``at``, 2 for ``%:``, 0 for anything else."""
    if text.startswith("#", at):
        return 1
    return 2 if text.startswith("%:", at) else 0


def _directive_lines(text: str) -> list[str]:
    """What follows the mark of each directive, in order: first those that begin a line, then
    those that follow the end of a block comment.  Only the marks are visited, not every line:
    a header of thousands of lines has a few hundred directives."""
    end_of_text = len(text)

    def line_end(at: int) -> int:
        end = text.find("\n", at)
        return end_of_text if end == -1 else end

    starts = []
    for mark in ("#", "%:"):
        at = text.find(mark)
        while at != -1:
            if not text[text.rfind("\n", 0, at) + 1:at].strip(_BLANKS):  # first on its line
                end = line_end(at)
                starts.append((at, text[at + len(mark):end]))
                at = text.find(mark, end)
            else:
                at = text.find(mark, at + 1)
    starts.sort()  # one mark per line at most: the positions differ
    lines = [line for _at, line in starts]
    at = text.find("*/")
    while at != -1:
        after = at + 2
        while after < end_of_text and text[after] in _BLANKS:
            after += 1
        size = _mark_length(text, after)
        if size:
            end = line_end(after)
            lines.append(text[after + size:end])
            at = text.find("*/", end)
        else:
            at = text.find("*/", at + 1)
    return lines


def _uncomment(line: str) -> str:
    if "/*" not in line:
        if "//" not in line:
            return line  # only string literals could match, and they stay as they are
        if '"' not in line:
            return line[:line.find("//")] + " "  # no literal to hold the "//": a comment
    return _pattern("comment_or_string").sub(
        lambda m: " " if m.group(0)[0] == "/" else m.group(0), line)


def _word(line: str) -> tuple[str, str] | None:
    """(directive word, the rest after blanks) of a directive line, or None without a word."""
    line = line.lstrip(_BLANKS)
    if not line or line[0] not in _FIRST:
        return None
    end = 1
    while end < len(line) and (line[end].isalnum() or line[end] == "_"):  # as a regex's \w
        end += 1
    return line[:end], line[end:].lstrip(_BLANKS)


def _operand(rest: str) -> tuple[bool, str] | None:
    """(quoted, name) of ``"name"`` or ``<name>`` opening ``rest``, or None."""
    close = _CLOSING.get(rest[:1])
    if close is None:
        return None
    end = rest.find(close, 1)
    if end == -1 or "\n" in rest[1:end]:
        return None
    return close == '"', rest[1:end]


# A header shared by many programs is scanned once: text -> scan(text), the most recently used
# last, at most _SCANS of them (a dict rather than functools.lru_cache: importing functools, and
# the collections it imports, cost a fresh process's first compile 1-2 ms).
_scans: dict[str, tuple[tuple[tuple[str, bool, str], ...], bool]] = {}
_SCANS = 256


def scan(text: str) -> tuple[tuple[tuple[str, bool, str], ...], bool]:
    """The includes and probes of ``text``: ([(kind, quoted, name)], computed), where kind is
    "include", "include_next" or "probe" (``__has_include``), and computed says whether some
    include or probe is named by a macro.

    Trigraphs are replaced before anything else where the language standard has them (C++14 and
    older) and not where it does not (C++17 on): ``??=include`` is an include in one, and a
    ``// ...??/`` line splices the next line into its comment in one only.  The scan does not know
    the standard, so a text with trigraphs is scanned both ways and the union is taken."""
    found = _scans.pop(text, None)
    if found is None:
        found = _scanned(text)
        if len(_scans) >= _SCANS:
            try:  # the least recently used goes (another thread may have taken it meanwhile)
                del _scans[next(iter(_scans))]
            except (KeyError, StopIteration, RuntimeError):
                pass
    _scans[text] = found
    return found


def _scanned(text: str) -> tuple[tuple[tuple[str, bool, str], ...], bool]:
    found, computed = _scan(text)
    if "??" not in text:
        return found, computed
    replaced = _pattern("trigraph").sub(lambda m: _TRIGRAPHS[m.group(1)], text)
    if replaced == text:
        return found, computed
    more, more_computed = _scan(replaced)
    return tuple(dict.fromkeys(found + more)), computed or more_computed


def _scan(text: str) -> tuple[tuple[tuple[str, bool, str], ...], bool]:
    if "\\" in text:
        text = text.replace("\\\r\n", "").replace("\\\n", "")
    if "#" not in text and "%:" not in text:
        return (), False
    found: list[tuple[str, bool, str]] = []
    computed = False
    for line in _directive_lines(text):
        directive = _word(_uncomment(line))
        if directive is None:
            continue
        word, rest = directive
        if word in _INCLUDES:
            operand = _operand(rest)
            if operand is None:
                computed = True
                continue
            found.append(("include_next" if word == "include_next" else "include", *operand))
            continue
        if word not in ("if", "elif", "define"):
            continue
        if "__has_include" in rest:
            for probe in _pattern("has_include").finditer(rest):
                if probe.group(4) is not None:
                    # __has_include(_X) inside a macro's definition names its parameter; used
                    # anywhere else, the name is computed.
                    computed = computed or (word != "define" and bool(probe.group(4).strip()))
                    continue
                quoted = probe.group(2) is not None
                found.append(("probe", quoted, probe.group(2) if quoted else probe.group(3)))
        if word != "define" and "(" in rest and ('"' in rest or "<" in rest):
            for probe in _pattern("condition_name").finditer(rest):
                quoted = probe.group(1) is not None
                found.append(("probe", quoted, probe.group(1) if quoted else probe.group(2)))
    return tuple(found), computed


def only_toolchain(source: str, headers, options) -> tuple[bool, bool] | None:
    """(includes_known, sure) for a program whose ``source`` makes NVRTC read no file outside the
    toolchain's header folders: no in-memory headers, no user include folder or pre-included file
    in ``options``, and only ``<...>`` includes, each looked up in the toolchain's folders alone,
    which its identity covers (most kernels).  ``includes_known``: no include is named by a macro;
    ``sure``: see :func:`_surely_only_toolchain`.  None for any other program: includes.resolve
    follows NVRTC's search then."""
    if headers:
        return None
    user_folders, pre_included = include_inputs(options)
    if user_folders or pre_included:
        return None
    found, computed = scan(source)
    if any(quoted or os.path.isabs(name) for _kind, quoted, name in found):
        return None
    return not computed, _surely_only_toolchain(source, found)


def _surely_only_toolchain(source: str, found) -> bool:
    """Whether ``source``, whose scan ``found`` only ``<...>`` includes (and there are no user
    folders, pre-included files or in-memory headers), can make NVRTC read nothing else: each
    word "include" in it is one the scan took, and nothing could spell a directive that the
    word does not show (a trigraph, a universal character name, a backslash and blanks before a
    line break, which some preprocessors take as a line splice)."""
    if "??" in source or "\\u" in source or "\\U" in source or "import" in source:
        return False
    if "\\" in source:
        if _pattern("spaced_splice").search(source):
            return False
        source = source.replace("\\\r\n", "").replace("\\\n", "")
    return source.count("include") == sum(kind != "probe" for kind, _q, _n in found) \
        and "__has_include" not in source


class Inputs:
    """What includes.resolve found (what a program reads, and how to know it still holds).

    ``path_states``: ((path, state), ...) sorted, every path outside the toolchain that the search
    looked at; state is the sha256 of a file read, or "absent", "dir", "error:ENAME".
    ``stamps``: what a later call checks, cheaply, to know the path states still hold (with
    includes.still_valid): the current folder and each path's ``stat``; empty when nothing outside
    the toolchain was looked at.
    ``includes_known``: False when an include named by a macro was found anywhere.
    ``sure``: True only where NVRTC can read no file outside the toolchain whatever the scan
    missed (see only_toolchain): no trace of what it read is needed then.
    """

    __slots__ = ("path_states", "stamps", "includes_known", "sure")

    def __init__(self, path_states, stamps, includes_known, sure=False):
        self.path_states, self.stamps, self.includes_known = path_states, stamps, includes_known
        self.sure = sure


# What a program that reads no file outside the toolchain reads, by (includes_known, sure): see
# only_toolchain.
NOTHING_READ = {(known, sure): Inputs((), (), known, sure)
                for known in (False, True) for sure in (False, True)}
