"""Memory pools, allocations from them (inside a stream capture too) and managed memory advice on
a real GPU: the numbers the driver keeps for a pool, memory a kernel writes, the advice read back,
and where each kind of buffer is accessible from."""

from __future__ import annotations

import ctypes

import pytest

import cudaload

np = pytest.importorskip("numpy")

IOTA = r"""
extern "C" __global__ void iota(unsigned *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3u * i + 1u;
}
"""
MiB = 1 << 20


def _iota():
    return cudaload.RawKernel(IOTA, "iota")


def test_a_pool_s_used_and_reserved_memory_grow_with_allocations_and_fall_after_frees_and_trim():
    pool = cudaload.MemoryPool(release_threshold=2**64 - 1)  # keeps freed memory until trimmed
    s = cudaload.Stream()
    assert (pool.used, pool.reserved) == (0, 0)
    buffers = [cudaload.alloc(8 * MiB, stream=s, pool=pool) for _ in range(4)]
    s.synchronize()
    assert pool.used >= 32 * MiB and pool.reserved >= pool.used
    assert pool.used_high >= 32 * MiB and pool.reserved_high >= pool.reserved
    for buf in buffers:
        buf.free(stream=s)
    s.synchronize()
    assert pool.used == 0
    assert pool.reserved >= 32 * MiB  # kept for reuse: the threshold keeps everything
    pool.trim(0)
    assert pool.reserved == 0
    assert pool.used_high >= 32 * MiB  # the high-water marks remember
    pool.reset_high()
    assert (pool.used_high, pool.reserved_high) == (0, 0)
    pool.close()


def test_memory_from_a_pool_is_what_a_kernel_writes():
    pool, s, n = cudaload.MemoryPool(), cudaload.Stream(), 4096
    buf = cudaload.alloc(4 * n, stream=s, pool=pool)
    assert buf.device is pool.device
    _iota()((n + 255) // 256, 256, (buf, n), stream=s)
    out = np.empty(n, np.uint32)
    buf.copy_to_host(out, stream=s)
    s.synchronize()
    assert (out == 3 * np.arange(n, dtype=np.uint32) + 1).all()
    buf.free(stream=s)
    s.synchronize()
    assert pool.used == 0


def test_a_pool_s_maximum_size_and_reuse_policies_hold():
    pool, s = cudaload.MemoryPool(max_size=64 * MiB), cudaload.Stream()
    with pytest.raises(cudaload.DriverError) as refused:
        cudaload.alloc(128 * MiB, stream=s, pool=pool)
    assert refused.value.name == "CUDA_ERROR_OUT_OF_MEMORY"
    cudaload.alloc(16 * MiB, stream=s, pool=pool).free(stream=s)  # within the bound: made
    assert [pool.follow_event_dependencies, pool.allow_opportunistic,
            pool.allow_internal_dependencies] == [True, True, True]  # CUDA's defaults
    pool.allow_opportunistic = False
    assert pool.allow_opportunistic is False
    s.synchronize()


def test_an_allocation_from_a_pool_inside_a_capture_is_owned_by_the_graph():
    pool, s, n = cudaload.MemoryPool(), cudaload.Stream(), 1024
    result = cudaload.alloc(4 * n)
    kernel = _iota()
    kernel(1, 1, (result, 0))  # loaded before the capture
    cudaload.Device(0).synchronize()
    with s.capture() as graph:
        scratch = cudaload.alloc(4 * n, stream=s, pool=pool)  # an allocation node
        kernel((n + 255) // 256, 256, (scratch, n), stream=s)
        result.copy_from(scratch, stream=s)
        scratch.free(stream=s)  # a free node
    assert pool.used == 0  # the graph's, not the pool's
    expected = 3 * np.arange(n, dtype=np.uint32) + 1
    for _ in range(2):  # each replay allocates and frees it again
        result.memset(0)
        graph.launch(stream=s)
        s.synchronize()
        assert (np.frombuffer(result.copy_to_host(), np.uint32) == expected).all()


def test_advice_is_read_back_from_the_range_attributes():
    m = cudaload.alloc_managed(4 * MiB)
    assert (m.read_mostly, m.preferred_location, m.accessed_by) == (False, None, ())
    m.advise("preferred_location", 0)
    assert m.preferred_location == 0
    m.advise("preferred_location", "cpu")
    assert m.preferred_location == "cpu"
    m.advise("preferred_location", unset=True)
    assert m.preferred_location is None
    m.advise("accessed_by", 0)
    assert m.accessed_by == (0,)
    m.advise("accessed_by", 0, unset=True)
    assert m.accessed_by == ()
    m.advise("read_mostly")
    assert m.read_mostly is True
    m.advise("read_mostly", unset=True)
    assert m.read_mostly is False


def test_the_last_prefetch_location_is_where_the_pages_went():
    m, s = cudaload.alloc_managed(4 * MiB), cudaload.Stream()
    m.prefetch(0, stream=s)
    s.synchronize()
    assert m.last_prefetch_location == 0
    m.prefetch("cpu", stream=s)
    s.synchronize()
    assert m.last_prefetch_location == "cpu"


def test_each_buffer_kind_is_accessible_where_it_says():
    n = 256
    expected = 3 * np.arange(n, dtype=np.uint32) + 1
    device, host, managed = cudaload.alloc(4 * n), cudaload.alloc_host(4 * n), \
        cudaload.alloc_managed(4 * n)
    assert [(b.is_device_accessible, b.is_host_accessible) for b in (device, host, managed)] == \
        [(True, False), (True, True), (True, True)]
    kernel = _iota()
    for buf in (device, host, managed):  # each is device accessible: a kernel writes it
        kernel(1, n, (buf, n))
    cudaload.Device(0).synchronize()
    assert (np.frombuffer(device.copy_to_host(), np.uint32) == expected).all()
    # the host-accessible ones are read by the host at their own addresses, without a copy
    assert (np.frombuffer(host.view, np.uint32) == expected).all()
    at = (ctypes.c_uint32 * n).from_address(managed.ptr)
    assert (np.frombuffer(at, np.uint32) == expected).all()
