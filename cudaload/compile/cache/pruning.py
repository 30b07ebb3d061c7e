"""Looking after a kernel cache folder: what ``cudaload cache info``, ``clear`` and ``prune`` do,
and the sweep of stale temporary files (_atomic.sweep_stale: a cache miss sweeps its folder once,
and imports neither this module nor the ``re`` its patterns need).  Each function takes the
disk.DiskCache to look after.

Only cudaload's own names are touched (entry, lock and claim files named by a key, ``.locks``,
temporary files, ``toolchain.json``): a folder set by mistake to one that holds other files loses
none of them.  Nothing removes a folder a compile in another process may be writing into, so clearing
while others compile costs them nothing but their entries.  ``CUDALOAD_CACHE_MAX_BYTES`` bounds
the folder: after a write, least recently used entries (hits touch their modification time) are
deleted, except any written or used in the last ``GRACE_S`` seconds.

Imports of cudaload: _atomic, _cache_folder, _file_lock, _log, _untrusted, limits, locks,
objectcode.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time

from .._cache_folder import FORMAT
from ..objectcode import MAX_ENTRY_BYTES, decode
from .limits import max_bytes as _max_bytes
from .locks import KEYS_FILE
from ..._base import _atomic, _log, _untrusted
from ..._base._file_lock import remove_if_free

__all__ = ["GRACE_S", "STALE_TMP_S", "info", "tally", "clear", "prune", "sweep_tmp"]

GRACE_S = 10.0  # an entry this young may be one another process is about to read
STALE_TMP_S = _atomic.STALE_S  # an older temporary file is a crashed writer's (_atomic.py)

# cudaload's own names in a format folder (v1, v2, ...)
_FORMAT_FOLDER = re.compile(r"v[0-9]+")
_OWN_FILE = re.compile(r"[0-9a-f]{64}\.(?:bin|lock|claim)|" + re.escape(KEYS_FILE) + "|"
                       + re.escape(_atomic.SWEPT))
_ENTRY_FILE = re.compile(r"[0-9a-f]{64}\.bin")


# Remove the temporary files in a folder older than ``STALE_TMP_S``; return how many.
sweep_tmp = _atomic.sweep_stale


def _scan(folder: str):
    """(path, stat of the name itself) of every entry file in the entries ``folder``."""
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for entry in it:
            if _ENTRY_FILE.fullmatch(entry.name):
                with contextlib.suppress(OSError):
                    yield entry.path, entry.stat(follow_symlinks=False)


def _refuse_untrusted(disk) -> None:
    """Raise PermissionError, saying why and what to do, when ``disk`` is not to be trusted."""
    try:
        found = disk.problem()
    except FileNotFoundError:
        return
    if found is not None:
        folder, why = found
        from .._cache_folder import private_step  # deferred: only this path needs it

        raise PermissionError(f"{folder} is not a cache folder cudaload uses: {why}. Next step: "
                              f"{private_step(folder)}")


def info(disk, in_use: bool, read_tiers) -> dict:
    """What DiskCache.info says of ``disk``; ``in_use``: whether compiles in this process use
    its folder (it is the cache disk.default() gives); ``read_tiers``: tiers.configured()."""
    count, size = tally(disk)
    try:
        found = disk.problem()
    except FileNotFoundError:
        found = None
    facts = {"directory": disk.root, "enabled": in_use and disk.usable,
             "exists": os.path.isdir(disk.root), "entries": count, "bytes": size,
             "max_bytes": _max_bytes(), "format": FORMAT,
             "problem": f"{found[0]}: {found[1]}" if found else None}
    mine = {name: facts[name] for name in ("directory", "exists", "entries", "bytes",
                                           "problem")}
    facts["tiers"] = [{**mine, "writable": True}] + [
        tier.info() for tier in read_tiers if tier.root != disk.root]
    return facts


def tally(disk) -> tuple[int, int]:
    """(entries, bytes) of the regular entry files in ``disk``'s folder."""
    count = size = 0
    for _path, st in _scan(disk.folder):
        if stat.S_ISREG(st.st_mode):
            count += 1
            size += st.st_size
    return count, size


def clear(disk) -> int:
    """Delete cudaload's own files (entries, locks and temporary files of every format, and
    toolchain.json) and nothing else; return the number of entries deleted.  Compiles in other
    processes meanwhile go on with the disk cache.  Raises PermissionError for a folder that is
    not to be trusted."""
    _refuse_untrusted(disk)
    count = 0
    try:
        with os.scandir(disk.root) as it:
            folders = [e.path for e in it
                       if _FORMAT_FOLDER.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        folders = []
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as it:
            for entry in list(it):
                if _OWN_FILE.fullmatch(entry.name) or entry.name.startswith(_atomic.PREFIX):
                    try:
                        os.unlink(entry.path)
                    except OSError:  # a folder of that name, or gone meanwhile
                        continue
                    count += entry.name.endswith(".bin")
        if folder != disk.folder:  # an older format's, unless it holds others' files
            with contextlib.suppress(OSError):
                os.rmdir(folder)
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(disk.root, "toolchain.json"))
    if _log.enabled("cache"):
        _log.debug("cache", "cleared %s: %d entries", disk.root, count)
    return count


def prune(disk, max_bytes: int | None = None, *, keep: str | None = None,
          verify: bool = True) -> dict:
    """Delete the least recently used entries beyond ``max_bytes``; with ``verify`` also corrupt
    entries; unless keeping a just-written ``keep``, also stale temporary and idle lock files.
    Return what was removed, and under "kept" how many entries beyond ``max_bytes`` were spared
    because they were written or used in the last ``GRACE_S`` seconds.  Raises PermissionError for
    a folder that is not to be trusted."""
    if keep is None:
        _refuse_untrusted(disk)
    check = disk.check()
    now = time.time()
    removed = {"entries": 0, "bytes": 0, "corrupt": 0, "tmp": 0, "locks": 0, "kept": 0}
    alive = []
    for path, st in _scan(disk.folder):
        regular = stat.S_ISREG(st.st_mode)
        if verify and not _sound(path, regular, check):  # reads every entry: only when tidying
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed["corrupt"] += 1
                _evicted(path, "corrupt")
            continue
        if regular:
            alive.append((st.st_mtime, st.st_size, path))
    total = sum(size for _mtime, size, _p in alive)
    if max_bytes is not None and total > max_bytes:
        for mtime, size, path in sorted(alive):
            if total <= max_bytes:
                break
            if path == keep or now - mtime < GRACE_S:
                removed["kept"] += 1
                continue
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
                removed["entries"] += 1
                removed["bytes"] += size
                _evicted(path, f"least recently used, beyond {max_bytes} bytes")
    if keep is None:
        removed["tmp"] += sweep_tmp(disk.folder, now)
        removed["locks"] += _drop_idle_locks(disk.folder)
    return removed


def _evicted(path: str, why: str) -> None:
    if _log.enabled("cache"):
        _log.debug("cache", "evicted %s (%s)", path, why)


def _sound(path: str, regular: bool, check) -> bool:
    """Whether the entry file ``path`` would be a hit; one that cannot be opened now may be."""
    if not regular:  # a link, a pipe...: never read, so never a hit
        return False
    try:
        data = _untrusted.read_regular(path, MAX_ENTRY_BYTES, check)
    except ValueError:  # too large, or not to be trusted
        return False
    except OSError:
        return True
    return decode(data, os.path.basename(path)[:-4]) is not None


def _drop_idle_locks(folder: str) -> int:
    count = 0
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for entry in it:
            if entry.name.endswith(".lock") and not os.path.exists(entry.path[:-5] + ".bin"):
                count += remove_if_free(entry.path)
    return count
