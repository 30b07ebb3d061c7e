"""Programs compiled by NVRTC in a fresh process, for the Program tests.

    python -m tests.scenarios.program_compiles SCENARIO ARGS...

Each prints what it found as JSON on its last line (``compile_error``: the pickled error, in
base64).  cudaload is imported inside each scenario, so importing this module compiles nothing.
"""

from __future__ import annotations

import json
import sys

INT_KERNEL = 'extern "C" __global__ void k(int *x) { x[0] = 1; }'


def cuda_headers() -> None:
    """A kernel using the CUDA and CCCL headers, given no include path: its kind and arch."""
    from cudaload import Program

    src = """
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    #include <cuda/std/limits>
    extern "C" __global__ void k(__half *h, __nv_bfloat16 *b) {
        h[0] = __float2half(cuda::std::numeric_limits<float>::epsilon());
        b[0] = __float2bfloat16(1.0f);
    }"""
    obj = Program(src).compile(arch=90)
    print(json.dumps({"kind": obj.kind, "arch": obj.arch, "elf": obj.code[:4] == b"\x7fELF"}))


def names_and_log() -> None:
    """Lowered names of two template instances, and the log of a kernel with a warning."""
    from cudaload import Program

    src = """
    template <class T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }
    extern "C" __global__ void w(int *x) { int unused = 3; x[0] = 1; }"""
    obj = Program(src, name_expressions=["scale<float>", "scale<double>"]).compile(arch=80)
    print(json.dumps({"names": obj.lowered_names, "log": obj.log}))


def compile_error() -> None:
    """The CompileError of a kernel using an undefined name, pickled, in base64."""
    import base64
    import pickle

    from cudaload import CompileError, Program

    src = "// line 1\n// line 2\nextern \"C\" __global__ void k(float *x) {\n  x[0] = nope;\n}\n"
    try:
        Program(src, name="bad.cu", defines={"N": 4}).compile(arch=90)
    except CompileError as err:
        print(base64.b64encode(pickle.dumps(err)).decode())


def arch_choice() -> None:
    """[kind, arch] (or ["error", message]) compiled for each way of asking for an arch, on the
    machine the driver library (CUDALOAD_LIBCUDA) pretends."""
    from cudaload import CudaUnavailableError, NvrtcError, Program
    from cudaload.bindings import nvrtc

    p = Program(INT_KERNEL)

    def kind(arch, output="auto"):
        try:
            o = p.compile(arch=arch, output=output)
            return [o.kind, o.arch]
        except (NvrtcError, CudaUnavailableError) as err:
            return ["error", str(err)]

    archs = nvrtc.supported_archs()
    print(json.dumps({"none": kind(None), "max": max(archs), "min": min(archs),
                      "sm_90": kind("sm_90"), "tuple": kind((8, 6)), "ptx": kind(90, "ptx"),
                      "newer": kind(max(archs) + 30), "older": kind(min(archs) - 5),
                      "between": kind(91), "same_major": kind(max(archs) + 3)}))


def memory_hit() -> None:
    """One program compiled four times, and the same source in a new Program."""
    from cudaload import Program

    p = Program(INT_KERNEL)
    first = p.compile(arch=90)
    hits = [p.compile(arch=90) for _ in range(3)]
    other = Program(INT_KERNEL).compile(arch=90)
    print(json.dumps({"first": first.cached, "hits": [h.cached for h in hits],
                      "same": hits[0] is hits[2], "other": other.cached}))


def package_includes(site: str) -> None:
    """``kpkg/ops.cu`` of the folder ``site``, by from_resource and from_file: the headers found,
    the kinds compiled and the program's digest."""
    sys.path.insert(0, site)
    from cudaload import Program

    r = Program.from_resource("kpkg", "ops.cu")
    f = Program.from_file(site + "/kpkg/ops.cu")
    print(json.dumps({"headers": sorted(r.headers), "res": r.compile(arch=90).kind,
                      "file": f.compile(arch=90).kind, "digest": r._digest.hex()}))


def recompile_after_refusal() -> None:
    """What is compiled once the driver refuses PTX, then CUBIN, then a CUBIN of unknown source."""
    from cudaload import ObjectCode, Program
    from cudaload.compile.program import recompile_refused

    p = Program(INT_KERNEL)
    ptx = p.compile(arch=90, output="ptx")
    cubin = recompile_refused(ptx)   # PTX refused: CUBIN for the arch
    again = p.compile(arch=90, output="ptx")  # the request now gives what loads
    older = recompile_refused(cubin)  # CUBIN refused: PTX for an arch <= it
    foreign = recompile_refused(ObjectCode.from_bytes(cubin.code, "cubin"))
    print(json.dumps({"cubin": [cubin.kind, cubin.arch], "again": [again.kind, again.cached],
                      "older": [older.kind, older.arch], "foreign": foreign}))


def new_kernel(n: str) -> None:
    """Kernel ``k<n>`` compiled: where it came from, whether cuda.pathfinder and hashlib (which
    loads OpenSSL) were imported, and how NVRTC was found."""
    import cudaload
    from cudaload.bindings import _loader

    n = int(n)
    obj = cudaload.Program('extern "C" __global__ void k%d(int *p) { *p = %d; }' % (n, n)).compile(
        arch=90)
    lib = _loader.loaded("nvrtc")
    print(json.dumps({"cached": obj.cached, "pathfinder": "cuda.pathfinder" in sys.modules,
                      "hashlib": "hashlib" in sys.modules, "path": lib.path, "how": lib.found_via,
                      "report": cudaload.status().as_dict()["nvrtc"]["found_via"]}))


def arch_spellings() -> None:
    """[kind, arch] (or [error type, message]) for each spelling of an arch."""
    from cudaload import Program

    p = Program('extern "C" __global__ void k(float *x) { x[0] = 1; }')
    got = {}
    for arch in ([9, 0], "sm_900", "compute_80", "sm_80"):
        try:
            obj = p.compile(arch=arch)
            got[str(arch)] = [obj.kind, obj.arch]
        except Exception as exc:
            got[str(arch)] = [type(exc).__name__, str(exc)]
    print(json.dumps(got))


def package_headers(site: str) -> None:
    """The headers includes.from_package follows from ``winpkg/ops.cu`` of the folder ``site``."""
    sys.path.insert(0, site)
    from cudaload.compile.includes import search as includes

    print(json.dumps(sorted(includes.from_package("winpkg", "ops.cu")[1])))


def device_includes() -> None:
    """Programs including a device file or a name with a NUL: "keyed" or the error's type."""
    from cudaload import Program

    got = []
    for name in ("/dev/zero", "/dev/stdin", "bad\0name.h"):
        try:
            Program('#include "%s"\nextern "C" __global__ void k() {}\n' % name)
            got.append("keyed")
        except Exception as exc:
            got.append(type(exc).__name__)
    print(json.dumps(got))


def default_archs() -> None:
    """What compile(output=...) and plan() given no arch raise without a device, and whether
    NVRTC was loaded."""
    from cudaload import CudaUnavailableError, Program

    p = Program('extern "C" __global__ void k(int *x) { *x = 1; }')
    out = {}
    for name, ask in (("ptx", lambda: p.compile(output="ptx")), ("auto", p.compile),
                      ("plan", lambda: p.plan(None, "auto"))):
        try:
            out[name] = ask().arch  # an ObjectCode's, or the Request's
        except CudaUnavailableError as exc:
            out[name] = type(exc).__name__
    with open("/proc/self/maps") as f:
        out["nvrtc_loaded"] = any("libnvrtc" in line for line in f)
    print(json.dumps(out))


def old_driver() -> None:
    """With a driver older than NVRTC: the status report's PTX verdict and problems, what
    compiling for several archs gives, and the ISA version of PTX asked for explicitly."""
    import re

    import cudaload
    from cudaload import Program
    from cudaload.bindings import nvrtc

    out = {"nvrtc": list(nvrtc.version()),
           "ptx_loadable": cudaload.status().as_dict()["ptx_loadable"],
           "problems": [p["what"] for p in cudaload.status().as_dict()["problems"]]}
    src = 'extern "C" __global__ void k(int *x) { x[0] = 1; }'
    for arch in (90, 121, 122, 130, 150):
        try:
            obj = Program(src).compile(arch=arch)
            out[str(arch)] = [obj.kind, obj.arch]
        except Exception as err:
            out[str(arch)] = [type(err).__name__, str(err)]
    ptx = Program(src).compile(arch=90, output="ptx").code.decode()
    out["ptx_isa"] = re.search(r"\.version\s+(\d+\.\d+)", ptx).group(1)
    print(json.dumps(out))


def compile_cases(cases_path: str) -> None:
    """Compile every case of the pickled {name: (Program keywords, compile keywords)} at
    ``cases_path`` (sources travel through the file): what each gave, and how long it took."""
    import pickle
    import time

    from cudaload import Program

    cases = pickle.load(open(cases_path, "rb"))
    out = {}
    for name, (kw, ckw) in cases.items():
        start = time.perf_counter()
        try:
            obj = Program(**kw).compile(**{"arch": 90, **ckw})
            out[name] = {"type": "ok", "kind": obj.kind, "size": len(obj.code)}
        except Exception as err:
            out[name] = {"type": type(err).__name__, "message": str(err),
                         "mro": [c.__name__ for c in type(err).__mro__]}
        out[name]["seconds"] = round(time.perf_counter() - start, 3)
    print(json.dumps(out))


def dropped_program() -> None:
    """A Program dropped while its code lives on in the memory cache: whether it is collected,
    and whether its code can still be compiled again after a refusal."""
    import gc
    import weakref

    from cudaload import Program
    from cudaload.compile.program import recompile_refused

    program = Program('#include "v.h"\nextern "C" __global__ void k(int *p) { *p = VAL; }\n',
                      headers={"v.h": "#define VAL 7\n"})
    obj = program.compile(arch=90, output="ptx")
    alive = weakref.ref(program)
    del program
    gc.collect()
    again = recompile_refused(obj)
    print(json.dumps({"collected": alive() is None, "again": again.kind if again else None}))


# A kernel's PTX for sm_80, written out: the wrong arguments of arch_rule come before anything that
# could load NVRTC, nvJitLink or the driver.
PTX_SM80 = """.version 7.8
.target sm_80
.address_size 64

.visible .entry k(.param .u64 k_param_0)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, 1;
	st.global.u32 [%rd2], %r1;
	ret;
}
"""


def _outcome(ask):
    """[kind, arch] of what ``ask()`` made (a list: compile_all's), else [error class, whether a
    CudaUnavailableError, the message's first line]."""
    from cudaload import CudaUnavailableError

    try:
        made = ask()
    except Exception as exc:  # what each request raises is what the test compares
        return [type(exc).__name__, isinstance(exc, CudaUnavailableError), str(exc).split("\n")[0]]
    made = made if isinstance(made, list) else [made]
    return [[obj.kind, obj.arch] for obj in made]


def arch_rule() -> None:
    """What compile(arch=None), plan() and compile_all make or raise for each output and code
    type, after the wrong arguments of each entry point (and which of libcuda, NVRTC and
    nvJitLink the wrong ones loaded: none may be asked before the arguments are checked)."""
    import cudaload
    from cudaload import Linker, ObjectCode, Program
    from cudaload.compile.build import run

    p = Program(INT_KERNEL)
    p2 = Program(INT_KERNEL.replace("1;", "2;"))
    q = Program(PTX_SM80, code_type="ptx", name="k.ptx")
    ptx = ObjectCode.from_bytes(PTX_SM80.encode(), "ptx", name="k.ptx")
    wrong = {name: _outcome(ask) for name, ask in (
        ("output='invalid_target'", lambda: p.compile(output="invalid_target")),
        ("output=['cubin']", lambda: p.compile(output=["cubin"])),
        ("arch=90, output=['cubin']", lambda: p.compile(arch=90, output=["cubin"])),
        ("arch=9.0", lambda: p.compile(arch=9.0)),
        ("arch=[90]", lambda: p.compile(arch=[90])),
        ("arch='sm_9x'", lambda: p.compile(arch="sm_9x")),
        ("arch=(8, 10)", lambda: p.compile(arch=(8, 10))),
        ("PTX program, output='ptx'", lambda: q.compile(output="ptx")),
        ("PTX program, output='ltoir'", lambda: q.compile(output="ltoir")),
        ("PTX program, arch=90, output='ptx'", lambda: q.compile(arch=90, output="ptx")),
        ("plan(output='invalid_target')", lambda: p.plan(None, "invalid_target")),
        ("compile_all output='invalid_target'",
         lambda: cudaload.compile_all([p, q], output="invalid_target")),
        ("compile_all PTX program, output='ptx'", lambda: cudaload.compile_all([q], output="ptx")),
        ("compile_all arch=9.0", lambda: cudaload.compile_all([p], arch=9.0)),
        ("Linker arch='sm_9x'", lambda: Linker(ptx, arch="sm_9x")),
        ("Linker.link('invalid_target')", lambda: Linker(ptx).link("invalid_target")))}
    with open("/proc/self/maps") as f:
        maps = f.read()
    loaded = [lib for lib in ("libcuda.", "libnvrtc", "libnvJitLink") if lib in maps]
    made = {name: _outcome(ask) for name, ask in (
        ("ltoir", lambda: p.compile(output="ltoir")),
        ("PTX program", q.compile),
        ("PTX program, output='cubin'", lambda: q.compile(output="cubin")),
        ("auto", p.compile),
        ("cubin", lambda: p.compile(output="cubin")),
        ("ptx", lambda: p.compile(output="ptx")),
        ("plan ltoir", lambda: run(p.plan(None, "ltoir"))),
        ("compile_all ltoir", lambda: cudaload.compile_all([p, p2], output="ltoir", workers=2)),
        ("compile_all PTX program", lambda: cudaload.compile_all([q])),
        ("compile_all auto", lambda: cudaload.compile_all([q, p2])))}
    from cudaload.bindings import nvrtc

    print(json.dumps({"wrong": wrong, "loaded": loaded, "made": made,
                      "newest": f"sm_{max(nvrtc.supported_archs())}"}))


SCENARIOS = {f.__name__: f for f in (
    cuda_headers, names_and_log, compile_error, arch_choice, memory_hit, package_includes,
    recompile_after_refusal, new_kernel, arch_spellings, package_headers, device_includes,
    default_archs, old_driver, compile_cases, dropped_program, arch_rule)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
