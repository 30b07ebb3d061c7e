"""Compilations whose disk cache hits and misses the cache tests count, each in a fresh process.

    python -m tests.scenarios.cache_compiles SCENARIO ARGS...

Each prints its findings as JSON on its last line.  cudaload is imported inside each scenario, so
importing this module compiles nothing.
"""

from __future__ import annotations

import json
import os
import sys

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
'''


def one() -> None:
    """SAXPY compiled to CUBIN: where it came from, its kind and size."""
    from cudaload import Program

    obj = Program(SAXPY).compile(arch=90)
    print(json.dumps({"cached": obj.cached, "kind": obj.kind, "size": len(obj.code)}))


def key_changes(inc: str) -> None:
    """Where the code came from after each input of the key changed, one at a time; ``inc`` holds
    ``user.cuh``, which is appended to."""
    from cudaload import Program
    from cudaload.compile import _cache_folder, cache, toolchain

    src = '#include "user.cuh"\n#include "mem.cuh"\n' + SAXPY
    base = dict(headers={"mem.cuh": "#define M 1\n"}, include_paths=[inc], options=("-DA=1",),
                name_expressions=())

    def compile(arch=90, output="cubin", source=src, **over):
        cache.MEMORY.clear()
        return Program(source, **{**base, **over}).compile(arch=arch, output=output).cached

    out = {"first": compile(), "again": compile()}
    out["source"] = compile(source=src + "\n// changed\n")
    out["header"] = compile(headers={"mem.cuh": "#define M 2\n"})
    out["options"] = compile(options=("-DA=2",))
    out["names"] = compile(name_expressions=("saxpy",))
    out["arch"] = compile(arch=80)
    out["kind"] = compile(output="ptx")
    with open(os.path.join(inc, "user.cuh"), "a") as f:
        f.write("#define U 2\n")
    out["included_file"] = compile()
    tc = toolchain.live()
    for field, value in (("version", (tc.version[0], tc.version[1] - 1)), ("build", "other-build"),
                         ("headers", tc.headers[:1] + (("cccl", "/elsewhere", "[1, null]"),))):
        toolchain._live = tc._replace(**{field: value})
        out["nvrtc_" + field] = compile()
    toolchain._live = tc
    _cache_folder.FORMAT += 1  # the key covers it (the folder, named when first used, stays)
    out["format"] = compile()
    _cache_folder.FORMAT -= 1
    print(json.dumps(out))


def ptx_and_cubin() -> None:
    """SAXPY compiled to PTX and to CUBIN: where each came from."""
    from cudaload import Program

    program = Program(SAXPY)
    print(json.dumps([program.compile(arch=90, output=kind).cached for kind in ("ptx", "cubin")]))


def disk_hit() -> None:
    """SAXPY compiled: where it came from, and whether libnvrtc was mapped and cuda.pathfinder
    imported to get it."""
    import time

    from cudaload import Program

    prog = Program(SAXPY)
    t = time.perf_counter()
    obj = prog.compile(arch=90)
    took = time.perf_counter() - t
    maps = open("/proc/self/maps").read()
    print(json.dumps({"cached": obj.cached, "nvrtc_mapped": "libnvrtc" in maps,
                      "pathfinder": "cuda.pathfinder" in sys.modules, "ms": took * 1e3}))


def three(refused: str = "") -> None:
    """Three programs compiled and the first again, with the cache's warnings; ``refused``
    ("read-only": no lock can be taken, "full": writing the entry fails) makes the folder refuse."""
    import warnings

    warnings.simplefilter("always")
    from cudaload import Program

    if refused:
        import errno

        from cudaload._base import _atomic
        from cudaload.compile.cache import locks

        code = {"read-only": errno.EROFS, "full": errno.ENOSPC}[refused]

        def refuse(*a, **k):
            raise OSError(code, os.strerror(code))

        _atomic.write_atomic = refuse
        if refused == "read-only":
            locks.acquire_key = refuse
        else:
            _atomic.commit = refuse
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = [Program(SAXPY + "// %d" % i).compile(arch=90).cached for i in range(3)]
        out.append(Program(SAXPY + "// 0").compile(arch=90).cached)
    print(json.dumps({"cached": out, "warnings": [str(w.message) for w in caught
                                                  if "cache" in str(w.message)]}))


def included(case: str, folder: str) -> None:
    """A program that reads the header of ``case`` from ``folder``, compiled twice: where the code
    came from, and which VAL (111 or 222) it holds."""
    from cudaload import Program

    inc = os.path.join(folder, "inc")
    body = 'extern "C" __global__ void k(int *p) { *p = VAL; }\n'
    os.chdir(folder)
    program = {
        "-I option": lambda: Program('#include "v1.h"\n' + body, options=("-I" + inc,)),
        "--include-path": lambda: Program('#include "v2.h"\n' + body,
                                          options=("--include-path=" + inc,)),
        "--pre-include": lambda: Program(body,
                                         options=("--pre-include=" + os.path.join(inc, "v3.h"),)),
        "#include MACRO": lambda: Program('#define H "v4.h"\n#include H\n' + body,
                                          include_paths=(inc,)),
        "beside a bare name": lambda: Program('#include "v5.h"\n' + body),
        "beside the named file": lambda: Program('#include "v6.h"\n' + body,
                                                 name=os.path.join(inc, "k.cu")),
        # NVRTC looks for a pre-included file in the current folder first, not beside the program
        "--pre-include, relative": lambda: Program(body, name=os.path.join(inc, "k.cu"),
                                                   options=("--pre-include=v7.h",)),
    }[case]()
    obj = program.compile(arch=90, output="ptx")
    again = program.compile(arch=90, output="ptx")
    print(json.dumps({"cached": obj.cached, "again": again.cached,
                      "value": 222 if b"222" in obj.code else 111 if b"111" in obj.code else None}))


def victim(source: str) -> None:
    """What a user's process sees of the cache: the status report's NVRTC path, then ``source``
    compiled (where it came from and its code), whether the disk cache is in use, and the cache's
    warnings."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import cudaload
        from cudaload import Program
        from cudaload.compile import cache

        report = cudaload.status().as_dict()
        try:
            obj = Program(source).compile(arch=90)
            cached, code = obj.cached, obj.code.decode("latin-1")
        except Exception as exc:  # reported, so that the test says what went wrong
            cached, code = "failed", repr(exc)
    print(json.dumps({"nvrtc_path": report["nvrtc"]["path"], "cached": cached, "code": code,
                      "enabled": cache.default().usable,
                      "warnings": [str(w.message) for w in caught
                                   if issubclass(w.category, cache.CacheWarning)]}))


def handed_write() -> None:
    """A miss whose entry's write is held back: whether the compile returned before the entry was
    written; whether a second compile of it in this process meanwhile read it as a disk hit
    without waiting; whether a thread taking the key's lock waited until the entry was written."""
    import threading
    import time

    from cudaload import Program
    from cudaload._base import _atomic
    from cudaload.compile import cache

    gate, write = threading.Event(), _atomic.write_atomic

    def held_write(path, *args, **kw):
        if path.endswith(".bin"):  # an entry's, not toolchain.json's
            gate.wait(5)
        write(path, *args, **kw)
    _atomic.write_atomic = held_write
    source = SAXPY + "// handed\n"
    t = time.perf_counter()
    first = Program(source).compile(arch=90)
    disk = cache.default()
    written = [e for e in os.listdir(disk.folder) if e.endswith(".bin")]
    cache.MEMORY.clear()
    from cudaload.compile import build, request

    asked = Program(source).plan(90, "auto")
    found = build.build(asked, request.lookup(asked))
    second, key = found.code, found.key
    quick = time.perf_counter() - t < 4
    found: list = []

    def take_the_key():
        with disk.lock(key):
            found.append(os.path.exists(disk.path(key)))
    thread = threading.Thread(target=take_the_key)
    thread.start()
    time.sleep(0.5)
    waited = thread.is_alive()
    gate.set()
    thread.join(60)
    print(json.dumps({"first": first.cached, "written_at_return": written,
                      "second": second.cached, "second_quick": quick,
                      "same_code": second.code == first.code,
                      "lock_waited": waited, "written_when_locked": found}))


SCENARIOS = {"one": one, "handed_write": handed_write, "key_changes": key_changes, "ptx_and_cubin": ptx_and_cubin, "disk_hit": disk_hit, "three": three,
             "included": included, "victim": victim}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
