"""What a wheel holds that matters for CUDA: its compiled files with the libraries each one
needs, and the cudaload bundles it ships.

A file is compiled by its first bytes, not its name: ELF (Linux ``.so``), PE (Windows ``.pyd``,
``.dll``), Mach-O (macOS, listed but not read: there is no CUDA driver for macOS).  A file named
like a compiled library that is none of them is reported, as is one the readers cannot make
sense of.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
import zlib
from typing import Any

from .._base import _untrusted
from ..compile.bundle import MAGIC as BUNDLE_MAGIC
from . import elf, pe
from .blob import Blob
from .libraries import cuda_library

__all__ = ["WheelError", "installed_path", "open_wheel", "packages", "scan"]

_MACHO = (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe",
          b"\xca\xfe\xba\xbe")
_LIBRARY_SUFFIXES = (".so", ".pyd", ".dll", ".dylib")
# A member pip installs into site-packages from the wheel's NAME-VERSION.data/purelib/ (or
# platlib/) folder rather than from the wheel's root (PEP 427).
_DATA_LIB = re.compile(r"[^/]+\.data/(?:purelib|platlib)/")
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


def installed_path(member: str) -> str:
    """Where pip installs the wheel's ``member``, relative to site-packages: also its path in
    the package's tree, relative to the folder that holds the package."""
    found = _DATA_LIB.match(member)
    return member[found.end():] if found else member


def packages(path: str) -> list[str]:
    """The top-level import packages the wheel at ``path`` installs (folders with an
    ``__init__.py``), sorted.  Raises WheelError when it is no readable wheel."""
    with open_wheel(path) as archive:
        names = [installed_path(n) for n in archive.namelist()]
    return sorted({n.partition("/")[0] for n in names if n.count("/") == 1
                   and n.endswith("/__init__.py") and ".dist-info/" not in n})


def scan(path: str) -> tuple[list[dict], list[dict]]:
    """The compiled files of the wheel at ``path`` and its bundles.

    Each compiled file: ``{"path", "format", "needed", "cuda", "error"}`` (``needed``: the
    libraries it asks for; ``cuda``: those of them that are CUDA's; ``error``: why it could not
    be read or was not, or None).  Each bundle: ``{"path", "data", "error"}`` (``data`` None when
    ``error`` says why it was not read).  Raises WheelError for an archive whose members cannot
    be read."""
    files, bundles = [], []
    with open_wheel(path) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            try:
                entry = _examine(archive, info)
            except _READ_ERRORS as err:
                raise WheelError(f"{path}: {info.filename} cannot be read from the archive: "
                                 f"{err}") from None
            if entry is None:
                continue
            if entry["format"] == "bundle":
                bundles.append({"path": info.filename, "data": entry.pop("data"),
                                "error": entry["error"]})
            else:
                files.append(entry)
    return files, bundles


# Beyond these sizes a member is not read, and says so.  A compiled file is read by offset and
# costs little memory, but every byte is decompressed to check the archive's CRC: 2 GiB is more
# than any shared library (x86-64's default code model reaches 2 GiB) and takes seconds.  A
# bundle is read whole, as Bundle.from_resource reads it at run time.
MAX_BYTES = {"compiled": 2 << 30, "bundle": 1 << 30}
_CHUNK = 1 << 20


def _examine(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> dict | None:
    """What the member ``info`` is, for the report: a compiled file or one named like it, a
    bundle (with ``data``), or None.  Raises what zipfile and zlib raise for a damaged one."""
    name, size = info.filename, info.file_size
    named = name.endswith(_LIBRARY_SUFFIXES) or ".so." in os.path.basename(name)
    with archive.open(info) as member:
        blob = Blob(member, size)
        kind = _kind(blob.read(0, 8))
        if kind == "PE?":  # an MZ header: a PE file, or data that starts with those bytes
            kind = "PE" if pe.is_pe(blob) else None
        if kind is None and not named:
            return None
        entry: dict[str, Any] = {"path": name, "format": kind, "needed": [], "cuda": [],
                                 "error": None, **({"data": None} if kind == "bundle" else {})}
        limit = MAX_BYTES["bundle" if kind == "bundle" else "compiled"]
        if kind is None:
            entry["error"] = (f"named like a compiled library but neither ELF nor PE ({size} "
                              "bytes)")
        elif size > limit:
            what = "bundle" if kind == "bundle" else "compiled file"
            entry["error"] = (f"not checked: {size} bytes, more than the {limit >> 30} GiB "
                              f"check-wheel reads of a {what}. Next step: rebuild the wheel; no "
                              f"real {what} is this large, so this archive is damaged or made "
                              "to exhaust its readers")
        elif kind == "bundle":
            entry["data"] = _read_through(archive, info, keep=True)
        else:
            _read_through(archive, info, keep=False)
            _read_libraries(entry, blob)
    return entry


def _read_through(archive: zipfile.ZipFile, info: zipfile.ZipInfo, keep: bool) -> bytes:
    """Decompress the member from its start to its end, so that zipfile checks its CRC: its
    bytes when ``keep``, else none held beyond a chunk.  On a handle of its own, never seeked:
    a seek may stop zipfile checking the CRC (Python 3.12, stored members)."""
    with archive.open(info) as member:
        if keep:
            return member.read()
        while member.read(_CHUNK):
            pass
    return b""


def _read_libraries(entry: dict, blob: Blob) -> None:
    try:
        if entry["format"] == "ELF":
            entry["needed"] = elf.needed(blob)
        elif entry["format"] == "PE":
            entry["needed"] = pe.imports(blob)
    except (elf.ElfError, pe.PeError) as err:
        entry["error"] = f"{entry['format']} file cannot be read: {err}"
    entry["cuda"] = [n for n in entry["needed"] if cuda_library(n)]


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
