"""Links launched on a real GPU in a fresh process, for tests/gpu/test_linker.py: the driver's
linker (nvJitLink hidden by $CUDALOAD_LIBNVJITLINK naming no file) linking the A -> B -> C
programs and the kernel that launches kernels with libcudadevrt.a.

    python -m tests.scenarios.gpu_links SCENARIO [ARGS]

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module loads nothing.
"""

from __future__ import annotations

import json
import sys

from tests.scenarios.link_forms import A, B, C, DYNAMIC


def run_chain(obj, n: int = 64) -> list:
    """``ka`` of linked ``obj`` over ``n`` threads: out[i] = b(i) = c(i) * 2 = (i + 1) * 2."""
    import numpy as np

    import cudaload

    out = cudaload.alloc(n * 4)
    out.memset(0)
    obj.load().get_kernel("ka")(1, n, (out,))
    cudaload.Device(0).synchronize()
    return np.frombuffer(out.copy_to_host(), np.int32).tolist()


def run_dynamic(obj, blocks: int = 2, n: int = 32) -> list:
    """``parent`` of linked ``obj``: each block's thread 0 launches ``child`` over ``n`` threads,
    which writes out[base + i] = base + i."""
    import numpy as np

    import cudaload

    out = cudaload.alloc(blocks * n * 4)
    out.memset(0)
    obj.load().get_kernel("parent")(blocks, 1, (out, n))
    cudaload.Device(0).synchronize()
    return np.frombuffer(out.copy_to_host(), np.int32).tolist()


def fallback(tag: str) -> None:
    """The three relocatable programs and the kernel that launches kernels (with ``Linker.
    cudadevrt()``), each linked by the driver's linker and run; a link the driver refuses is
    reported with its log."""
    import cudaload

    def relocatable(text, name):
        return cudaload.Program(text + f"\n// {tag}", name=name, relocatable=True).compile(
            output="cubin")

    out = {"driver": cudaload.status().as_dict()["driver"]["version"],
           "nvrtc": cudaload.status().as_dict()["nvrtc"]["version"]}
    chain = cudaload.Linker(*(relocatable(t, n) for t, n in ((A, "a.cu"), (B, "b.cu"),
                                                           (C, "c.cu"))))
    dynamic = cudaload.Linker(relocatable(DYNAMIC, "dynamic.cu"), cudaload.Linker.cudadevrt())
    for label, linker, run in (("chain", chain, run_chain), ("dynamic", dynamic, run_dynamic)):
        try:
            out[label] = {"values": run(linker.link()), "linker": linker.linker}
        except cudaload.LinkError as err:
            out[label] = {"refused": str(err), "linker": err.linker}
    print(json.dumps(out))


SCENARIOS = {f.__name__: f for f in (fallback,)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
