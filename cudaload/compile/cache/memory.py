"""The in-process kernel cache: compiled code by (program digest, request), bounded in bytes.

Entries are held in least-recently-used order while their sizes add up to at most
``CUDALOAD_MEMORY_CACHE_MAX_BYTES`` (64 MiB unless set); the oldest beyond that lose the cache's
reference, nothing else.  Code still alive elsewhere (the ObjectCode a compile returned, a Module
loaded from it, a Kernel of that Module) stays findable through a weak reference, and a lookup
that finds it holds it again: code in use is never compiled, read or loaded a second time, and a
kernel that a captured graph runs stays loaded through the graph (launch/_graph_pins.py).

An :class:`Entry` holds the ObjectCode (``.cached == "memory"``), the stamps of the files its
compile read (includes.still_valid() says whether the hit holds) and its size.  The ObjectCode a
compile returns keeps the entry's copy alive, so while either lives the entry is found.

Imports of cudaload: _cache_folder (CacheWarning), _log; limits where the bound is set (a
number of bytes, read).
"""

from __future__ import annotations

import _thread
from _weakref import ref as _weak_ref  # weakref.ref itself; the weakref module costs 0.5 ms

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # the same class, typed
    from collections import OrderedDict
else:  # collections' own C class (importing collections cost a fresh process's miss 1-2 ms)
    from _collections import OrderedDict

from .._cache_folder import CacheWarning  # imported with the cache package already
from ..._base import _log

__all__ = ["MEMORY", "MemoryCache", "Entry", "ENTRY_OVERHEAD", "memory_max_bytes", "MEMORY_DEFAULT_BYTES"]

# Enough for a few hundred typical kernels with their source (a family of 64 elementwise kernels
# on a 3,000-line header, code and source together, holds about 12 MiB), little for a process.
MEMORY_DEFAULT_BYTES = 64 << 20

# What an entry costs beyond its code, log and source: the ObjectCode, its dicts, the key.
ENTRY_OVERHEAD = 1024


class Entry:
    """One kernel kept in memory: ``code`` (the ObjectCode, cached "memory"), ``stamps`` (what
    includes.still_valid checks: the files its compile read, as they were; empty for none) and
    ``size`` (the bytes counted against the bound).  Slots, not a named tuple: a hit reads two
    fields, and a slot reads as fast as a tuple's item, twice as fast as a named tuple's field."""

    __slots__ = ("code", "stamps", "size")

    def __init__(self, code, stamps, size: int):
        self.code, self.stamps, self.size = code, stamps, size


class _WeakEntry(_weak_ref):
    """A weak reference to an entry's code, with the rest of the entry: what finds code still
    alive elsewhere once the cache no longer holds it."""

    __slots__ = ("stamps", "size")
    stamps: object
    size: int


class MemoryCache:
    """The entries of this process; ``get``/``put``/``pop``/``clear``, ``nbytes`` held."""

    def __init__(self, limit=None):
        self._limit = limit or memory_max_bytes  # () -> the bound in bytes
        self._held: OrderedDict = OrderedDict()  # key -> entry, least recently used first
        self._weak: dict = {}  # key -> _WeakEntry: the entry, its code by weak reference
        self._bytes = 0
        self._newest = None  # the key last in _held (most recently used), when known
        # Re-entrant: a garbage collection inside a locked section may run _gone in this thread.
        self._lock = _thread.RLock()

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    @property
    def nbytes(self) -> int:
        """The sizes of the entries held, added up."""
        return self._bytes

    def get(self, key):
        """The entry stored under ``key`` while its code is held or alive, else None."""
        held = self._held
        entry = held.get(key)
        if entry is not None:
            # A program compiled again gives the same key object (Program.compile keeps it):
            # when it is the most recent already, the order stands as it is.  (Threads racing
            # here can leave it one place off: which entry is dropped first, nothing else.)
            if key is not self._newest:
                try:
                    held.move_to_end(key)
                except KeyError:  # evicted by another thread meanwhile: still a hit
                    return entry
                self._newest = key
            return entry
        weak = self._weak.get(key)
        if weak is None:
            return None
        obj = weak()
        if obj is None:
            return None
        entry = Entry(obj, weak.stamps, weak.size)
        with self._lock:
            if key not in self._held:
                self._hold(key, entry)
        return entry

    def put(self, key, obj, stamps, size: int) -> Entry:
        """Keep a copy of ``obj`` (cached "memory") under ``key``, valid while ``stamps`` hold
        (includes.still_valid); return the entry.  ``obj`` keeps the copy alive from now on."""
        copy = obj._as("memory")
        # The ObjectCode the caller got holds the cache's copy: a Module loaded from either keeps
        # the entry findable once it is no longer held.
        obj._memory_copy = copy
        entry = Entry(copy, stamps, size + ENTRY_OVERHEAD)
        with self._lock:
            self._drop(key)
            gone = lambda ref, key=key: self._gone(key, ref)  # noqa: E731
            weak = _WeakEntry(copy, gone)  # type: ignore[misc]
            weak.stamps, weak.size = stamps, entry.size
            self._weak[key] = weak
            self._hold(key, entry)
        return entry

    def pop(self, key, default=None):
        """Forget ``key``; the entry that was held, or ``default``."""
        with self._lock:
            entry = self._held.get(key)
            self._drop(key)
            self._weak.pop(key, None)
        return default if entry is None else entry

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._held.clear()
            self._weak.clear()
            self._bytes = 0
            self._newest = None

    def _hold(self, key, entry) -> None:  # with the lock held
        self._held[key] = entry
        self._newest = key
        self._bytes += entry.size
        limit = self._limit()
        while self._bytes > limit and self._held:
            old_key, old = self._held.popitem(last=False)
            self._bytes -= old.size
            if _log.enabled("cache"):
                _log.debug("cache", "memory entry of %s %s dropped: least recently used, beyond "
                           "%d bytes (found again while its code is alive)", old.code.kind,
                           old.code.arch, limit)

    def _drop(self, key) -> None:  # with the lock held
        self._newest = None
        entry = self._held.pop(key, None)
        if entry is not None:
            self._bytes -= entry.size

    def _gone(self, key, ref) -> None:
        """The copy under ``key`` was collected: forget its weak entry, unless replaced."""
        with self._lock:
            weak = self._weak.get(key)
            if weak is ref:
                del self._weak[key]


_memory_setting: tuple = (None, MEMORY_DEFAULT_BYTES)  # (the text last read, its bound)


def memory_max_bytes() -> int:
    """The bound ``CUDALOAD_MEMORY_CACHE_MAX_BYTES`` sets, else :data:`MEMORY_DEFAULT_BYTES` (also
    for a value that is not a number of bytes: warned about once per value)."""
    global _memory_setting
    text = os.environ.get("CUDALOAD_MEMORY_CACHE_MAX_BYTES", "")
    read, bound = _memory_setting
    if text == read:
        return bound
    limit: int | None = MEMORY_DEFAULT_BYTES
    if text.strip():
        from .limits import byte_count  # deferred: a bound left unset reads no number

        limit = byte_count(text.strip())
    if limit is None:
        from ..._base._warn import warn  # deferred: only a setting that is no number needs it

        warn(f"cudaload: CUDALOAD_MEMORY_CACHE_MAX_BYTES={text!r} is not a number of bytes; the "
             f"default ({MEMORY_DEFAULT_BYTES} bytes) is used", CacheWarning)
        limit = MEMORY_DEFAULT_BYTES
    _memory_setting = (text, limit)  # one tuple: a thread never reads half of it
    return limit


# (program digest, (arch, output) normalised) -> Entry, least recently used beyond a bound dropped.
MEMORY = MemoryCache()
