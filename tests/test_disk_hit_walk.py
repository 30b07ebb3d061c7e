"""How far a disk hit reaches: at most 13 files of cudaload in a process that compiled before,
18 in a fresh one (imports included), none above the compile layer, none only a miss needs.

A reader who follows ``Program(src).compile()`` to the entry read from the cache folder should
find it in a few files, all at or below compiling: the current device's arch comes from the
bindings (bindings/thread_device.py), never from the launch layer or the package.  The recording
driver reports a device (compute capability 9.0), so ``compile()`` with no arch asks for it.
"""

from __future__ import annotations

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import run_json, run_py, scenario_json

# The Program, its request, the choice of arch (program.py, request.py, plan.py, options.py,
# _prepare.py), the include check (includes/_directives.py), the toolchain (toolchain.py), the
# caches (cache/memory.py, cache/disk.py, _cache_folder.py) and the entry read (_untrusted.py,
# objectcode.py, _log.py).
MAX_FILES = 13
# What a disk hit may call into: the foundation (cudaload/_base/ and errors.py), the bindings and
# the compile layer.
BELOW_LAUNCH = ("compile/", "bindings/", "_base/", "errors.py")


def test_a_disk_hit_walks_few_files_and_none_above_compiling(recording_driver, tmp_path):
    env = {"CUDALOAD_LIBCUDA": recording_driver, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    assert scenario_json("disk_hit_walk", "fill", env=env) == [None, None]  # both compiled
    out = scenario_json("disk_hit_walk", "walk", env=env)
    assert out["cached"] == "disk" and out["arch"] == "sm_90", out  # the device's arch, from disk
    files = out["files"]
    assert len(files) <= MAX_FILES, files
    above = [f for f in files if not f.startswith(BELOW_LAUNCH) or f == "__init__.py"]
    assert above == [], files


# A disk hit in a fresh process, from compile(arch=90) to the ObjectCode, imports included: the
# files whose code runs (the Program's own modules, imported when it was made, count only where
# their code runs).  They are the API and the request (program.py, options.py, request.py,
# plan.py, _prepare.py's digest), the check that spares the include search (_directives.py),
# the toolchain's record (toolchain.py, _headers.py, _cache_folder.py, _untrusted.py, _log.py,
# lifetime.py), the caches (cache/__init__.py, disk.py, memory.py), the entry's bytes
# (objectcode.py) and the foundation folder's __init__.py.  (Before the request was one value,
# 22 files; before the size bounds' limits.py was left to a store, 19.)
MAX_FRESH_FILES = 18
# What only a miss needs: none of it is imported by a disk hit.
MISS_ONLY = ("cudaload.compile.build", "cudaload.compile.rebuild", "cudaload.bindings.nvrtc",
             "cudaload.bindings._loader", "cudaload.compile.includes._reads",
             "cudaload.compile.includes.search",
             "cudaload.compile.includes._option_files", "cudaload.compile.link._linker",
             "cudaload.compile.cache.writer", "cudaload.compile.cache.tiers",
             "cudaload.compile.cache.locks", "cudaload.compile.cache.claims",
             "cudaload._base._atomic", "cudaload._base._sigint", "_cffi_backend")


def test_a_disk_hit_in_a_fresh_process_reads_its_entry_through_few_files(tmp_path):
    env = {"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    assert scenario_json("disk_hit_walk", "fresh", "90", env=env)["cached"] is None  # compiled
    out = scenario_json("disk_hit_walk", "fresh", "90", env=env)
    assert out["cached"] == "disk", out
    assert len(out["files"]) <= MAX_FRESH_FILES, out["files"]
    assert [m for m in MISS_ONLY if m in out["imported"]] == [], out["imported"]


def test_a_forked_child_does_not_take_its_parents_device_arch(recording_driver, tmp_path):
    # The arch is remembered per thread so that a compile reads it without a call; a forked
    # child must ask again (and is refused: CUDA cannot be used after fork).
    env = {"CUDALOAD_LIBCUDA": recording_driver, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    assert scenario_json("disk_hit_walk", "forked", env=env) == {"parent": "sm_90",
                                                                "child": "refused"}


_FRESH = r"""
import sys
import cudaload
before = set(sys.modules)
obj = cudaload.Program('#include <cuda_fp16.h>\nextern "C" __global__ void k(__half *x) '
                       '{ x[0] = __float2half(VALUE); }').compile(arch=90)
new = sorted(set(sys.modules) - before)
import json
print(json.dumps({"cached": obj.cached, "modules": new}))
"""
# What a disk hit in a fresh process does without: the parsers (json, re and enum cost a first
# compile 3-5 ms), the loader's bindings and cffi (a hit loads no library), typing, struct (the
# entry's header is read with int.from_bytes: struct and _struct cost a hit 0.5-0.8 ms), and what
# only a miss or a report uses: the writer's thread and _queue, the read tiers, the atomic write,
# the folder's size bound.
NOT_FOR_A_HIT = ("json", "re", "enum", "cudaload.bindings._loader", "_cffi_backend",
                 "cudaload.compile.link._linker", "socket", "tempfile", "hashlib", "typing",
                 "cudaload.compile.cache.writer", "_queue", "cudaload.compile.cache.tiers",
                 "cudaload._base._atomic", "struct", "_struct", "cudaload.compile.cache.limits")
# What a first compile (a miss) does without, with the toolchain known from an earlier process
# and a cache folder of one machine: json (a claim's record is read and written only where
# machines share the folder), socket and _socket (the host name only a claim needs), tempfile,
# hashlib, threading (the trace folder, the hashes and the writer thread are made without them);
# re and enum (the include scan reads common directives with str methods, the miss's sweep of
# temporary files needs none of pruning's patterns, nor pruning), contextlib, functools,
# collections and types (the key's lock, the caches and the toolchain's record are plain classes,
# dicts and try blocks): together 10 ms of a fresh process on a 2-core machine.  Nor, for a
# program that includes only CUDA's headers and whose options name no file, the include search
# and the check of files options name; nor, with no size bound set, the bounds' limits.py.
NOT_FOR_A_MISS = ("json", "socket", "_socket", "tempfile", "hashlib", "threading",
                  "cudaload.compile.link._linker", "re", "enum", "contextlib", "functools",
                  "collections", "types", "cudaload.compile.cache.pruning",
                  "cudaload.compile.cache.tiers", "cudaload.compile.includes.search",
                  "cudaload.compile.includes._option_files", "cudaload.compile.cache.limits")


def test_a_fresh_process_imports_only_what_its_miss_or_disk_hit_uses(tmp_path):
    env = {"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    run_py(_FRESH.replace("VALUE", "1.0f"), env=env)  # toolchain.json written
    out = run_json(_FRESH.replace("VALUE", "2.0f"), env=env)
    assert out["cached"] is None, out  # compiled: NVRTC's wheel is here
    assert [m for m in NOT_FOR_A_MISS if m in out["modules"]] == [], out["modules"]
    out = run_json(_FRESH.replace("VALUE", "2.0f"), env=env)
    assert out["cached"] == "disk", out
    assert [m for m in NOT_FOR_A_HIT if m in out["modules"]] == [], out["modules"]


def test_a_first_compile_from_an_empty_cache_folder_imports_no_parser(tmp_path):
    # NVRTC and the header folders found first (no toolchain.json yet): the header folders'
    # releases are read with bytes methods, so this miss imports none of what one with the
    # toolchain recorded does without (re and enum alone cost it 7-9 ms).
    env = {"CUDALOAD_CACHE_DIR": str(tmp_path / "empty")}
    out = run_json(_FRESH.replace("VALUE", "3.0f"), env=env)
    assert out["cached"] is None, out
    assert [m for m in NOT_FOR_A_MISS if m in out["modules"]] == [], out["modules"]
