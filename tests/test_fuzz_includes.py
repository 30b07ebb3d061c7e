"""The include scanner on generated text: it never raises, stays linear, and finds every include
however it is written (comments, splices, digraphs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from cudaload.compile.includes import search as includes

# "//" or "/*" inside a header name is implementation-defined: not generated.
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}(/[A-Za-z0-9_]{1,6})?\.(h|cuh|hpp)",
                      fullmatch=True)
gap = st.sampled_from(["", " ", "\t", "/**/", "/* x */", " \\\n", "\\\n"])
hashes = st.sampled_from(["#", "%:"])


@settings(max_examples=200, deadline=500)
@given(st.text(max_size=400))
def test_any_text_scans_without_error(text):
    found, computed = includes.scan(text)
    assert isinstance(computed, bool)
    for kind, quoted, name in found:
        assert kind in ("include", "include_next", "probe") and isinstance(quoted, bool)
        assert "\n" not in name


@settings(max_examples=200, deadline=500)
@given(st.lists(st.tuples(hashes, gap, gap, st.booleans(), names, st.booleans()), min_size=1,
                max_size=6),
       st.sampled_from(["", "int x; // trailing\n", "/* block\n comment */\n", 'char c = \'"\';\n',
                        'const char *s = "/*";\n']))
def test_every_include_is_found_however_written(lines, filler):
    text = filler
    want = []
    for mark, before, after, quoted, name, nxt in lines:
        word = "include_next" if nxt else "include"
        operand = f'"{name}"' if quoted else f"<{name}>"
        text += f"{mark}{before}{word}{after}{operand}\n" + filler
        want.append(("include_next" if nxt else "include", quoted, name))
    found, computed = includes.scan(text)
    assert [f for f in found if f[0] != "probe"] == want
    assert not computed


def test_commented_out_and_string_lookalikes_are_no_includes():
    text = ('// #include "a.h"\n/* #include "b.h" */\nconst char *s = "#include \\"c.h\\"";\n'
            'int x; // #include <e.h>\n')
    assert includes.scan(text) == ((), False)
    # A directive-like line inside a raw string is taken as one: keying a path more is safe.
    assert includes.scan('auto r = R"x(\n#include "d.h"\n)x";\n')[0] == (("include", True, "d.h"),)


def test_macro_includes_are_computed_but_a_macro_wrapping_has_include_is_not():
    assert includes.scan("#include HEADER\n")[1]
    assert includes.scan("#if __has_include(HEADER)\n#endif\n")[1]
    found, computed = includes.scan("#define HAS(x) __has_include(x)\n#if HAS(<v.h>)\n#endif\n")
    assert not computed and ("probe", False, "v.h") in found


@pytest.mark.timeout(30)
def test_scanning_is_linear_in_pathological_text():
    # Unterminated comments, raw strings and literals, repeated: a backtracking scanner would
    # take hours on these; this one reads each a few times.
    for chunk in ("/*", 'R"x(', "'", '"', "\\", "#include <", "__has_include(", "%:"):
        found, _ = includes.scan(chunk * 200_000)
        assert isinstance(found, tuple)


# Pieces of directives and of what looks like them, so that generated texts hit every branch.
_pieces = st.sampled_from([
    "#", "%:", "%", "*/", "/*", "//", "\n", "\r\n", " ", "\t", "\\\n", "\\", '"', "<", ">", "(",
    ")", "include", "include_next", "import", "if", "elif", "define", "pragma", "__has_include",
    "__has_include_next", "a.h", "x/y.cuh", "HDR", "_X", "é", "1", "ä2", "defined", "R\"x(",
    ")x\""])


@settings(max_examples=500, deadline=None)
@given(st.lists(_pieces, max_size=40).map("".join))
def test_the_scan_agrees_with_the_regular_expressions_it_replaced(text):
    from tests import _scan_oracle

    assert includes.scan(text) == _scan_oracle.scan(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_the_scan_agrees_with_the_regular_expressions_on_any_text(text):
    from tests import _scan_oracle

    assert includes.scan(text) == _scan_oracle.scan(text)


def test_a_first_scan_of_common_directives_compiles_no_regular_expression():
    """Compiling the scan's patterns cost a fresh process 1.3 ms of its first compile() of a kernel
    found on disk: an include, a pragma and a define need none of them."""
    from tests._support import run_json

    got = run_json("""
        import json, re
        from cudaload.compile.includes import search as includes
        compiled = []
        real = re._compile
        re._compile = lambda *a, **k: compiled.append(a[0]) or real(*a, **k)
        found = includes.scan('#include <cuda_fp16.h>  // __half\\n#pragma once\\n'
                              '#define N 4\\n  #  include "local.h"\\nint x;\\n')
        print(json.dumps({"found": found, "compiled": compiled}))
    """)
    assert got["found"] == [[["include", False, "cuda_fp16.h"], ["include", True, "local.h"]],
                            False]
    assert got["compiled"] == []
