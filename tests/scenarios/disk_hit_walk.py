"""The code a disk hit runs, file by file, in a fresh process: what a reader of the compile path
follows from ``Program(src).compile()`` to the ObjectCode read from the cache folder.

    python -m tests.scenarios.disk_hit_walk fill     # compile the kernels (the folder is the env's)
    python -m tests.scenarios.disk_hit_walk walk     # one hit to warm up, then the one traced

``walk`` prints, as JSON, how the traced hit was answered and each cudaload file whose functions
it called (relative to the package), in the order first called, with the number of calls.
``fresh ARCH`` traces the first ``compile(arch=ARCH)`` of a fresh process, a disk hit, from the
call to the ObjectCode, imports included: the files whose code ran and the modules it imported.
"""

from __future__ import annotations

import json
import sys

# Two kernels as most are written: a CUDA header, no user folder.  The first is compiled before
# the traced one, so that the walk is that of a hit in a process that has compiled already (the
# imports of the first compile are the first-compile benchmark's, bench/fresh_compile_ab.py).
KERNELS = ['#include <cuda_fp16.h>\nextern "C" __global__ void k(__half *x) { x[0] = %s; }' % v
           for v in ("__float2half(1.0f)", "__float2half(2.0f)")]


def fill() -> None:
    import cudaload

    print(json.dumps([cudaload.Program(src).compile().cached for src in KERNELS]))


def walk() -> None:
    import os

    import cudaload

    package = os.path.dirname(cudaload.__file__) + os.sep
    cudaload.Program(KERNELS[0]).compile()
    calls: dict[str, int] = {}

    def profile(frame, event, _arg):
        if event == "call":
            path = frame.f_code.co_filename
            if path.startswith(package):
                name = path[len(package):]
                calls[name] = calls.get(name, 0) + 1

    sys.setprofile(profile)
    try:
        obj = cudaload.Program(KERNELS[1]).compile()
    finally:
        sys.setprofile(None)
    print(json.dumps({"cached": obj.cached, "arch": obj.arch, "files": calls}))


def forked() -> None:
    """The device's arch found in the parent, then asked in a forked child: what the child's
    compile(arch=None) would be given."""
    import os

    import cudaload
    from cudaload.bindings import thread_device
    from cudaload.errors import ForkedProcessError

    parent = cudaload.Program(KERNELS[0]).compile().arch
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            thread_device.arch()
            answer = b"answered"
        except ForkedProcessError:
            answer = b"refused"
        os.write(write, answer + (b" remembered" if thread_device.state.arch else b""))
        os._exit(0)
    os.close(write)
    child = os.read(read, 100).decode()
    os.waitpid(pid, 0)
    print(json.dumps({"parent": parent, "child": child}))


def fresh(arch: str) -> None:
    import os

    import cudaload

    package = os.path.dirname(cudaload.__file__) + os.sep
    program = cudaload.Program(KERNELS[1])
    before = set(sys.modules)
    files: list[str] = []

    def profile(frame, event, _arg):
        # a module's own code runs as a call too: its import is counted with its file
        path = frame.f_code.co_filename
        if event == "call" and path.startswith(package) and path[len(package):] not in files:
            files.append(path[len(package):])

    sys.setprofile(profile)
    try:
        obj = program.compile(arch=int(arch))
    finally:
        sys.setprofile(None)
    print(json.dumps({"cached": obj.cached, "files": files,
                      "imported": sorted(set(sys.modules) - before)}))


SCENARIOS = {f.__name__: f for f in (fill, walk, forked, fresh)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
