"""The DLLs a Windows PE file (``.pyd``, ``.dll``, ``.exe``) imports, read from its import table.

The optional header's data directory 1 gives the import table's address (an RVA); the section
table maps RVAs to places in the file; each 20-byte import descriptor names one DLL, up to one
of zeros.  Only the ordinary import table is read: DLLs loaded on first call (``/DELAYLOAD``,
data directory 13) load when the program calls into them, as ``LoadLibrary`` at run time does.

Entry point: may import every layer.
"""

from __future__ import annotations

import struct

__all__ = ["MAGIC", "PeError", "is_pe", "imports"]

MAGIC = b"MZ"
_OPTIONAL = {0x10B: 92, 0x20B: 108}  # PE32, PE32+: offset of NumberOfRvaAndSizes
_DESCRIPTOR = struct.Struct("<IIIII")  # OriginalFirstThunk, TimeDateStamp, ForwarderChain,
#                                        Name, FirstThunk
_SECTION = struct.Struct("<8sIIII")  # Name, VirtualSize, VirtualAddress, SizeOfRawData,
#                                      PointerToRawData (of a 40-byte entry)


class PeError(ValueError):
    """The data is not a PE file that can be read; the message says what is wrong with it."""


def is_pe(data: bytes) -> bool:
    """Whether ``data`` starts as a PE file (an MZ header pointing at a PE signature)."""
    if data[:2] != MAGIC or len(data) < 0x40:
        return False
    (at,) = struct.unpack_from("<I", data, 0x3C)
    return data[at:at + 4] == b"PE\0\0"


def imports(data: bytes) -> list[str]:
    """The names of the DLLs in the import table of the PE image ``data``, in file order.

    Raises PeError when its headers or import table point outside the file."""
    if not is_pe(data):
        raise PeError("no PE header")
    (at,) = struct.unpack_from("<I", data, 0x3C)
    coff = at + 4
    if coff + 20 > len(data):
        raise PeError("truncated: the file ends inside its COFF header")
    nsections, = struct.unpack_from("<H", data, coff + 2)
    optional_size, = struct.unpack_from("<H", data, coff + 16)
    optional = coff + 20
    magic = struct.unpack_from("<H", data, optional)[0] if optional + 2 <= len(data) else None
    if magic not in _OPTIONAL:
        raise PeError("corrupt optional header: neither PE32 nor PE32+")
    count_at = optional + _OPTIONAL[magic]
    if count_at + 4 > len(data) or 4 + _OPTIONAL[magic] > optional_size:
        raise PeError("truncated: the file ends inside its optional header")
    (directories,) = struct.unpack_from("<I", data, count_at)
    if directories < 2 or count_at + 4 + 16 > min(len(data), optional + optional_size):
        return []  # no import directory
    (table, _size) = struct.unpack_from("<II", data, count_at + 4 + 8)
    if table == 0:
        return []
    sections = _sections(data, optional + optional_size, nsections)
    names: list[str] = []
    where = _file_offset(table, sections, len(data))
    while True:
        if where + _DESCRIPTOR.size > len(data):
            raise PeError("corrupt import table: it runs past the end of the file")
        descriptor = _DESCRIPTOR.unpack_from(data, where)
        if not any(descriptor):
            return names
        names.append(_string(data, _file_offset(descriptor[3], sections, len(data))))
        where += _DESCRIPTOR.size


def _sections(data: bytes, start: int, count: int) -> list[tuple[int, int, int, int]]:
    """(VirtualAddress, size in memory, PointerToRawData, SizeOfRawData) of each section."""
    if start + 40 * count > len(data):
        raise PeError("truncated: the file ends inside its section table")
    out = []
    for i in range(count):
        _name, vsize, vaddr, rawsize, rawptr = _SECTION.unpack_from(data, start + 40 * i)
        out.append((vaddr, max(vsize, rawsize), rawptr, rawsize))
    return out


def _file_offset(rva: int, sections: list, size: int) -> int:
    """Where in the file the relative virtual address ``rva`` comes from.  Raises PeError."""
    for vaddr, vsize, rawptr, rawsize in sections:
        if vaddr <= rva < vaddr + vsize and rva - vaddr < rawsize and rawptr + rva - vaddr < size:
            return rawptr + rva - vaddr
    raise PeError(f"corrupt import table: address {rva:#x} is in no section of the file")


def _string(data: bytes, at: int) -> str:
    stop = data.find(b"\0", at)
    if stop < 0:
        raise PeError("corrupt import table: a DLL name runs past the end of the file")
    return data[at:stop].decode("ascii", "backslashreplace")
