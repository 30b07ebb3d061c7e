"""GPU memory that loaded modules take, by what the modules hold: one JSON line per run.

    python bench/module_memory.py {trivial,constexpr,family,family-one,family-lto} COUNT

In a fresh process (run it once per case): a bare context and three small buffers, then COUNT
programs compiled with ``compile_all``, each loaded as its own module and its kernel launched
once; ``cuMemGetInfo``'s used memory over the bare context after every 16 loads and after the
launches (the driver reports it in steps of 2 MiB), with the CUBINs' total size and the kernels'
local memory.  The cases: ``trivial``, one kernel and nothing else per module; ``constexpr``, the
same with a class template's ``static constexpr`` members read in the kernel (NVRTC emits such
members as device variables of every module, as the family header's type traits are);
``family``, bench/family_bench.py's 64 kernels on its 3,320-line header (COUNT above 64 repeats
them with another first comment line, so each is a program of its own); ``family-one``, the first
COUNT (at most 64) of those kernels in one program, so one module holds them all;
``family-lto``, the family's programs compiled by NVRTC to LTO IR (``-dlto``) and linked one by one
with nvJitLink's ``-lto -optimize-unused-variables``, which drops the device variables no code
reads (cudaload does not do this itself: it is done here with cuda.bindings' NVRTC and nvJitLink,
with cudaload's header folders).
"""

from __future__ import annotations

import json
import os
import sys

MIB = 1 << 20
_TRIVIAL = ('extern "C" __global__ void k%d(float *a, float *b, long long n) '
            '{ if (n == %d) a[0] = 1; }')
_CONSTEXPR = ('template <class T> struct D { static constexpr int id = %d; static constexpr bool '
              'f = true; static constexpr int g[4] = {1, 2, 3, 4}; };\n'
              'extern "C" __global__ void k%d(float *a, float *b, long long n) '
              '{ if (n == D<float>::id + D<int>::g[n & 3]) a[0] = 1; }')


def programs(cudaload, which: str, count: int) -> list:
    """(kernel names, Program) of each module of the case."""
    if which.startswith("family"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import family_header

        headers = {"family.cuh": family_header.header()}
        if which == "family-one":  # each kernel's text is a comment, the #include, the kernel
            chosen = family_header.kernels("module memory")[:count]
            text = '#include "family.cuh"\n' + "\n".join(src.split("\n", 2)[2]
                                                           for _n, src in chosen)
            return [(tuple(name for name, _src in chosen),
                     cudaload.Program(text, name="family.cu", headers=headers))]
        chosen = [kernel for copy in range(-(-count // 64))
                  for kernel in family_header.kernels(f"module memory {copy}")][:count]
        return [((name,), cudaload.Program(src, name=f"{name}.cu", headers=headers))
                for name, src in chosen]
    text = {"trivial": _TRIVIAL, "constexpr": _CONSTEXPR}[which]
    return [((f"k{i}",), cudaload.Program(text % (i, i))) for i in range(count)]


def main(argv) -> dict:
    import cudaload

    which, count = argv[0], int(argv[1])
    dev = cudaload.Device(0)
    bufs = [cudaload.alloc(2048) for _ in range(3)]
    dev.synchronize()

    def used_mib(base: int = 0) -> float:
        free, total = dev.mem_info()
        return round((total - free - base) / MIB, 2)
    base = round(used_mib() * MIB)
    progs = programs(cudaload, "family" if which == "family-lto" else which, count)
    if which == "family-lto":
        objs = [_lto_object(cudaload, p, dev.arch) for _n, p in progs]
    else:
        objs = cudaload.compile_all([p for _n, p in progs], arch=dev.arch)
    steps, kernels = [], []
    for i, ((names, _p), obj) in enumerate(zip(progs, objs)):
        module = obj.load()
        kernels += [module.get_kernel(name) for name in names]
        if (i + 1) % 16 == 0:
            dev.synchronize()
            steps.append([i + 1, used_mib(base)])
    loaded = used_mib(base)
    for k in kernels:
        try:  # unary kernels take (in, out, n), binary ones (a, b, out, n)
            k(1, 256, (*bufs[:2], 256))
        except cudaload.LaunchArgumentError:
            k(1, 256, (*bufs, 256))
    dev.synchronize()
    return {"which": which, "count": count, "modules": len(objs),
            "loading": os.environ.get("CUDA_MODULE_LOADING"), "loaded_mib": steps,
            "all_loaded_mib": loaded, "launched_mib": used_mib(base),
            "cubin_bytes": sum(len(o.code) for o in objs),
            "local_bytes": sorted({k.attributes.local_size_bytes for k in kernels})}


def _lto_object(cudaload, prog, arch: int):
    """``prog`` compiled to LTO IR and linked alone into a CUBIN without unused device variables."""
    from cuda.bindings import nvjitlink, nvrtc

    from cudaload.compile import toolchain

    def ok(result):
        if int(result[0]):
            raise RuntimeError(f"NVRTC: {result[0]}")
        return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)

    names = [n.encode() for n in prog.headers]
    texts = [t.encode() for t in prog.headers.values()]
    handle = ok(nvrtc.nvrtcCreateProgram(prog.source.encode(), prog.name.encode(), len(names),
                                         texts, names))
    options = [o.encode() for o in (*prog.options, *toolchain.current().include_options,
                                     "-dlto", f"-arch=sm_{arch}")]
    ok(nvrtc.nvrtcCompileProgram(handle, len(options), options))
    size = ok(nvrtc.nvrtcGetLTOIRSize(handle))
    ir = b" " * size
    ok(nvrtc.nvrtcGetLTOIR(handle, ir))
    nvrtc.nvrtcDestroyProgram(handle)
    link = nvjitlink.create(3, [f"-arch=sm_{arch}", "-lto", "-optimize-unused-variables"])
    nvjitlink.add_data(link, nvjitlink.InputType.LTOIR, ir, len(ir), prog.name)
    nvjitlink.complete(link)
    cubin = bytearray(nvjitlink.get_linked_cubin_size(link))
    nvjitlink.get_linked_cubin(link, cubin)
    nvjitlink.destroy(link)
    return cudaload.ObjectCode.from_bytes(bytes(cubin), "cubin")


if __name__ == "__main__":  # compile_all's workers import this file: nothing runs at import
    print(json.dumps(main(sys.argv[1:])))
