"""The memory story, end to end: builds, on-demand compile times, and the GPU measurements.

Every measurement is ``probe.py`` in a fresh process.  ``run()`` returns a JSON-ready dict:
``builds`` (the ahead-of-time libraries: kernels, sizes, build time and machine), ``compile``
(cudaload compiling each workload with an empty and with a warm disk cache; no GPU needed) and
``gpu`` (memory and time to first result per approach x workload x loading mode, or why skipped).
"""

from __future__ import annotations

import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build  # noqa: E402
import ops  # noqa: E402

PROBE = os.path.join(HERE, "probe.py")
MODES = ("EAGER", "LAZY")
PROBE_TIMEOUT = 180


def probe(args: list[str], env: dict | None = None, timeout: int = PROBE_TIMEOUT) -> dict:
    """Run probe.py in a fresh process; its JSON, with ``wall_ms`` (process start to exit) added,
    or ``{"error": ...}``."""
    full_env = {**os.environ, **(env or {})}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, PROBE, *args], capture_output=True, text=True,
                              env=full_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "args": args}
    wall = (time.perf_counter() - t0) * 1e3
    if proc.returncode:
        return {"error": (proc.stderr or proc.stdout).strip()[-1500:], "args": args}
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"no JSON from probe: {proc.stdout[-500:]!r}", "args": args}
    out["wall_ms"] = round(wall, 3)
    return out


def builds(log, build_large: bool) -> dict:
    """Manifests of the ahead-of-time libraries, building what is missing where nvcc exists."""
    out = {}
    for lib in ops.LIBRARIES:
        manifest = build.load_manifest(lib)
        if manifest is None and build.find_nvcc() and (lib == "small" or build_large):
            try:
                manifest = build.build(lib, log=log)
            except (RuntimeError, OSError) as exc:
                out[lib] = {"available": False, "reason": str(exc)[-1000:]}
                continue
        if manifest is None:
            why = ("nvcc not found" if not build.find_nvcc()
                   else "not built (pass --build-large, or run bench/memory_story/build.py)")
            out[lib] = {"available": False, "reason": f"no prebuilt library under "
                                                      f"{build.library_dir(lib)}; {why}"}
            continue
        out[lib] = {"available": True, **{k: v for k, v in manifest.items() if k != "units"},
                    "units": len(manifest["units"]), "path": build.library_dir(lib)}
        try:
            out[lib]["elf_bytes"] = build.elf_bytes(build.fatbins(lib))
        except (OSError, ValueError, struct.error) as exc:
            out[lib]["elf_bytes_error"] = str(exc)
    return out


def _median(values):
    values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return round(statistics.median(values), 3) if values else None


def summarize(runs: list[dict]) -> dict:
    """Medians of the numeric fields of repeated runs; the first run's other fields."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"error": runs[0].get("error") if runs else "no runs", "reps": 0}
    out = {k: v for k, v in good[0].items() if not isinstance(v, (int, float)) or isinstance(v, bool)}
    for key in good[0]:
        if isinstance(good[0][key], (int, float)) and not isinstance(good[0][key], bool):
            out[key] = _median([r.get(key) for r in good])
    smi = [r.get("smi") or {} for r in good]
    out["smi"] = {k: _median([s.get(k) for s in smi]) for k in ("process_mib", "gpu_mib")}
    out["smi"]["matched_by"] = smi[0].get("process_matched_by", "pid" if smi[0].get("process_mib") else None)
    out["reps"] = len(good)
    out["result_ok"] = all(r.get("result_ok") for r in good)
    if len(good) < len(runs):
        out["failed_reps"] = [r["error"] for r in runs if "error" in r][:2]
    return out


def compile_times(reps: int, arch: str, log) -> dict:
    """cudaload compiling each workload: empty cache, then a warm disk cache (fresh processes)."""
    out = {}
    for name in ops.WORKLOADS:
        cold, warm = [], []
        for _ in range(reps):
            with tempfile.TemporaryDirectory(prefix="cudaload-bench-cache-") as cache:
                env = {"CUDALOAD_CACHE_DIR": cache}
                args = ["--approach", "ondemand", "--workload", name, "--prepare", "--arch", arch]
                cold.append(probe(args, env))
                warm.append(probe(args, env))
        out[name] = {"cold": summarize(cold), "warm_disk": summarize(warm),
                     "kernels": len(ops.WORKLOADS[name]), "arch": arch}
        log(f"  compile {name}: empty cache {out[name]['cold'].get('compile_ms')} ms, "
            f"warm disk cache {out[name]['warm_disk'].get('compile_ms')} ms "
            f"(+ {out[name]['warm_disk'].get('program_ms')} ms import and Program())")
    return out


def gpu_runs(reps: int, libraries: list[str], log) -> dict:
    """Memory and time to first result per approach x workload x loading mode."""
    configs = [("bare", None, None, "zeros")]
    for lib in libraries:
        configs += [("aot", lib, None, w) for w in ops.WORKLOADS]
    configs += [("ondemand", None, c, w) for c in ("empty", "warm") for w in ops.WORKLOADS]
    rows = []
    idle = _smi_gpu_mib()
    for mode in MODES:
        for approach, lib, cache, workload in configs:
            runs = []
            for _ in range(reps):
                with tempfile.TemporaryDirectory(prefix="cudaload-bench-cache-") as tmp:
                    env = {"CUDA_MODULE_LOADING": mode, "CUDALOAD_CACHE_DIR": tmp}
                    args = ["--approach", approach, "--workload", workload]
                    if lib:
                        args += ["--library", lib]
                    if cache == "warm":  # an earlier process filled the disk cache
                        probe(args + ["--no-smi"], env)
                    runs.append(probe(args, env))
            row = {"mode": mode, "approach": approach, "library": lib, "cache": cache,
                   "workload": workload, **summarize(runs)}
            rows.append(row)
            label = f"{approach}{'/' + lib if lib else ''}{'/' + cache if cache else ''}"
            if "error" in row:
                log(f"  {mode:5} {label:18} {workload:5}: FAILED {row['error'][-300:]}")
            else:
                log(f"  {mode:5} {label:18} {workload:5}: {row['mem_used_bytes'] / 2**20:8.1f} MiB "
                    f"used, first result {row['t_first_result_ms']:8.1f} ms")
    return {"idle_gpu_mib": idle, "reps": reps, "rows": rows}


def _smi_gpu_mib() -> int | None:
    try:
        out = subprocess.run(["nvidia-smi", "--id=0", "--query-gpu=memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
        return int(out.splitlines()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def run(gpu: bool, quick: bool = False, build_large: bool = False, skip_reason: str = "",
        arch: str = "sm_90", log=print) -> dict:
    """The whole memory story; GPU parts only when ``gpu``."""
    reps = 1 if quick else 3
    log("memory story: ahead-of-time builds")
    result = {"library": {"operators": len(ops.operators()), "dtypes": len(ops.DTYPES),
                          "variants": list(ops.VARIANTS),
                          "kernels": {lib: len(ops.kernels(lib)) for lib in ops.LIBRARIES},
                          "large_configs": [f"unroll {u}, {i}-bit index" for u, i in ops.LARGE_CONFIGS],
                          "workloads": {w: [k.name for k in ks] for w, ks in ops.WORKLOADS.items()},
                          "digest": ops.source_digest()}}
    result["builds"] = builds(log, build_large)
    log("memory story: on-demand compile (cudaload, fresh processes)")
    result["compile"] = compile_times(reps, arch, log)
    if gpu:
        libs = [lib for lib, b in result["builds"].items() if b.get("available")]
        log(f"memory story: GPU runs ({reps} rep(s) each, libraries: {', '.join(libs) or 'none'})")
        result["gpu"] = gpu_runs(reps, libs, log)
    else:
        result["gpu"] = {"skipped": skip_reason or "no GPU"}
        log(f"memory story: GPU part skipped ({result['gpu']['skipped']})")
    return result
