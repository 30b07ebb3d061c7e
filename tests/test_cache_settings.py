"""The disk cache as the environment sets it (compile/_cache_folder.py, compile/cache/limits.py):
the default folder without ``CUDALOAD_CACHE_DIR``, each word that turns the cache off or keeps it
on, ``CUDALOAD_CACHE_MAX_BYTES`` held after a compilation's write and after a read tier's entry
is copied in, and ``clear()`` after the writer thread's pending writes."""

from __future__ import annotations

import os
import threading
import time
import warnings

import pytest

from tests._support import run_json

KEY = "ab" * 32
UNSET = ("CUDALOAD_CACHE_DIR", "XDG_CACHE_HOME", "CUDALOAD_CACHE", "CUDALOAD_CACHE_READ_DIRS",
         "CUDALOAD_CACHE_MAX_BYTES")

# Programs compiled in a fresh process; what its cache folder then holds.
COMPILE = """
    import json, os
    import cudaload
    from cudaload.compile import cache
    for n in %s:
        cudaload.Program('extern "C" __global__ void k(int *x) { *x = %%d; }' %% n).compile(
            arch=90, output="ptx")
    disk = cache.default()
    root = getattr(disk, "root", None)
    if root:
        disk.writer.wait()
    entries = sorted(os.listdir(disk.folder)) if root else []
    print(json.dumps({"root": root, "entries": [e for e in entries if e.endswith(".bin")],
                      "modes": [oct(os.stat(f).st_mode & 0o777) for f in
                                (root, disk.folder)] if root else []}))
"""
COMPILE_TWO = COMPILE % "(1, 2)"


def _obj(n: int = 0):
    from cudaload.compile.objectcode import ObjectCode

    return ObjectCode(b"\x7fELF" + bytes([n]) * 200, "cubin", "sm_90")


def _key(n: int) -> str:
    return f"{n:064x}"


def _entries(folder) -> set[str]:
    return {name[:-4] for name in os.listdir(folder) if name.endswith(".bin")}


# --- the folder ----------------------------------------------------------------------------------

def test_without_the_variable_the_cache_is_made_private_under_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()  # without ~/.cache: made, as programs do
    out = run_json(COMPILE_TWO, env={"HOME": str(home)}, unset=UNSET, timeout=300)
    root = home / ".cache" / "cudaload"
    assert out["root"] == str(root)
    assert len(out["entries"]) == 2 and out["modes"] == ["0o700", "0o700"]
    assert len(_entries(root / "v2")) == 2


def test_xdg_cache_home_is_the_folder_the_cache_goes_under(tmp_path):
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    out = run_json(COMPILE_TWO, env={"HOME": str(home), "XDG_CACHE_HOME": str(xdg)},
                   unset=UNSET, timeout=300)
    assert out["root"] == str(xdg / "cudaload") and len(_entries(xdg / "cudaload" / "v2")) == 2
    assert not (home / ".cache").exists()


def test_the_default_folder_is_the_one_cache_commands_look_after(monkeypatch, tmp_path):
    from cudaload.compile import _cache_folder

    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert _cache_folder.chosen().root == str(tmp_path / "h" / ".cache" / "cudaload")
    assert _cache_folder.configured() is _cache_folder.chosen()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert _cache_folder.chosen().root == str(tmp_path / "x" / "cudaload")
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", "~/mine")  # wins, with ~ expanded
    assert _cache_folder.chosen().root == str(tmp_path / "h" / "mine")
    assert _cache_folder.configured().root == str(tmp_path / "h" / "mine")


# --- on and off ----------------------------------------------------------------------------------

@pytest.mark.parametrize("word", ["0", "false", "no", "off", "FALSE", " Off\n", "No"])
def test_each_documented_word_for_off_turns_the_disk_cache_off(cache_dir, monkeypatch, word):
    from cudaload.compile import _cache_folder, cache

    monkeypatch.setenv("CUDALOAD_CACHE", word)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _cache_folder.chosen() is None and cache.default() is cache.NULL
    assert caught == []
    assert cache.configured().root == str(cache_dir)  # still looked after by `cudaload cache`


@pytest.mark.parametrize("word", ["1", "true", "yes", "on", "TRUE", " On\n", ""])
def test_each_documented_word_for_on_keeps_it_on_without_a_warning(cache_dir, monkeypatch, word):
    from cudaload.compile import cache

    monkeypatch.setenv("CUDALOAD_CACHE", word)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert isinstance(cache.default(), cache.DiskCache)
    assert caught == []
    assert cache.default().root == str(cache_dir)


def test_a_compile_with_the_cache_set_false_writes_nothing(tmp_path):
    out = run_json(COMPILE_TWO, env={"HOME": str(tmp_path), "CUDALOAD_CACHE": "false",
                                     "CUDALOAD_CACHE_DIR": str(tmp_path / "c")}, timeout=300)
    assert out["root"] is None and not (tmp_path / "c").exists()
    assert not (tmp_path / ".cache").exists()


# --- the size bound ------------------------------------------------------------------------------

def _aged(disk, keys) -> None:
    """Give the entries of ``keys`` modification times long past, oldest first."""
    now = time.time()
    for i, key in enumerate(keys):
        os.utime(disk.path(key), (now - 1000 + i,) * 2)


def test_the_bound_holds_after_a_compilations_write(cache_dir, monkeypatch):
    """A miss's entry is written by the writer thread (lock, then publish): the bound holds
    once it is written, the least recently used going first and the new entry kept."""
    from cudaload.compile import cache

    disk = cache.default()
    for n in range(3):
        disk.store(_key(n), _obj(n))
    _aged(disk, [_key(n) for n in range(3)])
    size = len(cache.encode(_obj(9), _key(9)))
    monkeypatch.setenv("CUDALOAD_CACHE_MAX_BYTES", str(2 * size))
    with disk.lock(_key(9)) as publish:
        publish(_obj(9))
    disk.writer.wait()
    assert _entries(disk.folder) == {_key(2), _key(9)}


def test_a_compile_keeps_the_folder_within_the_bound(tmp_path):
    """A bound smaller than any entry: a compilation's entry is kept, an older one goes."""
    env = {"CUDALOAD_CACHE_DIR": str(tmp_path / "c")}
    (first,) = run_json(COMPILE % "(1,)", env=env, timeout=300)["entries"]
    old = time.time() - 1000
    os.utime(tmp_path / "c" / "v2" / first, (old, old))
    out = run_json(COMPILE % "(2,)", env={**env, "CUDALOAD_CACHE_MAX_BYTES": "1"}, timeout=300)
    assert len(out["entries"]) == 1 and out["entries"] != [first]


def test_the_bound_holds_after_a_read_tiers_entry_is_copied_in(cache_dir, tmp_path, monkeypatch):
    from cudaload.compile import cache

    tier = cache.DiskCache(tmp_path / "tier")
    tier.store(_key(7), _obj(7))
    disk = cache.default()
    disk.store(_key(1), _obj(1))
    _aged(disk, [_key(1)])
    monkeypatch.setenv("CUDALOAD_CACHE_READ_DIRS", str(tmp_path / "tier"))
    monkeypatch.setenv("CUDALOAD_CACHE_MAX_BYTES", str(len(cache.encode(_obj(7), _key(7)))))
    assert disk.lookup(_key(7)).code == _obj(7).code
    disk.writer.wait()
    assert _entries(disk.folder) == {_key(7)}
    assert _entries(tier.folder) == {_key(7)}  # the tier itself is never pruned


# --- clear ---------------------------------------------------------------------------------------

def test_clear_waits_for_the_writers_pending_entries(tmp_path):
    """An entry a compilation handed to the writer before the clear is cleared too, not
    written after it."""
    from cudaload.compile import cache
    from cudaload.compile.cache.writer import Writer

    writer, gate = Writer(), threading.Event()
    disk = cache.DiskCache(tmp_path, writer=writer)
    disk.store(_key(1), _obj(1))
    writer.submit(lambda: gate.wait(10))  # the writer is behind
    with disk.lock(KEY) as publish:
        publish(_obj(2))
    threading.Timer(0.3, gate.set).start()
    assert disk.clear() == 2
    writer.wait()
    assert _entries(disk.folder) == set() and disk.lookup(KEY) is None


def test_clear_empties_this_processs_memory_cache_too(cache_dir):
    from cudaload.compile import cache

    kept = _obj(3)
    cache.MEMORY.put("some key", kept, (), 100)
    assert len(cache.MEMORY) == 1
    cache.configured().clear()
    assert len(cache.MEMORY) == 0 and cache.MEMORY.get("some key") is None


@pytest.mark.parametrize("value, bound", [("0", 0), ("4096", 4096), (" 12 ", 12), ("", None), ("  ", None),
                                          ("-1", None), ("1e6", None), ("lots", None)])
def test_the_bound_is_a_number_of_bytes_zero_included(monkeypatch, value, bound):
    from cudaload.compile import cache

    monkeypatch.setenv("CUDALOAD_CACHE_MAX_BYTES", value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.max_bytes() == bound
    assert len(caught) == (1 if bound is None and value.strip() else 0)
