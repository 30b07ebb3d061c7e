"""The kernel cache: a bounded one per process (:data:`MEMORY`, _memory.py) before a folder
processes share.

Folder: ``CUDALOAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/cudaload``, else ``~/.cache/cudaload``;
``CUDALOAD_CACHE=0`` turns the folder off (the per-process dict stays).  Layout::

    toolchain.json            which NVRTC and header folders were last used (see toolchain.py)
    v2/ab12…ef.bin            one entry per key (sha256 hex); one flat folder: ext4/NTFS/APFS look
                              names up by hash, and creating a shard folder cost 0.6 ms per miss
    v2/.locks                 byte-range locks, one byte per key, taken around a compile (POSIX;
                              Windows uses a ``<key>.lock`` file per key)
    v2/.tmp-…                 a write in progress (swept when stale)

:func:`default` gives the cache compiles use now: the one :class:`DiskCache` of the folder the
environment names, or :data:`NULL` (a :class:`NullCache`, which keeps nothing) when the disk part
is off, its folder failed or is not to be trusted.  A DiskCache made for another folder is
independent of it.

An entry (_entry.py) records the key it was stored under, and an integrity hash; one that fails
any check, or was stored under another key, is a miss.  Entries are written to a temporary file in
the same folder and renamed into place, so a reader sees a whole entry or none, while the key's
lock is held: another process waiting for the key finds the entry once it gets the lock (a
thread of its own writes it after the compile returns, see _writer.py).  No fsync: it cost
1-4 ms per entry (2-8% of a compile), and an entry torn by a power cut fails its integrity hash
and is compiled again, so durability buys nothing a miss does not.  A folder that cannot be
created or written gives one warning and the process goes on without it.
``CUDALOAD_CACHE_MAX_BYTES`` bounds the folder (_upkeep.py).

Whoever can write the folder chooses the code a compile returns, so it is trusted as ssh and pip
trust theirs (_trust.py); a folder that is not is unused, with one warning that names it and the
fix.  Only regular files are read (without following a symbolic link, without blocking, up to
``MAX_ENTRY_BYTES``); anything else is a miss.  A folder's trust is checked once per process.
The "cudaload.cache" logger reports disk hits, misses, stores, evictions and refused entries at
DEBUG (memory hits are not logged: they must cost a dict lookup and nothing more).

Layer 2, compile: may import the foundation, bindings and compile.  Imports of cudaload: _entry,
_limits, _locking, _log, _memory, _trust, _untrusted, _upkeep, _writer, _writes, objectcode.
"""

from __future__ import annotations

import contextlib
import os
import stat
import _thread

from . import _locking, _upkeep, _writer
from .. import _log, _trust, _untrusted, _writes
from ._entry import FORMAT, HEADER, MAGIC, MAX_ENTRY_BYTES, decode, encode
from ._limits import CacheWarning, byte_count, max_bytes
from ._memory import MemoryCache
from ._upkeep import GRACE_S, STALE_TMP_S
from .objectcode import ObjectCode

__all__ = ["FORMAT", "HEADER", "MAGIC", "MAX_ENTRY_BYTES", "GRACE_S", "STALE_TMP_S", "MEMORY",
           "NULL", "CacheWarning", "DiskCache", "NullCache", "default", "configured",
           "directory", "max_bytes", "byte_count", "encode", "decode"]

# (program digest, (arch, output) normalised) -> (ObjectCode with .cached == "memory", the witness
# of the files its compile read, size), least recently used beyond a bound dropped (_memory.py).
MEMORY = MemoryCache()


def _discard(_obj) -> None:
    pass


class NullCache:
    """The disk part off: nothing is found, locked or kept."""

    root = folder = None
    usable = False

    def lookup(self, key: str) -> None:
        return None

    @contextlib.contextmanager
    def lock(self, key: str):
        yield _discard

    def store(self, key: str, obj: ObjectCode) -> None:
        pass

    def evict(self, key: str) -> None:
        pass


NULL = NullCache()


class DiskCache:
    """The kernel cache kept in the folder ``root`` (entries in ``root/v<FORMAT>``), with its
    state: ``trusted`` (owner and mode found fit), ``shared`` (a group's, by
    ``CUDALOAD_CACHE_SHARED``), ``swept`` (of stale temporary files, once) and ``broken``
    (warned about, and off for the rest of the process)."""

    def __init__(self, root, writer: _writer.Writer | None = None):
        self.root = os.path.abspath(os.fspath(root))
        self.writer = writer or _writer.DEFAULT  # runs the writes of misses (_writer.py)
        self.folder = os.path.join(self.root, f"v{FORMAT}")
        self.trusted = self.shared = self.swept = self.broken = False

    @property
    def usable(self) -> bool:
        """Whether the folder is used: it has not failed, and it may be trusted (see _vouch)."""
        return not self.broken and (self.trusted or self._vouch())

    def path(self, key: str, suffix: str = ".bin") -> str:
        """The file of ``key``."""
        return self.folder + os.sep + key + suffix

    # ---- entries ------------------------------------------------------------------------------

    def lookup(self, key: str) -> ObjectCode | None:
        """The entry stored under ``key``, or None (absent, unreadable, corrupt, stored under
        another key, not a regular file, not to be trusted, or the folder unusable)."""
        if not self.usable:
            return None
        path = self.folder + os.sep + key + ".bin"
        if not os.access(path, os.F_OK):  # a miss without raising and catching FileNotFoundError
            # Published by this process, still being written (its writer's pending entries).
            unwritten = self.writer.pending.get((self.folder, key))
            if unwritten is not None:
                if _log.enabled("cache"):
                    _log.debug("cache", "disk hit %s in %s (still being written)", key,
                               self.folder)
                return unwritten._as("disk")
            if _log.enabled("cache"):
                _log.debug("cache", "disk miss %s in %s", key, self.folder)
            return None
        try:
            data = _untrusted.read_regular(path, MAX_ENTRY_BYTES, self.check())
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
        with contextlib.suppress(OSError):
            os.utime(path)  # least-recently-used order is by modification time
        if _log.enabled("cache"):
            _log.debug("cache", "disk hit %s in %s", key, self.folder)
        return obj

    @contextlib.contextmanager
    def lock(self, key: str):
        """Hold the per-key lock of ``key``; the ``with`` block gets ``publish(obj)``, which has
        ``obj`` stored under ``key`` before the lock is released, so another process waiting
        for the key finds it.  Nothing is locked or stored when the folder is unusable."""
        if not self.usable:
            yield _discard
            return
        try:
            if not self.swept:
                self.ready()
            release = _locking.acquire_key(self.folder, key, 0o660 if self.shared else 0o600)
        except OSError as exc:
            self._give_up(exc, "creating a lock file")
            yield _discard
            return
        handed = False
        # Released once, by whichever comes first: the writer once the entry is stored, or this
        # block's end when no write was handed over (an interrupt during the handover included).
        once = _thread.allocate_lock()

        def release_once() -> None:
            if once.acquire(False):
                release()

        def publish(obj: ObjectCode) -> None:
            nonlocal handed
            self.writer.pending[(self.folder, key)] = obj
            self.writer.submit(lambda: self._store_and_release(key, obj, release_once))
            handed = True
        try:  # from here on, whatever happens (KeyboardInterrupt included) the key is released
            yield publish
        finally:
            if not handed:
                release_once()

    def _store_and_release(self, key: str, obj: ObjectCode, release) -> None:
        try:
            written = self._write(key, obj)
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
        try:
            self.ready()
        except FileNotFoundError:  # removed meanwhile: as if cleared
            return
        except OSError as exc:
            self._give_up(exc, "writing an entry")
            return
        written = self._write(key, obj)
        if written is not None:
            self._bound(written)

    def evict(self, key: str) -> None:
        """Forget ``key`` on disk (memory entries are the caller's to drop)."""
        self.writer.wait()  # nor is one being written kept: it is gone once written
        if self.usable:
            with contextlib.suppress(OSError):
                os.unlink(self.path(key))
                if _log.enabled("cache"):
                    _log.debug("cache", "evicted %s from %s (refused by the driver)", key,
                               self.folder)

    def _write(self, key: str, obj: ObjectCode) -> str | None:
        """Write ``obj`` as the entry of ``key``; the entry's path, or None when it was not
        written (the folder was cleared meanwhile, or failed: warned once, and unused from now
        on)."""
        path = self.path(key)
        data = encode(obj, key)
        mode = 0o640 if self.shared else None  # readable by the group of a shared cache
        try:
            _writes.write_atomic(path, data, mode=mode)
        except FileNotFoundError:  # cleared meanwhile: as if cleared after the write
            return None
        except OSError as exc:
            self._give_up(exc, "writing an entry")
            return None
        if _log.enabled("cache"):
            _log.debug("cache", "stored %s (%d bytes)", path, len(data))
        return path

    def _bound(self, entry: str) -> None:
        """Hold the folder to ``CUDALOAD_CACHE_MAX_BYTES`` after ``entry`` was written, sparing
        it."""
        limit = max_bytes()
        if limit is not None:  # not self.prune: that waits for the writer, which runs this
            _upkeep.prune(self, limit, keep=entry, verify=False)

    # ---- the folder -----------------------------------------------------------------------------

    def ready(self) -> None:
        """Create the entries folder (and the cache folder, private) if needed; check the folder
        and sweep it once per process.  Raises OSError, PermissionError for a folder not to be
        used."""
        self._make()  # every time: another process may have cleared it
        if not self.swept:  # once per process: the scan grows with the folder
            if not self.trusted and not self._vouch():
                raise PermissionError(f"{self.root} is not to be trusted")
            self.swept = True
            _upkeep.sweep_tmp(self.folder)

    def _make(self) -> None:
        try:
            os.mkdir(self.folder, 0o700)
        except FileExistsError:
            return
        except FileNotFoundError:
            os.makedirs(os.path.dirname(self.root), exist_ok=True)  # ~/.cache, as programs do
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.root, 0o700)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.folder, 0o700)
        if _trust.shared():  # a group's folder: its entries folder is the group's as well
            os.chmod(self.folder, stat.S_IMODE(os.stat(self.root).st_mode) & 0o2770)

    def problem(self) -> tuple[str, str] | None:
        """(folder, why) when the cache folder or its entries folder may not be used, else None.
        Raises FileNotFoundError when the cache folder does not exist yet."""
        return _trust.cache_problem(self.root, self.folder, _trust.shared())

    def check(self):
        """The test each file read from the folder must pass (see _trust.py)."""
        return _shared_problem if self.shared else _trust.problem

    def _vouch(self) -> bool:
        """Whether the folder may be used; when not, warn once and leave it unused.  A folder
        not made yet is checked again once it exists."""
        shared = _trust.shared()
        try:
            found = _trust.cache_problem(self.root, self.folder, shared)
        except FileNotFoundError:
            return True  # made by this process, 0700, when its first entry is written
        if found is not None:
            folder, why = found
            self._warn_once(
                f"kernel cache folder {folder} is not used: {why}, and whoever may write it "
                "would choose the code this process runs. Next step: make it yours and private "
                f"(chown -R $USER {folder}; chmod 700 {folder}), remove it, or set "
                "CUDALOAD_CACHE_DIR to a folder of your own; for a cache a group shares on "
                f"purpose (chgrp GROUP; chmod 2770), set {_trust.SHARED_ENV}=1")
            return False
        self.trusted, self.shared = True, shared
        return True

    def _warn_once(self, text: str) -> None:
        if not self.broken:
            self.broken = True
            import warnings  # here: a process whose cache works never imports it

            warnings.warn(f"cudaload: {text}", CacheWarning, stacklevel=5)

    def _give_up(self, exc: OSError, doing: str) -> None:
        self._warn_once(f"kernel cache folder {self.root} cannot be used ({doing}: {exc}); going "
                        "on without the disk cache. Next step: set CUDALOAD_CACHE_DIR to a "
                        "writable folder with free space, or CUDALOAD_CACHE=0 to silence this")

    # ---- looking after it (``cudaload cache info|clear|prune``) ---------------------------------

    def info(self) -> dict:
        """Location, whether compiles in this process use it, the number of entries and their
        bytes; ``problem`` says why a folder that is not to be trusted is not used."""
        self.writer.wait()  # the entries of this process's misses are counted
        count, size = _upkeep.tally(self)
        try:
            found = self.problem()
        except FileNotFoundError:
            found = None
        return {"directory": self.root, "enabled": default() is self,
                "exists": os.path.isdir(self.root), "entries": count, "bytes": size,
                "max_bytes": max_bytes(), "format": FORMAT,
                "problem": f"{found[0]}: {found[1]}" if found else None}

    def clear(self) -> int:
        """Delete cudaload's own files (see _upkeep.py) and this process's memory cache; return
        the number of entries deleted.  Raises PermissionError for a folder not to be trusted."""
        self.writer.wait()  # an entry of a miss before the clear is cleared too
        count = _upkeep.clear(self)
        MEMORY.clear()
        return count

    def prune(self, max_bytes: int | None = None, *, keep: str | None = None,
              verify: bool = True) -> dict:
        """Delete the least recently used entries beyond ``max_bytes``, corrupt entries, stale
        temporary and idle lock files (see _upkeep.py); return what was removed."""
        self.writer.wait()
        return _upkeep.prune(self, max_bytes, keep=keep, verify=verify)


def _shared_problem(st) -> str | None:
    return _trust.problem(st, shared_by_group=True)


_OFF_WORDS = ("0", "false", "no", "off")
_by_root: dict[str, DiskCache] = {}  # one per folder: its trust and failure hold process-wide
# (CUDALOAD_CACHE, CUDALOAD_CACHE_DIR, XDG_CACHE_HOME, HOME) -> the cache they name: resolved
# once per setting, since a compile asks for it and the environment reads are most of a lookup
_by_setting: dict[tuple, DiskCache | NullCache] = {}


def _for_root(root: str) -> DiskCache:
    found = _by_root.get(root)
    if found is None:
        found = _by_root[root] = DiskCache(root)
    return found


def _root(configured_dir: str | None, xdg: str | None) -> str:
    if configured_dir:
        return os.path.abspath(os.path.expanduser(configured_dir))
    return os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "cudaload")


def default() -> DiskCache | NullCache:
    """The cache compiles in this process use now: the DiskCache of the folder the environment
    names, or :data:`NULL` when ``CUDALOAD_CACHE=0``, or that folder failed or is not to be
    trusted."""
    env = os.environ
    setting = (env.get("CUDALOAD_CACHE"), env.get("CUDALOAD_CACHE_DIR"),
               env.get("XDG_CACHE_HOME"), env.get("HOME"))
    found = _by_setting.get(setting)
    if found is None:
        off = (setting[0] or "1").strip().lower() in _OFF_WORDS
        found = _by_setting[setting] = NULL if off else _for_root(_root(setting[1], setting[2]))
    return found if found.usable else NULL


def configured() -> DiskCache:
    """The DiskCache of the folder the environment names, used or not (``cudaload cache``
    looks after it even with ``CUDALOAD_CACHE=0``)."""
    env = os.environ
    return _for_root(_root(env.get("CUDALOAD_CACHE_DIR"), env.get("XDG_CACHE_HOME")))


def directory() -> str:
    """The cache folder this process uses (it may not exist yet)."""
    return configured().root
