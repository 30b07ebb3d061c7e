"""The kernel cache: a dict per process in front of a folder shared by processes.

Folder: ``CUDALOAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/cudaload``, else ``~/.cache/cudaload``;
``CUDALOAD_CACHE=0`` turns the folder off (the per-process dict stays).  Layout::

    toolchain.json            which NVRTC and header folders were last used (see toolchain.py)
    v2/ab12…ef.bin            one entry per key (sha256 hex); one flat folder: ext4/NTFS/APFS look
                              names up by hash, and creating a shard folder cost 0.6 ms per miss
    v2/.locks                 byte-range locks, one byte per key, taken around a compile (POSIX;
                              Windows uses a ``<key>.lock`` file per key)
    v2/.tmp-…                 a write in progress (swept when stale)

An entry (_entry.py) records the key it was stored under, and an integrity hash; one that fails
any check, or was stored under another key, is a miss.  Entries are written to a temporary file in
the same folder and renamed into place, so a reader sees a whole entry or none, while the key's
lock is held: another process waiting for the key finds the entry once it gets the lock (the
temporary file is created while NVRTC compiles, see _writes.py).  No fsync: it cost 1-4 ms per entry (2-8% of a compile), and an entry torn by a power cut fails its
integrity hash and is compiled again, so durability buys nothing a miss does not.  A folder that cannot be created or written gives one warning and the process goes
on without it.  ``CUDALOAD_CACHE_MAX_BYTES`` bounds the folder: after a write, least recently used
entries (hits touch their modification time) are deleted, except any written or used in the last
``GRACE_S`` seconds.

Whoever can write the folder chooses the code a compile returns, so it is trusted as ssh and pip
trust theirs (_trust.py): the folder (created 0700) and every file read from it must belong to
this user or root and be writable by neither group nor others; otherwise the folder is not used,
with one warning that names it and the fix.  ``CUDALOAD_CACHE_SHARED=1`` opts in to a folder
deliberately shared by a group: compiled entries from it are used, but no library path is taken
from it.  Only regular files are read (without following a symbolic link, without blocking, up to
``MAX_ENTRY_BYTES``); anything else is a miss.  The folder's trust is checked once per process.
"""

from __future__ import annotations

import contextlib
import os
import stat
import warnings

from . import _locking, _trust, _untrusted, _writes
from ._entry import FORMAT, HEADER, MAGIC, decode, encode
from .objectcode import ObjectCode

__all__ = ["FORMAT", "MEMORY", "OFF", "CacheWarning", "directory", "entries", "enabled", "lookup",
           "store", "lock", "evict", "encode", "decode", "info", "clear", "prune", "write_atomic",
           "byte_count", "HEADER", "MAGIC"]

GRACE_S = 10.0  # an entry this young may be one another process is about to read
STALE_TMP_S = 300.0  # no write takes this long: an older temporary file is a crashed writer's
MAX_ENTRY_BYTES = 1 << 30  # far beyond any CUBIN; a larger file is not an entry

# (program digest, arch as asked, output as asked) -> ObjectCode with .cached == "memory".
MEMORY: dict = {}
OFF = ""  # as the folder of lookup() and lock(): this entry is not kept on disk


class CacheWarning(UserWarning):
    """The disk cache cannot be used; compiling goes on without it."""


_broken: set[str] = set()  # folders already warned about, off for the rest of the process
_swept: set[str] = set()  # folders whose stale temporary files this process has removed
_trusted: set[str] = set()  # folders whose owner and mode were found fit, once per process
_shared: set[str] = set()  # entries folders of caches shared by a group (CUDALOAD_CACHE_SHARED)


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
    (``CUDALOAD_CACHE=0``), its folder failed or is not to be trusted.  Resolved once per compile
    and passed along: the environment reads are most of the cost of a lookup."""
    if os.environ.get("CUDALOAD_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    root = directory()
    if root in _broken or (root not in _trusted and not _vouch(root)):
        return None
    return _entries_root(root)


def enabled() -> bool:
    """Whether the disk part is on (``CUDALOAD_CACHE`` is not 0 and the folder has not failed)."""
    return entries() is not None


def _entries_root(root: str) -> str:
    return os.path.join(root, f"v{FORMAT}")


def _path(key: str, suffix: str = ".bin", folder: str | None = None) -> str:
    """The file of ``key`` in ``folder`` (what :func:`entries` returned), else in this process's."""
    return (folder or _entries_root(directory())) + os.sep + key + suffix


def _problem(root: str, shared: bool) -> tuple[str, str] | None:
    """(folder, why) when the cache folder ``root`` or its entries folder may not be used, else
    None.  Raises FileNotFoundError when ``root`` does not exist yet."""
    for folder in (root, _entries_root(root)):
        try:
            why = _trust.folder_problem(folder, shared)
        except FileNotFoundError:
            if folder == root and not os.path.lexists(root):
                raise
            return None  # no entries folder yet: only this user (or root) can make one in root
        except OSError:
            return None  # not a folder: creating or writing in it fails, and says so
        if why is not None:
            return folder, why
    return None


def _vouch(root: str) -> bool:
    """Whether the folder ``root`` may be used; when not, warn once and leave it off for the rest
    of the process.  A folder not made yet is checked again once it exists."""
    shared = _trust.shared()
    try:
        found = _problem(root, shared)
    except FileNotFoundError:
        return True  # made by this process, 0700, when its first entry is written
    if found is not None:
        folder, why = found
        _warn_once(root, f"kernel cache folder {folder} is not used: {why}, and whoever may "
                         "write it would choose the code this process runs. Next step: make it "
                         f"yours and private (chown -R $USER {folder}; chmod 700 {folder}), "
                         "remove it, or set CUDALOAD_CACHE_DIR to a folder of your own; for a "
                         "cache a group shares on purpose (chgrp GROUP; chmod 2770), set "
                         f"{_trust.SHARED_ENV}=1")
        return False
    _trusted.add(root)
    if shared:
        _shared.add(_entries_root(root))
    return True


def _warn_once(root: str, text: str) -> None:
    if root not in _broken:
        _broken.add(root)
        warnings.warn(f"cudaload: {text}", CacheWarning, stacklevel=5)


def _give_up(exc: OSError, doing: str) -> None:
    root = directory()
    _warn_once(root, f"kernel cache folder {root} cannot be used ({doing}: {exc}); going on "
                     "without the disk cache. Next step: set CUDALOAD_CACHE_DIR to a writable "
                     "folder with free space, or CUDALOAD_CACHE=0 to silence this")


def _check(folder: str):
    """The test each file read from the entries ``folder`` must pass (see _trust.py)."""
    return _shared_problem if folder in _shared else _trust.problem


def _shared_problem(st) -> str | None:
    return _trust.problem(st, shared_by_group=True)


def _file_mode(folder: str) -> int | None:
    """The mode of a file written in ``folder``: readable by the group of a shared cache."""
    return 0o640 if folder in _shared else None


def lookup(key: str, folder: str | None = None) -> ObjectCode | None:
    """The entry stored under ``key``, or None (absent, unreadable, corrupt, stored under another
    key, not a regular file, not to be trusted, or cache off).  ``folder``: what
    :func:`entries` returned, if the caller has it; :data:`OFF` for none."""
    if folder is None:
        folder = entries()
    if not folder:
        return None
    path = folder + os.sep + key + ".bin"
    if not os.access(path, os.F_OK):  # a miss without raising and catching FileNotFoundError
        return None
    try:
        data = _untrusted.read_regular(path, MAX_ENTRY_BYTES, _check(folder))
    except (OSError, ValueError):
        return None
    obj = decode(data, key)
    if obj is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # least-recently-used order is by modification time
    return obj


write_atomic = _writes.write_atomic


def store(key: str, obj: ObjectCode) -> None:
    """Write ``obj`` under ``key``; on failure warn once and turn the disk cache off."""
    folder = entries()
    if not folder:
        return
    try:
        _ready(folder)
    except FileNotFoundError:  # removed meanwhile: as if cleared
        return
    except OSError as exc:
        _give_up(exc, "writing an entry")
        return
    written = _write(folder, key, obj)
    if written is not None:
        _bound(written)


def _ready(folder: str) -> str:
    """Create the entries ``folder`` (and the cache folder, private) if needed, check it once and
    sweep it once per process.  Raises OSError, PermissionError for a folder not to be used."""
    _make(folder)  # every time: another process may have cleared it
    if folder not in _swept:  # once per process: the scan grows with the folder
        root = os.path.dirname(folder)
        if root not in _trusted and not _vouch(root):
            raise PermissionError(f"{root} is not to be trusted")
        _swept.add(folder)
        _upkeep.sweep_tmp(folder)
    return folder


def _make(folder: str) -> None:
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        return
    except FileNotFoundError:
        root = os.path.dirname(folder)
        os.makedirs(os.path.dirname(root), exist_ok=True)  # ~/.cache: as any program makes it
        with contextlib.suppress(FileExistsError):
            os.mkdir(root, 0o700)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    if _trust.shared():  # a group's folder: its entries folder is the group's as well
        os.chmod(folder, stat.S_IMODE(os.stat(os.path.dirname(folder)).st_mode) & 0o2770)


@contextlib.contextmanager
def lock(key: str, folder: str | None = None):
    """Hold the per-key lock of ``key``; the ``with`` block gets ``publish(obj)``, which stores
    ``obj`` under ``key`` before the lock is released, so another process waiting for the key
    finds it.  Nothing is locked or stored when the disk cache is off or unusable.  ``folder``:
    what :func:`entries` returned, if the caller has it."""
    if folder is None:
        folder = entries()
    if not folder:
        yield _discard
        return
    try:
        if folder not in _swept:
            _ready(folder)
        release = _locking.acquire_key(folder, key, 0o660 if folder in _shared else 0o600)
    except OSError as exc:
        _give_up(exc, "creating a lock file")
        yield _discard
        return
    ahead = written = None

    def publish(obj: ObjectCode) -> None:
        nonlocal written
        written = _write(folder, key, obj, ahead)
    try:  # from here on, whatever happens (KeyboardInterrupt included) the key is released
        ahead = _writes.Ahead(folder)
        yield publish
    finally:
        try:
            if ahead is not None:
                ahead.discard()
        finally:
            release()
    if written is not None:
        _bound(written)


def _discard(_obj) -> None:
    pass


def _write(folder: str, key: str, obj: ObjectCode, ahead: _writes.Ahead | None = None) -> str | None:
    """Write ``obj`` as the entry of ``key`` in ``folder``, through ``ahead``'s temporary file if
    given; the entry's path, or None when it was not written (the folder was cleared meanwhile, or
    failed: warned once, and the disk cache off)."""
    path = folder + os.sep + key + ".bin"
    data = encode(obj, key)
    mode = _file_mode(folder)
    try:
        try:
            made = ahead.take() if ahead is not None else None
            if made is not None:
                _writes.commit(*made, path, data, mode=mode)
                return path
        except FileNotFoundError:
            pass  # the temporary file went during the compile: a `cache clear`, or a sweep
        _writes.write_atomic(path, data, mode=mode)
    except FileNotFoundError:  # cleared again meanwhile: as if cleared after the write
        return None
    except OSError as exc:
        _give_up(exc, "writing an entry")
        return None
    return path


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


from ._upkeep import clear, info, prune  # noqa: E402  (they use this module's names)
from . import _upkeep  # noqa: E402
