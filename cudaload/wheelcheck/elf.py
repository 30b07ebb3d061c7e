"""The libraries an ELF file asks the dynamic linker for (its ``DT_NEEDED`` entries), read with
no ``readelf``.

Read the way the dynamic linker reads them, from the program headers (section headers may be
stripped): the ``PT_DYNAMIC`` segment holds (tag, value) pairs; each ``DT_NEEDED`` value is an
offset into the string table at ``DT_STRTAB``, an address that the ``PT_LOAD`` segments map to a
place in the file.  ELF32 and ELF64 of either byte order.  A file with no ``PT_DYNAMIC`` (an
object file, a static executable, a CUBIN) needs nothing.

Entry point: may import every layer.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["MAGIC", "ElfError", "needed"]

MAGIC = b"\x7fELF"
_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ = 0, 1, 5, 10

# Per class (EI_CLASS 1: 32-bit, 2: 64-bit): where e_phoff sits and its format; e_phentsize and
# e_phnum; one program header's (p_type, p_offset, p_vaddr, p_filesz) as struct fields and the
# indexes that pick them; one dynamic entry (d_tag, d_val).
_LAYOUT: dict[int, dict[str, Any]] = {
    1: {"phoff": (28, "I"), "phcount": 42, "header": 52, "phdr": ("IIIIIIII", (0, 1, 2, 4)),
        "dyn": "iI"},
    2: {"phoff": (32, "Q"), "phcount": 54, "header": 64, "phdr": ("IIQQQQQQ", (0, 2, 3, 5)),
        "dyn": "qQ"},
}


class ElfError(ValueError):
    """The data is not an ELF file that can be read; the message says what is wrong with it."""


def needed(data: bytes) -> list[str]:
    """The ``DT_NEEDED`` names of the ELF image ``data``, in file order.

    Raises ElfError when the headers or the dynamic section point outside the file or make no
    sense."""
    if data[:4] != MAGIC:
        raise ElfError("no ELF header")
    layout = _LAYOUT.get(data[4]) if len(data) > 5 else None
    order = {1: "<", 2: ">"}.get(data[5]) if len(data) > 5 else None
    if layout is None or order is None:
        raise ElfError("its ELF header names neither 32 nor 64 bits, or no byte order")
    if len(data) < layout["header"]:
        raise ElfError(f"truncated: {len(data)} bytes, shorter than an ELF header")
    segments = _segments(data, layout, order)
    dynamic = [s for s in segments if s[0] == _PT_DYNAMIC]
    if not dynamic:
        return []
    entries = _dynamic(data, dynamic[0], layout, order)
    wanted = [value for tag, value in entries if tag == _DT_NEEDED]
    if not wanted:
        return []
    tables = [value for tag, value in entries if tag == _DT_STRTAB]
    if not tables:
        raise ElfError("corrupt dynamic section: DT_NEEDED entries but no DT_STRTAB")
    start = _file_offset(tables[0], segments, len(data))
    sizes = [value for tag, value in entries if tag == _DT_STRSZ]
    end = min(len(data), start + sizes[0]) if sizes else len(data)
    return [_string(data, start, end, offset) for offset in wanted]


def _segments(data: bytes, layout: dict, order: str) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_vaddr, p_filesz) of each program header.  Raises ElfError."""
    where, kind = layout["phoff"]
    (phoff,) = struct.unpack_from(order + kind, data, where)
    entsize, count = struct.unpack_from(order + "HH", data, layout["phcount"])
    fmt, picks = layout["phdr"]
    if count and entsize < struct.calcsize(fmt):
        raise ElfError(f"corrupt program headers: entries of {entsize} bytes")
    if phoff + entsize * count > len(data):
        raise ElfError(f"truncated: its program headers end at byte {phoff + entsize * count}, "
                       f"the file has {len(data)}")
    out = []
    for i in range(count):
        fields = struct.unpack_from(order + fmt, data, phoff + i * entsize)
        out.append(tuple(fields[k] for k in picks))
    return out


def _dynamic(data: bytes, segment: tuple, layout: dict, order: str) -> list[tuple[int, int]]:
    """The (d_tag, d_val) pairs of the dynamic segment, up to DT_NULL.  Raises ElfError."""
    _type, offset, _vaddr, size = segment
    if offset + size > len(data):
        raise ElfError(f"corrupt dynamic section: it ends at byte {offset + size}, the file has "
                       f"{len(data)}")
    step = struct.calcsize(layout["dyn"])
    out = []
    for at in range(offset, offset + size - step + 1, step):
        tag, value = struct.unpack_from(order + layout["dyn"], data, at)
        if tag == _DT_NULL:
            break
        out.append((tag, value))
    return out


def _file_offset(address: int, segments: list, size: int) -> int:
    """Where in the file the loaded ``address`` comes from.  Raises ElfError."""
    for kind, offset, vaddr, filesz in segments:
        if kind == _PT_LOAD and vaddr <= address < vaddr + filesz and offset + filesz <= size:
            return offset + address - vaddr
    raise ElfError(f"corrupt dynamic section: its string table (DT_STRTAB {address:#x}) is in no "
                   "loaded part of the file")


def _string(data: bytes, start: int, end: int, offset: int) -> str:
    """The NUL-terminated name at ``offset`` into the string table data[start:end]."""
    at = start + offset
    stop = data.find(b"\0", at, end)
    if offset >= end - start or stop < 0:
        raise ElfError(f"corrupt dynamic section: a DT_NEEDED name (at {offset:#x}) runs past "
                       "its string table")
    return data[at:stop].decode("utf-8", "backslashreplace")
