"""Graphs beyond replay on a real GPU: upload ahead of the first launch, update in place from a
re-capture (new arguments, no new instantiation), a refused update with its reason, host
functions captured into a graph."""

from __future__ import annotations

import pytest

import cudaload
from cudaload.errors import DriverError

np = pytest.importorskip("numpy")

FILL = r"""
extern "C" __global__ void fill(int *out, int value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
"""
N = 4096


def ints(buf):
    return np.frombuffer(buf.copy_to_host(), np.int32)


def captured(stream, k, *launches):
    with stream.capture() as graph:
        for out, value in launches:
            k(N // 256, 256, (out, value, N), stream=stream)
    return graph


def test_an_uploaded_graph_launches_with_its_results():
    k = cudaload.RawKernel(FILL, "fill")
    s = cudaload.Stream()
    out = cudaload.alloc(4 * N).memset(0)
    graph = captured(s, k, (out, 5))
    graph.upload(s)
    s.synchronize()
    assert (ints(out) == 0).all()  # uploaded, not run
    graph.launch(s)
    s.synchronize()
    assert (ints(out) == 5).all()


def test_an_update_changes_a_kernels_arguments_without_instantiating_again():
    k = cudaload.RawKernel(FILL, "fill")
    s = cudaload.Stream()
    a, b = cudaload.alloc(4 * N).memset(0), cudaload.alloc(4 * N).memset(0)
    graph = captured(s, k, (a, 7))
    graph.launch(s)
    s.synchronize()
    assert (ints(a) == 7).all()
    executable = graph._exec
    a.memset(0)
    graph.update(captured(s, k, (b, 9)))  # the other capture is dropped at once
    assert graph._exec == executable
    graph.launch(s)
    s.synchronize()
    assert (ints(b) == 9).all() and (ints(a) == 0).all()


def test_an_update_of_another_shape_is_refused_with_the_reason():
    k = cudaload.RawKernel(FILL, "fill")
    s = cudaload.Stream()
    a = cudaload.alloc(4 * N).memset(0)
    graph = captured(s, k, (a, 1))
    graph.instantiate()
    with pytest.raises(DriverError) as info:
        graph.update(captured(s, k, (a, 2), (a, 3)))  # two nodes where there was one
    assert info.value.name == "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"
    assert "refused because" in str(info.value)
    with pytest.raises(TypeError):
        graph.update(42)


def test_a_host_function_captured_into_a_graph_runs_at_each_launch():
    k = cudaload.RawKernel(FILL, "fill")
    s = cudaload.Stream()
    out = cudaload.alloc(4 * N).memset(0)
    seen = []
    with s.capture() as graph:
        k(N // 256, 256, (out, 4, N), stream=s)
        s.launch_host_func(lambda: seen.append(len(seen)))
    assert seen == []
    for _ in range(3):
        graph.launch(s)
    s.synchronize()
    assert seen == [0, 1, 2] and (ints(out) == 4).all()
