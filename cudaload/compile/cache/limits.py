"""The kernel cache's size bounds as the environment sets them.

``CUDALOAD_CACHE_MAX_BYTES`` bounds the disk folder (no bound unless set);
``CUDALOAD_MEMORY_CACHE_MAX_BYTES`` bounds what the in-process cache holds (64 MiB unless set).
A value that is not a number of bytes is ignored with one :class:`CacheWarning`.

Imports of cudaload: _cache_folder (CacheWarning).

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

import os

from .._cache_folder import CacheWarning

__all__ = ["CacheWarning", "byte_count", "max_bytes", "memory_max_bytes", "MEMORY_DEFAULT_BYTES"]

# Enough for a few hundred typical kernels with their source (a family of 64 elementwise kernels
# on a 3,000-line header, code and source together, holds about 12 MiB), little for a process.
MEMORY_DEFAULT_BYTES = 64 << 20


def byte_count(text: str) -> int | None:
    """``text`` as a number of bytes (0 or more), or None when it is not one."""
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def max_bytes() -> int | None:
    """The size bound ``CUDALOAD_CACHE_MAX_BYTES`` sets, or None (none, or not a number: warned
    about, and ignored)."""
    value = os.environ.get("CUDALOAD_CACHE_MAX_BYTES", "").strip()
    if not value:
        return None
    limit = byte_count(value)
    if limit is None:
        from ..._warn import warn

        warn(f"cudaload: CUDALOAD_CACHE_MAX_BYTES={value!r} is not a number of bytes; ignored",
             CacheWarning)
        return None
    return limit


_memory_setting: tuple = (None, MEMORY_DEFAULT_BYTES)  # (the text last read, its bound)


def memory_max_bytes() -> int:
    """The bound ``CUDALOAD_MEMORY_CACHE_MAX_BYTES`` sets, else :data:`MEMORY_DEFAULT_BYTES` (also
    for a value that is not a number of bytes: warned about once per value)."""
    global _memory_setting
    text = os.environ.get("CUDALOAD_MEMORY_CACHE_MAX_BYTES", "")
    read, bound = _memory_setting
    if text == read:
        return bound
    limit = byte_count(text.strip()) if text.strip() else MEMORY_DEFAULT_BYTES
    if limit is None:
        from ..._warn import warn

        warn(f"cudaload: CUDALOAD_MEMORY_CACHE_MAX_BYTES={text!r} is not a number of bytes; the "
             f"default ({MEMORY_DEFAULT_BYTES} bytes) is used", CacheWarning)
        limit = MEMORY_DEFAULT_BYTES
    _memory_setting = (text, limit)  # one tuple: a thread never reads half of it
    return limit
