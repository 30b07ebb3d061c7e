"""The disk part of the kernel cache: :class:`DiskCache`, the entries of one folder, and
:func:`default`, the cache compiles use now.

:func:`default` gives the one :class:`DiskCache` of the folder the environment names
(_cache_folder.py says which, and whether it may be used), or :data:`NULL` (a :class:`NullCache`,
which keeps nothing) when the disk part is off, its folder failed or is not to be trusted.  A
DiskCache made for another folder is independent of it.

An entry (objectcode.encode) records its key and an integrity hash; one that fails any check, or
was stored under another key, is a miss.  Entries are written to a temporary file in the same
folder and renamed into place, so a reader sees a whole entry or none, while the key's lock
(locks.py) is held: another process waiting for the key finds the entry once it gets the lock (a
thread of its own writes it after the compile returns, see writer.py).  No fsync: it cost 1-4 ms
per entry (2-8% of a compile), and an entry torn by a power cut fails its integrity hash and is
compiled again, as a miss is.  ``CUDALOAD_CACHE_MAX_BYTES`` bounds the folder (pruning.py).

Only regular files are read (without following a symbolic link, without blocking, up to
``MAX_ENTRY_BYTES``); anything else is a miss.  A folder's trust is checked once per process.
The "cudaload.cache" logger reports disk hits, misses, stores, evictions and refused entries at
DEBUG (memory hits are not logged: they must cost a dict lookup and nothing more).

A miss here is looked up in the read-only tiers ``CUDALOAD_CACHE_READ_DIRS`` names (tiers.py),
in order; a hit there is copied here.

Imports of cudaload: _atomic, _cache_folder, _log, _untrusted, claims, lifetime, limits, locks,
memory, objectcode, pruning, tiers, writer (a hit: none of _atomic, claims, limits, locks, tiers).
"""

from __future__ import annotations

import os
import sys
import _thread

from ..objectcode import MAX_ENTRY_BYTES, ObjectCode, decode, encode
from .memory import MEMORY
from .. import _cache_folder
from ..._base import _log, _untrusted, lifetime  # noqa: F401  (lifetime: see writer.py)

TYPE_CHECKING = False  # true for type checkers only: importing typing costs a disk hit 3-5 ms
if TYPE_CHECKING:
    from .writer import Handover, Writer

__all__ = ["NULL", "DiskCache", "NullCache", "default", "configured", "directory"]


class NullCache:
    """The disk part off: nothing is found, locked or kept."""

    root = folder = None
    usable = False

    def lookup(self, key: str) -> None:
        return None

    def lock(self, key: str) -> Handover:
        from .writer import Handover  # deferred: as DiskCache.lock
        return Handover(_nothing, None)

    def store(self, key: str, obj: ObjectCode) -> None:
        pass

    def evict(self, key: str) -> None:
        pass


NULL = NullCache()


def _nothing() -> None:
    return None  # no lock taken: nothing to release


class DiskCache:
    """The kernel cache kept in the folder ``root`` (entries in ``root/v<FORMAT>``, ``folder``).
    What this process found of the folder (``trusted``, ``shared``, ``broken``) is its ``place``'s,
    an _cache_folder.Folder, which the toolchain record shares; ``swept`` says whether its stale
    temporary files were swept (once)."""

    def __init__(self, root, writer: Writer | None = None, *,
                 place: _cache_folder.Folder | None = None, claims: bool | None = None):
        self.place = place or _cache_folder.Folder(root)
        self.root, self.folder = self.place.root, self.place.folder
        self._writer = writer  # None: the process's (see the property)
        self.swept = False
        # Whether a miss also claims its key across machines (claims.py); None: decided from the
        # folder's filesystem at the first miss.
        self.claims = claims

    @property
    def writer(self) -> Writer:
        """What runs the writes of misses (writer.py): the one given, else the process's."""
        if self._writer is None:
            from .writer import DEFAULT  # deferred: a disk hit writes nothing (nor needs _queue)

            self._writer = DEFAULT
        return self._writer

    @property
    def usable(self) -> bool:
        """Whether the folder is used: it has not failed, and it may be trusted."""
        return self.place.usable

    def problem(self) -> tuple[str, str] | None:
        """(folder, why) when the cache folder or its entries folder may not be used, else None.
        Raises FileNotFoundError when the cache folder does not exist yet."""
        return self.place.problem()

    def check(self):
        """The test each file read from the folder must pass (see _untrusted.py)."""
        return self.place.check()

    def path(self, key: str, suffix: str = ".bin") -> str:
        """The file of ``key``."""
        return self.folder + os.sep + key + suffix

    # ---- entries ------------------------------------------------------------------------------

    def lookup(self, key: str) -> ObjectCode | None:
        """The entry stored under ``key`` here, else in a read tier (tiers.py), or None (absent,
        unreadable, corrupt, stored under another key, not a regular file, not to be trusted, or
        the folder unusable)."""
        if self.usable:
            unwritten = self._unwritten(key)  # looked at before the file: see _unwritten
            if unwritten is not None:
                if _log.enabled("cache"):
                    _log.debug("cache", "disk hit %s in %s (still being written)", key,
                               self.folder)
                return unwritten._as("disk")
            path = self.folder + os.sep + key + ".bin"
            if os.access(path, os.F_OK):  # a miss without raising and catching an OSError
                found = read_entry(path, key, self.check())
                if found is not None:
                    try:
                        os.utime(path)  # least-recently-used order is by modification time
                    except OSError:
                        pass
                    if _log.enabled("cache"):
                        _log.debug("cache", "disk hit %s in %s", key, self.folder)
                    return found[0]
            elif _log.enabled("cache"):
                _log.debug("cache", "disk miss %s in %s", key, self.folder)
        return self._from_tiers(key)  # only after a miss here: a hit here costs nothing more

    def _unwritten(self, key: str) -> ObjectCode | None:
        """What this process published under ``key`` here and has not written yet, or None.  The
        writer renames the file, then drops the entry from ``pending``: looked at before the file,
        one holds it however they interleave.  No writer imported: nothing was published."""
        writer = self._writer
        if writer is None:
            if __package__ + ".writer" not in sys.modules:
                return None
            writer = self.writer
        return writer.pending.get((self.folder, key))

    def _from_tiers(self, key: str) -> ObjectCode | None:
        """The entry of ``key`` in the first read tier that holds it, or None."""
        if not os.environ.get(_cache_folder.READ_DIRS):
            return None  # no tier, so no tiers.py
        from . import tiers  # deferred: a hit here reads no tier
        found = tiers.find(key, self.root, read_entry)
        if found is None:
            return None
        if self.usable:
            # Copied here on the writer's thread (the hit waits for no write): later processes
            # here find it without the shared filesystem, and keep it should the tier go away;
            # it is never written back into the tier.
            self.writer.submit(lambda: self._copy(key, found[1]))
        return found[0]

    def lock(self, key: str) -> Handover:
        """Hold the per-key lock of ``key``; the ``with`` block gets ``publish(obj)``, which has
        ``obj`` stored under ``key`` before the lock is released, so another process waiting
        for the key finds it.  Nothing is locked or stored when the folder is unusable."""
        from .writer import Handover  # deferred: a miss's, as locks
        return Handover(lambda: self._acquire(key),
                        lambda obj, release: self._publish(key, obj, release))

    def _acquire(self, key: str):
        """Take the lock of ``key`` (and its claim, see _claimed): the function that releases
        them, once however often it is called, or None where nothing was locked (the folder is
        unusable, or its lock file could not be made)."""
        if not self.usable:
            return None
        release = None
        try:  # a KeyboardInterrupt once the key is locked releases it (as in locks.acquire_key)
            try:
                if not self.swept:
                    self.ready()
                from . import locks  # deferred: a miss's: a disk hit takes no lock

                mode = 0o660 if self.place.shared else 0o600
                release = locks.acquire_key(self.folder, key, mode)
            except OSError as exc:
                self.place.failed(exc, "creating a lock file")
                return None
            release = self._claimed(key, mode, release)
            # Released once, by whichever comes first: the writer once the entry is stored, or
            # the block's end when no write was handed over (an interrupt during the handover
            # included).
            once = _thread.allocate_lock()

            def release_once() -> None:
                if once.acquire(False):
                    release()
            return release_once
        except BaseException:
            if release is not None:
                release()
            raise

    def _publish(self, key: str, obj: ObjectCode, release) -> None:
        """Have the writer store ``obj`` under ``key`` and then call ``release``."""
        self.writer.pending[(self.folder, key)] = obj
        self.writer.submit(lambda: self._store_and_release(key, obj, release))

    def _claimed(self, key: str, mode: int, release):
        """With the key's lock held: claim ``key`` across machines where the folder is shared
        by them, or wait for the claimant's entry (claims.around); ``release`` extended to drop
        the claim."""
        from . import claims  # deferred: a miss's, as locks

        if self.claims is None:
            self.claims = claims.crosses_machines(self.folder)
        return claims.around(self.folder, key, mode, release) if self.claims else release

    def _store_and_release(self, key: str, obj: ObjectCode, release) -> None:
        try:
            written = self._write(key, encode(obj, key))
        finally:
            self.writer.pending.pop((self.folder, key), None)
            release()
        if written is not None:
            self._bound(written)

    def store(self, key: str, obj: ObjectCode) -> None:
        """Write ``obj`` under ``key``; on failure warn once and leave the folder unused."""
        if not self.usable:
            return
        self.writer.wait()  # an entry of ``key`` still being written is not written after this
        self._copy(key, encode(obj, key))

    def _copy(self, key: str, data: bytes) -> None:
        """Write the entry ``data`` under ``key`` (made ready first), and bound the folder."""
        try:
            self.ready()
        except FileNotFoundError:  # removed meanwhile: as if cleared
            return
        except OSError as exc:
            self.place.failed(exc, "writing an entry")
            return
        written = self._write(key, data)
        if written is not None:
            self._bound(written)

    def evict(self, key: str) -> None:
        """Forget ``key`` on disk (memory entries are the caller's to drop)."""
        self.writer.wait()  # nor is one being written kept: it is gone once written
        if self.usable:
            try:
                os.unlink(self.path(key))
            except OSError:
                return
            if _log.enabled("cache"):
                _log.debug("cache", "evicted %s from %s (refused by the driver)", key,
                           self.folder)

    def _write(self, key: str, data: bytes) -> str | None:
        """Write the entry ``data`` (objectcode.encode's) of ``key``; the entry's path, or None
        when it was not written (the folder was cleared meanwhile, or failed: see
        _cache_folder.Folder.failed)."""
        path = self.path(key)
        mode = 0o640 if self.place.shared else None  # readable by the group of a shared cache
        try:
            from ..._base import _atomic  # deferred: a disk hit writes nothing
            _atomic.write_atomic(path, data, mode=mode)
        except FileNotFoundError:  # cleared meanwhile: as if cleared after the write
            return None
        except OSError as exc:
            self.place.failed(exc, "writing an entry")
            return None
        self.place.transient = 0
        if _log.enabled("cache"):
            _log.debug("cache", "stored %s (%d bytes)", path, len(data))
        return path

    def _bound(self, entry: str) -> None:
        """Hold the folder to ``CUDALOAD_CACHE_MAX_BYTES`` after ``entry`` was written, sparing
        it."""
        if not os.environ.get(_cache_folder.MAX_BYTES, "").strip():
            return  # no bound set: no limits.py to import
        from .limits import max_bytes  # deferred: only a bound that is set is read
        limit = max_bytes()
        if limit is not None:  # not self.prune: that waits for the writer, which runs this
            from . import pruning  # deferred: only this path needs it

            pruning.prune(self, limit, keep=entry, verify=False)

    # ---- the folder -----------------------------------------------------------------------------

    def ready(self) -> None:
        """Create the entries folder (and the cache folder, private) if needed; check the folder
        and sweep it once per process.  Raises OSError, PermissionError for a folder not to be
        used."""
        self.place.make()  # every time: another process may have cleared it
        if not self.swept:  # once per process: the scan grows with the folder
            if not self.place.trusted and not self.place.judge_trust():
                raise PermissionError(f"{self.root} is not to be trusted")
            self.swept = True
            from ..._base import _atomic  # deferred: as in _write

            _atomic.sweep_due(self.folder)  # not pruning's: a miss needs none of its patterns

    # ---- looking after it (``cudaload cache info|clear|prune``) ---------------------------------

    def info(self) -> dict:
        """Location, whether compiles in this process use it, the number of entries and their
        bytes; ``problem`` says why a folder that is not to be trusted is not used; ``tiers``,
        this folder then each read tier (tiers.py), each with its entries and bytes."""
        self.writer.wait()  # the entries of this process's misses are counted
        from . import pruning, tiers  # deferred: only this path needs them

        return pruning.info(self, default() is self, tiers.configured())

    def clear(self) -> int:
        """Delete cudaload's own files (see pruning.py) and this process's memory cache; return
        the number of entries deleted.  Raises PermissionError for a folder not to be trusted."""
        self.writer.wait()  # an entry of a miss before the clear is cleared too
        from . import pruning  # deferred: only this path needs it

        count = pruning.clear(self)
        MEMORY.clear()
        return count

    def prune(self, max_bytes: int | None = None, *, keep: str | None = None,
              verify: bool = True) -> dict:
        """Delete the least recently used entries beyond ``max_bytes``, corrupt entries, stale
        temporary and idle lock files (see pruning.py); return what was removed."""
        self.writer.wait()
        from . import pruning  # deferred: only this path needs it

        return pruning.prune(self, max_bytes, keep=keep, verify=verify)


def read_entry(path: str, key: str, check) -> tuple[ObjectCode, bytes] | None:
    """(the entry stored under ``key`` in the file ``path``, the file's bytes), or None;
    ``check(stat)`` says why a file is not to be believed (see _untrusted.py).  Every tier's
    entries are read by this, so each is believed on the same terms.  Whatever fails is a miss,
    said at DEBUG: an entry deleted since the folder was looked at, a stale handle of a network
    filesystem (ESTALE), a busy or failing one (EBUSY, EIO) included."""
    try:
        data = _untrusted.read_regular(path, MAX_ENTRY_BYTES, check)
    except FileNotFoundError:  # gone since the folder was looked at: removed, or cleared
        if _log.enabled("cache"):
            _log.debug("cache", "disk miss %s: %s vanished", key, path)
        return None
    except (OSError, ValueError) as exc:
        if _log.enabled("cache"):
            _log.debug("cache", "disk entry %s refused: %s", path, exc)
        return None
    obj = decode(data, key)
    if obj is None:
        if _log.enabled("cache"):
            _log.debug("cache", "disk entry %s refused: corrupt, or stored under another key",
                       path)
        return None
    return obj, data


_disks: dict[str, DiskCache] = {}  # root -> the DiskCache of the one Folder of that root


def _disk(place: _cache_folder.Folder) -> DiskCache:
    found = _disks.get(place.root)
    if found is None:
        found = _disks[place.root] = DiskCache(place.root, place=place)
    return found


def default() -> DiskCache | NullCache:
    """The cache compiles in this process use now: the DiskCache of the folder the environment
    names, or :data:`NULL` when ``CUDALOAD_CACHE=0``, or that folder failed or is not to be
    trusted and there is no read tier."""
    place = _cache_folder.chosen()
    if place is not None and place.usable:
        return _disk(place)
    from . import tiers  # deferred: only a folder that cannot be used looks for tiers here

    return NULL if place is None or not tiers.configured() else _disk(place)  # the tiers' reader


def configured() -> DiskCache:
    """The DiskCache of the folder the environment names, used or not (``cudaload cache``
    looks after it even with ``CUDALOAD_CACHE=0``)."""
    return _disk(_cache_folder.configured())


def directory() -> str:
    """The cache folder this process uses (it may not exist yet)."""
    return _cache_folder.configured().root
