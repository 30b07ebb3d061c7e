"""Cache writers that are killed, folders that refuse, and many processes at once, each run in a
fresh process.

    python -m tests.scenarios.cache_faults SCENARIO ARGS...

cudaload is imported inside each scenario, so importing this module does nothing.
"""

from __future__ import annotations

import json
import os
import sys
import time


def compile_numbered(kernel: str, count: str) -> None:
    """Compile ``kernel.format(n=i)`` for i below ``count``: where each came from, its size, and
    the cache's warnings."""
    import warnings

    from cudaload import Program

    from cudaload.compile import cache

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [Program(kernel.format(n=i)).compile(arch=90) for i in range(int(count))]
    print(json.dumps({"cached": [o.cached for o in got], "sizes": [len(o.code) for o in got],
                      "warnings": [str(w.message) for w in caught
                                   if issubclass(w.category, cache.CacheWarning)]}))


def writer() -> None:
    """Print "ready", then store large entries under 40 keys until killed."""
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    i = 0
    while True:
        size = (1 << 20) * (1 + i % 8)  # large entries: the kill lands inside a write often
        cache.default().store("%064x" % (i % 40),
                              ObjectCode(os.urandom(64) * (size // 64), "cubin", "sm_90"))
        i += 1


def half_writer() -> None:
    """Store an entry, then replace it, stopping (printing "inside") after half of the new
    entry's bytes reached its temporary file: a kill then lands inside the write."""
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    cache.default().store("%064x" % 0, ObjectCode(b"old" * 1000, "cubin", "sm_90"))
    real_write = os.write

    def half_write(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        sys.stdout.write("inside\n")
        sys.stdout.flush()
        time.sleep(600)

    os.write = half_write
    cache.default().store("%064x" % 0, ObjectCode(b"new" * 1000, "cubin", "sm_90"))


def load_worker(worker: str, start: str) -> None:
    """From the wall-clock time ``start``, compile 50 kernels: 0-24 shared by every worker, 25 of
    this one's own; print where each came from, its size, and the seconds taken."""
    import tests.scenarios.compile_log  # counts the compilations
    from cudaload import Program
    from cudaload.bindings import _loader

    _loader.nvrtc()
    worker, start = int(worker), float(start)
    src = 'extern "C" __global__ void k(int *x) { x[0] = %d; }\n'
    # kernels 0-24 are shared by every process; the other 25 belong to this one
    numbers = list(range(25)) + [1000 * (worker + 1) + i for i in range(25)]
    progs = [Program(src % n) for n in numbers]
    while time.time() < start:
        time.sleep(0.001)
    got = [p.compile(arch=90) for p in progs]
    print(json.dumps({"cached": [o.cached for o in got], "sizes": [len(o.code) for o in got],
                      "seconds": time.time() - start}))


SCENARIOS = {f.__name__: f for f in (compile_numbered, writer, half_writer, load_worker)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
