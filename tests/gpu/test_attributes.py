"""Kernel.attributes and Kernel.occupancy against what the driver says through other paths: CuPy
loading the same CUBIN itself, and cuda.bindings' occupancy calls."""

from __future__ import annotations

import pytest

import cudaload

np = pytest.importorskip("numpy")

# Static shared memory, __constant__ memory, a stack array indexed at run time
# and launch bounds that cap the block below the device's 1024 threads.
BUSY = r"""
__constant__ float table[64];
extern "C" __global__ void __launch_bounds__(256) busy(float *out, const int *idx, int n) {
    __shared__ float tile[256];
    float local[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < 32; ++j) local[j] = table[(i + j) & 63] * j;
    tile[threadIdx.x] = local[idx[i % n] & 31];
    __syncthreads();
    if (i < n) out[i] = tile[255 - threadIdx.x];
}
"""
TINY = 'extern "C" __global__ void tiny(int *x) { x[threadIdx.x] = threadIdx.x; }'
NAMES = ("max_threads_per_block", "num_regs", "shared_size_bytes", "const_size_bytes",
         "local_size_bytes", "ptx_version", "binary_version", "max_dynamic_shared_size_bytes")


def _cubin(source: str) -> cudaload.ObjectCode:
    obj = cudaload.Program(source).compile(output="cubin")
    assert obj.kind == "cubin"
    return obj


def _handle(kernel) -> int:
    """The CUfunction cudaload launches ``kernel`` through, as an int."""
    from cudaload.bindings import driver

    func = kernel._kernel_state._function(cudaload.Device(0))
    return int(driver.api().ffi.cast("uintptr_t", func))


def test_attributes_match_cupys_for_the_same_cubin(tmp_path):
    cupy = pytest.importorskip("cupy")
    obj = _cubin(BUSY)
    ours = obj.load().get_kernel("busy").attributes
    path = tmp_path / "busy.cubin"
    path.write_bytes(obj.code)
    theirs = cupy.RawModule(path=str(path)).get_function("busy")
    assert {name: getattr(ours, name) for name in NAMES} == \
        {name: getattr(theirs, name) for name in NAMES}
    assert ours.as_dict() == {name: theirs.attributes[name] for name in NAMES}
    # Values that show each attribute is the kernel's, not a default: the launch bounds, the
    # 1 KiB tile, the device's architecture.  (The array's stack frame is no local_size_bytes:
    # the driver gives 0 for it on the H200, to CuPy as well.)
    assert ours.max_threads_per_block == 256 and ours.shared_size_bytes == 1024
    assert ours.num_regs > 0
    assert ours.binary_version == cudaload.Device(0).arch


def _bindings():
    driver = pytest.importorskip("cuda.bindings.driver")
    return driver


def _theirs(driver, handle: int, block: int, smem: int) -> tuple[int, int, int]:
    func = driver.CUfunction(handle)
    err, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block, smem)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    try:  # no callback: the same dynamic shared memory for every block size
        err, min_grid, best = driver.cuOccupancyMaxPotentialBlockSize(func, None, smem, 0)
    except TypeError:  # a cuda.bindings that wants the callback type even for NULL
        err, min_grid, best = driver.cuOccupancyMaxPotentialBlockSize(
            func, driver.CUoccupancyB2DSize(0), smem, 0)
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return blocks, best, min_grid


@pytest.mark.parametrize("block, smem", [(32, 0), (128, 0), (256, 0), (256, 16384),
                                         (96, 40000)])
def test_occupancy_matches_cuda_bindings(block, smem):
    driver = _bindings()
    k = _cubin(BUSY).load().get_kernel("busy")
    occ = k.occupancy(block, shared_mem=smem)
    assert (occ.active_blocks_per_multiprocessor, occ.suggested_block_size,
            occ.min_grid_size) == _theirs(driver, _handle(k), block, smem)
    dev = cudaload.Device(0)
    per_sm = dev.attribute("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR")
    warps = occ.active_blocks_per_multiprocessor * -(-block // 32)
    assert occ.occupancy == pytest.approx(warps * 32 / per_sm) and 0 < occ.occupancy <= 1


def test_occupancy_of_the_same_cubin_loaded_by_cupy_agrees(tmp_path):
    cupy = pytest.importorskip("cupy")
    driver = _bindings()
    obj = _cubin(BUSY)
    k = obj.load().get_kernel("busy")
    path = tmp_path / "busy.cubin"
    path.write_bytes(obj.code)
    function = cupy.RawModule(path=str(path)).get_function("busy")
    handle = int(function.kernel.ptr)  # CuPy's own CUfunction for the same code
    for block in (64, 256):
        occ = k.occupancy(block)
        assert _theirs(driver, handle, block, 0) == (
            occ.active_blocks_per_multiprocessor, occ.suggested_block_size, occ.min_grid_size)


def test_a_tiny_kernel_fills_a_multiprocessor_and_large_shared_memory_counts_after_opt_in():
    driver = _bindings()
    k = _cubin(TINY).load().get_kernel("tiny")
    dev = cudaload.Device(0)
    per_sm = dev.attribute("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR")
    full = k.occupancy(1024)
    assert full.active_blocks_per_multiprocessor == per_sm // 1024 and full.occupancy == 1.0
    assert k.occupancy(full.suggested_block_size).occupancy == 1.0
    # Beyond the default 48 KiB the kernel is opted in first, as a launch would be, so the
    # answer counts the memory instead of refusing the block.
    big = 100 * 1024
    occ = k.occupancy(256, shared_mem=big)
    assert k.attributes.max_dynamic_shared_size_bytes >= big
    per_sm_smem = dev.attribute("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
    assert 1 <= occ.active_blocks_per_multiprocessor <= per_sm_smem // big
    assert _theirs(driver, _handle(k), 256, big)[0] == occ.active_blocks_per_multiprocessor
    out = cudaload.alloc(4 * 256)
    k(1, 256, (out,), shared_mem=big)  # and the launch it predicts runs
    dev.synchronize()
    assert np.frombuffer(out.copy_to_host(), np.int32).tolist() == list(range(256))


def test_bad_block_sizes_are_refused_with_the_kernels_limit():
    k = _cubin(BUSY).load().get_kernel("busy")
    with pytest.raises(ValueError, match="at most 256"):
        k.occupancy(512)
    with pytest.raises(TypeError):
        k.occupancy(256.0)
    with pytest.raises(ValueError):
        k.occupancy(0)
