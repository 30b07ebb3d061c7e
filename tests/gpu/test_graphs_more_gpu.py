"""Graphs and streams on a real GPU beyond replay: closing them releases the driver's objects at
once, and work already queued still completes."""

from __future__ import annotations

import pytest

import cudaload

np = pytest.importorskip("numpy")

INC = r'extern "C" __global__ void inc(int *x) { x[threadIdx.x] += 1; }'


def ints(buf):
    return np.frombuffer(buf.copy_to_host(), np.int32)


def test_a_closed_graph_is_refused_and_its_launches_before_completed():
    k = cudaload.RawKernel(INC, "inc")
    s = cudaload.Stream()
    buf = cudaload.alloc(4 * 32).memset(0)
    k(1, 32, (buf,), stream=s)
    with s.capture() as graph:
        for _ in range(3):
            k(1, 32, (buf,), stream=s)
    graph.launch(s)
    graph.launch(s)
    graph.close()  # while its launches may still run: the driver frees it once they are done
    graph.close()
    s.synchronize()
    assert (ints(buf) == 7).all()
    with pytest.raises(ValueError, match="the graph is closed"):
        graph.launch(s)


def test_a_closed_stream_finishes_its_work_and_is_refused_after():
    k = cudaload.RawKernel(INC, "inc")
    s = cudaload.Stream()
    buf = cudaload.alloc(4 * 32).memset(0)
    for _ in range(5):
        k(1, 32, (buf,), stream=s)
    s.close()  # the queued launches still run
    cudaload.Device(0).synchronize()
    assert (ints(buf) == 5).all()
    with pytest.raises(ValueError, match="is closed"):
        k(1, 32, (buf,), stream=s)
    fresh = cudaload.Stream()  # the driver may hand out the same handle again
    k(1, 32, (buf,), stream=fresh)
    fresh.synchronize()
    assert (ints(buf) == 6).all()


def test_streams_and_graphs_closed_in_a_loop_leave_the_next_ones_working():
    k = cudaload.RawKernel(INC, "inc")
    buf = cudaload.alloc(4 * 32).memset(0)
    for _ in range(200):
        s = cudaload.Stream()
        with s.capture() as graph:
            k(1, 32, (buf,), stream=s)
        graph.launch(s)
        s.synchronize()
        graph.close()
        s.close()
    assert (ints(buf) == 200).all()
