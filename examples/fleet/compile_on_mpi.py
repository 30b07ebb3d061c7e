"""compile_all on MPI processes through mpi4py's ``MPIPoolExecutor``: the kernels compiled on the
job's ranks, the code back on the rank that called it as ObjectCode, kept in its caches.

Either the pool spawns its workers (an MPI with dynamic process management):

    mpiexec -n 1 python compile_on_mpi.py 8        # 8 workers spawned

or the job starts them all and ``mpi4py.futures`` makes rank 0 the caller and the rest workers
(no spawning, as under SLURM or a batch system):

    mpiexec -n 9 python -m mpi4py.futures compile_on_mpi.py

The workers need cudaload and NVRTC, no GPU and no CUDA driver.  Results travel by pickle:
``ObjectCode`` pickles, and each job is a module-level function of cudaload with plain arguments.
"""

from __future__ import annotations

import sys

from mpi4py.futures import MPIPoolExecutor

import cudaload

KERNEL = r"""
extern "C" __global__ void scale_{i}(float *x, float a, int n) {{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) x[j] = a * x[j] + {i};
}}
"""


def main(workers: str | None = None) -> int:
    programs = [cudaload.Program(KERNEL.format(i=i), name=f"scale_{i}.cu") for i in range(32)]
    with MPIPoolExecutor(max_workers=int(workers) if workers else None) as pool:
        try:
            objs = cudaload.compile_all(programs, arch=90, executor=pool)
        except cudaload.CudaLoadError as err:  # a program rejected, or a worker lost: named
            print(err, file=sys.stderr)
            return 1
    print(f"{len(objs)} programs compiled on MPI workers, {sum(len(o.code) for o in objs)} "
          f"bytes; again here: {programs[0].compile(arch=90).cached}")
    return 0


if __name__ == "__main__":  # the workers import this module: the guard keeps them out of main()
    sys.exit(main(*sys.argv[1:2]))
