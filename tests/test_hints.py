"""Each next step in an architecture or header error is a command that fixes the case: the
requirement it names resolves on PyPI, and where the fix can be followed here, it works."""

from __future__ import annotations

import os
import re
import sys

import pytest

from cudaload.errors import NvrtcError

from ._envs import hidden_env, install_cccl, make_env, pip_resolves, run_in, visible_toolkits

def _compile(source, arch="sm_90", output="cubin", python=sys.executable, env=None):
    return run_in(python, env or {}, "header_compiles", "compile_one", source, arch, output)


def _requirement(message: str) -> str:
    (requirement,) = re.findall(r"pip install '([^']+)'", message)
    return requirement


@pytest.mark.parametrize("arch,output,release", [
    ("sm_35", "cubin", "11.8"), ("compute_35", "auto", "11.8"), ("sm_70", "auto", "12.9"),
    ("sm_52", "ptx", "12.9")])
def test_an_architecture_nvrtc_dropped_names_the_last_release_that_has_it(tmp_path, arch,
                                                                           output, release):
    out = _compile('extern "C" __global__ void k() {}', arch, output,
                   env={"CUDALOAD_CACHE_DIR": str(tmp_path)})
    message = out["error"]
    cc = re.sub(r"\D", "", arch)
    assert out["type"] == "NvrtcError" and "the device (" not in message
    named = arch if arch.startswith("compute_") else f"sm_{cc}"  # the arch as asked
    assert f"NVRTC {release} is the last release that compiles for {named}" in message
    requirement = _requirement(message)
    assert requirement == f"nvidia-cuda-nvrtc-cu{release.split('.')[0]}=={release}.*"
    pip_resolves(requirement)


def test_an_architecture_newer_than_nvrtc_names_the_release_that_adds_it():
    from cudaload.compile import plan, toolchain

    nvrtc_12_4 = toolchain.Toolchain("/x/libnvrtc.so.12", (12, 4), "b", (50, 60, 70, 75, 80, 90),
                                     ())
    with pytest.raises(NvrtcError) as info:
        plan.choose(nvrtc_12_4, "sm_120", "cubin")
    message = str(info.value)
    assert "NVRTC 12.8 added sm_120" in message
    assert _requirement(message) == "nvidia-cuda-nvrtc-cu12>=12.8,<13"
    pip_resolves(_requirement(message))


def _toolkit_with_cccl() -> str:
    for toolkit in visible_toolkits():
        if os.path.isfile(os.path.join(toolkit, "include", "cccl", "cuda", "std", "version")):
            return toolkit
    pytest.skip("no CUDA toolkit with CCCL on this machine: the hint is checked with the CCCL "
                "wheel's")


@pytest.mark.parametrize("cccl", ["wheel", "toolkit"])
def test_host_code_headers_name_the_device_side_ones_and_those_compile(tmp_path, cccl):
    """With either CCCL: a toolkit's (CUDA 13.0's, 3.0) also includes <cstdint> from host code,
    which NVRTC lacks, after the host functions it refuses."""
    env = {"CUDALOAD_CACHE_DIR": str(tmp_path)}
    if cccl == "toolkit":
        python, _site = make_env(tmp_path / "env", cccl=False)
        _by, hide = hidden_env()
        env = {**hide, **env, "CUDA_HOME": _toolkit_with_cccl()}
    else:
        python = sys.executable
    out = _compile("#include <cub/cub.cuh>\n__global__ void k() {}\n", python=python, env=env)
    assert out["type"] == "CompileError"
    if cccl == "toolkit":
        assert env["CUDA_HOME"] in out["error"]  # the toolkit's CCCL it was
    hint = out["error"].rsplit("\n", 1)[-1]
    assert hint.startswith("Next step:") and "include_paths" not in hint
    named = re.findall(r"<(cub/block/[\w.]+|cub/warp/[\w.]+)>", hint)
    assert len(named) >= 2
    followed = "".join(f"#include <{h}>\n" for h in named) + "__global__ void k() {}\n"
    assert _compile(followed, python=python, env=env)["error"] is None


def test_a_header_not_installed_names_its_wheel_and_installing_it_fixes_it(tmp_path):
    python, site = make_env(tmp_path / "env", cccl=False)
    _by, env = hidden_env()
    env = {**env, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    source = "#include <cooperative_groups.h>\n__global__ void k() {}\n"
    out = _compile(source, python=python, env=env)
    # cooperative_groups.h needs CCCL (nv/target, cuda/std/...)
    assert out["type"] == "CompileError"
    assert re.search(r'cannot open source file "(nv|cuda/std)/', out["error"])
    hint = out["error"].rsplit("\n", 1)[-1]
    assert "nvidia-cuda-cccl wheel" in hint and "include_paths" not in hint
    assert _requirement(hint) == "nvidia-cuda-cccl>=13,<14"
    pip_resolves(_requirement(hint))
    install_cccl(site)
    assert _compile(source, python=python, env=env)["error"] is None


def test_a_missing_header_of_the_program_itself_keeps_the_include_paths_hint(tmp_path):
    out = _compile('#include "mine/util.h"\n__global__ void k() {}\n',
                   env={"CUDALOAD_CACHE_DIR": str(tmp_path)})
    assert "include_paths" in out["error"] and "pip install" not in out["error"]


@pytest.mark.parametrize("explicit, whose", [(True, "the arch asked for"),
                                             (False, "this GPU's arch")])
def test_an_arch_error_says_whose_arch_it_is_and_carries_its_hint(explicit, whose):
    from cudaload.compile import plan, toolchain

    nvrtc_13 = toolchain.Toolchain("/x/libnvrtc.so.13", (13, 0), "b", (75, 80, 90), ())
    with pytest.raises(NvrtcError) as info:
        plan.choose(nvrtc_13, "sm_52", "cubin", explicit)
    err = info.value
    assert whose in str(err) and ("asked for" in str(err)) == explicit
    assert err.hint and str(err).endswith(err.hint)
