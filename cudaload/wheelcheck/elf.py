"""The libraries an ELF file asks the dynamic linker for (its ``DT_NEEDED`` entries), read with
no ``readelf``.

Read the way the dynamic linker reads them, from the program headers (section headers may be
stripped): the ``PT_DYNAMIC`` segment holds (tag, value) pairs; each ``DT_NEEDED`` value is an
offset into the string table at ``DT_STRTAB``, an address that the ``PT_LOAD`` segments map to a
place in the file.  ELF32 and ELF64 of either byte order.  A file with no ``PT_DYNAMIC`` (an
object file, a static executable, a CUBIN) needs nothing.  The file and program headers are
read by cudaload/_base/_elf.py.

Only those pieces are read, by offset (wheelcheck/blob.py), and the names in the order they lie
in the file: a library of gigabytes costs a few kilobytes of memory.
"""

from __future__ import annotations

import struct

from .._base._elf import HEADER_BYTES, MAGIC, PT_DYNAMIC, PT_LOAD, ElfError, header, segments
from .blob import MAX_NAME, Blob

__all__ = ["MAGIC", "ElfError", "needed"]

_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ = 0, 1, 5, 10
_DYNAMIC_ENTRY = {32: "iI", 64: "qQ"}  # (d_tag, d_val) per class
# Bounds far beyond any real library (a few dozen program headers and dynamic entries), so that
# a hostile header cannot make the reader hold or walk gigabytes.
_MAX_PROGRAM_HEADERS_BYTES = 1 << 20
_MAX_DYNAMIC_ENTRIES = 1 << 14
_CHUNK = 1 << 16


def needed(data: bytes | Blob) -> list[str]:
    """The ``DT_NEEDED`` names of the ELF image ``data`` (its bytes, or a :class:`Blob`), in
    file order.

    Raises ElfError when the headers or the dynamic section point outside the file or make no
    sense."""
    blob = Blob.of(data)
    head = header(blob.read(0, HEADER_BYTES))
    end = head.program_headers_end()
    if end > blob.size:
        raise ElfError(f"truncated: its program headers end at byte {end}, the file has "
                       f"{blob.size}")
    if end - head.phoff > _MAX_PROGRAM_HEADERS_BYTES:
        raise ElfError(f"corrupt program headers: {end - head.phoff} bytes of them")
    found = segments(head, blob.read(head.phoff, end - head.phoff))
    dynamic = [s for s in found if s[0] == PT_DYNAMIC]
    if not dynamic:
        return []
    entries = _dynamic(blob, dynamic[0], struct.Struct(head.order + _DYNAMIC_ENTRY[head.bits]))
    wanted = [value for tag, value in entries if tag == _DT_NEEDED]
    if not wanted:
        return []
    tables = [value for tag, value in entries if tag == _DT_STRTAB]
    if not tables:
        raise ElfError("corrupt dynamic section: DT_NEEDED entries but no DT_STRTAB")
    start = _file_offset(tables[0], found, blob.size)
    sizes = [value for tag, value in entries if tag == _DT_STRSZ]
    table_end = min(blob.size, start + sizes[0]) if sizes else blob.size
    # In file order, then as listed: each read then moves forward through the file.
    names = {offset: _string(blob, start, table_end, offset) for offset in sorted(set(wanted))}
    return [names[offset] for offset in wanted]


def _dynamic(blob: Blob, segment: tuple, entry: struct.Struct) -> list[tuple[int, int]]:
    """The (d_tag, d_val) pairs (layout ``entry``) of the dynamic segment, up to DT_NULL.
    Raises ElfError."""
    _type, offset, _vaddr, size = segment
    if offset + size > blob.size:
        raise ElfError(f"corrupt dynamic section: it ends at byte {offset + size}, the file has "
                       f"{blob.size}")
    end = offset + size - size % entry.size
    out: list[tuple[int, int]] = []
    for at in range(offset, end, _CHUNK * entry.size):
        for tag, value in entry.iter_unpack(blob.read(at, min(_CHUNK * entry.size, end - at))):
            if tag == _DT_NULL:
                return out
            if len(out) == _MAX_DYNAMIC_ENTRIES:
                raise ElfError(f"corrupt dynamic section: more than {_MAX_DYNAMIC_ENTRIES} "
                               "entries")
            out.append((tag, value))
    return out


def _file_offset(address: int, segments: list, size: int) -> int:
    """Where in the file the loaded ``address`` comes from.  Raises ElfError."""
    for kind, offset, vaddr, filesz in segments:
        if kind == PT_LOAD and vaddr <= address < vaddr + filesz and offset + filesz <= size:
            return offset + address - vaddr
    raise ElfError(f"corrupt dynamic section: its string table (DT_STRTAB {address:#x}) is in no "
                   "loaded part of the file")


def _string(blob: Blob, start: int, end: int, offset: int) -> str:
    """The NUL-terminated name at ``offset`` into the string table from ``start`` to ``end``."""
    name = blob.string(start + offset, end) if offset < end - start else None
    if name is None:
        raise ElfError(f"corrupt dynamic section: a DT_NEEDED name (at {offset:#x}) runs past "
                       f"its string table or {MAX_NAME} bytes")
    return name.decode("utf-8", "backslashreplace")
