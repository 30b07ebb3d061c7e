"""A file read by offset, a piece at a time, never whole: the headers that say what a compiled
file of a wheel needs are a few kilobytes of a member that may hold gigabytes (or say it does,
compressed to a few megabytes).

A member of a zip archive opened by ``zipfile`` seeks forward by decompressing and backward by
decompressing again from its start, holding at most a chunk at a time: a reader that asks for
its pieces in the order they lie in the file decompresses the member about once.
"""

from __future__ import annotations

import io
import struct
from typing import IO

__all__ = ["Blob", "MAX_NAME"]

MAX_NAME = 4096  # PATH_MAX: no library name a loader takes is longer


class Blob:
    """The first ``size`` bytes of the seekable binary file ``file``, read by offset."""

    __slots__ = ("_file", "size")

    def __init__(self, file: IO[bytes], size: int):
        self._file, self.size = file, size

    @classmethod
    def of(cls, data: bytes | Blob) -> Blob:
        """``data`` itself when it is a Blob, else one reading the bytes ``data``."""
        return data if isinstance(data, Blob) else cls(io.BytesIO(data), len(data))

    def read(self, at: int, count: int) -> bytes:
        """``count`` bytes from offset ``at``, fewer where the file ends first."""
        count = min(count, self.size - at)
        if at < 0 or count <= 0:
            return b""
        self._file.seek(at)
        return self._file.read(count)

    def unpack(self, layout: struct.Struct, at: int) -> tuple | None:
        """The fields of ``layout`` at offset ``at``; None where the file ends before them."""
        piece = self.read(at, layout.size)
        return layout.unpack(piece) if len(piece) == layout.size else None

    def string(self, at: int, end: int) -> bytes | None:
        """The bytes from ``at`` up to the first NUL before offset ``end``; None when there is
        no NUL there within :data:`MAX_NAME` bytes."""
        piece = self.read(at, min(end - at, MAX_NAME + 1))
        stop = piece.find(b"\0")
        return piece[:stop] if stop >= 0 else None
