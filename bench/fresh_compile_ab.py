"""Paired A/B of a fresh process's first compile: this tree against another revision.

    python bench/fresh_compile_ab.py --base REV [--repeats 15] [--out FILE]
    python bench/fresh_compile_ab.py --base-tree DIR ...   # a copy of the other tree (no .git)

For each program (no include; CUDA's ``cuda_fp16.h``; a header of the user's folder) and each
repetition, both trees run back to back in fresh processes, in alternating order: a cold compile
(an empty cache folder that holds the toolchain.json an earlier process wrote: NVRTC and the
header folders already known) and then a disk hit (the folder the cold compile filled).  Each child
times ``import cudaload`` and ``Program(...).compile(arch=90)`` itself, both trees' bytecode
compiled first (as an installed wheel has it).  Prints one JSON document:
medians per tree and the median of the paired ratios (this tree / base).  Needs NVRTC, not a GPU.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from _commit import commit  # bench/ is sys.path[0] when run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAMS = {
    "saxpy": 'extern "C" __global__ void k(float a, float *x, int n)'
             ' { int i = threadIdx.x; if (i < n) x[i] *= a; }\n',
    "cuda_fp16": '#include <cuda_fp16.h>\nextern "C" __global__ void k(__half *x)'
                 ' { x[threadIdx.x] = __hadd(x[threadIdx.x], x[threadIdx.x]); }\n',
    "user_header": '#include "v.h"\nextern "C" __global__ void k(int *p) { *p = VAL; }\n',
}

CHILD = r"""
import os, sys, time  # json after the timing: what cudaload imports is cudaload's to pay
os.chdir(sys.argv[2])
start = time.perf_counter()
import cudaload
program = cudaload.Program(sys.argv[1])
obj = program.compile(arch=90)
took = (time.perf_counter() - start) * 1e3
import json
print(json.dumps({"ms": took, "cached": obj.cached}))
"""


def _run(tree: str, source: str, cache: str, here: str) -> dict:
    path = os.environ.get("PYTHONPATH")  # kept after the tree: cffi may come from there
    env = {**os.environ, "CUDALOAD_CACHE_DIR": cache,
           "PYTHONPATH": tree + (os.pathsep + path if path else "")}
    proc = subprocess.run([sys.executable, "-c", CHILD, source, here], env=env, cwd=here,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise SystemExit(f"{tree}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--base", help="the revision to compare with (e.g. HEAD~3)")
    which.add_argument("--base-tree", help="a folder holding the other tree (git archive of it)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cudaload-ab-")
    base = os.path.abspath(args.base_tree) if args.base_tree else os.path.join(work, "base")
    if args.base:
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "-q", "--detach", base, args.base],
                       check=True)
    here = os.path.join(work, "src")
    os.mkdir(here)
    with open(os.path.join(here, "v.h"), "w") as f:
        f.write("#define VAL 7\n")
    trees = {"this": ROOT, "base": base}
    for tree in trees.values():  # bytecode first, as an installed wheel has it (bench/pycache.py)
        compileall.compile_dir(os.path.join(tree, "cudaload"), quiet=1)
    rows: dict = {}
    try:
        for name, source in PROGRAMS.items():
            times: dict = {tree: {"cold": [], "disk": []} for tree in trees}
            for rep in range(args.repeats + 1):  # the first round warms the page cache
                order = list(trees) if rep % 2 else list(trees)[::-1]
                for tree in order:
                    known = os.path.join(work, f"known-{tree}")
                    if not os.path.isdir(known):  # toolchain.json written once per tree
                        _run(trees[tree], PROGRAMS["saxpy"] + "// warm\n", known, here)
                    cache = os.path.join(work, f"c-{tree}-{name}-{rep}")
                    os.mkdir(cache)
                    shutil.copy(os.path.join(known, "toolchain.json"), cache)
                    cold = _run(trees[tree], source, cache, here)
                    disk = _run(trees[tree], source, cache, here)
                    assert cold["cached"] is None and disk["cached"] == "disk", (cold, disk)
                    if rep:
                        times[tree]["cold"].append(cold["ms"])
                        times[tree]["disk"].append(disk["ms"])
            rows[name] = {
                kind: {"this_ms": statistics.median(times["this"][kind]),
                       "base_ms": statistics.median(times["base"][kind]),
                       "ratio_paired": statistics.median(
                           a / b for a, b in zip(times["this"][kind], times["base"][kind]))}
                for kind in ("cold", "disk")}
    finally:
        if args.base:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base], check=False)
        shutil.rmtree(work, ignore_errors=True)
    out = json.dumps({"this": commit() or "?",
                      "base": args.base or args.base_tree, "repeats": args.repeats, "rows": rows},
                     indent=2)
    print(out)
    if args.out:
        with open(args.out, "w") as f:
            f.write(out + "\n")


if __name__ == "__main__":
    main()
