"""What the compile path costs a fresh process: a disk hit, and a miss's CPU time over NVRTC's.

    python bench/pipeline_bench.py [--repeats 11] [--against REV_OR_DIR ...] [--out FILE]

Three cases, each in fresh processes on this host (bytecode compiled first, as an installed
wheel has it; each child started outside the checkout, so that it imports its own tree):

- ``disk_hit``: ``Program(src)`` and then ``compile(arch=90)`` answered from the disk cache: the
  time from the ``compile()`` call to the ``ObjectCode``, every import it triggers included
  (target <= 2 ms).  Beside it, in processes of their own: what ``-X importtime`` gives for the
  cudaload modules the hit imports (their own time summed), and how many distinct cudaload
  files run code during the hit (``sys.setprofile``).
- ``miss_recorded``: a fresh process's first compile of a new kernel, the cache folder holding
  the toolchain record (``toolchain.json``, written by an earlier process), against NVRTC called
  directly through ``ctypes`` in a fresh process with the same options and header folders
  (importing nothing but ``ctypes`` and ``sys``): the children's CPU time (user + sys, ``os.wait4``),
  paired, the order alternated; the median and the worst of the ratios (target <= 1.05).
- ``miss_empty``: the same from an empty cache folder, so NVRTC and the header folders are found
  first (target <= 1.10).

The misses run for a kernel with no include (``saxpy``) and one that includes CUDA's
``<cuda_fp16.h>`` from the NVIDIA wheels (``cuda_fp16``).  ``--against`` adds other trees (a
revision, written out with ``git archive``, or a folder holding ``cudaload/``) to every
repetition, in rotating order, each with cache folders of its own, and gives each one's ratios to
NVRTC and its paired ratio to this tree.  Prints one JSON document.  Needs NVRTC, not a GPU.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from _commit import commit  # noqa: E402  (bench/ is sys.path[0])

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from first_compile import _env, tree  # noqa: E402  (a tree's environment, a revision written out)

ARCH = 90
TARGETS = {"disk_hit_ms": 2.0, "miss_recorded": 1.05, "miss_empty": 1.10}
KERNELS = {
    "saxpy": 'extern "C" __global__ void k%d(float a, const float *x, float *y, int n)'
             ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n',
    "cuda_fp16": '#include <cuda_fp16.h>\nextern "C" __global__ void k%d(__half *x)'
                 ' { x[threadIdx.x] = __hadd(x[threadIdx.x], x[threadIdx.x]); }\n',
}
HIT_SOURCE = KERNELS["cuda_fp16"] % 999999

# Fills a cache folder and says what NVRTC was asked: the library, and the options cudaload
# passed it (its own trace option, which the reference has no use for, left out).
SETUP = r"""
import json, sys
import cudaload
from cudaload.bindings import nvrtc
from cudaload.compile import toolchain
seen = []
real = nvrtc.compile
def compile(source, name, options=(), *args, **kw):
    seen.append(list(options))
    return real(source, name, options, *args, **kw)
nvrtc.compile = compile
for source in sys.argv[1:]:
    cudaload.Program(source).compile(arch=%d)
print(json.dumps({"nvrtc": toolchain.current().nvrtc_path, "options": seen}))
""" % ARCH

# NVRTC through ctypes, as a program that needs nothing else does it: the options come as
# arguments (bench/first_compile.py's reference reads them with json, whose import of re costs a
# fresh process some 7 ms, a tenth of such a compile).
CTYPES = r"""
import ctypes, sys
lib, program, size = ctypes.CDLL(sys.argv[2]), ctypes.c_void_p(), ctypes.c_size_t()
words = [o.encode() for o in sys.argv[3:]]
assert lib.nvrtcCreateProgram(ctypes.byref(program), sys.argv[1].encode(), b"kernel.cu", 0,
                              None, None) == 0
assert lib.nvrtcCompileProgram(program, len(words), (ctypes.c_char_p * len(words))(*words)) == 0
for part in ("ProgramLog", "CUBIN"):  # the log, then the code
    getattr(lib, f"nvrtcGet{part}Size")(program, ctypes.byref(size))
    out = ctypes.create_string_buffer(size.value)
    assert getattr(lib, f"nvrtcGet{part}")(program, out) == 0
assert out.raw.startswith(b"\x7fELF")
lib.nvrtcDestroyProgram(ctypes.byref(program))
"""

MISS = r"""
import sys
import cudaload
obj = cudaload.Program(sys.argv[1]).compile(arch=%d)
assert obj.cached is None and obj.code.startswith(b"\x7fELF"), obj
""" % ARCH

# ``argv[2]``: "time", "imports" (run under -X importtime: the hit's lines follow the mark) or
# "files" (the cudaload files whose code runs during the hit).
HIT = r"""
import sys, time
from cudaload import Program
program = Program(sys.argv[1])
mode = sys.argv[2]
if mode == "imports":
    sys.stderr.write("-- the hit --\n")
    sys.stderr.flush()
files = set()
if mode == "files":
    sys.setprofile(lambda frame, event, arg: files.add(frame.f_code.co_filename)
                   if event == "call" else None)
start = time.perf_counter()
obj = program.compile(arch=%d)
took = time.perf_counter() - start
sys.setprofile(None)
assert obj.cached == "disk", obj
root = sys.argv[3]
print(took * 1e3, len([f for f in files if f.startswith(root)]))
""" % ARCH


def cpu_child(code: str, args: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """(CPU ms: user + sys of the child, wall ms) of one fresh process running ``code``."""
    with tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env, cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = (time.perf_counter() - began) * 1e3
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if proc.returncode:
            err.seek(0)
            raise SystemExit(err.read().decode(errors="replace")[-2000:])
    return (usage.ru_utime + usage.ru_stime) * 1e3, wall


def hit_child(mode: str, folder: str, env: dict, cwd: str) -> tuple[float, int, dict]:
    """(ms of the hit, cudaload files run, {module: own us} the hit imported) in one process."""
    flags = ["-X", "importtime"] if mode == "imports" else []
    proc = subprocess.run([sys.executable, *flags, "-c", HIT, HIT_SOURCE, mode,
                           os.path.join(folder, "cudaload")], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    ms, files = proc.stdout.split()
    imported = {}
    if mode == "imports":
        for line in proc.stderr.split("-- the hit --\n", 1)[1].splitlines():
            if line.startswith("import time:") and "cudaload" in line:
                own, _, name = line[len("import time:"):].split("|")
                imported[name.strip()] = int(own)
    return float(ms), int(files), imported


def _spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 4), "worst": round(max(values), 4),
            "best": round(min(values), 4)}


def setup(folder: str, cache: str, cwd: str) -> dict:
    """Compiles each kernel's variant 0 and the hit's source into ``cache``: its toolchain
    record and the disk hit's entry.  Returns what NVRTC was asked (setup's JSON)."""
    sources = [KERNELS[k] % 0 for k in KERNELS] + [HIT_SOURCE]
    proc = subprocess.run([sys.executable, "-c", SETUP, *sources], env=_env(folder, cache),
                          capture_output=True, text=True, timeout=300, cwd=cwd)
    if proc.returncode:
        raise SystemExit(f"{folder}: {proc.stderr[-2000:]}")
    found = json.loads(proc.stdout.splitlines()[-1])
    return {"nvrtc": found["nvrtc"], "options": dict(zip(KERNELS, found["options"]))}


def run(trees: dict, repeats: int, work: str) -> dict:
    """Every repetition: for each kernel and case, each tree and the reference in rotating order;
    then each tree's disk hit, in rotating order too."""
    recorded = {name: os.path.join(work, f"recorded-{n}") for n, name in enumerate(trees)}
    asked = {name: setup(folder, recorded[name], work) for name, folder in trees.items()}
    mine = asked[next(iter(trees))]
    rows: list[dict] = []
    hits: list[dict] = []
    for i in range(1, repeats + 1):
        row: dict = {}
        for kernel, text in KERNELS.items():
            source = text % i
            reference = (CTYPES, [source, mine["nvrtc"], *mine["options"][kernel]],
                         _env(ROOT, recorded[next(iter(trees))]))
            for case in ("miss_recorded", "miss_empty"):
                runs = {"nvrtc_ctypes": reference}
                for name, folder in trees.items():
                    cache = recorded[name]
                    if case == "miss_empty":
                        cache = os.path.join(work, f"empty-{i}-{kernel}-{len(runs)}")
                    runs[name] = (MISS, [source], _env(folder, cache))
                names = list(runs)
                shift = i % len(names)  # each one first, second, ... in turn
                row[(kernel, case)] = {n: cpu_child(*runs[n], work)
                                       for n in names[shift:] + names[:shift]}
                for name in trees:
                    if case == "miss_empty":
                        shutil.rmtree(runs[name][2]["CUDALOAD_CACHE_DIR"], ignore_errors=True)
        rows.append(row)
        names = list(trees)
        shift = i % len(names)
        hits.append({n: hit_child("time", trees[n], _env(trees[n], recorded[n]), work)[0]
                     for n in names[shift:] + names[:shift]})
    out: dict = {}
    for name, folder in trees.items():
        env = _env(folder, recorded[name])
        _, files, _ = hit_child("files", folder, env, work)
        imports = [hit_child("imports", folder, env, work)[2] for _ in range(5)]
        totals = [sum(i.values()) / 1e3 for i in imports]
        out[name] = {"disk_hit": {
            "ms": _spread([h[name] for h in hits]),
            "importtime_ms_of_cudaload_modules": _spread(totals),
            "cudaload_modules_imported": sorted(imports[0]),
            "cudaload_files_run": files}}
        for kernel in KERNELS:
            for case in ("miss_recorded", "miss_empty"):
                pairs = [r[(kernel, case)] for r in rows]
                figure = {
                    "cpu_ms": _spread([p[name][0] for p in pairs]),
                    "nvrtc_ctypes_cpu_ms": _spread([p["nvrtc_ctypes"][0] for p in pairs]),
                    "ratio_cpu": _spread([p[name][0] / p["nvrtc_ctypes"][0] for p in pairs]),
                    "wall_ms": _spread([p[name][1] for p in pairs]),
                    "nvrtc_ctypes_wall_ms": _spread([p["nvrtc_ctypes"][1] for p in pairs]),
                }
                if name != next(iter(trees)):
                    this = next(iter(trees))
                    figure["this_over_it_cpu"] = _spread([p[this][0] / p[name][0] for p in pairs])
                out[name].setdefault(case, {})[kernel] = figure
    out["nvrtc"], out["options"] = mine["nvrtc"], mine["options"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", action="append", default=[], metavar="REV_OR_DIR",
                    help="another cudaload tree, run beside this one in every repetition")
    ap.add_argument("--repeats", type=int, default=11, help="repetitions of each case")
    ap.add_argument("--out", help="also write the JSON document to this file")
    ap.add_argument("--copy", action="store_true",
                    help="read this tree's cudaload from a copy in the temporary folder, as the "
                         "--against trees are: every tree from one filesystem (a checkout on a "
                         "slow one costs each module's import more)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"cudaload": ROOT}
        if args.copy:
            trees["cudaload"] = os.path.join(tmp, "this")
            shutil.copytree(os.path.join(ROOT, "cudaload"), os.path.join(tmp, "this", "cudaload"),
                            ignore=shutil.ignore_patterns("__pycache__"))
        trees.update((name, tree(name, tmp)) for name in args.against)
        for folder in trees.values():  # as an installed wheel has it
            compileall.compile_dir(os.path.join(folder, "cudaload"), quiet=1)
        figures = run(trees, args.repeats, tmp)
    this = figures["cudaload"]
    out = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform(), "load_average": os.getloadavg()},
        "commit": commit(),
        "repeats": args.repeats, "arch": ARCH, "targets": TARGETS,
        "this_tree": "a copy in the temporary folder" if args.copy else ROOT,
        "met": {"disk_hit_ms": this["disk_hit"]["ms"]["median"] <= TARGETS["disk_hit_ms"],
                **{f"{case}.{kernel}": this[case][kernel]["ratio_cpu"]["median"] <= TARGETS[case]
                   for case in ("miss_recorded", "miss_empty") for kernel in KERNELS}},
        **figures,
    }
    text = json.dumps(out, indent=2) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
