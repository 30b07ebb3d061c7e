"""Kernel arguments: parameter layout, C types, and packing into the launch buffer (the one place).

The layout (offset and size of each parameter) comes from the driver (``cuFuncGetParamInfo``, CUDA
12.4+) or, on older drivers, from the C types laid out with natural alignment.  The C types come from
a declared signature, the Itanium-mangled name, or the kernel's declaration in the source.  A
:class:`Packer` turns a tuple of Python values into the parameter buffer: per tuple of argument types
it builds a plan once (which value needs converting, and how), then each launch is one
``struct.pack_into`` into a preallocated buffer that a ``void*[]`` already points into.
"""

from __future__ import annotations

import re
import struct
import sys

from .errors import LaunchArgumentError

__all__ = ["Param", "Packer", "build_params", "signature_types", "mangled_types", "source_types",
           "classify", "describe_signature"]

_LONG = "i" if sys.platform == "win32" else "q"
_ULONG = _LONG.upper()
# C type -> (kind, struct code).  kind decides which Python values fit; the code packs them exactly.
_TYPES = {
    "bool": ("bool", "?"), "char": ("int", "b"), "signed char": ("int", "b"),
    "unsigned char": ("int", "B"), "short": ("int", "h"), "unsigned short": ("int", "H"),
    "int": ("int", "i"), "unsigned int": ("int", "I"), "long": ("int", _LONG),
    "unsigned long": ("int", _ULONG), "long long": ("int", "q"), "unsigned long long": ("int", "Q"),
    "int8_t": ("int", "b"), "uint8_t": ("int", "B"), "int16_t": ("int", "h"),
    "uint16_t": ("int", "H"), "int32_t": ("int", "i"), "uint32_t": ("int", "I"),
    "int64_t": ("int", "q"), "uint64_t": ("int", "Q"), "size_t": ("int", "Q"),
    "ptrdiff_t": ("int", "q"), "ssize_t": ("int", "q"), "intptr_t": ("int", "q"),
    "uintptr_t": ("int", "Q"), "float": ("float", "f"), "double": ("float", "d"),
    "__half": ("float", "e"), "half": ("float", "e"), "__nv_bfloat16": ("bf16", "H"),
    "CUdeviceptr": ("int", "Q"),
}
_ALIASES = {"unsigned": "unsigned int", "signed": "int", "signed int": "int", "short int": "short",
            "long int": "long", "long long int": "long long", "unsigned short int": "unsigned short",
            "unsigned long int": "unsigned long", "unsigned long long int": "unsigned long long",
            "signed short": "short", "signed long": "long", "signed long long": "long long"}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|class)\b")


class Param:
    """One kernel parameter: index, offset, size, C type (or None), kind and struct code."""

    __slots__ = ("index", "offset", "size", "ctype", "name", "kind", "code")

    def __init__(self, index, offset, size, ctype=None, name=None):
        self.index, self.offset, self.size, self.ctype, self.name = index, offset, size, ctype, name
        kind, code = classify(ctype) if ctype else (None, None)
        if kind is None:  # a struct, an alias we do not know, or no type at all: bytes of its size
            kind, code = ("struct" if ctype else "raw"), f"{size}s"
        self.kind, self.code = kind, code

    def __repr__(self) -> str:
        return (f"Param({self.index}, offset={self.offset}, size={self.size}, "
                f"ctype={self.ctype!r}, name={self.name!r})")

    @property
    def label(self) -> str:
        text = self.ctype or f"<{self.size} bytes>"
        return f"{text} {self.name}" if self.name else text


def classify(ctype: str):
    """(kind, struct code) of a C type, or (None, None) when only its size can say."""
    text = " ".join(_QUALIFIERS.sub(" ", ctype).split())
    if text.endswith(("*", "&", "]")):
        return "ptr", "Q"
    text = text.removeprefix("::").removeprefix("std::")
    return _TYPES.get(_ALIASES.get(text, text), (None, None))


def _natural(kind, code, ctype):
    if kind is None:
        raise LaunchArgumentError(
            f"cannot lay out parameter type {ctype!r} without the driver's parameter info (CUDA "
            "12.4+ driver): declare it as bytes-sized in a signature, or upgrade the driver")
    return struct.calcsize("<" + code)


def build_params(types, layout, names=None) -> tuple[Param, ...]:
    """Parameters from C types and/or the driver's ``[(offset, size)]``.  Raises LaunchArgumentError."""
    names = names or [None] * len(types or layout or ())
    if layout is not None:
        if types is not None and len(types) != len(layout):
            raise LaunchArgumentError(
                f"the declared signature ({', '.join(types)}) has {len(types)} parameters but "
                f"the compiled kernel has {len(layout)}")
        params = tuple(Param(i, off, size, types[i] if types else None, names[i])
                       for i, (off, size) in enumerate(layout))
        for p in params:
            if p.kind not in ("struct", "raw") and struct.calcsize("<" + p.code) != p.size:
                raise LaunchArgumentError(
                    f"parameter {p.index} is declared {p.ctype!r} but the kernel's parameter is "
                    f"{p.size} bytes: the signature does not match the compiled kernel")
        return params
    if types is None:
        raise LaunchArgumentError(
            "the kernel's parameter types are unknown: pass signature='...' to get_kernel, use a "
            "name expression, or use a driver with CUDA 12.4+ (it reports the layout)")
    params, offset = [], 0
    for i, ctype in enumerate(types):
        kind, code = classify(ctype)
        size = _natural(kind, code, ctype)
        offset = (offset + size - 1) // size * size
        params.append(Param(i, offset, size, ctype, names[i]))
        offset += size
    return tuple(params)


def describe_signature(name: str, params) -> str:
    """``saxpy(const float* x, float a, int n)``, for error messages."""
    return f"{name}({', '.join(p.label for p in params)})"


# ---- C types from a signature string, a mangled name, or the source -------------------------------

def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


_TYPE_WORDS = {"int", "char", "short", "long", "float", "double", "unsigned", "signed", "bool",
               "void", "const", "volatile"} | set(_TYPES)


def _strip_name(decl: str) -> tuple[str, str | None]:
    decl = decl.split("=")[0].strip()
    array = decl.endswith("]")
    decl = re.sub(r"\[[^\]]*\]\s*$", "", decl).strip()
    match = re.search(r"([A-Za-z_]\w*)$", decl)
    name = None
    if match and match.group(1) not in _TYPE_WORDS:
        head = decl[:match.start()].rstrip()
        if head and (head[-1] in "*&>" or head[-1].isalnum() or head[-1] == "_"):
            name, decl = match.group(1), head
    decl = " ".join(re.sub(r"\b(__restrict__|__restrict|restrict)\b", " ", decl).split())
    return decl.replace(" *", "*") + ("*" if array else ""), name


def signature_types(signature: str) -> tuple[list[str], list[str | None]]:
    """C types (and names, where given) of a signature such as ``"const float* x, float, int"``."""
    pairs = [_strip_name(part) for part in _split_top(signature.strip().strip("()"))]
    if pairs == [("void", None)]:
        pairs = []
    return [t for t, _ in pairs], [n for _, n in pairs]


def source_types(source: str, name: str):
    """C types and names of ``__global__`` kernel ``name``'s parameters in ``source``, or None."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    match = re.search(r"__global__[^;{}]*?\b" + re.escape(name) + r"\s*\(", text, flags=re.S)
    if not match:
        return None
    depth, start = 1, match.end()
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return signature_types(text[start:i])
    return None


_BUILTINS = {"v": "void", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
             "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long",
             "m": "unsigned long", "x": "long long", "y": "unsigned long long", "f": "float",
             "d": "double", "e": "long double", "n": "__int128", "o": "unsigned __int128",
             "w": "wchar_t", "z": "..."}


class _Demangler:
    """Enough of the Itanium C++ ABI to read a kernel's parameter types from its mangled name."""

    def __init__(self, text: str):
        self.s, self.i, self.subs, self.targs = text, 0, [], []

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def take(self, n=1):
        out = self.s[self.i:self.i + n]
        self.i += n
        return out

    def number(self) -> int:
        m = re.compile(r"\d+").match(self.s, self.i)
        if not m:
            raise ValueError("number expected")
        self.i = m.end()
        return int(m.group())

    def source_name(self) -> str:
        n = self.number()
        return self.take(n)

    def template_args(self) -> list[str]:
        assert self.take() == "I"
        args = []
        while self.peek() != "E":
            if self.peek() == "L":
                self.take()
                kind = self.type()
                if self.peek() == "n":
                    self.take()
                    value = "-" + str(self.number())
                else:
                    value = str(self.number())
                if self.take() != "E":
                    raise ValueError("literal")
                args.append(f"({kind}){value}")
            elif self.peek() == "J":
                raise ValueError("parameter packs are not read")
            else:
                args.append(self.type())
        self.take()
        return args

    def substitution(self) -> str:
        self.take()  # S
        if self.peek() == "t":
            self.take()
            return "std::" + self.unqualified()
        seq = 0
        if self.peek() != "_":
            m = re.compile(r"[0-9A-Z]+").match(self.s, self.i)
            if not m:
                raise ValueError("substitution")
            self.i = m.end()
            seq = int(m.group(), 36) + 1
        self.take()
        return self.subs[seq]

    def unqualified(self) -> str:
        name = self.source_name()
        if self.peek() == "I":
            self.subs.append(name)
            name += "<" + ", ".join(self.template_args()) + ">"
        return name

    def nested(self) -> str:
        self.take()  # N
        while self.peek() in ("K", "V", "r"):
            self.take()
        parts = []
        while self.peek() != "E":
            if self.peek() == "S":
                parts = [self.substitution()]
            elif self.peek() == "I":
                parts[-1] += "<" + ", ".join(self.template_args()) + ">"
            else:
                parts.append(self.source_name())
            self.subs.append("::".join(parts))
        self.take()
        self.subs.pop()  # the whole nested name is a candidate only as a prefix
        return "::".join(parts)

    def type(self) -> str:
        c = self.peek()
        if c in _BUILTINS:
            self.take()
            return _BUILTINS[c]
        if c in "PRO":
            self.take()
            out = self.type() + {"P": "*", "R": "&", "O": "&&"}[c]
        elif c in "KVr":
            quals = []
            while self.peek() in ("K", "V", "r"):
                quals.append({"K": "const", "V": "volatile", "r": "__restrict__"}[self.take()])
            inner = self.type()
            out = " ".join(q for q in quals if q != "__restrict__") + " " + inner
            out = out.strip()
        elif c == "T":
            self.take()
            index = 0 if self.peek() == "_" else self.number() + 1
            self.take()
            out = self.targs[index]
        elif c == "S":
            out = self.substitution()
            if self.peek() != "I":
                return out
            out += "<" + ", ".join(self.template_args()) + ">"
        elif c == "N":
            name = self.nested()
            self.subs.append(name)
            return name
        elif c.isdigit():
            out = self.unqualified()
        elif self.peek(2) == "Dh":
            self.take(2)
            return "__half"
        else:
            raise ValueError(f"type code {c!r} is not read")
        self.subs.append(out)
        return out

    def parse(self) -> list[str]:
        if self.take(2) != "_Z":
            raise ValueError("not a mangled name")
        if self.peek() == "N":
            self.take()
            parts = []
            while self.peek() != "E":
                if self.peek() == "I":
                    self.subs.append("::".join(parts))
                    self.targs = self.template_args()
                else:
                    if parts:
                        self.subs.append("::".join(parts))
                    parts.append(self.source_name())
            self.take()
        else:
            self.source_name()
            if self.peek() == "I":
                self.subs.append("name")
                self.targs = self.template_args()
        if self.targs:
            self.type()  # a function template's mangled name carries its return type
        params = []
        while self.i < len(self.s):
            params.append(self.type())
        return [] if params == ["void"] else params


def mangled_types(name: str):
    """Parameter C types from an Itanium-mangled name, or None when it cannot be read."""
    if not name.startswith("_Z"):
        return None
    try:
        return _Demangler(name).parse()
    except (ValueError, IndexError, AssertionError):
        return None


# ---- Converting values ------------------------------------------------------------------------

_HOST_HINT = ("it is host memory, but the kernel needs device memory: copy it with "
              "cudaload.alloc(n).copy_from_host(a), or pass a CuPy/PyTorch CUDA array")


class Packer:
    """Packs argument tuples for one kernel on one device, in one thread (it owns its buffer)."""

    def __init__(self, ffi, name: str, params, device_ordinal: int):
        self.params = params
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
            converters = [self._converter(p, t) for p, t in zip(self.params, types)]
            pack = self.plans[types] = _generate(self.struct.pack_into, self.buffer, types,
                                                 converters, self._order, self.device)
        return pack

    def fail(self, args, exc) -> LaunchArgumentError:
        """The precise error for ``args`` after packing them failed with ``exc``."""
        for p, value in zip(self.params, args):
            try:
                converted = (self._converter(p, type(value)) or _same)(value)
                struct.pack("<" + p.code, converted)
            except LaunchArgumentError as err:
                return err
            except (struct.error, OverflowError, TypeError, ValueError) as err:
                return self._error(p, value, _range_text(p) or str(err))
        return LaunchArgumentError(f"{self.signature}: arguments could not be packed: {exc}")

    def _error(self, p, value, why: str) -> LaunchArgumentError:
        if isinstance(value, _Shown):
            shown = f"a {value.tp.__name__}"
        else:
            shown = repr(value)
            shown = f"{type(value).__name__} {shown[:57] + '...' if len(shown) > 60 else shown}"
        return LaunchArgumentError(
            f"argument {p.index} ({p.label}) of {self.name}: {shown} does not fit: {why}; "
            f"signature: {self.signature}")

    def _converter(self, p, tp):
        """None when the value packs as is, else a function making it packable; raises on a type
        that can never fit the parameter."""
        kind = p.kind
        numpy_kind = _numpy_kind(tp)
        if kind == "ptr" or (kind == "raw" and p.size == 8 and _is_array_type(tp)):
            conv = self._pointer(p, tp)
            return _to_bytes(conv, 8) if kind == "raw" else conv
        if kind == "int":
            if (tp is int or tp is bool or numpy_kind in ("i", "u", "b")):
                return None
            raise self._error(p, _Shown(tp), "an integer is needed")
        if kind == "bool":
            if tp is bool or numpy_kind == "b":
                return None
            if tp is int or numpy_kind in ("i", "u"):
                return _bool_from_int
            raise self._error(p, _Shown(tp), "a bool is needed")
        if kind in ("float", "bf16"):
            if tp is float or tp is int or numpy_kind in ("f", "i", "u"):
                return _bf16 if kind == "bf16" else None
            raise self._error(p, _Shown(tp), "a real number is needed")
        if kind == "raw":  # only the size is known
            if tp is int or numpy_kind in ("i", "u"):
                return _raw_int(p.size)
            if (tp is float or numpy_kind == "f") and p.size in (2, 4, 8):
                return _raw_float(p.size)
        if issubclass(tp, (bytes, bytearray, memoryview)) or numpy_kind is not None:
            size = p.size

            def as_bytes(value):
                data = value.tobytes() if hasattr(value, "tobytes") else bytes(value)
                if len(data) != size:
                    raise LaunchArgumentError(self._error(
                        p, value, f"{len(data)} bytes given, the parameter has {size}").args[0])
                return data
            return as_bytes
        raise self._error(p, _Shown(tp), f"{tp.__name__} cannot be passed as {p.label}")

    def _pointer(self, p, tp):
        from .memory import DeviceBuffer

        device, fail = self.device, self._error
        if tp is int:
            return None
        if tp is type(None):
            return _zero
        def from_buffer(value):
            if value.device.ordinal != device:
                raise fail(p, value, _other_device(value.device.ordinal, device))
            return value.ptr

        def from_cupy(value):
            mem = value.data
            if mem.device_id != device:
                raise fail(p, value, _other_device(mem.device_id, device))
            return mem.ptr

        def from_torch(value):
            index = value.get_device()
            if index != device:
                raise fail(p, value, _HOST_HINT if index < 0 else _other_device(index, device))
            return value.data_ptr()

        if issubclass(tp, DeviceBuffer):
            return _Inline("{a}.ptr", "{a}.device.ordinal == D", from_buffer)
        module = tp.__module__.split(".")[0]
        if module == "cupy" and hasattr(tp, "data") and hasattr(tp, "__cuda_array_interface__"):
            return _Inline("{a}.data.ptr", "{a}.data.device_id == D", from_cupy)
        if module == "torch" and hasattr(tp, "data_ptr"):
            return _Inline("{a}.data_ptr()", "{a}.get_device() == D", from_torch)
        if hasattr(tp, "__cuda_array_interface__"):
            def from_cai(value):
                ptr = value.__cuda_array_interface__["data"][0]
                where = _pointer_device(ptr)
                if where is not None and where != device:
                    raise fail(p, value, _other_device(where, device) if where >= 0 else _HOST_HINT)
                return ptr
            return from_cai
        if hasattr(tp, "__dlpack__") and hasattr(tp, "__dlpack_device__"):
            def from_dlpack(value):
                kind, index = value.__dlpack_device__()
                if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
                    raise fail(p, value, _HOST_HINT)
                if index != device:
                    raise fail(p, value, _other_device(index, device))
                return _dlpack_pointer(value)
            return from_dlpack
        if hasattr(tp, "__array_interface__") or hasattr(tp, "__buffer__") or issubclass(
                tp, (bytes, bytearray, memoryview)):
            raise fail(p, _Shown(tp), _HOST_HINT)
        raise fail(p, _Shown(tp), "a device pointer is needed (DeviceBuffer, a CUDA array, "
                                  "or an int address)")


class _Inline:
    """A conversion the generated packer writes inline: an expression and a guard; ``call`` is
    the same conversion as a function, which raises the precise error when the guard fails."""

    __slots__ = ("expr", "guard", "call")

    def __init__(self, expr, guard, call):
        self.expr, self.guard, self.call = expr, guard, call

    def __call__(self, value):
        return self.call(value)


class _Shown:
    """Stands for a value of a type in messages written before any value is seen."""

    def __init__(self, tp):
        self.tp = tp


def _generate(pack_into, buffer, types, converters, order, device):
    """Source-generated packer: one type test and one ``pack_into`` call, no loops or lists."""
    n = len(types)
    names = [f"a{i}" for i in range(n)]
    env = {"pack_into": pack_into, "buf": buffer, "D": device}
    values, guards = [], []
    for i in order:
        conv = converters[i]
        if conv is None:
            values.append(names[i])
        elif isinstance(conv, _Inline):
            values.append(conv.expr.format(a=names[i]))
            guards.append(conv.guard.format(a=names[i]))
        else:
            env[f"c{i}"] = conv
            values.append(f"c{i}({names[i]})")
    checks = " and ".join([f"type(a{i}) is T{i}" for i in range(n)] + guards) or "True"
    env.update({f"T{i}": t for i, t in enumerate(types)})
    unpack = f"{', '.join(names)}, = args" if n else "if args: return False"
    code = (f"def pack(args):\n"
            f"    try:\n        {unpack}\n    except ValueError:\n        return False\n"
            f"    if {checks}:\n        pack_into(buf, 0, {', '.join(values)})\n"
            f"        return True\n    return False\n")
    exec(code, env)  # noqa: S102 - the text is built from integers and fixed names only
    return env["pack"]


def _same(value):
    return value


def _zero(_value):
    return 0


def _bool_from_int(value):
    if value not in (0, 1):
        raise OverflowError("a bool parameter takes 0 or 1")
    return bool(value)


def _bf16(value):
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:  # NaN stays NaN
        return (bits >> 16) | 0x40
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


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
    if tp.__module__ != "numpy" or not hasattr(tp, "dtype"):
        return None
    try:
        import numpy
    except ImportError:
        return None
    if not issubclass(tp, numpy.generic):
        return None
    return numpy.dtype(tp).kind


def _is_array_type(tp) -> bool:
    return any(hasattr(tp, a) for a in ("__cuda_array_interface__", "__dlpack__", "ptr", "data_ptr"))


def _range_text(p) -> str:
    if p.kind != "int":
        return ""
    bits = struct.calcsize("<" + p.code) * 8
    if p.code.islower():
        return f"{p.ctype} holds {-(1 << (bits - 1))}..{(1 << (bits - 1)) - 1}"
    return f"{p.ctype} holds 0..{(1 << bits) - 1}"


def _other_device(where: int, device: int) -> str:
    return (f"the array is on device {where} but the kernel launches on device {device}; copy it, "
            f"or launch on device {where} (cudaload.Device({where}).set_current())")


def _pointer_device(ptr: int):
    """Device ordinal owning ``ptr``, -1 for host memory, None when the driver cannot say."""
    from . import driver

    drv = driver.init()
    out = drv.ffi.new("int *")
    if drv.cuPointerGetAttribute(out, 2, ptr) != 0:  # CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        return None
    if out[0] == 1:  # CU_MEMORYTYPE_HOST
        return -1
    if drv.cuPointerGetAttribute(out, 9, ptr) != 0:  # CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        return None
    return out[0]


def _dlpack_pointer(value) -> int:
    """Data address of a DLPack tensor (DLTensor: data at 0, byte_offset at 40)."""
    import ctypes

    from . import driver

    capsule = value.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get(capsule, b"dltensor")
    words = driver.api().ffi.cast("uint64_t *", address)
    return int(words[0]) + int(words[5])
