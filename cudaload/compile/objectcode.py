"""ObjectCode: compiled device code (CUBIN or PTX) and what is known about it.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

import os
import re
import struct
import _thread

from . import _hooks

TYPE_CHECKING = False  # true for type checkers only: the launch side is never imported from here
if TYPE_CHECKING:
    from ..launch.module import Module

__all__ = ["ObjectCode"]

KINDS = ("cubin", "ptx", "fatbin")
_FATBIN_MAGIC = b"\x50\xed\x55\xba"
_PTX_TARGET = re.compile(rb"^\s*\.target\s+(sm_\w+)", re.M)
_PTX_VERSION = re.compile(rb"^\s*\.version\s+\d", re.M)


class ObjectCode:
    """Device code ready for the driver: ``.code`` (bytes), ``.kind``, ``.arch``, ``.log``,
    ``.lowered_names`` (name expression -> mangled name), ``.cached`` (None, "memory", "disk")
    and ``.linked``: whether nvJitLink made it from LTO IR (``Program(..., lto=True)``), which
    removes the device variables device code does not need and folds the reads of those it
    never writes, so that the host cannot reach them (its module's ``get_global`` refuses).

    Plain data.  What made it may add two fields: ``.source``, the CUDA source, where the launch
    side reads parameter types a mangled name does not give; and ``.origin``, what compiled it, as
    data (for a Program, its prepared arguments and the request), which the compiler is handed
    back when the driver refuses this code (cudaload.compile.program.recompile_refused): it holds
    no Program, so a dropped Program is collected while its code lives on.

    It pickles as its data alone: code, kind, arch, log, lowered names, linked and source, so that the
    receiving process rebuilds it without loading any CUDA library and launches its kernels with
    the same parameter types.  What belongs to this process stays here: the loaded module,
    ``.cached`` (how this process's caches found it: None in the receiver) and ``.origin``,
    which would carry the program's inputs and this process's cache key along; a driver there that
    refuses the code raises its error (send the Program instead where the receiver should
    compile for itself)."""

    def __init__(self, code: bytes, kind: str, arch: str | None = None, *, log: str = "",
                 lowered_names: dict | None = None, cached: str | None = None,
                 source: str | None = None, origin=None, module: list | None = None,
                 linked: bool = False):
        self.code = code
        self.linked = linked
        self.kind = kind
        self.arch = arch
        self.log = log
        self.lowered_names = lowered_names if lowered_names is not None else {}
        self.cached = cached
        self.source = source
        self.origin = origin
        # [Module or None, its lock], shared with the copies _as makes (the memory cache's among
        # them), so code compiled once is loaded once however many kernels are made from it.
        self._module = module if module is not None else [None, _thread.allocate_lock()]

    def __repr__(self) -> str:
        via = f", cached={self.cached!r}" if self.cached else ""
        return f"<ObjectCode {self.kind} {self.arch or '?'} {len(self.code)} bytes{via}>"

    def __reduce__(self) -> tuple:
        return (_rebuild, ({"code": self.code, "kind": self.kind, "arch": self.arch,
                            "log": self.log, "lowered_names": dict(self.lowered_names),
                            "source": self.source, "linked": self.linked},))

    def _as(self, cached: str | None) -> ObjectCode:
        return ObjectCode(self.code, self.kind, self.arch, log=self.log,
                          lowered_names=self.lowered_names, cached=cached, source=self.source,
                          origin=self.origin, module=self._module, linked=self.linked)

    @classmethod
    def from_bytes(cls, data, kind: str) -> ObjectCode:
        """Wrap device code made elsewhere.  Raises ValueError for an unknown kind or wrong bytes."""
        data = bytes(data)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if not data:
            raise ValueError(f"no bytes: an empty {kind.upper()} holds no device code")
        if kind == "cubin" and not data.startswith(b"\x7fELF"):
            raise ValueError("these bytes are not a CUBIN (no ELF header)")
        if kind == "fatbin" and not data.startswith(_FATBIN_MAGIC):
            raise ValueError("these bytes are not a fatbin (no fatbin header)")
        if kind == "ptx":
            data = data.rstrip(b"\0")
            if not _PTX_VERSION.search(data[:65536]):
                raise ValueError("these bytes are not PTX (no .version directive); CUDA C++ "
                                 "source is compiled with cudaload.Program(source).compile()")
        return cls(data, kind, _arch_of(data, kind))

    @classmethod
    def from_file(cls, path) -> ObjectCode:
        """Read a .cubin, .ptx or .fatbin file (kind from the extension, else from the contents).

        Raises OSError when unreadable, ValueError when the contents are not device code.
        """
        with open(path, "rb") as f:
            data = f.read()
        ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
        if ext in KINDS:
            kind = ext
        elif data.startswith(b"\x7fELF"):
            kind = "cubin"
        elif data.startswith(_FATBIN_MAGIC):
            kind = "fatbin"
        else:
            kind = "ptx"
        return cls.from_bytes(data, kind)

    def load(self) -> Module:
        """The Module holding this code, loaded on the first call and the same one after it.

        A RawKernel made again from the same source (as code written for CuPy does in a loop)
        then costs no new load, and the module stays loaded while the code is in the memory
        cache, so a CUDA graph that captured its kernels can still replay them after the kernel
        objects are gone.  ``cudaload.Module(obj)`` loads a separate copy."""
        module = self._module[0]
        if module is None:
            module = _hooks.load(self)  # module.load_once: the launch side, above this module
        return module  # type: ignore[return-value]  # _hooks.load cannot name the Module type


def _rebuild(fields: dict) -> ObjectCode:
    """An unpickled ObjectCode.  Fields this version does not know (from a newer cudaload) are
    ignored, so code pickled by it still loads here."""
    return ObjectCode(fields["code"], fields["kind"], fields.get("arch"), log=fields.get("log", ""),
                      lowered_names=fields.get("lowered_names"), source=fields.get("source"),
                      linked=fields.get("linked") is True)


def _arch_of(data: bytes, kind: str) -> str | None:
    if kind == "cubin" and len(data) >= 0x34 and data[4] == 2:  # 64-bit ELF: e_flags at 0x30
        return f"sm_{(struct.unpack_from('<I', data, 0x30)[0] >> 8) & 0xFF}"
    if kind == "ptx":
        match = _PTX_TARGET.search(data[:4096])
        return match.group(1).decode() if match else None
    return None
