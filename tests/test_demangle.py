"""cudaload._base._demangle.demangled: the declaration a mangled name stands for, as a LinkError
names an undefined symbol; one reader with the kernel parameter types of launch/signature.py
(tests/test_signature.py tests those)."""

from __future__ import annotations

import pytest

from cudaload._base import _demangle


@pytest.mark.parametrize("mangled, declared", [
    ("_Z3fooi", "foo(int)"),
    ("_Z6helperv", "helper()"),
    ("_ZN2ns5scaleEf", "ns::scale(float)"),
    ("_ZN2ns1xE", "ns::x"),  # a variable in a namespace: no parameter list
    ("_Z3addPKfS0_Pfi", "add(const float*, const float*, float*, int)"),
    ("_Z5scaleIfEvPT_S0_", "scale<float>(float*, float)"),  # a template: its return type skipped
    ("_ZN1a1b3sumIiLi4EEEvPKT_", "a::b::sum<int, (int)4>(const int*)"),
])
def test_a_mangled_name_reads_as_its_declaration(mangled, declared):
    assert _demangle.demangled(mangled) == declared


@pytest.mark.parametrize("name", ["foo", "_Z", "_Z3fo", "_ZN2ns", "_Z3fooQ", "_ZN1AC1Ev"])
def test_a_name_that_is_not_mangled_or_cannot_be_read_is_none(name):
    # extern "C" names are not mangled; constructors (C1) and unknown codes are not read
    assert _demangle.demangled(name) is None


@pytest.mark.timeout(20)
def test_a_name_that_stands_for_millions_of_characters_is_none():
    from tests.test_parsers_hostile import _tripling

    assert _demangle.demangled(_tripling(13)) is None  # 20 million characters: past the bound
    assert _demangle.demangled(_tripling(2)).startswith("f(A<int, int>, A<int, int><")
