"""Sharing memory and streams with CuPy and PyTorch, both ways, in the same process."""

from __future__ import annotations

import pytest

import cudaload

from .kernels import TEMPLATED

np = pytest.importorskip("numpy")


def test_cupy_both_ways_on_cupy_stream():
    cupy = pytest.importorskip("cupy")
    k = cudaload.RawKernel(TEMPLATED, "scale<float>")
    n = 1 << 16
    with cupy.cuda.Stream(non_blocking=True) as cs:
        a = cupy.arange(n, dtype=cupy.float32)
        k((n + 255) // 256, 256, (a, 2.0, n), stream=cs)
        b = a * 1  # ordered after our launch on the same stream
    cs.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(b), np.arange(n, dtype=np.float32) * 2)
    buf = cudaload.alloc(n * 4).memset(0)
    view = cupy.asarray(buf).view(cupy.float32)  # zero copy through __cuda_array_interface__
    view += 3
    s = cudaload.Stream.from_handle(cs)
    k((n + 255) // 256, 256, (buf, 2.0, n), stream=s)
    s.synchronize()
    assert float(view.sum()) == 6.0 * n


def test_torch_both_ways_on_torch_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    k = cudaload.RawKernel(TEMPLATED, "scale<float>")
    n = 4096
    ts = torch.cuda.Stream()
    with torch.cuda.stream(ts):
        t = torch.arange(n, dtype=torch.float32, device="cuda")
        k(n // 256, 256, (t, 0.5, n), stream=ts)
        u = t + 1
    ts.synchronize()
    assert torch.equal(u.cpu(), torch.arange(n, dtype=torch.float32) * 0.5 + 1)
    buf = cudaload.alloc(n * 4).memset(0)
    tv = torch.as_tensor(buf, device="cuda").view(torch.float32)
    tv += 4
    k(n // 256, 256, (buf, 0.25, n), stream=cudaload.Stream.from_handle(ts))
    ts.synchronize()
    assert float(tv.sum()) == 1.0 * n
    with pytest.raises(cudaload.LaunchArgumentError, match="device memory"):
        k(1, 1, (torch.zeros(4), 1.0, 4))
