"""The occupancy queries beyond one block size and the cluster and carveout attributes on a real
GPU, against cuda.bindings' own calls on the same CUfunction where it has them."""

from __future__ import annotations

import pytest

import cudaload

from .test_attributes import BUSY, _bindings, _cubin, _handle

np = pytest.importorskip("numpy")

CLUSTERED = r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) pair(int *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = blockIdx.x;
}
extern "C" __global__ void plain(int *out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1; }
"""


def _ok(driver, result):
    err, *values = result
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return values[0] if len(values) == 1 else tuple(values)


@pytest.mark.parametrize("smem, limit", [(0, 0), (0, 128), (16384, 0), (40000, 96)])
def test_max_potential_block_size_with_a_limit_matches_cuda_bindings(smem, limit):
    driver = _bindings()
    k = _cubin(BUSY).load().get_kernel("busy")
    func = driver.CUfunction(_handle(k))
    try:
        theirs = _ok(driver, driver.cuOccupancyMaxPotentialBlockSize(func, None, smem, limit))
    except TypeError:  # a cuda.bindings that wants the callback type even for NULL
        theirs = _ok(driver, driver.cuOccupancyMaxPotentialBlockSize(
            func, driver.CUoccupancyB2DSize(0), smem, limit))
    grid, block = k.max_potential_block_size(smem, block_size_limit=limit)
    assert (grid, block) == tuple(theirs)
    assert 0 < block <= (limit or 256)  # the kernel's launch bounds are 256


def test_max_potential_block_size_with_a_shared_memory_function():
    k = _cubin(BUSY).load().get_kernel("busy")
    assert k.max_potential_block_size(lambda b: 8192) == k.max_potential_block_size(8192)
    asked = []

    def per_block(block):  # 200 bytes a thread: large blocks fit fewer times
        asked.append(block)
        return 200 * block

    grid, block = k.max_potential_block_size(per_block)
    assert asked and block in asked
    assert k.occupancy(block, 200 * block).active_blocks_per_multiprocessor >= 1
    with pytest.raises(ZeroDivisionError):
        k.max_potential_block_size(lambda b: 1 // 0)


@pytest.mark.parametrize("blocks, block", [(1, 256), (2, 128), (4, 256)])
def test_available_dynamic_shared_memory_matches_cuda_bindings(blocks, block):
    driver = _bindings()
    k = _cubin(BUSY).load().get_kernel("busy")
    theirs = _ok(driver, driver.cuOccupancyAvailableDynamicSMemPerBlock(
        driver.CUfunction(_handle(k)), blocks, block))
    ours = k.available_dynamic_shared_memory(blocks, block)
    assert ours == theirs and ours > 0
    if blocks == 1:  # what is left is usable: a launch with it runs
        assert ours + k.attributes.shared_size_bytes <= cudaload.Device(0).attribute(
            "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")


def test_clusters_fit_and_the_cluster_attributes_read_and_set():
    driver = _bindings()
    mod = cudaload.Program(CLUSTERED).compile().load()
    pair, plain = mod.get_kernel("pair"), mod.get_kernel("plain")
    a = pair.attributes
    assert (a.required_cluster_width, a.required_cluster_height, a.required_cluster_depth) == \
        (2, 1, 1)
    assert plain.attributes.required_cluster_width == 0
    for kernel in (pair, plain):
        func = driver.CUfunction(_handle(kernel))
        attrs = kernel.attributes
        for name, enum in (
                ("cache_mode_ca", "CU_FUNC_ATTRIBUTE_CACHE_MODE_CA"),
                ("cluster_size_must_be_set", "CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET"),
                ("required_cluster_width", "CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH"),
                ("non_portable_cluster_size_allowed",
                 "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED"),
                ("preferred_shared_memory_carveout",
                 "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT")):
            theirs = _ok(driver, driver.cuFuncGetAttribute(
                getattr(driver.CUfunction_attribute, enum), func))
            assert getattr(attrs, name) == theirs, name
    plain.attributes.preferred_shared_memory_carveout = 50
    assert plain.attributes.preferred_shared_memory_carveout == 50
    sms = cudaload.Device(0).attribute("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")
    active = plain.max_active_clusters(64, 128, 2)
    assert 1 <= active <= sms * 16
    portable = plain.max_potential_cluster_size(64, 128)
    assert portable >= 2
    plain.attributes.non_portable_cluster_size_allowed = 1
    assert plain.attributes.non_portable_cluster_size_allowed == 1
    assert plain.max_potential_cluster_size(64, 128) >= portable
    out = cudaload.alloc(4 * 128 * 4).memset(0)
    pair(4, 128, (out,))  # the fixed cluster shape launches
    cudaload.Device(0).synchronize()
    assert np.frombuffer(out.copy_to_host(), np.int32).reshape(4, 128)[:, 0].tolist() == \
        [0, 1, 2, 3]
