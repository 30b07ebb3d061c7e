"""The README's CPU fallback, as a host package writes it, in a fresh process.

    python -m tests.scenarios.readme_fallback SCENARIO

The scenario is what the GPU path does first: ``compile_first`` (Program(...).compile().load()
before any allocation) or ``alloc_first`` (memory first, then the kernel).  Prints as JSON on its last line which
path ran, its result, what escaped the ``except CudaUnavailableError`` (if anything), and
whether libnvrtc was loaded.  cudaload is imported inside, so importing this module loads nothing.
"""

from __future__ import annotations

import json
import sys

SCALE = 'extern "C" __global__ void scale(float *x, float a, int n) {' \
        ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }'
N = 256


def _kernel():
    import cudaload

    return cudaload.Program(SCALE, name="scale.cu").compile().load().get_kernel(
        "scale", signature="float *, float, int")


def gpu_path(values, order: str):
    import array

    import cudaload

    kernel = _kernel() if order == "compile" else None
    buf = cudaload.alloc(len(values) * 4)
    buf.copy_from_host(array.array("f", values))
    if kernel is None:
        kernel = _kernel()
    kernel((1,), (N,), (buf, 3.0, len(values)))
    out = array.array("f", [0.0]) * len(values)
    buf.copy_to_host(out)
    return list(out)


def cpu_path(values):
    return [v * 3.0 for v in values]


def _run(order: str) -> None:
    import cudaload

    values = [float(i) for i in range(N)]
    ran, escaped = None, None
    try:
        try:
            result = gpu_path(values, order)
            ran = "gpu"
        except cudaload.CudaUnavailableError:
            result = cpu_path(values)
            ran = "cpu"
    except Exception as exc:  # what the pattern lets through: the test says whether it may
        result = None
        escaped = {"type": type(exc).__name__, "message": str(exc),
                   "hint": getattr(exc, "hint", "")}
    with open("/proc/self/maps") as f:
        nvrtc = any("libnvrtc" in line for line in f)
    print(json.dumps({"ran": ran, "right": result == cpu_path(values), "escaped": escaped,
                      "nvrtc_loaded": nvrtc}))


def compile_first() -> None:
    """The GPU path compiles and loads its kernel before it allocates."""
    _run("compile")


def alloc_first() -> None:
    """The GPU path allocates and copies before it compiles its kernel."""
    _run("alloc")


SCENARIOS = {f.__name__: f for f in (compile_first, alloc_first)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
