"""Pinned host memory through DLPack on a real GPU: NumPy, PyTorch and CuPy view a HostBuffer
exported as kDLCUDAHost, and what they write is what a stream copies to the device."""

from __future__ import annotations

import pytest

import cudaload

np = pytest.importorskip("numpy")


def _pinned_floats(n: int):
    h = cudaload.alloc_host(4 * n)
    return h, np.from_dlpack(h).view(np.float32)


def test_numpy_writes_pinned_memory_that_a_stream_copies_to_the_device():
    h, values = _pinned_floats(1024)
    values[:] = np.arange(1024, dtype=np.float32)
    s = cudaload.Stream()
    buf = cudaload.alloc(h.nbytes).copy_from_host(h, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(np.frombuffer(buf.copy_to_host(), np.float32), values)
    assert values.ctypes.data == h.host_ptr


def _imported(consumer, h):
    """``consumer(h)``, or a skip that names the consumer's refusal of kDLCUDAHost."""
    try:
        return consumer(h)
    except (RuntimeError, BufferError, TypeError, ValueError) as err:
        if "device" in str(err).lower() or "unsupported" in str(err).lower():
            pytest.skip(f"this {consumer.__module__} does not import kDLCUDAHost memory: {err}")
        raise


def test_pytorch_views_pinned_memory_in_place():
    torch = pytest.importorskip("torch")
    h, values = _pinned_floats(256)
    values[:] = 3.0
    # asked for on the host (kDLCPU), which every PyTorch imports: the pinned bytes themselves
    t = torch.from_dlpack(h.__dlpack__(dl_device=(1, 0))).view(torch.float32)
    assert t.device.type == "cpu" and t.data_ptr() == h.host_ptr
    t += 1
    assert (values == 4.0).all()
    del t
    own = _imported(torch.from_dlpack, h)  # kDLCUDAHost itself, where PyTorch takes it
    assert own.data_ptr() == h.host_ptr
    del own


def test_cupy_reads_pinned_memory():
    cupy = pytest.importorskip("cupy")
    h, values = _pinned_floats(256)
    values[:] = np.arange(256, dtype=np.float32)
    c = _imported(cupy.from_dlpack, h).view(cupy.float32)
    np.testing.assert_array_equal(cupy.asnumpy(c), values)
    del c
