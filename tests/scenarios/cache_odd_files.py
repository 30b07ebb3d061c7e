"""Odd files where the cache or a bundle is read, met in a fresh process.

    python -m tests.scenarios.cache_odd_files SCENARIO ARGS...

``compile_kernel`` and ``bundle_find`` first bound the address space to 4 GiB (reading /dev/zero
to the end fails fast instead of taking the machine's memory).  Each scenario prints what it found
as JSON on its last line; cudaload is imported inside each, so importing this module does nothing.
"""

from __future__ import annotations

import json
import os
import sys


def _bound_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def compile_kernel(source: str) -> None:
    """The status report, then ``source`` compiled: where it came from, its size, whether the
    disk cache is in use, whether NVRTC was found, and every warning."""
    _bound_memory()
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import cudaload
        from cudaload import Program
        from cudaload.compile import cache

        report = cudaload.status().as_dict()
        obj = Program(source).compile(arch=90)
    print(json.dumps({"cached": obj.cached, "size": len(obj.code),
                      "enabled": cache.default().usable, "nvrtc": report["nvrtc"]["found"],
                      "warnings": [str(w.message) for w in caught]}))


def bundle_find(path: str, source: str) -> None:
    """[whether the bundle file ``path`` has no entry for ``source``, the warnings]."""
    _bound_memory()
    import warnings

    from cudaload import Program
    from cudaload.compile.bundle import Bundle

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = Bundle.from_file(path).find(Program(source), 90)
    print(json.dumps([found is None, [str(w.message) for w in caught]]))


def writer(flag: str) -> None:
    """Create the file ``flag``, then publish and store 400 entries each; print whether the disk
    cache stayed in use, and the warnings."""
    import warnings

    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    open(flag, "w").close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(400):
            with cache.default().lock("%064x" % i) as publish:
                publish(ObjectCode(b"c" * 3000, "cubin", "sm_90"))
            cache.default().store("%064x" % (i + 10_000),
                                  ObjectCode(b"s" * 3000, "cubin", "sm_90"))
    print(json.dumps({"enabled": cache.default().usable,
                      "warnings": [str(w.message) for w in caught]}))


def clearer(flag: str) -> None:
    """Clear the cache over and over while the file ``flag`` exists (once it first does); print the
    first errors and the number of rounds."""
    from cudaload.compile import cache

    while not os.path.exists(flag):
        pass
    errors, rounds = [], 0
    while os.path.exists(flag):
        try:
            cache.configured().clear()
        except Exception as exc:
            errors.append(repr(exc))
        rounds += 1
    print(json.dumps({"errors": errors[:3], "rounds": rounds}))


SCENARIOS = {f.__name__: f for f in (compile_kernel, bundle_find, writer, clearer)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
