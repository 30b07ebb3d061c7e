"""DLPack export: the capsules ``DeviceBuffer.__dlpack__`` (and ``HostBuffer.__dlpack__``, pinned
host memory as kDLCUDAHost) give PyTorch, CuPy, NumPy and others.

A DeviceBuffer is raw bytes, so it is exported as a 1-D uint8 tensor of ``nbytes`` elements
(``torch.from_dlpack(buf).view(torch.float32)`` reinterprets it).  A consumer that asks for
DLPack 1.x (``max_version=(1, x)``) gets a ``DLManagedTensorVersioned`` in a capsule named
"dltensor_versioned"; any other gets a ``DLManagedTensor`` in one named "dltensor".

Lifetime.  Each export is an :class:`_Export` in ``_EXPORTS``, keyed by its structure's address:
the structure's memory, its shape and strides, what the data lives in (the DeviceBuffer, whose
memory thus stays while it is viewed) and the capsule.  A consumer takes the structure by
renaming the capsule "used_dltensor[_versioned]" and calls its ``deleter`` when done, from any
thread: the deleter is a cffi callback (cffi takes the GIL) that drops the export.  The capsule
has no destructor, because a Python callback run as a capsule is freed would lose an exception
in flight (a cffi callback cannot leave one set, and consumers free a capsule they refuse while
raising their error).  Instead an export keeps its capsule until it is seen renamed (consumed:
the deleter will come) or held by nobody else (never consumed, and never to be: dropped as its
deleter would be).  Both are looked for at each export, at ``DeviceBuffer.free()`` and after
each garbage collection.  (The deleter shares the limit: a consumer that frees its view while
its own error is being raised would see that error replaced; the consumers known free views
from their objects' deallocation, where none is.)  ``free()`` of a buffer still viewed makes it unusable here at once
and frees the memory when the last view goes.

Streams: cudaload's work without a stream goes to the legacy default stream; a consumer that
names another stream is made to wait for that work (an event), as the protocol asks.
"""

from __future__ import annotations

import functools
import gc
import operator
import sys

from ..bindings._dlpack_ffi import ffi as _ffi
from ..errors import DLPackError
from .device import Device

__all__ = ["DLPackError", "CUDA", "CUDA_HOST", "request", "pinned_request", "export",
           "host_export", "wait", "viewed", "capsule_pointer"]

CUDA = _ffi.integer_const("kDLCUDA")
CUDA_HOST = _ffi.integer_const("kDLCUDAHost")
_CPU = _ffi.integer_const("kDLCPU")
_UINT = _ffi.integer_const("kDLUInt")
_IS_COPIED = _ffi.integer_const("DLPACK_FLAG_BITMASK_IS_COPIED")
_READ_ONLY = _ffi.integer_const("DLPACK_FLAG_BITMASK_READ_ONLY")
_VERSION = (_ffi.integer_const("DLPACK_MAJOR_VERSION"), _ffi.integer_const("DLPACK_MINOR_VERSION"))
# The capsule keeps a pointer to its name, not a copy: these live as long as the module.
_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}
_TYPES = {False: "DLManagedTensor", True: "DLManagedTensorVersioned"}
_LEGACY_STREAMS = (None, -1, 1)  # no stream named, "do not synchronize", the legacy stream


class _Export:
    """One capsule's structure and what it keeps alive until the consumer is done."""

    __slots__ = ("managed", "dims", "owner", "capsule", "name")

    def __init__(self, managed, dims, owner, capsule, name: bytes):
        self.managed, self.dims, self.owner = managed, dims, owner
        self.capsule, self.name = capsule, name


def _references(record: _Export) -> int:
    return sys.getrefcount(record.capsule)


_EXPORTS: dict[int, _Export] = {}
# What _references says of an export whose capsule nothing else holds: measured the same way, so
# that the interpreter's own counting is in it.
_ALONE = _references(_Export(None, None, None, object(), b""))
_sweeping = False  # whether _sweep is running (a release it makes may call it again)


def request(device: Device, stream, max_version, dl_device, copy) -> tuple[bool, bool, bool]:
    """(versioned, to the host, copied) for ``__dlpack__``'s keywords on memory of ``device``.

    Raises DLPackError for an export this memory cannot give, TypeError or ValueError for
    keywords that are malformed."""
    versioned = _keywords(stream, max_version, copy)
    to_host = False
    if dl_device is not None:
        kind, index = _pair(dl_device, "dl_device", f"({CUDA}, {device.ordinal})")
        if kind == _CPU:
            if copy is False:
                raise DLPackError(
                    "host memory was asked for with copy=False, but this is device memory",
                    hint="pass copy=True (or None) for a host copy, or import it on the GPU")
            to_host = True
        elif (kind, index) != (CUDA, device.ordinal):
            raise DLPackError(
                f"cannot export to DLPack device {(kind, index)}: this memory is on CUDA device "
                f"{device.ordinal}", hint=f"ask for ({CUDA}, {device.ordinal}) or for the host "
                                         f"({_CPU}, 0)")
    return versioned, to_host, to_host or copy is True


def pinned_request(stream, max_version, dl_device, copy) -> tuple[bool, tuple[int, int], bool]:
    """(versioned, DLPack device, copied) for ``__dlpack__``'s keywords on pinned host memory:
    its own device is kDLCUDAHost; the host (kDLCPU) gets a view of the same bytes, since they
    are host memory.  Raises as :func:`request`."""
    versioned = _keywords(stream, max_version, copy)
    target = (CUDA_HOST, 0)
    if dl_device is not None:
        wanted = _pair(dl_device, "dl_device", f"({CUDA_HOST}, 0)")
        if wanted == (_CPU, 0):
            target = wanted
        elif wanted != target:
            raise DLPackError(
                f"cannot export to DLPack device {wanted}: this is pinned host memory",
                hint=f"ask for ({CUDA_HOST}, 0) (CUDA host memory) or ({_CPU}, 0) (the host)")
    return versioned, target, copy is True


def _keywords(stream, max_version, copy) -> bool:
    """Whether a DLPack 1.x structure was asked for; raises TypeError or ValueError for keywords
    that are malformed."""
    versioned = max_version is not None and _pair(max_version, "max_version", "(1, 0)")[0] >= 1
    if copy not in (None, True, False):
        raise TypeError(f"copy must be None, True or False, not {copy!r}")
    if type(stream) is not int and stream is not None:
        raise TypeError(f"stream must be an int (a CUDA stream handle) or None, not {stream!r}")
    if stream == 0 or (stream is not None and stream < -1):
        raise ValueError(f"stream={stream} is no CUDA stream for DLPack: pass 1 for the legacy "
                         f"default stream, 2 for the per-thread one, a stream handle, or -1")
    return versioned


def _pair(value, what: str, example: str) -> tuple[int, int]:
    """``value`` as a pair of ints.  Raises TypeError."""
    try:
        first, second = value
        return operator.index(first), operator.index(second)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a pair of ints such as {example}, not {value!r}") from None


def wait(stream, device: Device, producer=None) -> None:
    """Make the consumer's ``stream`` wait for the work on ``producer`` (a stream handle;
    default: the legacy default stream)."""
    if stream == -1 or stream == producer or (stream in _LEGACY_STREAMS and producer in (None, 1)):
        return
    from .stream import Event, Stream  # deferred: only this path needs it

    done = Event(device, timing=False).record(producer)
    Stream.from_handle(1 if stream is None else stream, device.ordinal).wait(done)


def export(owner, ptr: int, nbytes: int, device: tuple[int, int], versioned: bool,
           copied: bool = False, typed: tuple | None = None, readonly: bool = False) -> object:
    """A capsule viewing ``nbytes`` at ``ptr`` on DLPack ``device`` as 1-D uint8, or as
    ``typed`` says: (shape, strides in elements, DLPack type code, bits); keeping ``owner``
    alive until the consumer is done with it.  ``readonly`` is said where DLPack 1.x can."""
    _sweep()
    shape, strides, code, bits = typed or ((nbytes,), (1,), _UINT, 8)
    managed = _ffi.new(_TYPES[versioned] + " *")
    # the shape, then the strides (in elements); one entry at least, for a 0-d array's pointers
    dims = _ffi.new("int64_t[]", [*shape, *strides] or [0])
    tensor = managed.dl_tensor
    tensor.data = _ffi.cast("void *", ptr)
    tensor.device.device_type, tensor.device.device_id = device
    tensor.ndim = len(shape)
    tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = code, bits, 1
    tensor.shape, tensor.strides = dims, dims + len(shape)
    tensor.byte_offset = 0
    managed.deleter = _deleters()[versioned]
    if versioned:
        managed.version.major, managed.version.minor = _VERSION
        managed.flags = (_IS_COPIED if copied else 0) | (_READ_ONLY if readonly else 0)
    address = int(_ffi.cast("uintptr_t", managed))
    capsule = _python().capsule_new(address, _NAMES[versioned], None)
    _EXPORTS[address] = _Export(managed, dims, owner, capsule, _NAMES[versioned])
    return capsule


def host_export(data: bytearray, versioned: bool) -> object:
    """A capsule viewing ``data`` (a host copy the export alone owns) as CPU memory."""
    view = _ffi.from_buffer(data)  # holds data's buffer, so it cannot be resized meanwhile
    return export((data, view), int(_ffi.cast("uintptr_t", view)), len(data), (_CPU, 0),
                  versioned, copied=True)


def viewed(owner) -> bool:
    """Whether a consumer may still read ``owner``'s memory through an export."""
    _sweep()
    return any(record.owner is owner for record in list(_EXPORTS.values()))


def _release(record: _Export) -> None:
    """After ``record`` is dropped: free its buffer's memory if ``free()`` was asked for it."""
    owner = record.owner
    if getattr(owner, "ptr", None) == 0 and not viewed(owner):
        finalizer = getattr(owner, "_finalizer", None)
        if finalizer is not None:
            finalizer()


def _sweep() -> None:
    """Let go of the capsules consumers took, and drop the exports nobody will take."""
    global _sweeping
    if _sweeping:
        return
    _sweeping = True
    try:
        for address, record in list(_EXPORTS.items()):
            if record.capsule is None:
                continue
            alone = _references(record) <= _ALONE
            if not _python().capsule_is_valid(record.capsule, record.name):
                record.capsule = None  # renamed: consumed, the deleter will come
            elif alone and _EXPORTS.pop(address, None) is record:
                _release(record)
    finally:
        _sweeping = False


# A consumer may free its view while the interpreter shuts down, after this module's globals are
# gone: what the deleter needs is bound when it is defined, and nothing is freed then (the
# process's exit releases the device memory with the context).
def _deleter(managed, _exports=_EXPORTS, _cast=_ffi.cast, _finalizing=sys.is_finalizing) -> None:
    record = _exports.pop(int(_cast("uintptr_t", managed)), None)
    if record is not None and not _finalizing():
        _release(record)


def _after_collection(phase: str, _info: dict, _finalizing=sys.is_finalizing) -> None:
    if phase == "stop" and _EXPORTS and not _finalizing():
        _sweep()


class _Python:
    """The C API functions used on capsules (through ctypes' pythonapi: called with the GIL)."""

    def __init__(self):
        import ctypes  # deferred: only this path needs it

        api = ctypes.pythonapi
        proto = ctypes.PYFUNCTYPE
        # Prototypes of their own: ctypes.pythonapi's shared attributes have argtypes that other
        # code sets (_foreign.dlpack_pointer's PyCapsule_GetPointer among them).
        self.capsule_new = proto(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", api))
        self.capsule_is_valid = proto(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_IsValid", api))
        self.capsule_get_pointer = proto(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", api))


def capsule_pointer(capsule, name: bytes) -> int:
    """The address a capsule named ``name`` holds.  Raises ValueError for another name."""
    return _python().capsule_get_pointer(capsule, name) or 0


@functools.cache
def _python() -> _Python:
    return _Python()


_KEEP: list = []  # the deleter callback: never freed, as every structure handed out points at it


@functools.cache
def _deleters() -> dict:
    """The deleter of each kind of structure: one callback, made on the first export."""
    callback = _ffi.callback("void(void *)", _deleter)
    gc.callbacks.append(_after_collection)
    _KEEP.append(callback)
    return {versioned: _ffi.cast(f"void(*)({_TYPES[versioned]} *)", callback)
            for versioned in (False, True)}
