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
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=60, check=True)
    _claim_file(tmp_path, {"host": claims._host(), "pid": int(gone.stdout),
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
