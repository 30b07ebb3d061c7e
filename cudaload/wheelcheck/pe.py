"""The DLLs a Windows PE file (``.pyd``, ``.dll``, ``.exe``) imports, read from its import table.

The optional header's data directory 1 gives the import table's address (an RVA); the section
table maps RVAs to places in the file; each 20-byte import descriptor names one DLL, up to one
of zeros.  Only the ordinary import table is read: DLLs loaded on first call (``/DELAYLOAD``,
data directory 13) load when the program calls into them, as ``LoadLibrary`` at run time does.
Only those pieces are read, by offset (wheelcheck/blob.py), and the names in the order they lie
in the file.
"""

from __future__ import annotations

import struct

from .blob import MAX_NAME, Blob

__all__ = ["MAGIC", "PeError", "is_pe", "imports"]

MAGIC = b"MZ"
_OPTIONAL = {0x10B: 92, 0x20B: 108}  # PE32, PE32+: offset of NumberOfRvaAndSizes
_DESCRIPTOR = struct.Struct("<IIIII")  # OriginalFirstThunk, TimeDateStamp, ForwarderChain,
#                                        Name, FirstThunk
_SECTION = struct.Struct("<8sIIII")  # Name, VirtualSize, VirtualAddress, SizeOfRawData,
#                                      PointerToRawData (of a 40-byte entry)
_U16, _U32, _TWO_U32 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<II")
# Far beyond any real file (a few dozen DLLs), so that a hostile table cannot be walked for long.
_MAX_DLLS = 1 << 14


class PeError(ValueError):
    """The data is not a PE file that can be read; the message says what is wrong with it."""


def _signature(blob: Blob) -> int | None:
    """Where the PE signature is, when the file starts as a PE file (an MZ header pointing at
    one); else None."""
    if blob.read(0, 2) != MAGIC or blob.size < 0x40:
        return None
    (at,) = _U32.unpack(blob.read(0x3C, 4))
    return at if blob.read(at, 4) == b"PE\0\0" else None


def is_pe(data: bytes | Blob) -> bool:
    """Whether ``data`` (bytes or a :class:`Blob`) starts as a PE file (an MZ header pointing at
    a PE signature)."""
    return _signature(Blob.of(data)) is not None


def imports(data: bytes | Blob) -> list[str]:
    """The names of the DLLs in the import table of the PE image ``data`` (bytes or a
    :class:`Blob`), in file order.

    Raises PeError when its headers or import table point outside the file."""
    blob = Blob.of(data)
    at = _signature(blob)
    if at is None:
        raise PeError("no PE header")
    coff = at + 4
    if coff + 20 > blob.size:
        raise PeError("truncated: the file ends inside its COFF header")
    coff_header = blob.read(coff, 20)
    (nsections,), (optional_size,) = (_U16.unpack_from(coff_header, i) for i in (2, 16))
    optional = coff + 20
    magic = (blob.unpack(_U16, optional) or (None,))[0]
    if magic not in _OPTIONAL:
        raise PeError("corrupt optional header: neither PE32 nor PE32+")
    count_at = optional + _OPTIONAL[magic]
    if count_at + 4 > blob.size or 4 + _OPTIONAL[magic] > optional_size:
        raise PeError("truncated: the file ends inside its optional header")
    (directories,) = _U32.unpack(blob.read(count_at, 4))
    if directories < 2 or count_at + 4 + 16 > min(blob.size, optional + optional_size):
        return []  # no import directory
    (table, _size) = _TWO_U32.unpack(blob.read(count_at + 4 + 8, 8))
    if table == 0:
        return []
    sections = _sections(blob, optional + optional_size, nsections)
    where = _file_offset(table, sections, blob.size)
    places: list[int] = []
    while True:
        descriptor = blob.unpack(_DESCRIPTOR, where)
        if descriptor is None:
            raise PeError("corrupt import table: it runs past the end of the file")
        if not any(descriptor):
            break
        if len(places) == _MAX_DLLS:
            raise PeError(f"corrupt import table: more than {_MAX_DLLS} DLLs")
        places.append(_file_offset(descriptor[3], sections, blob.size))
        where += _DESCRIPTOR.size
    # In file order, then as listed: each read then moves forward through the file.
    names = {place: _string(blob, place) for place in sorted(set(places))}
    return [names[place] for place in places]


def _sections(blob: Blob, start: int, count: int) -> list[tuple[int, int, int, int]]:
    """(VirtualAddress, size in memory, PointerToRawData, SizeOfRawData) of each section."""
    if start + 40 * count > blob.size:
        raise PeError("truncated: the file ends inside its section table")
    table = blob.read(start, 40 * count)
    out = []
    for i in range(count):
        _name, vsize, vaddr, rawsize, rawptr = _SECTION.unpack_from(table, 40 * i)
        out.append((vaddr, max(vsize, rawsize), rawptr, rawsize))
    return out


def _file_offset(rva: int, sections: list, size: int) -> int:
    """Where in the file the relative virtual address ``rva`` comes from.  Raises PeError."""
    for vaddr, vsize, rawptr, rawsize in sections:
        if vaddr <= rva < vaddr + vsize and rva - vaddr < rawsize and rawptr + rva - vaddr < size:
            return rawptr + rva - vaddr
    raise PeError(f"corrupt import table: address {rva:#x} is in no section of the file")


def _string(blob: Blob, at: int) -> str:
    name = blob.string(at, blob.size)
    if name is None:
        raise PeError(f"corrupt import table: a DLL name runs past the end of the file or "
                      f"{MAX_NAME} bytes")
    return name.decode("ascii", "backslashreplace")
