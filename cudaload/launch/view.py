"""Array views: ``view`` and ``ArrayView``, a typed, strided view of any array in memory a kernel
reaches (``__cuda_array_interface__``, DLPack, a DeviceBuffer, HostBuffer or ManagedBuffer): its
pointer, shape, strides in elements, dtype, device and read-only flag, read once.  A view is a
kernel argument (its pointer), a TensorMap source (its layout), and exports both protocols
itself, keeping its source alive.

Streams: ``view(obj, stream)`` orders the source's pending work before ``stream`` (default: the
legacy default stream, where cudaload's work without a stream runs), as each protocol asks of a
consumer: a DLPack producer is handed the stream (``__dlpack__(stream=)``) and makes it wait; a
CUDA Array Interface's ``stream`` entry is waited for through an event.  ``stream=-1``: no
ordering, the caller's to do.
"""

from __future__ import annotations

import functools
import re

from ..errors import DLPackError
from . import dlpack as _dlpack
from ._array_layout import Layout, from_dlpack, from_interface, is_raw
from ._foreign import HOST_HINT, mapped_pointer, stream_pointer
from ._unpicklable import GpuState
from .device import Device, as_device

__all__ = ["view", "ArrayView"]

# a dtype name's kind -> (CAI typestr kind, DLPack type code)
_KINDS = {"int": ("i", 0), "uint": ("u", 1), "float": ("f", 2), "bfloat": ("V", 4),
          "complex": ("c", 5), "bool": ("b", 6)}
_NAME = re.compile(r"([a-z]+?)(\d*)$")
_LEGACY = 1  # CU_STREAM_LEGACY, the stream handle DLPack and the CUDA Array Interface name so


def view(obj, stream=None) -> ArrayView:
    """A typed, strided view of ``obj``: anything with ``__cuda_array_interface__`` or DLPack
    (``__dlpack__``/``__dlpack_device__``) in device, managed or pinned host memory, or a
    cudaload buffer (1-D uint8 of its size).  The source's work is ordered before ``stream``
    (a Stream, a foreign stream or handle; default: the legacy default stream; -1: not at all).
    Raises TypeError for an object that describes no array (an int address among them),
    ValueError for host memory the device does not map, an element type cudaload does not read
    or strides that are no whole number of elements, BufferError (DLPackError) when the
    producer refuses the export, DriverError when the stream wait fails."""
    consumer = _consumer(stream)
    keep: list = []
    lay = _described(obj, consumer, keep)
    return ArrayView(obj, lay, keep, None if stream is None or consumer == -1 else consumer)


def _consumer(stream) -> int:
    """The consumer's stream as DLPack names it: 1 the legacy default stream, -1 none."""
    if stream is None:
        return _LEGACY
    if type(stream) is int and stream == -1:
        return -1
    return stream_pointer(stream)[0] or _LEGACY  # Stream.from_handle's 0: the legacy stream


def _described(obj, consumer: int, keep: list) -> Layout:
    own = getattr(obj, "_layout", None)
    if type(own) is Layout:  # a view of a view: the same memory, after the first view's stream
        _dlpack.wait(consumer, obj.device, obj._stream)
        return own.copy()
    if isinstance(obj, int):
        raise TypeError("an int address says nothing of its shape or dtype: view the array it "
                        "belongs to, or a DeviceBuffer")
    if not (hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__")):
        raise TypeError(f"cudaload.view takes an array (__cuda_array_interface__ or DLPack) or "
                        f"a cudaload buffer, not {type(obj).__name__}")
    if is_raw(obj) and hasattr(obj, "__dlpack__"):
        # a cudaload buffer: through its own export, whose capsule the view holds, so that
        # free() waits for (DeviceBuffer) or refuses (HostBuffer) while the view lives
        lay = from_dlpack(obj, consumer, host=True, keep=keep)
        lay.nbytes = obj.nbytes
        return lay
    if hasattr(obj, "__cuda_array_interface__"):
        cai = obj.__cuda_array_interface__
        lay = from_interface(cai)
        producer = cai.get("stream") if hasattr(cai, "get") else None
        if producer is not None and consumer != -1:
            if type(producer) is not int or producer == 0:
                raise ValueError(f"its __cuda_array_interface__['stream'] is {producer!r}: the "
                                 "interface (version 3) gives a stream handle, never 0, or None")
            _dlpack.wait(consumer, as_device(lay.device if (lay.device or 0) >= 0 else None),
                         producer)
        return lay
    return from_dlpack(obj, consumer, host=True, keep=keep)


class ArrayView(GpuState):
    """A typed, strided view of an array: ``.ptr`` (the address a kernel reads), ``.shape``,
    ``.strides`` (elements), ``.dtype``, ``.typestr``, ``.itemsize``, ``.device``,
    ``.readonly``, ``.is_contiguous`` (C order), ``.source`` (kept alive with the view);
    ``__cuda_array_interface__`` (version 3, strides in bytes) and ``__dlpack__``.  Made by
    :func:`view`."""

    __slots__ = ("ptr", "shape", "strides", "itemsize", "typestr", "device", "readonly",
                 "is_contiguous", "source", "_layout", "_keep", "_host", "_where", "_stream",
                 "__weakref__")
    _SEND_INSTEAD = "send the array's contents and view an array made of them there"

    def __init__(self, source, lay: Layout, keep: list, stream: int | None):
        kind, bits = _parts(lay.dtype)
        self.itemsize = max(bits // 8, 1)
        self.typestr = ("|" if self.itemsize == 1 else "<") + _KINDS[kind][0] + str(self.itemsize)
        self.shape = lay.shape
        self.strides = tuple(_elements(s, self.itemsize, i) for i, s in enumerate(lay.strides))
        self.readonly, self.source, self._keep, self._stream = lay.readonly, source, keep, stream
        self._host = None
        if lay.device is not None and lay.device < 0:  # pinned host memory: its device address
            self._host = lay.address
            mapped = mapped_pointer(lay.address)
            if mapped is None:
                raise ValueError(f"the device does not map the array's memory: {HOST_HINT}")
            lay.address = mapped
        device = getattr(source, "device", None)
        self.device: Device = device if isinstance(device, Device) else as_device(
            lay.device if (lay.device or 0) >= 0 else None)
        self.ptr = lay.address
        # the device a kernel must run on to read it; -1: any (pinned host memory, or no one
        # can say)
        self._where = -1 if lay.device is None or lay.device < 0 else self.device.ordinal
        self._layout = lay
        self.is_contiguous = _c_contiguous(self.shape, self.strides)

    @property
    def dtype(self):
        """A numpy dtype where numpy is installed and knows the type, else the typestr (or
        ``"bfloat16"``)."""
        numpy = _numpy()
        if numpy is not None:
            try:
                return numpy.dtype(self._layout.dtype)  # bfloat16 where ml_dtypes added it
            except TypeError:
                pass
        return "bfloat16" if self._layout.dtype == "bfloat16" else self.typestr

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return (f"<cudaload.ArrayView {self._layout.dtype} {self.shape} strides {self.strides} "
                f"at 0x{self.ptr:x} on device {self.device.ordinal}>")

    @property
    def __cuda_array_interface__(self) -> dict:
        """Version 3; ``stream``: the one the view was made for, None for the legacy one."""
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, self.readonly),
                "version": 3, "stream": self._stream, "strides": None if self.is_contiguous
                else tuple(s * self.itemsize for s in self.strides)}

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> object:
        """A DLPack capsule of the same memory, shape, strides and dtype; the consumer's
        ``stream`` waits for the view's stream.  Raises BufferError (DLPackError) for a copy or
        another device, TypeError/ValueError for malformed keywords."""
        if self._host is None:
            versioned, _to_host, copied = _dlpack.request(self.device, stream, max_version,
                                                          dl_device, copy)
        else:
            versioned, _target, copied = _dlpack.pinned_request(stream, max_version, dl_device,
                                                                copy)
        if copied:
            raise DLPackError("a view exports its memory as it is, never a copy",
                              hint="ask with copy=None, and copy on the consumer's side")
        _dlpack.wait(stream, self.device, self._stream)
        kind, bits = _parts(self._layout.dtype)
        typed = (self.shape, self.strides, _KINDS[kind][1], bits)
        address = self.ptr if self._host is None else self._host
        return _dlpack.export(self, address, 0, self.__dlpack_device__(), versioned,
                              typed=typed, readonly=self.readonly)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._host is not None:
            return _dlpack.CUDA_HOST, 0
        return _dlpack.CUDA, self.device.ordinal


def _parts(name: str) -> tuple[str, int]:
    """("float", 32) of "float32"; ("bool", 8) of "bool"."""
    found = _NAME.match(name)
    kind, bits = (found.group(1), found.group(2)) if found else (name, "")
    if kind not in _KINDS:
        raise ValueError(f"dtype {name!r}: a view takes integers, floats, complex numbers and "
                         "bools")
    return kind, int(bits or 8)


def _elements(stride: int, itemsize: int, i: int) -> int:
    if stride % itemsize:
        raise ValueError(f"strides[{i}] is {stride} bytes, no whole number of {itemsize}-byte "
                         "elements: a view counts strides in elements")
    return stride // itemsize


def _c_contiguous(shape, strides) -> bool:
    if 0 in shape:
        return True
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


@functools.cache
def _numpy():
    try:
        import numpy  # deferred and optional: numpy is no dependency of cudaload
    except ImportError:
        return None
    return numpy
