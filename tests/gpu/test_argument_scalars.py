"""Scalar argument kinds beyond int, float and numpy's own on a real GPU: ctypes scalars, complex
values for complex, float2 and double2 parameters, subclasses of int, float and numpy scalars,
each written back by the kernel and read here."""

from __future__ import annotations

import ctypes

import pytest

import cudaload

np = pytest.importorskip("numpy")

SCALARS = r"""
extern "C" __global__ void scalars(long long *iout, double *fout, signed char a, unsigned char b,
                                   short c, unsigned short d, int e, unsigned int f, long long g,
                                   unsigned long long h, bool i, float j, double k) {
    iout[0] = a; iout[1] = b; iout[2] = c; iout[3] = d; iout[4] = e; iout[5] = f; iout[6] = g;
    iout[7] = (long long)h; iout[8] = i; fout[0] = j; fout[1] = k;
}
"""
COMPLEX = r"""
#include <cuda/std/complex>
extern "C" __global__ void parts(double *out, float2 a, double2 b, cuda::std::complex<float> c,
                                 cuda::std::complex<double> d) {
    out[0] = a.x; out[1] = a.y; out[2] = b.x; out[3] = b.y;
    out[4] = c.real(); out[5] = c.imag(); out[6] = d.real(); out[7] = d.imag();
}
"""

from ..test_argument_scalars import Count, Half32 as F32, Index64 as I64, MyInt, Ratio  # noqa: E402


def _run(args):
    k = cudaload.RawKernel(SCALARS, "scalars")
    iout, fout = cudaload.alloc(8 * 9).memset(0), cudaload.alloc(8 * 2).memset(0)
    k(1, 1, (iout, fout, *args))
    cudaload.Device(0).synchronize()
    return (np.frombuffer(iout.copy_to_host(), np.int64).tolist(),
            np.frombuffer(fout.copy_to_host(), np.float64).tolist())


def test_ctypes_scalars_reach_the_kernel_exactly():
    ints, floats = _run((ctypes.c_int8(-5), ctypes.c_uint8(200), ctypes.c_int16(-300),
                         ctypes.c_uint16(60000), MyInt(-70000), ctypes.c_uint32(4000000000),
                         ctypes.c_int64(-2 ** 40), ctypes.c_uint64(2 ** 62), ctypes.c_bool(True),
                         ctypes.c_float(1.5), ctypes.c_double(-2.25)))
    assert ints == [-5, 200, -300, 60000, -70000, 4000000000, -2 ** 40, 2 ** 62, 1]
    assert floats == [1.5, -2.25]


def test_subclasses_of_int_float_and_numpy_scalars_reach_the_kernel():
    ints, floats = _run((Count(-1), Count(2), Count(3), Count(4), I64(5), I64(6), Count(7),
                         I64(8), True, F32(0.75), Ratio(1.0 / 3.0)))
    assert ints == [-1, 2, 3, 4, 5, 6, 7, 8, 1]
    assert floats == [0.75, 1.0 / 3.0]


@pytest.mark.parametrize("kind", ["python", "numpy"])
def test_complex_values_reach_complex_float2_and_double2_parameters(kind):
    k = cudaload.RawKernel(COMPLEX, "parts")
    values = [1.5 - 2j, 3.25 + 4j, -5.5 + 6j, 7.125 - 8j]
    if kind == "numpy":
        values = [np.complex64(values[0]), np.complex128(values[1]), np.complex64(values[2]),
                  np.complex128(values[3])]
    out = cudaload.alloc(8 * 8).memset(0)
    k(1, 1, (out, *values))
    cudaload.Device(0).synchronize()
    got = np.frombuffer(out.copy_to_host(), np.float64).tolist()
    assert got == [1.5, -2.0, 3.25, 4.0, -5.5, 6.0, 7.125, -8.0]
