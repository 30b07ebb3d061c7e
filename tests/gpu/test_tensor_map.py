"""Tensor maps on a Hopper GPU: a kernel copies one box through ``cp.async.bulk.tensor`` (TMA) into
shared memory and writes it out, and the numbers are checked against numpy, out-of-bounds boxes
with their zero or NaN fill included; and the memory pool's release threshold on the device."""

from __future__ import annotations

import functools

import pytest

import cudaload
from cudaload import TensorMap

np = pytest.importorskip("numpy")

# One block: thread 0 arms an mbarrier with the box's bytes and starts the TMA copy of the box at
# (x, y) (x along the contiguous dimension); every thread waits for the barrier's phase 0, then
# copies the box from shared memory to ``out`` byte by byte, whatever the element type.  PTX
# written out (as CUTLASS's SM90_TMA_LOAD_2D and ClusterBarrier do) so that no CUDA header is needed.
TMA_COPY = r"""
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef CUtensorMap_st CUtensorMap;
#define MAX_BOX_BYTES 8192

extern "C" __global__ void tma_copy(const __grid_constant__ CUtensorMap map, int x, int y,
                                    unsigned char *out, unsigned box_bytes) {
    __shared__ alignas(1024) unsigned char tile[MAX_BOX_BYTES];
    __shared__ alignas(8) unsigned long long barrier;
    unsigned tile_at = (unsigned)__cvta_generic_to_shared(tile);
    unsigned barrier_at = (unsigned)__cvta_generic_to_shared(&barrier);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(barrier_at), "r"(1));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(barrier_at), "r"(box_bytes) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(tile_at), "l"(reinterpret_cast<unsigned long long>(&map)),
                        "r"(x), "r"(y), "r"(barrier_at) : "memory");
    }
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT;\n"
                 "}\n" :: "r"(barrier_at), "r"(0) : "memory");
    for (unsigned i = threadIdx.x; i < box_bytes; i += blockDim.x) out[i] = tile[i];
}
"""


@functools.cache
def _tma_kernel():
    return cudaload.Program(TMA_COPY).compile(arch=90).load().get_kernel("tma_copy")


@pytest.fixture
def tma_copy():
    """The kernel, compiled once; a fixture of each test, so that the GPU check comes first."""
    major, minor = cudaload.Device(0).compute_capability
    if major < 9:
        pytest.skip(f"tensor maps need compute capability 9.0; device 0 is {major}.{minor}")
    return _tma_kernel()


def copied_box(kernel, tmap, x: int, y: int, box: tuple[int, int], dtype) -> np.ndarray:
    """The box at column ``x``, row ``y`` as the kernel copied it through ``tmap``."""
    nbytes = box[0] * box[1] * np.dtype(dtype).itemsize
    out = cudaload.alloc(nbytes).fill(0xA5, dtype="uint8")  # no byte left as it was by chance
    kernel(1, 128, (tmap, x, y, out, nbytes))
    cudaload.Device(0).synchronize()
    return np.frombuffer(out.copy_to_host(), dtype).reshape(box)


def expected_box(host: np.ndarray, x: int, y: int, box: tuple[int, int], fill) -> np.ndarray:
    """What the box at (x, y) holds: the array where it reaches, ``fill`` elsewhere."""
    want = np.full(box, fill, host.dtype)
    for r in range(box[0]):
        for c in range(box[1]):
            row, col = y + r, x + c
            if 0 <= row < host.shape[0] and 0 <= col < host.shape[1]:
                want[r, c] = host[row, col]
    return want


def on_device(host: np.ndarray) -> cudaload.DeviceBuffer:
    return cudaload.alloc(host.nbytes).copy_from_host(np.ascontiguousarray(host))


def test_a_box_inside_the_array_is_copied_exactly(tma_copy):
    host = np.arange(64 * 96, dtype=np.float32).reshape(64, 96)
    buf = on_device(host)
    box = (16, 32)
    tmap = TensorMap.tiled(buf, box, dtype="float32", shape=host.shape)
    got = copied_box(tma_copy, tmap, 32, 16, box, np.float32)
    np.testing.assert_array_equal(got, host[16:32, 32:64])


# x * 4 bytes a multiple of 16: a box must start 16-byte aligned along the contiguous dimension
# (at x = 90 the H200 stopped the kernel with CUDA_ERROR_ILLEGAL_INSTRUCTION)
@pytest.mark.parametrize("x, y", [(80, 56), (-8, -4), (88, 0)])
def test_a_box_out_of_bounds_is_filled_with_zeros(tma_copy, x, y):
    host = np.arange(1, 64 * 96 + 1, dtype=np.float32).reshape(64, 96)  # no zero inside
    buf = on_device(host)
    box = (16, 32)
    tmap = TensorMap.tiled(buf, box, dtype="float32", shape=host.shape)
    got = copied_box(tma_copy, tmap, x, y, box, np.float32)
    np.testing.assert_array_equal(got, expected_box(host, x, y, box, 0))
    assert (got == 0).any()


def test_a_box_out_of_bounds_is_filled_with_nan_when_asked(tma_copy):
    host = np.arange(64 * 96, dtype=np.float32).reshape(64, 96)
    buf = on_device(host)
    box = (16, 32)
    tmap = TensorMap.tiled(buf, box, dtype="float32", shape=host.shape, oob_fill="nan")
    got = copied_box(tma_copy, tmap, 80, 56, box, np.float32)
    want = expected_box(host, 80, 56, box, np.nan)
    outside = np.isnan(want)
    assert outside.sum() == 16 * 32 - 8 * 16
    assert np.isnan(got[outside]).all()
    np.testing.assert_array_equal(got[~outside], want[~outside])


def test_padded_rows_are_read_through_their_stride(tma_copy):
    padded = np.arange(64 * 100, dtype=np.float32).reshape(64, 100)  # rows of 400 bytes
    buf = on_device(padded)
    box = (8, 32)
    tmap = TensorMap.tiled(buf, box, dtype="float32", shape=(64, 96), strides=(400, 4))
    got = copied_box(tma_copy, tmap, 72, 60, box, np.float32)
    np.testing.assert_array_equal(got, expected_box(padded[:, :96], 72, 60, box, 0))


class _Interface:
    """A CUDA array known only by its interface, as CuPy's or Numba's are."""

    def __init__(self, buf, shape, typestr):
        self.buf = buf
        self.__cuda_array_interface__ = {"version": 3, "data": (buf.ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": None}


@pytest.mark.parametrize("dtype, typestr", [(np.uint8, "|u1"), (np.float16, "<f2"),
                                            (np.int32, "<i4"), (np.float64, "<f8")])
def test_each_element_size_is_copied_from_an_array_interface(tma_copy, dtype, typestr):
    rng = np.random.default_rng(7)
    host = rng.integers(0, 120, size=(48, 128)).astype(dtype)
    buf = on_device(host)
    box = (8, 64 // np.dtype(dtype).itemsize * 2)  # 128 bytes a row of the box
    tmap = TensorMap.tiled(_Interface(buf, host.shape, typestr), box)
    assert tmap.dtype == np.dtype(dtype).name
    x = host.shape[1] - box[1] // 2  # half the box past the end of the rows
    got = copied_box(tma_copy, tmap, x, 44, box, dtype)
    np.testing.assert_array_equal(got, expected_box(host, x, 44, box, 0))


def test_the_driver_encodes_im2col_and_tiled_maps_of_every_swizzle():
    if cudaload.Device(0).compute_capability < (9, 0):
        pytest.skip("tensor maps need compute capability 9.0")
    buf = cudaload.alloc(2 * 8 * 8 * 64 * 2)
    for swizzle in ("none", "32B", "64B", "128B"):
        span = {"none": 128, "32B": 32, "64B": 64, "128B": 128}[swizzle]
        t = TensorMap.tiled(buf, (8, span // 2), dtype="float16", shape=(64, 128),
                            swizzle=swizzle, l2_promotion="128B")
        assert len(t) == 128 and bytes(t) != bytes(128)
    t = TensorMap.im2col(buf, dtype="float16", shape=(2, 8, 8, 64), lower_corner=(-1, -1),
                         upper_corner=(-1, -1), channels_per_pixel=64, pixels_per_column=64)
    assert t.kind == "im2col" and bytes(t) != bytes(128)


def test_the_pool_release_threshold_is_set_and_read_back():
    pool = cudaload.memory_pool()
    before = pool.release_threshold
    try:
        pool.release_threshold = 256 << 20
        assert pool.release_threshold == 256 << 20
        s = cudaload.Stream()
        buf = cudaload.alloc(64 << 20, stream=s)  # drawn from that pool, kept once freed
        buf.free(stream=s)
        s.synchronize()
        pool.release_threshold = (1 << 64) - 1
        assert pool.release_threshold == (1 << 64) - 1
    finally:
        pool.release_threshold = before
    assert pool.release_threshold == before
