"""The kernel cache: a dict per process in front of a folder shared by processes.

Folder: ``CUDALOAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/cudaload``, else ``~/.cache/cudaload``;
``CUDALOAD_CACHE=0`` turns the folder off (the per-process dict stays).  Layout::

    toolchain.json            which NVRTC and header folders were last used (see toolchain.py)
    v1/ab12…ef.bin            one entry per key (sha256 hex); one flat folder: ext4/NTFS/APFS look
                              names up by hash, and creating a shard folder cost 0.6 ms per miss
    v1/.locks                 byte-range locks, one byte per key, taken around a compile (POSIX;
                              Windows uses a ``<key>.lock`` file per key)
    v1/.tmp-…                 a write in progress (swept when stale)

An entry is ``HEADER`` (magic, format version, metadata length, payload length, sha256 of metadata
and payload), then the metadata as JSON (kind, arch, log, lowered names), then the code.  Entries
are written to a temporary file in the same folder and renamed into place, so a reader sees a
whole entry or none; one that fails any check is a miss.  A miss's file work runs on a worker
thread, partly while NVRTC compiles (see _writes.py); the key stays locked until its entry is in
place.  No fsync: it cost 1-4 ms per entry (2-8% of a compile), and an entry torn by a power cut
fails its integrity hash and is compiled again, so durability buys nothing a miss does not.  A
folder that cannot be created or written gives one warning and the process goes on without it.
``CUDALOAD_CACHE_MAX_BYTES`` bounds the folder: after a write, least recently used entries (hits
touch their modification time) are deleted, except any written or used in the last ``GRACE_S``
seconds.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import struct
import time
import warnings

from . import _locking, _writes
from .objectcode import ObjectCode

__all__ = ["FORMAT", "MEMORY", "OFF", "CacheWarning", "directory", "entries", "enabled", "lookup",
           "store", "lock", "evict", "encode", "decode", "info", "clear", "prune", "write_atomic",
           "byte_count"]

FORMAT = 1
MAGIC = b"CUDALDKC"
HEADER = struct.Struct("<8sHIQ32s")
GRACE_S = 10.0  # an entry this young may be one another process is about to read
STALE_TMP_S = 300.0  # no write takes this long: an older temporary file is a crashed writer's

# (program digest, arch as asked, output as asked) -> ObjectCode with .cached == "memory".
MEMORY: dict = {}
OFF = ""  # as the folder of lookup() and lock(): this entry is not kept on disk


class CacheWarning(UserWarning):
    """The disk cache cannot be used; compiling goes on without it."""


_broken: set[str] = set()  # folders already warned about, off for the rest of the process
_swept: set[str] = set()  # folders whose stale temporary files this process has removed


def directory() -> str:
    """The cache folder this process uses (it may not exist yet)."""
    env = os.environ
    spec = (env.get("CUDALOAD_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME"))
    root = _resolved.get(spec)
    if root is None:  # resolved once per setting: a miss asks for the folder several times
        configured, xdg, _home = spec
        if configured:
            root = os.path.abspath(os.path.expanduser(configured))
        else:
            root = os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "cudaload")
        _resolved[spec] = root
    return root


_resolved: dict = {}


def entries() -> str | None:
    """The folder of entries this process uses now, or None when the disk part is off
    (``CUDALOAD_CACHE=0``) or its folder failed.  Resolved once per compile and passed along: the
    environment reads are most of the cost of a lookup."""
    if os.environ.get("CUDALOAD_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    root = directory()
    return None if root in _broken else _entries_root(root)


def enabled() -> bool:
    """Whether the disk part is on (``CUDALOAD_CACHE`` is not 0 and the folder has not failed)."""
    return entries() is not None


def _entries_root(root: str) -> str:
    return os.path.join(root, f"v{FORMAT}")


def _path(key: str, suffix: str = ".bin", folder: str | None = None) -> str:
    """The file of ``key`` in ``folder`` (what :func:`entries` returned), else in this process's."""
    return (folder or _entries_root(directory())) + os.sep + key + suffix


def _give_up(exc: OSError, doing: str) -> None:
    root = directory()
    if root not in _broken:
        _broken.add(root)
        warnings.warn(f"cudaload: kernel cache folder {root} cannot be used ({doing}: {exc}); "
                      "going on without the disk cache. Next step: set CUDALOAD_CACHE_DIR to a "
                      "writable folder with free space, or CUDALOAD_CACHE=0 to silence this",
                      CacheWarning, stacklevel=4)


def encode(obj: ObjectCode) -> bytes:
    """The bytes of the cache entry holding ``obj``."""
    meta = json.dumps({"kind": obj.kind, "arch": obj.arch, "log": obj.log,
                       "lowered_names": obj.lowered_names}, sort_keys=True).encode()
    digest = hashlib.sha256(meta + obj.code).digest()
    return HEADER.pack(MAGIC, FORMAT, len(meta), len(obj.code), digest) + meta + obj.code


def decode(data: bytes) -> ObjectCode | None:
    """The ObjectCode in a cache entry, or None if the entry is truncated, corrupt or foreign."""
    if len(data) < HEADER.size:
        return None
    magic, version, meta_len, code_len, digest = HEADER.unpack_from(data)
    if magic != MAGIC or version != FORMAT or len(data) != HEADER.size + meta_len + code_len:
        return None
    body = memoryview(data)[HEADER.size:]
    if hashlib.sha256(body).digest() != digest:
        return None
    try:
        meta = json.loads(bytes(body[:meta_len]))
        kind, arch, log, names = meta["kind"], meta["arch"], meta["log"], meta["lowered_names"]
    except (ValueError, KeyError, TypeError):
        return None
    # An entry whose hash matches but whose fields are not what this version writes (another
    # writer using the same format number) is a miss, not an ObjectCode the driver chokes on.
    if kind not in ("cubin", "ptx") or not isinstance(arch, (str, type(None))) \
            or not isinstance(log, str) or not isinstance(names, dict) \
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        return None
    return ObjectCode(bytes(body[meta_len:]), kind, arch, log=log, lowered_names=dict(names),
                      cached="disk")


def lookup(key: str, folder: str | None = None) -> ObjectCode | None:
    """The entry stored under ``key``, or None (absent, unreadable, corrupt, or cache off).
    ``folder``: what :func:`entries` returned, if the caller has it; :data:`OFF` for none."""
    if folder is None:
        folder = entries()
    if not folder:
        return None
    path = _path(key, folder=folder)
    if not os.access(path, os.F_OK):  # a miss without raising and catching FileNotFoundError
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    obj = decode(data)
    if obj is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # least-recently-used order is by modification time
    return obj


write_atomic = _writes.write_atomic


def store(key: str, obj: ObjectCode) -> None:
    """Write ``obj`` under ``key``; on failure warn once and turn the disk cache off."""
    if not enabled():
        return
    path = _path(key)
    try:
        _ready(os.path.dirname(path))
        write_atomic(path, encode(obj))
    except OSError as exc:
        _give_up(exc, "writing an entry")
        return
    _bound(path)


def _ready(folder: str) -> str:
    """Create the entries ``folder`` if needed and sweep it once per process.  Raises OSError."""
    os.makedirs(folder, exist_ok=True)  # every time: another process may have cleared it
    if folder not in _swept:  # once per process: the scan grows with the folder
        _swept.add(folder)
        _sweep_tmp(folder)
    return folder


@contextlib.contextmanager
def lock(key: str, folder: str | None = None):
    """Hold the per-key lock of ``key``; the ``with`` block gets ``publish(obj)``, which stores
    ``obj`` under ``key``.  Nothing is locked or stored when the disk cache is off or unusable.
    ``folder``: what :func:`entries` returned, if the caller has it.

    After ``publish`` the write and the unlock are left to the worker thread (see _writes.py).
    """
    if folder is None:
        folder = entries()
    if not folder:
        yield _discard
        return
    try:
        if folder not in _swept:
            _ready(folder)
        release = _locking.acquire_key(folder, key)
    except OSError as exc:
        _give_up(exc, "creating a lock file")
        yield _discard
        return
    ahead = None
    published: list = []
    try:  # from here on, whatever happens (KeyboardInterrupt included) the key is released
        ahead = _writes.Ahead(folder)
        yield functools.partial(_publish, _path(key, folder=folder), ahead, release, published)
    finally:
        if not published:
            if ahead is not None:
                ahead.discard()
            release()


def _discard(_obj) -> None:
    pass


def _publish(entry: str, ahead: _writes.Ahead, release, published: list, obj: ObjectCode) -> None:
    published.append(obj)

    def job() -> None:
        try:
            data = encode(obj)
            try:
                fd, tmp = ahead.take()
                _writes.commit(fd, tmp, entry, data)
            except FileNotFoundError:
                # The temporary file went during the compile: the folder was cleared, or the
                # compile outlasted STALE_TMP_S and another process swept the file.
                write_atomic(entry, data)
        except OSError as exc:
            _give_up(exc, "writing an entry")
            return
        finally:
            release()
        _bound(entry)
    _writes.later(job)


def _bound(entry: str) -> None:
    """Hold the folder to ``CUDALOAD_CACHE_MAX_BYTES`` after ``entry`` was written, sparing it."""
    limit = _max_bytes()
    if limit is not None:
        prune(limit, keep=entry, verify=False)


def evict(key: str) -> None:
    """Forget ``key`` on disk (memory entries are the caller's to drop)."""
    if enabled():
        with contextlib.suppress(OSError):
            os.unlink(_path(key))


def byte_count(text: str) -> int | None:
    """``text`` as a number of bytes (0 or more), or None when it is not one."""
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def _max_bytes() -> int | None:
    value = os.environ.get("CUDALOAD_CACHE_MAX_BYTES", "").strip()
    if not value:
        return None
    limit = byte_count(value)
    if limit is None:
        warnings.warn(f"cudaload: CUDALOAD_CACHE_MAX_BYTES={value!r} is not a number of bytes; "
                      "ignored", CacheWarning, stacklevel=3)
        return None
    return limit


def _sweep_tmp(folder: str, now: float | None = None) -> int:
    now = time.time() if now is None else now
    removed = 0
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for entry in it:
            if entry.name.startswith(_writes.PREFIX):
                with contextlib.suppress(OSError):
                    if now - entry.stat().st_mtime > STALE_TMP_S:
                        os.unlink(entry.path)
                        removed += 1
    return removed


def _scan(root: str):
    """(path, stat) of every entry file under the folder ``root``."""
    with contextlib.suppress(OSError), os.scandir(_entries_root(root)) as it:
        for entry in it:
            if entry.name.endswith(".bin"):
                with contextlib.suppress(OSError):
                    yield entry.path, entry.stat()


def info() -> dict:
    """Location, whether it is on, the number of entries and their bytes."""
    _writes.drain()
    root = directory()
    count = size = 0
    for _path_, st in _scan(root):
        count += 1
        size += st.st_size
    return {"directory": root, "enabled": enabled(), "exists": os.path.isdir(root),
            "entries": count, "bytes": size, "max_bytes": _max_bytes(), "format": FORMAT}


def clear() -> int:
    """Delete every entry, lock and temporary file; return the number of entries deleted."""
    import shutil

    _writes.drain()
    root = directory()
    count = sum(1 for _ in _scan(root))
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(_entries_root(root))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(root, "toolchain.json"))
    MEMORY.clear()
    return count


def prune(max_bytes: int | None = None, *, keep: str | None = None, verify: bool = True) -> dict:
    """Delete the least recently used entries beyond ``max_bytes``; with ``verify`` also corrupt
    entries; unless keeping a just-written ``keep``, also stale temporary and idle lock files.
    Return what was removed."""
    _writes.drain()  # returns at once on the worker thread, which calls this after each write
    root = directory()
    now = time.time()
    removed = {"entries": 0, "bytes": 0, "corrupt": 0, "tmp": 0, "locks": 0}
    alive = []
    for path, st in _scan(root):
        if verify:  # reads every entry: only when asked to tidy, not after each write
            try:
                with open(path, "rb") as f:
                    ok = decode(f.read()) is not None
            except OSError:
                ok = True
            if not ok:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed["corrupt"] += 1
                continue
        alive.append((st.st_mtime, st.st_size, path))
    total = sum(size for _mtime, size, _p in alive)
    if max_bytes is not None and total > max_bytes:
        for mtime, size, path in sorted(alive):
            if total <= max_bytes:
                break
            if path == keep or now - mtime < GRACE_S:
                continue
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
                removed["entries"] += 1
                removed["bytes"] += size
    if keep is None:
        removed["tmp"] += _sweep_tmp(_entries_root(root), now)
        removed["locks"] += _drop_idle_locks(_entries_root(root))
    return removed


def _drop_idle_locks(folder: str) -> int:
    count = 0
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for entry in it:
            if entry.name.endswith(".lock") and not os.path.exists(entry.path[:-5] + ".bin"):
                count += _locking.remove_if_free(entry.path)
    return count
