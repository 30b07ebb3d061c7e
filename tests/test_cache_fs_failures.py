"""A filesystem that fails under the disk cache: an entry that vanishes between the look at the
folder and the read, ``ESTALE``, ``EBUSY``, ``EIO``, ``ENOSPC``, ``EROFS``, on each call the cache
makes (tests/scenarios/cache_fs_faults.py makes each one fail), and a real read-only remount.
Each is a miss, or one ``CacheWarning`` and the process goes on without the disk cache; never an
error in the compile, never a hang, never a torn entry.  (A full tmpfs and a read-only one are
tests/test_reliability_cache.py's.)"""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from tests._support import last_json, run_scenario

COUNT = 3


def _faulty(op: str, name: str, first: int, cache_dir, count: int = COUNT) -> dict:
    proc = run_scenario("cache_fs_faults", "faulty", op, name, count, first, timeout=120,
                        env={"CUDALOAD_CACHE_DIR": str(cache_dir)})
    assert "Traceback" not in proc.stderr, proc.stderr  # not even on the writer's thread
    out = last_json(proc)
    assert all(out["sizes"]) and len(out["sizes"]) == count  # every compile gave its code
    return out


def _sound(cache_dir) -> int:
    """The number of entries, after checking that none is torn and no temporary file is left."""
    from cudaload.compile import cache

    assert not list(cache_dir.glob("v*/.tmp-*"))
    entries = list(cache_dir.glob("v*/*.bin"))
    assert all(cache.decode(p.read_bytes(), p.name[:-4]) is not None for p in entries)
    return len(entries)


@pytest.mark.parametrize("op, name", [
    ("vanish", "ENOENT"),
    *[(op, name) for op in ("open-entry", "read") for name in ("ESTALE", "EBUSY", "EIO")]])
def test_an_entry_that_cannot_be_read_is_a_miss_and_is_written_again(cache_dir, op, name):
    out = _faulty(op, name, COUNT, cache_dir)
    assert out["cached"] == [None] * COUNT and out["warnings"] == []
    assert _sound(cache_dir) == COUNT


def test_a_hit_whose_time_cannot_be_touched_is_a_hit(cache_dir):
    out = _faulty("utime", "EROFS", COUNT, cache_dir)
    assert out["cached"] == ["disk"] * COUNT and out["warnings"] == []


@pytest.mark.parametrize("name", ["ENOSPC", "EROFS", "ESTALE", "EBUSY"])
@pytest.mark.parametrize("op", ["mkdir", "open-locks", "lock", "open-tmp", "write-half",
                                "rename"])
def test_a_write_that_fails_is_one_warning_and_no_entry(cache_dir, op, name):
    out = _faulty(op, name, 0, cache_dir)
    assert out["cached"] == [None] * COUNT
    assert len(out["warnings"]) == 1, out["warnings"]
    assert os.strerror(getattr(errno, name)) in out["warnings"][0]
    assert _sound(cache_dir) == 0 if cache_dir.exists() else True


@pytest.mark.parametrize("name", ["ESTALE", "EBUSY"])
def test_a_passing_failure_loses_one_entry_and_keeps_the_disk_cache(cache_dir, name):
    out = _faulty("rename-once", name, 0, cache_dir)
    assert out["cached"] == [None] * COUNT and out["warnings"] == []
    assert _sound(cache_dir) == COUNT - 1


@pytest.mark.parametrize("name", ["ENOSPC", "EROFS"])
def test_a_lasting_failure_turns_the_disk_cache_off_at_once(cache_dir, name):
    out = _faulty("rename-once", name, 0, cache_dir)
    assert out["cached"] == [None] * COUNT and len(out["warnings"]) == 1
    assert _sound(cache_dir) < COUNT  # an entry already handed to the writer may be written


def test_a_key_lock_file_gone_stale_is_opened_again(cache_dir):
    # As after `cudaload cache clear` on another machine of a network filesystem.
    out = _faulty("lock-once", "ESTALE", 0, cache_dir)
    assert out["cached"] == [None] * COUNT and out["warnings"] == []
    assert _sound(cache_dir) == COUNT


@pytest.mark.parametrize("name", ["ESTALE", "EIO"])
def test_a_key_lock_that_cannot_be_released_is_no_error(cache_dir, name):
    out = _faulty("unlock", name, 0, cache_dir)
    assert out["cached"] == [None] * COUNT and out["warnings"] == []
    assert _sound(cache_dir) == COUNT


def test_a_folder_remounted_read_only_serves_its_entries_and_warns_once(cache_dir):
    # Remounted between two processes: the kernel refuses to make a mount read-only while a
    # process holds a file of it open for writing (the key-lock file), and an injected EROFS
    # above stands for a remount forced under a running process.
    cache_dir.mkdir(mode=0o700)
    bind = subprocess.run(["mount", "--bind", str(cache_dir), str(cache_dir)],
                          capture_output=True, text=True)
    if bind.returncode:
        pytest.skip(f"cannot bind-mount here ({bind.stderr.strip()}); run as root")
    try:
        filled = _faulty("none", "-", 2, cache_dir, count=2)
        subprocess.run(["mount", "-o", "remount,ro,bind", str(cache_dir)], check=True)
        before = sorted((p.name, p.stat().st_mtime_ns) for p in cache_dir.glob("v*/*"))
        out = _faulty("none", "-", 0, cache_dir, count=4)
        after = sorted((p.name, p.stat().st_mtime_ns) for p in cache_dir.glob("v*/*"))
    finally:
        subprocess.run(["umount", "-l", str(cache_dir)], capture_output=True)
    assert filled["cached"] == ["disk", "disk"]  # written, then read back
    assert out["cached"] == ["disk", "disk", None, None]
    assert len(out["warnings"]) == 1 and "Read-only file system" in out["warnings"][0]
    assert before == after and _sound(cache_dir) == 2


def test_a_claim_that_cannot_be_written_is_not_left_behind(tmp_path, monkeypatch):
    from cudaload.compile.cache import claims

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError):
        claims.take(str(tmp_path), "ab" * 32)
    monkeypatch.undo()
    # Left behind, an empty claim would have every other machine wait for an entry never made.
    assert list(tmp_path.iterdir()) == []
    assert claims.take(str(tmp_path), "ab" * 32) is not None


def test_a_folder_that_fails_to_be_made_ready_gets_no_entry(tmp_path, monkeypatch):
    """ready() fails (the entries folder cannot be made or set up) where a write would still
    go through: the folder is warned about once and left unused, never written after all."""
    import warnings

    from cudaload.compile import _cache_folder, cache
    from cudaload.compile.objectcode import ObjectCode

    disk = cache.DiskCache(tmp_path / "c")
    disk.ready()  # the entries folder exists: only making it ready again fails

    def refused(self):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), self.folder)
    monkeypatch.setattr(_cache_folder.Folder, "make", refused)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        disk.store("ab" * 32, ObjectCode(b"\x7fELF" + b"a" * 60, "cubin", "sm_90"))
    assert [issubclass(w.category, cache.CacheWarning) for w in caught] == [True]
    assert not list((tmp_path / "c").glob("v*/*.bin")) and not disk.usable
