"""DeviceBuffer through DLPack into PyTorch and CuPy: the same memory (no copy), writes seen both
ways, the buffer kept alive while viewed, and the consumer's stream ordered after cudaload's work."""

from __future__ import annotations

import gc
import weakref

import pytest

import cudaload

np = pytest.importorskip("numpy")

# Spins for ``cycles`` clock ticks before writing, so that a reader not ordered after it would
# see the memory as it was.
SLOW_FILL = r"""
extern "C" __global__ void slow_fill(float *x, int n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 1.0f;
}
"""
CYCLES = 200_000_000  # about 0.1 s at the H200's clock


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


def test_torch_views_the_buffer_without_a_copy_and_keeps_it_alive():
    torch = _torch()
    n = 4096
    buf = cudaload.alloc(n).memset(0)
    t = torch.from_dlpack(buf)
    assert (t.device.type, t.device.index) == ("cuda", buf.device.ordinal)
    assert t.dtype == torch.uint8 and tuple(t.shape) == (n,) and t.data_ptr() == buf.ptr
    t.fill_(7)
    torch.cuda.synchronize()
    assert bytes(buf.copy_to_host()) == b"\x07" * n  # torch's write, read by cudaload
    buf.memset(3)
    cudaload.Device(buf.device.ordinal).synchronize()
    assert int(t.sum()) == 3 * n  # cudaload's write, read by torch
    f = t.view(torch.float32)  # raw bytes, reinterpreted on the consumer's side
    assert tuple(f.shape) == (n // 4,) and f.data_ptr() == buf.ptr
    ref = weakref.ref(buf)
    del buf
    gc.collect()
    assert ref() is not None and int(t.sum()) == 3 * n  # viewed: still allocated
    del t, f
    gc.collect()
    assert ref() is None  # torch called the deleter


def test_cupy_views_the_buffer_without_a_copy():
    cupy = pytest.importorskip("cupy")
    n = 1 << 16
    buf = cudaload.alloc(n * 4).memset(0)
    a = cupy.from_dlpack(buf)
    assert a.dtype == cupy.uint8 and a.shape == (n * 4,) and a.data.ptr == buf.ptr
    v = a.view(cupy.float32)
    v += 2
    cupy.cuda.Device().synchronize()
    assert np.frombuffer(buf.copy_to_host(), np.float32).sum() == 2.0 * n
    k = cudaload.RawKernel(SLOW_FILL, "slow_fill")
    k((n + 255) // 256, 256, (buf, n, 0))
    cudaload.Device(0).synchronize()
    assert float(v.sum()) == 1.0 * n
    ref = weakref.ref(buf)
    del buf
    gc.collect()
    assert ref() is not None
    del a, v
    gc.collect()
    assert ref() is None


def test_a_consumer_on_its_own_stream_sees_cudaloads_unfinished_work():
    cupy = pytest.importorskip("cupy")
    n = 1 << 18  # 1024 blocks: one wave on the H200
    buf = cudaload.alloc(n * 4).memset(0)
    k = cudaload.RawKernel(SLOW_FILL, "slow_fill")
    k((n + 255) // 256, 256, (buf, n, CYCLES))  # legacy default stream, still running below
    with cupy.cuda.Stream(non_blocking=True) as stream:
        total = cupy.from_dlpack(buf).view(cupy.float32).sum()  # asks its stream to wait
    stream.synchronize()
    assert float(total) == 1.0 * n


def test_torch_on_a_side_stream_sees_cudaloads_unfinished_work():
    torch = _torch()
    n = 1 << 18  # 1024 blocks: one wave on the H200
    buf = cudaload.alloc(n * 4).memset(0)
    k = cudaload.RawKernel(SLOW_FILL, "slow_fill")
    k((n + 255) // 256, 256, (buf, n, CYCLES))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        total = torch.from_dlpack(buf).view(torch.float32).sum()
    side.synchronize()
    assert float(total) == 1.0 * n


def test_numpy_gets_a_host_copy_of_device_memory():
    if tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 1):
        pytest.skip("numpy.from_dlpack(device=...) needs NumPy 2.1")
    buf = cudaload.alloc(16).copy_from_host(np.arange(4, dtype=np.float32))
    arr = np.from_dlpack(buf, device="cpu")
    assert arr.dtype == np.uint8 and arr.view(np.float32).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises((BufferError, RuntimeError)):
        np.from_dlpack(buf)  # device memory: NumPy refuses it, with its own error


def test_a_module_global_is_exported_as_a_view_of_the_module():
    torch = _torch()
    src = '__device__ float table[8]; extern "C" __global__ void fill() { table[threadIdx.x] = 5; }'
    mod = cudaload.Program(src).compile().load()
    mod.get_kernel("fill")(1, 8, ())
    t = torch.from_dlpack(mod.get_global("table")).view(torch.float32)
    assert t.tolist() == [5.0] * 8
