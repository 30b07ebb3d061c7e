"""What `cudaload compile` and `precompile` say to a mistake on their command line: exit status 2,
the command line's own words, and the next step (never a Python message without one)."""

from __future__ import annotations

import pytest

from tests.test_cli import NO_CUDA, cli

PLAIN = 'extern "C" __global__ void k(int *x) { *x = 1; }'


@pytest.mark.parametrize("option, written", [("-I", "-I DIR"), ("-D", "-D NAME[=VALUE]"),
                                             ("-include", "-include FILE"),
                                             ("-maxrregcount", "-maxrregcount N")])
def test_compile_with_an_option_missing_its_value_is_a_usage_error(tmp_path, option, written):
    src = tmp_path / "ok.cu"
    src.write_text(PLAIN)
    proc = cli("compile", str(src), option, env=NO_CUDA)
    assert proc.returncode == 2, proc.stderr
    assert f"{option} needs a value: write {written}" in proc.stderr, proc.stderr
    assert "options[0]" not in proc.stderr  # the API's wording, not the command line's


def test_precompile_option_missing_its_value_is_a_usage_error(tmp_path):
    src = tmp_path / "ok.cu"
    src.write_text(PLAIN)
    proc = cli("precompile", str(src), "--arch", "sm_90", "--option=-I", env=NO_CUDA)
    assert proc.returncode == 2 and "-I needs a value: write -I DIR" in proc.stderr, proc.stderr


@pytest.mark.parametrize("words, says", [
    (["missing.cu"], "missing.cu: no such file: give the path of a .cu file"),
    (["--programs", "os:path"], "is not cudaload.Program objects: name a list of them"),
    (["--programs", "nomod:x"], "install the package, or run from the folder that holds it"),
    (["--programs", "os:nothere"], "module os has no 'nothere'; name a list of cudaload.Program"),
])
def test_precompile_of_what_is_not_there_says_what_to_give(tmp_path, words, says):
    proc = cli("precompile", *words, "--arch", "sm_90", env=NO_CUDA)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "Errno" not in proc.stderr


def test_precompile_package_is_found_from_the_folder_it_is_run_in(tmp_path):
    # --package imports the package as --programs does: from the current folder too, also from
    # the console script (``python -m`` puts the folder on sys.path itself).
    import os
    import subprocess
    import sys

    from tests._support import ROOT, child_env

    kernels = tmp_path / "hostpkg" / "kernels"
    kernels.mkdir(parents=True)
    (tmp_path / "hostpkg" / "__init__.py").write_text("")
    (kernels / "ops.cu").write_text(PLAIN)
    script = os.path.join(os.path.dirname(sys.executable), "cudaload")
    if not os.path.exists(script):
        pytest.skip("the cudaload console script is not installed beside python (a source tree)")
    # PYTHONPATH without an empty entry, which would put the current folder on sys.path
    env = child_env({"CUDALOAD_LIBCUDA": NO_CUDA["CUDALOAD_LIBCUDA"], "PYTHONPATH": ROOT},
                    unset=("CUDALOAD_LIBNVRTC",))
    proc = subprocess.run([script, "precompile", "--package", "hostpkg",
                           "--resource", "kernels/ops.cu", "--arch", "sm_90", "-o",
                           str(tmp_path / "ops.bundle")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ops.bundle").stat().st_size > 0


def test_precompile_of_templates_without_name_expressions_is_refused_as_compile_refuses_it(
        tmp_path):
    src = tmp_path / "tmpl.cu"
    src.write_text("template <class T> __global__ void scale(T *x) { x[0] *= 2; }\n")
    out = tmp_path / "t.bundle"
    env = {"CUDALOAD_LIBCUDA": NO_CUDA["CUDALOAD_LIBCUDA"]}
    proc = cli("precompile", str(src), "--arch", "sm_90", "-o", str(out), env=env,
               unset=("CUDALOAD_LIBNVRTC",))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cudaload precompile: tmpl.cu defines only kernel templates (scale)" in proc.stderr
    assert "--name-expression 'scale<float>'" in proc.stderr and not out.exists()
    named = cli("precompile", str(src), "--arch", "sm_90", "--name-expression", "scale<float>",
                "-o", str(out), env=env, unset=("CUDALOAD_LIBNVRTC",))
    assert named.returncode == 0 and out.stat().st_size > 0, named.stderr


def test_precompile_output_in_a_missing_folder_is_refused_and_the_folder_not_made(tmp_path):
    src = tmp_path / "ok.cu"
    src.write_text(PLAIN)
    missing = tmp_path / "no" / "such"
    proc = cli("precompile", str(src), "--arch", "sm_90", "-o", str(missing / "x.bundle"),
               env=NO_CUDA)  # refused before NVRTC is needed
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"there is no folder {missing}. Next step: make it (mkdir -p)" in proc.stderr
    assert not (tmp_path / "no").exists()
