"""Compile-path benchmark: cold compile overhead, memory hit, fresh-process disk hit, lookup scaling.

    python bench/compile_bench.py [--out FILE] [--quick] [--against REV_OR_DIR ...]

Targets: cold compile <= 2% over calling NVRTC directly on the same source; memory hit
<= 5 us, and <= 2 us for ``Program(src, ...).compile()`` made anew on each call (as host packages
that build kernel text per call do); disk hit in a fresh process <= 2 ms from the
compile(arch=...) call to the ObjectCode; lookup cost flat from 10 to 10,000 entries.  ``--against`` times the
fresh-process disk hit of other trees too (a revision, or a folder holding one), each in its own
cache folder, alternating with this tree's: ``disk_hit_fresh_process.against``; and the memory
hits of each tree in fresh processes run in turn: ``memory_hit_fresh_processes``.  Prints one
JSON document.  Needs NVRTC, not a GPU (``arch=None``'s memory hit needs a device, or a driver
that reports one: ``memory_hit`` says so where there is none).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

KERNEL = r"""
#include <cuda_fp16.h>
template <class T>
__global__ void axpy(T a, const T *x, T *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void to_half(const float *x, __half *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = __float2half(x[i]);
}
"""
NAMES = ("axpy<float>", "axpy<double>")
ARCH = 90

DISK_HIT = r"""
import sys, time  # json after the timing: what the hit imports is the hit's to pay
sys.path.insert(0, sys.argv[1])
start = time.perf_counter()
from cudaload import Program
prog = Program(sys.argv[2], name_expressions=tuple(sys.argv[3:]))
t = time.perf_counter()
obj = prog.compile(arch=%d)
took = time.perf_counter() - t
whole = time.perf_counter() - start
maps = open("/proc/self/maps").read() if sys.platform.startswith("linux") else ""
import json
print(json.dumps({"ms": took * 1e3, "whole_ms": whole * 1e3, "cached": obj.cached, "nvrtc_mapped": "libnvrtc" in maps,
                  "pathfinder": "cuda.pathfinder" in sys.modules}))
""" % ARCH


# The memory hits of one tree in a fresh process (its tree first on sys.path), best of 5 rounds
# each: the same Program asked again, and a new Program made each call.
MEMORY_HITS = r"""
import json, sys, timeit
sys.path.insert(0, sys.argv[1])
from cudaload import Program
src, names, calls = sys.argv[2], tuple(sys.argv[4:]), int(sys.argv[3])
prog = Program(src, name_expressions=names)
prog.compile(arch=%d)
cases = {"same Program": lambda: prog.compile(arch=%d),
         "new Program": lambda: Program(src, name_expressions=names).compile(arch=%d),
         "Program() alone": lambda: Program(src, name_expressions=names)}
print(json.dumps({case: min(timeit.repeat(call, number=calls, repeat=5)) / calls * 1e6
                  for case, call in cases.items()}))
""" % (ARCH, ARCH, ARCH)


def memory_hits_against(runs: int, calls: int, against, work: str) -> dict:
    """The memory hits of this tree and of each tree ``against`` names, in fresh processes run
    in turn (``runs`` of each, the order turned each time), with one hash seed for all: which
    string hashes collide in the caches' dicts otherwise differs from process to process."""
    from first_compile import tree

    trees = {"this": ROOT, **{name: tree(name, work) for name in against}}
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the cache folder: filled by the caller
    results: dict = {name: [] for name in trees}
    for i in range(runs):
        names = list(trees)
        for name in names[i % len(names):] + names[:i % len(names)]:
            results[name].append(json.loads(subprocess.run(
                [sys.executable, "-c", MEMORY_HITS, trees[name], KERNEL, str(calls), *NAMES],
                env=env, check=True, capture_output=True, text=True).stdout))
    cases = list(results["this"][0])
    out: dict = {"us_per_call": {case: round(statistics.median(r[case] for r in results["this"]), 3)
                                 for case in cases}, "runs": runs, "calls": calls}
    out["against"] = {name: {
        "us_per_call": {case: round(statistics.median(r[case] for r in results[name]), 3)
                        for case in cases},
        "ratio_paired_median": {case: round(statistics.median(
            a[case] / b[case] for a, b in zip(results["this"], results[name])), 3)
            for case in cases}} for name in against}
    return out


def cold_overhead(reps: int) -> dict:
    from cudaload import Program
    from cudaload.bindings import nvrtc
    from cudaload.compile import toolchain

    Program(KERNEL + "// warm-up\n", name_expressions=NAMES).compile(arch=ARCH)
    tc = toolchain.live()
    direct, ours, inside = [], [], []
    real_compile = nvrtc.compile

    def timed_compile(*a, **kw):  # NVRTC's share of each Program.compile call
        t = time.perf_counter()
        try:
            return real_compile(*a, **kw)
        finally:
            inside.append(time.perf_counter() - t)
    for i in range(reps):
        source = KERNEL + f"// variant {i} {time.time_ns()}\n"
        prog = Program(source, name_expressions=NAMES)
        options = (*prog.options, f"--gpu-architecture=sm_{ARCH}", *tc.include_options)
        for order in ((0, 1) if i % 2 else (1, 0)):  # alternate which goes first
            t = time.perf_counter()
            if order == 0:
                nvrtc.compile(source, prog.name, options, {}, NAMES, kind="cubin")
                direct.append(time.perf_counter() - t)
            else:
                nvrtc.compile = timed_compile
                try:
                    obj = prog.compile(arch=ARCH)  # includes hashing, lookup, lock, atomic write
                finally:
                    nvrtc.compile = real_compile
                ours.append(time.perf_counter() - t)
                assert obj.cached is None
    d, o = statistics.median(direct), statistics.median(ours)
    # Paired ratios cancel slow drifts of the machine (other load) that medians of each side keep.
    paired = statistics.median(b / a - 1 for a, b in zip(direct, ours))
    own = [o - i for o, i in zip(ours, inside)]
    return {"cache_own_ms_median": round(statistics.median(own) * 1e3, 3),
            "overhead_pct_own_vs_nvrtc": round(statistics.median(
                x / i for x, i in zip(own, inside)) * 100, 2),
            "direct_median_ms": round(d * 1e3, 2), "cudaload_median_ms": round(o * 1e3, 2),
            "overhead_pct_of_medians": round((o / d - 1) * 100, 2),
            "overhead_pct_paired_median": round(paired * 100, 2),
            "overhead_pct_of_minimums": round((min(ours) / min(direct) - 1) * 100, 2),
            "reps": reps, "target_pct": 2.0}


def memory_hit(calls: int) -> dict:
    from cudaload import CudaUnavailableError, Program

    prog = Program(KERNEL, name_expressions=NAMES)
    prog.compile(arch=ARCH)
    out = {}
    for label, arch in (("arch=90", ARCH), ("arch='sm_90'", "sm_90"), ("arch=None", None)):
        try:
            prog.compile(arch=arch)
        except CudaUnavailableError:  # arch=None compiles nothing without a device
            out[label] = "no device"
            continue
        best = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(calls):
                prog.compile(arch=arch)
            best.append((time.perf_counter() - t) / calls)
        out[label] = round(min(best) * 1e6, 3)
    return {"us_per_call": out, "calls": calls, "target_us": 5.0}


def memory_hit_new_program(calls: int) -> dict:
    """``Program(src, ...).compile(arch=...)`` with a new Program each call: the text given as the
    same str object, or built anew each call (its hash computed again)."""
    from cudaload import Program

    Program(KERNEL, name_expressions=NAMES).compile(arch=ARCH)
    out = {}
    cases = (("same text", lambda: Program(KERNEL, name_expressions=NAMES).compile(arch=ARCH)),
             ("text built per call",
              lambda: Program("".join((KERNEL, "")), name_expressions=NAMES).compile(arch=ARCH)),
             ("Program() alone", lambda: Program(KERNEL, name_expressions=NAMES)))
    for label, call in cases:
        assert label == "Program() alone" or call().cached == "memory"
        best = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(calls):
                call()
            best.append((time.perf_counter() - t) / calls)
        out[label] = round(min(best) * 1e6, 3)
    return {"us_per_call": out, "calls": calls, "target_us": 2.0, "chars": len(KERNEL)}


def disk_hit(runs: int, against=(), work: str | None = None) -> dict:
    """The fresh-process disk hit of this tree, and of each tree ``against`` names (a revision or
    a folder), run in turn, each with its cache folder (the first run of each fills it)."""
    from first_compile import tree

    trees = {"this": ROOT, **{name: tree(name, work) for name in against}}
    args = {name: [sys.executable, "-c", DISK_HIT, folder, KERNEL, *NAMES]
            for name, folder in trees.items()}
    envs = {name: {**os.environ, "CUDALOAD_CACHE_DIR": os.path.join(work, f"hit-{n}")}
            for n, name in enumerate(trees)} if against else {"this": dict(os.environ)}
    results: dict = {name: [] for name in trees}
    for name in trees:
        compileall.compile_dir(os.path.join(trees[name], "cudaload"), quiet=1)
        subprocess.run(args[name], env=envs[name], check=True, capture_output=True)  # filled
    for i in range(runs):
        names = list(trees)
        for name in names[i % len(names):] + names[:i % len(names)]:
            results[name].append(json.loads(subprocess.run(
                args[name], env=envs[name], check=True, capture_output=True, text=True).stdout))
    out = _hit_figures(results["this"])
    if against:
        out["against"] = {name: {**_hit_figures(results[name]), **{
            f"ratio_paired_median{suffix}": round(statistics.median(
                a[field] / b[field] for a, b in zip(results["this"], results[name])), 3)
            for field, suffix in (("ms", ""), ("whole_ms", "_whole"))}} for name in against}
    return out


def _hit_figures(results: list) -> dict:
    times = [r["ms"] for r in results]
    return {"median_ms": round(statistics.median(times), 3), "max_ms": round(max(times), 3),
            # from the import of cudaload: where a tree pays the compile path's imports (at the
            # import, at Program() or at the first compile()) moves the figure above
            "whole_median_ms": round(statistics.median(r["whole_ms"] for r in results), 3),
            "runs": len(times), "all_disk": all(r["cached"] == "disk" for r in results),
            "nvrtc_mapped": any(r["nvrtc_mapped"] for r in results),
            "pathfinder_imported": any(r["pathfinder"] for r in results), "target_ms": 2.0}


def lookup_scaling(sizes, lookups: int) -> dict:
    from cudaload import Program
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    prog = Program(KERNEL, name_expressions=NAMES)
    prog.compile(arch=ARCH)
    filler = cache.encode(ObjectCode(os.urandom(8192), "cubin", "sm_90"))
    have = 0
    out = {}
    for size in sizes:
        while have < size - 1:  # entries written in the cache's own format (no fsync: setup only)
            key = os.urandom(32).hex()
            path = cache.default().path(key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(filler)
            have += 1
        samples = []
        for _ in range(lookups):
            cache.MEMORY.clear()
            t = time.perf_counter()
            obj = prog.compile(arch=ARCH)
            samples.append(time.perf_counter() - t)
            assert obj.cached == "disk"
        out[str(size)] = round(statistics.median(samples) * 1e6, 1)
    return {"median_us_per_disk_lookup": out, "lookups": lookups}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the JSON to this file")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--against", action="append", default=[],
                        help="another tree whose fresh-process disk hit is timed in turn with "
                             "this one's: a revision or a folder")
    parser.add_argument("--disk-hit-runs", type=int, help="fresh processes per tree (5 with "
                        "--quick, else 15)")
    args = parser.parse_args()
    import pycache

    bytecode = pycache.ensure()  # as an installed wheel has it: the disk hit's fresh processes
    with tempfile.TemporaryDirectory(prefix="cudaload-bench-") as folder, \
            tempfile.TemporaryDirectory(prefix="cudaload-trees-") as trees:
        os.environ["CUDALOAD_CACHE_DIR"] = folder
        os.environ.pop("CUDALOAD_CACHE", None)
        os.environ.pop("CUDALOAD_CACHE_MAX_BYTES", None)
        result = {
            "python": sys.version.split()[0],
            "bytecode": bytecode,
            "cold_compile": cold_overhead(5 if args.quick else 101),
            "memory_hit": memory_hit(20_000 if args.quick else 200_000),
            "memory_hit_new_program": memory_hit_new_program(20_000 if args.quick else 100_000),
            "disk_hit_fresh_process": disk_hit(
                args.disk_hit_runs or (5 if args.quick else 15), args.against, trees),
            "lookup_scaling": lookup_scaling((10, 100, 1000, 10_000), 50 if args.quick else 300),
        }
        if args.against:
            result["memory_hit_fresh_processes"] = memory_hits_against(
                5 if args.quick else 11, 20_000 if args.quick else 100_000, args.against, trees)
        from cudaload.bindings import nvrtc

        result["nvrtc"] = ".".join(map(str, nvrtc.version()))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
