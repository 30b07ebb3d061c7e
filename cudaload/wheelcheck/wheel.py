"""What a wheel holds that matters for CUDA: its compiled files with the libraries each one
needs, and the cudaload bundles it ships.

A file is compiled by its first bytes, not its name: ELF (Linux ``.so``), PE (Windows ``.pyd``,
``.dll``), Mach-O (macOS, listed but not read: there is no CUDA driver for macOS).  A file named
like a compiled library that is none of them is reported, as is one the readers cannot make
sense of.

Entry point: may import every layer.
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from typing import Any

from .. import _untrusted
from ..compile.bundle import MAGIC as BUNDLE_MAGIC
from . import elf, pe
from .libraries import cuda_library

__all__ = ["WheelError", "open_wheel", "scan"]

_MACHO = (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe",
          b"\xca\xfe\xba\xbe")
_LIBRARY_SUFFIXES = (".so", ".pyd", ".dll", ".dylib")
# What zipfile and zlib raise for an archive that is damaged after its central directory.
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
                RuntimeError, ValueError)


class WheelError(ValueError):
    """The wheel cannot be checked: not a wheel, damaged, or it cannot be installed.  The
    message names the file and the reason on one line."""


def open_wheel(path: str) -> zipfile.ZipFile:
    """The wheel at ``path``, opened.  Raises WheelError when it is no readable wheel."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise WheelError(f"{path}: no such file") from None
    except OSError as err:
        raise WheelError(f"{path}: cannot be read: {err.strerror or err}") from None
    if not stat.S_ISREG(mode):  # opening a pipe would wait for a writer
        raise WheelError(f"{path}: {_untrusted.kind(mode)}, not a wheel file")
    try:
        archive = zipfile.ZipFile(path)
    except OSError as err:
        raise WheelError(f"{path}: cannot be read: {err.strerror or err}") from None
    except (zipfile.BadZipFile, EOFError, ValueError):
        size = os.path.getsize(path)
        raise WheelError(f"{path}: not a wheel: not a zip archive, or a truncated one ({size} "
                         "bytes, no zip directory at its end)") from None
    if not any(n.count("/") == 1 and n.endswith(".dist-info/WHEEL") for n in archive.namelist()):
        archive.close()
        raise WheelError(f"{path}: not a wheel: a zip archive without a .dist-info/WHEEL file")
    return archive


def scan(path: str) -> tuple[list[dict], list[dict]]:
    """The compiled files of the wheel at ``path`` and its bundles.

    Each compiled file: ``{"path", "format", "needed", "cuda", "error"}`` (``needed``: the
    libraries it asks for; ``cuda``: those of them that are CUDA's; ``error``: why it could not
    be read, or None).  Each bundle: ``{"path", "data"}``.  Raises WheelError for an archive
    whose members cannot be read."""
    files, bundles = [], []
    with open_wheel(path) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            try:
                with archive.open(info) as member:
                    head = member.read(8)
                    kind = _kind(head)
                    data = head + member.read() if kind else b""
            except _READ_ERRORS as err:
                raise WheelError(f"{path}: {info.filename} cannot be read from the archive: "
                                 f"{err}") from None
            if kind == "PE?":  # an MZ header: a PE file, or data that starts with those bytes
                kind = "PE" if pe.is_pe(data) else None
            if kind == "bundle":
                bundles.append({"path": info.filename, "data": data})
            elif kind is not None or info.filename.endswith(_LIBRARY_SUFFIXES) \
                    or ".so." in os.path.basename(info.filename):
                files.append(_describe(info.filename, kind, data, info.file_size))
    return files, bundles


def _kind(head: bytes) -> str | None:
    if head[:4] == elf.MAGIC:
        return "ELF"
    if head[:2] == pe.MAGIC:
        return "PE?"
    if head[:4] in _MACHO:
        return "Mach-O"
    if head == BUNDLE_MAGIC:
        return "bundle"
    return None


def _describe(name: str, kind: str | None, data: bytes, size: int) -> dict:
    entry: dict[str, Any] = {"path": name, "format": kind, "needed": [], "cuda": [],
                             "error": None}
    try:
        if kind == "ELF":
            entry["needed"] = elf.needed(data)
        elif kind == "PE":
            entry["needed"] = pe.imports(data)
        elif kind is None:
            entry["error"] = (f"named like a compiled library but neither ELF nor PE ({size} "
                              "bytes)")
    except (elf.ElfError, pe.PeError) as err:
        entry["error"] = f"{kind} file cannot be read: {err}"
    entry["cuda"] = [n for n in entry["needed"] if cuda_library(n)]
    return entry
