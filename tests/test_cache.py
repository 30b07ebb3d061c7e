"""The kernel cache: entry format, integrity, key coverage, disk hits without NVRTC, many processes.

Anything that compiles (and so dlopens NVRTC) runs in a subprocess; the entry format, sweeping and
eviction are plain file work tested here directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests._fakelibs import pretend_driver
from tests._support import (ROOT, run_json, run_py, run_scenario, scenario_command,
                            scenario_json)


def _entries(folder) -> list[str]:
    return sorted(str(p) for p in folder.glob("v*/*.bin"))


def _fake(code: bytes = b"\x7fELF" + b"x" * 60):
    from cudaload.compile.objectcode import ObjectCode

    return ObjectCode(code, "cubin", "sm_90", log="warning: w", lowered_names={"f<int>": "_Z1fIiEvv"})


# --- the entry format -------------------------------------------------------------------------

def test_roundtrip_keeps_every_field():
    from cudaload.compile import cache

    obj = cache.decode(cache.encode(_fake()))
    assert (obj.code, obj.kind, obj.arch, obj.log, obj.lowered_names, obj.cached) == (
        _fake().code, "cubin", "sm_90", "warning: w", {"f<int>": "_Z1fIiEvv"}, "disk")


def test_every_truncation_of_a_real_entry_is_a_miss_never_an_error(cache_dir):
    from cudaload.compile import cache

    scenario_json("cache_compiles", "one")
    (path,) = _entries(cache_dir)
    data = open(path, "rb").read()
    assert cache.decode(data) is not None and len(data) > 1000
    key = os.path.basename(path)[:-4]
    for n in range(len(data)):
        assert cache.decode(data[:n]) is None, n
        if n < cache.HEADER.size + 200 or n % 7 == 0:  # and through the file, for a share of them
            with open(path, "wb") as f:
                f.write(data[:n])
            assert cache.default().lookup(key) is None, n
    for i in range(0, len(data), 97):  # a flipped bit anywhere is caught by the integrity hash
        flipped = bytearray(data)
        flipped[i] ^= 0x40
        assert cache.decode(bytes(flipped)) is None, i


def test_truncated_entry_is_recompiled_and_rewritten(cache_dir):
    first = scenario_json("cache_compiles", "one")
    (path,) = _entries(cache_dir)
    data = open(path, "rb").read()
    for n in (0, 1, 30, 60, len(data) // 2, len(data) - 1):
        with open(path, "wb") as f:
            f.write(data[:n])
        again = scenario_json("cache_compiles", "one")
        assert again["cached"] is None and again["size"] == first["size"]
        assert open(path, "rb").read() == data  # rewritten whole
    assert scenario_json("cache_compiles", "one")["cached"] == "disk"


# --- what the key covers ------------------------------------------------------------------------

def test_changing_any_input_of_the_key_is_a_miss(cache_dir, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "user.cuh").write_text("#define U 1\n")
    out = scenario_json("cache_compiles", "key_changes", inc)
    assert out.pop("first") is None
    assert out.pop("again") == "disk"
    assert out == {name: None for name in out}, out  # every change compiled anew
    assert set(out) >= {"source", "header", "options", "names", "arch", "kind", "included_file",
                        "nvrtc_version", "nvrtc_build", "nvrtc_headers", "format"}


def test_the_driver_keys_ptx_but_not_cubin(cache_dir, tmp_path):
    def compiled_with(version):
        driver = pretend_driver(tmp_path, version)
        return scenario_json("cache_compiles", "ptx_and_cubin", env={"CUDALOAD_LIBCUDA": driver})

    assert compiled_with(13000) == [None, None]
    assert compiled_with(13000) == ["disk", "disk"]
    assert compiled_with(12020) == [None, "disk"]  # the PTX a driver can load depends on it


# --- a disk hit pays for neither NVRTC nor cuda.pathfinder ---------------------------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_disk_hit_loads_neither_nvrtc_nor_pathfinder(cache_dir):
    first = scenario_json("cache_compiles", "disk_hit")
    # (cuda.pathfinder is imported by a first compile only where no wheel holds NVRTC: _sites.py)
    assert first["cached"] is None and first["nvrtc_mapped"]
    hit = scenario_json("cache_compiles", "disk_hit")
    assert hit["cached"] == "disk"
    assert not hit["nvrtc_mapped"], "a disk hit mapped libnvrtc"
    assert not hit["pathfinder"], "a disk hit imported cuda.pathfinder"


def test_nvrtc_override_is_the_file_checked(cache_dir):
    real = run_json("import json; from cudaload.bindings import _loader; "
                    "print(json.dumps(_loader.nvrtc().path))")
    scenario_json("cache_compiles", "disk_hit")
    override = {"CUDALOAD_LIBNVRTC": real}
    hit = scenario_json("cache_compiles", "disk_hit", env=override)  # first use: loads it
    assert hit["cached"] == "disk" and hit["nvrtc_mapped"]
    hit = scenario_json("cache_compiles", "disk_hit", env=override)  # now remembered for it too
    assert hit["cached"] == "disk" and not hit["nvrtc_mapped"]
    proc = run_scenario("cache_compiles", "disk_hit",
                        env={"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}, check=False)
    assert proc.returncode != 0 and "LibraryNotFoundError" in proc.stderr


def test_changed_nvrtc_file_is_not_trusted(cache_dir):
    scenario_json("cache_compiles", "disk_hit")
    record_path = cache_dir / "toolchain.json"
    record = json.loads(record_path.read_text())
    (searched,) = record["nvrtc"]  # one entry: what a search from this environment found
    assert searched.startswith("search from " + sys.prefix + " ")
    record["nvrtc"][searched]["stat"][1] += 1  # as if the file had been replaced
    record["nvrtc"][searched]["version"] = [99, 0]
    record_path.write_text(json.dumps(record))
    hit = scenario_json("cache_compiles", "disk_hit")
    assert hit["cached"] == "disk" and hit["nvrtc_mapped"]  # revalidated by loading it
    assert json.loads(record_path.read_text())["nvrtc"][searched]["version"] != [99, 0]



def test_header_folders_are_remembered_per_environment(cache_dir, tmp_path):
    from cudaload.compile import toolchain

    scenario_json("cache_compiles", "disk_hit")
    record_path = cache_dir / "toolchain.json"
    record = json.loads(record_path.read_text())
    (searched,) = record["nvrtc"]
    fake = tmp_path / "other-env-cudart"
    fake.mkdir()
    (fake / "cuda_runtime_api.h").write_text("")
    record["nvrtc"][searched]["headers"] = [
        ["cudart", str(fake), toolchain._header_identity("cudart", str(fake))], ["cccl", None, None]]
    record_path.write_text(json.dumps(record))
    probe = ("import json; from cudaload.compile import toolchain; "
             "print(json.dumps({n: p for n, p, _i in toolchain.current().headers}))")
    assert run_json(probe)["cudart"] == str(fake)  # what this environment remembered
    other = run_json(probe, env={"CUDALOAD_LIBNVRTC": record["nvrtc"][searched]["path"]})
    assert other["cudart"] != str(fake)  # another environment searches for its own


def test_environments_remembering_at_once_keep_every_entry(cache_dir):
    run_py("from cudaload.compile import toolchain; toolchain.current()")  # NVRTC found once, here
    env = {**os.environ, "PYTHONPATH": ROOT}
    start = time.time() + 3.0
    procs = [subprocess.Popen(scenario_command("cache_processes", "remember", i, start), env=env)
             for i in range(8)]
    assert [p.wait(60) for p in procs] == [0] * 8
    record = json.loads((cache_dir / "toolchain.json").read_text())
    assert {f"environment {i}" for i in range(8)} <= set(record["nvrtc"])


# --- many processes ---------------------------------------------------------------------------

def _run_workers(args_per_worker, env, timeout=120):
    full_env = {**os.environ, "PYTHONPATH": ROOT, **env}
    start = time.time() + 2.0
    procs = [subprocess.Popen(scenario_command("cache_processes", "compile_variants", start, *a),
                              env=full_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a in args_per_worker]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def test_eight_processes_one_new_key_compile_once(cache_dir, tmp_path):
    log = tmp_path / "compiles.log"
    outs = _run_workers([(1, 0)] * 8, {"TESTS_COMPILE_LOG": str(log)})
    assert len(log.read_text().splitlines()) == 1, log.read_text()
    assert [o[0][0] for o in outs].count(None) == 1  # one compiled, seven read it
    assert {o[0][0] for o in outs} <= {None, "disk"}
    assert len({o[0][1] for o in outs}) == 1


def test_four_processes_25_keys_each_all_entries_valid(cache_dir, tmp_path):
    from cudaload.compile import cache

    log = tmp_path / "compiles.log"
    _run_workers([(25, 25 * w) for w in range(4)], {"TESTS_COMPILE_LOG": str(log)})
    paths = _entries(cache_dir)
    assert len(paths) == 100
    assert all(cache.decode(open(p, "rb").read()) is not None for p in paths)
    assert len(log.read_text().splitlines()) == 100
    assert not list(cache_dir.glob("v*/.tmp-*"))


# --- folders that cannot be used ---------------------------------------------------------------

@pytest.mark.parametrize("case", ["uncreatable", "read-only", "full"])
def test_unusable_folder_warns_once_and_goes_on(cache_dir, tmp_path, case):
    refused = ()
    env = {}
    if case == "uncreatable":
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        env["CUDALOAD_CACHE_DIR"] = str(blocker / "cache")
    else:
        # read-only: no lock can be taken; full: the lock is taken, writing the entry fails
        refused = (case,)
    out = scenario_json("cache_compiles", "three", *refused, env=env)
    assert out["cached"] == [None, None, None, "memory"]
    assert len(out["warnings"]) == 1, out["warnings"]
    assert "CUDALOAD_CACHE_DIR" in out["warnings"][0]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into read-only folders")
def test_really_read_only_folder(cache_dir):
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o555)
    try:
        out = scenario_json("cache_compiles", "three")
    finally:
        os.chmod(cache_dir, 0o755)
    assert out["cached"][:3] == [None, None, None] and len(out["warnings"]) == 1


def test_cache_off_keeps_memory_only(cache_dir):
    out = scenario_json("cache_compiles", "three", env={"CUDALOAD_CACHE": "0"})
    assert out == {"cached": [None, None, None, "memory"], "warnings": []}
    assert not cache_dir.exists()


# --- housekeeping -------------------------------------------------------------------------------

def _key(i: int) -> str:
    return f"{i:02x}" + "ab" * 31


def _ready_folder() -> str:
    """The entries folder of this test's cache, made."""
    from cudaload.compile import cache

    disk = cache.default()
    disk.ready()
    return disk.folder


def test_stale_temporary_files_are_swept(tmp_path):
    from cudaload.compile import cache

    cache.DiskCache(tmp_path).store(_key(1), _fake())
    folder = os.path.dirname(_entries(tmp_path)[0])
    old, new = os.path.join(folder, ".tmp-old"), os.path.join(folder, ".tmp-new")
    for path in (old, new):
        open(path, "wb").close()
    os.utime(old, (time.time() - 2 * cache.STALE_TMP_S,) * 2)
    swept = os.path.join(folder, ".swept")
    os.utime(swept, (time.time() - 3601,) * 2)  # last swept over an hour ago
    disk = cache.DiskCache(tmp_path)  # as in a new process
    disk.store(_key(2), _fake())  # the first write of a process sweeps
    assert not os.path.exists(old) and os.path.exists(new)
    os.utime(new, (time.time() - 2 * cache.STALE_TMP_S,) * 2)
    assert disk.prune()["tmp"] == 1 and not os.path.exists(new)


def test_a_folder_swept_within_the_hour_is_not_scanned_again(tmp_path, monkeypatch):
    # Every process's first miss scanned the whole entries folder for stale temporary files:
    # 6 ms at 10,000 entries.  Once an hour is enough for a crashed writer's leftovers.
    from cudaload.compile import cache

    cache.DiskCache(tmp_path).store(_key(1), _fake())  # never swept: swept, and marked
    folder = os.path.dirname(_entries(tmp_path)[0])
    marked = os.stat(os.path.join(folder, ".swept")).st_mtime
    assert abs(marked - time.time()) < 60
    old = os.path.join(folder, ".tmp-old")
    open(old, "wb").close()
    os.utime(old, (time.time() - 2 * cache.STALE_TMP_S,) * 2)
    scanned = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": scanned.append(path) or real_scandir(path))
    cache.DiskCache(tmp_path).store(_key(2), _fake())  # another process's first miss
    assert scanned == [] and os.path.exists(old)
    os.utime(os.path.join(folder, ".swept"), (time.time() + 3 * 3600,) * 2)  # a clock gone back
    cache.DiskCache(tmp_path).store(_key(3), _fake())
    assert scanned == [folder] and not os.path.exists(old)
    assert cache.DiskCache(tmp_path).clear() == 3  # the marker is cudaload's own: cleared too
    assert not os.path.exists(os.path.join(folder, ".swept"))


def test_size_bound_evicts_least_recently_used_but_never_fresh_entries(cache_dir, monkeypatch):
    from cudaload.compile import cache

    entry_size = len(cache.encode(_fake()))
    for i in range(5):
        cache.default().store(_key(i), _fake())
    now = time.time()
    paths = {i: cache.default().path(_key(i)) for i in range(5)}
    for i, path in paths.items():
        os.utime(path, (now - 1000 + i, now - 1000 + i))  # entry 0 is the least recently used
    assert cache.default().lookup(_key(0)) is not None  # a hit makes it the most recently used
    os.utime(paths[4], (now, now))  # as if another process had just written it
    monkeypatch.setenv("CUDALOAD_CACHE_MAX_BYTES", str(3 * entry_size))
    cache.default().store(_key(5), _fake())
    left = {i for i in range(6) if os.path.exists(cache.default().path(_key(i)))}
    assert left == {0, 4, 5}


def test_prune_removes_corrupt_entries_and_idle_locks(cache_dir):
    from cudaload._base import _file_lock
    from cudaload.compile import cache
    from cudaload.compile.cache import locks

    cache.default().store(_key(1), _fake())
    cache.default().store(_key(2), _fake())
    with open(cache.default().path(_key(2)), "r+b") as f:
        f.seek(70)
        f.write(b"\0\0\0")
    with cache.default().lock(_key(3)):
        pass
    idle = cache.default().path(_key(3), ".lock")  # a per-key lock file, as on Windows
    with _file_lock.hold(idle):
        pass
    removed = cache.configured().prune()
    assert removed["corrupt"] == 1 and removed["locks"] == 1
    assert cache.default().lookup(_key(1)) is not None
    assert not os.path.exists(idle)
    assert os.path.exists(os.path.join(cache.default().folder, locks.KEYS_FILE)) == (os.name == "posix")


def test_lock_excludes_a_thread_and_survives_lock_file_removal(cache_dir):
    import threading

    from cudaload._base import _file_lock
    from cudaload.compile import cache

    cache.default().store(_key(7), _fake())
    path = cache.default().path(_key(7), ".lock")
    order = []
    with _file_lock.hold(path):
        def second():
            with _file_lock.hold(path):
                order.append("second")

        worker = threading.Thread(target=second)
        worker.start()
        time.sleep(0.2)
        order.append("first")
        assert not _file_lock.remove_if_free(path)  # held: not removed
    worker.join(5)
    assert order == ["first", "second"]


def test_key_lock_excludes_a_thread_and_is_released_by_another(cache_dir):
    import threading

    from cudaload.compile.cache import locks

    folder = _ready_folder()
    order = []
    release = locks.acquire_key(folder, _key(8))

    def second():
        locks.acquire_key(folder, _key(8))()
        order.append("second")

    waiter = threading.Thread(target=second)
    waiter.start()
    time.sleep(0.2)
    order.append("first")
    threading.Thread(target=release).start()
    waiter.join(5)
    assert order == ["first", "second"]
    locks.acquire_key(folder, _key(9))()  # another key was never blocked


@pytest.mark.skipif(os.name != "posix", reason="byte-range key locks are POSIX")
def test_key_lock_excludes_another_process_and_survives_clear(cache_dir):
    import shutil

    from cudaload.compile.cache import locks

    folder = _ready_folder()
    locks.acquire_key(folder, _key(4))()  # this process has the lock file open
    shutil.rmtree(folder)  # cudaload cache clear, from elsewhere
    env = {**os.environ, "PYTHONPATH": ROOT}
    holder = subprocess.Popen(scenario_command("cache_processes", "hold_key", folder, _key(4), "1.0"),
                              env=env,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    release = locks.acquire_key(folder, _key(4))  # reopens the new file, then waits on it
    waited = time.monotonic() - start
    release()
    holder.wait(10)
    assert waited > 0.5, waited


def test_a_miss_returns_before_its_entry_is_written_and_the_key_stays_locked_until_it_is(
        cache_dir):
    out = scenario_json("cache_compiles", "handed_write")
    assert out == {"first": None, "written_at_return": [], "second": "disk",
                   "second_quick": True, "same_code": True, "lock_waited": True,
                   "written_when_locked": [True]}, out


@pytest.mark.parametrize("how", ["exit", "fork", "multiprocessing"])
def test_entry_published_just_before_exit_is_written(cache_dir, how):
    from cudaload.compile import cache

    if how != "exit" and not hasattr(os, "fork"):
        pytest.skip("no fork")
    run_scenario("cache_processes", "publish_and_exit", _key(6), how)
    assert cache.default().lookup(_key(6)) is not None
    assert not list(cache_dir.glob("v*/.tmp-*"))


def test_cli_cache_info_clear_prune(cache_dir):
    from cudaload.compile import cache

    for i in range(3):
        cache.default().store(_key(i), _fake())
    info = json.loads(run_py("from cudaload.cli import main; main(['cache', 'info', '--json'])").stdout)
    assert info["entries"] == 3 and info["bytes"] == 3 * len(cache.encode(_fake()))
    assert info["directory"] == str(cache_dir)
    text = run_py("from cudaload.cli import main; main(['cache', 'prune', '--max-bytes', '0'])").stdout
    assert "pruned" in text
    text = run_py("from cudaload.cli import main; main(['cache', 'clear'])").stdout
    assert "removed 3 entries" in text
    assert _entries(cache_dir) == []



# --- keys taken in opposite orders, files removed under a compile, descriptors, no fork ---------

@pytest.mark.skipif(os.name != "posix", reason="byte-range key locks are POSIX")
def test_processes_taking_keys_in_opposite_orders_keep_the_disk_cache(cache_dir, tmp_path):
    """Linux reports the second wait as a deadlock (EDEADLK): it sees each process holding a key
    (one thread's) and waiting for the other's (another thread's).  Neither holder waits for
    anything, so it is none, and must not cost the disk cache."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    procs = [subprocess.Popen(scenario_command("cache_processes", "opposite_order", me, 1 - int(me)),
                              cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for me in "01"]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [out.split() for out, _err in outs] == [["True", "True", "[]"]] * 2, outs


def test_an_entry_published_by_a_later_exit_hook_is_written(cache_dir):
    from cudaload.compile import cache

    run_scenario("cache_processes", "publish_at_late_exit", _key(7), _key(8))
    assert cache.default().lookup(_key(7)) is not None
    assert cache.default().lookup(_key(8)) is not None, "the late exit hook's entry was lost"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_does_not_serve_its_parents_pending_entries(cache_dir):
    # The child's copy of what the parent still had to write is not the child's to serve: once
    # the child has cleared the cache, the key is a miss there
    out = run_scenario("cache_processes", "forked_pending", _key(9))
    assert out.stdout.split() == ["none"], (out.stdout, out.stderr)


@pytest.mark.parametrize("how", ["clear", "sweep"])
def test_entry_written_when_the_cache_is_cleared_or_pruned_during_the_compile(cache_dir, how):
    out = run_scenario("cache_processes", "removed_under_compile", how)
    assert out.stdout.split() == ["True", "True", "[]"], out.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_clear_leaves_no_descriptor_open(cache_dir):
    out = scenario_json("cache_processes", "clear_descriptors")
    assert out[1] == out[0] and out[2], out


def test_cache_imports_where_os_has_no_fork_hooks(cache_dir):
    out = run_scenario("cache_processes", "without_fork_hooks")
    assert out.stdout.split() == ["imported", "True"], out.stderr


# --- every file NVRTC reads is in the key -------------------------------------------------------

_WHERE = {"-I option": "inc/v1.h", "--include-path": "inc/v2.h", "--pre-include": "inc/v3.h",
          "#include MACRO": "inc/v4.h", "beside a bare name": "v5.h",
          "beside the named file": "inc/v6.h", "--pre-include, relative": "v7.h"}


@pytest.mark.parametrize("case", list(_WHERE))
def test_an_edited_file_nvrtc_includes_is_compiled_again(cache_dir, tmp_path, case):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "v7.h").write_text("#define VAL 999\n")  # not the one NVRTC reads
    header = tmp_path / _WHERE[case]
    run = lambda: scenario_json("cache_compiles", "included", case, tmp_path)
    header.write_text("#define VAL 111\n")
    first = run()
    header.write_text("#define VAL 222\n")
    second = run()
    assert first["value"] == 111 and second["value"] == 222, (first, second)
    assert second["cached"] is None and second["again"] == "memory"
    if case == "#include MACRO":  # only NVRTC's preprocessor knows the file: never on disk
        assert run()["cached"] is None
    else:
        assert run()["cached"] == "disk"  # unchanged, it is a disk hit again


def test_only_a_program_naming_its_include_by_a_macro_leaves_the_disk_cache():
    from cudaload.compile.includes import search as includes

    assert includes.scan('#define H "x.h"\n#include H\n')[1]
    for text in ("#include_next <x.h>\n", "// #include H\n", "/* #include H */\n",
                 '#include <a.h>\n#  include "b.h"\n'):
        assert not includes.scan(text)[1], text


def test_a_file_rewritten_with_its_size_and_time_kept_is_another_file(tmp_path):
    from cudaload.compile import toolchain

    lib = tmp_path / "libnvrtc.so"
    lib.write_bytes(b"a" * 64)
    before = toolchain._stat_id(str(lib))
    st = lib.stat()
    time.sleep(0.01)
    with open(lib, "r+b") as f:  # in place, as cp -p onto the file or a package cache would
        f.write(b"b")
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = toolchain._stat_id(str(lib))
    assert (after[0], after[1]) == (before[0], before[1]) and after != before


def test_nvrtc_is_searched_again_once_a_wheel_may_have_been_installed(cache_dir):
    probe = """
        import json
        from cudaload.bindings import _loader
        from cudaload.compile import toolchain
        {patch}
        toolchain.current(), toolchain.live()
        print(json.dumps(_loader.loaded("nvrtc").found_via))
    """
    run_json(probe.format(patch=""))  # found by a search, and remembered
    assert "remembered" in run_json(probe.format(patch=""))
    changed = "toolchain._search_stamp = lambda: ['a wheel folder changed']"
    assert "remembered" not in run_json(probe.format(patch=changed))


def test_processes_with_other_cuda_variables_keep_their_own_remembered_nvrtc(cache_dir):
    probe = """
        import json
        from cudaload.bindings import _loader
        from cudaload.compile import toolchain
        toolchain.current(), toolchain.live()
        print(json.dumps(_loader.loaded("nvrtc").found_via))
    """
    unset = ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX")
    for env in ({}, {"CUDA_HOME": "/opt/a-toolkit"}):
        run_json(probe, env=env, unset=unset)  # each found by a search, and remembered
    # taking turns, each finds its own entry instead of replacing the other's
    for env in ({}, {"CUDA_HOME": "/opt/a-toolkit"}, {}, {"CUDA_HOME": "/opt/a-toolkit"}):
        assert "remembered" in run_json(probe, env=env, unset=unset), env
