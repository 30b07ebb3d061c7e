"""Graphs built node by node and conditional nodes on the graph-building recording driver of
tests/_fake_graphs.py (named by $CUDALOAD_LIBCUDA), and conditional nodes asked of a driver
without them (the real libcuda 535), one fresh process each.

    python -m tests.scenarios.recorded_graph_nodes SCENARIO

Each scenario returns the driver calls it caused (and what it saw), printed as JSON on the last
line.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys

from tests.scenarios.recorded_graphs import _destroyed, _raised
from tests.scenarios.recorded_launches import fake, layout


def calls() -> list[str]:
    """The graph (and memory) calls the driver logged so far, one string each."""
    lib = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])
    out = ctypes.create_string_buffer(16384)
    n = lib.fake_memory_log(out, ctypes.c_size_t(len(out)))
    return out.raw[:n].decode().splitlines()


def _kernel(source: str, name: str):
    from cudaload import Program

    return Program(source).compile().load().get_kernel(name)


def explicit() -> dict:
    import cudaload

    layout((0, 8), (8, 4))
    k = _kernel('extern "C" __global__ void k(int *x, int n) {}', "k")
    buf, other = cudaload.alloc(64), cudaload.alloc(64)
    g = cudaload.Graph()
    fill = g.add_memset(buf, 7)
    run = g.add_kernel(k, 2, 32, (buf, 5), after=fill)
    copy = g.add_memcpy(other, buf, 64, after=[run])
    join = g.add_empty(after=(fill, copy))
    event = cudaload.Event()
    g.add_event_record(event, after=join)
    g.add_event_wait(event)
    child = cudaload.Graph()
    child.add_empty()
    nested = g.add_child(child, after=join)
    from cudaload.bindings._cuda_ffi import ffi

    out = {"ptrs": [f"{buf.ptr:x}", f"{other.ptr:x}",
                    f"{int(ffi.cast('uintptr_t', event.handle)):x}"]}
    out["nodes"] = [n.kind for n in (fill, run, copy, join, nested)] + [repr(run)]
    added = ctypes.POINTER(ctypes.c_void_p)()
    out["children"] = [fake().fake_children(ctypes.byref(added)), hex(added[0])]
    run.update((other, 6))  # before instantiation: the graph's node only
    s = cudaload.Stream()
    g.launch(s)
    run.update((buf, 9))  # the executable too
    run.update(grid=(4, 2), shared_mem=1024)
    out["log"] = calls()
    out["after_instantiate"] = _raised(g.add_empty)
    out["bad_update"] = _raised(lambda: run.update(("x", 1)))
    fresh = cudaload.Graph()
    out["count"] = _raised(lambda: fresh.add_kernel(k, 1, 1, (buf,)))
    out["kind"] = _raised(lambda: fresh.add_kernel(k, 1, 1, (buf, "five")))
    out["not_tuple"] = _raised(lambda: fresh.add_kernel(k, 1, 1, [buf, 5]))
    out["not_kernel"] = _raised(lambda: fresh.add_kernel(42, 1, 1, ()))
    out["too_big_grid"] = _raised(lambda: fresh.add_kernel(k, 2**31, 1, (buf, 5)))
    out["other_graph"] = _raised(lambda: fresh.add_empty(after=fill))
    out["not_node"] = _raised(lambda: fresh.add_empty(after=[42]))
    out["byte"] = _raised(lambda: fresh.add_memset(buf, 300))
    out["address_only"] = _raised(lambda: fresh.add_memset(buf.ptr, 0))
    out["past_end"] = _raised(lambda: fresh.add_memcpy(other, buf, 128))
    out["not_event"] = _raised(lambda: fresh.add_event_record(42))
    out["itself"] = _raised(lambda: fresh.add_child(fresh))
    fresh.close()
    out["closed"] = _raised(fresh.add_empty)
    return out


def conditionals() -> dict:
    import cudaload
    from cudaload.bindings import driver

    layout((0, 8), (8, 8))
    k = _kernel('extern "C" __global__ void step(int *x, cudaGraphConditionalHandle h) {}',
                "step")
    buf, s = cudaload.alloc(64), cudaload.Stream()
    g = cudaload.Graph()
    h = g.conditional_handle(default=1)
    loop = g.add_while(h)
    loop.body.add_kernel(k, 1, 1, (buf, h))  # the handle packs as the parameter's 8 bytes
    branch = g.add_if(h, orelse=True, after=loop)
    with branch.bodies[1].capture(s) as into:
        k(1, 1, (buf, h), stream=s)
    chosen = g.add_switch(g.conditional_handle(default=None), 3)
    out = {"handle": [int(h), repr(h)], "into": into is branch.bodies[1],
           "kinds": [loop.kind, branch.kind, chosen.kind, len(branch.bodies), len(chosen.bodies)]}
    out["body_after_outer"] = _raised(lambda: loop.body.add_empty(after=loop))
    out["body_launch"] = _raised(lambda: loop.body.launch(s))
    out["body_close"] = _raised(loop.body.close)
    out["not_handle"] = _raised(lambda: g.add_if(7))
    out["other_handle"] = _raised(lambda: cudaload.Graph().add_while(h))
    out["default"] = _raised(lambda: g.conditional_handle(default=-1))
    out["switch_count"] = _raised(lambda: g.add_switch(h, 0))
    layout((0, 8))  # code without its source: only the parameter's size is known
    code = cudaload.Program('extern "C" __global__ void raw(cudaGraphConditionalHandle h) {}'
                            ).compile().code
    raw = cudaload.ObjectCode.from_bytes(code, "cubin").load().get_kernel("raw")
    out["raw"] = _raised(lambda: loop.body.add_kernel(raw, 1, 1, (h,)))
    g.launch(s)
    out["log"] = calls()
    fresh = cudaload.Graph()
    handle = fresh.conditional_handle()
    driver.api().version = 12020
    out["old_if"] = _raised(lambda: fresh.add_if(handle))
    out["old_handle"] = _raised(fresh.conditional_handle)
    out["old_capture_into"] = _raised(lambda: fresh.capture(s).__enter__())
    driver.api().version = 12040
    out["old_switch"] = _raised(lambda: fresh.add_switch(handle, 2))
    out["old_else"] = _raised(lambda: fresh.add_if(handle, orelse=True))
    out["while_on_12_4"] = fresh.add_while(handle).kind
    return out


def driver_535() -> dict:
    """On the real libcuda 535 (CUDA 12.2), which has no conditional nodes."""
    import cudaload
    from cudaload.bindings import driver
    from cudaload.launch import conditional_nodes

    drv = driver.api()
    out = {"version": drv.version}
    out["while"] = _raised(lambda: conditional_nodes.entry_points("while"))
    drv.version = 12080  # a driver that says it has them still lacks the entry points
    out["claimed"] = _raised(lambda: conditional_nodes.entry_points("switch"))
    out["add_node"] = _raised(lambda: drv.cuGraphAddNode_v2)
    out["graph"] = _raised(cudaload.Graph)  # and no device to make a graph on
    return out


def failed_capture() -> dict:
    """A capture into a while node's body that the driver ends with an error, and graphs that
    the cycle collector finds while a capture records."""
    import cudaload

    layout((0, 8), (8, 8))
    k = _kernel('extern "C" __global__ void step(int *x, cudaGraphConditionalHandle h) {}',
                "step")
    buf, s = cudaload.alloc(64), cudaload.Stream()
    g = cudaload.Graph()
    h = g.conditional_handle(default=1)
    loop = g.add_while(h)
    root, body = _address(g.handle), _address(loop.body.handle)
    fake().fake_unjoined(1)  # the next cuStreamEndCapture fails
    out = {"capture": _raised(lambda: _capture_into(loop.body, s, k, buf, h))}
    out["launch"] = _raised(lambda: g.launch(s))
    out["body_add"] = _raised(lambda: loop.body.add_empty())
    out["child"] = _raised(lambda: cudaload.Graph().add_child(g))
    g.close()
    del g, loop, h
    gc.collect()
    out["root_destroyed"] = root in _destroyed()
    out["body_destroyed"] = body in _destroyed()
    # an instantiated graph that only the cycle collector frees, collected inside a capture
    old = cudaload.Graph()
    old.add_empty()
    old.instantiate()
    executable = _address(old._exec)
    del old
    with s.capture():
        gc.collect()
        out["destroyed_in_capture"] = executable in _destroyed()
    out["destroyed_after"] = executable in _destroyed()
    return out


def collected_in_capture() -> dict:
    """A buffer and a stream held only by a cycle (as a graph holds what it captured), which the
    cycle collector finds inside a capture block."""
    import cudaload

    layout((0, 8))
    s = cudaload.Stream()

    class Holder:
        pass

    gc.disable()  # the cycle is collected inside the capture block, not at an allocation before
    cycle = Holder()
    cycle.me, cycle.buf, cycle.stream = cycle, cudaload.alloc(64), cudaload.Stream()
    stream = _address(cycle.stream.handle)
    del cycle
    frees = fake().fake_frees()
    with s.capture():
        gc.collect()
        inside = {"freed": fake().fake_frees() - frees, "stream": stream in _destroyed()}
        # freed in the captured stream's order: the capture's own free node, made now
        scratch = cudaload.alloc(64, stream=s)
        scratch.free(stream=s)
        inside["free_node"] = [line.split()[0] for line in calls()[-2:]]
    return {"inside": inside, "after": {"freed": fake().fake_frees() - frees,
                                        "stream": stream in _destroyed()}}



def _address(handle) -> int:
    from cudaload.bindings import driver

    return int(driver.api().ffi.cast("size_t", handle))


def _capture_into(body, s, k, buf, h) -> None:
    with body.capture(s):
        k(1, 1, (buf, h), stream=s)


SCENARIOS = {f.__name__: f for f in (explicit, conditionals, failed_capture,
                                      collected_in_capture, driver_535)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
