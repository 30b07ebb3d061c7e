"""Claims: which process compiles a key, agreed on where the key locks (locks.py) do not reach.

A byte lock taken through one NFS, SFTP (sshfs) or Lustre client is not seen through another, so
two machines sharing a cache folder would both compile every key.  Creating a file with
``O_EXCL`` is refused across clients on all of them, so the process that creates ``<key>.claim``
compiles the key; the others wait for its entry.  A claim records its claimant's host, process and
expiry: one whose expiry has passed, or whose claimant was a process of this host that is gone, is
removed and claimed again, so a dead claimant never blocks anyone beyond its expiry.  A waiter
polls for the entry with backoff until a deadline, then compiles itself: the entry it writes is
whole either way (written aside and renamed), so two compilations of a key cost time, never
correctness.  Any failure to claim (a read-only remount, ``ENOSPC``, ``ESTALE``) is no claim: the
process compiles as it would without claims.

Imports of cudaload: _log, where a claim cannot be made.
"""

from __future__ import annotations

import os
import time

__all__ = ["SUFFIX", "EXPIRY", "WAIT", "Claim", "take", "wait_for", "around", "crosses_machines"]

SUFFIX = ".claim"
EXPIRY = 300.0  # seconds a claim stands: longer than any compile, short enough to outlive a crash
WAIT = 60.0  # seconds a waiter waits for another's entry before compiling the key itself
_host_name: str | None = None


def _host() -> str:
    """This machine's name, asked once, when first needed: a miss in a folder of one machine
    never claims (importing _socket cost a fresh process's first compile 1 ms)."""
    global _host_name
    if _host_name is None:
        # socket's own; the socket module costs a first compile 2-4 ms
        from _socket import gethostname  # deferred: only a claim needs it

        _host_name = gethostname()
    return _host_name

# Filesystems whose locks may not cross machines (the types /proc/self/mounts names).
_NETWORK = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "9p", "ceph", "glusterfs",
            "fuse.sshfs", "fuse.glusterfs", "fuse.ceph", "gpfs", "beegfs")


def crosses_machines(folder: str) -> bool:
    """Whether ``folder`` lies on a filesystem other machines may share (read from the mount
    table; False where it cannot be read)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as table:
            mounts = [line.split()[1:3] for line in table if len(line.split()) > 2]
    except OSError:
        return False
    real = os.path.realpath(folder)
    best, kind = "", ""
    for point, fstype in mounts:
        point = point.replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fstype
    return kind in _NETWORK


class Claim:
    """A claim this process holds on a key; :meth:`drop` gives it up (once the entry is stored)."""

    def __init__(self, path: str):
        self.path = path

    def drop(self) -> None:
        _remove(self.path)


def _remove(path: str) -> None:
    """Delete ``path``, if it can be (contextlib.suppress would import contextlib: 1 ms of a
    fresh process's first compile, which imports this module)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _holder(path: str) -> dict | None:
    """The record of the claim at ``path``, or None where it is gone or unreadable."""
    import json  # deferred: only a key another process claimed is read (json costs 1-3 ms)

    try:
        with open(path, "rb") as file:
            found = json.loads(file.read(4096))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _stale(record: dict | None, now: float) -> bool:
    """Whether a claim is to be removed: expired, unreadable (a claimant that died while writing
    it: its file's age decides, see :func:`take`), or held by a gone process of this host."""
    if record is None:
        return False
    expires = record.get("expires")
    if not isinstance(expires, (int, float)) or expires < now:
        return True
    pid = record.get("pid")
    if record.get("host") == _host() and isinstance(pid, int) and pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive, another user's
            return False
    return False


def take(folder: str, key: str, mode: int = 0o600) -> Claim | None:
    """Claim ``key`` in ``folder``: the Claim when this process is to compile it, None when
    another live claimant holds it.  Raises OSError where no claim can be made at all (the
    caller then compiles without one)."""
    path = folder + os.sep + key + SUFFIX
    for _ in range(3):  # a stale claim removed, then claimed again (twice at most: races)
        now = time.time()
        record = {"host": _host(), "pid": os.getpid(), "expires": now + EXPIRY}
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            held = _holder(path)
            if held is None:  # empty or torn: its claimant died writing it, or is writing it
                try:
                    if os.stat(path).st_mtime + EXPIRY < now:
                        os.unlink(path)
                        continue
                except OSError:
                    pass
                return None
            if not _stale(held, now):
                return None
            _remove(path)
            continue
        try:
            import json  # deferred: as in _holder: a folder of one machine never claims

            try:
                os.write(fd, json.dumps(record).encode())
            finally:
                os.close(fd)
            return Claim(path)  # inside: a KeyboardInterrupt before it leaves no claim behind
        except BaseException:
            # An empty claim left here would have every other machine wait for an entry this
            # process may never write (its filesystem is full or failing): none is made.
            _remove(path)
            raise
    return None


def wait_for(entry: str, claim: str, deadline: float = WAIT) -> bool:
    """Wait, polling with backoff, until the file ``entry`` exists (True), or the claim file
    ``claim`` is gone without it or ``deadline`` seconds have passed (False: compile it)."""
    end = time.monotonic() + deadline
    delay = 0.005
    while True:
        if os.access(entry, os.F_OK):
            return True
        if not os.access(claim, os.F_OK):  # the claimant gave up, or failed to write
            return os.access(entry, os.F_OK)
        left = end - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(2 * delay, 0.25)


def around(folder: str, key: str, mode: int, release):
    """With the key's lock held in ``folder``: claim ``key``, or wait for the claimant's entry;
    ``release`` extended to drop the claim taken (a claim that cannot be made: compiled as
    without claims)."""
    claim = None
    try:  # a claim taken is dropped again if KeyboardInterrupt comes before it is returned
        try:
            claim = take(folder, key, mode)
        except OSError as exc:  # no claim: compile as without claims
            from ..._base import _log  # deferred: only this failure logs

            if _log.enabled("cache"):
                _log.debug("cache", "no claim on %s in %s: %s", key, folder, exc)
            return release
        if claim is None:  # another's: its entry, or after the deadline our own compile
            entry = os.path.join(folder, key + ".bin")
            wait_for(entry, os.path.join(folder, key + SUFFIX))
            return release

        def release_claim() -> None:
            try:
                claim.drop()
            finally:
                release()
        return release_claim
    except BaseException:
        if claim is not None:
            claim.drop()
        raise
