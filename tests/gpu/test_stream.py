"""Streams, events and graphs on a real GPU."""

from __future__ import annotations

import pytest

import cudaload

from .kernels import SAXPY, TEMPLATED

np = pytest.importorskip("numpy")


def test_stream_ordering_events_and_timing():
    n = 1 << 20
    k = cudaload.RawKernel(TEMPLATED, "scale<float>")
    buf = cudaload.alloc(n * 4)
    s1, s2 = cudaload.Stream(), cudaload.Stream()
    host = np.ones(n, np.float32)
    buf.copy_from_host(host, stream=s1)
    start = cudaload.Event().record(s1)
    k(n // 256, 256, (buf, 3.0, n), stream=s1)
    done = s1.record()
    s2.wait(done)
    k(n // 256, 256, (buf, 2.0, n), stream=s2)
    out = np.empty(n, np.float32)
    buf.copy_to_host(out, stream=s2)
    s2.synchronize()
    assert done.query()
    assert (out == 6.0).all()
    assert start.elapsed_ms(done) >= 0.0
    assert s1.__cuda_stream__() == (0, s1.ptr)
    assert cudaload.Stream.from_handle(s1.ptr).handle == s1.handle


def test_graph_capture_and_replay():
    n = 1024
    k = cudaload.RawKernel(SAXPY, "saxpy")
    x = cudaload.alloc(n * 4).copy_from_host(np.ones(n, np.float32))
    y = cudaload.alloc(n * 4).memset(0)
    s = cudaload.Stream()
    with s.capture() as graph:
        for _ in range(100):
            k(n // 256, 256, (x, y, 1.0, n), stream=s)
    assert np.frombuffer(y.copy_to_host(), np.float32).sum() == 0  # captured, not run
    graph.launch(s)
    graph.launch(s)
    s.synchronize()
    assert (np.frombuffer(y.copy_to_host(), np.float32) == 200.0).all()


def test_capture_of_default_stream_is_refused():
    with pytest.raises(ValueError, match="default stream"):
        with cudaload.Stream.from_handle(0).capture():
            pass
