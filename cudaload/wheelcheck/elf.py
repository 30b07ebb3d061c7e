"""The libraries an ELF file asks the dynamic linker for (its ``DT_NEEDED`` entries), read with
no ``readelf``.

Read the way the dynamic linker reads them, from the program headers (section headers may be
stripped): the ``PT_DYNAMIC`` segment holds (tag, value) pairs; each ``DT_NEEDED`` value is an
offset into the string table at ``DT_STRTAB``, an address that the ``PT_LOAD`` segments map to a
place in the file.  ELF32 and ELF64 of either byte order.  A file with no ``PT_DYNAMIC`` (an
object file, a static executable, a CUBIN) needs nothing.  The file and program headers are
read by cudaload/_elf.py.

Entry point: may import every layer.
"""

from __future__ import annotations

import struct

from .._elf import MAGIC, PT_DYNAMIC, PT_LOAD, ElfError, header, segments

__all__ = ["MAGIC", "ElfError", "needed"]

_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ = 0, 1, 5, 10
_DYNAMIC_ENTRY = {32: "iI", 64: "qQ"}  # (d_tag, d_val) per class


def needed(data: bytes) -> list[str]:
    """The ``DT_NEEDED`` names of the ELF image ``data``, in file order.

    Raises ElfError when the headers or the dynamic section point outside the file or make no
    sense."""
    head = header(data)
    if head.program_headers_end() > len(data):
        raise ElfError(f"truncated: its program headers end at byte {head.program_headers_end()}"
                       f", the file has {len(data)}")
    found = segments(head, data[head.phoff:head.program_headers_end()])
    dynamic = [s for s in found if s[0] == PT_DYNAMIC]
    if not dynamic:
        return []
    entries = _dynamic(data, dynamic[0], head.order + _DYNAMIC_ENTRY[head.bits])
    wanted = [value for tag, value in entries if tag == _DT_NEEDED]
    if not wanted:
        return []
    tables = [value for tag, value in entries if tag == _DT_STRTAB]
    if not tables:
        raise ElfError("corrupt dynamic section: DT_NEEDED entries but no DT_STRTAB")
    start = _file_offset(tables[0], found, len(data))
    sizes = [value for tag, value in entries if tag == _DT_STRSZ]
    end = min(len(data), start + sizes[0]) if sizes else len(data)
    return [_string(data, start, end, offset) for offset in wanted]


def _dynamic(data: bytes, segment: tuple, fmt: str) -> list[tuple[int, int]]:
    """The (d_tag, d_val) pairs (struct format ``fmt``) of the dynamic segment, up to DT_NULL.
    Raises ElfError."""
    _type, offset, _vaddr, size = segment
    if offset + size > len(data):
        raise ElfError(f"corrupt dynamic section: it ends at byte {offset + size}, the file has "
                       f"{len(data)}")
    step = struct.calcsize(fmt)
    out = []
    for at in range(offset, offset + size - step + 1, step):
        tag, value = struct.unpack_from(fmt, data, at)
        if tag == _DT_NULL:
            break
        out.append((tag, value))
    return out


def _file_offset(address: int, segments: list, size: int) -> int:
    """Where in the file the loaded ``address`` comes from.  Raises ElfError."""
    for kind, offset, vaddr, filesz in segments:
        if kind == PT_LOAD and vaddr <= address < vaddr + filesz and offset + filesz <= size:
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
