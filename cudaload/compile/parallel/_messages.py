"""compile_all's messages between the calling process and its workers (_workers.py), on pipes:
marshal's where the values allow (a job, the code and its log: strings, bytes, tuples, dicts),
else pickle's (an exception), framed by their kind and length.

Imports of cudaload: nothing.
"""

from __future__ import annotations

import marshal
import os

__all__ = ["frame", "read", "write"]


def frame(value) -> bytes:
    """``value`` as one message: its kind (m: marshal, p: pickle), its length, its bytes."""
    try:
        kind, data = b"m", marshal.dumps(value)
    except ValueError:  # a type marshal does not write (an exception, a class's instance)
        import pickle  # deferred: only these values need it

        kind, data = b"p", pickle.dumps(value)
    return kind + len(data).to_bytes(8, "little") + data


def read(fd: int):
    """The next message on ``fd``; EOFError where the pipe ends first."""
    head = _exactly(fd, 9)
    data = _exactly(fd, int.from_bytes(head[1:], "little"))
    if head[:1] == b"m":
        return marshal.loads(data)
    import pickle  # deferred: only these values need it

    return pickle.loads(data)


def _exactly(fd: int, n: int) -> bytes:
    parts = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
