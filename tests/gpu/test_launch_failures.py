"""Launches the GPU refuses: the driver's typed error with what fits, and the context still usable."""

from __future__ import annotations

import pytest

import cudaload
from cudaload.errors import DriverError

np = pytest.importorskip("numpy")

MARK = ('extern "C" __global__ void mark(int *out) '
        '{ if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x + 1; }')


def test_a_cooperative_grid_too_large_is_refused_with_the_largest_that_fits():
    k = cudaload.RawKernel(MARK, "mark")
    dev = cudaload.Device(0)
    per_sm = k.occupancy(256).active_blocks_per_multiprocessor
    fits = per_sm * dev.attribute("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")
    assert fits > 0
    out = cudaload.alloc(4 * (fits + 1)).memset(0)
    k(fits, 256, (out,), cooperative=True)  # the largest cooperative grid runs
    dev.synchronize()
    got = np.frombuffer(out.copy_to_host(), np.int32)
    np.testing.assert_array_equal(got[:fits], np.arange(1, fits + 1, dtype=np.int32))
    assert got[fits] == 0
    with pytest.raises(DriverError) as info:
        k(fits + 1, 256, (out,), cooperative=True)
    err = info.value
    assert err.name == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"
    assert f"{fits + 1} blocks" in str(err) and f"at most {fits}" in str(err)
    out.memset(0)
    k(fits + 1, 256, (out,))  # the same grid, not cooperative: the context is unharmed
    dev.synchronize()
    assert (np.frombuffer(out.copy_to_host(), np.int32) == np.arange(1, fits + 2)).all()
