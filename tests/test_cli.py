"""The command line: `python -m cudaload`, `cudaload doctor [--json]`, `cudaload demo`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import ROOT

NO_CUDA = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1",
           "CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}


def cli(*args, env=None, unset=(), command=None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    for key in unset:
        full_env.pop(key, None)
    full_env.update(env or {})
    return subprocess.run([*(command or [sys.executable, "-m", "cudaload"]), *args], env=full_env,
                          capture_output=True, text=True, timeout=120)


def test_no_command_is_doctor_and_exits_1_without_cuda():
    plain, doctor = cli(env=NO_CUDA), cli("doctor", env=NO_CUDA)
    assert plain.returncode == 1 and doctor.returncode == 1
    assert plain.stdout == doctor.stdout
    assert "CUDA is NOT available" in plain.stdout and "next step:" in plain.stdout


def test_doctor_json_is_the_status_dict():
    proc = cli("doctor", "--json", env=NO_CUDA)
    assert proc.returncode == 1
    rep = json.loads(proc.stdout)
    assert rep["available"] is False and rep["driver"]["found"] is False
    assert len(rep["problems"]) == 2


@pytest.mark.parametrize("args", [["--json"], ["--json", "doctor"], ["doctor", "--json"]])
def test_json_without_a_command_is_doctor_json_with_its_exit_status(args, libcuda_535):
    for env, status in ((NO_CUDA, 1), ({"CUDALOAD_LIBCUDA": libcuda_535}, 1)):
        proc, doctor = cli(*args, env=env), cli("doctor", "--json", env=env)
        assert proc.returncode == doctor.returncode == status, proc.stderr
        rep = json.loads(proc.stdout)
        assert rep.keys() == json.loads(doctor.stdout).keys()
        assert rep["available"] is False and rep["problems"]
    assert json.loads(cli(*args, env=NO_CUDA).stdout) == json.loads(
        cli("doctor", "--json", env=NO_CUDA).stdout)


def test_json_exits_0_where_cuda_is_available(recording_driver):
    proc = cli("--json", env={"CUDALOAD_LIBCUDA": recording_driver})
    assert proc.returncode == 0, proc.stdout
    rep = json.loads(proc.stdout)
    assert rep["available"] is True and [d["name"] for d in rep["devices"]] == ["Recording GPU"] * 2


@pytest.mark.parametrize("args, words", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--json", "--bogus"], "unrecognized arguments: --bogus"),
    (["--json", "cache", "info"], "--json before a command is `doctor --json`"),
    (["doctor", "--jsn"], "unrecognized arguments: --jsn")])
def test_unknown_options_are_a_usage_error_without_traceback(args, words):
    proc = cli(*args, env=NO_CUDA)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("usage: cudaload") and words in lines[-1], proc.stderr
    assert len(lines) == 2 and "Traceback" not in proc.stderr


def test_doctor_with_driver_535(libcuda_535):
    proc = cli("doctor", env={"CUDALOAD_LIBCUDA": libcuda_535}, unset=("CUDALOAD_LIBNVRTC",))
    assert proc.returncode == 1
    assert "found: CUDA 12.2" in proc.stdout and "CUDA_ERROR_NO_DEVICE" in proc.stdout
    assert "would not load on this driver" in proc.stdout


def test_demo_compiles_without_a_gpu():
    proc = cli("demo", env={"CUDALOAD_LIBCUDA": NO_CUDA["CUDALOAD_LIBCUDA"]},
               unset=("CUDALOAD_LIBNVRTC",))
    assert proc.returncode == 0, proc.stderr
    assert "compiled saxpy with NVRTC" in proc.stdout and "PTX for compute_" in proc.stdout
    # no GPU: no CUBIN "for" an arch nothing here runs
    assert "CUBIN" not in proc.stdout and "not launched" in proc.stdout


def test_demo_without_nvrtc_fails_with_the_next_step():
    proc = cli("demo", env=NO_CUDA)
    assert proc.returncode == 1
    assert "cannot compile" in proc.stderr and "pip install" in proc.stderr


@pytest.mark.parametrize("command", ["doctor", "demo", "compile", "cache", "precompile"])
def test_every_command_is_registered(command):
    proc = cli(command, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: cudaload {command}")


def test_version_option():
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("cudaload ")


def test_console_script():
    script = os.path.join(os.path.dirname(sys.executable), "cudaload")
    if not os.path.exists(script):
        if os.environ.get("CI"):
            pytest.fail(f"{script} is missing: the package is not installed in this environment")
        pytest.skip("the cudaload console script is not installed next to this interpreter")
    proc = cli("doctor", "--json", env=NO_CUDA, command=[script])
    assert proc.returncode == 1 and json.loads(proc.stdout)["available"] is False


def test_cache_commands_on_an_unusable_folder_or_bound_are_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = cli("cache", "clear", env={"CUDALOAD_CACHE_DIR": str(blocker)})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "Not a directory" in proc.stderr and "CUDALOAD_CACHE_DIR" in proc.stderr
    proc = cli("cache", "prune", "--max-bytes", "-5", env={"CUDALOAD_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 2 and "not a number of bytes" in proc.stderr


def test_demo_on_a_gpu_newer_than_nvrtc_compiles_ptx_for_it(tmp_path):
    from tests._fakelibs import pretend_driver

    # A GPU newer than NVRTC knows, whose driver loads NVRTC's PTX; the pretend driver cannot
    # load code, so the demo's launch fails after its compiles, which are this test's.
    newest = json.loads(cli("doctor", "--json").stdout)["nvrtc"]["supported_archs"][-1]
    newer = pretend_driver(tmp_path, 99000, (newest // 10 + 1, 0))
    proc = cli("demo", env={"CUDALOAD_LIBCUDA": newer})
    assert proc.returncode == 1 and "launch failed" in proc.stderr, proc.stderr
    assert proc.stdout.count("PTX for compute_") == 2, proc.stdout  # the oldest arch's, and this GPU's
    assert f"PTX for compute_{newest} " in proc.stdout, proc.stdout
