"""Launches through the real Module, Kernel and Packer onto the recording driver of
tests/_fakelibs.py (named by $CUDALOAD_LIBCUDA), one fresh process each.

    python -m tests.scenarios.recorded_launches SCENARIO ARGS...

Each scenario returns what it saw, printed as JSON on the last line.  The recording driver and
cudaload are loaded inside the scenarios, so importing this module loads nothing.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys


@functools.cache
def fake() -> ctypes.CDLL:
    """The recording driver, with its fake_* controls."""
    return ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])


def layout(*pairs) -> None:
    """The parameter layout, (offset, size) each, reported for the next kernel first launched."""
    n = len(pairs)
    fake().fake_set_layout(n, (ctypes.c_size_t * n)(*[o for o, _ in pairs]),
                           (ctypes.c_size_t * n)(*[s for _, s in pairs]))


def last(nbytes: int) -> list:
    """[launches so far, grid + block + shared memory, parameter bytes (hex), symbol] of the last
    launch."""
    dims, data = (ctypes.c_uint * 7)(), ctypes.create_string_buffer(nbytes)
    name = ctypes.create_string_buffer(512)
    count = fake().fake_last(dims, data, ctypes.c_size_t(nbytes), name)
    return [count, list(dims), data.raw.hex(), name.value.decode()]


def refused(call):
    """The type name of the argument error ``call`` raised, or None."""
    from cudaload import LaunchArgumentError

    try:
        call()
    except (LaunchArgumentError, TypeError, ValueError) as err:
        return type(err).__name__
    return None


def exact_arguments() -> dict:
    import numpy as np

    import cudaload
    from cudaload import Program

    out = {}
    src = ('extern "C" __global__ void k(const float *x, float a, int n, double d, '
           'unsigned char c) {}')
    k = Program(src).compile().load().get_kernel("k")
    layout((0, 8), (8, 4), (12, 4), (16, 8), (24, 1))
    buf = cudaload.alloc(64)
    out["ptr"] = buf.ptr
    k((4, 2), 128, (buf, 2.5, -3, 1.25, 7), shared_mem=1024)
    out["first"] = last(25)
    k((8,), (32, 4), (buf.ptr, np.float32(0.5), np.int16(9), 2, True))  # a new shape: a new config
    out["second"] = last(25)
    k(np.int64(3), 64, (0, 1, 2, 3, 4))
    out["numpy_grid"] = last(25)
    out["float_grid"] = refused(lambda: k((1000 / 256,), 64, (0, 1.0, 1, 1.0, 1)))
    out["too_big"] = refused(lambda: k(1, 64, (0, 1.0, 2 ** 40, 1.0, 1)))
    out["after_refusals"] = last(25)[0]
    return out


def template_types() -> dict:
    import numpy as np

    from cudaload import Program

    out = {}
    src = '''
namespace ns { struct A { int x; }; struct B { float y; }; }
template <class T, class U> __global__ void scale(ns::A a, ns::B b, T t, U u, U v) {}
'''
    obj = Program(src, name_expressions=["scale<float, int>"]).compile()
    k = obj.load().get_kernel("scale<float, int>")
    layout((0, 4), (4, 4), (8, 4), (12, 4), (16, 4))
    a = (11).to_bytes(4, "little")
    k(1, 1, (a, np.float32(0.75).tobytes(), 2.5, 7, 1000))
    out["launch"] = last(20)
    out["float_into_int"] = refused(lambda: k(1, 1, (a, a, 2.5, 7, 1.5)))
    return out


def layout_wins() -> dict:
    from cudaload import Program

    src = '''
#define ARGS int a, double b
extern "C" __global__ void k(ARGS) {}
'''
    k = Program(src).compile().load().get_kernel("k")
    layout((0, 4), (8, 8))
    k(1, 1, (5, 2.5))
    return {"launch": last(16)}


def buffer_sizes() -> dict:
    import copy
    import pickle

    import cudaload

    out = {}
    out["float_size"] = refused(lambda: cudaload.alloc(2.5))
    buf = cudaload.alloc(16)
    out["negative_copy"] = refused(lambda: buf.copy_from_host(bytes(16), nbytes=-1))
    out["float_copy"] = refused(lambda: buf.copy_from_host(bytes(16), nbytes=8.0))
    out["float_memset"] = refused(lambda: buf.memset(1.7))
    out["copied"] = bytes(buf.copy_to_host(nbytes=4)).hex()  # what the look-alike writes
    for name, dup in (("copy", copy.copy), ("deepcopy", copy.deepcopy), ("pickle", pickle.dumps)):
        try:
            dup(buf)
            out[name] = None
        except TypeError as err:
            out[name] = str(err)
    return out


def foreign_context() -> dict:
    import cudaload

    def current():
        ctx = ctypes.c_void_p()
        fake().cuCtxGetCurrent(ctypes.byref(ctx))
        return ctx.value

    fake().fake_alloc_context.restype = ctypes.c_void_p
    cudaload.alloc(16)
    ours = current()
    fake().cuCtxSetCurrent(ctypes.c_void_p(0x9000))  # as torch.cuda.set_device would
    cudaload.alloc(16)
    return {"contexts": [ours, fake().fake_alloc_context()]}


def foreign_stream() -> dict:
    from cudaload import Program

    class CupyLikeStream:  # what the kernel reads of a CuPy stream: its handle and device
        def __init__(self, ptr, device_id):
            self.ptr, self.device_id = ptr, device_id

    out = {}
    k = Program('extern "C" __global__ void k(int n) {}').compile().load().get_kernel("k")
    layout((0, 4))
    k(1, 1, (1,), stream=CupyLikeStream(0x5000, 0))
    k(1, 1, (1,), stream=CupyLikeStream(0, -1))  # CuPy's null stream names no device
    out["same_device"] = last(4)[0]
    try:
        k(1, 1, (2,), stream=CupyLikeStream(0x6000, 1))
        out["other_device"] = None
    except ValueError as err:
        out["other_device"] = str(err)
    out["launches"] = last(4)[0]
    return out


def loaded_once() -> dict:
    import cudaload
    from cudaload import Program

    out = {}
    src = 'extern "C" __global__ void k(int n) {}'
    layout((0, 4))
    for i in range(5):  # as code written for CuPy makes its RawKernel where it launches it
        cudaload.RawKernel(src, "k")(1, 1, (i,))
    out["loads"] = fake().fake_loads()
    out["same"] = Program(src).compile().load() is Program(src).compile().load()
    cudaload.Module(Program(src).compile())  # an explicit Module is a separate load
    out["explicit"] = fake().fake_loads()
    out["launches"] = last(4)[0]
    return out


def graph_keeps_code() -> dict:
    import gc

    import cudaload
    from cudaload import Program

    out = {}
    layout((0, 4))
    stream = cudaload.Stream()
    with stream.capture() as graph:
        module = cudaload.Module(Program('extern "C" __global__ void k(int n) {}').compile())
        module.get_kernel("k")(1, 1, (7,), stream=stream)
        del module  # the kernel and its module are gone; the graph still refers to the code
        gc.collect()
    out["during"] = fake().fake_unloads()
    graph.launch(stream)
    gc.collect()
    out["after_launch"] = fake().fake_unloads()
    del graph
    gc.collect()
    out["after_graph"] = fake().fake_unloads()
    module = cudaload.Module(Program('extern "C" __global__ void k(int n) {}').compile())
    del module
    gc.collect()
    out["no_graph"] = fake().fake_unloads()
    return out


def thread_states() -> dict:
    import gc
    import threading

    from cudaload import Program

    from cudaload.launch import kernel

    out = {}
    layout((0, 4))
    k = Program('extern "C" __global__ void k(int n) {}').compile().load().get_kernel("k")
    k(1, 1, (0,))

    def work(i):
        k(1, 1, (i,))

    for round in range(4):  # a pool's threads come and go
        threads = [threading.Thread(target=work, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    gc.collect()
    out["states"] = sum(type(o) is kernel._ThreadState for o in gc.get_objects())
    out["launches"] = last(4)[0]
    return out


def bench_breakdown(bench: str) -> dict:
    """launch_bench.breakdown, imported from the folder ``bench``, of a two-argument kernel."""
    import cudaload
    from cudaload import Program

    sys.path.insert(0, bench)
    import launch_bench

    launch_bench.SETTLE_S = 0.0
    layout((0, 8), (8, 4))
    k = Program('extern "C" __global__ void k(float *x, int n) {}').compile().load().get_kernel("k")
    return {"breakdown": launch_bench.breakdown(k, (cudaload.alloc(8), 1), cudaload.Stream(),
                                                50, 2)}


def long_function_pointer() -> dict:
    """Kernels with a function-pointer parameter of a long name, launched: their parameter types,
    the bytes and symbol the driver saw; and what a kernel name holding a NUL raises."""
    from cudaload import Program

    layout((0, 8), (8, 8), (16, 4))
    name = "f" * 34
    src = ('extern "C" __global__ void apply(float *x, float (*%s)(float), int n) {}\n'
           'template <class T> __global__ void tapply(T *x, T (*%s)(T), int n) {}' % (name, name))
    mod = Program(src, name_expressions=("tapply<float>",)).compile(arch=90).load()
    out = {}
    for kernel in ("apply", "tapply<float>"):
        k = mod.get_kernel(kernel)
        k(1, 32, (0x1000, 0x2000, 7))
        _count, _dims, data, seen = last(20)
        out[kernel] = [[p.ctype for p in k.params], data, seen]
    try:
        mod.get_kernel("apply\0evil")
    except ValueError as err:
        out["nul"] = str(err)
    return out


SCENARIOS = {f.__name__: f for f in (
    exact_arguments, template_types, layout_wins, buffer_sizes, foreign_context, foreign_stream,
    loaded_once, graph_keeps_code, thread_states, bench_breakdown, long_function_pointer)}

if __name__ == "__main__":
    import cudaload  # imported before the recording driver is opened, as by a user)

    fake()
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:])))
