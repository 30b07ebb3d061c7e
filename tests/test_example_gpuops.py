"""The example host package examples/gpuops without a GPU: numpy fallback, said once, no CUDA
library mapped beyond the driver it was pointed at.  (tests/gpu/test_example_gpuops.py runs it on a
GPU.)"""

from __future__ import annotations

import os

import pytest

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import ROOT, scenario_json

EXAMPLE = os.path.join(ROOT, "examples", "gpuops")

def run(env):
    """What gpuops's numpy fallback computed, warned and mapped, in a fresh process."""
    return scenario_json("gpuops_fallback", "fallback",
                         env={"PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}", **env})


def test_without_a_driver_ops_are_numpy_and_say_so_once():
    out = run({"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert out["bad"] == []
    assert len(out["warnings"]) == 1 and "libcuda not found" in out["warnings"][0]
    assert out["backend"][0] == "numpy" and out["loaded"] == [] and out["mapped"] == []


def test_with_a_driver_but_no_gpu_the_reason_names_the_missing_device(libcuda_535):
    out = run({"CUDALOAD_LIBCUDA": libcuda_535})
    assert out["bad"] == []
    assert len(out["warnings"]) == 1 and "CUDA_ERROR_NO_DEVICE" in out["warnings"][0]
    assert out["backend"] == ["numpy", out["backend"][1]] and "NO_DEVICE" in out["backend"][1]
    assert out["mapped"] == [os.path.realpath(libcuda_535)] or out["mapped"] == [libcuda_535]


@pytest.mark.parametrize("op", ["add", "relu", "sum", "softmax"])
def test_programs_list_every_kernel_and_compile_without_a_gpu(op, tmp_path):
    out = scenario_json("gpuops_fallback", "programs", op,
                        env={"PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}",
              "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert len(out) == 3 and all(kind == "cubin" and arch == "sm_80" for kind, arch, _ in out)
    names = sorted(n for _k, _a, lowered in out for n in lowered)
    assert any("__half" in n for n in names) and any("double" in n for n in names)


def test_the_fallback_refuses_what_the_gpu_path_refuses_and_typed_bytes_stay_typed():
    out = scenario_json("gpuops_fallback", "refusals",
                        env={"PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}",
              "CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert "does not broadcast" in out["broadcast"] and "does not broadcast" in out["promote"]
    assert "float16, float32 and float64, not int8" in out["int8"]


def test_in_a_child_forked_after_cuda_was_used_ops_fall_back_to_numpy(recording_driver):
    out = scenario_json("gpuops_fallback", "forked_child",
                        env={"PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}",
                             "CUDALOAD_LIBCUDA": recording_driver})
    assert out["parent"] == ["cuda", "Recording GPU (sm_90)"]
    child = out["child"]
    assert child["right"] and child["backend"][0] == "numpy"
    assert len(child["warnings"]) == 1 and "fork()" in child["warnings"][0]


def test_the_fallback_catches_exactly_cudaloads_unavailable_error():
    # The pattern the package documents for host packages: nothing broader, nothing narrower.
    import re

    clauses = []
    for name in sorted(os.listdir(os.path.join(EXAMPLE, "gpuops"))):
        if name.endswith(".py"):
            with open(os.path.join(EXAMPLE, "gpuops", name)) as f:
                clauses += re.findall(r"except\s+([^:]*cudaload[^:]*):", f.read())
    assert clauses and set(clauses) == {"cudaload.CudaUnavailableError as err"}, clauses


def test_the_dependency_is_the_one_docs_packaging_prescribes_for_a_bundle_and_says_why():
    """gpuops ships a bundle, so it depends on plain cudaload; docs/packaging.md says when that
    is right and why, and the example tells its users when to add the extra."""
    import tomllib

    with open(os.path.join(EXAMPLE, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    cudaload_deps = [d for d in project["project"]["dependencies"] if d.startswith("cudaload")]
    assert cudaload_deps == ["cudaload>=0.1"], cudaload_deps  # no extra: the bundle serves
    assert "gpuops/_kernels.bundle" in project["tool"]["hatch"]["build"]["targets"]["wheel"][
        "artifacts"]
    with open(os.path.join(ROOT, "docs", "packaging.md")) as f:
        recipe = f.read()
    section = recipe[recipe.index("## Which cudaload to depend on"):]
    section = section[:section.index("\n## ", 3)]
    assert "depends on `cudaload[nvrtc]`" in section and "may depend on plain `cudaload`" in section
    assert "examples/gpuops" in section
    with open(os.path.join(EXAMPLE, "README.md")) as f:
        readme = f.read()
    assert "pip install gpuops 'cudaload[nvrtc]'" in readme  # GPUs the bundle does not cover


def test_ci_follows_the_recipe_from_a_built_cudaload_wheel():
    """ci/packaging_example_test.sh does what docs/packaging.md tells a host package to do: the
    driver library from the installed wheel's ``cudaload fetch-libcuda``, the built cudaload
    wheel given with --with, --no-skip in CI, the bundle required."""
    with open(os.path.join(ROOT, "ci", "packaging_example_test.sh")) as f:
        script = f.read()
    assert '"$WORK/env/bin/cudaload" fetch-libcuda' in script
    assert "check-wheel" in script and '--with "$CUDALOAD_WHEEL"' in script
    assert "${CI:+--no-skip}" in script and "--require-bundle" in script
    assert "-m build --wheel" in script and '"$ROOT" >&2' in script  # cudaload's own wheel
