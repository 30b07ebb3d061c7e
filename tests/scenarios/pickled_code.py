"""Compiled code sent to other processes, and objects holding GPU state refusing to go, each in a
fresh process.

    python -m tests.scenarios.pickled_code SCENARIO ARGS...

Each scenario prints what it saw as JSON on the last line.  cudaload is imported inside the
scenarios (and the workers), so importing this module loads nothing.
"""

from __future__ import annotations

import base64
import json
import sys

TEMPLATE = r"""
template <typename T> __global__ void scale(T *x, T factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * factor;
}
extern "C" __global__ void plain(float *x, int n) { if (n) x[0] = 1.0f; }
"""
_HEAVY = ("_cffi_backend", "cudaload.bindings.driver", "cudaload.bindings.nvrtc",
          "cudaload.launch", "cuda.pathfinder")


def mapped() -> list:
    """The CUDA libraries this process has mapped (libcuda*, libnvrtc*)."""
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "libcuda" in line or "libnvrtc" in line})


def describe(obj) -> dict:
    """What an unpickled ObjectCode holds, and what rebuilding it loaded: run in the receiver."""
    return {"code": base64.b64encode(obj.code).decode(), "kind": obj.kind, "arch": obj.arch,
            "log": obj.log, "lowered_names": obj.lowered_names, "source": obj.source,
            "cached": obj.cached, "origin": obj.origin is not None,
            "type": type(obj).__module__ + "." + type(obj).__qualname__,
            "mapped": mapped(), "modules": [m for m in _HEAVY if m in sys.modules]}


def echo(obj):
    """``obj`` as received, sent back (pickled again by the worker)."""
    return obj


def _put(queue, obj) -> None:
    queue.put(describe(obj))


def _compiled():
    from cudaload import Program

    obj = Program(TEMPLATE, name_expressions=["scale<float>"]).compile(arch="sm_80")
    return obj


def unpickle(path: str) -> dict:
    """Unpickle the bytes in ``path`` in this fresh process and describe the result."""
    import pickle

    with open(path, "rb") as f:
        obj = pickle.load(f)
    return describe(obj)


def dump(path: str) -> dict:
    """Compile TEMPLATE (real NVRTC), pickle the ObjectCode into ``path``, describe the original."""
    import pickle

    obj = _compiled()
    with open(path, "wb") as f:
        pickle.dump(obj, f)
    return describe(obj)


def pools() -> dict:
    """The compiled code sent to spawned workers (a ProcessPoolExecutor, a multiprocessing Pool,
    a Process through a Queue), described there, and sent back."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tests.scenarios import pickled_code as me  # workers import the module by this name

    obj = _compiled()
    ctx = multiprocessing.get_context("spawn")
    out = {"sent": describe(obj)}
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        out["executor"] = pool.submit(me.describe, obj).result(timeout=120)
        back = pool.submit(me.echo, obj).result(timeout=120)
    with ctx.Pool(1) as pool:
        out["pool"] = pool.apply(me.describe, (obj,))
    queue = ctx.Queue()
    proc = ctx.Process(target=me._put, args=(queue, obj))
    proc.start()
    out["process"] = queue.get(timeout=120)
    proc.join(120)
    out["back"] = describe(back)
    out["back_same_code"] = back.code == obj.code
    return out


def refusals() -> dict:
    """Pickling and copying each object that holds GPU state (recording driver): the error's
    type, whether it is a TypeError, its message; and a Kernel handed to a process pool."""
    import copy
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    import cudaload

    module = _compiled().load()
    stream = cudaload.Stream()
    objects = {
        "Module": module,
        "Kernel": module.get_kernel("plain"),
        "RawKernel": cudaload.RawKernel(TEMPLATE, "plain"),
        "DeviceBuffer": cudaload.alloc(16),
        "Stream": stream,
        "Event": cudaload.Event(),
    }
    with stream.capture() as graph:
        pass
    objects["Graph"] = graph
    out = {}
    for name, value in objects.items():
        seen = []
        for how in (pickle.dumps, copy.copy, copy.deepcopy):
            try:
                how(value)
                seen.append(None)
            except Exception as err:  # noqa: BLE001  (reported, whatever it is)
                seen.append([type(err).__name__, isinstance(err, TypeError), str(err),
                             getattr(err, "hint", None)])
        out[name] = seen
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        try:
            pool.submit(len, objects["Kernel"]).result(timeout=120)
            out["pool"] = None
        except Exception as err:  # noqa: BLE001
            out["pool"] = [type(err).__name__, str(err)]
    return out


SCENARIOS = {f.__name__: f for f in (unpickle, dump, pools, refusals)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:])))
