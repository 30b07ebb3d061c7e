"""The Python code of docs/*.md runs as it is written.

Every ``python`` block of a page is one of three: an example run here by ``EXAMPLES`` (in a fresh
interpreter, as a script of its own, against the driver named: none, Debian's libcuda 535 without
a device, a file the loader refuses or one without the driver's symbols, or the recording driver
of tests/_fakelibs.py; compilations with an explicit arch run for real with NVRTC), or on a GPU
by tests/gpu/test_doc_examples_gpu.py; a signature block of docs/api.md that
tests/test_api_reference.py compares with the code; or a fragment, marked on the page by a first
line ``# fragment: ...`` (tests/_doc_blocks.py).  An example whose output the page states has it
asserted (``after``, run in the example's namespace, and ``stdout``, a pattern its output must
match).
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import textwrap
from dataclasses import dataclass

import pytest

import cudaload
from tests import test_api_reference as reference
from tests._doc_blocks import Block, python_blocks, read
from tests._support import ROOT, run_py

PAGES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


@dataclass(frozen=True)
class Example:
    """One run of a block: the n-th python block under ``heading`` of ``docs/page``."""

    page: str
    heading: str
    n: int
    driver: str                 # "none" | "535" | "refused" | "no symbols" | "recording" | "gpu"
    before: str = ""            # code whose names the example is given (it defines none itself)
    after: str = ""             # code run after it, in its namespace: the page's claims, asserted
    stdout: str | None = None   # a pattern the example's whole output must match
    setup: str = ""             # code run first in the example's folder, in a process of its own
    needs: str = ""             # a module it imports that cudaload does not install (else skipped)

    @property
    def key(self) -> tuple[str, str, int]:
        return self.page, self.heading, self.n

    @property
    def id(self) -> str:
        return f"{self.page}:{self.heading.strip('`')}:{self.n}:{self.driver}"


SAXPY = ('extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned int n) '
         '{ unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + '
         'y[i]; }')
# mypkg, as the Bundle example reads it: kernels/ops.cu and a bundle made for sm_90 (the recording
# driver's devices) in a process of its own, so that the example's own process never maps NVRTC.
MYPKG = f"""
    import os, cudaload
    os.makedirs("mypkg/kernels")
    open("mypkg/__init__.py", "w").close()
    with open("mypkg/kernels/ops.cu", "w") as f:
        f.write("template <typename T> __global__ void add(T *x, T a) {{ x[threadIdx.x] += a; }}")
    prog = cudaload.Program.from_resource("mypkg", "kernels/ops.cu", name_expressions=["add<float>"])
    bundle = cudaload.Bundle()
    bundle.add(prog, prog.compile(arch=90))
    bundle.write("mypkg/_kernels.bundle")
"""
# device_for_rank: the device of this thread "and of any thread it starts"
THREAD_DEVICE = """
import threading
seen = []
worker = threading.Thread(target=lambda: seen.append(cudaload.alloc(16).device))
worker.start(); worker.join()
assert dev.ordinal == 1 and buf.device is dev and seen == [dev]
"""
NVRTC_UNMAPPED = "assert 'libnvrtc' not in open('/proc/self/maps').read()\n"
TWO_KERNELS = """
HEADER = "#define ONE 1"
names = ["one", "two"]
kernel_sources = ['#include "ops.cuh"\\nextern "C" __global__ void one(int *x) { x[0] = ONE; }',
                  '#include "ops.cuh"\\nextern "C" __global__ void two(int *x) { x[0] = 2; }']
"""
# mypkg of the README, as docs/packaging.md's kernels.py reads it: scale.cu and a bundle of it for
# sm_90, made in a process of its own (the example's own process never maps NVRTC).
SCALE_PKG = f"""
    import os, cudaload
    os.makedirs("mypkg")
    open("mypkg/__init__.py", "w").close()
    with open("mypkg/scale.cu", "w") as f:
        f.write({SAXPY.replace("saxpy", "scale")!r})
    bundle = cudaload.Bundle()
    bundle.add(cudaload.Program.from_resource("mypkg", "scale.cu"),
               cudaload.Program.from_resource("mypkg", "scale.cu").compile(arch=90))
    bundle.write("mypkg/kernels.bundle")
"""
A_FEW = """
HEADER, names, kernel_sources = "", ["k"], ['extern "C" __global__ void k(int *x) { }']
"""


def api(heading: str, driver: str, **kw) -> Example:
    """The example (the first block after **Example**) of a docs/api.md section."""
    blocks = python_blocks(read("docs", "api.md"), heading)
    n = next(n for (_h, n), block in blocks.items() if block.example)
    return Example("api.md", heading, n, driver, **kw)


EXAMPLES = [
    api("`__version__`", "none", stdout=rf"cudaload {re.escape(cudaload.__version__)}\n"),
    api("`is_available`", "none", after="assert backend == 'cpu'"),
    api("`is_available`", "535", after="assert backend == 'cpu'"),
    api("`is_available`", "recording", after="assert backend == 'cuda'"),
    api("`status`", "535", after="assert not report.available and report.problems",
        stdout=r"(.+ -> .+\n)+"),
    api("`Status`", "none", after="import json; assert set(json.loads(_out())) == {'cudart', 'cccl'}"),
    api("`Program`", "none", stdout=r"cubin sm_90 _Z5scaleIfEvPT_S0_i\n"),
    api("`ObjectCode`", "recording", setup=f"""
        import cudaload
        open("saxpy.cubin", "wb").write(cudaload.Program({SAXPY!r}).compile(arch=90).code)
        """, after="assert kernel.name == 'saxpy'"),
    api("`ObjectCode` pickling", "recording",
        after="assert len(results) == 2 and all(len(r) == 4 * 256 for r in results)"),
    api("`Bundle`", "recording", setup=MYPKG, after="assert obj.cached == 'bundle'\n" + NVRTC_UNMAPPED),
    api("`compile_all`", "recording", before=TWO_KERNELS,
        after="assert [k.name for k in kernels] == names and len(objs) == 2\n"
              "assert {o.cached for o in cudaload.compile_all(progs)} == {'memory'}"),
    api("`Linker`", "recording", after="assert kernel.name == 'ka'"),
    api("`Kernel`", "recording", stdout=r"saxpy\(float a, const float\* x, float\* y, "
                                        r"unsigned int n\)\n"),
    api("`Kernel.attributes`", "recording", stdout=r"\d+ \d+ \d+\n"),
    api("`Kernel.occupancy`", "recording", stdout=r"[01]\.\d+\n"),
    api("`RawKernel`", "recording"),
    api("`device_count`", "none", after="assert devices == []"),
    api("`device_count`", "535", after="assert devices == []"),
    api("`device_count`", "recording", after="assert [d.ordinal for d in devices] == [0, 1]"),
    api("`device_for_rank`", "recording", before="import os; os.environ['LOCAL_RANK'] = '3'",
        after=THREAD_DEVICE),
    api("`alloc`", "recording", after="assert buf.nbytes == 1 << 20"),
    api("`DeviceBuffer`", "recording"),
    api("`alloc_host`", "recording"),
    api("`pin`", "recording"),
    api("`alloc_managed`", "recording"),
    api("`ManagedBuffer`", "recording", stdout=r"0 \('cpu',\) 0\n"),
    api("`memory_pool`", "recording",
        after="assert cudaload.memory_pool().release_threshold == 1 << 30"),
    api("`MemoryPool`", "recording", after="assert pool.release_threshold == 2**64 - 1",
        stdout=r"0 True\n"),
    api("`TensorMap`", "recording", after="assert len(tmap) == 128 and tmap.shape == (64, 96)"),
    api("`TensorMap.replace_address`", "recording",
        after="assert other.address == back.ptr and tmap.address == front.ptr"),
    api("`view`", "recording", stdout=r"\(256,\) \(1,\) uint8 True\n"),
    api("`ArrayView`", "recording", stdout=r"\|u1 \(1024,\) None\n"),
    api("`Stream`", "recording", after="assert isinstance(done, cudaload.Event)"),
    api("`Graph`", "recording"),
    Example("api.md", "`errors`", 0, "none",
            after="assert cudaload.errors.DriverError is DriverError is cudaload.DriverError"),
    api("`errors`", "none", stdout=""),
    api("`CudaLoadError`", "none", stdout=r"DriverNotFoundError .+\n"),
    api("`CudaLoadError`", "recording", stdout=r"CompileError .*\n"),
    api("`LibraryNotFoundError`", "none", stdout=r"cuda not found; tried:\n  /nonexistent/libcuda.so.1 .+\n"),
    api("`LibraryLoadError`", "refused", stdout=r"found but unusable: \(.+\)\n"),
    api("`MissingSymbolError`", "no symbols", stdout=r".+libnotcuda\.so lacks cuInit\n"),
    api("`CudaUnavailableError`", "none", after="assert scale(b'abc') == b'abc'",
        stdout=r"CPU fallback: .+\n"),
    api("`ForkedProcessError`", "none", after="assert results == ['0', '1', '2', '3']"),
    api("`DriverError`", "535", stdout=r"CUDA_ERROR_NO_DEVICE cuInit .+\n"),
    api("`NvrtcError`", "none", stdout=r"(?s).*sm_35.*sm_75, sm_80.*"),  # the archs it supports
    api("`CompileError`", "recording", stdout=r"(?s).*undefined_name.*"),
    api("`LinkError`", "none", stdout=r"(?s)_Z1bi error +: Undefined reference to '_Z1bi'.*\n"),
    api("`LaunchArgumentError`", "recording", stdout=r"(?s).*k\(float\* x, int n\).*"),
    Example("api.md", "Logging", 0, "none",
            after="assert logging.getLogger('cudaload').getEffectiveLevel() == logging.DEBUG"),
    Example("packaging.md", "Shipping precompiled kernels", 0, "none", setup=SCALE_PKG,
            after="(prog,) = programs()\nassert prog.bundle is BUNDLE\n"
                  "assert BUNDLE.find(prog, 'sm_90').cached == 'bundle'\n" + NVRTC_UNMAPPED),
    Example("fleet.md", "One GPU per process, no context on the others", 0, "recording",
            before="import os; os.environ['SLURM_LOCALID'] = '1'", after="assert dev.ordinal == 1"),
]

# Examples of the page that need what the recording driver does not do (memory that holds what is
# written, timing, module globals, another library); tests/gpu/test_doc_examples_gpu.py runs them,
# and these CPU ones again, on a GPU.
GPU_ONLY = [
    api("`Module`", "gpu", after="assert poly.name == 'poly'"),
    api("`Device`", "gpu", stdout=r".+ \(\d+, \d+\) [\d.]+ of [\d.]+ GiB free\n"),
    api("`HostBuffer`", "gpu"),
    api("`DeviceBuffer.__dlpack__`", "gpu", needs="torch",
        after="assert t.data_ptr() == buf.ptr and bytes(buf.copy_to_host()[:4]) != bytes(4)"),
    api("`Event`", "gpu", stdout=r"\d+\.\d{3} ms\n"),
    api("`copy_batch`", "gpu"),
    api("Nodes", "gpu"),
    api("Conditional nodes", "gpu"),
    api("`DriverError`", "gpu", stdout=r"CUDA_ERROR_OUT_OF_MEMORY cuMemAlloc.+\n"),
    api("`ObjectCode` pickling", "gpu",
        after="assert results == [bytes([1, 0, 0, 0]) * 256] * 2"),
]
# Examples the GPU runs besides: those of the recording driver, whose results it makes real.
GPU_RUNS = GPU_ONLY + [Example(e.page, e.heading, e.n, "gpu", e.before, e.after, e.stdout,
                               e.setup, e.needs)
                       for e in EXAMPLES if e.driver == "recording" and
                       e.heading not in ("`is_available`", "`device_count`", "`device_for_rank`",
                                         "`CudaLoadError`", "`ObjectCode` pickling",
                                         # rank 1 is device 1 only where there are two
                                         "One GPU per process, no context on the others")]

# Blocks that run as a test module of a host package under pytest (the plugin's fixtures).
PLUGIN_MODULES = [("api.md", "pytest plugin", 1), ("packaging.md",
                                                  "The pytest plugin: `no_cuda` and `cuda_without_gpu`",
                                                  0)]


# ---- running one ---------------------------------------------------------------------------------

RUNNER = """
import contextlib, io, json, os, runpy, sys
os.chdir({work!r})
sys.path.insert(0, {work!r})
given = {{}}
exec({before!r}, given)
given.pop("__builtins__", None)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    names = runpy.run_path("example.py", init_globals=given, run_name="__main__")
    names["_out"] = out.getvalue
    exec({after!r}, names)
print(json.dumps({{"stdout": out.getvalue()}}))
"""


def block(page: str, heading: str, n: int) -> Block:
    return python_blocks(read("docs", page), heading)[heading, n]


def run_example(example: Example, work, env: dict | None = None) -> str:
    """Run ``example`` as the script ``example.py`` in the folder ``work``; return its output."""
    if example.needs:
        pytest.importorskip(example.needs)
    env = dict(env or {})
    if example.setup:
        run_py(f"import os, sys; os.chdir({str(work)!r}); sys.path.insert(0, '.')\n" + textwrap.dedent(example.setup),
               env={**env, "CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    (work / "example.py").write_text(block(example.page, example.heading, example.n).code)
    proc = run_py(RUNNER.format(work=str(work), before=textwrap.dedent(example.before),
                                after=textwrap.dedent(example.after)), env=env, timeout=300)
    out = json.loads(proc.stdout.strip().splitlines()[-1])["stdout"]
    if example.stdout is not None:
        assert re.fullmatch(example.stdout, out), (example.stdout, out)
    return out


@pytest.fixture(scope="module")
def drivers(tmp_path_factory) -> dict:
    """``CUDALOAD_LIBCUDA`` for each driver an example runs against here."""
    from tests._fake_tensor_map import tensor_map_library
    from tests._fakelibs import NO_DRIVER_SYMBOLS, build_shared_library
    from tests._support import LIBCUDA_535

    folder = tmp_path_factory.mktemp("drivers")
    refused = folder / "libcuda.so.1"
    refused.write_text("this is not an ELF file\n")
    return {"none": "/nonexistent/libcuda.so.1", "535": LIBCUDA_535, "refused": str(refused),
            "no symbols": build_shared_library(str(folder), "libnotcuda.so", NO_DRIVER_SYMBOLS),
            "recording": tensor_map_library(folder)}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_the_example_runs_as_written(example, drivers, tmp_path, request):
    if example.driver == "535":
        request.getfixturevalue("libcuda_535")
    run_example(example, tmp_path, {"CUDALOAD_LIBCUDA": drivers[example.driver],
                                    "CUDALOAD_FAKE_NO_LAYOUT": "1"})


MYPKG_BACKEND = """
import cudaload

def backend():
    return "cuda" if cudaload.is_available() else "numpy"
"""


def run_plugin_module(key, work, env: dict | None = None):
    """A block that is a test module of the package ``mypkg`` (whose ``backend()`` says "numpy"
    without CUDA), run by pytest with cudaload's plugin: every test in it passes."""
    (work / "mypkg").mkdir()
    (work / "mypkg" / "__init__.py").write_text(MYPKG_BACKEND)
    (work / "test_mypkg.py").write_text(block(*key).code)
    proc = run_py(f"""
        import os, sys, pytest
        os.chdir({str(work)!r})
        sys.path.insert(0, {str(work)!r})
        sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "test_mypkg.py"]))
        """, env={"PYTHONPATH": f"{work}{os.pathsep}{ROOT}", **(env or {})}, check=False,
                  timeout=300)
    tests = len(re.findall(r"^def test_", block(*key).code, re.M))
    assert proc.returncode == 0 and f"{tests} passed" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("key", PLUGIN_MODULES, ids=lambda k: f"{k[0]}:{k[1]}")
def test_the_plugin_example_passes_as_a_test_module(key, tmp_path, libcuda_535):
    run_plugin_module(key, tmp_path, {"CUDALOAD_TEST_LIBCUDA": libcuda_535})


# ---- every block accounted for -------------------------------------------------------------------

def signature_blocks() -> set[int]:
    """The first lines of the docs/api.md blocks tests/test_api_reference.py compares with the
    code: outside examples, in a section of a public name, with a signature line it checks."""
    found = set()
    for section in reference.sections(read("docs", "api.md")):
        if section.name not in cudaload.__all__:
            continue
        for b in reference._signature_blocks(section.live):
            if any((d := reference.signature_line(n, t)) is not None and d.owner in cudaload.__all__
                   for n, t in reference.statements(b)):
                found.add(b.line)
    return found


def unaccounted(page: str, text: str, ran: set, signatures: set) -> list[str]:
    """The python blocks of ``page`` (its ``text``) neither run (keys in ``ran``), nor a signature
    block (first lines in ``signatures``), nor marked as a fragment."""
    return [f"docs/{page}:{b.line} ({heading}, block {n}): run it in tests/test_doc_examples.py "
            "(or tests/gpu/), or mark it with a first line '# fragment: what it leaves out'"
            for (heading, n), b in python_blocks(text).items()
            if (page, heading, n) not in ran and b.line not in signatures and not b.fragment]


def test_every_python_block_is_run_a_signature_or_a_fragment():
    ran = {e.key for e in EXAMPLES + GPU_RUNS} | set(PLUGIN_MODULES)
    signatures = signature_blocks()
    problems = [p for page in PAGES for p in
                unaccounted(page, read("docs", page), ran, signatures if page == "api.md" else set())]
    assert problems == [], "\n".join(problems)


def test_every_run_names_a_block_that_is_there():
    keys = {e.key for e in EXAMPLES + GPU_RUNS} | set(PLUGIN_MODULES)
    missing = [k for k in keys if (k[1], k[2]) not in python_blocks(read("docs", k[0]))]
    assert missing == []
    marked = [k for k in keys if block(*k).fragment]
    assert marked == [], "a block run here is no fragment"


def test_a_block_neither_run_nor_marked_is_reported():
    text = "# Page\n\n## Use\n\n```python\nundefined_name()\n```\n"
    assert len(unaccounted("new.md", text, set(), set())) == 1
    marked = text.replace("```python\n", "```python\n# fragment: undefined_name is elsewhere\n")
    assert unaccounted("new.md", marked, set(), set()) == []
    assert unaccounted("new.md", text, {("new.md", "Use", 0)}, set()) == []


def test_a_signature_block_is_one_the_reference_checks():
    lines = signature_blocks()
    blocks = python_blocks(read("docs", "api.md"))
    assert blocks["`Program`", 0].line in lines and blocks["`Status`", 0].line in lines
    assert blocks["`compile_all`", 2].line not in lines   # the Dask example: no signature line
    assert blocks["`errors`", 0].line not in lines        # imports: run instead


if sys.platform != "linux":  # /proc/self/maps, the recording driver: Linux only
    pytestmark = pytest.mark.skip(reason="Linux only")
