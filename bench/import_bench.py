"""How much `import cudaload` and `cudaload.status()` cost, in fresh processes.

    python bench/import_bench.py                 # print a JSON summary
    python bench/import_bench.py --out bench/results/
    python bench/import_bench.py --python .venv/bin/python --runs 31

Import: the median wall time of `python -c "import cudaload"` minus that of `python -c pass`, each
run in fresh processes (interleaved, so drift hits both alike), next to the median of the
interpreter's own `-X importtime` figure for the `cudaload` package.  The target is checked on the
median of the back-to-back differences, which a loaded machine disturbs least; the two of a pair
swap order every time, and there are many pairs (`--pairs`, 101), because one start of an
interpreter that takes 60 ms varies by more than the 3 ms budget.  The same differences in the
children's CPU time (user + system) are reported beside: a process that waits for a core adds
wall time but no CPU time.

status(): only the call is timed, inside fresh processes, in three settings: no CUDA library at
all; no driver but NVRTC from the wheel (the NVRTC section imports cuda.pathfinder and compiles a
probe kernel); and the driver section alone with no driver.  Targets: import <= 3 ms over bare
Python; status() without a driver < 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPORT_TARGET_MS = 3.0
STATUS_TARGET_MS = 5.0
NOWHERE = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"}
NO_NVRTC = {"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}

_TIME_STATUS = """
import time, cudaload
t = time.perf_counter()
cudaload.status()
print((time.perf_counter() - t) * 1e3)
"""

_TIME_DRIVER_SECTION = """
import time
from cudaload import availability
report = availability._empty_report([])
t = time.perf_counter()
availability._probe_driver(report, report["problems"])
print((time.perf_counter() - t) * 1e3)
"""


def _env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # Installed packages have their bytecode compiled by pip; without it every run would recompile.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("CUDALOAD_LIBCUDA", "CUDALOAD_LIBNVRTC"):
        env.pop(key, None)
    env.update(extra or {})
    return env


def _wall_ms(python: str, code: str, env: dict) -> float:
    return _timed(python, code, env)[0]


def _timed(python: str, code: str, env: dict) -> tuple[float, float]:
    """(wall, CPU) milliseconds of one ``python -c code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([python, "-c", code], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1e3, cpu * 1e3


def _importtime_ms(python: str, env: dict) -> float:
    proc = subprocess.run([python, "-X", "importtime", "-c", "import cudaload"], env=env,
                          check=True, capture_output=True, text=True)
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == "cudaload":
            return int(parts[1]) / 1e3
    raise RuntimeError(f"no 'cudaload' line in -X importtime output:\n{proc.stderr}")


def _printed_ms(python: str, code: str, env: dict) -> float:
    proc = subprocess.run([python, "-c", code], env=env, check=True, capture_output=True, text=True)
    return float(proc.stdout.strip().splitlines()[-1])


def bench_import(python: str, pairs: int, runs: int) -> dict:
    env = _env()
    _wall_ms(python, "import cudaload", env)  # writes bytecode if missing
    bare, imported = [], []
    for i in range(pairs):
        if i % 2:  # whichever runs second of a pair may find the machine warmer
            imported.append(_timed(python, "import cudaload", env))
            bare.append(_timed(python, "pass", env))
        else:
            bare.append(_timed(python, "pass", env))
            imported.append(_timed(python, "import cudaload", env))
    importtime = [_importtime_ms(python, env) for _ in range(runs)]
    bare_ms = statistics.median(w for w, _c in bare)
    import_ms = statistics.median(w for w, _c in imported)
    # Each pair ran back to back, so the median of the differences shrugs off slow stretches.
    paired = statistics.median(i[0] - b[0] for i, b in zip(imported, bare))
    paired_cpu = statistics.median(i[1] - b[1] for i, b in zip(imported, bare))
    return {"runs": pairs, "bare_python_ms": round(bare_ms, 2),
            "python_import_cudaload_ms": round(import_ms, 2),
            "delta_ms": round(import_ms - bare_ms, 2),
            "delta_paired_median_ms": round(paired, 2),
            "delta_cpu_paired_median_ms": round(paired_cpu, 2),
            "importtime_cudaload_ms": round(statistics.median(importtime), 2),
            "target_ms": IMPORT_TARGET_MS, "meets_target": paired <= IMPORT_TARGET_MS}


def bench_status(python: str, runs: int) -> dict:
    settings = {
        "no_cuda_at_all": (_TIME_STATUS, {**NOWHERE, **NO_NVRTC}),
        "no_driver_nvrtc_probe_included": (_TIME_STATUS, NOWHERE),
        "no_driver_driver_section_alone": (_TIME_DRIVER_SECTION, NOWHERE),
    }
    libcuda = os.environ.get("CUDALOAD_TEST_LIBCUDA")
    if libcuda and os.path.exists(libcuda):
        settings["driver_535_no_gpu_driver_section_alone"] = (
            _TIME_DRIVER_SECTION, {"CUDALOAD_LIBCUDA": libcuda})
    out = {}
    for name, (code, extra) in settings.items():
        env = _env(extra)
        times = [_printed_ms(python, code, env) for _ in range(runs)]
        median = statistics.median(times)
        out[name] = {"median_ms": round(median, 2), "min_ms": round(min(times), 2),
                     "max_ms": round(max(times), 2)}
        if name.startswith("no_"):
            out[name]["meets_target"] = median < STATUS_TARGET_MS
    out["target_ms"] = STATUS_TARGET_MS
    out["note"] = ("with NVRTC present, status() also imports cuda.pathfinder, loads libnvrtc, "
                   "compiles a probe kernel (does libnvrtc-builtins load?) and asks pathfinder for "
                   "the CUDA header folders; the target is for the driver side")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="fresh processes per figure (>= 15)")
    parser.add_argument("--pairs", type=int, default=101,
                        help="pairs of fresh processes for the import figure (>= 15)")
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure")
    parser.add_argument("--out", help="also write the summary there (a folder or a .json file)")
    args = parser.parse_args(argv)
    if min(args.runs, args.pairs) < 15:
        parser.error("--runs and --pairs must be at least 15")
    import pycache

    bytecode = pycache.ensure()  # as an installed wheel has it
    summary = {
        "bytecode": bytecode,
        "benchmark": "import_bench",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True, check=True).stdout.strip(),
        "interpreter": args.python,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "import": bench_import(args.python, args.pairs, args.runs),
        "status": bench_status(args.python, args.runs),
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        path = args.out
        if not path.endswith(".json"):
            os.makedirs(path, exist_ok=True)
            path = os.path.join(path, f"import_bench-{time.strftime('%Y%m%d-%H%M%S')}.json")
        with open(path, "w") as f:
            f.write(text + "\n")
        print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
