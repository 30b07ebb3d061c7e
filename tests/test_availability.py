"""is_available() and status(): never raise, and say what is wrong with a concrete next step."""

from __future__ import annotations

import json
import os

import pytest

from tests._fakelibs import (NO_DRIVER_SYMBOLS, build_shared_library,
                             no_symbols_library, one_device_driver, partial_driver,  # noqa: F401
                             text_file)  # (fixtures)
from tests._support import run_json, scenario_json

NO_CUDA = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1",
           "CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}

def report(env=None, unset=(), broken: str = "") -> dict:
    """status() in a fresh process; ``broken`` names what the scenario breaks first."""
    args = (broken,) if broken else ()
    return scenario_json("availability_reports", "report", *args, env=env, unset=unset)


def _assert_well_formed(rep: dict) -> None:
    assert set(rep) >= {"available", "driver", "nvrtc", "nvjitlink", "devices", "ptx_loadable",
                        "module_loading_mode", "problems"}
    assert set(rep["nvjitlink"]) == {"found", "refused", "path", "found_via", "cuda_major",
                                     "error"}
    assert set(rep["driver"]) >= {"found", "path", "found_via", "version", "cuinit", "error"}
    assert set(rep["nvrtc"]) >= {"found", "path", "found_via", "version", "supported_archs",
                                 "builtins", "header_dirs", "error"}
    for problem in rep["problems"]:
        assert set(problem) == {"what", "hint"}
        assert problem["what"].strip() and len(problem["hint"]) > 20
    json.dumps(rep)


def test_no_cuda_library_at_all():
    result = report(NO_CUDA)
    rep = result["report"]
    _assert_well_formed(rep)
    assert result["available"] is False and rep["available"] is False and result["cached"]
    assert rep["driver"]["found"] is False and rep["nvrtc"]["found"] is False
    assert rep["devices"] == [] and rep["ptx_loadable"] is None
    driver_problem, nvrtc_problem = rep["problems"]
    assert driver_problem["what"].startswith("libcuda not found")
    assert "/nonexistent/libcuda.so.1" in driver_problem["what"]
    assert "install the NVIDIA driver" in driver_problem["hint"]
    assert "CUDALOAD_LIBCUDA" in driver_problem["hint"]
    assert "pip install 'cudaload[nvrtc]'" in nvrtc_problem["hint"]
    assert "NOT available" in result["text"] and "driver   not found" in result["text"]
    assert driver_problem["hint"] in result["text"]


def test_driver_535_without_gpu_and_nvrtc_13(libcuda_535):
    result = report({"CUDALOAD_LIBCUDA": libcuda_535}, unset=("CUDALOAD_LIBNVRTC",))
    rep, text = result["report"], result["text"]
    _assert_well_formed(rep)
    assert result["available"] is False and rep["available"] is False
    drv = rep["driver"]
    assert drv["found"] and drv["path"] == libcuda_535 and drv["found_via"] == "CUDALOAD_LIBCUDA"
    assert drv["version"] == "12.2" and drv["cuinit"] == "CUDA_ERROR_NO_DEVICE"
    assert rep["devices"] == [] and rep["module_loading_mode"] is None
    nv = rep["nvrtc"]
    assert nv["found"] and nv["builtins"] is True and int(nv["version"].split(".")[0]) >= 13
    assert 90 in nv["supported_archs"] and nv["header_dirs"]["cudart"]
    assert rep["ptx_loadable"] is False
    whats = [p["what"] for p in rep["problems"]]
    assert any("CUDA_ERROR_NO_DEVICE" in w for w in whats)
    assert any(w.startswith(f"PTX from NVRTC {nv['version']} would not load") and "CUDA 12.2" in w
               for w in whats)
    assert "found: CUDA 12.2" in text and "cuInit: CUDA_ERROR_NO_DEVICE" in text
    assert "PTX from this NVRTC loads on this driver: NO" in text


def test_nvjitlink_is_reported_where_a_link_would_find_it():
    # Only Program(lto=True) needs it: found, it is described; missing, it is said so, with the
    # install that brings it, and is no problem of CUDA's.
    result = report(NO_CUDA, unset=("CUDALOAD_LIBNVJITLINK",))
    rep, text = result["report"], result["text"]
    _assert_well_formed(rep)
    section = rep["nvjitlink"]
    if not section["found"]:  # CI installs cudaload[nvrtc], which brings it
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"no nvJitLink: {section['error']}")
    assert os.path.basename(section["path"]).startswith("libnvJitLink.so")
    assert section["found_via"].startswith("site-packages") and section["cuda_major"] == 13
    assert f"nvjitlink of CUDA 13 at {section['path']}" in text
    missing = report({**NO_CUDA, "CUDALOAD_LIBNVJITLINK": "/nonexistent/libnvJitLink.so.13"})
    section = missing["report"]["nvjitlink"]
    assert section["found"] is False and section["refused"] is False
    assert "/nonexistent/libnvJitLink.so.13" in section["error"]
    assert len(missing["report"]["problems"]) == len(rep["problems"])  # not a problem
    assert ("nvjitlink not found: only Program(lto=True) needs it (pip install "
            "'cudaload[nvrtc]')") in missing["text"]


def test_an_nvjitlink_that_cannot_link_is_a_problem(text_file, tmp_path):
    # A file that is no library, and one of another CUDA major than NVRTC (it cannot link
    # NVRTC's LTO IR): each a problem with the step that mends it.
    not_a_library = report({**NO_CUDA, "CUDALOAD_LIBNVJITLINK": text_file})["report"]
    section = not_a_library["nvjitlink"]
    assert section["found"] is False and section["refused"] is True
    problem, = [p for p in not_a_library["problems"] if "libnvJitLink" in p["what"]]
    assert text_file in problem["what"] and "no ELF header" in problem["what"]
    assert "Program(lto=True) cannot link" in problem["what"]
    assert "CUDALOAD_LIBNVJITLINK" in problem["hint"]
    assert ("nvjitlink found but NOT USABLE (see problems): Program(lto=True) cannot link"
            in report({**NO_CUDA, "CUDALOAD_LIBNVJITLINK": text_file})["text"])
    older = build_shared_library(str(tmp_path), "libnvJitLink.so.12", NO_DRIVER_SYMBOLS)
    result = report({"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1",
                     "CUDALOAD_LIBNVJITLINK": older}, unset=("CUDALOAD_LIBNVRTC",))
    rep = result["report"]
    if not rep["nvrtc"]["found"]:
        pytest.skip("needs NVRTC, to compare its CUDA major")
    major, minor = rep["nvrtc"]["version"].split(".")
    assert rep["nvjitlink"]["found"] and rep["nvjitlink"]["cuda_major"] == 12
    problem, = [p for p in rep["problems"] if "nvJitLink" in p["what"]]
    assert problem["what"] == (f"nvJitLink at {older} is of CUDA 12, NVRTC of CUDA {major}: it "
                               "cannot link NVRTC's LTO IR, so Program(lto=True) fails")
    assert problem["hint"].startswith(f"pip install 'nvidia-nvjitlink>={major}.{minor},<"
                                      f"{int(major) + 1}'")


def test_an_nvjitlink_named_with_another_digit_leaves_the_report_whole(tmp_path):
    # "²" is a digit to str.isdigit() but not to int(): the report must keep its other sections.
    odd = build_shared_library(str(tmp_path), "libnvJitLink.so.\u00b2", NO_DRIVER_SYMBOLS)
    rep = report({"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1", "CUDALOAD_LIBNVJITLINK": odd},
                 unset=("CUDALOAD_LIBNVRTC",))["report"]
    _assert_well_formed(rep)
    assert rep["nvjitlink"]["found"] and rep["nvjitlink"]["cuda_major"] is None
    assert not any("raised" in p["what"] for p in rep["problems"]), rep["problems"]


def test_a_refresh_finds_an_nvjitlink_installed_since(tmp_path):
    first = build_shared_library(str(tmp_path), "libnvJitLink.so.12", NO_DRIVER_SYMBOLS)
    (tmp_path / "new").mkdir()
    second = build_shared_library(str(tmp_path / "new"), "libnvJitLink.so.13", NO_DRIVER_SYMBOLS)
    paths = scenario_json("availability_reports", "refresh_finds_nvjitlink_again", first, second,
                          env=NO_CUDA, unset=("CUDALOAD_LIBNVJITLINK",))
    assert paths == [first, first, second]


def test_a_driver_as_new_as_nvrtc_can_load_its_ptx():
    result = scenario_json("availability_reports", "ptx_loadable")
    assert result == [True, True, False, 1]


def test_broken_driver_files_are_problems_not_crashes(text_file, no_symbols_library, tmp_path):
    for path, expected in ((text_file, "could not be loaded"), (str(tmp_path), "is a directory"),
                           (no_symbols_library, "lacks cuInit")):
        result = report({**NO_CUDA, "CUDALOAD_LIBCUDA": path})
        rep = result["report"]
        _assert_well_formed(rep)
        assert result["available"] is False and rep["driver"]["found"] is False
        assert expected in rep["problems"][0]["what"]


def test_driver_missing_entry_points_is_a_problem_with_a_hint(partial_driver):
    result = report({**NO_CUDA, "CUDALOAD_LIBCUDA": partial_driver})
    rep = result["report"]
    _assert_well_formed(rep)
    assert result["available"] is False
    assert rep["driver"]["version"] == "12.0" and rep["driver"]["cuinit"] == "CUDA_SUCCESS"
    missing = [p for p in rep["problems"] if "cuDeviceGetCount" in p["what"]]
    assert missing and "upgrade the NVIDIA driver" in missing[0]["hint"]


def test_an_unexpected_exception_in_a_section_is_recorded():
    # CUDALOAD_CACHE=0: no remembered toolchain, so the probe really asks NVRTC.
    rep = report(NO_CUDA | {"CUDALOAD_LIBNVRTC": "", "CUDALOAD_CACHE": "0"},
                 unset=("CUDALOAD_LIBNVRTC",), broken="nvrtc_version_raises")["report"]
    assert rep["nvrtc"]["found"] is True and rep["nvrtc"]["error"] == "ValueError: boom"
    assert any("ValueError: boom" in p["what"] and "report" in p["hint"] for p in rep["problems"])


def test_an_unexpected_exception_anywhere_still_gives_a_report():
    result = scenario_json("availability_reports", "probe_raises")
    available, problems = result
    assert available is False and "probe exploded" in problems[0]["what"]


def test_is_available_never_raises_even_if_the_driver_module_breaks():
    result = scenario_json("availability_reports", "driver_init_raises")
    assert result is False


def test_refresh_probes_again():
    result = run_json("""
        import json, cudaload
        first = cudaload.status()
        again = cudaload.status(refresh=True)
        print(json.dumps([first is again, first.as_dict() == again.as_dict(),
                          again is cudaload.status(), repr(again)]))
    """, env=NO_CUDA)
    assert result == [False, True, True, "<Status available=False problems=2>"]


def test_a_broken_installation_without_cffi_is_reported():
    rep = report(NO_CUDA, broken="no_cffi")["report"]
    assert rep["available"] is False
    assert any("_cffi_backend" in p["what"] and "reinstall cudaload" in p["hint"]
               for p in rep["problems"])


def test_repeated_report_uses_the_remembered_toolchain(tmp_path):
    """After one compile, a fresh process reports NVRTC without mapping it or importing pathfinder."""
    env = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1", "CUDALOAD_CACHE_DIR": str(tmp_path)}
    first = report(env, unset=("CUDALOAD_LIBNVRTC",))["report"]["nvrtc"]
    second = scenario_json("availability_reports", "remembered_report", env=env,
                           unset=("CUDALOAD_LIBNVRTC",))
    assert first["found"] and first["builtins"] is True
    assert second["mapped"] is False and second["pathfinder"] is False
    rep = second["rep"]
    assert rep["found"] and rep["builtins"] is True
    for key in ("path", "version", "supported_archs", "header_dirs", "found_via"):
        assert rep[key] == first[key], key


def test_each_device_is_described(one_device_driver):
    result = report({**NO_CUDA, "CUDALOAD_LIBCUDA": one_device_driver})
    rep = result["report"]
    _assert_well_formed(rep)
    assert result["available"] is True and rep["driver"]["cuinit"] == "CUDA_SUCCESS"
    assert rep["devices"] == [{"index": 0, "name": "Fake GPU", "compute_capability": [8, 6],
                               "total_memory": 8 << 30, "multiprocessors": 84}]
    assert rep["module_loading_mode"] == "lazy"
    assert "Fake GPU" in result["text"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_an_override_naming_a_pipe_is_refused_without_blocking(tmp_path):
    pipe = tmp_path / "libcuda.so.1"
    os.mkfifo(pipe)  # opening it to read would wait for a writer forever
    for variable in ("CUDALOAD_LIBCUDA", "CUDALOAD_LIBNVRTC"):
        result = report({**NO_CUDA, variable: str(pipe)})
        rep = result["report"]
        _assert_well_formed(rep)
        section = rep["driver" if variable == "CUDALOAD_LIBCUDA" else "nvrtc"]
        assert section["found"] is False and section["refused"] is True
        assert "is a special file" in section["error"]
        assert "found but NOT USABLE" in result["text"]


def test_refresh_retries_a_library_that_failed_to_load(libcuda_535):
    result = scenario_json("availability_reports", "refresh_retries", libcuda_535, env=NO_CUDA)
    assert result[:4] == [False, False, True, "12.2"]
    assert "CUDA_ERROR_NO_DEVICE" in result[4]


def test_a_problems_hint_is_the_errors_hint_field(one_device_driver):
    # A DriverError joins its hint with "; ", not " Next step: ": only the field gives it.
    rep = report({**NO_CUDA, "CUDALOAD_LIBCUDA": one_device_driver},
                 broken="device_count_refused")["report"]
    problem, = [p for p in rep["problems"] if "cuDeviceGetCount" in p["what"]]
    assert problem == {"what": "cuDeviceGetCount failed: CUDA_ERROR_UNKNOWN (999): unknown",
                       "hint": "reseat the GPU in its slot"}


_STATUS_WITHOUT_THE_CACHE = """
import json, sys
{before}
import cudaload
rep = cudaload.status().as_dict()
print(json.dumps({{"rep": rep["nvrtc"], "text": str(cudaload.status()),
                  "cache_modules": sorted(m for m in sys.modules
                                          if m == "cudaload.compile.cache"
                                          or m.startswith("cudaload.compile.cache."))}}))
"""


def test_the_report_reads_the_toolchain_record_without_the_kernel_cache(tmp_path):
    """status() finds NVRTC, records it in toolchain.json and, in the next process, reads it back,
    importing no module of the kernel cache either time; what it reports is what a process that
    has the kernel cache loaded reports."""
    env = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1", "CUDALOAD_CACHE_DIR": str(tmp_path)}
    unset = ("CUDALOAD_LIBNVRTC",)
    probe = _STATUS_WITHOUT_THE_CACHE
    recorded = run_json(probe.format(before=""), env=env, unset=unset)  # NVRTC searched for
    assert (tmp_path / "toolchain.json").is_file()
    remembered = run_json(probe.format(before=""), env=env, unset=unset)  # read from the record
    with_cache = run_json(probe.format(before="from cudaload.compile import cache; cache.default()"),
                          env=env, unset=unset)
    assert recorded["cache_modules"] == remembered["cache_modules"] == []
    assert "cudaload.compile.cache.disk" in with_cache["cache_modules"]  # the probe can see one
    assert recorded["rep"]["found"] and recorded["rep"]["version"]
    assert recorded["rep"] == remembered["rep"] == with_cache["rep"]
    assert recorded["text"] == remembered["text"] == with_cache["text"]
