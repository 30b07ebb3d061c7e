"""Hopper tensor maps: ``TensorMap``, the ``CUtensorMap`` (TMA descriptor) that a kernel takes by
value as ``const __grid_constant__ CUtensorMap``, encoded by the driver for an array in device
memory.  Every field is checked here first, so that a mistake is named with what to change
instead of coming back as the driver's bare CUDA_ERROR_INVALID_VALUE.

A TensorMap *is* its 128 bytes (a ``bytes`` subclass): the launch path passes a struct parameter
as bytes of its size, so a tensor map needs no argument kind of its own there.  Shapes, strides
and boxes are given outermost first, as numpy's ``shape``; the driver takes them innermost first
(``globalDim[0]`` is the contiguous dimension) and strides only for dimensions 1.., in bytes.
"""

from __future__ import annotations

from ..bindings import driver
from ._array_layout import Layout, is_raw, layout
from ._sizes import bounded
from ._unpicklable import GpuState
from .device import Device, activate, as_device

__all__ = ["TensorMap"]

# dtype name -> (CUtensorMapDataType suffix, bytes).  A tensor map moves bits, and its zero fill
# is zero in any integer type: signed 8- and 16-bit integers travel as the unsigned ones.
_DTYPES = {
    "uint8": ("UINT8", 1), "int8": ("UINT8", 1), "uint16": ("UINT16", 2),
    "int16": ("UINT16", 2), "uint32": ("UINT32", 4), "int32": ("INT32", 4),
    "uint64": ("UINT64", 8), "int64": ("INT64", 8), "float16": ("FLOAT16", 2),
    "float32": ("FLOAT32", 4), "float64": ("FLOAT64", 8), "bfloat16": ("BFLOAT16", 2),
    "float32_ftz": ("FLOAT32_FTZ", 4), "tfloat32": ("TFLOAT32", 4),
    "tfloat32_ftz": ("TFLOAT32_FTZ", 4),
}
# Each option: spelling (any case) -> (enum suffix, its size in bytes where the checks need it)
_SWIZZLES = {"none": ("NONE", 0), "32B": ("32B", 32), "64B": ("64B", 64), "128B": ("128B", 128),
             "128B_atom_32B": ("128B_ATOM_32B", 128),
             "128B_atom_32B_flip_8B": ("128B_ATOM_32B_FLIP_8B", 128),
             "128B_atom_64B": ("128B_ATOM_64B", 128)}
_INTERLEAVES = {"none": ("NONE", 16), "16B": ("16B", 16), "32B": ("32B", 32)}
_L2 = {"none": ("NONE", 0), "64B": ("L2_64B", 0), "128B": ("L2_128B", 0),
       "256B": ("L2_256B", 0)}
_OOB_FILLS = {"zero": ("NONE", 0), "nan": ("NAN_REQUEST_ZERO_FMA", 0)}
# im2col: the corners' range by rank (the driver stores them in 16, 8 or 5 bits)
_CORNER_RANGE = {3: 1 << 15, 4: 1 << 7, 5: 1 << 4}
_MAP_BYTES, _MAP_ALIGN = 128, 128  # sizeof and alignof CUtensorMap (cuda.h: alignas(128))


def _itemsize(name: str) -> int:
    entry = _DTYPES.get(name)
    if entry is None:
        raise ValueError(f"dtype {name!r} has no tensor map type; one of {', '.join(_DTYPES)}")
    return entry[1]


def _choice(value, table: dict, what: str) -> tuple[str, int]:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str such as {next(iter(table))!r}, not {value!r}")
    entry = next((v for k, v in table.items() if k.lower() == value.lower()), None)
    if entry is None:
        raise ValueError(f"{what}={value!r}: use one of {', '.join(map(repr, table))}")
    return entry


def _counts(values, count: int, what: str, low: int, high: int) -> tuple[int, ...]:
    """``values`` as ``count`` ints in ``low..high``.  Raises TypeError, ValueError."""
    try:
        out = tuple(values)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of {count} ints, not {values!r}") from None
    if len(out) != count:
        raise ValueError(f"{what} {out} has {len(out)} entries; {count} are needed "
                         "(outermost first)")
    return tuple(bounded(n, f"{what}[{i}]", low, high) for i, n in enumerate(out))


class _Fields:
    """What both encodings share, checked: the array and the options as the driver takes them."""

    def __init__(self, source, dtype, shape, strides, element_strides, interleave, swizzle,
                 l2_promotion, oob_fill, ranks: range):
        lay = layout(source, dtype, shape, strides, _itemsize)
        self.layout, self.rank = lay, len(lay.shape)
        self.size = _itemsize(lay.dtype)  # an array's own type too: float128 has none
        self.type = _DTYPES[lay.dtype][0]
        self.interleave, self.align = _choice(interleave, _INTERLEAVES, "interleave")
        self.swizzle, self.span = _choice(swizzle, _SWIZZLES, "swizzle")
        self.l2 = _choice(l2_promotion, _L2, "l2_promotion")[0]
        self.oob = _choice(oob_fill, _OOB_FILLS, "oob_fill")[0]
        low = 3 if self.interleave != "NONE" else ranks.start
        if not low <= self.rank < ranks.stop:
            raise ValueError(f"the array has {self.rank} dimensions (shape {lay.shape}); this "
                             f"tensor map takes {low} to {ranks.stop - 1}"
                             + (" with interleave" if low == 3 != ranks.start else ""))
        self._check_memory(lay)
        if self.interleave == "32B" and self.swizzle != "32B":
            raise ValueError("interleave='32B' needs swizzle='32B'")
        if self.oob != "NONE" and "FLOAT" not in self.type:
            raise ValueError(f"oob_fill='nan' fills floats; {lay.dtype} is no float type: "
                             "use oob_fill='zero'")
        self.element_strides = (1,) * self.rank if element_strides is None else \
            _counts(element_strides, self.rank, "element_strides", 1, 8)

    def _check_memory(self, lay: Layout) -> None:
        for i, n in enumerate(lay.shape):
            if not 1 <= n <= 1 << 32:
                raise ValueError(f"shape[{i}] = {n}: each dimension of a tensor map must be "
                                 "1..2**32")
        if lay.strides[-1] != self.size:
            raise ValueError(f"the innermost dimension has a stride of {lay.strides[-1]} bytes; "
                             f"a tensor map needs it contiguous ({self.size} bytes, one "
                             f"{lay.dtype}): map a contiguous copy, or transpose the array")
        for i, s in enumerate(lay.strides[:-1]):
            if s <= 0 or s % self.align or s >= 1 << 40:
                raise ValueError(f"strides[{i}] = {s} bytes: each outer stride must be a "
                                 f"positive multiple of {self.align} bytes below 2**40 (pad "
                                 f"the rows to a multiple of {self.align // self.size} elements)")
        if lay.address % self.align:
            raise ValueError(f"the array's address 0x{lay.address:x} is not {self.align}-byte "
                             f"aligned, as a tensor map needs: map a view that starts at an "
                             f"aligned element")
        end = _extent(lay, self.size)
        if lay.nbytes is not None and end > lay.nbytes:
            raise ValueError(f"shape {lay.shape} with strides {lay.strides} reaches {end} bytes "
                             f"past the start, but the buffer has {lay.nbytes}")

    def check_inner(self, count: int, what: str, units: bool = True) -> None:
        """The bytes a box moves along the innermost dimension: whole 16-byte units (where
        ``units``), within the swizzle's span."""
        inner = count * self.size
        if units and self.interleave == "NONE" and inner % 16:
            raise ValueError(f"{what} = {count} {self.layout.dtype} is {inner} bytes; without "
                             f"interleave it must be a multiple of 16 bytes "
                             f"({16 // min(self.size, 16)} elements)")
        if self.interleave == "NONE" and self.span and inner > self.span:
            raise ValueError(f"{what} = {count} {self.layout.dtype} is {inner} bytes, more than "
                             f"the {self.span}-byte swizzle span: use a smaller box or a wider "
                             "swizzle")

    def device(self):
        """The array's device, current; raises ValueError where it cannot hold a tensor map."""
        where = self.layout.device
        if where is not None and where < 0:
            raise ValueError("the address is host memory: a tensor map reads device memory")
        dev = as_device(where)
        drv = activate(dev)
        if dev.compute_capability < (9, 0):
            raise ValueError(f"device {dev.ordinal} ({dev.name}) is compute capability "
                             f"{dev.compute_capability}; tensor maps need 9.0 (Hopper) or newer")
        return dev, drv

    def common(self, drv) -> tuple:
        """(map pointer, its holder, data type, rank, address, dims, strides) for the driver."""
        ffi, lay = drv.ffi, self.layout
        tmap, holder = _aligned_map(ffi)
        dims = ffi.new("cuuint64_t[]", lay.shape[::-1])
        strides = ffi.new("cuuint64_t[]", lay.strides[-2::-1] or [0])
        kind = ffi.integer_const("CU_TENSOR_MAP_DATA_TYPE_" + self.type)
        return (tmap, holder, kind, self.rank, ffi.cast("void *", lay.address), dims, strides)

    def options(self, drv) -> tuple:
        """(element strides, interleave, swizzle, L2 promotion, OOB fill) for the driver."""
        const = drv.ffi.integer_const
        return (drv.ffi.new("cuuint32_t[]", self.element_strides[::-1]),
                const("CU_TENSOR_MAP_INTERLEAVE_" + self.interleave),
                const("CU_TENSOR_MAP_SWIZZLE_" + self.swizzle),
                const("CU_TENSOR_MAP_L2_PROMOTION_" + self.l2),
                const("CU_TENSOR_MAP_FLOAT_OOB_FILL_" + self.oob))


def _extent(lay: Layout, size: int) -> int:
    """The bytes from ``lay``'s address to the end of its last element."""
    return size + sum((n - 1) * s for n, s in zip(lay.shape, lay.strides))


def _aligned_map(ffi) -> tuple:
    """(pointer, holder): room for a CUtensorMap at the 128-byte alignment cuda.h declares."""
    holder = ffi.new("char[]", _MAP_BYTES + _MAP_ALIGN)
    start = -int(ffi.cast("uintptr_t", holder)) % _MAP_ALIGN
    return ffi.cast("struct CUtensorMap_st *", holder + start), holder


class TensorMap(bytes, GpuState):
    """A ``CUtensorMap``: its 128 bytes, passed to a ``CUtensorMap`` kernel parameter by value.
    ``.kind`` ("tiled" or "im2col"), ``.device``, ``.address``, ``.dtype``, ``.shape`` and
    ``.strides`` (bytes, outermost first) say what it maps; ``.source`` is kept alive with it.
    Made by :meth:`tiled` or :meth:`im2col`, or from another by :meth:`replace_address`."""

    _SEND_INSTEAD = "send the array and make the tensor map again in the receiving process"

    # A bytes subclass can have no __slots__: these live in the instance's dict.
    kind: str
    source: object
    device: Device
    address: int
    dtype: str
    shape: tuple
    strides: tuple
    _align: int  # the address alignment the map's interleave needs

    def __new__(cls, data: bytes, kind: str, source: object, device: Device,
                layout: Layout, align: int = 16) -> TensorMap:
        self = super().__new__(cls, data)
        self.kind, self.source, self.device = kind, source, device
        self.address, self.dtype = layout.address, layout.dtype
        self.shape, self.strides, self._align = layout.shape, layout.strides, align
        return self

    def replace_address(self, other) -> TensorMap:
        """This map at other memory of the same layout (``cuTensorMapReplaceAddress``, no new
        encode): a CUDA array or view of the same shape, strides and dtype, or a DeviceBuffer
        or int address read with them.  A TensorMap is bytes, which never change: the new map
        is returned, and this one still maps its own memory.  Raises TypeError, ValueError
        (misaligned, another layout, past a buffer's end, another device) before the driver is
        called, MissingSymbolError where the driver lacks the call, DriverError when it
        refuses."""
        lay = self._same_layout(other)
        if lay.address % self._align:
            raise ValueError(f"the new address 0x{lay.address:x} is not {self._align}-byte "
                             "aligned, as a tensor map needs: pass memory that starts at an "
                             "aligned element")
        if lay.device is not None and lay.device != self.device.ordinal:
            where = "host memory" if lay.device < 0 else f"on device {lay.device}"
            raise ValueError(f"the new memory is {where}, but this tensor map is for device "
                             f"{self.device.ordinal}: make one with TensorMap.tiled there")
        drv = activate(self.device)
        replace = drv.cuTensorMapReplaceAddress  # MissingSymbolError on a driver without it
        tmap, _holder = _aligned_map(drv.ffi)
        drv.ffi.memmove(tmap, self, _MAP_BYTES)
        driver.check(replace(tmap, drv.ffi.cast("void *", lay.address)),
                     f"cuTensorMapReplaceAddress (0x{lay.address:x})")
        data = drv.ffi.buffer(drv.ffi.cast("char *", tmap), _MAP_BYTES)[:]
        return type(self)(data, self.kind, other, self.device, lay, self._align)

    def _same_layout(self, source) -> Layout:
        """``source``'s layout, refused unless it is this map's."""
        if is_raw(source):
            lay = layout(source, self.dtype, self.shape, self.strides, _itemsize)
            end = _extent(lay, _itemsize(self.dtype))
            if lay.nbytes is not None and end > lay.nbytes:
                raise ValueError(f"this tensor map reaches {end} bytes past its start, but the "
                                 f"buffer has {lay.nbytes}")
            return lay
        lay = layout(source, None, None, None, _itemsize)
        if _DTYPES.get(lay.dtype, ("",))[0] != _DTYPES[self.dtype][0]:
            raise ValueError(f"the array is {lay.dtype}, this tensor map {self.dtype}: replace "
                             "with an array of its dtype, or with its DeviceBuffer or address")
        if (lay.shape, lay.strides) != (self.shape, self.strides):
            raise ValueError(f"the array has shape {lay.shape} and strides {lay.strides} "
                             f"(bytes); this tensor map was made for {self.shape} and "
                             f"{self.strides}: make a new one with TensorMap.tiled")
        lay.dtype = self.dtype
        return lay

    def __repr__(self) -> str:
        return (f"<cudaload.TensorMap {self.kind} {self.dtype} {self.shape} at "
                f"0x{self.address:x} on device {self.device.ordinal}>")

    __str__ = __repr__  # not bytes' own, which would print the 128 opaque bytes

    @classmethod
    def tiled(cls, source, box, *, dtype=None, shape=None, strides=None, element_strides=None,
              interleave: str = "none", swizzle: str = "none", l2_promotion: str = "none",
              oob_fill: str = "zero") -> TensorMap:
        """A tiled tensor map (``cuTensorMapEncodeTiled``) of ``source``: a CUDA array
        (``__cuda_array_interface__``, DLPack), or a DeviceBuffer or int address that ``dtype``,
        ``shape`` and ``strides`` (bytes; default C-contiguous) describe.  ``box``: the tile each
        copy moves, outermost first, each 1..256.  Raises TypeError, ValueError before the
        driver is called, DriverError when it refuses."""
        fields = _Fields(source, dtype, shape, strides, element_strides, interleave, swizzle,
                         l2_promotion, oob_fill, range(1, 6))
        box = _counts(box, fields.rank, "box", 1, 256)
        fields.check_inner(box[-1], "box[-1]")
        dev, drv = fields.device()
        common = fields.common(drv)
        tmap = common[0]
        driver.check(drv.cuTensorMapEncodeTiled(
            tmap, *common[2:], drv.ffi.new("cuuint32_t[]", box[::-1]), *fields.options(drv)),
            f"cuTensorMapEncodeTiled ({fields.layout.dtype} {fields.layout.shape}, box {box})")
        data = drv.ffi.buffer(drv.ffi.cast("char *", tmap), _MAP_BYTES)[:]
        return cls(data, "tiled", source, dev, fields.layout, fields.align)

    @classmethod
    def im2col(cls, source, *, lower_corner, upper_corner, channels_per_pixel: int,
               pixels_per_column: int, dtype=None, shape=None, strides=None,
               element_strides=None, interleave: str = "none", swizzle: str = "none",
               l2_promotion: str = "none", oob_fill: str = "zero") -> TensorMap:
        """An im2col tensor map (``cuTensorMapEncodeIm2col``) of a 3- to 5-dimensional array
        laid out N, (D, H,) W, C: ``lower_corner`` and ``upper_corner`` offset the pixel box in
        the spatial dimensions, outermost first; each copy moves ``pixels_per_column`` pixels
        (1..1024) of ``channels_per_pixel`` channels (1..256).  Raises as :meth:`tiled`, and
        MissingSymbolError where the driver lacks im2col."""
        fields = _Fields(source, dtype, shape, strides, element_strides, interleave, swizzle,
                         l2_promotion, oob_fill, range(3, 6))
        reach = _CORNER_RANGE[fields.rank]
        corners = [_counts(c, fields.rank - 2, name, -reach, reach - 1)
                   for c, name in ((lower_corner, "lower_corner"), (upper_corner, "upper_corner"))]
        channels = bounded(channels_per_pixel, "channels_per_pixel", 1, 256)
        pixels = bounded(pixels_per_column, "pixels_per_column", 1, 1024)
        fields.check_inner(channels, "channels_per_pixel", units=False)
        dev, drv = fields.device()
        encode = drv.cuTensorMapEncodeIm2col  # MissingSymbolError on a driver without it
        common = fields.common(drv)
        lower, upper = (drv.ffi.new("int[]", c[::-1]) for c in corners)
        driver.check(encode(common[0], *common[2:], lower, upper, channels, pixels,
                            *fields.options(drv)),
                     f"cuTensorMapEncodeIm2col ({fields.layout.dtype} {fields.layout.shape})")
        data = drv.ffi.buffer(drv.ffi.cast("char *", common[0]), _MAP_BYTES)[:]
        return cls(data, "im2col", source, dev, fields.layout, fields.align)

