"""sha256 for the cache's digests, without loading OpenSSL for a few small kernels.

``hashlib`` loads OpenSSL's library when first imported: 1-3 ms, a few percent of a small
kernel's first compile in a fresh process, where everything hashed (the program, its key, its
entry) is a few kilobytes.  The interpreter's own sha256 needs no library but is about 12 times
slower (8 ms per MiB against 0.7), so it hashes only the first :data:`BUDGET` bytes a process
hashes (about what importing hashlib costs); after that, and for any larger piece, hashlib's.
Both give the same digest.

Imports of cudaload: nothing.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

try:
    from _sha256 import sha256 as _builtin  # CPython 3.11 and older
except ImportError:
    try:
        from _sha2 import sha256 as _builtin  # CPython 3.12 and newer
    except ImportError:  # an interpreter built without its own hashes
        _builtin = None

__all__ = ["BUDGET", "sha256"]

BUDGET = 256 << 10
_left = [BUDGET if _builtin is not None else 0]  # bytes the builtin may still hash
_openssl: list = []


def sha256(data: bytes = b"", size: int | None = None):
    """A sha256 hash object fed ``data``, for about ``size`` bytes in all (default: those of
    ``data``)."""
    size = len(data) if size is None else size
    if size < _left[0]:
        _left[0] -= size
        return _builtin(data)
    if not _openssl:
        import hashlib

        _openssl.append(hashlib.sha256)
        _left[0] = 0
    return _openssl[0](data)
