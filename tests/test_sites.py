"""bindings/_sites.py: NVRTC, nvJitLink and the CUDA headers found in the wheels as cuda.pathfinder
finds them, without importing it; the same answers as cuda.pathfinder's, or none."""

from __future__ import annotations

import pytest

from tests._support import run_json


def test_the_same_libraries_and_header_folders_as_cuda_pathfinder():
    got = run_json("""
        import json, os, sys
        from cudaload.bindings import _sites
        mine = {"nvrtc": _sites.library("nvrtc"), "nvjitlink": _sites.library("nvjitlink"),
                "cudart": _sites.header_folder("cudart"), "cccl": _sites.header_folder("cccl")}
        imported = "cuda.pathfinder" in sys.modules
        from cuda import pathfinder
        theirs = {"nvrtc": pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path,
                  "nvjitlink": pathfinder.load_nvidia_dynamic_lib("nvJitLink").abs_path,
                  "cudart": pathfinder.find_nvidia_header_directory("cudart"),
                  "cccl": pathfinder.find_nvidia_header_directory("cccl")}
        theirs = {k: v and os.path.realpath(v) for k, v in theirs.items()}
        for k in ("nvrtc", "nvjitlink"):
            mine[k] = mine[k] and os.path.realpath(mine[k])
        print(json.dumps({"mine": mine, "theirs": theirs, "imported": imported}))
    """, unset=("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK"))
    assert got["imported"] is False
    assert got["mine"]["nvrtc"], "the test environment has the nvidia-cuda-nvrtc wheel"
    assert got["mine"]["nvjitlink"], "the test environment has the nvidia-nvjitlink wheel"
    assert got["mine"] == got["theirs"]


@pytest.mark.parametrize("name", ["nvrtc", "nvjitlink"])
def test_nothing_is_answered_when_the_library_is_loaded_already(name):
    got = run_json(f"""
        import json
        from cudaload.bindings import _loader, _sites
        before = _sites.library({name!r})
        _loader.{name}()
        print(json.dumps([before is not None, _sites.library({name!r}), _sites.library("nvrtc"
            if {name!r} == "nvjitlink" else "nvjitlink") is not None]))
    """, unset=("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK"))
    assert got == [True, None, True]  # the other library is still found


def test_nothing_is_answered_without_a_wheel(monkeypatch):
    from cudaload.bindings import _sites

    monkeypatch.setattr(_sites, "site_folders", lambda: [])
    assert _sites.library("nvrtc") is None and _sites.library("nvjitlink") is None
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
