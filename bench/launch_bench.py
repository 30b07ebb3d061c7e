"""Kernel launch overhead: cudaload against raw C, cuda.core, cuda.bindings, CuPy and PyTorch.

    python bench/launch_bench.py [--out results.json] [--launches 20000] [--repeats 5]
                                 [--fake] [--against PATH]

Each measurement runs in its own process: N launches of an empty kernel on one stream, then a
synchronize, the median of R repetitions, in microseconds per launch; every API is measured in
each of several interleaved rounds and the median round is reported.  Every API launches kernels
with 2, 8 and 16 arguments (keys "X", "X_8_args", "X_16_args") and with its own array object as
the pointer ("X_array_arg"; a string where that does not apply), and replays a CUDA graph of
100 captured launches ("X_graph_per_kernel").  Also: where a cudaload launch spends its time, and the GPU
memory a process uses after compiling, loading and launching 10 kernels against a bare driver
context (CUDA_MODULE_LOADING EAGER and LAZY).  A figure that is not installed, does not apply
or fails is a string saying so; the others are still measured.

"floor": per argument kind (int pointer, DeviceBuffer, CuPy array, PyTorch tensor, 8 and 16
arguments), cudaload against the bare cffi cuLaunchKernelEx call with the configuration and
parameter buffer its launches prepared, against cuda.core's launch and C, with the targets
(1.15x, 1.10x).  The verdict's ratios are paired: in cudaload's process, where cuda.core runs
too, each kind is timed in 9 rounds of one block of launches of cudaload, the bare call and
cuda.core back to back, and each ratio is the median of the rounds' ratios ("over_*_paired";
the ratio of the separately timed medians is kept as "over_*_separate").  The same rounds time
"python_floor": the same launch through a Kernel-like callable (a functools.partial subclass
over a function of the Kernel's signature) that checks and packs nothing, the least any launch
through a Python object costs ("python_floor_over_bare_cffi").  --fake measures
cudaload and the bare call onto tests/_fakelibs.py's recording driver, on any machine (CuPy and
PyTorch stood in for by objects that look alike to cudaload): the difference is the Python
overhead.  --against PATH measures the cudaload package under PATH as well, in the same run
("reference").
"""

from __future__ import annotations

import argparse
import ast
import functools
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


INTS = (1, 2, 3, 4, 5, 6, 7)  # empty8's and empty16's int arguments
FLOATS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)  # empty16's float arguments
RAW_POINTERS_ONLY = "n/a: raw pointers only"
VARIANTS = ("", "_8_args", "_16_args", "_array_arg")  # key suffixes every framework reports
C_MODES = {"launch": "c", "launch8": "c_8_args", "launch16": "c_16_args",
           "graph": "c_graph_per_kernel"}  # launch_c.c's modes and their keys
FRAMEWORKS = ("cuda.core", "cuda.bindings", "cupy", "torch", "cudaload")


# The first seconds of launching in a process run slower than the rest, for every API: on the
# H200 host one process measured cudaload at 5.97, 5.83, 5.57, then 4.6-4.8 us per launch, and
# its bare cuLaunchKernelEx call at 4.76 then 3.9-4.0 us.  So each process launches for this
# long before its first measurement (launch_c.c does the same).
SETTLE_S = 2.0
# One API in one process takes seconds (PyTorch's import included); a hung one must fail alone,
# well inside the time run_all.py gives the whole launch benchmark.
CHILD_TIMEOUT_S = 120
_settled = [False]


def timed(launch, sync, n: int, repeats: int) -> float:
    """Median seconds per launch of ``repeats`` runs of ``n`` launches then one sync, after a
    warm-up (SETTLE_S seconds for the first measurement of the process)."""
    deadline = time.perf_counter() + (0.0 if _settled[0] else SETTLE_S)
    while True:
        for _ in range(min(n, 2000)):
            launch()
        sync()
        if time.perf_counter() >= deadline:
            break
    _settled[0] = True
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            launch()
        sync()
        samples.append((time.perf_counter() - start) / n)
    return statistics.median(samples)


def guarded(fn, *args):
    """``fn(*args)``, or a string saying why it raised: one figure failing must not lose the
    others measured in the same process."""
    try:
        return fn(*args)
    except Exception as exc:
        return f"failed: {type(exc).__name__}: {exc}"[:300]


GRAPH_SUFFIX = "_graph_per_kernel"
GRAPH_LAUNCHES = 100


def graph_figure(name: str, build, sync, n: int, repeats: int) -> dict:
    """Seconds per kernel under ``name + GRAPH_SUFFIX``: ``build()`` captures GRAPH_LAUNCHES
    launches of ``empty`` into a graph and returns the call that replays it once; replayed until
    ``n`` kernels ran.  A string where building or replaying failed."""
    def measure():
        replay = build()
        return timed(replay, sync, n // GRAPH_LAUNCHES, repeats) / GRAPH_LAUNCHES
    return {name + GRAPH_SUFFIX: guarded(measure)}


def variants(name: str, launches: dict, sync, n: int, repeats: int) -> dict:
    """Seconds per launch under ``name + suffix`` for each ``{suffix: launch}``; a launch given
    as a string is the reason that variant does not apply, kept as it is."""
    return {name + suffix: launch if isinstance(launch, str) else
            guarded(timed, launch, sync, n, repeats) for suffix, launch in launches.items()}


# ---- one framework per process ------------------------------------------------------------------
# Every framework launches empty (2 arguments), empty8 and empty16 with the same values, the
# pointer in the same form each time, and empty with the framework's own array object as the
# pointer ("_array_arg").  Where that object is what the 2-argument launch passes already
# (CuPy, PyTorch, cuda.core's Buffer), the array figure is that same launch.

# The argument kinds of the floor comparison: (name, key suffix of cudaload's figure, kernel,
# key suffix of the bare call with that kernel's configuration and buffer, cuda.core's figure).
KINDS = (("int pointer", "_int_pointer", "empty", "", "cuda.core_int_pointer"),
         ("DeviceBuffer", "", "empty", "", "cuda.core"),
         ("CuPy array", "_array_arg", "empty", "", "cuda.core_cupy_pointer"),
         ("PyTorch tensor", "_torch_arg", "empty", "", "cuda.core_torch_pointer"),
         ("8 arguments", "_8_args", "empty8", "_8_args", "cuda.core_8_args"),
         ("16 arguments", "_16_args", "empty16", "_16_args", "cuda.core_16_args"))
FLOOR_BARE, FLOOR_CUDA_CORE = 1.15, 1.10  # targets: cudaload over each, per argument kind
# The parameter layouts the recording driver reports for EMPTY's kernels (--fake)
LAYOUTS = {"empty": ((0, 8), (8, 4)), "empty8": ((0, 8),) + tuple((8 + 4 * i, 4) for i in range(7)),
           "empty16": ((0, 8),) + tuple((8 + 4 * i, 4) for i in range(15))}


def interleaved(launches: dict, sync, n: int, repeats: int, passes: int, before=None) -> dict:
    """Seconds per launch of each ``{key: launch}``, measured in ``passes`` passes over all of
    them in turn (so that a drift of the host touches each alike), the median pass; a launch
    given as a string is kept as it is.  ``before(key)`` runs before each measurement."""
    samples: dict = {key: [] for key in launches}
    for _ in range(passes):
        for key, launch in launches.items():
            if isinstance(launch, str):
                continue
            if before:
                before(key)
            value = guarded(timed, launch, sync, n, repeats)
            samples[key].append(value)
    out = {}
    for key, launch in launches.items():
        numbers = [v for v in samples[key] if isinstance(v, float)]
        out[key] = launch if isinstance(launch, str) else (
            statistics.median(numbers) if numbers else samples[key][-1])
    return out


def _stand_ins(ptr: int):
    """Objects a CuPy array and a PyTorch tensor on device 0 look like to cudaload (--fake)."""
    class MemoryPointer:
        __slots__ = ("ptr", "device_id")

        def __init__(self):
            self.ptr, self.device_id = ptr, 0

    memory = MemoryPointer()
    cupy_like = type("ndarray", (), {"__module__": "cupy._core.core", "__slots__": (),
                                     "__cuda_array_interface__": property(lambda self: {}),
                                     "data": property(lambda self: memory)})()
    torch_like = type("Tensor", (), {"__module__": "torch", "__slots__": (),
                                     "data_ptr": lambda self: ptr,
                                     "get_device": lambda self: 0})()
    return cupy_like, torch_like


def run_cudaload(n, repeats, fake=False):
    import numpy as np

    import cudaload

    s = cudaload.Stream()
    buf = cudaload.alloc(64)
    if fake:
        import ctypes

        driver = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])

        def before(key):  # the recording driver copies the parameters of the layout set last
            pairs = LAYOUTS[key_kernel[key]]
            driver.fake_set_layout(len(pairs), (ctypes.c_size_t * len(pairs))(*[o for o, _ in pairs]),
                                   (ctypes.c_size_t * len(pairs))(*[z for _, z in pairs]))
    else:
        before = None
    mod = cudaload.Program(EMPTY).compile(arch=90 if fake else None).load()
    kernels = {}
    key_kernel = {}
    a8 = (buf, *INTS)
    # cudaload packs by the kernel's parameter types: Python floats become float, as does float32
    a16 = (buf, *INTS, *FLOATS[:-1], np.float32(FLOATS[-1]))
    args = {"_int_pointer": (buf.ptr, 2), "": (buf, 2), "_8_args": a8, "_16_args": a16}
    if fake:
        args["_array_arg"], args["_torch_arg"] = ((a, 2) for a in _stand_ins(buf.ptr))
    else:
        try:  # CuPy and PyTorch in this process too: each kind is measured against the same call
            import cupy

            args["_array_arg"] = (cupy.zeros(16, dtype=cupy.float32), 2)
        except ImportError as exc:
            args["_array_arg"] = f"not installed: {exc}"
        try:
            import torch

            args["_torch_arg"] = (torch.zeros(16, device="cuda"), 2)
        except (ImportError, RuntimeError) as exc:
            args["_torch_arg"] = f"not installed: {exc}"
    launches = {}
    floors: dict = {}  # per kind suffix: the least a launch through a Python callable costs
    for _label, suffix, name, bare, _core in KINDS:
        given = args[suffix]
        key_kernel["cudaload" + suffix] = key_kernel["bare_cffi" + bare] = name
        if isinstance(given, str):
            launches["cudaload" + suffix] = given
            continue
        if name not in kernels:
            kernels[name] = mod.get_kernel(name)
        k = kernels[name]
        if before:
            before("cudaload" + suffix)
        for _ in range(3):  # from the third launch on, a kernel's calls take the fast path
            k(1, 1, given, stream=s)
        launches["cudaload" + suffix] = _launcher(k, given, s)
        floors[suffix] = _python_floor(k, given, s)
        if "bare_cffi" + bare not in launches:
            launches["bare_cffi" + bare] = _bare(k, s)
    out = interleaved(launches, s.synchronize, n, repeats, 1 if fake else 2, before)
    out["cudaload_2_args"] = out["cudaload"]
    if fake:
        out.update(paired(launches, s.synchronize, {}, None, n, before, floors))
        return out
    k2, a2 = kernels["empty"], args[""]
    bd = guarded(breakdown, k2, a2, s, n, repeats)
    out["breakdown"] = bd if isinstance(bd, dict) else {"error": bd}

    def graph():
        with s.capture() as captured:
            for _ in range(GRAPH_LAUNCHES):
                k2(1, 1, a2, stream=s)
        captured.instantiate()
        return lambda: captured.launch(s)

    # Before cuda.core runs in this process: replayed after it, at 01650b1's run on the H200
    # host, cudaload's graph took 0.693 us per kernel where every other API's took 0.511-0.528.
    out.update(graph_figure("cudaload", graph, s.synchronize, n, repeats))
    try:  # cuda.core in this process too: each kind's rounds time it beside cudaload
        core, core_stream, _graph = cuda_core_launches()
        core_sync = core_stream.sync
    except Exception as exc:  # noqa: BLE001 - not installed, or failing: the rest is measured
        core, core_sync = {kind[4]: f"cuda.core: {type(exc).__name__}: {exc}"[:200]
                           for kind in KINDS}, None
    out.update(paired(launches, s.synchronize, core, core_sync, n, before, floors))
    return out


PAIRED_ROUNDS = 9  # rounds per argument kind in paired()


def paired(launches: dict, sync, core: dict, core_sync, n: int, before=None,
           floors: dict | None = None) -> dict:
    """Per argument kind of KINDS: cudaload's time over the bare cffi call's and over cuda.core's,
    the median over PAIRED_ROUNDS rounds of the ratios within each round, a round timing one block
    of ``n`` launches (then a sync) of each, back to back, the order turning each round.  The
    ratio of two medians of blocks timed seconds apart carries the host's drift: on the H200 host
    one process measured the same bare call at 4.07 and 4.64 us a minute apart.  Keys
    ``paired.<kind>.over_bare_cffi`` / ``.over_cuda_core``, and each one's median seconds.
    ``floors`` (per kind suffix, from _python_floor) joins the rounds as ``python_floor``, its
    ratio to the bare call ``paired.<kind>.floor_over_bare_cffi``."""
    def block(launch, done):
        start = time.perf_counter()
        for _ in range(n):
            launch()
        done()
        return (time.perf_counter() - start) / n

    out = {}
    for label, suffix, _name, bare, core_key in KINDS:
        mine, floor_call = launches.get("cudaload" + suffix), launches.get("bare_cffi" + bare)
        if not callable(mine) or not callable(floor_call):
            continue
        if before:
            before("cudaload" + suffix)
        entrants = [("cudaload", mine, sync), ("bare_cffi", floor_call, sync)]
        if floors and callable(floors.get(suffix)):
            entrants.append(("python_floor", floors[suffix], sync))
        if callable(core.get(core_key)):
            entrants.append(("cuda_core", core[core_key], core_sync))
        elif core_key in core:
            out[f"paired.{label}.cuda_core_why_not"] = core[core_key]
        times: dict = {who: [] for who, _launch, _done in entrants}
        ratios: dict = {"over_bare_cffi": [], "over_cuda_core": [], "floor_over_bare_cffi": []}
        for who, launch, done in entrants:  # warm-up, not counted
            block(launch, done)
        for r in range(PAIRED_ROUNDS):
            got = {}
            for who, launch, done in entrants[r % len(entrants):] + entrants[:r % len(entrants)]:
                got[who] = block(launch, done)
                times[who].append(got[who])
            ratios["over_bare_cffi"].append(got["cudaload"] / got["bare_cffi"])
            if "cuda_core" in got:
                ratios["over_cuda_core"].append(got["cudaload"] / got["cuda_core"])
            if "python_floor" in got:
                ratios["floor_over_bare_cffi"].append(got["python_floor"] / got["bare_cffi"])
        for who, values in times.items():
            out[f"paired.{label}.{who}_s"] = statistics.median(values)
        for key, values in ratios.items():
            if values:
                out[f"paired.{label}.{key}"] = statistics.median(values)
    return out


def _launcher(k, args, s):
    """A cudaload launch as a user writes it, in a closure like the bare call's and every other
    API's here: the same wrapper for each, so that the ratios hold no difference of wrapping.
    (Through functools.partial and a function instead, the H200 host timed cudaload up to 0.04x
    higher against the bare call in one process.)"""
    return lambda: k(1, 1, args, stream=s)


class _Callable(functools.partial):
    """A subclass of functools.partial, as cudaload's Kernel is: the cheapest Python object a
    call can go through to a Python function."""


FLOOR_SOURCE = """\
def launch(grid, block, args, _=None, shared_mem=0, stream=None, cluster=None, cooperative=False):
    rc = cuLaunchKernelEx(CONFIG, FUNC, PTRS, NULL)
    if rc:
        raise RuntimeError(rc)
"""


def _thread_state(k):
    """The calling thread's prepared launch state of ``k``, read the same way from trees before
    the state's rename (``_core``) as after (``_kernel_state``), so that ``--against`` can time
    both."""
    owner = k._kernel_state if hasattr(k, "_kernel_state") else k._core
    return owner._tls.state


def _python_floor(k, args, s):
    """The least a launch through a Python callable object costs: ``k``'s prepared configuration
    and parameter buffer launched by a function of the Kernel's signature, reading them as
    globals as cudaload's launch does, called as cudaload's launch is, checking and packing
    nothing.  cudaload's launch over this is what its checks cost."""
    state = _thread_state(k)
    cfg, _by_identity = state.configs[1, 1, 0, s, None, False]
    env = {"cuLaunchKernelEx": state.launch, "CONFIG": cfg, "FUNC": state.func,
           "PTRS": state.pointers, "NULL": state.null}
    exec(FLOOR_SOURCE, env)  # noqa: S102 - fixed text
    floor = _Callable(env["launch"])
    return lambda: floor(1, 1, args, stream=s)


def _bare(k, s):
    """The bare cffi cuLaunchKernelEx call with the configuration and parameter buffer that the
    launches of ``k`` prepared (on the stream ``s``, grid and block 1)."""
    state = _thread_state(k)
    cfg, _by_identity = state.configs[1, 1, 0, s, None, False]
    launch, func, ptrs, null = state.launch, state.func, state.pointers, state.null
    return lambda: launch(cfg, func, ptrs, null)


def breakdown(k, args, s, n, repeats):
    """Seconds per launch of each step of the hot path, measured alone."""
    from cudaload.bindings import driver

    k(1, 1, args, stream=s)
    state = _thread_state(k)
    cfg, _by_identity = state.configs[1, 1, 0, s, None, False]
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


def cuda_core_launches():
    """cuda.core's launch of each argument kind, keyed as KINDS' cuda.core figures, with its
    stream; also (launch, config, kernel, buffer, int32) for the graph figure."""
    import numpy as np

    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:
        from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
    dev = Device()
    dev.set_current()
    s = dev.create_stream()
    prog = Program(EMPTY, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    obj = prog.compile("cubin")
    k2, k8, k16 = (obj.get_kernel(name) for name in ("empty", "empty8", "empty16"))
    try:
        buf = dev.allocate(64, stream=s)
    except TypeError:
        buf = dev.allocate(64)
    cfg = LaunchConfig(grid=1, block=1)
    n32 = np.int32(2)
    # a Python int would go as a pointer-sized integer, a Python float as a double
    a8 = (buf, *map(np.int32, INTS))
    a16 = a8 + tuple(map(np.float32, FLOATS))
    ptr = int(buf.handle)
    launches = {
        "cuda.core": lambda: launch(s, cfg, k2, buf, n32),
        "cuda.core_int_pointer": lambda: launch(s, cfg, k2, ptr, n32),
        "cuda.core_8_args": lambda: launch(s, cfg, k8, *a8),
        "cuda.core_16_args": lambda: launch(s, cfg, k16, *a16)}
    # cuda.core takes no foreign array: its user passes the pointer, read at each launch
    try:
        import cupy

        arr = cupy.zeros(16, dtype=cupy.float32)
        launches["cuda.core_cupy_pointer"] = lambda: launch(s, cfg, k2, arr.data.ptr, n32)
    except ImportError as exc:
        launches["cuda.core_cupy_pointer"] = f"not installed: {exc}"
    try:
        import torch

        tensor = torch.zeros(16, device="cuda")
        launches["cuda.core_torch_pointer"] = lambda: launch(s, cfg, k2, tensor.data_ptr(), n32)
    except (ImportError, RuntimeError) as exc:
        launches["cuda.core_torch_pointer"] = f"not installed: {exc}"
    return launches, s, (launch, cfg, k2, buf, n32)


def run_cuda_core(n, repeats):
    launches, s, (launch, cfg, k2, buf, n32) = cuda_core_launches()
    out = interleaved(launches, s.sync, n, repeats, 2)
    out["cuda.core_array_arg"] = out["cuda.core"]  # no array type: the Buffer is the argument

    def graph():
        builder = s.create_graph_builder().begin_building()
        for _ in range(GRAPH_LAUNCHES):
            launch(builder, cfg, k2, buf, n32)
        captured = builder.end_building().complete()
        return lambda: captured.launch(s)

    out.update(graph_figure("cuda.core", graph, s.sync, n, repeats))
    return out


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
    fn2, fn8, fn16 = (ok(cu.cuModuleGetFunction(mod, name))
                      for name in (b"empty", b"empty8", b"empty16"))
    ptr = ok(cu.cuMemAlloc(64))
    stream = ok(cu.cuStreamCreate(1))
    p2 = ((int(ptr), 2), (ctypes.c_void_p, ctypes.c_int))
    p8 = ((int(ptr), *INTS), (ctypes.c_void_p,) + (ctypes.c_int,) * len(INTS))
    p16 = (p8[0] + FLOATS, p8[1] + (ctypes.c_float,) * len(FLOATS))
    launch = cu.cuLaunchKernel
    # cuda.bindings returns its errors: each launch is checked once, so that a failing one is not
    # timed as a fast one (the timed loop then checks nothing, as the other APIs' loops do not)
    for fn, params in ((fn2, p2), (fn8, p8), (fn16, p16)):
        ok(launch(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, 0))
    out = variants("cuda.bindings", {
        "": lambda: launch(fn2, 1, 1, 1, 1, 1, 1, 0, stream, p2, 0),
        "_8_args": lambda: launch(fn8, 1, 1, 1, 1, 1, 1, 0, stream, p8, 0),
        "_16_args": lambda: launch(fn16, 1, 1, 1, 1, 1, 1, 0, stream, p16, 0),
        "_array_arg": RAW_POINTERS_ONLY}, lambda: ok(cu.cuStreamSynchronize(stream)), n, repeats)

    def graph():
        ok(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
        for _ in range(GRAPH_LAUNCHES):
            ok(launch(fn2, 1, 1, 1, 1, 1, 1, 0, stream, p2, 0))
        captured = ok(cu.cuGraphInstantiate(ok(cu.cuStreamEndCapture(stream)), 0))
        replay = cu.cuGraphLaunch
        return lambda: replay(captured, stream)

    out.update(graph_figure("cuda.bindings", graph, lambda: ok(cu.cuStreamSynchronize(stream)),
                            n, repeats))
    return out


def run_cupy(n, repeats):
    import cupy
    import numpy as np

    k2, k8, k16 = (cupy.RawKernel(EMPTY, name) for name in ("empty", "empty8", "empty16"))
    arr = cupy.zeros(16, dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    n32 = np.int32(2)
    # a Python int would go as a 64-bit integer, a Python float as a double
    a8 = (arr, *map(np.int32, INTS))
    a16 = a8 + tuple(map(np.float32, FLOATS))
    with s:
        out = variants("cupy", {
            "": lambda: k2((1,), (1,), (arr, n32)),
            "_8_args": lambda: k8((1,), (1,), a8),
            "_16_args": lambda: k16((1,), (1,), a16)}, s.synchronize, n, repeats)
    out["cupy_array_arg"] = out["cupy"]  # the 2-argument launch passes a cupy array already

    def graph():
        with s:
            s.begin_capture()
            for _ in range(GRAPH_LAUNCHES):
                k2((1,), (1,), (arr, n32))
            captured = s.end_capture()
        return lambda: captured.launch(stream=s)

    out.update(graph_figure("cupy", graph, s.synchronize, n, repeats))
    return out


def run_torch(n, repeats):
    import numpy as np
    import torch

    compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
    if compile_kernel is None:
        why = "torch.cuda._compile_kernel is not available"
        return {f"torch{suffix}": why for suffix in (*VARIANTS, GRAPH_SUFFIX)}
    k2, k8, k16 = (compile_kernel(EMPTY, name) for name in ("empty", "empty8", "empty16"))
    # _compile_kernel takes tensors (as their pointer), Python ints (as C int) and Python
    # floats (as C double), nothing else: a raw pointer would be cut to an int, and a 4-byte
    # float parameter has no matching argument unless a later version accepts numpy.float32.
    t = torch.zeros(16, device="cuda")
    a8 = [t, *INTS]
    a16 = a8 + [np.float32(v) for v in FLOATS]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        try:
            k16(grid=(1, 1, 1), block=(1, 1, 1), args=a16)
            launch16 = lambda: k16(grid=(1, 1, 1), block=(1, 1, 1), args=a16)  # noqa: E731
        except TypeError as exc:
            launch16 = f"n/a: no 4-byte float argument (floats go as C double; {exc})"
        out = variants("torch", {
            "": lambda: k2(grid=(1, 1, 1), block=(1, 1, 1), args=[t, 2]),
            "_8_args": lambda: k8(grid=(1, 1, 1), block=(1, 1, 1), args=a8),
            "_16_args": launch16}, s.synchronize, n, repeats)
    out["torch_array_arg"] = out["torch"]  # the 2-argument launch passes a tensor already

    def graph():
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured, stream=s):
            for _ in range(GRAPH_LAUNCHES):
                k2(grid=(1, 1, 1), block=(1, 1, 1), args=[t, 2])
        return captured.replay  # on the current stream: s, below

    with torch.cuda.stream(s):
        out.update(graph_figure("torch", graph, s.synchronize, n, repeats))
    return out


def build_c(source: str, exe: str) -> None:
    """Build ``bench/<source>`` into ``exe``: gcc with the toolkit's cuda.h and -ldl, else nvcc.
    Raises subprocess.CalledProcessError or OSError."""
    src = os.path.join(ROOT, "bench", source)
    include = os.environ.get("CUDA_HOME", "/usr/local/cuda") + "/include"
    if not os.path.exists(os.path.join(include, "cuda.h")):  # a pip-only machine: the wheel's
        try:
            from cuda.pathfinder import find_nvidia_header_directory

            found = find_nvidia_header_directory("cudart")
            if found and os.path.exists(os.path.join(found, "cuda.h")):
                include = found
        except Exception:  # noqa: BLE001 - then nvcc below, or the build fails and says why
            pass
    cmd = [shutil.which("gcc") or shutil.which("cc") or "cc", "-O2", "-o", exe, src,
           f"-I{include}", "-ldl"]
    if not os.path.exists(os.path.join(include, "cuda.h")) and shutil.which("nvcc"):
        cmd = ["nvcc", "-O2", "-o", exe, src, "-ldl"]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)


def run_c(n, repeats, cubin, mode):
    exe = os.path.join(os.path.dirname(cubin), "launch_c")
    if not os.path.exists(exe):
        build_c("launch_c.c", exe)
    out = subprocess.run([exe, cubin, mode, str(n), str(repeats)], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"launch_c {mode} exited {out.returncode}: {out.stderr.strip()}")
    return {C_MODES[mode]: json.loads(out.stdout)["seconds_per_kernel"]}


def run_prepare(cubin):
    import cudaload

    obj = cudaload.Program(EMPTY).compile(output="cubin")
    with open(cubin, "wb") as f:
        f.write(obj.code)
    dev = cudaload.Device(0)
    return {"gpu": dev.name, "arch": obj.arch,
            "driver": cudaload.bindings.driver.format_version(cudaload.bindings.driver.version())}


def run_memory(kind):
    """Device memory in use (cuMemGetInfo total - free) after a bare context, or after 10 kernels."""
    import cudaload
    from cudaload.launch.device import Device, activate

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
    fn = {"cudaload": lambda: run_cudaload(args.launches, args.repeats, fake=extra == ["fake"]),
          "cuda.core": lambda: run_cuda_core(args.launches, args.repeats),
          "cuda.bindings": lambda: run_cuda_bindings(args.launches, args.repeats, extra[0]),
          "cupy": lambda: run_cupy(args.launches, args.repeats),
          "torch": lambda: run_torch(args.launches, args.repeats),
          "c": lambda: run_c(args.launches, args.repeats, extra[0], extra[1]),
          "prepare": lambda: run_prepare(extra[0]),
          "memory": lambda: run_memory(extra[0])}[name]
    try:
        return fn()
    except ImportError as exc:  # not installed: said so in every figure, not counted as failed
        return dict.fromkeys(keys_of(args.one), f"not installed: {exc}")


def keys_of(one) -> list[str]:
    """The figures a child measures, so that one that fails early still reports every one."""
    if one[0] == "c":
        return [C_MODES[one[-1]]]
    if one[0] in FRAMEWORKS:
        keys = [one[0] + suffix for suffix in (*VARIANTS, GRAPH_SUFFIX)]
        if one[0] == "cudaload":
            keys += [f"cudaload{kind[1]}" for kind in KINDS] + [f"bare_cffi{kind[3]}" for kind in KINDS]
        if one[0] == "cuda.core":
            keys += [kind[4] for kind in KINDS]
        return list(dict.fromkeys(keys))
    return [one[0]]


def flatten_one(result: dict):
    for key, value in result.items():
        if isinstance(value, dict):
            yield from ((f"{key}.{k}", v) for k, v in value.items())
        else:
            yield key, value


def spawn(args, *one, env=None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--launches", str(args.launches),
           "--repeats", str(args.repeats), "--one", *one]
    env = dict(env or {})
    # The measured package: this checkout's, or the one --against names, before it
    path = [env.pop("PYTHONPATH")] if "PYTHONPATH" in env else []
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        path + [ROOT] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    full_env.update(env)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env,
                              timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return dict.fromkeys(keys_of(one), f"failed: timed out after {CHILD_TIMEOUT_S} s")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return dict.fromkeys(keys_of(one), "failed: " + " | ".join(tail))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def recording_driver(directory: str) -> str:
    """tests/_fakelibs.py's RECORDING_DRIVER, built with cc into ``directory`` (--fake): a libcuda
    whose cuLaunchKernelEx records the launch instead of running it.  Read from the file rather
    than imported, which would need pytest.  Raises OSError, subprocess.CalledProcessError."""
    with open(os.path.join(ROOT, "tests", "_fakelibs.py")) as f:
        tree = ast.parse(f.read())
    source = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                  and getattr(node.targets[0], "id", "") == "RECORDING_DRIVER")
    src, lib = os.path.join(directory, "recording.c"), os.path.join(directory, "libcuda.so.1")
    with open(src, "w") as f:
        f.write(source)
    cc = shutil.which("cc") or shutil.which("gcc") or "cc"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib, src], check=True, capture_output=True)
    return lib


def medians(rounds: dict) -> tuple[dict, dict, dict]:
    """(seconds per figure, the breakdown's, the paired figures) as the median of the rounds that
    measured them."""
    seconds, breakdown, pairs = {}, {}, {}
    for key, values in rounds.items():
        numbers = [v for v in values if isinstance(v, float)]
        value = statistics.median(numbers) if numbers else values[-1]
        if key.startswith("breakdown."):
            breakdown[key.split(".", 1)[1]] = value
        elif key.startswith("paired."):
            pairs[key.split(".", 1)[1]] = value
        else:
            seconds[key] = value
    return seconds, breakdown, pairs


def floor(us: dict, pairs: dict | None = None) -> dict:
    """Per argument kind: cudaload, the bare cffi call with the same configuration and buffer,
    cuda.core and C (µs, each the median of its separately timed figures), cudaload's ratios to
    the first two and whether they meet the targets.  Where ``pairs`` (paired()'s figures) has a
    ratio, it is the verdict's (``over_*``, "paired": true) and the ratio of the separate medians
    is kept as ``over_*_separate``."""
    pairs = pairs or {}
    out = {}
    for label, suffix, _kernel, bare, core in KINDS:
        row = {"cudaload_us": us.get("cudaload" + suffix), "bare_cffi_us": us.get("bare_cffi" + bare),
               "cuda_core_us": us.get(core), "c_us": us.get("c" + bare)}
        cl = row["cudaload_us"]
        if isinstance(cl, float) and isinstance(row["bare_cffi_us"], float):
            # what carries over from the recording driver to a GPU: the Python above the call
            row["overhead_us"] = round(cl - row["bare_cffi_us"], 3)
        for name, key, target in (("bare_cffi", "bare_cffi_us", FLOOR_BARE),
                                  ("cuda_core", "cuda_core_us", FLOOR_CUDA_CORE)):
            separate = cl / row[key] if isinstance(cl, float) and isinstance(row[key], float) \
                else None
            ratio = pairs.get(f"{label}.over_{name}")
            if isinstance(ratio, float):
                row[f"over_{name}"], row[f"over_{name}_paired"] = round(ratio, 3), True
                if separate is not None:
                    row[f"over_{name}_separate"] = round(separate, 3)
            elif separate is not None:
                row[f"over_{name}"], row[f"over_{name}_paired"] = round(separate, 3), False
            if f"over_{name}" in row:
                row[f"meets_{name}_target"] = row[f"over_{name}"] <= target
        ratio = pairs.get(f"{label}.floor_over_bare_cffi")
        if isinstance(ratio, float):
            row["python_floor_over_bare_cffi"] = round(ratio, 3)
        for who in ("cudaload", "bare_cffi", "cuda_core", "python_floor"):
            value = pairs.get(f"{label}.{who}_s")
            if isinstance(value, float):
                row[f"paired_{who}_us"] = round(value * 1e6, 3)
        if f"{label}.cuda_core_why_not" in pairs:
            row["paired_cuda_core_why_not"] = pairs[f"{label}.cuda_core_why_not"]
        out[label] = row
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here as well as to stdout")
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3,
                        help="run every API this many times, interleaved; report the median round "
                             "(a shared host drifts by 20%% within a minute)")
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--fake", action="store_true",
                        help="no GPU: cudaload and its bare cffi call onto a driver that records "
                             "launches (tests/_fakelibs.py), which measures the Python overhead")
    parser.add_argument("--against", metavar="PATH",
                        help="also measure the cudaload package under PATH (another checkout), "
                             "in the same run, as reference.* figures")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(child(args)))
        return 0
    tmp = tempfile.mkdtemp(prefix="cudaload-bench-")
    cubin = os.path.join(tmp, "empty.cubin")
    result = {"launches": args.launches, "repeats": args.repeats, "python": platform.python_version(),
              "rounds": 1 if args.quick else max(1, args.rounds), "fake_driver": args.fake}
    env = {}
    if args.fake:
        env["CUDALOAD_LIBCUDA"] = recording_driver(tmp)
        apis: tuple = (("cudaload", "fake"),)
    else:
        result.update(spawn(args, "prepare", cubin))
        apis = (*(("c", cubin, mode) for mode in C_MODES), ("cuda.core",),
                ("cuda.bindings", cubin), ("cupy",), ("torch",), ("cudaload",))
    rounds: dict[str, list] = {}
    reference: dict[str, list] = {}
    for _ in range(1 if args.quick else max(1, args.rounds)):
        for one in apis:
            for key, value in flatten_one(spawn(args, *one, env=env)):
                rounds.setdefault(key, []).append(value)
            if args.against and one[0] == "cudaload":
                found = spawn(args, *one, env=dict(env, PYTHONPATH=os.path.abspath(args.against)))
                for key, value in flatten_one(found):
                    reference.setdefault(key, []).append(value)
    seconds, breakdown, pairs = medians(rounds)
    if not args.fake:
        seconds["c_array_arg"] = RAW_POINTERS_ONLY
    us = {k: (round(v * 1e6, 3) if isinstance(v, float) else v) for k, v in seconds.items()}
    result["us_per_launch"] = us
    result["cudaload_breakdown_us"] = {k: round(v * 1e6, 3) if isinstance(v, float) else v
                                       for k, v in breakdown.items()}
    result["floor"] = floor(us, pairs)
    if args.against:
        ref_seconds, _ref_breakdown, ref_pairs = medians(reference)
        ref = {k: (round(v * 1e6, 3) if isinstance(v, float) else v)
               for k, v in ref_seconds.items()}
        result["reference"] = {"path": os.path.abspath(args.against), "us_per_launch": ref,
                               "floor": floor(ref, ref_pairs)}
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
    if not args.fake:
        result["gpu_memory"] = gpu_memory(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def gpu_memory(args) -> dict:
    """Device memory of a bare context and after 10 kernels, per module loading mode."""
    memory = {}
    for mode in ("EAGER", "LAZY"):
        env = {"CUDA_MODULE_LOADING": mode}
        bare = spawn(args, "memory", "bare", env=env).get("used_bytes")
        used = spawn(args, "memory", "kernels", env=env).get("used_bytes")
        memory[mode] = {"bare_context_mib": bare and round(bare / 2 ** 20, 1),
                        "ten_kernels_mib": used and round(used / 2 ** 20, 1),
                        "extra_mib": (bare and used) and round((used - bare) / 2 ** 20, 1)}
    return memory


if __name__ == "__main__":
    sys.exit(main())
