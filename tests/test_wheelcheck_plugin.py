"""The pytest plugin (fixtures no_cuda and cuda_without_gpu) and the process they run code in:
results and exceptions come back, what cannot be sent is refused with the reason, the plugin
does nothing to a suite that does not ask, and the example host package's tests use it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cudaload.wheelcheck.environments import CudaProcess, no_driver_env, without_gpu_env
from tests._support import ROOT

PLUGIN = ["-p", "no:cudaload", "-p", "cudaload.wheelcheck.pytest_plugin"]  # entry point or not


def driver_seen() -> dict:
    """In the child: what cudaload says of the driver, and what the process is."""
    import cudaload

    driver = cudaload.status().as_dict()["driver"]
    return {"found": driver["found"], "error": driver["error"], "pid": os.getpid(),
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}


class ChildError(Exception):
    pass


def raises() -> None:
    raise ChildError("raised in the child")


def exits() -> None:
    os._exit(3)


def unsendable():
    return lambda: None


def test_a_function_runs_in_a_fresh_process_without_a_driver(tmp_path):
    seen = CudaProcess("no driver", no_driver_env(os.environ, str(tmp_path)))(driver_seen)
    assert seen["pid"] != os.getpid() and seen["visible"] == ""
    assert seen["found"] is False and "libcuda not found" in seen["error"]
    assert str(tmp_path / "no-cuda-driver" / "libcuda.so.1") in seen["error"]


def test_a_function_runs_with_the_driver_and_no_gpu(libcuda_535):
    seen = CudaProcess("driver", without_gpu_env(os.environ, libcuda_535), libcuda_535)(driver_seen)
    assert seen["found"] is True and "CUDA_ERROR_NO_DEVICE" in seen["error"]


def test_exceptions_come_back_and_what_cannot_be_sent_is_refused(tmp_path):
    process = CudaProcess("no CUDA driver", no_driver_env(os.environ, str(tmp_path)))
    with pytest.raises(ChildError, match="raised in the child") as caught:
        process(raises)
    assert "(raised in a process with no CUDA driver)" in caught.value.__notes__[0]
    assert 'raise ChildError("raised in the child")' in caught.value.__notes__[0]
    with pytest.raises(TypeError, match="defined at the top level of an importable module"):
        process(lambda: 1)
    with pytest.raises(RuntimeError, match="the result cannot be sent back"):
        process(unsendable)
    with pytest.raises(RuntimeError, match="exits ran in a process with no CUDA driver, which "
                                           "exited with status 3 and no result"):
        process(exits)
    proc = process.run("import os; print(os.environ['CUDALOAD_LIBCUDA'])")
    assert proc.stdout.strip() == str(tmp_path / "no-cuda-driver" / "libcuda.so.1")


def pytest_child(folder, source: str, env: dict, *args) -> subprocess.CompletedProcess:
    (folder / "test_child.py").write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           *PLUGIN, *args, str(folder)], cwd=folder, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}", **env})


FIXTURES = """
    import os

    def driver_found():
        import cudaload
        return cudaload.status().as_dict()["driver"]["found"]

    def test_no_cuda(no_cuda):
        assert no_cuda(driver_found) is False
        assert no_cuda.env["CUDA_VISIBLE_DEVICES"] == ""

    def test_cuda_without_gpu(cuda_without_gpu):
        assert cuda_without_gpu(driver_found) is True
        assert os.path.isfile(cuda_without_gpu.driver)
"""


def test_the_fixtures_work_through_the_plugin_and_skip_with_the_reason(tmp_path, libcuda_535):
    proc = pytest_child(tmp_path, FIXTURES, {"CUDALOAD_TEST_LIBCUDA": libcuda_535})
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr
    proc = pytest_child(tmp_path, FIXTURES, {"CUDALOAD_TEST_LIBCUDA": "",
                                             "CUDALOAD_LIBCUDA": "/nowhere/libcuda.so.1"})
    assert proc.returncode == 0 and "1 passed, 1 skipped" in proc.stdout, proc.stdout
    # the skip leads with the way to get one, then says why there was none
    assert ('no CUDA driver library to test with: export CUDALOAD_TEST_LIBCUDA="$(cudaload '
            'fetch-libcuda)"') in proc.stdout, proc.stdout
    assert "(CUDALOAD_LIBCUDA names /nowhere/libcuda.so.1, which is not a file)" in proc.stdout


def test_a_suite_that_does_not_ask_is_untouched(tmp_path):
    source = """
        import json, os, sys

        def test_nothing_changed(request):
            assert request.config.pluginmanager.has_plugin("cudaload.wheelcheck.pytest_plugin")
            with open("/proc/self/maps") as maps:
                cuda = [line for line in maps if "libcuda" in line or "libnvrtc" in line]
            loaded = sorted(m for m in sys.modules if m.startswith("cudaload"))
            print("SEEN", json.dumps([cuda, loaded, os.environ.get("CUDA_VISIBLE_DEVICES")]))
    """
    proc = pytest_child(tmp_path, source, {}, "-s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("SEEN"))
    cuda, loaded, visible = json.loads(line[len("SEEN"):])
    assert cuda == [] and visible == os.environ.get("CUDA_VISIBLE_DEVICES")
    # The package, its errors and version, and the plugin with what it runs code with.
    assert set(loaded) <= {"cudaload", "cudaload.errors", "cudaload._version", "cudaload.compile",
                           "cudaload.compile._hooks", "cudaload.wheelcheck",
                           "cudaload.wheelcheck.environments",
                           "cudaload.wheelcheck.pytest_plugin"}, loaded


def test_the_example_host_packages_tests_use_the_plugin(tmp_path, libcuda_535):
    example = os.path.join(ROOT, "examples", "gpuops")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *PLUGIN,
         os.path.join(example, "tests")], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, env={**os.environ, "CUDALOAD_TEST_LIBCUDA": libcuda_535,
                          "PYTHONPATH": f"{example}{os.pathsep}{ROOT}"})
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr
