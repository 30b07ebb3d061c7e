"""cudaload/_base/_elf.py: the file and program headers of ELF32 and ELF64, in both byte orders,
read
as struct reads them; damaged headers are an ElfError."""

from __future__ import annotations

import struct

import pytest

from cudaload._base import _elf
from cudaload.wheelcheck import elf

# (class, byte order): file header fields after e_ident, as struct formats, and a program header
FORMATS = {(1, "<"): ("HHIIIIIHHHHHH", "IIIIIIII"), (1, ">"): ("HHIIIIIHHHHHH", "IIIIIIII"),
           (2, "<"): ("HHIQQQIHHHHHH", "IIQQQQQQ"), (2, ">"): ("HHIQQQIHHHHHH", "IIQQQQQQ")}
SEGMENTS = [(1, 0x0, 0x400000, 0x1234), (2, 0x2000, 0x402000, 0x1f0), (6, 0x40, 0x40, 0x38)]


def image(bits_class: int, order: str, machine: int = 62, shoff: int = 0x5000) -> bytes:
    head_fmt, ph_fmt = FORMATS[bits_class, order]
    ehsize = 16 + struct.calcsize(order + head_fmt)
    phentsize = struct.calcsize(order + ph_fmt)
    ident = _elf.MAGIC + bytes([bits_class, 1 if order == "<" else 2, 1]) + bytes(9)
    header = ident + struct.pack(order + head_fmt, 3, machine, 1, 0x1000, ehsize, shoff, 0,
                                 ehsize, phentsize, len(SEGMENTS), 64, 7, 6)
    table = b""
    for kind, offset, vaddr, filesz in SEGMENTS:
        if bits_class == 2:  # p_type p_flags p_offset p_vaddr p_paddr p_filesz p_memsz p_align
            table += struct.pack(order + ph_fmt, kind, 5, offset, vaddr, vaddr, filesz, filesz, 8)
        else:  # p_type p_offset p_vaddr p_paddr p_filesz p_memsz p_flags p_align
            table += struct.pack(order + ph_fmt, kind, offset, vaddr, vaddr, filesz, filesz, 5, 8)
    return header + table


@pytest.mark.parametrize("bits_class, order", list(FORMATS))
def test_headers_of_each_class_and_byte_order(bits_class, order):
    data = image(bits_class, order, machine=183)
    head = _elf.header(data)
    assert (head.bits, head.order, head.machine) == (32 * bits_class, order, 183)
    ehsize = len(data) - len(SEGMENTS) * head.phentsize
    assert (head.phoff, head.phnum, head.shoff, head.shentsize, head.shnum) == \
        (ehsize, len(SEGMENTS), 0x5000, 64, 7)
    assert head.program_headers_end() == len(data)
    assert head.section_headers_end() == 0x5000 + 64 * 7
    assert _elf.segments(head, data[head.phoff:]) == SEGMENTS


def test_damaged_headers_are_elf_errors():
    data = image(2, "<")
    with pytest.raises(_elf.ElfError, match="no ELF header"):
        _elf.header(b"MZ" + data[2:])
    with pytest.raises(_elf.ElfError, match="neither 32 nor 64 bits"):
        _elf.header(data[:4] + b"\x03" + data[5:])
    with pytest.raises(_elf.ElfError, match="neither 32 nor 64 bits"):
        _elf.header(data[:5] + b"\x00" + data[6:])
    with pytest.raises(_elf.ElfError, match="truncated: 40 bytes, shorter than an ELF header"):
        _elf.header(data[:40])
    head = _elf.header(data)
    with pytest.raises(_elf.ElfError, match="truncated: its program headers end at byte"):
        _elf.segments(head, data[head.phoff:-1])
    short = bytearray(data)
    short[54:56] = struct.pack("<H", 40)  # e_phentsize smaller than one ELF64 program header
    with pytest.raises(_elf.ElfError, match="entries of 40 bytes"):
        _elf.segments(_elf.header(bytes(short)), bytes(short)[head.phoff:])
    none = bytearray(data[:64])
    none[56:58] = struct.pack("<H", 0)  # e_phnum 0: an object file has no program headers
    assert _elf.segments(_elf.header(bytes(none)), b"") == []


def test_program_headers_past_the_end_name_the_files_size():
    data = bytearray(image(2, "<"))
    data[32:40] = struct.pack("<Q", 10 ** 6)  # e_phoff far past the end
    with pytest.raises(_elf.ElfError, match=f"end at byte {10 ** 6 + 3 * 56}, the file has "
                                            f"{len(data)}$"):
        elf.needed(bytes(data))
