"""Kernel arguments: converting Python values and packing them into the launch buffer (one place).

A :class:`Packer` turns a tuple of Python values into the parameter buffer of one kernel, by the
parameters ``signature.build_params`` described: per tuple of argument types it builds a plan once
(which value needs converting, and how), then each launch is one ``struct.pack_into`` into a
preallocated buffer that a ``void*[]`` already points into.
"""

from __future__ import annotations

import operator
import re
import struct
import sys

from ._addresses import Inline as _Inline, conversion as _address
from ._foreign import short as _short
from ._generated import define
from ..errors import LaunchArgumentError
from .signature import describe_signature

__all__ = ["Packer", "PACK_ERRORS"]

# What converting or packing a value that does not fit raises; AttributeError: an array whose
# __cuda_array_interface__ property refuses (a CPU array of some libraries).
PACK_ERRORS = (struct.error, OverflowError, TypeError, ValueError, AttributeError)


class Packer:
    """Packs argument tuples for one kernel on one device, in one thread (it owns its buffer)."""

    def __init__(self, ffi, name: str, params, device_ordinal: int):
        self.params = params
        self._ffi = ffi
        self.name = name
        self.device = device_ordinal
        self.signature = describe_signature(name, params)
        fmt, pos = "<", 0
        for p in sorted(params, key=lambda p: p.offset):
            fmt += (f"{p.offset - pos}x" if p.offset > pos else "") + p.code
            pos = p.offset + p.size
        self.struct = struct.Struct(fmt)
        order = sorted(range(len(params)), key=lambda i: params[i].offset)
        self._order = order
        # A bytearray packs faster than a cffi buffer; cffi points into it, and it never resizes.
        self.buffer = bytearray(max(pos, 1))
        self._address = ffi.from_buffer(self.buffer)
        self.pointers = ffi.new("void *[]", max(len(params), 1))
        for p in params:
            self.pointers[p.index] = self._address + p.offset
        self.plans: dict = {}

    def plan(self, types):
        """The packing function for arguments of exactly these types: it packs and returns True,
        or returns False (packing nothing) when given other types.  Raises LaunchArgumentError."""
        if len(types) != len(self.params):
            raise LaunchArgumentError(
                f"{self.name} takes {len(self.params)} arguments, {len(types)} given; "
                f"signature: {self.signature}")
        pack = self.plans.get(types)
        if pack is None:
            pack = self.plans[types] = _generate(self.pieces(types), self.name)
        return pack

    def another(self) -> Packer:
        """A packer of the same kernel and device with a buffer of its own (a graph's kernel
        node keeps one)."""
        return Packer(self._ffi, self.name, self.params, self.device)

    def pack(self, args) -> None:
        """Pack the tuple ``args`` into the buffer, converted as a launch converts them (for a
        graph's kernel node, which the driver copies).  Raises LaunchArgumentError."""
        if not isinstance(args, tuple):
            raise TypeError(f"{self.name}: the kernel arguments are a tuple, not "
                            f"{type(args).__name__}")
        try:
            packed = self.plan(tuple(map(type, args)))(args)
        except LaunchArgumentError:
            raise
        except PACK_ERRORS as exc:
            raise self.fail(args, exc) from None
        if not packed:  # right types, but a guard failed (e.g. an array on another device)
            raise self.fail(args, None)

    def pieces(self, types) -> tuple[list, list[int], dict]:
        """The generated text of a plan for ``types`` (of the right count): per argument ``a<i>``
        its value expression (None where it is packed as it is) and guard (None where there is
        none), the argument indices in buffer order, and the names the text refers to (``T<i>``
        for each argument's type).  Raises LaunchArgumentError."""
        converters = [self._converter(p, t) for p, t in zip(self.params, types)]
        return _pieces(self.struct.pack_into, self.buffer, types, converters, self._order,
                       self.device)

    def fail(self, args, exc) -> LaunchArgumentError:
        """The precise error for ``args`` after packing them failed with ``exc``."""
        for p, value in zip(self.params, args):
            try:
                converted = (self._converter(p, type(value)) or _same)(value)
                struct.pack("<" + p.code, converted)
            except LaunchArgumentError as err:
                return err
            except PACK_ERRORS as err:
                return self._error(p, value, _range_text(p) or str(err))
        return LaunchArgumentError(f"{self.signature}: arguments could not be packed: {exc}")

    def _error(self, p, value, why: str) -> LaunchArgumentError:
        if isinstance(value, _Shown):
            shown = f"a {value.tp.__name__}"
        else:
            shown = f"{type(value).__name__} {_short(value)}"
        return LaunchArgumentError(
            f"argument {p.index} ({p.label}) of {self.name}: {shown} does not fit: {why}; "
            f"signature: {self.signature}")

    def _converter(self, p, tp):
        """None when the value packs as is, else a function making it packable; raises on a type
        that can never fit the parameter."""
        return _CONVERTERS[p.kind](self, p, tp)

    def _pointer(self, p, tp):
        """None when the value packs as a device address as is, else a function making it one
        (an ``Inline`` where the packer can test and convert it in place); raises on a type that
        holds no device address."""
        if tp is int:
            return None
        if tp is type(None):
            return _zero
        if (issubclass(tp, int) and tp is not bool) or _numpy_kind(tp) in ("i", "u"):
            return int  # an address held by an IntEnum or a numpy integer
        if _ctypes_code(tp) == "P":  # ctypes.c_void_p: its value, None for NULL
            return _void_p
        conv = _address(tp, self._error, p, self.device)
        if conv is not None:
            return conv
        raise self._error(p, _Shown(tp), "a device pointer is needed (DeviceBuffer, a CUDA "
                                         "array, or an int address)")


# ---- converters by parameter kind (Param.kind): (packer, param, type) -> None or a function ---

def _for_pointer(packer, p, tp):
    return packer._pointer(p, tp)


# The exact types come first in each converter: the plan for them is what most launches use.

def _for_int(packer, p, tp):
    numpy_kind = _numpy_kind(tp)
    if tp is int or tp is bool or numpy_kind in ("i", "u"):
        return None
    if issubclass(tp, int) or numpy_kind == "b":  # IntEnum, numpy.bool_: int() first
        return int
    if _ctypes_code(tp) in _CTYPES_INTEGERS:  # c_int8 ... c_uint64, c_bool: their value
        return _VALUE
    raise packer._error(p, _Shown(tp), "an integer is needed")


def _for_bool(packer, p, tp):
    numpy_kind = _numpy_kind(tp)
    if tp is bool or numpy_kind == "b":
        return None
    if tp is int or numpy_kind in ("i", "u"):
        return _bool_from_int
    if _ctypes_code(tp) == "?":
        return _VALUE
    raise packer._error(p, _Shown(tp), "a bool is needed")


def _for_real(packer, p, tp):
    if tp is float or tp is int or _numpy_kind(tp) in ("f", "i", "u") or (
            issubclass(tp, (int, float)) and tp is not bool):  # subclasses pack as their value
        return _bf16 if p.kind == "bf16" else None
    code = _ctypes_code(tp)
    if code is not None and (code in "fd" or code in _CTYPES_INTEGERS and code != "?"):
        return _bf16_of_value if p.kind == "bf16" else _VALUE
    raise packer._error(p, _Shown(tp), "a real number is needed")


def _for_raw(packer, p, tp):
    """Only the parameter's size is known: an 8-byte one takes an array's address."""
    if p.size == 8 and _is_array_type(tp):
        return _to_bytes(packer._pointer(p, tp), 8)
    numpy_kind = _numpy_kind(tp)
    if tp is int or numpy_kind in ("i", "u") or (issubclass(tp, int) and tp is not bool):
        return _raw_int(p.size)  # an int subclass too: an IntEnum, a ConditionalHandle
    if (tp is float or numpy_kind == "f") and p.size in (2, 4, 8):
        return _raw_float(p.size)
    return _for_bytes(packer, p, tp)


def _for_bytes(packer, p, tp):
    """A struct (or a raw parameter no number fits): bytes of exactly its size; a complex value
    for a complex parameter (or a raw one of 8 or 16 bytes) as its two parts."""
    if issubclass(tp, complex) or _numpy_kind(tp) == "c":
        if p.size in (8, 16) and (p.kind == "raw" or _COMPLEX_TYPE.search(p.ctype)):
            return _complex(p.size)
        raise packer._error(p, _Shown(tp), f"a complex value fits a parameter of "
                                           f"cuda::std::complex<float> or float2 (8 bytes), "
                                           f"complex<double> or double2 (16), not {p.label}")
    if not issubclass(tp, (bytes, bytearray, memoryview)) and _numpy_kind(tp) is None:
        raise packer._error(p, _Shown(tp), f"{tp.__name__} cannot be passed as {p.label}")
    size, fail = p.size, packer._error

    def as_bytes(value):
        data = value.tobytes() if hasattr(value, "tobytes") else bytes(value)
        if len(data) != size:
            raise LaunchArgumentError(
                fail(p, value, f"{len(data)} bytes given, the parameter has {size}").args[0])
        return data
    return as_bytes


_CONVERTERS = {"ptr": _for_pointer, "int": _for_int, "bool": _for_bool, "float": _for_real,
               "bf16": _for_real, "raw": _for_raw, "struct": _for_bytes}


class _Shown:
    """Stands for a value of a type in messages written before any value is seen."""

    def __init__(self, tp):
        self.tp = tp


def _pieces(pack_into, buffer, types, converters, order, device):
    """See :meth:`Packer.pieces`."""
    env = {"pack_into": pack_into, "buf": buffer, "D": device}
    conversions = []
    for i, (tp, conv) in enumerate(zip(types, converters)):
        env[f"T{i}"] = tp
        if conv is None:
            conversions.append((None, None))
        elif isinstance(conv, _Inline):
            conversions.append((conv.expr.format(a=f"a{i}"), conv.guard.format(a=f"a{i}")))
        else:
            env[f"c{i}"] = conv
            conversions.append((f"c{i}(a{i})", None))
    return conversions, order, env


def _generate(pieces, name: str):
    """Source-generated packer: one type test and one ``pack_into`` call, no loops or lists; its
    text reads as the file ``<cudaload packer NAME#N>`` in tracebacks."""
    conversions, order, env = pieces
    n = len(conversions)
    checks = [f"type(a{i}) is T{i}" for i in range(n)] + [g for _, g in conversions if g]
    values = [conversions[i][0] or f"a{i}" for i in order]
    unpack = f"{', '.join(f'a{i}' for i in range(n))}, = args" if n else "if args: return False"
    code = (f"def pack(args):\n"
            f"    try:\n        {unpack}\n    except ValueError:\n        return False\n"
            f"    if {' and '.join(checks) or 'True'}:\n"
            f"        pack_into(buf, 0, {', '.join(values)})\n"
            f"        return True\n    return False\n")
    return define(code, env, "pack", "packer", name)


def _same(value):
    return value


def _zero(_value):
    return 0


def _bool_from_int(value):
    if value not in (0, 1):
        raise OverflowError("a bool parameter takes 0 or 1")
    return bool(value)


def _bf16(value):
    """The bits of the ``__nv_bfloat16`` nearest to ``value`` (ties to even), rounded once from
    the double: rounding to float first and then to bfloat16 can land one step off."""
    value = float(value)
    bits = struct.unpack("<I", struct.pack("<f", value))[0]  # OverflowError beyond float's range
    if value != value or value in (_INF, -_INF):
        return (bits >> 16) | (0x40 if value != value else 0)  # NaN stays NaN
    sign, low = bits & 0x80000000, bits & 0x7FFF0000
    # The float rounding left |value| within half a float step of [low, low + one bfloat16 step]:
    # the nearer end is the answer (the differences are exact, the ends being that close).
    below = _F32.unpack(_U32.pack(low))[0]
    above = 2.0 ** 128 if low == 0x7F7F0000 else _F32.unpack(_U32.pack(low + 0x10000))[0]
    magnitude = abs(value)
    up = magnitude - below > above - magnitude or (
        magnitude - below == above - magnitude and (low >> 16) & 1)
    out = low + 0x10000 if up else low
    if out >= 0x7F800000:
        raise OverflowError("__nv_bfloat16 holds magnitudes up to 3.3895e38")
    return (sign | out) >> 16


_INF = float("inf")
_F32, _U32 = struct.Struct("<f"), struct.Struct("<I")


def _raw_int(size):
    def convert(value):
        value = int(value)
        return value.to_bytes(size, "little", signed=value < 0)
    return convert


def _raw_float(size):
    code = {2: "<e", 4: "<f", 8: "<d"}[size]
    return lambda value: struct.pack(code, value)


def _to_bytes(conv, size):
    def convert(value):
        return ((conv or _same)(value)).to_bytes(size, "little")
    return convert


def _numpy_kind(tp):
    """The numpy dtype kind of a numpy scalar type (a subclass too), else None; never imports
    numpy (a numpy scalar exists only once numpy is imported)."""
    numpy = sys.modules.get("numpy")
    if numpy is None or not hasattr(tp, "dtype") or not issubclass(tp, numpy.generic):
        return None
    return numpy.dtype(tp).kind


def _ctypes_code(tp):
    """The ``_type_`` code of a ctypes simple type (a subclass too: c_int's is "i"), else None."""
    ctypes = sys.modules.get("ctypes")
    if ctypes is None or not issubclass(tp, ctypes._SimpleCData):
        return None
    return tp._type_


_CTYPES_INTEGERS = frozenset("bBhHiIlLqQ?")  # c_int8 ... c_uint64 and their aliases, c_bool
_VALUE = operator.attrgetter("value")
_COMPLEX_TYPE = re.compile(r"complex|\b(float2|double2)\b", re.IGNORECASE)


def _void_p(value):
    return value.value or 0


def _bf16_of_value(value):
    return _bf16(value.value)


def _complex(size):
    parts = struct.Struct("<ff" if size == 8 else "<dd")

    def convert(value):
        value = complex(value)
        return parts.pack(value.real, value.imag)
    return convert


def _is_array_type(tp) -> bool:
    return any(hasattr(tp, a) for a in ("__cuda_array_interface__", "__dlpack__", "ptr", "data_ptr"))


def _range_text(p) -> str:
    if p.kind != "int":
        return ""
    bits = struct.calcsize("<" + p.code) * 8
    if p.code.islower():
        return f"{p.ctype} holds {-(1 << (bits - 1))}..{(1 << (bits - 1)) - 1}"
    return f"{p.ctype} holds 0..{(1 << bits) - 1}"
