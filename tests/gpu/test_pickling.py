"""Compiled code sent to spawned worker processes, loaded and launched there on the GPU."""

from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

import cudaload

from .kernels import TEMPLATED

np = pytest.importorskip("numpy")

FILL = r"""
extern "C" __global__ void fill(int *x, int value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value + i;
}
"""


def _mapped_nvrtc() -> bool:
    with open("/proc/self/maps") as f:
        return any("libnvrtc" in line for line in f)


def launch_in_worker(obj, name: str, value: int, n: int) -> dict:
    """Load ``obj`` in this (spawned) process, launch ``name`` and return what it wrote."""
    out = cudaload.alloc(4 * n).memset(0)
    kernel = obj.load().get_kernel(name)
    if name == "fill":
        kernel((n + 127) // 128, 128, (out, value, n))
    else:
        out.copy_from_host(np.arange(n, dtype=np.float32))
        kernel((n + 127) // 128, 128, (out, np.float32(value), n))
    cudaload.Device(0).synchronize()
    dtype = np.int32 if name == "fill" else np.float32
    return {"values": np.frombuffer(out.copy_to_host(), dtype).tolist(),
            "nvrtc": _mapped_nvrtc()}


def test_workers_launch_code_compiled_here_without_nvrtc():
    obj = cudaload.Program(FILL).compile()
    n = 1000
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        results = list(pool.map(launch_in_worker, [obj, obj], ["fill", "fill"], [5, 7], [n, n]))
    for result, value in zip(results, (5, 7)):
        assert result["values"] == [value + i for i in range(n)]
        assert result["nvrtc"] is False  # the workers only loaded CUBIN bytes


def test_a_template_kernel_is_found_by_its_lowered_name_in_the_worker():
    obj = cudaload.Program(TEMPLATED, name_expressions=["scale<float>"]).compile()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result = pool.apply(launch_in_worker, (obj, "scale<float>", 3, 256))
    assert result["values"] == [3.0 * i for i in range(256)]


def test_gpu_state_refuses_to_travel_and_occupancy_results_do():
    buf = cudaload.alloc(16)
    module = cudaload.Program(FILL).compile().load()
    k = module.get_kernel("fill")
    for value in (buf, module, k, k.attributes, cudaload.Stream(), cudaload.Event()):
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(value)
    occ = pickle.loads(pickle.dumps(k.occupancy(128)))  # plain numbers
    assert occ.block == 128 and occ.active_blocks_per_multiprocessor >= 1
    assert pickle.loads(pickle.dumps(k.attributes.as_dict())) == k.attributes.as_dict()
