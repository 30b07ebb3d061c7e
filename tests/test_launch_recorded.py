"""The launch path without a GPU: a driver look-alike records what ``cuLaunchKernelEx`` receives.

Kernels are compiled by the real NVRTC and go through the real Module, Kernel and Packer; only the
driver underneath is a recording one (tests/_fakelibs.py), which reports the parameter layout the
test gives, as ``cuFuncGetParamInfo`` does for the compiled kernel.  What a launch computes is
checked on the GPU by tests/gpu/; here, that the right bytes and dimensions reach the driver.
"""

from __future__ import annotations

import struct

import pytest

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests.conftest import ROOT, run_json

pytest.importorskip("numpy")

# Runs in a fresh process with the recording driver: layout(*(offset, size)) before a kernel's first
# launch, last(nbytes) -> (launches so far, grid + block + shared memory, parameter bytes, symbol).
_HARNESS = """
import ctypes, json, os
import numpy as np
import cudaload
from cudaload import LaunchArgumentError, Program
fake = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])

def layout(*pairs):
    n = len(pairs)
    fake.fake_set_layout(n, (ctypes.c_size_t * n)(*[o for o, _ in pairs]),
                         (ctypes.c_size_t * n)(*[s for _, s in pairs]))

def last(nbytes):
    dims, data, name = (ctypes.c_uint * 7)(), ctypes.create_string_buffer(nbytes), \\
        ctypes.create_string_buffer(512)
    count = fake.fake_last(dims, data, ctypes.c_size_t(nbytes), name)
    return [count, list(dims), data.raw.hex(), name.value.decode()]

def refused(call):
    try:
        call()
    except (LaunchArgumentError, TypeError, ValueError) as err:
        return type(err).__name__
    return None

out = {}
"""


def run(recording_driver, body: str) -> dict:
    return run_json(_HARNESS + body + "\nprint(json.dumps(out))\n",
                    env={"CUDALOAD_LIBCUDA": recording_driver})


def test_arguments_and_dimensions_reach_the_driver_exactly(recording_driver):
    out = run(recording_driver, """
src = 'extern "C" __global__ void k(const float *x, float a, int n, double d, unsigned char c) {}'
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
""")
    ptr = out["ptr"]
    count, dims, data, name = out["first"]
    assert (count, dims, name) == (1, [4, 2, 1, 128, 1, 1, 1024], "k")
    assert bytes.fromhex(data) == struct.pack("<QfidB", ptr, 2.5, -3, 1.25, 7)
    count, dims, data, _ = out["second"]
    assert (count, dims) == (2, [8, 1, 1, 32, 4, 1, 0])
    assert bytes.fromhex(data) == struct.pack("<QfidB", ptr, 0.5, 9, 2.0, 1)
    assert out["numpy_grid"][1][:3] == [3, 1, 1]
    assert out["float_grid"] == "TypeError" and out["too_big"] == "LaunchArgumentError"
    assert out["after_refusals"] == 3  # neither refused launch reached the driver


def test_template_parameter_types_come_from_the_lowered_name(recording_driver):
    out = run(recording_driver, """
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
""")
    count, _dims, data, name = out["launch"]
    assert name.startswith("_Z5scale")  # launched by its lowered name
    assert bytes.fromhex(data) == struct.pack("<i4sfii", 11, struct.pack("<f", 0.75), 2.5, 7, 1000)
    assert out["float_into_int"] == "LaunchArgumentError"  # the last U is int, not float


def test_source_types_that_disagree_with_the_layout_give_way_to_it(recording_driver):
    out = run(recording_driver, """
src = '''
#define ARGS int a, double b
extern "C" __global__ void k(ARGS) {}
'''
k = Program(src).compile().load().get_kernel("k")
layout((0, 4), (8, 8))
k(1, 1, (5, 2.5))
out["launch"] = last(16)
""")
    assert bytes.fromhex(out["launch"][2]) == struct.pack("<i4xd", 5, 2.5)


def test_buffer_sizes_and_values_are_integers_and_buffers_are_not_duplicated(recording_driver):
    out = run(recording_driver, """
import copy, pickle
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
""")
    assert out["float_size"] == "TypeError" and out["float_memset"] == "TypeError"
    assert out["negative_copy"] == "ValueError" and out["float_copy"] == "TypeError"
    assert out["copied"] == "abababab"
    assert "alloc(buf.nbytes).copy_from(buf)" in out["copy"] and out["deepcopy"] == out["copy"]
    assert "cannot be pickled" in out["pickle"]


def test_a_context_another_library_made_current_is_replaced_before_allocating(recording_driver):
    out = run(recording_driver, """
def current():
    ctx = ctypes.c_void_p()
    fake.cuCtxGetCurrent(ctypes.byref(ctx))
    return ctx.value
fake.fake_alloc_context.restype = ctypes.c_void_p
cudaload.alloc(16)
ours = current()
fake.cuCtxSetCurrent(ctypes.c_void_p(0x9000))  # as torch.cuda.set_device would, in this thread
cudaload.alloc(16)
out["contexts"] = [ours, fake.fake_alloc_context()]
""")
    ours, allocated_in = out["contexts"]
    assert ours == allocated_in == 0x1000  # the device's primary context, bound again first


def test_a_foreign_stream_of_another_device_is_refused_before_the_launch(recording_driver):
    out = run(recording_driver, """
class CupyLikeStream:  # what the kernel reads of a CuPy stream: its handle and device
    def __init__(self, ptr, device_id):
        self.ptr, self.device_id = ptr, device_id
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
""")
    assert out["same_device"] == 2 and out["launches"] == 2
    assert "the stream is on device 1 but device 0 is current" in out["other_device"]


def test_code_compiled_once_is_loaded_once_however_many_kernels_are_made(recording_driver):
    out = run(recording_driver, """
src = 'extern "C" __global__ void k(int n) {}'
layout((0, 4))
for i in range(5):  # as code written for CuPy makes its RawKernel where it launches it
    cudaload.RawKernel(src, "k")(1, 1, (i,))
out["loads"] = fake.fake_loads()
out["same"] = Program(src).compile().load() is Program(src).compile().load()
cudaload.Module(Program(src).compile())  # an explicit Module is a separate load
out["explicit"] = fake.fake_loads()
out["launches"] = last(4)[0]
""")
    assert out["loads"] == 1 and out["same"] and out["explicit"] == 2
    assert out["launches"] == 5


def test_code_a_graph_captured_stays_loaded_while_the_graph_lives(recording_driver):
    out = run(recording_driver, """
import gc
layout((0, 4))
stream = cudaload.Stream()
with stream.capture() as graph:
    module = cudaload.Module(Program('extern "C" __global__ void k(int n) {}').compile())
    module.get_kernel("k")(1, 1, (7,), stream=stream)
    del module  # the kernel and its module are gone; the graph still refers to the code
    gc.collect()
out["during"] = fake.fake_unloads()
graph.launch(stream)
gc.collect()
out["after_launch"] = fake.fake_unloads()
del graph
gc.collect()
out["after_graph"] = fake.fake_unloads()
module = cudaload.Module(Program('extern "C" __global__ void k(int n) {}').compile())
del module
gc.collect()
out["no_graph"] = fake.fake_unloads()
""")
    assert out["during"] == out["after_launch"] == 0
    assert out["after_graph"] == 1 and out["no_graph"] == 2


def test_launch_state_of_finished_threads_is_released(recording_driver):
    out = run(recording_driver, """
import gc, threading
from cudaload.launch import kernel
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
out["states"] = sum(type(o) is kernel._Launch for o in gc.get_objects())
out["launches"] = last(4)[0]
""")
    assert out["launches"] == 41 and out["states"] == 1  # the main thread's only


def test_the_launch_benchmark_breakdown_still_reads_the_launch_state(recording_driver):
    # bench/launch_bench.py times each step of the hot path by reaching into the kernel's
    # launch state; a change there must not silently turn the breakdown into an error.
    out = run(recording_driver, f"""
import sys
sys.path.insert(0, {str(ROOT)!r} + "/bench")
import launch_bench
launch_bench.SETTLE_S = 0.0
layout((0, 8), (8, 4))
k = Program('extern "C" __global__ void k(float *x, int n) {{}}').compile().load().get_kernel("k")
out["breakdown"] = launch_bench.breakdown(k, (cudaload.alloc(8), 1), cudaload.Stream(), 50, 2)
""")
    parts = out["breakdown"]
    assert set(parts) >= {"config_lookup", "pack_and_convert", "cffi_cuLaunchKernelEx_alone",
                          "full_launch"}
    assert all(isinstance(v, float) and v > 0 for v in parts.values()), parts
