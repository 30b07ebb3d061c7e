"""Run every benchmark, write one JSON file and the report made from it (docs/benchmarks.md).

    python bench/run_all.py --out DIR [--quick] [--build-large] [--commit SHA] [--docs FOLDER]

The report is bench/report.py run on DIR/results.json (``--docs``: where it goes, default docs/;
``--no-report``: JSON only); ``python bench/report.py DIR/results.json`` makes it again later.

On a GPU machine (no network needed) it runs the memory story (bench/memory_story/) and the
import, compile, launch,
frameworks and kernel-family benchmarks, each in its own processes, and writes DIR/results.json
(plus each benchmark's own JSON and DIR/run_all.log).  Without a GPU it runs the CPU-side parts
(import, compile, cache, the ahead-of-time build and cudaload's compile of each workload) and
records what it skipped and why.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "memory_story"))

# (script, seconds allowed, extra arguments in --quick mode)
OTHERS = (
    ("import_bench.py", 300, ["--runs", "15"]),
    ("compile_bench.py", 420, ["--quick"]),
    ("launch_bench.py", 420, ["--quick"]),
    ("frameworks_bench.py", 300, ["--quick"]),
    # 64 kernels on a 3,300-line header compiled four times (serial and compile_all, without and
    # with -pch), then the warm process: minutes on a 2-core machine
    ("family_bench.py", 900, ["--quick"]),
)
PACKAGES = ("cffi", "numpy", "cuda-core", "cuda-bindings", "cuda-python", "cupy-cuda12x",
            "cupy-cuda13x", "torch", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12",
            "nvidia-cuda-runtime", "matplotlib")


class Log:
    def __init__(self, path: str):
        self.file = open(path, "a", encoding="utf-8")
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        line = f"[{time.perf_counter() - self.t0:7.1f}s] {msg}"
        print(line, flush=True)
        self.file.write(line + "\n")
        self.file.flush()


def _run(cmd: list[str], timeout: int = 60, env=None) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                              env={**os.environ, **(env or {})})
    except (OSError, subprocess.SubprocessError):
        return None


def commit(given: str | None) -> str:
    if given:
        return given
    if os.environ.get("CUDALOAD_BENCH_COMMIT"):
        return os.environ["CUDALOAD_BENCH_COMMIT"]
    proc = _run(["git", "rev-parse", "HEAD"])
    if proc is None or proc.returncode:
        return "unknown"
    sha = proc.stdout.strip()
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return sha + ("+local changes" if dirty and dirty.stdout.strip() else "")


def cuda_status() -> dict:
    """cudaload's own status report, from a fresh process (it never raises)."""
    code = "import json, cudaload; print(json.dumps(cudaload.status().as_dict(), default=str))"
    proc = _run([sys.executable, "-c", code], timeout=120, env={"PYTHONPATH": REPO})
    if proc is None or proc.returncode:
        return {"available": False, "error": (proc.stderr[-1000:] if proc else "did not run")}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"available": False, "error": proc.stdout[-500:]}


def environment(sha: str) -> dict:
    from importlib import metadata

    import build

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    smi = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                "--format=csv,noheader"])
    gpus = [line.strip() for line in smi.stdout.strip().splitlines()] if smi and not smi.returncode else []
    nvcc = build.find_nvcc()
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "commit": sha,
            "machine": build.machine(), "python": platform.python_version(),
            "cudaload": _cudaload_version(), "packages": versions, "nvidia_smi_gpus": gpus,
            "nvcc": build.nvcc_version(nvcc) if nvcc else None}


def _cudaload_version() -> str:
    sys.path.insert(0, REPO)
    try:
        import cudaload

        return cudaload.__version__
    except Exception as exc:  # the report still says what failed
        return f"unknown ({type(exc).__name__})"


def run_other(script: str, timeout: int, quick_args: list[str], out_dir: str, quick: bool,
              log) -> dict:
    path = os.path.join(BENCH, script)
    if not os.path.isfile(path):
        log(f"{script}: not available (bench/{script} does not exist)")
        return {"available": False, "reason": f"bench/{script} does not exist"}
    out_file = os.path.join(out_dir, script.replace(".py", ".json"))
    if os.path.exists(out_file):
        os.remove(out_file)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    extra = quick_args if quick and quick_args and f'"{quick_args[0]}"' in text else []
    cmd = [sys.executable, path, "--out", out_file, *extra]
    log(f"{script}: {' '.join(os.path.relpath(c, REPO) if c.startswith(REPO) else c for c in cmd[1:])}")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        log(f"{script}: timed out after {timeout} s")
        return {"available": True, "error": f"timed out after {timeout} s"}
    seconds = round(time.perf_counter() - t0, 1)
    data = None
    for source in (out_file, None):
        try:
            if source:
                with open(source, encoding="utf-8") as f:
                    data = json.load(f)
            else:
                data = json.loads(proc.stdout)
            break
        except (OSError, ValueError):
            continue
    result = {"available": True, "seconds": seconds, "returncode": proc.returncode,
              "command": " ".join(cmd[1:])}
    if data is None:
        result["error"] = (proc.stderr or proc.stdout)[-2000:] or "no JSON output"
        log(f"{script}: FAILED (rc {proc.returncode}) after {seconds} s")
    else:
        result["data"] = data
        if proc.returncode:
            result["stderr_tail"] = proc.stderr[-1000:]
        log(f"{script}: done in {seconds} s (rc {proc.returncode})")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for results.json and the logs")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (one per measurement)")
    ap.add_argument("--build-large", action="store_true",
                    help="build the ~10,000-kernel library with nvcc when it is not prebuilt")
    ap.add_argument("--commit", help="commit to record (default: git rev-parse HEAD)")
    ap.add_argument("--only", choices=("memory", "others"), help="run only one part")
    ap.add_argument("--no-gpu", action="store_true", help="skip the GPU parts even with a GPU")
    ap.add_argument("--docs", default=os.path.join(REPO, "docs"),
                    help="folder for benchmarks.md and its plots (default: docs/)")
    ap.add_argument("--no-report", action="store_true", help="write the JSON only")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    log = Log(os.path.join(args.out, "run_all.log"))
    t0 = time.perf_counter()

    import run as memory_story

    status = cuda_status()
    gpu = bool(status.get("available")) and not args.no_gpu
    why = ("--no-gpu given" if args.no_gpu else
           "; ".join(p.get("what", "") for p in status.get("problems", [])) or
           status.get("error") or "cudaload.is_available() is False")
    log(f"GPU available: {gpu}" + ("" if gpu else f" ({why})"))
    results = {"schema": 1, "quick": args.quick, "gpu": gpu, "environment": environment(commit(args.commit)),
               "status": status, "skipped": [], "benchmarks": {}}
    if not gpu:
        results["skipped"].append(f"all GPU measurements: {why}")

    if args.only != "memory":
        for script, timeout, quick_args in OTHERS:
            name = script.replace("_bench.py", "")
            results["benchmarks"][name] = run_other(script, timeout, quick_args, args.out,
                                                    args.quick, log)
            if not results["benchmarks"][name].get("available"):
                results["skipped"].append(f"{name} benchmark: {results['benchmarks'][name]['reason']}")
    if args.only != "others":
        arch = "sm_" + "".join(map(str, status["devices"][0]["compute_capability"])) \
            if gpu and status.get("devices") else "sm_90"
        results["memory_story"] = memory_story.run(gpu, quick=args.quick, build_large=args.build_large,
                                                   skip_reason=why, arch=arch, log=log)
        for lib, b in results["memory_story"]["builds"].items():
            if not b.get("available"):
                results["skipped"].append(f"memory story, {lib} library: {b['reason']}")
    results["seconds"] = round(time.perf_counter() - t0, 1)
    path = os.path.join(args.out, "results.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, default=str)
    log(f"wrote {path} in {results['seconds']} s")
    for item in results["skipped"]:
        log(f"skipped: {item}")
    if args.no_report:
        return 0
    proc = _run([sys.executable, os.path.join(BENCH, "report.py"), path, "--docs", args.docs],
                timeout=300)
    if proc is None or proc.returncode:
        log("report.py failed: " + ((proc.stderr or proc.stdout)[-600:] if proc else "did not run"))
        return 1
    log(proc.stdout.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
