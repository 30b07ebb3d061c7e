"""Device addresses of kernel arguments, by where they come from: a ``DeviceBuffer``, a CuPy or
PyTorch array, the CUDA Array Interface, DLPack.  Each source is a test of the argument's type and
a conversion of one value to its address, which checks the value's device (``arguments.Packer``
packs the address).
"""

from __future__ import annotations

import operator

from ._foreign import (dlpack_pointer as _dlpack_pointer, interface_problem as _interface_problem,
                       other_device as _other_device, pointer_device as _pointer_device)

__all__ = ["HOST_HINT", "Inline", "conversion"]

HOST_HINT = ("it is host memory, but the kernel needs device memory: copy it with "
             "cudaload.alloc(n).copy_from_host(a), or pass a CuPy/PyTorch CUDA array")


def conversion(tp, fail, p, device: int):
    """The conversion of a ``tp`` argument for parameter ``p`` to its address on device number
    ``device``, raising ``fail(p, value, why)``; None when ``tp`` comes from no source here."""
    for holds, convert in _SOURCES:
        if holds(tp):
            return convert(fail, p, device)
    return None


class Inline:
    """A conversion the generated packer writes inline: an expression and a guard; ``call`` is
    the same conversion as a function, which raises the precise error when the guard fails."""

    __slots__ = ("expr", "guard", "call")

    def __init__(self, expr, guard, call):
        self.expr, self.guard, self.call = expr, guard, call

    def __call__(self, value):
        return self.call(value)


def _is_device_buffer(tp) -> bool:
    from .memory import DeviceBuffer  # deferred: only this path needs it

    return issubclass(tp, DeviceBuffer)


def _from_device_buffer(fail, p, device):
    def from_buffer(value):
        if not value.ptr:
            raise fail(p, value, "the buffer was freed (DeviceBuffer.free()); pass a live one")
        if value.device.ordinal != device:
            raise fail(p, value, _other_device(value.device.ordinal, device))
        return value.ptr
    return Inline("{a}.ptr", "{a}.ptr and {a}.device.ordinal == D", from_buffer)


def _is_cupy(tp) -> bool:
    return tp.__module__.split(".")[0] == "cupy" and hasattr(tp, "data") \
        and hasattr(tp, "__cuda_array_interface__")


def _from_cupy(fail, p, device):
    def from_cupy(value):
        mem = value.data
        if mem.device_id != device:
            raise fail(p, value, _other_device(mem.device_id, device))
        return mem.ptr
    return Inline("{a}.data.ptr", "{a}.data.device_id == D", from_cupy)


def _is_torch(tp) -> bool:
    return tp.__module__.split(".")[0] == "torch" and hasattr(tp, "data_ptr")


def _from_torch(fail, p, device):
    def from_torch(value):
        index = value.get_device()
        if index != device:
            raise fail(p, value, HOST_HINT if index < 0 else _other_device(index, device))
        return value.data_ptr()
    return Inline("{a}.data_ptr()", "{a}.get_device() == D", from_torch)


def _has_interface(tp) -> bool:
    return hasattr(tp, "__cuda_array_interface__")


def _from_interface(fail, p, device):
    def from_cai(value):
        cai = value.__cuda_array_interface__
        try:
            ptr, shape = cai["data"][0], cai["shape"]
            # Only the pointer is used: the rest is checked in kind, not item by item, to keep a
            # launch with arrays cheap.
            valid = type(ptr) is int and type(cai["typestr"]) is str and type(shape) is tuple
        except (KeyError, TypeError, IndexError):
            valid = False
        if not valid:  # say what is wrong, or take what is right but unusual
            problem = _interface_problem(cai)
            if problem:
                raise fail(p, value, problem)
            ptr = operator.index(cai["data"][0])
        where = _pointer_device(ptr)
        if where is not None and where != device:
            raise fail(p, value, _other_device(where, device) if where >= 0 else HOST_HINT)
        return ptr
    return from_cai


def _has_dlpack(tp) -> bool:
    return hasattr(tp, "__dlpack__") and hasattr(tp, "__dlpack_device__")


def _from_dlpack(fail, p, device):
    def from_dlpack(value):
        kind, index = value.__dlpack_device__()
        if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
            raise fail(p, value, HOST_HINT)
        if index != device:
            raise fail(p, value, _other_device(index, device))
        return _dlpack_pointer(value)
    return from_dlpack


# The first that holds wins: a CuPy or PyTorch array also has the interface, but the generated
# packer reads its own attributes inline, for less than building and reading the interface's dict.
_SOURCES = ((_is_device_buffer, _from_device_buffer), (_is_cupy, _from_cupy),
            (_is_torch, _from_torch), (_has_interface, _from_interface),
            (_has_dlpack, _from_dlpack))
