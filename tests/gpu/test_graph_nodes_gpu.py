"""Graphs built node by node and conditional nodes on a real GPU: a memset, a kernel and a copy
to pinned memory checked on the host, a kernel node updated in the executable, a while loop
counting a device value up by a kernel that sets the handle, if nodes taken and not taken, a
switch, and a body captured into (with a graph collected meanwhile, and one whose capture the
driver invalidated)."""

from __future__ import annotations

import gc

import pytest

import cudaload
from cudaload.errors import DriverError

np = pytest.importorskip("numpy")

N = 4096
ADD = r"""
extern "C" __global__ void add(int *x, int value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += value;
}
extern "C" __global__ void fill(int *x, int value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}
"""
# NVRTC declares cudaGraphSetConditional only with -rdc=true; declared here, the driver resolves
# it when it loads the code (no libcudadevrt).
STEP = r"""
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle h, unsigned int v);
extern "C" __global__ void step(int *count, int limit, cudaGraphConditionalHandle h) {
    *count += 1;
    cudaGraphSetConditional(h, *count < limit);
}
"""
# The other way: relocatable code, which NVRTC gives the device runtime's declarations, linked.
DECIDE = r"""
extern "C" __global__ void decide(const int *flag, cudaGraphConditionalHandle h) {
    cudaGraphSetConditional(h, *flag);
}
extern "C" __global__ void mark(int *out, int value) { *out = value; }
"""


def ints(buf):
    return np.frombuffer(buf.copy_to_host(), np.int32)


def one_int(value: int):
    return np.array([value], np.int32)


def decide_module():
    obj = cudaload.Program(DECIDE, relocatable=True).compile()
    return cudaload.Linker(obj).link().load()


def test_an_explicit_graph_of_memset_kernel_and_copy_is_checked_on_the_host():
    k = cudaload.RawKernel(ADD, "add")
    buf, host = cudaload.alloc(4 * N), cudaload.alloc_host(4 * N)
    g = cudaload.Graph()
    filled = g.add_memset(buf, 1)  # every byte 1: each int 0x01010101
    added = g.add_kernel(k, N // 256, 256, (buf, 5, N), after=filled)
    g.add_memcpy(host, buf, 4 * N, after=added)
    s = cudaload.Stream()
    for _ in range(2):  # the memset starts each launch over
        np.asarray(host)[:] = 0
        g.launch(s)
        s.synchronize()
        assert (np.asarray(host).view(np.int32) == 0x01010101 + 5).all()
    g.close()


def test_a_kernel_node_update_changes_an_argument_without_instantiating_again():
    k = cudaload.RawKernel(ADD, "fill")
    buf, s = cudaload.alloc(4 * N).memset(0), cudaload.Stream()
    g = cudaload.Graph()
    node = g.add_kernel(k, N // 256, 256, (buf, 3, N))
    g.launch(s)
    s.synchronize()
    assert (ints(buf) == 3).all()
    executable = g._exec
    node.update((buf, 8, N))
    g.launch(s)
    s.synchronize()
    assert (ints(buf) == 8).all()
    node.update((buf, 2, N), grid=1)  # the first block only
    g.launch(s)
    s.synchronize()
    out = ints(buf)
    assert (out[:256] == 2).all() and (out[256:] == 8).all()
    assert g._exec is executable  # the same executable all along


def test_a_while_node_counts_a_device_value_up_to_its_limit():
    step = cudaload.Program(STEP).compile().load().get_kernel("step")
    count, s = cudaload.alloc(4).memset(0), cudaload.Stream()
    g = cudaload.Graph()
    handle = g.conditional_handle(default=1)  # 1 at each launch: the body runs at least once
    loop = g.add_while(handle)
    loop.body.add_kernel(step, 1, 1, (count, 10, handle))
    g.launch(s)
    s.synchronize()
    assert ints(count)[0] == 10
    g.launch(s)  # once more: the body runs once, sees 11 and stops
    s.synchronize()
    assert ints(count)[0] == 11


def test_a_while_body_captured_into_counts_the_same():
    step = cudaload.Program(STEP).compile().load().get_kernel("step")
    count, s = cudaload.alloc(4).memset(0), cudaload.Stream()
    assert len(step.params) == 3  # its code loaded before the capture
    g = cudaload.Graph()
    handle = g.conditional_handle(default=1)
    loop = g.add_while(handle)
    with loop.body.capture(s):
        step(1, 1, (count, 25, handle), stream=s)
    g.launch(s)
    s.synchronize()
    assert ints(count)[0] == 25


class Decided:
    """A graph whose first node, a kernel, sets its handle to the int at ``flag``; ``mark``
    writes its second argument to ``out``."""

    def __init__(self):
        mod = decide_module()
        self.mark = mod.get_kernel("mark")
        self.flag, self.out, self.s = cudaload.alloc(4), cudaload.alloc(4), cudaload.Stream()
        self.graph = cudaload.Graph()
        self.handle = self.graph.conditional_handle(default=0)
        self.decided = self.graph.add_kernel(mod.get_kernel("decide"), 1, 1,
                                             (self.flag, self.handle))

    def run(self, value: int) -> int:
        """Launch with ``value`` at ``flag`` and -1 in ``out``; what ``out`` holds then."""
        self.flag.copy_from_host(one_int(value))
        self.out.copy_from_host(one_int(-1))
        self.graph.launch(self.s)
        self.s.synchronize()
        return int(ints(self.out)[0])


def test_an_if_node_runs_its_body_only_when_the_kernel_sets_the_handle():
    d = Decided()
    branch = d.graph.add_if(d.handle, after=d.decided)
    branch.body.add_kernel(d.mark, 1, 1, (d.out, 7))
    assert [d.run(value) for value in (1, 0, 5)] == [7, -1, 7]


def test_an_if_else_and_a_switch_node_choose_their_bodies():
    from cudaload.bindings import driver

    if driver.version() < 12080:
        pytest.skip("if/else and switch nodes need a CUDA 12.8 driver")
    d = Decided()
    choice = d.graph.add_switch(d.handle, 3, after=d.decided)
    for i, body in enumerate(choice.bodies):
        body.add_kernel(d.mark, 1, 1, (d.out, 10 + i))
    assert [d.run(value) for value in (0, 2, 1, 3)] == [10, 12, 11, -1]  # 3: no body runs
    e = Decided()
    both = e.graph.add_if(e.handle, orelse=True, after=e.decided)
    both.bodies[0].add_kernel(e.mark, 1, 1, (e.out, 1))
    both.bodies[1].add_kernel(e.mark, 1, 1, (e.out, 2))
    assert [e.run(value) for value in (1, 0)] == [1, 2]


def test_a_graph_collected_inside_a_body_capture_leaves_the_capture_working():
    step = cudaload.Program(STEP).compile().load().get_kernel("step")
    count, s = cudaload.alloc(4).memset(0), cudaload.Stream()
    old = cudaload.Graph()
    old.add_empty()
    old.instantiate()
    del old  # garbage only the cycle collector finds
    g = cudaload.Graph()
    handle = g.conditional_handle(default=1)
    loop = g.add_while(handle)
    with loop.body.capture(s):
        gc.collect()  # destroys nothing until the capture has ended
        step(1, 1, (count, 5, handle), stream=s)
    g.launch(s)
    s.synchronize()
    assert ints(count)[0] == 5


def test_an_invalidated_body_capture_refuses_its_graph_and_collecting_it_does_not_crash():
    count, s = cudaload.alloc(4).memset(0), cudaload.Stream()
    g = cudaload.Graph()
    loop = g.add_while(g.conditional_handle(default=0))
    with pytest.raises(DriverError):
        with loop.body.capture(s):
            count.memset(1, stream=s)
            cudaload.Device(0).synchronize()  # not allowed in a capture: invalidates it
    with pytest.raises(ValueError, match="a capture into this graph"):
        g.launch(s)
    del g, loop
    gc.collect()  # the driver freed the body: destroying the graph would free it again
    s.synchronize()
