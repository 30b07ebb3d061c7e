"""Graphs and streams on a real GPU beyond replay: closing them releases the driver's objects at
once, and work already queued still completes; a capture forks into other streams and joins
them back, their launches and host functions the graph's."""

from __future__ import annotations

import gc
import sys

import pytest

import cudaload
from cudaload.errors import DriverError

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


def test_stream_ordered_memory_freed_after_its_stream_closed_is_freed_after_that_work(
        monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    k = cudaload.RawKernel(INC, "inc")
    s = cudaload.Stream()
    pool = cudaload.memory_pool()
    before = pool.used
    buf = cudaload.alloc(4 * 32, stream=s).memset(0, stream=s)
    for _ in range(200):
        k(1, 32, (buf,), stream=s)
    out = cudaload.alloc(4 * 32).copy_from(buf, stream=s)
    s.close()
    del buf  # garbage now: freed once the launches queued before the close are done
    gc.collect()
    cudaload.Device(0).synchronize()
    assert unraisable == []
    assert (ints(out) == 200).all()
    assert pool.used == before  # freed, not leaked


def test_streams_and_graphs_closed_in_a_loop_leave_the_next_ones_working():
    k = cudaload.RawKernel(INC, "inc")
    buf = cudaload.alloc(4 * 32).memset(0)
    k(1, 32, (buf,))  # compiled and loaded before capturing
    cudaload.Device(0).synchronize()
    for _ in range(200):
        s = cudaload.Stream()
        with s.capture() as graph:
            k(1, 32, (buf,), stream=s)
        graph.launch(s)
        s.synchronize()
        graph.close()
        s.close()
    assert (ints(buf) == 201).all()


ADD = r'extern "C" __global__ void add(int *x, int v) { x[threadIdx.x] += v; }'


def test_a_capture_forks_into_other_streams_and_joins_them_back():
    k = cudaload.RawKernel(ADD, "add")
    s, t, u = cudaload.Stream(), cudaload.Stream(), cudaload.Stream()
    a, b, c = (cudaload.alloc(4 * 32).memset(0) for _ in range(3))
    k(1, 32, (a, 0), stream=s)  # compiled and loaded before capturing
    seen = []
    with s.capture() as graph:
        k(1, 32, (a, 1), stream=s)
        t.wait(s)                  # fork twice: t and u run after s's first launch
        u.wait(s)
        k(1, 32, (b, 2), stream=t)
        t.launch_host_func(lambda: seen.append("t"))
        k(1, 32, (c, 3), stream=u)
        s.wait(t)                  # join both before the block ends
        s.wait(u)
        k(1, 32, (a, 10), stream=s)
    for _ in range(3):
        graph.launch(s)
    s.synchronize()
    assert (ints(a) == 33).all() and (ints(b) == 6).all() and (ints(c) == 9).all()
    assert seen == ["t"] * 3  # the forked stream's host function, once per launch
    graph.close()


def test_an_unjoined_fork_fails_the_capture_saying_so():
    k = cudaload.RawKernel(ADD, "add")
    s, t = cudaload.Stream(), cudaload.Stream()
    a = cudaload.alloc(4 * 32).memset(0)
    k(1, 32, (a, 0), stream=s)
    with pytest.raises(DriverError, match="was not waited for in turn") as raised:
        with s.capture():
            t.wait(s)
            k(1, 32, (a, 1), stream=t)
    assert raised.value.name == "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"
    k(1, 32, (a, 5), stream=s)  # the stream is usable again
    s.synchronize()
    assert (ints(a) == 5).all()


def test_a_child_graphs_kernels_run_at_each_launch_of_the_parent():
    k = cudaload.RawKernel(ADD, "add")
    s = cudaload.Stream()
    a = cudaload.alloc(4 * 32).memset(0)
    k(1, 32, (a, 0), stream=s)
    seen = []
    with s.capture() as child:
        k(1, 32, (a, 1), stream=s)
        s.launch_host_func(lambda: seen.append("child"))
    with s.capture() as parent:
        k(1, 32, (a, 10), stream=s)
        parent.add_child(child)      # after the first launch
        k(1, 32, (a, 100), stream=s)
        parent.add_child(child)      # twice: each its own copy
    child.close()  # the parent runs its copy
    for _ in range(3):
        parent.launch(s)
    s.synchronize()
    assert (ints(a) == 3 * 112).all()
    assert seen == ["child"] * 6
    parent.close()
