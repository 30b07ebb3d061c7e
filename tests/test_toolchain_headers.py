"""CUDA's headers compile from the wheels alone, the folders used belong to the NVRTC in use, and
the report says which release each comes from and how to fix a missing or mismatched set."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ._envs import (CCCL_CU13, CCCL_OWN_FOLDER, HEADERS, hidden_env, install_cccl,
                    machine_toolkits, make_env, pip_resolves, real_wheels, run_in)

def compile_all(python, headers, env, toolkits=()) -> dict:
    """One program including every header, compiled by ``python`` (header_compiles.compile_all):
    the cost is that of the largest header, not the sum, and the log names one that fails."""
    return run_in(python, env, "header_compiles", "compile_all", json.dumps(list(headers)),
                  json.dumps(list(toolkits)))


def _report(python, env):
    return run_in(python, env, "header_compiles", "report")


def test_every_cuda_header_compiles_with_no_toolkit_in_sight(tmp_path):
    by, env = hidden_env()
    toolkits = machine_toolkits()
    if by == "namespace":  # ci/test.sh's mount namespace: the folders are empty from here
        for folder in toolkits:
            assert os.listdir(folder) == [], f"{folder} is visible to the tests"
    out = compile_all(sys.executable, HEADERS, {**env, "CUDALOAD_CACHE_DIR": str(tmp_path)},
                      toolkits=toolkits)
    assert out["failed"] == ""
    dirs = out["header_dirs"]
    for name in ("cudart", "cccl"):
        path = dirs[name]["path"]
        assert path and not any(path.startswith(t + os.sep) for t in toolkits), (name, path)
        assert dirs[name]["cuda_major"] == 13
    assert dirs["cudart"]["version"].startswith("13.")
    if by == "namespace":
        assert not any(out["hidden"].values()), out["hidden"]
    assert not [p for p in out["problems"] if "header" in p["what"]]


def test_a_missing_cccl_is_a_problem_whose_fix_works(tmp_path):
    python, site = make_env(tmp_path / "env", cccl=False)
    _by, env = hidden_env()
    env = {**env, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    rep = _report(python, env)
    assert rep["nvrtc"]["header_dirs"]["cccl"] == {"path": None, "version": None,
                                                    "cuda_major": None}
    (problem,) = [p for p in rep["problems"] if "CCCL" in p["what"]]
    assert "not found" in problem["what"] and "cooperative_groups.h" in problem["what"]
    assert problem["hint"] == "pip install 'nvidia-cuda-cccl>=13,<14'"
    assert problem["hint"] in rep["text"]
    pip_resolves("nvidia-cuda-cccl>=13,<14")

    install_cccl(site)  # the hint, followed
    out = compile_all(python, HEADERS, env)
    assert out["failed"] == ""
    assert out["header_dirs"]["cccl"]["path"] == os.path.realpath(
        os.path.join(site, "nvidia", "cu13", "include", "cccl"))
    assert not [p for p in out["problems"] if "header" in p["what"]]


def _fake_cudart(folder, version: int) -> str:
    os.makedirs(folder)
    with open(os.path.join(folder, "cuda_runtime_api.h"), "w") as f:
        f.write(f"#pragma once\n#define CUDART_VERSION {version}\n")
    with open(os.path.join(folder, "cuda_runtime.h"), "w") as f:
        f.write("#pragma once\n")
    return str(folder)


def test_headers_of_another_cuda_major_are_a_problem_with_the_fix(tmp_path):
    python, site = make_env(tmp_path / "env", cudart=False)
    old = _fake_cudart(os.path.join(site, "nvidia", "cuda_runtime", "include"), 12040)
    _by, env = hidden_env()
    rep = _report(python, {**env, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    nvrtc = rep["nvrtc"]
    assert nvrtc["header_dirs"]["cudart"] == {"path": old, "version": "12.4", "cuda_major": 12}
    (problem,) = [p for p in rep["problems"] if "runtime headers" in p["what"]]
    assert f"at {old} are from CUDA 12, but NVRTC {nvrtc['version']}" in problem["what"]
    assert problem["hint"] == f"pip install 'nvidia-cuda-runtime=={nvrtc['version']}.*'"
    pip_resolves(problem["hint"].split("'")[1])


def test_a_matching_set_is_used_wherever_it_is_found(tmp_path):
    """A CUDA 12 cudart wheel in the environment, CUDA 13 headers in the toolkit CUDA_HOME names:
    cuda.pathfinder picks the wheel; the toolkit's, of NVRTC's major, are the ones used."""
    python, site = make_env(tmp_path / "env", cudart=False)
    _fake_cudart(os.path.join(site, "nvidia", "cuda_runtime", "include"), 12040)
    toolkit = tmp_path / "toolkit"
    os.makedirs(toolkit)
    os.symlink(os.path.join(real_wheels(), "include"), toolkit / "include")
    _by, env = hidden_env()
    env = {**env, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache"), "CUDA_HOME": str(toolkit)}
    if env.get("PYTHONPATH"):  # pathfinder's CUDA_HOME step is what finds a toolkit here
        del env["PYTHONPATH"]
    out = compile_all(python, ["cuda_fp16.h", "cooperative_groups.h"], env)
    assert out["header_dirs"]["cudart"]["path"] == os.path.realpath(toolkit / "include")
    assert out["header_dirs"]["cudart"]["cuda_major"] == 13
    assert out["failed"] == ""
    assert not [p for p in out["problems"] if "header" in p["what"]]


def _older_toolkit(toolkit, cccl: str) -> str:
    """A toolkit at ``toolkit`` whose CCCL is a copy of the one at ``cccl`` that says it is one
    release older; returns its CCCL folder.  The test makes its premise itself: a machine's own
    toolkit may hold the very release of the CCCL wheel (13.0.85 beside CUDA 13.0)."""
    import re
    import shutil

    from cudaload._base import releases

    folder = os.path.join(toolkit, "include", "cccl")
    shutil.copytree(cccl, folder)
    relative, macro = releases._VERSION_FILES["cccl"]  # where the release is read from
    path = os.path.join(folder, relative)
    with open(path, "rb") as f:
        text = f.read()
    number = releases.defined_number(text, macro)
    if number % 100000 == 0:
        pytest.skip(f"the CCCL wheel is the first release of its major ({number}): none is older")
    os.unlink(path)  # a new file: the copy may be read-only, as the wheel's may be
    with open(path, "wb") as f:
        f.write(re.sub(rb"(#define\s+CUB_VERSION\s+)\d+", rb"\g<1>%d" % (number - 1), text))
    return os.path.realpath(folder)


@pytest.mark.parametrize("where", [CCCL_CU13, CCCL_OWN_FOLDER], ids=["cu13", "own-folder"])
def test_a_system_cccl_older_than_nvrtc_gives_way_to_the_wheel(tmp_path, where):
    """With a toolkit in CUDA_HOME whose CCCL is older than the wheel's: its CCCL serves while no
    wheel has one, and once a CCCL wheel is installed (beside cudart's headers, or in a folder of
    its own that changes nothing that was used before), the wheel's, newer, is used from the next
    process on."""
    from cudaload._base import releases

    toolkit = tmp_path / "toolkit"
    system = _older_toolkit(toolkit, os.path.join(real_wheels(), "include", "cccl"))
    python, site = make_env(tmp_path / "env", cccl=False)
    _by, env = hidden_env()  # the machine's own toolkits stay out of it
    env = {**env, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache"), "CUDA_HOME": str(toolkit)}
    first = compile_all(python, ["cuda/std/limits"], env)
    assert first["failed"] == ""
    assert first["header_dirs"]["cccl"]["path"] == system
    wheel = install_cccl(site, where)
    assert releases.header_release("cccl", wheel)[1] > releases.header_release("cccl", system)[1]
    second = compile_all(python, ["cuda/std/limits"], env)
    assert second["header_dirs"]["cccl"]["path"] == wheel
    assert second["failed"] == ""


def test_the_build_fingerprint_sees_both_ends_of_the_library(tmp_path):
    """Where an ELF library names its build (headers and the GNU build ID note at one end or the
    other) a change gives another fingerprint; the size is part of it too."""
    from cudaload.compile import toolchain

    span = toolchain._FINGERPRINT_SPAN
    base = bytes(range(256)) * (4 * span // 256)
    lib = tmp_path / "libnvrtc.so"

    def fingerprint(data: bytes) -> str:
        lib.write_bytes(data)
        return toolchain.fingerprint(str(lib))

    first = fingerprint(base)
    assert first.startswith(f"{len(base)}-")
    assert fingerprint(base) == first
    assert fingerprint(b"\x01" + base[1:]) != first
    assert fingerprint(base[:-1] + b"\x01") != first
    assert fingerprint(base + b"\x00") != first


@pytest.mark.parametrize("text", [
    b"#define CUDART_VERSION 13050\n", b"/* x */\n#define\tCUDART_VERSION \t 12080 // 12.8\n",
    b"#define\nCUDART_VERSION\n13000", b"#define CUDART_VERSION_MAJOR 13\n#define CUDART_VERSION 13020",
    b"#  define CUDART_VERSION 13000", b"#defineCUDART_VERSION 13000", b"#define CUDART_VERSION13000",
    b"#define CUDART_VERSION x13", b"#define MY_CUDART_VERSION 11\n#define CUDART_VERSION 12",
    b"CUDART_VERSION 13000", b"", b"#define CUDART_VERSION", b"#define CUDART_VERSION 1e3"])
def test_a_header_release_is_read_as_its_define_says(text):
    """The release a header file says (``#define CUDART_VERSION 13050``) is read with bytes
    methods as the pattern ``#define\\s+NAME\\s+(\\d+)`` reads it: the first such line, white
    space of any kind around the name, nothing where it is missing."""
    import re

    from cudaload._base import releases

    found = re.search(rb"#define\s+CUDART_VERSION\s+(\d+)", text)
    assert releases.defined_number(text, b"CUDART_VERSION") == (
        int(found.group(1)) if found else None)
