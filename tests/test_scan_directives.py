"""The directive scan (cudaload/compile/includes/_directives.py) line by line: what each spelling of
a
directive, a comment, a splice or a trigraph gives, as (found, computed)."""

from __future__ import annotations

import pytest

from cudaload.compile.includes._directives import scan


def inc(quoted: bool, name: str, kind: str = "include") -> tuple[str, bool, str]:
    return (kind, quoted, name)


def probe(quoted: bool, name: str) -> tuple[str, bool, str]:
    return ("probe", quoted, name)


@pytest.mark.parametrize("text, found, computed", [
    # no directive at all, and a text of digraphs only
    ("int x;\n", (), False),
    ("%:include <a.h>\n", (inc(False, "a.h"),), False),
    # the last line needs no line break; each line ends at its own
    ("#include <a.h>", (inc(False, "a.h"),), False),
    # a directive after an empty first line, or after a line of a carriage return alone
    ("\n#include <a.h>\n", (inc(False, "a.h"),), False),
    ("\n\n%:include <a.h>\n", (inc(False, "a.h"),), False),
    ("\r\n#include <a.h>\n", (inc(False, "a.h"),), False),
    ("int x;\n\n#include <a.h>\n", (inc(False, "a.h"),), False),
    ("#include <a.h>\n#include <b.h>\n", (inc(False, "a.h"), inc(False, "b.h")), False),
    # in the order of the text, whatever the mark
    ("%:include <a.h>\n#include <b.h>\n%:include <c.h>\n",
     (inc(False, "a.h"), inc(False, "b.h"), inc(False, "c.h")), False),
    ("#pragma once\n#include <a.h>\n", (inc(False, "a.h"),), False),
    # the same header twice is two entries: the fast path counts one per word "include"
    ("#include <a.h>\n#include <a.h>\n// what??\n", (inc(False, "a.h"), inc(False, "a.h")),
     False),
    # a mark that does not begin its line is none
    ('int a; # include <a.h>\nconst char *s = "#include <b.h>";\n', (), False),
    # blanks, an empty directive, a line-number directive and a word at the end of the text
    ("#\n#  include <a.h>\n#1 \"x.cu\"\n#endif", (inc(False, "a.h"),), False),
    ("#\f\vinclude\t<a.h>\n", (inc(False, "a.h"),), False),
    # after the end of a block comment: only a mark begins a directive there
    ("/* c */ xinclude <a.h>\n/* c */ xyinclude <b.h>\n/* c */ include <c.h>\n#pragma once\n",
     (), False),
    ("/* c */ %:include <a.h>\n", (inc(False, "a.h"),), False),
    ("/* c */\t#include <a.h>\n/**/#include <b.h>\n", (inc(False, "a.h"), inc(False, "b.h")),
     False),
    ("#x\n/* c */ ", (), False),
    ("#x\n/* c */", (), False),
    # the operand
    ('#include "a.h"\n', (inc(True, "a.h"),), False),
    ("#include MACRO\n", (), True),
    ("#include <a.h\n", (), True),
    ('#include "a.h\n', (), True),
    ("#include_next <a.h>\n#import <b.h>\n", (inc(False, "a.h", "include_next"),
                                               inc(False, "b.h")), False),
    # comments inside a directive go, string literals stay
    ("#include /**/ <a.h> /* x */\n", (inc(False, "a.h"),), False),
    ('#include "a.h" /* x */\n', (inc(True, "a.h"),), False),
    ('#include "a//b.h"\n', (inc(True, "a//b.h"),), False),
    ('#include <a.h> // "x"\n#include <b.h> // x\n', (inc(False, "a.h"), inc(False, "b.h")),
     False),
    ('#if X // __has_include("a.h")\n#endif\n', (), False),
    ("#if X /* __has_include(<a.h>) */\n#endif\n", (), False),
    # a line splice is joined first
    ("#include \\\n<a.h>\n", (inc(False, "a.h"),), False),
    ("#inc\\\r\nlude <a.h>\n", (inc(False, "a.h"),), False),
])
def test_includes_of_each_spelling(text, found, computed):
    assert scan(text) == (found, computed)


@pytest.mark.parametrize("text, found, computed", [
    # only conditions and definitions probe
    ("#pragma once\n#pragma __has_include(<a.h>)\n#error (<b.h>)\n#ifdef F(<c.h>)\n", (), False),
    ("#if __has_include(X)\n#endif\n", (), True),
    ("#elif __has_include_next(X)\n", (), True),
    ("#if __has_include()\n#endif\n", (), False),
    ('#if __has_include(<a.h>) || __has_include("b.h")\n#endif\n',
     (probe(False, "a.h"), probe(True, "b.h"), probe(False, "a.h"), probe(True, "b.h")), False),
    ('#if __has_include("")\n#endif\n', (probe(True, ""),), False),
    # a macro's parameter in a definition is no computed name, and a definition names no header
    ('#define HAS(x) __has_include(x)\n#define H (<d.h>) ("e.h")\n'
     '#if HAS(<v.h>) && HAS("w.h")\n#endif\n', (probe(False, "v.h"), probe(True, "w.h")), False),
    ('#define P __has_include(<d.h>)\n', (probe(False, "d.h"),), False),
    ('#if HAS("w.h")\n#elif HAS(<v.h>)\n#endif\n', (probe(True, "w.h"), probe(False, "v.h")),
     False),
    ("#if defined(X) && Y < 3\n#endif\n", (), False),
])
def test_probes_of_each_spelling(text, found, computed):
    assert scan(text) == (found, computed)


@pytest.mark.parametrize("text, found, computed", [
    # C++14 and older read ??= as #: an include in one standard only, found either way
    ("??=include <a.h>\n", (inc(False, "a.h"),), False),
    ("??=include MACRO\n", (), True),
    ("%:include <a.h>\n??=include <b.h>\n", (inc(False, "a.h"), inc(False, "b.h")), False),
    # ??/ is a backslash there: the include is spliced into the comment in C++14 alone
    ("// x ??/\n#include <b.h>\n", (inc(False, "b.h"),), False),
    ("#include <a.h>\n??=include <a.h>\n", (inc(False, "a.h"),), False),
    ("#include ??<a.h??>\n", (), True),
    # ??) is ] in C++14 alone: a name holding it is both names (NVRTC, C++17 by default, reads
    # it as written: tests/include_regressions/trigraph_looking_include_cxx17.json)
    ('#include "a??).h"\n', (inc(True, "a??).h"), inc(True, "a].h")), False),
    ("#include <a??)b.h>\n", (inc(False, "a??)b.h"), inc(False, "a]b.h")), False),
    ("int a[2] = {1, 2??);\n#include <b.h>\n", (inc(False, "b.h"),), False),
])
def test_trigraphs_are_read_both_ways(text, found, computed):
    assert scan(text) == (found, computed)
