"""Array arguments: where they live, their layout, and new arrays of the same kind.

A device array is anything with ``__cuda_array_interface__`` (CuPy, PyTorch CUDA tensors, Numba,
``cudaload.DeviceBuffer``); everything else is a host array for numpy.  Results are allocated by
the library the input came from (CuPy arrays for CuPy inputs, tensors for tensors) so they stay on
the device; other device inputs get a ``cudaload.DeviceBuffer``.
"""

from __future__ import annotations

import numpy as np

# element type -> (C++ type, accumulator C++ type, accumulator numpy type)
DTYPES = {
    np.dtype(np.float16): ("__half", "float", np.dtype(np.float32)),
    np.dtype(np.float32): ("float", "float", np.dtype(np.float32)),
    np.dtype(np.float64): ("double", "double", np.dtype(np.float64)),
}


def supported(dtype) -> np.dtype:
    """``dtype`` as a numpy dtype gpuops computes in.  Raises TypeError for any other."""
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise TypeError(f"gpuops computes in float16, float32 and float64, not {dt}; "
                        "convert the array first (e.g. x.astype('float32'))")
    return dt


class DeviceArray:
    """A device operand: address, shape, dtype and the object it came from."""

    __slots__ = ("obj", "ptr", "shape", "dtype", "family", "readonly")

    def __init__(self, obj, dtype=None):
        cai = obj.__cuda_array_interface__
        shape = tuple(int(n) for n in cai["shape"])
        found = np.dtype(cai["typestr"])
        strides = cai.get("strides")
        if strides is not None and tuple(strides) != _c_strides(shape, found.itemsize):
            raise ValueError("gpuops needs C-contiguous arrays; make a contiguous copy first "
                             "(cupy.ascontiguousarray(x), x.contiguous())")
        untyped = type(obj).__module__.split(".")[0] == "cudaload"  # a DeviceBuffer: bytes
        if untyped and found.itemsize == 1 and dtype is not None:
            # the caller's dtype says what the bytes hold; a typed array (CuPy int8) is not
            # reinterpreted
            want = supported(dtype)
            nbytes = int(np.prod(shape))
            if nbytes % want.itemsize:
                raise ValueError(f"{nbytes} bytes do not hold a whole number of {want} values")
            found, shape = want, (nbytes // want.itemsize,)
        elif untyped and found.itemsize == 1:
            raise TypeError(f"{type(obj).__name__} holds untyped bytes: pass dtype= "
                            "('float16', 'float32' or 'float64') to say what they are")
        else:
            supported(found)
            if dtype is not None and np.dtype(dtype) != found:
                raise TypeError(f"the array holds {found}, but dtype={np.dtype(dtype)} was given")
        self.obj, self.ptr, self.shape, self.dtype = obj, int(cai["data"][0]), shape, found
        self.readonly = bool(cai["data"][1])
        module = type(obj).__module__.split(".")[0]
        self.family = module if module in ("cupy", "torch") else "cudaload"

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def empty(self, shape, dtype):
        """A new device array of ``shape`` and ``dtype`` from this array's library."""
        dtype = np.dtype(dtype)
        if self.family == "cupy":
            import cupy

            with self.obj.device:
                return cupy.empty(shape, dtype=dtype)
        if self.family == "torch":
            import torch

            return torch.empty(shape, dtype=getattr(torch, dtype.name), device=self.obj.device)
        import cudaload

        return cudaload.alloc(int(np.prod(shape)) * dtype.itemsize)

    def stream(self):
        """The stream work on this array is ordered on: the library's current one."""
        if self.family == "cupy":
            import cupy

            with self.obj.device:
                return cupy.cuda.get_current_stream().ptr
        if self.family == "torch":
            import torch

            return torch.cuda.current_stream(self.obj.device).cuda_stream
        return None  # the legacy default stream, as cudaload.DeviceBuffer copies use


def same_operands(op: str, operands) -> None:
    """Raises ValueError unless the (shape, dtype) ``operands`` agree: gpuops does not broadcast
    or promote, on the GPU or in its numpy fallback alike."""
    first = operands[0]
    for other in operands[1:]:
        if tuple(other[0]) != tuple(first[0]) or other[1] != first[1]:
            raise ValueError(f"{op}: operands differ: {tuple(first[0])} {first[1]} and "
                             f"{tuple(other[0])} {other[1]} (gpuops does not broadcast)")


def is_device(obj) -> bool:
    """Whether ``obj`` is device memory (it has ``__cuda_array_interface__``)."""
    return hasattr(obj, "__cuda_array_interface__")


def check_out(out: DeviceArray, shape, dtype) -> None:
    """Raises ValueError/TypeError when ``out`` cannot take a result of ``shape`` and ``dtype``."""
    if out.readonly:
        raise ValueError("out= is read-only")
    if out.dtype != dtype:
        raise TypeError(f"out= holds {out.dtype}, the result is {dtype}")
    if out.size != int(np.prod(shape)):
        raise ValueError(f"out= has {out.size} elements, the result has {int(np.prod(shape))}")


def _c_strides(shape, itemsize) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))
