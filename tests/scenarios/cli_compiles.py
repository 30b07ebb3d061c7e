"""The command line and the cache it fills, driven from a fresh process.

    python -m tests.scenarios.cli_compiles SCENARIO ARGS...

Each prints what it found as JSON on its last line; cudaload is imported inside each scenario, so
importing this module does nothing.
"""

from __future__ import annotations

import json
import os
import sys
import time


def ptx_on_a_gpu(source: str, ptx: str) -> None:
    """``cudaload compile SOURCE --ptx`` on the GPU the driver library pretends: [its exit status,
    the file ``ptx``]."""
    import contextlib
    import io

    from cudaload import cli

    with contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(["compile", source, "--ptx"])
    print(json.dumps([status, open(ptx).read()]))


def store_three(age: str, then: str = "") -> None:
    """Compile three kernels into the cache; with ``age`` "aged", make their entries last used a
    minute ago.  With ``then`` "prune", print what prune(0) removed and kept, else 0."""
    from cudaload import Program
    from cudaload.compile import cache

    for i in range(3):
        Program('extern "C" __global__ void k%d(int *p) { *p = %d; }' % (i, i)).compile(arch=90)
    if age == "aged":  # as if last used a minute ago
        for e in os.scandir(cache.configured().folder):
            if e.name.endswith(".bin"):
                os.utime(e.path, (time.time() - 60, time.time() - 60))
    print(json.dumps(cache.configured().prune(0)) if then == "prune" else 0)


SCENARIOS = {f.__name__: f for f in (ptx_on_a_gpu, store_three)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
