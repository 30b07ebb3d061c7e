"""A fresh process's first compile of a new kernel, against NVRTC called directly through ctypes.

    python bench/first_compile.py [--repeats 21] [--against REV_OR_DIR ...] [--out FILE]

What a host package's user meets when a kernel first runs: a process starts, imports cudaload and
compiles one kernel no cache holds (the cache folder already holds ``toolchain.json``, which an
earlier process wrote, so NVRTC and the header folders are known).  The reference does the same
work with nothing but ``ctypes``: it opens the same libnvrtc, compiles the same source with the
same options (the standard, the arch, the CUDA header folders cudaload passes) and reads the CUBIN
and the log.  Each repetition runs both in fresh processes, back to back, in alternating order,
with a new kernel each time; the figure is the median of the paired ratios of the processes' wall
times (start to exit, the interpreter's own start included in both).  Target: <= 1.05.

The cudaload child also times its first ``Program()`` (after ``import cudaload``): target <= 5 ms.
``--against`` adds other trees of cudaload (a revision, taken with ``git archive``, or a folder)
to each repetition, in rotating order with this tree and the reference, each with a cache folder
of its own: ``against`` gives each one's figures and its processes' paired ratio to this tree's.
Bytecode is compiled first, as an installed wheel has it.  Prints one JSON document.  Needs NVRTC
(the wheels of the ``nvrtc`` extra), not a GPU.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from _commit import commit  # bench/ is sys.path[0] when run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATIO_TARGET = 1.05
PROGRAM_TARGET_MS = 5.0

KERNEL = ('extern "C" __global__ void k%d(float a, const float *x, float *y, int n)'
          ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n')

SETUP = r"""
import json, cudaload
from cudaload.compile import toolchain
program = cudaload.Program(%r)
program.compile(arch=90)
tc = toolchain.current()
print(json.dumps({"nvrtc": tc.nvrtc_path,
                  "options": [*program.options, "--gpu-architecture=sm_90", *tc.include_options]}))
"""

CUDALOAD = r"""
import sys, time
start = time.perf_counter()
import cudaload
before = time.perf_counter()
program = cudaload.Program(sys.argv[1])
made = time.perf_counter()
obj = program.compile(arch=90)
assert obj.cached is None and obj.code.startswith(b"\x7fELF"), obj
print((made - before) * 1e3, (time.perf_counter() - start) * 1e3)
"""

CTYPES = r"""
import ctypes, json, sys, time
start = time.perf_counter()
nvrtc = ctypes.CDLL(sys.argv[2])
options = json.loads(sys.argv[3])
program = ctypes.c_void_p()
assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), sys.argv[1].encode(), b"kernel.cu", 0,
                                None, None) == 0
words = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
assert nvrtc.nvrtcCompileProgram(program, len(options), words) == 0
size = ctypes.c_size_t()
nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetProgramLog(program, log)
nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
cubin = ctypes.create_string_buffer(size.value)
assert nvrtc.nvrtcGetCUBIN(program, cubin) == 0 and cubin.raw.startswith(b"\x7fELF")
nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
print(0.0, (time.perf_counter() - start) * 1e3)
"""


def _child(code: str, args: list[str], env: dict, cwd: str) -> tuple[float, float, float]:
    """(wall ms of the whole process, the child's first Program() ms, its own ms).  ``cwd`` is a
    folder without cudaload: ``python -c`` puts its working folder first on ``sys.path``, so a
    child started in a checkout would import that checkout's cudaload, not its tree's."""
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=300, cwd=cwd)
    wall = (time.perf_counter() - began) * 1e3
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    program_ms, inside_ms = map(float, proc.stdout.split()[-2:])
    return wall, program_ms, inside_ms


def tree(against: str, work: str) -> str:
    """The folder of the cudaload tree ``against`` names: a folder, or a revision of this
    repository written out with ``git archive`` (no worktree is registered)."""
    if os.path.isdir(os.path.join(against, "cudaload")):
        return os.path.abspath(against)
    folder = os.path.join(work, "tree-" + against.replace("/", "_"))
    if os.path.isdir(folder):  # written out already, by an earlier step of the same run
        return folder
    os.mkdir(folder)
    archive = subprocess.run(["git", "-C", ROOT, "archive", against, "cudaload"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return folder


def _env(tree: str, cache: str) -> dict:
    path = os.environ.get("PYTHONPATH")  # kept after the tree: cffi may come from there
    env = {**os.environ, "CUDALOAD_CACHE_DIR": cache,
           "PYTHONPATH": tree + (os.pathsep + path if path else "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _summary(rows: list[dict], name: str) -> dict:
    median = statistics.median
    ratio = [r[name][0] / r["ctypes"][0] for r in rows]
    return {"process_ms": median(r[name][0] for r in rows),
            "inside_ms": median(r[name][2] for r in rows),
            "first_program_ms": median(r[name][1] for r in rows),
            "ratio_median": median(ratio), "ratio_quartiles": statistics.quantiles(ratio, n=4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--against", action="append", default=[],
                    help="another tree to run in the same repetitions: a revision or a folder")
    ap.add_argument("--out")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"cudaload": ROOT, **{name: tree(name, tmp) for name in args.against}}
        envs = {}
        for n, (name, folder) in enumerate(trees.items()):
            compileall.compile_dir(os.path.join(folder, "cudaload"), quiet=1)
            envs[name] = _env(folder, os.path.join(tmp, f"cache-{n}"))
            setup = subprocess.run([sys.executable, "-c", SETUP % (KERNEL % 0)], env=envs[name],
                                   capture_output=True, text=True, timeout=300, cwd=tmp)
            if setup.returncode:
                raise SystemExit(f"{folder}: {setup.stderr[-2000:]}")
            if name == "cudaload":
                found = json.loads(setup.stdout.splitlines()[-1])
        options = json.dumps(found["options"])
        rows = []
        for i in range(1, args.repeats + 1):
            source = KERNEL % i
            runs = {name: (CUDALOAD, [source], envs[name]) for name in trees}
            runs["ctypes"] = (CTYPES, [source, found["nvrtc"], options], envs["cudaload"])
            names = list(runs)
            shift = i % len(names)  # each one first, second, ... in turn
            order = names[shift:] + names[:shift]
            rows.append({name: _child(*runs[name], tmp) for name in order})
    median = statistics.median
    mine = _summary(rows, "cudaload")
    out = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "commit": commit(),
        "repeats": args.repeats, "nvrtc": found["nvrtc"], "options": found["options"],
        "process_ms": {"cudaload": mine["process_ms"],
                       "ctypes": median(r["ctypes"][0] for r in rows)},
        "inside_ms": {"cudaload": mine["inside_ms"],
                      "ctypes": median(r["ctypes"][2] for r in rows)},
        "first_program_ms": mine["first_program_ms"],
        "ratio_median": mine["ratio_median"], "ratio_quartiles": mine["ratio_quartiles"],
        "targets": {"ratio": RATIO_TARGET, "first_program_ms": PROGRAM_TARGET_MS},
    }
    out["met"] = {"ratio": out["ratio_median"] <= RATIO_TARGET,
                  "first_program_ms": out["first_program_ms"] <= PROGRAM_TARGET_MS}
    if args.against:
        out["against"] = {name: {**_summary(rows, name), "process_ratio_to_this": median(
            r["cudaload"][0] / r[name][0] for r in rows)} for name in args.against}
    text = json.dumps(out, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
