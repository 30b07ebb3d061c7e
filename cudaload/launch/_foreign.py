"""What objects of other libraries say: a foreign array (``__cuda_array_interface__``, DLPack) or a
raw pointer about its memory (whether its interface is well formed, its data address, which
device owns it), a foreign stream about its handle and device; and what to do with memory of the
host where a kernel needs device memory (:data:`HOST_HINT`).

Imports driver, the generated bindings' constants and _sizes (a handle's range).
"""

from __future__ import annotations

import operator

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._sizes import C_UINT64, bounded

__all__ = ["HOST_HINT", "interface_problem", "short", "other_device", "pointer_device",
           "mapped_pointer", "host_address", "dlpack_pointer", "stream_pointer", "stream_handle"]


def interface_problem(cai) -> str | None:
    """What makes ``cai`` no ``__cuda_array_interface__``: a dict with data (pointer, read-only),
    shape (a tuple of ints) and typestr (a str).  None when nothing does."""
    what = "its __cuda_array_interface__"
    if not (hasattr(cai, "keys") and hasattr(cai, "__getitem__")):
        return f"{what} is a {type(cai).__name__}, not a dict"
    missing = [key for key in ("data", "shape", "typestr") if key not in cai]
    if missing:
        return (f"{what} lacks {', '.join(map(repr, missing))}: the CUDA Array Interface gives "
                "data, shape and typestr")
    data, shape = cai["data"], cai["shape"]
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and _is_int(data[0])):
        return f"{what}['data'] is {short(data)}, not (pointer as int, read-only flag)"
    if not (isinstance(shape, (tuple, list)) and all(_is_int(n) for n in shape)):
        return f"{what}['shape'] is {short(shape)}, not a tuple of ints"
    if not isinstance(cai["typestr"], str):
        return f"{what}['typestr'] is {short(cai['typestr'])}, not a str such as '<f4'"
    return None


def _is_int(value) -> bool:
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def short(value) -> str:
    text = repr(value)
    return text[:57] + "..." if len(text) > 60 else text


# Why memory of the host is refused where a kernel reads it (an argument, a view), and what to do.
HOST_HINT = ("it is host memory, but the kernel needs device memory: copy it with "
             "cudaload.alloc(n).copy_from_host(a), pass a CuPy/PyTorch CUDA array, or pass "
             "pinned memory the device maps (cudaload.alloc_host(n), an array inside "
             "cudaload.pin(a))")


def other_device(where: int, device: int) -> str:
    return (f"the array is on device {where} but the kernel launches on device {device}; copy it, "
            f"or launch on device {where} (cudaload.Device({where}).set_current())")


_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = _cuda_ffi.integer_const("CU_POINTER_ATTRIBUTE_MEMORY_TYPE")
_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = _cuda_ffi.integer_const(
    "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL")
_CU_MEMORYTYPE_HOST = _cuda_ffi.integer_const("CU_MEMORYTYPE_HOST")
_CU_POINTER_ATTRIBUTE_DEVICE_POINTER = _cuda_ffi.integer_const(
    "CU_POINTER_ATTRIBUTE_DEVICE_POINTER")


def pointer_device(ptr: int):
    """Device ordinal owning ``ptr``, -1 for host memory, None when the driver cannot say.
    Raises ValueError for a ``ptr`` outside 0..2**64-1, which no CUdeviceptr holds."""
    ptr = bounded(ptr, "the pointer", *C_UINT64)
    drv = driver.init()
    out = drv.ffi.new("int *")
    if drv.cuPointerGetAttribute(out, _CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr):  # failed
        return None
    if out[0] == _CU_MEMORYTYPE_HOST:
        return -1
    if drv.cuPointerGetAttribute(out, _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr):
        return None
    return out[0]


def mapped_pointer(ptr: int) -> int | None:
    """The device address through which a kernel in the current context reaches the host memory
    at ``ptr``; None where it has none.  Page-locked memory has one (cuMemHostAlloc's, registered
    memory's, whoever pinned it: under unified addressing the same address), pageable memory none:
    the driver answers CUDA_ERROR_INVALID_VALUE for memory it does not know.  Raises ValueError
    for a ``ptr`` outside 0..2**64-1 (a host array's interface may give any int), as
    :func:`pointer_device` does."""
    ptr = bounded(ptr, "the pointer", *C_UINT64)
    drv = driver.init()
    out = drv.ffi.new("CUdeviceptr *")
    if drv.cuPointerGetAttribute(out, _CU_POINTER_ATTRIBUTE_DEVICE_POINTER, ptr) or not out[0]:
        return None
    return int(out[0])


def host_address(value) -> int | None:
    """The host address of a host array: its ``__array_interface__`` data pointer (NumPy), else
    where its buffer (the buffer protocol) starts; None where it gives none."""
    try:
        if hasattr(value, "__array_interface__"):
            return operator.index(value.__array_interface__["data"][0])
        return int(_cuda_ffi.cast("uintptr_t", _cuda_ffi.from_buffer(value)))
    except (KeyError, IndexError, TypeError, ValueError, BufferError):
        return None


def dlpack_pointer(value) -> int:
    """Data address of a DLPack tensor (DLTensor: data at 0, byte_offset at 40)."""
    import ctypes  # deferred: only this path needs it

    capsule = value.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get(capsule, b"dltensor")
    words = driver.api().ffi.cast("uint64_t *", address)
    return int(words[0]) + int(words[5])


def stream_pointer(obj) -> tuple[int, int | None]:
    """(address, device ordinal or None) of a stream another library owns: ``__cuda_stream__``,
    CuPy (``.ptr``), PyTorch (``.cuda_stream``), or an int handle (0 is the legacy default
    stream).  The ordinal is the one a CuPy or PyTorch stream names.  Raises ``TypeError``, and
    ``ValueError`` for an address outside 0..2**64-1, which ``ffi.cast`` would cut short (2**64
    to the legacy default stream)."""
    if type(obj) is int:  # first: the attribute probes below cost microseconds for an int
        return bounded(obj, "a stream handle", *C_UINT64), None
    if hasattr(obj, "__cuda_stream__"):
        proto = obj.__cuda_stream__
        _version, ptr = proto() if callable(proto) else proto
    elif hasattr(obj, "cuda_stream"):  # torch.cuda.Stream
        ptr = obj.cuda_stream
    elif hasattr(obj, "ptr") and not hasattr(obj, "__cuda_array_interface__"):  # cupy Stream
        ptr = obj.ptr
    elif isinstance(obj, int) and not isinstance(obj, bool):
        ptr = obj
    elif _is_cu_stream(obj):  # a Stream's .handle
        ptr = int(driver.api().ffi.cast("uintptr_t", obj))
    else:
        raise TypeError(f"cannot use {type(obj).__name__} as a CUDA stream: pass a "
                        "cudaload.Stream, an object with __cuda_stream__, a CuPy or PyTorch "
                        "stream, an int handle or a CUstream")
    index = getattr(obj, "device_id", None)  # cupy
    if index is None:
        index = getattr(getattr(obj, "device", None), "index", None)  # torch
    # An int only (not a str's .index method, nor another library's device object), and not
    # the -1 CuPy gives its null and external streams: those have no device of their own.
    return bounded(int(ptr), "a stream handle", *C_UINT64), \
        (index if type(index) is int and index >= 0 else None)


def _is_cu_stream(obj) -> bool:
    ffi = driver.api().ffi
    return isinstance(obj, ffi.CData) and ffi.typeof(obj) is ffi.typeof("CUstream")


def stream_handle(stream):
    """The ``CUstream`` of anything ``Stream.from_handle`` takes (a cudaload Stream through its
    ``__cuda_stream__``); None is the legacy default stream.  Raises ``TypeError``,
    ``ValueError`` (see :func:`stream_pointer`)."""
    ffi = driver.api().ffi
    if stream is None:
        return ffi.NULL
    return ffi.cast("CUstream", stream_pointer(stream)[0])
