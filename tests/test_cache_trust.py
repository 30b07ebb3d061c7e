"""Whoever can write the cache folder must not choose the code a compile returns or the library it
loads: entries prove their key, and the folder and its files must be this user's (or root's) and
writable by no one else.

Files "of another user" are made by root and given to uid 12345 with os.chown, so these tests run
as root (as CI does) and are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from tests._fakelibs import build_shared_library
from tests._support import run_py, scenario_json

OTHER = 12345  # a uid no one here uses
KERNEL = 'extern "C" __global__ void k(int *x) {{ x[0] = {n}; }}\n'
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="gives files to another user with os.chown: run as root")

def victim(n: int = 1, **env) -> dict:
    """What a user's process sees compiling KERNEL for ``n`` (see cache_compiles.victim)."""
    return scenario_json("cache_compiles", "victim", KERNEL.format(n=n),
                         env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1", **env})


def _entries_folder(cache_dir):
    from cudaload.compile import cache

    return cache_dir / f"v{cache.FORMAT}"


def _entry_files(folder) -> list:
    return sorted(folder.glob("v*/*.bin"))


def _chown_tree(top, uid: int, gid: int = -1) -> None:
    os.chown(top, uid, gid)
    for base, dirs, files in os.walk(top):
        for name in dirs + files:
            os.chown(os.path.join(base, name), uid, gid, follow_symlinks=False)


# --- entries prove their key ----------------------------------------------------------------------

def test_an_entry_copied_to_another_key_is_a_miss_there(cache_dir):
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    x, y = "ab" * 32, "cd" * 32
    cache.default().store(x, ObjectCode(b"code of x" * 10, "cubin", "sm_90"))
    shutil.copyfile(cache.default().path(x), cache.default().path(y))
    assert cache.default().lookup(y) is None
    assert cache.default().lookup(x).code == b"code of x" * 10
    assert cache.decode(open(cache.default().path(x), "rb").read(), y) is None


def test_a_program_is_never_served_another_programs_entry(cache_dir):
    one = victim(1)["code"]
    (first,) = _entry_files(cache_dir)
    two = victim(2)["code"]
    (second,) = [p for p in _entry_files(cache_dir) if p != first]
    assert one != two
    shutil.copyfile(first, second)  # program 1's entry under program 2's key
    out = victim(2)
    assert out["cached"] is None and out["code"] == two


def test_a_bundle_of_keyless_entries_from_before_is_still_read():
    import hashlib
    import struct

    from cudaload import Program

    from cudaload.compile import cache
    from cudaload.compile.bundle import BUNDLE_HEADER, FORMAT, MAGIC, Bundle

    program, code = Program(KERNEL.format(n=1)), b"\x7fELF" + b"old" * 20
    meta = json.dumps({"kind": "cubin", "arch": "sm_90", "log": "", "lowered_names": {}}).encode()
    keyless = struct.pack("<8sHIQ32s", cache.MAGIC, 1, len(meta), len(code),
                          hashlib.sha256(meta + code).digest()) + meta + code  # format 1
    index = json.dumps({"cudaload": "0.1.0", "entries": [
        {"program": program._digest.hex(), "name": program.name, "kind": "cubin",
         "arch": "sm_90", "name_expressions": [], "offset": 0, "length": len(keyless)}]}).encode()
    bundle = Bundle(BUNDLE_HEADER.pack(MAGIC, FORMAT, len(index)) + index + keyless)
    assert bundle.find(program, 90).code == code
    assert cache.decode(keyless, "ab" * 32) is None  # in the cache folder it is a miss


# --- a library is never taken from a folder others could write ------------------------------------

CONSTRUCTOR = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("ran", f); fclose(f); }
}
"""


def _plant_library(cache_dir, tmp_path, how: str):
    """A shared library whose constructor writes a marker file, named in the cache folder's
    toolchain.json as this environment's NVRTC with a matching stat record; the folder, the
    record or the library made untrustworthy as ``how`` says.  Returns (library, marker)."""
    from cudaload.compile import toolchain

    run_py("from cudaload.compile import toolchain; toolchain.live()",
           env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})  # a real record to edit
    record_path = cache_dir / toolchain.RECORD
    record = json.loads(record_path.read_text())
    marker = tmp_path / "constructor-ran"
    where = tmp_path / "planted"
    where.mkdir()
    lib = build_shared_library(str(where), "libnvrtc.so.13", CONSTRUCTOR % marker)
    if how == "library of another user":
        os.chown(lib, OTHER, -1)
    elif how == "library in a folder every user may write":
        os.chmod(where, 0o777)
    for entry in record["nvrtc"].values():
        entry["path"], entry["stat"] = lib, toolchain._stat_id(lib)
    record_path.write_text(json.dumps(record))
    if how == "folder of another user":
        _chown_tree(cache_dir, OTHER)
    elif how == "folder every user may write":
        os.chmod(cache_dir, 0o777)
    elif how == "folder its group may write":
        os.chmod(cache_dir, 0o770)
    elif how == "toolchain.json of another user":
        os.chown(record_path, OTHER, -1)
    elif how == "toolchain.json its group may write":
        os.chmod(record_path, 0o660)
    return lib, marker


FOLDER_CASES = ["folder of another user", "folder every user may write",
                "folder its group may write"]
FILE_CASES = ["toolchain.json of another user", "toolchain.json its group may write",
              "library of another user", "library in a folder every user may write"]


@as_root
@pytest.mark.parametrize("how", FOLDER_CASES + FILE_CASES)
def test_a_planted_library_is_never_loaded_nor_reported(cache_dir, tmp_path, how):
    lib, marker = _plant_library(cache_dir, tmp_path, how)
    out = victim(1)
    assert not marker.exists(), "the planted library's constructor ran"
    assert out["nvrtc_path"] != lib and "planted" not in str(out["nvrtc_path"])
    assert out["code"] and out["cached"] is None  # the real NVRTC, found by its search, compiled
    if how in FOLDER_CASES:  # the folder is not used at all, and the user is told once how to fix
        assert not out["enabled"] and len(out["warnings"]) == 1, out["warnings"]
        text = out["warnings"][0]
        assert str(cache_dir) in text and "a new folder of your own" in text \
            and "CUDALOAD_CACHE_SHARED" in text
    else:  # the folder is fine: only the record is passed over
        assert out["enabled"] and out["warnings"] == []


@as_root
def test_a_shared_group_cache_serves_entries_but_never_a_library(cache_dir, tmp_path):
    victim(1)  # an entry compiled by a group member
    lib, marker = _plant_library(cache_dir, tmp_path, "none")
    _chown_tree(cache_dir, OTHER, os.getgid())
    os.chmod(cache_dir, 0o2770)
    for path in cache_dir.rglob("*"):
        os.chmod(path, 0o2770 if path.is_dir() else 0o660)
    refused = victim(1)
    assert refused["cached"] is None and len(refused["warnings"]) == 1  # not opted in
    out = victim(1, CUDALOAD_CACHE_SHARED="1")
    assert out["cached"] == "disk" and out["warnings"] == []
    assert not marker.exists() and out["nvrtc_path"] != lib
    out = victim(2, CUDALOAD_CACHE_SHARED="1")  # written for the group to read, and lock through
    assert out["cached"] is None and out["warnings"] == []
    mine = [p for p in _entry_files(cache_dir) if p.stat().st_uid == os.geteuid()]
    assert [stat.S_IMODE(p.stat().st_mode) for p in mine] == [0o640]
    assert stat.S_IMODE((_entries_folder(cache_dir) / ".locks").stat().st_mode) == 0o660


# --- folders and files of another user, or writable by others -------------------------------------

@as_root
@pytest.mark.parametrize("how", ["0777, of another user", "0777", "of another user"])
def test_a_folder_others_may_write_is_not_used_and_said_once(cache_dir, how):
    victim(1)
    if "another user" in how:
        _chown_tree(cache_dir, OTHER)
    if "0777" in how:
        os.chmod(cache_dir, 0o777)
    out = victim(1)
    assert out["cached"] is None and not out["enabled"]  # the entry there is not believed
    assert len(out["warnings"]) == 1 and str(cache_dir) in out["warnings"][0]
    listing = sorted(p.name for p in cache_dir.rglob("*"))
    assert victim(3)["cached"] is None and sorted(p.name for p in cache_dir.rglob("*")) == listing


@as_root
def test_an_entries_folder_of_another_user_is_not_used(cache_dir):
    victim(1)
    _chown_tree(_entries_folder(cache_dir), OTHER)
    out = victim(1)
    assert out["cached"] is None and len(out["warnings"]) == 1
    assert str(_entries_folder(cache_dir)) in out["warnings"][0]


@as_root
@pytest.mark.parametrize("how", ["of another user", "group-writable", "world-writable"])
def test_an_entry_file_others_may_write_is_a_miss(cache_dir, how):
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    key = "ef" * 32
    cache.default().store(key, ObjectCode(b"x" * 100, "cubin", "sm_90"))
    assert cache.default().lookup(key) is not None
    path = cache.default().path(key)
    if how == "of another user":
        os.chown(path, OTHER, -1)
    else:
        os.chmod(path, 0o660 if how == "group-writable" else 0o606)
    assert cache.default().lookup(key) is None
    assert cache.configured().prune()["corrupt"] == 1 and not os.path.exists(path)


def test_the_cache_folder_and_its_files_are_made_private(cache_dir):
    victim(1)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(cache_dir) == 0o700 and mode(_entries_folder(cache_dir)) == 0o700
    assert {mode(p) for p in cache_dir.rglob("*") if p.is_file()} == {0o600}


@as_root
def test_cache_commands_refuse_a_folder_not_to_be_trusted(cache_dir):
    victim(1)
    os.chmod(cache_dir, 0o777)
    listing = sorted(p.name for p in cache_dir.rglob("*"))
    for action in ("clear", "prune"):
        proc = run_py("from cudaload.cli import main\n"
                      f"raise SystemExit(main(['cache', {action!r}]))", check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "every user may write it" in proc.stderr and "a new folder of your own" in proc.stderr
    assert sorted(p.name for p in cache_dir.rglob("*")) == listing
    info = json.loads(run_py("from cudaload.cli import main; main(['cache', 'info', '--json'])"
                             ).stdout)
    assert info["enabled"] is False and info["problem"] == f"{cache_dir}: every user may write it"


# --- lock files: never through a symbolic link ----------------------------------------------------

@pytest.mark.parametrize("name", ["entries/.locks", "toolchain.json.lock"])
def test_a_lock_file_that_is_a_symbolic_link_is_not_followed(cache_dir, tmp_path, name):
    _entries_folder(cache_dir).mkdir(parents=True, mode=0o700)
    os.chmod(cache_dir, 0o700)
    outside = tmp_path / "outside" / "created-through-the-link"
    outside.parent.mkdir()
    link = cache_dir / name.replace("entries", _entries_folder(cache_dir).name)
    link.symlink_to(outside)
    warned = scenario_json("cache_processes", "lock_and_publish",
                           env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert not outside.exists(), "a lock file was created where the link points"
    assert link.is_symlink()
    if name == "entries/.locks":  # the folder cannot be locked: said once, compiling goes on
        assert len(warned) == 1 and "lock file" in warned[0]


# --- the rules themselves, judged in this process (tests/test_trust_unprivileged.py: as a user) --

@pytest.mark.parametrize("value, declared", [
    ("1", True), ("true", True), ("TRUE", True), (" yes ", True), ("on", True), ("On\n", True),
    ("", False), ("0", False), ("false", False), ("off", False), ("no", False), ("2", False),
    ("shared", False)])
def test_the_shared_setting_takes_the_usual_words(monkeypatch, value, declared):
    from cudaload._base import _untrusted

    monkeypatch.setenv("CUDALOAD_CACHE_SHARED", value)
    assert _untrusted.shared() is declared
    monkeypatch.delenv("CUDALOAD_CACHE_SHARED")
    assert _untrusted.shared() is False


def _st(mode: int, uid: int):
    import types

    return types.SimpleNamespace(st_mode=stat.S_IFDIR | mode, st_uid=uid, st_gid=OTHER)


def test_a_group_may_write_only_what_is_declared_shared():
    from cudaload._base import _untrusted

    group_writable = _st(0o770, OTHER)
    assert _untrusted.problem(group_writable) is not None  # not shared unless said so
    assert _untrusted.problem(group_writable, shared_by_group=True) is None
    assert _untrusted.problem(_st(0o777, OTHER), True) == "every user may write it"
    assert _untrusted.problem(_st(0o770, os.geteuid())) == "its group may write it"
    assert _untrusted.problem(_st(0o755, os.geteuid())) is None


def test_without_owners_and_mode_bits_nothing_is_refused(monkeypatch, tmp_path):
    """On Windows st_uid is 0 and the mode bits are made up: judging by them would refuse every
    folder, so nothing is refused there."""
    from cudaload._base import _untrusted

    monkeypatch.setattr(_untrusted, "_POSIX", False)
    assert _untrusted.problem(_st(0o777, OTHER)) is None
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o777)
    assert _untrusted.folder_problem(str(open_folder), True) is None
    assert _untrusted.path_problem(str(open_folder)) is None
    assert _untrusted.cache_problem(str(open_folder), str(open_folder / "v2"), False) is None


def test_a_cache_folder_not_there_is_told_apart_from_one_that_cannot_be_looked_at(tmp_path):
    from cudaload._base import _untrusted

    root = tmp_path / "cache"
    with pytest.raises(FileNotFoundError):  # not made yet: the caller looks again once it is
        _untrusted.cache_problem(str(root), str(root / "v2"), False)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")  # there, but leads nowhere: making it fails
    assert _untrusted.cache_problem(str(dangling), str(dangling / "v2"), False) is None
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert _untrusted.cache_problem(str(a_file / "cache"), str(a_file / "cache" / "v2"), False) is None
    root.mkdir(mode=0o700)
    os.chmod(root, 0o700)
    assert _untrusted.cache_problem(str(root), str(root / "v2"), False) is None  # no entries yet
    (root / "v2").mkdir(mode=0o700)
    os.chmod(root / "v2", 0o770)
    assert _untrusted.cache_problem(str(root), str(root / "v2"), False) == (
        str(root / "v2"), "its group may write it")
    os.chmod(root, 0o777)
    assert _untrusted.cache_problem(str(root), str(root / "v2"), True) == (
        str(root), "every user may write it")
    assert _untrusted.path_problem(str(root)) == "every user may write it"
    assert _untrusted.path_problem(str(tmp_path / "nowhere")) is None
    assert _untrusted.path_problem("a\0b") is None


# --- reading within bounds -----------------------------------------------------------------------

def test_a_file_of_the_size_bound_is_read_and_one_byte_more_is_refused(tmp_path):
    from cudaload._base import _untrusted

    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert _untrusted.read_regular(path, 100) == b"x" * 100
    assert _untrusted.regular_problem(path, 100) is None
    with pytest.raises(ValueError, match="holds 100 bytes, more than the 99 expected at most"):
        _untrusted.read_regular(path, 99)
    assert _untrusted.regular_problem(path, 99) == \
        "it holds 100 bytes, more than the 99 expected at most"
    path.write_bytes(b"")
    assert _untrusted.read_regular(path, 0) == b""


def test_an_entry_just_over_the_size_bound_is_a_miss(tmp_path, monkeypatch):
    from cudaload.compile import cache
    from cudaload.compile.cache import disk as _disk
    from cudaload.compile.objectcode import ObjectCode

    folder, key = cache.DiskCache(tmp_path), "ef" * 32
    folder.store(key, ObjectCode(b"\x7fELF" + b"e" * 100, "cubin", "sm_90"))
    size = os.path.getsize(folder.path(key))
    monkeypatch.setattr(_disk, "MAX_ENTRY_BYTES", size)
    assert folder.lookup(key) is not None
    monkeypatch.setattr(_disk, "MAX_ENTRY_BYTES", size - 1)
    assert folder.lookup(key) is None


@pytest.mark.parametrize("opener, closer", [("[", "]"), ('{"a": ', "}")])
def test_json_nested_to_the_depth_bound_is_read_and_one_level_more_is_refused(opener, closer):
    from cudaload._base import _untrusted

    def nested(levels: int) -> bytes:
        return (opener * levels + "1" + closer * levels).encode()
    assert _untrusted.load_json(nested(4), 4) == json.loads(nested(4))
    with pytest.raises(ValueError, match="JSON nested more than 4 levels deep"):
        _untrusted.load_json(nested(5), 4)
    # more brackets than the bound, side by side: as deep as the bound, not deeper
    wide = ("[" + ", ".join([opener * 3 + "1" + closer * 3] * 4) + "]").encode()
    assert _untrusted.load_json(wide, 4) == json.loads(wide)
    assert _untrusted.load_json(b"[]", 1) == [] and _untrusted.load_json(b"7", 0) == 7
    with pytest.raises(ValueError):
        _untrusted.load_json(b"[]", 0)


def test_only_a_regular_file_is_read_and_a_final_link_only_when_followed(tmp_path):
    from cudaload._base import _untrusted

    (tmp_path / "f").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):  # ELOOP: the link itself is not followed
        _untrusted.read_regular(tmp_path / "link", 100)
    assert _untrusted.read_regular(tmp_path / "link", 100, follow=True) == b"data"
    for name, what in (("fifo", "a pipe"), (".", "a folder")):
        with pytest.raises(ValueError, match=f"is {what}, not a regular file"):
            _untrusted.read_regular(tmp_path / name, 100)


def test_a_file_truncated_while_it_is_read_gives_what_is_left(tmp_path):
    from cudaload._base import _untrusted

    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)

    def truncating(st):  # runs between the size taken and the read
        os.truncate(path, 10)
        return None
    assert _untrusted.read_regular(path, 1000, truncating) == b"x" * 10


def test_reading_keeps_no_file_descriptor_open(tmp_path):
    from cudaload._base import _untrusted

    (tmp_path / "f").write_bytes(b"x" * 10)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(100):
        assert _untrusted.read_regular(tmp_path / "f", 10) == b"x" * 10
        with pytest.raises(ValueError):
            _untrusted.read_regular(tmp_path / "f", 9)
        with pytest.raises(ValueError):
            _untrusted.read_regular(tmp_path / "f", 10, lambda st: "refused")
    assert len(os.listdir("/proc/self/fd")) == before
