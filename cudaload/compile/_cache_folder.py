"""The folder the kernel cache (compile/cache/) and ``toolchain.json`` (toolchain.py) are kept in:
which one the environment names, whether it is on, and whether this process may use it.

Folder: ``CUDALOAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/cudaload``, else ``~/.cache/cudaload``;
``CUDALOAD_CACHE=0`` turns it off.  Layout::

    toolchain.json            which NVRTC and header folders were last used (see toolchain.py)
    v2/ab12…ef.bin            one kernel cache entry per key (sha256 hex); one flat folder:
                              ext4/NTFS/APFS look names up by hash, and creating a shard folder
                              cost 0.6 ms per miss
    v2/.locks                 byte-range locks, one byte per key, taken around a compile (POSIX;
                              Windows uses a ``<key>.lock`` file per key)
    v2/.tmp-…                 a write in progress (swept when stale)
    v2/.swept                 when the folder was last swept (at most hourly, by a miss)

Whoever can write the folder chooses the code a compile returns and, through ``toolchain.json``,
the library loaded into the process, so it is trusted as ssh and pip trust theirs (_untrusted.py); a
folder that is not is unused, with one :class:`CacheWarning` that names it and the fix.  One that
cannot be created or written gives one warning and the process goes on without it (a passing
failure of a network filesystem, ESTALE or EBUSY, loses one entry, unless it recurs: see
:meth:`Folder.failed`).  Both verdicts
are kept per folder for the rest of the process, in the one :class:`Folder` of its path, which the
kernel cache and the toolchain record share.  Neither needs the other's modules: the status
report reads ``toolchain.json`` without importing the kernel cache.

Imports of cudaload: _log, _untrusted.
"""

from __future__ import annotations

import os
import stat

from .._base import _log, _untrusted

__all__ = ["FORMAT", "CacheWarning", "Folder", "chosen", "configured", "shared_problem"]

# The format of the kernel cache's entries (objectcode.encode writes it into each one): entries of
# each format have a folder of their own, so a version that reads another format never sees them.
FORMAT = 2
# The read-only tiers' setting (cache/tiers.py reads it): named here, where a miss without tiers
# looks for it, so that it imports no tiers.py.
READ_DIRS = "CUDALOAD_CACHE_READ_DIRS"
# The folder's size bound (cache/limits.py reads it), named here for the same reason: a store
# without a bound imports no limits.py.
MAX_BYTES = "CUDALOAD_CACHE_MAX_BYTES"


class CacheWarning(UserWarning):
    """The disk cache cannot be used, or a cache setting is not understood; compiling goes on."""


class Folder:
    """The cache folder ``root`` (entries in ``root/v<FORMAT>``, the ``folder``), with what this
    process found of it: ``trusted`` (owner and mode found fit), ``shared`` (a group's, by
    ``CUDALOAD_CACHE_SHARED``) and ``broken`` (warned about, and off for the rest of the
    process)."""

    def __init__(self, root):
        self.root = os.path.abspath(os.fspath(root))
        self.folder = os.path.join(self.root, f"v{FORMAT}")
        self.trusted = self.shared = self.broken = False
        self.transient = 0  # passing failures of writes in a row (see failed)

    @property
    def usable(self) -> bool:
        """Whether the folder is used: it has not failed, and it may be trusted (see judge_trust)."""
        return not self.broken and (self.trusted or self.judge_trust())

    def make(self) -> None:
        """Create the entries folder (and the cache folder, private) if needed.  Raises
        OSError."""
        try:
            os.mkdir(self.folder, 0o700)
        except FileExistsError:
            return
        except FileNotFoundError:
            os.makedirs(os.path.dirname(self.root), exist_ok=True)  # ~/.cache, as programs do
            for folder in (self.root, self.folder):
                try:
                    os.mkdir(folder, 0o700)
                except FileExistsError:
                    pass
        if _untrusted.shared():  # a group's folder: its entries folder is the group's as well
            os.chmod(self.folder, stat.S_IMODE(os.stat(self.root).st_mode) & 0o2770)

    def problem(self) -> tuple[str, str] | None:
        """(folder, why) when the cache folder or its entries folder may not be used, else None.
        Raises FileNotFoundError when the cache folder does not exist yet."""
        return _untrusted.cache_problem(self.root, self.folder, _untrusted.shared())

    def check(self):
        """The test each file read from the folder must pass (see _untrusted.py)."""
        return shared_problem if self.shared else _untrusted.problem

    def judge_trust(self) -> bool:
        """Whether the folder may be used; when not, warn once and leave it unused.  A folder
        not made yet is checked again once it exists."""
        shared = _untrusted.shared()
        try:
            found = _untrusted.cache_problem(self.root, self.folder, shared)
        except FileNotFoundError:
            return True  # made by this process, 0700, when its first entry is written
        if found is not None:
            folder, why = found
            self._warn_once(
                f"kernel cache folder {folder} is not used: {why}, and whoever may write it "
                f"would choose the code this process runs. Next step: {private_step(folder)}; "
                "for a cache a group shares on purpose (chgrp GROUP; chmod 2770), set "
                f"{_untrusted.SHARED_ENV}=1")
            return False
        self.trusted, self.shared = True, shared
        return True

    def failed(self, exc: OSError, doing: str) -> None:
        """A write into the folder failed with ``exc``: a passing failure of a network
        filesystem (``ESTALE``, ``EBUSY``: a handle another machine made stale, a file busy for a
        moment) loses that one entry, said at DEBUG; the ``TRANSIENT_LIMIT``-th in a row, or any
        other failure, is :meth:`give_up`'s."""
        import errno  # deferred: only a failed write needs it (a disk hit imports no errno)

        transient = (errno.ESTALE, errno.EBUSY, errno.EAGAIN, errno.EINTR)  # see TRANSIENT_LIMIT
        if exc.errno in transient and self.transient < TRANSIENT_LIMIT - 1:
            self.transient += 1
            if _log.enabled("cache"):
                _log.debug("cache", "%s in %s failed (%s); going on", doing, self.root, exc)
            return
        self.give_up(exc, doing)

    def give_up(self, exc: OSError, doing: str) -> None:
        """Warn once that the folder failed while ``doing``, and leave it unused."""
        self._warn_once(f"kernel cache folder {self.root} cannot be used ({doing}: {exc}); going "
                        "on without the disk cache. Next step: set CUDALOAD_CACHE_DIR to a "
                        "writable folder with free space, or CUDALOAD_CACHE=0 to silence this")

    def _warn_once(self, text: str) -> None:
        if not self.broken:
            self.broken = True
            from .._base._warn import warn  # deferred: a process whose cache works never imports it

            warn(f"cudaload: {text}", CacheWarning)


def private_step(folder: str) -> str:
    """The next step for a cache folder not to be trusted: a new private one of the user's own.
    Never a change to ``folder`` itself: others may use it (``/tmp``), and as root a ``chown`` or
    ``chmod`` there breaks the machine."""
    return ("set CUDALOAD_CACHE_DIR to a new folder of your own, e.g. "
            "CUDALOAD_CACHE_DIR=~/.cache/cudaload-private (cudaload makes it, mode 0700); leave "
            f"{folder} as it is")


def shared_problem(st) -> str | None:
    """The test of each file read from a folder a group shares (``CUDALOAD_CACHE_SHARED``)."""
    return _untrusted.problem(st, shared_by_group=True)


# Failures of a network filesystem that pass (a stale handle, a file busy for a moment: ESTALE,
# EBUSY, EAGAIN, EINTR): a write that meets one loses its entry only, unless TRANSIENT_LIMIT of
# them come in a row (Folder.failed).
TRANSIENT_LIMIT = 3
_OFF_WORDS = ("0", "false", "no", "off")
_ON_WORDS = ("1", "true", "yes", "on")
_by_root: dict[str, Folder] = {}  # one per folder: its trust and failure hold process-wide
# (CUDALOAD_CACHE, CUDALOAD_CACHE_DIR, XDG_CACHE_HOME, HOME) -> the folder they name, or None when
# off: resolved once per setting, since a compile asks for it and the environment reads are most
# of a lookup
_by_setting: dict[tuple, Folder | None] = {}


def _for_root(root: str) -> Folder:
    found = _by_root.get(root)
    if found is None:
        found = _by_root[root] = Folder(root)
    return found


def _root(configured_dir: str | None, xdg: str | None) -> str:
    if configured_dir:
        return os.path.abspath(os.path.expanduser(configured_dir))
    return os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "cudaload")


def chosen() -> Folder | None:
    """The folder the environment names, or None when ``CUDALOAD_CACHE=0`` turns it off (used or
    not: see :attr:`Folder.usable`)."""
    env = os.environ
    setting = (env.get("CUDALOAD_CACHE"), env.get("CUDALOAD_CACHE_DIR"),
               env.get("XDG_CACHE_HOME"), env.get("HOME"))
    try:
        return _by_setting[setting]
    except KeyError:
        word = (setting[0] or "1").strip().lower()
        off = word in _OFF_WORDS
        if not off and word not in _ON_WORDS:  # a typo must not pass for a choice
            from .._base._warn import warn  # deferred: only this path needs it

            warn(f"cudaload: CUDALOAD_CACHE={setting[0]!r} is neither on (1, true, yes, on) nor "
                 "off (0, false, no, off); the kernel cache stays on. Next step: set "
                 "CUDALOAD_CACHE=1 or CUDALOAD_CACHE=0", CacheWarning)
        found = _by_setting[setting] = None if off else _for_root(_root(setting[1], setting[2]))
        return found


def configured() -> Folder:
    """The folder the environment names, even with ``CUDALOAD_CACHE=0`` (``cudaload cache``
    looks after it then too)."""
    env = os.environ
    return _for_root(_root(env.get("CUDALOAD_CACHE_DIR"), env.get("XDG_CACHE_HOME")))
