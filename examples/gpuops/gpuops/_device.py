"""Launching the kernels on device arrays; results are written on the device, never via the host."""

from __future__ import annotations

import numpy as np

from . import _kernels
from ._arrays import DTYPES, DeviceArray, check_out, same_operands

BLOCK = 256  # threads per block: a multiple of 32, as the block reductions need
MAX_GRID = 4096  # elementwise kernels loop over the rest (grid-stride)
MAX_PARTIALS = 1024  # blocks of the first pass of sum; the second pass adds them in one block

_pending: list = []  # (event, buffer): scratch memory kept until the work using it is done


def _grid(n: int, cap: int) -> int:
    return max(1, min((n + BLOCK - 1) // BLOCK, cap))


def result(first: DeviceArray, out, shape, dtype):
    """(object returned to the caller, its DeviceArray): ``out`` when given, else a new array."""
    if out is None:
        out = first.empty(shape, dtype)
    view = DeviceArray(out, dtype)
    check_out(view, shape, dtype)
    return out, view


def elementwise(op: str, arrays: list[DeviceArray], out, stream, scalars=()):
    """``op`` over same-shaped arrays, one output element per input element."""
    first = arrays[0]
    same_operands(op, [(a.shape, a.dtype) for a in arrays])
    ret, o = result(first, out, first.shape, first.dtype)
    n = first.size
    if n:
        (kernel,) = _kernels.kernels(op, first.dtype)
        kernel(_grid(n, MAX_GRID), BLOCK, (*scalars, *(a.ptr for a in arrays), o.ptr, n),
               stream=_stream(first, stream))
    return ret


def total(x: DeviceArray, out, stream):
    """The sum of all elements, as a one-element device array (0-d for CuPy and PyTorch)."""
    ret, o = result(x, out, (), x.dtype)
    acc = DTYPES[x.dtype][2]
    blocks = _grid(x.size, MAX_PARTIALS)
    partials = x.empty((blocks,), acc)
    first_pass, second_pass = _kernels.kernels("sum", x.dtype)
    s = _stream(x, stream)
    ptr = partials.__cuda_array_interface__["data"][0]
    first_pass(blocks, BLOCK, (x.ptr, ptr, x.size), stream=s)
    second_pass(1, BLOCK, (ptr, o.ptr, blocks), stream=s)
    if x.family == "cudaload":
        _keep_until_done(partials, s)  # CuPy and PyTorch allocators order reuse by stream
    return ret


def softmax(x: DeviceArray, out, stream):
    """Softmax over the last axis of ``x``, one block per row."""
    if not x.shape:
        raise ValueError("softmax needs at least one dimension")
    ret, o = result(x, out, x.shape, x.dtype)
    cols = x.shape[-1]
    rows = x.size // cols if cols else 0
    if rows >= 2 ** 31:
        raise ValueError(f"softmax: {rows} rows is more than one launch can take (2**31 - 1)")
    if rows:
        (kernel,) = _kernels.kernels("softmax", x.dtype)
        kernel(rows, BLOCK, (x.ptr, o.ptr, cols), stream=_stream(x, stream))
    return ret


def _stream(first: DeviceArray, stream):
    return first.stream() if stream is None else stream


def _keep_until_done(buffer, stream) -> None:
    import cudaload

    _pending[:] = [(e, b) for e, b in _pending if not e.query()]
    event = cudaload.Event(timing=False)
    event.record(stream)
    _pending.append((event, buffer))


def upload(array: np.ndarray, stream=None) -> DeviceArray:
    """A host array copied into new device memory (for numpy inputs when CUDA is available), in
    ``stream``'s order, so the kernels launched there after it see the data."""
    import cudaload

    array = np.ascontiguousarray(array)
    buf = cudaload.alloc(array.nbytes)
    if array.nbytes:
        buf.copy_from_host(array, stream=stream)
    view = DeviceArray(buf, array.dtype)
    view.shape = array.shape
    return view


def download(obj, shape, dtype, stream=None) -> np.ndarray:
    """The contents of the cudaload buffer ``obj`` as a new numpy array, once the work queued on
    ``stream`` before it is done."""
    import cudaload

    host = np.empty(int(np.prod(shape)), dtype)  # 1-D: a 0-d array is no buffer for every API
    if host.nbytes:
        obj.copy_to_host(host, stream=stream)
    if stream is not None:
        cudaload.Stream.from_handle(stream).synchronize()
    return host.reshape(shape)
