"""`cudaload check-wheel --import`: a fresh environment with only the wheel and its
dependencies, imports there without a driver and with a driver but no GPU, and how what the
import did is judged; the driver library the check uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cudaload.wheelcheck import environments, install
from tests import _wheels
from tests._support import ROOT
from tests.test_wheelcheck import check_wheel, ext_wheel, one_line_error

PROBE = os.path.join(ROOT, "cudaload", "wheelcheck", "_probe.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _wheels.extensions(tmp_path_factory.mktemp("extensions"))


def test_imports_in_a_fresh_environment_pass_clean_wheels_and_fail_linked_ones(built, tmp_path,
                                                                              libcuda_535):
    env = {"CUDALOAD_TEST_LIBCUDA": libcuda_535}
    good = check_wheel(ext_wheel(tmp_path, "goodpkg", built["good"]), "--import", "goodpkg",
                       "--json", env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    runs = json.loads(good.stdout)["imports"]
    assert [(r["mode"], r["ok"], r["driver"], r["installed"]) for r in runs] == [
        ("no CUDA driver", True, None, ["goodpkg 1.0"]),
        ("a CUDA driver but no GPU", True, libcuda_535, ["goodpkg 1.0"])]
    assert "cudaload is not installed with the wheel" in runs[0]["notes"][-1]
    bad = check_wheel(ext_wheel(tmp_path, "badpkg", built["bad"]), "--import", "badpkg", env=env)
    assert bad.returncode == 1
    fails = [line for line in bad.stdout.splitlines() if line.startswith("FAIL import")]
    assert fails == [f"FAIL import badpkg ({mode}) failed: ImportError: libcudart.so.12: cannot "
                     "open shared object file: No such file or directory"
                     for mode in ("no CUDA driver", "a CUDA driver but no GPU")]


def test_no_skip_fails_the_import_that_had_no_driver_to_run_with(built, tmp_path):
    wheel = ext_wheel(tmp_path, "goodpkg", built["good"])
    env = {"CUDALOAD_TEST_LIBCUDA": str(tmp_path / "missing" / "libcuda.so.1")}
    skipped = check_wheel(wheel, "--import", "goodpkg", env=env)
    assert skipped.returncode == 0 and "import with a CUDA driver but no GPU: skipped" \
        in skipped.stdout, skipped.stdout
    strict = check_wheel(wheel, "--import", "goodpkg", "--no-skip", env=env)
    assert strict.returncode == 1, strict.stdout
    assert ("FAIL the import with a CUDA driver but no GPU was skipped (no driver library: "
            "export CUDALOAD_TEST_LIBCUDA=\"$(cudaload fetch-libcuda)\"") in strict.stdout
    assert "CUDALOAD_TEST_LIBCUDA names" in strict.stdout  # and why there was none
    assert "--no-skip makes that a failure" in strict.stdout


def test_a_missing_with_wheel_is_named_not_the_wheel_checked(tmp_path):
    wheel = _wheels.write_wheel(tmp_path, "plainpkg", {"plainpkg/__init__.py": b""})
    missing = tmp_path / "dist" / "cudaload-0.0-py3-none-any.whl"
    line = one_line_error(check_wheel(wheel, "--import", "plainpkg", "--with", missing),
                          f"--with {missing}: no such file; give the path of a built wheel")
    assert "pip could not install" not in line


def test_a_dependency_not_on_the_index_says_to_pass_its_wheel(tmp_path):
    wheel = _wheels.write_wheel(tmp_path, "needy", {"needy/__init__.py": b""},
                                requires=["cudaload-test-nowhere-dist"])
    one_line_error(check_wheel(wheel, "--import", "needy"), f"{wheel}: pip could not install it",
                   "cudaload-test-nowhere-dist",
                   "next step: pass that dependency's wheel with --with WHEEL")


def test_a_wheel_that_cannot_be_installed_is_one_line(tmp_path):
    wheel = _wheels.write_wheel(tmp_path, "future", {"future/__init__.py": b""},
                                requires_python=">=9")
    one_line_error(check_wheel(wheel, "--import", "future"), f"{wheel}: pip could not install "
                   "it: Package 'future' requires a different Python")
    assert json.loads(check_wheel(wheel, "--json").stdout)["ok"] is True  # nothing to install


def probe(env: dict, names: list[str]) -> dict:
    """What _probe.py sees in this interpreter, with the checkout's cudaload."""
    proc = subprocess.run([sys.executable, PROBE, json.dumps(names)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT,
                          env={**env, "PYTHONPATH": ROOT})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_probe_imports_before_asking_cudaload(tmp_path, libcuda_535):
    seen = probe(environments.no_driver_env(os.environ, str(tmp_path)), ["cudaload"])
    assert seen["imports"][0] == {"name": "cudaload",
                                  "file": os.path.join(ROOT, "cudaload", "__init__.py")}
    assert not [p for p in seen["mapped"] if "libcuda" in p or "libnvrtc" in p]
    assert seen["status"]["available"] is False
    assert seen["status"]["driver"]["found"] is False and "libcuda not found" in \
        seen["status"]["problems"][0]["what"]
    judged = install._judge(seen, ["cudaload"], install.NO_DRIVER, None)
    # Imported from the checkout, not from an environment the wheel was installed into.
    assert judged["failures"] == [f"import cudaload (no CUDA driver) took {ROOT}/cudaload/"
                                  "__init__.py, not the copy installed from the wheel"]
    seen = probe(environments.without_gpu_env(os.environ, libcuda_535), ["cudaload"])
    assert seen["status"]["driver"]["found"] and "CUDA_ERROR_NO_DEVICE" in seen["status"][
        "driver"]["error"]
    seen["prefix"] = ROOT
    judged = install._judge(seen, ["cudaload"], install.WITHOUT_GPU, libcuda_535)
    assert judged["ok"] and judged["reason"].startswith("cuInit failed: CUDA_ERROR_NO_DEVICE")


def seen_(driver=None, **changes) -> dict:
    """What the probe says of a good wheel in the process without driver (``driver`` None) or
    with ``driver``, changed by ``changes``."""
    what = "cuInit failed: CUDA_ERROR_NO_DEVICE" if driver else "libcuda not found"
    base = {"prefix": "/env", "installed": ["pkg 1.0", "pip 24.0"],
            "imports": [{"name": "pkg", "file": "/env/lib/pkg/__init__.py"}], "mapped": [],
            "status": {"file": "/env/lib/cudaload/__init__.py", "available": False,
                       "driver": {"found": bool(driver), "error": what},
                       "problems": [{"what": what, "hint": "install it"}]}}
    return {**base, **changes}


@pytest.mark.parametrize("changes, driver, failure", [
    ({}, None, None),
    ({"imports": [{"name": "pkg", "error": "ImportError: libcublas.so.12: cannot open"}]}, None,
     "import pkg (m) failed: ImportError: libcublas.so.12: cannot open"),
    ({"mapped": ["/usr/lib/libc.so.6", "/env/lib/nvidia/libnvrtc.so.13"]}, None,
     "import pkg (m) mapped CUDA libraries: /env/lib/nvidia/libnvrtc.so.13"),
    ({"mapped": ["/drv/libcuda.so.535.1", "/drv/libnvidia-ml.so.1"]}, "/drv/libcuda.so.1", None),
    ({"mapped": ["/drv/libcudart.so.12"]}, "/drv/libcuda.so.1",
     "import pkg (m) mapped CUDA libraries: /drv/libcudart.so.12"),
    ({"mapped": ["/other/libcuda.so.1"]}, "/drv/libcuda.so.1",
     "import pkg (m) mapped CUDA libraries: /other/libcuda.so.1"),
    ({"status": {"available": True, "driver": {"found": True}, "problems": []}}, None,
     "cudaload.status() (m) says CUDA is available"),
    ({"status": {"available": False, "driver": {"found": False}, "problems": [{"what": "x"}]}},
     None, "cudaload.status() (m) says CUDA is not available without a reason and a next step "
     "for each problem: [{'what': 'x'}]"),
    ({"status": {"error": "AttributeError: no status"}}, None,
     "cudaload.status() (m) raised AttributeError: no status"),
    ({"status": {"available": False, "driver": {"found": False, "error": "refused: 32-bit"},
                 "problems": [{"what": "refused", "hint": "h"}]}}, "/drv/libcuda.so.1",
     "cudaload (m) did not load the driver library: refused: 32-bit"),
])
def test_what_the_import_did_is_judged(changes, driver, failure):
    judged = install._judge(seen_(driver, **changes), ["pkg"], "m", driver)
    assert judged["failures"] == ([failure] if failure else [])
    assert judged["ok"] is (failure is None)
    assert judged["installed"] == ["pkg 1.0"]


def test_a_visible_gpu_or_no_cudaload_is_said_not_failed():
    gpu = seen_(status={"available": True, "driver": {"found": True}, "problems": []})
    judged = install._judge(gpu, ["pkg"], "m", "/drv/libcuda.so.1")
    assert judged["ok"] and "a GPU is visible" in judged["skipped"]
    alone = seen_(mapped=None)
    del alone["status"]
    judged = install._judge(alone, ["pkg"], "m", None)
    assert judged["ok"] and judged["notes"] == [
        "the libraries mapped by the import were not listed (no /proc/self/maps)",
        "cudaload is not installed with the wheel: cudaload.status() was not asked"]


def test_the_driver_library_comes_from_the_environment_first(monkeypatch, tmp_path, libcuda_535):
    monkeypatch.setenv("CUDALOAD_TEST_LIBCUDA", libcuda_535)
    monkeypatch.setenv("CUDALOAD_LIBCUDA", "/elsewhere/libcuda.so.1")
    assert environments.find_driver() == (libcuda_535, "CUDALOAD_TEST_LIBCUDA")
    monkeypatch.delenv("CUDALOAD_TEST_LIBCUDA")
    assert environments.find_driver() == (None, "CUDALOAD_LIBCUDA names /elsewhere/libcuda.so.1, "
                                                "which is not a file")
    monkeypatch.delenv("CUDALOAD_LIBCUDA")
    environments._machine_driver.cache_clear()
    path, how = environments.find_driver()
    environments._machine_driver.cache_clear()
    # This machine's own driver, as cudaload finds it, or why there is none.
    assert (path is not None and os.path.isfile(path) and how == "found by cudaload on this "
            "machine") or (path is None and "libcuda not found" in how)
