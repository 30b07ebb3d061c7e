"""Device code in every form, compiled and linked in a fresh process, for tests/test_linker.py:
LTO IR and PTX as Program inputs and outputs, relocatable CUBINs, libraries, and cudaload.Linker
over them, with the real NVRTC and nvJitLink wheels, no GPU.

    python -m tests.scenarios.link_forms SCENARIO [ARGS]

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module loads nothing.
"""

from __future__ import annotations

import hashlib
import json
import sys

# cuda.core's separate-compilation fixture: A calls B calls C, each its own program.
A = r"""
extern __device__ int b(int);
extern "C" __global__ void ka(int *out) { out[threadIdx.x] = b(threadIdx.x); }
"""
B = r"""
extern __device__ int c(int);
__device__ int b(int x) { return c(x) * 2; }
"""
C = "__device__ int c(int x) { return x + 1; }"
# A kernel that launches a kernel from the device: linked with libcudadevrt.a.
DYNAMIC = r"""
extern "C" __global__ void child(int *out, int base) { out[base + threadIdx.x] = base + threadIdx.x; }
extern "C" __global__ void parent(int *out, int n) { if (threadIdx.x == 0) child<<<1, n>>>(out, n * blockIdx.x); }
"""
KERNEL = 'extern "C" __global__ void fill(int *p) { p[threadIdx.x] = 7; }'


def _mapped(stem: str) -> bool:
    with open("/proc/self/maps") as maps:
        return any(stem in line for line in maps)


def _sha(obj) -> str:
    return hashlib.sha256(obj.code).hexdigest()


def _programs(**kw):
    import cudaload

    return [cudaload.Program(text, name=name, **kw) for text, name in
            ((A, "a.cu"), (B, "b.cu"), (C, "c.cu"))]


def _seen(obj) -> dict:
    return {"kind": obj.kind, "arch": obj.arch, "name": obj.name, "cached": obj.cached,
            "sha": _sha(obj)}


def forms() -> None:
    """Each form once, as a fresh process does it: the three programs as LTO IR linked with LTO
    (to CUBIN and PTX), as relocatable CUBINs linked, a PTX program compiled to CUBIN; where
    each came from, and whether NVRTC and nvJitLink were loaded."""
    import pickle

    import cudaload

    ir = [p.compile(arch=90, output="ltoir") for p in _programs()]
    cubins = [p.compile(arch=90, output="cubin") for p in _programs(relocatable=True)]
    lto = cudaload.Linker(*ir, arch=90, lto=True)
    linked = lto.link()
    linked_ptx = cudaload.Linker(*ir, arch=90, lto=True).link("ptx")
    rdc = cudaload.Linker(*cubins, arch="sm_90").link()
    ptx_text = cudaload.Program(KERNEL, name="fill.cu").compile(arch=75, output="ptx").code
    from_ptx = cudaload.Program(ptx_text, name="fill.ptx", code_type="ptx").compile(arch=90)
    back = pickle.loads(pickle.dumps(ir[0]))
    print(json.dumps({
        "ir": [_seen(o) for o in ir], "cubins": [_seen(o) for o in cubins],
        "linked": _seen(linked), "linked_ptx": _seen(linked_ptx), "rdc": _seen(rdc),
        "from_ptx": _seen(from_ptx), "info_log": lto.info_log, "linker": lto.linker,
        "ptx_entry": b".entry ka" in linked_ptx.code,
        "ptx_calls_out": b".extern .func" in linked_ptx.code,
        "rdc_has": [name in rdc.code for name in (b"ka", b"_Z1bi", b"_Z1ci")],
        "pickled": [back.kind, back.name, back.arch, back.code == ir[0].code],
        "nvrtc": _mapped("libnvrtc"), "nvjitlink": _mapped("libnvJitLink")}))


def undefined(form: str) -> None:
    """A and B linked without C (``form``: "cubin" for relocatable CUBINs, "ltoir"): the error
    and the logs the Linker kept."""
    import cudaload

    programs = _programs(relocatable=True) if form == "cubin" else _programs()
    inputs = [p.compile(arch=90, output=form) for p in programs[:2]]
    linker = cudaload.Linker(*inputs, arch=90, lto=form == "ltoir")
    try:
        linker.link()
    except cudaload.LinkError as err:
        print(json.dumps({"type": type(err).__name__, "symbol": err.symbol, "log": err.log,
                          "message": str(err), "linker": err.linker,
                          "error_log": linker.error_log, "runtime": isinstance(err, RuntimeError)}))
        return
    print(json.dumps({"type": None}))


def undeclared(form: str) -> None:
    """A kernel calling ``__device__ int foo(int)``, which nothing defines, compiled as ``form``
    ("cubin": relocatable; "ltoir") and linked alone: the symbol, the message and the hint of
    the error."""
    import cudaload

    text = ("extern __device__ int foo(int);\n"
            'extern "C" __global__ void k(int *p) { p[0] = foo(p[1]); }\n')
    obj = cudaload.Program(text, name="k.cu", relocatable=True).compile(arch=90, output=form)
    try:
        cudaload.Linker(obj, arch=90, lto=form == "ltoir").link()
    except cudaload.LinkError as err:
        print(json.dumps({"symbol": err.symbol, "message": str(err), "hint": err.hint}))
        return
    print(json.dumps({"symbol": None}))


def dynamic(library: str) -> None:
    """The kernel that launches a kernel, relocatable, linked with and without ``library``
    (libcudadevrt.a): the undefined symbol without it, what the linked CUBIN holds with it."""
    import cudaload

    obj = cudaload.Program(DYNAMIC, name="dynamic.cu", relocatable=True).compile(
        arch=90, output="cubin")
    try:
        cudaload.Linker(obj, arch=90).link()
        missing = None
    except cudaload.LinkError as err:
        missing = err.symbol
    linked = cudaload.Linker(obj, library, arch=90).link()
    print(json.dumps({"missing": missing, "name": linked.name, "kind": linked.kind,
                      "kernels": [k in linked.code for k in (b"parent", b"child")],
                      "bigger": len(linked.code) > len(obj.code)}))


def keys() -> None:
    """Links that differ in one input's bytes, an option, the arch, LTO or the output each
    miss; the same link made again (a new Linker of equal inputs) hits memory."""
    import cudaload

    ir = [p.compile(arch=90, output="ltoir") for p in _programs()]
    other_c = cudaload.Program(C.replace("x + 1", "x + 2"), name="c.cu").compile(
        arch=90, output="ltoir")
    base = cudaload.Linker(*ir, arch=90, lto=True).link()
    variants = {
        "same": cudaload.Linker(*ir, arch=90, lto=True).link(),
        "input": cudaload.Linker(ir[0], ir[1], other_c, arch=90, lto=True).link(),
        "option": cudaload.Linker(*ir, arch=90, lto=True, options=("-O0",)).link(),
        "arch": cudaload.Linker(*ir, arch=100, lto=True).link(),
        "output": cudaload.Linker(*ir, arch=90, lto=True).link("ptx"),
    }
    print(json.dumps({name: [obj.cached, _sha(obj) == _sha(base)]
                      for name, obj in variants.items()}))


def precompiled(bundle_path: str) -> None:
    """LTO IR through a bundle and compile_all: the three programs' IR written to a bundle, then
    found in it by Programs that carry it; and compile_all of IR and of a PTX program."""
    import cudaload

    programs = _programs()
    bundle = cudaload.Bundle()
    for program, obj in zip(programs, cudaload.compile_all(programs, arch=90, output="ltoir",
                                                            workers=2)):
        bundle.add(program, obj)
    bundle.write(bundle_path)
    shipped = cudaload.Bundle.from_file(bundle_path)
    from cudaload.compile import cache

    cache.MEMORY.clear()  # as a fresh process: the bundle is asked before the disk cache
    found = [cudaload.Program(p.source, name=p.name, bundle=shipped).compile(
        arch=90, output="ltoir") for p in programs]
    ptx_text = cudaload.Program(KERNEL, name="fill.cu").compile(arch=75, output="ptx").code
    mixed = cudaload.compile_all([cudaload.Program(ptx_text, name="fill.ptx", code_type="ptx"),
                                  cudaload.Program(KERNEL, name="fill.cu")], arch=90,
                                 output="cubin", workers=1)
    linked = cudaload.Linker(*found, arch=90, lto=True).link()
    print(json.dumps({"entries": sorted((e["name"], e["kind"], e["arch"])
                                        for e in shipped.entries()),
                      "found": [[o.cached, o.kind] for o in found],
                      "mixed": [[o.kind, o.name] for o in mixed], "linked": linked.kind}))


def variables() -> None:
    """The three programs' IR and a program holding only a device variable, linked with LTO,
    without and with -optimize-unused-variables: whether the variable is in each module."""
    import cudaload

    ir = [p.compile(arch=90, output="ltoir") for p in _programs()]
    counter = cudaload.Program("__device__ int calls;", name="calls.cu").compile(
        arch=90, output="ltoir")
    kept = cudaload.Linker(*ir, counter, arch=90, lto=True).link()
    dropped = cudaload.Linker(*ir, counter, arch=90, lto=True,
                              options=("-optimize-unused-variables",)).link()
    print(json.dumps({"kept": b"calls" in kept.code, "dropped": b"calls" in dropped.code,
                      "linked": [kept.linked, dropped.linked]}))


# Bytes that pass ObjectCode.from_bytes (the right header) but are no code of their kind.
DAMAGED = {"cubin": b"\x7fELF" + bytes(60), "ltoir": b"\xedCN\x7f" + bytes(60),
           "library": b"!<arch>\n" + b"x" * 50, "fatbin": b"\x50\xed\x55\xba" + bytes(60),
           "ptx": b".version 8.0\n.target sm_90\nnot ptx"}


def damaged() -> None:
    """Each kind of damaged input linked alone: the error each raised."""
    import cudaload

    out = {}
    for kind, data in DAMAGED.items():
        obj = cudaload.ObjectCode.from_bytes(data, kind, name=f"bad.{kind}")
        try:
            cudaload.Linker(obj, arch=90, lto=kind == "ltoir").link()
            out[kind] = None
        except cudaload.CudaLoadError as err:
            out[kind] = [type(err).__name__, getattr(err, "result", ""), f"bad.{kind}" in str(err)]
    print(json.dumps(out))


def refused_option() -> None:
    """A link option whose value only nvJitLink checks, refused by it: the error."""
    import cudaload

    obj = cudaload.Program(C, name="c.cu", relocatable=True).compile(arch=90, output="cubin")
    try:
        cudaload.Linker(obj, arch=90, options=("-device-stack-protector=maybe",)).link()
    except cudaload.LinkError as err:
        print(json.dumps({"type": type(err).__name__, "result": err.result, "message": str(err),
                          "hint": err.hint}))
        return
    print(json.dumps({"type": None}))


def refused_arch(arch: str) -> None:
    """A link for ``arch``, which this nvJitLink does not know or no longer supports, where no
    GPU is: the error, and the release nvJitLink says it is."""
    import cudaload
    from cudaload.bindings import nvjitlink

    obj = cudaload.Program(C, name="c.cu", relocatable=True).compile(arch=90, output="cubin")
    linker = cudaload.Linker(obj, arch=arch)
    try:
        linker.link()
    except cudaload.CudaLoadError as err:
        print(json.dumps({"type": type(err).__name__, "result": getattr(err, "result", None),
                          "linker": getattr(err, "linker", None), "log": getattr(err, "log", None),
                          "message": str(err), "hint": err.hint, "kept": linker.error_log,
                          "cause": type(err.__cause__).__name__,
                          "release": getattr(nvjitlink, "version", lambda: None)()}))
        return
    print(json.dumps({"type": None}))


def hits() -> None:
    """Which linker a link reports, and its memory and disk hits; then its entry written as
    before the linker was recorded: a miss, linked and written over."""
    import os

    import cudaload
    from cudaload.compile import cache, objectcode

    obj = cudaload.Program(C, name="c.cu", relocatable=True).compile(arch=90, output="cubin")

    def link():
        linker = cudaload.Linker(obj, arch=90)
        return [linker.link().cached, linker.linker]

    seen = {"first": link(), "memory": link()}
    cache.MEMORY.clear()
    seen["disk"] = link()
    cache.default().writer.wait()
    folder = cache.default().folder
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not name.endswith(".bin"):
            continue
        with open(path, "rb") as f:
            entry = objectcode.decode(f.read())
        if entry is not None and getattr(entry, "_linker", None) is not None:
            entry._linker = None  # as an earlier version wrote it
            with open(path, "wb") as f:
                f.write(objectcode.encode(entry, name[:-4]))
            seen["rewritten"] = name
    cache.MEMORY.clear()
    seen["unrecorded"] = link()
    cache.default().writer.wait()
    cache.MEMORY.clear()
    seen["written_over"] = link()
    print(json.dumps(seen))


def split_compile() -> None:
    """A link with ``-split-compile=0`` (one thread per CPU) and a compile with it: the code."""
    import cudaload

    compiled = cudaload.Program(C, name="c.cu", relocatable=True,
                                options=("-split-compile=0",)).compile(arch=90, output="cubin")
    linker = cudaload.Linker(compiled, arch=90, options=("-split-compile=0",))
    linked = linker.link()
    print(json.dumps({"compiled": compiled.kind, "linked": [linked.kind, linked.arch],
                      "linker": linker.linker}))


SCENARIOS = {f.__name__: f for f in (forms, undefined, undeclared, dynamic, keys, precompiled,
                                     variables, damaged, refused_option, refused_arch, hits,
                                     split_compile)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
