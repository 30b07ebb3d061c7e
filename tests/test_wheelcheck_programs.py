"""`cudaload check-wheel --programs`: a host package's Programs, made where its wheel is
installed, must each find code in their bundle for every --arch (a kernel edited after
`cudaload precompile` fails, naming the program, its file and the command that mends it);
--require-bundle without it says it cannot prove the bundle fresh; a wheel that depends on
plain cudaload and ships no bundle is warned about."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cudaload.wheelcheck import requirements
from tests import _wheels
from tests._support import ROOT
from tests.test_wheelcheck import check_wheel

pytestmark = pytest.mark.usefixtures("cache_dir")  # precompile compiles into a folder of its own

KERNEL = ('#include "common.cuh"\n'
          "template <class T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a * FACTOR; }\n")
PACKAGE = '''
import cudaload
BUNDLE = cudaload.Bundle.from_resource("kpkg", "kernels.bundle")
def programs():
    return [cudaload.Program.from_resource("kpkg", "kernels/ops.cu", name_expressions=[e],
                                           bundle=BUNDLE)
            for e in ("scale<float>", "scale<double>")]
'''
COMMAND = "cudaload precompile --programs kpkg:programs --arch sm_90 -o kpkg/kernels.bundle"


@pytest.fixture(scope="module")
def cudaload_wheel(tmp_path_factory):
    return _wheels.cudaload_wheel(tmp_path_factory.mktemp("cudaload-wheel"))


def source_tree(folder) -> str:
    """The host package's sources in ``folder``, its bundle made by `cudaload precompile`."""
    pkg = folder / "kpkg"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    (pkg / "kernels" / "ops.cu").write_text(KERNEL)
    (pkg / "kernels" / "common.cuh").write_text("#pragma once\n#define FACTOR 2\n")
    proc = subprocess.run([sys.executable, "-m", "cudaload", *COMMAND.split()[1:]], cwd=folder,
                          env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return str(folder)


def wheel_of(tree: str, folder, **kw) -> str:
    """The wheel a build backend makes of the package in ``tree``."""
    files = {}
    for where, _dirs, names in os.walk(os.path.join(tree, "kpkg")):
        for name in names:
            path = os.path.join(where, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, tree)] = f.read()
    folder.mkdir(exist_ok=True)
    return _wheels.write_wheel(folder, "kpkg", files, **kw)


def test_a_kernel_edited_after_precompile_fails_naming_program_file_and_command(
        tmp_path, cudaload_wheel):
    tree = source_tree(tmp_path / "src")
    fresh = wheel_of(tree, tmp_path / "fresh", requires=["cudaload"])
    ok = check_wheel(fresh, "--arch", "sm_90", "--require-bundle", "--programs",
                     "kpkg:programs", "--with", cudaload_wheel)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "programs of kpkg:programs: 2\n  sm_90: 2 of 2 find their code in the bundle" \
        in ok.stdout
    assert "WARNING" not in ok.stdout
    with open(os.path.join(tree, "kpkg", "kernels", "ops.cu"), "a") as f:
        f.write("// a comment is an edit: the digest covers the source\n")
    stale = wheel_of(tree, tmp_path / "stale", requires=["cudaload"])
    # What the bundle itself holds has not changed: the bundle report still counts 2 of 2.
    proc = check_wheel(stale, "--arch", "sm_90", "--require-bundle", "--programs",
                       "kpkg:programs", "--with", cudaload_wheel)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "  sm_90: 2 of 2 programs precompiled" in proc.stdout
    assert "  sm_90: 0 of 2 find their code in the bundle" in proc.stdout
    fails = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 2, proc.stdout
    for line, expr in zip(fails, ("scale<float>", "scale<double>")):
        assert line.startswith(f"FAIL kpkg/kernels.bundle: no entry for program kernels/ops.cu "
                               f"[{expr}] (file kpkg/kernels/ops.cu) for sm_90"), line
        assert f"Mend it: run `{COMMAND}` from the folder that holds the package" in line
    # The command given mends it.
    subprocess.run([sys.executable, "-m", "cudaload", *COMMAND.split()[1:]], cwd=tree,
                   env={**os.environ, "PYTHONPATH": ROOT}, check=True, capture_output=True)
    mended = wheel_of(tree, tmp_path / "mended", requires=["cudaload"])
    assert check_wheel(mended, "--arch", "sm_90", "--programs", "kpkg:programs", "--with",
                       cudaload_wheel).returncode == 0


def test_require_bundle_without_programs_gives_a_command_that_adds_the_missing_arch(
        tmp_path):
    tree = source_tree(tmp_path / "src")
    proc = check_wheel(wheel_of(tree, tmp_path / "short"), "--arch", "sm_90", "--arch", "sm_80",
                       "--require-bundle")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (fail,) = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert fail.startswith("FAIL kpkg/kernels.bundle: no code for sm_80 for 2 of 2 programs")
    command = fail.partition("add their code: run `")[2].partition("`")[0]
    assert command == ("cudaload precompile --programs MODULE:NAME --arch sm_80 -o "
                       "kpkg/kernels.bundle --append"), fail
    assert fail.endswith("` from the folder that holds the package, then build the wheel again")
    # Filled in with the package's Programs only, it mends the bundle.
    words = command.replace("MODULE:NAME", "kpkg:programs").split()[1:]
    subprocess.run([sys.executable, "-m", "cudaload", *words], cwd=tree,
                   env={**os.environ, "PYTHONPATH": ROOT}, check=True, capture_output=True)
    mended = check_wheel(wheel_of(tree, tmp_path / "mended"), "--arch", "sm_90", "--arch",
                         "sm_80", "--require-bundle")
    assert mended.returncode == 0, mended.stdout


def test_programs_that_cannot_be_made_or_have_no_bundle_fail(tmp_path, cudaload_wheel):
    tree = source_tree(tmp_path / "src")
    wheel = wheel_of(tree, tmp_path / "w")
    proc = check_wheel(wheel, "--arch", "sm_90", "--programs", "kpkg.nowhere:programs",
                       "--with", cudaload_wheel, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["failures"] == [
        "--programs kpkg.nowhere:programs: the package's Programs could not be made where the "
        "wheel is installed: ValueError: --programs 'kpkg.nowhere:programs': No module named "
        "'kpkg.nowhere'; the wheel does not ship it, or it fails to import"]
    with open(os.path.join(tree, "kpkg", "__init__.py"), "a") as f:
        f.write("BUNDLE = None\n")  # the Programs are made without a bundle
    bare = check_wheel(wheel_of(tree, tmp_path / "b"), "--arch", "sm_90", "--programs",
                       "kpkg:programs", "--with", cudaload_wheel)
    assert bare.returncode == 1 and "has no bundle (it is made without bundle=)" in bare.stdout
    # the wheel's one bundle named, as the package would read it
    assert 'pass bundle=cudaload.Bundle.from_resource("kpkg", "kernels.bundle") to it' \
        in bare.stdout, bare.stdout


def test_programs_needs_an_arch_and_a_module_name(tmp_path):
    wheel = _wheels.write_wheel(tmp_path, "kpkg", {"kpkg/__init__.py": b""})
    proc = check_wheel(wheel, "--programs", "kpkg:programs")
    assert proc.returncode == 2 and "--programs needs --arch ARCH" in proc.stderr, proc.stderr
    proc = check_wheel(wheel, "--arch", "sm_90", "--programs", "kpkg")
    assert proc.returncode == 2 and "write MODULE:NAME" in proc.stderr, proc.stderr


def test_require_bundle_without_programs_says_it_cannot_prove_the_bundle_fresh(tmp_path):
    from tests.test_wheelcheck import bundle_bytes

    elf_header = b"\x7fELF\x02\x01\x01" + bytes(57)  # an ELF file that needs no library
    wheel = _wheels.write_wheel(tmp_path, "kpkg", {
        "kpkg/__init__.py": b"", "kpkg/kernels.bundle": bundle_bytes(elf_header)})
    proc = check_wheel(wheel, "--arch", "sm_90", "--require-bundle")
    assert proc.returncode == 0, proc.stdout
    assert ("WARNING --require-bundle cannot prove the bundle fresh: without --programs "
            "MODULE:NAME") in proc.stdout
    assert json.loads(check_wheel(wheel, "--arch", "sm_90", "--require-bundle", "--json"
                                  ).stdout)["warnings"][0].startswith("--require-bundle cannot")
    assert "WARNING" not in check_wheel(wheel, "--arch", "sm_90").stdout


@pytest.mark.parametrize("requires, bundle, warned", [
    (["cudaload>=0.1"], False, True),
    (["cudaload (>=0.1)"], False, True),
    (["CudaLoad[test]>=0.1; python_version >= '3.11'"], False, True),
    (["cudaload[nvrtc]>=0.1"], False, False),
    (["cudaload[test, nvrtc]"], False, False),
    (["cudaload>=0.1"], True, False),  # the bundle serves its GPUs
    (["cudaload>=0.1", "cudaload[nvrtc]; extra == 'gpu'"], False, True),
    (["cudaload[nvrtc]; extra == 'gpu'"], False, False),  # no cudaload for every install
    (["numpy", "cudaloader"], False, False),
])
def test_a_plain_cudaload_dependency_without_a_bundle_is_warned_about(tmp_path, requires,
                                                                      bundle, warned):
    wheel = _wheels.write_wheel(tmp_path, "kpkg", {"kpkg/__init__.py": b""}, requires=requires)
    found = requirements.cudaload_requirements(wheel)
    warning = requirements.nvrtc_warning(found, bundle)
    assert (warning is not None) is warned, (found, warning)
    if warned:
        assert "its GPU users meet LibraryNotFoundError" in warning
        assert "Next step: depend on cudaload[nvrtc], or ship a bundle: run `cudaload " \
            "precompile --programs MODULE:NAME --arch ARCH -o PKG/kernels.bundle` from the " \
            "folder that holds the package, then list it as package data" in warning
        assert ("only the package's extra gpu brings cudaload[nvrtc]" in warning) is \
            (len(requires) == 2)


def test_the_plain_cudaload_warning_is_in_the_report(tmp_path):
    wheel = _wheels.write_wheel(tmp_path, "kpkg", {"kpkg/__init__.py": b""},
                                requires=["cudaload>=0.1"])
    proc = check_wheel(wheel)
    assert proc.returncode == 0, proc.stdout
    assert ("WARNING the wheel depends on plain cudaload (Requires-Dist: cudaload>=0.1), "
            "without its nvrtc extra") in proc.stdout
    # The bundle's command names the wheel's one package, and the archs asked about.
    assert "ship a bundle: run `cudaload precompile --programs MODULE:NAME --arch ARCH -o " \
        "kpkg/kernels.bundle`" in proc.stdout, proc.stdout
    archs = check_wheel(wheel, "--arch", "sm_90", "--arch", "sm_80").stdout
    assert "--arch sm_90 --arch sm_80 -o kpkg/kernels.bundle`" in archs, archs
    (tmp_path / "two").mkdir()
    two = _wheels.write_wheel(tmp_path / "two", "kpkg", {
        "kpkg/__init__.py": b"", "kpkg/sub/__init__.py": b"", "other/__init__.py": b"",
        "kpkg-1.0.data/purelib/third/__init__.py": b""}, requires=["cudaload>=0.1"])
    assert "-o PKG/kernels.bundle`" in check_wheel(two).stdout  # which package is not known
    (tmp_path / "x").mkdir()
    extra = _wheels.write_wheel(tmp_path / "x", "kpkg", {"kpkg/__init__.py": b""},
                                requires=["cudaload[nvrtc]>=0.1"])
    assert json.loads(check_wheel(extra, "--json").stdout)["warnings"] == []
