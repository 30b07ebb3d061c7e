"""``cudaload.view`` on a GPU: views of CuPy and PyTorch strided arrays read their layout, a kernel
reads a non-contiguous view through its strides, PyTorch and CuPy take a view back (DLPack, the
CUDA Array Interface) as the same memory, and a TMA kernel reads through a tensor map moved by
``replace_address`` to a second buffer."""

from __future__ import annotations

import pytest

import cudaload
from cudaload import TensorMap
from tests.gpu.test_dlpack import _torch
from tests.gpu.test_tensor_map import copied_box, on_device, tma_copy  # noqa: F401  (fixture)

np = pytest.importorskip("numpy")

GATHER = r"""
extern "C" __global__ void gather(const float *a, long long row_stride, long long col_stride,
                                  int rows, int cols, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) out[i] = a[(i / cols) * row_stride + (i % cols) * col_stride];
}
"""


class Interface:
    """An array known only by its __cuda_array_interface__."""

    def __init__(self, **cai):
        self.__cuda_array_interface__ = {"version": 3, "strides": None, "stream": None, **cai}


def test_a_view_of_a_cupy_strided_array_reads_its_layout():
    cp = pytest.importorskip("cupy")
    a = cp.arange(8 * 32, dtype=cp.float32).reshape(8, 32)[1:, ::2]
    v = cudaload.view(a)
    assert v.ptr == a.data.ptr and v.shape == a.shape == (7, 16)
    assert v.strides == tuple(s // 4 for s in a.strides) == (32, 2)
    assert v.dtype == np.float32 and not v.is_contiguous and not v.readonly
    assert v.device.ordinal == a.device.id
    back = cp.asarray(v)  # through the view's own interface: the same memory, the same strides
    assert back.data.ptr == a.data.ptr and back.strides == a.strides
    cp.testing.assert_array_equal(back, a)


def test_a_view_of_a_torch_strided_tensor_reads_its_layout_and_round_trips():
    torch = _torch()
    t = torch.arange(16 * 24, dtype=torch.float32, device="cuda").reshape(16, 24).t()
    v = cudaload.view(t)
    assert v.ptr == t.data_ptr() and v.shape == (24, 16) and v.strides == t.stride() == (1, 24)
    assert v.dtype == np.float32 and not v.is_contiguous
    back = torch.from_dlpack(v)
    assert back.data_ptr() == t.data_ptr() and back.stride() == t.stride()
    assert torch.equal(back, t)
    back[0, 0] = -1.0  # the same memory
    torch.cuda.synchronize()
    assert t[0, 0].item() == -1.0


def test_a_kernel_reads_a_non_contiguous_view_through_its_strides():
    host = np.arange(12 * 20, dtype=np.float32).reshape(12, 20)
    buf = on_device(host)
    # the transpose of every other column: shape (10, 12), strides (2, 20) elements
    v = cudaload.view(Interface(data=(buf.ptr, False), shape=(10, 12), typestr="<f4",
                                strides=(8, 80)))
    assert v.strides == (2, 20) and not v.is_contiguous
    want = host[:, ::2].T
    out = cudaload.alloc(want.nbytes)
    k = cudaload.Program(GATHER).compile().load().get_kernel("gather")
    rows, cols = v.shape
    k((rows * cols + 127) // 128, 128, (v, v.strides[0], v.strides[1], rows, cols, out))
    got = np.frombuffer(out.copy_to_host(), np.float32).reshape(want.shape)
    np.testing.assert_array_equal(got, want)


def test_torch_takes_a_view_of_a_cudaload_buffer_as_the_same_memory():
    torch = _torch()
    host = np.arange(64, dtype=np.float32)
    buf = on_device(host)
    v = cudaload.view(Interface(data=(buf.ptr, False), shape=(8, 4), typestr="<f4",
                                strides=(32, 4)))  # the first 4 columns of 8 x 8
    t = torch.from_dlpack(v)
    assert t.data_ptr() == buf.ptr and t.stride() == (8, 1) and tuple(t.shape) == (8, 4)
    np.testing.assert_array_equal(t.cpu().numpy(), host.reshape(8, 8)[:, :4])


def test_a_tensor_map_moved_by_replace_address_reads_the_second_buffer(tma_copy):
    shape, box = (64, 96), (16, 32)
    first = np.arange(64 * 96, dtype=np.float32).reshape(shape)
    second = -first - 1
    front, back = on_device(first), on_device(second)

    def rows(buf):
        return cudaload.view(Interface(data=(buf.ptr, False), shape=shape, typestr="<f4"))
    tmap = TensorMap.tiled(rows(front), box)
    np.testing.assert_array_equal(copied_box(tma_copy, tmap, 32, 16, box, np.float32),
                                  first[16:32, 32:64])
    moved = tmap.replace_address(rows(back))
    assert moved.address == back.ptr and bytes(moved) != bytes(tmap)
    np.testing.assert_array_equal(copied_box(tma_copy, moved, 32, 16, box, np.float32),
                                  second[16:32, 32:64])
    # the first map still reads the first buffer; a DeviceBuffer of the map's layout works too
    np.testing.assert_array_equal(copied_box(tma_copy, tmap, 0, 0, box, np.float32),
                                  first[:16, :32])
    again = moved.replace_address(front)
    np.testing.assert_array_equal(copied_box(tma_copy, again, 0, 0, box, np.float32),
                                  first[:16, :32])
