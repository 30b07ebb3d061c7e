"""Bundles: precompiled kernels shipped inside a host package, used before NVRTC is needed.

``cudaload precompile ... -o pkg/_kernels.bundle`` compiles a package's programs for listed archs
and writes one file; the package passes ``bundle=Bundle.from_resource("pkg", "_kernels.bundle")``
to its :class:`~cudaload.Program` objects.  ``Program.compile`` asks the bundle first: an entry is
used when it was made from the same program (the program's digest: source, name, in-memory headers,
included files, options and name expressions) for an arch the device can run.  Otherwise, or when
the file is missing or damaged, the program is compiled as usual.  A PTX program
(``code_type="ptx"``) is filed under its digest (PTX text, name and link options) and its entries
are CUBINs linked from that PTX, used before anything is linked (compile/link/_ptx_input.py).  The
bundle needs neither NVRTC, nvJitLink nor ``cuda.pathfinder``, and is independent of the
toolchain that reads it.

Layout::

    MAGIC, format (u16), index length (u32)      BUNDLE_HEADER
    index: JSON {"cudaload": version, "entries": [{"program", "name", "kind", "arch",
                 "name_expressions", "offset", "length", "nvrtc" (optional)}, ...]}
    entries: each one the bytes of a kernel cache entry (objectcode.encode), with its own integrity hash

A CUBIN runs on its own arch and on later minor revisions of the same major (sm_80 code runs on
sm_86 and sm_89), so the bundle picks the exact arch, else the newest same-major one not newer than
the device.  Arch-specific targets (sm_90a) are only used for exactly that arch, and so is LTO IR
(``output="ltoir"``, linked later by ``cudaload.Linker``).
"""

from __future__ import annotations

import json
import os
import _thread
import struct

from .._base import _atomic, _untrusted
from .._base._warn import warn
from .objectcode import decode, encode
from .objectcode import ObjectCode
from .options import parse_arch

__all__ = ["Bundle", "BundleWarning", "MAGIC", "FORMAT"]

MAGIC = b"CUDALDKB"
FORMAT = 1
BUNDLE_HEADER = struct.Struct("<8sHI")


class BundleWarning(UserWarning):
    """A bundle file cannot be read; its kernels are compiled instead."""


class Bundle:
    """Precompiled kernels by (program digest, kind, arch).  Read on first lookup, not before."""

    def __init__(self, data: bytes | None = None, *, origin: str = "<bytes>", reader=None):
        self.origin = origin
        self._reader = reader if data is None else (lambda: data)
        self._lock = _thread.allocate_lock()
        self._index: dict | None = None  # (digest hex, kind, arch) -> entry dict
        self._data = b""
        self._new: list[tuple[dict, bytes]] = []  # entries added by add(), for to_bytes()

    @classmethod
    def from_file(cls, path) -> Bundle:
        """The bundle in file ``path``; a missing file is an empty bundle (kernels get compiled)."""
        path = os.fspath(path)

        def read() -> bytes | None:
            try:
                return _read(path)
            except FileNotFoundError:
                return None
        return cls(origin=path, reader=read)

    @classmethod
    def from_resource(cls, package: str, resource: str) -> Bundle:
        """The bundle shipped as package data; missing is empty, as for :meth:`from_file`."""
        def read() -> bytes | None:
            from importlib import resources  # deferred: only this path needs it

            node = resources.files(package).joinpath(*resource.split("/"))
            if not node.is_file():
                return None
            return _read(node) if isinstance(node, os.PathLike) else node.read_bytes()
        return cls(origin=f"{package}:{resource}", reader=read)

    def __repr__(self) -> str:
        return f"<cudaload.Bundle {self.origin}>"

    def __len__(self) -> int:
        return len(self._entries().keys() | {_key(meta) for meta, _blob in self._new})

    def entries(self) -> list[dict]:
        """What the bundle holds: per entry the program's name, kind, arch, name expressions and
        the NVRTC release that made it (None where the bundle does not say)."""
        return [{k: e.get(k) for k in ("program", "name", "kind", "arch", "name_expressions",
                                        "nvrtc")} for e in self._entries().values()]

    def check(self) -> None:
        """Raise ValueError when the bundle is there but cannot be read (a missing one is
        empty; a pipe or device is no bundle), OSError when it cannot be opened."""
        data = self._reader() if self._reader is not None else None
        if data is not None:
            _parse(data)

    # ---- reading -------------------------------------------------------------------------------

    def _entries(self) -> dict:
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._load()
        return self._index

    def _load(self) -> dict:
        try:
            data = self._reader() if self._reader is not None else None
            if data is None:
                return {}
            index = _parse(data)
        except (ValueError, OSError) as exc:
            # As a broken cache entry is a miss, a bundle that cannot be read or opened costs
            # compiles, not the compile call.
            step = ("rebuild it with `cudaload precompile ... -o FILE` using this cudaload version"
                    if isinstance(exc, ValueError) else "check that the file can be read")
            warn(f"cudaload: kernel bundle {self.origin} cannot be used ({exc}); its kernels "
                 f"will be compiled. Next step: {step}", BundleWarning)
            return {}
        self._data = data
        return index

    def find(self, program, arch, output: str = "auto", *, digest: bytes | None = None
             ) -> ObjectCode | None:
        """The entry of ``program`` for a device of ``arch``, or None (then compile).
        ``digest``: the program's digest with the files it reads, if the caller has it.  The
        Program that asked gives the result its way to compile again (Program._own)."""
        if output == "ptx":
            return None
        entries = self._entries()
        if not entries:
            return None
        want = parse_arch(arch)
        key = (digest or program._bundle_digest()).hex()
        kind = "ltoir" if output == "ltoir" else "cubin"  # LTO IR: for exactly the arch asked
        entry = entries.get((key, kind, want.sm()))
        if entry is None and not want[1] and output == "auto":  # a CUBIN of an older minor
            usable = [parse_arch(a) for d, k, a in entries
                      if d == key and k == "cubin"]
            usable = [a for a in usable if not a[1] and a.number // 10 == want.number // 10
                      and a.number < want.number]
            if usable:
                entry = entries[(key, "cubin", max(usable).sm())]
        if entry is None:
            return None
        start = entry["offset"]
        obj = decode(self._data[start:start + entry["length"]])
        if obj is None:  # a damaged entry is a miss; its neighbours may be fine
            return None
        return obj._as("bundle")

    # ---- writing -------------------------------------------------------------------------------

    def add(self, program, obj: ObjectCode, nvrtc: str | None = None) -> None:
        """Add ``obj``, compiled from ``program``, replacing an entry for the same kind and arch;
        ``nvrtc``: the release of the NVRTC that made it ("12.9"), kept in the index because a
        CUBIN made before CUDA 13 does not say which toolkit made it, and that decides which
        drivers load it.

        Raises ValueError for code that is not a CUBIN or LTO IR with a known arch."""
        if obj.kind not in _KINDS or not obj.arch:
            raise ValueError(f"a bundle holds CUBINs and LTO IR for a known arch, not {obj!r}: "
                             "compile with output='cubin' (or 'ltoir') and an arch NVRTC "
                             "supports")
        meta = {"program": program._bundle_digest().hex(), "name": program.name, "kind": obj.kind,
                "arch": obj.arch, "name_expressions": list(program.name_expressions),
                **({"nvrtc": nvrtc} if nvrtc else {})}
        self._new = [(m, b) for m, b in self._new if _key(m) != _key(meta)]
        self._new.append((meta, encode(obj)))

    def to_bytes(self) -> bytes:
        """The bundle file: entries read from the origin and those added, one per key."""
        from .._version import __version__  # deferred: only this path needs it

        merged = {k: (e, self._data[e["offset"]:e["offset"] + e["length"]])
                  for k, e in self._entries().items()}
        for meta, blob in self._new:
            merged[_key(meta)] = (meta, blob)
        entries, blobs, offset = [], [], 0
        for _k, (meta, blob) in sorted(merged.items()):
            entries.append({**{k: meta[k] for k in ("program", "name", "kind", "arch",
                                                     "name_expressions", "nvrtc") if k in meta},
                            "offset": offset, "length": len(blob)})
            blobs.append(blob)
            offset += len(blob)
        index = json.dumps({"cudaload": __version__, "entries": entries}, sort_keys=True).encode()
        return BUNDLE_HEADER.pack(MAGIC, FORMAT, len(index)) + index + b"".join(blobs)

    def write(self, path) -> int:
        """Write the bundle to ``path`` (atomically); return its size.  Raises OSError."""
        data = self.to_bytes()
        path = os.path.abspath(os.fspath(path))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _atomic.write_atomic(path, data)
        os.chmod(path, 0o644)  # package data, read by every user; the temporary file was 0600
        return len(data)


def _key(entry: dict) -> tuple[str, str, str]:
    return (str(entry["program"]), str(entry["kind"]), str(entry["arch"]))


_KINDS = ("cubin", "ltoir")  # what a bundle holds
_ENTRY_KEYS = frozenset({"program", "name", "kind", "arch", "name_expressions", "offset", "length"})
_MAX_BYTES = 1 << 32  # a bundle is read whole; a larger file is none
_INDEX_DEPTH = 4  # {"entries": [{"name_expressions": [...]}]}


def _read(path) -> bytes:
    """The bytes of the bundle file ``path``.  Raises OSError, ValueError for anything but a
    regular file of at most ``_MAX_BYTES`` (a pipe would block, /dev/zero never end)."""
    return _untrusted.read_regular(path, _MAX_BYTES, follow=True)  # package data may be a link


def _check_fields(e: dict) -> None:
    """Raise ValueError unless the index entry ``e`` has the types :meth:`Bundle.add` writes."""
    if not all(isinstance(e[k], str) for k in ("program", "name", "kind", "arch")) \
            or not all(type(e[k]) is int for k in ("offset", "length")) \
            or not isinstance(e["name_expressions"], list) \
            or not all(isinstance(n, str) for n in e["name_expressions"]) \
            or not isinstance(e.get("nvrtc", ""), str):
        raise ValueError("an entry has fields of the wrong type")
    if e["kind"] not in _KINDS or parse_arch(e["arch"]).sm() != e["arch"]:
        raise ValueError(f"an entry is {e['kind']} for {e['arch']!r}, not a CUBIN or LTO IR "
                         "for an arch")


def _parse(data: bytes) -> dict:
    """(digest, kind, arch) -> entry, with offsets made absolute.  Raises ValueError."""
    if len(data) < BUNDLE_HEADER.size:
        raise ValueError("the file is too short to be a bundle")
    magic, version, index_len = BUNDLE_HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("not a cudaload kernel bundle")
    if version != FORMAT:
        raise ValueError(f"bundle format {version}, this cudaload reads format {FORMAT}")
    start = BUNDLE_HEADER.size + index_len
    try:
        index = _untrusted.load_json(data[BUNDLE_HEADER.size:start], _INDEX_DEPTH)
        entries = {}
        for e in index["entries"]:
            if not isinstance(e, dict):
                raise ValueError("an entry is not a JSON object")
            missing = _ENTRY_KEYS - set(e)
            if missing:
                raise ValueError(f"an entry lacks {', '.join(sorted(missing))}")
            _check_fields(e)
            offset, length = e["offset"], e["length"]
            if offset < 0 or length < 0:
                raise ValueError("an entry has a negative offset or length")
            e = dict(e, offset=start + offset, length=length)
            if e["offset"] + e["length"] > len(data):
                raise ValueError("the file is truncated")
            entries[_key(e)] = e
    except (KeyError, TypeError, AttributeError, UnicodeDecodeError, OverflowError) as exc:
        raise ValueError(f"its index is malformed ({exc!r})") from None
    return entries
