"""Finding and dlopening libraries, each scenario in a fresh interpreter (dlopen is per process)."""

from __future__ import annotations

import json
import os

import pytest

from tests._envs import hidden_env
from tests._fakelibs import no_symbols_library, partial_driver, text_file  # noqa: F401  (fixtures)
from tests._support import ROOT, run_json, run_py, scenario_json

NOWHERE = "/nonexistent/libcuda.so.1"

def load_twice(which: str = "driver", **env) -> list:
    """What loading ``which`` twice in a fresh process loaded or raised, each time."""
    return scenario_json("library_loads", "load_twice", which, env=env)


def test_libcuda_path_that_does_not_exist_is_not_found():
    first, second = load_twice(CUDALOAD_LIBCUDA=NOWHERE)
    assert first["type"] == "DriverNotFoundError"  # a LibraryNotFoundError and unavailable
    assert first["library"] == "cuda" and first["oserror"]
    assert first["tried"] == [f"{NOWHERE} (CUDALOAD_LIBCUDA): not found"]
    assert "CUDALOAD_LIBCUDA" in first["message"] and "Next step" in first["message"]
    assert second == first  # the failure is remembered, not retried


def test_libcuda_that_is_not_a_shared_library_fails_to_load(text_file):
    first, _ = load_twice(CUDALOAD_LIBCUDA=text_file)
    assert first["type"] == "DriverLoadError"
    assert first["tried"][0].startswith(f"{text_file} (CUDALOAD_LIBCUDA): ")
    assert "found but could not be loaded" in first["message"]


def test_libcuda_that_is_a_directory_fails_to_load(tmp_path):
    first, _ = load_twice(CUDALOAD_LIBCUDA=str(tmp_path))
    assert first["type"] == "DriverLoadError"
    assert "is a directory" in first["tried"][0]
    assert "Next step: check that the file is NVIDIA's libcuda.so.1" in first["message"]


def test_each_way_of_failing_names_its_own_next_step(tmp_path, no_symbols_library):
    refused, _ = load_twice("nvrtc", CUDALOAD_LIBNVRTC=str(tmp_path))
    assert refused["type"] == "LibraryLoadError"
    assert "Next step: check the file with `ldd PATH`" in refused["message"]
    assert "pip install" not in refused["message"]  # a file is there: installing is no answer
    wrong, _ = load_twice("nvrtc", CUDALOAD_LIBNVRTC=no_symbols_library)
    assert wrong["type"] == "MissingSymbolError" and "CUDA 12.0 or newer" in wrong["message"]
    absent, _ = load_twice("nvrtc", CUDALOAD_LIBNVRTC="/nonexistent/libnvrtc.so")
    assert absent["type"] == "LibraryNotFoundError" and "pip install" in absent["message"]


def test_shared_library_without_driver_symbols_is_missing_symbol(no_symbols_library):
    first, second = load_twice(CUDALOAD_LIBCUDA=no_symbols_library)
    assert first["type"] == "NotADriverError"  # a MissingSymbolError and unavailable
    assert first["symbol"] == "cuInit" and first["library"] == "cuda"
    assert no_symbols_library in first["message"]
    assert second == first


def test_missing_optional_symbol_fails_only_the_call_that_needs_it(partial_driver):
    result = scenario_json("library_loads", "optional_symbol",
                           env={"CUDALOAD_LIBCUDA": partial_driver})
    assert result == {"version": 12000, "proc_address": False, "rc": 0, "value": 12000,
                      "missing": ["MissingSymbolError", "cuMemAlloc_v2", True], "after": 0}


def test_a_missing_nvrtc_does_not_affect_the_driver(partial_driver):
    result = scenario_json("library_loads", "nvrtc_then_driver",
                           env={"CUDALOAD_LIBCUDA": partial_driver,
                                "CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"})
    assert result == {"nvrtc": "LibraryNotFoundError", "driver": "CUDALOAD_LIBCUDA"}


def test_libnvrtc_path_that_does_not_exist_is_not_found():
    first, _ = load_twice("nvrtc", CUDALOAD_LIBNVRTC="/nonexistent/libnvrtc.so")
    assert first["type"] == "LibraryNotFoundError" and first["library"] == "nvrtc"
    assert "pip install" in first["message"]


def test_nvrtc_from_the_wheel_is_found_where_pathfinder_finds_it():
    # in the wheel, as cuda.pathfinder finds it, without importing it (bindings/_sites.py;
    # tests/test_sites.py compares the answers)
    result = scenario_json("library_loads", "nvrtc_found", unset=("CUDALOAD_LIBNVRTC",))
    assert result["via"] == "site-packages, where cuda.pathfinder looks first"
    assert "libnvrtc" in result["path"] and result["same"]


def test_default_driver_search_never_tries_the_link_stub_first():
    result = run_json("""
        import json
        from cudaload.bindings import _loader
        print(json.dumps(_loader.driver_candidates()))
    """, unset=("CUDALOAD_LIBCUDA",))
    names = [path for path, _how in result]
    assert names[0] == "libcuda.so.1"
    assert "libcuda.so" not in names
    assert "/usr/lib/wsl/lib/libcuda.so.1" in names


def test_concurrent_first_use_loads_once():
    result = scenario_json("library_loads", "at_once", "nvrtc", unset=("CUDALOAD_LIBNVRTC",))
    assert result == {"n": 16, "distinct": 1, "types": ["Library"]}


def test_concurrent_failures_share_one_remembered_error():
    result = scenario_json("library_loads", "at_once", "driver", env={"CUDALOAD_LIBCUDA": NOWHERE})
    assert result == {"n": 16, "distinct": 1, "types": ["DriverNotFoundError"]}


def _bare_path(folder) -> str:
    """A PYTHONPATH of cuda.pathfinder and cffi alone (linked from the test venv into ``folder``,
    the ``cuda`` namespace holding only ``pathfinder``), then the repository: no NVIDIA wheel."""
    import _cffi_backend
    import cffi
    import cuda.pathfinder
    import pycparser

    os.makedirs(folder / "cuda")
    os.symlink(os.path.dirname(cuda.pathfinder.__file__), folder / "cuda" / "pathfinder")
    for module in (cffi, pycparser):
        os.symlink(os.path.dirname(module.__file__), folder / module.__name__)
    os.symlink(_cffi_backend.__file__, folder / os.path.basename(_cffi_backend.__file__))
    return os.pathsep.join([str(folder), ROOT])


def test_nvrtc_that_cuda_pathfinder_cannot_find_is_named_with_each_place_searched_once(tmp_path):
    # cuda.pathfinder lists one search per search mode, each the same place ("No such file:
    # libnvrtc.so.13 or libnvrtc.so.12, No such file: libnvrtc.so.13 or libnvrtc.so.12")
    _by, env = hidden_env()
    paths = [p for p in (env.pop("PYTHONPATH", None), _bare_path(tmp_path / "path")) if p]
    proc = run_py("""
        import importlib.util, json
        if importlib.util.find_spec("sitecustomize"):  # hidden_env's, which -S does not import
            import sitecustomize
        import cudaload
        try:
            cudaload.Program('__global__ void k(){}').compile(arch=90)
        except Exception as err:
            print(json.dumps([type(err).__name__, str(err)]))
        else:
            print(json.dumps(["compiled", ""]))
    """, flags=("-S",), unset=[k for k, v in env.items() if v is None] + ["CUDALOAD_LIBNVRTC"],
        env={"PYTHONPATH": os.pathsep.join(paths),
             "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    kind, message = json.loads(proc.stdout.strip().splitlines()[-1])
    if kind == "compiled":
        pytest.skip("an NVRTC outside the wheels is visible here")
    assert kind == "LibraryNotFoundError", message
    assert "not found by cuda.pathfinder" in message
    assert message.count("No such file: libnvrtc.so.13 or libnvrtc.so.12") == 1, message
