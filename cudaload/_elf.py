"""ELF's file header and program headers, read from bytes: what kind of file it is, where its
program headers are, and its segments.  ELF32 and ELF64 of either byte order.

The loader checks a library with them before dlopen (bindings/_loader.py), and wheelcheck/elf.py
finds with them the libraries a compiled file of a wheel asks for.

Foundation: imports only other foundation modules of cudaload, if any.
"""

from __future__ import annotations

import struct

__all__ = ["MAGIC", "PT_LOAD", "PT_DYNAMIC", "HEADER_BYTES", "ElfError", "Header", "header",
           "segments"]

MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC = 1, 2
HEADER_BYTES = 64  # the larger of the two file headers: enough to read either

# Per class (EI_CLASS 1: 32-bit, 2: 64-bit): the file header's size; where (e_phoff, e_shoff) sit
# and their format; where (e_phentsize, e_phnum, e_shentsize, e_shnum) start; one program
# header's fields as struct codes and the indexes of (p_type, p_offset, p_vaddr, p_filesz).
_LAYOUT: dict = {
    1: {"bits": 32, "size": 52, "offsets": (28, "II"), "counts": 42,
        "phdr": ("IIIIIIII", (0, 1, 2, 4))},
    2: {"bits": 64, "size": 64, "offsets": (32, "QQ"), "counts": 54,
        "phdr": ("IIQQQQQQ", (0, 2, 3, 5))},
}


class ElfError(ValueError):
    """The data is not an ELF file that can be read; the message says what is wrong with it."""


class Header:
    """What an ELF file header says: its class (``bits``), byte order (``order``, a struct
    prefix), ``machine``, and where the program and section headers are."""

    __slots__ = ("bits", "order", "machine", "phoff", "phentsize", "phnum", "shoff",
                 "shentsize", "shnum", "_phdr")

    def __init__(self, layout: dict, order: str, data: bytes):
        self.bits: int = layout["bits"]
        self.order: str = order
        self._phdr: tuple = layout["phdr"]
        (self.machine,) = struct.unpack_from(order + "H", data, 18)
        where, kinds = layout["offsets"]
        self.phoff, self.shoff = struct.unpack_from(order + kinds, data, where)
        self.phentsize, self.phnum, self.shentsize, self.shnum = struct.unpack_from(
            order + "HHHH", data, layout["counts"])

    def program_headers_end(self) -> int:
        return self.phoff + self.phentsize * self.phnum

    def section_headers_end(self) -> int:
        return self.shoff + self.shentsize * self.shnum if self.shoff else 0


def header(data: bytes) -> Header:
    """The file header at the start of ``data``.  Raises ElfError."""
    if data[:4] != MAGIC:
        raise ElfError("no ELF header")
    layout = _LAYOUT.get(data[4]) if len(data) > 5 else None
    order = {1: "<", 2: ">"}.get(data[5]) if len(data) > 5 else None
    if layout is None or order is None:
        raise ElfError("its ELF header names neither 32 nor 64 bits, or no byte order")
    if len(data) < layout["size"]:
        raise ElfError(f"truncated: {len(data)} bytes, shorter than an ELF header")
    return Header(layout, order, data)


def segments(head: Header, table: bytes) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_vaddr, p_filesz) of each program header in ``table``, the bytes of
    the file from ``head.phoff`` on (at least the program headers').  Raises ElfError."""
    fmt, picks = head._phdr
    fmt = head.order + fmt
    if head.phnum and head.phentsize < struct.calcsize(fmt):
        raise ElfError(f"corrupt program headers: entries of {head.phentsize} bytes")
    if len(table) < head.phentsize * head.phnum:
        raise ElfError(f"truncated: its program headers end at byte {head.program_headers_end()}"
                       f", the file has {head.phoff + len(table)}")
    out = []
    for i in range(head.phnum):
        fields = struct.unpack_from(fmt, table, i * head.phentsize)
        out.append((fields[picks[0]], fields[picks[1]], fields[picks[2]], fields[picks[3]]))
    return out
