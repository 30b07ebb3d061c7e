"""The disk cache as objects: one per folder, independent of each other; the null cache; the
process-wide default; what the cache logs."""

from __future__ import annotations

import logging
import os
import warnings

from cudaload.compile import cache
from cudaload.compile.objectcode import ObjectCode

KEY = "ab" * 32


def _obj(code: bytes = b"\x7fELF" + b"x" * 60) -> ObjectCode:
    return ObjectCode(code, "cubin", "sm_90")


def test_caches_of_two_folders_in_one_process_are_independent(tmp_path):
    a, b = cache.DiskCache(tmp_path / "a"), cache.DiskCache(tmp_path / "b")
    a.store(KEY, _obj(b"code of a"))
    assert a.lookup(KEY).code == b"code of a" and b.lookup(KEY) is None
    b.store(KEY, _obj(b"code of b"))
    assert a.lookup(KEY).code == b"code of a" and b.lookup(KEY).code == b"code of b"
    with b.lock("cd" * 32) as publish:
        publish(_obj(b"locked in b"))
    assert a.lookup("cd" * 32) is None and b.lookup("cd" * 32).code == b"locked in b"
    a.evict(KEY)
    assert a.lookup(KEY) is None and b.lookup(KEY).code == b"code of b"
    assert (a.clear(), b.info()["entries"]) == (0, 2)


def test_a_folder_that_fails_leaves_another_folders_cache_alone(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    broken, fine = cache.DiskCache(blocker / "cache"), cache.DiskCache(tmp_path / "fine")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        broken.store(KEY, _obj())
        broken.store(KEY, _obj())  # warned once
        fine.store(KEY, _obj())
    assert [issubclass(w.category, cache.CacheWarning) for w in caught] == [True]
    assert broken.place.broken and not broken.usable and broken.lookup(KEY) is None
    assert not fine.place.broken and fine.lookup(KEY) is not None


def test_the_null_cache_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    null = cache.NullCache()
    null.store(KEY, _obj())
    with null.lock(KEY) as publish:
        publish(_obj())
    null.evict(KEY)
    assert null.lookup(KEY) is None and not null.usable and null.root is None
    assert list(tmp_path.iterdir()) == []


def test_the_default_is_one_cache_per_folder_and_null_when_off(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", str(tmp_path / "one"))
    monkeypatch.delenv("CUDALOAD_CACHE", raising=False)
    first = cache.default()
    assert isinstance(first, cache.DiskCache) and first.root == str(tmp_path / "one")
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", str(tmp_path / "two"))
    assert cache.default() is not first and cache.default().root == str(tmp_path / "two")
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", str(tmp_path / "one"))
    assert cache.default() is first and cache.configured() is first
    monkeypatch.setenv("CUDALOAD_CACHE", "0")
    assert cache.default() is cache.NULL and cache.configured() is first
    assert first.info()["enabled"] is False  # not what compiles use now
    monkeypatch.delenv("CUDALOAD_CACHE")
    assert first.info()["enabled"] is True


def test_debug_log_reports_a_miss_a_store_a_hit_and_a_refused_entry(tmp_path, caplog):
    disk = cache.DiskCache(tmp_path)
    with caplog.at_level(logging.DEBUG, logger="cudaload.cache"):
        assert disk.lookup(KEY) is None
        with disk.lock(KEY) as publish:
            publish(_obj())
        disk.writer.wait()  # the entry is written by a thread of its own
        assert disk.lookup(KEY) is not None
        with open(disk.path(KEY), "r+b") as f:
            f.seek(70)
            f.write(b"\0\0\0")
        assert disk.lookup(KEY) is None
        disk.prune()
    records = [r for r in caplog.records if r.name == "cudaload.cache"]
    assert all(r.levelno == logging.DEBUG for r in records)
    said = [r.getMessage().split()[:2] for r in records]
    assert said == [["disk", "miss"], ["stored", disk.path(KEY)], ["disk", "hit"],
                    ["disk", "entry"], ["evicted", disk.path(KEY)]], said
    assert KEY in records[0].getMessage() and "refused" in records[3].getMessage()


def test_nothing_is_logged_below_debug(tmp_path, caplog):
    disk = cache.DiskCache(tmp_path)
    with caplog.at_level(logging.INFO, logger="cudaload.cache"):
        disk.lookup(KEY)
        disk.store(KEY, _obj())
        disk.lookup(KEY)
    assert [r for r in caplog.records if r.name == "cudaload.cache"] == []



def test_an_entry_still_being_written_is_found_and_said_so(tmp_path, caplog):
    """Published by this process (the key's lock released to its writer), not on disk yet: a
    hit, as "disk", not a second compile."""
    disk = cache.DiskCache(tmp_path)
    disk.writer.pending[(disk.folder, KEY)] = _obj(b"being written")
    try:
        with caplog.at_level(logging.DEBUG, logger="cudaload.cache"):
            found = disk.lookup(KEY)
    finally:
        del disk.writer.pending[(disk.folder, KEY)]
    assert found.code == b"being written" and found.cached == "disk"
    assert [r.getMessage() for r in caplog.records if r.name == "cudaload.cache"] == [
        f"disk hit {KEY} in {disk.folder} (still being written)"]
    assert disk.lookup(KEY) is None  # once written it is read from disk; here it never was


def test_an_entry_whose_write_ends_during_the_lookup_is_found(tmp_path, monkeypatch):
    """The writer renames the file into place, then drops the entry from ``pending``: a lookup
    that finds no file and then no pending entry (the write ended in between) missed an entry
    its own process had just published.  Here the write runs exactly in between."""
    from cudaload.compile.cache import disk as disk_module

    disk = cache.DiskCache(tmp_path)
    disk.ready()
    held = []
    monkeypatch.setattr(disk.writer, "submit", held.append)  # the write waits until let go
    with disk.lock("cd" * 32) as publish:
        publish(_obj(b"published"))
    assert len(held) == 1 and not os.path.exists(disk.path("cd" * 32))
    access = os.access

    def access_then_write(path, mode):
        answer = access(path, mode)
        while held:
            held.pop()()  # the write ends: the file is in place, the pending entry gone
        return answer

    monkeypatch.setattr(disk_module.os, "access", access_then_write)
    found = disk.lookup("cd" * 32)
    while held:  # a lookup that looked at no file: the write ends after it
        held.pop()()
    assert found is not None and found.code == b"published"
    assert os.path.exists(disk.path("cd" * 32)) and disk.lookup("cd" * 32).code == b"published"


def test_an_entry_that_cannot_be_read_is_a_miss_and_said_why(tmp_path, caplog):
    disk = cache.DiskCache(tmp_path)
    disk.store(KEY, _obj())
    path = disk.path(KEY)
    import os

    os.unlink(path)
    os.mkdir(path)  # not a regular file
    with caplog.at_level(logging.DEBUG, logger="cudaload.cache"):
        assert disk.lookup(KEY) is None
    (message,) = [r.getMessage() for r in caplog.records if r.name == "cudaload.cache"]
    assert message.startswith(f"disk entry {path} refused: ") and len(message) > len(path) + 25


def test_a_hit_marks_the_entry_recently_used(tmp_path):
    """Pruning drops the least recently used entries first, judged by modification time."""
    import os

    disk = cache.DiskCache(tmp_path)
    disk.store(KEY, _obj())
    os.utime(disk.path(KEY), (1_000_000, 1_000_000))
    assert disk.lookup(KEY) is not None
    assert os.stat(disk.path(KEY)).st_mtime > 1_000_000 + 1e8
    os.utime(disk.path(KEY), (1_000_000, 1_000_000))
    assert disk.lookup("cd" * 32) is None and os.stat(disk.path(KEY)).st_mtime == 1_000_000


def test_a_folder_not_made_yet_is_looked_at_again_once_it_is(tmp_path):
    """Not made yet: usable, but not yet judged trusted; once made by another user (root here gives it
    away) it is not used.  tests/test_trust_unprivileged.py: the same as an ordinary user."""
    import os

    import pytest

    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("gives the folder to another user with os.chown: run as root")
    disk = cache.DiskCache(tmp_path / "later")
    assert disk.usable and not disk.place.trusted and disk.lookup(KEY) is None
    os.mkdir(disk.root, 0o700)
    os.chown(disk.root, 12345, 12345)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not disk.usable and disk.lookup(KEY) is None
    assert len(caught) == 1 and "belongs to uid 12345" in str(caught[0].message)


def test_entries_of_a_folder_not_used_are_never_read(tmp_path):
    import os

    disk = cache.DiskCache(tmp_path / "c")
    disk.store(KEY, _obj())
    disk.place.broken = True  # warned about: off for the rest of the process
    assert disk.lookup(KEY) is None
    os.chmod(disk.root, 0o777)  # every user may write it: not to be trusted
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.DiskCache(disk.root).lookup(KEY) is None
    assert len(caught) == 1 and "every user may write it" in str(caught[0].message)
    os.chmod(disk.root, 0o700)
    assert cache.DiskCache(disk.root).lookup(KEY) is not None  # the entry itself is fine
