"""Programs compiled with lto=True on a real GPU: the linked code runs and gives the plain code's
results, as CUBIN and as PTX, and its module refuses host access to its variables."""

from __future__ import annotations

import time

import pytest

import cudaload

from ..scenarios.lto_compiles import SOURCE

np = pytest.importorskip("numpy")

# A header's constants, a table indexed at run time, a read-only constant and a counter.
TABLES = r"""
struct Limits { static constexpr float scale = 2.0f; static constexpr int unused[8] = {1, 2, 3, 4, 5, 6, 7, 8}; };
__device__ float table[64] = {5, 6, 7};
__device__ int calls;
extern "C" __global__ void look(float *out, int n)
{
    int i = threadIdx.x;
    if (i < n) out[i] = Limits::scale * table[i] + table[0];
    if (i == 0) atomicAdd(&calls, 1);
}
"""


def _run(obj, n=32):
    out = cudaload.alloc(n * 4)
    out.copy_from_host(np.zeros(n, np.float32))
    obj.load().get_kernel("look")(1, n, (out, n))
    cudaload.Device(0).synchronize()
    return np.frombuffer(out.copy_to_host(), np.float32)


@pytest.mark.parametrize("output", ["cubin", "ptx"])
def test_linked_code_gives_the_plain_code_results(output):
    tag = f"\n// {time.time_ns()}"
    plain = cudaload.Program(TABLES + tag).compile(output=output)
    linked = cudaload.Program(TABLES + tag, lto=True).compile(output=output)
    assert linked.linked and not plain.linked and linked.kind == plain.kind == output
    expected = np.zeros(32, np.float32)
    expected[:3] = [5, 6, 7]
    expected = 2 * expected + 5
    assert (_run(plain) == expected).all()
    assert (_run(linked) == expected).all()


def test_a_linked_module_refuses_host_access_to_its_variables():
    mod = cudaload.Program(SOURCE + f"\n// {time.time_ns()}", lto=True).compile().load()
    with pytest.raises(ValueError, match="lto=True") as info:
        mod.get_global("counter")
    assert "without lto=True" in str(info.value)
    plain = cudaload.Program(SOURCE + f"\n// {time.time_ns()}").compile().load()
    assert plain.get_global("counter").nbytes == 4  # the same program without it: reachable
