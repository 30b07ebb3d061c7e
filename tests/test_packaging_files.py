"""What the wheel and sdist must carry besides code: the license the metadata declares, the
py.typed marker, and the type checker's settings (ci/packaging_test.sh checks the built wheel)."""

from __future__ import annotations

import os
import tomllib

from tests._support import ROOT


def _pyproject() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_the_license_file_is_the_apache_license_the_metadata_declares():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    with open(os.path.join(ROOT, "LICENSE")) as f:
        text = f.read()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text) > 10000


def test_the_sdist_and_wheel_take_the_license_and_the_typed_marker():
    build = _pyproject()["tool"]["hatch"]["build"]["targets"]
    assert "LICENSE" in build["sdist"]["include"] and "cudaload" in build["sdist"]["include"]
    assert build["wheel"]["packages"] == ["cudaload"]  # the whole folder: py.typed with it
    assert os.path.isfile(os.path.join(ROOT, "cudaload", "py.typed"))
    requires = _pyproject()["build-system"]["requires"]
    assert any(r.startswith("hatchling>=1.27") for r in requires)  # PEP 639 license-files


def test_the_type_checker_runs_over_the_package_in_the_test_command():
    assert any(r.startswith("mypy") for r in _pyproject()["project"]["optional-dependencies"]["test"])
    assert _pyproject()["tool"]["mypy"]["files"] == ["cudaload"]
    with open(os.path.join(ROOT, "ci", "test.sh")) as f:
        script = f.read()
    assert '"$VENV/bin/python" -m mypy cudaload' in script
    assert script.index("-m mypy cudaload") < script.index("-m pytest")
    assert "-m pytest -q -rs tests" in script  # every skip says why


def test_the_classifiers_claim_only_what_ci_runs():
    # CI (.ci/run -> ci/test.sh) runs on Linux with the interpreter ci/test.sh makes its venv
    # from (3.11); the whole suite, GPU tests included, runs on the GPU machine with the Python
    # each record of docs/gpu-runs names.  The Windows branches (nvcuda.dll, locks, PE files)
    # have no CI job, so no Windows claim.
    import glob
    import json

    classifiers = _pyproject()["project"]["classifiers"]
    systems = [c for c in classifiers if c.startswith("Operating System ::")]
    assert systems == ["Operating System :: POSIX :: Linux"], systems
    versions = [c.rsplit(" :: ", 1)[1] for c in classifiers
                if c.startswith("Programming Language :: Python :: 3.")]
    gpu_runs = set()
    for record in sorted(glob.glob(os.path.join(ROOT, "docs", "gpu-runs", "*.json")))[-5:]:
        with open(record) as f:
            python = json.load(f).get("python")
        if python:
            gpu_runs.add(".".join(python.split(".")[:2]))
    tested = sorted({"3.11"} | gpu_runs, key=lambda v: tuple(map(int, v.split("."))))
    assert versions == tested, (versions, tested)
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    assert "Windows is untested" in readme
    for version in tested:
        assert f"CPython {version}" in readme, version


def test_the_gpu_tests_skip_with_one_summary_line_where_there_is_no_gpu(tmp_path):
    # ci/test.sh's -rs lists each skip's reason; the GPU tests' must fold into one line, not one
    # line per test that repeats the same reason.
    import subprocess
    import sys

    from tests._support import child_env

    env = child_env({"CUDALOAD_LIBCUDA": str(tmp_path / "no-libcuda.so.1")},
                    unset=("CUDALOAD_REQUIRE_GPU",))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           os.path.join(ROOT, "tests", "gpu")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if "no usable GPU" in line]
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert len(lines) == 1, lines[:5]
    skipped = int(lines[0].split("[", 1)[1].split("]", 1)[0])
    assert skipped > 100 and "tests/gpu/conftest.py" in lines[0], lines[0]
