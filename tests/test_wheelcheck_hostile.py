"""`cudaload check-wheel` on wheels made to exhaust it: a member that inflates to gigabytes is read
by offset (its headers only) or, beyond what is checked, reported as not checked; never held
whole.  Each check runs in a subprocess with a bound on its address space and a time limit.

The big members are zeros after a header, compressed as they are written (a few MB on disk).
"""

from __future__ import annotations

import io
import json
import struct
import time
import zipfile

import pytest

from cudaload.compile.bundle import MAGIC as BUNDLE_MAGIC
from cudaload.wheelcheck import elf, pe
from cudaload.wheelcheck.blob import Blob
from tests._support import run_py
from tests.test_wheelcheck import pe_image

ADDRESS_SPACE = 1 << 30  # far below the members' sizes
LIMIT_S = 60
GIB = 1 << 30


def big_wheel(folder, name: str, member: str, size: int, head: bytes, tail: bytes = b"") -> str:
    """A wheel whose ``member`` is ``head``, zeros, then ``tail``: ``size`` bytes in all."""
    path = str(folder / f"{name}-1.0-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr(f"{name}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        with archive.open(member, "w", force_zip64=True) as out:
            out.write(head)
            zeros, left = bytes(1 << 24), size - len(head) - len(tail)
            while left > 0:
                out.write(zeros[:min(left, len(zeros))])
                left -= len(zeros)
            out.write(tail)
    return path


def far_dynamic_elf(size: int) -> tuple[bytes, bytes]:
    """(head, tail) of an ELF64 library of ``size`` bytes whose dynamic section is its last 64
    bytes and whose string table is near its start: DT_NEEDED libm.so.6, libcudart.so.12."""
    dynamic_at = size - 64
    head = bytearray(0x200)
    head[:16] = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<HHIQQQIHHHHHH", head, 16, 3, 62, 1, 0, 64, 0, 0, 64, 56, 2, 0, 0, 0)
    struct.pack_into("<IIQQQQQQ", head, 64, 1, 5, 0, 0, 0, size, size, 0x1000)  # PT_LOAD
    struct.pack_into("<IIQQQQQQ", head, 120, 2, 6, dynamic_at, dynamic_at, dynamic_at, 64, 64, 8)
    strtab = b"\0libcudart.so.12\0libm.so.6\0"
    head[0x100:0x100 + len(strtab)] = strtab
    tail = struct.pack("<8q", 1, 17, 1, 1, 5, 0x100, 0, 0)  # NEEDED, NEEDED, STRTAB, NULL
    return bytes(head), tail


def check_bounded(*words) -> tuple[float, object]:
    """Run ``cudaload check-wheel *words`` with the address space bounded; (seconds, result)."""
    start = time.monotonic()
    proc = run_py(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))
        from cudaload.cli import main
        sys.exit(main({["check-wheel", *map(str, words)]!r}))
    """, timeout=LIMIT_S, check=False)
    return time.monotonic() - start, proc


def test_a_library_larger_than_the_address_space_is_read_by_offset(tmp_path):
    size = 3 * GIB // 2
    wheel = big_wheel(tmp_path, "farpkg", "farpkg/_far.so", size, *far_dynamic_elf(size))
    seconds, proc = check_bounded(wheel, "--json")
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr[-2000:]
    (entry,) = json.loads(proc.stdout)["files"]
    assert entry["needed"] == ["libm.so.6", "libcudart.so.12"] and entry["error"] is None
    assert entry["cuda"] == ["libcudart.so.12"]
    assert seconds < 30, seconds


@pytest.mark.parametrize("member, size, head, words", [
    ("bigpkg/_big.so", 4 * GIB, b"\x7fELF\x02\x01\x01" + bytes(57), ()),
    ("bigpkg/_k.bundle", GIB + (1 << 20), BUNDLE_MAGIC, ("--arch", "sm_90")),
], ids=["library", "bundle"])
def test_a_member_beyond_what_is_checked_is_a_failure_saying_so(tmp_path, member, size, head,
                                                                 words):
    wheel = big_wheel(tmp_path, "bigpkg", member, size, head)
    seconds, proc = check_bounded(wheel, *words)
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr[-2000:]
    fails = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and fails[0].startswith(f"FAIL {member}: not checked: {size} bytes, "
                                                   "more than the"), proc.stdout
    assert "Next step:" in fails[0] and proc.stdout.strip().endswith("1 check failed")
    assert seconds < 30, seconds


class CountingFile(io.BytesIO):
    """Bytes that count how many of them were read."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size=-1):
        piece = super().read(size)
        self.bytes_read += len(piece)
        return piece


def test_the_readers_read_only_the_headers_they_need():
    size = 64 << 20
    head, tail = far_dynamic_elf(size)
    image = CountingFile(head + bytes(size - len(head) - len(tail)) + tail)
    assert elf.needed(Blob(image, size)) == ["libm.so.6", "libcudart.so.12"]
    assert image.bytes_read < 16 << 10, image.bytes_read
    dlls = pe_image(["KERNEL32.dll", "nvcuda.dll"])
    padded = CountingFile(dlls + bytes(size))
    assert pe.imports(Blob(padded, len(dlls) + size)) == ["KERNEL32.dll", "nvcuda.dll"]
    assert padded.bytes_read < 16 << 10, padded.bytes_read


def test_a_dynamic_section_of_endless_entries_is_an_elf_error():
    size = 64 << 20
    head, _tail = far_dynamic_elf(size)
    endless = bytearray(head)
    # PT_DYNAMIC over the rest of the file, never DT_NULL: tag 1 (DT_NEEDED) forever.
    struct.pack_into("<QQQQ", endless, 120 + 8, len(head), len(head), len(head), size - len(head))
    data = bytes(endless) + struct.pack("<qq", 1, 1) * ((size - len(head)) // 16)
    with pytest.raises(elf.ElfError, match="more than 16384 entries"):
        elf.needed(Blob(CountingFile(data), len(data)))


@pytest.mark.parametrize("member, head", [("dpkg/_d.so", far_dynamic_elf(1 << 20)[0]),
                                          ("dpkg/_k.bundle", BUNDLE_MAGIC)],
                         ids=["library", "bundle"])
def test_a_damaged_byte_far_from_the_headers_is_still_found(tmp_path, member, head):
    data = head + bytes((1 << 20) - len(head))
    wheel = tmp_path / "dpkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("dpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        archive.writestr(member, data)
    raw = bytearray(wheel.read_bytes())
    raw[raw.index(head) + len(data) - 10] ^= 0xFF  # past every header the readers need
    wheel.write_bytes(bytes(raw))
    _seconds, proc = check_bounded(wheel, "--arch", "sm_90")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{member} cannot be read from the archive" in proc.stderr and "CRC" in proc.stderr
