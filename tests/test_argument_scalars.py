"""Scalar arguments beyond int, float, bool and numpy's own scalars: ctypes scalars (and their
subclasses), complex values for complex parameters, subclasses of int, float and numpy scalars;
the exact bytes each packs to, and what is refused."""

from __future__ import annotations

import ctypes
import struct

import pytest

from cudaload.errors import LaunchArgumentError
from tests.test_arguments import pack, packer

np = pytest.importorskip("numpy")


class MyInt(ctypes.c_int):
    pass


class Ratio(float):
    pass


class Count(int):
    pass


class Half32(np.float32):
    pass


class Index64(np.int64):
    pass


CTYPES_CASES = [
    ("signed char", ctypes.c_int8(-5), "<b", -5), ("unsigned char", ctypes.c_uint8(200), "<B", 200),
    ("short", ctypes.c_int16(-300), "<h", -300), ("unsigned short", ctypes.c_uint16(60000), "<H", 60000),
    ("int", ctypes.c_int32(-70000), "<i", -70000), ("unsigned int", ctypes.c_uint32(4000000000), "<I", 4000000000),
    ("long long", ctypes.c_int64(-2 ** 40), "<q", -2 ** 40),
    ("unsigned long long", ctypes.c_uint64(2 ** 63), "<Q", 2 ** 63),
    ("int", MyInt(42), "<i", 42), ("bool", ctypes.c_bool(True), "<?", True),
    ("int", ctypes.c_bool(True), "<i", 1), ("float", ctypes.c_float(1.5), "<f", 1.5),
    ("double", ctypes.c_double(-2.25), "<d", -2.25), ("double", ctypes.c_int(3), "<d", 3.0),
]


@pytest.mark.parametrize("ctype, value, code, expected", CTYPES_CASES)
def test_ctypes_scalars_pack_as_their_value(ctype, value, code, expected):
    assert pack(packer([ctype]), (value,)) == struct.pack(code, expected)


def test_a_ctypes_value_changed_between_launches_packs_anew():
    p = packer(["int"])
    value = ctypes.c_int(1)
    assert pack(p, (value,)) == struct.pack("<i", 1)
    value.value = 9
    assert pack(p, (value,)) == struct.pack("<i", 9)


def test_ctypes_void_p_is_an_address_and_other_mismatches_are_refused():
    p = packer(["float*"])
    assert pack(p, (ctypes.c_void_p(0x7000),)) == struct.pack("<Q", 0x7000)
    assert pack(p, (ctypes.c_void_p(None),)) == struct.pack("<Q", 0)
    with pytest.raises(LaunchArgumentError, match="an integer is needed"):
        pack(packer(["int"]), (ctypes.c_float(1.0),))
    with pytest.raises(LaunchArgumentError, match="a bool is needed"):
        pack(packer(["bool"]), (ctypes.c_double(1.0),))
    with pytest.raises(LaunchArgumentError, match="a real number is needed"):
        pack(packer(["float"]), (ctypes.c_char(b"x"),))
    with pytest.raises(LaunchArgumentError, match="signed char"):  # out of the C type's range
        pack(packer(["signed char"]), (ctypes.c_int(300),))


@pytest.mark.parametrize("ctype, value, code", [
    ("cuda::std::complex<float>", 1.5 - 2j, "<ff"), ("float2", np.complex64(0.5 + 4j), "<ff"),
    ("cuda::std::complex<double>", np.complex128(-1 + 0.25j), "<dd"),
    ("double2", 3 + 1j, "<dd"), ("cuda::std::complex<float>", np.complex128(2 + 3j), "<ff")])
def test_complex_values_pack_as_their_two_parts(ctype, value, code):
    size = struct.calcsize(code)
    p = packer([ctype], layout=[(0, size)])
    assert pack(p, (value,)) == struct.pack(code, value.real, value.imag)


def test_complex_values_for_raw_parameters_of_8_or_16_bytes_and_refusals():
    assert pack(packer([None], layout=[(0, 16)]), (1 + 2j,)) == struct.pack("<dd", 1, 2)
    assert pack(packer([None], layout=[(0, 8)]), (1 + 2j,)) == struct.pack("<ff", 1, 2)
    with pytest.raises(LaunchArgumentError, match="complex value fits"):
        pack(packer(["Pair"], layout=[(0, 8)]), (1 + 2j,))  # a struct that is not complex
    with pytest.raises(LaunchArgumentError, match="real number is needed"):
        pack(packer(["float"]), (1 + 2j,))


@pytest.mark.parametrize("ctype, value, code", [
    ("float", Ratio(0.75), "<f"), ("double", Ratio(-3.5), "<d"), ("int", Count(12), "<i"),
    ("float", Count(7), "<f"), ("float", Half32(1.25), "<f"), ("long long", Index64(-9), "<q"),
    ("double", Index64(5), "<d")])
def test_subclasses_of_int_float_and_numpy_scalars_pack_as_their_value(ctype, value, code):
    assert pack(packer([ctype]), (value,)) == struct.pack(code, value)


def test_a_numpy_integer_subclass_is_an_address_for_a_pointer():
    assert pack(packer(["int*"]), (Index64(0x7000),)) == struct.pack("<Q", 0x7000)
