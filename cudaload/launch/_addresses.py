"""Device addresses of kernel arguments, by where they come from: a ``DeviceBuffer``, a
``HostBuffer``, an ``ArrayView``, a CuPy or PyTorch array, the CUDA Array Interface, a host array, DLPack.  Each
source is a test of the argument's type and a conversion of one value to its address, which checks
the value's device, or for host memory that the driver maps it for kernels (``arguments.Packer``
packs the address).
"""

from __future__ import annotations

import operator

from ._foreign import (HOST_HINT, dlpack_pointer as _dlpack_pointer, host_address as _host_address,
                       interface_problem as _interface_problem, mapped_pointer as _mapped_pointer,
                       other_device as _other_device, pointer_device as _pointer_device)

__all__ = ["Inline", "conversion"]

_FREED = "the buffer was freed ({}.free()); pass a live one"


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
            raise fail(p, value, _FREED.format("DeviceBuffer"))
        if value.device.ordinal != device:
            raise fail(p, value, _other_device(value.device.ordinal, device))
        return value.ptr
    return Inline("{a}.ptr", "{a}.ptr and {a}.device.ordinal == D", from_buffer)


def _is_host_buffer(tp) -> bool:
    from .pinned import HostBuffer  # deferred: only this path needs it

    return issubclass(tp, HostBuffer)


def _from_host_buffer(fail, p, device):
    # No device to check: memory of cuMemHostAlloc is reachable from every context of every device
    # at its mapped address (CUDA's unified addressing), whichever device it was allocated for.
    def from_host_buffer(value):
        if not value.ptr:
            raise fail(p, value, _FREED.format("HostBuffer"))
        return value.ptr
    return Inline("{a}.ptr", "{a}.ptr", from_host_buffer)


def _reachable(fail, p, value, host) -> int:
    """The device address of the host memory at ``host`` (None: an address not known), which the
    driver maps where it is page-locked; refused where it is not."""
    mapped = None if host is None else _mapped_pointer(host)
    if mapped is None:
        raise fail(p, value, HOST_HINT)
    return mapped


def _is_view(tp) -> bool:
    from .view import ArrayView  # deferred: only this path needs it

    return issubclass(tp, ArrayView)


def _from_view(fail, p, device):
    # The view checked its memory when made; _where is -1 where any device reaches it (pinned
    # host memory at its mapped address).
    def from_view(value):
        if value._where not in (device, -1):
            raise fail(p, value, _other_device(value._where, device))
        return value.ptr
    return Inline("{a}.ptr", "{a}._where in (D, -1)", from_view)


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
    # A pinned CPU tensor (pin_memory()) is page-locked host memory, which kernels reach at its
    # host address under unified addressing: PyTorch's word on it (is_pinned) is taken, and asked
    # only of a tensor not on the launch's device.
    def from_torch(value):
        index = value.get_device()
        if index == device or value.is_pinned():
            return value.data_ptr()
        raise fail(p, value, HOST_HINT if index < 0 else _other_device(index, device))
    return Inline("{a}.data_ptr()", "({a}.get_device() == D or {a}.is_pinned())", from_torch)


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
            if where >= 0:
                raise fail(p, value, _other_device(where, device))
            return _reachable(fail, p, value, ptr)  # pinned host memory, mapped or not
        return ptr
    return from_cai


def _is_host_memory(tp) -> bool:
    return hasattr(tp, "__array_interface__") or hasattr(tp, "__buffer__") or issubclass(
        tp, (bytes, bytearray, memoryview))


def _from_host_memory(fail, p, device):
    def from_host(value):
        return _reachable(fail, p, value, _host_address(value))
    return from_host


def _has_dlpack(tp) -> bool:
    return hasattr(tp, "__dlpack__") and hasattr(tp, "__dlpack_device__")


def _from_dlpack(fail, p, device):
    def from_dlpack(value):
        kind, index = value.__dlpack_device__()
        if kind in (1, 3):  # kDLCPU, kDLCUDAHost: host memory, which the driver may map
            return _reachable(fail, p, value, _dlpack_pointer(value))
        if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
            raise fail(p, value, HOST_HINT)
        if index != device:
            raise fail(p, value, _other_device(index, device))
        return _dlpack_pointer(value)
    return from_dlpack


# The first that holds wins: a CuPy or PyTorch array, a HostBuffer or an ArrayView also has the
# interface, but the generated packer reads its own attributes inline, for less than building and
# reading the interface's dict; a NumPy array also has DLPack, but its interface gives the address
# without a capsule.
_SOURCES = ((_is_device_buffer, _from_device_buffer), (_is_host_buffer, _from_host_buffer),
            (_is_view, _from_view), (_is_cupy, _from_cupy), (_is_torch, _from_torch),
            (_has_interface, _from_interface),
            (_is_host_memory, _from_host_memory), (_has_dlpack, _from_dlpack))
