"""ELF's file header and program headers, read from bytes: what kind of file it is, where its
program headers are, and its segments.  ELF32 and ELF64 of either byte order.

The loader checks a library with them before dlopen (bindings/_loader.py), and wheelcheck/elf.py
finds with them the libraries a compiled file of a wheel asks for.
"""

from __future__ import annotations

__all__ = ["MAGIC", "PT_LOAD", "PT_DYNAMIC", "HEADER_BYTES", "ElfError", "Header", "header",
           "segments"]

MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC = 1, 2
HEADER_BYTES = 64  # the larger of the two file headers: enough to read either

# Fields are read with int.from_bytes, not struct: the status report checks a library with this
# module, and importing struct there cost it 1 ms (a third of the report without CUDA).
# Per class (EI_CLASS 1: 32-bit, 2: 64-bit): the file header's size; (offset, size) of e_phoff
# and e_shoff; where e_phentsize, e_phnum, e_shentsize and e_shnum (2 bytes each) start; in a
# program header, (offset, size) of p_type, p_offset, p_vaddr and p_filesz, and its least size.
_LAYOUT: dict = {
    1: {"bits": 32, "size": 52, "phoff": (28, 4), "shoff": (32, 4), "counts": 42,
        "phdr": ((0, 4), (4, 4), (8, 4), (16, 4)), "phdr_size": 32},
    2: {"bits": 64, "size": 64, "phoff": (32, 8), "shoff": (40, 8), "counts": 54,
        "phdr": ((0, 4), (8, 8), (16, 8), (32, 8)), "phdr_size": 56},
}


class ElfError(ValueError):
    """The data is not an ELF file that can be read; the message says what is wrong with it."""


class Header:
    """What an ELF file header says: its class (``bits``), byte order (``order``: "<" or ">",
    as struct writes it), ``machine``, and where the program and section headers are."""

    __slots__ = ("bits", "order", "machine", "phoff", "phentsize", "phnum", "shoff",
                 "shentsize", "shnum", "_layout", "_big")

    def __init__(self, layout: dict, order: str, data: bytes):
        self.bits: int = layout["bits"]
        self.order: str = order
        self._layout, self._big = layout, order == ">"
        self.machine = self._field(data, 18, 2)
        self.phoff, self.shoff = (self._field(data, *layout[k]) for k in ("phoff", "shoff"))
        self.phentsize, self.phnum, self.shentsize, self.shnum = (
            self._field(data, layout["counts"] + 2 * i, 2) for i in range(4))

    def _field(self, data: bytes, at: int, size: int) -> int:
        return int.from_bytes(data[at:at + size], "big" if self._big else "little")

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
    if head.phnum and head.phentsize < head._layout["phdr_size"]:
        raise ElfError(f"corrupt program headers: entries of {head.phentsize} bytes")
    if len(table) < head.phentsize * head.phnum:
        raise ElfError(f"truncated: its program headers end at byte {head.program_headers_end()}"
                       f", {len(table)} bytes of them given")
    out = []
    for i in range(head.phnum):
        at = i * head.phentsize
        kind, offset, vaddr, filesz = (head._field(table, at + where, size)
                                       for where, size in head._layout["phdr"])
        out.append((kind, offset, vaddr, filesz))
    return out
