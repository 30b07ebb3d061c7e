"""A host package's code as ``mypy --strict`` sees it (tests/test_types.py checks it; it is never
run): every name reached through ``import cudaload`` has its real type.

A line ending in ``# R: TYPE`` must make mypy reveal TYPE; one ending in ``# E: CODE[, CODE]``
must be an error of each CODE, and no other line may be an error.
"""

from __future__ import annotations

import array
import ctypes

import numpy

import cudaload
from cudaload.wheelcheck import check_wheel
from cudaload.wheelcheck.environments import CudaProcess


def uses(source: str) -> None:
    prog = cudaload.Program(source, name="k.cu", options=("-DN=4",))
    reveal_type(prog)  # R: cudaload.compile.program.Program
    obj = prog.compile(arch=90)
    reveal_type(obj)  # R: cudaload.compile.objectcode.ObjectCode
    loaded = obj.load()  # the compile layer names no launch type: a protocol of its methods
    reveal_type(loaded)  # R: cudaload.compile._hooks.Loaded
    reveal_type(loaded.get_kernel("k")(1, 32, (16,)))  # R: None
    reveal_type(loaded.get_global("g").ptr)  # R: int
    buf = cudaload.alloc(16)
    reveal_type(buf)  # R: cudaload.launch.memory.DeviceBuffer
    reveal_type(buf.copy_to_host())  # R: bytearray
    floats = array.array("f", [0.0] * 4)
    reveal_type(buf.copy_to_host(floats))  # R: array.array[float] | bytearray
    stream = cudaload.Stream()
    reveal_type(stream)  # R: cudaload.launch.stream.Stream
    with stream.capture() as graph:
        reveal_type(graph)  # R: cudaload.launch.graph.Graph
    reveal_type(cudaload.is_available())  # R: bool
    reveal_type(cudaload.device_count())  # R: int
    reveal_type(cudaload.status())  # R: cudaload.availability.Status
    reveal_type(cudaload.compile_all([prog]))  # R: list[cudaload.compile.objectcode.ObjectCode]
    reveal_type(cudaload.__version__)  # R: str
    try:
        cudaload.Device(0)
    except cudaload.CudaUnavailableError as exc:
        reveal_type(exc)  # R: cudaload.errors.CudaUnavailableError
        reveal_type(exc.hint)  # R: str


def mistakes() -> None:
    cudaload.Program(123, bogus_kw=1)  # E: call-arg, arg-type
    cudaload.alloc("ten")  # E: arg-type
    kernel = cudaload.Program("").compile().load().get_kernel("k")
    kernel("bad", 1, 2)  # E: arg-type
    kernel(1, (1, 2, 3, 4), ())  # E: arg-type
    kernel(1, 32, (), smem=0)  # E: call-arg


def launches(module: cudaload.Module, s: cudaload.Stream) -> None:
    reveal_type(module.get_kernel("k"))  # R: cudaload.launch.kernel.Kernel
    reveal_type(module.get_global("g"))  # R: cudaload.launch.memory.DeviceBuffer
    k = module.get_kernel("k")
    buf = cudaload.alloc(16)
    floats = array.array("f", [0.0] * 4)
    reveal_type(k(1, 32, (buf, 4)))  # R: None
    reveal_type(k((2, 2), (16, 16), (buf,), stream=s, shared_mem=0))  # R: None
    reveal_type(k((2, 2, 1), 256, [buf, 1.5, b"\0" * 8], stream=0, cluster=2))  # R: None
    host = cudaload.alloc_host(16)
    numbers = (numpy.float32(1.0), numpy.int64(2), numpy.complex64(1j), ctypes.c_int(3), 2**40)
    reveal_type(k(numpy.int64(4), 256, (*numbers, host, floats, numpy.zeros(4))))  # R: None
    raw = cudaload.RawKernel("extern \"C\" __global__ void k(int *x) {}", "k")
    reveal_type(raw(4, (64,), (buf,), stream=s))  # R: None


def launch_mistakes(k: cudaload.Kernel, raw: cudaload.RawKernel) -> None:
    k("bad", 1, 2)  # E: arg-type
    k(1, (1, 2, 3, 4), ())  # E: arg-type
    k(1, 32, ("text",))  # E: arg-type
    k(1, 32, (None,))  # E: arg-type
    k(1, 32, (), shared_mem=1.5)  # E: arg-type
    k(1, 32, (), stream="s")  # E: arg-type
    k(1, 32, (), smem=0)  # E: call-arg
    raw(1.5, 32, ())  # E: arg-type


def backend() -> str:
    return "numpy"


def scaled(x: float, factor: int = 2) -> float:
    return x * factor


def in_a_fresh_process(no_cuda: CudaProcess, cuda_without_gpu: CudaProcess) -> None:
    reveal_type(no_cuda(backend))  # R: str
    reveal_type(cuda_without_gpu(scaled, 1.5, factor=3))  # R: float
    no_cuda(scaled, "1.5")  # E: arg-type
    no_cuda(backend, 1)  # E: call-arg


def wheel_report() -> None:
    report = check_wheel("dist/mypkg-1.0-py3-none-any.whl", archs=["sm_90"])
    reveal_type(report["ok"])  # R: bool
    reveal_type(report["failures"])  # R: list[str]
    reveal_type(report["files"][0]["cuda"])  # R: list[str]
    reveal_type(report["files"][0]["format"])  # R: Literal['ELF'] | Literal['PE'] | Literal['Mach-O'] | None
    for bundle in report["bundles"] or ():
        reveal_type(bundle["programs"][0]["code"])  # R: dict[str, str | None]
    for run in report["imports"] or ():
        reveal_type(run["skipped"])  # R: str | None
    report["passed"]  # E: typeddict-item
