"""Programs given a bundle, compiled in a fresh process, for the bundle tests.

    python -m tests.scenarios.bundle_uses SCENARIO ARGS...

The ``kpkg`` package of the bundle tests must be importable.  Each scenario prints what it found
as JSON on its last line; cudaload is imported inside each, so importing this module loads
nothing.
"""

from __future__ import annotations

import json
import sys


class _Hidden:
    """An import hook that finds neither the NVRTC wheel nor cuda.pathfinder."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "nvidia" or name.startswith("cuda.pathfinder"):
            raise ImportError(f"{name} is hidden by the test")


def with_nvrtc_hidden(bundle_path: str) -> None:
    """With the NVRTC wheel and cuda.pathfinder not importable: ops.cu compiled twice from the
    bundle, whether that mapped NVRTC or imported cuda.pathfinder, and what compiling it with
    other options (no entry of the bundle) gives."""
    sys.meta_path.insert(0, _Hidden())
    from cudaload import LibraryNotFoundError, Program
    from cudaload.compile.bundle import Bundle

    bundle = Bundle.from_file(bundle_path)
    prog = Program.from_resource("kpkg", "ops.cu", name_expressions=["scale<float>"],
                                 bundle=bundle)
    obj = prog.compile(arch="sm_90")
    again = prog.compile(arch="sm_90")
    maps = open("/proc/self/maps").read()
    other = Program.from_resource("kpkg", "ops.cu", name_expressions=["scale<float>"],
                                  options=("-DEXTRA=1",), bundle=bundle)
    try:
        other.compile(arch="sm_90")
        fallback = "compiled"
    except LibraryNotFoundError as err:
        fallback = "LibraryNotFoundError: " + str(err)
    print(json.dumps({"code": obj.code.hex(), "cached": obj.cached, "arch": obj.arch,
                      "again": again.cached, "names": obj.lowered_names,
                      "nvrtc_mapped": "libnvrtc" in maps,
                      "pathfinder": "cuda.pathfinder" in sys.modules,
                      "fallback": fallback}))


def mismatches(bundle_path: str) -> None:
    """ops.cu compiled with the bundle's options and arch, other options, another arch:
    [where the code came from, arch, is ELF] for each."""
    from cudaload import Program
    from cudaload.compile.bundle import Bundle

    bundle = Bundle.from_file(bundle_path)
    made = []
    for options, arch in (((), "sm_90"), (("-DEXTRA=1",), "sm_90"), ((), "sm_80")):
        obj = Program.from_resource("kpkg", "ops.cu", name_expressions=["scale<float>"],
                                    options=options, bundle=bundle).compile(arch=arch)
        made.append([obj.cached, obj.arch, obj.code[:4] == b"\x7fELF"])
    print(json.dumps(made))


def refused_code() -> None:
    """A bundle entry the driver refuses, compiled anew: where each came from, and whether the
    program then gives the fresh code."""
    from cudaload import Program
    from cudaload.compile.bundle import Bundle
    from cudaload.compile.objectcode import ObjectCode
    from cudaload.compile.program import recompile_refused

    src = "extern \"C\" __global__ void k(float *x) { x[0] = 1; }"
    made = Bundle()
    made.add(Program(src), ObjectCode(b"\x7fELF not really", "cubin", "sm_90"))
    prog = Program(src, bundle=Bundle(made.to_bytes()))
    shipped = prog.compile(arch="sm_90")
    fresh = recompile_refused(shipped)  # what Module does when the driver refuses it
    print(json.dumps([shipped.cached, fresh.cached, fresh.arch, len(fresh.code) > 100,
                      prog.compile(arch="sm_90").code == fresh.code]))


def ptx_shipped(bundle_path: str, ptx_path: str) -> None:
    """The PTX program of file ``ptx_path`` given the bundle ``cudaload precompile`` made of it,
    with NVRTC's and nvJitLink's wheels and cuda.pathfinder not importable (the environment
    names no file for either library, nor for the driver): what the bundle gave, whether a
    library was mapped, and what each request no entry matches raised: the link it tried."""
    sys.meta_path.insert(0, _Hidden())
    from cudaload import CudaLoadError, Program
    from cudaload.compile.bundle import Bundle

    bundle = Bundle.from_file(bundle_path)
    text = open(ptx_path).read()
    program = Program.from_file(ptx_path, bundle=bundle)
    found = [[o.cached, o.arch, o.name, o.code.hex()] for o in
             (program.compile(arch="sm_90"), program.compile(arch="sm_90"),
              program.compile(arch="sm_86"))]  # sm_86 runs the sm_80 entry
    maps = open("/proc/self/maps").read()
    misses = {}
    for label, made, arch in (
            ("text", lambda: Program(text + "\n// changed\n", name=program.name,
                                     code_type="ptx", bundle=bundle), "sm_90"),
            ("options", lambda: Program(text, name=program.name, code_type="ptx",
                                        line_info=True, bundle=bundle), "sm_90"),
            ("name", lambda: Program(text, name="other.ptx", code_type="ptx",
                                     bundle=bundle), "sm_90"),
            ("arch", lambda: Program(text, name=program.name, code_type="ptx",
                                     bundle=bundle), "sm_100")):
        try:
            misses[label] = made().compile(arch=arch).cached
        except CudaLoadError as err:
            misses[label] = type(err).__name__
    print(json.dumps({"found": found, "nvrtc_mapped": "libnvrtc" in maps,
                      "nvjitlink_mapped": "libnvJitLink" in maps,
                      "pathfinder": "cuda.pathfinder" in sys.modules, "misses": misses}))


def ptx_mismatches(bundle_path: str, ptx_path: str) -> None:
    """The PTX program of ``ptx_path`` as shipped, with its text changed, and for an arch the
    bundle lacks, nvJitLink there to link: [where the code came from, arch, is ELF] for each."""
    from cudaload import Program
    from cudaload.compile.bundle import Bundle

    bundle = Bundle.from_file(bundle_path)
    text = open(ptx_path).read()
    made = []
    for changed, arch in (("", "sm_90"), ("\n// changed\n", "sm_90"), ("", "sm_100")):
        obj = Program(text + changed, name="fill.ptx", code_type="ptx",
                      bundle=bundle).compile(arch=arch)
        made.append([obj.cached, obj.arch, obj.code[:4] == b"\x7fELF"])
    print(json.dumps(made))


def ltoir_shipped(bundle_path: str, source_path: str) -> None:
    """The program of ``source_path`` asked for LTO IR with the bundle ``cudaload precompile
    --ltoir`` made, NVRTC's wheel and cuda.pathfinder hidden: where the IR came from, whether
    NVRTC was mapped, and the kind of its link by nvJitLink (named by the environment)."""
    sys.meta_path.insert(0, _Hidden())
    from cudaload import Linker, Program
    from cudaload.compile.bundle import Bundle

    program = Program.from_file(source_path, bundle=Bundle.from_file(bundle_path))
    ir = program.compile(arch="sm_90", output="ltoir")
    linked = Linker(ir, arch="sm_90", lto=True).link()
    print(json.dumps({"ir": [ir.cached, ir.kind, ir.arch, ir.name],
                      "nvrtc_mapped": "libnvrtc" in open("/proc/self/maps").read(),
                      "linked": [linked.kind, linked.cached]}))


SCENARIOS = {f.__name__: f for f in (with_nvrtc_hidden, mismatches, refused_code, ptx_shipped,
                                     ptx_mismatches, ltoir_shipped)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
