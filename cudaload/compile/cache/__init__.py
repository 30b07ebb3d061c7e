"""The kernel cache: compiled code kept by key, first in a bounded cache per process
(:data:`MEMORY`), then in a folder processes share (:class:`DiskCache`); :func:`default` gives
the one compiles use now, :data:`NULL` when the disk part is off.

Which folder, whether it is on and whether it may be trusted is _cache_folder.py's (the toolchain
record lives there too).  The parts, each a module of this package:

    memory.py     the in-process cache, bounded in bytes (``CUDALOAD_MEMORY_CACHE_MAX_BYTES``),
                  and :data:`MEMORY`
    disk.py       :class:`DiskCache` (look up, lock, store, evict) and :func:`default`
    tiers.py      the read-only folders ``CUDALOAD_CACHE_READ_DIRS`` names, looked in after a miss
    locks.py      the per-key locks processes take around a compile
    writer.py     the thread that writes a miss's entry after its compile returned
    limits.py     the folder's size bound ``CUDALOAD_CACHE_MAX_BYTES``
    pruning.py    ``cudaload cache info|clear|prune``, the size bound kept, stale files swept

The bytes of an entry are compiled code's own (objectcode.py: bundles hold the same bytes).

Imports of cudaload: _cache_folder, disk, memory, objectcode; limits, pruning (when asked).

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

from .._cache_folder import FORMAT, CacheWarning
from .disk import NULL, DiskCache, NullCache, configured, default, directory
from ..objectcode import MAGIC, MAX_ENTRY_BYTES, decode, encode
from .memory import MEMORY

__all__ = ["FORMAT", "HEADER", "MAGIC", "MAX_ENTRY_BYTES", "GRACE_S", "STALE_TMP_S", "MEMORY",
           "NULL", "CacheWarning", "DiskCache", "NullCache", "default", "configured",
           "directory", "max_bytes", "byte_count", "encode", "decode"]


def __getattr__(name: str):
    # What a disk hit needs none of, imported when asked for: pruning.py's constants, limits.py's
    # settings (read by a store) and the entry's header as a struct (objectcode.HEADER).
    if name in ("GRACE_S", "STALE_TMP_S"):
        from . import pruning  # deferred: only this path needs it

        return getattr(pruning, name)
    if name in ("byte_count", "max_bytes"):
        from . import limits  # deferred: see above

        return getattr(limits, name)
    if name == "HEADER":
        from ..objectcode import HEADER  # deferred: made when first asked for (objectcode.py)

        return HEADER
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
