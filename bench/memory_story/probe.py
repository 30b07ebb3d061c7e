"""One measurement of the memory story, in a fresh process: prints one JSON object.

    python bench/memory_story/probe.py --approach bare|aot|ondemand --workload zeros|model
                                       [--library small|large] [--prepare]

``bare``: a driver context and a 4-byte buffer set to zero with cuMemsetD32 (the floor).
``aot``: every fatbin of the library loaded with cuModuleLoadData at start-up (what a framework's
static initialisers do), then the workload's kernels looked up and launched.
``ondemand``: cudaload compiles the workload's kernels from the same template (disk cache in
``CUDALOAD_CACHE_DIR``), loads and launches them.
The loading mode is whatever ``CUDA_MODULE_LOADING`` says; memory is read after the first result
is on the host: ``cuMemGetInfo`` (device-wide used) and ``nvidia-smi`` (this process, and the GPU).
``--prepare`` only compiles (fills the disk cache) and needs no GPU.
Times are milliseconds from ``T_START``, taken after the probe's own bookkeeping (argument
parsing, which files and kernels to use) and before any CUDA-related import.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repository, for cudaload

import ops  # noqa: E402

ELEMENTS = {"zeros": 1, "model": 4096}
INNER = 64  # broadcast operand length in the model workload
BLOCK = 256


T_START = 0.0


def _ms(t: float) -> float:
    return round((t - T_START) * 1e3, 3)


class Raw:
    """Just enough of the driver, through cudaload's resolved entry points, for a framework-style
    loader: modules, functions, memory and cuLaunchKernel."""

    def __init__(self):
        from cudaload.bindings import driver

        self.driver = driver
        self.drv = driver.init()
        self.ffi = self.drv.ffi
        self.keep = []

    def check(self, rc, fn):
        self.driver.check(rc, fn)

    def context(self, ordinal: int = 0):
        ffi, drv = self.ffi, self.drv
        dev = ffi.new("CUdevice *")
        self.check(drv.cuDeviceGet(dev, ordinal), "cuDeviceGet")
        ctx = ffi.new("CUcontext *")
        self.check(drv.cuDevicePrimaryCtxRetain(ctx, dev[0]), "cuDevicePrimaryCtxRetain")
        self.check(drv.cuCtxSetCurrent(ctx[0]), "cuCtxSetCurrent")
        cc = []
        for attr in (75, 76):  # COMPUTE_CAPABILITY_MAJOR, _MINOR
            out = ffi.new("int *")
            self.check(drv.cuDeviceGetAttribute(out, attr, dev[0]), "cuDeviceGetAttribute")
            cc.append(out[0])
        return cc[0] * 10 + cc[1]

    def load(self, image: bytes):
        mod = self.ffi.new("CUmodule *")
        buf = self.ffi.from_buffer(image)
        self.check(self.drv.cuModuleLoadData(mod, buf), "cuModuleLoadData")
        return mod[0]

    def function(self, module, name: str):
        fn = self.ffi.new("CUfunction *")
        self.check(self.drv.cuModuleGetFunction(fn, module, name.encode()), "cuModuleGetFunction")
        return fn[0]

    def alloc(self, nbytes: int) -> int:
        p = self.ffi.new("CUdeviceptr *")
        self.check(self.drv.cuMemAlloc_v2(p, max(nbytes, 1)), "cuMemAlloc")
        return int(p[0])

    def launch(self, fn, grid: int, params) -> None:
        ffi = self.ffi
        cells = [ffi.new(f"{'unsigned long long' if c.endswith('*') else c} *", v) for c, v in params]
        args = ffi.new("void *[]", [ffi.cast("void *", c) for c in cells])
        self.check(self.drv.cuLaunchKernel(fn, grid, 1, 1, BLOCK, 1, 1, 0, ffi.NULL, args, ffi.NULL),
                   "cuLaunchKernel")

    def sync(self):
        # cuCtxSynchronize is resolved at its 12.0 ABI by cudaload's driver module
        self.check(self.drv.cuCtxSynchronize(), "cuCtxSynchronize")

    def read(self, ptr: int, nbytes: int) -> bytes:
        host = bytearray(nbytes)
        self.check(self.drv.cuMemcpyDtoH_v2(self.ffi.from_buffer(host), ptr, nbytes), "cuMemcpyDtoH")
        return bytes(host)

    def mem_used(self) -> tuple[int, int]:
        free, total = self.ffi.new("size_t *"), self.ffi.new("size_t *")
        self.check(self.drv.cuMemGetInfo_v2(free, total), "cuMemGetInfo")
        return total[0] - free[0], total[0]

    def loading_mode(self) -> str | None:
        mode = self.ffi.new("CUmoduleLoadingMode *")
        try:
            if self.drv.cuModuleGetLoadingMode(mode) == 0:
                return {1: "EAGER", 2: "LAZY"}.get(mode[0], str(mode[0]))
        except Exception:  # older driver without the entry point
            pass
        return None


def buffers(raw: Raw, workload: str) -> dict:
    """Device buffers for the workload: one per dtype role, big enough for every kernel."""
    n = ELEMENTS[workload]
    return {"n": n, "out": raw.alloc(8 * n), "a": raw.alloc(8 * n), "b": raw.alloc(8 * n)}


def values(kernel: ops.Kernel, bufs: dict) -> list:
    n = bufs["n"]
    extra = {"value": 0.0, "n": n, "inner": min(INNER, n), "n0": 1, "n1": n}
    out = []
    for ctype, role in kernel.params():
        if role in ("out", "a", "b"):
            out.append(bufs[role])
        elif role in extra:
            out.append(extra[role])
        else:  # strides of a row-major [1, n] view
            out.append(n if role.endswith("0") else 1)
    return out


def grid_for(n: int, kernel: ops.Kernel) -> int:
    return max(1, min(1024, -(-n // (BLOCK * kernel.unroll))))


def run_raw(raw: Raw, functions: dict, workload: list, bufs: dict) -> None:
    for k in workload:
        params = list(zip([c for c, _ in k.params()], values(k, bufs)))
        raw.launch(functions[k.name], grid_for(bufs["n"], k), params)


def compile_timed(workload: list, arch, res: dict):
    """cudaload's Program for the workload's kernels, compiled to a CUBIN; records
    ``program_ms`` (import + Program()), ``compile_ms`` (the compile() call, cache or NVRTC) and
    ``ondemand_ms`` (both)."""
    t0 = time.perf_counter()
    import cudaload

    prog = cudaload.Program(ops.source(workload), name="elementwise.cu")
    t1 = time.perf_counter()
    obj = prog.compile(arch=arch, output="cubin")
    t2 = time.perf_counter()
    res.update(program_ms=round((t1 - t0) * 1e3, 3), compile_ms=round((t2 - t1) * 1e3, 3),
               ondemand_ms=round((t2 - t0) * 1e3, 3), cached=obj.cached, code_bytes=len(obj.code))
    return obj


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--approach", choices=("bare", "aot", "ondemand"), required=True)
    ap.add_argument("--workload", choices=tuple(ops.WORKLOADS), default="zeros")
    ap.add_argument("--library", choices=tuple(ops.LIBRARIES), default="small")
    ap.add_argument("--arch", default=None, help="with --prepare: sm_XX to compile for")
    ap.add_argument("--prepare", action="store_true", help="compile only (fills the disk cache)")
    ap.add_argument("--no-smi", action="store_true")
    args = ap.parse_args(argv)
    workload = ops.WORKLOADS[args.workload]
    res = {"approach": args.approach, "workload": args.workload, "kernels_used": len(workload),
           "env_loading": os.environ.get("CUDA_MODULE_LOADING"), "pid": os.getpid()}
    if args.approach == "aot":
        res["library"] = args.library

    if args.prepare:
        obj = compile_timed(workload, args.arch, res)
        res["arch"] = obj.arch
        print(json.dumps(res))
        return 0

    global T_START
    if args.approach == "aot":
        import build

        files = build.fatbins(args.library)
        where = {k.name: i // build.KERNELS_PER_UNIT for i, k in enumerate(ops.kernels(args.library))}
    T_START = time.perf_counter()
    raw = Raw()
    res["t_init_ms"] = _ms(time.perf_counter())
    cc = raw.context()
    res["t_context_ms"] = _ms(time.perf_counter())
    res["arch"] = f"sm_{cc}"
    bufs = buffers(raw, args.workload) if args.approach != "bare" else None

    if args.approach == "bare":
        ptr = raw.alloc(4)
        raw.check(raw.drv.cuMemsetD32_v2(ptr, 0, 1), "cuMemsetD32")
        raw.sync()
        result = raw.read(ptr, 4)
    elif args.approach == "aot":
        modules = []
        for path in files:
            with open(path, "rb") as f:
                modules.append(raw.load(f.read()))
        res["t_loaded_ms"] = _ms(time.perf_counter())
        res["modules"] = len(modules)
        functions = {k.name: raw.function(modules[where[k.name]], k.name) for k in workload}
        raw.check(raw.drv.cuMemsetD8_v2(bufs["out"], 0xFF, 8 * bufs["n"]), "cuMemsetD8")
        run_raw(raw, functions, workload, bufs)
        raw.sync()
        result = raw.read(bufs["out"], 4)
    else:
        obj = compile_timed(workload, f"sm_{cc}", res)
        raw.check(raw.drv.cuMemsetD8_v2(bufs["out"], 0xFF, 8 * bufs["n"]), "cuMemsetD8")
        try:
            mod = obj.load()
            for k in workload:
                kern = mod.get_kernel(k.name, signature=k.signature())
                kern(grid_for(bufs["n"], k), BLOCK, tuple(values(k, bufs)))
            res["launch_via"] = "cudaload"
        except Exception as exc:  # keep the memory figure even if the launch layer misbehaves
            res["launch_via"] = "driver"
            res["cudaload_launch_error"] = f"{type(exc).__name__}: {exc}"[:500]
            module = raw.load(obj.code)
            run_raw(raw, {k.name: raw.function(module, k.name) for k in workload}, workload, bufs)
        raw.sync()
        result = raw.read(bufs["out"], 4)
    res["t_first_result_ms"] = _ms(time.perf_counter())
    last = workload[-1] if args.approach != "bare" else None
    if last is None or last.op == "fill":
        res["result_ok"] = result == b"\0\0\0\0"
    else:
        res["result_ok"] = result != b"\xff\xff\xff\xff"  # the kernel wrote its output
    res["loading_mode"] = raw.loading_mode()
    res["mem_used_bytes"], res["mem_total_bytes"] = raw.mem_used()
    if not args.no_smi:
        res["smi"] = nvidia_smi(os.getpid())
    print(json.dumps(res))
    return 0


def nvidia_smi(pid: int) -> dict:
    """This process's and the whole GPU's used memory (MiB) as nvidia-smi reports them."""
    out = {}
    try:
        apps = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30).stdout
        rows = [line.split(",") for line in apps.strip().splitlines() if "," in line]
        rows = [(int(p), int(m)) for p, m in rows if p.strip().isdigit() and m.strip().isdigit()]
        out["apps"] = len(rows)
        mine = [m for p, m in rows if p == pid]
        if mine:
            out["process_mib"] = mine[0]
        elif len(rows) == 1:  # another PID namespace: the only compute process is this one
            out["process_mib"] = rows[0][1]
            out["process_matched_by"] = "only process"
        gpu = subprocess.run(
            ["nvidia-smi", "--id=0", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
        if gpu and gpu[0].strip().isdigit():
            out["gpu_mib"] = int(gpu[0])
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


if __name__ == "__main__":
    sys.exit(main())
