"""Read-only cache tiers: the folders ``CUDALOAD_CACHE_READ_DIRS`` names (``os.pathsep``
separated), looked in after the writable cache folder misses, e.g. a fleet's shared folder
filled ahead of time by ``cudaload precompile`` or ``compile_all`` (or a copy of a cache folder).

A tier is judged as the writable folder is (_untrusted.py): it and its entries folder must belong
to this user or root and be writable by no one else (with ``CUDALOAD_CACHE_SHARED=1``, by its group
only), and each entry file passes the same test and the same checks (disk.read_entry).  A tier that
fails the test is never used, and says why at DEBUG only: a fleet's folder is not this user's to
fix, and ``cudaload cache info`` shows the reason.  A tier that is missing, unreadable or on a
failing filesystem is a miss, and is looked at again at the next miss (it may be mounted by then).

Nothing is ever written into a tier: no entry, no lock, no temporary file, not even the
modification time a hit in the writable folder touches for its least-recently-used order.

Imports of cudaload: _cache_folder, _log, _untrusted, pruning (for ``cache info``).
"""

from __future__ import annotations

import os

from .. import _cache_folder
from ..._base import _log, _untrusted

__all__ = ["ENV", "ReadTier", "configured", "find"]

ENV = _cache_folder.READ_DIRS


class ReadTier:
    """The read-only cache folder ``root`` (entries in ``root/v<FORMAT>``, the ``folder``)."""

    def __init__(self, root: str):
        self.root = root
        self.folder = os.path.join(root, f"v{_cache_folder.FORMAT}")
        self._check = None  # the test each entry file must pass, once the folder passed its own
        self.refused: str | None = None  # why the folder is not used, once found

    def problem(self) -> str | None:
        """Why the tier is not to be trusted, in words, or None; looks again each time.  Raises
        OSError where it cannot be looked at (FileNotFoundError: it does not exist)."""
        # cache_problem passes a folder it cannot look at, as one writes fail in; nothing is
        # written here, so a failing look is none: looked at again later.
        os.stat(self.root)
        found = _untrusted.cache_problem(self.root, self.folder, _untrusted.shared())
        return f"{found[0]}: {found[1]}" if found else None

    def entry_test(self):
        """The test of entry files, or None while the tier is not to be used.  Decided once per
        process for a folder that exists; a missing or failing one is looked at again later."""
        if self._check is not None or self.refused is not None:
            return self._check
        try:
            why = self.problem()
        except OSError as exc:
            if _log.enabled("cache"):
                _log.debug("cache", "read tier %s not looked in: %s", self.root, exc)
            return None
        if why is not None:
            self.refused = why
            if _log.enabled("cache"):
                _log.debug("cache", "read tier %s not used: %s, and whoever may write it would "
                           "choose the code this process runs", self.root, self.refused)
            return None
        self._check = _cache_folder.shared_problem if _untrusted.shared() else _untrusted.problem
        return self._check

    def info(self) -> dict:
        """The tier as ``cudaload cache info`` shows it."""
        from . import pruning  # deferred: only this path needs it

        count, size = pruning.tally(self)
        try:
            why = self.problem()
        except FileNotFoundError:
            why = "it does not exist"
        except OSError as exc:
            why = f"it cannot be looked at ({exc.strerror or exc})"
        return {"directory": self.root, "writable": False, "exists": os.path.isdir(self.root),
                "entries": count, "bytes": size, "problem": why}


_by_root: dict[str, ReadTier] = {}  # one per folder: its trust holds process-wide
_by_setting: dict[str | None, tuple[ReadTier, ...]] = {None: ()}


def configured() -> tuple[ReadTier, ...]:
    """The tiers ``CUDALOAD_CACHE_READ_DIRS`` names now, in its order, each once."""
    setting = os.environ.get(ENV)
    try:
        return _by_setting[setting]
    except KeyError:
        found: list[ReadTier] = []
        for part in setting.split(os.pathsep) if setting else ():
            if part.strip():
                root = os.path.abspath(os.path.expanduser(part.strip()))
                tier = _by_root.get(root) or _by_root.setdefault(root, ReadTier(root))
                if tier not in found:
                    found.append(tier)
        tiers = _by_setting[setting] = tuple(found)
        return tiers


def find(key: str, skip: str, read):
    """``read(path, key, check)`` of the entry file of ``key`` in the first tier where it gives
    something (disk.read_entry: (code, bytes)), or None; the tier at the root ``skip`` (the
    writable folder, already looked in) is left out."""
    for tier in configured():  # () without CUDALOAD_CACHE_READ_DIRS: no stat at all
        check = tier.entry_test() if tier.root != skip else None
        found = None if check is None else read(tier.folder + os.sep + key + ".bin", key, check)
        if found is not None:
            if _log.enabled("cache"):
                _log.debug("cache", "disk hit %s in read tier %s", key, tier.folder)
            return found
    return None
