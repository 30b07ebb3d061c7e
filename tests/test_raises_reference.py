"""What docs/api.md says a call raises, tried: each row of ``RAISES`` quotes a sentence of a
section's **Raises** text, or of its text where it has none (verbatim, up to line breaks: a check
keeps the table and the page in step), with a snippet that does what the sentence names and the
exception it must raise.  A sentence that gives a range is tried at its edge (the first value
outside it, the message naming the range), and just inside it where the device's limits refuse
that value (the message then names the limit, not the range).

The rows are the sentences no other test reaches; those that one does are listed in ``ELSEWHERE``
with the test that covers them (still checked to be on the page).  Each driver's rows run in one
fresh interpreter: ``none`` (no libcuda; compilations for an explicit arch run NVRTC), or the
recording driver of tests/_fake_tensor_map.py (two devices of compute capability 9.0) with these
names made first: a kernel ``K(float *x, int n)``, its module ``MOD``, a stream ``S``, a
16-byte buffer ``BUF``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from tests._doc_blocks import read
from tests._support import run_py


@dataclass(frozen=True)
class Raises:
    heading: str          # the section, as its heading reads ("`Program`")
    sentence: str         # words of its text, verbatim up to line breaks
    code: str             # a snippet that does what the sentence says
    error: str            # the exception it must raise, as an expression ("ValueError")
    driver: str = "none"  # "none" | "recording"
    check: str = ""       # what must also hold of the exception ``err``


PTX = ".version 8.0\\n.target sm_75\\n.address_size 64\\n.visible .entry k() { ret; }\\n"
BEFORE = {
    "none": """
import cudaload, os, tempfile
SRC = 'extern "C" __global__ void k() { }'
""",
    "recording": """
import copy, cudaload, numpy as np
K = cudaload.RawKernel('extern "C" __global__ void k(float *x, int n) { }', "k")
MOD = K.module
S = cudaload.Stream()
BUF = cudaload.alloc(16)
""",
}

TYPE_OR_VALUE = "(TypeError, ValueError)"
OUT_OF_RANGE = "'out of range' in str(err) and '{}' in str(err)"  # the range, as the page gives it
# Sentences several rows quote
K_RANGE = ("`ValueError`, before the driver is called, for a grid, block or cluster dimension "
           "outside 1..2**32-1 or a `shared_mem` outside 0..2**32-1 (the driver's `unsigned int`)")
K_LIMITS = "a grid or block beyond the device's limits or with zero or more than three dimensions"
OCCUPANCY = "`Kernel.max_potential_block_size` and the other occupancy queries"
PAGEABLE = ("Pageable host memory (a plain numpy array, `bytes`) is refused with a message saying "
            "to copy it to the device or pin it")
COPY_OR_PIN = "'copy it' in str(err) and 'cudaload.pin(a)' in str(err)"
ORDINAL = ("`ValueError` for an ordinal that is no int or outside the C `int`'s 0..2**31-1, before "
           "the driver is called")
SIZE_T = "`ValueError` for one outside 0..2**64-1 (a `size_t`; before the driver is called)"

RAISES = [
    # Program
    Raises("`Program`", "source or headers that are not text", "cudaload.Program(b'\\xff\\xfe')",
           TYPE_OR_VALUE),
    Raises("`Program`", "source or headers that are not text",
           "cudaload.Program('x', headers={'a.h': 1})", TYPE_OR_VALUE),
    Raises("`Program`", "an option without its value such as a bare `-I`",
           "cudaload.Program('x', options=['-I'])", TYPE_OR_VALUE),
    Raises("`Program`", "an empty option", "cudaload.Program('x', options=[''])", TYPE_OR_VALUE),
    Raises("`Program`", "a NUL character", "cudaload.Program('x', options=['-DA=\\x00'])",
           TYPE_OR_VALUE),
    Raises("`Program`", "a single string where a sequence is expected",
           "cudaload.Program('x', include_paths='inc')", TYPE_OR_VALUE),
    Raises("`Program`", "`OSError` when the file cannot be read",
           "cudaload.Program.from_file('/nonexistent/k.cu')", "OSError"),
    Raises("`Program`", "`ValueError` when it is not UTF-8", """
path = os.path.join(tempfile.mkdtemp(), 'k.cu')
open(path, 'wb').write(b'__global__ void k() {} // \\xff')
cudaload.Program.from_file(path)""", "ValueError", check="'k.cu' in str(err)"),
    Raises("`Program`", "`from_resource`: `FileNotFoundError`, `ModuleNotFoundError`",
           "cudaload.Program.from_resource('json', 'no_such.cu')", "FileNotFoundError"),
    Raises("`Program`", "`from_resource`: `FileNotFoundError`, `ModuleNotFoundError`",
           "cudaload.Program.from_resource('no_such_package_x', 'k.cu')", "ModuleNotFoundError"),
    Raises("`Program`", "`CompileError` when NVRTC rejects the source",
           "cudaload.Program('__global__ void k() { oops }').compile(arch=90)",
           "cudaload.CompileError"),
    Raises("`Program`", "`compile`: the `CudaUnavailableError` that says why for `arch=None` "
           "without a usable device where machine code for this GPU is asked for (above)",
           "cudaload.Program(SRC).compile()", "cudaload.CudaUnavailableError"),
    Raises("`Program`", "`compile`: the `CudaUnavailableError` that says why for `arch=None` "
           "without a usable device where machine code for this GPU is asked for (above)",
           "cudaload.Program(SRC).compile(output='ptx')", "cudaload.CudaUnavailableError"),
    Raises("`CudaUnavailableError`", "and by `Program.compile` / `compile_all` with `arch=None` "
           "where machine code for this GPU (`\"auto\"`, `\"cubin\"`, `\"ptx\"` of CUDA C++) is "
           "asked for and there is no usable device",
           "cudaload.compile_all([cudaload.Program(SRC)])", "cudaload.CudaUnavailableError"),
    Raises("`CudaUnavailableError`", "and by `Program.compile` / `compile_all` with `arch=None` "
           "where machine code for this GPU (`\"auto\"`, `\"cubin\"`, `\"ptx\"` of CUDA C++) is "
           "asked for and there is no usable device",
           "cudaload.compile_all([cudaload.Program(SRC)], output='cubin')",
           "cudaload.CudaUnavailableError"),
    Raises("`Program`", "`ValueError` for an unknown arch or output",
           "cudaload.Program(SRC).compile(arch='sm_x9')", "ValueError"),
    Raises("`Program`", "`ValueError` for an unknown arch or output",
           "cudaload.Program(SRC).compile(arch=90, output='elf')", "ValueError"),
    Raises("`Program`", "`ValueError` for an unknown arch or output (before any device or "
           "library is asked)", "cudaload.Program(SRC).compile(output='elf')", "ValueError"),
    Raises("`Program`", "`TypeError` for an arch of the wrong type",
           "cudaload.Program(SRC).compile(arch=9.0)", "TypeError"),
    # ObjectCode
    Raises("`ObjectCode`", "`load`: `ValueError` for LTO IR or a library",
           "cudaload.Program('__device__ int f() { return 1; }').compile(arch=90, "
           "output='ltoir').load()", "ValueError", driver="recording"),
    Raises("`ObjectCode`", "`load`: `ValueError` for LTO IR or a library",
           "cudaload.ObjectCode.from_bytes(b'!<arch>\\n', 'library').load()", "ValueError",
           driver="recording"),
    Raises("`ObjectCode`", "`from_file`: `OSError` when unreadable",
           "cudaload.ObjectCode.from_file('/nonexistent/a.cubin')", "OSError"),
    # Bundle
    Raises("`Bundle`", "`write`: `OSError`", """
a_file = tempfile.mkstemp()[1]
cudaload.Bundle().write(os.path.join(a_file, 'k.bundle'))""", "OSError"),
    # compile_all
    Raises("`compile_all`", "`TypeError` for an item that is no `Program`",
           "cudaload.compile_all([cudaload.Program(SRC), 'x'], arch=90)", "TypeError"),
    Raises("`compile_all`", "`ValueError` for `workers < 1`",
           "cudaload.compile_all([cudaload.Program(SRC)], arch=90, workers=0)", "ValueError"),
    Raises("`compile_all`", "an arch NVRTC does not know: `NvrtcError`",
           "cudaload.compile_all([cudaload.Program(SRC)], arch='sm_35', workers=1)",
           "cudaload.NvrtcError"),
    Raises("`compile_all`", "a bad arch or an include that is no regular file: `ValueError`",
           "cudaload.compile_all([cudaload.Program(SRC)], arch='sm_x9', workers=1)", "ValueError"),
    Raises("`compile_all`", "`.failures` is a tuple of `(index, program name, error)` for every "
           "program that failed", """cudaload.compile_all(
    [cudaload.Program(SRC, name='good.cu'), cudaload.Program('oops', name='bad.cu')],
    arch=90, workers=1)""", "cudaload.CompileError",
           check="[f[:2] for f in err.failures] == [(1, 'bad.cu')] and 'bad.cu' in str(err)"),
    # Linker
    Raises("`Linker`", "`OSError` for a file that cannot be read",
           "cudaload.Linker('/nonexistent/a.cubin')", "OSError"),
    Raises("`Linker`", "`ValueError` at construction for no input, code that is no device code",
           """
path = os.path.join(tempfile.mkdtemp(), 'a.cubin')
open(path, 'w').write('text')
cudaload.Linker(path, arch=90)""", "ValueError"),
    Raises("`Linker`", "`ValueError` at construction for no input, code that is no device code",
           "cudaload.Linker(cudaload.ObjectCode(b'text', 'cubin'), arch=90)", "ValueError",
           check="'not a CUBIN' in str(err)"),
    # Module
    Raises("`Module`", "`get_kernel`: `TypeError` / `ValueError` for a name that is no string, "
           "is empty or contains NUL", "MOD.get_kernel(1)", TYPE_OR_VALUE, driver="recording"),
    Raises("`Module`", "`get_kernel`: `TypeError` / `ValueError` for a name that is no string, "
           "is empty or contains NUL", "MOD.get_kernel('')", TYPE_OR_VALUE, driver="recording"),
    Raises("`Module`", "`get_kernel`: `TypeError` / `ValueError` for a name that is no string, "
           "is empty or contains NUL", "MOD.get_kernel('k\\x00')", TYPE_OR_VALUE,
           driver="recording"),
    Raises("`Module`", "`LaunchArgumentError` for a malformed `signature`",
           "MOD.get_kernel('k', signature='float *x,, int')", "cudaload.LaunchArgumentError",
           driver="recording"),
    Raises("`Module`", "`get_global`: the same name checks", "MOD.get_global('')", TYPE_OR_VALUE,
           driver="recording"),
    Raises("`Module`", "`ValueError` for code compiled with `lto=True`",
           "cudaload.Program('__device__ int g; extern \"C\" __global__ void k() { g = 1; }', "
           "lto=True).compile().load().get_global('g')", "ValueError", driver="recording"),
    # Kernel
    Raises("`Kernel`", "`LaunchArgumentError` (a `TypeError`) for arguments that do not fit, "
           "naming the parameter and the kernel's signature (an integer outside its C type's "
           "range among them)", "K(1, 32, (BUF, -2**31 - 1))", "cudaload.LaunchArgumentError",
           driver="recording", check="'int n' in str(err) and 'k(float* x, int n)' in str(err)"),
    Raises("`Kernel`", "`TypeError` for a grid, block, cluster or `shared_mem` that is no integer",
           "K(1, 32, (BUF, 4), shared_mem=1.5)", "TypeError", driver="recording"),
    Raises("`Kernel`", "`TypeError` for a grid, block, cluster or `shared_mem` that is no integer",
           "K(1, 32, (BUF, 4), cluster=1.5)", "TypeError", driver="recording"),
    Raises("`Kernel`", K_RANGE, "K(2**32, 32, (BUF, 4))", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel`", K_RANGE, "K(1, 2**32, (BUF, 4))", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel`", K_RANGE, "K(1, 32, (BUF, 4), cluster=2**32)", "ValueError",
           driver="recording", check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel`", K_RANGE, "K(1, 32, (BUF, 4), cluster=0)", "ValueError",
           driver="recording"),
    Raises("`Kernel`", K_RANGE, "K(1, 32, (BUF, 4), shared_mem=2**32)", "ValueError",
           driver="recording", check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel`", K_RANGE, "K(1, 32, (BUF, 4), shared_mem=-1)", "ValueError",
           driver="recording", check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel`", "an int stream handle outside 0..2**64-1",
           "K(1, 32, (BUF, 4), stream=2**64)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**64-1")),
    Raises("`Kernel`", "an int stream handle outside 0..2**64-1",
           "K(1, 32, (BUF, 4), stream=-1)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**64-1")),
    Raises("`Kernel`", K_LIMITS, "K(1, 2048, (BUF, 4))", "ValueError", driver="recording",
           check="\"exceeds device 0's limits\" in str(err)"),
    Raises("`Kernel`", K_LIMITS, "K(2**32 - 1, 32, (BUF, 4))", "ValueError", driver="recording",
           check="\"exceeds device 0's limits\" in str(err)"),  # in range, beyond the device
    Raises("`Kernel`", K_LIMITS, "K((), 32, (BUF, 4))", "ValueError", driver="recording"),
    Raises("`Kernel`", K_LIMITS, "K((1, 1, 1, 1), 32, (BUF, 4))", "ValueError",
           driver="recording"),
    Raises("`Kernel`", "a `shared_mem` beyond the device's maximum",
           "K(1, 32, (BUF, 4), shared_mem=1 << 20)", "ValueError", driver="recording"),
    Raises("`Kernel`", "a `shared_mem` beyond the device's maximum",
           "K(1, 32, (BUF, 4), shared_mem=2**32 - 1)", "ValueError", driver="recording",
           check="\"exceeds device 0's\" in str(err)"),  # in range, beyond the device
    Raises("`Kernel`", "a stream on another device",
           "K(1, 32, (BUF, 4), stream=cudaload.Stream(1))", "ValueError", driver="recording"),
    # Kernel.occupancy and the other occupancy queries
    Raises("`Kernel.occupancy`", "`TypeError` for a block or `shared_mem` that is no integer (a "
           "float or a bool too)", "K.occupancy(32.0)", "TypeError", driver="recording"),
    Raises("`Kernel.occupancy`", "`TypeError` for a block or `shared_mem` that is no integer (a "
           "float or a bool too)", "K.occupancy(32, shared_mem=True)", "TypeError",
           driver="recording"),
    Raises("`Kernel.occupancy`", "`ValueError` for a block dimension outside 1..2**32-1",
           "K.occupancy((32, 0))", "ValueError", driver="recording"),
    Raises("`Kernel.occupancy`", "`ValueError` for a block dimension outside 1..2**32-1",
           "K.occupancy(2**32)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel.occupancy`", "or more threads than 2**31-1 (the driver's `int`)",
           "K.occupancy((2**16, 2**15))", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**31-1")),
    Raises("`Kernel.occupancy`", "more than three dimensions", "K.occupancy((1, 1, 1, 1))",
           "ValueError", driver="recording"),
    Raises("`Kernel.occupancy`", "more threads than `attributes.max_threads_per_block`",
           "K.occupancy(2048)", "ValueError", driver="recording",
           check="'at most 768' in str(err)"),
    Raises("`Kernel.occupancy`", "a `shared_mem` outside 0..2**32-1",
           "K.occupancy(32, shared_mem=-1)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel.occupancy`", "a `shared_mem` outside 0..2**32-1",
           "K.occupancy(32, shared_mem=2**32)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises("`Kernel.occupancy`", "or one that with the kernel's static shared memory exceeds the "
           "device's shared memory per block", "K.occupancy(32, shared_mem=2**32 - 1)",
           "ValueError", driver="recording", check="'static shared memory' in str(err)"),
    Raises(OCCUPANCY, "`block_size_limit` outside 0..2**31-1",
           "K.max_potential_block_size(block_size_limit=-1)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**31-1")),
    Raises(OCCUPANCY, "`block_size_limit` outside 0..2**31-1",
           "K.max_potential_block_size(block_size_limit=2**31)", "ValueError",
           driver="recording", check=OUT_OF_RANGE.format("2**31-1")),
    Raises(OCCUPANCY, "`num_blocks` or a block's threads outside 1..2**31-1",
           "K.available_dynamic_shared_memory(0, 32)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**31-1")),
    Raises(OCCUPANCY, "`num_blocks` or a block's threads outside 1..2**31-1",
           "K.available_dynamic_shared_memory(1, 2**31)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**31-1")),
    Raises(OCCUPANCY, "a grid, block or cluster dimension outside 1..2**32-1",
           "K.max_active_clusters(1, 32, 2**32)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises(OCCUPANCY, "a grid, block or cluster dimension outside 1..2**32-1",
           "K.max_potential_cluster_size(2**32, 32)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises(OCCUPANCY, "`shared_mem` (or what the function returns) outside 0..2**32-1",
           "K.max_potential_block_size(shared_mem=2**32)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**32-1")),
    Raises(OCCUPANCY, "`shared_mem` (or what the function returns) outside 0..2**32-1",
           "K.max_potential_block_size(shared_mem=lambda block: -1)", "ValueError",
           driver="recording", check=OUT_OF_RANGE.format("2**32-1")),
    Raises(OCCUPANCY, "`TypeError` for a size, limit or count that is no integer",
           "K.max_potential_block_size(block_size_limit=1.5)", "TypeError", driver="recording"),
    Raises(OCCUPANCY, "(also what the shared memory function returns)",
           "K.max_potential_block_size(shared_mem=lambda block: 1.5)", "TypeError",
           driver="recording"),
    # RawKernel
    Raises("`RawKernel`", "at construction: `TypeError` / `ValueError` for a name that is no "
           "string, is empty or contains NUL", "cudaload.RawKernel('x', 1)", TYPE_OR_VALUE,
           check="'must be a str' in str(err)"),
    Raises("`RawKernel`", "at construction: `TypeError` / `ValueError` for a name that is no "
           "string, is empty or contains NUL", "cudaload.RawKernel('x', '')", TYPE_OR_VALUE),
    Raises("`RawKernel`", "at construction: `TypeError` / `ValueError` for a name that is no "
           "string, is empty or contains NUL", "cudaload.RawKernel('x', 'k\\x00')", TYPE_OR_VALUE),
    Raises("`RawKernel`", "`LaunchArgumentError` for a malformed `signature`",
           "cudaload.RawKernel('x', 'k', signature='float *x,, int')",
           "cudaload.LaunchArgumentError"),
    Raises("`RawKernel`", "`LaunchArgumentError` for a malformed `signature`",
           "cudaload.RawKernel('x', 'k', signature=',')", "cudaload.LaunchArgumentError"),
    # check_wheel
    Raises("`cudaload check-wheel`", "It raises `cudaload.wheelcheck.wheel.WheelError` (a "
           "`ValueError` whose message is the file and the reason on one line) where the command "
           "exits 2", "__import__('cudaload.wheelcheck').wheelcheck.check_wheel('/nonexistent/a.whl')",
           "ValueError", check="type(err).__name__ == 'WheelError' and '\\n' not in str(err) "
                               "and 'a.whl' in str(err)"),
    # Kernel arguments
    Raises("Kernel arguments", PAGEABLE, "K(1, 32, (np.zeros(4, np.float32), 4))",
           "cudaload.LaunchArgumentError", driver="recording", check=COPY_OR_PIN),
    Raises("Kernel arguments", PAGEABLE, "K(1, 32, (b'1234', 4))", "cudaload.LaunchArgumentError",
           driver="recording", check=COPY_OR_PIN),
    Raises("Kernel arguments", "or a freed `DeviceBuffer` or `HostBuffer`, is refused the same way",
           """
freed = cudaload.alloc(16)
freed.free()
K(1, 32, (freed, 4))""", "cudaload.LaunchArgumentError", driver="recording",
           check="'k(float* x, int n)' in str(err)"),
    Raises("Kernel arguments", "Python `int` (range-checked)", "K(1, 32, (BUF, 2**31))",
           "cudaload.LaunchArgumentError", driver="recording",
           check="'-2147483648..2147483647' in str(err)"),
    # Device
    Raises("`Device`", ORDINAL, "cudaload.Device('0')", "ValueError", driver="recording"),
    Raises("`Device`", ORDINAL, "cudaload.Device(-1)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**31-1")),
    Raises("`Device`", ORDINAL, "cudaload.Device(2**31)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**31-1")),
    Raises("`Device`", "`ValueError` for an ordinal past the last (the message says how many",
           "cudaload.Device(2)", "ValueError", driver="recording", check="'2 visible' in str(err)"),
    Raises("`Device`", "`ValueError` for an ordinal past the last (the message says how many",
           "cudaload.Device(2**31 - 1)", "ValueError", driver="recording",
           check="'2 visible' in str(err)"),  # in the C int's range: past the last
    Raises("`Device`", "`AttributeError` for an unknown enum name",
           "cudaload.Device(0).attribute('CU_DEVICE_ATTRIBUTE_NO_SUCH')", "AttributeError",
           driver="recording", check="'cffi' not in str(err) and 'NO_SUCH' in str(err)"),
    Raises("`Device`", "`AttributeError` for an unknown enum name",
           "cudaload.Device(0).attribute('cuInit')", "AttributeError", driver="recording"),
    # memory
    Raises("`alloc`", SIZE_T, "cudaload.alloc(-1)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**64-1")),
    Raises("`alloc`", SIZE_T, "cudaload.alloc(2**64)", "ValueError", driver="recording",
           check=OUT_OF_RANGE.format("2**64-1")),
    Raises("`alloc`", "or a bad device ordinal", "cudaload.alloc(16, device=7)", "ValueError",
           driver="recording"),
    Raises("`alloc`", "an int stream handle outside 0..2**64-1", "cudaload.alloc(16, stream=2**64)",
           "ValueError", driver="recording", check=OUT_OF_RANGE.format("2**64-1")),
    Raises("`DeviceBuffer`", "`TypeError` for an object without the buffer protocol",
           "BUF.copy_from_host(1.5)", "TypeError", driver="recording"),
    Raises("`DeviceBuffer`", "`ValueError` for a buffer that is not C-contiguous",
           "BUF.copy_from_host(np.arange(8, dtype=np.int32)[::2])", "ValueError",
           driver="recording"),
    Raises("`DeviceBuffer`", "read-only (`out`)", "BUF.copy_to_host(out=bytes(16))", "ValueError",
           driver="recording"),
    Raises("`DeviceBuffer`", "larger than the other side", "BUF.copy_from_host(bytes(32))",
           "ValueError", driver="recording"),
    Raises("`DeviceBuffer`", "or a freed buffer", """
freed = cudaload.alloc(16)
freed.free()
freed.copy_to_host()""", "ValueError", driver="recording"),
    Raises("`DeviceBuffer`", "`copy_from`: `ValueError` for a larger or freed source",
           "BUF.copy_from(cudaload.alloc(32))", "ValueError", driver="recording"),
    Raises("`DeviceBuffer`", "`memset`: `TypeError` / `ValueError` for a value that is no byte",
           "BUF.memset(256)", TYPE_OR_VALUE, driver="recording"),
    Raises("`DeviceBuffer`", "`memset`: `TypeError` / `ValueError` for a value that is no byte",
           "BUF.memset(1.5)", TYPE_OR_VALUE, driver="recording"),
    Raises("`DeviceBuffer`", "`__cuda_array_interface__`: `ValueError` once freed", """
freed = cudaload.alloc(16)
freed.free()
freed.__cuda_array_interface__""", "ValueError", driver="recording"),
    Raises("`alloc_managed`", "`TypeError` / `ValueError` for a size that is no integer or "
           "outside 0..2**64-1", "cudaload.alloc_managed(-1)", TYPE_OR_VALUE, driver="recording"),
    Raises("`alloc_managed`", "`TypeError` / `ValueError` for a size that is no integer or "
           "outside 0..2**64-1", "cudaload.alloc_managed(16.0)", TYPE_OR_VALUE, driver="recording"),
    Raises("`alloc_managed`", "`TypeError` / `ValueError` for a size that is no integer or "
           "outside 0..2**64-1", "cudaload.alloc_managed(2**64)", "ValueError",
           driver="recording", check=OUT_OF_RANGE.format("2**64-1")),
    Raises("`ManagedBuffer`", "`prefetch`: `ValueError` once freed", """
m = cudaload.alloc_managed(16)
m.free()
m.prefetch()""", "ValueError", driver="recording"),
    Raises("`ManagedBuffer`", "`free(stream=...)`: `ValueError`",
           "cudaload.alloc_managed(16).free(stream=S)", "ValueError", driver="recording"),
    Raises("`pin`", "`TypeError` for an object without the buffer protocol",
           "cudaload.pin(1.5).__enter__()", "TypeError", driver="recording"),
    Raises("`memory_pool`", "`ValueError` for a bad device ordinal", "cudaload.memory_pool(7)",
           "ValueError", driver="recording"),
    Raises("`DeviceBuffer.__dlpack__`", "`TypeError` for a `stream`, `max_version`, `dl_device` or "
           "`copy` of the wrong kind", "BUF.__dlpack__(max_version='1.0')", "TypeError",
           driver="recording"),
    Raises("`DeviceBuffer.__dlpack__`", "`TypeError` for a `stream`, `max_version`, `dl_device` or "
           "`copy` of the wrong kind", "BUF.__dlpack__(dl_device=(1, 0), copy='yes')", "TypeError",
           driver="recording"),
    Raises("`Kernel.attributes`", "`AttributeError` for a value that cannot be set",
           "K.attributes.num_regs = 1", "AttributeError", driver="recording"),
    Raises("`Kernel.attributes`", "Setting: `TypeError` for a value that is no integer",
           "K.attributes.preferred_shared_memory_carveout = 50.0", "TypeError", driver="recording"),
    # streams, events, graphs
    Raises("`Stream`", "`Stream()`: `TypeError` for a priority that is no integer",
           "cudaload.Stream(priority=-1.0)", "TypeError", driver="recording"),
    Raises("`Stream`", "`from_handle`: `TypeError` for an object that is no stream",
           "cudaload.Stream.from_handle('s')", "TypeError", driver="recording"),
    Raises("`Stream`", "`wait`: `TypeError` for anything but an `Event` or a `Stream`",
           "S.wait(1)", "TypeError", driver="recording"),
    Raises("`Stream`", "`launch_host_func`: `TypeError` for `fn` that is not callable",
           "S.launch_host_func(1)", "TypeError", driver="recording"),
    Raises("`Stream`", "`capture`: `ValueError` for an unknown mode or the legacy default stream",
           "S.capture('everywhere').__enter__()", "ValueError", driver="recording"),
    Raises("`Stream`", "`capture`: `ValueError` for an unknown mode or the legacy default stream",
           "cudaload.Stream.from_handle(0).capture().__enter__()", "ValueError",
           driver="recording"),
    Raises("`Event`", "`record`: `TypeError` for an object that is no stream",
           "cudaload.Event().record('s')", "TypeError", driver="recording"),
    Raises("`Graph`", "`instantiate`: `RuntimeError` while still being captured", """
with S.capture() as g:
    K(1, 32, (BUF, 4), stream=S)
    g.instantiate()""", "RuntimeError", driver="recording"),
    Raises("`Graph`", "`TypeError` for an object that is no stream", """
with S.capture() as g:
    K(1, 32, (BUF, 4), stream=S)
g.launch(stream='s')""", "TypeError", driver="recording"),
    Raises("`Graph`", "`update`: `TypeError` for anything but a `Graph`", """
with S.capture() as g:
    K(1, 32, (BUF, 4), stream=S)
g.update(1)""", "TypeError", driver="recording"),
    Raises("`Graph`", "`ValueError` for one still being captured", """
with S.capture() as g:
    K(1, 32, (BUF, 4), stream=S)
with S.capture() as h:
    K(1, 32, (BUF, 4), stream=S)
    g.update(h)""", "ValueError", driver="recording"),
]

# Sentences another test reaches: (section, sentence) -> the test that does.
ELSEWHERE = {
    ("`Program`", "a define that is no macro name"): "test_program.py, test_parsers_hostile.py",
    ("`Program`", "`-arch` in `options`"): "test_program.py",
    ("`Program`", "an arch far beyond any GPU (`\"sm_900\"`"): "test_program.py",
    ("`Program`", "`NvrtcError` (`.name == \"arch\"`) when NVRTC cannot make code for the arch"):
        "test_reliability_compile.py",
    ("`Program`", "with `code_type=\"ptx\"`, `ValueError` for text that is no PTX, a C++ keyword or "
                  "an output other than CUBIN"): "test_linker.py",
    ("`ObjectCode`", "`ValueError` for an unknown kind, no bytes, or bytes that are not that kind"):
        "test_objectcode.py, test_linker.py",
    ("`Bundle`", "`ValueError` for code that is not a CUBIN with a known arch"): "test_bundle.py",
    ("`compile_all`", "`workers` that is no int"): "scenarios/parallel_compiles.py",
    ("`Program`", "or PTX without `.target` for `arch=None` without a device (the message asks "
                  "for the arch)"): "test_linker.py",
    ("`Linker`", "`ValueError` at construction for no input"): "test_linker.py",
    ("`Linker`", "LTO IR without `lto=True`, an arch that is none"): "test_linker.py",
    ("`Linker`", "`TypeError` for an input that is neither an `ObjectCode` nor a path, an "
                 "`ObjectCode` whose code is no `bytes`, or `lto` that is no bool"):
        "test_linker.py",
    ("`Linker`", "(a file's, or an `ObjectCode`'s made by its constructor, checked as "
                 "`from_bytes` checks)"): "test_linker.py",
    ("`Linker`", "PTX from inputs other than LTO IR"): "test_linker.py",
    ("`CudaUnavailableError`", "there is no usable device, before NVRTC is looked for"):
        "test_program.py (NVRTC not loaded)",
    ("`Program`", "The arguments are checked first: a wrong `arch` or `output` is the same "
                  "`TypeError` / `ValueError` with a GPU, with a driver and no device, and with no "
                  "driver"): "test_program.py, gpu/test_default_arch_gpu.py",
    ("Kernel arguments", "a numpy array or `bytearray` inside `cudaload.pin(a)` (refused once the "
                         "block ends)"): "test_host_arguments.py",
    ("`HostBuffer`", "a freed buffer is refused as a kernel argument"): "test_host_arguments.py",
    ("`HostBuffer`", "`ValueError` for a `host_ptr` or `ptr` outside 0..2**64-1 or an `nbytes` "
                     "outside 0..2**63-1 (a memoryview's length)"): "test_integer_ranges.py",
    ("`Device`", "`TypeError` for a number that is no integer, `ValueError` for one outside "
                 "0..2**31-1"): "test_integer_ranges.py (Device.attribute)",
    ("`Stream`", "`ValueError` for a handle outside 0..2**64-1 (which the cast to `CUstream` would "
                 "cut short: `2**64` to the legacy default stream); so does every `stream=` "
                 "argument that takes an int handle"): "test_integer_ranges.py",
    ("`Kernel.max_potential_block_size` and the other occupancy queries",
     "what the shared memory function raises"): "test_occupancy.py",
    ("`Kernel.attributes`", "`ValueError` for one outside the C `int`'s -2**31..2**31-1 (before "
                            "the driver is called)"): "test_integer_ranges.py",
    ("`DeviceBuffer`", "an `nbytes` outside 0..this buffer's size (`copy_to_host` refuses it "
                       "before making a `bytearray` of it)"): "test_integer_ranges.py",
    ("`DeviceBuffer`", "a `.ptr` or `.nbytes` outside 0..2**64-1, `TypeError` for one that is no "
                       "integer; the constructor: `TypeError` for a `ptr` or `nbytes` that is no "
                       "integer (a float such as `10.7`; a cffi integer such as a `CUdeviceptr` "
                       "is one), `ValueError` for one outside 0..2**64-1"):
        "test_integer_ranges.py",
    ("`TensorMap`", "and for an address outside 0..2**64-1"): "test_integer_ranges.py",
    ("`alloc`", "`TypeError` for a size that is no integer (a float such as `n / 2`)"):
        "test_launch_recorded.py (scenarios/recorded_launches.py)",
    ("`alloc`", "`DriverError` (`CUDA_ERROR_OUT_OF_MEMORY`) when the memory is not there"):
        "test_unavailable.py (a driver answering it), gpu/test_device.py",
    ("`alloc_host`", "`TypeError` / `ValueError` for a size that is no integer or outside "
                    "0..2**64-1"):
        "test_memory_recorded.py",
    ("`DeviceBuffer`", "A value out of the dtype's range, another dtype or a size not a multiple "
                       "raises `ValueError` before the driver is called"): "test_memory_recorded.py",
    ("`DeviceBuffer`", "`copy.copy` / `copy.deepcopy`: `TypeError`"): "test_pickling.py",
    ("`HostBuffer`", "`BufferError` while a memoryview of `view` (or a numpy array made from one) "
                     "or a DLPack view is still alive"): "test_memory_recorded.py",
    ("`DeviceBuffer.__dlpack__`", "`DLPackError` (a `BufferError`) for another device than the "
                                  "buffer's or the host, or the host with `copy=False`"):
        "test_dlpack.py",
    ("`DeviceBuffer.__dlpack__`", "`ValueError` for `stream=0` (ambiguous for CUDA) or another "
                                  "negative one"): "test_dlpack.py (a stream of the wrong kind too)",
    ("`MemoryPool`", "`ValueError` for one outside 0..2**64-1"): "test_tensor_map_recorded.py",
    ("`TensorMap`", "`TypeError` or `ValueError` for any field out of the rules above"):
        "test_tensor_map_recorded.py",
    ("`Stream`", "`ValueError` for one outside the device's range (the message gives it)"):
        "test_streams_recorded.py",
    ("`device_for_rank`", "`ValueError` for a rank that is no whole number of 0 or more"):
        "test_rank_devices.py",
}


# ---- the table against the page ------------------------------------------------------------------

def section_text(heading: str) -> str:
    """The text of docs/api.md under ``heading`` up to the next heading, lines joined by spaces."""
    from tests._doc_blocks import parts

    for part in parts(read("docs", "api.md")):
        if part.title == heading:
            return " ".join(" ".join(text for _n, text in part.body).split())
    raise AssertionError(f"docs/api.md has no heading {heading}")


def test_every_sentence_of_the_table_is_on_the_page_as_quoted():
    quoted = [(r.heading, r.sentence) for r in RAISES] + list(ELSEWHERE)
    missing = [q for q in quoted if " ".join(q[1].split()) not in section_text(q[0])]
    assert missing == [], "the page changed: quote it again, or drop the row"


# ---- the table run -------------------------------------------------------------------------------

RUNNER = """
import json
{before}
rows = json.loads({rows!r})
results = []
for code, error, check in rows:
    try:
        exec(code)
    except BaseException as err:  # noqa: B036 (a KeyboardInterrupt or SystemExit is a result too)
        caught = isinstance(err, eval(error))
        results.append({{"ok": caught and (not check or bool(eval(check))),
                        "got": f"{{type(err).__name__}}: {{err}}"[:400]}})
    else:
        results.append({{"ok": False, "got": "nothing raised"}})
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict:
    """What each row raised, by its index: one interpreter per driver, started when first asked."""
    from tests._fake_tensor_map import tensor_map_library

    found: dict = {}

    def outcome(index: int) -> dict:
        driver = RAISES[index].driver
        if driver not in found:
            mine = [i for i, r in enumerate(RAISES) if r.driver == driver]
            path = ("/nonexistent/libcuda.so.1" if driver == "none"
                    else tensor_map_library(tmp_path_factory.mktemp("driver")))
            rows = json.dumps([(RAISES[i].code, RAISES[i].error, RAISES[i].check) for i in mine])
            proc = run_py(RUNNER.format(before=BEFORE[driver], rows=rows), timeout=300,
                          env={"CUDALOAD_LIBCUDA": path, "CUDALOAD_FAKE_NO_LAYOUT": "1"})
            found[driver] = dict(zip(mine, json.loads(proc.stdout.strip().splitlines()[-1])))
        return found[driver][index]

    return outcome


def _param(index: int, row: Raises):
    return pytest.param(index, id=f"{row.heading.strip('`')}: {row.code.strip()[:60]}")


@pytest.mark.parametrize("index", [_param(i, r) for i, r in enumerate(RAISES)])
def test_the_call_raises_what_the_page_says(index, outcomes):
    row = RAISES[index]
    out = outcomes(index)
    assert out["ok"], f"{row.heading}: {row.sentence!r}: {row.code.strip()} raised {out['got']}, " \
                      f"not {row.error}" + (f" with {row.check}" if row.check else "")
