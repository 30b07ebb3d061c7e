"""The disk cache on a network filesystem: one folder mounted twice through sshfs (two
"machines", tests/_sshfs.py), the same programs compiled through both at once.  Each key is
compiled about once in all (claims.py), every entry is whole and of its own key, and a third
process reads every one from disk."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests import _sshfs
from tests._support import ROOT, scenario_command

KEYS = 12


@pytest.fixture
def mounts(tmp_path):
    try:
        with _sshfs.two_mounts(tmp_path / "net") as found:
            yield found
    except _sshfs.Unavailable as exc:
        pytest.skip(str(exc))


def _compile_through(mounts, log, count: int = KEYS, timeout: float = 300):
    """Compile the same ``count`` programs in one process per mount, at once; their outputs."""
    start = time.time() + 2.0
    procs = []
    for mount in mounts:
        env = {**os.environ, "PYTHONPATH": ROOT, "CUDALOAD_CACHE_DIR": os.path.join(mount, "c"),
               "TESTS_COMPILE_LOG": str(log)}
        procs.append(subprocess.Popen(
            scenario_command("cache_processes", "compile_variants", start, count, 0), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=30)
            raise
        assert proc.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def test_two_machines_compile_each_key_about_once_and_share_every_entry(mounts, tmp_path):
    a, b, backing = mounts
    log = tmp_path / "compiles.log"
    outs = _compile_through((a, b), log)
    keys = [line.split()[1] for line in log.read_text().splitlines()]
    assert len(set(keys)) == KEYS
    assert len(keys) <= KEYS + 1, f"{len(keys)} compilations for {KEYS} keys"
    assert [size for _, size in outs[0]] == [size for _, size in outs[1]]
    # A third process, on the backing folder itself, reads every entry, each whole and its own.
    third = _compile_through((backing,), tmp_path / "third.log")[0]
    assert [where for where, _ in third] == ["disk"] * KEYS
    assert not (tmp_path / "third.log").exists()


def test_the_filesystem_crosses_machines_where_locks_do_not(mounts):
    from cudaload.compile.cache import claims

    a, b, backing = mounts
    assert claims.crosses_machines(a) and claims.crosses_machines(b)
    assert not claims.crosses_machines(backing)
    taken = claims.take(a, "ab" * 32)
    assert taken is not None and claims.take(b, "ab" * 32) is None  # O_EXCL across mounts
    taken.drop()
