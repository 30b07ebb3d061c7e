"""How far a disk hit reaches: at most 12 files of cudaload, none above the compile layer.

A reader who follows ``Program(src).compile()`` to the entry read from the cache folder should
find it in a few files, all at or below compiling: the current device's arch comes from the
bindings (bindings/thread_device.py), never from the launch layer or the package.  The recording
driver reports a device (compute capability 9.0), so ``compile()`` with no arch asks for it.
"""

from __future__ import annotations

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import scenario_json

MAX_FILES = 12
# What a disk hit may call into: the foundation (this folder's private modules and errors), the
# bindings and the compile layer.
BELOW_LAUNCH = ("compile/", "bindings/", "_", "errors.py", "lifetime.py")


def test_a_disk_hit_walks_few_files_and_none_above_compiling(recording_driver, tmp_path):
    env = {"CUDALOAD_LIBCUDA": recording_driver, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    assert scenario_json("disk_hit_walk", "fill", env=env) == [None, None]  # both compiled
    out = scenario_json("disk_hit_walk", "walk", env=env)
    assert out["cached"] == "disk" and out["arch"] == "sm_90", out  # the device's arch, from disk
    files = out["files"]
    assert len(files) <= MAX_FILES, files
    above = [f for f in files if not f.startswith(BELOW_LAUNCH) or f == "__init__.py"]
    assert above == [], files


def test_a_forked_child_does_not_take_its_parents_device_arch(recording_driver, tmp_path):
    # The arch is remembered per thread so that a compile reads it without a call; a forked
    # child must ask again (and is refused: CUDA cannot be used after fork).
    env = {"CUDALOAD_LIBCUDA": recording_driver, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    assert scenario_json("disk_hit_walk", "forked", env=env) == {"parent": "sm_90",
                                                                "child": "refused"}
