"""The kernel cache: entry format, integrity, key coverage, disk hits without NVRTC, many processes.

Anything that compiles (and so dlopens NVRTC) runs in a subprocess; the entry format, sweeping and
eviction are plain file work tested here directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.conftest import ROOT, run_json, run_py

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
'''


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh cache folder for this test, in this process and in the subprocesses it starts."""
    from cudaload.compile import cache

    folder = tmp_path / "cache"
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", str(folder))
    for name in ("CUDALOAD_CACHE", "CUDALOAD_CACHE_MAX_BYTES"):
        monkeypatch.delenv(name, raising=False)
    cache.MEMORY.clear()
    return folder


def _entries(folder) -> list[str]:
    return sorted(str(p) for p in folder.glob("v*/*.bin"))


def _fake(code: bytes = b"\x7fELF" + b"x" * 60):
    from cudaload.compile.objectcode import ObjectCode

    return ObjectCode(code, "cubin", "sm_90", log="warning: w", lowered_names={"f<int>": "_Z1fIiEvv"})


# --- the entry format -------------------------------------------------------------------------

_COMPILE_ONE = """
import json, sys
from cudaload import Program
obj = Program(sys.argv[1] if len(sys.argv) > 1 else {src!r}).compile(arch=90)
print(json.dumps({{"cached": obj.cached, "kind": obj.kind, "size": len(obj.code)}}))
"""


def test_roundtrip_keeps_every_field():
    from cudaload.compile import cache

    obj = cache.decode(cache.encode(_fake()))
    assert (obj.code, obj.kind, obj.arch, obj.log, obj.lowered_names, obj.cached) == (
        _fake().code, "cubin", "sm_90", "warning: w", {"f<int>": "_Z1fIiEvv"}, "disk")


def test_every_truncation_of_a_real_entry_is_a_miss_never_an_error(cache_dir):
    from cudaload.compile import cache

    run_json(_COMPILE_ONE.format(src=SAXPY))
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
    first = run_json(_COMPILE_ONE.format(src=SAXPY))
    (path,) = _entries(cache_dir)
    data = open(path, "rb").read()
    for n in (0, 1, 30, 60, len(data) // 2, len(data) - 1):
        with open(path, "wb") as f:
            f.write(data[:n])
        again = run_json(_COMPILE_ONE.format(src=SAXPY))
        assert again["cached"] is None and again["size"] == first["size"]
        assert open(path, "rb").read() == data  # rewritten whole
    assert run_json(_COMPILE_ONE.format(src=SAXPY))["cached"] == "disk"


# --- what the key covers ------------------------------------------------------------------------

_KEY_CHANGES = r"""
import dataclasses, json, os, sys
from cudaload import Program
from cudaload.compile import cache, program, toolchain
inc = sys.argv[1]
src = '#include "user.cuh"\n#include "mem.cuh"\n' + {src!r}
base = dict(headers={{"mem.cuh": "#define M 1\n"}}, include_paths=[inc], options=("-DA=1",),
            name_expressions=())
def compile(arch=90, output="cubin", source=src, **over):
    cache.MEMORY.clear()
    return Program(source, **{{**base, **over}}).compile(arch=arch, output=output).cached
out = {{"first": compile(), "again": compile()}}
out["source"] = compile(source=src + "\n// changed\n")
out["header"] = compile(headers={{"mem.cuh": "#define M 2\n"}})
out["options"] = compile(options=("-DA=2",))
out["names"] = compile(name_expressions=("saxpy",))
out["arch"] = compile(arch=80)
out["kind"] = compile(output="ptx")
with open(os.path.join(inc, "user.cuh"), "a") as f:
    f.write("#define U 2\n")
out["included_file"] = compile()
tc = toolchain.live()
for field, value in (("version", (tc.version[0], tc.version[1] - 1)), ("build", "other-build"),
                     ("headers", tc.headers[:1] + (("cccl", "/elsewhere", "[1, null]"),))):
    toolchain._live = tc._replace(**{{field: value}})
    out["nvrtc_" + field] = compile()
toolchain._live = tc
cache.FORMAT += 1
out["format"] = compile()
cache.FORMAT -= 1
compile(output="ptx")
program._driver_version = lambda: 12020
out["driver_for_ptx"] = compile(output="ptx")
out["driver_for_cubin"] = compile()
print(json.dumps(out))
"""


def test_changing_any_input_of_the_key_is_a_miss(cache_dir, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "user.cuh").write_text("#define U 1\n")
    code = _KEY_CHANGES.format(src=SAXPY)
    out = run_json(f"import sys; sys.argv[1:] = [{str(inc)!r}]\n" + textwrap.dedent(code))
    assert out.pop("first") is None
    assert out.pop("again") == "disk"
    assert out.pop("driver_for_cubin") == "disk"  # CUBIN does not depend on the driver
    assert out == {name: None for name in out}, out  # every change compiled anew
    assert set(out) >= {"source", "header", "options", "names", "arch", "kind", "included_file",
                        "nvrtc_version", "nvrtc_build", "nvrtc_headers", "format", "driver_for_ptx"}


# --- a disk hit pays for neither NVRTC nor cuda.pathfinder ---------------------------------------

_DISK_HIT_PROBE = """
import json, sys, time
from cudaload import Program
prog = Program({src!r})
t = time.perf_counter()
obj = prog.compile(arch=90)
took = time.perf_counter() - t
maps = open("/proc/self/maps").read()
print(json.dumps({{"cached": obj.cached, "nvrtc_mapped": "libnvrtc" in maps,
                   "pathfinder": "cuda.pathfinder" in sys.modules, "ms": took * 1e3}}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_disk_hit_loads_neither_nvrtc_nor_pathfinder(cache_dir):
    probe = _DISK_HIT_PROBE.format(src=SAXPY)
    first = run_json(probe)
    assert first["cached"] is None and first["nvrtc_mapped"] and first["pathfinder"]
    hit = run_json(probe)
    assert hit["cached"] == "disk"
    assert not hit["nvrtc_mapped"], "a disk hit mapped libnvrtc"
    assert not hit["pathfinder"], "a disk hit imported cuda.pathfinder"


def test_nvrtc_override_is_the_file_checked(cache_dir):
    probe = _DISK_HIT_PROBE.format(src=SAXPY)
    real = run_json("import json; from cudaload.bindings import _loader; "
                    "print(json.dumps(_loader.nvrtc().path))")
    run_json(probe)
    hit = run_json(probe, env={"CUDALOAD_LIBNVRTC": real})  # first use of the override: loads it
    assert hit["cached"] == "disk" and hit["nvrtc_mapped"]
    hit = run_json(probe, env={"CUDALOAD_LIBNVRTC": real})  # now remembered for it too
    assert hit["cached"] == "disk" and not hit["nvrtc_mapped"]
    proc = run_py(probe, env={"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}, check=False)
    assert proc.returncode != 0 and "LibraryNotFoundError" in proc.stderr


def test_changed_nvrtc_file_is_not_trusted(cache_dir):
    probe = _DISK_HIT_PROBE.format(src=SAXPY)
    run_json(probe)
    record_path = cache_dir / "toolchain.json"
    record = json.loads(record_path.read_text())
    (searched,) = record["nvrtc"]  # one entry: what a search from this environment found
    assert searched.startswith("search from " + sys.prefix + " ")
    record["nvrtc"][searched]["stat"][1] += 1  # as if the file had been replaced
    record["nvrtc"][searched]["version"] = [99, 0]
    record_path.write_text(json.dumps(record))
    hit = run_json(probe)
    assert hit["cached"] == "disk" and hit["nvrtc_mapped"]  # revalidated by loading it
    assert json.loads(record_path.read_text())["nvrtc"][searched]["version"] != [99, 0]



def test_header_folders_are_remembered_per_environment(cache_dir, tmp_path):
    from cudaload.compile import toolchain

    run_json(_DISK_HIT_PROBE.format(src=SAXPY))
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


_REMEMBER = """
import sys, time
from cudaload.compile import toolchain
tc = toolchain.current()  # what this environment found
toolchain._selector = lambda: "environment " + sys.argv[1]
record = toolchain._read_record()  # read before any of the others wrote
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
toolchain._remember(record, tc, toolchain._stat_id(tc.nvrtc_path))
"""


def test_environments_remembering_at_once_keep_every_entry(cache_dir):
    run_py("from cudaload.compile import toolchain; toolchain.current()")  # NVRTC found once, here
    env = {**os.environ, "PYTHONPATH": ROOT}
    start = time.time() + 3.0
    procs = [subprocess.Popen([sys.executable, "-c", _REMEMBER, str(i), str(start)], env=env)
             for i in range(8)]
    assert [p.wait(60) for p in procs] == [0] * 8
    record = json.loads((cache_dir / "toolchain.json").read_text())
    assert {f"environment {i}" for i in range(8)} <= set(record["nvrtc"])


# --- many processes ---------------------------------------------------------------------------

_WORKER = """
import json, sys, time
import tests.scenarios.compile_log
from cudaload import Program
from cudaload.bindings import _loader
_loader.nvrtc()
start, count, base = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
progs = [Program({src!r} + "\\n// variant %d\\n" % (base + i)) for i in range(count)]
while time.time() < start:
    time.sleep(0.001)
out = [(p.compile(arch=90).cached, len(p.compile(arch=90).code)) for p in progs]
print(json.dumps(out))
"""


def _run_workers(args_per_worker, env, timeout=120):
    code = textwrap.dedent(_WORKER.format(src=SAXPY))
    full_env = {**os.environ, "PYTHONPATH": ROOT, **env}
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", code, str(start), *map(str, a)], env=full_env,
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

_THREE_COMPILES = """
import json, warnings
warnings.simplefilter("always")
from cudaload import Program
{patch}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = [Program({src!r} + "// %d" % i).compile(arch=90).cached for i in range(3)]
    out.append(Program({src!r} + "// 0").compile(arch=90).cached)
print(json.dumps({{"cached": out, "warnings": [str(w.message) for w in caught
                                                if "cache" in str(w.message)]}}))
"""


@pytest.mark.parametrize("case", ["uncreatable", "read-only", "full"])
def test_unusable_folder_warns_once_and_goes_on(cache_dir, tmp_path, case):
    patch = ""
    env = {}
    if case == "uncreatable":
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        env["CUDALOAD_CACHE_DIR"] = str(blocker / "cache")
    else:
        # read-only: no lock can be taken; full: the lock is taken, writing the entry fails
        code, step = (("EROFS", "cache._locking.acquire_key") if case == "read-only" else
                      ("ENOSPC", "cache._writes.commit"))
        patch = (f"import errno, os\nfrom cudaload.compile import cache\n"
                 f"def refuse(*a, **k): raise OSError(errno.{code}, os.strerror(errno.{code}))\n"
                 f"cache._writes.write_atomic = refuse\n{step} = refuse")
    out = run_json(_THREE_COMPILES.format(src=SAXPY, patch=patch), env=env)
    assert out["cached"] == [None, None, None, "memory"]
    assert len(out["warnings"]) == 1, out["warnings"]
    assert "CUDALOAD_CACHE_DIR" in out["warnings"][0]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into read-only folders")
def test_really_read_only_folder(cache_dir):
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o555)
    try:
        out = run_json(_THREE_COMPILES.format(src=SAXPY, patch=""))
    finally:
        os.chmod(cache_dir, 0o755)
    assert out["cached"][:3] == [None, None, None] and len(out["warnings"]) == 1


def test_cache_off_keeps_memory_only(cache_dir):
    out = run_json(_THREE_COMPILES.format(src=SAXPY, patch=""), env={"CUDALOAD_CACHE": "0"})
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
    disk = cache.DiskCache(tmp_path)  # as in a new process
    disk.store(_key(2), _fake())  # the first write of a process sweeps
    assert not os.path.exists(old) and os.path.exists(new)
    os.utime(new, (time.time() - 2 * cache.STALE_TMP_S,) * 2)
    assert disk.prune()["tmp"] == 1 and not os.path.exists(new)


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
    from cudaload.compile import _locking, cache

    cache.default().store(_key(1), _fake())
    cache.default().store(_key(2), _fake())
    with open(cache.default().path(_key(2)), "r+b") as f:
        f.seek(70)
        f.write(b"\0\0\0")
    with cache.default().lock(_key(3)):
        pass
    idle = cache.default().path(_key(3), ".lock")  # a per-key lock file, as on Windows
    with _locking.hold(idle):
        pass
    removed = cache.configured().prune()
    assert removed["corrupt"] == 1 and removed["locks"] == 1
    assert cache.default().lookup(_key(1)) is not None
    assert not os.path.exists(idle)
    assert os.path.exists(os.path.join(cache.default().folder, _locking.KEYS_FILE)) == (os.name == "posix")


def test_lock_excludes_a_thread_and_survives_lock_file_removal(cache_dir):
    import threading

    from cudaload.compile import _locking, cache

    cache.default().store(_key(7), _fake())
    path = cache.default().path(_key(7), ".lock")
    order = []
    with _locking.hold(path):
        def second():
            with _locking.hold(path):
                order.append("second")

        worker = threading.Thread(target=second)
        worker.start()
        time.sleep(0.2)
        order.append("first")
        assert not _locking.remove_if_free(path)  # held: not removed
    worker.join(5)
    assert order == ["first", "second"]


def test_key_lock_excludes_a_thread_and_is_released_by_another(cache_dir):
    import threading

    from cudaload.compile import _locking

    folder = _ready_folder()
    order = []
    release = _locking.acquire_key(folder, _key(8))

    def second():
        _locking.acquire_key(folder, _key(8))()
        order.append("second")

    waiter = threading.Thread(target=second)
    waiter.start()
    time.sleep(0.2)
    order.append("first")
    threading.Thread(target=release).start()
    waiter.join(5)
    assert order == ["first", "second"]
    _locking.acquire_key(folder, _key(9))()  # another key was never blocked


_HOLD_KEY = """
import sys, time
from cudaload.compile import _locking
release = _locking.acquire_key(sys.argv[1], sys.argv[2])
print("held", flush=True)
time.sleep(float(sys.argv[3]))
release()
"""


@pytest.mark.skipif(os.name != "posix", reason="byte-range key locks are POSIX")
def test_key_lock_excludes_another_process_and_survives_clear(cache_dir):
    import shutil

    from cudaload.compile import _locking

    folder = _ready_folder()
    _locking.acquire_key(folder, _key(4))()  # this process has the lock file open
    shutil.rmtree(folder)  # cudaload cache clear, from elsewhere
    env = {**os.environ, "PYTHONPATH": ROOT}
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_KEY, folder, _key(4), "1.0"], env=env,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    release = _locking.acquire_key(folder, _key(4))  # reopens the new file, then waits on it
    waited = time.monotonic() - start
    release()
    holder.wait(10)
    assert waited > 0.5, waited


_PUBLISH_AND_EXIT = """
import os
def publish_and_exit():
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode
    with cache.default().lock(KEY) as publish:
        publish(ObjectCode(b"\\x7fELF" + b"x" * 60, "cubin", "sm_90"))
if HOW == "exit":
    publish_and_exit()  # the interpreter exits at once: the entry is in place already
elif HOW == "multiprocessing":  # workers end with os._exit after threading's shutdown
    import multiprocessing
    worker = multiprocessing.get_context("fork").Process(target=publish_and_exit)
    worker.start()
    worker.join()
else:  # the cache imported before the fork, as in a process that compiled already
    from cudaload.compile import cache
    pid = os.fork()
    if pid == 0:
        publish_and_exit()
        os._exit(0)  # as multiprocessing's fork workers end: no atexit
    os.waitpid(pid, 0)
"""


@pytest.mark.parametrize("how", ["exit", "fork", "multiprocessing"])
def test_entry_published_just_before_exit_is_written(cache_dir, how):
    from cudaload.compile import cache

    if how != "exit" and not hasattr(os, "fork"):
        pytest.skip("no fork")
    run_py(f"KEY, HOW = {_key(6)!r}, {how!r}\n" + _PUBLISH_AND_EXIT)
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

_OPPOSITE_ORDER = """
import os, sys, threading, time
from cudaload.compile import cache
from cudaload.compile.objectcode import ObjectCode
me, other = sys.argv[1], sys.argv[2]
keys = ["aa" * 32, "bb" * 32] if me == "0" else ["bb" * 32, "aa" * 32]
obj = ObjectCode(b"x" * 100, "cubin", "sm_90")
failed = []

def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.005)

def holder():  # holds the first key while the other process's waiter asks for it
    with cache.default().lock(keys[0]) as publish:
        open(me + ".held", "w").close()
        wait_for(other + ".held")
        wait_for(me + ".waiting")
        wait_for(other + ".waiting")
        time.sleep(0.5)  # both waiters are inside the lock call by now
        publish(obj)

def waiter():  # asks for the key the other process holds
    wait_for(me + ".held")
    wait_for(other + ".held")
    open(me + ".waiting", "w").close()
    try:
        with cache.default().lock(keys[1]) as publish:
            publish(obj)
    except BaseException as exc:
        failed.append(repr(exc))

threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(cache.default().usable, cache.default().lookup(keys[1]) is not None, failed)
"""


@pytest.mark.skipif(os.name != "posix", reason="byte-range key locks are POSIX")
def test_processes_taking_keys_in_opposite_orders_keep_the_disk_cache(cache_dir, tmp_path):
    """Linux reports the second wait as a deadlock (EDEADLK): it sees each process holding a key
    (one thread's) and waiting for the other's (another thread's).  Neither holder waits for
    anything, so it is none, and must not cost the disk cache."""
    script = tmp_path / "order.py"
    script.write_text(_OPPOSITE_ORDER)
    env = {**os.environ, "PYTHONPATH": ROOT}
    procs = [subprocess.Popen([sys.executable, str(script), me, str(1 - int(me))], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for me in "01"]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [out.split() for out, _err in outs] == [["True", "True", "[]"]] * 2, outs


_REMOVED_UNDER_COMPILE = """
import os, subprocess, sys, time, warnings
from cudaload import _writes
from cudaload.compile import cache
from cudaload.compile.objectcode import ObjectCode
warnings.simplefilter("error")
folder = cache.default().folder
with cache.default().lock("cd" * 32) as publish:
    while True:  # the entry's temporary file, made while the compile runs
        tmp = [e for e in os.listdir(folder) if e.startswith(_writes.PREFIX)]
        if tmp:
            break
        time.sleep(0.001)
    tmp = os.path.join(folder, tmp[0])
    if sys.argv[1] == "clear":
        code = "from cudaload.compile import cache; cache.configured().clear()"
    else:  # the compile took longer than STALE_TMP_S: another process sweeps the file
        old = time.time() - cache.STALE_TMP_S - 60
        os.utime(tmp, (old, old))
        code = "from cudaload.compile import cache; cache.configured().prune()"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert not os.path.exists(tmp)
    publish(ObjectCode(b"y" * 100, "cubin", "sm_90"))
print(cache.default().usable, cache.default().lookup("cd" * 32).code == b"y" * 100,
      [e for e in os.listdir(folder) if e.startswith(_writes.PREFIX)])
"""


@pytest.mark.parametrize("how", ["clear", "sweep"])
def test_entry_written_when_its_temporary_file_goes_during_the_compile(cache_dir, how):
    out = run_py(_REMOVED_UNDER_COMPILE.replace("sys.argv[1]", repr(how)))
    assert out.stdout.split() == ["True", "True", "[]"], out.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_clear_leaves_no_descriptor_open(cache_dir):
    out = run_json("""
        import json, os
        from cudaload.compile import cache
        from cudaload.compile.objectcode import ObjectCode
        def compile_one(i):
            with cache.default().lock("%064x" % (i + 1)) as publish:
                publish(ObjectCode(b"z" * 10, "cubin", "sm_90"))
        compile_one(0)
        before = len(os.listdir("/proc/self/fd"))
        for i in range(20):
            cache.configured().clear()
            compile_one(i + 1)
        print(json.dumps([before, len(os.listdir("/proc/self/fd")), cache.default().lookup("%064x" % 21) is not None]))
    """)
    assert out[1] == out[0] and out[2], out


def test_cache_imports_where_os_has_no_fork_hooks(cache_dir):
    out = run_py("""
        import os
        import random, tempfile, threading  # the standard library's own hooks, registered first
        del os.register_at_fork  # as on Windows
        import cudaload.availability, cudaload.launch.kernel, cudaload.launch.memory, cudaload.compile.program
        from cudaload.compile import cache
        print("imported", cache.default().usable)
    """)
    assert out.stdout.split() == ["imported", "True"], out.stderr


# --- every file NVRTC reads is in the key -------------------------------------------------------

_INCLUDED = r"""
import json, os, sys
from cudaload import Program
case, folder = sys.argv[1], sys.argv[2]
inc = os.path.join(folder, "inc")
body = 'extern "C" __global__ void k(int *p) { *p = VAL; }\n'
os.chdir(folder)
program = {
    "-I option": lambda: Program('#include "v1.h"\n' + body, options=("-I" + inc,)),
    "--include-path": lambda: Program('#include "v2.h"\n' + body, options=("--include-path=" + inc,)),
    "--pre-include": lambda: Program(body, options=("--pre-include=" + os.path.join(inc, "v3.h"),)),
    "#include MACRO": lambda: Program('#define H "v4.h"\n#include H\n' + body, include_paths=(inc,)),
    "beside a bare name": lambda: Program('#include "v5.h"\n' + body),
    "beside the named file": lambda: Program('#include "v6.h"\n' + body,
                                             name=os.path.join(inc, "k.cu")),
    # NVRTC looks for a pre-included file in the current folder first, not beside the program
    "--pre-include, relative": lambda: Program(body, name=os.path.join(inc, "k.cu"),
                                               options=("--pre-include=v7.h",)),
}[case]()
obj = program.compile(arch=90, output="ptx")
again = program.compile(arch=90, output="ptx")
print(json.dumps({"cached": obj.cached, "again": again.cached,
                  "value": 222 if b"222" in obj.code else 111 if b"111" in obj.code else None}))
"""
_WHERE = {"-I option": "inc/v1.h", "--include-path": "inc/v2.h", "--pre-include": "inc/v3.h",
          "#include MACRO": "inc/v4.h", "beside a bare name": "v5.h",
          "beside the named file": "inc/v6.h", "--pre-include, relative": "v7.h"}


@pytest.mark.parametrize("case", list(_WHERE))
def test_an_edited_file_nvrtc_includes_is_compiled_again(cache_dir, tmp_path, case):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "v7.h").write_text("#define VAL 999\n")  # not the one NVRTC reads
    header = tmp_path / _WHERE[case]
    run = lambda: run_json(f"import sys; sys.argv[1:] = [{case!r}, {str(tmp_path)!r}]\n"
                           + _INCLUDED)
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
    from cudaload.compile import includes

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
