"""The ``cudaload`` loggers: DEBUG records for library loading, the toolchain and each compilation,
and no cost (not even ``import logging``) where no one asked for them.  Each scenario runs in a
fresh interpreter: which library is loaded, and whether logging is imported, are per process."""

from __future__ import annotations

import os

from tests._support import run_json, scenario_json

def test_a_compile_logs_nvrtc_the_toolchain_and_the_compilation(tmp_path):
    records = scenario_json("log_records", "compile_twice",
                            env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")},
                            unset=("CUDALOAD_LIBNVRTC",))
    assert {r["level"] for r in records} == {"DEBUG"}
    loads = [r for r in records if r["logger"] == "cudaload.loader"]
    assert [r["library"] for r in loads] == ["nvrtc"] and os.path.isfile(loads[0]["path"])
    assert loads[0]["path"] in loads[0]["text"]
    chosen = [r for r in records if r["logger"] == "cudaload.toolchain"]
    assert len(chosen) == 1 and loads[0]["path"] in chosen[0]["text"]
    assert "cudart" in chosen[0]["text"] and "cccl" in chosen[0]["text"]
    compiles = [r for r in records if r["logger"] == "cudaload.compile"]
    assert len(compiles) == 1
    key = compiles[0]["key"]
    assert len(key) == 64 and int(key, 16) >= 0 and key in compiles[0]["text"]


def test_loading_the_driver_logs_the_file_and_a_failure_logs_why(libcuda_535):
    loaded, = scenario_json("log_records", "driver_load", env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert loaded["library"] == "cuda" and loaded["path"] == libcuda_535
    assert "CUDALOAD_LIBCUDA" in loaded["text"]
    failed, = scenario_json("log_records", "driver_load",
                            env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert failed["library"] == "cuda" and failed["path"] is None
    assert "could not load cuda" in failed["text"] and "/nonexistent/libcuda.so.1" in failed["text"]


def test_without_logging_configured_cudaload_does_not_import_it(libcuda_535):
    result = run_json("""
        import json, sys
        import cudaload
        cudaload.status()
        print(json.dumps({"logging": "logging" in sys.modules,
                          "driver loaded": cudaload.bindings._loader.loaded("cuda") is not None}))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535, "CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"})
    assert result == {"logging": False, "driver loaded": True}


def test_a_recompilation_after_a_refusal_is_logged_with_its_compilation(tmp_path):
    records = scenario_json("log_records", "recompile_after_refusal",
                            env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache"),
          "CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"}, unset=("CUDALOAD_LIBNVRTC",))
    first, recompiling, second, kind = records
    assert first["key"] and second["key"] == first["key"] and kind == "cubin"
    assert recompiling["key"] is None
    assert "refused" in recompiling["text"] and "ptx" in recompiling["text"]
    assert "cubin for sm_90" in recompiling["text"]
