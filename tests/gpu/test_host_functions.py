"""Host functions on a real GPU's streams: in stream order after a kernel, their exceptions raised
by the next synchronize."""

from __future__ import annotations

import gc
import time

import pytest

import cudaload

np = pytest.importorskip("numpy")

# Runs for ``ns`` nanoseconds of the GPU's global timer, then writes ``value``.
SLOW = r"""
extern "C" __global__ void slow(unsigned long long ns, int *out, int value) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
    *out = value;
}
"""


def test_host_functions_run_in_stream_order_after_the_kernel():
    k = cudaload.RawKernel(SLOW, "slow")
    s = cudaload.Stream()
    out = cudaload.alloc(4).memset(0)
    k(1, 1, (1, out, 0), stream=s)  # compiled and loaded before the timing starts
    s.synchronize()
    # Garbage of earlier tests is freed now: a cuMemFree during the slow kernel would wait for it.
    gc.collect()
    seen = []
    start = time.perf_counter()
    k(1, 1, (200_000_000, out, 3), stream=s)  # 0.2 s on the GPU
    for i in range(3):
        s.launch_host_func(lambda i=i: seen.append((i, time.perf_counter() - start)))
    gc.collect()  # the lambdas live on in cudaload alone
    queued = list(seen)
    s.synchronize()
    assert queued == []  # the kernel was still running
    assert [i for i, _ in seen] == [0, 1, 2]
    assert min(t for _, t in seen) >= 0.15  # after the kernel, not at enqueue
    assert np.frombuffer(out.copy_to_host(), np.int32)[0] == 3


def test_an_exception_in_a_host_function_is_raised_by_the_next_synchronize():
    s = cudaload.Stream()
    seen = []

    def broken():
        raise ValueError("from the host function")

    s.launch_host_func(broken)
    s.launch_host_func(lambda: seen.append("after"))
    with pytest.raises(ValueError, match="from the host function") as info:
        s.synchronize()
    assert any("launched on stream" in note for note in info.value.__notes__)
    assert seen == ["after"]
    s.synchronize()  # reported once
    s.launch_host_func(broken)
    with pytest.raises(ValueError):
        cudaload.Device(0).synchronize()
    with pytest.raises(TypeError):
        s.launch_host_func("not callable")
