"""Pinned and managed memory and 8/16/32-bit fills on a real GPU: the numbers the device holds,
and the overlap pinned memory exists for, measured with events."""

from __future__ import annotations

import ctypes

import pytest

import cudaload

from .kernels import TEMPLATED

np = pytest.importorskip("numpy")

SPIN = r"""
extern "C" __global__ void spin(long long cycles, int *done) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    *done = 1;
}
"""


def test_fills_of_16_and_32_bits_set_every_element():
    buf = cudaload.alloc(1 << 16)
    buf.fill(0xBEEF, dtype="uint16")
    assert (np.frombuffer(buf.copy_to_host(), np.uint16) == 0xBEEF).all()
    s = cudaload.Stream()
    buf.fill(-7, dtype="int32", stream=s)
    out = np.empty(1 << 14, np.int32)
    buf.copy_to_host(out, stream=s)
    s.synchronize()
    assert (out == -7).all()
    buf.fill(0x12345678)
    assert (np.frombuffer(buf.copy_to_host(), np.uint32) == 0x12345678).all()
    buf.fill(-2, dtype="int16", stream=s)
    s.synchronize()
    assert (np.frombuffer(buf.copy_to_host(), np.int16) == -2).all()


def _timed(stream, work) -> float:
    start = stream.record()
    work()
    end = stream.record()
    end.synchronize()
    return start.elapsed_ms(end)


def test_a_copy_from_pinned_memory_overlaps_a_kernel_on_another_stream():
    nbytes = 256 << 20
    host = cudaload.alloc_host(nbytes)
    values = np.frombuffer(host.view, np.uint32)
    values[:] = np.arange(values.size, dtype=np.uint32)
    dev = cudaload.alloc(nbytes)
    flag = cudaload.alloc(4).fill(0)
    cudaload.Device(0).synchronize()  # the fill done before the non-blocking streams start
    spin = cudaload.RawKernel(SPIN, "spin")
    copies, kernels = cudaload.Stream(), cudaload.Stream()
    spin(1, 1, (1, flag), stream=kernels)  # compiled and loaded before any timing
    kernels.synchronize()

    copy_ms = _timed(copies, lambda: dev.copy_from_host(host, stream=copies))
    # The kernel spins about as long as the copy takes (calibrated: clock rates differ), so that
    # overlap shows as a total well under the sum.
    probe = 10_000_000
    probe_ms = _timed(kernels, lambda: spin(1, 1, (probe, flag), stream=kernels))
    cycles = max(int(probe * copy_ms / probe_ms), 1)
    kernel_ms = _timed(kernels, lambda: spin(1, 1, (cycles, flag), stream=kernels))
    assert kernel_ms > 0.3 * copy_ms, (kernel_ms, copy_ms)

    dev.fill(0, stream=copies)
    copies.synchronize()
    kernels.synchronize()
    begin = kernels.record()
    copies.wait(begin)
    spin(1, 1, (cycles, flag), stream=kernels)
    dev.copy_from_host(host, stream=copies)
    end_kernel, end_copy = kernels.record(), copies.record()
    end_kernel.synchronize()
    end_copy.synchronize()
    both_ms = max(begin.elapsed_ms(end_kernel), begin.elapsed_ms(end_copy))
    serial_ms = kernel_ms + copy_ms
    # Run one after the other they would take serial_ms; overlapped, about the longer of the two.
    assert both_ms < serial_ms - 0.5 * min(kernel_ms, copy_ms), (both_ms, kernel_ms, copy_ms)
    back = np.frombuffer(dev.copy_to_host(), np.uint32)
    assert (back == values).all()
    assert np.frombuffer(flag.copy_to_host(), np.int32)[0] == 1


def test_managed_memory_prefetched_to_the_device_is_read_and_written_by_a_kernel():
    n = 1 << 20
    m = cudaload.alloc_managed(n * 4)
    host = np.ctypeslib.as_array((ctypes.c_float * n).from_address(m.ptr))
    host[:] = np.arange(n, dtype=np.float32)
    s = cudaload.Stream()
    m.prefetch(0, stream=s)
    cudaload.RawKernel(TEMPLATED, "scale<float>")(n // 256, 256, (m, 3.0, n), stream=s)
    m.prefetch("cpu", stream=s)
    s.synchronize()
    assert (host == 3.0 * np.arange(n, dtype=np.float32)).all()
    back = np.frombuffer(m.copy_to_host(), np.float32)  # the device view agrees
    assert (back == host).all()
    m.free()


def test_a_stream_ordered_allocation_captured_in_a_graph_is_replayed():
    n = 1 << 16
    five = int(np.float32(5.0).view(np.uint32))
    scale = cudaload.RawKernel(TEMPLATED, "scale<float>")
    s = cudaload.Stream()
    out = cudaload.alloc(n * 4)
    scale(1, 1, (out, 1.0, 0), stream=s)  # compiled and loaded before the capture
    s.synchronize()
    with s.capture() as graph:
        tmp = cudaload.alloc(n * 4, stream=s)  # a graph memory node
        tmp.fill(five, stream=s)
        scale(n // 256, 256, (tmp, 3.0, n), stream=s)
        out.copy_from(tmp, stream=s)
        tmp.free(stream=s)  # a graph free node
    for _ in range(2):  # replayed: the allocation is made and freed again each time
        out.fill(0, stream=s)  # on s: a fill on the legacy stream would not order with it
        graph.launch(stream=s)
        s.synchronize()
        assert (np.frombuffer(out.copy_to_host(), np.float32) == 15.0).all()


def test_a_stream_ordered_allocation_is_used_and_freed_in_stream_order():
    n = 1 << 20
    s = cudaload.Stream()
    buf = cudaload.alloc(n * 4, stream=s).fill(7, stream=s)
    host = np.empty(n, np.uint32)
    buf.copy_to_host(host, stream=s)
    buf.free(stream=s)
    s.synchronize()
    assert (host == 7).all() and buf.ptr == 0


def test_an_array_pinned_for_a_block_copies_asynchronously_both_ways():
    a = np.arange(1 << 20, dtype=np.float32)
    back = np.zeros_like(a)
    s = cudaload.Stream()
    buf = cudaload.alloc(a.nbytes)
    with cudaload.pin(a), cudaload.pin(back):
        buf.copy_from_host(a, stream=s)
        buf.copy_to_host(back, stream=s)
        s.synchronize()
    assert (back == a).all()
    with cudaload.pin(a):  # unpinned at the block's end: pinning it again is allowed
        pass


# Reads each element and writes it back doubled plus one: what the kernel saw and wrote both show.
READ_WRITE = r"""
extern "C" __global__ void bump(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2 * x[i] + 1;
}
"""


def _bumped_through(memory, host_view, n: int) -> None:
    """Fill ``host_view`` (the host's view of ``memory``), have a kernel read and write ``memory``
    through its device address three times (the ordinary path twice, then the fast-path
    function), and check the host sees the writes of a kernel that saw the host's values."""
    bump = cudaload.RawKernel(READ_WRITE, "bump")
    host_view[:] = np.arange(n, dtype=np.int32)
    expected = np.arange(n, dtype=np.int32)
    for _ in range(3):
        bump((n + 255) // 256, 256, (memory, n))
        cudaload.Device(0).synchronize()
        expected = 2 * expected + 1
        np.testing.assert_array_equal(host_view, expected)


def test_a_kernel_reads_and_writes_pinned_host_memory_through_its_device_address():
    n = 1 << 16
    h = cudaload.alloc_host(4 * n)
    _bumped_through(h, np.frombuffer(h.view, np.int32), n)


def test_a_kernel_reads_and_writes_managed_memory_the_host_wrote():
    n = 1 << 16
    m = cudaload.alloc_managed(4 * n)
    host = np.ctypeslib.as_array((ctypes.c_int32 * n).from_address(m.ptr))
    _bumped_through(m, host, n)
    del host
    m.free()


def test_a_kernel_reads_and_writes_an_array_inside_pin_and_not_after():
    n = 1 << 16
    a = np.zeros(n, np.int32)
    with cudaload.pin(a):
        _bumped_through(a, a, n)
    with pytest.raises(cudaload.LaunchArgumentError, match="it is host memory"):
        cudaload.RawKernel(READ_WRITE, "bump")(1, 1, (a, 0))


def test_a_kernel_reads_and_writes_a_pinned_torch_tensor():
    torch = pytest.importorskip("torch")
    n = 1 << 16
    t = torch.zeros(n, dtype=torch.int32).pin_memory()
    _bumped_through(t, t.numpy(), n)
