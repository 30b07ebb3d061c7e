"""Cache faults and load: damaged entries, unusable file systems, killed writers, 16 processes.

The outcome allowed for a damaged entry is a miss (and a fresh compile), never an exception or a
wrong kernel; for an unusable folder, one warning and compiling without the disk cache; for a
writer killed mid-write, no torn entry visible; under load, every key compiled exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests._support import (ROOT, run_json, run_py, scenario_command,
                            scenario_json)

KERNEL = 'extern "C" __global__ void k{n}(int *x) {{ x[0] = {n}; }}\n'


def _entries(folder) -> list:
    return sorted(folder.glob("v*/*.bin"))


def _all_valid(folder) -> tuple[int, int]:
    """(entries, corrupt entries) in ``folder``."""
    from cudaload.compile import cache

    paths = _entries(folder)
    return len(paths), sum(cache.decode(p.read_bytes()) is None for p in paths)


@pytest.fixture
def real_entry(cache_dir):
    """(key, bytes) of a cache entry NVRTC really produced."""
    run_py("from cudaload import Program; Program(%r).compile(arch=90)" % KERNEL.format(n=1))
    (path,) = _entries(cache_dir)
    return path.name[:-4], path.read_bytes()


# --- damaged entries ----------------------------------------------------------------------------

def test_every_truncation_through_the_file_is_a_miss(cache_dir, real_entry):
    from cudaload.compile import cache

    key, data = real_entry
    path = cache_dir / f"v{cache.FORMAT}" / f"{key}.bin"
    for n in range(len(data)):  # every length, read through lookup() from the file
        path.write_bytes(data[:n])
        assert cache.default().lookup(key) is None, n
    path.write_bytes(data)
    assert cache.default().lookup(key).code == cache.decode(data).code


@pytest.mark.parametrize("mask", [0x01, 0x80, 0xFF])
def test_a_flipped_byte_at_every_position_is_a_miss(real_entry, mask):
    from cudaload.compile import cache

    _key, data = real_entry
    for i in range(len(data)):
        flipped = bytearray(data)
        flipped[i] ^= mask
        assert cache.decode(bytes(flipped)) is None, i


def _reseal(meta: dict, code: bytes, version: int | None = None, magic: bytes | None = None,
            key: str | None = None, bump: int = 0):
    """An entry with this metadata, stored under ``key``, and a correct integrity hash: damage
    the hash cannot see."""
    import hashlib

    from cudaload.compile import cache

    raw = json.dumps(meta).encode() if not isinstance(meta, bytes) else meta
    tag = bytes.fromhex(key) if key else bytes(32)
    return cache.HEADER.pack(magic or cache.MAGIC,
                             (cache.FORMAT if version is None else version) + bump, len(raw),
                             len(code), tag, hashlib.sha256(tag + raw + code).digest()) + raw + code


GOOD_META = {"kind": "cubin", "arch": "sm_90", "log": "", "lowered_names": {}}
WRONG_FORMAT = {
    "format version + 1": dict(bump=1),
    "format version 0": dict(version=0),
    "other magic": dict(magic=b"CUDALDXX"),
    "meta not JSON": dict(meta=b"\xff{"),
    "meta a list": dict(meta=[1, 2]),
    "meta null": dict(meta=None),
    "kind missing": dict(meta={k: v for k, v in GOOD_META.items() if k != "kind"}),
    "kind unknown": dict(meta={**GOOD_META, "kind": "exe"}),
    "kind a number": dict(meta={**GOOD_META, "kind": 5}),
    "arch a number": dict(meta={**GOOD_META, "arch": 90}),
    "log a list": dict(meta={**GOOD_META, "log": ["x"]}),
    "names a list": dict(meta={**GOOD_META, "lowered_names": [["a", "b"]]}),
    "names to numbers": dict(meta={**GOOD_META, "lowered_names": {"a": 1}}),
    "lengths past the end": dict(extra=b"tail"),
}


@pytest.mark.parametrize("case", list(WRONG_FORMAT))
def test_a_wrong_format_entry_is_a_miss(cache_dir, real_entry, case):
    from cudaload.compile import cache

    key, data = real_entry
    spec = dict(WRONG_FORMAT[case])
    code = cache.decode(data).code
    assert cache.decode(_reseal(GOOD_META, code, key=key), key) is not None  # resealing works
    entry = _reseal(spec.pop("meta", GOOD_META), code, key=key,
                    **{k: v for k, v in spec.items() if k != "extra"})
    entry += spec.get("extra", b"")
    (cache_dir / f"v{cache.FORMAT}" / f"{key}.bin").write_bytes(entry)
    assert cache.decode(entry) is None
    assert cache.default().lookup(key) is None
    # and a process that meets it compiles again and replaces it
    out = run_json("import json; from cudaload import Program\n"
                   f"print(json.dumps(Program({KERNEL.format(n=1)!r}).compile(arch=90).cached))")
    assert out is None
    assert cache.default().lookup(key) is not None


def test_an_entry_that_is_a_directory_is_a_miss(cache_dir, real_entry):
    from cudaload.compile import cache

    key, _data = real_entry
    path = cache_dir / f"v{cache.FORMAT}" / f"{key}.bin"
    path.unlink()
    path.mkdir()
    assert cache.default().lookup(key) is None
    out = run_json("import json, warnings; warnings.simplefilter('ignore')\n"
                   "from cudaload import Program\n"
                   f"print(json.dumps(len(Program({KERNEL.format(n=1)!r}).compile(arch=90).code)))")
    assert out > 0


# --- folders that cannot be used ----------------------------------------------------------------

def compiles(count: int, **env) -> dict:
    """Compile ``count`` numbered kernels in a fresh process (cache_faults.compile_numbered)."""
    return scenario_json("cache_faults", "compile_numbered", KERNEL, count, env=env)


@pytest.fixture
def mount_tmpfs(tmp_path):
    """Mount a tmpfs of the given size and options; unmounted after the test.  Its root is
    private (a tmpfs root is world-writable by default, and no cache folder every user may write
    is used)."""
    mounted = []

    def mount(size: str, *opts: str):
        where = tmp_path / f"mnt{len(mounted)}"
        where.mkdir()
        opts = (f"size={size}", "mode=700") + opts
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(opts),
                               "tmpfs", str(where)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode}); "
                        "run as root, or in a container allowed to mount")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_missing_folder_is_created(cache_dir):
    deep = cache_dir / "a" / "b" / "c"
    out = compiles(2, CUDALOAD_CACHE_DIR=str(deep))
    assert out["warnings"] == [] and all(out["sizes"])
    assert _all_valid(deep) == (2, 0)


def test_folder_path_through_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = compiles(3, CUDALOAD_CACHE_DIR=str(blocker / "cache"))
    assert all(out["sizes"]) and len(out["warnings"]) == 1
    assert "CUDALOAD_CACHE_DIR" in out["warnings"][0]


def test_really_read_only_file_system(mount_tmpfs):
    where = mount_tmpfs("64k", "ro")
    out = compiles(3, CUDALOAD_CACHE_DIR=str(where / "cache"))
    assert all(out["sizes"]) and out["cached"] == [None] * 3
    assert len(out["warnings"]) == 1 and "Read-only file system" in out["warnings"][0]


def test_read_only_file_system_with_entries_still_serves_them(mount_tmpfs, tmp_path):
    where = mount_tmpfs("1m")
    compiles(3, CUDALOAD_CACHE_DIR=str(where))
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
    out = compiles(3, CUDALOAD_CACHE_DIR=str(where))
    assert out["cached"] == ["disk"] * 3 and out["warnings"] == []


def test_full_file_system(mount_tmpfs):
    where = mount_tmpfs("64k")
    out = compiles(30, CUDALOAD_CACHE_DIR=str(where))
    assert all(out["sizes"]) and len(out["sizes"]) == 30  # every compile still gave code
    assert len(out["warnings"]) == 1 and "No space left" in out["warnings"][0]
    written, corrupt = _all_valid(where)
    assert 0 < written < 30 and corrupt == 0
    assert not list(where.glob("v*/.tmp-*"))  # a failed write leaves nothing behind
    # a later process reads what fits, and compiles the rest without error
    again = compiles(30, CUDALOAD_CACHE_DIR=str(where))
    assert again["cached"].count("disk") == written and all(again["sizes"])


# --- a writer killed in the middle of a write -----------------------------------------------------

def test_writer_killed_mid_write_leaves_no_torn_entry(cache_dir):
    from cudaload.compile import cache

    env = {**os.environ, "PYTHONPATH": ROOT}
    kills = 0
    for delay in [0.05 * (1 + i % 10) for i in range(20)]:
        proc = subprocess.Popen(scenario_command("cache_faults", "writer"), env=env,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "ready\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        total, corrupt = _all_valid(cache_dir)
        assert corrupt == 0, f"a torn entry is visible after kill {kills}"
        for i in range(40):
            obj = cache.default().lookup("%064x" % i)
            assert obj is None or len(obj.code) % (1 << 20) == 0
    assert total > 0  # the writers did write between kills
    # the leftovers of killed writers are hidden temporary files, removed by prune once stale
    assert cache.configured().prune()["corrupt"] == 0


# A writer stopped after half of an entry's bytes reached its temporary file: where a kill at a
# random moment lands depends on the machine, so this one is placed inside the write.
def test_writer_killed_inside_a_write_leaves_the_old_entry(cache_dir):
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    proc = subprocess.Popen(scenario_command("cache_faults", "half_writer"),
                            env={**os.environ, "PYTHONPATH": ROOT}, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline() == "inside\n"
    finally:
        proc.kill()
        proc.wait()
    (tmp,) = cache_dir.glob("v*/.tmp-*")  # the torn write, hidden from readers
    whole = len(cache.encode(ObjectCode(b"new" * 1000, "cubin", "sm_90")))
    assert 0 < tmp.stat().st_size < whole
    assert cache.default().lookup("%064x" % 0).code == b"old" * 1000
    assert cache.configured().prune()["tmp"] == 0  # not stale yet: it may be a live writer's
    old = time.time() - cache.STALE_TMP_S - 60
    os.utime(tmp, (old, old))
    assert cache.configured().prune()["tmp"] == 1 and not list(cache_dir.glob("v*/.tmp-*"))
    assert cache.default().lookup("%064x" % 0).code == b"old" * 1000


# --- load: 16 processes x 50 kernels, half of them shared -----------------------------------------

def test_16_processes_50_kernels_half_shared(cache_dir, tmp_path, record_property):
    log = tmp_path / "compiles.log"
    env = {**os.environ, "PYTHONPATH": ROOT, "TESTS_COMPILE_LOG": str(log)}
    start = time.time() + 3.0  # every process has NVRTC loaded before the first compile
    procs = [subprocess.Popen(scenario_command("cache_faults", "load_worker", w, start), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(16)]
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=170)
        assert proc.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    elapsed = max(o["seconds"] for o in outs)
    keys = [line.split()[1] for line in log.read_text().splitlines()]
    entries, corrupt = _all_valid(cache_dir)
    report = {"processes": 16, "kernels_each": 50, "distinct_keys": 25 + 16 * 25,
              "compilations": len(keys), "entries": entries, "corrupt": corrupt,
              "seconds": round(elapsed, 2)}
    record_property("load", report)
    print("cache load test:", json.dumps(report))
    assert corrupt == 0
    assert entries == 425 and len(keys) == 425 and len(set(keys)) == 425  # each key once
    assert all(all(o["sizes"]) for o in outs)
    # the shared kernels: one process compiled each, all others read it from disk
    for i in range(25):
        assert sorted(str(o["cached"][i]) for o in outs).count("None") <= 1
    assert not list(cache_dir.glob("v*/.tmp-*"))
