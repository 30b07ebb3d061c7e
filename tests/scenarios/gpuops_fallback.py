"""The example package examples/gpuops (which must be importable) in a fresh process, without a
GPU.

    python -m tests.scenarios.gpuops_fallback SCENARIO ARGS...

Each prints what it found as JSON on its last line; gpuops and cudaload are imported inside each
scenario, so importing this module loads nothing.
"""

from __future__ import annotations

import json
import sys


def fallback() -> None:
    """Every op on every dtype against numpy; gpuops's warnings, backend and loaded kernels, and
    the CUDA libraries mapped."""
    import warnings

    import numpy as np

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import gpuops

        rng = np.random.default_rng(1)
        bad = []
        for dt in (np.float16, np.float32, np.float64):
            x = rng.uniform(-2, 2, (7, 33)).astype(dt)
            y = rng.uniform(-2, 2, (7, 33)).astype(dt)
            acc = np.float64 if dt == np.float64 else np.float32
            wide = x.astype(acc)
            e = np.exp(wide - wide.max(axis=-1, keepdims=True))
            want = {
                "add": (gpuops.add(x, y), x + y),
                "mul": (gpuops.mul(x, y), x * y),
                "axpy": (gpuops.axpy(0.5, x, y),
                         (acc(dt(0.5)) * wide + y.astype(acc)).astype(dt)),
                "relu": (gpuops.relu(x), np.maximum(x, 0).astype(dt)),
                "sum": (gpuops.sum(x), dt(np.sum(x, dtype=acc))),
                "softmax": (gpuops.softmax(x), (e / e.sum(axis=-1, keepdims=True)).astype(dt)),
            }
            for op, (got, expected) in want.items():
                if np.asarray(got).dtype != np.dtype(dt) or not np.array_equal(got, expected):
                    bad.append(f"{op} {np.dtype(dt)}")
    ours = [str(w.message) for w in caught if w.category is gpuops.GpuopsWarning]
    with open("/proc/self/maps") as f:
        mapped = sorted({line.split()[-1] for line in f if "libcuda" in line or "libnvrtc" in line
                         or "libcudart" in line})
    print(json.dumps({"bad": bad, "warnings": ours, "backend": gpuops.backend(),
                      "loaded": gpuops.loaded_kernels(), "mapped": mapped}))


def programs(op: str) -> None:
    """The programs of ``op``'s kernels compiled for sm_80: [kind, arch, lowered names] each."""
    from gpuops import _kernels

    progs = [p for p in _kernels.programs() if p.name_expressions[0].startswith(op)]
    objs = [p.compile(arch="sm_80") for p in progs]
    print(json.dumps([[o.kind, o.arch, sorted(o.lowered_names)] for o in objs]))


def refusals() -> None:
    """What the numpy fallback raises for arrays that do not broadcast or would promote, and
    what a typed int8 device array given as float32 raises."""
    import numpy as np

    import gpuops
    from gpuops import _arrays

    got = {}
    for name, call in (
            ("broadcast", lambda: gpuops.add(np.ones(3, np.float32), np.ones((2, 3), np.float32))),
            ("promote", lambda: gpuops.mul(np.ones(3, np.float32), np.ones(3, np.float64)))):
        try:
            call()
            got[name] = None
        except ValueError as err:
            got[name] = str(err)

    class Int8Array:  # a typed 1-byte device array, as CuPy's int8
        __cuda_array_interface__ = {"shape": (8,), "typestr": "|i1", "data": (4096, False),
                                    "version": 3, "strides": None}

    try:
        _arrays.DeviceArray(Int8Array(), "float32")
        got["int8"] = None
    except TypeError as err:
        got["int8"] = str(err)
    print(json.dumps(got))


def forked_child() -> None:
    """With a driver that has devices (a fake): gpuops's backend in the parent, and in a child
    forked after CUDA's use, add() of numpy arrays, its warnings and the backend then."""
    import os
    import warnings

    import numpy as np

    import cudaload
    import gpuops

    parent = list(gpuops.backend())
    cudaload.alloc(4)  # CUDA is in use: a child cannot use it
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = np.arange(5, dtype=np.float32)
            got = gpuops.add(x, x)
            again = gpuops.mul(x, x)
        ours = [str(w.message) for w in caught if w.category is gpuops.GpuopsWarning]
        os.write(write, json.dumps({
            "right": bool(np.array_equal(got, x + x) and np.array_equal(again, x * x)),
            "warnings": ours, "backend": list(gpuops.backend())}).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = json.loads(f.read())
    os.waitpid(pid, 0)
    print(json.dumps({"parent": parent, "child": child}))


SCENARIOS = {f.__name__: f for f in (fallback, programs, refusals, forked_child)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
