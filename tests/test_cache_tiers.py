"""Read-only cache tiers (``CUDALOAD_CACHE_READ_DIRS``): looked in after the writable cache
folder, their entries judged as its own are, never written, and shown by ``cudaload cache info``.
A tier filled by ``cudaload precompile`` serves a fresh process with no compilation, also through
an sshfs mount ("another machine", tests/_sshfs.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests import _sshfs
from tests._support import ROOT, child_env, scenario_json

KERNEL = 'extern "C" __global__ void k(int *x) {{ x[0] = {n}; }}\n'


def _sources(folder, count: int = 3) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        path = folder / f"k{n}.cu"
        path.write_text(KERNEL.format(n=n))
        paths.append(str(path))
    return paths


def _precompile(tier, sources, log) -> None:
    """Fill ``tier`` as a fleet would: ``cudaload precompile`` with the tier as its cache."""
    main = ("import sys, tests.scenarios.compile_log; from cudaload.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", main, "precompile", *sources, "--arch", "sm_90"],
                          env=child_env({"CUDALOAD_CACHE_DIR": str(tier),
                                         "TESTS_COMPILE_LOG": str(log)}),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(log.read_text().splitlines()) == len(sources)


def _compile(sources, local, log, tiers=None) -> dict:
    env = {"CUDALOAD_CACHE_DIR": str(local), "TESTS_COMPILE_LOG": str(log)}
    unset = ()
    if tiers is None:
        unset = ("CUDALOAD_CACHE_READ_DIRS",)
    else:
        env["CUDALOAD_CACHE_READ_DIRS"] = os.pathsep.join(map(str, tiers))
    return scenario_json("cache_tiers", "compile_files", *sources, env=env, unset=unset,
                         timeout=300)


def _compilations(log) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _snapshot(folder) -> dict:
    """Every file and folder under ``folder``: (mode, size, modification time in ns)."""
    found = {}
    for where, dirs, files in os.walk(folder):
        for name in dirs + files:
            st = os.lstat(os.path.join(where, name))
            found[os.path.relpath(os.path.join(where, name), folder)] = (
                st.st_mode, st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture
def filled(tmp_path):
    """(tier, sources): a tier ``cudaload precompile`` filled with three programs."""
    sources = _sources(tmp_path / "src")
    tier = tmp_path / "tier"
    _precompile(tier, sources, tmp_path / "fill.log")
    return tier, sources


def test_a_fresh_process_with_an_empty_cache_reads_the_tier_with_no_compilation(filled, tmp_path):
    tier, sources = filled
    before = _snapshot(tier)
    log = tmp_path / "compiles.log"
    out = _compile(sources, tmp_path / "local", log, [tmp_path / "missing", tier])
    assert out["cached"] == ["disk"] * 3 and out["warnings"] == []
    assert _compilations(log) == 0
    assert _snapshot(tier) == before  # not even a modification time touched
    # A hit there was copied into the writable folder: the next process needs no tier.
    again = _compile(sources, tmp_path / "local", log)
    assert again["cached"] == ["disk"] * 3 and _compilations(log) == 0
    assert again["sizes"] == out["sizes"]


def test_without_the_variable_the_tier_is_not_looked_in(filled, tmp_path):
    tier, sources = filled
    log = tmp_path / "compiles.log"
    out = _compile(sources, tmp_path / "local", log)
    assert out["cached"] == [None] * 3 and _compilations(log) == 3


def test_tampered_and_untrusted_entries_of_a_tier_are_misses_said_at_debug(filled, tmp_path):
    tier, sources = filled
    entries = sorted(tier.glob("v*/*.bin"))
    assert len(entries) == 3
    data = bytearray(entries[0].read_bytes())
    data[-1] ^= 0x01  # a flipped bit of the code: the integrity hash fails
    entries[0].write_bytes(bytes(data))
    os.chmod(entries[1], 0o660)  # its group may write it
    os.chown(entries[2], 4242, -1)  # another user's
    before = _snapshot(tier)
    log = tmp_path / "compiles.log"
    out = _compile(sources, tmp_path / "local", log, [tier])
    assert out["cached"] == [None] * 3 and _compilations(log) == 3
    assert out["warnings"] == []
    text = "\n".join(out["log"])
    assert "corrupt" in text and "its group may write it" in text and "uid 4242" in text
    assert _snapshot(tier) == before


@pytest.mark.parametrize("how", ["every user may write", "another user's"])
def test_a_tier_folder_others_may_write_is_not_used(filled, tmp_path, how):
    tier, sources = filled
    if how == "every user may write":
        os.chmod(tier, 0o777)
    else:
        os.chown(tier / "v2", 4242, -1)
    log = tmp_path / "compiles.log"
    out = _compile(sources, tmp_path / "local", log, [tier])
    assert out["cached"] == [None] * 3 and _compilations(log) == 3 and out["warnings"] == []
    assert any("read tier" in line and "not used" in line for line in out["log"])


def test_missing_odd_and_empty_tiers_are_misses_never_errors(tmp_path):
    sources = _sources(tmp_path / "src", 1)
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    fifo_tier = tmp_path / "fifo-tier"
    (fifo_tier / "v2").mkdir(parents=True)
    log = tmp_path / "compiles.log"
    first = _compile(sources, tmp_path / "first", log)
    (key,) = [p.name for p in (tmp_path / "first").glob("v2/*.bin")]
    os.mkfifo(fifo_tier / "v2" / key)  # opening it for reading would wait for a writer forever
    tiers = [tmp_path / "missing", a_file, "", fifo_tier, tmp_path / "empty"]
    (tmp_path / "empty").mkdir()
    out = _compile(sources, tmp_path / "local", log, tiers)
    assert out["cached"] == [None] and out["warnings"] == [] and out["sizes"] == first["sizes"]


@pytest.mark.parametrize("how", ["modes", "mount"])
def test_the_tier_is_never_written_even_read_only(filled, tmp_path, how):
    tier, sources = filled
    if how == "modes":  # root writes all the same: the snapshot below is the check
        for where, dirs, files in os.walk(tier):
            for name in files:
                os.chmod(os.path.join(where, name), 0o444)
            os.chmod(where, 0o555)
    else:  # a read-only mount: any write would fail with EROFS
        bind = subprocess.run(["mount", "--bind", str(tier), str(tier)], capture_output=True,
                              text=True)
        if bind.returncode:
            pytest.skip(f"cannot bind-mount here ({bind.stderr.strip()}); run as root")
        subprocess.run(["mount", "-o", "remount,ro,bind", str(tier)], check=True)
    try:
        _never_written(tier, sources, tmp_path)
    finally:
        if how == "mount":
            subprocess.run(["umount", "-l", str(tier)], capture_output=True)


def _never_written(tier, sources, tmp_path) -> None:
    before = _snapshot(tier)
    extra = _sources(tmp_path / "more", 5)[3:]  # two programs the tier does not hold
    log = tmp_path / "compiles.log"
    out = _compile(sources + extra, tmp_path / "local", log, [tier])
    assert out["cached"] == ["disk"] * 3 + [None] * 2 and out["warnings"] == []
    assert _compilations(log) == 2
    env = child_env({"CUDALOAD_CACHE_DIR": str(tmp_path / "local"),
                     "CUDALOAD_CACHE_READ_DIRS": str(tier)})
    for words in (["clear"], ["prune", "--max-bytes", "0"]):
        proc = subprocess.run([sys.executable, "-m", "cudaload", "cache", *words], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    assert _snapshot(tier) == before
    assert len(list(tier.glob("v2/*.bin"))) == 3


def test_cache_info_shows_each_tier(filled, tmp_path):
    tier, sources = filled
    env = child_env({"CUDALOAD_CACHE_DIR": str(tmp_path / "local"),
                     "CUDALOAD_CACHE_READ_DIRS": os.pathsep.join([str(tier),
                                                                  str(tmp_path / "gone")])})

    def info(*words):
        proc = subprocess.run([sys.executable, "-m", "cudaload", "cache", "info", *words],
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    facts = json.loads(info("--json"))
    local, shared, gone = facts["tiers"]
    assert local["directory"] == str(tmp_path / "local") and local["writable"]
    assert local["entries"] == 0
    size = sum(p.stat().st_size for p in tier.glob("v2/*.bin"))
    assert shared == {"directory": str(tier), "writable": False, "exists": True, "entries": 3,
                      "bytes": size, "problem": None}
    assert gone["writable"] is False and gone["exists"] is False and gone["entries"] == 0
    assert gone["problem"] == "it does not exist"
    text = info()
    assert f"read tier: {tier} (read-only): 3 entries, {size} bytes\n" in text
    assert f"read tier: {tmp_path / 'gone'} (read-only): 0 entries" in text


def test_a_tier_on_a_network_mount_is_read_by_a_process_of_another_machine(tmp_path):
    sources = _sources(tmp_path / "src")
    try:
        with _sshfs.two_mounts(tmp_path / "net") as (a, b, _backing):
            _precompile(os.path.join(a, "tier"), sources, tmp_path / "fill.log")
            log = tmp_path / "compiles.log"
            out = _compile(sources, tmp_path / "local", log, [os.path.join(b, "tier")])
    except _sshfs.Unavailable as exc:
        pytest.skip(str(exc))
    assert out["cached"] == ["disk"] * 3 and _compilations(log) == 0 and out["warnings"] == []


def test_a_tier_still_serves_where_the_writable_folder_cannot_be_made(filled, tmp_path):
    tier, sources = filled
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    log = tmp_path / "compiles.log"
    out = _compile(sources, blocker / "cache", log, [tier])
    assert out["cached"] == ["disk"] * 3 and _compilations(log) == 0
    assert len(out["warnings"]) == 1 and "CUDALOAD_CACHE_DIR" in out["warnings"][0]


# --- in this process: what a lookup costs, and the copy a tier hit leaves -----------------------

def _fake(n: int = 0):
    from cudaload.compile.objectcode import ObjectCode

    return ObjectCode(b"\x7fELF" + bytes([n]) * 60, "cubin", "sm_90")


def test_a_hit_in_the_writable_folder_never_looks_at_a_tier(cache_dir, tmp_path, monkeypatch):
    from cudaload.compile import cache
    from cudaload.compile.cache import tiers

    disk = cache.default()
    disk.store("a" * 64, _fake())
    monkeypatch.setenv("CUDALOAD_CACHE_READ_DIRS", str(tmp_path / "tier"))
    looked = []
    monkeypatch.setattr(tiers, "configured", lambda: looked.append(1) or ())
    assert disk.lookup("a" * 64).code == _fake().code and looked == []
    assert disk.lookup("b" * 64) is None and looked == [1]


def test_without_tiers_a_miss_costs_one_look_at_the_folder(cache_dir, monkeypatch):
    from cudaload.compile import cache

    disk = cache.default()
    disk.store("a" * 64, _fake())  # the folder made and judged
    monkeypatch.delenv("CUDALOAD_CACHE_READ_DIRS", raising=False)
    calls = []
    for name in ("stat", "lstat", "open", "access", "scandir", "listdir"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda *a, _real=real, _name=name, **k:
                            calls.append(_name) or _real(*a, **k))
    assert disk.lookup("b" * 64) is None
    assert calls == ["access"]


def test_a_tier_hit_is_copied_whole_into_the_writable_folder(cache_dir, tmp_path, monkeypatch):
    from cudaload.compile import cache

    tier = cache.DiskCache(tmp_path / "tier")
    tier.store("c" * 64, _fake(7))
    monkeypatch.setenv("CUDALOAD_CACHE_READ_DIRS", str(tmp_path / "tier"))
    disk = cache.default()
    got = disk.lookup("c" * 64)
    assert got.code == _fake(7).code and got.cached == "disk"
    disk.writer.wait()
    assert open(disk.path("c" * 64), "rb").read() == open(tier.path("c" * 64), "rb").read()


def test_a_tier_that_cannot_be_looked_at_is_judged_once_it_can(tmp_path, monkeypatch):
    from cudaload.compile.cache import tiers

    root = tmp_path / "tier"
    (root / "v2").mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o777)  # every user may write it: never to be used
    tier = tiers.ReadTier(str(root))
    real_stat = os.stat

    def stale(path, *args, **kw):
        if os.fspath(path) == str(root):
            raise OSError(116, os.strerror(116), str(root))  # ESTALE
        return real_stat(path, *args, **kw)

    monkeypatch.setattr(os, "stat", stale)
    assert tier.entry_test() is None and tier.refused is None  # not judged: looked at again later
    monkeypatch.undo()
    assert tier.entry_test() is None and "every user may write it" in tier.refused
