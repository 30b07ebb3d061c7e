"""The packaging checks on a machine with a GPU: the process "with a driver but no GPU" uses
the machine's own driver with every GPU hidden, and the one "without a driver" finds none."""

from __future__ import annotations

import json
import os

from cudaload.wheelcheck import environments
from cudaload.wheelcheck.environments import CudaProcess, no_driver_env, without_gpu_env
from tests import _wheels
from tests.test_wheelcheck import check_wheel


def seen() -> list:
    import cudaload

    report = cudaload.status().as_dict()
    return [report["available"], report["driver"]["found"], report["driver"]["cuinit"],
            len(report["devices"])]


def machine_driver(monkeypatch) -> str:
    for variable in ("CUDALOAD_TEST_LIBCUDA", "CUDALOAD_LIBCUDA"):
        monkeypatch.delenv(variable, raising=False)
    environments._machine_driver.cache_clear()
    driver, how = environments.find_driver()
    assert driver is not None and os.path.isfile(driver), how
    assert how == "found by cudaload on this machine"
    return driver


def test_the_machines_driver_is_found_and_its_gpus_hidden(monkeypatch, tmp_path):
    driver = machine_driver(monkeypatch)
    hidden = CudaProcess("driver", without_gpu_env(os.environ, driver), driver)(seen)
    assert hidden == [False, True, "CUDA_ERROR_NO_DEVICE", 0]
    absent = CudaProcess("no driver", no_driver_env(os.environ, str(tmp_path)))(seen)
    assert absent[:2] == [False, False]
    assert seen()[0] is True  # while this process, not hidden, has the GPU


def test_check_wheel_imports_with_the_machines_driver(monkeypatch, tmp_path):
    driver = machine_driver(monkeypatch)
    wheel = _wheels.write_wheel(tmp_path, "purepkg", {"purepkg/__init__.py": b"VALUE = 1\n"})
    proc = check_wheel(wheel, "--import", "purepkg", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = json.loads(proc.stdout)["imports"]
    assert [(r["mode"], r["ok"], r["skipped"]) for r in runs] == [
        ("no CUDA driver", True, None), ("a CUDA driver but no GPU", True, None)]
    assert runs[1]["driver"] == driver
