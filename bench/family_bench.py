"""Kernel-family benchmark: 64 elementwise kernels on one 3,300-line header, compiled and loaded.

    python bench/family_bench.py [--out FILE] [--workers N] [--kernels 64] [--no-pch] [--no-lto]
                                 [--no-linked] [--quick]

The family (bench/family_header.py): a common header of type traits, math wrappers, operator
functors, casts, vector loads, shapes and reductions over every dtype, written for this benchmark
in the manner of MXNet's runtime-compiled operators, and one ``extern "C"`` kernel per operator x
dtype on it, given as ``Program(src, headers={"family.cuh": HEADER})``.  Every figure comes from
a fresh process with its own cache folder; in one run:

  serial_cold_s      compile() of each kernel in turn, empty cache folder (NVRTC's loading and
                     first-compile cost included, as a user meets them)
  parallel_cold_s    cudaload.compile_all() of the same programs on --workers processes (default:
                     one per CPU), empty cache folder, the pool's start included; speedup = serial /
                     parallel (targets: >= 12x on a 16-core host, >= 1.6x on 2 cores), and
                     cpu_ratio: its CPU time (user + system, the workers' included) over the
                     serial run's (target <= 1.15); on a host with a GPU the process has
                     initialised the driver, so its workers are forks of a template
                     (compile/parallel/_template.py), as on any process that may not fork;
                     interpreters_started counts the fresh interpreters its workers took (1
                     for a template, 0 where they are forks of the process itself)
  warm_ms            a fresh process on the folder the serial run filled, after ``import cudaload``:
                     the 64 Programs made and found on disk (compile_all: no worker), then, on a
                     GPU, each loaded and its Kernel got (target <= 60 ms); the context's creation
                     is timed apart
  gpu_mib            on a GPU: cuMemGetInfo's used memory after all 64 are loaded and launched once,
                     minus that of the bare context made first (target <= 2 MiB)
  pch                the serial and parallel runs again with NVRTC's automatic precompiled header
                     (``options=("-pch",)``, NVRTC 12.8+), and whether the code is the same bytes
  lto                the family as ``Program(..., lto=True)``: compile_all cold (lto_parallel_cold),
                     then warm_ms and gpu_mib in a fresh process on that folder (lto_warm).  NVRTC
                     emits the header's static constexpr members into every module; linking by
                     nvJitLink removes them (the GPU memory target is met with this build)
  linked             the family as LTO IR (``compile(output="ltoir")``, by compile_all) linked by
                     one ``cudaload.Linker(..., lto=True, options=("-optimize-unused-variables",))``
                     into ONE module: compile_all and the link cold (linked_cold, link_s apart),
                     then warm_ms, the module's load and gpu_mib in a fresh process on that folder
                     (linked_warm): what one linked module costs against 64 separate ones

Prints a short table, and the JSON with --out.  Needs NVRTC; the GPU rows need a GPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
MIB = 2 ** 20


# ---- in a child process ---------------------------------------------------------------------------

# The options of the link of the whole family into one module: the header's constants, emitted
# into every program's IR, are removed as lto=True removes them from each module.
LINK_OPTIONS = ("-optimize-unused-variables",)


def _linked(objs, arch):
    """The family's LTO IR ``objs`` linked into one module (found in the cache when linked
    before)."""
    import cudaload

    return cudaload.Linker(*objs, arch=arch, lto=True, options=LINK_OPTIONS).link()


def _programs(tag: str, count: int, options: tuple, lto: bool = False):
    sys.path.insert(0, BENCH)
    import cudaload
    import family_header

    header = family_header.header()
    return [(name, cudaload.Program(src, name=f"{name}.cu", headers={"family.cuh": header},
                                    options=options, lto=lto))
            for name, src in family_header.kernels(tag)[:count]]


def _digest(objs) -> str:
    return hashlib.sha256(b"".join(o.code for o in objs)).hexdigest()[:16]


def child_compile(how: str, tag: str, count: str, workers: str, pch: str, lto: str = "0") -> dict:
    """Cold compiles of the family: ``how`` is "serial" or "parallel"."""
    import cudaload
    from cudaload.compile.parallel import batch as parallel

    arch = _arch()
    progs = _programs(tag, int(count), ("-pch",) if pch == "1" else (), lto == "1")
    # Interpreters started (the workers: one template whose forks they are, else one each)
    started, real_spawn = [], os.posix_spawn

    def spawn(*args, **kw):
        started.append(args[0])
        return real_spawn(*args, **kw)

    os.posix_spawn = spawn
    t = time.perf_counter()
    link_s = module_kib = None
    if how == "linked":  # LTO IR of each program, then one link of them all
        irs = cudaload.compile_all([p for _n, p in progs], arch=arch, output="ltoir",
                                   workers=int(workers) or None)
        t1 = time.perf_counter()
        objs = [_linked(irs, arch)]
        link_s = round(time.perf_counter() - t1, 3)
        module_kib = round(len(objs[0].code) / 1024, 1)
        each: list = []
    elif how == "serial":
        objs, each = [], []
        for _name, prog in progs:
            t1 = time.perf_counter()
            objs.append(prog.compile(arch=arch))
            each.append((time.perf_counter() - t1) * 1e3)
    else:
        objs = cudaload.compile_all([p for _n, p in progs], arch=arch,
                                    workers=int(workers) or None)
        each = []
    took = time.perf_counter() - t
    os.posix_spawn = real_spawn
    import resource

    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return {"seconds": round(took, 3), "kernels": len(objs), "code": _digest(objs),
            "cpu_s": round(sum(u.ru_utime + u.ru_stime for u in used), 2),
            "first_ms": round(each[0], 1) if each else None,
            "median_ms": round(sorted(each)[len(each) // 2], 1) if each else None,
            "cached": sorted({str(o.cached) for o in objs}),
            "workers": (int(workers) or parallel.cores()) if how != "serial" else 1,
            "interpreters_started": len(started),
            **({"link_s": link_s, "module_kib": module_kib} if how == "linked" else {})}


def child_warm(tag: str, count: str, lto: str = "0") -> dict:
    """A fresh process on a filled cache folder: import, (context), lookups, loads, GPU memory."""
    t0 = time.perf_counter()
    import cudaload

    out = {"import_ms": round((time.perf_counter() - t0) * 1e3, 2)}
    gpu = cudaload.is_available()
    if gpu:
        t = time.perf_counter()
        bufs = [cudaload.alloc(2048) for _ in range(3)]
        cudaload.Device(0).synchronize()
        free, total = cudaload.Device(0).mem_info()
        context_used = total - free
        out["context_ms"] = round((time.perf_counter() - t) * 1e3, 2)
    t = time.perf_counter()
    progs = _programs(tag, int(count), (), lto == "1")
    if lto == "linked":  # the programs' IR and the one linked module, all found on disk
        irs = cudaload.compile_all([p for _n, p in progs], arch=_arch(), output="ltoir")
        objs = [_linked(irs, _arch())]
    else:
        objs = cudaload.compile_all([p for _n, p in progs], arch=_arch())
    out["programs_and_lookups_ms"] = round((time.perf_counter() - t) * 1e3, 2)
    out["cached"] = sorted({str(o.cached) for o in objs})
    out["code"] = _digest(objs)
    out["code_kib"] = round(sum(len(o.code) for o in objs) / len(objs) / 1024, 1)
    if not gpu:
        out["warm_ms"] = out["programs_and_lookups_ms"]
        out["gpu"] = False
        return out
    t = time.perf_counter()
    modules = [objs[0]] * len(progs) if lto == "linked" else objs
    kernels = [obj.load().get_kernel(name) for (name, _p), obj in zip(progs, modules)]
    out["load_ms"] = round((time.perf_counter() - t) * 1e3, 2)
    out["warm_ms"] = round(out["programs_and_lookups_ms"] + out["load_ms"], 2)
    for (name, _p), k in zip(progs, kernels):
        args = bufs[:2] if name.startswith(tuple(UNARY_NAMES)) and "backward" not in name \
            else bufs
        k(1, 256, (*args, 256))
    cudaload.Device(0).synchronize()
    free, total = cudaload.Device(0).mem_info()
    out.update(gpu=True, gpu_mib=round((total - free - context_used) / MIB, 2),
               context_mib=round(context_used / MIB, 1))
    return out


def _arch() -> int:
    """This GPU's arch, or without one 90 (an H200's)."""
    import cudaload

    if cudaload.is_available():
        major, minor = cudaload.Device(0).compute_capability
        return major * 10 + minor
    return 90


UNARY_NAMES = ("relu_", "sigmoid_", "gelu_", "silu_", "tanh_", "exp_", "log_", "rsqrt_", "erf_",
               "softrelu_")


# ---- the driver -----------------------------------------------------------------------------------

def _child(args: list, cache: str, timeout: float) -> dict:
    env = dict(os.environ, CUDALOAD_CACHE_DIR=cache,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CUDALOAD_CACHE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package runs
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", *args],
                              env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=cache)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode:
        return {"error": f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-800:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(args) -> dict:
    sys.path.insert(0, BENCH)
    import family_header

    tmp = tempfile.mkdtemp(prefix="cudaload-family-")
    tag = f"family bench {time.time_ns()}"
    count = str(args.kernels)
    workers = str(args.workers or 0)
    header = family_header.header()
    cores = _cores()
    out = {"benchmark": "family_bench", "python": sys.version.split()[0],
           "cores": cores, "effective_cpus_before": effective_cpus(cores),
           "header_lines": header.count("\n"), "header_chars": len(header),
           "kernels": args.kernels, "rows": {}}
    rows = out["rows"]

    def folder(name):
        path = os.path.join(tmp, name)
        os.makedirs(path, exist_ok=True)
        return path

    timeout = args.timeout
    rows["serial_cold"] = _child(["compile", "serial", tag, count, workers, "0"],
                                 folder("serial"), timeout)
    rows["parallel_cold"] = _child(["compile", "parallel", tag, count, workers, "0"],
                                   folder("parallel"), timeout)
    rows["warm"] = _child(["warm", tag, count], folder("serial"), timeout)
    if not args.no_pch:
        rows["pch_serial_cold"] = _child(["compile", "serial", tag, count, workers, "1"],
                                         folder("pch-serial"), timeout)
        rows["pch_parallel_cold"] = _child(["compile", "parallel", tag, count, workers, "1"],
                                           folder("pch-parallel"), timeout)
    if not args.no_lto:
        rows["lto_parallel_cold"] = _child(["compile", "parallel", tag, count, workers, "0", "1"],
                                           folder("lto"), timeout)
        rows["lto_warm"] = _child(["warm", tag, count, "1"], folder("lto"), timeout)
    if not args.no_linked:
        rows["linked_cold"] = _child(["compile", "linked", tag, count, workers, "0"],
                                     folder("linked"), timeout)
        rows["linked_warm"] = _child(["warm", tag, count, "linked"], folder("linked"), timeout)
    out["effective_cpus_after"] = effective_cpus(cores)
    out["summary"] = summary(rows)
    out["nvrtc"] = _nvrtc_version()
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def _spin(seconds: str) -> None:
    """Burn CPU for ``seconds`` of wall time; print the CPU time it got."""
    t, c = time.perf_counter(), time.process_time()
    while time.perf_counter() - t < float(seconds):
        sum(range(10000))
    print(json.dumps({"cpu": time.process_time() - c}))


def effective_cpus(n: int, seconds: float = 1.0) -> float:
    """How many CPUs ``n`` busy processes get at once on this machine now (others share it)."""
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--one", "spin",
                               str(seconds)], stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    got = [json.loads(p.communicate()[0].strip().splitlines()[-1])["cpu"] for p in procs]
    return round(sum(got) / seconds, 2)


def _cores() -> int:
    sys.path.insert(0, ROOT)
    from cudaload.compile.parallel.batch import cores

    return cores()


def _nvrtc_version() -> str | None:
    try:
        from cudaload.bindings import nvrtc

        return ".".join(map(str, nvrtc.version()))
    except Exception:  # reported as unknown; the rows say what failed
        return None


def summary(rows: dict) -> dict:
    """Speedups and targets from the rows."""
    def sec(name):
        return (rows.get(name) or {}).get("seconds")

    s = {}
    serial, par = sec("serial_cold"), sec("parallel_cold")
    if serial and par:
        s["speedup"] = round(serial / par, 2)
        cores = (rows["parallel_cold"] or {}).get("workers") or 1
        s["speedup_target"] = 12.0 if cores >= 16 else 1.6 if cores >= 2 else None
        s["same_code"] = rows["serial_cold"].get("code") == rows["parallel_cold"].get("code")
        # CPU time of the parallel run (workers included) over the serial run's: what starting
        # the workers and each one's first compile cost
        if rows["serial_cold"].get("cpu_s") and rows["parallel_cold"].get("cpu_s"):
            s["cpu_ratio"] = round(rows["parallel_cold"]["cpu_s"] / rows["serial_cold"]["cpu_s"], 2)
            s["cpu_ratio_target"] = 1.15
    warm = rows.get("warm") or {}
    if "warm_ms" in warm:
        s["warm_ms"] = warm["warm_ms"]
        s["warm_target_ms"] = 60.0
        s["warm_reaches"] = "Kernel" if warm.get("gpu") else "ObjectCode (no GPU)"
    if "gpu_mib" in warm:
        s["gpu_mib"], s["gpu_target_mib"] = warm["gpu_mib"], 2.0
    lto, lto_warm = rows.get("lto_parallel_cold") or {}, rows.get("lto_warm") or {}
    if lto.get("seconds") and par:
        s["lto_parallel_s"] = lto["seconds"]
        s["lto_parallel_over_plain"] = round(lto["seconds"] / par, 2)
    for key in ("warm_ms", "gpu_mib", "code_kib"):
        if key in lto_warm:
            s[f"lto_{key}"] = lto_warm[key]
    linked, linked_warm = rows.get("linked_cold") or {}, rows.get("linked_warm") or {}
    if linked.get("seconds"):
        s["linked_cold_s"], s["linked_link_s"] = linked["seconds"], linked.get("link_s")
        s["linked_module_kib"] = linked.get("module_kib")
    for key in ("warm_ms", "gpu_mib", "load_ms"):
        if key in linked_warm:
            s[f"linked_{key}"] = linked_warm[key]
    pch_serial, pch_par = sec("pch_serial_cold"), sec("pch_parallel_cold")
    if pch_serial and serial:
        s["pch_serial_speedup"] = round(serial / pch_serial, 2)
        s["pch_same_code"] = rows["pch_serial_cold"].get("code") == rows["serial_cold"].get("code")
    if pch_par and par:
        s["pch_parallel_speedup"] = round(par / pch_par, 2)
        s["pch_parallel_vs_serial"] = round(serial / pch_par, 2) if serial else None
    return s


def table(result: dict) -> str:
    rows, s = result["rows"], result["summary"]
    lines = [f"family: {result['kernels']} kernels on a {result['header_lines']}-line header, "
             f"{result['cores']} CPUs (busy processes got {result['effective_cpus_before']} and "
             f"{result['effective_cpus_after']} of them before and after), NVRTC "
             f"{result.get('nvrtc')}"]

    def row(label, value, target=""):
        lines.append(f"  {label:<44} {value:>12}  {target}")

    for name, label in (("serial_cold", "serial cold compile"),
                        ("parallel_cold", "compile_all cold"),
                        ("pch_serial_cold", "serial cold, -pch"),
                        ("pch_parallel_cold", "compile_all cold, -pch")):
        r = rows.get(name)
        if r is None:
            continue
        value = f"{r['seconds']:.2f} s" if "seconds" in r else r.get("error", "?")[:60]
        extra = f"({r['workers']} workers)" if name.startswith(("parallel", "pch_par")) and \
            "workers" in r else ""
        row(label, value, extra)
    if "speedup" in s:
        row("compile_all speedup", f"{s['speedup']:.2f}x",
            f"target >= {s['speedup_target']}x, same code: {s['same_code']}")
    if "cpu_ratio" in s:
        row("compile_all CPU time / serial CPU time", f"{s['cpu_ratio']:.2f}",
            f"target <= {s['cpu_ratio_target']}")
    warm = rows.get("warm", {})
    if "warm_ms" in warm:
        row(f"warm, fresh process, to {s['warm_reaches']}", f"{warm['warm_ms']:.1f} ms",
            f"target <= 60 ms (import {warm['import_ms']} ms apart)")
    elif "error" in warm:
        row("warm, fresh process", warm["error"][:60])
    if "gpu_mib" in warm:
        row("GPU memory over a bare context", f"{warm['gpu_mib']:.2f} MiB", "target <= 2 MiB")
    def cold(label, seconds, run, note):
        """The row of a cold run: its seconds (summary key ``seconds``) and ``note()``, or the
        error of ``run``."""
        if seconds in s:
            row(label, f"{s[seconds]:.2f} s", note())
        elif "error" in rows.get(run, {}):
            row(label, rows[run]["error"][:60])

    cold("lto=True: compile_all cold", "lto_parallel_s", "lto_parallel_cold",
         lambda: f"({s['lto_parallel_over_plain']}x the plain compile_all)")
    if "lto_warm_ms" in s:
        row("lto=True: warm, fresh process", f"{s['lto_warm_ms']:.1f} ms", "target <= 60 ms")
    if "lto_gpu_mib" in s:
        row("lto=True: GPU memory over a bare context", f"{s['lto_gpu_mib']:.2f} MiB",
            f"target <= 2 MiB ({s.get('lto_code_kib')} KiB a module, plain "
            f"{warm.get('code_kib')} KiB)")
    cold("one linked module: compile_all + link cold", "linked_cold_s", "linked_cold",
         lambda: f"(the link {s['linked_link_s']} s; {s['linked_module_kib']} KiB in all)")
    if "linked_warm_ms" in s:
        row("one linked module: warm, fresh process", f"{s['linked_warm_ms']:.1f} ms",
            f"(its load {s['linked_load_ms']} ms; 64 modules' {warm.get('load_ms')} ms)"
            if "linked_load_ms" in s else "")
    if "linked_gpu_mib" in s:
        row("one linked module: GPU memory over a bare context",
            f"{s['linked_gpu_mib']:.2f} MiB", f"(64 modules: {warm.get('gpu_mib')} MiB)")
    if "pch_serial_speedup" in s:
        row("-pch: serial speedup", f"{s['pch_serial_speedup']:.2f}x",
            f"same code: {s['pch_same_code']}")
    if "pch_parallel_speedup" in s:
        row("-pch: compile_all speedup", f"{s['pch_parallel_speedup']:.2f}x",
            f"({s['pch_parallel_vs_serial']}x the serial run without it)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the JSON here")
    ap.add_argument("--workers", type=int, help="compile_all's processes (default: one per CPU)")
    ap.add_argument("--kernels", type=int, default=64, help="how many of the family (default 64)")
    ap.add_argument("--no-pch", action="store_true", help="skip the -pch runs")
    ap.add_argument("--no-lto", action="store_true", help="skip the lto=True runs")
    ap.add_argument("--no-linked", action="store_true",
                    help="skip the runs of the family linked into one module")
    ap.add_argument("--quick", action="store_true", help="16 kernels, no -pch runs")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per process")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        what, rest = args.one[0], args.one[1:]
        if what == "spin":
            _spin(*rest)
            return 0
        print(json.dumps(child_compile(*rest) if what == "compile" else child_warm(*rest)))
        return 0
    if args.quick:
        args.kernels, args.no_pch = min(args.kernels, 16), True
    import pycache

    bytecode = pycache.ensure()  # as an installed wheel has it
    result = run(args)
    result["bytecode"] = bytecode
    print(table(result))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
