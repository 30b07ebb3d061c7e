"""compile_all on a Ray cluster: the kernels of a package compiled on the cluster's CPUs, the code
back here as ObjectCode and kept in this process's caches.

    python compile_on_ray.py [RAY_ADDRESS]     # "auto": the cluster this machine belongs to;
                                               # none: a local Ray started for the run

Ray has no ``concurrent.futures.Executor`` of its own; ``compile_all(executor=...)`` needs only
``submit(fn, *args)`` returning a future with ``result()``, which :class:`RayExecutor` gives from
a Ray task and ``ObjectRef.future()``.  The workers need cudaload and NVRTC
(``pip install cudaload nvidia-cuda-nvrtc``), no GPU and no CUDA driver.
"""

from __future__ import annotations

import sys

import ray

import cudaload


class RayExecutor:
    """``submit(fn, *args)`` as a Ray task of ``options`` (e.g. ``num_cpus=1``); a
    ``concurrent.futures.Future`` of its result."""

    def __init__(self, **options):
        self._options = options
        self._remote = {}  # fn -> its Ray remote function, made once (Ray exports each one made)

    def submit(self, fn, *args):
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = ray.remote(fn).options(**self._options)
        return remote.remote(*args).future()


KERNEL = r"""
extern "C" __global__ void scale_{i}(float *x, float a, int n) {{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) x[j] = a * x[j] + {i};
}}
"""


def main(address: str | None = None) -> int:
    ray.init(address=address)
    programs = [cudaload.Program(KERNEL.format(i=i), name=f"scale_{i}.cu") for i in range(32)]
    try:
        objs = cudaload.compile_all(programs, arch=90, executor=RayExecutor(num_cpus=1))
    except cudaload.CompileError as err:  # a program NVRTC rejected, named with its log
        print(err, file=sys.stderr)
        return 1
    except cudaload.CudaLoadError as err:  # a worker lost: the program it compiled is named
        print(err, file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
    print(f"{len(objs)} programs compiled on Ray, {sum(len(o.code) for o in objs)} bytes; "
          f"again here: {programs[0].compile(arch=90).cached}")  # "memory": kept in this process
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
