"""Parameter layouts and C types: from the driver's layout, a signature, the source, a mangled name."""

from __future__ import annotations

import pytest

from cudaload import signature
from cudaload.errors import LaunchArgumentError


def test_natural_layout_without_driver_info():
    params = signature.build_params(["char", "double", "int", "const float*"], None)
    assert [(q.offset, q.size) for q in params] == [(0, 1), (8, 8), (16, 4), (24, 8)]


def test_driver_layout_wins_and_sizes_are_checked():
    params = signature.build_params(["int", "float"], [(0, 4), (16, 4)])
    assert [q.offset for q in params] == [0, 16]
    with pytest.raises(LaunchArgumentError, match="8 bytes"):
        signature.build_params(["int"], [(0, 8)])
    with pytest.raises(LaunchArgumentError, match="has 1 parameters but"):
        signature.build_params(["int"], [(0, 4), (8, 8)])


def test_signature_and_source_parsing():
    types, names = signature.signature_types("const float* __restrict__ x, float a, unsigned n")
    assert types == ["const float*", "float", "unsigned"] and names == ["x", "a", "n"]
    src = """
    // __global__ void saxpy(double wrong)
    extern "C" __global__ void __launch_bounds__(256) saxpy(const float *x, float *y,
                                                          float a, size_t n) { }"""
    assert signature.source_types(src, "saxpy")[0] == ["const float*", "float*", "float", "size_t"]
    assert signature.source_types(src, "missing") is None


@pytest.mark.parametrize("mangled, types", [
    ("_Z5saxpyPKfPffi", ["const float*", "float*", "float", "int"]),
    ("_Z5scaleIfEvPT_S1_i", ["float*", "float*", "int"]),
    ("_Z5scaleIfEvPT_S0_i", ["float*", "float", "int"]),
    ("_Z3addIdLi4EEvPKT_PS0_m", ["const double*", "double*", "unsigned long"]),
    ("_Z1kPfS_S_", ["float*", "float*", "float*"]),
    ("_Z1kN4cuda3std7complexIfEE", ["cuda::std::complex<float>"]),
    ("_Z1kv", []),
])
def test_mangled_names(mangled, types):
    assert signature.mangled_types(mangled) == types
