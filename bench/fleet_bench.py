"""Many processes, many machines: the 64-kernel family compiled by every process of a fleet at once.

    python bench/fleet_bench.py [--out DIR] [--procs 2,4,8] [--kernels 64] [--repeat 3]
                                [--batches 6,24] [--no-sshfs] [--batches-only] [--against PATH]
                                [--quick-kernels] [--busy N] [--spawned] [--workers N]

The family is bench/family_header.py's (64 kernels on one 3,300-line header, as
bench/family_bench.py compiles them), for ``arch=90`` (no GPU needed).  Every figure comes from
fresh processes with an empty cache folder of their own:

  alone        one process compiles the family in turn: the wall time every fleet is measured
               against
  local N      N processes on one machine share one local cache folder, each compiling the whole
               family in the same order, started together (a barrier after their imports)
  sshfs N      N processes per "machine" on two sshfs mounts of one folder (tests/_sshfs.py: an
               OpenSSH server on the loopback; a lock taken through one mount is not seen through
               the other, O_EXCL is refused across them), 2N processes in all
  batch K      cudaload.compile_all() of the family's first K programs (one worker per CPU)
               against compile() of each in turn, each in a fresh process, timed from the call;
               with --against PATH, also the cudaload package under PATH (another checkout),
               each of its runs right after this tree's, as "batch K reference"; with
               --quick-kernels, K short kernels instead (QUICK: some 50-90 ms each on 2 cores),
               where the workers' start weighs most; each run's CPU time (user + system, the
               process and its workers) too: cpu_ratio is compile_all's over the serial run's
               (median and worst of the pairs), speedup_worst the smallest serial / compile_all.
               The two trees and the serial and compile_all runs alternate their order from
               one repetition to the next.  With --busy N, N busy processes (``yes``) run beside
               the batches; with --spawned, each batch process marks itself as one that has
               initialised the CUDA driver (``lifetime.mark_unforkable()``), so that its workers
               are not its forks, as in a process that has used the GPU; --workers N gives
               compile_all N processes (default: one per CPU): more than the CPUs, it shows
               what each worker's start costs in CPU time on a small machine
  --one batch HOW K KIND [spawned]   one such run, printed as JSON: HOW serial, compile_all or
               thread (the first program on a second thread beside the caller's), KIND family,
               quick or cub (CUB block reductions: seconds each)

Other processes may share the machine: ``effective_cpus_before``/``_after`` say how many CPUs as
many busy processes as it has cores got at once, before and after (bench/family_bench.py's).
For each fleet: compilations per key (NVRTC compilations of all processes over the 64 keys, from
the ``cudaload.compile`` DEBUG log), the wall time from the start until every process holds every
kernel, and that time over the lone process's.  The JSON of every run goes to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
READY_TIMEOUT = 300.0  # seconds for every process of a fleet to import and make its Programs


# ---- in a child process ---------------------------------------------------------------------------

# One short kernel per program (the batches of --quick-kernels): a compile of some 50-90 ms.
QUICK = """
extern "C" __global__ void k{i}(float *y, const float *x, float a, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] * {i}.0f;
}}
template <typename T> __global__ void t{i}(T *y, T a, int n)
{{ if (threadIdx.x < n) y[threadIdx.x] *= a; }}
template __global__ void t{i}<float>(float *, float, int);
template __global__ void t{i}<double>(double *, double, int);
"""


# One CUB block reduction per program (--kernels-of cub): seconds each, most of it CUB's headers.
CUB = """
#include <cub/block/block_reduce.cuh>
template <int N> __global__ void r{i}(const float *x, float *out) {{
    using R = cub::BlockReduce<float, 128>;
    __shared__ typename R::TempStorage tmp;
    float v = R(tmp).Sum(x[threadIdx.x] * N);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}}
template __global__ void r{i}<{i}>(const float *, float *);
"""


def _programs(count: int) -> list:
    sys.path.insert(0, BENCH)
    import family_bench

    return [p for _name, p in family_bench._programs("fleet", count, ())]


def child_fleet(barrier: str, name: str, count: str, log: str) -> dict:
    """One process of a fleet: its Programs made, then ready; from the barrier's time, compile
    each; when it held them all, and where each came from."""
    sys.path.insert(0, ROOT)
    from tests.scenarios import compile_log

    compile_log.install(log)
    progs = _programs(int(count))
    from cudaload.bindings import _loader

    _loader.nvrtc()  # loaded before the start, as in a process that compiled before
    open(os.path.join(barrier, f"ready-{name}"), "w").close()
    go = os.path.join(barrier, "go")
    while not os.path.exists(go):
        time.sleep(0.002)
    with open(go) as f:
        start = float(f.read() or 0)
    while time.time() < start:
        time.sleep(0.001)
    objs = [p.compile(arch=90) for p in progs]
    end = time.time()
    where: dict = {}
    for o in objs:
        where[str(o.cached)] = where.get(str(o.cached), 0) + 1
    return {"end": end, "start": start, "seconds": round(end - start, 3), "from": where}


def child_batch(how: str, count: str, kernels: str = "family", spawned: str = "",
                workers: str = "") -> dict:
    """``how``: "serial" (compile() of each), "compile_all", or "thread" (the first program on a
    second thread while this one compiles the others in turn), of the family's first ``count``
    (``kernels`` "quick" or "cub": ``count`` QUICK or CUB programs)."""
    import threading

    import cudaload

    text = {"quick": QUICK, "cub": CUB}.get(kernels)
    progs = [cudaload.Program(text.format(i=i)) for i in range(int(count))] \
        if text else _programs(int(count))
    from cudaload.bindings import _loader

    _loader.nvrtc()
    if spawned:  # as a process that has initialised the driver: its workers are not its forks
        from cudaload._base import lifetime

        lifetime.mark_unforkable()
    import resource

    def cpu() -> float:
        used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        return sum(u.ru_utime + u.ru_stime for u in used)

    c = cpu()
    t = time.perf_counter()
    if how == "serial":
        for p in progs:
            p.compile(arch=90)
    elif how == "thread":
        beside = threading.Thread(target=progs[0].compile, kwargs={"arch": 90})
        beside.start()
        for p in progs[1:]:
            p.compile(arch=90)
        beside.join()
    else:
        cudaload.compile_all(progs, arch=90, workers=int(workers) if workers else None)
    return {"seconds": round(time.perf_counter() - t, 3), "cpu_s": round(cpu() - c, 4)}


# ---- the driver -----------------------------------------------------------------------------------

def _env(cache: str, tree: str = ROOT) -> dict:
    env = dict(os.environ, CUDALOAD_CACHE_DIR=cache,
               PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("CUDALOAD_CACHE", "CUDALOAD_CACHE_READ_DIRS", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def _command(*args) -> list:
    return [sys.executable, os.path.abspath(__file__), "--one", *map(str, args)]


def fleet(folders: list, per_folder: int, count: int, work: str, timeout: float) -> dict:
    """``per_folder`` processes on each cache folder of ``folders`` at once; the fleet's figures."""
    barrier = tempfile.mkdtemp(prefix="barrier-", dir=work)
    log = os.path.join(work, f"compiles-{os.path.basename(barrier)}.log")
    procs = []
    for f, folder in enumerate(folders):
        for i in range(per_folder):
            procs.append(subprocess.Popen(
                _command("fleet", barrier, f"{f}-{i}", count, log), env=_env(folder),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work))
    end = time.monotonic() + READY_TIMEOUT
    while len([n for n in os.listdir(barrier) if n.startswith("ready-")]) < len(procs):
        if time.monotonic() > end or any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    with open(os.path.join(barrier, "go.tmp"), "w") as f:
        f.write(repr(time.time() + 0.2))
    os.rename(os.path.join(barrier, "go.tmp"), os.path.join(barrier, "go"))
    outs, errors = [], []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
            errors.append(f"timed out after {timeout:.0f} s")
            continue
        if p.returncode:
            errors.append(f"exit {p.returncode}: {stderr[-600:]}")
            continue
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    lines = open(log).read().split() if os.path.exists(log) else []
    keys = lines[1::2]
    start = min((o["start"] for o in outs), default=0.0)
    wall = max((o["end"] for o in outs), default=0.0) - start
    where: dict = {}
    for o in outs:
        for k, v in o["from"].items():
            where[k] = where.get(k, 0) + v
    return {"processes": len(procs), "finished": len(outs), "errors": errors,
            "compilations": len(keys), "keys": len(set(keys)),
            "per_key": round(len(keys) / count, 3), "wall_s": round(wall, 3),
            "slowest_process_s": max((o["seconds"] for o in outs), default=None),
            "fastest_process_s": min((o["seconds"] for o in outs), default=None),
            "from": where}


def _batch(how: str, count: int, work: str, timeout: float, tree: str = ROOT,
           kernels: str = "family", spawned: bool = False, workers: int | None = None) -> dict:
    """One batch run in a fresh process: {"wall_s", "cpu_s"}."""
    cache = tempfile.mkdtemp(prefix=f"batch-{how}-", dir=work)
    proc = subprocess.run(_command("batch", how, count, kernels, "spawned" if spawned else "",
                                   workers or ""), env=_env(cache, tree), capture_output=True,
                          text=True, timeout=timeout, cwd=work)
    if proc.returncode:
        raise RuntimeError(f"batch {how} {count}: {proc.stderr[-800:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall_s": got["seconds"], "cpu_s": got.get("cpu_s")}


def batches(args, rows: dict, work: str) -> None:
    """The batch runs into ``rows``: per batch size and repetition this tree's and the
    reference's, serial and compile_all, each pair's order turned at every repetition."""
    trees = [("", ROOT)] + ([(" reference", args.against)] if args.against else [])
    kernels = "quick" if args.quick_kernels else "family"
    for k in args.batches:
        for r in range(args.repeat):
            for name, tree in trees if r % 2 == 0 else trees[::-1]:
                for how in ("serial", "compile_all") if r % 2 == 0 else ("compile_all", "serial"):
                    rows.setdefault(f"batch {k}{name} {how}", []).append(
                        _batch(how, k, work, args.timeout, tree, kernels, args.spawned,
                               args.workers))


def run(args) -> dict:
    sys.path.insert(0, ROOT)
    from tests import _sshfs
    from cudaload.compile.parallel.batch import cores

    sys.path.insert(0, BENCH)
    from family_bench import effective_cpus

    work = tempfile.mkdtemp(prefix="cudaload-fleet-")
    out: dict = {"benchmark": "fleet_bench", "python": sys.version.split()[0], "cores": cores(),
                 "effective_cpus_before": effective_cpus(cores()),
                 "kernels": args.kernels, "repeat": args.repeat, "rows": {},
                 "batch_kernels": "quick" if args.quick_kernels else "family",
                 "busy": args.busy, "spawned": args.spawned, "workers": args.workers}
    rows = out["rows"]

    def fresh(base: str, name: str) -> str:
        path = os.path.join(base, name)
        os.makedirs(path)
        return path

    try:
        for r in range(0 if args.batches_only else args.repeat):
            rows.setdefault("alone", []).append(
                fleet([fresh(work, f"alone-{r}")], 1, args.kernels, work, args.timeout))
            for n in args.procs:
                rows.setdefault(f"local {n}", []).append(
                    fleet([fresh(work, f"local-{n}-{r}")], n, args.kernels, work, args.timeout))
        if not (args.no_sshfs or args.batches_only):
            try:
                with _sshfs.two_mounts(os.path.join(work, "net")) as (a, b, _backing):
                    for r in range(args.repeat):
                        for n in args.procs:
                            name = f"sshfs-{n}-{r}"
                            rows.setdefault(f"sshfs {n}", []).append(fleet(
                                [os.path.join(a, name), os.path.join(b, name)], n,
                                args.kernels, work, args.timeout))
            except _sshfs.Unavailable as exc:
                out["sshfs_unavailable"] = str(exc)
        busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.busy)]
        try:
            batches(args, rows, work)
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["effective_cpus_after"] = effective_cpus(out["cores"])
    out["summary"] = summary(rows, args)
    return out


def _median(runs: list, key: str) -> float:
    return statistics.median(r[key] for r in runs)


def summary(rows: dict, args) -> dict:
    alone = _median(rows["alone"], "wall_s") if "alone" in rows else None
    out = {"alone_s": alone}
    for name, runs in rows.items():
        if name.startswith(("local", "sshfs")):
            wall = _median(runs, "wall_s")
            out[name] = {"processes": runs[0]["processes"],
                         "per_key": [r["per_key"] for r in runs], "wall_s": wall,
                         "over_alone": round(wall / alone, 2),
                         "errors": sum(len(r["errors"]) for r in runs)}
    for k in args.batches:
        for name in [""] + ([" reference"] if args.against else []):
            serial = _median(rows[f"batch {k}{name} serial"], "wall_s")
            parallel = _median(rows[f"batch {k}{name} compile_all"], "wall_s")
            speedups = [s["wall_s"] / p["wall_s"] for s, p in
                        zip(rows[f"batch {k}{name} serial"], rows[f"batch {k}{name} compile_all"])]
            out[f"batch {k}{name}"] = {"serial_s": serial, "compile_all_s": parallel,
                                       "speedup": round(serial / parallel, 2),
                                       "speedup_median": round(statistics.median(speedups), 2),
                                       "speedup_worst": round(min(speedups), 2),
                                       "speedup_each_run": [round(x, 2) for x in speedups],
                                       **_cpu_ratios(rows[f"batch {k}{name} serial"],
                                                     rows[f"batch {k}{name} compile_all"])}
    return out


def _cpu_ratios(serial: list, parallel: list) -> dict:
    """compile_all's CPU time over the serial run's, pair by pair: median, worst, each."""
    ratios = [p["cpu_s"] / s["cpu_s"] for s, p in zip(serial, parallel)
              if s.get("cpu_s") and p.get("cpu_s") is not None]
    if not ratios:
        return {}
    return {"cpu_ratio": round(statistics.median(ratios), 2),
            "cpu_ratio_worst": round(max(ratios), 2),
            "cpu_ratio_each_run": [round(x, 2) for x in ratios]}


def table(result: dict) -> str:
    s = result["summary"]
    lines = [f"| fleet | processes | compilations per key | wall until all hold all "
             f"{result['kernels']} | over one process alone |", "|---|---|---|---|---|"]
    if s["alone_s"] is not None:
        lines.append(f"| one process alone | 1 | 1.0 | {s['alone_s']:.2f} s | 1.00x |")
    for name, row in s.items():
        if name.startswith(("local", "sshfs")):
            place = "one local folder" if name.startswith("local") else "two sshfs mounts"
            per_key = ", ".join(f"{v:.2f}" for v in row["per_key"])
            lines.append(f"| {place}, {name.split()[1]} per machine | {row['processes']} | "
                         f"{per_key} | {row['wall_s']:.2f} s | {row['over_alone']:.2f}x |")
    lines += ["", f"CPUs: {result['cores']}; busy processes got {result['effective_cpus_before']}"
              f" and {result['effective_cpus_after']} of them before and after.",
              f"Busy processes beside the batches: {result.get('busy', 0)}; workers as in a "
              f"process that may not fork: {result.get('spawned', False)}.",
              "", "| batch | serial | compile_all | speedup (median of pairs, worst; each run) "
              "| CPU time / serial (median, worst) |", "|---|---|---|---|---|"]
    for name, row in s.items():
        if name.startswith("batch"):
            each = ", ".join(f"{x:.2f}" for x in row["speedup_each_run"])
            label = f"{name.split()[1]} programs" + (", reference" if "reference" in name else "")
            cpu = f"{row['cpu_ratio']:.2f}, {row['cpu_ratio_worst']:.2f}" if "cpu_ratio" in row \
                else "-"
            lines.append(f"| {label} | {row['serial_s']:.2f} s | {row['compile_all_s']:.2f} s"
                         f" | {row['speedup_median']:.2f}x, {row['speedup_worst']:.2f}x; {each}"
                         f" | {cpu} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write fleet_bench.json into this folder")
    ap.add_argument("--procs", default="2,4,8", help="processes per machine (default 2,4,8)")
    ap.add_argument("--kernels", type=int, default=64, help="how many of the family (default 64)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each fleet (default 3)")
    ap.add_argument("--batches", default="6,24", help="compile_all batch sizes (default 6,24)")
    ap.add_argument("--no-sshfs", action="store_true", help="skip the two-mount fleets")
    ap.add_argument("--batches-only", action="store_true", help="no fleet, the batches alone")
    ap.add_argument("--against", help="also time the batches with the cudaload under PATH")
    ap.add_argument("--quick-kernels", action="store_true",
                    help="batches of short kernels (QUICK) instead of the family's")
    ap.add_argument("--busy", type=int, default=0,
                    help="busy processes (yes) beside the batches (default 0)")
    ap.add_argument("--workers", type=int,
                    help="compile_all's processes in the batches (default: one per CPU)")
    ap.add_argument("--spawned", action="store_true",
                    help="batch processes that may not fork, as one that has used the GPU")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per process")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        what, rest = args.one[0], args.one[1:]
        print(json.dumps(child_fleet(*rest) if what == "fleet" else child_batch(*rest)))
        return 0
    args.procs = [int(n) for n in args.procs.split(",") if n]
    args.batches = [int(n) for n in args.batches.split(",") if n]
    import pycache

    bytecode = pycache.ensure()  # as an installed wheel has it
    if args.against:  # and the other tree's, or its first run would compile it
        import compileall

        args.against = os.path.abspath(args.against)  # its processes run in a folder of their own
        compileall.compile_dir(os.path.join(args.against, "cudaload"), quiet=1)
    result = run(args)
    result["bytecode"] = bytecode
    print(table(result))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "fleet_bench.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
