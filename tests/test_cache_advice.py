"""The next step cudaload gives for a kernel cache folder it does not trust, such as /tmp: a new
private folder of the user's own, never a ``chown``/``chmod`` of a folder others use (as root,
that advice applied to /tmp breaks the machine)."""

from __future__ import annotations

from tests._support import run_json
from tests.test_cli import cli

SHARED = "/tmp"  # world-writable, sticky: every machine has it


def test_the_warning_for_a_shared_folder_suggests_a_private_one(libcuda_535):
    out = run_json("""
        import json, warnings
        import cudaload
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cudaload.Program('extern "C" __global__ void k(int *x) { *x = 1; }').compile(arch=90)
        print(json.dumps([str(w.message) for w in caught
                          if type(w.message).__name__ == "CacheWarning"]))
    """, env={"CUDALOAD_CACHE_DIR": SHARED, "CUDALOAD_LIBCUDA": libcuda_535},
        unset=("CUDALOAD_LIBNVRTC",))
    assert len(out) == 1, out
    assert f"kernel cache folder {SHARED} is not used" in out[0]
    assert "set CUDALOAD_CACHE_DIR to a new folder of your own" in out[0]
    assert "chown" not in out[0] and "chmod 700" not in out[0], out[0]


def test_cache_clear_of_a_shared_folder_suggests_a_private_one():
    proc = cli("cache", "clear", env={"CUDALOAD_CACHE_DIR": SHARED})
    assert proc.returncode != 0, proc.stdout
    assert "set CUDALOAD_CACHE_DIR to a new folder of your own" in proc.stderr, proc.stderr
    assert "chown" not in proc.stderr and "chmod 700" not in proc.stderr


def test_a_cache_setting_that_is_neither_on_nor_off_is_warned_about(libcuda_535):
    out = run_json("""
        import json, warnings
        import cudaload
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            obj = cudaload.Program('extern "C" __global__ void k(int *x) { *x = 3; }')
            obj.compile(arch=90)
        print(json.dumps([str(w.message) for w in caught
                          if type(w.message).__name__ == "CacheWarning"]
                         + [w.filename for w in caught]))
    """, env={"CUDALOAD_CACHE": "maybe", "CUDALOAD_LIBCUDA": libcuda_535},
        unset=("CUDALOAD_LIBNVRTC",))
    assert len(out) == 2, out
    assert "CUDALOAD_CACHE='maybe' is neither on" in out[0]
    assert out[1] == "<string>", out  # the caller's line, not cudaload's own source
    assert "set CUDALOAD_CACHE=1 or CUDALOAD_CACHE=0" in out[0]
