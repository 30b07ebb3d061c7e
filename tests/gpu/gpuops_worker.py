"""Runs every gpuops operation for every dtype on the inputs of the families named on the command
line and compares each result with numpy; prints one JSON report.  Run by test_example_gpuops.py
in a fresh process per scenario (cold cache, warm cache, bundle with NVRTC hidden).

usage: gpuops_worker.py [--hide-nvrtc] FAMILY...   (numpy cudaload cai cupy torch)
"""

from __future__ import annotations

import json
import sys

if "--hide-nvrtc" in sys.argv:
    class _Hidden:  # the NVRTC wheel and cuda.pathfinder cannot be imported in this process
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "nvidia" or name.startswith("cuda.pathfinder"):
                raise ImportError(f"{name} is hidden by the test")

    sys.meta_path.insert(0, _Hidden())

import numpy as np  # noqa: E402

import cudaload  # noqa: E402
import gpuops  # noqa: E402
import tests.scenarios.compile_log  # noqa: E402,F401  (counts compilations for the test)

DTYPES = (np.float16, np.float32, np.float64)
# dtype -> (relative tolerance, absolute tolerance near 0, accumulation error per unit of sum |x|)
TOL = {np.float16: (2e-3, 1e-6, 1e-6), np.float32: (1e-5, 1e-9, 1e-6),
       np.float64: (1e-12, 1e-15, 1e-13)}


class Cai:
    """A minimal foreign device array: typed __cuda_array_interface__ over a DeviceBuffer."""

    def __init__(self, buf, shape, dtype):
        self.buf = buf
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str,
                                         "data": (buf.ptr, False), "version": 3,
                                         "strides": None, "stream": None}


def to_host_buffer(buf, shape, dtype):
    host = np.empty(int(np.prod(shape)), dtype)
    if host.nbytes:
        buf.copy_to_host(host)
    return host.reshape(shape)


def family(name):
    """(upload(array) -> (device object, kwargs), download(result, shape, dtype) -> numpy)."""
    if name == "numpy":
        return (lambda a: (a, {})), (lambda r, shape, dt: np.asarray(r).reshape(shape))
    if name in ("cudaload", "cai"):
        def up(a):
            buf = cudaload.alloc(a.nbytes)
            if a.nbytes:
                buf.copy_from_host(np.ascontiguousarray(a))
            if name == "cai":
                return Cai(buf, a.shape, a.dtype), {}
            return buf, {"dtype": a.dtype}
        return up, (lambda r, shape, dt: to_host_buffer(r, shape, dt))
    if name == "cupy":
        import cupy

        return (lambda a: (cupy.asarray(a), {})), \
            (lambda r, shape, dt: cupy.asnumpy(r).reshape(shape))
    if name == "torch":
        import torch

        return (lambda a: (torch.from_numpy(np.ascontiguousarray(a)).cuda(), {})), \
            (lambda r, shape, dt: r.cpu().numpy().reshape(shape))
    raise ValueError(name)


def reference(op, a, x, y):
    wide = x.astype(np.float64)
    if op == "add":
        return np.add(x, y)
    if op == "mul":
        return np.multiply(x, y)
    if op == "relu":
        return np.maximum(x, x.dtype.type(0))
    if op == "axpy":
        return (np.float64(x.dtype.type(a)) * wide + y).astype(x.dtype)
    if op == "sum":
        return np.asarray(wide.sum())
    e = np.exp(wide - wide.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


SHAPES = ((100_003,), (1,), (0,), (37, 1000), (5, 3), (2, 4097))


def run_family(name, failures, counts):
    up, down = family(name)
    rng = np.random.default_rng(7)
    for dtype in DTYPES:
        for shape in SHAPES:
            x = rng.uniform(-2, 2, shape).astype(dtype)
            y = rng.uniform(-2, 2, shape).astype(dtype)
            dx, kw = up(x)
            dy, _ = up(y)
            for op in ("add", "mul", "axpy", "relu", "sum", "softmax"):
                if op == "softmax" and len(shape) == 1 and shape[0] == 0:
                    continue
                args = {"add": (dx, dy), "mul": (dx, dy), "axpy": (1.5, dx, dy),
                        "relu": (dx,), "sum": (dx,), "softmax": (dx,)}[op]
                got = getattr(gpuops, op)(*args, **kw)
                out_shape = () if op == "sum" else shape
                got = down(got, out_shape, dtype)
                if op == "softmax" and name == "cudaload":
                    # A DeviceBuffer carries a dtype but no shape: it is one row of x.size.
                    want = reference(op, 1.5, x.reshape(-1), y.reshape(-1)).reshape(shape)
                else:
                    want = reference(op, 1.5, x, y)
                counts[name] = counts.get(name, 0) + 1
                if got.dtype != np.dtype(dtype) or got.shape != want.shape:
                    failures.append(f"{name} {op} {np.dtype(dtype)} {shape}: got "
                                    f"{got.dtype}{got.shape}, want {np.dtype(dtype)}{want.shape}")
                    continue
                rtol, atol, acc_eps = TOL[dtype]
                if op in ("add", "mul", "relu"):  # one rounding, as numpy does: bit for bit
                    rtol = atol = 0
                elif op == "sum":
                    atol = acc_eps * float(np.abs(x.astype(np.float64)).sum())
                elif op == "axpy":  # where a*x and y cancel, the error is relative to them
                    atol = rtol * (1.5 * np.abs(x.astype(np.float64)) + np.abs(y))
                g64, w64 = got.astype(np.float64), want.astype(np.float64)
                if not np.allclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True):
                    bad = np.argmax(np.abs(g64 - w64) - atol - rtol * np.abs(w64))
                    failures.append(f"{name} {op} {np.dtype(dtype)} {shape}: at {bad}: "
                                    f"{got.ravel()[bad]!r} != {want.ravel()[bad]!r}")


def on_stream(name, body):
    """Run ``body`` on a non-default stream of CuPy/PyTorch: gpuops must follow it."""
    if name == "cupy":
        import cupy

        with cupy.cuda.Stream(non_blocking=True):
            body()
    elif name == "torch":
        import torch

        with torch.cuda.stream(torch.cuda.Stream()):
            body()
    else:
        body()


def main():
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    failures, counts = [], {}
    for name in names:
        on_stream(name, lambda: run_family(name, failures, counts))
    from cudaload.bindings import _loader

    with open("/proc/self/maps") as f:
        maps = f.read()
    print(json.dumps({
        "failures": failures, "checks": counts, "loaded": gpuops.loaded_kernels(),
        "nvrtc_loaded_by_cudaload": _loader.loaded("nvrtc") is not None,
        "nvrtc_mapped": "libnvrtc" in maps,
        "pathfinder_imported": any(m.startswith("cuda.pathfinder") for m in sys.modules),
        "arch": cudaload.Device(0).arch,
    }))


if __name__ == "__main__":
    main()
