"""Host functions and graph upload and update on the recording driver of tests/_fakelibs.py,
which calls host functions at the next synchronisation (and captured ones at each graph launch),
one fresh process each.

    python -m tests.scenarios.recorded_graphs SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.
"""

from __future__ import annotations

import ctypes
import gc
import json
import sys

from tests.scenarios.recorded_launches import fake, layout


def _host_calls() -> list:
    queued = ctypes.c_int()
    made = fake().fake_host_calls(ctypes.byref(queued))
    return [made, queued.value]


def _raised(call) -> list | None:
    try:
        call()
    except Exception as err:  # noqa: BLE001 (the type is what the test checks)
        return [type(err).__name__, str(err), getattr(err, "__notes__", [])]
    return None


def host_functions() -> dict:
    import cudaload

    out, seen = {}, []
    s = cudaload.Stream()
    for i in range(3):
        s.launch_host_func(lambda i=i: seen.append(i))  # only the driver holds these lambdas
    gc.collect()
    out["before_sync"] = [list(seen), _host_calls()]
    s.synchronize()
    out["after_sync"] = [list(seen), _host_calls()]

    def broken():
        raise ZeroDivisionError("in a host function")

    s.launch_host_func(broken)
    s.launch_host_func(lambda: seen.append("after"))
    s.launch_host_func(lambda: {}["second"])
    out["raised"] = _raised(s.synchronize)
    out["seen"] = list(seen)
    out["next_sync"] = _raised(s.synchronize)  # reported once, then gone
    s.launch_host_func(broken)
    out["device_sync"] = _raised(cudaload.Device(0).synchronize)
    out["not_callable"] = _raised(lambda: s.launch_host_func(42))
    from cudaload.launch import _host_calls as calls

    out["pending"] = len(calls._pending)
    return out


def graphs() -> dict:
    from cudaload import Program, Stream

    out, seen = {}, []
    layout((0, 4))
    k = Program('extern "C" __global__ void k(int n) {}').compile().load().get_kernel("k")
    s = Stream()

    def capture(n):
        with s.capture() as graph:
            k(1, 1, (n,), stream=s)
            s.launch_host_func(lambda: seen.append(n))
        return graph

    first, second = capture(1), capture(2)
    gc.collect()
    first.upload(s)
    uploaded, stream, updated, source = (ctypes.c_void_p() for _ in range(4))
    graph_calls = (ctypes.byref(uploaded), ctypes.byref(stream), ctypes.byref(updated),
                   ctypes.byref(source))
    fake().fake_graph_calls(*graph_calls)
    out["upload"] = [uploaded.value == 0x9000, stream.value == s.ptr]
    first.launch(s)
    first.launch(s)
    s.synchronize()
    out["replayed"] = list(seen)
    first.update(second)
    fake().fake_graph_calls(*graph_calls)
    out["update"] = [updated.value == 0x9000, source.value == 0x8010]  # second's graph
    del second  # the executable runs its host function now: kept alive by the update
    gc.collect()
    first.launch(s)
    s.synchronize()
    out["after_update"] = list(seen)
    fake().fake_set_update_result(2)  # CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
    out["refused"] = _raised(lambda: first.update(capture(3)))
    out["not_graph"] = _raised(lambda: first.update(42))
    return out


def _destroyed() -> list:
    handles = ctypes.POINTER(ctypes.c_void_p)()
    n = fake().fake_destroyed(ctypes.byref(handles))
    return [handles[i] for i in range(n)]


def closing() -> dict:
    from cudaload import Program, Stream

    out = {}
    layout((0, 4))
    k = Program('extern "C" __global__ void k(int n) {}').compile().load().get_kernel("k")
    s, other = Stream(), Stream()
    for _ in range(3):  # the fast path remembers s
        k(1, 1, (1,), stream=s)
    with s.capture() as graph:
        k(1, 1, (1,), stream=s)
        out["graph_in_capture"] = _raised(graph.close)
        out["stream_in_capture"] = _raised(s.close)
    graph.launch(s)
    before = len(_destroyed())
    graph.close()
    out["graph_destroyed"] = [hex(h) for h in _destroyed()[before:]]
    graph.close()  # a no-op
    out["graph_twice"] = len(_destroyed()) - before
    out["launch_closed"] = _raised(lambda: graph.launch(s))
    out["upload_closed"] = _raised(lambda: graph.upload(s))
    second = _capture(s, k)
    out["update_from_closed"] = _raised(lambda: second.update(graph))
    ptr = s.ptr
    before = len(_destroyed())
    s.close()
    out["stream_destroyed"] = [h == ptr for h in _destroyed()[before:]]
    s.close()
    out["stream_twice"] = len(_destroyed()) - before
    out["kernel_on_closed"] = _raised(lambda: k(1, 1, (1,), stream=s))
    out["sync_closed"] = _raised(s.synchronize)
    out["graph_on_closed"] = _raised(lambda: second.launch(s))
    out["equal"] = [s == s, s == other, other == s, repr(s)]
    k(1, 1, (1,), stream=other)  # other streams launch on
    foreign = Stream.from_handle(other.ptr)
    before = len(_destroyed())
    foreign.close()
    out["foreign_destroys"] = len(_destroyed()) - before
    other.synchronize()  # the stream it wrapped is open still
    return out


def forks() -> dict:
    from cudaload import Program, Stream
    from cudaload.launch import _host_calls as calls

    out, seen = {}, []
    layout((0, 4))
    k = Program('extern "C" __global__ void k(int n) {}').compile().load().get_kernel("k")
    s, t = Stream(), Stream()
    with s.capture() as graph:
        k(1, 1, (1,), stream=s)
        t.wait(s)  # fork: t records into the same graph
        k(1, 1, (2,), stream=t)
        t.launch_host_func(lambda: seen.append("forked"))  # only the graph holds it
        s.launch_host_func(lambda: seen.append("origin"))
        s.wait(t)  # join
    out["kept"] = [len(graph._calls), len(calls._captures)]
    gc.collect()
    graph.launch(s)
    s.synchronize()
    out["replayed"] = sorted(seen)
    fake().fake_unjoined(1)

    def unjoined():
        with s.capture():
            t.wait(s)
    out["unjoined"] = _raised(unjoined)
    out["after_unjoined"] = len(calls._captures)
    return out


def children() -> dict:
    from cudaload import Program, Stream
    from cudaload.bindings import driver

    out, seen = {}, []
    layout((0, 4))
    k = Program('extern "C" __global__ void k(int n) {}').compile().load().get_kernel("k")
    s = Stream()
    with s.capture() as child:
        k(1, 1, (1,), stream=s)
        s.launch_host_func(lambda: seen.append("child"))
    out["outside"] = _raised(lambda: child.add_child(child))
    with s.capture() as parent:
        k(1, 1, (2,), stream=s)
        parent.add_child(child)
        out["itself"] = _raised(lambda: parent.add_child(parent))
        out["not_graph"] = _raised(lambda: parent.add_child(42))
        s.launch_host_func(lambda: seen.append("parent"))
    added = ctypes.POINTER(ctypes.c_void_p)()
    counts = fake().fake_children(ctypes.byref(added))
    out["added"] = [counts, hex(added[0])]
    del child  # the parent keeps what its copy of the child runs
    gc.collect()
    parent.launch(s)
    s.synchronize()
    out["replayed"] = seen
    driver.api().version = 12020
    with s.capture() as old:
        out["old_driver"] = _raised(lambda: old.add_child(parent))
    return out


def _capture(s, k):
    with s.capture() as graph:
        k(1, 1, (2,), stream=s)
    return graph


SCENARIOS = {f.__name__: f for f in (host_functions, graphs, closing, forks, children)}

if __name__ == "__main__":
    import cudaload  # noqa: F401  (imported before the recording driver is opened, as by a user)

    fake()
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
