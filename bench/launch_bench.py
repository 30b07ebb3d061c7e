"""Kernel launch overhead: cudaload against raw C, cuda.core, cuda.bindings, CuPy and PyTorch.

    python bench/launch_bench.py [--out results.json] [--launches 20000] [--repeats 5]

Each measurement runs in its own process: N launches of an empty kernel on one stream, then a
synchronize, the median of R repetitions, in microseconds per launch; every API is measured in
each of several interleaved rounds and the median round is reported.  Also: cudaload with 2, 8
and 16 arguments and with a CuPy array argument, graph replay of 100 captured launches (cudaload
against C), where a cudaload launch spends its time, and the GPU memory a process uses after
compiling, loading and launching 10 kernels against a bare driver context (CUDA_MODULE_LOADING
EAGER and LAZY).  Frameworks that are not installed are reported as such, not failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EMPTY = r"""
extern "C" __global__ void empty(float* p, int n) {}
extern "C" __global__ void empty8(float* p, int a, int b, int c, int d, int e, int f, int g) {}
extern "C" __global__ void empty16(float* p, int a, int b, int c, int d, int e, int f, int g,
    float h, float i, float j, float k, float l, float m, float n, float o) {}
"""


def timed(launch, sync, n: int, repeats: int) -> float:
    """Median seconds per launch of ``repeats`` runs of ``n`` launches then one sync."""
    for _ in range(min(n, 2000)):
        launch()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            launch()
        sync()
        samples.append((time.perf_counter() - start) / n)
    return statistics.median(samples)


# ---- one framework per process ------------------------------------------------------------------

def run_cudaload(n, repeats):
    import numpy as np

    import cudaload

    s = cudaload.Stream()
    buf = cudaload.alloc(64)
    mod = cudaload.Program(EMPTY).compile().load()
    k2, k8, k16 = (mod.get_kernel(name) for name in ("empty", "empty8", "empty16"))
    out = {}
    a2 = (buf, 2)
    out["cudaload"] = timed(lambda: k2(1, 1, a2, stream=s), s.synchronize, n, repeats)
    a2i = (buf.ptr, 2)
    out["cudaload_int_pointer"] = timed(lambda: k2(1, 1, a2i, stream=s), s.synchronize, n, repeats)
    out["cudaload_2_args"] = out["cudaload"]
    a8 = (buf, 1, 2, 3, 4, 5, 6, 7)
    out["cudaload_8_args"] = timed(lambda: k8(1, 1, a8, stream=s), s.synchronize, n, repeats)
    a16 = (buf, 1, 2, 3, 4, 5, 6, 7, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, np.float32(8.0))
    out["cudaload_16_args"] = timed(lambda: k16(1, 1, a16, stream=s), s.synchronize, n, repeats)
    try:
        import cupy

        arr = cupy.zeros(16, dtype=cupy.float32)
        ac = (arr, 2)
        out["cudaload_cupy_array_arg"] = timed(lambda: k2(1, 1, ac, stream=s), s.synchronize, n,
                                               repeats)
    except ImportError:
        out["cudaload_cupy_array_arg"] = "cupy not installed"
    # Graph: 100 captured launches, replayed until n kernels ran.
    with s.capture() as graph:
        for _ in range(100):
            k2(1, 1, a2, stream=s)
    graph.instantiate()
    out["cudaload_graph_per_kernel"] = timed(lambda: graph.launch(s), s.synchronize, n // 100,
                                             repeats) / 100
    out["breakdown"] = breakdown(k2, a2, s, n, repeats)
    return out


def breakdown(k, args, s, n, repeats):
    """Seconds per launch of each step of the hot path, measured alone."""
    from cudaload import driver

    k(1, 1, args, stream=s)
    state = k._core._tls.state
    cfg = state.configs[1, 1, 0, s, None, False]
    func, ptrs, null, launch, pack = state.func, state.pointers, state.null, state.launch, state.pack
    configs = state.configs
    drv = driver.api()
    plain = drv.cuLaunchKernel
    handle = cfg.hStream

    def nothing():
        pass

    out = {
        "python_loop_and_call": timed(nothing, nothing, n, repeats),
        "config_lookup": timed(lambda: configs[1, 1, 0, s, None, False], nothing, n, repeats),
        "pack_and_convert": timed(lambda: pack(args), nothing, n, repeats),
        "cffi_cuLaunchKernelEx_alone": timed(lambda: launch(cfg, func, ptrs, null),
                                             s.synchronize, n, repeats),
        "cffi_cuLaunchKernel_alone": timed(
            lambda: plain(func, 1, 1, 1, 1, 1, 1, 0, handle, ptrs, null), s.synchronize, n,
            repeats),
        "full_launch": timed(lambda: k(1, 1, args, stream=s), s.synchronize, n, repeats),
    }
    return out


def run_cuda_core(n, repeats):
    import numpy as np

    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:
        from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
    dev = Device()
    dev.set_current()
    s = dev.create_stream()
    prog = Program(EMPTY, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    kernel = prog.compile("cubin").get_kernel("empty")
    try:
        buf = dev.allocate(64, stream=s)
    except TypeError:
        buf = dev.allocate(64)
    cfg = LaunchConfig(grid=1, block=1)
    n32 = np.int32(2)
    return {"cuda.core": timed(lambda: launch(s, cfg, kernel, buf, n32), s.sync, n, repeats)}


def run_cuda_bindings(n, repeats, cubin):
    import ctypes

    from cuda.bindings import driver as cu

    def ok(result):
        err = result[0]
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuda.bindings call failed: {err}")
        return result[1] if len(result) == 2 else result[1:]

    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    with open(cubin, "rb") as f:
        image = f.read()
    mod = ok(cu.cuModuleLoadData(image))
    fn = ok(cu.cuModuleGetFunction(mod, b"empty"))
    ptr = ok(cu.cuMemAlloc(64))
    stream = ok(cu.cuStreamCreate(1))
    params = ((int(ptr), 2), (ctypes.c_void_p, ctypes.c_int))
    launch = cu.cuLaunchKernel
    return {"cuda.bindings": timed(lambda: launch(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, 0),
                                   lambda: ok(cu.cuStreamSynchronize(stream)), n, repeats)}


def run_cupy(n, repeats):
    import cupy
    import numpy as np

    k = cupy.RawKernel(EMPTY, "empty")
    arr = cupy.zeros(16, dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    n32 = np.int32(2)
    with s:
        return {"cupy": timed(lambda: k((1,), (1,), (arr, n32)), s.synchronize, n, repeats)}


def run_torch(n, repeats):
    import torch

    compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
    if compile_kernel is None:
        return {"torch": "torch.cuda._compile_kernel is not available"}
    k = compile_kernel(EMPTY, "empty")
    t = torch.zeros(16, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        return {"torch": timed(lambda: k(grid=(1, 1, 1), block=(1, 1, 1), args=[t, 2]),
                               s.synchronize, n, repeats)}


def build_c(source: str, exe: str) -> None:
    """Build ``bench/<source>`` into ``exe``: gcc with the toolkit's cuda.h and -ldl, else nvcc.
    Raises subprocess.CalledProcessError or OSError."""
    src = os.path.join(ROOT, "bench", source)
    include = os.environ.get("CUDA_HOME", "/usr/local/cuda") + "/include"
    cmd = [shutil.which("gcc") or shutil.which("cc") or "cc", "-O2", "-o", exe, src,
           f"-I{include}", "-ldl"]
    if not os.path.exists(os.path.join(include, "cuda.h")) and shutil.which("nvcc"):
        cmd = ["nvcc", "-O2", "-o", exe, src, "-ldl"]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)


def run_c(n, repeats, cubin, mode):
    exe = os.path.join(os.path.dirname(cubin), "launch_c")
    if not os.path.exists(exe):
        build_c("launch_c.c", exe)
    out = subprocess.run([exe, cubin, mode, str(n), str(repeats)], check=True,
                         capture_output=True, text=True)
    seconds = json.loads(out.stdout)["seconds_per_kernel"]
    return {"c" if mode == "launch" else "c_graph_per_kernel": seconds}


def run_prepare(cubin):
    import cudaload

    obj = cudaload.Program(EMPTY).compile(output="cubin")
    with open(cubin, "wb") as f:
        f.write(obj.code)
    dev = cudaload.Device(0)
    return {"gpu": dev.name, "arch": obj.arch,
            "driver": cudaload.driver.format_version(cudaload.driver.version())}


def run_memory(kind):
    """Device memory in use (cuMemGetInfo total - free) after a bare context, or after 10 kernels."""
    import cudaload
    from cudaload.device import Device, activate

    dev = Device(0)
    activate(dev)
    if kind == "kernels":
        buf = cudaload.alloc(64)
        for i in range(10):
            src = f'extern "C" __global__ void k{i}(float* p, int n) {{ if (n < 0) p[0] = {i}; }}'
            cudaload.RawKernel(src, f"k{i}")(1, 1, (buf, 1))
        dev.synchronize()
        buf.free()
    free, total = dev.mem_info()
    return {"used_bytes": total - free}


# ---- the driver ---------------------------------------------------------------------------------

def child(args) -> dict:
    extra = args.one[1:]
    name = args.one[0]
    fn = {"cudaload": lambda: run_cudaload(args.launches, args.repeats),
          "cuda.core": lambda: run_cuda_core(args.launches, args.repeats),
          "cuda.bindings": lambda: run_cuda_bindings(args.launches, args.repeats, extra[0]),
          "cupy": lambda: run_cupy(args.launches, args.repeats),
          "torch": lambda: run_torch(args.launches, args.repeats),
          "c": lambda: run_c(args.launches, args.repeats, extra[0], extra[1]),
          "prepare": lambda: run_prepare(extra[0]),
          "memory": lambda: run_memory(extra[0])}[name]
    return fn()


def flatten_one(result: dict):
    for key, value in result.items():
        if isinstance(value, dict):
            yield from ((f"{key}.{k}", v) for k, v in value.items())
        else:
            yield key, value


def spawn(args, *one, env=None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--launches", str(args.launches),
           "--repeats", str(args.repeats), "--one", *one]
    full_env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_env.update(env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=600)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        key = "c_graph_per_kernel" if one[0] == "c" and one[-1] == "graph" else one[0]
        return {key: "failed: " + " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here as well as to stdout")
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3,
                        help="run every API this many times, interleaved; report the median round "
                             "(a shared host drifts by 20%% within a minute)")
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(child(args)))
        return 0
    tmp = tempfile.mkdtemp(prefix="cudaload-bench-")
    cubin = os.path.join(tmp, "empty.cubin")
    result = {"launches": args.launches, "repeats": args.repeats, "python": platform.python_version(),
              "rounds": 1 if args.quick else max(1, args.rounds)}
    result.update(spawn(args, "prepare", cubin))
    rounds: dict[str, list] = {}
    for _ in range(1 if args.quick else max(1, args.rounds)):
        for one in (("c", cubin, "launch"), ("c", cubin, "graph"), ("cuda.core",),
                    ("cuda.bindings", cubin), ("cupy",), ("torch",), ("cudaload",)):
            for key, value in flatten_one(spawn(args, *one)):
                rounds.setdefault(key, []).append(value)
    seconds, breakdown = {}, {}
    for key, values in rounds.items():
        numbers = [v for v in values if isinstance(v, float)]
        value = statistics.median(numbers) if numbers else values[-1]
        if key.startswith("breakdown."):
            breakdown[key.split(".", 1)[1]] = value
        else:
            seconds[key] = value
    us = {k: (round(v * 1e6, 3) if isinstance(v, float) else v) for k, v in seconds.items()}
    result["us_per_launch"] = us
    result["cudaload_breakdown_us"] = {k: round(v * 1e6, 3) if isinstance(v, float) else v
                                       for k, v in breakdown.items()}
    ratios = {}
    if isinstance(us.get("cudaload"), float) and isinstance(us.get("c"), float):
        ratios["cudaload_over_c"] = round(us["cudaload"] / us["c"], 3)
    if isinstance(us.get("cudaload"), float) and isinstance(us.get("cuda.core"), float):
        ratios["cudaload_over_cuda_core"] = round(us["cudaload"] / us["cuda.core"], 3)
    if isinstance(us.get("cudaload_graph_per_kernel"), float) and isinstance(
            us.get("c_graph_per_kernel"), float):
        ratios["graph_cudaload_over_c"] = round(
            us["cudaload_graph_per_kernel"] / us["c_graph_per_kernel"], 3)
    result["ratios"] = ratios
    memory = {}
    for mode in ("EAGER", "LAZY"):
        env = {"CUDA_MODULE_LOADING": mode}
        bare = spawn(args, "memory", "bare", env=env).get("used_bytes")
        used = spawn(args, "memory", "kernels", env=env).get("used_bytes")
        memory[mode] = {"bare_context_mib": bare and round(bare / 2 ** 20, 1),
                        "ten_kernels_mib": used and round(used / 2 ** 20, 1),
                        "extra_mib": (bare and used) and round((used - bare) / 2 ** 20, 1)}
    result["gpu_memory"] = memory
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
