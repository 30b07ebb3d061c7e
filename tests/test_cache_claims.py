"""Claims on keys across machines (compile/cache/claims.py): one claimant per key, a dead or
expired claimant taken over, a waiter that finds the claimant's entry or compiles after its
deadline, and a disk cache that claims where its folder crosses machines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from cudaload.compile import cache
from cudaload.compile.cache import claims
from cudaload.compile.objectcode import ObjectCode

KEY = "cd" * 32


def _claim_file(folder, record) -> str:
    path = os.path.join(folder, KEY + claims.SUFFIX)
    with open(path, "w") as file:
        json.dump(record, file)
    return path


def _another_host(expires_in: float = 600.0) -> dict:
    return {"host": "another-" + claims._host(), "pid": 1, "expires": time.time() + expires_in}


def _gone_pid() -> int:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=60, check=True)
    return int(gone.stdout)


def test_one_claimant_per_key_and_the_claim_dropped_frees_it(tmp_path):
    first = claims.take(str(tmp_path), KEY)
    assert first is not None
    record = json.loads((tmp_path / (KEY + claims.SUFFIX)).read_text())
    assert record["host"] == claims._host() and record["pid"] == os.getpid()
    assert record["expires"] > time.time()
    assert claims.take(str(tmp_path), KEY) is None  # held, by a live process
    first.drop()
    assert claims.take(str(tmp_path), KEY) is not None


def test_a_live_claim_of_another_host_is_respected(tmp_path):
    _claim_file(tmp_path, _another_host())
    assert claims.take(str(tmp_path), KEY) is None


def test_an_expired_claim_is_taken_over(tmp_path):
    _claim_file(tmp_path, _another_host(expires_in=-1.0))
    taken = claims.take(str(tmp_path), KEY)
    assert taken is not None
    assert json.loads(open(taken.path).read())["pid"] == os.getpid()


def test_a_claim_of_a_gone_process_of_this_host_is_taken_over(tmp_path):
    _claim_file(tmp_path, {"host": claims._host(), "pid": _gone_pid(),
                           "expires": time.time() + 600})
    assert claims.take(str(tmp_path), KEY) is not None


def test_a_torn_claim_stands_until_its_file_is_older_than_the_expiry(tmp_path):
    path = tmp_path / (KEY + claims.SUFFIX)
    path.write_bytes(b'{"host": "x"')  # its claimant died while writing it
    assert claims.take(str(tmp_path), KEY) is None
    old = time.time() - claims.EXPIRY - 10
    os.utime(path, (old, old))
    assert claims.take(str(tmp_path), KEY) is not None


def test_no_claim_can_be_made_in_a_missing_folder(tmp_path):
    try:
        claims.take(str(tmp_path / "gone"), KEY)
    except OSError:
        pass
    else:
        raise AssertionError("a claim was made in a folder that does not exist")


def test_a_waiter_without_an_entry_gives_up_at_its_deadline_or_when_the_claim_goes(tmp_path):
    entry, claim = str(tmp_path / (KEY + ".bin")), _claim_file(tmp_path, _another_host())
    assert claims.wait_for(entry, claim, deadline=0.05) is False
    os.unlink(claim)
    assert claims.wait_for(entry, claim, deadline=600) is False  # at once: no claimant left


def test_a_disk_cache_that_claims_waits_for_the_claimants_entry(tmp_path):
    """A miss whose key another machine claimed finds that machine's entry under the lock, and
    compiles nothing."""
    disk = cache.DiskCache(tmp_path, claims=True)
    disk.ready()
    claim = _claim_file(disk.folder, _another_host())
    other = cache.DiskCache(tmp_path, claims=False)  # the claimant, writing through its mount
    obj = ObjectCode(b"\x7fELF" + b"c" * 60, "cubin", "sm_90")

    def claimant() -> None:
        time.sleep(0.2)
        other.store(KEY, obj)
        os.unlink(claim)
    thread = threading.Thread(target=claimant)
    thread.start()
    try:
        with disk.lock(KEY) as _publish:
            found = disk.lookup(KEY)
    finally:
        thread.join(60)
    assert found is not None and found.code == obj.code


def test_a_disk_cache_that_claims_drops_its_claim_once_the_entry_is_stored(tmp_path):
    disk = cache.DiskCache(tmp_path, claims=True)
    claim = os.path.join(disk.folder, KEY + claims.SUFFIX)
    with disk.lock(KEY) as publish:
        assert os.path.exists(claim)  # others wait for this process's entry
        publish(ObjectCode(b"\x7fELF" + b"d" * 60, "cubin", "sm_90"))
    disk.writer.wait()
    assert not os.path.exists(claim) and disk.lookup(KEY) is not None
    assert disk.clear() == 1


def test_a_folder_of_a_local_filesystem_does_not_cross_machines():
    assert claims.crosses_machines("/proc/self") is False


def test_a_claim_of_another_host_is_never_judged_by_this_hosts_processes(tmp_path):
    """Its pid means nothing here: a process of that number gone from this host says nothing of
    the claimant, which lives on its own machine until the claim expires."""
    _claim_file(tmp_path, {"host": "another-" + claims._host(), "pid": _gone_pid(),
                           "expires": time.time() + 600})
    assert claims.take(str(tmp_path), KEY) is None


def test_a_claim_of_another_users_live_process_of_this_host_stands(tmp_path, monkeypatch):
    """kill(pid, 0) answers EPERM for a live process this user may not signal: alive."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _claim_file(tmp_path, {"host": claims._host(), "pid": other.pid,
                               "expires": time.time() + 600})

        def not_yours(pid, sig):
            raise PermissionError(1, "Operation not permitted")
        with monkeypatch.context() as patched:
            patched.setattr(claims.os, "kill", not_yours)
            assert claims.take(str(tmp_path), KEY) is None
    finally:
        other.kill()
        other.wait()


def test_a_claim_without_a_number_for_its_expiry_or_pid(tmp_path):
    path = _claim_file(tmp_path, {"host": claims._host(), "pid": "x", "expires": time.time() + 600})
    assert claims.take(str(tmp_path), KEY) is None  # no pid to look for: it stands until expiry
    os.unlink(path)
    _claim_file(tmp_path, {"host": "another-" + claims._host(), "pid": 1, "expires": "never"})
    assert claims.take(str(tmp_path), KEY) is not None  # no expiry: it would stand forever


def test_claims_taken_refused_and_dropped_keep_no_file_descriptor(tmp_path):
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    held = _claim_file(tmp_path, _another_host())  # read each time it is met
    before = open_fds()
    for i in range(200):
        taken = claims.take(str(tmp_path), f"{i:064x}")
        assert taken is not None
        taken.drop()
        assert claims.take(str(tmp_path), KEY) is None
    assert open_fds() == before
    assert os.path.exists(held) and os.listdir(tmp_path) == [os.path.basename(held)]


def _crosses_with(monkeypatch, table: str, folder: str) -> bool:
    """crosses_machines(folder) with ``table`` for /proc/self/mounts."""
    import io

    def fake_open(path, *args, **kwargs):
        assert path == "/proc/self/mounts"
        return io.StringIO(table)
    monkeypatch.setattr(claims, "open", fake_open, raising=False)
    return claims.crosses_machines(folder)


_TABLE = """\
/dev/sda1 / ext4 rw,relatime 0 0
proc /proc proc rw 0 0
short line
server:/export /net nfs4 rw,relatime,vers=4.2 0 0
/dev/sdb1 /net/local ext4 rw 0 0
tag /net/local/deeper/9 9p rw,trans=virtio 0 0
me@host:/x /mnt/ssh\\040fs fuse.sshfs rw,user_id=0 0 0
/dev/sdc1 /mnt/sshfs ext4 rw 0 0
server:/a /over nfs rw 0 0
/dev/sdd1 /over ext4 rw 0 0
"""


@pytest.mark.parametrize("folder, crosses", [
    ("/home/me/.cache/cudaload", False),  # only / holds it
    ("/net", True), ("/net/cache/v2", True),  # the mount point itself, and below it
    ("/netcache", False), ("/net-other/x", False),  # a name that merely begins the same
    ("/net/local/x", False),  # a local mount inside the network one: the deepest decides
    ("/net/local/deeper/9/cache", True),  # 9p (a virtual machine's shared folder)
    ("/mnt/ssh fs/cache", True),  # sshfs, its blank written \040 in the table
    ("/mnt/sshfs/cache", False), ("/mnt/ssh/cache", False),
    ("/over/cache", False),  # mounted over: the later mount of a point is the one seen
])
def test_the_mount_table_decides_which_folders_cross_machines(monkeypatch, folder, crosses):
    assert _crosses_with(monkeypatch, _TABLE, folder) is crosses


@pytest.mark.parametrize("fstype", ["nfs", "nfs4", "cifs", "smb3", "lustre", "9p", "ceph",
                                    "glusterfs", "fuse.sshfs", "gpfs", "beegfs"])
def test_each_network_filesystem_crosses_machines(monkeypatch, fstype):
    table = f"/dev/sda1 / ext4 rw 0 0\nsrv:/e /shared {fstype} rw 0 0\n"
    assert _crosses_with(monkeypatch, table, "/shared/cache") is True
    assert _crosses_with(monkeypatch, table, "/elsewhere") is False


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "tmpfs", "overlay", "fuse", "fuse.other"])
def test_local_filesystems_do_not(monkeypatch, fstype):
    assert _crosses_with(monkeypatch, f"none / nfs rw 0 0\nx /c {fstype} rw 0 0\n", "/c/d") is False


def test_a_link_into_a_network_mount_crosses_machines(monkeypatch, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    table = f"/dev/sda1 / ext4 rw 0 0\nsrv:/e {tmp_path}/real nfs rw 0 0\n"
    assert _crosses_with(monkeypatch, table, str(tmp_path / "link" / "cache")) is True


def test_an_unreadable_mount_table_is_no_network(monkeypatch):
    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(claims, "open", refused, raising=False)
    assert claims.crosses_machines("/anything") is False
