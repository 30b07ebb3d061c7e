"""Two real GPUs: peer access asked and enabled both ways, a copy from device 0's memory into
device 1's checked on the host, a kernel on device 1 reading device 0's memory, and one Program
compiled once and loaded on both devices."""

from __future__ import annotations

import pytest

import cudaload

np = pytest.importorskip("numpy")

READ_PEER = r"""
extern "C" __global__ void add_one(const int *src, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = src[i] + 1;
}
"""
N = 4096


@pytest.fixture(autouse=True)
def _two_gpus():
    if cudaload.device_count() < 2:
        pytest.skip("needs two GPUs")


def _peers():
    d0, d1 = cudaload.Device(0), cudaload.Device(1)
    if not (d0.can_access_peer(d1) and d1.can_access_peer(d0)):
        pytest.skip("these two GPUs have no peer access (`nvidia-smi topo -m`)")
    return d0, d1


def _on_device_zero(values):
    return cudaload.alloc(values.nbytes, device=0).copy_from_host(values)


def test_can_access_peer_answers_both_ways_and_false_for_the_device_itself():
    d0, d1 = cudaload.Device(0), cudaload.Device(1)
    assert d0 != d1 and hash(d0) != hash(d1)
    assert isinstance(d0.can_access_peer(d1), bool) and isinstance(d1.can_access_peer(0), bool)
    assert d0.can_access_peer(d0) is False and d1.can_access_peer(1) is False


def test_enable_peer_access_both_ways_twice_is_no_error():
    d0, d1 = _peers()
    for _ in range(2):
        d0.enable_peer_access(d1)
        d1.enable_peer_access(d0)
    with pytest.raises(ValueError, match="always reaches its own memory"):
        d0.enable_peer_access(0)


@pytest.mark.parametrize("with_stream", [False, True])
def test_a_copy_from_device_zero_into_device_one_arrives_whole(with_stream):
    values = np.arange(N, dtype=np.int32)
    src = _on_device_zero(values)
    dst = cudaload.alloc(values.nbytes, device=1)
    dst.memset(0)
    assert src.device.ordinal == 0 and dst.device.ordinal == 1
    if with_stream:
        with cudaload.Device(1):
            stream = cudaload.Stream()
        dst.copy_from(src, stream=stream)
        stream.synchronize()
    else:
        dst.copy_from(src)
    np.testing.assert_array_equal(np.frombuffer(dst.copy_to_host(), dtype=np.int32), values)


def test_a_kernel_on_device_one_reads_device_zeros_memory_and_the_program_compiles_once():
    d0, d1 = _peers()
    d1.enable_peer_access(d0)
    values = np.arange(N, dtype=np.int32) * 3
    src = _on_device_zero(values)
    code = cudaload.Program(READ_PEER).compile()
    outs = []
    for dev in (d0, d1):
        with dev:
            again = cudaload.Program(READ_PEER).compile()  # the same code: a memory hit
            assert again.cached in ("memory", "disk"), again.cached
            out = cudaload.alloc(values.nbytes)
            # src's address as an int: the argument check refuses another device's DeviceBuffer
            again.load().get_kernel("add_one")(((N + 255) // 256,), (256,), (src.ptr, out, N))
            dev.synchronize()
            outs.append(np.frombuffer(out.copy_to_host(), dtype=np.int32))
    assert code.cached in (None, "memory", "disk")
    for got in outs:
        np.testing.assert_array_equal(got, values + 1)
