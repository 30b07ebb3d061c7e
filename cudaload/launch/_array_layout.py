"""Where an array lives and how it is laid out: address, element type, shape, strides in bytes and
device, from a DeviceBuffer or raw address described by the caller, the CUDA Array Interface or
DLPack.  What a tensor map (tensor_map.py) encodes and an array view (view.py) shows.
"""

from __future__ import annotations

import operator

from ._foreign import interface_problem, pointer_device, short
from ._sizes import C_UINT64, bounded, integer

__all__ = ["Layout", "layout", "dtype_name", "is_raw", "from_interface", "from_dlpack"]

# (kind, bytes) of a CUDA Array Interface typestr, or (DLPack type code, bytes) -> dtype name
_KINDS = {"u": "uint", "i": "int", "f": "float", "c": "complex", "b": "bool"}
_DLPACK_KINDS = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}


class Layout:
    """An array's memory: ``address``, ``dtype`` (a name, e.g. "float32"), ``shape`` and
    ``strides`` (bytes) outermost first, ``device`` (ordinal, None when no one can say) and
    ``nbytes`` (the bytes the source owns from ``address``, None when unknown), ``readonly``
    (what the CUDA Array Interface says; DLPack before 1.0 says nothing: False)."""

    __slots__ = ("address", "dtype", "shape", "strides", "device", "nbytes", "readonly")

    def __init__(self, address, dtype, shape, strides, device, nbytes, readonly=False):
        self.address, self.dtype, self.shape, self.strides = address, dtype, shape, strides
        self.device, self.nbytes, self.readonly = device, nbytes, readonly

    def copy(self) -> Layout:
        return Layout(self.address, self.dtype, self.shape, self.strides, self.device,
                      self.nbytes, self.readonly)


def dtype_name(dtype) -> str:
    """A dtype given as a str, a numpy dtype or scalar type, or a PyTorch dtype, as its name."""
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    return str(name).removeprefix("torch.")


def layout(source, dtype, shape, strides, itemsize) -> Layout:
    """The layout of ``source``: raw memory (a DeviceBuffer, anything with ``.ptr``, ``.nbytes``
    and ``.device``, or an int address) as ``dtype``/``shape``/``strides`` describe it, or an
    array that describes itself (``__cuda_array_interface__``, DLPack).  ``itemsize(name)``
    gives a dtype's size in bytes or raises.  Raises TypeError, ValueError (an address outside
    0..2**64-1 among them, before the driver is asked about it)."""
    if getattr(source, "host_ptr", None) is not None:
        raise ValueError("a tensor map reads device memory, and this HostBuffer is pinned host "
                         "memory: copy it into cudaload.alloc(n) and map that")
    if not is_raw(source):
        if shape is not None or strides is not None:
            raise TypeError(f"{type(source).__name__} describes its own shape and strides; pass "
                            "shape= and strides= only with a DeviceBuffer or an address")
        found = _described(source)
        if dtype is not None:  # the same bits read as another type: bfloat16 from uint16
            given = dtype_name(dtype)
            if itemsize(given) != itemsize(found.dtype):
                raise ValueError(f"dtype {given!r} has {itemsize(given)}-byte elements but the "
                                 f"array's {found.dtype} has {itemsize(found.dtype)}")
            found.dtype = given
        return found
    if dtype is None and shape is not None:
        raise TypeError("shape= describes memory of a dtype: pass dtype= too (e.g. 'float32')")
    name = "uint8" if dtype is None else dtype_name(dtype)
    size = itemsize(name)
    if isinstance(source, int):
        address, nbytes = bounded(source, "the address", *C_UINT64), None
        device = pointer_device(address)
        if shape is None:
            raise TypeError("an address says nothing of its shape: pass shape= and dtype=")
    else:
        address, nbytes = bounded(source.ptr, "ptr", *C_UINT64), source.nbytes
        device = source.device.ordinal
        if not address:
            raise ValueError("the buffer was freed; map a live one")
    if shape is None:
        shape = (nbytes // size,)
    shape = _ints(shape, "shape")
    strides = _contiguous(shape, size) if strides is None else _ints(strides, "strides")
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} and shape {shape} have different lengths")
    return Layout(address, name, shape, strides, device, nbytes)


def is_raw(source) -> bool:
    """Whether ``source`` is memory that says nothing of its layout: an int address, or a buffer
    (``.ptr``, ``.nbytes`` and ``.device``) such as a DeviceBuffer."""
    return isinstance(source, int) and not isinstance(source, bool) or all(
        hasattr(source, a) for a in ("ptr", "nbytes", "device"))


def _ints(values, what: str) -> tuple[int, ...]:
    try:
        return tuple(integer(v, what) for v in values)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of ints, not {short(values)}") from None


def _contiguous(shape, size: int) -> tuple[int, ...]:
    strides, step = [], size
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _described(source) -> Layout:
    own = getattr(source, "_layout", None)  # an ArrayView (view.py): what it was made from
    if type(own) is Layout:
        return own.copy()
    if hasattr(source, "__cuda_array_interface__"):
        return from_interface(source.__cuda_array_interface__)
    if hasattr(source, "__dlpack__"):
        return from_dlpack(source)
    raise TypeError(f"{type(source).__name__} has no device address: pass a DeviceBuffer, a CUDA "
                    "array (__cuda_array_interface__ or __dlpack__) or an int address")


def from_interface(cai) -> Layout:
    """The layout a ``__cuda_array_interface__`` dict describes.  Raises TypeError for one
    malformed, ValueError for an element type cudaload does not read."""
    problem = interface_problem(cai)
    if problem:
        raise TypeError(problem)
    typestr = cai["typestr"]
    kind = _KINDS.get(typestr[1:2])
    if typestr[:1] == ">" or kind is None or not typestr[2:].isdigit():
        raise ValueError(f"typestr {typestr!r}: cudaload reads little-endian integers, floats, "
                         "complex numbers and bools; pass dtype= for other bits of the same "
                         "size (bfloat16)")
    name = _name(kind, 8 * int(typestr[2:]))
    shape = tuple(operator.index(n) for n in cai["shape"])
    size = int(typestr[2:])
    given = cai.get("strides")
    strides = _contiguous(shape, size) if given is None else _ints(given, "strides")
    address = bounded(cai["data"][0], "its __cuda_array_interface__ data pointer", *C_UINT64)
    readonly = bool(cai["data"][1])
    return Layout(address, name, shape, strides, pointer_device(address), None, readonly)


def _name(kind: str, bits: int) -> str:
    return "bool" if kind == "bool" else f"{kind}{bits}"


def from_dlpack(source, stream=None, host: bool = False, keep=None) -> Layout:
    """The layout of a DLPack array; ``stream`` is passed on to its ``__dlpack__`` (the
    consumer's stream, which the producer makes wait).  Pinned host memory (kDLCUDAHost) only
    where ``host`` (its device then -1).  ``keep``: a list the capsule is appended to, so that
    the caller holds the producer's memory as long as it holds the list.  Raises ValueError for
    memory of another kind or an element type cudaload does not read."""
    from ..bindings._dlpack_ffi import ffi  # deferred: only this path needs it
    from .dlpack import capsule_pointer  # deferred: only this path needs it

    kind, index = source.__dlpack_device__()
    if kind not in ((2, 13, 3) if host else (2, 13)):  # kDLCUDA, kDLCUDAManaged, kDLCUDAHost
        reader = "a view reads device, managed or pinned host" if host else \
            "a tensor map reads device"
        raise ValueError(f"the array is in DLPack device {(kind, index)} memory: {reader} "
                         "memory; copy it to the GPU first")
    # not consumed: the producer frees it with the capsule
    capsule = source.__dlpack__() if stream is None else source.__dlpack__(stream=stream)
    if keep is not None:
        keep.append(capsule)
    tensor = ffi.cast("DLManagedTensor *", capsule_pointer(capsule, b"dltensor")).dl_tensor
    if tensor.dtype.lanes != 1 or tensor.dtype.code not in _DLPACK_KINDS:
        raise ValueError(f"DLPack type code {tensor.dtype.code} with {tensor.dtype.lanes} lanes: "
                         "cudaload reads integers, floats, complex numbers and bools of one lane")
    name = _name(_DLPACK_KINDS[tensor.dtype.code], tensor.dtype.bits)
    size = tensor.dtype.bits // 8
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides == ffi.NULL:
        strides = _contiguous(shape, size)
    else:
        strides = tuple(tensor.strides[i] * size for i in range(tensor.ndim))
    address = int(ffi.cast("uintptr_t", tensor.data)) + tensor.byte_offset
    return Layout(address, name, shape, strides, -1 if kind == 3 else index, None)
