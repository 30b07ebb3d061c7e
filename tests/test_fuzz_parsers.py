"""Property tests of the parsers and option building: every input gives the documented error type
or a correct result, each example within a deadline (the readers are linear; a backtracking one
would blow it)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from cudaload._base import _demangle
from cudaload.launch import signature

from cudaload.compile import options  # noqa: E402
from cudaload.errors import LaunchArgumentError  # noqa: E402

pytestmark = pytest.mark.timeout(60)
# Bounded for a CI of two cores: the whole file runs in a few seconds.
FUZZ = settings(max_examples=150, deadline=timedelta(milliseconds=500),
                suppress_health_check=[HealthCheck.too_slow])

# --- signatures: built from known parameters, read back to them -----------------------------------

# Words no parameter can be named: C's type words and qualifiers, and the type names known.
_WORDS = set(signature._TYPES) | {
    "const", "volatile", "struct", "class", "union", "enum", "typename", "restrict", "__restrict",
    "__restrict__", "unsigned", "signed", "int", "char", "short", "long", "float", "double",
    "bool", "void"}
_names = st.from_regex(r"[a-z_][a-z0-9_]{0,40}", fullmatch=True).filter(
    lambda n: n not in _WORDS)
_bases = st.sampled_from(sorted(t for t in signature._TYPES if " " not in t)
                         + ["unsigned int", "unsigned long long", "signed char", "Foo",
                            "ns::Bar", "W<int, 3>", "cuda::std::complex<float>"])
_space = st.sampled_from(["", " ", "  "])
# (declaration with {b} the base type, {n} the name and {s} optional spaces, whether a pointer)
_SHAPES = [("{b} {n}", False), ("const {b} {n}", False), ("{b}{s}*{s}{n}", True),
           ("const {b}{s}*{s}__restrict__ {n}", True), ("{b}{s}*{s}const {n}", True),
           ("{b}{s}**{s}{n}", True), ("{b}{s}&{s}{n}", True), ("{b} {n}{s}[8]", True),
           ("{b}{s}({s}*{s}{n}{s}){s}({b}, int)", True), ("{b}{s}(&{n}){s}[4]", True)]


@st.composite
def _parameter(draw):
    base, (shape, pointer) = draw(_bases), draw(st.sampled_from(_SHAPES))
    name = draw(st.one_of(st.none(), _names))
    decl = shape.format(b=base, n=name or "", s=draw(_space)).strip()
    return decl, base, pointer, name


@FUZZ
@given(params=st.lists(_parameter(), max_size=6))
def test_a_signature_reads_back_to_its_parameters(params):
    types, names = signature.signature_types(", ".join(p[0] for p in params))
    assert names == [p[3] for p in params]
    assert len(types) == len(params)
    for ctype, (decl, base, pointer, _) in zip(types, params):
        if pointer:
            assert signature.classify(ctype) == ("ptr", "Q"), (decl, ctype)
        else:
            assert ctype.removeprefix("const ") == base, (decl, ctype)
            assert signature.classify(ctype) == signature.classify(base)


_C_LIKE = st.lists(st.sampled_from(list("()[]<>*&,:;{}=/\n ab_019") + [
    "__global__ ", "const ", "k", "/*", "*/", "//", "(*", "__restrict__", "float", "int"]),
    max_size=120).map("".join)


@FUZZ
@given(text=st.one_of(_C_LIKE, st.text(max_size=200)))
def test_any_text_reads_as_parameters_or_nothing(text):
    try:
        types, names = signature.signature_types(text)
    except LaunchArgumentError as err:
        assert "has no type" in str(err)
    else:
        assert len(types) == len(names) and all(isinstance(t, str) and t for t in types)
        for ctype in types:
            kind, code = signature.classify(ctype)
            assert kind in (None, "ptr", "int", "float", "bool", "bf16")
    found = signature.source_types(text, "k")
    assert found is None or (isinstance(found, tuple) and len(found[0]) == len(found[1]))


@FUZZ
@given(value=st.one_of(st.none(), st.integers(), st.binary(max_size=8), st.lists(st.text())))
def test_a_signature_that_is_no_text_is_a_launch_argument_error(value):
    with pytest.raises(LaunchArgumentError):
        signature.signature_types(value)


# --- mangled names: built from known types, read back to them -------------------------------------

_BUILTIN = sorted((code, name) for code, name in _demangle._BUILTINS.items() if code not in "vz")


@st.composite
def _mangled_type(draw, depth=0):
    """(Itanium encoding, the type it reads as) without back-references: a name that repeats a
    type spells it again, which the reader takes as it comes."""
    choices = ["builtin", "builtin", "name", "nested"] + (["ptr", "const ptr", "fn"] if depth < 3
                                                         else [])
    kind = draw(st.sampled_from(choices))
    if kind == "builtin":
        return draw(st.sampled_from(_BUILTIN))
    if kind == "name":
        word = draw(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True))
        return f"{len(word)}{word}", word
    if kind == "nested":
        words = draw(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=2,
                              max_size=3))
        return "N" + "".join(f"{len(w)}{w}" for w in words) + "E", "::".join(words)
    inner, text = draw(_mangled_type(depth + 1))
    if kind == "ptr":
        return "P" + inner, text + "*"
    if kind == "const ptr":
        return "PK" + inner, f"const {text}*"
    result, rtext = draw(_mangled_type(depth + 1))
    return f"PF{result}{inner}E", f"{rtext} (*)({text})"


@FUZZ
@given(name=st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
       params=st.lists(_mangled_type(), max_size=6))
def test_a_mangled_name_reads_back_to_its_types(name, params):
    mangled = f"_Z{len(name)}{name}" + ("".join(code for code, _ in params) or "v")
    assert signature.mangled_types(mangled) == [text for _, text in params]


_MANGLED_LIKE = st.lists(st.sampled_from(list("PKRVOFEINSLT_0123456789abcdfhijlmstxyv") + [
    "S_", "S0_", "S1_", "St", "T_", "Dh", "3Foo", "IiE", "A4_"]), max_size=80).map("".join)


@FUZZ
@given(tail=st.one_of(_MANGLED_LIKE, st.text(max_size=60)))
def test_any_name_reads_as_types_or_as_unknown(tail):
    types = signature.mangled_types("_Z" + tail)
    assert types is None or (isinstance(types, list) and all(isinstance(t, str) for t in types)
                             and sum(map(len, types)) <= _demangle.MAX_CHARS)


# --- options ---------------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_macros = st.one_of(st.from_regex(_IDENT.pattern, fullmatch=True).filter(lambda m: len(m) < 9),
                    st.text(max_size=6), st.sampled_from(["", "A B", "1X", "X=", "F(x)", "F(x"]))
_values = st.one_of(st.none(), st.integers(-9, 9), st.text(max_size=6),
                    st.sampled_from(["4\n", "a\0", "x\r"]))
_paths = st.one_of(st.text(max_size=6), st.sampled_from(["", ".", "inc", "a\0b"]))
_user = st.one_of(st.text(max_size=8), st.sampled_from(["-DN=4", "-I", "-D", "", " ", "-Ia"]))


def _bad_define(name: str, value) -> bool | None:
    """True when the define must be refused, False when it must be taken, None when either may."""
    if value is not None and any(c in str(value) for c in "\r\n\0"):
        return True
    if _IDENT.fullmatch(name):
        return False
    if not name or name[0].isdigit() or not re.fullmatch(r"[A-Za-z0-9_(),. ]+", name):
        return True
    return None


@FUZZ
@given(user=st.lists(_user, max_size=4), defines=st.dictionaries(_macros, _values, max_size=4),
       paths=st.lists(_paths, max_size=4))
def test_options_build_exactly_or_name_what_is_wrong(user, defines, paths):
    bad_user = [o for o in user if not o.strip() or "\0" in o or o in options._NEEDS_VALUE]
    bad_defines = [_bad_define(k, v) for k, v in defines.items()]
    bad_paths = [p for p in paths if not p or "\0" in p]
    try:
        built = options.build(user, std=None, defines=defines, include_paths=paths)
    except ValueError as err:
        message = str(err)
        if bad_user:
            assert "options[" in message, message
        elif True in bad_defines:
            assert "defines" in message, message
        elif None not in bad_defines or "defines" not in message:  # a define that may pass
            assert bad_paths and "include_paths[" in message, message
        return
    assert not bad_user and True not in bad_defines and not bad_paths
    n = len(defines)
    assert built[n + len(paths):] == tuple(user)
    assert built[n:n + len(paths)] == tuple("-I" + p for p in paths)
    for option, (name, value) in zip(built[:n], defines.items()):
        assert option == (f"-D{name}" if value is None else f"-D{name}={value}")
    assert not set(built) & options._NEEDS_VALUE and all(o.strip() for o in built)
