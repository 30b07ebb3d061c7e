"""ObjectCode: device code (CUBIN, PTX, fatbin, LTO IR or a library) and what is known about it,
and its bytes as the kernel cache and bundles keep it (:func:`encode`, :func:`decode`).

The bytes of an entry: ``HEADER`` (magic, format version, metadata length, code length, the key it
was stored under, sha256 of key, metadata and code), then the metadata as JSON (kind, arch, log,
lowered names; ``linked`` and ``linker`` where set), then the code.  ``linker`` is the linker that
made a ``cudaload.Linker``'s code ("nvJitLink" or "driver"), which a hit reports; another value
is a broken entry.  The key makes an entry prove where it belongs: one copied or
renamed to another key's file is a miss there.  Bundle entries are stored under no key (zeros),
and a bundle written before keys were recorded holds entries of format 1, which lack the field;
both are read only when no key is asked for.

Imports of cudaload: _cache_folder (the format's number), _hooks, _prepare (sha256), _untrusted.
"""

from __future__ import annotations

import os
import _thread

from . import _hooks
from .._base import _untrusted
from ._cache_folder import FORMAT
from ._prepare import sha256

__all__ = ["ObjectCode", "FORMAT", "MAGIC", "HEADER", "MAX_ENTRY_BYTES", "LINKERS", "encode",
           "decode", "check"]

KINDS = ("cubin", "ptx", "fatbin", "ltoir", "library")
LINK_ONLY = ("ltoir", "library")  # kinds the driver cannot load: inputs of cudaload.Linker
LINKERS = ("nvJitLink", "driver")  # which linker made a Linker's code (ObjectCode._linker)
_FATBIN_MAGIC = b"\x50\xed\x55\xba"

_LTOIR_MAGIC = b"\xedCN\x7f"  # NVRTC's and nvcc's LTO IR (an NVVM container)
_LIBRARY_MAGIC = b"!<arch>\n"  # an ar archive such as libcudadevrt.a


def _ptx_line(pattern: bytes, data: bytes):
    """The first match of ``pattern`` at the start of a line of PTX ``data``, or None."""
    import re  # deferred: only PTX given as bytes or a file is read this way

    return re.search(pattern, data, re.M)


class ObjectCode:
    """Device code: ``.code`` (bytes), ``.kind``, ``.arch``, ``.name`` (the program or file it
    came from, None where unknown), ``.log``,
    ``.lowered_names`` (name expression -> mangled name), ``.cached`` (None, "memory", "disk")
    and ``.linked``: whether nvJitLink made it from LTO IR (``Program(..., lto=True)``), which
    removes the device variables device code does not need and folds the reads of those it
    never writes, so that the host cannot reach them (its module's ``get_global`` refuses).
    CUBIN, PTX and fatbins load; LTO IR and libraries (``.a``) are linked first
    (``cudaload.Linker``).

    Plain data.  What made it may add two fields: ``.source``, the CUDA source, where the launch
    side reads parameter types a mangled name does not give; and ``.origin``, what compiled it, as
    data (for a Program, its prepared arguments and the request), which the compiler is handed
    back when the driver refuses this code (cudaload.compile.program.recompile_refused): it holds
    no Program, so a dropped Program is collected while its code lives on.

    It pickles as its data alone: code, kind, arch, name, log, lowered names, linked and source,
    so that the receiving process rebuilds it without loading any CUDA library and launches its
    kernels with the same parameter types.  What belongs to this process stays here: the loaded module,
    ``.cached`` (how this process's caches found it: None in the receiver) and ``.origin``,
    which would carry the program's inputs and this process's cache key along; a driver there that
    refuses the code raises its error (send the Program instead where the receiver should
    compile for itself)."""

    def __init__(self, code: bytes, kind: str, arch: str | None = None, *, log: str = "",
                 lowered_names: dict | None = None, cached: str | None = None,
                 source: str | None = None, origin=None, module: ModuleSlot | None = None,
                 linked: bool = False, name: str | None = None):
        self.code = code
        self.name = name
        self.linked = linked
        self.kind = kind
        self.arch = arch
        self.log = log
        self.lowered_names = lowered_names if lowered_names is not None else {}
        self.cached = cached
        self.source = source
        self.origin = origin
        # Which of LINKERS made it, set by cudaload.Linker and kept in its cache entry, so that a
        # hit reports it (Linker.linker); None for code no Linker made.
        self._linker: str | None = None
        # Shared with the copies _as makes (the memory cache's among them), so code compiled once
        # is loaded once however many kernels are made from it.
        self._module = module if module is not None else ModuleSlot()

    def __repr__(self) -> str:
        via = f", cached={self.cached!r}" if self.cached else ""
        of = f" of {self.name}" if self.name else ""
        return f"<ObjectCode {self.kind}{of} {self.arch or '?'} {len(self.code)} bytes{via}>"

    def __reduce__(self) -> tuple:
        return (_rebuild, ({"code": self.code, "kind": self.kind, "arch": self.arch,
                            "log": self.log, "lowered_names": dict(self.lowered_names),
                            "source": self.source, "linked": self.linked, "name": self.name},))

    def _as(self, cached: str | None) -> ObjectCode:
        copy = ObjectCode(self.code, self.kind, self.arch, log=self.log,
                          lowered_names=self.lowered_names, cached=cached, source=self.source,
                          origin=self.origin, module=self._module, linked=self.linked,
                          name=self.name)
        copy._linker = self._linker
        return copy

    @classmethod
    def from_bytes(cls, data, kind: str, name: str | None = None) -> ObjectCode:
        """Wrap device code made elsewhere (``name``: where it came from, shown in link errors).
        Raises ValueError for an unknown kind or wrong bytes."""
        data = bytes(data)
        if kind == "ptx":
            data = data.rstrip(b"\0")
        check(data, kind)
        return cls(data, kind, _arch_of(data, kind), name=name)

    @classmethod
    def from_file(cls, path) -> ObjectCode:
        """Read a .cubin, .ptx, .fatbin, .ltoir or .a file (kind from the extension, else from
        the contents), named by the file's name.

        Raises OSError when unreadable, ValueError when the contents are not device code.
        """
        with open(path, "rb") as f:
            data = f.read()
        ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
        if ext in KINDS:
            kind = ext
        elif ext == "a" or data.startswith(_LIBRARY_MAGIC):
            kind = "library"
        else:
            kind = next((k for k, magic in _MAGICS if data.startswith(magic)), "ptx")
        return cls.from_bytes(data, kind, name=os.path.basename(os.fspath(path)))

    def load(self) -> _hooks.Loaded:
        """The Module holding this code, loaded on the first call and the same one after it.

        A RawKernel made again from the same source (as code written for CuPy does in a loop)
        then costs no new load, and the module stays loaded while the code is in the memory
        cache, so a CUDA graph that captured its kernels can still replay them after the kernel
        objects are gone.  ``cudaload.Module(obj)`` loads a separate copy.  Raises ValueError
        for LTO IR or a library, which the driver cannot load."""
        if self.kind in LINK_ONLY:
            raise ValueError(f"{self!r} cannot be loaded: {self.kind} is linked first, e.g. "
                             f"cudaload.Linker(obj).link() gives a CUBIN that loads")
        module = self._module.module
        if module is None:
            module = _hooks.load(self)  # module.load_once: the launch side, above this module
        return module


class ModuleSlot:
    """Where the Module loaded from a code is kept once loaded (``module``, None before), with the
    lock its one load holds (``lock``): shared by an ObjectCode and its copies."""

    __slots__ = ("module", "lock")

    def __init__(self):
        self.module: _hooks.Loaded | None = None
        self.lock = _thread.allocate_lock()


def _rebuild(fields: dict) -> ObjectCode:
    """An unpickled ObjectCode.  Fields this version does not know (from a newer cudaload) are
    ignored, so code pickled by it still loads here."""
    return ObjectCode(fields["code"], fields["kind"], fields.get("arch"), log=fields.get("log", ""),
                      lowered_names=fields.get("lowered_names"), source=fields.get("source"),
                      linked=fields.get("linked") is True, name=fields.get("name"))


_MAGICS = (("cubin", b"\x7fELF"), ("fatbin", _FATBIN_MAGIC), ("ltoir", _LTOIR_MAGIC))


def check(data: bytes, kind: str) -> None:
    """Raise ValueError where ``data`` is no device code of ``kind`` (an unknown kind, no bytes,
    not the kind's header or, for PTX, no ``.version``): what ``from_bytes`` refuses, and what
    cudaload.Linker refuses of an ObjectCode made by its constructor, which checks nothing."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if not data:
        raise ValueError(f"no bytes: an empty {kind.upper()} holds no device code")
    if kind == "cubin" and not data.startswith(b"\x7fELF"):
        raise ValueError("these bytes are not a CUBIN (no ELF header)")
    if kind == "fatbin" and not data.startswith(_FATBIN_MAGIC):
        raise ValueError("these bytes are not a fatbin (no fatbin header)")
    if kind == "ltoir" and not data.startswith(_LTOIR_MAGIC):
        raise ValueError("these bytes are not LTO IR (no NVVM container header); NVRTC makes "
                         "it with Program(source).compile(output='ltoir')")
    if kind == "library" and not data.startswith(_LIBRARY_MAGIC):
        raise ValueError("these bytes are not a library (no ar archive header, as "
                         "libcudadevrt.a has)")
    if kind == "ptx" and not _ptx_line(rb"^\s*\.version\s+\d", data[:65536]):
        raise ValueError("these bytes are not PTX (no .version directive); CUDA C++ "
                         "source is compiled with cudaload.Program(source).compile()")


def _arch_of(data: bytes, kind: str) -> str | None:
    if kind == "cubin" and len(data) >= 0x34 and data[4] == 2:  # 64-bit ELF: e_flags at 0x30
        return f"sm_{data[0x31]}"  # e_flags (little-endian) bits 8-15: the SM number
    if kind == "ptx":
        match = _ptx_line(rb"^\s*\.target\s+(sm_\w+)", data[:4096])
        return match.group(1).decode() if match else None
    return None


# ---- the bytes of an ObjectCode, in the kernel cache and in bundles ---------------------------

MAX_ENTRY_BYTES = 1 << 30  # far beyond any CUBIN; a larger file is not an entry
MAGIC = b"CUDALDKC"
# HEADER's layout, little-endian: magic (8 bytes), format (2), metadata length (4), code length
# (8), key (32), digest (32).  Read and written here with slices and int.from_bytes, not struct:
# importing struct (and its _struct extension) cost a disk hit in a fresh process 0.5-0.8 ms.
# HEADER itself, a struct.Struct of that layout, is made when asked for (see __getattr__).
_HEADER_FORMAT = "<8sHIQ32s32s"
_HEADER_SIZE = 86
_KEYLESS_FORMAT = 1  # entries without a key, still found in older bundles
_KEYLESS_HEADER_FORMAT = "<8sHIQ32s"  # no key: the digest where the key is in HEADER
_KEYLESS_SIZE = 54
_NO_KEY = bytes(32)
_ENTRY_KINDS = ("cubin", "ptx", "ltoir")  # what compiles and links make
_META_DEPTH = 3  # {"lowered_names": {...}}: anything deeper is not what this version writes


def _key_bytes(key: str | None) -> bytes:
    if key is None:
        return _NO_KEY
    if len(key) == 64:
        try:
            return bytes.fromhex(key)  # the cache's keys are sha256 hex digests
        except ValueError:
            pass
    return sha256(key.encode()).digest()


def encode(obj: ObjectCode, key: str | None = None) -> bytes:
    """The bytes of the cache entry holding ``obj`` stored under ``key`` (None: a bundle's)."""
    # "linked" and "linker" only where set: the entries of other programs stay as earlier
    # versions wrote them.
    meta = _untrusted.dump_json({"kind": obj.kind, "arch": obj.arch, "log": obj.log,
                                 "lowered_names": obj.lowered_names,
                                 **({"linked": True} if obj.linked else {}),
                                 **({"linker": obj._linker} if obj._linker else {})},
                                sort_keys=True).encode()
    tag = _key_bytes(key)
    digest = sha256(tag + meta + obj.code).digest()
    return b"".join((MAGIC, FORMAT.to_bytes(2, "little"), len(meta).to_bytes(4, "little"),
                     len(obj.code).to_bytes(8, "little"), tag, digest, meta, obj.code))


def decode(data: bytes, key: str | None = None) -> ObjectCode | None:
    """The ObjectCode in a cache entry, or None if the entry is truncated, corrupt, foreign, or
    (with ``key``) stored under another key."""
    if len(data) < _KEYLESS_SIZE or data[:8] != MAGIC:
        return None
    version = int.from_bytes(data[8:10], "little")
    meta_len = int.from_bytes(data[10:14], "little")
    code_len = int.from_bytes(data[14:22], "little")
    if version == FORMAT and len(data) >= _HEADER_SIZE:
        tag, digest = data[22:54], data[54:86]
        if key is not None and tag != _key_bytes(key):
            return None
        start = _HEADER_SIZE
    elif version == _KEYLESS_FORMAT and key is None:
        tag, digest, start = None, data[22:54], _KEYLESS_SIZE
    else:
        return None
    if len(data) != start + meta_len + code_len:
        return None
    body = memoryview(data)[start:]
    hashed = sha256(tag or b"", len(body))
    hashed.update(body)
    if hashed.digest() != digest:
        return None
    try:
        meta = _untrusted.load_json(bytes(body[:meta_len]), _META_DEPTH)
        kind, arch, log, names = meta["kind"], meta["arch"], meta["log"], meta["lowered_names"]
        linked, linker = meta.get("linked", False), meta.get("linker")
    except (ValueError, KeyError, TypeError):
        return None
    # An entry whose hash matches but whose fields are not what this version writes (another
    # writer using the same format number) is a miss, not an ObjectCode the driver chokes on.
    if kind not in _ENTRY_KINDS or not isinstance(arch, (str, type(None))) \
            or not isinstance(log, str) or not isinstance(names, dict) or type(linked) is not bool \
            or not (linker is None or linker in LINKERS) \
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        return None
    obj = ObjectCode(bytes(body[meta_len:]), kind, arch, log=log, lowered_names=dict(names),
                     cached="disk", linked=linked is True)
    obj._linker = linker
    return obj


def __getattr__(name: str):
    # HEADER and _KEYLESS_HEADER as struct.Struct, for what packs entries field by field (tests,
    # tools): made when asked for, so that a disk hit imports no struct (see _HEADER_FORMAT).
    if name in ("HEADER", "_KEYLESS_HEADER"):
        import struct  # deferred: see above

        layout = struct.Struct(_HEADER_FORMAT if name == "HEADER" else _KEYLESS_HEADER_FORMAT)
        globals()[name] = layout
        return layout
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
