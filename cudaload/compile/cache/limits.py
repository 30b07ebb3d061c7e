"""The kernel cache's size bounds as the environment sets them.

``CUDALOAD_CACHE_MAX_BYTES`` bounds the disk folder (no bound unless set); the in-process
cache's own bound is memory.py's.  A value that is not a number of bytes is ignored with one
:class:`CacheWarning`.

Imports of cudaload: _cache_folder (CacheWarning, the setting's name).
"""

from __future__ import annotations

import os

from .._cache_folder import MAX_BYTES, CacheWarning

__all__ = ["CacheWarning", "byte_count", "max_bytes"]

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
    value = os.environ.get(MAX_BYTES, "").strip()
    if not value:
        return None
    limit = byte_count(value)
    if limit is None:
        from ..._base._warn import warn  # deferred: only this path needs it

        warn(f"cudaload: CUDALOAD_CACHE_MAX_BYTES={value!r} is not a number of bytes; ignored",
             CacheWarning)
        return None
    return limit
