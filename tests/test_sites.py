"""bindings/_sites.py: NVRTC and the CUDA headers found in the wheels as cuda.pathfinder finds
them, without importing it; the same answers as cuda.pathfinder's, or none."""

from __future__ import annotations

import pytest

from tests.conftest import run_json


def test_the_same_nvrtc_and_header_folders_as_cuda_pathfinder():
    got = run_json("""
        import json, os, sys
        from cudaload.bindings import _sites
        mine = {"nvrtc": _sites.nvrtc(), "cudart": _sites.header_folder("cudart"),
                "cccl": _sites.header_folder("cccl")}
        imported = "cuda.pathfinder" in sys.modules
        from cuda import pathfinder
        theirs = {"nvrtc": pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path,
                  "cudart": pathfinder.find_nvidia_header_directory("cudart"),
                  "cccl": pathfinder.find_nvidia_header_directory("cccl")}
        theirs = {k: v and os.path.realpath(v) for k, v in theirs.items()}
        mine["nvrtc"] = mine["nvrtc"] and os.path.realpath(mine["nvrtc"])
        print(json.dumps({"mine": mine, "theirs": theirs, "imported": imported}))
    """, unset=("CUDALOAD_LIBNVRTC",))
    assert got["imported"] is False
    assert got["mine"]["nvrtc"], "the test environment has the nvidia-cuda-nvrtc wheel"
    assert got["mine"] == got["theirs"]


def test_nothing_is_answered_when_a_libnvrtc_is_loaded_already():
    got = run_json("""
        import json
        from cudaload.bindings import _loader, _sites
        before = _sites.nvrtc()
        _loader.nvrtc()
        print(json.dumps([before is not None, _sites.nvrtc()]))
    """, unset=("CUDALOAD_LIBNVRTC",))
    assert got == [True, None]


def test_nothing_is_answered_without_a_wheel(monkeypatch):
    from cudaload.bindings import _sites

    monkeypatch.setattr(_sites, "site_folders", lambda: [])
    assert _sites.nvrtc() is None
    assert _sites.header_folder("cudart") is None and _sites.header_folder("cccl") is None


@pytest.mark.parametrize("venv, expected", [(True, ["a", "user", "b"]), (False, ["user", "a", "b"])])
def test_the_user_site_folder_comes_where_pathfinder_puts_it(monkeypatch, venv, expected):
    import site
    import sys

    from cudaload.bindings import _sites

    monkeypatch.setattr(site, "getsitepackages", lambda: ["a", "b"])
    monkeypatch.setattr(site, "getusersitepackages", lambda: "user")
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(sys, "base_prefix", sys.prefix + ("-base" if venv else ""))
    assert _sites.site_folders() == expected
