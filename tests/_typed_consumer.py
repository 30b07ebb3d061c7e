"""A host package's code as ``mypy --strict`` sees it (tests/test_types.py checks it; it is never
run): every name reached through ``import cudaload`` has its real type.

A line ending in ``# R: TYPE`` must make mypy reveal TYPE; one ending in ``# E: CODE[, CODE]``
must be an error of each CODE, and no other line may be an error.
"""

from __future__ import annotations

import array

import cudaload


def uses(source: str) -> None:
    prog = cudaload.Program(source, name="k.cu", options=("-DN=4",))
    reveal_type(prog)  # R: cudaload.compile.program.Program
    obj = prog.compile(arch=90)
    reveal_type(obj)  # R: cudaload.compile.objectcode.ObjectCode
    module = obj.load()
    reveal_type(module)  # R: cudaload.launch.module.Module
    reveal_type(module.get_kernel("k"))  # R: cudaload.launch.kernel.Kernel
    reveal_type(module.get_global("g"))  # R: cudaload.launch.memory.DeviceBuffer
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
