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

TYPE_CHECKING = False  # typing itself is not imported: it costs more than hashing does
if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = ["BUDGET", "sha256"]

BUDGET = 256 << 10


def _builtin_sha256() -> Callable[..., Any] | None:
    # The interpreter's own module: _sha256 up to CPython 3.11, _sha2 from 3.12; None in an
    # interpreter built without it.
    for name in ("_sha256", "_sha2"):
        try:
            return __import__(name).sha256  # no importlib: its import costs more
        except ImportError:
            continue
    return None


class _Hasher:
    """Which sha256 to use: the interpreter's while the budget lasts, then hashlib's for good."""

    def __init__(self) -> None:
        self.builtin = _builtin_sha256()
        self.left = BUDGET if self.builtin is not None else 0  # bytes the builtin may still hash
        self.openssl: Callable[..., Any] | None = None

    def __call__(self, data: bytes = b"", size: int | None = None) -> Any:
        size = len(data) if size is None else size
        if size < self.left:
            self.left -= size
            return self.builtin(data)  # type: ignore[misc]  # left > 0 only with a builtin
        if self.openssl is None:
            import hashlib

            self.openssl, self.left = hashlib.sha256, 0
        return self.openssl(data)


# sha256(data=b"", size=None): a sha256 hash object fed ``data``, for about ``size`` bytes in
# all (default: those of ``data``).
sha256 = _Hasher()
