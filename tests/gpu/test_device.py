"""Devices, contexts and memory on a real GPU."""

from __future__ import annotations

import pytest

import cudaload
from cudaload.bindings import thread_device

from .kernels import TEMPLATED

np = pytest.importorskip("numpy")


def test_device_properties_and_primary_context():
    d = cudaload.Device(0)
    assert d is cudaload.Device(0)
    assert d.total_memory > 0 and d.compute_capability[0] >= 5
    assert thread_device.arch() == d.arch
    free, total = d.mem_info()
    assert 0 < free <= total
    with pytest.raises(ValueError, match="no CUDA device"):
        cudaload.Device(cudaload.device_count())
    d.synchronize()


def test_memory_round_trip_memset_and_oom():
    a = np.arange(1000, dtype=np.int32)
    buf = cudaload.alloc(a.nbytes).copy_from_host(a)
    assert buf.__cuda_array_interface__["data"][0] == buf.ptr
    np.testing.assert_array_equal(np.frombuffer(buf.copy_to_host(), np.int32), a)
    other = cudaload.alloc(a.nbytes).copy_from(buf)
    assert bytes(other.copy_to_host()) == a.tobytes()
    buf.memset(0xFF)
    assert bytes(buf.copy_to_host(nbytes=4)) == b"\xff" * 4
    with pytest.raises(ValueError, match="does not fit"):
        buf.copy_from_host(np.zeros(2000, np.int32))
    with pytest.raises(cudaload.DriverError, match="OUT_OF_MEMORY"):
        cudaload.alloc(1 << 50)


def test_two_gpus_launch_on_each_device_with_one_module():
    if cudaload.device_count() < 2:
        pytest.skip("needs two GPUs")
    k = cudaload.RawKernel(TEMPLATED, "scale<float>")
    bufs = []
    for i in range(2):
        cudaload.Device(i).set_current()
        buf = cudaload.alloc(1024).copy_from_host(np.ones(256, np.float32))
        k(1, 256, (buf, float(i + 2), 256))
        bufs.append(buf)
    with pytest.raises(cudaload.LaunchArgumentError, match="on device 0"):
        k(1, 256, (bufs[0], 1.0, 256))  # device 1 is current
    for i, buf in enumerate(bufs):
        assert (np.frombuffer(buf.copy_to_host(), np.float32) == i + 2).all()
    cudaload.Device(0).set_current()
