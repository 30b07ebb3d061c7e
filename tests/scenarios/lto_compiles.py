"""Programs compiled with link-time optimisation (``lto=True``) in a fresh process, for
tests/test_lto.py: NVRTC's LTO IR linked by the nvJitLink wheel, no GPU needed.

    python -m tests.scenarios.lto_compiles SCENARIO [ARGS]

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module loads nothing.
"""

from __future__ import annotations

import json
import sys

# A header's constants (static constexpr members, emitted into every module that includes it), a
# device variable no code reads, one the kernel both reads and writes, and the kernel.
SOURCE = r"""
struct Limits { static constexpr float lowest = -3.0f; static constexpr float table[4] = {1, 2, 3, 4}; };
__device__ float never_read[1024] = {1};
__device__ int counter;
extern "C" __global__ void count(float *out)
{
    out[0] = Limits::table[1] + Limits::lowest;
    atomicAdd(&counter, 1);
    out[1] = counter;
}
"""
UNDEFINED = r"""
__device__ float helper(float);
extern "C" __global__ void calls(float *p) { p[0] = helper(p[1]); }
"""


def _mapped(stem: str) -> bool:
    with open("/proc/self/maps") as maps:
        return any(stem in line for line in maps)


def _names(code: bytes) -> dict:
    return {name: name.encode() in code for name in ("never_read", "counter", "count", "Limits")}


def variables(options: str = "") -> None:
    """SOURCE for sm_90 as CUBIN and PTX, plain and with lto=True (or, with ``options`` "-dlto",
    that option instead): which names each holds, its size and kind, its log."""
    import cudaload

    out = {}
    linked = {"options": ("-dlto",)} if options == "-dlto" else {"lto": True}
    for label, kw in (("plain", {}), ("lto", linked)):
        for output in ("cubin", "ptx"):
            obj = cudaload.Program(SOURCE, **kw).compile(arch=90, output=output)
            out[f"{label}-{output}"] = {**_names(obj.code), "size": len(obj.code),
                                        "kind": obj.kind, "log": obj.log,
                                        "entry": b".entry count" in obj.code}
    print(json.dumps(out))


def hit() -> None:
    """SOURCE with lto=True compiled as in a fresh process: where it came from, and whether
    libnvJitLink and libnvrtc were loaded for it."""
    import cudaload

    obj = cudaload.Program(SOURCE, lto=True).compile(arch=90)
    import pickle

    print(json.dumps({"cached": obj.cached, "linked": obj.linked,
                      "pickled": pickle.loads(pickle.dumps(obj)).linked,
                      "plain": cudaload.Program(SOURCE).compile(arch=90).linked,
                      "nvjitlink": _mapped("libnvJitLink"),
                      "nvrtc": _mapped("libnvrtc"), "names": _names(obj.code),
                      "sha": __import__("hashlib").sha256(obj.code).hexdigest()}))


def undefined() -> None:
    """The error of a program that calls a device function it does not define."""
    import cudaload

    try:
        cudaload.Program(UNDEFINED, name="calls.cu", lto=True).compile(arch=90)
    except cudaload.CompileError as err:
        print(json.dumps({"type": type(err).__name__, "message": str(err), "log": err.log,
                          "name": err.name, "function": err.function}))
        return
    print(json.dumps({"type": None}))


def missing() -> None:
    """lto=True with CUDALOAD_LIBNVJITLINK naming no file, then the same program without it."""
    import cudaload

    try:
        cudaload.Program(SOURCE, lto=True).compile(arch=90)
        error = None
    except cudaload.CudaLoadError as err:
        error = {"type": type(err).__name__, "message": str(err), "hint": err.hint}
    plain = cudaload.Program(SOURCE).compile(arch=90)
    print(json.dumps({"error": error, "plain": plain.kind}))


def family(workers: str) -> None:
    """Three programs with lto=True through compile_all: each one's names."""
    import cudaload

    programs = [cudaload.Program(SOURCE.replace("count", f"count{i}"), lto=True)
                for i in range(3)]
    objs = cudaload.compile_all(programs, arch=90, workers=int(workers))
    again = cudaload.compile_all(programs, arch=90, workers=int(workers))
    print(json.dumps([{"never_read": b"never_read" in o.code, "kernel": f"count{i}".encode() in o.code,
                       "linked": o.linked, "again": [a.cached, a.linked]}
                      for i, (o, a) in enumerate(zip(objs, again))]))


SCENARIOS = {f.__name__: f for f in (variables, hit, undefined, missing, family)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
