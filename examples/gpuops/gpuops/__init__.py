"""gpuops: array operations on the GPU through cudaload, with a numpy fallback.

``add``, ``mul``, ``axpy``, ``relu``, ``sum`` and ``softmax`` (over the last axis) for float16,
float32 and float64 arrays:

- device arrays (CuPy, PyTorch CUDA tensors, anything with ``__cuda_array_interface__``, and
  ``cudaload.DeviceBuffer`` with ``dtype=``) are computed on the device, on the array library's
  current stream (or ``stream=``), into a new array of the same library (a ``DeviceBuffer`` for
  the others) or into ``out=``; nothing is copied through the host;
- numpy arrays are copied to the GPU and back when CUDA is available, and computed with numpy
  when it is not (one ``GpuopsWarning`` says so, with cudaload's reason).

Kernels are compiled on first use through cudaload's cache, or come precompiled from the bundle
shipped in the package (see ``gpuops._kernels``).
"""

from __future__ import annotations

import threading
import warnings

__version__ = "0.1.0"
__all__ = ["add", "mul", "axpy", "relu", "sum", "softmax", "backend", "loaded_kernels",
           "GpuopsWarning"]


class GpuopsWarning(UserWarning):
    """gpuops computes with numpy because CUDA is not available."""


_lock = threading.RLock()  # _fall_back may run under it, from backend()
_backend: tuple[str, str] | None = None  # ("cuda" | "numpy", reason)


def backend() -> tuple[str, str]:
    """("cuda", device description) or ("numpy", why CUDA is not available)."""
    if _backend is None:
        with _lock:
            if _backend is None:
                import cudaload

                try:
                    dev = cudaload.Device(0)
                    _use(("cuda", f"{dev.name} (sm_{dev.arch})"))
                except cudaload.CudaUnavailableError as err:
                    # The error's own reason, not cudaload.status(): the full report also probes
                    # NVRTC, which would map 140 MB to explain why it is not used.
                    _fall_back(err, stacklevel=4)
    return _backend


def _use(choice: tuple[str, str]) -> None:
    global _backend
    _backend = choice


def _fall_back(err: Exception, stacklevel: int) -> None:
    """From now on compute with numpy, saying why once; ``stacklevel`` counts from the caller."""
    with _lock:
        if _backend is not None and _backend[0] == "numpy":
            return
        _use(("numpy", str(err)))
    warnings.warn(f"gpuops: CUDA is not available ({err}); computing with numpy on the CPU. "
                  "Run `cudaload doctor` for details.", GpuopsWarning, stacklevel=stacklevel + 1)


def loaded_kernels() -> list[dict]:
    """The kernels loaded so far and where their code came from (bundle, disk, memory, compiled)."""
    from . import _kernels

    return _kernels.loaded()


def add(x, y, *, out=None, dtype=None, stream=None):
    """``x + y`` elementwise.  Raises ValueError (shapes differ), TypeError (dtype)."""
    return _dispatch("add", (x, y), out, dtype, stream)


def mul(x, y, *, out=None, dtype=None, stream=None):
    """``x * y`` elementwise.  Raises ValueError (shapes differ), TypeError (dtype)."""
    return _dispatch("mul", (x, y), out, dtype, stream)


def axpy(a, x, y, *, out=None, dtype=None, stream=None):
    """``a * x + y`` for a scalar ``a``, rounded once.  Raises ValueError, TypeError."""
    return _dispatch("axpy", (x, y), out, dtype, stream, scalars=(float(a),))


def relu(x, *, out=None, dtype=None, stream=None):
    """``max(x, 0)`` elementwise (NaN stays NaN).  Raises TypeError for other dtypes."""
    return _dispatch("relu", (x,), out, dtype, stream)


def sum(x, *, out=None, dtype=None, stream=None):  # noqa: A001 - numpy's name for it
    """The sum of all elements (float16 accumulated in float32): a 0-d device array for CuPy and
    PyTorch, a one-element DeviceBuffer for other device inputs, a numpy scalar for numpy input."""
    return _dispatch("sum", (x,), out, dtype, stream)


def softmax(x, *, out=None, dtype=None, stream=None):
    """Softmax over the last axis (each row of a matrix).  Raises ValueError for a 0-d array."""
    return _dispatch("softmax", (x,), out, dtype, stream)


def _dispatch(op, arrays, out, dtype, stream, scalars=()):
    from . import _arrays

    on_device = [_arrays.is_device(a) for a in arrays]
    if all(on_device):
        return _on_device(op, [_arrays.DeviceArray(a, dtype) for a in arrays], out, stream,
                          scalars)
    if any(on_device):
        raise TypeError(f"{op}: mix of device and host arrays; copy them to one side first")
    import numpy as np

    hosts = [np.asarray(a, dtype=dtype) for a in arrays]
    for h in hosts:
        _arrays.supported(h.dtype)
    _arrays.same_operands(op, [(h.shape, h.dtype) for h in hosts])
    value = None
    if backend()[0] == "cuda":
        import cudaload

        try:
            value = _through_device(op, hosts, stream, scalars)
        except cudaload.CudaUnavailableError as err:  # e.g. in a child forked after CUDA's use
            _fall_back(err, stacklevel=3)
    if value is None:
        from . import _host

        value = getattr(_host, op)(*scalars, *hosts)
    if out is not None:
        np.copyto(out, value)
        return out
    return value


def _through_device(op, hosts, stream, scalars):
    """``op`` on host arrays, computed on the GPU: copied there and back."""
    import numpy as np

    from . import _device

    # Copies in the order of the caller's stream: on another stream than the kernels, the
    # download could read before they finish.
    result = _on_device(op, [_device.upload(h, stream) for h in hosts], None, stream, scalars)
    value = _device.download(result, np.shape(hosts[0]) if op != "sum" else (), hosts[0].dtype,
                             stream)
    return value[()] if op == "sum" else value


def _on_device(op, arrays, out, stream, scalars):
    from . import _device

    if op == "sum":
        return _device.total(arrays[0], out, stream)
    if op == "softmax":
        return _device.softmax(arrays[0], out, stream)
    return _device.elementwise(op, arrays, out, stream, scalars)
